/* SPDX-License-Identifier: Apache-2.0
 * http-internal.h: what http.c (the server: threads, request bodies, running handlers) and
 * http-front.c (its front door: connections per client, the web and authentication checks,
 * the headers of every answer) share. Not for use elsewhere. */
#ifndef TYD_HTTP_INTERNAL_H
#define TYD_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "daemon.h"
#include "guard.h"
#include "route.h"

/* Worker threads for the TYD_WORKER rows. Each mostly waits for a group commit's fsync or
 * for SQLite, so they are many more than the cores: 16 let 16 creates share one commit (the
 * store's writer batches whatever is waiting) without a thread per connection. */
#define WORKERS 16

struct req_ctx;
struct tyd_connlimit;

/* The HTTP server of a struct tyd (d->http): libmicrohttpd, the workers' queue, and the
 * followed streams waiting for news. */
struct tyd_http {
    struct MHD_Daemon *mhd;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;  /* a request was queued, or stop */
    struct req_ctx *head, *tail;
    bool stop;
    pthread_t threads[WORKERS];
    size_t nthreads;
    struct MHD_Connection **waiting;
    size_t nwaiting, capwaiting;
    struct req_ctx **delayed; /* held-back 401s, suspended until their delay_until */
    size_t ndelayed, capdelayed;
    struct tyd_host_rules rules;
    struct tyd_connlimit *clients; /* --max-connections-per-address, per client */
    char *tls_cert, *tls_key;      /* PEM, kept while libmicrohttpd runs */
    pthread_t poller;
    bool have_poller;
};

/* ---- http-front.c ---- */

/* Add the headers every API answer carries (no script, framing, type guessing or caching)
 * to @resp, unless it is a dashboard file (which sets its own). */
void tyd_api_headers(struct MHD_Response *resp);
/* Refuse (@rep filled: 403) a request a web page made: an Origin that is not the daemon's
 * own, or a Host that is none of its names. Returns true when refused. */
bool tyd_web_checks(struct tyd *d, struct MHD_Connection *c, struct tyd_reply *rep);
/* Answer what routing and authentication decide before the body is read (@rep filled);
 * *@delay: how long to hold back a 401. Returns true when answered. */
bool tyd_pre_checks(struct tyd *d,
                    struct MHD_Connection *c,
                    const char *http_method,
                    const struct tyd_route *rt,
                    struct tyd_reply *rep,
                    int64_t *delay);
/* libmicrohttpd's connection notices (@cls: the struct tyd): each connection counted for its
 * client from its start to its close, or shut down at its start when the client is at its
 * limit. */
void tyd_on_connection(void *cls,
                       struct MHD_Connection *c,
                       void **socket_context,
                       enum MHD_ConnectionNotificationCode toe);

#endif
