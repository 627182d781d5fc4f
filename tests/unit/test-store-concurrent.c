/* SPDX-License-Identifier: Apache-2.0
 * test-store-concurrent.c: the SQLite job store (store.h) under concurrency: group commit
 * with many threads inserting and reading one store, and two processes writing one database.
 * The single-threaded rules are in test-store.c. Databases live in a fresh directory under
 * /tmp, removed at the end. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store-check.h"
#include "store-internal.h"
#include "timeutil.h"

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

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_threads();
    test_processes();
    keep(NULL);
    remove_tmpdir();
    return done_testing();
}
