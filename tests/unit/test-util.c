/* SPDX-License-Identifier: Apache-2.0
 * test-util.c: the util layer (src/util): buffers, string vectors, line splitting, time and
 * number parsing, JSON and YAML loading, the event loop, file helpers and error details. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "error.h"
#include "fdutil.h"
#include "json.h"
#include "linesplit.h"
#include "loop.h"
#include "parse.h"
#include "strv.h"
#include "tap.h"
#include "timeutil.h"
#include "yaml-load.h"

/* ---- ty_buf ------------------------------------------------------------------------------ */

static void test_buf(void)
{
    struct ty_buf b = TY_BUF_INIT;
    char *s;

    is_str(ty_buf_str(&b), "", "buf: empty is \"\"");
    ty_buf_puts(&b, "hello");
    ty_buf_putc(&b, ' ');
    ty_buf_printf(&b, "%s %d", "world", 42);
    is_str(ty_buf_str(&b), "hello world 42", "buf: puts/putc/printf");
    is_int(b.len, 14, "buf: length");
    ty_buf_consume(&b, 6);
    is_str(ty_buf_str(&b), "world 42", "buf: consume");
    ty_buf_consume(&b, 100);
    is_str(ty_buf_str(&b), "", "buf: consume past the end empties");
    is_int(b.len, 0, "buf: length 0 after consume");
    ty_buf_append(&b, "a\0b", 3);
    is_int(b.len, 3, "buf: append keeps NUL bytes");
    ok(memcmp(b.data, "a\0b", 4) == 0, "buf: bytes and terminator");
    ty_buf_reset(&b);
    is_str(ty_buf_str(&b), "", "buf: reset");
    ok(b.cap > 0, "buf: reset keeps memory");
    for (int i = 0; i < 1000; i++)
        ty_buf_printf(&b, "%04d", i);
    is_int(b.len, 4000, "buf: grows past the first allocation");
    ok(strncmp(b.data + 3996, "0999", 4) == 0 && b.data[4000] == '\0', "buf: tail intact");
    s = ty_buf_take(&b);
    is_int(strlen(s), 4000, "buf: take hands the string over");
    ok(b.data == NULL && b.len == 0 && b.cap == 0, "buf: empty after take");
    free(s);
    s = ty_buf_take(&b);
    is_str(s, "", "buf: take of an empty buffer is \"\"");
    free(s);
    ty_buf_puts(&b, "x");
    ty_buf_release(&b);
    ok(b.data == NULL && b.len == 0, "buf: release");
    ty_buf_puts(&b, "again");
    is_str(ty_buf_str(&b), "again", "buf: usable after release");
    ty_buf_release(&b);
}

/* ---- ty_strv ----------------------------------------------------------------------------- */

static void test_strv(void)
{
    char **v = NULL, **c;
    char *src[] = {"b", "c", NULL};
    char **env = NULL;

    is_int(ty_strv_len(NULL), 0, "strv: len(NULL)");
    ok(ty_strv_copy(NULL) == NULL, "strv: copy(NULL)");
    ty_strv_push(&v, "a");
    is_int(ty_strv_len(v), 1, "strv: push creates");
    ty_strv_extend(&v, src);
    ty_strv_extend(&v, NULL);
    ty_strv_push_take(&v, xstrdup("d"));
    is_int(ty_strv_len(v), 4, "strv: extend and push_take");
    is_str(v[0], "a", "strv: [0]");
    is_str(v[2], "c", "strv: [2]");
    is_str(v[3], "d", "strv: [3]");
    ok(v[4] == NULL, "strv: NULL-terminated");
    c = ty_strv_copy(v);
    ok(c != v && c[0] != v[0], "strv: copy is deep");
    is_int(ty_strv_len(c), 4, "strv: copy length");
    is_str(c[1], "b", "strv: copy content");
    ty_strv_free(c);
    ok(ty_strv_free(v) == NULL, "strv: free returns NULL");
    v = xcalloc(1, sizeof(char *));
    c = ty_strv_copy(v);
    ok(c && c[0] == NULL, "strv: copy of an empty vector is empty, not NULL");
    ty_strv_free(c);
    ty_strv_free(v);

    ty_strv_setenv(&env, "PATH", "/bin");
    ty_strv_setenv(&env, "PATHX", "x");
    ty_strv_setenv(&env, "EMPTY", "");
    ty_strv_setenv(&env, "PATH", "/usr/bin:/bin");
    is_int(ty_strv_len(env), 3, "strv: setenv replaces");
    is_str(env[0], "PATH=/usr/bin:/bin", "strv: replaced in place");
    is_str(ty_strv_getenv(env, "PATH"), "/usr/bin:/bin", "strv: getenv");
    is_str(ty_strv_getenv(env, "PATHX"), "x", "strv: getenv of a longer name");
    is_str(ty_strv_getenv(env, "EMPTY"), "", "strv: getenv of an empty value");
    ok(ty_strv_contains(env, "EMPTY=") && !ty_strv_contains(env, "EMPTY") &&
           !ty_strv_contains(NULL, "x"),
       "strv: contains (whole strings only; NULL-safe)");
    ok(ty_strv_getenv(env, "PAT") == NULL, "strv: prefix is not a match");
    ok(ty_strv_getenv(env, "HOME") == NULL, "strv: getenv missing");
    ok(ty_strv_getenv(NULL, "HOME") == NULL, "strv: getenv on NULL");
    ty_strv_setenv(&env, "V", "a=b");
    is_str(ty_strv_getenv(env, "V"), "a=b", "strv: value with '='");
    ty_strv_free(env);
}

