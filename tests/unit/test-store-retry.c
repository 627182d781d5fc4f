/* SPDX-License-Identifier: Apache-2.0
 * test-store-retry.c: what the store keeps of attempts (store.h, store-jobs.c): the upgrade of
 * a store written before attempts existed (schema 2), the attempt status and its REST view
 * (attemptStatus, internalRetries), the outcome recorded before the final state, and every
 * decision of ty_store_supervisor_lost: a retry releases the job (still RUNNING) for a new
 * supervisor that starts at the next attempt, twice, then the job FAILS; a recorded outcome,
 * CANCELLING, a final job and a job held by another supervisor are never retried; a job that
 * waits for a new supervisor is claimable, not in the queue, and cancelled at once. */
#include <errno.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-rows.h"
#include "store.h"
#include "tap.h"

#define FAIL_MSG "Internal error occurred for the current attempt."

static struct ty_error err;
static char tmpdir[] = "/tmp/ty-store-retry-XXXXXX";

static struct ty_store *open_db(const char *name)
{
    _cleanup_free_ char *path = xasprintf("%s/%s.db", tmpdir, name);
    struct ty_store *s = NULL;
    if (ty_store_open(path, &s, &err) < 0)
        BAIL_OUT("open %s: %s", path, err.msg);
    return s;
}

static int64_t add(struct ty_store *s, const char *job_id)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = test_queued_row(job_id);
    if (ty_store_insert_job(s, row, &err) < 0)
        BAIL_OUT("insert %s: %s", job_id, err.msg);
    return row->seq;
}

/* A job claimed by @pid and RUNNING, with attempt status {"attempt": @attempt}. */
static int64_t add_running(struct ty_store *s, const char *job_id, int64_t pid, int attempt)
{
    int64_t seq = add(s, job_id);
    _cleanup_json_ json_t *st = json_pack("{s:i,s:i,s:{s:i}}",
                                          "attempt",
                                          attempt,
                                          "maxAttempts",
                                          4,
                                          "replicaRestarts",
                                          "master-replica-0",
                                          0);
    if (ty_store_claim_job(s, seq, pid, 1, NULL, &err) < 0 ||
        ty_store_set_state(s, seq, TY_STATE_PREPARING, 200, NULL, &err) < 0 ||
        ty_store_set_state(s, seq, TY_STATE_RUNNING, 300, NULL, &err) < 0 ||
        ty_store_set_attempt_status(s, seq, st, &err) < 0)
        BAIL_OUT("setting up %s: %s", job_id, err.msg);
    return seq;
}

static struct ty_job_row *cur;

static struct ty_job_row *by_seq(struct ty_store *s, int64_t seq)
{
    ty_job_row_free(cur);
    cur = NULL;
    if (ty_store_get_job_by_seq(s, seq, &cur, &err) < 0)
        BAIL_OUT("get %lld: %s", (long long)seq, err.msg);
    return cur;
}

static struct ty_lost lost(struct ty_store *s, int64_t seq, int64_t pid, int64_t usec)
{
    struct ty_lost l = {.action = -1};
    if (ty_store_supervisor_lost(s, seq, pid, 2, usec, FAIL_MSG, &l, NULL, &err) < 0)
        diag("supervisor_lost: %s", err.msg);
    return l;
}

static bool in_rows(struct ty_job_row **rows, size_t n, int64_t seq)
{
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found = found || rows[i]->seq == seq;
    ty_job_rows_free(rows, n);
    return found;
}

static bool waits_for_supervisor(struct ty_store *s, int64_t seq)
{
    struct ty_job_row **rows = NULL;
    size_t n = 0;
    return ty_store_retry_jobs(s, &rows, &n, &err) == 0 && in_rows(rows, n, seq);
}

static bool queued(struct ty_store *s, int64_t seq)
{
    struct ty_job_row **rows = NULL;
    size_t n = 0;
    return ty_store_queued_jobs(s, 100, &rows, &n, &err) == 0 && in_rows(rows, n, seq);
}

