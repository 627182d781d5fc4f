/* SPDX-License-Identifier: Apache-2.0
 * docker-api.h: a small asynchronous client of the Docker Engine API (v1.41) over a unix
 * socket, with libcurl's multi interface driven by trainyard's event loop (loop.h). It works
 * with Docker and with Podman's compatible service (docs/internals/container-runtime.md lists
 * where Podman differs).
 *
 * Two ways to call:
 *  - asynchronous: ty_docker_request() returns at once; the callbacks run later on the loop.
 *    Streaming responses (logs?follow=1, images/create, wait) deliver body bytes as they
 *    arrive through on_data.
 *  - blocking batch: ty_docker_batch_run() performs several requests in parallel on a private
 *    multi handle and returns when all are done (or the deadline passes); it never runs the
 *    caller's loop, so no other callback can run meanwhile. For teardown outside the loop
 *    (the container runtime's destroy finishing a cleanup), which must be complete when it
 *    returns.
 *
 * Paths are given without the version prefix ("/containers/create?name=x"); the client adds
 * "/v1.41". Bodies are JSON text (Content-Type: application/json) or NULL. */
#ifndef TY_DOCKER_API_H
#define TY_DOCKER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "loop.h"

#define TY_DOCKER_API_VERSION "v1.41"
/* Podman's own endpoints (paths starting /libpod/) are sent under this version instead: the
 * compat version makes some of them refuse the request (Podman 4.3's networks/create: "given
 * version is not supported"). An engine without them (Docker) answers 404 or 400. */
#define TY_LIBPOD_API_VERSION "v4.0.0"

struct ty_docker;
struct ty_docker_req;

/* Callbacks of an asynchronous request; each optional. @ctx is the request's ctx.
 * on_data: body bytes as they arrive (for every request; a plain request may ignore it and
 *          read the whole body in on_done).
 * on_done: exactly once, when the request ends: @status is the HTTP status (0 when no
 *          response arrived; then @error says why); @body is the whole body when the request
 *          was made with TY_DOCKER_BUFFER (else NULL). After on_done the request is freed. */
struct ty_docker_callbacks {
    void (*on_data)(void *ctx, const char *data, size_t len);
    void (*on_done)(void *ctx, long status, const char *body, size_t len, const char *error);
    void *ctx;
};

enum {
    TY_DOCKER_BUFFER = 1 << 0,    /* keep the body and pass it to on_done */
    TY_DOCKER_NO_TIMEOUT = 1 << 1 /* no total timeout (streams, wait); default 60 s
                                      (DEFAULT_TIMEOUT_MS, docker-internal.h) */
};

/* Connect a client to the API socket at @socket_path (no I/O happens here), driven by
 * @loop for asynchronous requests. Returns 0 and *ret. */
int ty_docker_new(struct ty_loop *loop,
                  const char *socket_path,
                  struct ty_docker **ret,
                  struct ty_error *err);
/* Abort every pending request (their on_done is NOT called) and free. NULL-safe. */
void ty_docker_free(struct ty_docker *d);
/* The socket path the client talks to. */
const char *ty_docker_socket(const struct ty_docker *d);

/* Start an asynchronous request. @extra_header is one "Name: value" header or NULL.
 * Returns 0 (and *ret when @ret is non-NULL: a handle valid until on_done has run, for
 * ty_docker_cancel) or -errno. */
int ty_docker_request(struct ty_docker *d,
                      const char *method,
                      const char *path,
                      const char *body,
                      const char *extra_header,
                      int flags,
                      const struct ty_docker_callbacks *cb,
                      struct ty_docker_req **ret,
                      struct ty_error *err);
/* Abort an asynchronous request; its on_done is not called. */
void ty_docker_cancel(struct ty_docker *d, struct ty_docker_req *req);

/* One request of a blocking batch. In: method, path, body (may be NULL), extra_header.
 * Out (after ty_docker_batch_run): status (0 if no response), body (malloc'd, NUL-terminated,
 * caller frees with ty_docker_batch_release), error (curl's message when status is 0). */
struct ty_docker_call {
    const char *method;
    const char *path;
    const char *body;
    const char *extra_header;
    long status;
    char *response;
    size_t response_len;
    char error[256];
};

/* Run @n calls in parallel and wait for all of them, at most @timeout_ms (then the rest get
 * status 0 and error "timed out"). Returns 0 (look at each call's status) or -errno when
 * the batch could not run at all. */
int ty_docker_batch_run(struct ty_docker *d,
                        struct ty_docker_call *calls,
                        size_t n,
                        long timeout_ms,
                        struct ty_error *err);
/* One blocking call (a batch of one). */
int ty_docker_call(struct ty_docker *d,
                   struct ty_docker_call *call,
                   long timeout_ms,
                   struct ty_error *err);
/* Free the responses of @n calls. */
void ty_docker_batch_release(struct ty_docker_call *calls, size_t n);

/* The message of a Docker/Podman error body ({"message":"..."}), or the body itself, cut to
 * fit @n bytes. For error reporting. */
void ty_docker_error_message(const char *body, char *buf, size_t n);

/* Copy @len bytes of @src into @dst (size @n, NUL-terminated), cut to fit without splitting
 * a UTF-8 sequence. For the client's own messages. */
void ty_docker_copy_cut(char *dst, size_t n, const char *src, size_t len);

/* Demultiplex the logs/attach stream of a non-TTY container: 8-byte headers
 * [stream, 0, 0, 0, size (big endian)] followed by size bytes of payload. Feed bytes as they
 * come (frames may be split anywhere); on_frame gets each payload piece with its stream
 * (1 stdout, 2 stderr). */
struct ty_docker_demux {
    unsigned char header[8];
    size_t header_have;
    uint32_t remaining;
    int stream;
};
void ty_docker_demux_feed(struct ty_docker_demux *dm,
                          const char *data,
                          size_t len,
                          void (*on_frame)(void *ctx, int stream, const char *p, size_t n),
                          void *ctx);

#endif
