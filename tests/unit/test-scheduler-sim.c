/* SPDX-License-Identifier: Apache-2.0
 * test-scheduler-sim.c: the scheduler over many generated scenarios (2,000 seeded ones):
 * random capacities, GPU devices, project limits, running jobs and queues (priorities,
 * shapes, GPU types, tuning trials, max running times, PREPARING allowances), with time
 * simulated forward: jobs prepare within their allowance (the scheduler told when they enter
 * RUNNING half of the time), end at their max running time from then or earlier, and more
 * jobs arrive. After every pass it checks
 * that
 *   - capacity, project limits and device exclusivity are never exceeded; every admission
 *     holds its whole demand for k trials (1 <= k <= max) and the lowest free devices of each
 *     role's type, in order; a job that can never fit never starts;
 *   - the head's reservation T is when the running jobs, ending at their expected ends, make
 *     room for it (computed here independently), and the head starts no later than the T
 *     it had when it became the head (unless a job ahead of it in order started meanwhile);
 *   - no job that fits is left waiting unless it is behind the head (its reason says so);
 *   - at the end, every job that can ever fit has run.
 * Scenarios with devices held outside the service check everything but the reservation. */
#include <stdarg.h>

#include "sched-test.h"
#include "tap.h"

#define MAXJ 64
#define MAXD 8

static uint64_t rng;
/* What the checks saw, over all scenarios: heads that started (by their reservation), jobs
 * that started behind a waiting head (backfilled). */
static long heads_started, backfilled;

static uint64_t next_rand(void)
{
    uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A number in [lo, hi]. */
static int64_t rnd(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next_rand() % (uint64_t)(hi - lo + 1));
}

enum { PENDING, QUEUED, RUNNING, DONE };

struct sjob {
    int state;
    int prio, proj;
    int64_t arrive, maxrun, start, end;
    /* PREPARING: at most prep (its allowance) from its start; RUNNING from run_at, which the
     * scheduler is told (ty_sched_running) when tell, once it came */
    int64_t prep, run_at;
    bool tell, told;
    struct ty_demand d;
    struct ty_resources held;
    bool never; /* more than the capacity or its project's limit */
};

struct world {
    struct ty_sched *s;
    struct ty_resources cap; /* as counted by the scheduler */
    int ndev, dev_type[MAXD], owner[MAXD];
    bool busy[MAXD], outside; /* outside: devices may be busy: no reservation checks */
    int nproj;
    struct ty_resources limit[3];
    struct sjob j[MAXJ + 1]; /* by seq, from 1 */
    int nj;
    int64_t rec_seq, rec_T; /* the head being watched and its first reservation */
    int fails;
};

static const char *const projects[3] = {"p0", "p1", "p2"};

