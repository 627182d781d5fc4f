/* SPDX-License-Identifier: Apache-2.0
 * engine-service.c: requests with a deadline, and connecting to the container engine
 * (container-engine.h): probing the known sockets with GET /_ping and, when none answers,
 * starting `podman system service` as our child and waiting, on the loop, until it answers
 * (retry timer), exits (its pidfd) or takes too long (deadline). Closing stops that service,
 * waiting for its end on its pidfd; the directory of a service whose trainyard process was
 * killed is removed by the next one that starts a service. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "container-engine.h"
#include "macro.h"
#include "proctree.h"
#include "timeutil.h"

/* How long one GET /_ping may take: an engine that answers at all answers at once, and a
 * socket whose server is gone must not hold up the search for long. */
#define PING_TIMEOUT_MS 2000L
/* How long a freshly started podman service may take to answer (it sets up storage). */
#define SERVICE_START_TIMEOUT_USEC (30 * INT64_C(1000000))
/* While it starts: how often we look for its socket and ping it. */
#define SERVICE_RETRY_USEC (50 * INT64_C(1000))
/* At close: how long the service may take to end after SIGTERM before SIGKILL. */
#define SERVICE_STOP_MS 5000

/* ---- one request with a deadline ---- */

static void call_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ty_engine_call *call = ctx;
    ty_engine_call_fn fn = call->fn;
    void *fctx = call->ctx;

    ty_loop_cancel_timer(call->loop, call->timer);
    call->timer = 0;
    call->req = NULL;
    /* @call may be freed by fn: not touched after this. */
    fn(fctx, status, body, len, error);
}

static void call_timeout(struct ty_loop *loop, void *data)
{
    struct ty_engine_call *call = data;
    char msg[64];

    call->timer = 0;
    ty_docker_cancel(call->api, call->req);
    call->req = NULL;
    (void)snprintf(msg, sizeof(msg), "timed out after %ld ms", call->timeout_ms);
    call->fn(call->ctx, 0, NULL, 0, msg);
}

static void call_too_big(struct ty_loop *loop, void *data)
{
    struct ty_engine_call *call = data;
    char msg[96];

    call->timer = 0;
    (void)snprintf(msg, sizeof(msg), "the answer is larger than %zu bytes", call->max_body);
    call->fn(call->ctx, 0, NULL, 0, msg);
}

/* Bytes of a capped call's answer: past the cap, the request goes (its write callback then
 * stops the transfer) and the callback follows from the loop, not from within curl's. */
static void call_data(void *ctx, const char *data, size_t len)
{
    struct ty_engine_call *call = ctx;

    if (!call->max_body || !call->req)
        return;
    call->got += len;
    if (call->got <= call->max_body)
        return;
    ty_docker_cancel(call->api, call->req);
    call->req = NULL;
    ty_loop_cancel_timer(call->loop, call->timer);
    call->timer = ty_loop_add_timer(call->loop, ty_mono_usec(), call_too_big, call);
}

static int call_start(struct ty_engine_call *call,
                      struct ty_docker *api,
                      struct ty_loop *loop,
                      const char *method,
                      const char *path,
                      const char *body,
                      const char *header,
                      long timeout_ms,
                      size_t max_body,
                      ty_engine_call_fn fn,
                      void *ctx,
                      struct ty_error *err)
{
    struct ty_docker_callbacks cb = {.on_data = call_data, .on_done = call_done, .ctx = call};
    int r;

    *call = (struct ty_engine_call){.api = api,
                                    .loop = loop,
                                    .timeout_ms = timeout_ms,
                                    .fn = fn,
                                    .ctx = ctx,
                                    .max_body = max_body};
    r = ty_docker_request(api,
                          method,
                          path,
                          body,
                          header,
                          TY_DOCKER_BUFFER | TY_DOCKER_NO_TIMEOUT,
                          &cb,
                          &call->req,
                          err);
    if (r < 0) {
        call->req = NULL;
        return r;
    }
    call->timer = ty_loop_add_timer(loop, ty_mono_usec() + timeout_ms * 1000, call_timeout, call);
    return 0;
}

int ty_engine_call_start(struct ty_engine_call *call,
                         struct ty_docker *api,
                         struct ty_loop *loop,
                         const char *method,
                         const char *path,
                         const char *body,
                         const char *header,
                         long timeout_ms,
                         ty_engine_call_fn fn,
                         void *ctx,
                         struct ty_error *err)
{
    return call_start(call, api, loop, method, path, body, header, timeout_ms, 0, fn, ctx, err);
}

