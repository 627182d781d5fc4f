/* SPDX-License-Identifier: Apache-2.0
 * http.c: the HTTP side of trainyardd on libmicrohttpd: the listening socket (loopback only
 * unless tokens are configured), request bodies with a size limit, authentication, running
 * the handler of the API table's row (TYD_API in route.h) on the thread the row names (its
 * query parameters and Google's JSON error form: params.c). Its state is struct tyd_http,
 * owned by struct tyd.
 *
 * Threads: libmicrohttpd's pool of event threads (epoll, one per CPU) parses requests and
 * runs the fast handlers (get, logs pages) inline. Handlers that wait for a durable write or
 * scan many rows (create, cancel, patch, list) run on a pool of worker threads while their
 * connection is suspended, so an fsync never stalls the other connections of an event
 * thread (and concurrent creates share their commit). A followed log stream that has nothing
 * to send suspends its connection; a poller resumes such streams every 200 ms. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "connlimit.h"
#include "daemon.h"
#include "guard.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "route.h"
#include "timeutil.h"

/* Worker threads for the TYD_WORKER rows. Each mostly waits for a group commit's fsync or
 * for SQLite, so they are many more than the cores: 16 let 16 creates share one commit (the
 * store's writer batches whatever is waiting) without a thread per connection. */
#define WORKERS 16
/* How often a followed log stream with nothing new looks at its files again: short enough
 * that `trainyard jobs stream-logs` feels live, long enough that idle streams cost nothing. */
#define FOLLOW_POLL_MS 200
/* libmicrohttpd's event threads: one per CPU, at least 2 (a slow client never holds every
 * connection) and at most 8 (the handlers are short; more threads only contend for SQLite). */
#define EVENT_THREADS_MIN 2
#define EVENT_THREADS_MAX 8
/* Stack of every request thread: ample for the handlers (JSON, spec checks, SQLite), while
 * the default 8 MiB per thread would reserve some 200 MiB of address space for nothing. */
#define THREAD_STACK (256 * 1024)
/* The connection limits (--connection-timeout, --max-connections,
 * --max-connections-per-address) are struct tyd's; main.c sets their defaults. A followed
 * log stream is suspended between looks at its files, and libmicrohttpd neither times out
 * a suspended connection nor counts the time before its resume, so a stream whose client
 * reads lives on; one whose client stops reading is timed out like any other. */

struct req_ctx {
    struct ty_buf body;
    bool too_big;
    bool answered; /* a reply was queued before the body was read */
    /* A handler run by a worker while the connection is suspended. */
    enum { RC_INLINE, RC_QUEUED, RC_DONE } work;
    int64_t delay_until; /* a held-back 401 (rep) is sent at this monotonic time */
    int64_t arrived;     /* monotonic usec of the request's arrival, for /metrics */
    struct tyd_route rt;
    struct tyd_request rq;
    struct tyd_reply rep;
    struct req_ctx *next;
};

/* The initial request context of a request whose path has an encoded '/' (raw_uri): not a
 * struct req_ctx, never freed. */
static char encoded_slash_mark;
#define ENCODED_SLASH ((struct req_ctx *)(void *)&encoded_slash_mark)

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
    struct sockaddr_storage bound; /* the listening socket's address */
    bool bound_any;                /* ... the wildcard (0.0.0.0 or ::) */
    char *tls_cert, *tls_key;      /* PEM, kept while libmicrohttpd runs */
    pthread_t poller;
    bool have_poller;
};

static void free_args(struct tyd_request *rq)
{
    for (size_t i = 0; i < rq->nargs; i++) {
        free(rq->args[i].key);
        free(rq->args[i].value);
    }
    free(rq->args);
    rq->args = NULL;
    rq->nargs = 0;
}

static enum MHD_Result
copy_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct tyd_request *rq = cls;
    rq->args = xreallocarray(rq->args, rq->nargs + 1, sizeof(*rq->args));
    rq->args[rq->nargs].key = xstrdup(key);
    rq->args[rq->nargs].value = value ? xstrdup(value) : NULL;
    rq->nargs++;
    return MHD_YES;
}

