/* SPDX-License-Identifier: Apache-2.0
 * test-supervise-cleanup.c: the asynchronous cleanup contract of runtimes (runtime.h), with
 * the process runtime and a slow one built on it: a run ends only once its runtime is clean,
 * the loop's other events flow while it cleans up, a run freed during its cleanup, and the
 * final state after orphans. The shared helpers: supervise-check.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"
#include "restart.h"
#include "supervise-check.h"

/* ---- a runtime whose cleanup takes its time: the process runtime, but cleanup() goes on
 * on the loop for SLOW_CLEANUP_USEC before it does the process runtime's and says `cleaned`. */

#define SLOW_CLEANUP_USEC (400 * INT64_C(1000))

static struct {
    uint64_t timer;        /* the cleanup under way */
    bool cleaned_sent;     /* `cleaned` was reported */
    int calls;             /* cleanup() calls */
    int destroyed_pending; /* destroy() found the cleanup still under way */
} slow;

static void slow_fire(struct ty_loop *loop, void *data)
{
    struct ty_runtime *rt = data;
    slow.timer = 0;
    /* Nothing of these runs is left, so the process runtime is clean at once. */
    if (ty_runtime_process.cleanup(rt) == 0) {
        slow.cleaned_sent = true;
        ty_runtime_cleaned(rt);
    }
}

static int slow_cleanup(struct ty_runtime *rt)
{
    slow.calls++;
    if (slow.cleaned_sent)
        return 0;
    if (!slow.timer)
        slow.timer = ty_loop_add_timer(rt->loop, ty_mono_usec() + SLOW_CLEANUP_USEC, slow_fire, rt);
    return TY_RUNTIME_ASYNC;
}

static void slow_destroy(struct ty_runtime *rt)
{
    if (slow.timer) {
        slow.destroyed_pending++;
        ty_loop_cancel_timer(rt->loop, slow.timer);
        slow.timer = 0;
    }
    ty_runtime_process.destroy(rt); /* finishes the process runtime's cleanup */
}

static struct ty_runtime_ops slow_ops;

static void slow_reset(void)
{
    memset(&slow, 0, sizeof(slow));
    slow_ops = ty_runtime_process;
    slow_ops.name = "slow";
    slow_ops.cleanup = slow_cleanup;
    slow_ops.destroy = slow_destroy;
}

/* A run's final state arrived: was the runtime clean by then? */
struct final_probe {
    struct capture cap;
    bool final_seen;
    bool final_after_cleaned;
    const char *marker; /* a process of the run that must be gone by then, or NULL */
    int left_at_final;
};

static void probe_state(void *ctx, enum ty_job_state s)
{
    struct final_probe *fp = ctx;
    cap_state(&fp->cap, s);
    if (!ty_job_state_is_final(s))
        return;
    fp->final_seen = true;
    fp->final_after_cleaned = slow.cleaned_sent;
    if (fp->marker)
        fp->left_at_final = count_procs_with(fp->marker);
}

static void probe_log(void *ctx, const struct ty_log_record *rec)
{
    struct final_probe *fp = ctx;
    cap_log(&fp->cap, rec);
}

/* Count the lines of @text holding @needle. */
static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Turn @loop once, with a short timer so that the caller's checks run often. */
static void turn(struct ty_loop *loop)
{
    ty_loop_add_timer(loop, ty_mono_usec() + 20000, tick, NULL);
    ty_loop_run_once(loop);
}

/* Runtime events for driving the process runtime directly. */
struct direct {
    int exited, cleaned;
};

static void d_started(void *ctx, struct ty_replica *r)
{
}

static void
d_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
}

static void d_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
    ((struct direct *)ctx)->exited++;
}

static void d_cleaned(void *ctx)
{
    ((struct direct *)ctx)->cleaned++;
}

/* 12. A run whose cleanup takes time (the slow runtime): the run is not done, and keeps
 * its last state, until the runtime says `cleaned`; another run on the same loop goes on
 * meanwhile (its output arrives); cancels during the cleanup change nothing. */