/* ---- ty_linesplit ------------------------------------------------------------------------ */

struct lines {
    char **v;
    size_t *len;
    size_t n;
};

static void collect(void *ctx, const char *line, size_t len)
{
    struct lines *l = ctx;
    l->v = xreallocarray(l->v, l->n + 1, sizeof(char *));
    l->len = xreallocarray(l->len, l->n + 1, sizeof(size_t));
    l->v[l->n] = xstrndup(line, len);
    l->len[l->n] = len;
    l->n++;
}

static void lines_free(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    free(l->len);
    memset(l, 0, sizeof(*l));
}

static void test_linesplit(void)
{
    struct ty_linesplit ls = {TY_BUF_INIT};
    struct lines l = {0};
    char *big;

    ty_linesplit_feed(&ls, "one\ntw", 6, collect, &l);
    is_int(l.n, 1, "lines: one complete line");
    ty_linesplit_feed(&ls, "o\nthr", 5, collect, &l);
    ty_linesplit_feed(&ls, "ee\r\n\nfour\r\n", 11, collect, &l);
    is_int(l.n, 5, "lines: five lines");
    if (l.n == 5) {
        is_str(l.v[0], "one", "lines: first");
        is_str(l.v[1], "two", "lines: split across feeds");
        is_str(l.v[2], "three", "lines: split twice, \\r\\n stripped");
        is_str(l.v[3], "", "lines: empty line");
        is_str(l.v[4], "four", "lines: \\r\\n in one feed");
    }
    ty_linesplit_feed(&ls, "partial", 7, collect, &l);
    is_int(l.n, 5, "lines: partial line held");
    ty_linesplit_flush(&ls, collect, &l);
    is_int(l.n, 6, "lines: flush delivers it");
    if (l.n == 6)
        is_str(l.v[5], "partial", "lines: flushed text");
    ty_linesplit_flush(&ls, collect, &l);
    is_int(l.n, 6, "lines: second flush delivers nothing");
    ty_linesplit_feed(&ls, "a\rb\n", 4, collect, &l);
    if (l.n == 7)
        is_str(l.v[6], "a\rb", "lines: inner \\r kept");
    lines_free(&l);

    /* A line longer than TY_LINE_MAX is cut into pieces of TY_LINE_MAX bytes. */
    big = xmalloc(3 * TY_LINE_MAX);
    memset(big, 'x', 3 * TY_LINE_MAX);
    ty_linesplit_feed(&ls, big, 2 * TY_LINE_MAX + 10, collect, &l);
    is_int(l.n, 2, "lines: two full pieces of a long line");
    ty_linesplit_feed(&ls, "y\nz\n", 4, collect, &l);
    is_int(l.n, 4, "lines: the rest and the next line");
    if (l.n == 4) {
        is_int(l.len[0], TY_LINE_MAX, "lines: piece 1 is TY_LINE_MAX bytes");
        is_int(l.len[1], TY_LINE_MAX, "lines: piece 2 is TY_LINE_MAX bytes");
        is_int(l.len[2], 11, "lines: piece 3 is the rest");
        ok(l.v[2][10] == 'y', "lines: rest ends with the last byte");
        is_str(l.v[3], "z", "lines: next line intact");
    }
    lines_free(&l);

    /* The same, fed one small chunk at a time. */
    for (size_t off = 0; off < TY_LINE_MAX + 5; off += 1000) {
        size_t n = TY_LINE_MAX + 5 - off < 1000 ? TY_LINE_MAX + 5 - off : 1000;
        ty_linesplit_feed(&ls, big, n, collect, &l);
    }
    ty_linesplit_feed(&ls, "\n", 1, collect, &l);
    is_int(l.n, 2, "lines: chunked long line cut once");
    if (l.n == 2) {
        is_int(l.len[0], TY_LINE_MAX, "lines: chunked piece 1");
        is_int(l.len[1], 5, "lines: chunked piece 2");
    }
    lines_free(&l);

    /* A line of exactly TY_LINE_MAX bytes is not "longer": one line, no empty extra. */
    big[TY_LINE_MAX] = '\n';
    big[TY_LINE_MAX + 1] = 'q';
    big[TY_LINE_MAX + 2] = '\n';
    ty_linesplit_feed(&ls, big, TY_LINE_MAX + 3, collect, &l);
    is_int(l.n, 2, "lines: a line of exactly TY_LINE_MAX bytes stays one line");
    if (l.n == 2) {
        is_int(l.len[0], TY_LINE_MAX, "lines: exact line length");
        is_str(l.v[1], "q", "lines: next line after the exact one");
    }
    lines_free(&l);
    /* ... also when it ends in CRLF. */
    big[TY_LINE_MAX] = '\r';
    big[TY_LINE_MAX + 1] = '\n';
    ty_linesplit_feed(&ls, big, TY_LINE_MAX + 2, collect, &l);
    ty_linesplit_feed(&ls, "s\r\n", 3, collect, &l);
    is_int(l.n, 2, "lines: a CRLF line of exactly TY_LINE_MAX bytes stays one line");
    if (l.n == 2) {
        is_int(l.len[0], TY_LINE_MAX, "lines: exact CRLF line length");
        is_str(l.v[1], "s", "lines: next line after the exact CRLF one");
    }
    lines_free(&l);
    memset(big, 'x', 3 * TY_LINE_MAX);
    /* ... and when its newline arrives in a later feed. */
    ty_linesplit_feed(&ls, big, TY_LINE_MAX, collect, &l);
    ty_linesplit_feed(&ls, "\nr\n", 3, collect, &l);
    is_int(l.n, 2, "lines: exact line, newline in the next feed");
    if (l.n == 2)
        is_str(l.v[1], "r", "lines: next line after it");
    lines_free(&l);
    free(big);
    ty_linesplit_release(&ls);
}

