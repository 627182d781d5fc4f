/* SPDX-License-Identifier: Apache-2.0
 * clusterenv-check.h: what the cluster plan and environment tests share (test-clusterenv*.c,
 * test-plan.c): job documents written compactly, and the typed job of one. Header-only, as
 * tap.h is (its counters are per test program). */
#ifndef TY_TEST_CLUSTERENV_CHECK_H
#define TY_TEST_CLUSTERENV_CHECK_H

#include <string.h>

#include "json.h"
#include "spec.h"
#include "tap.h"

#define N4 "\"n1-standard-4\""
/* A job document: the CUSTOM master every job has, then @rest. */
#define DOC(id, rest)                                                                              \
    "{\"jobId\":\"" id "\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":" N4 ","     \
    "\"masterConfig\":{\"imageUri\":\"img:1\"}" rest "}}"

/* The typed job of the JSON document @text, read by the job model (ty_job_from_json); NULL
 * (and a diagnostic line) when it is refused. Caller frees. */
static inline struct ty_job *job_from(const char *text)
{
    json_t *tree = NULL;
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    if (ty_spec_parse(text, strlen(text), TY_SPEC_JSON, &tree, &err) < 0 ||
        ty_job_from_json(tree, &job, &err) < 0) {
        diag("job rejected: %s", ty_error_msg(&err));
        job = NULL;
    }
    if (tree)
        json_decref(tree);
    return job;
}

#endif
