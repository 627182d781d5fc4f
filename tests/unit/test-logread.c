/* SPDX-License-Identifier: Apache-2.0
 * test-logread.c: reading log files back (logread.c): the merge of several files by time,
 * the task and time filters, paging with tokens (no duplicates, no gaps, files that grow
 * between pages, a line still being written, a file that appears later), damaged lines,
 * forged tokens, concurrent readers of files being appended to. One line and its times:
 * test-logline.c. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "base64.h"
#include "buf.h"
#include "fdutil.h"
#include "logread.h"
#include "logs.h"
#include "macro.h"
#include "parse.h"
#include "tap.h"
#include "timeutil.h"

#define T0  INT64_C(1796029200000000) /* 2026-11-30T09:00:00Z */
#define SEC INT64_C(1000000)

static struct ty_error err;
static char dir[] = "/tmp/ty-logread.XXXXXX";

static char *path_of(const char *name)
{
    return xasprintf("%s/%s.log", dir, name);
}

static void write_rec(struct ty_joblog *jl,
                      const char *task,
                      const char *trial,
                      int64_t t,
                      enum ty_severity sev,
                      const char *msg)
{
    struct ty_log_record rec = {t, sev, task, trial, msg, strlen(msg), 0};
    if (ty_joblog_write(jl, &rec) < 0)
        diag("ty_joblog_write failed");
}

static void append_raw(const char *name, const void *p, size_t n)
{
    _cleanup_free_ char *path = path_of(name);
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || ty_write_all(fd, p, n) < 0)
        diag("cannot append to %s", path);
}

static void append_str(const char *name, const char *s)
{
    append_raw(name, s, strlen(s));
}

struct page {
    int r;
    struct ty_log_entry *e;
    size_t n;
    bool more;
    char *token; /* the next page's */
};

static struct page read_page(const struct ty_log_source *src,
                             size_t n,
                             const char *task,
                             int64_t since,
                             size_t max,
                             const char *token)
{
    struct ty_log_query q = {task, since, max, 0};
    struct ty_log_cursor *c = NULL;
    struct page p = {0};

    ty_error_clear(&err);
    p.r = ty_log_cursor_parse(token, &c, &err);
    if (p.r < 0)
        return p;
    p.r = ty_log_read(src, n, &q, c, &p.e, &p.n, &p.more, &err);
    if (p.r == 0)
        p.token = ty_log_cursor_format(c);
    ty_log_cursor_free(c);
    return p;
}

static void page_free(struct page *p)
{
    ty_log_entries_free(p->e, p->n);
    free(p->token);
    *p = (struct page){0};
}

/* ---- three tasks ---- */

#define NTASK 3
#define NREC  10

static const char *const tasks[NTASK] = {
    "master-replica-0", "worker-replica-0", "worker-replica-1"};
static struct ty_log_source src3[NTASK];

struct want {
    int64_t t;
    int task;
    char msg[32];
};
static struct want all[NTASK * NREC + 16];
static size_t nall;

static int64_t rec_time(int task, int k)
{
    /* worker-replica-1's first record ties with master-replica-0's */
    return T0 + k * 30 * SEC + (task == 2 && k == 0 ? 0 : task * 10 * SEC);
}

static int cmp_want(const void *a, const void *b)
{
    const struct want *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->task - y->task;
}

static void add_rec(struct ty_joblog *jl, int task, int64_t t, const char *msg)
{
    write_rec(jl, tasks[task], NULL, t, task == 2 ? TY_SEV_ERROR : TY_SEV_INFO, msg);
    all[nall].t = t;
    all[nall].task = task;
    (void)snprintf(all[nall].msg, sizeof(all[nall].msg), "%s", msg);
    nall++;
    qsort(all, nall, sizeof(all[0]), cmp_want);
}

/* Entries @e match all[from..from+n). */
static bool same(const struct ty_log_entry *e, size_t n, size_t from)
{
    for (size_t i = 0; i < n; i++) {
        const struct want *w = &all[from + i];
        if (from + i >= nall || e[i].time_usec != w->t || strcmp(e[i].task, tasks[w->task]) ||
            strcmp(e[i].message, w->msg) || e[i].trial ||
            e[i].severity != (w->task == 2 ? TY_SEV_ERROR : TY_SEV_INFO)) {
            diag("entry %zu: %" PRId64 " %s '%s', want %" PRId64 " %s '%s'",
                 from + i,
                 e[i].time_usec,
                 e[i].task,
                 e[i].message,
                 w->t,
                 tasks[w->task],
                 w->msg);
            return false;
        }
    }
    return true;
}