/* ---- time -------------------------------------------------------------------------------- */

static void test_time(void)
{
    static const struct {
        const char *s;
        int64_t usec;
    } good[] = {
        {"7200s", INT64_C(7200000000)},
        {"1.5s", 1500000},
        {"0s", 0},
        {"0.000000001s", 0},
        {"0.000001s", 1},
        {"2.123456789s", 2123456},
        {"86400.25s", INT64_C(86400250000)},
    };
    static const char *const bad[] = {"7200",
                                      "s",
                                      "-1s",
                                      "1.5.2s",
                                      "1e3s",
                                      "",
                                      "1.s",
                                      ".5s",
                                      " 1s",
                                      "1s ",
                                      "1 s",
                                      "+1s",
                                      "1ss",
                                      "0x10s",
                                      "1.0000000001s",
                                      "99999999999999999999s"};
    struct ty_error err = {0};
    char buf[64];
    int64_t v, t0, t1;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        v = -1;
        is_int(ty_duration_parse(good[i].s, &v, NULL), 0, "duration: '%s' parses", good[i].s);
        is_int(v, good[i].usec, "duration: '%s' value", good[i].s);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = -42;
        is_int(ty_duration_parse(bad[i], &v, &err), -EINVAL, "duration: '%s' refused", bad[i]);
        is_int(v, -42, "duration: '%s' leaves the result alone", bad[i]);
    }
    like(err.msg, "7200s", "duration: message gives an example");
    is_int(err.code, EINVAL, "duration: err code");
    is_int(ty_duration_parse("315576000000s", &v, NULL), 0, "duration: the longest parses");
    is_int(v, INT64_C(315576000000000000), "duration: the longest's value");
    is_int(ty_duration_parse("315576000000.000001s", &v, &err),
           -ERANGE,
           "duration: a microsecond longer is out of range");
    is_int(ty_duration_parse("9223372036000s", &v, &err), -ERANGE, "duration: years too long");
    like(err.msg, "10,000 years", "duration: the message says the limit");

    is_str(ty_rfc3339(0, 0, buf, sizeof(buf)), "1970-01-01T00:00:00Z", "rfc3339: epoch");
    is_str(ty_rfc3339(INT64_C(1796029200123456), 6, buf, sizeof(buf)),
           "2026-11-30T09:00:00.123456Z",
           "rfc3339: 6 digits");
    is_str(ty_rfc3339(INT64_C(1796029200123456), 3, buf, sizeof(buf)),
           "2026-11-30T09:00:00.123Z",
           "rfc3339: 3 digits truncate");
    is_str(ty_rfc3339(INT64_C(1796029200999999), 0, buf, sizeof(buf)),
           "2026-11-30T09:00:00Z",
           "rfc3339: 0 digits truncate");
    is_str(ty_rfc3339(INT64_C(951782400000000), 3, buf, sizeof(buf)),
           "2000-02-29T00:00:00.000Z",
           "rfc3339: leap day");
    is_str(ty_rfc3339(-1, 6, buf, sizeof(buf)),
           "1969-12-31T23:59:59.999999Z",
           "rfc3339: before the epoch");
    ok(ty_rfc3339(5, 6, buf, sizeof(buf)) == buf, "rfc3339: returns buf");

    t0 = ty_mono_usec();
    t1 = ty_mono_usec();
    ok(t1 >= t0 && t0 > 0, "mono clock does not go back");
    ok(ty_now_usec() > INT64_C(1600000000000000), "realtime clock is after 2020");
}

