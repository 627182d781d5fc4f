/* SPDX-License-Identifier: Apache-2.0
 * slurm-conn.c: the slurm runtime's side of the launchers' connections (taskproto.h): the
 * rendezvous listener, HELLO (checked against the run's token and task ids), ASSIGN, the
 * PLACED addresses, then each replica's start, output and exit. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "slurm-internal.h"
#include "statemode.h"
#include "strv.h"
#include "timeutil.h"

int slurm_local_address(const char *host, char *out, size_t n, struct ty_error *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST}, *res = NULL;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = -1, r;

    /* Any port does for a route lookup (no packet is sent); 6817 is slurmctld's. */
    r = getaddrinfo(host, "6817", &hints, &res);
    if (r != 0)
        return ty_error_set(err, EHOSTUNREACH, "not an address: '%s': %s", host, gai_strerror(r));
    fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        r = ty_negerrno();
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return ty_error_set(err, -r, "no route to '%s': %s", host, strerror(-r));
    }
    close(fd);
    freeaddrinfo(res);
    if (getnameinfo((struct sockaddr *)&ss, len, out, (socklen_t)n, NULL, 0, NI_NUMERICHOST))
        return ty_error_set(err, EINVAL, "cannot format this host's address towards '%s'", host);
    return 0;
}

/* A launcher says HELLO as soon as it has connected; a connection silent this long is not
 * one. */
#define HELLO_USEC (10 * INT64_C(1000000))

/* Close @c; its memory goes now, or once on_readable is done with it (@c->busy: a message
 * of it is being handled, and handling it may end the whole run). */
static void conn_free(struct slurm_conn *c)
{
    if (!c)
        return;
    ty_loop_cancel_timer(c->s->base.loop, c->hello_timer);
    c->hello_timer = 0;
    if (c->fd >= 0) {
        ty_loop_remove_fd(c->s->base.loop, c->fd);
        close(c->fd);
        c->fd = -1;
    }
    c->dead = true;
    if (c->busy)
        return;
    ty_taskproto_reader_release(&c->rd);
    free(c);
}

/* Drop connection @c (a bound replica whose program has not exited is lost). */
static void conn_drop(struct slurm_conn *c, const char *why)
{
    struct slurm_rt *s = c->s;
    long i = c->rep;

    for (size_t k = 0; k < s->n_conns; k++)
        if (s->conns[k] == c) {
            s->conns[k] = s->conns[--s->n_conns];
            break;
        }
    if (i >= 0)
        s->reps[i].conn = NULL;
    conn_free(c);
    /* A held exit (slurm_hold_exit) is settled by the job's state, not by the drop. */
    if (i >= 0 && !s->reps[i].exited && !s->reps[i].exit_held && s->phase != PHASE_ENDED) {
        char detail[256];
        (void)snprintf(detail, sizeof(detail), "%s (node %s)", why, s->reps[i].node);
        if (s->phase == PHASE_SUBMITTED) /* a lost node, before placing (docs/lifecycle.md) */
            slurm_prepared(s,
                           -EHOSTDOWN,
                           "the launcher of replica %s on node %s went away: %s",
                           s->reps[i].r->display_name,
                           s->reps[i].node,
                           why);
        else
            slurm_lost(s, (size_t)i, detail);
    }
}

static int send_json(struct slurm_conn *c, int type, json_t *obj /* stolen */)
{
    struct ty_buf b = TY_BUF_INIT;
    int r = ty_taskproto_frame_json(&b, type, obj);
    if (r >= 0)
        r = ty_write_all(c->fd, b.data, b.len);
    ty_buf_release(&b);
    json_decref(obj);
    return r;
}

