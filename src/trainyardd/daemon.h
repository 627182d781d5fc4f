/* SPDX-License-Identifier: Apache-2.0
 * daemon.h: what the parts of trainyardd share.
 *
 * Threads (http.c): libmicrohttpd's pool of epoll event threads (one per CPU, 2 to 8) reads
 * requests and runs the fast handlers inline; 16 worker threads run the handlers that wait
 * for a durable write or scan many rows, while their connections are suspended; a poller
 * thread wakes the followed log streams every 200 ms. Which handler runs where is a column of
 * the API table (TYD_API in route.h). Handlers (api-jobs*.c, api-logs.c) work against the
 * store, which is thread-safe. The main thread runs the event loop of dispatch.c: it starts
 * the scheduler's passes (admission.c), starts a `trainyard-supervisor supervise-job` process
 * per admitted job, watches them through pidfds and recovers after a restart. Request threads
 * wake it with tyd_kick().
 * docs/internals/service.md explains the threads and why jobs have their own processes. */
#ifndef TYD_DAEMON_H
#define TYD_DAEMON_H

#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "logs.h"
#include "loop.h"
#include "runtime.h"
#include "store.h"

/* Largest request body accepted; bigger ones get 413. A job spec is a few KiB; 1 MiB leaves
 * room for long argument lists and many labels while bounding what a client makes us hold. */
#define TYD_MAX_BODY (1024 * 1024)
/* What a job stopped at its maxRunningTime is given, past the grace period, for its runtime's
 * cleanup (containers removed, Slurm's job left), in the scheduler's reservations. */
#define TYD_TEARDOWN_USEC (5 * INT64_C(1000000))

struct tyd_admit;
struct tyd_auth;
struct tyd_dispatch;
struct tyd_http;
struct tyd_runas;
struct ty_sched;

struct tyd {
    /* configuration (main.c) */
    char *listen; /* HOST:PORT */
    char *state_dir;
    char *auth_file;    /* NULL: no authentication (loopback only) */
    char *runtime;      /* default runtime of jobs without a trainyard-runtime label */
    int64_t grace_usec; /* SIGTERM-to-SIGKILL time for replicas */
    long max_running;   /* jobs supervised at once; -1 unlimited, 0 none (queue only) */
    char *log_file;     /* where supervisors' own diagnostics go */
    bool verbose;       /* log every request */
    /* the HTTP front's limits (http.c; docs/service.md#limits) */
    unsigned conn_timeout_s;     /* --connection-timeout: idle or unfinished requests */
    unsigned max_conns;          /* --max-connections */
    unsigned max_conns_per_addr; /* --max-connections-per-address */
    char **allowed_hosts;        /* --allowed-hosts (NULL-terminated) or NULL */
    char *tls_cert, *tls_key;    /* --tls-cert, --tls-key: serve HTTPS */
    bool allow_insecure_http;    /* --allow-insecure-http: plain HTTP off loopback */
    struct tyd_runas *runas;     /* --project-user: who runs a project's process jobs (runas.c) */
    bool allow_root_jobs;        /* --allow-root-jobs: process and slurm jobs may run as root */
    bool leave_mounts;           /* --leave-mounts: warn only (tyd_jobdir_secure_mounts) */
    char **job_dir_roots;        /* --job-dir-root: where a local jobDir may be (jobdir.c) */
    int64_t min_wait_usec;       /* --shortest-max-wait-time: the least maxWaitTime accepted */

    /* state */
    struct ty_store *store;
    struct tyd_auth *auth;
    struct tyd_dispatch *dispatch;
    struct tyd_http *http;   /* the HTTP server and its threads (http.c) */
    struct ty_sched *sched;  /* the scheduler (admit/scheduler.h): owned by the main thread's
                              * dispatch, read by request threads (it is thread-safe) */
    struct tyd_admit *admit; /* its settings and what admitted jobs hold (admission.h) */
    int kick_fd;             /* eventfd: wakes the main loop (new job, cancel) */
    int listen_fd;           /* the listening socket, opened before recovery; -1 once MHD has it */
    int lock_fd;             /* the state directory's lock (serve: one trainyardd per directory) */
    atomic_bool stopping;
    uint16_t port; /* the port actually bound */
    /* The rendered jobs.get answers (jobcache.h); NULL: none. */
    struct tyd_jobcache *jobcache;
};

