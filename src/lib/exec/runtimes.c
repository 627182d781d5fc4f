/* SPDX-License-Identifier: Apache-2.0
 * runtimes.c: the table of this build's runtimes. */
#include "runtimes.h"

#include <string.h>

#include "container.h"
#include "macro.h"
#include "process.h"
#include "slurm.h"

static const struct ty_runtime_ops *const runtimes[] = {
    &ty_runtime_process,
    &ty_runtime_container,
    &ty_runtime_slurm,
};

const struct ty_runtime_ops *ty_runtime_find(const char *name)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(runtimes); i++)
        if (strcmp(runtimes[i]->name, name) == 0)
            return runtimes[i];
    return NULL;
}

int ty_runtime_lookup(const char *name, const struct ty_runtime_ops **ret, struct ty_error *err)
{
    *ret = ty_runtime_find(name);
    if (!*ret)
        return ty_runtime_unknown(name, err);
    return 0;
}
