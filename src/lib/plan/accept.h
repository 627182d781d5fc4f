/* SPDX-License-Identifier: Apache-2.0
 * accept.h: a job as a user submits it. The job model (spec.h) checks the job's own rules;
 * whether its cluster can run at all (its CLUSTER_SPEC and TF_CONFIG fit in one environment
 * string each) needs the plan and the environment it renders, so that check lives here. */
#ifndef TY_ACCEPT_H
#define TY_ACCEPT_H

#include <jansson.h>

#include "error.h"
#include "spec.h"

/* ty_job_from_json, then ty_clusterenv_check_size with addresses of TY_ADDR_LEN_VALIDATE
 * bytes. Returns 0 and *ret (free with ty_job_free), or -EINVAL / -E2BIG with err naming the
 * field or the replica count and the rule; nothing is allocated on failure. */
int ty_job_accept(const json_t *job_json, struct ty_job **ret, struct ty_error *err);

#endif
