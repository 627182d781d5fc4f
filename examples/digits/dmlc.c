/* dmlc.c - digits example: wiring from MXNet's DMLC_* variables alone, as
 * ps-lite does (CLUSTER_SPEC and TF_CONFIG are not read).  The scheduler
 * listens on DMLC_PS_ROOT_PORT; every server and worker connects to
 * DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT and registers its role (a server also
 * its own listening address).  Once DMLC_NUM_SERVER servers and
 * DMLC_NUM_WORKER workers have registered, the scheduler assigns ranks (in
 * the order they registered) and sends everyone its rank, the counts and the
 * servers' addresses by rank.  Frames as in net.c:
 *
 *   REGISTER 0x05  arg = 1 (worker) or 2 (server)
 *                  payload: the server's "ip:port" (a worker sends none)
 *   ASSIGN   0x85  arg = rank   payload: u32 W, u32 S, then S addresses,
 *                  each followed by a NUL byte
 *   ERROR    0xff  payload: message (a registration refused) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "dmlc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define OP_REGISTER       0x05u
#define OP_ASSIGN         0x85u
#define REG_WORKER        1u
#define REG_SERVER        2u
#define REGISTER_WAIT_MS  10000 /* a connection that registers nothing this long is dropped */
#define RENDEZVOUS_WAIT_S 600.0 /* the scheduler waits this long for everyone */
#define MAX_NODES         4096

static const char *const role_names[] = {"scheduler", "worker", "server"};

static char *dup_str(const char *s)
{
    char *c = strdup(s);
    if (!c) {
        fprintf(stderr, "digits: out of memory\n");
        exit(1);
    }
    return c;
}

int dmlc_wanted(void)
{
    const char *r = getenv("DMLC_ROLE");
    return r && *r;
}