/* Wake the main loop to dispatch queued jobs. Thread-safe, async-signal-safe. */
void tyd_kick(struct tyd *d);

/* Log a line of the daemon's own to stderr ("trainyardd: ..."). Thread-safe. */
void tyd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- auth.c ---------------------------------------------------------------------------- */

/* Load the tokens file: lines "TOKEN PROJECT[,PROJECT...]" ('*' = every project), '#'
 * comments. Returns 0 and *ret, or -errno with err naming the file and line. */
int tyd_auth_load(const char *path, struct tyd_auth **ret, struct ty_error *err);
void tyd_auth_free(struct tyd_auth *a);
/* Read the tokens file again (SIGHUP) and swap it in for the requests that follow; requests
 * being checked finish with the old tokens. Returns the number of tokens, or -errno with err
 * (naming the file and line) and the old tokens kept. Thread-safe. */
int tyd_auth_reload(struct tyd_auth *a, const char *path, struct ty_error *err);
/* How many times the tokens were reloaded: a long request (a followed log stream) checks its
 * token again when this changes. Thread-safe. */
uint64_t tyd_auth_generation(struct tyd_auth *a);
enum tyd_auth_result { TYD_AUTH_OK, TYD_AUTH_MISSING, TYD_AUTH_BAD_TOKEN, TYD_AUTH_FORBIDDEN };
/* Check the Authorization header value @header (may be NULL) for @project (NULL: any
 * project is enough, e.g. for /healthz). Thread-safe. */
enum tyd_auth_result tyd_auth_check(struct tyd_auth *a, const char *header, const char *project);
/* The projects the token of Authorization header value @header grants (a new NULL-terminated
 * list; "*" for every project), or NULL when it is no valid token. Thread-safe. */
char **tyd_auth_projects(struct tyd_auth *a, const char *header);
/* The 403 message for a token (of Authorization header value @header) that does not grant
 * @project, naming the projects it grants, into @buf. Thread-safe. */
void tyd_auth_forbidden_msg(
    struct tyd_auth *a, const char *header, const char *project, char *buf, size_t len);
/* Record a wrong token from client @addr (connlimit.h's key: an address, or on loopback a
 * local user) asking for @project (a project id, "*", or NULL for what any valid token may
 * call) at monotonic time @now (usec); returns how long to hold back its 401 (guard.h:
 * tyd_backoff_usec). Thread-safe. */
int64_t tyd_auth_failed(struct tyd_auth *a, const char *addr, const char *project, int64_t now);
/* A token good for @project (as tyd_auth_failed's) from @addr: forget its failures if its last
 * wrong token asked for the same project. Nothing for NULL, nor for another project: else a
 * tenant could guess others' tokens at full speed, each guess followed by a request of its
 * own. Thread-safe. */
void tyd_auth_succeeded(struct tyd_auth *a, const char *addr, const char *project);

/* --- listen.c ------------------------------------------------------------------------- */

/* Is @spec a --listen value (HOST:PORT, a numeric address or localhost)? 0, or -EINVAL with
 * err naming @where (the option, or FILE:LINE: listen). */
int tyd_listen_check(const char *spec, const char *where, struct ty_error *err);
/* Bind and listen on d->listen; sets d->port. Refuses a non-loopback address without tokens
 * (d->auth), or without TLS unless d->allow_insecure_http (then logs a warning). Returns the
 * socket, or -errno with err. */
int tyd_listen_open(struct tyd *d, struct ty_error *err);
/* Read d->tls_cert and d->tls_key (PEM): *cert and *key (caller frees; wipe the key), both
 * NULL when TLS is not asked for. Returns 0, or -errno with err naming the option and file. */
