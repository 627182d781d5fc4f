/* SPDX-License-Identifier: Apache-2.0
 * slurm-state.c: the slurm runtime's view of its Slurm job (docs/internals/slurm.md): squeue
 * every second (QUEUED with Slurm's reason, launchers that never connect, a job that ends
 * under us), whether Slurm ended the job when a replica dies of a signal nobody here sent,
 * sinfo for the node that failed (scancel at cleanup is slurm-cancel.c's). Every command is an
 * asynchronous subprocess on the runtime's loop and every wait a loop timer: nothing here blocks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "macro.h"
#include "slurm-internal.h"
#include "strv.h"
#include "timeutil.h"

/* After an unexplained SIGTERM/SIGKILL, the job's state is read this often, at most
 * CHECK_TRIES times (2 s in all): Slurm signals the tasks first and shows the job's end a
 * moment later. */
#define CHECK_INTERVAL_USEC (100 * INT64_C(1000))
#define CHECK_TRIES         20

int slurm_cmd_start(struct slurm_rt *s,
                    char *const argv[],
                    char *const env[],
                    ty_subproc_fn fn,
                    struct ty_subproc **ret,
                    struct ty_error *err)
{
    struct ty_subproc_options opt = {
        .argv = argv, .extra_env = env, .timeout_usec = TY_SLURM_CMD_TIMEOUT_USEC};
    return ty_subproc_start(s->base.loop, &opt, fn, s, ret, err);
}

int slurm_cmd_check(const struct ty_subproc_result *res, const char *name, struct ty_error *err)
{
    if (res->timed_out)
        return ty_error_set(err,
                            ETIMEDOUT,
                            "%s did not finish within %d s",
                            name,
                            (int)(TY_SLURM_CMD_TIMEOUT_USEC / 1000000));
    if (res->status != 0)
        return ty_error_set(err,
                            EIO,
                            "%s failed (status %d): %s",
                            name,
                            res->status,
                            res->err && *res->err ? res->err : "no message");
    return 0;
}

/* squeue's "%i|%T|%r|%N" line for the job into s->state, s->reason, s->nodes (and its id
 * when not known yet); a job squeue no longer knows has ended ("ENDED"). Looked up by name
 * (its id not known yet), a job squeue does not show has not been made yet while srun runs:
 * then 1, nothing changed. Only squeue's own word says a job is gone: an answer that failed
 * otherwise (the controller unreachable, busy or restarting: "Unable to contact slurm
 * controller", "Socket timed out") is an error, never an ended job. Returns 0, 1, or -errno
 * with err. */
static int parse_state(struct slurm_rt *s, struct ty_subproc_result *res, struct ty_error *err)
{
    bool empty = !res->out || !*res->out;
    char *f[4];

    if (!res->timed_out && empty && res->status == 0 && !*s->job_id && !s->srun_ended)
        return 1;
    if (!res->timed_out && empty &&
        (res->status == 0 || (res->err && strstr(res->err, "Invalid job id specified")))) {
        (void)snprintf(s->state, sizeof(s->state), "ENDED"); /* purged: ended */
        return 0;
    }
    if (res->timed_out || res->status != 0 || empty)
        return slurm_cmd_check(res, "squeue", err) < 0 ? -EIO
                                                       : ty_error_set(err, EIO, "squeue failed");
    res->out[strcspn(res->out, "\n")] = '\0';
    f[0] = res->out;
    for (size_t k = 1; k < TY_ARRAY_SIZE(f); k++) {
        f[k] = f[k - 1] ? strchr(f[k - 1], '|') : NULL;
        if (f[k])
            *f[k]++ = '\0';
    }
    if (f[3]) {
        slurm_job_known(s, f[0]);
        (void)snprintf(s->state, sizeof(s->state), "%s", f[1]);
        (void)snprintf(s->reason, sizeof(s->reason), "%s", f[2]);
        (void)snprintf(s->nodes, sizeof(s->nodes), "%s", f[3]);
    }
    return 0;
}

/* squeue for the job: by id, or by name until the id is known. */
static int
start_squeue(struct slurm_rt *s, ty_subproc_fn fn, struct ty_subproc **ret, struct ty_error *err)
{
    char *by_id[] = {"squeue", "-h", "-j", s->job_id, "-o", "%i|%T|%r|%N", NULL};
    char *by_name[] = {"squeue", "-h", "-n", s->job_name, "-o", "%i|%T|%r|%N", NULL};
    return slurm_cmd_start(s, *s->job_id ? by_id : by_name, NULL, fn, ret, err);
}

