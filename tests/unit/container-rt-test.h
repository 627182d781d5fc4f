/* SPDX-License-Identifier: Apache-2.0
 * container-rt-test.h: for the container runtime's unit tests (test-container-engine.c,
 * test-container-exits.c): a runtime on the test engine of docker-test-server.h (DOCKER_HOST
 * set to its socket) whose events are recorded in a struct rtev, jobs of its test images,
 * and the scratch folder's files. */
#ifndef TY_CONTAINER_RT_TEST_H
#define TY_CONTAINER_RT_TEST_H

#include <stdbool.h>
#include <stddef.h>

#include "container-internal.h"
#include "loop.h"
#include "plan.h"
#include "runtime.h"
#include "spec.h"

/* At most this many replicas per job. */
#define RT_MAX 4

/* What a runtime reported, per replica: starts, exits and how, its last line and every line
 * ('|' after each), notices about a missing init and the images' user, prepare's result,
 * the cleanup's end. */
struct rtev {
    struct ty_runtime *rt;
    int started[RT_MAX], exited[RT_MAX];
    struct ty_exit_status st[RT_MAX];
    char out[RT_MAX][128];
    char all[RT_MAX][512]; /* every line, each followed by '|' */
    bool prepared, cleaned;
    int notices;
    char notice[512];
    int user_notices; /* about the images' user (container-user.c): the last one */
    char user_notice[512];
    int prep_r;
    char prep_error[256];
};

/* A job of a master (@master image), and a worker and a parameter server when their images
 * are given (NULL: none). BAIL_OUT when it cannot be made. */
struct ty_job *rt_job(const char *master, const char *worker, const char *ps);
/* A container runtime on @plan whose events go to @e, prepared and placed (BAIL_OUT when
 * not). */
struct ty_runtime *rt_ready(struct ty_loop *loop, struct ty_cluster_plan *plan, struct rtev *e);
/* Clean @rt up (waiting up to 10 s for `cleaned`) and free it. */
void rt_end(struct ty_loop *loop, struct ty_runtime *rt, struct rtev *e);
/* Run @loop until replica @i has exited @n times (at most 10 s). Returns whether it did. */
bool until_exited(struct ty_loop *loop, struct rtev *e, size_t i, int n);
/* The whole scratch file @name ("" when missing). Caller frees. */
char *scratch(const char *name);
/* Nothing of a replica's run is left: no request, timer or watch. */
bool run_idle(struct ctr_replica *cr);
/* The contract variables a replica is launched with. */
extern char *const rt_env[];

#endif
