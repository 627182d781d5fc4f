/* SPDX-License-Identifier: Apache-2.0
 * process-int.h: the process runtime's state, shared by process.c (replicas: fork, watch,
 * clean up) and process-jail.c (what contains them: the job's cgroups and their guardian,
 * the machine type's limits, the user replicas run as). */
#ifndef TY_PROCESS_INT_H
#define TY_PROCESS_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "cgroup.h"
#include "linesplit.h"
#include "runtime.h"

struct proc_replica {
    struct process_rt *rt;
    struct ty_replica *r;
    pid_t pid;
    int pidfd, out_fd, err_fd, reserve_fd;
    int status_fd;  /* close-on-exec pipe: EOF = exec done, a struct child_fail = it failed */
    int exec_errno; /* non-zero when the start failed */
    int fail_stage; /* enum pj_stage of that failure */
    char *program;  /* argv[0], for messages */
    struct ty_linesplit out_ls, err_ls;
    bool started;
    bool exited;
    struct ty_cgroup *cg; /* the replica's cgroup (NULL: none) */
    int64_t oom_base;     /* its OOM kills when the run in progress began */
    bool cg_entered;      /* a run of it has been launched into pr->cg */
};

/* The user replicas run as (ty_runtime.run_as), resolved before any fork. */
struct pj_user {
    bool set;
    uid_t uid;
    gid_t gid;
    gid_t *groups; /* supplementary groups */
    int n_groups;
    char *name, *home;
};

struct process_rt {
    struct ty_runtime base;
    struct proc_replica *reps;
    size_t n;
    char token[40];
    /* cleanup (asynchronous: rounds on the loop) */
    bool cleaning, cleaned;
    pid_t *roots; /* the replicas not exited when it began (0: reaped) */
    size_t n_roots;
    int64_t clean_deadline;
    int *watch_fds; /* pidfds of what the round in progress waits for */
    size_t n_watch;
    uint64_t clean_timer; /* the round's end */
    /* containment (process-jail.c) */
    struct ty_cgroup *cg; /* the job's cgroup, parent of the replicas' (NULL: none) */
    pid_t guard_pid;      /* the guardian (0: none) */
    int guard_fd;         /* write end of its lifeline (-1: none) */
    struct pj_user user;
    /* launch's state kept from one replica to the next (at 1,000 replicas each system call
     * counts): the child's stack, /dev/null, the signals to reset (listed at the first
     * launch), the last program resolved along the PATH. */
    void *child_stack; /* PC_CHILD_STACK_SIZE bytes, or NULL until the first launch */
    int devnull;       /* -1 until the first launch */
    bool reset_known;
    int reset[NSIG];
    size_t n_reset;
    char *res_prog, *res_path, *res; /* argv[0], the PATH it was looked up on, the result */
};

/* What a child failed at before its program ran (reported on the status pipe). */
enum pj_stage { PJ_EXEC, PJ_CGROUP, PJ_SETGROUPS, PJ_SETGID, PJ_SETUID, PJ_CHDIR };
struct child_fail {
    int stage;
    int err;
};

/* process-child.c: the child between fork and exec, and the user it runs as. */

/* Resolve ty_runtime.run_as into p->user (nothing when unset). Returns 0, or -errno with
 * @err naming the user and what is wrong (unknown user, not root). */
int pj_resolve_user(struct process_rt *p, struct ty_error *err);

/* Signals a parent may have set to SIG_IGN (ignored dispositions survive exec; caught ones
 * do not): the parent finds which are ignored, the child resets only those. */
#define PC_N_RESET_SIGNALS 12
extern const int pc_reset_signals[PC_N_RESET_SIGNALS];

struct child_setup {
    int out_w, err_w, status_w, devnull;
    int cg_fds[TY_CGROUP_MAX_DIRS]; /* ty_cgroup_open_procs of the replica's cgroup */
    size_t n_cg;
    const struct pj_user *user; /* NULL: as this process */
    const char *workdir;        /* ty_runtime.workdir: NULL, this process's directory */
    const char *path;           /* resolved program, or argv[0] when not found (ENOENT) */
    char **argv, **envp;
    pid_t parent;
    int reset[NSIG]; /* signals to set to SIG_DFL: caught ones, and pc_reset_signals ignored */
    size_t n_reset;
    const int *held; /* every port reservation of this process (ty_port_held), ascending */
    size_t n_held;
    struct rlimit nofile; /* the open-files limit to restore (ty_nofile_original) */
    bool restore_nofile;
    void *stack; /* PC_CHILD_STACK_SIZE bytes for the child, or NULL: one is mapped */
};

/* The child's stack: child() needs little (its locals and the system calls' wrappers). */
#define PC_CHILD_STACK_SIZE (64 * 1024)

