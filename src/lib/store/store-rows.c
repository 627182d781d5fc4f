/* SPDX-License-Identifier: Apache-2.0
 * store-rows.c: the job store's rows (read from a statement, freed), the states' names in the
 * store, etags, and a row as the REST API's Job (store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "base64.h"
#include "jobstate.h"
#include "json.h"
#include "macro.h"
#include "store-internal.h"
#include "store.h"
#include "timeutil.h"

/* ---- rows ---- */

const char *store_state_name(enum ty_job_state st)
{
    return ty_job_state_name(st);
}

enum ty_job_state store_state_parse(const char *name)
{
    for (int i = TY_STATE_UNSPECIFIED; i <= TY_STATE_CANCELLED; i++)
        if (name && strcmp(name, ty_job_state_name((enum ty_job_state)i)) == 0)
            return (enum ty_job_state)i;
    return TY_STATE_UNSPECIFIED;
}

void ty_job_row_free(struct ty_job_row *row)
{
    if (!row)
        return;
    free(row->project);
    free(row->job_id);
    free(row->error_message);
    json_decref(row->labels);
    json_decref(row->training_input);
    json_decref(row->training_output);
    free(row->runtime);
    json_decref(row->options);
    free(row->sweep_key);
    free(row->state_reason);
    json_decref(row->attempt_status);
    free(row->outcome_message);
    json_decref(row->grant);
    free(row);
}

void ty_job_rows_free(struct ty_job_row **rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ty_job_row_free(rows[i]);
    free(rows);
}

static char *col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return xstrdup(t ? (const char *)t : "");
}

/* The JSON text of column @i (NULL column: *ret = NULL when @nullable, else an error). */
static int col_json(sqlite3_stmt *st, int i, bool nullable, json_t **ret, struct ty_error *err)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    json_error_t je;

    *ret = NULL;
    if (!t) {
        if (nullable)
            return 0;
        return ty_error_set(err,
                            EIO,
                            "column %s of job %lld is null",
                            sqlite3_column_name(st, i),
                            (long long)sqlite3_column_int64(st, 0));
    }
    *ret = json_loadb(t, (size_t)sqlite3_column_bytes(st, i), JSON_ALLOW_NUL, &je);
    if (!*ret)
        return ty_error_set(err,
                            EIO,
                            "column %s of job %lld is not valid JSON: %s",
                            sqlite3_column_name(st, i),
                            (long long)sqlite3_column_int64(st, 0),
                            je.text);
    return 0;
}

int store_row_from_stmt(sqlite3_stmt *st, struct ty_job_row **ret, struct ty_error *err)
{
    struct ty_job_row *row = xcalloc(1, sizeof(*row));
    int r;

    row->seq = sqlite3_column_int64(st, 0);
    row->project = col_str(st, 1);
    row->job_id = col_str(st, 2);
    row->state = store_state_parse((const char *)sqlite3_column_text(st, 3));
    row->create_usec = sqlite3_column_int64(st, 4);
    row->start_usec = sqlite3_column_int64(st, 5);
    row->end_usec = sqlite3_column_int64(st, 6);
    row->error_message = col_str(st, 7);
    row->etag = sqlite3_column_int64(st, 11);
    row->runtime = col_str(st, 12);
    row->shim_pid = sqlite3_column_int64(st, 14);
    row->shim_start = sqlite3_column_int64(st, 15);
    row->sweep_key = col_str(st, 16);
    row->state_reason = col_str(st, 17);
    row->first_attempt = sqlite3_column_int64(st, 19);
    row->internal_retries = sqlite3_column_int64(st, 20);
    row->outcome = store_state_parse((const char *)sqlite3_column_text(st, 21));
    row->outcome_message = col_str(st, 22);
    row->version = sqlite3_column_int64(st, 24);
    if ((r = col_json(st, 8, false, &row->labels, err)) < 0 ||
        (r = col_json(st, 9, false, &row->training_input, err)) < 0 ||
        (r = col_json(st, 10, true, &row->training_output, err)) < 0 ||
        (r = col_json(st, 13, false, &row->options, err)) < 0 ||
        (r = col_json(st, 18, true, &row->attempt_status, err)) < 0 ||
        (r = col_json(st, 23, true, &row->grant, err)) < 0) {
        ty_job_row_free(row);
        return r;
    }
    *ret = row;
    return 0;
}