/* A store of schema 2 (before attempts) with a RUNNING job opens, upgrades and works. */
static void test_upgrade(void)
{
    _cleanup_free_ char *path = xasprintf("%s/v2.db", tmpdir);
    static const char *const v2 =
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, project TEXT NOT NULL,"
        " job_id TEXT NOT NULL, state TEXT NOT NULL, create_usec INTEGER NOT NULL DEFAULT 0,"
        " start_usec INTEGER NOT NULL DEFAULT 0, end_usec INTEGER NOT NULL DEFAULT 0,"
        " error_message TEXT NOT NULL DEFAULT '', labels TEXT NOT NULL DEFAULT '{}',"
        " training_input TEXT NOT NULL, training_output TEXT, etag INTEGER NOT NULL DEFAULT 1,"
        " runtime TEXT NOT NULL DEFAULT '', options TEXT NOT NULL DEFAULT '{}',"
        " shim_pid INTEGER NOT NULL DEFAULT 0, shim_start INTEGER NOT NULL DEFAULT 0,"
        " sweep_key TEXT NOT NULL DEFAULT '', UNIQUE (project, job_id));"
        "CREATE INDEX jobs_project_seq ON jobs (project, seq DESC);"
        "CREATE INDEX jobs_state ON jobs (state, seq);"
        "CREATE TABLE transitions (job_seq INTEGER NOT NULL REFERENCES jobs (seq) ON DELETE "
        " CASCADE, state TEXT NOT NULL, usec INTEGER NOT NULL);"
        "CREATE INDEX transitions_job ON transitions (job_seq);"
        "CREATE TABLE log_files (job_seq INTEGER NOT NULL REFERENCES jobs (seq) ON DELETE "
        " CASCADE, task TEXT NOT NULL, trial TEXT NOT NULL DEFAULT '', path TEXT NOT NULL,"
        " UNIQUE (job_seq, task, trial));"
        "ALTER TABLE jobs ADD COLUMN state_reason TEXT NOT NULL DEFAULT '';"
        "INSERT INTO jobs (project, job_id, state, create_usec, start_usec, training_input,"
        " runtime, shim_pid, shim_start, sweep_key) VALUES ('p', 'old', 'RUNNING', 100, 300,"
        " '{\"scaleTier\":\"BASIC\"}', 'process', 4242, 7, 'k');"
        "INSERT INTO jobs (project, job_id, state, create_usec, training_input) VALUES"
        " ('p', 'waiting', 'QUEUED', 200, '{}');"
        "PRAGMA user_version = 2;";
    struct ty_store *s;
    struct ty_job_row *row;
    sqlite3 *db = NULL;
    json_t *j;
    struct ty_lost l;

    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, v2, NULL, NULL, NULL) != SQLITE_OK)
        BAIL_OUT("cannot write a schema-2 store: %s", sqlite3_errmsg(db));
    sqlite3_close(db);
    s = open_db("v2");
    is_int(ty_store_schema_version(), 5, "schema version 5");
    row = by_seq(s, 1);
    ok(row->state == TY_STATE_RUNNING && row->shim_pid == 4242 && !row->attempt_status &&
           row->first_attempt == 0 && row->internal_retries == 0 &&
           row->outcome == TY_STATE_UNSPECIFIED && strcmp(row->outcome_message, "") == 0,
       "upgrade: an old job reads with no attempts recorded");
    ok(row->grant == NULL, "upgrade: and no grant");
    j = ty_job_row_to_json(row);
    ok(!json_object_get(j, "attemptStatus"), "upgrade: no attemptStatus for it");
    json_decref(j);
    ok(queued(s, 2), "upgrade: an old QUEUED job is still in the queue");
    l = lost(s, 1, 4242, 500);
    ok(l.action == TY_LOST_RETRY && l.attempt == 1 && l.next_attempt == 2,
       "upgrade: an old job whose supervisor is lost is retried as attempt 2");
    ty_store_close(s);
}

