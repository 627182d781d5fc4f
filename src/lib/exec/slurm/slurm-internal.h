/* SPDX-License-Identifier: Apache-2.0
 * slurm-internal.h: the slurm runtime's state, shared by slurm.c (the ops, the rendezvous
 * address), slurm-srun.c (the job: srun's allocation and tasks), slurm-state.c (the Slurm
 * job's state: squeue, sinfo), slurm-cancel.c (scancel at cleanup) and slurm-conn.c (the
 * launchers' connections). Every Slurm command runs as
 * an asynchronous subprocess on the runtime's loop (subproc.h); the design is in
 * docs/internals/slurm.md. */
#ifndef TY_SLURM_INTERNAL_H
#define TY_SLURM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime.h"
#include "subproc.h"
#include "taskproto.h"

/* How long the launchers have to connect once the Slurm job runs: srun starts the tasks in
 * seconds; a minute covers a slow node (container images are pulled after PLACED). */
#define TY_SLURM_CONNECT_USEC (60 * INT64_C(1000000))
/* How often the Slurm job's state is read: a PENDING reason or a job ended from outside is
 * noticed within a second, and squeue once a second is no load on slurmctld. */
#define TY_SLURM_POLL_USEC (INT64_C(1000000))
/* The deadline of one Slurm command (squeue, scancel, sinfo...; not srun, which lasts as long
 * as the job): slurmctld answers in
 * milliseconds, but its clients retry a busy or restarting controller for a while
 * (MessageTimeout is 10 s by default) before they give up. */
#define TY_SLURM_CMD_TIMEOUT_USEC (30 * INT64_C(1000000))

enum slurm_phase {
    PHASE_NEW,       /* before prepare */
    PHASE_SUBMITTED, /* prepare() went on on the loop: finding the rendezvous address,
                      * srun pending in Slurm, or launchers connecting */
    PHASE_PLACED,    /* every launcher holds its port: prepare() has ended */
    PHASE_ENDED,     /* cleanup began: no more launchers, polls or events of replicas */
};

/* A launcher's connection; bound to a replica once its HELLO is accepted. */
/* Is @st (squeue's %T) one of Slurm's final job states (squeue(1), "JOB STATE CODES"), after
 * which the job holds nothing? The states a job passes through and goes on from (PENDING,
 * CONFIGURING, RUNNING, SUSPENDED, SIGNALING while `scancel -s` delivers a signal, RESIZING,
 * STAGE_OUT, STOPPED, REQUEUED, COMPLETING...) are not. */
bool slurm_state_final(const char *st);

/* What --time adds to scheduling.maxRunningTime for the time between the allocation and
 * RUNNING (slurm-srun.c, add_scheduling). */
#define TY_SLURM_TIME_HEADROOM_SEC 300

struct slurm_conn {
    struct slurm_rt *s;
    int fd;
    struct ty_taskproto_reader rd;
    long rep;             /* the replica's index, -1 until HELLO */
    char why[256];        /* why a message was refused (the connection is then dropped) */
    bool busy;            /* its messages are being handled (see conn_free) */
    uint64_t hello_timer; /* until HELLO: a connection that says none is dropped */
    bool dead;            /* closed; freed once not busy */
};

struct slurm_rep {
    struct ty_replica *r;
    struct slurm_conn *conn; /* NULL until its launcher said HELLO */
    char node[64];           /* SLURMD_NODENAME of its task */
    bool placed, launched, started, exited;
    bool ever_started; /* its program ran once: its launcher's lines are its output */
    bool signalled;    /* the supervisor sent this run of it a signal */
    /* Its end (its launcher says Slurm ended the step) waits until the job's state says
     * whether Slurm ended the job (then every replica is lost, naming a failed node) or not
     * (then it is reported as it came). */
    bool exit_held;
    struct ty_exit_status held;
    bool lost_pending; /* launched without a launcher to run it: lost, from the loop */
};

/* The rendezvous address, found once per process (see slurm.c's rendezvous_cache). */
struct slurm_cancel; /* slurm-cancel.c */

struct slurm_rendezvous {
    char addr[64]; /* "" until found */
};

