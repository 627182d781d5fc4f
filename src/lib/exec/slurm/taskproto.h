/* SPDX-License-Identifier: Apache-2.0
 * taskproto.h: the wire protocol between a runtime that places replicas on other hosts (the
 * slurm runtime, in the job's supervisor) and `trainyard-task`, the launcher that runs one
 * replica on its node. The launcher connects back to the supervisor over TCP; everything
 * about the replica then travels on that one connection:
 *
 *   launcher -> supervisor: HELLO (its token, Slurm task id and node), PLACED (the address
 *                           and port it holds for its replica), STARTED, OUT/ERR (one
 *                           output line each), METRICS (a trial's metric file, whenever it
 *                           changed), NOTICE, EXIT
 *   supervisor -> launcher: ASSIGN (the job, trial and replica it runs), START (the
 *                           replica's environment), SIGNAL, QUIT
 *
 * A frame is a 4-byte big-endian length L (1 .. TY_TASKPROTO_MAX_FRAME), then L bytes: one
 * type byte and the payload. OUT and ERR payloads are the raw bytes of one line (no '\n',
 * any bytes), METRICS the raw bytes of a file; every other payload is a compact JSON object
 * (docs/internals/slurm.md). The connection is the replica's lifeline: a launcher whose connection
 * drops kills its replica and exits, and a supervisor that loses a connection treats the replica as
 * lost. Bytes from the network are untrusted on both sides: the decoder is fuzzed. */
#ifndef TY_TASKPROTO_H
#define TY_TASKPROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "runtime.h"

/* Largest frame (type byte + payload): 4 MiB, for a START with a big environment. */
#define TY_TASKPROTO_MAX_FRAME (4u * 1024 * 1024)

enum ty_task_msg {
    TY_TASK_HELLO = 'H',   /* JSON {token, procid, node, pid, slurmJob?}: slurmJob its
                              SLURM_JOB_ID (srun prints none) */
    TY_TASK_ASSIGN = 'A',  /* JSON {job, trialId?, trialArgs?, replica, runtime, previous?,
                              baseEnv?, pathSetting?}: previous {host, port}: the replica's
                              address in the attempt before (a retry), kept when this node
                              is that host; baseEnv [NAME=VALUE...]: the environment a program
                              replica starts from (the service's, ty_runtime.base_env; absent:
                              the launcher's own), pathSetting what set its PATH */
    TY_TASK_PLACED = 'P',  /* JSON {host, port} */
    TY_TASK_START = 'S',   /* JSON {env[]}; again after an EXIT: run the replica again */
    TY_TASK_STARTED = 'R', /* JSON {pid} */
    TY_TASK_OUT = 'O',     /* one stdout line */
    TY_TASK_ERR = 'E',     /* one stderr line */
    TY_TASK_METRICS = 'M', /* a trial's whole hypertune metric file, as the replica wrote it */
    TY_TASK_NOTICE = 'N',  /* JSON {severity: 0..3 (enum ty_severity), message}: the node's
                              runtime has something to say (an engine started, a limit) */
    TY_TASK_EXIT = 'X',    /* JSON {kind, code, detail}: see ty_taskproto_exit_json */
    TY_TASK_SIGNAL = 'K',  /* JSON {signal} */
    TY_TASK_QUIT = 'Q',    /* JSON {}: end the replica now and exit */
};

/* Whether @type is one of the message types above. */
bool ty_task_msg_known(int type);

/* Append one frame of @type with @len payload bytes to @out. Returns 0, or -EMSGSIZE when
 * the frame would exceed TY_TASKPROTO_MAX_FRAME. */
int ty_taskproto_frame(struct ty_buf *out, int type, const void *payload, size_t len);

/* Append a frame whose payload is @obj as compact JSON (@obj not stolen). */
int ty_taskproto_frame_json(struct ty_buf *out, int type, const json_t *obj);

/* Incremental decoder: bytes in, whole frames out. */
struct ty_taskproto_reader {
    struct ty_buf in;
    bool broken; /* a bad frame was seen: the stream cannot be resynchronised */
};

/* Called for each frame; @payload is valid during the call only. Return 0 to go on, or a
 * negative errno to stop decoding (ty_taskproto_feed returns it). */
