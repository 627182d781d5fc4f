/* SPDX-License-Identifier: Apache-2.0
 * machine.h: the catalog of AI Platform machine types (Compute Engine shapes and the legacy
 * names) with their vCPUs, memory and built-in GPUs. Used by validation now and by the
 * container and Slurm runtimes for resource limits. Figures for the legacy names are
 * trainyard's documented choices (docs/machine-types.md): Google published only relative
 * sizes for them. */
#ifndef TY_MACHINE_H
#define TY_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

enum ty_machine_family {
    TY_MACHINE_COMPUTE_ENGINE, /* n1-*, a2-*: accelerators attach via acceleratorConfig */
    TY_MACHINE_LEGACY,         /* standard, complex_model_m_gpu, ...: GPUs built in */
};

struct ty_machine_type {
    const char *name;
    enum ty_machine_family family;
    int vcpus;
    int64_t memory_mb;
    int gpus;             /* built-in accelerators (legacy GPU types, a2-*) */
    const char *gpu_type; /* AcceleratorConfig type of the built-in GPUs, or NULL */
    bool tpu;             /* cloud_tpu: a TPU VM */
};

/* Look a machine type up by name. Returns NULL for unknown names. */
const struct ty_machine_type *ty_machine_lookup(const char *name);

/* The catalog's name nearest to the unknown @name ("n1-standrd-4" -> "n1-standard-4",
 * "STANDARD_GPU" -> "standard_gpu"), or NULL when none is near (suggest.h). */
const char *ty_machine_suggest(const char *name);

#endif
