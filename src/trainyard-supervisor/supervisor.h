/* SPDX-License-Identifier: Apache-2.0
 * supervisor.h: the commands of trainyard-supervisor (supervisor.c), the program trainyardd
 * starts for each job and to sweep what a dead supervisor left. */
#ifndef TYS_SUPERVISOR_H
#define TYS_SUPERVISOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "gpudev.h"
#include "runtime.h"
#include "spec.h"

/* `trainyard-supervisor supervise-job [--run-as=USER] [--grant=JSON] STATE_DIR SEQ
 * GRACE_USEC`: run one job to its end, recording it in the store. Returns the process exit
 * status. */
int tys_supervise_main(int argc, char **argv);
/* `trainyard-supervisor sweep-containers`: remove containers and networks of dead
 * supervisors. */
int tys_sweep_containers_main(int argc, char **argv);
/* `trainyard-supervisor sweep-slurm KEY`: cancel the Slurm jobs a dead supervisor with sweep
 * key KEY left (ty_slurm_sweep). Exit status 0, or 1 when squeue failed. */
int tys_sweep_slurm_main(int argc, char **argv);

/* admission.c: what the scheduler gave the job (--grant). */
struct tys_grant {
    bool given; /* --grant was given */
    struct ty_grant grant;
    json_t *json; /* as given, recorded in the store when the job is claimed */
};
/* Read --grant's @text into *@out. Returns 0, or -EINVAL with err naming --grant and the
 * field. */
int tys_grant_read(const char *text, struct tys_grant *out, struct ty_error *err);
/* The GPU lock descriptors trainyardd passed (fds 3, 4, ..., one per granted GPU, in grant
 * order): made close-on-exec at once, so that no replica inherits them, and left open until
 * this process exits (the devices stay held). Returns how many are not open, described in
 * @missing ("fd 4 (GPU 1)"). */
size_t tys_grant_hold_fds(const struct tys_grant *g, char *missing, size_t len);
/* The grant in the run's plain form (borrowing @g's devices). */
void tys_grant_run_gpus(const struct tys_grant *g, struct ty_run_gpus *out);
/* The admission line of the job's log (ty_grant_describe) for @job created at @create_usec.
 * Returns @buf. */
const char *tys_grant_admitted(const struct tys_grant *g,
                               const struct ty_job *job,
                               int64_t create_usec,
                               char *buf,
                               size_t len);
void tys_grant_release(struct tys_grant *g);

#endif
