/* SPDX-License-Identifier: Apache-2.0
 * test-spec.c: job documents -> struct ty_job: the validation rules (spec-validate.c),
 * scale-tier expansion and defaults (spec.c). The schema gate and the text formats are in
 * test-spec-formats.c, hyperparameter rules in test-spec-hparams.c; the checks' helpers in
 * spec-check.h. */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_CHECK_ACCEPT
#include "spec-check.h"

static void test_job_id(void)
{
    char id[TY_JOB_ID_MAX + 2];

    ok(ty_validate_job_id("my_job_2", NULL) == 0, "job id: letters, digits, underscores");
    ok(ty_validate_job_id("A", NULL) == 0, "job id: one letter");
    memset(id, 'a', TY_JOB_ID_MAX);
    id[TY_JOB_ID_MAX] = '\0';
    ok(ty_validate_job_id(id, NULL) == 0, "job id: 128 characters");
    id[TY_JOB_ID_MAX] = 'a';
    id[TY_JOB_ID_MAX + 1] = '\0';
    is_int(ty_validate_job_id(id, &err), -EINVAL, "job id: 129 characters rejected");
    like(err.msg, "jobId: must be at most 128", "job id: length message");
    ty_validate_job_id("1job", &err);
    like(err.msg, "jobId: must start with a letter", "job id: leading digit");
    ty_validate_job_id("_job", &err);
    like(err.msg, "jobId: must start with a letter", "job id: leading underscore");
    ty_validate_job_id("my-job", &err);
    like(err.msg, "jobId: may contain only letters", "job id: hyphen");
    ty_validate_job_id("job\xc3\xa9", &err);
    like(err.msg, "jobId: may contain only letters", "job id: non-ASCII letter");
    ty_validate_job_id("", &err);
    like(err.msg, "jobId: required", "job id: empty");
    bad("{'jobId':'my job','trainingInput':{" IMG "}}",
        "jobId: may contain only",
        "a Job with a bad jobId");

    /* ty_job_from_json needs a jobId. */
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *t = dq("{" IMG "}");
    struct ty_job *job = NULL;
    ok(ty_spec_parse(t, strlen(t), TY_SPEC_JSON, &doc, &err) == 0, "bare TrainingInput parses");
    ok(!json_object_get(doc, "jobId"), "bare TrainingInput has no jobId");
    ok(ty_job_from_json(doc, &job, &err) < 0 && !job, "no jobId: rejected");
    like(err.msg, "jobId: required", "no jobId: message");
}

