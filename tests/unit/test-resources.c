/* SPDX-License-Identifier: Apache-2.0
 * test-resources.c: resource vectors, the capacity and limit settings (good and bad input,
 * the errors' words, the formatting round trip), the demand of real jobs built from JSON
 * (machine types, acceleratorConfig, legacy GPU types, scale tiers, tuning) and the "never
 * fits" messages (src/lib/admit/resources.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "json.h"
#include "macro.h"
#include "resources.h"
#include "tap.h"

#define T4   (TY_RES_GPU0 + 4)
#define K80  (TY_RES_GPU0 + 0)
#define P100 (TY_RES_GPU0 + 1)
#define A100 (TY_RES_GPU0 + 5)

static void test_vectors(void)
{
    struct ty_resources a, b;
    char buf[64];

    is_str(ty_gpu_type_name(4), "NVIDIA_TESLA_T4", "type 4 is the T4");
    is_int(ty_gpu_type_index("NVIDIA_TESLA_A100"), 5, "A100 is type 5");
    is_int(ty_gpu_type_index("nvidia-tesla-t4"), -1, "the exact index takes enum names only");
    is_int(ty_gpu_type_index(NULL), -1, "NULL: no type");

    ty_resources_unlimited(&a);
    ok(!ty_resources_any_counted(&a), "unlimited: nothing counted");
    ty_resources_zero(&b);
    b.v[TY_RES_CPUS] = 4;
    ty_resources_add(&a, &b, 3);
    is_int(a.v[TY_RES_CPUS], TY_RES_UNLIMITED, "an unlimited dimension stays so under add");
    a.v[TY_RES_CPUS] = 10;
    ok(ty_resources_any_counted(&a), "one counted dimension");
    ty_resources_add(&a, &b, 2);
    is_int(a.v[TY_RES_CPUS], 18, "add times 2");
    ty_resources_sub(&a, &b);
    is_int(a.v[TY_RES_CPUS], 14, "sub");
    b.v[T4] = 1;
    is_int(ty_resources_short(&b, &a), -1, "4 vCPUs and a T4 fit 14 vCPUs and unlimited GPUs");
    a.v[T4] = 0;
    is_int(ty_resources_short(&b, &a), T4, "no T4: short of T4");
    b.v[TY_RES_CPUS] = 15;
    is_int(ty_resources_short(&b, &a), TY_RES_CPUS, "the first short dimension is named");

    is_str(ty_res_amount(TY_RES_JOBS, 1, buf, sizeof(buf)), "1 running job", "one job");
    is_str(ty_res_amount(TY_RES_JOBS, 4, buf, sizeof(buf)), "4 running jobs", "jobs");
    is_str(ty_res_amount(TY_RES_CPUS, 1, buf, sizeof(buf)), "1 vCPU", "one vCPU");
    is_str(ty_res_amount(TY_RES_CPUS, 16, buf, sizeof(buf)), "16 vCPUs", "vCPUs");
    is_str(ty_res_amount(TY_RES_MEMORY, 30720, buf, sizeof(buf)), "30.0 GiB of memory", "GiB");
    is_str(ty_res_amount(TY_RES_MEMORY, 512, buf, sizeof(buf)), "512 MiB of memory", "MiB");
    is_str(ty_res_amount(T4, 2, buf, sizeof(buf)), "2 × NVIDIA_TESLA_T4", "GPUs");
    is_str(ty_res_key(TY_RES_JOBS), "jobs", "key jobs");
    is_str(ty_res_key(TY_RES_MEMORY), "memory", "key memory");
    is_str(ty_res_key(A100), "gpus", "key gpus");
}

/* Parse @text into an unlimited vector; the vector, or a test failure. */
static struct ty_resources parsed(const char *text, bool jobs)
{
    struct ty_resources r;
    struct ty_error err = {0};

    ty_resources_unlimited(&r);
    if (!ok(ty_resources_parse(text, jobs, "--capacity", &r, &err) == 0, "parses '%s'", text))
        diag("error: %s", err.msg);
    return r;
}

