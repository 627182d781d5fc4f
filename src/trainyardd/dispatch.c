/* SPDX-License-Identifier: Apache-2.0
 * dispatch.c: the service's main-thread side: run the scheduling passes (admission.c) that
 * start one supervisor process per admitted job, watch each through a pidfd, and keep the
 * store truthful when a supervisor dies without finishing its job. That is AI Platform's internal
 * error: whatever the job left running is swept, then the job is run again by a new supervisor as
 * the next attempt (it stays RUNNING, keeps its slot, and the new supervisor starts once the sweep
 * is over; it keeps what the scheduler gave it), at most TYD_MAX_INTERNAL_RETRIES times, after
 * which it FAILS with "Internal error occurred for the current attempt."; a job whose supervisor
 * had recorded its outcome ends with that outcome instead. Each of these is a service line in the
 * job's log. At start-up it recovers: supervisors that outlived a previous trainyardd (they run in
 * their own sessions) are watched again, dead ones are accounted for the same way.
 *
 * A supervisor is `trainyard-supervisor supervise-job` (src/trainyard-supervisor), the
 * program installed next to trainyardd. It claims its job in the store itself, so a job is
 * never run twice even if trainyardd dies between starting a supervisor and recording it. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admission.h"
#include "alloc.h"
#include "daemon.h"
#include "dispatch-internal.h"
#include "logs.h"
#include "loop.h"
#include "macro.h"
#include "proctree.h"
#include "statedir.h"
#include "statemode.h"
#include "strv.h"
#include "subproc.h"
#include "timeutil.h"
#include "ty-config.h"

/* Dispatch runs when a request kicks the loop, when a supervisor ends and at the next wait
 * deadline; this periodic pass is the safety net for anything else that frees room (a kick
 * lost to a full eventfd, a GPU another process let go, a store that could not be written)
 * and refreshes the reasons of waiting jobs. 5 s bounds that delay for one pass. */
#define RESCAN_USEC (5 * INT64_C(1000000))
/* Free memory goes back to the system on every TRIM_EVERYth rescan (once a minute). */
#define TRIM_EVERY 12
/* At the service's stop: how long it waits for its sweepers, all together. */
#define SWEEPER_STOP_MS 2000

extern char **environ;

struct shim {
    struct tyd_dispatch *dp;
    int64_t seq; /* the job it supervises, or (a sweeper) sweeps for */
    pid_t pid;
    int pidfd;
    bool child;   /* ours to wait for (not one found at start-up) */
    bool sweeper; /* a sweep-containers or sweep-slurm helper, not a job's supervisor */
};

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void dispatch(struct tyd_dispatch *dp);

static void remove_shim(struct tyd_dispatch *dp, struct shim *s)
{
    for (size_t i = 0; i < dp->n; i++) {
        if (dp->shims[i] != s)
            continue;
        dp->shims[i] = dp->shims[--dp->n];
        break;
    }
    tyd_admit_watched(dp->d, s->seq, -1);
    ty_loop_remove_fd(dp->loop, s->pidfd);
    close(s->pidfd);
    free(s);
}

/* Whether a supervisor (@sweeper false) or a sweeper (true) of job @seq is watched. */
static bool watching_kind(const struct tyd_dispatch *dp, int64_t seq, bool sweeper)
{
    for (size_t i = 0; i < dp->n; i++)
        if (dp->shims[i]->sweeper == sweeper && dp->shims[i]->seq == seq)
            return true;
    return false;
}

static bool watching(const struct tyd_dispatch *dp, int64_t seq)
{
    return watching_kind(dp, seq, false);
}

/* --- sweeping what a dead supervisor left ---------------------------------------------- */

static pid_t spawn_self(
    struct tyd_dispatch *dp, char *const argv[], char *const envp[], const int *fds, size_t nfds);

static void watch(struct tyd_dispatch *dp, int64_t seq, pid_t pid, bool child, bool sweeper);

