/* SPDX-License-Identifier: Apache-2.0
 * study.c: the trial runner of tuning jobs (see study.h for the rules): asks the tuner for
 * trials, runs each as a ty_supervisor, reads its metric file when it ends, tells the tuner,
 * and decides the job's result. */
#include "study.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "runtime.h"
#include "statemode.h"
#include "stoprule.h"
#include "strv.h"
#include "study-int.h"
#include "timeutil.h"
#include "tuner.h"

/* How long a trial's replica changes are gathered before its attemptStatus is written. */
#define TRIAL_REPLICA_USEC (250 * INT64_C(1000))

static void study_service(struct ty_study *st, enum ty_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void study_service(struct ty_study *st, enum ty_severity sev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ty_run_vservice(&st->opts.sup, st->opts.ctx, NULL, 0, sev, fmt, ap);
    va_end(ap);
}

static void set_state(struct ty_study *st, enum ty_job_state s)
{
    if (st->state == s)
        return;
    st->state = s;
    if (st->opts.on_state)
        st->opts.on_state(st->opts.ctx, s);
}

static void pump(struct ty_loop *loop, void *data);
static void on_deadline(struct ty_loop *loop, void *data);
void study_trial_changed(struct trial_run *tr)
{
    free(tr->text);
    tr->text = NULL;
}

/* Work is done from a loop timer, never inside a supervisor's callback (which must not free
 * its supervisor). */
static void schedule_pump(struct ty_study *st)
{
    if (st->pump_timer || st->done)
        return;
    st->pump_timer = ty_loop_add_timer(st->loop, ty_mono_usec(), pump, st);
}

static void trial_on_log(void *ctx, const struct ty_log_record *rec)
{
    struct trial_run *tr = ctx;
    if (tr->st->opts.sup.on_log)
        tr->st->opts.sup.on_log(tr->st->opts.ctx, rec);
}

static void trial_on_queued(void *ctx, const char *reason)
{
    struct trial_run *tr = ctx;
    if (tr->st->opts.sup.on_queued)
        tr->st->opts.sup.on_queued(tr->st->opts.ctx, reason);
}

static void trial_on_state(void *ctx, enum ty_job_state s)
{
    struct trial_run *tr = ctx;
    struct ty_study *st = tr->st;

    if (!ty_job_state_is_final(s)) {
        if (s != TY_STATE_QUEUED && s != tr->t.state) {
            tr->t.state = s;
            study_trial_changed(tr); /* shown at the next write, as ever */
        }
        if (s == TY_STATE_RUNNING && st->state == TY_STATE_PREPARING) {
            ty_loop_cancel_timer(st->loop, st->wait_timer);
            st->wait_timer = 0;
            set_state(st, TY_STATE_RUNNING);
            /* scheduling.maxRunningTime: the job's, from when its first trial ran (or, a run
             * taking over, from when the job first did) */
            if (st->job->max_running_usec > 0 && !st->deadline_timer) {
                int64_t left = st->job->max_running_usec;
                if (st->opts.sup.running_since_usec > 0)
                    left -= ty_now_usec() - st->opts.sup.running_since_usec;
                st->deadline_timer = ty_loop_add_timer(
                    st->loop, ty_mono_usec() + (left > 0 ? left : 0), on_deadline, st);
            }
        }
        return;
    }
    tr->ended = true;
    schedule_pump(st);
}

static size_t n_running(const struct ty_study *st)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n_trials; i++)
        if (st->trials[i]->sup)
            n++;
    return n;
}

/* Trials at once at most: maxParallelTrials, and the trial slots the job was given. */
static size_t max_running(const struct ty_study *st)
{
    size_t n = (size_t)st->job->hp->max_parallel_trials;
    const struct ty_run_gpus *g = st->opts.sup.gpus;

    if (g && g->trials > 0 && (size_t)g->trials < n)
        n = (size_t)g->trials;
    return n ? n : 1;
}

/* The lowest trial slot no running trial holds. */
static int free_slot(const struct ty_study *st)
{
    for (int slot = 0;; slot++) {
        bool held = false;
        for (size_t i = 0; i < st->n_trials && !held; i++)
            held = st->trials[i]->sup && st->trials[i]->slot == slot;
        if (!held)
            return slot;
    }
}

