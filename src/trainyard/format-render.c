/* SPDX-License-Identifier: Apache-2.0
 * format-render.c: the printers of format.h over a JSON array of resources: the values of
 * projection keys (with lists reached element-wise and transforms), sorting, and gcloud's
 * json, yaml, value, csv, table, list, text and flattened layouts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "alloc.h"
#include "buf.h"
#include "format.h"
#include "jobkeys.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"
#include "timeutil.h"
#include "yaml-emit.h"

/* ---- values --------------------------------------------------------------------------------- */

static json_t *walk(const json_t *v, const struct ty_fmt_key *k, size_t i)
{
    for (; v && i < k->nsegs; i++) {
        const struct ty_fmt_seg *s = &k->segs[i];
        if (json_is_array(v)) { /* element-wise: the list of what each element has */
            json_t *out = json_array(), *item;
            size_t n;
            json_array_foreach(v, n, item)
            {
                json_t *x = walk(item, k, i);
                if (x)
                    json_array_append_new(out, x);
            }
            return out;
        }
        v = json_object_get(v, s->name);
        if (v && s->has_index) {
            long n = (long)json_array_size(v), idx = s->index < 0 ? n + s->index : s->index;
            v = idx >= 0 && idx < n ? json_array_get(v, (size_t)idx) : NULL;
        }
    }
    return v && !json_is_null(v) ? json_incref((json_t *)v) : NULL;
}

