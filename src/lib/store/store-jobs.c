/* SPDX-License-Identifier: Apache-2.0
 * store-jobs.c: the store's queries and its writes other than inserts (see store.h). Each call
 * takes a pooled connection for its duration. Writes read, check and change inside one
 * BEGIN IMMEDIATE transaction, so the daemon and the supervisors (other processes) never
 * interleave between the check and the change.
 *
 * Attempts: the attempt status a supervisor records, the outcome it decides before the final
 * state, and what becomes of a job whose supervisor is lost -- AI Platform's "internal error":
 * the job is released for a new supervisor, which starts at the attempt after the last one
 * recorded, at most a given number of times, then it fails. That decision is one transaction,
 * so it cannot interleave with a cancel (the API's threads) or with the supervisor's own last
 * writes (another process). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-internal.h"
#include "store.h"

/* Step @st once: 0 and *ret for a row, -ENOENT when there is none. */
static int fetch_row(struct store_conn *c,
                     sqlite3_stmt *st,
                     const char *what,
                     struct ty_job_row **ret,
                     struct ty_error *err)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return store_row_from_stmt(st, ret, err);
    if (rc == SQLITE_DONE)
        return ty_error_set(err, ENOENT, "%s: no such job", what);
    return store_sql_error(c, err, what);
}

static int get_by_name(struct store_conn *c,
                       const char *project,
                       const char *job_id,
                       struct ty_job_row **ret,
                       struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r = store_stmt(c, ST_GET_JOB, &st, err);
    if (r < 0)
        return r;
    store_bind_text(st, 1, project);
    store_bind_text(st, 2, job_id);
    r = fetch_row(c, st, job_id, ret, err);
    if (r == -ENOENT)
        return ty_error_set(err, ENOENT, "no job %s in project %s", job_id, project);
    return r;
}

static int
store_get_by_seq(struct store_conn *c, int64_t seq, struct ty_job_row **ret, struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r = store_stmt(c, ST_GET_JOB_BY_SEQ, &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    r = fetch_row(c, st, "reading a job", ret, err);
    if (r == -ENOENT)
        return ty_error_set(err, ENOENT, "no job with sequence number %lld", (long long)seq);
    return r;
}

int ty_store_get_job(struct ty_store *s,
                     const char *project,
                     const char *job_id,
                     struct ty_job_row **ret,
                     struct ty_error *err)
{
    struct store_conn *c = NULL;
    int r = store_acquire(s, &c, err);
    if (r < 0)
        return r;
    r = get_by_name(c, project, job_id, ret, err);
    store_release(s, c);
    return r;
}

int ty_store_get_job_by_seq(struct ty_store *s,
                            int64_t seq,
                            struct ty_job_row **ret,
                            struct ty_error *err)
{
    struct store_conn *c = NULL;
    int r = store_acquire(s, &c, err);
    if (r < 0)
        return r;
    r = store_get_by_seq(c, seq, ret, err);
    store_release(s, c);
    return r;
}

int ty_store_job_version(struct ty_store *s,
                         const char *project,
                         const char *job_id,
                         int64_t *seq,
                         int64_t *version,
                         struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_stmt(c, ST_JOB_VERSION, &st, err)) < 0)
        return r;
    store_bind_text(st, 1, project);
    store_bind_text(st, 2, job_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        return ty_error_set(err, ENOENT, "no job %s in project %s", job_id, project);
    if (rc != SQLITE_ROW)
        return store_sql_error(c, err, "reading a job's version");
    *seq = sqlite3_column_int64(st, 0);
    *version = sqlite3_column_int64(st, 1);
    return 0;
}

int ty_store_scan_jobs(struct ty_store *s,
                       const struct ty_store_scan *q,
                       int (*fn)(const struct ty_job_row *row, void *ctx),
                       void *ctx,
                       struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = store_acquire(s, &c, err)) < 0)
        return r;
    /* The store_releasep cleanup runs after store_resetp: the statement is reset first. */
    if ((r = store_stmt(c, ST_SCAN, &st, err)) < 0)
        return r;
    store_bind_text(st, 1, q->project ? q->project : "");
    sqlite3_bind_int64(st, 2, q->before_seq > 0 ? q->before_seq : INT64_MAX);
    if (q->state >= 0)
        store_bind_text(st, 3, store_state_name((enum ty_job_state)q->state));
    else
        sqlite3_bind_null(st, 3);
    store_bind_text(st, 4, q->id_prefix ? q->id_prefix : "");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ty_job_row *row = NULL;
        if ((r = store_row_from_stmt(st, &row, err)) < 0)
            return r;
        r = fn(row, ctx);
        ty_job_row_free(row);
        if (r != 0)
            return r;
    }
    if (rc != SQLITE_DONE)
        return store_sql_error(c, err, "listing jobs");
    return 0;
}

