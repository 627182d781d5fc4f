/* SPDX-License-Identifier: Apache-2.0
 * seq-commit.c: the floor jobs.create of trainyardd is measured against (bench/api/run.sh):
 * how many durable single-row commits per second SQLite makes on this disk, one after the
 * other. WAL mode, synchronous=FULL (as the store), one INSERT of a ~1 KB row per transaction.
 *
 *   seq-commit DB SECONDS
 *
 * Prints "commits=N seconds=S commits_per_s=R" on stdout. DB is created (and left behind:
 * the caller's scratch directory holds it). A service that creates each job with its own
 * commit cannot beat this; one that commits concurrent creates together (group commit) can. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROW_BYTES 1024

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(int rc, sqlite3 *db, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "seq-commit: %s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    char body[ROW_BYTES + 1], job[32];
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL;
    double seconds, start, end;
    long n = 0;

    if (argc != 3 || (seconds = strtod(argv[2], NULL)) <= 0) {
        fprintf(stderr, "usage: seq-commit DB SECONDS\n");
        return 2;
    }
    /* A job-like JSON row of ROW_BYTES bytes. */
    (void)snprintf(body,
                   sizeof(body),
                   "{\"jobId\":\"%s\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":"
                   "\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"example.com/bench:1\"}},"
                   "\"labels\":{},\"pad\":\"",
                   "job_0");
    memset(body + strlen(body), 'x', ROW_BYTES - strlen(body) - 2);
    memcpy(body + ROW_BYTES - 2, "\"}", 3);

    check(sqlite3_open(argv[1], &db), db, argv[1]);
    check(sqlite3_exec(db,
                       "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                       "CREATE TABLE IF NOT EXISTS jobs (seq INTEGER PRIMARY KEY, project TEXT NOT "
                       "NULL, job_id TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (project, job_id))",
                       NULL,
                       NULL,
                       NULL),
          db,
          "schema");
    check(
        sqlite3_prepare_v2(
            db, "INSERT INTO jobs (project, job_id, body) VALUES ('bench', ?, ?)", -1, &ins, NULL),
        db,
        "prepare");
    start = now();
    end = start + seconds;
    do {
        /* Autocommit: each INSERT is its own transaction, durable when sqlite3_step returns. */
        (void)snprintf(job, sizeof(job), "job_%ld", n + 1);
        sqlite3_bind_text(ins, 1, job, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, body, ROW_BYTES, SQLITE_STATIC);
        check(sqlite3_step(ins), db, "insert");
        sqlite3_reset(ins);
        n++;
    } while (now() < end);
    seconds = now() - start;
    sqlite3_finalize(ins);
    sqlite3_close(db);
    printf("commits=%ld seconds=%.3f commits_per_s=%.1f\n", n, seconds, (double)n / seconds);
    return 0;
}
