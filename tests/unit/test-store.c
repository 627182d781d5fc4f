/* SPDX-License-Identifier: Apache-2.0
 * test-store.c: the SQLite job store (store.h): opening, migrations and the refusal of newer
 * databases, inserts and lookups, listing, the state rules, cancel, labels and etags, outputs,
 * log files, the REST view. Many threads and processes: test-store-concurrent.c; the shared
 * helpers: store-check.h. Databases live in a fresh directory under /tmp, removed at the end. */

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "store-check.h"
#include "store-internal.h"

static int raw_user_version(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return v;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    if (!f)
        return NULL;
    (void)fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    buf = xmalloc(*n + 1);
    if (fread(buf, 1, *n, f) != *n)
        *n = 0;
    fclose(f);
    return buf;
}

static void test_open(void)
{
    _cleanup_free_ char *path = db_path("open");
    struct ty_store *s = open_db("open"), *s2 = NULL;
    int64_t seq;

    ok(ty_store_schema_version() >= 1, "schema version is at least 1");
    is_int(raw_user_version(path), ty_store_schema_version(), "user_version recorded");
    seq = add(s, "p", "persisted", 1000);
    ok(seq > 0, "insert gives a seq");
    ty_store_close(s);
    ty_store_close(NULL);

    s = open_db("open");
    is_int(by_id(s, "p", "persisted")->seq, seq, "row persists across close and open");
    is_int(add(s, "p", "second", 2000), seq + 1, "seq keeps increasing after reopen");
    ty_store_close(s);
    is_int(raw_user_version(path), ty_store_schema_version(), "user_version unchanged by reopen");
    ok(ty_store_open("/nonexistent-dir-ty/x.db", &s2, &err) < 0 && !s2,
       "open in a missing directory fails");
}

static void test_newer_schema(void)
{
    _cleanup_free_ char *path = db_path("newer");
    _cleanup_free_ char *before = NULL, *after = NULL;
    struct ty_store *s = open_db("newer"), *s2 = NULL;
    size_t n1 = 0, n2 = 0;
    char mine[32];
    sqlite3 *db;

    add(s, "p", "j", 1);
    ty_store_close(s);
    sqlite3_open(path, &db);
    is_int(sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL), SQLITE_OK, "bump");
    sqlite3_close(db);

    before = slurp(path, &n1);
    ty_error_clear(&err);
    is_int(ty_store_open(path, &s2, &err), -EPROTO, "a newer database is refused");
    like(err.msg, "999", "message names the database's version");
    snprintf(mine, sizeof(mine), "the %d", ty_store_schema_version());
    like(err.msg, mine, "message names this build's version");
    after = slurp(path, &n2);
    ok(before && after && n1 == n2 && n1 > 0 && memcmp(before, after, n1) == 0,
       "the refused database is byte-for-byte unchanged");
    is_int(raw_user_version(path), 999, "user_version still 999");
}

