/* SPDX-License-Identifier: Apache-2.0
 * test-jobcache.c: trainyardd's cache of rendered jobs.get answers (src/trainyardd/jobcache.c):
 * an answer comes back only for the same (project, job, form) and the same row seq and version;
 * its live text and kind come back with it; a put replaces the key's answer; the bound holds
 * (least recently used first, a use refreshes, an answer bigger than a shard's share is not
 * kept); a zero bound keeps nothing; a hit is a reference that outlives the answer's eviction,
 * replacement and the cache itself; a confirmed live text comes back with its new change count
 * (and only for the same answer and text); an answer comes back without its version only
 * at the store's commit epoch it was stamped or last found current at; and threads putting
 * and getting at once get only answers that match what they asked for. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobcache.h"
#include "tap.h"

static void put(struct tyd_jobcache *c,
                const char *project,
                const char *job,
                bool pretty,
                int64_t seq,
                int64_t version,
                const char *live,
                const char *body)
{
    struct tyd_jobcache_key k = {project, job, pretty};
    struct tyd_jobcache_stamp st = {seq, version, live && *live ? 2 : 0, live, 1, 0};
    tyd_jobcache_put(c, &k, &st, body, strlen(body));
}

/* The body for the key at (seq, version) as a new string, or NULL. */
static char *get(struct tyd_jobcache *c,
                 const char *project,
                 const char *job,
                 bool pretty,
                 int64_t seq,
                 int64_t v)
{
    struct tyd_jobcache_key k = {project, job, pretty};
    struct tyd_jobcache_hit h;
    char *s;

    if (!tyd_jobcache_get(c, &k, seq, v, 0, &h))
        return NULL;
    s = malloc(h.len + 1);
    memcpy(s, h.body, h.len);
    s[h.len] = '\0';
    tyd_jobcache_release(h.ref);
    return s;
}

static bool got(struct tyd_jobcache *c,
                const char *project,
                const char *job,
                bool pretty,
                int64_t seq,
                int64_t v,
                const char *want)
{
    char *s = get(c, project, job, pretty, seq, v);
    bool same = want ? s && strcmp(s, want) == 0 : !s;
    free(s);
    return same;
}

static void test_keys_and_stamps(void)
{
    struct tyd_jobcache *c = tyd_jobcache_new(1 << 20);
    struct tyd_jobcache_key k = {"p", "j", true};
    struct tyd_jobcache_hit h;
    struct tyd_jobcache_stats st;

    ok(got(c, "p", "j", true, 1, 0, NULL), "empty: nothing");
    put(c, "p", "j", true, 1, 3, "", "{pretty}");
    ok(got(c, "p", "j", true, 1, 3, "{pretty}"), "same key, seq and version: the answer");
    ok(got(c, "p", "j", true, 1, 4, NULL), "another version: nothing");
    ok(got(c, "p", "j", true, 2, 3, NULL), "another seq (the job created again): nothing");
    ok(got(c, "p", "j", false, 1, 3, NULL), "the compact form is another key");
    ok(got(c, "p", "jj", true, 1, 3, NULL) && got(c, "q", "j", true, 1, 3, NULL),
       "another job or project: nothing");
    ok(got(c, "pj", "", true, 1, 3, NULL), "project and job do not run together");
    put(c, "p", "j", false, 1, 3, "", "{compact}");
    ok(got(c, "p", "j", false, 1, 3, "{compact}") && got(c, "p", "j", true, 1, 3, "{pretty}"),
       "both forms kept apart");
    put(c, "p", "j", true, 1, 4, "7 1 Waiting", "{v4}");
    ok(got(c, "p", "j", true, 1, 3, NULL) && got(c, "p", "j", true, 1, 4, "{v4}"),
       "a put replaces the key's answer");
    ok(tyd_jobcache_get(c, &k, 1, 4, 0, &h) && h.kind == 2 && strcmp(h.live, "7 1 Waiting") == 0 &&
           h.len == 4,
       "the live text and kind come back with the answer");
    is_int((long long)h.live_at, 1, "and the change count it was computed at");
    tyd_jobcache_release(h.ref);
    tyd_jobcache_release(NULL);
    ok(!tyd_jobcache_get(c, &k, 1, 5, 0, &h) && !h.body && !h.ref, "a miss leaves the hit empty");
    tyd_jobcache_stats(c, &st);
    is_int(st.entries, 2, "two answers kept");
    ok(st.hits >= 5 && st.misses >= 7, "hits and misses counted");
    tyd_jobcache_free(c);
}

