/* SPDX-License-Identifier: Apache-2.0
 * docker-api.c: the Docker Engine API client of docker-api.h. Asynchronous requests run on
 * one libcurl multi handle per client whose sockets and timeout are watchers of the caller's
 * ty_loop (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION). Blocking batches are in
 * docker-batch.c.
 *
 * Re-entrancy: libcurl refuses curl_multi_add_handle / curl_multi_remove_handle while it is
 * inside one of its callbacks, and on_data runs inside curl's write callback. So while the
 * client is inside curl_multi_socket_action (in_curl > 0) new requests are queued (PENDING)
 * and cancelled ones are only marked (CANCELLED); both are settled as soon as curl returns.
 * ty_docker_free called from a callback is likewise deferred to the end of the dispatch. */
#include "docker-api.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "docker-internal.h"
#include "macro.h"
#include "timeutil.h"
#include "ty-config.h"

#define URL_PREFIX "http://localhost/" TY_DOCKER_API_VERSION
#define USER_AGENT "trainyard/" TY_VERSION

enum req_state {
    REQ_PENDING,   /* created while curl was busy; not yet added to the multi handle */
    REQ_ACTIVE,    /* in the multi handle */
    REQ_CANCELLED, /* cancelled while curl was busy; still in the multi handle */
    REQ_FINISHING, /* out of the multi handle and the list; on_done is running */
};

struct ty_docker_req {
    struct ty_docker *d;
    CURL *easy;
    struct curl_slist *headers;
    int flags;
    enum req_state state;
    struct ty_docker_callbacks cb;
    struct ty_buf body;
    char errbuf[CURL_ERROR_SIZE];
    struct ty_docker_req *prev, *next;
};

/* libcurl allocates with alloc.h's functions: out of memory ends trainyard the one way it
 * always does, and no curl call (curl_slist_append...) returns NULL for it. */
static void *curl_xrealloc(void *p, size_t n)
{
    return xreallocarray(p, 1, n);
}

static char *curl_xstrdup(const char *s)
{
    return xstrdup(s);
}

/* libcurl's global state is the process's, not any client's: it is set up once, by the first
 * client, whichever thread that is on (curl_global_init is not thread-safe itself). */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init_mem(
        CURL_GLOBAL_DEFAULT, xmalloc, free, curl_xrealloc, curl_xstrdup, xcalloc);
}

void ty_docker_describe_failure(
    const char *socket_path, CURL *easy, CURLcode rc, const char *errbuf, char *out, size_t n)
{
    const char *msg;
    long oserr = 0;

    if (rc == CURLE_COULDNT_CONNECT) {
        (void)curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &oserr);
        (void)snprintf(out,
                       n,
                       "cannot connect to %s: %s",
                       socket_path,
                       oserr ? strerror((int)oserr) : curl_easy_strerror(rc));
        return;
    }
    /* curl's own words ("Operation timed out after 60000 milliseconds with 0 bytes
     * received", "Empty reply from server"). */
    msg = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    ty_docker_copy_cut(out, n, msg, strlen(msg));
}

static bool valid_token(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (*s <= ' ' || *s >= 127)
            return false;
    return true;
}

static bool valid_header_line(const char *s)
{
    const char *colon = strchr(s, ':');

    if (!colon || colon == s)
        return false;
    for (; *s; s++)
        if (*s == '\r' || *s == '\n')
            return false;
    return true;
}

/* curl's sockets are not close-on-exec; a child forked meanwhile (the podman service, a
 * replica) would keep our end of a connection open, so a cancelled stream would never end
 * on the server. */