bool ty_fmt_zone_valid(const char *zone)
{
    const char *dir = getenv("TZDIR");
    _cleanup_free_ char *path = NULL;
    struct stat st;

    if (!strcasecmp(zone, "LOCAL") || !strcasecmp(zone, "UTC") || !strcasecmp(zone, "GMT") ||
        !strcasecmp(zone, "Z"))
        return true;
    if (!*zone || zone[0] == '/' || strstr(zone, "..") ||
        zone[strspn(zone, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-/")])
        return false;
    path = xasprintf("%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", zone);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The broken-down time of @sec in @zone (ty_fmt_zone_valid's): a named zone through TZ, set
 * for the call and put back (the CLI is one thread). */
static bool tm_in_zone(time_t sec, const char *zone, struct tm *tm)
{
    _cleanup_free_ char *saved = NULL;
    const char *old;
    bool ok;

    if (!strcasecmp(zone, "LOCAL"))
        return localtime_r(&sec, tm) != NULL;
    if (!strcasecmp(zone, "UTC") || !strcasecmp(zone, "GMT") || !strcasecmp(zone, "Z"))
        return gmtime_r(&sec, tm) != NULL;
    old = getenv("TZ");
    saved = old ? xstrdup(old) : NULL;
    (void)setenv("TZ", zone, 1);
    tzset();
    ok = localtime_r(&sec, tm) != NULL;
    if (saved)
        (void)setenv("TZ", saved, 1);
    else
        (void)unsetenv("TZ");
    tzset();
    return ok;
}

/* The UTC offset an RFC 3339 time @s states, in seconds (0 for Z and for a bare date). */
static long stated_offset(const char *s)
{
    size_t n = strlen(s);
    if (n < 20 || s[n - 1] == 'Z' || s[n - 1] == 'z' || s[n - 3] != ':')
        return 0;
    long h = (s[n - 5] - '0') * 10 + (s[n - 4] - '0'), m = (s[n - 2] - '0') * 10 + (s[n - 1] - '0');
    return (s[n - 6] == '-' ? -1 : 1) * (h * 3600 + m * 60);
}

/* gcloud's date(): in tz= when given, else in the zone the time states (UTC for "...Z"). */
static json_t *tr_date(const char *s, const struct ty_fmt_transform *t)
{
    const char *fmt = t->arg[0] && *t->arg[0] ? t->arg[0] : "%Y-%m-%dT%H:%M:%S";
    char buf[256], zname[48];
    struct tm tm;
    int64_t usec;
    time_t sec;

    if (ty_rfc3339_parse(s, &usec, NULL) < 0)
        return json_string(s);
    sec = (time_t)(usec >= 0 ? usec / 1000000 : -((-usec + 999999) / 1000000));
    if (t->arg[1]) {
        if (!tm_in_zone(sec, t->arg[1], &tm))
            return json_string(s);
    } else {
        long off = stated_offset(s);
        time_t shifted = sec + off;
        if (!gmtime_r(&shifted, &tm))
            return json_string(s);
        tm.tm_gmtoff = off;
        (void)snprintf(zname,
                       sizeof(zname),
                       "%c%02ld%02ld",
                       off < 0 ? '-' : '+',
                       labs(off) / 3600,
                       labs(off) / 60 % 60);
        tm.tm_zone = off ? zname : "UTC";
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    /* the user's format: strftime writes what it is given, bounded by buf */
    if (strftime(buf, sizeof(buf), fmt, &tm) == 0)
        return json_string(s);
#pragma GCC diagnostic pop
    return json_string(buf);
}

static bool truthy(const json_t *v)
{
    if (!v)
        return false;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_INTEGER:
    case JSON_REAL:
        return json_number_value(v) != 0;
    case JSON_TRUE:
        return true;
    case JSON_ARRAY:
        return json_array_size(v) > 0;
    case JSON_OBJECT:
        return json_object_size(v) > 0;
    default:
        return false;
    }
}

/* Apply @t to @v (consumed; may be NULL); returns the new value (may be NULL). */
static json_t *transform(json_t *v, const struct ty_fmt_transform *t)
{
    _cleanup_json_ json_t *in = v;
    _cleanup_free_ char *text = NULL;

    switch (t->kind) {
    case TY_TR_YESNO:
        return json_string(truthy(in) ? (t->arg[0] ? t->arg[0] : "yes")
                                      : (t->arg[1] ? t->arg[1] : "no"));
    case TY_TR_LEN:
        return json_integer(json_is_string(in)   ? (json_int_t)json_string_length(in)
                            : json_is_array(in)  ? (json_int_t)json_array_size(in)
                            : json_is_object(in) ? (json_int_t)json_object_size(in)
                                                 : 0);
    default:
        break;
    }
    if (!in)
        return NULL;
    if (t->kind == TY_TR_JOIN) {
        if (!json_is_array(in))
            return json_incref(in);
        text = ty_format_cell(in, t->arg[0] ? t->arg[0] : ",");
        return json_string_nocheck(text); /* a copy: text is freed on return */
    }
    text = ty_format_cell(in, NULL);
    switch (t->kind) {
    case TY_TR_BASENAME: {
        size_t n = strlen(text);
        while (n > 1 && text[n - 1] == '/')
            text[--n] = '\0';
        const char *slash = strrchr(text, '/');
        return json_string(slash && slash[1] ? slash + 1 : text);
    }
    case TY_TR_DATE:
        return tr_date(text, t);
    case TY_TR_LOWER:
    case TY_TR_UPPER:
        for (char *c = text; *c; c++)
            if (t->kind == TY_TR_LOWER ? (*c >= 'A' && *c <= 'Z') : (*c >= 'a' && *c <= 'z'))
                *c = (char)(*c ^ 0x20);
        return json_string(text);
    default:
        return json_incref(in);
    }
}

json_t *ty_format_value(const json_t *resource, const struct ty_fmt_key *key)
{
    json_t *v = walk(resource, key, 0);
    for (size_t i = 0; i < key->ntr; i++)
        v = transform(v, &key->tr[i]);
    return v;
}

static void put_number(struct ty_buf *b, const json_t *v)
{
    double d = json_real_value(v);
    char buf[40];

    if (json_is_integer(v)) {
        ty_buf_printf(b, "%lld", (long long)json_integer_value(v));
        return;
    }
    /* the shortest text that reads back as the same double, as Python's repr */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    ty_buf_puts(b, buf);
    if (isfinite(d) && !strpbrk(buf, ".eEn")) /* 2.0, not 2: a double, as Python prints it */
        ty_buf_puts(b, ".0");
}

static void put_cell(struct ty_buf *b, const json_t *v, const char *delim, int depth)
{
    const char *k;
    json_t *item;
    size_t i;

    switch (json_typeof(v)) {
    case JSON_STRING:
        ty_buf_append(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
    case JSON_REAL:
        put_number(b, v);
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        ty_buf_puts(b, json_is_true(v) ? "True" : "False");
        break;
    case JSON_ARRAY:
        if (depth > 0) {
            char *c = ty_json_compact(v);
            ty_buf_puts(b, c);
            free(c);
            break;
        }
        json_array_foreach(v, i, item)
        {
            if (i)
                ty_buf_puts(b, delim);
            put_cell(b, item, delim, depth + 1);
        }
        break;
    case JSON_OBJECT: {
        if (depth > 0) {
            char *c = ty_json_compact(v);
            ty_buf_puts(b, c);
            free(c);
            break;
        }
        char **keys = NULL;
        json_object_foreach((json_t *)v, k, item)
        {
            ty_strv_push(&keys, k);
        }
        for (size_t x = 1; keys && keys[x]; x++) /* insertion sort: a handful of keys */
            for (size_t y = x; y > 0 && strcmp(keys[y - 1], keys[y]) > 0; y--) {
                char *tmp = keys[y];
                keys[y] = keys[y - 1];
                keys[y - 1] = tmp;
            }
        for (size_t x = 0; keys && keys[x]; x++) {
            ty_buf_printf(b, "%s%s=", x ? delim : "", keys[x]);
            put_cell(b, json_object_get(v, keys[x]), delim, depth + 1);
        }
        ty_strv_free(keys);
        break;
    }
    default:
        break;
    }
}

char *ty_format_cell(const json_t *v, const char *delimiter)
{
    struct ty_buf b = TY_BUF_INIT;
    ty_buf_puts(&b, "");
    if (v)
        put_cell(&b, v, delimiter ? delimiter : ";", 0);
    return ty_buf_take(&b);
}

char *ty_format_heading(const struct ty_fmt_key *key)
{
    struct ty_buf b = TY_BUF_INIT;
    const char *last;

    if (key->label)
        return xstrdup(key->label);
    last = key->segs[key->nsegs - 1].name;
    ty_buf_puts(&b, "");
    for (const char *c = last; *c; c++) {
        if (*c >= 'A' && *c <= 'Z' && c > last)
            ty_buf_putc(&b, '_');
        ty_buf_putc(&b, (char)((*c >= 'a' && *c <= 'z') ? *c - 'a' + 'A' : *c == '-' ? '_' : *c));
    }
    return ty_buf_take(&b);
}

/* ---- sorting -------------------------------------------------------------------------------- */

struct sort_ctx {
    const struct ty_fmt_key **keys;
    size_t n;
};

static int cmp_values(const json_t *a, const json_t *b)
{
    _cleanup_free_ char *sa = NULL, *sb = NULL;
    double x = 0, y = 0;
    bool na, nb;

    if (!a || !b)
        return !!a - !!b;
    sa = ty_format_cell(a, NULL);
    sb = ty_format_cell(b, NULL);
    na = json_is_number(a) ? (x = json_number_value(a), true) : ty_parse_double(sa, &x) == 0;
    nb = json_is_number(b) ? (y = json_number_value(b), true) : ty_parse_double(sb, &y) == 0;
    if (na && nb)
        return (x > y) - (x < y);
    return strcmp(sa, sb);
}

/* One resource with its position, for a stable sort. */
struct item {
    json_t *v;
    size_t pos;
};

static int cmp_items(const void *pa, const void *pb, void *data)
{
    const struct item *a = pa, *b = pb;
    const struct sort_ctx *c = data;

    for (size_t i = 0; i < c->n; i++) {
        _cleanup_json_ json_t *x = ty_format_value(a->v, c->keys[i]);
        _cleanup_json_ json_t *y = ty_format_value(b->v, c->keys[i]);
        int r = cmp_values(x, y);
        if (r)
            return c->keys[i]->reverse ? -r : r;
    }
    return (a->pos > b->pos) - (a->pos < b->pos);
}

bool ty_format_sorts(const struct ty_format *f)
{
    for (size_t i = 0; f && i < f->nkeys; i++)
        if (f->keys[i].sort > 0)
            return true;
    return false;
}

/* Is @k a key only jobs.get shows? */
static bool get_only(const struct ty_fmt_key *k)
{
    struct ty_jobkey_info info;
    const char *first = k->nsegs ? k->segs[0].name : NULL;
    return first && ty_jobkey_check(&first, 1, &info, NULL) == 0 && info.get_only;
}

const char *
ty_format_get_only_key(const struct ty_format *f, const struct ty_fmt_key *keys, size_t n)
{
    for (size_t i = 0; f && i < f->nkeys; i++)
        if (get_only(&f->keys[i]))
            return f->keys[i].path;
    for (size_t i = 0; i < n; i++)
        if (get_only(&keys[i]))
            return keys[i].path;
    return NULL;
}

void ty_format_sort(json_t *items,
                    const struct ty_fmt_key *keys,
                    size_t n,
                    const struct ty_format *f)
{
    struct sort_ctx c = {.keys = xcalloc(n + (f ? f->nkeys : 0) + 1, sizeof(*c.keys))};
    size_t len = json_array_size(items);
    struct item *v;

    for (size_t i = 0; i < n; i++)
        c.keys[c.n++] = &keys[i];
    for (int rank = 1; f && rank <= 1000; rank++) /* :sort=N in the order of N */
        for (size_t i = 0; i < f->nkeys; i++)
            if (f->keys[i].sort == rank)
                c.keys[c.n++] = &f->keys[i];
    if (c.n > 0 && len > 1) {
        v = xcalloc(len, sizeof(*v));
        for (size_t i = 0; i < len; i++)
            v[i] = (struct item){json_incref(json_array_get(items, i)), i};
        qsort_r(v, len, sizeof(*v), cmp_items, &c);
        json_array_clear(items);
        for (size_t i = 0; i < len; i++)
            json_array_append_new(items, v[i].v);
        free(v);
    }
    free(c.keys);
}
