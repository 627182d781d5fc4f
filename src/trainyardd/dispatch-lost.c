/* SPDX-License-Identifier: Apache-2.0
 * dispatch-lost.c: what becomes of a job whose supervisor is gone (dispatch-internal.h): the
 * store decides (ty_store_supervisor_lost), the job's log and the daemon's say what it did, and
 * an end the store could not record is kept and recorded on a later pass. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "alloc.h"
#include "dispatch-internal.h"
#include "logs.h"
#include "macro.h"
#include "restart.h"
#include "store.h"
#include "timeutil.h"

/* The service's lines for what became of job @row after its supervisor (process @pid, which
 * @how) was lost, and the same in the daemon's log. */
static void report_lost(struct tyd_dispatch *dp,
                        const struct ty_job_row *row,
                        const struct ty_lost *lost,
                        pid_t pid,
                        const char *how)
{
    struct tyd *d = dp->d;
    int64_t at = lost->attempt;
    char who[160], why[96];

    (void)snprintf(who, sizeof(who), "the job's supervisor (process %d) %s", (int)pid, how);
    switch (lost->action) {
    case TY_LOST_NONE:
        return;
    case TY_LOST_CANCELLED:
        tyd_job_log(d,
                    row,
                    at,
                    TY_SEV_WARNING,
                    "While the job was being cancelled, %s; its replicas were stopped.",
                    who);
        tyd_job_log(d, row, at, TY_SEV_INFO, "Job cancelled.");
        break;
    case TY_LOST_OUTCOME:
        tyd_job_log(d,
                    row,
                    at,
                    TY_SEV_WARNING,
                    "After the job's outcome was recorded, %s; its replicas were stopped. The "
                    "job is not retried: it ends with that outcome.",
                    who);
        if (row->state == TY_STATE_SUCCEEDED)
            tyd_job_log(d, row, at, TY_SEV_INFO, "Job completed successfully.");
        else if (row->state == TY_STATE_CANCELLED)
            tyd_job_log(d, row, at, TY_SEV_INFO, "Job cancelled.");
        else
            tyd_job_log(d, row, at, TY_SEV_ERROR, "Job failed: %s", row->error_message);
        break;
    case TY_LOST_RETRY:
        if (json_object_get(row->training_input, "hyperparameters"))
            /* A study has no attempts of its own: its trials have theirs. */
            tyd_job_log(d,
                        row,
                        at,
                        TY_SEV_WARNING,
                        "Internal error: %s before the job's outcome was recorded; its replicas "
                        "were stopped. Retrying the job (internal retry %lld of %d): its trials "
                        "run anew.",
                        who,
                        (long long)row->internal_retries,
                        TYD_MAX_INTERNAL_RETRIES);
        else
            tyd_job_log(d,
                        row,
                        at,
                        TY_SEV_WARNING,
                        "Internal error: %s before the job's outcome was recorded; its replicas "
                        "were stopped. Retrying the job as attempt %lld (internal retry %lld of "
                        "%d).",
                        who,
                        (long long)lost->next_attempt,
                        (long long)row->internal_retries,
                        TYD_MAX_INTERNAL_RETRIES);
        break;
    case TY_LOST_FAILED:
        if (ty_retries_disabled(row->training_input))
            (void)snprintf(why, sizeof(why), "retries are disabled (scheduling.disableRetries)");
        else
            (void)snprintf(
                why, sizeof(why), "its %d internal retries were made", TYD_MAX_INTERNAL_RETRIES);
        tyd_job_log(d,
                    row,
                    at,
                    TY_SEV_WARNING,
                    "Internal error: %s before the job's outcome was recorded; its replicas were "
                    "stopped. Not retrying the job: %s.",
                    who,
                    why);
        tyd_job_log(d, row, at, TY_SEV_ERROR, "Job failed: %s", TYD_INTERNAL_ERROR_MESSAGE);
        break;
    }
    tyd_log("job %s/%s: %s before the job ended (see %s for its diagnostics); %s",
            row->project,
            row->job_id,
            who,
            d->log_file,
            lost->action == TY_LOST_RETRY ? "retrying it as the next attempt"
                                          : ty_job_state_name(row->state));
}

