/* SPDX-License-Identifier: Apache-2.0
 * runtime.h: the interface every runtime implements (exec/process, exec/container,
 * exec/slurm). A runtime turns a cluster plan into running replicas and reports back, through
 * callbacks on the caller's event loop, each replica's output lines and its exit. It knows
 * nothing of job states: the supervisor (supervise.h) decides what an exit means.
 *
 * Nothing here assumes a replica runs on this host: a replica is addressed by host:port in
 * the plan, signalled through the runtime, and its output arrives as lines.
 *
 * Call order for one run: create -> prepare -> place -> launch (each replica) ->
 * [signal]* -> cleanup (always, also after a failed prepare/place/launch) -> [`cleaned`] ->
 * destroy. All calls happen on the loop's thread.
 *
 * Nothing a runtime does blocks the caller's loop: prepare() and cleanup() may go on on the
 * loop (they return TY_RUNTIME_ASYNC; `prepared` and `cleaned` follow), and every other wait
 * is an fd or a timer of the loop. The one exception is destroy() of a runtime whose
 * cleanup has not ended: it finishes that cleanup before it returns (see destroy). */
#ifndef TY_RUNTIME_H
#define TY_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "logs.h"
#include "loop.h"
#include "plan.h"

enum ty_stream { TY_STREAM_STDOUT, TY_STREAM_STDERR };

enum ty_exit_kind {
    TY_EXIT_CODE,         /* exited; code = status (may be 0) */
    TY_EXIT_SIGNAL,       /* killed by signal `code` */
    TY_EXIT_OOM,          /* killed for memory; code = the status the service reports (137) */
    TY_EXIT_START_FAILED, /* never ran; detail says why */
    TY_EXIT_LOST,         /* the runtime lost track of it (the container engine lost the
                           * container...) but what it ran on stands; detail says why */
    TY_EXIT_NODE_LOST,    /* what it ran on is gone (a Slurm node went down, its launcher's
                           * connection was lost, the allocation ended): the run's resources
                           * must be made again (a new runtime); detail says why */
};

struct ty_exit_status {
    enum ty_exit_kind kind;
    int code;
    char detail[256];
};

/* Where a runtime sends what happens to replicas. All callbacks run on the loop. For one
 * replica: `started` (its program is running) comes before any output and before `exited`,
 * unless it never started (then only `exited`, with TY_EXIT_START_FAILED); every output line
 * is delivered before `exited` (lines written later by leftover children may still follow). */
struct ty_runtime_events {
    void (*started)(void *ctx, struct ty_replica *r);
    void (*output)(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len);
    void (*exited)(void *ctx, struct ty_replica *r, const struct ty_exit_status *st);
    /* Something the user should know that is not a replica's output (a limit capped, an
     * engine started); logged as a service message. Optional. */
    void (*notice)(void *ctx, enum ty_severity severity, const char *message);
    /* Runtimes with a queue of their own (ops->queues): the run waits there because of
     * @reason (the scheduler's words); called whenever the reason changes. */
    void (*queued)(void *ctx, const char *reason);
    /* An asynchronous prepare() (it returned TY_RUNTIME_ASYNC) ended: 0, or -errno with
     * @error saying why. place() may be called after a 0. -EHOSTDOWN says that what prepare()
     * had obtained was lost before the replicas were placed (Slurm ended the allocation: a
     * node failed, ...): transient, the supervisor retries the job as for a lost node. */
    void (*prepared)(void *ctx, int r, const char *error);
    /* An asynchronous cleanup() (it returned TY_RUNTIME_ASYNC) ended: everything the run
     * created is gone, or given up on after the runtime's deadlines (with a notice). The
     * last event of a run: none follows. Never called from within cleanup() or destroy().
     * Optional (a caller without it learns nothing of the end, and must leave the rest to
     * destroy). */
    void (*cleaned)(void *ctx);
    void *ctx;
};

/* Returned by a prepare() that goes on on the loop (waiting for a scheduler's allocation);
 * the `prepared` event follows, unless cleanup() comes first. Returned by a cleanup() that
 * goes on on the loop; the `cleaned` event follows. */