/* Constant-time comparison of the token (it is a secret). */
static bool token_ok(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char d = na != nb;
    for (size_t i = 0; i < na && i < nb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

static json_t *strv_json(char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static int on_hello(struct slurm_conn *c, const json_t *m, struct ty_error *err)
{
    struct slurm_rt *s = c->s;
    const struct ty_cluster_plan *plan = s->base.plan;
    const char *token = ty_json_str(m, "token"), *node = ty_json_str(m, "node");
    json_t *jp = json_object_get(m, "procid"), *job, *assign;
    json_int_t procid;

    if (c->rep >= 0)
        return ty_error_set(err, EPROTO, "a second HELLO");
    if (!token || !token_ok(token, s->token))
        return ty_error_set(err, EACCES, "a launcher with a wrong token");
    if (!json_is_integer(jp) || (procid = json_integer_value(jp)) < 0 || (size_t)procid >= s->n)
        return ty_error_set(err, EPROTO, "HELLO.procid: not a task of this run");
    if (s->reps[procid].conn)
        return ty_error_set(err, EPROTO, "task %lld said HELLO twice", (long long)procid);
    c->rep = (long)procid;
    s->reps[procid].conn = c;
    ty_loop_cancel_timer(s->base.loop, c->hello_timer);
    c->hello_timer = 0;
    slurm_state_fresh(s);
    (void)snprintf(s->reps[procid].node, sizeof(s->reps[procid].node), "%s", node ? node : "?");
    /* srun prints no job id: the first launcher says it (its SLURM_JOB_ID). */
    if (ty_json_str(m, "slurmJob"))
        slurm_job_known(s, ty_json_str(m, "slurmJob"));
    job = json_pack("{s:s, s:O, s:O}",
                    "jobId",
                    plan->job->job_id,
                    "trainingInput",
                    plan->job->training_input,
                    "labels",
                    plan->job->labels);
    assign = json_pack("{s:o, s:I, s:s}",
                       "job",
                       job,
                       "replica",
                       procid,
                       "runtime",
                       ty_slurm_replica_runtime(plan->job));
    /* A retry: the replica's address in the attempt before, kept if it lands there again. */
    if (s->reps[procid].r->host && s->reps[procid].r->port > 0)
        json_object_set_new(
            assign,
            "previous",
            json_pack(
                "{s:s, s:i}", "host", s->reps[procid].r->host, "port", s->reps[procid].r->port));
    /* The service's defined environment for program replicas (not the daemon's, which
     * sbatch exports to the launchers): the launcher adds only what Slurm set. */
    if (s->base.base_env) {
        json_object_set_new(assign, "baseEnv", strv_json(s->base.base_env));
        if (s->base.path_setting)
            json_object_set_new(assign, "pathSetting", json_string(s->base.path_setting));
    }
    if (plan->trial_id) {
        json_object_set_new(assign, "trialId", json_string(plan->trial_id));
        json_object_set_new(assign, "trialArgs", strv_json(plan->trial_args));
    }
    return send_json(c, TY_TASK_ASSIGN, assign);
}

static int on_placed(struct slurm_conn *c, const json_t *m, struct ty_error *err)
{
    struct slurm_rt *s = c->s;
    struct slurm_rep *sr;
    const char *host = ty_json_str(m, "host");
    json_t *port = json_object_get(m, "port");

    if (c->rep < 0 || s->reps[c->rep].placed)
        return ty_error_set(err, EPROTO, "PLACED out of turn");
    if (!host || !*host || strlen(host) > 64 || !json_is_integer(port) ||
        json_integer_value(port) < 1 || json_integer_value(port) > 65535)
        return ty_error_set(err, EPROTO, "PLACED: a host and a port are required");
    sr = &s->reps[c->rep];
    free(sr->r->host);
    sr->r->host = xstrdup(host);
    sr->r->port = (int)json_integer_value(port);
    sr->placed = true;
    slurm_state_fresh(s);
    if (++s->n_placed == s->n)
        slurm_prepared(s, 0, "%s", "");
    return 0;
}

/* EXIT: the replica's end, as its launcher judged it (ty_taskproto_exit_judge): a kill from
 * outside on the node is a signal (restart in place); "node_lost" means Slurm ended the
 * launcher's step, which is held until the job's state says whether Slurm ended the whole
 * job (then every replica is lost, naming the failed node). An unknown kind is reported as
 * lost, saying so. */
static int on_exit_msg(struct slurm_conn *c, const json_t *m)
{
    struct slurm_rt *s = c->s;
    struct slurm_rep *sr = &s->reps[c->rep];
    struct ty_exit_status st;

    if (sr->exited || sr->exit_held)
        return 0;
    if (!sr->launched) /* the launcher failed before START: the run cannot be placed */
        return -EPROTO;
    (void)ty_taskproto_exit_parse(m, &st, NULL);
    if (st.kind == TY_EXIT_NODE_LOST && !sr->signalled) {
        slurm_hold_exit(s, (size_t)c->rep, &st);
        return 0;
    }
    slurm_report_exit(s, (size_t)c->rep, &st);
    return 0;
}

/* The newest "timestamp" of the reports in a metric file (cloudml-hypertune writes the time
 * of each, in seconds), or 0 when it has none. */
static double newest_timestamp(const char *p, size_t len)
{
    static const char key[] = "\"timestamp\"";
    const char *end = p + len, *at;
    double newest = 0;

    while ((at = memmem(p, (size_t)(end - p), key, sizeof(key) - 1))) {
        char num[40];
        size_t n = 0;
        p = at + sizeof(key) - 1;
        while (p < end && (*p == ' ' || *p == ':' || *p == '"'))
            p++;
        while (p < end && n + 1 < sizeof(num) && strchr("0123456789.eE+-", *p))
            num[n++] = *p++;
        num[n] = '\0';
        double t = n ? strtod(num, NULL) : 0;
        newest = t > newest ? t : newest;
    }
    return newest;
}

/* A trial's metric file from a node: replace the supervisor's copy (plan->metric_dir, where
 * the trial runner reads it) atomically, as cloudml-hypertune rewrites the whole file. The
 * replicas share one file in the process and container runtimes, where the last report
 * written wins; here each launcher forwards its replica's file when it changes (within a
 * second), so one written earlier may arrive later: a file whose newest report is older than
 * the stored one's (by cloudml-hypertune's "timestamp") replaces nothing. Without timestamps
 * the last to arrive wins. An empty file reports nothing and replaces nothing: a replica
 * stopped at teardown between truncating its own file and writing it (`echo ... >file`) must
 * not erase the report another replica (the master) sent just before. */
static void store_metrics(struct slurm_rt *s, const char *payload, size_t len)
{
    const char *dir = s->base.plan->metric_dir;
    _cleanup_free_ char *tmp = NULL;
    _cleanup_free_ char *path = NULL;
    double newest;
    int fd, w;

    if (!dir || len == 0)
        return;
    newest = newest_timestamp(payload, len);
    if (newest < s->metric_newest)
        return;
    s->metric_newest = newest;
    tmp = xasprintf("%s/.output.metrics.%d", dir, (int)getpid());
    path = xasprintf("%s/output.metrics", dir);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, TY_STATE_FILE_MODE);
    if (fd < 0)
        return;
    w = ty_write_all(fd, payload, len);
    if (close(fd) == 0 && w == 0)
        (void)rename(tmp, path);
    else
        (void)unlink(tmp);
}

/* A notice of a node's runtime, logged once per run however many launchers say it (each
 * launcher's container runtime sizes every role, for instance). */
static void on_notice_msg(struct slurm_conn *c, const json_t *m)
{
    struct slurm_rt *s = c->s;
    const char *msg = ty_json_str(m, "message");
    json_int_t sev = json_integer_value(json_object_get(m, "severity"));

    if (!msg || ty_strv_contains(s->notices, msg))
        return;
    ty_strv_push(&s->notices, msg);
    ty_runtime_notice(&s->base,
                      sev >= TY_SEV_INFO && sev <= TY_SEV_ERROR ? (enum ty_severity)sev
                                                                : TY_SEV_INFO,
                      "node %s: %s",
                      s->reps[c->rep].node,
                      msg);
}

static int on_frame(void *ctx, int type, const char *payload, size_t len)
{
    struct slurm_conn *c = ctx;
    struct slurm_rt *s = c->s;
    _cleanup_json_ json_t *m = NULL;
    struct ty_error e = {0};
    int r = 0;

    if (c->dead) /* the run ended while an earlier message of this stream was handled */
        return -ECONNABORTED;

    if (type == TY_TASK_METRICS && c->rep >= 0) {
        store_metrics(s, payload, len);
        return 0;
    }
    if ((type == TY_TASK_OUT || type == TY_TASK_ERR) && c->rep >= 0) {
        if (s->reps[c->rep].ever_started)
            s->base.ev.output(s->base.ev.ctx,
                              s->reps[c->rep].r,
                              type == TY_TASK_ERR ? TY_STREAM_STDERR : TY_STREAM_STDOUT,
                              payload,
                              len);
        else /* the launcher's own complaints (before its replica ran) */
            ty_runtime_notice(
                &s->base, TY_SEV_WARNING, "node %s: %.*s", s->reps[c->rep].node, (int)len, payload);
        return 0;
    }
    r = ty_taskproto_json(payload, len, &m, &e);
    if (r >= 0 && c->rep < 0 && type != TY_TASK_HELLO)
        r = ty_error_set(&e, EPROTO, "a message before HELLO");
    if (r >= 0) {
        switch (type) {
        case TY_TASK_HELLO:
            r = on_hello(c, m, &e);
            break;
        case TY_TASK_PLACED:
            r = on_placed(c, m, &e);
            break;
        case TY_TASK_NOTICE:
            on_notice_msg(c, m);
            break;
        case TY_TASK_STARTED:
            if (!s->reps[c->rep].started && s->reps[c->rep].launched && !s->reps[c->rep].exited) {
                s->reps[c->rep].started = s->reps[c->rep].ever_started = true;
                s->base.ev.started(s->base.ev.ctx, s->reps[c->rep].r);
            }
            break;
        case TY_TASK_EXIT:
            r = on_exit_msg(c, m);
            if (r < 0)
                (void)ty_error_set(&e,
                                   EPROTO,
                                   "%s",
                                   ty_json_str(m, "detail") ? ty_json_str(m, "detail")
                                                            : "the launcher failed");
            break;
        default:
            r = ty_error_set(&e, EPROTO, "unexpected message '%c'", type);
        }
    }
    if (r < 0) { /* dropped by on_readable once the decoder is done with @c */
        (void)snprintf(c->why, sizeof(c->why), "%s", ty_error_msg(&e));
        return -ECONNABORTED;
    }
    return 0;
}

static void on_readable(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct slurm_conn *c = data;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf));
    struct ty_error e = {0};
    int r;

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        conn_drop(c, n == 0 ? "its launcher closed the connection" : strerror(errno));
        return;
    }
    c->busy = true;
    r = ty_taskproto_feed(&c->rd, buf, (size_t)n, on_frame, c, &e);
    c->busy = false;
    if (c->dead) /* closed while its message was handled */
        conn_free(c);
    else if (r < 0)
        conn_drop(c, r == -ECONNABORTED ? c->why : ty_error_msg(&e));
}

