/* SPDX-License-Identifier: Apache-2.0
 * metrics.c: the operator's endpoints. GET /healthz: the service answers. GET /metrics, in the
 * Prometheus text format (prom.h): the jobs by project and state with their retries and
 * restarts (from the store), the scheduler's queue, capacity, admissions and waiting times
 * (when the service has a scheduler), the API requests and their latencies (counted here, for
 * http.c, with atomics), and the process's basics. docs/metrics.md lists every metric; keep it
 * in step. */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "alloc.h"
#include "daemon.h"
#include "fdutil.h"
#include "jobcache.h"
#include "macro.h"
#include "prom.h"
#include "route.h"
#include "scheduler.h"
#include "store.h"
#include "ty-config.h"

/* --- API requests ------------------------------------------------------------------------- */

/* The rows of the API table, and one more: the route "none" of requests that name no row
 * (404, 405, an invalid id, a Host or Origin refused before routing). */
#define ONE_ROW(http, pattern, what, handler, runs_on, auth) +1
enum { API_ROWS = 0 TYD_API(ONE_ROW), ROUTES = API_ROWS + 1 };
#undef ONE_ROW
#define PATTERN(http, pattern, what, handler, runs_on, auth) pattern,
static const char *const patterns[API_ROWS] = {TYD_API(PATTERN)};
#undef PATTERN

/* The HTTP methods counted by name; any other is "other" (a client chooses the method, and
 * must not choose how many series there are). */
static const char *const methods[] = {"GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"};
#define METHODS (TY_ARRAY_SIZE(methods) + 1)

/* Distinct status codes counted: the service answers with a dozen; a code met when every slot
 * is taken by others is not counted. */
#define CODE_SLOTS 32

/* Upper bounds of the latency buckets in microseconds (the last: +Inf). The service answers
 * a get in tens of microseconds and a create in a few milliseconds (an fsync). */
/* clang-format off */
static const int64_t lat_bounds_usec[] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
    2500000, 5000000, 10000000, INT64_MAX};
/* clang-format on */
#define LAT_BUCKETS TY_ARRAY_SIZE(lat_bounds_usec)

/* The counts of the API requests this process answered (one service a process), in shards:
 * each request thread adds to its own shard (threads beyond SHARDS share), so the event
 * threads do not bounce one cache line between cores on every request; a scrape sums the
 * shards. Relaxed atomics: each count is exact, a scrape may see a request's counter before
 * its latency. */
#define SHARDS 8
struct shard {
    _Alignas(64) _Atomic uint64_t count[ROUTES][METHODS][CODE_SLOTS];
    _Atomic uint64_t bucket[ROUTES][METHODS][LAT_BUCKETS]; /* per bucket, not cumulative */
    _Atomic uint64_t sum_usec[ROUTES][METHODS];
};
static struct shard shards[SHARDS];
/* The status code of each slot of count[][][], 0 while free; taken once, never given back. */
static _Atomic unsigned codes[CODE_SLOTS];
static atomic_uint next_shard;
static _Thread_local struct shard *my_shard;

static size_t method_index(const char *m)
{
    for (size_t i = 0; m && i < TY_ARRAY_SIZE(methods); i++)
        if (strcmp(m, methods[i]) == 0)
            return i;
    return METHODS - 1;
}

/* The slot of status @code (taking a free one the first time), or -1 when every slot holds
 * another code. */
static int code_slot(unsigned code)
{
    for (int i = 0; i < CODE_SLOTS; i++) {
        unsigned c = atomic_load_explicit(&codes[i], memory_order_relaxed);
        if (c == 0 && (atomic_compare_exchange_strong(&codes[i], &c, code) || c == code))
            return i;
        if (c == code)
            return i;
    }
    return -1;
}

