/* SPDX-License-Identifier: Apache-2.0
 * process.c: the `process` runtime: every replica is a local process running its
 * containerCommand + args (the image is recorded, not run), at 127.0.0.1:<port>.
 *
 * Ports: place() binds one socket per replica to 0.0.0.0:<port> (no SO_REUSEADDR, not
 * listening), which keeps every other process off that port without accepting connections.
 * launch() gives it up just before the replica's clone (a child can exec and bind its port
 * before the parent runs again). A child would hold a copy of every reservation still open
 * until its exec (close-on-exec, but inherited), and a replica started meanwhile could not
 * bind its port: so the child closes every reservation of this process first (ports.h keeps
 * the list), and the parent is suspended until the child's exec (process-child.c: no page
 * tables copied, no wait on a pipe; the program's own start runs while the next replica is
 * launched). Ports come from below the kernel's ephemeral range, so outgoing connections
 * never take them in the meantime.
 *
 * Processes: each replica gets its own process group, stdin from /dev/null, stdout and
 * stderr on pipes, SIGKILL if trainyard dies (PR_SET_PDEATHSIG), and is watched through a
 * pidfd. Each replica runs in a cgroup of its own with its machine type's limits, ended with
 * the job even if trainyard is killed (process-jail.c); where no cgroup can be made,
 * descendants that leave the group are found through proctree.h only. */
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "linesplit.h"
#include "macro.h"
#include "ports.h"
#include "process-int.h"
#include "proctree.h"
#include "runtime.h"
#include "strv.h"
#include "timeutil.h"

extern char **environ;

static int create(struct ty_runtime **ret, struct ty_error *err)
{
    struct process_rt *p = xcalloc(1, sizeof(*p));
    unsigned long long seed = (unsigned long long)ty_now_usec() ^ (unsigned long long)getpid();
    int r;

    r = ty_proctree_become_subreaper();
    if (r < 0) {
        free(p);
        return ty_error_set(err, -r, "cannot become a child subreaper: %s", strerror(-r));
    }
    (void)snprintf(p->token, sizeof(p->token), "%d-%llx", (int)getpid(), seed);
    p->guard_fd = -1;
    p->devnull = -1;
    *ret = &p->base;
    return 0;
}

static struct process_rt *cast(struct ty_runtime *rt)
{
    return (struct process_rt *)rt;
}

static int prepare(struct ty_runtime *rt, struct ty_error *err)
{
    struct process_rt *p = cast(rt);
    int r;

    p->n = rt->plan->n_replicas;
    p->reps = xcalloc(p->n ? p->n : 1, sizeof(*p->reps));
    for (size_t i = 0; i < p->n; i++) {
        struct proc_replica *pr = &p->reps[i];
        pr->rt = p;
        pr->r = &rt->plan->replicas[i];
        pr->pid = 0;
        pr->pidfd = pr->out_fd = pr->err_fd = pr->reserve_fd = pr->status_fd = -1;
    }
    /* The commands: the port range is the job's to fit (ty_process_validate, at create); a
     * Slurm node's launcher runs one replica of a larger job here. */
    r = ty_process_validate_commands(rt->plan->job, err);
    if (r >= 0)
        r = pj_resolve_user(p, err);
    for (size_t i = 0; r >= 0 && rt->gpus && rt->gpu_stand_in && i < p->n; i++)
        if (rt->gpus[i].n > 0) {
            ty_runtime_notice(rt,
                              TY_SEV_INFO,
                              "The job's GPUs are stand-ins (no GPU device): its replicas get "
                              "CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER only.");
            break;
        }
    if (r >= 0 && !rt->dry_run) /* --dry-run creates nothing */
        pj_setup(p);
    return r;
}

static int place(struct ty_runtime *rt, struct ty_error *err)
{
    struct process_rt *p = cast(rt);
    int cursor = 0;

    for (size_t i = 0; i < p->n; i++) {
        struct ty_replica *r = p->reps[i].r;
        int port = -1, fd;

        /* A retry keeps the replica's port when it is still free. */
        if (r->port > 0 && r->host && strcmp(r->host, "127.0.0.1") == 0 &&
            (fd = ty_port_hold_exact(r->port)) >= 0) {
            p->reps[i].reserve_fd = fd;
            port = r->port;
        }
        if (port < 0)
            port = ty_port_hold(&cursor, &p->reps[i].reserve_fd, r->display_name, err);
        if (port < 0)
            return port;
        free(r->host);
        r->host = xstrdup("127.0.0.1");
        r->port = port;
    }
    return 0;
}

