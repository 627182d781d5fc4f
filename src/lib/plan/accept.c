/* SPDX-License-Identifier: Apache-2.0
 * accept.c: a job as a user submits it (accept.h). */
#include "accept.h"

#include "clusterenv.h"

int ty_job_accept(const json_t *job_json, struct ty_job **ret, struct ty_error *err)
{
    struct ty_job *job = NULL;
    int r;

    r = ty_job_from_json(job_json, &job, err);
    if (r < 0)
        return r;
    r = ty_clusterenv_check_size(job, TY_ADDR_LEN_VALIDATE, err);
    if (r < 0) {
        ty_job_free(job);
        return r;
    }
    *ret = job;
    return 0;
}
