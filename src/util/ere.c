/* SPDX-License-Identifier: Apache-2.0
 * ere.c: POSIX extended regular expressions (ere.h) compiled to a small program for a Thompson
 * NFA: characters, sets, anchors, SPLIT (two ways on) and JMP, whose jumps are relative so that
 * a repetition copies its expression's code as it is (ere-int.h); ere-search.c runs it. */
#include "ere.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ere-int.h"
#include "macro.h"

/* The largest count of an interval, as glibc's RE_DUP_MAX. */
#define DUP_MAX 0x7fff
#define DUP_INF (-1)

struct comp {
    const char *p; /* the next character to read */
    struct insn *code;
    size_t n; /* instructions written */
    struct set *sets;
    size_t nsets, setcap;
    int depth;
    char *msg;
    size_t len;
};

/* ---- characters ---- */

static uint32_t next_char(struct comp *c)
{
    size_t len;
    uint32_t ch = ere_decode((const unsigned char *)c->p, strnlen(c->p, 4), &len);
    c->p += len;
    return ch;
}

/* ---- errors and emitting ---- */

static int fail(struct comp *c, int rc, const char *why)
{
    (void)snprintf(c->msg, c->len, "%s", why);
    return rc;
}

static int too_large(struct comp *c)
{
    (void)snprintf(c->msg,
                   c->len,
                   "is too large: with its repetitions written out it is over %d matching steps",
                   TY_ERE_MAX_INSNS);
    return -E2BIG;
}

static int emit(struct comp *c, uint8_t op, uint8_t kind, uint32_t arg)
{
    if (c->n == TY_ERE_MAX_INSNS)
        return too_large(c);
    c->code[c->n++] = (struct insn){.op = op, .kind = kind, .arg = arg};
    return 0;
}

/* Insert a SPLIT (its ways to be set by the caller) at @at, moving the code after it on by one:
 * jumps are relative and none crosses @at from before it to after it, so all stay right. */
static int insert_split(struct comp *c, size_t at)
{
    if (c->n == TY_ERE_MAX_INSNS)
        return too_large(c);
    memmove(c->code + at + 1, c->code + at, (c->n - at) * sizeof(*c->code));
    c->code[at] = (struct insn){.op = OP_SPLIT};
    c->n++;
    return 0;
}

static void copy_code(struct comp *c, size_t from, size_t count)
{
    memcpy(c->code + c->n, c->code + from, count * sizeof(*c->code));
    c->n += count;
}

/* ---- sets ---- */

static struct set *new_set(struct comp *c, bool negated)
{
    if (c->nsets == c->setcap) {
        size_t cap = c->setcap ? c->setcap * 2 : 4;
        struct set *s = realloc(c->sets, cap * sizeof(*s));
        if (!s)
            return NULL;
        c->sets = s;
        c->setcap = cap;
    }
    c->sets[c->nsets] = (struct set){.negated = negated};
    return &c->sets[c->nsets++];
}

