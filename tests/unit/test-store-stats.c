/* SPDX-License-Identifier: Apache-2.0
 * test-store-stats.c: the counts the store gives /metrics (ty_store_job_stats, store-stats.c):
 * jobs per project and state, attempts beyond the first (recorded, or started by a replacing
 * supervisor), internal retries, replica restarts, and the same of a tuning job's trials;
 * an empty store; the counts change with the jobs. And the projects that have jobs
 * (ty_store_projects). */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-rows.h"
#include "store.h"
#include "tap.h"

static struct ty_error err;
static char tmpdir[] = "/tmp/ty-store-stats-XXXXXX";

/* Add job @job_id of @project, a tuning job when @tuning. */
static int64_t add_job(struct ty_store *s, const char *project, const char *job_id, bool tuning)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = test_queued_row(job_id);
    free(row->project);
    row->project = xstrdup(project);
    if (tuning)
        json_object_set_new(row->training_input, "hyperparameters", json_object());
    if (ty_store_insert_job(s, row, &err) < 0)
        BAIL_OUT("insert %s: %s", job_id, err.msg);
    return row->seq;
}

static int64_t add(struct ty_store *s, const char *project, const char *job_id)
{
    return add_job(s, project, job_id, false);
}

/* Claim job @seq for @pid and make it RUNNING. */
static void run(struct ty_store *s, int64_t seq, int64_t pid)
{
    if (ty_store_claim_job(s, seq, pid, 1, NULL, &err) < 0 ||
        ty_store_set_state(s, seq, TY_STATE_PREPARING, 200, NULL, &err) < 0 ||
        ty_store_set_state(s, seq, TY_STATE_RUNNING, 300, NULL, &err) < 0)
        BAIL_OUT("running %lld: %s", (long long)seq, err.msg);
}

/* Record attempt status @text (JSON) for job @seq. */
static void status(struct ty_store *s, int64_t seq, const char *text)
{
    _cleanup_json_ json_t *j = json_loads(text, 0, NULL);
    if (!j || ty_store_set_attempt_status(s, seq, j, &err) < 0)
        BAIL_OUT("attempt status %s: %s", text, err.msg);
}

/* The row of @project in @state among @rows, or NULL. */
static const struct ty_store_job_stats *
find(const struct ty_store_job_stats *rows, size_t n, const char *project, enum ty_job_state state)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].project, project) == 0 && rows[i].state == state)
            return &rows[i];
    return NULL;
}

/* Check the row of @project/@state: @jobs, @retries, @internal, @restarts. */
static void expect(const struct ty_store_job_stats *rows,
                   size_t n,
                   const char *project,
                   enum ty_job_state state,
                   int64_t jobs,
                   int64_t retries,
                   int64_t internal,
                   int64_t restarts)
{
    const struct ty_store_job_stats *r = find(rows, n, project, state);
    const char *name = ty_job_state_name(state);

    if (!ok(r != NULL, "%s/%s: a row", project, name)) {
        skip(4, "no row");
        return;
    }
    is_int(r->jobs, jobs, "%s/%s: jobs", project, name);
    is_int(r->retries, retries, "%s/%s: attempts beyond the first", project, name);
    is_int(r->internal_retries, internal, "%s/%s: internal retries", project, name);
    is_int(r->replica_restarts, restarts, "%s/%s: replica restarts", project, name);
}

static void test_empty(struct ty_store *s)
{
    struct ty_store_job_stats *rows = (void *)1;
    size_t n = 99;

    is_int(ty_store_job_stats(s, &rows, &n, &err), 0, "an empty store: counted");
    is_int(n, 0, "an empty store: no rows");
    ok(rows == NULL, "an empty store: NULL");
    ty_store_job_stats_free(rows, n);
}