static void test_attempt_status(void)
{
    struct ty_store *s = open_db("status");
    int64_t j = add_running(s, "j", 100, 1);
    _cleanup_json_ json_t *st = json_pack("{s:i,s:i,s:{s:i,s:i}}",
                                          "attempt",
                                          2,
                                          "maxAttempts",
                                          4,
                                          "replicaRestarts",
                                          "master-replica-0",
                                          0,
                                          "worker-replica-0",
                                          3);
    json_t *v;
    struct ty_lost l;

    is_int(ty_store_set_attempt_status(s, j, st, &err), 0, "status: recorded");
    v = ty_job_row_to_json(by_seq(s, j));
    ok(json_equal(json_object_get(v, "attemptStatus"), st), "status: attemptStatus as recorded");
    json_decref(v);
    is_int(ty_store_set_attempt_status(s, 9999, st, &err), -ENOENT, "status: missing job");

    l = lost(s, j, 100, 400);
    is_int(l.action, TY_LOST_RETRY, "status: a lost supervisor is retried");
    ok(l.attempt == 2 && l.next_attempt == 3, "status: the next attempt follows the recorded one");
    v = ty_job_row_to_json(by_seq(s, j));
    is_int(
        json_integer_value(json_object_get(json_object_get(v, "attemptStatus"), "internalRetries")),
        1,
        "status: internalRetries shown");
    is_int(json_integer_value(json_object_get(json_object_get(v, "attemptStatus"), "attempt")),
           2,
           "status: with the recorded attempt");
    ok(!json_object_get(cur->attempt_status, "internalRetries"),
       "status: the row's own object is not changed");
    json_decref(v);
    ty_store_close(s);
}

/* Two internal retries, then FAILED; the job stays RUNNING meanwhile, never goes back. */
static void test_retries(void)
{
    struct ty_store *s = open_db("retries");
    int64_t j = add_running(s, "j", 100, 1), other = add(s, "other");
    struct ty_job_row *row;
    struct ty_lost l;

    l = lost(s, j, 100, 400);
    ok(l.action == TY_LOST_RETRY && l.next_attempt == 2, "retry 1: released for attempt 2");
    row = by_seq(s, j);
    ok(row->state == TY_STATE_RUNNING && row->shim_pid == 0 && row->shim_start == 0 &&
           row->internal_retries == 1 && row->first_attempt == 2 && row->end_usec == 0,
       "retry 1: still RUNNING, unclaimed, first_attempt 2");
    ok(waits_for_supervisor(s, j) && !waits_for_supervisor(s, other),
       "retry 1: waits for a new supervisor");
    ok(!queued(s, j) && queued(s, other), "retry 1: not in the queue of new jobs");
    is_int(lost(s, j, 100, 450).action, TY_LOST_RETRY, "the same loss again: counted once more");
    is_int(by_seq(s, j)->internal_retries, 2, "(that is what a second loss looks like)");

    s = (ty_store_close(s), open_db("retries2"));
    j = add_running(s, "j", 100, 1);
    (void)lost(s, j, 100, 400);
    is_int(ty_store_claim_job(s, j, 200, 2, NULL, &err), 0, "retry 1: a new supervisor claims it");
    is_int(ty_store_claim_job(s, j, 201, 2, NULL, &err), -EALREADY, "retry 1: only one does");
    is_int(ty_store_set_state(s, j, TY_STATE_PREPARING, 500, NULL, &err), 0, "PREPARING again");
    is_int(by_seq(s, j)->state, TY_STATE_RUNNING, "is ignored: still RUNNING");
    is_int(lost(s, j, 100, 550).action, TY_LOST_NONE, "an old supervisor's loss: nothing");
    is_int(by_seq(s, j)->shim_pid, 200, "the new supervisor keeps it");

    l = lost(s, j, 200, 600);
    ok(l.action == TY_LOST_RETRY && l.attempt == 2 && l.next_attempt == 3,
       "retry 2: the attempt it started at counts when it recorded none");
    is_int(by_seq(s, j)->internal_retries, 2, "retry 2: counted");
    is_int(ty_store_claim_job(s, j, 300, 3, NULL, &err), 0, "retry 2: claimed");
    l = lost(s, j, 300, 700);
    ok(l.action == TY_LOST_FAILED && l.attempt == 3, "third loss: FAILED");
    row = by_seq(s, j);
    ok(row->state == TY_STATE_FAILED && row->end_usec == 700 && row->start_usec == 300 &&
           strcmp(row->error_message, FAIL_MSG) == 0 && row->internal_retries == 2,
       "third loss: the internal error message, the times kept");
    ok(!waits_for_supervisor(s, j), "FAILED: waits for nothing");
    is_int(lost(s, j, 300, 800).action, TY_LOST_NONE, "a final job: nothing");
    ty_store_close(s);
}