void tyd_metrics_count_request(const char *method,
                               const struct tyd_route *rt,
                               unsigned status,
                               int64_t usec)
{
    size_t r = rt && rt->api && rt->row < API_ROWS ? rt->row : ROUTES - 1;
    size_t m = method_index(method), b = 0;
    int slot = status >= 100 && status <= 599 ? code_slot(status) : -1;
    struct shard *sh = my_shard;

    if (slot < 0)
        return;
    if (!sh)
        sh = my_shard = &shards[atomic_fetch_add(&next_shard, 1) % SHARDS];
    if (usec < 0)
        usec = 0;
    while (usec > lat_bounds_usec[b])
        b++;
    atomic_fetch_add_explicit(&sh->count[r][m][slot], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sh->bucket[r][m][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sh->sum_usec[r][m], (uint64_t)usec, memory_order_relaxed);
}

/* The route label of row @r: its pattern without the optional trailing slash. */
static void route_name(size_t r, char *buf, size_t len)
{
    const char *p = r < API_ROWS ? patterns[r] : "none";
    size_t n = strlen(p);

    if (n >= 2 && strcmp(p + n - 2, "/?") == 0)
        n -= 2;
    (void)snprintf(buf, len, "%.*s", (int)n, p);
}

static const char *method_name(size_t m)
{
    return m < TY_ARRAY_SIZE(methods) ? methods[m] : "other";
}

/* The sum over the shards of the counter that is @c in the first shard. */
static uint64_t summed(_Atomic uint64_t *c)
{
    size_t off = (size_t)((char *)c - (char *)&shards[0]);
    uint64_t n = 0;

    for (size_t i = 0; i < SHARDS; i++)
        n += atomic_load_explicit((_Atomic uint64_t *)((char *)&shards[i] + off),
                                  memory_order_relaxed);
    return n;
}

static void render_requests(struct ty_buf *b)
{
    double bounds[LAT_BUCKETS];
    char route[128], code[16];

    tyd_prom_family(b,
                    "trainyard_http_requests_total",
                    TYD_PROM_COUNTER,
                    "API requests answered, by HTTP method, route (the API table's path "
                    "pattern; none: no route) and status code.");
    for (size_t r = 0; r < ROUTES; r++)
        for (size_t m = 0; m < METHODS; m++)
            for (size_t c = 0; c < CODE_SLOTS; c++) {
                unsigned status = atomic_load_explicit(&codes[c], memory_order_relaxed);
                uint64_t n = status ? summed(&shards[0].count[r][m][c]) : 0;
                if (!n)
                    continue;
                route_name(r, route, sizeof(route));
                (void)snprintf(code, sizeof(code), "%u", status);
                tyd_prom_sample(
                    b,
                    "trainyard_http_requests_total",
                    TYD_PROM_LABELS({"method", method_name(m)}, {"route", route}, {"code", code}),
                    (double)n);
            }
    for (size_t i = 0; i < LAT_BUCKETS; i++)
        bounds[i] = lat_bounds_usec[i] == INT64_MAX ? INFINITY : lat_bounds_usec[i] / 1e6;
    tyd_prom_family(b,
                    "trainyard_http_request_duration_seconds",
                    TYD_PROM_HISTOGRAM,
                    "Time from a request's arrival to its answer being queued, by HTTP method "
                    "and route.");
    for (size_t r = 0; r < ROUTES; r++)
        for (size_t m = 0; m < METHODS; m++) {
            uint64_t counts[LAT_BUCKETS], any = 0;
            for (size_t i = 0; i < LAT_BUCKETS; i++)
                any |= counts[i] = summed(&shards[0].bucket[r][m][i]);
            if (!any)
                continue;
            route_name(r, route, sizeof(route));
            tyd_prom_histogram(b,
                               "trainyard_http_request_duration_seconds",
                               TYD_PROM_LABELS({"method", method_name(m)}, {"route", route}),
                               bounds,
                               counts,
                               LAT_BUCKETS,
                               (double)summed(&shards[0].sum_usec[r][m]) / 1e6);
        }
}

/* --- jobs (the store) --------------------------------------------------------------------- */

/* One family with one sample per project: the sum over its states of the field at @off of
 * struct ty_store_job_stats. @rows are ordered by project. */
static void per_project(struct ty_buf *b,
                        const struct ty_store_job_stats *rows,
                        size_t n,
                        const char *name,
                        enum tyd_prom_type type,
                        const char *help,
                        size_t off)
{
    tyd_prom_family(b, name, type, help);
    for (size_t i = 0; i < n;) {
        int64_t sum = 0;
        size_t j = i;
        for (; j < n && strcmp(rows[j].project, rows[i].project) == 0; j++)
            sum += *(const int64_t *)((const char *)&rows[j] + off);
        tyd_prom_sample(b, name, TYD_PROM_LABELS({"project", rows[i].project}), (double)sum);
        i = j;
    }
}

static void render_jobs(struct ty_buf *b, const struct ty_store_job_stats *rows, size_t n)
{
    tyd_prom_family(b,
                    "trainyard_jobs",
                    TYD_PROM_GAUGE,
                    "Stored jobs by project and state (every state of a project that has jobs).");
    for (size_t i = 0; i < n;) {
        int64_t count[TY_STATE_CANCELLED + 1] = {0};
        size_t j = i;
        for (; j < n && strcmp(rows[j].project, rows[i].project) == 0; j++)
            if (rows[j].state <= TY_STATE_CANCELLED)
                count[rows[j].state] += rows[j].jobs;
        for (int st = TY_STATE_UNSPECIFIED; st <= TY_STATE_CANCELLED; st++)
            if (st != TY_STATE_UNSPECIFIED || count[st])
                tyd_prom_sample(
                    b,
                    "trainyard_jobs",
                    TYD_PROM_LABELS({"project", rows[i].project}, {"state", ty_job_state_name(st)}),
                    (double)count[st]);
        i = j;
    }
    per_project(b,
                rows,
                n,
                "trainyard_job_retries_total",
                TYD_PROM_COUNTER,
                "Attempts beyond the first of the stored jobs and their tuning trials: whole-job "
                "retries and the attempts started after an internal error.",
                offsetof(struct ty_store_job_stats, retries));
    per_project(b,
                rows,
                n,
                "trainyard_job_internal_retries_total",
                TYD_PROM_COUNTER,
                "Times a job's supervisor was lost and a new one started the job again "
                "(internal errors; each also counts in trainyard_job_retries_total).",
                offsetof(struct ty_store_job_stats, internal_retries));
    per_project(b,
                rows,
                n,
                "trainyard_replica_restarts",
                TYD_PROM_GAUGE,
                "Restarts in place of replicas in the attempt each stored job (and trial) is in "
                "or ended in; a new attempt starts again from 0.",
                offsetof(struct ty_store_job_stats, replica_restarts));
}

/* --- the scheduler -------------------------------------------------------------------- */

/* The labels of dimension @dim of a resource vector ({resource=...}, and type=... for
 * GPUs), and the factor from its unit to the metric's (memory: MiB to bytes). */
static const struct tyd_prom_label *dim_labels(int dim, struct tyd_prom_label lab[3], double *unit)
{
    static const char *const names[] = {"jobs", "cpus", "memory_bytes"};

    *unit = dim == TY_RES_MEMORY ? 1024.0 * 1024.0 : 1;
    lab[0] = (struct tyd_prom_label){"resource", dim < TY_RES_GPU0 ? names[dim] : "gpus"};
    lab[1] = (struct tyd_prom_label){NULL, NULL};
    lab[2] = lab[1];
    if (dim >= TY_RES_GPU0)
        lab[1] = (struct tyd_prom_label){"type", ty_gpu_type_name(dim - TY_RES_GPU0)};
    return lab;
}

/* Is dimension @dim shown: always the jobs, vCPUs and memory; a GPU type when the service
 * has some or a job holds some. */
static bool dim_shown(const struct ty_sched_stats *st, int dim)
{
    return dim < TY_RES_GPU0 || st->capacity.v[dim] > 0 || st->used.v[dim] > 0;
}

/* The resource families: capacity and free only for the dimensions that are counted. */
static void render_resources(struct ty_buf *b, const struct ty_sched_stats *st)
{
    static const char *const names[] = {
        "trainyard_resource_capacity", "trainyard_resource_used", "trainyard_resource_free"};
    static const char *const helps[] = {
        ("What the service has of each resource it counts (--capacity; GPUs: the devices); a "
         "resource that is not counted is left out."),
        "What the jobs admitted by the scheduler hold of each resource.",
        "Capacity less what the jobs hold, for the resources that are counted.",
    };
    struct tyd_prom_label lab[3];
    double unit;

    for (int f = 0; f < 3; f++) {
        tyd_prom_family(b, names[f], TYD_PROM_GAUGE, helps[f]);
        for (int dim = 0; dim < TY_RES_NDIMS; dim++) {
            int64_t cap = st->capacity.v[dim], used = st->used.v[dim];
            if (!dim_shown(st, dim) || (f != 1 && cap == TY_RES_UNLIMITED))
                continue;
            dim_labels(dim, lab, &unit);
            tyd_prom_sample(b,
                            names[f],
                            lab,
                            (double)(f == 0   ? cap
                                     : f == 1 ? used
                                              : cap - used) *
                                unit);
        }
    }
}

static void render_sched(struct ty_buf *b, struct ty_sched *s)
{
    struct ty_sched_stats st;

    ty_sched_stats(s, &st);
    tyd_prom_family(b,
                    "trainyard_scheduler_queued_jobs",
                    TYD_PROM_GAUGE,
                    "Jobs waiting in the scheduler's queue.");
    tyd_prom_sample(b, "trainyard_scheduler_queued_jobs", TYD_PROM_NO_LABELS, (double)st.queued);
    tyd_prom_family(b,
                    "trainyard_scheduler_holding_jobs",
                    TYD_PROM_GAUGE,
                    "Jobs holding resources (admitted and not yet ended).");
    tyd_prom_sample(b, "trainyard_scheduler_holding_jobs", TYD_PROM_NO_LABELS, (double)st.holding);
    render_resources(b, &st);
    tyd_prom_family(b,
                    "trainyard_scheduler_admissions_total",
                    TYD_PROM_COUNTER,
                    "Jobs the scheduler admitted since the service started.");
    tyd_prom_sample(
        b, "trainyard_scheduler_admissions_total", TYD_PROM_NO_LABELS, (double)st.admissions);
    tyd_prom_family(b,
                    "trainyard_scheduler_unadmissions_total",
                    TYD_PROM_COUNTER,
                    "Admissions undone since the service started: the job could not be started "
                    "and went back to its place in the queue (still counted in admissions).");
    tyd_prom_sample(
        b, "trainyard_scheduler_unadmissions_total", TYD_PROM_NO_LABELS, (double)st.unadmissions);
    tyd_prom_family(b,
                    "trainyard_scheduler_expirations_total",
                    TYD_PROM_COUNTER,
                    "Queued jobs cancelled because their scheduling.maxWaitTime passed, since the "
                    "service started.");
    tyd_prom_sample(
        b, "trainyard_scheduler_expirations_total", TYD_PROM_NO_LABELS, (double)st.expirations);
    tyd_prom_family(b,
                    "trainyard_scheduler_wait_seconds",
                    TYD_PROM_HISTOGRAM,
                    "Time from a job's creation to its admission, of the jobs admitted since the "
                    "service started.");
    tyd_prom_histogram(b,
                       "trainyard_scheduler_wait_seconds",
                       TYD_PROM_NO_LABELS,
                       ty_sched_wait_bounds,
                       st.wait_bucket,
                       TY_SCHED_WAIT_BUCKETS,
                       st.wait_sum_s);
}

/* The memory SQLite holds (ty_store_memory_used), when it counts, and the live heap. */
static void render_memory(struct ty_buf *b)
{
    int64_t used = ty_store_memory_used();
#ifdef __GLIBC__
    struct mallinfo2 mi = mallinfo2();

    /* 0: another allocator answers malloc (a sanitizer's), and glibc's counts nothing */
    if (mi.uordblks + mi.hblkhd > 0) {
        tyd_prom_family(b,
                        "trainyard_heap_in_use_bytes",
                        TYD_PROM_GAUGE,
                        "Bytes malloc has handed out and not had back (glibc's mallinfo2: "
                        "uordblks + hblkhd): the live heap, without the free space the allocator "
                        "keeps, which the resident memory counts too.");
        tyd_prom_sample(b,
                        "trainyard_heap_in_use_bytes",
                        TYD_PROM_NO_LABELS,
                        (double)mi.uordblks + (double)mi.hblkhd);
    }
#endif
    if (used < 0)
        return;
    tyd_prom_family(b,
                    "trainyard_store_memory_bytes",
                    TYD_PROM_GAUGE,
                    "Bytes SQLite holds: the store's page caches (bounded), schemas and "
                    "statements.");
    tyd_prom_sample(b, "trainyard_store_memory_bytes", TYD_PROM_NO_LABELS, (double)used);
}

/* --- the jobs.get cache ------------------------------------------------------------------ */

static void render_cache(struct ty_buf *b, struct tyd_jobcache *c)
{
    struct tyd_jobcache_stats st;

    tyd_jobcache_stats(c, &st);
    const struct {
        const char *name;
        enum tyd_prom_type type;
        const char *help;
        double value;
    } fam[] = {
        {"trainyard_api_get_cache_bytes",
         TYD_PROM_GAUGE,
         "Bytes the jobs.get cache holds: answers, keys and bookkeeping (bounded).",
         (double)st.bytes},
        {"trainyard_api_get_cache_max_bytes",
         TYD_PROM_GAUGE,
         "The jobs.get cache's bound.",
         (double)st.max_bytes},
        {"trainyard_api_get_cache_entries",
         TYD_PROM_GAUGE,
         "Answers the jobs.get cache holds.",
         (double)st.entries},
        {"trainyard_api_get_cache_hits_total",
         TYD_PROM_COUNTER,
         "jobs.get answers served from the cache since the service started.",
         (double)st.hits},
        {"trainyard_api_get_cache_unchanged_hits_total",
         TYD_PROM_COUNTER,
         "Of the hits, those served without reading the job's version: nothing was committed "
         "to the store since the answer was last found current.",
         (double)st.unchanged_hits},
        {"trainyard_api_get_cache_misses_total",
         TYD_PROM_COUNTER,
         "jobs.get answers rendered from the store since the service started.",
         (double)st.misses},
        {"trainyard_api_get_cache_evictions_total",
         TYD_PROM_COUNTER,
         "Answers the cache let go to stay within its bound since the service started.",
         (double)st.evictions},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(fam); i++) {
        tyd_prom_family(b, fam[i].name, fam[i].type, fam[i].help);
        tyd_prom_sample(b, fam[i].name, TYD_PROM_NO_LABELS, fam[i].value);
    }
}

/* --- the process ---------------------------------------------------------------------- */

/* Field @field (1-based, as proc(5) numbers them) of /proc/self/stat, or -1. */
static long long self_stat_field(int field)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    const char *p;
    long long v = -1;

    if (ty_read_file("/proc/self/stat", 4096, &text, &len, NULL) < 0 || !(p = strrchr(text, ')')))
        return -1;
    /* after "pid (comm)" comes field 3 */
    for (int f = 3; f <= field && p; f++) {
        p = strchr(p + 1, ' ');
        if (p && f == field)
            v = strtoll(p + 1, NULL, 10);
    }
    return v;
}

