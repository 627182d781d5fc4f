/* SPDX-License-Identifier: Apache-2.0
 * jobs-logs.c: log streaming shared by `jobs stream-logs` and `jobs submit training
 * --stream-logs`: a job's log entries in gcloud's tab-separated form until the job has ended,
 * read from the daemon's `logs?follow=true` stream (reconnecting from the stream's last
 * position, skipping per file what was shown after it, if the stream ends early) or, with a polling
 * interval, by polling `logs` with its page token; and with --local the same lines from the files
 * of a `local train` run (jobs-local.h). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "jobs-local.h"
#include "jobs.h"
#include "json.h"
#include "logread.h"
#include "macro.h"
#include "parse.h"
#include "spec.h"
#include "strv.h"
#include "timeutil.h"

/* Entries asked for per poll; a full page is followed at once by the next. */
#define POLL_PAGE_SIZE 100
/* Waits, in a row, for a follow stream that brought nothing new (or a poll that failed)
 * before one more try and giving up: they double from RETRY_FIRST_SECS to RETRY_MAX_SECS
 * (0.5, 1, 2, 4, 8 s), so a service restarting within about 15 s is waited for. */
#define FOLLOW_RETRIES   5
#define POLL_RETRIES     5
#define RETRY_FIRST_SECS 0.5
#define RETRY_MAX_SECS   8.0

/* One output line; @attempt (NULL for the first attempt) marks the message of a later one. */
static void print_line(FILE *out,
                       const char *sev,
                       const char *ts,
                       const char *task,
                       const char *trial,
                       const char *attempt,
                       const char *msg,
                       size_t len)
{
    fprintf(out, "%s\t%s\t%s\t%s\t", sev, ts, task, trial);
    if (attempt)
        fprintf(out, "[attempt %s] ", attempt);
    fprintf(out, "%.*s\n", (int)len, msg);
}

/* The entry's attempt when it is not the first (labels.attempt, docs/service.md), else NULL. */
static const char *entry_attempt(const json_t *entry)
{
    const char *a = ty_json_str(json_object_get(entry, "labels"), "attempt");
    return a && *a && strcmp(a, "1") != 0 ? a : NULL;
}

/* ---- --format ------------------------------------------------------------------------------ */

static const char *const log_keys[] = {"severity", "timestamp", "task_name", "trial_id", "message"};

static int log_key_check(const char *const *names, size_t n, struct ty_error *err)
{
    struct ty_buf key = TY_BUF_INIT;
    int r;

    for (size_t i = 0; n == 1 && i < TY_ARRAY_SIZE(log_keys); i++)
        if (strcmp(names[0], log_keys[i]) == 0)
            return 0;
    for (size_t i = 0; i < n; i++)
        ty_buf_printf(&key, "%s%s", i ? "." : "", names[i]);
    r = ty_error_set(err,
                     EINVAL,
                     "unknown key '%s': a log entry has severity, timestamp, task_name, trial_id "
                     "and message, each a value with no keys",
                     ty_buf_str(&key));
    ty_buf_release(&key);
    return r;
}

int jobs_log_format_opt(const char *path, const char *arg, struct jobs_log_format *lf)
{
    struct ty_format *f = NULL;
    struct ty_error e = {0};

    if (ty_format_parse_keys(arg, log_key_check, &f, &e) < 0) {
        cli_error(path, "--format: %s", ty_error_msg(&e));
        return -1;
    }
    if (f->name != TY_FMT_DEFAULT && f->name != TY_FMT_JSON && f->name != TY_FMT_YAML &&
        f->name != TY_FMT_VALUE && f->name != TY_FMT_NONE) {
        cli_error(path,
                  "--format: '%s': the log verbs print json, yaml, value(...) or none, an entry "
                  "at a time",
                  arg);
        ty_format_free(f);
        return -1;
    }
    ty_format_free(lf->f);
    lf->f = f->name == TY_FMT_DEFAULT ? (ty_format_free(f), NULL) : f;
    return 0;
}

void jobs_log_format_end(struct jobs_log_format *lf, FILE *out)
{
    if (lf && lf->f && lf->f->name == TY_FMT_JSON && out)
        fputs(lf->printed ? "\n]\n" : "[]\n", out);
    if (lf) {
        ty_format_free(lf->f);
        lf->f = NULL;
    }
}

