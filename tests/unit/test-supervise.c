/* SPDX-License-Identifier: Apache-2.0
 * test-supervise.c: the run state machine driving real local processes (process runtime):
 * completion, failure wording, teardown with a grace period, cancel, deadlines, logs, a
 * study's start, one job run to its end. The asynchronous cleanup contract: test-supervise-
 * cleanup.c; the shared helpers: supervise-check.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "jobrun.h"
#include "macro.h"
#include "plan.h"
#include "restart.h"
#include "study.h"
#include "supervise-check.h"

static void jobrun_cancel_fire(struct ty_loop *loop, void *data)
{
    ty_jobrun_cancel(data);
}

/* run/jobrun.h: a plain job runs under one supervisor to its end, a cancel reaches it, and a
 * plain job has no study and no trainingOutput. */
static void test_jobrun(void)
{
    struct ty_loop *loop = ty_loop_new();
    struct capture cap = {0};
    struct ty_jobrun_options jo = {
        .runtime = &ty_runtime_process,
        .sup = {.grace_usec = 1000000, .on_log = cap_log},
        .on_state = cap_state,
        .ctx = &cap,
    };
    struct ty_job *job = make_job("jr_ok", "echo jobrun says hi", 0, NULL, NULL, NULL);
    struct ty_jobrun *jr = NULL;
    struct ty_error e = {0};

    ok(ty_jobrun_new(loop, job, &jo, &jr, &e) == 0 && jr, "jobrun: a plain job");
    is_int(ty_jobrun_run(jr, &e), 0, "jobrun: runs to its end");
    is_str(ty_job_state_name(ty_jobrun_state(jr)), "SUCCEEDED", "jobrun: SUCCEEDED");
    is_str(ty_jobrun_error(jr), "", "jobrun: no error");
    ok(ty_jobrun_study(jr) == NULL && ty_jobrun_training_output(jr) == NULL,
       "jobrun: a plain job has no study and no trainingOutput");
    like(ty_buf_str(&cap.lines), "master-replica-0|INFO|jobrun says hi", "jobrun: its output");
    ok(cap.n_states > 0 && cap.states[cap.n_states - 1] == TY_STATE_SUCCEEDED,
       "jobrun: on_state saw the final state");
    ty_jobrun_free(jr);
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));

    job = make_job("jr_cancel", "exec sleep 1000.555", 0, NULL, NULL, NULL);
    jr = NULL;
    ok(ty_jobrun_new(loop, job, &jo, &jr, &e) == 0, "jobrun: a job to cancel");
    ty_loop_add_timer(loop, ty_mono_usec() + 200000, jobrun_cancel_fire, jr);
    is_int(ty_jobrun_run(jr, &e), 0, "jobrun: a cancelled run still ends");
    is_str(ty_job_state_name(ty_jobrun_state(jr)), "CANCELLED", "jobrun: CANCELLED");
    is_int(count_procs_with("sleep 1000.555"), 0, "jobrun: nothing of it left");
    ty_jobrun_free(jr);
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));

    /* A cancel already waiting on the cancel fd when the run starts (trainyardd's SIGTERM to a
     * supervisor that had just claimed its job) is acted on before any replica is launched. */
    {
        char mark[] = "/tmp/ty-sup-precancel-XXXXXX";
        char script[128];
        int fds[2], mfd = mkstemp(mark);
        if (mfd >= 0)
            close(mfd), unlink(mark);
        snprintf(script, sizeof(script), ": > %s; exec sleep 1000.556", mark);
        job = make_job("jr_precancel", script, 0, NULL, NULL, NULL);
        jr = NULL;
        ok(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0 && write(fds[1], "c", 1) == 1,
           "jobrun: a cancel waits on the fd");
        ok(ty_jobrun_new(loop, job, &jo, &jr, &e) == 0 && ty_jobrun_cancel_on(jr, fds[0]) == 0,
           "jobrun: a job cancelled before it starts");
        is_int(ty_jobrun_run(jr, &e), 0, "jobrun: it ends");
        is_str(ty_job_state_name(ty_jobrun_state(jr)), "CANCELLED", "jobrun: CANCELLED");
        ok(strstr(ty_buf_str(&cap.lines), "Job cancellation requested.") &&
               !strstr(ty_buf_str(&cap.lines), "Waiting for training program to start."),
           "jobrun: no replica was launched");
        ok(access(mark, F_OK) < 0 && count_procs_with("sleep 1000.556") == 0,
           "jobrun: the program never ran");
        for (int i = 0; i < cap.n_states; i++)
            ok(cap.states[i] != TY_STATE_RUNNING, "jobrun: state %d is not RUNNING", i);
        (void)unlink(mark);
        close(fds[0]);
        close(fds[1]);
        ty_jobrun_free(jr);
        ty_job_free(job);
        ty_buf_release(&cap.lines);
    }
    ty_loop_free(loop);
}