/* Tell on_trial now if a change is due. */
static void flush_notify(struct ty_study *st)
{
    struct trial_run *tr = st->notify_last;

    ty_loop_cancel_timer(st->loop, st->notify_timer);
    st->notify_timer = 0;
    st->notify_last = NULL;
    if (tr && st->opts.on_trial)
        st->opts.on_trial(st->opts.ctx, &tr->t);
}

static void on_notify_timer(struct ty_loop *loop, void *data)
{
    struct ty_study *st = data;
    (void)loop;
    st->notify_timer = 0;
    flush_notify(st);
}

/* A trial changed: on_trial is told once the loop's turn is over, once for every change made
 * in that turn (a pump that reaps trials and starts others, each start's first progress).
 * The service's supervisor renders the whole trainingOutput on each call (local train only
 * the changed trials'), so one call per change grew with the square of the trials. Trials are
 * freed only with the study, so notify_last stays valid. */
static void notify_trial(struct trial_run *tr)
{
    struct ty_study *st = tr->st;

    study_trial_changed(tr);
    st->notify_last = tr;
    if (!st->notify_timer && st->opts.on_trial)
        st->notify_timer = ty_loop_add_timer(st->loop, ty_mono_usec(), on_notify_timer, st);
}

/* The trial's attempt or a replica's restart count changed: its output follows. */
static void trial_on_progress(void *ctx)
{
    struct trial_run *tr = ctx;
    json_int_t attempt, before;

    if (!tr->sup)
        return;
    before = json_integer_value(json_object_get(tr->t.attempt_status, "attempt"));
    json_decref(tr->t.attempt_status);
    tr->replicas_changed = false;
    tr->t.attempt_status = ty_supervisor_attempt_status(tr->sup, true);
    attempt = json_integer_value(json_object_get(tr->t.attempt_status, "attempt"));
    if (before > 0 && attempt != before) {
        /* a new attempt starts from nothing (its metric file was removed): the reports of
         * the one that failed are no longer the trial's */
        free(tr->t.metrics);
        tr->t.metrics = NULL;
        tr->t.n_metrics = 0;
        tr->metric_stamp = (struct ty_file_stamp){0};
        if (tr->st->stop_rule)
            ty_stop_rule_restart(tr->st->stop_rule, tr->t.trial_id);
    }
    notify_trial(tr);
}

static void on_replica_timer(struct ty_loop *loop, void *data)
{
    struct ty_study *st = data;
    (void)loop;
    st->replica_timer = 0;
    for (size_t i = 0; i < st->n_trials; i++)
        if (st->trials[i]->sup && st->trials[i]->replicas_changed)
            trial_on_progress(st->trials[i]);
}

/* A replica of the trial started or ended: its attemptStatus.replicas follows within
 * TRIAL_REPLICA_USEC, the changes of every trial in that time in one notice (as the job's own
 * replicas are written). */
static void trial_on_replica(void *ctx)
{
    struct trial_run *tr = ctx;
    struct ty_study *st = tr->st;

    tr->replicas_changed = true;
    if (!st->replica_timer)
        st->replica_timer =
            ty_loop_add_timer(st->loop, ty_mono_usec() + TRIAL_REPLICA_USEC, on_replica_timer, st);
}

/* One more failed trial: when that makes too many (maxFailedTrials), no trial starts any more
 * and the job will fail with the rule's message. */
static void count_failure(struct trial_run *tr)
{
    struct ty_study *st = tr->st;
    char msg[2048];

    st->n_failed++;
    /* once the limit was reached, a trial that succeeded since does not take it back */
    if ((st->cancelled && !st->failed_limit) ||
        !ty_study_too_many_failures(
            st->job->hp, st->n_failed, st->failed_limit ? 0 : st->n_succeeded, msg, sizeof(msg)))
        return;
    /* A running trial that fails after the limit was reached counts too, and is the last
     * failure the job's error names. */
    free(st->error);
    st->error = xasprintf("%s The last failure (trial %s): %s", msg, tr->t.trial_id, tr->t.error);
    if (st->failed_limit)
        return;
    st->failed_limit = true;
    st->stopping = true;
    if (n_running(st) > 0)
        study_service(
            st, TY_SEV_ERROR, "%s No more trials are started; waiting for the running ones.", msg);
}

/* A trial ended as @state with @error: judge it, record it, tell the stopping rule and the
 * tuner, log it, apply the failure rule. */
