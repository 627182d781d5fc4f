/* SPDX-License-Identifier: Apache-2.0
 * store-check.h: what test-store.c and test-store-concurrent.c share: a scratch directory of
 * databases, a full job row as the API layer inserts it, and fetching a row by seq or id.
 * Header-only, as tap.h is (its counters are per test program). */
#ifndef TY_TEST_STORE_CHECK_H
#define TY_TEST_STORE_CHECK_H

#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"
#include "store.h"
#include "tap.h"

static struct ty_error err;
static char tmpdir[] = "/tmp/ty-store-XXXXXX";

static inline char *db_path(const char *name)
{
    return xasprintf("%s/%s.db", tmpdir, name);
}

static inline struct ty_store *open_db(const char *name)
{
    _cleanup_free_ char *path = db_path(name);
    struct ty_store *s = NULL;
    if (ty_store_open(path, &s, &err) < 0) {
        diag("open %s: %s", path, err.msg);
        abort();
    }
    return s;
}

static inline json_t *js(const char *text)
{
    json_t *j = json_loads(text, JSON_ALLOW_NUL, NULL);
    if (!j)
        abort();
    return j;
}

/* A row as the API layer would insert it; caller frees. */
static inline struct ty_job_row *new_row(const char *project, const char *job_id, int64_t usec)
{
    struct ty_job_row *row = xcalloc(1, sizeof(*row));
    row->project = xstrdup(project);
    row->job_id = xstrdup(job_id);
    row->state = TY_STATE_QUEUED;
    row->create_usec = usec;
    row->labels = js("{\"team\":\"vision\",\"env\":\"ci\"}");
    row->training_input = js("{\"scaleTier\":\"BASIC\",\"region\":\"europe-west1\","
                             "\"args\":[\"--lr=0.1\",\"\\u00fcn\\u0000z\"],\"n\":1.5}");
    row->runtime = xstrdup("process");
    row->options = js("{\"gpu\":false}");
    row->sweep_key = xstrdup("sweep-1");
    return row;
}

/* Insert a fresh row and return its seq (the test aborts when it fails). */
static inline int64_t add(struct ty_store *s, const char *project, const char *job_id, int64_t usec)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = new_row(project, job_id, usec);
    if (ty_store_insert_job(s, row, &err) < 0) {
        diag("insert %s/%s: %s", project, job_id, err.msg);
        abort();
    }
    return row->seq;
}

/* The last row fetched or returned (freed when the next one is kept); never NULL: a missing
 * job reads as @none. */
static struct ty_job_row *cur;
static struct ty_job_row none = {.project = "", .job_id = "", .error_message = ""};

static inline struct ty_job_row *keep(struct ty_job_row *row)
{
    if (cur != row)
        ty_job_row_free(cur);
    cur = row;
    return row ? row : &none;
}

static inline struct ty_job_row *by_seq(struct ty_store *s, int64_t seq)
{
    struct ty_job_row *row = NULL;
    (void)ty_store_get_job_by_seq(s, seq, &row, &err);
    return keep(row);
}

static inline struct ty_job_row *by_id(struct ty_store *s, const char *project, const char *job_id)
{
    struct ty_job_row *row = NULL;
    (void)ty_store_get_job(s, project, job_id, &row, &err);
    return keep(row);
}

/* Remove the scratch directory and the databases in it. */
static inline void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            _cleanup_free_ char *p = xasprintf("%s/%s", tmpdir, de->d_name);
            unlink(p);
        }
    }
    closedir(d);
    rmdir(tmpdir);
}

#endif
