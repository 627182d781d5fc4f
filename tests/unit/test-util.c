/* SPDX-License-Identifier: Apache-2.0
 * test-util.c: the util layer (src/util): buffers, string vectors, line splitting, time and
 * number parsing, JSON and YAML loading. The event loop, file helpers and error details:
 * test-util-io.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "error.h"
#include "json.h"
#include "linesplit.h"
#include "macro.h"
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
    {
        bool cut = true;
        is_int((int)ty_list_fit("/a:/bb", ':', 6, &cut), 6, "list_fit: it fits");
        ok(!cut, "list_fit: not cut");
        is_int((int)ty_list_fit("/a:/bb:/ccc", ':', 8, &cut), 2, "list_fit: whole entries");
        ok(cut, "list_fit: cut");
        is_int((int)ty_list_fit("/aaaa:/b", ':', 5, &cut), 0, "list_fit: not even the first");
    }
    ok(ty_strv_getenv(env, "HOME") == NULL, "strv: getenv missing");
    ok(ty_strv_getenv(NULL, "HOME") == NULL, "strv: getenv on NULL");
    ty_strv_setenv(&env, "V", "a=b");
    is_str(ty_strv_getenv(env, "V"), "a=b", "strv: value with '='");
    ty_strv_push(&env, "PATH=again");
    ty_strv_unsetenv(env, "PATH");
    ty_strv_unsetenv(env, "NOPE");
    ok(ty_strv_getenv(env, "PATH") == NULL && ty_strv_len(env) == 3 &&
           strcmp(ty_strv_getenv(env, "PATHX"), "x") == 0,
       "strv: unsetenv removes every entry of the name, and only it");
    ty_strv_unsetenv(NULL, "PATH");
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
    struct ty_linesplit ls = {TY_BUF_INIT, 0};
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

    /* A splitter of its own limit (a stream of JSON entries) keeps longer lines whole. */
    {
        struct ty_linesplit wide = {TY_BUF_INIT, 3 * TY_LINE_MAX};
        ty_linesplit_feed(&wide, big, 2 * TY_LINE_MAX + 10, collect, &l);
        ty_linesplit_feed(&wide, "\n", 1, collect, &l);
        ok(l.n == 1 && l.len[0] == 2 * TY_LINE_MAX + 10, "lines: a wider max keeps the line");
        lines_free(&l);
        ty_linesplit_release(&wide);
    }

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

    /* A '\r' is a line end only before a '\n': one at the limit of a cut line is text, and so
     * is one ending a last line without a newline; the same whatever the chunking. */
    big[TY_LINE_MAX - 1] = '\r';
    memcpy(big + TY_LINE_MAX, "yz\n", 3);
    for (size_t chunk = 1; chunk <= TY_LINE_MAX + 3; chunk = chunk < 8 ? chunk + 1 : chunk * 4) {
        for (size_t off = 0; off < TY_LINE_MAX + 3; off += chunk)
            ty_linesplit_feed(&ls,
                              big + off,
                              TY_LINE_MAX + 3 - off < chunk ? TY_LINE_MAX + 3 - off : chunk,
                              collect,
                              &l);
        ok(l.n == 2 && l.len[0] == TY_LINE_MAX && l.v[0][TY_LINE_MAX - 1] == '\r' &&
               strcmp(l.v[1], "yz") == 0,
           "lines: a '\\r' at the cut is kept (chunks of %zu)",
           chunk);
        lines_free(&l);
    }
    big[TY_LINE_MAX - 1] = 'x';
    big[TY_LINE_MAX] = '\r';
    big[TY_LINE_MAX + 1] = '\n';
    for (size_t split = TY_LINE_MAX - 1; split <= TY_LINE_MAX + 1; split++) {
        ty_linesplit_feed(&ls, big, split, collect, &l);
        ty_linesplit_feed(&ls, big + split, TY_LINE_MAX + 2 - split, collect, &l);
        ok(l.n == 1 && l.len[0] == TY_LINE_MAX,
           "lines: a CRLF line of TY_LINE_MAX bytes split at %zu is one line",
           split);
        lines_free(&l);
    }
    /* A cut never splits a UTF-8 character: one the limit falls in goes to the next piece
     * whole; bytes that are no character are cut at the limit. Whatever the chunking. */
    {
        static const struct {
            const char *ch; /* at TY_LINE_MAX - @at */
            size_t at, first;
        } cases[] = {
            {"\xc3\xa9", 1, TY_LINE_MAX - 1},         /* é across the limit */
            {"\xe2\x82\xac", 2, TY_LINE_MAX - 2},     /* € across it */
            {"\xe2\x82\xac", 1, TY_LINE_MAX - 1},     /* € with one byte before it */
            {"\xf0\x9f\x98\x80", 3, TY_LINE_MAX - 3}, /* U+1F600 */
            {"\xc3\xa9", 2, TY_LINE_MAX},             /* é ends at the limit */
            {"\xc3(", 1, TY_LINE_MAX},                /* no character: cut at the limit */
            {"\xa9\xa9\xa9\xa9", 2, TY_LINE_MAX},     /* stray continuation bytes */
        };
        for (size_t i = 0; i < TY_ARRAY_SIZE(cases); i++) {
            size_t cl = strlen(cases[i].ch), total;
            memset(big, 'x', 3 * TY_LINE_MAX);
            memcpy(big + TY_LINE_MAX - cases[i].at, cases[i].ch, cl);
            memcpy(big + TY_LINE_MAX - cases[i].at + cl, "tail\n", 5);
            total = TY_LINE_MAX - cases[i].at + cl + 5;
            for (size_t chunk = 1; chunk <= total; chunk = chunk < 6 ? chunk + 1 : chunk * 8) {
                for (size_t off = 0; off < total; off += chunk)
                    ty_linesplit_feed(
                        &ls, big + off, total - off < chunk ? total - off : chunk, collect, &l);
                ok(l.n == 2 && l.len[0] == cases[i].first &&
                       l.len[1] == total - 1 - cases[i].first &&
                       memcmp(l.v[1] + l.len[1] - 4, "tail", 4) == 0,
                   "lines: case %zu cut at %zu (chunks of %zu)",
                   i,
                   l.n ? l.len[0] : 0,
                   chunk);
                lines_free(&l);
            }
        }
        memset(big, 'x', 3 * TY_LINE_MAX);
    }
    ty_linesplit_feed(&ls, "last\r", 5, collect, &l);
    ty_linesplit_flush(&ls, collect, &l);
    ok(l.n == 1 && l.len[0] == 5 && memcmp(l.v[0], "last\r", 5) == 0,
       "lines: a last line without a newline keeps its '\\r'");
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
        {"0.000001000s", 1},
        {"0.000001s", 1},
        {"2.123456000s", 2123456},
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
                                      "1.0000000001s"};
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
    is_int(ty_duration_parse("99999999999999999999s", &v, &err),
           -ERANGE,
           "duration: more digits than a number holds are too long, not malformed");
    like(err.msg, "10,000 years", "duration: ... and the message says the limit");
    is_int(ty_duration_parse("99999999999999999999x", &v, &err),
           -EINVAL,
           "duration: ... unless malformed");
    v = -42;
    is_int(ty_duration_parse("1.0000001s", &v, &err), -EDOM, "duration: a tenth of a microsecond");
    like(err.msg, "finer than a microsecond", "duration: the message says why");
    is_int(ty_duration_parse("0.000000001s", &v, &err), -EDOM, "duration: a nanosecond");
    is_int(v, -42, "duration: finer ones leave the result alone");

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

    /* ISO 8601 durations from a time, as gcloud's filters read them */
    static const struct {
        const char *s, *from, *want;
    } iso[] = {
        {"-P1D", "2026-03-01T10:00:00Z", "2026-02-28T10:00:00Z"},
        {"P1W", "2026-12-30T00:00:00Z", "2027-01-06T00:00:00Z"},
        {"-PT2H30M", "2026-12-07T01:00:00Z", "2026-12-06T22:30:00Z"},
        {"-PT1.5S", "2026-12-07T00:00:00Z", "2026-12-06T23:59:58.500000Z"},
        {"P1M", "2026-01-31T12:00:00Z", "2026-02-28T12:00:00Z"},
        {"-P1M", "2024-03-31T00:00:00Z", "2024-02-29T00:00:00Z"},
        {"-P1Y2M3DT4H5M6S", "2026-12-07T08:00:00Z", "2025-10-04T03:54:54Z"},
        {"P12M", "2026-12-07T00:00:00Z", "2027-12-07T00:00:00Z"},
        {"-P0D", "2026-12-07T00:00:00Z", "2026-12-07T00:00:00Z"},
    };
    for (size_t i = 0; i < TY_ARRAY_SIZE(iso); i++) {
        int64_t from = 0;
        v = 0;
        (void)ty_rfc3339_parse(iso[i].from, &from, NULL);
        is_int(ty_iso8601_offset(iso[i].s, from, &v, NULL), 0, "iso8601: '%s' parses", iso[i].s);
        is_str(ty_rfc3339(v, strchr(iso[i].want, '.') ? 6 : 0, buf, sizeof(buf)),
               iso[i].want,
               "iso8601: %s from %s",
               iso[i].s,
               iso[i].from);
    }
    static const char *const iso_bad[] = {
        "P",     "-P",           "PT",           "1D",   "P1",       "P1D2",   "PD",
        "P1H",   "PT1D",         "P1D1D",        "P1DT", "P-1D",     "P1.5D",  "PT1.5M",
        "PT1.S", "PT1.1234567S", "P1234567890D", "p1d",  "P1DT1H1H", "P1MT1Y",
    };
    for (size_t i = 0; i < TY_ARRAY_SIZE(iso_bad); i++)
        is_int(ty_iso8601_offset(iso_bad[i], 0, &v, &err),
               -EINVAL,
               "iso8601: '%s' refused",
               iso_bad[i]);
    like(err.msg, "is not an ISO 8601 duration such as '-P1D'", "iso8601: the message");
    is_int(ty_iso8601_offset("P99999999D", 0, &v, &err), -ERANGE, "iso8601: past 9999");
    is_int(ty_iso8601_offset("-P2000Y", 0, &v, &err), -ERANGE, "iso8601: before 0000");
    like(err.msg, "reaches beyond the years 0000-9999", "iso8601: range message");
    is_int(ty_iso8601_offset("P999999999W", 0, &v, &err), -ERANGE, "iso8601: no overflow");

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
    is_int(ty_parse_double("0x10", &d), -EINVAL, "double: hexadecimal");
    is_int(ty_parse_double("-0X1p3", &d), -EINVAL, "double: hexadecimal with an exponent");
    is_int(ty_parse_double("inf", &d), -EINVAL, "double: inf");
    is_int(ty_parse_double("-infinity", &d), -EINVAL, "double: -infinity");
    is_int(ty_parse_double("1e999", &d), -EINVAL, "double: overflow");
    ok(d == 7, "double: failures leave the result alone");
    is_int(ty_parse_double("1e-320", &d), 0, "double: an underflow is a number (a denormal)");
    ok(d > 0 && d < 1e-300, "double: 1e-320's value");
    is_int(ty_parse_double("-1e-999", &d), 0, "double: an underflow to zero");
    ok(d == 0, "double: -1e-999 is 0");

    is_int(ty_parse_bytes("4194304", 0, &i), 0, "bytes: plain");
    is_int(i, 4194304, "bytes: value");
    is_int(ty_parse_bytes("64m", 0, &i), 0, "bytes: m");
    is_int(i, 64 << 20, "bytes: 64m");
    is_int(ty_parse_bytes("2G", 0, &i), 0, "bytes: G");
    ok(i == INT64_C(2) << 30, "bytes: 2G");
    is_int(ty_parse_bytes("1t", 0, &i), 0, "bytes: t");
    ok(i == INT64_C(1) << 40, "bytes: 1t");
    i = 7;
    is_int(ty_parse_bytes("1.5g", 0, &i), -EINVAL, "bytes: a fraction is not a size");
    is_int(ty_parse_bytes("-1", 0, &i), -EINVAL, "bytes: negative");
    is_int(ty_parse_bytes("g", 0, &i), -EINVAL, "bytes: a unit alone");
    is_int(ty_parse_bytes("12x", 0, &i), -EINVAL, "bytes: another unit");
    is_int(ty_parse_bytes("", 0, &i), -EINVAL, "bytes: empty");
    is_int(ty_parse_bytes("9999999999g", 0, &i), -ERANGE, "bytes: overflow");
    is_int(ty_parse_bytes("3m", 4 << 20, &i), -ERANGE, "bytes: below the least");
    is_int(i, 7, "bytes: failures leave the result alone");
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

int main(void)
{
    test_buf();
    test_strv();
    test_linesplit();
    test_time();
    test_parse();
    test_json();
    test_yaml();
    return done_testing();
}
