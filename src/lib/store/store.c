/* SPDX-License-Identifier: Apache-2.0
 * store.c: the job store's opening (schema migrations), connections and their pool, and its
 * errors; rows, etags and the REST view are in store-rows.c, queries and writes in
 * store-jobs.c, the group-commit insert in store-insert.c.
 *
 * Storage choices:
 *  - A job's state is stored as its REST enum name ("QUEUED", "RUNNING", ...), in jobs.state
 *    and transitions.state, so the database reads well in the sqlite3 shell and does not
 *    depend on the enum's numbering.
 *  - JSON values (labels, training_input, training_output, options) are compact JSON text;
 *    training_output is SQL NULL until set.
 *  - A log file without a trial is stored with trial '' (so UNIQUE(job_seq, task, trial)
 *    holds; NULLs would be distinct) and read back as NULL.
 *  - Every state a job enters is a row of transitions, the initial one (at create_usec)
 *    included; their rowid gives the order.
 *
 * Pool: connections are opened lazily (SQLITE_OPEN_NOMUTEX: each is used by one thread at a
 * time) and each caches its prepared statements. At most STORE_MAX_OPEN are open while
 * threads wait for one (a thread that already holds one, e.g. inside a scan callback, may
 * open more rather than deadlock); at most STORE_MAX_IDLE stay open when nobody waits. The
 * pool lock is held only to pop or push a connection, never during a query. */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "statemode.h"
#include "store-internal.h"
#include "timeutil.h"

#define STORE_MAX_OPEN  16
#define STORE_MAX_IDLE  8
#define STORE_BUSY_MS   10000
#define STORE_CACHE_KIB 256               /* page cache per connection */
#define STORE_WAL_LIMIT (4 * 1024 * 1024) /* WAL bytes kept after a checkpoint */

/* Connections the calling thread holds (from any store): lets nested calls bypass the cap.
 * Per thread, not shared: a thread that holds one connection and asks for another (a nested
 * call, possibly into another store) must not wait for the cap, or it could wait on itself or
 * on a thread waiting for it. It cannot live in struct ty_store: the count spans stores. */
static _Thread_local unsigned held_conns;

static const char *const stmt_sql[ST__MAX] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_INSERT_JOB] = "INSERT INTO jobs (project, job_id, state, create_usec, labels, "
                      "training_input, runtime, options, sweep_key) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [ST_INSERT_TRANSITION] = "INSERT INTO transitions (job_seq, state, usec) VALUES (?1, ?2, ?3)",
    [ST_GET_JOB] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE project = ?1 AND job_id = ?2",
    [ST_GET_JOB_BY_SEQ] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE seq = ?1",
    [ST_JOB_VERSION] = "SELECT seq, version FROM jobs INDEXED BY jobs_name_version "
                       "WHERE project = ?1 AND job_id = ?2",
    [ST_SCAN] =
        "SELECT " STORE_JOB_COLS " FROM jobs "
        "WHERE project = ?1 AND seq < ?2 AND (?3 IS NULL OR state = ?3) "
        "AND (?4 = '' OR lower(substr(job_id, 1, length(?4))) = lower(?4)) ORDER BY seq DESC",
    [ST_UNFINISHED] = "SELECT " STORE_JOB_COLS " FROM jobs "
                      "WHERE state IN ('STATE_UNSPECIFIED', 'QUEUED', 'PREPARING', 'RUNNING', "
                      "'CANCELLING') ORDER BY seq",
    [ST_QUEUED] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE state = 'QUEUED' AND shim_pid = 0 "
                  "AND internal_retries = 0 ORDER BY seq LIMIT ?1",
    [ST_CLAIM] = "UPDATE jobs SET shim_pid = ?2, shim_start = ?3, grant = ?4 WHERE seq = ?1 AND "
                 "shim_pid = 0 "
                 "AND (state = 'QUEUED' OR (internal_retries > 0 AND state IN ('PREPARING', "
                 "'RUNNING')))",
    [ST_UNCLAIM] = "UPDATE jobs SET shim_pid = 0, shim_start = 0 WHERE seq = ?1 AND shim_pid = ?2 "
                   "AND state IN ('QUEUED', 'PREPARING', 'RUNNING')",
    [ST_JOB_EXISTS] = "SELECT 1 FROM jobs WHERE seq = ?1",
    [ST_UPDATE_STATE] = "UPDATE jobs SET state = ?2, start_usec = ?3, end_usec = ?4, "
                        "error_message = ?5 WHERE seq = ?1",
    [ST_UPDATE_LABELS] = "UPDATE jobs SET labels = ?2, etag = ?3 WHERE seq = ?1",
    [ST_SET_OUTPUT] = "UPDATE jobs SET training_output = ?2 WHERE seq = ?1",
    [ST_SET_REASON] = "UPDATE jobs SET state_reason = ?2 WHERE seq = ?1",
    [ST_TRANSITIONS] = "SELECT state, usec FROM transitions WHERE job_seq = ?1 ORDER BY rowid",
    [ST_LAST_TRANSITION] = "SELECT MAX(usec) FROM transitions WHERE job_seq = ?1",
    [ST_ADD_LOG] = "INSERT INTO log_files (job_seq, task, trial, path) VALUES (?1, ?2, ?3, ?4) "
                   "ON CONFLICT (job_seq, task, trial) DO UPDATE SET path = excluded.path "
                   "WHERE path <> excluded.path",
    [ST_LOG_FILES] = "SELECT task, trial, path FROM log_files WHERE job_seq = ?1 "
                     "ORDER BY task, trial",
    [ST_SET_ATTEMPT_STATUS] = "UPDATE jobs SET attempt_status = ?2 WHERE seq = ?1",
    [ST_SET_OUTCOME] = "UPDATE jobs SET outcome = ?2, outcome_message = ?3 WHERE seq = ?1",
    [ST_RELEASE] = "UPDATE jobs SET shim_pid = 0, shim_start = 0, internal_retries = ?2, "
                   "first_attempt = ?3 WHERE seq = ?1",
    [ST_RETRY_JOBS] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE state IN ('QUEUED', "
                      "'PREPARING', 'RUNNING') AND shim_pid = 0 AND internal_retries > 0 "
                      "ORDER BY seq",
};

