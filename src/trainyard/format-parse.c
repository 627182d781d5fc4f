/* SPDX-License-Identifier: Apache-2.0
 * format-parse.c: the --format and --sort-by texts (format.h), by recursive descent:
 *     format    = NAME [ "[" attr { "," attr } "]" ] [ "(" key { "," key } ")" ]
 *     attr      = NAME [ "=" value ]
 *     key       = name [ "[" INT "]" ] { "." name [ "[" INT "]" ] } { transform } { ":" keyattr }
 *     transform = "." NAME "(" [ value { "," value } ] ")"
 *     keyattr   = "label=" value | "sort=" INT | "reverse" | "align=" NAME | "wrap"
 *     value     = 'quoted' | "quoted" | a bare word (up to , ] ) : or a space)
 * Spaces may stand between tokens. Names are unknown (format, attribute, transform, key of
 * the Job) are errors that list the valid ones. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "format.h"
#include "jobkeys.h"
#include "macro.h"
#include "parse.h"

static const char *const fmt_names[] = {
    [TY_FMT_DEFAULT] = "default",
    [TY_FMT_NONE] = "none",
    [TY_FMT_JSON] = "json",
    [TY_FMT_YAML] = "yaml",
    [TY_FMT_VALUE] = "value",
    [TY_FMT_CSV] = "csv",
    [TY_FMT_TABLE] = "table",
    [TY_FMT_LIST] = "list",
    [TY_FMT_TEXT] = "text",
    [TY_FMT_FLATTENED] = "flattened",
};
static const char *const tr_names[] = {
    [TY_TR_BASENAME] = "basename",
    [TY_TR_DATE] = "date",
    [TY_TR_YESNO] = "yesno",
    [TY_TR_LEN] = "len",
    [TY_TR_JOIN] = "join",
    [TY_TR_LOWER] = "lower",
    [TY_TR_UPPER] = "upper",
};
static const char valid_attrs[] = "box, no-heading, title=TEXT, separator=TEXT, delimiter=TEXT, "
                                  "terminator=TEXT, no-pad";
/* Longest --format text: far beyond any written by hand. */
#define MAX_TEXT 4096

struct parser {
    const char *s;
    size_t pos;
    struct ty_error *err;
    ty_fmt_key_check_fn check; /* the keys of the resources (default: the Job's) */
};

static int fail(struct parser *p, const char *fmt, ...) TY_PRINTF(2, 3);
static int fail(struct parser *p, const char *fmt, ...)
{
    char msg[TY_ERROR_MSG_MAX - 40]; /* room for " at position N" */
    size_t chars = 1;
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < p->pos; i++)
        chars += ((unsigned char)p->s[i] & 0xc0) != 0x80;
    return ty_error_set(p->err, EINVAL, "%s at position %zu", msg, chars);
}

static void skip_ws(struct parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n')
        p->pos++;
}

static bool is_name(char c, bool dash)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (dash && c == '-');
}

/* A name at p->pos (letters, digits, '_', and '-' when @dash), or NULL. */
static char *take_name(struct parser *p, bool dash)
{
    size_t start = p->pos;
    while (is_name(p->s[p->pos], dash))
        p->pos++;
    return p->pos > start ? xstrndup(p->s + start, p->pos - start) : NULL;
}

/* What is at p->pos, for messages. */
static const char *found(const struct parser *p, char *buf, size_t n)
{
    if (!p->s[p->pos])
        return "the end";
    (void)snprintf(buf, n, "'%c'", p->s[p->pos]);
    return buf;
}

/* A value: quoted with ' or " (a doubled or backslashed quote stands for itself), or bare up
 * to one of @stops or a space. */
static int take_value(struct parser *p, const char *stops, char **ret)
{
    struct ty_buf b = TY_BUF_INIT;
    char q = p->s[p->pos];

    if (q == '\'' || q == '"') {
        size_t start = p->pos++;
        for (;;) {
            char c = p->s[p->pos];
            if (!c) {
                ty_buf_release(&b);
                p->pos = start;
                return fail(p, "unterminated string (no closing %c) starting", q);
            }
            p->pos++;
            if (c == '\\' && (p->s[p->pos] == q || p->s[p->pos] == '\\'))
                c = p->s[p->pos++];
            else if (c == q && p->s[p->pos] == q)
                p->pos++;
            else if (c == q)
                break;
            ty_buf_putc(&b, c);
        }
    } else {
        while (p->s[p->pos] && !strchr(stops, p->s[p->pos]) && p->s[p->pos] != ' ')
            ty_buf_putc(&b, p->s[p->pos++]);
    }
    ty_buf_putc(&b, '\0');
    *ret = ty_buf_take(&b);
    return 0;
}