static void test_merge(struct ty_joblog *jl)
{
    struct page p;
    size_t n;

    for (int i = 0; i < NTASK; i++)
        src3[i] = (struct ty_log_source){tasks[i], NULL, path_of(tasks[i])};
    /* written file by file: the order in the files does not matter */
    for (int task = NTASK - 1; task >= 0; task--)
        for (int k = 0; k < NREC; k++) {
            char msg[32];
            (void)snprintf(msg, sizeof(msg), "%c%d says hi", "mwv"[task], k);
            add_rec(jl, task, rec_time(task, k), msg);
        }

    p = read_page(src3, NTASK, NULL, 0, 1000, NULL);
    is_int(p.r, 0, "merge: reads");
    is_int(p.n, NTASK * NREC, "merge: every record");
    ok(same(p.e, p.n, 0), "merge: in time order, ties in source order");
    ok(!p.more, "merge: nothing more");
    ok(p.token && *p.token, "merge: a token");
    page_free(&p);

    p = read_page(src3, NTASK, "worker-replica-1", 0, 1000, NULL);
    is_int(p.n, NREC, "task filter: one task's records");
    n = 0;
    for (size_t i = 0; i < p.n; i++)
        n +=
            strcmp(p.e[i].task, "worker-replica-1") == 0 && p.e[i].time_usec == rec_time(2, (int)i);
    is_int(n, NREC, "task filter: that task, in order");
    page_free(&p);

    p = read_page(src3, NTASK, "no-such-task", 0, 1000, NULL);
    ok(p.r == 0 && p.n == 0 && !p.more, "task filter: unknown task reads nothing");
    page_free(&p);

    p = read_page(src3, NTASK, NULL, T0 + 150 * SEC, 1000, NULL);
    n = 0;
    while (n < nall && all[n].t < T0 + 150 * SEC)
        n++;
    is_int(p.n, nall - n, "since: records at or after the time");
    ok(same(p.e, p.n, n), "since: the right ones");
    page_free(&p);

    p = read_page(src3, NTASK, "worker-replica-0", T0 + 150 * SEC, 2, NULL);
    ok(p.n == 2 && p.more && p.e[0].time_usec == T0 + 160 * SEC, "task and since together");
    page_free(&p);
}

/* Page through with @max per page; returns the last token (caller frees). */
static char *page_all(size_t max, const char *token, size_t from, size_t expect, const char *what)
{
    char *tok = token ? xstrdup(token) : NULL;
    size_t got = 0, pages = 0;
    bool good = true;

    for (;;) {
        struct page p = read_page(src3, NTASK, NULL, 0, max, tok);
        if (p.r < 0) {
            diag("%s", err.msg);
            good = false;
            break;
        }
        pages++;
        good = good && same(p.e, p.n, from + got);
        good = good && p.n <= max && (p.more ? p.n == max : true);
        got += p.n;
        free(tok);
        tok = TAKE_PTR(p.token);
        if (!p.more) {
            page_free(&p);
            break;
        }
        page_free(&p);
        if (pages > 1000)
            break;
    }
    ok(good, "%s: pages of %zu in order, no duplicates", what, max);
    is_int(got, expect, "%s: pages of %zu, every record", what, max);
    return tok;
}

