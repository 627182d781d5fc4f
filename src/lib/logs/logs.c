/* SPDX-License-Identifier: Apache-2.0
 * logs.c: per-task log files of a job (format in logs.h). Files are opened on first use and
 * kept open for the run; each record is one write(2) so concurrent readers never see half a
 * line. A record that cannot be written (the filesystem is full) is counted and leaves nothing
 * behind; the next one written says how many were lost. */
#include "logs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "fdutil.h"
#include "macro.h"
#include "statemode.h"
#include "timeutil.h"

struct log_file {
    char *name; /* "<task>[.<trial>].log" */
    char *task; /* the record's task and trial (NULL outside trials) it was made for */
    char *trial;
    int fd;        /* -1 while it could not be opened (tried again at the next record) */
    uint64_t lost; /* records not written since the last one that was */
    int lost_err;  /* why the last of them was not */
    bool broken;   /* a partial line could not be undone: the next write ends it first */
    struct ty_log_record last_lost; /* the last record lost (its time, attempt; not its text) */
};

/* The files are found by name through an open-addressing index (slots hold a file's position
 * + 1, 0 when empty; at most half full), so a record costs the same at 1,000 replicas as at 1. */
struct ty_joblog {
    char *dir;
    struct log_file *files;
    size_t n, cap;
    size_t *slots;
    size_t n_slots;      /* a power of two, at least 2 * n */
    size_t n_lost_files; /* files whose lost count is not 0 */
    uint64_t lost_total;
    ty_joblog_new_file_fn on_new_file;
    void *on_new_file_ctx;
};

/* The name of @task's file (@trial's, when not NULL) in a log directory. */
static char *file_name(const char *task, const char *trial)
{
    return trial ? xasprintf("%s.%s.log", task, trial) : xasprintf("%s.log", task);
}

char *ty_joblog_file_path(const char *dir, const char *task, const char *trial)
{
    _cleanup_free_ char *name = file_name(task, trial);

    return xasprintf("%s/%s", dir, name);
}

void ty_joblog_on_new_file(struct ty_joblog *jl, ty_joblog_new_file_fn fn, void *ctx)
{
    jl->on_new_file = fn;
    jl->on_new_file_ctx = ctx;
}

const char *ty_severity_name(enum ty_severity s)
{
    switch (s) {
    case TY_SEV_INFO:
        return "INFO";
    case TY_SEV_WARNING:
        return "WARNING";
    case TY_SEV_ERROR:
        return "ERROR";
    default:
        return "DEFAULT";
    }
}

int ty_joblog_open(const char *dir, struct ty_joblog **ret, struct ty_error *err)
{
    struct ty_joblog *jl;
    int r = ty_mkdir_p(dir, TY_STATE_PRIVATE_DIR_MODE, err);
    if (r < 0)
        return r;
    jl = xcalloc(1, sizeof(*jl));
    jl->dir = xstrdup(dir);
    *ret = jl;
    return 0;
}

/* FNV-1a of @task, then (a separator and) @trial. */
static size_t name_hash(const char *task, const char *trial)
{
    uint64_t h = 14695981039346656037ULL;

    for (const char *p = task; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    if (trial) {
        h = (h ^ '.') * 1099511628211ULL;
        for (const char *p = trial; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    }
    return (size_t)h;
}

/* Whether @name is the file name of @task/@trial ("<task>[.<trial>].log"). */
static bool name_is(const char *name, const char *task, const char *trial)
{
    size_t tl = strlen(task);

    if (strncmp(name, task, tl) != 0)
        return false;
    name += tl;
    if (trial) {
        size_t rl = strlen(trial);
        if (*name != '.' || strncmp(name + 1, trial, rl) != 0)
            return false;
        name += 1 + rl;
    }
    return strcmp(name, ".log") == 0;
}

/* Put file @i (whose hash is @h) into the index. */
static void slot_put(struct ty_joblog *jl, size_t h, size_t i)
{
    size_t mask = jl->n_slots - 1;

    while (jl->slots[h & mask])
        h++;
    jl->slots[h & mask] = i + 1;
}

/* Make room in the index for one more file, rebuilding it twice as large when needed. */
static void index_grow(struct ty_joblog *jl)
{
    if (2 * (jl->n + 1) <= jl->n_slots)
        return;
    free(jl->slots);
    jl->n_slots = jl->n_slots ? jl->n_slots * 2 : 16;
    jl->slots = xcalloc(jl->n_slots, sizeof(*jl->slots));
    for (size_t i = 0; i < jl->n; i++)
        slot_put(jl, name_hash(jl->files[i].task, jl->files[i].trial), i);
}

/* The file of @task/@trial, opened (and announced) on first use; its fd is -1 when it cannot be
 * opened (*@err the errno), tried again at the next record. */
static struct log_file *
file_for(struct ty_joblog *jl, const char *task, const char *trial, int *err)
{
    size_t h = name_hash(task, trial);
    struct log_file *f = NULL;
    char *path;

    for (size_t k = h; jl->n_slots && jl->slots[k & (jl->n_slots - 1)] && !f; k++) {
        struct log_file *c = &jl->files[jl->slots[k & (jl->n_slots - 1)] - 1];
        if (name_is(c->name, task, trial))
            f = c;
    }
    if (f) {
        if (f->fd >= 0)
            return f;
    } else {
        index_grow(jl);
        if (jl->n == jl->cap) {
            jl->cap = jl->cap ? jl->cap * 2 : 8;
            jl->files = xreallocarray(jl->files, jl->cap, sizeof(*jl->files));
        }
        f = &jl->files[jl->n];
        *f = (struct log_file){
            .name = file_name(task, trial),
            .task = xstrdup(task),
            .trial = trial ? xstrdup(trial) : NULL,
            .fd = -1,
        };
        slot_put(jl, h, jl->n++);
    }
    path = xasprintf("%s/%s", jl->dir, f->name);
    f->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, TY_STATE_FILE_MODE);
    if (f->fd < 0) {
        *err = errno;
        free(path);
        return f;
    }
    if (jl->on_new_file)
        jl->on_new_file(jl->on_new_file_ctx, task, trial, path);
    free(path);
    return f;
}

void ty_log_append_escaped(struct ty_buf *b, const char *p, size_t n, bool all)
{
    size_t run = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c != '\n' && (!all || (c >= 0x20 && c != 0x7f)))
            continue;
        ty_buf_append(b, p + run, i - run);
        if (c == '\n')
            ty_buf_puts(b, "\\n");
        else if (c == '\r')
            ty_buf_puts(b, "\\r");
        else if (c == '\t')
            ty_buf_puts(b, "\\t");
        else
            ty_buf_printf(b, "\\x%02x", c);
        run = i + 1;
    }
    ty_buf_append(b, p + run, n - run);
}

