/* SPDX-License-Identifier: Apache-2.0
 * api-logs.c: GET /v1/projects/{project}/jobs/{job}/logs, trainyard's log endpoint (there
 * is no ml v1 method for logs: AI Platform sent them to Cloud Logging). Entries
 * {timestamp, severity, taskName, trialId, labels.attempt (from the job's second attempt on),
 * message}, oldest first, narrowed by taskName and since, in pages; every page has a
 * nextPageToken (a client polls with it for newer entries), and the page that holds an ended
 * job's last entries also says "logComplete": true (a page ends at about 1 MiB too, so a
 * short page is no end; clients of the first releases, which know no logComplete, read one
 * more, empty page and look at the job).
 * With follow=true the answer is a stream of one entry per line (application/x-ndjson),
 * each file's entries in order and the files merged by time as far as each read knew them
 * (files read to their ends at different instants: a later read may bring an entry older
 * than one sent); with positions=true also {"nextPageToken": ...} lines giving the position
 * after every entry before them (asked for: a client of the first releases would show them
 * as entries); it ends when the job has ended and every entry was sent. Between reads of the
 * files it waits with its connection suspended (http.c), holding no thread. Also the service's own
 * lines in a job's log (tyd_job_log), for what trainyardd does to a job no supervisor has. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "daemon.h"
#include "json.h"
#include "logread.h"
#include "macro.h"
#include "parse.h"
#include "spec.h"
#include "statedir.h"
#include "timeutil.h"

/* Entries in a page: as many as a terminal shows at once by default; at most 1000, which
 * keeps a page's JSON around a few hundred KiB of ordinary lines; and at most about
 * PAGE_BYTES of JSON as sent (messages counted escaped), for pages of long lines (1000 lines
 * of 64 KiB of control bytes were 157 MB of JSON, and some 360 MB of the daemon's memory per
 * request; counting the raw bytes, 16 such lines still made a page of 6.3 MB). The follow
 * stream reads a page only once the last is sent, so it holds no more than that either. */
#define PAGE_DEFAULT 100
#define PAGE_MAX     1000
#define PAGE_BYTES   (1024 * 1024)
/* An idle followed stream sends an empty line this often, so that neither the connection
 * timeout (10 min, http.c) nor a proxy's idle timeout (often 60 s) closes it. */
#define HEARTBEAT_USEC (30 * INT64_C(1000000))
/* Bytes libmicrohttpd asks a stream for at once. */
#define STREAM_BLOCK (16 * 1024)
/* A followed stream sends its position ({"nextPageToken": ...}) after the entries of a read
 * that caught up with the files, and while it has more to send at least every second and
 * every MiB, so that a client that reconnects from it has little to skip; never a token
 * longer than POSITION_MAX_CHARS (a job of thousands of files: its clients skip more
 * instead; the CLI reads lines of up to ~390 KiB). */
#define POSITION_EVERY_USEC  (1 * INT64_C(1000000))
#define POSITION_EVERY_BYTES (1024 * 1024)
#define POSITION_MAX_CHARS   (256 * 1024)

/* Read one page of job @seq's logs after @cur. */
static int read_page(struct tyd *d,
                     int64_t seq,
                     const struct ty_log_query *q,
                     struct ty_log_cursor *cur,
                     struct ty_log_entry **ents,
                     size_t *n,
                     bool *more,
                     struct ty_error *err)
{
    struct ty_log_file *files = NULL;
    struct ty_log_source *src;
    size_t nf = 0;
    int r;

    r = ty_store_log_files(d->store, seq, &files, &nf, err);
    if (r < 0)
        return r;
    src = xcalloc(nf ? nf : 1, sizeof(*src));
    for (size_t i = 0; i < nf; i++)
        src[i] = (struct ty_log_source){files[i].task, files[i].trial, files[i].path};
    r = ty_log_read(src, nf, q, cur, ents, n, more, err);
    free(src);
    ty_log_files_free(files, nf);
    return r;
}

/* --- follow=true --------------------------------------------------------------------- */

struct follow {
    struct tyd *d;
    struct MHD_Connection *conn;
    int64_t seq;
    char *task;
    struct ty_log_query q;
    struct ty_log_cursor *cur;
    struct ty_buf out;
    bool finished;
    int64_t last_sent;
    int64_t last_position; /* when the last position line was made */
    size_t since_position; /* bytes of entries made since */
    bool positions;        /* positions=true: position lines asked for */
    /* with tokens: the request's Authorization and project, checked again after a reload
     * (a token removed from the file cuts its streams) */
    char *auth_header, *project;
    uint64_t auth_gen;
};