static void test_insert_get(void)
{
    struct ty_store *s = open_db("insert");
    _cleanup_(ty_job_row_freep) struct ty_job_row *in = new_row("proj", "job_1", 1700000000123456);
    _cleanup_(ty_job_row_freep) struct ty_job_row *dup = new_row("proj", "job_1", 5);
    _cleanup_(ty_job_row_freep) struct ty_job_row *other = new_row("proj2", "job_1", 6);
    struct ty_job_row *got;
    _cleanup_free_ char *ti = NULL;

    is_int(ty_store_insert_job(s, in, &err), 0, "insert");
    ok(in->seq > 0, "seq set");
    is_int(in->etag, 1, "etag starts at 1");

    got = by_id(s, "proj", "job_1");
    is_int(got->seq, in->seq, "get: seq round-trips");
    is_str(got->project, "proj", "project");
    is_str(got->job_id, "job_1", "job id");
    is_int(got->state, TY_STATE_QUEUED, "state");
    is_int(got->create_usec, 1700000000123456, "create time");
    ok(got->start_usec == 0 && got->end_usec == 0, "no start or end time");
    is_str(got->error_message, "", "no error message");
    ok(got->labels && json_equal(got->labels, in->labels), "labels round-trip");
    ok(got->training_input && json_equal(got->training_input, in->training_input),
       "training input round-trips");
    ti = got->training_input ? ty_json_compact(got->training_input) : NULL;
    is_str(ti,
           "{\"scaleTier\":\"BASIC\",\"region\":\"europe-west1\",\"args\":[\"--lr=0.1\","
           "\"\xc3\xbcn\\u0000z\"],\"n\":1.5}",
           "training input keeps key order, unicode and NUL");
    ok(got->training_output == NULL, "no training output yet");
    is_int(got->etag, 1, "etag");
    is_str(got->runtime, "process", "runtime");
    ok(got->options && json_equal(got->options, in->options), "options round-trip");
    ok(got->shim_pid == 0 && got->shim_start == 0, "unclaimed");
    is_str(got->sweep_key, "sweep-1", "sweep key");
    is_str(by_seq(s, in->seq)->job_id, "job_1", "get by seq");

    json_object_set_new(dup->labels, "team", json_string("changed"));
    ty_error_clear(&err);
    is_int(ty_store_insert_job(s, dup, &err), -EEXIST, "duplicate job id -> -EEXIST");
    like(err.msg, "job_1", "duplicate message names the job");
    got = by_id(s, "proj", "job_1");
    ok(got->labels && json_equal(got->labels, in->labels) && got->create_usec == in->create_usec,
       "first row unchanged by the duplicate");

    is_int(ty_store_insert_job(s, other, &err), 0, "same job id in another project");
    ok(other->seq > in->seq, "with its own seq");

    got = NULL;
    is_int(ty_store_get_job(s, "proj", "nope", &got, &err), -ENOENT, "missing job -> -ENOENT");
    is_int(ty_store_get_job_by_seq(s, 99999, &got, &err), -ENOENT, "missing seq -> -ENOENT");
    is_int(ty_store_get_job(s, "proj3", "job_1", &got, &err), -ENOENT, "other project: -ENOENT");
    ok(got == NULL, "nothing returned for a missing job");
    ty_store_close(s);
}

struct collect {
    char ids[1024];
    int n, stop_after;
    struct ty_store *s; /* when set, look each row up again (a nested call) */
};

static int collect_fn(const struct ty_job_row *row, void *ctx)
{
    struct collect *c = ctx;
    size_t len = strlen(c->ids);

    if (c->s) {
        struct ty_job_row *again = NULL;
        int r = ty_store_get_job(c->s, row->project, row->job_id, &again, NULL);
        bool same = r == 0 && again->seq == row->seq;
        ty_job_row_free(again);
        if (!same)
            return -EBADMSG;
    }
    (void)snprintf(c->ids + len, sizeof(c->ids) - len, "%s%s", c->n ? "," : "", row->job_id);
    return ++c->n == c->stop_after ? 42 : 0;
}

static int scan_ret;

/* The job ids ty_store_scan_jobs calls back with (project "p"), comma-separated. */
static const char *scan(struct ty_store *s, int64_t before, int state, const char *prefix, int stop)
{
    static struct collect c;
    struct ty_store_scan q = {.project = "p", .before_seq = before, .state = state};
    q.id_prefix = prefix;
    memset(&c, 0, sizeof(c));
    c.stop_after = stop;
    scan_ret = ty_store_scan_jobs(s, &q, collect_fn, &c, &err);
    return c.ids;
}

static void test_scan(void)
{
    struct ty_store *s = open_db("scan");
    int64_t a2, ab;
    struct collect c = {.s = s};
    struct ty_store_scan q = {.project = "other", .state = -1};

    add(s, "p", "a1", 1);
    a2 = add(s, "p", "a2", 2);
    add(s, "p", "b1", 3);
    ab = add(s, "p", "ab", 4);
    add(s, "other", "a3", 5);
    ty_store_set_state(s, a2, TY_STATE_RUNNING, 10, NULL, &err);

    is_str(scan(s, 0, -1, NULL, 0), "ab,b1,a2,a1", "scan: newest first, only the project");
    is_int(scan_ret, 0, "scan returns 0 when the jobs run out");
    is_str(scan(s, ab, -1, NULL, 0), "b1,a2,a1", "scan: before_seq");
    is_str(scan(s, 0, TY_STATE_QUEUED, NULL, 0), "ab,b1,a1", "scan: state");
    is_str(scan(s, 0, TY_STATE_RUNNING, NULL, 0), "a2", "scan: other state");
    is_str(scan(s, 0, -1, "a", 0), "ab,a2,a1", "scan: id prefix");
    is_str(scan(s, 0, -1, "A", 0), "ab,a2,a1", "scan: prefix ignores ASCII case");
    is_str(scan(s, 0, -1, "%", 0), "", "scan: prefix is not a LIKE pattern");
    is_str(scan(s, 0, -1, "", 0), "ab,b1,a2,a1", "scan: empty prefix matches all");
    is_str(scan(s, ab, TY_STATE_QUEUED, "a", 0), "a1", "scan: all narrowings together");
    is_str(scan(s, 0, -1, NULL, 2), "ab,b1", "scan: stops when the callback returns non-zero");
    is_int(scan_ret, 42, "scan returns the callback's value");
    is_int(ty_store_scan_jobs(s, &q, collect_fn, &c, &err), 0, "scan callback may call the store");
    is_str(c.ids, "a3", "nested lookups see the same rows");
    q.project = "none";
    is_int(ty_store_scan_jobs(s, &q, collect_fn, &c, &err), 0, "unknown project: no rows, 0");
    ty_store_close(s);
}