int ty_engine_call_start_capped(struct ty_engine_call *call,
                                struct ty_docker *api,
                                struct ty_loop *loop,
                                const char *method,
                                const char *path,
                                long timeout_ms,
                                size_t max_body,
                                ty_engine_call_fn fn,
                                void *ctx,
                                struct ty_error *err)
{
    return call_start(
        call, api, loop, method, path, NULL, NULL, timeout_ms, max_body, fn, ctx, err);
}

void ty_engine_call_cancel(struct ty_engine_call *call)
{
    if (call->req)
        ty_docker_cancel(call->api, call->req);
    if (call->timer)
        ty_loop_cancel_timer(call->loop, call->timer);
    call->req = NULL;
    call->timer = 0;
}

bool ty_engine_call_busy(const struct ty_engine_call *call)
{
    return call->req != NULL;
}

/* ---- connecting ---- */

struct engine_open {
    struct ty_engine *eng;
    ty_engine_open_fn fn;
    void *ctx;
    char *cands[3]; /* sockets to probe, in order (NULL: none) */
    size_t next;
    bool docker_host; /* cands[0] is $DOCKER_HOST's: no fallback */
    struct ty_buf tried;
    char *podman; /* the podman we started, once we did */
    struct ty_docker *probe;
    const char *probing; /* the socket @probe talks to */
    struct ty_engine_call ping;
    uint64_t timer;
    int64_t deadline;
};

static void open_free(struct engine_open *op)
{
    struct ty_engine *eng = op->eng;

    ty_engine_call_cancel(&op->ping);
    ty_docker_free(op->probe); /* deferred by the client when inside its callback */
    ty_loop_cancel_timer(eng->loop, op->timer);
    if (eng->service_pid > 0 && eng->service_pidfd >= 0)
        ty_loop_remove_fd(eng->loop, eng->service_pidfd);
    for (size_t i = 0; i < TY_ARRAY_SIZE(op->cands); i++)
        free(op->cands[i]);
    ty_buf_release(&op->tried);
    free(op->podman);
    free(op);
    eng->opening = NULL;
}

/* The end of ty_engine_open: report and forget the attempt. */
static void open_end(struct engine_open *op, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void open_end(struct engine_open *op, int r, const char *fmt, ...)
{
    struct ty_engine *eng = op->eng;
    ty_engine_open_fn fn = op->fn;
    void *ctx = op->ctx;
    _cleanup_free_ char *started = NULL;
    char msg[TY_ERROR_MSG_MAX] = "";
    va_list ap;

    if (fmt) {
        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
    }
    if (r == 0 && op->podman)
        started = xasprintf("No container engine was running; started '%s system service' "
                            "(pid %d) on %s for this run.",
                            op->podman,
                            (int)eng->service_pid,
                            eng->socket);
    open_free(op);
    fn(ctx, r, msg, started);
}

static void probe_next(struct engine_open *op);
static void service_retry(struct ty_loop *loop, void *data);

static void on_ping(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct engine_open *op = ctx;
    struct ty_engine *eng = op->eng;

    if (status == 200) {
        eng->api = TAKE_PTR(op->probe);
        if (!eng->socket)
            eng->socket = xstrdup(op->probing);
        open_end(op, 0, NULL);
        return;
    }
    ty_docker_free(op->probe);
    op->probe = NULL;
    if (op->podman) { /* our service, still starting: look again shortly */
        op->timer =
            ty_loop_add_timer(eng->loop, ty_mono_usec() + SERVICE_RETRY_USEC, service_retry, op);
        return;
    }
    ty_buf_printf(&op->tried, "%s%s", op->tried.len ? ", " : "", op->probing);
    probe_next(op);
}

/* Ping @sock with a new client. Returns 0 when the ping is under way. */
static int ping_start(struct engine_open *op, const char *sock)
{
    struct ty_engine *eng = op->eng;

    if (access(sock, F_OK) < 0 || ty_docker_new(eng->loop, sock, &op->probe, NULL) < 0)
        return -ENOENT;
    op->probing = sock;
    if (ty_engine_call_start(&op->ping,
                             op->probe,
                             eng->loop,
                             "GET",
                             "/_ping",
                             NULL,
                             NULL,
                             PING_TIMEOUT_MS,
                             on_ping,
                             op,
                             NULL) < 0) {
        ty_docker_free(op->probe);
        op->probe = NULL;
        return -EIO;
    }
    return 0;
}

static void service_retry(struct ty_loop *loop, void *data)
{
    struct engine_open *op = data;

    op->timer = 0;
    if (ty_mono_usec() >= op->deadline) {
        open_end(op,
                 -ETIMEDOUT,
                 "'%s system service' did not answer within %lld s",
                 op->podman,
                 (long long)(SERVICE_START_TIMEOUT_USEC / 1000000));
        return;
    }
    if (ping_start(op, op->eng->socket) < 0)
        op->timer = ty_loop_add_timer(loop, ty_mono_usec() + SERVICE_RETRY_USEC, service_retry, op);
}

/* The service's pidfd is readable: it ended before it answered. */
static void on_service_exit(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct engine_open *op = data;
    struct ty_engine *eng = op->eng;

    ty_loop_remove_fd(loop, fd);
    if (waitpid(eng->service_pid, NULL, WNOHANG) != eng->service_pid)
        return;
    ty_proctree_disown(eng->service_pid);
    eng->service_pid = 0;
    close(eng->service_pidfd);
    eng->service_pidfd = -1;
    open_end(op, -ECHILD, "'%s system service' exited at once", op->podman);
}

static char *find_in_path(const char *prog)
{
    const char *path = getenv("PATH");
    _cleanup_free_ char *copy = xstrdup(path ? path : "/usr/bin:/bin");
    char *save = NULL;

    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        char *cand = xasprintf("%s/%s", dir, prog);
        if (access(cand, X_OK) == 0)
            return cand;
        free(cand);
    }
    return NULL;
}

