/* SPDX-License-Identifier: Apache-2.0
 * slurm-cancel.c: the slurm runtime's cleanup of its Slurm job. When the launchers ran (they
 * have just been told QUIT), first a wait of at most QUIT_WAIT_USEC for srun to end by itself:
 * each launcher removes what its replica's runtime made (a container, through the engine it
 * may have started as its own child) and exits, and the job ends with srun. scancel would
 * signal every process of the step at once, the launcher's engine too, and a container
 * being removed then stayed behind. Then, or at once when no launcher ran, scancel (by id, or
 * by name when its id is not known yet: srun, which may have made the job, is killed first);
 * then squeue every CANCEL_POLL_USEC until the job has left the queue or reached a final
 * state, at most CANCEL_WAIT_USEC (docs/internals/slurm.md, "Waiting without blocking").
 *
 * cleanup() runs this on the runtime's loop: the commands are asynchronous subprocesses and
 * the pauses loop timers, and `cleaned` follows the end, so the caller's other runs and
 * cancels go on meanwhile. destroy() of a runtime whose cleanup has not ended takes the wait
 * over from where it is and drives it to the end on a private loop (destroy must leave no job
 * behind, and only a private loop runs nobody else's callbacks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "macro.h"
#include "slurm-internal.h"
#include "timeutil.h"

/* Cleanup waits this long for Slurm to let the job go after scancel (the tasks get
 * KillWait, 30 s by default, between SIGTERM and SIGKILL), reading its state this often. */
#define CANCEL_WAIT_USEC (30 * INT64_C(1000000))
#define CANCEL_POLL_USEC (100 * INT64_C(1000))
/* How long the launchers, told QUIT, may take to clean up and exit (and srun with them)
 * before the job is scancelled: a container's removal takes a second or two on a busy
 * machine; a launcher that takes longer is stuck, and Slurm's signals end it. */
#define QUIT_WAIT_USEC (15 * INT64_C(1000000))

struct slurm_cancel {
    struct slurm_rt *s;
    struct ty_loop *loop; /* the runtime's, or destroy's private one */
    struct ty_subproc *cmd;
    uint64_t timer;
    int64_t deadline;
    bool awaiting_srun; /* the launchers were told QUIT: srun's own end is awaited */
    bool scancelled;    /* scancel has ended (or was not needed): what is left is the wait */
    bool scancel_again; /* ... but failed (the controller unreachable): it is sent again */
    bool scancel_sent;  /* a scancel has succeeded */
    bool on_rt_loop;    /* on the runtime's loop: `cleaned` follows the end */
    bool done;
};

static void on_cancel_state(struct ty_loop *loop, struct ty_subproc_result *res, void *data);
static void on_scancel(struct ty_loop *loop, struct ty_subproc_result *res, void *data);

/* The wait is over. On the runtime's loop, the runtime is clean: say so (last). */
static void cancel_end(struct slurm_cancel *w)
{
    struct slurm_rt *s = w->s;

    w->done = true;
    /* The job has ended (or is given up on): srun has nothing left to hold. */
    ty_subproc_cancel(s->srun_cmd);
    s->srun_cmd = NULL;
    if (!w->on_rt_loop)
        return;
    s->cancel = NULL;
    s->cleaned = true;
    free(w);
    ty_runtime_cleaned(&s->base);
}

/* Start @argv on the wait's loop. Returns false (with a notice) when it cannot start. */
static bool cancel_cmd(struct slurm_cancel *w, char *const argv[], ty_subproc_fn fn)
{
    struct ty_subproc_options opt = {.argv = argv, .timeout_usec = TY_SLURM_CMD_TIMEOUT_USEC};
    struct ty_error e = {0};

    if (ty_subproc_start(w->loop, &opt, fn, w, &w->cmd, &e) < 0) {
        w->cmd = NULL;
        ty_runtime_notice(&w->s->base, TY_SEV_WARNING, "%s", ty_error_msg(&e));
        return false;
    }
    return true;
}

/* scancel the job: by id, or by name when its id is not known. */
static bool cancel_scancel(struct slurm_cancel *w)
{
    struct slurm_rt *s = w->s;
    char *by_id[] = {"scancel", s->job_id, NULL};
    char *by_name[] = {"scancel", "--name", s->job_name, NULL};

    return cancel_cmd(w, *s->job_id ? by_id : by_name, on_scancel);
}

