/* SPDX-License-Identifier: Apache-2.0
 * http.c: the HTTP side of trainyardd on libmicrohttpd: the listening socket (loopback only
 * unless tokens are configured), request bodies with a size limit, authentication, running
 * the handler of the API table's row (TYD_API in route.h) on the thread the row names, and
 * Google's JSON error form. Its state is struct tyd_http, owned by struct tyd.
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
#include "daemon.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "route.h"

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
/* Pending connections the kernel keeps while the event threads are busy (a burst of clients
 * opening at once, as the 50-client benchmark does, must not see ECONNREFUSED). */
#define LISTEN_BACKLOG 1024
/* Open connections at once; beyond it libmicrohttpd refuses new ones instead of running out
 * of file descriptors (the default soft limit is 1024). */
#define MAX_CONNECTIONS 1000u
/* Seconds an idle connection stays open. Followed log streams send a heartbeat every 30 s
 * (api-logs.c), well inside it; a client that sends nothing for 10 minutes is gone. */
#define CONNECTION_TIMEOUT_S 600u

struct req_ctx {
    struct ty_buf body;
    bool too_big;
    bool answered; /* a reply was queued before the body was read */
    /* A handler run by a worker while the connection is suspended. */
    enum { RC_INLINE, RC_QUEUED, RC_DONE } work;
    struct tyd_route rt;
    struct tyd_request rq;
    struct tyd_reply rep;
    struct req_ctx *next;
};

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

const char *tyd_query(const struct tyd_request *rq, const char *name)
{
    for (size_t i = 0; i < rq->nargs; i++)
        if (strcmp(rq->args[i].key, name) == 0)
            return rq->args[i].value;
    return NULL;
}

static const char *status_name(unsigned code)
{
    switch (code) {
    case 400:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 409:
        return "ALREADY_EXISTS";
    case 413:
        return "INVALID_ARGUMENT";
    case 405:
    case 501:
        return "UNIMPLEMENTED";
    case 503:
        return "UNAVAILABLE";
    default:
        return "INTERNAL";
    }
}

int tyd_error(struct tyd_reply *rep, unsigned code, const char *status, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    json_t *e;

    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    e = json_pack("{s:{s:i,s:s,s:s}}",
                  "error",
                  "code",
                  (int)code,
                  "message",
                  msg,
                  "status",
                  status ? status : status_name(code));
    if (rep->json)
        json_decref(rep->json);
    rep->json = e;
    rep->status = code;
    return 0;
}

/* The standard query parameters of Google APIs, accepted everywhere (and ignored, except
 * prettyPrint). */
static const char *const std_params[] = {
    "alt",
    "fields",
    "prettyPrint",
    "key",
    "quotaUser",
    "$.xgafv",
    "callback",
    "access_token",
    "oauth_token",
    "upload_protocol",
    "uploadType",
    NULL,
};

static bool in_list(const char *const *l, const char *k)
{
    for (; l && *l; l++)
        if (strcmp(*l, k) == 0)
            return true;
    return false;
}

int tyd_check_params(const struct tyd_request *rq, const char *const *own, struct tyd_reply *rep)
{
    const char *alt = tyd_query(rq, "alt");
    const char *bad = NULL;

    for (size_t i = 0; i < rq->nargs && !bad; i++)
        if (!in_list(std_params, rq->args[i].key) && !in_list(own, rq->args[i].key))
            bad = rq->args[i].key;
    if (bad) {
        tyd_error(rep,
                  400,
                  NULL,
                  "Invalid JSON payload received. Unknown name \"%.100s\": Cannot bind query "
                  "parameter. Field '%.100s' could not be found in request message.",
                  bad,
                  bad);
        return -1;
    }
    if (alt && strcmp(alt, "json") != 0) {
        tyd_error(rep, 400, NULL, "alt=%.40s is not supported: only alt=json", alt);
        return -1;
    }
    return 0;
}

/* --- listening ----------------------------------------------------------------------- */

static int parse_listen(const char *spec,
                        struct sockaddr_storage *ss,
                        socklen_t *len,
                        bool *loopback,
                        struct ty_error *err)
{
    _cleanup_free_ char *host = NULL;
    const char *colon;
    int64_t port;

