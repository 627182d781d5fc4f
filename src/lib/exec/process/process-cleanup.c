/* SPDX-License-Identifier: Apache-2.0
 * process-cleanup.c: the process runtime's cleanup(): kill whatever of a run is left (replicas
 * not exited, their descendants, orphans carrying the run token, what is in the job's cgroup)
 * in rounds until nothing is, on the loop (each round waits on the pidfds of what is left,
 * with a timer: nothing blocks), then deliver what the pipes still hold and remove the
 * cgroups; and destroy()'s blocking version of the same. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"
#include "ports.h"
#include "process-int.h"
#include "proctree.h"
#include "timeutil.h"

/* How long the cleanup goes on killing what is left of a run (a process in uninterruptible
 * sleep dies only when the sleep ends), and how long one round waits for one of them to end
 * before it looks again (new children may appear that no pidfd watched). */
#define CLEANUP_KILL_USEC  (5 * INT64_C(1000000))
#define CLEANUP_ROUND_USEC (10 * INT64_C(1000))

/* One round of cleanup: kill everything in the job's cgroup, collect what is left of the run
 * (the replicas not exited, their descendants, orphans carrying the run token), reap what
 * has ended, SIGKILL the rest. Returns false when nothing is left (or the deadline has
 * passed), else true with the pids to wait for in *watch (caller frees; *n_watch of them,
 * maybe 0 when only the cgroup still has processes). */
static bool clean_round(struct process_rt *p, pid_t **watch, size_t *n_watch)
{
    bool cg_left = pj_kill_round(p);
    _cleanup_free_ pid_t *left = NULL;
    size_t n = ty_proctree_collect(p->roots, p->n_roots, p->token, &left);
    size_t nw = 0;
    pid_t *w = xcalloc(n + p->n_roots + 1, sizeof(pid_t));

    for (size_t i = 0; i < p->n_roots; i++) {
        if (p->roots[i] <= 0)
            continue;
        if (waitpid(p->roots[i], NULL, WNOHANG) == 0) {
            w[nw++] = p->roots[i];
        } else {
            ty_proctree_disown(p->roots[i]);
            p->roots[i] = 0; /* reaped: never looked at again (its pid may be reused) */
        }
    }
    (void)ty_proctree_reap_orphans();
    *n_watch = 0;
    if ((n == 0 && nw == 0 && !cg_left) || ty_mono_usec() >= p->clean_deadline) {
        free(w);
        *watch = NULL;
        return false;
    }
    ty_proctree_kill(left, n, SIGKILL);
    for (size_t i = 0; i < p->n_roots; i++)
        if (p->roots[i] > 0)
            (void)kill(-p->roots[i], SIGKILL);
    for (size_t i = 0; i < n; i++)
        w[nw++] = left[i];
    *watch = w;
    *n_watch = nw;
    return true;
}

/* Begin a cleanup: close the reservations, SIGKILL the group of every replica not yet exited
 * (they become the roots whose descendants are looked for) and its watchers: no `exited`
 * will be reported for it. */
static void clean_begin(struct process_rt *p)
{
    p->roots = xcalloc(p->n + 1, sizeof(pid_t));
    p->n_roots = 0;
    p->clean_deadline = ty_mono_usec() + CLEANUP_KILL_USEC;
    for (size_t i = 0; i < p->n; i++) {
        struct proc_replica *pr = &p->reps[i];
        ty_port_release(pr->reserve_fd);
        pr->reserve_fd = -1;
        if (pr->pid > 0 && !pr->exited) {
            p->roots[p->n_roots++] = pr->pid;
            (void)kill(-pr->pid, SIGKILL);
            pr->exited = true; /* owned until reaped (clean_round) */
        }
        if (pr->pidfd >= 0) {
            ty_loop_remove_fd(p->base.loop, pr->pidfd);
            close(pr->pidfd);
            pr->pidfd = -1;
        }
        if (pr->status_fd >= 0) {
            ty_loop_remove_fd(p->base.loop, pr->status_fd);
            close(pr->status_fd);
            pr->status_fd = -1;
        }
    }
}

