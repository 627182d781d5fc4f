/* SPDX-License-Identifier: Apache-2.0
 * route.h: which API method a request names. Pure functions over the method and the
 * (already percent-decoded) path, so they are unit-tested and fuzzed without a server.
 *
 *   POST   /v1/projects/{project}/jobs                 jobs.create
 *   GET    /v1/projects/{project}/jobs                 jobs.list
 *   GET    /v1/projects/{project}/jobs/{job}           jobs.get
 *   PATCH  /v1/projects/{project}/jobs/{job}           jobs.patch
 *   POST   /v1/projects/{project}/jobs/{job}:cancel    jobs.cancel
 *   GET    /v1/projects/{project}/jobs/{job}/logs      jobs.logs (trainyard's own)
 *   GET    /healthz                                    liveness, no auth
 * The IAM methods of ml v1 (:getIamPolicy, :setIamPolicy, :testIamPermissions) are known
 * and answered as not implemented. */
#ifndef TYD_ROUTE_H
#define TYD_ROUTE_H

#include <stddef.h>
#include <stdint.h>

enum tyd_method {
    TYD_NOT_FOUND,     /* no such resource: 404 */
    TYD_BAD_METHOD,    /* the resource exists, not with this HTTP method: 405 */
    TYD_UNIMPLEMENTED, /* an ml v1 method trainyard does not offer: 501 */
    TYD_BAD_NAME,      /* a project or job id that cannot exist: 400 */
    TYD_HEALTH,
    TYD_JOBS_CREATE,
    TYD_JOBS_LIST,
    TYD_JOBS_GET,
    TYD_JOBS_PATCH,
    TYD_JOBS_CANCEL,
    TYD_JOBS_LOGS,
};

/* Longest project id accepted (Google's are 6-30 characters; domain-scoped ones are longer). */
#define TYD_PROJECT_MAX 128
/* Longest job id (the service's rule). */
#define TYD_JOB_ID_MAX 128

struct tyd_route {
    enum tyd_method method;
    char project[TYD_PROJECT_MAX + 1];
    char job[TYD_JOB_ID_MAX + 1];
    const char *allow; /* for TYD_BAD_METHOD: the methods the resource has ("GET, POST") */
    char detail[160];  /* for TYD_BAD_NAME, TYD_NOT_FOUND, TYD_UNIMPLEMENTED: why */
};

/* Resolve @http_method + @path into @r. Never fails: r->method says what to answer. */
void tyd_route(const char *http_method, const char *path, struct tyd_route *r);

/* The method's name as in the discovery document ("jobs.create"), for logs. */
const char *tyd_method_name(enum tyd_method m);

/* Does @id follow the job id rule (letters, digits and underscores, starting with a letter,
 * at most 128 characters)? */
int tyd_valid_job_id(const char *id, size_t len);
/* Does @id look like a project id (1-128 of letters, digits, and - . _ : ~)? */
int tyd_valid_project_id(const char *id, size_t len);

/* The pageToken of jobs.list: the position after job @seq, for the filter text @filter
 * (a token is only good with the filter it was made for). Caller frees. */
char *tyd_list_token_format(int64_t seq, const char *filter);
/* Returns 0 and *seq; -EINVAL for text that is not a token of this service, -ESTALE for a
 * token made for another filter. */
int tyd_list_token_parse(const char *token, const char *filter, int64_t *seq);

#endif
