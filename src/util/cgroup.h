/* SPDX-License-Identifier: Apache-2.0
 * cgroup.h: control groups for a job's processes: make one below this process's own cgroup,
 * put processes in it, limit its CPU and memory, learn whether its memory limit killed
 * something, and end everything in it (descendants included) before removing it.
 *
 * Both cgroup versions are handled:
 *   v2 (a cgroup2 mount whose cgroup of this process offers controllers): one directory;
 *      limits with cpu.max, memory.max (and memory.swap.max 0); the end with cgroup.kill
 *      (Linux 5.14), else cgroup.freeze + SIGKILL to every process + thaw.
 *   v1 (a freezer hierarchy mounted): one directory in the freezer hierarchy and in each of
 *      memory and cpu that is mounted; limits with cpu.cfs_quota_us/cfs_period_us,
 *      memory.limit_in_bytes (and memory.memsw.limit_in_bytes, so the limit includes swap);
 *      the end with freezer.state FROZEN + SIGKILL to every process + THAWED, so nothing can
 *      fork between the listing and the kill.
 *   A cgroup2 mount without controllers (a v1 "hybrid" host without a freezer) is used as v2
 *   without limits.
 * A cgroup is made below this process's own cgroup of each hierarchy (so the limits of the
 * cgroup trainyard runs in still hold for its jobs) and stays owned by the user who made it.
 *
 * Library code: nothing here sleeps; waiting until a cgroup is empty is the caller's. */
#ifndef TY_CGROUP_H
#define TY_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* At most this many directories make one cgroup (v1: freezer, memory, cpu). */
#define TY_CGROUP_MAX_DIRS 3

struct ty_cgroup;

/* Make the cgroup @name (one path component: no '/', not "." or "..") below this process's
 * own cgroup, in every hierarchy used. An existing one of that name is used as it is.
 * Returns 0, or -errno with @err saying why none could be made (no cgroup filesystem, no
 * permission: a non-root user on v1, a v2 subtree not delegated to this user); nothing is
 * left behind then. */
int ty_cgroup_new(const char *name, struct ty_cgroup **ret, struct ty_error *err);

/* Make the cgroup @name below @parent (same rules). */
int ty_cgroup_new_child(const struct ty_cgroup *parent,
                        const char *name,
                        struct ty_cgroup **ret,
                        struct ty_error *err);

/* 1 or 2. */
int ty_cgroup_version(const struct ty_cgroup *cg);

/* The cgroup's directory (v1: the freezer hierarchy's), for messages. */
const char *ty_cgroup_path(const struct ty_cgroup *cg);

/* The directory of @cg in the hierarchy of v1 controller @ctrl ("memory", "cpu",
 * "freezer"; v2: the one directory whatever @ctrl), or NULL when that one is not used. */
const char *ty_cgroup_dir(const struct ty_cgroup *cg, const char *ctrl);

/* The directories of @cg, into @dirs, and the v1 controller of each, into @ctrls ("" on v2):
 * what ty_cgroup_from_dirs takes to rebuild it in another process (the guardian program).
 * Returns how many (at most TY_CGROUP_MAX_DIRS); the strings are @cg's. */
size_t ty_cgroup_dirs(const struct ty_cgroup *cg,
                      const char *ctrls[TY_CGROUP_MAX_DIRS],
                      const char *dirs[TY_CGROUP_MAX_DIRS]);

/* A cgroup of @version (1 or 2) made of @n existing directories @dirs, with @ctrls as
 * ty_cgroup_dirs gave them (v1: controllers of this file, the freezer first; v2: one
 * directory, controller ""), for a process that did not make it. Nothing is made or looked at
 * on disk; the cgroup is not new (ty_cgroup_is_new). Returns 0, or -EINVAL with @err. */
int ty_cgroup_from_dirs(int version,
                        const char *const *ctrls,
                        const char *const *dirs,
                        size_t n,
                        struct ty_cgroup **ret,
                        struct ty_error *err);

/* Limit the cgroup to @cpu_millis thousandths of a CPU (0: no CPU limit) and @mem_bytes of
 * memory, swap included (0: no memory limit). Returns 0, or -EOPNOTSUPP with @err naming what
 * this host cannot limit (no such controller), or -errno of a write that failed. */
