/* SPDX-License-Identifier: Apache-2.0
 * test-container-user.c: the container runtime gives the directories a run makes (a jobDir
 * created for it, a trial's metric directory) to the user its images run as
 * (container-user.c): the parsers of Config.User, of the engine's tar archive and of the
 * image's /etc/passwd and /etc/group; then, on the test engine (docker-test-server.c),
 * prepare with images of a named user, a user and group, a numeric user, a user the image
 * lacks, one whose probe's name is taken by an earlier attempt's, and one whose lookup is cut
 * short by a cleanup (its probe container removed). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "container-internal.h"
#include "container-rt-test.h"
#include "container.h"
#include "docker-test-server.h"
#include "macro.h"
#include "plan.h"
#include "tap.h"
#include "timeutil.h"

/* A ustar block for @name (@size bytes, @type) into @h, as the engine writes one. */
static void header(char *h, const char *name, size_t size, char type)
{
    memset(h, 0, 512);
    (void)snprintf(h, 100, "%s", name);
    (void)snprintf(h + 124, 12, "%011zo", size);
    h[156] = type;
    memcpy(h + 257, "ustar", 6);
}

static void test_tar(void)
{
    char tar[512 * 6];
    const char *data = NULL;
    size_t n = 0;

    memset(tar, 0, sizeof(tar));
    header(tar, "passwd", 5, '0');
    memcpy(tar + 512, "a:b:c", 5);
    is_int(ctr_tar_first_file(tar, sizeof(tar), &data, &n), 0, "tar: one file");
    ok(data == tar + 512 && n == 5, "tar: its content");
    /* A pax header (its own content, 20 bytes in one block) before the file. */
    memset(tar, 0, sizeof(tar));
    header(tar, "PaxHeaders/passwd", 20, 'x');
    memcpy(tar + 512, "20 path=/etc/passwd\n", 20);
    header(tar + 1024, "passwd", 600, '0');
    is_int(ctr_tar_first_file(tar, sizeof(tar), &data, &n), 0, "tar: after a pax header");
    ok(data == tar + 1536 && n == 600, "tar: ... the file's content (two blocks)");
    is_int(ctr_tar_first_file(tar, 1536 + 100, &data, &n), -EINVAL, "tar: content cut short");
    is_int(ctr_tar_first_file(tar, 700, &data, &n), -EINVAL, "tar: a header cut short");
    header(tar + 1024, "passwd", 0, '2'); /* a symbolic link, then the end */
    is_int(ctr_tar_first_file(tar, sizeof(tar), &data, &n), -ENOENT, "tar: a link is no file");
    memset(tar, 0, sizeof(tar));
    is_int(ctr_tar_first_file(tar, sizeof(tar), &data, &n), -ENOENT, "tar: empty archive");
    is_int(ctr_tar_first_file(tar, 0, &data, &n), -ENOENT, "tar: no bytes");
    header(tar, "passwd", 5, '0');
    memcpy(tar + 124, "12x45670000", 11);
    is_int(ctr_tar_first_file(tar, sizeof(tar), &data, &n), -EINVAL, "tar: a size not octal");
    header(tar, "passwd", 5, '0');
    memcpy(tar + 124, "77777777777", 11);
    is_int(ctr_tar_first_file(tar, sizeof(tar), &data, &n), -EINVAL, "tar: a size past the end");
}

static void test_accounts(void)
{
    static const char pw[] = "root:x:0:0:root:/root:/bin/sh\n"
                             "train:x:99:98::/:/bin/sh\n"
                             "trainer:x:1234:1235:T:/home/t:/bin/sh\n"
                             "short:x:5\n"
                             "big:x:4294967295:1::/:\n"
                             "last:x:7:8::/:";
    static const char gr[] = "root:x:0:\nstaff:x:77:trainer,other\n";
    unsigned long uid = 0, gid = 0;

    ok(ctr_passwd_lookup(pw, strlen(pw), "trainer", &uid, &gid) && uid == 1234 && gid == 1235,
       "passwd: a name's uid and gid");
    ok(ctr_passwd_lookup(pw, strlen(pw), "train", &uid, &gid) && uid == 99 && gid == 98,
       "passwd: a name that is the start of another");
    ok(ctr_passwd_lookup(pw, strlen(pw), "last", &uid, &gid) && uid == 7 && gid == 8,
       "passwd: the last line without a newline");
    ok(!ctr_passwd_lookup(pw, strlen(pw), "trai", &uid, &gid), "passwd: a prefix is no name");
    ok(!ctr_passwd_lookup(pw, strlen(pw), "short", &uid, &gid), "passwd: a line without its gid");
    ok(!ctr_passwd_lookup(pw, strlen(pw), "big", &uid, &gid), "passwd: uid 2^32 - 1 refused");
    ok(!ctr_passwd_lookup(pw, strlen(pw), "ghost", &uid, &gid), "passwd: no such user");
    ok(!ctr_passwd_lookup(pw, strlen(pw), "", &uid, &gid), "passwd: an empty name");
    ok(!ctr_passwd_lookup(pw, 20, "trainer", &uid, &gid), "passwd: only the bytes given");
    ok(ctr_group_lookup(gr, strlen(gr), "staff", &gid) && gid == 77, "group: a name's gid");
    ok(!ctr_group_lookup(gr, strlen(gr), "trainer", &gid), "group: a member is no group");
}