/* The boot time (epoch seconds) from /proc/stat, or -1. */
static long long boot_time(void)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    const char *p;

    if (ty_read_file("/proc/stat", 1 << 20, &text, &len, NULL) < 0 ||
        !(p = strstr(text, "\nbtime ")))
        return -1;
    return strtoll(p + 7, NULL, 10);
}

/* Open file descriptors (not counting the one that lists them), or -1. */
static long count_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    long n = 0;

    if (!dir)
        return -1;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.' && strtol(e->d_name, NULL, 10) != dirfd(dir))
            n++;
    closedir(dir);
    return n;
}

/* The process's metrics under their usual names (process_*, as Prometheus' client libraries
 * write them); each is left out when /proc cannot tell it. */
static void render_process(struct ty_buf *b)
{
    long long ticks = self_stat_field(22), btime = boot_time(), rss = self_stat_field(24);
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds = count_fds();
    struct rlimit rl;

    tyd_prom_family(b,
                    "trainyard_build_info",
                    TYD_PROM_GAUGE,
                    "Always 1; the version of trainyardd in a label.");
    tyd_prom_sample(b, "trainyard_build_info", TYD_PROM_LABELS({"version", TY_VERSION}), 1);
    if (ticks >= 0 && btime >= 0 && hz > 0) {
        tyd_prom_family(b,
                        "process_start_time_seconds",
                        TYD_PROM_GAUGE,
                        "Start time of the process since the epoch, in seconds.");
        tyd_prom_sample(b,
                        "process_start_time_seconds",
                        TYD_PROM_NO_LABELS,
                        (double)btime + (double)ticks / (double)hz);
    }
    if (rss >= 0 && page > 0) {
        tyd_prom_family(
            b, "process_resident_memory_bytes", TYD_PROM_GAUGE, "Resident memory in bytes.");
        tyd_prom_sample(
            b, "process_resident_memory_bytes", TYD_PROM_NO_LABELS, (double)rss * (double)page);
    }
    if (fds >= 0) {
        tyd_prom_family(b, "process_open_fds", TYD_PROM_GAUGE, "Number of open file descriptors.");
        tyd_prom_sample(b, "process_open_fds", TYD_PROM_NO_LABELS, (double)fds);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        tyd_prom_family(
            b, "process_max_fds", TYD_PROM_GAUGE, "Maximum number of open file descriptors.");
        tyd_prom_sample(b, "process_max_fds", TYD_PROM_NO_LABELS, (double)rl.rlim_cur);
    }
}