#define TY_RUNTIME_ASYNC 1

struct ty_runtime;

struct ty_runtime_ops {
    const char *name; /* "process", "container", "slurm" */
    /* The runtime hands runs to a scheduler with a queue (slurm): the run stays QUEUED until
     * its prepare() has ended, and `queued` says why it waits. */
    bool queues;
    /* Check, before anything happens, that this runtime can run @job (optional). */
    int (*validate)(const struct ty_job *job, struct ty_error *err);
    /* Allocate the runtime's state. */
    int (*create)(struct ty_runtime **ret, struct ty_error *err);
    /* Make the plan's resources exist: images, networks, allocations. Returns 0 when done,
     * or TY_RUNTIME_ASYNC when it goes on on the loop (see `prepared`). */
    int (*prepare)(struct ty_runtime *rt, struct ty_error *err);
    /* Give every replica its host and port (and hold them until launch). A new attempt of a
     * job (a retry) calls it on a new runtime with the replicas still holding the host and
     * port of the attempt before: a runtime that can keep an address keeps it (the process
     * runtime the same port when it is free), else it assigns a new one. */
    int (*place)(struct ty_runtime *rt, struct ty_error *err);
    /* Start one replica with the contract variables @env (NAME=VALUE, NULL-terminated).
     * Returns once the start is under way; `started` or `exited` reports how it went.
     * Restart in place: launch() may be called again for a replica whose `exited` has been
     * reported, until cleanup() begins, and never from within an event callback. The runtime
     * first removes whatever the replica's previous run left (leftover processes, the old
     * container), then starts it again with the same host, port and @env (the caller passes
     * the same @env); `started`, output and `exited` follow as for a first launch. */
    int (*launch)(struct ty_runtime *rt,
                  struct ty_replica *r,
                  char *const env[],
                  struct ty_error *err);
    /* Deliver @sig to the replica and everything it started. No-op once it has exited. */
    int (*signal)(struct ty_runtime *rt, struct ty_replica *r, int sig, struct ty_error *err);
    /* Remove everything the run created (processes, containers, networks, reservations,
     * scheduler jobs); called after every replica has exited, or after a failed start.
     * Returns 0 when everything is already gone, or TY_RUNTIME_ASYNC when the removal goes
     * on on the loop (stopping containers, waiting for a scheduler to let a job go): the
     * `cleaned` event follows, and until then the loop's other events keep flowing (output
     * of leftover children and notices may still come from this run). Idempotent: a call
     * while a cleanup goes on returns TY_RUNTIME_ASYNC again (one `cleaned` follows), a call
     * after it ended returns 0. No replica's `exited` is reported once cleanup has begun. */
    int (*cleanup)(struct ty_runtime *rt);
    /* Free the runtime. A cleanup that never ran, or is still going on, is finished here,
     * synchronously (on a private loop or by polling the runtime's own fds, never running
     * the caller's loop), so that nothing the run created survives; `cleaned` is not
     * called. This blocks: destroy belongs to teardown, after a run ended or when its owner
     * gives up on it. */
    void (*destroy)(struct ty_runtime *rt);
};

/* The GPU devices one replica is given (/dev/nvidia<N>; borrowed). */
struct ty_replica_gpus {
    const int *dev;
    size_t n;
};

/* What a job was given on this machine, as its caller hands it to the run (the service's
 * grant, the devices `local train` locked): trials at once and GPU devices. Plain data, so
 * that the run needs nothing of the admission code (src/lib/admit). Borrowed. */
struct ty_run_gpus {
    int trials; /* trial slots: a tuning job runs at most this many trials at once */
    /* Device numbers: trial slot by slot; within a slot role by role (master, worker, ps,
     * evaluator), replica by replica, ty_role_gpus() each (the order of the scheduler's
     * grant, scheduler.h). */
    const int *gpus;
    size_t ngpus;
    /* Stand-ins (tests on a machine without GPUs): replicas get the variables, no device. */
    bool stand_in;
};