static void test_queue(void)
{
    struct ty_store *s = open_db("queue");
    int64_t q1 = add(s, "p", "q1", 1), q2 = add(s, "p", "q2", 2), q3 = add(s, "x", "q3", 3);
    int64_t q4 = add(s, "p", "q4", 4), q5 = add(s, "p", "q5", 5);
    struct ty_job_row **rows = NULL, *row;
    size_t n = 0;

    is_int(ty_store_queued_jobs(s, 10, &rows, &n, &err), 0, "queued jobs at first");
    ok(n == 5 && rows[0]->seq == q1 && rows[2]->seq == q3 && rows[4]->seq == q5,
       "queued: every project, oldest first");
    ty_job_rows_free(rows, n);
    {
        json_t *grant = json_pack("{s:i,s:[i,i],s:b}", "trials", 1, "gpus", 0, 1, "gpuStandIn", 1);
        is_int(ty_store_claim_job(s, q1, 4242, 777, grant, &err), 0, "claim");
        json_decref(grant);
    }
    is_int(
        ty_store_claim_job(s, q1, 4343, 888, NULL, &err), -EALREADY, "second claim -> -EALREADY");
    is_int(ty_store_claim_job(s, 99999, 1, 1, NULL, &err), -ENOENT, "claim of a missing job");
    row = by_seq(s, q1);
    ok(row->shim_pid == 4242 && row->shim_start == 777 && row->state == TY_STATE_QUEUED,
       "claim records the first supervisor and keeps QUEUED");
    ok(json_is_object(row->grant) &&
           json_integer_value(json_object_get(row->grant, "trials")) == 1 &&
           json_array_size(json_object_get(row->grant, "gpus")) == 2,
       "claim records the grant");
    is_int(ty_store_queued_jobs(s, 10, &rows, &n, &err), 0, "queued jobs after a claim");
    ok(n == 4 && rows[0]->seq == q2, "claimed jobs leave the queue");
    ty_job_rows_free(rows, n);
    is_int(ty_store_cancel_job(s, "p", "q2", 10, NULL, &err), 0, "cancel queued q2");
    is_int(
        ty_store_claim_job(s, q2, 1, 1, NULL, &err), -EALREADY, "claim after cancel -> -EALREADY");

    is_int(ty_store_queued_jobs(s, 10, &rows, &n, &err), 0, "queued jobs");
    ok(n == 3 && rows[0]->seq == q3 && rows[1]->seq == q4 && rows[2]->seq == q5,
       "queued: the unclaimed ones of every project, oldest first (not claimed, not cancelled)");
    ty_job_rows_free(rows, n);
    is_int(ty_store_queued_jobs(s, 1, &rows, &n, &err), 0, "queued jobs with a limit");
    ok(n == 1 && rows[0]->seq == q3, "limit respected");
    ty_job_rows_free(rows, n);

    ty_store_set_state(s, q4, TY_STATE_RUNNING, 20, NULL, &err);
    ty_store_set_state(s, q5, TY_STATE_FAILED, 20, "oops", &err);
    is_int(ty_store_unfinished_jobs(s, &rows, &n, &err), 0, "unfinished jobs");
    ok(n == 3 && rows[0]->seq == q1 && rows[1]->seq == q3 && rows[2]->seq == q4,
       "unfinished: every project, oldest first, no final jobs");
    ty_job_rows_free(rows, n);
    ty_store_close(s);
}

