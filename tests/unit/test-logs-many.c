/* SPDX-License-Identifier: Apache-2.0
 * test-logs-many.c: a job's log files with many tasks (logs.c finds a record's file through an
 * index, not by comparing every name). 600 tasks and 200 trial files (under a 1,024 open-files
 * limit), their records interleaved: every record lands in its own file, in order, each file is
 * opened and announced once, and names that make the same file name ("a.b" and task "a" of trial
 * "b") share it as before. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "logs.h"
#include "macro.h"
#include "tap.h"

#define TASKS  600
#define TRIALS 200
#define ROUNDS 3

static char tmpdir[] = "/tmp/ty-logs-many-XXXXXX";

struct announced {
    size_t n;
    size_t dup; /* a path announced twice */
    char **paths;
};

static void on_new_file(void *ctx, const char *task, const char *trial, const char *path)
{
    struct announced *a = ctx;

    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->paths[i], path) == 0)
            a->dup++;
    a->paths = xreallocarray(a->paths, a->n + 1, sizeof(*a->paths));
    a->paths[a->n++] = xstrdup(path);
}

static int put(struct ty_joblog *jl, const char *task, const char *trial, int round)
{
    char msg[256];
    struct ty_log_record rec = {
        .time_usec = 1700000000000000 + round,
        .severity = TY_SEV_INFO,
        .task = task,
        .trial = trial,
        .message = msg,
        .attempt = 1,
    };
    rec.len = (size_t)snprintf(msg, sizeof(msg), "%s/%s/%d", task, trial ? trial : "-", round);
    return ty_joblog_write(jl, &rec);
}

/* Whether file @name holds exactly the ROUNDS records of @task/@trial, in order. */
static bool file_holds(const char *name, const char *task, const char *trial)
{
    _cleanup_free_ char *path = xasprintf("%s/%s", tmpdir, name);
    _cleanup_free_ char *text = NULL;
    const char *p;
    size_t len = 0;

    if (ty_read_file(path, 1 << 20, &text, &len, NULL) < 0)
        return false;
    p = text;
    for (int r = 0; r < ROUNDS; r++) {
        char want[256];
        const char *nl = strchr(p, '\n');
        (void)snprintf(want, sizeof(want), " INFO %s/%s/%d", task, trial ? trial : "-", r);
        if (!nl || (size_t)(nl - p) < strlen(want) ||
            strncmp(nl - strlen(want), want, strlen(want)) != 0)
            return false;
        p = nl + 1;
    }
    return *p == '\0';
}

static size_t count_files(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    size_t n = 0;

    while (d && (de = readdir(d)))
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

int main(void)
{
    struct ty_joblog *jl = NULL;
    struct ty_error e = {0};
    struct announced a = {0};
    size_t failed = 0, wrong = 0;

    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp");
    if (ty_joblog_open(tmpdir, &jl, &e) < 0)
        BAIL_OUT("open: %s", e.msg);
    ty_joblog_on_new_file(jl, on_new_file, &a);
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < TASKS; i++) {
            char task[64], trial[16];
            (void)snprintf(task, sizeof(task), "worker-replica-%d", i);
            failed += put(jl, task, NULL, r) < 0;
            if (i < TRIALS) {
                (void)snprintf(trial, sizeof(trial), "%d", i + 1);
                failed += put(jl, "master-replica-0", trial, r) < 0;
            }
        }
    }
    is_int(failed, 0, "every record written");
    is_int(a.n, TASKS + TRIALS, "each file announced when first opened");
    is_int(a.dup, 0, "and only once");
    is_int(count_files(), TASKS + TRIALS, "one file per task and trial");
    for (int i = 0; i < TASKS; i++) {
        char task[64], name[96];
        (void)snprintf(task, sizeof(task), "worker-replica-%d", i);
        (void)snprintf(name, sizeof(name), "%s.log", task);
        wrong += !file_holds(name, task, NULL);
    }
    for (int i = 0; i < TRIALS; i++) {
        char trial[16], name[96];
        (void)snprintf(trial, sizeof(trial), "%d", i + 1);
        (void)snprintf(name, sizeof(name), "master-replica-0.%s.log", trial);
        wrong += !file_holds(name, "master-replica-0", trial);
    }
    is_int(wrong, 0, "every file holds its own records, in order");

    /* Task "a.b" and task "a" of trial "b" name the same file: one file, announced once. */
    ok(put(jl, "a.b", NULL, 0) == 0 && put(jl, "a", "b", 1) == 0, "a.b and a/b written");
    is_int(a.n, TASKS + TRIALS + 1, "a.b and a/b share one file");
    ty_joblog_close(jl);
    {
        _cleanup_free_ char *path = xasprintf("%s/a.b.log", tmpdir);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        ok(ty_read_file(path, 1 << 20, &text, &len, NULL) == 0 && strstr(text, "a.b/-/0") &&
               strstr(text, "a/b/1"),
           "both records in a.b.log");
    }
    for (size_t i = 0; i < a.n; i++)
        free(a.paths[i]);
    free(a.paths);
    (void)nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
