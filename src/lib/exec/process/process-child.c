/* SPDX-License-Identifier: Apache-2.0
 * process-child.c: the process runtime's child between clone and exec: the port reservations
 * it must not hold, its process group, its cgroup, the user it runs as, its working
 * directory, its signals and pipes, then the program. The child shares the parent's memory
 * until its exec (vfork's way, the parent suspended), so it only makes system calls;
 * everything it needs is prepared before the clone, the user it runs as (ty_runtime.run_as)
 * included: resolved here with getpwnam and getgrouplist, so that the child only changes its
 * credentials (setgroups, setgid, setuid, in that order). */
#include <errno.h>
#include <grp.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "clusterenv.h"
#include "macro.h"
#include "process-int.h"
#include "proctree.h"
#include "strv.h"

extern char **environ;

int pj_resolve_user(struct process_rt *p, struct ty_error *err)
{
    const char *name = p->base.run_as;
    struct passwd pw, *res = NULL;
    _cleanup_free_ char *buf = xmalloc(16384);
    int n = 64, r;

    if (!name)
        return 0;
    r = getpwnam_r(name, &pw, buf, 16384, &res);
    if (!res)
        return ty_error_set(err,
                            r ? r : ENOENT,
                            "run as user '%s': no such user%s%s",
                            name,
                            r ? ": " : "",
                            r ? strerror(r) : "");
    if (geteuid() != 0 && pw.pw_uid != geteuid())
        return ty_error_set(err,
                            EPERM,
                            "run as user '%s': only root can run replicas as another user "
                            "(trainyard runs as uid %d)",
                            name,
                            (int)geteuid());
    p->user.groups = xcalloc((size_t)n, sizeof(gid_t));
    if (getgrouplist(name, pw.pw_gid, p->user.groups, &n) < 0) {
        p->user.groups = xreallocarray(p->user.groups, (size_t)n, sizeof(gid_t));
        if (getgrouplist(name, pw.pw_gid, p->user.groups, &n) < 0)
            return ty_error_set(err, EINVAL, "run as user '%s': cannot list its groups", name);
    }
    p->user.n_groups = n;
    p->user.uid = pw.pw_uid;
    p->user.gid = pw.pw_gid;
    p->user.name = xstrdup(pw.pw_name);
    p->user.home = xstrdup(pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
    p->user.set = true;
    /* A tuning trial's metric directory is trainyard's (made for this trial): the replicas
     * write their metric file there. */
    if (p->base.plan && p->base.plan->metric_dir && !p->base.dry_run &&
        chown(p->base.plan->metric_dir, pw.pw_uid, pw.pw_gid) < 0 && errno != ENOENT)
        return ty_error_set(err,
                            errno,
                            "run as user '%s': cannot give it the metric directory %s: %s",
                            name,
                            p->base.plan->metric_dir,
                            strerror(errno));
    return 0;
}

/* Signals a parent may have set to SIG_IGN (ignored dispositions survive exec; caught ones
 * do not). The parent works out which are ignored, so the child resets only those. */
const int pc_reset_signals[PC_N_RESET_SIGNALS] = {SIGPIPE,
                                                  SIGINT,
                                                  SIGQUIT,
                                                  SIGTERM,
                                                  SIGHUP,
                                                  SIGCHLD,
                                                  SIGTSTP,
                                                  SIGTTIN,
                                                  SIGTTOU,
                                                  SIGUSR1,
                                                  SIGUSR2,
                                                  SIGALRM};

/* Resolve @prog along the PATH of @envp (as execvp would, with its default search path
 * when @envp has no PATH), so the child makes one execve. Returns a malloc'd path, or NULL
 * when @prog names a path (it has a '/') or is on none of the directories. */
char *pc_resolve_program(const char *prog, char *const *envp)
{
    const char *path = ty_strv_getenv(envp, "PATH");
    _cleanup_free_ char *copy = NULL;
    char *save = NULL;

    if (strchr(prog, '/'))
        return NULL;
    copy = xstrdup(path ? path : "/bin:/usr/bin");
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        char *cand = xasprintf("%s/%s", *dir ? dir : ".", prog);
        if (access(cand, X_OK) == 0)
            return cand;
        free(cand);
    }
    return NULL;
}

