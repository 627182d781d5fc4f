/* SPDX-License-Identifier: Apache-2.0
 * http.c: the HTTP side of trainyardd on libmicrohttpd: the listening socket (loopback only
 * unless tokens are configured), request bodies with a size limit, authentication, routing
 * to the API handlers, and Google's JSON error form. One thread per connection, so a
 * handler may block (a followed log stream does). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
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

static struct MHD_Daemon *mhd;

struct req_ctx {
    struct ty_buf body;
    bool too_big;
    bool answered; /* a reply was queued before the body was read */
};

const char *tyd_query(const struct tyd_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
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

struct param_check {
    const char *const *own;
    const char *bad;
};

static bool in_list(const char *const *l, const char *k)
{
    for (; l && *l; l++)
        if (strcmp(*l, k) == 0)
            return true;
    return false;
}

static enum MHD_Result check_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *v)
{
    struct param_check *pc = cls;
    if (in_list(std_params, key) || in_list(pc->own, key))
        return MHD_YES;
    pc->bad = key;
    return MHD_NO;
}

int tyd_check_params(const struct tyd_request *rq, const char *const *own, struct tyd_reply *rep)
{
    struct param_check pc = {.own = own};
    const char *alt = tyd_query(rq, "alt");

    (void)MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, check_one, &pc);
    if (pc.bad) {
        tyd_error(rep,
                  400,
                  NULL,
                  "Invalid JSON payload received. Unknown name \"%.100s\": Cannot bind query "
                  "parameter. Field '%.100s' could not be found in request message.",
                  pc.bad,
                  pc.bad);
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
    if (listen(fd, 1024) < 0 || getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
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
        json_decref(rep->json);
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
    if (d->auth && rt->method != TYD_HEALTH) {
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

static void run_handler(const struct tyd_route *rt, struct tyd_request *rq, struct tyd_reply *rep)
{
    switch (rt->method) {
    case TYD_HEALTH:
        rep->status = 200;
        rep->json = json_pack("{s:s}", "status", "ok");
        break;
    case TYD_JOBS_CREATE:
        tyd_jobs_create(rq, rep);
        break;
    case TYD_JOBS_LIST:
        tyd_jobs_list(rq, rep);
        break;
    case TYD_JOBS_GET:
        tyd_jobs_get(rq, rep);
        break;
    case TYD_JOBS_PATCH:
        tyd_jobs_patch(rq, rep);
        break;
    case TYD_JOBS_CANCEL:
        tyd_jobs_cancel(rq, rep);
        break;
    case TYD_JOBS_LOGS:
        tyd_jobs_logs(rq, rep);
        break;
    default:
        tyd_error(rep, 500, NULL, "no handler for %s", tyd_method_name(rt->method));
    }
    if (!rep->json && !rep->stream)
        tyd_error(rep, 500, NULL, "internal error: the handler gave no answer");
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
    struct tyd_route rt;
    struct tyd_reply rep = {0};

    if (!rc) {
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        int64_t n;
        rc = xcalloc(1, sizeof(*rc));
        *con_cls = rc;
        tyd_route(method, url, &rt);
        if (pre_checks(d, c, &rt, &rep)) {
            rc->answered = true;
            return send_reply(d, c, method, url, &rep, rt.allow);
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
    tyd_route(method, url, &rt);
    {
        struct tyd_request rq = {
            .d = d,
            .conn = c,
            .project = rt.project,
            .job = rt.job,
            .body = rc->body.len ? ty_buf_str(&rc->body) : "",
            .body_len = rc->body.len,
        };
        if (atomic_load(&d->stopping))
            tyd_error(&rep, 503, NULL, "trainyardd is shutting down");
        else
            run_handler(&rt, &rq, &rep);
    }
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

int tyd_http_start(struct tyd *d, struct ty_error *err)
{
    int fd = open_listener(d, err);
    if (fd < 0)
        return fd;
    mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                               MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_TURBO,
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
                           MHD_OPTION_NOTIFY_COMPLETED,
                           on_completed,
                           d,
                           MHD_OPTION_CONNECTION_LIMIT,
                           (unsigned)1000,
                           MHD_OPTION_CONNECTION_TIMEOUT,
                           (unsigned)600,
                           MHD_OPTION_THREAD_STACK_SIZE,
                           (size_t)(256 * 1024),
                           MHD_OPTION_END);
    if (!mhd) {
        close(fd);
        return ty_error_set(err, EIO, "cannot start the HTTP server on %s", d->listen);
    }
    return 0;
}

void tyd_http_stop(struct tyd *d)
{
    atomic_store(&d->stopping, true);
    if (mhd)
        MHD_stop_daemon(mhd);
    mhd = NULL;
}
