/* SPDX-License-Identifier: Apache-2.0
 * supervise.c: the run state machine (see supervise.h for the rules). */
#include "supervise.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "runtime.h"
#include "schema.h"
#include "strv.h"
#include "timeutil.h"

struct rep_state {
    bool launched;
    bool exited;
};

struct ty_supervisor {
    struct ty_loop *loop;
    const struct ty_job *job;
    struct ty_supervisor_options opts;
    struct ty_cluster_plan *plan;
    struct ty_runtime *rt;
    struct ty_clusterenv *env;
    struct rep_state *reps;
    size_t running; /* launched and not yet exited */
    size_t started; /* replicas whose program has started */
    enum ty_job_state state;
    enum ty_job_state outcome; /* final state decided while stopping */
    bool stopping;
    bool killed;        /* SIGKILL already sent */
    bool stopped_early; /* ty_supervisor_stop_early */
    bool cleaning;      /* the runtime's cleanup goes on on the loop (`cleaned` follows) */
    bool done;
    uint64_t grace_timer, deadline_timer;
    char error[2048];
};

void ty_run_log(const struct ty_supervisor_options *o,
                void *ctx,
                enum ty_severity sev,
                const char *task,
                const char *trial,
                const char *msg,
                size_t len)
{
    struct ty_log_record rec = {
        .time_usec = ty_now_usec(),
        .severity = sev,
        .task = task,
        .trial = trial,
        .message = msg,
        .len = len,
    };
    if (o->log)
        (void)ty_joblog_write(o->log, &rec);
    if (o->on_log)
        o->on_log(ctx, &rec);
}

void ty_run_vservice(const struct ty_supervisor_options *o,
                     void *ctx,
                     const char *trial,
                     enum ty_severity sev,
                     const char *fmt,
                     va_list ap)
{
    char msg[2048];
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    ty_run_log(o, ctx, sev, "service", trial, msg, strlen(msg));
}

static void run_service(const struct ty_supervisor_options *o,
                        void *ctx,
                        const char *trial,
                        enum ty_severity sev,
                        const char *fmt,
                        ...) __attribute__((format(printf, 5, 6)));
static void run_service(const struct ty_supervisor_options *o,
                        void *ctx,
                        const char *trial,
                        enum ty_severity sev,
                        const char *fmt,
                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    ty_run_vservice(o, ctx, trial, sev, fmt, ap);
    va_end(ap);
}

void ty_run_announce(const struct ty_supervisor_options *o,
                     void *ctx,
                     const char *trial,
                     const char *job_id)
{
    run_service(o, ctx, trial, TY_SEV_INFO, "Validating job requirements...");
    run_service(
        o, ctx, trial, TY_SEV_INFO, "Job creation request has been successfully validated.");
    run_service(o, ctx, trial, TY_SEV_INFO, "Job %s is queued.", job_id);
}

void ty_run_announce_result(const struct ty_supervisor_options *o,
                            void *ctx,
                            const char *trial,
                            enum ty_job_state state,
                            const char *error)
{
    switch (state) {
    case TY_STATE_SUCCEEDED:
        run_service(o, ctx, trial, TY_SEV_INFO, "Job completed successfully.");
        break;
    case TY_STATE_CANCELLED:
        run_service(o, ctx, trial, TY_SEV_INFO, "Job cancelled.");
        break;
    default:
        run_service(o, ctx, trial, TY_SEV_ERROR, "Job failed: %s", error);
        break;
    }
}

static const char *trial_of(const struct ty_supervisor *sup)
{
    return sup->plan ? sup->plan->trial_id : NULL;
}

static void
emit(struct ty_supervisor *sup, enum ty_severity sev, const char *task, const char *msg, size_t len)
{
    ty_run_log(&sup->opts, sup->opts.ctx, sev, task, trial_of(sup), msg, len);
}

