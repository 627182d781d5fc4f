/* ps.c - digits example: the parameter server.  A single-threaded poll()
 * loop that owns one contiguous shard of the parameters, applies synchronous
 * SGD updates from the workers and answers (possibly deferred) pulls and
 * snapshot requests.  Protocol: see the top of net.c.  Never exits on its
 * own; SIGTERM/SIGINT make it exit 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "digits.h"

#define RBUF_SOFT_CAP (2u * FRAME_MAX)
#define MAX_SNAPSHOTS 1000

struct conn {
    int fd;
    unsigned char *rbuf, *wbuf;
    size_t rlen, rcap, wlen, woff, wcap;
    unsigned pending; /* 0, or OP_PULL / OP_SNAP waiting for pending_arg */
    uint32_t pending_arg;
    int64_t last_push;     /* step of this connection's last PUSH, -1 none */
    int peer_closed;       /* EOF seen: process what is buffered, then close */
    int close_after_flush; /* protocol error reported */
    int dead;
};

struct snapshot {
    uint32_t version;
    float *p;
};

struct ps {
    int index, nworkers;
    size_t off, len, ntotal;
    long steps, ckpt_every;
    double lr, momentum;
    float *param;
    double *acc, *vel; /* vel: the momentum buffer (zeros with plain SGD) */
    int npushed;
    uint32_t version;
    struct snapshot *snaps;
    size_t nsnaps;
    struct conn **conns;
    size_t nconns;
};

static void queue_bytes(struct conn *c, const void *p, size_t n)
{
    if (c->wlen + n > c->wcap) {
        while (c->wlen + n > c->wcap)
            c->wcap = c->wcap ? c->wcap * 2 : 4096;
        c->wbuf = xrealloc(c->wbuf, c->wcap, 1);
    }
    memcpy(c->wbuf + c->wlen, p, n);
    c->wlen += n;
}

static void queue_frame(
    struct conn *c, unsigned op, uint32_t arg, const float *f, size_t nfloats, const char *msg)
{
    size_t plen = f ? nfloats * 4 : (msg ? strlen(msg) : 0);
    unsigned char hdr[FRAME_HDR] = {0};
    put_u32be(hdr, (uint32_t)(8 + plen));
    hdr[4] = (unsigned char)op;
    put_u32be(hdr + 8, arg);
    queue_bytes(c, hdr, sizeof hdr);
    if (f) {
        if (c->wlen + plen > c->wcap) {
            while (c->wlen + plen > c->wcap)
                c->wcap *= 2;
            c->wbuf = xrealloc(c->wbuf, c->wcap, 1);
        }
        floats_to_wire(f, nfloats, c->wbuf + c->wlen);
        c->wlen += plen;
    } else if (plen) {
        queue_bytes(c, msg, plen);
    }
}

static void flush_conn(struct conn *c)
{
    while (!c->dead && c->woff < c->wlen) {
        ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                c->dead = 1;
            return;
        }
        c->woff += (size_t)n;
    }
    if (c->woff == c->wlen) {
        c->woff = c->wlen = 0;
        if (c->close_after_flush)
            c->dead = 1;
    }
}

static void protocol_error(struct ps *s, struct conn *c, const char *msg)
{
    fprintf(stderr, "digits: ps %d: rejecting client request: %s\n", s->index, msg);
    queue_frame(c, OP_ERROR, 0, NULL, 0, msg);
    c->close_after_flush = 1;
}

static int is_snapshot_version(const struct ps *s, uint32_t v)
{
    if (s->nworkers == 0 || v == 0 || v > (uint32_t)s->steps)
        return 0;
    return v == (uint32_t)s->steps || (s->ckpt_every > 0 && v % (uint32_t)s->ckpt_every == 0);
}

static struct snapshot *find_snapshot(struct ps *s, uint32_t v)
{
    for (size_t i = 0; i < s->nsnaps; i++)
        if (s->snaps[i].version == v)
            return &s->snaps[i];
    return NULL;
}

