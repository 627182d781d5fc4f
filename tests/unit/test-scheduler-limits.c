/* SPDX-License-Identifier: Apache-2.0
 * test-scheduler-limits.c: the scheduler's project limits and capacities
 * (src/lib/admit/scheduler*.c): a project at its limit waits with its reason while others go
 * ahead, the head's project keeps its room, a limit or capacity lowered under running jobs
 * (as after a restart with smaller settings) admits nothing more, and a job that can never fit
 * says so. test-scheduler.c has the other rules. */
#include "sched-test.h"
#include "tap.h"

static char why[512]; /* a reason or error message, for the calls that take a buffer */

static void test_projects(void)
{
    struct ty_resources cap = cap_of(-1, 20), lim, got, held;
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct ty_sched_admission *a;
    size_t n;

    ty_resources_unlimited(&lim);
    lim.v[TY_RES_CPUS] = 8;
    ty_sched_set_limit(s, "vision", &lim);
    ty_resources_unlimited(&lim);
    lim.v[TY_RES_JOBS] = 1;
    ty_sched_set_limit(s, "nlp", &lim);
    ty_resources_unlimited(&lim);
    lim.v[TY_RES_CPUS] = 2;
    ty_sched_set_limit(s, "tiny", &lim);
    ok(ty_sched_get_limit(s, "vision", &got) && got.v[TY_RES_CPUS] == 8 &&
           got.v[TY_RES_JOBS] == TY_RES_UNLIMITED,
       "projects: a limit set is read back");
    ok(!ty_sched_get_limit(s, "other", &got) && !ty_resources_any_counted(&got),
       "projects: none for another project");

    enq(s, 1, "vision", 0, 0, HOUR, cpus_only(8));
    enq(s, 2, "vision", 0, 0, HOUR, cpus_only(4));
    enq(s, 3, "tiny", 0, 0, HOUR, cpus_only(4));
    enq(s, 4, "other", 0, 0, 30 * 24 * HOUR, cpus_only(8));
    enq(s, 5, "nlp", 0, 0, HOUR, cpus_only(1));
    enq(s, 6, "nlp", 0, 0, HOUR, cpus_only(1));
    a = pass_at(s, MIN, &n);
    ok(n == 3 && find_adm(a, n, 1) && find_adm(a, n, 4) && find_adm(a, n, 5),
       "projects: 1, 4 and 5 start; the others wait for their projects");
    is_str(reason(s, 2),
           "Project vision is at its limit of 8 vCPUs (it holds 8, the job needs 4)",
           "projects: vCPU limit reason");
    is_str(reason(s, 3),
           "Project tiny has a limit of 2 vCPUs, less than the job needs at once (4 vCPUs); it "
           "waits until the limit is raised; 1 job ahead of it",
           "projects: a limit the job can never fit");
    is_str(reason(s, 6),
           "Project nlp is at its limit of 1 running job (it runs 1); 1 job ahead of it",
           "projects: running-job limit reason (job 3, which never fits, is not ahead)");
    is_int(ty_sched_head(s, NULL), 0, "projects: a job waiting for its project is not the head");
    ty_sched_admissions_free(a, n);
    ty_sched_release(s, 1);
    a = pass_at(s, 2 * MIN, &n);
    ok(n == 1 && a[0].seq == 2, "projects: the project's job ended: job 2 starts");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* the head's project keeps its room: a short job of the same project may not take it */
    cap = cap_of(-1, 16);
    s = ty_sched_new(&cap, NULL, 0);
    ty_resources_unlimited(&lim);
    lim.v[TY_RES_CPUS] = 12;
    ty_sched_set_limit(s, "vision", &lim);
    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    held.v[TY_RES_CPUS] = 10;
    ty_sched_hold(s, 1, "other", &held, NULL, 0, 0, HOUR, 0);
    enq(s, 2, "vision", 0, 0, HOUR, cpus_only(12));
    enq(s, 3, "vision", 0, 0, 10 * MIN, cpus_only(2));
    enq(s, 4, "other", 0, 0, 10 * MIN, cpus_only(2));
    a = pass_at(s, MIN, &n);
    ok(n == 1 && a[0].seq == 4, "projects: a short job of another project goes ahead");
    like(reason(s, 3), "Waiting behind job job_2", "projects: one of the head's project does not");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

/* A capacity or limit lowered under running jobs (trainyardd restarted with smaller settings):
 * over by exactly one left -1 free, which read as unlimited, and the queue started at once. */
static void test_lowered(void)
{
    struct ty_resources cap = cap_of(1, 20), lim, held;
    struct ty_sched *s = ty_sched_new(&cap, NULL, 0);
    struct ty_sched_admission *a;
    size_t n;

    ty_resources_zero(&held);
    held.v[TY_RES_JOBS] = 1;
    held.v[TY_RES_CPUS] = 2;
    ty_sched_hold(s, 1, "vision", &held, NULL, 0, 0, HOUR, 0);
    ty_sched_hold(s, 2, "vision", &held, NULL, 0, 0, HOUR, 0);
    ty_resources_unlimited(&lim);
    lim.v[TY_RES_CPUS] = 3;
    ty_sched_set_limit(s, "vision", &lim);
    enq(s, 3, "other", 0, 0, HOUR, cpus_only(1));
    a = pass_at(s, MIN, &n);
    is_int(n, 0, "lowered: 2 jobs run under a limit of 1: the next waits");
    is_str(reason(s, 3),
           "Waiting for a running-job slot: 2 of 1 in use",
           "lowered: the reason counts the jobs that run");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    cap = cap_of(-1, 20);
    s = ty_sched_new(&cap, NULL, 0);
    ty_sched_hold(s, 1, "vision", &held, NULL, 0, 0, HOUR, 0);
    ty_sched_hold(s, 2, "vision", &held, NULL, 0, 0, HOUR, 0);
    ty_sched_set_limit(s, "vision", &lim);
    enq(s, 3, "vision", 0, 0, HOUR, cpus_only(1));
    a = pass_at(s, MIN, &n);
    is_int(n, 0, "lowered: a project holding 4 vCPUs under a limit of 3 waits");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

static void test_never_fits(void)
{
    struct ty_resources cap = cap_of(4, -1), have;
    int types[2] = {T4, T4};
    struct ty_sched *s = ty_sched_new(&cap, types, 2);
    struct ty_demand big = dem(4, 0, T4, 4, 0, 0);
    struct ty_sched_admission *a;
    size_t n;

    ty_sched_capacity(s, &have);
    ok(have.v[TY_RES_GPU0 + T4] == 2 && have.v[TY_RES_GPU0 + K80] == 0 && have.v[TY_RES_JOBS] == 4,
       "never fits: the capacity counts the devices");
    is_int(ty_demand_check(&big, &have, "this service", NULL, why, sizeof(why)),
           -1,
           "never fits: 4 T4 of 2");
    like(why, "needs 4 × NVIDIA_TESLA_T4 at once, and this service has 2", "never fits: words");
    enq(s, 1, "p", 0, 0, 0, big);
    enq(s, 2, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    a = pass_at(s, MIN, &n);
    ok(n == 1 && a[0].seq == 2, "never fits: it does not hold the queue up");
    is_int(ty_sched_never_count(s), 1, "never fits: counted");
    is_str(reason(s, 1),
           "The job needs 4 × NVIDIA_TESLA_T4 at once, more than this service has (2); it waits "
           "until the capacity grows",
           "never fits: its reason");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* One running-job slot: behind a job that never fits, the others' positions (and "N
     * jobs ahead") count only the jobs that can start. */
    cap = cap_of(1, -1);
    s = ty_sched_new(&cap, types, 2);
    enq(s, 1, "p", 0, 0, 0, big);
    enq(s, 2, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    enq(s, 3, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    enq(s, 4, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    a = pass_at(s, MIN, &n);
    ok(n == 1 && a[0].seq == 2, "never fits, one slot: the first that fits runs");
    ok(ty_sched_position(s, 1) == 1 && ty_sched_position(s, 3) == 1 && ty_sched_position(s, 4) == 2,
       "never fits: not counted ahead of the others (1, 1, 2: got %d, %d, %d)",
       (int)ty_sched_position(s, 1),
       (int)ty_sched_position(s, 3),
       (int)ty_sched_position(s, 4));
    is_str(reason(s, 4),
           "Waiting for a running-job slot: 1 of 1 in use; 1 job ahead of it",
           "never fits: the reason's count of jobs ahead leaves it out");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);

    /* No running-job slot at all (--max-running-jobs 0): none can start, each keeps its place. */
    cap = cap_of(0, -1);
    s = ty_sched_new(&cap, types, 2);
    for (int64_t i = 1; i <= 3; i++)
        enq(s, i, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    a = pass_at(s, MIN, &n);
    ok(n == 0 && ty_sched_position(s, 1) == 1 && ty_sched_position(s, 2) == 2 &&
           ty_sched_position(s, 3) == 3,
       "no slot: jobs that cannot start keep their places among themselves");
    is_int(ty_sched_never_count(s), 3, "no slot: every queued job counted as never starting");
    /* a job queued after the pass (with no slot, no pass follows a create at once) is not
     * put before them: whether it could start is not known yet */
    enq(s, 4, "p", 0, 0, 0, dem(1, 0, T4, 1, 0, 0));
    is_int(ty_sched_position(s, 4), 4, "no slot: a job no pass has seen is behind the others");
    ty_sched_admissions_free(a, n);
    ty_sched_free(s);
}

int main(void)
{
    test_projects();
    test_lowered();
    test_never_fits();
    return done_testing();
}
