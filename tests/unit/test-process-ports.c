/* SPDX-License-Identifier: Apache-2.0
 * test-process-ports.c: port reservations and the process runtime's launches. The list of a
 * process's reservations (ports.h); no launched child ever holds a reservation still open in
 * trainyard (a child that had not exec'd yet held copies of its siblings', and a replica
 * started meanwhile could not bind its port: parallel trials lost ps replicas to 'Address
 * already in use'), nor the cgroups' guardian of a run placed while another run holds
 * reservations; every replica of 1+16, and of two runs launched in turn (parallel
 * trials), binds its own port at once. The replicas are this program (--bind: bind the port
 * of TY_TEST_BIND_PORT without SO_REUSEADDR, hold it a moment, exit 3 if it was taken). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "plan.h"
#include "ports.h"
#include "process-int.h"
#include "process.h"
#include "runtime.h"
#include "spec.h"
#include "tap.h"
#include "timeutil.h"

#define WORKERS 16
#define ROUNDS  5

/* The replica: bind the port, keep it 200 ms (so later launches run while it is held). */
static int bind_main(void)
{
    const char *p = getenv("TY_TEST_BIND_PORT");
    struct sockaddr_in sa = {.sin_family = AF_INET};
    struct timespec hold = {0, 200 * 1000 * 1000};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (!p || fd < 0)
        return 2;
    sa.sin_port = htons((uint16_t)strtol(p, NULL, 10));
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "bind %s: %s\n", p, strerror(errno));
        return errno == EADDRINUSE ? 3 : 2;
    }
    nanosleep(&hold, NULL);
    return 0;
}

struct run {
    struct ty_job *job;
    struct ty_cluster_plan *plan;
    struct ty_runtime *rt;
    int exited, failed;
    char detail[512];
};

static void ev_started(void *ctx, struct ty_replica *r)
{
}

static void ev_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t n)
{
    struct run *run = ctx;
    if (!run->detail[0])
        snprintf(run->detail, sizeof(run->detail), "%s: %.*s", r->display_name, (int)n, line);
}

static void ev_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
    struct run *run = ctx;
    run->exited++;
    if (st->kind != TY_EXIT_CODE || st->code != 0)
        run->failed++;
}

static void tick(struct ty_loop *loop, void *data)
{
}

static void turn(struct ty_loop *loop)
{
    ty_loop_add_timer(loop, ty_mono_usec() + 20000, tick, NULL);
    ty_loop_run_once(loop);
}

static struct ty_job *make_job(const char *id, const char *exe)
{
    json_t *cfg = json_pack("{s:s,s:[s,s]}", "imageUri", "img", "containerCommand", exe, "--bind");
    json_t *ti = json_pack("{s:s,s:s,s:s,s:i,s:o,s:O}",
                           "scaleTier",
                           "CUSTOM",
                           "masterType",
                           "n1-standard-4",
                           "workerType",
                           "n1-standard-4",
                           "workerCount",
                           WORKERS,
                           "masterConfig",
                           cfg,
                           "workerConfig",
                           cfg);
    json_t *doc = json_pack("{s:s,s:o}", "jobId", id, "trainingInput", ti);
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    if (ty_job_from_json(doc, &job, &err) < 0)
        diag("make_job: %s", err.msg);
    json_decref(doc);
    return job;
}

static bool run_place(struct run *run, struct ty_loop *loop, const char *id, const char *exe)
{
    static const struct ty_runtime_events ev0 = {
        .started = ev_started, .output = ev_output, .exited = ev_exited};
    struct ty_runtime_events ev = ev0;
    struct ty_error e = {0};

    ev.ctx = run;
    run->job = make_job(id, exe);
    if (!run->job || ty_plan_build(run->job, NULL, NULL, &run->plan, &e) < 0 ||
        ty_runtime_new(&ty_runtime_process, loop, &ev, &run->rt, &e) < 0)
        return diag("%s: %s", id, e.msg), false;
    ty_runtime_attach(run->rt, run->plan);
    if (run->rt->ops->prepare(run->rt, &e) < 0 || run->rt->ops->place(run->rt, &e) < 0)
        return diag("%s: %s", id, e.msg), false;
    return true;
}

