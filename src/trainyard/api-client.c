/* SPDX-License-Identifier: Apache-2.0
 * api-client.c: the CLI's HTTP client of trainyardd (libcurl easy interface): JSON calls
 * with gcloud-style error messages, and the line-by-line streaming GET of
 * `logs?follow=true`. Its settings are resolved by api-settings.c. */
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "api-client-int.h"
#include "json.h"
#include "linesplit.h"
#include "macro.h"
#include "ty-config.h"

/* Replies larger than this are refused: a page of 100 jobs is well under 1 MiB. */
#define REPLY_MAX_BYTES (64u * 1024 * 1024)
/* Error bodies are kept up to this size. */
#define ERROR_BODY_MAX    (64u * 1024)
#define CONNECT_TIMEOUT_S 10L
#define CALL_TIMEOUT_S    300L

int api_client_new(const struct api_settings *flags, struct api_client **ret, struct ty_error *err)
{
    static const struct api_settings none = {0};
    struct api_client *c = xcalloc(1, sizeof(*c));
    CURLcode rc;
    int r;

    r = api_resolve_settings(c, flags ? flags : &none, err);
    if (r < 0) {
        api_client_free(c);
        return r;
    }
    rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        api_client_free(c);
        return ty_error_set(err, EIO, "cannot initialise libcurl: %s", curl_easy_strerror(rc));
    }
    c->curl = curl_easy_init();
    if (!c->curl) {
        api_client_free(c);
        return ty_error_set(err, ENOMEM, "cannot initialise libcurl: no easy handle");
    }
    *ret = c;
    return 0;
}

void api_client_free(struct api_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->endpoint);
    free(c->endpoint_source);
    free(c->ca_file);
    free(c->ca_file_source);
    free(c->project);
    if (c->token) {
        explicit_bzero(c->token, strlen(c->token));
        free(c->token);
    }
    free(c);
}

/* ---- URLs ----------------------------------------------------------------------------------- */

char *api_escape(const char *s)
{
    /* libcurl escapes all but the unreserved characters (A-Z a-z 0-9 - . _ ~), as RFC 3986. */
    char *e = curl_easy_escape(NULL, s, 0);
    char *copy;

    if (!e)
        abort(); /* out of memory, as the x* allocators */
    copy = xstrdup(e);
    curl_free(e);
    return copy;
}

char *api_jobs_path(const struct api_client *c, const char *job_id, const char *suffix)
{
    _cleanup_free_ char *project = api_escape(c->project);
    _cleanup_free_ char *job = job_id ? api_escape(job_id) : NULL;

    return xasprintf("/v1/projects/%s/jobs%s%s%s",
                     project,
                     job ? "/" : "",
                     job ? job : "",
                     suffix ? suffix : "");
}

void api_query_add(struct ty_buf *b, const char *name, const char *value)
{
    _cleanup_free_ char *v = NULL;

    if (!value)
        return;
    v = api_escape(value);
    ty_buf_printf(b, "%c%s=%s", strchr(ty_buf_str(b), '?') ? '&' : '?', name, v);
}

/* ---- transfers ------------------------------------------------------------------------------ */

struct transfer {
    struct api_client *c;
    struct ty_buf body; /* the reply (calls) or the error body (streams) */
    size_t max;
    bool too_big;
    /* streaming */
    api_line_fn fn;
    void *ctx;
    struct ty_linesplit ls;
    int fn_result;
    struct ty_error *err;
    long status;        /* streams: the reply's HTTP status, read at its first bytes */
    CURLcode status_rc; /* streams: why the status could not be read */
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *data)
{
    struct transfer *t = data;
    size_t n = size * nmemb;

    if (t->body.len + n > t->max) {
        t->too_big = true;
        return 0;
    }
    ty_buf_append(&t->body, p, n);
    return n;
}

