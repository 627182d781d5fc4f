/* SPDX-License-Identifier: Apache-2.0
 * slurm.c: the `slurm` runtime (docs/internals/slurm.md): one Slurm job per run, holding every
 * replica as one task of `trainyard-task`, which connects back here (slurm-conn.c). This file
 * is the Slurm side: sbatch with the replicas' resources, the job's state from squeue (QUEUED
 * with Slurm's reason, a job that ends under us), scancel, and the runtime's ops.
 *
 * Configuration (environment; the service passes its settings the same way):
 *   TRAINYARD_SLURM_PARTITION, TRAINYARD_SLURM_ACCOUNT, TRAINYARD_SLURM_QOS  sbatch's -p/-A/-q
 *   TRAINYARD_SLURM_SBATCH_ARGS  more sbatch options, split at spaces
 *   TRAINYARD_SLURM_RENDEZVOUS   the host whose route decides the address the launchers
 *                                connect to (default: SlurmctldHost of `scontrol show config`)
 *   TRAINYARD_SLURM_MEMORY       "machine" (default): ask for the machine type's memory;
 *                                "none": leave memory to the cluster's defaults
 *   TRAINYARD_TASK               the launcher's path on the nodes (default: next to this
 *                                program, else trainyard-task in PATH)
 *   SLURM_CONF                   the Slurm client configuration, as for Slurm's own tools */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "alloc.h"
#include "machine.h"
#include "macro.h"
#include "slurm-internal.h"
#include "slurm.h"
#include "strv.h"
#include "subproc.h"
#include "timeutil.h"

#define CMD_TIMEOUT_USEC (30 * INT64_C(1000000))

static int create(struct ty_runtime **ret, struct ty_error *err)
{
    struct slurm_rt *s = xcalloc(1, sizeof(*s));
    s->listen_fd = -1;
    *ret = &s->base;
    return 0;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Run a Slurm command; on success *out holds its stdout (caller frees). */
static int slurm_cmd(char *const argv[], char *const env[], char **out, struct ty_error *err)
{
    struct ty_subproc_result res;
    int r = ty_subproc_run(argv, env, CMD_TIMEOUT_USEC, &res, err);
    if (r < 0)
        return r;
    if (res.status != 0) {
        r = ty_error_set(err,
                         EIO,
                         "%s failed (status %d): %s",
                         argv[0],
                         res.status,
                         res.err && *res.err ? res.err : "no message");
        ty_subproc_result_release(&res);
        return r;
    }
    if (out)
        *out = TAKE_PTR(res.out);
    ty_subproc_result_release(&res);
    return 0;
}

/* SlurmctldHost's address (or name): "SlurmctldHost[0] = h1(198.18.100.1)". */
static int controller_host(char **ret, struct ty_error *err)
{
    char *argv[] = {"scontrol", "show", "config", NULL};
    _cleanup_free_ char *out = NULL;
    const char *p, *eq, *end, *paren;
    int r = slurm_cmd(argv, NULL, &out, err);

    if (r < 0)
        return r;
    p = strstr(out, "SlurmctldHost[0]");
    eq = p ? strchr(p, '=') : NULL;
    if (!eq)
        return ty_error_set(err, EINVAL, "no SlurmctldHost in `scontrol show config`");
    eq++;
    while (*eq == ' ')
        eq++;
    end = eq + strcspn(eq, "\n");
    paren = memchr(eq, '(', (size_t)(end - eq));
    if (paren && memchr(paren, ')', (size_t)(end - paren)))
        *ret = xstrndup(paren + 1, strcspn(paren + 1, ")"));
    else
        *ret = xstrndup(eq, (size_t)(end - eq));
    return 0;
}

/* The launcher: $TRAINYARD_TASK, else next to this program (the build puts every program
 * in build/bin, an install in one bin directory), else trainyard-task from PATH. */
static char *task_path(void)
{
    char self[4096];
    ssize_t n;
    const char *env = getenv("TRAINYARD_TASK");

    if (env && *env)
        return xstrdup(env);
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        char *slash;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            _cleanup_free_ char *here = xasprintf("%s/trainyard-task", self);
            if (access(here, X_OK) == 0)
                return TAKE_PTR(here);
        }
    }
    return xstrdup("trainyard-task");
}

