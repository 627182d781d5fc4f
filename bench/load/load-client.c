/* SPDX-License-Identifier: Apache-2.0
 * load-client.c: the client of bench/load (see README.md there).
 *
 *   load-client fill URL PROJECT N THREADS
 *       creates job_1..job_N (each runs `echo`) and waits until every job of PROJECT ended.
 *   load-client load URL PROJECT N SECONDS CLIENTS FOLLOWERS DAEMON_PID
 *       CLIENTS threads, each with its own keep-alive connection, mix every endpoint of the API
 *       for SECONDS against the stored job_1..job_N and the jobs they create (short process
 *       jobs); FOLLOWERS more threads each create a job and follow its log stream to the end,
 *       again and again. A monitor samples the daemon's RSS and open file descriptors every
 *       SAMPLE_S seconds. Prints per endpoint: requests, errors, p50, p99, max; the RSS and fd
 *       figures with a verdict on flatness; one RESULT line. Exit status 1 when a request got
 *       an answer it did not expect (an error), or memory or descriptors grew.
 *
 * Connections come from 127.0.0.1..127.0.0.SOURCES (SOURCES, default 4: 25 clients each), so
 * no address holds more than a per-address connection limit of 64. Environment: THINK_MS
 * (20: a client waits 0..2x this between requests), CREATE_RATE (3 creates a second in all),
 * SOURCES, SAMPLE_S (5). */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "load-stats.h"

/* The mix: each client draws one of these by weight. */
enum op {
    OP_CREATE,
    OP_GET,
    OP_GET_MISSING,
    OP_LIST,
    OP_LIST_FILTER,
    OP_LIST_TOKEN,
    OP_PATCH,
    OP_CANCEL,
    OP_LOGS,
    OP_LOGS_TOKEN,
    OP_IAM_GET,
    OP_IAM_TEST,
    OP_HEALTH,
    OP_FOLLOW, /* the followers' streams (not drawn) */
    OP__N
};

static const struct {
    const char *name;
    int weight;
    long expect;
} ops[OP__N] = {
    [OP_CREATE] = {"jobs.create", 6, 200},
    [OP_GET] = {"jobs.get", 24, 200},
    [OP_GET_MISSING] = {"jobs.get (missing: 404)", 2, 404},
    [OP_LIST] = {"jobs.list", 6, 200},
    [OP_LIST_FILTER] = {"jobs.list filter", 6, 200},
    [OP_LIST_TOKEN] = {"jobs.list pageToken", 5, 200},
    [OP_PATCH] = {"jobs.patch labels", 8, 200},
    [OP_CANCEL] = {"jobs.cancel", 3, 200},
    [OP_LOGS] = {"logs page", 10, 200},
    [OP_LOGS_TOKEN] = {"logs pageToken", 5, 200},
    [OP_IAM_GET] = {"getIamPolicy (501)", 1, 501},
    [OP_IAM_TEST] = {"testIamPermissions (501)", 1, 501},
    [OP_HEALTH] = {"healthz", 3, 200},
    [OP_FOLLOW] = {"logs follow (stream)", 0, 200},
};

static const char *base_url, *project;
static long stored;
static int64_t deadline_usec;
static int think_ms = 20, sources = 4;
static double create_rate = 3;
static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t next_create_usec;
static atomic_int n_errors_logged;

struct client {
    int id;
    CURL *h;
    char src[40];
    unsigned rng;
    struct load_samples stats[OP__N];
    char own[16][64]; /* the last jobs it created */
    unsigned n_own;
    char *list_token; /* the nextPageToken of its last list (escaped) */
    char *logs_token;
    char logs_job[64];
    long seq;
};

static int64_t now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* One request on @c's connection; the answer's body in @out. Returns the HTTP status, or 0
 * when there was no answer (the curl error is in @out). */