static void test_parse_good(void)
{
    struct ty_resources r;
    struct ty_error err = {0};

    r = parsed("cpus=8,memory=32G,gpus=NVIDIA_TESLA_T4:2", false);
    is_int(r.v[TY_RES_CPUS], 8, "cpus");
    is_int(r.v[TY_RES_MEMORY], 32768, "32G is 32768 MiB");
    is_int(r.v[T4], 2, "2 T4");
    is_int(r.v[K80], 0, "a type not named in gpus= is 0");
    is_int(r.v[TY_RES_JOBS], TY_RES_UNLIMITED, "jobs not given: as it was");

    r = parsed("memory=1073741824", false);
    is_int(r.v[TY_RES_MEMORY], 1024, "bytes");
    is_int(r.v[TY_RES_CPUS], TY_RES_UNLIMITED, "cpus not given: as it was");
    is_int(r.v[T4], TY_RES_UNLIMITED, "gpus not given: as they were");
    is_int(parsed("memory=64GiB", false).v[TY_RES_MEMORY], 65536, "GiB");
    is_int(parsed("memory=64g", false).v[TY_RES_MEMORY], 65536, "lower-case g");
    is_int(parsed("memory=1536M", false).v[TY_RES_MEMORY], 1536, "M");
    is_int(parsed("memory=2097152K", false).v[TY_RES_MEMORY], 2048, "K");
    is_int(parsed("memory=1T", false).v[TY_RES_MEMORY], 1048576, "T");
    is_int(parsed("memory=1500000", false).v[TY_RES_MEMORY], 1, "bytes round down to MiB");

    r = parsed("gpus=nvidia-tesla-t4:1+NVIDIA_TESLA_K80:2+NVIDIA_TESLA_T4:1", false);
    is_int(r.v[T4], 2, "gcloud's spelling; a type named twice adds up");
    is_int(r.v[K80], 2, "second type");
    r = parsed(" cpus = 4 , memory= 8G ,, gpus =NVIDIA_TESLA_A100:1 ", false);
    is_int(r.v[TY_RES_CPUS], 4, "blanks around keys and values");
    is_int(r.v[TY_RES_MEMORY], 8192, "blanks: memory");
    is_int(r.v[A100], 1, "blanks: gpus");
    r = parsed("gpus=0", false);
    ok(r.v[K80] == 0 && r.v[T4] == 0 && r.v[A100] == 0, "gpus=0: every GPU type counted, 0");
    is_int(parsed("gpus=none", true).v[T4], 0, "gpus=none");
    r = parsed("jobs=3,cpus=0", true);
    is_int(r.v[TY_RES_JOBS], 3, "jobs= in a limit");
    is_int(r.v[TY_RES_CPUS], 0, "cpus=0");

    /* keys not given keep what *r had */
    ty_resources_zero(&r);
    r.v[TY_RES_CPUS] = 7;
    ok(ty_resources_parse("memory=1G", false, "x", &r, &err) == 0 && r.v[TY_RES_CPUS] == 7 &&
           r.v[TY_RES_MEMORY] == 1024,
       "a key not given keeps its value");
}

/* @text must be refused, the message containing each of @needles (NULL-terminated). */
static void refused(const char *text, bool jobs, const char *const *needles)
{
    struct ty_resources r, before;
    struct ty_error err = {0};
    int rc;

    ty_resources_unlimited(&r);
    r.v[TY_RES_CPUS] = 99;
    before = r;
    rc = ty_resources_parse(text, jobs, "FILE:3: capacity", &r, &err);
    ok(rc == -EINVAL, "refuses '%s'", text);
    like(err.msg, "FILE:3: capacity: ", "the error names where ('%s')", text);
    for (size_t i = 0; needles[i]; i++)
        like(err.msg, needles[i], "the error of '%s' says '%s'", text, needles[i]);
    ok(memcmp(&r, &before, sizeof(r)) == 0, "a refused setting changes nothing ('%s')", text);
}

#define REFUSED(text, jobs, ...) refused(text, jobs, (const char *const[]){__VA_ARGS__, NULL})