/* Schema migrations, in order: step i brings the database to user_version i + 1. Each runs
 * in its own transaction. Append new steps; never edit a released one. */
static const char *const migrations[] = {
    /* 1: the tables. */
    "CREATE TABLE jobs ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " project TEXT NOT NULL,"
    " job_id TEXT NOT NULL,"
    " state TEXT NOT NULL,"
    " create_usec INTEGER NOT NULL DEFAULT 0,"
    " start_usec INTEGER NOT NULL DEFAULT 0,"
    " end_usec INTEGER NOT NULL DEFAULT 0,"
    " error_message TEXT NOT NULL DEFAULT '',"
    " labels TEXT NOT NULL DEFAULT '{}',"
    " training_input TEXT NOT NULL,"
    " training_output TEXT,"
    " etag INTEGER NOT NULL DEFAULT 1,"
    " runtime TEXT NOT NULL DEFAULT '',"
    " options TEXT NOT NULL DEFAULT '{}',"
    " shim_pid INTEGER NOT NULL DEFAULT 0,"
    " shim_start INTEGER NOT NULL DEFAULT 0,"
    " sweep_key TEXT NOT NULL DEFAULT '',"
    " UNIQUE (project, job_id));"
    "CREATE INDEX jobs_project_seq ON jobs (project, seq DESC);"
    "CREATE INDEX jobs_state ON jobs (state, seq);"
    "CREATE TABLE transitions ("
    " job_seq INTEGER NOT NULL REFERENCES jobs (seq) ON DELETE CASCADE,"
    " state TEXT NOT NULL,"
    " usec INTEGER NOT NULL);"
    "CREATE INDEX transitions_job ON transitions (job_seq);"
    "CREATE TABLE log_files ("
    " job_seq INTEGER NOT NULL REFERENCES jobs (seq) ON DELETE CASCADE,"
    " task TEXT NOT NULL,"
    " trial TEXT NOT NULL DEFAULT '',"
    " path TEXT NOT NULL,"
    " UNIQUE (job_seq, task, trial));",
    /* 2: why a QUEUED job waits in its runtime's queue (Slurm's reason). */
    "ALTER TABLE jobs ADD COLUMN state_reason TEXT NOT NULL DEFAULT ''",
    /* 3: attempts: the supervisor's attempt status, the attempt a replacing supervisor starts
     * at, internal retries (supervisors lost), the outcome decided before the final state. */
    "ALTER TABLE jobs ADD COLUMN attempt_status TEXT;"
    "ALTER TABLE jobs ADD COLUMN first_attempt INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN internal_retries INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN outcome TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN outcome_message TEXT NOT NULL DEFAULT ''",
    /* 4: what the service's scheduler gave the job (trials at once, GPU devices), recorded by
     * the supervisor that claims it. */
    "ALTER TABLE jobs ADD COLUMN grant TEXT",
    /* 5: the row's version, bumped by SQLite itself on every change of the row or of its
     * transitions, whoever writes (the daemon, a supervisor, the sqlite3 shell): what the
     * daemon's cache of rendered jobs checks (ty_store_job_version). The WHEN stops the bump
     * from bumping again (and lets a write that sets the version itself stand). */
    "ALTER TABLE jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 0;"
    /* Covering ty_store_job_version's lookup: the index alone answers it (a few small pages
     * that stay cached), not the job's row (its JSON makes the table's pages many). */
    "CREATE INDEX jobs_name_version ON jobs (project, job_id, version);"
    "CREATE TRIGGER jobs_version AFTER UPDATE ON jobs FOR EACH ROW"
    " WHEN NEW.version = OLD.version"
    " BEGIN UPDATE jobs SET version = OLD.version + 1 WHERE seq = NEW.seq; END;"
    "CREATE TRIGGER transitions_insert_version AFTER INSERT ON transitions FOR EACH ROW"
    " BEGIN UPDATE jobs SET version = version + 1 WHERE seq = NEW.job_seq; END;"
    "CREATE TRIGGER transitions_update_version AFTER UPDATE ON transitions FOR EACH ROW"
    " BEGIN UPDATE jobs SET version = version + 1 WHERE seq IN (OLD.job_seq, NEW.job_seq); END;"
    "CREATE TRIGGER transitions_delete_version AFTER DELETE ON transitions FOR EACH ROW"
    " BEGIN UPDATE jobs SET version = version + 1 WHERE seq = OLD.job_seq; END",
};

