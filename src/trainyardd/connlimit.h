/* SPDX-License-Identifier: Apache-2.0
 * connlimit.h: the per-client connection limit of trainyardd's HTTP front
 * (--max-connections-per-address), so that one client holding many connections (stalled,
 * idle or half-sent) cannot take the places of the others. A client is its address; on
 * loopback, where every local user's connections come from the same 127.0.0.1, it is the
 * user owning the client's socket, as the kernel tells (sockdiag.h), so one local user
 * cannot lock the others out. Thread-safe: libmicrohttpd's event threads share one. */
#ifndef TYD_CONNLIMIT_H
#define TYD_CONNLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Room for a client key: "user 4294967295", "address " and an IPv6 address. */
#define TYD_CLIENT_KEY_MAX 64

struct tyd_connlimit;

/* A limit of @max_per_client open connections per client. Never NULL. */
struct tyd_connlimit *tyd_connlimit_new(unsigned max_per_client);
/* Free @cl (NULL is fine). */
void tyd_connlimit_free(struct tyd_connlimit *cl);

/* The client of a connection from @peer to our socket @local, into @key
 * (TYD_CLIENT_KEY_MAX): "user UID" for a loopback peer whose socket's owner the kernel
 * names, else "address ADDR" (the peer's address without its port; an IPv4-mapped IPv6
 * address as IPv4). */
void tyd_client_key(const struct sockaddr *peer, const struct sockaddr *local, char *key);

/* May a connection of client @key be accepted: has it fewer than the limit open? (An early
 * look: the decision is tyd_connlimit_try_open's.) */
bool tyd_connlimit_check(struct tyd_connlimit *cl, const char *key);
/* Count one more open connection of @key if it has fewer than the limit open, in one step
 * (connections accepted at once by several threads cannot pass the limit together). Returns
 * whether it was counted: false, the connection is over the limit. */
bool tyd_connlimit_try_open(struct tyd_connlimit *cl, const char *key);
/* Count one connection of @key fewer (each open once). */
void tyd_connlimit_close(struct tyd_connlimit *cl, const char *key);
/* Open connections of @key now. */
unsigned tyd_connlimit_count(struct tyd_connlimit *cl, const char *key);

#endif