static void service(struct ty_supervisor *sup, enum ty_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void service(struct ty_supervisor *sup, enum ty_severity sev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ty_run_vservice(&sup->opts, sup->opts.ctx, trial_of(sup), sev, fmt, ap);
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

void ty_describe_exit(const struct ty_replica *r,
                      const struct ty_exit_status *st,
                      char *buf,
                      size_t n)
{
    const char *abbrev;

    switch (st->kind) {
    case TY_EXIT_CODE:
        (void)snprintf(buf,
                       n,
                       "The replica %s exited with a non-zero status of %d.",
                       r->display_name,
                       st->code);
        break;
    case TY_EXIT_SIGNAL:
        abbrev = sigabbrev_np(st->code);
        (void)snprintf(buf,
                       n,
                       "The replica %s was terminated by signal %d (SIG%s).",
                       r->display_name,
                       st->code,
                       abbrev ? abbrev : "UNKNOWN");
        break;
    case TY_EXIT_OOM:
        (void)snprintf(buf,
                       n,
                       "The replica %s ran out of memory and exited with a non-zero status of "
                       "%d.",
                       r->display_name,
                       st->code);
        break;
    case TY_EXIT_START_FAILED:
        (void)snprintf(
            buf, n, "The replica %s could not be started: %s.", r->display_name, st->detail);
        break;
    case TY_EXIT_LOST:
        (void)snprintf(buf, n, "The replica %s was lost: %s.", r->display_name, st->detail);
        break;
    }
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

/* Decide the outcome and stop everything still running. */
static void stop(struct ty_supervisor *sup, enum ty_job_state outcome, const char *error)
{
    if (sup->stopping)
        return;
    /* A replica can end the run (the master exiting 0, say) before every other replica's
     * start has been seen; the training program did run, so the job passes through RUNNING
     * (and gets its startTime) on the way to its result. */
    if (sup->state == TY_STATE_PREPARING && sup->started > 0 && outcome != TY_STATE_CANCELLED)
        set_state(sup, TY_STATE_RUNNING);
    sup->stopping = true;
    sup->outcome = outcome;
    if (error)
        (void)snprintf(sup->error, sizeof(sup->error), "%s", error);
    ty_loop_cancel_timer(sup->loop, sup->deadline_timer);
    sup->deadline_timer = 0;
    if (sup->running == 0) {
        finish(sup);
        return;
    }
    service(sup, TY_SEV_INFO, "Tearing down training program.");
    signal_all(sup, SIGTERM);
    sup->grace_timer =
        ty_loop_add_timer(sup->loop, ty_mono_usec() + sup->opts.grace_usec, on_grace, sup);
}

/* The runtime's cleanup has ended: the run is over. Logs the result, marks the run done and
 * only then sets the final state, so that an on_state callback for a final state never sees
 * anything of the run alive. */
static void finished(struct ty_supervisor *sup)
{
    sup->cleaning = false;
    service(sup, TY_SEV_INFO, "Finished tearing down training program.");
    sup->done = true;
    if (sup->outcome == TY_STATE_SUCCEEDED && sup->stopped_early)
        service(sup, TY_SEV_INFO, "Trial stopped early.");
    else
        ty_run_announce_result(&sup->opts, sup->opts.ctx, trial_of(sup), sup->outcome, sup->error);
    set_state(sup, sup->outcome);
}

/* Every replica is gone: clean up; the run ends once the runtime says it is clean (at once,
 * or on the loop with `cleaned`). */
static void finish(struct ty_supervisor *sup)
{
    if (sup->done || sup->cleaning)
        return;
    ty_loop_cancel_timer(sup->loop, sup->grace_timer);
    ty_loop_cancel_timer(sup->loop, sup->deadline_timer);
    sup->grace_timer = sup->deadline_timer = 0;
    if (sup->rt->ops->cleanup(sup->rt) == TY_RUNTIME_ASYNC) {
        sup->cleaning = true;
        return;
    }
    finished(sup);
}

/* The runtime's asynchronous cleanup ended. */
static void on_cleaned(void *ctx)
{
    struct ty_supervisor *sup = ctx;
    if (sup->cleaning)
        finished(sup);
}

static void
on_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
    struct ty_supervisor *sup = ctx;
    emit(sup, s == TY_STREAM_STDERR ? TY_SEV_ERROR : TY_SEV_INFO, r->task_name, line, len);
}

static void on_deadline(struct ty_loop *loop, void *data);

static void on_started(void *ctx, struct ty_replica *r)
{
    struct ty_supervisor *sup = ctx;

    /* The job is RUNNING once every replica's program runs (AI Platform: "when all workers
     * are available"); maxRunningTime counts from then. */
    if (++sup->started < sup->plan->n_replicas || sup->stopping)
        return;
    set_state(sup, TY_STATE_RUNNING);
    if (sup->job->max_running_usec > 0)
        sup->deadline_timer = ty_loop_add_timer(
            sup->loop, ty_mono_usec() + sup->job->max_running_usec, on_deadline, sup);
}

static void on_notice(void *ctx, enum ty_severity sev, const char *msg)
{
    service(ctx, sev, "%s", msg);
}

static void on_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
    struct ty_supervisor *sup = ctx;
    struct rep_state *rs = &sup->reps[r - sup->plan->replicas];
    char msg[512];

    if (rs->exited)
        return;
    rs->exited = true;
    sup->running--;
    if (!sup->stopping) {
        if (st->kind == TY_EXIT_CODE && st->code == 0) {
            if (r->role == TY_ROLE_MASTER)
                stop(sup, TY_STATE_SUCCEEDED, NULL);
        } else {
            ty_describe_exit(r, st, msg, sizeof(msg));
            stop(sup, TY_STATE_FAILED, msg);
        }
    }
    if (sup->stopping && sup->running == 0)
        finish(sup);
}

static void on_deadline(struct ty_loop *loop, void *data)
{
    struct ty_supervisor *sup = data;
    char msg[256];
    sup->deadline_timer = 0;
    (void)snprintf(
        msg,
        sizeof(msg),
        "The job exceeded its maximum running time (scheduling.maxRunningTime %s).",
        ty_json_str(json_object_get(sup->job->training_input, "scheduling"), "maxRunningTime"));
    stop(sup, TY_STATE_FAILED, msg);
}

static void on_prepared(void *ctx, int r, const char *error);
static void on_queued(void *ctx, const char *reason);

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
    struct ty_runtime_events ev = {.started = on_started,
                                   .output = on_output,
                                   .exited = on_exited,
                                   .notice = on_notice,
                                   .queued = on_queued,
                                   .prepared = on_prepared,
                                   .cleaned = on_cleaned,
                                   .ctx = sup};
    int r;

    sup->loop = loop;
    sup->job = job;
    if (opts)
        sup->opts = *opts;
    if (sup->opts.grace_usec <= 0)
        sup->opts.grace_usec = TY_DEFAULT_GRACE_USEC;
    sup->state = TY_STATE_QUEUED;
    r = ty_plan_build(job, trial_id, trial_args, &sup->plan, err);
    if (r >= 0 && sup->opts.metric_dir)
        sup->plan->metric_dir = xstrdup(sup->opts.metric_dir);
    if (r >= 0)
        r = ty_runtime_new(runtime, loop, &ev, &sup->rt, err);
    if (r < 0) {
        ty_supervisor_free(sup);
        return r;
    }
    ty_runtime_attach(sup->rt, sup->plan);
    sup->reps = xcalloc(sup->plan->n_replicas, sizeof(*sup->reps));
    *ret = sup;
    return 0;
}