/* In the child: `podman system service --time=0 @url`, stdio on /dev/null. */
static void service_child(const char *podman, const char *url)
{
    /* O_CLOEXEC: the copies dup2 makes stay open in podman, this descriptor does not. */
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

    (void)setpgid(0, 0);
    /* The service must not outlive us, however we end. */
    (void)prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    if (devnull >= 0) {
        (void)dup2(devnull, STDIN_FILENO);
        (void)dup2(devnull, STDOUT_FILENO);
        (void)dup2(devnull, STDERR_FILENO);
    }
    execl(podman, "podman", "system", "service", "--time=0", url, (char *)NULL);
    _exit(127);
}

/* The socket directories of the podman services we start: /tmp/trainyard-podman.PID.XXXXXX,
 * PID ours. */
#define SERVICE_DIR_PARENT "/tmp"
#define SERVICE_DIR_PREFIX "trainyard-podman."
/* A directory of the older form, trainyard-podman.XXXXXX (no PID), is removed once this old. */
#define SERVICE_DIR_STALE_S 3600

/* Remove the socket directories of services whose trainyard process is gone. A process killed
 * with SIGKILL cannot remove its own: its service ends with it (PR_SET_PDEATHSIG) and podman
 * removes the socket, leaving the directory empty in /tmp, one per killed run (or keeps the
 * socket, when it was killed too). Only directories of dead processes go, the socket in them
 * first (a live one's directory may be empty until its service makes the socket); of the older
 * form without a PID, only empty ones an hour old (a job of an older trainyard may still use
 * its socket). */