static void follow_free(void *cls)
{
    struct follow *f = cls;
    ty_log_cursor_free(f->cur);
    ty_buf_release(&f->out);
    free(f->task);
    if (f->auth_header)
        explicit_bzero(f->auth_header, strlen(f->auth_header));
    free(f->auth_header);
    free(f->project);
    free(f);
}

/* Append what is new to f->out; returns how many entries, or -1 when the stream must end
 * (job gone, store error). Sets f->finished once the job ended and everything was read. */
static int follow_fill(struct follow *f)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    struct ty_log_entry *ents = NULL;
    struct ty_error e = {0};
    size_t n = 0;
    bool more = false, ended;

    /* Look at the state before reading: lines written before the end are then read. */
    if (ty_store_get_job_by_seq(f->d->store, f->seq, &row, &e) < 0)
        return -1;
    ended = ty_job_state_is_final(row->state);
    if (read_page(f->d, f->seq, &f->q, f->cur, &ents, &n, &more, &e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *j = ty_log_entry_json(&ents[i]);
        char *text = ty_json_compact(j);
        ty_buf_puts(&f->out, text);
        ty_buf_putc(&f->out, '\n');
        f->since_position += strlen(text) + 1;
        free(text);
        json_decref(j);
    }
    ty_log_entries_free(ents, n);
    if (f->positions && n > 0 &&
        (!more || f->since_position >= POSITION_EVERY_BYTES ||
         ty_mono_usec() - f->last_position >= POSITION_EVERY_USEC)) {
        _cleanup_free_ char *token = ty_log_cursor_format(f->cur);
        if (strlen(token) <= POSITION_MAX_CHARS) /* URL-safe base64: nothing to escape */
            ty_buf_printf(&f->out, "{\"nextPageToken\":\"%s\"}\n", token);
        f->last_position = ty_mono_usec();
        f->since_position = 0;
    }
    if (ended && n == 0 && !more)
        f->finished = true;
    return (int)n;
}

