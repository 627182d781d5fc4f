/* SPDX-License-Identifier: Apache-2.0
 * supervise.c: the run state machine (see supervise.h for the rules): attempts, restarts in
 * place, teardown and the final state. What an end means is restart.c's. */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "restart.h"
#include "runtime.h"
#include "schema.h"
#include "strv.h"
#include "supervise-int.h"
#include "timeutil.h"

static const char *trial_of(const struct ty_supervisor *sup)
{
    return sup->plan ? sup->plan->trial_id : NULL;
}

static void
emit(struct ty_supervisor *sup, enum ty_severity sev, const char *task, const char *msg, size_t len)
{
    ty_run_log(&sup->opts, sup->opts.ctx, sev, task, trial_of(sup), sup->attempt, msg, len);
}

static void service(struct ty_supervisor *sup, enum ty_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void service(struct ty_supervisor *sup, enum ty_severity sev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ty_run_vservice(&sup->opts, sup->opts.ctx, trial_of(sup), sup->attempt, sev, fmt, ap);
    va_end(ap);
}

static void set_state(struct ty_supervisor *sup, enum ty_job_state s)
{
    if (sup->state == s)
        return;
    sup->state = s;
    if (sup->opts.on_state)
        sup->opts.on_state(sup->opts.ctx, s);
}

static void progress(struct ty_supervisor *sup)
{
    if (sup->opts.on_progress)
        sup->opts.on_progress(sup->opts.ctx);
}

static void replica_changed(struct ty_supervisor *sup)
{
    if (sup->opts.on_replica)
        sup->opts.on_replica(sup->opts.ctx);
}

static void signal_all(struct ty_supervisor *sup, int sig)
{
    for (size_t i = 0; i < sup->plan->n_replicas; i++) {
        if (!sup->reps[i].launched || sup->reps[i].exited)
            continue;
        (void)sup->rt->ops->signal(sup->rt, &sup->plan->replicas[i], sig, NULL);
    }
}

static void finish(struct ty_supervisor *sup);

static void kill_now(struct ty_supervisor *sup)
{
    if (sup->killed)
        return;
    sup->killed = true;
    ty_loop_cancel_timer(sup->loop, sup->grace_timer);
    sup->grace_timer = 0;
    signal_all(sup, SIGKILL);
}

static void on_grace(struct ty_loop *loop, void *data)
{
    struct ty_supervisor *sup = data;
    sup->grace_timer = 0;
    if (sup->running > 0)
        service(sup,
                TY_SEV_WARNING,
                "%zu replica(s) still running after the grace period; sending SIGKILL.",
                sup->running);
    kill_now(sup);
}

/* Stop every replica still running (SIGTERM, the grace period, SIGKILL); finish() follows
 * once none is. Every end from now on is trainyard's own: never counted, never restarted. */
static void teardown(struct ty_supervisor *sup)
{
    sup->stopping = true;
    ty_loop_cancel_timer(sup->loop, sup->restart_timer);
    sup->restart_timer = 0;
    ty_loop_cancel_timer(sup->loop, sup->launch_timer); /* replicas not launched yet stay so */
    sup->launch_timer = 0;
    for (size_t i = 0; i < sup->plan->n_replicas; i++)
        sup->reps[i].restart_pending = false;
    if (sup->running == 0) {
        finish(sup);
        return;
    }
    service(sup, TY_SEV_INFO, "Tearing down training program.");
    signal_all(sup, SIGTERM);
    sup->grace_timer =
        ty_loop_add_timer(sup->loop, ty_mono_usec() + sup->opts.grace_usec, on_grace, sup);
}

/* Decide the outcome and stop everything still running. */
static void stop(struct ty_supervisor *sup, enum ty_job_state outcome, const char *error)
{
    if (sup->stopping && !sup->retrying)
        return;
    /* A replica can end the run (the master exiting 0, say) before every other replica's
     * start has been seen; the training program did run, so the job passes through RUNNING
     * (and gets its startTime) on the way to its result. */
    if (sup->state == TY_STATE_PREPARING && sup->started > 0 && outcome != TY_STATE_CANCELLED)
        set_state(sup, TY_STATE_RUNNING);
    sup->retrying = false;
    sup->outcome = outcome;
    if (error)
        (void)snprintf(sup->error, sizeof(sup->error), "%s", error);
    ty_loop_cancel_timer(sup->loop, sup->deadline_timer);
    sup->deadline_timer = 0;
    if (sup->opts.on_outcome)
        sup->opts.on_outcome(
            sup->opts.ctx, outcome, outcome == TY_STATE_SUCCEEDED ? "" : sup->error);
    if (sup->stopping) {
        /* A retry's teardown (or its cleanup) was under way: it now ends the run. */
        if (sup->attempt_timer) {
            ty_loop_cancel_timer(sup->loop, sup->attempt_timer);
            sup->attempt_timer = 0;
            finish(sup);
        }
        return;
    }
    teardown(sup);
}

/* A new attempt: the job starts again on a new runtime. */
static void begin_attempt(struct ty_supervisor *sup);

/* The run is over. Logs the result, marks the run done and only then sets the final state,
 * so that an on_state callback for a final state never sees anything of the run alive. */
static void finished(struct ty_supervisor *sup)
{
    service(sup, TY_SEV_INFO, "Finished tearing down training program.");
    sup->done = true;
    if (sup->outcome == TY_STATE_SUCCEEDED && sup->stopped_early)
        service(sup, TY_SEV_INFO, "Trial stopped early.");
    else
        ty_run_announce_result(
            &sup->opts, sup->opts.ctx, trial_of(sup), sup->attempt, sup->outcome, sup->error);
    set_state(sup, sup->outcome);
}

static void on_attempt_timer(struct ty_loop *loop, void *data)
{
    struct ty_supervisor *sup = data;
    sup->attempt_timer = 0;
    begin_attempt(sup);
}

/* The runtime is clean: the run ends, or (a retry) the next attempt begins, from the loop
 * (never inside the runtime's callback: the runtime is replaced). */
static void cleaned(struct ty_supervisor *sup)
{
    sup->cleaning = false;
    if (!sup->retrying) {
        finished(sup);
        return;
    }
    service(sup, TY_SEV_INFO, "Finished tearing down training program.");
    sup->attempt_timer = ty_loop_add_timer(sup->loop, ty_mono_usec(), on_attempt_timer, sup);
}

/* Every replica is gone: clean up; the run ends (or the next attempt begins) once the runtime
 * says it is clean (at once, or on the loop with `cleaned`). */
static void finish(struct ty_supervisor *sup)
{
    if (sup->done || sup->cleaning || sup->attempt_timer)
        return;
    ty_loop_cancel_timer(sup->loop, sup->grace_timer);
    sup->grace_timer = 0;
    if (!sup->retrying) {
        ty_loop_cancel_timer(sup->loop, sup->deadline_timer);
        sup->deadline_timer = 0;
    }
    if (sup->rt->ops->cleanup(sup->rt) == TY_RUNTIME_ASYNC) {
        sup->cleaning = true;
        return;
    }
    cleaned(sup);
}

/* The runtime's asynchronous cleanup ended. */
static void on_cleaned(void *ctx)
{
    struct ty_supervisor *sup = ctx;
    if (sup->cleaning)
        cleaned(sup);
}

static void
on_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
    struct ty_supervisor *sup = ctx;
    emit(sup, s == TY_STREAM_STDERR ? TY_SEV_ERROR : TY_SEV_INFO, r->task_name, line, len);
}