/* The transitions of @seq as "STATE@usec,..." */
static const char *transitions(struct ty_store *s, int64_t seq)
{
    static char buf[512];
    struct ty_transition *t = NULL;
    size_t n = 0, len = 0;

    buf[0] = '\0';
    if (ty_store_transitions(s, seq, &t, &n, &err) < 0)
        return "(error)";
    for (size_t i = 0; i < n && len < sizeof(buf); i++)
        len += (size_t)snprintf(buf + len,
                                sizeof(buf) - len,
                                "%s%s@%lld",
                                i ? "," : "",
                                ty_job_state_name(t[i].state),
                                (long long)t[i].usec);
    free(t);
    return buf;
}

static void test_states(void)
{
    struct ty_store *s = open_db("states");
    int64_t j = add(s, "p", "j", 100), c = add(s, "p", "c", 100);
    static const struct {
        enum ty_job_state state;
        int64_t usec;
        int want;
        const char *name;
    } steps[] = {
        {TY_STATE_PREPARING, 200, 0, "QUEUED -> PREPARING"},
        {TY_STATE_RUNNING, 300, 0, "PREPARING -> RUNNING"},
        {TY_STATE_RUNNING, 350, 0, "RUNNING again: 0, nothing recorded"},
        {TY_STATE_PREPARING, 400, 0, "RUNNING -> PREPARING is ignored (0): never back"},
        {TY_STATE_QUEUED, 450, 0, "RUNNING -> QUEUED is ignored (0)"},
        {TY_STATE_RUNNING, 500, 0, "RUNNING once more: nothing recorded"},
    };
    struct ty_job_row *row;

    for (size_t i = 0; i < TY_ARRAY_SIZE(steps); i++)
        is_int(ty_store_set_state(s, j, steps[i].state, steps[i].usec, NULL, &err),
               steps[i].want,
               "%s",
               steps[i].name);
    row = by_seq(s, j);
    ok(row->start_usec == 300 && row->end_usec == 0, "start time is the first RUNNING");
    is_int(ty_store_set_state(s, j, TY_STATE_FAILED, 600, "replica exited 1", &err), 0, "FAILED");
    row = by_seq(s, j);
    ok(row->state == TY_STATE_FAILED && row->end_usec == 600, "final state sets the end time");
    is_str(row->error_message, "replica exited 1", "and the error message");
    ty_error_clear(&err);
    is_int(
        ty_store_set_state(s, j, TY_STATE_SUCCEEDED, 700, NULL, &err), -EALREADY, "final is final");
    like(err.msg, "FAILED", "message names the final state");
    is_int(ty_store_set_state(s, j, TY_STATE_FAILED, 700, "again", &err),
           -EALREADY,
           "the same final state again -> -EALREADY");
    row = by_seq(s, j);
    ok(row->state == TY_STATE_FAILED && row->end_usec == 600 &&
           strcmp(row->error_message, "replica exited 1") == 0,
       "a final job is not changed");
    is_str(transitions(s, j),
           "QUEUED@100,PREPARING@200,RUNNING@300,FAILED@600",
           "transitions recorded in order (creation included, no repeats)");

    ty_store_set_state(s, c, TY_STATE_RUNNING, 200, NULL, &err);
    is_int(ty_store_set_state(s, c, TY_STATE_CANCELLING, 300, NULL, &err), 0, "CANCELLING");
    is_int(ty_store_set_state(s, c, TY_STATE_RUNNING, 400, NULL, &err),
           0,
           "CANCELLING -> RUNNING is ignored (0)");
    is_int(ty_store_set_state(s, c, TY_STATE_PREPARING, 400, NULL, &err),
           0,
           "CANCELLING -> PREPARING is ignored (0)");
    is_int(by_seq(s, c)->state, TY_STATE_CANCELLING, "still CANCELLING");
    is_int(ty_store_set_state(s, c, TY_STATE_CANCELLED, 500, "Job cancelled by the user.", &err),
           0,
           "CANCELLING -> CANCELLED");
    row = by_seq(s, c);
    ok(row->state == TY_STATE_CANCELLED && row->start_usec == 200 && row->end_usec == 500,
       "cancelled job has its start and end times");
    is_str(transitions(s, c),
           "QUEUED@100,RUNNING@200,CANCELLING@300,CANCELLED@500",
           "ignored changes are not recorded");
    /* A writer whose clock reading is older than the last change (it read the clock, then
     * waited for the write lock while the other wrote) records its change at that time. */
    {
        int64_t l = add(s, "p", "late", 100);
        ty_store_set_state(s, l, TY_STATE_PREPARING, 300, NULL, &err);
        ty_store_set_state(s, l, TY_STATE_RUNNING, 310, NULL, &err);
        is_int(ty_store_cancel_job(s, "p", "late", 250, NULL, &err), 0, "a cancel read at 250");
        ty_store_set_state(s, l, TY_STATE_CANCELLED, 305, "Job cancelled by the user.", &err);
        is_str(transitions(s, l),
               "QUEUED@100,PREPARING@300,RUNNING@310,CANCELLING@310,CANCELLED@310",
               "transitions never go back in time");
        row = by_seq(s, l);
        ok(row->start_usec == 310 && row->end_usec == 310, "nor do the start and end times");
    }
    is_int(ty_store_set_state(s, 99999, TY_STATE_RUNNING, 1, NULL, &err),
           -ENOENT,
           "set_state of a missing job");
    is_str(transitions(s, 99999), "", "no transitions for a missing job");
    ty_store_close(s);
}

