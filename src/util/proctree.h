/* SPDX-License-Identifier: Apache-2.0
 * proctree.h: finding and ending every process a local replica started, including ones that
 * left its process group or were orphaned.
 *
 * trainyard makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so a replica's orphaned
 * descendants are re-parented to it instead of to init. Each replica's environment carries
 * TY_RUN_TOKEN_ENV=<token of the run>; an orphan of ours is recognised by that token while it
 * is alive, and reaped when it is a zombie and no runtime owns it. */
#ifndef TY_PROCTREE_H
#define TY_PROCTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TY_RUN_TOKEN_ENV "TRAINYARD_RUN_ID"

/* Make this process a child subreaper (once). Returns 0 or -errno. */
int ty_proctree_become_subreaper(void);

/* Mark @pid as a child some code waits for itself (a replica), or not any more. Owned
 * children are never reaped by ty_proctree_reap_orphans. */
void ty_proctree_own(pid_t pid);
void ty_proctree_disown(pid_t pid);

/* Collect into *ret (caller frees) the live processes that belong to a run: descendants of
 * the @n @roots (roots themselves excluded), and children of this process (orphans) whose
 * environment has TY_RUN_TOKEN_ENV=@token, with their descendants. Returns the count. */
size_t ty_proctree_collect(const pid_t *roots, size_t n, const char *token, pid_t **ret);

/* Send @sig to each of @n pids. */
void ty_proctree_kill(const pid_t *pids, size_t n, int sig);

/* The pids of @a (@na) and @b (@nb) that a signal to the process group @group does not
 * reach (not in it, nor its leader), each once, into *@ret (caller frees; NULL when none):
 * those to signal one by one before signalling the group, so that every process gets one
 * copy (a program's SIGTERM handler ran once per copy it got). Returns how many. */
size_t ty_proctree_outside_group(
    pid_t group, const pid_t *a, size_t na, const pid_t *b, size_t nb, pid_t **ret);

/* Reap zombie children of this process that no one owns. Returns how many. Cheap when the
 * kernel names no zombie or one no one owns; an owned zombie named first hides the others,
 * which are then found by listing the children (/proc). */
int ty_proctree_reap_orphans(void);

/* The zombie child the kernel names first (left a zombie: WNOWAIT), 0 when there is none.
 * An owner about to reap that child itself may leave the orphans to its own reap_orphans
 * call after it (ty_proctree_reap_orphans would list the children to look past it). */
pid_t ty_proctree_first_zombie(void);

/* Does the environment of process @pid hold the entry @name=@value exactly (@value NULL: an
 * entry @name, whatever its value)? Reads all of
 * /proc/PID/environ, however long (a CLUSTER_SPEC alone may exceed 128 KiB, and the entry
 * sought may come after it). False when the process is gone or not ours to read. */
bool ty_proc_env_has(pid_t pid, const char *name, const char *value);

/* SIGKILL every process but this one and init whose environment holds @name=@value, except
 * those that have an entry named in the NULL-terminated list @unless (NULL: none spared).
 * Returns how many were signalled. */
int ty_proc_kill_by_env(const char *name, const char *value, const char *const *unless);

/* Start time of process @pid in clock ticks since boot (field 22 of /proc/PID/stat): with
 * the pid it names one process across pid reuse. 0 when the process does not exist. */
unsigned long long ty_proc_start_time(pid_t pid);

#endif
