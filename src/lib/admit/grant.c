/* SPDX-License-Identifier: Apache-2.0
 * grant.c: what a job was given when it was admitted (gpudev.h, struct ty_grant): its JSON
 * form, the devices each replica of each trial slot gets, and the log line that says so. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "gpudev.h"
#include "json.h"
#include "macro.h"

json_t *ty_grant_to_json(const struct ty_grant *g)
{
    json_t *gpus = json_array();

    for (size_t i = 0; i < g->ngpus; i++)
        json_array_append_new(gpus, json_integer(g->gpus[i]));
    return json_pack(
        "{s:i,s:o,s:b}", "trials", g->trials, "gpus", gpus, "gpuStandIn", g->stand_in ? 1 : 0);
}

static int read_gpus(const json_t *a, struct ty_grant *g, struct ty_error *err)
{
    size_t n = json_array_size(a);

    if (!json_is_array(a))
        return ty_error_set(err, EINVAL, "grant: gpus: expected an array of device numbers");
    g->gpus = xcalloc(n ? n : 1, sizeof(int));
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        json_int_t x = json_integer_value(v);
        if (!json_is_integer(v) || x < 0 || x > 65535)
            return ty_error_set(
                err, EINVAL, "grant: gpus[%zu]: expected a device number from 0 to 65535", i);
        for (size_t k = 0; k < i; k++)
            if (g->gpus[k] == (int)x)
                return ty_error_set(err,
                                    EINVAL,
                                    "grant: gpus[%zu]: device %d is given twice (also gpus[%zu])",
                                    i,
                                    (int)x,
                                    k);
        g->gpus[i] = (int)x;
        g->ngpus = i + 1;
    }
    return 0;
}

int ty_grant_from_json(const json_t *j, struct ty_grant *g, struct ty_error *err)
{
    const json_t *trials = json_object_get(j, "trials");
    const json_t *gpus = json_object_get(j, "gpus");
    const json_t *stand_in = json_object_get(j, "gpuStandIn");
    int r = 0;

    memset(g, 0, sizeof(*g));
    if (!json_is_object(j))
        return ty_error_set(err, EINVAL, "grant: expected a JSON object");
    if (!json_is_integer(trials) || json_integer_value(trials) < 1 ||
        json_integer_value(trials) > 100000)
        return ty_error_set(
            err, EINVAL, "grant: trials: expected an integer from 1 to 100000 (required)");
    g->trials = (int)json_integer_value(trials);
    if (stand_in && !json_is_boolean(stand_in))
        r = ty_error_set(err, EINVAL, "grant: gpuStandIn: expected true or false");
    else
        g->stand_in = json_is_true(stand_in);
    if (r >= 0 && gpus)
        r = read_gpus(gpus, g, err);
    if (r < 0)
        ty_grant_release(g);
    return r;
}

void ty_grant_release(struct ty_grant *g)
{
    if (!g)
        return;
    free(g->gpus);
    memset(g, 0, sizeof(*g));
}

/* GPUs of one trial of @d, in all. */
static int64_t per_trial(const struct ty_demand *d)
{
    int64_t n = 0;
    for (int role = 0; role < TY_ROLE_MAX; role++)
        n += d->role_count[role] * d->role_gpus[role];
    return n;
}

const int *ty_grant_replica_gpus(const struct ty_grant *g,
                                 const struct ty_demand *d,
                                 int slot,
                                 enum ty_role role,
                                 int64_t index,
                                 size_t *n)
{
    int64_t off, k;

    *n = 0;
    if (!g || role < 0 || role >= TY_ROLE_MAX || slot < 0 || slot >= g->trials || index < 0 ||
        index >= d->role_count[role] || d->role_gpus[role] <= 0)
        return NULL;
    k = d->role_gpus[role];
    off = (int64_t)slot * per_trial(d);
    for (int r = 0; r < (int)role; r++)
        off += d->role_count[r] * d->role_gpus[r];
    off += index * k;
    if (off + k > (int64_t)g->ngpus)
        return NULL;
    *n = (size_t)k;
    return g->gpus + off;
}

/* The type of each of @g's GPUs under @d (-1 past what @d accounts for), into @types. */
static void gpu_types(const struct ty_grant *g, const struct ty_demand *d, int *types)
{
    size_t i = 0;

    for (int slot = 0; slot < g->trials; slot++)
        for (int role = 0; role < TY_ROLE_MAX; role++)
            for (int64_t k = 0; k < d->role_count[role] * d->role_gpus[role]; k++)
                if (i < g->ngpus)
                    types[i++] = d->role_gpu_type[role];
    while (i < g->ngpus)
        types[i++] = -1;
}

#define PUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__);                      \
        off += k_ > 0 ? (size_t)k_ : 0;                                                            \
    } while (0)

const char *ty_grant_describe(
    const struct ty_grant *g, const struct ty_demand *d, int64_t waited_usec, char *buf, size_t len)
{
    _cleanup_free_ int *types = xcalloc(g->ngpus ? g->ngpus : 1, sizeof(int));
    char cpus[64], mem[64];
    size_t off = 0;

    if (len)
        buf[0] = '\0';
    PUT("Admitted after %.1f s in the queue: ", (double)(waited_usec > 0 ? waited_usec : 0) / 1e6);
    if (d->tuning)
        PUT("%d trial%s at once, each ", g->trials, g->trials == 1 ? "" : "s");
    PUT("%s and %s",
        ty_res_amount(TY_RES_CPUS, d->trial.v[TY_RES_CPUS], cpus, sizeof(cpus)),
        ty_res_amount(TY_RES_MEMORY, d->trial.v[TY_RES_MEMORY], mem, sizeof(mem)));
    gpu_types(g, d, types);
    for (size_t i = 0; i < g->ngpus; i++) {
        bool last_of_type = i + 1 == g->ngpus || types[i + 1] != types[i];
        PUT("%s%d", i > 0 ? ", " : g->ngpus == 1 ? "; GPU " : "; GPUs ", g->gpus[i]);
        if (last_of_type)
            PUT(" (%s%s)",
                ty_gpu_type_name(types[i]),
                g->stand_in && i + 1 == g->ngpus ? ", stand-ins" : "");
    }
    PUT(".");
    if (off >= len && len)
        buf[len - 1] = '\0';
    return buf;
}
