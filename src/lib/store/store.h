/* SPDX-License-Identifier: Apache-2.0
 * store.h: the service's durable state in SQLite (WAL mode, synchronous=FULL) at
 * <state>/trainyard.db: jobs (one row each, the REST Job's fields plus what the service needs
 * to supervise it), each job's state transitions with their times, and the index of its log
 * files (the log text itself stays in files, see logs.h).
 *
 * The schema is versioned (PRAGMA user_version) and upgraded by ordered migrations when the
 * store is opened; a database written by a newer trainyard is refused, never modified.
 *
 * Every function is thread-safe: connections come from an internal pool, one per calling
 * thread at a time, each with its own prepared statements. Several processes may use one
 * database at once (the daemon and the per-job supervisors): writers wait on SQLite's lock
 * (busy timeout) instead of failing. A write returns only once it is durable on disk.
 * A store does not survive fork(): a child neither uses nor closes its parent's; it opens its own.
 *
 * Errors: -ENOENT (no such job), -EEXIST (duplicate job id), -ESTALE (etag mismatch),
 * -EPROTO (a database newer than this build, or SQLite refused a statement), and what the
 * filesystem said (ty_store_errno): -ENOSPC or -EDQUOT (the state directory's filesystem is
 * full: nothing of the failed call was written), -EROFS (it is read-only), -EIO (an I/O error),
 * -EBUSY (locked too long), -EBADMSG (the database is corrupt); err has the message.
 *
 * A failed write changes nothing (its transaction is rolled back): the store stays
 * consistent, and the same call succeeds once the filesystem has room again (no reopen). */
#ifndef TY_STORE_H
#define TY_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "jobstate.h"

/* The errno for an SQLite (extended) result code @sqlite_rc whose last system call failed with
 * @sys_errno (sqlite3_system_errno; 0 if none): ENOSPC or EDQUOT for a full filesystem
 * (SQLITE_FULL, or an I/O error whose cause was one), EROFS, EIO for other I/O errors, EBUSY,
 * ENOMEM, EBADMSG for a corrupt database, EPROTO for the rest (a refused statement). */
int ty_store_errno(int sqlite_rc, int sys_errno);

/* File name of the database inside the state directory. */
#define TY_STORE_FILE "trainyard.db"

struct ty_store;

/* One job as stored. Strings and JSON values are owned by the row (ty_job_row_free). */
struct ty_job_row {
    int64_t seq; /* creation order: unique, increasing; newest first = seq descending */
    char *project;
    char *job_id;
    enum ty_job_state state;
    int64_t create_usec;     /* epoch microseconds; 0 = not set */
    int64_t start_usec;      /* set on the first change to RUNNING */
    int64_t end_usec;        /* set on the change to a final state */
    char *error_message;     /* "" when none */
    json_t *labels;          /* object of string values (never NULL) */
    json_t *training_input;  /* canonical camelCase TrainingInput (never NULL) */
    json_t *training_output; /* TrainingOutput, NULL when none yet */
    int64_t etag;            /* version of the labels: 1 at creation, +1 per label update */
    char *runtime;           /* runtime name: "process", "container", ... */
    json_t *options;         /* service-private run options (object; never NULL) */
    int64_t shim_pid;        /* the job's supervisor process, 0 while none claimed it */
    int64_t shim_start;      /* its start time (clock ticks since boot, /proc/PID/stat) */
    char *sweep_key;         /* marker in the supervisor's environment ("" when none) */
    char *state_reason;      /* why a QUEUED job waits in its runtime's queue ("" when none) */
    /* Attempts (docs/lifecycle.md, "Restarts and retries"). */
    json_t *attempt_status;    /* the supervisor's last ty_jobrun_attempt_status; NULL: none */
    int64_t first_attempt;     /* the attempt its current supervisor starts at (0: 1) */
    int64_t internal_retries;  /* times the job was started again after losing its supervisor */
    enum ty_job_state outcome; /* decided by the supervisor, not yet final; UNSPECIFIED: none */
    char *outcome_message;     /* the errorMessage that goes with it ("" when none) */
    /* What the service's scheduler gave the job (admit/gpudev.h, struct ty_grant as JSON),
     * recorded when its supervisor claimed it; NULL when none was recorded. */
    json_t *grant;
    /* The row's version as read from the database: SQLite bumps it on every change of the
     * row or of its transitions, by any process (ty_store_job_version). A row a write function
     * returns (cancel, labels, ...) is the one read before the write, changed in memory: its
     * version is the one before that write. */
    int64_t version;
};