static void test_paging(struct ty_joblog *jl)
{
    struct page p;
    char *tok, *tok2;

    free(page_all(7, NULL, 0, nall, "paging"));
    free(page_all(1, NULL, 0, nall, "paging"));
    free(page_all(10, NULL, 0, nall, "paging"));
    tok = page_all(30, NULL, 0, nall, "paging");

    /* a full last page says there is no more */
    p = read_page(src3, NTASK, NULL, 0, 30, NULL);
    ok(p.n == 30 && !p.more, "paging: a page of exactly what is left has no more");
    page_free(&p);

    p = read_page(src3, NTASK, NULL, 0, 10, tok);
    ok(p.r == 0 && p.n == 0 && !p.more, "paging: nothing after the end");
    ok(p.token && strcmp(p.token, tok) == 0, "paging: the token stays the same");
    page_free(&p);

    /* the files grow: reading on from the same token gets only what is new */
    add_rec(jl, 0, T0 + 1000 * SEC, "late m1");
    add_rec(jl, 1, T0 + 1001 * SEC, "late w1");
    add_rec(jl, 0, T0 + 1002 * SEC, "late m2");
    add_rec(jl, 1, T0 + 1004 * SEC, "late w2");
    add_rec(jl, 2, T0 + 1003 * SEC, "late v");
    tok2 = page_all(2, tok, nall - 5, 5, "append");
    free(tok);
    p = read_page(src3, NTASK, NULL, 0, 10, tok2);
    ok(p.r == 0 && p.n == 0 && !p.more, "append: then nothing");
    page_free(&p);
    free(tok2);

    /* the same again from the start */
    free(page_all(4, NULL, 0, nall, "after append"));
}

static void test_partial_and_damage(void)
{
    struct ty_log_source s[] = {{"partial", NULL, path_of("partial")},
                                {"damaged", NULL, path_of("damaged")}};
    struct page p, q;
    char ts[40];
    _cleanup_free_ char *text = NULL;

    append_str("partial",
               "2026-11-30T10:00:00.000000Z INFO first\n"
               "2026-11-30T10:00:01.000000Z INFO seco");
    p = read_page(s, 1, NULL, 0, 10, NULL);
    ok(p.r == 0 && p.n == 1 && !p.more && strcmp(p.e[0].message, "first") == 0,
       "partial: the complete line only");
    append_str("partial", "nd half");
    q = read_page(s, 1, NULL, 0, 10, p.token);
    ok(q.r == 0 && q.n == 0 && !q.more, "partial: still no newline");
    page_free(&q);
    append_str("partial", "\n");
    q = read_page(s, 1, NULL, 0, 10, p.token);
    ok(q.r == 0 && q.n == 1 && strcmp(q.e[0].message, "second half") == 0 &&
           q.e[0].time_usec == T0 + 3601 * SEC,
       "partial: read once complete");
    page_free(&q);
    page_free(&p);

    /* damaged lines come back as DEFAULT with the previous record's time */
    text = xasprintf("garbage at start\n"
                     "%s INFO good one\n"
                     "this line is %c broken\n"
                     "%s WARNING good two\n"
                     "2026-11-30T09:00:03Z BOGUS x\n"
                     "2026-11-30T09:00:0\n"
                     "2026-11-30T09:00:04Z ERROR\n"
                     "2026-11-30T09:00:05Z DEFAULT \n",
                     ty_rfc3339(T0 + 1 * SEC, 6, ts, sizeof(ts)),
                     '\0',
                     "2026-11-30T09:00:02.000000Z");
    append_raw("damaged", text, strlen(text) + strlen(text + strlen(text) + 1) + 1);
    p = read_page(s + 1, 1, NULL, 0, 100, NULL);
    is_int(p.n, 8, "damage: every line");
    if (p.n == 8) {
        ok(p.e[0].severity == TY_SEV_DEFAULT && p.e[0].time_usec == 0 &&
               strcmp(p.e[0].message, "garbage at start") == 0,
           "damage: first line, time 0");
        ok(p.e[1].severity == TY_SEV_INFO && p.e[1].time_usec == T0 + SEC, "damage: good line");
        ok(p.e[2].severity == TY_SEV_DEFAULT && p.e[2].time_usec == T0 + SEC &&
               strcmp(p.e[2].message, "this line is \xef\xbf\xbd broken") == 0,
           "damage: NUL byte shown as U+FFFD, previous time");
        ok(p.e[3].severity == TY_SEV_WARNING && p.e[3].time_usec == T0 + 2 * SEC,
           "damage: WARNING");
        ok(p.e[4].severity == TY_SEV_DEFAULT && p.e[4].time_usec == T0 + 2 * SEC &&
               strcmp(p.e[4].message, "2026-11-30T09:00:03Z BOGUS x") == 0,
           "damage: unknown severity, raw text");
        ok(p.e[5].severity == TY_SEV_DEFAULT && strcmp(p.e[5].message, "2026-11-30T09:00:0") == 0,
           "damage: cut line");
        ok(p.e[6].severity == TY_SEV_ERROR && p.e[6].time_usec == T0 + 4 * SEC &&
               strcmp(p.e[6].message, "") == 0,
           "damage: no message at all");
        ok(p.e[7].severity == TY_SEV_DEFAULT && p.e[7].time_usec == T0 + 5 * SEC &&
               strcmp(p.e[7].message, "") == 0,
           "damage: DEFAULT severity, empty message");
    }
    page_free(&p);

    /* a page that starts at a damaged line still knows the time before it */
    p = read_page(s + 1, 1, NULL, 0, 2, NULL);
    q = read_page(s + 1, 1, NULL, 0, 1, p.token);
    ok(q.n == 1 && q.e[0].severity == TY_SEV_DEFAULT && q.e[0].time_usec == T0 + SEC,
       "damage: time found before the token's offset");
    page_free(&q);
    page_free(&p);
    p = read_page(s + 1, 1, NULL, 0, 5, NULL);
    q = read_page(s + 1, 1, NULL, 0, 1, p.token);
    ok(q.n == 1 && q.e[0].time_usec == T0 + 2 * SEC, "damage: time found two lines back");
    page_free(&q);
    page_free(&p);

    p = read_page(s + 1, 1, NULL, T0 + SEC, 100, NULL);
    ok(p.n == 7 && p.e[0].time_usec == T0 + SEC, "damage: since drops the line of time 0");
    page_free(&p);
    free((char *)s[0].path);
    free((char *)s[1].path);
}