static int expect(struct parser *p, char c, const char *what)
{
    char buf[8];
    skip_ws(p);
    if (p->s[p->pos] == c) {
        p->pos++;
        return 0;
    }
    return fail(p, "expected '%c' %s, found %s", c, what, found(p, buf, sizeof(buf)));
}

static int parse_attr(struct parser *p, struct ty_format *f)
{
    static const struct {
        const char *name;
        size_t off; /* of a char * in struct ty_format, or 0 for a flag */
    } texts[] = {
        {"title", offsetof(struct ty_format, title)},
        {"separator", offsetof(struct ty_format, separator)},
        {"delimiter", offsetof(struct ty_format, delimiter)},
        {"terminator", offsetof(struct ty_format, terminator)},
    };
    size_t at = p->pos;
    _cleanup_free_ char *name = take_name(p, true);
    char *value = NULL;
    int r;

    if (!name)
        return fail(p, "expected an attribute (%s)", valid_attrs);
    skip_ws(p);
    if (p->s[p->pos] == '=') {
        p->pos++;
        skip_ws(p);
        r = take_value(p, ",]", &value);
        if (r < 0)
            return r;
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(texts); i++)
        if (strcmp(name, texts[i].name) == 0) {
            char **slot = (char **)((char *)f + texts[i].off);
            if (!value)
                return p->pos = at, fail(p, "attribute '%s' needs a value (%s=TEXT)", name, name);
            free(*slot);
            *slot = value;
            return 0;
        }
    free(value);
    if (strcmp(name, "box") == 0)
        f->box = true;
    else if (strcmp(name, "no-heading") == 0)
        f->no_heading = true;
    else if (strcmp(name, "no-pad") == 0)
        f->no_pad = true;
    else if (strcmp(name, "heading") != 0)
        return p->pos = at, fail(p, "unknown attribute '%s' (valid: %s)", name, valid_attrs);
    return 0;
}

static int parse_transform(struct parser *p, const char *name, struct ty_fmt_key *k)
{
    struct ty_fmt_transform *t;
    size_t nargs = 0, i;
    int r;

    for (i = 0; i < TY_ARRAY_SIZE(tr_names); i++)
        if (strcmp(name, tr_names[i]) == 0)
            break;
    if (i == TY_ARRAY_SIZE(tr_names))
        return fail(p,
                    "unknown transform '%s()' (valid: basename(), date([FORMAT][,tz=ZONE]), "
                    "yesno([YES][,NO]), len(), join([SEPARATOR]), lower(), upper())",
                    name);
    /* in the key at once: freed with it on an error */
    k->tr = xreallocarray(k->tr, k->ntr + 1, sizeof(*k->tr));
    t = &k->tr[k->ntr++];
    *t = (struct ty_fmt_transform){.kind = (enum ty_fmt_tr)i};
    p->pos++; /* '(' */
    skip_ws(p);
    while (p->s[p->pos] != ')') {
        size_t slot = nargs, nl;
        if (nargs == 2)
            return fail(p, "too many arguments to %s()", name);
        if (nargs > 0 && (r = expect(p, ',', "between arguments")) < 0)
            return r;
        skip_ws(p);
        /* name=value: format= tz= tz_default= yes= no= separator= */
        nl = strspn(p->s + p->pos, "abcdefghijklmnopqrstuvwxyz_");
        if (nl > 0 && p->s[p->pos + nl] == '=') {
            slot = (nl == 2 &&
                    (strncmp(p->s + p->pos, "tz", 2) == 0 || strncmp(p->s + p->pos, "no", 2) == 0));
            if (nl == 10 && strncmp(p->s + p->pos, "tz_default", 10) == 0) {
                if (t->kind != TY_TR_DATE)
                    return fail(p, "tz_default= is an argument of date() only");
                slot = 2;
            }
            p->pos += nl + 1;
        }
        free(t->arg[slot]);
        t->arg[slot] = NULL;
        r = take_value(p, ",)", &t->arg[slot]);
        if (r < 0)
            return r;
        nargs++;
        skip_ws(p);
    }
    p->pos++;
    for (int z = 1; t->kind == TY_TR_DATE && z < 3; z++)
        if (t->arg[z] && !ty_fmt_zone_valid(t->arg[z]))
            return fail(p,
                        "date(): unknown time zone '%s' (LOCAL, UTC, or a name of the tz "
                        "database such as US/Pacific or Europe/Paris)",
                        t->arg[z]);
    return 0;
}

