/* SPDX-License-Identifier: Apache-2.0
 * live-out.c: `local train`'s live output, written by a thread of its own (live-out.h). */
#include "live-out.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "fdutil.h"

struct live_out {
    int fd;
    pthread_t thread;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t more;  /* lines were queued, or the end */
    struct ty_buf queue;  /* what waits to be written */
    size_t dropped;       /* lines left out since the last notice */
    bool ending;
    bool broken; /* a write failed (the reader is gone): the rest is dropped */
};

static void *writer_main(void *arg)
{
    struct live_out *lo = arg;
    struct ty_buf chunk = TY_BUF_INIT;

    pthread_mutex_lock(&lo->lock);
    for (;;) {
        while (lo->queue.len == 0 && !lo->ending)
            pthread_cond_wait(&lo->more, &lo->lock);
        if (lo->queue.len == 0)
            break;
        /* take it all: the lock is not held while the reader makes the write wait */
        ty_buf_reset(&chunk);
        ty_buf_append(&chunk, lo->queue.data, lo->queue.len);
        ty_buf_reset(&lo->queue);
        pthread_mutex_unlock(&lo->lock);
        bool ok = ty_write_all(lo->fd, chunk.data, chunk.len) >= 0;
        pthread_mutex_lock(&lo->lock);
        if (!ok) {
            lo->broken = true;
            ty_buf_reset(&lo->queue);
        }
    }
    pthread_mutex_unlock(&lo->lock);
    ty_buf_release(&chunk);
    return NULL;
}

/* Say how many lines were left out (the lock held). */
static void note_dropped(struct live_out *lo)
{
    ty_buf_printf(&lo->queue,
                  "[trainyard: %zu line%s not shown here: the output was not being read; every "
                  "line is in the job's log files]\n",
                  lo->dropped,
                  lo->dropped == 1 ? "" : "s");
    lo->dropped = 0;
}

struct live_out *live_out_start(int fd)
{
    struct live_out *lo = xcalloc(1, sizeof(*lo));

    lo->fd = fd;
    pthread_mutex_init(&lo->lock, NULL);
    pthread_cond_init(&lo->more, NULL);
    /* the thread takes no signal: their handlers run where the run expects them */
    sigset_t all, was;
    (void)sigfillset(&all);
    (void)pthread_sigmask(SIG_SETMASK, &all, &was);
    int r = pthread_create(&lo->thread, NULL, writer_main, lo);
    (void)pthread_sigmask(SIG_SETMASK, &was, NULL);
    if (r != 0) {
        pthread_cond_destroy(&lo->more);
        pthread_mutex_destroy(&lo->lock);
        free(lo);
        return NULL;
    }
    return lo;
}

void live_out_line(struct live_out *lo, const char *line, size_t n)
{
    if (!lo) {
        (void)fwrite(line, 1, n, stdout);
        return;
    }
    pthread_mutex_lock(&lo->lock);
    if (lo->broken) {
        /* nobody reads it any more */
    } else if (lo->queue.len + n > LIVE_OUT_MAX) {
        lo->dropped++;
    } else {
        if (lo->dropped && lo->queue.len < LIVE_OUT_MAX / 2)
            note_dropped(lo);
        ty_buf_append(&lo->queue, line, n);
        pthread_cond_signal(&lo->more);
    }
    pthread_mutex_unlock(&lo->lock);
}

void live_out_end(struct live_out *lo)
{
    if (!lo)
        return;
    pthread_mutex_lock(&lo->lock);
    if (lo->dropped && !lo->broken)
        note_dropped(lo);
    lo->ending = true;
    pthread_cond_signal(&lo->more);
    pthread_mutex_unlock(&lo->lock);
    (void)pthread_join(lo->thread, NULL);
    ty_buf_release(&lo->queue);
    pthread_cond_destroy(&lo->more);
    pthread_mutex_destroy(&lo->lock);
    free(lo);
}
