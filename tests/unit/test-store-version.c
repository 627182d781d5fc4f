/* SPDX-License-Identifier: Apache-2.0
 * test-store-version.c: the job row's version (store.h, ty_store_job_version), what the
 * service's cache of jobs.get answers checks: it is read with the row and alone; it changes on
 * every write of the row (state, labels, output, reason, attempt status, claim) and on every
 * new transition, whether the write comes through the store or from another connection (the
 * sqlite3 shell's raw UPDATE and INSERT, as a program outside trainyard would); it does not
 * change on a read or on a write to another job; a store of schema 4 (before the column)
 * opens, gets the column and its triggers, and its jobs keep their contents. And the store's
 * commit epoch (ty_store_commit_epoch, which lets the cache skip even that lookup): the same
 * while nothing is committed, whatever is read; a new one after every commit, through the
 * store, from another connection, from another process, after a checkpoint that restarts the
 * write-ahead log; and never going back while threads read it as commits land. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-rows.h"
#include "store.h"
#include "tap.h"

static char tmpdir[] = "/tmp/ty-store-version-XXXXXX";
static struct ty_error err;

static int64_t version_of(struct ty_store *s, const char *job)
{
    int64_t seq = 0, v = -1;
    if (ty_store_job_version(s, "p", job, &seq, &v, &err) < 0)
        return -1;
    return v;
}

/* Run @sql on @path through a connection of its own (not the store's). */
static void raw(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_busy_timeout(db, 5000) != SQLITE_OK ||
        sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        BAIL_OUT("raw SQL on %s: %s: %s", path, sql, sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* Whether the version of @job went up since *@last (and remember it). */
static bool bumped(struct ty_store *s, const char *job, int64_t *last)
{
    int64_t v = version_of(s, job);
    bool up = v > *last;
    *last = v;
    return up;
}

static void test_writes(void)
{
    _cleanup_free_ char *path = xasprintf("%s/w.db", tmpdir);
    struct ty_store *s = NULL;
    struct ty_job_row *a = test_queued_row("a"), *b = test_queued_row("b"), *row = NULL;
    _cleanup_json_ json_t *out = json_pack("{s:s}", "x", "y");
    _cleanup_json_ json_t *st = json_pack("{s:i}", "attempt", 1);
    _cleanup_json_ json_t *labels = json_pack("{s:s}", "k", "v");
    int64_t seq = 0, v = 0, vb;
    char sql[256];

    if (ty_store_open(path, &s, &err) < 0)
        BAIL_OUT("open: %s", err.msg);
    ok(ty_store_insert_job(s, a, &err) == 0 && ty_store_insert_job(s, b, &err) == 0, "inserted");
    ok(ty_store_job_version(s, "p", "a", &seq, &v, &err) == 0 && seq == a->seq && v > 0,
       "version of a new job read (its first transition bumped it)");
    is_int(ty_store_job_version(s, "p", "none", &seq, &v, &err), -ENOENT, "-ENOENT when absent");
    v = version_of(s, "a");
    ok(ty_store_get_job(s, "p", "a", &row, &err) == 0 && row->version == v,
       "the row carries the same version");
    ty_job_row_free(row);
    row = NULL;
    ok(!bumped(s, "a", &v), "a read changes nothing");
    vb = version_of(s, "b");

    ok(ty_store_set_state(s, a->seq, TY_STATE_PREPARING, 200, NULL, &err) == 0 &&
           bumped(s, "a", &v),
       "a state change (and its transition) bumps it");
    ok(ty_store_set_state(s, a->seq, TY_STATE_PREPARING, 210, NULL, &err) == 0 &&
           !bumped(s, "a", &v),
       "a change to the same state (nothing written) does not");
    ok(ty_store_update_labels(s, "p", "a", labels, 0, NULL, &err) == 0 && bumped(s, "a", &v),
       "labels bump it");
    ok(ty_store_set_output(s, a->seq, out, &err) == 0 && bumped(s, "a", &v), "the output bumps it");
    ok(ty_store_set_state_reason(s, a->seq, "Resources", &err) == 0 && bumped(s, "a", &v),
       "the reason bumps it");
    ok(ty_store_set_attempt_status(s, a->seq, st, &err) == 0 && bumped(s, "a", &v),
       "the attempt status bumps it");
    is_int(version_of(s, "b"), vb, "writes to a leave b's version alone");
    ok(ty_store_claim_job(s, b->seq, 4242, 7, NULL, &err) == 0 && bumped(s, "b", &vb),
       "a claim bumps it");

    /* Another connection, as the sqlite3 shell or another program would write. */
    snprintf(sql,
             sizeof(sql),
             "UPDATE jobs SET error_message = 'x' WHERE seq = %lld",
             (long long)a->seq);
    raw(path, sql);
    ok(bumped(s, "a", &v), "a raw UPDATE from another connection bumps it");
    snprintf(sql,
             sizeof(sql),
             "INSERT INTO transitions (job_seq, state, usec) VALUES (%lld, 'RUNNING', 300)",
             (long long)a->seq);
    raw(path, sql);
    ok(bumped(s, "a", &v), "a raw INSERT of a transition bumps it");
    snprintf(sql,
             sizeof(sql),
             "UPDATE transitions SET usec = 301 WHERE job_seq = %lld",
             (long long)a->seq);
    raw(path, sql);
    ok(bumped(s, "a", &v), "a raw UPDATE of its transitions bumps it");
    raw(path, "UPDATE jobs SET version = version");
    ok(bumped(s, "a", &v), "even an UPDATE that sets the version to itself bumps it");
    ty_store_close(s);
    ty_job_row_free(a);
    ty_job_row_free(b);
}

static void test_upgrade(void)
{
    _cleanup_free_ char *path = xasprintf("%s/old.db", tmpdir);
    struct ty_store *s = NULL;
    struct ty_job_row *a = test_queued_row("a"), *row = NULL;
    int64_t v;

    if (ty_store_open(path, &s, &err) < 0 || ty_store_insert_job(s, a, &err) < 0)
        BAIL_OUT("store: %s", err.msg);
    ty_store_close(s);
    /* Back to schema 4 as an older trainyard left it: no triggers, no column. */
    raw(path,
        "DROP INDEX jobs_name_version; DROP TRIGGER jobs_version;"
        "DROP TRIGGER transitions_insert_version;"
        "DROP TRIGGER transitions_update_version; DROP TRIGGER transitions_delete_version;"
        "ALTER TABLE jobs DROP COLUMN version; PRAGMA user_version = 4;");
    ok(ty_store_open(path, &s, &err) == 0, "a schema-4 store opens: %s", err.msg);
    ok(ty_store_get_job(s, "p", "a", &row, &err) == 0 && row->state == TY_STATE_QUEUED &&
           strcmp(row->runtime, "process") == 0 && row->version == 0,
       "its job reads as before, at version 0");
    ty_job_row_free(row);
    v = version_of(s, "a");
    ok(ty_store_set_state(s, a->seq, TY_STATE_CANCELLED, 500, "gone", &err) == 0 &&
           bumped(s, "a", &v),
       "and its version is bumped from then on");
    ty_store_close(s);
    ty_job_row_free(a);
}

struct epoch_reader {
    struct ty_store *s;
    const bool *stop;
    bool monotonic;
    uint64_t calls, distinct;
};

/* Read the epoch until told to stop: it must never go back. */
static void *epoch_reader_main(void *arg)
{
    struct epoch_reader *r = arg;
    uint64_t last = 0;

    r->monotonic = true;
    while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
        uint64_t e = ty_store_commit_epoch(r->s);
        if (e != 0 && e < last)
            r->monotonic = false;
        if (e != 0 && e != last)
            r->distinct++;
        last = e != 0 ? e : last;
        r->calls++;
    }
    return NULL;
}

/* Four threads read the epoch while another connection commits 200 times. */
static void test_epoch_threads(void)
{
    _cleanup_free_ char *path = xasprintf("%s/epoch-threads.db", tmpdir);
    struct ty_store *s = NULL;
    struct ty_job_row *a = test_queued_row("a");
    struct epoch_reader r[4];
    pthread_t th[4];
    bool stop = false, monotonic = true;
    uint64_t before, calls = 0, distinct = 0;
    char sql[128];

    if (ty_store_open(path, &s, &err) < 0 || ty_store_insert_job(s, a, &err) < 0)
        BAIL_OUT("store: %s", err.msg);
    before = ty_store_commit_epoch(s);
    for (size_t i = 0; i < 4; i++) {
        r[i] = (struct epoch_reader){.s = s, .stop = &stop};
        if (pthread_create(&th[i], NULL, epoch_reader_main, &r[i]) != 0)
            BAIL_OUT("pthread_create");
    }
    for (int i = 0; i < 200; i++) {
        snprintf(sql, sizeof(sql), "UPDATE jobs SET error_message = 't%d' WHERE job_id = 'a'", i);
        raw(path, sql);
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    for (size_t i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        monotonic = monotonic && r[i].monotonic;
        calls += r[i].calls;
        distinct += r[i].distinct;
    }
    ok(monotonic,
       "4 threads reading while 200 commits land: the epoch never goes back (%llu reads)",
       (unsigned long long)calls);
    ok(distinct > 4, "and they saw it move (%llu changes seen)", (unsigned long long)distinct);
    ok(ty_store_commit_epoch(s) > before, "after the commits: a later epoch");
    ty_store_close(s);
    ty_job_row_free(a);
}

/* Run @sql on @path from another process (this program again, with --raw). */
static void raw_process(const char *path, const char *sql)
{
    pid_t pid = fork();
    int status = 0;

    if (pid < 0)
        BAIL_OUT("fork");
    if (pid == 0) {
        execl("/proc/self/exe", "test-store-version", "--raw", path, sql, (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        BAIL_OUT("raw SQL from another process failed (status %d)", status);
}

static void test_epoch(void)
{
    _cleanup_free_ char *path = xasprintf("%s/epoch.db", tmpdir);
    struct ty_store *s = NULL;
    struct ty_job_row *a = test_queued_row("a"), *b = test_queued_row("b"), *row = NULL;
    uint64_t e, e2 = 0;
    bool steady = true, rising = true;
    char sql[256];

    if (ty_store_open(path, &s, &err) < 0 || ty_store_insert_job(s, a, &err) < 0)
        BAIL_OUT("store: %s", err.msg);
    e = ty_store_commit_epoch(s);
    ok(e != 0, "the store tells its commit epoch (SQLite's wal-index header is readable)");
    ok(ty_store_get_job(s, "p", "a", &row, &err) == 0 && version_of(s, "a") > 0,
       "a job read and its version");
    ty_job_row_free(row);
    for (int i = 0; i < 1000; i++)
        steady = steady && ty_store_commit_epoch(s) == e;
    ok(steady, "reads commit nothing: the same epoch 1000 times");

    ok(ty_store_insert_job(s, b, &err) == 0 && (e2 = ty_store_commit_epoch(s)) != e && e2 != 0,
       "an insert through the store: a new epoch");
    e = e2;
    ok(ty_store_set_state(s, a->seq, TY_STATE_PREPARING, 200, NULL, &err) == 0 &&
           (e2 = ty_store_commit_epoch(s)) != e && e2 != 0,
       "a state change through the store: a new epoch");
    e = e2;
    for (int i = 0; i < 50; i++) {
        snprintf(sql,
                 sizeof(sql),
                 "UPDATE jobs SET error_message = 'n%d' WHERE seq = %lld",
                 i,
                 (long long)a->seq);
        raw(path, sql);
        e2 = ty_store_commit_epoch(s);
        rising = rising && e2 != e && e2 != 0;
        e = e2;
    }
    ok(rising, "50 raw UPDATEs from another connection: a new epoch after each");
    raw_process(path, "UPDATE jobs SET labels = '{\"k\":\"v\"}' WHERE job_id = 'b'");
    ok((e2 = ty_store_commit_epoch(s)) != e && e2 != 0,
       "a write from another process: a new epoch");
    e = e2;
    ok(ty_store_get_job(s, "p", "b", &row, &err) == 0 &&
           strcmp(json_string_value(json_object_get(row->labels, "k")), "v") == 0,
       "and the store reads what it wrote");
    ty_job_row_free(row);
    raw_process(path, "PRAGMA wal_checkpoint(TRUNCATE)");
    e2 = ty_store_commit_epoch(s);
    ok(e2 != 0, "after a checkpoint that truncates the log, the epoch is still told");
    e = e2;
    raw_process(path, "UPDATE jobs SET error_message = 'after' WHERE job_id = 'b'");
    ok((e2 = ty_store_commit_epoch(s)) != e && e2 != 0 && ty_store_commit_epoch(s) == e2,
       "and the first write after it is seen (a new epoch, then steady)");
    ty_store_close(s);
    ty_job_row_free(a);
    ty_job_row_free(b);
}

int main(int argc, char **argv)
{
    char cmd[128];

    if (argc == 4 && strcmp(argv[1], "--raw") == 0) {
        raw(argv[2], argv[3]);
        return 0;
    }
    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp failed");
    test_writes();
    test_upgrade();
    test_epoch();
    test_epoch_threads();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        diag("could not remove %s", tmpdir);
    return done_testing();
}
