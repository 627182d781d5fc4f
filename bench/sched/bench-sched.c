/* SPDX-License-Identifier: Apache-2.0
 * bench-sched.c: what does one scheduling decision cost, and how fast are jobs admitted when
 * capacity frees? (bench/sched/README.md)
 *
 * The world: a shared GPU server (capacity 120 running jobs, 512 vCPUs, 2 TiB, 16 T4 + 8
 * V100 + 8 A100 devices; 4 of the 10 projects limited), 100 jobs holding most of it, and
 * 10,000 queued jobs of mixed priorities, shapes, GPU types, projects, tuning trials and max
 * running times, most of which do not fit. All drawn from a fixed seed.
 *
 * 1. One decision: ty_sched_pass over that queue, timed pass by pass (what a pass admits is
 *    undone with ty_sched_unadmit, untimed, so every pass sees the same world), interleaved
 *    with the baseline: a plain FIFO pass over the same jobs in creation order that admits
 *    what fits (the same resource vectors and checks, the one-trial totals computed once as
 *    the scheduler does; no order by priority, no reservation, no project limits, no
 *    devices, no reasons), also undone. Median and p99 of each, and
 *    their ratio. Goal: the scheduler's median <= 1 ms.
 * 2. Admissions when capacity frees: with the queue deep, again and again release the job
 *    holding longest and pass; jobs admitted per second (and passes per second), beside the
 *    same loop with the FIFO pass.
 * Not a test: nothing here passes or fails on time (machines are noisy); it prints figures
 * and ratios. Usage: bench-sched [PASSES [RELEASES]] (defaults 2000, 2000). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "scheduler.h"
#include "timeutil.h"

#define NQUEUE  10000
#define NHOLD   100
#define NPROJ   10
#define NDEV    32
#define HOURS   (3600 * INT64_C(1000000))
#define NOW0    (INT64_C(1800000000) * 1000000) /* an epoch in 2027 */
#define T4      4
#define V100    2
#define A100    5
#define MIB_GIB 1024

static uint64_t rng = 14;

static uint64_t next_rand(void)
{
    uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static int64_t rnd(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next_rand() % (uint64_t)(hi - lo + 1));
}

static const char *const projects[NPROJ] = {
    "vision", "nlp", "speech", "recsys", "ads", "maps", "search", "health", "robotics", "infra"};

/* A job's shape: a master and 0-7 workers of one machine size, GPUs of one type or none. */
static void random_demand(struct ty_demand *d)
{
    static const int gpu_types[3] = {T4, V100, A100};
    int64_t workers = rnd(0, 3) ? rnd(0, 3) : rnd(4, 7), per_cpus = 4 << rnd(0, 3);
    int gpus = rnd(0, 2) ? (int)rnd(1, 2) : 0, type = gpu_types[rnd(0, 2)];

    memset(d, 0, sizeof(*d));
    for (int r = 0; r < TY_ROLE_MAX; r++)
        d->role_gpu_type[r] = -1;
    d->role_count[TY_ROLE_MASTER] = 1;
    d->role_count[TY_ROLE_WORKER] = workers;
    d->trial.v[TY_RES_JOBS] = 1;
    d->trial.v[TY_RES_CPUS] = (1 + workers) * per_cpus;
    d->trial.v[TY_RES_MEMORY] = (1 + workers) * per_cpus * 4 * MIB_GIB;
    if (gpus) {
        for (int r = TY_ROLE_MASTER; r <= TY_ROLE_WORKER; r++) {
            d->role_gpus[r] = gpus;
            d->role_gpu_type[r] = type;
        }
        d->trial.v[TY_RES_GPU0 + type] = (1 + workers) * gpus;
    }
    d->max_trials = 1;
    if (rnd(0, 9) == 0) {
        d->tuning = true;
        d->max_trials = (int)rnd(2, 8);
    }
}