/* Quote @s for sh (single quotes). */
static char *sh_quote(const char *s)
{
    struct ty_buf b = TY_BUF_INIT;
    ty_buf_putc(&b, '\'');
    for (; *s; s++)
        if (*s == '\'')
            ty_buf_puts(&b, "'\\''");
        else
            ty_buf_putc(&b, *s);
    ty_buf_putc(&b, '\'');
    return ty_buf_take(&b);
}

/* Per-task requests: the largest of the replicas' (one component: Slurm 22.05's
 * heterogeneous jobs cannot share a node). */
static void add_resources(struct slurm_rt *s, char ***argv)
{
    int cpus = 1;
    int64_t mem_mb = 0, gpus = 0;
    bool mem = strcmp(env_or("TRAINYARD_SLURM_MEMORY", "machine"), "none") != 0;

    for (size_t i = 0; i < s->n; i++) {
        const struct ty_replica *r = s->reps[i].r;
        const struct ty_machine_type *mt =
            r->machine_type ? ty_machine_lookup(r->machine_type) : NULL;
        int64_t g = r->accel && r->accel->count ? r->accel->count : mt ? mt->gpus : 0;
        if (mt && mt->vcpus > cpus)
            cpus = mt->vcpus;
        if (mt && mt->memory_mb > mem_mb)
            mem_mb = mt->memory_mb;
        if (g > gpus)
            gpus = g;
    }
    ty_strv_push_take(argv, xasprintf("--cpus-per-task=%d", cpus));
    if (mem && mem_mb > 0)
        ty_strv_push_take(argv,
                          xasprintf("--mem-per-cpu=%" PRId64 "M", (mem_mb + cpus - 1) / cpus));
    if (gpus > 0)
        ty_strv_push_take(argv, xasprintf("--gpus-per-task=%" PRId64, gpus));
}

/* scheduling.maxRunningTime -> --time; scheduling.priority (0..1000, higher first) ->
 * --nice=1000-priority when set (a user may only lower a job's priority in Slurm). */
static void add_scheduling(const struct ty_job *job, char ***argv)
{
    json_t *sched = json_object_get(job->training_input, "scheduling");
    json_t *prio = json_object_get(sched, "priority");

    if (job->max_running_usec > 0) {
        int64_t secs = (job->max_running_usec + 999999) / 1000000;
        ty_strv_push_take(argv,
                          xasprintf("--time=%" PRId64 "-%02d:%02d:%02d",
                                    secs / 86400,
                                    (int)(secs % 86400 / 3600),
                                    (int)(secs % 3600 / 60),
                                    (int)(secs % 60)));
    }
    if (json_is_integer(prio))
        ty_strv_push_take(argv, xasprintf("--nice=%d", 1000 - (int)json_integer_value(prio)));
}

static int submit(struct slurm_rt *s, struct ty_error *err)
{
    const struct ty_cluster_plan *plan = s->base.plan;
    _cleanup_strv_free_ char **argv = xcalloc(1, sizeof(char *));
    _cleanup_strv_free_ char **env = xcalloc(1, sizeof(char *));
    _cleanup_free_ char *task = task_path();
    _cleanup_free_ char *qtask = sh_quote(task);
    _cleanup_free_ char *out = NULL;
    /* Under the service, the job name ends with the supervisor's sweep key, so the service
     * can cancel what a supervisor that died left in Slurm's queue (ty_slurm_sweep). */
    const char *key = env_or(TY_SWEEP_ENV, NULL);
    const char *v;
    int r;

    ty_strv_push(&argv, "sbatch");
    ty_strv_push(&argv, "--parsable");
    ty_strv_push_take(&argv,
                      xasprintf("--job-name=trainyard-%s%s%s%s%.8s",
                                plan->job->job_id,
                                plan->trial_id ? "-" : "",
                                plan->trial_id ? plan->trial_id : "",
                                key ? "-" : "",
                                key ? key : ""));
    ty_strv_push_take(&argv, xasprintf("--ntasks=%zu", s->n));
    add_resources(s, &argv);
    add_scheduling(plan->job, &argv);
    if ((v = env_or("TRAINYARD_SLURM_PARTITION", NULL)))
        ty_strv_push_take(&argv, xasprintf("--partition=%s", v));
    if ((v = env_or("TRAINYARD_SLURM_ACCOUNT", NULL)))
        ty_strv_push_take(&argv, xasprintf("--account=%s", v));
    if ((v = env_or("TRAINYARD_SLURM_QOS", NULL)))
        ty_strv_push_take(&argv, xasprintf("--qos=%s", v));
    if ((v = env_or("TRAINYARD_SLURM_SBATCH_ARGS", NULL))) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
            ty_strv_push(&argv, t);
    }
    ty_strv_push(&argv, "--output=/dev/null");
    /* A job whose node fails must fail (the supervisor decides what happens next), not be
     * requeued by Slurm behind our back. */
    ty_strv_push(&argv, "--no-requeue");
    ty_strv_push(&argv, "--export=ALL");
    ty_strv_push_take(&argv,
                      xasprintf("--wrap=exec srun --kill-on-bad-exit=0 --mpi=none %s --connect %s",
                                qtask,
                                s->listen_addr));
    /* The token reaches the tasks through the job's environment, never a command line. */
    ty_strv_push_take(&env, xasprintf("TRAINYARD_TASK_TOKEN=%s", s->token));
    r = slurm_cmd(argv, env, &out, err);
    if (r < 0)
        return r;
    (void)snprintf(s->job_id, sizeof(s->job_id), "%.*s", (int)strcspn(out, ";\n"), out);
    if (!*s->job_id)
        return ty_error_set(err, EIO, "sbatch printed no job id");
    ty_runtime_notice(&s->base, TY_SEV_INFO, "Submitted as Slurm job %s.", s->job_id);
    return 0;
}

