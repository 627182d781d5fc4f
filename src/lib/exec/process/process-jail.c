/* SPDX-License-Identifier: Apache-2.0
 * process-jail.c: what contains the process runtime's replicas (docs/internals/runtime.md).
 *
 * Cgroups: the job gets trainyard-<run token> below the cgroup trainyard runs in, and each
 * replica <task name> below that, with its machine type's vCPUs (a CFS quota) and memory
 * (swap included) as limits. Every process a replica starts stays in its cgroup whatever
 * process group or session it moves to, so the end of the job ends all of them.
 *
 * The guardian: a small process started when the cgroups are made, in a session of its own
 * and outside the job's cgroups, holding the read end of a pipe whose write end only this
 * process holds (close-on-exec). When the run ends normally this process removes the
 * cgroups, writes "D" and reaps the guardian. If this process dies first (kill -9 of
 * `trainyard local train` or of a supervisor), the guardian reads EOF, kills everything in
 * the job's cgroups until they are empty, removes them and exits.
 *
 * The guardian is the program trainyard-guardian, started by posix_spawn (a vfork-style
 * clone, then an exec): it shares no memory with this process, which a forked one living as
 * long as the job did (each page this process wrote was then a copy-on-write fault). When
 * that program cannot be run, the guardian is a fork of this process, as before, with a
 * notice: never no guardian.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "cgroup-guard.h"
#include "machine.h"
#include "macro.h"
#include "ports.h"
#include "process-int.h"
#include "proctree.h"
#include "subproc.h"
#include "ty-config.h"

/* The job cgroups' names: this, then the run token. */
#define JOB_CGROUP_PREFIX "trainyard-"
/* A job cgroup younger than this is never swept (a run of another PID namespace may have
 * made it and not entered it yet). */
#define ORPHAN_CGROUP_MIN_AGE_S 60

/* One notice per process that cgroups are not used, one that limits are not, and one that
 * the guardian program cannot be run. */
static bool noticed_no_cgroup, noticed_no_limits, noticed_forked_guardian;

/* ---- the forked guardian (when trainyard-guardian cannot be run) ------------------------- */

/* Blank this process's original environment block (what /proc/PID/environ shows), so that
 * the service's sweep, which kills every process whose environment carries a dead
 * supervisor's key, does not kill the guardian of that supervisor's job mid-work. The
 * guardian reads no variable. */
static void scrub_environ(void)
{
    char buf[4096], *p, *save = NULL;
    unsigned long long start = 0, end = 0;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), field = 2;
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* after the command name, which may hold spaces */
    for (char *f = p ? strtok_r(p + 1, " ", &save) : NULL; f; f = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 50) /* env_start, env_end: proc(5) */
            start = strtoull(f, NULL, 10);
        else if (field == 51)
            end = strtoull(f, NULL, 10);
    }
    if (start && end > start)
        memset((void *)(uintptr_t)start, 0, (size_t)(end - start));
}

/* The port reservations of this process when the guardian is forked (ports.h), and the
 * write end of the pipe whose EOF tells the parent they are closed (-1: none held). */
struct guard_start {
    int *held;
    size_t n_held;
    int ready_w;
};

/* The guardian's life, in the forked child: wait for "D" or EOF on @fd. First of all it
 * closes the port reservations it was forked with (another run's, placed meanwhile: a
 * replica could not bind its port while the guardian holds a copy) and says so. */
static void __attribute__((noreturn))
guardian(int fd, const struct guard_start *gs, const struct ty_cgroup *cg)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, dfl = {.sa_handler = SIG_DFL};
    sigset_t none;
    int nul;

    for (size_t i = 0; i < gs->n_held; i++)
        close(gs->held[i]);
    if (gs->ready_w >= 0)
        close(gs->ready_w);
    (void)setsid();
    for (int sig = 1; sig < NSIG; sig++) /* no handler of the owner's may run here */
        if (sig != SIGKILL && sig != SIGSTOP)
            (void)sigaction(sig, &dfl, NULL);
    (void)sigaction(SIGINT, &ign, NULL);
    (void)sigaction(SIGTERM, &ign, NULL);
    (void)sigaction(SIGHUP, &ign, NULL);
    (void)sigaction(SIGPIPE, &ign, NULL);
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    (void)prctl(PR_SET_NAME, "ty-guardian", 0, 0, 0);
    /* Hold nothing of the owner's but the lifeline: another guardian's pipe held here would
     * keep that one from ever seeing its EOF. */
    if (dup2(fd, 3) < 0)
        _exit(1);
    (void)syscall(SYS_close_range, 4U, ~0U, 0U);
    nul = open("/dev/null", O_RDWR);
    for (int i = 0; i < 3 && nul >= 0; i++)
        (void)dup2(nul, i);
    if (nul > 3)
        close(nul);
    (void)!chdir("/");
    scrub_environ();
    if (ty_cgroup_guard_wait(3) == 1)
        _exit(0); /* "D": the owner removed the cgroup itself */
    _exit(ty_cgroup_guard_end(cg) < 0 ? 1 : 0);
}