static long request(struct client *c,
                    const char *method,
                    const char *path,
                    const char *body,
                    long timeout_s,
                    struct load_buf *out,
                    int64_t *usec)
{
    char url[2048];
    struct curl_slist *hdr = NULL;
    long status = 0;
    int64_t t0;
    CURLcode rc;

    (void)snprintf(url, sizeof(url), "%s%s", base_url, path);
    out->len = 0;
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, NULL);
    if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
        curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
    }
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, load_buf_write);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, out);
    t0 = now_usec();
    rc = curl_easy_perform(c->h);
    *usec = now_usec() - t0;
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdr);
    if (rc != CURLE_OK) {
        out->len = 0;
        load_buf_add(out, curl_easy_strerror(rc), strlen(curl_easy_strerror(rc)));
        return 0;
    }
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

/* Count the answer of @op: an error unless its status is the one expected. */
static bool account(struct client *c, enum op op, long status, int64_t usec, struct load_buf *b)
{
    bool ok = status == ops[op].expect;
    load_samples_add(&c->stats[op], usec, ok);
    if (!ok && atomic_fetch_add(&n_errors_logged, 1) < 20)
        fprintf(stderr,
                "load-client: %s: %s %ld: %.*s\n",
                ops[op].name,
                status ? "HTTP" : "no answer",
                status,
                (int)(b->len > 300 ? 300 : b->len),
                b->data ? b->data : "");
    return ok;
}

/* The escaped nextPageToken of a JSON answer, or NULL. */
static char *next_token(struct client *c, const struct load_buf *b)
{
    json_t *j = json_loadb(b->data ? b->data : "", b->len, 0, NULL);
    const char *t = json_string_value(json_object_get(j, "nextPageToken"));
    char *esc = NULL;

    if (t && *t) {
        char *e = curl_easy_escape(c->h, t, 0);
        esc = e ? strdup(e) : NULL;
        curl_free(e);
    }
    json_decref(j);
    return esc;
}

static bool may_create(void)
{
    bool ok = false;
    int64_t now = now_usec();

    pthread_mutex_lock(&rate_lock);
    if (now >= next_create_usec) {
        next_create_usec = (next_create_usec > now - 1000000 ? next_create_usec : now) +
                           (int64_t)(1e6 / create_rate);
        ok = true;
    }
    pthread_mutex_unlock(&rate_lock);
    return ok;
}

static const char *some_job(struct client *c, char *buf, size_t size)
{
    if (c->n_own && rand_r(&c->rng) % 3 == 0)
        return c->own[rand_r(&c->rng) % (c->n_own < 16 ? c->n_own : 16)];
    (void)snprintf(buf, size, "job_%ld", 1 + (long)(rand_r(&c->rng) % (unsigned)stored));
    return buf;
}

static void create_job(struct client *c, const char *prefix, const char *script, struct load_buf *b)
{
    char id[64], body[1024], path[256];
    int64_t usec;
    long st;

    (void)snprintf(id, sizeof(id), "%s_%d_%ld", prefix, c->id, ++c->seq);
    (void)snprintf(body,
                   sizeof(body),
                   "{\"jobId\":\"%s\",\"labels\":{\"bench\":\"load\"},\"trainingInput\":"
                   "{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\",\"region\":"
                   "\"local\",\"masterConfig\":{\"imageUri\":\"example.com/load:1\","
                   "\"containerCommand\":[\"sh\",\"-c\",\"%s\"]}}}",
                   id,
                   script);
    (void)snprintf(path, sizeof(path), "/v1/projects/%s/jobs", project);
    st = request(c, "POST", path, body, 30, b, &usec);
    if (account(c, OP_CREATE, st, usec, b)) {
        (void)snprintf(c->own[c->n_own % 16], sizeof(c->own[0]), "%s", id);
        c->n_own++;
    }
}

