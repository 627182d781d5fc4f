/* SPDX-License-Identifier: Apache-2.0
 * test-scheduler.c: the scheduler's rules one by one (src/lib/admit/scheduler*.c): order,
 * gang admission, backfill behind a head and its reasons, a stream of small jobs that does
 * not starve a big head, tuning trials, GPU devices (order,
 * exclusivity, busy ones), unadmit, release, expiry, positions, statistics, the reasons'
 * words, and the change count (every change that can move a position or a reason bumps it; a
 * pass that decides the same as the last one does not). test-scheduler-sim.c checks the invariants
 * over many generated queues, test-scheduler-limits.c project limits and capacities. */
#include <pthread.h>

#include "sched-test.h"
#include "tap.h"

static char why[512]; /* a reason or error message, for the calls that take a buffer */

static void test_order(void)
{
    struct ty_resources cap = cap_of(1, -1);
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct ty_sched_admission *a;
    int64_t want[] = {5, 2, 3, 1, 4};
    size_t n;

    ok(enq(s, 1, "p", 0, 1 * SEC, 0, cpus_only(1)) == 0 &&
           enq(s, 2, "p", 5, 2 * SEC, 0, cpus_only(1)) == 0 &&
           enq(s, 3, "p", 5, 3 * SEC, 0, cpus_only(1)) == 0 &&
           enq(s, 4, "p", 0, 4 * SEC, 0, cpus_only(1)) == 0 &&
           enq(s, 5, "p", 1000, 5 * SEC, 0, cpus_only(1)) == 0,
       "order: five jobs enqueued");
    ok(ty_sched_position(s, 5) == 1 && ty_sched_position(s, 2) == 2 &&
           ty_sched_position(s, 3) == 3 && ty_sched_position(s, 1) == 4 &&
           ty_sched_position(s, 4) == 5,
       "order: priority descending, then creation");
    is_str(reason(s, 1), "Waiting to be scheduled; 3 jobs ahead of it", "order: before a pass");
    is_str(reason(s, 5), "Waiting to be scheduled", "order: the first has nobody ahead");
    is_int(ty_sched_position(s, 99), 0, "order: an unknown job has no position");
    ok(!ty_sched_reason(s, 99, why, sizeof(why)) && why[0] == '\0', "order: nor a reason");
    for (size_t i = 0; i < 5; i++) {
        a = pass_at(s, 10 * SEC + (int64_t)i, &n);
        ok(n == 1 && a[0].seq == want[i],
           "order: pass %zu admits job %lld (one slot)",
           i,
           (long long)want[i]);
        if (i == 0) {
            is_str(reason(s, 2),
                   "Waiting for a running-job slot: 1 of 1 in use",
                   "order: the head waits for the slot");
            is_str(reason(s, 3),
                   "Waiting for a running-job slot: 1 of 1 in use; 1 job ahead of it",
                   "order: so does the next one, with its place");
            is_int(ty_sched_position(s, 4), 4, "order: positions follow the admissions");
        }
        ok(n == 1 && ty_sched_release(s, a[0].seq), "order: release it");
        ty_sched_admissions_free(a, n);
    }
    ty_sched_free(s);
}