static void test_long_lines(struct ty_joblog *jl)
{
    struct ty_log_source s[] = {{"long", NULL, path_of("long")},
                                {"runaway", NULL, path_of("runaway")}};
    char *big = xmalloc(200001);
    struct page p;
    size_t total = 0;
    bool same_bytes = true;

    memset(big, 'x', 200000);
    big[65536] = '\0';
    write_rec(jl, "long", NULL, T0, TY_SEV_INFO, big);
    write_rec(jl, "long", NULL, T0 + 1, TY_SEV_INFO, "after");
    p = read_page(s, 1, NULL, 0, 10, NULL);
    ok(p.n == 2 && strlen(p.e[0].message) == 65536 && strcmp(p.e[1].message, "after") == 0,
       "long lines: 64 KiB message whole");
    page_free(&p);

    big[65536] = 'x';
    big[200000] = '\n';
    append_raw("runaway", big, 200001);
    p = read_page(s + 1, 1, NULL, 0, 100, NULL);
    for (size_t i = 0; i < p.n; i++) {
        same_bytes = same_bytes && p.e[i].severity == TY_SEV_DEFAULT &&
                     strspn(p.e[i].message, "x") == strlen(p.e[i].message);
        total += strlen(p.e[i].message);
    }
    ok(p.n == 4 && same_bytes && total == 200000, "long lines: a runaway line comes in pieces");
    page_free(&p);
    {
        /* a page of long lines ends once its messages reach max_bytes (the entry that reaches
         * it included), with more to read */
        struct ty_log_query q = {NULL, 0, 100, 100000};
        struct ty_log_cursor *c = NULL;
        struct ty_log_entry *e = NULL;
        size_t n = 0;
        bool more = false;
        ok(ty_log_cursor_parse(NULL, &c, &err) == 0 &&
               ty_log_read(s + 1, 1, &q, c, &e, &n, &more, &err) == 0,
           "long lines: read with a byte limit");
        ok(n == 2 && more, "long lines: two pieces of 64 KiB reach 100000 bytes: more follow");
        ty_log_entries_free(e, n);
        ty_log_cursor_free(c);
    }
    free(big);
    free((char *)s[0].path);
    free((char *)s[1].path);
}

