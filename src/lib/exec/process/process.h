/* SPDX-License-Identifier: Apache-2.0
 * process.h: the process runtime, each replica's command as a program on this host
 * (docs/internals/runtime.md). */
#ifndef TY_PROCESS_H
#define TY_PROCESS_H

#include "runtime.h"

extern const struct ty_runtime_ops ty_runtime_process;

#endif