/* --- requests ------------------------------------------------------------------------ */

/* Queue the answer @rep to the request @rc, counting it for /metrics. */
static enum MHD_Result send_reply(struct tyd *d,
                                  struct req_ctx *rc,
                                  struct MHD_Connection *c,
                                  const char *method,
                                  const char *url,
                                  struct tyd_reply *rep,
                                  const char *allow)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;
    bool pretty = true;

    (void)tyd_pretty_value(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "prettyPrint"),
                           &pretty);

    if (d->verbose)
        tyd_log("%s %s -> %u", method, url, rep->status);
    tyd_metrics_count_request(method, &rc->rt, rep->status, ty_mono_usec() - rc->arrived);
    if (rep->stream) {
        ret = MHD_queue_response(c, rep->status, rep->stream);
        MHD_destroy_response(rep->stream);
        rep->stream = NULL;
        json_decref(rep->json);
        rep->json = NULL;
        return ret;
    }
    {
        char *text = pretty ? ty_json_pretty(rep->json) : ty_json_compact(rep->json);
        size_t n = strlen(text);
        text[n] = '\n'; /* replace the NUL: the body ends with a newline */
        resp = MHD_create_response_from_buffer(n + 1, text, MHD_RESPMEM_MUST_FREE);
    }
    json_decref(rep->json);
    rep->json = NULL;
    if (!resp)
        return MHD_NO;
    (void)MHD_add_response_header(resp, "Content-Type", "application/json; charset=UTF-8");
    if (rep->status == 401)
        (void)MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"trainyard\"");
    if (allow)
        (void)MHD_add_response_header(resp, "Allow", allow);
    ret = MHD_queue_response(c, rep->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The request's client (connlimit.h: an address; on loopback the local user owning the
 * socket), as on_connection found it, into @buf (TYD_CLIENT_KEY_MAX): what the failure
 * counts of auth.c are kept by, so that one local user's good token does not clear
 * another's wrong ones. */
static void client_of(struct MHD_Connection *c, char *buf)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const char *key = ci ? ci->socket_context : NULL;

    (void)snprintf(buf, TYD_CLIENT_KEY_MAX, "%s", key ? key : "address ?");
}

/* Refuse a request that a web page made: an Origin that is not the daemon's own (a
 * cross-site request), or a Host that is none of its names (DNS rebinding). A request
 * without Host is HTTP/1.0 (libmicrohttpd refuses HTTP/1.1 without one): no browser. */
static bool web_checks(struct tyd *d, struct MHD_Connection *c, struct tyd_reply *rep)
{
    const struct tyd_host_rules *r = &d->http->rules;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");

    if (host && !tyd_host_allowed(r, host)) {
        tyd_error(rep,
                  403,
                  NULL,
                  "Request refused: the Host header '%.200s' is not a name of this service "
                  "(it answers to its IP addresses and localhost with port %u, and to the "
                  "names given with --allowed-hosts); a web page reaching it through "
                  "another name is refused",
                  host,
                  r->port);
        return true;
    }
    if (origin && !tyd_origin_allowed(r, origin, host)) {
        tyd_error(rep,
                  403,
                  NULL,
                  "Request refused: the Origin header '%.200s' is not this service's own "
                  "origin (the scheme and the Host header's '%.200s'); requests from web "
                  "pages of other sites are not accepted",
                  origin,
                  host ? host : "");
        return true;
    }
    return false;
}

/* Does the request announce a body (Content-Length above 0, or chunked)? */
static bool has_body(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    int64_t n;

    if (te)
        return true;
    return cl && !(ty_parse_int64(cl, 0, INT64_MAX, &n) == 0 && n == 0);
}

/* Answer what routing and authentication decide before the body is read; returns true when
 * @rep holds such an answer. *delay: when set, the answer (a 401 to an address that failed
 * many times) is to be held back this many microseconds. */