static void one_op(struct client *c, enum op op, struct load_buf *b)
{
    char path[1024], jb[64], body[256];
    const char *job = some_job(c, jb, sizeof(jb));
    const char *m = "GET";
    const char *send = NULL;
    int64_t usec;
    long st;

    switch (op) {
    case OP_CREATE:
        create_job(c, "lr", "for i in 1 2 3; do echo line $i; sleep 0.3; done", b);
        return;
    case OP_GET:
        (void)snprintf(path, sizeof(path), "/v1/projects/%s/jobs/%s", project, job);
        break;
    case OP_GET_MISSING:
        (void)snprintf(path, sizeof(path), "/v1/projects/%s/jobs/no_such_%d", project, c->id);
        break;
    case OP_LIST:
        (void)snprintf(path, sizeof(path), "/v1/projects/%s/jobs?pageSize=20", project);
        break;
    case OP_LIST_FILTER:
        (void)snprintf(path,
                       sizeof(path),
                       "/v1/projects/%s/jobs?filter=%s",
                       project,
                       rand_r(&c->rng) % 2 ? "state%3ASUCCEEDED" : "labels.bench%3Dload");
        break;
    case OP_LIST_TOKEN:
        if (!c->list_token) {
            op = OP_LIST;
            (void)snprintf(path, sizeof(path), "/v1/projects/%s/jobs?pageSize=20", project);
        } else
            (void)snprintf(path,
                           sizeof(path),
                           "/v1/projects/%s/jobs?pageSize=20&pageToken=%s",
                           project,
                           c->list_token);
        break;
    case OP_PATCH:
        (void)snprintf(
            path, sizeof(path), "/v1/projects/%s/jobs/%s?updateMask=labels", project, job);
        (void)snprintf(body,
                       sizeof(body),
                       "{\"labels\":{\"bench\":\"load\",\"touched\":\"c%d_%u\"}}",
                       c->id,
                       rand_r(&c->rng) % 1000);
        m = "PATCH";
        send = body;
        break;
    case OP_CANCEL:
        if (!c->n_own)
            return;
        (void)snprintf(path,
                       sizeof(path),
                       "/v1/projects/%s/jobs/%s:cancel",
                       project,
                       c->own[rand_r(&c->rng) % (c->n_own < 16 ? c->n_own : 16)]);
        m = "POST";
        send = "{}";
        break;
    case OP_LOGS:
        (void)snprintf(c->logs_job, sizeof(c->logs_job), "%s", job);
        (void)snprintf(
            path, sizeof(path), "/v1/projects/%s/jobs/%s/logs?pageSize=5", project, c->logs_job);
        break;
    case OP_LOGS_TOKEN:
        if (!c->logs_token)
            return;
        (void)snprintf(path,
                       sizeof(path),
                       "/v1/projects/%s/jobs/%s/logs?pageSize=5&pageToken=%s",
                       project,
                       c->logs_job,
                       c->logs_token);
        break;
    case OP_IAM_GET:
        (void)snprintf(path, sizeof(path), "/v1/projects/%s/jobs/%s:getIamPolicy", project, job);
        break;
    case OP_IAM_TEST:
        (void)snprintf(
            path, sizeof(path), "/v1/projects/%s/jobs/%s:testIamPermissions", project, job);
        m = "POST";
        send = "{\"permissions\":[\"ml.jobs.get\"]}";
        break;
    case OP_HEALTH:
        (void)snprintf(path, sizeof(path), "/healthz");
        break;
    default:
        return;
    }
    st = request(c, m, path, send, 30, b, &usec);
    if (!account(c, op, st, usec, b))
        return;
    if (op == OP_LIST || op == OP_LIST_TOKEN) {
        free(c->list_token);
        c->list_token = next_token(c, b);
    } else if (op == OP_LOGS || op == OP_LOGS_TOKEN) {
        free(c->logs_token);
        c->logs_token = next_token(c, b);
    }
}

static void client_init(struct client *c, int id)
{
    c->id = id;
    c->rng = (unsigned)id * 2654435761u + (unsigned)time(NULL);
    c->h = curl_easy_init();
    /* The daemon listens on 127.0.0.1; any 127/8 source reaches it. */
    (void)snprintf(c->src, sizeof(c->src), "host!127.0.0.%d", 1 + id % sources);
    curl_easy_setopt(c->h, CURLOPT_INTERFACE, c->src);
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
}

static void *client_main(void *ud)
{
    struct client *c = ud;
    struct load_buf b = {0};
    int total = 0;

    for (int i = 0; i < OP__N; i++)
        total += ops[i].weight;
    while (now_usec() < deadline_usec) {
        int r = (int)(rand_r(&c->rng) % (unsigned)total);
        enum op op = 0;
        while (r >= ops[op].weight)
            r -= ops[op++].weight;
        if (op == OP_CREATE && !may_create())
            op = OP_GET;
        one_op(c, op, &b);
        if (think_ms > 0)
            nap_ms((int)(rand_r(&c->rng) % (unsigned)(2 * think_ms + 1)));
    }
    free(b.data);
    return NULL;
}

