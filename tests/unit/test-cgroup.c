/* SPDX-License-Identifier: Apache-2.0
 * test-cgroup.c: cgroup.c against the host's real cgroups (skipped unless this runs as root
 * and a cgroup can be made): a cgroup and a child are made, limits are written and read back,
 * a process tree that leaves its process group and session (`sh -c 'sleep & sleep'`,
 * setsid) is ended entirely by ty_cgroup_kill (of the job's cgroup rebuilt from its
 * directories, as the guardian program does), a memory hog is killed by the limit and counted
 * as an OOM kill, and the cgroups are removed (a replica's alone, then the job's with the one
 * left in it). The guardian's side of a lifeline (cgroup-guard.h) releases on "D" and, on
 * EOF, empties and removes the cgroup it guards. A cgroup made anew says so (its OOM count is not
 * read), and keeps the default CFS period (not written). Orphaned cgroups beside a new one are
 * swept: empty ones only, never the sweeper's own, a live run's or a young one. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-guard.h"
#include "cgroup.h"
#include "tap.h"

static void pause_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    (void)nanosleep(&ts, NULL);
}

/* Fork a child that enters @cg and runs @argv; returns its pid. */
static pid_t start_in(const struct ty_cgroup *cg, char *const argv[])
{
    int fds[TY_CGROUP_MAX_DIRS];
    struct ty_error e = {0};
    int n = ty_cgroup_open_procs(cg, fds, &e);
    pid_t pid;

    if (n < 0)
        BAIL_OUT("open_procs: %s", ty_error_msg(&e));
    pid = fork();
    if (pid == 0) {
        if (ty_cgroup_enter(fds, (size_t)n) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return pid;
}

/* Does @dir's cgroup.procs list @pid? */
static bool procs_has(const char *dir, pid_t pid)
{
    char path[4096];
    long v;
    bool found = false;
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    f = fopen(path, "re");
    while (f && !found && fscanf(f, "%ld", &v) == 1)
        found = v == (long)pid;
    if (f)
        fclose(f);
    return found;
}

static bool dir_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Read an integer file of a cgroup directory. */
static long long read_ll(const char *dir, const char *file)
{
    char p[4096];
    long long v = -1;
    FILE *f;
    (void)snprintf(p, sizeof(p), "%s/%s", dir, file);
    f = fopen(p, "r");
    if (f) {
        if (fscanf(f, "%lld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* The sweep's predicate here: a name with "-dead" belongs to no live run. */
static bool named_dead(const char *name, void *ctx)
{
    (*(int *)ctx)++;
    return strstr(name, "-dead") != NULL;
}

/* Cgroups beside a new one (below @parent): an empty orphan with a child cgroup goes, an
 * orphan with a process in it, a live run's and the sweeper's own stay; nothing goes while
 * younger than the age given. */
static void test_sweep(const struct ty_cgroup *parent)
{
    char *const nap[] = {(char *)"/bin/sleep", (char *)"300", NULL};
    struct ty_cgroup *own = NULL, *a = NULL, *a_child = NULL, *b = NULL, *c = NULL;
    struct ty_cgroup *b_busy = NULL, *b_idle = NULL;
    struct ty_error e = {0};
    char a_path[4096];
    int asked = 0;
    pid_t pid;

    if (ty_cgroup_new_child(parent, "sw-dead-own", &own, &e) < 0 ||
        ty_cgroup_new_child(parent, "sw-dead-a", &a, &e) < 0 ||
        ty_cgroup_new_child(a, "master-replica-0", &a_child, &e) < 0 ||
        ty_cgroup_new_child(parent, "sw-dead-b", &b, &e) < 0 ||
        ty_cgroup_new_child(b, "worker-replica-0", &b_busy, &e) < 0 ||
        ty_cgroup_new_child(b, "master-replica-0", &b_idle, &e) < 0 ||
        ty_cgroup_new_child(parent, "sw-live", &c, &e) < 0)
        BAIL_OUT("%s", ty_error_msg(&e));
    (void)snprintf(a_path, sizeof(a_path), "%s", ty_cgroup_path(a));
    pid = start_in(b_busy, nap);
    pause_ms(100);
    is_int((int)ty_cgroup_sweep_beside(own, "sw-", named_dead, &asked, 3600),
           0,
           "sweep: nothing younger than an hour goes");
    is_int((int)ty_cgroup_sweep_beside(own, "sw-", named_dead, &asked, 0),
           1,
           "sweep: one orphan removed");
    ok(!dir_exists(a_path), "sweep: the empty orphan and its child cgroup are gone");
    ok(dir_exists(ty_cgroup_path(b)) && dir_exists(ty_cgroup_path(c)) &&
           dir_exists(ty_cgroup_path(own)),
       "sweep: an orphan with a process, a live run's and its own stay");
    ok(dir_exists(ty_cgroup_path(b_idle)),
       "sweep: so do the empty cgroups beside that process (a replica waiting to restart)");
    {
        const char *dc[TY_CGROUP_MAX_DIRS], *dd[TY_CGROUP_MAX_DIRS];
        int nd = (int)ty_cgroup_dirs(own, dc, dd);
        ok(asked == 6 * nd,
           "sweep: asked about the three others of its prefix, per hierarchy and pass (%d)",
           asked);
    }
    (void)kill(pid, SIGKILL);
    (void)waitpid(pid, NULL, 0);
    for (int i = 0; i < 100 && ty_cgroup_remove(b) == -EBUSY; i++)
        pause_ms(10);
    (void)ty_cgroup_remove(c);
    (void)ty_cgroup_remove(own);
    ty_cgroup_free(own);
    ty_cgroup_free(a);
    ty_cgroup_free(a_child);
    ty_cgroup_free(b);
    ty_cgroup_free(b_busy);
    ty_cgroup_free(b_idle);
    ty_cgroup_free(c);
}

int main(void)
{
    struct ty_cgroup *job = NULL, *rep = NULL;
    struct ty_error e = {0};
    char name[64];
    char job_path[4096];
    int status;

    if (geteuid() != 0)
        skip_all("needs root to make cgroups");
    (void)snprintf(name, sizeof(name), "ty-test-cgroup-%d", (int)getpid());
    if (ty_cgroup_new(name, &job, &e) < 0)
        skip_all("no cgroup can be made here: %s", ty_error_msg(&e));
    plan(37);
    (void)snprintf(job_path, sizeof(job_path), "%s", ty_cgroup_path(job));
    diag("cgroup v%d at %s", ty_cgroup_version(job), job_path);
    ok(dir_exists(job_path), "the job's cgroup exists");
    ok(ty_cgroup_new_child(job, "master-replica-0", &rep, &e) == 0, "a replica's cgroup");
    ok(ty_cgroup_is_new(rep), "it is new");
    ok(!ty_cgroup_dir(rep, "pids") || ty_cgroup_version(rep) == 2,
       "no pids hierarchy on v1 (no limit there: one directory fewer per replica)");
    {
        struct ty_cgroup *again = NULL;
        ok(ty_cgroup_new_child(job, "master-replica-0", &again, &e) == 0 &&
               !ty_cgroup_is_new(again),
           "made again: the existing one, not new");
        ty_cgroup_free(again);
    }
    {
        /* What the guardian program refuses to rebuild a cgroup from. */
        const char *v1c[] = {"memory", "freezer"}, *v1d[] = {"/a", "/b"}, *rel[] = {"a"};
        const char *v2c[] = {""}, *bad[] = {"pids"};
        struct ty_cgroup *x = NULL;
        ok(ty_cgroup_from_dirs(1, v1c, v1d, 2, &x, &e) == -EINVAL &&
               ty_cgroup_from_dirs(1, bad, v1d, 1, &x, &e) == -EINVAL &&
               ty_cgroup_from_dirs(2, v2c, rel, 1, &x, &e) == -EINVAL &&
               ty_cgroup_from_dirs(2, v1c, v1d, 2, &x, &e) == -EINVAL &&
               ty_cgroup_from_dirs(3, v2c, v1d, 1, &x, &e) == -EINVAL && !x,
           "no cgroup from the freezer not first, a pids dir, a relative path, 2 v2 dirs, v3");
    }
    ok(ty_cgroup_new_child(job, "../x", &(struct ty_cgroup *){NULL}, &e) == -EINVAL,
       "a name with a slash is refused: %s",
       ty_error_msg(&e));

    /* Limits: 1.5 CPUs, 48 MiB. */
    {
        int r = ty_cgroup_set_limits(rep, 1500, 48 << 20, &e);
        ok(r == 0, "limits set: %s", r < 0 ? ty_error_msg(&e) : "");
        if (ty_cgroup_version(rep) == 1 && ty_cgroup_dir(rep, "memory") &&
            ty_cgroup_dir(rep, "cpu")) {
            is_int(read_ll(ty_cgroup_dir(rep, "memory"), "memory.limit_in_bytes"),
                   48 << 20,
                   "memory.limit_in_bytes");
            is_int(read_ll(ty_cgroup_dir(rep, "cpu"), "cpu.cfs_quota_us"),
                   150000,
                   "cpu.cfs_quota_us is 1.5 periods");
            is_int(read_ll(ty_cgroup_dir(rep, "cpu"), "cpu.cfs_period_us"),
                   100000,
                   "of the default period (not written to a new cgroup)");
        } else {
            skip(3, "v1 files only (v2: cpu.max, memory.max)");
        }
    }

    /* A tree that leaves its process group and its session, ended through the job's cgroup
     * rebuilt from its directories (as the guardian program does). */
    {
        char *const tree[] = {(char *)"/bin/sh",
                              (char *)"-c",
                              (char *)"sleep 300 & setsid sleep 301 & exec sleep 302",
                              NULL};
        const char *ctrls[TY_CGROUP_MAX_DIRS], *dirs[TY_CGROUP_MAX_DIRS];
        size_t nd = ty_cgroup_dirs(job, ctrls, dirs);
        struct ty_cgroup *copy = NULL;
        pid_t pid = start_in(rep, tree);
        size_t passes = 0;
        ok(ty_cgroup_from_dirs(ty_cgroup_version(job), ctrls, dirs, nd, &copy, &e) == 0 &&
               strcmp(ty_cgroup_path(copy), job_path) == 0 && !ty_cgroup_is_new(copy),
           "the job's cgroup rebuilt from its %zu directories",
           nd);
        if (!copy)
            BAIL_OUT("%s", ty_error_msg(&e));
        pause_ms(200);
        {
            const char *rc[TY_CGROUP_MAX_DIRS], *rd[TY_CGROUP_MAX_DIRS];
            size_t nr = ty_cgroup_dirs(rep, rc, rd), in = 0;
            for (size_t i = 0; i < nr; i++)
                in += procs_has(rd[i], pid);
            ok(nr > 0 && in == nr, "the child entered all %zu of its directories (in %zu)", nr, in);
        }
        ok(ty_cgroup_populated(copy), "the job's cgroup has processes (seen from the parent)");
        ok(ty_cgroup_signal(rep, 0) >= 3, "three processes are in the replica's cgroup");
        for (int i = 0; i < 500 && ty_cgroup_populated(copy); i++, passes++) {
            (void)ty_cgroup_kill(copy);
            pause_ms(10);
        }
        ok(!ty_cgroup_populated(job),
           "killing the job's cgroup ended everything (%zu passes)",
           passes);
        ty_cgroup_free(copy);
        (void)waitpid(pid, &status, 0);
        ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the direct child was SIGKILLed");
    }

    /* A leaf removed only once empty, without listing it (the cleanup's first try). */
    {
        char *const nap[] = {(char *)"/bin/sleep", (char *)"300", NULL};
        struct ty_cgroup *leaf = NULL;
        const char *lc[TY_CGROUP_MAX_DIRS], *ld[TY_CGROUP_MAX_DIRS];
        size_t nl, left = 0;
        pid_t pid;
        if (ty_cgroup_new_child(job, "busy-leaf", &leaf, &e) < 0)
            BAIL_OUT("%s", ty_error_msg(&e));
        nl = ty_cgroup_dirs(leaf, lc, ld);
        pid = start_in(leaf, nap);
        pause_ms(100);
        for (size_t i = 0; i < nl; i++)
            left += dir_exists(ld[i]);
        ok(ty_cgroup_remove_empty(leaf) == -EBUSY && left == nl,
           "a leaf with a process is refused (EBUSY), its %zu directories kept",
           nl);
        (void)kill(pid, SIGKILL);
        (void)waitpid(pid, NULL, 0);
        left = 0;
        ok(ty_cgroup_remove_empty(leaf) == 0, "once the process is gone it is removed");
        for (size_t i = 0; i < nl; i++)
            left += dir_exists(ld[i]);
        ok(left == 0 && ty_cgroup_remove_empty(leaf) == 0,
           "every directory (%zu left), and again is no error",
           left);
        ty_cgroup_free(leaf);
    }

    /* A memory hog: killed by the limit, counted. */
    {
        char *const hog[] = {(char *)"/bin/sh",
                             (char *)"-c",
                             (char *)"x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}",
                             NULL};
        int64_t before = ty_cgroup_oom_kills(rep);
        pid_t pid = start_in(rep, hog);
        (void)waitpid(pid, &status, 0);
        ok(ty_cgroup_oom_kills(rep) > before,
           "the memory limit killed something (%lld -> %lld)",
           (long long)before,
           (long long)ty_cgroup_oom_kills(rep));
        for (int i = 0; i < 100 && ty_cgroup_populated(job); i++) {
            (void)ty_cgroup_kill(job);
            pause_ms(10);
        }
    }

    /* The guardian's side of the lifeline (cgroup-guard.h): "D" releases it, EOF makes it
     * end and remove the cgroup it guards, a descriptor that is not a pipe is an error. */
    {
        char *const tree[] = {
            (char *)"/bin/sh", (char *)"-c", (char *)"setsid sleep 303 & exec sleep 304", NULL};
        struct ty_cgroup *guarded = NULL;
        char path[4096];
        int life[2];
        pid_t pid;

        if (ty_cgroup_new_child(job, "guarded", &guarded, &e) < 0)
            BAIL_OUT("%s", ty_error_msg(&e));
        (void)snprintf(path, sizeof(path), "%s", ty_cgroup_path(guarded));
        if (pipe(life) < 0)
            BAIL_OUT("pipe: %s", strerror(errno));
        (void)!write(life[1], "D", 1);
        ok(ty_cgroup_guard_wait(life[0]) == 1, "\"D\" on the lifeline: released");
        close(life[1]);
        ok(ty_cgroup_guard_wait(life[0]) == 0, "EOF on the lifeline: the owner is gone");
        close(life[0]);
        ok(ty_cgroup_guard_wait(life[0]) == -EBADF, "a closed descriptor is no lifeline");
        pid = start_in(guarded, tree);
        pause_ms(200);
        ok(ty_cgroup_guard_end(guarded) == 0 && !dir_exists(path),
           "the guardian's end emptied and removed %s",
           path);
        (void)waitpid(pid, &status, 0);
        ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "its process was SIGKILLed");
        ty_cgroup_free(guarded);
    }

    {
        /* A second replica's cgroup left in the job's: the job's rmdir fails (EBUSY), and
         * its tree is emptied then. */
        struct ty_cgroup *other = NULL;
        ok(ty_cgroup_new_child(job, "worker-replica-0", &other, &e) == 0,
           "another replica's cgroup");
        ok(ty_cgroup_remove(rep) == 0, "a replica's cgroup is removed on its own");
        ok(!dir_exists(ty_cgroup_path(rep)), "%s is gone", ty_cgroup_path(rep));
        ty_cgroup_free(other);
    }
    test_sweep(job);
    ok(ty_cgroup_remove(job) == 0, "the job's cgroup and its child are removed");
    ok(!dir_exists(job_path), "%s is gone", job_path);
    ty_cgroup_free(rep);
    ty_cgroup_free(job);
    return done_testing();
}