static void test_user_value(void)
{
    char u[8], g[8];

    ctr_user_split("trainer:staff", u, sizeof(u), g, sizeof(g));
    ok(strcmp(u, "trainer") == 0 && strcmp(g, "staff") == 0, "user: split at ':'");
    ctr_user_split("1000", u, sizeof(u), g, sizeof(g));
    ok(strcmp(u, "1000") == 0 && g[0] == '\0', "user: no group");
    ctr_user_split("averylongname:g", u, sizeof(u), g, sizeof(g));
    ok(strcmp(u, "averylo") == 0 && strcmp(g, "g") == 0, "user: truncated to the buffer");
    ctr_user_split(NULL, u, sizeof(u), g, sizeof(g));
    ok(u[0] == '\0' && g[0] == '\0', "user: NULL is empty");
    ok(ctr_user_is_root("") && ctr_user_is_root(NULL) && ctr_user_is_root("root") &&
           ctr_user_is_root("0") && ctr_user_is_root("0:1000") && ctr_user_is_root("root:staff"),
       "user: root's values");
    ok(!ctr_user_is_root("1000") && !ctr_user_is_root("trainer") && !ctr_user_is_root("00x"),
       "user: others'");
}

/* A plan of @image with a fresh metric directory (and, with @job_dir, a jobDir made for the
 * run) in the scratch folder. */
static struct ty_cluster_plan *user_plan(struct ty_job *job, const char *tag, bool job_dir)
{
    struct ty_cluster_plan *plan = NULL;

    if (ty_plan_build(job, NULL, NULL, &plan, NULL) < 0)
        BAIL_OUT("plan");
    plan->metric_dir = xasprintf("%s/metrics-%s", dts_tmpdir, tag);
    if (mkdir(plan->metric_dir, 0700) < 0)
        BAIL_OUT("mkdir %s", plan->metric_dir);
    if (job_dir) {
        plan->job_dir = xasprintf("%s/jobdir-%s", dts_tmpdir, tag);
        if (mkdir(plan->job_dir, 0755) < 0)
            BAIL_OUT("mkdir %s", plan->job_dir);
        plan->job_dir_made = true;
    }
    return plan;
}

static bool owned(const char *path, uid_t uid, gid_t gid)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_uid == uid && st.st_gid == gid;
}

/* Prepare a run of @image; its directories' owner afterwards, the requests it made. */
static void test_prepare(
    struct ty_loop *loop, const char *image, bool job_dir, uid_t uid, gid_t gid, bool probe)
{
    struct ty_job *job = rt_job(image, NULL, NULL);
    struct ty_cluster_plan *plan = user_plan(job, image, job_dir);
    _cleanup_free_ char *reqfile = xasprintf("%s/requests.log", dts_tmpdir), *log = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;

    (void)unlink(reqfile);
    rt = rt_ready(loop, plan, &e);
    ok(owned(plan->metric_dir, uid, gid), "%s: the metric directory is %u:%u's", image, uid, gid);
    if (job_dir)
        ok(owned(plan->job_dir, uid, gid), "%s: the jobDir is %u:%u's", image, uid, gid);
    log = scratch("requests.log");
    ok((strstr(log, "POST /containers/create?name=trainyard-") != NULL) == probe,
       "%s: %s",
       image,
       probe ? "a probe was created" : "no probe was needed");
    if (probe)
        ok(strstr(log, "-probe/archive?path=/etc/passwd\n") && strstr(log, "-probe?force=1&v=1\n"),
           "%s: its passwd read, the probe removed",
           image);
    if (uid)
        like(e.user_notice, "Gave ", "%s: the job's log says to whom", image);
    else
        ok(e.user_notices == 0 || strstr(e.user_notice, "Gave ") == NULL,
           "%s: nothing given",
           image);
    rt_end(loop, rt, &e);
    ty_plan_free(plan);
    ty_job_free(job);
}

