/* SPDX-License-Identifier: Apache-2.0
 * container-prepare.c: the container runtime's prepare(), asynchronous on the loop (it
 * returns TY_RUNTIME_ASYNC; the `prepared` event ends it):
 *
 *   engine open (probe sockets, maybe start podman's service)
 *   -> garbage of killed runs removed -> [a retry: what the attempt before left removed]
 *   -> GPUs reserved -> every distinct image present (pulled when missing)
 *   -> the run's directories given to the images' user (container-user.c)
 *   -> the job's network created on a free subnet
 *
 * A retry of the job runs on a new runtime with the plan of the attempt before, whose
 * replicas still hold their host names (cmle-training-<role>-<hash>-<index>): the new run
 * takes that hash, so host, container and network names stay the same, and the subnet the
 * network of that hash had (remembered in this process) comes first, so the addresses stay
 * the same when it is free. Before creating anything it force-removes containers and the
 * network of those names: the old runtime's cleanup has ended, but it may have given up on
 * a removal.
 *
 * One step at a time, each a request or a timer on the loop, so a pull of minutes never
 * holds up the loop (the supervisor's cancel, other jobs' streams). cleanup() before the end
 * aborts the chain and no `prepared` follows. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "container-engine.h"
#include "container-internal.h"
#include "json.h"
#include "macro.h"

/* How long listing the networks or creating one may take (answered from the engine's
 * state; creating a bridge takes a moment on Podman with netavark). */
#define NETWORK_TIMEOUT_MS 30000L
/* Subnets tried when another job takes the one we chose between our look and our create. */
#define NETWORK_ATTEMPTS 8

/* ---- the subnets of recent runs, by hash (for retries in this process) ---- */

#define KEPT_SUBNETS 64

static struct {
    char hash[16];
    int index;
} kept[KEPT_SUBNETS];
static size_t kept_next;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

void ctr_subnet_remember(const char *hash, int index)
{
    size_t slot = KEPT_SUBNETS;

    (void)pthread_mutex_lock(&kept_lock);
    for (size_t i = 0; i < KEPT_SUBNETS; i++)
        if (strcmp(kept[i].hash, hash) == 0)
            slot = i;
    if (slot == KEPT_SUBNETS)
        slot = kept_next++ % KEPT_SUBNETS; /* the oldest goes */
    (void)snprintf(kept[slot].hash, sizeof(kept[slot].hash), "%s", hash);
    kept[slot].index = index;
    (void)pthread_mutex_unlock(&kept_lock);
}

int ctr_subnet_recall(const char *hash)
{
    int index = -1;

    (void)pthread_mutex_lock(&kept_lock);
    for (size_t i = 0; i < KEPT_SUBNETS; i++)
        if (kept[i].hash[0] && strcmp(kept[i].hash, hash) == 0)
            index = kept[i].index;
    (void)pthread_mutex_unlock(&kept_lock);
    return index;
}

/* The index of "198.A.B.0/24" in 198.18.0.0/15, or -1. */
static int subnet_index(const char *subnet)
{
    unsigned a, b;
    if (sscanf(subnet, "198.%u.%u.", &a, &b) != 2 || a < 18 || a > 19 || b > 255)
        return -1;
    return (int)((a - 18) * 256 + b);
}

/* The end of prepare: @r 0 or -errno with @msg. */
static void prepare_end(struct container_rt *c, int r, const char *msg)
{
    struct ty_runtime *rt = &c->base;

    c->preparing = false;
    if (rt->ev.prepared)
        rt->ev.prepared(rt->ev.ctx, r, r < 0 ? msg : NULL);
}

static void list_networks(struct container_rt *c);
static void create_network(struct container_rt *c);

static void
on_network_created(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;
    char msg[512], why[768];

    /* Docker: no /libpod (404), or no API version 4 (400: "client version 4.0.0 is too new") */
    if (!c->net_compat &&
        (status == 404 || (status == 400 && strstr(body ? body : "", "version")))) {
        c->net_compat = true;
        create_network(c);
        return;
    }
    if (status == 201 || status == 200) {
        c->network_created = true;
        ctr_subnet_remember(c->hash, subnet_index(c->subnet));
        prepare_end(c, 0, NULL);
        return;
    }
    if (status == 0)
        (void)snprintf(msg, sizeof(msg), "%s", error ? error : "no answer");
    else
        ty_docker_error_message(body, msg, sizeof(msg));
    /* Another job took the subnet between our look and our create: try another. */
    if ((strstr(msg, "already used") || strstr(msg, "overlap")) &&
        ++c->net_attempt < NETWORK_ATTEMPTS) {
        list_networks(c);
        return;
    }
    if (c->net_attempt >= NETWORK_ATTEMPTS)
        (void)snprintf(why,
                       sizeof(why),
                       "creating network %s failed: no free subnet after %d tries",
                       c->network,
                       NETWORK_ATTEMPTS);
    else
        (void)snprintf(
            why, sizeof(why), "creating network %s (%s) failed: %s", c->network, c->subnet, msg);
    prepare_end(c, c->net_attempt >= NETWORK_ATTEMPTS ? -EADDRINUSE : -EIO, why);
}

