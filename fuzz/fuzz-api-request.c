/* SPDX-License-Identifier: Apache-2.0
 * fuzz-api-request.c: libFuzzer target for the request path of trainyardd, without a server.
 * The input is a request in three parts:
 *     METHOD \n PATH[?QUERY] \n BODY...
 * PATH goes through tyd_route() (route.h); the pageToken and filter of QUERY (KEY=VALUE
 * pairs joined by '&', taken as already decoded) through tyd_list_token_parse() and
 * ty_filter_parse(); BODY the way api-jobs.c takes a job: ty_json_parse ->
 * ty_spec_normalize_job -> ty_job_accept, plus the etag of jobs.patch; METHOD and PATH are
 * also read as the Accept-Encoding and If-None-Match of a dashboard file's request, and as an
 * X-HTTP-Method-Override and a Content-Type; BODY also as a tunnelled GET's form-encoded query
 * and as a gzip body (tunnel.h: decoded to at most 64 KiB). An accepted job
 * is turned into the REST Job resource (ty_job_row_to_json) and matched against the filter. Besides
 * memory errors it checks the promises of route.h: a resolved method has a valid project (and job)
 * id and the row of the API table (TYD_API) that has it, a 405 names the allowed methods, a page
 * token survives a round trip, and every failure carries a message that is valid UTF-8.
 *
 * Build: as fuzz-job-spec (see fuzz/meson.build); run:
 *        BUILD/fuzz/fuzz-api-request -max_total_time=60 -dict=fuzz/api-request.dict NEW_DIR \
 *            fuzz/corpus/api-request */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "jobfilter.h"
#include "json.h"
#include "route.h"
#include "spec.h"
#include "store.h"
#include "tunnel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond)
        abort();
}

/* A failure's message: not empty, and valid UTF-8 (the service puts it in a JSON error). */
static int message_ok(const char *msg)
{
    json_t *j = msg[0] ? json_string(msg) : NULL;
    int ok = j != NULL;
    json_decref(j);
    return ok;
}

static char *copy(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* The value of @key in a query string "k=v&k=v" (first occurrence), copied; NULL if absent. */
static char *query_value(const char *query, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=')
            return copy((const uint8_t *)p + klen + 1, len - klen - 1);
        p = amp ? amp + 1 : NULL;
    }
    return NULL;
}

static void check_route(const char *method, const char *path)
{
    struct tyd_route r;

    tyd_route(method, path, &r);
    check(strnlen(r.project, sizeof(r.project)) < sizeof(r.project));
    check(strnlen(r.job, sizeof(r.job)) < sizeof(r.job));
    check(strnlen(r.asset, sizeof(r.asset)) < sizeof(r.asset));
    check(strnlen(r.detail, sizeof(r.detail)) < sizeof(r.detail));
    check(strnlen(r.allow, sizeof(r.allow)) < sizeof(r.allow));
    /* A row is named exactly when the request names an API method (or a known, unoffered one),
     * and it is the row of that method. */
    check((r.api != NULL) == (r.method >= TYD_HEALTH || r.method == TYD_UNIMPLEMENTED));
    check(!r.api || r.api->method == r.method);
    check(r.method == TYD_BAD_METHOD || r.allow[0] == '\0');
    switch (r.method) {
    case TYD_BAD_METHOD:
        check(r.allow[0] != '\0');
        break;
    case TYD_NOT_FOUND:
    case TYD_BAD_NAME:
    case TYD_UNIMPLEMENTED:
        check(message_ok(r.detail));
        break;
    case TYD_HEALTH:
    case TYD_METRICS:
    case TYD_PROJECTS_LIST:
    case TYD_DASHBOARD:
        check(strcmp(method, "GET") == 0);
        check(r.project[0] == '\0' && r.job[0] == '\0' && r.asset[0] == '\0');
        break;
    case TYD_DASHBOARD_ASSET:
        check(strcmp(method, "GET") == 0);
        check(r.project[0] == '\0' && r.job[0] == '\0');
        check(tyd_valid_asset_name(r.asset, strlen(r.asset)));
        break;
    case TYD_JOBS_CREATE:
    case TYD_JOBS_LIST:
        check(tyd_valid_project_id(r.project, strlen(r.project)));
        check(r.job[0] == '\0');
        break;
    case TYD_JOBS_GET:
    case TYD_JOBS_PATCH:
    case TYD_JOBS_CANCEL:
    case TYD_JOBS_LOGS:
        check(tyd_valid_project_id(r.project, strlen(r.project)));
        check(tyd_valid_job_id(r.job, strlen(r.job)));
        break;
    }
}

static void check_token(const char *token, const char *filter)
{
    int64_t seq = 0, again = 0;
    char *made;
    int r;

    if (token) {
        r = tyd_list_token_parse(token, "p", filter, &seq);
        check(r == 0 || r == -EINVAL || r == -ESTALE);
        if (r == 0) {
            check(seq > 0);
            made = tyd_list_token_format(seq, "p", filter);
            check(made && tyd_list_token_parse(made, "p", filter, &again) == 0 && again == seq);
            free(made);
        }
    }
    /* Any position and filter make a token that reads back as itself. */
    seq = 1 + (int64_t)(strlen(filter) * 7919u);
    made = tyd_list_token_format(seq, "p", filter);
    check(made && tyd_list_token_parse(made, "p", filter, &again) == 0 && again == seq);
    free(made);
}