static void on_line(void *data, const char *line, size_t len)
{
    struct transfer *t = data;
    if (t->fn_result < 0)
        return;
    t->fn_result = t->fn(t->ctx, line, len, t->err);
}

static size_t on_stream(char *p, size_t size, size_t nmemb, void *data)
{
    struct transfer *t = data;
    size_t n = size * nmemb;

    if (t->status == 0) {
        t->status_rc = curl_easy_getinfo(t->c->curl, CURLINFO_RESPONSE_CODE, &t->status);
        if (t->status_rc != CURLE_OK)
            return 0; /* stops the transfer; api_stream_lines reports it */
    }
    if (t->status < 200 || t->status > 299) {
        /* an error body: keep (the start of) it for the message */
        if (t->body.len < ERROR_BODY_MAX)
            ty_buf_append(
                &t->body, p, n < ERROR_BODY_MAX - t->body.len ? n : ERROR_BODY_MAX - t->body.len);
        return n;
    }
    ty_linesplit_feed(&t->ls, p, n, on_line, t);
    return t->fn_result < 0 ? 0 : n;
}

static int status_errno(const char *status, long http)
{
    static const struct {
        const char *name;
        int err;
    } map[] = {
        {"NOT_FOUND", ENOENT},
        {"ALREADY_EXISTS", EEXIST},
        {"ABORTED", ESTALE},
        {"INVALID_ARGUMENT", EINVAL},
        {"FAILED_PRECONDITION", EINVAL},
        {"OUT_OF_RANGE", EINVAL},
        {"UNAUTHENTICATED", EACCES},
        {"PERMISSION_DENIED", EPERM},
        {"UNAVAILABLE", EAGAIN},
        {"RESOURCE_EXHAUSTED", EAGAIN},
    };
    if (status)
        for (size_t i = 0; i < TY_ARRAY_SIZE(map); i++)
            if (strcmp(status, map[i].name) == 0)
                return map[i].err;
    switch (http) {
    case 400:
        return EINVAL;
    case 401:
        return EACCES;
    case 403:
        return EPERM;
    case 404:
        return ENOENT;
    case 409:
        return EEXIST;
    case 413:
        return E2BIG;
    case 429:
    case 503:
        return EAGAIN;
    default:
        return EIO;
    }
}

/* The message of a non-2xx reply: "STATUS: message" from a Google error body, else the HTTP
 * status and the start of the body. */
static int
http_error(struct api_client *c, long http, const struct ty_buf *body, struct ty_error *err)
{
    _cleanup_json_ json_t *j = NULL;
    const char *text = ty_buf_str(body);
    json_t *e;

    j = json_loadb(text, body->len, 0, NULL);
    e = json_object_get(j, "error");
    if (json_is_object(e)) {
        const char *status = ty_json_str(e, "status");
        const char *msg = ty_json_str(e, "message");
        if (status && *status)
            return ty_error_set(err, status_errno(status, http), "%s: %s", status, msg ? msg : "");
        return ty_error_set(
            err, status_errno(NULL, http), "HTTP %ld: %s", http, msg ? msg : "(no message)");
    }
    if (body->len == 0)
        return ty_error_set(
            err, status_errno(NULL, http), "HTTP %ld from %s (empty reply)", http, c->endpoint);
    /* not JSON: a proxy page or another server; show its first line */
    size_t n = strcspn(text, "\r\n");
    return ty_error_set(err,
                        status_errno(NULL, http),
                        "HTTP %ld from %s: %.*s%s",
                        http,
                        c->endpoint,
                        (int)(n > 200 ? 200 : n),
                        text,
                        n > 200 ? "..." : "");
}

volatile sig_atomic_t api_interrupted;

/* curl's progress callback, at least once a second: non-zero abandons the transfer. */
static int check_interrupted(
    void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    return api_interrupted != 0;
}

/* A transfer (curl_easy_perform) failed with @rc; @detail is curl's error buffer. The
 * message names the request and the endpoint. */