bool slurm_state_final(const char *st)
{
    static const char *const final[] = {"CANCELLED",
                                        "COMPLETED",
                                        "FAILED",
                                        "TIMEOUT",
                                        "NODE_FAIL",
                                        "OUT_OF_MEMORY",
                                        "PREEMPTED",
                                        "BOOT_FAIL",
                                        "DEADLINE",
                                        "REVOKED",
                                        "SPECIAL_EXIT",
                                        "REQUEUE_HOLD"};
    for (size_t i = 0; i < TY_ARRAY_SIZE(final); i++)
        if (strcmp(st, final[i]) == 0)
            return true;
    return false;
}

/* Whether the Slurm job is over or ending: a final state, COMPLETING, or gone from squeue
 * ("ENDED"). The launchers stay until the supervisor says QUIT, so a job that completes
 * before that was ended from outside. */
static bool state_ended(const char *st)
{
    return slurm_state_final(st) || strcmp(st, "COMPLETING") == 0 || strcmp(st, "ENDED") == 0;
}

/* Report replica @i lost because the job ended; @failed: a node Slurm shows failed (@fstate
 * its state), or "". */
static void report_lost(struct slurm_rt *s, size_t i, const char *failed, const char *fstate)
{
    char why[256];
    bool reason = *s->reason && strcmp(s->reason, "None") != 0;

    if (*failed && strcmp(s->reps[i].node, failed) == 0)
        (void)snprintf(why, sizeof(why), "its node %s failed (Slurm marks it %s)", failed, fstate);
    else if (*failed)
        (void)snprintf(
            why, sizeof(why), "Slurm ended job %s when node %s failed", s->job_id, failed);
    else
        (void)snprintf(why,
                       sizeof(why),
                       "the Slurm job %s ended (%s%s%s)",
                       s->job_id,
                       s->state,
                       reason ? ": " : "",
                       reason ? s->reason : "");
    s->reps[i].exit_held = false;
    slurm_lost(s, i, why);
}

/* Report every replica lost because the job ended, those of the failed node @failed (when
 * there is one) first: the first loss reported is the one the job's retry names. */
static void report_ended(struct slurm_rt *s, const char *failed, const char *fstate)
{
    for (size_t i = 0; *failed && i < s->n && s->phase != PHASE_ENDED; i++)
        if (strcmp(s->reps[i].node, failed) == 0)
            report_lost(s, i, failed, fstate);
    for (size_t i = 0; i < s->n && s->phase != PHASE_ENDED; i++)
        if (!*failed || strcmp(s->reps[i].node, failed) != 0)
            report_lost(s, i, failed, fstate);
}

/* The state sinfo's "%N|%T" lines @out give @node, into @st ("" when not listed). */
static void node_state(const char *out, const char *node, char *st, size_t n)
{
    size_t nl = strlen(node);

    *st = '\0';
    for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (strncmp(l, node, nl) == 0 && l[nl] == '|') {
            (void)snprintf(st, n, "%.*s", (int)strcspn(l + nl + 1, "\n"), l + nl + 1);
            return;
        }
}

/* sinfo's answer for the job's nodes: the first replica's node that is DOWN, FAILed or not
 * responding ('*') is the one to name. */
static void on_nodes(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct slurm_rt *s = data;
    char fstate[32] = "";

    s->nodes_cmd = NULL;
    for (size_t i = 0; i < s->n && res->status == 0; i++) {
        node_state(res->out, s->reps[i].node, fstate, sizeof(fstate));
        if (strchr(fstate, '*') || strncmp(fstate, "down", 4) == 0 ||
            strncmp(fstate, "fail", 4) == 0) {
            report_ended(s, s->reps[i].node, fstate);
            return;
        }
    }
    report_ended(s, "", "");
}

/* Whether replica @i's node is also an earlier replica's. */
static bool node_seen(const struct slurm_rt *s, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (strcmp(s->reps[k].node, s->reps[i].node) == 0)
            return true;
    return false;
}

/* The Slurm job ended while replicas ran: each is lost, naming the failed node when Slurm
 * says one failed (it kills a job on a failed node before, or without, showing NODE_FAIL:
 * sinfo looks at the nodes themselves). */
static void job_ended(struct slurm_rt *s)
{
    struct ty_buf list = TY_BUF_INIT;
    int r = -ENOENT;

    if (s->ending)
        return;
    s->ending = true;
    for (size_t i = 0; i < s->n; i++)
        if (*s->reps[i].node && !node_seen(s, i))
            ty_buf_printf(&list, "%s%s", list.len ? "," : "", s->reps[i].node);
    if (list.len) {
        char *argv[] = {"sinfo", "-h", "-N", "-n", list.data, "-o", "%N|%T", NULL};
        r = slurm_cmd_start(s, argv, NULL, on_nodes, &s->nodes_cmd, NULL);
    }
    ty_buf_release(&list);
    if (r < 0)
        report_ended(s, "", "");
}

