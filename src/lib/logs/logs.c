/* SPDX-License-Identifier: Apache-2.0
 * logs.c: per-task log files of a job (format in logs.h). Files are opened on first use and
 * kept open for the run; each record is one write(2) so concurrent readers never see half a
 * line. */
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
    int fd;
};

struct ty_joblog {
    char *dir;
    struct log_file *files;
    size_t n, cap;
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

static int file_for(struct ty_joblog *jl, const char *task, const char *trial)
{
    char *name = trial ? xasprintf("%s.%s.log", task, trial) : xasprintf("%s.log", task);
    char *path;
    int fd;

    for (size_t i = 0; i < jl->n; i++) {
        if (strcmp(jl->files[i].name, name) == 0) {
            free(name);
            return jl->files[i].fd;
        }
    }
    path = xasprintf("%s/%s", jl->dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(path);
        free(name);
        return ty_negerrno();
    }
    if (jl->on_new_file)
        jl->on_new_file(jl->on_new_file_ctx, task, trial, path);
    free(path);
    if (jl->n == jl->cap) {
        jl->cap = jl->cap ? jl->cap * 2 : 8;
        jl->files = xreallocarray(jl->files, jl->cap, sizeof(*jl->files));
    }
    jl->files[jl->n++] = (struct log_file){name, fd};
    return fd;
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

int ty_joblog_write(struct ty_joblog *jl, const struct ty_log_record *rec)
{
    struct ty_buf b = TY_BUF_INIT;
    int fd = file_for(jl, rec->task, rec->trial);
    int r;

    if (fd < 0)
        return fd;
    ty_log_format_line(&b, rec);
    r = ty_write_all(fd, b.data, b.len);
    ty_buf_release(&b);
    return r;
}

void ty_joblog_close(struct ty_joblog *jl)
{
    if (!jl)
        return;
    for (size_t i = 0; i < jl->n; i++) {
        close(jl->files[i].fd);
        free(jl->files[i].name);
    }
    free(jl->files);
    free(jl->dir);
    free(jl);
}