/* ---- number parsing ---------------------------------------------------------------------- */

static void test_parse(void)
{
    int64_t i = 7;
    double d = 7;

    is_int(ty_parse_int64("42", 0, 100, &i), 0, "int64: 42");
    is_int(i, 42, "int64: value");
    is_int(ty_parse_int64("-5", -10, 10, &i), 0, "int64: negative");
    is_int(i, -5, "int64: negative value");
    is_int(ty_parse_int64("+5", -10, 10, &i), 0, "int64: explicit plus");
    is_int(ty_parse_int64("9223372036854775807", INT64_MIN, INT64_MAX, &i), 0, "int64: max");
    ok(i == INT64_MAX, "int64: max value");
    is_int(ty_parse_int64("-9223372036854775808", INT64_MIN, INT64_MAX, &i), 0, "int64: min");
    ok(i == INT64_MIN, "int64: min value");
    i = 7;
    is_int(ty_parse_int64("9223372036854775808", INT64_MIN, INT64_MAX, &i),
           -ERANGE,
           "int64: overflow is -ERANGE");
    is_int(ty_parse_int64("101", 0, 100, &i), -ERANGE, "int64: above max");
    is_int(ty_parse_int64("-1", 0, 100, &i), -ERANGE, "int64: below min");
    is_int(ty_parse_int64("", 0, 100, &i), -EINVAL, "int64: empty");
    is_int(ty_parse_int64(NULL, 0, 100, &i), -EINVAL, "int64: NULL");
    is_int(ty_parse_int64(" 1", 0, 100, &i), -EINVAL, "int64: leading space");
    is_int(ty_parse_int64("1 ", 0, 100, &i), -EINVAL, "int64: trailing space");
    is_int(ty_parse_int64("1x", 0, 100, &i), -EINVAL, "int64: trailing text");
    is_int(ty_parse_int64("-", 0, 100, &i), -EINVAL, "int64: sign only");
    is_int(ty_parse_int64("1.0", 0, 100, &i), -EINVAL, "int64: decimal point");
    is_int(ty_parse_int64("0x10", 0, 100, &i), -EINVAL, "int64: hex");
    is_int(i, 7, "int64: failures leave the result alone");
    is_int(ty_parse_int64("010", 0, 100, &i), 0, "int64: leading zero is decimal");
    is_int(i, 10, "int64: 010 is ten");

    is_int(ty_parse_double("1.5", &d), 0, "double: 1.5");
    ok(d == 1.5, "double: value");
    is_int(ty_parse_double("-2e-3", &d), 0, "double: exponent");
    ok(d == -0.002, "double: exponent value");
    is_int(ty_parse_double("3", &d), 0, "double: integer text");
    ok(d == 3.0, "double: 3");
    d = 7;
    is_int(ty_parse_double("", &d), -EINVAL, "double: empty");
    is_int(ty_parse_double(NULL, &d), -EINVAL, "double: NULL");
    is_int(ty_parse_double(" 1", &d), -EINVAL, "double: leading space");
    is_int(ty_parse_double("1.5x", &d), -EINVAL, "double: trailing text");
    is_int(ty_parse_double("nan", &d), -EINVAL, "double: nan");
    is_int(ty_parse_double("inf", &d), -EINVAL, "double: inf");
    is_int(ty_parse_double("-infinity", &d), -EINVAL, "double: -infinity");
    is_int(ty_parse_double("1e999", &d), -EINVAL, "double: overflow");
    ok(d == 7, "double: failures leave the result alone");
}

/* ---- JSON -------------------------------------------------------------------------------- */