static void test_outcome_and_cancel(void)
{
    struct ty_store *s = open_db("outcome");
    int64_t ok_job = add_running(s, "ok_job", 100, 1), bad = add_running(s, "bad", 101, 2),
            c = add_running(s, "c", 102, 1), q = add(s, "q"), w = add_running(s, "w", 103, 1),
            wq = add(s, "wq");
    struct ty_job_row *row = NULL, *after = NULL;
    struct ty_lost l;

    is_int(ty_store_set_outcome(s, ok_job, TY_STATE_RUNNING, NULL, &err),
           -EINVAL,
           "outcome: must be final");
    is_int(ty_store_set_outcome(s, ok_job, TY_STATE_SUCCEEDED, NULL, &err), 0, "outcome: set");
    row = by_seq(s, ok_job);
    ok(row->state == TY_STATE_RUNNING && row->outcome == TY_STATE_SUCCEEDED,
       "outcome: the state is still RUNNING");
    l = lost(s, ok_job, 100, 400);
    is_int(l.action, TY_LOST_OUTCOME, "outcome: a lost supervisor is not retried");
    row = by_seq(s, ok_job);
    ok(row->state == TY_STATE_SUCCEEDED && row->end_usec == 400 && row->internal_retries == 0 &&
           strcmp(row->error_message, "") == 0,
       "outcome: SUCCEEDED");
    is_int(ty_store_set_outcome(s, ok_job, TY_STATE_FAILED, "x", &err),
           -EALREADY,
           "outcome: not on a final job");

    (void)ty_store_set_outcome(s, bad, TY_STATE_FAILED, "The replica master 0 exited 3.", &err);
    if (ty_store_supervisor_lost(s, bad, 101, 2, 500, FAIL_MSG, &l, &after, &err) < 0)
        diag("%s", err.msg);
    ok(l.action == TY_LOST_OUTCOME && after && after->state == TY_STATE_FAILED &&
           strcmp(after->error_message, "The replica master 0 exited 3.") == 0 && l.attempt == 2,
       "outcome: FAILED with its message; the row after is returned");
    ty_job_row_free(after);

    /* A cancel while its supervisor tears down a job whose outcome it recorded: it ends so. */
    {
        int64_t od = add_running(s, "od", 104, 1);
        struct ty_job_row *got = NULL;
        (void)ty_store_set_outcome(s, od, TY_STATE_SUCCEEDED, NULL, &err);
        is_int(ty_store_cancel_job(s, "p", "od", 360, &got, &err), 0, "outcome: cancel answered");
        ok(got && got->state == TY_STATE_RUNNING && got->outcome == TY_STATE_SUCCEEDED,
           "outcome: a cancel leaves the job as it is (not CANCELLING)");
        ty_job_row_free(got);
        l = lost(s, od, 104, 400);
        ok(l.action == TY_LOST_OUTCOME && by_seq(s, od)->state == TY_STATE_SUCCEEDED,
           "outcome: it ends SUCCEEDED");
    }

    ty_job_row_free(row = NULL);
    (void)ty_store_cancel_job(s, "p", "c", 350, &row, &err);
    is_int(row ? (int)row->state : -1, TY_STATE_CANCELLING, "cancel of a claimed job: CANCELLING");
    ty_job_row_free(row);
    l = lost(s, c, 102, 400);
    is_int(l.action, TY_LOST_CANCELLED, "CANCELLING: the lost supervisor's job is CANCELLED");
    is_str(by_seq(s, c)->error_message, "Job cancelled by the user.", "CANCELLED: its message");

    /* A supervisor that died before claiming its QUEUED job. */
    l = lost(s, q, 555, 400);
    ok(l.action == TY_LOST_RETRY && l.attempt == 1 && l.next_attempt == 2,
       "unclaimed: an internal error too, the next attempt is 2");
    row = by_seq(s, q);
    ok(row->state == TY_STATE_QUEUED && waits_for_supervisor(s, q) && !queued(s, q),
       "unclaimed: still QUEUED, waiting for a supervisor, not in the queue");
    is_int(ty_store_claim_job(s, q, 556, 1, NULL, &err), 0, "unclaimed: claimable");

    /* Cancel while a retry waits: at once. */
    (void)lost(s, w, 103, 400);
    row = NULL;
    (void)ty_store_cancel_job(s, "p", "w", 450, &row, &err);
    ok(row && row->state == TY_STATE_CANCELLED && row->end_usec == 450 &&
           strcmp(row->error_message, "Job cancelled by the user.") == 0,
       "cancel while a retry waits: CANCELLED at once");
    ty_job_row_free(row);
    is_int(ty_store_claim_job(s, w, 600, 1, NULL, &err), -EALREADY, "and no supervisor claims it");
    ok(!waits_for_supervisor(s, w), "and it waits for none");
    (void)lost(s, wq, 777, 400);
    row = NULL;
    (void)ty_store_cancel_job(s, "p", "wq", 450, &row, &err);
    is_int(row ? (int)row->state : -1, TY_STATE_CANCELLED, "a QUEUED one as well");
    ty_job_row_free(row);
    ty_store_close(s);
}