static int set_add(struct set *s, uint32_t lo, uint32_t hi)
{
    for (; lo <= hi && lo < 128; lo++)
        s->ascii[lo >> 6] |= UINT64_C(1) << (lo & 63);
    if (lo > hi)
        return 0;
    struct range *r = realloc(s->ranges, (s->nranges + 1) * sizeof(*r));
    if (!r)
        return -ENOMEM;
    s->ranges = r;
    r[s->nranges++] = (struct range){lo, hi};
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sort @s's ranges and merge those that overlap or touch, so that set_has finds a character
 * by binary search: a bracket of a thousand characters costs ten comparisons, not a thousand. */
static void set_finish(struct set *s)
{
    size_t k = 0;

    if (s->nranges < 2)
        return;
    qsort(s->ranges, s->nranges, sizeof(*s->ranges), range_cmp);
    for (size_t i = 1; i < s->nranges; i++) {
        if (s->ranges[i].lo <= s->ranges[k].hi + 1) {
            if (s->ranges[i].hi > s->ranges[k].hi)
                s->ranges[k].hi = s->ranges[i].hi;
        } else {
            s->ranges[++k] = s->ranges[i];
        }
    }
    s->nranges = k + 1;
}

/* The C locale's character classes, as lists of ranges (the unused ones are {0, 0}). */
static const struct {
    const char *name;
    struct range r[5];
} classes[] = {
    {"alpha", {{'A', 'Z'}, {'a', 'z'}}},
    {"digit", {{'0', '9'}}},
    {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
    {"upper", {{'A', 'Z'}}},
    {"lower", {{'a', 'z'}}},
    {"space", {{'\t', '\r'}, {' ', ' '}}},
    {"blank", {{'\t', '\t'}, {' ', ' '}}},
    {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
    {"print", {{' ', '~'}}},
    {"graph", {{'!', '~'}}},
    {"cntrl", {{0, 0x1f}, {0x7f, 0x7f}}},
    {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}},
    {"word", {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}}, /* \w, not a POSIX name */
};

/* Add the class @name (@n bytes) to @s; -EINVAL when there is none of that name. */
static int set_add_class(struct set *s, const char *name, size_t n)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(classes); i++) {
        if (strlen(classes[i].name) != n || memcmp(classes[i].name, name, n) != 0)
            continue;
        for (size_t k = 0; k < TY_ARRAY_SIZE(classes[i].r) && classes[i].r[k].hi; k++) {
            int rc = set_add(s, classes[i].r[k].lo, classes[i].r[k].hi);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    return -EINVAL;
}

/* ---- bracket expressions ---- */

/* At "[x" (x one of ":=."): the text up to the closing "x]" in *@name, *@n; the cursor then
 * after it. -EINVAL (EBRACK) when it is not closed. */
static int bracket_word(struct comp *c, const char **name, size_t *n)
{
    const char end[3] = {c->p[1], ']', '\0'};
    const char *e = strstr(c->p + 2, end);

    if (!e)
        return fail(c, -EINVAL, "Unmatched [, [^, [:, [., or [=");
    *name = c->p + 2;
    *n = (size_t)(e - *name);
    c->p = e + 2;
    return 0;
}

/* One character from a "[.c.]" or "[=c=]" element: -EINVAL unless it is one character. */
static int collating_char(struct comp *c, const char *s, size_t n, uint32_t *ch)
{
    size_t len;

    if (n == 0)
        return fail(c, -EINVAL, "Invalid collation character");
    *ch = ere_decode((const unsigned char *)s, n, &len);
    if (len != n)
        return fail(c, -EINVAL, "Invalid collation character");
    return 0;
}

/* One element of a bracket expression: a class (*@is_class), or a character in *@ch that may
 * start a range (*@rangeable: not for "[=c=]"). */
static int
bracket_elem(struct comp *c, struct set *s, uint32_t *ch, bool *is_class, bool *rangeable)
{
    const char *name;
    size_t n;
    int rc;

    *is_class = false;
    *rangeable = true;
    if (c->p[0] == '[' && c->p[1] && strchr(":=.", c->p[1])) {
        char kind = c->p[1];
        if ((rc = bracket_word(c, &name, &n)) < 0)
            return rc;
        if (kind == ':') {
            *is_class = true;
            rc = n == 4 && memcmp(name, "word", 4) == 0 ? -EINVAL : set_add_class(s, name, n);
            return rc == -EINVAL ? fail(c, rc, "Invalid character class name") : rc;
        }
        *rangeable = kind == '.';
        return collating_char(c, name, n, ch);
    }
    *ch = next_char(c);
    return 0;
}

/* At '[': the bracket expression as a set instruction. */
static int parse_bracket(struct comp *c)
{
    struct set *s;
    uint32_t lo, hi;
    bool is_class, rangeable, end_class, end_rangeable;
    int rc;

    c->p++;
    s = new_set(c, *c->p == '^');
    if (!s)
        return -ENOMEM;
    if (s->negated)
        c->p++;
    for (bool first = true;; first = false) {
        if (!*c->p)
            return fail(c, -EINVAL, "Unmatched [, [^, [:, [., or [=");
        if (*c->p == ']' && !first)
            break;
        if ((rc = bracket_elem(c, s, &lo, &is_class, &rangeable)) < 0)
            return rc;
        bool range = c->p[0] == '-' && c->p[1] && c->p[1] != ']';
        if (range && (is_class || !rangeable))
            return fail(c, -EINVAL, "Invalid range end");
        if (is_class)
            continue;
        hi = lo;
        if (range) {
            c->p++;
            if ((rc = bracket_elem(c, s, &hi, &end_class, &end_rangeable)) < 0)
                return rc;
            if (end_class || !end_rangeable || hi < lo ||
                (c->p[0] == '-' && c->p[1] && c->p[1] != ']'))
                return fail(c, -EINVAL, "Invalid range end");
        }
        if ((rc = set_add(s, lo, hi)) < 0)
            return rc;
    }
    c->p++;
    set_finish(s);
    return emit(c, OP_SET, 0, (uint32_t)(c->nsets - 1));
}

/* A set instruction for an escape's class (\w \s \d, negated for \W \S \D). */
static int emit_class(struct comp *c, const char *name, bool negated)
{
    struct set *s = new_set(c, negated);
    int rc;

    if (!s)
        return -ENOMEM;
    if ((rc = set_add_class(s, name, strlen(name))) < 0)
        return rc;
    return emit(c, OP_SET, 0, (uint32_t)(c->nsets - 1));
}

/* ---- expressions ---- */

static int parse_alt(struct comp *c);

/* At '\\': an escape; *@assertion when it is an anchor. */
static int parse_escape(struct comp *c, bool *assertion)
{
    static const char anchors[] = "bB<>`'";
    static const uint8_t kinds[] = {A_WORDB, A_NWORDB, A_WSTART, A_WEND, A_BOL, A_EOL};
    char e = c->p[1];
    const char *a;

    if (!e)
        return fail(c, -EINVAL, "Trailing backslash");
    if (e >= '1' && e <= '9') {
        (void)snprintf(c->msg, c->len, "uses a back-reference (\\%c), which is not supported", e);
        return -E2BIG;
    }
    if ((a = strchr(anchors, e)) != NULL) {
        c->p += 2;
        *assertion = true;
        return emit(c, OP_ASSERT, kinds[a - anchors], 0);
    }
    switch (e) {
    case 'w':
    case 'W':
        c->p += 2;
        return emit_class(c, "word", e == 'W');
    case 's':
    case 'S':
        c->p += 2;
        return emit_class(c, "space", e == 'S');
    case 'd':
    case 'D':
        c->p += 2;
        return emit_class(c, "digit", e == 'D');
    default:
        c->p++;
        return emit(c, OP_CHAR, 0, next_char(c));
    }
}

static int parse_atom(struct comp *c, bool *assertion)
{
    int rc;

    switch (*c->p) {
    case '(':
        if (c->depth == TY_ERE_MAX_DEPTH) {
            (void)snprintf(c->msg, c->len, "nests parentheses deeper than %d", TY_ERE_MAX_DEPTH);
            return -E2BIG;
        }
        c->depth++;
        c->p++;
        if ((rc = parse_alt(c)) < 0)
            return rc;
        if (*c->p != ')')
            return fail(c, -EINVAL, "Unmatched ( or \\(");
        c->p++;
        c->depth--;
        return 0;
    case '*':
    case '+':
    case '?':
    case '{':
        return fail(c, -EINVAL, "Invalid preceding regular expression");
    case '[':
        return parse_bracket(c);
    case '.':
        c->p++;
        return emit(c, OP_ANY, 0, 0);
    case '^':
    case '$':
        *assertion = true;
        return emit(c, OP_ASSERT, *c->p++ == '^' ? A_BOL : A_EOL, 0);
    case '\\':
        return parse_escape(c, assertion);
    default:
        return emit(c, OP_CHAR, 0, next_char(c));
    }
}

/* A count of an interval at the cursor: -1 when there are no digits. */
static long interval_count(struct comp *c)
{
    long v = -1;

    for (; *c->p >= '0' && *c->p <= '9'; c->p++)
        v = v < 0 ? *c->p - '0' : (v > DUP_MAX ? v : v * 10 + (*c->p - '0'));
    return v;
}

/* At a repetition operator: its counts in *@min and *@max (DUP_INF: no upper bound). */
static int parse_bounds(struct comp *c, long *min, long *max)
{
    char op = *c->p++;

    if (op != '{') {
        *min = op == '+';
        *max = op == '?' ? 1 : DUP_INF;
        return 0;
    }
    *min = interval_count(c);
    *max = *min;
    if (*c->p == ',') {
        c->p++;
        *max = interval_count(c);
        if (*max < 0)
            *max = DUP_INF;
    }
    if (*c->p != '}')
        return fail(c, -EINVAL, strchr(c->p, '}') ? "Invalid content of \\{\\}" : "Unmatched \\{");
    c->p++;
    if (*min < 0) {
        if (*max == DUP_INF && c->p[-2] != ',')
            return fail(c, -EINVAL, "Invalid content of \\{\\}");
        *min = 0;
    }
    if (*min > DUP_MAX || *max > DUP_MAX)
        return fail(c, -EINVAL, "Regular expression too big");
    if (*max != DUP_INF && *max < *min)
        return fail(c, -EINVAL, "Invalid content of \\{\\}");
    return 0;
}

/* Repeat the code from @start to the end @min to @max times: X{M,} is M copies of X, the last
 * followed by SPLIT(back to it, out); X{0,} is SPLIT(X, out) X JMP(back to the SPLIT); X{M,N}
 * is M copies, then N-M of SPLIT(X, end) X, each SPLIT leaving for the end of them all (nested,
 * (X(X(X)?)?)?, rather than X?X?X?: after k characters a thread is in one copy, not in any). */
static int repeat(struct comp *c, size_t start, long min, long max)
{
    size_t s = c->n - start, opt;
    uint64_t need;
    int rc;

    if (max == 0 || s == 0) { /* none, or any number of nothing: nothing */
        c->n = start;
        return 0;
    }
    if (max == DUP_INF)
        need = min == 0 ? s + 2 : (uint64_t)min * s + 1;
    else
        need = (uint64_t)min * s + (uint64_t)(max - min) * (s + 1);
    if (start + need > TY_ERE_MAX_INSNS)
        return too_large(c);
    if (min == 0) {
        if ((rc = insert_split(c, start)) < 0)
            return rc;
        c->code[start].x = 1;
        if (max == DUP_INF) {
            c->code[start].y = (int16_t)(s + 2);
            c->code[c->n] = (struct insn){.op = OP_JMP, .x = (int16_t) - (int)(s + 1)};
            c->n++;
            return 0;
        }
        opt = start++; /* X itself is now the first optional copy */
        min = 1;
    } else {
        for (long k = 1; k < min; k++)
            copy_code(c, start, s);
        if (max == DUP_INF) {
            c->code[c->n] = (struct insn){.op = OP_SPLIT, .x = (int16_t) - (int)s, .y = 1};
            c->n++;
            return 0;
        }
        opt = c->n;
    }
    for (long k = min; k < max; k++) {
        c->code[c->n] = (struct insn){.op = OP_SPLIT, .x = 1};
        c->n++;
        copy_code(c, start, s);
    }
    for (size_t pc = opt; pc < c->n; pc += s + 1) /* each optional copy's SPLIT */
        c->code[pc].y = (int16_t)(c->n - pc);
    return 0;
}

/* An atom and the repetitions that follow it. */
static int parse_piece(struct comp *c)
{
    size_t start = c->n;
    bool assertion = false;
    long min, max;
    int rc;

    if ((rc = parse_atom(c, &assertion)) < 0)
        return rc;
    while (*c->p == '*' || *c->p == '+' || *c->p == '?' || *c->p == '{') {
        if (assertion) /* "^*": glibc refuses it too */
            return fail(c, -EINVAL, "Invalid preceding regular expression");
        if ((rc = parse_bounds(c, &min, &max)) < 0 || (rc = repeat(c, start, min, max)) < 0)
            return rc;
    }
    return 0;
}

/* Pieces up to a '|', the ')' of an open group or the end. */
static int parse_branch(struct comp *c)
{
    int rc;

    while (*c->p && *c->p != '|' && !(*c->p == ')' && c->depth > 0))
        if ((rc = parse_piece(c)) < 0)
            return rc;
    return 0;
}

/* Branches separated by '|': A|B is SPLIT(A, B) A JMP(out) B. */
static int parse_alt(struct comp *c)
{
    size_t start = c->n, jmp;
    int rc;

    if ((rc = parse_branch(c)) < 0)
        return rc;
    while (*c->p == '|') {
        c->p++;
        if ((rc = insert_split(c, start)) < 0 || (rc = emit(c, OP_JMP, 0, 0)) < 0)
            return rc;
        jmp = c->n - 1;
        c->code[start].x = 1;
        c->code[start].y = (int16_t)(c->n - start);
        if ((rc = parse_branch(c)) < 0)
            return rc;
        c->code[jmp].x = (int16_t)(c->n - jmp);
    }
    return 0;
}

/* The ASCII characters a match can start with (re->first), unless a match can be empty
 * (re->skip false): the instructions that consume a character, reached from the start through
 * SPLITs, JMPs and any anchor. And the ASCII text every match starts with (re->prefix): the
 * characters from the first instruction on, up to the first that is not one (an ASCII byte is
 * never inside a UTF-8 character, so the search may jump to where that text is). */
static void find_first(struct ty_ere *re)
{
    uint16_t stack[2 * TY_ERE_MAX_INSNS + 4];
    bool *seen = calloc(re->ncode, sizeof(*seen));
    size_t sp = 0;

    re->skip = seen != NULL;
    if (!seen)
        return;
    stack[sp++] = 0;
    while (sp > 0 && re->skip) {
        size_t pc = stack[--sp];
        const struct insn *in = &re->code[pc];
        if (seen[pc])
            continue;
        seen[pc] = true;
        switch (in->op) {
        case OP_MATCH:
            re->skip = false;
            break;
        case OP_SPLIT:
            stack[sp++] = (uint16_t)(pc + (size_t)(ptrdiff_t)in->y);
            /* fall through */
        case OP_JMP:
            stack[sp++] = (uint16_t)(pc + (size_t)(ptrdiff_t)in->x);
            break;
        case OP_ASSERT:
            stack[sp++] = (uint16_t)(pc + 1);
            break;
        default:
            for (uint32_t ch = 0; ch < 128; ch++)
                if (ere_consumes(re, in, ch))
                    re->first[ch >> 6] |= UINT64_C(1) << (ch & 63);
        }
    }
    free(seen);
    for (size_t pc = 0;
         pc + 1 < sizeof(re->prefix) && re->code[pc].op == OP_CHAR && re->code[pc].arg < 128;
         pc++)
        re->prefix[re->nprefix++] = (char)re->code[pc].arg;
}

static void free_sets(struct set *sets, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(sets[i].ranges);
    free(sets);
}

int ty_ere_compile(const char *pattern, unsigned flags, struct ty_ere **ret, char *msg, size_t len)
{
    struct comp c = {.p = pattern, .msg = msg, .len = len};
    struct ty_ere *re = NULL;
    int rc;

    c.code = malloc((TY_ERE_MAX_INSNS + 1) * sizeof(*c.code));
    if (!c.code)
        return -ENOMEM;
    rc = parse_alt(&c);
    if (rc == 0 && *c.p) /* only a ')' stops the outermost level early */
        rc = fail(&c, -EINVAL, "Unmatched ) or \\)");
    if (rc == 0) {
        c.code[c.n++] = (struct insn){.op = OP_MATCH};
        re = calloc(1, sizeof(*re));
        rc = re ? 0 : -ENOMEM;
    }
    if (rc == 0) {
        struct insn *code = realloc(c.code, c.n * sizeof(*code));
        re->code = code ? code : c.code;
        re->ncode = c.n;
        re->sets = c.sets;
        re->nsets = c.nsets;
        re->anchored = re->code[0].op == OP_ASSERT && re->code[0].kind == A_BOL;
        if (!(flags & TY_ERE_NO_SHORTCUTS))
            find_first(re);
        *ret = re;
        return 0;
    }
    if (rc == -ENOMEM)
        (void)snprintf(msg, len, "out of memory");
    free(c.code);
    free_sets(c.sets, c.nsets);
    return rc;
}

void ty_ere_free(struct ty_ere *re)
{
    if (!re)
        return;
    free(re->code);
    free_sets(re->sets, re->nsets);
    free(re);
}
