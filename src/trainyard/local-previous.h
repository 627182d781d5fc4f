/* SPDX-License-Identifier: Apache-2.0
 * local-previous.h: resumePreviousJobId for `local train`: the earlier local runs a tuning job
 * continues, read from the state directory (jobs/local/ID/job.json), with the jobs each
 * resumed in turn (study.h: one study however many jobs continue it). */
#ifndef TY_LOCAL_PREVIOUS_H
#define TY_LOCAL_PREVIOUS_H

#include <jansson.h>

#include "error.h"
#include "spec.h"

/* The job named and the jobs it resumed in turn, nearest first (ty_study_resume_chain); both
 * NULL when the job resumes nothing. */
struct local_previous {
    json_t *job, *earlier;
};

/* Read the job @job resumes from @state_dir (NULL: none, an error) and check it
 * (ty_study_resume_check), then the jobs it resumed in turn. Nothing when @job resumes
 * nothing. Returns 0, or -errno with @err naming
 * trainingInput.hyperparameters.resumePreviousJobId. */
int local_previous_load(const char *state_dir,
                        const struct ty_job *job,
                        struct local_previous *ret,
                        struct ty_error *err);
/* Release @p's references (NULL-safe members). */
void local_previous_release(struct local_previous *p);

#endif
