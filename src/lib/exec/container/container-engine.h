/* SPDX-License-Identifier: Apache-2.0
 * container-engine.h: finding (or starting) the container engine the container runtime
 * talks to, and the engine-wide chores around a job: images present or pulled, stale
 * trainyard containers and networks removed, a free subnet for the job's network.
 *
 * Engine discovery: $DOCKER_HOST (unix:// only), else /var/run/docker.sock, then
 * /run/podman/podman.sock, then $XDG_RUNTIME_DIR/podman/podman.sock: the first that answers
 * GET /_ping. When none does and `podman` is installed, trainyard starts
 * `podman system service --time=0` on a private socket as a child it owns and stops.
 *
 * Everything that talks to the engine here is asynchronous on the caller's loop: each call
 * returns at once and its callback runs later on the loop (never from within the call).
 * Waits are the engine's sockets, the service's pidfd and loop timers; nothing sleeps. */
#ifndef TY_CONTAINER_ENGINE_H
#define TY_CONTAINER_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "docker-api.h"
#include "error.h"
#include "loop.h"

/* ---- one request with a deadline (engine-call.c) ---- */

/* How a request ended: @status the HTTP status (0 when no response came; @error says why,
 * "timed out after N ms" when the deadline passed), @body the whole body. */
typedef void (*ty_engine_call_fn)(
    void *ctx, long status, const char *body, size_t len, const char *error);

/* One request in flight with a deadline kept by a loop timer (curl's own total timeout
 * would do for one request, but a pull may run for minutes, and the caller chooses). The
 * caller owns the struct; it must stay put until @fn ran or ty_engine_call_cancel. */
struct ty_engine_call {
    struct ty_docker *api;
    struct ty_loop *loop;
    struct ty_docker_req *req;
    uint64_t timer;
    long timeout_ms;
    ty_engine_call_fn fn;
    void *ctx;
    size_t max_body; /* ty_engine_call_start_capped: the most the answer may be (0: any) */
    size_t got;      /* ... bytes of it so far */
};

/* Start @method @path (@body and the one @header may be NULL) on @api, ending within
 * @timeout_ms. Returns 0 (then @fn runs exactly once, later, on the loop, unless cancelled)
 * or -errno with err saying why (then @fn never runs). */
int ty_engine_call_start(struct ty_engine_call *call,
                         struct ty_docker *api,
                         struct ty_loop *loop,
                         const char *method,
                         const char *path,
                         const char *body,
                         const char *header,
                         long timeout_ms,
                         ty_engine_call_fn fn,
                         void *ctx,
                         struct ty_error *err);
/* ty_engine_call_start for an answer of at most @max_body bytes: a longer one is cut off as
 * it arrives (never buffered whole), and @fn gets status 0 with an error saying so. */
int ty_engine_call_start_capped(struct ty_engine_call *call,
                                struct ty_docker *api,
                                struct ty_loop *loop,
                                const char *method,
                                const char *path,
                                long timeout_ms,
                                size_t max_body,
                                ty_engine_call_fn fn,
                                void *ctx,
                                struct ty_error *err);
/* Abort the call in flight, if any; its callback does not run. */
void ty_engine_call_cancel(struct ty_engine_call *call);
/* Is a call in flight? */
bool ty_engine_call_busy(const struct ty_engine_call *call);

/* ---- the engine (engine-service.c) ---- */

struct engine_open;
struct engine_gc;
struct engine_pull;

struct ty_engine {
    struct ty_docker *api;
    struct ty_loop *loop;
    char *socket;                /* the API socket in use */
    pid_t service_pid;           /* the podman service we started, 0 if none */
    int service_pidfd;           /* its pidfd (valid while service_pid > 0), or -1 */
    char *service_dir;           /* its private directory (socket inside), removed at close */
    struct engine_open *opening; /* ty_engine_open under way */
    struct engine_gc *gc;        /* ty_engine_collect_garbage under way */
    struct engine_pull *pull;    /* ty_engine_ensure_image under way */
};