/* The attempt job @row is in, or starts next when it waits for a new supervisor: the last one
 * its supervisor recorded, or the one a supervisor was told to start at if that is later;
 * attempts count from 1. */
int64_t ty_job_row_attempt(const struct ty_job_row *row);

/* Free @row and everything it owns; NULL-safe. */
void ty_job_row_free(struct ty_job_row *row);
static inline void ty_job_row_freep(struct ty_job_row **r)
{
    ty_job_row_free(*r);
}

/* The REST Job resource of @row: jobId, trainingInput, createTime, startTime, endTime,
 * state, errorMessage, stateReason (trainyard's: why a QUEUED job waits in its runtime's
 * queue, only then), attemptStatus (trainyard's: the attempt_status recorded by the job's
 * supervisor, {"attempt","maxAttempts","replicaRestarts"}, plus "internalRetries" when it is
 * not 0; only "internalRetries" for a job that lost a supervisor before one was recorded; left
 * out when there is neither), trainingOutput, labels, etag (in this order; unset times, empty
 * labels, an empty errorMessage and a NULL trainingOutput are left out; times RFC 3339 UTC with
 * 6 digits; etag is the base64 text of the 8-byte big-endian etag counter). New reference; its
 * nested values (trainingInput, labels, trainingOutput, attemptStatus) may be the row's own,
 * shared: treat them as read-only (the API renders thousands a second; copying them cost about
 * 10%). */
json_t *ty_job_row_to_json(const struct ty_job_row *row);
/* The etag text of @etag (as in ty_job_row_to_json) into @buf (>= 16 bytes); and back:
 * returns 0 and *ret, or -EINVAL when @text is not an etag this store made. The formatter is
 * exposed for tests. */
const char *ty_store_etag_format(int64_t etag, char *buf, size_t n);
int ty_store_etag_parse(const char *text, int64_t *ret);

/* Whether the store file at @path holds no job for certain, read without opening it (an open
 * writes a new schema into an empty file): missing, empty, or a database of at most one page
 * (an empty schema) with no -wal file beside it, or an empty one: a store whose changes were
 * all still in its -wal file when that file was lost. False when unsure (unreadable). */
bool ty_store_file_empty(const char *path);
/* Open (creating and migrating) the database at @path. Returns 0 and *ret. */
int ty_store_open(const char *path, struct ty_store **ret, struct ty_error *err);
/* Close every connection; NULL-safe. No call may be in progress. */
void ty_store_close(struct ty_store *s);
/* The schema version this build writes. Exposed for tests. */
int ty_store_schema_version(void);
/* Bytes SQLite holds in this process now, every connection of every store together: page
 * caches (STORE_CACHE_KIB per connection, at most STORE_MAX_OPEN connections per store),
 * schemas and prepared statements; -1 when SQLite does not count (built without memstatus). */
int64_t ty_store_memory_used(void);

/* Insert a new job from @row's project, job_id, state (normally QUEUED), create_usec, labels,
 * training_input, runtime, options and sweep_key (other fields ignored); sets row->seq and
 * row->etag. Concurrent inserts from several threads are committed together (group commit:
 * one transaction and one fsync for all inserts waiting at that moment); each caller returns
 * once its row is durable. -EEXIST when the project already has that job id. */
int ty_store_insert_job(struct ty_store *s, struct ty_job_row *row, struct ty_error *err);
/* The same, with @service_log (NULL: none) indexed as the job's "service" log file in the same
 * transaction (as ty_store_add_log_file would, without a commit of its own). */
int ty_store_insert_job_logged(struct ty_store *s,
                               struct ty_job_row *row,
                               const char *service_log,
                               struct ty_error *err);

/* Fetch one job. -ENOENT when absent. */
int ty_store_get_job(struct ty_store *s,
                     const char *project,
                     const char *job_id,
                     struct ty_job_row **ret,
                     struct ty_error *err);
int ty_store_get_job_by_seq(struct ty_store *s,
                            int64_t seq,
                            struct ty_job_row **ret,
                            struct ty_error *err);