static bool pre_checks(struct tyd *d,
                       struct MHD_Connection *c,
                       const char *http_method,
                       const struct tyd_route *rt,
                       struct tyd_reply *rep,
                       int64_t *delay)
{
    *delay = 0;
    switch (rt->method) {
    case TYD_NOT_FOUND:
        tyd_error(rep, 404, NULL, "The requested URL was not found: %s", rt->detail);
        return true;
    case TYD_BAD_METHOD:
        tyd_error(rep, 405, NULL, "HTTP method not allowed here; allowed: %s", rt->allow);
        return true;
    case TYD_BAD_NAME:
        tyd_error(rep, 400, NULL, "%s", rt->detail);
        return true;
    default:
        break;
    }
    if (d->auth && rt->api && rt->api->auth != TYD_AUTH_NONE) {
        const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        /* TYD_AUTH_ALL: '*' is no project id, so only a token for '*' grants it; TYD_AUTH_TOKEN:
         * any valid token (NULL) */
        const char *project = rt->api->auth == TYD_AUTH_ALL     ? "*"
                              : rt->api->auth == TYD_AUTH_TOKEN ? NULL
                                                                : rt->project;
        char addr[TYD_CLIENT_KEY_MAX];
        client_of(c, addr);
        switch (tyd_auth_check(d->auth, h, project)) {
        case TYD_AUTH_OK:
            tyd_auth_succeeded(d->auth, addr);
            break;
        case TYD_AUTH_MISSING:
            tyd_error(rep,
                      401,
                      NULL,
                      "Request is missing required authentication credential. Expected "
                      "header 'Authorization: Bearer TOKEN'.");
            return true;
        case TYD_AUTH_BAD_TOKEN:
            *delay = tyd_auth_failed(d->auth, addr, ty_mono_usec());
            tyd_error(rep, 401, NULL, "Request had invalid authentication credentials.");
            return true;
        case TYD_AUTH_FORBIDDEN: {
            /* a good token, of another project: it resets no count of wrong ones (else a
             * guesser would mix in its own token to guess at full speed) */
            char msg[512];
            tyd_auth_forbidden_msg(d->auth, h, project, msg, sizeof(msg));
            tyd_error(rep, 403, NULL, "%s", msg);
            return true;
        }
        }
    }
    if (rt->method == TYD_UNIMPLEMENTED) {
        tyd_error(rep, 501, NULL, "%s", rt->detail);
        return true;
    }
    /* Google's APIs read a body as JSON whatever it is declared as, and answer 400
     * INVALID_ARGUMENT to a form; here a body must say it is JSON, so that no HTML form
     * (which cannot send application/json) can post one. */
    if ((strcmp(http_method, "POST") == 0 || strcmp(http_method, "PATCH") == 0) && has_body(c)) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (!tyd_content_type_json(ct)) {
            tyd_error(rep,
                      400,
                      NULL,
                      "Invalid Content-Type '%.100s': the body of a %s must be JSON, sent "
                      "with the header 'Content-Type: application/json'.",
                      ct ? ct : "(none)",
                      http_method);
            return true;
        }
    }
    return false;
}

/* The handler of each row of the API table (route.h), in its order. */
typedef void tyd_handler(const struct tyd_request *rq, struct tyd_reply *rep);
#define HANDLER(http, pattern, what, handler, runs_on, auth) handler,
static tyd_handler *const handlers[] = {TYD_API(HANDLER)};
#undef HANDLER

static void run_handler(const struct tyd_route *rt, struct tyd_request *rq, struct tyd_reply *rep)
{
    tyd_handler *h = rt->api && rt->row < TY_ARRAY_SIZE(handlers) ? handlers[rt->row] : NULL;

    if (h)
        h(rq, rep);
    else
        tyd_error(rep, 500, NULL, "internal error: no handler for this URL");
    if (!rep->json && !rep->stream)
        tyd_error(rep, 500, NULL, "internal error: the handler gave no answer");
}

static void *worker_main(void *arg)
{
    struct tyd_http *h = arg;

    for (;;) {
        struct req_ctx *rc;
        struct MHD_Connection *c;

        pthread_mutex_lock(&h->lock);
        while (!h->head && !h->stop)
            pthread_cond_wait(&h->cond, &h->lock);
        rc = h->head;
        if (!rc) {
            pthread_mutex_unlock(&h->lock);
            return NULL;
        }
        h->head = rc->next;
        if (!h->head)
            h->tail = NULL;
        pthread_mutex_unlock(&h->lock);

        run_handler(&rc->rt, &rc->rq, &rc->rep);
        c = rc->rq.conn;
        rc->work = RC_DONE;
        MHD_resume_connection(c); /* MHD calls on_request again, which sends the reply */
    }
}

