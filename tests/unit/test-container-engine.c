/* SPDX-License-Identifier: Apache-2.0
 * test-container-engine.c: the container engine's asynchronous parts (container-engine.h)
 * against the test HTTP server of docker-test-server.h: requests with a loop-timer deadline,
 * connecting (DOCKER_HOST, a missing socket, closed before it finished), images (present,
 * slow, pulled, failing, one at a time, cancelled), garbage collection, subnets, and the
 * padded base64 of registry credentials. And the container runtime itself on that server:
 * how a replica's end is reported (137 with and without an OOM kill, a container removed
 * under it), a restart in place (the old container removed, an identical one created,
 * nothing of the old run left), a retry on a new runtime (same names, leftovers
 * removed first), and containers run with the engine's init, or without it (once said)
 * when the engine has none. */
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
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "base64.h"
#include "buf.h"
#include "container-engine.h"
#include "container-internal.h"
#include "container-rt-test.h"
#include "container.h"
#include "docker-api.h"
#include "docker-internal.h"
#include "docker-test-server.h"
#include "fdutil.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "plan.h"
#include "runtime.h"
#include "spec.h"
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
    is_int(gc.removed,
           2,
           "garbage: the dead owners' containers removed (both label forms); another PID "
           "namespace's, one not trainyard's and one not named as trainyard names its own kept");
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

/* ---- the runtime (its ends learnt: test-container-exits.c) ---- */

/* How ends are reported: exit 137 without and with the engine's OOMKilled, and a container
 * removed under its wait. */
static void test_runtime_ends(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-kill", "rt-oom", "rt-gone");
    struct ty_cluster_plan *plan = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;
    struct container_rt *c;

    if (ty_plan_build(job, NULL, NULL, &plan, NULL) < 0)
        BAIL_OUT("plan");
    rt = rt_ready(loop, plan, &e);
    c = (struct container_rt *)rt;
    for (size_t i = 0; i < 3; i++)
        is_int(rt->ops->launch(rt, &plan->replicas[i], rt_env, NULL), 0, "ends: launch %zu", i);
    ok(until_exited(loop, &e, 0, 1) && until_exited(loop, &e, 1, 1) && until_exited(loop, &e, 2, 1),
       "ends: every replica exited");
    is_int(e.st[0].kind, TY_EXIT_CODE, "ends: 137, no OOM kill recorded: an exit status");
    is_int(e.st[0].code, 137, "ends: ... 137, which the supervisor reads as SIGKILL");
    is_int(e.st[1].kind, TY_EXIT_OOM, "ends: 137 with the engine's OOMKilled: out of memory");
    is_int(e.st[1].code, 137, "ends: ... 137");
    is_int(e.st[2].kind, TY_EXIT_LOST, "ends: removed under its wait: lost");
    like(e.st[2].detail, "removed outside trainyard", "ends: ... says so");
    like(e.out[0], "output of rt-kill~1", "ends: output delivered");
    ok(e.started[0] == 1 && e.started[1] == 1 && e.started[2] == 1, "ends: each started once");
    ok(run_idle(&c->reps[0]) && run_idle(&c->reps[1]) && run_idle(&c->reps[2]),
       "ends: no request, timer or watch left of the runs");
    rt_end(loop, rt, &e);
    ty_plan_free(plan);
    ty_job_free(job);
}

/* A restart in place, then a retry on a new runtime with the same plan. */
static void forget_requests(void)
{
    _cleanup_free_ char *path = xasprintf("%s/requests.log", dts_tmpdir);
    (void)unlink(path);
}