    memset(ss, 0, sizeof(*ss));
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':')
            goto bad;
        host = xstrndup(spec + 1, (size_t)(close - spec - 1));
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon)
            goto bad;
        host = xstrndup(spec, (size_t)(colon - spec));
    }
    if (ty_parse_int64(colon + 1, 0, 65535, &port) < 0)
        goto bad;
    if (strcmp(host, "localhost") == 0) {
        free(host);
        host = xstrdup("127.0.0.1");
    }
    {
        struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
            in4->sin_family = AF_INET;
            in4->sin_port = htons((uint16_t)port);
            *len = sizeof(*in4);
            *loopback = (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
            return 0;
        }
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons((uint16_t)port);
            *len = sizeof(*in6);
            *loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
            return 0;
        }
    }
bad:
    return ty_error_set(err,
                        EINVAL,
                        "--listen: expected HOST:PORT with a numeric address or localhost, "
                        "e.g. 127.0.0.1:8080 or [::1]:8080 (got '%s')",
                        spec);
}

static int open_listener(struct tyd *d, struct ty_error *err)
{
    struct sockaddr_storage ss, got;
    socklen_t len = 0, glen = sizeof(got);
    bool loopback = false;
    int fd, one = 1, r;

    r = parse_listen(d->listen, &ss, &len, &loopback, err);
    if (r < 0)
        return r;
    if (!loopback && !d->auth)
        return ty_error_set(err,
                            EPERM,
                            "refusing to listen on %s without --auth-tokens: anyone who can "
                            "reach it could run programs as this user; give a tokens file or "
                            "listen on a loopback address",
                            d->listen);
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ty_error_set(err, errno, "socket: %s", strerror(errno));
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
        r = ty_error_set(err, errno, "cannot listen on %s: %s", d->listen, strerror(errno));
        close(fd);
        return r;
    }
    if (listen(fd, LISTEN_BACKLOG) < 0 || getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
        r = ty_error_set(err, errno, "cannot listen on %s: %s", d->listen, strerror(errno));
        close(fd);
        return r;
    }
    d->port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
                                             : ((struct sockaddr_in6 *)&got)->sin6_port);
    return fd;
}

/* --- requests ------------------------------------------------------------------------ */

static enum MHD_Result send_reply(struct tyd *d,
                                  struct MHD_Connection *c,
                                  const char *method,
                                  const char *url,
                                  struct tyd_reply *rep,
                                  const char *allow)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;
    const char *pp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "prettyPrint");
    bool pretty = !(pp && (strcmp(pp, "false") == 0 || strcmp(pp, "0") == 0));

    if (d->verbose)
        tyd_log("%s %s -> %u", method, url, rep->status);
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

/* Answer what routing and authentication decide before the body is read; returns true when
 * @rep holds such an answer. */
static bool pre_checks(struct tyd *d,
                       struct MHD_Connection *c,
                       const struct tyd_route *rt,
                       struct tyd_reply *rep)
{
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
    if (d->auth && rt->api && rt->api->auth == TYD_AUTH_PROJECT) {
        const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        switch (tyd_auth_check(d->auth, h, rt->project)) {
        case TYD_AUTH_OK:
            break;
        case TYD_AUTH_MISSING:
            tyd_error(rep,
                      401,
                      NULL,
                      "Request is missing required authentication credential. Expected "
                      "header 'Authorization: Bearer TOKEN'.");
            return true;
        case TYD_AUTH_BAD_TOKEN:
            tyd_error(rep, 401, NULL, "Request had invalid authentication credentials.");
            return true;
        case TYD_AUTH_FORBIDDEN:
            tyd_error(rep,
                      403,
                      NULL,
                      "Permission denied on project '%s': the token does not grant it.",
                      rt->project);
            return true;
        }
    }
    if (rt->method == TYD_UNIMPLEMENTED) {
        tyd_error(rep, 501, NULL, "%s", rt->detail);
        return true;
    }
    return false;
}

