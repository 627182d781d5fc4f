/* SPDX-License-Identifier: Apache-2.0
 * jobfilter.c: the list filter of projects.jobs.list (jobfilter.h). A recursive-descent
 * parser turns the AIP-160 text into a small tree (AND and OR lists flattened, NOT chains
 * folded), with every value decoded, classified and pre-parsed once (number, time, prefix),
 * so that matching a job (jobfilter-match.c) walks the tree and the JSON without allocating.
 *
 * Grammar (whitespace between any two tokens):
 *     filter      = [ expression ]
 *     expression  = factor { [ "AND" ] factor }       AND and juxtaposition: conjunction
 *     factor      = term { "OR" term }                 OR binds tighter than AND
 *     term        = { "NOT" | "-" } simple             NOT binds tightest
 *     simple      = "(" expression ")" | restriction | global
 *     restriction = FIELD OP VALUE                     OP: : = != < <= > >= ~ !~
 *                 | FIELD (":" | "=") "(" VALUE { ["OR"] VALUE } ")"   any of the values
 *     global      = WORD | STRING                      a bare value
 * FIELD is names of letters, digits, '_' and '-' joined by '.'; VALUE a word (which may hold
 * ':' and '~', so bare times work) or a "string" or 'string' (gcloud's filters take both)
 * with \", \' and \\ escapes; the VALUE of '~'
 * and '!~' is a regular expression, compiled here, whose unquoted form may also hold balanced
 * parentheses and the operators' characters. AND, OR and NOT are keywords
 * only in upper case and as whole words; a bare keyword is not accepted as a VALUE. */
#include "jobfilter.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "jobfilter-internal.h"
#include "jobkeys.h"
#include "jobstate.h"
#include "macro.h"
#include "parse.h"
#include "timeutil.h"

/* Deepest nesting of parentheses: the parser recurses once per '(', so this bounds its stack;
 * 32 is far beyond any filter written by hand. */
#define MAX_PARENS 32
/* A message quotes at most FOUND_WORD bytes of the token it found (FOUND_MAX with the quotes
 * and the NUL, rounded up), and at most ECHO_WORD bytes of a word it echoes: enough to
 * recognise the token without copying a long value into every error. */
#define FOUND_WORD   24
#define FOUND_MAX    40
#define ECHO_WORD    64
#define USEC_PER_DAY (INT64_C(86400) * 1000000)

static const char *const op_names[] = {":", "=", "!=", "<", "<=", ">", ">=", "~", "!~"};

/* ---- parsing ---- */

struct parser {
    const char *s;
    size_t pos;
    int depth;
    struct ty_error *err;
    struct ty_filter *filter; /* the one being parsed: its budget, for '~' restrictions */
};

