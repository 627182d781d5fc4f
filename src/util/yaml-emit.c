/* SPDX-License-Identifier: Apache-2.0
 * yaml-emit.c: jansson values as YAML in gcloud's `--format yaml` style (rules in
 * yaml-emit.h). The quoting decisions follow PyYAML's emitter (analyze_scalar and its implicit
 * resolvers), leaning towards quoting where YAML 1.1 and 1.2 readers disagree (1e3, 0o17, y). */
#include "yaml-emit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

enum ctx { CTX_TOP, CTX_MAPVAL, CTX_SEQITEM };

static void indent_to(struct ty_buf *b, int n)
{
    for (int i = 0; i < n; i++)
        ty_buf_putc(b, ' ');
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Decode one UTF-8 sequence at @p (valid UTF-8, as jansson guarantees); returns its length. */
static size_t utf8_next(const unsigned char *p, uint32_t *cp)
{
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if ((p[0] & 0xe0) == 0xc0 && p[1]) {
        *cp = ((uint32_t)(p[0] & 0x1f) << 6) | (p[1] & 0x3f);
        return 2;
    }
    if ((p[0] & 0xf0) == 0xe0 && p[1] && p[2]) {
        *cp = ((uint32_t)(p[0] & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f);
        return 3;
    }
    if ((p[0] & 0xf8) == 0xf0 && p[1] && p[2] && p[3]) {
        *cp = ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) |
              ((uint32_t)(p[2] & 0x3f) << 6) | (p[3] & 0x3f);
        return 4;
    }
    *cp = UINT32_MAX; /* not valid UTF-8: the byte is special */
    return 1;
}

/* Code points YAML would not keep as written outside double quotes (PyYAML's "special
 * characters": controls other than LF, DEL, C1 controls, NEL, LS, PS, BOM, surrogates). */
static bool special_cp(uint32_t c)
{
    if (c == '\n')
        return false;
    if (c < 0x20 || c == 0x7f)
        return true;
    if (c < 0x7f)
        return false;
    if (c < 0xa0 || c == 0x2028 || c == 0x2029 || c == 0xfeff)
        return true;
    return (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff || c > 0x10ffff;
}

static bool has_special(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c;
        p += utf8_next(p, &c);
        if (special_cp(c))
            return true;
    }
    return false;
}

/* y, yes, on, true, ~, null ... in their YAML 1.1 spellings. */
static bool is_bool_or_null(const char *s)
{
    static const char *const words[] = {
        "y",  "Y",    "yes",  "Yes",  "YES",   "n",     "N",     "no", "No",
        "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On",
        "ON", "off",  "Off",  "OFF",  "null",  "Null",  "NULL",  "~",
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(s, words[i]) == 0)
            return true;
    return false;
}

/* Ints and floats of YAML 1.1 and 1.2: 12, -3, 1_000, 0b101, 0o17, 017, 0x1F, 1.5, .5, 1.,
 * 1e3, 1.5E-3, 190:20:30, 1:20.5, .inf, -.Inf, .NaN. */
static bool is_number(const char *s)
{
    const char *p = s;
    bool digit = false;

    if (*p == '+' || *p == '-')
        p++;
    if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0 ||
        strcmp(p, ".nan") == 0 || strcmp(p, ".NaN") == 0 || strcmp(p, ".NAN") == 0)
        return true;
    if (p[0] == '0' && (p[1] == 'b' || p[1] == 'o' || p[1] == 'x') && p[2]) {
        const char *ok = p[1] == 'b'   ? "01_"
                         : p[1] == 'o' ? "01234567_"
                                       : "0123456789abcdefABCDEF_";
        return strspn(p + 2, ok) == strlen(p + 2);
    }
    /* mantissa: [0-9_]* with sexagesimal :[0-5]?[0-9] groups, then .[0-9_]* */
    while (is_digit(*p) || *p == '_')
        digit |= is_digit(*p++);
    while (*p == ':' && digit) {
        p++;
        if (!is_digit(*p))
            return false;
        p++;
        if (is_digit(*p))
            p++;
    }
    if (*p == '.') {
        p++;
        while (is_digit(*p) || *p == '_')
            digit |= is_digit(*p++);
    }
    if (!digit)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!is_digit(*p))
            return false;
        while (is_digit(*p))
            p++;
    }
    return *p == '\0';
}

/* YAML 1.1 timestamps: 2026-11-30, 2026-11-30T09:00:00Z, 2026-1-3 10:00:00 ... (anything that
 * starts with such a date and then ends or continues with T, t or a blank). */
