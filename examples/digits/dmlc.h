/* dmlc.h - digits example: wiring from MXNet's DMLC_* variables through a
 * rendezvous at the scheduler, as ps-lite does (protocol at the top of
 * dmlc.c). */
#ifndef DIGITS_DMLC_H
#define DIGITS_DMLC_H

#include "digits.h"

enum { DMLC_SCHEDULER, DMLC_WORKER, DMLC_SERVER };

struct dmlc {
    int role;       /* DMLC_SCHEDULER, DMLC_WORKER or DMLC_SERVER */
    int rank;       /* a worker's or a server's rank from the scheduler; 0 for it */
    int nworkers;   /* DMLC_NUM_WORKER (the scheduler is not one) */
    int nservers;   /* DMLC_NUM_SERVER */
    char **servers; /* the servers' "ip:port" by rank (nservers of them) */
    int listen_fd;  /* a server's listening socket (already bound), else -1 */
    char root[256]; /* DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT */
    char self[80];  /* the address a server registered; "" otherwise */
};

/* Whether DMLC_ROLE is set (not empty): digits then wires itself from the
 * DMLC_* variables alone and reads neither CLUSTER_SPEC nor TF_CONFIG. */
int dmlc_wanted(void);

/* Read the DMLC_* variables and do the rendezvous: the scheduler waits for
 * every worker and server and sends them their ranks; a worker or a server
 * registers and receives its rank and the servers' addresses. Returns 0, or
 * -1 after printing the error on stderr. *d is to be freed with dmlc_free
 * either way. */
int dmlc_setup(struct dmlc *d);

/* Free what dmlc_setup filled in (a server's listening socket is closed
 * unless the caller took it, setting listen_fd to -1). */
void dmlc_free(struct dmlc *d);

#endif
