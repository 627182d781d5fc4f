/* SPDX-License-Identifier: Apache-2.0
 * trainyard-guardian: the guardian of one run's cgroups under the process runtime
 * (docs/internals/runtime.md, src/lib/exec/process/process-jail.c). The runtime starts it
 * with an exec, not a fork, so that it shares no memory with its owner (`trainyard local
 * train`, a supervisor): a forked guardian living as long as the job made every page the
 * owner wrote a copy-on-write fault.
 *
 *   trainyard-guardian VERSION CTRL=DIR...
 *     VERSION  the cgroups' version, 1 or 2
 *     CTRL=DIR each directory of the job's cgroup (ty_cgroup_dirs): v1 "freezer=DIR" first,
 *              then "memory=DIR", "cpu=DIR" when used; v2 one "=DIR"
 *   fd 3: the lifeline, the read end of a pipe whose write end only the owner holds.
 *
 * The owner starts it in a session of its own, outside the job's cgroups, with fds 0-2 on
 * /dev/null, no other descriptor, cwd /, an empty environment and default signal
 * dispositions. It reads fd 3: "D" (the owner removed the cgroups) ends it at once; EOF (the
 * owner died, or gave the job up) makes it kill everything in the job's cgroups until they
 * are empty (at most a minute), remove them and exit. Exit status: 0, 1 when the cgroups
 * could not be removed, 2 for arguments it does not understand or no fd 3. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cgroup-guard.h"
#include "cgroup.h"
#include "error.h"

#define LIFELINE_FD 3

/* What --help (or -h) prints, and a wrong command line gets on stderr. */
static const char usage[] =
    "usage: trainyard-guardian 1|2 CTRL=DIR... (lifeline on fd 3)\n"
    "The guardian of a process-runtime job's cgroups, started by the runtime: when the\n"
    "lifeline's other end closes, it ends every process left in them. Not for direct use.\n";

/* The job's cgroup from the command line, or NULL (with a message on stderr, /dev/null when
 * the runtime started it: a version mismatch between programs is the only way here). */
static struct ty_cgroup *parse_args(int argc, char **argv)
{
    const char *ctrls[TY_CGROUP_MAX_DIRS], *dirs[TY_CGROUP_MAX_DIRS];
    char copy[TY_CGROUP_MAX_DIRS][4096];
    struct ty_cgroup *cg = NULL;
    struct ty_error e = {0};
    size_t n = 0;

    if (argc < 3 || argc - 2 > TY_CGROUP_MAX_DIRS ||
        (strcmp(argv[1], "1") && strcmp(argv[1], "2"))) {
        fputs(usage, stderr);
        return NULL;
    }
    for (int i = 2; i < argc; i++, n++) {
        char *eq;
        if (snprintf(copy[n], sizeof(copy[n]), "%s", argv[i]) >= (int)sizeof(copy[n]) ||
            !(eq = strchr(copy[n], '='))) {
            fprintf(stderr, "trainyard-guardian: not CTRL=DIR: %s\n", argv[i]);
            return NULL;
        }
        *eq = '\0';
        ctrls[n] = copy[n];
        dirs[n] = eq + 1;
    }
    if (ty_cgroup_from_dirs(argv[1][0] - '0', ctrls, dirs, n, &cg, &e) < 0) {
        fprintf(stderr, "trainyard-guardian: %s\n", ty_error_msg(&e));
        return NULL;
    }
    return cg;
}

/* LeakSanitizer (ASan builds only) asks this before its check at exit. An ASan build's
 * guardian was found 30 minutes after its job still running at full CPU in that check (its
 * /proc/self/task open, the tracer it clones asleep with every signal blocked), an orphan the
 * test run never saw end. The guardian keeps nothing beyond main: the check is off here. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

int main(int argc, char **argv)
{
    struct sigaction ign = {.sa_handler = SIG_IGN};
    struct ty_cgroup *cg;
    int r;

    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    (void)prctl(PR_SET_NAME, "ty-guardian", 0, 0, 0);
    (void)sigaction(SIGINT, &ign, NULL);
    (void)sigaction(SIGTERM, &ign, NULL);
    (void)sigaction(SIGHUP, &ign, NULL);
    (void)sigaction(SIGPIPE, &ign, NULL);
    cg = parse_args(argc, argv);
    if (!cg)
        return 2;
    r = ty_cgroup_guard_wait(LIFELINE_FD);
    if (r < 0) { /* run by hand: no owner's death to act on */
        fprintf(stderr, "trainyard-guardian: fd 3 is not a lifeline: %s\n", strerror(-r));
        ty_cgroup_free(cg);
        return 2;
    }
    if (r == 0) /* the owner died (or gave the job up): nothing of the job may outlive it */
        r = ty_cgroup_guard_end(cg);
    else
        r = 0;
    ty_cgroup_free(cg);
    return r < 0 ? 1 : 0;
}
