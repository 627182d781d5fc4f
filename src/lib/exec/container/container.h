/* SPDX-License-Identifier: Apache-2.0
 * container.h: the container runtime, each replica's image through a Docker Engine API
 * (Docker or Podman) on a network of the job's own (docs/internals/runtime.md). */
#ifndef TY_CONTAINER_H
#define TY_CONTAINER_H

#include "error.h"
#include "runtime.h"

extern const struct ty_runtime_ops ty_runtime_container;

/* Remove the containers and networks whose supervising process is gone (for the service,
 * after a supervisor died), through the engine (started for the purpose when none runs).
 * Returns how many were removed, or -errno with err when the engine cannot be reached. */
int ty_container_sweep(struct ty_error *err);

#endif