static bool child_needs(const struct child_setup *cs, int fd)
{
    if (fd == cs->out_w || fd == cs->err_w || fd == cs->status_w || fd == cs->devnull)
        return true;
    for (size_t i = 0; i < cs->n_cg; i++)
        if (fd == cs->cg_fds[i])
            return true;
    return false;
}

/* Close the port reservations listed in @cs (ascending), a range at a time: place() makes
 * them one after another, so their numbers mostly follow each other. */
static void child_close_held(const struct child_setup *cs)
{
    size_t i = 0;

    while (i < cs->n_held) {
        size_t j = i;
        if (child_needs(cs, cs->held[i])) { /* never, unless the list is stale */
            i++;
            continue;
        }
        while (j + 1 < cs->n_held && cs->held[j + 1] == cs->held[j] + 1 &&
               !child_needs(cs, cs->held[j + 1]))
            j++;
        if (syscall(SYS_close_range, (unsigned)cs->held[i], (unsigned)cs->held[j], 0U) < 0)
            for (size_t k = i; k <= j; k++)
                close(cs->held[k]);
        i = j + 1;
    }
}

/* In the child, between clone and exec: it shares the parent's memory (the parent is
 * suspended), so only system calls, on its own stack, writing nothing but its locals (errno
 * aside). The credentials are changed by raw system calls: glibc's wrappers would signal
 * the parent's threads to change theirs too. Not instrumented: the sanitizers' own state is
 * the parent's. */
__attribute__((no_sanitize_address)) static int child(void *arg)
{
    const struct child_setup *cs = arg;
    sigset_t none;
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    struct child_fail f = {PJ_CGROUP, 0};

    child_close_held(cs);
    (void)setpgid(0, 0);
    /* Into the cgroup first, while still privileged (the cgroup stays root's). */
    if (cs->n_cg && (f.err = -ty_cgroup_enter(cs->cg_fds, cs->n_cg)) != 0)
        goto fail_errno;
    if (cs->user) {
        f.stage = PJ_SETGROUPS;
        if (syscall(SYS_setgroups, (size_t)cs->user->n_groups, cs->user->groups) < 0)
            goto fail;
        f.stage = PJ_SETGID;
        if (syscall(SYS_setgid, cs->user->gid) < 0)
            goto fail;
        f.stage = PJ_SETUID;
        if (syscall(SYS_setuid, cs->user->uid) < 0)
            goto fail;
    }
    /* The runtime's directory (the service's: the jobDir, else /), entered as that user.
     * Without one, this process's: when it is closed to that user, its home, else /. */
    if (cs->workdir) {
        f.stage = PJ_CHDIR;
        if (chdir(cs->workdir) < 0)
            goto fail;
    } else if (cs->user && access(".", X_OK) < 0 && chdir(cs->user->home) < 0) {
        (void)!chdir("/");
    }
    f.stage = PJ_EXEC;
    /* After the credentials: changing them clears the parent-death signal. */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != cs->parent)
        _exit(127);
    /* trainyard's own handlers (they write to its signal pipe, shared with us until exec)
     * must not run here: a SIGTERM sent to this replica before its exec would otherwise
     * look like a cancel of the whole job. Signals are blocked since before the clone. */
    for (size_t i = 0; i < cs->n_reset; i++)
        (void)sigaction(cs->reset[i], &dfl, NULL);
    /* trainyard raised its own open-files limit for the job's descriptors; the replica gets
     * the limit trainyard was started with (programs using select() rely on 1,024). */
    if (cs->restore_nofile)
        (void)setrlimit(RLIMIT_NOFILE, &cs->nofile);
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(cs->devnull, STDIN_FILENO) < 0 || dup2(cs->out_w, STDOUT_FILENO) < 0 ||
        dup2(cs->err_w, STDERR_FILENO) < 0)
        goto fail;
    /* Nothing but 0-2 reaches the program: a descriptor the caller of `local train` left open
     * (a script's `exec 7>file`, a pipe passed on) would reach the replica and what it starts.
     * Marked close-on-exec (this table is the child's own: no CLONE_FILES), as the status pipe
     * must stay open until the exec; before Linux 5.11, closed around it. */
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
        if (cs->status_w > 3)
            (void)syscall(SYS_close_range, 3U, (unsigned)cs->status_w - 1, 0U);
        (void)syscall(SYS_close_range, (unsigned)cs->status_w + 1, ~0U, 0U);
    }
    /* A program not found on the PATH of the replica's environment is not looked for again
     * here: execvpe would search this process's PATH (the daemon's, under the service). */
    if (strchr(cs->path, '/'))
        execve(cs->path, cs->argv, cs->envp);
    else
        errno = ENOENT;