/* One line of an entry as gcloud's log resource, printed in @lf. */
static void print_formatted(
    FILE *out, struct jobs_log_format *lf, const json_t *entry, const char *msg, size_t len)
{
    _cleanup_json_ json_t *r = json_object();
    _cleanup_json_ json_t *one = json_array();
    json_t *trial = json_object_get(entry, "trialId");

    json_object_set_new(r, "severity", json_string(ty_json_str(entry, "severity")));
    json_object_set_new(r, "timestamp", json_string(ty_json_str(entry, "timestamp")));
    json_object_set_new(r, "task_name", json_string(ty_json_str(entry, "taskName")));
    json_object_set(r, "trial_id", trial ? trial : json_null());
    json_object_set_new(r, "message", json_stringn(msg, len));
    json_array_append(one, r);
    if (lf->f->name == TY_FMT_JSON) { /* a list, written as it grows */
        char *text = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&text, &size);
        if (!mem)
            return;
        ty_format_print(lf->f, one, true, mem);
        (void)fclose(mem);
        fputs(lf->printed ? ",\n" : "[\n", out);
        for (const char *l = text; l && *l;) { /* indented as the list's item, no last \n */
            size_t n = strcspn(l, "\n");
            fprintf(out, "  %.*s", (int)n, l);
            l += n + (l[n] ? 1 : 0);
            if (*l)
                fputc('\n', out);
        }
        free(text);
    } else {
        ty_format_print(lf->f, one, false, out);
    }
    lf->printed++;
}

/* Print one log entry: SEVERITY\tYYYY-mm-dd HH:MM:SS +zzzz\tTASK\tTRIAL\tMESSAGE, one line
 * per line of the message unless @allow_multiline; from the job's second attempt on, the
 * message starts with "[attempt N] " (the first attempt's lines are as they always were). */
static void print_log_entry(const struct jobs_logs_opts *o, const json_t *entry)
{
    FILE *out = o->out;
    bool allow_multiline = o->allow_multiline;
    const char *sev = ty_json_str(entry, "severity");
    const char *task = ty_json_str(entry, "taskName");
    const char *trial = ty_json_str(entry, "trialId");
    const char *msg = ty_json_str(entry, "message");
    const char *attempt = entry_attempt(entry);
    json_t *tj = json_object_get(entry, "trialId");
    char ts[64], trial_buf[32];
    const char *p, *end;

    if (json_is_integer(tj)) {
        snprintf(trial_buf, sizeof(trial_buf), "%lld", (long long)json_integer_value(tj));
        trial = trial_buf;
    }
    sev = sev ? sev : "";
    task = task ? task : "";
    trial = trial ? trial : "";
    msg = msg ? msg : "";
    jobs_local_time(ty_json_str(entry, "timestamp"), JOBS_TIME_LOG, ts, sizeof(ts));
    if (allow_multiline || !strpbrk(msg, "\r\n")) {
        size_t len = strlen(msg);
        while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
            len--; /* the line's own end */
        if (o->format && o->format->f)
            print_formatted(out, o->format, entry, msg, len);
        else
            print_line(out, sev, ts, task, trial, attempt, msg, len);
        return;
    }
    /* as Python's splitlines: \n, \r\n and \r end lines; no empty line after the last one */
    p = msg;
    end = msg + strlen(msg);
    while (p < end) {
        size_t n = strcspn(p, "\r\n");
        if (o->format && o->format->f)
            print_formatted(out, o->format, entry, p, n);
        else
            print_line(out, sev, ts, task, trial, attempt, p, n);
        p += n;
        if (*p == '\r' && p[1] == '\n')
            p += 2;
        else if (*p)
            p++;
    }
}

/* ---- follow=true ---------------------------------------------------------------------------- */

/* What was shown of one log file (a task, and a trial in tuning) after the stream's last
 * position: the stream gives each file's entries in the file's order, but interleaves files
 * only as far as it knew their times when it read them (docs/service.md), so a reconnection
 * from a position skips, per file, the entries shown after it: never by time. */
struct file_count {
    char *key;    /* taskName '\t' trialId */
    size_t ahead; /* entries of the file shown after the position */
    size_t seen;  /* entries of the file this connection gave after the position */
};

struct follow {
    const struct jobs_logs_opts *o;
    char *token;              /* the stream's last position (NULL: the start of the log) */
    struct file_count *files; /* sorted by key */
    size_t nfiles;
    size_t shown; /* entries shown by the current connection */
};

/* The count of the file of @entry, added when new. */
static struct file_count *file_of(struct follow *f, const json_t *entry)
{
    const char *task = ty_json_str(entry, "taskName");
    json_t *tj = json_object_get(entry, "trialId");
    _cleanup_free_ char *key = NULL;
    size_t lo = 0, hi = f->nfiles;

