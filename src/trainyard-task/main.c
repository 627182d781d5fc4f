/* SPDX-License-Identifier: Apache-2.0
 * trainyard-task: the per-task launcher of the slurm runtime (docs/internals/slurm.md). Slurm
 * starts one per replica; it connects back to the job's supervisor, learns which replica it
 * runs, holds a port for it on this node, waits for the whole cluster's environment, then
 * runs the replica under the process runtime (its command as a program) or the container
 * runtime (its image, through this node's container engine, on the host's network) and
 * reports its output and exit over the same connection (taskproto.h).
 *
 *   trainyard-task --connect [HOST]:PORT     (no HOST: the host srun ran on, see dial)
 *   environment: TRAINYARD_TASK_TOKEN (the run's secret), SLURM_PROCID, SLURMD_NODENAME,
 *                SLURM_JOB_ID, SLURM_LAUNCH_NODE_IPADDR
 *
 * The connection is the replica's lifeline: when it drops, the replica is stopped (SIGTERM,
 * then SIGKILL after the grace period) and the launcher exits. SIGTERM from Slurm (scancel,
 * the time limit, another node of the job failing) is passed on to the replica, whose end is
 * then reported as "node_lost": Slurm is ending the step; SIGUSR1 and SIGUSR2 (scancel
 * --signal) are notices for the program, never an end (a container replica gets them from the
 * launcher). A replica killed from outside while
 * the launcher was not signalled is reported as the signal (the supervisor restarts it in
 * place: a second START runs it again, here, with the same port and environment). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "container.h"
#include "fdutil.h"
#include "hypertune.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "plan.h"
#include "process.h"
#include "runtime.h"
#include "sigpipe.h"
#include "spec.h"
#include "strv.h"
#include "taskproto.h"
#include "timeutil.h"

/* Time between SIGTERM and SIGKILL when the replica is stopped by the launcher itself. */
#define GRACE_USEC (10 * INT64_C(1000000))
/* How often a trial's metric file is looked at (the supervisor's early stopping reads its
 * copy as often). */
#define METRIC_POLL_USEC (INT64_C(1000000))
/* An orphaned launcher cancels its Slurm job this long after losing the supervisor, leaving
 * the step's other launchers time to clean up first (cancel_own_job). */
#define ORPHAN_SETTLE_USEC (10 * INT64_C(1000000))
/* A replica killed by SIGTERM/SIGKILL that this launcher did not send: how long to wait for
 * the launcher's own SIGTERM before the end is reported. Slurm ending a step signals every
 * process of it at once, so the launcher's signal follows the replica's within microseconds;
 * none within this time means someone on the node killed the replica alone. */
#define SETTLE_USEC (100 * INT64_C(1000))

