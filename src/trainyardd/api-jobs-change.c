/* SPDX-License-Identifier: Apache-2.0
 * api-jobs-change.c: the ml v1 projects.jobs methods that change a stored job: cancel
 * (signalling the job's supervisor, or taking a waiting job out of the queue) and patch (its
 * labels, with the etag, keeping those the service read at creation). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "alloc.h"
#include "api-jobs.h"
#include "daemon.h"
#include "json.h"
#include "macro.h"
#include "scheduler.h"
#include "schema.h"
#include "spec.h"
#include "timeutil.h"

void tyd_jobs_cancel(const struct tyd_request *rq, struct tyd_reply *rep)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    _cleanup_json_ json_t *body = NULL;
    struct ty_error e = {0};
    int64_t now;
    int r;

    if (tyd_check_params(rq, (const char *const[]){NULL}, rep) < 0 ||
        tyd_parse_body(rq, true, &body, rep) < 0)
        return;
    if (json_object_size(body)) {
        tyd_error(rep,
                  400,
                  NULL,
                  "Invalid JSON payload received. Unknown name \"%s\": Cannot find field "
                  "(CancelJobRequest has no fields).",
                  json_object_iter_key(json_object_iter(body)));
        return;
    }
    now = ty_now_usec();
    r = ty_store_cancel_job(rq->d->store, rq->project, rq->job, now, &row, &e);
    if (!tyd_store_ok(rq, rep, r, &e))
        return;
    if (row->state == TY_STATE_CANCELLING && row->shim_pid > 0)
        tyd_dispatch_signal(row, SIGTERM);
    if (row->state == TY_STATE_CANCELLED && row->end_usec == now && row->internal_retries > 0) {
        /* It waited for a new supervisor after an internal error: cancelled at once. */
        tyd_job_log(rq->d,
                    row,
                    ty_job_row_attempt(row),
                    TY_SEV_INFO,
                    "Job cancellation requested while the job waited to be retried.");
        tyd_job_log(rq->d, row, ty_job_row_attempt(row), TY_SEV_INFO, "Job cancelled.");
    } else if (row->state == TY_STATE_CANCELLED && row->end_usec == now && row->shim_pid == 0) {
        /* It was in the queue: it never had a supervisor to say so. */
        tyd_job_log_lines(
            rq->d,
            row,
            1,
            TY_SEV_INFO,
            (const char *const[]){"Job cancellation requested.", "Job cancelled.", NULL},
            NULL);
    }
    if (row->state == TY_STATE_CANCELLED && row->shim_pid == 0) {
        /* Out of the queue; if it held something (admitted, or waiting to be retried), the
         * main thread settles that on its next pass. */
        (void)ty_sched_dequeue(rq->d->sched, row->seq);
        tyd_kick(rq->d);
    }
    rep->status = 200;
    rep->json = json_object();
}

