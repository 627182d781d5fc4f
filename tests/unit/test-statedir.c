/* SPDX-License-Identifier: Apache-2.0
 * test-statedir.c: a local run's claim on its id (ty_statedir_claim_run, statedir.c): a new id,
 * its run.lock seen held from another process while the run holds it and free once it is gone
 * (ty_statedir_run_active), a running run keeps its id, a SUCCEEDED one keeps it, one whose
 * record cannot be read keeps it, and a FAILED one, or one that ended without a record, is
 * moved aside to <id>.1, <id>.2 with its files; a generated id takes only a new directory; the
 * names of runs and of runs kept aside (ty_statedir_run_name); an earlier version's modes made
 * private (ty_statedir_tighten: its exact modes only, no link followed). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "macro.h"
#include "statedir.h"
#include "tap.h"

static char tmpdir[] = "/tmp/ty-statedir-XXXXXX";

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ty_write_all(fd, text, strlen(text)) < 0 || close(fd) < 0)
        BAIL_OUT("cannot write %s", path);
}

/* The run.lock state of @dir as another process sees it: 1 held, 0 free, -1 error. */
static int active_from_child(const char *dir)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        pid_t holder = 0;
        int r = ty_statedir_run_active(dir, &holder);
        _exit(r == 1 && holder == getppid() ? 1 : r == 0 ? 0 : 2);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status) == 2 ? -1 : WEXITSTATUS(status);
}

/* Claim @id; returns the lock fd (or -1), with *moved set. */
static int claim(const char *id, char **moved, struct ty_error *e)
{
    _cleanup_free_ char *dir = NULL;
    int fd = -1;

    *moved = NULL;
    *e = (struct ty_error){0};
    if (ty_statedir_claim_run(tmpdir, id, &dir, &fd, moved, e) < 0)
        return -1;
    return fd;
}

/* The mode bits of @rel under @root, or -1. */
static int mode_of(const char *root, const char *rel)
{
    struct stat st;
    _cleanup_free_ char *p = xasprintf("%s/%s", root, rel);
    return lstat(p, &st) < 0 ? -1 : (int)(st.st_mode & 07777);
}

/* A state directory as an earlier version left it (0755 and 0644), with a directory the
 * operator made 0750 and links that lead outside. */
