/* SPDX-License-Identifier: Apache-2.0
 * runtimes.h: the runtimes of this build, found by name. Only the programs that run
 * replicas link this (trainyard, trainyard-supervisor, trainyard-task); the service checks
 * jobs with run/runtime.h's catalogue and never links a runtime. */
#ifndef TY_RUNTIMES_H
#define TY_RUNTIMES_H

#include "error.h"
#include "runtime.h"

/* The runtime named @name ("process", "container", "slurm"), or NULL. */
const struct ty_runtime_ops *ty_runtime_find(const char *name);

/* The runtime named @name; an unknown name fails with -EINVAL and err listing the names of
 * this build. */
int ty_runtime_lookup(const char *name, const struct ty_runtime_ops **ret, struct ty_error *err);

#endif
