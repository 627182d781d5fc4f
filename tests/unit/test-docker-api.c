/* SPDX-License-Identifier: Apache-2.0
 * test-docker-api.c: the Docker Engine API client (docker-api.h): the log stream demuxer at
 * every split, error-body messages, and the HTTP side against a real local HTTP/1.1 server
 * on a unix socket (docker-test-server.h): asynchronous requests on a ty_loop, streaming,
 * cancel, re-entrant callbacks, blocking batches with a deadline, unreachable sockets, and
 * freeing with requests in flight. test-container-engine.c tests the engine on top of it. */
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
#include "buf.h"
#include "docker-api.h"
#include "docker-test-server.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "tap.h"
#include "timeutil.h"

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

    r = ty_docker_new(loop, dts_sock_path, &d, &err);
    is_int(r, 0, "new: client for the test server");
    if (r < 0)
        return;
    is_str(ty_docker_socket(d), dts_sock_path, "socket path kept");
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

    if (ty_docker_new(loop, dts_sock_path, &d, NULL) < 0)
        BAIL_OUT("cannot create a client for %s", dts_sock_path);
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
    _cleanup_free_ char *missing = xasprintf("%s/missing.sock", dts_tmpdir);
    _cleanup_free_ char *deaf = xasprintf("%s/deaf.sock", dts_tmpdir);
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
    if (ty_docker_new(loop, dts_sock_path, &d, NULL) == 0) {
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
    if (ty_docker_new(loop, dts_sock_path, &d, NULL) == 0) {
        struct rec a = {0};
        (void)start(d, &a, "GET", "/json", NULL, NULL, 0);
        ty_docker_free(d);
        run_for(loop, 50);
        is_int(a.n_done, 0, "free before the loop ran: no on_done");
    }
    /* Free from inside on_done, with another request in flight. */
    if (ty_docker_new(loop, dts_sock_path, &d, NULL) == 0) {
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
    if (ty_docker_new(loop, dts_sock_path, &d, NULL) == 0) {
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
    if (ty_docker_new(NULL, dts_sock_path, &d, NULL) < 0) {
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
    if (ty_docker_new(loop, dts_sock_path, &d, NULL) == 0) {
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

int main(void)
{
    struct ty_loop *loop;

    signal(SIGPIPE, SIG_IGN);
    test_demux();
    test_error_message();

    if (dts_setup() < 0)
        BAIL_OUT("cannot make a scratch folder in /tmp");
    loop = ty_loop_new();
    test_new_errors(loop);
    if (start_server() < 0)
        BAIL_OUT("cannot start the test HTTP server on %s", dts_sock_path);
    test_async(loop);
    test_nested(loop);
    test_unreachable(loop);
    test_free_in_flight(loop);
    test_batch(loop);
    stop_server();
    ty_loop_free(loop);
    dts_teardown();
    return done_testing();
}