static void test_parse_bad(void)
{
    REFUSED("", false, "expected KEY=VALUE settings");
    REFUSED(" , ", false, "expected KEY=VALUE settings");
    REFUSED("cpus", false, "'cpus' is not KEY=VALUE");
    REFUSED("cpus=abc", false, "cpus: expected a number from 0 to 1000000 (got 'abc')");
    REFUSED("cpus=-1", false, "cpus: expected a number");
    REFUSED("cpus=4,memory=8G,cpus=2", false, "cpus is given twice");
    REFUSED("memory=12X", false, "memory: expected a size", "(got '12X')");
    REFUSED("memory=G", false, "memory: expected a size");
    REFUSED("memory=0", false, "at least 1M");
    REFUSED("memory=1000", false, "memory: expected a size");
    REFUSED("memory=99999999999999T", false, "memory: expected a size");
    REFUSED("memory=99999999999999999999999", false, "memory: expected a size");
    REFUSED("gpus=", false, "gpus: expected TYPE:N", "(got nothing)");
    REFUSED("gpus=NVIDIA_TESLA_T4", false, "gpus: 'NVIDIA_TESLA_T4' is not TYPE:N");
    REFUSED("gpus=NVIDIA_TESLA_X9:1", false, "unknown GPU type 'NVIDIA_TESLA_X9'", "known:");
    REFUSED("gpus=TPU_V2:1", false, "unknown GPU type 'TPU_V2' (known: NVIDIA_TESLA_K80, ");
    REFUSED("gpus=nvidia-tesla-v10:1",
            false,
            "unknown GPU type 'nvidia-tesla-v10' (did you mean NVIDIA_TESLA_V100? known: "
            "NVIDIA_TESLA_K80, NVIDIA_TESLA_P100, NVIDIA_TESLA_V100, NVIDIA_TESLA_P4, "
            "NVIDIA_TESLA_T4, NVIDIA_TESLA_A100)");
    REFUSED("gpus=NVIDIA_TESLA_T4:", false, "expected a count after 'NVIDIA_TESLA_T4:'");
    REFUSED("gpus=NVIDIA_TESLA_T4:5000", false, "count of NVIDIA_TESLA_T4 must be a number");
    REFUSED("gpus=NVIDIA_TESLA_T4:x", false, "(got 'x')");
    REFUSED("gpus=NVIDIA_TESLA_T4:4000+NVIDIA_TESLA_T4:100", false, "more than 4096");
    REFUSED("gpus=NVIDIA_TESLA_T4:1+", false, "nothing after the last '+'");
    REFUSED("gpus=+NVIDIA_TESLA_T4:1", false, "'' is not TYPE:N");
    REFUSED("disk=10G", false, "unknown key 'disk'", "known: cpus, memory, gpus");
    REFUSED("disk=10G", true, "known: jobs, cpus, memory, gpus");
    REFUSED("jobs=2", false, "jobs: not a key of this setting", "--max-running-jobs");
    REFUSED("jobs=x", true, "jobs: expected a number from 0 to 100000");
    REFUSED("cpus=4,memory=8Q", false, "memory:");
}

static void round_trip(const struct ty_resources *r, const char *name)
{
    char text[256];
    struct ty_resources back;
    struct ty_error err = {0};

    ty_resources_format(r, text, sizeof(text));
    ty_resources_unlimited(&back);
    if (!*text) {
        ok(!ty_resources_any_counted(r), "%s: '' only when nothing is counted", name);
        return;
    }
    if (!ok(ty_resources_parse(text, true, "x", &back, &err) == 0 &&
                memcmp(&back, r, sizeof(back)) == 0,
            "%s: '%s' parses back to the same vector",
            name,
            text))
        diag("error: %s", err.msg);
}

static void test_format(void)
{
    struct ty_resources r;
    char buf[256];

    r = parsed("cpus=8,memory=32G,gpus=NVIDIA_TESLA_T4:2+NVIDIA_TESLA_K80:1", false);
    is_str(ty_resources_format(&r, buf, sizeof(buf)),
           "cpus=8,memory=32768M,gpus=NVIDIA_TESLA_K80:1+NVIDIA_TESLA_T4:2",
           "format");
    round_trip(&r, "capacity");
    r = parsed("jobs=2,gpus=0", true);
    is_str(ty_resources_format(&r, buf, sizeof(buf)), "jobs=2,gpus=0", "no GPU: gpus=0");
    round_trip(&r, "gpus=0");
    ty_resources_unlimited(&r);
    is_str(ty_resources_format(&r, buf, sizeof(buf)), "", "nothing counted: ''");
    r = parsed("cpus=8,memory=32G", false);
    is_str(ty_resources_format(&r, buf, 8), "cpus=8,", "cut at the length, terminated");

    /* many vectors: each dimension unlimited or a count; GPUs all counted or none */
    srand(14);
    for (int i = 0; i < 300; i++) {
        bool gpus = rand() % 2;
        ty_resources_unlimited(&r);
        if (rand() % 2)
            r.v[TY_RES_JOBS] = rand() % 100;
        if (rand() % 2)
            r.v[TY_RES_CPUS] = rand() % 1000;
        if (rand() % 2)
            r.v[TY_RES_MEMORY] = 1 + rand() % 10000000;
        for (int t = 0; gpus && t < TY_GPU_NTYPES; t++)
            r.v[TY_RES_GPU0 + t] = rand() % 3 ? 0 : rand() % 4096;
        char name[32];
        (void)snprintf(name, sizeof(name), "random vector %d", i);
        round_trip(&r, name);
    }
}