static void on_deadline(struct ty_loop *loop, void *data);

static void enter_running(struct ty_supervisor *sup);
static bool arm_running_deadline(struct ty_supervisor *sup);

static void on_started(void *ctx, struct ty_replica *r)
{
    struct ty_supervisor *sup = ctx;
    struct rep_state *rs = &sup->reps[r - sup->plan->replicas];

    replica_changed(sup);
    if (rs->started)
        return; /* a restart in place */
    rs->started = true;
    /* The job is RUNNING once every replica's program runs (AI Platform: "when all workers
     * are available"); maxRunningTime counts from then, across attempts. */
    if (++sup->started < sup->plan->n_replicas || sup->stopping || sup->ever_running)
        return;
    enter_running(sup);
}

/* The job is RUNNING from now, for good (the store never goes back to PREPARING): no wait
 * deadline any more, and maxRunningTime counts from here. */
static void enter_running(struct ty_supervisor *sup)
{
    sup->ever_running = true;
    ty_loop_cancel_timer(sup->loop, sup->wait_timer);
    sup->wait_timer = 0;
    set_state(sup, TY_STATE_RUNNING);
    (void)arm_running_deadline(sup);
}

/* Arm scheduling.maxRunningTime's timer, unless the caller enforces it or it is armed: the
 * whole time from now, or for a run taking over a job that already ran (after an internal
 * error) what is left of it since the job first ran. Returns false when nothing is left. */
