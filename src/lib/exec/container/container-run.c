/* SPDX-License-Identifier: Apache-2.0
 * container-run.c: one replica's run in the container runtime, asynchronously on the loop:
 *
 *   [relaunch: force-remove the old container] -> create -> start (`started`)
 *   -> logs?follow=1 + wait?condition=not-running + inspect (its process: the OOM watch)
 *   -> conmon's exit file (container-exitfile.c) or else the job's events stream
 *      (container-events.c) tells of its end: the status, and the rest of the log read
 *      without follow; or else the log stream or the wait ends -> inspect: the exit status
 *      (`exited`)
 *
 * On Podman the exit file comes first: conmon writes it as soon as the process has ended and
 * its output is in the log, before the cleanup command after which Podman records the die
 * event; both go through ctr_run_died, whichever comes first.
 * The end: Podman records a container's die event (with its status) tens to a few hundred
 * ms after the exit; its compat wait polls and answers 0.5 to 3 s after it, its log follow
 * 0.25 s after the event at the earliest. So the die event ends it when it comes: the status
 * as it says (137 goes on to the inspect, for OOMKilled), the follow replaced by one read of
 * the whole log that skips what the follow delivered (LOG_REST_MAX bounds it). Without the
 * event (the stream broke, or began a moment late) the log stream or the wait, whichever
 * ends first, is followed by an inspect of the container, which says whether it has exited,
 * with which status, and whether the engine saw an OOM kill. `exited` is reported once the
 * status is known and the log has been read to its end (or LOG_DRAIN_USEC after the
 * status, if it lags). How it ended:
 *  - the exit status as it is (128+N included: the supervisor reads it as signal N);
 *  - 137 is out of memory only when the engine (State.OOMKilled) or the kernel (the
 *    container's memory cgroup's oom_kill count, container-oom.c) recorded an OOM kill;
 *    else it is a SIGKILL from outside (`podman kill`), restarted in place;
 *  - lost (TY_EXIT_LOST) when the engine no longer has the container (removed under us:
 *    the inspect answers 404, the wait an error), or cannot say how it ended (the engine
 *    went away);
 *  - a failed create or start (a missing image...) stays a start failure; but one that says
 *    the engine has no init (HostConfig.Init, container-config.c) is tried again without
 *    it, with a notice: the create at once, a failed start after removing its container.
 *
 * A relaunch (restart in place) replaces the container by an identical new one: same name,
 * body (environment, address, host name, GPUs), fresh file system as a restarted Kubernetes
 * container gets; starting the old one again would replay its old log, and saves only the
 * create (tens of ms) of a restart whose time goes to the engine's start and the exit
 * detection. Everything of the old run (requests, streams, timers, the OOM watch's fds) is
 * stopped when its exit is reported. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "container-internal.h"
#include "json.h"
#include "linesplit.h"
#include "macro.h"
#include "ports.h"
#include "timeutil.h"

static void maybe_report(struct ctr_replica *cr, bool drain_expired);
static void line_out(void *ctx, const char *line, size_t len);
static void line_err(void *ctx, const char *line, size_t len);
static int create_container(struct ctr_replica *cr, struct ty_error *err);
static int remove_then_create(struct ctr_replica *cr, struct ty_error *err);

/* A create or start failed: when the engine says it has no init, drop HostConfig.Init and
 * go again (@remove: the failed start's container first). Returns whether it did. */
static bool retry_without_init(
    struct ctr_replica *cr, bool remove, long status, const char *body, const char *error)
{
    struct ty_error e = {0};
    char why[200];

    if (status == 0 || !ctr_init_missing(body, error))
        return false;
    ty_docker_error_message(body, why, sizeof(why));
    if (!ctr_drop_init(cr->rt, cr, why))
        return false;
    if ((remove ? remove_then_create(cr, &e) : create_container(cr, &e)) < 0)
        ctr_run_start_failed(cr, "creating", 0, NULL, ty_error_msg(&e));
    return true;
}

