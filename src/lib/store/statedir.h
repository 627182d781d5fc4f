/* SPDX-License-Identifier: Apache-2.0
 * statedir.h: where trainyard keeps its state (docs/lifecycle.md):
 *   $TRAINYARD_HOME, else $XDG_STATE_HOME/trainyard, else $HOME/.local/state/trainyard.
 * Layout: jobs/<project>/<jobId>/{job.json,logs/<task>[.<trial>].log}; `local train` runs
 * use the project "local", and each holds a lock on its run.lock for as long as it runs (so
 * that a run killed before it recorded its end is told apart from one still running); an
 * earlier local run of the same id that did not succeed is kept as jobs/local/<jobId>.<N>
 * (N = 1, 2, ...; never a job id, which has no '.'). Modes: statemode.h. */
#ifndef TY_STATEDIR_H
#define TY_STATEDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* The default state directory (caller frees). Returns NULL when no variable gives one. */
char *ty_statedir_default(void);

/* Create <state>/jobs/<project>/<job_id> exclusively (an existing one is -EEXIST, naming the
 * path) and its logs/ directory. Returns 0 and *ret_dir (caller frees); on failure (a full
 * filesystem: -ENOSPC) the job's directory is not left behind. A @project or @job_id that is
 * empty, "." or "..", or holds a '/', is -EINVAL (nothing created). */
int ty_statedir_claim_job(const char *state,
                          const char *project,
                          const char *job_id,
                          char **ret_dir,
                          struct ty_error *err);

/* ty_statedir_claim_job for a job about to be recorded (the service's create), where a
 * directory holding nothing, or nothing but an empty logs/, is taken as it is (its logs/ made
 * when missing): a claim whose job was never recorded (the service killed between the two,
 * or within the claim), or one a job's supervisor has just made. 0
 * and *ret_dir, with *made true when this call made it (only such a directory may be removed
 * again when the job is not recorded); else as ty_statedir_claim_job. */
int ty_statedir_claim_new_job(const char *state,
                              const char *project,
                              const char *job_id,
                              char **ret_dir,
                              bool *made,
                              struct ty_error *err);

/* The same directory for a job run again (the service's supervisor replacing a lost one, so a
 * program that checkpoints into it resumes): created with its logs/ when missing, kept as it
 * is when it exists. Returns 0 and *ret_dir (caller frees); the same names are refused. */
int ty_statedir_reopen_job(const char *state,
                           const char *project,
                           const char *job_id,
                           char **ret_dir,
                           struct ty_error *err);

/* The file a local run holds locked while it runs: <dir>/run.lock, with its pid in it. */
#define TY_STATEDIR_RUN_LOCK "run.lock"

/* Claim <state>/jobs/local/<job_id> for a `local train` run: created with its logs/ (as
 * ty_statedir_claim_job) and its run.lock locked through the returned descriptor (an open file
 * description lock, with this process's pid in the file: released when the descriptor is
 * closed or this process ends, however it ends; never held by replicas, the descriptor being
 * close-on-exec). When the directory
 * exists, the earlier run keeps the id if it is still running (its lock is held) or its
 * job.json says SUCCEEDED or cannot be read: -EEXIST naming why; otherwise (FAILED,
 * CANCELLED, or a run that ended without recording its end) it is moved aside to
 * <job_id>.<N>, the first N from 1 that is free, and *ret_moved is that path (else NULL).
 * With @ret_moved NULL the id must be new (a generated one): an existing directory is
 * -EEXIST and stays as it is.
 * Returns 0 with *ret_dir and *ret_lock_fd (close-on-exec; the caller keeps it open for the
 * run), or -errno with err. */
int ty_statedir_claim_run(const char *state,
                          const char *job_id,
                          char **ret_dir,
                          int *ret_lock_fd,
                          char **ret_moved,
                          struct ty_error *err);

/* What @name under <state>/jobs/local is: 0 for a job id, 1 for an earlier run kept aside,
 * <jobId>.<N> (N from 1, without leading zeros, as ty_statedir_claim_run names them), or
 * -EINVAL with err naming the rule (a name that is neither, such as "../x"). */
int ty_statedir_run_name(const char *name, struct ty_error *err);

/* Whether the local run in @dir is still going: 1 when its run.lock is locked (and *ret_pid,
 * when not NULL, is the pid written in it, 0 if none), 0 when it is not or there is no run.lock, or
 * -errno when the file cannot be opened. Takes no lock itself. */
int ty_statedir_run_active(const char *dir, pid_t *ret_pid);

/* Bring what an earlier version made in @state to statemode.h's modes: the store, its journals,
 * trainyardd.log and trainyardd.lock 0644 to 0600; and, while jobs/ is 0755 (changed last, so
 * that a start after a complete pass costs no walk), each project's and job's directory and
 * trials/ 0755 to 0711, each job's logs/ and trial directory 0755 to 0700, jobs/ to 0711.
 * Only those exact modes change (any other is the operator's); links are not followed.
 * Returns how many changed; errors (an entry gone, no right) leave an entry as it was. */
size_t ty_statedir_tighten(const char *state);

#endif
