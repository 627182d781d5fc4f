/* SPDX-License-Identifier: Apache-2.0
 * subproc.c: run a short command with a deadline and capture its output (subproc.h). */
#include "subproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "macro.h"
#include "strv.h"
#include "timeutil.h"

extern char **environ;

static void trim_end(struct ty_buf *b)
{
    while (b->len > 0 && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == ' ' ||
                          b->data[b->len - 1] == '\r' || b->data[b->len - 1] == '\t'))
        b->data[--b->len] = '\0';
}

/* The environment for the child: ours, with @extra set on top. */
static char **child_env(char *const extra[])
{
    char **env = ty_strv_copy(environ);
    for (size_t i = 0; extra && extra[i]; i++) {
        const char *eq = strchr(extra[i], '=');
        _cleanup_free_ char *name = eq ? xstrndup(extra[i], (size_t)(eq - extra[i])) : NULL;
        if (name)
            ty_strv_setenv(&env, name, eq + 1);
    }
    return env;
}

int ty_subproc_run(char *const argv[],
                   char *const extra_env[],
                   int64_t timeout_usec,
                   struct ty_subproc_result *res,
                   struct ty_error *err)
{
    _cleanup_strv_free_ char **env = child_env(extra_env);
    struct ty_buf out = TY_BUF_INIT, errb = TY_BUF_INIT;
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int64_t deadline = ty_mono_usec() + timeout_usec;
    bool timed_out = false;
    pid_t pid;
    int r, wst = 0;

    memset(res, 0, sizeof(*res));
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        r = -errno;
        goto fail_pipes;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    {
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
    }
    r = -posix_spawnp(&pid, argv[0], &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(po[1]);
    close(pe[1]);
    po[1] = pe[1] = -1;
    if (r < 0)
        goto fail_pipes;

    for (int open_fds = 2; open_fds > 0;) {
        struct pollfd pf[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
        int64_t left = deadline - ty_mono_usec();
        int n;
        if (left <= 0) {
            timed_out = true;
            break;
        }
        n = poll(pf, 2, (int)(left / 1000 + 1));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (int i = 0; i < 2; i++) {
            char chunk[4096];
            ssize_t got;
            struct ty_buf *b = i == 0 ? &out : &errb;
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            got = read(pf[i].fd, chunk, sizeof(chunk));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                close(i == 0 ? po[0] : pe[0]);
                *(i == 0 ? &po[0] : &pe[0]) = -1;
                open_fds--;
                continue;
            }
            if (b->len + (size_t)got <= TY_SUBPROC_MAX_OUTPUT)
                ty_buf_append(b, chunk, (size_t)got);
        }
    }
    if (timed_out)
        (void)kill(-pid, SIGKILL);
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        (void)kill(-pid, SIGKILL); /* anything it left in its group */
        r = ty_error_set(
            err, ETIMEDOUT, "%s did not finish within %.0f s", argv[0], (double)timeout_usec / 1e6);
        goto fail;
    }
    trim_end(&errb);
    res->status = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
    res->out = ty_buf_take(&out);
    res->err = ty_buf_take(&errb);
    r = 0;
    goto done;

fail_pipes:
    r = ty_error_set(
        err, -r, "cannot run %s: %s", argv[0], r == -ENOENT ? "not found in PATH" : strerror(-r));
fail:
    ty_buf_release(&out);
done:
    ty_buf_release(&errb);
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    return r;
}

void ty_subproc_result_release(struct ty_subproc_result *res)
{
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
}
