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
#include "timeutil.h"

struct log_file {
    char *name;
    int fd;        /* -1 while it could not be opened (tried again at the next record) */
    uint64_t lost; /* records not written since the last one that was */
    int lost_err;  /* why the last of them was not */
    bool broken;   /* a partial line could not be undone: the next write ends it first */
    struct ty_log_record last_lost; /* the last record lost (its time, attempt; not its text) */
};

struct ty_joblog {
    char *dir;
    struct log_file *files;
    size_t n, cap;
    uint64_t lost_total;
    ty_joblog_new_file_fn on_new_file;
    void *on_new_file_ctx;
};

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
    int r = ty_mkdir_p(dir, 0755, err);
    if (r < 0)
        return r;
    jl = xcalloc(1, sizeof(*jl));
    jl->dir = xstrdup(dir);
    *ret = jl;
    return 0;
}

/* The file of @task/@trial, opened (and announced) on first use; its fd is -1 when it cannot be
 * opened (*@err the errno), tried again at the next record. */
static struct log_file *
file_for(struct ty_joblog *jl, const char *task, const char *trial, int *err)
{
    char *name = trial ? xasprintf("%s.%s.log", task, trial) : xasprintf("%s.log", task);
    struct log_file *f = NULL;
    char *path;

    for (size_t i = 0; i < jl->n && !f; i++)
        if (strcmp(jl->files[i].name, name) == 0)
            f = &jl->files[i];
    if (f) {
        free(name);
        if (f->fd >= 0)
            return f;
    } else {
        if (jl->n == jl->cap) {
            jl->cap = jl->cap ? jl->cap * 2 : 8;
            jl->files = xreallocarray(jl->files, jl->cap, sizeof(*jl->files));
        }
        f = &jl->files[jl->n++];
        *f = (struct log_file){.name = name, .fd = -1};
    }
    path = xasprintf("%s/%s", jl->dir, f->name);
    f->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
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
    ty_buf_append(b, rec->message, rec->len);
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
static int append_record(struct log_file *f, const struct ty_log_record *rec)
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
    f->lost = 0;
    f->lost_err = 0;
    return 0;
}

int ty_joblog_write(struct ty_joblog *jl, const struct ty_log_record *rec)
{
    int err = 0, r;
    struct log_file *f = file_for(jl, rec->task, rec->trial, &err);

    if (f->fd < 0) { /* reported once the file opens */
        f->lost++;
        f->lost_err = err;
        f->last_lost = *rec;
        jl->lost_total++;
        return -err;
    }
    r = append_record(f, rec);
    if (r < 0) {
        f->lost++;
        f->lost_err = -r;
        f->last_lost = *rec;
        jl->lost_total++;
        return r;
    }
    /* The filesystem has room again: the other files say what they lost too. */
    for (size_t i = 0; i < jl->n; i++)
        if (jl->files[i].lost && jl->files[i].fd >= 0)
            (void)append_record(&jl->files[i], NULL);
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
            (void)append_record(&jl->files[i], NULL);
        if (jl->files[i].fd >= 0)
            close(jl->files[i].fd);
        free(jl->files[i].name);
    }
    free(jl->files);
    free(jl->dir);
    free(jl);
}
