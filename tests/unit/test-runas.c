/* SPDX-License-Identifier: Apache-2.0
 * test-runas.c: trainyardd's --project-user map and the decision of who runs a job
 * (src/trainyardd/runas.c): which runtime and which daemon user it concerns, the refusal
 * naming the settings, and the argument the supervisor gets. Uses the users every Debian
 * system has: root (uid 0) and nobody (uid 65534). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "tap.h"

/* runas.c logs through the daemon's tyd_log (main.c, not linked here): print it as TAP
 * diagnostics. */
void tyd_log(const char *fmt, ...)
{
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag("tyd_log: %s", msg);
}

static void test_add(void)
{
    struct tyd_runas *m = NULL;
    struct ty_error e = {0};

    is_int(tyd_runas_add(&m, "p1:nobody", "--project-user", &e), 0, "PROJECT:USER is accepted");
    is_int(tyd_runas_add(&m, "*:nobody", "--project-user", &e), 0, "'*' is every project");
    is_int(tyd_runas_add(&m, "org.com:proj:nobody", "--project-user", &e),
           0,
           "a project id with ':' takes the user after the last one");
    is_int(tyd_runas_add(&m, "p1:no_such_user_xyz", "--project-user", &e),
           -ENOENT,
           "an unknown user is refused");
    like(ty_error_msg(&e), "--project-user: unknown user 'no_such_user_xyz'", "naming the option");
    is_int(tyd_runas_add(&m, "nobody", "conf:3: project-user", &e), -EINVAL, "no project");
    like(ty_error_msg(&e), "conf:3: project-user: expected PROJECT:USER", "naming the line");
    is_int(tyd_runas_add(&m, "p1:", "--project-user", &e), -EINVAL, "no user");
    is_int(tyd_runas_add(&m, ":nobody", "--project-user", &e), -EINVAL, "empty project");
    is_int(tyd_runas_add(&m, "a/b:nobody", "--project-user", &e), -EINVAL, "a bad project id");
    like(ty_error_msg(&e), "invalid project id 'a/b'", "the rule is named");
    is_int(tyd_runas_add(&m, "p1:../x", "--project-user", &e), -EINVAL, "a bad user name");
    tyd_runas_free(m);
}

