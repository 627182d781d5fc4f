/* SPDX-License-Identifier: Apache-2.0
 * test-docker-api.c: the Docker Engine API client (docker-api.h): the log stream demuxer at
 * every split, error-body messages, and the HTTP side against a real local HTTP/1.1 server
 * on a unix socket that this test forks (canned JSON, chunked streams, slow answers, echo):
 * asynchronous requests on a ty_loop, streaming, cancel, re-entrant callbacks, blocking
 * batches with a deadline, unreachable sockets, and freeing with requests in flight; and
 * the container engine's asynchronous parts (container-engine.h) against the same server:
 * requests with a loop-timer deadline, connecting, garbage collection, images, subnets. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "base64.h"
#include "buf.h"
#include "container-engine.h"
#include "docker-api.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "tap.h"
#include "timeutil.h"

/* ---- the test server (runs in a forked child) ---- */

static char tmpdir[64];
static char sock_path[108];
static pid_t server_pid = -1;

static void msleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(0); /* the client went away */
        c += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int status, const char *ctype, const char *body)
{
    char head[256];
    int n = snprintf(head,
                     sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                     status,
                     ctype,
                     strlen(body));
    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

static void chunked_head(int fd, const char *ctype)
{
    char head[256];
    int n = snprintf(head,
                     sizeof(head),
                     "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n",
                     ctype);
    send_all(fd, head, (size_t)n);
}

static void chunk(int fd, const void *p, size_t n)
{
    char head[32];
    int k = snprintf(head, sizeof(head), "%zx\r\n", n);
    send_all(fd, head, (size_t)k);
    send_all(fd, p, n);
    send_all(fd, "\r\n", 2);
}

/* The header value of @name in @head (a request's header block), or "". */
static void header_value(const char *head, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    const char *p = head;

    out[0] = '\0';
    while ((p = strstr(p, "\r\n"))) {
        p += 2;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1, *e;
            while (*v == ' ')
                v++;
            e = strstr(v, "\r\n");
            if (!e)
                return;
            (void)snprintf(out, n, "%.*s", (int)(e - v), v);
            return;
        }
    }
}

/* Build the multiplexed log stream used by /logs and the demux tests. */
static size_t mux_frame(char *out, int stream, const char *p, size_t n)
{
    out[0] = (char)stream;
    out[1] = out[2] = out[3] = 0;
    out[4] = (char)(n >> 24);
    out[5] = (char)(n >> 16);
    out[6] = (char)(n >> 8);
    out[7] = (char)n;
    memcpy(out + 8, p, n);
    return n + 8;
}

/* The engine's routes (images, garbage collection) for the container-engine tests. Returns
 * whether @p was one. */
static bool serve_engine(int fd, const char *p)
{
    if (strcmp(p, "/images/present/json") == 0) {
        respond(fd, 200, "application/json", "{\"Id\":\"sha256:1\"}");
    } else if (strcmp(p, "/images/slow/json") == 0) {
        msleep(300);
        respond(fd, 200, "application/json", "{\"Id\":\"sha256:2\"}");
    } else if (strncmp(p, "/images/create?fromImage=good", 29) == 0) {
        chunked_head(fd, "application/json");
        chunk(fd, "{\"status\":\"Pulling\"}\n", 21);
        msleep(50);
        chunk(fd, "{\"status\":\"Done\"}\n", 18);
        send_all(fd, "0\r\n\r\n", 5);
    } else if (strncmp(p, "/images/create?fromImage=broken", 31) == 0) {
        respond(fd,
                200,
                "application/json",
                "{\"status\":\"Pulling\"}\n{\"error\":\"manifest unknown\"}\n");
    } else if (strncmp(p, "/containers/json?all=1", 22) == 0) {
        respond(fd,
                200,
                "application/json",
                "[{\"Id\":\"dead1\",\"Labels\":{\"trainyard.owner\":\"999999999:1\"}},"
                "{\"Id\":\"other\",\"Labels\":{}}]");
    } else if (strncmp(p, "/networks?filters=", 18) == 0) {
        respond(fd, 200, "application/json", "[]");
    } else if (strcmp(p, "/containers/dead1?force=1") == 0) {
        respond(fd, 204, "text/plain", "");
    } else {
        return false;
    }
    return true;
}

static void serve_conn(int fd)
{
    struct ty_buf in = TY_BUF_INIT;
    int nreq = 0;

    for (;;) {
        char method[16], path[256], clen_s[32], ctype[128], xtest[128];
        char *end;
        size_t head_len, clen;

        while (!(end = in.data ? strstr(in.data, "\r\n\r\n") : NULL)) {
            char b[4096];
            ssize_t r = read(fd, b, sizeof(b));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                _exit(0);
            ty_buf_append(&in, b, (size_t)r);
        }
        head_len = (size_t)(end - in.data) + 4;
        if (sscanf(in.data, "%15s %255s", method, path) != 2)
            _exit(1);
        header_value(in.data, "Content-Length", clen_s, sizeof(clen_s));
        header_value(in.data, "Content-Type", ctype, sizeof(ctype));
        header_value(in.data, "X-Test", xtest, sizeof(xtest));
        clen = clen_s[0] ? strtoul(clen_s, NULL, 10) : 0;
        while (in.len < head_len + clen) {
            char b[4096];
            ssize_t r = read(fd, b, sizeof(b));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                _exit(0);
            ty_buf_append(&in, b, (size_t)r);
        }
        _cleanup_free_ char *body = xstrndup(in.data + head_len, clen);
        ty_buf_consume(&in, head_len + clen);
        nreq++;

        if (strncmp(path, "/v1.41/", 7) != 0) {
            respond(fd, 400, "text/plain", "no version prefix");
            continue;
        }
        const char *p = path + 6;
        if (serve_engine(fd, p)) {
            /* answered */
        } else if (strcmp(p, "/_ping") == 0) {
            respond(fd, 200, "text/plain", "OK");
        } else if (strcmp(p, "/json") == 0) {
            char b[128];
            (void)snprintf(b, sizeof(b), "{\"Id\":\"abc123\",\"conn_req\":%d}", nreq);
            respond(fd, 200, "application/json", b);
        } else if (strcmp(p, "/stream") == 0) {
            chunked_head(fd, "text/plain");
            for (int i = 1; i <= 4; i++) {
                char b[32];
                int k = snprintf(b, sizeof(b), "piece-%d\n", i);
                chunk(fd, b, (size_t)k);
                if (i < 4)
                    msleep(150);
            }
            send_all(fd, "0\r\n\r\n", 5);
        } else if (strcmp(p, "/forever") == 0) {
            chunked_head(fd, "text/plain");
            for (;;) {
                chunk(fd, "tick\n", 5);
                msleep(40);
            }
        } else if (strncmp(p, "/slow?ms=", 9) == 0) {
            msleep(strtol(p + 9, NULL, 10));
            respond(fd, 200, "text/plain", "late");
        } else if (strcmp(p, "/echo") == 0) {
            _cleanup_free_ char *b = xasprintf("method=%s\nctype=%s\nclen=%s\nxtest=%s\nbody=%s",
                                               method,
                                               ctype,
                                               clen_s[0] ? clen_s : "-",
                                               xtest,
                                               body);
            respond(fd, 200, "text/plain", b);
        } else if (strcmp(p, "/error") == 0) {
            respond(fd,
                    404,
                    "application/json",
                    "{\"cause\":\"no such container\",\"message\":\"no such container: x\","
                    "\"response\":404}\n");
        } else if (strcmp(p, "/close") == 0) {
            _exit(0);
        } else if (strcmp(p, "/logs") == 0) {
            char s[256];
            size_t n = 0;
            n += mux_frame(s + n, 1, "line one\n", 9);
            n += mux_frame(s + n, 2, "warn\n", 5);
            n += mux_frame(s + n, 1, "line two\n", 9);
            chunked_head(fd, "application/vnd.docker.raw-stream");
            for (size_t off = 0; off < n; off += 5) {
                chunk(fd, s + off, n - off < 5 ? n - off : 5);
                msleep(5);
            }
            send_all(fd, "0\r\n\r\n", 5);
        } else {
            respond(fd, 404, "application/json", "{\"message\":\"page not found\"}");
        }
    }
}

