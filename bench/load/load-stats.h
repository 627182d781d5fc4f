/* SPDX-License-Identifier: Apache-2.0
 * load-stats.h: the bookkeeping of bench/load's client: answer bodies, latency samples per
 * endpoint, the daemon's RSS and descriptors sampled by a thread, and the report. */
#ifndef LOAD_STATS_H
#define LOAD_STATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing byte buffer (an answer's body), NUL-terminated. Zero-initialised is empty. */
struct load_buf {
    char *data;
    size_t len, cap;
};

/* Append @n bytes of @p to @b (aborts when out of memory). */
void load_buf_add(struct load_buf *b, const char *p, size_t n);

/* A libcurl write callback (CURLOPT_WRITEFUNCTION) appending to the load_buf @ud. */
size_t load_buf_write(char *p, size_t size, size_t n, void *ud);

/* Whether @b contains @needle. */
bool load_buf_has(const struct load_buf *b, const char *needle);

/* The latencies (microseconds) of one endpoint's requests, and how many were errors. */
struct load_samples {
    uint32_t *usec;
    size_t n, cap;
    long errors;
};

/* Record one request of @usec; @ok false counts an error. */
void load_samples_add(struct load_samples *s, int64_t usec, bool ok);

/* Move @from's samples into @into (@from is left empty). */
void load_samples_merge(struct load_samples *into, struct load_samples *from);

void load_samples_free(struct load_samples *s);

/* The daemon @pid's VmRSS (KiB) and open descriptors, sampled every @every_s seconds (5 when
 * 0) by a thread from load_monitor_start to load_monitor_stop; with @metrics_url, also the
 * bounded parts of the RSS that the verdict sets apart (KiB; -1 when not read): what its
 * jobs.get cache holds (trainyard_api_get_cache_bytes, at most 16 MiB) and SQLite's memory
 * (trainyard_store_memory_bytes: page caches of 256 KiB per connection, at most 16); and,
 * reported only, its live heap (trainyard_heap_in_use_bytes). */
struct load_monitor {
    int pid;
    int every_s;
    const char *metrics_url;
    long *rss_kb, *fds, *cache_kb, *store_kb, *heap_kb;
    size_t n, cap;
    bool stop;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

void load_monitor_start(struct load_monitor *m);
void load_monitor_stop(struct load_monitor *m);
void load_monitor_free(struct load_monitor *m);

/* Print the table (requests, errors, p50, p99, max per endpoint: @names, the status each
 * expects in @expect), the RSS and descriptor figures with a verdict, and a RESULT line.
 * Returns 1 when memory or descriptors grew over the second half of the run, else 0. */
int load_report(struct load_samples *s,
                const char *const *names,
                const long *expect,
                int n,
                const struct load_monitor *m,
                double seconds);

/* @s as a decimal number, or @dflt when it is NULL or not one. */
int atoi_or(const char *s, int dflt);
long atol_or(const char *s, long dflt);

#endif
