/* SPDX-License-Identifier: Apache-2.0
 * connlimit.c: open connections counted per client (connlimit.h), in a table of the clients
 * with a connection open: a few hundred at most (the connections are limited), so it is
 * searched in order. */
#include "connlimit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sockdiag.h"

struct client {
    char key[TYD_CLIENT_KEY_MAX];
    unsigned open;
};

struct tyd_connlimit {
    pthread_mutex_t lock;
    unsigned max;
    struct client *clients;
    size_t n, cap;
};

struct tyd_connlimit *tyd_connlimit_new(unsigned max_per_client)
{
    struct tyd_connlimit *cl = xcalloc(1, sizeof(*cl));
    pthread_mutex_init(&cl->lock, NULL);
    cl->max = max_per_client;
    return cl;
}

void tyd_connlimit_free(struct tyd_connlimit *cl)
{
    if (!cl)
        return;
    pthread_mutex_destroy(&cl->lock);
    free(cl->clients);
    free(cl);
}

void tyd_client_key(const struct sockaddr *peer, const struct sockaddr *local, char *key)
{
    char text[INET6_ADDRSTRLEN] = "?";
    uid_t uid;

    if (ty_sockaddr_is_loopback(peer) && local && ty_tcp_peer_uid(peer, local, &uid) == 0) {
        (void)snprintf(key, TYD_CLIENT_KEY_MAX, "user %u", (unsigned)uid);
        return;
    }
    if (peer->sa_family == AF_INET) {
        (void)inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, text, sizeof(text));
    } else if (peer->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            (void)inet_ntop(AF_INET, a->s6_addr + 12, text, sizeof(text));
        else
            (void)inet_ntop(AF_INET6, a, text, sizeof(text));
    }
    (void)snprintf(key, TYD_CLIENT_KEY_MAX, "address %s", text);
}

/* The entry of @key, or NULL; with cl->lock held. */
static struct client *find(struct tyd_connlimit *cl, const char *key)
{
    for (size_t i = 0; i < cl->n; i++)
        if (strcmp(cl->clients[i].key, key) == 0)
            return &cl->clients[i];
    return NULL;
}

bool tyd_connlimit_check(struct tyd_connlimit *cl, const char *key)
{
    bool room;

    pthread_mutex_lock(&cl->lock);
    {
        const struct client *c = find(cl, key);
        room = !c || c->open < cl->max;
    }
    pthread_mutex_unlock(&cl->lock);
    return room;
}

bool tyd_connlimit_try_open(struct tyd_connlimit *cl, const char *key)
{
    bool room;

    pthread_mutex_lock(&cl->lock);
    {
        struct client *c = find(cl, key);
        room = !c || c->open < cl->max;
        if (room && !c) {
            if (cl->n == cl->cap) {
                cl->cap = cl->cap ? 2 * cl->cap : 16;
                cl->clients = xreallocarray(cl->clients, cl->cap, sizeof(*cl->clients));
            }
            c = &cl->clients[cl->n++];
            (void)snprintf(c->key, sizeof(c->key), "%s", key);
            c->open = 0;
        }
        if (room)
            c->open++;
    }
    pthread_mutex_unlock(&cl->lock);
    return room;
}

void tyd_connlimit_close(struct tyd_connlimit *cl, const char *key)
{
    pthread_mutex_lock(&cl->lock);
    {
        struct client *c = find(cl, key);
        if (c && --c->open == 0)
            *c = cl->clients[--cl->n]; /* the last entry takes its place */
    }
    pthread_mutex_unlock(&cl->lock);
}

unsigned tyd_connlimit_count(struct tyd_connlimit *cl, const char *key)
{
    unsigned n;

    pthread_mutex_lock(&cl->lock);
    {
        const struct client *c = find(cl, key);
        n = c ? c->open : 0;
    }
    pthread_mutex_unlock(&cl->lock);
    return n;
}