/* Wait for EOF on @fd, then close it. */
static void wait_eof(int fd)
{
    char c;
    ssize_t n;

    do
        n = read(fd, &c, 1);
    while (n > 0 || (n < 0 && errno == EINTR));
    close(fd);
}

/* Fork the guardian of p->cg with the lifeline @fds (its read end goes to the guardian). When
 * port reservations are held (another run of this process placed its replicas), wait until
 * the guardian has closed its copies. Returns its pid or -errno. */
static pid_t fork_guardian(struct process_rt *p, const int fds[2])
{
    struct guard_start gs = {.ready_w = -1};
    _cleanup_free_ int *held = NULL;
    int ready[2] = {-1, -1};
    sigset_t all, saved;
    pid_t pid;
    int e;

    gs.n_held = ty_port_held(&held);
    gs.held = held;
    if (gs.n_held && pipe2(ready, O_CLOEXEC) < 0)
        return -errno;
    gs.ready_w = ready[1];
    sigfillset(&all);
    (void)pthread_sigmask(SIG_SETMASK, &all, &saved);
    pid = fork();
    if (pid == 0)
        guardian(fds[0], &gs, p->cg);
    e = errno;
    (void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (ready[1] >= 0)
        close(ready[1]);
    if (ready[0] >= 0)
        wait_eof(ready[0]); /* at once when the fork failed */
    return pid < 0 ? -e : pid;
}

/* ---- the guardian program ---------------------------------------------------------------- */

/* The guardian program: $TRAINYARD_GUARDIAN, else next to this program (the build puts every
 * program in build/bin; an installed supervisor is in libexec/trainyard), else where `meson
 * install` puts it. Found once per process. */
static const char *guardian_path(void)
{
    static char *path;

    if (!path)
        path = ty_sibling_program(
            "TRAINYARD_GUARDIAN", "trainyard-guardian", TY_PKGLIBEXECDIR "/trainyard-guardian");
    return path;
}

/* Start the guardian program for @cg with the lifeline's read end @life as its fd 3: its own
 * session, default signal dispositions and an empty mask, fds 0-2 on /dev/null and no other
 * (closefrom runs in the child before the exec, and the parent is suspended until then, so
 * no copy of a port reservation is ever held: nothing to wait for), cwd /, an empty
 * environment (the service's sweep looks for a dead supervisor's key in environments). The
 * child shares this process's memory until its exec, so no page table is copied. Returns
 * its pid or -errno (the program not found, or not executable). */
static pid_t spawn_guardian(const struct ty_cgroup *cg, int life)
{
    const char *ctrls[TY_CGROUP_MAX_DIRS], *dirs[TY_CGROUP_MAX_DIRS];
    size_t n = ty_cgroup_dirs(cg, ctrls, dirs);
    char *argv[TY_CGROUP_MAX_DIRS + 3] = {(char *)"ty-guardian",
                                          ty_cgroup_version(cg) == 1 ? (char *)"1" : (char *)"2"};
    char *envp[] = {NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t all, none;
    pid_t pid = -1;
    int r;

    for (size_t i = 0; i < n; i++)
        argv[2 + i] = xasprintf("%s=%s", ctrls[i], dirs[i]);
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, life, 3); /* @life > 3: see start_guardian */
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&fa, 0, 1);
    posix_spawn_file_actions_adddup2(&fa, 0, 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    posix_spawn_file_actions_addchdir_np(&fa, "/");
    r = posix_spawn(&pid, guardian_path(), &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    for (size_t i = 0; i < n; i++)
        free(argv[2 + i]);
    return r ? -r : pid;
}

/* Start the guardian of p->cg: the program, else (with a notice, once) a fork. Returns 0 or
 * -errno. */
static int start_guardian(struct process_rt *p)
{
    int fds[2];
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    /* The read end becomes the guardian's fd 3: it must not be 0-3 itself (a dup2 onto
     * itself would keep its close-on-exec flag; 0-2 are replaced by /dev/null). */
    if (fds[0] <= 3) {
        int moved = fcntl(fds[0], F_DUPFD_CLOEXEC, 4);
        if (moved < 0) {
            int e = errno;
            close(fds[0]), close(fds[1]);
            return -e;
        }
        close(fds[0]);
        fds[0] = moved;
    }
    pid = spawn_guardian(p->cg, fds[0]);
    if (pid < 0) {
        if (!noticed_forked_guardian) {
            noticed_forked_guardian = true;
            ty_runtime_notice(&p->base,
                              TY_SEV_WARNING,
                              "The job's cgroup guardian is a fork of this process: %s cannot "
                              "be run (%s). It works the same, but costs this process "
                              "copy-on-write faults while jobs run; set TRAINYARD_GUARDIAN to "
                              "the program's path.",
                              guardian_path(),
                              strerror(-pid));
        }
        pid = fork_guardian(p, fds);
    }
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        return pid;
    }
    ty_proctree_own(pid); /* reaped here, in pj_finish */
    p->guard_pid = pid;
    p->guard_fd = fds[1];
    return 0;
}

/* ---- cgroups ----------------------------------------------------------------------------- */

static void no_cgroup(struct process_rt *p, const char *why)
{
    if (noticed_no_cgroup)
        return;
    noticed_no_cgroup = true;
    ty_runtime_notice(&p->base,
                      TY_SEV_WARNING,
                      "The job's processes run without a cgroup of their own (%s): no CPU or "
                      "memory limits apply, and a process that leaves its replica's process "
                      "group can outlive trainyard if trainyard is killed.",
                      why);
}

/* Make @pr's cgroup below the job's, limited to its machine type. */
static void replica_cgroup(struct process_rt *p, struct proc_replica *pr)
{
    const struct ty_machine_type *mt = ty_machine_lookup(pr->r->machine_type);
    struct ty_error e = {0};

    if (ty_cgroup_new_child(p->cg, pr->r->task_name, &pr->cg, &e) < 0) {
        ty_runtime_notice(&p->base,
                          TY_SEV_WARNING,
                          "Replica %s runs in the job's cgroup: %s",
                          pr->r->display_name,
                          ty_error_msg(&e));
        return;
    }
    /* No machine type (a custom role without one): no limit but the host's. */
    if (mt &&
        ty_cgroup_set_limits(pr->cg, (int64_t)mt->vcpus * 1000, mt->memory_mb * 1024 * 1024, &e) <
            0 &&
        !noticed_no_limits) {
        noticed_no_limits = true;
        ty_runtime_notice(&p->base,
                          TY_SEV_WARNING,
                          "The machine types' CPU and memory limits are not applied: %s",
                          ty_error_msg(&e));
    }
}

/* Is @name a job cgroup "trainyard-<pid>-<hex>" (the run token: process.c) whose making
 * process no longer exists? Another process of that pid since makes it look alive: then it
 * is left. */
bool pj_cgroup_orphaned(const char *name, void *ctx)
{
    const char *p = name + sizeof(JOB_CGROUP_PREFIX) - 1;
    char *end;
    long pid;

    (void)ctx;
    if (strncmp(name, JOB_CGROUP_PREFIX, sizeof(JOB_CGROUP_PREFIX) - 1) != 0 || *p < '1' ||
        *p > '9')
        return false;
    errno = 0;
    pid = strtol(p, &end, 10);
    if (errno || pid <= 0 || pid > INT_MAX || *end != '-' || !end[1] ||
        strspn(end + 1, "0123456789abcdef") != strlen(end + 1))
        return false;
    return pid != (long)getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

void pj_setup(struct process_rt *p)
{
    _cleanup_free_ char *name = xasprintf(JOB_CGROUP_PREFIX "%s", p->token);
    struct ty_error e = {0};
    size_t swept;
    int r;

    p->guard_fd = -1;
    if (ty_cgroup_new(name, &p->cg, &e) < 0) {
        no_cgroup(p, ty_error_msg(&e));
        return;
    }
    /* A run that was SIGKILLed with its guardian (Slurm kills a whole step after KillWait)
     * left its cgroups behind, empty: the next run here removes them. */
    swept = ty_cgroup_sweep_beside(
        p->cg, JOB_CGROUP_PREFIX, pj_cgroup_orphaned, NULL, ORPHAN_CGROUP_MIN_AGE_S);
    if (swept > 0)
        ty_runtime_notice(&p->base,
                          TY_SEV_INFO,
                          "Removed %zu empty cgroup(s) left by trainyard runs that no longer "
                          "exist.",
                          swept);
    r = start_guardian(p);
    if (r < 0) {
        char why[128];
        (void)snprintf(why, sizeof(why), "cannot start its guardian: %s", strerror(-r));
        (void)ty_cgroup_remove(p->cg);
        ty_cgroup_free(p->cg);
        p->cg = NULL;
        no_cgroup(p, why);
        return;
    }
    for (size_t i = 0; i < p->n; i++)
        replica_cgroup(p, &p->reps[i]);
}

static const struct ty_cgroup *cg_of(const struct proc_replica *pr)
{
    return pr->cg ? pr->cg : pr->rt->cg;
}

int pj_before_launch(struct proc_replica *pr, int fds[TY_CGROUP_MAX_DIRS], struct ty_error *err)
{
    const struct ty_cgroup *cg = cg_of(pr);

    if (!cg)
        return 0;
    /* A cgroup made for this run that no process has entered yet has no OOM kill to read. */
    pr->oom_base = !pr->cg                                       ? -1
                   : !pr->cg_entered && ty_cgroup_is_new(pr->cg) ? 0
                                                                 : ty_cgroup_oom_kills(pr->cg);
    pr->cg_entered = true;
    return ty_cgroup_open_procs(cg, fds, err);
}

bool pj_oom_killed(const struct proc_replica *pr)
{
    return pr->cg && pr->oom_base >= 0 && ty_cgroup_oom_kills(pr->cg) > pr->oom_base;
}

size_t pj_pids(const struct proc_replica *pr, pid_t **ret)
{
    *ret = NULL;
    return pr->cg ? ty_cgroup_pids(pr->cg, ret) : 0;
}

void pj_kill_replica(const struct proc_replica *pr)
{
    if (pr->cg)
        (void)ty_cgroup_kill(pr->cg);
}

bool pj_kill_round(struct process_rt *p)
{
    if (!p->cg)
        return false;
    /* The replicas' cgroups first, each by its own rmdir: the kernel refuses (EBUSY) one
     * that still has processes, and the walk below finds them; those removed (usually all:
     * every replica has exited) are not listed and read one by one. */
    for (size_t i = 0; i < p->n; i++)
        if (p->reps[i].cg && ty_cgroup_remove_empty(p->reps[i].cg) == 0) {
            ty_cgroup_free(p->reps[i].cg);
            p->reps[i].cg = NULL;
        }
    /* Nothing was there to kill: then it is empty (one walk of the v1 cgroups, not two; v2
     * asks cgroup.events, which also counts what cgroup.procs cannot list). */
    if (ty_cgroup_kill(p->cg) == 0 && ty_cgroup_version(p->cg) == 1)
        return false;
    return ty_cgroup_populated(p->cg);
}

void pj_finish(struct process_rt *p)
{
    int r = 0;

    /* The replicas' cgroups first, each by its known path (one rmdir per directory), so the
     * job's has no child left to list when it goes. */
    for (size_t i = 0; p->cg && i < p->n; i++)
        if (p->reps[i].cg)
            (void)ty_cgroup_remove(p->reps[i].cg);
    if (p->cg)
        r = ty_cgroup_remove(p->cg);

    if (r < 0)
        ty_runtime_notice(&p->base,
                          TY_SEV_WARNING,
                          "The job's cgroup %s could not be removed (%s); its guardian goes on "
                          "killing what is left in it.",
                          ty_cgroup_path(p->cg),
                          strerror(-r));
    if (p->guard_fd >= 0) {
        char c = TY_CGROUP_GUARD_DONE;
        if (r == 0)
            (void)!write(p->guard_fd, &c, 1);
        close(p->guard_fd);
        p->guard_fd = -1;
        if (r == 0) { /* it exits on reading "D", with 0 */
            int st = 0;
            if (waitpid(p->guard_pid, &st, 0) == p->guard_pid && WIFEXITED(st) &&
                WEXITSTATUS(st) == 2)
                ty_runtime_notice(&p->base,
                                  TY_SEV_WARNING,
                                  "The job's cgroup guardian %s exited with status 2 (it did "
                                  "not understand its arguments: a program of another "
                                  "version?), so this job ran without one; set "
                                  "TRAINYARD_GUARDIAN to the program of this version.",
                                  guardian_path());
        }
        ty_proctree_disown(p->guard_pid); /* else reaped as an orphan */
        p->guard_pid = 0;
    }
    for (size_t i = 0; i < p->n; i++) {
        ty_cgroup_free(p->reps[i].cg);
        p->reps[i].cg = NULL;
    }
    ty_cgroup_free(p->cg);
    p->cg = NULL;
    free(p->user.groups);
    free(p->user.name);
    free(p->user.home);
    memset(&p->user, 0, sizeof(p->user));
}
