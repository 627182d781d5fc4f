/* SPDX-License-Identifier: Apache-2.0
 * load-stats.c: bench/load's bookkeeping (see load-stats.h): bodies, latency samples, the
 * daemon's memory and descriptors over time, and the report with its verdict. */
#include "load-stats.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *grow(void *p, size_t n, size_t size)
{
    void *q = realloc(p, n * size);
    if (!q) {
        fprintf(stderr, "load-client: out of memory\n");
        abort();
    }
    return q;
}

void load_buf_add(struct load_buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = grow(b->data, b->cap, 1);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

size_t load_buf_write(char *p, size_t size, size_t n, void *ud)
{
    load_buf_add(ud, p, size * n);
    return size * n;
}

bool load_buf_has(const struct load_buf *b, const char *needle)
{
    return b->data && strstr(b->data, needle) != NULL;
}

void load_samples_add(struct load_samples *s, int64_t usec, bool ok)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->usec = grow(s->usec, s->cap, sizeof(*s->usec));
    }
    s->usec[s->n++] = usec < 0 ? 0 : usec > UINT32_MAX ? UINT32_MAX : (uint32_t)usec;
    if (!ok)
        s->errors++;
}

void load_samples_merge(struct load_samples *into, struct load_samples *from)
{
    if (into->n + from->n > into->cap) {
        into->cap = into->n + from->n;
        into->usec = grow(into->usec, into->cap ? into->cap : 1, sizeof(*into->usec));
    }
    if (from->n)
        memcpy(into->usec + into->n, from->usec, from->n * sizeof(*from->usec));
    into->n += from->n;
    into->errors += from->errors;
    load_samples_free(from);
}

void load_samples_free(struct load_samples *s)
{
    free(s->usec);
    *s = (struct load_samples){0};
}

/* --- the daemon's memory and descriptors ---------------------------------------------------- */

static long rss_kb(int pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    (void)snprintf(path, sizeof(path), "/proc/%d/status", pid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol_or(line + 6 + strspn(line + 6, " \t"), -1);
    fclose(f);
    return kb;
}

static long open_fds(int pid)
{
    char path[64];
    struct dirent *de;
    long n = 0;
    DIR *d;

    (void)snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    if (!(d = opendir(path)))
        return -1;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* The value of sample @name (no labels) in the exposition @text, in KiB, or -1. */
static long metric_kb(const char *text, const char *name)
{
    size_t len = strlen(name);

    for (const char *at = strstr(text, name); at; at = strstr(at + 1, name))
        if ((at == text || at[-1] == '\n') && at[len] == ' ')
            return (long)(strtod(at + len + 1, NULL) / 1024);
    return -1;
}

/* The daemon's bounded memory from its /metrics at @url, in KiB: the jobs.get cache into
 * *@cache and SQLite's (page caches, statements) into *@store; its live heap into *@heap; -1
 * each when not read. */
static void bounded_kb(const char *url, long *cache, long *store, long *heap)
{
    struct load_buf b = {0};
    CURL *h = curl_easy_init();
    long code = 0;

    *cache = *store = *heap = -1;
    if (!h)
        return;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, load_buf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    if (curl_easy_perform(h) == CURLE_OK &&
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200 && b.data) {
        *cache = metric_kb(b.data, "trainyard_api_get_cache_bytes");
        *store = metric_kb(b.data, "trainyard_store_memory_bytes");
        *heap = metric_kb(b.data, "trainyard_heap_in_use_bytes");
    }
    curl_easy_cleanup(h);
    free(b.data);
}

static void sample(struct load_monitor *m)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->rss_kb = grow(m->rss_kb, m->cap, sizeof(long));
        m->fds = grow(m->fds, m->cap, sizeof(long));
        m->cache_kb = grow(m->cache_kb, m->cap, sizeof(long));
        m->store_kb = grow(m->store_kb, m->cap, sizeof(long));
        m->heap_kb = grow(m->heap_kb, m->cap, sizeof(long));
    }
    m->rss_kb[m->n] = rss_kb(m->pid);
    m->fds[m->n] = open_fds(m->pid);
    m->cache_kb[m->n] = m->store_kb[m->n] = m->heap_kb[m->n] = -1;
    if (m->metrics_url)
        bounded_kb(m->metrics_url, &m->cache_kb[m->n], &m->store_kb[m->n], &m->heap_kb[m->n]);
    m->n++;
}

