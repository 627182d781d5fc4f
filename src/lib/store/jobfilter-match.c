/* SPDX-License-Identifier: Apache-2.0
 * jobfilter-match.c: matching a parsed list filter (jobfilter-internal.h) against a REST Job.
 * Dotted paths are followed through objects (an array on the way matches when any element
 * does); a missing field fails its restriction. Numbers and int64 strings compare as numbers
 * when the filter value is one, fields ending in "Time" as instants or durations, other
 * strings ignoring ASCII case for ':', '=' and '!=' (as gcloud's filters do) and byte-wise for
 * '<', '<=', '>' and '>='. '~' and '!~' search a POSIX extended regular expression, compiled
 * once when the filter is parsed, in the value (case-sensitive, as gcloud's). Nothing is
 * allocated while matching. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "jobfilter-internal.h"
#include "jobfilter.h"
#include "parse.h"
#include "timeutil.h"

static bool cmp_ok(enum jf_op op, int c)
{
    switch (op) {
    case OP_LT:
        return c < 0;
    case OP_LE:
        return c <= 0;
    case OP_GT:
        return c > 0;
    case OP_GE:
        return c >= 0;
    default:
        return c == 0;
    }
}

static int cmp_num(const struct jf_restr *r, bool is_int, int64_t i, double d)
{
    if (is_int && r->is_int)
        return (i > r->ival) - (i < r->ival);
    if (is_int)
        d = (double)i;
    return (d > r->dval) - (d < r->dval);
}

/* Byte-wise order of @s (@n bytes) against the value. */
static int cmp_str(const struct jf_restr *r, const char *s, size_t n)
{
    int c = memcmp(s, r->value, n < r->vlen ? n : r->vlen);
    if (c)
        return c;
    return (n > r->vlen) - (n < r->vlen);
}

static bool match_string(const struct jf_restr *r, const char *s, size_t n, enum jf_op op)
{
    int64_t v;

    if (r->vkind != V_PLAIN) {
        if ((r->vkind == V_TIME ? ty_rfc3339_parse(s, &v, NULL) : ty_duration_parse(s, &v, NULL)) <
            0)
            return false;
        if (op == OP_HAS)
            return v >= r->tval && v < r->tend;
        return cmp_ok(op, (v > r->tval) - (v < r->tval));
    }
    if (r->prefix) /* ':' '=' (and '!=' as not '='): ignoring case */
        return n >= r->vlen && strncasecmp(s, r->value, r->vlen) == 0;
    if (r->is_num && ty_parse_int64(s, INT64_MIN, INT64_MAX, &v) == 0)
        return cmp_ok(op, cmp_num(r, true, v, 0));
    if (op == OP_HAS || op == OP_EQ)
        return n == r->vlen && strncasecmp(s, r->value, n) == 0;
    return cmp_ok(op, cmp_str(r, s, n));
}

static bool present(const json_t *v)
{
    if (json_is_object(v))
        return json_object_size(v) > 0;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    return !json_is_null(v);
}

/* '~': does the pattern occur in the scalar @v (a number or boolean as its JSON text)? */
static bool match_regex(const struct jf_restr *r, const json_t *v)
{
    char num[64];

    switch (json_typeof(v)) {
    case JSON_STRING:
        return regexec(&r->re, json_string_value(v), 0, NULL, 0) == 0;
    case JSON_INTEGER:
        (void)snprintf(num, sizeof(num), "%" PRId64, (int64_t)json_integer_value(v));
        break;
    case JSON_REAL:
        (void)snprintf(num, sizeof(num), "%.17g", json_real_value(v));
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        (void)snprintf(num, sizeof(num), "%s", json_is_true(v) ? "true" : "false");
        break;
    default:
        return false;
    }
    return regexec(&r->re, num, 0, NULL, 0) == 0;
}