struct task {
    struct ty_loop *loop;
    int fd; /* the connection to the supervisor */
    struct ty_taskproto_reader rd;
    long procid;
    const char *node;
    struct ty_job *job;
    struct ty_cluster_plan *plan; /* the whole cluster, as the supervisor's */
    struct ty_cluster_plan sub;   /* a view of it holding only this task's replica */
    struct ty_replica *rep;
    struct ty_runtime *rt;
    char *metric_dir; /* a trial's local metric directory, or NULL */
    int gpu_dev[64];  /* the GPUs Slurm gave this task (container replicas) */
    struct ty_replica_gpus gpus;
    bool launched, exited, quit, lost;
    bool orphaned;       /* the supervisor went away without QUIT */
    int64_t orphaned_at; /* when (monotonic µs) */
    bool cleaned;        /* the runtime's asynchronous cleanup ended */
    bool step_ended;     /* this launcher got SIGTERM/SIGINT/SIGHUP: Slurm ends the step */
    bool signal_sent;    /* this run of the replica was signalled from here */
    bool exit_pending;   /* its end waits (SETTLE_USEC) to be judged: see on_exited */
    struct ty_exit_status pending;
    int64_t previous_port; /* ASSIGN.previous: the port to keep on this host, or 0 */
    char previous_host[64];
    uint64_t kill_timer;
    uint64_t settle_timer;
    uint64_t metric_timer;
    struct ty_file_stamp metric_stamp; /* the metric file as last sent */
    int status;                        /* the launcher's own exit status */
    char **base_env;    /* a program replica's environment before the contract's, or NULL */
    char *path_setting; /* what set its PATH (ASSIGN.pathSetting), or NULL */
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    fputs("trainyard-task: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Send one frame; a failure means the supervisor is gone. */
static void send_frame(struct task *t, int type, const void *p, size_t n)
{
    struct ty_buf b = TY_BUF_INIT;
    if (t->fd < 0)
        return;
    if (ty_taskproto_frame(&b, type, p, n) == 0 && ty_write_all(t->fd, b.data, b.len) < 0)
        t->lost = true;
    ty_buf_release(&b);
}

static void send_json(struct task *t, int type, json_t *obj /* stolen */)
{
    _cleanup_free_ char *text = ty_json_compact(obj);
    send_frame(t, type, text, strlen(text));
    json_decref(obj);
}

/* A trial's metric file: send it when it changed since last time (also right before EXIT,
 * so the supervisor has the final report before it decides). */
static void forward_metrics(struct task *t)
{
    _cleanup_free_ char *path = NULL;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    if (!t->metric_dir)
        return;
    path = xasprintf("%s/output.metrics", t->metric_dir);
    if (!ty_file_changed(path, &t->metric_stamp) ||
        ty_read_file_tail(path, TY_HYPERTUNE_MAX_BYTES, &text, &len, NULL, NULL) < 0)
        return;
    send_frame(t, TY_TASK_METRICS, text, len);
}

static void on_metric_timer(struct ty_loop *loop, void *data)
{
    struct task *t = data;
    forward_metrics(t);
    t->metric_timer =
        t->exited ? 0
                  : ty_loop_add_timer(loop, ty_mono_usec() + METRIC_POLL_USEC, on_metric_timer, t);
}

/* ---- the replica's events ---------------------------------------------------------------- */

static void on_started(void *ctx, struct ty_replica *r)
{
    struct task *t = ctx;
    (void)r;
    send_json(t, TY_TASK_STARTED, json_pack("{s:i}", "pid", (int)getpid()));
}

static void
on_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
    struct task *t = ctx;
    (void)r;
    send_frame(t, s == TY_STREAM_STDERR ? TY_TASK_ERR : TY_TASK_OUT, line, len);
}

/* Report the replica's end @st, judged by what this launcher knows (taskproto.h). */
static void send_exit(struct task *t, const struct ty_exit_status *st)
{
    struct ty_exit_status judged = *st;

    ty_taskproto_exit_judge(&judged, t->step_ended, t->node);
    send_json(t, TY_TASK_EXIT, ty_taskproto_exit_json(&judged));
    /* Told to quit, or the supervisor is gone: nothing more to wait for. */
    if (t->quit || t->fd < 0)
        ty_loop_stop(t->loop);
}

/* Send the end that waits to be judged, if any. */
static void flush_exit(struct task *t)
{
    if (!t->exit_pending)
        return;
    t->exit_pending = false;
    ty_loop_cancel_timer(t->loop, t->settle_timer);
    t->settle_timer = 0;
    send_exit(t, &t->pending);
}

static void on_settle(struct ty_loop *loop, void *data)
{
    struct task *t = data;
    (void)loop;
    t->settle_timer = 0;
    flush_exit(t);
}

static void on_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
    struct task *t = ctx;
    (void)r;
    t->exited = true;
    forward_metrics(t);
    /* A kill nobody here sent: Slurm's (its SIGTERM to this launcher is about to be read) or
     * someone's on the node. Wait a moment for the former before saying which. */
    if (ty_taskproto_exit_is_kill(st) && !t->signal_sent && !t->step_ended && !t->quit &&
        t->fd >= 0) {
        t->pending = *st;
        t->exit_pending = true;
        t->settle_timer = ty_loop_add_timer(t->loop, ty_mono_usec() + SETTLE_USEC, on_settle, t);
        return;
    }
    send_exit(t, st);
}

