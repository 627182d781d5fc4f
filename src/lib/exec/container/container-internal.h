/* SPDX-License-Identifier: Apache-2.0
 * container-internal.h: the container runtime's state, shared by container.c (the runtime's
 * operations and each replica's asynchronous create/start/wait/logs chain),
 * container-prepare.c (the asynchronous prepare) and container-config.c (what a container is
 * created with: limits, GPUs, network, command). Not a public interface: only the container
 * runtime's files include it. */
#ifndef TY_CONTAINER_INTERNAL_H
#define TY_CONTAINER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "container-engine.h"
#include "docker-api.h"
#include "linesplit.h"
#include "runtime.h"

#define REPLICA_PORT 2222 /* as on AI Platform */
/* 10 minutes: a pull may be gigabytes (CUDA images); a hung registry must not hang us. */
#define PULL_TIMEOUT_MS 600000
/* After a container's wait returns, how long its log stream may take to drain. */
#define LOG_DRAIN_USEC (2 * INT64_C(1000000))
/* 2 GiB: PyTorch data loaders want far more than Docker's 64 MiB /dev/shm default. */
#define MAX_SHM_BYTES (INT64_C(2) << 30)

struct container_rt;

struct ctr_replica {
    struct container_rt *rt;
    struct ty_replica *r;
    char *name;
    char *id;
    char ip[32];
    struct ty_docker_req *req; /* create or start in flight */
    struct ty_docker_req *wait_req, *logs_req;
    struct ty_docker_demux dm;
    struct ty_linesplit out_ls, err_ls;
    int pending_signal;
    int reserve_fd; /* host networking: the port held until the container starts, or -1 */
    long exit_code;
    uint64_t drain_timer;
    struct ty_engine_call rm_call; /* cleanup: its removal */
    bool started, exited, reported, wait_done, logs_done, sigkilled;
};

struct container_rt {
    struct ty_runtime base;
    struct ty_engine eng;
    struct ctr_replica *reps;
    size_t n;
    char token[40];
    char hash[16];
    char *network;
    bool network_created;
    char subnet[32], prefix[24];
    int64_t nano_cpus[TY_ROLE_MAX], memory[TY_ROLE_MAX];
    int *gpu_locks; /* flock'd fds of the GPUs this job holds */
    int *gpu_index; /* and their device numbers (/dev/nvidia<N>) */
    size_t n_gpu_locks;
    size_t next_gpu; /* next of those to hand to a replica */
    char owner[64];  /* TY_LABEL_OWNER's value: ty_engine_owner_id */
    /* prepare() under way (container-prepare.c) */
    bool preparing;
    struct ty_engine_call pcall; /* the network listing or creation in flight */
    size_t next_image;           /* the replica whose image is being made present */
    int net_attempt;             /* subnets tried so far */
    /* cleanup under way (container-cleanup.c) */
    bool cleaning, cleaned;
    size_t removing;                /* container removals still in flight */
    struct ty_engine_call net_call; /* the network's removal */
    bool network_forced;            /* ... with ?force=1 */
};

/* The runtime's prepare(): validate, then (unless a dry run) open the engine and go on on
 * the loop (container-prepare.c). Returns TY_RUNTIME_ASYNC, 0 (dry run) or -errno. */
int ctr_prepare(struct ty_runtime *rt, struct ty_error *err);
/* cleanup() during prepare: abort the chain; no `prepared` follows. */
void ctr_prepare_abort(struct container_rt *c);

/* The runtime's cleanup(): remove the containers, then the network, on the loop
 * (container-cleanup.c). Returns 0 (nothing to remove, or done) or TY_RUNTIME_ASYNC. */
int ctr_cleanup(struct ty_runtime *rt);
/* destroy(): finish the cleanup (or do all of it) now, blocking (a private curl handle;
 * the caller's loop does not run). */
void ctr_cleanup_now(struct container_rt *c);
/* The memory one container may have (the host's, or TRAINYARD_CONTAINER_MAX_MEMORY). */
int64_t ctr_host_memory(void);
/* Fill c->nano_cpus and c->memory from each role's machine type, capped to the host with a
 * notice. */
void ctr_size_roles(struct container_rt *c);
/* GPUs one replica of @role gets (acceleratorConfig, or its machine type's built-in ones). */
int ctr_gpus_per_replica(const struct ty_job *job, int role);
/* Lock the GPUs the whole job needs; -ENODEV/-EBUSY with a message when there are too few. */
int ctr_reserve_gpus(struct container_rt *c, struct ty_error *err);
/* A JSON array of the strings of @v ([] for NULL). */
json_t *ctr_strv_array(char *const *v);
/* The body of POST /containers/create for replica @cr with the contract variables @env.
 * Caller frees. */
char *ctr_create_body(struct container_rt *c, struct ctr_replica *cr, char *const env[]);

#endif
