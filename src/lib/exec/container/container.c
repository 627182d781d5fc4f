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
 * Per replica, asynchronously on the loop (container-run.c): create -> start -> (started)
 * -> logs follow + wait -> inspect -> (exited); the job's one events stream (container-
 * events.c) tells of a container's end as soon as the engine records it, and the wait stays
 * as the fallback. A restart in place replaces the container by an identical one. Exit status 137
 * is out of memory only when the engine or the kernel recorded an OOM kill (container-oom.c). A
 * retry of the job (a new runtime on the same plan) keeps the host names and, when it can, the
 * addresses (container-prepare.c).
 *
 * Teardown: kill with the requested signals, then force-remove containers in parallel, then
 * the network, asynchronously (container-cleanup.c). Containers and networks carry labels
 * naming the owning trainyard process, so a later run removes what a killed one left
 * (container-engine.c). */
#include "container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

/* Reaching the engine again: at most this many times per run; each time tried every
 * ENGINE_RETRY_USEC for ENGINE_BACK_USEC (a `systemctl restart podman`, or dockerd with
 * live-restore, is back within seconds) before the run gives up on it. */
#define MAX_REOPENS       3
#define ENGINE_RETRY_USEC (1000 * INT64_C(1000))
#define ENGINE_BACK_USEC  (30 * INT64_C(1000000))

static int create(struct ty_runtime **ret, struct ty_error *err)
{
    struct container_rt *c = xcalloc(1, sizeof(*c));
    c->engine_wait_usec = ENGINE_BACK_USEC;
    unsigned long long seed = (unsigned long long)ty_now_usec() ^ (unsigned long long)getpid();
    c->exits.fd = -1;
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
        free(cr->r->ip);
        cr->r->ip = NULL;
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
    for (size_t i = 0; i < c->n; i++) {
        (void)snprintf(c->reps[i].ip, sizeof(c->reps[i].ip), "%s%zu", c->prefix, i + 2);
        free(c->reps[i].r->ip);
        c->reps[i].r->ip = xstrdup(c->reps[i].ip); /* DMLC_PS_ROOT_URI wants an address */
    }
    return 0;
}

/* ---- the engine going away under a run ---- */

/* Does nothing listen on our own service's socket any more (a connection to it refused, or
 * the socket gone)? */
static bool service_not_listening(const struct container_rt *c)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd, r;

    if (!c->eng.socket || strlen(c->eng.socket) >= sizeof(a.sun_path))
        return false;
    memcpy(a.sun_path, c->eng.socket, strlen(c->eng.socket) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return false;
    r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? errno : 0;
    close(fd);
    return r == ECONNREFUSED || r == ENOENT;
}

bool ctr_engine_gone(struct container_rt *c, long status, const char *error)
{
    struct pollfd p = {.fd = c->eng.service_pidfd, .events = POLLIN};
    bool no_connect = error && strncmp(error, "cannot connect to ", 18) == 0;

    if (status != 0 || !error)
        return false;
    /* Our own service: once it has ended (its pidfd is readable; closing it then does not
     * wait), or once nothing listens on its socket: a killed process closes its sockets
     * before its pidfd says it ended, and a replica started in that moment failed its job
     * (t4040, once); one alive but not listening is no use either. Closing it waits for its
     * end (SERVICE_STOP_MS at most). A full backlog (EAGAIN) is not gone. A request cut off
     * on its connection (reset: the service killed while it answered a replica's start, so
     * that job failed too, t4040 once more) is the service's going when it is not listening
     * any more either. Another engine: only a connection it refuses. */
    if (c->eng.service_pid > 0)
        return (c->eng.service_pidfd >= 0 && poll(&p, 1, 0) == 1) ||
               (no_connect && strstr(error, strerror(ECONNREFUSED)) != NULL) ||
               service_not_listening(c);
    return no_connect;
}

static void on_engine_back(void *ctx, int r, const char *error, const char *started);

static void on_reopen_timer(struct ty_loop *loop, void *data)
{
    struct container_rt *c = data;
    struct ty_error e = {0};
    int r;

    c->reopen_timer = 0;
    ty_engine_close(&c->eng);
    c->eng = (struct ty_engine){.service_pidfd = -1};
    r = ty_engine_open(&c->eng, c->base.loop, on_engine_back, c, &e);
    if (r < 0)
        on_engine_back(c, r, ty_error_msg(&e), NULL);
}