/* The held exits are reported as they came: Slurm did not end the job. */
static void release_held(struct slurm_rt *s)
{
    for (size_t i = 0; i < s->n && s->phase != PHASE_ENDED; i++) {
        struct slurm_rep *sr = &s->reps[i];
        if (!sr->exit_held)
            continue;
        sr->exit_held = false;
        if (!sr->exited)
            slurm_report_exit(s, i, &sr->held);
    }
}

static void check_again(struct ty_loop *loop, void *data);

static void on_check_state(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct slurm_rt *s = data;

    s->check_cmd = NULL;
    if (parse_state(s, res, NULL) != 0) {
        release_held(s);
        return;
    }
    if (state_ended(s->state)) {
        job_ended(s);
        return;
    }
    if (++s->check_tries >= CHECK_TRIES) {
        release_held(s);
        return;
    }
    s->check_timer = ty_loop_add_timer(loop, ty_mono_usec() + CHECK_INTERVAL_USEC, check_again, s);
}

static void check_again(struct ty_loop *loop, void *data)
{
    struct slurm_rt *s = data;

    s->check_timer = 0;
    if (start_squeue(s, on_check_state, &s->check_cmd, NULL) < 0)
        release_held(s);
}

void slurm_hold_exit(struct slurm_rt *s, size_t i, const struct ty_exit_status *st)
{
    struct slurm_rep *sr = &s->reps[i];

    sr->exit_held = true;
    sr->held = *st;
    if (s->ending) /* the replicas are being reported lost already */
        return;
    if (s->check_cmd || s->check_timer) /* a check is under way: it settles this one too */
        return;
    s->check_tries = 0;
    if (start_squeue(s, on_check_state, &s->check_cmd, NULL) < 0)
        release_held(s);
}

static void poll_job(struct ty_loop *loop, void *data);

static void schedule_poll(struct slurm_rt *s)
{
    int64_t delay = s->poll_soon ? 0 : TY_SLURM_POLL_USEC;

    s->poll_soon = false;
    s->poll_timer = ty_loop_add_timer(s->base.loop, ty_mono_usec() + delay, poll_job, s);
}

void slurm_start_polling(struct slurm_rt *s)
{
    schedule_poll(s);
}

void slurm_state_fresh(struct slurm_rt *s)
{
    if (!s->running_since)
        s->running_since = ty_mono_usec();
    /* Only a poll merely waiting for its time moves: one under way, or one asked for now
     * (srun ended), stays. */
    if (s->phase == PHASE_ENDED || !s->poll_timer || s->poll_cmd || s->poll_soon)
        return;
    ty_loop_cancel_timer(s->base.loop, s->poll_timer);
    schedule_poll(s);
}

void slurm_poll_now(struct slurm_rt *s)
{
    if (s->phase == PHASE_ENDED)
        return;
    s->poll_soon = true;
    if (s->poll_cmd) /* its answer may predate srun's end: poll again after it */
        return;
    ty_loop_cancel_timer(s->base.loop, s->poll_timer);
    schedule_poll(s);
}

/* Still PENDING (or CONFIGURING): say why when the reason changed. */
/* Pending reasons that say the job asks for more than its partition ever gives: Slurm, without
 * EnforcePartLimits (its default), queues such a job instead of refusing it, and it would wait
 * until cancelled. With what to change. */
static const struct {
    const char *reason, *what;
} never[] = {
    {"PartitionTimeLimit",
     "its time limit (scheduling.maxRunningTime, plus 5 minutes for preparing on the allocation) "
     "is over the partition's"},
    {"PartitionNodeLimit", "it needs more nodes than the partition allows (fewer replicas)"},
};

static void poll_pending(struct slurm_rt *s, const char *old_state, const char *old_reason)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(never) && s->phase == PHASE_SUBMITTED; i++)
        if (strcmp(s->reason, never[i].reason) == 0) {
            slurm_prepared(s,
                           -EINVAL,
                           "Slurm will never run job %s as asked (%s): %s",
                           *s->job_id ? s->job_id : s->job_name,
                           never[i].reason,
                           never[i].what);
            return;
        }
    if (s->base.ev.queued && (strcmp(old_state, s->state) || strcmp(old_reason, s->reason)))
        s->base.ev.queued(s->base.ev.ctx, s->reason);
}

/* The launchers' address for a message: HOST:PORT, or for ":PORT" (each launcher connects to
 * the host srun ran on) words that say so. */
static const char *shown_listen_addr(const struct slurm_rt *s, char *buf, size_t n)
{
    if (s->listen_addr[0] != ':')
        return s->listen_addr;
    (void)snprintf(buf,
                   n,
                   "port %s of this host (at the address each node saw srun's launch come from)",
                   s->listen_addr + 1);
    return buf;
}