/* How a job ends: the master succeeds, a worker fails, the master is killed, a program is
 * missing. */
static void test_ends(void)
{
    char err[2048];
    struct capture cap = {0};
    struct ty_job *job;
    enum ty_job_state st;
    int64_t t0;

    /* 1. master succeeds; a ps that never exits is torn down. */
    job = make_job(
        "ok_job", "echo hello from master; echo oops >&2", 0, NULL, "exec sleep 1000.111", NULL);
    ok(job != NULL, "job with a never-ending ps parses");
    t0 = ty_mono_usec();
    st = run(job, &cap, 5, 0, err, sizeof(err));
    is_str(ty_job_state_name(st), "SUCCEEDED", "master exit 0 => SUCCEEDED");
    ok(ty_mono_usec() - t0 < 4 * 1000000, "ps stopped by SIGTERM well within the grace period");
    like(ty_buf_str(&cap.lines), "master-replica-0|INFO|hello from master", "stdout line is INFO");
    like(ty_buf_str(&cap.lines), "master-replica-0|ERROR|oops", "stderr line is ERROR");
    like(ty_buf_str(&cap.lines), "service|INFO|Job completed successfully.", "service result");
    is_int(count_procs_with("sleep 1000.111"), 0, "no ps process left");
    is_int(cap.states[0], TY_STATE_PREPARING, "first state PREPARING");
    is_int(cap.states[1], TY_STATE_RUNNING, "then RUNNING");
    is_int(cap.states[cap.n_states - 1], TY_STATE_SUCCEEDED, "last SUCCEEDED");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));

    /* 2. worker 1 exits 3: the job fails with the service's wording. */
    job = make_job("fail_job",
                   "exec sleep 1000.222",
                   2,
                   "if [ $(echo $CLUSTER_SPEC | grep -o '\\\"index\\\":1') ]; then exit 3; fi; "
                   "exec sleep 1000.222",
                   NULL,
                   NULL);
    st = run(job, &cap, 5, 0, err, sizeof(err));
    is_str(ty_job_state_name(st), "FAILED", "worker exit 3 => FAILED");
    is_str(err, "The replica worker 1 exited with a non-zero status of 3.", "failure wording");
    is_int(count_procs_with("sleep 1000.222"), 0, "master and worker 0 stopped");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));

    /* 3. master killed by a signal. */
    job = make_job("sig_job", "kill -9 $$", 0, NULL, NULL, NULL);
    st = run(job, &cap, 5, 0, err, sizeof(err));
    is_str(ty_job_state_name(st), "FAILED", "master killed => FAILED");
    is_str(err, "The replica master 0 was terminated by signal 9 (SIGKILL).", "signal wording");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));

    /* 4. a program that does not exist. */
    job = make_job("nocmd_job", "true", 1, "x", NULL, NULL);
    if (job) {
        free(job->roles[TY_ROLE_WORKER].container_command[0]);
        job->roles[TY_ROLE_WORKER].container_command[0] = xstrdup("/nonexistent/trainer");
    }
    st = run(job, &cap, 5, 0, err, sizeof(err));
    is_str(ty_job_state_name(st), "FAILED", "missing program => FAILED");
    like(err,
         "The replica worker 0 could not be started: cannot run '/nonexistent/trainer'",
         "start failure names replica and program");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));
}

/* Cancel with a replica ignoring SIGTERM, and an orphan that left the process group. */
static void test_cancel_orphans(void)
{
    char err[2048];
    struct capture cap = {0};
    struct ty_job *job;
    enum ty_job_state st;
    int64_t t0;

    /* 5. cancel; a replica ignoring SIGTERM is killed after the grace period. */
    job = make_job("cancel_job", "trap '' TERM; sleep 1000.333 & wait; wait", 0, NULL, NULL, NULL);
    t0 = ty_mono_usec();
    st = run(job, &cap, 0.5, 0.3, err, sizeof(err));
    is_str(ty_job_state_name(st), "CANCELLED", "cancel => CANCELLED");
    ok(ty_mono_usec() - t0 >= 700000, "SIGTERM ignored: waited for the grace period");
    like(ty_buf_str(&cap.lines),
         "service|WARNING|1 replica(s) still running after the grace",
         "grace expiry is logged");
    is_int(count_procs_with("sleep 1000.333"), 0, "no process of the job survives a cancel");
    ok(cap.n_states >= 2 && cap.states[cap.n_states - 2] == TY_STATE_CANCELLING,
       "CANCELLING before CANCELLED");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));

    /* 6. an orphan that left the process group (setsid) is found and killed. */
    job = make_job("orphan_job", "setsid sleep 1000.444 & sleep 0.2; exit 0", 0, NULL, NULL, NULL);
    st = run(job, &cap, 2, 0, err, sizeof(err));
    is_str(ty_job_state_name(st), "SUCCEEDED", "orphan job succeeds");
    is_int(count_procs_with("sleep 1000.444"), 0, "setsid'd grandchild is gone too");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));
}