static void test_tiers(void)
{
    struct ty_job *job;

    bad("{'scaleTier':'CUSTOM'," IMG "}",
        "trainingInput.masterType: required",
        "CUSTOM without masterType");
    job = good("{'masterType':'n1-standard-8'," IMG "}", "masterType without scaleTier");
    if (job) {
        is_int(job->scale_tier, TY_TIER_CUSTOM, "omitted scaleTier + masterType => CUSTOM");
        is_str(job->roles[TY_ROLE_MASTER].machine_type, "n1-standard-8", "master type kept");
    }
    ty_job_free(job);

    job = good("{" IMG "}", "neither scaleTier nor masterType");
    if (job) {
        is_int(job->scale_tier, TY_TIER_BASIC, "omitted scaleTier => BASIC");
        is_str(job->roles[TY_ROLE_MASTER].machine_type, "standard", "BASIC master: standard");
        is_int(ty_job_replica_count(job), 1, "BASIC: master only");
    }
    ty_job_free(job);

    job = good("{'scaleTier':'BASIC_GPU'," IMG "}", "BASIC_GPU");
    if (job) {
        is_str(job->roles[TY_ROLE_MASTER].machine_type,
               "standard_gpu",
               "BASIC_GPU master: standard_gpu (one GPU)");
        is_int(ty_job_replica_count(job), 1, "BASIC_GPU: master only");
    }
    ty_job_free(job);

    job = good("{'scaleTier':'STANDARD_1'," IMG "}", "STANDARD_1");
    if (job) {
        is_int(job->roles[TY_ROLE_WORKER].count, 4, "STANDARD_1: 4 workers");
        is_int(job->roles[TY_ROLE_PS].count, 3, "STANDARD_1: 3 ps");
        is_int(job->roles[TY_ROLE_EVALUATOR].count, 0, "STANDARD_1: no evaluator");
        is_str(job->roles[TY_ROLE_WORKER].machine_type, "standard", "STANDARD_1 worker type");
        is_str(job->roles[TY_ROLE_WORKER].image_uri,
               "gcr.io/p/img:1",
               "STANDARD_1 workers run the master's image");
        ok(!json_object_get(job->training_input, "workerCount"),
           "expansion does not rewrite the canonical TrainingInput");
    }
    ty_job_free(job);

    job = good("{'scaleTier':'PREMIUM_1'," IMG "}", "PREMIUM_1");
    if (job) {
        is_int(job->roles[TY_ROLE_WORKER].count, 19, "PREMIUM_1: 19 workers");
        is_int(job->roles[TY_ROLE_PS].count, 11, "PREMIUM_1: 11 ps");
        is_int(ty_job_replica_count(job), 31, "PREMIUM_1: 31 replicas");
    }
    ty_job_free(job);

    bad("{'scaleTier':'BASIC_TPU'," IMG "}", "trainingInput.scaleTier: BASIC_TPU", "BASIC_TPU");
    bad("{'scaleTier':'BASIC','masterType':'n1-standard-4'," IMG "}",
        "trainingInput.masterType: may only be set when scaleTier is CUSTOM",
        "masterType with BASIC");
    bad("{'scaleTier':'STANDARD_1','workerCount':'2'," IMG "}",
        "trainingInput.workerCount: may only be set when scaleTier is CUSTOM",
        "workerCount with STANDARD_1");
    bad("{'scaleTier':'BASIC','workerType':'standard'," IMG "}",
        "trainingInput.workerType: may "
        "only be set",
        "workerType with BASIC");
    bad("{'scaleTier':'PREMIUM_1','evaluatorCount':1," IMG "}",
        "trainingInput.evaluatorCount",
        "evaluatorCount with PREMIUM_1");
    good_free("{'scaleTier':'BASIC','workerCount':'0'," IMG "}", "workerCount 0 with BASIC");
    bad("{'scaleTier':'BASIC_GPU','parameterServerCount':'1'," IMG "}",
        "trainingInput.parameterServerCount: may only be set when scaleTier is CUSTOM "
        "(scaleTier is BASIC_GPU",
        "parameterServerCount with BASIC_GPU");
    bad("{'workerCount':'1'," IMG "}",
        "trainingInput.workerCount: may only be set when scaleTier is CUSTOM (scaleTier is "
        "BASIC, the default when neither scaleTier nor masterType is set, which fixes the "
        "cluster's shape; for your own shape, set scaleTier CUSTOM with masterType and "
        "workerType)",
        "workerCount without a tier: the default named, and what to set");
}

