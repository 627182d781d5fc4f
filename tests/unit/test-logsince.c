/* SPDX-License-Identifier: Apache-2.0
 * test-logsince.c: a `since` in a large log file (logread.c's bisection by time): the page
 * starts at the first record at or after it, whatever the line lengths (short, up to the
 * longest line, damaged lines that belong to the record before them), with page tokens after
 * it; and the part of the file before it is not read (a file whose clock went back shows it).
 * The rest of reading logs: test-logread.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "fdutil.h"
#include "linesplit.h"
#include "logread.h"
#include "macro.h"
#include "tap.h"
#include "timeutil.h"

#define T0   INT64_C(1796029200000000) /* 2026-11-30T09:00:00Z */
#define MSEC INT64_C(1000)
#define NREC 60000

static char path[] = "/tmp/ty-logsince.XXXXXX";
static int64_t rec_t[NREC + 1]; /* the time each record's lines are read with */

static void put_line(struct ty_buf *b, int64_t t, const char *msg, size_t pad)
{
    char ts[40];
    ty_buf_printf(b, "%s INFO %s ", ty_rfc3339(t, 6, ts, sizeof(ts)), msg);
    for (size_t i = 0; i < pad; i++)
        ty_buf_putc(b, (char)('a' + i % 26));
    ty_buf_putc(b, '\n');
}

/* NREC records a millisecond apart; every 97th followed by a damaged line (no time: it is
 * read with the record before it), every 5,000th padded to the longest line. */
static void write_file(void)
{
    struct ty_buf b = TY_BUF_INIT;
    int fd = mkstemp(path);

    for (int k = 0; k < NREC; k++) {
        char msg[32];
        (void)snprintf(msg, sizeof(msg), "rec-%d", k);
        rec_t[k] = T0 + k * MSEC;
        put_line(&b, rec_t[k], msg, k % 5000 == 4999 ? TY_LINE_MAX - 80 : (size_t)(k % 53));
        if (k % 97 == 0)
            ty_buf_printf(&b, "damaged-after-%d\n", k);
    }
    if (fd < 0 || ty_write_all(fd, b.data, b.len) < 0)
        BAIL_OUT("cannot write %s", path);
    close(fd);
    ty_buf_release(&b);
}

static int read_since(
    int64_t since, size_t max, const char *token, struct ty_log_entry **e, size_t *n, char **next)
{
    struct ty_log_source src = {"master-replica-0", NULL, path};
    struct ty_log_query q = {NULL, since, max, 0};
    struct ty_log_cursor *c = NULL;
    struct ty_error err = {0};
    bool more = false;
    int r = ty_log_cursor_parse(token, &c, &err);

    if (r == 0)
        r = ty_log_read(&src, 1, &q, c, e, n, &more, &err);
    *next = r == 0 ? ty_log_cursor_format(c) : NULL;
    ty_log_cursor_free(c);
    return r;
}

/* The first record at or after @since is record @want (or none when NREC), its damaged line
 * after it when it has one, and a page token carries on from the page. */
static void check_since(int64_t since, int want, const char *what)
{
    struct ty_log_entry *e = NULL, *e2 = NULL;
    _cleanup_free_ char *next = NULL, *next2 = NULL;
    size_t n = 0, n2 = 0;
    char msg[32];
    int r = read_since(since, 3, NULL, &e, &n, &next);

    if (want >= NREC) {
        ok(r == 0 && n == 0, "%s: nothing", what);
        ty_log_entries_free(e, n);
        return;
    }
    (void)snprintf(msg, sizeof(msg), "rec-%d ", want);
    ok(r == 0 && n >= 1 && strncmp(e[0].message, msg, strlen(msg)) == 0 &&
           e[0].time_usec == rec_t[want],
       "%s: starts at %s",
       what,
       msg);
    if (want % 97 == 0 && n > 1)
        ok(strncmp(e[1].message, "damaged-after-", 14) == 0 && e[1].time_usec == rec_t[want],
           "%s: then its damaged line, at its time",
           what);
    if (want + 3 < NREC) {
        r = read_since(since, 1, next, &e2, &n2, &next2);
        ok(r == 0 && n2 == 1 && n == 3 && e2[0].time_usec >= e[2].time_usec,
           "%s: the next page goes on",
           what);
    }
    ty_log_entries_free(e, n);
    ty_log_entries_free(e2, n2);
}

/* A clock set back: records of a later time first, then the file as above. A read from the
 * start would return them; the bisection skips that part of the file, as the doc says. */
static void test_not_read(void)
{
    struct ty_buf b = TY_BUF_INIT;
    struct ty_log_entry *e = NULL;
    _cleanup_free_ char *next = NULL, *all = NULL;
    size_t n = 0, len = 0;
    int fd;

    put_line(&b, T0 + (NREC + 10) * MSEC, "early-but-late", 0);
    if (ty_read_file(path, 64 << 20, &all, &len, NULL) < 0)
        BAIL_OUT("cannot read %s", path);
    ty_buf_append(&b, all, len);
    fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0 || ty_write_all(fd, b.data, b.len) < 0)
        BAIL_OUT("cannot rewrite %s", path);
    close(fd);
    ok(read_since(T0 + (NREC / 2) * MSEC, 1, NULL, &e, &n, &next) == 0 && n == 1 &&
           strncmp(e[0].message, "rec-30000 ", 10) == 0,
       "the file's start is not read: its record of a later time is not found");
    ty_log_entries_free(e, n);
    e = NULL;
    free(next);
    next = NULL;
    ok(read_since(T0 + 1, 1, NULL, &e, &n, &next) == 0 && n == 1 &&
           strcmp(e[0].message, "early-but-late ") == 0,
       "a since near the start reads it from there");
    ty_log_entries_free(e, n);
    ty_buf_release(&b);
}

int main(void)
{
    write_file();
    check_since(T0 - MSEC, 0, "before every record");
    check_since(T0, 0, "at the first");
    check_since(T0 + 1, 1, "just after the first");
    check_since(T0 + 97 * MSEC, 97, "at a record with a damaged line");
    check_since(T0 + 4999 * MSEC, 4999, "at a longest line");
    check_since(T0 + 5000 * MSEC - 1, 5000, "just after a longest line");
    check_since(T0 + 31234 * MSEC + 500, 31235, "between two");
    check_since(T0 + (NREC - 1) * MSEC, NREC - 1, "at the last");
    check_since(T0 + NREC * MSEC, NREC, "after the last");
    check_since(T0 + INT64_C(1000000000000), NREC, "far in the future");
    test_not_read();
    unlink(path);
    return done_testing();
}