static void test_cancel(void)
{
    struct ty_store *s = open_db("cancel");
    static const struct {
        const char *id;
        enum ty_job_state before, after;
    } cases[] = {
        {"queued", TY_STATE_QUEUED, TY_STATE_CANCELLED},
        {"claimed", TY_STATE_QUEUED, TY_STATE_CANCELLING},
        {"prep", TY_STATE_PREPARING, TY_STATE_CANCELLING},
        {"run", TY_STATE_RUNNING, TY_STATE_CANCELLING},
        {"cing", TY_STATE_CANCELLING, TY_STATE_CANCELLING},
        {"done", TY_STATE_SUCCEEDED, TY_STATE_SUCCEEDED},
        {"failed", TY_STATE_FAILED, TY_STATE_FAILED},
        {"cancelled", TY_STATE_CANCELLED, TY_STATE_CANCELLED},
    };
    struct ty_job_row *row;
    int64_t seq[TY_ARRAY_SIZE(cases)];

    for (size_t i = 0; i < TY_ARRAY_SIZE(cases); i++) {
        seq[i] = add(s, "p", cases[i].id, 1);
        if (cases[i].before != TY_STATE_QUEUED)
            ty_store_set_state(s, seq[i], cases[i].before, 5, NULL, &err);
    }
    ty_store_claim_job(s, seq[1], 10, 10, NULL, &err);
    for (size_t i = 0; i < TY_ARRAY_SIZE(cases); i++) {
        row = NULL;
        is_int(
            ty_store_cancel_job(s, "p", cases[i].id, 50, &row, &err), 0, "cancel %s", cases[i].id);
        row = keep(row);
        ok(row->state == cases[i].after && by_seq(s, seq[i])->state == cases[i].after,
           "%s: %s -> %s",
           cases[i].id,
           ty_job_state_name(cases[i].before),
           ty_job_state_name(cases[i].after));
    }
    row = by_seq(s, seq[0]);
    ok(row->end_usec == 50 && strcmp(row->error_message, "Job cancelled by the user.") == 0,
       "an unclaimed QUEUED job is cancelled at once, with the user message");
    ok(by_seq(s, seq[1])->end_usec == 0, "CANCELLING has no end time yet");
    ok(by_seq(s, seq[5])->end_usec == 5, "a final job keeps its end time");
    is_str(transitions(s, seq[3]),
           "QUEUED@1,RUNNING@5,CANCELLING@50",
           "cancel records its transition");
    is_str(transitions(s, seq[4]), "QUEUED@1,CANCELLING@5", "a repeated cancel records nothing");
    row = NULL;
    is_int(ty_store_cancel_job(s, "p", "missing", 50, &row, &err), -ENOENT, "cancel missing");
    ok(row == NULL, "no row for a missing job");
    ty_store_close(s);
}

/* The log files of @seq as "task/trial=path;..." */
static const char *log_files(struct ty_store *s, int64_t seq)
{
    static char buf[512];
    struct ty_log_file *lf = NULL;
    size_t n = 0, len = 0;

    buf[0] = '\0';
    if (ty_store_log_files(s, seq, &lf, &n, &err) < 0)
        return "(error)";
    for (size_t i = 0; i < n && len < sizeof(buf); i++)
        len += (size_t)snprintf(buf + len,
                                sizeof(buf) - len,
                                "%s%s/%s=%s",
                                i ? ";" : "",
                                lf[i].task,
                                lf[i].trial ? lf[i].trial : "-",
                                lf[i].path);
    ty_log_files_free(lf, n);
    return buf;
}