/* Check updateMask: a comma-separated list that may only name labels (and etag). */
static int check_mask(const char *mask, struct tyd_reply *rep)
{
    _cleanup_free_ char *m = NULL;
    char *save = NULL;
    bool labels = false;

    if (!mask || !*mask) {
        tyd_error(
            rep, 400, NULL, "updateMask: required; the only field that can be updated is labels");
        return -1;
    }
    m = xstrdup(mask);
    for (char *f = strtok_r(m, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        size_t len;
        while (*f == ' ')
            f++;
        len = strlen(f);
        while (len > 0 && f[len - 1] == ' ')
            f[--len] = '\0'; /* "labels, etag " as "labels,etag": blanks around a name */
        if (strcmp(f, "labels") == 0)
            labels = true;
        else if (strcmp(f, "etag") != 0) {
            tyd_error(rep,
                      400,
                      NULL,
                      "updateMask: field '%.60s' cannot be updated; the only field that can be "
                      "updated is labels",
                      f);
            return -1;
        }
    }
    if (!labels) {
        tyd_error(rep, 400, NULL, "updateMask: must name labels");
        return -1;
    }
    return 0;
}

/* The labels the service read when the job was created (its runtime, its extra
 * environments) describe how it runs, and a patch cannot change that: one left out of the
 * patched labels @after is kept (copied from @before, so that clearing a job's labels clears
 * the user's own); one set to another value, or added, is a 400 naming it. The labels kept
 * count toward the job's TY_MAX_LABELS: a 400 when they take it over (a job read back must
 * be a job the service would take). */
static int check_read_labels(const json_t *before, json_t *after, struct tyd_reply *rep)
{
    static const char *const read[] = {TY_LABEL_RUNTIME, TY_LABEL_PYTORCH, TY_LABEL_MXNET};
    size_t kept = 0;

    for (size_t i = 0; i < TY_ARRAY_SIZE(read); i++) {
        const char *was = ty_json_str(before, read[i]), *now = ty_json_str(after, read[i]);
        if (!now) {
            if (was)
                json_object_set_new(after, read[i], json_string(was)), kept++;
            continue;
        }
        if (was && strcmp(was, now) == 0)
            continue;
        tyd_error(rep,
                  400,
                  NULL,
                  "labels.%s: the service read it when the job was created (it was %s%s%s), "
                  "so a patch cannot change it",
                  read[i],
                  was ? "'" : "",
                  was ? was : "not set",
                  was ? "'" : "");
        return -1;
    }
    if (json_object_size(after) > TY_MAX_LABELS) {
        tyd_error(rep,
                  400,
                  NULL,
                  "labels: at most %d labels (got %zu, with the %zu of %s, %s and %s "
                  "that the job keeps)",
                  TY_MAX_LABELS,
                  json_object_size(after),
                  kept,
                  read[0],
                  read[1],
                  read[2]);
        return -1;
    }
    return 0;
}

void tyd_jobs_patch(const struct tyd_request *rq, struct tyd_reply *rep)
{
    static const char *const own[] = {"updateMask", NULL};
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    _cleanup_(ty_job_row_freep) struct ty_job_row *after = NULL;
    _cleanup_json_ json_t *body = NULL;
    _cleanup_json_ json_t *canon = NULL;
    _cleanup_json_ json_t *check = NULL;
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    struct ty_error e = {0};
    json_t *labels;
    const char *etag;
    int64_t expect = 0;
    int r;

    if (tyd_check_params(rq, own, rep) < 0 || check_mask(tyd_query(rq, "updateMask"), rep) < 0 ||
        tyd_parse_body(rq, false, &body, rep) < 0)
        return;
    /* The body is a Job, never a bare TrainingInput (as create's may be): a field of another
     * message is an unknown name, not a Job without labels that would clear them. */
    if (ty_schema_normalize(&ty_msg_job, body, "", 0, &canon, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    etag = ty_json_str(canon, "etag");
    if (etag && ty_store_etag_parse(etag, &expect) < 0) {
        tyd_error(rep, 400, NULL, "etag: '%.40s' is not an etag of this service", etag);
        return;
    }
    r = ty_store_get_job(rq->d->store, rq->project, rq->job, &row, &e);
    if (!tyd_store_ok(rq, rep, r, &e))
        return;
    labels = json_object_get(canon, "labels");
    /* Validate the labels with the job's own rules, as if the job were submitted so. */
    check = json_pack("{s:s,s:O,s:o}",
                      "jobId",
                      row->job_id,
                      "trainingInput",
                      row->training_input,
                      "labels",
                      labels ? json_incref(labels) : json_object());
    if (ty_job_from_json(check, &job, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    if (check_read_labels(row->labels, job->labels, rep) < 0)
        return;
    r = ty_store_update_labels(rq->d->store, rq->project, rq->job, job->labels, expect, &after, &e);
    if (r == -ESTALE) {
        tyd_error(rep,
                  409,
                  "ABORTED",
                  "The etag does not match: job '%s' was changed since it was read; read it "
                  "again and retry.",
                  rq->job);
        return;
    }
    tyd_reply_row(rq, rep, r, after, &e);
}