/* squeue for the job's state: by id, or by name when its id is not known. */
static bool cancel_read_state(struct slurm_cancel *w)
{
    struct slurm_rt *s = w->s;
    char *by_id[] = {"squeue", "-h", "-j", s->job_id, "-o", "%T", NULL};
    char *by_name[] = {"squeue", "-h", "-n", s->job_name, "-o", "%T", NULL};

    return cancel_cmd(w, *s->job_id ? by_id : by_name, on_cancel_state);
}

static bool cancel_scancel(struct slurm_cancel *w);

static void cancel_tick(struct ty_loop *loop, void *data)
{
    struct slurm_cancel *w = data;
    w->timer = 0;
    if (!(w->scancel_again ? cancel_scancel(w) : cancel_read_state(w)))
        cancel_end(w);
}

/* Wait CANCEL_POLL_USEC and look again, or, past the deadline, give up saying so: the job's
 * @state, or @why it could not be read or cancelled. */
static void cancel_wait(struct slurm_cancel *w, const char *state, const char *why)
{
    const char *job = *w->s->job_id ? w->s->job_id : w->s->job_name;

    if (ty_mono_usec() >= w->deadline) {
        if (state && strcmp(state, "COMPLETING") == 0) /* cancelled: Slurm is ending it */
            ty_runtime_notice(&w->s->base,
                              TY_SEV_WARNING,
                              "Slurm job %s is still COMPLETING after scancel: Slurm frees its "
                              "nodes once they report its processes gone; trainyard stops "
                              "waiting for it.",
                              job);
        else if (state)
            ty_runtime_notice(&w->s->base,
                              TY_SEV_WARNING,
                              "Slurm job %s is still %s after scancel; cancel it with scancel.",
                              job,
                              state);
        else
            ty_runtime_notice(&w->s->base,
                              TY_SEV_WARNING,
                              "Slurm job %s may still hold its nodes (%s); cancel it with "
                              "scancel once the controller answers.",
                              job,
                              why);
        cancel_end(w);
        return;
    }
    w->timer = ty_loop_add_timer(w->loop, ty_mono_usec() + CANCEL_POLL_USEC, cancel_tick, w);
}

/* Did the command fail saying @words? */
static bool failed_saying(const struct ty_subproc_result *res, const char *words)
{
    return !res->timed_out && res->status != 0 && res->err && strstr(res->err, words);
}

/* Did the command fail because Slurm does not know the job (gone: nothing to wait for)? */
static bool unknown_job(const struct ty_subproc_result *res)
{
    return failed_saying(res, "Invalid job id specified");
}

static void on_cancel_state(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct slurm_cancel *w = data;
    const char *st = res->out ? res->out : "";
    struct ty_error e = {0};

    (void)loop;
    w->cmd = NULL;
    if (res->out)
        res->out[strcspn(res->out, "\n")] = '\0';
    /* Gone from the queue, or in a final state. A squeue that failed otherwise (the
     * controller down or busy) says nothing: the job may hold its nodes yet. */
    if (unknown_job(res) ||
        (!res->timed_out && res->status == 0 && (!*st || slurm_state_final(st)))) {
        cancel_end(w);
        return;
    }
    /* Not gone, or not known to be: srun ended without a word from the controller (which
     * then never released the job), so the job must be cancelled after all. */
    if (!w->scancel_sent && strcmp(st, "COMPLETING") != 0)
        w->scancel_again = true;
    if (slurm_cmd_check(res, "squeue", &e) < 0)
        cancel_wait(w, NULL, ty_error_msg(&e));
    else
        cancel_wait(w, st, NULL);
}

static void on_scancel(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct slurm_cancel *w = data;
    struct ty_error e = {0};

    (void)loop;
    w->cmd = NULL;
    w->scancelled = true;
    if (unknown_job(res)) { /* already gone */
        cancel_end(w);
        return;
    }
    /* a job ending already is as good as cancelled */
    if (!failed_saying(res, "already completing or completed") &&
        slurm_cmd_check(res, "scancel", &e) < 0) {
        /* the controller unreachable, or restarting: said once, and sent again until the
         * deadline (a job left holding its nodes is worse than a slow cleanup) */
        if (!w->scancel_again)
            ty_runtime_notice(&w->s->base,
                              TY_SEV_WARNING,
                              "%s; trying again until the job is gone",
                              ty_error_msg(&e));
        w->scancel_again = true;
        cancel_wait(w, NULL, ty_error_msg(&e));
        return;
    }
    w->scancel_again = false;
    w->scancel_sent = true;
    if (!cancel_read_state(w))
        cancel_end(w);
}