static void poll_job(struct ty_loop *loop, void *data);

static void schedule_poll(struct slurm_rt *s)
{
    s->poll_timer =
        ty_loop_add_timer(s->base.loop, ty_mono_usec() + TY_SLURM_POLL_USEC, poll_job, s);
}

void slurm_prepared(struct slurm_rt *s, int r, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (s->prepared_sent || s->phase != PHASE_SUBMITTED)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    s->prepared_sent = true;
    if (r >= 0) {
        /* The nodes are known from the launchers: no need to wait for squeue to say so. */
        struct ty_buf nodes = TY_BUF_INIT;
        for (size_t i = 0; i < s->n; i++) {
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                seen = strcmp(s->reps[k].node, s->reps[i].node) == 0;
            if (!seen)
                ty_buf_printf(&nodes, "%s%s", nodes.len ? ", " : "", s->reps[i].node);
        }
        ty_runtime_notice(
            &s->base, TY_SEV_INFO, "Slurm job %s is running on %s.", s->job_id, ty_buf_str(&nodes));
        ty_buf_release(&nodes);
        if (!s->running_since)
            s->running_since = ty_mono_usec();
        s->phase = PHASE_PLACED;
    }
    s->base.ev.prepared(s->base.ev.ctx, r, msg);
}

void slurm_lost(struct slurm_rt *s, size_t i, const char *detail)
{
    struct slurm_rep *sr = &s->reps[i];
    struct ty_exit_status st = {.kind = TY_EXIT_LOST};

    if (sr->exited || !sr->launched)
        return;
    sr->exited = true;
    (void)snprintf(st.detail, sizeof(st.detail), "%s", detail);
    s->base.ev.exited(s->base.ev.ctx, sr->r, &st);
}

/* The job's state, reason and nodes from squeue; a job squeue no longer knows has ended. */
static int read_state(struct slurm_rt *s, struct ty_error *err)
{
    char *argv[] = {"squeue", "-h", "-j", s->job_id, "-o", "%T|%r|%N", NULL};
    struct ty_subproc_result res;
    char *bar1, *bar2;
    int r = ty_subproc_run(argv, NULL, CMD_TIMEOUT_USEC, &res, err);

    if (r < 0)
        return r;
    if (res.status != 0 || !res.out || !*res.out) {
        /* "slurm_load_jobs error: Invalid job id specified": purged, so ended */
        bool gone = !res.out || !*res.out;
        ty_subproc_result_release(&res);
        if (gone) {
            (void)snprintf(s->state, sizeof(s->state), "ENDED");
            return 0;
        }
        return ty_error_set(err, EIO, "squeue failed");
    }
    res.out[strcspn(res.out, "\n")] = '\0';
    bar1 = strchr(res.out, '|');
    bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
    if (bar2) {
        *bar1 = *bar2 = '\0';
        (void)snprintf(s->state, sizeof(s->state), "%s", res.out);
        (void)snprintf(s->reason, sizeof(s->reason), "%s", bar1 + 1);
        (void)snprintf(s->nodes, sizeof(s->nodes), "%s", bar2 + 1);
    }
    ty_subproc_result_release(&res);
    return 0;
}