static void test_roles(void)
{
    struct ty_job *job;

    bad("{" CUSTOM ",'workerCount':'2'}",
        "trainingInput.workerType: required when workerCount",
        "positive workerCount without workerType");
    bad("{" CUSTOM ",'parameterServerCount':'1'}",
        "trainingInput.parameterServerType: required",
        "positive parameterServerCount without parameterServerType");
    bad("{" CUSTOM ",'evaluatorCount':'1'}",
        "trainingInput.evaluatorType: required",
        "positive evaluatorCount without evaluatorType");
    bad("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'-1'}",
        "trainingInput.workerCount: must not be negative",
        "negative workerCount");
    bad("{" CUSTOM ",'parameterServerType':'n1-standard-4','parameterServerCount':'-3'}",
        "trainingInput.parameterServerCount: must not be negative",
        "negative ps count");
    bad("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'10001'}",
        "trainingInput.workerCount: at most 10000",
        "workerCount over the limit");
    bad("{'scaleTier':'CUSTOM','masterType':'n1-standard-3'," IMG "}",
        "trainingInput.masterType: unknown machine type 'n1-standard-3'",
        "unknown masterType");
    bad("{" CUSTOM ",'workerType':'m5.large','workerCount':'1'}",
        "trainingInput.workerType: unknown machine type",
        "unknown workerType");
    bad("{" CUSTOM ",'workerType':'complex_model_m','workerCount':'1'}",
        "trainingInput.workerType: 'complex_model_m' and masterType 'n1-standard-4' cannot be "
        "mixed",
        "Compute Engine master with a legacy worker");
    bad("{'scaleTier':'CUSTOM','masterType':'complex_model_m'," IMG
        ",'evaluatorType':'n1-highcpu-16','evaluatorCount':'1'}",
        "trainingInput.evaluatorType: 'n1-highcpu-16' and masterType",
        "legacy master, CE eval");
    bad("{'scaleTier':'CUSTOM','masterType':'cloud_tpu'," IMG "}",
        "trainingInput.masterType: 'cloud_tpu': Cloud TPUs",
        "cloud_tpu master");

    job = good("{'scaleTier':'CUSTOM','masterType':'complex_model_m'," IMG
               ",'workerType':'complex_model_m_gpu','workerCount':'3','parameterServerType':"
               "'large_model','parameterServerCount':2,'evaluatorType':'standard',"
               "'evaluatorCount':'1'}",
               "legacy types throughout");
    if (job) {
        is_int(ty_job_replica_count(job), 7, "CUSTOM: 1 + 3 + 2 + 1 replicas");
        is_str(job->roles[TY_ROLE_PS].machine_type, "large_model", "ps machine type");
    }
    ty_job_free(job);
    good_free("{" CUSTOM ",'workerType':'a2-highgpu-1g','workerCount':'1'}",
              "Compute Engine types throughout (n1 + a2)");
    good_free("{" CUSTOM ",'workerType':'a2-highgpu-2g','workerCount':'1','workerConfig':"
              "{'acceleratorConfig':{'type':'NVIDIA_TESLA_A100','count':'2'}}}",
              "a2: acceleratorConfig matching the built-in GPUs");
    bad("{" CUSTOM ",'workerType':'a2-highgpu-1g','workerCount':'1','workerConfig':"
        "{'acceleratorConfig':{'type':'NVIDIA_TESLA_K80','count':'8'}}}",
        "trainingInput.workerConfig.acceleratorConfig: 'a2-highgpu-1g' comes with 1 "
        "NVIDIA_TESLA_A100",
        "a2: other accelerators than the built-in ones");
    bad("{" CUSTOM ",'workerType':'n1-standard-8','workerCount':'1','workerConfig':"
        "{'acceleratorConfig':{'type':'NVIDIA_TESLA_T4','count':'17'}}}",
        "trainingInput.workerConfig.acceleratorConfig.count: at most 16 per replica",
        "more than 16 accelerators on a replica");
    bad("{" CUSTOM ",'workerType':'n1-standard-8','workerCount':'1','workerConfig':"
        "{'acceleratorConfig':{'type':'NVIDIA_TESLA_T4','count':'4294967296'}}}",
        "(got 4294967296)",
        "2^32 accelerators (no int wraps it to 0)");
    bad("{" CUSTOM ",'workerType':'standard','workerCount':'0'}",
        "trainingInput.workerType: "
        "'standard' and masterType",
        "a legacy workerType with a CE master, even for 0 workers");

    /* Images and commands. */
    bad("{'scaleTier':'BASIC'}",
        "trainingInput.masterConfig.imageUri: required",
        "no masterConfig");
    bad("{'masterConfig':{'imageUri':''}}",
        "trainingInput.masterConfig.imageUri: required",
        "empty master imageUri");
    bad("{'scaleTier':'CUSTOM','masterType':'n1-standard-4','args':['--x'],'masterConfig':"
        "{'imageUri':'i','containerCommand':['python']}}",
        "trainingInput.args: cannot be combined with trainingInput.masterConfig.containerCommand",
        "args with containerCommand");
    bad("{" CUSTOM ",'args':['--x'],'workerType':'n1-standard-4','workerCount':'1',"
        "'workerConfig':{'containerArgs':['--y']}}",
        "trainingInput.args: cannot be combined with trainingInput.workerConfig.containerArgs",
        "args with workerConfig.containerArgs");
    good_free("{'scaleTier':'CUSTOM','masterType':'n1-standard-4','args':[],'masterConfig':"
              "{'imageUri':'i','containerCommand':['python']}}",
              "an empty args list with containerCommand");
    bad("{'masterConfig':{'imageUri':'i','containerCommand':[]}}",
        "trainingInput.masterConfig.containerCommand: must not be an empty list",
        "empty containerCommand");
    bad("{'masterConfig':{'imageUri':'i','containerCommand':['','-m']}}",
        "trainingInput.masterConfig.containerCommand[0]: must not be empty",
        "containerCommand with an empty program");

    job = good("{'scaleTier':'CUSTOM','masterType':'n1-standard-4','masterConfig':{'imageUri':"
               "'m','containerCommand':['python','-m','t'],'containerArgs':['--a']},"
               "'workerType':'n1-standard-4','workerCount':'2','parameterServerType':"
               "'n1-standard-4','parameterServerCount':'1','parameterServerConfig':{'imageUri':"
               "'ps'},'evaluatorType':'n1-standard-4','evaluatorCount':'1','evaluatorConfig':"
               "{'containerArgs':['--eval']}}",
               "per-role images and commands");
    if (job) {
        struct ty_role_spec *w = &job->roles[TY_ROLE_WORKER], *p = &job->roles[TY_ROLE_PS];
        struct ty_role_spec *e = &job->roles[TY_ROLE_EVALUATOR];
        is_str(w->image_uri, "m", "worker without image: the master's image");
        ok(w->container_command && w->container_command[2] &&
               strcmp(w->container_command[2], "t") == 0 && w->container_args &&
               strcmp(w->container_args[0], "--a") == 0,
           "worker without image: the master's command and args");
        is_str(p->image_uri, "ps", "ps keeps its own image");
        ok(!p->container_command && !p->container_args,
           "ps with its own image: no command inherited (image ENTRYPOINT)");
        is_str(e->image_uri, "m", "evaluator without image: the master's image");
        ok(!e->container_command && e->container_args &&
               strcmp(e->container_args[0], "--eval") == 0 && !e->container_args[1],
           "evaluator with its own containerArgs: keeps them, inherits no command");
    }
    ty_job_free(job);
}

