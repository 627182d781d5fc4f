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

/* Largest frame (type byte + payload): 4 MiB, for a START with a big environment. */
#define TY_TASKPROTO_MAX_FRAME (4u * 1024 * 1024)

enum ty_task_msg {
    TY_TASK_HELLO = 'H',   /* JSON {token, procid, node, pid} */
    TY_TASK_ASSIGN = 'A',  /* JSON {job, trialId?, trialArgs?, replica, runtime} */
    TY_TASK_PLACED = 'P',  /* JSON {host, port} */
    TY_TASK_START = 'S',   /* JSON {env[]} */
    TY_TASK_STARTED = 'R', /* JSON {pid} */
    TY_TASK_OUT = 'O',     /* one stdout line */
    TY_TASK_ERR = 'E',     /* one stderr line */
    TY_TASK_METRICS = 'M', /* a trial's whole hypertune metric file, as the replica wrote it */
    TY_TASK_NOTICE = 'N',  /* JSON {severity: 0..3 (enum ty_severity), message}: the node's
                              runtime has something to say (an engine started, a limit) */
    TY_TASK_EXIT = 'X',    /* JSON {kind: "code"|"signal"|"oom"|"start_failed", code, detail} */
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

#endif