/* A follower: create a job that prints 20 lines over 5 s, follow its log to the end, check
 * the last line came. */
static void *follower_main(void *ud)
{
    struct client *c = ud;
    struct load_buf b = {0};

    while (now_usec() < deadline_usec) {
        char path[512];
        int64_t usec;
        long st;
        unsigned before = c->n_own;

        create_job(c, "lf", "for i in $(seq 20); do echo follow $i; sleep 0.25; done", &b);
        if (c->n_own == before) {
            nap_ms(1000);
            continue;
        }
        (void)snprintf(path,
                       sizeof(path),
                       "/v1/projects/%s/jobs/%s/logs?follow=true",
                       project,
                       c->own[(c->n_own - 1) % 16]);
        st = request(c, "GET", path, NULL, 120, &b, &usec);
        if (st == 200 && !load_buf_has(&b, "follow 20"))
            st = -1; /* the stream ended before the job's last line */
        (void)account(c, OP_FOLLOW, st, usec, &b);
    }
    free(b.data);
    return NULL;
}

/* --- fill: the stored jobs ---------------------------------------------------------------- */

static atomic_long fill_next;
static atomic_int fill_failed;

static void *fill_main(void *ud)
{
    struct client *c = ud;
    struct load_buf b = {0};
    char path[256], body[1024];

    (void)snprintf(path, sizeof(path), "/v1/projects/%s/jobs", project);
    for (long n; (n = atomic_fetch_add(&fill_next, 1) + 1) <= stored;) {
        int64_t usec;
        long st;
        (void)snprintf(body,
                       sizeof(body),
                       "{\"jobId\":\"job_%ld\",\"labels\":{\"bench\":\"stored\"},\"trainingInput\":"
                       "{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\",\"region\":"
                       "\"local\",\"masterConfig\":{\"imageUri\":\"example.com/load:1\","
                       "\"containerCommand\":[\"echo\",\"stored job %ld\"]}}}",
                       n,
                       n);
        st = request(c, "POST", path, body, 60, &b, &usec);
        if (st != 200) {
            fprintf(stderr, "load-client fill: job_%ld: %ld %.*s\n", n, st, (int)b.len, b.data);
            atomic_fetch_add(&fill_failed, 1);
        }
    }
    free(b.data);
    return NULL;
}

/* Jobs of the project not yet ended (every page of jobs.list), or -1. */
static long unfinished(struct client *c)
{
    struct load_buf b = {0};
    char *token = NULL;
    long n = 0;

    do {
        char path[1024];
        int64_t usec;
        json_t *j, *jobs;
        size_t i;

        (void)snprintf(path,
                       sizeof(path),
                       "/v1/projects/%s/jobs?pageSize=100%s%s",
                       project,
                       token ? "&pageToken=" : "",
                       token ? token : "");
        if (request(c, "GET", path, NULL, 60, &b, &usec) != 200) {
            n = -1;
            break;
        }
        j = json_loadb(b.data, b.len, 0, NULL);
        jobs = json_object_get(j, "jobs");
        for (i = 0; i < json_array_size(jobs); i++) {
            const char *s = json_string_value(json_object_get(json_array_get(jobs, i), "state"));
            if (!s || (strcmp(s, "SUCCEEDED") && strcmp(s, "FAILED") && strcmp(s, "CANCELLED")))
                n++;
        }
        json_decref(j);
        free(token);
        token = next_token(c, &b);
    } while (token);
    free(token);
    free(b.data);
    return n;
}

