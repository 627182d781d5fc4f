/* SPDX-License-Identifier: Apache-2.0
 * guard.h: the pure checks of trainyardd's HTTP front that keep web pages and password
 * guessers out (docs/service.md#limits-and-web-pages): is a request's Host one of the
 * daemon's own names (DNS rebinding), is its Origin the daemon's own origin (a cross-site
 * request from a page in a browser), is a body declared as JSON, and how long to hold back
 * the answer to one more failed authentication. No I/O and no state: http.c and auth.c call
 * them, tests/unit/test-guard.c tests them. */
#ifndef TYD_GUARD_H
#define TYD_GUARD_H

#include <stdbool.h>
#include <stdint.h>

/* What the daemon answers to. */
struct tyd_host_rules {
    unsigned port;            /* the port bound */
    bool tls;                 /* HTTPS: origins are https://, the default port 443 */
    const char *const *extra; /* --allowed-hosts: "NAME" (any port), "NAME:PORT", or "*"
                               * (any Host at all); NULL-terminated, may be NULL */
};

/* Is @host (a Host header: NAME, NAME:PORT, IPv4[:PORT], [IPv6][:PORT]) the daemon's own?
 * Yes for an IP literal or "localhost" with the daemon's port (a Host without a port means
 * 80, or 443 with TLS), and for a name of @r->extra. A DNS-rebinding page has its own name
 * in Host, which is none of these. Names compare without case; NULL or "" is refused. */
bool tyd_host_allowed(const struct tyd_host_rules *r, const char *host);

/* Is @origin (an Origin header, "SCHEME://HOST[:PORT]") the daemon's own origin, the one a
 * page of the daemon itself (the dashboard) sends: the daemon's scheme (http, or https with
 * TLS) and the same host and port as the request's @host header, which tyd_host_allowed
 * accepts? Host names compare without case, a missing port is the scheme's. A page of
 * another site sends its own origin: another name, or another address with the daemon's
 * port (a page served from any IP address), and is refused, as are "null", a NULL @host
 * (no browser omits it) and anything malformed, --allowed-hosts=* or not. */
bool tyd_origin_allowed(const struct tyd_host_rules *r, const char *origin, const char *host);

/* Is @content_type (a Content-Type header, may be NULL) application/json, parameters such
 * as "; charset=UTF-8" allowed, without case? */
bool tyd_content_type_json(const char *content_type);

/* Failed authentications from one address that are answered at once; after them each
 * further failure waits TYD_BACKOFF_BASE_USEC, doubling up to TYD_BACKOFF_MAX_USEC. A
 * failure older than TYD_BACKOFF_WINDOW_USEC is forgotten. */
#define TYD_BACKOFF_FREE        5
#define TYD_BACKOFF_BASE_USEC   (1000 * INT64_C(1000))
#define TYD_BACKOFF_MAX_USEC    (16 * INT64_C(1000000))
#define TYD_BACKOFF_WINDOW_USEC (600 * INT64_C(1000000))

/* How long to delay the answer to an address's @failures-th failed authentication (1 for
 * the first) in a row: 0 for the first TYD_BACKOFF_FREE, then 1 s, 2 s, 4 s, 8 s, 16 s. */
int64_t tyd_backoff_usec(unsigned failures);

#endif