static void on_engine_back(void *ctx, int r, const char *error, const char *started)
{
    struct container_rt *c = ctx;

    if (r < 0 && ty_mono_usec() - c->reopen_since < c->engine_wait_usec) {
        c->reopen_timer =
            ty_loop_add_timer(c->base.loop, ty_mono_usec() + ENGINE_RETRY_USEC, on_reopen_timer, c);
        return; /* still reopening: the replicas and the cleanup wait */
    }
    c->reopening = false;
    if (r >= 0 && started)
        ty_runtime_notice(&c->base, TY_SEV_INFO, "%s", started);
    if (r < 0)
        ty_runtime_notice(
            &c->base, TY_SEV_WARNING, "The container engine could not be reached again: %s", error);
    if (r >= 0 && !c->cleaning)
        ctr_events_start(c);
    /* A report below may begin the cleanup, which stops the others (await_engine). */
    for (size_t i = 0; i < c->n; i++) {
        struct ctr_replica *cr = &c->reps[i];
        if (!cr->await_engine)
            continue;
        cr->await_engine = false;
        if (r < 0)
            ctr_run_start_failed(cr, "reaching the engine for", 0, NULL, error);
        else
            ctr_run_resume(cr);
    }
    if (c->cleanup_waiting) {
        c->cleanup_waiting = false;
        ctr_cleanup_engine_back(c, r);
    }
}

bool ctr_engine_reopen(struct container_rt *c)
{
    struct ty_error e = {0};
    bool *lost;
    int r;

    if (c->reopening)
        return true;
    if (c->reopens >= MAX_REOPENS)
        return false;
    c->reopens++;
    c->reopening = true;
    c->reopen_since = ty_mono_usec();
    ty_runtime_notice(&c->base,
                      TY_SEV_WARNING,
                      "The container engine at %s went away; reaching it again.",
                      c->eng.socket ? c->eng.socket : "?");
    /* Nothing may stay in flight on the old client: it is freed without callbacks. */
    lost = xcalloc(c->n ? c->n : 1, sizeof(*lost));
    for (size_t i = 0; i < c->n; i++) {
        struct ctr_replica *cr = &c->reps[i];
        bool under_way = cr->runs > 0 && !cr->reported && !c->cleaning;
        bool starting = under_way && (!cr->started || cr->await_engine);
        ctr_run_cancel(cr);
        if (starting && !cr->await_engine)
            ty_runtime_notice(&c->base,
                              TY_SEV_INFO,
                              "The replica %s was being started: it is started again once the "
                              "engine is back.",
                              cr->r->display_name);
        if (starting)
            cr->await_engine = true;
        else if (under_way)
            lost[i] = true;
    }
    if (c->cleaning) { /* it starts over once the engine is back */
        for (size_t i = 0; i < c->n; i++)
            ty_engine_call_cancel(&c->reps[i].rm_call);
        ty_engine_call_cancel(&c->net_call);
        ty_engine_call_cancel(&c->users.rm);
        c->removing = 0;
        c->cleanup_waiting = true;
    }
    ctr_events_stop(c); /* opened again once the engine is back */
    ty_engine_close(&c->eng);
    c->eng = (struct ty_engine){.service_pidfd = -1};
    r = ty_engine_open(&c->eng, c->base.loop, on_engine_back, c, &e);
    /* The running ones are lost: the supervisor restarts them in place (their launch waits
     * for the engine), or ends the run. */
    for (size_t i = 0; i < c->n; i++)
        if (lost[i])
            ctr_run_lost(&c->reps[i], "the engine went away");
    free(lost);
    if (r < 0)
        on_engine_back(c, r, ty_error_msg(&e), NULL);
    return true;
}

static int
launch(struct ty_runtime *rt, struct ty_replica *r, char *const env[], struct ty_error *err)
{
    struct container_rt *c = cast(rt);
    return ctr_run_launch(&c->reps[ty_runtime_replica_index(rt, r)], env, err);
}

static int
signal_replica(struct ty_runtime *rt, struct ty_replica *r, int sig, struct ty_error *err)
{
    struct container_rt *c = cast(rt);
    ctr_run_signal(&c->reps[ty_runtime_replica_index(rt, r)], sig);
    return 0;
}

static void destroy(struct ty_runtime *rt)
{
    struct container_rt *c = cast(rt);
    if (c->reopen_timer)
        ty_loop_cancel_timer(c->base.loop, c->reopen_timer);
    ctr_cleanup_now(c);
    ty_engine_call_cancel(&c->users.rm); /* an async cleanup's, given up on */
    ctr_events_stop(c);
    ctr_exitwatch_stop(c);
    ty_engine_close(&c->eng);
    for (size_t i = 0; i < c->n; i++)
        ctr_run_free(&c->reps[i]);
    free(c->reps);
    free(c->network);
    free(c->users.probe_id);
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