/* GET /healthz: the service answers. */
static void tyd_health(const struct tyd_request *rq, struct tyd_reply *rep)
{
    rep->status = 200;
    rep->json = json_pack("{s:s}", "status", "ok");
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

/* Resume every waiting stream (they look for news, and wait again if there is none). Call
 * with h->lock held. */
static void resume_waiting(struct tyd_http *h)
{
    for (size_t i = 0; i < h->nwaiting; i++)
        MHD_resume_connection(h->waiting[i]);
    h->nwaiting = 0;
}

static void *poller_main(void *arg)
{
    struct tyd_http *h = arg;

    for (;;) {
        struct timespec ts = {0, FOLLOW_POLL_MS * 1000000L};
        bool stop;
        (void)nanosleep(&ts, NULL);
        pthread_mutex_lock(&h->lock);
        resume_waiting(h);
        stop = h->stop;
        pthread_mutex_unlock(&h->lock);
        if (stop)
            return NULL;
    }
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

    if (!rc) {
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        int64_t n;
        rc = xcalloc(1, sizeof(*rc));
        *con_cls = rc;
        tyd_route(method, url, &rc->rt);
        if (pre_checks(d, c, &rc->rt, &rep)) {
            rc->answered = true;
            return send_reply(d, c, method, url, &rep, rc->rt.allow[0] ? rc->rt.allow : NULL);
        }
        if (cl && (ty_parse_int64(cl, 0, INT64_MAX, &n) < 0 || n > TYD_MAX_BODY)) {
            rc->answered = true;
            tyd_error(
                &rep, 413, NULL, "Request body too large: the limit is %d bytes.", TYD_MAX_BODY);
            return send_reply(d, c, method, url, &rep, NULL);
        }
        return MHD_YES;
    }
    if (rc->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (rc->work == RC_DONE) {
        rc->work = RC_INLINE;
        return send_reply(d, c, method, url, &rc->rep, NULL);
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
        return send_reply(d, c, method, url, &rep, NULL);
    }
    rc->rq = (struct tyd_request){
        .d = d,
        .conn = c,
        .project = rc->rt.project,
        .job = rc->rt.job,
        .body = rc->body.len ? ty_buf_str(&rc->body) : "",
        .body_len = rc->body.len,
    };
    (void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, copy_arg, &rc->rq);
    if (atomic_load(&d->stopping)) {
        tyd_error(&rep, 503, NULL, "trainyardd is shutting down");
        return send_reply(d, c, method, url, &rep, NULL);
    }
    if (rc->rt.api->runs_on == TYD_WORKER) {
        if (queue_work(d->http, rc))
            return MHD_YES;
        tyd_error(&rep, 503, NULL, "trainyardd is shutting down");
        return send_reply(d, c, method, url, &rep, NULL);
    }
    run_handler(&rc->rt, &rc->rq, &rep);
    return send_reply(d, c, method, url, &rep, NULL);
}

static void on_completed(void *cls,
                         struct MHD_Connection *c,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req_ctx *rc = *con_cls;
    if (!rc)
        return;
    ty_buf_release(&rc->body);
    free_args(&rc->rq);
    json_decref(rc->rep.json);
    free(rc);
    *con_cls = NULL;
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    tyd_log("http: %s", msg);
}

/* libmicrohttpd's unescape callback: tyd_url_unescape (route.h), which keeps "%00". */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    return tyd_url_unescape(s);
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
    int fd = open_listener(d, err);

    if (fd < 0)
        return fd;
    h = xcalloc(1, sizeof(*h));
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    d->http = h;
    if (start_threads(h) < 0) {
        close(fd);
        tyd_http_stop(d);
        return ty_error_set(err, EAGAIN, "cannot start the request threads");
    }
    h->mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                                  MHD_USE_ERROR_LOG | MHD_USE_TURBO,
                              0,
                              NULL,
                              NULL,
                              on_request,
                              d,
                              MHD_OPTION_EXTERNAL_LOGGER,
                              mhd_log,
                              NULL,
                              MHD_OPTION_LISTEN_SOCKET,
                              (MHD_socket)fd,
                              MHD_OPTION_THREAD_POOL_SIZE,
                              event_threads,
                              MHD_OPTION_UNESCAPE_CALLBACK,
                              unescape,
                              NULL,
                              MHD_OPTION_NOTIFY_COMPLETED,
                              on_completed,
                              d,
                              MHD_OPTION_CONNECTION_LIMIT,
                              MAX_CONNECTIONS,
                              MHD_OPTION_CONNECTION_TIMEOUT,
                              CONNECTION_TIMEOUT_S,
                              MHD_OPTION_THREAD_STACK_SIZE,
                              (size_t)THREAD_STACK,
                              MHD_OPTION_END);
    if (!h->mhd) {
        close(fd);
        tyd_http_stop(d);
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
    resume_waiting(h);
    pthread_mutex_unlock(&h->lock);
    if (h->mhd)
        MHD_stop_daemon(h->mhd);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    free(h->waiting);
    free(h);
    d->http = NULL;
}
