/* SPDX-License-Identifier: Apache-2.0
 * test-container-exits.c: how the container runtime learns that a container ended, against
 * the test engine of docker-test-server.h: the job's events stream (a die event ends a
 * replica before its wait or log follow; a broken stream leaves them to tell), and the
 * engine's exit files (conmon's, in TRAINYARD_CONTAINER_EXIT_DIR here: an end known with no
 * die event at all); and the parsers of die events, exit files and conmon's command line. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "container-internal.h"
#include "container-rt-test.h"
#include "docker-test-server.h"
#include "loop.h"
#include "macro.h"
#include "plan.h"
#include "runtime.h"
#include "spec.h"
#include "tap.h"
#include "timeutil.h"

/* The die event of the job's events stream ends a replica before its wait or log follow
 * would: the status from the event, the rest of the log read without follow and nothing
 * twice; and when every events stream breaks, the wait and the follow still report it. */
static void test_runtime_events(struct ty_loop *loop, bool broken)
{
    const char *what = broken ? "events broken" : "events";
    struct ty_job *job = rt_job("rt-evt", NULL, NULL);
    struct ty_cluster_plan *plan = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;
    struct container_rt *c;
    _cleanup_free_ char *log = NULL, *evlog = NULL, *evfile = NULL, *reqfile = NULL;
    int64_t t0;
    int opened = 0;

    evfile = xasprintf("%s/events.log", dts_tmpdir);
    reqfile = xasprintf("%s/requests.log", dts_tmpdir);
    (void)unlink(evfile);
    (void)unlink(reqfile);
    if (ty_plan_build(job, NULL, NULL, &plan, NULL) < 0)
        BAIL_OUT("plan");
    rt = rt_ready(loop, plan, &e);
    c = (struct container_rt *)rt;
    t0 = ty_mono_usec();
    is_int(rt->ops->launch(rt, &plan->replicas[0], rt_env, NULL), 0, "%s: launch", what);
    ok(until_exited(loop, &e, 0, 1), "%s: it exited", what);
    if (!broken)
        ok(ty_mono_usec() - t0 < 1200 * INT64_C(1000),
           "events: reported before its log follow (1.5 s) or its wait (3 s) ended");
    else
        ok(ty_mono_usec() - t0 >= 1400 * INT64_C(1000), "events broken: the follow told");
    is_int(e.st[0].kind, TY_EXIT_CODE, "%s: an exit status", what);
    is_int(e.st[0].code, 7, "%s: ... 7", what);
    is_str(e.all[0],
           "line one of rt-evt~1|err two of rt-evt~1|line three of rt-evt~1|",
           "%s: every line of its log once, in order",
           what);
    ok(run_idle(&c->reps[0]), "%s: nothing of the run left", what);
    log = scratch("requests.log");
    ok((strstr(log, "GET /containers/rt-evt~1/logs?stdout=1&stderr=1\n") != NULL) == !broken,
       broken ? "events broken: no second log request" : "events: the rest read without follow");
    evlog = scratch("events.log");
    for (const char *p = evlog; (p = strstr(p, "GET /events?filters=")); p++)
        opened++;
    if (!broken)
        like(evlog, "%22label%22%3A%5B%22trainyard.run%3D", "events: filtered to the run's label");
    is_int(opened, broken ? 4 : 1, "%s: streams opened (a broken one again, 3 times)", what);
    ok(broken ? !c->events.req && c->events.off : c->events.req && !c->events.off,
       "%s: the stream's state",
       what);
    if (rt->ops->cleanup(rt) == TY_RUNTIME_ASYNC)
        (void)run_until(loop, &e.cleaned, 10000);
    ok(!c->events.req, "%s: no stream after the cleanup", what);
    ty_runtime_free(rt);
    ty_plan_free(plan);
    ty_job_free(job);
}

/* An exit file in the engine's exit directory (TRAINYARD_CONTAINER_EXIT_DIR here) ends a
 * replica at once, when neither a die event nor its wait nor its log follow has told: the
 * status from the file, the rest of the log read without follow, and the watch gone with
 * the cleanup. */
static void test_runtime_exitfile(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-xf", NULL, NULL);
    struct ty_cluster_plan *plan = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;
    struct container_rt *c;
    _cleanup_free_ char *dir = xasprintf("%s/exits", dts_tmpdir);
    _cleanup_free_ char *reqfile = xasprintf("%s/requests.log", dts_tmpdir);
    _cleanup_free_ char *log = NULL, *file = NULL;
    int64_t t0;

    (void)mkdir(dir, 0755);
    (void)setenv("TRAINYARD_CONTAINER_EXIT_DIR", dir, 1);
    (void)unlink(reqfile);
    if (ty_plan_build(job, NULL, NULL, &plan, NULL) < 0)
        BAIL_OUT("plan");
    rt = rt_ready(loop, plan, &e);
    c = (struct container_rt *)rt;
    t0 = ty_mono_usec();
    is_int(rt->ops->launch(rt, &plan->replicas[0], rt_env, NULL), 0, "exit file: launch");
    is_str(c->exits.dir, dir, "exit file: the given directory is watched");
    ok(until_exited(loop, &e, 0, 1), "exit file: it exited");
    ok(ty_mono_usec() - t0 < 1200 * INT64_C(1000),
       "exit file: reported before its log follow (1.5 s) or its wait (3 s) ended");
    is_int(e.st[0].kind, TY_EXIT_CODE, "exit file: an exit status");
    is_int(e.st[0].code, 5, "exit file: ... the file's 5");
    is_str(e.all[0],
           "line one of rt-xf~1|err two of rt-xf~1|line three of rt-xf~1|",
           "exit file: every line of its log once, in order");
    ok(run_idle(&c->reps[0]), "exit file: nothing of the run left");
    log = scratch("requests.log");
    like(log, "GET /containers/rt-xf~1/logs?stdout=1&stderr=1\n", "exit file: the rest read");
    if (rt->ops->cleanup(rt) == TY_RUNTIME_ASYNC)
        (void)run_until(loop, &e.cleaned, 10000);
    ok(c->exits.fd < 0 && !c->exits.dir, "exit file: no watch after the cleanup");
    ty_runtime_free(rt);
    ty_plan_free(plan);
    ty_job_free(job);
    (void)unsetenv("TRAINYARD_CONTAINER_EXIT_DIR");
    file = xasprintf("%s/rt-xf~1", dir);
    (void)unlink(file);
    (void)rmdir(dir);
}