/* The job network's labels (a new object). */
static json_t *network_labels(const struct container_rt *c)
{
    return json_pack("{s:s,s:s,s:s}",
                     TY_LABEL_RUN,
                     c->token,
                     TY_LABEL_JOB,
                     c->base.plan->job->job_id,
                     TY_LABEL_OWNER,
                     c->owner);
}

/* The body creating the job's network, an Internal bridge on c->subnet (caller frees): for
 * Podman's own endpoint (POST /libpod/networks/create), or with @compat for Docker's (POST
 * /networks/create), for an engine without /libpod. Podman's is also without DNS: the compat
 * endpoint cannot turn it off, and aardvark-dns, listening on the network's gateway, forwards
 * every name it does not know to the host's resolvers, so a replica could send queries off
 * the machine (../shared/reference/docker-api-on-podman.md). Names in a job come from
 * /etc/hosts (ExtraHosts): nothing needs it. */
static char *network_body(struct container_rt *c, bool compat)
{
    _cleanup_free_ char *gw = xasprintf("%s1", c->prefix);
    _cleanup_json_ json_t *body = compat ? json_pack("{s:s,s:s,s:b,s:b,s:{s:s,s:[{s:s,s:s}]},s:o}",
                                                     "Name",
                                                     c->network,
                                                     "Driver",
                                                     "bridge",
                                                     "CheckDuplicate",
                                                     1,
                                                     "Internal",
                                                     1,
                                                     "IPAM",
                                                     "Driver",
                                                     "default",
                                                     "Config",
                                                     "Subnet",
                                                     c->subnet,
                                                     "Gateway",
                                                     gw,
                                                     "Labels",
                                                     network_labels(c))
                                         : json_pack("{s:s,s:s,s:b,s:b,s:[{s:s,s:s}],s:{s:s},s:o}",
                                                     "name",
                                                     c->network,
                                                     "driver",
                                                     "bridge",
                                                     "internal",
                                                     1,
                                                     "dns_enabled",
                                                     0,
                                                     "subnets",
                                                     "subnet",
                                                     c->subnet,
                                                     "gateway",
                                                     gw,
                                                     "options",
                                                     "isolate",
                                                     "true",
                                                     "labels",
                                                     network_labels(c));
    return ty_json_compact(body);
}

static void on_networks(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;
    int kept_index = c->reused ? ctr_subnet_recall(c->hash) : -1;
    unsigned seed =
        kept_index >= 0 ? (unsigned)kept_index : (unsigned)strtoul(c->hash + 6, NULL, 16);
    _cleanup_json_ json_t *nets = NULL;
    _cleanup_free_ char *why = NULL;
    struct ty_error e = {0};

    if (status != 200 || ty_json_parse(body, len, &nets, NULL) < 0) {
        why = status ? xasprintf("listing the engine's networks failed (HTTP %ld)", status)
                     : xasprintf("listing the engine's networks failed: %s", error);
        prepare_end(c, -EIO, why);
        return;
    }
    if (ty_engine_pick_subnet(nets,
                              /* each attempt elsewhere: 7 is prime to the 512 /24s */
                              seed + (unsigned)c->net_attempt * 7,
                              c->subnet,
                              sizeof(c->subnet),
                              c->prefix,
                              sizeof(c->prefix),
                              &e) < 0) {
        prepare_end(c, -e.code, ty_error_msg(&e));
        return;
    }
    create_network(c);
}

/* Create the job's network on c->subnet: Podman's endpoint first, Docker's when the engine
 * has none. */
static void create_network(struct container_rt *c)
{
    _cleanup_free_ char *text = network_body(c, c->net_compat);
    struct ty_error e = {0};

    if (ty_engine_call_start(&c->pcall,
                             c->eng.api,
                             c->base.loop,
                             "POST",
                             c->net_compat ? "/networks/create" : "/libpod/networks/create",
                             text,
                             NULL,
                             NETWORK_TIMEOUT_MS,
                             on_network_created,
                             c,
                             &e) < 0)
        prepare_end(c, e.code ? -e.code : -EIO, ty_error_msg(&e));
}

