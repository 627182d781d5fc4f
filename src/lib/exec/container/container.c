/* SPDX-License-Identifier: Apache-2.0
 * container.c: the `container` runtime: every replica runs its image in a container through
 * the Docker Engine API (Docker, or Podman's compatible service), on a network of its own.
 *
 * Per job: one Internal bridge network on a free 198.18.0.0/15 /24; every replica gets a
 * fixed address, the host name AI Platform used (cmle-training-<role>-<hash>-<index>), port
 * 2222, and the complete name -> address list in /etc/hosts (ExtraHosts) before its program
 * starts, so peers resolve without DNS, which is also pointed at loopback so no lookup ever
 * leaves the machine. Machine types become CPU/memory limits (capped to the host, with a
 * notice); a local jobDir is bind-mounted at the same path.
 *
 * Per replica, asynchronously on the loop: create -> start -> (started) -> wait + logs
 * follow -> (exited once both ended). Exit status 137 that trainyard did not cause by SIGKILL
 * on a memory-limited replica is reported as out of memory (Podman never sets OOMKilled).
 * Teardown: kill with the requested signals, then force-remove containers in parallel, then
 * the network, asynchronously (container-cleanup.c). Containers and networks carry labels naming
 * the owning trainyard process, so a later run removes what a killed one left (container-engine.c).
 */
#include "container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "container-engine.h"
#include "container-internal.h"
#include "docker-api.h"
#include "json.h"
#include "linesplit.h"
#include "machine.h"
#include "macro.h"
#include "ports.h"
#include "runtime.h"
#include "strv.h"
#include "timeutil.h"

static struct container_rt *cast(struct ty_runtime *rt)
{
    return (struct container_rt *)rt;
}

static int create(struct ty_runtime **ret, struct ty_error *err)
{
    struct container_rt *c = xcalloc(1, sizeof(*c));
    unsigned long long seed = (unsigned long long)ty_now_usec() ^ (unsigned long long)getpid();
    (void)snprintf(c->token, sizeof(c->token), "%d-%llx", (int)getpid(), seed);
    *ret = &c->base;
    (void)err;
    return 0;
}

/* Host networking: each replica gets a free port of the host (held until its container
 * starts) and the host's address; no network, names or /etc/hosts of our own. */
static int place_on_host(struct container_rt *c, struct ty_error *err)
{
    int cursor = 0;

    for (size_t i = 0; i < c->n; i++) {
        struct ctr_replica *cr = &c->reps[i];
        int port = c->base.dry_run
                       ? REPLICA_PORT
                       : ty_port_hold(&cursor, &cr->reserve_fd, cr->r->display_name, err);
        if (port < 0)
            return port;
        free(cr->r->host);
        cr->r->host = xstrdup("127.0.0.1");
        cr->r->port = port;
    }
    return 0;
}

static int place(struct ty_runtime *rt, struct ty_error *err)
{
    struct container_rt *c = cast(rt);

    if (rt->plan->host_network)
        return place_on_host(c, err);
    for (size_t i = 0; i < c->n; i++) {
        struct ty_replica *rep = c->reps[i].r;
        free(rep->host);
        rep->host =
            xasprintf("cmle-training-%s-%s-%d", ty_role_name(rep->role), c->hash, rep->index);
        rep->port = REPLICA_PORT;
    }
    if (rt->dry_run)
        return 0;
    /* The network exists since prepare (container-prepare.c). */
    for (size_t i = 0; i < c->n; i++)
        (void)snprintf(c->reps[i].ip, sizeof(c->reps[i].ip), "%s%zu", c->prefix, i + 2);
    return 0;
}

static void report(struct ctr_replica *cr, const struct ty_exit_status *st)
{
    struct ty_runtime *rt = &cr->rt->base;
    if (cr->reported)
        return;
    cr->reported = true;
    cr->exited = true;
    rt->ev.exited(rt->ev.ctx, cr->r, st);
}

static void start_failed(
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
    if (stream == 2)
        ty_linesplit_feed(&cr->err_ls, p, n, line_err, cr);
    else
        ty_linesplit_feed(&cr->out_ls, p, n, line_out, cr);
}

/* Report the exit once the exit status is known and the logs have drained (or had time). */
static void maybe_report(struct ctr_replica *cr, bool drain_expired)
{
    struct container_rt *c = cr->rt;
    struct ty_exit_status st = {.kind = TY_EXIT_CODE, .code = (int)cr->exit_code};

    if (cr->reported || !cr->wait_done || (!cr->logs_done && !drain_expired))
        return;
    ty_loop_cancel_timer(c->base.loop, cr->drain_timer);
    cr->drain_timer = 0;
    ty_linesplit_flush(&cr->out_ls, line_out, cr);
    ty_linesplit_flush(&cr->err_ls, line_err, cr);
    if (cr->exit_code == 137 && !cr->sigkilled && c->memory[cr->r->role] > 0)
        st.kind = TY_EXIT_OOM;
    report(cr, &st);
}

static void on_drain_timeout(struct ty_loop *loop, void *data)
{
    struct ctr_replica *cr = data;
    cr->drain_timer = 0;
    maybe_report(cr, true);
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
    maybe_report(cr, false);
}

