/* SPDX-License-Identifier: Apache-2.0
 * jobfilter.h: the `filter` of projects.jobs.list (and `trainyard jobs list --filter`), in
 * the syntax of Google's list filters (AIP-160), e.g.
 *     jobId:census*            state:FAILED            jobId:rnn* AND state:FAILED
 *     labels.team=vision       NOT state:SUCCEEDED     createTime>"2026-11-30T00:00:00Z"
 *     (state=FAILED OR state=CANCELLED) AND -labels:owner      jobId~^rnn_[0-9]+$
 * Grammar: expressions of restrictions joined by AND (or juxtaposition) and OR (OR binds
 * tighter than AND, as in AIP-160), negated by NOT or '-', grouped by parentheses. A
 * restriction is FIELD OP VALUE with OP one of : = != < <= > >= ~ !~; FIELD a dotted path into
 * the Job resource (jobId, state, labels.KEY, createTime, trainingInput.scaleTier, ...); VALUE a
 * bare word or a "double-quoted string". ':' (has), '=' and '!=' compare strings ignoring ASCII
 * case, as gcloud's filters do, and a '*' at the end of their value matches any suffix;
 * `labels:KEY` is true when the label exists. '~' is true when a POSIX extended regular
 * expression (case-sensitive) occurs in the value, '!~' when it does not.
 * Fields ending in "Time" compare as times, int64 fields numerically. A bare VALUE matches a
 * job whose id, state or any label value contains it (case-insensitive). docs/service.md#the-api
 * has the full description. */
#ifndef TY_JOBFILTER_H
#define TY_JOBFILTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* Longest filter text accepted. */
#define TY_FILTER_MAX_LEN 2048

/* Most matching steps a filter's '~' patterns may take in all (ty_ere_search_budget): about
 * a third of a second of one core. */
#define TY_FILTER_MAX_STEPS UINT64_C(100000000)

struct ty_filter;

/* Parse @text (NULL or blank: match everything). Errors (-EINVAL) say what is wrong and at
 * which character: "filter: expected a value after 'state:' at position 7". */
int ty_filter_parse(const char *text, struct ty_filter **ret, struct ty_error *err);
/* Does the REST Job resource @job (as ty_job_row_to_json makes it) match? Its '~' and '!~'
 * patterns spend from the filter's budget of matching steps (TY_FILTER_MAX_STEPS, shared by
 * every job the filter is matched against; @f is const but its budget is not); once it is
 * spent, no job matches and ty_filter_spent says so. */
bool ty_filter_match(const struct ty_filter *f, const json_t *job);
/* 0, or -E2BIG when @f's budget of matching steps ran out (@err then says so, and how to
 * narrow the filter): the matches made are incomplete. */
int ty_filter_spent(const struct ty_filter *f, struct ty_error *err);
/* Set the budget of @f's '~' patterns to @steps (tests; the default is TY_FILTER_MAX_STEPS). */
void ty_filter_set_budget(struct ty_filter *f, uint64_t steps);
/* Narrowing hints for the store, valid when the filter is a conjunction that contains the
 * restriction: `state=X`/`state:X` (returns the enum name, upper case) and `jobId:P*` or
 * `jobId=P*` (returns the prefix P). NULL when there is no such hint. The filter must still
 * be applied to every row; hints only let the store skip rows. The store compares the prefix
 * ignoring ASCII case, as ':' and '=' do.
 * Both strings live as long as the filter. */
const char *ty_filter_state_hint(const struct ty_filter *f);
const char *ty_filter_id_prefix_hint(const struct ty_filter *f);
void ty_filter_free(struct ty_filter *f);

#endif