static void test_counts(struct ty_store *s)
{
    struct ty_store_job_stats *rows = NULL;
    size_t n = 0;
    struct ty_lost l;
    _cleanup_(ty_job_row_freep) struct ty_job_row *cancelled = NULL;
    _cleanup_json_ json_t *out = NULL;
    int64_t seq, retried;

    add(s, "p", "q1");
    add(s, "p", "q2");
    /* attempt 3 with 2 + 1 restarts in it */
    retried = add(s, "p", "retried");
    run(s, retried, 4001);
    status(s,
           retried,
           "{\"attempt\":3,\"maxAttempts\":4,\"replicaRestarts\":{\"master-replica-0\":2,"
           "\"worker-replica-0\":1}}");
    /* attempt 1 recorded, then its supervisor lost: the next one starts at attempt 2 */
    seq = add(s, "p", "lost");
    run(s, seq, 4002);
    status(s, seq, "{\"attempt\":1,\"maxAttempts\":4,\"replicaRestarts\":{}}");
    if (ty_store_supervisor_lost(s, seq, 4002, 2, 400, "lost", &l, NULL, &err) < 0 ||
        l.action != TY_LOST_RETRY)
        BAIL_OUT("supervisor lost: %s", err.msg);
    /* a tuning job: its trials' attempts and restarts; its supervisor lost once, which counts
     * as an internal retry alone (its study started again with new trials) */
    seq = add_job(s, "q", "tuning", true);
    run(s, seq, 4003);
    if (ty_store_supervisor_lost(s, seq, 4003, 2, 450, "lost", &l, NULL, &err) < 0 ||
        l.action != TY_LOST_RETRY)
        BAIL_OUT("tuning supervisor lost: %s", err.msg);
    out = json_loads("{\"trials\":[{\"trialId\":\"1\",\"attemptStatus\":{\"attempt\":2,"
                     "\"replicaRestarts\":{\"master-replica-0\":1}}},{\"trialId\":\"2\","
                     "\"attemptStatus\":{\"attempt\":1,\"replicaRestarts\":{\"master-replica-0\":"
                     "4}}},{\"trialId\":\"3\"}]}",
                     0,
                     NULL);
    if (!out || ty_store_set_output(s, seq, out, &err) < 0 ||
        ty_store_set_state(s, seq, TY_STATE_SUCCEEDED, 500, NULL, &err) < 0)
        BAIL_OUT("tuning job: %s", err.msg);
    add(s, "q", "gone");
    if (ty_store_cancel_job(s, "q", "gone", 600, &cancelled, &err) < 0)
        BAIL_OUT("cancel: %s", err.msg);

    is_int(ty_store_job_stats(s, &rows, &n, &err), 0, "counted");
    is_int(n, 4, "one row per project and state with jobs");
    expect(rows, n, "p", TY_STATE_QUEUED, 2, 0, 0, 0);
    expect(rows, n, "p", TY_STATE_RUNNING, 2, 2 + 1, 1, 3);
    expect(rows, n, "q", TY_STATE_SUCCEEDED, 1, 1, 1, 5);
    expect(rows, n, "q", TY_STATE_CANCELLED, 1, 0, 0, 0);
    if (n == 4)
        ok(strcmp(rows[0].project, "p") == 0 && strcmp(rows[3].project, "q") == 0,
           "ordered by project");
    else
        skip(1, "not 4 rows");
    ty_store_job_stats_free(rows, n);

    /* A job ends: it moves from one state's row to another's, with its counts. */
    if (ty_store_set_state(s, retried, TY_STATE_FAILED, 700, "failed", &err) < 0)
        BAIL_OUT("failing: %s", err.msg);
    is_int(ty_store_job_stats(s, &rows, &n, &err), 0, "counted again");
    is_int(n, 5, "a row more");
    expect(rows, n, "p", TY_STATE_RUNNING, 1, 1, 1, 0);
    expect(rows, n, "p", TY_STATE_FAILED, 1, 2, 0, 3);
    ty_store_job_stats_free(rows, n);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The projects list: none in an empty store; each project once, in byte order, with its
 * number of jobs. */
static void test_projects(struct ty_store *s, bool empty)
{
    struct ty_store_project *rows = (void *)1;
    size_t n = 99;

    is_int(ty_store_projects(s, &rows, &n, &err), 0, "projects: listed");
    if (empty) {
        is_int(n, 0, "projects of an empty store: none");
        ok(rows == NULL, "projects of an empty store: NULL");
    } else {
        add(s, "A-upper", "a1");
        ty_store_projects_free(rows, n);
        is_int(ty_store_projects(s, &rows, &n, &err), 0, "projects: listed again");
        is_int(n, 3, "projects: three (p, q, A-upper)");
        if (n == 3) {
            ok(strcmp(rows[0].project, "A-upper") == 0 && rows[0].jobs == 1,
               "projects: A-upper first (byte order), 1 job");
            ok(strcmp(rows[1].project, "p") == 0 && rows[1].jobs == 4, "projects: p, 4 jobs");
            ok(strcmp(rows[2].project, "q") == 0 && rows[2].jobs == 2, "projects: q, 2 jobs");
        }
    }
    ty_store_projects_free(rows, n);
}

int main(void)
{
    _cleanup_free_ char *path = NULL;
    struct ty_store *s = NULL;

    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp failed");
    path = xasprintf("%s/stats.db", tmpdir);
    if (ty_store_open(path, &s, &err) < 0)
        BAIL_OUT("open %s: %s", path, err.msg);
    test_empty(s);
    test_projects(s, true);
    test_counts(s);
    test_projects(s, false);
    ty_store_close(s);
    (void)nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
