/* SPDX-License-Identifier: Apache-2.0
 * bench-logsince.c: what does a logs page with `since` cost in a large log file?
 *
 * Writes one task's log file of MB megabytes (records of 60-110 bytes, a millisecond apart),
 * then runs, in alternating rounds so machine noise hits all alike:
 *   since:    ty_log_read of one page of 100 records at or after a time 90% into the file
 *             (logread.c bisects the file on its records' times, then reads on);
 *   first:    ty_log_read of the file's first page (no since): the floor of any page;
 *   scan:     reading the file up to that point, 64 KiB at a time, finding each line's end:
 *             the least that reading the records before `since` one by one costs (what a
 *             since cost before the bisection: a request thread held 0.27 s on 464 MB).
 * Prints the median microseconds of each and the ratios. Not a test: nothing here passes or
 * fails (test-logsince checks what a since finds).
 * Usage: bench-logsince [MB [ROUNDS]] */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench-stats.h"
#include "buf.h"
#include "fdutil.h"
#include "logread.h"
#include "parse.h"
#include "timeutil.h"

#define T0   INT64_C(1796029200000000)
#define MSEC INT64_C(1000)

static char path[] = "/tmp/bench-logsince.XXXXXX";

/* Give up, leaving no file behind. */
static void fail(const char *what)
{
    fprintf(stderr, "bench-logsince: %s\n", what);
    unlink(path);
    exit(1);
}

static int64_t write_file(size_t mb)
{
    struct ty_buf b = TY_BUF_INIT;
    int fd = mkstemp(path);
    int64_t k = 0;
    char ts[40];

    if (fd < 0)
        fail("cannot create the log file");
    for (size_t written = 0; written < mb << 20; k++) {
        ty_buf_printf(&b,
                      "%s INFO step %lld loss %.6f %.*s\n",
                      ty_rfc3339(T0 + k * MSEC, 6, ts, sizeof(ts)),
                      (long long)k,
                      1.0 / (double)(k + 1),
                      (int)(k % 50),
                      "..................................................");
        if (b.len > (1 << 20) || written + b.len >= mb << 20) {
            if (ty_write_all(fd, b.data, b.len) < 0)
                fail("cannot write the log file");
            written += b.len;
            ty_buf_reset(&b);
        }
    }
    close(fd);
    ty_buf_release(&b);
    return k;
}

static double read_page(int64_t since)
{
    struct ty_log_source src = {"master-replica-0", NULL, path};
    struct ty_log_query q = {NULL, since, 100, 0};
    struct ty_log_cursor *cur = NULL;
    struct ty_log_entry *e = NULL;
    struct ty_error err = {0};
    size_t n = 0;
    bool more = false;
    int64_t t = ty_mono_usec();

    if (ty_log_cursor_parse(NULL, &cur, &err) < 0 ||
        ty_log_read(&src, 1, &q, cur, &e, &n, &more, &err) < 0)
        fail(ty_error_msg(&err));
    if (n != 100)
        fail("a page of fewer than 100 entries");
    t = ty_mono_usec() - t;
    ty_log_cursor_free(cur);
    ty_log_entries_free(e, n);
    return (double)t;
}

/* Read the file's first @bytes, finding every line's end. */
static double scan(size_t bytes)
{
    static char buf[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t done = 0, lines = 0;
    int64_t t = ty_mono_usec();

    while (done < bytes) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + n - p))); p++)
            lines++;
        done += (size_t)n;
    }
    t = ty_mono_usec() - t;
    close(fd);
    return lines ? (double)t : -1;
}

int main(int argc, char **argv)
{
    int64_t mb = 256, rounds = 9;

    if ((argc > 1 && ty_parse_int64(argv[1], 1, 65536, &mb) < 0) ||
        (argc > 2 && ty_parse_int64(argv[2], 1, 1000, &rounds) < 0)) {
        fprintf(stderr, "usage: bench-logsince [MB [ROUNDS]]\n");
        return 2;
    }
    double *s = calloc((size_t)rounds, sizeof(double)), *f = calloc((size_t)rounds, sizeof(double));
    double *c = calloc((size_t)rounds, sizeof(double));
    int64_t n = write_file((size_t)mb);
    int64_t since = T0 + (n * 9 / 10) * MSEC;

    for (int r = 0; r < rounds; r++) {
        s[r] = read_page(since);
        f[r] = read_page(0);
        c[r] = scan(((size_t)mb << 20) * 9 / 10);
    }
    double ms = bench_median(s, (int)rounds), mf = bench_median(f, (int)rounds);
    double mc = bench_median(c, (int)rounds);
    printf("file: %lld MB, %lld records; since at 90%% of it; %lld rounds (median)\n",
           (long long)mb,
           (long long)n,
           (long long)rounds);
    printf("since (one page, bisected) us %.0f\n", ms);
    printf("first page (floor) us %.0f\n", mf);
    printf("scan to the since point (baseline) us %.0f\n", mc);
    printf("since / scan %.4f\n", ms / mc);
    printf("since / first page %.2f\n", ms / mf);
    unlink(path);
    free(s);
    free(f);
    free(c);
    return 0;
}