static int start_server(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd, pipefd[2];
    char c;

    if (pipe(pipefd) < 0)
        return -1;
    (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    server_pid = fork();
    if (server_pid < 0)
        return -1;
    if (server_pid == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGCHLD, SIG_IGN); /* connection handlers reap themselves */
        signal(SIGPIPE, SIG_IGN);
        close(pipefd[0]);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
            _exit(1);
        send_all(pipefd[1], "r", 1);
        close(pipefd[1]);
        for (;;) {
            int c2 = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
            if (c2 < 0)
                continue;
            pid_t h = fork();
            if (h == 0) {
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() == 1)
                    _exit(0);
                close(fd);
                serve_conn(c2);
                _exit(0);
            }
            close(c2);
        }
    }
    close(pipefd[1]);
    if (read(pipefd[0], &c, 1) != 1) {
        close(pipefd[0]);
        return -1;
    }
    close(pipefd[0]);
    return 0;
}

static void stop_server(void)
{
    int st;
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        (void)waitpid(server_pid, &st, 0);
        server_pid = -1;
    }
}

/* ---- loop helpers ---- */

static bool expired;

static void on_expire(struct ty_loop *loop, void *data)
{
    expired = true;
}

/* Run @loop until *flag is true or @ms passed. Returns *flag. */
static bool run_until(struct ty_loop *loop, const bool *flag, int ms)
{
    uint64_t t;

    expired = false;
    t = ty_loop_add_timer(loop, ty_mono_usec() + (int64_t)ms * 1000, on_expire, NULL);
    while (!(flag && *flag) && !expired)
        if (ty_loop_run_once(loop) < 0)
            break;
    ty_loop_cancel_timer(loop, t);
    return flag && *flag;
}

static void run_for(struct ty_loop *loop, int ms)
{
    (void)run_until(loop, NULL, ms);
}

/* ---- one asynchronous request's record ---- */

struct rec {
    struct ty_docker *d;
    struct ty_docker_req *req;
    bool done;
    int n_done;
    long status;
    struct ty_buf body; /* from on_done */
    struct ty_buf data; /* everything on_data delivered */
    char error[512];
    int n_data;
    int64_t first_data_usec, done_usec;
    int data_after_done;
    /* re-entrancy hooks */
    int cancel_after;                    /* cancel itself from on_data after that many pieces */
    struct ty_docker_req **cancel_other; /* cancel this request in on_done */
    struct rec *chain;                   /* start this request (GET /json) from on_done */
    bool free_in_done, free_in_data;
    struct ty_docker_demux dm;
    struct ty_buf demuxed[3];
    bool demux;
};

static void rec_data(void *ctx, const char *p, size_t n);
static void rec_done(void *ctx, long status, const char *body, size_t len, const char *error);

static struct ty_docker_callbacks rec_cb(struct rec *r)
{
    return (struct ty_docker_callbacks){.on_data = rec_data, .on_done = rec_done, .ctx = r};
}

static void demux_frame(void *ctx, int stream, const char *p, size_t n)
{
    struct rec *r = ctx;
    if (stream >= 0 && stream < 3)
        ty_buf_append(&r->demuxed[stream], p, n);
}

static void rec_data(void *ctx, const char *p, size_t n)
{
    struct rec *r = ctx;

    if (r->done)
        r->data_after_done++;
    if (!r->n_data++)
        r->first_data_usec = ty_mono_usec();
    ty_buf_append(&r->data, p, n);
    if (r->demux)
        ty_docker_demux_feed(&r->dm, p, n, demux_frame, r);
    if (r->cancel_after && r->n_data == r->cancel_after) {
        ty_docker_cancel(r->d, r->req);
        r->done = true; /* the test's "stop waiting" flag */
    }
    if (r->free_in_data) {
        ty_docker_free(r->d);
        r->done = true;
    }
}

static void rec_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct rec *r = ctx;

    r->n_done++;
    r->done = true;
    r->done_usec = ty_mono_usec();
    r->status = status;
    if (body)
        ty_buf_append(&r->body, body, len);
    (void)snprintf(r->error, sizeof(r->error), "%s", error ? error : "");
    if (r->cancel_other && *r->cancel_other)
        ty_docker_cancel(r->d, *r->cancel_other);
    if (r->chain) {
        struct ty_docker_callbacks cb = rec_cb(r->chain);
        r->chain->d = r->d;
        (void)ty_docker_request(
            r->d, "GET", "/json", NULL, NULL, TY_DOCKER_BUFFER, &cb, &r->chain->req, NULL);
    }
    if (r->free_in_done)
        ty_docker_free(r->d);
}

static void rec_release(struct rec *r)
{
    ty_buf_release(&r->body);
    ty_buf_release(&r->data);
    for (int i = 0; i < 3; i++)
        ty_buf_release(&r->demuxed[i]);
}

