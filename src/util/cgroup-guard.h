/* SPDX-License-Identifier: Apache-2.0
 * cgroup-guard.h: the guardian's side of a job's lifeline, shared by the trainyard-guardian
 * program and the forked guardian the process runtime falls back to
 * (src/lib/exec/process/process-jail.c, docs/internals/runtime.md).
 *
 * The owner of a job's cgroup holds the write end of a pipe (the lifeline); the guardian, a
 * process of its own, holds the read end. The owner writes TY_CGROUP_GUARD_DONE after it has
 * removed the cgroup itself; any other end of the pipe (EOF: the owner died or gave the job
 * up) makes the guardian kill everything in the cgroup and remove it.
 *
 * Unlike the rest of src/util, ty_cgroup_guard blocks and sleeps: it is the whole life of a
 * process made for it, never called from an event loop. */
#ifndef TY_CGROUP_GUARD_H
#define TY_CGROUP_GUARD_H

#include "cgroup.h"

/* The byte the owner writes on the lifeline once it removed the cgroup itself. */
#define TY_CGROUP_GUARD_DONE 'D'

/* How long a guardian goes on killing (a process in uninterruptible sleep dies only when the
 * sleep ends), and how long it waits between passes. */
#define TY_CGROUP_GUARD_KILL_MS 60000
#define TY_CGROUP_GUARD_PASS_MS 20

/* Wait on the lifeline @fd (blocking reads, retried on EINTR). Returns 1 when the owner wrote
 * TY_CGROUP_GUARD_DONE, 0 when it did not (EOF or any other byte: the owner died or gave the
 * job up), or -errno when @fd cannot be read (not a lifeline). */
int ty_cgroup_guard_wait(int fd);

/* The guardian's last work: kill everything in @cg every TY_CGROUP_GUARD_PASS_MS until it is
 * empty (at most TY_CGROUP_GUARD_KILL_MS), then remove it. Returns 0, or -errno of the
 * removal. */
int ty_cgroup_guard_end(const struct ty_cgroup *cg);

#endif