void ctr_run_cancel(struct ctr_replica *cr)
{
    struct container_rt *c = cr->rt;

    if (cr->req)
        ty_docker_cancel(c->eng.api, cr->req);
    if (cr->wait_req)
        ty_docker_cancel(c->eng.api, cr->wait_req);
    if (cr->logs_req)
        ty_docker_cancel(c->eng.api, cr->logs_req);
    cr->req = cr->wait_req = cr->logs_req = NULL;
    ty_engine_call_cancel(&cr->pid_call);
    ty_engine_call_cancel(&cr->exit_call);
    ty_engine_call_cancel(&cr->rm_call);
    ty_engine_call_cancel(&cr->unpause_call);
    if (cr->drain_timer)
        ty_loop_cancel_timer(c->base.loop, cr->drain_timer);
    cr->drain_timer = 0;
    cr->await_engine = false;
    ctr_oom_watch_stop(&cr->oom);
}

void ctr_run_free(struct ctr_replica *cr)
{
    free(cr->name);
    free(cr->id);
    free(cr->body);
    free(cr->image_user);
    free(cr->image_id);
    cr->name = cr->id = cr->body = cr->image_user = cr->image_id = NULL;
}

static void report(struct ctr_replica *cr, const struct ty_exit_status *st)
{
    struct ty_runtime *rt = &cr->rt->base;
    if (cr->reported)
        return;
    ctr_run_cancel(cr);
    cr->reported = true;
    cr->exited = true;
    rt->ev.exited(rt->ev.ctx, cr->r, st);
}

void ctr_run_start_failed(
    struct ctr_replica *cr, const char *what, long status, const char *body, const char *error)
{
    struct ty_exit_status st = {.kind = TY_EXIT_START_FAILED};
    char msg[200];
    if (status == 0)
        (void)snprintf(msg, sizeof(msg), "%s", error ? error : "no answer from the engine");
    else
        ty_docker_error_message(body, msg, sizeof(msg));
    (void)snprintf(st.detail, sizeof(st.detail), "%s container %s failed: %s", what, cr->name, msg);
    report(cr, &st);
}

void ctr_run_lost(struct ctr_replica *cr, const char *why)
{
    struct ty_exit_status st = {.kind = TY_EXIT_LOST};
    (void)snprintf(st.detail,
                   sizeof(st.detail),
                   "the container engine lost its container %s (%s)",
                   cr->name,
                   why);
    ty_linesplit_flush(&cr->out_ls, line_out, cr);
    ty_linesplit_flush(&cr->err_ls, line_err, cr);
    report(cr, &st);
}

/* The engine lost the container: why, for the exit's detail. */
static void set_lost(struct ctr_replica *cr, const char *why)
{
    if (!cr->lost[0])
        (void)snprintf(cr->lost, sizeof(cr->lost), "%s", why);
}

static void line_out(void *ctx, const char *line, size_t len)
{
    struct ctr_replica *cr = ctx;
    struct ty_runtime *rt = &cr->rt->base;
    rt->ev.output(rt->ev.ctx, cr->r, TY_STREAM_STDOUT, line, len);
}

static void line_err(void *ctx, const char *line, size_t len)
{
    struct ctr_replica *cr = ctx;
    struct ty_runtime *rt = &cr->rt->base;
    rt->ev.output(rt->ev.ctx, cr->r, TY_STREAM_STDERR, line, len);
}

static void on_frame(void *ctx, int stream, const char *p, size_t n)
{
    struct ctr_replica *cr = ctx;
    int s = stream == 2 ? 1 : 0;

    /* What an earlier log request of this run delivered already. */
    if (cr->log_skip[s] > 0) {
        size_t k = cr->log_skip[s] < n ? (size_t)cr->log_skip[s] : n;
        cr->log_skip[s] -= k;
        p += k;
        n -= k;
        if (n == 0)
            return;
    }
    cr->log_seen[s] += n;
    if (s == 1)
        ty_linesplit_feed(&cr->err_ls, p, n, line_err, cr);
    else
        ty_linesplit_feed(&cr->out_ls, p, n, line_out, cr);
}