static void test_sources(struct ty_joblog *jl)
{
    _cleanup_free_ char *p_trial = path_of("master-replica-0.2");
    _cleanup_free_ char *p_new = path_of("newcomer");
    _cleanup_free_ char *p_missing = xasprintf("%s/no/such/file.log", dir);
    struct ty_log_source s[] = {{"master-replica-0", "2", p_trial},
                                {"missing", NULL, p_missing},
                                {"newcomer", NULL, p_new}};
    struct page p, q;

    write_rec(jl, "master-replica-0", "2", T0, TY_SEV_INFO, "trial two");
    write_rec(jl, "master-replica-0", "2", T0 + 2, TY_SEV_INFO, "trial two again");
    write_rec(jl, "newcomer", NULL, T0 + 1, TY_SEV_INFO, "new 1");
    write_rec(jl, "newcomer", NULL, T0 + 3, TY_SEV_INFO, "new 2");

    p = read_page(s, 2, NULL, 0, 10, NULL);
    ok(p.r == 0 && p.n == 2 && p.e[0].trial && strcmp(p.e[0].trial, "2") == 0 &&
           strcmp(p.e[0].task, "master-replica-0") == 0,
       "sources: trial of the entries; a missing file reads as empty");
    /* a file that appears later is read from its start */
    q = read_page(s, 3, NULL, 0, 10, p.token);
    ok(q.r == 0 && q.n == 2 && strcmp(q.e[0].message, "new 1") == 0 &&
           strcmp(q.e[1].message, "new 2") == 0 && !q.e[0].trial,
       "sources: a new file is read from the start, the old one goes on");
    page_free(&q);
    /* and a token with an offset for a file that is missing reads it as empty */
    s[0].path = p_missing;
    q = read_page(s, 1, NULL, 0, 10, p.token);
    ok(q.r == 0 && q.n == 0 && !q.more, "sources: a file gone missing reads as empty");
    page_free(&q);
    page_free(&p);
}

/* A token of @text with the right checksum. */
static char *forge(const char *text)
{
    struct ty_buf b = TY_BUF_INIT;
    uint32_t h = 2166136261u;
    char *t;

    ty_buf_puts(&b, text);
    for (size_t i = 0; i < b.len; i++) {
        h ^= (unsigned char)b.data[i];
        h *= 16777619u;
    }
    ty_buf_printf(&b, "~%08" PRIx32, h);
    t = ty_base64_encode(b.data, b.len, true);
    ty_buf_release(&b);
    return t;
}