static void test_json(void)
{
    struct ty_error err = {0};
    json_t *j = NULL;
    char *s, *big;
    const char *text;

    text = "{\"b\":1,\"a\":[true,null,\"x\"],\"s\":\"str\"}";
    is_int(ty_json_parse(text, strlen(text), &j, &err), 0, "json: parses");
    s = ty_json_compact(j);
    is_str(s, text, "json: compact keeps key order");
    free(s);
    is_str(ty_json_str(j, "s"), "str", "json: str");
    is_str(ty_json_str(j, "b"), NULL, "json: str of a number is NULL");
    is_str(ty_json_str(j, "missing"), NULL, "json: str of a missing key");
    is_str(ty_json_str(NULL, "a"), NULL, "json: str of NULL");
    s = ty_json_pretty(j);
    like(s, "\n  \"b\": 1", "json: pretty is indented");
    free(s);
    is_str(ty_json_str(json_array_get(json_object_get(j, "a"), 2), "x"),
           NULL,
           "json: str of a non-object");
    json_decref(j);

    j = json_string("0123456789012345678901234567890123456789012345678901234567890123456789"
                    "0123456789");
    s = ty_json_compact_short(j);
    is_int(strlen(s), 80, "json: short form is cut to 80");
    like(s, "...", "json: cut marked with ...");
    free(s);
    json_decref(j);

    j = NULL;
    text = "{\"a\":1,\"a\":2}";
    is_int(ty_json_parse(text, strlen(text), &j, &err), -EINVAL, "json: duplicate key refused");
    like(err.msg, "duplicate", "json: says duplicate");
    ok(j == NULL, "json: nothing returned");

    text = "{\n  \"a\": 1,\n  \"b\": ,\n}";
    is_int(ty_json_parse(text, strlen(text), &j, &err), -EINVAL, "json: syntax error");
    like(err.msg, "line 3", "json: error names the line");
    like(err.msg, "column", "json: error names the column");

    text = "{} trailing";
    is_int(ty_json_parse(text, strlen(text), &j, &err), -EINVAL, "json: trailing garbage");
    text = "{\"a\":1}";
    is_int(ty_json_parse(text, 4, &j, &err), -EINVAL, "json: length is honoured");

    big = xmalloc(TY_JSON_MAX_BYTES + 2);
    memset(big, ' ', TY_JSON_MAX_BYTES + 1);
    big[0] = '{';
    big[TY_JSON_MAX_BYTES - 1] = '}';
    is_int(ty_json_parse(big, TY_JSON_MAX_BYTES, &j, &err), 0, "json: exactly the limit parses");
    json_decref(j);
    j = NULL;
    is_int(ty_json_parse(big, TY_JSON_MAX_BYTES + 1, &j, &err), -E2BIG, "json: over the limit");
    like(err.msg, "4194305 bytes", "json: size error names the size");
    ok(j == NULL, "json: nothing returned over the limit");
    free(big);
}

/* ---- YAML -------------------------------------------------------------------------------- */

static json_t *yaml(const char *text, struct ty_error *err)
{
    json_t *j = NULL;
    if (ty_yaml_parse(text, strlen(text), &j, err) < 0)
        return NULL;
    return j;
}

static void test_yaml(void)
{
    struct ty_error err = {0};
    struct ty_buf b = TY_BUF_INIT;
    json_t *j;
    char *s;

    j = yaml("n1: null\nn2: ~\nn3:\nb1: yes\nb2: No\nb3: true\nb4: FALSE\nb5: on\nb6: Off\n"
             "num: 2.10\nint: 007\nq1: \"yes\"\nq2: 'null'\nq3: \"\"\ns: hello world\n"
             "list:\n  - a\n  - 1\n  - [x, {k: v}]\nmap: {a: 1, b: [ ]}\n",
             &err);
    if (!ok(j != NULL, "yaml: parses"))
        diag("%s", err.msg);
    s = ty_json_compact(j);
    is_str(s,
           "{\"n1\":null,\"n2\":null,\"n3\":null,\"b1\":\"yes\",\"b2\":\"No\",\"b3\":\"true\","
           "\"b4\":\"FALSE\",\"b5\":\"on\",\"b6\":\"Off\",\"num\":\"2.10\",\"int\":\"007\",\"q1\":"
           "\"yes\","
           "\"q2\":\"null\",\"q3\":\"\",\"s\":\"hello world\",\"list\":[\"a\",\"1\",[\"x\","
           "{\"k\":\"v\"}]],\"map\":{\"a\":\"1\",\"b\":[]}}",
           "yaml: scalars, sequences and mappings");
    free(s);
    json_decref(j);

    /* No document is an error ("the document is empty"): test-yaml-load has the messages. */
    j = yaml("", &err);
    ok(!j, "yaml: an empty text is refused");
    json_decref(j);
    j = yaml("# only a comment\n", &err);
    ok(!j, "yaml: a comment-only text is refused");
    json_decref(j);

    j = yaml("a: &x {k: v}\nb: *x\n", &err);
    s = ty_json_compact(j);
    is_str(s, "{\"a\":{\"k\":\"v\"},\"b\":{\"k\":\"v\"}}", "yaml: aliases expand");
    free(s);
    json_decref(j);

    j = yaml("a: 1\nb: 2\na: 3\n", &err);
    ok(j == NULL, "yaml: duplicate key refused");
    like(err.msg, "duplicate key 'a'", "yaml: names the duplicate key");
    like(err.msg, "line 3", "yaml: duplicate key line");
    json_decref(j);

    j = yaml("? [a, b]\n: c\n", &err);
    ok(j == NULL, "yaml: non-scalar key refused");
    like(err.msg, "scalars", "yaml: says keys must be scalars");

    j = yaml("a: b\n  c: d\n", &err);
    ok(j == NULL, "yaml: invalid YAML refused");
    is_int(err.code, EINVAL, "yaml: EINVAL");
    like(err.msg, "line 2", "yaml: error names the line");
    like(err.msg, "column", "yaml: error names the column");

    j = yaml("a: [1, 2\n", &err);
    ok(j == NULL, "yaml: unclosed flow sequence refused");
    like(err.msg, "line", "yaml: with a line number");

    /* "Billion laughs": 10^6 leaves after expansion. */
    j = yaml("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
             "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
             "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
             "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
             "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
             "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
             &err);
    ok(j == NULL, "yaml: alias bomb refused");
    is_int(err.code, E2BIG, "yaml: alias bomb is E2BIG");
    like(err.msg, "100000 nodes", "yaml: names the node limit");
    /* A moderate amount of aliasing is fine (10^3 leaves). */
    j = yaml("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
             "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
             "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n",
             &err);
    ok(j != NULL, "yaml: 10^3 aliased leaves are fine");
    json_decref(j);

    for (int i = 0; i < 100; i++)
        ty_buf_putc(&b, '[');
    for (int i = 0; i < 100; i++)
        ty_buf_putc(&b, ']');
    j = yaml(ty_buf_str(&b), &err);
    ok(j == NULL, "yaml: 100 levels refused");
    like(err.msg, "deeper than 64", "yaml: names the depth limit");
    ty_buf_reset(&b);
    for (int i = 0; i < 60; i++)
        ty_buf_putc(&b, '[');
    for (int i = 0; i < 60; i++)
        ty_buf_putc(&b, ']');
    j = yaml(ty_buf_str(&b), &err);
    ok(json_is_array(j), "yaml: 60 levels are fine");
    json_decref(j);
    ty_buf_release(&b);

    j = NULL;
    is_int(ty_yaml_parse("a: 1", TY_JSON_MAX_BYTES + 1, &j, &err),
           -E2BIG,
           "yaml: size limit checked before reading");
    ok(j == NULL, "yaml: nothing returned over the limit");
}