int ty_cgroup_set_limits(const struct ty_cgroup *cg,
                         int64_t cpu_millis,
                         int64_t mem_bytes,
                         struct ty_error *err);

/* How many processes the kernel killed in this cgroup for its memory limit so far (v1
 * memory.oom_control, v2 memory.events: oom_kill); -1 when it cannot tell. */
int64_t ty_cgroup_oom_kills(const struct ty_cgroup *cg);

/* Open the file that moves a process into each directory of @cg for writing (close-on-exec),
 * into @fds (TY_CGROUP_MAX_DIRS of them): cgroup.procs on v2, v1's tasks (it moves the
 * writing thread alone, and where the kernel lets a thread that moves itself skip the lock
 * cgroup.procs takes (this host's 6.18 does), without waiting for an RCU grace period: so
 * only for a process of one thread). Returns how many, or -errno with @err. For a
 * process about to be forked: it enters the cgroup with ty_cgroup_enter (then the caller
 * closes the fds). */
int ty_cgroup_open_procs(const struct ty_cgroup *cg,
                         int fds[TY_CGROUP_MAX_DIRS],
                         struct ty_error *err);

/* Move the calling process, of a single thread, into the cgroup whose files
 * ty_cgroup_open_procs opened into @fds. Async-signal-safe (for a child between fork and
 * exec). Returns 0 or -errno. */
int ty_cgroup_enter(const int *fds, size_t n);

/* Send @sig to every process in @cg and its descendant cgroups. Returns how many were
 * signalled. */
size_t ty_cgroup_signal(const struct ty_cgroup *cg, int sig);

/* The pids of the processes in @cg and its descendant cgroups into *@ret (caller frees; NULL
 * when none). Returns how many. */
size_t ty_cgroup_pids(const struct ty_cgroup *cg, pid_t **ret);

/* One pass of ending everything in @cg and its descendants: v2 cgroup.kill; otherwise
 * freeze, SIGKILL every process, thaw. Processes die asynchronously: call again until
 * ty_cgroup_populated is false. Returns how many processes were seen (v2 cgroup.kill: 1 when
 * populated, 0 else). */
size_t ty_cgroup_kill(const struct ty_cgroup *cg);

/* Is there a process in @cg or below? (Zombies are not.) */
bool ty_cgroup_populated(const struct ty_cgroup *cg);

/* Remove @cg and its descendant cgroups. Returns 0 (also when already gone), or -errno
 * (-EBUSY: processes are still in it). */
int ty_cgroup_remove(const struct ty_cgroup *cg);

/* Remove @cg if it is empty, one rmdir per directory and nothing listed: for a leaf
 * cgroup whose processes may be gone. Returns 0 (also when already gone), or -errno (-EBUSY:
 * processes, or child cgroups, are in it; the directories removed before stay removed). */
int ty_cgroup_remove_empty(const struct ty_cgroup *cg);

/* Remove the cgroups beside @cg (in each of its hierarchies, below the same parent) that
 * runs which ended without removing them left: directories named @prefix... for which
 * @dead(name, @ctx) says that no live run owns them, whose mtime (made, or a child cgroup
 * made or removed) is at least @min_age_s seconds ago (a young one may belong to a run of
 * another PID namespace that has not entered it yet), each with its child cgroups, when no
 * process is in any of them (then none of them is touched). Only rmdir: a process that enters
 * meanwhile keeps its cgroup (EBUSY). Returns how many were removed (in the first
 * hierarchy). */
size_t ty_cgroup_sweep_beside(const struct ty_cgroup *cg,
                              const char *prefix,
                              bool (*dead)(const char *name, void *ctx),
                              void *ctx,
                              int64_t min_age_s);

/* Was every directory of @cg made by the call that returned it (none existed before)? Such a
 * cgroup has had no process in it, so its OOM count is 0 (no need to read it). */
bool ty_cgroup_is_new(const struct ty_cgroup *cg);

/* Free (does not remove the cgroup); NULL-safe. */
void ty_cgroup_free(struct ty_cgroup *cg);

#endif