static void trial_ended(struct trial_run *tr, enum ty_job_state state, const char *error)
{
    struct ty_study *st = tr->st;
    struct ty_error e = {0};
    char msg[2048];

    tr->t.end_usec = ty_now_usec();
    state = study_judge_trial(tr, state, &error, msg, sizeof(msg));
    if (st->stop_rule)
        ty_stop_rule_end(
            st->stop_rule, tr->t.trial_id, state == TY_STATE_SUCCEEDED && !tr->t.stopped_early);
    tr->t.state = state;
    if (state != TY_STATE_SUCCEEDED)
        tr->t.error = xstrdup(error && *error ? error : "The trial failed.");
    /* replicas are kept only where they may explain a failure (else every trial's) */
    if (state != TY_STATE_FAILED && tr->t.attempt_status)
        (void)json_object_del(tr->t.attempt_status, "replicas");
    (void)ty_tuner_complete(st->tuner,
                            tr->t.trial_id,
                            state == TY_STATE_SUCCEEDED,
                            tr->t.has_metric ? tr->t.final.value : 0,
                            &e);
    if (state == TY_STATE_SUCCEEDED) {
        st->n_succeeded++;
        _cleanup_json_ json_t *jv = json_real(tr->t.final.value);
        _cleanup_free_ char *val = ty_study_value_string(jv);
        study_service(st,
                      TY_SEV_INFO,
                      "Trial %s SUCCEEDED%s: %s = %s at step %" PRId64 ".",
                      tr->t.trial_id,
                      tr->t.stopped_early ? " (stopped early)" : "",
                      st->tag,
                      val,
                      tr->t.final.step);
        notify_trial(tr);
        return;
    }
    notify_trial(tr);
    study_service(st,
                  state == TY_STATE_CANCELLED ? TY_SEV_INFO : TY_SEV_ERROR,
                  "Trial %s %s: %s",
                  tr->t.trial_id,
                  ty_job_state_name(state),
                  tr->t.error);
    if (state == TY_STATE_FAILED)
        count_failure(tr);
}

static void trial_free(struct trial_run *tr)
{
    if (!tr)
        return;
    ty_supervisor_free(tr->sup);
    free(tr->t.trial_id);
    json_decref(tr->t.parameters);
    free(tr->t.metrics);
    free(tr->t.error);
    json_decref(tr->t.attempt_status);
    free(tr->metric_dir);
    ty_strv_free(tr->args);
    ty_strv_free(tr->env);
    free(tr->text);
    free(tr);
}

/* Start the suggested trial @s (taking its fields). A trial that cannot be started ends as a
 * failed trial at once. */
static void start_trial(struct ty_study *st, struct ty_trial_suggestion *s)
{
    struct trial_run *tr = xcalloc(1, sizeof(*tr));
    struct ty_supervisor_options o = st->opts.sup;
    _cleanup_free_ char *metric_file = NULL;
    _cleanup_free_ char *shown = NULL;
    struct ty_error e = {0};
    char msg[TY_ERROR_MSG_MAX + 64];
    int r;

    tr->st = st;
    tr->t.trial_id = TAKE_PTR(s->trial_id);
    tr->t.parameters = TAKE_PTR(s->parameters);
    tr->t.state = TY_STATE_PREPARING;
    tr->t.start_usec = ty_now_usec();
    tr->metric_dir = xasprintf("%s/trials/%s", st->opts.state_dir, tr->t.trial_id);
    tr->args = ty_study_trial_args(st->job->hp, tr->t.parameters);
    tr->env = xcalloc(1, sizeof(char *));
    ty_strv_setenv(&tr->env, "CLOUD_ML_HP_METRIC_TAG", st->tag);
    st->trials = xreallocarray(st->trials, st->n_trials + 1, sizeof(*st->trials));
    st->trials[st->n_trials++] = tr;

    shown = ty_study_params_shown(tr->t.parameters);
    study_service(st, TY_SEV_INFO, "Trial %s started with %s.", tr->t.trial_id, shown);
    notify_trial(tr);

    o.on_log = trial_on_log;
    o.on_state = trial_on_state;
    o.on_queued = trial_on_queued;
    o.on_progress = trial_on_progress;
    o.on_replica = trial_on_replica;
    o.running_since_usec = 0;    /* maxRunningTime is the whole job's (the study's timer) */
    o.deadline_by_caller = true; /* ... and so is maxWaitTime */
    o.wait_deadline_usec = 0;
    o.admitted = NULL;        /* said once, by the study */
    tr->slot = free_slot(st); /* its GPUs: held until its run is reaped */
    o.gpu_slot = tr->slot;
    o.ctx = tr;
    o.extra_env = tr->env;
    o.metric_dir = tr->metric_dir;
    /* A fresh, empty directory: nothing from an earlier run may pass for this trial's. */
    metric_file = xasprintf("%s/output.metrics", tr->metric_dir);
    r = ty_mkdir_p(tr->metric_dir, TY_STATE_PRIVATE_DIR_MODE, &e);
    if (r >= 0 && unlink(metric_file) < 0 && errno != ENOENT)
        r = ty_error_set(&e, errno, "cannot remove '%s': %s", metric_file, strerror(errno));
    if (r >= 0)
        r = ty_supervisor_new(
            st->loop, st->opts.runtime, st->job, tr->t.trial_id, tr->args, &o, &tr->sup, &e);
    if (r >= 0)
        r = ty_supervisor_start(tr->sup, &e);
    if (r < 0) {
        ty_supervisor_free(tr->sup);
        tr->sup = NULL;
        (void)snprintf(msg, sizeof(msg), "The trial could not be started: %s", ty_error_msg(&e));
        trial_ended(tr, TY_STATE_FAILED, msg);
    }
}