static void on_drain_timeout(struct ty_loop *loop, void *data)
{
    struct ctr_replica *cr = data;
    cr->drain_timer = 0;
    maybe_report(cr, true);
}

/* Report the end once it is known and the logs have drained (or had time). */
static void maybe_report(struct ctr_replica *cr, bool drain_expired)
{
    struct container_rt *c = cr->rt;
    struct ty_exit_status st = {.kind = TY_EXIT_CODE, .code = (int)cr->exit_code};

    if (cr->reported || (!cr->exit_known && !cr->lost[0]))
        return;
    if (!cr->lost[0] && !cr->logs_done && !drain_expired) {
        if (!cr->drain_timer)
            cr->drain_timer = ty_loop_add_timer(
                c->base.loop, ty_mono_usec() + LOG_DRAIN_USEC, on_drain_timeout, cr);
        return;
    }
    if (cr->lost[0]) {
        ctr_run_lost(cr, cr->lost);
        return;
    }
    ty_linesplit_flush(&cr->out_ls, line_out, cr);
    ty_linesplit_flush(&cr->err_ls, line_err, cr);
    if (cr->exit_code == 137 && (cr->engine_oom || ctr_oom_watch_killed(&cr->oom))) {
        st.kind = TY_EXIT_OOM;
    }
    report(cr, &st);
}

/* The inspect at the end: has it exited, with which status, OOM-killed? */
static void on_exit_inspect(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    _cleanup_json_ json_t *j = NULL;
    json_t *state;
    char msg[200];

    if (status == 200 && ty_json_parse(body, len, &j, NULL) == 0 &&
        json_is_object(state = json_object_get(j, "State"))) {
        json_t *code = json_object_get(state, "ExitCode");
        if (!json_is_true(json_object_get(state, "Running")) && json_is_integer(code)) {
            cr->exit_known = true;
            cr->exit_code = (long)json_integer_value(code);
            cr->engine_oom = json_is_true(json_object_get(state, "OOMKilled"));
            if (cr->exit_code < 0) /* Podman's -1: no status of a run */
                set_lost(cr, "the engine has no exit status for it");
        } else if (cr->wait_done && cr->wait_ok) {
            /* Running again after the wait said it ended: started by someone else. */
            set_lost(cr, "it was started again outside trainyard");
        } else if (cr->wait_done) {
            set_lost(cr, "the engine's wait for it failed");
        }
        /* else: running, and only its log stream ended; the wait goes on. */
    } else if (status == 404) {
        set_lost(cr, "it was removed outside trainyard");
    } else if (cr->wait_ok) {
        cr->exit_known = true; /* the wait said how it ended */
        cr->exit_code = cr->wait_code;
    } else {
        if (status == 0)
            (void)snprintf(msg, sizeof(msg), "%s", error ? error : "no answer");
        else
            ty_docker_error_message(body, msg, sizeof(msg));
        _cleanup_free_ char *why = xasprintf("inspecting it failed: %s", msg);
        set_lost(cr, why);
    }
    maybe_report(cr, false);
}

/* The log stream or the wait ended: ask the engine how the container stands. */
static void check_end(struct ctr_replica *cr)
{
    struct container_rt *c = cr->rt;
    _cleanup_free_ char *path = NULL;
    struct ty_error e = {0};

    if (cr->reported || cr->exit_known || cr->lost[0] || ty_engine_call_busy(&cr->exit_call))
        return;
    ty_engine_call_cancel(&cr->pid_call); /* too late for the watch to begin */
    path = xasprintf("/containers/%s/json", cr->id);
    if (ty_engine_call_start(&cr->exit_call,
                             c->eng.api,
                             c->base.loop,
                             "GET",
                             path,
                             NULL,
                             NULL,
                             CTR_INSPECT_TIMEOUT_MS,
                             on_exit_inspect,
                             cr,
                             &e) < 0)
        on_exit_inspect(cr, 0, NULL, 0, ty_error_msg(&e));
}