static void on_notice(void *ctx, enum ty_severity sev, const char *msg)
{
    struct task *t = ctx;
    send_json(t, TY_TASK_NOTICE, json_pack("{s:i, s:s}", "severity", (int)sev, "message", msg));
}

static void on_cleaned(void *ctx)
{
    struct task *t = ctx;
    t->cleaned = true;
}

/* Remove what the replica's runtime created, running the loop while that goes on (the
 * connection and signals are still served meanwhile), then free the runtime. */
static void clean_up(struct task *t)
{
    if (!t->rt)
        return;
    if (t->rt->ops->cleanup(t->rt) == TY_RUNTIME_ASYNC)
        while (!t->cleaned)
            if (ty_loop_run_once(t->loop) < 0)
                break; /* destroy finishes it */
    ty_runtime_free(t->rt);
    t->rt = NULL;
}

/* ---- the supervisor's messages --------------------------------------------------------- */

/* The address this node is reached at: the local end of the connection to the supervisor. */
static int local_address(int fd, char *host, size_t n)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -errno;
    return getnameinfo((struct sockaddr *)&ss, len, host, (socklen_t)n, NULL, 0, NI_NUMERICHOST)
               ? -EINVAL
               : 0;
}

/* The runtime is prepared: place the replica (a port of its own on this node) and tell the
 * supervisor where it is. */
static int place_replica(struct task *t, struct ty_error *err)
{
    char host[128];
    int r;

    if (local_address(t->fd, host, sizeof(host)) < 0)
        return ty_error_set(err, EIO, "cannot tell this node's address");
    /* A retry that lands on the host of the attempt before keeps the replica's port when it
     * is free: the node's runtime keeps a port it is given on the loopback "host" it uses
     * for its replicas (the node's own addresses are the node's business). */
    if (t->previous_port > 0 && strcmp(t->previous_host, host) == 0) {
        free(t->rep->host);
        t->rep->host = xstrdup("127.0.0.1");
        t->rep->port = (int)t->previous_port;
    }
    r = t->rt->ops->place(t->rt, err);
    if (r < 0)
        return r;
    send_json(t, TY_TASK_PLACED, json_pack("{s:s, s:i}", "host", host, "port", t->rep->port));
    return 0;
}

static void give_up(struct task *t, const struct ty_error *e);

/* The runtime's asynchronous prepare ended. */
static void on_prepared(void *ctx, int r, const char *error)
{
    struct task *t = ctx;
    struct ty_error e = {0};

    if (r < 0)
        (void)ty_error_set(&e, -r, "preparing the replica's runtime failed: %s", error);
    else
        r = place_replica(t, &e);
    if (r < 0)
        give_up(t, &e);
}

/* A container replica gets the GPUs Slurm gave this task (--gpus-per-task): their indexes
 * in SLURM_STEP_GPUS (or SLURM_JOB_GPUS), the device numbers of gres.conf's
 * File=/dev/nvidia[0-N]. A process replica needs nothing: Slurm sets its CUDA_VISIBLE_DEVICES. */
static void slurm_gpus(struct task *t)
{
    const char *v = getenv("SLURM_STEP_GPUS");
    size_t n = 0;

    if (!v || !*v)
        v = getenv("SLURM_JOB_GPUS");
    while (v && *v && n < TY_ARRAY_SIZE(t->gpu_dev)) {
        char num[16];
        size_t len = strcspn(v, ",");
        int64_t d;
        if (len < sizeof(num)) {
            memcpy(num, v, len);
            num[len] = '\0';
            if (ty_parse_int64(num, 0, 65535, &d) == 0)
                t->gpu_dev[n++] = (int)d;
        }
        v += len + (v[len] == ',');
    }
    t->gpus = (struct ty_replica_gpus){t->gpu_dev, n};
    if (n > 0)
        t->rt->gpus = &t->gpus;
}