static int start(struct ty_docker *d,
                 struct rec *r,
                 const char *method,
                 const char *path,
                 const char *body,
                 const char *hdr,
                 int flags)
{
    struct ty_docker_callbacks cb = rec_cb(r);
    r->d = d;
    return ty_docker_request(d, method, path, body, hdr, flags, &cb, &r->req, NULL);
}

/* ---- tests without I/O ---- */

struct dcollect {
    struct ty_buf out[3];
    char seq[16];
    size_t nseq;
    int last;
    int empty_calls;
};

static void dcollect_frame(void *ctx, int stream, const char *p, size_t n)
{
    struct dcollect *c = ctx;
    if (!n)
        c->empty_calls++;
    if (stream != c->last && c->nseq < sizeof(c->seq) - 1)
        c->seq[c->nseq++] = (char)('0' + stream);
    c->last = stream;
    if (stream >= 0 && stream < 3)
        ty_buf_append(&c->out[stream], p, n);
}

static void dcollect_release(struct dcollect *c)
{
    for (int i = 0; i < 3; i++)
        ty_buf_release(&c->out[i]);
}

static bool dcollect_matches(
    const struct dcollect *c, const char *o1, size_t n1, const char *o2, size_t n2, const char *seq)
{
    return c->out[1].len == n1 && memcmp(c->out[1].data, o1, n1) == 0 && c->out[2].len == n2 &&
           memcmp(c->out[2].data, o2, n2) == 0 && strcmp(c->seq, seq) == 0 && !c->empty_calls;
}

static void test_demux(void)
{
    char big[300];
    char stream[512];
    size_t n = 0;
    char o2[4 + sizeof(big)];
    bool all2 = true, all3 = true;
    struct dcollect c;

    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)('a' + i % 26);
    n += mux_frame(stream + n, 1, "hello\n", 6);
    n += mux_frame(stream + n, 2, "oops", 4);
    n += mux_frame(stream + n, 1, "", 0);
    n += mux_frame(stream + n, 2, big, sizeof(big));
    n += mux_frame(stream + n, 1, "end", 3);
    memcpy(o2, "oops", 4);
    memcpy(o2 + 4, big, sizeof(big));

    {
        struct ty_docker_demux dm = {0};
        memset(&c, 0, sizeof(c));
        ty_docker_demux_feed(&dm, stream, n, dcollect_frame, &c);
        ok(dcollect_matches(&c, "hello\nend", 9, o2, sizeof(o2), "121"), "demux: whole stream");
        is_int(dm.header_have, 0, "demux: ends between frames");
        is_int(dm.remaining, 0, "demux: nothing outstanding");
        dcollect_release(&c);
    }
    {
        struct ty_docker_demux dm = {0};
        memset(&c, 0, sizeof(c));
        for (size_t i = 0; i < n; i++)
            ty_docker_demux_feed(&dm, stream + i, 1, dcollect_frame, &c);
        ok(dcollect_matches(&c, "hello\nend", 9, o2, sizeof(o2), "121"), "demux: byte by byte");
        dcollect_release(&c);
    }
    for (size_t i = 0; i <= n; i++) {
        struct ty_docker_demux dm = {0};
        memset(&c, 0, sizeof(c));
        ty_docker_demux_feed(&dm, stream, i, dcollect_frame, &c);
        ty_docker_demux_feed(&dm, stream + i, n - i, dcollect_frame, &c);
        if (!dcollect_matches(&c, "hello\nend", 9, o2, sizeof(o2), "121")) {
            if (all2)
                diag("split at %zu differs", i);
            all2 = false;
        }
        dcollect_release(&c);
    }
    ok(all2, "demux: the same for every split into two pieces (%zu bytes)", n);
    for (size_t i = 0; i <= n && all3; i += 1)
        for (size_t j = i; j <= n; j++) {
            struct ty_docker_demux dm = {0};
            memset(&c, 0, sizeof(c));
            ty_docker_demux_feed(&dm, stream, i, dcollect_frame, &c);
            ty_docker_demux_feed(&dm, stream + i, j - i, dcollect_frame, &c);
            ty_docker_demux_feed(&dm, stream + j, n - j, dcollect_frame, &c);
            if (!dcollect_matches(&c, "hello\nend", 9, o2, sizeof(o2), "121")) {
                diag("split at %zu,%zu differs", i, j);
                all3 = false;
            }
            dcollect_release(&c);
            if (!all3)
                break;
        }
    ok(all3, "demux: the same for every split into three pieces");

    /* A frame over 64 KiB: the size's high bytes count. */
    {
        size_t bn = 70000 + 8;
        char *b = xmalloc(bn + 16);
        char *payload = xmalloc(70000);
        struct ty_docker_demux dm = {0};
        memset(payload, 'x', 70000);
        n = mux_frame(b, 2, payload, 70000);
        n += mux_frame(b + n, 1, "z", 1);
        memset(&c, 0, sizeof(c));
        ty_docker_demux_feed(&dm, b, 5, dcollect_frame, &c);
        ty_docker_demux_feed(&dm, b + 5, 40000, dcollect_frame, &c);
        ty_docker_demux_feed(&dm, b + 40005, n - 40005, dcollect_frame, &c);
        ok(dcollect_matches(&c, "z", 1, payload, 70000, "21"), "demux: a 70000-byte frame");
        dcollect_release(&c);
        free(b);
        free(payload);
    }
    {
        struct ty_docker_demux dm = {0};
        ty_docker_demux_feed(&dm, "\x01\0\0\0\0\0\0\x02hi", 10, NULL, NULL);
        is_int(dm.remaining, 0, "demux: a NULL on_frame just skips");
    }
}

static void test_error_message(void)
{
    char buf[64];

    ty_docker_error_message(
        "{\"cause\":\"no such container\",\"message\":\"no such container: x\",\"response\":404}",
        buf,
        sizeof(buf));
    is_str(buf, "no such container: x", "error message: the message member");
    ty_docker_error_message("{\"message\":\"name in use\"}\n", buf, sizeof(buf));
    is_str(buf, "name in use", "error message: trailing newline after JSON");
    ty_docker_error_message("{\"error\":\"manifest unknown\"}", buf, sizeof(buf));
    is_str(buf, "manifest unknown", "error message: the error member of a pull stream");
    ty_docker_error_message("  page not found\n", buf, sizeof(buf));
    is_str(buf, "page not found", "error message: a raw body, trimmed");
    ty_docker_error_message("line one\nline two\r\n", buf, sizeof(buf));
    is_str(buf, "line one line two", "error message: a raw body on one line");
    ty_docker_error_message("{\"message\":42}", buf, sizeof(buf));
    is_str(buf, "{\"message\":42}", "error message: a non-string message gives the body");
    ty_docker_error_message(NULL, buf, sizeof(buf));
    is_str(buf, "", "error message: no body");
    ty_docker_error_message("", buf, sizeof(buf));
    is_str(buf, "", "error message: empty body");
    ty_docker_error_message("{\"message\":\"abcdefgh\"}", buf, 6);
    is_str(buf, "abcde", "error message: cut to fit");
    ty_docker_error_message("h\xc3\xa9llo", buf, 3);
    is_str(buf, "h", "error message: not cut inside a UTF-8 sequence");
    buf[0] = 'q';
    ty_docker_error_message("x", buf, 0);
    is_int(buf[0], 'q', "error message: n = 0 writes nothing");
    ty_docker_error_message("xyz", buf, 1);
    is_str(buf, "", "error message: n = 1 gives an empty string");
}