static int curl_failure(struct api_client *c,
                        const char *method,
                        const char *path_query,
                        CURLcode rc,
                        const char *detail,
                        struct ty_error *err)
{
    const char *what = *detail ? detail : curl_easy_strerror(rc);

    switch (rc) {
    case CURLE_ABORTED_BY_CALLBACK:
        return ty_error_set(err, EINTR, "%s %s%s: interrupted", method, c->endpoint, path_query);
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return ty_error_set(err,
                            rc == CURLE_COULDNT_CONNECT ? ECONNREFUSED : EHOSTUNREACH,
                            "cannot connect to trainyardd at %s (%s): %s. Is trainyardd "
                            "running? Set the endpoint with --api-endpoint, "
                            "TRAINYARD_API_ENDPOINT or api_endpoint in the config file",
                            c->endpoint,
                            c->endpoint_source,
                            what);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        return ty_error_set(err,
                            EPROTO,
                            "the TLS certificate of trainyardd at %s could not be verified "
                            "(%s%s): %s. For a self-signed or private CA, name its certificate "
                            "with custom_ca_certs_file in the config file or "
                            "TRAINYARD_CUSTOM_CA_CERTS_FILE",
                            c->endpoint,
                            c->ca_file ? "CA file from " : "the system's CA certificates",
                            c->ca_file ? c->ca_file_source : "",
                            what);
    case CURLE_SSL_CONNECT_ERROR:
        return ty_error_set(err,
                            EPROTO,
                            "no TLS connection to trainyardd at %s (%s): %s. Does it serve "
                            "HTTPS (trainyardd --tls-cert)? Use http:// if it does not",
                            c->endpoint,
                            c->endpoint_source,
                            what);
    case CURLE_OPERATION_TIMEDOUT:
        return ty_error_set(err,
                            ETIMEDOUT,
                            "no reply from trainyardd at %s to %s %s in time: %s",
                            c->endpoint,
                            method,
                            path_query,
                            what);
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        return ty_error_set(err,
                            ECONNRESET,
                            "the connection to trainyardd at %s broke off (%s %s): %s",
                            c->endpoint,
                            method,
                            path_query,
                            what);
    default:
        return ty_error_set(err,
                            rc == CURLE_OUT_OF_MEMORY ? ENOMEM : EIO,
                            "%s %s%s failed: %s",
                            method,
                            c->endpoint,
                            path_query,
                            what);
    }
}

/* One request being set up: every curl_easy_setopt result is kept, and the first failure
 * (which option, and curl's code) is reported by request_check. */
struct request {
    CURL *curl;
    CURLcode rc;
    const char *failed; /* the option that could not be set */
    struct curl_slist *headers;
    char errbuf[CURL_ERROR_SIZE];
};

/* Set @opt to @val unless an earlier option failed. */
#define SETOPT(q, opt, val)                                                                        \
    do {                                                                                           \
        if ((q)->rc == CURLE_OK) {                                                                 \
            (q)->rc = curl_easy_setopt((q)->curl, opt, val);                                       \
            if ((q)->rc != CURLE_OK)                                                               \
                (q)->failed = #opt;                                                                \
        }                                                                                          \
    } while (0)

static void header_add(struct request *q, const char *line)
{
    struct curl_slist *h = curl_slist_append(q->headers, line);
    if (!h)
        abort(); /* out of memory, as the x* allocators */
    q->headers = h;
}

/* Set up @q for @method on @path_query with @body (NULL: none); the caller adds the write
 * callback, then checks with request_check and frees with request_release. */