/* Whether Slurm considers @node failed: DOWN, FAIL, or not responding ('*'). */
static bool node_failed(const char *node, char *state, size_t n)
{
    char *argv[] = {"sinfo", "-h", "-N", "-n", (char *)node, "-o", "%T", NULL};
    struct ty_subproc_result res;
    bool failed = false;

    if (ty_subproc_run(argv, NULL, CMD_TIMEOUT_USEC, &res, NULL) < 0)
        return false;
    if (res.status == 0 && res.out) {
        res.out[strcspn(res.out, "\n")] = '\0';
        failed = strchr(res.out, '*') || strncmp(res.out, "down", 4) == 0 ||
                 strncmp(res.out, "fail", 4) == 0;
        (void)snprintf(state, n, "%s", res.out);
    }
    ty_subproc_result_release(&res);
    return failed;
}

/* The Slurm job ended while replicas ran: each is lost, naming the failed node when Slurm
 * says one failed. */
static void job_ended(struct slurm_rt *s)
{
    char why[256], failed[64] = "", fstate[32] = "";
    bool reason = *s->reason && strcmp(s->reason, "None") != 0;

    /* Slurm kills a job on a failed node before (or without) showing NODE_FAIL: look at the
     * nodes themselves. */
    for (size_t i = 0; i < s->n && !*failed; i++)
        if (*s->reps[i].node && node_failed(s->reps[i].node, fstate, sizeof(fstate)))
            (void)snprintf(failed, sizeof(failed), "%s", s->reps[i].node);
    for (size_t i = 0; i < s->n; i++) {
        if (*failed && strcmp(s->reps[i].node, failed) == 0)
            (void)snprintf(
                why, sizeof(why), "its node %s failed (Slurm marks it %s)", failed, fstate);
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
        slurm_lost(s, i, why);
    }
}

/* Whether the Slurm job is over or ending. The launchers stay until the supervisor says
 * QUIT, so a job that completes (COMPLETING included) before that was ended from outside. */
static bool state_ended(const char *st)
{
    return *st && strcmp(st, "PENDING") != 0 && strcmp(st, "CONFIGURING") != 0 &&
           strcmp(st, "RUNNING") != 0 && strcmp(st, "SUSPENDED") != 0;
}

bool slurm_check_ended(struct slurm_rt *s)
{
    struct ty_error e = {0};
    /* Slurm kills the tasks as it ends the job: the state may lag the signal a little. */
    for (int i = 0; i < 20; i++) {
        if (read_state(s, &e) < 0)
            return false;
        if (state_ended(s->state))
            break;
        usleep(100000);
    }
    if (!state_ended(s->state))
        return false;
    job_ended(s);
    return true;
}