static int parse_key_attr(struct parser *p, struct ty_fmt_key *k)
{
    size_t at = p->pos;
    _cleanup_free_ char *name = take_name(p, true);
    _cleanup_free_ char *value = NULL;
    int64_t n;
    int r;

    if (name && p->s[p->pos] == '=') {
        p->pos++;
        r = take_value(p, ",):", &value);
        if (r < 0)
            return r;
    }
    if (name && strcmp(name, "label") == 0 && value) {
        free(k->label);
        k->label = TAKE_PTR(value);
    } else if (name && strcmp(name, "sort") == 0 && value &&
               ty_parse_int64(value, 1, 1000, &n) == 0) {
        k->sort = (int)n;
    } else if (name && strcmp(name, "reverse") == 0 && !value) {
        k->reverse = true;
    } else if (!(name && ((strcmp(name, "align") == 0 && value) || strcmp(name, "wrap") == 0))) {
        p->pos = at;
        return fail(p,
                    "expected a key attribute after ':' (label=NAME, sort=N, reverse, align=, "
                    "wrap)");
    }
    return 0;
}

/* The names and indexes of a key, then its transforms and attributes. */
static int parse_key(struct parser *p, struct ty_fmt_key *k, bool attrs)
{
    struct ty_buf path = TY_BUF_INIT;
    int r = 0;

    skip_ws(p);
    for (;;) {
        size_t at = p->pos;
        char *name = take_name(p, true);
        if (!name) {
            r = fail(p, "expected a key name");
            break;
        }
        if (p->s[p->pos] == '(' && k->nsegs > 0) { /* a transform */
            p->pos = at;
            p->pos += strlen(name);
            r = parse_transform(p, name, k);
            free(name);
            if (r < 0 || p->s[p->pos] != '.')
                break;
            p->pos++;
            continue;
        }
        if (k->ntr > 0) {
            free(name);
            p->pos = at;
            r = fail(p, "expected a transform after a transform, as key.date().basename()");
            break;
        }
        k->segs = xreallocarray(k->segs, k->nsegs + 1, sizeof(*k->segs));
        k->segs[k->nsegs] = (struct ty_fmt_seg){.name = name};
        ty_buf_printf(&path, "%s%s", k->nsegs ? "." : "", name);
        if (p->s[p->pos] == '[') {
            char *end;
            long idx = strtol(p->s + p->pos + 1, &end, 10);
            if (end == p->s + p->pos + 1 || *end != ']') {
                p->pos++;
                r = fail(p, "expected a list index such as [0] after '%s'", name);
                k->nsegs++;
                break;
            }
            k->segs[k->nsegs].has_index = true;
            k->segs[k->nsegs].index = idx;
            ty_buf_printf(&path, "[%ld]", idx);
            p->pos = (size_t)(end + 1 - p->s);
        }
        k->nsegs++;
        if (p->s[p->pos] != '.')
            break;
        p->pos++;
    }
    k->path = ty_buf_take(&path);
    while (r == 0 && attrs) {
        skip_ws(p);
        if (p->s[p->pos] != ':')
            break;
        p->pos++;
        r = parse_key_attr(p, k);
    }
    return r;
}

static int job_key_check(const char *const *names, size_t n, struct ty_error *err)
{
    return ty_jobkey_check(names, n, NULL, err);
}

/* The key's names must be a key of the resources (the Job's, unless the parse says). */
static int check_key(struct parser *p, size_t at, const struct ty_fmt_key *k)
{
    const char **names = xcalloc(k->nsegs + 1, sizeof(*names));
    struct ty_error e = {0};
    int r;

    for (size_t i = 0; i < k->nsegs; i++)
        names[i] = k->segs[i].name;
    r = (p->check ? p->check : job_key_check)(names, k->nsegs, &e);
    free(names);
    if (r < 0) {
        p->pos = at;
        return fail(p, "%s", ty_error_msg(&e));
    }
    return 0;
}

static void key_release(struct ty_fmt_key *k)
{
    for (size_t i = 0; i < k->nsegs; i++)
        free(k->segs[i].name);
    free(k->segs);
    for (size_t i = 0; i < k->ntr; i++) {
        for (size_t a = 0; a < TY_ARRAY_SIZE(k->tr[i].arg); a++)
            free(k->tr[i].arg[a]);
    }
    free(k->tr);
    free(k->path);
    free(k->label);
}

void ty_format_keys_free(struct ty_fmt_key *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        key_release(&keys[i]);
    free(keys);
}