static void test_gang(void)
{
    struct ty_resources cap = cap_of(-1, 16);
    int types[4] = {T4, T4, T4, T4}, dev0 = 0;
    struct ty_sched *s;
    struct ty_sched_admission *a;
    struct ty_sched_stats st;
    size_t n;

    cap.v[TY_RES_MEMORY] = 64 * 1024;
    s = ty_sched_new(&cap, types, 4);
    enq(s, 1, "p", 0, 0, HOUR, cpus_only(12));
    enq(s, 2, "p", 0, 0, HOUR, cpus_only(8));
    enq(s, 3, "p", 0, 0, HOUR, dem(1, 70 * 1024, -1, 0, 0, 0));
    a = pass_at(s, MIN, &n);
    ok(n == 1 && a[0].seq == 1, "gang: 12 of 16 vCPUs start");
    is_str(
        reason(s, 2), "Waiting for 8 vCPUs: 4 of 16 free", "gang: 8 do not fit 4: it waits, whole");
    ty_sched_stats(s, &st);
    is_int(st.used.v[TY_RES_CPUS], 12, "gang: nothing of job 2 is held");
    is_str(reason(s, 3),
           "The job needs 70.0 GiB of memory at once, more than this service has (64.0 GiB of "
           "memory); it waits until the capacity grows; 1 job ahead of it",
           "gang: more memory than the service has");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* GPUs: a master with 2 and two workers with 1 each need 4 at once */
    s = ty_sched_new(&cap, types, 4);
    struct ty_resources held;
    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    held.v[TY_RES_GPU0 + T4] = 1;
    is_int(ty_sched_hold(s, 100, "other", &held, &dev0, 1, 0, HOUR, 0), 0, "gang: device 0 held");
    enq(s, 1, "p", 0, 0, HOUR, dem(4, 0, T4, 2, 2, 1));
    a = pass_at(s, MIN, &n);
    is_int(n, 0, "gang: 4 GPUs do not fit 3");
    is_str(reason(s, 1), "Waiting for 4 × NVIDIA_TESLA_T4: 3 of 4 free", "gang: GPU reason");
    ty_sched_admissions_free(a, n);
    ok(ty_sched_release(s, 100), "gang: device 0 released");
    a = pass_at(s, 2 * MIN, &n);
    ok(n == 1 && a[0].ngpus == 4 && a[0].gpus[0] == 0 && a[0].gpus[1] == 1 && a[0].gpus[2] == 2 &&
           a[0].gpus[3] == 3,
       "gang: all four at once, master first");
    ok(n == 1 && a[0].held.v[TY_RES_GPU0 + T4] == 4 && a[0].held.v[TY_RES_CPUS] == 4 &&
           a[0].held.v[TY_RES_JOBS] == 1 && a[0].trials == 1,
       "gang: it holds its whole demand");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

static void test_backfill(void)
{
    struct ty_resources cap = cap_of(-1, 16), held;
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct ty_sched_admission *a;
    int64_t t0 = 1000 * HOUR, T = 0;
    size_t n;

    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    held.v[TY_RES_CPUS] = 12;
    ty_sched_hold(s, 1, "p", &held, NULL, 0, t0, HOUR, 0);
    enq_id(s, 2, "big_1", "p", 0, t0, 2 * HOUR, 0, cpus_only(14));
    enq(s, 3, "p", 0, t0, 2 * HOUR, cpus_only(4));
    enq(s, 4, "p", 0, t0, 2 * HOUR, cpus_only(2));
    enq(s, 5, "p", 0, t0, 10 * MIN, cpus_only(2));
    a = pass_at(s, t0 + MIN, &n);
    ok(n == 2 && find_adm(a, n, 4) && find_adm(a, n, 5), "backfill: jobs 4 and 5 go ahead");
    is_int(ty_sched_head(s, &T), 2, "backfill: job 2 is the head");
    is_int(T, t0 + HOUR, "backfill: its reservation is when the running job ends");
    is_str(reason(s, 2), "Waiting for 14 vCPUs: 4 of 16 free", "backfill: the head's reason");
    is_str(reason(s, 3),
           "Waiting behind job big_1, which is ahead of it in the queue and waits for 14 vCPUs: "
           "starting this one now would delay it; 1 job ahead of it",
           "backfill: a job that would delay the head says so");
    ty_sched_admissions_free(a, n);
    ty_sched_release(s, 5); /* ended after 10 minutes */
    a = pass_at(s, t0 + 20 * MIN, &n);
    is_int(n, 0, "backfill: job 3 does not fit the 2 vCPUs free");
    ty_sched_admissions_free(a, n);
    ty_sched_release(s, 1);
    a = pass_at(s, t0 + HOUR, &n);
    ok(n == 1 && a[0].seq == 2, "backfill: the head starts at T");
    is_str(reason(s, 3), "Waiting for 4 vCPUs: 0 of 16 free", "backfill: job 3 waits for room");
    is_int(ty_sched_head(s, NULL), 3, "backfill: job 3 is the head now");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* a job stopped at its maxRunningTime holds on through its teardown: T, when the head is
     * sure to fit, counts the running job's, and a job goes ahead only if it is torn down by
     * then too (the service's head started 7 s past a T that forgot them) */
    s = ty_sched_new(&cap, NULL, 0);
    ty_sched_set_stop_usec(s, 15 * SEC);
    ty_sched_hold(s, 1, "p", &held, NULL, 0, t0, HOUR, 0);
    enq_id(s, 2, "big_1", "p", 0, t0, 2 * HOUR, 0, cpus_only(14));
    enq(s, 3, "p", 0, t0, HOUR - MIN + 10 * SEC, cpus_only(3));
    enq(s, 4, "p", 0, t0, HOUR - MIN, cpus_only(2));
    a = pass_at(s, t0 + MIN, &n);
    ok(n == 1 && a[0].seq == 4, "backfill: only a job torn down by T goes ahead");
    is_int(ty_sched_head(s, &T), 2, "backfill: job 2 is still the head");
    is_int(T, t0 + HOUR + 15 * SEC, "backfill: T counts the running job's teardown");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

/* maxRunningTime counts from RUNNING: a holder still PREPARING is expected to end after its
 * PREPARING allowance (or its wait deadline, if sooner) and its max running time, until the
 * scheduler hears when it entered RUNNING; a job goes ahead of the head only if it can also
 * prepare by then. */
static void test_preparing(void)
{
    struct ty_resources cap = cap_of(-1, 16), held;
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct ty_sched_admission *a;
    struct ty_sched_job jj;
    int64_t t0 = 1000 * HOUR, T = 0;
    size_t n;

    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    held.v[TY_RES_CPUS] = 12;
    ty_sched_hold(s, 1, "p", &held, NULL, 0, t0, HOUR, 20 * MIN);
    enq_id(s, 2, "big_1", "p", 0, t0, 2 * HOUR, 0, cpus_only(16));
    /* the head needs all 16 vCPUs (nothing extra at T); two short jobs: one that pulls images
     * (45 minutes allowed) and runs 45 minutes (91 past now: after T), one that does not and
     * runs 30 (31: before T) */
    jj = (struct ty_sched_job){.seq = 3,
                               .project = "p",
                               .job_id = "pulls",
                               .create_usec = t0,
                               .max_running_usec = 45 * MIN,
                               .prepare_usec = 45 * MIN,
                               .demand = cpus_only(2)};
    ty_sched_enqueue(s, &jj);
    jj.seq = 4;
    jj.job_id = "local";
    jj.max_running_usec = 30 * MIN;
    jj.prepare_usec = MIN;
    ty_sched_enqueue(s, &jj);
    a = pass_at(s, t0 + MIN, &n);
    is_int(ty_sched_head(s, &T), 2, "preparing: job 2 is the head");
    is_int(T, t0 + 20 * MIN + HOUR, "preparing: the holder's allowance comes before its hour");
    ok(n == 1 && a[0].seq == 4, "preparing: only the job that prepares and runs by T goes ahead");
    ty_sched_admissions_free(a, n);
    ok(ty_sched_running(s, 1, t0 + 5 * MIN), "preparing: the holder entered RUNNING");
    ok(!ty_sched_running(s, 1, t0 + 6 * MIN) && !ty_sched_running(s, 3, t0),
       "preparing: told once, and only of a holder");
    a = pass_at(s, t0 + 10 * MIN, &n);
    is_int(ty_sched_head(s, &T), 2, "preparing: job 2 is still the head");
    is_int(T, t0 + 5 * MIN + HOUR, "preparing: T counts from its RUNNING start now");
    ok(n == 0, "preparing: job 3 still cannot prepare and run by T");
    ty_sched_admissions_free(a, n);
    ty_sched_prepare_again(s, 1, t0 + 30 * MIN);
    a = pass_at(s, t0 + 30 * MIN, &n);
    ty_sched_head(s, &T);
    is_int(T, t0 + 5 * MIN + HOUR, "preparing: a job known to run does not prepare again");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* a new supervisor after the one before was lost: the allowance starts over */
    s = ty_sched_new(&cap, NULL, 0);
    ty_sched_hold(s, 1, "p", &held, NULL, 0, t0, HOUR, 20 * MIN);
    enq_id(s, 2, "big_1", "p", 0, t0, 2 * HOUR, 0, cpus_only(16));
    ty_sched_prepare_again(s, 1, t0 + 7 * MIN);
    a = pass_at(s, t0 + 8 * MIN, &n);
    ty_sched_head(s, &T);
    is_int(T, t0 + 27 * MIN + HOUR, "preparing: a new supervisor prepares again");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* a holder found PREPARING whose wait deadline comes before its allowance ends: cancelled
     * then if not RUNNING, so expected to end by the deadline + its max running time */
    s = ty_sched_new(&cap, NULL, 0);
    ty_sched_hold(s, 1, "p", &held, NULL, 0, t0, HOUR, 20 * MIN);
    enq_id(s, 2, "big_1", "p", 0, t0, 2 * HOUR, 0, cpus_only(14));
    a = pass_at(s, t0, &n);
    is_int(ty_sched_head(s, &T), 2, "preparing: the head again");
    is_int(T, t0 + 20 * MIN + HOUR, "preparing: a hold counts its allowance");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
    s = ty_sched_new(&cap, NULL, 0);
    jj = (struct ty_sched_job){.seq = 1,
                               .project = "p",
                               .job_id = "soon",
                               .create_usec = t0,
                               .max_running_usec = HOUR,
                               .wait_deadline_usec = t0 + 10 * MIN,
                               .prepare_usec = 20 * MIN,
                               .demand = cpus_only(12)};
    ty_sched_enqueue(s, &jj);
    a = pass_at(s, t0, &n);
    ok(n == 1, "preparing: a job with a wait deadline is admitted");
    ty_sched_admissions_free(a, n);
    enq_id(s, 2, "big_1", "p", 0, t0, 2 * HOUR, 0, cpus_only(14));
    a = pass_at(s, t0 + MIN, &n);
    is_int(ty_sched_head(s, &T), 2, "preparing: job 2 waits for it");
    is_int(T, t0 + 10 * MIN + HOUR, "preparing: its wait deadline bounds its PREPARING");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

/* A job waiting behind the head of another project does not learn the head's job id: the
 * reason says "a job of another project" (docs/security.md: no answer holds another project's
 * job ids). */
static void test_behind_other_project(void)
{
    struct ty_resources cap = cap_of(-1, 16), held;
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct ty_sched_admission *a;
    int64_t t0 = 1000 * HOUR;
    size_t n;

    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    held.v[TY_RES_CPUS] = 12;
    ty_sched_hold(s, 1, "pb", &held, NULL, 0, t0, HOUR, 0);
    enq_id(s, 2, "b_secret_big", "pb", 0, t0, 2 * HOUR, 0, cpus_only(14));
    enq_id(s, 3, "a_small", "pa", 0, t0, 2 * HOUR, 0, cpus_only(4));
    enq_id(s, 4, "b_small", "pb", 0, t0, 2 * HOUR, 0, cpus_only(4));
    a = pass_at(s, t0 + MIN, &n);
    is_int(n, 0, "another project: nothing starts (each would delay the head)");
    is_str(reason(s, 3),
           "Waiting behind a job of another project, which is ahead of it in the queue and "
           "waits for 14 vCPUs: starting this one now would delay it; 1 job ahead of it",
           "another project: the head is not named");
    like(reason(s, 4), "Waiting behind job b_secret_big", "its own project: the head is named");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

/* A big job needs all 8 vCPUs; 4 are held for an hour; a small job (4 vCPUs for 20 minutes)
 * arrives every 5 minutes. The big one starts when the running job ends, and small jobs run
 * before it where they end in time. */
static void test_no_starvation(void)
{
    struct ty_resources cap = cap_of(-1, 8), held;
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    int64_t end[256] = {0}, big_start = -1, T = 0, seq = 3;
    int small_before = 0, small_after = 0;

    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    held.v[TY_RES_CPUS] = 4;
    ty_sched_hold(s, 1, "p", &held, NULL, 0, 0, HOUR, 0);
    end[1] = HOUR;
    enq(s, 2, "p", 0, 0, HOUR, cpus_only(8));
    for (int64_t now = 0; now <= 3 * HOUR; now += MIN) {
        struct ty_sched_admission *a;
        size_t n;
        for (int64_t q = 1; q < seq; q++)
            if (end[q] && end[q] <= now) {
                ty_sched_release(s, q);
                end[q] = 0;
            }
        if (now % (5 * MIN) == 0 && seq < 200) {
            enq(s, seq, "p", 0, now, 20 * MIN, cpus_only(4));
            seq++;
        }
        a = pass_at(s, now, &n);
        if (now == 0)
            ty_sched_head(s, &T);
        for (size_t i = 0; i < n; i++) {
            end[a[i].seq] = now + (a[i].seq == 2 ? HOUR : 20 * MIN);
            if (a[i].seq == 2)
                big_start = now;
            else if (big_start < 0)
                small_before++;
            else
                small_after++;
        }
        ty_sched_admissions_free(a, n);
    }
    is_int(T, HOUR, "stream: the big job's reservation is the running job's end");
    is_int(big_start, HOUR, "stream: the big job starts at its reservation, not later");
    ok(small_before >= 2,
       "stream: small jobs ran before it where they ended in time (%d)",
       small_before);
    ok(small_after >= 2, "stream: and after it (%d)", small_after);
    ty_sched_free(s);
}

static void test_tuning(void)
{
    struct ty_resources cap = cap_of(-1, 10), held;
    int types[4] = {T4, T4, T4, T4}, dev0 = 0;
    struct ty_sched *s = ty_sched_new(&cap, types, 4);
    struct ty_demand d = dem(2, 0, T4, 1, 0, 0);
    struct ty_sched_admission *a;
    size_t n;

    d.tuning = true;
    d.max_trials = 5;
    ty_resources_zero(&held);
    held.v[TY_RES_GPU0 + T4] = 1;
    ty_sched_hold(s, 50, "p", &held, &dev0, 1, 0, HOUR, 0);
    enq(s, 1, "p", 0, 0, HOUR, d);
    a = pass_at(s, MIN, &n);
    ok(n == 1 && a[0].trials == 3, "tuning: 3 trials at once (3 free GPUs, 5 wanted)");
    ok(n == 1 && a[0].ngpus == 3 && a[0].gpus[0] == 1 && a[0].gpus[1] == 2 && a[0].gpus[2] == 3,
       "tuning: one device per trial slot, lowest first");
    ok(n == 1 && a[0].held.v[TY_RES_CPUS] == 6 && a[0].held.v[TY_RES_JOBS] == 1,
       "tuning: it holds 3 trials' vCPUs and one running-job slot");
    ty_sched_admissions_free(a, n);
    ty_sched_release(s, 50);
    d.max_trials = 2;
    enq(s, 2, "p", 0, 0, HOUR, d);
    d = dem(4, 0, -1, 0, 0, 0);
    d.tuning = true;
    d.max_trials = 3;
    enq(s, 3, "p", 0, 0, HOUR, d);
    a = pass_at(s, 2 * MIN, &n);
    ok(n == 1 && a[0].seq == 2 && a[0].trials == 1 && a[0].gpus[0] == 0,
       "tuning: one trial fits (the vCPUs), so it starts with one");
    is_str(reason(s, 3),
           "Waiting for 4 vCPUs for one trial: 2 of 10 free",
           "tuning: waits for one trial");
    ty_sched_admissions_free(a, n);
    ty_sched_release(s, 1);
    a = pass_at(s, 3 * MIN, &n);
    ok(n == 1 && a[0].seq == 3 && a[0].trials == 2, "tuning: 8 of 10 vCPUs: 2 trials of 4");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

static void test_devices(void)
{
    struct ty_resources cap = cap_of(-1, -1);
    int types[6] = {T4, K80, T4, T4, K80, T4};
    struct ty_sched *s = ty_sched_new(&cap, types, 6);
    struct ty_demand d = dem(1, 0, T4, 0, 2, 1);
    struct ty_sched_admission *a;
    size_t n;

    d.role_gpus[TY_ROLE_MASTER] = 1; /* a K80 master, T4 workers */
    d.role_gpu_type[TY_ROLE_MASTER] = K80;
    d.trial.v[TY_RES_GPU0 + K80] = 1;
    d.tuning = true;
    d.max_trials = 4;
    enq(s, 1, "p", 0, 0, 0, d);
    enq(s, 2, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    a = pass_at(s, MIN, &n);
    int want[6] = {1, 0, 2, 4, 3, 5};
    ok(n == 1 && a[0].trials == 2 && a[0].ngpus == 6 && memcmp(a[0].gpus, want, sizeof(want)) == 0,
       "devices: slot by slot, master then workers, lowest of each type first");
    like(reason(s, 2), "Waiting for 1 × NVIDIA_TESLA_T4: 0 of 4 free", "devices: none left");
    ty_sched_admissions_free(a, n);
    ty_sched_release(s, 1);

    /* every role in order: master, worker, ps, evaluator */
    d = dem(1, 0, T4, 0, 1, 1);
    d.role_count[TY_ROLE_PS] = 1;
    d.role_gpus[TY_ROLE_PS] = 1;
    d.role_gpu_type[TY_ROLE_PS] = K80;
    d.role_count[TY_ROLE_EVALUATOR] = 1;
    d.role_gpus[TY_ROLE_EVALUATOR] = 1;
    d.role_gpu_type[TY_ROLE_EVALUATOR] = T4;
    d.trial.v[TY_RES_GPU0 + T4] = 2;
    d.trial.v[TY_RES_GPU0 + K80] = 1;
    ty_sched_set_device_busy(s, 2, true);
    enq(s, 3, "p", 0, 0, 0, d);
    a = pass_at(s, 2 * MIN, &n);
    int want2[3] = {3, 1, 5};
    int got2[3] = {-1, -1, -1};
    for (size_t i = 0; n == 2 && i < 3 && i < find_adm(a, n, 3)->ngpus; i++)
        got2[i] = find_adm(a, n, 3)->gpus[i];
    ok(n == 2 && find_adm(a, n, 2) && find_adm(a, n, 2)->gpus[0] == 0,
       "devices: the waiting job got the lowest T4");
    ok(n == 2 && memcmp(got2, want2, sizeof(want2)) == 0,
       "devices: worker, ps, evaluator in order, busy device 2 skipped (got %d %d %d)",
       got2[0],
       got2[1],
       got2[2]);
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

static void test_busy(void)
{
    struct ty_resources cap = cap_of(-1, -1);
    int types[2] = {T4, T4};
    struct ty_sched *s = ty_sched_new(&cap, types, 2);
    struct ty_sched_admission *a;
    size_t n;

    ty_sched_set_device_busy(s, 0, true);
    ty_sched_set_device_busy(s, 7, true); /* not a device: ignored */
    enq(s, 1, "p", 0, 0, 0, dem(1, 0, T4, 2, 0, 0));
    a = pass_at(s, MIN, &n);
    is_int(n, 0, "busy: a device held outside is not given");
    is_str(reason(s, 1),
           "Waiting for 2 × NVIDIA_TESLA_T4: 1 of 2 free (1 held outside the service)",
           "busy: the reason says who holds it");
    ty_sched_admissions_free(a, n);
    ty_sched_set_device_busy(s, 0, false);
    a = pass_at(s, 2 * MIN, &n);
    ok(n == 1 && a[0].ngpus == 2 && a[0].gpus[0] == 0 && a[0].gpus[1] == 1,
       "busy: free again: both devices given");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* a device held outside may come free at any time: the head counts on it now, so a
     * short job may not take the head's other device */
    int three[3] = {T4, T4, T4}, dev1 = 1;
    struct ty_resources held;
    s = ty_sched_new(&cap, three, 3);
    ty_resources_zero(&held);
    held.v[TY_RES_GPU0 + T4] = 1;
    ty_sched_hold(s, 9, "p", &held, &dev1, 1, 0, HOUR, 0);
    ty_sched_set_device_busy(s, 0, true);
    enq(s, 1, "p", 0, 0, 0, dem(1, 0, T4, 2, 0, 0));
    enq(s, 2, "p", 0, 0, 10 * MIN, dem(1, 0, T4, 1, 0, 0));
    a = pass_at(s, MIN, &n);
    int64_t T = -1;
    is_int(n, 0, "busy: the short job does not take device 2");
    ok(ty_sched_head(s, &T) == 1 && T == MIN, "busy: the head's reservation is now");
    like(reason(s, 2), "Waiting behind job job_1", "busy: the short job waits behind the head");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

static void test_unadmit_release(void)
{
    struct ty_resources cap = cap_of(2, -1), held;
    int types[2] = {T4, T4};
    struct ty_sched *s = ty_sched_new(&cap, types, 2);
    struct ty_sched_admission *a;
    struct ty_sched_stats st;
    size_t n;

    enq(s, 1, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    enq(s, 2, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    enq(s, 3, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    a = pass_at(s, MIN, &n);
    ok(n == 2 && a[0].seq == 1 && a[1].seq == 2 && a[1].gpus[0] == 1, "unadmit: 1 and 2 start");
    ty_sched_admissions_free(a, n);
    ok(ty_sched_unadmit(s, 1), "unadmit: job 1 could not start");
    ok(!ty_sched_unadmit(s, 1), "unadmit: only once");
    is_int(ty_sched_position(s, 1), 1, "unadmit: back at its place, ahead of job 3");
    is_int(ty_sched_position(s, 3), 2, "unadmit: job 3 is behind it again");
    is_str(reason(s, 1), "Waiting to be scheduled", "unadmit: not seen by a pass since");
    ok(!ty_sched_release(s, 1), "release: a queued job holds nothing");
    ok(!ty_sched_release(s, 42), "release: an unknown job holds nothing");
    a = pass_at(s, 2 * MIN, &n);
    ok(n == 1 && a[0].seq == 1 && a[0].gpus[0] == 0, "unadmit: its device went back too");
    ty_sched_admissions_free(a, n);
    ty_sched_stats(s, &st);
    ok(st.admissions == 3 && st.unadmissions == 1 && st.holding == 2 && st.queued == 1,
       "unadmit: counted");
    ok(ty_sched_release(s, 1) && !ty_sched_release(s, 1), "release: once");
    ok(ty_sched_release(s, 2), "release: job 2");
    ty_resources_zero(&held);
    is_int(
        ty_sched_hold(s, 3, "p", &held, NULL, 0, 0, 0, 0), -EEXIST, "hold: a queued job: EEXIST");
    is_int(ty_sched_hold(s, 9, "p", &held, NULL, 0, 0, 0, 0), 0, "hold: a job found running");
    is_int(ty_sched_hold(s, 9, "p", &held, NULL, 0, 0, 0, 0), -EEXIST, "hold: twice: EEXIST");
    is_int(enq(s, 9, "p", 0, 0, 0, cpus_only(1)), -EEXIST, "enqueue: a holding job: EEXIST");
    is_int(enq(s, 3, "p", 0, 0, 0, cpus_only(1)), -EEXIST, "enqueue: a queued job: EEXIST");
    ok(!ty_sched_unadmit(s, 9), "unadmit: not a job a pass admitted");
    ty_sched_stats(s, &st);
    ok(st.used.v[TY_RES_GPU0 + T4] == 0 && st.used.v[TY_RES_JOBS] == 0, "release: all given back");
    struct ty_demand bad = dem(1, 0, T4, 1, 0, 0);
    bad.trial.v[TY_RES_GPU0 + T4] = 2;
    is_int(enq(s, 20, "p", 0, 0, 0, bad), -EINVAL, "enqueue: trial GPUs unlike the roles': EINVAL");
    bad = cpus_only(-1);
    is_int(enq(s, 21, "p", 0, 0, 0, bad), -EINVAL, "enqueue: a negative amount: EINVAL");
    bad = dem(1, 0, T4, 1, 0, 0);
    bad.trial.v[TY_RES_GPU0 + T4] = 0; /* a Slurm job: no devices, one slot */
    is_int(enq(s, 22, "p", 0, 0, 0, bad), 0, "enqueue: a job given no devices");
    ty_sched_free(s);
}

static void test_expiry(void)
{
    struct ty_resources cap = cap_of(1, -1), held;
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct ty_sched_admission *a = NULL;
    struct ty_sched_stats st;
    int64_t *exp = NULL;
    size_t n, ne;

    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    ty_sched_hold(s, 100, "p", &held, NULL, 0, 0, 0, 0);
    is_int(ty_sched_next_deadline(s), 0, "expiry: no deadline yet");
    enq_id(s, 1, NULL, "p", 0, 0, 0, 100 * SEC, cpus_only(1));
    enq_id(s, 2, NULL, "p", 0, 0, 0, 50 * SEC, cpus_only(1));
    enq_id(s, 3, NULL, "p", 0, 0, 0, 0, cpus_only(1));
    enq_id(s, 4, NULL, "p", 0, 0, 0, 30 * SEC, cpus_only(1));
    is_int(ty_sched_next_deadline(s), 30 * SEC, "expiry: the earliest");
    ok(ty_sched_dequeue(s, 4) && !ty_sched_dequeue(s, 4), "expiry: job 4 cancelled, once");
    is_int(ty_sched_next_deadline(s), 50 * SEC, "expiry: the earliest after a cancel");
    ty_sched_pass(s, 50 * SEC, &a, &n, &exp, &ne);
    ok(n == 0 && ne == 1 && exp[0] == 2, "expiry: job 2's deadline (<= now) passed");
    free(exp);
    is_int(ty_sched_position(s, 2), 0, "expiry: it left the queue");
    is_int(ty_sched_next_deadline(s), 100 * SEC, "expiry: the next one");
    ty_sched_release(s, 100);
    ty_sched_pass(s, 99 * SEC, &a, &n, &exp, &ne);
    ok(n == 1 && a[0].seq == 1 && ne == 0 && !exp, "expiry: job 1 started before its deadline");
    ty_sched_admissions_free(a, n);
    is_int(ty_sched_next_deadline(s), 0, "expiry: none left");
    ty_sched_stats(s, &st);
    is_int(st.expirations, 1, "expiry: counted");
    ty_sched_free(s);
}

/* Positions against a plain ordered list, over random insertions and removals. */
static void test_positions(void)
{
    struct ty_resources cap = cap_of(-1, -1);
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    int prio[600] = {0};
    bool in[600] = {false};
    int bad = 0, checks = 0;

    srand(7);
    for (int op = 0; op < 3000; op++) {
        int seq = 1 + rand() % 599;
        if (!in[seq]) {
            prio[seq] = (rand() % 4) * 10;
            in[seq] = enq(s, seq, "p", prio[seq], 0, 0, cpus_only(1)) == 0;
        } else {
            in[seq] = !ty_sched_dequeue(s, seq);
        }
        for (int k = 0; k < 5; k++) {
            int q = 1 + rand() % 599;
            int64_t want = 0;
            for (int o = 1; in[q] && o < 600; o++)
                if (in[o] && (prio[o] > prio[q] || (prio[o] == prio[q] && o <= q)))
                    want++;
            checks++;
            if (ty_sched_position(s, q) != want && bad++ < 3)
                diag("job %d: position %lld, want %lld",
                     q,
                     (long long)ty_sched_position(s, q),
                     (long long)want);
        }
    }
    ok(bad == 0, "positions: %d checks after random insertions and removals", checks);
    ty_sched_free(s);
}

static void test_stats_reasons(void)
{
    struct ty_resources cap = cap_of(-1, -1), held;
    struct ty_sched *s;
    struct ty_sched_admission *a;
    struct ty_sched_stats st;
    size_t n;

    cap.v[TY_RES_MEMORY] = 64 * 1024;
    s = ty_sched_new(&cap, NULL, 0);
    ty_resources_zero(&held);
    held.v[TY_RES_MEMORY] = 52736; /* 51.5 GiB */
    ty_sched_hold(s, 1, "p", &held, NULL, 0, 0, 0, 0);
    enq(s, 2, "p", 0, 100 * SEC, 0, dem(1, 30 * 1024, -1, 0, 0, 0));
    enq(s, 3, "p", 0, 100 * SEC + 500000, 0, dem(1, 1024, -1, 0, 0, 0));
    enq(s, 4, "p", 0, 0, 0, dem(1, 1024, -1, 0, 0, 0));
    enq(s, 5, "p", 0, 101 * SEC, 0, dem(1, 1024, -1, 0, 0, 0));
    a = pass_at(s, 101 * SEC, &n);
    is_int(n, 3, "stats: three admitted");
    is_str(
        reason(s, 2), "Waiting for 30.0 GiB of memory: 12.5 of 64.0 GiB free", "reasons: memory");
    ok(n == 3 && find_adm(a, n, 3)->waited_usec == 500000 &&
           find_adm(a, n, 4)->waited_usec == 101 * SEC,
       "stats: the wait of each admission");
    ty_sched_admissions_free(a, n);
    ty_sched_stats(s, &st);
    ok(st.wait_bucket[0] == 2 && st.wait_bucket[5] == 1,
       "stats: 0.5 s and 0 s in <= 1 s, 101 s in <= 300 s");
    ok(st.wait_sum_s > 101.49 && st.wait_sum_s < 101.51, "stats: the sum of the waits");
    ok(st.admissions == 3 && st.queued == 1 && st.holding == 4, "stats: counts");
    ok(st.used.v[TY_RES_MEMORY] == 52736 + 3 * 1024 && st.capacity.v[TY_RES_MEMORY] == 64 * 1024,
       "stats: used and capacity");
    ok(ty_sched_wait_bounds[0] == 1 && ty_sched_wait_bounds[10] == 86400 &&
           ty_sched_wait_bounds[11] > 1e300,
       "stats: the buckets' bounds end with +Inf");
    ty_sched_free(s);
}

/* Threads enqueue, ask and cancel while another passes and releases: nothing is lost. */
struct thread_arg {
    struct ty_sched *s;
    int64_t first;
    long positions;
};

static int threads_done;

static void *asker(void *p)
{
    struct thread_arg *t = p;
    char buf[256];

    for (int64_t seq = t->first; seq < t->first + 2000; seq++) {
        (void)enq(t->s, seq, "p", (int)(seq % 7), 0, HOUR, cpus_only(1 + seq % 3));
        t->positions += ty_sched_position(t->s, seq - 5) > 0;
        (void)ty_sched_reason(t->s, seq - 3, buf, sizeof(buf));
        if (seq % 5 == 0)
            (void)ty_sched_dequeue(t->s, seq - 1);
    }
    __atomic_add_fetch(&threads_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* ty_sched_changes: what the service's jobs.get cache trusts instead of asking again. */
static void test_changes(void)
{
    struct ty_resources cap = cap_of(1, -1), held;
    int types[1] = {T4};
    struct ty_sched *s = ty_sched_new(&cap, types, 1);
    struct ty_sched_admission *a;
    uint64_t c;
    size_t n;

#define BUMPED(what)                                                                               \
    do {                                                                                           \
        uint64_t now_ = ty_sched_changes(s);                                                       \
        ok(now_ > c, "changes: %s bumps the count", what);                                         \
        c = now_;                                                                                  \
    } while (0)
    c = ty_sched_changes(s);
    is_int((long long)c, 0, "changes: a new scheduler starts at 0");
    enq(s, 1, "p", 0, 0, 0, cpus_only(1));
    BUMPED("an enqueue");
    enq(s, 2, "p", 0, 0, 0, cpus_only(1));
    BUMPED("another enqueue (a later job's position)");
    ty_resources_zero(&held);
    ty_sched_hold(s, 9, "p", &held, NULL, 0, 0, HOUR, 0);
    BUMPED("a hold");
    a = pass_at(s, MIN, &n); /* 9 holds no running-job slot: 1 takes the only one */
    BUMPED("a pass that admits");
    is_str(reason(s, 2), "Waiting for a running-job slot: 1 of 1 in use", "changes: 2 waits");
    ty_sched_admissions_free(a, n);
    a = pass_at(s, 2 * MIN, &n);
    ty_sched_admissions_free(a, n);
    is_int(
        (long long)ty_sched_changes(s), (long long)c, "changes: a pass that decides the same: not");
    ty_sched_release(s, 1);
    BUMPED("a release");
    a = pass_at(s, 3 * MIN, &n);
    BUMPED("a pass after it (2 starts)");
    ok(n == 1 && ty_sched_unadmit(s, 2), "changes: 2 is unadmitted");
    ty_sched_admissions_free(a, n);
    BUMPED("an unadmit (2 waits again, unseen)");
    held.v[TY_RES_JOBS] = 1;
    ty_sched_hold(s, 8, "p", &held, NULL, 0, 0, HOUR, 0);
    BUMPED("a hold of the slot");
    a = pass_at(s, 4 * MIN, &n);
    ty_sched_admissions_free(a, n);
    is_int(n, 0, "changes: 2 waits for 8's slot");
    BUMPED("a pass that only changes a reason (unseen: waits for the slot)");
    ty_sched_set_device_busy(s, 0, true);
    BUMPED("a device marked busy");
    ty_sched_set_device_busy(s, 0, true);
    is_int((long long)ty_sched_changes(s), (long long)c, "changes: marked busy again: not");
    ty_sched_set_limit(s, "p", &cap);
    BUMPED("a project limit");
    ok(ty_sched_dequeue(s, 2), "changes: 2 leaves the queue");
    BUMPED("a dequeue");
    ok(!ty_sched_dequeue(s, 77) && !ty_sched_release(s, 77) && ty_sched_changes(s) == c,
       "changes: no change, no bump");
#undef BUMPED
    ty_sched_free(s);
}

static void test_threads(void)
{
    struct ty_resources cap = cap_of(-1, 64);
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct thread_arg args[3];
    pthread_t th[3];
    struct ty_sched_stats st;
    size_t admitted = 0, released = 0;
    int64_t running[4096];
    size_t nrun = 0;

    for (int i = 0; i < 3; i++) {
        args[i] = (struct thread_arg){.s = s, .first = 1 + i * 10000};
        pthread_create(&th[i], NULL, asker, &args[i]);
    }
    for (int64_t now = 0, after = 0; after < 50; now++) {
        after += __atomic_load_n(&threads_done, __ATOMIC_SEQ_CST) == 3;
        size_t n;
        struct ty_sched_admission *a = pass_at(s, now * SEC, &n);
        for (size_t i = 0; i < n && nrun < 4096; i++)
            running[nrun++] = a[i].seq;
        admitted += n;
        ty_sched_admissions_free(a, n);
        while (nrun > 8)
            released += ty_sched_release(s, running[--nrun]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    ty_sched_stats(s, &st);
    ok(st.admissions == admitted && st.holding == admitted - released,
       "threads: every admission counted once (%zu admitted, %zu released, %zu queued)",
       admitted,
       released,
       st.queued);
    ok(st.used.v[TY_RES_CPUS] <= 64, "threads: the capacity held");
    ty_sched_free(s);
}

int main(void)
{
    test_order();
    test_gang();
    test_backfill();
    test_preparing();
    test_behind_other_project();
    test_no_starvation();
    test_tuning();
    test_devices();
    test_busy();
    test_unadmit_release();
    test_expiry();
    test_positions();
    test_stats_reasons();
    test_changes();
    test_threads();
    return done_testing();
}
