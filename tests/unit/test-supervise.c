/* SPDX-License-Identifier: Apache-2.0
 * test-supervise.c: the run state machine driving real local processes (process runtime):
 * completion, failure wording, teardown with a grace period, cancel, deadlines, logs; and the
 * asynchronous cleanup contract (runtime.h): a run ends only once its runtime is clean, and
 * the loop's other events flow while it cleans up. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "jobrun.h"
#include "json.h"
#include "macro.h"
#include "plan.h"
#include "process.h"
#include "restart.h"
#include "runtime.h"
#include "spec.h"
#include "study.h"
#include "supervise.h"
#include "tap.h"
#include "timeutil.h"

struct capture {
    struct ty_buf lines; /* "task|SEVERITY|message\n" */
    int states[16];
    int n_states;
};

static void cap_log(void *ctx, const struct ty_log_record *rec)
{
    struct capture *c = ctx;
    ty_buf_printf(&c->lines,
                  "%s|%s|%.*s\n",
                  rec->task,
                  ty_severity_name(rec->severity),
                  (int)rec->len,
                  rec->message);
}

static void cap_state(void *ctx, enum ty_job_state s)
{
    struct capture *c = ctx;
    if (c->n_states < 16)
        c->states[c->n_states++] = (int)s;
}

static json_t *role_config(const char *script)
{
    return json_pack("{s:s,s:[s,s,s]}", "imageUri", "img", "containerCommand", "sh", "-c", script);
}

/* Build a job: the master runs `sh -c MASTER_SH`; @workers workers run WORKER_SH; one ps runs
 * PS_SH when non-NULL; @extra (JSON object text or NULL) is merged into the TrainingInput. */
static struct ty_job *make_job(const char *id,
                               const char *master_sh,
                               int workers,
                               const char *worker_sh,
                               const char *ps_sh,
                               const char *extra)
{
    json_t *ti = json_pack("{s:s,s:s,s:o}",
                           "scaleTier",
                           "CUSTOM",
                           "masterType",
                           "n1-standard-4",
                           "masterConfig",
                           role_config(master_sh));
    json_t *doc = json_pack("{s:s,s:o}", "jobId", id, "trainingInput", ti);
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    if (workers) {
        json_object_set_new(ti, "workerType", json_string("n1-standard-4"));
        json_object_set_new(ti, "workerCount", json_integer(workers));
        json_object_set_new(ti, "workerConfig", role_config(worker_sh));
    }
    if (ps_sh) {
        json_object_set_new(ti, "parameterServerType", json_string("n1-standard-4"));
        json_object_set_new(ti, "parameterServerCount", json_integer(1));
        json_object_set_new(ti, "parameterServerConfig", role_config(ps_sh));
    }
    if (extra) {
        json_t *e = json_loads(extra, 0, NULL);
        json_object_update(ti, e);
        json_decref(e);
    }
    if (ty_job_from_json(doc, &job, &err) < 0)
        diag("make_job: %s", err.msg);
    json_decref(doc);
    return job;
}

static void tick(struct ty_loop *loop, void *data)
{
}

/* running_since_usec of the runs of run() (0: a job that never ran before). */
static int64_t g_running_since;

static enum ty_job_state run(struct ty_job *job,
                             struct capture *cap,
                             double grace,
                             double cancel_after,
                             char *errbuf,
                             size_t n)
{
    struct ty_loop *loop = ty_loop_new();
    struct ty_supervisor *sup = NULL;
    struct ty_supervisor_options opts = {
        .grace_usec = (int64_t)(grace * 1e6),
        .on_log = cap_log,
        .on_state = cap_state,
        .running_since_usec = g_running_since,
        .ctx = cap,
    };
    struct ty_error err = {0};
    enum ty_job_state st;
    int64_t t0 = ty_mono_usec();
    bool cancelled = false;

    if (ty_supervisor_new(loop, &ty_runtime_process, job, NULL, NULL, &opts, &sup, &err) < 0 ||
        ty_supervisor_start(sup, &err) < 0) {
        diag("supervisor: %s", err.msg);
        ty_supervisor_free(sup);
        ty_loop_free(loop);
        return TY_STATE_UNSPECIFIED;
    }
    while (!ty_supervisor_done(sup)) {
        if (cancel_after > 0 && !cancelled && ty_mono_usec() - t0 > (int64_t)(cancel_after * 1e6)) {
            ty_supervisor_cancel(sup);
            cancelled = true;
        }
        if (ty_mono_usec() - t0 > 60 * INT64_C(1000000)) {
            diag("run: timed out");
            break;
        }
        /* A short timer keeps the loop turning so the cancel check above runs. */
        ty_loop_add_timer(loop, ty_mono_usec() + 20000, tick, NULL);
        ty_loop_run_once(loop);
    }
    st = ty_supervisor_state(sup);
    snprintf(errbuf, n, "%s", ty_supervisor_error(sup));
    ty_supervisor_free(sup);
    ty_loop_free(loop);
    return st;
}

