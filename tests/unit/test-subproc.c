/* SPDX-License-Identifier: Apache-2.0
 * test-subproc.c: running short commands with a deadline (subproc.c). Synchronously:
 * output and status, the extra environment, a signal, a missing command, and the deadline
 * killing the whole process group. On a loop: success, a non-zero exit, a signal, the
 * deadline, the output cap, stdin, cancelling (nothing left: no zombie, no fd), and many
 * commands at once. Only stdin, stdout and stderr reach the command: a port reservation
 * and any other fd, close-on-exec or not, are closed in the child. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loop.h"
#include "macro.h"
#include "ports.h"
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

/* One asynchronous command's outcome. */
struct outcome {
    bool done;
    struct ty_subproc_result res;
};

static void on_done(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct outcome *o = data;
    o->done = true;
    o->res = *res;
    res->out = res->err = NULL; /* taken */
}

/* Start @script (with @input on stdin, @cap, @timeout) on a fresh loop and run it to the
 * end; returns what ty_subproc_start returned. */
static int
run_async(const char *script, const char *input, size_t cap, int64_t timeout, struct outcome *o)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    struct ty_subproc_options opt = {
        .argv = argv, .input = input, .max_output = cap, .timeout_usec = timeout};
    struct ty_loop *loop = ty_loop_new();
    int r;

    memset(o, 0, sizeof(*o));
    ty_error_clear(&err);
    r = ty_subproc_start(loop, &opt, on_done, o, NULL, &err);
    while (r >= 0 && !o->done)
        r = ty_loop_run_once(loop);
    ty_loop_free(loop);
    return r;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void test_async(void)
{
    struct outcome o;
    _cleanup_free_ char *big = NULL;

    is_int(run_async("echo hi; echo oops >&2", NULL, 0, 5000000, &o), 0, "async: runs");
    ok(o.done && o.res.status == 0 && o.res.signal == 0 && !o.res.timed_out, "async: status 0");
    is_str(o.res.out, "hi\n", "async: stdout");
    is_str(o.res.err, "oops", "async: stderr");
    ty_subproc_result_release(&o.res);

    is_int(run_async("exit 7", NULL, 0, 5000000, &o), 0, "async: a failing command");
    is_int(o.res.status, 7, "async: its exit status");
    ty_subproc_result_release(&o.res);

    is_int(run_async("kill -USR1 $$", NULL, 0, 5000000, &o), 0, "async: a signal");
    ok(o.res.signal == SIGUSR1 && o.res.status == 128 + SIGUSR1, "async: signal and status");
    ty_subproc_result_release(&o.res);

    int64_t t0 = ty_mono_usec();
    is_int(run_async("echo early; exec sleep 30", NULL, 0, 200000, &o), 0, "async: deadline");
    ok(o.res.timed_out && o.res.signal == SIGKILL, "async: killed for the deadline");
    ok(ty_mono_usec() - t0 < 3000000, "async: promptly");
    ty_subproc_result_release(&o.res);

    is_int(run_async("i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done",
                     NULL,
                     100,
                     5000000,
                     &o),
           0,
           "async: more output than the cap");
    ok(o.res.truncated && strlen(o.res.out) == 100 && o.res.status == 0,
       "async: cut at the cap, the command ran to its end");
    ty_subproc_result_release(&o.res);

    big = malloc(300001);
    memset(big, 'x', 300000);
    big[300000] = '\0';
    is_int(run_async("wc -c", big, 0, 5000000, &o), 0, "async: stdin");
    ok(o.res.out && strtol(o.res.out, NULL, 10) == 300000, "async: all of stdin read");
    ty_subproc_result_release(&o.res);
    is_int(run_async("exit 0", big, 0, 5000000, &o), 0, "async: stdin nobody reads");
    is_int(o.res.status, 0, "async: no SIGPIPE here");
    ty_subproc_result_release(&o.res);
}

static void on_tick(struct ty_loop *loop, void *data)
{
    *(bool *)data = true;
}

static void test_cancel(void)
{
    char *argv[] = {"sh", "-c", "sleep 30 & exec sleep 31", NULL};
    struct ty_subproc_options opt = {.argv = argv, .timeout_usec = 10000000};
    struct ty_loop *loop = ty_loop_new();
    struct ty_subproc *p = NULL;
    struct outcome o = {0};
    int fds = count_fds();
    bool ticked = false;

    is_int(ty_subproc_start(loop, &opt, on_done, &o, &p, &err), 0, "cancel: started");
    /* Let it run a little (nothing happens on its fds meanwhile). */
    (void)ty_loop_add_timer(loop, ty_mono_usec() + 100000, on_tick, &ticked);
    while (!ticked)
        (void)ty_loop_run_once(loop);
    ty_subproc_cancel(p);
    ok(!o.done, "cancel: no callback");
    ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "cancel: no child left, no zombie");
    is_int(count_fds(), fds, "cancel: no fd left open");
    ty_loop_free(loop);
}