/* ---- event loop -------------------------------------------------------------------------- */

struct loop_log {
    char seen[64];
    size_t n;
    int other_fd;
    struct ty_loop *loop;
    uint64_t cancel_id;
    int stop_after;
};

static void log_event(struct loop_log *lg, char c)
{
    if (lg->n + 1 < sizeof(lg->seen))
        lg->seen[lg->n++] = c;
    lg->seen[lg->n] = '\0';
    if (lg->stop_after && (int)lg->n >= lg->stop_after)
        ty_loop_stop(lg->loop);
}

static void on_timer_a(struct ty_loop *loop, void *data)
{
    log_event(data, 'a');
}
static void on_timer_b(struct ty_loop *loop, void *data)
{
    log_event(data, 'b');
}
static void on_timer_c(struct ty_loop *loop, void *data)
{
    log_event(data, 'c');
}
static void on_timer_x(struct ty_loop *loop, void *data)
{
    log_event(data, 'x');
}

static void on_timer_cancel(struct ty_loop *loop, void *data)
{
    struct loop_log *lg = data;
    ty_loop_cancel_timer(loop, lg->cancel_id);
    log_event(lg, 'k');
}

static void on_read(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct loop_log *lg = data;
    char c;
    if ((revents & POLLIN) && read(fd, &c, 1) == 1)
        log_event(lg, c);
}

/* Reads its byte and removes the other watcher (and itself). */
static void on_read_remove(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct loop_log *lg = data;
    on_read(loop, fd, revents, data);
    ty_loop_remove_fd(loop, lg->other_fd);
    ty_loop_remove_fd(loop, fd);
}

