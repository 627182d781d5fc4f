/* SPDX-License-Identifier: Apache-2.0
 * store-retry.c: what the store keeps of a job's attempts (store.h): the attempt status its
 * supervisor records, the outcome it decides before the final state, and what becomes of the
 * job when its supervisor is lost -- AI Platform's "internal error": the job is released for a
 * new supervisor, which starts at the attempt after the last one recorded, at most a given
 * number of times, then it fails. The decision is one transaction, so it cannot interleave
 * with a cancel (the API's threads) or with the supervisor's own last writes (another
 * process). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-internal.h"
#include "store.h"

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
    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_begin(c, err)) < 0 ||
        (r = store_get_by_seq(c, seq, &row, err)) < 0)
        return r;
    if (ty_job_state_is_final(row->state))
        return ty_error_set(
            err, EALREADY, "job %s is already %s", row->job_id, ty_job_state_name(row->state));
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
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r;

    if ((r = store_acquire(s, &c, err)) < 0 || (r = store_stmt(c, ST_RETRY_JOBS, &st, err)) < 0)
        return r;
    return store_collect(c, st, ret, n, err);
}
