/* SPDX-License-Identifier: Apache-2.0
 * test-logline.c: one line of a replica's log file (ty_log_parse_line: the record, damaged
 * and partial lines) and the RFC 3339 times of log filters (ty_rfc3339_parse). Reading
 * whole files back: test-logread.c. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "logread.h"
#include "logs.h"
#include "macro.h"
#include "tap.h"
#include "timeutil.h"

#define T0  INT64_C(1796029200000000) /* 2026-11-30T09:00:00Z */
#define SEC INT64_C(1000000)

static struct ty_error err;

static void test_parse_line(void)
{
    struct ty_log_entry e;
    const char *l;

    l = "2026-11-30T09:00:00.123456Z INFO hello world";
    ok(ty_log_parse_line(l, strlen(l), "t", "1", &e) == 0 && e.time_usec == T0 + 123456 &&
           e.severity == TY_SEV_INFO && strcmp(e.message, "hello world") == 0 &&
           strcmp(e.task, "t") == 0 && strcmp(e.trial, "1") == 0,
       "parse line: a record");
    free(e.task);
    free(e.trial);
    free(e.message);
    l = "2026-11-30T09:00:00Z WARNING  two spaces";
    ok(ty_log_parse_line(l, strlen(l), "t", NULL, &e) == 0 && !e.trial &&
           e.severity == TY_SEV_WARNING && strcmp(e.message, " two spaces") == 0,
       "parse line: message kept as is");
    free(e.task);
    free(e.message);
    l = "2026-11-30T09:00:00Z INFO cut here";
    ok(ty_log_parse_line(l, 29, "t", NULL, &e) == 0 && strcmp(e.message, "cut") == 0,
       "parse line: only @len bytes");
    free(e.task);
    free(e.message);
    l = "2026-11-30T09:00:00Z INFO ok \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 bad \xff|\xc3|"
        "\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82";
    ok(ty_log_parse_line(l, strlen(l), "t", NULL, &e) == 0, "parse line: bytes that are not UTF-8");
    is_str(e.message,
           "ok \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 bad \xef\xbf\xbd|\xef\xbf\xbd|"
           "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd",
           "parse line: invalid UTF-8 becomes U+FFFD, valid kept");
    free(e.task);
    free(e.message);
    {
        static const char *const bad[] = {
            "",
            "garbage",
            "2026-11-30T09:00:00Z",
            "2026-11-30T09:00:00Z INFOx",
            "2026-11-30T09:00:00Z info x",
            "2026-11-30T09:00:00 INFO x",
            " INFO x",
            "2026-11-30T09:00:00Z  INFO x",
        };
        for (size_t i = 0; i < TY_ARRAY_SIZE(bad); i++)
            is_int(ty_log_parse_line(bad[i], strlen(bad[i]), "t", NULL, &e),
                   -EINVAL,
                   "parse line: '%s' refused",
                   bad[i]);
        is_int(ty_log_parse_line("2026-11-30\0xyz INFO x", 21, "t", NULL, &e),
               -EINVAL,
               "parse line: NUL in the time refused");
    }
}

