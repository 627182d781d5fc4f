/* SPDX-License-Identifier: Apache-2.0
 * runtime.c: the generic create/attach/free of a runtime (exec/runtimes.c finds one by name). */
#include "runtime.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "macro.h"

int ty_runtime_new(const struct ty_runtime_ops *ops,
                   struct ty_loop *loop,
                   const struct ty_runtime_events *ev,
                   struct ty_runtime **ret,
                   struct ty_error *err)
{
    struct ty_runtime *rt = NULL;
    int r;

    r = ops->create(&rt, err);
    if (r < 0)
        return r;
    rt->ops = ops;
    rt->loop = loop;
    rt->ev = *ev;
    *ret = rt;
    return 0;
}

void ty_runtime_notice(struct ty_runtime *rt, enum ty_severity severity, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (!rt->ev.notice)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rt->ev.notice(rt->ev.ctx, severity, msg);
}

void ty_runtime_cleaned(struct ty_runtime *rt)
{
    if (rt->ev.cleaned)
        rt->ev.cleaned(rt->ev.ctx);
}

void ty_runtime_attach(struct ty_runtime *rt, struct ty_cluster_plan *plan)
{
    rt->plan = plan;
}

void ty_runtime_free(struct ty_runtime *rt)
{
    if (rt)
        rt->ops->destroy(rt);
}

struct ty_replica_gpus *
ty_run_gpus_for_plan(const struct ty_run_gpus *g, const struct ty_cluster_plan *plan, int slot)
{
    struct ty_replica_gpus *out;
    size_t per_slot = 0, off;
    bool any = false;

    if (!g || !g->ngpus || slot < 0 || slot >= g->trials || plan->n_replicas == 0)
        return NULL;
    for (size_t i = 0; i < plan->n_replicas; i++)
        per_slot += (size_t)ty_role_gpus(plan->job, plan->replicas[i].role, NULL);
    out = xcalloc(plan->n_replicas, sizeof(*out));
    off = (size_t)slot * per_slot;
    /* The plan lists the replicas master first, then workers, ps, evaluators, each by
     * index: the grant's order within a slot. */
    for (size_t i = 0; i < plan->n_replicas; i++) {
        size_t k = (size_t)ty_role_gpus(plan->job, plan->replicas[i].role, NULL);
        if (k > 0 && off + k <= g->ngpus) {
            out[i] = (struct ty_replica_gpus){g->gpus + off, k};
            any = true;
        }
        off += k;
    }
    if (!any) {
        free(out);
        return NULL;
    }
    return out;
}

const char *ty_replica_gpus_list(const struct ty_replica_gpus *g, char *buf, size_t len)
{
    size_t off = 0;

    if (len)
        buf[0] = '\0';
    for (size_t i = 0; g && i < g->n && off < len; i++) {
        int k = snprintf(buf + off, len - off, "%s%d", i ? "," : "", g->dev[i]);
        off += k > 0 ? (size_t)k : 0;
    }
    return buf;
}