static bool arm_running_deadline(struct ty_supervisor *sup)
{
    int64_t left = sup->job->max_running_usec;

    if (left <= 0 || sup->opts.deadline_by_caller || sup->deadline_timer)
        return true;
    if (sup->opts.running_since_usec > 0)
        left -= ty_now_usec() - sup->opts.running_since_usec;
    if (left > 0)
        sup->deadline_timer = ty_loop_add_timer(sup->loop, ty_mono_usec() + left, on_deadline, sup);
    return left > 0;
}

static void on_notice(void *ctx, enum ty_severity sev, const char *msg)
{
    service(ctx, sev, "%s", msg);
}

/* Launch replica @i. Its environment is rendered for this launch and freed after it: a
 * restart renders it again from the attempt's clusterenv, which gives the same bytes. Kept
 * for the run instead, 1,000 replicas' CLUSTER_SPEC and TF_CONFIG (each naming every
 * replica) would be tens of MB that every later fork copies the page tables of. A launch that
 * fails is a permanent failure of the run. Returns false then. */
static bool launch_one(struct ty_supervisor *sup, size_t i)
{
    struct ty_replica *rep = &sup->plan->replicas[i];
    struct rep_state *rs = &sup->reps[i];
    struct ty_error e = {0};
    char msg[TY_ERROR_MSG_MAX + 128];
    _cleanup_strv_free_ char **env = ty_strv_copy(sup->opts.extra_env);
    int r;

    if (!env)
        env = xcalloc(1, sizeof(char *));
    r = ty_clusterenv_render(sup->env, rep, &sup->opts.env, &env, &e);
    if (r >= 0)
        r = sup->rt->ops->launch(sup->rt, rep, env, &e);
    if (r < 0) {
        struct ty_exit_status st = {.kind = TY_EXIT_START_FAILED};
        (void)snprintf(st.detail, sizeof(st.detail), "%s", ty_error_msg(&e));
        ty_describe_exit(rep, &st, msg, sizeof(msg));
        rs->exited = true;
        rs->last = st;
        stop(sup, TY_STATE_FAILED, msg);
        return false;
    }
    rs->launched = true;
    rs->exited = false;
    sup->running++;
    return true;
}

/* Launch the replicas whose restart is pending (from the loop, not inside the runtime's
 * `exited`). */
static void on_restart_timer(struct ty_loop *loop, void *data)
{
    struct ty_supervisor *sup = data;

    sup->restart_timer = 0;
    for (size_t i = 0; i < sup->plan->n_replicas && !sup->stopping; i++) {
        if (!sup->reps[i].restart_pending)
            continue;
        sup->reps[i].restart_pending = false;
        if (!launch_one(sup, i))
            return;
    }
}

/* Stop every replica and start the job again as the next attempt. */
static void retry(struct ty_supervisor *sup, const char *why, const struct rep_state *rs)
{
    service(sup,
            TY_SEV_WARNING,
            "Retrying the job (attempt %u of %u): %s%s",
            sup->attempt + 1,
            ty_supervisor_last_attempt(sup),
            why,
            rs && rs->restarts >= sup->policy.max_restarts
                ? " It failed again after its last restart of this attempt."
                : "");
    /* Some replicas ran: the job entered RUNNING (and its store row its startTime), and its
     * maxRunningTime counts from then, as the service's scheduler counts it. */
    if (sup->state == TY_STATE_PREPARING && sup->started > 0 && !sup->ever_running)
        enter_running(sup);
    sup->retrying = true;
    teardown(sup);
}

