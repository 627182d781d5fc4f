/* SPDX-License-Identifier: Apache-2.0
 * test-jobdir.c: where a job of the service may write on this machine
 * (src/trainyardd/jobdir.c): URIs pass, a local jobDir only inside an allowed root, clean,
 * and not leading out through a symbolic link; the refusals name the field and the setting. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "daemon.h"
#include "spec.h"
#include "strv.h"
#include "tap.h"

/* jobdir.c is linked with runas.c, which logs through the daemon's tyd_log (main.c). */
void tyd_log(const char *fmt, ...)
{
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag("tyd_log: %s", msg);
}

static char base[64];

static char *path(const char *rel)
{
    static char buf[4][256];
    static int i;
    char *p = buf[i++ % 4];
    (void)snprintf(p, 256, "%s/%s", base, rel);
    return p;
}

static int check(char *const *roots, const char *dir, char *why, size_t n)
{
    why[0] = '\0';
    return tyd_jobdir_check(roots, NULL, dir, why, n);
}

int main(void)
{
    char **roots = NULL;
    struct ty_error e = {0};
    char why[2048];

    (void)snprintf(base, sizeof(base), "/tmp/test-jobdir.XXXXXX");
    if (!mkdtemp(base))
        BAIL_OUT("mkdtemp: %s", strerror(errno));
    if (mkdir(path("root"), 0755) < 0 || mkdir(path("other"), 0755) < 0 ||
        mkdir(path("root/sub"), 0755) < 0 || symlink(path("other"), path("root/out")) < 0 ||
        symlink(path("root/sub"), path("root/in")) < 0)
        BAIL_OUT("setup: %s", strerror(errno));

    /* The setting. */
    is_int(tyd_jobdir_root_add(&roots, "relative/dir", "--job-dir-root", &e),
           -EINVAL,
           "a relative root is refused");
    like(ty_error_msg(&e), "--job-dir-root", "naming the option");
    is_int(tyd_jobdir_root_add(&roots, path("missing"), "--job-dir-root", &e),
           -ENOENT,
           "a root that does not exist is refused");
    is_int(tyd_jobdir_root_add(&roots, "/", "--job-dir-root", &e), -EINVAL, "'/' is refused");
    ok(roots == NULL, "nothing was added");

    /* No root: only URIs. */
    is_int(check(NULL, NULL, why, sizeof(why)), 0, "no jobDir is fine");
    is_int(check(NULL, "gs://bucket/out", why, sizeof(why)), 0, "a URI is fine without roots");
    is_int(check(NULL, path("root/x"), why, sizeof(why)), -1, "a local one is refused without");
    like(why, "trainingInput.jobDir", "naming the field");
    like(why, "--job-dir-root", "and the setting");

    is_int(tyd_jobdir_root_add(&roots, path("root"), "--job-dir-root", &e), 0, "a root is added");
    is_int(check(roots, path("root"), why, sizeof(why)), -1, "not the root itself");
    ok(strstr(why, "is not below a directory this service lets jobs write to (--job-dir-root: ") !=
           NULL,
       "it says why, naming --job-dir-root: %s",
       why);
    is_int(check(roots, path("root/"), why, sizeof(why)), -1, "nor the root with a trailing '/'");
    is_int(check(roots, path("root/sub/"), why, sizeof(why)), 0, "a trailing '/' is the same dir");
    is_int(check(roots, path("root/sub//"), why, sizeof(why)), 0, "and two");
    is_int(check(roots, path("root/sub/new/deeper"), why, sizeof(why)), 0, "a new dir below it");
    /* no link at all below a root: a job can plant one where the next jobDir is */
    is_int(check(roots, path("root/in/x"), why, sizeof(why)), -1, "a link that stays inside");
    like(why, "has a symbolic link on its way, '", "says so");
    like(why, "root/in', which the service does not follow", "naming the link");
    ok(symlink(path("other/notyet"), path("root/dang")) == 0, "a dangling link");
    is_int(check(roots, path("root/dang/sub"), why, sizeof(why)), -1, "through a dangling link");
    like(why, "root/dang', which the service does not follow", "naming it");
    is_int(check(roots, path("rootx/a"), why, sizeof(why)), -1, "a sibling with the root's prefix");
    like(why, "is not below a directory", "says it is not below one");
    is_int(check(roots, path("other/a"), why, sizeof(why)), -1, "another directory");
    is_int(check(roots, "/etc", why, sizeof(why)), -1, "/etc");
    is_int(check(roots, path("root/../other"), why, sizeof(why)), -1, "'..' components");
    like(why, "'..'", "says why");
    is_int(check(roots, path("root/./sub"), why, sizeof(why)), -1, "'.' components");
    is_int(check(roots, path("root//sub"), why, sizeof(why)), -1, "empty components");
    ok(strstr(why,
              "'..' components, below a directory this service lets jobs write to "
              "(--job-dir-root: ") != NULL,
       "it says why, naming --job-dir-root: %s",
       why);
    is_int(check(roots, "relative/x", why, sizeof(why)), -1, "a relative path");
    is_int(check(roots, path("root/out"), why, sizeof(why)), -1, "a link that leads out");
    like(why, "symbolic link", "says so");
    is_int(check(roots, path("root/out/new/dir"), why, sizeof(why)), -1, "and below such a link");
    is_int(check(roots, "file:///etc", why, sizeof(why)), 0, "any URI is left to its scheme");

    /* PROJECT:DIR: a root of one project's jobs */
    {
        char **proots = NULL, *arg = xasprintf("pa:%s", path("other"));
        char *arg2 = xasprintf("org:team:%s", path("other"));
        is_int(tyd_jobdir_root_add(&proots, arg, "--job-dir-root", &e), 0, "PROJECT:DIR is added");
        is_int(
            tyd_jobdir_root_add(&proots, arg2, "--job-dir-root", &e), 0, "a project id with ':'");
        is_int(tyd_jobdir_check(proots, "org:team", path("other/z"), why, sizeof(why)),
               0,
               "is that project's");
        free(arg2);
        is_int(tyd_jobdir_root_add(&proots, path("root"), "--job-dir-root", &e), 0, "and DIR");
        is_int(tyd_jobdir_check(proots, "pa", path("other/x"), why, sizeof(why)),
               0,
               "its project may use it");
        is_int(tyd_jobdir_check(proots, "pb", path("other/x"), why, sizeof(why)),
               -1,
               "another project may not");
        like(why, "is not below a directory", "says so");
        ok(strstr(why, "pa:") == NULL, "not naming the other project's root");
        is_int(tyd_jobdir_check(proots, "pb", path("root/y"), why, sizeof(why)),
               0,
               "every project may use a plain DIR");
        is_int(tyd_jobdir_root_add(&proots, "a b:/tmp", "--job-dir-root", &e),
               -EINVAL,
               "a bad project id is refused");
        ty_strv_free(proots);
        free(arg);
    }
    ok(!ty_job_dir_is_local("gs://b/p") && ty_job_dir_is_local("/x") && !ty_job_dir_is_local(""),
       "is_local");

    ty_strv_free(roots);
    (void)unlink(path("root/out"));
    (void)unlink(path("root/in"));
    (void)unlink(path("root/dang"));
    (void)rmdir(path("root/sub"));
    (void)rmdir(path("root"));
    (void)rmdir(path("other"));
    (void)rmdir(base);
    return done_testing();
}
