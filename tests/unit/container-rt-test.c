/* SPDX-License-Identifier: Apache-2.0
 * container-rt-test.c: what the container runtime's unit tests share (container-rt-test.h):
 * a runtime on the test engine of docker-test-server.h whose events are recorded, jobs of
 * the engine's test images, and looks at the scratch folder. */
#include "container-rt-test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "container-internal.h"
#include "container.h"
#include "docker-test-server.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "plan.h"
#include "runtime.h"
#include "spec.h"
#include "tap.h"
#include "timeutil.h"

static size_t rep_index(struct rtev *e, struct ty_replica *r)
{
    return ty_runtime_replica_index(e->rt, r);
}

static void ev_started(void *ctx, struct ty_replica *r)
{
    struct rtev *e = ctx;
    e->started[rep_index(e, r)]++;
}

static void
ev_output(void *ctx, struct ty_replica *r, enum ty_stream s, const char *line, size_t len)
{
    struct rtev *e = ctx;
    size_t i = rep_index(e, r), have = strlen(e->all[i]);
    (void)snprintf(e->out[i], sizeof(e->out[0]), "%.*s", (int)len, line);
    (void)snprintf(e->all[i] + have, sizeof(e->all[0]) - have, "%.*s|", (int)len, line);
}

static void ev_exited(void *ctx, struct ty_replica *r, const struct ty_exit_status *st)
{
    struct rtev *e = ctx;
    e->exited[rep_index(e, r)]++;
    e->st[rep_index(e, r)] = *st;
}

static void ev_notice(void *ctx, enum ty_severity sev, const char *message)
{
    struct rtev *e = ctx;
    if (strstr(message, "runs as") || strstr(message, "look up the user")) {
        e->user_notices++;
        (void)snprintf(e->user_notice, sizeof(e->user_notice), "%s", message);
        return;
    }
    if (!strstr(message, "has no init"))
        return; /* limits capped to this host... */
    e->notices++;
    (void)snprintf(e->notice, sizeof(e->notice), "%s", message);
}

static void ev_prepared(void *ctx, int r, const char *error)
{
    struct rtev *e = ctx;
    e->prepared = true;
    e->prep_r = r;
    (void)snprintf(e->prep_error, sizeof(e->prep_error), "%s", error ? error : "");
}

static void ev_cleaned(void *ctx)
{
    struct rtev *e = ctx;
    e->cleaned = true;
}

/* A job of a master (@master image), and a worker and a parameter server when their images
 * are given. */
struct ty_job *rt_job(const char *master, const char *worker, const char *ps)
{
    json_t *ti = json_pack("{s:s,s:s,s:{s:s}}",
                           "scaleTier",
                           "CUSTOM",
                           "masterType",
                           "n1-standard-4",
                           "masterConfig",
                           "imageUri",
                           master);
    json_t *doc = json_pack("{s:s,s:o}", "jobId", "rt_job", "trainingInput", ti);
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    if (worker) {
        json_t *more = json_pack("{s:s,s:i,s:{s:s}}",
                                 "workerType",
                                 "n1-standard-4",
                                 "workerCount",
                                 1,
                                 "workerConfig",
                                 "imageUri",
                                 worker);
        json_object_update(ti, more);
        json_decref(more);
    }
    if (ps) {
        json_t *more = json_pack("{s:s,s:i,s:{s:s}}",
                                 "parameterServerType",
                                 "n1-standard-4",
                                 "parameterServerCount",
                                 1,
                                 "parameterServerConfig",
                                 "imageUri",
                                 ps);
        json_object_update(ti, more);
        json_decref(more);
    }
    if (ty_job_from_json(doc, &job, &err) < 0)
        BAIL_OUT("rt_job: %s", err.msg);
    json_decref(doc);
    return job;
}

/* A runtime on @plan, prepared and placed. */
struct ty_runtime *rt_ready(struct ty_loop *loop, struct ty_cluster_plan *plan, struct rtev *e)
{
    struct ty_runtime_events ev = {.started = ev_started,
                                   .output = ev_output,
                                   .exited = ev_exited,
                                   .notice = ev_notice,
                                   .prepared = ev_prepared,
                                   .cleaned = ev_cleaned,
                                   .ctx = e};
    struct ty_runtime *rt = NULL;
    struct ty_error err = {0};

    if (ty_runtime_new(&ty_runtime_container, loop, &ev, &rt, &err) < 0)
        BAIL_OUT("ty_runtime_new: %s", err.msg);
    e->rt = rt;
    ty_runtime_attach(rt, plan);
    if (rt->ops->prepare(rt, &err) != TY_RUNTIME_ASYNC || !run_until(loop, &e->prepared, 10000) ||
        e->prep_r < 0 || rt->ops->place(rt, &err) < 0)
        BAIL_OUT("runtime not ready: %s%s", err.msg, e->prep_error);
    return rt;
}

void rt_end(struct ty_loop *loop, struct ty_runtime *rt, struct rtev *e)
{
    if (rt->ops->cleanup(rt) == TY_RUNTIME_ASYNC)
        (void)run_until(loop, &e->cleaned, 10000);
    ty_runtime_free(rt);
}

/* Run @loop until replica @i has exited @n times. */
bool until_exited(struct ty_loop *loop, struct rtev *e, size_t i, int n)
{
    int64_t end = ty_mono_usec() + 10 * INT64_C(1000000);
    while (e->exited[i] < n && ty_mono_usec() < end)
        run_for(loop, 20);
    return e->exited[i] >= n;
}

/* The whole scratch file @name ("" when missing). Caller frees. */
char *scratch(const char *name)
{
    _cleanup_free_ char *path = xasprintf("%s/%s", dts_tmpdir, name);
    char *text = NULL;
    size_t len;
    if (ty_read_file(path, 1 << 20, &text, &len, NULL) < 0)
        return xstrdup("");
    return text;
}

/* Nothing of a replica's run is left: no request, timer or watch. */
bool run_idle(struct ctr_replica *cr)
{
    return !cr->req && !cr->wait_req && !cr->logs_req && !ty_engine_call_busy(&cr->pid_call) &&
           !ty_engine_call_busy(&cr->exit_call) && !ty_engine_call_busy(&cr->rm_call) &&
           !cr->drain_timer && cr->oom.notify_fd < 0 && cr->oom.counter_fd < 0;
}

char *const rt_env[] = {"CLUSTER_SPEC={\"master\":[\"m:2222\"]}", "TF_CONFIG={}", NULL};