static void finish_study(struct ty_study *st)
{
    enum ty_job_state final;
    const struct ty_study_trial *last_failed = NULL;

    for (size_t i = 0; i < st->n_trials; i++)
        if (st->trials[i]->t.state == TY_STATE_FAILED)
            last_failed = &st->trials[i]->t;
    if (st->timed_out) {
        final = TY_STATE_FAILED;
        ty_replace_str(&st->error, st->cancel_error);
    } else if (st->cancelled) {
        final = TY_STATE_CANCELLED;
        ty_replace_str(&st->error,
                       st->cancel_error ? st->cancel_error : "Job cancelled by the user.");
    } else if (st->failed_limit) {
        final = TY_STATE_FAILED;
        if (st->n_succeeded > 0) { /* trials that were running when the rule stopped it */
            char *msg = xasprintf("%s %zu %s still running then succeeded (see "
                                  "trainingOutput); the failures decided the job.",
                                  st->error ? st->error : "",
                                  st->n_succeeded,
                                  st->n_succeeded == 1 ? "trial" : "trials");
            free(st->error);
            st->error = msg;
        }
    } else if (st->n_succeeded > 0) {
        final = TY_STATE_SUCCEEDED;
    } else if (st->n_trials == 0 && !st->tuner_failed && st->resumed.succeeded > 0) {
        /* nothing was left to try: a resumed GRID_SEARCH whose earlier trials cover the
         * grid. Its result is theirs; nothing failed. */
        final = TY_STATE_SUCCEEDED;
        study_service(st,
                      TY_SEV_INFO,
                      "Hyperparameter tuning completed: no trial was left to run (the %zu "
                      "earlier trials of job %s%s cover every grid point).",
                      st->resumed.succeeded + st->resumed.failed,
                      st->job->hp->resume_job_id ? st->job->hp->resume_job_id : "-",
                      st->resumed.chained ? " and the jobs it resumed" : "");
    } else if (st->n_trials == 0 && !st->tuner_failed) {
        /* ... but none of them succeeded: there is no result */
        final = TY_STATE_FAILED;
        free(st->error);
        st->error = xasprintf("No trial was left to run: the %zu earlier trials of job %s%s "
                              "cover every grid point, and none of them succeeded.",
                              st->resumed.failed,
                              st->job->hp->resume_job_id ? st->job->hp->resume_job_id : "-",
                              st->resumed.chained ? " and the jobs it resumed" : "");
    } else if (st->n_trials == 0) {
        final = TY_STATE_FAILED; /* st->error says why */
    } else {
        final = TY_STATE_FAILED;
        free(st->error);
        st->error = xasprintf("All %zu trials failed. The last failure (trial %s): %s",
                              st->n_trials,
                              last_failed ? last_failed->trial_id : "-",
                              last_failed ? last_failed->error : "no trial ran.");
    }
    st->done = true;
    ty_loop_cancel_timer(st->loop, st->poll_timer);
    st->poll_timer = 0;
    ty_loop_cancel_timer(st->loop, st->wait_timer);
    st->wait_timer = 0;
    ty_loop_cancel_timer(st->loop, st->deadline_timer);
    st->deadline_timer = 0;
    if (final == TY_STATE_SUCCEEDED && st->n_trials > 0)
        study_service(st,
                      TY_SEV_INFO,
                      "Hyperparameter tuning completed: %zu of %zu trials succeeded.",
                      st->n_succeeded,
                      st->n_trials);
    flush_notify(st); /* every trial's last change before the job's final state */
    ty_run_announce_result(&st->opts.sup, st->opts.ctx, NULL, 0, final, st->error);
    set_state(st, final);
}