int ty_store_schema_version(void)
{
    return (int)TY_ARRAY_SIZE(migrations);
}

/* ---- connections and statements ---- */

int ty_store_errno(int sqlite_rc, int sys_errno)
{
    switch (sqlite_rc & 0xff) {
    case SQLITE_FULL:
        return sys_errno == EDQUOT ? EDQUOT : ENOSPC;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
        /* SQLite reports a full disk met by fsync or ftruncate as an I/O error. */
        if (sys_errno == ENOSPC || sys_errno == EDQUOT || sys_errno == EROFS)
            return sys_errno;
        return sqlite_rc == SQLITE_IOERR_NOMEM ? ENOMEM : EIO;
    case SQLITE_READONLY:
        return EROFS;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return EBUSY;
    case SQLITE_NOMEM:
        return ENOMEM;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return EBADMSG;
    default:
        return EPROTO;
    }
}

bool ty_store_fs_error(int code)
{
    return code == ENOSPC || code == EDQUOT || code == EROFS || code == EIO || code == EBUSY;
}

int store_sql_error(struct store_conn *c, struct ty_error *err, const char *what)
{
    sqlite3 *db = c ? c->db : NULL;
    const char *file = db ? sqlite3_db_filename(db, "main") : NULL;
    int code;

    if (!db)
        return ty_error_set(err, EIO, "%s: no database", what);
    code = ty_store_errno(sqlite3_extended_errcode(db), sqlite3_system_errno(db));
    if (code == EROFS && file && *file) {
        /* SQLite says read-only also of a file this user may not write (it opened it
         * read-only): the filesystem tells which */
        struct statvfs vfs;
        if (statvfs(file, &vfs) == 0 && !(vfs.f_flag & ST_RDONLY))
            return ty_error_set(err,
                                EACCES,
                                "%s: this user cannot write the store %s or its directory (%s): "
                                "check their owner and modes; nothing was written",
                                what,
                                file,
                                sqlite3_errmsg(db));
    }
    switch (code) {
    case ENOSPC:
    case EDQUOT:
        return ty_error_set(err,
                            code,
                            "%s: the state directory's filesystem is full (%s: %s); nothing was "
                            "written",
                            what,
                            file && *file ? file : "the database",
                            code == EDQUOT ? "disk quota exceeded" : sqlite3_errmsg(db));
    case EROFS:
        return ty_error_set(err,
                            code,
                            "%s: the state directory's filesystem is read-only (%s: %s); nothing "
                            "was written",
                            what,
                            file && *file ? file : "the database",
                            sqlite3_errmsg(db));
    case EIO:
        return ty_error_set(err,
                            code,
                            "%s: I/O error in the state directory (%s: %s%s%s)",
                            what,
                            file && *file ? file : "the database",
                            sqlite3_errmsg(db),
                            sqlite3_system_errno(db) ? ": " : "",
                            sqlite3_system_errno(db) ? strerror(sqlite3_system_errno(db)) : "");
    default:
        return ty_error_set(err, code, "%s: %s", what, sqlite3_errmsg(db));
    }
}