/* This process's peak resident memory (VmHWM), in KiB; -1 when unknown. */
static long peak_kib(void)
{
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld kB", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* An image's passwd of 64 MiB: the answer is cut off as it arrives (never buffered whole),
 * the job's log says why, nothing is given, the probe is removed. */
static void test_huge(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-user-huge", NULL, NULL);
    struct ty_cluster_plan *plan = user_plan(job, "huge", false);
    _cleanup_free_ char *reqfile = xasprintf("%s/requests.log", dts_tmpdir), *log = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;

    long before = peak_kib(), after;

    (void)unlink(reqfile);
    rt = rt_ready(loop, plan, &e);
    after = peak_kib();
    like(e.user_notice,
         "Could not look up the user 'trainer' of image rt-user-huge (the answer is larger than",
         "huge: the lookup cut off, and said so");
    ok(before > 0 && after - before < 16 * 1024,
       "huge: not buffered whole (peak memory %ld KiB, before %ld)",
       after,
       before);
    ok(owned(plan->metric_dir, 0, 0), "huge: the metric directory stays root's");
    log = scratch("requests.log");
    like(log, "-probe?force=1&v=1\n", "huge: the probe removed");
    rt_end(loop, rt, &e);
    ty_plan_free(plan);
    ty_job_free(job);
}

/* A probe of the run's name left by an attempt before (a retry keeps the run's hash) is in
 * the way: removed, and the probe made again. */
static void test_stale(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-user-stale", NULL, NULL);
    struct ty_cluster_plan *plan = user_plan(job, "stale", false);
    _cleanup_free_ char *reqfile = xasprintf("%s/requests.log", dts_tmpdir), *log = NULL;
    struct rtev e = {0};
    struct ty_runtime *rt;
    const char *first, *del, *second;

    (void)unlink(reqfile);
    rt = rt_ready(loop, plan, &e);
    ok(owned(plan->metric_dir, 1234, 1235), "stale: the metric directory is given");
    log = scratch("requests.log");
    first = strstr(log, "POST /containers/create?name=");
    del = first ? strstr(first, "-probe?force=1&v=1\n") : NULL;
    second = del ? strstr(del, "POST /containers/create?name=") : NULL;
    ok(first && del && second && strstr(second, "-probe/archive?path=/etc/passwd"),
       "stale: created, in the way, removed, created again, read");
    rt_end(loop, rt, &e);
    ty_plan_free(plan);
    ty_job_free(job);
}

/* A cleanup while the probe's archive is being read removes the probe. */
static void test_abort(struct ty_loop *loop)
{
    struct ty_job *job = rt_job("rt-user-slow", NULL, NULL);
    struct ty_cluster_plan *plan = user_plan(job, "slow", false);
    _cleanup_free_ char *reqfile = xasprintf("%s/requests.log", dts_tmpdir), *log = NULL;
    struct ty_runtime_events ev = {0};
    struct ty_runtime *rt = NULL;
    struct ty_error err = {0};
    int64_t end = ty_mono_usec() + 10 * INT64_C(1000000);
    int r;

    (void)unlink(reqfile);
    if (ty_runtime_new(&ty_runtime_container, loop, &ev, &rt, &err) < 0)
        BAIL_OUT("ty_runtime_new: %s", err.msg);
    ty_runtime_attach(rt, plan);
    is_int(rt->ops->prepare(rt, &err), TY_RUNTIME_ASYNC, "abort: prepare under way");
    while (ty_mono_usec() < end && !strstr(log ? log : "", "/archive?")) {
        run_for(loop, 20);
        free(log);
        log = scratch("requests.log");
    }
    ok(strstr(log, "/archive?path=/etc/passwd"), "abort: the probe's archive asked for");
    r = rt->ops->cleanup(rt); /* no `cleaned` to wait for: its removals take a moment */
    if (r == TY_RUNTIME_ASYNC)
        run_for(loop, 4000);
    ty_runtime_free(rt);
    free(log);
    log = scratch("requests.log");
    like(log, "-probe?force=1&v=1\n", "abort: the probe removed by the cleanup");
    ok(owned(plan->metric_dir, 0, 0), "abort: the metric directory stays root's");
    ty_plan_free(plan);
    ty_job_free(job);
}

int main(void)
{
    struct ty_loop *loop;
    _cleanup_free_ char *host = NULL;

    signal(SIGPIPE, SIG_IGN);
    test_tar();
    test_accounts();
    test_user_value();
    if (geteuid() != 0) {
        skip(1, "the directories are given away only as root");
        return done_testing();
    }
    if (dts_setup() < 0)
        BAIL_OUT("cannot make a scratch folder in /tmp");
    if (start_server() < 0)
        BAIL_OUT("cannot start the test HTTP server on %s", dts_sock_path);
    loop = ty_loop_new();
    host = xasprintf("unix://%s", dts_sock_path);
    (void)setenv("DOCKER_HOST", host, 1);
    test_prepare(loop, "rt-user-named", true, 1234, 1235, true);
    test_prepare(loop, "rt-user-group", false, 1234, 77, true);
    test_prepare(loop, "rt-user-num", true, 4321, 4322, false);
    test_prepare(loop, "rt-user-ghost", false, 0, 0, true);
    test_prepare(loop, "rt-present", true, 0, 0, false); /* an image of root's */
    test_huge(loop);
    test_stale(loop);
    test_abort(loop);
    (void)unsetenv("DOCKER_HOST");
    stop_server();
    ty_loop_free(loop);
    dts_teardown();
    return done_testing();
}
