/* SPDX-License-Identifier: Apache-2.0
 * accept.c: a job as a user submits it (accept.h). */
#include "accept.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "clusterenv.h"
#include "json.h"
#include "timeutil.h"

int ty_job_accept(const json_t *job_json, struct ty_job **ret, struct ty_error *err)
{
    return ty_job_accept_wait(job_json, TY_MIN_WAIT_USEC, ret, err);
}

/* The floor as a Duration's text: "1800s", "1.5s". */
static void floor_text(int64_t usec, char *buf, size_t len)
{
    if (usec % 1000000 == 0)
        (void)snprintf(buf, len, "%" PRId64 "s", usec / 1000000);
    else
        (void)snprintf(buf, len, "%" PRId64 ".%06" PRId64 "s", usec / 1000000, usec % 1000000);
}

static int check_wait(const struct ty_job *job, int64_t min_wait_usec, struct ty_error *err)
{
    const char *text =
        ty_json_str(json_object_get(job->training_input, "scheduling"), "maxWaitTime");
    int64_t usec = 0;
    char floor[40];

    if (!text || ty_duration_parse(text, &usec, NULL) < 0 || usec >= min_wait_usec)
        return 0;
    floor_text(min_wait_usec, floor, sizeof(floor));
    return ty_error_set(err,
                        EINVAL,
                        "trainingInput.scheduling.maxWaitTime: must be at least %s (got %s)",
                        floor,
                        text);
}

int ty_job_accept_wait(const json_t *job_json,
                       int64_t min_wait_usec,
                       struct ty_job **ret,
                       struct ty_error *err)
{
    struct ty_job *job = NULL;
    int r;

    r = ty_job_from_json(job_json, &job, err);
    if (r < 0)
        return r;
    r = ty_job_check_images(job, err);
    if (r >= 0)
        r = ty_hp_check_new(job->hp, err);
    if (r >= 0)
        r = ty_clusterenv_check_size(job, TY_ADDR_LEN_VALIDATE, err);
    if (r >= 0)
        r = check_wait(job, min_wait_usec, err);
    if (r < 0) {
        ty_job_free(job);
        return r;
    }
    *ret = job;
    return 0;
}