fail:
    f.err = errno;
fail_errno:
    (void)!write(cs->status_w, &f, sizeof(f));
    _exit(127);
}

void pc_signals_to_reset(struct child_setup *cs)
{
    cs->n_reset = 0;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction cur;
        bool listed = false;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &cur) < 0 ||
            cur.sa_handler == SIG_DFL)
            continue;
        for (size_t i = 0; i < PC_N_RESET_SIGNALS; i++)
            listed = listed || pc_reset_signals[i] == sig;
        if (cur.sa_handler != SIG_IGN || listed)
            cs->reset[cs->n_reset++] = sig;
    }
}

/* The environment of @pr's program: the runtime's base (ty_runtime.base_env: the service's
 * defined one), else trainyard's own, without any of the contract's variables
 * (ty_clusterenv_names: a caller's RANK or CLOUD_ML_TRIAL_ID is not the replica's); the
 * metric file of a tuning trial, the contract variables @env and the run token. Caller
 * frees. */
char **pc_replica_env(struct proc_replica *pr, char *const env[])
{
    struct process_rt *p = pr->rt;
    const struct ty_replica_gpus *g =
        p->base.gpus ? &p->base.gpus[ty_runtime_replica_index(&p->base, pr->r)] : NULL;
    char **envp = ty_strv_copy(p->base.base_env ? p->base.base_env : environ);

    for (size_t i = 0; ty_clusterenv_names[i]; i++)
        ty_strv_unsetenv(envp, ty_clusterenv_names[i]);

    /* A tuning trial's metric file is in its own host directory (plan.h); the run's
     * variables below may still name another. */
    if (p->base.plan->metric_dir) {
        _cleanup_free_ char *mf = xasprintf("%s/output.metrics", p->base.plan->metric_dir);
        ty_strv_setenv(&envp, "CLOUD_ML_HP_METRIC_FILE", mf);
    }
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        _cleanup_free_ char *name = xstrndup(env[i], eq ? (size_t)(eq - env[i]) : strlen(env[i]));
        ty_strv_setenv(&envp, name, eq ? eq + 1 : "");
    }
    if (g && g->n > 0) {
        /* The device numbers are the driver's minor numbers; CUDA numbers devices in PCI bus
         * order with CUDA_DEVICE_ORDER=PCI_BUS_ID, the order the driver gives minors in. */
        char list[512];
        ty_strv_setenv(&envp, "CUDA_VISIBLE_DEVICES", ty_replica_gpus_list(g, list, sizeof(list)));
        ty_strv_setenv(&envp, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    }
    ty_strv_setenv(&envp, TY_RUN_TOKEN_ENV, p->token);
    if (p->user.set) {
        ty_strv_setenv(&envp, "HOME", p->user.home);
        ty_strv_setenv(&envp, "USER", p->user.name);
        ty_strv_setenv(&envp, "LOGNAME", p->user.name);
    }
    return envp;
}

pid_t pc_fork_child(const struct child_setup *cs)
{
    sigset_t all, saved_mask;
    void *stack = cs->stack;
    pid_t pid;
    int e;

    if (!stack)
        stack = mmap(NULL,
                     PC_CHILD_STACK_SIZE,
                     PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                     -1,
                     0);
    if (stack == MAP_FAILED)
        return -errno;
    sigfillset(&all);
    (void)pthread_sigmask(SIG_SETMASK, &all, &saved_mask);
    /* The stack grows down (x86_64, aarch64): the child starts at its top. */
    pid = clone(child,
                (char *)stack + PC_CHILD_STACK_SIZE,
                CLONE_VM | CLONE_VFORK | SIGCHLD,
                (void *)(uintptr_t)cs);
    e = errno;
    (void)pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
    if (stack != cs->stack)
        (void)munmap(stack, PC_CHILD_STACK_SIZE);
    return pid < 0 ? -e : pid;
}