/* Fill @cs->reset from this process's signal dispositions. */
void pc_signals_to_reset(struct child_setup *cs);

/* Resolve @prog along the PATH of @envp (as execvp would; its default search path when
 * @envp has none), so the child makes one execve and never searches trainyard's own PATH.
 * Returns a malloc'd path, or NULL when @prog has a '/' (run as it is) or is not found. */
char *pc_resolve_program(const char *prog, char *const *envp);

/* The environment of replica @pr: trainyard's own, the metric file of a tuning trial, the
 * contract variables @env, the GPUs it was given (CUDA_VISIBLE_DEVICES with their device
 * numbers, CUDA_DEVICE_ORDER=PCI_BUS_ID; stand-ins alike; nothing of trainyard's own is
 * changed for a replica given none), the run token, and HOME/USER/LOGNAME of the user it runs
 * as. Caller frees. */
char **pc_replica_env(struct proc_replica *pr, char *const env[]);

/* Start the child of @cs: a clone sharing this process's memory, this thread suspended until
 * the child has exec'd or died (vfork's way: no copy of the page tables, and no child that
 * has not exec'd yet when this returns; so one cs->stack serves every launch in turn). Every signal
 * is blocked meanwhile (no handler of ours runs in the child before it resets them). The child
 * closes every port reservation listed in @cs (so it holds none of its siblings'), enters its
 * cgroup, takes its user's credentials and execs, or writes a struct child_fail to cs->status_w.
 * Returns its pid or -errno. */
pid_t pc_fork_child(const struct child_setup *cs);

/* process.c */

/* Read what is available on one of @pr's pipes (*@fdp: out_fd or err_fd), delivering its
 * lines; on EOF or error close it (*@fdp = -1). With @held, read what the pipe holds at the
 * call (its FIONREAD), never more, so that a writer still at its other end cannot keep the
 * call going; else one read. */
void pk_drain(struct proc_replica *pr, int *fdp, bool held);
/* Deliver the part line a pipe of @pr still holds and close it (*@fdp = -1); nothing when it
 * is closed. */
void pk_close_pipe(struct proc_replica *pr, int *fdp);

/* process-cleanup.c */

/* The runtime's cleanup(): kill whatever of the run is left (leftover children, orphans) until
 * nothing is; a process in uninterruptible sleep can take a moment to die, so this goes on for
 * up to 5 s, each round waiting on the pidfds of what is left (on the loop, with a timer for
 * the round: nothing blocks). Returns 0 when it is over, else TY_RUNTIME_ASYNC (`cleaned`
 * follows). */
int pk_cleanup(struct process_rt *p);
/* destroy(): finish the cleanup here and now (it never ran, or goes on on the loop), polling
 * the pidfds of what is left without running the caller's loop. */
void pk_clean_now(struct process_rt *p);

/* process-jail.c */

/* Put the job in cgroups of its own: the job's, one per replica below it with its machine
 * type's CPU and memory limits, and a guardian process that removes them (and kills what is
 * in them) if this process dies without doing so: the program trainyard-guardian, else (a
 * notice, once per process) a fork of this process. Where no cgroup can be made, the job runs
 * without (process groups and the process tree only) and a notice says why, once per
 * process. Empty job cgroups beside the new one whose run no longer exists (pj_cgroup_orphaned)
 * and older than a minute are removed first. Never fails the run. */
void pj_setup(struct process_rt *p);
/* Is @name a job cgroup ("trainyard-<pid>-<hex>") whose making process is gone (no process
 * has its pid)? @ctx unused (ty_cgroup_sweep_beside's predicate). */
bool pj_cgroup_orphaned(const char *name, void *ctx);

/* Before a replica's fork: open the files that move its child into its cgroup
 * (ty_cgroup_open_procs) into @fds and note its OOM count. Returns how many fds (0 without a
 * cgroup), or -errno with @err. */
int pj_before_launch(struct proc_replica *pr, int fds[TY_CGROUP_MAX_DIRS], struct ty_error *err);

/* Did the memory limit kill something of @pr's run in progress? */
bool pj_oom_killed(const struct proc_replica *pr);

/* The processes of @pr's cgroup into *@ret (caller frees; none without one). Returns how
 * many. */
size_t pj_pids(const struct proc_replica *pr, pid_t **ret);

/* Kill every process of @pr's cgroup (a restart in place; no-op without one). */
void pj_kill_replica(const struct proc_replica *pr);

/* One pass of killing every process in the job's cgroup, after removing the replicas'
 * cgroups that have none left. Returns true while it still has processes (false without a
 * cgroup). */
bool pj_kill_round(struct process_rt *p);

/* The run is over: remove the cgroups (a notice when something is left in them: the guardian
 * then goes on killing it), let the guardian go and free the user. */
void pj_finish(struct process_rt *p);

#endif
