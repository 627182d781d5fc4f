/* SPDX-License-Identifier: Apache-2.0
 * test-store-ioerr.c: the store under a full or failing disk, in the manner of SQLite's own
 * I/O-error tests: a VFS that wraps the real one (unix) makes every write, sync and truncate
 * from the Nth on fail (SQLITE_FULL with errno ENOSPC, or SQLITE_IOERR_WRITE with EIO), for N =
 * 1, 2, ... until a whole sequence of writes (create, claim, state changes, cancel, labels, log
 * index, give back) succeeds. For each N: every call that failed says why with the errno the API
 * maps (ENOSPC -> 429, EIO -> 503) and a message naming the state directory's filesystem; once
 * the faults stop, the same open store works again (no reopen); and a fresh connection finds
 * PRAGMA integrity_check "ok", every acknowledged change there and nothing of a refused one.
 * Also ty_store_errno's table. */
#include <errno.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "store-rows.h"
#include "store.h"
#include "tap.h"

static char tmpdir[] = "/tmp/ty-store-ioerr-XXXXXX";

/* --- the faulty VFS ---------------------------------------------------------------------- */

static sqlite3_vfs *real;
static sqlite3_vfs faulty;
static long countdown = -1; /* writes left before failing; -1: never */
static int fault_rc, fault_errno, last_errno;
static long n_writes;

struct ffile {
    sqlite3_file base;
    sqlite3_file *real; /* follows this struct */
};

static int fail_now(void)
{
    n_writes++;
    if (countdown < 0)
        return 0;
    if (countdown > 0) {
        countdown--;
        return 0;
    }
    last_errno = fault_errno;
    return fault_rc; /* persistent until cleared, like a disk that stays full */
}

#define REAL(f) (((struct ffile *)(f))->real)
static int f_close(sqlite3_file *f)
{
    int rc = REAL(f)->pMethods->xClose(REAL(f));
    return rc;
}
static int f_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int f_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    int rc = fail_now();
    return rc ? rc : REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = fail_now();
    return rc ? (fault_rc == SQLITE_FULL ? SQLITE_FULL : SQLITE_IOERR_TRUNCATE)
              : REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int f_sync(sqlite3_file *f, int flags)
{
    int rc = fail_now();
    return rc ? (fault_rc == SQLITE_FULL ? SQLITE_FULL : SQLITE_IOERR_FSYNC)
              : REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int f_size(sqlite3_file *f, sqlite3_int64 *s)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), s);
}
static int f_lock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int f_unlock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int f_check(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int f_fcntl(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int f_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int f_dev(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int f_shmmap(sqlite3_file *f, int pg, int sz, int ext, void volatile **p)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, p);
}
static int f_shmlock(sqlite3_file *f, int off, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void f_shmbarrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int f_shmunmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

static const sqlite3_io_methods fmethods = {
    .iVersion = 2,
    .xClose = f_close,
    .xRead = f_read,
    .xWrite = f_write,
    .xTruncate = f_truncate,
    .xSync = f_sync,
    .xFileSize = f_size,
    .xLock = f_lock,
    .xUnlock = f_unlock,
    .xCheckReservedLock = f_check,
    .xFileControl = f_fcntl,
    .xSectorSize = f_sector,
    .xDeviceCharacteristics = f_dev,
    .xShmMap = f_shmmap,
    .xShmLock = f_shmlock,
    .xShmBarrier = f_shmbarrier,
    .xShmUnmap = f_shmunmap,
};

static int v_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
    struct ffile *ff = (struct ffile *)f;
    int rc;

    ff->real = (sqlite3_file *)(ff + 1);
    rc = real->xOpen(real, name, ff->real, flags, out);
    f->pMethods = rc == SQLITE_OK && ff->real->pMethods ? &fmethods : NULL;
    return rc;
}
static int v_delete(sqlite3_vfs *v, const char *name, int sync)
{
    return real->xDelete(real, name, sync);
}
static int v_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    return real->xAccess(real, name, flags, out);
}
static int v_full(sqlite3_vfs *v, const char *name, int n, char *out)
{
    return real->xFullPathname(real, name, n, out);
}
static int v_random(sqlite3_vfs *v, int n, char *out)
{
    return real->xRandomness(real, n, out);
}
static int v_sleep(sqlite3_vfs *v, int us)
{
    return real->xSleep(real, us);
}
static int v_time(sqlite3_vfs *v, double *t)
{
    return real->xCurrentTime(real, t);
}
static int v_lasterr(sqlite3_vfs *v, int n, char *buf)
{
    return countdown == 0 ? last_errno : real->xGetLastError(real, n, buf);
}
static int v_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
    return real->xCurrentTimeInt64(real, t);
}

