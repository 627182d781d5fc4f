/* SPDX-License-Identifier: Apache-2.0
 * restart.c: classifying a replica's end and deciding on restarts and retries (restart.h). */
#include "restart.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

void ty_exit_normalize(struct ty_exit_status *st)
{
    if (st->kind != TY_EXIT_CODE || st->code <= 128 || st->code > 128 + SIGRTMAX)
        return;
    if (st->code == 128 + SIGABRT || st->code == 128 + SIGSEGV)
        return;
    st->kind = TY_EXIT_SIGNAL;
    st->code -= 128;
}

static bool crash_signal(int sig)
{
    return sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

enum ty_end_class ty_end_classify(const struct ty_exit_status *st)
{
    switch (st->kind) {
    case TY_EXIT_CODE:
        if (st->code == 0)
            return TY_END_SUCCESS;
        if (st->code == SIGABRT || st->code == SIGSEGV || st->code == 128 + SIGABRT ||
            st->code == 128 + SIGSEGV)
            return TY_END_CRASH;
        return TY_END_PERMANENT;
    case TY_EXIT_SIGNAL:
        return crash_signal(st->code) ? TY_END_CRASH : TY_END_INFRA;
    case TY_EXIT_OOM:
    case TY_EXIT_START_FAILED:
        return TY_END_PERMANENT;
    case TY_EXIT_LOST:
        return TY_END_INFRA;
    case TY_EXIT_NODE_LOST:
        return TY_END_NODE_LOST;
    }
    return TY_END_PERMANENT;
}

const char *ty_end_class_name(enum ty_end_class c)
{
    switch (c) {
    case TY_END_SUCCESS:
        return "success";
    case TY_END_PERMANENT:
        return "permanent";
    case TY_END_CRASH:
        return "crash";
    case TY_END_INFRA:
        return "infrastructure";
    case TY_END_NODE_LOST:
        return "node lost";
    }
    return "unknown";
}

bool ty_retries_disabled(const json_t *training_input)
{
    return json_is_true(
        json_object_get(json_object_get(training_input, "scheduling"), "disableRetries"));
}

void ty_retry_policy_of(const struct ty_job *job, struct ty_retry_policy *p)
{
    json_t *sched = json_object_get(job->training_input, "scheduling");

    *p = (struct ty_retry_policy){
        .max_restarts = TY_MAX_RESTARTS,
        .max_attempts = TY_MAX_ATTEMPTS,
        .job_on_worker_restart = json_is_true(json_object_get(sched, "restartJobOnWorkerRestart")),
        .disabled = ty_retries_disabled(job->training_input),
    };
    if (p->disabled) { /* one attempt, no restart: what attemptStatus and the log say */
        p->max_restarts = 0;
        p->max_attempts = 1;
    }
}

enum ty_retry_action ty_retry_decide(const struct ty_retry_policy *p,
                                     enum ty_end_class c,
                                     unsigned restarts,
                                     unsigned attempt)
{
    bool can_retry = attempt < p->max_attempts;

    if (c == TY_END_SUCCESS)
        return TY_RETRY_NONE;
    if (c == TY_END_PERMANENT || p->disabled)
        return TY_RETRY_FAIL;
    if (c == TY_END_INFRA && !p->job_on_worker_restart && restarts < p->max_restarts)
        return TY_RETRY_RESTART;
    return can_retry ? TY_RETRY_JOB : TY_RETRY_FAIL;
}

static const char *sig_abbrev(int sig)
{
    const char *a = sigabbrev_np(sig);
    return a ? a : "UNKNOWN";
}

void ty_describe_exit(const struct ty_replica *r,
                      const struct ty_exit_status *st,
                      char *buf,
                      size_t n)
{
    const char *name = r->display_name;

    switch (st->kind) {
    case TY_EXIT_CODE:
        (void)snprintf(
            buf, n, "The replica %s exited with a non-zero status of %d.", name, st->code);
        break;
    case TY_EXIT_SIGNAL:
        (void)snprintf(buf,
                       n,
                       "The replica %s was terminated by signal %d (SIG%s).",
                       name,
                       st->code,
                       sig_abbrev(st->code));
        break;
    case TY_EXIT_OOM:
        (void)snprintf(buf,
                       n,
                       "The replica %s ran out of memory and exited with a non-zero status of "
                       "%d.",
                       name,
                       st->code);
        break;
    case TY_EXIT_START_FAILED:
        (void)snprintf(buf, n, "The replica %s could not be started: %s.", name, st->detail);
        break;
    case TY_EXIT_LOST:
    case TY_EXIT_NODE_LOST:
        (void)snprintf(buf, n, "The replica %s was lost: %s.", name, st->detail);
        break;
    }
}

void ty_describe_restart(const struct ty_replica *r,
                         const struct ty_exit_status *st,
                         unsigned k,
                         unsigned max,
                         char *buf,
                         size_t n)
{
    char what[512];

    if (st->kind == TY_EXIT_SIGNAL) {
        (void)snprintf(what,
                       sizeof(what),
                       "The replica %s was killed by signal %d (SIG%s) from outside trainyard",
                       r->display_name,
                       st->code,
                       sig_abbrev(st->code));
    } else {
        size_t len;
        ty_describe_exit(r, st, what, sizeof(what));
        len = strlen(what);
        if (len > 0 && what[len - 1] == '.')
            what[len - 1] = '\0';
    }
    (void)snprintf(buf, n, "%s; restarting it (restart %u of %u).", what, k, max);
}