static void test_tokens(void)
{
    static const char *const junk[] = {
        "abc",
        "!!!!",
        "AAAA",
        "TDF8",
        "L1|~00000000",
        "bm9uc2Vuc2U",
        "a",
        "TDF8fjAwMDAwMDAw=",
    };
    static const char *const bad_text[] = {
        "L1|0,16,master-replica-005;",    /* leading zero */
        "L1|0,16,master-replica-00;",     /* zero offset */
        "L1|0,3,abc5;0,3,abc6;",          /* the same key twice */
        "L1|0,3,abd5;0,3,abc6;",          /* out of order */
        "L1|4,1,x5;",                     /* shares more than there is */
        "L1|0,0,5;",                      /* empty key */
        "L1|0,50,ab5;",                   /* longer than the text */
        "L1|0,3,abc5",                    /* no ';' */
        "L1|0,3,abc-5;",                  /* negative */
        "L1|0,3,abc1234567890123456789;", /* too many digits */
        "L1|00,3,abc5;",                  /* leading zero */
        "L2|0,3,abc5;",                   /* another version */
        "L1|0,3,abc5;x",                  /* trailing text */
        "",                               /* nothing at all */
    };
    struct ty_log_cursor *c = NULL;
    struct page p;
    char *tok, *t2;
    size_t n;

    for (size_t i = 0; i < TY_ARRAY_SIZE(junk); i++) {
        c = NULL;
        ty_error_clear(&err);
        is_int(ty_log_cursor_parse(junk[i], &c, &err), -EINVAL, "tokens: junk '%s'", junk[i]);
        ok(c == NULL, "tokens: junk '%s' leaves no cursor", junk[i]);
        like(err.msg, "pageToken: not a token from this service", "tokens: junk message");
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(bad_text); i++) {
        tok = forge(bad_text[i]);
        c = NULL;
        is_int(ty_log_cursor_parse(tok, &c, &err), -EINVAL, "tokens: forged '%s'", bad_text[i]);
        ty_log_cursor_free(c);
        free(tok);
    }

    /* a real token, changed in any one character or cut, is refused */
    p = read_page(src3, NTASK, NULL, 0, 17, NULL);
    tok = xstrdup(p.token);
    page_free(&p);
    n = strlen(tok);
    {
        int refused = 0;
        for (size_t i = 0; i < n; i++) {
            char saved = tok[i];
            tok[i] = saved == 'A' ? 'B' : 'A';
            c = NULL;
            refused += ty_log_cursor_parse(tok, &c, NULL) == -EINVAL;
            ty_log_cursor_free(c);
            tok[i] = saved;
        }
        is_int(refused, n, "tokens: every one-character change refused");
        refused = 0;
        for (size_t k = 1; k < n; k++) {
            t2 = xstrndup(tok, k);
            c = NULL;
            refused += ty_log_cursor_parse(t2, &c, NULL) == -EINVAL;
            ty_log_cursor_free(c);
            free(t2);
        }
        is_int(refused, n - 1, "tokens: every cut refused");
    }
    /* round trip */
    c = NULL;
    ok(ty_log_cursor_parse(tok, &c, &err) == 0, "tokens: a real one parses");
    t2 = ty_log_cursor_format(c);
    is_str(t2, tok, "tokens: and formats the same");
    ty_log_cursor_free(c);
    free(t2);
    free(tok);

    tok = forge("L1|0,16,master-replica-05;0,16,worker-replica-0123;");
    c = NULL;
    ok(ty_log_cursor_parse(tok, &c, &err) == 0, "tokens: hand-made one parses");
    t2 = ty_log_cursor_format(c);
    is_str(t2, tok, "tokens: and formats canonically");
    ty_log_cursor_free(c);
    free(t2);
    free(tok);

    /* a well-formed token with an offset past the end of its file: the file was truncated
     * since, and is read from its start */
    tok = forge("L1|0,16,master-replica-0999999;");
    p = read_page(src3, NTASK, "master-replica-0", 0, 1000, tok);
    {
        struct page whole = read_page(src3, NTASK, "master-replica-0", 0, 1000, NULL);
        ok(p.r == 0 && p.n == whole.n && p.n > 0 && strcmp(p.token, whole.token) == 0,
           "tokens: an offset past the end reads the file from its start (%zu entries)",
           p.n);
        page_free(&whole);
    }
    page_free(&p);
    free(tok);

    c = NULL;
    ok(ty_log_cursor_parse(NULL, &c, &err) == 0 && c, "tokens: NULL is the start");
    t2 = ty_log_cursor_format(c);
    ty_log_cursor_free(c);
    c = NULL;
    ok(ty_log_cursor_parse(t2, &c, &err) == 0, "tokens: the start's token parses");
    ty_log_cursor_free(c);
    free(t2);
}

/* A file truncated under a reader (an operator freeing space) is read again from its start:
 * what it holds was written since; the other files go on from where they were. */
static void test_truncated(void)
{
    struct ty_log_source s[] = {{"trunc", NULL, path_of("trunc")}, {"kept", NULL, path_of("kept")}};
    struct page p, q;

    append_str("trunc",
               "2026-11-30T10:00:00.000000Z INFO old one\n"
               "2026-11-30T10:00:01.000000Z INFO old two\n");
    append_str("kept", "2026-11-30T10:00:02.000000Z INFO kept one\n");
    p = read_page(s, 2, NULL, 0, 10, NULL);
    ok(p.r == 0 && p.n == 3, "truncated: everything read first");
    if (truncate(s[0].path, 0) < 0)
        diag("truncate failed");
    append_str("trunc", "2026-11-30T10:00:03.000000Z INFO new\n");
    append_str("kept", "2026-11-30T10:00:04.000000Z INFO kept two\n");
    q = read_page(s, 2, NULL, 0, 10, p.token);
    ok(q.r == 0 && q.n == 2 && strcmp(q.e[0].message, "new") == 0 &&
           strcmp(q.e[1].message, "kept two") == 0,
       "truncated: its new line, then the other file's next one");
    page_free(&p);
    p = read_page(s, 2, NULL, 0, 10, q.token);
    ok(p.r == 0 && p.n == 0, "truncated: then nothing more");
    page_free(&p);
    page_free(&q);
    free((char *)s[0].path);
    free((char *)s[1].path);
}