static void test_runtime_relaunch(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-once", NULL, NULL);
    struct ty_cluster_plan *plan = NULL;
    struct rtev e = {0}, e2 = {0};
    struct ty_runtime *rt;
    struct container_rt *c;
    struct ty_error err = {0};
    _cleanup_free_ char *name = NULL, *host = NULL, *log = NULL, *b1 = NULL, *b2 = NULL;
    _cleanup_free_ char *del = NULL, *net_del = NULL, *log2 = NULL, *create = NULL;
    const char *first_create, *second_create, *removal;

    if (ty_plan_build(job, NULL, NULL, &plan, NULL) < 0)
        BAIL_OUT("plan");
    forget_requests();
    rt = rt_ready(loop, plan, &e);
    c = (struct container_rt *)rt;
    name = xstrdup(c->reps[0].name);
    host = xstrdup(plan->replicas[0].host);
    is_int(rt->ops->launch(rt, &plan->replicas[0], rt_env, NULL), 0, "relaunch: first launch");
    is_int(rt->ops->launch(rt, &plan->replicas[0], rt_env, &err),
           -EBUSY,
           "relaunch: not while the run goes on");
    ok(until_exited(loop, &e, 0, 1), "relaunch: the first run ended");
    is_int(e.st[0].code, 137, "relaunch: the first run 137");
    ok(run_idle(&c->reps[0]), "relaunch: nothing of the first run left");

    is_int(rt->ops->launch(rt, &plan->replicas[0], rt_env, NULL), 0, "relaunch: launched again");
    ok(until_exited(loop, &e, 0, 2), "relaunch: the second run ended");
    is_int(e.started[0], 2, "relaunch: started twice");
    is_int(e.st[0].kind, TY_EXIT_CODE, "relaunch: the second run's end");
    is_int(e.st[0].code, 0, "relaunch: ... is its own (0)");
    like(e.out[0], "output of rt-once~2", "relaunch: the new container's output");
    ok(run_idle(&c->reps[0]), "relaunch: nothing of the second run left");

    log = scratch("requests.log");
    del = xasprintf("DELETE /containers/%s?force=1&v=1", name);
    create = xasprintf("POST /containers/create?name=%s\n", name);
    first_create = strstr(log, create);
    second_create = first_create ? strstr(first_create + 1, create) : NULL;
    removal = first_create ? strstr(first_create, del) : NULL;
    ok(second_create && removal && removal < second_create,
       "relaunch: the old container removed before the new one is created");
    {
        _cleanup_free_ char *f1 = xasprintf("create-%s-1.json", name);
        _cleanup_free_ char *f2 = xasprintf("create-%s-2.json", name);
        b1 = scratch(f1);
        b2 = scratch(f2);
    }
    ok(b1[0] && strcmp(b1, b2) == 0, "relaunch: the same create body, byte for byte");
    like(b1, "CLUSTER_SPEC=", "relaunch: ... with the environment");
    is_str(plan->replicas[0].host, host, "relaunch: the same host");
    rt_end(loop, rt, &e);

    /* A retry: a new runtime on the same plan. */
    forget_requests();
    rt = rt_ready(loop, plan, &e2);
    c = (struct container_rt *)rt;
    is_str(plan->replicas[0].host, host, "retry: the same host name");
    is_str(c->reps[0].name, name, "retry: the same container name");
    log2 = scratch("requests.log");
    net_del = xasprintf("DELETE /networks/%s?force=1", c->network);
    ok(strstr(log2, del) && strstr(log2, net_del) && strstr(log2, "POST /networks/create") &&
           strstr(log2, net_del) < strstr(log2, "POST /networks/create"),
       "retry: what the attempt before may have left is removed before the network is made");
    rt_end(loop, rt, &e2);
    ty_plan_free(plan);
    ty_job_free(job);
}

/* The engine goes away under a running replica: lost; back again, the replica restarts;
 * gone for good, its restart fails (after one try to reach it again). */
static void test_runtime_engine_gone(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-long", NULL, NULL);
    struct ty_cluster_plan *plan = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;
    struct container_rt *c;

    if (ty_plan_build(job, NULL, NULL, &plan, NULL) < 0)
        BAIL_OUT("plan");
    rt = rt_ready(loop, plan, &e);
    c = (struct container_rt *)rt;
    (void)rt->ops->launch(rt, &plan->replicas[0], rt_env, NULL);
    {
        int64_t end = ty_mono_usec() + 5 * INT64_C(1000000);
        while (e.started[0] < 1 && ty_mono_usec() < end)
            run_for(loop, 20);
    }
    is_int(e.started[0], 1, "engine gone: running");
    stop_server();
    ok(until_exited(loop, &e, 0, 1), "engine gone: its end reported");
    is_int(e.st[0].kind, TY_EXIT_LOST, "engine gone: lost");
    like(e.st[0].detail, "inspecting it failed", "engine gone: ... says why");
    if (start_server() < 0)
        BAIL_OUT("cannot start the test HTTP server again");
    is_int(rt->ops->launch(rt, &plan->replicas[0], rt_env, NULL), 0, "engine back: relaunched");
    {
        int64_t end = ty_mono_usec() + 5 * INT64_C(1000000);
        while (e.started[0] < 2 && ty_mono_usec() < end)
            run_for(loop, 20);
    }
    is_int(e.started[0], 2, "engine back: running again");
    c->engine_wait_usec = 1500 * INT64_C(1000); /* not the run's 30 s: tried for 1.5 s */
    stop_server();
    ok(until_exited(loop, &e, 0, 2), "engine gone again: lost again");
    is_int(rt->ops->launch(rt, &plan->replicas[0], rt_env, NULL), 0, "gone for good: relaunch");
    ok(until_exited(loop, &e, 0, 3), "gone for good: its end reported");
    is_int(e.st[0].kind, TY_EXIT_START_FAILED, "gone for good: a start failure");
    like(e.st[0].detail, "reaching the engine", "gone for good: ... after trying to reach it");
    is_int(c->reopens, 1, "gone for good: reached for once");
    ok(run_idle(&c->reps[0]), "gone for good: nothing left in flight");
    if (start_server() < 0)
        BAIL_OUT("cannot start the test HTTP server again");
    rt_end(loop, rt, &e);
    ty_plan_free(plan);
    ty_job_free(job);
}