/* A connection that said no HELLO within HELLO_USEC is not a launcher's (one says it at once). */
static void on_hello_timeout(struct ty_loop *loop, void *data)
{
    struct slurm_conn *c = data;

    (void)loop;
    c->hello_timer = 0;
    conn_drop(c, "no HELLO");
}

static void on_accept(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct slurm_rt *s = data;
    struct slurm_conn *c;
    int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

    if (cfd < 0)
        return;
    /* Each launcher connects once, maybe again after a failed attempt; far more than that
     * (4 per replica, plus a margin for small runs) is not a launcher storm we owe anything
     * to. A connection that has not said HELLO makes room: idle ones (anyone may connect to
     * the listener) cannot lock the launchers out. */
    if (s->n_conns >= 4 * s->n + 16) {
        size_t k = 0;
        while (k < s->n_conns && (s->conns[k]->rep >= 0 || s->conns[k]->busy))
            k++;
        if (k == s->n_conns) {
            close(cfd);
            return;
        }
        conn_drop(s->conns[k], "no HELLO before the listener was full");
    }
    c = xcalloc(1, sizeof(*c));
    c->s = s;
    c->fd = cfd;
    c->rep = -1;
    c->hello_timer = ty_loop_add_timer(loop, ty_mono_usec() + HELLO_USEC, on_hello_timeout, c);
    s->conns = xreallocarray(s->conns, s->n_conns + 1, sizeof(*s->conns));
    s->conns[s->n_conns++] = c;
    ty_loop_add_fd(loop, cfd, POLLIN, on_readable, c);
}