    if (json_is_integer(tj))
        key = xasprintf("%s\t%lld", task ? task : "", (long long)json_integer_value(tj));
    else
        key =
            xasprintf("%s\t%s", task ? task : "", json_is_string(tj) ? json_string_value(tj) : "");
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->files[mid].key, key);
        if (c == 0)
            return &f->files[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    f->files = xreallocarray(f->files, f->nfiles + 1, sizeof(*f->files));
    memmove(f->files + lo + 1, f->files + lo, (f->nfiles - lo) * sizeof(*f->files));
    f->files[lo] = (struct file_count){TAKE_PTR(key), 0, 0};
    f->nfiles++;
    return &f->files[lo];
}

/* The stream's position after every entry it sent before it: what was shown after it is
 * what was shown of each file beyond what this connection gave before it. */
static void on_position(struct follow *f, const char *token)
{
    ty_replace_str(&f->token, token);
    for (size_t i = 0; i < f->nfiles; i++) {
        f->files[i].ahead -= f->files[i].seen;
        f->files[i].seen = 0;
    }
}

static int on_follow_line(void *ctx, const char *line, size_t len, struct ty_error *err)
{
    struct follow *f = ctx;
    _cleanup_json_ json_t *j = NULL;
    struct file_count *fc;
    const char *pos;
    json_t *e;

    if (strspn(line, " \t\r") >= len)
        return 0;
    j = json_loadb(line, len, 0, NULL);
    if (!json_is_object(j)) {
        cli_warning("ignoring a log stream line that is not a JSON object");
        return 0;
    }
    e = json_object_get(j, "error");
    if (json_is_object(e)) {
        const char *status = ty_json_str(e, "status");
        const char *msg = ty_json_str(e, "message");
        return ty_error_set(
            err, EIO, "%s: %s", status ? status : "log stream error", msg ? msg : "(no message)");
    }
    pos = ty_json_str(j, "nextPageToken");
    if (pos && !json_object_get(j, "timestamp")) {
        on_position(f, pos);
        return 0;
    }
    fc = file_of(f, j);
    if (++fc->seen <= fc->ahead)
        return 0; /* shown before a reconnection */
    fc->ahead = fc->seen;
    print_log_entry(f->o, j);
    fflush(f->o->out);
    f->shown++;
    return 0;
}

/* 1 when the job has an endTime, 0 when not, -errno. */
static int job_ended(struct api_client *c, const char *job_id, struct ty_error *err)
{
    _cleanup_free_ char *path = api_jobs_path(c, job_id, NULL);
    _cleanup_json_ json_t *job = NULL;
    int r = api_call(c, "GET", path, NULL, &job, err);
    if (r < 0)
        return r;
    return ty_json_str(job, "endTime") != NULL;
}

