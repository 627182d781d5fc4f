/* SPDX-License-Identifier: Apache-2.0
 * store-epoch.c: has anything been committed to the store since? (ty_store_commit_epoch)
 *
 * In WAL mode every commit, by any process or connection, publishes a new wal-index header in
 * the shared memory SQLite keeps beside the database (the "-shm" file, mapped by every
 * connection): two copies of 48 bytes at its start, the second written first, then a barrier,
 * then the first (the format is documented at sqlite.org/walformat.html, stable since SQLite
 * 3.7.0, version word 3007000). Its change counter grows by one with each commit, so equal
 * headers read at two times mean no commit in between; this is how SQLite itself decides
 * whether a connection's page cache is still good. Reading it takes no lock and no
 * transaction, which is what makes it cheaper than asking SQLite (PRAGMA data_version, or any
 * query, costs a read transaction: shared-memory locks, fcntl calls).
 *
 * The mapping is SQLite's own, obtained from a connection kept open for it (the file's
 * xShmMap with no extension: the region SQLite itself reads, for as long as that connection
 * stays open), never a second mapping of the file by name. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "store-internal.h"
#include "timeutil.h"

/* The wal-index header as SQLite lays it out (native byte order). */
#define HDR_WORDS       STORE_WAL_HEADER_WORDS
#define HDR_VERSION     3007000u /* iVersion */
#define WALINDEX_REGION 32768    /* SQLite's wal-index page size: the size every map asks for */

/* Word 3's first byte is isInit; words 10 and 11 the checksum of words 0-9. */
static bool header_valid(const uint32_t h[HDR_WORDS])
{
    uint32_t s1 = 0, s2 = 0;
    unsigned char init;

    memcpy(&init, &h[3], 1);
    if (h[0] != HDR_VERSION || init != 1)
        return false;
    for (size_t i = 0; i < 10; i += 2) { /* walChecksumBytes, native order */
        s1 += h[i] + s2;
        s2 += h[i + 1] + s1;
    }
    return s1 == h[10] && s2 == h[11];
}

/* Read the header as SQLite's readers do: the first copy, a barrier, the second; true when
 * both agree and are valid (false: a commit being published, or a header being recovered). */
static bool read_header(const uint32_t *map, uint32_t out[HDR_WORDS])
{
    uint32_t second[HDR_WORDS];

    for (size_t i = 0; i < HDR_WORDS; i++)
        out[i] = __atomic_load_n(&map[i], __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_seq_cst);
    for (size_t i = 0; i < HDR_WORDS; i++)
        second[i] = __atomic_load_n(&map[HDR_WORDS + i], __ATOMIC_RELAXED);
    return memcmp(out, second, sizeof(second)) == 0 && header_valid(out);
}

/* After a failure that may pass (the database busy, a header caught mid-publication), the
 * mapping is tried again no sooner than this. */
#define RETRY_USEC 1000000

/* Open the connection that keeps the mapping and take SQLite's map of the wal-index's first
 * region from it. Returns 0; -EAGAIN after a failure that may pass (try again later); -ENOTSUP
 * when this SQLite cannot be read this way (no xShmMap: a VFS without shared memory; no
 * region; a header of another version). Called with epoch_lock held. */
static int watch_open(struct ty_store *s)
{
    struct store_conn *c = NULL;
    struct ty_error e = {0};
    sqlite3_file *f = NULL;
    void volatile *map = NULL;
    uint32_t h[HDR_WORDS];
    int r = -ENOTSUP;

    if (store_conn_open(s->path, false, &c, &e) < 0)
        return -EAGAIN;
    /* A read maps the wal-index (it opens the WAL read side of this connection). */
    if (sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK)
        r = -EAGAIN;
    else if (sqlite3_file_control(c->db, "main", SQLITE_FCNTL_FILE_POINTER, &f) == SQLITE_OK && f &&
             f->pMethods && f->pMethods->iVersion >= 2 && f->pMethods->xShmMap &&
             f->pMethods->xShmMap(f, 0, WALINDEX_REGION, 0, &map) == SQLITE_OK && map)
        r = read_header((const uint32_t *)map, h) ? 0
            : __atomic_load_n((const uint32_t *)map, __ATOMIC_RELAXED) == HDR_VERSION
                ? -EAGAIN /* being written */
                : -ENOTSUP;
    if (r < 0) {
        store_conn_close(c);
        return r;
    }
    s->epoch_conn = c;
    __atomic_store_n(&s->epoch_map, (const uint32_t *)map, __ATOMIC_RELEASE);
    return 0;
}