#define MANY 24

static void test_many(void)
{
    struct ty_loop *loop = ty_loop_new();
    struct outcome o[MANY] = {0};
    int fds = count_fds(), left = MANY, good = 0;

    for (int i = 0; i < MANY; i++) {
        char script[64];
        char *argv[] = {"sh", "-c", script, NULL};
        struct ty_subproc_options opt = {.argv = argv, .timeout_usec = 10000000};
        (void)snprintf(script, sizeof(script), "sleep 0.%d; echo %d", i % 3, i);
        if (ty_subproc_start(loop, &opt, on_done, &o[i], NULL, &err) < 0)
            left--;
    }
    while (left > 0) {
        int done = 0;
        (void)ty_loop_run_once(loop);
        for (int i = 0; i < MANY; i++)
            done += o[i].done;
        left = MANY - done;
    }
    for (int i = 0; i < MANY; i++) {
        good += o[i].res.out && strtol(o[i].res.out, NULL, 10) == i && o[i].res.status == 0;
        ty_subproc_result_release(&o[i].res);
    }
    is_int(good, MANY, "many at once on one loop: each its own output");
    is_int(count_fds(), fds, "many: no fd left open");
    ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "many: every child reaped");
    ty_loop_free(loop);
}

/* Whether fd @fd is open in a command run by ty_subproc_run ("open" or "closed"). */
static void child_sees(int fd, const char *expect, const char *what)
{
    struct ty_subproc_result res;
    char script[128];

    snprintf(script,
             sizeof(script),
             "if [ -e /proc/self/fd/%d ]; then printf open; else printf closed; fi",
             fd);
    is_int(run(script, NULL, 5000000, &res), 0, "%s: the check ran", what);
    is_str(res.out, expect, "%s: %s in the child", what, expect);
    ty_subproc_result_release(&res);
}

/* The child inherits only fds 0-2: the process's port reservations (ports.h) never reach a
 * Slurm command, even one whose close-on-exec flag was lost, nor does any other fd. */
static void test_inherited_fds(void)
{
    int cursor = 0, fd = -1, p[2];
    struct ty_error e = {0};

    ok(ty_port_hold(&cursor, &fd, "test", &e) > 0, "a port held: %s", e.msg);
    child_sees(fd, "closed", "a port reservation (close-on-exec)");
    ok(fcntl(fd, F_SETFD, 0) == 0, "its close-on-exec flag cleared");
    child_sees(fd, "closed", "a port reservation without close-on-exec");
    ty_port_release(fd);
    ok(pipe(p) == 0, "a pipe without close-on-exec");
    child_sees(p[1], "closed", "an ordinary fd without close-on-exec");
    close(p[0]);
    close(p[1]);
    child_sees(2, "open", "stderr");
}

/* ty_sibling_program: the variable first, then next to this program, then the fallback. */
static void test_sibling_program(void)
{
    char self[4096], *p;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    const char *base;

    if (n <= 0) {
        ok(0, "readlink /proc/self/exe");
        return;
    }
    self[n] = '\0';
    base = strrchr(self, '/') + 1;
    p = ty_sibling_program(NULL, base, "fallback");
    is_str(p, self, "a program next to this one: its path there");
    free(p);
    p = ty_sibling_program(NULL, "ty-no-such-program", "/usr/lib/x/ty-no-such-program");
    is_str(p, "/usr/lib/x/ty-no-such-program", "not there: the fallback");
    free(p);
    setenv("TY_TEST_SIBLING", "/opt/elsewhere/prog", 1);
    p = ty_sibling_program("TY_TEST_SIBLING", base, "fallback");
    is_str(p, "/opt/elsewhere/prog", "the variable wins");
    free(p);
    setenv("TY_TEST_SIBLING", "", 1);
    p = ty_sibling_program("TY_TEST_SIBLING", "ty-no-such-program", "fallback");
    is_str(p, "fallback", "an empty variable counts as unset");
    free(p);
    unsetenv("TY_TEST_SIBLING");
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
    test_inherited_fds();
    test_sibling_program();
    test_async();
    test_cancel();
    test_many();
    return done_testing();
}
