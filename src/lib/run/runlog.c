/* SPDX-License-Identifier: Apache-2.0
 * runlog.c: the records of a run (supervise.h): one record to the job's log files and the
 * caller's sink, the service's printf-style messages, and the messages every run starts and
 * ends with. Shared by the supervisor and the study. */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "supervise.h"
#include "timeutil.h"

void ty_run_log(const struct ty_supervisor_options *o,
                void *ctx,
                enum ty_severity sev,
                const char *task,
                const char *trial,
                unsigned attempt,
                const char *msg,
                size_t len)
{
    struct ty_log_record rec = {
        .time_usec = ty_now_usec(),
        .severity = sev,
        .task = task,
        .trial = trial,
        .message = msg,
        .len = len,
        .attempt = attempt,
    };
    if (o->log)
        (void)ty_joblog_write(o->log, &rec);
    if (o->on_log)
        o->on_log(ctx, &rec);
}

void ty_run_vservice(const struct ty_supervisor_options *o,
                     void *ctx,
                     const char *trial,
                     unsigned attempt,
                     enum ty_severity sev,
                     const char *fmt,
                     va_list ap)
{
    struct ty_buf b = TY_BUF_INIT;
    char msg[2048];

    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    /* One record, shown as its file has it (the console of local train too). */
    ty_log_append_escaped(&b, msg, strlen(msg), true);
    ty_run_log(o, ctx, sev, "service", trial, attempt, ty_buf_str(&b), b.len);
    ty_buf_release(&b);
}

static void run_service(const struct ty_supervisor_options *o,
                        void *ctx,
                        const char *trial,
                        unsigned attempt,
                        enum ty_severity sev,
                        const char *fmt,
                        ...) __attribute__((format(printf, 6, 7)));
static void run_service(const struct ty_supervisor_options *o,
                        void *ctx,
                        const char *trial,
                        unsigned attempt,
                        enum ty_severity sev,
                        const char *fmt,
                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    ty_run_vservice(o, ctx, trial, attempt, sev, fmt, ap);
    va_end(ap);
}

void ty_run_announce(const struct ty_supervisor_options *o,
                     void *ctx,
                     const char *trial,
                     unsigned attempt,
                     const char *job_id)
{
    /* Once per job: the study said so before its first trial, so a trial does not repeat
     * that the job was validated and queued, and neither does a run that replaces one lost
     * to an internal error (first_attempt after 1: the service's retry), nor one whose
     * service wrote them when it accepted the job. */
    if (!trial && o->first_attempt <= 1 && !o->announced) {
        run_service(o, ctx, trial, attempt, TY_SEV_INFO, "Validating job requirements...");
        run_service(o,
                    ctx,
                    trial,
                    attempt,
                    TY_SEV_INFO,
                    "Job creation request has been successfully validated.");
        run_service(o, ctx, trial, attempt, TY_SEV_INFO, "Job %s is queued.", job_id);
    }
    if (o->admitted)
        run_service(o, ctx, trial, attempt, TY_SEV_INFO, "%s", o->admitted);
}

const char *ty_run_wait_expired(const struct ty_job *job, char *buf, size_t len)
{
    const char *d = ty_json_str(json_object_get(job->training_input, "scheduling"), "maxWaitTime");

    (void)snprintf(buf,
                   len,
                   "Job cancelled: it did not start within its scheduling.maxWaitTime (%s).",
                   d ? d : "unset");
    return buf;
}

const char *ty_run_time_exceeded(const struct ty_job *job, char *buf, size_t len)
{
    const char *d =
        ty_json_str(json_object_get(job->training_input, "scheduling"), "maxRunningTime");

    (void)snprintf(buf,
                   len,
                   "The job exceeded its maximum running time (scheduling.maxRunningTime %s).",
                   d ? d : "unset");
    return buf;
}

int64_t ty_run_wait_deadline(const struct ty_job *job, int64_t create_usec)
{
    const char *d = ty_json_str(json_object_get(job->training_input, "scheduling"), "maxWaitTime");
    int64_t usec = 0;

    if (!d || ty_duration_parse(d, &usec, NULL) < 0 || usec <= 0)
        return 0;
    return create_usec + usec;
}

void ty_run_announce_result(const struct ty_supervisor_options *o,
                            void *ctx,
                            const char *trial,
                            unsigned attempt,
                            enum ty_job_state state,
                            const char *error)
{
    switch (state) {
    case TY_STATE_SUCCEEDED:
        run_service(o, ctx, trial, attempt, TY_SEV_INFO, "Job completed successfully.");
        break;
    case TY_STATE_CANCELLED:
        run_service(o, ctx, trial, attempt, TY_SEV_INFO, "Job cancelled.");
        break;
    default:
        run_service(o, ctx, trial, attempt, TY_SEV_ERROR, "Job failed: %s", error);
        break;
    }
}
