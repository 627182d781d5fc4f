/* SPDX-License-Identifier: Apache-2.0
 * test-logs-full.c: a job's log files when the disk fills (logs.c). The kernel's file size
 * limit (RLIMIT_FSIZE) stands for a full filesystem, deterministically and without root: a
 * write that crosses it is cut short, the next ones fail (EFBIG). Checks: a record that does not
 * fit is dropped whole (no line cut short stays in the file), dropped records are counted, and
 * once there is room the next record is preceded by a WARNING line saying how many were lost;
 * the other files, and close, say it too; the reader reads every line back, none garbled. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "logread.h"
#include "logs.h"
#include "macro.h"
#include "tap.h"

static char tmpdir[] = "/tmp/ty-logs-full-XXXXXX";

static int put(struct ty_joblog *jl, const char *task, int i)
{
    char msg[128];
    struct ty_log_record rec = {
        .time_usec = 1700000000000000 + i,
        .severity = TY_SEV_INFO,
        .task = task,
        .message = msg,
        .attempt = 1,
    };
    rec.len = (size_t)snprintf(msg, sizeof(msg), "line-%03d-%080d", i, 0);
    return ty_joblog_write(jl, &rec);
}

static char *slurp(const char *name, size_t *len)
{
    _cleanup_free_ char *path = xasprintf("%s/%s", tmpdir, name);
    char *text = NULL;
    if (ty_read_file(path, 1 << 20, &text, len, NULL) < 0)
        return xstrdup("");
    return text;
}

static void set_limit(rlim_t cur)
{
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = cur;
    if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
        BAIL_OUT("setrlimit: %s", strerror(errno));
}

/* Whether every line of @text is whole: a head, then a message of this test's form. */
static bool lines_whole(const char *text, size_t len, int *nlines, int *nlost)
{
    const char *p = text, *end = text + len;
    *nlines = *nlost = 0;
    if (len && text[len - 1] != '\n')
        return false;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *sp = memchr(p, ' ', (size_t)(nl - p));
        const char *msg = sp ? memchr(sp + 1, ' ', (size_t)(nl - sp - 1)) : NULL;
        if (!msg)
            return false;
        msg++;
        if (strncmp(msg, "line-", 5) == 0) {
            if (nl - msg != 9 + 80)
                return false;
            (*nlines)++;
        } else if (strstr(msg, "log line(s) of this task were lost") && msg < nl) {
            *nlost += (int)strtol(msg, NULL, 10);
        } else {
            return false;
        }
        p = nl + 1;
    }
    return true;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

int main(void)
{
    struct ty_joblog *jl = NULL;
    struct ty_error e = {0};
    struct rlimit orig;
    size_t len = 0;
    int fails = 0, i, nlines = 0, nlost = 0;
    char *text;

    plan(8);
    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp");
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &orig);
    if (ty_joblog_open(tmpdir, &jl, &e) < 0)
        BAIL_OUT("open: %s", e.msg);
    for (i = 0; i < 10; i++)
        if (put(jl, "master-replica-0", i) < 0 || put(jl, "worker-replica-0", i) < 0)
            BAIL_OUT("write %d", i);
    /* 10 lines of ~120 bytes each: the limit falls in the middle of the 13th line. */
    set_limit(12 * 120 + 60);
    for (i = 10; i < 20; i++)
        if (put(jl, "master-replica-0", i) == -EFBIG)
            fails++;
    ok(fails >= 7 && ty_joblog_lost(jl) == (uint64_t)fails,
       "records that do not fit are dropped and counted (%d)",
       fails);
    text = slurp("master-replica-0.log", &len);
    ok(lines_whole(text, len, &nlines, &nlost) && nlines == 20 - fails,
       "no line cut short stays in the file (%d whole lines)",
       nlines);
    free(text);
    set_limit(orig.rlim_cur);
    ok(put(jl, "worker-replica-0", 20) == 0, "room again: a record to another file is written");
    text = slurp("master-replica-0.log", &len);
    ok(lines_whole(text, len, &nlines, &nlost) && nlost == fails,
       "the full file says how many records it lost as soon as anything is written");
    free(text);
    ok(put(jl, "master-replica-0", 21) == 0, "and its next record follows");
    /* Lost at the end: close says it (best effort). */
    set_limit(len + 10);
    ok(put(jl, "master-replica-0", 22) == -EFBIG, "one more record does not fit");
    set_limit(orig.rlim_cur);
    ty_joblog_close(jl);
    text = slurp("master-replica-0.log", &len);
    ok(lines_whole(text, len, &nlines, &nlost) && nlines == 21 - fails && nlost == fails + 1,
       "every line whole: %d lines, %d lost said where they were lost",
       nlines,
       nlost);
    free(text);
    {
        _cleanup_free_ char *path = xasprintf("%s/master-replica-0.log", tmpdir);
        struct ty_log_source src[] = {{"master-replica-0", NULL, path}};
        struct ty_log_query q = {.max_entries = 1000};
        struct ty_log_cursor *cur = NULL;
        struct ty_log_entry *ent = NULL;
        size_t n = 0, bad = 0;
        bool more = false;
        int r = ty_log_cursor_parse(NULL, &cur, &e);
        if (r == 0)
            r = ty_log_read(src, 1, &q, cur, &ent, &n, &more, &e);
        for (size_t k = 0; k < n; k++)
            bad += ent[k].severity == TY_SEV_DEFAULT;
        ok(r == 0 && n == (size_t)(23 - fails) && bad == 0,
           "the reader reads them back: %zu entries, none damaged",
           n);
        ty_log_entries_free(ent, n);
        ty_log_cursor_free(cur);
    }
    (void)nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
