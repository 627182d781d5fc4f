/* SPDX-License-Identifier: Apache-2.0
 * subproc.c: run a short command with a deadline and capture its output (subproc.h). The
 * command is a small state machine on an event loop: its stdout and stderr pipes, its stdin
 * (a socket, so that a command that stops reading cannot raise SIGPIPE here), a pidfd that
 * says when it exits, and a deadline timer. ty_subproc_run drives the same machine on a
 * private loop. */
#include "subproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "macro.h"
#include "strv.h"
#include "timeutil.h"

extern char **environ;

struct ty_subproc {
    struct ty_loop *loop;
    char *name; /* argv[0], for messages */
    pid_t pid;  /* also its process group */
    int pidfd;  /* -1 once reaped */
    int out_fd, err_fd, in_fd;
    struct ty_buf out, err;
    size_t cap;
    bool truncated;
    char *input;
    size_t input_len, input_off;
    uint64_t timer;
    siginfo_t si; /* how it ended, once reaped */
    bool timed_out;
    bool in_callback;
    ty_subproc_fn fn;
    void *data;
};

/* The pipes and socket of a command being started: [0] ours, [1] the child's. */
struct spawn_fds {
    int out[2], err[2], in[2];
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

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

static void spawn_fds_close(struct spawn_fds *f)
{
    for (int i = 0; i < 2; i++) {
        close_fd(&f->out[i]);
        close_fd(&f->err[i]);
        close_fd(&f->in[i]);
    }
}

static int spawn_fds_open(struct spawn_fds *f, bool input)
{
    *f = (struct spawn_fds){{-1, -1}, {-1, -1}, {-1, -1}};
    if (pipe2(f->out, O_CLOEXEC) < 0 || pipe2(f->err, O_CLOEXEC) < 0 ||
        (input && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->in) < 0))
        return ty_negerrno();
    (void)fcntl(f->out[0], F_SETFL, O_NONBLOCK);
    (void)fcntl(f->err[0], F_SETFL, O_NONBLOCK);
    if (input)
        (void)fcntl(f->in[0], F_SETFL, O_NONBLOCK);
    return 0;
}

/* posix_spawnp @argv in a new process group, default signal mask and SIGPIPE, its stdin
 * from f->in[1] or /dev/null, its stdout and stderr into the pipes, and no other fd: every fd
 * above 2 is closed in the child (closefrom), whatever its close-on-exec flag says. So this
 * process's port reservations (ports.h: a replica's port, held until its launch) never reach
 * srun, squeue...: by design, as the process runtime's launch closes them in its child, not
 * by trusting that every fd of the process was opened with O_CLOEXEC. Returns 0 or -errno. */