/* A replica ended while the run goes on: act on what its end means (restart.h). */
static void replica_ended(struct ty_supervisor *sup,
                          struct ty_replica *r,
                          struct rep_state *rs,
                          const struct ty_exit_status *st)
{
    enum ty_end_class c = ty_end_classify(st);
    enum ty_retry_action a;
    char msg[512], line[768];

    if (c == TY_END_SUCCESS) {
        if (r->role == TY_ROLE_MASTER)
            stop(sup, TY_STATE_SUCCEEDED, NULL);
        return;
    }
    ty_describe_exit(r, st, msg, sizeof(msg));
    a = ty_retry_decide(&sup->policy, c, rs->restarts, sup->attempt - sup->first_attempt + 1);
    switch (a) {
    case TY_RETRY_NONE:
        break;
    case TY_RETRY_RESTART:
        rs->restarts++;
        rs->restarted_after = *st;
        ty_describe_restart(r, st, rs->restarts, sup->policy.max_restarts, line, sizeof(line));
        service(sup, TY_SEV_WARNING, "%s", line);
        rs->restart_pending = true;
        if (!sup->restart_timer)
            sup->restart_timer =
                ty_loop_add_timer(sup->loop, ty_mono_usec(), on_restart_timer, sup);
        progress(sup);
        break;
    case TY_RETRY_JOB:
        retry(sup, msg, c == TY_END_INFRA ? rs : NULL);
        break;
    case TY_RETRY_FAIL:
        if (c != TY_END_PERMANENT && sup->policy.disabled)
            service(sup,
                    TY_SEV_WARNING,
                    c == TY_END_INFRA ? "Not restarting the replica %s: retries are disabled "
                                        "(scheduling.disableRetries)."
                                      : "Not retrying the job (%s failed): retries are disabled "
                                        "(scheduling.disableRetries).",
                    r->display_name);
        else if (c != TY_END_PERMANENT)
            service(sup,
                    TY_SEV_WARNING,
                    "Not retrying the job: attempt %u of %u was the last.",
                    sup->attempt,
                    ty_supervisor_last_attempt(sup));
        stop(sup, TY_STATE_FAILED, msg);
        break;
    }
}

static void on_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st0)
{
    struct ty_supervisor *sup = ctx;
    struct rep_state *rs = &sup->reps[r - sup->plan->replicas];
    struct ty_exit_status st = *st0;

    if (rs->exited)
        return;
    rs->exited = true;
    sup->running--;
    ty_exit_normalize(&st);
    rs->last = st;
    rs->stopped = sup->stopping;
    replica_changed(sup);
    if (!sup->stopping)
        replica_ended(sup, r, rs, &st);
    if (sup->stopping && sup->running == 0)
        finish(sup);
}

static void on_deadline(struct ty_loop *loop, void *data)
{
    struct ty_supervisor *sup = data;
    char msg[256];
    sup->deadline_timer = 0;
    stop(sup, TY_STATE_FAILED, ty_run_time_exceeded(sup->job, msg, sizeof(msg)));
}

static void on_prepared(void *ctx, int r, const char *error);
static void on_queued(void *ctx, const char *reason);

static int new_runtime(struct ty_supervisor *sup, struct ty_error *err)
{
    struct ty_runtime_events ev = {.started = on_started,
                                   .output = on_output,
                                   .exited = on_exited,
                                   .notice = on_notice,
                                   .queued = on_queued,
                                   .prepared = on_prepared,
                                   .cleaned = on_cleaned,
                                   .ctx = sup};
    int r = ty_runtime_new(sup->ops, sup->loop, &ev, &sup->rt, err);
    if (r >= 0) {
        ty_runtime_attach(sup->rt, sup->plan);
        sup->rt->run_as = sup->opts.run_as;
        sup->rt->base_env = sup->opts.base_env;
        sup->rt->path_setting = sup->opts.path_setting;
        if (sup->opts.start_in_job_dir) /* a local jobDir is made before any replica starts */
            sup->rt->workdir = ty_job_dir_is_local(sup->plan->job_dir) ? sup->plan->job_dir : "/";
        sup->rt->gpus = sup->gpus;
        sup->rt->gpu_stand_in = sup->opts.gpus && sup->opts.gpus->stand_in;
    }
    return r;
}

int ty_supervisor_new(struct ty_loop *loop,
                      const struct ty_runtime_ops *runtime,
                      const struct ty_job *job,
                      const char *trial_id,
                      char *const *trial_args,
                      const struct ty_supervisor_options *opts,
                      struct ty_supervisor **ret,
                      struct ty_error *err)
{
    struct ty_supervisor *sup = xcalloc(1, sizeof(*sup));
    int r;

