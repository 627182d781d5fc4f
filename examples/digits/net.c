/* net.c - digits example: the wire protocol, TCP listen/connect with retry
 * and exponential backoff, and the client side used by workers and the master
 * to talk to every parameter server.
 *
 * Wire protocol (TCP, all integers big-endian / network byte order):
 *
 *   frame   = u32 len | u8 op | u8 pad[3] (zero) | u32 arg | payload
 *             len counts the bytes after itself (8 + payload), at most 64 MiB.
 *   floats  = IEEE-754 binary32, sent as the u32 of their bit pattern.
 *
 *   client -> ps
 *     HELLO 0x01  arg = total parameter count N        payload: none
 *     PULL  0x02  arg = minimum version v              payload: none
 *     PUSH  0x03  arg = step s (must equal the version) payload: gradient shard
 *     SNAP  0x04  arg = snapshot version v             payload: none
 *   ps -> client
 *     HELLO_OK 0x81  arg = current version   payload: u32 off, len, W, steps
 *     PARAMS   0x82  arg = version           payload: the shard's floats
 *     ERROR    0xff  arg = 0                 payload: UTF-8 message; the ps
 *                                            then closes the connection.
 *
 * ps i of P owns parameters [N*i/P, N*(i+1)/P) of the flattened vector.
 * Synchronous SGD: version v means v updates applied.  PUSH(s) is accepted
 * only when s == version; after W pushes for s the ps applies
 * p -= lr * mean(grads) and the version becomes s+1.  PULL(v) is answered
 * (possibly later) once version >= v.  PUSH has no reply.  Replies are sent
 * in request order; a connection with a deferred request is not read further.
 * When the version reaches a multiple of --checkpoint-every, or --steps, the
 * ps keeps a copy; SNAP(v) returns (once available) and frees that copy so
 * the master gets a consistent snapshot across all shards. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "digits.h"

#define CONNECT_GIVE_UP_S  60.0
#define CONNECT_ATTEMPT_MS 2000

static char g_net_err[512];

const char *net_error(void)
{
    return g_net_err;
}

void put_u32be(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

uint32_t get_u32be(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

void floats_to_wire(const float *f, size_t n, unsigned char *out)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &f[i], 4);
        put_u32be(out + 4 * i, u);
    }
}

void wire_to_floats(const unsigned char *in, size_t n, float *f)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = get_u32be(in + 4 * i);
        memcpy(&f[i], &u, 4);
    }
}

int split_hostport(const char *addr, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *h = addr, *hend, *p;
    if (addr[0] == '[') {
        h = addr + 1;
        hend = strchr(h, ']');
        if (!hend || hend[1] != ':')
            return -1;
        p = hend + 2;
    } else {
        hend = strrchr(addr, ':');
        if (!hend)
            return -1;
        p = hend + 1;
    }
    size_t hl = (size_t)(hend - h), pl = strlen(p);
    if (hl == 0 || hl >= hcap || pl == 0 || pl >= pcap || strspn(p, "0123456789") != pl)
        return -1;
    char *end;
    long v = strtol(p, &end, 10);
    if (*end || v < 1 || v > 65535)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    memcpy(port, p, pl + 1);
    return 0;
}

static int set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int net_listen(const char *addr)
{
    char host[256], port[16];
    if (split_hostport(addr, host, sizeof host, port, sizeof port) != 0) {
        fprintf(stderr, "digits: bad listen address '%s' (want host:port)\n", addr);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "digits: socket: %s\n", strerror(errno));
        return -1;
    }
    int one = 1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    sa.sin_port = htons((uint16_t)strtol(port, NULL, 10));
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0 ||
        set_nonblock(fd, 1) != 0) {
        fprintf(stderr, "digits: cannot listen on 0.0.0.0:%s: %s\n", port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* One attempt over every resolved address; -1 with g_net_err set on failure. */