/* A job from JSON text in the ' form, with a jobId. */
static struct ty_job *job_of(const char *text)
{
    char *t = xstrdup(text);
    json_t *doc = NULL;
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    if (ty_spec_parse(t, strlen(t), TY_SPEC_JSON, &doc, &err) < 0 ||
        ty_job_from_json(doc, &job, &err) < 0)
        BAIL_OUT("job %s: %s", text, err.msg);
    json_decref(doc);
    free(t);
    return job;
}

static void demand_of(const char *text, struct ty_demand *d)
{
    struct ty_job *job = job_of(text);
    ty_demand_of_job(job, d);
    ty_job_free(job);
}

#define JOB(ti)      "{'jobId':'j1','trainingInput':{" ti "}}"
#define IMG          "'masterConfig':{'imageUri':'i'"
#define ACC(type, n) "'acceleratorConfig':{'type':'" type "','count':'" #n "'}"
#define P_LR         "{'parameterName':'lr','type':'DOUBLE','minValue':0.0001,'maxValue':0.1}"

static void test_demand(void)
{
    struct ty_demand d;
    struct ty_resources tot;

    demand_of(JOB(IMG "}"), &d);
    is_int(d.trial.v[TY_RES_CPUS], 4, "BASIC: standard has 4 vCPUs");
    is_int(d.trial.v[TY_RES_MEMORY], 15360, "BASIC: 15360 MiB");
    is_int(d.trial.v[TY_RES_JOBS], 1, "one running-job slot");
    is_int(ty_demand_trial_gpus(&d), 0, "BASIC: no GPU");
    ok(!d.tuning && d.max_trials == 1, "no tuning: one trial");
    is_int(d.role_count[TY_ROLE_MASTER], 1, "one master");

    demand_of(JOB("'scaleTier':'BASIC_GPU'," IMG "}"), &d);
    is_int(d.trial.v[K80], 1, "BASIC_GPU: standard_gpu's built-in K80");
    is_int(d.role_gpu_type[TY_ROLE_MASTER], 0, "BASIC_GPU: type K80");

    demand_of(JOB("'scaleTier':'STANDARD_1'," IMG "}"), &d);
    is_int(d.trial.v[TY_RES_CPUS], 32, "STANDARD_1: 8 standard replicas, 32 vCPUs");
    is_int(d.role_count[TY_ROLE_WORKER], 4, "STANDARD_1: 4 workers");
    is_int(d.role_count[TY_ROLE_PS], 3, "STANDARD_1: 3 parameter servers");

    demand_of(JOB("'scaleTier':'CUSTOM','masterType':'n1-standard-8'," IMG
                  "," ACC("NVIDIA_TESLA_T4",
                          2) "},'workerType':'n1-standard-4','workerCount':'3',"
                             "'workerConfig':{" ACC("NVIDIA_TESLA_T4",
                                                    1) "},'parameterServerType':'n1-highmem-2',"
                                                       "'parameterServerCount':'1'"),
              &d);
    is_int(d.trial.v[TY_RES_CPUS], 8 + 3 * 4 + 2, "CUSTOM: vCPUs of every replica");
    is_int(d.trial.v[TY_RES_MEMORY], 30720 + 3 * 15360 + 13312, "CUSTOM: memory of every replica");
    is_int(d.trial.v[T4], 2 + 3, "acceleratorConfig: 2 for the master, 1 per worker");
    ok(d.role_gpus[TY_ROLE_MASTER] == 2 && d.role_gpus[TY_ROLE_WORKER] == 1 &&
           d.role_gpus[TY_ROLE_PS] == 0,
       "GPUs per replica by role");
    ok(d.role_gpu_type[TY_ROLE_MASTER] == 4 && d.role_gpu_type[TY_ROLE_PS] == -1,
       "GPU type per role, -1 without");

    demand_of(JOB("'scaleTier':'CUSTOM','masterType':'complex_model_m_gpu'," IMG
                  "},'workerType':'standard_p100','workerCount':'2'"),
              &d);
    is_int(d.trial.v[K80], 4, "legacy complex_model_m_gpu: 4 built-in K80s");
    is_int(d.trial.v[P100], 2, "legacy standard_p100 × 2: 2 P100s");
    is_int(d.trial.v[TY_RES_CPUS], 16 + 2 * 4, "legacy types' vCPUs");
    is_int(ty_demand_trial_gpus(&d), 6, "6 GPUs in all");

    demand_of(JOB("'scaleTier':'CUSTOM','masterType':'a2-highgpu-2g'," IMG "}"), &d);
    is_int(d.trial.v[A100], 2, "a2-highgpu-2g: 2 built-in A100s");

    demand_of(
        JOB(IMG "},'hyperparameters':{'maxTrials':10,'maxParallelTrials':3,'params':[" P_LR "]}"),
        &d);
    ok(d.tuning, "tuning job");
    is_int(d.max_trials, 3, "maxParallelTrials 3");
    is_int(d.trial.v[TY_RES_CPUS], 4, "the trial is one trial's shape");
    ty_demand_total(&d, 3, &tot);
    is_int(tot.v[TY_RES_CPUS], 12, "3 trials: 3 × the vCPUs");
    is_int(tot.v[TY_RES_MEMORY], 3 * 15360, "3 trials: 3 × the memory");
    is_int(tot.v[TY_RES_JOBS], 1, "3 trials: still one running-job slot");

    demand_of(
        JOB(IMG "},'hyperparameters':{'maxTrials':2,'maxParallelTrials':5,'params':[" P_LR "]}"),
        &d);
    is_int(d.max_trials, 2, "maxParallelTrials 5 of maxTrials 2: 2 at once at most");
}