/* A listening socket on @ai's address, port chosen by the kernel; a wildcard IPv6 one takes
 * IPv4 too. Returns the socket, or -errno. */
static int listen_on(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), off = 0, r;

    if (fd < 0)
        return ty_negerrno();
    if (ai->ai_family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
        r = ty_negerrno();
        close(fd);
        return r;
    }
    return fd;
}

int slurm_listen(struct slurm_rt *s, const char *local_addr, struct ty_error *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *res = NULL;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    /* No address: every address of this host, IPv6 and IPv4, or IPv4 alone without IPv6. */
    const char *const any[] = {"::", "0.0.0.0"};
    char addr[64], port[16];
    int r = -EINVAL, fd = -1;

    for (size_t k = 0; k < (local_addr ? 1 : TY_ARRAY_SIZE(any)) && fd < 0; k++) {
        (void)snprintf(addr, sizeof(addr), "%s", local_addr ? local_addr : any[k]);
        if (getaddrinfo(addr, "0", &hints, &res) != 0)
            return ty_error_set(err, EINVAL, "cannot use the address %s", addr);
        fd = r = listen_on(res);
        freeaddrinfo(res);
    }
    if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
        getnameinfo((struct sockaddr *)&ss,
                    len,
                    addr,
                    sizeof(addr),
                    port,
                    sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV)) {
        r = fd < 0 ? r : -EIO;
        if (fd >= 0)
            close(fd);
        return ty_error_set(
            err, -r, "cannot listen for the launchers on %s: %s", addr, strerror(-r));
    }
    s->listen_fd = fd;
    /* ":PORT": each launcher connects to the host srun ran on (trainyard-task --connect). */
    if (!local_addr)
        (void)snprintf(s->listen_addr, sizeof(s->listen_addr), ":%s", port);
    else
        (void)snprintf(s->listen_addr,
                       sizeof(s->listen_addr),
                       strchr(addr, ':') ? "[%s]:%s" : "%s:%s",
                       addr,
                       port);
    ty_loop_add_fd(s->base.loop, fd, POLLIN, on_accept, s);
    return 0;
}