/* The seq and version of project/job_id, without reading the row: -ENOENT when absent. The
 * version changes on every write of the row or of its transitions, whoever makes it (the
 * service, a supervisor, another program on the database file: SQLite's triggers bump it), so
 * equal (seq, version) pairs mean an unchanged job and transitions; a job created again under
 * the same id has another seq. What a cache of rendered jobs checks before each answer. */
int ty_store_job_version(struct ty_store *s,
                         const char *project,
                         const char *job_id,
                         int64_t *seq,
                         int64_t *version,
                         struct ty_error *err);

/* A number that changes whenever anything is committed to the store, by any process or
 * connection (the service, a supervisor, another program on the database file), and seldom
 * otherwise (a checkpoint that restarts the log): two calls that return the same nonzero
 * number saw no commit between them, so whatever was read from the store after the first is
 * still what it holds at the second. Costs a few memory loads and no lock while nothing was
 * committed, never a transaction (it reads SQLite's wal-index header in shared memory:
 * store-epoch.c); the first call opens one more connection, kept until ty_store_close. 0 when
 * the store cannot tell this way now (a commit being published at that instant, or the map
 * not had yet: tried again a second later) or at all (SQLite without a shared wal-index):
 * then read the store. Thread-safe. Every writer goes through the shared wal-index: while
 * that connection is open, SQLite refuses another connection both a switch out of WAL mode
 * and exclusive locking mode (the two ways around it). */
uint64_t ty_store_commit_epoch(struct ty_store *s);

/* What ty_store_scan_jobs narrows by in SQL before calling back (all optional). */
struct ty_store_scan {
    const char *project;   /* required */
    int64_t before_seq;    /* > 0: only jobs with seq < before_seq */
    int state;             /* >= 0: only jobs in this enum ty_job_state; -1: any */
    const char *id_prefix; /* only job ids starting with this text, ignoring ASCII case */
};

/* Call @fn for the project's jobs, newest first, until it returns non-zero (which is then
 * returned) or the jobs run out (0). The row is borrowed for the call only. The rows come from
 * one snapshot; @fn may call other store functions. */
int ty_store_scan_jobs(struct ty_store *s,
                       const struct ty_store_scan *q,
                       int (*fn)(const struct ty_job_row *row, void *ctx),
                       void *ctx,
                       struct ty_error *err);

/* Jobs not in a final state (any project), oldest first: for the service's start-up. */
int ty_store_unfinished_jobs(struct ty_store *s,
                             struct ty_job_row ***ret,
                             size_t *n,
                             struct ty_error *err);
/* Up to @limit QUEUED jobs no supervisor has claimed, oldest first (not those that wait for a
 * new supervisor after an internal error: ty_store_retry_jobs). */
int ty_store_queued_jobs(
    struct ty_store *s, size_t limit, struct ty_job_row ***ret, size_t *n, struct ty_error *err);
/* Free an array of rows from the functions above. */
void ty_job_rows_free(struct ty_job_row **rows, size_t n);

/* Claim job @seq for the supervisor @pid/@start, recording @grant (what the scheduler gave
 * it; NULL: none): only when it is unclaimed and QUEUED, or waits for a new supervisor after
 * an internal error (ty_store_supervisor_lost; it may then be PREPARING or RUNNING). Returns
 * 0, or -EALREADY when it is claimed or no longer waits for a supervisor (cancelled, final). */
int ty_store_claim_job(struct ty_store *s,
                       int64_t seq,
                       int64_t pid,
                       int64_t start,
                       const json_t *grant,
                       struct ty_error *err);
/* The exit status of a supervisor that could not claim its job, or gave its claim back
 * (ty_store_unclaim_job), because the state directory's filesystem is full or failing: the job
 * did not start and waits for a new supervisor, to be started once the filesystem has room
 * (EX_TEMPFAIL of sysexits.h). */
#define TY_EXIT_UNCLAIMED 75

/* Whether errno @code is the state directory's filesystem failing (full, over quota,
 * read-only, I/O error, locked too long) rather than something of the job's. */
bool ty_store_fs_error(int code);

/* Give back the claim of supervisor @pid on job @seq, which it made but could not start the job
 * for a reason of the machine's (the state directory's filesystem full or failing): the job
 * waits for a supervisor again as it did before (QUEUED, or released after an internal error),
 * with no internal retry counted. Nothing changes when @pid does not hold the claim, or the
 * job is CANCELLING or final. Returns 0 and, when @ret, the row as it is now. */
