/* SPDX-License-Identifier: Apache-2.0
 * baseline-server.c: the floor jobs.get of trainyardd is measured against (bench/api/run.sh).
 *
 *   baseline-server fill DB URL PROJECT N
 *       fetch GET URL/v1/projects/PROJECT/jobs/job_I for I in 1..N once from a running
 *       trainyardd and store the bodies, byte for byte, in the SQLite table
 *       jobs(project, job_id, body) of DB (WAL mode, one transaction);
 *   baseline-server serve DB PORT
 *       answer GET /v1/projects/P/jobs/J from that table: a bare libmicrohttpd server in the
 *       daemon's threading mode (a pool of epoll event threads, one per CPU between 2 and 8,
 *       turbo; see src/trainyardd/http.c, where jobs.get runs inline on those threads), one SQLite
 *       connection and one prepared point lookup per event thread, the same Content-Type as
 *       the daemon. PORT 0 picks a free port;
 *       "listening on http://127.0.0.1:PORT" goes to stderr. Runs until SIGTERM or SIGINT.
 *
 * No routing, parameters, authentication, JSON or store logic: what is left is HTTP plus one
 * indexed SQLite read, which is what jobs.get cannot do without. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONTENT_TYPE "application/json; charset=UTF-8"
#define PREFIX       "/v1/projects/"

static const char *db_path;
/* As trainyardd: one event thread per CPU, between 2 and 8. */
static unsigned event_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 2 : n > 8 ? 8 : (unsigned)n;
}

static pthread_key_t conn_key;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "baseline-server: %s: %s\n", what, detail);
    exit(1);
}

/* --- fill ---------------------------------------------------------------------------- */

struct body {
    char *data;
    size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
    struct body *b = userdata;
    char *grown = realloc(b->data, b->len + size * n + 1);
    if (!grown)
        return 0;
    b->data = grown;
    memcpy(b->data + b->len, p, size * n);
    b->len += size * n;
    b->data[b->len] = '\0';
    return size * n;
}

static int fill(const char *db, const char *url, const char *project, long n)
{
    sqlite3 *s = NULL;
    sqlite3_stmt *ins = NULL;
    CURL *c;
    char *sql_err = NULL;

    if (sqlite3_open(db, &s) != SQLITE_OK)
        die(db, sqlite3_errmsg(s));
    if (sqlite3_exec(s,
                     "PRAGMA journal_mode=WAL;"
                     "CREATE TABLE IF NOT EXISTS jobs (project TEXT NOT NULL, job_id TEXT NOT NULL,"
                     " body BLOB NOT NULL, PRIMARY KEY (project, job_id)) WITHOUT ROWID;"
                     "BEGIN;",
                     NULL,
                     NULL,
                     &sql_err) != SQLITE_OK)
        die(db, sql_err);
    if (sqlite3_prepare_v2(s, "INSERT OR REPLACE INTO jobs VALUES (?, ?, ?)", -1, &ins, NULL) !=
        SQLITE_OK)
        die(db, sqlite3_errmsg(s));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c = curl_easy_init();
    if (!c)
        die("curl", "cannot initialise");
    for (long i = 1; i <= n; i++) {
        char job[32], full[1024];
        struct body b = {0};
        long code = 0;
        CURLcode cr;

        (void)snprintf(job, sizeof(job), "job_%ld", i);
        (void)snprintf(full, sizeof(full), "%s" PREFIX "%s/jobs/%s", url, project, job);
        curl_easy_setopt(c, CURLOPT_URL, full);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        cr = curl_easy_perform(c);
        if (cr != CURLE_OK)
            die(full, curl_easy_strerror(cr));
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code != 200 || !b.data)
            die(full, b.data ? b.data : "empty reply");
        sqlite3_bind_text(ins, 1, project, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, job, -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(ins, 3, b.data, (int)b.len, SQLITE_TRANSIENT);
        if (sqlite3_step(ins) != SQLITE_DONE)
            die(db, sqlite3_errmsg(s));
        sqlite3_reset(ins);
        free(b.data);
    }
    curl_easy_cleanup(c);
    curl_global_cleanup();
    sqlite3_finalize(ins);
    if (sqlite3_exec(s, "COMMIT", NULL, NULL, &sql_err) != SQLITE_OK)
        die(db, sql_err);
    sqlite3_close(s);
    fprintf(stderr, "baseline-server: stored %ld job bodies in %s\n", n, db);
    return 0;
}

/* --- serve --------------------------------------------------------------------------- */

/* What each connection thread holds: its own connection and prepared lookup. */
struct conn {
    sqlite3 *db;
    sqlite3_stmt *get;
};

static void conn_free(void *p)
{
    struct conn *c = p;
    sqlite3_finalize(c->get);
    sqlite3_close(c->db);
    free(c);
}