static void install_vfs(void)
{
    real = sqlite3_vfs_find(NULL);
    faulty = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(struct ffile) + real->szOsFile,
        .mxPathname = real->mxPathname,
        .zName = "faulty",
        .xOpen = v_open,
        .xDelete = v_delete,
        .xAccess = v_access,
        .xFullPathname = v_full,
        .xDlOpen = NULL,
        .xRandomness = v_random,
        .xSleep = v_sleep,
        .xCurrentTime = v_time,
        .xGetLastError = v_lasterr,
        .xCurrentTimeInt64 = v_time64,
    };
    if (sqlite3_vfs_register(&faulty, 1) != SQLITE_OK)
        BAIL_OUT("cannot register the faulty VFS");
}

/* --- the sequence ------------------------------------------------------------------------ */

/* What the sequence got acknowledged. */
struct acked {
    bool created, claimed, running, unclaimed, cancelled, labelled, indexed;
    int64_t seq;
};

static int bad; /* calls that failed with the wrong errno or message */

static bool check(int r, const struct ty_error *e, int want, const char *what)
{
    if (r >= 0)
        return true;
    if (e->code != want ||
        !strstr(e->msg, want == EIO ? "I/O error in the state directory" : "filesystem is full")) {
        diag("%s: got %d (%s), want errno %d", what, e->code, e->msg, want);
        bad++;
    }
    return false;
}

/* Run the sequence on @s with faults armed; each failing call is checked against @want. */
static void sequence(struct ty_store *s, const char *id, int want, struct acked *a)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = test_queued_row(id);
    _cleanup_json_ json_t *labels = json_pack("{s:s}", "team", "x");
    struct ty_error e = {0};

    a->created = check(ty_store_insert_job(s, row, &e), &e, want, "insert");
    if (!a->created)
        return;
    a->seq = row->seq;
    a->claimed = check(ty_store_claim_job(s, row->seq, 4242, 1, NULL, &e), &e, want, "claim");
    if (a->claimed)
        a->unclaimed =
            check(ty_store_unclaim_job(s, row->seq, 4242, NULL, &e), &e, want, "unclaim");
    if (a->unclaimed &&
        check(ty_store_claim_job(s, row->seq, 4343, 1, NULL, &e), &e, want, "claim 2"))
        a->running = check(ty_store_set_state(s, row->seq, TY_STATE_RUNNING, 200, NULL, &e),
                           &e,
                           want,
                           "set_state");
    a->indexed = check(ty_store_add_log_file(s, row->seq, "service", NULL, "/x/service.log", &e),
                       &e,
                       want,
                       "add_log_file");
    a->labelled =
        check(ty_store_update_labels(s, "p", id, labels, 0, NULL, &e), &e, want, "update_labels");
    a->cancelled = check(ty_store_cancel_job(s, "p", id, 300, NULL, &e), &e, want, "cancel");
}

