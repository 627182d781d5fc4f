/* SPDX-License-Identifier: Apache-2.0
 * slurm-internal.h: the slurm runtime's state, shared by slurm.c (the Slurm side: sbatch,
 * squeue, scancel, the ops) and slurm-conn.c (the launchers' connections). The design is in
 * docs/internals/slurm.md. */
#ifndef TY_SLURM_INTERNAL_H
#define TY_SLURM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime.h"
#include "taskproto.h"

/* How long the launchers have to connect once the Slurm job runs. */
#define TY_SLURM_CONNECT_USEC (60 * INT64_C(1000000))
/* How often the Slurm job's state is read. */
#define TY_SLURM_POLL_USEC (INT64_C(1000000))

enum slurm_phase {
    PHASE_NEW,       /* before prepare */
    PHASE_SUBMITTED, /* sbatch done: pending in Slurm, or launchers connecting */
    PHASE_PLACED,    /* every launcher holds its port: prepare() has ended */
    PHASE_ENDED,     /* cleanup done */
};

/* A launcher's connection; bound to a replica once its HELLO is accepted. */
struct slurm_conn {
    struct slurm_rt *s;
    int fd;
    struct ty_taskproto_reader rd;
    long rep;      /* the replica's index, -1 until HELLO */
    char why[256]; /* why a message was refused (the connection is then dropped) */
    bool busy;     /* its messages are being handled (see conn_free) */
    bool dead;     /* closed; freed once not busy */
};

struct slurm_rep {
    struct ty_replica *r;
    struct slurm_conn *conn; /* NULL until its launcher said HELLO */
    char node[64];           /* SLURMD_NODENAME of its task */
    bool placed, launched, started, exited;
    bool signalled; /* the supervisor sent it a signal */
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
    /* the Slurm job */
    char job_id[32]; /* "" before sbatch */
    char state[32];  /* its last state seen: PENDING, RUNNING, ... */
    char reason[128];
    char nodes[256];
    int64_t running_since; /* mono usec when first seen RUNNING, 0 before */
    uint64_t poll_timer;
    bool poll_failing; /* squeue failed at the last poll (said once) */
    bool prepared_sent;
    char **notices; /* the launchers' notices already logged (once each) */
};

static inline struct slurm_rt *slurm_cast(struct ty_runtime *rt)
{
    return (struct slurm_rt *)rt;
}

/* slurm.c: end an asynchronous prepare() (once): 0, or -errno with @fmt. */
void slurm_prepared(struct slurm_rt *s, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* slurm.c: read the Slurm job's state now; when it has ended (or is ending), every replica
 * is reported lost with the reason (naming a failed node) and true is returned. */
bool slurm_check_ended(struct slurm_rt *s);
/* slurm.c: replica @i is lost (its connection dropped, its node failed): report its exit. */
void slurm_lost(struct slurm_rt *s, size_t i, const char *detail);

/* slurm-conn.c: this host's address on the way to @host (a name or address): the local end
 * of a UDP "connection" to it (no packet is sent), numeric, into @out. */
int slurm_local_address(const char *host, char *out, size_t n, struct ty_error *err);
/* slurm-conn.c: listen on @local_addr (numeric), port chosen by the kernel. Returns 0 with
 * s->listen_fd and s->listen_addr (HOST:PORT) set. */
int slurm_listen(struct slurm_rt *s, const char *local_addr, struct ty_error *err);
/* slurm-conn.c: send START (the replica's environment) to replica @i's launcher. */
int slurm_send_start(struct slurm_rt *s, size_t i, char *const env[], struct ty_error *err);
/* slurm-conn.c: send SIGNAL @sig to replica @i's launcher. */
int slurm_send_signal(struct slurm_rt *s, size_t i, int sig);
/* slurm-conn.c: QUIT to every launcher, then close every connection and the listener. */
void slurm_close_all(struct slurm_rt *s);

#endif