int tyd_tls_load(const struct tyd *d, char **cert, char **key, struct ty_error *err);
/* libmicrohttpd's logger (@cls: the struct tyd): its messages as "http: ..." lines, the same
 * one at most once a second (then with the count of repeats left out). A response that could
 * not be sent because the client had gone (a log follower leaving) is normal: logged only
 * with --verbose. Thread-safe. */
void tyd_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* --- http.c ---------------------------------------------------------------------------- */

/* Start serving on d->listen: sets d->http and d->port. Returns 0 or -errno with err. */
int tyd_http_start(struct tyd *d, struct ty_error *err);
/* Set d->stopping; let the workers answer what is queued, end the streams, wait for every
 * request thread and free d->http. Safe when tyd_http_start failed or never ran. */
void tyd_http_stop(struct tyd *d);

/* One request as the handlers see it. */
struct tyd_arg {
    char *key;
    char *value;
};
struct tyd_request {
    struct tyd *d;
    struct MHD_Connection *conn;
    struct tyd_arg *args; /* the query parameters (decoded) */
    size_t nargs;
    const char *project;
    const char *job;
    const char *asset; /* the dashboard's file named in the path */
    const char *body;  /* NUL-terminated, may be empty */
    size_t body_len;
};
/* What a handler answers: a status and a JSON body (taken), or a streaming response. */
struct tyd_reply {
    unsigned status;
    json_t *json;
    struct MHD_Response *stream; /* when set, sent as is (json ignored) */
};

/* For a stream with nothing to send now: suspend its connection until the next poll (every
 * 200 ms), then the stream's reader is called again. Call from the reader only, and return 0
 * after it. False when the service is stopping: end the stream instead. */
bool tyd_stream_wait(struct tyd *d, struct MHD_Connection *conn);

/* --- params.c -------------------------------------------------------------------------- */

/* A query parameter (decoded) or NULL. */
const char *tyd_query(const struct tyd_request *rq, const char *name);
/* Check the query parameters against the method's own and the standard ones (alt, fields,
 * prettyPrint, key, quotaUser, $.xgafv, ...); 400 naming an unknown one, or one given more
 * than once (each takes one value). Returns 0 or -1 with @rep filled. */
int tyd_check_params(const struct tyd_request *rq, const char *const *own, struct tyd_reply *rep);
/* Is @value (prettyPrint's, NULL when absent) a boolean: true, false (any case), 1 or 0?
 * Then *@pretty (may be NULL) says whether JSON answers are indented: yes unless false. */
bool tyd_pretty_value(const char *value, bool *pretty);
/* Whether the JSON answer to @rq is indented: its prettyPrint, read from its arguments once
 * they are (a tunnelled GET's come from its body), else from the URL of @c (NULL: none; an
 * answer given before the arguments were read). */
bool tyd_wants_pretty(const struct tyd_request *rq, struct MHD_Connection *c);
/* Fill @rep with Google's error form {"error":{"code","message","status"}}; the status text
 * follows from @code (400 INVALID_ARGUMENT, 404 NOT_FOUND, 409 ALREADY_EXISTS, ...) unless
 * @status is given. Returns 0. */
