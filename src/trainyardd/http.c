/* SPDX-License-Identifier: Apache-2.0
 * http.c: the HTTP side of trainyardd on libmicrohttpd: the listening socket (loopback only
 * unless tokens are configured), request bodies with a size limit, authentication, running
 * the handler of the API table's row (TYD_API in route.h) on the thread the row names (its
 * query parameters and Google's JSON error form: params.c). Its state is struct tyd_http
 * (http-internal.h), owned by struct tyd; its front door (connections per client, the web
 * and authentication checks, the headers of every answer) is http-front.c.
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
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "connlimit.h"
#include "daemon.h"
#include "guard.h"
#include "http-internal.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "route.h"
#include "timeutil.h"
#include "tunnel.h"
#include "utf8.h"

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
    /* the method the request stands for: its own, or the one its X-HTTP-Method-Override
     * names (tunnel.h); tunnel_get: a POST standing for a GET, its query in a form body */
    const char *method;
    bool tunnel_get;
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
    bool pretty = tyd_wants_pretty(&rc->rq, c);

    if (d->verbose) { /* the path decoded: a %0A in it must not start a line of the log */
        _cleanup_free_ char *shown = xstrdup(url);
        (void)ty_ctrl_scrub(shown);
        tyd_log("%s %s -> %u", method, shown, rep->status);
    }
    tyd_metrics_count_request(method, &rc->rt, rep->status, ty_mono_usec() - rc->arrived);
    if (rep->stream) {
        tyd_api_headers(rep->stream);
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
    tyd_api_headers(resp);
    if (rep->status == 401)
        (void)MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"trainyard\"");
    if (allow)
        (void)MHD_add_response_header(resp, "Allow", allow);
    ret = MHD_queue_response(c, rep->status, resp);
    MHD_destroy_response(resp);
    return ret;
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

/* How a request says where its body ends: Content-Length (how many, and whether they
 * agree), Transfer-Encoding, and header names with blanks (`Content-Length : 2`). */
struct framing {
    unsigned n_length;
    const char *length;
    bool lengths_differ, chunked, blank_in_name;
};

static enum MHD_Result
on_framing_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct framing *f = cls;

    (void)kind;
    if (strcasecmp(key, "Content-Length") == 0) {
        if (f->n_length++ && strcmp(f->length, value ? value : "") != 0)
            f->lengths_differ = true;
        f->length = value ? value : "";
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        f->chunked = true;
    }
    if (key[strcspn(key, " \t")])
        f->blank_in_name = true;
    return MHD_YES;
}

/* A request whose end is ambiguous (RFC 9112 section 6.3: lengths that disagree, a length
 * and a transfer coding, a blank before a header's colon): a proxy in front and this
 * service could read another request into its body (request smuggling). Says why in @rep. */
static bool ambiguous_framing(struct MHD_Connection *c, struct tyd_reply *rep)
{
    struct framing f = {0};

    (void)MHD_get_connection_values(c, MHD_HEADER_KIND, on_framing_header, &f);
    if (!f.lengths_differ && !(f.n_length && f.chunked) && !f.blank_in_name)
        return false;
    tyd_error(rep,
              400,
              NULL,
              "the request's end is ambiguous: %s",
              f.lengths_differ ? "Content-Length headers that disagree"
              : f.blank_in_name
                  ? "a header name with a blank (as 'Content-Length : 2'; RFC 9112 refuses it)"
                  : "both Content-Length and Transfer-Encoding");
    return true;
}

/* A POST with X-HTTP-Method-Override: rc->method becomes the method it names. True when
 * the header names none (@rep: 400). */
static bool overridden(struct MHD_Connection *c, struct req_ctx *rc, struct tyd_reply *rep)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-HTTP-Method-Override");

    if (!v)
        return false;
    rc->method = tyd_override_method(v);
    if (!rc->method) {
        rc->method = "POST";
        tyd_error(rep,
                  400,
                  NULL,
                  "X-HTTP-Method-Override: '%.40s' is not a method a POST can stand for (GET, "
                  "PUT, PATCH or DELETE)",
                  v);
        return true;
    }
    rc->tunnel_get = strcmp(rc->method, "GET") == 0;
    return false;
}