/* Running: fail prepare() when the launchers do not all connect in time. */
static void poll_running(struct slurm_rt *s)
{
    char addr[160];

    if (!s->running_since)
        s->running_since = ty_mono_usec();
    if (s->phase == PHASE_SUBMITTED && ty_mono_usec() - s->running_since > TY_SLURM_CONNECT_USEC)
        slurm_prepared(s,
                       -ETIMEDOUT,
                       "Slurm job %s runs on %s, but only %zu of %zu launchers "
                       "(trainyard-task) connected back within %d s; check that "
                       "trainyard-task is installed on the nodes and that they can reach %s",
                       s->job_id,
                       s->nodes,
                       s->n_placed,
                       s->n,
                       (int)(TY_SLURM_CONNECT_USEC / 1000000),
                       shown_listen_addr(s, addr, sizeof(addr)));
}

/* Ended in Slurm while we still need it: cancelled outside trainyard, a node failure, the
 * time limit, launchers that could not connect... */
static void poll_ended(struct slurm_rt *s)
{
    char how[200] = "", addr[160];
    bool reason = *s->reason && strcmp(s->reason, "None") != 0;

    if (s->phase != PHASE_SUBMITTED) {
        job_ended(s);
        return;
    }
    if (strcmp(s->state, "ENDED") != 0) /* still known to squeue: say how it ended */
        (void)snprintf(
            how, sizeof(how), " (%s%s%s)", s->state, reason ? ": " : "", reason ? s->reason : "");
    /* The allocation is gone: a lost node for the supervisor (runtime.h, `prepared`). */
    slurm_prepared(s,
                   -EHOSTDOWN,
                   "the Slurm job %s ended%s before every replica was placed: %zu of %zu "
                   "launchers (trainyard-task) connected back to %s%s%s",
                   *s->job_id ? s->job_id : s->job_name,
                   how,
                   s->n_placed,
                   s->n,
                   shown_listen_addr(s, addr, sizeof(addr)),
                   *s->srun_err ? "; srun said: " : "",
                   s->srun_err);
}

/* The state could not be read: say so once (not every second while slurmctld is away) and
 * try again at the next poll. */
static void poll_failed(struct slurm_rt *s, const struct ty_error *e)
{
    if (!s->poll_failing)
        ty_runtime_notice(&s->base,
                          TY_SEV_WARNING,
                          "Cannot read the Slurm job's state (trying again every second): %s",
                          ty_error_msg(e));
    s->poll_failing = true;
    schedule_poll(s);
}

static void on_poll_state(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct slurm_rt *s = data;
    struct ty_error e = {0};
    char old_state[32], old_reason[128];
    int r;

    s->poll_cmd = NULL;
    memcpy(old_state, s->state, sizeof(old_state));
    memcpy(old_reason, s->reason, sizeof(old_reason));
    r = parse_state(s, res, &e);
    if (r < 0) {
        poll_failed(s, &e);
        return;
    }
    if (r > 0) { /* not made yet */
        schedule_poll(s);
        return;
    }
    if (s->poll_failing)
        ty_runtime_notice(&s->base, TY_SEV_INFO, "The Slurm job's state can be read again.");
    s->poll_failing = false;
    if (strcmp(s->state, "PENDING") == 0 || strcmp(s->state, "CONFIGURING") == 0)
        poll_pending(s, old_state, old_reason);
    else if (!state_ended(s->state))
        poll_running(s);
    else
        poll_ended(s);
    /* The events above may have ended the run (cleanup ran): then no more polls. */
    if (s->phase != PHASE_ENDED)
        schedule_poll(s);
}

static void poll_job(struct ty_loop *loop, void *data)
{
    struct slurm_rt *s = data;
    struct ty_error e = {0};

    s->poll_timer = 0;
    if (s->phase == PHASE_ENDED)
        return;
    if (start_squeue(s, on_poll_state, &s->poll_cmd, &e) < 0) {
        poll_failed(s, &e);
    }
}

void slurm_state_stop(struct slurm_rt *s)
{
    ty_loop_cancel_timer(s->base.loop, s->poll_timer);
    ty_loop_cancel_timer(s->base.loop, s->check_timer);
    s->poll_timer = s->check_timer = 0;
    ty_subproc_cancel(s->poll_cmd);
    ty_subproc_cancel(s->check_cmd);
    ty_subproc_cancel(s->nodes_cmd);
    s->poll_cmd = s->check_cmd = s->nodes_cmd = NULL;
    for (size_t i = 0; i < s->n; i++)
        s->reps[i].exit_held = false;
}