/* Sleep @secs, less when api_interrupted is set (a signal cuts the sleep short). */
static void sleep_secs(double secs)
{
    struct timespec ts = {.tv_sec = (time_t)secs,
                          .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9)};
    while (!api_interrupted && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Is @r (an api_call or api_stream_lines result) the service being away for a moment: not
 * listening (restarting), the connection broken, no answer in time, or 503 UNAVAILABLE
 * ("shutting down")? Such a failure is retried once the service has answered. */
static bool transient(int r)
{
    return r == -ECONNREFUSED || r == -ECONNRESET || r == -ETIMEDOUT || r == -EAGAIN;
}

/* The wait before the @n-th retry in a row (n >= 1). */
static double retry_wait(int n)
{
    double w = RETRY_FIRST_SECS;
    while (--n > 0 && w < RETRY_MAX_SECS)
        w *= 2;
    return w < RETRY_MAX_SECS ? w : RETRY_MAX_SECS;
}

static int follow_logs(struct api_client *c,
                       const char *job_id,
                       const struct jobs_logs_opts *o,
                       struct ty_error *err)
{
    struct follow f = {.o = o};
    bool answered = false; /* the service has answered once: a failure now may be a restart */
    bool positions = true; /* asked for; a service of the first releases knows no such thing */
    int fruitless = 0, r;

    for (;;) {
        _cleanup_free_ char *base = api_jobs_path(c, job_id, "/logs");
        struct ty_buf q = TY_BUF_INIT;
        int ended;

        ty_buf_puts(&q, base);
        api_query_add(&q, "follow", "true");
        if (positions)
            api_query_add(&q, "positions", "true");
        api_query_add(&q, "taskName", o->task_name);
        api_query_add(&q, "pageToken", f.token);
        for (size_t i = 0; i < f.nfiles; i++)
            f.files[i].seen = 0;
        f.shown = 0;
        r = api_stream_lines(c, ty_buf_str(&q), on_follow_line, &f, err);
        ty_buf_release(&q);
        if (r == -EINVAL && positions && strstr(ty_error_msg(err), "\"positions\"")) {
            /* without positions the counts shown per file run from the start of the log,
             * which a reconnection (from the start) skips: nothing lost or repeated */
            positions = false;
            ty_error_clear(err);
            continue;
        }
        if (r == 0 || r == -ECONNRESET)
            answered = true;
        if (r < 0 && r != -ECONNRESET && !(answered && transient(r)))
            break;
        /* The stream ended (or broke off, or the service is away): done if the job has ended
         * and the stream was complete; else pick up where it stopped. */
        ended = r == 0 ? job_ended(c, job_id, err) : 0;
        if (ended < 0 && !transient(ended)) {
            r = ended;
            break;
        }
        if (ended > 0)
            break;
        fruitless = f.shown > 0 ? 0 : fruitless + 1;
        if (fruitless > FOLLOW_RETRIES) { /* after waits of 0.5, 1, 2, 4 and 8 s */
            if (r == 0 && ended == 0)
                r = ty_error_set(err,
                                 EPROTO,
                                 "the log stream of job %s keeps ending before the job does",
                                 job_id);
            else if (r == 0)
                r = ended;
            break;
        }
        sleep_secs(fruitless ? retry_wait(fruitless) : 0.1);
    }
    for (size_t i = 0; i < f.nfiles; i++)
        free(f.files[i].key);
    free(f.files);
    free(f.token);
    return r < 0 ? r : 0;
}

/* ---- polling -------------------------------------------------------------------------------- */

static int poll_logs(struct api_client *c,
                     const char *job_id,
                     const struct jobs_logs_opts *o,
                     struct ty_error *err)
{
    _cleanup_free_ char *base = api_jobs_path(c, job_id, "/logs");
    _cleanup_free_ char *token = NULL;
    bool answered = false;  /* the service has answered once: a failure now may be a restart */
    bool last_poll = false; /* the job had ended: this poll reads what came before its end */
    int failed = 0;         /* polls in a row that failed */
    char size[16];

    snprintf(size, sizeof(size), "%d", POLL_PAGE_SIZE);
    for (;;) {
        _cleanup_json_ json_t *page = NULL;
        struct ty_buf q = TY_BUF_INIT;
        json_t *entries, *e;
        const char *next;
        size_t n, i;
        int r;

        ty_buf_puts(&q, base);
        api_query_add(&q, "taskName", o->task_name);
        api_query_add(&q, "pageSize", size);
        api_query_add(&q, "pageToken", token);
        r = api_call(c, "GET", ty_buf_str(&q), NULL, &page, err);
        ty_buf_release(&q);
        if (r < 0 && answered && transient(r) && ++failed <= POLL_RETRIES) {
            sleep_secs(retry_wait(failed)); /* the same page again */
            continue;
        }
        if (r < 0)
            return r;
        answered = true;
        failed = 0;
        entries = json_object_get(page, "entries");
        n = json_array_size(entries);
        json_array_foreach(entries, i, e)
        {
            print_log_entry(o, e);
        }
        fflush(o->out);
        /* logComplete: the job had ended and this page held its last entries (no token: a
         * service that gives none, which only the first releases' jobs.list did, says so too) */
        next = ty_json_str(page, "nextPageToken");
        if (json_is_true(json_object_get(page, "logComplete")) || !next || !*next)
            return 0;
        ty_replace_str(&token, next);
        if (n >= POLL_PAGE_SIZE)
            continue; /* a full page: the next at once */
        if (n > 0) {
            /* A page also ends at about 1 MiB (docs/service.md): once the job has ended, a
             * token means that more is there now, so it is read at once too. */
            r = job_ended(c, job_id, err);
            if (r < 0 && !transient(r))
                return r;
            if (r > 0)
                continue; /* (a failure: the next poll tells) */
        } else {
            /* A service of the first releases says no logComplete: an empty page of a job
             * that has ended, then one more poll (what it wrote before its end), is the end */
            if (last_poll)
                return 0;
            r = job_ended(c, job_id, err);
            if (r < 0 && !transient(r))
                return r;
            if (r > 0) {
                last_poll = true;
                continue;
            }
        }
        sleep_secs(o->poll_secs);
    }
}

int jobs_stream_logs(struct api_client *c,
                     const char *job_id,
                     const struct jobs_logs_opts *o,
                     struct ty_error *err)
{
    return o->poll_secs > 0 ? poll_logs(c, job_id, o, err) : follow_logs(c, job_id, o, err);
}

/* ---- local runs (--local) ------------------------------------------------------------------- */

static int compare_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names (task[.trial]) of the log files in @logdir, sorted: a run's files as they are now
 * (a tuning job's trials add files as they start). */
static char **local_log_keys(const char *logdir)
{
    char **keys = xcalloc(1, sizeof(char *));
    struct dirent *de;
    DIR *d = opendir(logdir);

    while (d && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] != '.' && len > 4 && strcmp(de->d_name + len - 4, ".log") == 0)
            ty_strv_push_take(&keys, xstrndup(de->d_name, len - 4));
    }
    if (d)
        closedir(d);
    qsort(keys, ty_strv_len(keys), sizeof(char *), compare_str);
    return keys;
}