/* tyd_jobcache_confirm, and references that outlive their answer. */
static void test_confirm_and_refs(void)
{
    struct tyd_jobcache *c = tyd_jobcache_new(1 << 20);
    struct tyd_jobcache_key k = {"p", "j", true};
    struct tyd_jobcache_hit h, h2;

    put(c, "p", "j", true, 1, 3, "7 1 Waiting", "{v3}");
    tyd_jobcache_confirm(c, &k, 1, 3, "7 1 Waiting", 9);
    ok(tyd_jobcache_get(c, &k, 1, 3, 0, &h) && h.live_at == 9, "confirmed: the new change count");
    tyd_jobcache_release(h.ref);
    tyd_jobcache_confirm(c, &k, 1, 3, "6 1 Waiting", 12);
    tyd_jobcache_confirm(c, &k, 1, 4, "7 1 Waiting", 13);
    tyd_jobcache_confirm(c, &k, 1, 3, "7 1 Waiting", 5);
    ok(tyd_jobcache_get(c, &k, 1, 3, 0, &h) && h.live_at == 9,
       "not for another live text, another version, or an earlier count");

    /* h still holds the answer of version 3: replace it, evict everything, free the cache */
    put(c, "p", "j", true, 1, 4, "", "{v4}");
    ok(tyd_jobcache_get(c, &k, 1, 4, 0, &h2) && h2.len == 4 && memcmp(h2.body, "{v4}", 4) == 0,
       "the replacement is served");
    ok(h.len == 4 && memcmp(h.body, "{v3}", 4) == 0 && strcmp(h.live, "7 1 Waiting") == 0,
       "a hit's bytes stay valid after its answer is replaced");
    tyd_jobcache_free(c);
    ok(memcmp(h2.body, "{v4}", 4) == 0, "and after the cache is freed");
    tyd_jobcache_release(h.ref);
    tyd_jobcache_release(h2.ref); /* ASan: no leak, no use after free */
}

/* tyd_jobcache_get_unchanged: by the store's commit epoch alone. */
static void test_unchanged(void)
{
    struct tyd_jobcache *c = tyd_jobcache_new(1 << 20);
    struct tyd_jobcache_key k = {"p", "j", true}, other = {"p", "k", true};
    struct tyd_jobcache_stamp st = {1, 3, 2, "7 1 Waiting", 4, 10};
    struct tyd_jobcache_hit h;
    struct tyd_jobcache_stats stats;

    ok(!tyd_jobcache_get_unchanged(c, &k, 10, &h) && !h.ref, "empty: nothing");
    tyd_jobcache_put(c, &k, &st, "{v3}", 4);
    ok(tyd_jobcache_get_unchanged(c, &k, 10, &h) && h.seq == 1 && h.version == 3 && h.len == 4 &&
           h.kind == 2 && strcmp(h.live, "7 1 Waiting") == 0 && h.live_at == 4,
       "at the epoch it was stamped with: the answer, its row and its live text");
    tyd_jobcache_release(h.ref);
    ok(!tyd_jobcache_get_unchanged(c, &k, 11, &h) && !h.ref,
       "at a later epoch: nothing (something was committed since)");
    ok(!tyd_jobcache_get_unchanged(c, &k, 0, &h), "epoch 0 (unknown): nothing");
    ok(!tyd_jobcache_get_unchanged(c, &other, 10, &h), "another key: nothing");
    ok(tyd_jobcache_get(c, &k, 1, 3, 11, &h), "its version found current at epoch 11");
    tyd_jobcache_release(h.ref);
    ok(tyd_jobcache_get_unchanged(c, &k, 11, &h), "then it comes back at epoch 11");
    tyd_jobcache_release(h.ref);
    ok(tyd_jobcache_get(c, &k, 1, 3, 9, &h) && (tyd_jobcache_release(h.ref), true) &&
           tyd_jobcache_get_unchanged(c, &k, 11, &h),
       "an earlier epoch recorded later does not move it back");
    tyd_jobcache_release(h.ref);
    ok(!tyd_jobcache_get(c, &k, 1, 4, 12, &h) && !tyd_jobcache_get_unchanged(c, &k, 12, &h),
       "a miss on another version records nothing");
    st.version = 4;
    st.store_at = 0;
    tyd_jobcache_put(c, &k, &st, "{v4}", 4);
    ok(!tyd_jobcache_get_unchanged(c, &k, 11, &h), "a replacement stamped without an epoch: not");
    tyd_jobcache_stats(c, &stats);
    is_int((long long)stats.unchanged_hits, 3, "the hits by epoch are counted");
    tyd_jobcache_free(c);
}

