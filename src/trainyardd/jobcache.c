/* SPDX-License-Identifier: Apache-2.0
 * jobcache.c: the cache of rendered jobs.get answers (jobcache.h). A few shards, chosen by the
 * key's hash, each a chained hash table plus a doubly linked least-recently-used list under
 * its own mutex; the lock is held only to find, link or unlink, never to render or copy. An
 * entry is one allocation with a reference count: the table's reference, and one per hit not
 * yet released; the last release frees it. */
#include "jobcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS          8
#define INITIAL_BUCKETS 64

struct entry {
    struct entry *chain;       /* next in its bucket */
    struct entry *prev, *next; /* LRU list: head is the most recently used */
    uint64_t hash;
    size_t cost;
    int64_t seq, version;
    unsigned kind;
    bool pretty;
    _Atomic unsigned refs;
    uint64_t live_at;  /* under the shard's lock */
    uint64_t store_at; /* under the shard's lock */
    char *live;        /* after the key */
    char *body;        /* after the live text */
    size_t len;
    size_t key_len; /* project '\0' job: key_len bytes at the end of the entry */
    char key[];
};

struct shard {
    pthread_mutex_t lock;
    struct entry **buckets;
    size_t nbuckets, entries, bytes, max_bytes;
    struct entry *head, *tail;
    uint64_t hits, misses, evictions, unchanged_hits;
};

struct tyd_jobcache {
    struct shard shards[SHARDS];
};

/* FNV-1a over project, a NUL, job and the form. */
static uint64_t key_hash(const struct tyd_jobcache_key *k)
{
    uint64_t h = 14695981039346656037ull;
    const char *parts[2] = {k->project, k->job};

    for (size_t i = 0; i < 2; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            h = (h ^ *p) * 1099511628211ull;
        h = (h ^ 0) * 1099511628211ull;
    }
    return (h ^ (k->pretty ? 1u : 2u)) * 1099511628211ull;
}

static bool key_equal(const struct entry *e, const struct tyd_jobcache_key *k, uint64_t hash)
{
    size_t pl;

    if (e->hash != hash || e->pretty != k->pretty)
        return false;
    pl = strlen(k->project);
    return pl < e->key_len && memcmp(e->key, k->project, pl + 1) == 0 &&
           strcmp(e->key + pl + 1, k->job) == 0;
}

struct tyd_jobcache *tyd_jobcache_new(size_t max_bytes)
{
    struct tyd_jobcache *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    for (size_t i = 0; i < SHARDS; i++)
        pthread_mutex_init(&c->shards[i].lock, NULL);
    for (size_t i = 0; i < SHARDS; i++) {
        struct shard *s = &c->shards[i];
        s->max_bytes = max_bytes / SHARDS;
        s->nbuckets = INITIAL_BUCKETS;
        s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
        if (!s->buckets) {
            tyd_jobcache_free(c);
            return NULL;
        }
    }
    return c;
}

/* Drop a reference to @e; the last frees it (one allocation: entry_new). */
static void entry_unref(struct entry *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
        free(e);
}

void tyd_jobcache_release(void *ref)
{
    if (ref)
        entry_unref(ref);
}

void tyd_jobcache_free(struct tyd_jobcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < SHARDS; i++) {
        struct shard *s = &c->shards[i];
        struct entry *e = s->head;
        while (e) {
            struct entry *next = e->next;
            entry_unref(e);
            e = next;
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->lock);
    }
    free(c);
}

static struct shard *shard_of(struct tyd_jobcache *c, uint64_t hash)
{
    return &c->shards[(hash >> 59) % SHARDS]; /* the top bits: the buckets use the low ones */
}

static struct entry **bucket_of(struct shard *s, uint64_t hash)
{
    return &s->buckets[hash & (s->nbuckets - 1)];
}