static void test_labels_output_logs(void)
{
    struct ty_store *s = open_db("labels");
    int64_t j = add(s, "p", "j", 1);
    _cleanup_json_ json_t *l1 = js("{\"a\":\"1\"}"), *l2 = js("{\"b\":\"2\"}");
    _cleanup_json_ json_t *out = js("{\"consumedMLUnits\":1.5,\"isBuiltInAlgorithmJob\":false}");
    _cleanup_json_ json_t *out2 = js("{\"consumedMLUnits\":2}");
    struct ty_job_row *row = NULL;

    is_int(ty_store_update_labels(s, "p", "j", l1, 0, &row, &err), 0, "update labels, etag 0");
    row = keep(row);
    ok(row->etag == 2 && row->labels && json_equal(row->labels, l1), "etag bumped, labels new");
    row = NULL;
    is_int(ty_store_update_labels(s, "p", "j", l2, 2, &row, &err), 0, "update with right etag");
    row = keep(row);
    ok(row->etag == 3 && row->labels && json_equal(row->labels, l2), "etag 3");
    is_int(ty_store_update_labels(s, "p", "j", l1, 2, NULL, &err),
           -ESTALE,
           "update with a stale etag -> -ESTALE");
    row = by_id(s, "p", "j");
    ok(row->etag == 3 && row->labels && json_equal(row->labels, l2), "stale update: no change");
    is_int(ty_store_update_labels(s, "p", "nope", l1, 0, NULL, &err), -ENOENT, "missing job");

    is_int(ty_store_set_output(s, j, out, &err), 0, "set output");
    row = by_id(s, "p", "j");
    ok(row->training_output && json_equal(row->training_output, out), "output stored");
    is_int(ty_store_set_output(s, j, out2, &err), 0, "replace output");
    row = by_id(s, "p", "j");
    ok(row->training_output && json_equal(row->training_output, out2), "output replaced");
    ok(row->etag == 3, "output does not touch the etag");
    is_int(ty_store_set_output(s, 99999, out, &err), -ENOENT, "output of a missing job");

    is_int(ty_store_add_log_file(s, j, "worker-replica-0", NULL, "/l/w0", &err), 0, "add log");
    is_int(ty_store_add_log_file(s, j, "master-replica-0", "2", "/l/m0.2", &err), 0, "trial 2");
    is_int(ty_store_add_log_file(s, j, "master-replica-0", "1", "/l/m0.1", &err), 0, "trial 1");
    is_int(ty_store_add_log_file(s, j, "master-replica-0", NULL, "/l/m0", &err), 0, "no trial");
    is_int(ty_store_add_log_file(s, j, "master-replica-0", "1", "/l/m0.1", &err),
           0,
           "adding the same again is fine");
    is_int(ty_store_add_log_file(s, j, "worker-replica-0", NULL, "/l/w0", &err),
           0,
           "adding the same again without trial is fine");
    is_int(ty_store_add_log_file(s, 99999, "t", NULL, "/x", &err), -ENOENT, "log of missing job");
    is_str(log_files(s, j),
           "master-replica-0/-=/l/m0;master-replica-0/1=/l/m0.1;master-replica-0/2=/l/m0.2;"
           "worker-replica-0/-=/l/w0",
           "each task and trial once, ordered by task then trial");
    is_str(log_files(s, 99999), "", "no log files is an empty list");
    {
        _cleanup_(ty_job_row_freep) struct ty_job_row *nr = new_row("p", "logged", 5);
        _cleanup_(ty_job_row_freep) struct ty_job_row *dup = new_row("p", "logged", 6);
        is_int(ty_store_insert_job_logged(s, nr, "/l/logged/service.log", &err),
               0,
               "insert with its service log");
        is_str(log_files(s, nr->seq),
               "service/-=/l/logged/service.log",
               "the service log is indexed with the job");
        is_int(ty_store_insert_job_logged(s, dup, "/l/dup/service.log", &err),
               -EEXIST,
               "a duplicate id: nothing indexed either");
        is_str(log_files(s, nr->seq), "service/-=/l/logged/service.log", "  the first one's kept");
    }
    ty_store_close(s);
}

