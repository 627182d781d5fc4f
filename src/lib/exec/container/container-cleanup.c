/* SPDX-License-Identifier: Apache-2.0
 * container-cleanup.c: the container runtime's cleanup: cancel what is in flight, then
 * force-remove every container by name (also those whose create was still in flight), in
 * parallel, then the job's network (and force-remove it when something is still attached).
 *
 * cleanup() does this asynchronously on the runtime's loop: each removal is a request with a
 * deadline kept by a loop timer (ty_engine_call_*), and `cleaned` follows the last one. So a
 * slow engine (Podman unmounting storage) never holds up the loop: other runs' events and a
 * service's cancels go on meanwhile. destroy() of a runtime whose cleanup has not ended does
 * it all again synchronously, with a blocking batch on a private curl multi handle
 * (docker-batch.c) that never runs the caller's loop: removals already done answer 404. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "container-internal.h"
#include "json.h"
#include "macro.h"
#include "ports.h"

/* Removals run in parallel, each within CTR_REMOVE_TIMEOUT_MS, and the network's within
 * NETWORK_REMOVE_TIMEOUT_MS (answered at once unless the engine hangs). Teardown must end,
 * so it gives up then, with a notice; the next run's garbage collection removes what is
 * left. */
#define REMOVE_TIMEOUT_MS         CTR_REMOVE_TIMEOUT_MS
#define NETWORK_REMOVE_TIMEOUT_MS 30000L

static bool removed(long status)
{
    return status == 204 || status == 200 || status == 404;
}

/* Stop every replica's requests and timers, and the events stream: nothing more is reported for
 * them. */
static void cancel_replicas(struct container_rt *c)
{
    ctr_events_stop(c);
    ctr_exitwatch_stop(c);
    for (size_t i = 0; i < c->n; i++)
        ctr_run_cancel(&c->reps[i]);
}

/* The end of every cleanup: line buffers and port reservations are released. */
static void release(struct container_rt *c)
{
    for (size_t i = 0; i < c->n; i++) {
        ty_linesplit_release(&c->reps[i].out_ls);
        ty_linesplit_release(&c->reps[i].err_ls);
        ty_port_release(c->reps[i].reserve_fd);
        c->reps[i].reserve_fd = -1;
    }
    c->cleaning = false;
    c->cleaned = true;
}

static void
remove_failed(struct container_rt *c, size_t i, long status, const char *body, const char *error)
{
    char msg[200];
    if (status)
        ty_docker_error_message(body, msg, sizeof(msg));
    else
        (void)snprintf(msg, sizeof(msg), "%s", error ? error : "no answer");
    ty_runtime_notice(
        &c->base, TY_SEV_WARNING, "removing container %s failed: %s", c->reps[i].name, msg);
}

/* ---- on the loop ---- */

static void
network_removed(void *ctx, long status, const char *body, size_t len, const char *error);

/* Are containers trainyard did not make attached to the network (@body: its inspection)?
 * Their names into @names. A user's debug container attached to the job's network is the
 * user's: the network is left to it, never force-removed with it. */
static bool
foreign_attached(struct container_rt *c, const char *body, size_t len, char *names, size_t n)
{
    _cleanup_json_ json_t *j = NULL;
    _cleanup_free_ char *ours = xasprintf("trainyard-%s-", c->hash);
    const char *id;
    json_t *v;
    size_t off = 0;

    if (n)
        names[0] = '\0';
    if (ty_json_parse(body, len, &j, NULL) < 0)
        return false;
    json_object_foreach(json_object_get(j, "Containers"), id, v)
    {
        const char *name = ty_json_str(v, "Name");
        if (name && strncmp(name, ours, strlen(ours)) == 0)
            continue;
        int k =
            snprintf(names + off, off < n ? n - off : 0, "%s%s", off ? ", " : "", name ? name : id);
        off += k > 0 ? (size_t)k : 0;
    }
    return off > 0;
}

/* The network is left: @names are attached to it. */
static void leave_network(struct container_rt *c, const char *names)
{
    ty_runtime_notice(&c->base,
                      TY_SEV_WARNING,
                      "the network %s is left: containers trainyard did not make are attached to "
                      "it (%s); remove them, then it (podman network rm %s)",
                      c->network,
                      names,
                      c->network);
    c->network_created = false;
}

/* The end of the asynchronous cleanup. */
static void clean_done(struct container_rt *c)
{
    release(c);
    ty_runtime_cleaned(&c->base); /* last: the run may be freed there */
}

/* Start removing the network (@force: also what is still attached). Returns true when the
 * removal is under way (network_removed follows), false when there is nothing (more) to do. */