static void request_setup(struct api_client *c,
                          struct request *q,
                          const char *method,
                          const char *path_query,
                          const char *body)
{
    _cleanup_free_ char *url = xasprintf("%s%s", c->endpoint, path_query);

    q->curl = c->curl;
    q->errbuf[0] = '\0';
    curl_easy_reset(c->curl);
    SETOPT(q, CURLOPT_ERRORBUFFER, q->errbuf);
    SETOPT(q, CURLOPT_URL, url);
    SETOPT(q, CURLOPT_NOSIGNAL, 1L);
    SETOPT(q, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    SETOPT(q, CURLOPT_TCP_KEEPALIVE, 1L);
    SETOPT(q, CURLOPT_XFERINFOFUNCTION, check_interrupted);
    SETOPT(q, CURLOPT_NOPROGRESS, 0L);
    SETOPT(q, CURLOPT_USERAGENT, "trainyard/" TY_VERSION);
    SETOPT(q, CURLOPT_PROTOCOLS_STR, "http,https");
    /* https:// is always verified (curl's default, said again here): peer and host name */
    SETOPT(q, CURLOPT_SSL_VERIFYPEER, 1L);
    SETOPT(q, CURLOPT_SSL_VERIFYHOST, 2L);
    if (c->ca_file)
        SETOPT(q, CURLOPT_CAINFO, c->ca_file);
    header_add(q, "Accept: application/json");
    header_add(q, "Expect:"); /* no 100-continue round trip */
    if (c->token) {
        _cleanup_free_ char *auth = xasprintf("Authorization: Bearer %s", c->token);
        header_add(q, auth);
        explicit_bzero(auth, strlen(auth));
    }
    if (body) {
        header_add(q, "Content-Type: application/json");
        SETOPT(q, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        SETOPT(q, CURLOPT_COPYPOSTFIELDS, body);
    }
    if (strcmp(method, "GET") == 0)
        SETOPT(q, CURLOPT_HTTPGET, 1L);
    else if (strcmp(method, "POST") != 0 || !body)
        SETOPT(q, CURLOPT_CUSTOMREQUEST, method);
    SETOPT(q, CURLOPT_HTTPHEADER, q->headers);
}

/* Returns 0 when every option was set, else -errno with err naming the request, the option
 * and curl's reason. */
static int request_check(struct api_client *c,
                         const struct request *q,
                         const char *method,
                         const char *path_query,
                         struct ty_error *err)
{
    if (q->rc == CURLE_OK)
        return 0;
    return ty_error_set(err,
                        q->rc == CURLE_OUT_OF_MEMORY ? ENOMEM : EINVAL,
                        "cannot set up %s %s%s: %s: %s",
                        method,
                        c->endpoint,
                        path_query,
                        q->failed,
                        curl_easy_strerror(q->rc));
}

static void request_release(struct request *q)
{
    curl_slist_free_all(q->headers);
    q->headers = NULL;
}

/* The HTTP status of the finished transfer into *@http. Returns 0, or -EPROTO with err when
 * curl has none. */
static int response_status(struct api_client *c,
                           const char *method,
                           const char *path_query,
                           long *http,
                           struct ty_error *err)
{
    CURLcode rc = curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, http);

    if (rc != CURLE_OK)
        return ty_error_set(err,
                            EPROTO,
                            "%s %s%s: cannot read the HTTP status: %s",
                            method,
                            c->endpoint,
                            path_query,
                            curl_easy_strerror(rc));
    if (*http < 100 || *http > 599)
        return ty_error_set(err,
                            EPROTO,
                            "%s %s%s: the reply has no valid HTTP status (%ld)",
                            method,
                            c->endpoint,
                            path_query,
                            *http);
    return 0;
}

/* The reply body of a 2xx call as JSON ({} when empty). Returns 0 and *ret, or -EPROTO. */
static int
parse_reply(struct api_client *c, const struct ty_buf *body, json_t **ret, struct ty_error *err)
{
    json_error_t je;

    if (body->len == 0 || strspn(ty_buf_str(body), " \t\r\n") == body->len) {
        *ret = json_object();
        return 0;
    }
    *ret = json_loadb(ty_buf_str(body), body->len, JSON_REJECT_DUPLICATES, &je);
    if (!*ret)
        return ty_error_set(err,
                            EPROTO,
                            "the reply from %s is not valid JSON (line %d column %d: %s)",
                            c->endpoint,
                            je.line,
                            je.column,
                            je.text);
    return 0;
}

int api_call(struct api_client *c,
             const char *method,
             const char *path_query,
             const json_t *body,
             json_t **ret,
             struct ty_error *err)
{
    struct transfer t = {.c = c, .max = REPLY_MAX_BYTES};
    _cleanup_free_ char *text = body ? ty_json_compact(body) : NULL;
    struct request q = {0};
    CURLcode rc;
    long http = 0;
    int r;

    *ret = NULL;
    if (!text && strcmp(method, "POST") == 0)
        text = xstrdup("{}");
    request_setup(c, &q, method, path_query, text);
    SETOPT(&q, CURLOPT_TIMEOUT, CALL_TIMEOUT_S);
    SETOPT(&q, CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(&q, CURLOPT_WRITEDATA, &t);
    r = request_check(c, &q, method, path_query, err);
    if (r < 0)
        goto out;
    rc = curl_easy_perform(c->curl);
    if (t.too_big)
        r = ty_error_set(
            err, EPROTO, "the reply from %s is larger than %u bytes", c->endpoint, REPLY_MAX_BYTES);
    else if (rc != CURLE_OK)
        r = curl_failure(c, method, path_query, rc, q.errbuf, err);
    else
        r = response_status(c, method, path_query, &http, err);
    if (r < 0)
        goto out;
    if (http < 200 || http > 299)
        r = http_error(c, http, &t.body, err);
    else
        r = parse_reply(c, &t.body, ret, err);
    if (r >= 0)
        r = (int)http;
out:
    request_release(&q);
    ty_buf_release(&t.body);
    return r;
}

/* The longest line of a streamed answer: 6 x TY_LINE_MAX (every byte of a message escaped as
 * \uXXXX) and room for the entry's other fields. */
#define STREAM_LINE_MAX (6 * TY_LINE_MAX + 4096)

int api_stream_lines(
    struct api_client *c, const char *path_query, api_line_fn fn, void *ctx, struct ty_error *err)
{
    struct transfer t = {.c = c, .max = ERROR_BODY_MAX, .fn = fn, .ctx = ctx, .err = err};
    struct request q = {0};
    CURLcode rc;
    long http = 0;
    int r;

    /* One line is one JSON entry: a message of up to TY_LINE_MAX bytes, escaped (\u0001 is
     * six bytes for one), with its fields. Cut at 64 KiB, it was no JSON and was lost. */
    t.ls.max = STREAM_LINE_MAX;
    request_setup(c, &q, "GET", path_query, NULL);
    SETOPT(&q, CURLOPT_WRITEFUNCTION, on_stream);
    SETOPT(&q, CURLOPT_WRITEDATA, &t);
    r = request_check(c, &q, "GET", path_query, err);
    if (r < 0)
        goto out;
    rc = curl_easy_perform(c->curl);
    if (t.fn_result < 0)
        r = t.fn_result;
    else if (t.status_rc != CURLE_OK)
        r = ty_error_set(err,
                         EPROTO,
                         "GET %s%s: cannot read the HTTP status: %s",
                         c->endpoint,
                         path_query,
                         curl_easy_strerror(t.status_rc));
    else if (rc != CURLE_OK)
        r = curl_failure(c, "GET", path_query, rc, q.errbuf, err);
    else
        r = response_status(c, "GET", path_query, &http, err);
    if (r < 0)
        goto out;
    if (http < 200 || http > 299) {
        r = http_error(c, http, &t.body, err);
    } else {
        ty_linesplit_flush(&t.ls, on_line, &t);
        r = t.fn_result < 0 ? t.fn_result : 0;
    }
out:
    request_release(&q);
    ty_linesplit_release(&t.ls);
    ty_buf_release(&t.body);
    return r;
}
