/* SPDX-License-Identifier: Apache-2.0
 * test-logattempt.c: the attempt of log records in their files (logs.h, logread.h): lines of
 * the first attempt (and records outside any attempt) keep the format files always had, lines
 * of later attempts carry "@N" after the severity; the reader gives every entry its attempt,
 * refuses markers that are not exactly "@N", gives a damaged line the attempt of the record
 * before it (also when a page token starts the read after that record), and a line it parsed
 * formats back to the same line. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "fdutil.h"
#include "logread.h"
#include "logs.h"
#include "macro.h"
#include "tap.h"

#define T0  INT64_C(1796029200000000) /* 2026-11-30T09:00:00Z */
#define SEC INT64_C(1000000)

static struct ty_error err;
static char dir[] = "/tmp/ty-logattempt.XXXXXX";

static void write_rec(struct ty_joblog *jl,
                      const char *task,
                      int64_t t,
                      enum ty_severity sev,
                      unsigned attempt,
                      const char *msg)
{
    struct ty_log_record rec = {
        .time_usec = t,
        .severity = sev,
        .task = task,
        .message = msg,
        .len = strlen(msg),
        .attempt = attempt,
    };
    if (ty_joblog_write(jl, &rec) < 0)
        diag("ty_joblog_write failed");
}

static char *slurp(const char *path)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct ty_buf b = TY_BUF_INIT;
    char chunk[4096];
    ssize_t n;

    if (fd < 0)
        return xstrdup("");
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        ty_buf_append(&b, chunk, (size_t)n);
    return ty_buf_take(&b);
}

static void append_str(const char *path, const char *s)
{
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || ty_write_all(fd, s, strlen(s)) < 0)
        diag("cannot append to %s", path);
}

/* Read every entry of the one file @path (task "t") from @token (NULL: the start). */
static int read_all(const char *path,
                    const char *token,
                    size_t max,
                    struct ty_log_entry **e,
                    size_t *n,
                    char **next)
{
    struct ty_log_source src = {"t", NULL, path};
    struct ty_log_query q = {NULL, 0, max, 0};
    struct ty_log_cursor *c = NULL;
    bool more = false;
    int r;

    ty_error_clear(&err);
    if ((r = ty_log_cursor_parse(token, &c, &err)) < 0)
        return r;
    r = ty_log_read(&src, 1, &q, c, e, n, &more, &err);
    if (r == 0 && next)
        *next = ty_log_cursor_format(c);
    ty_log_cursor_free(c);
    return r;
}

static void test_writer(void)
{
    _cleanup_free_ char *logdir = xasprintf("%s/w", dir);
    _cleanup_free_ char *path = xasprintf("%s/t.log", logdir);
    _cleanup_free_ char *text = NULL;
    struct ty_joblog *jl = NULL;

    if (ty_joblog_open(logdir, &jl, &err) < 0)
        BAIL_OUT("ty_joblog_open: %s", err.msg);
    write_rec(jl, "t", T0, TY_SEV_INFO, 0, "outside any attempt");
    write_rec(jl, "t", T0 + 1, TY_SEV_INFO, 1, "first attempt");
    write_rec(jl, "t", T0 + 2, TY_SEV_ERROR, 2, "second attempt");
    write_rec(jl, "t", T0 + 3, TY_SEV_WARNING, 12, "");
    write_rec(jl, "t", T0 + 4, TY_SEV_INFO, 1, "@2 looks like a marker");
    write_rec(jl, "t", T0 + 5, TY_SEV_INFO, 5000000, "far too many");
    ty_joblog_close(jl);
    text = slurp(path);
    is_str(text,
           "2026-11-30T09:00:00.000000Z INFO outside any attempt\n"
           "2026-11-30T09:00:00.000001Z INFO first attempt\n"
           "2026-11-30T09:00:00.000002Z ERROR@2 second attempt\n"
           "2026-11-30T09:00:00.000003Z WARNING@12 \n"
           "2026-11-30T09:00:00.000004Z INFO @2 looks like a marker\n"
           "2026-11-30T09:00:00.000005Z INFO@999999 far too many\n",
           "writer: attempts 0 and 1 keep the old format, later ones carry @N");

    {
        struct ty_log_entry *e = NULL;
        size_t n = 0;
        static const unsigned want_attempt[] = {1, 1, 2, 12, 1, TY_LOG_MAX_ATTEMPT};
        static const char *const want_msg[] = {"outside any attempt",
                                               "first attempt",
                                               "second attempt",
                                               "",
                                               "@2 looks like a marker",
                                               "far too many"};
        bool same = true;

        is_int(read_all(path, NULL, 100, &e, &n, NULL), 0, "reader: reads the file");
        is_int(n, 6, "reader: every record");
        for (size_t i = 0; i < n && i < 6; i++) {
            if (e[i].attempt != want_attempt[i] || strcmp(e[i].message, want_msg[i]) != 0) {
                diag("entry %zu: attempt %u message '%s'", i, e[i].attempt, e[i].message);
                same = false;
            }
        }
        ok(same, "reader: each entry has its attempt and its message as written");
        is_int(n > 2 ? (int)e[2].severity : -1, TY_SEV_ERROR, "reader: the severity before @N");
        ty_log_entries_free(e, n);
    }
}