/* The FIFO baseline's world: the same jobs in creation order, a free vector. */
struct fifo {
    struct ty_demand *d;       /* by creation (index = seq - 1) */
    struct ty_resources *need; /* their one-trial totals, computed once as the scheduler does */
    bool *queued;
    struct ty_resources free;
    int64_t *hold_seq; /* holders, oldest first */
    struct ty_resources *hold_res;
    size_t nhold, cap_hold;
};

/* Walk in creation order, admit what fits; the seqs admitted into @out (at most @max). */
static size_t fifo_pass(struct fifo *f, int64_t *out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < NQUEUE; i++) {
        if (!f->queued[i] || ty_resources_short(&f->need[i], &f->free) >= 0)
            continue;
        ty_resources_sub(&f->free, &f->need[i]);
        f->queued[i] = false;
        if (n < max)
            out[n++] = (int64_t)i + 1;
    }
    return n;
}

static void fifo_undo(struct fifo *f, const int64_t *seqs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ty_resources_add(&f->free, &f->need[seqs[i] - 1], 1);
        f->queued[seqs[i] - 1] = true;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(int64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof(*v), cmp_i64);
    return (double)v[(size_t)((double)(n - 1) * p + 0.5)];
}

struct world {
    struct ty_sched *s;
    struct fifo f;
    int64_t hold_seq[NQUEUE + NHOLD + 1]; /* the scheduler's holders, oldest first */
    size_t nhold;
};

/* Capacity, limits, the 100 holders and the 10,000 queued jobs, in both worlds. */
static void build(struct world *w)
{
    struct ty_resources cap, held;
    int types[NDEV], next_dev = 0;

    ty_resources_unlimited(&cap);
    cap.v[TY_RES_JOBS] = 120;
    cap.v[TY_RES_CPUS] = 512;
    cap.v[TY_RES_MEMORY] = 2048 * MIB_GIB;
    for (int i = 0; i < NDEV; i++)
        types[i] = i < 16 ? T4 : i < 24 ? V100 : A100;
    w->s = ty_sched_new(&cap, types, NDEV);
    ty_sched_capacity(w->s, &w->f.free);
    for (int p = 0; p < 4; p++) {
        struct ty_resources lim;
        ty_resources_unlimited(&lim);
        lim.v[TY_RES_JOBS] = 20;
        lim.v[TY_RES_CPUS] = 128;
        ty_sched_set_limit(w->s, projects[p], &lim);
    }
    w->f.d = calloc(NQUEUE, sizeof(*w->f.d));
    w->f.need = calloc(NQUEUE, sizeof(*w->f.need));
    w->f.queued = calloc(NQUEUE, sizeof(bool));
    /* holders: small CPU jobs, and one GPU each on the first 28 devices (4 stay free) */
    for (int h = 0; h < NHOLD; h++) {
        int dev = next_dev < 28 ? next_dev++ : -1;
        ty_resources_zero(&held);
        held.v[TY_RES_JOBS] = 1;
        held.v[TY_RES_CPUS] = 4;
        held.v[TY_RES_MEMORY] = 16 * MIB_GIB;
        if (dev >= 0)
            held.v[TY_RES_GPU0 + types[dev]] = 1;
        int64_t seq = NQUEUE + 1 + h;
        (void)ty_sched_hold(w->s,
                            seq,
                            projects[h % NPROJ],
                            &held,
                            dev >= 0 ? &dev : NULL,
                            dev >= 0 ? 1 : 0,
                            NOW0 - rnd(1, 48) * HOURS,
                            rnd(1, 4) * 24 * HOURS,
                            0);
        ty_resources_sub(&w->f.free, &held);
        w->hold_seq[w->nhold++] = seq;
    }
    for (int64_t seq = 1; seq <= NQUEUE; seq++) {
        static const int prios[] = {0, 0, 0, 0, 0, 10, 10, 100, 500, 1000};
        char id[32];
        struct ty_sched_job j = {.seq = seq,
                                 .project = projects[rnd(0, NPROJ - 1)],
                                 .job_id = id,
                                 .priority = prios[rnd(0, 9)],
                                 .create_usec = NOW0 - (NQUEUE - seq) * 1000000,
                                 .max_running_usec = rnd(0, 3) ? rnd(1, 72) * HOURS : 0};
        (void)snprintf(id, sizeof(id), "job_%" PRId64, seq);
        random_demand(&j.demand);
        w->f.d[seq - 1] = j.demand;
        ty_demand_total(&j.demand, 1, &w->f.need[seq - 1]);
        w->f.queued[seq - 1] = true;
        if (ty_sched_enqueue(w->s, &j) < 0) {
            fprintf(stderr, "bench-sched: enqueue of job %" PRId64 " refused\n", seq);
            exit(2);
        }
    }
}