/* ---- etags and the REST view ---- */

const char *ty_store_etag_format(int64_t etag, char *buf, size_t n)
{
    unsigned char be[8];
    char *text;

    for (int i = 0; i < 8; i++)
        be[i] = (unsigned char)((uint64_t)etag >> (56 - 8 * i));
    text = ty_base64_encode(be, sizeof(be), false);
    if (n > 0)
        (void)snprintf(buf, n, "%s", text);
    free(text);
    return buf;
}

int ty_store_etag_parse(const char *text, int64_t *ret)
{
    unsigned char *raw = NULL;
    size_t len = 0;
    uint64_t v = 0;

    if (!text || strlen(text) != 12 || ty_base64_decode(text, false, &raw, &len) < 0)
        return -EINVAL;
    for (size_t i = 0; i < len && len == 8; i++)
        v = v << 8 | raw[i];
    free(raw);
    if (len != 8 || (int64_t)v <= 0)
        return -EINVAL;
    *ret = (int64_t)v;
    return 0;
}

/* A JSON string of @s; text that is not UTF-8 (say, a message quoting a program's bytes)
 * keeps its ASCII and shows '?' for the rest rather than vanishing. */
static json_t *str_value(const char *s)
{
    json_t *j = json_string(s ? s : "");
    char *t;

    if (j)
        return j;
    t = xstrdup(s);
    for (char *p = t; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(t);
    free(t);
    return j;
}

static void set_time(json_t *o, const char *key, int64_t usec)
{
    char buf[64];
    if (usec != 0)
        json_object_set_new(o, key, json_string(ty_rfc3339(usec, 6, buf, sizeof(buf))));
}

/* attemptStatus (store.h): the recorded object as it is, or a copy with internalRetries, and
 * for an ended job its replicas as they ended (ty_attempt_status_settle: the service may end
 * a job whose supervisor was lost before it recorded them). */
static void set_attempt_status(json_t *o, const struct ty_job_row *row)
{
    bool settle =
        ty_job_state_is_final(row->state) && ty_attempt_status_unsettled(row->attempt_status);
    json_t *as;

    if (row->internal_retries <= 0 && !settle) {
        if (json_is_object(row->attempt_status))
            json_object_set(o, "attemptStatus", row->attempt_status);
        return;
    }
    as = json_is_object(row->attempt_status) ? json_deep_copy(row->attempt_status) : json_object();
    if (row->internal_retries > 0)
        json_object_set_new(as, "internalRetries", json_integer(row->internal_retries));
    if (settle)
        (void)ty_attempt_status_settle(as);
    json_object_set_new(o, "attemptStatus", as);
}

json_t *ty_job_row_to_json(const struct ty_job_row *row)
{
    json_t *o = json_object();
    char etag[16];

    json_object_set_new(o, "jobId", str_value(row->job_id));
    json_object_set_new(
        o, "trainingInput", row->training_input ? json_incref(row->training_input) : json_object());
    set_time(o, "createTime", row->create_usec);
    set_time(o, "startTime", row->start_usec);
    set_time(o, "endTime", row->end_usec);
    json_object_set_new(o, "state", json_string(ty_job_state_name(row->state)));
    if (row->error_message && row->error_message[0])
        json_object_set_new(o, "errorMessage", str_value(row->error_message));
    if (row->state == TY_STATE_QUEUED && row->state_reason && row->state_reason[0])
        json_object_set_new(o, "stateReason", str_value(row->state_reason));
    set_attempt_status(o, row);
    if (row->training_output && ty_job_state_is_final(row->state) &&
        ty_training_output_unsettled(row->training_output)) {
        json_t *to = json_deep_copy(row->training_output); /* as set_attempt_status */
        (void)ty_training_output_settle(to);
        json_object_set_new(o, "trainingOutput", to);
    } else if (row->training_output) {
        json_object_set_new(o, "trainingOutput", json_incref(row->training_output));
    }
    if (json_object_size(row->labels)) /* like Google's JSON: an empty map is left out */
        json_object_set_new(o, "labels", json_incref(row->labels));
    json_object_set_new(
        o, "etag", json_string(ty_store_etag_format(row->etag, etag, sizeof(etag))));
    return o;
}
