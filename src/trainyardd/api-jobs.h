/* SPDX-License-Identifier: Apache-2.0
 * api-jobs.h: what the projects.jobs handlers share (api-jobs.c: create, get, list;
 * api-jobs-change.c: cancel, patch). Internal to trainyardd. */
#ifndef TYD_API_JOBS_H
#define TYD_API_JOBS_H

#include <stdbool.h>

#include "daemon.h"
#include "error.h"
#include "json.h"
#include "store.h"

/* Answer a failed store call @r: 404 for -ENOENT, else 500. Returns true when @r succeeded
 * (nothing answered). */
bool tyd_store_ok(const struct tyd_request *rq,
                  struct tyd_reply *rep,
                  int r,
                  const struct ty_error *e);

/* Answer with the outcome of a store call @r that gave @row: 404, 500, or 200 and the Job. */
void tyd_reply_row(const struct tyd_request *rq,
                   struct tyd_reply *rep,
                   int r,
                   const struct ty_job_row *row,
                   const struct ty_error *e);

/* Parse the body as a JSON object into *@ret (new reference); an empty body is {} when
 * @empty_ok. Returns 0, or -1 with @rep filled (400). */
int tyd_parse_body(const struct tyd_request *rq,
                   bool empty_ok,
                   json_t **ret,
                   struct tyd_reply *rep);

#endif