    sup->loop = loop;
    sup->job = job;
    sup->ops = runtime;
    if (opts)
        sup->opts = *opts;
    if (sup->opts.grace_usec <= 0)
        sup->opts.grace_usec = TY_DEFAULT_GRACE_USEC;
    sup->first_attempt = sup->opts.first_attempt ? sup->opts.first_attempt : 1;
    sup->attempt = sup->first_attempt;
    ty_retry_policy_of(job, &sup->policy);
    sup->state = TY_STATE_QUEUED;
    r = ty_plan_build(job, trial_id, trial_args, &sup->plan, err);
    if (r >= 0 && sup->opts.metric_dir)
        sup->plan->metric_dir = xstrdup(sup->opts.metric_dir);
    if (r >= 0)
        sup->gpus = ty_run_gpus_for_plan(sup->opts.gpus, sup->plan, sup->opts.gpu_slot);
    if (r >= 0)
        r = new_runtime(sup, err);
    if (r < 0) {
        ty_supervisor_free(sup);
        return r;
    }
    sup->reps = xcalloc(sup->plan->n_replicas, sizeof(*sup->reps));
    *ret = sup;
    return 0;
}

/* "Preparing the RUNTIME runtime failed: WHY." into @msg, with one full stop (@why may end
 * with its own). */
static void prepare_msg(const struct ty_supervisor *sup, const char *why, char *msg, size_t n)
{
    size_t len = strlen(why);
    (void)snprintf(msg,
                   n,
                   "Preparing the %s runtime failed: %s%s",
                   sup->rt->ops->name,
                   why,
                   len && strchr(".!?", why[len - 1]) ? "" : ".");
}

static void prepare_failed(struct ty_supervisor *sup, const char *why)
{
    char msg[TY_ERROR_MSG_MAX + 128];
    prepare_msg(sup, why, msg, sizeof(msg));
    stop(sup, TY_STATE_FAILED, msg);
}

static void launch_all(struct ty_supervisor *sup);

static void retry(struct ty_supervisor *sup, const char *why, const struct rep_state *rs);

/* An asynchronous prepare() ended (runtimes with a queue: the allocation exists). */
static void on_prepared(void *ctx, int r, const char *error)
{
    struct ty_supervisor *sup = ctx;
    if (sup->stopping)
        return;
    if (r == -EHOSTDOWN &&
        ty_retry_decide(&sup->policy, TY_END_NODE_LOST, 0, sup->attempt - sup->first_attempt + 1) ==
            TY_RETRY_JOB) {
        /* The allocation was lost before the replicas were placed: as for a lost node. */
        char msg[TY_ERROR_MSG_MAX + 128];
        prepare_msg(sup, error, msg, sizeof(msg));
        retry(sup, msg, NULL);
        return;
    }
    if (r < 0) {
        prepare_failed(sup, error);
        return;
    }
    if (!sup->ever_running)
        set_state(sup, TY_STATE_PREPARING);
    launch_all(sup);
}

/* The run waits in the runtime's queue (Slurm) because of @reason. */
static void on_queued(void *ctx, const char *reason)
{
    struct ty_supervisor *sup = ctx;
    service(sup, TY_SEV_INFO, "Waiting in the %s queue: %s.", sup->rt->ops->name, reason);
    if (sup->opts.on_queued)
        sup->opts.on_queued(sup->opts.ctx, reason);
}

/* Prepare the runtime of this attempt, then launch (at once, or on `prepared`). */
static void prepare_attempt(struct ty_supervisor *sup)
{
    struct ty_error e = {0};
    int r = sup->rt->ops->prepare(sup->rt, &e);

    if (r == TY_RUNTIME_ASYNC)
        return; /* on_prepared goes on */
    if (r < 0) {
        prepare_failed(sup, ty_error_msg(&e));
        return;
    }
    if (!sup->ever_running)
        set_state(sup, TY_STATE_PREPARING);
    launch_all(sup);
}