static void add_arg(void *ctx, const char *key, const char *value)
{
    (void)copy_arg(ctx, MHD_GET_ARGUMENT_KIND, key, value);
}

/* The whole body is in: decode its Content-Encoding, and read the query of a POST standing
 * for a GET from it (after the URL's own). Returns false with @rep filled when it cannot. */
static bool finish_body(struct MHD_Connection *c, struct req_ctx *rc, struct tyd_reply *rep)
{
    const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");

    switch (tyd_decode_body(ce, &rc->body, TYD_MAX_BODY)) {
    case 0:
        break;
    case -E2BIG:
        tyd_error(rep,
                  413,
                  NULL,
                  "Request body too large: the limit is %d bytes, after gzip decoding.",
                  TYD_MAX_BODY);
        return false;
    case -ENOTSUP:
        tyd_error(rep,
                  400,
                  NULL,
                  "Content-Encoding '%.40s' is not supported: send the body as is or with "
                  "'Content-Encoding: gzip'.",
                  ce);
        return false;
    default:
        tyd_error(rep, 400, NULL, "The request body is not valid gzip (Content-Encoding: gzip).");
        return false;
    }
    if (!rc->tunnel_get || rc->body.len == 0)
        return true;
    if (!tyd_content_type_form(ct)) {
        tyd_error(rep,
                  400,
                  NULL,
                  "Invalid Content-Type '%.100s': the body of a POST with "
                  "'X-HTTP-Method-Override: GET' is the query, sent with 'Content-Type: "
                  "application/x-www-form-urlencoded'.",
                  ct ? ct : "(none)");
        return false;
    }
    if (tyd_form_parse(rc->body.data, rc->body.len, add_arg, &rc->rq) < 0) {
        tyd_error(rep,
                  400,
                  NULL,
                  "The query in the request body is not valid form encoding (a '%%' must be "
                  "followed by two hex digits, and none may decode to NUL).");
        return false;
    }
    ty_buf_reset(&rc->body); /* the body was the query; the GET has none */
    return true;
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
    rc->method = method; /* until an X-HTTP-Method-Override says otherwise, below */
    *con_cls = rc;
    if (ambiguous_framing(c, &rep) || tyd_web_checks(d, c, &rep)) {
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
    if (strcmp(method, "POST") == 0 && overridden(c, rc, &rep)) {
        rc->answered = true;
        return send_reply(d, rc, c, method, url, &rep, NULL);
    }
    tyd_route(rc->method, url, &rc->rt);
    if (tyd_pre_checks(d, c, rc->method, &rc->rt, &rep, &delay)) {
        if (delay > 0) {
            /* read (and drop) the body, then hold the 401 back */
            rc->delay_until = ty_mono_usec() + delay;
            rc->rep = rep;
            rc->rq.conn = c;
            return MHD_YES;
        }
        rc->answered = true;
        return send_reply(d, rc, c, rc->method, url, &rep, rc->rt.allow[0] ? rc->rt.allow : NULL);
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
    method = rc->method; /* what a POST with X-HTTP-Method-Override stands for */
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
    };
    (void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, copy_arg, &rc->rq);
    if (!finish_body(c, rc, &rep))
        return send_reply(d, rc, c, method, url, &rep, NULL);
    rc->rq.body = rc->body.len ? ty_buf_str(&rc->body) : "";
    rc->rq.body_len = rc->body.len;
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

    if (fd == 0 && d->listen_fd >= 0) { /* opened before recovery (serve) */
        fd = d->listen_fd;
        d->listen_fd = -1;
    } else if (fd == 0) {
        fd = tyd_listen_open(d, err);
    }
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
    /* MHD_USE_TURBO only over plain HTTP: with TLS (libmicrohttpd 0.9.75) a connection that
     * never finished its handshake was never timed out, nor closed once its client had gone,
     * so silent connections took every place of their client until a restart */
    h->mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                                  MHD_USE_ERROR_LOG | (cert ? MHD_USE_TLS : MHD_USE_TURBO),
                              0,
                              NULL,
                              NULL,
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
                              tyd_on_connection,
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