struct slurm_rt {
    struct ty_runtime base;
    struct slurm_rep *reps;
    size_t n;
    enum slurm_phase phase;
    /* rendezvous */
    int listen_fd;
    char listen_addr[80]; /* HOST:PORT the launchers connect to */
    char token[33];
    struct slurm_conn **conns; /* every open connection, bound or not */
    size_t n_conns;
    size_t n_placed;
    struct slurm_rendezvous *rendezvous; /* not owned */
    char rv_addr[64];                    /* this run's: the cache's, or being found */
    struct ty_subproc *prep_cmd;         /* scontrol, sinfo or getent of prepare() */
    /* A host name being resolved on the loop (getent) and what comes next (slurm.c). */
    char *resolving;
    void (*resolved)(struct slurm_rt *s, int r, struct ty_error *e);
    /* the Slurm job */
    struct ty_subproc *srun_cmd; /* srun, while it runs: it holds the allocation */
    bool srun_ended;             /* srun has exited */
    char srun_err[256];          /* the last line of its error output */
    bool submitting;             /* srun was started: the job may exist even without an id */
    char nonce[8];               /* random, in the job's name (slurm-srun.c) */
    char job_name[192];          /* its --job-name */
    char job_id[32];             /* "" until a launcher's HELLO or squeue says it */
    char state[32];              /* its last state seen: PENDING, RUNNING, ... */
    char reason[128];
    char nodes[256];
    int64_t running_since; /* mono usec when first seen RUNNING, 0 before */
    uint64_t poll_timer;
    struct ty_subproc *poll_cmd; /* squeue of the periodic poll */
    bool poll_soon;              /* read the state again as soon as the poll under way ends */
    bool poll_failing;           /* squeue failed at the last poll (said once) */
    /* whether Slurm ended the job, asked after an unexplained SIGTERM/SIGKILL */
    struct ty_subproc *check_cmd;
    uint64_t check_timer;
    int check_tries;
    struct ty_subproc *nodes_cmd; /* sinfo: which of the job's nodes failed */
    bool ending;                  /* the job ended under us: its replicas are being lost */
    bool prepared_sent;
    uint64_t lost_timer;         /* reports the replicas whose launch found no launcher */
    char **notices;              /* the launchers' notices already logged (once each) */
    double metric_newest;        /* the newest "timestamp" in the stored metric file (0: none) */
    struct slurm_cancel *cancel; /* cleanup's scancel and wait, while under way */
    bool cleaned;                /* the Slurm job is gone (or given up on): cleanup ended */
};

static inline struct slurm_rt *slurm_cast(struct ty_runtime *rt)
{
    return (struct slurm_rt *)rt;
}

