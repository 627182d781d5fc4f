/* SPDX-License-Identifier: Apache-2.0
 * dispatch-internal.h: the dispatcher's state (dispatch.c) shared with the accounting for a
 * job whose supervisor was lost (dispatch-lost.c). */
#ifndef TYD_DISPATCH_INTERNAL_H
#define TYD_DISPATCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"

/* After a supervisor gave its job back because the state directory's filesystem was full or
 * failing, no supervisor starts for this long: each would meet the same full disk (a fork and
 * exec for nothing), and dispatch() must not spin on it. Then the job is tried again. */
#define HOLD_USEC (2 * INT64_C(1000000))

/* A supervisor's end whose consequence the store could not record yet (its filesystem was
 * full or failing): made again on every pass of dispatch() until it is, so no job is left
 * claimed by a supervisor that is gone. */
struct unrecorded {
    int64_t seq;
    pid_t pid;
    bool given_back; /* it exited TY_EXIT_UNCLAIMED: give its claim back */
    char how[96];
};

struct tyd_dispatch {
    struct tyd *d;
    char *supervisor; /* path of trainyard-supervisor */
    struct ty_loop *loop;
    struct shim **shims;
    size_t n;
    struct unrecorded *unrec;
    size_t nunrec;
    int64_t hold_until; /* monotonic: no supervisor starts before (the state dir was full) */
    bool hold_timer;    /* a timer for hold_until is armed */
    unsigned rescans;   /* periodic rescans so far */
};

/* Let the store decide what job @seq becomes now that its supervisor @pid (which @how: "was
 * killed by signal 9") is gone: ended as it was being cancelled, with the outcome it recorded,
 * run again (an internal retry: at most TYD_MAX_INTERNAL_RETRIES, none for a job with
 * scheduling.disableRetries), or FAILED; logged in the job's log and the daemon's. When the
 * store cannot write, remembered for tyd_lost_record_pending. Returns 0, or -1 when it is to be
 * tried again. */
int tyd_lost_account(struct tyd_dispatch *dp, int64_t seq, pid_t pid, const char *how);

/* Supervisor @pid of job @seq exited TY_EXIT_UNCLAIMED: the state directory's filesystem is full
 * or failing, and the job did not start. Give its claim back (it may have made one) with no
 * internal retry counted: the job waits in the queue, at its place, and no supervisor starts
 * for HOLD_USEC. A job cancelled meanwhile ends as the lost supervisor's would. Returns 0, or
 * -1 when the store could not write (tried again later). */
int tyd_lost_given_back(struct tyd_dispatch *dp, int64_t seq, pid_t pid);

/* Remember an end the store refused to record (its filesystem full or failing), to record it
 * on a later pass of dispatch() (tyd_lost_record_pending). */
void tyd_lost_unrecorded(
    struct tyd_dispatch *dp, int64_t seq, pid_t pid, bool given_back, const char *how);

/* Record the ends the store refused before. */
void tyd_lost_record_pending(struct tyd_dispatch *dp);

#endif
