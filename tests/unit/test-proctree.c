/* SPDX-License-Identifier: Apache-2.0
 * test-proctree.c: ty_proc_env_has (proctree.c), which the service's sweep and the
 * process-tree walk use to find a job's processes by an environment entry: an entry placed
 * after more than 128 KiB of other environment (a big CLUSTER_SPEC) is still found, and near
 * misses are not. ty_proctree_reap_orphans among many children: it reaps every zombie no one
 * owns and none that is owned, through owning and disowning in any order (the owned pids are
 * a hash set: growth, removed entries, re-owning), whether the kernel names an unowned zombie
 * first (reaped by pid) or an owned one (the children listed). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proctree.h"
#include "tap.h"

#define KEY_NAME  "TY_TEST_SWEEP_KEY"
#define KEY_VALUE "k3y-after-the-spec"
/* One environment string may not exceed 128 KiB (MAX_ARG_STRLEN): the filler is in parts. */
#define FILLER_PARTS 4
#define FILLER_LEN   (40 * 1024)

/* Start /bin/sleep with an environment of FILLER_PARTS * FILLER_LEN bytes, then the key. */
static pid_t start_child(void)
{
    char *envp[FILLER_PARTS + 2];
    pid_t pid;

    for (int i = 0; i < FILLER_PARTS; i++) {
        envp[i] = malloc(FILLER_LEN + 32);
        if (!envp[i])
            BAIL_OUT("out of memory");
        int n = snprintf(envp[i], 32, "CLUSTER_SPEC_%d=", i);
        memset(envp[i] + n, 'x', FILLER_LEN);
        envp[i][n + FILLER_LEN] = '\0';
    }
    envp[FILLER_PARTS] = (char *)KEY_NAME "=" KEY_VALUE;
    envp[FILLER_PARTS + 1] = NULL;
    pid = fork();
    if (pid == 0) {
        char *argv[] = {(char *)"sleep", (char *)"30", NULL};
        execve("/bin/sleep", argv, envp);
        _exit(127);
    }
    for (int i = 0; i < FILLER_PARTS; i++)
        free(envp[i]);
    return pid;
}

/* Wait (up to 5 s) until the child has exec'd: before, its environment is a copy of ours. */
static bool wait_for_key(pid_t pid)
{
    for (int i = 0; i < 500; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (ty_proc_env_has(pid, KEY_NAME, KEY_VALUE))
            return true;
        (void)nanosleep(&ts, NULL);
    }
    return false;
}

#define N_KIDS 300

/* Fork N_KIDS children that exit at once; own those of even index (and disown/re-own some on
 * the way), wait until all are zombies, then reap the orphans. */
static void reap_among_many(void)
{
    pid_t kids[N_KIDS];
    int reaped, still = 0, gone = 0;

    for (int i = 0; i < N_KIDS; i++) {
        kids[i] = fork();
        if (kids[i] == 0)
            _exit(0);
        if (kids[i] < 0)
            BAIL_OUT("fork failed");
    }
    for (int i = 0; i < N_KIDS; i++)
        ty_proctree_own(kids[i]);
    for (int i = 1; i < N_KIDS; i += 2) /* the odd ones: owned no longer */
        ty_proctree_disown(kids[i]);
    for (int i = 0; i < N_KIDS; i += 4) { /* disowned and owned again: still owned */
        ty_proctree_disown(kids[i]);
        ty_proctree_own(kids[i]);
    }
    ty_proctree_own(kids[0]);          /* owned twice is owned once */
    for (int i = 0; i < N_KIDS; i++) { /* every child a zombie (waited for, not reaped) */
        siginfo_t si;
        (void)waitid(P_PID, (id_t)kids[i], &si, WEXITED | WNOWAIT);
    }
    reaped = ty_proctree_reap_orphans();
    is_int(reaped, N_KIDS / 2, "the %d zombies no one owns are reaped", N_KIDS / 2);
    for (int i = 0; i < N_KIDS; i += 2) {
        still += waitpid(kids[i], NULL, WNOHANG) == kids[i];
        ty_proctree_disown(kids[i]);
    }
    for (int i = 1; i < N_KIDS; i += 2)
        gone += waitpid(kids[i], NULL, WNOHANG) < 0;
    is_int(still, N_KIDS / 2, "the owned ones were left to their owner");
    is_int(gone, N_KIDS / 2, "the unowned ones are gone");
    is_int(ty_proctree_reap_orphans(), 0, "nothing is left to reap");
}