int tyd_error(struct tyd_reply *rep, unsigned code, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* --- api-jobs.c, api-jobs-change.c, api-logs.c -------------------------------------------- */
/* The handlers of the API table (TYD_API in route.h). Each answers @rq by filling @rep (a
 * status and JSON, or a stream); rq->project and rq->job are valid ids, the caller was
 * authenticated, and the body is at most TYD_MAX_BODY bytes. Thread-safe. */
void tyd_jobs_create(const struct tyd_request *rq, struct tyd_reply *rep);
void tyd_jobs_get(const struct tyd_request *rq, struct tyd_reply *rep);
void tyd_jobs_list(const struct tyd_request *rq, struct tyd_reply *rep);
void tyd_jobs_cancel(const struct tyd_request *rq, struct tyd_reply *rep);
void tyd_jobs_patch(const struct tyd_request *rq, struct tyd_reply *rep);
void tyd_jobs_logs(const struct tyd_request *rq, struct tyd_reply *rep);
/* Answer a store call that failed with @r and @e: 429 RESOURCE_EXHAUSTED for a full
 * filesystem, 503 UNAVAILABLE for a read-only or failing one or a busy store, else 500; the
 * details go to the daemon's log (api-jobs.c). */
void tyd_store_failure(struct tyd_reply *rep, int r, const struct ty_error *e);
/* GET /v1/projects (api-projects.c): the projects the caller may see. */
void tyd_projects_list(const struct tyd_request *rq, struct tyd_reply *rep);
/* GET / and GET /static/NAME (dashboard.c): the dashboard's page and its files, built into
 * the daemon; compressed when the client accepts gzip, 304 when its ETag is current. */
void tyd_dashboard_page(const struct tyd_request *rq, struct tyd_reply *rep);
void tyd_dashboard_asset(const struct tyd_request *rq, struct tyd_reply *rep);

/* --- dispatch.c ------------------------------------------------------------------------ */

/* A job whose supervisor dies before its outcome is recorded is run again by a new one at most
 * this many times (AI Platform: 3 attempts in all), then fails with this errorMessage. */
#define TYD_MAX_INTERNAL_RETRIES   2
#define TYD_INTERNAL_ERROR_MESSAGE "Internal error occurred for the current attempt."

/* Recover after a start (jobs whose supervisors still run are watched again, jobs whose
 * supervisors died are swept and retried, or ended) and set up the loop. Returns 0 or -errno. */
int tyd_dispatch_init(struct tyd *d, struct ty_loop *loop, struct ty_error *err);
void tyd_dispatch_free(struct tyd_dispatch *dp);
/* Tell the supervisor of a job now CANCELLING (by pid and start time) to cancel. */
void tyd_dispatch_signal(const struct ty_job_row *row, int sig);
/* Append a service line (printf-style, cut at 2 KiB) of attempt @attempt to job @row's log,
 * for what the daemon itself does to a job that has no supervisor (a lost one, a cancel while
 * it waits for a new one); the file is indexed in the store if it was not. Failures are
 * logged to stderr. Thread-safe. (In api-logs.c.) */
void tyd_job_log(struct tyd *d,
                 const struct ty_job_row *row,
                 int64_t attempt,
                 enum ty_severity sev,
                 const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));
/* The same for several lines of one severity, @msgs NULL-terminated, in one opening of the
 * log. @claimed: NULL, or the job's directory the caller has just claimed and whose service
 * log file it indexed with the job (its create: ty_store_insert_job_logged): written there
 * with no store write. */
void tyd_job_log_lines(struct tyd *d,
                       const struct ty_job_row *row,
                       int64_t attempt,
                       enum ty_severity sev,
                       const char *const *msgs,
                       const char *claimed);

/* --- runas.c: who runs a project's process-runtime jobs (docs/security.md) --------------- */

/* Add one --project-user setting "PROJECT:USER" ('*' as PROJECT: every project without a
 * setting of its own) to *@m, created on the first call; a later setting for the same project
 * replaces the earlier one. The user must exist now (an unknown one is a start-up error).
 * @where names the option in errors ("--project-user", "FILE:LINE: project-user"). Returns 0,
 * or -EINVAL (malformed) / -ENOENT (unknown user) / -errno with err naming @where. */
int tyd_runas_add(struct tyd_runas **m, const char *spec, const char *where, struct ty_error *err);
/* NULL-safe. */
void tyd_runas_free(struct tyd_runas *m);

enum tyd_runas_kind {
    TYD_RUNAS_DAEMON,  /* run as trainyardd's own user: no switch */
    TYD_RUNAS_USER,    /* run the replicas as *user */
    TYD_RUNAS_REFUSED, /* refuse the job: @why says why, naming the settings */
};
/* Who runs the replicas of a job of @project on @runtime, for a trainyardd whose effective uid
 * is @euid, with the map @m (may be NULL) and --allow-root-jobs @allow_root: a non-root daemon
 * and the "container" runtime: DAEMON; "process" of a project mapped to a user other than
 * root: USER (*user points into @m); any other case (slurm; process unmapped or mapped to
 * root): DAEMON with @allow_root, REFUSED (and the message in @why, cut at @whylen) without.
 * Pure apart from reading @m. */