static void test_accelerators(void)
{
    struct ty_job *job;
#define ACC(cfg)                                                                                   \
    "{'scaleTier':'CUSTOM','masterType':'n1-standard-8','masterConfig':"                           \
    "{'imageUri':'i','acceleratorConfig':" cfg "}}"

    job = good(ACC("{'type':'NVIDIA_TESLA_T4','count':'2'}"), "two T4s on n1-standard-8");
    if (job) {
        is_str(job->roles[TY_ROLE_MASTER].accel.type, "NVIDIA_TESLA_T4", "accelerator type");
        is_int(job->roles[TY_ROLE_MASTER].accel.count, 2, "accelerator count");
    }
    ty_job_free(job);
    bad(ACC("{'type':'NVIDIA_TESLA_X1','count':'1'}"),
        "Invalid value at 'trainingInput.masterConfig.acceleratorConfig.type' (TYPE_ENUM)",
        "an accelerator type outside the enum");
    bad(ACC("{'type':'NVIDIA_TESLA_T4','count':'0'}"),
        "trainingInput.masterConfig.acceleratorConfig.count: must be greater than 0",
        "accelerator count 0");
    bad(ACC("{'type':'NVIDIA_TESLA_T4'}"),
        "acceleratorConfig.count: must be greater than 0",
        "accelerator without count");
    bad(ACC("{'count':'1'}"),
        "trainingInput.masterConfig.acceleratorConfig.type: required",
        "accelerator without type");
    bad(ACC("{'type':'ACCELERATOR_TYPE_UNSPECIFIED','count':'1'}"),
        "acceleratorConfig.type: required",
        "ACCELERATOR_TYPE_UNSPECIFIED");
    bad(ACC("{'type':'TPU_V3','count':'8'}"),
        "trainingInput.masterConfig.acceleratorConfig.type: 'TPU_V3': Cloud TPUs",
        "TPU_V3");
    bad("{'scaleTier':'CUSTOM','masterType':'standard_gpu','masterConfig':{'imageUri':'i',"
        "'acceleratorConfig':{'type':'NVIDIA_TESLA_K80','count':'1'}}}",
        "trainingInput.masterConfig.acceleratorConfig: accelerators can only be attached to "
        "Compute Engine machine types",
        "an accelerator on a legacy type");
    bad("{'scaleTier':'BASIC','masterConfig':{'imageUri':'i','acceleratorConfig':{'type':"
        "'NVIDIA_TESLA_T4','count':'1'}}}",
        "trainingInput.masterConfig.acceleratorConfig: accelerators can only be attached",
        "an accelerator with BASIC (whose master is the legacy 'standard')");
    bad("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':1,'workerConfig':{"
        "'acceleratorConfig':{'type':'NVIDIA_TESLA_V100','count':'-1'}}}",
        "trainingInput.workerConfig.acceleratorConfig.count: must be greater than 0",
        "a negative worker accelerator count");
#undef ACC
}

