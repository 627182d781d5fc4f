/* SPDX-License-Identifier: Apache-2.0
 * listen.c: what trainyardd listens on: the --listen address (loopback unless tokens are
 * configured; plain HTTP off loopback only with --allow-insecure-http) and the certificate
 * and key of --tls-cert/--tls-key for HTTPS. http.c hands both to libmicrohttpd. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "daemon.h"
#include "fdutil.h"
#include "macro.h"
#include "parse.h"
#include "timeutil.h"

/* Pending connections the kernel keeps while the event threads are busy (a burst of clients
 * opening at once, as the 50-client benchmark does, must not see ECONNREFUSED). */
#define LISTEN_BACKLOG 1024
/* A PEM certificate chain or key is a few KiB; 1 MiB bounds what is read. */
#define PEM_MAX (1024 * 1024)

static int parse_listen(const char *spec,
                        const char *where,
                        struct sockaddr_storage *ss,
                        socklen_t *len,
                        bool *loopback,
                        struct ty_error *err)
{
    _cleanup_free_ char *host = NULL;
    const char *colon;
    int64_t port;

    memset(ss, 0, sizeof(*ss));
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':')
            goto bad;
        host = xstrndup(spec + 1, (size_t)(close - spec - 1));
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon)
            goto bad;
        host = xstrndup(spec, (size_t)(colon - spec));
    }
    if (ty_parse_int64(colon + 1, 0, 65535, &port) < 0)
        goto bad;
    if (strcmp(host, "localhost") == 0) {
        free(host);
        host = xstrdup("127.0.0.1");
    }
    {
        struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
            in4->sin_family = AF_INET;
            in4->sin_port = htons((uint16_t)port);
            *len = sizeof(*in4);
            *loopback = (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
            return 0;
        }
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons((uint16_t)port);
            *len = sizeof(*in6);
            *loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
            return 0;
        }
    }
bad:
    return ty_error_set(err,
                        EINVAL,
                        "%s: expected HOST:PORT with a numeric address or localhost, "
                        "e.g. 127.0.0.1:8080 or [::1]:8080 (got '%s')",
                        where,
                        spec);
}

int tyd_listen_check(const char *spec, const char *where, struct ty_error *err)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    bool loopback = false;

    return parse_listen(spec, where, &ss, &len, &loopback, err);
}

int tyd_listen_open(struct tyd *d, struct ty_error *err)
{
    struct sockaddr_storage ss, got;
    socklen_t len = 0, glen = sizeof(got);
    bool loopback = false;
    int fd, one = 1, r;

    r = parse_listen(d->listen, "--listen", &ss, &len, &loopback, err);
    if (r < 0)
        return r;
    if (!loopback && !d->auth)
        return ty_error_set(err,
                            EPERM,
                            "refusing to listen on %s without --auth-tokens: anyone who can "
                            "reach it could run programs as this user; give a tokens file or "
                            "listen on a loopback address",
                            d->listen);
    if (!loopback && !d->tls_cert && !d->allow_insecure_http)
        return ty_error_set(err,
                            EPERM,
                            "refusing to listen on %s over plain HTTP: tokens and jobs would "
                            "cross the network readable by anyone on the path; give "
                            "--tls-cert and --tls-key, or --allow-insecure-http to accept this",
                            d->listen);
    if (!loopback && !d->tls_cert)
        tyd_log("warning: serving plain HTTP on the non-loopback address %s "
                "(--allow-insecure-http): tokens and jobs cross the network unencrypted",
                d->listen);
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ty_error_set(err, errno, "socket: %s", strerror(errno));
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
        r = ty_error_set(err, errno, "cannot listen on %s: %s", d->listen, strerror(errno));
        close(fd);
        return r;
    }
    if (listen(fd, LISTEN_BACKLOG) < 0 || getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
        r = ty_error_set(err, errno, "cannot listen on %s: %s", d->listen, strerror(errno));
        close(fd);
        return r;
    }
    d->port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
                                             : ((struct sockaddr_in6 *)&got)->sin6_port);
    return fd;
}