static struct conn *thread_conn(void)
{
    struct conn *c = pthread_getspecific(conn_key);
    if (c)
        return c;
    c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    if (sqlite3_open_v2(db_path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_busy_timeout(c->db, 5000) != SQLITE_OK ||
        sqlite3_prepare_v3(c->db,
                           "SELECT body FROM jobs WHERE project = ? AND job_id = ?",
                           -1,
                           SQLITE_PREPARE_PERSISTENT,
                           &c->get,
                           NULL) != SQLITE_OK)
        die(db_path, sqlite3_errmsg(c->db));
    (void)pthread_setspecific(conn_key, c);
    return c;
}

static enum MHD_Result reply(struct MHD_Connection *mc, unsigned status, const void *p, size_t n)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)p, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;

    if (!r)
        return MHD_NO;
    (void)MHD_add_response_header(r, "Content-Type", CONTENT_TYPE);
    ret = MHD_queue_response(mc, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *mc,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload,
                                  size_t *upload_size,
                                  void **con_cls)
{
    static const char not_found[] = "{\"error\":{\"code\":404,\"status\":\"NOT_FOUND\"}}\n";
    static int first_call;
    const char *project, *jobs, *job;
    struct conn *c;
    enum MHD_Result ret;

    if (!*con_cls) { /* headers only so far; the answer comes with the next call */
        *con_cls = &first_call;
        return MHD_YES;
    }
    *upload_size = 0;
    if (strcmp(method, "GET") != 0 || strncmp(url, PREFIX, strlen(PREFIX)) != 0)
        return reply(mc, 404, not_found, strlen(not_found));
    project = url + strlen(PREFIX);
    jobs = strstr(project, "/jobs/");
    if (!jobs || jobs == project)
        return reply(mc, 404, not_found, strlen(not_found));
    job = jobs + strlen("/jobs/");
    if (!*job || strchr(job, '/'))
        return reply(mc, 404, not_found, strlen(not_found));

    c = thread_conn();
    sqlite3_bind_text(c->get, 1, project, (int)(jobs - project), SQLITE_STATIC);
    sqlite3_bind_text(c->get, 2, job, -1, SQLITE_STATIC);
    if (sqlite3_step(c->get) == SQLITE_ROW)
        ret =
            reply(mc, 200, sqlite3_column_blob(c->get, 0), (size_t)sqlite3_column_bytes(c->get, 0));
    else
        ret = reply(mc, 404, not_found, strlen(not_found));
    sqlite3_reset(c->get);
    return ret;
}

static int serve(const char *db, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in got;
    socklen_t glen = sizeof(got);
    struct MHD_Daemon *mhd;
    sqlite3 *keep = NULL;
    sigset_t set;
    int fd, one = 1, sig;

    db_path = db;
    /* A connection held for the server's life keeps the WAL index set up between the
     * connection threads, which come and go with the client's connections. */
    if (sqlite3_open_v2(db, &keep, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(keep, "SELECT count(*) FROM jobs", NULL, NULL, NULL) != SQLITE_OK)
        die(db, sqlite3_errmsg(keep));
    if (pthread_key_create(&conn_key, conn_free) != 0)
        die("pthread_key_create", strerror(errno));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket", strerror(errno));
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1024) < 0 ||
        getsockname(fd, (struct sockaddr *)&got, &glen) < 0)
        die("listen", strerror(errno));

    /* Block the signals before any thread starts, so that only sigwait() below takes them. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_TURBO,
                           0,
                           NULL,
                           NULL,
                           on_request,
                           NULL,
                           MHD_OPTION_LISTEN_SOCKET,
                           (MHD_socket)fd,
                           MHD_OPTION_THREAD_POOL_SIZE,
                           event_threads(),
                           MHD_OPTION_CONNECTION_LIMIT,
                           (unsigned)1000,
                           MHD_OPTION_CONNECTION_TIMEOUT,
                           (unsigned)600,
                           MHD_OPTION_THREAD_STACK_SIZE,
                           (size_t)(256 * 1024),
                           MHD_OPTION_END);
    if (!mhd)
        die("MHD_start_daemon", "cannot start");
    fprintf(stderr, "baseline-server: listening on http://127.0.0.1:%u\n", ntohs(got.sin_port));
    (void)sigwait(&set, &sig);
    MHD_stop_daemon(mhd); /* closes the listening socket too */
    sqlite3_close(keep);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "fill") == 0)
        return fill(argv[2], argv[3], argv[4], strtol(argv[5], NULL, 10));
    if (argc == 4 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2], (int)strtol(argv[3], NULL, 10));
    fprintf(stderr,
            "usage: baseline-server fill DB URL PROJECT N\n"
            "       baseline-server serve DB PORT\n");
    return 2;
}
