/* SPDX-License-Identifier: Apache-2.0
 * bench-contained.h: the contained floor of the launch benchmarks: what the kernel charges for
 * containing replicas as the process runtime does (docs/internals/runtime.md), without
 * trainyard. A job's cgroup below this process's own, one cgroup per replica below it with
 * the limits of n1-standard-4 (4 vCPUs, 15 GiB), made with trainyard's own cgroup.h (every
 * hierarchy the runtime uses); each child enters its cgroup between fork and exec; all are
 * removed once the children are reaped. Header-only, as bench-stats.h. */
#ifndef TY_BENCH_CONTAINED_H
#define TY_BENCH_CONTAINED_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cgroup.h"
#include "error.h"

#define BENCH_CONTAINED_CPU_MILLIS 4000
#define BENCH_CONTAINED_MEM_BYTES  (15LL * 1024 * 1024 * 1024)

/* One run's cgroups: the job's and one per replica, with the replicas' open procs files. */
struct bench_contained {
    struct ty_cgroup *job;
    struct ty_cgroup **rep;
    int (*fds)[TY_CGROUP_MAX_DIRS];
    size_t *n_fds;
    int n;
};

static inline void bench_contained_die(const char *what, const struct ty_error *e)
{
    fprintf(stderr, "contained floor: %s: %s\n", what, e->msg);
    exit(1);
}

/* Make the job's cgroup (named after this process) for @n replicas. Exits on failure. */
static inline void bench_contained_begin(struct bench_contained *c, int n)
{
    struct ty_error e = {0};
    char name[64];

    snprintf(name, sizeof(name), "bench-contained-%d", (int)getpid());
    c->n = n;
    c->rep = calloc((size_t)n, sizeof(*c->rep));
    c->fds = calloc((size_t)n, sizeof(*c->fds));
    c->n_fds = calloc((size_t)n, sizeof(*c->n_fds));
    if (!c->rep || !c->fds || !c->n_fds)
        exit(1);
    if (ty_cgroup_new(name, &c->job, &e) < 0)
        bench_contained_die("making the job's cgroup", &e);
}

/* Make replica @i's cgroup with its limits and open its procs files (before its fork). */
static inline void bench_contained_replica(struct bench_contained *c, int i)
{
    struct ty_error e = {0};
    char name[32];
    int k;

    snprintf(name, sizeof(name), "replica-%d", i);
    if (ty_cgroup_new_child(c->job, name, &c->rep[i], &e) < 0)
        bench_contained_die("making a replica's cgroup", &e);
    if (ty_cgroup_set_limits(c->rep[i], BENCH_CONTAINED_CPU_MILLIS, BENCH_CONTAINED_MEM_BYTES, &e) <
        0)
        bench_contained_die("setting limits", &e);
    k = ty_cgroup_open_procs(c->rep[i], c->fds[i], &e);
    if (k < 0)
        bench_contained_die("opening the cgroup's tasks files", &e);
    c->n_fds[i] = (size_t)k;
}

/* In replica @i's child: enter its cgroup. Returns 0 or -errno. */
static inline int bench_contained_enter(const struct bench_contained *c, int i)
{
    return ty_cgroup_enter(c->fds[i], c->n_fds[i]);
}

/* In the parent after replica @i's fork: its procs files are not needed any more. */
static inline void bench_contained_forked(struct bench_contained *c, int i)
{
    for (size_t k = 0; k < c->n_fds[i]; k++)
        close(c->fds[i][k]);
}

/* Remove every replica's cgroup and the job's (all their processes reaped). */
static inline void bench_contained_end(struct bench_contained *c)
{
    for (int i = 0; i < c->n; i++) {
        (void)ty_cgroup_remove(c->rep[i]);
        ty_cgroup_free(c->rep[i]);
    }
    (void)ty_cgroup_remove(c->job);
    ty_cgroup_free(c->job);
    free(c->rep);
    free(c->fds);
    free(c->n_fds);
}

#endif
