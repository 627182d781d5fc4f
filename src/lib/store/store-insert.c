/* SPDX-License-Identifier: Apache-2.0
 * store-insert.c: ty_store_insert_job by group commit. Callers serialise their row's JSON,
 * queue a request and sleep; one writer thread (its own connection) takes every request
 * waiting, inserts them all in one BEGIN IMMEDIATE ... COMMIT (one fsync of the WAL), then
 * wakes the callers with their own results. A duplicate (project, job_id) fails only its own
 * statement (SQLite undoes just that statement): that caller gets -EEXIST, the others commit.
 * While a batch commits, new requests gather for the next one, so the more callers wait,
 * the more rows share each fsync. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-internal.h"
#include "store.h"

struct insert_req {
    struct ty_job_row *row;
    char *labels, *input, *options; /* compact JSON text */
    const char *service_log;        /* indexed with the job (NULL: none) */
    struct ty_error *err;           /* the caller's (may be NULL) */
    int result;
    bool done;
    struct insert_req *next;
};

/* Insert one request's job and its first transition; 0, -EEXIST (only this statement
 * undone), or the store's error with the transaction possibly gone (see the caller). */
static int insert_one(struct store_conn *c, struct insert_req *q)
{
    struct ty_job_row *row = q->row;
    sqlite3_stmt *st = NULL;
    int64_t seq;
    int r, rc;

    if ((r = store_stmt(c, ST_INSERT_JOB, &st, q->err)) < 0)
        return r;
    store_bind_text(st, 1, row->project ? row->project : "");
    store_bind_text(st, 2, row->job_id ? row->job_id : "");
    store_bind_text(st, 3, store_state_name(row->state));
    sqlite3_bind_int64(st, 4, row->create_usec);
    store_bind_text(st, 5, q->labels);
    store_bind_text(st, 6, q->input);
    store_bind_text(st, 7, row->runtime ? row->runtime : "");
    store_bind_text(st, 8, q->options);
    store_bind_text(st, 9, row->sweep_key ? row->sweep_key : "");
    rc = sqlite3_step(st);
    if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
        sqlite3_reset(st);
        return ty_error_set(
            q->err, EEXIST, "job %s already exists in project %s", row->job_id, row->project);
    }
    if (rc != SQLITE_DONE) {
        r = store_sql_error(c, q->err, "inserting a job");
        sqlite3_reset(st);
        return r;
    }
    sqlite3_reset(st);
    seq = sqlite3_last_insert_rowid(c->db);

    if ((r = store_add_transition(c, seq, row->state, row->create_usec, q->err)) < 0 ||
        (q->service_log &&
         (r = store_add_log_row(c, seq, "service", NULL, q->service_log, q->err)) < 0))
        return r;
    row->seq = seq;
    row->etag = 1;
    return 0;
}

/* Fail every request of @batch with -@code and @msg (nothing of the batch was committed: a
 * full filesystem fails the whole batch, and no caller is told its job was stored). */
static void fail_all(struct insert_req *batch, int code, const char *msg)
{
    for (struct insert_req *q = batch; q; q = q->next) {
        q->result = ty_error_set(q->err, code, "%s", msg);
        q->row->seq = 0;
    }
}

static void run_batch(struct ty_store *s, struct insert_req *batch)
{
    struct store_conn *c = s->wconn;
    struct ty_error e = {0};
    int r;

    if ((r = store_begin(c, &e)) < 0) {
        fail_all(batch, -r, e.msg);
        return;
    }
    for (struct insert_req *q = batch; q; q = q->next) {
        r = insert_one(c, q);
        q->result = r;
        if (r < 0 && r != -EEXIST) {
            /* Whatever failed may have undone the whole transaction: undo it all. */
            (void)store_sql_error(c, &e, "inserting a job");
            store_rollback(c);
            fail_all(batch, e.code ? e.code : -r, e.msg);
            return;
        }
    }
    if ((r = store_commit(c, &e)) < 0)
        fail_all(batch, -r, e.msg);
}

static void *writer_main(void *userdata)
{
    struct ty_store *s = userdata;

    pthread_mutex_lock(&s->q_lock);
    for (;;) {
        struct insert_req *batch;

        while (!s->q_head && !s->stopping)
            pthread_cond_wait(&s->q_cond, &s->q_lock);
        if (!s->q_head)
            break; /* stopping, and nothing left to do */
        batch = s->q_head;
        s->q_head = s->q_tail = NULL;
        pthread_mutex_unlock(&s->q_lock);

        run_batch(s, batch);

        pthread_mutex_lock(&s->q_lock);
        s->n_batches++;
        for (struct insert_req *q = batch, *next; q; q = next) {
            next = q->next; /* q lives on its caller's stack: read next before waking it */
            q->done = true;
        }
        pthread_cond_broadcast(&s->done_cond);
    }
    pthread_mutex_unlock(&s->q_lock);
    return NULL;
}

int store_writer_start(struct ty_store *s, struct ty_error *err)
{
    sigset_t all, old;
    int r;

    if ((r = store_conn_open(s->path, false, &s->wconn, err)) < 0)
        return r;
    s->wconn->owner = s; /* its transactions take their turn with the pool's (write_lock) */
    /* The writer takes no signals: they are for the daemon's loop. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&s->writer, NULL, writer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0)
        return ty_error_set(err, r, "cannot start the store's writer thread: %s", strerror(r));
    s->writer_started = true;
    return 0;
}

void store_writer_stop(struct ty_store *s)
{
    if (s->writer_started) {
        pthread_mutex_lock(&s->q_lock);
        s->stopping = true;
        pthread_cond_signal(&s->q_cond);
        pthread_mutex_unlock(&s->q_lock);
        pthread_join(s->writer, NULL);
        s->writer_started = false;
    }
    store_conn_close(s->wconn);
    s->wconn = NULL;
}

int ty_store_insert_job(struct ty_store *s, struct ty_job_row *row, struct ty_error *err)
{
    return ty_store_insert_job_logged(s, row, NULL, err);
}

int ty_store_insert_job_logged(struct ty_store *s,
                               struct ty_job_row *row,
                               const char *service_log,
                               struct ty_error *err)
{
    struct insert_req q = {.row = row, .err = err, .service_log = service_log};
    _cleanup_free_ char *labels = NULL, *input = NULL, *options = NULL;

    /* The JSON text is made here, in parallel, not in the writer. */
    q.labels = labels = row->labels ? ty_json_compact(row->labels) : xstrdup("{}");
    q.input = input = row->training_input ? ty_json_compact(row->training_input) : xstrdup("{}");
    q.options = options = row->options ? ty_json_compact(row->options) : xstrdup("{}");

    pthread_mutex_lock(&s->q_lock);
    if (s->q_tail)
        s->q_tail->next = &q;
    else
        s->q_head = &q;
    s->q_tail = &q;
    pthread_cond_signal(&s->q_cond);
    while (!q.done)
        pthread_cond_wait(&s->done_cond, &s->q_lock);
    pthread_mutex_unlock(&s->q_lock);
    return q.result;
}