static void pump(struct ty_loop *loop, void *data)
{
    struct ty_study *st = data;
    size_t running, want, n = 0;
    struct ty_trial_suggestion *s = NULL;
    struct ty_error e = {0};

    st->pump_timer = 0;
    /* Reap the runs that ended (trials may be appended below: index, never pointers). */
    for (size_t i = 0; i < st->n_trials; i++) {
        struct trial_run *tr = st->trials[i];
        _cleanup_free_ char *error = NULL;
        enum ty_job_state state;
        if (!tr->sup || !tr->ended)
            continue;
        state = ty_supervisor_state(tr->sup);
        error = xstrdup(ty_supervisor_error(tr->sup));
        json_decref(tr->t.attempt_status); /* its replicas as they ended */
        tr->t.attempt_status = ty_supervisor_attempt_status(tr->sup, true);
        ty_supervisor_free(tr->sup);
        tr->sup = NULL;
        trial_ended(tr, state, error);
    }
    /* Fill the free slots; trials that fail to start free their slot at once. */
    while (!st->stopping && !st->exhausted) {
        running = n_running(st);
        if (running >= max_running(st))
            break;
        want = max_running(st) - running;
        n = 0;
        if (ty_tuner_suggest(st->tuner, want, &s, &n, &e) < 0 || n == 0) {
            if (n == 0 && e.code) {
                study_service(st, TY_SEV_ERROR, "The tuner failed: %s", ty_error_msg(&e));
                if (!st->error)
                    st->error = xasprintf("The tuner failed: %s", ty_error_msg(&e));
                st->tuner_failed = true;
            }
            st->exhausted = true;
            break;
        }
        for (size_t i = 0; i < n; i++)
            if (!st->stopping)
                start_trial(st, &s[i]);
        ty_trial_suggestions_free(s, n);
        s = NULL;
    }
    if (n_running(st) == 0 && !st->done)
        finish_study(st);
}

int ty_study_new(struct ty_loop *loop,
                 const struct ty_job *job,
                 const struct ty_study_options *opts,
                 struct ty_study **ret,
                 struct ty_error *err)
{
    struct ty_study *st;
    int r;

    if (!job->hp)
        return ty_error_set(err, EINVAL, "job %s has no hyperparameters to tune", job->job_id);
    st = xcalloc(1, sizeof(*st));
    st->loop = loop;
    st->job = job;
    st->opts = *opts;
    st->state = TY_STATE_QUEUED;
    st->tag = job->hp->metric_tag && *job->hp->metric_tag ? job->hp->metric_tag
                                                          : TY_HYPERTUNE_DEFAULT_TAG;
    r = ty_tuner_new(job->hp, opts->seed, &st->tuner, err);
    if (r < 0) {
        free(st);
        return r;
    }
    if (job->hp->early_stopping)
        st->stop_rule = ty_stop_rule_new(job->hp->maximize);
    ty_tuner_skip_ids(st->tuner, opts->after_trial);
    if (job->hp->resume_job_id) {
        if (!opts->previous_job)
            r = ty_error_set(err,
                             EINVAL,
                             "trainingInput.hyperparameters.resumePreviousJobId: job '%s' was "
                             "not found",
                             job->hp->resume_job_id);
        else
            r = ty_study_resume_check(job->hp, opts->previous_job, err);
        if (r >= 0)
            r = ty_study_resume_load(job->hp,
                                     opts->previous_job,
                                     opts->earlier_jobs,
                                     st->tuner,
                                     st->stop_rule,
                                     &st->resumed,
                                     err);
        if (r < 0) {
            ty_study_free(st);
            return r;
        }
    }
    *ret = st;
    return 0;
}

static void on_wait(struct ty_loop *loop, void *data);