static void test_new_errors(struct ty_loop *loop)
{
    struct ty_docker *d = NULL;
    struct ty_error err = {0};
    char longp[200];
    int r;

    r = ty_docker_new(loop, "", &d, &err);
    is_int(r, -EINVAL, "new: empty socket path refused");
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    r = ty_docker_new(loop, longp, &d, &err);
    is_int(r, -ENAMETOOLONG, "new: socket path over sun_path refused");
    like(err.msg, "too long", "new: says why");
    ty_docker_free(NULL);
    ok(1, "free(NULL) is a no-op");
}

/* How many of this process's sockets lack FD_CLOEXEC (-1: cannot tell). */
static int sockets_without_cloexec(int *total)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;
    int bad = 0;

    *total = 0;
    if (!dir)
        return -1;
    while ((de = readdir(dir))) {
        char link[300], target[64];
        ssize_t n;
        int fd;
        if (de->d_name[0] == '.')
            continue;
        fd = (int)strtol(de->d_name, NULL, 10);
        if (fd == dirfd(dir))
            continue;
        (void)snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
        n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, "socket:", 7) != 0)
            continue;
        (*total)++;
        if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
            bad++;
    }
    closedir(dir);
    return bad;
}

/* ---- asynchronous requests ---- */

static void test_async(struct ty_loop *loop)
{
    struct ty_docker *d = NULL;
    struct ty_error err = {0};
    int r, total0, bad0;

    r = ty_docker_new(loop, sock_path, &d, &err);
    is_int(r, 0, "new: client for the test server");
    if (r < 0)
        return;
    is_str(ty_docker_socket(d), sock_path, "socket path kept");
    /* Including curl's own wakeup socketpair of each multi handle. */
    total0 = 0;
    bad0 = sockets_without_cloexec(&total0);

    /* A plain buffered GET. */
    {
        struct rec a = {0}, b = {0};
        ok(start(d, &a, "GET", "/json", NULL, NULL, TY_DOCKER_BUFFER) == 0, "GET /json started");
        ok(run_until(loop, &a.done, 5000), "GET /json finished");
        is_int(a.status, 200, "GET /json: status 200");
        like(ty_buf_str(&a.body), "\"Id\":\"abc123\"", "GET /json: buffered body");
        is_int(a.body.len, strlen(ty_buf_str(&a.body)), "GET /json: body length");
        is_str(a.error, "", "GET /json: no error");
        is_str(ty_buf_str(&a.data), ty_buf_str(&a.body), "GET /json: on_data saw the body");
        /* The next request reuses the kept-alive connection. */
        ok(start(d, &b, NULL, "/json", NULL, NULL, TY_DOCKER_BUFFER) == 0, "second GET started");
        ok(run_until(loop, &b.done, 5000), "second GET finished");
        like(ty_buf_str(&b.body), "\"conn_req\":2", "second GET reused the connection");
        {
            int total, bad = sockets_without_cloexec(&total);
            ok(total > total0 && bad == 0 && bad0 == 0,
               "every socket of the client is close-on-exec (%d sockets, %d without)",
               total,
               bad);
        }
        rec_release(&a);
        rec_release(&b);
    }
    /* Without TY_DOCKER_BUFFER on_done gets no body. */
    {
        struct rec a = {0};
        (void)start(d, &a, "GET", "/_ping", NULL, NULL, 0);
        ok(run_until(loop, &a.done, 5000), "GET /_ping finished");
        is_int(a.status, 200, "GET /_ping: 200");
        is_int(a.body.len, 0, "unbuffered: no body in on_done");
        is_str(ty_buf_str(&a.data), "OK", "unbuffered: on_data has it");
        rec_release(&a);
    }
    /* A chunked stream arrives in pieces before on_done. */
    {
        struct rec a = {0};
        (void)start(d, &a, "GET", "/stream", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        ok(run_until(loop, &a.done, 5000), "stream finished");
        is_int(a.status, 200, "stream: 200");
        is_str(ty_buf_str(&a.data), "piece-1\npiece-2\npiece-3\npiece-4\n", "stream: all pieces");
        ok(a.n_data >= 3, "stream: on_data called per piece (%d)", a.n_data);
        ok(a.done_usec - a.first_data_usec >= 300000,
           "stream: first data %lld ms before the end",
           (long long)(a.done_usec - a.first_data_usec) / 1000);
        is_int(a.data_after_done, 0, "stream: no data after on_done");
        rec_release(&a);
    }
    /* A multiplexed log stream, demuxed as it arrives in 5-byte chunks. */
    {
        struct rec a = {.demux = true};
        (void)start(d, &a, "GET", "/logs", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        ok(run_until(loop, &a.done, 5000), "logs finished");
        is_str(ty_buf_str(&a.demuxed[1]), "line one\nline two\n", "logs: stdout demuxed");
        is_str(ty_buf_str(&a.demuxed[2]), "warn\n", "logs: stderr demuxed");
        rec_release(&a);
    }
    /* POST with a JSON body, with no body, DELETE, extra header. */
    {
        struct rec a = {0}, b = {0}, c = {0}, e = {0};
        (void)start(d, &a, "POST", "/echo", "{\"Image\":\"x\"}", "X-Test: yes", TY_DOCKER_BUFFER);
        (void)start(d, &b, "POST", "/echo", NULL, NULL, TY_DOCKER_BUFFER);
        (void)start(d, &c, "DELETE", "/echo", NULL, NULL, TY_DOCKER_BUFFER);
        (void)start(d, &e, "GET", "/error", NULL, NULL, TY_DOCKER_BUFFER);
        ok(run_until(loop, &a.done, 5000) && run_until(loop, &b.done, 5000) &&
               run_until(loop, &c.done, 5000) && run_until(loop, &e.done, 5000),
           "four parallel requests finished");
        like(ty_buf_str(&a.body), "method=POST\n", "POST: method");
        like(ty_buf_str(&a.body), "ctype=application/json\n", "POST: JSON content type");
        like(ty_buf_str(&a.body), "clen=13\n", "POST: content length");
        like(ty_buf_str(&a.body), "body={\"Image\":\"x\"}", "POST: body delivered");
        like(ty_buf_str(&a.body), "xtest=yes\n", "POST: extra header sent");
        like(ty_buf_str(&b.body), "method=POST\n", "empty POST: method");
        like(ty_buf_str(&b.body), "clen=0\n", "empty POST: Content-Length: 0");
        like(ty_buf_str(&b.body), "ctype=\n", "empty POST: no content type");
        like(ty_buf_str(&c.body), "method=DELETE\n", "DELETE: method");
        is_int(e.status, 404, "error: status 404");
        {
            char m[128];
            ty_docker_error_message(ty_buf_str(&e.body), m, sizeof(m));
            is_str(m, "no such container: x", "error: message from the body");
        }
        rec_release(&a);
        rec_release(&b);
        rec_release(&c);
        rec_release(&e);
    }
    /* Bad arguments. */
    {
        struct rec a = {0};
        struct ty_error e2 = {0};
        struct ty_docker_callbacks cb = rec_cb(&a);
        r = ty_docker_request(d, "GET", "containers/json", NULL, NULL, 0, &cb, NULL, &e2);
        is_int(r, -EINVAL, "request: a path without '/' refused");
        like(e2.msg, "invalid API path", "request: says why");
        r = ty_docker_request(d, "GET", "/json", NULL, "X-Bad\r\nY: z", 0, &cb, NULL, &e2);
        is_int(r, -EINVAL, "request: a header with CRLF refused");
        r = ty_docker_request(d, "G T", "/json", NULL, NULL, 0, &cb, NULL, &e2);
        is_int(r, -EINVAL, "request: a bad method refused");
    }
    /* The server closes without answering. */
    {
        struct rec a = {0};
        (void)start(d, &a, "GET", "/close", NULL, NULL, TY_DOCKER_BUFFER);
        ok(run_until(loop, &a.done, 5000), "closed connection: finished");
        is_int(a.status, 0, "closed connection: status 0");
        ok(a.error[0] != '\0', "closed connection: error '%s'", a.error);
        is_int(a.body.len, 0, "closed connection: empty body");
        rec_release(&a);
    }
    /* Cancel from outside, after data arrived. */
    {
        struct rec a = {0};
        (void)start(d, &a, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        for (int i = 0; i < 250 && a.n_data < 2; i++)
            run_for(loop, 20);
        ok(a.n_data >= 2, "cancel: stream was flowing (%d pieces)", a.n_data);
        ty_docker_cancel(d, a.req);
        int before = a.n_data;
        run_for(loop, 250);
        is_int(a.n_done, 0, "cancel: on_done not called");
        is_int(a.n_data, before, "cancel: no data after cancel");
        rec_release(&a);
    }
    /* Cancel from inside its own on_data. */
    {
        struct rec a = {.cancel_after = 3};
        (void)start(d, &a, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        ok(run_until(loop, &a.done, 5000), "cancel in on_data: reached");
        run_for(loop, 250);
        is_int(a.n_data, 3, "cancel in on_data: no more data");
        is_int(a.n_done, 0, "cancel in on_data: on_done not called");
        rec_release(&a);
    }
    /* on_done starts a new request and cancels another one. */
    {
        struct rec a = {0}, chained = {0}, victim = {0};
        (void)start(d, &victim, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        a.chain = &chained;
        a.cancel_other = &victim.req;
        (void)start(d, &a, "GET", "/slow?ms=100", NULL, NULL, TY_DOCKER_BUFFER);
        ok(run_until(loop, &a.done, 5000), "re-entrant on_done: first finished");
        ok(run_until(loop, &chained.done, 5000), "re-entrant on_done: chained request finished");
        is_int(chained.status, 200, "re-entrant on_done: chained request 200");
        run_for(loop, 150);
        ok(victim.n_data > 0 && victim.n_done == 0, "re-entrant on_done: victim cancelled");
        rec_release(&a);
        rec_release(&chained);
        rec_release(&victim);
    }
    ty_docker_free(d);
}

/* A request started inside on_data: curl forbids adding handles there. */
struct nested {
    struct ty_docker *d;
    struct rec inner;
    bool started;
    int r;
};

static void nested_data(void *ctx, const char *p, size_t n)
{
    struct nested *s = ctx;
    if (!s->started) {
        struct ty_docker_callbacks cb = rec_cb(&s->inner);
        s->started = true;
        s->inner.d = s->d;
        s->r = ty_docker_request(
            s->d, "GET", "/json", NULL, NULL, TY_DOCKER_BUFFER, &cb, &s->inner.req, NULL);
    }
}

static void test_nested(struct ty_loop *loop)
{
    struct ty_docker *d = NULL;
    struct nested s = {0};
    struct ty_docker_callbacks cb = {.on_data = nested_data, .ctx = &s};
    struct ty_docker_req *outer = NULL;

    if (ty_docker_new(loop, sock_path, &d, NULL) < 0)
        BAIL_OUT("cannot create a client for %s", sock_path);
    s.d = d;
    (void)ty_docker_request(
        d, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT, &cb, &outer, NULL);
    ok(run_until(loop, &s.inner.done, 5000), "request made inside on_data finished");
    is_int(s.r, 0, "request inside on_data accepted");
    is_int(s.inner.status, 200, "request inside on_data: 200");
    like(ty_buf_str(&s.inner.body), "abc123", "request inside on_data: body");
    ty_docker_cancel(d, outer);
    rec_release(&s.inner);
    ty_docker_free(d);
}

static void test_unreachable(struct ty_loop *loop)
{
    _cleanup_free_ char *missing = xasprintf("%s/missing.sock", tmpdir);
    _cleanup_free_ char *deaf = xasprintf("%s/deaf.sock", tmpdir);
    struct ty_docker *d = NULL;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    if (ty_docker_new(loop, missing, &d, NULL) < 0)
        BAIL_OUT("cannot create a client for %s", missing);
    {
        struct rec a = {0};
        ok(start(d, &a, "GET", "/_ping", NULL, NULL, TY_DOCKER_BUFFER) == 0,
           "missing socket: request accepted (no I/O yet)");
        ok(run_until(loop, &a.done, 5000), "missing socket: on_done called");
        is_int(a.status, 0, "missing socket: status 0");
        like(a.error, "cannot connect to", "missing socket: error names the failure");
        like(a.error, "No such file", "missing socket: error says why");
        like(a.error, "missing.sock", "missing socket: error names the socket");
        rec_release(&a);
    }
    {
        struct ty_docker_call c = {.method = "GET", .path = "/_ping"};
        ok(ty_docker_call(d, &c, 2000, NULL) == 0, "missing socket: blocking call runs");
        is_int(c.status, 0, "missing socket: blocking call status 0");
        like(c.error, "No such file", "missing socket: blocking call error");
        is_str(c.response, "", "missing socket: empty response");
        ty_docker_batch_release(&c, 1);
    }
    ty_docker_free(d);

    /* A socket that exists but nobody accepts on. */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", deaf);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        ok(0, "bind deaf socket");
        return;
    }
    if (ty_docker_new(loop, deaf, &d, NULL) == 0) {
        struct rec a = {0};
        (void)start(d, &a, "GET", "/_ping", NULL, NULL, 0);
        ok(run_until(loop, &a.done, 5000), "refused socket: on_done called");
        is_int(a.status, 0, "refused socket: status 0");
        like(a.error, "Connection refused", "refused socket: error says why");
        rec_release(&a);
        ty_docker_free(d);
    }
    close(fd);
}

static void test_free_in_flight(struct ty_loop *loop)
{
    struct ty_docker *d = NULL;

    /* Free from outside with streams and slow requests in flight. */
    if (ty_docker_new(loop, sock_path, &d, NULL) == 0) {
        struct rec a = {0}, b = {0}, c = {0}, e = {0};
        (void)start(d, &a, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        (void)start(d, &b, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        (void)start(d, &c, "GET", "/slow?ms=2000", NULL, NULL, 0);
        (void)start(d, &e, "GET", "/json", NULL, NULL, 0); /* never even connected */
        bool flowing = false;
        for (int i = 0; i < 100 && !flowing; i++) {
            run_for(loop, 20);
            flowing = a.n_data > 0 && b.n_data > 0;
        }
        ok(flowing, "free in flight: streams flowing");
        ty_docker_free(d);
        run_for(loop, 200); /* a watcher or timer left behind would touch freed memory */
        is_int(a.n_done + b.n_done + c.n_done, 0, "free in flight: no on_done");
        rec_release(&a);
        rec_release(&b);
        rec_release(&c);
        rec_release(&e);
    }
    /* Free without ever running the loop. */
    if (ty_docker_new(loop, sock_path, &d, NULL) == 0) {
        struct rec a = {0};
        (void)start(d, &a, "GET", "/json", NULL, NULL, 0);
        ty_docker_free(d);
        run_for(loop, 50);
        is_int(a.n_done, 0, "free before the loop ran: no on_done");
    }
    /* Free from inside on_done, with another request in flight. */
    if (ty_docker_new(loop, sock_path, &d, NULL) == 0) {
        struct rec a = {.free_in_done = true}, b = {0};
        (void)start(d, &b, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        (void)start(d, &a, "GET", "/slow?ms=100", NULL, NULL, 0);
        ok(run_until(loop, &a.done, 5000), "free in on_done: reached");
        run_for(loop, 200);
        is_int(b.n_done, 0, "free in on_done: the other request gets no on_done");
        rec_release(&a);
        rec_release(&b);
    }
    /* Free from inside on_data. */
    if (ty_docker_new(loop, sock_path, &d, NULL) == 0) {
        struct rec a = {.free_in_data = true}, b = {0};
        (void)start(d, &b, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        (void)start(d, &a, "GET", "/forever", NULL, NULL, TY_DOCKER_NO_TIMEOUT);
        ok(run_until(loop, &a.done, 5000), "free in on_data: reached");
        run_for(loop, 200);
        is_int(a.n_done + b.n_done, 0, "free in on_data: no on_done");
        is_int(a.n_data, 1, "free in on_data: no data after free");
        rec_release(&a);
        rec_release(&b);
    }
}

/* ---- blocking batches ---- */

static void test_batch(struct ty_loop *loop)
{
    struct ty_docker *d = NULL;
    int64_t t0, ms;

    /* Blocking calls do not need a loop. */
    if (ty_docker_new(NULL, sock_path, &d, NULL) < 0) {
        ok(0, "new without a loop");
        return;
    }
    {
        struct rec a = {0};
        struct ty_error err = {0};
        struct ty_docker_callbacks cb = rec_cb(&a);
        is_int(ty_docker_request(d, "GET", "/json", NULL, NULL, 0, &cb, NULL, &err),
               -EINVAL,
               "no loop: asynchronous request refused");
    }
    {
        struct ty_docker_call c[5];
        bool all = true;
        for (int i = 0; i < 5; i++)
            c[i] = (struct ty_docker_call){.method = "GET", .path = "/slow?ms=400"};
        t0 = ty_mono_usec();
        is_int(ty_docker_batch_run(d, c, 5, 10000, NULL), 0, "batch of 5: runs");
        ms = (ty_mono_usec() - t0) / 1000;
        for (int i = 0; i < 5; i++)
            all = all && c[i].status == 200 && strcmp(c[i].response, "late") == 0 &&
                  c[i].response_len == 4;
        ok(all, "batch of 5: every call 200 with its body");
        ok(ms < 1500, "batch of 5: in parallel (%lld ms for 5 x 400 ms)", (long long)ms);
        ty_docker_batch_release(c, 5);
        ok(c[0].response == NULL, "batch release clears the responses");
    }
    {
        struct ty_docker_call c[3] = {
            {.method = "GET", .path = "/json"},
            {.method = "GET", .path = "/slow?ms=3000"},
            {.method = "GET", .path = "no-slash"},
        };
        t0 = ty_mono_usec();
        is_int(ty_docker_batch_run(d, c, 3, 600, NULL), 0, "batch deadline: runs");
        ms = (ty_mono_usec() - t0) / 1000;
        is_int(c[0].status, 200, "batch deadline: the fast call answered");
        like(c[0].response, "abc123", "batch deadline: its body");
        is_int(c[1].status, 0, "batch deadline: the slow call status 0");
        like(c[1].error, "timed out", "batch deadline: the slow call timed out");
        is_str(c[1].response, "", "batch deadline: no body for it");
        is_int(c[2].status, 0, "batch: a bad path gets status 0");
        like(c[2].error, "invalid API path", "batch: a bad path says why");
        ok(ms >= 550 && ms < 2000,
           "batch deadline: returned at the deadline (%lld ms)",
           (long long)ms);
        ty_docker_batch_release(c, 3);
    }
    {
        struct ty_docker_call c = {.method = "POST",
                                   .path = "/echo",
                                   .body = "{\"a\":[1,2]}",
                                   .extra_header = "X-Test: batch"};
        is_int(ty_docker_call(d, &c, 5000, NULL), 0, "blocking POST runs");
        is_int(c.status, 200, "blocking POST: 200");
        like(c.response, "body={\"a\":[1,2]}", "blocking POST: body delivered");
        like(c.response, "ctype=application/json", "blocking POST: content type");
        like(c.response, "xtest=batch", "blocking POST: extra header");
        is_int(c.response_len, strlen(c.response), "blocking POST: response_len");
        ty_docker_batch_release(&c, 1);
    }
    {
        struct ty_docker_call c = {.method = "GET", .path = "/error"};
        char m[64];
        (void)ty_docker_call(d, &c, 5000, NULL);
        is_int(c.status, 404, "blocking 404: status");
        ty_docker_error_message(c.response, m, sizeof(m));
        is_str(m, "no such container: x", "blocking 404: message");
        ty_docker_batch_release(&c, 1);
    }
    is_int(ty_docker_batch_run(d, NULL, 0, 100, NULL), 0, "empty batch: 0");
    ty_docker_free(d);

    /* A batch on a client that also has a loop leaves the loop alone. */
    if (ty_docker_new(loop, sock_path, &d, NULL) == 0) {
        struct rec a = {0};
        struct ty_docker_call c = {.method = "GET", .path = "/slow?ms=200"};
        (void)start(d, &a, "GET", "/json", NULL, NULL, TY_DOCKER_BUFFER);
        (void)ty_docker_call(d, &c, 5000, NULL);
        is_int(c.status, 200, "batch beside async: 200");
        ok(!a.done, "batch beside async: no async callback ran during the batch");
        {
            int total, bad = sockets_without_cloexec(&total);
            is_int(bad, 0, "batch beside async: all %d sockets close-on-exec", total);
        }
        ok(run_until(loop, &a.done, 5000), "batch beside async: async finishes on the loop");
        ty_docker_batch_release(&c, 1);
        rec_release(&a);
        ty_docker_free(d);
    }
}

/* ---- the container engine's asynchronous parts ---- */

struct ecall {
    bool done;
    int n;
    long status;
    char error[256];
    int64_t at;
};

static void ecall_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct ecall *e = ctx;
    e->done = true;
    e->n++;
    e->status = status;
    e->at = ty_mono_usec();
    (void)snprintf(e->error, sizeof(e->error), "%s", error ? error : "");
}

struct eopen {
    bool done, inside;
    int r, calls;
    char error[512];
};

static void eopen_done(void *ctx, int r, const char *error, const char *started)
{
    struct eopen *o = ctx;
    o->done = true;
    o->calls++;
    o->r = r;
    (void)snprintf(o->error, sizeof(o->error), "%s", error ? error : "");
}

struct eimage {
    bool done;
    int r;
    char error[512];
    int64_t at;
};

static void eimage_done(void *ctx, int r, const char *error)
{
    struct eimage *i = ctx;
    i->done = true;
    i->r = r;
    i->at = ty_mono_usec();
    (void)snprintf(i->error, sizeof(i->error), "%s", error ? error : "");
}

struct egc {
    bool done;
    int removed;
};

static void egc_done(void *ctx, int removed)
{
    struct egc *g = ctx;
    g->done = true;
    g->removed = removed;
}

static void test_engine_call(struct ty_loop *loop, struct ty_docker *d)
{
    struct ty_engine_call call;
    struct ecall slow = {0}, fast = {0};
    struct ty_engine_call fcall;
    int64_t t0 = ty_mono_usec();

    is_int(ty_engine_call_start(
               &call, d, loop, "GET", "/slow?ms=3000", NULL, NULL, 300, ecall_done, &slow, NULL),
           0,
           "engine call: started");
    ok(ty_engine_call_busy(&call), "engine call: busy while in flight");
    (void)ty_engine_call_start(
        &fcall, d, loop, "GET", "/json", NULL, NULL, 5000, ecall_done, &fast, NULL);
    ok(!slow.done && !fast.done, "engine call: no callback within the call");
    ok(run_until(loop, &slow.done, 5000), "engine call: the deadline ends it");
    ok(fast.done && fast.at < slow.at, "engine call: another request finished meanwhile");
    is_int(fast.status, 200, "engine call: the other request 200");
    is_int(slow.status, 0, "engine call: status 0 at the deadline");
    like(slow.error, "timed out after 300 ms", "engine call: says it timed out");
    ok(slow.at - t0 < 2000 * 1000, "engine call: at its deadline, not curl's");
    ok(!ty_engine_call_busy(&call), "engine call: not busy afterwards");
    run_for(loop, 100);
    is_int(slow.n, 1, "engine call: its callback ran once");

    slow = (struct ecall){0};
    (void)ty_engine_call_start(
        &call, d, loop, "GET", "/slow?ms=200", NULL, NULL, 5000, ecall_done, &slow, NULL);
    ty_engine_call_cancel(&call);
    run_for(loop, 400);
    ok(!slow.done, "engine call: cancelled, no callback");
}

static void test_engine_open(struct ty_loop *loop)
{
    _cleanup_free_ char *host = xasprintf("unix://%s", sock_path);
    _cleanup_free_ char *missing = xasprintf("unix://%s/missing.sock", tmpdir);
    const char *old = getenv("DOCKER_HOST");
    _cleanup_free_ char *saved = xstrdup(old);
    struct ty_engine eng = {0};
    struct eopen o = {0};
    struct ty_error err = {0};

    (void)setenv("DOCKER_HOST", host, 1);
    is_int(ty_engine_open(&eng, loop, eopen_done, &o, NULL), 0, "open: under way");
    ok(!o.done, "open: no callback within the call");
    ok(run_until(loop, &o.done, 5000), "open: ended on the loop");
    is_int(o.r, 0, "open: DOCKER_HOST answers the ping");
    ok(eng.api != NULL, "open: client connected");
    is_str(eng.socket, sock_path, "open: the socket in use");
    ty_engine_close(&eng);
    ok(eng.api == NULL && eng.socket == NULL, "close: all released");

    eng = (struct ty_engine){0};
    o = (struct eopen){0};
    (void)setenv("DOCKER_HOST", missing, 1);
    (void)ty_engine_open(&eng, loop, eopen_done, &o, NULL);
    ok(run_until(loop, &o.done, 5000), "open, missing socket: ended");
    is_int(o.r, -EHOSTUNREACH, "open, missing socket: EHOSTUNREACH");
    like(o.error, "does not answer", "open, missing socket: says why");
    ty_engine_close(&eng);

    eng = (struct ty_engine){0};
    o = (struct eopen){0};
    (void)setenv("DOCKER_HOST", host, 1);
    (void)ty_engine_open(&eng, loop, eopen_done, &o, NULL);
    ty_engine_close(&eng); /* closed while opening */
    run_for(loop, 200);
    is_int(o.calls, 0, "open, closed at once: no callback");

    (void)setenv("DOCKER_HOST", "tcp://127.0.0.1:2375", 1);
    eng = (struct ty_engine){0};
    is_int(ty_engine_open(&eng, loop, eopen_done, &o, &err),
           -EPROTONOSUPPORT,
           "open: tcp:// refused at once");
    ty_engine_close(&eng);
    if (saved)
        (void)setenv("DOCKER_HOST", saved, 1);
    else
        (void)unsetenv("DOCKER_HOST");
}

static void test_engine_chores(struct ty_loop *loop, struct ty_docker *d)
{
    struct ty_engine eng = {.api = d, .loop = loop, .service_pidfd = -1};
    struct eimage img = {0};
    struct ecall other = {0};
    struct ty_engine_call ocall;
    struct egc gc = {0};

    is_int(ty_engine_ensure_image(&eng, "present", 5000, eimage_done, &img, NULL),
           0,
           "image present: under way");
    ok(!img.done, "image present: no callback within the call");
    ok(run_until(loop, &img.done, 5000), "image present: ended");
    is_int(img.r, 0, "image present: 0");

    img = (struct eimage){0};
    (void)ty_engine_ensure_image(&eng, "slow", 5000, eimage_done, &img, NULL);
    (void)ty_engine_call_start(
        &ocall, d, loop, "GET", "/json", NULL, NULL, 5000, ecall_done, &other, NULL);
    ok(run_until(loop, &img.done, 5000), "slow inspect: ended");
    ok(other.done && other.at < img.at, "slow inspect: the loop ran other requests meanwhile");
    is_int(img.r, 0, "slow inspect: 0");

    img = (struct eimage){0};
    (void)ty_engine_ensure_image(&eng, "good", 5000, eimage_done, &img, NULL);
    ok(run_until(loop, &img.done, 5000), "pull: ended");
    is_int(img.r, 0, "pull: 404 then a clean progress stream: 0");

    img = (struct eimage){0};
    (void)ty_engine_ensure_image(&eng, "broken", 5000, eimage_done, &img, NULL);
    ok(run_until(loop, &img.done, 5000), "pull error: ended");
    is_int(img.r, -ENOENT, "pull error: ENOENT");
    like(img.error, "manifest unknown", "pull error: the stream's last error");
    like(img.error, "image 'broken'", "pull error: names the image");

    img = (struct eimage){0};
    (void)ty_engine_ensure_image(&eng, "present", 5000, eimage_done, &img, NULL);
    is_int(ty_engine_ensure_image(&eng, "present", 5000, eimage_done, &img, NULL),
           -EBUSY,
           "image: one at a time");
    ty_engine_chores_cancel(&eng);
    run_for(loop, 200);
    ok(!img.done && eng.pull == NULL, "image cancelled: no callback, nothing left");

    is_int(ty_engine_collect_garbage(&eng, egc_done, &gc), 0, "garbage: under way");
    ok(!gc.done, "garbage: no callback within the call");
    ok(run_until(loop, &gc.done, 5000), "garbage: ended");
    is_int(gc.removed, 1, "garbage: the dead owner's container removed, the other kept");
    ok(eng.gc == NULL, "garbage: nothing left");
}

static void test_pick_subnet(void)
{
    json_t *nets = NULL;
    char subnet[32], prefix[24];
    const char *text = "[{\"IPAM\":{\"Config\":[{\"Subnet\":\"198.18.1.0/24\"}]}},"
                       "{\"IPAM\":{\"Config\":[{\"Subnet\":\"198.18.2.0/23\"}]}}]";

    if (ty_json_parse(text, strlen(text), &nets, NULL) < 0)
        BAIL_OUT("cannot parse the test's network list");
    is_int(ty_engine_pick_subnet(nets, 1, subnet, sizeof(subnet), prefix, sizeof(prefix), NULL),
           0,
           "subnet: one is free");
    is_str(subnet, "198.18.4.0/24", "subnet: skips those in use (a /23 covers two)");
    is_str(prefix, "198.18.4.", "subnet: its prefix");
    json_decref(nets);
}

static void test_base64_padded(void)
{
    _cleanup_free_ char *a = ty_base64url_encode_padded("\xfb\xff", 2);
    _cleanup_free_ char *b = ty_base64url_encode_padded("abcd", 4);
    is_str(a, "-_8=", "base64url padded: URL alphabet, padding kept");
    is_str(b, "YWJjZA==", "base64url padded: two '='");
}

static void test_engine(struct ty_loop *loop)
{
    struct ty_docker *d = NULL;

    if (ty_docker_new(loop, sock_path, &d, NULL) < 0)
        BAIL_OUT("cannot create a client for %s", sock_path);
    test_engine_call(loop, d);
    test_engine_chores(loop, d);
    ty_docker_free(d);
    test_engine_open(loop);
}

int main(void)
{
    struct ty_loop *loop;

    signal(SIGPIPE, SIG_IGN);
    test_demux();
    test_error_message();
    test_pick_subnet();
    test_base64_padded();

    (void)snprintf(tmpdir, sizeof(tmpdir), "/tmp/ty-dapi-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        ok(0, "mkdtemp");
        return done_testing();
    }
    (void)snprintf(sock_path, sizeof(sock_path), "%s/api.sock", tmpdir);
    loop = ty_loop_new();
    test_new_errors(loop);
    if (start_server() < 0) {
        ok(0, "start the test HTTP server");
    } else {
        test_async(loop);
        test_nested(loop);
        test_unreachable(loop);
        test_free_in_flight(loop);
        test_batch(loop);
        test_engine(loop);
    }
    stop_server();
    ty_loop_free(loop);
    {
        _cleanup_free_ char *a = xasprintf("%s/missing.sock", tmpdir);
        _cleanup_free_ char *b = xasprintf("%s/deaf.sock", tmpdir);
        (void)unlink(sock_path);
        (void)unlink(a);
        (void)unlink(b);
        (void)rmdir(tmpdir);
    }
    return done_testing();
}
