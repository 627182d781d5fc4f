/* SPDX-License-Identifier: Apache-2.0
 * test-subproc.c: running short commands with a deadline (subproc.c): output and status,
 * the extra environment, a signal, a missing command, and the deadline killing the whole
 * process group. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "subproc.h"
#include "tap.h"
#include "timeutil.h"

static struct ty_error err;

static int
run(const char *script, char *const env[], int64_t timeout, struct ty_subproc_result *res)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    ty_error_clear(&err);
    return ty_subproc_run(argv, env, timeout, res, &err);
}

int main(void)
{
    struct ty_subproc_result res;
    char *env[] = {"TY_SUBPROC_TEST=hello there", NULL};
    char script[256];
    int64_t t0;

    is_int(run("echo out; echo line2; echo err >&2; echo >&2; exit 3", NULL, 5000000, &res),
           0,
           "a command that fails still runs");
    is_int(res.status, 3, "its exit status");
    is_str(res.out, "out\nline2\n", "stdout kept as is");
    is_str(res.err, "err", "stderr with trailing whitespace removed");
    ty_subproc_result_release(&res);

    is_int(run("printf %s \"$TY_SUBPROC_TEST\"; read x || echo eof >&2", env, 5000000, &res),
           0,
           "extra environment");
    is_str(res.out, "hello there", "the variable is set");
    is_str(res.err, "eof", "stdin is /dev/null");
    ty_subproc_result_release(&res);

    is_int(run("kill -TERM $$", NULL, 5000000, &res), 0, "killed by a signal");
    is_int(res.status, 128 + SIGTERM, "status 128 + SIGTERM");
    ty_subproc_result_release(&res);

    {
        char *argv[] = {"ty-no-such-command-here", NULL};
        is_int(ty_subproc_run(argv, NULL, 5000000, &res, &err), -ENOENT, "a missing command");
        ok(strstr(err.msg, "ty-no-such-command-here: not found in PATH") != NULL,
           "says so: %s",
           err.msg);
    }

    snprintf(
        script, sizeof(script), "sleep 31.%d & exec sleep 32.%d", (int)getpid(), (int)getpid());
    t0 = ty_mono_usec();
    is_int(run(script, NULL, 300000, &res), -ETIMEDOUT, "the deadline kills it");
    ok(ty_mono_usec() - t0 < 3000000, "promptly");
    ok(strstr(err.msg, "did not finish within") != NULL, "says so: %s", err.msg);
    {
        char check[128];
        snprintf(check,
                 sizeof(check),
                 "sleep 0.2; ! pgrep -f 'sleep 3[12].%d' >/dev/null",
                 (int)getpid());
        is_int(run(check, NULL, 5000000, &res), 0, "pgrep ran");
        is_int(res.status, 0, "its background child went with it (the process group)");
        ty_subproc_result_release(&res);
    }
    return done_testing();
}