/* How ty_engine_open ended: 0, or -errno with @error saying why (-EHOSTUNREACH listing what
 * was tried). @started_msg (may be NULL) says, for the user, that a service was started. */
typedef void (*ty_engine_open_fn)(void *ctx, int r, const char *error, const char *started_msg);

/* Connect @eng (zeroed) to an engine on @loop, starting podman's service when needed.
 * Returns 0 with @fn to follow on the loop, or -errno when it cannot begin (a DOCKER_HOST
 * that is not unix://). After a failure, ty_engine_close still frees what is left. */
int ty_engine_open(struct ty_engine *eng,
                   struct ty_loop *loop,
                   ty_engine_open_fn fn,
                   void *ctx,
                   struct ty_error *err);
/* Disconnect: abort whatever is under way (no callbacks), stop the service if we started
 * it (SIGTERM, then SIGKILL if it has not ended within SERVICE_STOP_MS; the wait is a poll
 * on its pidfd). NULL-safe fields; idempotent. */
void ty_engine_close(struct ty_engine *eng);

/* ---- chores (container-engine.c) ---- */

/* Abort the chores under way (garbage collection, image); their callbacks do not run. */
void ty_engine_chores_cancel(struct ty_engine *eng);

/* @s percent-encoded for a request path (letters, digits and "-._~/:@" kept; an image
 * reference stays readable). Caller frees. */
char *ty_engine_url_escape(const char *s);

/* Labels every container and network of trainyard carries. */
#define TY_LABEL_RUN   "trainyard.run"   /* the run token */
#define TY_LABEL_JOB   "trainyard.job"   /* the job id */
#define TY_LABEL_TASK  "trainyard.task"  /* master-replica-0 ... */
#define TY_LABEL_OWNER "trainyard.owner" /* ty_engine_owner_id of the supervising process */

/* Write "<pid>:<start time in clock ticks since boot>:<PID namespace>" of this process into
 * @buf (size @n): it identifies the process across pid reuse, and says whose pids those are
 * (the inode of /proc/self/ns/pid): a trainyard in another PID namespace sharing the engine
 * (one in a container, with the engine's socket) labels its containers with pids that mean
 * other processes here, and the garbage collection leaves them alone. */
void ty_engine_owner_id(char *buf, size_t n);

/* Remove containers and networks labelled by a trainyard process that no longer exists
 * (left behind when trainyard was killed with SIGKILL), one at a time. @fn gets how many
 * were removed (lists that fail are skipped: this is housekeeping). Returns 0 with @fn to
 * follow on the loop, or -EBUSY when a collection is already under way. */
int ty_engine_collect_garbage(struct ty_engine *eng, void (*fn)(void *ctx, int removed), void *ctx);

/* How ty_engine_ensure_image ended: 0, or -errno with @error saying why (the caller adds
 * which replica). */
typedef void (*ty_engine_image_fn)(void *ctx, int r, const char *error);

/* Make sure @image is present: inspect, and pull on 404 (with registry credentials from the
 * Docker config file when it has them), the pull within @timeout_ms. Returns 0 with @fn to
 * follow on the loop, or -errno (-EBUSY: an image is already under way; -EPERM: an
 * insecure registry off loopback) with err saying why. */
int ty_engine_ensure_image(struct ty_engine *eng,
                           const char *image,
                           long timeout_ms,
                           ty_engine_image_fn fn,
                           void *ctx,
                           struct ty_error *err);

/* Choose a free IPv4 /24 inside 198.18.0.0/15 that none of @networks (the body of GET
 * /networks, parsed) uses; writes the subnet ("198.18.N.0/24") and its prefix ("198.18.N.")
 * into the buffers. Returns 0 or -EADDRNOTAVAIL. */
int ty_engine_pick_subnet(json_t *networks,
                          unsigned seed,
                          char *subnet,
                          size_t n,
                          char *prefix,
                          size_t np,
                          struct ty_error *err);

#endif