static void test_check(void)
{
    struct ty_demand d;
    struct ty_resources have;
    char why[256];

    demand_of(JOB("'scaleTier':'CUSTOM','masterType':'n1-standard-8'," IMG
                  "," ACC("NVIDIA_TESLA_T4", 4) "}"),
              &d);
    ty_resources_unlimited(&have);
    is_int(ty_demand_check(&d, &have, "this service", NULL, why, sizeof(why)),
           0,
           "everything unlimited: fits");
    (void)ty_resources_parse("cpus=16,memory=64G,gpus=NVIDIA_TESLA_T4:2", false, "x", &have, NULL);
    is_int(ty_demand_check(
               &d, &have, "this service", "--capacity gpus=NVIDIA_TESLA_T4:2", why, sizeof(why)),
           -1,
           "4 T4 of 2: never fits");
    is_str(why,
           "trainingInput: the job needs 4 × NVIDIA_TESLA_T4 at once, and this service has 2 "
           "(--capacity gpus=NVIDIA_TESLA_T4:2)",
           "the message names the resource, the need and what the service has");
    have.v[T4] = 0;
    (void)ty_demand_check(&d, &have, "this service", NULL, why, sizeof(why));
    is_str(why,
           "trainingInput: the job needs 4 × NVIDIA_TESLA_T4 at once, and this service has "
           "none",
           "0: has none, no setting named");
    have.v[T4] = 8;
    have.v[TY_RES_CPUS] = 4;
    (void)ty_demand_check(&d, &have, "project vision", NULL, why, sizeof(why));
    is_str(why,
           "trainingInput: the job needs 8 vCPUs at once, and project vision has 4 vCPUs",
           "vCPUs, for a project");
    have.v[TY_RES_CPUS] = 8;
    have.v[TY_RES_MEMORY] = 20480;
    (void)ty_demand_check(&d, &have, "this service", NULL, why, sizeof(why));
    like(why,
         "needs 30.0 GiB of memory at once, and this service has 20.0 GiB of memory",
         "memory in GiB");
    have.v[TY_RES_MEMORY] = 30720;
    is_int(ty_demand_check(&d, &have, "this service", NULL, why, sizeof(why)),
           0,
           "exactly enough: fits");
    have.v[TY_RES_JOBS] = 0;
    (void)ty_demand_check(&d, &have, "project vision", NULL, why, sizeof(why));
    like(why, "the job needs 1 running job at once, and project vision has none", "jobs=0");

    demand_of(JOB("'scaleTier':'CUSTOM','masterType':'n1-standard-4'," IMG "," ACC(
                  "NVIDIA_TESLA_T4", 2) "},'hyperparameters':{'maxTrials':9,'maxParallelTrials':4,"
                                        "'params':[" P_LR "]}"),
              &d);
    ty_resources_unlimited(&have);
    have.v[T4] = 3;
    is_int(ty_demand_check(&d, &have, "this service", NULL, why, sizeof(why)),
           0,
           "tuning: one trial (2 T4) fits 3, though 4 at once would not");
    have.v[T4] = 1;
    (void)ty_demand_check(&d, &have, "this service", NULL, why, sizeof(why));
    like(why,
         "one trial of the job needs 2 × NVIDIA_TESLA_T4 at once, and this service has 1",
         "tuning: one trial's words");
    (void)ty_demand_check(&d, &have, "this service", NULL, why, 20);
    is_int(strlen(why), 19, "the message is cut at the length");
}

int main(void)
{
    test_vectors();
    test_parse_good();
    test_parse_bad();
    test_format();
    test_demand();
    test_check();
    return done_testing();
}
