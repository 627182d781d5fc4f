/* SPDX-License-Identifier: Apache-2.0
 * route.c: finding the row of the API table (TYD_API in route.h) that a request's method and
 * path name, checking the ids in the path; and the page tokens of jobs.list. */
#include "route.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "macro.h"
#include "spec.h"

static bool ascii_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool ascii_alnum(char c)
{
    return ascii_letter(c) || (c >= '0' && c <= '9');
}

/* Whether the @len bytes of @s are 1 to @max characters: the first a letter or digit, each
 * other a letter, a digit or one of @punct. */
static int valid_name(const char *s, size_t len, size_t max, const char *punct)
{
    if (len == 0 || len > max || !ascii_alnum(s[0]))
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!ascii_alnum(s[i]) && (!s[i] || !strchr(punct, s[i])))
            return 0;
    return 1;
}

int tyd_valid_job_id(const char *id, size_t len)
{
    return ty_job_id_ok(id, len);
}

int tyd_valid_project_id(const char *id, size_t len)
{
    return ty_project_id_ok(id, len);
}

int tyd_valid_asset_name(const char *name, size_t len)
{
    return valid_name(name, len, TYD_ASSET_MAX, "-._");
}

/* The rows of TYD_API as the router sees them (the handlers are http.c's business). */
#define ROW(http, pattern, what, handler, runs_on, auth)                                           \
    {http, pattern, TYD_##what, TYD_##runs_on, TYD_AUTH_##auth},
static const struct tyd_api_row rows[] = {TYD_API(ROW)};
#undef ROW

/* The ids a pattern may hold. */
struct id_kind {
    const char *placeholder; /* "{project}" */
    const char *what;        /* for messages */
    const char *stops;       /* characters that end the id in a path */
    int (*valid)(const char *id, size_t len);
    const char *rule;
};
static const struct id_kind id_kinds[] = {
    {"{project}", "project id", "/", tyd_valid_project_id, TY_PROJECT_ID_RULE},
    {"{job}",
     "job id",
     "/:",
     tyd_valid_job_id,
     "use only letters, numbers and underscores, start with a letter, at most 128 characters"},
    {"{asset}",
     "dashboard file name",
     "/",
     tyd_valid_asset_name,
     "use only letters, numbers and - _ ., start with a letter or number, at most 64 "
     "characters"},
};

/* Copy at most @max bytes of @text (length @len) into @out (size @n) as printable ASCII: other
 * bytes become '?', so that a message quoting a crafted id is valid UTF-8 and one line. */
static void printable(char *out, size_t n, const char *text, size_t len, size_t max)
{
    size_t i;

    for (i = 0; i < len && i < max && i + 1 < n; i++)
        out[i] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
    out[i] = '\0';
}

static void bad_name(struct tyd_route *r, const struct id_kind *k, const char *text, size_t len)
{
    char shown[72];

    r->method = TYD_BAD_NAME;
    printable(shown, sizeof(shown), text, len, 64);
    if (len > 64)
        (void)snprintf(r->detail,
                       sizeof(r->detail),
                       "invalid %s '%s...': too long or contains characters that are not "
                       "allowed",
                       k->what,
                       shown);
    else
        (void)snprintf(
            r->detail, sizeof(r->detail), "invalid %s '%s': %s", k->what, shown, k->rule);
}

/* The ids a path gave while it was matched against a pattern. */
struct ids {
    const char *project, *job, *asset;
    size_t project_len, job_len, asset_len;
    const struct id_kind *bad; /* the first id found invalid */
    const char *bad_text;
    size_t bad_len;
};

/* Does the literal text of the pattern at @p (up to the next id, or to the end less a final
 * "/?") start @s? At the end of the pattern it must also end a path segment of @s (be
 * followed by a '/' or the end); an empty literal there always does. */
static bool literal_follows(const char *p, const char *s)
{
    size_t len = strcspn(p, "{");
    bool last = p[len] == '\0';

    if (last && len >= 2 && p[len - 2] == '/' && p[len - 1] == '?')
        len -= 2;
    if (len == 0)
        return true;
    return strncmp(p, s, len) == 0 && (!last || s[len] == '/' || s[len] == '\0');
}

/* Take the id of the pattern at *p from the path at *s, advancing both. False when the
 * pattern cannot match; an invalid id that must be judged is noted in @ids. */
static bool take_id(const char **p, const char **s, struct ids *ids)
{
    const struct id_kind *k = NULL;
    size_t n;

    for (size_t i = 0; i < TY_ARRAY_SIZE(id_kinds) && !k; i++)
        if (strncmp(*p, id_kinds[i].placeholder, strlen(id_kinds[i].placeholder)) == 0)
            k = &id_kinds[i];
    if (!k)
        return false; /* a pattern with an unknown id: test-route catches it */
    n = strcspn(*s, k->stops);
    *p += strlen(k->placeholder);
    if (!literal_follows(*p, *s + n))
        return false;
    if (!k->valid(*s, n)) {
        ids->bad = k;
        ids->bad_text = *s;
        ids->bad_len = n;
        return false;
    }
    if (k == &id_kinds[0]) {
        ids->project = *s;
        ids->project_len = n;
    } else if (k == &id_kinds[1]) {
        ids->job = *s;
        ids->job_len = n;
    } else {
        ids->asset = *s;
        ids->asset_len = n;
    }
    *s += n;
    return true;
}

/* Does @path match @pattern? Fills @ids with what it holds. */
static bool match(const char *pattern, const char *path, struct ids *ids)
{
    const char *p = pattern, *s = path;

    while (*p) {
        if (*p == '{') {
            if (!take_id(&p, &s, ids))
                return false;
            continue;
        }
        if (p[0] == '/' && p[1] == '?' && p[2] == '\0')
            return *s == '\0' || (s[0] == '/' && s[1] == '\0');
        if (*p != *s)
            return false;
        p++;
        s++;
    }
    return *s == '\0';
}

static void copy_id(char *dst, const char *id, size_t len)
{
    if (id)
        memcpy(dst, id, len);
    dst[id ? len : 0] = '\0';
}

/* Append @method to the Allow list of @r. */
static void allow_add(struct tyd_route *r, const char *method)
{
    size_t used = strlen(r->allow);
    (void)snprintf(r->allow + used, sizeof(r->allow) - used, "%s%s", used ? ", " : "", method);
}

/* Does row @i answer HEAD: every GET but a log stream (RFC 9110 9.3.2: what GET answers,
 * without its body, which libmicrohttpd leaves out; a followed log has no end to its
 * headers' answer)? */
static bool answers_head(size_t i)
{
    return strcmp(rows[i].http_method, "GET") == 0 && rows[i].method != TYD_JOBS_LOGS;
}

/* The answer for row @i, which matched: its project and job, and why it is not offered. */
static void take_row(struct tyd_route *r, size_t i, const struct ids *ids)
{
    r->method = rows[i].method;
    r->row = i;
    r->api = &rows[i];
    r->allow[0] = '\0'; /* rows before it may have matched with other HTTP methods */
    copy_id(r->project, ids->project, ids->project_len);
    copy_id(r->job, ids->job, ids->job_len);
    copy_id(r->asset, ids->asset, ids->asset_len);
    if (r->method == TYD_UNIMPLEMENTED) /* the IAM methods: "...:getIamPolicy" */
        (void)snprintf(r->detail,
                       sizeof(r->detail),
                       "%s is not supported by trainyard: access is granted per project by the "
                       "daemon's --auth-tokens file",
                       strrchr(rows[i].pattern, ':') + 1);
}

void tyd_route(const char *m, const char *path, struct tyd_route *r)
{
    struct ids bad = {0}, found = {0};
    bool matched = false;

    memset(r, 0, sizeof(*r));
    r->method = TYD_NOT_FOUND;
    if (!m || !path)
        return;
    for (size_t i = 0; i < TY_ARRAY_SIZE(rows); i++) {
        struct ids ids = {0};
        if (!match(rows[i].pattern, path, &ids)) {
            if (ids.bad && !bad.bad)
                bad = ids;
            continue;
        }
        if (strcmp(rows[i].http_method, "*") == 0 || strcmp(rows[i].http_method, m) == 0 ||
            (strcmp(m, "HEAD") == 0 && answers_head(i))) {
            take_row(r, i, &ids);
            return;
        }
        matched = true;
        found = ids;
        allow_add(r, rows[i].http_method);
        if (answers_head(i))
            allow_add(r, "HEAD");
    }
    if (matched) {
        r->method = TYD_BAD_METHOD;
        copy_id(r->project, found.project, found.project_len);
        copy_id(r->job, found.job, found.job_len);
        return;
    }
    if (bad.bad) {
        copy_id(r->project, bad.project, bad.project_len);
        bad_name(r, bad.bad, bad.bad_text, bad.bad_len);
        return;
    }
    (void)snprintf(r->detail, sizeof(r->detail), "no API method at this URL");
}

int tyd_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t tyd_url_unescape(char *s)
{
    char *out = s;
    const char *in = s;

    while (*in) {
        int hi = in[0] == '%' ? tyd_hex_digit(in[1]) : -1;
        int lo = hi >= 0 ? tyd_hex_digit(in[2]) : -1;
        if (lo >= 0 && (hi | lo) != 0) {
            *out++ = (char)(hi * 16 + lo);
            in += 3;
        } else {
            *out++ = *in++; /* not an escape, or %00: kept as written */
        }
    }
    *out = '\0';
    return (size_t)(out - s);
}

/* A page token: base64url of "1.<seq>.<hash of the project and the filter>", so a token is
 * only good for the listing it was made for. */
static uint32_t list_hash(const char *project, const char *filter)
{
    uint32_t h = 2166136261u;
    for (const char *s = project; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h *= 16777619u; /* a 0 byte between them: ("a", "bc") is not ("ab", "c") */
    for (const char *s = filter; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

char *tyd_list_token_format(int64_t seq, const char *project, const char *filter)
{
    char raw[64];
    int n = snprintf(raw, sizeof(raw), "1.%lld.%08x", (long long)seq, list_hash(project, filter));
    return ty_base64_encode(raw, (size_t)n, true);
}

int tyd_list_token_parse(const char *tok, const char *project, const char *filter, int64_t *seq)
{
    _cleanup_free_ unsigned char *raw = NULL;
    size_t len;
    long long s;
    unsigned h;
    int used = 0;

    if (strlen(tok) > 64 || ty_base64_decode(tok, true, &raw, &len) < 0)
        return -EINVAL;
    if (sscanf((char *)raw, "1.%lld.%8x%n", &s, &h, &used) != 2 || (size_t)used != len || s <= 0)
        return -EINVAL;
    if (h != list_hash(project, filter))
        return -ESTALE;
    *seq = s;
    return 0;
}

/* The weight of one element of Accept-Encoding ("gzip;q=0.5" at @el, @len bytes): its q
 * parameter, 1 when it has none or it cannot be read. */
static double weight(const char *el, size_t len)
{
    const char *semi = memchr(el, ';', len), *end = el + len;
    char q[16];
    size_t n;

    if (!semi)
        return 1;
    semi += 1 + strspn(semi + 1, " \t");
    if (semi + 2 > end || (semi[0] != 'q' && semi[0] != 'Q') || semi[1] != '=')
        return 1;
    n = (size_t)(end - (semi + 2));
    if (n >= sizeof(q))
        n = sizeof(q) - 1;
    memcpy(q, semi + 2, n);
    q[n] = '\0';
    return strtod(q, NULL);
}

bool tyd_accepts_gzip(const char *ae)
{
    while (ae && *ae) {
        size_t len, tok;
        ae += strspn(ae, ", \t");
        len = strcspn(ae, ",");
        tok = strcspn(ae, "; \t,");
        if (((tok == 4 && strncasecmp(ae, "gzip", 4) == 0) ||
             (tok == 6 && strncasecmp(ae, "x-gzip", 6) == 0) || (tok == 1 && ae[0] == '*')) &&
            weight(ae, len) > 0)
            return true;
        ae += len;
    }
    return false;
}

bool tyd_etag_matches(const char *inm, const char *etag)
{
    size_t n = strlen(etag);

    if (!inm)
        return false;
    while (*inm) {
        size_t len;
        inm += strspn(inm, ", \t");
        if (inm[0] == '*' && (inm[1] == '\0' || inm[1] == ',' || inm[1] == ' '))
            return true;
        if (inm[0] == 'W' && inm[1] == '/')
            inm += 2;
        len = strcspn(inm, ", \t");
        if (len == n && strncmp(inm, etag, n) == 0)
            return true;
        inm += len;
    }
    return false;
}

const char *tyd_gzip_etag(const char *etag, char *buf, size_t size)
{
    size_t n = strlen(etag);

    if (n < 2 || etag[n - 1] != '"' || n + 3 >= size)
        return etag;
    memcpy(buf, etag, n - 1);
    memcpy(buf + n - 1, "-gz\"", 5);
    return buf;
}