int ty_study_start(struct ty_study *st, struct ty_error *err)
{
    const struct ty_hp_spec *hp = st->job->hp;
    _cleanup_free_ char *trials = NULL;
    char chain[64] = "";
    int r;

    if (st->resumed.chained > 0)
        (void)snprintf(chain,
                       sizeof(chain),
                       " (and the %zu job%s it resumed in turn)",
                       st->resumed.chained,
                       st->resumed.chained == 1 ? "" : "s");
    if (st->started)
        return ty_error_set(
            err, EALREADY, "the study of job %s has already started", st->job->job_id);
    if (!st->opts.state_dir || !*st->opts.state_dir)
        return ty_error_set(err,
                            EINVAL,
                            "the study of job %s has no state directory for its trials",
                            st->job->job_id);
    /* Every trial's metric directory goes here: a state directory that cannot hold them is
     * the runner's failure, not each trial's. */
    trials = xasprintf("%s/trials", st->opts.state_dir);
    r = ty_mkdir_p_exact(trials, TY_STATE_DIR_MODE, err);
    if (r < 0)
        return ty_error_prefix(err, r, "the trials of job %s", st->job->job_id);
    st->started = true;
    ty_run_announce(&st->opts.sup, st->opts.ctx, NULL, 0, st->job->job_id);
    set_state(st, TY_STATE_PREPARING);
    study_service(st,
                  TY_SEV_INFO,
                  "Hyperparameter tuning: up to %d %s, %zu at a time%s, %s %s.",
                  hp->max_trials,
                  hp->max_trials == 1 ? "trial" : "trials",
                  max_running(st) < (size_t)hp->max_trials ? max_running(st)
                                                           : (size_t)hp->max_trials,
                  max_running(st) < (size_t)hp->max_parallel_trials
                      ? " (as many as the job was given room for)"
                      : "",
                  hp->maximize ? "maximizing" : "minimizing",
                  st->tag);
    if (hp->resume_job_id)
        study_service(st,
                      TY_SEV_INFO,
                      "Resuming the study of job %s%s: %zu succeeded and %zu failed trials inform "
                      "the search (%zu skipped); new trials are numbered from %" PRIu64 ".",
                      hp->resume_job_id,
                      chain,
                      st->resumed.succeeded,
                      st->resumed.failed,
                      st->resumed.skipped,
                      st->resumed.last_id + 1);
    if (st->opts.sup.wait_deadline_usec > 0) {
        int64_t left = st->opts.sup.wait_deadline_usec - ty_now_usec();
        st->wait_timer =
            ty_loop_add_timer(st->loop, ty_mono_usec() + (left > 0 ? left : 0), on_wait, st);
    }
    schedule_pump(st);
    if (st->stop_rule)
        study_poll_trials(st->loop, st);
    return 0;
}

/* Cancel: @requested is logged, @error (NULL: the user's words) is the job's errorMessage.
 * With @fail the job FAILS instead (it ran past its maxRunningTime) and is not shown
 * CANCELLING. */
static void cancel_for(struct ty_study *st, const char *requested, const char *error, bool fail)
{
    if (st->done)
        return;
    if (!st->cancelled) {
        study_service(st, fail ? TY_SEV_ERROR : TY_SEV_INFO, "%s", requested);
        st->cancelled = true;
        st->timed_out = fail;
        st->stopping = true;
        if (error)
            st->cancel_error = xstrdup(error);
        if (!fail)
            set_state(st, TY_STATE_CANCELLING);
    }
    /* A second request reaches each trial as a second cancel: its replicas are killed. A
     * trial stopped for the job's maxRunningTime or maxWaitTime says so, not that the user
     * cancelled it. */
    for (size_t i = 0; i < st->n_trials; i++)
        if (st->trials[i]->sup && !st->trials[i]->ended) {
            if (st->cancel_error)
                ty_supervisor_cancel_for(st->trials[i]->sup, requested, st->cancel_error);
            else
                ty_supervisor_cancel(st->trials[i]->sup);
        }
    schedule_pump(st);
}

void ty_study_cancel(struct ty_study *st)
{
    cancel_for(st, "Job cancellation requested.", NULL, false);
}

/* scheduling.maxRunningTime passed: every trial is stopped and the job FAILS. */
static void on_deadline(struct ty_loop *loop, void *data)
{
    struct ty_study *st = data;
    char msg[256];

    st->deadline_timer = 0;
    if (!st->done && !st->cancelled)
        cancel_for(st, ty_run_time_exceeded(st->job, msg, sizeof(msg)), msg, true);
}