static void test_oom_parse(void)
{
    is_int((int)ctr_oom_parse_count("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"),
           3,
           "oom count: cgroup v1 memory.oom_control");
    is_int((int)ctr_oom_parse_count("low 0\nhigh 0\nmax 9\noom 2\noom_kill 1\n"),
           1,
           "oom count: cgroup v2 memory.events");
    is_int((int)ctr_oom_parse_count("oom_kill_disable 1\nunder_oom 0\n"),
           0,
           "oom count: oom_kill_disable is not the count");
    ctr_subnet_remember("00000000aa", 77);
    is_int(ctr_subnet_recall("00000000aa"), 77, "subnet: remembered by hash");
    is_int(ctr_subnet_recall("00000000bb"), -1, "subnet: unknown hash");
}

/* Containers are created with the engine's init; an engine without one (Podman refuses
 * the create, Docker the start) gets the container again without it, said once. */
static void test_runtime_init(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-noinit", "rt-dinit", NULL);
    struct ty_cluster_plan *plan = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;
    struct container_rt *c;

    forget_requests();
    if (ty_plan_build(job, NULL, NULL, &plan, NULL) < 0)
        BAIL_OUT("plan");
    rt = rt_ready(loop, plan, &e);
    c = (struct container_rt *)rt;
    for (size_t i = 0; i < 2; i++)
        is_int(rt->ops->launch(rt, &plan->replicas[i], rt_env, NULL), 0, "init: launch %zu", i);
    ok(until_exited(loop, &e, 0, 1) && until_exited(loop, &e, 1, 1), "init: both exited");
    ok(e.st[0].kind == TY_EXIT_CODE && e.st[0].code == 0 && e.started[0] == 1,
       "init: a create refused for want of an init: created again without it, ran, exit 0");
    ok(e.st[1].kind == TY_EXIT_CODE && e.st[1].code == 0 && e.started[1] == 1,
       "init: a start refused for want of an init: created again without it, ran, exit 0");
    is_int(e.notices, 1, "init: said once in the job's log, that the engine has no init");
    /* The two refusals race (both launches are in flight): either one's words will do. */
    ok(strstr(e.notice, "catatonit") || strstr(e.notice, "docker-init"),
       "init: ... with the engine's words (got '%s')",
       e.notice);
    ok(c->no_init, "init: the runtime remembers it");
    ok(!ctr_init_missing("{\"message\":\"crun: executable file `/app/init.sh` not found\"}", NULL),
       "init: an image's own missing entrypoint is no missing init");
    ok(!ctr_init_missing(NULL, "timed out after 30000 ms"), "init: ... nor is a timeout");
    ok(ctr_init_missing("{\"message\":\"lookup init binary: could not find \\\"catatonit\\\"\"}",
                        NULL),
       "init: Podman's lookup failure is");
    for (size_t i = 0; i < 2; i++) {
        _cleanup_free_ char *f1 = xasprintf("create-%s-1.json", c->reps[i].name);
        _cleanup_free_ char *f2 = xasprintf("create-%s-2.json", c->reps[i].name);
        _cleanup_free_ char *b1 = scratch(f1), *b2 = scratch(f2);
        like(b1, "\"Init\":true", "init: replica %zu first created with HostConfig.Init", i);
        ok(b2[0] && !strstr(b2, "Init"), "init: replica %zu then without it", i);
    }
    {
        _cleanup_free_ char *log = scratch("requests.log");
        _cleanup_free_ char *del = xasprintf("DELETE /containers/%s?force=1&v=1", c->reps[1].name);
        _cleanup_free_ char *cr = xasprintf("POST /containers/create?name=%s\n", c->reps[1].name);
        const char *first = strstr(log, cr);
        const char *second = first ? strstr(first + 1, cr) : NULL;
        const char *rm = first ? strstr(first, del) : NULL;
        ok(second && rm && rm < second,
           "init: the container whose start failed is removed before the new create");
    }
    rt_end(loop, rt, &e);
    ty_plan_free(plan);
    ty_job_free(job);
}

static void test_runtime(struct ty_loop *loop)
{
    _cleanup_free_ char *host = xasprintf("unix://%s", dts_sock_path);
    (void)setenv("DOCKER_HOST", host, 1);
    test_runtime_ends(loop);
    test_runtime_relaunch(loop);
    test_runtime_engine_gone(loop);
    test_runtime_init(loop);
    (void)unsetenv("DOCKER_HOST");
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
    test_oom_parse();
    test_runtime(loop);
    stop_server();
    ty_loop_free(loop);
    dts_teardown();
    return done_testing();
}