static void list_networks(struct container_rt *c)
{
    struct ty_error e = {0};

    if (ty_engine_call_start(&c->pcall,
                             c->eng.api,
                             c->base.loop,
                             "GET",
                             "/networks",
                             NULL,
                             NULL,
                             NETWORK_TIMEOUT_MS,
                             on_networks,
                             c,
                             &e) < 0)
        prepare_end(c, e.code ? -e.code : -EIO, ty_error_msg(&e));
}

static void next_image(struct container_rt *c);
static void after_users(struct container_rt *c);

static void on_image(void *ctx, int r, const char *error)
{
    struct container_rt *c = ctx;
    struct ty_runtime *rt = &c->base;

    if (r < 0) {
        _cleanup_free_ char *msg =
            xasprintf("replica %s: %s", rt->plan->replicas[c->next_image].display_name, error);
        prepare_end(c, r, msg);
        return;
    }
    c->next_image++;
    next_image(c);
}

/* Every distinct image, once, in replica order (an error names the first replica that uses
 * it); then the images' user. */
static void next_image(struct container_rt *c)
{
    struct ty_runtime *rt = &c->base;
    struct ty_error e = {0};

    for (; c->next_image < c->n; c->next_image++) {
        const char *image = rt->plan->replicas[c->next_image].image;
        bool seen = false;
        for (size_t k = 0; k < c->next_image; k++)
            seen |= strcmp(rt->plan->replicas[k].image, image) == 0;
        if (seen)
            continue;
        if (ty_engine_ensure_image(&c->eng, image, PULL_TIMEOUT_MS, on_image, c, &e) < 0) {
            _cleanup_free_ char *msg =
                xasprintf("replica %s: %s", rt->plan->replicas[c->next_image].display_name, e.msg);
            prepare_end(c, e.code ? -e.code : -EIO, msg);
        }
        return;
    }
    ctr_users_start(c, after_users);
}

/* The images' user has the run's directories: the network (none with host networking). */
static void after_users(struct container_rt *c)
{
    if (c->base.plan->host_network) {
        prepare_end(c, 0, NULL);
        return;
    }
    c->net_attempt = 0;
    list_networks(c);
}

/* Sizes, GPUs, then the images. */
static void after_garbage(struct container_rt *c)
{
    struct ty_error e = {0};

    ctr_size_roles(c);
    if (ctr_check_gpus(c, &e) < 0) {
        prepare_end(c, -e.code, ty_error_msg(&e));
        return;
    }
    c->next_image = 0;
    next_image(c);
}

static bool removed_something(long status)
{
    return status == 204 || status == 200;
}

static void
on_old_network_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;

    if (removed_something(status))
        c->cleared++;
    if (c->cleared > 0)
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "Removed %d container(s)/network(s) that the attempt before left.",
                          c->cleared);
    after_garbage(c);
}

/* The last container removal ended: the network (forced: whatever is still attached). */
static void clear_network(struct container_rt *c)
{
    _cleanup_free_ char *path = NULL;

    if (c->base.plan->host_network) {
        on_old_network_removed(c, 404, NULL, 0, NULL);
        return;
    }
    path = xasprintf("/networks/%s?force=1", c->network);
    if (ty_engine_call_start(&c->pcall,
                             c->eng.api,
                             c->base.loop,
                             "DELETE",
                             path,
                             NULL,
                             NULL,
                             NETWORK_TIMEOUT_MS,
                             on_old_network_removed,
                             c,
                             NULL) < 0)
        on_old_network_removed(c, 0, NULL, 0, NULL);
}

static void
on_old_container_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ctr_replica *cr = ctx;
    struct container_rt *c = cr->rt;

    if (removed_something(status))
        c->cleared++;
    if (--c->clearing == 0)
        clear_network(c);
}

/* A retry: force-remove the containers and the network of this run's names, in case the
 * attempt before could not (404 is the rule). */
static void clear_leftovers(struct container_rt *c)
{
    c->clearing = 1; /* until every removal has started */
    c->cleared = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (ctr_remove_start(&c->reps[i], on_old_container_removed, NULL) == 0)
            c->clearing++;
    }
    if (--c->clearing == 0)
        clear_network(c);
}

static void on_garbage(void *ctx, int removed)
{
    struct container_rt *c = ctx;

    if (removed > 0)
        ty_runtime_notice(&c->base,
                          TY_SEV_INFO,
                          "Removed %d container(s)/network(s) left by trainyard runs that no "
                          "longer exist.",
                          removed);
    if (c->reused)
        clear_leftovers(c);
    else
        after_garbage(c);
}