static void test_misc_rules(void)
{
    struct ty_job *job;

    bad("{" IMG ",'runtimeVersion':'2.11'}",
        "trainingInput.runtimeVersion: trainyard runs "
        "custom-container jobs only",
        "runtimeVersion");
    bad("{" IMG ",'pythonModule':'trainer.task'}", "trainingInput.pythonModule:", "pythonModule");
    bad("{" IMG ",'packageUris':['gs://b/p.tar.gz']}", "trainingInput.packageUris:", "packageUris");
    bad("{'jobId':'j','predictionInput':{}}",
        "predictionInput: batch prediction",
        "predictionInput");

    /* scheduling */
#define SCHED(s) "{" IMG ",'scheduling':{" s "}}"
    job = good(SCHED("'maxRunningTime':'7200s','maxWaitTime':'1800s','priority':1000"),
               "scheduling at the limits");
    if (job)
        is_int(job->max_running_usec, INT64_C(7200000000), "maxRunningTime in microseconds");
    ty_job_free(job);
    good_free(SCHED("'priority':0"), "priority 0");
    bad(SCHED("'maxRunningTime':'2h'"),
        "Invalid value at 'trainingInput.scheduling.maxRunningTime' (google.protobuf.Duration)",
        "maxRunningTime '2h'");
    bad(SCHED("'maxRunningTime':'9223372036000s'"),
        "(google.protobuf.Duration), \"9223372036000s\": at most 315576000000s (10,000 years)",
        "maxRunningTime longer than a Duration may be");
    good_free(SCHED("'maxRunningTime':'315576000000s'"), "maxRunningTime of 10,000 years");
    bad(SCHED("'maxRunningTime':'-5s'"),
        "(google.protobuf.Duration), \"-5s\": must be positive",
        "a negative maxRunningTime: the rule it breaks");
    bad(SCHED("'maxRunningTime':7200"),
        "'trainingInput.scheduling.maxRunningTime'",
        "maxRunningTime as a number");
    bad(SCHED("'maxRunningTime':'-5s'"),
        "'trainingInput.scheduling.maxRunningTime'",
        "negative maxRunningTime");
    bad(SCHED("'maxRunningTime':'0s'"),
        "trainingInput.scheduling.maxRunningTime: must be "
        "positive",
        "maxRunningTime 0s");
    bad(SCHED("'maxWaitTime':'1799s'"),
        "trainingInput.scheduling.maxWaitTime: must be at least "
        "1800s",
        "maxWaitTime under 1800s");
    bad(SCHED("'maxWaitTime':'1799.999999s'"),
        "maxWaitTime: must be at least 1800s",
        "maxWaitTime a microsecond under 1800s");
    bad(SCHED("'priority':-1"),
        "trainingInput.scheduling.priority: must be between 0 and 1000",
        "priority -1");
    bad(SCHED("'priority':1001"),
        "trainingInput.scheduling.priority: must be between",
        "priority 1001");
    /* trainyard's extensions (Vertex AI's names): booleans, checked like the rest */
    good_free(SCHED("'restartJobOnWorkerRestart':true,'disableRetries':false"),
              "restartJobOnWorkerRestart and disableRetries");
    bad(SCHED("'disableRetries':'yes'"),
        "Invalid value at 'trainingInput.scheduling.disableRetries' (TYPE_BOOL)",
        "disableRetries 'yes'");
    bad(SCHED("'restartJobOnWorkerRestart':1"),
        "'trainingInput.scheduling.restartJobOnWorkerRestart'",
        "restartJobOnWorkerRestart 1");
    bad(SCHED("'disableRetry':true"),
        "Unknown name \"disableRetry\" at 'trainingInput.scheduling'",
        "a misspelled extension");
    bad(SCHED("'priority':5000000000"),
        "'trainingInput.scheduling.priority' (TYPE_INT32)",
        "priority beyond int32");
#undef SCHED

    /* diskConfig */
#define DISK(d) "{'masterConfig':{'imageUri':'i','diskConfig':{" d "}}}"
    good_free(DISK("'bootDiskType':'pd-standard','bootDiskSizeGb':200"), "pd-standard, 200 GB");
    good_free(DISK("'bootDiskType':'pd-ssd'"), "pd-ssd");
    bad(DISK("'bootDiskType':'pd-balanced'"),
        "trainingInput.masterConfig.diskConfig."
        "bootDiskType: must be 'pd-ssd' or 'pd-standard'",
        "pd-balanced");
    bad(DISK("'bootDiskSizeGb':0"),
        "trainingInput.masterConfig.diskConfig.bootDiskSizeGb: must "
        "be positive",
        "a 0 GB disk");
    bad(DISK("'bootDiskSizeGb':'big'"),
        "'trainingInput.masterConfig.diskConfig.bootDiskSizeGb'"
        " (TYPE_INT32)",
        "a disk size that is no number");
    bad("{" CUSTOM ",'evaluatorType':'n1-standard-4','evaluatorCount':1,'evaluatorConfig':{"
        "'diskConfig':{'bootDiskSizeGb':-10}}}",
        "trainingInput.evaluatorConfig.diskConfig.bootDiskSizeGb: must be positive",
        "a negative evaluator disk");
#undef DISK

    /* labels */
    job = good("{'jobId':'j','labels':{'team':'ml-infra','cost_centre':'','k8':'v_1'},"
               "'trainingInput':{" IMG "}}",
               "labels");
    if (job)
        is_str(json_string_value(json_object_get(job->labels, "team")), "ml-infra", "labels kept");
    ty_job_free(job);
    bad("{'jobId':'j','labels':{'Team':'ml'},'trainingInput':{" IMG "}}",
        "labels: key 'Team' must start with a lowercase letter",
        "an uppercase label key");
    bad("{'jobId':'j','labels':{'1team':'ml'},'trainingInput':{" IMG "}}",
        "labels: key '1team'",
        "a label key starting with a digit");
    bad("{'jobId':'j','labels':{'':'ml'},'trainingInput':{" IMG "}}",
        "labels: key ''",
        "an empty label key");
    /* gcloud's "International characters are allowed": caseless and lowercase letters of
     * any script, other scripts' digits; a length in characters, not bytes */
    job = good("{'jobId':'j','labels':{'\u30c1\u30fc\u30e0':'\u6a5f\u68b0\u5b66\u7fd2',"
               "'\u00e9quipe':'\u0663-\u00df'},'trainingInput':{" IMG "}}",
               "international labels");
    ty_job_free(job);
    bad("{'jobId':'j','labels':{'\u00c9quipe':'ml'},'trainingInput':{" IMG "}}",
        "labels: key '\u00c9quipe' must start with a lowercase letter",
        "an uppercase international letter");
    bad("{'jobId':'j','labels':{'team':'\u00c9'},'trainingInput':{" IMG "}}",
        "labels.team: value '\u00c9' may contain only lowercase letters, digits, hyphens and "
        "underscores (international characters are allowed; at most 63 characters)",
        "an uppercase international letter in a value");
    bad("{'jobId':'j','labels':{'\u0663a':'ml'},'trainingInput':{" IMG "}}",
        "labels: key '\u0663a'",
        "a key starting with another script's digit");
    bad("{'jobId':'j','labels':{'team':'a\u00b7b'},'trainingInput':{" IMG "}}",
        "labels.team: value",
        "a middle dot (punctuation) in a value");
    bad("{'jobId':'j','labels':{'team':'ML'},'trainingInput':{" IMG "}}",
        "labels.team: value 'ML' may contain only",
        "an uppercase label value");
    bad("{'jobId':'j','labels':{'team':'a b'},'trainingInput':{" IMG "}}",
        "labels.team: value",
        "a label value with a space");
    bad("{'jobId':'j','labels':{'team':7},'trainingInput':{" IMG "}}",
        "Invalid value at 'labels.team' (TYPE_STRING)",
        "a numeric label value in JSON");
    bad("{'jobId':'j','labels':['a'],'trainingInput':{" IMG "}}",
        "Invalid value at 'labels' (TYPE_MAP)",
        "labels as a list");

    char key[80], doc[4096];
    memset(key, 'k', 64);
    key[64] = '\0';
    (void)snprintf(
        doc, sizeof(doc), "{'jobId':'j','labels':{'%s':'v'},'trainingInput':{" IMG "}}", key);
    bad(doc, "labels: key 'kkkk", "a 64-character label key");
    key[63] = '\0';
    (void)snprintf(
        doc, sizeof(doc), "{'jobId':'j','labels':{'%s':'v'},'trainingInput':{" IMG "}}", key);
    good_free(doc, "a 63-character label key");

    size_t n = (size_t)snprintf(doc, sizeof(doc), "{'jobId':'j','labels':{");
    for (int i = 0; i <= TY_MAX_LABELS; i++)
        n += (size_t)snprintf(doc + n, sizeof(doc) - n, "%s'l%d':'v'", i ? "," : "", i);
    (void)snprintf(doc + n, sizeof(doc) - n, "},'trainingInput':{" IMG "}}");
    bad(doc, "labels: at most 64 labels (got 65)", "65 labels");
}