static curl_socket_t open_socket_cb(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* curl_multi_init (7.88) makes a wakeup socketpair without FD_CLOEXEC. fds are numbered
 * lowest-free first and nothing else runs meanwhile, so the fds that were free just before
 * and are open right after are curl's: mark them. */
CURLM *ty_docker_multi_new(void)
{
    int probe[4];
    size_t n = 0;
    CURLM *m;

    while (n < TY_ARRAY_SIZE(probe) && (probe[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        n++;
    for (size_t i = 0; i < n; i++)
        (void)close(probe[i]);
    m = curl_multi_init();
    for (size_t i = 0; m && i < n; i++) {
        int fl = fcntl(probe[i], F_GETFD);
        if (fl >= 0 && !(fl & FD_CLOEXEC))
            (void)fcntl(probe[i], F_SETFD, fl | FD_CLOEXEC);
    }
    return m;
}

/* The options of one handle being set: every curl_easy_setopt result is kept, and the first
 * failure is named (the CLI's client, src/trainyard/api-client.c, checks its options the same
 * way). */
struct setopt {
    CURL *curl;
    CURLcode rc;
    const char *failed; /* the option's name, when rc is not CURLE_OK */
};

#define SETOPT(so, opt, val)                                                                       \
    do {                                                                                           \
        if ((so)->rc == CURLE_OK) {                                                                \
            (so)->rc = curl_easy_setopt((so)->curl, opt, val);                                     \
            if ((so)->rc != CURLE_OK)                                                              \
                (so)->failed = #opt;                                                               \
        }                                                                                          \
    } while (0)

int ty_docker_easy_new(const struct ty_docker *d,
                       const char *method,
                       const char *path,
                       const char *body,
                       const char *extra_header,
                       long timeout_ms,
                       curl_write_callback write,
                       void *data,
                       char *errbuf,
                       CURL **ret,
                       struct curl_slist **ret_headers,
                       struct ty_error *err)
{
    struct curl_slist *h = NULL;
    _cleanup_free_ char *url = NULL;
    CURL *e;
    struct setopt so = {.curl = NULL, .rc = CURLE_OK};

    if (!method)
        method = "GET";
    if (!valid_token(method))
        return ty_error_set(err, EINVAL, "invalid HTTP method '%s'", method);
    if (!path || path[0] != '/' || !valid_token(path))
        return ty_error_set(err, EINVAL, "invalid API path '%s'", path ? path : "(null)");
    if (extra_header && !valid_header_line(extra_header))
        return ty_error_set(err, EINVAL, "invalid header '%s'", extra_header);

    e = curl_easy_init();
    if (!e)
        return ty_error_set(err, ENOMEM, "cannot create a curl handle");
    so.curl = e;
    url = strncmp(path, "/libpod/", 8) == 0
              ? xasprintf("http://localhost/" TY_LIBPOD_API_VERSION "%s", path)
              : xasprintf(URL_PREFIX "%s", path);
    errbuf[0] = '\0';

    h = curl_slist_append(h, "Expect:");
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    else
        h = curl_slist_append(h, "Content-Type:"); /* no body: no form content type either */
    if (extra_header)
        h = curl_slist_append(h, extra_header);

    SETOPT(&so, CURLOPT_URL, url);
    SETOPT(&so, CURLOPT_UNIX_SOCKET_PATH, d->socket_path);
    SETOPT(&so, CURLOPT_NOSIGNAL, 1L);
    SETOPT(&so, CURLOPT_OPENSOCKETFUNCTION, open_socket_cb);
    SETOPT(&so, CURLOPT_ERRORBUFFER, errbuf);
    SETOPT(&so, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    if (timeout_ms > 0)
        SETOPT(&so, CURLOPT_TIMEOUT_MS, timeout_ms);
    SETOPT(&so, CURLOPT_USERAGENT, USER_AGENT);
    SETOPT(&so, CURLOPT_HTTPHEADER, h);
    if (body || strcmp(method, "POST") == 0) {
        /* POSTFIELDS with an explicit size: Content-Length is sent, also 0 for no body. */
        const char *b = body ? body : "";
        SETOPT(&so, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(b));
        SETOPT(&so, CURLOPT_COPYPOSTFIELDS, b);
        if (strcmp(method, "POST") != 0)
            SETOPT(&so, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") == 0) {
        SETOPT(&so, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        SETOPT(&so, CURLOPT_NOBODY, 1L);
    } else {
        SETOPT(&so, CURLOPT_CUSTOMREQUEST, method);
    }
    SETOPT(&so, CURLOPT_WRITEFUNCTION, write);
    SETOPT(&so, CURLOPT_WRITEDATA, data);
    SETOPT(&so, CURLOPT_PRIVATE, (char *)data);
    if (so.rc != CURLE_OK) {
        curl_easy_cleanup(e);
        curl_slist_free_all(h);
        return ty_error_set(err,
                            so.rc == CURLE_OUT_OF_MEMORY ? ENOMEM : EINVAL,
                            "cannot set up the request %s %s: %s: %s",
                            method,
                            path,
                            so.failed,
                            curl_easy_strerror(so.rc));
    }
    *ret = e;
    *ret_headers = h;
    return 0;
}

/* ---- asynchronous requests: the loop side ---- */

static void dispatch(struct ty_docker *d, curl_socket_t s, int mask);
static void real_free(struct ty_docker *d);

static void fds_add(struct ty_docker *d, int fd)
{
    for (size_t i = 0; i < d->nfds; i++)
        if (d->fds[i] == fd)
            return;
    if (d->nfds == d->capfds) {
        d->capfds = d->capfds ? d->capfds * 2 : 8;
        d->fds = xreallocarray(d->fds, d->capfds, sizeof(*d->fds));
    }
    d->fds[d->nfds++] = fd;
}

static void fds_del(struct ty_docker *d, int fd)
{
    for (size_t i = 0; i < d->nfds; i++)
        if (d->fds[i] == fd) {
            d->fds[i] = d->fds[--d->nfds];
            return;
        }
}

static void on_io(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct ty_docker *d = data;
    int mask = 0;

    if (revents & POLLNVAL) {
        /* Closed behind our back: stop watching rather than spin. */
        ty_loop_remove_fd(loop, fd);
        fds_del(d, fd);
        return;
    }
    if (revents & (POLLIN | POLLHUP))
        mask |= CURL_CSELECT_IN;
    if (revents & POLLOUT)
        mask |= CURL_CSELECT_OUT;
    if (revents & POLLERR)
        mask |= CURL_CSELECT_ERR;
    dispatch(d, fd, mask);
}

static void on_timer(struct ty_loop *loop, void *data)
{
    struct ty_docker *d = data;

    d->timer_id = 0;
    dispatch(d, CURL_SOCKET_TIMEOUT, 0);
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct ty_docker *d = userp;
    short events = 0;

    if (what == CURL_POLL_REMOVE) {
        ty_loop_remove_fd(d->loop, s);
        fds_del(d, s);
        return 0;
    }
    if (what & CURL_POLL_IN)
        events |= POLLIN;
    if (what & CURL_POLL_OUT)
        events |= POLLOUT;
    (void)ty_loop_add_fd(d->loop, s, events, on_io, d);
    fds_add(d, s);
    return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct ty_docker *d = userp;

    ty_loop_cancel_timer(d->loop, d->timer_id);
    d->timer_id = 0;
    if (timeout_ms >= 0)
        d->timer_id =
            ty_loop_add_timer(d->loop, ty_mono_usec() + (int64_t)timeout_ms * 1000, on_timer, d);
    return 0;
}

/* ---- asynchronous requests: bookkeeping ---- */

static void req_link(struct ty_docker *d, struct ty_docker_req *req)
{
    req->prev = NULL;
    req->next = d->reqs;
    if (d->reqs)
        d->reqs->prev = req;
    d->reqs = req;
}

static void req_unlink(struct ty_docker *d, struct ty_docker_req *req)
{
    if (req->prev)
        req->prev->next = req->next;
    else
        d->reqs = req->next;
    if (req->next)
        req->next->prev = req->prev;
    req->prev = req->next = NULL;
}

static void req_free(struct ty_docker_req *req)
{
    curl_easy_cleanup(req->easy);
    curl_slist_free_all(req->headers);
    ty_buf_release(&req->body);
    free(req);
}

/* Take @req out of the multi handle and the list and free it, without on_done. */
static void req_drop(struct ty_docker *d, struct ty_docker_req *req)
{
    if (req->state == REQ_ACTIVE || req->state == REQ_CANCELLED)
        (void)curl_multi_remove_handle(d->multi, req->easy);
    if (req->state == REQ_PENDING)
        d->n_pending--;
    if (req->state == REQ_CANCELLED)
        d->n_cancelled--;
    req_unlink(d, req);
    req_free(req);
}

/* End @req: call on_done with the outcome, then free it. */
static void req_finish(struct ty_docker *d, struct ty_docker_req *req, CURLcode rc, const char *why)
{
    char msg[CURL_ERROR_SIZE + 128];
    const char *error = NULL;
    long status = 0;

    if (why) {
        ty_docker_copy_cut(msg, sizeof(msg), why, strlen(why));
        error = msg;
    } else if (rc != CURLE_OK) {
        ty_docker_describe_failure(d->socket_path, req->easy, rc, req->errbuf, msg, sizeof(msg));
        error = msg;
    } else if ((rc = curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status)) != CURLE_OK ||
               status == 0) {
        (void)snprintf(msg,
                       sizeof(msg),
                       "no HTTP status from %s: %s",
                       d->socket_path,
                       rc != CURLE_OK ? curl_easy_strerror(rc) : "the answer has none");
        error = msg;
        status = 0;
    }
    if (req->state == REQ_ACTIVE)
        (void)curl_multi_remove_handle(d->multi, req->easy);
    if (req->state == REQ_PENDING)
        d->n_pending--;
    req_unlink(d, req);
    req->state = REQ_FINISHING;
    if (error)
        ty_buf_reset(&req->body); /* no complete response: no body, as in batches */
    if (req->cb.on_done) {
        bool buffered = req->flags & TY_DOCKER_BUFFER;
        req->cb.on_done(req->cb.ctx,
                        status,
                        buffered ? ty_buf_str(&req->body) : NULL,
                        buffered ? req->body.len : 0,
                        error);
    }
    req_free(req);
}

/* Bring the client back to a plain state after curl returned: drop what was cancelled
 * inside callbacks, add what was requested inside callbacks, finish completed transfers. */
static void settle(struct ty_docker *d)
{
    while (d->n_cancelled && !d->free_pending) {
        struct ty_docker_req *req = d->reqs;
        while (req && req->state != REQ_CANCELLED)
            req = req->next;
        if (!req)
            break;
        req_drop(d, req);
    }
    while (d->n_pending && !d->free_pending) {
        struct ty_docker_req *req = d->reqs;
        while (req && req->state != REQ_PENDING)
            req = req->next;
        if (!req)
            break;
        CURLMcode mc = curl_multi_add_handle(d->multi, req->easy);
        if (mc != CURLM_OK) {
            /* on_done may add or cancel requests; the scan starts over each time. */
            req_finish(d, req, CURLE_OK, curl_multi_strerror(mc));
            continue;
        }
        req->state = REQ_ACTIVE;
        d->n_pending--;
    }
    while (!d->free_pending) {
        int queued;
        CURLMsg *m = curl_multi_info_read(d->multi, &queued);
        struct ty_docker_req *req;
        char *priv = NULL;
        if (!m)
            break;
        if (m->msg != CURLMSG_DONE)
            continue;
        (void)curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        req = (struct ty_docker_req *)(void *)priv;
        if (!req)
            continue;
        if (req->state == REQ_CANCELLED)
            req_drop(d, req);
        else
            req_finish(d, req, m->data.result, NULL);
    }
}

static void dispatch(struct ty_docker *d, curl_socket_t s, int mask)
{
    int running = 0;

    d->depth++;
    if (!d->free_pending) {
        d->in_curl++;
        (void)curl_multi_socket_action(d->multi, s, mask, &running);
        d->in_curl--;
        settle(d);
    }
    d->depth--;
    if (d->depth == 0 && d->free_pending)
        real_free(d);
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct ty_docker_req *req = userdata;
    struct ty_docker *d = req->d;
    size_t len = size * nmemb;

    if (req->state != REQ_ACTIVE || d->free_pending)
        return 0; /* aborts the transfer */
    if (req->cb.on_data && len)
        req->cb.on_data(req->cb.ctx, ptr, len);
    /* on_data may have cancelled this request or freed the client. */
    if (req->state != REQ_ACTIVE || d->free_pending)
        return 0;
    if (req->flags & TY_DOCKER_BUFFER)
        ty_buf_append(&req->body, ptr, len);
    return len;
}

/* ---- public: client ---- */

int ty_docker_new(struct ty_loop *loop,
                  const char *socket_path,
                  struct ty_docker **ret,
                  struct ty_error *err)
{
    struct ty_docker *d;

    if (!socket_path || !*socket_path)
        return ty_error_set(err, EINVAL, "no Docker API socket path given");
    if (strlen(socket_path) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
        return ty_error_set(
            err, ENAMETOOLONG, "Docker API socket path is too long: %s", socket_path);
    (void)pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return ty_error_set(
            err, EIO, "cannot initialise libcurl: %s", curl_easy_strerror(curl_init_rc));

    d = xcalloc(1, sizeof(*d));
    d->loop = loop;
    d->socket_path = xstrdup(socket_path);
    if (loop) {
        CURLMcode mc = CURLM_OUT_OF_MEMORY;
        d->multi = ty_docker_multi_new();
        if (d->multi &&
            (mc = curl_multi_setopt(d->multi, CURLMOPT_SOCKETFUNCTION, socket_cb)) == CURLM_OK &&
            (mc = curl_multi_setopt(d->multi, CURLMOPT_SOCKETDATA, d)) == CURLM_OK &&
            (mc = curl_multi_setopt(d->multi, CURLMOPT_TIMERFUNCTION, timer_cb)) == CURLM_OK)
            mc = curl_multi_setopt(d->multi, CURLMOPT_TIMERDATA, d);
        if (mc != CURLM_OK) {
            if (d->multi)
                (void)curl_multi_cleanup(d->multi);
            free(d->socket_path);
            free(d);
            return ty_error_set(
                err, ENOMEM, "cannot set up a curl multi handle: %s", curl_multi_strerror(mc));
        }
    }
    *ret = d;
    return 0;
}

static void real_free(struct ty_docker *d)
{
    while (d->reqs) {
        struct ty_docker_req *req = d->reqs;
        req_drop(d, req);
    }
    if (d->multi)
        (void)curl_multi_cleanup(d->multi); /* may still report sockets and timers */
    if (d->bmulti)
        (void)curl_multi_cleanup(d->bmulti);
    for (size_t i = 0; i < d->nfds; i++)
        ty_loop_remove_fd(d->loop, d->fds[i]);
    if (d->loop)
        ty_loop_cancel_timer(d->loop, d->timer_id);
    free(d->fds);
    free(d->socket_path);
    free(d);
}

void ty_docker_free(struct ty_docker *d)
{
    if (!d)
        return;
    if (d->depth > 0) {
        /* Inside one of our callbacks: no further callbacks; freed once it returns. */
        d->free_pending = true;
        return;
    }
    real_free(d);
}

const char *ty_docker_socket(const struct ty_docker *d)
{
    return d->socket_path;
}

int ty_docker_request(struct ty_docker *d,
                      const char *method,
                      const char *path,
                      const char *body,
                      const char *extra_header,
                      int flags,
                      const struct ty_docker_callbacks *cb,
                      struct ty_docker_req **ret,
                      struct ty_error *err)
{
    struct ty_docker_req *req;
    int r;

    if (!d->multi)
        return ty_error_set(err, EINVAL, "this Docker API client has no event loop");
    if (d->free_pending)
        return ty_error_set(err, ECANCELED, "the Docker API client is being freed");
    if (!method)
        method = "GET";

    req = xcalloc(1, sizeof(*req));
    req->d = d;
    req->flags = flags;
    if (cb)
        req->cb = *cb;
    r = ty_docker_easy_new(d,
                           method,
                           path,
                           body,
                           extra_header,
                           (flags & TY_DOCKER_NO_TIMEOUT) ? 0 : DEFAULT_TIMEOUT_MS,
                           write_cb,
                           req,
                           req->errbuf,
                           &req->easy,
                           &req->headers,
                           err);
    if (r < 0) {
        free(req);
        return r;
    }

    if (d->in_curl) {
        /* curl refuses to add handles from inside its callbacks: settle() adds it. */
        req->state = REQ_PENDING;
        d->n_pending++;
    } else {
        CURLMcode mc = curl_multi_add_handle(d->multi, req->easy);
        if (mc != CURLM_OK) {
            req_free(req);
            return ty_error_set(
                err, ENOMEM, "cannot start %s %s: %s", method, path, curl_multi_strerror(mc));
        }
        req->state = REQ_ACTIVE;
    }
    req_link(d, req);
    if (ret)
        *ret = req;
    return 0;
}

void ty_docker_cancel(struct ty_docker *d, struct ty_docker_req *req)
{
    if (!d || !req)
        return;
    switch (req->state) {
    case REQ_PENDING:
        req_drop(d, req);
        break;
    case REQ_ACTIVE:
        if (d->in_curl) {
            /* Maybe its own write callback is running: drop it once curl returns. */
            req->state = REQ_CANCELLED;
            d->n_cancelled++;
        } else {
            req_drop(d, req);
        }
        break;
    case REQ_CANCELLED:
    case REQ_FINISHING:
        break;
    }
}