static void fail_(struct world *w, int64_t now, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_(struct world *w, int64_t now, const char *fmt, ...)
{
    va_list ap;

    if (w->fails++ >= 3)
        return;
    printf("#   at %lld s: ", (long long)(now / SEC));
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}
/* A failure in @w at @now: @fmt with two %lld. */
#define fail(w, now, fmt, a, b) fail_(w, now, fmt, (long long)(a), (long long)(b))

static bool ahead(const struct world *w, int64_t a, int64_t b)
{
    return w->j[a].prio != w->j[b].prio ? w->j[a].prio > w->j[b].prio : a < b;
}

/* Free now as this test counts it: capacity minus what running jobs hold; free devices. */
static void free_now(const struct world *w, struct ty_resources *f)
{
    *f = w->cap;
    for (int q = 1; q <= w->nj; q++)
        if (w->j[q].state == RUNNING)
            ty_resources_sub(f, &w->j[q].held);
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        f->v[TY_RES_GPU0 + t] = 0;
    for (int i = 0; i < w->ndev; i++)
        if (!w->owner[i] && !w->busy[i])
            f->v[TY_RES_GPU0 + w->dev_type[i]]++;
}

static void room_of(const struct world *w, int p, struct ty_resources *r)
{
    *r = w->limit[p];
    for (int q = 1; q <= w->nj; q++)
        if (w->j[q].state == RUNNING && w->j[q].proj == p)
            ty_resources_sub(r, &w->j[q].held);
}

static int64_t expected_end(const struct sjob *j)
{
    return (j->told ? j->run_at : j->start + j->prep) +
           (j->maxrun ? j->maxrun : TY_SCHED_DEFAULT_RUNNING_USEC);
}

/* The head's reservation, computed the plain way. */
static int64_t oracle_T(const struct world *w, int64_t head, int64_t now)
{
    struct ty_resources avail, need;
    int order[MAXJ + 1], n = 0;
    int64_t T = now;

    free_now(w, &avail);
    ty_demand_total(&w->j[head].d, 1, &need);
    for (int q = 1; q <= w->nj; q++)
        if (w->j[q].state == RUNNING)
            order[n++] = q;
    for (int a = 1; a < n; a++) /* insertion sort by expected end */
        for (int b = a; b > 0 && expected_end(&w->j[order[b]]) < expected_end(&w->j[order[b - 1]]);
             b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (int i = 0; i < n && ty_resources_short(&need, &avail) >= 0; i++) {
        const struct sjob *h = &w->j[order[i]];
        for (int d = 0; d < TY_RES_NDIMS; d++)
            if (avail.v[d] != TY_RES_UNLIMITED || d >= TY_RES_GPU0)
                avail.v[d] += h->held.v[d];
        T = expected_end(h) > now ? expected_end(h) : now;
    }
    return T;
}

/* Check admission @a at @now and take its devices. */
static void check_admission(struct world *w, const struct ty_sched_admission *a, int64_t now)
{
    struct sjob *j = &w->j[a->seq];
    struct ty_resources want, f, room;
    size_t at = 0;
    int cursor[TY_GPU_NTYPES] = {0};

    if (j->state != QUEUED || j->never) {
        fail(w,
             now,
             "job %lld started though not waiting or never fitting (state %lld)",
             a->seq,
             j->state);
        return;
    }
    ty_demand_total(&j->d, a->trials, &want);
    free_now(w, &f);
    room_of(w, j->proj, &room);
    if (a->trials < 1 || a->trials > j->d.max_trials || memcmp(&want, &a->held, sizeof(want)) ||
        a->ngpus != (size_t)(ty_demand_trial_gpus(&j->d) * a->trials))
        fail(w, now, "job %lld: not its whole demand for %lld trials", a->seq, a->trials);
    if (ty_resources_short(&a->held, &f) >= 0)
        fail(w,
             now,
             "job %lld: more than is free (dimension %lld)",
             a->seq,
             ty_resources_short(&a->held, &f));
    if (ty_resources_short(&a->held, &room) >= 0)
        fail(w,
             now,
             "job %lld: over its project's limit (dimension %lld)",
             a->seq,
             ty_resources_short(&a->held, &room));
    for (int slot = 0; slot < a->trials; slot++)
        for (int r = 0; r < TY_ROLE_MAX; r++)
            for (int64_t rep = 0; rep < j->d.role_count[r]; rep++)
                for (int g = 0; g < j->d.role_gpus[r]; g++) {
                    int t = j->d.role_gpu_type[r], *c = &cursor[t];
                    while (*c < w->ndev && (w->dev_type[*c] != t || w->owner[*c] || w->busy[*c]))
                        (*c)++;
                    if (at >= a->ngpus || *c >= w->ndev || a->gpus[at] != *c) {
                        fail(w,
                             now,
                             "job %lld: device %lld is not the lowest free of its type",
                             a->seq,
                             at < a->ngpus ? a->gpus[at] : -1);
                        return;
                    }
                    w->owner[*c] = (int)a->seq;
                    at++;
                }
    j->state = RUNNING;
    j->held = a->held;
    j->start = now;
    /* it prepares within its allowance (often all of it), then ends at its max running time
     * or earlier; half of the time the scheduler hears when it entered RUNNING */
    j->run_at = now + (j->prep && rnd(0, 2) ? rnd(0, j->prep / MIN) * MIN : j->prep);
    j->tell = rnd(0, 1);
    int64_t run = j->maxrun ? j->maxrun : TY_SCHED_DEFAULT_RUNNING_USEC;
    j->end = j->run_at + (rnd(0, 2) == 0 ? run : rnd(1, run / MIN) * MIN);
}

/* The head's reservation is kept: it starts by the T it had when it became the head. */
static void check_head(struct world *w, const struct ty_sched_admission *a, size_t n, int64_t now)
{
    int64_t T = 0, head = ty_sched_head(w->s, &T);

    for (size_t i = 0; w->rec_seq && i < n; i++) {
        if (w->rec_seq && a[i].seq != w->rec_seq && ahead(w, w->rec_seq, a[i].seq))
            backfilled++;
        if (a[i].seq == w->rec_seq) {
            heads_started++;
            if (now > w->rec_T)
                fail(w,
                     now,
                     "head %lld started after its reservation (%lld s)",
                     w->rec_seq,
                     w->rec_T / SEC);
            w->rec_seq = 0;
        } else if (ahead(w, a[i].seq, w->rec_seq)) {
            w->rec_seq = 0; /* a job ahead of it in order may take its room */
        }
    }
    if (head && T != oracle_T(w, head, now))
        fail(w,
             now,
             "the head's reservation is %lld s, room is made at %lld s",
             T / SEC,
             oracle_T(w, head, now) / SEC);
    if (w->rec_seq && head != w->rec_seq) {
        if (head && ahead(w, head, w->rec_seq))
            w->rec_seq = 0;
        else
            fail(w, now, "head %lld lost its place to job %lld behind it", w->rec_seq, head);
    }
    if (w->rec_seq && now > w->rec_T)
        fail(w,
             now,
             "head %lld still waits past its reservation %lld s",
             w->rec_seq,
             w->rec_T / SEC);
    if (w->rec_seq && head == w->rec_seq && T > w->rec_T)
        fail(w, now, "head %lld: its reservation moved later (%lld s)", head, T / SEC);
    if (!w->rec_seq && head) {
        w->rec_seq = head;
        w->rec_T = T;
    }
}

/* No job that fits waits unless it is behind the head (and says so). */
static void check_waiting(struct world *w, int64_t now)
{
    struct ty_resources f, rooms[3], room, need;
    int64_t head = ty_sched_head(w->s, NULL);
    char why[512];

    free_now(w, &f);
    for (int p = 0; p < w->nproj; p++)
        room_of(w, p, &rooms[p]);
    int64_t want_head = 0; /* the first in order that may fit its project: it did not fit */
    for (int q = 1; q <= w->nj; q++) {
        if (w->j[q].state != QUEUED || w->j[q].never || (want_head && ahead(w, want_head, q)))
            continue;
        ty_demand_total(&w->j[q].d, 1, &need);
        room = rooms[w->j[q].proj];
        if (ty_resources_short(&need, &room) < 0)
            want_head = q;
    }
    if (head != want_head)
        fail(w, now, "the head is job %lld, not %lld", head, want_head);
    for (int q = 1; q <= w->nj; q++) {
        if (w->j[q].state != QUEUED)
            continue;
        ty_demand_total(&w->j[q].d, 1, &need);
        room = rooms[w->j[q].proj];
        bool fits = ty_resources_short(&need, &f) < 0 && ty_resources_short(&need, &room) < 0;
        if (!fits && q % 4) /* words cost time: read a quarter of the others' */
            continue;
        bool behind =
            ty_sched_reason(w->s, q, why, sizeof(why)) && strncmp(why, "Waiting behind ", 15) == 0;
        if (fits && !(behind && head && ahead(w, head, q)))
            fail(w, now, "job %lld fits but waits (head %lld)", q, head);
        if (strncmp(why, "Waiting to be scheduled", 23) == 0)
            fail(w, now, "job %lld has no reason after a pass (%lld)", q, 0);
    }
}

static void check_totals(struct world *w, int64_t now)
{
    struct ty_resources used[4]; /* [0]: everything; [1 + p]: project p */

    for (int p = 0; p < 4; p++)
        ty_resources_zero(&used[p]);
    for (int q = 1; q <= w->nj; q++)
        if (w->j[q].state == RUNNING) {
            ty_resources_add(&used[0], &w->j[q].held, 1);
            ty_resources_add(&used[1 + w->j[q].proj], &w->j[q].held, 1);
        }
    if (ty_resources_short(&used[0], &w->cap) >= 0)
        fail(w,
             now,
             "capacity exceeded in dimension %lld (%lld)",
             ty_resources_short(&used[0], &w->cap),
             0);
    for (int p = 0; p < w->nproj; p++)
        if (ty_resources_short(&used[1 + p], &w->limit[p]) >= 0)
            fail(w,
                 now,
                 "project %lld over its limit in dimension %lld",
                 p,
                 ty_resources_short(&used[1 + p], &w->limit[p]));
}

static void random_demand(const struct world *w, struct ty_demand *d)
{
    int64_t cpus = w->cap.v[TY_RES_CPUS], mem = w->cap.v[TY_RES_MEMORY];
    int tm = w->ndev ? w->dev_type[rnd(0, w->ndev - 1)] : T4;
    int tw = rnd(0, 9) == 0 ? 2 /* a V100: not offered */ : tm;

    *d = dem(cpus == TY_RES_UNLIMITED ? rnd(0, 32) : rnd(0, cpus * 2 / 3 + 2),
             mem == TY_RES_UNLIMITED ? rnd(0, 64) * 1024 : rnd(0, mem * 2 / 3 + 1024),
             -1,
             0,
             rnd(0, 2),
             0);
    d->role_count[TY_ROLE_PS] = rnd(0, 1);
    if (rnd(0, 2) == 0) {
        d->role_gpus[TY_ROLE_MASTER] = (int)rnd(0, 2);
        d->role_gpu_type[TY_ROLE_MASTER] = tm;
        d->trial.v[TY_RES_GPU0 + tm] += d->role_gpus[TY_ROLE_MASTER];
        if (d->role_count[TY_ROLE_WORKER]) {
            d->role_gpus[TY_ROLE_WORKER] = (int)rnd(0, 2);
            d->role_gpu_type[TY_ROLE_WORKER] = tw;
            d->trial.v[TY_RES_GPU0 + tw] +=
                d->role_count[TY_ROLE_WORKER] * d->role_gpus[TY_ROLE_WORKER];
        }
    }
    if (rnd(0, 4) == 0) {
        d->tuning = true;
        d->max_trials = (int)rnd(1, 4);
    }
}

static int64_t random_maxrun(void)
{
    static const int64_t runs[] = {10 * MIN, 30 * MIN, HOUR, 2 * HOUR, 5 * HOUR, 0};
    return runs[rnd(0, 5)];
}

/* A job found running at the start, if it fits. */
static void random_holder(struct world *w)
{
    struct sjob *j = &w->j[w->nj + 1];
    struct ty_resources f, room;
    int gpus[MAXD * 4];
    size_t ng = 0;

    random_demand(w, &j->d);
    j->d.max_trials = 1;
    j->proj = (int)rnd(0, w->nproj - 1);
    ty_demand_total(&j->d, 1, &j->held);
    free_now(w, &f);
    room_of(w, j->proj, &room);
    if (ty_resources_short(&j->held, &f) >= 0 || ty_resources_short(&j->held, &room) >= 0)
        return;
    for (int t = 0; t < TY_GPU_NTYPES; t++) /* any free devices of the types */
        for (int64_t k = 0, dev = w->ndev - 1; k < j->held.v[TY_RES_GPU0 + t]; k++, dev--) {
            while (w->dev_type[dev] != t || w->owner[dev])
                dev--;
            w->owner[dev] = w->nj + 1;
            gpus[ng++] = (int)dev;
        }
    j->maxrun = random_maxrun();
    int64_t run = j->maxrun ? j->maxrun : TY_SCHED_DEFAULT_RUNNING_USEC;
    j->start = -rnd(0, run / MIN - 1) * MIN;
    j->end = rnd(1, (j->start + run) / MIN) * MIN;
    j->run_at = j->start; /* RUNNING since its start: no allowance */
    j->told = true;
    j->state = RUNNING;
    w->nj++;
    if (ty_sched_hold(w->s, w->nj, projects[j->proj], &j->held, gpus, ng, j->start, j->maxrun, 0))
        fail(w, 0, "hold of job %lld refused (%lld)", w->nj, 0);
}

static void setup(struct world *w)
{
    struct ty_resources cap, lim;

    memset(w, 0, sizeof(*w));
    w->ndev = (int)rnd(0, MAXD);
    for (int i = 0; i < w->ndev; i++)
        w->dev_type[i] = rnd(0, 1) ? T4 : K80;
    ty_resources_unlimited(&cap);
    if (rnd(0, 1))
        cap.v[TY_RES_JOBS] = rnd(1, 6);
    if (rnd(0, 3))
        cap.v[TY_RES_CPUS] = rnd(8, 64);
    if (rnd(0, 1))
        cap.v[TY_RES_MEMORY] = rnd(16, 256) * 1024;
    w->s = ty_sched_new(&cap, w->dev_type, (size_t)w->ndev);
    ty_sched_capacity(w->s, &w->cap);
    w->nproj = (int)rnd(1, 3);
    for (int p = 0; p < w->nproj; p++) {
        ty_resources_unlimited(&w->limit[p]);
        if (rnd(0, 1))
            continue;
        ty_resources_unlimited(&lim);
        if (rnd(0, 1))
            lim.v[TY_RES_JOBS] = rnd(1, 3);
        if (rnd(0, 1))
            lim.v[TY_RES_CPUS] = rnd(4, 32);
        for (int t = 0; rnd(0, 2) == 0 && t < TY_GPU_NTYPES; t++)
            lim.v[TY_RES_GPU0 + t] = rnd(0, 4);
        w->limit[p] = lim;
        ty_sched_set_limit(w->s, projects[p], &lim);
    }
    w->outside = w->ndev && rnd(0, 4) == 0;
    for (int64_t k = rnd(0, 4); k > 0; k--)
        random_holder(w);
    for (int64_t k = rnd(5, 30) + rnd(0, 10); k > 0 && w->nj < MAXJ; k--) {
        struct sjob *j = &w->j[++w->nj];
        struct ty_resources have;
        char why[256];
        random_demand(w, &j->d);
        j->proj = (int)rnd(0, w->nproj - 1);
        j->maxrun = random_maxrun();
        j->prep = (int64_t[]){0, 0, 5 * MIN, 20 * MIN, 45 * MIN}[rnd(0, 4)];
        j->arrive = k > 10 ? 0 : rnd(0, 6 * 60) * MIN;
        j->prio = j->arrive ? 0 : (int)(rnd(0, 2) ? 0 : rnd(1, 3) * 3);
        j->state = PENDING;
        have = w->cap;
        j->never = ty_demand_check(&j->d, &have, "x", NULL, why, sizeof(why)) < 0 ||
                   ty_demand_check(&j->d, &w->limit[j->proj], "x", NULL, why, sizeof(why)) < 0;
    }
}

/* Time moves to the next end or arrival: jobs end, arrive, devices come and go. False when
 * nothing is left to happen. */
static bool advance(struct world *w, int64_t *now)
{
    int64_t next = INT64_MAX;
    bool busy = false;

    for (int q = 1; q <= w->nj; q++) {
        if (w->j[q].state == RUNNING && w->j[q].end < next)
            next = w->j[q].end;
        if (w->j[q].state == RUNNING && w->j[q].tell && !w->j[q].told && w->j[q].run_at < next)
            next = w->j[q].run_at;
        if (w->j[q].state == PENDING && w->j[q].arrive < next)
            next = w->j[q].arrive;
    }
    for (int i = 0; i < w->ndev; i++)
        busy = busy || w->busy[i];
    if (next == INT64_MAX && !busy)
        return false;
    if (next != INT64_MAX)
        *now = next > *now ? next : *now;
    for (int q = 1; q <= w->nj; q++) {
        struct sjob *j = &w->j[q];
        if (j->state == RUNNING && j->tell && !j->told && j->run_at <= *now) {
            if (!ty_sched_running(w->s, q, j->run_at))
                fail(w, *now, "job %lld: its RUNNING start refused (%lld)", q, 0);
            j->told = true;
        }
        if (j->state == RUNNING && j->end <= *now) {
            if (!ty_sched_release(w->s, q))
                fail(w, *now, "job %lld: release refused (%lld)", q, 0);
            for (int i = 0; i < w->ndev; i++)
                if (w->owner[i] == q)
                    w->owner[i] = 0;
            j->state = DONE;
        }
        if (j->state == PENDING && j->arrive <= *now) {
            char id[16];
            (void)snprintf(id, sizeof(id), "j%d", q);
            struct ty_sched_job sj = {.seq = q,
                                      .project = projects[j->proj],
                                      .job_id = id,
                                      .priority = j->prio,
                                      .create_usec = j->arrive,
                                      .max_running_usec = j->maxrun,
                                      .prepare_usec = j->prep,
                                      .demand = j->d};
            if (ty_sched_enqueue(w->s, &sj))
                fail(w, *now, "job %lld: enqueue refused (%lld)", q, 0);
            j->state = QUEUED;
        }
    }
    for (int i = 0; w->outside && i < w->ndev; i++) {
        bool b = next != INT64_MAX && !w->owner[i] && rnd(0, 3) == 0;
        if (b != w->busy[i])
            ty_sched_set_device_busy(w->s, i, b);
        w->busy[i] = b;
    }
    return true;
}

static int run_scenario(uint64_t seed, int *passes)
{
    struct world *w = calloc(1, sizeof(*w));
    int64_t now = 0;
    int fails;

    rng = seed;
    setup(w);
    (void)advance(w, &now);
    for (int step = 0; step < 1000; step++) {
        struct ty_sched_admission *a;
        size_t n;
        a = pass_at(w->s, now, &n);
        (*passes)++;
        for (size_t i = 0; i < n; i++)
            check_admission(w, &a[i], now);
        if (!w->outside)
            check_head(w, a, n, now);
        check_waiting(w, now);
        check_totals(w, now);
        ty_sched_admissions_free(a, n);
        if (!advance(w, &now))
            break;
    }
    for (int q = 1; q <= w->nj; q++)
        if (!w->j[q].never && w->j[q].state != DONE && w->j[q].state != RUNNING)
            fail(w, now, "job %lld can fit but never ran (state %lld)", q, w->j[q].state);
    fails = w->fails;
    if (fails)
        diag("seed %llu: %d failures", (unsigned long long)seed, fails);
    ty_sched_free(w->s);
    free(w);
    return fails;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 2000, bad = 0, passes = 0;

    for (int i = 0; i < n; i++)
        bad += run_scenario(UINT64_C(1000) + (uint64_t)i, &passes) > 0;
    ok(bad == 0, "%d scenarios (%d passes): invariants hold in all (%d failed)", n, passes, bad);
    ok(heads_started > n / 4 && backfilled > n / 4,
       "the scenarios exercise the reservation: %ld heads started by it, %ld jobs backfilled",
       heads_started,
       backfilled);
    return done_testing();
}