static void test_env_size(void)
{
    struct ty_job *job = NULL;
    char *doc;
    _cleanup_free_ char *arg = xmalloc(2001);

    memset(arg, 'a', 2000);
    arg[2000] = '\0';
    doc = xasprintf("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'%d','args':["
                    "'%s','%s']}",
                    5000,
                    arg,
                    arg);
    bad(doc, "replicas", "5000 workers with long args (CLUSTER_SPEC over 128 KiB)");
    like(err.msg, "the cluster of 5001 replicas is too large", "env size: names the replica count");
    like(err.msg,
         "string; use fewer replicas",
         "env size: a small job is told to use fewer replicas");
    free(doc);

    doc = xasprintf("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'%d','args':["
                    "'%s','%s']}",
                    100,
                    arg,
                    arg);
    job = good(doc, "100 workers with the same args");
    ty_job_free(job);
    free(doc);

    _cleanup_free_ char *huge = xmalloc(140001);
    memset(huge, 'x', 140000);
    huge[140000] = '\0';
    doc = xasprintf("{" IMG ",'args':['%s']}", huge);
    bad(doc, "the cluster of 1 replicas is too large", "a single replica with 140 KB of args");
    like(err.msg,
         "140004 of them in trainingInput.args: make trainingInput.args smaller",
         "env size: names the field");
    free(doc);
    doc = xasprintf("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'10000',"
                    "'parameterServerType':'n1-standard-4','parameterServerCount':'10000',"
                    "'evaluatorType':'n1-standard-4','evaluatorCount':'10000','args':['%s']}",
                    arg);
    bad(doc,
        "the cluster of 30001 replicas is too large: CLUSTER_SPEC would be at least",
        "30001 replicas (refused before planning)");
    free(doc);
    /* Near the limit: the lower bound passes and the exact check refuses. */
    _cleanup_free_ char *mid = xmalloc(40001);
    memset(mid, 'm', 40000);
    mid[40000] = '\0';
    doc = xasprintf("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'1800','args':['%s']}",
                    mid);
    bad(doc,
        "the cluster of 1801 replicas is too large: CLUSTER_SPEC would be 1",
        "1801 replicas with 40 KB of args (the exact check)");
    like(err.msg,
         "use fewer replicas or make trainingInput.args smaller",
         "env size: both ways out");
    free(doc);
    doc = xasprintf("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'1000','args':['%s']}",
                    mid);
    good_free(doc, "1001 replicas with 40 KB of args");
    free(doc);
}

