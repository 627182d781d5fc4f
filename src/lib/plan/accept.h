/* SPDX-License-Identifier: Apache-2.0
 * accept.h: a job as a user submits it. The job model (spec.h) checks the job's own rules;
 * whether its cluster can run at all (its CLUSTER_SPEC and TF_CONFIG fit in one environment
 * string each) needs the plan and the environment it renders, so that check lives here, as
 * does the smallest scheduling.maxWaitTime a user may ask for (a setting of the service, not
 * a rule of the job: a job stored before the setting changed is never refused), and, for the
 * same reason, that each imageUri is a container image reference. */
#ifndef TY_ACCEPT_H
#define TY_ACCEPT_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"
#include "spec.h"

/* AI Platform's smallest scheduling.maxWaitTime: 30 minutes. */
#define TY_MIN_WAIT_USEC (1800 * INT64_C(1000000))

/* ty_job_accept_wait with AI Platform's floor, TY_MIN_WAIT_USEC. */
int ty_job_accept(const json_t *job_json, struct ty_job **ret, struct ty_error *err);

/* ty_job_from_json, then ty_job_check_images (each imageUri an image reference), then
 * ty_clusterenv_check_size with addresses of TY_ADDR_LEN_VALIDATE bytes, then: a
 * trainingInput.scheduling.maxWaitTime, when set, must be at least
 * @min_wait_usec ("trainingInput.scheduling.maxWaitTime: must be at least 1800s (got
 * 60s)"). Returns 0 and *ret (free with ty_job_free), or -EINVAL / -E2BIG with err naming the
 * field or the replica count and the rule; nothing is allocated on failure. */
int ty_job_accept_wait(const json_t *job_json,
                       int64_t min_wait_usec,
                       struct ty_job **ret,
                       struct ty_error *err);

#endif
