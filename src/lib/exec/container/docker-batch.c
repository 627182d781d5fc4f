/* SPDX-License-Identifier: Apache-2.0
 * docker-batch.c: the Docker API client's blocking batches (docker-api.h): several requests
 * in parallel on a private multi handle, waited for with curl_multi_poll (the sockets'
 * events, no sleep), never touching the caller's loop, so no other callback runs meanwhile.
 * For teardown, which must be complete when it returns. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "docker-api.h"
#include "docker-internal.h"
#include "macro.h"
#include "timeutil.h"

/* The longest one curl_multi_poll waits before the deadline is looked at again. */
#define POLL_SLICE_MS 1000

struct bcall {
    CURL *easy;
    struct curl_slist *headers;
    struct ty_buf body;
    char errbuf[CURL_ERROR_SIZE];
    bool running;
};

static size_t bwrite_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct bcall *bc = userdata;
    size_t len = size * nmemb;

    ty_buf_append(&bc->body, ptr, len);
    return len;
}

static void bcall_end(CURLM *bm, struct bcall *bc)
{
    if (bc->running)
        (void)curl_multi_remove_handle(bm, bc->easy);
    bc->running = false;
    curl_easy_cleanup(bc->easy);
    bc->easy = NULL;
    curl_slist_free_all(bc->headers);
    bc->headers = NULL;
}

/* Set up call @i of the batch and add it to the multi handle; on failure its error says
 * why. Returns whether it runs. */
static bool
bcall_start(struct ty_docker *d, struct ty_docker_call *call, struct bcall *bc, long timeout_ms)
{
    struct ty_error e = {0};
    CURLMcode mc;

    if (ty_docker_easy_new(d,
                           call->method,
                           call->path,
                           call->body,
                           call->extra_header,
                           0,
                           bwrite_cb,
                           bc,
                           bc->errbuf,
                           &bc->easy,
                           &bc->headers,
                           &e) < 0) {
        ty_docker_copy_cut(call->error, sizeof(call->error), e.msg, strlen(e.msg));
        return false;
    }
    if (timeout_ms < CONNECT_TIMEOUT_MS) {
        CURLcode rc = curl_easy_setopt(bc->easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
        if (rc != CURLE_OK) {
            (void)snprintf(call->error,
                           sizeof(call->error),
                           "cannot set up the request: CURLOPT_CONNECTTIMEOUT_MS: %s",
                           curl_easy_strerror(rc));
            bcall_end(d->bmulti, bc);
            return false;
        }
    }
    mc = curl_multi_add_handle(d->bmulti, bc->easy);
    if (mc != CURLM_OK) {
        (void)snprintf(call->error,
                       sizeof(call->error),
                       "cannot start the request: %s",
                       curl_multi_strerror(mc));
        bcall_end(d->bmulti, bc);
        return false;
    }
    bc->running = true;
    return true;
}

/* Record the outcome of every transfer that completed. Returns how many did. */
static size_t collect_done(struct ty_docker *d, struct ty_docker_call *calls, struct bcall *bc)
{
    size_t done = 0;
    int queued;
    CURLMsg *m;

    while ((m = curl_multi_info_read(d->bmulti, &queued))) {
        struct bcall *b;
        char *priv = NULL;
        size_t i;
        if (m->msg != CURLMSG_DONE)
            continue;
        (void)curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        b = (struct bcall *)(void *)priv;
        if (!b || !b->running)
            continue;
        i = (size_t)(b - bc);
        if (m->data.result == CURLE_OK) {
            CURLcode rc = curl_easy_getinfo(b->easy, CURLINFO_RESPONSE_CODE, &calls[i].status);
            if (rc != CURLE_OK || calls[i].status == 0) {
                calls[i].status = 0;
                (void)snprintf(calls[i].error,
                               sizeof(calls[i].error),
                               "no HTTP status from %s: %s",
                               d->socket_path,
                               rc != CURLE_OK ? curl_easy_strerror(rc) : "the answer has none");
            }
        } else
            ty_docker_describe_failure(d->socket_path,
                                       b->easy,
                                       m->data.result,
                                       b->errbuf,
                                       calls[i].error,
                                       sizeof(calls[i].error));
        bcall_end(d->bmulti, b);
        done++;
    }
    return done;
}

/* Hand each call its response (none without a status) and say which timed out. */
static void batch_results(
    struct ty_docker *d, struct ty_docker_call *calls, struct bcall *bc, size_t n, long timeout_ms)
{
    for (size_t i = 0; i < n; i++) {
        if (bc[i].running)
            (void)snprintf(
                calls[i].error, sizeof(calls[i].error), "timed out after %ld ms", timeout_ms);
        if (bc[i].easy)
            bcall_end(d->bmulti, &bc[i]);
        if (calls[i].status == 0)
            ty_buf_release(&bc[i].body); /* no (complete) response: no body */
        calls[i].response_len = bc[i].body.len;
        calls[i].response = ty_buf_take(&bc[i].body);
    }
}

int ty_docker_batch_run(struct ty_docker *d,
                        struct ty_docker_call *calls,
                        size_t n,
                        long timeout_ms,
                        struct ty_error *err)
{
    _cleanup_free_ struct bcall *bc = NULL;
    size_t left = 0;
    int64_t deadline;

    for (size_t i = 0; i < n; i++) {
        calls[i].status = 0;
        calls[i].response = NULL;
        calls[i].response_len = 0;
        calls[i].error[0] = '\0';
    }
    if (!n)
        return 0;
    if (!d->bmulti) {
        d->bmulti = ty_docker_multi_new();
        if (!d->bmulti)
            return ty_error_set(err, ENOMEM, "cannot create a curl multi handle");
    }
    if (timeout_ms <= 0)
        timeout_ms = DEFAULT_TIMEOUT_MS;
    deadline = ty_mono_usec() + (int64_t)timeout_ms * 1000;
    bc = xcalloc(n, sizeof(*bc));
    for (size_t i = 0; i < n; i++)
        left += bcall_start(d, &calls[i], &bc[i], timeout_ms);
    while (left) {
        int still = 0;
        int64_t now, wait_ms;

        (void)curl_multi_perform(d->bmulti, &still);
        left -= collect_done(d, calls, bc);
        now = ty_mono_usec();
        if (!left || now >= deadline)
            break;
        /* Wait for the sockets' events (no sleep), in slices so the deadline is kept. */
        wait_ms = (deadline - now + 999) / 1000;
        (void)curl_multi_poll(
            d->bmulti, NULL, 0, wait_ms > POLL_SLICE_MS ? POLL_SLICE_MS : (int)wait_ms, NULL);
    }
    batch_results(d, calls, bc, n, timeout_ms);
    return 0;
}

int ty_docker_call(struct ty_docker *d,
                   struct ty_docker_call *call,
                   long timeout_ms,
                   struct ty_error *err)
{
    return ty_docker_batch_run(d, call, 1, timeout_ms, err);
}

void ty_docker_batch_release(struct ty_docker_call *calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(calls[i].response);
        calls[i].response = NULL;
        calls[i].response_len = 0;
    }
}
