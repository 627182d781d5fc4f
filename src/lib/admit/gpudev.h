/* SPDX-License-Identifier: Apache-2.0
 * gpudev.h: the GPU devices jobs are given on this machine, and who holds them.
 *
 * The devices are the host's NVIDIA devices (/dev/nvidia<N>), each with its type from the
 * driver (/proc/driver/nvidia/gpus/<bus>/information: "Model:" and "Device Minor:"), or, when
 * declared in the configuration (`gpus=TYPE:N[+...]`), the first devices in number order with
 * the declared types; or stand-ins: declared devices with no device file, for tests on a
 * machine without GPUs (their replicas get the variables, CUDA_VISIBLE_DEVICES and so on, but
 * no device). docs/service.md#gpus has the rules.
 *
 * Whoever runs a job on a device holds it with an exclusive flock on a lock file per device:
 * LOCKDIR/gpu-<N>.lock, LOCKDIR being /run/trainyard for real devices and
 * STATE_DIR/stand-in-gpus for stand-ins, so the service and `local train` (and two services)
 * never give one device to two jobs. */
#ifndef TY_GPUDEV_H
#define TY_GPUDEV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "resources.h"

struct ty_gpu_dev {
    int number;  /* /dev/nvidia<number>; a stand-in's number is its place, from 0 */
    int type;    /* ty_gpu_type index; -1: unknown (not offered to jobs) */
    char *model; /* the driver's model name, NULL when not known (stand-ins) */
};

struct ty_gpu_inventory {
    struct ty_gpu_dev *dev; /* by number, ascending */
    size_t n;
    bool stand_in;
    char *lock_dir;
};

/* Find the devices. @stand_in false: the host's NVIDIA devices under @root ("/" normally;
 * tests give a fake tree with dev/nvidia<N> and proc/driver/nvidia/gpus/<bus>/information);
 * @declared (NULL, or with no GPU dimension counted: none declared) gives the types of the
 * first devices in number order (more declared than found is an error naming @where, the
 * declaration and what was found; devices beyond the declared ones are not offered).
 * @stand_in true: the @declared devices, numbered from 0, locked under
 * @state_dir/stand-in-gpus (created). Devices whose type is unknown are kept with type -1.
 * Notes a person should read (a model the driver names that is not an API type, a
 * declaration that differs from the driver's type) are appended to *@notes (a
 * NUL-terminated strv; may stay NULL). Returns 0, or -errno with err naming @where. */
int ty_gpu_inventory_load(bool stand_in,
                          const struct ty_resources *declared,
                          const char *root,
                          const char *state_dir,
                          const char *where,
                          struct ty_gpu_inventory *inv,
                          char ***notes,
                          struct ty_error *err);
/* Free what the inventory holds; NULL-safe; leaves it empty. */
void ty_gpu_inventory_release(struct ty_gpu_inventory *inv);
/* The type index of each device (for ty_sched_new), into @types (inv->n entries). */
void ty_gpu_inventory_types(const struct ty_gpu_inventory *inv, int *types);
/* GPUs per type the inventory offers (devices of a known type), into @r's GPU dimensions
 * (the other dimensions untouched). */
void ty_gpu_inventory_count(const struct ty_gpu_inventory *inv, struct ty_resources *r);

/* Lock device number @number of @inv without waiting: the lock file's descriptor (O_CLOEXEC;
 * closing it lets the device go), or -EWOULDBLOCK when another process holds it, or -errno. */
int ty_gpu_lock(const struct ty_gpu_inventory *inv, int number);
/* Whether another process holds device number @number now (the lock is taken and let go at
 * once; false when it cannot be checked). */
bool ty_gpu_busy(const struct ty_gpu_inventory *inv, int number);

/* What a job was given, as the service passes it to the job's supervisor and records it in
 * the store: {"trials": K, "gpus": [N, ...], "gpuStandIn": true|false}. The GPU numbers are
 * in the order of ty_sched_admission.gpus. */
struct ty_grant {
    int trials;
    int *gpus;
    size_t ngpus;
    bool stand_in;
};
/* New reference. */
json_t *ty_grant_to_json(const struct ty_grant *g);
/* Read @j into *@g (its gpus allocated; ty_grant_release). Returns 0 or -EINVAL with err
 * naming the field. */
int ty_grant_from_json(const json_t *j, struct ty_grant *g, struct ty_error *err);
void ty_grant_release(struct ty_grant *g);
/* The devices replica @index of @role in trial slot @slot gets, under @g for a job of demand
 * @d: a pointer into g->gpus and *@n (0 and NULL when none, or @g too short). */
const int *ty_grant_replica_gpus(const struct ty_grant *g,
                                 const struct ty_demand *d,
                                 int slot,
                                 enum ty_role role,
                                 int64_t index,
                                 size_t *n);

#endif