/* A RUNNING job nobody released is never claimable (only internal retries make it so). */
static void test_claim_rule(void)
{
    struct ty_store *s = open_db("claim");
    _cleanup_free_ char *path = xasprintf("%s/claim.db", tmpdir);
    int64_t j = add_running(s, "j", 100, 1);
    sqlite3 *db = NULL;

    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, "UPDATE jobs SET shim_pid = 0", NULL, NULL, NULL) != SQLITE_OK)
        BAIL_OUT("cannot change the store: %s", sqlite3_errmsg(db));
    sqlite3_close(db);
    is_int(ty_store_claim_job(s, j, 200, 1, NULL, &err),
           -EALREADY,
           "claim: a RUNNING job without an internal retry is refused");
    ok(!waits_for_supervisor(s, j), "and is not waiting for a supervisor");
    ty_store_close(s);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A job the service ended after losing its supervisor shows no replica still running: those
 * the supervisor last recorded RUNNING or RESTARTING read STOPPED (the row keeps them). */
static void test_settled_replicas(void)
{
    struct ty_store *s = open_db("settled");
    int64_t j = add_running(s, "j", 100, 1);
    _cleanup_json_ json_t *st = json_pack("{s:i,s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]}",
                                          "attempt",
                                          1,
                                          "replicas",
                                          "taskName",
                                          "master-replica-0",
                                          "state",
                                          "SUCCEEDED",
                                          "taskName",
                                          "worker-replica-0",
                                          "state",
                                          "RUNNING",
                                          "taskName",
                                          "worker-replica-1",
                                          "state",
                                          "RESTARTING",
                                          "taskName",
                                          "ps-replica-0",
                                          "state",
                                          "PENDING");
    struct ty_lost l;
    json_t *shown;
    char *states;

    if (ty_store_set_attempt_status(s, j, st, &err) < 0)
        BAIL_OUT("%s", err.msg);
    shown = ty_job_row_to_json(by_seq(s, j));
    states = json_dumps(json_object_get(json_object_get(shown, "attemptStatus"), "replicas"),
                        JSON_COMPACT);
    like(states, "\"state\":\"RUNNING\"", "RUNNING: the replicas as recorded");
    free(states);
    json_decref(shown);
    if (ty_store_supervisor_lost(s, j, 100, 0, 400, FAIL_MSG, &l, NULL, &err) < 0)
        diag("%s", err.msg);
    is_int(l.action, TY_LOST_FAILED, "the supervisor lost with no retry left: FAILED");
    shown = ty_job_row_to_json(by_seq(s, j));
    {
        json_t *r, *reps = json_object_get(json_object_get(shown, "attemptStatus"), "replicas");
        size_t i;
        char buf[128] = "";
        json_array_foreach(reps, i, r)
        {
            size_t n = strlen(buf);
            (void)snprintf(
                buf + n, sizeof(buf) - n, "%s ", json_string_value(json_object_get(r, "state")));
        }
        is_str(buf,
               "SUCCEEDED STOPPED STOPPED PENDING ",
               "FAILED: the running replicas read STOPPED, the others as they were");
    }
    states = json_dumps(cur->attempt_status, JSON_COMPACT);
    like(states, "\"RUNNING\"", "the row keeps what the supervisor recorded");
    free(states);
    json_decref(shown);
    ty_store_close(s);
}