/* The part of every runtime the generic code sees; implementations embed it first. */
struct ty_runtime {
    const struct ty_runtime_ops *ops;
    struct ty_loop *loop;
    struct ty_runtime_events ev;
    struct ty_cluster_plan *plan; /* borrowed: set by ty_runtime_attach */
    /* --dry-run: place() must only compute addresses, creating nothing anywhere. */
    bool dry_run;
    /* The user (a name) whose uid, gid and groups the replicas run with; NULL: as this
     * process. Borrowed; set before prepare(). Only the process runtime uses it (prepare()
     * fails with a clear error for an unknown user, or when this process is not root); the
     * container runtime runs what the engine runs (the image's USER) and the slurm runtime
     * what Slurm runs (the submitting user), and both ignore it. */
    const char *run_as;
    /* The environment the replicas start from, under the contract's variables (NAME=VALUE,
     * NULL-terminated; borrowed; NULL: this process's own); set before prepare(). The
     * process runtime uses it, and the slurm runtime hands it to its launchers for program
     * replicas (which add what Slurm sets in a task, SLURM_*); a container starts from its
     * image's environment. @path_setting names what set its PATH, in the error of a command
     * not found on it (NULL: "PATH"). */
    char *const *base_env;
    const char *path_setting;
    /* The directory the replicas start in (borrowed; NULL: this process's own); set before
     * prepare(). The process runtime changes into it after taking the replicas' user, and a
     * replica that cannot is not started (TY_EXIT_START_FAILED naming the directory); the
     * slurm runtime has srun start its tasks there; a container starts in its image's. */
    const char *workdir;
    /* The GPUs of each replica of the attached plan, indexed by ty_runtime_replica_index;
     * NULL: none given. Borrowed; set before prepare(). The caller holds the devices (their
     * locks) for the whole run. The process runtime sets CUDA_VISIBLE_DEVICES and
     * CUDA_DEVICE_ORDER; the container runtime hands the device files and sets
     * NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES, and fails a replica that needs GPUs
     * (ty_role_gpus) and was given fewer; the slurm runtime ignores it (Slurm gives GPUs). */
    const struct ty_replica_gpus *gpus;
    /* The GPUs given are stand-ins: replicas get the variables only, and a notice says so. */
    bool gpu_stand_in;
};

/* The devices of each replica of @plan for a trial in slot @slot (0 for a plain job) under
 * @g, in plan order (ty_runtime_replica_index), into a new array the caller frees; the
 * entries point into g->gpus. NULL when @g is NULL or gives this slot no GPU; a replica @g
 * does not cover (a grant too short) gets none. */
struct ty_replica_gpus *
ty_run_gpus_for_plan(const struct ty_run_gpus *g, const struct ty_cluster_plan *plan, int slot);
/* The device numbers of @g (n of them) as "0,1" into @buf, the form of CUDA_VISIBLE_DEVICES.
 * Returns @buf. */
const char *ty_replica_gpus_list(const struct ty_replica_gpus *g, char *buf, size_t len);

