/* SPDX-License-Identifier: Apache-2.0
 * local-gpus.h: the GPUs of `trainyard local train` (local-gpus.c): this machine's devices
 * (the host's NVIDIA devices, or those declared by TRAINYARD_GPUS / the config key gpus,
 * stand-ins with TRAINYARD_GPU_DEVICES=stand-in / gpu_devices), the never-fits check, and the
 * wait for devices other jobs hold, after which the job runs with them locked. Every runtime
 * but slurm (Slurm gives GPUs itself). docs/cli.md has the rules. */
#ifndef TY_LOCAL_GPUS_H
#define TY_LOCAL_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "gpudev.h"
#include "resources.h"
#include "runtime.h"
#include "spec.h"

struct local_gpus {
    bool active; /* the job needs GPUs and its runtime takes them from here */
    struct ty_gpu_inventory inv;
    char *how; /* where the devices come from, in messages ("TRAINYARD_GPUS=...") */
    struct ty_demand d;
    struct ty_grant grant; /* what the job holds once acquired (trial slots, devices) */
    int *locks;            /* the lock descriptors of grant.gpus */
    struct ty_run_gpus run;
    char admitted[1024]; /* the admission line of the job's log */
};

/* Find this machine's GPUs for @job, run by the runtime named @runtime, with stand-in locks
 * under @state_dir, and check that one trial of the job can ever fit (ty_demand_check: the
 * GPUs only; CPUs and memory are not counted here). Returns 0 (lg->active when the job has
 * GPUs to hold), or -1 after printing the error (the caller exits 2). */
int local_gpus_setup(struct local_gpus *lg,
                     const struct ty_job *job,
                     const char *runtime,
                     const char *state_dir);

enum local_gpus_wait {
    LOCAL_GPUS_HELD,      /* locked (or nothing to hold): the job may run */
    LOCAL_GPUS_CANCELLED, /* SIGINT/SIGTERM/SIGHUP while waiting */
    LOCAL_GPUS_EXPIRED,   /* scheduling.maxWaitTime passed while waiting */
    LOCAL_GPUS_ERROR,     /* a lock could not be taken for another reason */
};

/* Lock the job's GPUs: as many trial slots as are free at once, at least one, at most
 * maxParallelTrials (1 without tuning). While other jobs hold what one trial needs, wait:
 * say why on stderr (again when it changes), try again every second, end on a byte from
 * @sig_fd (the signal pipe) or at createTime @create_usec + scheduling.maxWaitTime. @why
 * gets the errorMessage of an end other than LOCAL_GPUS_HELD. Fills lg->run and
 * lg->admitted when held. */
enum local_gpus_wait local_gpus_acquire(struct local_gpus *lg,
                                        const struct ty_job *job,
                                        int sig_fd,
                                        int64_t create_usec,
                                        char *why,
                                        size_t len);

/* Let the devices go and free everything; NULL-safe. */
void local_gpus_release(struct local_gpus *lg);

/* api-settings.c: the last value of @key in the CLI's config file (TRAINYARD_CONFIG, else
 * $XDG_CONFIG_HOME/trainyard/config, else ~/.config/trainyard/config) and where it is
 * ("FILE:LINE"), both NULL when unset (caller frees). Returns 0, or -errno with err when the
 * file cannot be read or has an unknown key. */
int cli_config_value(const char *key, char **value, char **source, struct ty_error *err);

#endif