static void on_logs_data(void *ctx, const char *data, size_t len)
{
    struct ctr_replica *cr = ctx;
    ty_docker_demux_feed(&cr->dm, data, len, on_frame, cr);
}

static void on_logs_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    cr->logs_req = NULL;
    cr->logs_done = true;
    check_end(cr);
    maybe_report(cr, false);
}

/* The container has ended, so its log is complete: read the rest of it now (a request
 * without follow, skipping what the follow delivered) instead of waiting for the follow to
 * notice the end (Podman's checks every 250 ms, after its own die event). The follow goes
 * on when the rest cannot be asked for, or when the log is so long that reading it again
 * would cost more than the wait. */
static void read_log_rest(struct ctr_replica *cr)
{
    struct ty_docker_callbacks cb = {.on_data = on_logs_data, .on_done = on_logs_done, .ctx = cr};
    _cleanup_free_ char *path = NULL;
    struct ty_docker_req *req = NULL;

    if (!cr->logs_req || cr->logs_done || cr->logs_rest ||
        cr->log_seen[0] + cr->log_seen[1] > LOG_REST_MAX)
        return;
    path = xasprintf("/containers/%s/logs?stdout=1&stderr=1", cr->id);
    if (ty_docker_request(
            cr->rt->eng.api, "GET", path, NULL, NULL, TY_DOCKER_NO_TIMEOUT, &cb, &req, NULL) < 0)
        return;
    ty_docker_cancel(cr->rt->eng.api, cr->logs_req);
    cr->logs_req = req;
    cr->logs_rest = true;
    cr->dm = (struct ty_docker_demux){0}; /* a new stream: frames start afresh */
    cr->log_skip[0] = cr->log_seen[0];
    cr->log_skip[1] = cr->log_seen[1];
}

/* Act on the die event: the status as it said (137: the inspect says whether it was out of
 * memory), and the rest of the log. */
static void act_on_died(struct ctr_replica *cr)
{
    if (cr->reported || cr->exit_known || cr->lost[0])
        return;
    if (cr->died_code == 137) {
        check_end(cr);
    } else {
        ty_engine_call_cancel(&cr->pid_call); /* too late for the watch to begin */
        cr->exit_known = true;
        cr->exit_code = cr->died_code;
    }
    read_log_rest(cr);
    maybe_report(cr, false);
}

void ctr_run_died(struct ctr_replica *cr, long code)
{
    if (cr->reported || cr->exit_known || cr->lost[0] || cr->died)
        return;
    cr->died = true;
    cr->died_code = code;
    if (cr->started) /* else the start's answer acts on it */
        act_on_died(cr);
}

static void on_wait_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    _cleanup_json_ json_t *j = NULL;
    json_t *err;

    cr->wait_req = NULL;
    cr->wait_done = true;
    /* Podman answers a wait for a container removed under it with 200, StatusCode 0 and an
     * Error: not an exit status. */
    if (status == 200 && ty_json_parse(body, len, &j, NULL) == 0 &&
        json_is_integer(json_object_get(j, "StatusCode")) &&
        ((err = json_object_get(j, "Error")) == NULL || json_is_null(err)) &&
        json_integer_value(json_object_get(j, "StatusCode")) >= 0) {
        cr->wait_ok = true;
        cr->wait_code = (long)json_integer_value(json_object_get(j, "StatusCode"));
    }
    check_end(cr);
}

/* The inspect after the start: the container's process, whose memory cgroup the OOM watch
 * follows. */