/* What a fresh connection finds agrees with @a. */
static bool consistent(const char *path, const char *id, const struct acked *a)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = true;
    char sql[256];

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, "unix") != SQLITE_OK)
        return false;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "ok"))
        ok = false;
    sqlite3_finalize(st);
    (void)snprintf(sql,
                   sizeof(sql),
                   "SELECT state, shim_pid, labels, (SELECT count(*) FROM log_files WHERE "
                   "job_seq = seq), (SELECT count(*) FROM transitions WHERE job_seq = seq) "
                   "FROM jobs WHERE job_id = '%s'",
                   id);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return false;
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        ok = ok && !a->created; /* refused: nowhere */
    } else {
        const char *state = (const char *)sqlite3_column_text(st, 0);
        int64_t pid = sqlite3_column_int64(st, 1);
        const char *labels = (const char *)sqlite3_column_text(st, 2);
        ok = ok && a->created;
        ok = ok && (sqlite3_column_int(st, 3) == 1) == a->indexed;
        ok = ok && (strstr(labels, "team") != NULL) == a->labelled;
        if (a->cancelled)
            ok = ok && strcmp(state,
                              a->running || (a->claimed && !a->unclaimed) ? "CANCELLING"
                                                                          : "CANCELLED") == 0;
        else
            ok = ok && strcmp(state, a->running ? "RUNNING" : "QUEUED") == 0;
        if (a->claimed && !a->unclaimed)
            ok = ok && pid == 4242;
        /* one transition per state entered */
        ok = ok && sqlite3_column_int(st, 4) == 1 + (a->running ? 1 : 0) + (a->cancelled ? 1 : 0);
        if (!ok)
            diag("%s: state %s pid %lld labels %s", id, state, (long long)pid, labels);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

static void run_faults(int rc, int sys, const char *kind)
{
    _cleanup_free_ char *path = xasprintf("%s/%s.db", tmpdir, kind);
    struct ty_store *s = NULL;
    struct ty_error e = {0};
    int inconsistent = 0, unrecovered = 0, failures = 0;
    long n;

    if (ty_store_open(path, &s, &e) < 0)
        BAIL_OUT("open: %s", e.msg);
    fault_rc = rc;
    fault_errno = sys;
    for (n = 0; n < 400; n++) {
        char id[32], after[32];
        struct acked a = {0};
        bool all;

        (void)snprintf(id, sizeof(id), "j%ld", n);
        (void)snprintf(after, sizeof(after), "after%ld", n);
        countdown = n;
        sequence(s, id, sys == ENOSPC ? ENOSPC : EIO, &a);
        all = countdown > 0;
        countdown = -1;
        if (!all)
            failures++;
        /* The faults are gone: the same store works again. */
        {
            _cleanup_(ty_job_row_freep) struct ty_job_row *row = test_queued_row(after);
            if (ty_store_insert_job(s, row, &e) < 0) {
                diag("after fault %ld: %s", n, e.msg);
                unrecovered++;
            }
        }
        if (!consistent(path, id, &a)) {
            diag("fault at write %ld: the store disagrees with what was acknowledged", n);
            inconsistent++;
        }
        if (all)
            break;
    }
    ok(failures > 3, "%s: the sequence met a fault at %d write points", kind, failures);
    ok(n < 400, "%s: the sequence ran whole once the faults came after it", kind);
    ok(bad == 0, "%s: every refused call says so with the right errno and message", kind);
    ok(unrecovered == 0, "%s: the store works again without a reopen", kind);
    ok(inconsistent == 0, "%s: integrity ok, acknowledged changes there, refused ones not", kind);
    ty_store_close(s);
    bad = 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

int main(void)
{
    plan(12);
    ok(ty_store_errno(SQLITE_FULL, 0) == ENOSPC && ty_store_errno(SQLITE_FULL, EDQUOT) == EDQUOT &&
           ty_store_errno(SQLITE_IOERR_FSYNC, ENOSPC) == ENOSPC &&
           ty_store_errno(SQLITE_IOERR_WRITE, EIO) == EIO &&
           ty_store_errno(SQLITE_IOERR_WRITE, EROFS) == EROFS &&
           ty_store_errno(SQLITE_READONLY, 0) == EROFS && ty_store_errno(SQLITE_BUSY, 0) == EBUSY &&
           ty_store_errno(SQLITE_CORRUPT, 0) == EBADMSG &&
           ty_store_errno(SQLITE_ERROR, 0) == EPROTO,
       "ty_store_errno: full, quota, I/O, read-only, busy, corrupt, refused");
    ok(ty_store_fs_error(ENOSPC) && ty_store_fs_error(EIO) && ty_store_fs_error(EROFS) &&
           !ty_store_fs_error(EPROTO) && !ty_store_fs_error(ENOENT),
       "ty_store_fs_error: the filesystem's failures, not the job's");
    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp");
    install_vfs();
    run_faults(SQLITE_FULL, ENOSPC, "full");
    run_faults(SQLITE_IOERR_WRITE, EIO, "ioerr");
    (void)nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