/* Does process @pid hold one of this process's port reservations (the same socket)? */
static bool holds_reservation(pid_t pid)
{
    _cleanup_free_ int *held = NULL;
    size_t n = ty_port_held(&held);
    char dir[64];
    DIR *d;
    struct dirent *de;
    bool found = false;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    d = opendir(dir);
    if (!d)
        return false; /* gone */
    while (!found && (de = readdir(d))) {
        char path[320];
        struct stat theirs, ours;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (de->d_name[0] == '.' || stat(path, &theirs) < 0 || !S_ISSOCK(theirs.st_mode))
            continue;
        for (size_t i = 0; i < n && !found; i++)
            found = fstat(held[i], &ours) == 0 && ours.st_ino == theirs.st_ino &&
                    ours.st_dev == theirs.st_dev;
    }
    closedir(d);
    return found;
}

static pid_t newest_child(pid_t after)
{
    /* The runtime keeps its pids to itself: the newest child of ours is the one launched. */
    char path[64], buf[8192];
    FILE *f;
    size_t len;
    pid_t best = 0;
    char *save = NULL;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    f = fopen(path, "re");
    if (!f)
        return 0;
    len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[len] = '\0';
    for (char *s = strtok_r(buf, " \n", &save); s; s = strtok_r(NULL, " \n", &save)) {
        pid_t p = (pid_t)strtol(s, NULL, 10);
        if (p > best && p != after)
            best = p;
    }
    return best;
}

/* Launch replica @i of @run with its port in the environment; check that no child holds a
 * reservation once launch() has returned. Returns false when one does. */
static bool launch_one(struct run *run, size_t i, bool *held_by_child)
{
    struct ty_replica *r = &run->plan->replicas[i];
    _cleanup_free_ char *var = xasprintf("TY_TEST_BIND_PORT=%d", r->port);
    char *env[] = {var, NULL};
    struct ty_error e = {0};
    pid_t pid;

    if (run->rt->ops->launch(run->rt, r, env, &e) < 0)
        return diag("launch %s: %s", r->display_name, e.msg), false;
    pid = newest_child(0);
    if (pid > 0 && holds_reservation(pid))
        *held_by_child = true;
    return true;
}

static void run_wait(struct run *run, struct ty_loop *loop)
{
    int64_t t0 = ty_mono_usec();
    while (run->exited < (int)run->plan->n_replicas && ty_mono_usec() - t0 < 20000000)
        turn(loop);
}

static void run_free(struct run *run)
{
    ty_runtime_free(run->rt);
    ty_plan_free(run->plan);
    ty_job_free(run->job);
}

static void test_list(void)
{
    int cursor = 0, a = -1, b = -1, pa, pb;
    _cleanup_free_ int *fds = NULL;
    struct ty_error e = {0};
    size_t n;

    pa = ty_port_hold(&cursor, &a, "a", &e);
    pb = ty_port_hold(&cursor, &b, "b", &e);
    ok(pa > 0 && pb > 0 && pa != pb, "list: two ports held (%d, %d)", pa, pb);
    n = ty_port_held(&fds);
    ok(n == 2 && fds[0] == (a < b ? a : b) && fds[1] == (a < b ? b : a),
       "list: both listed, ascending");
    free(fds);
    ty_port_release(a);
    n = ty_port_held(&fds);
    ok(n == 1 && fds[0] == b, "list: a released one is no longer listed");
    ok(fcntl(a, F_GETFD) < 0 && errno == EBADF, "list: and is closed");
    ty_port_release(b);
    free(fds);
    is_int((int)ty_port_held(&fds), 0, "list: empty once all are released");
    ty_port_release(-1); /* no-op */
}

