/* SPDX-License-Identifier: Apache-2.0
 * jobcache.h: the service's cache of rendered jobs.get answers, so that a job that has not
 * changed is not parsed from the store and rendered again on every request.
 *
 * An answer is keyed by (project, job id, pretty or compact form) and stamped with what it was
 * rendered from: the row's seq and version (store.h: SQLite bumps the version on every write of
 * the row or of its transitions, from any process) and a "live" text of what the answer adds
 * from outside the store (a QUEUED job's jobPosition and stateReason, from the scheduler's
 * memory), with a kind the caller defines saying which of those it holds. A lookup gives the
 * answer only for the same seq and version; the caller then compares the live text with what it
 * computes now for that kind, or skips that when the live text was last found current at the
 * same count of the scheduler's changes (live_at: ty_sched_changes, which the caller reads
 * before computing the live text). So an answer is never served for a job that changed since
 * it was rendered, whoever changed it.
 *
 * An answer also remembers the store's commit epoch (ty_store_commit_epoch) at which its row
 * version was last found current (store_at: read before the row or its version). While the
 * epoch stands, nothing was committed since, so tyd_jobcache_get_unchanged gives the answer
 * without the version being read at all.
 *
 * A hit is not a copy: it holds a reference to the cache's own bytes (counted; an answer
 * evicted or replaced meanwhile lives on until its last reference is released), so that the
 * caller can hand them to libmicrohttpd without copying (tyd_jobcache_release is a
 * MHD_ContentReaderFreeCallback).
 *
 * Bounded: at most max_bytes of answers, keys and bookkeeping in all (split evenly among a few
 * shards, each with its own lock and least-recently-used order); the least recently used go
 * first, and an answer bigger than a shard's share is not kept. Thread-safe. */
#ifndef TYD_JOBCACHE_H
#define TYD_JOBCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The service's bound on the cache (docs/service.md#limits). A QUEUED job's pretty answer is
 * about 1.5 KB: this keeps the last ~10,000 answers asked for. */
#define TYD_JOBCACHE_DEFAULT_BYTES (16u * 1024 * 1024)

struct tyd_jobcache;

/* What identifies a cached answer. */
struct tyd_jobcache_key {
    const char *project;
    const char *job;
    bool pretty; /* the indented form (prettyPrint, the default) or the compact one */
};

/* What an answer was rendered from. */
struct tyd_jobcache_stamp {
    int64_t seq;       /* the row's */
    int64_t version;   /* the row's (ty_store_job_version) */
    unsigned kind;     /* the caller's: which live values the answer holds (0: none) */
    const char *live;  /* those values as text ("" when none; NUL-terminated) */
    uint64_t live_at;  /* the caller's change count read before computing them */
    uint64_t store_at; /* the store's commit epoch read before the row (0: none) */
};

/* A cached answer as looked up: the cache's own bytes, valid until tyd_jobcache_release(ref)
 * (read only). */
struct tyd_jobcache_hit {
    int64_t seq, version; /* the row the answer was rendered from */
    const char *body;
    size_t len;
    unsigned kind;
    const char *live;
    uint64_t live_at; /* as stamped, or as last confirmed (tyd_jobcache_confirm) */
    void *ref;        /* the reference held: pass to tyd_jobcache_release once */
};

/* A new, empty cache of at most @max_bytes (0: a cache that keeps nothing). NULL only when
 * memory is short. */
struct tyd_jobcache *tyd_jobcache_new(size_t max_bytes);
/* Free @c and its answers (those still referenced by hits: at their release); NULL-safe. No
 * call may be in progress. */
void tyd_jobcache_free(struct tyd_jobcache *c);

/* The answer for @key rendered from the row (@seq, @version): true and *hit (a reference,
 * with the stamp's kind, live text and live_at for the caller to check) when there is one,
 * which becomes the most recently used; false (and *hit zeroed) when there is none for that
 * row version. A hit records @store_at (the store's commit epoch the caller read before the
 * version; 0: none) as the answer's, when later than the one it has. */
bool tyd_jobcache_get(struct tyd_jobcache *c,
                      const struct tyd_jobcache_key *key,
                      int64_t seq,
                      int64_t version,
                      uint64_t store_at,
                      struct tyd_jobcache_hit *hit);
/* The answer for @key when its row version was found current at the store's commit epoch
 * @store_at (nonzero): nothing was committed since, so it is the row's answer still (the live
 * text is for the caller to check as after tyd_jobcache_get). False (*hit zeroed) otherwise:
 * read the version and call tyd_jobcache_get. */
bool tyd_jobcache_get_unchanged(struct tyd_jobcache *c,
                                const struct tyd_jobcache_key *key,
                                uint64_t store_at,
                                struct tyd_jobcache_hit *hit);
/* Release the reference @ref of a hit (NULL-safe); the cache may have been freed since. The
 * signature of libmicrohttpd's MHD_ContentReaderFreeCallback. */
void tyd_jobcache_release(void *ref);

/* The live text @live of the answer for @key rendered from (@seq, @version) was found current
 * at change count @live_at: record it (when the cached answer still is that one, with that
 * live text, and was stamped or confirmed at an earlier count), so that later lookups at the
 * same count need not compute it again. */
void tyd_jobcache_confirm(struct tyd_jobcache *c,
                          const struct tyd_jobcache_key *key,
                          int64_t seq,
                          int64_t version,
                          const char *live,
                          uint64_t live_at);

/* Keep @body (@len bytes, copied) as the answer for @key rendered from @stamp, replacing the
 * key's previous answer, and evicting the least recently used answers past the bound. An
 * answer bigger than a shard's share of the bound is not kept (the key's previous answer is
 * dropped all the same). */
void tyd_jobcache_put(struct tyd_jobcache *c,
                      const struct tyd_jobcache_key *key,
                      const struct tyd_jobcache_stamp *stamp,
                      const char *body,
                      size_t len);

/* Counters, for tests and the benchmark's notes. */
struct tyd_jobcache_stats {
    uint64_t hits, misses, evictions;
    uint64_t unchanged_hits;          /* of the hits, those the store's commit epoch gave */
    size_t entries, bytes, max_bytes; /* max_bytes: the bound, as the shards share it */
};
void tyd_jobcache_stats(struct tyd_jobcache *c, struct tyd_jobcache_stats *ret);

#endif