static void test_exitfile_parse(void)
{
    static const char cmd[] = "/usr/bin/conmon\0--api-version\0001\0-c\0abc\0--exit-dir\0"
                              "/run/libpod/exits\0--exit-command\0/usr/bin/podman";
    static const char eq[] = "conmon\0--exit-dir=/run/user/1000/libpod/tmp/exits";
    char dir[64] = "";
    long code = -1;

    ok(ctr_exit_file_parse("0", 1, &code) && code == 0, "exit file parse: 0");
    ok(ctr_exit_file_parse("137\n", 4, &code) && code == 137, "exit file parse: 137 and a newline");
    ok(!ctr_exit_file_parse("", 0, &code), "exit file parse: empty is no status");
    ok(!ctr_exit_file_parse("-1", 2, &code), "exit file parse: -1 is no status");
    ok(!ctr_exit_file_parse("12x", 3, &code), "exit file parse: malformed");
    ok(ctr_exit_dir_parse(cmd, sizeof(cmd), dir, sizeof(dir)) &&
           strcmp(dir, "/run/libpod/exits") == 0,
       "exit dir parse: conmon's --exit-dir DIR");
    ok(ctr_exit_dir_parse(eq, sizeof(eq), dir, sizeof(dir)) &&
           strcmp(dir, "/run/user/1000/libpod/tmp/exits") == 0,
       "exit dir parse: --exit-dir=DIR");
    ok(!ctr_exit_dir_parse(cmd, 60, dir, sizeof(dir)), "exit dir parse: none in the part read");
    ok(!ctr_exit_dir_parse(cmd, sizeof(cmd), dir, 8), "exit dir parse: too long for the buffer");
}

/* ctr_events_parse on @line (its whole length). */
static bool parse_event(const char *line, char *id, size_t n, long *code)
{
    return ctr_events_parse(line, strlen(line), id, n, code);
}

static void test_events_parse(void)
{
    char id[64] = "";
    long code = -1;

    ok(parse_event("{\"status\":\"die\",\"id\":\"abc\",\"Type\":\"container\","
                   "\"Action\":\"die\",\"Actor\":{\"ID\":\"abc\",\"Attributes\":"
                   "{\"containerExitCode\":\"3\",\"exitCode\":\"3\"}}}",
                   id,
                   sizeof(id),
                   &code) &&
           code == 3 && strcmp(id, "abc") == 0,
       "events parse: Podman's die event, its id and exitCode");
    ok(!parse_event("{\"Action\":\"start\",\"Actor\":{\"ID\":\"abc\","
                    "\"Attributes\":{\"exitCode\":\"0\"}}}",
                    id,
                    sizeof(id),
                    &code),
       "events parse: another action is not an end");
    ok(!parse_event("{\"Action\":\"die\",\"Actor\":{\"ID\":\"abc\",\"Attributes\":{}}}",
                    id,
                    sizeof(id),
                    &code),
       "events parse: no exitCode, no status");
    ok(!parse_event("{\"Action\":\"die\",\"Actor\":{\"ID\":\"abc\","
                    "\"Attributes\":{\"exitCode\":\"x1\"}}}",
                    id,
                    sizeof(id),
                    &code),
       "events parse: a malformed status");
    ok(!parse_event("{\"status\":\"di", id, sizeof(id), &code), "events parse: half a line");
}

int main(void)
{
    struct ty_loop *loop;
    _cleanup_free_ char *host = NULL, *brk = NULL;
    int fd;

    signal(SIGPIPE, SIG_IGN);
    test_events_parse();
    test_exitfile_parse();
    if (dts_setup() < 0)
        BAIL_OUT("cannot make a scratch folder in /tmp");
    if (start_server() < 0)
        BAIL_OUT("cannot start the test HTTP server on %s", dts_sock_path);
    loop = ty_loop_new();
    host = xasprintf("unix://%s", dts_sock_path);
    (void)setenv("DOCKER_HOST", host, 1);
    test_runtime_events(loop, false);
    test_runtime_exitfile(loop);
    brk = xasprintf("%s/events-break", dts_tmpdir);
    fd = open(brk, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    test_runtime_events(loop, true);
    (void)unlink(brk);
    (void)unsetenv("DOCKER_HOST");
    stop_server();
    ty_loop_free(loop);
    dts_teardown();
    return done_testing();
}
