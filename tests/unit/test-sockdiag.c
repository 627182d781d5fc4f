/* SPDX-License-Identifier: Apache-2.0
 * test-sockdiag.c: the owner of a loopback connection's client socket (sockdiag.h): our own
 * connections over IPv4, IPv6 and IPv4-mapped IPv6, another user's (as root), a tuple with
 * no socket, and which addresses are loopback. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sockdiag.h"
#include "tap.h"

/* A listening socket of @family on its loopback address (IPv4-mapped when @mapped), port
 * chosen by the kernel, into *@addr. Returns the fd or -1. */
static int listen_on(int family, bool mapped, struct sockaddr_storage *addr)
{
    socklen_t len = sizeof(*addr);
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(addr, 0, sizeof(*addr));
    if (fd < 0)
        return -1;
    if (family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)addr;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;
        int off = 0;
        in6->sin6_family = AF_INET6;
        if (mapped) {
            (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
            in6->sin6_addr = in6addr_any;
        } else {
            in6->sin6_addr = in6addr_loopback;
        }
    }
    if (bind(fd,
             (struct sockaddr *)addr,
             family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) < 0 ||
        listen(fd, 8) < 0 || getsockname(fd, (struct sockaddr *)addr, &len) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Connect to the listener @lfd at @addr (from 127.0.0.1 when @v4_client), as user @as_uid
 * when not (uid_t)-1 (a child process that keeps the connection until killed); accept it
 * and look up the client's owner. Returns ty_tcp_peer_uid's result. */
static int
owner_of(int lfd, const struct sockaddr_storage *addr, bool v4_client, uid_t as_uid, uid_t *uid)
{
    struct sockaddr_storage peer, local;
    socklen_t pl = sizeof(peer), ll = sizeof(local);
    int sfd, r, pipefd[2];
    pid_t child = -1;
    char c;

    if (pipe(pipefd) < 0)
        return -errno;
    child = fork();
    if (child == 0) {
        struct sockaddr_in v4 = {.sin_family = AF_INET,
                                 .sin_port = ((const struct sockaddr_in6 *)addr)->sin6_port,
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        const struct sockaddr *to = (const struct sockaddr *)addr;
        socklen_t tl =
            addr->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        int cfd;
        if (v4_client)
            to = (const struct sockaddr *)&v4, tl = sizeof(v4);
        if (as_uid != (uid_t)-1 && (setgid(as_uid) < 0 || setuid(as_uid) < 0))
            _exit(1);
        cfd = socket(to->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (cfd < 0 || connect(cfd, to, tl) < 0)
            _exit(1);
        (void)write(pipefd[1], "x", 1);
        pause();
        _exit(0);
    }
    close(pipefd[1]);
    r = read(pipefd[0], &c, 1) == 1 ? 0 : -EIO;
    close(pipefd[0]);
    if (r == 0) {
        sfd = accept(lfd, NULL, NULL);
        if (sfd < 0 || getpeername(sfd, (struct sockaddr *)&peer, &pl) < 0 ||
            getsockname(sfd, (struct sockaddr *)&local, &ll) < 0)
            r = -errno;
        else
            r = ty_tcp_peer_uid((struct sockaddr *)&peer, (struct sockaddr *)&local, uid);
        if (sfd >= 0)
            close(sfd);
    }
    kill(child, SIGKILL);
    (void)waitpid(child, NULL, 0);
    return r;
}

int main(void)
{
    struct sockaddr_storage a4, a6, am;
    int l4 = listen_on(AF_INET, false, &a4), l6 = listen_on(AF_INET6, false, &a6);
    int lm = listen_on(AF_INET6, true, &am);
    uid_t uid = 12345;
    int r;

    if (l4 < 0)
        skip_all("no IPv4 loopback here");
    r = owner_of(l4, &a4, false, (uid_t)-1, &uid);
    ok(r == 0 && uid == geteuid(),
       "IPv4: our own connection is ours (r %d, uid %u)",
       r,
       (unsigned)uid);
    if (geteuid() == 0) {
        uid = 0;
        r = owner_of(l4, &a4, false, 65534, &uid);
        ok(r == 0 && uid == 65534,
           "IPv4: another user's connection is theirs (r %d, uid %u)",
           r,
           (unsigned)uid);
    } else {
        skip(1, "needs root to connect as another user");
    }
    if (l6 >= 0) {
        uid = 12345;
        r = owner_of(l6, &a6, false, (uid_t)-1, &uid);
        ok(r == 0 && uid == geteuid(), "IPv6: our own connection (r %d)", r);
    } else {
        skip(1, "no IPv6 loopback here");
    }
    if (lm >= 0) {
        uid = 12345;
        r = owner_of(lm, &am, true, (uid_t)-1, &uid);
        ok(r == 0 && uid == geteuid(),
           "IPv4-mapped: an IPv4 client of a dual-stack socket (r %d)",
           r);
    } else {
        skip(1, "no dual-stack socket here");
    }
    {
        struct sockaddr_in p = {
            .sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        is_int(ty_tcp_peer_uid((struct sockaddr *)&p, (struct sockaddr *)&a4, &uid),
               -ENOENT,
               "no such connection: ENOENT");
        is_int(ty_tcp_peer_uid((struct sockaddr *)&p, (struct sockaddr *)&a6, &uid),
               -EAFNOSUPPORT,
               "families differ");
    }
    {
        struct sockaddr_in a = {.sin_family = AF_INET};
        struct sockaddr_in6 b = {.sin6_family = AF_INET6};
        a.sin_addr.s_addr = htonl(0x7f000002);
        ok(ty_sockaddr_is_loopback((struct sockaddr *)&a), "127.0.0.2 is loopback");
        a.sin_addr.s_addr = htonl(0xc6120001);
        ok(!ty_sockaddr_is_loopback((struct sockaddr *)&a), "198.18.0.1 is not");
        b.sin6_addr = in6addr_loopback;
        ok(ty_sockaddr_is_loopback((struct sockaddr *)&b), "::1 is loopback");
        inet_pton(AF_INET6, "::ffff:127.0.0.1", &b.sin6_addr);
        ok(ty_sockaddr_is_loopback((struct sockaddr *)&b), "::ffff:127.0.0.1 is loopback");
        inet_pton(AF_INET6, "fd00::1", &b.sin6_addr);
        ok(!ty_sockaddr_is_loopback((struct sockaddr *)&b), "fd00::1 is not");
        ok(!ty_sockaddr_is_loopback(NULL), "NULL is not");
    }
    close(l4);
    if (l6 >= 0)
        close(l6);
    if (lm >= 0)
        close(lm);
    return done_testing();
}