/* Collect every row of a prepared and bound statement. */
static int store_collect(struct store_conn *c,
                         sqlite3_stmt *st,
                         struct ty_job_row ***ret,
                         size_t *n,
                         struct ty_error *err)
{
    struct ty_job_row **rows = NULL;
    size_t len = 0, cap = 0;
    int rc, r;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (len == cap) {
            cap = cap ? cap * 2 : 16;
            rows = xreallocarray(rows, cap, sizeof(*rows));
        }
        if ((r = store_row_from_stmt(st, &rows[len], err)) < 0) {
            ty_job_rows_free(rows, len);
            return r;
        }
        len++;
    }
    if (rc != SQLITE_DONE) {
        ty_job_rows_free(rows, len);
        return store_sql_error(c, err, "listing jobs");
    }
    *ret = rows;
    *n = len;
    return 0;
}

/* Begin a transaction on job @seq (*@c, *@row for the caller to release), which must not
 * have ended: -EALREADY when it has, or the store's errors. */
static int begin_unfinished(struct ty_store *s,
                            int64_t seq,
                            struct store_conn **c,
                            struct ty_job_row **row,
                            struct ty_error *err)
{
    int r;

    if ((r = store_acquire(s, c, err)) < 0 || (r = store_begin(*c, err)) < 0 ||
        (r = store_get_by_seq(*c, seq, row, err)) < 0)
        return r;
    if (ty_job_state_is_final((*row)->state))
        return ty_error_set(err,
                            EALREADY,
                            "job %s is already %s",
                            (*row)->job_id,
                            ty_job_state_name((*row)->state));
    return 0;
}

/* Every row of the statement @id, which takes no parameters. */
static int store_list(struct ty_store *s,
                      enum store_stmt id,
                      struct ty_job_row ***ret,
                      size_t *n,
                      struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_stmt(c, id, &st, err)) < 0)
        return r;
    return store_collect(c, st, ret, n, err);
}

int ty_store_unfinished_jobs(struct ty_store *s,
                             struct ty_job_row ***ret,
                             size_t *n,
                             struct ty_error *err)
{
    return store_list(s, ST_UNFINISHED, ret, n, err);
}