static void tighten(void)
{
    _cleanup_free_ char *root = xasprintf("%s/old", tmpdir), *outside = NULL, *p = NULL;
    static const char *const dirs[] = {"jobs",
                                       "jobs/pa",
                                       "jobs/pa/j1",
                                       "jobs/pa/j1/logs",
                                       "jobs/pa/j1/trials",
                                       "jobs/pa/j1/trials/1",
                                       "jobs/pb",
                                       "jobs/pb/j2",
                                       "jobs/pb/j2/logs",
                                       "outside"};

    if (mkdir(root, 0755) < 0)
        BAIL_OUT("mkdir %s", root);
    for (size_t i = 0; i < TY_ARRAY_SIZE(dirs); i++) {
        free(p);
        p = xasprintf("%s/%s", root, dirs[i]);
        if (mkdir(p, 0755) < 0 || chmod(p, 0755) < 0)
            BAIL_OUT("mkdir %s", p);
    }
    free(p);
    p = xasprintf("%s/jobs/pb/j2/logs", root);
    (void)chmod(p, 0750);
    free(p);
    p = xasprintf("%s/trainyard.db", root);
    write_text(p, "");
    (void)chmod(p, 0644);
    outside = xasprintf("%s/outside", root);
    free(p);
    p = xasprintf("%s/jobs/pc", root); /* a link where a project is: not followed */
    if (symlink(outside, p) < 0)
        BAIL_OUT("symlink");
    free(p);
    p = xasprintf("%s/jobs/pa/j1/trials/2", root);
    if (symlink(outside, p) < 0)
        BAIL_OUT("symlink");

    is_int((int)ty_statedir_tighten(root), 9, "nine entries an earlier version made are changed");
    is_int(mode_of(root, "jobs"), 0711, "jobs/ is searchable, not listable");
    is_int(mode_of(root, "jobs/pa"), 0711, "a project's directory too");
    is_int(mode_of(root, "jobs/pa/j1"), 0711, "and a job's");
    is_int(mode_of(root, "jobs/pa/j1/logs"), 0700, "its logs are private");
    is_int(mode_of(root, "jobs/pa/j1/trials"), 0711, "trials/ is searchable");
    is_int(mode_of(root, "jobs/pa/j1/trials/1"), 0700, "a trial's directory is private");
    is_int(mode_of(root, "jobs/pb/j2/logs"), 0750, "a mode the operator chose is kept");
    is_int(mode_of(root, "trainyard.db"), 0600, "the store is private");
    is_int(mode_of(root, "outside"), 0755, "no link is followed");
    is_int(mode_of(root, ""), 0755, "the state directory itself is the operator's");
    is_int((int)ty_statedir_tighten(root), 0, "a second pass changes nothing");
    is_int((int)ty_statedir_tighten("/nonexistent/ty"), 0, "no directory: nothing");
    free(p);
    p = xasprintf("%s/jobs/pa/j1/logs", root); /* jobs/ no longer 0755: no walk */
    (void)chmod(p, 0755);
    is_int((int)ty_statedir_tighten(root), 0, "with jobs/ not 0755, the jobs are not walked");
    is_int(mode_of(root, "jobs/pa/j1/logs"), 0755, "so a mode set since is kept");
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

int main(void)
{
    struct ty_error e = {0};
    char *moved = NULL;
    char path[1024], dir[256];
    int fd, fd2;

    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp");
    (void)snprintf(dir, sizeof(dir), "%s/jobs/local/a", tmpdir);

    fd = claim("a", &moved, &e);
    ok(fd >= 0 && !moved, "a new id is claimed (%s)", e.msg);
    ok(access(dir, F_OK) == 0, "its directory exists");
    is_int(active_from_child(dir), 1, "another process sees the run.lock held, by us");
    fd2 = claim("a", &moved, &e);
    ok(fd2 < 0 && e.code == EEXIST, "a running run keeps its id");
    like(e.msg, "is running (process", "and says it runs");

    (void)snprintf(path, sizeof(path), "%s/job.json", dir);
    write_text(path, "{\"jobId\": \"a\", \"state\": \"SUCCEEDED\"}\n");
    close(fd); /* the run ends */
    is_int(active_from_child(dir), 0, "once the run ended, the lock is free");
    fd2 = claim("a", &moved, &e);
    ok(fd2 < 0 && e.code == EEXIST, "a SUCCEEDED run keeps its id");
    like(e.msg, "already exists and SUCCEEDED", "and says so");

    write_text(path, "{not json");
    fd2 = claim("a", &moved, &e);
    ok(fd2 < 0 && e.code == EEXIST, "a run whose record cannot be read keeps its id");

    write_text(path, "{\"jobId\": \"a\", \"state\": \"FAILED\"}\n");
    (void)snprintf(path, sizeof(path), "%s/logs/master-replica-0.log", dir);
    write_text(path, "first run\n");
    fd = claim("a", &moved, &e);
    ok(fd >= 0, "a FAILED run's id is claimed again (%s)", e.msg);
    (void)snprintf(path, sizeof(path), "%s.1", dir);
    is_str(moved, path, "the earlier run is moved aside to a.1");
    (void)snprintf(path, sizeof(path), "%s.1/logs/master-replica-0.log", dir);
    ok(access(path, F_OK) == 0, "with its logs");
    (void)snprintf(path, sizeof(path), "%s/logs/master-replica-0.log", dir);
    ok(access(path, F_OK) != 0, "the new run starts with none");
    free(moved);
    close(fd);

    /* No job.json and nobody holding the lock: a run killed before its first record. */
    fd = claim("a", &moved, &e);
    (void)snprintf(path, sizeof(path), "%s.2", dir);
    ok(fd >= 0, "a run that ended before any record frees its id (%s)", e.msg);
    is_str(moved, path, "and is kept as a.2");
    free(moved);
    close(fd);

    /* A generated id (no ret_moved) takes only a new directory: a FAILED run keeps its id. */
    {
        _cleanup_free_ char *gdir = NULL;
        int gfd = -1;
        (void)snprintf(path, sizeof(path), "%s/job.json", dir);
        write_text(path, "{\"jobId\": \"a\", \"state\": \"FAILED\"}\n");
        e = (struct ty_error){0};
        is_int(ty_statedir_claim_run(tmpdir, "a", &gdir, &gfd, NULL, &e),
               -EEXIST,
               "a generated id that is taken is refused, even by a FAILED run");
        (void)snprintf(path, sizeof(path), "%s.3", dir);
        ok(access(path, F_OK) != 0 && gfd < 0 && !gdir, "and the earlier run stays where it is");
        e = (struct ty_error){0};
        ok(ty_statedir_claim_run(tmpdir, "b", &gdir, &gfd, NULL, &e) == 0 && gfd >= 0,
           "a generated id that is new is claimed (%s)",
           e.msg);
        if (gfd >= 0)
            close(gfd);
    }

    is_int(ty_statedir_run_active("/nonexistent/dir", NULL), 0, "no run.lock: not running");

    /* The service's create: a directory left with nothing but an empty logs/ is taken; one
     * with anything in it is not, and only one made here may be removed again. */
    {
        char *d1 = NULL, *d2 = NULL, *d3 = NULL, f[4096];
        bool made = false;
        e = (struct ty_error){0};
        ok(ty_statedir_claim_new_job(tmpdir, "svc", "n1", &d1, &made, &e) == 0 && made,
           "claim_new_job: a new directory is made");
        ok(ty_statedir_claim_new_job(tmpdir, "svc", "n1", &d2, &made, &e) == 0 && !made && d2 &&
               strcmp(d1, d2) == 0,
           "claim_new_job: one holding an empty logs/ is taken, not made");
        (void)snprintf(f, sizeof(f), "%s/logs/service.log", d1);
        write_text(f, "x");
        is_int(ty_statedir_claim_new_job(tmpdir, "svc", "n1", &d3, &made, &e),
               -EEXIST,
               "claim_new_job: one with a log is another job's");
        ok(!d3 && !made, "  nothing given");
        (void)unlink(f);
        (void)snprintf(f, sizeof(f), "%s/job.json", d1);
        write_text(f, "{}");
        is_int(ty_statedir_claim_new_job(tmpdir, "svc", "n1", &d3, &made, &e),
               -EEXIST,
               "claim_new_job: so is one with anything beside logs/");
        free(d1);
        free(d2);
        /* cut short before its logs/ was made */
        (void)snprintf(f, sizeof(f), "%s/jobs/svc/n2", tmpdir);
        ok(mkdir(f, 0711) == 0, "a job directory without logs/");
        ok(ty_statedir_claim_new_job(tmpdir, "svc", "n2", &d3, &made, &e) == 0 && !made && d3,
           "claim_new_job: an empty one is taken too");
        (void)snprintf(f, sizeof(f), "%s/jobs/svc/n2/logs", tmpdir);
        ok(access(f, F_OK) == 0, "  with its logs/ made");
        free(d3);
    }

    /* Names that would leave jobs/<project>/ are refused before anything is made. */
    {
        static const char *const names[][2] = {
            {"..", "j"}, {".", "j"}, {"", "j"}, {"a/b", "j"}, {"p", ".."}, {"p", "x/../../y"}};
        char *d = NULL;
        int lfd = -1;
        for (size_t i = 0; i < TY_ARRAY_SIZE(names); i++) {
            e = (struct ty_error){0};
            is_int(ty_statedir_claim_job(tmpdir, names[i][0], names[i][1], &d, &e),
                   -EINVAL,
                   "claim_job: project '%s', job '%s' refused",
                   names[i][0],
                   names[i][1]);
            like(e.msg, "must not be empty, '.' or '..', or hold a '/'", "  naming the rule");
            is_int(ty_statedir_reopen_job(tmpdir, names[i][0], names[i][1], &d, &e),
                   -EINVAL,
                   "reopen_job: project '%s', job '%s' refused",
                   names[i][0],
                   names[i][1]);
        }
        is_int(ty_statedir_claim_run(tmpdir, "..", &d, &lfd, NULL, &e),
               -EINVAL,
               "claim_run: job '..' refused");
        (void)snprintf(path, sizeof(path), "%s/j", tmpdir);
        ok(access(path, F_OK) != 0 && !d && lfd < 0, "nothing made outside jobs/<project>/");
    }

    /* The names under jobs/local: job ids, and the runs kept aside. */
    is_int(ty_statedir_run_name("a", &e), 0, "a job id names a run");
    is_int(ty_statedir_run_name("a.2", &e), 1, "<jobId>.<N> names a run kept aside");
    is_int(ty_statedir_run_name("aud_1.12", &e), 1, "N of two digits");
    static const char *const bad[][2] = {
        {"a.0", "N must be a number from 1"},
        {"a.01", "without leading zeros (got '01')"},
        {"a.x", "jobId: may contain only letters, digits and underscores (got 'a.x')"},
        {"a.", "an earlier run kept aside is <jobId>.<N>"},
        {"a.b.1", "(got 'a.b')"},
        {"../a", "jobId: must start with a letter"},
        {".1", "jobId: required"},
        {"a.99999999999", "to 2147483647"},
        {"", "jobId: required"},
    };
    for (size_t i = 0; i < TY_ARRAY_SIZE(bad); i++) {
        e = (struct ty_error){0};
        is_int(ty_statedir_run_name(bad[i][0], &e), -EINVAL, "'%s' names no run", bad[i][0]);
        like(e.msg, bad[i][1], "and says why");
    }
    tighten();
    (void)nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
