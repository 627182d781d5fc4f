/* SPDX-License-Identifier: Apache-2.0
 * test-container-engine.c: the container engine's asynchronous parts (container-engine.h)
 * against the test HTTP server of docker-test-server.h: requests with a loop-timer deadline,
 * connecting (DOCKER_HOST, a missing socket, closed before it finished), images (present,
 * slow, pulled, failing, one at a time, cancelled), garbage collection, subnets, and the
 * padded base64 of registry credentials. */
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
#include "docker-test-server.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "tap.h"
#include "timeutil.h"

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
    _cleanup_free_ char *host = xasprintf("unix://%s", dts_sock_path);
    _cleanup_free_ char *missing = xasprintf("unix://%s/missing.sock", dts_tmpdir);
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
    is_str(eng.socket, dts_sock_path, "open: the socket in use");
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

    if (ty_docker_new(loop, dts_sock_path, &d, NULL) < 0)
        BAIL_OUT("cannot create a client for %s", dts_sock_path);
    test_engine_call(loop, d);
    test_engine_chores(loop, d);
    ty_docker_free(d);
    test_engine_open(loop);
}

int main(void)
{
    struct ty_loop *loop;

    signal(SIGPIPE, SIG_IGN);
    test_pick_subnet();
    test_base64_padded();
    if (dts_setup() < 0)
        BAIL_OUT("cannot make a scratch folder in /tmp");
    if (start_server() < 0)
        BAIL_OUT("cannot start the test HTTP server on %s", dts_sock_path);
    loop = ty_loop_new();
    test_engine(loop);
    stop_server();
    ty_loop_free(loop);
    dts_teardown();
    return done_testing();
}
