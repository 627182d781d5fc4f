/* SPDX-License-Identifier: Apache-2.0
 * test-run-gpus.c: what a run is given, through the run library and the process runtime with
 * real local processes: each replica's devices as the run maps them (ty_run_gpus_for_plan)
 * agree with the scheduler's grant (ty_grant_replica_gpus) for jobs of several roles and trial
 * slots; replicas get CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER (and those given none get
 * neither), stand-ins are said to be so, and the admission line follows "is queued"; a study
 * runs at most the trials it was given slots for, each trial on its slot's devices;
 * scheduling.maxWaitTime cancels a run (and a study) that has not started by its deadline,
 * with the service's words, and leaves alone one that has. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "gpudev.h"
#include "jobrun.h"
#include "json.h"
#include "macro.h"
#include "plan.h"
#include "process.h"
#include "resources.h"
#include "runtime.h"
#include "spec.h"
#include "study.h"
#include "supervise.h"
#include "tap.h"
#include "timeutil.h"

#define WAIT_MSG "Job cancelled: it did not start within its scheduling.maxWaitTime (1800s)."

static struct ty_job *job_of(const char *text)
{
    struct ty_job *job = NULL;
    struct ty_error e = {0};
    json_t *doc = json_loads(text, 0, NULL);

    if (!doc || ty_job_from_json(doc, &job, &e) < 0)
        BAIL_OUT("job %s: %s", text, e.msg);
    json_decref(doc);
    return job;
}

/* A job of every role with GPUs of several kinds (the ps has none), in @slots slots. */
static void test_mapping(void)
{
    _cleanup_(ty_job_freep) struct ty_job *job = job_of(
        "{\"jobId\":\"map\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
        "\"masterType\":\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"i\","
        "\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}},"
        "\"workerType\":\"n1-standard-8\",\"workerCount\":\"3\",\"workerConfig\":{\"imageUri\":"
        "\"i\",\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_V100\",\"count\":\"2\"}},"
        "\"parameterServerType\":\"n1-standard-4\",\"parameterServerCount\":\"2\","
        "\"evaluatorType\":\"a2-highgpu-4g\",\"evaluatorCount\":\"1\"}}");
    struct ty_cluster_plan *plan = NULL;
    struct ty_demand d;
    struct ty_error e = {0};
    int gpus[64];
    struct ty_grant g = {.trials = 3, .gpus = gpus, .ngpus = 3 * 11};
    struct ty_run_gpus rg = {.trials = 3, .gpus = gpus, .ngpus = 3 * 11};
    bool same = true;

    for (int i = 0; i < 64; i++)
        gpus[i] = 1000 + i;
    if (ty_plan_build(job, NULL, NULL, &plan, &e) < 0)
        BAIL_OUT("plan: %s", e.msg);
    ty_demand_of_job(job, &d);
    is_int(ty_demand_trial_gpus(&d), 11, "mapping: 1 + 3 × 2 + 4 GPUs per trial");
    for (int slot = 0; slot < 4; slot++) {
        _cleanup_free_ struct ty_replica_gpus *rep = ty_run_gpus_for_plan(&rg, plan, slot);
        for (size_t i = 0; i < plan->n_replicas; i++) {
            const struct ty_replica *r = &plan->replicas[i];
            size_t n = 0;
            const int *want = ty_grant_replica_gpus(&g, &d, slot, r->role, r->index, &n);
            size_t got_n = rep ? rep[i].n : 0;
            const int *got = rep ? rep[i].dev : NULL;
            if (got_n != n || got != want) {
                diag("slot %d %s: run %zu at %p, grant %zu at %p",
                     slot,
                     r->task_name,
                     got_n,
                     (const void *)got,
                     n,
                     (const void *)want);
                same = false;
            }
        }
        if (slot == 3)
            ok(rep == NULL, "mapping: no slot 3 in a grant of 3 trials");
    }
    ok(same, "mapping: the run gives each replica of each slot the grant's devices");
    {
        _cleanup_free_ struct ty_replica_gpus *rep = ty_run_gpus_for_plan(&rg, plan, 1);
        char buf[64];
        is_str(ty_replica_gpus_list(&rep[2], buf, sizeof(buf)),
               "1014,1015",
               "mapping: slot 1, worker 1: after slot 0's 11, the master's 1 and worker 0's 2");
        is_int(rep[4].n, 0, "mapping: a ps gets none");
        is_str(ty_replica_gpus_list(&rep[6], buf, sizeof(buf)),
               "1018,1019,1020,1021",
               "mapping: the evaluator gets its machine type's four A100s, last of the slot");
    }
    rg.ngpus = 11 + 5;
    {
        _cleanup_free_ struct ty_replica_gpus *rep = ty_run_gpus_for_plan(&rg, plan, 1);
        ok(rep && rep[0].n == 1 && rep[1].n == 2 && rep[2].n == 2 && rep[3].n == 0,
           "mapping: a grant too short gives what it covers, and no more");
    }
    ok(ty_run_gpus_for_plan(NULL, plan, 0) == NULL, "mapping: nothing given, nothing mapped");
    ty_plan_free(plan);
}