/* Report a notice through the runtime's events (no-op without a notice callback). */
void ty_runtime_notice(struct ty_runtime *rt, enum ty_severity severity, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The container runtime runs at most this many replicas per job: one /24 network, .1 is the
 * gateway, .2 - .254 replicas. */
#define TY_CONTAINER_MAX_REPLICAS 253
/* The least TRAINYARD_CONTAINER_MAX_MEMORY (trainyardd's --container-max-memory) may be: 4
 * MiB, below which no container starts. */
#define TY_CONTAINER_MIN_MEMORY (INT64_C(4) << 20)
/* 10 minutes: the most pulling one image may take (a pull may be gigabytes: CUDA images; a
 * hung registry must not hang the run). */
#define TY_CONTAINER_PULL_TIMEOUT_MS 600000L

/* runtime-check.c: the runtimes this build has and what each accepts, usable without
 * linking the runtimes (the service checks jobs with these; only job supervisors run them).
 * Is @name a runtime of this build? Its names, comma-separated (for help and errors). */
bool ty_runtime_known(const char *name);
const char *ty_runtime_names(void);
/* The error for @name, no runtime of this build: "unknown runtime 'contianer' (did you mean
 * 'container'? this build has: process, container, slurm)", the suggestion only when one is
 * near. Returns -EINVAL. */
int ty_runtime_unknown(const char *name, struct ty_error *err);
/* The labels that say how a job runs (docs/service.md, "Labels the service reads"). */
#define TY_LABEL_RUNTIME "trainyard-runtime"
#define TY_LABEL_PYTORCH "trainyard-pytorch-env"
#define TY_LABEL_MXNET   "trainyard-mxnet-env"
/* Check those labels of @job: a runtime of this build, and "true" or "false" (which a
 * "yes" would silently have been). Returns 0 or -EINVAL with err naming the label. */
int ty_runtime_labels_check(const struct ty_job *job, struct ty_error *err);
/* Is label @key of @job "true"? */
bool ty_label_true(const struct ty_job *job, const char *key);
/* Check that the runtime named @name exists and can run @job; for callers that want to
 * refuse a job before creating anything. Returns 0 or -EINVAL with err saying why. */
int ty_runtime_validate(const char *name, const struct ty_job *job, struct ty_error *err);
/* How long runtime @name's PREPARING of @job may take, from its start to RUNNING, by the
 * runtime's own timeouts (usec): the container runtime's image pulls of each distinct image
 * and the steps around them, the process runtime's cgroups; 0 for slurm (its allocation waits
 * in Slurm's queue, which bounds nothing). The scheduler counts it before maxRunningTime,
 * which ml v1 measures from RUNNING. */
int64_t ty_runtime_prepare_usec(const char *name, const struct ty_job *job);
/* The checks of each runtime (also their ops' validate). The process runtime's: a command for
 * every role, and no more replicas than the host's port range for replicas has
 * (ty_port_range_size); the first alone is ty_process_validate_commands (what a Slurm node's
 * launcher, running one replica of a larger job, checks). */
int ty_process_validate(const struct ty_job *job, struct ty_error *err);
int ty_process_validate_commands(const struct ty_job *job, struct ty_error *err);
int ty_container_validate(const struct ty_job *job, struct ty_error *err);
int ty_slurm_validate(const struct ty_job *job, struct ty_error *err);
/* How the slurm runtime runs @job's replicas on the nodes: "process" (each command as a
 * program) or "container" (each image through the node's container engine, on the host's
 * network). TRAINYARD_SLURM_REPLICAS chooses; "auto" or unset: "process" when every role has
 * a containerCommand, else "container". */
const char *ty_slurm_replica_runtime(const struct ty_job *job);

/* The variable that carries a supervisor's sweep key under the service into the supervisor
 * and every local replica, so that what a supervisor that died left can be found (the slurm
 * runtime also ends its Slurm job names with the key's first 8 characters). */
#define TY_SWEEP_ENV "TRAINYARD_SUPERVISOR_KEY"
/* The variable the slurm runtime sets in its srun's environment (srun passes it to the tasks
 * too): the sweep spares srun, as it spares the tasks (SLURM_JOB_ID). Slurm ends a step whose
 * srun was killed at once, its launchers' container engines too, before the launchers could
 * remove their containers through them. */
#define TY_SLURM_CLIENT_ENV "TRAINYARD_SLURM_CLIENT"

/* Create a runtime of @ops, bound to @loop and reporting to @ev. */
int ty_runtime_new(const struct ty_runtime_ops *ops,
                   struct ty_loop *loop,
                   const struct ty_runtime_events *ev,
                   struct ty_runtime **ret,
                   struct ty_error *err);
/* Report the end of an asynchronous cleanup through the runtime's events (no-op without a
 * `cleaned` callback). For runtimes; call it last, the caller may free the run in it. */
void ty_runtime_cleaned(struct ty_runtime *rt);
/* Bind the plan of the run (before prepare). */
void ty_runtime_attach(struct ty_runtime *rt, struct ty_cluster_plan *plan);
/* Destroy; NULL-safe. */
void ty_runtime_free(struct ty_runtime *rt);

/* Index of @r in the attached plan (runtimes keep per-replica state in arrays). */
static inline size_t ty_runtime_replica_index(const struct ty_runtime *rt,
                                              const struct ty_replica *r)
{
    return (size_t)(r - rt->plan->replicas);
}

#endif
