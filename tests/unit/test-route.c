/* SPDX-License-Identifier: Apache-2.0
 * test-route.c: trainyardd's routing (which API method a method + path names, ids checked)
 * and its list page tokens. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "route.h"
#include "tap.h"

struct rcase {
    const char *method, *path;
    enum tyd_method want;
    const char *project, *job;
};

static void test_routes(void)
{
    static const struct rcase c[] = {
        {"POST", "/v1/projects/p1/jobs", TYD_JOBS_CREATE, "p1", ""},
        {"GET", "/v1/projects/p1/jobs", TYD_JOBS_LIST, "p1", ""},
        {"GET", "/v1/projects/p1/jobs/", TYD_JOBS_LIST, "p1", ""},
        {"GET", "/v1/projects/my-proj.x:y/jobs/job_1", TYD_JOBS_GET, "my-proj.x:y", "job_1"},
        {"PATCH", "/v1/projects/p/jobs/j", TYD_JOBS_PATCH, "p", "j"},
        {"POST", "/v1/projects/p/jobs/j:cancel", TYD_JOBS_CANCEL, "p", "j"},
        {"GET", "/v1/projects/p/jobs/j/logs", TYD_JOBS_LOGS, "p", "j"},
        {"GET", "/healthz", TYD_HEALTH, "", ""},
        {"DELETE", "/v1/projects/p/jobs/j", TYD_BAD_METHOD, "p", "j"},
        {"GET", "/v1/projects/p/jobs/j:cancel", TYD_BAD_METHOD, "p", "j"},
        {"PUT", "/v1/projects/p/jobs", TYD_BAD_METHOD, "p", ""},
        {"POST", "/healthz", TYD_BAD_METHOD, "", ""},
        {"GET", "/metrics", TYD_METRICS, "", ""},
        {"POST", "/metrics", TYD_BAD_METHOD, "", ""},
        {"GET", "/metrics/", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects", TYD_PROJECTS_LIST, "", ""},
        {"GET", "/v1/projects/", TYD_PROJECTS_LIST, "", ""},
        {"POST", "/v1/projects", TYD_BAD_METHOD, "", ""},
        {"GET", "/v1/projects/p", TYD_NOT_FOUND, "", ""},
        {"GET", "/", TYD_DASHBOARD, "", ""},
        {"POST", "/", TYD_BAD_METHOD, "", ""},
        {"GET", "/static/app-AB12CD34.js", TYD_DASHBOARD_ASSET, "", ""},
        {"GET", "/static/", TYD_BAD_NAME, "", ""},
        {"GET", "/static/a/b.js", TYD_NOT_FOUND, "", ""},
        {"GET", "/static/..", TYD_BAD_NAME, "", ""},
        {"GET", "/static/.hidden", TYD_BAD_NAME, "", ""},
        {"GET", "/index.html", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobs/j:getIamPolicy", TYD_UNIMPLEMENTED, "p", "j"},
        {"POST", "/v1/projects/p/jobs/j:setIamPolicy", TYD_UNIMPLEMENTED, "p", "j"},
        {"POST", "/v1/projects/p/jobs/j:explode", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobs/j/logs/x", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobs/j/other", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/models", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobsx", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p", TYD_NOT_FOUND, "", ""},
        {"GET", "/v2/projects/p/jobs", TYD_NOT_FOUND, "", ""},

        {"GET", "", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobs/9job", TYD_BAD_NAME, "p", ""},
        {"GET", "/v1/projects/p/jobs/job-1", TYD_BAD_NAME, "p", ""},
        {"GET", "/v1/projects/p/jobs/j%20b", TYD_BAD_NAME, "p", ""},
        {"GET", "/v1/projects/p q/jobs", TYD_BAD_NAME, "", ""},
        {"GET", "/v1/projects//jobs", TYD_BAD_NAME, "", ""},
        {"POST", "/v1/projects/p/jobs/:cancel", TYD_BAD_NAME, "p", ""},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct tyd_route r;
        tyd_route(c[i].method, c[i].path, &r);
        is_int(r.method, c[i].want, "%s %s: method", c[i].method, c[i].path);
        is_str(r.project, c[i].project, "%s %s: project", c[i].method, c[i].path);
        is_str(r.job, c[i].job, "%s %s: job", c[i].method, c[i].path);
        if (c[i].want == TYD_BAD_METHOD)
            ok(r.allow[0] != '\0', "%s %s: Allow given (%s)", c[i].method, c[i].path, r.allow);
        if (c[i].want == TYD_BAD_NAME)
            ok(strstr(r.detail, "invalid") != NULL,
               "%s %s: detail says why (%s)",
               c[i].method,
               c[i].path,
               r.detail);
    }
}

/* What the API table (TYD_API) says of each method: its row, where it runs, who may call it,
 * and the Allow header of a resource. */