static int connect_once(const char *host, const char *port)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(g_net_err, sizeof g_net_err, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            snprintf(g_net_err, sizeof g_net_err, "socket: %s", strerror(errno));
            continue;
        }
        int err = 0;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                struct pollfd pfd = {fd, POLLOUT, 0};
                int n = poll(&pfd, 1, CONNECT_ATTEMPT_MS);
                socklen_t el = sizeof err;
                if (n <= 0)
                    err = n == 0 ? ETIMEDOUT : errno;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
                    err = errno;
            }
        }
        int one = 1;
        if (err == 0 && (set_nonblock(fd, 0) != 0 ||
                         setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0))
            err = errno;
        if (err != 0) {
            snprintf(g_net_err, sizeof g_net_err, "%s", strerror(err));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

int net_connect_retry(const char *what, const char *addr)
{
    char host[256], port[16];
    if (split_hostport(addr, host, sizeof host, port, sizeof port) != 0) {
        fprintf(stderr, "digits: bad address '%s' for %s (want host:port)\n", addr, what);
        return -1;
    }
    double start = mono_now();
    long delay = 50;
    int warned = 0;
    for (;;) {
        int fd = connect_once(host, port);
        if (fd >= 0)
            return fd;
        if (mono_now() - start > CONNECT_GIVE_UP_S) {
            fprintf(stderr,
                    "digits: could not connect to %s at %s within %.0f s: %s\n",
                    what,
                    addr,
                    CONNECT_GIVE_UP_S,
                    g_net_err);
            return -1;
        }
        if (!warned) {
            fprintf(stderr, "digits: waiting for %s at %s (%s); retrying\n", what, addr, g_net_err);
            warned = 1;
        }
        sleep_ms(delay);
        delay = delay * 2 > 1000 ? 1000 : delay * 2;
    }
}

int net_send_frame(int fd, unsigned op, uint32_t arg, const void *payload, size_t plen)
{
    unsigned char hdr[FRAME_HDR] = {0};
    put_u32be(hdr, (uint32_t)(8 + plen));
    hdr[4] = (unsigned char)op;
    put_u32be(hdr + 8, arg);
    struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)(uintptr_t)payload, plen}};
    int iovcnt = plen ? 2 : 1, i = 0;
    while (i < iovcnt) {
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = iov + i;
        mh.msg_iovlen = (size_t)(iovcnt - i);
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(g_net_err, sizeof g_net_err, "send failed: %s", strerror(errno));
            return -1;
        }
        size_t left = (size_t)n;
        while (i < iovcnt && left >= iov[i].iov_len)
            left -= iov[i++].iov_len;
        if (i < iovcnt) {
            iov[i].iov_base = (char *)iov[i].iov_base + left;
            iov[i].iov_len -= left;
        }
    }
    return 0;
}