/* An integer variable in [min, max]; -1 with a message when unset or not one. */
static int env_long(const char *name, long min, long max, long *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) {
        fprintf(stderr, "digits: %s is not set (DMLC_ROLE is, so every DMLC_* is needed)\n", name);
        return -1;
    }
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end || errno || x < min || x > max) {
        fprintf(
            stderr, "digits: %s: expected an integer in [%ld, %ld], got '%s'\n", name, min, max, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int read_env(struct dmlc *d)
{
    const char *role = getenv("DMLC_ROLE"), *uri = getenv("DMLC_PS_ROOT_URI");
    long port, nw, ns;
    d->role = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(role, role_names[i]) == 0)
            d->role = i;
    if (d->role < 0) {
        fprintf(
            stderr, "digits: DMLC_ROLE: expected scheduler, worker or server, got '%s'\n", role);
        return -1;
    }
    if (!uri || !*uri || strlen(uri) > 200) {
        fprintf(stderr, "digits: DMLC_PS_ROOT_URI is not set (the scheduler's IP address)\n");
        return -1;
    }
    if (env_long("DMLC_PS_ROOT_PORT", 1, 65535, &port) != 0 ||
        env_long("DMLC_NUM_WORKER", 0, MAX_NODES, &nw) != 0 ||
        env_long("DMLC_NUM_SERVER", 0, MAX_NODES, &ns) != 0)
        return -1;
    d->nworkers = (int)nw;
    d->nservers = (int)ns;
    snprintf(d->root, sizeof d->root, strchr(uri, ':') ? "[%s]:%ld" : "%s:%ld", uri, port);
    return 0;
}

/* A server's listening socket on a port the kernel picks (ps-lite does the
 * same); *port gets it. */
static int listen_any(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        fprintf(stderr, "digits: server: cannot listen: %s\n", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* This node's address as the scheduler sees it: the local end of @fd. */
static int local_ip(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char ip[INET6_ADDRSTRLEN];
    const void *a;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    a = ss.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                                 : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
    if (!inet_ntop(ss.ss_family, a, ip, sizeof ip))
        return -1;
    snprintf(out, cap, ss.ss_family == AF_INET6 ? "[%s]" : "%s", ip);
    return 0;
}

/* ASSIGN's payload: W, S, then the servers' addresses by rank. */
static void put_assign(struct buf *b, size_t *len, int nw, int ns, char **servers)
{
    size_t n = 8;
    for (int i = 0; i < ns; i++)
        n += strlen(servers[i]) + 1;
    b->p = xrealloc(b->p, n + 1, 1);
    put_u32be(b->p, (uint32_t)nw);
    put_u32be(b->p + 4, (uint32_t)ns);
    *len = 8;
    for (int i = 0; i < ns; i++) {
        size_t k = strlen(servers[i]) + 1;
        memcpy(b->p + *len, servers[i], k);
        *len += k;
    }
}

static int parse_assign(struct dmlc *d, const unsigned char *p, size_t len)
{
    size_t off = 8;
    if (len < 8 || get_u32be(p) != (uint32_t)d->nworkers ||
        get_u32be(p + 4) != (uint32_t)d->nservers) {
        fprintf(stderr,
                "digits: %s: the scheduler's counts differ from DMLC_NUM_WORKER=%d, "
                "DMLC_NUM_SERVER=%d\n",
                role_names[d->role],
                d->nworkers,
                d->nservers);
        return -1;
    }
    d->servers = xcalloc((size_t)d->nservers + 1, sizeof *d->servers);
    for (int i = 0; i < d->nservers; i++) {
        const unsigned char *nul = off < len ? memchr(p + off, '\0', len - off) : NULL;
        if (!nul) {
            fprintf(stderr,
                    "digits: %s: the scheduler's server list is cut short\n",
                    role_names[d->role]);
            return -1;
        }
        d->servers[i] = dup_str((const char *)p + off);
        off = (size_t)(nul - p) + 1;
    }
    return 0;
}

/* Worker or server: register at the scheduler and wait for the assignment. */
static int join(struct dmlc *d)
{
    struct buf rx = {0};
    unsigned op;
    uint32_t arg = 0;
    size_t plen;
    int port = 0, rc = -1;
    if (d->role == DMLC_SERVER && (d->listen_fd = listen_any(&port)) < 0)
        return -1;
    int fd = net_connect_retry("the scheduler", d->root);
    if (fd < 0)
        return -1;
    if (d->role == DMLC_SERVER) {
        char ip[INET6_ADDRSTRLEN + 2];
        if (local_ip(fd, ip, sizeof ip) != 0) {
            fprintf(stderr, "digits: server: cannot tell its own address: %s\n", strerror(errno));
            close(fd);
            return -1;
        }
        snprintf(d->self, sizeof d->self, "%s:%d", ip, port);
    }
    if (net_send_frame(fd,
                       OP_REGISTER,
                       d->role == DMLC_SERVER ? REG_SERVER : REG_WORKER,
                       d->self,
                       strlen(d->self)) != 0 ||
        net_recv_frame(fd, IO_TIMEOUT_MS, &op, &arg, &rx, &plen) != 0)
        fprintf(stderr,
                "digits: %s: the scheduler at %s: %s\n",
                role_names[d->role],
                d->root,
                net_error());
    else if (op == OP_ERROR)
        fprintf(stderr,
                "digits: %s: the scheduler refused: %s\n",
                role_names[d->role],
                (const char *)rx.p);
    else if (op != OP_ASSIGN)
        fprintf(stderr,
                "digits: %s: unexpected reply op 0x%02x from the scheduler\n",
                role_names[d->role],
                op);
    else if (parse_assign(d, rx.p, plen) == 0) {
        d->rank = (int)arg;
        rc = 0;
    }
    close(fd);
    free(rx.p);
    return rc;
}

struct node {
    int fd;
    unsigned role;
};

/* One new connection's REGISTER: checked, then kept in @nodes (-1: refused). */
static int
take_register(struct dmlc *d, int fd, struct node *nodes, int *nreg, int count[3], char **servers)
{
    struct buf rx = {0};
    unsigned op;
    uint32_t arg;
    size_t plen;
    char msg[160] = "";
    if (net_recv_frame(fd, REGISTER_WAIT_MS, &op, &arg, &rx, &plen) != 0)
        snprintf(msg, sizeof msg, "no registration: %s", net_error());
    else if (op != OP_REGISTER || (arg != REG_WORKER && arg != REG_SERVER))
        snprintf(msg, sizeof msg, "expected REGISTER as a worker or a server");
    else if (arg == REG_WORKER && count[DMLC_WORKER] == d->nworkers)
        snprintf(msg, sizeof msg, "all %d worker(s) have registered already", d->nworkers);
    else if (arg == REG_SERVER && count[DMLC_SERVER] == d->nservers)
        snprintf(msg, sizeof msg, "all %d server(s) have registered already", d->nservers);
    else if (arg == REG_SERVER && (plen == 0 || plen > 100 || strlen((const char *)rx.p) != plen))
        snprintf(msg, sizeof msg, "a server registers its \"ip:port\"");
    if (msg[0]) {
        fprintf(stderr, "digits: scheduler: refusing a registration: %s\n", msg);
        net_send_frame(fd, OP_ERROR, 0, msg, strlen(msg));
        close(fd);
        free(rx.p);
        return -1;
    }
    unsigned role = arg == REG_SERVER ? DMLC_SERVER : DMLC_WORKER;
    if (role == DMLC_SERVER)
        servers[count[DMLC_SERVER]] = dup_str((const char *)rx.p);
    printf("scheduler: %s %d registered%s%s\n",
           role_names[role],
           count[role],
           role == DMLC_SERVER ? " at " : "",
           role == DMLC_SERVER ? (const char *)rx.p : "");
    nodes[(*nreg)++] = (struct node){fd, role};
    count[role]++;
    free(rx.p);
    return 0;
}

/* Scheduler: wait for everyone, then send each its rank and the servers. */
static int rendezvous(struct dmlc *d)
{
    int total = d->nworkers + d->nservers, nreg = 0, count[3] = {0, 0, 0}, rc = 0;
    if (total == 0)
        return 0;
    int lfd = net_listen(d->root);
    if (lfd < 0)
        return -1;
    struct node *nodes = xcalloc((size_t)total, sizeof *nodes);
    d->servers = xcalloc((size_t)d->nservers + 1, sizeof *d->servers);
    printf("scheduler: waiting on %s for %d worker(s) and %d server(s)\n",
           d->root,
           d->nworkers,
           d->nservers);
    double deadline = mono_now() + RENDEZVOUS_WAIT_S;
    while (nreg < total && !g_stop) {
        struct pollfd p = {lfd, POLLIN, 0};
        double left = deadline - mono_now();
        if (left <= 0) {
            fprintf(stderr,
                    "digits: scheduler: only %d of %d worker(s) and %d of %d server(s) "
                    "registered within %.0f s\n",
                    count[DMLC_WORKER],
                    d->nworkers,
                    count[DMLC_SERVER],
                    d->nservers,
                    RENDEZVOUS_WAIT_S);
            rc = -1;
            break;
        }
        if (poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) <= 0)
            continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            take_register(d, fd, nodes, &nreg, count, d->servers);
    }
    struct buf pl = {0};
    size_t plen = 0;
    int rank[3] = {0, 0, 0};
    if (rc == 0 && nreg == total)
        put_assign(&pl, &plen, d->nworkers, d->nservers, d->servers);
    for (int i = 0; i < nreg; i++) {
        if (rc == 0 && nreg == total &&
            net_send_frame(nodes[i].fd, OP_ASSIGN, (uint32_t)rank[nodes[i].role]++, pl.p, plen) !=
                0) {
            fprintf(stderr, "digits: scheduler: %s\n", net_error());
            rc = -1;
        }
        close(nodes[i].fd);
    }
    if (rc == 0 && nreg < total)
        rc = -1; /* a signal */
    if (rc == 0)
        printf("scheduler: everyone registered; ranks and the %d server address(es) sent\n",
               d->nservers);
    free(pl.p);
    free(nodes);
    close(lfd);
    return rc;
}

int dmlc_setup(struct dmlc *d)
{
    memset(d, 0, sizeof *d);
    d->listen_fd = -1;
    if (read_env(d) != 0)
        return -1;
    if (d->role == DMLC_SCHEDULER)
        return rendezvous(d);
    if (join(d) != 0)
        return -1;
    printf("%s: rank %d of %d from the scheduler at %s (%d worker(s), %d server(s))%s%s\n",
           role_names[d->role],
           d->rank,
           d->role == DMLC_SERVER ? d->nservers : d->nworkers,
           d->root,
           d->nworkers,
           d->nservers,
           d->role == DMLC_SERVER ? "; serving on " : "",
           d->self);
    return 0;
}

void dmlc_free(struct dmlc *d)
{
    for (int i = 0; d->servers && i < d->nservers; i++)
        free(d->servers[i]);
    free(d->servers);
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    memset(d, 0, sizeof *d);
    d->listen_fd = -1;
}