static void *monitor_main(void *ud)
{
    struct load_monitor *m = ud;

    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += m->every_s;
        sample(m);
        while (!m->stop && pthread_cond_timedwait(&m->cond, &m->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

void load_monitor_start(struct load_monitor *m)
{
    if (m->every_s <= 0)
        m->every_s = 5;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    pthread_create(&m->thread, NULL, monitor_main, m);
}

void load_monitor_stop(struct load_monitor *m)
{
    struct timespec settle = {1, 0};

    pthread_mutex_lock(&m->lock);
    m->stop = true;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    /* The clients' connections are closed; the daemon closes its side at once. */
    (void)nanosleep(&settle, NULL);
    sample(m);
}

void load_monitor_free(struct load_monitor *m)
{
    free(m->rss_kb);
    free(m->fds);
    free(m->cache_kb);
    free(m->store_kb);
    free(m->heap_kb);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cond);
}

/* --- the report --------------------------------------------------------------------------------
 */

/* Whether every sample read the bounded parts (the jobs.get cache, SQLite's memory). */
static bool bounded_known(const struct load_monitor *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->cache_kb[i] < 0 || m->store_kb[i] < 0)
            return false;
    return m->n > 0;
}

/* What the verdict judges of sample @i: the RSS, less the bounded parts when @net. */
static long judged_kb(const struct load_monitor *m, size_t i, bool net)
{
    return m->rss_kb[i] - (net ? m->cache_kb[i] + m->store_kb[i] : 0);
}

static long rss_max_kb(const struct load_monitor *m)
{
    long max = 0;
    for (size_t i = 0; i < m->n; i++)
        max = m->rss_kb[i] > max ? m->rss_kb[i] : max;
    return max;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const struct load_samples *s, double p)
{
    size_t i;
    if (!s->n)
        return 0;
    i = (size_t)(p * (double)(s->n - 1) + 0.5);
    return s->usec[i] / 1000.0;
}

int load_report(struct load_samples *s,
                const char *const *names,
                const long *expect,
                int n,
                const struct load_monitor *m,
                double seconds)
{
    long total = 0, errors = 0, half_max = 0, first_max = 0;
    long rss0, rss_mid, rss_end, rss_max, fd0, fd_end, fd_first_max = 0, growth, allowed;
    long judged_mid;
    size_t mid = m->n / 2;
    bool net;
    int grew;

    printf("%-28s %6s %9s %7s %9s %9s %9s\n",
           "endpoint",
           "expect",
           "requests",
           "errors",
           "p50",
           "p99",
           "max");
    for (int k = 0; k < n; k++) {
        qsort(s[k].usec, s[k].n, sizeof(*s[k].usec), cmp_u32);
        total += (long)s[k].n;
        errors += s[k].errors;
        if (!s[k].n)
            continue;
        printf("%-28s %6ld %9zu %7ld %7.1fms %7.1fms %7.1fms\n",
               names[k],
               expect[k],
               s[k].n,
               s[k].errors,
               pct(&s[k], 0.50),
               pct(&s[k], 0.99),
               s[k].usec[s[k].n - 1] / 1000.0);
    }
    printf("%-28s %6s %9ld %7ld   (%.0f requests/s)\n",
           "all",
           "",
           total,
           errors,
           (double)total / seconds);
    if (m->n < 2) {
        printf("bench/load: too few memory samples\n");
        return 1;
    }
    net = bounded_known(m);
    for (size_t i = 0; i < m->n; i++) {
        long v = judged_kb(m, i, net);
        if (i < mid) {
            first_max = v > first_max ? v : first_max;
            fd_first_max = m->fds[i] > fd_first_max ? m->fds[i] : fd_first_max;
        } else
            half_max = v > half_max ? v : half_max;
    }
    rss0 = m->rss_kb[0], rss_mid = m->rss_kb[mid], rss_end = m->rss_kb[m->n - 1];
    rss_max = rss_max_kb(m);
    fd0 = m->fds[0], fd_end = m->fds[m->n - 1];
    if (net)
        printf("bench/load: bounded, set apart from the RSS below: the jobs.get cache held %.1f "
               "MiB at start, %.1f at the middle, %.1f at the end; SQLite %.1f, %.1f, %.1f\n",
               m->cache_kb[0] / 1024.0,
               m->cache_kb[mid] / 1024.0,
               m->cache_kb[m->n - 1] / 1024.0,
               m->store_kb[0] / 1024.0,
               m->store_kb[mid] / 1024.0,
               m->store_kb[m->n - 1] / 1024.0);
    if (m->heap_kb[0] >= 0 && m->heap_kb[mid] >= 0 && m->heap_kb[m->n - 1] >= 0)
        printf("bench/load: the live heap (malloc'd, not freed; reported, not judged) %.1f MiB "
               "at start, %.1f at the middle, %.1f at the end\n",
               m->heap_kb[0] / 1024.0,
               m->heap_kb[mid] / 1024.0,
               m->heap_kb[m->n - 1] / 1024.0);
    /* Flat: over the second half, what is judged (the RSS, less the bounded parts when known)
     * grows by no more than 2 MiB or 5 % of its midpoint, whichever is more, and its peak there
     * is no higher than that above the first half's. */
    judged_mid = judged_kb(m, mid, net);
    allowed = judged_mid / 20 > 2048 ? judged_mid / 20 : 2048;
    growth = judged_kb(m, m->n - 1, net) - judged_mid;
    grew = growth > allowed || half_max - first_max > allowed;
    printf("bench/load: trainyardd RSS %.1f MiB at start, %.1f at the middle, %.1f at the end, "
           "%.1f at most (%zu samples every %ds); second half%s: %+.1f MiB (allowed %.1f): %s\n",
           rss0 / 1024.0,
           rss_mid / 1024.0,
           rss_end / 1024.0,
           rss_max / 1024.0,
           m->n,
           m->every_s,
           net ? " less the bounded parts" : "",
           growth / 1024.0,
           allowed / 1024.0,
           grew ? "GROWING" : "flat");
    /* The store keeps a few idle connections once the load made them (a bounded pool): the
     * end, idle, must be no higher than the first half's peak. */
    printf("bench/load: trainyardd open descriptors %ld at start, %ld at most in the first half, "
           "%ld at the end (idle): %s\n",
           fd0,
           fd_first_max,
           fd_end,
           fd_end > fd_first_max ? "LEAK" : "ok");
    printf("RESULT requests=%ld errors=%ld rss_start_kb=%ld rss_end_kb=%ld rss_max_kb=%ld "
           "cache_end_kb=%ld store_end_kb=%ld rss_second_half_kb=%+ld fds_start=%ld fds_end=%ld "
           "memory=%s\n",
           total,
           errors,
           rss0,
           rss_end,
           rss_max,
           net ? m->cache_kb[m->n - 1] : -1,
           net ? m->store_kb[m->n - 1] : -1,
           growth,
           fd0,
           fd_end,
           grew ? "growing" : "flat");
    return grew || fd_end > fd_first_max ? 1 : 0;
}

int atoi_or(const char *s, int dflt)
{
    long v = atol_or(s, dflt);
    return v < -2147483647L || v > 2147483647L ? dflt : (int)v;
}

long atol_or(const char *s, long dflt)
{
    char *end;
    long v;

    if (!s || !*s)
        return dflt;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s)
        return dflt;
    return v;
}