/* scheduling.maxRunningTime, from the start and for a run taking over a running job. */
static void test_deadlines(void)
{
    char err[2048];
    struct capture cap = {0};
    struct ty_job *job;
    enum ty_job_state st;
    int64_t t0;

    /* 7. scheduling.maxRunningTime. */
    job = make_job("deadline_job",
                   "exec sleep 1000.555",
                   0,
                   NULL,
                   NULL,
                   "{\"scheduling\":{\"maxRunningTime\":\"0.5s\"}}");
    st = run(job, &cap, 2, 0, err, sizeof(err));
    is_str(ty_job_state_name(st), "FAILED", "deadline => FAILED");
    like(err, "maximum running time (scheduling.maxRunningTime 0.5s)", "deadline wording");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));

    /* 7b. a run taking over a job that has been RUNNING for an hour (the service after an
     * internal error): a 600 s maxRunningTime has run out, the run fails at once. */
    job = make_job("late_job",
                   "exec sleep 1000.556",
                   0,
                   NULL,
                   NULL,
                   "{\"scheduling\":{\"maxRunningTime\":\"600s\"}}");
    g_running_since = ty_now_usec() - 3600 * INT64_C(1000000);
    t0 = ty_mono_usec();
    st = run(job, &cap, 2, 0, err, sizeof(err));
    g_running_since = 0;
    is_str(ty_job_state_name(st), "FAILED", "time already used up => FAILED");
    like(err, "maximum running time (scheduling.maxRunningTime 600s)", "deadline wording");
    ok(ty_mono_usec() - t0 < 20 * INT64_C(1000000), "at once, not after 600 s");
    ty_job_free(job);
    ty_buf_release(&cap.lines);
}

/* A cancel while the job is tearing down. */
static void test_teardown_cancel(void)
{
    struct capture cap = {0};
    struct ty_job *job;
    int64_t t0;

    /* 8. a master that ends before its peers have all been seen starting still passes
     * through RUNNING; a cancel during the teardown skips the grace period. */
    job = make_job("teardown_job", "exit 0", 0, NULL, "trap '' TERM; exec sleep 1000.666", NULL);
    {
        struct ty_loop *loop = ty_loop_new();
        struct ty_supervisor *sup = NULL;
        struct ty_supervisor_options opts = {.grace_usec = 30 * INT64_C(1000000),
                                             .on_log = cap_log,
                                             .on_state = cap_state,
                                             .ctx = &cap};
        struct ty_error e = {0};
        bool saw_running = false;
        ok(ty_supervisor_new(loop, &ty_runtime_process, job, NULL, NULL, &opts, &sup, &e) == 0 &&
               ty_supervisor_start(sup, &e) == 0,
           "teardown job starts");
        t0 = ty_mono_usec();
        while (!ty_supervisor_done(sup) && ty_mono_usec() - t0 < 20 * INT64_C(1000000)) {
            ty_loop_add_timer(loop, ty_mono_usec() + 20000, tick, NULL);
            ty_loop_run_once(loop);
            if (strstr(ty_buf_str(&cap.lines), "Tearing down"))
                ty_supervisor_cancel(sup);
        }
        for (int i = 0; i < cap.n_states; i++)
            saw_running |= cap.states[i] == TY_STATE_RUNNING;
        ok(saw_running, "the job passed through RUNNING");
        is_str(ty_job_state_name(ty_supervisor_state(sup)),
               "SUCCEEDED",
               "cancel during teardown keeps the result");
        ok(ty_mono_usec() - t0 < 10 * INT64_C(1000000), "and does not wait out the 30 s grace");
        like(ty_buf_str(&cap.lines), "Cancel requested during teardown", "which is logged");
        is_int(count_procs_with("sleep 1000.666"), 0, "the TERM-ignoring ps is gone");
        ty_supervisor_free(sup);
        ty_loop_free(loop);
    }
    ty_job_free(job);
    ty_buf_release(&cap.lines);
    memset(&cap, 0, sizeof(cap));
}

