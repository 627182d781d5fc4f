/* SPDX-License-Identifier: Apache-2.0
 * http-front.c: the front door of trainyardd's HTTP server (http-internal.h): connections
 * counted per client and refused over the limit (connlimit.h), the checks a request passes
 * before its body is read (web pages: guard.h; routing; authentication and its backoff), and
 * the headers of every API answer. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "alloc.h"
#include "connlimit.h"
#include "http-internal.h"
#include "parse.h"
#include "timeutil.h"

/* The headers every API answer carries (docs/security.md): it is data for a program, never a
 * page (no script, no framing, no type guessing), and it may hold a project's jobs and logs,
 * which no browser or proxy is to keep. The dashboard's files set their own. */
void tyd_api_headers(struct MHD_Response *resp)
{
    if (MHD_get_response_header(resp, "Content-Security-Policy"))
        return; /* a dashboard file */
    (void)MHD_add_response_header(
        resp, "Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
    (void)MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    (void)MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    (void)MHD_add_response_header(resp, "Cache-Control", "no-store");
}

/* The request's client (connlimit.h: an address; on loopback the local user owning the
 * socket), as tyd_on_connection found it, into @buf (TYD_CLIENT_KEY_MAX): what the failure
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
bool tyd_web_checks(struct tyd *d, struct MHD_Connection *c, struct tyd_reply *rep)
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
bool tyd_pre_checks(struct tyd *d,
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
            tyd_auth_succeeded(d->auth, addr, project);
            break;
        case TYD_AUTH_MISSING:
            tyd_error(rep,
                      401,
                      NULL,
                      "Request is missing required authentication credential. Expected "
                      "header 'Authorization: Bearer TOKEN'.");
            return true;
        case TYD_AUTH_BAD_TOKEN:
            *delay = tyd_auth_failed(d->auth, addr, project, ty_mono_usec());
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

/* libmicrohttpd's connection notices: at its start a connection is counted under its
 * client's key (kept as the connection's socket context) if the client has room, else shut
 * down at once (libmicrohttpd reads the end and closes it); at its close the count drops.
 * The key of a refused connection is kept with a leading '!': nothing to drop. */
void tyd_on_connection(void *cls,
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