void ty_log_format_line(struct ty_buf *b, const struct ty_log_record *rec)
{
    char ts[40];

    ty_buf_printf(
        b, "%s %s", ty_rfc3339(rec->time_usec, 6, ts, sizeof(ts)), ty_severity_name(rec->severity));
    /* Attempt 1 (and records outside any attempt) keep the format files had before. */
    if (rec->attempt >= 2)
        ty_buf_printf(
            b, "@%u", rec->attempt < TY_LOG_MAX_ATTEMPT ? rec->attempt : TY_LOG_MAX_ATTEMPT);
    ty_buf_putc(b, ' ');
    ty_log_append_escaped(b, rec->message, rec->len, strcmp(rec->task, "service") == 0);
    ty_buf_putc(b, '\n');
}

/* Append @len bytes as whole lines, or nothing: a write cut short (the filesystem filled up
 * mid-line) is undone, so the next record starts a line of its own. Returns 0 or -errno. */
static int append_lines(struct log_file *f, const char *data, size_t len)
{
    off_t end = lseek(f->fd, 0, SEEK_END);
    size_t done = 0;

    while (done < len) {
        ssize_t w = write(f->fd, data + done, len - done);
        int e = errno;
        if (w < 0 && e == EINTR)
            continue;
        if (w <= 0) {
            if (done > 0 && (end < 0 || ftruncate(f->fd, end) < 0))
                f->broken = true; /* a partial line stays: the next write ends it */
            return -(w < 0 ? e : ENOSPC);
        }
        done += (size_t)w;
    }
    return 0;
}

/* Append @rec (NULL: only the note on lost records) to @f, preceded by a WARNING line saying
 * how many records were lost before it, if any were. Returns 0 or -errno. */
static int append_record(struct ty_joblog *jl, struct log_file *f, const struct ty_log_record *rec)
{
    struct ty_buf b = TY_BUF_INIT;
    int r;

    if (f->broken)
        ty_buf_putc(&b, '\n');
    if (f->lost) {
        char msg[256];
        struct ty_log_record note = rec ? *rec : f->last_lost;
        (void)snprintf(msg,
                       sizeof(msg),
                       "%llu log line(s) of this task were lost: the log directory could not be "
                       "written (%s).",
                       (unsigned long long)f->lost,
                       strerror(f->lost_err ? f->lost_err : EIO));
        note.severity = TY_SEV_WARNING;
        note.message = msg;
        note.len = strlen(msg);
        ty_log_format_line(&b, &note);
    }
    if (rec)
        ty_log_format_line(&b, rec);
    r = append_lines(f, b.data, b.len);
    ty_buf_release(&b);
    if (r < 0)
        return r;
    f->broken = false;
    if (f->lost)
        jl->n_lost_files--;
    f->lost = 0;
    f->lost_err = 0;
    return 0;
}

/* Count @rec as lost in @f, for errno @e. */
static void lose(struct ty_joblog *jl, struct log_file *f, const struct ty_log_record *rec, int e)
{
    if (f->lost++ == 0)
        jl->n_lost_files++;
    f->lost_err = e;
    f->last_lost = *rec;
    jl->lost_total++;
}

int ty_joblog_write(struct ty_joblog *jl, const struct ty_log_record *rec)
{
    int err = 0, r;
    struct log_file *f = file_for(jl, rec->task, rec->trial, &err);

    if (f->fd < 0) { /* reported once the file opens */
        lose(jl, f, rec, err);
        return -err;
    }
    r = append_record(jl, f, rec);
    if (r < 0) {
        lose(jl, f, rec, -r);
        return r;
    }
    /* The filesystem has room again: the other files say what they lost too (only looked for
     * while some file has lost records: otherwise a record costs the same for any number of
     * files). */
    for (size_t i = 0; i < jl->n && jl->n_lost_files > 0; i++)
        if (jl->files[i].lost && jl->files[i].fd >= 0)
            (void)append_record(jl, &jl->files[i], NULL);
    return 0;
}

uint64_t ty_joblog_lost(const struct ty_joblog *jl)
{
    return jl ? jl->lost_total : 0;
}

void ty_joblog_close(struct ty_joblog *jl)
{
    if (!jl)
        return;
    for (size_t i = 0; i < jl->n; i++) {
        if (jl->files[i].lost && jl->files[i].fd >= 0) /* last chance to say it */
            (void)append_record(jl, &jl->files[i], NULL);
        if (jl->files[i].fd >= 0)
            close(jl->files[i].fd);
        free(jl->files[i].name);
        free(jl->files[i].task);
        free(jl->files[i].trial);
    }
    free(jl->slots);
    free(jl->files);
    free(jl->dir);
    free(jl);
}
