/* SPDX-License-Identifier: Apache-2.0
 * runtime.c: the generic create/attach/free of a runtime (exec/runtimes.c finds one by name). */
#include "runtime.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