static void test_decide(void)
{
    struct tyd_runas *m = NULL;
    struct ty_error e = {0};
    const char *user;
    char why[700];

    /* Without a map. */
    is_int(tyd_runas_decide(NULL, 0, false, "p1", "process", &user, why, sizeof(why)),
           TYD_RUNAS_REFUSED,
           "root, process runtime, no map, no --allow-root-jobs: refused");
    like(why, "--project-user=p1:USER", "the message names --project-user for the project");
    like(why, "--allow-root-jobs", "and --allow-root-jobs");
    is_int(tyd_runas_decide(NULL, 0, true, "p1", "process", &user, why, sizeof(why)),
           TYD_RUNAS_DAEMON,
           "with --allow-root-jobs it runs as root");
    is_int(tyd_runas_decide(NULL, 1000, false, "p1", "process", &user, why, sizeof(why)),
           TYD_RUNAS_DAEMON,
           "a daemon that is not root runs jobs as itself");
    is_int(tyd_runas_decide(NULL, 0, false, "p1", "container", &user, why, sizeof(why)),
           TYD_RUNAS_DAEMON,
           "the container runtime is not refused");
    is_int(tyd_runas_decide(NULL, 0, false, "p1", "slurm", &user, why, sizeof(why)),
           TYD_RUNAS_REFUSED,
           "the slurm runtime (sbatch as root) is refused under a root daemon");
    like(why, "--allow-root-jobs", "naming --allow-root-jobs");
    is_int(tyd_runas_decide(NULL, 0, true, "p1", "slurm", &user, why, sizeof(why)),
           TYD_RUNAS_DAEMON,
           "and runs as root with it");
    is_int(tyd_runas_decide(NULL, 1000, false, "p1", "slurm", &user, why, sizeof(why)),
           TYD_RUNAS_DAEMON,
           "a daemon that is not root runs slurm jobs as itself");

    /* With a map: p1 -> nobody, p2 -> root, nothing for others (then '*'). */
    (void)tyd_runas_add(&m, "p1:nobody", "--project-user", &e);
    (void)tyd_runas_add(&m, "p2:root", "--project-user", &e);
    is_int(tyd_runas_decide(m, 0, false, "p1", "process", &user, why, sizeof(why)),
           TYD_RUNAS_USER,
           "a mapped project runs as its user");
    is_str(user, "nobody", "the user is the mapped one");
    is_int(tyd_runas_decide(m, 0, true, "p1", "process", &user, why, sizeof(why)),
           TYD_RUNAS_USER,
           "--allow-root-jobs does not make a mapped project run as root");
    is_int(tyd_runas_decide(m, 0, false, "p2", "process", &user, why, sizeof(why)),
           TYD_RUNAS_REFUSED,
           "a project mapped to root is refused without --allow-root-jobs");
    like(why, "which is root (uid 0)", "saying its user is root");
    is_int(tyd_runas_decide(m, 0, true, "p2", "process", &user, why, sizeof(why)),
           TYD_RUNAS_DAEMON,
           "and runs as root with it");
    is_int(tyd_runas_decide(m, 0, false, "p3", "process", &user, why, sizeof(why)),
           TYD_RUNAS_REFUSED,
           "an unmapped project is refused");
    is_int(tyd_runas_decide(m, 1000, false, "p1", "process", &user, why, sizeof(why)),
           TYD_RUNAS_DAEMON,
           "the map means nothing to a daemon that is not root");
    (void)tyd_runas_add(&m, "*:nobody", "--project-user", &e);
    is_int(tyd_runas_decide(m, 0, false, "p3", "process", &user, why, sizeof(why)),
           TYD_RUNAS_USER,
           "'*' maps every project without its own line");
    is_str(user, "nobody", "to its user");
    is_int(tyd_runas_decide(m, 0, false, "p2", "process", &user, why, sizeof(why)),
           TYD_RUNAS_REFUSED,
           "a project's own line wins over '*'");
    (void)tyd_runas_add(&m, "p2:nobody", "--project-user", &e);
    is_int(tyd_runas_decide(m, 0, false, "p2", "process", &user, why, sizeof(why)),
           TYD_RUNAS_USER,
           "a later line for a project replaces the earlier one");
    tyd_runas_free(m);
}

/* The supervisor's argument, for this process's own uid. */
static void test_supervisor_arg(void)
{
    struct tyd d = {0};
    struct ty_error e = {0};
    char buf[700];

    (void)tyd_runas_add(&d.runas, "p1:nobody", "--project-user", &e);
    if (geteuid() != 0) {
        is_int(tyd_runas_supervisor_arg(&d, "p1", "process", buf, sizeof(buf)),
               0,
               "not root: no --run-as");
        is_int(tyd_runas_supervisor_arg(&d, "p9", "process", buf, sizeof(buf)),
               0,
               "not root: nothing refused");
    } else {
        is_int(tyd_runas_supervisor_arg(&d, "p1", "process", buf, sizeof(buf)),
               1,
               "root: a mapped project's supervisor gets an argument");
        is_str(buf, "--run-as=nobody", "--run-as=USER");
        is_int(tyd_runas_supervisor_arg(&d, "p9", "process", buf, sizeof(buf)),
               -1,
               "root: an unmapped project's job is refused");
        like(buf, "--allow-root-jobs", "naming the setting");
    }
    is_int(tyd_runas_supervisor_arg(&d, "p1", "container", buf, sizeof(buf)),
           0,
           "a container job's supervisor gets no --run-as");
    d.allow_root_jobs = true;
    is_int(tyd_runas_supervisor_arg(&d, "p9", "process", buf, sizeof(buf)),
           0,
           "--allow-root-jobs: an unmapped project's job runs as the daemon");
    tyd_runas_log_start(&d);
    tyd_runas_free(d.runas);
}

int main(void)
{
    test_add();
    test_decide();
    test_supervisor_arg();
    return done_testing();
}