static bool remove_network(struct container_rt *c, bool force)
{
    _cleanup_free_ char *path = NULL;
    struct ty_error e = {0};

    if (!c->network_created)
        return false;
    c->network_forced = force;
    path = xasprintf("/networks/%s%s", c->network, force ? "?force=1" : "");
    if (ty_engine_call_start(&c->net_call,
                             c->eng.api,
                             c->base.loop,
                             "DELETE",
                             path,
                             NULL,
                             NULL,
                             NETWORK_REMOVE_TIMEOUT_MS,
                             network_removed,
                             c,
                             &e) < 0) {
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "removing network %s failed: %s",
                          c->network,
                          ty_error_msg(&e));
        c->network_created = false;
        return false;
    }
    return true;
}

/* The network inspected after a plain removal failed: something is still attached. Podman's
 * force removes it with the network when it is ours (a replica whose removal failed); another's
 * container keeps it. */
static void
network_inspected(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;
    char names[512];

    if (status == 200 && foreign_attached(c, body, len, names, sizeof(names))) {
        leave_network(c, names);
        clean_done(c);
    } else if (!remove_network(c, true)) {
        clean_done(c);
    }
}

static void network_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;

    if (!removed(status) && ctr_engine_gone(c, status, error) && ctr_engine_reopen(c))
        return; /* ctr_cleanup_engine_back starts over */
    if (!removed(status) && !c->network_forced) {
        _cleanup_free_ char *path = xasprintf("/networks/%s", c->network);
        if (ty_engine_call_start(&c->net_call,
                                 c->eng.api,
                                 c->base.loop,
                                 "GET",
                                 path,
                                 NULL,
                                 NULL,
                                 NETWORK_REMOVE_TIMEOUT_MS,
                                 network_inspected,
                                 c,
                                 NULL) < 0)
            network_inspected(c, 0, NULL, 0, NULL);
        return;
    }
    if (!removed(status) && status)
        ty_runtime_notice(
            &c->base, TY_SEV_WARNING, "removing network %s failed (HTTP %ld)", c->network, status);
    else if (!removed(status))
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "removing network %s failed: %s",
                          c->network,
                          error ? error : "no answer");
    c->network_created = false;
    clean_done(c);
}

/* One container removal ended: the network follows the last. */
static void
container_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    struct container_rt *c = cr->rt;

    if (!removed(status) && ctr_engine_gone(c, status, error) && ctr_engine_reopen(c))
        return; /* ctr_cleanup_engine_back starts over */
    if (!removed(status))
        remove_failed(c, (size_t)(cr - c->reps), status, body, error);
    if (--c->removing == 0 && !remove_network(c, false))
        clean_done(c);
}

/* The container prepare made to read an image's accounts (container-user.c) is removed. */
static void probe_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;

    if (!removed(status) && ctr_engine_gone(c, status, error) && ctr_engine_reopen(c))
        return; /* ctr_cleanup_engine_back starts over */
    if (!removed(status))
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "removing container %s failed (HTTP %ld)",
                          c->users.probe_id,
                          status);
    free(c->users.probe_id);
    c->users.probe_id = NULL;
    if (--c->removing == 0 && !remove_network(c, false))
        clean_done(c);
}

void ctr_cleanup_probe_answered(struct container_rt *c)
{
    struct ty_error e = {0};

    if (ctr_container_remove_start(c, &c->users.rm, c->users.probe_id, probe_removed, c, &e) < 0)
        probe_removed(c, 0, NULL, 0, ty_error_msg(&e));
}

/* Start removing every container (also those whose create was still in flight, and a probe
 * prepare left, once its create in flight is answered), then the network. Returns true when under
 * way (`cleaned` follows), false when it ended at once. */
static bool start_removals(struct container_rt *c)
{
    c->removing = 1; /* until every removal has started: none may end the batch early */
    for (size_t i = 0; i < c->n; i++) {
        struct ty_error e = {0};
        if (ctr_remove_start(&c->reps[i], container_removed, &e) < 0)
            remove_failed(c, i, 0, NULL, ty_error_msg(&e));
        else
            c->removing++;
    }
    if (c->users.probe_id && c->users.creating) { /* removed once its create is answered */
        c->users.remove_when_created = true;
        c->removing++;
    } else if (c->users.probe_id &&
               ctr_container_remove_start(
                   c, &c->users.rm, c->users.probe_id, probe_removed, c, NULL) == 0) {
        c->removing++;
    }
    /* Callbacks run later on the loop, never from within a start: the last one to end goes
     * on with the network, or this does when none started. */
    return --c->removing > 0 || remove_network(c, false);
}

