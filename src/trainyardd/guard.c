/* SPDX-License-Identifier: Apache-2.0
 * guard.c: Host, Origin and Content-Type checks and the failed-authentication backoff of
 * trainyardd's HTTP front (guard.h), pure functions. */
#include "guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"

/* Longest host name (DNS: 253 characters) and more, for the copy of an IPv6 literal. */
#define HOST_MAX 260

/* Split @text (HOST[:PORT], [V6][:PORT]) into @host (brackets removed) and *port
 * (@default_port without one). @is_ip: the host is an IP literal. False when malformed. */
static bool split_host(
    const char *text, size_t len, unsigned default_port, char *host, unsigned *port, bool *is_ip)
{
    const char *end = text + len, *colon;
    bool bracket = len > 0 && text[0] == '[';
    size_t hl;
    int64_t p;

    *is_ip = false;
    if (len == 0)
        return false;
    if (bracket) {
        const char *close = memchr(text, ']', len);
        if (!close)
            return false;
        hl = (size_t)(close - text - 1);
        colon = close + 1 < end ? close + 1 : NULL;
        if (colon && *colon != ':')
            return false;
        text++;
    } else {
        colon = memchr(text, ':', len);
        hl = colon ? (size_t)(colon - text) : len;
        if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
            return false; /* a bare IPv6 address is not a Host */
    }
    if (hl == 0 || hl >= HOST_MAX)
        return false;
    memcpy(host, text, hl);
    host[hl] = '\0';
    if (colon) {
        char num[8];
        size_t nl = (size_t)(end - colon - 1);
        if (nl == 0 || nl >= sizeof(num))
            return false;
        memcpy(num, colon + 1, nl);
        num[nl] = '\0';
        if (ty_parse_int64(num, 1, 65535, &p) < 0)
            return false;
        *port = (unsigned)p;
    } else {
        *port = default_port;
    }
    {
        unsigned char buf[sizeof(struct in6_addr)];
        if (bracket)
            *is_ip = inet_pton(AF_INET6, host, buf) == 1;
        else
            *is_ip = inet_pton(AF_INET, host, buf) == 1;
        if (bracket && !*is_ip)
            return false;
    }
    for (const char *c = host; *c; c++)
        if (*c <= ' ' || *c == '/' || *c == '@' || *c == '\\' || (unsigned char)*c >= 0x7f)
            return false;
    return true;
}

static bool
allowed(const struct tyd_host_rules *r, const char *text, size_t len, unsigned default_port)
{
    char host[HOST_MAX], xhost[HOST_MAX];
    unsigned port, xport;
    bool ip, xip;

    for (const char *const *x = r->extra; x && *x; x++)
        if (strcmp(*x, "*") == 0)
            return true;
    if (!split_host(text, len, default_port, host, &port, &ip))
        return false;
    if ((ip || strcasecmp(host, "localhost") == 0) && port == r->port)
        return true;
    for (const char *const *x = r->extra; x && *x; x++) {
        bool with_port = strchr(*x, ']') ? strstr(*x, "]:") != NULL : strchr(*x, ':') != NULL;
        if (!split_host(*x, strlen(*x), 0, xhost, &xport, &xip))
            continue;
        if (strcasecmp(host, xhost) == 0 && (!with_port || xport == port))
            return true;
    }
    return false;
}

bool tyd_host_allowed(const struct tyd_host_rules *r, const char *host)
{
    if (!host)
        return false;
    return allowed(r, host, strlen(host), r->tls ? 443 : 80);
}

bool tyd_origin_allowed(const struct tyd_host_rules *r, const char *origin, const char *host)
{
    const char *scheme = r->tls ? "https://" : "http://";
    size_t sl = strlen(scheme), len;
    unsigned default_port = r->tls ? 443 : 80, oport, hport;
    char ohost[HOST_MAX], hhost[HOST_MAX];
    bool oip, hip;

    if (!origin || !host || strncasecmp(origin, scheme, sl) != 0)
        return false;
    origin += sl;
    len = strlen(origin);
    if (len > 0 && origin[len - 1] == '/')
        len--; /* not sent by browsers, harmless */
    if (memchr(origin, '/', len))
        return false;
    /* the page's own origin is the scheme, host and port the browser reached the daemon at,
     * which it also sent as Host: any other (another IP address with the same port
     * included) is another site's page */
    if (!split_host(origin, len, default_port, ohost, &oport, &oip) ||
        !split_host(host, strlen(host), default_port, hhost, &hport, &hip))
        return false;
    return oport == hport && oip == hip && strcasecmp(ohost, hhost) == 0 &&
           allowed(r, host, strlen(host), default_port);
}

bool tyd_content_type_json(const char *ct)
{
    static const char json[] = "application/json";
    size_t n;

    if (!ct)
        return false;
    ct += strspn(ct, " \t");
    if (strncasecmp(ct, json, sizeof(json) - 1) != 0)
        return false;
    ct += sizeof(json) - 1;
    n = strspn(ct, " \t");
    return ct[n] == '\0' || ct[n] == ';';
}

int64_t tyd_backoff_usec(unsigned failures)
{
    int64_t d = TYD_BACKOFF_BASE_USEC;

    if (failures <= TYD_BACKOFF_FREE)
        return 0;
    for (unsigned i = TYD_BACKOFF_FREE + 1; i < failures && d < TYD_BACKOFF_MAX_USEC; i++)
        d *= 2;
    return d < TYD_BACKOFF_MAX_USEC ? d : TYD_BACKOFF_MAX_USEC;
}