int store_stmt(struct store_conn *c, enum store_stmt id, sqlite3_stmt **ret, struct ty_error *err)
{
    if (!c->stmts[id]) {
        int rc = sqlite3_prepare_v3(
            c->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &c->stmts[id], NULL);
        if (rc != SQLITE_OK) {
            c->stmts[id] = NULL;
            return store_sql_error(c, err, "preparing a statement");
        }
    }
    (void)sqlite3_reset(c->stmts[id]);
    *ret = c->stmts[id];
    return 0;
}

int store_bind_text(sqlite3_stmt *st, int i, const char *text)
{
    return text ? sqlite3_bind_text(st, i, text, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

int store_bind_json(sqlite3_stmt *st, int i, const json_t *j, const char *dflt, char **tmp)
{
    *tmp = j ? ty_json_compact(j) : NULL;
    return store_bind_text(st, i, *tmp ? *tmp : dflt);
}

/* Run one cached statement that returns no rows. */
static int
exec_stmt(struct store_conn *c, enum store_stmt id, const char *what, struct ty_error *err)
{
    _cleanup_(store_resetp) sqlite3_stmt *st = NULL;
    int r = store_stmt(c, id, &st, err);
    if (r < 0)
        return r;
    if (sqlite3_step(st) != SQLITE_DONE)
        return store_sql_error(c, err, what);
    return 0;
}

static void end_write(struct store_conn *c)
{
    if (c->writing) {
        c->writing = false;
        pthread_mutex_unlock(&c->owner->write_lock);
    }
}

int store_begin(struct store_conn *c, struct ty_error *err)
{
    int r;

    if (c->owner) {
        pthread_mutex_lock(&c->owner->write_lock);
        c->writing = true;
    }
    if ((r = exec_stmt(c, ST_BEGIN, "beginning a transaction", err)) < 0)
        end_write(c);
    return r;
}

int store_commit(struct store_conn *c, struct ty_error *err)
{
    int r = exec_stmt(c, ST_COMMIT, "committing", err);
    if (r < 0)
        store_rollback(c);
    else
        end_write(c);
    return r;
}

void store_rollback(struct store_conn *c)
{
    if (!sqlite3_get_autocommit(c->db))
        (void)exec_stmt(c, ST_ROLLBACK, "rolling back", NULL);
    end_write(c);
}

void store_conn_close(struct store_conn *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < ST__MAX; i++)
        (void)sqlite3_finalize(c->stmts[i]);
    (void)sqlite3_close(c->db);
    free(c);
}

int store_conn_open(const char *path, bool create, struct store_conn **ret, struct ty_error *err)
{
    struct store_conn *c = xcalloc(1, sizeof(*c));
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc, fd;
    char *pragmas;

    /* SQLite would make a new database 0644 (its journals follow the database's mode): made
     * here first, the owner's alone (an empty file is an empty database). */
    if (create &&
        (fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, TY_STATE_FILE_MODE)) >= 0)
        close(fd);
    rc = sqlite3_open_v2(path, &c->db, flags, NULL);

    if (rc != SQLITE_OK) {
        int sys = c->db ? sqlite3_system_errno(c->db) : 0;
        int r = ty_error_set(
            err,
            rc == SQLITE_CANTOPEN && (sys == 0 || sys == ENOENT) ? ENOENT : ty_store_errno(rc, sys),
            "opening %s: %s",
            path,
            c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        store_conn_close(c);
        return r;
    }
    (void)sqlite3_extended_result_codes(c->db, 1);
    (void)sqlite3_busy_timeout(c->db, STORE_BUSY_MS);
    /* Integer constants only: nothing from outside reaches this text. */
    pragmas = sqlite3_mprintf("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; "
                              "PRAGMA cache_size = -%d; PRAGMA temp_store = MEMORY; "
                              "PRAGMA journal_size_limit = %d;",
                              STORE_CACHE_KIB,
                              STORE_WAL_LIMIT);
    rc = sqlite3_exec(c->db, pragmas, NULL, NULL, NULL);
    sqlite3_free(pragmas);
    if (rc != SQLITE_OK) {
        int r = store_sql_error(c, err, "setting up the database");
        store_conn_close(c);
        return r;
    }
    *ret = c;
    return 0;
}

/* ---- the pool ---- */

int store_acquire(struct ty_store *s, struct store_conn **ret, struct ty_error *err)
{
    struct store_conn *c = NULL;
    int r;

    pthread_mutex_lock(&s->pool_lock);
    for (;;) {
        if (s->idle) {
            c = s->idle;
            s->idle = c->next;
            s->n_idle--;
            break;
        }
        if (s->n_open < STORE_MAX_OPEN || held_conns > 0) {
            s->n_open++;
            break;
        }
        s->n_waiting++;
        pthread_cond_wait(&s->pool_cond, &s->pool_lock);
        s->n_waiting--;
    }
    pthread_mutex_unlock(&s->pool_lock);

    if (!c) {
        r = store_conn_open(s->path, false, &c, err);
        if (r < 0) {
            pthread_mutex_lock(&s->pool_lock);
            s->n_open--;
            if (s->n_waiting)
                pthread_cond_signal(&s->pool_cond);
            pthread_mutex_unlock(&s->pool_lock);
            return r;
        }
    }
    c->next = NULL;
    c->owner = s;
    held_conns++;
    *ret = c;
    return 0;
}

void store_release(struct ty_store *s, struct store_conn *c)
{
    bool close_it = false;

    if (!c)
        return;
    held_conns--;
    /* A caller that failed mid-transaction must not hand on an open one. */
    store_rollback(c);
    pthread_mutex_lock(&s->pool_lock);
    if (s->n_waiting == 0 && s->n_idle >= STORE_MAX_IDLE) {
        s->n_open--;
        close_it = true;
    } else {
        c->next = s->idle;
        s->idle = c;
        s->n_idle++;
        if (s->n_waiting)
            pthread_cond_signal(&s->pool_cond);
    }
    pthread_mutex_unlock(&s->pool_lock);
    if (close_it)
        store_conn_close(c);
}

/* ---- open, migrate, close ---- */

static int user_version(struct store_conn *c, int *ret, struct ty_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *ret = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    (void)sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : store_sql_error(c, err, "reading the schema version");
}

static int check_version(struct store_conn *c, const char *path, int *ret, struct ty_error *err)
{
    int r = user_version(c, ret, err);
    if (r < 0)
        return r;
    if (*ret > ty_store_schema_version())
        return ty_error_set(err,
                            EPROTO,
                            "%s has schema version %d, newer than the %d this trainyard knows",
                            path,
                            *ret,
                            ty_store_schema_version());
    return 0;
}

static int migrate(struct store_conn *c, const char *path, struct ty_error *err)
{
    for (int step = 0; step < ty_store_schema_version(); step++) {
        int have, r;
        char *sql;

        /* Another process may be migrating too: decide inside the write transaction. */
        if ((r = store_begin(c, err)) < 0)
            return r;
        if ((r = check_version(c, path, &have, err)) < 0) {
            store_rollback(c);
            return r;
        }
        if (have > step) {
            store_rollback(c);
            continue;
        }
        sql = sqlite3_mprintf("%s; PRAGMA user_version = %d;", migrations[step], step + 1);
        if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            sqlite3_free(sql);
            r = store_sql_error(c, err, "migrating the schema");
            store_rollback(c);
            return ty_error_prefix(err, r, "%s: version %d", path, step + 1);
        }
        sqlite3_free(sql);
        if ((r = store_commit(c, err)) < 0)
            return r;
    }
    return 0;
}

