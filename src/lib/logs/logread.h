/* SPDX-License-Identifier: Apache-2.0
 * logread.h: reading a job's log records back from its files (logs.h) for the logs API:
 * every file merged in time order, narrowed by task and time, in pages whose position is an
 * opaque token (per-file byte offsets), so a client can poll for what is new or follow a
 * running job. Only whole lines are read: a line still being written waits for the next read. */
#ifndef TY_LOGREAD_H
#define TY_LOGREAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "logs.h"

/* One file to read: the records of @task (and @trial, NULL outside tuning). */
struct ty_log_source {
    const char *task;
    const char *trial;
    const char *path;
};

/* One record read back (strings owned by the entry array; ty_log_entries_free). */
struct ty_log_entry {
    int64_t time_usec;
    enum ty_severity severity;
    char *task;
    char *trial;      /* NULL when none */
    char *message;    /* valid UTF-8: NUL bytes and invalid sequences become U+FFFD */
    unsigned attempt; /* the job's attempt the record belongs to: 1 for a line without one */
};

/* @e as the logs API returns an entry (docs/service.md): {timestamp (RFC 3339, microseconds),
 * severity, taskName, trialId (when it has one), labels.attempt (a string, from attempt 2 on,
 * as Cloud Logging's labels are), message}. Caller owns the result. */
json_t *ty_log_entry_json(const struct ty_log_entry *e);

struct ty_log_query {
    const char *task_name; /* only this task's records; NULL: all */
    int64_t since_usec;    /* only records at or after this time; 0: all */
    size_t max_entries;    /* page size (>= 1) */
    /* and at most about this many bytes of entries as they are sent, in JSON (0: no limit):
     * a message counted as escaped (a control byte as \u0001 is six bytes), plus its entry's
     * other fields; a page ends after the entry that reaches it, so it holds at least one */
    size_t max_bytes;
};

/* Where a reader stands in each file. */
struct ty_log_cursor;

/* A cursor at the start of every file (@token NULL or "") or where a token left off.
 * -EINVAL (err: "pageToken: ...") for a token this code did not make. A token holds an
 * offset per file, keyed by task[.trial]: a file it does not name is read from its start. */
int ty_log_cursor_parse(const char *token, struct ty_log_cursor **ret, struct ty_error *err);
/* The token of @c (caller frees): URL-safe base64, no padding. */
char *ty_log_cursor_format(const struct ty_log_cursor *c);
void ty_log_cursor_free(struct ty_log_cursor *c);

/* Read up to q->max_entries records after @cur from the @n files, oldest first across files
 * (equal times in the order of @src), advancing @cur past them. *more is true when records
 * matching @q were left unread. A file that does not exist yet reads as empty; a file now
 * shorter than @cur's offset in it (truncated since) is read from its start. A line that
 * does not parse (damaged, cut) is returned as a DEFAULT record with its raw text and the time
 * and attempt of the record before it in its file (0 and 1 when none). At most 4096 distinct files,
 * each task[.trial] at most 256 bytes (-E2BIG / -EINVAL beyond). Safe to call from many threads on
 * files being appended to. Returns 0, or -errno with err naming the file. */
int ty_log_read(const struct ty_log_source *src,
                size_t n,
                const struct ty_log_query *q,
                struct ty_log_cursor *cur,
                struct ty_log_entry **ret,
                size_t *nret,
                bool *more,
                struct ty_error *err);
/* Free the @n entries of @e (as ty_log_read returned them) and the array; NULL-safe. */
void ty_log_entries_free(struct ty_log_entry *e, size_t n);

/* Parse one line of a log file ("<RFC 3339 time> <SEVERITY>[@<attempt>] <message>", no
 * newline; logs.h) of @task/@trial into @e (strings copied). The attempt is a decimal number
 * from 1 to TY_LOG_MAX_ATTEMPT without leading zeros; a line without one is attempt 1.
 * Returns 0 or -EINVAL. Exposed for tests. */
int ty_log_parse_line(
    const char *line, size_t len, const char *task, const char *trial, struct ty_log_entry *e);

#endif