/* Nothing is left: deliver what the pipes still hold, close them. The cleanup is over. */
static void clean_end(struct process_rt *p)
{
    for (size_t i = 0; i < p->n; i++) {
        struct proc_replica *pr = &p->reps[i];
        for (int *fdp = &pr->out_fd; fdp; fdp = fdp == &pr->out_fd ? &pr->err_fd : NULL) {
            pk_drain(pr, fdp, true);
            pk_close_pipe(pr, fdp);
        }
        ty_linesplit_release(&pr->out_ls);
        ty_linesplit_release(&pr->err_ls);
    }
    for (size_t i = 0; i < p->n_roots; i++) /* still alive at the deadline */
        if (p->roots[i] > 0)
            ty_proctree_disown(p->roots[i]);
    free(p->roots);
    p->roots = NULL;
    p->n_roots = 0;
    pj_finish(p); /* the cgroups, the guardian */
    p->cleaning = false;
    p->cleaned = true;
}

/* Stop watching the pidfds of the round in progress and its timer. */
static void clean_unwatch(struct process_rt *p)
{
    for (size_t i = 0; i < p->n_watch; i++) {
        ty_loop_remove_fd(p->base.loop, p->watch_fds[i]);
        close(p->watch_fds[i]);
    }
    free(p->watch_fds);
    p->watch_fds = NULL;
    p->n_watch = 0;
    ty_loop_cancel_timer(p->base.loop, p->clean_timer);
    p->clean_timer = 0;
}

static void on_clean_fd(struct ty_loop *loop, int fd, short revents, void *data);
static void on_clean_timer(struct ty_loop *loop, void *data);

/* Run rounds until something is left to wait for (then watch its pidfds on the loop, and a
 * timer: new children may appear that no pidfd watches) or nothing is. Returns true when
 * the cleanup is over. */
static bool clean_step(struct process_rt *p)
{
    _cleanup_free_ pid_t *watch = NULL;
    size_t n;

    clean_unwatch(p);
    if (!clean_round(p, &watch, &n)) {
        clean_end(p);
        return true;
    }
    p->watch_fds = xcalloc(n ? n : 1, sizeof(int));
    for (size_t i = 0; i < n; i++) {
        int fd = (int)syscall(SYS_pidfd_open, watch[i], 0);
        if (fd < 0)
            continue; /* gone already: the next round sees it */
        p->watch_fds[p->n_watch++] = fd;
        ty_loop_add_fd(p->base.loop, fd, POLLIN, on_clean_fd, p);
    }
    p->clean_timer =
        ty_loop_add_timer(p->base.loop, ty_mono_usec() + CLEANUP_ROUND_USEC, on_clean_timer, p);
    return false;
}

/* A round on the loop ended (a watched process ended, or the round's time passed). */
static void clean_next(struct process_rt *p)
{
    if (clean_step(p))
        ty_runtime_cleaned(&p->base); /* last: the run may be freed there */
}

static void on_clean_fd(struct ty_loop *loop, int fd, short revents, void *data)
{
    clean_next(data);
}

static void on_clean_timer(struct ty_loop *loop, void *data)
{
    struct process_rt *p = data;
    p->clean_timer = 0;
    clean_next(p);
}

int pk_cleanup(struct process_rt *p)
{
    if (p->cleaned || !p->reps)
        return 0;
    if (p->cleaning)
        return TY_RUNTIME_ASYNC;
    clean_begin(p);
    if (clean_step(p))
        return 0;
    p->cleaning = true;
    return TY_RUNTIME_ASYNC;
}

/* Wait until one of @pids (@n, any may be 0 or gone) ends, or @ms pass: poll on their
 * pidfds, so a process that dies at once ends the wait at once. For destroy only: it
 * blocks. */
static void wait_any_exit(const pid_t *pids, size_t n, int ms)
{
    _cleanup_free_ struct pollfd *fds = xcalloc(n ? n : 1, sizeof(*fds));
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        int fd = pids[i] > 0 ? (int)syscall(SYS_pidfd_open, pids[i], 0) : -1;
        if (fd >= 0)
            fds[k++] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    while (poll(k > 0 ? fds : NULL, k, ms) < 0 && errno == EINTR)
        ; /* none to watch (only the cgroup has processes): the round's time */
    for (size_t i = 0; i < k; i++)
        close(fds[i].fd);
}

void pk_clean_now(struct process_rt *p)
{
    if (p->cleaned)
        return;
    if (!p->cleaning)
        clean_begin(p);
    clean_unwatch(p);
    for (;;) {
        _cleanup_free_ pid_t *watch = NULL;
        size_t n;
        if (!clean_round(p, &watch, &n))
            break;
        wait_any_exit(watch, n, (int)(CLEANUP_ROUND_USEC / 1000));
    }
    clean_end(p);
}