static void on_pid_inspect(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    struct container_rt *c = cr->rt;
    _cleanup_json_ json_t *j = NULL;
    json_t *state;

    if (status != 200 || ty_json_parse(body, len, &j, NULL) < 0 ||
        !json_is_object(state = json_object_get(j, "State")) ||
        !json_is_true(json_object_get(state, "Running")))
        return;
    json_int_t pid = json_integer_value(json_object_get(state, "Pid"));
    if (pid > 0)
        ctr_exitwatch_learn(c, (pid_t)pid);
    if (c->memory[cr->r->role] <= 0)
        return; /* asked only for the exit watch */
    int r = pid > 0 ? ctr_oom_watch_start(&cr->oom, c->base.loop, (pid_t)pid) : -ESRCH;
    if (r < 0 && r != -ESRCH && !c->oom_warned) {
        c->oom_warned = true;
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "Cannot watch the memory cgroup of container %s for the kernel's OOM "
                          "kills (%s): a replica that exits with status 137 counts as killed "
                          "from outside unless the container engine reports it out of memory.",
                          cr->name,
                          strerror(-r));
    }
}

static void send_kill_now(struct ctr_replica *cr, int sig)
{
    _cleanup_free_ char *path = xasprintf("/containers/%s/kill?signal=%d", cr->id, sig);
    struct ty_docker_callbacks cb = {0};
    (void)ty_docker_request(cr->rt->eng.api, "POST", path, NULL, NULL, 0, &cb, NULL, NULL);
}

static void on_unpaused(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    (void)status, (void)body, (void)len, (void)error;
    send_kill_now(cr, cr->unpause_signal);
}

/* Signal the replica's container. A paused one (`podman pause`: its cgroup frozen) takes no
 * signal, SIGKILL included, until it is thawed, and its teardown would wait for it forever:
 * the container is unpaused first (refused, harmlessly, when it is not paused) and the signal
 * sent once that is answered. */
static void send_kill(struct ctr_replica *cr, int sig)
{
    _cleanup_free_ char *path = xasprintf("/containers/%s/unpause", cr->id);
    struct ty_error e = {0};

    if (ty_engine_call_busy(&cr->unpause_call)) { /* a second signal: the stronger one */
        cr->unpause_signal = sig == SIGKILL ? SIGKILL : cr->unpause_signal;
        return;
    }
    cr->unpause_signal = sig;
    if (ty_engine_call_start(&cr->unpause_call,
                             cr->rt->eng.api,
                             cr->rt->base.loop,
                             "POST",
                             path,
                             NULL,
                             NULL,
                             CTR_INSPECT_TIMEOUT_MS,
                             on_unpaused,
                             cr,
                             &e) < 0)
        send_kill_now(cr, sig);
}