/* The launchers did not all exit in time: scancel the job. */
static void on_quit_timeout(struct ty_loop *loop, void *data)
{
    struct slurm_cancel *w = data;

    (void)loop;
    w->timer = 0;
    w->awaiting_srun = false;
    if (!cancel_scancel(w))
        cancel_end(w);
}

void slurm_cancel_srun_ended(struct slurm_rt *s)
{
    struct slurm_cancel *w = s->cancel;

    if (!w || !w->awaiting_srun)
        return;
    ty_loop_cancel_timer(w->loop, w->timer);
    w->timer = 0;
    w->awaiting_srun = false;
    w->scancelled = true; /* the job ends with srun: nothing to cancel */
    if (!cancel_read_state(w))
        cancel_end(w);
}

/* Is there a job to cancel? Without an id, srun may have made it all the same: it exists
 * under its name then. */
static bool job_may_exist(const struct slurm_rt *s)
{
    return *s->job_id || s->submitting;
}

/* Without an id, srun is stopped before the job is looked for by name: after that no job
 * appears under it (one srun has asked for already is found, and one whose srun is gone
 * Slurm would end by itself). */
static void stop_unknown_srun(struct slurm_rt *s)
{
    if (*s->job_id)
        return;
    ty_subproc_cancel(s->srun_cmd);
    s->srun_cmd = NULL;
}

int slurm_cancel_job(struct slurm_rt *s)
{
    struct slurm_cancel *w;

    if (s->cleaned)
        return 0;
    if (s->cancel)
        return TY_RUNTIME_ASYNC;
    if (!job_may_exist(s)) {
        s->cleaned = true;
        return 0;
    }
    stop_unknown_srun(s);
    w = xcalloc(1, sizeof(*w));
    *w = (struct slurm_cancel){
        .s = s, .loop = s->base.loop, .deadline = ty_mono_usec() + CANCEL_WAIT_USEC};
    if (s->srun_cmd && *s->job_id && s->n_placed == s->n && !s->ending) {
        /* every launcher ran and was told QUIT: they clean up and exit, and srun with them
         * (one that has not connected yet would never hear it: then scancel at once) */
        w->awaiting_srun = true;
        w->timer = ty_loop_add_timer(w->loop, ty_mono_usec() + QUIT_WAIT_USEC, on_quit_timeout, w);
        w->deadline += QUIT_WAIT_USEC;
        w->on_rt_loop = true;
        s->cancel = w;
        return TY_RUNTIME_ASYNC;
    }
    if (!cancel_scancel(w)) {
        free(w);
        s->cleaned = true;
        return 0;
    }
    w->on_rt_loop = true;
    s->cancel = w;
    return TY_RUNTIME_ASYNC;
}

void slurm_cancel_now(struct slurm_rt *s)
{
    struct slurm_cancel *w = s->cancel;
    bool started;

    if (s->cleaned)
        return;
    s->cleaned = true;
    if (w) {
        /* Take the wait over from the runtime's loop: no `cleaned` from there. */
        ty_subproc_cancel(w->cmd);
        ty_loop_cancel_timer(w->loop, w->timer);
        w->cmd = NULL;
        w->timer = 0;
        w->on_rt_loop = false;
        s->cancel = NULL;
    } else if (job_may_exist(s)) {
        stop_unknown_srun(s);
        w = xcalloc(1, sizeof(*w));
        *w = (struct slurm_cancel){.s = s, .deadline = ty_mono_usec() + CANCEL_WAIT_USEC};
    } else {
        return;
    }
    /* The loop is ours: running it here runs nobody else's callbacks. */
    w->loop = ty_loop_new();
    started = w->scancelled ? cancel_read_state(w) : cancel_scancel(w);
    while (started && !w->done)
        if (ty_loop_run_once(w->loop) < 0)
            break;
    ty_subproc_cancel(w->cmd);
    ty_loop_cancel_timer(w->loop, w->timer);
    ty_loop_free(w->loop);
    free(w);
}
