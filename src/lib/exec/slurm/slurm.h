/* SPDX-License-Identifier: Apache-2.0
 * slurm.h: the slurm runtime, one Slurm job per run with one trainyard-task launcher per
 * replica (docs/internals/slurm.md). */
#ifndef TY_SLURM_H
#define TY_SLURM_H

#include "error.h"
#include "runtime.h"

extern const struct ty_runtime_ops ty_runtime_slurm;

/* Cancel every Slurm job a supervisor with sweep key @key left (its job names end with the
 * key's first 8 characters; TY_SWEEP_ENV): for the service, once that supervisor has died.
 * Returns how many were cancelled, or -errno (squeue failed) with err. */
int ty_slurm_sweep(const char *key, struct ty_error *err);
/* How many Slurm jobs of that key squeue still lists (a cancelled job stays, COMPLETING,
 * until its tasks have ended: Slurm's KillWait, a launcher removing its container), or
 * -errno with err. One squeue call: a caller waiting for 0 polls. */
int ty_slurm_sweep_left(const char *key, struct ty_error *err);
/* How many job steps (srun's, the launchers') those jobs still run, or -errno with err. Two
 * squeue calls. */
int ty_slurm_sweep_steps_left(const char *key, struct ty_error *err);

#endif
