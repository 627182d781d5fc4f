/* SPDX-License-Identifier: Apache-2.0
 * subproc.h: run a short command (sbatch, squeue, scancel...) and capture what it prints,
 * with a deadline: asynchronously on an event loop (ty_subproc_start), or to completion for
 * callers outside any loop (ty_subproc_run, built on the former with a private loop). Not for
 * replicas: those are the runtimes' business. */
#ifndef TY_SUBPROC_H
#define TY_SUBPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "loop.h"

/* What a finished command did. */
struct ty_subproc_result {
    int status;     /* exit status 0..255, or 128 + signal when killed by one */
    int signal;     /* the signal that ended it, 0 when it exited */
    bool timed_out; /* killed (SIGKILL, with its process group) for the deadline */
    bool truncated; /* it printed more than the cap: the rest was read and dropped */
    char *out;      /* its stdout (NUL-terminated, at most the cap) */
    char *err;      /* its stderr, likewise, with trailing whitespace removed */
};

/* The default cap on each of stdout and stderr. */
#define TY_SUBPROC_MAX_OUTPUT (1024u * 1024)

/* How to run a command. Everything is copied by ty_subproc_start. */
struct ty_subproc_options {
    char *const *argv;      /* argv[0] searched in PATH */
    char *const *extra_env; /* NAME=VALUE on top of this process's environment, or NULL */
    const char *input;      /* its stdin, all of it (then EOF); NULL: /dev/null */
    size_t max_output;      /* cap on each of stdout and stderr; 0: TY_SUBPROC_MAX_OUTPUT */
    int64_t timeout_usec;   /* killed with its process group after this long; <= 0: never */
};

/* A command running on a loop. */
struct ty_subproc;

/* Called once on the loop when the command has ended (exited or killed, and both its
 * outputs closed, or the deadline passed). @res is freed after the call returns; the
 * callback may take res->out or res->err (set them to NULL). The handle is freed after the
 * call too: forget it there. */
typedef void (*ty_subproc_fn)(struct ty_loop *loop, struct ty_subproc_result *res, void *data);

/* Start @opt's command in a process group of its own, watched on @loop (its pipes, a pidfd
 * and a timer). It inherits its stdin, stdout and stderr and no other fd of this process
 * (port reservations included, close-on-exec or not: they are closed in the child). Returns 0 with
 * *ret set (may be NULL when the caller never cancels), or -ENOENT when argv[0] is not found, or
 * -errno, with err naming the command; @fn is only called after a 0. */
int ty_subproc_start(struct ty_loop *loop,
                     const struct ty_subproc_options *opt,
                     ty_subproc_fn fn,
                     void *data,
                     struct ty_subproc **ret,
                     struct ty_error *err);

/* Cancel a running command: SIGKILL to its process group, reaped at once (SIGKILL makes
 * that immediate), every fd closed, the callback never called. NULL-safe; a no-op from the
 * command's own callback. */
void ty_subproc_cancel(struct ty_subproc *p);

/* Run @argv (argv[0] searched in PATH) with stdin from /dev/null and @extra_env
 * (NAME=VALUE, NULL-terminated, may be NULL) on top of this process's environment, and wait
 * for it (a private loop: for callers outside any loop). It is killed (SIGKILL, with
 * everything in its process group) when it runs longer than @timeout_usec. Returns 0 and
 * *res (release with ty_subproc_result_release) whenever the command ran, whatever its
 * status; -ENOENT when argv[0] is not found, -ETIMEDOUT when it was killed for the deadline,
 * or -errno, each with err naming the command. */
int ty_subproc_run(char *const argv[],
                   char *const extra_env[],
                   int64_t timeout_usec,
                   struct ty_subproc_result *res,
                   struct ty_error *err);

/* Free what @res holds (not @res itself). */
void ty_subproc_result_release(struct ty_subproc_result *res);

/* The path of @name, a program that comes with trainyard: $@env_var when set and not empty;
 * else @name next to the running program (the build puts every program in build/bin, an
 * install its helpers next to each other) when it is executable there; else @fallback (a
 * path, or a bare name for a PATH search). Never NULL; free it. */
char *ty_sibling_program(const char *env_var, const char *name, const char *fallback);

#endif