static void begin_attempt(struct ty_supervisor *sup)
{
    struct ty_error e = {0};
    char msg[TY_ERROR_MSG_MAX + 128];

    /* The old runtime's cleanup has ended: freeing it does not block. */
    ty_runtime_free(sup->rt);
    sup->rt = NULL;
    ty_clusterenv_free(sup->env);
    sup->env = NULL;
    for (size_t i = 0; i < sup->plan->n_replicas; i++)
        sup->reps[i] = (struct rep_state){0};
    sup->running = sup->started = 0;
    sup->stopping = sup->retrying = sup->killed = false;
    sup->attempt++;
    service(sup,
            TY_SEV_INFO,
            "Starting attempt %u of %u.",
            sup->attempt,
            ty_supervisor_last_attempt(sup));
    /* A trial's new attempt starts on a new runtime, as on new machines: nothing the failed
     * one reported may pass for its result. Removed before the study hears of the attempt
     * (progress), so that it reads no more of the old reports. */
    if (sup->opts.metric_dir) {
        _cleanup_free_ char *mf = xasprintf("%s/output.metrics", sup->opts.metric_dir);
        if (unlink(mf) < 0 && errno != ENOENT)
            (void)ty_error_set(&e, errno, "cannot remove '%s': %s", mf, strerror(errno));
    }
    progress(sup);
    if (e.code || new_runtime(sup, &e) < 0) {
        /* Without a runtime there is nothing to tear down: the run ends here. */
        (void)snprintf(
            msg, sizeof(msg), "Starting attempt %u failed: %s.", sup->attempt, ty_error_msg(&e));
        sup->outcome = TY_STATE_FAILED;
        (void)snprintf(sup->error, sizeof(sup->error), "%s", msg);
        ty_loop_cancel_timer(sup->loop, sup->deadline_timer);
        sup->deadline_timer = 0;
        sup->stopping = true;
        finished(sup);
        return;
    }
    prepare_attempt(sup);
}

static void on_wait(struct ty_loop *loop, void *data);

int ty_supervisor_start(struct ty_supervisor *sup, struct ty_error *err)
{
    struct ty_error e = {0};

    (void)err;
    ty_run_announce(&sup->opts, sup->opts.ctx, trial_of(sup), sup->attempt, sup->job->job_id);
    /* A runtime with a queue of its own keeps the run QUEUED until it has an allocation. */
    if (!sup->rt->ops->queues)
        set_state(sup, TY_STATE_PREPARING);
    service(sup, TY_SEV_INFO, "Waiting for job to be provisioned.");
    progress(sup);
    if (sup->opts.wait_deadline_usec > 0) {
        int64_t left = sup->opts.wait_deadline_usec - ty_now_usec();
        sup->wait_timer =
            ty_loop_add_timer(sup->loop, ty_mono_usec() + (left > 0 ? left : 0), on_wait, sup);
    }

    /* A job that already ran (taken over after an internal error) has only what is left of
     * its maxRunningTime, counting from now: none left, nothing is launched. */
    if (sup->opts.running_since_usec > 0 && !arm_running_deadline(sup)) {
        char msg[256];
        stop(sup, TY_STATE_FAILED, ty_run_time_exceeded(sup->job, msg, sizeof(msg)));
        return 0;
    }
    /* A local job directory is created for the program; remote URIs (gs://...) are the
     * program's business. */
    sup->plan->job_dir_made = false;
    sup->plan->job_dir_no_links = sup->opts.job_dir_no_links;
    if (ty_job_dir_is_local(sup->plan->job_dir) && ty_run_make_job_dir(sup->plan->job_dir,
                                                                       sup->opts.run_as,
                                                                       sup->opts.job_dir_no_links,
                                                                       &sup->plan->job_dir_made,
                                                                       &e) < 0) {
        prepare_failed(sup, ty_error_msg(&e));
        return 0;
    }
    prepare_attempt(sup);
    return 0;
}

/* Launch the next TY_LAUNCH_BATCH replicas of the attempt; the rest from the loop, so that
 * between batches a cancel, a signal or a replica's end is acted on (and an ended replica's
 * pipes closed) while a large cluster is still starting. The master is launched last, as
 * gcloud's local runner did: its peers are then already starting when it first looks for
 * them. A teardown cancels what is left. */
static void on_launch_timer(struct ty_loop *loop, void *data);
static void launch_batch(struct ty_supervisor *sup)
{
    size_t n = sup->plan->n_replicas;

    if (sup->launch_next == 0 && !sup->stopping)
        service(sup, TY_SEV_INFO, "Waiting for training program to start.");
    for (size_t b = 0; b < TY_LAUNCH_BATCH && sup->launch_next < n && !sup->stopping; b++)
        if (!launch_one(sup, (sup->launch_next++ + 1) % n))
            return;
    if (sup->launch_next < n && !sup->stopping)
        sup->launch_timer = ty_loop_add_timer(sup->loop, ty_mono_usec(), on_launch_timer, sup);
}