/* Queue @rc for a worker, suspending its connection. False when the service stops. */
static bool queue_work(struct tyd_http *h, struct req_ctx *rc)
{
    pthread_mutex_lock(&h->lock);
    if (h->stop) {
        pthread_mutex_unlock(&h->lock);
        return false;
    }
    rc->work = RC_QUEUED;
    rc->next = NULL;
    MHD_suspend_connection(rc->rq.conn);
    if (h->tail)
        h->tail->next = rc;
    else
        h->head = rc;
    h->tail = rc;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
    return true;
}

bool tyd_stream_wait(struct tyd *d, struct MHD_Connection *c)
{
    struct tyd_http *h = d->http;

    pthread_mutex_lock(&h->lock);
    if (h->stop) {
        pthread_mutex_unlock(&h->lock);
        return false;
    }
    if (h->nwaiting == h->capwaiting) {
        h->capwaiting = h->capwaiting ? h->capwaiting * 2 : 16;
        h->waiting = xreallocarray(h->waiting, h->capwaiting, sizeof(*h->waiting));
    }
    h->waiting[h->nwaiting++] = c;
    MHD_suspend_connection(c);
    pthread_mutex_unlock(&h->lock);
    return true;
}

/* Hold back the answer in rc->rep until rc->delay_until: suspend the connection; the poller
 * resumes it then. False when the service stops (answer at once). */
static bool delay_reply(struct tyd_http *h, struct req_ctx *rc)
{
    pthread_mutex_lock(&h->lock);
    if (h->stop) {
        pthread_mutex_unlock(&h->lock);
        return false;
    }
    if (h->ndelayed == h->capdelayed) {
        h->capdelayed = h->capdelayed ? h->capdelayed * 2 : 16;
        h->delayed = xreallocarray(h->delayed, h->capdelayed, sizeof(*h->delayed));
    }
    rc->work = RC_QUEUED;
    h->delayed[h->ndelayed++] = rc;
    MHD_suspend_connection(rc->rq.conn);
    pthread_mutex_unlock(&h->lock);
    return true;
}

/* Resume every waiting stream (they look for news, and wait again if there is none), and
 * the held-back answers due by @now (all with INT64_MAX). Call with h->lock held. */
static void resume_waiting(struct tyd_http *h, int64_t now)
{
    size_t kept = 0;

    for (size_t i = 0; i < h->nwaiting; i++)
        MHD_resume_connection(h->waiting[i]);
    h->nwaiting = 0;
    for (size_t i = 0; i < h->ndelayed; i++) {
        struct req_ctx *rc = h->delayed[i];
        if (rc->delay_until > now) {
            h->delayed[kept++] = rc;
            continue;
        }
        rc->work = RC_DONE;
        MHD_resume_connection(rc->rq.conn);
    }
    h->ndelayed = kept;
}

static void *poller_main(void *arg)
{
    struct tyd_http *h = arg;

    for (;;) {
        struct timespec ts = {0, FOLLOW_POLL_MS * 1000000L};
        bool stop;
        (void)nanosleep(&ts, NULL);
        pthread_mutex_lock(&h->lock);
        resume_waiting(h, ty_mono_usec());
        stop = h->stop;
        pthread_mutex_unlock(&h->lock);
        if (stop)
            return NULL;
    }
}

/* The first call for a request (its headers are in): the checks that need no body (the web
 * checks, an encoded '/', the route, authentication and the declared length), each of which
 * may answer at once; else the request's context is ready for its body. */