/* ---- a runtime whose cleanup takes its time: the process runtime, but cleanup() goes on
 * on the loop for SLOW_CLEANUP_USEC before it does the process runtime's and says `cleaned`. */

#define SLOW_CLEANUP_USEC (400 * INT64_C(1000))

static struct {
    uint64_t timer;        /* the cleanup under way */
    bool cleaned_sent;     /* `cleaned` was reported */
    int calls;             /* cleanup() calls */
    int destroyed_pending; /* destroy() found the cleanup still under way */
} slow;

static void slow_fire(struct ty_loop *loop, void *data)
{
    struct ty_runtime *rt = data;
    slow.timer = 0;
    /* Nothing of these runs is left, so the process runtime is clean at once. */
    if (ty_runtime_process.cleanup(rt) == 0) {
        slow.cleaned_sent = true;
        ty_runtime_cleaned(rt);
    }
}

static int slow_cleanup(struct ty_runtime *rt)
{
    slow.calls++;
    if (slow.cleaned_sent)
        return 0;
    if (!slow.timer)
        slow.timer = ty_loop_add_timer(rt->loop, ty_mono_usec() + SLOW_CLEANUP_USEC, slow_fire, rt);
    return TY_RUNTIME_ASYNC;
}

static void slow_destroy(struct ty_runtime *rt)
{
    if (slow.timer) {
        slow.destroyed_pending++;
        ty_loop_cancel_timer(rt->loop, slow.timer);
        slow.timer = 0;
    }
    ty_runtime_process.destroy(rt); /* finishes the process runtime's cleanup */
}

static struct ty_runtime_ops slow_ops;

static void slow_reset(void)
{
    memset(&slow, 0, sizeof(slow));
    slow_ops = ty_runtime_process;
    slow_ops.name = "slow";
    slow_ops.cleanup = slow_cleanup;
    slow_ops.destroy = slow_destroy;
}

/* A run's final state arrived: was the runtime clean by then? */
struct final_probe {
    struct capture cap;
    bool final_seen;
    bool final_after_cleaned;
    const char *marker; /* a process of the run that must be gone by then, or NULL */
    int left_at_final;
};

static int count_procs_with(const char *marker);

static void probe_state(void *ctx, enum ty_job_state s)
{
    struct final_probe *fp = ctx;
    cap_state(&fp->cap, s);
    if (!ty_job_state_is_final(s))
        return;
    fp->final_seen = true;
    fp->final_after_cleaned = slow.cleaned_sent;
    if (fp->marker)
        fp->left_at_final = count_procs_with(fp->marker);
}

static void probe_log(void *ctx, const struct ty_log_record *rec)
{
    struct final_probe *fp = ctx;
    cap_log(&fp->cap, rec);
}

/* Count the lines of @text holding @needle. */
static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Turn @loop once, with a short timer so that the caller's checks run often. */
static void turn(struct ty_loop *loop)
{
    ty_loop_add_timer(loop, ty_mono_usec() + 20000, tick, NULL);
    ty_loop_run_once(loop);
}

/* Runtime events for driving the process runtime directly. */
struct direct {
    int exited, cleaned;
};

static void d_started(void *ctx, struct ty_replica *r)
{
}

static void
d_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
}

static void d_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
    ((struct direct *)ctx)->exited++;
}

static void d_cleaned(void *ctx)
{
    ((struct direct *)ctx)->cleaned++;
}