/* MHD asks for more of the stream: give what is new, or wait (suspended) for news. */
static ssize_t follow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct follow *f = cls;

    for (;;) {
        if (f->out.len) {
            size_t n = f->out.len < max ? f->out.len : max;
            memcpy(buf, f->out.data, n);
            ty_buf_consume(&f->out, n);
            f->last_sent = ty_mono_usec();
            return (ssize_t)n;
        }
        if (f->finished)
            return MHD_CONTENT_READER_END_OF_STREAM;
        /* The service stops while the job may go on: the stream breaks off (no end of the
         * chunked body), never ends as a complete log does, so a client reconnects. */
        if (atomic_load(&f->d->stopping))
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (f->d->auth && tyd_auth_generation(f->d->auth) != f->auth_gen) {
            /* the tokens were reloaded: a stream whose token no longer grants its project is
             * cut (an error, not the end of the job's log) */
            f->auth_gen = tyd_auth_generation(f->d->auth);
            if (tyd_auth_check(f->d->auth, f->auth_header, f->project) != TYD_AUTH_OK)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (follow_fill(f) < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (f->out.len || f->finished)
            continue;
        if (ty_mono_usec() - f->last_sent > HEARTBEAT_USEC) {
            /* An empty line keeps idle connections (and proxies) from timing out. */
            ty_buf_putc(&f->out, '\n');
            continue;
        }
        return tyd_stream_wait(f->d, f->conn) ? 0 : MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

/* Longest taskName accepted: "evaluator-replica-" and an index with room to spare. */
#define TASK_NAME_MAX 64

/* Can @t be a task's name ("master-replica-0", "service"): 1-64 of a-z, 0-9 and '-'? */
static bool valid_task_name(const char *t)
{
    size_t n = strlen(t);

    if (n == 0 || n > TASK_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') || t[i] == '-'))
            return false;
    return true;
}

/* Whether the boolean query parameter @name of @rq is true: *@ret (false when absent). Returns
 * 0, or -1 with a 400 in @rep. */
static int
query_bool(const struct tyd_request *rq, const char *name, bool *ret, struct tyd_reply *rep)
{
    const char *v = tyd_query(rq, name);

    *ret = false;
    if (!v || !*v || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        return 0;
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
        *ret = true;
        return 0;
    }
    tyd_error(rep, 400, NULL, "%s: expected true or false (got '%.20s')", name, v);
    return -1;
}

/* Read the query of a logs request into @q, *follow and *positions. Returns 0, or -1 with a
 * 400 in @rep. */
static int parse_query(const struct tyd_request *rq,
                       struct ty_log_query *q,
                       bool *follow,
                       bool *positions,
                       struct tyd_reply *rep)
{
    static const char *const own[] = {
        "taskName", "since", "pageToken", "pageSize", "follow", "positions", NULL};
    const char *since = tyd_query(rq, "since");
    const char *ps = tyd_query(rq, "pageSize");
    const char *task = tyd_query(rq, "taskName");
    struct ty_error e = {0};
    int64_t v;

    *q = (struct ty_log_query){.max_entries = PAGE_DEFAULT, .max_bytes = PAGE_BYTES};
    if (tyd_check_params(rq, own, rep) < 0 || query_bool(rq, "follow", follow, rep) < 0 ||
        query_bool(rq, "positions", positions, rep) < 0)
        return -1;
    if (since && *since && ty_rfc3339_parse(since, &q->since_usec, &e) < 0) {
        tyd_error(rep,
                  400,
                  NULL,
                  "since: expected an RFC 3339 time such as 2026-11-30T09:00:00Z (got '%.60s')",
                  since);
        return -1;
    }
    if (ps && *ps) {
        /* As Google's list methods: any size is taken, a large one lowered to the maximum. */
        if (ty_parse_int64(ps, 0, INT32_MAX, &v) < 0) {
            tyd_error(rep,
                      400,
                      NULL,
                      "pageSize: expected a number from 0 to %d (0 is the default, %d; more "
                      "than %d is read as %d) (got '%.40s')",
                      INT32_MAX,
                      PAGE_DEFAULT,
                      PAGE_MAX,
                      PAGE_MAX,
                      ps);
            return -1;
        }
        q->max_entries = v == 0 ? PAGE_DEFAULT : v > PAGE_MAX ? PAGE_MAX : (size_t)v;
    }
    if (task && *task && !valid_task_name(task)) {
        tyd_error(rep,
                  400,
                  NULL,
                  "taskName: expected a task name such as master-replica-0, worker-replica-1 or "
                  "service (lowercase letters, digits and '-', at most %d characters)",
                  TASK_NAME_MAX);
        return -1;
    }
    q->task_name = task && *task ? task : NULL;
    return 0;
}

/* Answer with a stream of job @seq's entries from @cur (taken) on. */
static void start_follow(const struct tyd_request *rq,
                         int64_t seq,
                         const struct ty_log_query *q,
                         bool positions,
                         struct ty_log_cursor *cur,
                         struct tyd_reply *rep)
{
    struct follow *f = xcalloc(1, sizeof(*f));

    f->d = rq->d;
    f->conn = rq->conn;
    f->seq = seq;
    if (rq->d->auth) {
        const char *h = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Authorization");
        f->auth_gen = tyd_auth_generation(rq->d->auth);
        f->auth_header = h ? xstrdup(h) : NULL;
        f->project = xstrdup(rq->project);
    }
    f->task = q->task_name ? xstrdup(q->task_name) : NULL;
    f->q = *q;
    f->q.task_name = f->task;
    f->cur = cur;
    f->positions = positions;
    f->last_sent = f->last_position = ty_mono_usec();
    rep->stream = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, STREAM_BLOCK, follow_read, f, follow_free);
    if (!rep->stream) {
        follow_free(f);
        tyd_error(rep, 500, NULL, "cannot create the log stream");
        return;
    }
    (void)MHD_add_response_header(rep->stream, "Content-Type", "application/x-ndjson");
    rep->status = 200;
}

/* Answer with one page of job @seq's entries from @cur (taken) on, the token after it, and
 * "logComplete": true when the job had @ended before the read and the page holds the last of
 * its entries. */
static void answer_page(const struct tyd_request *rq,
                        int64_t seq,
                        bool ended,
                        const struct ty_log_query *q,
                        struct ty_log_cursor *cur,
                        struct tyd_reply *rep)
{
    struct ty_log_entry *ents = NULL;
    struct ty_error e = {0};
    _cleanup_free_ char *next = NULL;
    bool more = false;
    size_t n = 0;
    json_t *arr;
    int r;

    r = read_page(rq->d, seq, q, cur, &ents, &n, &more, &e);
    if (r < 0) {
        ty_log_cursor_free(cur);
        if (r == -EINVAL) /* a file name too long for a token */
            tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        else
            tyd_error(rep, 500, NULL, "cannot read the job's logs: %s", ty_error_msg(&e));
        return;
    }
    arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, ty_log_entry_json(&ents[i]));
    rep->status = 200;
    rep->json = json_object();
    json_object_set_new(rep->json, "entries", arr);
    next = ty_log_cursor_format(cur);
    json_object_set_new(rep->json, "nextPageToken", json_string(next));
    if (!more && ended)
        json_object_set_new(rep->json, "logComplete", json_true());
    ty_log_entries_free(ents, n);
    ty_log_cursor_free(cur);
}

/* A taskName the job cannot have gets a 400 listing its tasks, never an empty stream (a
 * typo such as "master" for master-replica-0 would wait silently). Returns 0 or -1. */
static int check_task(const struct ty_job_row *row, const char *task, struct tyd_reply *rep)
{
    _cleanup_free_ char *tasks = ty_job_task_mismatch(row->job_id, row->training_input, task);

    if (!tasks)
        return 0;
    tyd_error(rep,
              400,
              NULL,
              "taskName: job '%s' has no task '%.64s' (its tasks: %s)",
              row->job_id,
              task,
              tasks);
    return -1;
}

void tyd_jobs_logs(const struct tyd_request *rq, struct tyd_reply *rep)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    struct ty_log_query q;
    struct ty_log_cursor *cur = NULL;
    struct ty_error e = {0};
    bool follow, positions;
    int r;

    if (parse_query(rq, &q, &follow, &positions, rep) < 0)
        return;
    r = ty_store_get_job(rq->d->store, rq->project, rq->job, &row, &e);
    if (r == -ENOENT) {
        tyd_error(rep, 404, NULL, "Job '%s' not found in project '%s'.", rq->job, rq->project);
        return;
    }
    if (r < 0) {
        tyd_error(rep, 500, NULL, "the job store failed: %s", ty_error_msg(&e));
        return;
    }
    if (q.task_name && check_task(row, q.task_name, rep) < 0)
        return;
    if (ty_log_cursor_parse(tyd_query(rq, "pageToken"), &cur, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    if (follow)
        start_follow(rq, row->seq, &q, positions, cur, rep);
    else
        answer_page(rq, row->seq, ty_job_state_is_final(row->state), &q, cur, rep);
}

/* --- the service's lines in a job's log
 * ---------------------------------------------------------------------- */

static void index_log_file(void *ctx, const char *task, const char *trial, const char *path)
{
    const struct ty_job_row *row = ((void **)ctx)[1];
    struct tyd *d = ((void **)ctx)[0];
    struct ty_error e = {0};

    if (ty_store_add_log_file(d->store, row->seq, task, trial, path, &e) < 0)
        tyd_log(
            "job %s/%s: cannot index %s: %s", row->project, row->job_id, path, ty_error_msg(&e));
}

void tyd_job_log_lines(struct tyd *d,
                       const struct ty_job_row *row,
                       int64_t attempt,
                       enum ty_severity sev,
                       const char *const *msgs,
                       const char *claimed)
{
    _cleanup_free_ char *dir = NULL;
    _cleanup_free_ char *logs = NULL;
    struct ty_joblog *jl = NULL;
    struct ty_error e = {0};
    void *ctx[2] = {d, (void *)row};
    bool indexed = claimed != NULL;

    if (claimed)
        dir = xstrdup(claimed);
    else if (ty_statedir_reopen_job(d->state_dir, row->project, row->job_id, &dir, &e) < 0) {
        tyd_log(
            "job %s/%s: cannot log '%s': %s", row->project, row->job_id, msgs[0], ty_error_msg(&e));
        return;
    }
    logs = xasprintf("%s/logs", dir);
    if (ty_joblog_open(logs, &jl, &e) < 0) {
        tyd_log(
            "job %s/%s: cannot log '%s': %s", row->project, row->job_id, msgs[0], ty_error_msg(&e));
        return;
    }
    if (!indexed)
        ty_joblog_on_new_file(jl, index_log_file, ctx);
    for (size_t i = 0; msgs[i]; i++) {
        struct ty_log_record rec = {
            .time_usec = ty_now_usec(),
            .severity = sev,
            .task = "service", /* its control characters escaped: one line */
            .message = msgs[i],
            .len = strlen(msgs[i]),
            .attempt = attempt > 0 && attempt <= UINT32_MAX ? (unsigned)attempt : 1,
        };
        if (ty_joblog_write(jl, &rec) < 0) {
            tyd_log("job %s/%s: cannot write its service log", row->project, row->job_id);
            break;
        }
    }
    ty_joblog_close(jl);
}

void tyd_job_log(struct tyd *d,
                 const struct ty_job_row *row,
                 int64_t attempt,
                 enum ty_severity sev,
                 const char *fmt,
                 ...)
{
    char msg[2048];
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tyd_job_log_lines(d, row, attempt, sev, (const char *const[]){msg, NULL}, NULL);
}