static void test_parse_line(void)
{
    static const struct {
        const char *line;
        unsigned attempt;
        enum ty_severity sev;
        const char *msg;
    } good[] = {
        {"2026-11-30T09:00:00Z INFO@2 step 100", 2, TY_SEV_INFO, "step 100"},
        {"2026-11-30T09:00:00Z DEFAULT@7 x", 7, TY_SEV_DEFAULT, "x"},
        {"2026-11-30T09:00:00Z WARNING@999999 x", 999999, TY_SEV_WARNING, "x"},
        {"2026-11-30T09:00:00Z ERROR@3", 3, TY_SEV_ERROR, ""},
        {"2026-11-30T09:00:00Z INFO@1 written by nobody, read as 1",
         1,
         TY_SEV_INFO,
         "written by nobody, read as 1"},
        {"2026-11-30T09:00:00Z INFO  @2 two spaces", 1, TY_SEV_INFO, " @2 two spaces"},
        {"2026-11-30T09:00:00Z INFO plain", 1, TY_SEV_INFO, "plain"},
    };
    static const char *const bad[] = {
        "2026-11-30T09:00:00Z INFO@0 x",
        "2026-11-30T09:00:00Z INFO@02 x",
        "2026-11-30T09:00:00Z INFO@ x",
        "2026-11-30T09:00:00Z INFO@",
        "2026-11-30T09:00:00Z INFO@2x",
        "2026-11-30T09:00:00Z INFO@-1 x",
        "2026-11-30T09:00:00Z INFO@@2 x",
        "2026-11-30T09:00:00Z INFO@1000000 x",
        "2026-11-30T09:00:00Z INFO@99999999999999999999 x",
        "2026-11-30T09:00:00Z @2 x",
        "2026-11-30T09:00:00Z info@2 x",
    };
    struct ty_log_entry e;

    for (size_t i = 0; i < TY_ARRAY_SIZE(good); i++) {
        int r = ty_log_parse_line(good[i].line, strlen(good[i].line), "t", NULL, &e);
        ok(r == 0 && e.attempt == good[i].attempt && e.severity == good[i].sev &&
               strcmp(e.message, good[i].msg) == 0 && e.time_usec == T0,
           "parse line: '%s'",
           good[i].line);
        if (r == 0) {
            free(e.task);
            free(e.message);
        }
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(bad); i++)
        is_int(ty_log_parse_line(bad[i], strlen(bad[i]), "t", NULL, &e),
               -EINVAL,
               "parse line: '%s' refused",
               bad[i]);
    /* Only @len bytes: a marker cut by the end of the line still counts when it is whole. */
    {
        const char *l = "2026-11-30T09:00:00Z INFO@23 x";
        ok(ty_log_parse_line(l, strlen(l) - 3, "t", NULL, &e) == 0 && e.attempt == 2 &&
               strcmp(e.message, "") == 0,
           "parse line: the marker ends where the line does");
        free(e.task);
        free(e.message);
    }
}

/* A damaged line takes the attempt of the record before it, also when the read starts after
 * that record (a page token): the reader looks back for it. */
static void test_damaged(void)
{
    _cleanup_free_ char *path = xasprintf("%s/d.log", dir);
    _cleanup_free_ char *token = NULL;
    struct ty_log_entry *e = NULL;
    size_t n = 0;

    append_str(path, "2026-11-30T09:00:00Z INFO first\n");
    append_str(path, "2026-11-30T09:00:01Z INFO@3 third attempt\n");
    append_str(path, "garbage one\n");
    is_int(read_all(path, NULL, 2, &e, &n, &token), 0, "damaged: first page");
    is_int(n, 2, "damaged: two entries in the first page");
    ty_log_entries_free(e, n);
    is_int(read_all(path, token, 10, &e, &n, NULL), 0, "damaged: next page");
    ok(n == 1 && e[0].attempt == 3 && e[0].severity == TY_SEV_DEFAULT &&
           e[0].time_usec == T0 + SEC && strcmp(e[0].message, "garbage one") == 0,
       "damaged: a line read after a token gets the attempt and time of the record before");
    ty_log_entries_free(e, n);
    is_int(read_all(path, NULL, 10, &e, &n, NULL), 0, "damaged: whole file");
    ok(n == 3 && e[2].attempt == 3, "damaged: the same in one read");
    ty_log_entries_free(e, n);
}

/* Every line the parser accepts formats back to the line as written (severity, attempt). */
static void test_round_trip(void)
{
    static const char *const lines[] = {
        "2026-11-30T09:00:00.000000Z INFO hello",
        "2026-11-30T09:00:00.123456Z ERROR@2 boom",
        "2026-11-30T09:00:00.000001Z WARNING@41 ",
        "2026-11-30T09:00:00.000000Z DEFAULT @5 not a marker",
    };
    for (size_t i = 0; i < TY_ARRAY_SIZE(lines); i++) {
        struct ty_log_entry e;
        struct ty_buf b = TY_BUF_INIT;
        struct ty_log_record rec;
        _cleanup_free_ char *want = xasprintf("%s\n", lines[i]);

        if (ty_log_parse_line(lines[i], strlen(lines[i]), "t", NULL, &e) < 0) {
            ok(0, "round trip: '%s' parses", lines[i]);
            continue;
        }
        rec = (struct ty_log_record){
            .time_usec = e.time_usec,
            .severity = e.severity,
            .task = e.task,
            .message = e.message,
            .len = strlen(e.message),
            .attempt = e.attempt,
        };
        ty_log_format_line(&b, &rec);
        is_str(ty_buf_str(&b), want, "round trip: '%s'", lines[i]);
        ty_buf_release(&b);
        free(e.task);
        free(e.message);
    }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(void)
{
    if (!mkdtemp(dir))
        BAIL_OUT("mkdtemp failed");
    test_writer();
    test_parse_line();
    test_damaged();
    test_round_trip();
    (void)nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
