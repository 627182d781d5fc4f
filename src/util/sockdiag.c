/* SPDX-License-Identifier: Apache-2.0
 * sockdiag.c: the owner of a connection's client socket on this host (sockdiag.h), by one
 * SOCK_DIAG_BY_FAMILY request for that exact socket (not a dump of every socket). */
#include "sockdiag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "macro.h"

/* An address and port as sock_diag wants them: the family after unmapping IPv4-mapped IPv6
 * addresses, the address in network order (4 or 16 bytes), the port in network order. */
struct endpoint {
    int family;
    uint32_t addr[4];
    uint16_t port;
};

static bool endpoint_of(const struct sockaddr *sa, struct endpoint *e)
{
    memset(e, 0, sizeof(*e));
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        e->family = AF_INET;
        memcpy(e->addr, &in->sin_addr, 4);
        e->port = in->sin_port;
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        e->port = in6->sin6_port;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            e->family = AF_INET;
            memcpy(e->addr, in6->sin6_addr.s6_addr + 12, 4);
        } else {
            e->family = AF_INET6;
            memcpy(e->addr, &in6->sin6_addr, 16);
        }
        return true;
    }
    return false;
}

bool ty_sockaddr_is_loopback(const struct sockaddr *sa)
{
    struct endpoint e;
    static const uint8_t v6_loopback[16] = {[15] = 1};

    if (!sa || !endpoint_of(sa, &e))
        return false;
    if (e.family == AF_INET)
        return ((const uint8_t *)e.addr)[0] == 127;
    return memcmp(e.addr, v6_loopback, 16) == 0;
}

int ty_tcp_peer_uid(const struct sockaddr *peer, const struct sockaddr *local, uid_t *uid)
{
    struct endpoint p, l;
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req;
    struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
    struct timeval tv = {.tv_sec = 1};
    union {
        struct nlmsghdr h;
        char bytes[8192];
    } buf;
    ssize_t n;
    int fd, r = -ENOENT;

    if (!endpoint_of(peer, &p) || !endpoint_of(local, &l) || p.family != l.family)
        return -EAFNOSUPPORT;
    memset(&req, 0, sizeof(req));
    req.nlh.nlmsg_len = sizeof(req);
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST;
    req.r.sdiag_family = (uint8_t)p.family;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~0u;
    /* the client's socket: its source is the peer, its destination us */
    req.r.id.idiag_sport = p.port;
    req.r.id.idiag_dport = l.port;
    memcpy(req.r.id.idiag_src, p.addr, sizeof(p.addr));
    memcpy(req.r.id.idiag_dst, l.addr, sizeof(l.addr));
    req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

    fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
        r = -errno;
        goto out;
    }
    n = recv(fd, &buf, sizeof(buf), 0);
    if (n < 0) {
        r = errno == EAGAIN ? -ETIMEDOUT : -errno;
        goto out;
    }
    for (struct nlmsghdr *h = &buf.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_type == NLMSG_ERROR) {
            const struct nlmsgerr *e = NLMSG_DATA(h);
            if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)))
                r = e->error < 0 ? e->error : -ENOENT;
            break;
        }
        if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
            h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            *uid = (uid_t)m->idiag_uid;
            r = 0;
            break;
        }
    }
out:
    close(fd);
    return r;
}
