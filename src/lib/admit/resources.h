/* SPDX-License-Identifier: Apache-2.0
 * resources.h: what a job needs and what a service has, as one vector of counted resources
 * (running-job slots, vCPUs, memory, GPUs by type), with the capacity and limit settings that
 * declare them (`cpus=N,memory=SIZE,gpus=TYPE:N[+TYPE:N...]`) and a job's demand computed from
 * its machine types and accelerators (docs/machine-types.md). The scheduler (scheduler.h) and
 * `local train` weigh jobs with these; docs/service.md#scheduling has the rules. */
#ifndef TY_RESOURCES_H
#define TY_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "spec.h"

/* The GPU types of the API's AcceleratorConfig enum (TPUs are refused by validation), in
 * the enum's order: NVIDIA_TESLA_K80, _P100, _V100, _P4, _T4, _A100. */
#define TY_GPU_NTYPES 6
/* The type's enum name, for 0 <= @type < TY_GPU_NTYPES. */
const char *ty_gpu_type_name(int type);
/* The index of the type named @name (exact enum name), or -1. */
int ty_gpu_type_index(const char *name);

/* The dimensions of a resource vector. */
enum ty_res_dim {
    TY_RES_JOBS,   /* running-job slots (--max-running-jobs, a project's jobs=) */
    TY_RES_CPUS,   /* vCPUs of the machine types */
    TY_RES_MEMORY, /* MiB of the machine types */
    TY_RES_GPU0,   /* TY_RES_GPU0 + type: GPUs of that type */
    TY_RES_NDIMS = TY_RES_GPU0 + TY_GPU_NTYPES,
};

/* In a capacity or a limit: the dimension is not counted (any amount fits). */
#define TY_RES_UNLIMITED (-1)

struct ty_resources {
    int64_t v[TY_RES_NDIMS];
};

/* Every dimension TY_RES_UNLIMITED. */
void ty_resources_unlimited(struct ty_resources *r);
/* Every dimension 0. */
void ty_resources_zero(struct ty_resources *r);
/* @r += @times * @a, dimension by dimension (an unlimited dimension of @r stays so). */
void ty_resources_add(struct ty_resources *r, const struct ty_resources *a, int64_t times);
/* @r -= @a, dimension by dimension: what is left of @r once @a is taken (an unlimited
 * dimension of @r stays so; a counted one stops at 0, never below: more taken than there is,
 * as after a capacity or limit was lowered under running jobs, leaves nothing, and a -1 left
 * would read as TY_RES_UNLIMITED). */
void ty_resources_sub(struct ty_resources *r, const struct ty_resources *a);
/* The first dimension where @need is more than @avail (an unlimited dimension of @avail takes
 * anything), or -1 when @need fits. */
int ty_resources_short(const struct ty_resources *need, const struct ty_resources *avail);
/* Whether any dimension of @r is counted (not unlimited). */
bool ty_resources_any_counted(const struct ty_resources *r);

/* An amount of dimension @dim in words, into @buf: "1 running job", "8 vCPUs",
 * "30.0 GiB of memory" (under 1 GiB: "512 MiB of memory"), "2 × NVIDIA_TESLA_T4". Returns
 * @buf. */
const char *ty_res_amount(int dim, int64_t amount, char *buf, size_t len);
/* The dimension's name in settings: "jobs", "cpus", "memory", "gpus". */
const char *ty_res_key(int dim);

/* Parse a capacity or limit setting: comma-separated KEY=VALUE with the keys cpus=N
 * (0..1000000), memory=SIZE and gpus=TYPE:N[+TYPE:N...] (N 0..4096 per type; a type named
 * twice adds up), or gpus=0 (or none) for no GPU at all (and jobs=N, 0..100000, when
 * @allow_jobs). SIZE is a number of bytes with an optional binary suffix K, M, G, T (or KiB,
 * MiB, GiB, TiB; also lower case), kept in MiB (rounded down; at least 1 MiB). GPU types are
 * the enum names (NVIDIA_TESLA_T4) or gcloud's spelling (nvidia-tesla-t4). Blanks around
 * keys and values are ignored; each key may be given once. A key given sets that dimension
 * of *@r (GPU types not named in gpus= become 0 once gpus= is given); keys not given leave it
 * as it was; on error *@r is unchanged. @where names the setting in errors ("--capacity",
 * "FILE:LINE: capacity"). Returns 0, or -EINVAL with err naming @where, the key and the
 * rule. */
