/* SPDX-License-Identifier: Apache-2.0
 * loop.c: poll(2)-based event loop (see loop.h). Watchers live in a flat array that is
 * compacted after each dispatch round, so removal inside a callback is cheap and safe. */
#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "alloc.h"
#include "macro.h"
#include "timeutil.h"

struct watcher {
    int fd; /* -1 once removed */
    short events;
    ty_io_fn fn;
    void *data;
};

struct timer {
    uint64_t id; /* 0 once fired or cancelled */
    int64_t when;
    ty_timer_fn fn;
    void *data;
};

struct ty_loop {
    struct watcher *w;
    size_t nw, capw;
    struct timer *t;
    size_t nt, capt;
    uint64_t next_id;
    bool stop;
};

struct ty_loop *ty_loop_new(void)
{
    struct ty_loop *l = xcalloc(1, sizeof(*l));
    l->next_id = 1;
    return l;
}

void ty_loop_free(struct ty_loop *loop)
{
    if (!loop)
        return;
    free(loop->w);
    free(loop->t);
    free(loop);
}

int ty_loop_add_fd(struct ty_loop *loop, int fd, short events, ty_io_fn fn, void *data)
{
    for (size_t i = 0; i < loop->nw; i++) {
        if (loop->w[i].fd == fd) {
            loop->w[i] = (struct watcher){fd, events, fn, data};
            return 0;
        }
    }
    if (loop->nw == loop->capw) {
        loop->capw = loop->capw ? loop->capw * 2 : 16;
        loop->w = xreallocarray(loop->w, loop->capw, sizeof(*loop->w));
    }
    loop->w[loop->nw++] = (struct watcher){fd, events, fn, data};
    return 0;
}

void ty_loop_remove_fd(struct ty_loop *loop, int fd)
{
    for (size_t i = 0; i < loop->nw; i++)
        if (loop->w[i].fd == fd)
            loop->w[i].fd = -1;
}

uint64_t ty_loop_add_timer(struct ty_loop *loop, int64_t when_usec, ty_timer_fn fn, void *data)
{
    if (loop->nt == loop->capt) {
        loop->capt = loop->capt ? loop->capt * 2 : 8;
        loop->t = xreallocarray(loop->t, loop->capt, sizeof(*loop->t));
    }
    loop->t[loop->nt++] = (struct timer){loop->next_id, when_usec, fn, data};
    return loop->next_id++;
}

void ty_loop_cancel_timer(struct ty_loop *loop, uint64_t id)
{
    if (!id)
        return;
    for (size_t i = 0; i < loop->nt; i++)
        if (loop->t[i].id == id)
            loop->t[i].id = 0;
}

static void compact(struct ty_loop *loop)
{
    size_t j = 0;
    for (size_t i = 0; i < loop->nw; i++)
        if (loop->w[i].fd >= 0)
            loop->w[j++] = loop->w[i];
    loop->nw = j;
    j = 0;
    for (size_t i = 0; i < loop->nt; i++)
        if (loop->t[i].id)
            loop->t[j++] = loop->t[i];
    loop->nt = j;
}

static int next_timeout_ms(struct ty_loop *loop)
{
    int64_t now = ty_mono_usec(), best = -1;
    for (size_t i = 0; i < loop->nt; i++) {
        if (!loop->t[i].id)
            continue;
        int64_t d = loop->t[i].when - now;
        if (d < 0)
            d = 0;
        if (best < 0 || d < best)
            best = d;
    }
    if (best < 0)
        return -1;
    best = (best + 999) / 1000;
    return best > 60000 ? 60000 : (int)best;
}

static void fire_timers(struct ty_loop *loop)
{
    int64_t now = ty_mono_usec();
    /* Timers added by callbacks land past the current count and wait for the next round. */
    size_t n = loop->nt;
    /* Due timers fire in deadline order (ties: in the order they were added). */
    for (;;) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (loop->t[i].id && loop->t[i].when <= now &&
                (best == n || loop->t[i].when < loop->t[best].when))
                best = i;
        if (best == n)
            break;
        struct timer t = loop->t[best];
        loop->t[best].id = 0;
        t.fn(loop, t.data);
    }
}

int ty_loop_run_once(struct ty_loop *loop)
{
    _cleanup_free_ struct pollfd *pfd = NULL;
    _cleanup_free_ struct watcher *snap = NULL;
    size_t n;
    int r;

    compact(loop);
    n = loop->nw;
    pfd = xcalloc(n ? n : 1, sizeof(*pfd));
    snap = xcalloc(n ? n : 1, sizeof(*snap));
    for (size_t i = 0; i < n; i++) {
        snap[i] = loop->w[i];
        pfd[i] = (struct pollfd){.fd = loop->w[i].fd, .events = loop->w[i].events};
    }
    r = poll(pfd, n, next_timeout_ms(loop));
    if (r < 0 && errno != EINTR)
        return ty_negerrno();
    for (size_t i = 0; r > 0 && i < n; i++) {
        if (!pfd[i].revents)
            continue;
        /* Skip watchers removed or replaced by an earlier callback of this round. */
        bool live = false;
        for (size_t k = 0; k < loop->nw; k++)
            if (loop->w[k].fd == snap[i].fd && loop->w[k].fn == snap[i].fn &&
                loop->w[k].data == snap[i].data)
                live = true;
        if (live)
            snap[i].fn(loop, snap[i].fd, pfd[i].revents, snap[i].data);
    }
    fire_timers(loop);
    compact(loop);
    return 0;
}

int ty_loop_run(struct ty_loop *loop)
{
    loop->stop = false;
    while (!loop->stop) {
        int r = ty_loop_run_once(loop);
        if (r < 0)
            return r;
    }
    return 0;
}

void ty_loop_stop(struct ty_loop *loop)
{
    loop->stop = true;
}