static int spawn(char *const argv[], char *const extra_env[], struct spawn_fds *f, pid_t *pid)
{
    _cleanup_strv_free_ char **env = child_env(extra_env);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, dflt;
    int r;

    posix_spawn_file_actions_init(&fa);
    if (f->in[1] >= 0)
        posix_spawn_file_actions_adddup2(&fa, f->in[1], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, f->out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, f->err[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    r = -posix_spawnp(pid, argv[0], &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return r;
}

static void proc_free(struct ty_subproc *p)
{
    if (p->timer)
        ty_loop_cancel_timer(p->loop, p->timer);
    for (int *fd = &p->out_fd; fd <= &p->in_fd; fd++)
        if (*fd >= 0) {
            ty_loop_remove_fd(p->loop, *fd);
            close_fd(fd);
        }
    if (p->pidfd >= 0) {
        ty_loop_remove_fd(p->loop, p->pidfd);
        close_fd(&p->pidfd);
    }
    ty_buf_release(&p->out);
    ty_buf_release(&p->err);
    free(p->input);
    free(p->name);
    free(p);
}

/* Ended (reaped, both outputs closed): report and free. */
static void maybe_finish(struct ty_subproc *p)
{
    struct ty_subproc_result res = {0};

    if (p->pidfd >= 0 || p->out_fd >= 0 || p->err_fd >= 0)
        return;
    if (p->si.si_code == CLD_EXITED) {
        res.status = p->si.si_status;
    } else {
        res.signal = p->si.si_status;
        res.status = 128 + res.signal;
    }
    res.timed_out = p->timed_out;
    res.truncated = p->truncated;
    trim_end(&p->err);
    res.out = ty_buf_take(&p->out);
    res.err = ty_buf_take(&p->err);
    p->in_callback = true;
    p->fn(p->loop, &res, p->data);
    ty_subproc_result_release(&res);
    proc_free(p);
}

static void on_output(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct ty_subproc *p = data;
    struct ty_buf *b = fd == p->out_fd ? &p->out : &p->err;
    char chunk[4096];
    ssize_t got = read(fd, chunk, sizeof(chunk));

    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (got <= 0) {
        ty_loop_remove_fd(loop, fd);
        close_fd(fd == p->out_fd ? &p->out_fd : &p->err_fd);
        maybe_finish(p);
        return;
    }
    if (b->len + (size_t)got > p->cap) {
        p->truncated = true;
        got = (ssize_t)(p->cap - b->len);
    }
    if (got > 0)
        ty_buf_append(b, chunk, (size_t)got);
}

static void on_input(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct ty_subproc *p = data;
    ssize_t n = 0;

    if (p->input_off < p->input_len)
        n = send(fd, p->input + p->input_off, p->input_len - p->input_off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n > 0)
        p->input_off += (size_t)n;
    /* All written (EOF follows), or the command stopped reading. */
    if (n < 0 || p->input_off >= p->input_len) {
        ty_loop_remove_fd(loop, fd);
        close_fd(&p->in_fd);
    }
}

static void on_exit_fd(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct ty_subproc *p = data;

    memset(&p->si, 0, sizeof(p->si));
    if (p->timed_out) /* what it left in its group: the leader's zombie still holds the id */
        (void)kill(-p->pid, SIGKILL);
    if (waitid((idtype_t)P_PIDFD, (id_t)fd, &p->si, WEXITED | WNOHANG) < 0) {
        if (errno != ECHILD) /* ECHILD: reaped elsewhere (SIGCHLD ignored); status unknown */
            return;
        p->si.si_code = CLD_KILLED;
        p->si.si_status = SIGKILL;
    } else if (p->si.si_pid == 0) {
        return; /* not yet */
    }
    ty_loop_remove_fd(loop, fd);
    close_fd(&p->pidfd);
    maybe_finish(p);
}

static void on_deadline(struct ty_loop *loop, void *data)
{
    struct ty_subproc *p = data;

    p->timer = 0;
    p->timed_out = true;
    (void)kill(-p->pid, SIGKILL);
    /* Whatever its leftovers still hold open is not waited for. */
    for (int *fd = &p->out_fd; fd <= &p->in_fd; fd++)
        if (*fd >= 0) {
            ty_loop_remove_fd(loop, *fd);
            close_fd(fd);
        }
    maybe_finish(p);
}

/* Watch a started command's fds (ours of @f move into @p) and its deadline. */
static void watch(struct ty_subproc *p, struct spawn_fds *f, int64_t timeout_usec)
{
    p->out_fd = TAKE_FD(f->out[0]);
    p->err_fd = TAKE_FD(f->err[0]);
    p->in_fd = TAKE_FD(f->in[0]);
    ty_loop_add_fd(p->loop, p->out_fd, POLLIN, on_output, p);
    ty_loop_add_fd(p->loop, p->err_fd, POLLIN, on_output, p);
    if (p->in_fd >= 0)
        ty_loop_add_fd(p->loop, p->in_fd, POLLOUT, on_input, p);
    ty_loop_add_fd(p->loop, p->pidfd, POLLIN, on_exit_fd, p);
    if (timeout_usec > 0)
        p->timer = ty_loop_add_timer(p->loop, ty_mono_usec() + timeout_usec, on_deadline, p);
}

int ty_subproc_start(struct ty_loop *loop,
                     const struct ty_subproc_options *opt,
                     ty_subproc_fn fn,
                     void *data,
                     struct ty_subproc **ret,
                     struct ty_error *err)
{
    const char *name = opt->argv[0];
    struct spawn_fds f;
    struct ty_subproc *p;
    pid_t pid;
    int r, pidfd;

    r = spawn_fds_open(&f, opt->input != NULL);
    if (r >= 0)
        r = spawn(opt->argv, opt->extra_env, &f, &pid);
    close_fd(&f.out[1]);
    close_fd(&f.err[1]);
    close_fd(&f.in[1]);
    if (r < 0) {
        spawn_fds_close(&f);
        return ty_error_set(
            err, -r, "cannot run %s: %s", name, r == -ENOENT ? "not found in PATH" : strerror(-r));
    }
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        r = ty_negerrno();
        (void)kill(-pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        spawn_fds_close(&f);
        return ty_error_set(err, -r, "cannot watch %s: pidfd_open: %s", name, strerror(-r));
    }
    p = xcalloc(1, sizeof(*p));
    p->loop = loop;
    p->name = xstrdup(name);
    p->pid = pid;
    p->pidfd = pidfd;
    p->cap = opt->max_output ? opt->max_output : TY_SUBPROC_MAX_OUTPUT;
    if (opt->input) {
        p->input_len = strlen(opt->input);
        p->input = xstrdup(opt->input);
    }
    p->fn = fn;
    p->data = data;
    watch(p, &f, opt->timeout_usec);
    if (ret)
        *ret = p;
    return 0;
}

void ty_subproc_cancel(struct ty_subproc *p)
{
    if (!p || p->in_callback)
        return;
    if (p->pidfd >= 0) {
        siginfo_t si;
        (void)kill(-p->pid, SIGKILL);
        while (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED) < 0 && errno == EINTR)
            ;
    }
    proc_free(p);
}

/* ty_subproc_run's completion: hand the result over and stop its private loop. */
struct sync_wait {
    struct ty_subproc_result *res;
    bool done;
};

static void sync_done(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct sync_wait *w = data;
    *w->res = *res;
    res->out = res->err = NULL;
    w->done = true;
}

int ty_subproc_run(char *const argv[],
                   char *const extra_env[],
                   int64_t timeout_usec,
                   struct ty_subproc_result *res,
                   struct ty_error *err)
{
    struct ty_subproc_options opt = {
        .argv = argv, .extra_env = extra_env, .timeout_usec = timeout_usec};
    struct sync_wait w = {.res = res};
    struct ty_loop *loop = ty_loop_new();
    struct ty_subproc *p = NULL;
    int r;

    memset(res, 0, sizeof(*res));
    r = ty_subproc_start(loop, &opt, sync_done, &w, &p, err);
    if (r < 0) {
        ty_loop_free(loop);
        return r;
    }
    while (r >= 0 && !w.done)
        r = ty_loop_run_once(loop);
    if (!w.done) /* poll failed (not expected): the command goes */
        ty_subproc_cancel(p);
    ty_loop_free(loop);
    if (!w.done)
        return ty_error_set(err, -r, "waiting for %s: %s", argv[0], strerror(-r));
    if (res->timed_out) {
        ty_subproc_result_release(res);
        return ty_error_set(
            err, ETIMEDOUT, "%s did not finish within %g s", argv[0], (double)timeout_usec / 1e6);
    }
    return 0;
}

void ty_subproc_result_release(struct ty_subproc_result *res)
{
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
}

char *ty_sibling_program(const char *env_var, const char *name, const char *fallback)
{
    const char *env = env_var ? getenv(env_var) : NULL;
    char self[4096];
    ssize_t n;

    if (env && *env)
        return xstrdup(env);
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        char *slash;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash) {
            _cleanup_free_ char *here = xasprintf("%.*s/%s", (int)(slash - self), self, name);
            if (access(here, X_OK) == 0)
                return TAKE_PTR(here);
        }
    }
    return xstrdup(fallback);
}
