/* SPDX-License-Identifier: Apache-2.0
 * logs.h: a job's log records and their files. Every line a replica writes becomes a record
 * {time, severity, task, trial, attempt, message} (stdout INFO, stderr ERROR; the service's
 * own messages under task "service"), appended to <dir>/<task>[.<trial>].log as
 *     2026-11-30T09:00:00.123456Z INFO message text
 * for the job's first attempt, and with the attempt after the severity from the second on:
 *     2026-11-30T09:10:00.000001Z INFO@2 message text
 * (the severity is one of a fixed set of words followed by a space, so the marker cannot be
 * taken for part of a message, and files written before attempts existed read the same), so
 * the files stay readable with less(1) and parseable by the API's log endpoint. */
#ifndef TY_LOGS_H
#define TY_LOGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Largest attempt number a line carries (a record of a later attempt is written as this one;
 * a job has a handful of attempts). */
#define TY_LOG_MAX_ATTEMPT 999999

enum ty_severity { TY_SEV_DEFAULT, TY_SEV_INFO, TY_SEV_WARNING, TY_SEV_ERROR };

struct ty_log_record {
    int64_t time_usec;
    enum ty_severity severity;
    const char *task;  /* "master-replica-0", "service" */
    const char *trial; /* NULL outside tuning trials */
    const char *message;
    size_t len;
    /* The job's attempt the record belongs to (1, 2, ...; docs/lifecycle.md, "Restarts and
     * retries"); 0 for records outside any attempt, read as 1. */
    unsigned attempt;
};

struct ty_joblog;
struct ty_buf; /* buf.h */

/* "INFO", "ERROR", ... */
const char *ty_severity_name(enum ty_severity s);

/* Append the @n bytes of a message at @p to @b with control characters (below 0x20, and DEL)
 * written as \n, \r, \t or \xHH: every one when @all, else only '\n'. Service messages
 * (task "service") are written with @all: they may quote a user's text (a command, a name),
 * which must not make a second record, with its own time and severity, nor drive a terminal.
 * A replica's line keeps its '\r', tabs and escape sequences (it holds no '\n'). */
void ty_log_append_escaped(struct ty_buf *b, const char *p, size_t n, bool all);
/* Append the line of @rec as it goes into its file (the format above; the message as
 * ty_log_append_escaped writes it, all of its control characters escaped for task "service",
 * so a record is always one line; then '\n') to @b. Exposed for the reader's tests and fuzz
 * target. */
void ty_log_format_line(struct ty_buf *b, const struct ty_log_record *rec);

/* The file of @task's records (@trial: a trial's; NULL outside tuning) in the log directory
 * @dir: "DIR/TASK.log" or "DIR/TASK.TRIAL.log". Caller frees. */
char *ty_joblog_file_path(const char *dir, const char *task, const char *trial);

/* Open (creating) the log directory @dir. Returns 0 and *ret. */
int ty_joblog_open(const char *dir, struct ty_joblog **ret, struct ty_error *err);
/* Append one record to its task's file, as one write(2). Returns 0 or -errno: the record is
 * dropped (a full filesystem, ENOSPC; a file size limit, EFBIG; ...) and counted, and nothing
 * of it stays in the file (a line cut short is undone). The next record that can be written to
 * that file is preceded there by a WARNING line, of the same attempt, saying how many were
 * lost and why, so readers see the gap where it is; once a record is written anywhere, the
 * other files get that line too, and ty_joblog_close tries once more. */
int ty_joblog_write(struct ty_joblog *jl, const struct ty_log_record *rec);
/* Records dropped since the log was opened (all files). */
uint64_t ty_joblog_lost(const struct ty_joblog *jl);
/* Have @fn called with the task, trial (NULL outside tuning) and path of each file when this
 * log first opens it (the service indexes the files in its store). */
typedef void (*ty_joblog_new_file_fn)(void *ctx,
                                      const char *task,
                                      const char *trial,
                                      const char *path);
void ty_joblog_on_new_file(struct ty_joblog *jl, ty_joblog_new_file_fn fn, void *ctx);
/* Write the lines on lost records still owed (best effort), close every file; NULL-safe. */
void ty_joblog_close(struct ty_joblog *jl);

#endif