/* slurm.c: end an asynchronous prepare() (once): 0, or -errno with @fmt. */
void slurm_prepared(struct slurm_rt *s, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* slurm.c: report replica @i's end @st (once per run of it, never after cleanup began). A
 * TY_EXIT_NODE_LOST also makes the process forget its rendezvous address (the retry that
 * follows finds it again: the route to the nodes may be what changed). */
void slurm_report_exit(struct slurm_rt *s, size_t i, const struct ty_exit_status *st);
/* slurm.c: replica @i is lost with its node (its launcher's connection dropped, Slurm ended
 * the job): report TY_EXIT_NODE_LOST with @detail (not before it was launched). */
void slurm_lost(struct slurm_rt *s, size_t i, const char *detail);

/* slurm-srun.c: listen on s->rv_addr and start srun, which asks for the job's allocation and
 * runs a launcher per replica in it; the job's state is then read every second. Returns 0, or
 * -errno with err (nothing started). */
int slurm_submit(struct slurm_rt *s, struct ty_error *err);
/* slurm-srun.c: the job's id @id (digits; from HELLO's SLURM_JOB_ID or squeue) is known: keep
 * it and say so, the first time. */
void slurm_job_known(struct slurm_rt *s, const char *id);

/* slurm-state.c: start reading the job's state every TY_SLURM_POLL_USEC (srun started). */
void slurm_start_polling(struct slurm_rt *s);
/* slurm-state.c: read the job's state now (srun ended: the job has, or is ending), not at the
 * next poll; after the poll under way, if one is. */
void slurm_poll_now(struct slurm_rt *s);
/* slurm-state.c: a launcher just spoke (HELLO, PLACED): the job runs now, as a poll would
 * say. Notes when it began running (the connect deadline counts from then) and moves the
 * next periodic poll to TY_SLURM_POLL_USEC from now, so that no squeue competes with the
 * launchers' start for the nodes' and this host's CPUs (a short job then runs no squeue at
 * all). The end of srun still reads the state at once (slurm_poll_now), and polls resume a
 * second after the launchers go quiet. */
void slurm_state_fresh(struct slurm_rt *s);
/* slurm-state.c: replica @i's launcher reports exit @st, TY_EXIT_NODE_LOST (Slurm ended its
 * step): hold it while the job's state is read (Slurm kills the tasks as it ends a job, and
 * the state may lag the signal a little). When the job has ended every replica is reported
 * lost, naming a failed node; otherwise @st is reported as it came. */
void slurm_hold_exit(struct slurm_rt *s, size_t i, const struct ty_exit_status *st);
/* slurm-state.c: stop every state command and timer (cleanup); held exits are dropped. */
void slurm_state_stop(struct slurm_rt *s);
/* slurm-cancel.c: when launchers ran (now told QUIT), wait a while for srun to end with them;
 * then, or at once, scancel the job (by id, or by name when its id is not known yet: srun,
 * killed first then, may have made it) and wait,
 * bounded, until Slurm has let it go, on the runtime's loop. Returns 0 when there is no job
 * (or scancel cannot start: then with a notice), or TY_RUNTIME_ASYNC with `cleaned` to follow
 * (s->cleaned is set then). Idempotent, as cleanup(). */
int slurm_cancel_job(struct slurm_rt *s);
/* slurm-cancel.c: srun has exited after cleanup began: a wait for the launchers' own end is
 * over, and the job's state is read until it is final (no scancel). */
void slurm_cancel_srun_ended(struct slurm_rt *s);
/* slurm-cancel.c: for destroy: finish the cancel under way on the runtime's loop, or do all
 * of it when none ran, on a private loop (blocking); no `cleaned`. */
void slurm_cancel_now(struct slurm_rt *s);
/* slurm-state.c: start Slurm command @argv (extra environment @env, may be NULL) on the
 * runtime's loop with TY_SLURM_CMD_TIMEOUT_USEC; see ty_subproc_start. */
int slurm_cmd_start(struct slurm_rt *s,
                    char *const argv[],
                    char *const env[],
                    ty_subproc_fn fn,
                    struct ty_subproc **ret,
                    struct ty_error *err);
/* slurm-state.c: 0 when the command @name that gave @res succeeded; else -EIO (a status,
 * with its stderr) or -ETIMEDOUT, with err saying so. */
int slurm_cmd_check(const struct ty_subproc_result *res, const char *name, struct ty_error *err);

/* slurm-conn.c: this host's address on the way to @host (a numeric address: names are
 * resolved on the loop first, see slurm.c's find_address): the local end of a UDP
 * "connection" to it (no packet is sent), numeric, into @out. */
int slurm_local_address(const char *host, char *out, size_t n, struct ty_error *err);
/* slurm-conn.c: listen on @local_addr (numeric), port chosen by the kernel. Returns 0 with
 * s->listen_fd and s->listen_addr (HOST:PORT) set. */
int slurm_listen(struct slurm_rt *s, const char *local_addr, struct ty_error *err);
/* slurm-conn.c: send START (the replica's environment) to replica @i's launcher: its first
 * run, or another after its EXIT (a restart in place: the launcher runs it again). Returns 0,
 * or -ENOTCONN/-EPIPE when the launcher is gone. */
int slurm_send_start(struct slurm_rt *s, size_t i, char *const env[], struct ty_error *err);
/* slurm-conn.c: send SIGNAL @sig to replica @i's launcher. */
int slurm_send_signal(struct slurm_rt *s, size_t i, int sig);
/* slurm-conn.c: QUIT to every launcher, then close every connection and the listener. */
void slurm_close_all(struct slurm_rt *s);

#endif
