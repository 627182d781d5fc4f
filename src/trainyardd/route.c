/* SPDX-License-Identifier: Apache-2.0
 * route.c: mapping a request's method and path to the API method it names (route.h). */
#include "route.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "macro.h"

int tyd_valid_job_id(const char *id, size_t len)
{
    if (len == 0 || len > TYD_JOB_ID_MAX)
        return 0;
    if (!((id[0] >= 'a' && id[0] <= 'z') || (id[0] >= 'A' && id[0] <= 'Z')))
        return 0;
    for (size_t i = 1; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

int tyd_valid_project_id(const char *id, size_t len)
{
    if (len == 0 || len > TYD_PROJECT_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_' || c == ':' || c == '~'))
            return 0;
    }
    return 1;
}

const char *tyd_method_name(enum tyd_method m)
{
    switch (m) {
    case TYD_HEALTH:
        return "healthz";
    case TYD_JOBS_CREATE:
        return "jobs.create";
    case TYD_JOBS_LIST:
        return "jobs.list";
    case TYD_JOBS_GET:
        return "jobs.get";
    case TYD_JOBS_PATCH:
        return "jobs.patch";
    case TYD_JOBS_CANCEL:
        return "jobs.cancel";
    case TYD_JOBS_LOGS:
        return "jobs.logs";
    default:
        return "unknown";
    }
}

static int is(const char *m, const char *want)
{
    return strcmp(m, want) == 0;
}

/* Choose by HTTP method among the resource's methods (NULL = not offered). */
static void pick(struct tyd_route *r,
                 const char *m,
                 enum tyd_method get,
                 enum tyd_method post,
                 enum tyd_method patch,
                 const char *allow)
{
    enum tyd_method got = TYD_BAD_METHOD;
    if (is(m, "GET") && get != TYD_NOT_FOUND)
        got = get;
    else if (is(m, "POST") && post != TYD_NOT_FOUND)
        got = post;
    else if (is(m, "PATCH") && patch != TYD_NOT_FOUND)
        got = patch;
    r->method = got;
    r->allow = got == TYD_BAD_METHOD ? allow : NULL;
}

static void bad_name(struct tyd_route *r, const char *what, const char *text, size_t len)
{
    r->method = TYD_BAD_NAME;
    if (len > 64)
        (void)snprintf(r->detail,
                       sizeof(r->detail),
                       "invalid %s '%.64s...': too long or contains characters that are not "
                       "allowed",
                       what,
                       text);
    else
        (void)snprintf(r->detail,
                       sizeof(r->detail),
                       "invalid %s '%.*s': %s",
                       what,
                       (int)len,
                       text,
                       strcmp(what, "job id") == 0
                           ? "use only letters, numbers and underscores, start with a letter, "
                             "at most 128 characters"
                           : "use only letters, numbers and - . _ : ~, at most 128 characters");
}

void tyd_route(const char *m, const char *path, struct tyd_route *r)
{
    static const char prefix[] = "/v1/projects/";
    const char *p, *slash, *job, *end, *colon;
    size_t plen, jlen;

    memset(r, 0, sizeof(*r));
    r->method = TYD_NOT_FOUND;
    if (!m || !path)
        return;
    if (strcmp(path, "/healthz") == 0) {
        pick(r, m, TYD_HEALTH, TYD_NOT_FOUND, TYD_NOT_FOUND, "GET");
        return;
    }
    if (strncmp(path, prefix, sizeof(prefix) - 1) != 0)
        goto not_found;
    p = path + sizeof(prefix) - 1;
    slash = strchr(p, '/');
    if (!slash || strncmp(slash, "/jobs", 5) != 0 || (slash[5] != '\0' && slash[5] != '/'))
        goto not_found;
    plen = (size_t)(slash - p);
    if (!tyd_valid_project_id(p, plen)) {
        bad_name(r, "project id", p, plen);
        return;
    }
    memcpy(r->project, p, plen);
    r->project[plen] = '\0';
    if (slash[5] == '\0' || (slash[5] == '/' && slash[6] == '\0')) {
        pick(r, m, TYD_JOBS_LIST, TYD_JOBS_CREATE, TYD_NOT_FOUND, "GET, POST");
        return;
    }
    job = slash + 6;
    end = strchr(job, '/');
    colon = strchr(job, ':');
    if (colon && end && colon > end)
        colon = NULL;
    jlen = colon ? (size_t)(colon - job) : end ? (size_t)(end - job) : strlen(job);
    if (!tyd_valid_job_id(job, jlen)) {
        bad_name(r, "job id", job, jlen);
        return;
    }
    memcpy(r->job, job, jlen);
    r->job[jlen] = '\0';
    if (colon) {
        const char *verb = colon + 1;
        if (end)
            goto not_found;
        if (strcmp(verb, "cancel") == 0) {
            pick(r, m, TYD_NOT_FOUND, TYD_JOBS_CANCEL, TYD_NOT_FOUND, "POST");
            return;
        }
        if (strcmp(verb, "getIamPolicy") == 0 || strcmp(verb, "setIamPolicy") == 0 ||
            strcmp(verb, "testIamPermissions") == 0) {
            r->method = TYD_UNIMPLEMENTED;
            (void)snprintf(r->detail,
                           sizeof(r->detail),
                           "%s is not supported by trainyard: access is granted per project "
                           "by the daemon's --auth-tokens file",
                           verb);
            return;
        }
        goto not_found;
    }
    if (!end) {
        pick(r, m, TYD_JOBS_GET, TYD_NOT_FOUND, TYD_JOBS_PATCH, "GET, PATCH");
        return;
    }
    if (strcmp(end, "/logs") == 0) {
        pick(r, m, TYD_JOBS_LOGS, TYD_NOT_FOUND, TYD_NOT_FOUND, "GET");
        return;
    }
not_found:
    r->method = TYD_NOT_FOUND;
    r->project[0] = r->job[0] = '\0';
    (void)snprintf(r->detail, sizeof(r->detail), "no API method at this URL");
}

/* A page token: base64url of "1.<seq>.<hash of the filter>", so a token is only good for
 * the filter it was made with. */
static uint32_t text_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

char *tyd_list_token_format(int64_t seq, const char *filter)
{
    char raw[64];
    int n = snprintf(raw, sizeof(raw), "1.%lld.%08x", (long long)seq, text_hash(filter));
    return ty_base64_encode(raw, (size_t)n, true);
}

int tyd_list_token_parse(const char *tok, const char *filter, int64_t *seq)
{
    _cleanup_free_ unsigned char *raw = NULL;
    size_t len;
    long long s;
    unsigned h;
    int used = 0;

    if (strlen(tok) > 64 || ty_base64_decode(tok, true, &raw, &len) < 0)
        return -EINVAL;
    if (sscanf((char *)raw, "1.%lld.%8x%n", &s, &h, &used) != 2 || (size_t)used != len || s <= 0)
        return -EINVAL;
    if (h != text_hash(filter))
        return -ESTALE;
    *seq = s;
    return 0;
}