/* Keys separated by ',' up to @close (')' or the end when 0), with '~' prefixes when @tilde. */
static int parse_keys(struct parser *p, char close, bool tilde, struct ty_fmt_key **keys, size_t *n)
{
    char buf[8];
    int r;

    for (;;) {
        struct ty_fmt_key k = {0};
        bool desc = false;
        size_t at;
        skip_ws(p);
        if (tilde && p->s[p->pos] == '~') {
            desc = true;
            p->pos++;
        }
        at = p->pos;
        r = parse_key(p, &k, !tilde);
        if (r == 0)
            r = check_key(p, at, &k);
        if (r < 0) {
            key_release(&k);
            return r;
        }
        k.reverse |= desc;
        *keys = xreallocarray(*keys, *n + 1, sizeof(**keys));
        (*keys)[(*n)++] = k;
        skip_ws(p);
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == close)
            return 0;
        return fail(p,
                    "expected ',' or %s after a key, found %s",
                    close ? "')'" : "the end",
                    found(p, buf, sizeof(buf)));
    }
}

static int parse_name(struct parser *p, struct ty_format *f)
{
    _cleanup_free_ char *name = take_name(p, false);
    struct ty_buf valid = TY_BUF_INIT;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    int r;

    for (size_t i = 0; name && i < TY_ARRAY_SIZE(fmt_names); i++)
        if (strcmp(name, fmt_names[i]) == 0) {
            f->name = (enum ty_fmt_name)i;
            return 0;
        }
    for (size_t i = 0; i < TY_ARRAY_SIZE(fmt_names); i++) {
        size_t d = name ? ty_jobkey_distance(name, fmt_names[i]) : (size_t)-1;
        ty_buf_printf(&valid, "%s%s", i ? ", " : "", fmt_names[i]);
        if (d < best_d)
            best_d = d, best = fmt_names[i];
    }
    p->pos = 0;
    if (name && best_d <= 2)
        r = fail(p,
                 "unknown format '%s' (did you mean '%s'?); valid formats: %s",
                 name,
                 best,
                 ty_buf_str(&valid));
    else
        r = fail(p,
                 "unknown format '%s'; valid formats: %s, as NAME[ATTRIBUTES](KEYS)",
                 name ? name : p->s,
                 ty_buf_str(&valid));
    ty_buf_release(&valid);
    return r;
}

int ty_format_parse(const char *text, struct ty_format **ret, struct ty_error *err)
{
    return ty_format_parse_keys(text, NULL, ret, err);
}

int ty_format_parse_keys(const char *text,
                         ty_fmt_key_check_fn check,
                         struct ty_format **ret,
                         struct ty_error *err)
{
    struct parser p = {.s = text, .err = err, .check = check};
    struct ty_format *f;
    char buf[8];
    int r;

    if (strlen(text) > MAX_TEXT)
        return ty_error_set(err, EINVAL, "longer than %d characters", MAX_TEXT);
    f = xcalloc(1, sizeof(*f));
    skip_ws(&p);
    r = parse_name(&p, f);
    skip_ws(&p);
    if (r == 0 && p.s[p.pos] == '[') {
        do {
            p.pos++;
            skip_ws(&p);
            r = parse_attr(&p, f);
            skip_ws(&p);
        } while (r == 0 && p.s[p.pos] == ',');
        if (r == 0)
            r = expect(&p, ']', "to close the attributes");
        skip_ws(&p);
    }
    if (r == 0 && p.s[p.pos] == '(') {
        p.pos++;
        r = parse_keys(&p, ')', false, &f->keys, &f->nkeys);
        if (r == 0)
            p.pos++;
        skip_ws(&p);
    }
    if (r == 0 && p.s[p.pos])
        r = fail(&p, "expected '[', '(' or the end, found %s", found(&p, buf, sizeof(buf)));
    if (r < 0) {
        ty_format_free(f);
        return r;
    }
    *ret = f;
    return 0;
}

void ty_format_free(struct ty_format *f)
{
    if (!f)
        return;
    ty_format_keys_free(f->keys, f->nkeys);
    free(f->title);
    free(f->separator);
    free(f->delimiter);
    free(f->terminator);
    free(f);
}

int ty_format_sort_parse(const char *text,
                         struct ty_fmt_key **keys,
                         size_t *n,
                         struct ty_error *err)
{
    struct parser p = {.s = text, .err = err};
    int r;

    *keys = NULL;
    *n = 0;
    if (strlen(text) > MAX_TEXT)
        return ty_error_set(err, EINVAL, "longer than %d characters", MAX_TEXT);
    r = parse_keys(&p, '\0', true, keys, n);
    if (r < 0) {
        ty_format_keys_free(*keys, *n);
        *keys = NULL;
        *n = 0;
    }
    return r;
}

bool ty_format_needs_keys(const struct ty_format *f)
{
    return f->nkeys == 0 &&
           (f->name == TY_FMT_VALUE || f->name == TY_FMT_CSV || f->name == TY_FMT_TABLE);
}
