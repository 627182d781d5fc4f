/* SPDX-License-Identifier: Apache-2.0
 * machine.c: the machine-type catalog. Compute Engine shapes follow Google's published N1
 * ratios (standard 3.75 GB, highmem 6.5 GB, highcpu 0.9 GB per vCPU) and A2 (12 vCPUs and
 * 85 GB per A100). Legacy names map to the N1 shape each was documented as comparable to. */
#include "machine.h"

#include <string.h>

#include "macro.h"
#include "suggest.h"

#define GB(x) ((int64_t)((x)*1024))
#define N1(kind, n, per)                                                                           \
    {                                                                                              \
        "n1-" kind "-" #n, TY_MACHINE_COMPUTE_ENGINE, n, GB((n) * (per)), 0, NULL, false           \
    }

static const struct ty_machine_type catalog[] = {
    N1("standard", 4, 3.75),
    N1("standard", 8, 3.75),
    N1("standard", 16, 3.75),
    N1("standard", 32, 3.75),
    N1("standard", 64, 3.75),
    N1("standard", 96, 3.75),
    N1("highmem", 2, 6.5),
    N1("highmem", 4, 6.5),
    N1("highmem", 8, 6.5),
    N1("highmem", 16, 6.5),
    N1("highmem", 32, 6.5),
    N1("highmem", 64, 6.5),
    N1("highmem", 96, 6.5),
    N1("highcpu", 16, 0.9),
    N1("highcpu", 32, 0.9),
    N1("highcpu", 64, 0.9),
    N1("highcpu", 96, 0.9),
    {"a2-highgpu-1g", TY_MACHINE_COMPUTE_ENGINE, 12, GB(85), 1, "NVIDIA_TESLA_A100", false},
    {"a2-highgpu-2g", TY_MACHINE_COMPUTE_ENGINE, 24, GB(170), 2, "NVIDIA_TESLA_A100", false},
    {"a2-highgpu-4g", TY_MACHINE_COMPUTE_ENGINE, 48, GB(340), 4, "NVIDIA_TESLA_A100", false},
    {"a2-highgpu-8g", TY_MACHINE_COMPUTE_ENGINE, 96, GB(680), 8, "NVIDIA_TESLA_A100", false},
    /* Legacy machine types: standard ~ n1-standard-4, large_model ~ n1-highmem-8,
     * complex_model_s/m/l ~ n1-highcpu-8/16/32 (each "about twice" the previous). */
    {"standard", TY_MACHINE_LEGACY, 4, GB(15), 0, NULL, false},
    {"large_model", TY_MACHINE_LEGACY, 8, GB(52), 0, NULL, false},
    {"complex_model_s", TY_MACHINE_LEGACY, 8, GB(7.2), 0, NULL, false},
    {"complex_model_m", TY_MACHINE_LEGACY, 16, GB(14.4), 0, NULL, false},
    {"complex_model_l", TY_MACHINE_LEGACY, 32, GB(28.8), 0, NULL, false},
    {"standard_gpu", TY_MACHINE_LEGACY, 4, GB(15), 1, "NVIDIA_TESLA_K80", false},
    {"complex_model_m_gpu", TY_MACHINE_LEGACY, 16, GB(14.4), 4, "NVIDIA_TESLA_K80", false},
    {"complex_model_l_gpu", TY_MACHINE_LEGACY, 32, GB(28.8), 8, "NVIDIA_TESLA_K80", false},
    {"standard_p100", TY_MACHINE_LEGACY, 4, GB(15), 1, "NVIDIA_TESLA_P100", false},
    {"complex_model_m_p100", TY_MACHINE_LEGACY, 16, GB(14.4), 4, "NVIDIA_TESLA_P100", false},
    {"standard_v100", TY_MACHINE_LEGACY, 4, GB(15), 1, "NVIDIA_TESLA_V100", false},
    {"large_model_v100", TY_MACHINE_LEGACY, 8, GB(52), 1, "NVIDIA_TESLA_V100", false},
    {"complex_model_m_v100", TY_MACHINE_LEGACY, 16, GB(14.4), 4, "NVIDIA_TESLA_V100", false},
    {"complex_model_l_v100", TY_MACHINE_LEGACY, 32, GB(28.8), 8, "NVIDIA_TESLA_V100", false},
    {"cloud_tpu", TY_MACHINE_LEGACY, 4, GB(15), 0, NULL, true},
};

const struct ty_machine_type *ty_machine_lookup(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < TY_ARRAY_SIZE(catalog); i++)
        if (strcmp(catalog[i].name, name) == 0)
            return &catalog[i];
    return NULL;
}

const char *ty_machine_suggest(const char *name)
{
    struct ty_suggest s;

    ty_suggest_init(&s, name);
    for (size_t i = 0; name && i < TY_ARRAY_SIZE(catalog); i++)
        ty_suggest_add(&s, catalog[i].name);
    return ty_suggest_best(&s);
}
