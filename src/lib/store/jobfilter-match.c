/* SPDX-License-Identifier: Apache-2.0
 * jobfilter-match.c: matching a parsed list filter (jobfilter-internal.h) against a REST Job.
 * Dotted paths are followed through objects (an array on the way matches when any element
 * does); a missing field fails its restriction. Numbers and int64 strings compare as numbers
 * when the filter value is one, fields ending in "Time" as instants or durations, other
 * strings ignoring ASCII case for ':' (the value occurs in the string, or a pattern with one
 * '*'), '=' and '!=' (the whole string, or a prefix) as gcloud's filters do, and byte-wise for
 * '<', '<=', '>' and '>='. '~' and '!~' search a POSIX extended regular expression (ere.h:
 * linear time, whatever the client sends), compiled once when the filter is parsed, in the
 * value (case-sensitive, as gcloud's). Nothing is allocated while matching. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "ere.h"
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
    if (op == OP_HAS && r->star) { /* PREFIX*SUFFIX, either part possibly empty */
        size_t a = r->star - 1, b = r->vlen - r->star;
        return n >= a + b && strncasecmp(s, r->value, a) == 0 &&
               strncasecmp(s + n - b, r->value + r->star, b) == 0;
    }
    if (op == OP_HAS) /* gcloud's ':': the value occurs in the string */
        return strcasestr(s, r->value) != NULL;
    if (op == OP_EQ)
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
        return ty_ere_search_budget(r->re, json_string_value(v), json_string_length(v), r->steps);
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
    return ty_ere_search_budget(r->re, num, strlen(num), r->steps);
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
    if (!f || !f->root)
        return true;
    /* once the budget is spent a search answers "no match", and a "!~" would turn that into
     * a match: nothing matches any more */
    return ty_filter_spent(f, NULL) == 0 && jf_match_node(f->root, job) &&
           ty_filter_spent(f, NULL) == 0;
}

int ty_filter_spent(const struct ty_filter *f, struct ty_error *err)
{
    if (!f || !f->patterns || f->steps > 0)
        return 0;
    return ty_error_set(err,
                        E2BIG,
                        "filter: its patterns ('~') took over %" PRIu64
                        " matching steps on the jobs read, and were stopped: narrow the filter "
                        "with state: or a jobId: prefix (the store applies those first), or "
                        "use simpler patterns",
                        f->budget);
}

void ty_filter_set_budget(struct ty_filter *f, uint64_t steps)
{
    if (f)
        f->budget = f->steps = steps;
}

/* ---- '~' patterns ---- */

int jf_regex_compile(struct jf_restr *r, const char *const *enums, char *msg, size_t len)
{
    struct ty_buf names = TY_BUF_INIT;
    char why[128];
    bool any = false;
    int rc;

    rc = ty_ere_compile(r->value, 0, &r->re, why, sizeof(why));
    if (rc == -EINVAL)
        (void)snprintf(
            msg, len, "'%.60s' is not a POSIX extended regular expression: %s", r->value, why);
    else if (rc < 0)
        (void)snprintf(msg, len, "'%.60s' %s", r->value, why);
    if (rc < 0)
        return -EINVAL;
    for (size_t i = 0; enums && enums[i]; i++) {
        any |= ty_ere_search(r->re, enums[i], strlen(enums[i]));
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