int ty_store_unclaim_job(
    struct ty_store *s, int64_t seq, int64_t pid, struct ty_job_row **ret, struct ty_error *err);

/* Change job @seq to @state at @usec, recording the transition, setting start_usec on the
 * first RUNNING and end_usec (and @error_message, may be NULL) on a final state. A final
 * state is final: changing a job already SUCCEEDED, FAILED or CANCELLED returns -EALREADY
 * and changes nothing. A job never goes back: going from CANCELLING to PREPARING or RUNNING,
 * from RUNNING to QUEUED or PREPARING, or from PREPARING to QUEUED is ignored (0) -- the
 * supervisor that replaces a lost one reports the states of its own start again -- as is a
 * change to the state the job is already in (nothing is recorded then). */
int ty_store_set_state(struct ty_store *s,
                       int64_t seq,
                       enum ty_job_state state,
                       int64_t usec,
                       const char *error_message,
                       struct ty_error *err);

/* A user's cancel of project/job_id, atomically: an unclaimed job (QUEUED, or waiting for a
 * new supervisor after an internal error) becomes CANCELLED at once (errorMessage "Job
 * cancelled by the user."); a claimed QUEUED, PREPARING or RUNNING job becomes CANCELLING (its
 * supervisor must then be told); CANCELLING and final jobs are left as they are, and so is a
 * job whose supervisor has recorded its outcome (ty_store_set_outcome). Returns 0 and
 * *ret (the row after the change) or -ENOENT. */
int ty_store_cancel_job(struct ty_store *s,
                        const char *project,
                        const char *job_id,
                        int64_t usec,
                        struct ty_job_row **ret,
                        struct ty_error *err);

/* Replace the labels of project/job_id with @labels when @expect_etag is 0 or equals the
 * stored etag (else -ESTALE), bumping the etag. Returns 0 and *ret (the row after). */
int ty_store_update_labels(struct ty_store *s,
                           const char *project,
                           const char *job_id,
                           json_t *labels,
                           int64_t expect_etag,
                           struct ty_job_row **ret,
                           struct ty_error *err);

/* Set (replace) the trainingOutput of job @seq. */
int ty_store_set_output(struct ty_store *s, int64_t seq, json_t *output, struct ty_error *err);
/* Record why job @seq waits in its runtime's queue ("" clears it; shown while QUEUED).
 * -ENOENT when there is no such job. */
int ty_store_set_state_reason(struct ty_store *s,
                              int64_t seq,
                              const char *reason,
                              struct ty_error *err);

/* --- attempts and internal errors --------------------------------------------------- */

/* Record @status (a ty_jobrun_attempt_status object) as job @seq's attempt status: its
 * supervisor does on every change. -ENOENT when there is no such job. */
int ty_store_set_attempt_status(struct ty_store *s,
                                int64_t seq,
                                json_t *status,
                                struct ty_error *err);

/* Record the outcome the supervisor of job @seq decided (@outcome SUCCEEDED, FAILED or
 * CANCELLED, with @message its errorMessage, may be NULL) while the replicas are being
 * stopped; the final state follows once they are gone. From then on, losing the supervisor
 * ends the job with this outcome instead of running it again (ty_store_supervisor_lost).
 * -EALREADY when the job is already final, -EINVAL for a state that is not final, -ENOENT. */
int ty_store_set_outcome(struct ty_store *s,
                         int64_t seq,
                         enum ty_job_state outcome,
                         const char *message,
                         struct ty_error *err);

/* What ty_store_supervisor_lost did. */
enum ty_lost_action {
    TY_LOST_NONE,      /* the job is final, or another supervisor holds it: nothing changed */
    TY_LOST_CANCELLED, /* it was CANCELLING: now CANCELLED ("Job cancelled by the user.") */
    TY_LOST_OUTCOME,   /* its outcome was recorded: now in that final state, with its message */
    TY_LOST_RETRY,     /* released for a new supervisor: internal_retries + 1, first_attempt */
    TY_LOST_FAILED,    /* no internal retry left: FAILED with the caller's message */
};
struct ty_lost {
    enum ty_lost_action action;
    int64_t attempt;      /* the attempt the lost supervisor was in (the last one recorded) */
    int64_t next_attempt; /* TY_LOST_RETRY: the attempt its replacement starts at */
};