/* The exit descriptions and the start and end records of a run. */
static void test_messages(void)
{
    struct capture cap = {0};

    /* 9. exit descriptions. */
    {
        struct ty_replica r = {.role = TY_ROLE_WORKER, .index = 1};
        struct ty_exit_status s = {.kind = TY_EXIT_OOM, .code = 137};
        char buf[256];
        snprintf(r.display_name, sizeof(r.display_name), "worker 1");
        ty_describe_exit(&r, &s, buf, sizeof(buf));
        is_str(buf,
               "The replica worker 1 ran out of memory and exited with a non-zero status of 137.",
               "OOM wording");
        s = (struct ty_exit_status){.kind = TY_EXIT_SIGNAL, .code = SIGTERM};
        ty_describe_exit(&r, &s, buf, sizeof(buf));
        is_str(
            buf, "The replica worker 1 was terminated by signal 15 (SIGTERM).", "SIGTERM wording");
    }

    /* 10. the records shared by the supervisor and the study. */
    {
        struct ty_supervisor_options o = {.on_log = cap_log};
        ty_run_announce(&o, &cap, NULL, 0, "shared_1");
        ty_run_announce_result(&o, &cap, "3", 0, TY_STATE_FAILED, "boom");
        ty_run_announce_result(&o, &cap, NULL, 0, TY_STATE_CANCELLED, NULL);
        is_str(ty_buf_str(&cap.lines),
               "service|INFO|Validating job requirements...\n"
               "service|INFO|Job creation request has been successfully validated.\n"
               "service|INFO|Job shared_1 is queued.\n"
               "service|ERROR|Job failed: boom\n"
               "service|INFO|Job cancelled.\n",
               "the start and end messages of a run");
        ty_buf_release(&cap.lines);
        memset(&cap, 0, sizeof(cap));
    }
}

/* ty_study_start's errors. */
static void test_study_start(void)
{
    struct capture cap = {0};

    /* 11. ty_study_start reports its failures through its error argument. */
    {
        char file[] = "/tmp/test-supervise.XXXXXX";
        int fd = mkstemp(file);
        _cleanup_free_ char *state_dir = xasprintf("%s/state", file);
        struct ty_job *tj = make_job("study_1",
                                     "exit 0",
                                     0,
                                     NULL,
                                     NULL,
                                     "{\"hyperparameters\":{\"goal\":\"MAXIMIZE\",\"maxTrials\":1,"
                                     "\"params\":[{\"parameterName\":\"x\",\"type\":\"DOUBLE\","
                                     "\"minValue\":0,\"maxValue\":1}]}}");
        struct ty_study_options so = {.runtime = &ty_runtime_process,
                                      .state_dir = state_dir,
                                      .sup = {.on_log = cap_log},
                                      .ctx = &cap};
        struct ty_loop *loop = ty_loop_new();
        struct ty_study *study = NULL;
        struct ty_error e = {0};
        int r;

        close(fd);
        ok(tj && ty_study_new(loop, tj, &so, &study, &e) == 0, "study: created (%s)", e.msg);
        r = study ? ty_study_start(study, &e) : 0;
        is_int(r, -ENOTDIR, "study: a state directory under a file fails the start");
        like(e.msg, "trials", "and the error says what could not be made");
        is_str(ty_job_state_name(study ? ty_study_state(study) : TY_STATE_UNSPECIFIED),
               "QUEUED",
               "the job has not started");
        ty_study_free(study);
        study = NULL;
        unlink(file);
        so.state_dir = file; /* now free: mkdir works */
        memset(&e, 0, sizeof(e));
        ok(tj && ty_study_new(loop, tj, &so, &study, &e) == 0, "study: created again");
        is_int(study ? ty_study_start(study, &e) : -1,
               0,
               "study: starts with a usable state directory");
        is_int(
            study ? ty_study_start(study, &e) : 0, -EALREADY, "study: a second start is refused");
        like(e.msg, "already started", "with a message");
        ty_study_free(study);
        ty_loop_free(loop);
        ty_job_free(tj);
        {
            _cleanup_free_ char *rm = xasprintf("rm -rf '%s'", file);
            ok(system(rm) == 0, "study: state directory removed");
        }
        ty_buf_release(&cap.lines);
    }
}

int main(void)
{
    test_ends();
    test_cancel_orphans();
    test_deadlines();
    test_teardown_cancel();
    test_messages();
    test_study_start();
    test_jobrun();
    return done_testing();
}