/* A program replica's environment: with ASSIGN.baseEnv (the service's defined one), that plus
 * what Slurm set for this task (ty_taskproto_replica_env), its PATH named by
 * ASSIGN.pathSetting in the error of a command not found on it; without (`local train`), this
 * launcher's own environment, as the process runtime does by default. A container replica
 * starts from its image's environment either way. */
static int replica_base_env(struct task *t, const json_t *m, struct ty_error *err)
{
    _cleanup_strv_free_ char **base = NULL;
    json_t *jbase = json_object_get(m, "baseEnv");
    json_t *jset = json_object_get(m, "pathSetting");
    int r;

    if (!jbase)
        return 0;
    if (jset && !json_is_string(jset))
        return ty_error_set(err, EPROTO, "ASSIGN.pathSetting: a string is required");
    r = ty_taskproto_env_parse(jbase, "ASSIGN.baseEnv", &base, err);
    if (r < 0)
        return r;
    t->base_env = ty_taskproto_replica_env(base, environ);
    t->path_setting = jset ? xstrdup(json_string_value(jset)) : NULL;
    t->rt->base_env = t->base_env;
    t->rt->path_setting = t->path_setting;
    return 0;
}

static int on_assign(struct task *t, const json_t *m, struct ty_error *err)
{
    struct ty_runtime_events ev = {.started = on_started,
                                   .output = on_output,
                                   .exited = on_exited,
                                   .notice = on_notice,
                                   .prepared = on_prepared,
                                   .cleaned = on_cleaned,
                                   .ctx = t};
    const char *trial = ty_json_str(m, "trialId");
    const char *runtime = ty_json_str(m, "runtime") ? ty_json_str(m, "runtime") : "process";
    json_t *targs = json_object_get(m, "trialArgs"), *v;
    json_t *jidx = json_object_get(m, "replica");
    json_t *prev = json_object_get(m, "previous");
    _cleanup_strv_free_ char **args = xcalloc(1, sizeof(char *));
    size_t i;
    int r;

    if (t->job)
        return ty_error_set(err, EPROTO, "a second ASSIGN");
    json_array_foreach(targs, i, v)
    {
        if (!json_is_string(v))
            return ty_error_set(err, EPROTO, "ASSIGN.trialArgs: strings are required");
        ty_strv_push(&args, json_string_value(v));
    }
    r = ty_job_from_json(json_object_get(m, "job"), &t->job, err);
    if (r >= 0)
        r = ty_plan_build(t->job, trial, args, &t->plan, err);
    if (r < 0)
        return r;
    if (!json_is_integer(jidx) || json_integer_value(jidx) < 0 ||
        (size_t)json_integer_value(jidx) >= t->plan->n_replicas)
        return ty_error_set(err, EPROTO, "ASSIGN.replica: not a replica of the plan");
    if (strcmp(runtime, "process") != 0 && strcmp(runtime, "container") != 0)
        return ty_error_set(
            err, EPROTO, "ASSIGN.runtime: '%s' is not process or container", runtime);
    t->rep = &t->plan->replicas[json_integer_value(jidx)];
    if (json_is_object(prev) && ty_json_str(prev, "host") &&
        json_is_integer(json_object_get(prev, "port"))) {
        (void)snprintf(t->previous_host, sizeof(t->previous_host), "%s", ty_json_str(prev, "host"));
        t->previous_port = json_integer_value(json_object_get(prev, "port"));
        if (t->previous_port > 65535)
            t->previous_port = 0;
    }
    t->sub = *t->plan;
    t->sub.replicas = t->rep;
    t->sub.n_replicas = 1;
    /* One replica of many on this node: it uses the node's network and a port of its own. */
    t->sub.host_network = true;
    /* A local job directory must exist on this node too (the supervisor made its own); one
     * this task makes may be given to the user its image runs as (container-user.c). */
    if (ty_job_dir_is_local(t->plan->job_dir)) {
        struct stat st;
        bool existed = lstat(t->plan->job_dir, &st) == 0;
        if ((r = ty_mkdir_p(t->plan->job_dir, 0755, err)) < 0)
            return r;
        t->sub.job_dir_made = !existed;
    }
    if (trial) {
        char tmpl[] = "/tmp/trainyard-task.XXXXXX";
        if (!mkdtemp(tmpl))
            return ty_error_set(err, errno, "cannot make a metric directory: %s", strerror(errno));
        t->metric_dir = xstrdup(tmpl);
        t->sub.metric_dir = t->metric_dir;
    }
    r = ty_runtime_new(strcmp(runtime, "process") == 0 ? &ty_runtime_process
                                                       : &ty_runtime_container,
                       t->loop,
                       &ev,
                       &t->rt,
                       err);
    if (r < 0)
        return r;
    ty_runtime_attach(t->rt, &t->sub);
    if (strcmp(runtime, "container") == 0)
        slurm_gpus(t);
    else if ((r = replica_base_env(t, m, err)) < 0)
        return r;
    r = t->rt->ops->prepare(t->rt, err);
    if (r == TY_RUNTIME_ASYNC)
        return 0; /* the container runtime opens the engine, pulls...: on_prepared goes on */
    if (r < 0)
        return r;
    return place_replica(t, err);
}