/* The epoch of header @h when it is the last one seen, else 0, without the lock: a sequence
 * lock over (last header, epoch), which only the locked path below writes. */
static uint64_t epoch_if_same(struct ty_store *s, const uint32_t h[HDR_WORDS])
{
    uint64_t seq = __atomic_load_n(&s->epoch_seq, __ATOMIC_ACQUIRE), epoch;
    bool same = true;

    if (seq & 1)
        return 0;
    for (size_t i = 0; i < HDR_WORDS; i++)
        same = same && __atomic_load_n(&s->epoch_header[i], __ATOMIC_RELAXED) == h[i];
    epoch = __atomic_load_n(&s->epoch, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_acquire);
    if (__atomic_load_n(&s->epoch_seq, __ATOMIC_RELAXED) != seq || !same)
        return 0;
    return epoch;
}

uint64_t ty_store_commit_epoch(struct ty_store *s)
{
    uint32_t h[HDR_WORDS];
    const uint32_t *map = __atomic_load_n(&s->epoch_map, __ATOMIC_ACQUIRE);
    uint64_t epoch;

    /* The common case, nothing committed since the last call: no lock, a few loads. */
    if (map && read_header(map, h) && (epoch = epoch_if_same(s, h)) != 0)
        return epoch;
    /* No map: not without the lock either while it cannot be had (for good, or for now). */
    if (!map && (__atomic_load_n(&s->epoch_off, __ATOMIC_RELAXED) ||
                 ty_mono_usec() < __atomic_load_n(&s->epoch_retry_usec, __ATOMIC_RELAXED)))
        return 0;
    epoch = 0;
    pthread_mutex_lock(&s->epoch_lock);
    if (!s->epoch_map && !s->epoch_off && ty_mono_usec() >= s->epoch_retry_usec) {
        int r = watch_open(s);
        if (r == -ENOTSUP)
            __atomic_store_n(&s->epoch_off, true, __ATOMIC_RELAXED);
        else if (r < 0)
            __atomic_store_n(&s->epoch_retry_usec, ty_mono_usec() + RETRY_USEC, __ATOMIC_RELAXED);
    }
    map = s->epoch_map;
    if (map && read_header(map, h)) {
        if (s->epoch == 0 || memcmp(h, s->epoch_header, sizeof(h)) != 0) {
            /* odd while the pair changes: readers meanwhile take this path */
            __atomic_store_n(&s->epoch_seq, s->epoch_seq + 1, __ATOMIC_RELAXED);
            atomic_thread_fence(memory_order_release);
            for (size_t i = 0; i < HDR_WORDS; i++)
                __atomic_store_n(&s->epoch_header[i], h[i], __ATOMIC_RELAXED);
            __atomic_store_n(&s->epoch, s->epoch + 1, __ATOMIC_RELAXED);
            __atomic_store_n(&s->epoch_seq, s->epoch_seq + 1, __ATOMIC_RELEASE);
        }
        epoch = s->epoch;
    }
    pthread_mutex_unlock(&s->epoch_lock);
    return epoch;
}

void store_epoch_close(struct ty_store *s)
{
    __atomic_store_n(&s->epoch_map, NULL, __ATOMIC_RELEASE);
    store_conn_close(s->epoch_conn);
    s->epoch_conn = NULL;
}