static void take_snapshot(struct ps *s)
{
    if (s->nsnaps == MAX_SNAPSHOTS) { /* nobody is collecting: drop the oldest */
        free(s->snaps[0].p);
        memmove(s->snaps, s->snaps + 1, (s->nsnaps - 1) * sizeof *s->snaps);
        s->nsnaps--;
    }
    s->snaps = xrealloc(s->snaps, s->nsnaps + 1, sizeof *s->snaps);
    struct snapshot *sn = &s->snaps[s->nsnaps++];
    sn->version = s->version;
    sn->p = xcalloc(s->len + 1, sizeof *sn->p);
    memcpy(sn->p, s->param, s->len * sizeof *sn->p);
}

static void reply_snapshot(struct ps *s, struct conn *c, struct snapshot *sn)
{
    queue_frame(c, OP_PARAMS, sn->version, sn->p, s->len, NULL);
    free(sn->p);
    size_t i = (size_t)(sn - s->snaps);
    memmove(s->snaps + i, s->snaps + i + 1, (s->nsnaps - i - 1) * sizeof *s->snaps);
    s->nsnaps--;
}

static void apply_update(struct ps *s)
{
    double scale = s->lr / (double)s->nworkers;
    for (size_t i = 0; i < s->len; i++) {
        if (s->momentum > 0.0) {
            s->vel[i] = s->momentum * s->vel[i] + s->acc[i] / (double)s->nworkers;
            s->param[i] -= (float)(s->lr * s->vel[i]);
        } else {
            s->param[i] -= (float)(scale * s->acc[i]);
        }
        s->acc[i] = 0.0;
    }
    s->npushed = 0;
    s->version++;
    if (is_snapshot_version(s, s->version))
        take_snapshot(s);
    if (s->version == (uint32_t)s->steps)
        printf("ps %d: reached final version %lu\n", s->index, (unsigned long)s->version);
}

static void
handle_push(struct ps *s, struct conn *c, uint32_t step, const unsigned char *pl, size_t plen)
{
    char msg[160];
    if (s->nworkers == 0)
        snprintf(msg, sizeof msg, "PUSH but the cluster has no workers");
    else if (plen != s->len * 4)
        snprintf(msg, sizeof msg, "PUSH of %zu bytes, shard has %zu parameters", plen, s->len);
    else if (step != s->version || step >= (uint32_t)s->steps)
        snprintf(msg,
                 sizeof msg,
                 "PUSH for step %lu but ps is at version %lu of %ld",
                 (unsigned long)step,
                 (unsigned long)s->version,
                 s->steps);
    else if (c->last_push == (int64_t)step)
        snprintf(msg, sizeof msg, "duplicate PUSH for step %lu", (unsigned long)step);
    else
        msg[0] = '\0';
    if (msg[0]) {
        protocol_error(s, c, msg);
        return;
    }
    for (size_t i = 0; i < s->len; i++) {
        uint32_t u = get_u32be(pl + 4 * i);
        float g;
        memcpy(&g, &u, 4);
        s->acc[i] += (double)g;
    }
    c->last_push = step;
    if (++s->npushed == s->nworkers)
        apply_update(s);
}