static int fill(int threads)
{
    struct client *cs = calloc((size_t)threads, sizeof(*cs));
    pthread_t *ts = calloc((size_t)threads, sizeof(*ts));
    int64_t t0 = now_usec();
    long left = -1;

    for (int i = 0; i < threads; i++) {
        client_init(&cs[i], i);
        pthread_create(&ts[i], NULL, fill_main, &cs[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(ts[i], NULL);
    printf("bench/load: stored %ld jobs in %.1fs (%d failed)\n",
           stored,
           (double)(now_usec() - t0) / 1e6,
           atomic_load(&fill_failed));
    for (int i = 0; i < 600 && (left = unfinished(&cs[0])) != 0; i++)
        nap_ms(1000);
    printf("bench/load: all stored jobs ended after %.1fs\n", (double)(now_usec() - t0) / 1e6);
    for (int i = 0; i < threads; i++)
        curl_easy_cleanup(cs[i].h);
    free(cs);
    free(ts);
    return atomic_load(&fill_failed) || left != 0 ? 1 : 0;
}

/* --- load ------------------------------------------------------------------------------------ */

static int load(double seconds, int clients, int followers, int pid)
{
    int n = clients + followers;
    struct client *cs = calloc((size_t)n, sizeof(*cs));
    pthread_t *ts = calloc((size_t)n, sizeof(*ts));
    struct load_samples all[OP__N] = {0};
    struct load_monitor mon = {.pid = pid};
    const char *names[OP__N];
    long expect[OP__N];
    long errors = 0;
    int rc;
    char metrics_url[512];

    (void)snprintf(metrics_url, sizeof(metrics_url), "%s/metrics", base_url);
    mon.metrics_url = metrics_url;
    if (getenv("SAMPLE_S"))
        mon.every_s = atoi_or(getenv("SAMPLE_S"), 5);
    load_monitor_start(&mon);
    deadline_usec = now_usec() + (int64_t)(seconds * 1e6);
    for (int i = 0; i < n; i++) {
        client_init(&cs[i], i);
        pthread_create(&ts[i], NULL, i < clients ? client_main : follower_main, &cs[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(ts[i], NULL);
        for (int k = 0; k < OP__N; k++)
            load_samples_merge(&all[k], &cs[i].stats[k]);
    }
    /* The last sample once the jobs the load created have ended (their supervisors are
     * watched through descriptors) and every connection is closed. */
    for (int i = 0; i < 120 && unfinished(&cs[0]) != 0; i++)
        nap_ms(1000);
    for (int i = 0; i < n; i++) {
        curl_easy_cleanup(cs[i].h);
        free(cs[i].list_token);
        free(cs[i].logs_token);
    }
    load_monitor_stop(&mon);
    for (int k = 0; k < OP__N; k++) {
        names[k] = ops[k].name;
        expect[k] = ops[k].expect;
        errors += all[k].errors;
    }
    printf("bench/load: %d clients (from %d source addresses) and %d followers for %.0fs "
           "against %ld stored jobs\n",
           clients,
           sources,
           followers,
           seconds,
           stored);
    rc = load_report(all, names, expect, OP__N, &mon, seconds);
    for (int k = 0; k < OP__N; k++)
        load_samples_free(&all[k]);
    load_monitor_free(&mon);
    free(cs);
    free(ts);
    return rc || errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    int r;

    if (argc == 6 && strcmp(argv[1], "fill") == 0) {
        base_url = argv[2], project = argv[3], stored = atol_or(argv[4], 1000);
    } else if (argc == 9 && strcmp(argv[1], "load") == 0) {
        base_url = argv[2], project = argv[3], stored = atol_or(argv[4], 1000);
    } else {
        fprintf(stderr,
                "usage: load-client fill URL PROJECT N THREADS | load URL PROJECT N SECONDS "
                "CLIENTS FOLLOWERS DAEMON_PID\n");
        return 2;
    }
    think_ms = atoi_or(getenv("THINK_MS"), think_ms);
    sources = atoi_or(getenv("SOURCES"), sources);
    create_rate = (double)atoi_or(getenv("CREATE_RATE"), 3);
    if (sources < 1 || sources > 250 || stored < 1 || create_rate <= 0) {
        fprintf(stderr, "load-client: SOURCES 1-250, N >= 1, CREATE_RATE > 0\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    if (argv[1][0] == 'f')
        r = fill(atoi_or(argv[5], 16));
    else
        r = load((double)atoi_or(argv[5], 600),
                 atoi_or(argv[6], 100),
                 atoi_or(argv[7], 4),
                 atoi_or(argv[8], 0));
    curl_global_cleanup();
    return r;
}