/* scheduling.maxWaitTime passed and no trial runs yet: the job is cancelled. */
static void on_wait(struct ty_loop *loop, void *data)
{
    struct ty_study *st = data;
    char msg[256];

    st->wait_timer = 0;
    if (!st->done && !st->cancelled && st->state != TY_STATE_RUNNING)
        cancel_for(st, ty_run_wait_expired(st->job, msg, sizeof(msg)), msg, false);
}

enum ty_job_state ty_study_state(const struct ty_study *st)
{
    return st->state;
}

bool ty_study_done(const struct ty_study *st)
{
    return st->done;
}

const char *ty_study_error(const struct ty_study *st)
{
    return st->done && st->state != TY_STATE_SUCCEEDED && st->error ? st->error : "";
}

size_t ty_study_n_trials(const struct ty_study *st)
{
    return st->n_trials;
}

const struct ty_study_trial *ty_study_trial(const struct ty_study *st, size_t i)
{
    return i < st->n_trials ? &st->trials[i]->t : NULL;
}

json_t *ty_study_training_output(const struct ty_study *st)
{
    _cleanup_free_ const struct ty_study_trial **v =
        xcalloc(st->n_trials ? st->n_trials : 1, sizeof(*v));
    for (size_t i = 0; i < st->n_trials; i++)
        v[i] = &st->trials[i]->t;
    return ty_study_output_json(st->job->hp, v, st->n_trials);
}

/* ty_study_output_pretty's text_of: the trial's text, rendered again only after a change. */
static const char *trial_text(void *ctx, const struct ty_study_trial *t)
{
    struct trial_run *tr = (struct trial_run *)((char *)t - offsetof(struct trial_run, t));
    int depth = *(const int *)ctx;

    if (!tr->text || tr->text_depth != depth) {
        free(tr->text);
        tr->text = ty_study_trial_pretty(t, depth);
        tr->text_depth = depth;
    }
    return tr->text;
}

char *ty_study_training_output_pretty(const struct ty_study *st, int depth)
{
    _cleanup_free_ const struct ty_study_trial **v =
        xcalloc(st->n_trials ? st->n_trials : 1, sizeof(*v));
    int trial_depth = depth + 2;

    for (size_t i = 0; i < st->n_trials; i++)
        v[i] = &st->trials[i]->t;
    return ty_study_output_pretty(st->job->hp, v, st->n_trials, depth, trial_text, &trial_depth);
}

int ty_study_first_trial(const struct ty_job *job,
                         uint64_t seed,
                         const json_t *previous_job,
                         const json_t *earlier_jobs,
                         struct ty_trial_suggestion **ret,
                         char ***args,
                         struct ty_error *err)
{
    struct ty_tuner *t = NULL;
    size_t n = 0;
    int r;

    if (!job->hp)
        return ty_error_set(err, EINVAL, "job %s has no hyperparameters to tune", job->job_id);
    r = ty_tuner_new(job->hp, seed, &t, err);
    if (r >= 0 && job->hp->resume_job_id && previous_job)
        r = ty_study_resume_load(job->hp, previous_job, earlier_jobs, t, NULL, NULL, err);
    if (r >= 0)
        r = ty_tuner_suggest(t, 1, ret, &n, err);
    if (r >= 0 && n == 0)
        r = ty_error_set(err, ENOENT, "the search has no trial to suggest");
    if (r >= 0)
        *args = ty_study_trial_args(job->hp, (*ret)->parameters);
    ty_tuner_free(t);
    return r;
}

void ty_study_free(struct ty_study *st)
{
    if (!st)
        return;
    ty_loop_cancel_timer(st->loop, st->pump_timer);
    ty_loop_cancel_timer(st->loop, st->notify_timer);
    ty_loop_cancel_timer(st->loop, st->replica_timer);
    ty_loop_cancel_timer(st->loop, st->poll_timer);
    ty_loop_cancel_timer(st->loop, st->wait_timer);
    ty_stop_rule_free(st->stop_rule);
    for (size_t i = 0; i < st->n_trials; i++)
        trial_free(st->trials[i]);
    free(st->trials);
    ty_tuner_free(st->tuner);
    free(st->error);
    free(st->cancel_error);
    free(st);
}