/* Remove what the job's dead supervisor left: processes now, containers and Slurm jobs through
 * helper processes (the engine API is asynchronous; the main thread must not wait on it). A
 * new supervisor for the job waits until its helpers have ended (dispatch). */
static void sweep(struct tyd_dispatch *dp, const struct ty_job_row *row)
{
    bool slurm = row->runtime && strcmp(row->runtime, "slurm") == 0;
    /* Every process carrying the job's sweep key (local replicas and anything they started
     * inherit it) but, for a slurm job, the Slurm tasks on this host and srun: the launchers,
     * having lost their supervisor, remove their containers and directories and end the
     * step (or sweep-slurm's cancel ends it, with Slurm's SIGTERM and KillWait), where a
     * SIGKILL of a task, or of srun (Slurm then ends the step at once, the launchers'
     * container engines with it), would leave them behind. */
    static const char *const spared[] = {"SLURM_JOB_ID", TY_SLURM_CLIENT_ENV, NULL};
    int n = row->sweep_key && *row->sweep_key
                ? ty_proc_kill_by_env(TY_SWEEP_ENV, row->sweep_key, slurm ? spared : NULL)
                : 0;

    if (n)
        tyd_log("job %s/%s: killed %d leftover process(es)", row->project, row->job_id, n);
    if (row->runtime && strcmp(row->runtime, "container") == 0) {
        char *argv[] = {(char *)"trainyard-supervisor", (char *)"sweep-containers", NULL};
        pid_t pid = spawn_self(dp, argv, environ, NULL, 0);
        if (pid > 0)
            watch(dp, row->seq, pid, true, true);
    }
    /* Slurm jobs it left (pending ones would otherwise wait in the queue for nothing). */
    if (slurm && row->sweep_key && strlen(row->sweep_key) >= 8) {
        char *argv[] = {
            (char *)"trainyard-supervisor", (char *)"sweep-slurm", row->sweep_key, NULL};
        pid_t pid = spawn_self(dp, argv, environ, NULL, 0);
        if (pid > 0)
            watch(dp, row->seq, pid, true, true);
    }
}

/* The supervisor @pid of job @seq is gone. Unless the job is final or held by another
 * supervisor, sweep what it left and let the store decide what the job becomes
 * (ty_store_supervisor_lost): a job released for a new supervisor is started by dispatch()
 * once the sweep's helpers have ended. */
static void supervisor_gone(struct tyd_dispatch *dp, int64_t seq, pid_t pid, const char *how)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    struct ty_error e = {0};

    if (ty_store_get_job_by_seq(dp->d->store, seq, &row, &e) < 0) {
        tyd_log("job %lld: %s", (long long)seq, ty_error_msg(&e));
        if (ty_store_fs_error(e.code))
            tyd_lost_unrecorded(dp, seq, pid, false, how);
        return;
    }
    if (ty_job_state_is_final(row->state)) {
        /* its outcome is recorded: nothing to do, whatever happened afterwards, but free
         * what it held */
        tyd_admit_after(dp->d, row);
        return;
    }
    if (row->shim_pid != 0 && row->shim_pid != pid) {
        /* Another supervisor holds the job (this one lost the claim): watch that one, or
         * account for it if it is gone too. */
        if (watching(dp, seq))
            return;
        if ((int64_t)ty_proc_start_time((pid_t)row->shim_pid) == row->shim_start)
            watch(dp, seq, (pid_t)row->shim_pid, false, false);
        else
            supervisor_gone(dp, seq, (pid_t)row->shim_pid, "ended unwatched");
        return;
    }
    sweep(dp, row);
    tyd_lost_account(dp, seq, pid, how);
}

/* --- supervisors ------------------------------------------------------------------------ */

