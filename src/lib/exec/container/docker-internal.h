/* SPDX-License-Identifier: Apache-2.0
 * docker-internal.h: what the Docker API client's two halves share: docker-api.c (the
 * client and its asynchronous requests on the loop) and docker-batch.c (blocking batches on
 * a private multi handle). Not a public interface. */
#ifndef TY_DOCKER_INTERNAL_H
#define TY_DOCKER_INTERNAL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docker-api.h"

/* A request's total timeout unless TY_DOCKER_NO_TIMEOUT (and a batch's when given <= 0):
 * the engine answers API calls from its own state within moments; a minute means it hangs.
 * Streams (logs, wait, pulls) go without, or with their caller's own deadline. */
#define DEFAULT_TIMEOUT_MS 60000L
/* Connecting to a unix socket is immediate when the engine runs; 10 s covers an engine that
 * is busy starting up, and no more. */
#define CONNECT_TIMEOUT_MS 10000L

struct ty_docker {
    struct ty_loop *loop; /* NULL: blocking calls only */
    char *socket_path;
    CURLM *multi;  /* asynchronous requests (NULL without a loop) */
    CURLM *bmulti; /* blocking batches, created on first use */
    uint64_t timer_id;
    int *fds; /* the fds this client watches in the loop */
    size_t nfds, capfds;
    struct ty_docker_req *reqs; /* every request not yet finished or freed */
    size_t n_pending, n_cancelled;
    unsigned depth;   /* nesting of dispatches from the loop */
    unsigned in_curl; /* inside curl_multi_socket_action: curl callbacks may run */
    bool free_pending;
};

/* Why a transfer failed, in words, into @out (size @n). */
void ty_docker_describe_failure(
    const char *socket_path, CURL *easy, CURLcode rc, const char *errbuf, char *out, size_t n);
/* A multi handle whose own descriptors are close-on-exec, or NULL. */
CURLM *ty_docker_multi_new(void);
/* An easy handle for one request: the body goes to @write with @data, which is also the
 * handle's CURLOPT_PRIVATE; @errbuf (CURL_ERROR_SIZE) gets curl's message. @timeout_ms <= 0:
 * no total timeout. Every curl_easy_setopt is checked, as the CLI's client does: the first
 * that fails is named in the error with curl's reason. Returns 0 with *ret and *ret_headers
 * (caller frees both), or -errno with err. */
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
                       struct ty_error *err);

#endif