static int on_start(struct task *t, const json_t *m, struct ty_error *err)
{
    _cleanup_strv_free_ char **env = NULL;
    int r;

    /* A second START comes after the replica's EXIT: run it again (a restart in place). */
    if (!t->rt || (t->launched && (!t->exited || t->exit_pending)))
        return ty_error_set(err, EPROTO, "START before ASSIGN, or while the replica runs");
    r = ty_taskproto_env_parse(json_object_get(m, "env"), "START.env", &env, err);
    if (r < 0)
        return r;
    t->launched = true;
    t->exited = false;
    t->signal_sent = false;
    if (t->metric_dir && !t->metric_timer)
        t->metric_timer =
            ty_loop_add_timer(t->loop, ty_mono_usec() + METRIC_POLL_USEC, on_metric_timer, t);
    /* The process (container) runtime removes what a previous run left first. */
    r = t->rt->ops->launch(t->rt, t->rep, env, err);
    if (r < 0)
        t->exited = true; /* nothing runs: give_up may leave at once */
    return r;
}

static void stop_replica(struct task *t, int sig)
{
    if (t->rt && t->launched && !t->exited) {
        t->signal_sent = true;
        (void)t->rt->ops->signal(t->rt, t->rep, sig, NULL);
    }
}

static void on_kill_timer(struct ty_loop *loop, void *data)
{
    struct task *t = data;
    t->kill_timer = 0;
    stop_replica(t, SIGKILL);
}

/* The supervisor is gone or said QUIT: end the replica (at once for QUIT, after the grace
 * period otherwise) and leave once it has exited. */
static void wind_down(struct task *t, bool now)
{
    if (!t->launched || t->exited) {
        flush_exit(t);
        ty_loop_stop(t->loop);
        return;
    }
    stop_replica(t, now ? SIGKILL : SIGTERM);
    if (!now && !t->kill_timer)
        t->kill_timer = ty_loop_add_timer(t->loop, ty_mono_usec() + GRACE_USEC, on_kill_timer, t);
}

static int on_frame(void *ctx, int type, const char *payload, size_t len)
{
    struct task *t = ctx;
    _cleanup_json_ json_t *m = NULL;
    struct ty_error e = {0};
    int r;

    r = ty_taskproto_json(payload, len, &m, &e);
    if (r >= 0) {
        switch (type) {
        case TY_TASK_ASSIGN:
            r = on_assign(t, m, &e);
            break;
        case TY_TASK_START:
            r = on_start(t, m, &e);
            break;
        case TY_TASK_SIGNAL: {
            json_t *s = json_object_get(m, "signal");
            if (!json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > 64)
                r = ty_error_set(&e, EPROTO, "SIGNAL.signal: a signal number is required");
            else
                stop_replica(t, (int)json_integer_value(s));
            break;
        }
        case TY_TASK_QUIT:
            t->quit = true;
            wind_down(t, true);
            break;
        default:
            r = ty_error_set(&e, EPROTO, "unexpected message '%c'", type);
        }
    }
    if (r < 0) {
        give_up(t, &e);
        return r;
    }
    return 0;
}

