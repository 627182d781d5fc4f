/* SPDX-License-Identifier: Apache-2.0
 * test-proctree.c: ty_proc_env_has (proctree.c), which the service's sweep and the
 * process-tree walk use to find a job's processes by an environment entry: an entry placed
 * after more than 128 KiB of other environment (a big CLUSTER_SPEC) is still found, and near
 * misses are not. */
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
    (void)kill(pid, SIGKILL);
    (void)waitpid(pid, NULL, 0);
    ok(!ty_proc_env_has(pid, KEY_NAME, KEY_VALUE), "a process that is gone has nothing");
    return done_testing();
}