void tyd_lost_unrecorded(
    struct tyd_dispatch *dp, int64_t seq, pid_t pid, bool given_back, const char *how)
{
    struct unrecorded *u;

    for (size_t i = 0; i < dp->nunrec; i++)
        if (dp->unrec[i].seq == seq && dp->unrec[i].pid == pid)
            return;
    dp->unrec = xreallocarray(dp->unrec, dp->nunrec + 1, sizeof(*dp->unrec));
    u = &dp->unrec[dp->nunrec++];
    *u = (struct unrecorded){seq, pid, given_back, ""};
    (void)snprintf(u->how, sizeof(u->how), "%s", how);
}

int tyd_lost_account(struct tyd_dispatch *dp, int64_t seq, pid_t pid, const char *how)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *before = NULL;
    _cleanup_(ty_job_row_freep) struct ty_job_row *after = NULL;
    struct ty_lost lost = {0};
    struct ty_error e = {0};
    int64_t max_retries = TYD_MAX_INTERNAL_RETRIES;

    /* Its TrainingInput never changes: read first (a failure is the next call's to report). */
    if (ty_store_get_job_by_seq(dp->d->store, seq, &before, &e) == 0 &&
        ty_retries_disabled(before->training_input))
        max_retries = 0;
    e = (struct ty_error){0};
    if (ty_store_supervisor_lost(dp->d->store,
                                 seq,
                                 pid,
                                 max_retries,
                                 ty_now_usec(),
                                 TYD_INTERNAL_ERROR_MESSAGE,
                                 &lost,
                                 &after,
                                 &e) < 0) {
        tyd_log("job %lld: %s", (long long)seq, ty_error_msg(&e));
        if (ty_store_fs_error(e.code)) {
            tyd_lost_unrecorded(dp, seq, pid, false, how);
            return -1;
        }
        return 0;
    }
    report_lost(dp, after, &lost, pid, how);
    tyd_admit_after(dp->d, after);
    return 0;
}

int tyd_lost_given_back(struct tyd_dispatch *dp, int64_t seq, pid_t pid)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    struct ty_error e = {0};

    dp->hold_until = ty_mono_usec() + HOLD_USEC;
    if (ty_store_unclaim_job(dp->d->store, seq, pid, &row, &e) < 0) {
        tyd_log("job %lld: %s", (long long)seq, ty_error_msg(&e));
        if (ty_store_fs_error(e.code)) {
            tyd_lost_unrecorded(dp, seq, pid, true, "");
            return -1;
        }
        return 0;
    }
    if (row->shim_pid == pid && !ty_job_state_is_final(row->state)) /* CANCELLING */
        return tyd_lost_account(dp, seq, pid, "gave the job back");
    /* Final: it holds nothing more; QUEUED: back to its place in the scheduler's queue (not
     * admitted again before HOLD_USEC); released after an internal error: it keeps its
     * grant for the supervisor that retries it. */
    tyd_admit_after(dp->d, row);
    if (ty_job_state_is_final(row->state))
        return 0;
    tyd_log("job %s/%s: its supervisor could not start it (the state directory's filesystem is "
            "full or failing): it waits to be started again",
            row->project,
            row->job_id);
    return 0;
}

void tyd_lost_record_pending(struct tyd_dispatch *dp)
{
    size_t n = dp->nunrec;
    struct unrecorded *v = TAKE_PTR(dp->unrec);

    dp->nunrec = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].given_back)
            (void)tyd_lost_given_back(dp, v[i].seq, v[i].pid);
        else
            (void)tyd_lost_account(dp, v[i].seq, v[i].pid, v[i].how);
    }
    free(v);
}
