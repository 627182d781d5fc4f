/* SPDX-License-Identifier: Apache-2.0
 * store-rows.h: the plain QUEUED job row the store's tests insert (project "p", a BASIC
 * process job), for tests that care about what happens to rows rather than what they hold. */
#ifndef TY_TEST_STORE_ROWS_H
#define TY_TEST_STORE_ROWS_H

#include <jansson.h>

#include "alloc.h"
#include "store.h"

/* A new QUEUED row of project "p" named @job_id, created at 100 µs; caller frees
 * (ty_job_row_free). */
static inline struct ty_job_row *test_queued_row(const char *job_id)
{
    struct ty_job_row *row = xcalloc(1, sizeof(*row));
    row->project = xstrdup("p");
    row->job_id = xstrdup(job_id);
    row->state = TY_STATE_QUEUED;
    row->create_usec = 100;
    row->labels = json_object();
    row->training_input = json_pack("{s:s}", "scaleTier", "BASIC");
    row->runtime = xstrdup("process");
    row->options = json_object();
    row->sweep_key = xstrdup("key");
    return row;
}

#endif