static void test_rfc3339(void)
{
    static const struct {
        const char *s;
        int64_t usec;
    } good[] = {
        {"2026-11-30T09:00:00Z", T0},
        {"2026-11-30t09:00:00z", T0},
        {"2026-11-30T09:00:00.123456Z", T0 + 123456},
        {"2026-11-30T09:00:00.1Z", T0 + 100000},
        {"2026-11-30T09:00:00.123456789Z", T0 + 123456},
        {"2026-11-30T11:30:00+02:30", T0},
        {"2026-11-30T08:00:00.5-01:00", T0 + 500000},
        {"2026-11-30", T0 - 9 * 3600 * SEC},
        {"1970-01-01T00:00:00Z", 0},
        {"1969-12-31T23:59:59.5Z", -500000},
        {"2024-02-29T00:00:00Z", INT64_C(1709164800) * SEC},
        {"2000-02-29", INT64_C(951782400) * SEC},
        {"9999-12-31T23:59:59Z", INT64_C(253402300799) * SEC},
    };
    static const char *const bad[] = {
        "",
        "2026",
        "2026-11-30T09:00Z",
        "2026-11-30 09:00:00Z",
        "2026-11-30T09:00:00",
        "2026-13-01",
        "2026-00-10",
        "2026-11-31",
        "2026-02-29",
        "1900-02-29",
        "2026-11-30T24:00:00Z",
        "2026-11-30T09:60:00Z",
        "2026-11-30T09:00:60Z",
        "2026-11-30T09:00:00.1234567890Z",
        "2026-11-30T09:00:00.Z",
        "2026-11-30T09:00:00+0200",
        "2026-11-30T09:00:00+24:00",
        "2026-11-30T09:00:00Zx",
        "20261130",
        "2026-11-30x",
        "2026-11-30T",
        "+2026-11-30",
        "2026-1-30",
        "2026-11-30T09:00:00.1 Z",
        "2026-11-30Z",
    };
    char buf[40];
    int64_t v;

    for (size_t i = 0; i < TY_ARRAY_SIZE(good); i++) {
        v = -1;
        is_int(ty_rfc3339_parse(good[i].s, &v, &err), 0, "rfc3339: '%s' parses", good[i].s);
        is_int(v, good[i].usec, "rfc3339: '%s' value", good[i].s);
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(bad); i++) {
        v = -42;
        int want = strcmp(bad[i], "2026-11-30T09:00:00") == 0 ? -EDOM : -EINVAL;
        is_int(ty_rfc3339_parse(bad[i], &v, &err), want, "rfc3339: '%s' refused", bad[i]);
        is_int(v, -42, "rfc3339: '%s' leaves the result alone", bad[i]);
    }
    like(err.msg, "not an RFC 3339 time", "rfc3339: message");
    (void)ty_rfc3339_parse("2026-11-30T09:00:00", &v, &err);
    like(err.msg,
         "'2026-11-30T09:00:00' has no time zone: add Z (UTC) or an offset such as +01:00",
         "rfc3339: a time without its zone is told so");
    (void)ty_rfc3339_parse("2026-11-30Z", &v, &err);
    like(err.msg, "2026-11-30T09:00:00Z", "rfc3339: message gives an example");
    for (int64_t t = -3 * SEC; t < INT64_C(4102444800) * SEC; t = t * 3 + 7777777) {
        v = -1;
        (void)ty_rfc3339_parse(ty_rfc3339(t, 6, buf, sizeof(buf)), &v, NULL);
        if (v != t) {
            ok(0, "rfc3339: round trip of %s", buf);
            return;
        }
    }
    ok(1, "rfc3339: round trips with ty_rfc3339");
}

/* A record is one line of its file: a service message's control characters are escaped (it
 * may quote a user's command), so a newline in it cannot forge a record; a replica's '\r',
 * tab and escape sequences are kept. */
static void test_format_line(void)
{
    static const char forged[] =
        "cannot run 'x\n2020-01-01T00:00:00.000000Z WARNING forged\r\t\x01'";
    struct ty_log_record rec = {
        .time_usec = T0,
        .severity = TY_SEV_ERROR,
        .task = "service",
        .message = forged,
        .len = sizeof(forged) - 1,
        .attempt = 2,
    };
    struct ty_buf b = TY_BUF_INIT;
    struct ty_log_entry e;

    ty_log_format_line(&b, &rec);
    ok(memchr(b.data, '\n', b.len) == b.data + b.len - 1, "format: a service record is one line");
    ok(ty_log_parse_line(b.data, b.len - 1, "service", NULL, &e) == 0 &&
           e.severity == TY_SEV_ERROR && e.attempt == 2 && e.time_usec == T0 &&
           strcmp(e.message,
                  "cannot run 'x\\n2020-01-01T00:00:00.000000Z WARNING forged\\r\\t\\x01'") == 0,
       "format: its control characters written \\n, \\r, \\t, \\xHH");
    free(e.task);
    free(e.message);
    ty_buf_reset(&b);
    rec.task = "master-replica-0";
    rec.message = "50%\rdone \x1b[1mbold\x1b[0m\tx";
    rec.len = strlen(rec.message);
    ty_log_format_line(&b, &rec);
    ok(ty_log_parse_line(b.data, b.len - 1, "master-replica-0", NULL, &e) == 0 &&
           strcmp(e.message, rec.message) == 0,
       "format: a replica's line keeps its '\\r', tab and escapes");
    free(e.task);
    free(e.message);
    ty_buf_reset(&b);
    rec.message = "a\nb";
    rec.len = 3;
    ty_log_format_line(&b, &rec);
    ok(memchr(b.data, '\n', b.len) == b.data + b.len - 1 && strstr(b.data, " a\\nb\n"),
       "format: any record with a '\\n' is still one line");
    ty_buf_release(&b);
}

/* ---- concurrent readers of growing files ---- */

int main(void)
{
    test_rfc3339();
    test_parse_line();
    test_format_line();
    return done_testing();
}