/* As jobs.create (and the body part of jobs.patch) takes a body. */
static void check_body(const char *body, size_t len, const struct ty_filter *filter)
{
    struct ty_error err = {0};
    json_t *doc = NULL, *canon = NULL;
    struct ty_job *job = NULL;
    const char *etag;
    int64_t tag;

    if (ty_json_parse(body, len, &doc, &err) < 0) {
        check(err.code != 0 && message_ok(err.msg));
        return;
    }
    if (!json_is_object(doc))
        goto out;
    if (ty_spec_normalize_job(doc, false, &canon, &err) < 0) {
        check(canon == NULL && err.code != 0 && message_ok(err.msg));
        goto out;
    }
    etag = ty_json_str(canon, "etag");
    if (etag && ty_store_etag_parse(etag, &tag) == 0) {
        char buf[32];
        int64_t back = 0;
        check(ty_store_etag_parse(ty_store_etag_format(tag, buf, sizeof(buf)), &back) == 0);
        check(back == tag);
    }
    err.code = 0;
    err.msg[0] = '\0';
    if (ty_job_accept(canon, &job, &err) < 0) {
        check(job == NULL && err.code != 0 && message_ok(err.msg));
        goto out;
    }
    check(job && job->job_id && job->training_input && job->labels);
    {
        /* The REST resource jobs.get would answer for it, and the list filter over it. */
        struct ty_job_row row = {
            .seq = 1,
            .project = (char *)"p",
            .job_id = job->job_id,
            .state = TY_STATE_QUEUED,
            .create_usec = 1,
            .error_message = (char *)"",
            .labels = job->labels,
            .training_input = job->training_input,
            .etag = 1,
            .runtime = (char *)"process",
            .sweep_key = (char *)"",
        };
        json_t *rest = ty_job_row_to_json(&row);
        check(rest && json_is_object(rest));
        check(strcmp(ty_json_str(rest, "jobId"), job->job_id) == 0);
        if (filter)
            (void)ty_filter_match(filter, rest);
        json_decref(rest);
    }
    ty_job_free(job);
out:
    json_decref(canon);
    json_decref(doc);
}

static void count_pair(void *ctx, const char *key, const char *value)
{
    /* both are strings (a NUL decoded is refused, so none cuts one short) */
    *(size_t *)ctx += strlen(key) + (value ? strlen(value) : 0);
}

/* What Google's clients tunnel (tunnel.h): the method a POST stands for, a form body, a gzip
 * body. */
static void check_tunnel(const char *header, const char *body, size_t blen)
{
    const char *m = tyd_override_method(header);
    struct ty_buf b = TY_BUF_INIT;
    size_t n = 0;
    int r;

    check(!m || strcmp(m, "HEAD") != 0);
    (void)tyd_content_type_form(header);
    if (tyd_form_parse(body, blen, count_pair, &n) == 0)
        check(n <= blen);
    ty_buf_append(&b, body, blen);
    r = tyd_decode_body("gzip", &b, 65536);
    check(r == 0 || r == -EINVAL || r == -E2BIG);
    check(r != 0 || b.len <= 65536);
    check(r == 0 || b.len == blen); /* a body that is refused is left as it was */
    ty_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl1 = memchr(data, '\n', size), *nl2;
    char *method, *target, *query, *token, *ftext, *body;
    struct ty_filter *filter = NULL;
    struct ty_error err = {0};
    size_t blen;

    if (!nl1)
        return 0;
    nl2 = memchr(nl1 + 1, '\n', size - (size_t)(nl1 + 1 - data));
    if (!nl2)
        return 0;
    method = copy(data, (size_t)(nl1 - data));
    target = copy(nl1 + 1, (size_t)(nl2 - nl1 - 1));
    blen = size - (size_t)(nl2 + 1 - data);
    /* The body in a buffer of exactly its size (no NUL), so a read past its end is caught. */
    body = malloc(blen ? blen : 1);
    if (!body)
        abort();
    memcpy(body, nl2 + 1, blen);

    check_tunnel(method, body, blen);
    /* The header values the dashboard's files are answered by (dashboard.c), any text. */
    (void)tyd_accepts_gzip(method);
    (void)tyd_etag_matches(target, "\"0123abcd\"");

    query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    check_route(method, target);
    token = query_value(query, "pageToken");
    ftext = query_value(query, "filter");
    check_token(token, ftext ? ftext : "");
    if (ty_filter_parse(ftext, &filter, &err) < 0) {
        check(filter == NULL && err.code != 0 && message_ok(err.msg));
    } else {
        (void)ty_filter_state_hint(filter);
        (void)ty_filter_id_prefix_hint(filter);
    }
    check_body(body, blen, filter);

    ty_filter_free(filter);
    free(ftext);
    free(token);
    free(body);
    free(target);
    free(method);
    return 0;
}