static void on_wait_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    json_t *j = NULL;

    cr->wait_req = NULL;
    if (status != 200 || ty_json_parse(body, len, &j, NULL) < 0 ||
        !json_is_integer(json_object_get(j, "StatusCode"))) {
        struct ty_exit_status st = {.kind = TY_EXIT_LOST};
        char msg[200];
        if (status == 0)
            (void)snprintf(msg, sizeof(msg), "%s", error ? error : "no answer");
        else
            ty_docker_error_message(body, msg, sizeof(msg));
        (void)snprintf(
            st.detail, sizeof(st.detail), "waiting for container %s failed: %s", cr->name, msg);
        json_decref(j);
        report(cr, &st);
        return;
    }
    cr->exit_code = (long)json_integer_value(json_object_get(j, "StatusCode"));
    json_decref(j);
    cr->wait_done = true;
    if (!cr->logs_done)
        cr->drain_timer = ty_loop_add_timer(
            cr->rt->base.loop, ty_mono_usec() + LOG_DRAIN_USEC, on_drain_timeout, cr);
    maybe_report(cr, false);
}

static void send_kill(struct ctr_replica *cr, int sig)
{
    _cleanup_free_ char *path = xasprintf("/containers/%s/kill?signal=%d", cr->id, sig);
    struct ty_docker_callbacks cb = {0};
    if (sig == SIGKILL)
        cr->sigkilled = true;
    (void)ty_docker_request(cr->rt->eng.api, "POST", path, NULL, NULL, 0, &cb, NULL, NULL);
}

static void on_start_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    struct container_rt *c = cr->rt;
    struct ty_docker_callbacks wait_cb = {.on_done = on_wait_done, .ctx = cr};
    struct ty_docker_callbacks logs_cb = {
        .on_data = on_logs_data, .on_done = on_logs_done, .ctx = cr};
    _cleanup_free_ char *wpath = NULL, *lpath = NULL;

    cr->req = NULL;
    if (status != 204 && status != 304) {
        start_failed(cr, "starting", status, body, error);
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
                          NULL) < 0)
        cr->wait_req = NULL;
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
    if (cr->pending_signal)
        send_kill(cr, cr->pending_signal);
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
        start_failed(cr, "creating", status, body, error);
        return;
    }
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
        start_failed(cr, "starting", 0, NULL, "cannot send the request");
}

static int
launch(struct ty_runtime *rt, struct ty_replica *r, char *const env[], struct ty_error *err)
{
    struct container_rt *c = cast(rt);
    struct ctr_replica *cr = &c->reps[ty_runtime_replica_index(rt, r)];
    struct ty_docker_callbacks cb = {.on_done = on_create_done, .ctx = cr};
    _cleanup_free_ char *body = ctr_create_body(c, cr, env);
    _cleanup_free_ char *path = xasprintf("/containers/create?name=%s", cr->name);

    if (cr->reserve_fd >= 0) { /* the program binds the port once its container runs */
        close(cr->reserve_fd);
        cr->reserve_fd = -1;
    }
    return ty_docker_request(
        c->eng.api, "POST", path, body, NULL, TY_DOCKER_BUFFER, &cb, &cr->req, err);
}

static int
signal_replica(struct ty_runtime *rt, struct ty_replica *r, int sig, struct ty_error *err)
{
    struct container_rt *c = cast(rt);
    struct ctr_replica *cr = &c->reps[ty_runtime_replica_index(rt, r)];

    if (cr->reported)
        return 0;
    if (!cr->started) {
        cr->pending_signal = sig; /* applied when create/start completes */
        return 0;
    }
    send_kill(cr, sig);
    return 0;
}

static void destroy(struct ty_runtime *rt)
{
    struct container_rt *c = cast(rt);
    ctr_cleanup_now(c);
    ty_engine_close(&c->eng);
    for (size_t i = 0; i < c->n; i++) {
        free(c->reps[i].name);
        free(c->reps[i].id);
    }
    free(c->reps);
    free(c->network);
    free(c->gpu_locks);
    free(c->gpu_index);
    free(c);
}

/* ty_container_sweep's progress: it drives a loop of its own until done. */
struct sweep {
    bool done;
    int r;
    struct ty_error *err;
    struct ty_engine *eng;
};

static void sweep_gc_done(void *ctx, int removed)
{
    struct sweep *s = ctx;
    s->r = removed;
    s->done = true;
}

static void sweep_open_done(void *ctx, int r, const char *error, const char *started)
{
    struct sweep *s = ctx;
    if (r < 0) {
        s->r = ty_error_set(s->err, -r, "%s", error);
        s->done = true;
    } else if (ty_engine_collect_garbage(s->eng, sweep_gc_done, s) < 0) {
        s->done = true;
    }
}

int ty_container_sweep(struct ty_error *err)
{
    struct ty_engine eng = {0};
    struct ty_loop *loop = ty_loop_new();
    struct sweep s = {.err = err, .eng = &eng};
    int r;

    /* The loop is ours: running it here runs nobody else's callbacks. */
    r = ty_engine_open(&eng, loop, sweep_open_done, &s, err);
    while (r >= 0 && !s.done)
        r = ty_loop_run_once(loop);
    if (r >= 0)
        r = s.r;
    ty_engine_close(&eng);
    ty_loop_free(loop);
    return r;
}

const struct ty_runtime_ops ty_runtime_container = {
    .name = "container",
    .validate = ty_container_validate,
    .create = create,
    .prepare = ctr_prepare,
    .place = place,
    .launch = launch,
    .signal = signal_replica,
    .cleanup = ctr_cleanup,
    .destroy = destroy,
};