/* A start-up failure: the run is FAILED, the replicas already started are stopped. */
static int fail_start(struct ty_supervisor *sup, const char *msg)
{
    stop(sup, TY_STATE_FAILED, msg);
    return 0;
}

static void prepare_failed(struct ty_supervisor *sup, const char *why)
{
    char msg[TY_ERROR_MSG_MAX + 128];
    (void)snprintf(
        msg, sizeof(msg), "Preparing the %s runtime failed: %s.", sup->rt->ops->name, why);
    (void)fail_start(sup, msg);
}

static void launch_all(struct ty_supervisor *sup);

/* An asynchronous prepare() ended (runtimes with a queue: the allocation exists). */
static void on_prepared(void *ctx, int r, const char *error)
{
    struct ty_supervisor *sup = ctx;
    if (sup->stopping)
        return;
    if (r < 0) {
        prepare_failed(sup, error);
        return;
    }
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

int ty_supervisor_start(struct ty_supervisor *sup, struct ty_error *err)
{
    struct ty_error e = {0};
    int r;

    (void)err;
    ty_run_announce(&sup->opts, sup->opts.ctx, trial_of(sup), sup->job->job_id);
    /* A runtime with a queue of its own keeps the run QUEUED until it has an allocation. */
    if (!sup->rt->ops->queues)
        set_state(sup, TY_STATE_PREPARING);
    service(sup, TY_SEV_INFO, "Waiting for job to be provisioned.");

    /* A local job directory is created for the program; remote URIs (gs://...) are the
     * program's business. */
    r = 0;
    if (sup->plan->job_dir && !strstr(sup->plan->job_dir, "://"))
        r = ty_mkdir_p(sup->plan->job_dir, 0755, &e);
    if (r >= 0)
        r = sup->rt->ops->prepare(sup->rt, &e);
    if (r == TY_RUNTIME_ASYNC)
        return 0; /* on_prepared goes on */
    if (r < 0) {
        prepare_failed(sup, ty_error_msg(&e));
        return 0;
    }
    set_state(sup, TY_STATE_PREPARING);
    launch_all(sup);
    return 0;
}

/* Place every replica, render the environment and launch them. */
static void launch_all(struct ty_supervisor *sup)
{
    struct ty_error e = {0};
    char msg[TY_ERROR_MSG_MAX + 128];
    int r;

    r = sup->rt->ops->place(sup->rt, &e);
    if (r >= 0)
        r = ty_clusterenv_new(sup->plan, &sup->env, &e);
    if (r < 0) {
        prepare_failed(sup, ty_error_msg(&e));
        return;
    }
    service(sup, TY_SEV_INFO, "Waiting for training program to start.");
    /* Start the master last, as gcloud's local runner did: its peers are then already
     * starting when it first looks for them. */
    for (size_t k = 0; k < sup->plan->n_replicas; k++) {
        size_t i = (k + 1) % sup->plan->n_replicas;
        struct ty_replica *rep = &sup->plan->replicas[i];
        _cleanup_strv_free_ char **env = ty_strv_copy(sup->opts.extra_env);

        if (!env)
            env = xcalloc(1, sizeof(char *));
        if (sup->stopping)
            break;
        r = ty_clusterenv_render(sup->env, rep, &sup->opts.env, &env, &e);
        if (r >= 0)
            r = sup->rt->ops->launch(sup->rt, rep, env, &e);
        if (r < 0) {
            struct ty_exit_status st = {.kind = TY_EXIT_START_FAILED};
            (void)snprintf(st.detail, sizeof(st.detail), "%s", ty_error_msg(&e));
            ty_describe_exit(rep, &st, msg, sizeof(msg));
            sup->reps[i].exited = true;
            (void)fail_start(sup, msg);
            return;
        }
        sup->reps[i].launched = true;
        sup->running++;
    }
}

void ty_supervisor_cancel(struct ty_supervisor *sup)
{
    if (sup->done)
        return;
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
    service(sup, TY_SEV_INFO, "Job cancellation requested.");
    set_state(sup, TY_STATE_CANCELLING);
    stop(sup, TY_STATE_CANCELLED, "Job cancelled by the user.");
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

enum ty_job_state ty_supervisor_state(const struct ty_supervisor *sup)
{
    return sup->state;
}

bool ty_supervisor_done(const struct ty_supervisor *sup)
{
    return sup->done;
}

const char *ty_supervisor_error(const struct ty_supervisor *sup)
{
    return sup->state == TY_STATE_SUCCEEDED ? "" : sup->error;
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
    ty_clusterenv_free(sup->env);
    ty_plan_free(sup->plan);
    free(sup->reps);
    free(sup);
}

static void noop_started(void *ctx, struct ty_replica *r)
{
}

static void
noop_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
}

static void noop_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
}