/* Switch to WAL (persistent in the file; a no-op once done). Two processes opening a new
 * database at once can both hold a shared lock while each wants the exclusive one: SQLite
 * then answers SQLITE_BUSY at once rather than deadlock, without calling the busy handler,
 * so retry here, up to the busy timeout. */
static int set_wal(struct store_conn *c, struct ty_error *err)
{
    int64_t deadline = ty_mono_usec() + (int64_t)STORE_BUSY_MS * 1000;

    for (;;) {
        sqlite3_stmt *st = NULL;
        bool wal = false;
        int rc = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *mode = (const char *)sqlite3_column_text(st, 0);
            wal = mode && strcmp(mode, "wal") == 0;
        }
        (void)sqlite3_finalize(st);
        if (wal)
            return 0;
        if ((rc & 0xff) != SQLITE_BUSY || ty_mono_usec() > deadline)
            return ty_error_set(
                err, EIO, "cannot switch to write-ahead logging: %s", sqlite3_errmsg(c->db));
        (void)sqlite3_sleep(5);
    }
}

bool ty_store_file_empty(const char *path)
{
    _cleanup_free_ char *wal = xasprintf("%s-wal", path);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    unsigned char head[32];
    struct stat st;

    if (fd < 0)
        return errno == ENOENT;
    if (fstat(fd, &st) < 0)
        return false;
    if (st.st_size == 0)
        return true;
    if (stat(wal, &st) == 0 && st.st_size > 0)
        return false; /* the changes are there */
    if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
        memcmp(head, "SQLite format 3", 16) != 0)
        return false; /* not a store: its open says so */
    /* bytes 28-31: the database's size in pages, big-endian (SQLite's file format) */
    uint32_t pages = (uint32_t)head[28] << 24 | (uint32_t)head[29] << 16 | (uint32_t)head[30] << 8 |
                     (uint32_t)head[31];
    return pages <= 1;
}