/* One decision, timed, undone. */
static int64_t timed_pass(struct world *w, int64_t now, size_t *admitted)
{
    struct ty_sched_admission *a = NULL;
    int64_t *exp = NULL, t0, t;
    size_t n = 0, ne = 0;

    t0 = ty_mono_usec();
    (void)ty_sched_pass(w->s, now, &a, &n, &exp, &ne);
    t = ty_mono_usec() - t0;
    for (size_t i = 0; i < n; i++)
        (void)ty_sched_unadmit(w->s, a[i].seq);
    ty_sched_admissions_free(a, n);
    free(exp);
    *admitted += n;
    return t;
}

static int64_t timed_fifo(struct world *w, size_t *admitted)
{
    int64_t out[NQUEUE], t0, t;
    size_t n;

    t0 = ty_mono_usec();
    n = fifo_pass(&w->f, out, NQUEUE);
    t = ty_mono_usec() - t0;
    fifo_undo(&w->f, out, n);
    *admitted += n;
    return t;
}

/* Release the longest holder and pass, @rounds times, in the scheduler's world: the jobs
 * admitted and the seconds it took. */
static double churn_sched(struct world *w, long rounds, size_t *admitted)
{
    size_t front = 0;
    int64_t now = NOW0, t = 0;

    for (long r = 0; r < rounds && front < w->nhold; r++) {
        struct ty_sched_admission *a = NULL;
        int64_t *exp = NULL, t0 = ty_mono_usec();
        size_t n = 0, ne = 0;

        now += 1000000;
        (void)ty_sched_release(w->s, w->hold_seq[front++]);
        (void)ty_sched_pass(w->s, now, &a, &n, &exp, &ne);
        t += ty_mono_usec() - t0;
        for (size_t i = 0; i < n; i++)
            w->hold_seq[w->nhold++] = a[i].seq;
        *admitted += n;
        ty_sched_admissions_free(a, n);
        free(exp);
    }
    return (double)t / 1e6;
}

/* The same in the FIFO world. */
static double churn_fifo(struct world *w, long rounds, size_t *admitted)
{
    static int64_t out[NQUEUE];
    static struct ty_resources res[NQUEUE + NHOLD + 1];
    size_t front = 0, nh = 0;
    int64_t t = 0;
    struct ty_resources held;

    for (size_t h = 0; h < NHOLD; h++) { /* the same holders as the scheduler's */
        ty_resources_zero(&res[nh]);
        res[nh].v[TY_RES_JOBS] = 1;
        res[nh].v[TY_RES_CPUS] = 4;
        res[nh].v[TY_RES_MEMORY] = 16 * MIB_GIB;
        res[nh].v[TY_RES_GPU0 + (h < 16 ? T4 : h < 24 ? V100 : A100)] = h < 28;
        nh++;
    }
    for (long r = 0; r < rounds && front < nh; r++) {
        int64_t t0 = ty_mono_usec();
        size_t n;

        held = res[front++];
        ty_resources_add(&w->f.free, &held, 1);
        n = fifo_pass(&w->f, out, NQUEUE);
        t += ty_mono_usec() - t0;
        for (size_t i = 0; i < n; i++) {
            res[nh++] = w->f.need[out[i] - 1];
        }
        *admitted += n;
    }
    return (double)t / 1e6;
}

static long arg_or(int argc, char **argv, int i, long dflt)
{
    int64_t v;

    if (argc <= i)
        return dflt;
    if (ty_parse_int64(argv[i], 1, 1000000, &v) < 0) {
        fprintf(stderr, "bench-sched: '%s' is not a count from 1 to 1000000\n", argv[i]);
        exit(2);
    }
    return (long)v;
}

