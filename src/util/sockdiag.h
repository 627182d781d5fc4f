/* SPDX-License-Identifier: Apache-2.0
 * sockdiag.h: who owns the other end of a TCP connection made on this host, from the kernel's
 * sock_diag netlink interface (as `ss -e` shows it). Every local user of a service reaches it
 * from the same loopback address; the owner of the client's socket tells them apart. */
#ifndef TY_SOCKDIAG_H
#define TY_SOCKDIAG_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Is @sa (AF_INET or AF_INET6) a loopback address: 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104? */
bool ty_sockaddr_is_loopback(const struct sockaddr *sa);

/* The owner of the TCP socket on this host whose own address is @peer and whose remote
 * address is @local: the client's end of a connection a local process made to our socket
 * @local. Both AF_INET or AF_INET6 (IPv4-mapped IPv6 addresses are looked up as IPv4), with
 * their ports. Returns 0 with *@uid, -ENOENT when no such socket exists here (a client on
 * another host, or one that has closed), -EAFNOSUPPORT for another family, or -errno of the
 * netlink exchange (which waits at most one second). */
int ty_tcp_peer_uid(const struct sockaddr *peer, const struct sockaddr *local, uid_t *uid);

#endif