/* The order the kernel lists zombies in: unowned ones before an owned one (reaped by pid,
 * as the kernel names them), one after it (found by listing the children), none at all. */
static void reap_in_order(void)
{
    pid_t kids[4];

    for (int i = 0; i < 4; i++) {
        siginfo_t si;
        kids[i] = fork();
        if (kids[i] == 0)
            _exit(0);
        if (kids[i] < 0)
            BAIL_OUT("fork failed");
        (void)waitid(P_PID, (id_t)kids[i], &si, WEXITED | WNOWAIT);
    }
    ty_proctree_own(kids[2]);
    is_int(ty_proctree_reap_orphans(), 3, "unowned zombies before and after an owned one: 3");
    is_int(waitpid(kids[2], NULL, WNOHANG), kids[2], "the owned one was left to its owner");
    ty_proctree_disown(kids[2]);
    is_int(ty_proctree_reap_orphans(), 0, "no zombie: nothing to reap");
}

/* A child sleeping in the process group @group (0: a group of its own, -1: its own session),
 * for the outside-group check. */
static pid_t sleeper(pid_t group)
{
    pid_t pid = fork();

    if (pid == 0) {
        if (group < 0)
            (void)setsid();
        else
            (void)setpgid(0, group);
        pause();
        _exit(0);
    }
    if (pid > 0 && group >= 0)
        (void)setpgid(pid, group ? group : pid); /* both sides: no race with the signal */
    return pid;
}

/* Each process of a replica gets one copy of a signal: the group's members (its leader
 * too) only through the group, the others once however many lists name them. */
static void outside_group(void)
{
    pid_t leader = sleeper(0), member = sleeper(leader), away = sleeper(-1), *out = NULL;
    pid_t tree[] = {member, away}, cg[] = {leader, away, member, away};
    size_t n;

    n = ty_proctree_outside_group(leader, tree, 2, cg, 4, &out);
    ok(n == 1 && out && out[0] == away,
       "outside the group: only the one that left it, once (%zu)",
       n);
    free(out);
    n = ty_proctree_outside_group(leader, NULL, 0, NULL, 0, &out);
    ok(n == 0 && !out, "outside the group: nothing of nothing");
    for (size_t i = 0; i < 3; i++) {
        pid_t p = i == 0 ? leader : i == 1 ? member : away;
        (void)kill(p, SIGKILL);
        (void)waitpid(p, NULL, 0);
    }
}

int main(void)
{
    pid_t pid = start_child();

    if (pid < 0)
        BAIL_OUT("fork failed");
    ok(wait_for_key(pid),
       "an entry after %d KiB of environment is found",
       FILLER_PARTS * FILLER_LEN / 1024);
    ok(!ty_proc_env_has(pid, KEY_NAME, "k3y"), "a prefix of the value is not a match");
    ok(!ty_proc_env_has(pid, KEY_NAME, KEY_VALUE "x"), "a longer value is not a match");
    ok(!ty_proc_env_has(pid, "TY_TEST_SWEEP", KEY_VALUE), "another name is not a match");
    ok(!ty_proc_env_has(pid, "_KEY", KEY_VALUE), "a suffix of the name is not a match");
    ok(!ty_proc_env_has(pid, "CLUSTER_SPEC_0", ""), "an entry with another value is not a match");
    ok(!ty_proc_env_has(getpid(), KEY_NAME, KEY_VALUE), "this process does not have it");
    ok(ty_proc_env_has(pid, KEY_NAME, NULL), "a name, whatever its value, is found");
    ok(ty_proc_env_has(pid, "CLUSTER_SPEC_0", NULL), "a name early in the environment too");
    ok(!ty_proc_env_has(pid, "TY_TEST_SWEEP", NULL), "a prefix of a name is not a match");
    ok(!ty_proc_env_has(getpid(), KEY_NAME, NULL), "nor is a name the process lacks");
    (void)kill(pid, SIGKILL);
    (void)waitpid(pid, NULL, 0);
    ok(!ty_proc_env_has(pid, KEY_NAME, KEY_VALUE), "a process that is gone has nothing");
    reap_among_many();
    reap_in_order();
    outside_group();
    return done_testing();
}