static void test_bound(void)
{
    /* 8 shards of 8 KiB: ~1 KiB answers, a few per shard. */
    struct tyd_jobcache *c = tyd_jobcache_new(64 * 1024);
    struct tyd_jobcache_stats st;
    char body[1024], job[32];
    int kept = 0;

    memset(body, 'x', sizeof(body) - 1);
    body[sizeof(body) - 1] = '\0';
    for (int i = 0; i < 1000; i++) {
        snprintf(job, sizeof(job), "job_%d", i);
        put(c, "p", job, true, i + 1, 1, "", body);
        if (i == 500) {
            /* job_0 was evicted long ago; refresh nothing, just check the bound mid-way */
            tyd_jobcache_stats(c, &st);
            ok(st.bytes <= 64 * 1024, "the bound holds while filling (%zu bytes)", st.bytes);
        }
    }
    tyd_jobcache_stats(c, &st);
    ok(st.bytes <= 64 * 1024 && st.entries > 16 && st.entries < 64,
       "after 1000 answers of 1 KiB: %zu kept, %zu bytes",
       st.entries,
       st.bytes);
    ok(st.evictions >= 1000 - st.entries,
       "evictions counted (%llu)",
       (unsigned long long)st.evictions);
    ok(got(c, "p", "job_0", true, 1, 1, NULL), "the oldest answer is gone");
    ok(got(c, "p", "job_999", true, 1000, 1, body), "the newest is there");
    for (int i = 0; i < 1000; i++) {
        snprintf(job, sizeof(job), "job_%d", i);
        char *s = get(c, "p", job, true, i + 1, 1);
        kept += s != NULL;
        free(s);
    }
    is_int(kept, (long long)st.entries, "the answers kept are the last ones put");
    tyd_jobcache_free(c);

    /* A use refreshes: with room for two answers per shard, the answer used before each put
     * survives 200 puts; one not used is evicted. */
    c = tyd_jobcache_new(8 * 3000);
    put(c, "p", "a", true, 1, 1, "", body);
    put(c, "p", "b", true, 1, 1, "", body);
    kept = 1;
    for (int i = 0; i < 200 && kept; i++) {
        snprintf(job, sizeof(job), "n_%d", i);
        kept = got(c, "p", "a", true, 1, 1, body);
        put(c, "p", job, true, i + 2, 1, "", body);
    }
    ok(kept && got(c, "p", "a", true, 1, 1, body), "the answer used before each put stays");
    ok(got(c, "p", "b", true, 1, 1, NULL), "the one not used is gone");
    tyd_jobcache_free(c);

    c = tyd_jobcache_new(8 * 512);
    put(c, "p", "big", true, 1, 1, "", body);
    ok(got(c, "p", "big", true, 1, 1, NULL), "an answer bigger than a shard's share: not kept");
    put(c, "p", "s", true, 1, 1, "", "{}");
    ok(got(c, "p", "s", true, 1, 1, "{}"), "a small one is");
    tyd_jobcache_free(c);

    c = tyd_jobcache_new(0);
    put(c, "p", "s", true, 1, 1, "", "{}");
    ok(got(c, "p", "s", true, 1, 1, NULL), "a zero bound keeps nothing");
    tyd_jobcache_free(c);
    tyd_jobcache_free(NULL);
}

/* Threads: each puts and gets answers whose text names (job, version); a get must give the
 * text of exactly the version asked for. */
struct worker {
    struct tyd_jobcache *c;
    int id, wrong;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    char job[32], body[96], *s;

    for (int i = 0; i < 20000; i++) {
        int j = (i * 7 + w->id) % 50, v = i % 5;
        snprintf(job, sizeof(job), "job_%d", j);
        snprintf(body, sizeof(body), "%s@%d", job, v);
        if (i % 3 == 0)
            put(w->c, "p", job, true, j + 1, v, "", body);
        s = get(w->c, "p", job, true, j + 1, v);
        if (s && strcmp(s, body) != 0)
            w->wrong++;
        free(s);
    }
    return NULL;
}

static void test_threads(void)
{
    struct tyd_jobcache *c = tyd_jobcache_new(16 * 1024);
    struct worker w[4];
    pthread_t t[4];
    int wrong = 0;
    struct tyd_jobcache_stats st;

    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){c, i, 0};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        wrong += w[i].wrong;
    }
    is_int(wrong, 0, "threads: every answer given is the one asked for");
    tyd_jobcache_stats(c, &st);
    ok(st.hits > 0 && st.bytes <= 16 * 1024,
       "threads: hits (%llu), bound held",
       (unsigned long long)st.hits);
    tyd_jobcache_free(c);
}

int main(void)
{
    test_keys_and_stamps();
    test_confirm_and_refs();
    test_unchanged();
    test_bound();
    test_threads();
    return done_testing();
}