int slurm_send_start(struct slurm_rt *s, size_t i, char *const env[], struct ty_error *err)
{
    struct slurm_rep *sr = &s->reps[i];
    sr->launched = true;
    if (!sr->conn)
        return ty_error_set(
            err, ENOTCONN, "the launcher of replica %s is gone", sr->r->display_name);
    if (send_json(sr->conn, TY_TASK_START, json_pack("{s:o}", "env", strv_json(env))) < 0)
        return ty_error_set(err,
                            EPIPE,
                            "cannot reach the launcher of replica %s on node %s",
                            sr->r->display_name,
                            sr->node);
    return 0;
}

int slurm_send_signal(struct slurm_rt *s, size_t i, int sig)
{
    struct slurm_rep *sr = &s->reps[i];
    if (!sr->conn || sr->exited)
        return 0;
    sr->signalled = true;
    return send_json(sr->conn, TY_TASK_SIGNAL, json_pack("{s:i}", "signal", sig));
}

void slurm_close_all(struct slurm_rt *s)
{
    for (size_t k = 0; k < s->n_conns; k++) {
        struct slurm_conn *c = s->conns[k];
        if (c->rep >= 0)
            (void)send_json(c, TY_TASK_QUIT, json_object());
        if (c->rep >= 0)
            s->reps[c->rep].conn = NULL;
        conn_free(c);
    }
    free(s->conns);
    s->conns = NULL;
    s->n_conns = 0;
    if (s->listen_fd >= 0) {
        ty_loop_remove_fd(s->base.loop, s->listen_fd);
        close(s->listen_fd);
        s->listen_fd = -1;
    }
}