static void test_loop(void)
{
    struct ty_loop *loop = ty_loop_new();
    struct loop_log lg = {.loop = loop};
    int p1[2], p2[2];
    int64_t now;
    uint64_t id;

    if (!ok(pipe(p1) == 0 && pipe(p2) == 0, "loop: pipes"))
        return;
    /* fd watcher fires on a pipe */
    is_int(ty_loop_add_fd(loop, p1[0], POLLIN, on_read, &lg), 0, "loop: add fd");
    is_int(write(p1[1], "1", 1), 1, "loop: write");
    id = ty_loop_add_timer(loop, ty_mono_usec() + 2000000, on_timer_x, &lg); /* safety net */
    is_int(ty_loop_run_once(loop), 0, "loop: run once");
    is_str(lg.seen, "1", "loop: watcher fired with the byte");
    ty_loop_cancel_timer(loop, id);

    /* removing watchers inside a callback: whichever fires first removes the other */
    lg.n = 0;
    lg.seen[0] = '\0';
    ty_loop_add_fd(loop, p1[0], POLLIN, on_read_remove, &lg); /* replaces the watcher */
    ty_loop_add_fd(loop, p2[0], POLLIN, on_read_remove, &lg);
    lg.other_fd = p2[0];
    (void)!write(p1[1], "2", 1);
    (void)!write(p2[1], "3", 1);
    /* p1 was added first, so it is dispatched first and removes p2 before its turn. */
    id = ty_loop_add_timer(loop, ty_mono_usec() + 100000, on_timer_x, &lg);
    ty_loop_run_once(loop);
    is_str(lg.seen, "2", "loop: removed watcher not called in the same round");
    (void)!write(p1[1], "4", 1);
    ty_loop_run_once(loop); /* only the timer is left: waits for it */
    is_str(lg.seen, "2x", "loop: removed watchers stay quiet");
    ty_loop_remove_fd(loop, p1[0]);
    ty_loop_remove_fd(loop, 12345); /* not watched: no-op */

    /* timers fire in deadline order, whatever the order they were added in */
    lg.n = 0;
    lg.seen[0] = '\0';
    lg.stop_after = 3;
    now = ty_mono_usec();
    ty_loop_add_timer(loop, now + 60000, on_timer_c, &lg);
    ty_loop_add_timer(loop, now + 20000, on_timer_a, &lg);
    ty_loop_add_timer(loop, now + 40000, on_timer_b, &lg);
    is_int(ty_loop_run(loop), 0, "loop: run");
    is_str(lg.seen, "abc", "loop: timers fire in order");
    ok(ty_mono_usec() - now >= 60000, "loop: not before their time");

    /* ... also when they are all overdue and fire in the same round */
    lg.n = 0;
    lg.seen[0] = '\0';
    lg.stop_after = 0;
    now = ty_mono_usec();
    ty_loop_add_timer(loop, now - 1000, on_timer_c, &lg);
    ty_loop_add_timer(loop, now - 3000, on_timer_a, &lg);
    ty_loop_add_timer(loop, now - 2000, on_timer_b, &lg);
    ty_loop_run_once(loop);
    is_str(lg.seen, "abc", "loop: overdue timers fire in deadline order");

    /* cancelled timers do not fire, also when cancelled by a timer of the same round */
    lg.n = 0;
    lg.seen[0] = '\0';
    now = ty_mono_usec();
    id = ty_loop_add_timer(loop, now + 1000, on_timer_x, &lg);
    ok(id > 0, "loop: timer ids are positive");
    ty_loop_cancel_timer(loop, id);
    ty_loop_cancel_timer(loop, 0);
    ty_loop_cancel_timer(loop, 999999);
    ty_loop_add_timer(loop, now - 2000, on_timer_cancel, &lg);
    lg.cancel_id = ty_loop_add_timer(loop, now - 1000, on_timer_x, &lg);
    ty_loop_add_timer(loop, now + 10000, on_timer_a, &lg);
    lg.stop_after = 2;
    ty_loop_run(loop);
    is_str(lg.seen, "ka", "loop: cancelled timers never fire");
    ty_loop_cancel_timer(loop, lg.cancel_id); /* already gone: no-op */

    close(p1[0]);
    close(p1[1]);
    close(p2[0]);
    close(p2[1]);
    ty_loop_free(loop);
    ty_loop_free(NULL);
}

/* ---- files ------------------------------------------------------------------------------- */

static void write_file(const char *path, const char *text, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)ty_write_all(fd, text, n);
        close(fd);
    }
}

static void test_files(void)
{
    char tmpl[] = "/tmp/ty-test-util-XXXXXX";
    char *dir = mkdtemp(tmpl);
    struct ty_error err = {0};
    struct stat st;
    char *path, *data = NULL;
    size_t len = 99;

    if (!ok(dir != NULL, "files: temporary directory"))
        return;

    (void)umask(022);
    path = xasprintf("%s/a/b/c", dir);
    is_int(ty_mkdir_p(path, 0755, &err), 0, "mkdir_p: creates a/b/c");
    ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "mkdir_p: a/b/c is a directory");
    is_int(st.st_mode & 0777, 0755, "mkdir_p: mode applied");
    is_int(ty_mkdir_p(path, 0755, &err), 0, "mkdir_p: existing path is fine");
    free(path);
    path = xasprintf("%s/a/d/", dir);
    is_int(ty_mkdir_p(path, 0700, &err), 0, "mkdir_p: trailing slash");
    ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "mkdir_p: a/d is a directory");
    is_int(st.st_mode & 0777, 0700, "mkdir_p: a/d has its mode");
    free(path);
    path = xasprintf("%s//a//e", dir);
    is_int(ty_mkdir_p(path, 0700, &err), 0, "mkdir_p: doubled slashes");
    free(path);

    path = xasprintf("%s/file", dir);
    write_file(path, "0123456789", 10);
    free(path);
    path = xasprintf("%s/file/sub", dir);
    is_int(ty_mkdir_p(path, 0755, &err), -ENOTDIR, "mkdir_p: a file in the way");
    like(err.msg, "/file", "mkdir_p: message names the path");
    free(path);
    path = xasprintf("%s/file", dir);
    ty_error_clear(&err);
    ok(ty_mkdir_p(path, 0755, &err) < 0, "mkdir_p: an existing file is not a directory");
    like(err.msg, "/file", "mkdir_p: message names the file");

    is_int(ty_read_file(path, 10, &data, &len, &err), 0, "read_file: exactly the limit");
    is_str(data, "0123456789", "read_file: content");
    is_int(len, 10, "read_file: length");
    free(data);
    data = NULL;
    len = 99;
    is_int(ty_read_file(path, 9, &data, &len, &err), -E2BIG, "read_file: over the limit");
    like(err.msg, "larger than 9 bytes", "read_file: message names the limit");
    ok(data == NULL && len == 99, "read_file: nothing returned");
    free(path);
    path = xasprintf("%s/empty", dir);
    write_file(path, "", 0);
    is_int(ty_read_file(path, 0, &data, &len, &err), 0, "read_file: empty file");
    is_str(data, "", "read_file: empty string");
    is_int(len, 0, "read_file: length 0");
    free(data);
    data = NULL;
    free(path);
    path = xasprintf("%s/missing", dir);
    is_int(ty_read_file(path, 10, &data, &len, &err), -ENOENT, "read_file: missing file");
    like(err.msg, "missing", "read_file: message names the path");
    {
        struct ty_file_stamp stamp = {0};
        ok(!ty_file_changed(path, &stamp), "file_changed: a missing file has not changed");
        write_file(path, "ab", 2);
        ok(ty_file_changed(path, &stamp), "file_changed: a new file has");
        ok(!ty_file_changed(path, &stamp), "file_changed: not again until it changes");
        write_file(path, "abc", 3);
        ok(ty_file_changed(path, &stamp), "file_changed: a new size");
    }
    free(path);

    /* a large file read in several chunks */
    path = xasprintf("%s/big", dir);
    data = xmalloc(200000);
    memset(data, 'z', 200000);
    write_file(path, data, 200000);
    free(data);
    is_int(ty_read_file(path, 200000, &data, &len, &err), 0, "read_file: 200000 bytes");
    ok(len == 200000 && data[199999] == 'z' && data[200000] == '\0', "read_file: all of it");
    free(data);
    data = NULL;
    is_int(ty_read_file(path, 199999, &data, &len, &err), -E2BIG, "read_file: one byte over");
    free(path);

    path = xasprintf("rm -rf '%s'", dir);
    (void)!system(path);
    free(path);
}