/* Tell the supervisor of @e (as the replica's failure) and give up. */
static void give_up(struct task *t, const struct ty_error *e)
{
    char msg[TY_ERROR_MSG_MAX + 32];
    (void)snprintf(msg, sizeof(msg), "trainyard-task on %s: %s", t->node, ty_error_msg(e));
    send_json(t,
              TY_TASK_EXIT,
              json_pack("{s:s, s:i, s:s}",
                        "kind",
                        ty_taskproto_exit_kind_name(TY_EXIT_START_FAILED),
                        "code",
                        0,
                        "detail",
                        msg));
    say("%s", msg);
    t->status = 1;
    wind_down(t, true);
}

static void on_conn(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct task *t = data;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf));
    struct ty_error e = {0};

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0 || ty_taskproto_feed(&t->rd, buf, (size_t)n, on_frame, t, &e) < 0 || t->lost) {
        if (n <= 0 && !t->quit) {
            say("lost the connection to the supervisor; stopping the replica");
            t->orphaned = true;
            t->orphaned_at = ty_mono_usec();
        }
        ty_loop_remove_fd(loop, fd);
        close(fd);
        t->fd = -1;
        if (!t->quit)
            t->status = t->status ? t->status : 1;
        wind_down(t, t->quit);
    }
}

static void on_signal(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct task *t = data;
    unsigned char c;
    while (read(fd, &c, 1) == 1) {
        if (c == SIGUSR1 || c == SIGUSR2) {
            /* `scancel --signal=USR1`, `sbatch --signal`: a notice for the program (a
             * checkpoint warning), not an end. Slurm signals the step's processes itself, a
             * program replica among them (a child of this launcher); a container's it cannot
             * reach, so it is passed on. */
            if (t->rt && t->rt->ops == &ty_runtime_container && t->launched && !t->exited)
                (void)t->rt->ops->signal(t->rt, t->rep, c, NULL);
            continue;
        }
        t->step_ended = true; /* the replica's end, now or pending, is Slurm's doing */
        if (t->launched && !t->exited)
            stop_replica(t, SIGTERM); /* Slurm's cancel: the exit is still reported */
        else
            wind_down(t, true);
    }
}

/* Connect to HOST:PORT, trying every address; ":PORT" is the host srun ran on, i.e. the
 * supervisor's, as this node's slurmd saw srun's launch request come from it
 * (SLURM_LAUNCH_NODE_IPADDR; SLURM_SRUN_COMM_HOST when that is unset). Returns the socket or
 * -errno. */
static int dial(const char *spec, struct ty_error *err)
{
    _cleanup_free_ char *host = NULL;
    const char *colon = strrchr(spec, ':');
    const char *launch = getenv("SLURM_LAUNCH_NODE_IPADDR");
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int fd = -1, r;

    if (!launch || !*launch)
        launch = getenv("SLURM_SRUN_COMM_HOST");
    if (!colon || !colon[1])
        return ty_error_set(err, EINVAL, "--connect: HOST:PORT expected, got '%s'", spec);
    if (colon == spec && (!launch || !*launch))
        return ty_error_set(
            err, EINVAL, "--connect %s: no host, and Slurm set no SLURM_LAUNCH_NODE_IPADDR", spec);
    host = colon == spec ? xstrdup(launch) : xstrndup(spec, (size_t)(colon - spec));
    r = getaddrinfo(host, colon + 1, &hints, &res);
    if (r != 0)
        return ty_error_set(err, EINVAL, "--connect: %s: %s", spec, gai_strerror(r));
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        r = -errno;
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return ty_error_set(
            err, -r, "cannot connect to the supervisor at %s: %s", spec, strerror(-r));
    return fd;
}