static void test_etag(void)
{
    const int64_t vals[] = {1, 2, 255, 256, 0x0102030405060708, INT64_MAX};
    const char *junk[] = {"",
                          "AAAAAAAAAAE",
                          "AAAAAAAAAAE==",
                          "AAAAAAAAAAF=",
                          "AAAAAAAAAAA=",
                          "gAAAAAAAAAA=",
                          "AAAAAAAA*AE=",
                          "AAAAAAAA AE=",
                          "AAAAAAAAAA=E",
                          "AAAAAAAAAAAAAAAE",
                          "W/\"1\"",
                          NULL};
    char buf[16];
    int64_t v;

    is_str(ty_store_etag_format(1, buf, sizeof(buf)), "AAAAAAAAAAE=", "etag 1");
    is_str(ty_store_etag_format(0x0102030405060708, buf, sizeof(buf)),
           "AQIDBAUGBwg=",
           "etag is base64 of the big-endian counter");
    for (size_t i = 0; i < TY_ARRAY_SIZE(vals); i++) {
        v = 0;
        ty_store_etag_format(vals[i], buf, sizeof(buf));
        ok(ty_store_etag_parse(buf, &v) == 0 && v == vals[i], "etag %s round-trips", buf);
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(junk); i++)
        is_int(ty_store_etag_parse(junk[i], &v),
               -EINVAL,
               "rejects etag '%s'",
               junk[i] ? junk[i] : "(null)");
}

static void test_to_json(void)
{
    struct ty_job_row row = {
        .seq = 7,
        .project = "p",
        .job_id = "census_1",
        .state = TY_STATE_FAILED,
        .create_usec = 1700000000123456,
        .start_usec = 1700000060000001,
        .end_usec = 1700000120500000,
        .error_message = "The replica master 0 exited with a non-zero status of 1.",
        .etag = 3,
    };
    json_t *j;
    char *text;

    row.training_input = js("{\"scaleTier\":\"BASIC\",\"region\":\"us-central1\"}");
    row.training_output = js("{\"consumedMLUnits\":0.5}");
    row.labels = js("{\"team\":\"ml\"}");
    j = ty_job_row_to_json(&row);
    text = ty_json_compact(j);
    is_str(text,
           "{\"jobId\":\"census_1\",\"trainingInput\":{\"scaleTier\":\"BASIC\",\"region\":"
           "\"us-central1\"},\"createTime\":\"2023-11-14T22:13:20.123456Z\",\"startTime\":"
           "\"2023-11-14T22:14:20.000001Z\",\"endTime\":\"2023-11-14T22:15:20.500000Z\","
           "\"state\":\"FAILED\",\"errorMessage\":\"The replica master 0 exited with a non-zero "
           "status of 1.\",\"trainingOutput\":{\"consumedMLUnits\":0.5},\"labels\":{\"team\":"
           "\"ml\"},\"etag\":\"AAAAAAAAAAM=\"}",
           "REST view of a finished job");
    free(text);
    json_decref(j);
    json_decref(row.training_output);
    json_decref(row.labels);

    row.state = TY_STATE_QUEUED;
    row.start_usec = row.end_usec = 0;
    row.error_message = "";
    row.training_output = NULL;
    row.labels = json_object();
    row.etag = 1;
    j = ty_job_row_to_json(&row);
    text = ty_json_compact(j);
    is_str(text,
           "{\"jobId\":\"census_1\",\"trainingInput\":{\"scaleTier\":\"BASIC\",\"region\":"
           "\"us-central1\"},\"createTime\":\"2023-11-14T22:13:20.123456Z\",\"state\":\"QUEUED\","
           "\"etag\":\"AAAAAAAAAAE=\"}",
           "REST view of a queued job leaves unset fields and empty labels out");
    ok(json_object_get(j, "trainingInput") == row.training_input,
       "the view shares the row's values (read-only)");
    free(text);
    json_decref(j);
    row.error_message = "bad \xff\xfe byte";
    j = ty_job_row_to_json(&row);
    is_str(ty_json_str(j, "errorMessage"), "bad ?? byte", "text that is not UTF-8 is kept, mended");
    json_decref(j);
    json_decref(row.labels);
    json_decref(row.training_input);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_open();
    test_newer_schema();
    test_insert_get();
    test_scan();
    test_queue();
    test_states();
    test_cancel();
    test_labels_output_logs();
    test_etag();
    test_to_json();
    keep(NULL);
    remove_tmpdir();
    return done_testing();
}
