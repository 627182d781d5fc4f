/* SPDX-License-Identifier: Apache-2.0
 * container-engine.h: finding (or starting) the container engine the container runtime
 * talks to, and the engine-wide chores around a job: images present or pulled, stale
 * trainyard containers and networks removed, a free subnet for the job's network.
 *
 * Engine discovery: $DOCKER_HOST (unix:// only), else /var/run/docker.sock, then
 * /run/podman/podman.sock, then $XDG_RUNTIME_DIR/podman/podman.sock: the first that answers
 * GET /_ping. When none does and `podman` is installed, trainyard starts
 * `podman system service --time=0` on a private socket as a child it owns and stops. */
#ifndef TY_CONTAINER_ENGINE_H
#define TY_CONTAINER_ENGINE_H

#include <stdbool.h>
#include <sys/types.h>

#include "docker-api.h"
#include "error.h"
#include "loop.h"

struct ty_engine {
    struct ty_docker *api;
    char *socket;      /* the API socket in use */
    pid_t service_pid; /* the podman service we started, 0 if none */
    char *service_dir; /* its private directory (socket inside), removed at close */
};

/* Connect to an engine (starting podman's service when needed). On success *started_msg
 * (caller frees, may stay NULL) says whether a service was started, for the user.
 * Returns 0, or -EHOSTUNREACH with err listing what was tried. */
int ty_engine_open(struct ty_engine *eng,
                   struct ty_loop *loop,
                   char **started_msg,
                   struct ty_error *err);
/* Disconnect; stop the service if we started it. NULL-safe fields. */
void ty_engine_close(struct ty_engine *eng);

/* Labels every container and network of trainyard carries. */
#define TY_LABEL_RUN   "trainyard.run"   /* the run token */
#define TY_LABEL_JOB   "trainyard.job"   /* the job id */
#define TY_LABEL_TASK  "trainyard.task"  /* master-replica-0 ... */
#define TY_LABEL_OWNER "trainyard.owner" /* "<pid>:<start time>" of the supervising process */

/* "<pid>:<start time in clock ticks since boot>" of this process: identifies it across pid
 * reuse. */
const char *ty_engine_owner_id(void);
/* Remove containers and networks labelled by a trainyard process that no longer exists
 * (left behind when trainyard was killed with SIGKILL). Returns how many were removed. */
int ty_engine_collect_garbage(struct ty_engine *eng);

/* Make sure @image is present: inspect, and pull on 404 (with registry credentials from the
 * Docker config file when it has them), within @timeout_ms. Returns 0 or -errno with err
 * saying why (the caller adds which replica). */
int ty_engine_ensure_image(struct ty_engine *eng,
                           const char *image,
                           long timeout_ms,
                           struct ty_error *err);

/* Choose a free IPv4 /24 inside 198.18.0.0/15 that no engine network uses; writes the subnet
 * ("198.18.N.0/24") and its prefix ("198.18.N.") into the buffers. Returns 0 or -errno. */
int ty_engine_pick_subnet(struct ty_engine *eng,
                          unsigned seed,
                          char *subnet,
                          size_t n,
                          char *prefix,
                          size_t np,
                          struct ty_error *err);

#endif