static void handle_frame(
    struct ps *s, struct conn *c, unsigned op, uint32_t arg, const unsigned char *pl, size_t plen)
{
    char msg[160];
    switch (op) {
    case OP_HELLO: {
        if (arg != (uint32_t)s->ntotal) {
            snprintf(msg,
                     sizeof msg,
                     "model has %zu parameters here but %lu at the client "
                     "(is --hidden the same for every replica?)",
                     s->ntotal,
                     (unsigned long)arg);
            protocol_error(s, c, msg);
            return;
        }
        unsigned char p[16];
        put_u32be(p, (uint32_t)s->off);
        put_u32be(p + 4, (uint32_t)s->len);
        put_u32be(p + 8, (uint32_t)s->nworkers);
        put_u32be(p + 12, (uint32_t)s->steps);
        unsigned char hdr[FRAME_HDR] = {0};
        put_u32be(hdr, 8 + sizeof p);
        hdr[4] = OP_HELLO_OK;
        put_u32be(hdr + 8, s->version);
        queue_bytes(c, hdr, sizeof hdr);
        queue_bytes(c, p, sizeof p);
        return;
    }
    case OP_PULL:
    case OP_SNAP:
        if (c->peer_closed)
            return; /* nobody to answer */
        if (op == OP_SNAP && !is_snapshot_version(s, arg)) {
            snprintf(msg, sizeof msg, "no snapshot is taken at version %lu", (unsigned long)arg);
            protocol_error(s, c, msg);
            return;
        }
        if (op == OP_SNAP && s->version > arg && !find_snapshot(s, arg)) {
            snprintf(msg, sizeof msg, "snapshot %lu was already collected", (unsigned long)arg);
            protocol_error(s, c, msg);
            return;
        }
        c->pending = op;
        c->pending_arg = arg;
        return;
    case OP_PUSH:
        handle_push(s, c, arg, pl, plen);
        return;
    default:
        snprintf(msg, sizeof msg, "unknown op 0x%02x", op);
        protocol_error(s, c, msg);
    }
}

/* Answers a satisfiable deferred request, then handles buffered frames until
 * one gets deferred.  Returns 1 if anything happened. */
static int service(struct ps *s, struct conn *c)
{
    int did = 0;
    for (;;) {
        if (c->dead || c->close_after_flush)
            return did;
        if (c->pending == OP_PULL && s->version >= c->pending_arg) {
            queue_frame(c, OP_PARAMS, s->version, s->param, s->len, NULL);
            c->pending = 0;
            did = 1;
        } else if (c->pending == OP_SNAP) {
            struct snapshot *sn = find_snapshot(s, c->pending_arg);
            if (!sn)
                return did;
            reply_snapshot(s, c, sn);
            c->pending = 0;
            did = 1;
        } else if (c->pending) {
            return did;
        }
        if (c->rlen < FRAME_HDR)
            return did;
        uint32_t len = get_u32be(c->rbuf);
        if (len < 8 || len > FRAME_MAX) {
            protocol_error(s, c, "bad frame length");
            return 1;
        }
        if (c->rlen < 4 + (size_t)len)
            return did;
        handle_frame(s, c, c->rbuf[4], get_u32be(c->rbuf + 8), c->rbuf + FRAME_HDR, len - 8);
        c->rlen -= 4 + (size_t)len;
        memmove(c->rbuf, c->rbuf + 4 + len, c->rlen);
        did = 1;
    }
}

static void read_conn(struct conn *c)
{
    for (;;) {
        if (c->rcap - c->rlen < 65536) {
            c->rcap = c->rcap ? c->rcap * 2 : 131072;
            c->rbuf = xrealloc(c->rbuf, c->rcap, 1);
        }
        ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
        if (n > 0) {
            c->rlen += (size_t)n;
            if (c->rlen > RBUF_SOFT_CAP)
                return;
            continue;
        }
        if (n == 0)
            c->peer_closed = 1;
        else if (errno == EINTR)
            continue;
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
            c->dead = 1;
        return;
    }
}

static void accept_all(struct ps *s, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                fprintf(stderr, "digits: ps %d: accept: %s\n", s->index, strerror(errno));
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = xcalloc(1, sizeof *c);
        c->fd = fd;
        c->last_push = -1;
        s->conns = xrealloc(s->conns, s->nconns + 1, sizeof *s->conns);
        s->conns[s->nconns++] = c;
    }
}

static void free_conn(struct conn *c)
{
    close(c->fd);
    free(c->rbuf);
    free(c->wbuf);
    free(c);
}

int run_ps(const struct options *o, const char *addr, int index, int nps, int nworkers)
{
    int lfd = net_listen(addr);
    if (lfd < 0)
        return 1;
    return run_ps_on(o, lfd, addr, index, nps, nworkers);
}