int main(int argc, char **argv)
{
    long passes = arg_or(argc, argv, 1, 2000), releases = arg_or(argc, argv, 2, 2000);
    int64_t *ts = calloc((size_t)passes, sizeof(int64_t)),
            *tf = calloc((size_t)passes, sizeof(int64_t));
    struct world *w = calloc(1, sizeof(*w));
    struct ty_sched_admission *a = NULL;
    int64_t *exp = NULL;
    size_t n = 0, ne = 0, adm_s = 0, adm_f = 0, warm_f = 0;
    struct ty_sched_stats st;

    if (!ts || !tf || !w)
        return 2;
    build(w);
    /* the queue's first decision admits what fits now; then the world is steady */
    (void)ty_sched_pass(w->s, NOW0, &a, &n, &exp, &ne);
    for (size_t i = 0; i < n; i++)
        w->hold_seq[w->nhold++] = a[i].seq;
    ty_sched_admissions_free(a, n);
    free(exp);
    int64_t fifo_first[NQUEUE];
    size_t nf = fifo_pass(&w->f, fifo_first, NQUEUE);
    warm_f = nf;
    ty_sched_stats(w->s, &st);
    printf("bench/sched: %d queued, %zu holding (%zu admitted by the first pass; FIFO's "
           "first: %zu), %ld passes each, interleaved\n",
           NQUEUE,
           st.holding,
           n,
           warm_f,
           passes);
    for (long r = 0; r < passes; r++) {
        ts[r] = timed_pass(w, NOW0 + 1000000, &adm_s);
        tf[r] = timed_fifo(w, &adm_f);
    }
    double s50 = pct(ts, (size_t)passes, 0.5), s99 = pct(ts, (size_t)passes, 0.99);
    double f50 = pct(tf, (size_t)passes, 0.5), f99 = pct(tf, (size_t)passes, 0.99);
    printf("%-40s %10s %10s\n", "one decision (µs)", "median", "p99");
    printf("%-40s %10.0f %10.0f\n", "ty_sched_pass", s50, s99);
    printf("%-40s %10.0f %10.0f\n", "baseline (FIFO, no backfill/reasons)", f50, f99);
    printf("%-40s %9.2fx %9.2fx\n", "ratio", s50 / (f50 > 0 ? f50 : 1), s99 / (f99 > 0 ? f99 : 1));
    printf("goal: ty_sched_pass median <= 1000 µs: %s\n", s50 <= 1000 ? "met" : "NOT met");

    /* undo the FIFO's first admissions: both churns start from the 100 holders' world */
    fifo_undo(&w->f, fifo_first, nf);
    for (size_t i = 0; i < n; i++)
        (void)ty_sched_unadmit(w->s, w->hold_seq[NHOLD + i]);
    w->nhold = NHOLD;
    adm_s = adm_f = 0;
    double sec_s = churn_sched(w, releases, &adm_s), sec_f = churn_fifo(w, releases, &adm_f);
    printf("%-40s %10s %10s %10s\n",
           "capacity frees (release + pass)",
           "passes/s",
           "admitted",
           "admitted/s");
    printf("%-40s %10.0f %10zu %10.0f\n",
           "ty_sched_pass",
           (double)releases / sec_s,
           adm_s,
           (double)adm_s / sec_s);
    printf("%-40s %10.0f %10zu %10.0f\n",
           "baseline (FIFO)",
           (double)releases / sec_f,
           adm_f,
           (double)adm_f / sec_f);
    printf("%-40s %9.2fx %10s %9.2fx\n",
           "ratio (baseline / scheduler)",
           ((double)releases / sec_f) / ((double)releases / sec_s),
           "",
           ((double)adm_f / sec_f) / ((double)adm_s / sec_s));
    ty_sched_free(w->s);
    free(w->f.d);
    free(w->f.need);
    free(w->f.queued);
    free(w);
    free(ts);
    free(tf);
    return 0;
}