int ty_store_queued_jobs(
    struct ty_store *s, size_t limit, struct ty_job_row ***ret, size_t *n, struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_stmt(c, ST_QUEUED, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
    return store_collect(c, st, ret, n, err);
}

int ty_store_claim_job(struct ty_store *s,
                       int64_t seq,
                       int64_t pid,
                       int64_t start,
                       const json_t *grant,
                       struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_free_ char *grant_text =
        grant ? json_dumps(grant, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0)
        return r;
    if ((r = store_stmt(c, ST_CLAIM, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    sqlite3_bind_int64(st, 2, pid);
    sqlite3_bind_int64(st, 3, start);
    if (grant_text)
        sqlite3_bind_text(st, 4, grant_text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 4);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_sql_error(c, err, "claiming a job");
    if (sqlite3_changes(c->db) == 0) {
        /* Not claimable: absent, or claimed or no longer QUEUED. */
        if ((r = store_stmt(c, ST_JOB_EXISTS, &st, err)) < 0)
            return r;
        sqlite3_bind_int64(st, 1, seq);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc == SQLITE_DONE)
            return ty_error_set(err, ENOENT, "no job with sequence number %lld", (long long)seq);
        if (rc != SQLITE_ROW)
            return store_sql_error(c, err, "claiming a job");
        return ty_error_set(
            err, EALREADY, "job %lld is claimed or no longer queued", (long long)seq);
    }
    return store_commit(c, err);
}

int ty_store_unclaim_job(
    struct ty_store *s, int64_t seq, int64_t pid, struct ty_job_row **ret, struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0 ||
        (r = store_stmt(c, ST_UNCLAIM, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    sqlite3_bind_int64(st, 2, pid);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_sql_error(c, err, "giving back a job's claim");
    if (ret && (r = store_get_by_seq(c, seq, ret, err)) < 0)
        return r;
    if ((r = store_commit(c, err)) < 0 && ret) {
        ty_job_row_free(*ret);
        *ret = NULL;
    }
    return r;
}

int store_add_transition(
    struct store_conn *c, int64_t seq, enum ty_job_state state, int64_t usec, struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r = store_stmt(c, ST_INSERT_TRANSITION, &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    store_bind_text(st, 2, store_state_name(state));
    sqlite3_bind_int64(st, 3, usec);
    if (sqlite3_step(st) != SQLITE_DONE)
        return store_sql_error(c, err, "recording a state change");
    return 0;
}

/* Inside a write transaction: the time of @seq's latest transition into *@usec if it is
 * later than *@usec. */
static int not_before_last(struct store_conn *c, int64_t seq, int64_t *usec, struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r = store_stmt(c, ST_LAST_TRANSITION, &st, err);

    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    if (sqlite3_step(st) != SQLITE_ROW)
        return store_sql_error(c, err, "reading a job's last state change");
    if (sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_int64(st, 0) > *usec)
        *usec = sqlite3_column_int64(st, 0);
    return 0;
}

/* Inside a write transaction: move @row to @state at @usec (its fields updated to match),
 * recording the transition. @error_message NULL leaves the stored one. The time is never
 * before the job's last transition: the writers (the daemon's cancel, the supervisor) read
 * the clock before they wait for the write lock, and one that waited longer than the other
 * took to write would put its change before the other's in time (transitions are shown
 * oldest first, in the order they were written). */
static int store_change_state(struct store_conn *c,
                              struct ty_job_row *row,
                              enum ty_job_state state,
                              int64_t usec,
                              const char *error_message,
                              struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r;

    if ((r = not_before_last(c, row->seq, &usec, err)) < 0)
        return r;
    if (state == TY_STATE_RUNNING && row->start_usec == 0)
        row->start_usec = usec;
    if (ty_job_state_is_final(state)) {
        row->end_usec = usec;
        if (error_message)
            ty_replace_str(&row->error_message, error_message);
    }
    row->state = state;
    if ((r = store_stmt(c, ST_UPDATE_STATE, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, row->seq);
    store_bind_text(st, 2, store_state_name(state));
    sqlite3_bind_int64(st, 3, row->start_usec);
    sqlite3_bind_int64(st, 4, row->end_usec);
    store_bind_text(st, 5, row->error_message);
    if (sqlite3_step(st) != SQLITE_DONE)
        return store_sql_error(c, err, "changing a job's state");
    return store_add_transition(c, row->seq, state, usec, err);
}

int ty_store_set_state(struct ty_store *s,
                       int64_t seq,
                       enum ty_job_state state,
                       int64_t usec,
                       const char *error_message,
                       struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    int r;

    if ((r = begin_unfinished(s, seq, &c, &row, err)) < 0)
        return r;
    /* Same state: nothing changes. CANCELLING only ends in a final state. */
    if (row->state == state || (row->state == TY_STATE_CANCELLING && !ty_job_state_is_final(state)))
        return 0;
    /* Never back: a supervisor replacing a lost one goes through PREPARING again. */
    if ((row->state == TY_STATE_RUNNING &&
         (state == TY_STATE_QUEUED || state == TY_STATE_PREPARING)) ||
        (row->state == TY_STATE_PREPARING && state == TY_STATE_QUEUED))
        return 0;
    if ((r = store_change_state(c, row, state, usec, error_message, err)) < 0)
        return r;
    return store_commit(c, err);
}

int ty_store_cancel_job(struct ty_store *s,
                        const char *project,
                        const char *job_id,
                        int64_t usec,
                        struct ty_job_row **ret,
                        struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    int r = 0;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0 ||
        (r = get_by_name(c, project, job_id, &row, err)) < 0)
        return r;
    /* Its supervisor has recorded how it ends and is tearing it down: it ends so, left as a
     * job that has ended is (CANCELLING may only end CANCELLED). */
    switch (ty_job_state_is_final(row->outcome) ? TY_STATE_UNSPECIFIED : row->state) {
    case TY_STATE_QUEUED:
        if (row->shim_pid == 0)
            r = store_change_state(c, row, TY_STATE_CANCELLED, usec, STORE_CANCEL_MESSAGE, err);
        else
            r = store_change_state(c, row, TY_STATE_CANCELLING, usec, NULL, err);
        break;
    case TY_STATE_PREPARING:
    case TY_STATE_RUNNING:
        /* Unclaimed: it waits for a new supervisor after an internal error. */
        if (row->shim_pid == 0 && row->internal_retries > 0)
            r = store_change_state(c, row, TY_STATE_CANCELLED, usec, STORE_CANCEL_MESSAGE, err);
        else
            r = store_change_state(c, row, TY_STATE_CANCELLING, usec, NULL, err);
        break;
    default: /* CANCELLING, final states (and UNSPECIFIED): left as they are */
        break;
    }
    if (r < 0 || (r = store_commit(c, err)) < 0)
        return r;
    if (ret)
        *ret = TAKE_PTR(row);
    return 0;
}

int ty_store_update_labels(struct ty_store *s,
                           const char *project,
                           const char *job_id,
                           json_t *labels,
                           int64_t expect_etag,
                           struct ty_job_row **ret,
                           struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    _cleanup_free_ char *text = NULL;
    int r;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0 ||
        (r = get_by_name(c, project, job_id, &row, err)) < 0)
        return r;
    if (expect_etag != 0 && expect_etag != row->etag)
        return ty_error_set(
            err, ESTALE, "job %s was changed since it was read (etag mismatch)", job_id);
    if ((r = store_stmt(c, ST_UPDATE_LABELS, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, row->seq);
    store_bind_json(st, 2, labels, "{}", &text);
    sqlite3_bind_int64(st, 3, row->etag + 1);
    if (sqlite3_step(st) != SQLITE_DONE)
        return store_sql_error(c, err, "updating labels");
    if ((r = store_commit(c, err)) < 0)
        return r;
    row->etag++;
    json_decref(row->labels);
    row->labels = labels ? json_deep_copy(labels) : json_object();
    if (ret)
        *ret = TAKE_PTR(row);
    return 0;
}

/* UPDATE one column of job @seq with cached statement @id (?1 the seq, ?2 @text, NULL for
 * SQL NULL). -ENOENT when there is no such job. */
static int store_set_column(struct ty_store *s,
                            int64_t seq,
                            enum store_stmt id,
                            const char *text,
                            const char *what,
                            struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0 ||
        (r = store_stmt(c, id, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    store_bind_text(st, 2, text);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_sql_error(c, err, what);
    if (sqlite3_changes(c->db) == 0)
        return ty_error_set(err, ENOENT, "no job with sequence number %lld", (long long)seq);
    return store_commit(c, err);
}

int ty_store_set_output(struct ty_store *s, int64_t seq, json_t *output, struct ty_error *err)
{
    _cleanup_free_ char *text = output ? ty_json_compact(output) : NULL;
    return store_set_column(s, seq, ST_SET_OUTPUT, text, "setting a job's output", err);
}

int ty_store_set_state_reason(struct ty_store *s,
                              int64_t seq,
                              const char *reason,
                              struct ty_error *err)
{
    return store_set_column(s, seq, ST_SET_REASON, reason, "setting a job's state reason", err);
}

int ty_store_transitions(
    struct ty_store *s, int64_t seq, struct ty_transition **ret, size_t *n, struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    struct ty_transition *v = NULL;
    size_t len = 0, cap = 0;
    int r, rc;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_stmt(c, ST_TRANSITIONS, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (len == cap) {
            cap = cap ? cap * 2 : 8;
            v = xreallocarray(v, cap, sizeof(*v));
        }
        v[len].state = store_state_parse((const char *)sqlite3_column_text(st, 0));
        v[len].usec = sqlite3_column_int64(st, 1);
        len++;
    }
    if (rc != SQLITE_DONE) {
        free(v);
        return store_sql_error(c, err, "reading state changes");
    }
    *ret = v;
    *n = len;
    return 0;
}

int ty_store_add_log_file(struct ty_store *s,
                          int64_t seq,
                          const char *task,
                          const char *trial,
                          const char *path,
                          struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    int r;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0 ||
        (r = store_add_log_row(c, seq, task, trial, path, err)) < 0)
        return r;
    return store_commit(c, err);
}

int store_add_log_row(struct store_conn *c,
                      int64_t seq,
                      const char *task,
                      const char *trial,
                      const char *path,
                      struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r = store_stmt(c, ST_ADD_LOG, &st, err), rc;

    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    store_bind_text(st, 2, task);
    store_bind_text(st, 3, trial ? trial : "");
    store_bind_text(st, 4, path);
    rc = sqlite3_step(st);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return ty_error_set(err, ENOENT, "no job with sequence number %lld", (long long)seq);
    return rc == SQLITE_DONE ? 0 : store_sql_error(c, err, "indexing a log file");
}

int ty_store_log_files(
    struct ty_store *s, int64_t seq, struct ty_log_file **ret, size_t *n, struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    struct ty_log_file *v = NULL;
    size_t len = 0, cap = 0;
    int r, rc;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_stmt(c, ST_LOG_FILES, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *trial = (const char *)sqlite3_column_text(st, 1);
        if (len == cap) {
            cap = cap ? cap * 2 : 8;
            v = xreallocarray(v, cap, sizeof(*v));
        }
        v[len].task = xstrdup((const char *)sqlite3_column_text(st, 0));
        v[len].trial = trial && trial[0] ? xstrdup(trial) : NULL;
        v[len].path = xstrdup((const char *)sqlite3_column_text(st, 2));
        len++;
    }
    if (rc != SQLITE_DONE) {
        ty_log_files_free(v, len);
        return store_sql_error(c, err, "listing log files");
    }
    *ret = v;
    *n = len;
    return 0;
}

void ty_log_files_free(struct ty_log_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(files[i].task);
        free(files[i].trial);
        free(files[i].path);
    }
    free(files);
}

/* ---- attempts and lost supervisors ---- */

int ty_store_set_attempt_status(struct ty_store *s,
                                int64_t seq,
                                json_t *status,
                                struct ty_error *err)
{
    _cleanup_free_ char *text = status ? ty_json_compact(status) : NULL;
    return store_set_column(
        s, seq, ST_SET_ATTEMPT_STATUS, text, "recording a job's attempt status", err);
}

int ty_store_set_outcome(struct ty_store *s,
                         int64_t seq,
                         enum ty_job_state outcome,
                         const char *message,
                         struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r;

    if (!ty_job_state_is_final(outcome))
        return ty_error_set(err,
                            EINVAL,
                            "%s is not an outcome (SUCCEEDED, FAILED or CANCELLED)",
                            ty_job_state_name(outcome));
    if ((r = begin_unfinished(s, seq, &c, &row, err)) < 0)
        return r;
    if ((r = store_stmt(c, ST_SET_OUTCOME, &st, err)) < 0)
        return r;
    sqlite3_bind_int64(st, 1, seq);
    store_bind_text(st, 2, ty_job_state_name(outcome));
    store_bind_text(st, 3, message ? message : "");
    if (sqlite3_step(st) != SQLITE_DONE)
        return store_sql_error(c, err, "recording a job's outcome");
    return store_commit(c, err);
}

int64_t ty_job_row_attempt(const struct ty_job_row *row)
{
    json_t *a = json_object_get(row->attempt_status, "attempt");
    int64_t n = json_is_integer(a) ? (int64_t)json_integer_value(a) : 0;

    if (row->first_attempt > n)
        n = row->first_attempt;
    return n < 1 ? 1 : n;
}

/* Inside the transaction: release @row for a new supervisor. */
static int release(struct store_conn *c, struct ty_job_row *row, int64_t next, struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r = store_stmt(c, ST_RELEASE, &st, err);

    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, row->seq);
    sqlite3_bind_int64(st, 2, row->internal_retries + 1);
    sqlite3_bind_int64(st, 3, next);
    if (sqlite3_step(st) != SQLITE_DONE)
        return store_sql_error(c, err, "releasing a job for a new supervisor");
    row->shim_pid = row->shim_start = 0;
    row->internal_retries++;
    row->first_attempt = next;
    return 0;
}

int ty_store_supervisor_lost(struct ty_store *s,
                             int64_t seq,
                             int64_t pid,
                             int64_t max_retries,
                             int64_t usec,
                             const char *fail_message,
                             struct ty_lost *ret,
                             struct ty_job_row **rowp,
                             struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    struct ty_lost lost = {TY_LOST_NONE, 0, 0};
    int r;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0 ||
        (r = store_get_by_seq(c, seq, &row, err)) < 0)
        return r;
    lost.attempt = ty_job_row_attempt(row);
    if (ty_job_state_is_final(row->state) || (row->shim_pid != 0 && row->shim_pid != pid)) {
        store_rollback(c);
    } else {
        if (row->state == TY_STATE_CANCELLING) {
            lost.action = TY_LOST_CANCELLED;
            r = store_change_state(c, row, TY_STATE_CANCELLED, usec, STORE_CANCEL_MESSAGE, err);
        } else if (ty_job_state_is_final(row->outcome)) {
            lost.action = TY_LOST_OUTCOME;
            r = store_change_state(c, row, row->outcome, usec, row->outcome_message, err);
        } else if (row->internal_retries >= max_retries) {
            lost.action = TY_LOST_FAILED;
            r = store_change_state(c, row, TY_STATE_FAILED, usec, fail_message, err);
        } else {
            lost.action = TY_LOST_RETRY;
            lost.next_attempt = lost.attempt + 1;
            r = release(c, row, lost.next_attempt, err);
        }
        if (r < 0 || (r = store_commit(c, err)) < 0)
            return r;
    }
    *ret = lost;
    if (rowp)
        *rowp = TAKE_PTR(row);
    return 0;
}

int ty_store_retry_jobs(struct ty_store *s,
                        struct ty_job_row ***ret,
                        size_t *n,
                        struct ty_error *err)
{
    return store_list(s, ST_RETRY_JOBS, ret, n, err);
}
