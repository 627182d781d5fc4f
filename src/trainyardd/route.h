/* SPDX-License-Identifier: Apache-2.0
 * route.h: the API of trainyardd in one table (TYD_API below), and the router that finds
 * which row a request names. The router is a pure function of the method and the (already
 * percent-decoded) path, so it is unit-tested and fuzzed without a server; http.c runs the
 * handler a row names, on the thread and after the check the row asks for. */
#ifndef TYD_ROUTE_H
#define TYD_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"

/* What a request names: an API method, or why it names none. */
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
    TYD_METRICS,
    TYD_PROJECTS_LIST,
    TYD_DASHBOARD,       /* the dashboard's page (dashboard.c) */
    TYD_DASHBOARD_ASSET, /* one of its scripts or style sheets */
};

/* Where a row's handler runs (http.c). INLINE: on the libmicrohttpd event thread that read
 * the request, for answers that cost one point lookup or a page of a file. WORKER: on one of
 * the worker threads while the connection is suspended, for handlers that wait for a durable
 * write (an fsync) or may scan many rows, so they never stall the event thread's other
 * connections. */
enum tyd_runs_on { TYD_INLINE, TYD_WORKER };

/* Who may call a row. NONE: anyone (liveness probes carry no token). PROJECT: with
 * --auth-tokens, a bearer token that grants the project named in the path. ALL: with
 * --auth-tokens, a token that grants every project ('*'), for answers that name them all.
 * TOKEN: with --auth-tokens, any valid token; the handler answers with what that token
 * grants (the projects list). */
enum tyd_auth_need { TYD_AUTH_NONE, TYD_AUTH_PROJECT, TYD_AUTH_ALL, TYD_AUTH_TOKEN };

/* The whole API, one row per method. Columns:
 *   HTTP method ("*": any); path pattern (TYD_JOBS is "/v1/projects/{project}/jobs");
 *   what it is (enum tyd_method without TYD_); handler (api-jobs*.c, api-logs.c,
 *   api-projects.c, metrics.c;
 *   NULL: answered 501); where it runs (TYD_INLINE or TYD_WORKER, see enum tyd_runs_on);
 *   who may call it (TYD_AUTH_NONE, _PROJECT, _ALL or _TOKEN, see enum tyd_auth_need).
 * Patterns: literal text, {project} (up to the next '/'), {job} (up to the next '/' or ':',
 * as a custom verb such as :cancel follows it), {asset} (a file name of the dashboard, up to
 * the next '/'); a final "/?" allows one trailing slash. An
 * id is checked (400 naming the rule) once the path matches the pattern up to it and the
 * literal text after it, to a '/' or the end of the path. A path that matches rows but none
 * of their HTTP methods gets 405 and an Allow header listing theirs, in this order.
 * A new endpoint: a row here (and a value in enum tyd_method), its handler declared in
 * daemon.h, cases in tests/unit/test-route.c. The IAM methods of ml v1 are known and
 * answered as not implemented: access is granted per project by the tokens file. */
#define TYD_JOBS "/v1/projects/{project}/jobs"
/* clang-format off */
#define TYD_API(X)                                                                            \
    X("GET",   "/healthz",                       HEALTH,        tyd_health,      INLINE, NONE)    \
    X("GET",   "/metrics",                       METRICS,       tyd_metrics,     WORKER, ALL)     \
    X("GET",   "/v1/projects/?",                 PROJECTS_LIST, tyd_projects_list, WORKER, TOKEN) \
    X("GET",   "/",                              DASHBOARD,     tyd_dashboard_page, INLINE, NONE) \
    X("GET",   "/static/{asset}",                DASHBOARD_ASSET, tyd_dashboard_asset, INLINE, NONE) \
    X("GET",   TYD_JOBS "/?",                    JOBS_LIST,     tyd_jobs_list,   WORKER, PROJECT) \
    X("POST",  TYD_JOBS "/?",                    JOBS_CREATE,   tyd_jobs_create, WORKER, PROJECT) \
    X("GET",   TYD_JOBS "/{job}",                JOBS_GET,      tyd_jobs_get,    INLINE, PROJECT) \
    X("PATCH", TYD_JOBS "/{job}",                JOBS_PATCH,    tyd_jobs_patch,  WORKER, PROJECT) \
    X("POST",  TYD_JOBS "/{job}:cancel",         JOBS_CANCEL,   tyd_jobs_cancel, WORKER, PROJECT) \
    X("GET",   TYD_JOBS "/{job}/logs",           JOBS_LOGS,     tyd_jobs_logs,   INLINE, PROJECT) \
    X("*",     TYD_JOBS "/{job}:getIamPolicy",   UNIMPLEMENTED, NULL,            INLINE, PROJECT) \
    X("*",     TYD_JOBS "/{job}:setIamPolicy",   UNIMPLEMENTED, NULL,            INLINE, PROJECT) \
    X("*",     TYD_JOBS "/{job}:testIamPermissions", UNIMPLEMENTED, NULL,        INLINE, PROJECT)
