/* SPDX-License-Identifier: Apache-2.0
 * store-internal.h: what the parts of the store share: store.c (rows, etags, open/close,
 * migrations, the connection pool), store-jobs.c (queries and writes, attempts and lost
 * supervisors) and store-insert.c (the group-commit writer thread). Not for other modules: use
 * store.h. */
#ifndef TY_STORE_INTERNAL_H
#define TY_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* SQLite's wal-index header (one of its two copies): 48 bytes, 12 native words. */
#define STORE_WAL_HEADER_WORDS 12

/* The errorMessage of a job cancelled by its user. */
#define STORE_CANCEL_MESSAGE "Job cancelled by the user."

/* Prepared statements, cached per connection (SQL text in store.c). */
enum store_stmt {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_INSERT_JOB,
    ST_INSERT_TRANSITION,
    ST_GET_JOB,
    ST_GET_JOB_BY_SEQ,
    ST_JOB_VERSION,
    ST_SCAN,
    ST_UNFINISHED,
    ST_QUEUED,
    ST_CLAIM,
    ST_UNCLAIM,
    ST_JOB_EXISTS,
    ST_UPDATE_STATE,
    ST_UPDATE_LABELS,
    ST_SET_OUTPUT,
    ST_SET_REASON,
    ST_TRANSITIONS,
    ST_LAST_TRANSITION,
    ST_ADD_LOG,
    ST_LOG_FILES,
    ST_SET_ATTEMPT_STATUS,
    ST_SET_OUTCOME,
    ST_RELEASE,
    ST_RETRY_JOBS,
    ST__MAX,
};

/* One SQLite connection: used by one thread at a time (opened SQLITE_OPEN_NOMUTEX). */
struct store_conn {
    sqlite3 *db;
    sqlite3_stmt *stmts[ST__MAX];
    struct store_conn *next; /* in the pool's idle list */
    struct ty_store *owner;  /* set while a thread holds it (for store_releasep) */
    bool writing;            /* in a write transaction, holding owner->write_lock */
};

struct insert_req;

struct ty_store {
    char *path;

    /* The pool: idle connections, how many are open in all and how many threads wait. */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_cond;
    struct store_conn *idle;
    unsigned n_idle, n_open, n_waiting;

    /* This process's write transactions, one at a time: its threads queue here, in turn,
     * rather than all poll SQLite's lock, whose busy wait is not fair (under load one of them
     * could wait out the busy timeout while others get in). Other processes (supervisors)
     * still meet at SQLite's lock. */
    pthread_mutex_t write_lock;

    /* Group commit (store-insert.c): the queue of inserts, the writer and its connection. */
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond;    /* the writer waits for work or stop */
    pthread_cond_t done_cond; /* callers wait for their request's batch */
    struct insert_req *q_head, *q_tail;
    bool stopping;
    bool writer_started;
    pthread_t writer;
    struct store_conn *wconn;
    uint64_t n_batches; /* transactions the writer committed (for tests) */

    /* ty_store_commit_epoch (store-epoch.c): the connection that keeps SQLite's map of the
     * wal-index open, that map (NULL: not available), the last header seen and its epoch
     * (changed under epoch_lock, read without it under the sequence lock epoch_seq: odd while
     * they change); when the map cannot be had at all (epoch_off), or not before a time. */
    pthread_mutex_t epoch_lock;
    bool epoch_off;
    int64_t epoch_retry_usec;
    struct store_conn *epoch_conn;
    const uint32_t *epoch_map;
    uint32_t epoch_header[STORE_WAL_HEADER_WORDS];
    uint64_t epoch;
    uint64_t epoch_seq;
};

/* Columns of a job row in the order store_row_from_stmt reads them. */
#define STORE_JOB_COLS                                                                             \
    "seq, project, job_id, state, create_usec, start_usec, end_usec, error_message, labels, "      \
    "training_input, training_output, etag, runtime, options, shim_pid, shim_start, sweep_key, "   \
    "state_reason, attempt_status, first_attempt, internal_retries, outcome, outcome_message, "    \
    "grant, version"

/* State names as stored (the REST enum names) and back (unknown: UNSPECIFIED). */
const char *store_state_name(enum ty_job_state st);
enum ty_job_state store_state_parse(const char *name);

/* Open one configured connection to @path (pragmas set; no schema work). */
int store_conn_open(const char *path, bool create, struct store_conn **ret, struct ty_error *err);
void store_conn_close(struct store_conn *c);

/* Take a connection from the pool (opening one when none is idle) and give it back. */
int store_acquire(struct ty_store *s, struct store_conn **ret, struct ty_error *err);
void store_release(struct ty_store *s, struct store_conn *c);
/* Give back a held connection (NULL-safe); for _cleanup_(store_releasep). */
static inline void store_releasep(struct store_conn **c)
{
    if (*c)
        store_release((*c)->owner, *c);
}

/* The cached prepared statement @id of @c, reset and ready to bind. */
int store_stmt(struct store_conn *c, enum store_stmt id, sqlite3_stmt **ret, struct ty_error *err);
/* Reset a statement after use (NULL-safe); for _cleanup_(store_resetp). */
static inline void store_resetp(sqlite3_stmt **st)
{
    if (*st)
        (void)sqlite3_reset(*st);
}

/* Record SQLite's last error on @c into @err: returns -EIO ("@what: message"). */
int store_sql_error(struct store_conn *c, struct ty_error *err, const char *what);

/* Inside a write transaction: record that job @seq entered @state at @usec. Returns 0 or
 * -EIO with @err. */
int store_add_transition(
    struct store_conn *c, int64_t seq, enum ty_job_state state, int64_t usec, struct ty_error *err);
/* Inside a write transaction: index @task's log file @path (@trial's; NULL outside tuning) of
 * job @seq. Returns 0, -ENOENT when there is no such job, or -EIO, with @err. */
int store_add_log_row(struct store_conn *c,
                      int64_t seq,
                      const char *task,
                      const char *trial,
                      const char *path,
                      struct ty_error *err);

/* BEGIN IMMEDIATE (waiting on the busy timeout), COMMIT (durable), ROLLBACK (best effort). */
int store_begin(struct store_conn *c, struct ty_error *err);
int store_commit(struct store_conn *c, struct ty_error *err);
void store_rollback(struct store_conn *c);

/* Build a row from the current result of a statement selecting STORE_JOB_COLS. */
int store_row_from_stmt(sqlite3_stmt *st, struct ty_job_row **ret, struct ty_error *err);

/* Bind helpers: NULL text binds as SQL NULL; JSON as compact text (NULL json: @dflt). */
int store_bind_text(sqlite3_stmt *st, int i, const char *text);
int store_bind_json(sqlite3_stmt *st, int i, const json_t *j, const char *dflt, char **tmp);

/* Close what ty_store_commit_epoch opened (store-epoch.c); no call may be in progress. */
void store_epoch_close(struct ty_store *s);

/* The group-commit writer (store-insert.c). */
int store_writer_start(struct ty_store *s, struct ty_error *err);
void store_writer_stop(struct ty_store *s);

#endif