/* ---- errors ------------------------------------------------------------------------------ */

static int fail_inner(struct ty_error *err)
{
    return ty_error_set(err, ENOENT, "cannot open '%s'", "x.yaml");
}

static void test_error(void)
{
    struct ty_error err;
    char longtext[2000];
    int r;

    ty_error_clear(&err);
    is_int(err.code, 0, "error: clear code");
    is_str(err.msg, "", "error: clear message");
    ty_error_clear(NULL);
    is_str(ty_error_msg(&err), strerror(EINVAL), "error: msg of a cleared error");
    is_str(ty_error_msg(NULL), "unknown error", "error: msg of NULL");

    r = fail_inner(&err);
    is_int(r, -ENOENT, "error: set returns -code");
    is_int(err.code, ENOENT, "error: code recorded");
    is_str(ty_error_msg(&err), "cannot open 'x.yaml'", "error: message formatted");
    is_int(ty_error_set(&err, -EPERM, "neg"), -EPERM, "error: negative code taken as |code|");
    is_int(err.code, EPERM, "error: |code| recorded");
    is_int(ty_error_set(&err, 0, "zero"), -EINVAL, "error: code 0 becomes EINVAL");
    is_int(ty_error_set(NULL, E2BIG, "nobody listens"), -E2BIG, "error: NULL err");

    r = fail_inner(&err);
    is_int(ty_error_prefix(&err, r, "job '%s'", "j1"), -ENOENT, "error: prefix returns r");
    is_str(err.msg, "job 'j1': cannot open 'x.yaml'", "error: prefix prepends");
    ty_error_prefix(&err, r, "submit");
    is_str(err.msg, "submit: job 'j1': cannot open 'x.yaml'", "error: prefixes nest");
    is_int(err.code, ENOENT, "error: code kept");

    ty_error_clear(&err);
    is_int(ty_error_prefix(&err, -ENOENT, "reading %s", "f"), -ENOENT, "error: prefix on empty");
    is_str(err.msg, "reading f: No such file or directory", "error: strerror as the tail");
    is_int(err.code, ENOENT, "error: prefix sets the code when none");
    is_int(ty_error_prefix(NULL, -EIO, "x"), -EIO, "error: prefix with NULL err");

    memset(longtext, 'L', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    ty_error_set(&err, EINVAL, "%s", longtext);
    is_int(strlen(err.msg), TY_ERROR_MSG_MAX - 1, "error: long message truncated");
    ty_error_prefix(&err, -EINVAL, "ctx");
    is_int(strlen(err.msg), TY_ERROR_MSG_MAX - 1, "error: long prefixed message truncated");
    ok(strncmp(err.msg, "ctx: LLL", 8) == 0, "error: prefix kept when truncating");
    ty_error_clear(&err);
    ty_error_set(&err, EINVAL, "tail");
    ty_error_prefix(&err, -EINVAL, "%s", longtext);
    is_int(strlen(err.msg), TY_ERROR_MSG_MAX - 1, "error: long prefix truncated");
}

int main(void)
{
    test_buf();
    test_strv();
    test_linesplit();
    test_time();
    test_parse();
    test_json();
    test_yaml();
    test_loop();
    test_files();
    test_error();
    return done_testing();
}