/* The supervisor went away without a word (killed, its machine lost): the Slurm job is of no
 * use to anyone now, and its srun may be gone too, whose allocation Slurm keeps until its
 * InactiveLimit (none by default). The launcher cancels its own job on its way out, as a user
 * would; the supervisor, when it is alive, cancels it too. Not at once: the other launchers of
 * the step, which lost the supervisor at the same moment, are cleaning up too (removing a
 * container takes a second or two), and scancel signals them and their container engines; so
 * the cancel waits until ORPHAN_SETTLE_USEC after the loss (@since, monotonic µs). Best
 * effort: scancel may be missing on the node, or the controller unreachable. */
static void cancel_own_job(int64_t since)
{
    const char *job = getenv("SLURM_JOB_ID");
    int64_t left = since + ORPHAN_SETTLE_USEC - ty_mono_usec();
    pid_t pid;

    if (!job || !*job)
        return;
    if (left > 0) {
        struct timespec ts = {.tv_sec = (time_t)(left / 1000000),
                              .tv_nsec = (long)(left % 1000000) * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    say("cancelling Slurm job %s, which has no supervisor any more", job);
    pid = fork();
    if (pid == 0) {
        execlp("scancel", "scancel", job, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        (void)waitpid(pid, NULL, 0);
}

/* What --help (or -h) prints, and a wrong command line gets on stderr. */
static const char usage[] =
    "usage: trainyard-task --connect [HOST]:PORT\n"
    "The per-task launcher of trainyard's slurm runtime, started by Slurm; not for direct "
    "use.\n";

int main(int argc, char **argv)
{
    struct task t = {.fd = -1};
    struct ty_error e = {0};
    _cleanup_free_ char *token_copy = NULL;
    const char *token = getenv("TRAINYARD_TASK_TOKEN");
    const char *procid = getenv("SLURM_PROCID");
    int64_t id;
    int sig_fd;
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
    struct sigaction ign = {.sa_handler = SIG_IGN};

    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "--connect") != 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (!token || !*token || !procid || ty_parse_int64(procid, 0, 1000000, &id) < 0) {
        say("TRAINYARD_TASK_TOKEN and SLURM_PROCID must be set (this runs as a Slurm task)");
        return 2;
    }
    t.procid = (long)id;
    token = token_copy = xstrdup(token);
    (void)unsetenv("TRAINYARD_TASK_TOKEN"); /* the replica inherits this environment */
    t.node = getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : "?";
    (void)sigaction(SIGPIPE, &ign, NULL);
    sig_fd = ty_sigpipe_install(sigs, TY_ARRAY_SIZE(sigs));
    t.fd = dial(argv[2], &e);
    if (t.fd < 0 || sig_fd < 0) {
        say("%s", t.fd < 0 ? ty_error_msg(&e) : "cannot set up signal handling");
        return 1;
    }
    t.loop = ty_loop_new();
    ty_loop_add_fd(t.loop, t.fd, POLLIN, on_conn, &t);
    ty_loop_add_fd(t.loop, sig_fd, POLLIN, on_signal, &t);
    send_json(&t,
              TY_TASK_HELLO,
              json_pack("{s:s, s:I, s:s, s:i, s:s}",
                        "token",
                        token,
                        "procid",
                        (json_int_t)t.procid,
                        "node",
                        t.node,
                        "pid",
                        (int)getpid(),
                        "slurmJob",
                        getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : ""));
    (void)ty_loop_run(t.loop);
    ty_loop_cancel_timer(t.loop, t.metric_timer);
    ty_loop_cancel_timer(t.loop, t.settle_timer);
    clean_up(&t);
    if (t.fd >= 0)
        close(t.fd);
    if (t.metric_dir) {
        _cleanup_free_ char *f = xasprintf("%s/output.metrics", t.metric_dir);
        (void)unlink(f);
        (void)rmdir(t.metric_dir);
    }
    ty_loop_free(t.loop);
    ty_plan_free(t.plan);
    ty_job_free(t.job);
    ty_strv_free(t.base_env);
    free(t.path_setting);
    ty_taskproto_reader_release(&t.rd);
    if (t.orphaned)
        cancel_own_job(t.orphaned_at);
    return t.status;
}