int ty_store_open(const char *path, struct ty_store **ret, struct ty_error *err)
{
    struct ty_store *s;
    struct store_conn *c = NULL;
    int version, r;

    if (!sqlite3_threadsafe())
        return ty_error_set(err, ENOTSUP, "libsqlite3 was built without thread support");
    r = store_conn_open(path, true, &c, err);
    if (r < 0)
        return r;
    /* Check before anything writes: a newer database is left exactly as it is. */
    if ((r = check_version(c, path, &version, err)) < 0 || (r = set_wal(c, err)) < 0 ||
        (r = migrate(c, path, err)) < 0) {
        store_conn_close(c);
        return r;
    }

    s = xcalloc(1, sizeof(*s));
    s->path = xstrdup(path);
    pthread_mutex_init(&s->pool_lock, NULL);
    pthread_mutex_init(&s->write_lock, NULL);
    pthread_mutex_init(&s->epoch_lock, NULL);
    pthread_cond_init(&s->pool_cond, NULL);
    pthread_mutex_init(&s->q_lock, NULL);
    pthread_cond_init(&s->q_cond, NULL);
    pthread_cond_init(&s->done_cond, NULL);
    /* The set-up connection becomes the pool's first. */
    s->idle = c;
    s->n_idle = s->n_open = 1;
    r = store_writer_start(s, err);
    if (r < 0) {
        ty_store_close(s);
        return r;
    }
    *ret = s;
    return 0;
}

void ty_store_close(struct ty_store *s)
{
    if (!s)
        return;
    store_writer_stop(s);
    store_epoch_close(s);
    while (s->idle) {
        struct store_conn *c = s->idle;
        s->idle = c->next;
        store_conn_close(c);
    }
    pthread_mutex_destroy(&s->pool_lock);
    pthread_mutex_destroy(&s->write_lock);
    pthread_mutex_destroy(&s->epoch_lock);
    pthread_cond_destroy(&s->pool_cond);
    pthread_mutex_destroy(&s->q_lock);
    pthread_cond_destroy(&s->q_cond);
    pthread_cond_destroy(&s->done_cond);
    free(s->path);
    free(s);
}