static void on_start_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    struct container_rt *c = cr->rt;
    struct ty_docker_callbacks wait_cb = {.on_done = on_wait_done, .ctx = cr};
    struct ty_docker_callbacks logs_cb = {
        .on_data = on_logs_data, .on_done = on_logs_done, .ctx = cr};
    _cleanup_free_ char *wpath = NULL, *lpath = NULL, *ipath = NULL;

    cr->req = NULL;
    if (status != 204 && status != 304) {
        if (retry_without_init(cr, true, status, body, error))
            return;
        if (ctr_engine_gone(c, status, error) && ctr_engine_reopen(c))
            return; /* ctr_run_resume follows */
        ctr_run_start_failed(cr, "starting", status, body, error);
        return;
    }
    cr->started = true;
    c->base.ev.started(c->base.ev.ctx, cr->r);
    /* Both long requests begin after the start: Podman answers a wait on a container that
     * never started with -1 at once, and a log follow before start with an empty body. */
    wpath = xasprintf("/containers/%s/wait?condition=not-running", cr->id);
    lpath = xasprintf("/containers/%s/logs?follow=1&stdout=1&stderr=1", cr->id);
    if (ty_docker_request(c->eng.api,
                          "POST",
                          wpath,
                          NULL,
                          NULL,
                          TY_DOCKER_BUFFER | TY_DOCKER_NO_TIMEOUT,
                          &wait_cb,
                          &cr->wait_req,
                          NULL) < 0) {
        cr->wait_req = NULL;
        cr->wait_done = true;
    }
    if (ty_docker_request(c->eng.api,
                          "GET",
                          lpath,
                          NULL,
                          NULL,
                          TY_DOCKER_NO_TIMEOUT,
                          &logs_cb,
                          &cr->logs_req,
                          NULL) < 0) {
        cr->logs_req = NULL;
        cr->logs_done = true;
    }
    /* A memory-limited container: watch its cgroup for the OOM killer; and its process
     * tells the exit watch where the engine writes exit files. */
    ipath = xasprintf("/containers/%s/json", cr->id);
    if (c->memory[cr->r->role] > 0 || ctr_exitwatch_wants_pid(c))
        (void)ty_engine_call_start(&cr->pid_call,
                                   c->eng.api,
                                   c->base.loop,
                                   "GET",
                                   ipath,
                                   NULL,
                                   NULL,
                                   CTR_INSPECT_TIMEOUT_MS,
                                   on_pid_inspect,
                                   cr,
                                   NULL);
    if (cr->pending_signal)
        send_kill(cr, cr->pending_signal);
    ctr_exitwatch_check(c, cr); /* it may have ended already */
    if (cr->died)
        act_on_died(cr);
    else if (cr->logs_done || cr->wait_done)
        check_end(cr);
}

static void on_create_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    struct ty_docker_callbacks cb = {.on_done = on_start_done, .ctx = cr};
    _cleanup_free_ char *path = NULL;
    json_t *j = NULL;

    cr->req = NULL;
    if (status != 201 || ty_json_parse(body, len, &j, NULL) < 0 || !ty_json_str(j, "Id")) {
        json_decref(j);
        if (status != 201 && retry_without_init(cr, false, status, body, error))
            return;
        if (ctr_engine_gone(cr->rt, status, error) && ctr_engine_reopen(cr->rt))
            return; /* ctr_run_resume follows */
        ctr_run_start_failed(cr, "creating", status, body, error);
        return;
    }
    free(cr->id);
    cr->id = xstrdup(ty_json_str(j, "Id"));
    json_decref(j);
    if (cr->pending_signal) {
        /* Stopped before it ever ran. */
        struct ty_exit_status st = {.kind = TY_EXIT_SIGNAL, .code = cr->pending_signal};
        report(cr, &st);
        return;
    }
    path = xasprintf("/containers/%s/start", cr->id);
    if (ty_docker_request(
            cr->rt->eng.api, "POST", path, NULL, NULL, TY_DOCKER_BUFFER, &cb, &cr->req, NULL) < 0)
        ctr_run_start_failed(cr, "starting", 0, NULL, "cannot send the request");
}

static int create_container(struct ctr_replica *cr, struct ty_error *err)
{
    struct ty_docker_callbacks cb = {.on_done = on_create_done, .ctx = cr};
    _cleanup_free_ char *path = xasprintf("/containers/create?name=%s", cr->name);

    return ty_docker_request(
        cr->rt->eng.api, "POST", path, cr->body, NULL, TY_DOCKER_BUFFER, &cb, &cr->req, err);
}

/* A relaunch: the old container is gone (or never was); create the new one. */
static void on_old_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    struct ty_error e = {0};

    if (status != 204 && status != 200 && status != 404) {
        if (ctr_engine_gone(cr->rt, status, error) && ctr_engine_reopen(cr->rt))
            return; /* ctr_run_resume follows */
        ctr_run_start_failed(cr, "removing the previous", status, body, error);
        return;
    }
    if (cr->pending_signal) {
        struct ty_exit_status st = {.kind = TY_EXIT_SIGNAL, .code = cr->pending_signal};
        report(cr, &st);
        return;
    }
    if (create_container(cr, &e) < 0)
        ctr_run_start_failed(cr, "creating", 0, NULL, ty_error_msg(&e));
}