/* The same for a tuning job's trials: a trial still RUNNING when the service ended the job
 * reads CANCELLED (stopped unfinished: a resumed study runs it again), its replicas STOPPED. */
static void test_settled_trials(void)
{
    struct ty_store *s = open_db("settled-trials");
    int64_t j = add_running(s, "t", 100, 1);
    _cleanup_json_ json_t *out = json_loads(
        "{\"trials\": [{\"trialId\": \"1\", \"state\": \"SUCCEEDED\"},"
        " {\"trialId\": \"2\", \"state\": \"RUNNING\", \"attemptStatus\": {\"attempt\": 1,"
        "  \"replicas\": [{\"taskName\": \"master-replica-0\", \"state\": \"RUNNING\"}]}}]}",
        0,
        NULL);
    struct ty_lost l;
    json_t *shown;
    char *text;

    if (!out || ty_store_set_output(s, j, out, &err) < 0)
        BAIL_OUT("%s", err.msg);
    if (ty_store_supervisor_lost(s, j, 100, 0, 400, FAIL_MSG, &l, NULL, &err) < 0)
        diag("%s", err.msg);
    shown = ty_job_row_to_json(by_seq(s, j));
    text = json_dumps(json_object_get(shown, "trainingOutput"), JSON_COMPACT | JSON_SORT_KEYS);
    is_str(text,
           "{\"trials\":[{\"state\":\"SUCCEEDED\",\"trialId\":\"1\"},{\"attemptStatus\":{"
           "\"attempt\":1,\"replicas\":[{\"state\":\"STOPPED\",\"taskName\":\"master-replica-"
           "0\"}]},\"state\":\"CANCELLED\",\"trialId\":\"2\"}]}",
           "FAILED: the running trial reads CANCELLED, its replicas STOPPED");
    free(text);
    json_decref(shown);
    text = json_dumps(cur->training_output, JSON_COMPACT);
    like(text, "\"RUNNING\"", "the row keeps the trials as recorded");
    free(text);
    ty_store_close(s);
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp failed");
    test_upgrade();
    test_attempt_status();
    test_retries();
    test_outcome_and_cancel();
    test_claim_rule();
    test_settled_replicas();
    test_settled_trials();
    ty_job_row_free(cur);
    (void)nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