static void test_table(void)
{
    static const struct {
        const char *method, *path;
        enum tyd_method want;
        enum tyd_runs_on runs_on;
        enum tyd_auth_need auth;
    } c[] = {
        {"GET", "/healthz", TYD_HEALTH, TYD_INLINE, TYD_AUTH_NONE},
        {"GET", "/metrics", TYD_METRICS, TYD_WORKER, TYD_AUTH_ALL},
        {"GET", "/v1/projects", TYD_PROJECTS_LIST, TYD_WORKER, TYD_AUTH_TOKEN},
        {"GET", "/", TYD_DASHBOARD, TYD_INLINE, TYD_AUTH_NONE},
        {"GET", "/static/app.js", TYD_DASHBOARD_ASSET, TYD_INLINE, TYD_AUTH_NONE},
        {"POST", "/v1/projects/p/jobs", TYD_JOBS_CREATE, TYD_WORKER, TYD_AUTH_PROJECT},
        {"GET", "/v1/projects/p/jobs", TYD_JOBS_LIST, TYD_WORKER, TYD_AUTH_PROJECT},
        {"GET", "/v1/projects/p/jobs/j", TYD_JOBS_GET, TYD_INLINE, TYD_AUTH_PROJECT},
        {"PATCH", "/v1/projects/p/jobs/j", TYD_JOBS_PATCH, TYD_WORKER, TYD_AUTH_PROJECT},
        {"POST", "/v1/projects/p/jobs/j:cancel", TYD_JOBS_CANCEL, TYD_WORKER, TYD_AUTH_PROJECT},
        {"GET", "/v1/projects/p/jobs/j/logs", TYD_JOBS_LOGS, TYD_INLINE, TYD_AUTH_PROJECT},
        {"POST",
         "/v1/projects/p/jobs/j:testIamPermissions",
         TYD_UNIMPLEMENTED,
         TYD_INLINE,
         TYD_AUTH_PROJECT},
    };
    struct tyd_route r;

    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        tyd_route(c[i].method, c[i].path, &r);
        if (!ok(r.api != NULL, "%s %s: has a row", c[i].method, c[i].path))
            continue;
        is_int(r.api->method, c[i].want, "%s %s: row's method", c[i].method, c[i].path);
        is_int(r.api->runs_on, c[i].runs_on, "%s %s: runs on", c[i].method, c[i].path);
        is_int(r.api->auth, c[i].auth, "%s %s: auth", c[i].method, c[i].path);
    }
    tyd_route("DELETE", "/v1/projects/p/jobs", &r);
    is_str(r.allow, "GET, HEAD, POST", "jobs collection: Allow");
    ok(r.api == NULL, "a 405 names no row");
    tyd_route("PUT", "/v1/projects/p/jobs/j", &r);
    is_str(r.allow, "GET, HEAD, PATCH", "a job: Allow");
    tyd_route("GET", "/v1/projects/p/jobs/j:cancel", &r);
    is_str(r.allow, "POST", "cancel: Allow");
    /* HEAD: what GET answers, but a log stream */
    tyd_route("HEAD", "/healthz", &r);
    is_int(r.method, TYD_HEALTH, "HEAD /healthz");
    tyd_route("HEAD", "/static/app-1.js", &r);
    is_int(r.method, TYD_DASHBOARD_ASSET, "HEAD of a dashboard file");
    tyd_route("HEAD", "/v1/projects/p/jobs/j", &r);
    is_int(r.method, TYD_JOBS_GET, "HEAD of a job");
    tyd_route("HEAD", "/v1/projects/p/jobs/j/logs", &r);
    ok(r.method == TYD_BAD_METHOD && strcmp(r.allow, "GET") == 0, "no HEAD of a log (%s)", r.allow);
    tyd_route("HEAD", "/v1/projects/p/jobs/j:cancel", &r);
    is_int(r.method, TYD_BAD_METHOD, "no HEAD of a POST");
    tyd_route("GET", "/v1/projects/p/jobs/j:getIamPolicy", &r);
    ok(strstr(r.detail, "getIamPolicy is not supported") != NULL, "IAM: detail (%s)", r.detail);
    tyd_route("GET", "/v1/projects/p/jobs/j", &r);
    is_str(r.allow, "", "no Allow for a method that matched");
    tyd_route("POST", "/v1/projects/p/jobs", &r);
    is_str(r.allow, "", "no Allow for a method that matched after another row");
    tyd_route("GET", "/v1/projects/p q/jobsx", &r);
    is_int(r.method, TYD_NOT_FOUND, "a bad project id before an unknown collection: 404");
    tyd_route("GET", "/v1/projects/p q/jobs:x", &r);
    is_int(r.method, TYD_NOT_FOUND, "a bad project id before jobs:x: 404");
    tyd_route("GET", "/v1/projects/p/jobs/9job/anything", &r);
    is_int(r.method, TYD_BAD_NAME, "a bad job id before an unknown part: 400");
    tyd_route("GET", "/v1/projects/p/jobs/j/", &r);
    is_int(r.method, TYD_NOT_FOUND, "a job with a trailing slash: 404");
    tyd_route("GET", "/healthz/", &r);
    is_int(r.method, TYD_NOT_FOUND, "healthz with a trailing slash: 404");
    tyd_route("GET", "/v1/projects/p/jobs/j:cancel/x", &r);
    is_int(r.method, TYD_NOT_FOUND, "a verb with a path after it: 404");
}

