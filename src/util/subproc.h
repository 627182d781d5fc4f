/* SPDX-License-Identifier: Apache-2.0
 * subproc.h: run a short command (sbatch, squeue, scancel...) to completion and capture what
 * it prints, with a deadline. Not for replicas: those are the runtimes' business. */
#ifndef TY_SUBPROC_H
#define TY_SUBPROC_H

#include <stdint.h>

#include "error.h"

/* What a finished command did. */
struct ty_subproc_result {
    int status; /* exit status 0..255, or 128 + signal when killed by one */
    char *out;  /* its stdout (NUL-terminated, at most TY_SUBPROC_MAX_OUTPUT bytes kept) */
    char *err;  /* its stderr, likewise, with trailing whitespace removed */
};

#define TY_SUBPROC_MAX_OUTPUT (1024u * 1024)

/* Run @argv (argv[0] searched in PATH) with stdin from /dev/null and @extra_env
 * (NAME=VALUE, NULL-terminated, may be NULL) on top of this process's environment. It is
 * killed (SIGKILL, with everything in its process group) when it runs longer than
 * @timeout_usec. Returns 0 and *res (release with ty_subproc_result_release) whenever the
 * command ran, whatever its status; -ENOENT when argv[0] is not found, -ETIMEDOUT when it
 * was killed for the deadline, or -errno, each with err naming the command. */
int ty_subproc_run(char *const argv[],
                   char *const extra_env[],
                   int64_t timeout_usec,
                   struct ty_subproc_result *res,
                   struct ty_error *err);

void ty_subproc_result_release(struct ty_subproc_result *res);

#endif