static void test_many_files(void)
{
    enum { N = 600 };
    struct ty_log_source *s = xcalloc(N, sizeof(*s));
    struct page p;
    char name[64];

    for (int i = 0; i < N; i++) {
        (void)snprintf(name, sizeof(name), "worker-replica-%d", i + 100);
        append_str(name, "2026-11-30T09:00:00.000000Z INFO hello from a big job\n");
        s[i] = (struct ty_log_source){xstrdup(name), NULL, path_of(name)};
    }
    p = read_page(s, N, NULL, 0, 10000, NULL);
    ok(p.r == 0 && p.n == N, "many files: one record each");
    diag("token for %d files: %zu characters", N, p.token ? strlen(p.token) : 0);
    ok(p.token && strlen(p.token) < 8192, "many files: the token stays under 8 KiB");
    page_free(&p);
    for (int i = 0; i < N; i++) {
        free((char *)s[i].task);
        free((char *)s[i].path);
    }
    free(s);
}

#define CW_RECORDS 3000

struct reader_ctx {
    const struct ty_log_source *src;
    volatile int *done;
    bool good;
    size_t got;
};

static void *writer_main(void *arg)
{
    struct ty_joblog *jl = arg;
    char msg[32];

    for (int i = 0; i < CW_RECORDS; i++) {
        (void)snprintf(msg, sizeof(msg), "%d", i / 3);
        write_rec(
            jl, (const char *[]){"cw-a", "cw-b", "cw-c"}[i % 3], NULL, T0 + i, TY_SEV_INFO, msg);
    }
    return NULL;
}

static void *reader_main(void *arg)
{
    struct reader_ctx *x = arg;
    char *tok = NULL;
    int next[3] = {0, 0, 0};

    x->good = true;
    for (;;) {
        int done = __atomic_load_n(x->done, __ATOMIC_ACQUIRE);
        struct page p = read_page(x->src, 3, NULL, 0, 37, tok);
        bool more = p.more;
        if (p.r < 0) {
            x->good = false;
            break;
        }
        for (size_t i = 0; i < p.n; i++) {
            int t = p.e[i].task[3] - 'a';
            int64_t k;
            if (t < 0 || t > 2 || ty_parse_int64(p.e[i].message, 0, INT64_MAX, &k) < 0 ||
                k != next[t] || p.e[i].time_usec != T0 + next[t] * 3 + t)
                x->good = false;
            next[t]++;
        }
        x->got += p.n;
        free(tok);
        tok = TAKE_PTR(p.token);
        page_free(&p);
        /* a read begun after the writer finished sees everything */
        if ((done && !more) || !x->good)
            break;
    }
    free(tok);
    return NULL;
}

static void test_concurrent(struct ty_joblog *jl)
{
    struct ty_log_source s[3] = {{"cw-a", NULL, path_of("cw-a")},
                                 {"cw-b", NULL, path_of("cw-b")},
                                 {"cw-c", NULL, path_of("cw-c")}};
    volatile int done = 0;
    struct reader_ctx ctx[4];
    pthread_t w, r[4];
    bool good = true;
    size_t got = 0;

    for (int i = 0; i < 4; i++) {
        ctx[i] = (struct reader_ctx){s, &done, false, 0};
        pthread_create(&r[i], NULL, reader_main, &ctx[i]);
    }
    pthread_create(&w, NULL, writer_main, jl);
    pthread_join(w, NULL);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 4; i++) {
        pthread_join(r[i], NULL);
        good = good && ctx[i].good;
        got += ctx[i].got;
    }
    ok(good, "concurrent: every reader saw each file's records in order, none twice");
    is_int(got, 4 * CW_RECORDS, "concurrent: every reader saw every record");
    for (int i = 0; i < 3; i++)
        free((char *)s[i].path);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

int main(void)
{
    struct ty_joblog *jl = NULL;

    if (!mkdtemp(dir) || ty_joblog_open(dir, &jl, &err) < 0) {
        ok(0, "temporary directory: %s", err.msg);
        return done_testing();
    }
    test_merge(jl);
    test_paging(jl);
    test_partial_and_damage();
    test_long_lines(jl);
    test_sources(jl);
    test_tokens();
    test_truncated();
    test_many_files();
    test_concurrent(jl);
    ty_joblog_close(jl);
    for (int i = 0; i < NTASK; i++)
        free((char *)src3[i].path);
    (void)nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