/* The smallest maxWaitTime is the accepting side's setting (ty_job_accept_wait); the job
 * model only wants it positive, so a stored job with a short one is never refused. */
static void test_wait_floor(void)
{
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *t =
        dq("{'jobId':'w','trainingInput':{" IMG ",'scheduling':{'maxWaitTime':'2s'}}}");
    struct ty_job *job = NULL;

    ok(ty_spec_parse(t, strlen(t), TY_SPEC_JSON, &doc, &err) == 0, "wait: document parses");
    is_int(ty_job_from_json(doc, &job, &err), 0, "wait: the model takes maxWaitTime 2s");
    ty_job_free(job);
    job = NULL;
    is_int(ty_job_accept_wait(doc, 1000000, &job, &err), 0, "wait: a 1 s floor takes 2s");
    ty_job_free(job);
    job = NULL;
    is_int(ty_job_accept_wait(doc, 3000000, &job, &err), -EINVAL, "wait: a 3 s floor refuses 2s");
    is_str(err.msg,
           "trainingInput.scheduling.maxWaitTime: must be at least 3s (got 2s)",
           "wait: the message names the floor and the value");
    ok(job == NULL, "wait: nothing returned on refusal");
    is_int(ty_job_accept(doc, &job, &err), -EINVAL, "wait: ty_job_accept keeps 1800 s");
    like(err.msg, "must be at least 1800s (got 2s)", "wait: ty_job_accept's message");
    bad("{" IMG ",'scheduling':{'maxWaitTime':'0s'}}",
        "trainingInput.scheduling.maxWaitTime: must be positive",
        "maxWaitTime 0s");
}

int main(void)
{
    is_str(ty_role_name(TY_ROLE_PS), "ps", "role name");
    is_str(ty_role_field(TY_ROLE_PS), "parameterServer", "role field");
    is_str(ty_scale_tier_name(TY_TIER_PREMIUM_1), "PREMIUM_1", "tier name");
    test_job_id();
    test_tiers();
    test_roles();
    test_accelerators();
    test_misc_rules();
    test_env_size();
    test_wait_floor();
    return done_testing();
}