/* A string's quote: gcloud's filters take both. */
static bool is_quote(char c)
{
    return c == '"' || c == '\'';
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_ctrl(char c)
{
    unsigned char u = (unsigned char)c;
    return (u < 0x20 && !is_space(c)) || u == 0x7f;
}

/* A character of a bare word (a field or a global value); @value: of a restriction's value,
 * which may also hold ':' and '~'. */
static bool is_word(char c, bool value)
{
    if (c == '\0' || is_space(c) || is_ctrl(c))
        return false;
    if (c == ':' || c == '~')
        return value;
    return !strchr("()\"=!<>", c);
}

static bool is_field_char(char c)
{
    unsigned char u = (unsigned char)c;
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '_' ||
           c == '-' || u >= 0x80;
}

static size_t word_len(const struct parser *p, size_t off, bool value)
{
    size_t n = 0;
    while (is_word(p->s[off + n], value))
        n++;
    return n;
}

/* The length of the unquoted pattern of '~' at @off: up to a space or the end, holding any
 * balanced parentheses (so `jobId~^(a|b)$` needs no quotes, and a ')' after it still closes
 * a group); a '"' ends it. */
static size_t pattern_len(const struct parser *p, size_t off)
{
    size_t n = 0;
    int depth = 0;

    for (char c; (c = p->s[off + n]) != '\0' && !is_space(c) && !is_ctrl(c) && c != '"'; n++) {
        if (c == '(')
            depth++;
        else if (c == ')' && depth-- == 0)
            break;
    }
    return n;
}

static void skip_ws(struct parser *p)
{
    while (is_space(p->s[p->pos]))
        p->pos++;
}

/* The keyword at @off (a whole word), or NULL. */
static const char *keyword_at(const struct parser *p, size_t off)
{
    static const char *const kw[] = {"AND", "OR", "NOT"};
    size_t n = word_len(p, off, false);

    for (size_t i = 0; i < TY_ARRAY_SIZE(kw); i++)
        if (n == strlen(kw[i]) && memcmp(p->s + off, kw[i], n) == 0)
            return kw[i];
    return NULL;
}

static bool is_not_at(const struct parser *p, size_t off)
{
    const char *kw = keyword_at(p, off);
    return kw && strcmp(kw, "NOT") == 0;
}

/* 1-based character (not byte) index of @off. */
static size_t position(const struct parser *p, size_t off)
{
    size_t chars = 1;
    for (size_t i = 0; i < off; i++)
        if (((unsigned char)p->s[i] & 0xc0) != 0x80)
            chars++;
    return chars;
}

/* What is at @off, for a message: "the end", "a quoted string" or the quoted token. */
static const char *found(const struct parser *p, size_t off, char *buf, size_t n)
{
    size_t wl;

    if (p->s[off] == '\0')
        return "the end";
    if (is_quote(p->s[off]))
        return "a quoted string";
    wl = word_len(p, off, false);
    if (wl == 0)
        wl = p->s[off] == '!' && (p->s[off + 1] == '=' || p->s[off + 1] == '~') ? 2 : 1;
    (void)snprintf(buf, n, "'%.*s'", (int)(wl > FOUND_WORD ? FOUND_WORD : wl), p->s + off);
    return buf;
}

static int fail(struct parser *p, size_t off, const char *fmt, ...) TY_PRINTF(3, 4);
static int fail(struct parser *p, size_t off, const char *fmt, ...)
{
    char msg[TY_ERROR_MSG_MAX - 40]; /* room for " at position N" */
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ty_error_set(p->err, EINVAL, "filter: %s at position %zu", msg, position(p, off));
}

/* A comparison operator at @off: sets *op and *len. Returns 1, 0 (none) or -EINVAL. */
static int op_at(struct parser *p, size_t off, enum jf_op *op, size_t *len)
{
    const char *s = p->s + off;

    *len = 1;
    switch (s[0]) {
    case ':':
        *op = OP_HAS;
        return 1;
    case '=':
        *op = OP_EQ;
        return 1;
    case '~':
        *op = OP_RE;
        return 1;
    case '!':
        if (s[1] != '=' && s[1] != '~')
            return fail(p, off + 1, "expected '=' or '~' after '!'");
        *op = s[1] == '=' ? OP_NE : OP_NRE;
        *len = 2;
        return 1;
    case '<':
    case '>':
        *op = s[0] == '<' ? (s[1] == '=' ? OP_LE : OP_LT) : (s[1] == '=' ? OP_GE : OP_GT);
        *len = s[1] == '=' ? 2 : 1;
        return 1;
    default:
        return 0;
    }
}

/* The "string" or 'string' at p->pos, decoded into *ret (caller frees). */
static int parse_string(struct parser *p, char **ret, size_t *ret_len)
{
    size_t start = p->pos, n = 0;
    char *out = xmalloc(strlen(p->s + start) + 1), q = p->s[start];

    p->pos++;
    for (;;) {
        char c = p->s[p->pos];
        if (c == '\0') {
            free(out);
            return fail(p, start, "unterminated string (no closing '%c') starting", q);
        }
        p->pos++;
        if (c == q)
            break;
        if (c == '\\') {
            c = p->s[p->pos];
            if (!is_quote(c) && c != '\\') {
                free(out);
                return fail(p,
                            p->pos - 1,
                            "unknown escape in a string (only \\\", \\' and \\\\ are allowed)");
            }
            p->pos++;
        }
        out[n++] = c;
    }
    out[n] = '\0';
    *ret = out;
    *ret_len = n;
    return 0;
}

/* After a value: a space, ')' or the end must follow. */
static int check_after_value(struct parser *p)
{
    char buf[FOUND_MAX];
    char c = p->s[p->pos];

    if (c == '\0' || c == ')' || is_space(c))
        return 0;
    return fail(p,
                p->pos,
                "expected a space, ')' or the end after the value, found %s",
                found(p, p->pos, buf, sizeof(buf)));
}

/* Split the field @f (@n bytes at @off) into r->segs. */
static int parse_field(struct parser *p, size_t off, size_t n, struct jf_restr *r)
{
    const char *f = p->s + off;
    size_t start = 0;

    for (size_t i = 0; i <= n; i++) {
        if (i < n && f[i] != '.') {
            if (!is_field_char(f[i]))
                goto bad;
            continue;
        }
        if (i == start)
            goto bad;
        r->segs = xreallocarray(r->segs, r->nsegs + 1, sizeof(*r->segs));
        r->segs[r->nsegs++] = xstrndup(f + start, i - start);
        start = i + 1;
    }
    return 0;
bad:
    return fail(p,
                off,
                "'%.*s' is not a field name (expected names of letters, digits, '_' or '-' "
                "joined by '.')",
                (int)(n > ECHO_WORD ? ECHO_WORD : n),
                f);
}

/* Classify a restriction's decoded value: prefix, presence, number, time. A time field
 * (@kind: an RFC 3339 timestamp or a Duration, by the key) takes only a value of its kind: a
 * duration compared with createTime would never match, and is refused instead. */
static int finish_value(
    struct parser *p, struct jf_restr *r, size_t voff, const char *field, enum ty_jobkey_value kind)
{
    if (r->op <= OP_NE && r->vlen > 0 && r->value[r->vlen - 1] == '*') {
        if (r->vlen == 1 && r->op == OP_HAS) {
            r->present = true;
            return 0;
        }
        r->prefix = true;
        r->value[--r->vlen] = '\0';
    }
    if (r->op == OP_HAS) { /* gcloud's ':' patterns: PREFIX*, *SUFFIX or PREFIX*SUFFIX */
        const char *star = memchr(r->value, '*', r->vlen);
        if (star && (r->prefix || memchr(star + 1, '*', r->vlen - (size_t)(star - r->value) - 1)))
            return fail(p,
                        voff,
                        "at most one '*' in a ':' pattern, not '%.40s%s'",
                        r->value,
                        r->prefix ? "*" : "");
        r->star = star ? (size_t)(star - r->value) + 1 : 0;
    }
    if (kind == TY_JOBKEY_TIMESTAMP) {
        struct ty_error e = {0}, te = {0};
        bool rel = r->value[0] == 'P' || (r->value[0] == '-' && r->value[1] == 'P');
        /* gcloud's relative times: an ISO 8601 duration from now ("-P1D": a day ago) */
        if (!r->prefix && rel && ty_iso8601_offset(r->value, ty_now_usec(), &r->tval, &e) == 0) {
            r->vkind = V_TIME;
            r->tend = r->tval + 1;
            return 0;
        }
        if (!r->prefix && !rel && ty_rfc3339_parse(r->value, &r->tval, &te) == 0) {
            r->vkind = V_TIME;
            /* ':' with a bare date means that whole day. */
            r->tend = r->tval + (r->op == OP_HAS && r->vlen == 10 ? USEC_PER_DAY : 1);
            return 0;
        }
        if (e.code == ERANGE)
            return fail(p, voff, "'%s': %s", field, ty_error_msg(&e));
        if (te.code == EDOM) /* a date and time without its zone */
            return fail(p, voff, "'%s' is a time: %s", field, ty_error_msg(&te));
        return fail(p,
                    voff,
                    "'%s' is a time: expected an RFC 3339 time such as "
                    "\"2026-11-30T09:00:00Z\", a date such as 2026-11-30 or a duration from "
                    "now such as -P1D (ISO 8601), not '%.40s%s'",
                    field,
                    r->value,
                    r->prefix ? "*" : "");
    }
    if (kind == TY_JOBKEY_DURATION) {
        if (!r->prefix && ty_duration_parse(r->value, &r->tval, NULL) == 0) {
            r->vkind = V_DURATION;
            r->tend = r->tval + 1;
            return 0;
        }
        return fail(p,
                    voff,
                    "'%s' is a duration: expected seconds such as 3600s or 1.5s, not '%.40s%s'",
                    field,
                    r->value,
                    r->prefix ? "*" : "");
    }
    if (r->prefix)
        return 0;
    if (ty_parse_int64(r->value, INT64_MIN, INT64_MAX, &r->ival) == 0) {
        r->is_num = r->is_int = true;
        r->dval = (double)r->ival;
    } else if (ty_parse_double(r->value, &r->dval) == 0) {
        r->is_num = true;
    }
    return 0;
}

/* The restriction's field must be a key of the Job (jobkeys.h): sets *info. */
static int
check_key(struct parser *p, size_t foff, const struct jf_restr *r, struct ty_jobkey_info *info)
{
    struct ty_error e = {0};

    if (ty_jobkey_check((const char *const *)r->segs, r->nsegs, info, &e) < 0)
        return fail(p, foff, "%s", ty_error_msg(&e));
    if (info->get_only)
        return fail(p,
                    foff,
                    "'%s' is shown by jobs.get (trainyard jobs describe) only: a list's jobs do "
                    "not carry it",
                    r->segs[0]);
    return 0;
}

static int parse_expr(struct parser *p, struct jf_node **ret);

/* One VALUE of the restriction @r (its field and operator set) at p->pos: a string, or a
 * word (a pattern for '~' and '!~'); decoded, classified and checked against the key @key
 * (@field as written, for messages). */
static int parse_value(struct parser *p,
                       struct jf_restr *r,
                       const struct ty_jobkey_info *key,
                       const char *field)
{
    size_t voff = p->pos;
    int rc;

    if (is_quote(p->s[p->pos])) {
        rc = parse_string(p, &r->value, &r->vlen);
        if (rc < 0)
            return rc;
    } else {
        size_t vl = r->op >= OP_RE ? pattern_len(p, p->pos) : word_len(p, p->pos, true);
        if (vl == 0 || keyword_at(p, p->pos))
            return fail(p,
                        p->pos,
                        "expected a value after '%s%s'%s",
                        field,
                        op_names[r->op],
                        vl ? " (quote a keyword to use it as a value)" : "");
        r->value = xstrndup(p->s + p->pos, vl);
        r->vlen = vl;
        p->pos += vl;
    }
    rc = check_after_value(p);
    if (rc < 0)
        return rc;
    if (r->op >= OP_RE) {
        char msg[TY_ERROR_MSG_MAX - 64];
        r->steps = &p->filter->steps;
        p->filter->patterns = true;
        if (jf_regex_compile(r, key->enums, msg, sizeof(msg)) < 0)
            return fail(p, voff, "%s%s: %s", field, op_names[r->op], msg);
        return 0;
    }
    rc = finish_value(p, r, voff, field, key->value);
    if (rc < 0)
        return rc;
    if (key->enums && r->op <= OP_NE && !r->present) {
        char msg[TY_ERROR_MSG_MAX - 64];
        if (jf_enum_value(key->enums, r->value, r->prefix, msg, sizeof(msg)) < 0)
            return fail(p, voff, "%s: %s", field, msg);
    }
    return 0;
}

/* gcloud's list of values, "FIELD:(V1 V2 ...)" with p->pos at its '(': any of them, as
 * "(FIELD:V1 OR FIELD:V2 ...)"; an OR between two values is allowed. @tmpl holds the field
 * and the operator (':' or '='). */
static int parse_value_list(struct parser *p,
                            const struct jf_restr *tmpl,
                            const struct ty_jobkey_info *key,
                            const char *field,
                            struct jf_node **ret)
{
    struct jf_node *list = jf_node_new(N_OR);
    size_t open = p->pos;
    bool after_or = false; /* an OR must be between two values */
    int r = 0;

    p->pos++;
    for (;;) {
        const char *kw;
        struct jf_node *k;
        skip_ws(p);
        kw = keyword_at(p, p->pos);
        if (after_or && (p->s[p->pos] == ')' || (kw && strcmp(kw, "OR") == 0))) {
            r = fail(p, p->pos, "expected a value after 'OR' in the list of values");
            break;
        }
        if (p->s[p->pos] == ')' && list->n > 0)
            break;
        if (kw && strcmp(kw, "OR") == 0 && list->n > 0) {
            p->pos += 2;
            after_or = true;
            continue;
        }
        after_or = false;
        if (p->s[p->pos] == '\0') {
            r = fail(p, open, "unterminated list of values (no closing ')') starting");
            break;
        }
        k = jf_node_new(N_RESTR);
        k->r.segs = xcalloc(tmpl->nsegs, sizeof(*k->r.segs));
        for (size_t i = 0; i < tmpl->nsegs; i++)
            k->r.segs[i] = xstrdup(tmpl->segs[i]);
        k->r.nsegs = tmpl->nsegs;
        k->r.op = tmpl->op;
        jf_node_add(list, k);
        r = parse_value(p, &k->r, key, field);
        if (r < 0)
            break;
    }
    if (r < 0) {
        jf_node_free(list);
        return r;
    }
    p->pos++; /* the ')' */
    r = check_after_value(p);
    if (r < 0) {
        jf_node_free(list);
        return r;
    }
    *ret = jf_node_simplify(list);
    return 0;
}

/* FIELD OP VALUE, or FIELD OP (VALUE ...) for ':' and '=', with p->pos at OP. */
static int parse_restriction(struct parser *p, size_t foff, size_t flen, struct jf_node **ret)
{
    struct jf_node *n = jf_node_new(N_RESTR);
    struct ty_jobkey_info key;
    char field[ECHO_WORD + 1];
    size_t oplen;
    int r;

    (void)snprintf(
        field, sizeof(field), "%.*s", (int)(flen > ECHO_WORD ? ECHO_WORD : flen), p->s + foff);
    r = parse_field(p, foff, flen, &n->r);
    if (r >= 0)
        r = check_key(p, foff, &n->r, &key);
    if (r >= 0)
        r = op_at(p, p->pos, &n->r.op, &oplen);
    if (r < 0)
        goto out;
    p->pos += oplen;
    skip_ws(p);
    if (p->s[p->pos] == '(' && (n->r.op == OP_HAS || n->r.op == OP_EQ)) {
        r = parse_value_list(p, &n->r, &key, field, ret);
        goto out;
    }
    r = parse_value(p, &n->r, &key, field);
    if (r >= 0)
        *ret = TAKE_PTR(n);
out:
    jf_node_free(n);
    return r;
}

/* A parenthesised expression at p->pos (on its '('). */
static int parse_parens(struct parser *p, struct jf_node **ret)
{
    char buf[FOUND_MAX];
    size_t start = p->pos;
    int r;

    if (p->depth >= MAX_PARENS)
        return fail(p, start, "parentheses nest deeper than %d", MAX_PARENS);
    p->pos++;
    p->depth++;
    r = parse_expr(p, ret);
    if (r < 0)
        return r;
    if (p->s[p->pos] != ')') {
        jf_node_free(*ret);
        *ret = NULL;
        return fail(p,
                    p->pos,
                    "expected ')' to close the '(' at position %zu, found %s",
                    position(p, start),
                    found(p, p->pos, buf, sizeof(buf)));
    }
    p->pos++;
    p->depth--;
    return 0;
}

/* A quoted global restriction at p->pos (on its '"'): a string matched against every field;
 * an operator after it is an error (a field name cannot be quoted). */
static int parse_quoted_global(struct parser *p, struct jf_node **ret)
{
    struct jf_node *n = jf_node_new(N_GLOBAL);
    size_t start = p->pos, oplen, save;
    enum jf_op op;
    int r = parse_string(p, &n->r.value, &n->r.vlen);

    if (r >= 0) {
        save = p->pos;
        skip_ws(p);
        r = op_at(p, p->pos, &op, &oplen);
        if (r > 0)
            r = fail(
                p, start, "expected a field name before '%s', not a quoted string", op_names[op]);
        else
            p->pos = save;
    }
    if (r >= 0)
        r = check_after_value(p);
    if (r < 0) {
        jf_node_free(n);
        return r;
    }
    *ret = n;
    return 0;
}

/* A bare word at p->pos: a field of a restriction when an operator follows, else a global
 * restriction (a trailing '*' dropped: a prefix match). @after names the preceding keyword. */
static int parse_word(struct parser *p, const char *after, struct jf_node **ret)
{
    char buf[FOUND_MAX], afterbuf[FOUND_MAX] = "";
    size_t start = p->pos, wl = word_len(p, start, false), save, oplen;
    enum jf_op op;
    struct jf_node *n;
    int r;

    if (wl == 0 || keyword_at(p, start)) {
        if (after)
            (void)snprintf(afterbuf, sizeof(afterbuf), " after '%s'", after);
        return fail(p,
                    start,
                    "expected a restriction%s, found %s",
                    afterbuf,
                    found(p, start, buf, sizeof(buf)));
    }
    p->pos += wl;
    if (p->s[p->pos] == '(')
        return fail(p,
                    p->pos,
                    "expected a space or an operator after '%.*s' (function calls are not "
                    "supported)",
                    (int)(wl > ECHO_WORD ? ECHO_WORD : wl),
                    p->s + start);
    save = p->pos;
    skip_ws(p);
    r = op_at(p, p->pos, &op, &oplen);
    if (r < 0)
        return r;
    if (r > 0)
        return parse_restriction(p, start, wl, ret);
    p->pos = save;
    r = check_after_value(p);
    if (r < 0)
        return r;
    n = jf_node_new(N_GLOBAL);
    n->r.value = xstrndup(p->s + start, wl);
    n->r.vlen = wl;
    if (n->r.value[wl - 1] == '*')
        n->r.value[--n->r.vlen] = '\0';
    *ret = n;
    return 0;
}

/* A simple expression: parenthesised, a quoted global, or a word (restriction or global). */
static int parse_simple(struct parser *p, const char *after, struct jf_node **ret)
{
    if (p->s[p->pos] == '(')
        return parse_parens(p, ret);
    if (is_quote(p->s[p->pos]))
        return parse_quoted_global(p, ret);
    return parse_word(p, after, ret);
}

static int parse_term(struct parser *p, struct jf_node **ret)
{
    const char *after = NULL;
    struct jf_node *n = NULL, *neg;
    int nots = 0, r;

    for (;;) {
        skip_ws(p);
        if (p->s[p->pos] == '-') {
            p->pos++;
            nots++;
            after = "-";
        } else if (is_not_at(p, p->pos)) {
            p->pos += 3;
            nots++;
            after = "NOT";
        } else {
            break;
        }
    }
    r = parse_simple(p, after, &n);
    if (r < 0)
        return r;
    if (nots % 2) {
        neg = jf_node_new(N_NOT);
        jf_node_add(neg, n);
        n = neg;
    }
    *ret = n;
    return 0;
}

/* After AND/OR @kw: skip spaces; there must be an operand (which may start with NOT). */
static int expect_operand(struct parser *p, const char *kw)
{
    char buf[FOUND_MAX];
    char c;

    skip_ws(p);
    c = p->s[p->pos];
    if (c != '\0' && c != ')' && (!keyword_at(p, p->pos) || is_not_at(p, p->pos)))
        return 0;
    return fail(p,
                p->pos,
                "expected a restriction after '%s', found %s",
                kw,
                found(p, p->pos, buf, sizeof(buf)));
}

static int parse_factor(struct parser *p, struct jf_node **ret)
{
    struct jf_node *list = jf_node_new(N_OR), *n = NULL;
    int r = parse_term(p, &n);

    if (r < 0)
        goto fail;
    jf_node_merge(list, n);
    for (;;) {
        size_t save = p->pos;
        const char *kw;
        skip_ws(p);
        kw = keyword_at(p, p->pos);
        if (!kw || strcmp(kw, "OR") != 0) {
            p->pos = save;
            break;
        }
        p->pos += 2;
        r = expect_operand(p, "OR");
        if (r < 0)
            goto fail;
        r = parse_term(p, &n);
        if (r < 0)
            goto fail;
        jf_node_merge(list, n);
    }
    *ret = jf_node_simplify(list);
    return 0;
fail:
    jf_node_free(list);
    return r;
}

/* Parses up to the end of the text or an unmatched ')' (left at p->pos). */
static int parse_expr(struct parser *p, struct jf_node **ret)
{
    struct jf_node *list = jf_node_new(N_AND), *n = NULL;
    int r;

    skip_ws(p);
    r = parse_factor(p, &n);
    if (r < 0)
        goto fail;
    jf_node_merge(list, n);
    for (;;) {
        const char *kw;
        skip_ws(p);
        if (p->s[p->pos] == '\0' || p->s[p->pos] == ')')
            break;
        kw = keyword_at(p, p->pos);
        if (kw && strcmp(kw, "AND") == 0) {
            p->pos += 3;
            r = expect_operand(p, "AND");
            if (r < 0)
                goto fail;
        }
        r = parse_factor(p, &n);
        if (r < 0)
            goto fail;
        jf_node_merge(list, n);
    }
    *ret = jf_node_simplify(list);
    return 0;
fail:
    jf_node_free(list);
    return r;
}

int ty_filter_parse(const char *text, struct ty_filter **ret, struct ty_error *err)
{
    struct parser p = {.s = text ? text : "", .err = err};
    struct ty_filter *f;
    size_t len = strlen(p.s);
    int r;

    if (len > TY_FILTER_MAX_LEN)
        return ty_error_set(
            err, EINVAL, "filter: longer than %d characters (%zu)", TY_FILTER_MAX_LEN, len);
    for (size_t i = 0; i < len; i++)
        if (is_ctrl(p.s[i]))
            return fail(&p, i, "unexpected control character 0x%02x", (unsigned char)p.s[i]);
    f = xcalloc(1, sizeof(*f));
    f->budget = f->steps = TY_FILTER_MAX_STEPS;
    p.filter = f;
    skip_ws(&p);
    if (p.s[p.pos] != '\0') {
        r = parse_expr(&p, &f->root);
        if (r >= 0 && p.s[p.pos] == ')') {
            r = fail(&p, p.pos, "unexpected ')' (no '(' to close)");
            jf_node_free(f->root);
            f->root = NULL;
        }
        if (r < 0) {
            free(f);
            return r;
        }
        jf_find_hints(f);
    }
    *ret = f;
    return 0;
}