int run_ps_on(const struct options *o, int lfd, const char *addr, int index, int nps, int nworkers)
{
    struct ps s;
    memset(&s, 0, sizeof s);
    s.index = index;
    s.nworkers = nworkers;
    s.steps = o->steps;
    s.ckpt_every = o->ckpt_every;
    s.lr = o->lr;
    s.momentum = o->optimizer == OPT_MOMENTUM ? MOMENTUM : 0.0;
    s.ntotal = param_count((int)o->hidden);
    shard_range(s.ntotal, nps, index, &s.off, &s.len);
    float *full = xcalloc(s.ntotal, sizeof *full);
    params_init(full, (int)o->hidden, (uint64_t)o->seed);
    s.param = xcalloc(s.len + 1, sizeof *s.param);
    memcpy(s.param, full + s.off, s.len * sizeof *s.param);
    free(full);
    s.acc = xcalloc(s.len + 1, sizeof *s.acc);
    s.vel = xcalloc(s.len + 1, sizeof *s.vel);
    printf("ps %d: serving parameters [%zu, %zu) of %zu on %s for %d worker(s)\n",
           index,
           s.off,
           s.off + s.len,
           s.ntotal,
           addr,
           nworkers);
    if (nworkers == 0)
        printf("ps %d: no workers in the cluster; the master trains alone\n", index);

    /* SIGTERM/SIGINT stay blocked except inside ppoll(), so a signal can never
     * slip in between the g_stop check and the wait. */
    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    sigdelset(&waitmask, SIGTERM);
    sigdelset(&waitmask, SIGINT);
    struct pollfd *pfd = NULL;
    while (!g_stop) {
        pfd = xrealloc(pfd, s.nconns + 1, sizeof *pfd);
        pfd[0] = (struct pollfd){lfd, POLLIN, 0};
        for (size_t i = 0; i < s.nconns; i++) {
            struct conn *c = s.conns[i];
            short ev = 0;
            if (!c->peer_closed && !(c->pending && c->rlen > RBUF_SOFT_CAP))
                ev |= POLLIN;
            if (c->woff < c->wlen)
                ev |= POLLOUT;
            pfd[i + 1] = (struct pollfd){c->fd, ev, 0};
        }
        size_t npoll = s.nconns; /* conns accepted below are polled next round */
        if (ppoll(pfd, npoll + 1, NULL, &waitmask) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "digits: ps %d: poll: %s\n", index, strerror(errno));
            break;
        }
        for (size_t i = 0; i < npoll; i++) {
            struct conn *c = s.conns[i];
            short re = pfd[i + 1].revents;
            if (re & (POLLIN | POLLHUP | POLLERR))
                read_conn(c);
            if (re & POLLNVAL)
                c->dead = 1;
            if (re & POLLOUT)
                flush_conn(c);
        }
        if (pfd[0].revents & POLLIN)
            accept_all(&s, lfd);
        for (int changed = 1; changed;) {
            changed = 0;
            for (size_t i = 0; i < s.nconns; i++)
                changed |= service(&s, s.conns[i]);
        }
        size_t keep = 0;
        for (size_t i = 0; i < s.nconns; i++) {
            struct conn *c = s.conns[i];
            flush_conn(c);
            if (c->peer_closed &&
                (c->pending || c->rlen < FRAME_HDR || c->rlen < 4 + (size_t)get_u32be(c->rbuf)))
                c->dead = 1; /* everything it sent has been handled */
            if (c->dead)
                free_conn(c);
            else
                s.conns[keep++] = c;
        }
        s.nconns = keep;
    }
    printf("ps %d: terminating at version %lu\n", index, (unsigned long)s.version);
    for (size_t i = 0; i < s.nconns; i++)
        free_conn(s.conns[i]);
    for (size_t i = 0; i < s.nsnaps; i++)
        free(s.snaps[i].p);
    free(s.snaps);
    free(s.conns);
    free(pfd);
    free(s.param);
    free(s.acc);
    free(s.vel);
    close(lfd);
    return g_stop ? 0 : 1;
}
