/* SPDX-License-Identifier: Apache-2.0
 * supervise-check.h: what the supervisor's tests share (test-supervise.c,
 * test-supervise-cleanup.c): a capture of a run's log lines and states, jobs of `sh -c`
 * replicas, running one to its end on the process runtime, and counting processes.
 * Header-only, as tap.h is (its counters are per test program). */
#ifndef TY_TEST_SUPERVISE_CHECK_H
#define TY_TEST_SUPERVISE_CHECK_H

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "process.h"
#include "runtime.h"
#include "spec.h"
#include "supervise.h"
#include "tap.h"
#include "timeutil.h"

struct capture {
    struct ty_buf lines; /* "task|SEVERITY|message\n" */
    int states[16];
    int n_states;
};

static inline void cap_log(void *ctx, const struct ty_log_record *rec)
{
    struct capture *c = ctx;
    ty_buf_printf(&c->lines,
                  "%s|%s|%.*s\n",
                  rec->task,
                  ty_severity_name(rec->severity),
                  (int)rec->len,
                  rec->message);
}

static inline void cap_state(void *ctx, enum ty_job_state s)
{
    struct capture *c = ctx;
    if (c->n_states < 16)
        c->states[c->n_states++] = (int)s;
}

static inline json_t *role_config(const char *script)
{
    return json_pack("{s:s,s:[s,s,s]}", "imageUri", "img", "containerCommand", "sh", "-c", script);
}

/* Build a job: the master runs `sh -c MASTER_SH`; @workers workers run WORKER_SH; one ps runs
 * PS_SH when non-NULL; @extra (JSON object text or NULL) is merged into the TrainingInput. */
static inline struct ty_job *make_job(const char *id,
                                      const char *master_sh,
                                      int workers,
                                      const char *worker_sh,
                                      const char *ps_sh,
                                      const char *extra)
{
    json_t *ti = json_pack("{s:s,s:s,s:o}",
                           "scaleTier",
                           "CUSTOM",
                           "masterType",
                           "n1-standard-4",
                           "masterConfig",
                           role_config(master_sh));
    json_t *doc = json_pack("{s:s,s:o}", "jobId", id, "trainingInput", ti);
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    if (workers) {
        json_object_set_new(ti, "workerType", json_string("n1-standard-4"));
        json_object_set_new(ti, "workerCount", json_integer(workers));
        json_object_set_new(ti, "workerConfig", role_config(worker_sh));
    }
    if (ps_sh) {
        json_object_set_new(ti, "parameterServerType", json_string("n1-standard-4"));
        json_object_set_new(ti, "parameterServerCount", json_integer(1));
        json_object_set_new(ti, "parameterServerConfig", role_config(ps_sh));
    }
    if (extra) {
        json_t *e = json_loads(extra, 0, NULL);
        json_object_update(ti, e);
        json_decref(e);
    }
    if (ty_job_from_json(doc, &job, &err) < 0)
        diag("make_job: %s", err.msg);
    json_decref(doc);
    return job;
}

static inline void tick(struct ty_loop *loop, void *data)
{
}

/* running_since_usec of the runs of run() (0: a job that never ran before). */
static int64_t g_running_since;

static inline enum ty_job_state run(struct ty_job *job,
                                    struct capture *cap,
                                    double grace,
                                    double cancel_after,
                                    char *errbuf,
                                    size_t n)
{
    struct ty_loop *loop = ty_loop_new();
    struct ty_supervisor *sup = NULL;
    struct ty_supervisor_options opts = {
        .grace_usec = (int64_t)(grace * 1e6),
        .on_log = cap_log,
        .on_state = cap_state,
        .running_since_usec = g_running_since,
        .ctx = cap,
    };
    struct ty_error err = {0};
    enum ty_job_state st;
    int64_t t0 = ty_mono_usec();
    bool cancelled = false;

    if (ty_supervisor_new(loop, &ty_runtime_process, job, NULL, NULL, &opts, &sup, &err) < 0 ||
        ty_supervisor_start(sup, &err) < 0) {
        diag("supervisor: %s", err.msg);
        ty_supervisor_free(sup);
        ty_loop_free(loop);
        return TY_STATE_UNSPECIFIED;
    }
    while (!ty_supervisor_done(sup)) {
        if (cancel_after > 0 && !cancelled && ty_mono_usec() - t0 > (int64_t)(cancel_after * 1e6)) {
            ty_supervisor_cancel(sup);
            cancelled = true;
        }
        if (ty_mono_usec() - t0 > 60 * INT64_C(1000000)) {
            diag("run: timed out");
            break;
        }
        /* A short timer keeps the loop turning so the cancel check above runs. */
        ty_loop_add_timer(loop, ty_mono_usec() + 20000, tick, NULL);
        ty_loop_run_once(loop);
    }
    st = ty_supervisor_state(sup);
    snprintf(errbuf, n, "%s", ty_supervisor_error(sup));
    ty_supervisor_free(sup);
    ty_loop_free(loop);
    return st;
}

/* Processes whose command line holds @marker (ps), -1 when ps fails. */
static inline int count_procs_with(const char *marker)
{
    char cmd[256];
    FILE *f;
    int n = 0;
    snprintf(cmd, sizeof(cmd), "ps -eo args= | grep -F -- '%s' | grep -vc grep", marker);
    f = popen(cmd, "r");
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

#endif
