/* SPDX-License-Identifier: Apache-2.0
 * statedir.h: where trainyard keeps its state (docs/lifecycle.md):
 *   $TRAINYARD_HOME, else $XDG_STATE_HOME/trainyard, else $HOME/.local/state/trainyard.
 * Layout: jobs/<project>/<jobId>/{job.json,logs/<task>[.<trial>].log}; `local train` runs
 * use the project "local". */
#ifndef TY_STATEDIR_H
#define TY_STATEDIR_H

#include "error.h"

/* The default state directory (caller frees). Returns NULL when no variable gives one. */
char *ty_statedir_default(void);

/* Create <state>/jobs/<project>/<job_id> exclusively (an existing one is -EEXIST, naming the
 * path) and its logs/ directory. Returns 0 and *ret_dir (caller frees); on failure (a full
 * filesystem: -ENOSPC) the job's directory is not left behind. */
int ty_statedir_claim_job(const char *state,
                          const char *project,
                          const char *job_id,
                          char **ret_dir,
                          struct ty_error *err);

/* The same directory for a job run again (the service's supervisor replacing a lost one, so a
 * program that checkpoints into it resumes): created with its logs/ when missing, kept as it
 * is when it exists. Returns 0 and *ret_dir (caller frees). */
int ty_statedir_reopen_job(const char *state,
                           const char *project,
                           const char *job_id,
                           char **ret_dir,
                           struct ty_error *err);

#endif
