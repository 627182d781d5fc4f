/* SPDX-License-Identifier: Apache-2.0
 * local-previous.c: the earlier local runs a `local train` tuning job resumes
 * (local-previous.h). */
#include "local-previous.h"

#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "fdutil.h"
#include "jobs-local.h"
#include "json.h"
#include "macro.h"
#include "trials.h"

#define FIELD "trainingInput.hyperparameters.resumePreviousJobId"

/* The record of local job @id of @state_dir into *@ret, as `jobs describe --local` shows it:
 * a run whose process is gone without recording its end is FAILED (so a killed study can be
 * resumed). */
static int read_previous(const char *state_dir, const char *id, json_t **ret, struct ty_error *err)
{
    struct ty_error e = {0};
    int r = jobs_local_read(state_dir, id, ret, &e);

    if (r == -ENOENT)
        return ty_error_set(err, ENOENT, FIELD ": no local job '%s' (%s)", id, ty_error_msg(&e));
    if (r < 0)
        return ty_error_set(err, -r, FIELD ": cannot read job '%s': %s", id, ty_error_msg(&e));
    return 0;
}

/* ty_study_resume_chain's lookup: a local job of the state directory @ctx, or NULL. */
static json_t *lookup_local(void *ctx, const char *id)
{
    json_t *job = NULL;
    return read_previous(ctx, id, &job, NULL) >= 0 ? job : NULL;
}

int local_previous_load(const char *state_dir,
                        const struct ty_job *job,
                        struct local_previous *ret,
                        struct ty_error *err)
{
    int r;

    if (!job->hp || !job->hp->resume_job_id)
        return 0;
    if (job->job_id && strcmp(job->job_id, job->hp->resume_job_id) == 0)
        return ty_error_set(err,
                            EINVAL,
                            FIELD ": '%s' is this job's own id; a job resumes an earlier one, "
                                  "so run this one under a new id",
                            job->job_id);
    r = state_dir ? read_previous(state_dir, job->hp->resume_job_id, &ret->job, err)
                  : ty_error_set(err, ENOENT, "no state directory to find the job to resume");
    if (r >= 0)
        r = ty_study_resume_check(job->hp, ret->job, err);
    if (r < 0)
        return r;
    ret->earlier = ty_study_resume_chain(ret->job, lookup_local, (void *)state_dir);
    return 0;
}

void local_previous_release(struct local_previous *p)
{
    json_decref(p->job);
    json_decref(p->earlier);
}
