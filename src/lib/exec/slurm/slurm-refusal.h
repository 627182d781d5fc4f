/* SPDX-License-Identifier: Apache-2.0
 * slurm-refusal.h: the shape of the Slurm job a run asks for (one task per replica, each task
 * the largest replica's CPUs, memory and GPUs) and, when sbatch refuses it, the refusal
 * explained: what trainyard asked for, which replica's machine type set it, and the settings
 * that would change it (docs/slurm.md, "When Slurm refuses a job"). */
#ifndef TY_SLURM_REFUSAL_H
#define TY_SLURM_REFUSAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct slurm_rt;

/* What one run asks Slurm for. The *_from texts name the replica that set the figure ("master
 * n1-standard-16", "worker 0 acceleratorConfig"), "" when nothing did. */
struct slurm_shape {
    size_t ntasks;
    int cpus;       /* --cpus-per-task */
    int64_t mem_mb; /* the largest replica's memory: --mem-per-cpu is this over cpus */
    bool mem_asked; /* false with TRAINYARD_SLURM_MEMORY=none (or no memory known) */
    int64_t gpus;   /* --gpus-per-task, 0 when none */
    char cpus_from[96], mem_from[96], gpus_from[96];
    const char *partition, *account, *qos, *extra; /* the settings; NULL when unset */
};

/* The shape of a run of @s's replicas, with the settings from the environment
 * (TRAINYARD_SLURM_MEMORY, _PARTITION, _ACCOUNT, _QOS, _SBATCH_ARGS: the pointers are the
 * environment's, valid while it is unchanged). */
void slurm_shape_of(const struct slurm_rt *s, struct slurm_shape *sh);

/* sbatch's error output @err for a run of shape @sh, explained when Slurm refused something
 * trainyard chose (the task shape, the partition, the account or QOS, the time limit): Slurm's
 * words, what trainyard asked for and the settings that change it, in one line of at most
 * about 900 bytes. NULL when @err is not such a refusal (then it is shown as it is). Caller
 * frees. */
char *slurm_refusal_explain(const char *err, const struct slurm_shape *sh);

#endif
