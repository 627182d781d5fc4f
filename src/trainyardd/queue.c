/* SPDX-License-Identifier: Apache-2.0
 * queue.c: the service's queue in memory: the sequence numbers of jobs that are QUEUED and
 * not yet handed to a supervisor, in creation order. It answers jobPosition in O(log n)
 * (counting rows in the store for every job shown made a page of 10,000 queued jobs cost
 * 50 ms). Request threads add created jobs and remove cancelled ones; the dispatcher removes
 * the jobs it starts. A removal that overtakes its addition (the dispatcher started a job
 * before the creating thread recorded it) leaves a tombstone that cancels the addition. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "daemon.h"

/* Removals waiting for their addition. One lives only between the dispatcher starting a job
 * and its creating thread recording it (microseconds), so a handful exist at once; 1024
 * bounds the memory if additions were somehow lost. */
#define MAX_TOMBSTONES 1024
/* First size of the array of seqs; it doubles as needed. */
#define INITIAL_CAP 256

struct tyd_queue {
    pthread_mutex_t lock;
    int64_t *seqs; /* ascending */
    size_t n, cap;
    int64_t tomb[MAX_TOMBSTONES];
    size_t ntomb;
};

struct tyd_queue *tyd_queue_new(void)
{
    struct tyd_queue *q = xcalloc(1, sizeof(*q));
    pthread_mutex_init(&q->lock, NULL);
    return q;
}

void tyd_queue_free(struct tyd_queue *q)
{
    if (!q)
        return;
    pthread_mutex_destroy(&q->lock);
    free(q->seqs);
    free(q);
}

/* Index of the first element >= @seq. */
static size_t lower_bound(const struct tyd_queue *q, int64_t seq)
{
    size_t lo = 0, hi = q->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (q->seqs[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void tyd_queue_add(struct tyd_queue *q, int64_t seq)
{
    size_t i;

    pthread_mutex_lock(&q->lock);
    for (i = 0; i < q->ntomb; i++) {
        if (q->tomb[i] == seq) {
            q->tomb[i] = q->tomb[--q->ntomb];
            pthread_mutex_unlock(&q->lock);
            return;
        }
    }
    i = lower_bound(q, seq);
    if (i == q->n || q->seqs[i] != seq) {
        if (q->n == q->cap) {
            q->cap = q->cap ? q->cap * 2 : INITIAL_CAP;
            q->seqs = xreallocarray(q->seqs, q->cap, sizeof(*q->seqs));
        }
        memmove(q->seqs + i + 1, q->seqs + i, (q->n - i) * sizeof(*q->seqs));
        q->seqs[i] = seq;
        q->n++;
    }
    pthread_mutex_unlock(&q->lock);
}

void tyd_queue_remove(struct tyd_queue *q, int64_t seq)
{
    size_t i;

    pthread_mutex_lock(&q->lock);
    i = lower_bound(q, seq);
    if (i < q->n && q->seqs[i] == seq) {
        memmove(q->seqs + i, q->seqs + i + 1, (q->n - i - 1) * sizeof(*q->seqs));
        q->n--;
    } else {
        if (q->ntomb == MAX_TOMBSTONES) /* forget the oldest: bounded memory */
            memmove(q->tomb, q->tomb + 1, (--q->ntomb) * sizeof(*q->tomb));
        q->tomb[q->ntomb++] = seq;
    }
    pthread_mutex_unlock(&q->lock);
}

int64_t tyd_queue_position(struct tyd_queue *q, int64_t seq)
{
    int64_t pos = 0;
    size_t i;

    pthread_mutex_lock(&q->lock);
    i = lower_bound(q, seq);
    if (i < q->n && q->seqs[i] == seq)
        pos = (int64_t)i + 1;
    pthread_mutex_unlock(&q->lock);
    return pos;
}