void ctr_cleanup_engine_back(struct container_rt *c, int r)
{
    if (r < 0 || !c->eng.api) {
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "The containers and the network of this run could not be removed; "
                          "the next container job on this machine removes them.");
        clean_done(c);
        return;
    }
    if (!start_removals(c))
        clean_done(c);
}

int ctr_cleanup(struct ty_runtime *rt)
{
    struct container_rt *c = (struct container_rt *)rt;

    if (c->cleaned || !c->reps)
        return 0;
    if (c->cleaning)
        return TY_RUNTIME_ASYNC;
    ctr_prepare_abort(c);
    if (c->reopening) { /* the engine went away: the removals wait for it */
        cancel_replicas(c);
        c->cleaning = true;
        c->cleanup_waiting = true;
        return TY_RUNTIME_ASYNC;
    }
    if (!c->eng.api) {
        release(c);
        return 0;
    }
    cancel_replicas(c);
    c->cleaning = true;
    if (!start_removals(c)) {
        release(c);
        return 0;
    }
    return TY_RUNTIME_ASYNC;
}

/* ---- in destroy: synchronous ---- */

/* Remove the network now, forced when the plain removal fails. */
static void remove_network_now(struct container_rt *c)
{
    _cleanup_free_ char *path = xasprintf("/networks/%s", c->network);
    struct ty_docker_call del = {.method = "DELETE", .path = path};

    (void)ty_docker_call(c->eng.api, &del, NETWORK_REMOVE_TIMEOUT_MS, NULL);
    if (!removed(del.status)) {
        struct ty_docker_call get = {.method = "GET", .path = path};
        char names[512];
        bool foreign;
        (void)ty_docker_call(c->eng.api, &get, NETWORK_REMOVE_TIMEOUT_MS, NULL);
        foreign = get.status == 200 &&
                  foreign_attached(c, get.response, get.response_len, names, sizeof(names));
        ty_docker_batch_release(&get, 1);
        if (foreign) {
            leave_network(c, names);
            ty_docker_batch_release(&del, 1);
            return;
        }
    }
    if (!removed(del.status)) {
        _cleanup_free_ char *fpath = xasprintf("/networks/%s?force=1", c->network);
        struct ty_docker_call force = {.method = "DELETE", .path = fpath};
        (void)ty_docker_call(c->eng.api, &force, NETWORK_REMOVE_TIMEOUT_MS, NULL);
        if (!removed(force.status))
            ty_runtime_notice(&c->base,
                              TY_SEV_WARNING,
                              "removing network %s failed (HTTP %ld)",
                              c->network,
                              force.status);
        ty_docker_batch_release(&force, 1);
    }
    ty_docker_batch_release(&del, 1);
    c->network_created = false;
}

void ctr_cleanup_now(struct container_rt *c)
{
    struct ty_docker_call *calls;
    size_t n;

    if (c->cleaned || !c->reps)
        return;
    ctr_prepare_abort(c);
    /* destroy cannot wait for a probe's create on the loop: cut short after all */
    ty_engine_call_cancel(&c->pcall);
    c->users.creating = c->users.remove_when_created = false;
    if (!c->eng.api) {
        release(c);
        return;
    }
    cancel_replicas(c);
    for (size_t i = 0; i < c->n; i++)
        ty_engine_call_cancel(&c->reps[i].rm_call);
    ty_engine_call_cancel(&c->net_call);
    ty_engine_call_cancel(&c->users.rm);
    calls = xcalloc(c->n + 1, sizeof(*calls));
    for (size_t i = 0; i < c->n; i++) {
        calls[i].method = "DELETE";
        calls[i].path = xasprintf("/containers/%s?force=1&v=1", c->reps[i].name);
    }
    n = c->n;
    if (c->users.probe_id) { /* the probe prepare left (container-user.c) */
        calls[n].method = "DELETE";
        calls[n++].path = xasprintf("/containers/%s?force=1&v=1", c->users.probe_id);
    }
    (void)ty_docker_batch_run(c->eng.api, calls, n, REMOVE_TIMEOUT_MS, NULL);
    for (size_t i = 0; i < n; i++) {
        if (i < c->n && !removed(calls[i].status))
            remove_failed(c, i, calls[i].status, calls[i].response, calls[i].error);
        free((char *)calls[i].path);
    }
    ty_docker_batch_release(calls, n);
    free(calls);
    free(c->users.probe_id);
    c->users.probe_id = NULL;
    if (c->network_created)
        remove_network_now(c);
    release(c);
}