int ty_resources_parse(const char *text,
                       bool allow_jobs,
                       const char *where,
                       struct ty_resources *r,
                       struct ty_error *err);

/* The GPU devices a setting declares, in the order its gpus= writes them: types[k] is the type
 * (TY_GPU_*) of device k ("gpus=NVIDIA_TESLA_T4:1+NVIDIA_TESLA_V100:1": device 0 a T4, device
 * 1 a V100), whatever the order of the enum. */
struct ty_gpu_order {
    size_t n;
    int *types;
};

/* ty_resources_parse that also sets *@order (released first) from gpus=, when given; on error
 * *@order is unchanged. */
int ty_resources_parse_ordered(const char *text,
                               bool allow_jobs,
                               const char *where,
                               struct ty_resources *r,
                               struct ty_gpu_order *order,
                               struct ty_error *err);

/* Free what @o holds and empty it. */
void ty_gpu_order_release(struct ty_gpu_order *o);
/* The setting text of the counted dimensions of @r, as ty_resources_parse reads it
 * ("cpus=8,memory=32768M,gpus=NVIDIA_TESLA_T4:2"; "gpus=0" when the GPU dimensions are
 * counted and all 0); "" when none is counted. Parsing the text into an unlimited vector
 * gives @r back when its GPU dimensions are all counted or none (as parsing makes them).
 * Returns @buf. */
const char *ty_resources_format(const struct ty_resources *r, char *buf, size_t len);

/* What one job needs at once. */
struct ty_demand {
    /* One trial of a tuning job, or the whole job: the sum of its replicas' shapes, with
     * v[TY_RES_JOBS] = 1. */
    struct ty_resources trial;
    bool tuning; /* a tuning job: the trial is one trial */
    /* Trials run at once at most: a tuning job's maxParallelTrials, but no more than its
     * maxTrials; 1 without tuning. */
    int max_trials;
    /* Per role: replicas, and the GPUs each replica gets (type index, -1 when none). */
    int64_t role_count[TY_ROLE_MAX];
    int role_gpus[TY_ROLE_MAX];
    int role_gpu_type[TY_ROLE_MAX];
};

/* The demand of @job (already validated: every machine type is in the catalog). A
 * replica's vCPUs and memory are its machine type's; its GPUs are ty_role_gpus(). A GPU type
 * outside the enum (cannot pass validation) counts as no GPU. */
void ty_demand_of_job(const struct ty_job *job, struct ty_demand *d);
/* What @d holds with @trials trials at once: @trials times its trial's vCPUs, memory and
 * GPUs, and one running-job slot. */
void ty_demand_total(const struct ty_demand *d, int trials, struct ty_resources *out);
/* The GPUs one trial of @d needs, in all. */
int64_t ty_demand_trial_gpus(const struct ty_demand *d);

/* Whether one trial of @d can ever fit in @have, what a service has in all (@whose "this
 * service"), a project may hold ("project vision") or this machine has. 0 when it fits; -1
 * when not, with the reason in @why (cut at @whylen): the field, the resource, what the job
 * needs and what @whose has, and @how when not NULL (the setting that says so, e.g.
 * "--capacity gpus=NVIDIA_TESLA_T4:2"), for example "trainingInput: the job needs 4 ×
 * NVIDIA_TESLA_T4 at once, and this service has 2 (--capacity gpus=...)"; "has none" for 0. A
 * tuning job's message says "one trial of the job needs". Pure. */
int ty_demand_check(const struct ty_demand *d,
                    const struct ty_resources *have,
                    const char *whose,
                    const char *how,
                    char *why,
                    size_t whylen);

#endif