/* clang-format on */

/* One row of TYD_API without its handler (the router does not link the handlers). */
struct tyd_api_row {
    const char *http_method;
    const char *pattern;
    enum tyd_method method;
    enum tyd_runs_on runs_on;
    enum tyd_auth_need auth;
};

/* Longest project id accepted (Google's are 6-30 characters; domain-scoped ones are longer). */
#define TYD_PROJECT_MAX TY_PROJECT_ID_MAX
/* Longest job id (the service's rule). */
#define TYD_JOB_ID_MAX TY_JOB_ID_MAX
/* The longest name of a dashboard asset ("tuning-AB12CD34.js"). */
#define TYD_ASSET_MAX 64

struct tyd_route {
    enum tyd_method method;
    size_t row;                    /* index of the row in TYD_API when a row matched */
    const struct tyd_api_row *api; /* that row, or NULL */
    char project[TYD_PROJECT_MAX + 1];
    char job[TYD_JOB_ID_MAX + 1];
    char asset[TYD_ASSET_MAX + 1];
    char allow[64];   /* for TYD_BAD_METHOD: the methods the resource has ("GET, POST") */
    char detail[160]; /* for TYD_BAD_NAME, TYD_NOT_FOUND, TYD_UNIMPLEMENTED: why */
};

/* Resolve @http_method + @path into @r by the rows of TYD_API. Never fails: r->method says
 * what to answer; r->api is set for TYD_UNIMPLEMENTED and the API methods. */
void tyd_route(const char *http_method, const char *path, struct tyd_route *r);

/* The value of the hex digit @c (either case), or -1. */
int tyd_hex_digit(char c);

/* The id rules the router checks; exported for tests/unit/test-route.c and
 * fuzz/fuzz-api-request.c (the daemon itself only uses them through tyd_route). */
/* Does @id follow the job id rule (ty_job_id_ok in the job model: letters, digits and
 * underscores, starting with a letter, at most 128 characters)? */
int tyd_valid_job_id(const char *id, size_t len);
/* Does @id follow the project id rule (ty_project_id_ok in the job model, TY_PROJECT_ID_RULE)? */
int tyd_valid_project_id(const char *id, size_t len);
/* Could @name be a dashboard asset's name (1-64 of letters, digits, and - _ ., starting with
 * a letter or digit)? */
int tyd_valid_asset_name(const char *name, size_t len);

/* Does the Accept-Encoding header value @ae (NULL: none) take gzip: "gzip", "x-gzip" or "*"
 * with a weight above 0 (RFC 9110 12.5.3; "gzip;q=0" refuses it)? */
bool tyd_accepts_gzip(const char *ae);
/* Is @etag (quoted, as sent in ETag) among the If-None-Match header value @inm (NULL: none):
 * "*", or a comma-separated list of ETags, weak ones (W/"...") compared weakly as RFC 9110
 * 13.1.2 says for GET? */
bool tyd_etag_matches(const char *inm, const char *etag);
/* The ETag of a file's gzip representation, from its own @etag ("abc" -> "abc-gz"), into
 * @buf of @size: a strong validator names one representation, so a cache never takes one
 * encoding's bytes for the other's (RFC 9110 8.8.3). Returns @buf, or @etag when it does not
 * fit or is not quoted. */
const char *tyd_gzip_etag(const char *etag, char *buf, size_t size);

/* Percent-decode @s in place (the URL's path, a query parameter's name or value) and return
 * its new length; "%00" and malformed escapes are kept as written, so a decoded string never
 * holds a NUL that would cut it short (GET .../jobs/job_1%00x is not job_1: its id holds a '%'
 * and is refused). http.c gives it to libmicrohttpd as its unescape callback. */
size_t tyd_url_unescape(char *s);

/* The pageToken of jobs.list: the position after job @seq, for the jobs of @project and the
 * filter text @filter (a token is only good for the listing it was made for). Caller frees. */
char *tyd_list_token_format(int64_t seq, const char *project, const char *filter);
/* Returns 0 and *seq; -EINVAL for text that is not a token of this service, -ESTALE for a
 * token made for another project or filter. */
int tyd_list_token_parse(const char *token, const char *project, const char *filter, int64_t *seq);

#endif