/* 1+16 replicas, ROUNDS times: each binds its port at once; no child holds a reservation. */
static void test_one_run(const char *exe)
{
    int bad_rounds = 0, failed = 0;
    bool held = false;

    for (int round = 0; round < ROUNDS; round++) {
        struct ty_loop *loop = ty_loop_new();
        struct run run = {0};
        bool ok_launch = run_place(&run, loop, "ports_one", exe);
        for (size_t i = 0; ok_launch && i < run.plan->n_replicas; i++)
            ok_launch = launch_one(&run, i, &held);
        if (ok_launch)
            run_wait(&run, loop);
        if (!ok_launch || run.exited != (int)run.plan->n_replicas || run.failed) {
            bad_rounds++;
            failed += run.failed;
            if (run.detail[0])
                diag("%s", run.detail);
        }
        run_free(&run);
        ty_loop_free(loop);
    }
    is_int(
        bad_rounds, 0, "1+16: every replica bound its port, %d rounds (%d failed)", ROUNDS, failed);
    ok(!held, "1+16: no launched child held a reservation");
}

/* Two runs placed, then launched in turn (parallel trials in one process). */
static void test_two_runs(const char *exe)
{
    int bad_rounds = 0;
    bool held = false;

    for (int round = 0; round < ROUNDS; round++) {
        struct ty_loop *loop = ty_loop_new();
        struct run a = {0}, b = {0};
        bool ok_launch = run_place(&a, loop, "ports_a", exe) && run_place(&b, loop, "ports_b", exe);
        pid_t guardian = newest_child(0); /* b's, when cgroups are made: forked with a's held */
        if (guardian > 0 && holds_reservation(guardian))
            held = true;
        for (size_t i = 0; ok_launch && i < a.plan->n_replicas; i++)
            ok_launch = launch_one(&a, i, &held) && launch_one(&b, i, &held);
        if (ok_launch) {
            run_wait(&a, loop);
            run_wait(&b, loop);
        }
        if (!ok_launch || a.failed || b.failed || a.exited != (int)a.plan->n_replicas ||
            b.exited != (int)b.plan->n_replicas) {
            bad_rounds++;
            diag("%s %s", a.detail, b.detail);
        }
        run_free(&a);
        run_free(&b);
        ty_loop_free(loop);
    }
    is_int(bad_rounds, 0, "two runs in turn: every replica bound its port, %d rounds", ROUNDS);
    ok(!held, "two runs in turn: no launched child held a reservation of either");
}

/* Which job cgroups are orphans (process-jail.c): "trainyard-<pid>-<hex>" of a pid no process
 * has, never this process's or a live one's, nothing of another shape. */
static void test_orphaned(void)
{
    char name[96], *text = NULL;
    size_t len;
    long dead = 4194304; /* the most pid_max can be */

    /* A pid above pid_max: no process has it (a reaped child's pid may be reused at once
     * while other tests run). */
    if (ty_read_file("/proc/sys/kernel/pid_max", 64, &text, &len, NULL) == 0)
        dead = strtol(text, NULL, 10);
    free(text);
    dead++;
    (void)snprintf(name, sizeof(name), "trainyard-%ld-1f0a", dead);
    ok(pj_cgroup_orphaned(name, NULL), "orphaned: %s (a pid above pid_max)", name);
    (void)snprintf(name, sizeof(name), "trainyard-%d-1f0a", (int)getpid());
    ok(!pj_cgroup_orphaned(name, NULL) && !pj_cgroup_orphaned("trainyard-1-ab", NULL),
       "orphaned: not this process's, not a live pid's");
    (void)snprintf(name, sizeof(name), "trainyard-%ld-xyz", dead);
    ok(!pj_cgroup_orphaned(name, NULL), "orphaned: not with a token that is not hex");
    (void)snprintf(name, sizeof(name), "trainyard-%ld-", dead);
    ok(!pj_cgroup_orphaned(name, NULL) && !pj_cgroup_orphaned("trainyard-0-1", NULL) &&
           !pj_cgroup_orphaned("trainyard-012-1", NULL) &&
           !pj_cgroup_orphaned("trainyard-99999999999-1", NULL) &&
           !pj_cgroup_orphaned("trainyard--1-1", NULL) && !pj_cgroup_orphaned("other-5-1", NULL),
       "orphaned: nothing of another shape");
}

int main(int argc, char **argv)
{
    char exe[4096];
    ssize_t n;

    if (argc > 1 && strcmp(argv[1], "--bind") == 0)
        return bind_main();
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        BAIL_OUT("cannot find this program");
    exe[n] = '\0';
    plan(13);
    test_orphaned();
    test_list();
    test_one_run(exe);
    test_two_runs(exe);
    return done_testing();
}
