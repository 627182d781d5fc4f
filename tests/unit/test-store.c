/* SPDX-License-Identifier: Apache-2.0
 * test-store.c: the SQLite job store (store.h): opening, migrations and the refusal of newer
 * databases, inserts and lookups, listing, the state rules, cancel, labels and etags, outputs,
 * log files, the REST view, group commit under many threads and two processes writing one
 * database. Databases live in a fresh directory under /tmp, removed at the end. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-internal.h"
#include "store.h"
#include "tap.h"
#include "timeutil.h"

static struct ty_error err;
static char tmpdir[] = "/tmp/ty-store-XXXXXX";

static char *db_path(const char *name)
{
    return xasprintf("%s/%s.db", tmpdir, name);
}

static struct ty_store *open_db(const char *name)
{
    _cleanup_free_ char *path = db_path(name);
    struct ty_store *s = NULL;
    if (ty_store_open(path, &s, &err) < 0) {
        diag("open %s: %s", path, err.msg);
        abort();
    }
    return s;
}

static json_t *js(const char *text)
{
    json_t *j = json_loads(text, JSON_ALLOW_NUL, NULL);
    if (!j)
        abort();
    return j;
}

/* A row as the API layer would insert it; caller frees. */
static struct ty_job_row *new_row(const char *project, const char *job_id, int64_t usec)
{
    struct ty_job_row *row = xcalloc(1, sizeof(*row));
    row->project = xstrdup(project);
    row->job_id = xstrdup(job_id);
    row->state = TY_STATE_QUEUED;
    row->create_usec = usec;
    row->labels = js("{\"team\":\"vision\",\"env\":\"ci\"}");
    row->training_input = js("{\"scaleTier\":\"BASIC\",\"region\":\"europe-west1\","
                             "\"args\":[\"--lr=0.1\",\"\\u00fcn\\u0000z\"],\"n\":1.5}");
    row->runtime = xstrdup("process");
    row->options = js("{\"gpu\":false}");
    row->sweep_key = xstrdup("sweep-1");
    return row;
}

/* Insert a fresh row and return its seq (the test aborts when it fails). */
static int64_t add(struct ty_store *s, const char *project, const char *job_id, int64_t usec)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = new_row(project, job_id, usec);
    if (ty_store_insert_job(s, row, &err) < 0) {
        diag("insert %s/%s: %s", project, job_id, err.msg);
        abort();
    }
    return row->seq;
}

/* The last row fetched or returned (freed when the next one is kept); never NULL: a missing
 * job reads as @none. */
static struct ty_job_row *cur;
static struct ty_job_row none = {.project = "", .job_id = "", .error_message = ""};

static struct ty_job_row *keep(struct ty_job_row *row)
{
    if (cur != row)
        ty_job_row_free(cur);
    cur = row;
    return row ? row : &none;
}

static struct ty_job_row *by_seq(struct ty_store *s, int64_t seq)
{
    struct ty_job_row *row = NULL;
    (void)ty_store_get_job_by_seq(s, seq, &row, &err);
    return keep(row);
}

static struct ty_job_row *by_id(struct ty_store *s, const char *project, const char *job_id)
{
    struct ty_job_row *row = NULL;
    (void)ty_store_get_job(s, project, job_id, &row, &err);
    return keep(row);
}

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

#define N_THREADS    16
#define N_PER_THREAD 50
#define N_SHARED     10 /* the last N_SHARED inserts of every thread use shared ids */

struct worker {
    pthread_t t;
    struct ty_store *s;
    int idx, n_ok, n_exist, n_other;
    int64_t seqs[N_PER_THREAD];
};

static void *insert_worker(void *userdata)
{
    struct worker *w = userdata;
    for (int i = 0; i < N_PER_THREAD; i++) {
        char id[64];
        struct ty_job_row *row;
        struct ty_error e;
        int r;

        if (i < N_PER_THREAD - N_SHARED)
            snprintf(id, sizeof(id), "t%d_%d", w->idx, i);
        else
            snprintf(id, sizeof(id), "shared_%d", i);
        row = new_row("conc", id, ty_now_usec());
        r = ty_store_insert_job(w->s, row, &e);
        w->seqs[i] = r == 0 ? row->seq : 0;
        w->n_ok += r == 0;
        w->n_exist += r == -EEXIST;
        w->n_other += r < 0 && r != -EEXIST;
        ty_job_row_free(row);
    }
    return NULL;
}