struct capture {
    struct ty_buf lines; /* "task|trial|message\n" */
};

static void cap_log(void *ctx, const struct ty_log_record *rec)
{
    struct capture *c = ctx;
    ty_buf_printf(&c->lines,
                  "%s|%s|%.*s\n",
                  rec->task,
                  rec->trial ? rec->trial : "",
                  (int)rec->len,
                  rec->message);
}

/* Run @job to its end with @ops and @sup (its ctx the capture); the job's state, and its
 * errorMessage in @errbuf. */
static enum ty_job_state run(const struct ty_job *job,
                             const struct ty_runtime_ops *ops,
                             const struct ty_supervisor_options *sup,
                             const char *state_dir,
                             char *errbuf,
                             size_t n)
{
    struct ty_loop *loop = ty_loop_new();
    struct ty_jobrun_options jo = {
        .runtime = ops, .state_dir = state_dir, .sup = *sup, .ctx = sup->ctx};
    struct ty_jobrun *jr = NULL;
    struct ty_error e = {0};
    enum ty_job_state st = TY_STATE_UNSPECIFIED;

    if (ty_jobrun_new(loop, job, &jo, &jr, &e) < 0 || ty_jobrun_run(jr, &e) < 0)
        diag("jobrun: %s", e.msg);
    else
        st = ty_jobrun_state(jr);
    (void)snprintf(errbuf, n, "%s", jr ? ty_jobrun_error(jr) : "");
    ty_jobrun_free(jr);
    ty_loop_free(loop);
    return st;
}

/* A job of a master and two workers (the workers have two T4s each, the master one) and a ps
 * with none, each printing what it got. */