static void on_launch_timer(struct ty_loop *loop, void *data)
{
    struct ty_supervisor *sup = data;

    sup->launch_timer = 0;
    launch_batch(sup);
}

/* Place every replica, render the shared part of the environment and launch them from the
 * loop: a cancel that came while the job was being prepared (the signal that a supervisor
 * blocks until it has claimed its job, delivered as it starts) is acted on first, in the
 * same turn of the loop (fds before timers), and nothing starts. */
static void launch_all(struct ty_supervisor *sup)
{
    struct ty_error e = {0};
    int r;

    r = sup->rt->ops->place(sup->rt, &e);
    if (r >= 0)
        r = ty_clusterenv_new(sup->plan, &sup->env, &e);
    if (r < 0) {
        prepare_failed(sup, ty_error_msg(&e));
        return;
    }
    sup->launch_next = 0;
    sup->launch_timer = ty_loop_add_timer(sup->loop, ty_mono_usec(), on_launch_timer, sup);
}

void ty_supervisor_cancel_for(struct ty_supervisor *sup, const char *requested, const char *error)
{
    if (sup->done)
        return;
    if (sup->retrying) {
        /* Between attempts, or tearing one down for the next: the run ends here. */
        service(sup, TY_SEV_INFO, "%s", requested);
        set_state(sup, TY_STATE_CANCELLING);
        stop(sup, TY_STATE_CANCELLED, error);
        if (sup->running > 0) {
            service(
                sup, TY_SEV_WARNING, "Cancel requested during teardown: killing the replicas now.");
            kill_now(sup);
        }
        return;
    }
    if (sup->cleaning) {
        /* Every replica is gone; what is left is the runtime's cleanup, which ends on its
         * own (bounded by the runtime's deadlines). */
        service(sup, TY_SEV_INFO, "Cancel requested while the run is being cleaned up.");
        return;
    }
    if (sup->state == TY_STATE_CANCELLING) {
        service(sup, TY_SEV_WARNING, "Cancel requested again: killing the replicas now.");
        kill_now(sup);
        return;
    }
    if (sup->stopping) {
        /* Already ending with a result: keep it, but stop waiting for the grace period. */
        service(sup, TY_SEV_WARNING, "Cancel requested during teardown: killing the replicas now.");
        kill_now(sup);
        return;
    }
    service(sup, TY_SEV_INFO, "%s", requested);
    set_state(sup, TY_STATE_CANCELLING);
    stop(sup, TY_STATE_CANCELLED, error);
}

void ty_supervisor_cancel(struct ty_supervisor *sup)
{
    ty_supervisor_cancel_for(sup, "Job cancellation requested.", "Job cancelled by the user.");
}

/* scheduling.maxWaitTime passed: a run that never became RUNNING is cancelled. */
static void on_wait(struct ty_loop *loop, void *data)
{
    struct ty_supervisor *sup = data;
    char msg[256];

    sup->wait_timer = 0;
    if (!sup->ever_running && !sup->done && (!sup->stopping || sup->retrying))
        ty_supervisor_cancel_for(sup, ty_run_wait_expired(sup->job, msg, sizeof(msg)), msg);
}

bool ty_supervisor_stop_early(struct ty_supervisor *sup, const char *why)
{
    if (sup->done || sup->stopping || sup->state != TY_STATE_RUNNING)
        return false;
    service(sup, TY_SEV_INFO, "%s", why);
    sup->stopped_early = true;
    stop(sup, TY_STATE_SUCCEEDED, NULL);
    return true;
}

void ty_supervisor_free(struct ty_supervisor *sup)
{
    if (!sup)
        return;
    /* A run that has not ended: destroy finishes its cleanup (or does all of it),
     * synchronously; its output and notices meanwhile still reach us, `cleaned` does not. */
    ty_runtime_free(sup->rt);
    ty_loop_cancel_timer(sup->loop, sup->grace_timer);
    ty_loop_cancel_timer(sup->loop, sup->deadline_timer);
    ty_loop_cancel_timer(sup->loop, sup->restart_timer);
    ty_loop_cancel_timer(sup->loop, sup->attempt_timer);
    ty_loop_cancel_timer(sup->loop, sup->wait_timer);
    ty_loop_cancel_timer(sup->loop, sup->launch_timer);
    ty_clusterenv_free(sup->env);
    ty_plan_free(sup->plan);
    free(sup->reps);
    free(sup->gpus);
    free(sup);
}