static void poll_job(struct ty_loop *loop, void *data)
{
    struct slurm_rt *s = data;
    struct ty_error e = {0};
    char old_state[32], old_reason[128];

    s->poll_timer = 0;
    if (s->phase == PHASE_ENDED)
        return;
    memcpy(old_state, s->state, sizeof(old_state));
    memcpy(old_reason, s->reason, sizeof(old_reason));
    if (read_state(s, &e) < 0) {
        /* Once, not every second while slurmctld is away. */
        if (!s->poll_failing)
            ty_runtime_notice(&s->base,
                              TY_SEV_WARNING,
                              "Cannot read the Slurm job's state (trying again every second): %s",
                              ty_error_msg(&e));
        s->poll_failing = true;
        schedule_poll(s);
        return;
    }
    if (s->poll_failing)
        ty_runtime_notice(&s->base, TY_SEV_INFO, "The Slurm job's state can be read again.");
    s->poll_failing = false;
    if (strcmp(s->state, "PENDING") == 0 || strcmp(s->state, "CONFIGURING") == 0) {
        if (s->base.ev.queued && (strcmp(old_state, s->state) || strcmp(old_reason, s->reason)))
            s->base.ev.queued(s->base.ev.ctx, s->reason);
    } else if (!state_ended(s->state)) {
        if (!s->running_since)
            s->running_since = ty_mono_usec();
        if (s->phase == PHASE_SUBMITTED &&
            ty_mono_usec() - s->running_since > TY_SLURM_CONNECT_USEC)
            slurm_prepared(s,
                           -ETIMEDOUT,
                           "Slurm job %s runs on %s, but only %zu of %zu launchers "
                           "(trainyard-task) connected back within %d s; check that "
                           "trainyard-task is installed on the nodes and that they can reach "
                           "%s",
                           s->job_id,
                           s->nodes,
                           s->n_placed,
                           s->n,
                           (int)(TY_SLURM_CONNECT_USEC / 1000000),
                           s->listen_addr);
    } else {
        /* Ended in Slurm while we still need it: cancelled outside trainyard, a node
         * failure, the time limit, launchers that could not connect... */
        if (s->phase == PHASE_SUBMITTED) {
            char how[200] = "";
            bool reason = *s->reason && strcmp(s->reason, "None") != 0;
            if (strcmp(s->state, "ENDED") != 0) /* still known to squeue: say how it ended */
                (void)snprintf(how,
                               sizeof(how),
                               " (%s%s%s)",
                               s->state,
                               reason ? ": " : "",
                               reason ? s->reason : "");
            slurm_prepared(s,
                           -EIO,
                           "the Slurm job %s ended%s before every replica was placed: %zu of "
                           "%zu launchers (trainyard-task) connected back to %s",
                           s->job_id,
                           how,
                           s->n_placed,
                           s->n,
                           s->listen_addr);
        } else
            job_ended(s);
        if (s->phase == PHASE_ENDED)
            return;
    }
    schedule_poll(s);
}

static bool is_loopback(const char *addr)
{
    return strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0;
}

/* The first compute node address (sinfo's NodeAddr) that is not loopback, or NULL. */
static char *node_address(void)
{
    char *argv[] = {"sinfo", "-h", "-N", "-o", "%o", NULL};
    _cleanup_free_ char *out = NULL;
    char *save = NULL;

    if (slurm_cmd(argv, NULL, &out, NULL) < 0)
        return NULL;
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (*l && !is_loopback(l))
            return xstrdup(l);
    return NULL;
}

/* The address the launchers connect back to: this host's address on the way to
 * $TRAINYARD_SLURM_RENDEZVOUS, else to the controller; when that is loopback (the
 * controller's name resolves to 127.0.1.1 on a Debian host that runs it) while the nodes are
 * elsewhere, the address on the way to a node. */
static int rendezvous_address(char *addr, size_t n, struct ty_error *err)
{
    const char *env = getenv("TRAINYARD_SLURM_RENDEZVOUS");
    _cleanup_free_ char *host = NULL;
    _cleanup_free_ char *node = NULL;
    int r;

    if (env && *env)
        return slurm_local_address(env, addr, n, err);
    r = controller_host(&host, err);
    if (r >= 0)
        r = slurm_local_address(host, addr, n, err);
    if (r < 0 || !is_loopback(addr))
        return r;
    node = node_address();
    return node ? slurm_local_address(node, addr, n, err) : 0;
}

static int prepare(struct ty_runtime *rt, struct ty_error *err)
{
    static char rendezvous[64];
    struct slurm_rt *s = slurm_cast(rt);
    unsigned char rnd[16];
    int r = 0;

    s->n = rt->plan->n_replicas;
    s->reps = xcalloc(s->n, sizeof(*s->reps));
    for (size_t i = 0; i < s->n; i++)
        s->reps[i].r = &rt->plan->replicas[i];
    r = ty_slurm_validate(rt->plan->job, err);
    if (r < 0 || rt->dry_run)
        return r;
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return ty_error_set(err, EIO, "no random bytes for the run's token");
    for (size_t i = 0; i < sizeof(rnd); i++)
        (void)snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
    /* Found once per process: a tuning job submits a Slurm job per trial, and asking
     * scontrol (and sinfo) each time would only find the same address again. */
    if (!*rendezvous && (r = rendezvous_address(rendezvous, sizeof(rendezvous), err)) < 0)
        rendezvous[0] = '\0'; /* try again next time */
    if (r >= 0)
        r = slurm_listen(s, rendezvous, err);
    if (r >= 0)
        r = submit(s, err);
    if (r < 0)
        return r;
    s->phase = PHASE_SUBMITTED;
    schedule_poll(s);
    return TY_RUNTIME_ASYNC;
}

