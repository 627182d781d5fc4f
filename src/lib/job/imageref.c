/* SPDX-License-Identifier: Apache-2.0
 * imageref.c: the container image reference grammar of imageref.h, by hand: each part is
 * checked on its own so that a refusal can say which part broke which rule. */
#include "imageref.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "utf8.h"

#define TAG_MAX  128 /* distribution's tag rule: [\w][\w.-]{0,127} */
#define SHOW_MAX 128 /* the most of a part a message quotes */

/* The length to quote of a part of @n bytes (a "%.*s" precision). */
static int shown(ptrdiff_t n)
{
    return (int)(n > SHOW_MAX ? SHOW_MAX : n);
}

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
    return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool hex_digit(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool word_char(char c)
{
    return alnum(c) || c == '_';
}

/* Is s[0..n) a path component: runs of lowercase letters and digits, each two joined by one
 * separator ('.', '_', '__' or a run of '-')? */
static bool path_component(const char *s, size_t n)
{
    size_t i = 0;

    for (;;) {
        size_t run = i;
        while (i < n && lower_alnum(s[i]))
            i++;
        if (i == run) /* empty, or a separator at an end or after another */
            return false;
        if (i == n)
            return true;
        if (s[i] == '.')
            i++;
        else if (s[i] == '_')
            i += i + 1 < n && s[i + 1] == '_' ? 2 : 1;
        else if (s[i] == '-')
            while (i < n && s[i] == '-')
                i++;
        else
            return false;
    }
}

/* Is s[0..n) a host name component: letters and digits, with '-' inside only? */
static bool host_component(const char *s, size_t n)
{
    if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* Is s[0..n) a registry: a host name (or IPv4 address), or [IPv6], then an optional :PORT? */
static bool registry(const char *s, size_t n)
{
    size_t host_end;

    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || close == s + 1)
            return false;
        for (const char *p = s + 1; p < close; p++)
            if (!hex_digit(*p) && *p != ':')
                return false;
        host_end = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', n);
        host_end = colon ? (size_t)(colon - s) : n;
        for (size_t i = 0, start = 0; i <= host_end; i++)
            if (i == host_end || s[i] == '.') {
                if (!host_component(s + start, i - start))
                    return false;
                start = i + 1;
            }
    }
    if (host_end == n)
        return true;
    if (s[host_end] != ':' || host_end + 1 == n)
        return false;
    for (size_t i = host_end + 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* Could the first component s[0..n) of a longer name only be meant as a registry (as Docker
 * reads one: it has a '.' or a ':', is "localhost", or has an uppercase letter; or it opens
 * with '[', as an IPv6 address does)? */
static bool meant_as_registry(const char *s, size_t n)
{
    if (memchr(s, '.', n) || memchr(s, ':', n) || (n > 0 && s[0] == '[') ||
        (n == 9 && memcmp(s, "localhost", 9) == 0))
        return true;
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            return true;
    return false;
}

static bool tag_ok(const char *s, size_t n)
{
    if (n == 0 || n > TAG_MAX || !word_char(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!word_char(s[i]) && s[i] != '.' && s[i] != '-')
            return false;
    return true;
}

/* ALGORITHM:HEX as a pull takes it: the grammar allows any algorithm and 32 or more hex
 * digits, but the digest parser behind it (go-digest, in Docker and in Podman's
 * containers/image) knows only these, each with its exact length in lowercase hex, and a
 * truncated or uppercase digest fails the pull. */
static const struct {
    const char *name;
    size_t hex;
} DIGESTS[] = {{"sha256", 64}, {"sha384", 96}, {"sha512", 128}};

static bool digest_ok(const char *s)
{
    const char *colon = strchr(s, ':');

    if (!colon)
        return false;
    for (size_t k = 0; k < sizeof(DIGESTS) / sizeof(DIGESTS[0]); k++) {
        if ((size_t)(colon - s) != strlen(DIGESTS[k].name) ||
            memcmp(s, DIGESTS[k].name, (size_t)(colon - s)) != 0)
            continue;
        if (strlen(colon + 1) != DIGESTS[k].hex)
            return false;
        for (const char *p = colon + 1; *p; p++)
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                return false;
        return true;
    }
    return false;
}

static int fail(char *why, size_t whylen, const char *fmt, ...) TY_PRINTF(3, 4);

static int fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    (void)ty_ctrl_scrub(why); /* the parts quoted are the user's */
    return -EINVAL;
}

/* Check the components of the name s[0..n): a registry first (when there are more), then
 * path components. */
static int check_name(const char *s, size_t n, char *why, size_t whylen)
{
    const char *slash = memchr(s, '/', n), *p = s, *end = s + n;

    /* A first component that can only be meant as a registry is judged as one, as Docker's
     * splitDockerDomain reads it: "a.b_c/img" is a bad registry here, though the bare grammar
     * would take a.b_c as a path component of Docker Hub. */
    if (slash && registry(s, (size_t)(slash - s)))
        p = slash + 1;
    else if (slash && meant_as_registry(s, (size_t)(slash - s)))
        return fail(why,
                    whylen,
                    "the registry '%.*s' is not a host name or address with an optional :PORT",
                    shown(slash - s),
                    s);
    for (;;) {
        const char *q = memchr(p, '/', (size_t)(end - p));
        size_t len = (size_t)((q ? q : end) - p);
        if (len == 0)
            return fail(why, whylen, "a path component is empty ('//', or '/' at an end)");
        if (!path_component(p, len))
            return fail(why,
                        whylen,
                        "'%.*s' is not a path component: lowercase letters and digits, "
                        "separated by '.', '_', '__' or '-'",
                        shown((ptrdiff_t)len),
                        p);
        if (!q)
            return 0;
        p = q + 1;
    }
}

int ty_image_ref_check(const char *ref, char *why, size_t whylen)
{
    const char *at = strchr(ref, '@'), *end = at ? at : ref + strlen(ref);
    const char *colon = NULL, *name_end;

    why[0] = '\0';
    if (!*ref)
        return fail(why, whylen, "it is empty");
    for (const char *p = ref; p < end; p++) {
        if (*p == '/') /* a ':' before a '/' is a registry's port, not a tag */
            colon = NULL;
        else if (*p == ':')
            colon = p;
    }
    name_end = colon ? colon : end;
    if (name_end == ref)
        return fail(why, whylen, "the name before the tag or digest is empty");
    if ((size_t)(name_end - ref) > TY_IMAGE_NAME_MAX)
        return fail(why,
                    whylen,
                    "the name (registry and path) is %zu characters, over %d",
                    (size_t)(name_end - ref),
                    TY_IMAGE_NAME_MAX);
    if (colon && !tag_ok(colon + 1, (size_t)(end - colon - 1)))
        return fail(why,
                    whylen,
                    "the tag '%.*s' is not 1 to %d letters, digits, '_', '.' and '-' starting "
                    "with a letter, digit or '_'",
                    shown(end - colon - 1),
                    colon + 1,
                    TAG_MAX);
    if (at && !digest_ok(at + 1))
        return fail(why,
                    whylen,
                    "the digest '%.*s' is not sha256:, sha384: or sha512: and its 64, 96 or "
                    "128 lowercase hexadecimal digits",
                    SHOW_MAX,
                    at + 1);
    return check_name(ref, (size_t)(name_end - ref), why, whylen);
}

/* ---- registries: which one an image names, and which may be pulled from over plain HTTP */

char *ty_image_registry(const char *image)
{
    const char *slash = strchr(image, '/');

    if (!slash || !meant_as_registry(image, (size_t)(slash - image)))
        return NULL;
    return xstrndup(image, (size_t)(slash - image));
}

bool ty_registry_on_loopback(const char *hostport)
{
    const char *port = NULL;
    char host[64];
    struct in_addr a;
    size_t len;

    if (hostport[0] == '[') {
        if (strncmp(hostport, "[::1]", 5) != 0 || (hostport[5] != '\0' && hostport[5] != ':'))
            return false;
        port = hostport[5] == ':' ? hostport + 6 : NULL;
    } else {
        const char *colon = strchr(hostport, ':');
        len = colon ? (size_t)(colon - hostport) : strlen(hostport);
        port = colon ? colon + 1 : NULL;
        if (len == 0 || len >= sizeof(host))
            return false;
        memcpy(host, hostport, len);
        host[len] = '\0';
    }
    if (port && (!*port || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port)))
        return false;
    if (hostport[0] == '[')
        return true;
    return strcmp(host, "localhost") == 0 ||
           (inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127);
}

int ty_insecure_registries_check(const char *list, char *why, size_t whylen)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        const char *s = p;
        size_t len = n;

        while (len > 0 && *s == ' ')
            s++, len--;
        while (len > 0 && s[len - 1] == ' ')
            len--;
        p += n + (p[n] == ',');
        if (len == 0)
            continue;
        char entry[300];
        if (len >= sizeof(entry) || !registry(s, len))
            return fail(why,
                        whylen,
                        "'%.*s' is not a registry's HOST[:PORT] (no scheme, no path)",
                        shown((ptrdiff_t)len),
                        s);
        memcpy(entry, s, len);
        entry[len] = '\0';
        if (!ty_registry_on_loopback(entry))
            return fail(why,
                        whylen,
                        "'%s' is not on loopback: plain-HTTP registries are allowed only on "
                        "127.0.0.0/8, localhost or [::1]",
                        entry);
    }
    return 0;
}