static void lru_unlink(struct shard *s, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        s->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        s->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(struct shard *s, struct entry *e)
{
    e->prev = NULL;
    e->next = s->head;
    if (s->head)
        s->head->prev = e;
    s->head = e;
    if (!s->tail)
        s->tail = e;
}

/* Take @e out of @s (table and list) and free it. */
static void remove_entry(struct shard *s, struct entry *e)
{
    struct entry **pp = bucket_of(s, e->hash);

    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    lru_unlink(s, e);
    s->entries--;
    s->bytes -= e->cost;
    entry_unref(e);
}

/* Double the buckets when the chains grow past one entry per bucket on average; on failure
 * to allocate, the table simply stays as it is (longer chains, still correct). */
static void maybe_grow(struct shard *s)
{
    size_t n = s->nbuckets * 2;
    struct entry **b;

    if (s->entries <= s->nbuckets || !(b = calloc(n, sizeof(*b))))
        return;
    for (size_t i = 0; i < s->nbuckets; i++) {
        struct entry *e = s->buckets[i];
        while (e) {
            struct entry *next = e->chain;
            e->chain = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
}

static struct entry *find(struct shard *s, const struct tyd_jobcache_key *k, uint64_t hash)
{
    for (struct entry *e = *bucket_of(s, hash); e; e = e->chain)
        if (key_equal(e, k, hash))
            return e;
    return NULL;
}

/* Hand out @e as *hit (a new reference) and make it the most recently used; under s->lock. */
static void take_hit(struct shard *s, struct entry *e, struct tyd_jobcache_hit *hit)
{
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    hit->seq = e->seq;
    hit->version = e->version;
    hit->body = e->body;
    hit->len = e->len;
    hit->kind = e->kind;
    hit->live = e->live;
    hit->live_at = e->live_at;
    hit->ref = e;
    if (s->head != e) {
        lru_unlink(s, e);
        lru_push_front(s, e);
    }
    s->hits++;
}

/* The answer for @key as a hit: by its row (@by_row: @seq and @version, recording @store_at
 * with it) or by the store's commit epoch @store_at alone; counts the lookup. */
static bool lookup(struct tyd_jobcache *c,
                   const struct tyd_jobcache_key *key,
                   bool by_row,
                   int64_t seq,
                   int64_t version,
                   uint64_t store_at,
                   struct tyd_jobcache_hit *hit)
{
    uint64_t hash = key_hash(key);
    struct shard *s = shard_of(c, hash);
    struct entry *e;
    bool found;

    memset(hit, 0, sizeof(*hit));
    pthread_mutex_lock(&s->lock);
    e = find(s, key, hash);
    found = e && (by_row ? e->seq == seq && e->version == version : e->store_at == store_at);
    if (found) {
        if (by_row && store_at > e->store_at)
            e->store_at = store_at;
        take_hit(s, e, hit);
        if (!by_row)
            s->unchanged_hits++;
    } else if (by_row) {
        s->misses++; /* a miss by the epoch alone is looked up again by row */
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

bool tyd_jobcache_get(struct tyd_jobcache *c,
                      const struct tyd_jobcache_key *key,
                      int64_t seq,
                      int64_t version,
                      uint64_t store_at,
                      struct tyd_jobcache_hit *hit)
{
    return lookup(c, key, true, seq, version, store_at, hit);
}

bool tyd_jobcache_get_unchanged(struct tyd_jobcache *c,
                                const struct tyd_jobcache_key *key,
                                uint64_t store_at,
                                struct tyd_jobcache_hit *hit)
{
    if (store_at == 0) {
        memset(hit, 0, sizeof(*hit));
        return false;
    }
    return lookup(c, key, false, 0, 0, store_at, hit);
}

void tyd_jobcache_confirm(struct tyd_jobcache *c,
                          const struct tyd_jobcache_key *key,
                          int64_t seq,
                          int64_t version,
                          const char *live,
                          uint64_t live_at)
{
    uint64_t hash = key_hash(key);
    struct shard *s = shard_of(c, hash);
    struct entry *e;

    pthread_mutex_lock(&s->lock);
    e = find(s, key, hash);
    if (e && e->seq == seq && e->version == version && e->live_at < live_at &&
        strcmp(e->live, live) == 0)
        e->live_at = live_at;
    pthread_mutex_unlock(&s->lock);
}

/* A new entry for @key and @stamp holding a copy of @body, in one allocation (the entry, its
 * key, its live text, its body); NULL when memory is short. */
static struct entry *entry_new(const struct tyd_jobcache_key *key,
                               uint64_t hash,
                               const struct tyd_jobcache_stamp *stamp,
                               const char *body,
                               size_t len)
{
    size_t pl = strlen(key->project), jl = strlen(key->job);
    const char *live = stamp->live ? stamp->live : "";
    size_t ll = strlen(live) + 1, cost = sizeof(struct entry) + pl + jl + 2 + ll + len;
    struct entry *e = malloc(cost);

    if (!e)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->key_len = pl + jl + 2;
    memcpy(e->key, key->project, pl + 1);
    memcpy(e->key + pl + 1, key->job, jl + 1);
    e->live = e->key + e->key_len;
    memcpy(e->live, live, ll);
    e->body = e->live + ll;
    memcpy(e->body, body, len);
    e->len = len;
    e->hash = hash;
    e->pretty = key->pretty;
    e->seq = stamp->seq;
    e->version = stamp->version;
    e->kind = stamp->kind;
    e->live_at = stamp->live_at;
    e->store_at = stamp->store_at;
    e->cost = cost;
    atomic_init(&e->refs, 1); /* the table's */
    return e;
}

void tyd_jobcache_put(struct tyd_jobcache *c,
                      const struct tyd_jobcache_key *key,
                      const struct tyd_jobcache_stamp *stamp,
                      const char *body,
                      size_t len)
{
    uint64_t hash = key_hash(key);
    struct shard *s = shard_of(c, hash);
    struct entry *e = NULL, *old;

    if (len < s->max_bytes) /* built outside the lock */
        e = entry_new(key, hash, stamp, body, len);
    if (e && e->cost > s->max_bytes) {
        entry_unref(e);
        e = NULL;
    }
    pthread_mutex_lock(&s->lock);
    if ((old = find(s, key, hash)))
        remove_entry(s, old);
    if (e) {
        while (s->tail && s->bytes + e->cost > s->max_bytes) {
            remove_entry(s, s->tail);
            s->evictions++;
        }
        e->chain = *bucket_of(s, hash);
        *bucket_of(s, hash) = e;
        lru_push_front(s, e);
        s->entries++;
        s->bytes += e->cost;
        maybe_grow(s);
    }
    pthread_mutex_unlock(&s->lock);
}

void tyd_jobcache_stats(struct tyd_jobcache *c, struct tyd_jobcache_stats *ret)
{
    memset(ret, 0, sizeof(*ret));
    for (size_t i = 0; i < SHARDS; i++) {
        struct shard *s = &c->shards[i];
        pthread_mutex_lock(&s->lock);
        ret->hits += s->hits;
        ret->misses += s->misses;
        ret->evictions += s->evictions;
        ret->unchanged_hits += s->unchanged_hits;
        ret->entries += s->entries;
        ret->bytes += s->bytes;
        ret->max_bytes += s->max_bytes;
        pthread_mutex_unlock(&s->lock);
    }
}