static bool match_value(const struct jf_restr *r, const json_t *v, enum jf_op op, int depth)
{
    const char *key;
    json_t *item;
    size_t i;

    if (r->present)
        return present(v);
    if (op == OP_RE && !json_is_array(v))
        return match_regex(r, v);
    switch (json_typeof(v)) {
    case JSON_ARRAY:
        if (depth >= MAX_ARRAY_DEPTH)
            return false;
        json_array_foreach(v, i, item) if (match_value(r, item, op, depth + 1)) return true;
        return false;
    case JSON_OBJECT:
        if (op != OP_HAS)
            return false;
        json_object_foreach(
            (json_t *)v, key, item) if (match_string(r, key, strlen(key), op)) return true;
        return false;
    case JSON_STRING:
        return match_string(r, json_string_value(v), json_string_length(v), op);
    case JSON_INTEGER:
        return r->is_num && cmp_ok(op, cmp_num(r, true, (int64_t)json_integer_value(v), 0));
    case JSON_REAL:
        return r->is_num && cmp_ok(op, cmp_num(r, false, 0, json_real_value(v)));
    case JSON_TRUE:
    case JSON_FALSE:
        return (op == OP_HAS || op == OP_EQ) && !r->prefix &&
               strcasecmp(r->value, json_is_true(v) ? "true" : "false") == 0;
    default:
        return false;
    }
}

/* Follow the path from segment @i; an array on the way matches when any element does. */
static bool walk(const struct jf_restr *r, const json_t *v, size_t i, enum jf_op op, int depth)
{
    for (; i < r->nsegs; i++) {
        if (json_is_array(v)) {
            size_t k;
            json_t *item;
            if (depth >= MAX_ARRAY_DEPTH)
                return false;
            json_array_foreach(v, k, item) if (walk(r, item, i, op, depth + 1)) return true;
            return false;
        }
        v = json_object_get(v, r->segs[i]); /* NULL for a non-object */
        if (!v)
            return false;
    }
    return match_value(r, v, op, depth);
}

static bool contains(const json_t *v, const char *needle)
{
    const char *s = json_string_value(v);
    return s && strcasestr(s, needle);
}

static bool match_global(const struct jf_restr *r, const json_t *job)
{
    const char *key;
    json_t *item;

    if (r->vlen == 0)
        return true;
    if (contains(json_object_get(job, "jobId"), r->value) ||
        contains(json_object_get(job, "state"), r->value))
        return true;
    json_object_foreach(
        json_object_get(job, "labels"), key, item) if (contains(item, r->value)) return true;
    return false;
}

bool jf_match_node(const struct jf_node *n, const json_t *job)
{
    switch (n->kind) {
    case N_AND:
        for (size_t i = 0; i < n->n; i++)
            if (!jf_match_node(n->kids[i], job))
                return false;
        return true;
    case N_OR:
        for (size_t i = 0; i < n->n; i++)
            if (jf_match_node(n->kids[i], job))
                return true;
        return false;
    case N_NOT:
        return !jf_match_node(n->kids[0], job);
    case N_RESTR:
        if (n->r.op == OP_NE)
            return !walk(&n->r, job, 0, OP_EQ, 0);
        if (n->r.op == OP_NRE)
            return !walk(&n->r, job, 0, OP_RE, 0);
        return walk(&n->r, job, 0, n->r.op, 0);
    case N_GLOBAL:
        return match_global(&n->r, job);
    }
    return false;
}

bool ty_filter_match(const struct ty_filter *f, const json_t *job)
{
    return !f || !f->root || jf_match_node(f->root, job);
}

/* ---- '~' patterns ---- */

/* What regcomp may build from a pattern is bounded: glibc copies a repeated expression once
 * per repetition (`(a{100}){100}` is 10000 copies, `a+++...` doubles with each '+'), which an
 * API client could turn into gigabytes. RE_MAX_COST bounds the copies (a '*', '+' or '?'
 * counts as two, `{M,N}` as N, `{M,}` as M+1); RE_MAX_GROUPS the nesting of parentheses. */
#define RE_MAX_COST   500
#define RE_MAX_GROUPS 32
#define RE_MAX_DUP    100000

/* The index after the bracket expression that starts at @s[0] == '[', or 0 when it is not
 * closed (regcomp then says so). */
static size_t bracket_end(const char *s)
{
    size_t i = 1;

    if (s[i] == '^')
        i++;
    if (s[i] == ']')
        i++;
    for (; s[i]; i++) {
        if (s[i] == '[' && s[i + 1] && strchr(":=.", s[i + 1])) {
            const char end[3] = {s[i + 1], ']', '\0'};
            const char *e = strstr(s + i + 2, end);
            if (!e)
                return 0;
            i = (size_t)(e - s) + 1;
        } else if (s[i] == ']') {
            return i + 1;
        }
    }
    return 0;
}