enum tyd_runas_kind tyd_runas_decide(const struct tyd_runas *m,
                                     uid_t euid,
                                     bool allow_root,
                                     const char *project,
                                     const char *runtime,
                                     const char **user,
                                     char *why,
                                     size_t whylen);
/* The extra argument of `trainyard-supervisor supervise-job` for a job of @project on
 * @runtime under @d (as this process's euid): 1 and "--run-as=USER" in @buf; 0 when none is
 * needed; -1 when the job must not run (the reason, naming the settings, in @buf). */
int tyd_runas_supervisor_arg(
    const struct tyd *d, const char *project, const char *runtime, char *buf, size_t len);
/* Log at start-up who runs process-runtime jobs (and that the map is ignored when trainyardd
 * is not root). */
void tyd_runas_log_start(const struct tyd *d);

/* --- jobdir.c: where a job may write on this machine (docs/security.md) ----------------- */

/* Add one --job-dir-root to *@roots (created on the first call): DIR, for every project's
 * jobs, as its real path; or PROJECT:DIR, for that project's jobs only, as "PROJECT:REAL".
 * The directory must exist and not be "/". @where names the option in errors. Returns 0 or
 * -errno with err naming @where. */
int tyd_jobdir_root_add(char ***roots, const char *dir, const char *where, struct ty_error *err);
/* May a job of @project (NULL: any) have @job_dir (its trainingInput.jobDir, may be NULL)? A
 * URI or no jobDir: yes (0). A local directory: only an absolute path without empty, "." or
 * ".." components (a trailing '/' aside) and without a symbolic link on its existing part,
 * below (not at) one of @roots (tyd_jobdir_root_add's entries, may be NULL) that is every
 * project's or @project's; else -1
 * with the reason, naming the field and the setting, in @why (cut at @whylen). Reads the
 * filesystem (lstat, realpath), changes nothing. */
int tyd_jobdir_check(
    char *const *roots, const char *project, const char *job_dir, char *why, size_t whylen);
/* The directory of a --job-dir-root entry ("DIR" or "PROJECT:DIR"). */
const char *tyd_jobdir_root_dir(const char *entry);

/* --- nosuid.c: the directories container jobs write to as root ------------------------- */

/* At start, as root, with the container runtime: each --job-dir-root, and the state directory
 * (where tuning trials' metric directories are mounted into containers), that is on a mount
 * without nosuid and nodev is covered by a copy of its tree made nosuid,nodev throughout
 * (submounts included) before it is attached, in the host's mount namespace, so that no
 * set-user-ID program, file capability or device node a container job (root in its
 * container) leaves there works through that path. The mounts stay after trainyardd ends.
 * With --leave-mounts, a link on a directory's way, a mount namespace not PID 1's (or one
 * that cannot be told), or a failure: a warning in the log instead; with the slurm runtime
 * (image replicas on a node that may be this host), the warning alone. */
void tyd_secure_mounts(const struct tyd *d);

/* --- metrics.c: GET /healthz, and GET /metrics in the Prometheus text format ------------ */

struct tyd_route;
/* Count one API request for /metrics: of HTTP method @method, on the API row that @rt names
 * (the route "none" when @rt is NULL or names no row), answered with @status (100-599; others
 * are not counted) @usec after it arrived. Process-wide counts with relaxed atomics: no lock,
 * a few nanoseconds a request. Thread-safe. */
void tyd_metrics_count_request(const char *method,
                               const struct tyd_route *rt,
                               unsigned status,
                               int64_t usec);
/* GET /healthz (the TYD_API row HEALTH): 200 {"status": "ok"}. */
void tyd_health(const struct tyd_request *rq, struct tyd_reply *rep);
/* GET /metrics (the TYD_API row METRICS): every metric of docs/metrics.md, the scheduler's
 * only when d->sched is set. Reads the store (one scan of the jobs): run on a worker. */
void tyd_metrics(const struct tyd_request *rq, struct tyd_reply *rep);

#endif