static void deliver_line(void *ctx, const char *line, size_t len, enum ty_stream s)
{
    struct proc_replica *pr = ctx;
    struct ty_runtime *rt = &pr->rt->base;
    rt->ev.output(rt->ev.ctx, pr->r, s, line, len);
}

static void out_line(void *ctx, const char *line, size_t len)
{
    deliver_line(ctx, line, len, TY_STREAM_STDOUT);
}

static void err_line(void *ctx, const char *line, size_t len)
{
    deliver_line(ctx, line, len, TY_STREAM_STDERR);
}

void pk_close_pipe(struct proc_replica *pr, int *fdp)
{
    bool is_out = fdp == &pr->out_fd;

    if (*fdp < 0)
        return;
    ty_linesplit_flush(is_out ? &pr->out_ls : &pr->err_ls, is_out ? out_line : err_line, pr);
    ty_loop_remove_fd(pr->rt->base.loop, *fdp);
    close(*fdp);
    *fdp = -1;
}

void pk_drain(struct proc_replica *pr, int *fdp, bool held)
{
    bool is_out = fdp == &pr->out_fd;
    struct ty_linesplit *ls = is_out ? &pr->out_ls : &pr->err_ls;
    ty_line_fn fn = is_out ? out_line : err_line;
    size_t left = SIZE_MAX;
    char buf[16384];
    int avail = 0;

    /* What the pipe holds now, and no more: a process left behind by the replica may keep
     * writing to it as fast as it is read, and this loop must end (the job would stop
     * there: its master's exit, a cancel and its time limit unhandled). */
    if (held && *fdp >= 0 && ioctl(*fdp, FIONREAD, &avail) == 0)
        left = avail > 0 ? (size_t)avail : 1;
    while (*fdp >= 0) {
        ssize_t n = read(*fdp, buf, left < sizeof(buf) ? left : sizeof(buf));
        if (n > 0) {
            ty_linesplit_feed(ls, buf, (size_t)n, fn, pr);
            if (!held || (size_t)n >= left)
                return;
            left -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        pk_close_pipe(pr, fdp);
    }
}

static void on_pipe(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct proc_replica *pr = data;
    pk_drain(pr, fd == pr->out_fd ? &pr->out_fd : &pr->err_fd, false);
}

/* Read the exec status: EOF means the program started (report it once); an int is the
 * errno of a failed exec (reported with the exit). */
static void read_status(struct proc_replica *pr)
{
    struct ty_runtime *rt = &pr->rt->base;
    struct child_fail e = {0};
    ssize_t n;

    if (pr->status_fd < 0)
        return;
    do
        n = read(pr->status_fd, &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return;
    ty_loop_remove_fd(rt->loop, pr->status_fd);
    close(pr->status_fd);
    pr->status_fd = -1;
    if (n == (ssize_t)sizeof(e)) {
        pr->exec_errno = e.err ? e.err : EIO;
        pr->fail_stage = e.stage;
        return;
    }
    if (!pr->started) {
        pr->started = true;
        rt->ev.started(rt->ev.ctx, pr->r);
    }
}

static void on_status(struct ty_loop *loop, int fd, short revents, void *data)
{
    read_status(data);
}

/* A command without '/' that is on no directory of the replicas' PATH: say which PATH was
 * searched and what set it (the service's job_path setting, or trainyard's own PATH). */
static void not_on_path(const struct proc_replica *pr, char *buf, size_t len)
{
    const struct process_rt *p = pr->rt;
    const char *path = ty_strv_getenv(p->base.base_env ? p->base.base_env : environ, "PATH");
    int head = snprintf(buf,
                        len,
                        "cannot run '%s': not found on the replica's PATH (set by %s): ",
                        pr->program,
                        p->base.path_setting ? p->base.path_setting : "trainyard's environment");
    size_t keep;
    bool cut;

    if (head < 0 || (size_t)head >= len)
        return;
    path = path ? path : "(unset)";
    keep = ty_list_fit(path, ':', len - (size_t)head - 1, &cut); /* whole directories */
    (void)snprintf(buf + head,
                   len - (size_t)head,
                   "%.*s%s",
                   (int)keep,
                   path,
                   cut ? (keep ? ":..." : "...") : "");
}

/* After a replica's reaping: reap the orphans, unless the first zombie is a replica of @p
 * whose own exit, handled next, will (replicas ending together: one listing of the children
 * at the last, not one at each). */
static void reap_orphans_after(const struct process_rt *p)
{
    pid_t z = ty_proctree_first_zombie();

    if (z <= 0)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (p->reps[i].pid == z && !p->reps[i].exited && p->reps[i].pidfd >= 0)
            return;
    (void)ty_proctree_reap_orphans();
}

static void on_exit_fd(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct proc_replica *pr = data;
    struct ty_runtime *rt = &pr->rt->base;
    struct ty_exit_status st = {0};
    siginfo_t si = {0};

    if (waitid((idtype_t)P_PIDFD, (id_t)pr->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
        return;
    ty_loop_remove_fd(loop, pr->pidfd);
    close(pr->pidfd);
    pr->pidfd = -1;
    ty_proctree_disown(pr->pid);
    pr->exited = true;
    /* The child is gone, so the status pipe has all it will ever have: settle the start. */
    read_status(pr);
    /* Everything the replica wrote before exiting is in the pipes now: deliver it first. */
    pk_drain(pr, &pr->out_fd, true);
    pk_drain(pr, &pr->err_fd, true);
    if (pr->exec_errno) {
        static const char *const stages[] = {
            [PJ_CGROUP] = "cannot enter its cgroup",
            [PJ_SETGROUPS] = "cannot take the groups of user",
            [PJ_SETGID] = "cannot take the group of user",
            [PJ_SETUID] = "cannot switch to user",
        };
        st.kind = TY_EXIT_START_FAILED;
        if (pr->fail_stage == PJ_CHDIR)
            (void)snprintf(st.detail,
                           sizeof(st.detail),
                           "cannot enter its working directory %s%s%s: %s",
                           pr->rt->base.workdir,
                           pr->rt->user.set ? " as user " : "",
                           pr->rt->user.set ? pr->rt->user.name : "",
                           strerror(pr->exec_errno));
        else if (pr->fail_stage > PJ_EXEC && pr->fail_stage <= PJ_SETUID)
            (void)snprintf(st.detail,
                           sizeof(st.detail),
                           "%s%s%s: %s",
                           stages[pr->fail_stage],
                           pr->fail_stage > PJ_CGROUP ? " " : "",
                           pr->fail_stage > PJ_CGROUP ? pr->rt->user.name : "",
                           strerror(pr->exec_errno));
        else if (pr->exec_errno == ENOENT && !strchr(pr->program, '/'))
            not_on_path(pr, st.detail, sizeof(st.detail));
        else
            (void)snprintf(st.detail,
                           sizeof(st.detail),
                           "cannot run '%s': %s",
                           pr->program,
                           strerror(pr->exec_errno));
    } else if (!(si.si_code == CLD_EXITED && si.si_status == 0) && pj_oom_killed(pr)) {
        st.kind = TY_EXIT_OOM;
        st.code = 137; /* as a container killed for memory */
        (void)snprintf(st.detail, sizeof(st.detail), "killed for exceeding the memory limit");
    } else if (si.si_code == CLD_EXITED) {
        st.kind = TY_EXIT_CODE;
        st.code = si.si_status;
    } else {
        st.kind = TY_EXIT_SIGNAL;
        st.code = si.si_status;
    }
    reap_orphans_after(pr->rt);
    rt->ev.exited(rt->ev.ctx, pr->r, &st);
}

static void close_pair(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
}

/* The stdout, stderr and exec-status pipes of a child (close-on-exec). Returns 0 or -errno;
 * on failure none stays open. */
static int open_pipes(int out[2], int errp[2], int status[2], struct ty_error *err)
{
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0) {
        int e = errno;
        close_pair(out);
        close_pair(errp);
        close_pair(status);
        return ty_error_set(err, e, "cannot create pipes: %s", strerror(e));
    }
    return 0;
}

/* The child @pid runs: watch it (pidfd) and its pipes on the loop. Returns 0 or -errno (the
 * child is then killed and reaped). */
static int watch_child(struct proc_replica *pr, pid_t pid, struct ty_error *err)
{
    struct ty_runtime *rt = &pr->rt->base;

    ty_proctree_own(pid);
    pr->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pr->pidfd < 0) {
        int e = errno;
        (void)kill(-pid, SIGKILL);
        (void)waitpid(pid, NULL, 0);
        ty_proctree_disown(pid);
        pr->exited = true;
        return ty_error_set(err, e, "pidfd_open: %s", strerror(e));
    }
    /* The child has exec'd or failed to (pc_fork_child): the outcome is read from the loop
     * (read_status). Don't wait for the program itself: launching every replica first and
     * collecting the outcomes from the loop starts a cluster in parallel. */
    (void)ty_fd_nonblock(pr->out_fd);
    (void)ty_fd_nonblock(pr->err_fd);
    (void)ty_fd_nonblock(pr->status_fd);
    ty_loop_add_fd(rt->loop, pr->status_fd, POLLIN, on_status, pr);
    ty_loop_add_fd(rt->loop, pr->out_fd, POLLIN, on_pipe, pr);
    ty_loop_add_fd(rt->loop, pr->err_fd, POLLIN, on_pipe, pr);
    ty_loop_add_fd(rt->loop, pr->pidfd, POLLIN, on_exit_fd, pr);
    return 0;
}

/* A restart in place: end what the replica's previous run left in its process group
 * (orphans carrying the run token that left it are the cleanup's), deliver what its pipes
 * still hold and close them, and forget its state. */
static void forget_run(struct proc_replica *pr)
{
    (void)kill(-pr->pid, SIGKILL);
    pj_kill_replica(pr);
    (void)ty_proctree_reap_orphans();
    for (int *fdp = &pr->out_fd; fdp; fdp = fdp == &pr->out_fd ? &pr->err_fd : NULL) {
        pk_drain(pr, fdp, true);
        pk_close_pipe(pr, fdp);
    }
    pr->pid = 0;
    pr->started = pr->exited = false;
    pr->exec_errno = 0;
}

/* pc_resolve_program, remembering the last answer: the replicas of a job mostly run one
 * program on one PATH. Caller frees. */
static char *resolve_cached(struct process_rt *p, const char *prog, char *const *envp)
{
    const char *path = ty_strv_getenv(envp, "PATH");

    if (!p->res_prog || strcmp(p->res_prog, prog) != 0 || !p->res_path != !path ||
        (path && strcmp(p->res_path, path) != 0)) {
        free(p->res_prog);
        free(p->res_path);
        free(p->res);
        p->res_prog = xstrdup(prog);
        p->res_path = path ? xstrdup(path) : NULL;
        p->res = pc_resolve_program(prog, envp);
    }
    return p->res ? xstrdup(p->res) : NULL;
}

/* What every launch of this runtime shares, made at the first: the child's stack,
 * /dev/null for its stdin, and the signals its child resets (pc_signals_to_reset: the
 * dispositions are set once at a program's start). Returns 0 or -errno with @err. */
static int launch_state(struct process_rt *p, struct ty_error *err)
{
    if (!p->reset_known) {
        struct child_setup cs = {0};
        pc_signals_to_reset(&cs);
        memcpy(p->reset, cs.reset, cs.n_reset * sizeof(cs.reset[0]));
        p->n_reset = cs.n_reset;
        p->reset_known = true;
    }
    if (p->devnull < 0) {
        p->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (p->devnull < 0)
            return ty_error_set(err, errno, "cannot open /dev/null: %s", strerror(errno));
    }
    if (!p->child_stack) {
        void *st = mmap(NULL,
                        PC_CHILD_STACK_SIZE,
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                        -1,
                        0);
        if (st == MAP_FAILED)
            return ty_error_set(err, errno, "cannot map a stack: %s", strerror(errno));
        p->child_stack = st;
    }
    return 0;
}

static int
launch(struct ty_runtime *rt, struct ty_replica *r, char *const env[], struct ty_error *err)
{
    struct process_rt *p = cast(rt);
    struct proc_replica *pr = &p->reps[ty_runtime_replica_index(rt, r)];
    _cleanup_strv_free_ char **argv = ty_replica_argv(r);
    _cleanup_strv_free_ char **envp = pc_replica_env(pr, env);
    int out[2] = {-1, -1}, errp[2] = {-1, -1}, status[2] = {-1, -1};
    _cleanup_free_ char *resolved = NULL;
    _cleanup_free_ int *held = NULL;
    struct child_setup cs;
    int cg_fds[TY_CGROUP_MAX_DIRS];
    pid_t pid;
    int r2, n_cg;

    if (pr->pid > 0)
        forget_run(pr);
    resolved = resolve_cached(p, argv[0], envp);
    r2 = launch_state(p, err);
    if (r2 < 0)
        return r2;
    n_cg = pj_before_launch(pr, cg_fds, err);
    if (n_cg < 0)
        return n_cg;
    r2 = open_pipes(out, errp, status, err);
    if (r2 < 0) {
        for (int i = 0; i < n_cg; i++)
            close(cg_fds[i]);
        return r2;
    }
    cs = (struct child_setup){
        .out_w = out[1],
        .err_w = errp[1],
        .status_w = status[1],
        .devnull = p->devnull,
        .stack = p->child_stack,
        .path = resolved ? resolved : argv[0],
        .argv = argv,
        .envp = envp,
        .parent = getpid(),
        .n_cg = (size_t)n_cg,
        .user = p->user.set ? &p->user : NULL,
        .workdir = p->base.workdir,
    };
    memcpy(cs.cg_fds, cg_fds, sizeof(cg_fds));
    cs.restore_nofile = ty_nofile_original(&cs.nofile);
    memcpy(cs.reset, p->reset, p->n_reset * sizeof(p->reset[0]));
    cs.n_reset = p->n_reset;
    /* Give up the port's reservation now, not after the clone: the child may exec and its
     * program bind the port before this process runs again. The child closes the others. */
    ty_port_release(pr->reserve_fd);
    pr->reserve_fd = -1;
    cs.n_held = ty_port_held(&held);
    cs.held = held;
    pid = pc_fork_child(&cs);
    for (int i = 0; i < n_cg; i++)
        close(cg_fds[i]);
    if (pid < 0) {
        close_pair(out), close_pair(errp), close_pair(status);
        return ty_error_set(err, -pid, "cannot fork: %s", strerror(-pid));
    }
    /* No setpgid(pid, pid) here: the child made its group before its exec, which it has
     * done by now (it would fail with EACCES). */
    close(out[1]);
    close(errp[1]);
    close(status[1]);
    pr->pid = pid;
    pr->out_fd = out[0];
    pr->err_fd = errp[0];
    pr->status_fd = status[0];
    free(pr->program);
    pr->program = xstrdup(argv[0]);
    return watch_child(pr, pid, err);
}

static int
signal_replica(struct ty_runtime *rt, struct ty_replica *r, int sig, struct ty_error *err)
{
    struct process_rt *p = cast(rt);
    struct proc_replica *pr = &p->reps[ty_runtime_replica_index(rt, r)];
    _cleanup_free_ pid_t *desc = NULL, *in_cg = NULL, *outside = NULL;
    size_t n, n_cg;

    if (pr->pid <= 0 || pr->exited)
        return 0;
    /* Each process once (a program's handler of SIGTERM ran once per copy): those of its
     * tree and of its cgroup (which holds those that left the tree too) that left its process
     * group, one by one, then the group itself. */
    n = ty_proctree_collect(&pr->pid, 1, NULL, &desc);
    n_cg = pj_pids(pr, &in_cg);
    n = ty_proctree_outside_group(pr->pid, desc, n, in_cg, n_cg, &outside);
    ty_proctree_kill(outside, n, sig);
    if (kill(-pr->pid, sig) < 0 && errno != ESRCH)
        return ty_error_set(
            err, errno, "cannot signal replica %s: %s", r->display_name, strerror(errno));
    return 0;
}

/* ---- cleanup (process-cleanup.c) ------------------------------------------------------- */

static int cleanup(struct ty_runtime *rt)
{
    return pk_cleanup(cast(rt));
}

static void destroy(struct ty_runtime *rt)
{
    struct process_rt *p = cast(rt);
    if (p->reps)
        pk_clean_now(p);
    for (size_t i = 0; i < p->n; i++)
        free(p->reps[i].program);
    free(p->reps);
    if (p->child_stack)
        (void)munmap(p->child_stack, PC_CHILD_STACK_SIZE);
    if (p->devnull >= 0)
        close(p->devnull);
    free(p->res_prog);
    free(p->res_path);
    free(p->res);
    free(p);
}

const struct ty_runtime_ops ty_runtime_process = {
    .name = "process",
    .validate = ty_process_validate,
    .create = create,
    .prepare = prepare,
    .place = place,
    .launch = launch,
    .signal = signal_replica,
    .cleanup = cleanup,
    .destroy = destroy,
};