static void sweep_service_dirs(void)
{
    DIR *d = opendir(SERVICE_DIR_PARENT);
    struct dirent *de;
    size_t plen = strlen(SERVICE_DIR_PREFIX);

    if (!d)
        return;
    while ((de = readdir(d))) {
        char path[PATH_MAX], *end;
        const char *rest = de->d_name + plen;
        struct stat st;
        long pid;

        if (strncmp(de->d_name, SERVICE_DIR_PREFIX, plen) != 0)
            continue;
        (void)snprintf(path, sizeof(path), "%s/%s", SERVICE_DIR_PARENT, de->d_name);
        errno = 0;
        pid = strtol(rest, &end, 10);
        if (end != rest && *end == '.' && errno == 0) {
            char sock[PATH_MAX + 16];
            if (pid > 0 && pid <= INT_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
                continue; /* alive (or another user's: not ours to judge) */
            (void)snprintf(sock, sizeof(sock), "%s/podman.sock", path);
            if (lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
                (void)unlink(sock);
            (void)rmdir(path);
        } else if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
                   time(NULL) - st.st_mtime > SERVICE_DIR_STALE_S) {
            (void)rmdir(path);
        }
    }
    closedir(d);
}

/* Start `podman system service --time=0 unix://DIR/podman.sock` as our child; its socket
 * is then pinged on a retry timer. Returns 0, or -errno with err. */
static int service_start(struct engine_open *op, const char *podman, struct ty_error *err)
{
    struct ty_engine *eng = op->eng;
    _cleanup_free_ char *tmpl =
        xasprintf("%s/%s%d.XXXXXX", SERVICE_DIR_PARENT, SERVICE_DIR_PREFIX, (int)getpid());
    _cleanup_free_ char *url = NULL;
    pid_t pid;

    sweep_service_dirs();
    if (!mkdtemp(tmpl))
        return ty_error_set(
            err, errno, "cannot create a directory for podman's socket: %s", strerror(errno));
    eng->service_dir = xstrdup(tmpl);
    eng->socket = xasprintf("%s/podman.sock", tmpl);
    url = xasprintf("unix://%s", eng->socket);
    pid = fork();
    if (pid < 0)
        return ty_error_set(err, errno, "cannot fork: %s", strerror(errno));
    if (pid == 0)
        service_child(podman, url);
    eng->service_pid = pid;
    ty_proctree_own(pid);
    eng->service_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (eng->service_pidfd >= 0) {
        (void)fcntl(eng->service_pidfd, F_SETFD, FD_CLOEXEC);
        ty_loop_add_fd(eng->loop, eng->service_pidfd, POLLIN, on_service_exit, op);
    }
    op->podman = xstrdup(podman);
    op->deadline = ty_mono_usec() + SERVICE_START_TIMEOUT_USEC;
    op->timer =
        ty_loop_add_timer(eng->loop, ty_mono_usec() + SERVICE_RETRY_USEC, service_retry, op);
    return 0;
}

/* Probe the next candidate socket; when none is left, start podman's service. */
static void probe_next(struct engine_open *op)
{
    struct ty_error e = {0};
    _cleanup_free_ char *podman = NULL;

    while (op->next < TY_ARRAY_SIZE(op->cands) && op->cands[op->next]) {
        const char *sock = op->cands[op->next++];
        if (ping_start(op, sock) == 0)
            return;
        ty_buf_printf(&op->tried, "%s%s", op->tried.len ? ", " : "", sock);
    }
    if (op->docker_host) {
        open_end(
            op, -EHOSTUNREACH, "DOCKER_HOST 'unix://%s' does not answer GET /_ping", op->cands[0]);
        return;
    }
    podman = find_in_path("podman");
    if (!podman) {
        open_end(op,
                 -EHOSTUNREACH,
                 "no container engine: nothing answers at %s, DOCKER_HOST is not set, "
                 "and podman is not installed",
                 ty_buf_str(&op->tried));
        return;
    }
    if (service_start(op, podman, &e) < 0)
        open_end(op, e.code ? -e.code : -EIO, "%s", ty_error_msg(&e));
}

static void open_begin(struct ty_loop *loop, void *data)
{
    struct engine_open *op = data;
    op->timer = 0;
    probe_next(op);
}

int ty_engine_open(struct ty_engine *eng,
                   struct ty_loop *loop,
                   ty_engine_open_fn fn,
                   void *ctx,
                   struct ty_error *err)
{
    const char *host = getenv("DOCKER_HOST");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct engine_open *op;

    eng->loop = loop;
    eng->service_pidfd = -1;
    if (host && *host && strncmp(host, "unix://", 7) != 0)
        return ty_error_set(
            err, EPROTONOSUPPORT, "DOCKER_HOST '%s': only unix:// sockets are supported", host);
    op = xcalloc(1, sizeof(*op));
    op->eng = eng;
    op->fn = fn;
    op->ctx = ctx;
    if (host && *host) {
        op->cands[0] = xstrdup(host + 7);
        op->docker_host = true;
    } else {
        op->cands[0] = xstrdup("/var/run/docker.sock");
        op->cands[1] = xstrdup("/run/podman/podman.sock");
        op->cands[2] = xdg ? xasprintf("%s/podman/podman.sock", xdg) : NULL;
    }
    eng->opening = op;
    /* Begin from the loop, so that @fn never runs inside this call. */
    op->timer = ty_loop_add_timer(loop, ty_mono_usec(), open_begin, op);
    return 0;
}

/* SIGTERM, a wait on the pidfd (at most SERVICE_STOP_MS), then SIGKILL. */
static void service_stop(struct ty_engine *eng)
{
    struct pollfd p = {.fd = eng->service_pidfd, .events = POLLIN};
    int r = 0;

    (void)kill(eng->service_pid, SIGTERM);
    if (eng->service_pidfd >= 0) {
        while ((r = poll(&p, 1, SERVICE_STOP_MS)) < 0 && errno == EINTR)
            ;
        close(eng->service_pidfd);
        eng->service_pidfd = -1;
    }
    if (r <= 0) /* not ended in time (or no pidfd to wait on) */
        (void)kill(eng->service_pid, SIGKILL);
    (void)waitpid(eng->service_pid, NULL, 0);
    ty_proctree_disown(eng->service_pid);
    eng->service_pid = 0;
}

void ty_engine_close(struct ty_engine *eng)
{
    if (eng->opening)
        open_free(eng->opening);
    ty_engine_chores_cancel(eng);
    ty_docker_free(eng->api);
    eng->api = NULL;
    if (eng->service_pid > 0)
        service_stop(eng);
    if (eng->service_dir) {
        if (eng->socket)
            (void)unlink(eng->socket);
        (void)rmdir(eng->service_dir);
    }
    free(eng->service_dir);
    free(eng->socket);
    eng->service_dir = eng->socket = NULL;
}