/* Read @path for option @opt and check that it holds a PEM block whose label ends with
 * @label ("CERTIFICATE", "PRIVATE KEY"). */
static int
read_pem(const char *opt, const char *path, const char *label, char **ret, struct ty_error *err)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_free_ char *end = xasprintf("%s-----", label);
    size_t len = 0;
    const char *begin;
    int r;

    r = ty_read_file(path, PEM_MAX, &text, &len, err);
    if (r < 0)
        return ty_error_prefix(err, r, "%s", opt);
    begin = strstr(text, "-----BEGIN ");
    if (!begin || memchr(text, '\0', len) || !strstr(begin, end)) {
        explicit_bzero(text, len);
        return ty_error_set(err,
                            EINVAL,
                            "%s: %s is not a PEM file with a '-----BEGIN ...%s' block",
                            opt,
                            path,
                            end);
    }
    *ret = text;
    text = NULL;
    return 0;
}

int tyd_tls_load(const struct tyd *d, char **cert, char **key, struct ty_error *err)
{
    struct stat st;
    int r;

    *cert = *key = NULL;
    if (!d->tls_cert && !d->tls_key)
        return 0;
    if (!d->tls_cert || !d->tls_key)
        return ty_error_set(err,
                            EINVAL,
                            "%s needs %s as well: HTTPS takes a certificate and its key",
                            d->tls_cert ? "--tls-cert" : "--tls-key",
                            d->tls_cert ? "--tls-key" : "--tls-cert");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return ty_error_set(
            err, ENOTSUP, "--tls-cert: this libmicrohttpd was built without TLS (GnuTLS)");
    r = read_pem("--tls-cert", d->tls_cert, "CERTIFICATE", cert, err);
    if (r < 0)
        return r;
    r = read_pem("--tls-key", d->tls_key, "PRIVATE KEY", key, err);
    if (r < 0) {
        free(*cert);
        *cert = NULL;
        return r;
    }
    if (stat(d->tls_key, &st) == 0 && (st.st_mode & 0077))
        tyd_log("warning: --tls-key: %s is readable or writable by other users; chmod 600 it",
                d->tls_key);
    return 0;
}

/* The same libmicrohttpd message is logged at most once a second, with the count of those
 * left out: a flood of refused connections must not flood the log. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_msg[512];
static int64_t last_time;
static unsigned long repeats;

/* Whether @msg is libmicrohttpd saying that a response could not be sent because the client
 * had gone: a log follower (stream-logs, the dashboard) that was closed or interrupted, a
 * client that timed out. Normal, so not an error. */
static bool client_left(const char *msg)
{
    static const char *const gone[] = {
        "The socket is no longer available for sending",
        "The connection was forcibly closed by remote peer",
        "The socket is not connected",
    };
    if (strncmp(msg, "Failed to send ", strlen("Failed to send ")) != 0)
        return false;
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        if (strstr(msg, gone[i]))
            return true;
    return false;
}

void tyd_mhd_log(void *cls, const char *fmt, va_list ap)
{
    const struct tyd *d = cls;
    char msg[512];
    int64_t now = ty_mono_usec();

    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    if (client_left(msg)) {
        /* A detail for --verbose only, like the request lines. */
        if (d && d->verbose)
            tyd_log("http: the client left before its response was sent (%s)", msg);
        return;
    }
    if (d && atomic_load(&d->stopping) && strstr(msg, "application error generating response")) {
        /* A followed log stream broken off by the stop (api-logs.c): its client reconnects. */
        if (d->verbose)
            tyd_log("http: a log stream was broken off by the stop (%s)", msg);
        return;
    }
    pthread_mutex_lock(&log_lock);
    if (strcmp(msg, last_msg) == 0 && now - last_time < 1000000) {
        repeats++;
        pthread_mutex_unlock(&log_lock);
        return;
    }
    if (repeats)
        tyd_log("http: %s (%lu more times)", last_msg, repeats);
    repeats = 0;
    last_time = now;
    (void)snprintf(last_msg, sizeof(last_msg), "%s", msg);
    tyd_log("http: %s", msg);
    pthread_mutex_unlock(&log_lock);
}