typedef int (*ty_taskproto_fn)(void *ctx, int type, const char *payload, size_t len);

/* Feed @n bytes and deliver every complete frame. Returns 0; -EPROTO (with err saying why)
 * for a zero or oversized length or an unknown type, after which the reader stays broken
 * and refuses more; or the callback's error. Partial frames are kept for the next call. */
int ty_taskproto_feed(struct ty_taskproto_reader *rd,
                      const char *p,
                      size_t n,
                      ty_taskproto_fn fn,
                      void *ctx,
                      struct ty_error *err);

/* Bytes held in a partial frame (for end-of-stream checks). */
size_t ty_taskproto_pending(const struct ty_taskproto_reader *rd);

void ty_taskproto_reader_release(struct ty_taskproto_reader *rd);

/* Parse a JSON payload into an object. Returns 0 and *ret (caller decrefs), or -EPROTO. */
int ty_taskproto_json(const char *payload, size_t len, json_t **ret, struct ty_error *err);

/* ---- a replica's environment (ASSIGN.baseEnv, START.env) ------------------------------ */

/* @arr (ASSIGN.baseEnv or START.env, named @where in errors), a JSON array of NAME=VALUE
 * strings, into *ret (NULL-terminated; caller frees with ty_strv_free). Returns 0, or -EPROTO
 * when @arr is not an array or an entry is not a string with a non-empty NAME before '='. */
int ty_taskproto_env_parse(const json_t *arr, const char *where, char ***ret, struct ty_error *err);

/* The environment a launcher's program replica starts from when the supervisor sent a base
 * (@base, ASSIGN.baseEnv): @base plus what Slurm set for the task in @task (the launcher's own
 * environment): every SLURM_* and SLURMD_* variable, and, when Slurm gave the task GPUs
 * (SLURM_STEP_GPUS or SLURM_JOB_GPUS is set), CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL,
 * ROCR_VISIBLE_DEVICES and ZE_AFFINITY_MASK. Nothing else of @task: under the service that
 * is the daemon's environment, which sbatch exports to the launcher. An entry of @base wins
 * over one of @task of the same name. Caller frees with ty_strv_free. */
char **ty_taskproto_replica_env(char *const base[], char *const task[]);

/* ---- a replica's end (EXIT) ----------------------------------------------------------- */

/* The wire name of each exit kind of runtime.h: "code", "signal", "oom", "start_failed",
 * "lost" (the node's runtime lost the replica; the node stands: restart in place),
 * "node_lost" (Slurm ended the step or the allocation under it: retry the job). */
const char *ty_taskproto_exit_kind_name(enum ty_exit_kind kind);

/* The kind named @name into *ret. Returns 0, or -EPROTO for NULL or an unknown name. */
int ty_taskproto_exit_kind_parse(const char *name, enum ty_exit_kind *ret);

/* EXIT's payload for @st: {kind, code, detail} (a new reference). */
json_t *ty_taskproto_exit_json(const struct ty_exit_status *st);

/* EXIT's payload @m into @st. Returns 0, or -EPROTO (err says why) for a missing or unknown
 * kind or a code that is not an integer; @st then holds TY_EXIT_LOST with that reason, so a
 * caller that goes on reports something true. */
int ty_taskproto_exit_parse(const json_t *m, struct ty_exit_status *st, struct ty_error *err);

/* Whether @st is a SIGTERM or SIGKILL (also as the status 143 or 137 a shell reports): an end
 * that may be Slurm's doing rather than the program's. */
bool ty_taskproto_exit_is_kill(const struct ty_exit_status *st);

/* How a launcher reports its replica's end @st (changed in place). @step_ended: the launcher
 * itself got SIGTERM/SIGINT/SIGHUP from outside before the end, which is how Slurm ends a step
 * (scancel, a time limit, a node of the job failing): a kill then becomes TY_EXIT_NODE_LOST,
 * naming @node; any other end (the program's own status, a crash) stays as it came. A kill
 * without @step_ended is a signal from outside trainyard on the node (restart in place). */
void ty_taskproto_exit_judge(struct ty_exit_status *st, bool step_ended, const char *node);

#endif