/* The supervisor @pid of job @seq is gone (its process ended). Decides, in one transaction,
 * what becomes of the job: nothing when it is final or held by a supervisor other than @pid;
 * CANCELLED when it was CANCELLING; the recorded outcome (ty_store_set_outcome) when there is
 * one; else an internal error: when the job already had @max_retries internal retries it
 * becomes FAILED with @fail_message, otherwise it is released (unclaimed, internal_retries + 1,
 * first_attempt the attempt after the last one recorded or started) in the state it is in, for
 * a new supervisor to claim (ty_store_retry_jobs). A final state is set at @usec. Returns 0,
 * *ret and, when @row is not NULL, *row (the job after it; caller frees); -ENOENT. */
int ty_store_supervisor_lost(struct ty_store *s,
                             int64_t seq,
                             int64_t pid,
                             int64_t max_retries,
                             int64_t usec,
                             const char *fail_message,
                             struct ty_lost *ret,
                             struct ty_job_row **row,
                             struct ty_error *err);

/* Jobs released by ty_store_supervisor_lost that wait for a new supervisor (not final, not
 * CANCELLING, unclaimed, internal_retries > 0), oldest first. Free with ty_job_rows_free. */
int ty_store_retry_jobs(struct ty_store *s,
                        struct ty_job_row ***ret,
                        size_t *n,
                        struct ty_error *err);

/* One recorded state change. */
struct ty_transition {
    enum ty_job_state state;
    int64_t usec;
};
/* The transitions of job @seq, oldest first (caller frees *ret). The first is the state the
 * job was inserted in, at its create_usec. Exposed for tests. */
int ty_store_transitions(
    struct ty_store *s, int64_t seq, struct ty_transition **ret, size_t *n, struct ty_error *err);

/* One log file of a job: records of task @task (and trial @trial, NULL outside tuning). */
struct ty_log_file {
    char *task;
    char *trial; /* NULL when none */
    char *path;
};
/* Index a log file of job @seq (idempotent for the same task and trial). */
int ty_store_add_log_file(struct ty_store *s,
                          int64_t seq,
                          const char *task,
                          const char *trial,
                          const char *path,
                          struct ty_error *err);
/* The log files of job @seq, ordered by task then trial (free with ty_log_files_free). */
int ty_store_log_files(
    struct ty_store *s, int64_t seq, struct ty_log_file **ret, size_t *n, struct ty_error *err);
void ty_log_files_free(struct ty_log_file *files, size_t n);

/* --- counts for the service's /metrics (store-stats.c) ------------------------------- */

/* The stored jobs of one project in one state. Counts over every job ever stored (jobs are
 * never deleted), so the sums over states only grow, except replica_restarts. */
struct ty_store_job_stats {
    char *project;
    enum ty_job_state state;
    int64_t jobs;
    /* Attempts beyond the first (ty_job_row_attempt - 1), of the jobs and of their tuning
     * trials (trainingOutput.trials[].attemptStatus): whole-job retries and the attempts
     * started after an internal error. */
    int64_t retries;
    int64_t internal_retries; /* supervisors lost and replaced (also counted in retries) */
    /* Restarts in place of replicas (attemptStatus.replicaRestarts) in the attempt each job
     * and trial is in or ended in: a new attempt starts from 0, so this one can go down. */
    int64_t replica_restarts;
};
/* One row per (project, state) that has jobs, ordered by project then state name, from one
 * snapshot; every stored job is read (a scan of the table). Returns 0, *ret (free with
 * ty_store_job_stats_free; NULL when there are no jobs) and *n. */
int ty_store_job_stats(struct ty_store *s,
                       struct ty_store_job_stats **ret,
                       size_t *n,
                       struct ty_error *err);
/* NULL-safe. */
void ty_store_job_stats_free(struct ty_store_job_stats *rows, size_t n);

/* A project that has stored jobs, and how many. */
struct ty_store_project {
    char *project;
    int64_t jobs;
};
/* Every project with at least one stored job, ordered by id (byte order), from one snapshot
 * (the (project, seq) index is read, not the rows). Returns 0, *ret (free with
 * ty_store_projects_free; NULL when there are no jobs) and *n. */
int ty_store_projects(struct ty_store *s,
                      struct ty_store_project **ret,
                      size_t *n,
                      struct ty_error *err);
/* NULL-safe. */
void ty_store_projects_free(struct ty_store_project *rows, size_t n);

#endif
