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

/* The API type of a model the NVIDIA driver names ("Tesla T4", "Tesla V100-SXM2-16GB",
 * "NVIDIA A100-PCIE-40GB"): one of the words of @model (split at anything but letters and
 * digits, compared without case) is K80, P100, V100, P4, T4 or A100. -1 for other models
 * (a P40, a V100S, an RTX...). */
int ty_gpu_model_type(const char *model);

/* The gpu-devices setting @v (@where: the setting, for the error): "nvidia" (the host's NVIDIA
 * devices; *@stand_in false) or "stand-in" (declared devices without a device file, for
 * tests; true). Returns 0, or -EINVAL naming @where, the two values and the nearer one to @v
 * when it is near ("did you mean 'stand-in'?"). */
int ty_gpu_devices_parse(const char *v, const char *where, bool *stand_in, struct ty_error *err);

/* Find the devices. @stand_in false: the host's NVIDIA devices under @root ("/" normally;
 * tests give a fake tree with dev/nvidia<N> and proc/driver/nvidia/gpus/<bus>/information),
 * locked under @root/run/trainyard (made when first locked); each device's type is the
 * driver's model (ty_gpu_model_type) for the "Device Minor:" N. @declared (NULL, or with no
 * GPU dimension counted: none declared) gives instead the types of the first devices in number
 * order: in @order, the order the declaration writes them (ty_resources_parse_ordered), or
 * without one (NULL) the types in the enum's order (K80 first, A100 last): more declared than found
 * is an error naming @where, the declaration and what was found; devices beyond the declared ones
 * are not offered (type -1). @stand_in true: the @declared devices, numbered from 0 in the
 * same order, locked under @state_dir/stand-in-gpus (made here); declaring none is an error.
 * Devices whose type is unknown are kept with type -1. Notes a person should read (a model
 * that is not an API type, a device the driver does not describe, a declaration that differs
 * from the driver's type, devices not offered) are appended to *@notes (a NUL-terminated strv;
 * may stay NULL), each starting with @where. @where names the setting that declares the GPUs
 * ("--capacity", "TRAINYARD_GPUS"). Returns 0, or -errno with err naming @where. */
int ty_gpu_inventory_load(bool stand_in,
                          const struct ty_resources *declared,
                          const struct ty_gpu_order *order,
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
/* The device numbered @number, or NULL. */
const struct ty_gpu_dev *ty_gpu_inventory_find(const struct ty_gpu_inventory *inv, int number);

/* The lock file of device @number, into @buf (for messages). Returns @buf. */
const char *ty_gpu_lock_path(const struct ty_gpu_inventory *inv, int number, char *buf, size_t len);
/* Lock device number @number of @inv without waiting: the lock file's descriptor (O_CLOEXEC;
 * closing it lets the device go), or -EWOULDBLOCK when another open file holds it (another
 * process, or another descriptor of this one: flock belongs to the open file), -ENODEV when
 * @inv has no such device, or -errno (the lock directory or file cannot be made or opened).
 * The lock directory is made 0755 and a lock file 0644 when this call creates them; a lock
 * file is opened without following a symbolic link, and read-only when it belongs to another
 * user (a shared lock file made by root). */
int ty_gpu_lock(const struct ty_gpu_inventory *inv, int number);
/* Whether another open file holds device number @number now (a shared lock is taken and let
 * go at once; false when it cannot be checked, or the lock file does not exist). */
bool ty_gpu_busy(const struct ty_gpu_inventory *inv, int number);

/* What a job was given, as the service passes it to the job's supervisor and records it in
 * the store: {"trials": K, "gpus": [N, ...], "gpuStandIn": true|false}. The GPU numbers are
 * in the order of ty_sched_admission.gpus: trial slot by slot; within a slot role by role
 * (master, worker, ps, evaluator), replica by replica, role_gpus[role] each. */
struct ty_grant {
    int trials;
    int *gpus;
    size_t ngpus;
    bool stand_in;
};
/* New reference. */
json_t *ty_grant_to_json(const struct ty_grant *g);
/* Read @j into *@g (its gpus allocated; ty_grant_release): "trials" an integer from 1 to
 * 100000 (required), "gpus" an array of distinct device numbers from 0 to 65535 (optional),
 * "gpuStandIn" a boolean (optional, false); other members are ignored. Returns 0 or -EINVAL
 * with err naming the field ("grant: gpus[1]: ..."); *@g is left empty then. */
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
/* The log line of an admission, into @buf (cut at @len): how long the job waited and what it
 * was given, for example "Admitted after 12.3 s in the queue: 2 trials at once, each 8 vCPUs
 * and 30.0 GiB of memory; GPUs 0, 1 (NVIDIA_TESLA_T4, stand-ins)." (a plain job: "Admitted
 * after 0.2 s in the queue: 8 vCPUs and 30.0 GiB of memory."). Returns @buf. */
const char *ty_grant_describe(const struct ty_grant *g,
                              const struct ty_demand *d,
                              int64_t waited_usec,
                              char *buf,
                              size_t len);

#endif