/* The repetitions of the interval at @s ('{'): the largest count plus one for `{M,}`, 0 when
 * it is not a valid interval; *len its length. */
static uint64_t interval(const char *s, size_t *len)
{
    uint64_t m = 0, n = 0;
    size_t i = 1;
    bool comma = false, digits = false;

    for (; s[i] >= '0' && s[i] <= '9'; i++, digits = true)
        m = m < RE_MAX_DUP ? m * 10 + (uint64_t)(s[i] - '0') : m;
    if (s[i] == ',') {
        comma = true;
        for (i++; s[i] >= '0' && s[i] <= '9'; i++)
            n = n < RE_MAX_DUP ? n * 10 + (uint64_t)(s[i] - '0') : n;
    }
    if (!digits || s[i] != '}')
        return 0;
    *len = i + 1;
    return comma ? (n ? n : m + 1) : m;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b && a > (UINT64_MAX / 2) / b ? UINT64_MAX / 2 : a * b;
}

/* Refuse a pattern regcomp could make huge (see RE_MAX_COST) or slow to match: back-references
 * (`\1`, a glibc extension whose matching is exponential). Other errors are regcomp's. */
static int regex_check(const char *pat, char *msg, size_t len)
{
    uint64_t cur[RE_MAX_GROUPS + 1] = {0}, last = 0, f;
    size_t d = 0, n;

    for (size_t i = 0; pat[i]; i++) {
        uint64_t atom = 1;
        switch (pat[i]) {
        case '\\':
            if (pat[i + 1] >= '1' && pat[i + 1] <= '9') {
                (void)snprintf(
                    msg, len, "'%.60s': back-references (\\%c) are not supported", pat, pat[i + 1]);
                return -EINVAL;
            }
            if (!pat[i + 1])
                return 0;
            i++;
            break;
        case '[':
            n = bracket_end(pat + i);
            if (!n)
                return 0;
            i += n - 1;
            break;
        case '(':
            if (d == RE_MAX_GROUPS) {
                (void)snprintf(
                    msg, len, "'%.60s' nests parentheses deeper than %d", pat, RE_MAX_GROUPS);
                return -EINVAL;
            }
            cur[++d] = 0;
            last = 0;
            continue;
        case ')':
            if (d == 0)
                break; /* a literal ')' */
            last = cur[d--];
            cur[d] += last;
            atom = 0;
            break;
        case '|':
            last = 0;
            continue;
        case '*':
        case '+':
        case '?':
        case '{':
            n = 1;
            f = pat[i] == '{' ? interval(pat + i, &n) : 2;
            if (f == 0 && pat[i] == '{')
                break; /* not an interval: regcomp decides */
            i += n - 1;
            f = f > 1 ? f : 1;
            cur[d] += sat_mul(last, f - 1);
            last = sat_mul(last, f);
            atom = 0;
            break;
        default:
            break;
        }
        if (atom) {
            cur[d] += atom;
            last = atom;
        }
        if (cur[d] > RE_MAX_COST) {
            (void)snprintf(msg,
                           len,
                           "'%.60s' is too large: its repetitions make over %d "
                           "copies of its parts",
                           pat,
                           RE_MAX_COST);
            return -EINVAL;
        }
    }
    return 0;
}

int jf_regex_compile(struct jf_restr *r, const char *const *enums, char *msg, size_t len)
{
    struct ty_buf names = TY_BUF_INIT;
    char why[128];
    bool any = false;
    int rc;

    if (regex_check(r->value, msg, len) < 0)
        return -EINVAL;
    rc = regcomp(&r->re, r->value, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        (void)regerror(rc, &r->re, why, sizeof(why));
        (void)snprintf(
            msg, len, "'%.60s' is not a POSIX extended regular expression: %s", r->value, why);
        return -EINVAL;
    }
    r->has_re = true;
    for (size_t i = 0; enums && enums[i]; i++) {
        any |= regexec(&r->re, enums[i], 0, NULL, 0) == 0;
        ty_buf_printf(&names, "%s%s", i ? ", " : "", enums[i]);
    }
    if (enums && !any)
        (void)snprintf(msg,
                       len,
                       "the pattern '%.40s' matches no value of this key (patterns compare "
                       "case-sensitively); valid values: %s",
                       r->value,
                       ty_buf_str(&names));
    ty_buf_release(&names);
    return enums && !any ? -EINVAL : 0;
}