static bool is_timestamp(const char *s)
{
    int i = 0;
    for (; i < 4; i++)
        if (!is_digit(s[i]))
            return false;
    if (s[i++] != '-' || !is_digit(s[i++]))
        return false;
    if (is_digit(s[i]))
        i++;
    if (s[i++] != '-' || !is_digit(s[i++]))
        return false;
    if (is_digit(s[i]))
        i++;
    return s[i] == '\0' || s[i] == 'T' || s[i] == 't' || is_blank(s[i]);
}

bool ty_yaml_needs_quotes(const char *s)
{
    size_t len = strlen(s);

    if (len == 0)
        return true;
    if (is_blank(s[0]) || is_blank(s[len - 1]))
        return true;
    if (strncmp(s, "---", 3) == 0 || strncmp(s, "...", 3) == 0)
        return true;
    if (strchr("#,[]{}&*!|>'\"%@`", s[0]))
        return true;
    if (strchr("-?:", s[0]) && (s[1] == '\0' || is_blank(s[1])))
        return true;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ':' && (s[i + 1] == '\0' || is_blank(s[i + 1])))
            return true;
        if (s[i] == '#' && i > 0 && is_blank(s[i - 1]))
            return true;
        if (s[i] == '\n' || s[i] == '\r')
            return true;
    }
    if (has_special(s))
        return true;
    return is_bool_or_null(s) || is_number(s) || is_timestamp(s) || strcmp(s, "=") == 0 ||
           strcmp(s, "<<") == 0;
}

static void put_double_quoted(struct ty_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    ty_buf_putc(b, '"');
    while (*p) {
        uint32_t c;
        size_t n = utf8_next(p, &c);
        const char *esc = NULL;
        switch (c) {
        case 0:
            esc = "\\0";
            break;
        case '\a':
            esc = "\\a";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\v':
            esc = "\\v";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\r':
            esc = "\\r";
            break;
        case 0x1b:
            esc = "\\e";
            break;
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case 0x85:
            esc = "\\N";
            break;
        case 0x2028:
            esc = "\\L";
            break;
        case 0x2029:
            esc = "\\P";
            break;
        default:
            break;
        }
        if (esc)
            ty_buf_puts(b, esc);
        else if (c == UINT32_MAX)
            ty_buf_printf(b, "\\x%02X", p[0]); /* a stray byte */
        else if (special_cp(c) && c <= 0xff)
            ty_buf_printf(b, "\\x%02X", (unsigned)c);
        else if (special_cp(c))
            ty_buf_printf(b, "\\u%04X", (unsigned)c);
        else
            ty_buf_append(b, p, n);
        p += n;
    }
    ty_buf_putc(b, '"');
}

static void put_single_quoted(struct ty_buf *b, const char *s)
{
    ty_buf_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            ty_buf_putc(b, '\'');
        ty_buf_putc(b, *s);
    }
    ty_buf_putc(b, '\'');
}

/* A one-line form of @s (keys, and strings that cannot be blocks). */
static void put_flow_string(struct ty_buf *b, const char *s)
{
    if (strchr(s, '\n') || strchr(s, '\r') || has_special(s))
        put_double_quoted(b, s);
    else if (ty_yaml_needs_quotes(s))
        put_single_quoted(b, s);
    else
        ty_buf_puts(b, s);
}

/* Can @s be a literal block? (PyYAML: no special characters, no blank before a line break, no
 * blank at the very end.) */
static bool block_ok(const char *s)
{
    size_t len = strlen(s);
    if (has_special(s) || strchr(s, '\r'))
        return false;
    if (len > 0 && is_blank(s[len - 1]))
        return false;
    for (size_t i = 0; i + 1 < len; i++)
        if (is_blank(s[i]) && s[i + 1] == '\n')
            return false;
    return true;
}

/* "|-" + lines at @content_indent. The cursor is where the header goes. */
static void put_block(struct ty_buf *b, const char *s, int content_indent)
{
    size_t len = strlen(s);
    const char *p = s, *end;

    ty_buf_putc(b, '|');
    if (s[0] == ' ' || s[0] == '\n')
        ty_buf_putc(b, '2');
    if (s[len - 1] != '\n')
        ty_buf_putc(b, '-');
    else if (len == 1 || s[len - 2] == '\n')
        ty_buf_putc(b, '+');
    ty_buf_putc(b, '\n');
    /* the text's final newline (if any) ends the last line; every other one ends a line too */
    end = s + len - (s[len - 1] == '\n' ? 1 : 0);
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 0) {
            indent_to(b, content_indent);
            ty_buf_append(b, p, n);
        }
        ty_buf_putc(b, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
}

/* Python's repr(float), as PyYAML prints it: shortest round-trip digits, positional for
 * exponents -4..15, else d.ddde+XX (with ".0" added so YAML 1.1 reads a float). */