static void on_exit_fd(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct shim *s = data;
    struct tyd_dispatch *dp = s->dp;
    char how[96] = "ended";
    bool gave_back = false;

    if (s->child) {
        siginfo_t si = {0};
        if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED) == 0) {
            gave_back =
                !s->sweeper && si.si_code == CLD_EXITED && si.si_status == TY_EXIT_UNCLAIMED;
            if (si.si_code == CLD_EXITED)
                (void)snprintf(how, sizeof(how), "exited with status %d", si.si_status);
            else
                (void)snprintf(how,
                               sizeof(how),
                               "was killed by signal %d (%s)",
                               si.si_status,
                               strsignal(si.si_status));
        }
    }
    {
        int64_t seq = s->seq;
        pid_t pid = s->pid;
        bool sweeper = s->sweeper;
        /* Gone from the watch list first: a replacement may be watched in its place. */
        remove_shim(dp, s);
        if (gave_back)
            (void)tyd_lost_given_back(dp, seq, pid);
        else if (!sweeper)
            supervisor_gone(dp, seq, pid, how);
    }
    dispatch(dp);
}

static void watch(struct tyd_dispatch *dp, int64_t seq, pid_t pid, bool child, bool sweeper)
{
    struct shim *s;
    int fd = pidfd_open_(pid);

    if (fd < 0) {
        if (child) /* cannot happen for a child we have not waited for; reap it anyway */
            (void)waitpid(pid, NULL, 0);
        if (!sweeper)
            supervisor_gone(dp, seq, pid, "could not be watched");
        return;
    }
    s = xcalloc(1, sizeof(*s));
    *s = (struct shim){dp, seq, pid, fd, child, sweeper};
    dp->shims = xreallocarray(dp->shims, dp->n + 1, sizeof(*dp->shims));
    dp->shims[dp->n++] = s;
    tyd_admit_watched(dp->d, seq, 1);
    ty_loop_add_fd(dp->loop, fd, POLLIN, on_exit_fd, s);
}

/* Add to @fa the moves that make @fds (@n of them) the child's fds 3, 4, ...: each is first
 * copied above every fd in play (a lock may be fd 4 and belong at 3), then moved down (dup2
 * clears close-on-exec on the copy that stays), and the copy above closed. */
static void place_fds(posix_spawn_file_actions_t *fa, const int *fds, size_t n)
{
    int high = 3 + (int)n;

    for (size_t i = 0; i < n; i++)
        if (fds[i] >= high)
            high = fds[i] + 1;
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            (void)posix_spawn_file_actions_adddup2(fa, fds[i], high + (int)i);
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0) {
            (void)posix_spawn_file_actions_adddup2(fa, high + (int)i, 3 + (int)i);
            (void)posix_spawn_file_actions_addclose(fa, high + (int)i);
        }
}

/* Start trainyard-supervisor with SIGTERM, SIGINT and SIGHUP blocked (the supervisor unblocks
 * them once it can handle a cancel) and every other signal at its default, in a new session,
 * output to the log file, and @fds (@nfds GPU locks) as its fds 3, 4, ... posix_spawn (a
 * vfork, in glibc) and not fork: a fork would make every page of the daemon copy-on-write
 * until the child's exec, and the next scheduling pass, which writes to the records of every
 * queued job, would pay a page fault per page (20 ms a pass with 4,000 queued jobs). Returns
 * the pid, or -1 with errno. */
static pid_t spawn_self(
    struct tyd_dispatch *dp, char *const argv[], char *const envp[], const int *fds, size_t nfds)
{
    struct tyd *d = dp->d;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t all, block;
    int logfd, nullfd, r;
    pid_t pid = -1;