static void test_ids(void)
{
    char long_id[200];
    memset(long_id, 'a', sizeof(long_id));
    ok(tyd_valid_job_id("a", 1), "job id: one letter");
    ok(tyd_valid_job_id("A_1_b", 5), "job id: letters, digits, underscores");
    ok(!tyd_valid_job_id("_a", 2), "job id: must start with a letter");
    ok(!tyd_valid_job_id("a-b", 3), "job id: no hyphen");
    ok(tyd_valid_job_id(long_id, 128), "job id: 128 characters");
    ok(!tyd_valid_job_id(long_id, 129), "job id: not 129");
    ok(!tyd_valid_job_id("", 0), "job id: not empty");
    ok(tyd_valid_project_id("example.com:proj-1", 18), "project id: domain-scoped");
    ok(!tyd_valid_project_id("a/b", 3), "project id: no slash");
    ok(!tyd_valid_project_id("..", 2), "project id: not .. (it names a directory)");
    ok(!tyd_valid_project_id(".", 1), "project id: not .");
    ok(!tyd_valid_project_id(".x", 2), "project id: not starting with a dot");
    ok(!tyd_valid_project_id("-x", 2), "project id: not starting with a hyphen");
    ok(tyd_valid_project_id("7up", 3), "project id: may start with a digit");
    ok(tyd_valid_project_id("a..b", 4), "project id: dots inside");
    ok(!tyd_valid_project_id(long_id, 129), "project id: not 129");
    ok(tyd_valid_project_id(long_id, 128), "project id: 128 characters");
    ok(!tyd_valid_project_id("a b", 3), "project id: no blank");
    ok(!tyd_valid_project_id(" ", 1), "project id: not a blank alone");
    ok(!tyd_valid_project_id("caf\xc3\xa9", 5), "project id: ASCII only");
    ok(!tyd_valid_project_id("a\0b", 3), "project id: no NUL inside");
    {
        /* the job model's form, which the CLI checks a project with before sending it */
        struct ty_error e = {0};
        ok(ty_validate_project_id("p-1", "--project", &e) == 0, "project id: valid, no error");
        is_int(ty_validate_project_id("a/b", "--project", &e), -EINVAL, "project id: invalid");
        is_str(e.msg,
               "--project: invalid project id 'a/b': " TY_PROJECT_ID_RULE,
               "project id: the message names the field and the rule");
        ty_validate_project_id("a\x1b[2Jb", "--project", &e);
        like(
            e.msg, "invalid project id 'a?[2Jb'", "project id: no terminal control in the message");
    }
    long_id[199] = '\0';
    {
        char path[300];
        struct tyd_route r;
        (void)snprintf(path, sizeof(path), "/v1/projects/p/jobs/%s", long_id);
        tyd_route("GET", path, &r);
        is_int(r.method, TYD_BAD_NAME, "a 199-character job id is a bad name");
        ok(strstr(r.detail, "too long") != NULL, "and the detail says so");
    }
}

static void test_tokens(void)
{
    int64_t seq = 0;
    char *t = tyd_list_token_format(12345, "p", "state:FAILED");
    is_int(tyd_list_token_parse(t, "p", "state:FAILED", &seq), 0, "token: parses with its filter");
    is_int(seq, 12345, "token: gives the position back");
    is_int(tyd_list_token_parse(t, "p", "state:RUNNING", &seq),
           -ESTALE,
           "token: other filter refused");
    is_int(tyd_list_token_parse(t, "p", "", &seq), -ESTALE, "token: no filter refused");
    is_int(tyd_list_token_parse(t, "p2", "state:FAILED", &seq),
           -ESTALE,
           "token: another project refused");
    is_int(tyd_list_token_parse(t, "ps", "tate:FAILED", &seq),
           -ESTALE,
           "token: the project and the filter are not run together");
    free(t);
    t = tyd_list_token_format(7, "p", "");
    is_int(tyd_list_token_parse(t, "p", "", &seq), 0, "token without a filter");
    free(t);
    is_int(tyd_list_token_parse("junk", "p", "", &seq), -EINVAL, "token: junk");
    is_int(tyd_list_token_parse("", "p", "", &seq), -EINVAL, "token: empty");
    is_int(tyd_list_token_parse("MS4wLjA", "p", "", &seq), -EINVAL, "token: position 0 refused");
    is_int(tyd_list_token_parse("MS4tNS4xMjM0NTY3OA", "p", "", &seq),
           -EINVAL,
           "token: negative refused");
    is_int(tyd_list_token_parse("MS4xLjgxMWM5ZGM1eA", "p", "", &seq),
           -EINVAL,
           "token: trailing bytes refused");
}