static enum MHD_Result begin_request(
    struct tyd *d, struct MHD_Connection *c, const char *method, const char *url, void **con_cls)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    struct req_ctx *rc = xcalloc(1, sizeof(*rc));
    struct tyd_reply rep = {0};
    bool encoded_slash = *con_cls == ENCODED_SLASH;
    int64_t n, delay = 0;

    rc->arrived = ty_mono_usec();
    *con_cls = rc;
    if (web_checks(d, c, &rep)) {
        rc->answered = true;
        return send_reply(d, rc, c, method, url, &rep, NULL);
    }
    if (encoded_slash) {
        /* libmicrohttpd decodes the path before we see it: "p1%2Fjobs" would read as two
         * segments and name another resource */
        tyd_error(&rep,
                  400,
                  NULL,
                  "the URL's path has an encoded '/' (%%2F) in a segment; no project, job "
                  "or operation name contains '/'");
        rc->answered = true;
        return send_reply(d, rc, c, method, url, &rep, NULL);
    }
    tyd_route(method, url, &rc->rt);
    if (pre_checks(d, c, method, &rc->rt, &rep, &delay)) {
        if (delay > 0) {
            /* read (and drop) the body, then hold the 401 back */
            rc->delay_until = ty_mono_usec() + delay;
            rc->rep = rep;
            rc->rq.conn = c;
            return MHD_YES;
        }
        rc->answered = true;
        return send_reply(d, rc, c, method, url, &rep, rc->rt.allow[0] ? rc->rt.allow : NULL);
    }
    if (cl && (ty_parse_int64(cl, 0, INT64_MAX, &n) < 0 || n > TYD_MAX_BODY)) {
        rc->answered = true;
        tyd_error(&rep, 413, NULL, "Request body too large: the limit is %d bytes.", TYD_MAX_BODY);
        return send_reply(d, rc, c, method, url, &rep, NULL);
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *c,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload,
                                  size_t *upload_size,
                                  void **con_cls)
{
    struct tyd *d = cls;
    struct req_ctx *rc = *con_cls;
    struct tyd_reply rep = {0};

    if (!rc || rc == ENCODED_SLASH)
        return begin_request(d, c, method, url, con_cls);
    if (rc->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (rc->work == RC_DONE) {
        rc->work = RC_INLINE;
        return send_reply(d, rc, c, method, url, &rc->rep, NULL);
    }
    if (rc->delay_until) {
        if (*upload_size) {
            *upload_size = 0;
            return MHD_YES;
        }
        if (delay_reply(d->http, rc))
            return MHD_YES;
        return send_reply(d, rc, c, method, url, &rc->rep, NULL);
    }
    if (*upload_size) {
        if (!rc->too_big && rc->body.len + *upload_size > TYD_MAX_BODY)
            rc->too_big = true;
        if (!rc->too_big)
            ty_buf_append(&rc->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (rc->too_big) {
        tyd_error(&rep, 413, NULL, "Request body too large: the limit is %d bytes.", TYD_MAX_BODY);
        return send_reply(d, rc, c, method, url, &rep, NULL);
    }
    rc->rq = (struct tyd_request){
        .d = d,
        .conn = c,
        .project = rc->rt.project,
        .job = rc->rt.job,
        .asset = rc->rt.asset,
        .body = rc->body.len ? ty_buf_str(&rc->body) : "",
        .body_len = rc->body.len,
    };
    (void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, copy_arg, &rc->rq);
    if (atomic_load(&d->stopping)) {
        tyd_error(&rep, 503, NULL, "trainyardd is shutting down");
        return send_reply(d, rc, c, method, url, &rep, NULL);
    }
    if (rc->rt.api->runs_on == TYD_WORKER) {
        if (queue_work(d->http, rc))
            return MHD_YES;
        tyd_error(&rep, 503, NULL, "trainyardd is shutting down");
        return send_reply(d, rc, c, method, url, &rep, NULL);
    }
    run_handler(&rc->rt, &rc->rq, &rep);
    return send_reply(d, rc, c, method, url, &rep, NULL);
}

static void on_completed(void *cls,
                         struct MHD_Connection *c,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req_ctx *rc = *con_cls;
    if (!rc || rc == ENCODED_SLASH)
        return;
    ty_buf_release(&rc->body);
    free_args(&rc->rq);
    json_decref(rc->rep.json);
    free(rc);
    *con_cls = NULL;
}

/* libmicrohttpd's URI log callback, called with the request's URI as sent, before it is
 * decoded: the initial request context is ENCODED_SLASH when the path (before '?') has a
 * "%2F" (on_request refuses it), else NULL. */
static void *raw_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    size_t path = strcspn(uri, "?");

    for (size_t i = 0; i + 2 < path; i++)
        if (uri[i] == '%' && uri[i + 1] == '2' && (uri[i + 2] == 'F' || uri[i + 2] == 'f'))
            return ENCODED_SLASH;
    return NULL;
}

/* libmicrohttpd's unescape callback: tyd_url_unescape (route.h), which keeps "%00". */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    return tyd_url_unescape(s);
}

/* libmicrohttpd's accept policy: an early refusal of a connection whose client (connlimit.h)
 * has --max-connections-per-address open, before libmicrohttpd sets it up. Our end of the
 * connection is not known yet: the listening socket's address, or for a wildcard one the
 * peer's own address (a local client reaches 127.0.0.1 from 127.0.0.1). A wrong guess only
 * lets the connection reach on_connection, which decides with both ends known. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    struct tyd_http *h = ((struct tyd *)cls)->http;
    struct sockaddr_storage local = h->bound;
    char key[TYD_CLIENT_KEY_MAX];

    if (h->bound_any && len <= sizeof(local)) {
        in_port_t port = local.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&local)->sin6_port
                                                     : ((struct sockaddr_in *)&local)->sin_port;
        memcpy(&local, addr, len);
        if (local.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&local)->sin6_port = port;
        else
            ((struct sockaddr_in *)&local)->sin_port = port;
    }
    tyd_client_key(addr, (struct sockaddr *)&local, key);
    return tyd_connlimit_check(h->clients, key) ? MHD_YES : MHD_NO;
}

/* libmicrohttpd's connection notices: at its start a connection is counted under its
 * client's key (kept as the connection's socket context) if the client has room, else shut
 * down at once (libmicrohttpd reads the end and closes it); at its close the count drops.
 * The key of a refused connection is kept with a leading '!': nothing to drop. */
static void on_connection(void *cls,
                          struct MHD_Connection *c,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct tyd_http *h = ((struct tyd *)cls)->http;
    char *key = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct sockaddr_storage peer, local;
        socklen_t pl = sizeof(peer), ll = sizeof(local);
        key = xmalloc(TYD_CLIENT_KEY_MAX);
        if (ci && getpeername(ci->connect_fd, (struct sockaddr *)&peer, &pl) == 0 &&
            getsockname(ci->connect_fd, (struct sockaddr *)&local, &ll) == 0)
            tyd_client_key((struct sockaddr *)&peer, (struct sockaddr *)&local, key);
        else
            (void)snprintf(key, TYD_CLIENT_KEY_MAX, "address ?");
        if (!tyd_connlimit_try_open(h->clients, key)) {
            key[0] = '!';
            if (ci)
                (void)shutdown(ci->connect_fd, SHUT_RDWR);
        }
        *socket_context = key;
    } else if (key) {
        if (key[0] != '!')
            tyd_connlimit_close(h->clients, key);
        free(key);
        *socket_context = NULL;
    }
}