    logfd = open(d->log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, TY_STATE_FILE_MODE);
    nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    sigfillset(&all);
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    (void)posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    (void)posix_spawnattr_setsigdefault(&attr, &all);
    (void)posix_spawnattr_setsigmask(&attr, &block);
    if (nullfd >= 0)
        (void)posix_spawn_file_actions_adddup2(&fa, nullfd, 0);
    if (logfd >= 0) {
        (void)posix_spawn_file_actions_adddup2(&fa, logfd, 1);
        (void)posix_spawn_file_actions_adddup2(&fa, logfd, 2);
    }
    place_fds(&fa, fds, nfds);
    r = posix_spawn(&pid, dp->supervisor, &fa, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (logfd >= 0)
        close(logfd);
    if (nullfd >= 0)
        close(nullfd);
    if (r != 0) {
        errno = r;
        return -1;
    }
    return pid;
}

static void close_fds(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int tyd_dispatch_start(
    struct tyd_dispatch *dp, const struct ty_job_row *row, const char *grant, int *fds, size_t nfds)
{
    struct tyd *d = dp->d;
    _cleanup_strv_free_ char **envp = ty_strv_copy(environ);
    _cleanup_free_ char *grant_arg = grant ? xasprintf("--grant=%s", grant) : NULL;
    char seq[24], grace[24], runas[700];
    char *argv[8] = {(char *)"trainyard-supervisor", (char *)"supervise-job"};
    size_t argc = 2;
    pid_t pid;
    /* A process job of a project with a user runs as that user (--run-as, runas.c); one
     * that would now run as root without --allow-root-jobs (the settings changed since it
     * was accepted) fails instead of running. */
    int ra = tyd_runas_supervisor_arg(d, row->project, row->runtime, runas, sizeof(runas));

    if (ra < 0) {
        struct ty_error e = {0};
        close_fds(fds, nfds);
        tyd_log("job %s/%s: not started: %s", row->project, row->job_id, runas);
        tyd_job_log(d, row, ty_job_row_attempt(row), TY_SEV_ERROR, "%s", runas);
        if (ty_store_set_state(d->store, row->seq, TY_STATE_FAILED, ty_now_usec(), runas, &e) < 0)
            tyd_log("job %s/%s: %s", row->project, row->job_id, ty_error_msg(&e));
        return 1;
    }
    if (ra > 0)
        argv[argc++] = runas;
    if (grant_arg)
        argv[argc++] = grant_arg;
    argv[argc++] = d->state_dir;
    argv[argc++] = seq;
    argv[argc++] = grace;
    (void)snprintf(seq, sizeof(seq), "%lld", (long long)row->seq);
    (void)snprintf(grace, sizeof(grace), "%lld", (long long)d->grace_usec);
    ty_strv_setenv(&envp, TY_SWEEP_ENV, row->sweep_key ? row->sweep_key : "");
    pid = spawn_self(dp, argv, envp, fds, nfds);
    close_fds(fds, nfds); /* the supervisor has them now */
    if (pid < 0) {
        tyd_log("job %s/%s: cannot start its supervisor: %s",
                row->project,
                row->job_id,
                strerror(errno));
        return -1;
    }
    watch(dp, row->seq, pid, true, false);
    return 0;
}

/* Start a new supervisor for a job released after an internal error, whose sweep is over,
 * with the grant and the GPU devices it held (locked again: if another process took one
 * meanwhile, it waits for a later pass). */
static void start_retry(struct tyd_dispatch *dp, const struct ty_job_row *row)
{
    _cleanup_free_ int *fds = NULL;
    _cleanup_free_ char *grant = NULL;
    size_t nfds = 0;
    int r = tyd_admit_relock(dp->d, row, &fds, &nfds, &grant);

    if (r < 0) {
        tyd_log("job %s/%s: a GPU device it holds is %s: its new supervisor waits",
                row->project,
                row->job_id,
                r == -EWOULDBLOCK ? "held by another process" : strerror(-r));
        return;
    }
    tyd_log("job %s/%s: starting a new supervisor for attempt %lld (internal retry %lld)",
            row->project,
            row->job_id,
            (long long)ty_job_row_attempt(row),
            (long long)row->internal_retries);
    if (tyd_dispatch_start(dp, row, grant, fds, nfds) > 0) {
        struct ty_job_row failed = *row; /* it was failed: it holds nothing more */
        failed.state = TY_STATE_FAILED;
        tyd_admit_after(dp->d, &failed);
    }
}

/* Start a supervisor for every job released after an internal error whose sweep is over.
 * They keep what they were admitted with (the scheduler counts it as held); then settle the
 * jobs held with no supervisor to come (a retried job cancelled while it waited). */
static void start_retries(struct tyd_dispatch *dp)
{
    struct ty_job_row **rows = NULL;
    _cleanup_free_ int64_t *seqs = NULL;
    struct ty_error e = {0};
    size_t n = 0;

    /* Every job waiting for a new supervisor holds what it was admitted with: when every
     * held job has a supervisor, a sweep or a start to come, there is nothing to look for
     * (and the query, which reads every QUEUED row, is not made on each pass). */
    if (!tyd_admit_unsupervised(dp->d))
        return;
    if (ty_store_retry_jobs(dp->d->store, &rows, &n, &e) < 0) {
        tyd_log("dispatch: %s", ty_error_msg(&e));
        return;
    }
    seqs = xcalloc(n + 1, sizeof(*seqs));
    for (size_t i = 0; i < n; i++) {
        seqs[i] = rows[i]->seq;
        if (watching(dp, rows[i]->seq) || watching_kind(dp, rows[i]->seq, true))
            continue; /* started and not yet claimed, or its sweep is not over */
        start_retry(dp, rows[i]);
    }
    tyd_admit_settle(dp->d, seqs, n);
    ty_job_rows_free(rows, n);
}

static void on_hold_end(struct ty_loop *loop, void *data)
{
    struct tyd_dispatch *dp = data;
    dp->hold_timer = false;
    dispatch(dp);
}

static void dispatch(struct tyd_dispatch *dp)
{
    struct tyd *d = dp->d;

    if (atomic_load(&d->stopping))
        return;
    if (dp->nunrec)
        tyd_lost_record_pending(dp);
    if (ty_mono_usec() < dp->hold_until) {
        if (!dp->hold_timer) {
            dp->hold_timer = true;
            ty_loop_add_timer(dp->loop, dp->hold_until, on_hold_end, dp);
        }
        return;
    }
    start_retries(dp);
    tyd_admit_pass(d, dp, dp->loop);
}

static void on_kick(struct ty_loop *loop, int fd, short revents, void *data)
{
    uint64_t v;
    while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
        ;
    dispatch(data);
}

static void on_rescan(struct ty_loop *loop, void *data)
{
    struct tyd_dispatch *dp = data;

    dispatch(dp);
    /* glibc keeps the pages freed in each thread's arena (up to 16 of them on 2 cores, for
     * the HTTP threads): under a steady load the resident memory crept up ~1 KB per job run
     * while the live heap stayed flat (trainyard_heap_in_use_bytes; bench/load). Giving them
     * back once a minute took 12 to 18 ms of this loop under bench/load's 100 clients, each
     * arena locked in turn, not all at once. */
    if (++dp->rescans % TRIM_EVERY == 0)
        malloc_trim(0);
    ty_loop_add_timer(loop, ty_mono_usec() + RESCAN_USEC, on_rescan, dp);
}

void tyd_dispatch_signal(const struct ty_job_row *row, int sig)
{
    int fd = pidfd_open_((pid_t)row->shim_pid);
    if (fd < 0)
        return;
    if ((int64_t)ty_proc_start_time((pid_t)row->shim_pid) == row->shim_start)
        (void)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
    close(fd);
}

/* Start-up: account for every unfinished job left by an earlier trainyardd: what the claimed
 * ones hold and the queue of the others (admission.c), then the supervisors. Returns 0, or
 * -errno with @err when the store cannot list them (a damaged store: trainyardd does not
 * start, rather than serve with jobs nobody runs or watches). */
static int recover(struct tyd_dispatch *dp, struct ty_error *err)
{
    struct ty_job_row **rows = NULL;
    size_t n = 0, reattached = 0;
    int rc;

    if ((rc = ty_store_unfinished_jobs(dp->d->store, &rows, &n, err)) < 0)
        return ty_error_prefix(err, rc, "cannot recover the jobs of %s", dp->d->state_dir);
    for (size_t i = 0; i < n; i++)
        tyd_admit_recover(dp->d, rows[i]);
    for (size_t i = 0; i < n; i++) {
        struct ty_job_row *r = rows[i];
        if (r->shim_pid > 0) {
            if ((int64_t)ty_proc_start_time((pid_t)r->shim_pid) == r->shim_start) {
                watch(dp, r->seq, (pid_t)r->shim_pid, false, false);
                reattached++;
                /* A cancel recorded but maybe never signalled (the last trainyardd killed in
                 * between): signalled now. One that did arrive makes this a second cancel,
                 * which ends the replicas without the rest of their grace period: the job
                 * ends either way, never left running CANCELLING. */
                if (r->state == TY_STATE_CANCELLING)
                    tyd_dispatch_signal(r, SIGTERM);
            } else {
                supervisor_gone(
                    dp, r->seq, (pid_t)r->shim_pid, "ended while trainyardd was not running");
            }
        } else if (r->state == TY_STATE_CANCELLING) {
            (void)ty_store_set_state(dp->d->store,
                                     r->seq,
                                     TY_STATE_CANCELLED,
                                     ty_now_usec(),
                                     "Job cancelled by the user.",
                                     NULL);
        }
    }
    if (reattached)
        tyd_log("re-attached to %zu running job(s)", reattached);
    ty_job_rows_free(rows, n);
    malloc_trim(0); /* many rows were loaded once; give their memory back */
    return 0;
}

int tyd_dispatch_init(struct tyd *d, struct ty_loop *loop, struct ty_error *err)
{
    struct tyd_dispatch *dp = xcalloc(1, sizeof(*dp));

    /* Next to trainyardd (the build tree, build/bin), else where `meson install` puts it. */
    dp->supervisor =
        ty_sibling_program(NULL, "trainyard-supervisor", TY_PKGLIBEXECDIR "/trainyard-supervisor");
    if (access(dp->supervisor, X_OK) < 0) {
        int r = ty_error_set(err,
                             errno,
                             "cannot run %s (it supervises each job; looked for next to "
                             "trainyardd, then in " TY_PKGLIBEXECDIR "): %s",
                             dp->supervisor,
                             strerror(errno));
        free(dp->supervisor);
        free(dp);
        return r;
    }
    dp->d = d;
    dp->loop = loop;
    d->dispatch = dp;
    int r = recover(dp, err);
    if (r < 0)
        return r;
    ty_loop_add_fd(loop, d->kick_fd, POLLIN, on_kick, dp);
    ty_loop_add_timer(loop, ty_mono_usec() + RESCAN_USEC, on_rescan, dp);
    dispatch(dp);
    return 0;
}

void tyd_dispatch_free(struct tyd_dispatch *dp)
{
    if (!dp)
        return;
    /* Supervisors keep running on their own; only our watches end. Sweepers are waited for
     * SWEEPER_STOP_MS at most in all (sweep-slurm may wait up to 90 s for Slurm): one still
     * going finishes on its own, reaped by init once we are gone. */
    int64_t until = ty_mono_usec() + SWEEPER_STOP_MS * INT64_C(1000);
    while (dp->n) {
        struct shim *s = dp->shims[0];
        int64_t left_ms = (until - ty_mono_usec()) / 1000;
        if (s->child && s->sweeper &&
            poll(&(struct pollfd){.fd = s->pidfd, .events = POLLIN},
                 1,
                 left_ms > 0 ? (int)left_ms : 0) > 0)
            (void)waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &(siginfo_t){0}, WEXITED);
        remove_shim(dp, s);
    }
    free(dp->shims);
    free(dp->unrec);
    free(dp->supervisor);
    free(dp);
}