static int count_procs_with(const char *marker)
{
    char cmd[256];
    FILE *f;
    int n = 0;
    snprintf(cmd, sizeof(cmd), "ps -eo args= | grep -F -- '%s' | grep -vc grep", marker);
    f = popen(cmd, "r");
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

/* 12. A run whose cleanup takes time (the slow runtime): the run is not done, and keeps
 * its last state, until the runtime says `cleaned`; another run on the same loop goes on
 * meanwhile (its output arrives); cancels during the cleanup change nothing. */
static void test_slow_cleanup(void)
{
    int64_t t0;

    slow_reset();
    struct ty_loop *loop = ty_loop_new();
    struct final_probe a = {0}, b = {0};
    struct ty_supervisor_options ao = {.on_log = probe_log, .on_state = probe_state, .ctx = &a};
    struct ty_supervisor_options bo = {.on_log = probe_log, .on_state = probe_state, .ctx = &b};
    struct ty_job *ja = make_job("slow_a", "exit 0", 0, NULL, NULL, NULL);
    struct ty_job *jb = make_job("busy_b",
                                 "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.02; done",
                                 0,
                                 NULL,
                                 NULL,
                                 NULL);
    struct ty_supervisor *sa = NULL, *sb = NULL;
    struct ty_error e = {0};
    enum ty_job_state during = TY_STATE_UNSPECIFIED;
    int ticks_before = -1, ticks_after;
    bool done_during = true;

    ok(ty_supervisor_new(loop, &ty_runtime_process, jb, NULL, NULL, &bo, &sb, &e) == 0 &&
           ty_supervisor_start(sb, &e) == 0,
       "cleanup: the busy run starts");
    /* Let it print a first line before the slow run starts. */
    t0 = ty_mono_usec();
    while (!strstr(ty_buf_str(&b.cap.lines), "tick 0") &&
           ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(ty_supervisor_new(loop, &slow_ops, ja, NULL, NULL, &ao, &sa, &e) == 0 &&
           ty_supervisor_start(sa, &e) == 0,
       "cleanup: the slow run starts");
    t0 = ty_mono_usec();
    while (!slow.timer && !ty_supervisor_done(sa) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(slow.timer != 0, "cleanup: the slow run's master ended and its cleanup goes on");
    if (slow.timer) {
        done_during = ty_supervisor_done(sa);
        during = ty_supervisor_state(sa);
        ticks_before = count_lines_with(ty_buf_str(&b.cap.lines), "|tick ");
        ty_supervisor_cancel(sa);
        ty_supervisor_cancel(sa);
        is_int(slow.calls, 1, "cleanup: the cancels did not clean up again");
    }
    ok(!done_during, "cleanup: not done while the runtime cleans up");
    ok(!ty_job_state_is_final(during),
       "cleanup: no final state while it cleans up (%s)",
       ty_job_state_name(during));
    ok(!a.final_seen, "cleanup: nor was one reported");
    t0 = ty_mono_usec();
    while (!ty_supervisor_done(sa) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ticks_after = count_lines_with(ty_buf_str(&b.cap.lines), "|tick ");
    ok(ty_supervisor_done(sa), "cleanup: done once cleaned");
    ok(a.final_seen && a.final_after_cleaned, "cleanup: the final state came after `cleaned`");
    is_str(ty_job_state_name(ty_supervisor_state(sa)), "SUCCEEDED", "cleanup: the result stands");
    ok(ty_mono_usec() - t0 >= SLOW_CLEANUP_USEC / 2, "cleanup: it did take its time");
    ok(ticks_after > ticks_before + 3,
       "cleanup: the other run's output flowed meanwhile (%d -> %d lines)",
       ticks_before,
       ticks_after);
    like(ty_buf_str(&a.cap.lines),
         "Cancel requested while the run is being cleaned up",
         "cleanup: a cancel during it is logged");
    like(ty_buf_str(&a.cap.lines),
         "Finished tearing down training program.\nservice|INFO|Job completed successfully.",
         "cleanup: then the end messages");
    ty_supervisor_cancel(sa); /* done: a no-op */
    ty_supervisor_cancel(sb);
    t0 = ty_mono_usec();
    while (!ty_supervisor_done(sb) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    is_str(
        ty_job_state_name(ty_supervisor_state(sb)), "CANCELLED", "cleanup: the busy run cancels");
    ty_supervisor_free(sa);
    ty_supervisor_free(sb);
    ty_loop_free(loop);
    ty_job_free(ja);
    ty_job_free(jb);
    ty_buf_release(&a.cap.lines);
    ty_buf_release(&b.cap.lines);
}

/* 13. Freeing a run whose cleanup goes on: destroy finishes it, nothing fires later. */
static void test_free_during_cleanup(void)
{
    int64_t t0;

    slow_reset();
    struct ty_loop *loop = ty_loop_new();
    struct final_probe a = {0};
    struct ty_supervisor_options ao = {.on_log = probe_log, .on_state = probe_state, .ctx = &a};
    struct ty_job *ja = make_job("slow_free", "exit 0", 0, NULL, NULL, NULL);
    struct ty_supervisor *sa = NULL;
    struct ty_error e = {0};

    ok(ty_supervisor_new(loop, &slow_ops, ja, NULL, NULL, &ao, &sa, &e) == 0 &&
           ty_supervisor_start(sa, &e) == 0,
       "free during cleanup: the run starts");
    t0 = ty_mono_usec();
    while (!slow.timer && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(slow.timer != 0 && !ty_supervisor_done(sa), "free during cleanup: cleaning up");
    ty_supervisor_free(sa);
    is_int(slow.destroyed_pending, 1, "free during cleanup: destroy took the cleanup over");
    t0 = ty_mono_usec();
    while (ty_mono_usec() - t0 < SLOW_CLEANUP_USEC + 100000)
        turn(loop);
    ok(!slow.cleaned_sent && !a.final_seen, "free during cleanup: no event after the free");
    ty_loop_free(loop);
    ty_job_free(ja);
    ty_buf_release(&a.cap.lines);
}

/* 14. The process runtime itself: an orphan that left the group makes its cleanup go on
 * on the loop; `cleaned` follows once; a call meanwhile says it goes on, one after says
 * it is done; the final state of a supervised run comes with nothing of it left. */
static void test_process_cleanup(void)
{
    int64_t t0;

    struct ty_loop *loop = ty_loop_new();
    struct direct d = {0};
    struct ty_runtime_events ev = {.started = d_started,
                                   .output = d_output,
                                   .exited = d_exited,
                                   .cleaned = d_cleaned,
                                   .ctx = &d};
    struct ty_job *jd =
        make_job("orphan_direct", "setsid sleep 1000.777 & sleep 0.2; exit 0", 0, NULL, NULL, NULL);
    struct ty_cluster_plan *plan = NULL;
    struct ty_runtime *rt = NULL;
    struct ty_error e = {0};
    char *env[] = {NULL};
    int r1 = -1, r2 = -1, r3 = -1;

    ok(jd && ty_plan_build(jd, NULL, NULL, &plan, &e) == 0 &&
           ty_runtime_new(&ty_runtime_process, loop, &ev, &rt, &e) == 0,
       "process cleanup: runtime created (%s)",
       e.msg);
    if (rt) {
        ty_runtime_attach(rt, plan);
        ok(rt->ops->prepare(rt, &e) == 0 && rt->ops->place(rt, &e) == 0 &&
               rt->ops->launch(rt, &plan->replicas[0], env, &e) == 0,
           "process cleanup: launched (%s)",
           e.msg);
        t0 = ty_mono_usec();
        while (!d.exited && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
            turn(loop);
        is_int(count_procs_with("sleep 1000.777"), 1, "process cleanup: the orphan runs");
        /* Either outcome of the contract: the orphan may be gone at once (its cgroup killed
         * in the first round: 0, no `cleaned`), or the cleanup goes on on the loop (ASYNC,
         * then one `cleaned`). */
        r1 = rt->ops->cleanup(rt);
        r2 = rt->ops->cleanup(rt);
        ok(r1 == TY_RUNTIME_ASYNC || r1 == 0, "process cleanup: done at once or goes on (%d)", r1);
        is_int(r2, r1, "process cleanup: a second call says the same");
        is_int(d.cleaned, 0, "process cleanup: `cleaned` not from within cleanup()");
        t0 = ty_mono_usec();
        while (r1 == TY_RUNTIME_ASYNC && !d.cleaned && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
            turn(loop);
        is_int(
            d.cleaned, r1 == TY_RUNTIME_ASYNC ? 1 : 0, "process cleanup: `cleaned` once if async");
        is_int(count_procs_with("sleep 1000.777"), 0, "process cleanup: the orphan is gone");
        r3 = rt->ops->cleanup(rt);
        is_int(r3, 0, "process cleanup: a call after it ended returns 0");
        ty_runtime_free(rt);
        is_int(d.cleaned,
               r1 == TY_RUNTIME_ASYNC ? 1 : 0,
               "process cleanup: destroy reports nothing more");
    }
    ty_plan_free(plan);
    ty_job_free(jd);
    ty_loop_free(loop);
}

static void test_final_after_orphans(void)
{
    int64_t t0;

    slow_reset();
    struct ty_loop *loop = ty_loop_new();
    struct final_probe a = {.marker = "sleep 1000.888"};
    struct ty_supervisor_options ao = {.on_log = probe_log, .on_state = probe_state, .ctx = &a};
    struct ty_job *ja =
        make_job("orphan_final", "setsid sleep 1000.888 & sleep 0.2; exit 0", 0, NULL, NULL, NULL);
    struct ty_supervisor *sa = NULL;
    struct ty_error e = {0};

    ok(ty_supervisor_new(loop, &ty_runtime_process, ja, NULL, NULL, &ao, &sa, &e) == 0 &&
           ty_supervisor_start(sa, &e) == 0,
       "orphan run: starts");
    t0 = ty_mono_usec();
    while (!ty_supervisor_done(sa) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(a.final_seen, "orphan run: ended");
    is_int(a.left_at_final, 0, "orphan run: nothing of it left when its final state came");
    ty_supervisor_free(sa);
    ty_loop_free(loop);
    ty_job_free(ja);
    ty_buf_release(&a.cap.lines);
}

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
    test_slow_cleanup();
    test_free_during_cleanup();
    test_process_cleanup();
    test_final_after_orphans();
    test_jobrun();
    return done_testing();
}