int ctr_container_remove_start(struct container_rt *c,
                               struct ty_engine_call *call,
                               const char *container,
                               ty_engine_call_fn fn,
                               void *ctx,
                               struct ty_error *err)
{
    _cleanup_free_ char *path = xasprintf("/containers/%s?force=1&v=1", container);

    return ty_engine_call_start(call,
                                c->eng.api,
                                c->base.loop,
                                "DELETE",
                                path,
                                NULL,
                                NULL,
                                CTR_REMOVE_TIMEOUT_MS,
                                fn,
                                ctx,
                                err);
}

int ctr_remove_start(struct ctr_replica *cr, ty_engine_call_fn fn, struct ty_error *err)
{
    return ctr_container_remove_start(cr->rt, &cr->rm_call, cr->name, fn, cr, err);
}

/* Force-remove the container by name, then create it again (on_old_removed). */
static int remove_then_create(struct ctr_replica *cr, struct ty_error *err)
{
    return ctr_remove_start(cr, on_old_removed, err);
}

/* Forget the previous run: its requests ended when its exit was reported. */
static void reset_run(struct ctr_replica *cr)
{
    ctr_run_cancel(cr);
    ty_linesplit_release(&cr->out_ls);
    ty_linesplit_release(&cr->err_ls);
    cr->dm = (struct ty_docker_demux){0};
    free(cr->id);
    cr->id = NULL;
    cr->pending_signal = 0;
    cr->exit_code = cr->wait_code = 0;
    cr->lost[0] = '\0';
    cr->started = cr->exited = cr->reported = false;
    cr->wait_done = cr->wait_ok = cr->logs_done = cr->exit_known = cr->engine_oom = false;
    cr->died = cr->logs_rest = false;
    cr->died_code = 0;
    cr->log_seen[0] = cr->log_seen[1] = cr->log_skip[0] = cr->log_skip[1] = 0;
}

int ctr_run_launch(struct ctr_replica *cr, char *const env[], struct ty_error *err)
{
    struct container_rt *c = cr->rt;
    bool first;

    if (cr->runs > 0 && !cr->reported)
        return ty_error_set(
            err, EBUSY, "replica %s: its previous run has not ended", cr->r->display_name);
    if (!cr->body)
        cr->body = ctr_create_body(c, cr, env);
    if (cr->reserve_fd >= 0) { /* the program binds the port once its container runs */
        ty_port_release(cr->reserve_fd);
        cr->reserve_fd = -1;
    }
    first = cr->runs++ == 0;
    /* A restart in place: remove the old container (exited, or still there after the
     * engine lost track of it), then create the same again. */
    if (!first)
        reset_run(cr);
    if (c->reopening) {
        cr->await_engine = true; /* the engine is being reached again: ctr_run_resume */
        return 0;
    }
    /* Before the container starts, so that its end is seen. */
    ctr_exitwatch_start(c);
    ctr_events_start(c);
    return first ? create_container(cr, err) : remove_then_create(cr, err);
}

void ctr_run_resume(struct ctr_replica *cr)
{
    struct ty_error e = {0};

    if (remove_then_create(cr, &e) < 0)
        ctr_run_start_failed(cr, "removing the previous", 0, NULL, ty_error_msg(&e));
}

void ctr_run_signal(struct ctr_replica *cr, int sig)
{
    if (cr->reported)
        return;
    if (!cr->started || cr->await_engine) {
        cr->pending_signal = sig; /* applied when create/start completes */
        return;
    }
    if (!cr->rt->reopening) /* else it is reported lost at once */
        send_kill(cr, sig);
}
