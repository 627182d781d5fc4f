/* SPDX-License-Identifier: Apache-2.0
 * load-stats.c: bench/load's bookkeeping (see load-stats.h): bodies, latency samples, the
 * daemon's memory and descriptors over time, and the report with its verdict. */
#include "load-stats.h"

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

static void sample(struct load_monitor *m)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->rss_kb = grow(m->rss_kb, m->cap, sizeof(long));
        m->fds = grow(m->fds, m->cap, sizeof(long));
    }
    m->rss_kb[m->n] = rss_kb(m->pid);
    m->fds[m->n] = open_fds(m->pid);
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
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cond);
}

/* --- the report --------------------------------------------------------------------------------
 */

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
    long total = 0, errors = 0, half_max = 0, first_max = 0, max = 0;
    long rss0, rss_mid, rss_end, fd0, fd_end, fd_first_max = 0, growth, allowed;
    size_t mid = m->n / 2;
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
    for (size_t i = 0; i < m->n; i++) {
        long v = m->rss_kb[i];
        max = v > max ? v : max;
        if (i < mid) {
            first_max = v > first_max ? v : first_max;
            fd_first_max = m->fds[i] > fd_first_max ? m->fds[i] : fd_first_max;
        } else
            half_max = v > half_max ? v : half_max;
    }
    rss0 = m->rss_kb[0], rss_mid = m->rss_kb[mid], rss_end = m->rss_kb[m->n - 1];
    fd0 = m->fds[0], fd_end = m->fds[m->n - 1];
    /* Flat: over the second half, RSS grows by no more than 2 MiB or 5 % of its midpoint,
     * whichever is more, and its peak there is no higher than that above the first half's. */
    allowed = rss_mid / 20 > 2048 ? rss_mid / 20 : 2048;
    growth = rss_end - rss_mid;
    grew = growth > allowed || half_max - first_max > allowed;
    printf("bench/load: trainyardd RSS %.1f MiB at start, %.1f at the middle, %.1f at the end, "
           "%.1f at most (%zu samples every %ds); second half: %+.1f MiB (allowed %.1f): %s\n",
           rss0 / 1024.0,
           rss_mid / 1024.0,
           rss_end / 1024.0,
           max / 1024.0,
           m->n,
           m->every_s,
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
           "rss_second_half_kb=%+ld fds_start=%ld fds_end=%ld memory=%s\n",
           total,
           errors,
           rss0,
           rss_end,
           max,
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