static void test_process_env(void)
{
    static const char *const script =
        "echo got=$CUDA_VISIBLE_DEVICES/$CUDA_DEVICE_ORDER/${NVIDIA_VISIBLE_DEVICES-unset}";
    _cleanup_free_ char *text = xasprintf(
        "{\"jobId\":\"env\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
        "\"masterType\":\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"i\","
        "\"containerCommand\":[\"sh\",\"-c\",\"%s; sleep 0.5\"],"
        "\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}},"
        "\"workerType\":\"n1-standard-4\",\"workerCount\":\"2\",\"workerConfig\":{\"imageUri\":"
        "\"i\",\"containerCommand\":[\"sh\",\"-c\",\"%s\"],"
        "\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"2\"}},"
        "\"parameterServerType\":\"n1-standard-4\",\"parameterServerCount\":\"1\","
        "\"parameterServerConfig\":{\"imageUri\":\"i\",\"containerCommand\":[\"sh\",\"-c\","
        "\"%s; sleep 5\"]}}}",
        script,
        script,
        script);
    _cleanup_(ty_job_freep) struct ty_job *job = job_of(text);
    int gpus[] = {3, 4, 5, 6, 7};
    struct ty_run_gpus rg = {.trials = 1, .gpus = gpus, .ngpus = 5, .stand_in = true};
    struct capture cap = {TY_BUF_INIT};
    struct ty_supervisor_options so = {
        .on_log = cap_log, .gpus = &rg, .admitted = "Admitted after 1.0 s.", .ctx = &cap};
    char err[512];
    const char *l;

    (void)unsetenv("CUDA_VISIBLE_DEVICES");
    (void)unsetenv("CUDA_DEVICE_ORDER");
    (void)unsetenv("NVIDIA_VISIBLE_DEVICES");
    is_str(ty_job_state_name(run(job, &ty_runtime_process, &so, NULL, err, sizeof(err))),
           "SUCCEEDED",
           "env: the job succeeds");
    l = ty_buf_str(&cap.lines);
    like(l, "master-replica-0||got=3/PCI_BUS_ID/unset", "env: the master gets device 3");
    like(l, "worker-replica-0||got=4,5/PCI_BUS_ID/unset", "env: worker 0 gets 4 and 5");
    like(l, "worker-replica-1||got=6,7/PCI_BUS_ID/unset", "env: worker 1 gets 6 and 7");
    like(l, "ps-replica-0||got=//unset", "env: the ps gets no GPU variable");
    like(l,
         "Job env is queued.\nservice||Admitted after 1.0 s.\n",
         "env: the admission line follows the queue line");
    like(l, "The job's GPUs are stand-ins", "env: stand-ins are said to be so");
    ty_buf_release(&cap.lines);

    so.gpus = NULL;
    so.admitted = NULL;
    is_str(ty_job_state_name(run(job, &ty_runtime_process, &so, NULL, err, sizeof(err))),
           "SUCCEEDED",
           "env: given nothing, the job runs");
    l = ty_buf_str(&cap.lines);
    like(l, "master-replica-0||got=//unset", "env: and nothing is set");
    ok(!strstr(l, "Admitted") && !strstr(l, "stand-ins"), "env: nor said");
    ty_buf_release(&cap.lines);
}

/* The process runtime, but prepare() never ends (an image pull, a Slurm queue). */
static struct ty_runtime_ops hang_ops;

static int hang_prepare(struct ty_runtime *rt, struct ty_error *err)
{
    int r = ty_runtime_process.prepare(rt, err);
    return r < 0 ? r : TY_RUNTIME_ASYNC;
}

static void test_wait_deadline(const char *tmp)
{
    _cleanup_(ty_job_freep) struct ty_job *job =
        job_of("{\"jobId\":\"w\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
               "\"masterType\":\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"i\","
               "\"containerCommand\":[\"sh\",\"-c\",\"sleep 0.6\"]},"
               "\"scheduling\":{\"maxWaitTime\":\"1800s\"}}}");
    _cleanup_(ty_job_freep) struct ty_job *study =
        job_of("{\"jobId\":\"ws\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
               "\"masterType\":\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"i\","
               "\"containerCommand\":[\"true\"]},\"scheduling\":{\"maxWaitTime\":\"1800s\"},"
               "\"hyperparameters\":{\"goal\":\"MAXIMIZE\",\"maxTrials\":2,\"maxParallelTrials\":2,"
               "\"params\":[{\"parameterName\":\"x\",\"type\":\"DOUBLE\",\"minValue\":0,"
               "\"maxValue\":1}]}}}");
    struct capture cap = {TY_BUF_INIT};
    struct ty_supervisor_options so = {.on_log = cap_log, .ctx = &cap};
    int64_t created = ty_now_usec() - 1800 * INT64_C(1000000) + 300000; /* 0.3 s left */
    char err[512], buf[256];
    int64_t t0;

    hang_ops = ty_runtime_process;
    hang_ops.name = "hang";
    hang_ops.prepare = hang_prepare;
    is_str(ty_run_wait_expired(job, buf, sizeof(buf)), WAIT_MSG, "wait: the message");
    is_int(ty_run_wait_deadline(job, 5), 5 + 1800 * INT64_C(1000000), "wait: the deadline");
    is_int(ty_run_wait_deadline(study, 5) > 0, 1, "wait: a study has one too");

    so.wait_deadline_usec = ty_run_wait_deadline(job, created);
    t0 = ty_mono_usec();
    is_str(ty_job_state_name(run(job, &hang_ops, &so, NULL, err, sizeof(err))),
           "CANCELLED",
           "wait: a run still PREPARING at its deadline is cancelled");
    is_str(err, WAIT_MSG, "wait: with the service's words");
    ok(ty_mono_usec() - t0 >= 250000, "wait: at the deadline, not before");
    like(ty_buf_str(&cap.lines), "service||" WAIT_MSG "\n", "wait: the log says why");
    ty_buf_release(&cap.lines);

    so.wait_deadline_usec = ty_now_usec() + 200000;
    is_str(ty_job_state_name(run(job, &ty_runtime_process, &so, NULL, err, sizeof(err))),
           "SUCCEEDED",
           "wait: a run RUNNING before its deadline goes on past it");
    ok(!strstr(ty_buf_str(&cap.lines), "maxWaitTime"), "wait: and nothing is said of it");
    ty_buf_release(&cap.lines);

    so.wait_deadline_usec = ty_now_usec() + 300000;
    is_str(ty_job_state_name(run(study, &hang_ops, &so, tmp, err, sizeof(err))),
           "CANCELLED",
           "wait: a study whose trials have not started is cancelled");
    is_str(err, WAIT_MSG, "wait: with the same words");
    like(ty_buf_str(&cap.lines), "Trial 1 CANCELLED", "wait: its trials are cancelled");
    ty_buf_release(&cap.lines);
}

