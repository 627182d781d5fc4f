/* SPDX-License-Identifier: Apache-2.0
 * slurm.c: the `slurm` runtime (docs/internals/slurm.md): one Slurm job per run, holding every
 * replica as one task of `trainyard-task`, which connects back here (slurm-conn.c). This file
 * holds the runtime's ops and finds the address the launchers connect back to; the job itself
 * is srun's (slurm-srun.c), its state squeue's (slurm-state.c), its end scancel's
 * (slurm-cancel.c).
 *
 * Configuration (environment; the service passes its settings the same way):
 *   TRAINYARD_SLURM_PARTITION, TRAINYARD_SLURM_ACCOUNT, TRAINYARD_SLURM_QOS  srun's -p/-A/-q
 *   TRAINYARD_SLURM_SBATCH_ARGS  more options for the job (srun's, which for the allocation
 *                                are sbatch's), split at spaces
 *   TRAINYARD_SLURM_RENDEZVOUS   the host whose route decides the address the launchers
 *                                connect to (default: every address here; each launcher
 *                                connects to the one srun's launch came from)
 *   TRAINYARD_SLURM_MEMORY       "machine" (default): ask for the machine type's memory;
 *                                "none": leave memory to the cluster's defaults
 *   TRAINYARD_TASK               the launcher's path on the nodes (default: next to this
 *                                program, else trainyard-task in PATH)
 *   SLURM_CONF                   the Slurm client configuration, as for Slurm's own tools */
#include "slurm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "machine.h"
#include "macro.h"
#include "slurm-internal.h"
#include "slurm-refusal.h"
#include "strv.h"
#include "subproc.h"
#include "timeutil.h"

/* The rendezvous address, found once per process and shared by its runs (a tuning job's
 * trials each create a runtime). The one mutable file-scope object here, and on purpose:
 * nothing outlives a run that this runtime could hang it on (runtime.h creates a runtime per
 * run from a const ops table, and the programs that choose the ops own no runtime state);
 * giving it an owner means a per-process runtime context in runtime.h. Used on the loop's
 * thread only, like everything in a runtime. A run that loses a node, or whose launchers
 * could not be placed, empties it (forget_rendezvous): the retry that follows, a new runtime,
 * finds the address again instead of trusting one that may be why the run failed. Each run
 * copies it when it starts (s->rv_addr), so emptying it never changes a run under way. */
static struct slurm_rendezvous rendezvous_cache;

static int create(struct ty_runtime **ret, struct ty_error *err)
{
    struct slurm_rt *s = xcalloc(1, sizeof(*s));
    s->listen_fd = -1;
    s->rendezvous = &rendezvous_cache;
    *ret = &s->base;
    return 0;
}

/* Run a Slurm command to its end (ty_slurm_sweep only: it runs outside any loop); on
 * success *out holds its stdout (caller frees). */
static int slurm_cmd(char *const argv[], char *const env[], char **out, struct ty_error *err)
{
    struct ty_subproc_result res;
    int r = ty_subproc_run(argv, env, TY_SLURM_CMD_TIMEOUT_USEC, &res, err);
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

static void forget_rendezvous(struct slurm_rt *s)
{
    s->rendezvous->addr[0] = '\0';
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
    if (r < 0)
        forget_rendezvous(s);
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
        ty_runtime_notice(&s->base,
                          TY_SEV_INFO,
                          "Slurm job %s is running on %s.",
                          *s->job_id ? s->job_id : s->job_name,
                          ty_buf_str(&nodes));
        ty_buf_release(&nodes);
        if (!s->running_since)
            s->running_since = ty_mono_usec();
        s->phase = PHASE_PLACED;
    }
    s->base.ev.prepared(s->base.ev.ctx, r, msg);
}

void slurm_report_exit(struct slurm_rt *s, size_t i, const struct ty_exit_status *st)
{
    struct slurm_rep *sr = &s->reps[i];

    if (sr->exited || !sr->launched || s->phase == PHASE_ENDED)
        return;
    sr->exited = true;
    sr->exit_held = sr->lost_pending = false;
    if (st->kind == TY_EXIT_NODE_LOST)
        forget_rendezvous(s);
    s->base.ev.exited(s->base.ev.ctx, sr->r, st);
}

void slurm_lost(struct slurm_rt *s, size_t i, const char *detail)
{
    struct ty_exit_status st = {.kind = TY_EXIT_NODE_LOST};

    (void)snprintf(st.detail, sizeof(st.detail), "%s", detail);
    slurm_report_exit(s, i, &st);
}

/* The replicas launched without a launcher to run them (it went away, or the Slurm job
 * ended, while they were between runs) are lost: reported from the loop, after launch() has
 * returned, as for every other end. */