/* --- the handlers ---------------------------------------------------------------------- */

void tyd_health(const struct tyd_request *rq, struct tyd_reply *rep)
{
    rep->status = 200;
    rep->json = json_pack("{s:s}", "status", "ok");
}

void tyd_metrics(const struct tyd_request *rq, struct tyd_reply *rep)
{
    struct tyd *d = rq->d;
    struct ty_store_job_stats *rows = NULL;
    struct ty_error err = {0};
    struct ty_buf b = TY_BUF_INIT;
    struct MHD_Response *resp;
    size_t n = 0, len;
    char *text;

    if (ty_store_job_stats(d->store, &rows, &n, &err) < 0) {
        tyd_log("metrics: %s", err.msg);
        tyd_error(rep, 500, NULL, "cannot read the jobs for the metrics: %s", err.msg);
        return;
    }
    render_process(&b);
    render_memory(&b);
    render_jobs(&b, rows, n);
    ty_store_job_stats_free(rows, n);
    if (d->sched)
        render_sched(&b, d->sched);
    if (d->jobcache)
        render_cache(&b, d->jobcache);
    render_requests(&b);
    len = b.len;
    text = ty_buf_take(&b);
    resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        tyd_error(rep, 500, NULL, "cannot make the metrics response");
        return;
    }
    (void)MHD_add_response_header(resp, "Content-Type", TYD_PROM_CONTENT_TYPE);
    rep->status = 200;
    rep->stream = resp;
}