static int place(struct ty_runtime *rt, struct ty_error *err)
{
    struct slurm_rt *s = slurm_cast(rt);
    if (rt->dry_run) { /* addresses are only known from the nodes */
        for (size_t i = 0; i < s->n; i++) {
            free(s->reps[i].r->host);
            s->reps[i].r->host = xstrdup("<node>");
            s->reps[i].r->port = 0;
        }
        return 0;
    }
    if (s->phase != PHASE_PLACED)
        return ty_error_set(err, EINVAL, "the replicas are not placed yet");
    return 0;
}

static int
launch(struct ty_runtime *rt, struct ty_replica *r, char *const env[], struct ty_error *err)
{
    return slurm_send_start(slurm_cast(rt), ty_runtime_replica_index(rt, r), env, err);
}

static int
signal_replica(struct ty_runtime *rt, struct ty_replica *r, int sig, struct ty_error *err)
{
    (void)err;
    return slurm_send_signal(slurm_cast(rt), ty_runtime_replica_index(rt, r), sig);
}

/* scancel the job and wait (bounded) until Slurm has let it go: nothing of it is left in
 * the queue or on a node. */
static void cancel_job(struct slurm_rt *s)
{
    char *argv[] = {"scancel", s->job_id, NULL};
    struct ty_error e = {0};
    int64_t deadline = ty_mono_usec() + 30 * INT64_C(1000000);

    if (!*s->job_id)
        return;
    if (slurm_cmd(argv, NULL, NULL, &e) < 0)
        ty_runtime_notice(&s->base, TY_SEV_WARNING, "scancel %s: %s", s->job_id, ty_error_msg(&e));
    while (ty_mono_usec() < deadline) {
        if (read_state(s, &e) < 0 || strcmp(s->state, "ENDED") == 0 ||
            (strcmp(s->state, "CANCELLED") == 0 || strcmp(s->state, "COMPLETED") == 0 ||
             strcmp(s->state, "FAILED") == 0 || strcmp(s->state, "TIMEOUT") == 0 ||
             strcmp(s->state, "NODE_FAIL") == 0 || strcmp(s->state, "OUT_OF_MEMORY") == 0))
            return;
        usleep(100000);
    }
    ty_runtime_notice(
        &s->base, TY_SEV_WARNING, "Slurm job %s is still %s after scancel.", s->job_id, s->state);
}

static void cleanup(struct ty_runtime *rt)
{
    struct slurm_rt *s = slurm_cast(rt);

    if (s->phase == PHASE_ENDED)
        return;
    s->phase = PHASE_ENDED;
    ty_loop_cancel_timer(rt->loop, s->poll_timer);
    s->poll_timer = 0;
    slurm_close_all(s);
    cancel_job(s);
}

static void destroy(struct ty_runtime *rt)
{
    struct slurm_rt *s = slurm_cast(rt);
    cleanup(rt);
    ty_strv_free(s->notices);
    free(s->reps);
    free(s);
}

int ty_slurm_sweep(const char *key, struct ty_error *err)
{
    char *argv[] = {"squeue", "-h", "-o", "%i %j", NULL};
    _cleanup_free_ char *out = NULL;
    _cleanup_free_ char *suffix = xasprintf("-%.8s", key);
    char *save = NULL;
    int n = 0, r;

    if (!key || strlen(key) < 8)
        return ty_error_set(err, EINVAL, "a sweep key of at least 8 characters is required");
    r = slurm_cmd(argv, NULL, &out, err);
    if (r < 0)
        return r;
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *name = strchr(l, ' ');
        size_t len;
        if (!name)
            continue;
        *name++ = '\0';
        len = strlen(name);
        if (strncmp(name, "trainyard-", 10) != 0 || len < strlen(suffix) ||
            strcmp(name + len - strlen(suffix), suffix) != 0)
            continue;
        {
            char *cancel[] = {"scancel", l, NULL};
            if (slurm_cmd(cancel, NULL, NULL, NULL) == 0)
                n++;
        }
    }
    return n;
}

const struct ty_runtime_ops ty_runtime_slurm = {
    .name = "slurm",
    .queues = true,
    .validate = ty_slurm_validate,
    .create = create,
    .prepare = prepare,
    .place = place,
    .launch = launch,
    .signal = signal_replica,
    .cleanup = cleanup,
    .destroy = destroy,
};
