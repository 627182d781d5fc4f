/* SPDX-License-Identifier: Apache-2.0
 * store-stats.c: counts over every stored job for the service's /metrics: how many jobs each
 * project has in each state, and the attempts, internal retries and replica restarts they
 * recorded (docs/lifecycle.md, "Restarts and retries"), in one aggregate query; and the
 * projects that have jobs (the service's projects list); the memory SQLite holds. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "macro.h"
#include "store-internal.h"

/* One row per (project, state), from one snapshot of the table. The attempt of a job is
 * ty_job_row_attempt's (the last recorded, or the one a replacing supervisor starts at when
 * that is later; at least 1); a tuning job has none of its own (a restart of its study after an
 * internal error counts in internal_retries alone; its trainingInput is read only then), its
 * trials keep theirs in trainingOutput.trials[].attemptStatus, counted the same way. json_each() of
 * NULL or of a path that is absent gives no rows, so jobs without a status count 0. NOT INDEXED:
 * reading the table in its order and grouping in a temporary b-tree is twice as fast as walking the
 * (project, seq) index with a lookup of every row, which SQLite picks for the GROUP BY. */
static const char stats_sql[] =
    "SELECT project, state, count(*), "
    " total(CASE WHEN first_attempt > 1 AND "
    "  json_type(training_input, '$.hyperparameters') IS NOT NULL THEN 0 "
    "  ELSE max(coalesce(json_extract(attempt_status, '$.attempt'), 0), first_attempt, 1) - 1 "
    "  END), "
    " total(internal_retries), "
    " total((SELECT total(r.value) FROM json_each(attempt_status, '$.replicaRestarts') AS r)), "
    " total((SELECT total(max(coalesce(json_extract(t.value, '$.attemptStatus.attempt'), 1), "
    "                         1) - 1) "
    "        FROM json_each(training_output, '$.trials') AS t)), "
    " total((SELECT total(r.value) FROM json_each(training_output, '$.trials') AS t, "
    "        json_each(t.value, '$.attemptStatus.replicaRestarts') AS r)) "
    "FROM jobs NOT INDEXED GROUP BY project, state ORDER BY project, state";

void ty_store_job_stats_free(struct ty_store_job_stats *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++)
        free(rows[i].project);
    free(rows);
}

/* A total() column as a count (total() is a float; the counts are far below 2^53). */
static int64_t col_count(sqlite3_stmt *st, int i)
{
    double v = sqlite3_column_double(st, i);
    return v > 0 ? (int64_t)(v + 0.5) : 0;
}

/* Read the rows of @st into *@ret, *@n. */
static int collect(struct store_conn *c,
                   sqlite3_stmt *st,
                   struct ty_store_job_stats **ret,
                   size_t *n,
                   struct ty_error *err)
{
    struct ty_store_job_stats *rows = NULL;
    size_t len = 0, cap = 0;
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *project = (const char *)sqlite3_column_text(st, 0);
        struct ty_store_job_stats *row;
        if (len == cap) {
            cap = cap ? cap * 2 : 16;
            rows = xreallocarray(rows, cap, sizeof(*rows));
        }
        row = &rows[len++];
        *row = (struct ty_store_job_stats){
            .project = xstrdup(project ? project : ""),
            .state = store_state_parse((const char *)sqlite3_column_text(st, 1)),
            .jobs = sqlite3_column_int64(st, 2),
            .retries = col_count(st, 3) + col_count(st, 6),
            .internal_retries = col_count(st, 4),
            .replica_restarts = col_count(st, 5) + col_count(st, 7),
        };
    }
    if (rc != SQLITE_DONE) {
        ty_store_job_stats_free(rows, len);
        return store_sql_error(c, err, "counting jobs");
    }
    *ret = rows;
    *n = len;
    return 0;
}

int ty_store_job_stats(struct ty_store *s,
                       struct ty_store_job_stats **ret,
                       size_t *n,
                       struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    sqlite3_stmt *st = NULL;
    int r;

    *ret = NULL;
    *n = 0;
    if ((r = store_acquire(s, &c, err)) < 0)
        return r;
    /* Prepared per call rather than cached: a scrape every few seconds does not need it, and
     * the cached statements of every connection would carry it for nothing. */
    if (sqlite3_prepare_v2(c->db, stats_sql, -1, &st, NULL) != SQLITE_OK)
        return store_sql_error(c, err, "counting jobs");
    r = collect(c, st, ret, n, err);
    sqlite3_finalize(st);
    return r;
}

void ty_store_projects_free(struct ty_store_project *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++)
        free(rows[i].project);
    free(rows);
}

int ty_store_projects(struct ty_store *s,
                      struct ty_store_project **ret,
                      size_t *n,
                      struct ty_error *err)
{
    _cleanup_(store_releasep) struct store_conn *c = NULL;
    struct ty_store_project *rows = NULL;
    sqlite3_stmt *st = NULL;
    size_t len = 0, cap = 0;
    int r, rc;

    *ret = NULL;
    *n = 0;
    if ((r = store_acquire(s, &c, err)) < 0)
        return r;
    /* Prepared per call, as the stats: a page load now and then does not need it cached. */
    if (sqlite3_prepare_v2(c->db,
                           "SELECT project, count(*) FROM jobs GROUP BY project ORDER BY project",
                           -1,
                           &st,
                           NULL) != SQLITE_OK)
        return store_sql_error(c, err, "listing projects");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *project = (const char *)sqlite3_column_text(st, 0);
        if (len == cap) {
            cap = cap ? cap * 2 : 16;
            rows = xreallocarray(rows, cap, sizeof(*rows));
        }
        rows[len++] = (struct ty_store_project){.project = xstrdup(project ? project : ""),
                                                .jobs = sqlite3_column_int64(st, 1)};
    }
    if (rc != SQLITE_DONE) {
        r = store_sql_error(c, err, "listing projects");
        sqlite3_finalize(st);
        ty_store_projects_free(rows, len);
        return r;
    }
    sqlite3_finalize(st);
    *ret = rows;
    *n = len;
    return 0;
}

int64_t ty_store_memory_used(void)
{
    sqlite3_int64 cur = 0, hi = 0;

    if (sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &cur, &hi, 0) != SQLITE_OK)
        return -1;
    return cur > 0 ? (int64_t)cur : -1;
}