static json_t *strv_json(char *const *v)
{
    json_t *a;
    if (!v)
        return json_null();
    a = json_array();
    for (size_t i = 0; v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

int ty_supervisor_dry_run(const struct ty_runtime_ops *runtime,
                          const struct ty_job *job,
                          const char *trial_id,
                          char *const *trial_args,
                          const struct ty_env_options *envopts,
                          json_t **ret,
                          struct ty_error *err)
{
    struct ty_runtime_events ev = {
        .started = noop_started, .output = noop_output, .exited = noop_exited};
    struct ty_loop *loop = ty_loop_new();
    struct ty_cluster_plan *plan = NULL;
    struct ty_runtime *rt = NULL;
    struct ty_clusterenv *ce = NULL;
    json_t *out = NULL;
    int r;

    r = ty_plan_build(job, trial_id, trial_args, &plan, err);
    if (r >= 0)
        r = ty_runtime_new(runtime, loop, &ev, &rt, err);
    if (r >= 0) {
        ty_runtime_attach(rt, plan);
        rt->dry_run = true;
        r = rt->ops->prepare(rt, err);
    }
    if (r >= 0)
        r = rt->ops->place(rt, err);
    if (r >= 0)
        r = ty_clusterenv_new(plan, &ce, err);
    if (r >= 0) {
        out = json_array();
        for (size_t i = 0; i < plan->n_replicas && r >= 0; i++) {
            struct ty_replica *rep = &plan->replicas[i];
            _cleanup_strv_free_ char **env = xcalloc(1, sizeof(char *));
            json_t *o = json_object(), *envj = json_object();
            r = ty_clusterenv_render(ce, rep, envopts, &env, err);
            for (size_t k = 0; env[k]; k++) {
                char *eq = strchr(env[k], '=');
                _cleanup_free_ char *name = xstrndup(env[k], (size_t)(eq - env[k]));
                json_object_set_new(envj, name, json_string(eq + 1));
            }
            json_object_set_new(o, "taskName", json_string(rep->task_name));
            json_object_set_new(o, "role", json_string(ty_role_name(rep->role)));
            json_object_set_new(o, "index", json_integer(rep->index));
            json_object_set_new(o, "address", json_sprintf("%s:%d", rep->host, rep->port));
            json_object_set_new(o, "imageUri", json_string(rep->image));
            json_object_set_new(o, "machineType", json_string(rep->machine_type));
            json_object_set_new(o, "command", strv_json(rep->command));
            json_object_set_new(o, "args", strv_json(rep->args));
            json_object_set_new(o, "env", envj);
            json_array_append_new(out, o);
        }
    }
    ty_clusterenv_free(ce);
    /* destroy removes what a run created; a dry run created nothing. */
    ty_runtime_free(rt);
    ty_plan_free(plan);
    ty_loop_free(loop);
    if (r < 0) {
        json_decref(out);
        return r;
    }
    *ret = out;
    return 0;
}