static void test_slow_cleanup(void)
{
    int64_t t0;

    slow_reset();
    struct ty_loop *loop = ty_loop_new();
    struct final_probe a = {0}, b = {0};
    struct ty_supervisor_options ao = {.on_log = probe_log, .on_state = probe_state, .ctx = &a};
    struct ty_supervisor_options bo = {.on_log = probe_log, .on_state = probe_state, .ctx = &b};
    struct ty_job *ja = make_job("slow_a", "exit 0", 0, NULL, NULL, NULL);
    struct ty_job *jb = make_job("busy_b",
                                 "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.02; done",
                                 0,
                                 NULL,
                                 NULL,
                                 NULL);
    struct ty_supervisor *sa = NULL, *sb = NULL;
    struct ty_error e = {0};
    enum ty_job_state during = TY_STATE_UNSPECIFIED;
    int ticks_before = -1, ticks_after;
    bool done_during = true;

    ok(ty_supervisor_new(loop, &ty_runtime_process, jb, NULL, NULL, &bo, &sb, &e) == 0 &&
           ty_supervisor_start(sb, &e) == 0,
       "cleanup: the busy run starts");
    /* Let it print a first line before the slow run starts. */
    t0 = ty_mono_usec();
    while (!strstr(ty_buf_str(&b.cap.lines), "tick 0") &&
           ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(ty_supervisor_new(loop, &slow_ops, ja, NULL, NULL, &ao, &sa, &e) == 0 &&
           ty_supervisor_start(sa, &e) == 0,
       "cleanup: the slow run starts");
    t0 = ty_mono_usec();
    while (!slow.timer && !ty_supervisor_done(sa) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(slow.timer != 0, "cleanup: the slow run's master ended and its cleanup goes on");
    if (slow.timer) {
        done_during = ty_supervisor_done(sa);
        during = ty_supervisor_state(sa);
        ticks_before = count_lines_with(ty_buf_str(&b.cap.lines), "|tick ");
        ty_supervisor_cancel(sa);
        ty_supervisor_cancel(sa);
        is_int(slow.calls, 1, "cleanup: the cancels did not clean up again");
    }
    ok(!done_during, "cleanup: not done while the runtime cleans up");
    ok(!ty_job_state_is_final(during),
       "cleanup: no final state while it cleans up (%s)",
       ty_job_state_name(during));
    ok(!a.final_seen, "cleanup: nor was one reported");
    t0 = ty_mono_usec();
    while (!ty_supervisor_done(sa) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ticks_after = count_lines_with(ty_buf_str(&b.cap.lines), "|tick ");
    ok(ty_supervisor_done(sa), "cleanup: done once cleaned");
    ok(a.final_seen && a.final_after_cleaned, "cleanup: the final state came after `cleaned`");
    is_str(ty_job_state_name(ty_supervisor_state(sa)), "SUCCEEDED", "cleanup: the result stands");
    ok(ty_mono_usec() - t0 >= SLOW_CLEANUP_USEC / 2, "cleanup: it did take its time");
    ok(ticks_after > ticks_before + 3,
       "cleanup: the other run's output flowed meanwhile (%d -> %d lines)",
       ticks_before,
       ticks_after);
    like(ty_buf_str(&a.cap.lines),
         "Cancel requested while the run is being cleaned up",
         "cleanup: a cancel during it is logged");
    like(ty_buf_str(&a.cap.lines),
         "Finished tearing down training program.\nservice|INFO|Job completed successfully.",
         "cleanup: then the end messages");
    ty_supervisor_cancel(sa); /* done: a no-op */
    ty_supervisor_cancel(sb);
    t0 = ty_mono_usec();
    while (!ty_supervisor_done(sb) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    is_str(
        ty_job_state_name(ty_supervisor_state(sb)), "CANCELLED", "cleanup: the busy run cancels");
    ty_supervisor_free(sa);
    ty_supervisor_free(sb);
    ty_loop_free(loop);
    ty_job_free(ja);
    ty_job_free(jb);
    ty_buf_release(&a.cap.lines);
    ty_buf_release(&b.cap.lines);
}

/* 13. Freeing a run whose cleanup goes on: destroy finishes it, nothing fires later. */
static void test_free_during_cleanup(void)
{
    int64_t t0;

    slow_reset();
    struct ty_loop *loop = ty_loop_new();
    struct final_probe a = {0};
    struct ty_supervisor_options ao = {.on_log = probe_log, .on_state = probe_state, .ctx = &a};
    struct ty_job *ja = make_job("slow_free", "exit 0", 0, NULL, NULL, NULL);
    struct ty_supervisor *sa = NULL;
    struct ty_error e = {0};

    ok(ty_supervisor_new(loop, &slow_ops, ja, NULL, NULL, &ao, &sa, &e) == 0 &&
           ty_supervisor_start(sa, &e) == 0,
       "free during cleanup: the run starts");
    t0 = ty_mono_usec();
    while (!slow.timer && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(slow.timer != 0 && !ty_supervisor_done(sa), "free during cleanup: cleaning up");
    ty_supervisor_free(sa);
    is_int(slow.destroyed_pending, 1, "free during cleanup: destroy took the cleanup over");
    t0 = ty_mono_usec();
    while (ty_mono_usec() - t0 < SLOW_CLEANUP_USEC + 100000)
        turn(loop);
    ok(!slow.cleaned_sent && !a.final_seen, "free during cleanup: no event after the free");
    ty_loop_free(loop);
    ty_job_free(ja);
    ty_buf_release(&a.cap.lines);
}

/* 14. The process runtime itself: an orphan that left the group makes its cleanup go on
 * on the loop; `cleaned` follows once; a call meanwhile says it goes on, one after says
 * it is done; the final state of a supervised run comes with nothing of it left. */
static void test_process_cleanup(void)
{
    int64_t t0;

    struct ty_loop *loop = ty_loop_new();
    struct direct d = {0};
    struct ty_runtime_events ev = {.started = d_started,
                                   .output = d_output,
                                   .exited = d_exited,
                                   .cleaned = d_cleaned,
                                   .ctx = &d};
    struct ty_job *jd =
        make_job("orphan_direct", "setsid sleep 1000.777 & sleep 0.2; exit 0", 0, NULL, NULL, NULL);
    struct ty_cluster_plan *plan = NULL;
    struct ty_runtime *rt = NULL;
    struct ty_error e = {0};
    char *env[] = {NULL};
    int r1 = -1, r2 = -1, r3 = -1;

    ok(jd && ty_plan_build(jd, NULL, NULL, &plan, &e) == 0 &&
           ty_runtime_new(&ty_runtime_process, loop, &ev, &rt, &e) == 0,
       "process cleanup: runtime created (%s)",
       e.msg);
    if (rt) {
        ty_runtime_attach(rt, plan);
        ok(rt->ops->prepare(rt, &e) == 0 && rt->ops->place(rt, &e) == 0 &&
               rt->ops->launch(rt, &plan->replicas[0], env, &e) == 0,
           "process cleanup: launched (%s)",
           e.msg);
        t0 = ty_mono_usec();
        while (!d.exited && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
            turn(loop);
        is_int(count_procs_with("sleep 1000.777"), 1, "process cleanup: the orphan runs");
        /* Either outcome of the contract: the orphan may be gone at once (its cgroup killed
         * in the first round: 0, no `cleaned`), or the cleanup goes on on the loop (ASYNC,
         * then one `cleaned`). */
        r1 = rt->ops->cleanup(rt);
        r2 = rt->ops->cleanup(rt);
        ok(r1 == TY_RUNTIME_ASYNC || r1 == 0, "process cleanup: done at once or goes on (%d)", r1);
        is_int(r2, r1, "process cleanup: a second call says the same");
        is_int(d.cleaned, 0, "process cleanup: `cleaned` not from within cleanup()");
        t0 = ty_mono_usec();
        while (r1 == TY_RUNTIME_ASYNC && !d.cleaned && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
            turn(loop);
        is_int(
            d.cleaned, r1 == TY_RUNTIME_ASYNC ? 1 : 0, "process cleanup: `cleaned` once if async");
        is_int(count_procs_with("sleep 1000.777"), 0, "process cleanup: the orphan is gone");
        r3 = rt->ops->cleanup(rt);
        is_int(r3, 0, "process cleanup: a call after it ended returns 0");
        ty_runtime_free(rt);
        is_int(d.cleaned,
               r1 == TY_RUNTIME_ASYNC ? 1 : 0,
               "process cleanup: destroy reports nothing more");
    }
    ty_plan_free(plan);
    ty_job_free(jd);
    ty_loop_free(loop);
}

static void test_final_after_orphans(void)
{
    int64_t t0;

    slow_reset();
    struct ty_loop *loop = ty_loop_new();
    struct final_probe a = {.marker = "sleep 1000.888"};
    struct ty_supervisor_options ao = {.on_log = probe_log, .on_state = probe_state, .ctx = &a};
    struct ty_job *ja =
        make_job("orphan_final", "setsid sleep 1000.888 & sleep 0.2; exit 0", 0, NULL, NULL, NULL);
    struct ty_supervisor *sa = NULL;
    struct ty_error e = {0};

    ok(ty_supervisor_new(loop, &ty_runtime_process, ja, NULL, NULL, &ao, &sa, &e) == 0 &&
           ty_supervisor_start(sa, &e) == 0,
       "orphan run: starts");
    t0 = ty_mono_usec();
    while (!ty_supervisor_done(sa) && ty_mono_usec() - t0 < 10 * INT64_C(1000000))
        turn(loop);
    ok(a.final_seen, "orphan run: ended");
    is_int(a.left_at_final, 0, "orphan run: nothing of it left when its final state came");
    ty_supervisor_free(sa);
    ty_loop_free(loop);
    ty_job_free(ja);
    ty_buf_release(&a.cap.lines);
}
int main(void)
{
    test_slow_cleanup();
    test_free_during_cleanup();
    test_process_cleanup();
    test_final_after_orphans();
    return done_testing();
}