/* Start the workers and the poller of @h. Returns 0 or -EAGAIN. */
static int start_threads(struct tyd_http *h)
{
    pthread_attr_t attr;

    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    for (h->nthreads = 0; h->nthreads < WORKERS; h->nthreads++)
        if (pthread_create(&h->threads[h->nthreads], &attr, worker_main, h) != 0)
            break;
    h->have_poller = pthread_create(&h->poller, &attr, poller_main, h) == 0;
    pthread_attr_destroy(&attr);
    return h->nthreads == 0 || !h->have_poller ? -EAGAIN : 0;
}

int tyd_http_start(struct tyd *d, struct ty_error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned event_threads = ncpu < EVENT_THREADS_MIN   ? EVENT_THREADS_MIN
                             : ncpu > EVENT_THREADS_MAX ? EVENT_THREADS_MAX
                                                        : (unsigned)ncpu;
    struct tyd_http *h;
    char *cert = NULL, *key = NULL;
    int fd = tyd_tls_load(d, &cert, &key, err);

    if (fd == 0)
        fd = tyd_listen_open(d, err);
    if (fd < 0) {
        free(cert);
        if (key)
            explicit_bzero(key, strlen(key));
        free(key);
        return fd;
    }
    h = xcalloc(1, sizeof(*h));
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    h->tls_cert = cert;
    h->tls_key = key;
    h->rules = (struct tyd_host_rules){
        .port = d->port,
        .tls = cert != NULL,
        .extra = (const char *const *)d->allowed_hosts,
    };
    h->clients = tyd_connlimit_new(d->max_conns_per_addr);
    {
        socklen_t bl = sizeof(h->bound);
        if (getsockname(fd, (struct sockaddr *)&h->bound, &bl) < 0)
            h->bound.ss_family = AF_UNSPEC;
        h->bound_any = h->bound.ss_family == AF_INET6
                           ? IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&h->bound)->sin6_addr)
                           : ((struct sockaddr_in *)&h->bound)->sin_addr.s_addr == INADDR_ANY;
    }
    d->http = h;
    if (start_threads(h) < 0) {
        close(fd);
        tyd_http_stop(d);
        return ty_error_set(err, EAGAIN, "cannot start the request threads");
    }
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    h->mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                                  MHD_USE_ERROR_LOG | MHD_USE_TURBO | (cert ? MHD_USE_TLS : 0),
                              0,
                              accept_policy,
                              d,
                              on_request,
                              d,
                              MHD_OPTION_EXTERNAL_LOGGER,
                              tyd_mhd_log,
                              d,
                              MHD_OPTION_LISTEN_SOCKET,
                              (MHD_socket)fd,
                              MHD_OPTION_THREAD_POOL_SIZE,
                              event_threads,
                              MHD_OPTION_URI_LOG_CALLBACK,
                              raw_uri,
                              NULL,
                              MHD_OPTION_UNESCAPE_CALLBACK,
                              unescape,
                              NULL,
                              MHD_OPTION_NOTIFY_COMPLETED,
                              on_completed,
                              d,
                              MHD_OPTION_CONNECTION_LIMIT,
                              d->max_conns,
                              MHD_OPTION_NOTIFY_CONNECTION,
                              on_connection,
                              d,
                              MHD_OPTION_CONNECTION_TIMEOUT,
                              d->conn_timeout_s,
                              MHD_OPTION_THREAD_STACK_SIZE,
                              (size_t)THREAD_STACK,
                              MHD_OPTION_ARRAY,
                              cert ? tls : tls + 2,
                              MHD_OPTION_END);
    if (!h->mhd) {
        close(fd);
        tyd_http_stop(d);
        if (cert)
            return ty_error_set(err,
                                EINVAL,
                                "cannot start HTTPS on %s: --tls-cert %s and --tls-key %s are "
                                "not a certificate and its private key (see the line above)",
                                d->listen,
                                d->tls_cert,
                                d->tls_key);
        return ty_error_set(err, EIO, "cannot start the HTTP server on %s", d->listen);
    }
    return 0;
}

void tyd_http_stop(struct tyd *d)
{
    struct tyd_http *h = d->http;

    atomic_store(&d->stopping, true);
    if (!h)
        return;
    /* Workers finish what is queued (their connections are resumed and answered); streams
     * are resumed once more and end; then nothing is suspended and MHD may stop. */
    pthread_mutex_lock(&h->lock);
    h->stop = true;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    for (size_t i = 0; i < h->nthreads; i++)
        pthread_join(h->threads[i], NULL);
    if (h->have_poller)
        pthread_join(h->poller, NULL);
    pthread_mutex_lock(&h->lock);
    resume_waiting(h, INT64_MAX);
    pthread_mutex_unlock(&h->lock);
    if (h->mhd)
        MHD_stop_daemon(h->mhd);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    tyd_connlimit_free(h->clients);
    free(h->waiting);
    free(h->delayed);
    free(h->tls_cert);
    if (h->tls_key)
        explicit_bzero(h->tls_key, strlen(h->tls_key));
    free(h->tls_key);
    free(h);
    d->http = NULL;
}