static void on_lost_timer(struct ty_loop *loop, void *data)
{
    struct slurm_rt *s = data;
    char why[256];

    (void)loop;
    s->lost_timer = 0;
    for (size_t i = 0; i < s->n && s->phase != PHASE_ENDED; i++) {
        struct slurm_rep *sr = &s->reps[i];
        if (!sr->lost_pending)
            continue;
        sr->lost_pending = false;
        if (s->ending)
            (void)snprintf(why, sizeof(why), "the Slurm job %s ended", s->job_id);
        else
            (void)snprintf(
                why, sizeof(why), "the connection to its launcher was lost (node %s)", sr->node);
        slurm_lost(s, i, why);
    }
}

static bool is_numeric(const char *host)
{
    unsigned char a[16]; /* an in6_addr */
    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* `getent ahosts NAME` answered: this host's address towards the first of NAME's addresses
 * into s->rv_addr, then s->resolved. */
static void on_getent(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct slurm_rt *s = data;
    struct ty_error e = {0};
    char addr[64] = "";
    int r = 0;

    s->prep_cmd = NULL;
    if (res->timed_out || res->status != 0 || !res->out || sscanf(res->out, "%63s", addr) != 1)
        r = ty_error_set(&e,
                         EHOSTUNREACH,
                         "cannot resolve '%s'%s",
                         s->resolving,
                         res->timed_out ? " (the lookup timed out)" : "");
    if (r >= 0)
        r = slurm_local_address(addr, s->rv_addr, sizeof(s->rv_addr), &e);
    s->resolved(s, r, &e);
}

/* This host's address towards @host into s->rv_addr, then @then: at once for a numeric
 * address; for a name, once `getent ahosts` has resolved it on the loop (getaddrinfo would
 * wait for DNS on the loop's thread). Returns 0 when @then is called (or has been), or -errno
 * when the lookup could not start. */
static int find_address(struct slurm_rt *s,
                        const char *host,
                        void (*then)(struct slurm_rt *s, int r, struct ty_error *e),
                        struct ty_error *err)
{
    char *argv[] = {"getent", "ahosts", (char *)host, NULL};

    if (is_numeric(host)) {
        struct ty_error e = {0};
        int r = slurm_local_address(host, s->rv_addr, sizeof(s->rv_addr), &e);
        then(s, r, &e);
        return 0;
    }
    ty_replace_str(&s->resolving, host);
    s->resolved = then;
    return slurm_cmd_start(s, argv, NULL, on_getent, &s->prep_cmd, err);
}

/* The rendezvous address is known (or an error ended prepare): go on with srun. */
static void rendezvous_found(struct slurm_rt *s, int r, struct ty_error *e)
{
    if (r >= 0) { /* for the next runs (a failed lookup is tried again next time) */
        memcpy(s->rendezvous->addr, s->rv_addr, sizeof(s->rv_addr));
        r = slurm_submit(s, e);
    }
    if (r < 0)
        slurm_prepared(s, r, "%s", ty_error_msg(e));
}

/* Where the launchers connect back to. By default every address of this host (the listener
 * takes the wildcard address), and each launcher connects to the address its node's slurmd saw
 * srun's launch request come from (SLURM_LAUNCH_NODE_IPADDR, `--connect :PORT`): the route
 * from that node to this host, known without asking Slurm anything first. With
 * $TRAINYARD_SLURM_RENDEZVOUS: this host's address on the way to that host, listened on
 * alone, found once per process for a name (s->rendezvous: a tuning job starts a Slurm job
 * per trial). Returns 0 when srun is under way (or a lookup that goes on to it), or -errno. */
static int start_submit(struct slurm_rt *s, struct ty_error *err)
{
    const char *env = getenv("TRAINYARD_SLURM_RENDEZVOUS");
    struct slurm_rendezvous *rv = s->rendezvous;
    int r;

    if (!env || !*env) {
        s->rv_addr[0] = '\0';
        return slurm_submit(s, err);
    }
    if (*rv->addr) {
        memcpy(s->rv_addr, rv->addr, sizeof(s->rv_addr));
        return slurm_submit(s, err);
    }
    if (!is_numeric(env))
        return find_address(s, env, rendezvous_found, err); /* goes on on the loop */
    r = slurm_local_address(env, s->rv_addr, sizeof(s->rv_addr), err);
    if (r >= 0) {
        memcpy(rv->addr, s->rv_addr, sizeof(s->rv_addr));
        r = slurm_submit(s, err);
    }
    return r;
}

static int prepare(struct ty_runtime *rt, struct ty_error *err)
{
    struct slurm_rt *s = slurm_cast(rt);
    unsigned char rnd[19]; /* 16 for the token, 3 for the job name's nonce */
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
    for (size_t i = 0; i < 16; i++)
        (void)snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
    (void)snprintf(s->nonce, sizeof(s->nonce), "%02x%02x%02x", rnd[16], rnd[17], rnd[18]);
    r = start_submit(s, err);
    if (r < 0)
        return r;
    s->phase = PHASE_SUBMITTED;
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

/* Start replica @r: START to its launcher, the first time and for every restart in place
 * (the launcher, still on the node, runs it again with the same port and @env). A launcher
 * that is gone, or a Slurm job that has ended, cannot run it: it is lost with its node
 * (TY_EXIT_NODE_LOST, from the loop), and the job is retried on a new allocation. */
static int
launch(struct ty_runtime *rt, struct ty_replica *r, char *const env[], struct ty_error *err)
{
    struct slurm_rt *s = slurm_cast(rt);
    size_t i = ty_runtime_replica_index(rt, r);
    struct slurm_rep *sr = &s->reps[i];

    if (s->phase != PHASE_PLACED)
        return ty_error_set(err, EINVAL, "the replicas are not placed");
    if (sr->launched && !sr->exited)
        return ty_error_set(err, EBUSY, "the replica %s is running", r->display_name);
    sr->exited = sr->started = sr->signalled = sr->exit_held = false;
    if (s->ending || slurm_send_start(s, i, env, NULL) < 0) {
        sr->launched = true;
        sr->lost_pending = true;
        if (!s->lost_timer)
            s->lost_timer = ty_loop_add_timer(rt->loop, ty_mono_usec(), on_lost_timer, s);
    }
    return 0;
}

static int
signal_replica(struct ty_runtime *rt, struct ty_replica *r, int sig, struct ty_error *err)
{
    (void)err;
    return slurm_send_signal(slurm_cast(rt), ty_runtime_replica_index(rt, r), sig);
}

/* The run is over for the launchers: stop reading the job's state, cut prepare() short,
 * QUIT every launcher and close the connections. Once. */
static void end_run(struct slurm_rt *s)
{
    if (s->phase == PHASE_ENDED)
        return;
    s->phase = PHASE_ENDED;
    slurm_state_stop(s);
    ty_loop_cancel_timer(s->base.loop, s->lost_timer);
    s->lost_timer = 0;
    /* srun stays: it holds the allocation, which slurm_cancel_job ends. */
    ty_subproc_cancel(s->prep_cmd);
    s->prep_cmd = NULL;
    slurm_close_all(s);
}

static int cleanup(struct ty_runtime *rt)
{
    struct slurm_rt *s = slurm_cast(rt);

    end_run(s);
    return slurm_cancel_job(s);
}

static void destroy(struct ty_runtime *rt)
{
    struct slurm_rt *s = slurm_cast(rt);
    end_run(s);
    slurm_cancel_now(s);
    ty_subproc_cancel(s->srun_cmd);
    ty_strv_free(s->notices);
    free(s->resolving);
    free(s->reps);
    free(s);
}

/* The ids of the Slurm jobs (any state squeue lists, completing ones included) that a
 * supervisor with sweep key @key left, in *@ids (NULL-terminated; caller frees). Returns
 * how many, or -errno (squeue failed) with err. */
static int jobs_of_key(const char *key, char ***ids, struct ty_error *err)
{
    char *argv[] = {"squeue", "-h", "-o", "%i %j", NULL};
    _cleanup_free_ char *out = NULL;
    _cleanup_free_ char *suffix = NULL;
    char *save = NULL;
    int n = 0, r;

    *ids = xcalloc(1, sizeof(char *));
    if (!key || strlen(key) < 8)
        return ty_error_set(err, EINVAL, "a sweep key of at least 8 characters is required");
    suffix = xasprintf("-%.8s", key);
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
        ty_strv_push(ids, l);
        n++;
    }
    return n;
}

int ty_slurm_sweep(const char *key, struct ty_error *err)
{
    _cleanup_strv_free_ char **ids = NULL;
    int n = 0, r = jobs_of_key(key, &ids, err);

    for (int i = 0; i < r; i++) {
        char *cancel[] = {"scancel", ids[i], NULL};
        if (slurm_cmd(cancel, NULL, NULL, NULL) == 0)
            n++;
    }
    return r < 0 ? r : n;
}

int ty_slurm_sweep_left(const char *key, struct ty_error *err)
{
    _cleanup_strv_free_ char **ids = NULL;
    return jobs_of_key(key, &ids, err);
}

int ty_slurm_sweep_steps_left(const char *key, struct ty_error *err)
{
    _cleanup_strv_free_ char **ids = NULL;
    _cleanup_free_ char *list = NULL, *out = NULL;
    char *save = NULL;
    int n = 0, r = jobs_of_key(key, &ids, err);

    if (r <= 0)
        return r;
    {
        struct ty_buf b = {0};
        for (size_t i = 0; ids[i]; i++)
            ty_buf_printf(&b, "%s%s", i ? "," : "", ids[i]);
        list = ty_buf_take(&b);
    }
    {
        char *argv[] = {"squeue", "-h", "-s", "-j", list, "-o", "%i", NULL};
        if ((r = slurm_cmd(argv, NULL, &out, err)) < 0)
            return r;
    }
    /* JOB.STEP: the srun steps (numbered); not JOB.extern or JOB.batch */
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        const char *dot = strchr(l, '.');
        if (dot && dot[1] >= '0' && dot[1] <= '9')
            n++;
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