static void put_real(struct ty_buf *b, double d)
{
    char buf[64], digits[32];
    int exp, nd = 0;
    const char *p;

    if (isnan(d)) {
        ty_buf_puts(b, ".nan");
        return;
    }
    if (isinf(d)) {
        ty_buf_puts(b, d < 0 ? "-.inf" : ".inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    p = buf;
    if (*p == '-') {
        ty_buf_putc(b, '-');
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (is_digit(*p))
            digits[nd++] = *p;
    /* "%.*e" always writes an exponent of at most 3 digits after the 'e'. */
    exp = (int)strtol(p + 1, NULL, 10);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            ty_buf_puts(b, "0.");
            for (int i = 0; i < -exp - 1; i++)
                ty_buf_putc(b, '0');
            ty_buf_puts(b, digits);
        } else {
            for (int i = 0; i <= exp; i++)
                ty_buf_putc(b, i < nd ? digits[i] : '0');
            ty_buf_putc(b, '.');
            if (nd > exp + 1)
                ty_buf_puts(b, digits + exp + 1);
            else
                ty_buf_putc(b, '0');
        }
    } else {
        ty_buf_putc(b, digits[0]);
        ty_buf_putc(b, '.');
        ty_buf_puts(b, nd > 1 ? digits + 1 : "0");
        ty_buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void emit_node(struct ty_buf *b, const json_t *v, int indent, enum ctx ctx);

/* A mapping whose keys go at @indent; with @first_inline the cursor already stands there. */
static void emit_mapping(struct ty_buf *b, const json_t *obj, int indent, bool first_inline)
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = xcalloc(n, sizeof(*keys));
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)obj, k, v)
    {
        keys[i++] = k;
    }
    qsort(keys, n, sizeof(*keys), cmp_str);
    for (i = 0; i < n; i++) {
        if (i > 0 || !first_inline)
            indent_to(b, indent);
        put_flow_string(b, keys[i]);
        ty_buf_putc(b, ':');
        emit_node(b, json_object_get(obj, keys[i]), indent, CTX_MAPVAL);
    }
    free(keys);
}

static void emit_sequence(struct ty_buf *b, const json_t *arr, int indent, bool first_inline)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        if (i > 0 || !first_inline)
            indent_to(b, indent);
        ty_buf_puts(b, "- ");
        emit_node(b, v, indent, CTX_SEQITEM);
    }
}

/* Emit @v. @indent is the column of the key (CTX_MAPVAL), of the dash (CTX_SEQITEM), or 0.
 * The cursor stands after "key:", after "- ", or at the start of a line. */
static void emit_node(struct ty_buf *b, const json_t *v, int indent, enum ctx ctx)
{
    const char *sep = ctx == CTX_MAPVAL ? " " : "";

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        if (json_object_size(v) == 0) {
            ty_buf_printf(b, "%s{}\n", sep);
        } else if (ctx == CTX_MAPVAL) {
            ty_buf_putc(b, '\n');
            emit_mapping(b, v, indent + 2, false);
        } else if (ctx == CTX_SEQITEM) {
            emit_mapping(b, v, indent + 2, true);
        } else {
            emit_mapping(b, v, 0, false);
        }
        return;
    case JSON_ARRAY:
        if (json_array_size(v) == 0) {
            ty_buf_printf(b, "%s[]\n", sep);
        } else if (ctx == CTX_MAPVAL) {
            ty_buf_putc(b, '\n');
            emit_sequence(b, v, indent, false);
        } else if (ctx == CTX_SEQITEM) {
            emit_sequence(b, v, indent + 2, true);
        } else {
            emit_sequence(b, v, 0, false);
        }
        return;
    case JSON_STRING: {
        const char *s = json_string_value(v);
        ty_buf_puts(b, sep);
        if (strchr(s, '\n') && block_ok(s)) {
            put_block(b, s, ctx == CTX_TOP ? 2 : indent + 2);
            return;
        }
        put_flow_string(b, s);
        break;
    }
    case JSON_INTEGER:
        ty_buf_printf(b, "%s%lld", sep, (long long)json_integer_value(v));
        break;
    case JSON_REAL:
        ty_buf_puts(b, sep);
        put_real(b, json_real_value(v));
        break;
    case JSON_TRUE:
        ty_buf_printf(b, "%strue", sep);
        break;
    case JSON_FALSE:
        ty_buf_printf(b, "%sfalse", sep);
        break;
    case JSON_NULL:
        ty_buf_printf(b, "%snull", sep);
        break;
    }
    ty_buf_putc(b, '\n');
}

void ty_yaml_emit(struct ty_buf *b, const json_t *v)
{
    emit_node(b, v, 0, CTX_TOP);
}

char *ty_yaml_dump(const json_t *v)
{
    struct ty_buf b = TY_BUF_INIT;
    ty_yaml_emit(&b, v);
    return ty_buf_take(&b);
}
