/* SPDX-License-Identifier: Apache-2.0
 * jobs-local.h: `--local` of `trainyard jobs list|describe|stream-logs`: the runs of `trainyard
 * local train` read back from the state directory (<state>/jobs/local/<id>/job.json and
 * logs/), as the same Job resources and log entries the service returns, so that the verbs
 * print them with the same code. A run whose process ended without recording its end (killed)
 * shows as FAILED, saying so. An earlier run of an id, kept aside as <jobId>.<N> when the id was
 * run again, is listed and read under that name. */
#ifndef TY_CLI_JOBS_LOCAL_H
#define TY_CLI_JOBS_LOCAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "jobs.h"

/* getopt ids of --local and --state-dir (above the global flags' ids). */
enum {
    JOBS_LOCAL_OPT = JOBS_OPT_BASE + 900,
    JOBS_LOCAL_OPT_STATE_DIR,
};

/* clang-format off */
#define JOBS_LOCAL_OPTIONS                                                                         \
    {"local", no_argument, NULL, JOBS_LOCAL_OPT},                                                  \
    {"state-dir", required_argument, NULL, JOBS_LOCAL_OPT_STATE_DIR}
/* clang-format on */

/* Help text of --local and --state-dir. */
extern const char jobs_local_help[];

struct jobs_local {
    bool on;               /* --local */
    const char *state_dir; /* --state-dir (NULL: the default) */
};

/* Take @id if it is --local or --state-dir. Returns 1 when taken, 0 when it is another flag. */
int jobs_local_opt(struct jobs_local *l, int id, const char *arg);

/* --state-dir given without --local: an error (printed; returns -1), else 0. */
int jobs_local_check(const char *path, const struct jobs_local *l);

/* The local run @job_id (a job id, or <jobId>.<N>: an earlier run kept aside, whose jobId
 * reads so) as a Job resource in *ret. Returns -1 to go on, else the exit status
 * after printing the error (1: no such run, or it cannot be read; 2: no state directory). */
int jobs_local_job(const char *path, const struct jobs_local *l, const char *job_id, json_t **ret);

/* Append to @all the local runs that match @filter (the list filter's syntax; NULL: all),
 * the runs kept aside included (as <jobId>.<N>), newest first, at most @limit of them (0:
 * all). Returns 0, or -errno with err. */
int jobs_local_list(const struct jobs_local *l,
                    const char *filter,
                    int64_t limit,
                    json_t *all,
                    struct ty_error *err);

/* Show the logs of local run @job_id as `jobs stream-logs` shows a service job's (same
 * lines), polling its files (every o->poll_secs, default half a second) until the run has
 * ended and everything was shown. Returns 0 or -errno with err (jobs-logs.c). */
int jobs_local_stream_logs(const struct jobs_local *l,
                           const char *job_id,
                           const struct jobs_logs_opts *o,
                           struct ty_error *err);

/* For jobs-logs.c: the state directory of @l (caller frees), or NULL with err. */
char *jobs_local_state(const struct jobs_local *l, struct ty_error *err);
/* For jobs-logs.c: read run @job_id of @state into *ret (as jobs_local_job). Returns 0 or
 * -errno with err (-ENOENT: no such run). */
int jobs_local_read(const char *state, const char *job_id, json_t **ret, struct ty_error *err);

#endif