static void *get_worker(void *userdata)
{
    struct worker *w = userdata;
    for (int i = 0; i < 200; i++) {
        char id[64];
        struct ty_job_row *row = NULL;
        snprintf(id, sizeof(id), "t%d_%d", (w->idx + i) % N_THREADS, i % 40);
        if (ty_store_get_job(w->s, "conc", id, &row, NULL) == 0 && row->seq > 0)
            w->n_ok++;
        else
            w->n_other++;
        ty_job_row_free(row);
    }
    return NULL;
}

/* Run @fn on N_THREADS threads; returns the sums of their counts in w[0] (after the run). */
static int64_t run_threads(struct ty_store *s, int base, void *(*fn)(void *), struct worker *w)
{
    int64_t t0 = ty_mono_usec();
    memset(w, 0, sizeof(*w) * N_THREADS);
    for (int i = 0; i < N_THREADS; i++) {
        w[i].s = s;
        w[i].idx = base + i;
        pthread_create(&w[i].t, NULL, fn, &w[i]);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(w[i].t, NULL);
    for (int i = 1; i < N_THREADS; i++) {
        w[0].n_ok += w[i].n_ok;
        w[0].n_exist += w[i].n_exist;
        w[0].n_other += w[i].n_other;
    }
    return ty_mono_usec() - t0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int count_fn(const struct ty_job_row *row, void *ctx)
{
    (*(int *)ctx)++;
    return 0;
}

static void test_threads(void)
{
    struct ty_store *s = open_db("threads");
    struct worker w[N_THREADS];
    int64_t seqs[N_THREADS * N_PER_THREAD], usec, seq_usec = ty_mono_usec();
    size_t n = 0;
    int dups = 0, count = 0;
    struct ty_store_scan q = {.project = "conc", .state = -1};
    uint64_t batches;

    /* One caller at a time: one transaction (and fsync) per insert, for comparison. */
    for (int i = 0; i < 100; i++) {
        char id[32];
        snprintf(id, sizeof(id), "seq_%d", i);
        add(s, "seq", id, 1);
    }
    seq_usec = ty_mono_usec() - seq_usec;
    batches = s->n_batches;
    usec = run_threads(s, 0, insert_worker, w);
    batches = s->n_batches - batches;
    for (int i = 0; i < N_THREADS; i++)
        for (int k = 0; k < N_PER_THREAD; k++)
            if (w[i].seqs[k])
                seqs[n++] = w[i].seqs[k];
    diag("one caller: %.0f inserts/s; %d callers: %.0f inserts/s in %llu transactions",
         100 * 1e6 / (double)(seq_usec ? seq_usec : 1),
         N_THREADS,
         N_THREADS * N_PER_THREAD * 1e6 / (double)(usec ? usec : 1),
         (unsigned long long)batches);
    is_int(w[0].n_other, 0, "no insert failed otherwise");
    is_int(w[0].n_ok,
           N_THREADS * (N_PER_THREAD - N_SHARED) + N_SHARED,
           "every unique id inserted exactly once");
    is_int(w[0].n_exist, (N_THREADS - 1) * N_SHARED, "every duplicate got -EEXIST");
    qsort(seqs, n, sizeof(*seqs), cmp_i64);
    for (size_t i = 1; i < n; i++)
        dups += seqs[i] == seqs[i - 1];
    is_int(dups, 0, "seqs are unique");
    ty_store_scan_jobs(s, &q, count_fn, &count, &err);
    is_int(count, w[0].n_ok, "the table holds exactly the inserted rows");
    ok(batches < (uint64_t)(N_THREADS * N_PER_THREAD), "inserts were committed in groups");

    usec = run_threads(s, 0, get_worker, w);
    diag("%d lookups from %d threads: %.0f/s",
         N_THREADS * 200,
         N_THREADS,
         N_THREADS * 200 * 1e6 / (double)(usec ? usec : 1));
    is_int(w[0].n_other, 0, "concurrent lookups all succeed");
    ok(s->n_open <= 16 && s->n_idle <= s->n_open,
       "pool stays bounded (%u open, %u idle)",
       s->n_open,
       s->n_idle);
    ty_store_close(s);
}

/* The job ids of the process test: 20 of each process's own, then 10 both insert. */
static void child_id(char *id, size_t n, int idx, int i)
{
    if (i < 20)
        snprintf(id, n, "own%d_%d", idx, i);
    else
        snprintf(id, n, "shared_%d", i);
}

/* A child process: open the (new) database, insert its own jobs and the shared ones, then
 * drive every job it owns (or wins the claim of) to SUCCEEDED. Writes its counts (inserted,
 * shared claims won) to @out_fd; exits non-zero on any unexpected error. */
static int child_main(const char *path, int idx, int go_fd, int out_fd)
{
    struct ty_store *s = NULL;
    struct ty_error e;
    char c;
    int counts[2] = {0, 0};

    if (read(go_fd, &c, 1) < 0)
        return 10;
    if (ty_store_open(path, &s, &e) < 0) {
        fprintf(stderr, "# process %d: %s\n", idx, e.msg);
        return 11;
    }
    for (int i = 0; i < 30; i++) {
        char id[32];
        struct ty_job_row *row;
        int r;
        child_id(id, sizeof(id), idx, i);
        row = new_row("fork", id, ty_now_usec());
        r = ty_store_insert_job(s, row, &e);
        ty_job_row_free(row);
        if (r == 0)
            counts[0]++;
        else if (r != -EEXIST)
            return 12;
    }
    for (int i = 0; i < 30; i++) {
        char id[32];
        struct ty_job_row *row = NULL;
        int r;
        child_id(id, sizeof(id), idx, i);
        if (ty_store_get_job(s, "fork", id, &row, &e) < 0)
            return 13;
        r = ty_store_claim_job(s, row->seq, getpid(), idx, NULL, &e);
        if (r == 0) {
            if (ty_store_set_state(s, row->seq, TY_STATE_PREPARING, ty_now_usec(), NULL, &e) < 0 ||
                ty_store_add_log_file(s, row->seq, "master-replica-0", NULL, path, &e) < 0 ||
                ty_store_set_state(s, row->seq, TY_STATE_RUNNING, ty_now_usec(), NULL, &e) < 0 ||
                ty_store_set_output(s, row->seq, row->options, &e) < 0 ||
                ty_store_set_state(s, row->seq, TY_STATE_SUCCEEDED, ty_now_usec(), NULL, &e) < 0)
                return 14;
            counts[1] += i >= 20;
        } else if (r != -EALREADY || i < 20) {
            return 15;
        }
        ty_job_row_free(row);
    }
    ty_store_close(s);
    if (write(out_fd, counts, sizeof(counts)) != sizeof(counts))
        return 16;
    return 0;
}

static void test_processes(void)
{
    _cleanup_free_ char *path = db_path("fork");
    int go[2], out[2][2], inserted = 0, won = 0, count = 0;
    pid_t pid[2];
    struct ty_store *s;
    struct ty_job_row **rows = NULL;
    size_t n = 0;
    struct ty_store_scan q = {.project = "fork", .state = TY_STATE_SUCCEEDED};

    if (pipe(go) < 0 || pipe(out[0]) < 0 || pipe(out[1]) < 0)
        abort();
    fflush(stdout);
    for (int i = 0; i < 2; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            close(go[1]);
            _exit(child_main(path, i, go[0], out[i][1]));
        }
    }
    close(go[0]);
    close(go[1]); /* both children start now, on a database that does not exist yet */
    for (int i = 0; i < 2; i++) {
        int st = 0, counts[2] = {0, 0};
        waitpid(pid[i], &st, 0);
        ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "process %d wrote without errors (status %d)",
           i,
           WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        close(out[i][1]);
        if (read(out[i][0], counts, sizeof(counts)) == sizeof(counts)) {
            inserted += counts[0];
            won += counts[1];
        }
        close(out[i][0]);
    }
    is_int(inserted, 50, "40 own jobs and each of 10 shared ids inserted once");
    is_int(won, 10, "each shared job claimed by exactly one process");

    s = open_db("fork");
    ty_store_scan_jobs(s, &q, count_fn, &count, &err);
    is_int(count, 50, "every job SUCCEEDED");
    is_int(ty_store_unfinished_jobs(s, &rows, &n, &err), 0, "unfinished list");
    is_int(n, 0, "nothing left unfinished");
    ty_job_rows_free(rows, n);
    {
        struct ty_transition *t = NULL;
        size_t nt = 0;
        ty_store_transitions(s, by_id(s, "fork", "shared_25")->seq, &t, &nt, &err);
        ok(nt == 4 && t[0].state == TY_STATE_QUEUED && t[3].state == TY_STATE_SUCCEEDED,
           "a shared job went through its states once");
        free(t);
    }
    ty_store_close(s);
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            _cleanup_free_ char *p = xasprintf("%s/%s", tmpdir, de->d_name);
            unlink(p);
        }
    }
    closedir(d);
    rmdir(tmpdir);
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
    test_threads();
    test_processes();
    keep(NULL);
    remove_tmpdir();
    return done_testing();
}
