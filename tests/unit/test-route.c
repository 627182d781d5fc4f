/* SPDX-License-Identifier: Apache-2.0
 * test-route.c: trainyardd's routing (which API method a method + path names, ids checked)
 * and its list page tokens. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        {"GET", "/v1/projects/p/jobs/j:getIamPolicy", TYD_UNIMPLEMENTED, "p", "j"},
        {"POST", "/v1/projects/p/jobs/j:setIamPolicy", TYD_UNIMPLEMENTED, "p", "j"},
        {"POST", "/v1/projects/p/jobs/j:explode", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobs/j/logs/x", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobs/j/other", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/models", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p/jobsx", TYD_NOT_FOUND, "", ""},
        {"GET", "/v1/projects/p", TYD_NOT_FOUND, "", ""},
        {"GET", "/v2/projects/p/jobs", TYD_NOT_FOUND, "", ""},
        {"GET", "/", TYD_NOT_FOUND, "", ""},
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
            ok(r.allow && *r.allow, "%s %s: Allow given", c[i].method, c[i].path);
        if (c[i].want == TYD_BAD_NAME)
            ok(strstr(r.detail, "invalid") != NULL,
               "%s %s: detail says why (%s)",
               c[i].method,
               c[i].path,
               r.detail);
    }
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
    ok(!tyd_valid_project_id(long_id, 129), "project id: not 129");
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
    char *t = tyd_list_token_format(12345, "state:FAILED");
    is_int(tyd_list_token_parse(t, "state:FAILED", &seq), 0, "token: parses with its filter");
    is_int(seq, 12345, "token: gives the position back");
    is_int(tyd_list_token_parse(t, "state:RUNNING", &seq), -ESTALE, "token: other filter refused");
    is_int(tyd_list_token_parse(t, "", &seq), -ESTALE, "token: no filter refused");
    free(t);
    t = tyd_list_token_format(7, "");
    is_int(tyd_list_token_parse(t, "", &seq), 0, "token without a filter");
    free(t);
    is_int(tyd_list_token_parse("junk", "", &seq), -EINVAL, "token: junk");
    is_int(tyd_list_token_parse("", "", &seq), -EINVAL, "token: empty");
    is_int(tyd_list_token_parse("MS4wLjA", "", &seq), -EINVAL, "token: position 0 refused");
    is_int(
        tyd_list_token_parse("MS4tNS4xMjM0NTY3OA", "", &seq), -EINVAL, "token: negative refused");
    is_int(tyd_list_token_parse("MS4xLjgxMWM5ZGM1eA", "", &seq),
           -EINVAL,
           "token: trailing bytes refused");
}

int main(void)
{
    test_routes();
    test_ids();
    test_tokens();
    return done_testing();
}