static void on_engine(void *ctx, int r, const char *error, const char *started)
{
    struct container_rt *c = ctx;

    if (r < 0) {
        prepare_end(c, r, error);
        return;
    }
    if (started)
        ty_runtime_notice(&c->base, TY_SEV_INFO, "%s", started);
    /* Housekeeping: when it cannot even begin, go on as if nothing was left. */
    if (ty_engine_collect_garbage(&c->eng, on_garbage, c) < 0)
        on_garbage(c, 0);
}

/* 10 hex digits (FNV-1a) of the job id and run token: unique names per run. */
static void make_hash(struct container_rt *c)
{
    uint64_t h = 1469598103934665603ULL; /* the FNV-1a 64-bit offset basis */
    const char *parts[] = {c->base.plan->job->job_id, c->token};
    for (size_t i = 0; i < 2; i++)
        for (const char *p = parts[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL; /* the FNV 64-bit prime */
    (void)snprintf(c->hash, sizeof(c->hash), "%010llx", (unsigned long long)(h & 0xffffffffffULL));
}

/* The hash in @host when it is the name place() gives @r (cmle-training-<role>-<hash>-<index>),
 * into @hash (11 bytes). */
static bool host_hash(const struct ty_replica *r, const char *host, char *hash)
{
    _cleanup_free_ char *prefix = xasprintf("cmle-training-%s-", ty_role_name(r->role));
    _cleanup_free_ char *suffix = xasprintf("-%d", r->index);
    size_t pl = strlen(prefix);

    if (!host || strncmp(host, prefix, pl) != 0 || strlen(host) != pl + 10 + strlen(suffix) ||
        strcmp(host + pl + 10, suffix) != 0)
        return false;
    for (size_t i = 0; i < 10; i++) {
        char x = host[pl + i];
        if (!((x >= '0' && x <= '9') || (x >= 'a' && x <= 'f')))
            return false;
    }
    memcpy(hash, host + pl, 10);
    hash[10] = '\0';
    return true;
}

/* A retry: every replica holds a host name of ours with one hash; take it. */
static bool reuse_hash(struct container_rt *c)
{
    const struct ty_cluster_plan *plan = c->base.plan;
    char first[16], h[16];

    if (plan->host_network || plan->n_replicas == 0)
        return false;
    for (size_t i = 0; i < plan->n_replicas; i++) {
        if (!host_hash(&plan->replicas[i], plan->replicas[i].host, i ? h : first))
            return false;
        if (i && strcmp(h, first) != 0)
            return false;
    }
    (void)snprintf(c->hash, sizeof(c->hash), "%s", first);
    return true;
}

int ctr_prepare(struct ty_runtime *rt, struct ty_error *err)
{
    struct container_rt *c = (struct container_rt *)rt;
    int r;

    c->n = rt->plan->n_replicas;
    c->reps = xcalloc(c->n ? c->n : 1, sizeof(*c->reps));
    c->reused = reuse_hash(c);
    if (!c->reused)
        make_hash(c);
    if (!rt->plan->host_network)
        c->network = xasprintf("trainyard-%s", c->hash);
    ty_engine_owner_id(c->owner, sizeof(c->owner));
    for (size_t i = 0; i < c->n; i++) {
        struct ctr_replica *cr = &c->reps[i];
        struct ty_replica *rep = &rt->plan->replicas[i];
        cr->rt = c;
        cr->r = rep;
        cr->reserve_fd = -1;
        ctr_oom_watch_init(&cr->oom);
        cr->name = xasprintf("trainyard-%s-%s", c->hash, rep->task_name);
    }
    r = ty_container_validate(rt->plan->job, err);
    if (r < 0 || rt->dry_run)
        return r;
    r = ty_engine_open(&c->eng, rt->loop, on_engine, c, err);
    if (r < 0)
        return r;
    c->preparing = true;
    return TY_RUNTIME_ASYNC;
}

void ctr_prepare_abort(struct container_rt *c)
{
    if (!c->preparing)
        return;
    c->preparing = false;
    if (!c->users.creating) /* a probe's create is let finish: ctr_users.creating */
        ty_engine_call_cancel(&c->pcall);
    for (size_t i = 0; i < c->n; i++)
        ty_engine_call_cancel(&c->reps[i].rm_call);
    ty_engine_chores_cancel(&c->eng);
    if (c->eng.opening)
        ty_engine_close(&c->eng); /* not open yet: nothing to talk to */
}