static int recv_all(int fd, unsigned char *p, size_t len, int timeout_ms)
{
    while (len > 0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(g_net_err,
                     sizeof g_net_err,
                     "%s",
                     r == 0 ? "no reply (timed out)" : strerror(errno));
            return -1;
        }
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(g_net_err,
                     sizeof g_net_err,
                     "%s",
                     n == 0 ? "connection closed by peer" : strerror(errno));
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int net_recv_frame(int fd, int timeout_ms, unsigned *op, uint32_t *arg, struct buf *b, size_t *plen)
{
    unsigned char hdr[FRAME_HDR];
    if (recv_all(fd, hdr, sizeof hdr, timeout_ms) != 0)
        return -1;
    uint32_t len = get_u32be(hdr);
    if (len < 8 || len > FRAME_MAX) {
        snprintf(g_net_err, sizeof g_net_err, "bad frame length %lu", (unsigned long)len);
        return -1;
    }
    *op = hdr[4];
    *arg = get_u32be(hdr + 8);
    *plen = len - 8;
    if (*plen + 1 > b->cap) {
        b->cap = *plen + 1;
        b->p = xrealloc(b->p, b->cap, 1);
    }
    if (recv_all(fd, b->p, *plen, timeout_ms) != 0)
        return -1;
    b->p[*plen] = '\0'; /* lets ERROR payloads be printed as strings */
    return 0;
}

/* ------------------------------------------------------------ ps client */

/* Receives one reply from ps i; an ERROR frame or an unexpected op fails. */
static int psc_recv(struct ps_client *c, int i, unsigned want, uint32_t *arg, size_t *plen)
{
    unsigned op;
    if (net_recv_frame(c->fd[i], IO_TIMEOUT_MS, &op, arg, &c->rx, plen) != 0) {
        fprintf(stderr, "digits: ps %d (%s): %s\n", i, c->addr[i], net_error());
        return -1;
    }
    if (op == OP_ERROR) {
        fprintf(stderr,
                "digits: ps %d (%s) reported an error: %s\n",
                i,
                c->addr[i],
                (const char *)c->rx.p);
        return -1;
    }
    if (op != want) {
        fprintf(stderr, "digits: ps %d (%s): unexpected reply op 0x%02x\n", i, c->addr[i], op);
        return -1;
    }
    return 0;
}

int psc_open(struct ps_client *c, const char *const *addrs, int n, size_t ntotal, uint32_t *version)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->addr = addrs;
    c->ntotal = ntotal;
    c->fd = xcalloc((size_t)n, sizeof *c->fd);
    c->off = xcalloc((size_t)n, sizeof *c->off);
    c->len = xcalloc((size_t)n, sizeof *c->len);
    c->wire = xcalloc(ntotal * 4 + 1, 1);
    for (int i = 0; i < n; i++)
        c->fd[i] = -1;
    *version = 0;
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "ps %d", i);
        shard_range(ntotal, n, i, &c->off[i], &c->len[i]);
        c->fd[i] = net_connect_retry(what, addrs[i]);
        if (c->fd[i] < 0)
            return -1;
        uint32_t v;
        size_t plen;
        if (net_send_frame(c->fd[i], OP_HELLO, (uint32_t)ntotal, NULL, 0) != 0) {
            fprintf(stderr, "digits: ps %d (%s): %s\n", i, addrs[i], net_error());
            return -1;
        }
        if (psc_recv(c, i, OP_HELLO_OK, &v, &plen) != 0)
            return -1;
        if (plen < 8 || get_u32be(c->rx.p) != c->off[i] || get_u32be(c->rx.p + 4) != c->len[i]) {
            fprintf(stderr,
                    "digits: ps %d (%s) serves a different shard than expected "
                    "(is the ps list the same for every replica?)\n",
                    i,
                    addrs[i]);
            return -1;
        }
        if (i == 0 || v < *version)
            *version = v;
    }
    return 0;
}

/* Sends op (PULL or SNAP) with arg v to every ps and assembles the replies
 * into params; all shards must report the same version. */
int psc_fetch(struct ps_client *c, unsigned op, uint32_t v, float *params, uint32_t *version)
{
    for (int i = 0; i < c->n; i++) {
        if (net_send_frame(c->fd[i], op, v, NULL, 0) != 0) {
            fprintf(stderr, "digits: ps %d (%s): %s\n", i, c->addr[i], net_error());
            return -1;
        }
    }
    for (int i = 0; i < c->n; i++) {
        uint32_t got;
        size_t plen;
        if (psc_recv(c, i, OP_PARAMS, &got, &plen) != 0)
            return -1;
        if (plen != c->len[i] * 4) {
            fprintf(stderr,
                    "digits: ps %d (%s): shard of %zu bytes, expected %zu\n",
                    i,
                    c->addr[i],
                    plen,
                    c->len[i] * 4);
            return -1;
        }
        if (i > 0 && got != *version) {
            fprintf(stderr,
                    "digits: ps %d (%s) is at version %lu but ps 0 at %lu; "
                    "inconsistent parameter servers\n",
                    i,
                    c->addr[i],
                    (unsigned long)got,
                    (unsigned long)*version);
            return -1;
        }
        *version = got;
        wire_to_floats(c->rx.p, c->len[i], params + c->off[i]);
    }
    return 0;
}

int psc_push(struct ps_client *c, uint32_t step, const float *grad)
{
    for (int i = 0; i < c->n; i++) {
        floats_to_wire(grad + c->off[i], c->len[i], c->wire);
        if (net_send_frame(c->fd[i], OP_PUSH, step, c->wire, c->len[i] * 4) != 0) {
            fprintf(stderr, "digits: ps %d (%s): %s\n", i, c->addr[i], net_error());
            return -1;
        }
    }
    return 0;
}

void psc_close(struct ps_client *c)
{
    for (int i = 0; c->fd && i < c->n; i++)
        if (c->fd[i] >= 0)
            close(c->fd[i]);
    free(c->fd);
    free(c->off);
    free(c->len);
    free(c->wire);
    free(c->rx.p);
    memset(c, 0, sizeof *c);
}