/* A study of 3 trials, 3 at once by maxParallelTrials, given 2 slots of one T4 each (devices
 * 7 and 9): each trial records its device and how many run as it starts. */
static void test_study_slots(const char *tmp)
{
    _cleanup_free_ char *text = xasprintf(
        "{\"jobId\":\"slots\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
        "\"masterType\":\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"i\","
        "\"containerCommand\":[\"sh\",\"-c\",\"d=%s/busy; mkdir -p $d; touch "
        "$d/$CLOUD_ML_TRIAL_ID; echo gpu=$CUDA_VISIBLE_DEVICES at_once=$(ls $d | wc -l); "
        "sleep 0.3; rm $d/$CLOUD_ML_TRIAL_ID\"],"
        "\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}},"
        "\"hyperparameters\":{\"goal\":\"MAXIMIZE\",\"maxTrials\":3,\"maxParallelTrials\":3,"
        "\"params\":[{\"parameterName\":\"x\",\"type\":\"DOUBLE\",\"minValue\":0,"
        "\"maxValue\":1}]}}}",
        tmp);
    _cleanup_(ty_job_freep) struct ty_job *job = job_of(text);
    int gpus[] = {7, 9};
    struct ty_run_gpus rg = {.trials = 2, .gpus = gpus, .ngpus = 2};
    struct capture cap = {TY_BUF_INIT};
    struct ty_supervisor_options so = {.on_log = cap_log, .gpus = &rg, .ctx = &cap};
    char err[512];
    const char *l;
    int on7 = 0, on9 = 0, over = 0, trials = 0;

    (void)run(job, &ty_runtime_process, &so, tmp, err, sizeof(err));
    l = ty_buf_str(&cap.lines);
    for (const char *p = l; (p = strstr(p, "gpu=")); p++) {
        trials++;
        on7 += strncmp(p, "gpu=7 ", 6) == 0;
        on9 += strncmp(p, "gpu=9 ", 6) == 0;
        over += strncmp(strstr(p, "at_once="), "at_once=3", 9) == 0;
    }
    is_int(trials, 3, "slots: three trials ran");
    ok(on7 + on9 == 3 && on7 >= 1 && on9 >= 1, "slots: each on device 7 or 9, both used");
    is_int(over, 0, "slots: never three at once");
    like(l, "up to 3 trials, 2 at a time (as many as the job was given room for)", "slots: said");
    like(l, "|1|gpu=7 at_once=", "slots: trial 1 in slot 0");
    like(l, "|2|gpu=9 at_once=", "slots: trial 2 in slot 1, at the same time");
    ty_buf_release(&cap.lines);
}

int main(void)
{
    char tmp[] = "/tmp/ty-run-gpus-XXXXXX";
    _cleanup_free_ char *rm = NULL;

    if (!mkdtemp(tmp))
        BAIL_OUT("mkdtemp");
    test_mapping();
    test_process_env();
    test_wait_deadline(tmp);
    test_study_slots(tmp);
    rm = xasprintf("rm -rf '%s'", tmp);
    ok(system(rm) == 0, "scratch removed");
    return done_testing();
}