/* Print everything after @cur in the files of @logdir. Returns 0 or -errno with err. */
static int local_read_all(const char *logdir,
                          struct ty_log_cursor *cur,
                          const struct jobs_logs_opts *o,
                          struct ty_error *err)
{
    _cleanup_strv_free_ char **keys = local_log_keys(logdir);
    size_t n = ty_strv_len(keys);
    struct ty_log_source *src = xcalloc(n ? n : 1, sizeof(*src));
    char **paths = xcalloc(n + 1, sizeof(char *));
    struct ty_log_query q = {.task_name = o->task_name, .max_entries = POLL_PAGE_SIZE};
    bool more = true;
    int r = 0;

    for (size_t i = 0; i < n; i++) {
        char *dot = strchr(keys[i], '.');
        paths[i] = xasprintf("%s/%s.log", logdir, keys[i]);
        if (dot)
            *dot = '\0';
        src[i] = (struct ty_log_source){keys[i], dot ? dot + 1 : NULL, paths[i]};
    }
    while (more && r >= 0) {
        struct ty_log_entry *e = NULL;
        size_t ne = 0;
        r = ty_log_read(src, n, &q, cur, &e, &ne, &more, err);
        for (size_t i = 0; r >= 0 && i < ne; i++) {
            _cleanup_json_ json_t *j = ty_log_entry_json(&e[i]);
            print_log_entry(o, j);
        }
        ty_log_entries_free(e, ne);
        fflush(o->out);
    }
    ty_strv_free(paths);
    free(src);
    return r;
}

/* A --task-name the run cannot have is an error listing its tasks (as trainyardd answers for
 * a service job), never an empty wait. Returns 0 or -errno with err. */
static int
local_check_task(const char *state, const char *job_id, const char *task, struct ty_error *err)
{
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *tasks = NULL;
    int r = jobs_local_read(state, job_id, &doc, err);

    if (r < 0)
        return r;
    tasks = ty_job_task_mismatch(job_id, json_object_get(doc, "trainingInput"), task);
    if (!tasks)
        return 0;
    return ty_error_set(
        err, EINVAL, "--task-name: run '%s' has no task '%s' (its tasks: %s)", job_id, task, tasks);
}

int jobs_local_stream_logs(const struct jobs_local *l,
                           const char *job_id,
                           const struct jobs_logs_opts *o,
                           struct ty_error *err)
{
    _cleanup_free_ char *state = jobs_local_state(l, err);
    _cleanup_free_ char *logdir = NULL;
    struct ty_log_cursor *cur = NULL;
    int r;

    if (!state)
        return -ENOENT;
    logdir = xasprintf("%s/jobs/local/%s/logs", state, job_id);
    r = ty_log_cursor_parse(NULL, &cur, err);
    if (r >= 0 && o->task_name)
        r = local_check_task(state, job_id, o->task_name, err);
    while (r >= 0) {
        _cleanup_json_ json_t *job = NULL;
        /* Whether the run had ended before this read: then the read has everything. */
        r = jobs_local_read(state, job_id, &job, err);
        if (r < 0)
            break;
        bool ended = ty_json_str(job, "endTime") != NULL;
        r = local_read_all(logdir, cur, o, err);
        if (r < 0 || ended)
            break;
        sleep_secs(o->poll_secs > 0 ? o->poll_secs : 0.5);
    }
    ty_log_cursor_free(cur);
    return r < 0 ? r : 0;
}