/* The unescape callback keeps %00 (no NUL cuts a path short) and decodes the rest; a crafted
 * id is quoted in printable ASCII. */
static void test_unescape(void)
{
    static const struct {
        const char *in, *want;
    } c[] = {
        {"/v1/projects/p/jobs/j%5F1", "/v1/projects/p/jobs/j_1"},
        {"/v1/projects/p/jobs/j%00x", "/v1/projects/p/jobs/j%00x"},
        {"a%2Fb%2e%2E", "a/b.."},
        {"%", "%"},
        {"%4", "%4"},
        {"%zz%C3%B6", "%zz\xc3\xb6"},
        {"", ""},
    };
    struct tyd_route r;

    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        char buf[64];
        size_t n;
        (void)snprintf(buf, sizeof(buf), "%s", c[i].in);
        n = tyd_url_unescape(buf);
        is_str(buf, c[i].want, "unescape '%s'", c[i].in);
        is_int(n, strlen(c[i].want), "unescape '%s': its length", c[i].in);
    }
    tyd_route("GET", "/v1/projects/p/jobs/j%00x", &r);
    is_int(r.method, TYD_BAD_NAME, "a job id with %%00 kept is refused, not cut to 'j'");
    tyd_route("GET", "/v1/projects/p/jobs/j\xff\x01", &r);
    is_int(r.method, TYD_BAD_NAME, "bytes that are not ASCII in a job id");
    is_str(r.detail,
           "invalid job id 'j?"
           "?': use only letters, numbers and underscores, start with a "
           "letter, at most 128 characters",
           "are quoted as '?'");
}

/* The headers of the dashboard's answers: gzip when accepted, 304 when the ETag is current. */
static void test_dashboard_headers(void)
{
    static const struct {
        const char *ae;
        bool gzip;
    } ae[] = {
        {NULL, false},
        {"", false},
        {"gzip", true},
        {"gzip, deflate, br, zstd", true},
        {"deflate, br", false},
        {"br;q=1.0, GZIP;q=0.5", true},
        {"gzip;q=0", false},
        {"gzip; q=0.000", false},
        {"gzip;q=0.001", true},
        {"x-gzip", true},
        {"*", true},
        {"*;q=0", false},
        {"gzipx, xgzip", false},
        {" , ,gzip", true},
        {"identity", false},
    };
    static const struct {
        const char *inm;
        bool match;
    } inm[] = {
        {NULL, false},
        {"", false},
        {"\"abc\"", true},
        {"*", true},
        {"\"x\", \"abc\"", true},
        {"W/\"abc\"", true},
        {"\"abcd\"", false},
        {"\"ab\"", false},
        {"abc", false},
        {"\"x\",\"y\"", false},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(ae); i++)
        ok(tyd_accepts_gzip(ae[i].ae) == ae[i].gzip,
           "Accept-Encoding '%s': gzip %s",
           ae[i].ae ? ae[i].ae : "(none)",
           ae[i].gzip ? "yes" : "no");
    for (size_t i = 0; i < TY_ARRAY_SIZE(inm); i++)
        ok(tyd_etag_matches(inm[i].inm, "\"abc\"") == inm[i].match,
           "If-None-Match '%s': %s",
           inm[i].inm ? inm[i].inm : "(none)",
           inm[i].match ? "current" : "not current");
    {
        char buf[16];
        is_str(tyd_gzip_etag("\"abc\"", buf, sizeof(buf)), "\"abc-gz\"", "gzip's ETag differs");
        ok(!tyd_etag_matches("\"abc\"", tyd_gzip_etag("\"abc\"", buf, sizeof(buf))),
           "the identity ETag does not validate the gzip representation");
        is_str(tyd_gzip_etag("\"0123456789ab\"", buf, sizeof(buf)),
               "\"0123456789ab\"",
               "one that does not fit is left as it is");
    }
}

int main(void)
{
    test_unescape();
    test_routes();
    test_table();
    test_ids();
    test_tokens();
    test_dashboard_headers();
    return done_testing();
}
