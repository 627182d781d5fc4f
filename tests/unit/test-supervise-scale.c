/* SPDX-License-Identifier: Apache-2.0
 * test-supervise-scale.c: the supervisor with many replicas (real local processes). Replicas
 * are launched in batches of TY_LAUNCH_BATCH with the loop running in between, the master
 * last: a 1 + 99 job of `true` launches every worker before its master and succeeds; a cancel
 * that arrives while a 1 + 99 job of `sleep` is still starting is acted on at the next batch:
 * the rest are never launched, the run ends CANCELLED, and nothing it started is left. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "process.h"
#include "spec.h"
#include "supervise-int.h"
#include "supervise.h"
#include "tap.h"
#include "timeutil.h"

#define WORKERS 99

/* A CUSTOM job of a master and WORKERS workers, all running `sh -c SCRIPT`. */
static struct ty_job *make_job(const char *id, const char *script)
{
    json_t *doc = json_pack("{s:s,s:{s:s,s:s,s:s,s:i,s:{s:s,s:[s,s,s]}}}",
                            "jobId",
                            id,
                            "trainingInput",
                            "scaleTier",
                            "CUSTOM",
                            "masterType",
                            "n1-standard-4",
                            "workerType",
                            "n1-standard-4",
                            "workerCount",
                            WORKERS,
                            "masterConfig",
                            "imageUri",
                            "img",
                            "containerCommand",
                            "sh",
                            "-c",
                            script);
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    if (ty_job_from_json(doc, &job, &err) < 0)
        diag("job: %s", err.msg);
    json_decref(doc);
    return job;
}

/* How many replicas of the attempt status @st are in @state. */
static size_t count_state(json_t *st, const char *state)
{
    json_t *reps = json_object_get(st, "replicas"), *r;
    size_t i, n = 0;

    json_array_foreach(reps, i, r)
    {
        n += strcmp(ty_json_str(r, "state"), state) == 0;
    }
    return n;
}

/* The state of the replica named @task in @st, or "". */
static const char *state_of(json_t *st, const char *task)
{
    json_t *reps = json_object_get(st, "replicas"), *r;
    size_t i;

    json_array_foreach(reps, i, r)
    {
        if (strcmp(ty_json_str(r, "taskName"), task) == 0)
            return ty_json_str(r, "state");
    }
    return "";
}

/* Processes whose command line holds @marker. */
static int count_marked(const char *marker)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int n = 0;

    while (d && (de = readdir(d))) {
        char path[300], buf[4096];
        ssize_t len;
        int fd;
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        (void)snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        for (ssize_t i = 0; i < len; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[len > 0 ? len : 0] = '\0';
        n += strstr(buf, marker) != NULL;
    }
    if (d)
        closedir(d);
    return n;
}

static void on_cancel_timer(struct ty_loop *loop, void *data)
{
    ty_supervisor_cancel(data);
}

/* Run @job to its end; with @cancel, cancel it from the loop right after the first batch. */
static json_t *run(struct ty_job *job, bool cancel, enum ty_job_state *state)
{
    struct ty_loop *loop = ty_loop_new();
    struct ty_supervisor *sup = NULL;
    struct ty_supervisor_options opts = {.grace_usec = 2000000};
    struct ty_error err = {0};
    int64_t t0 = ty_mono_usec();
    json_t *st = NULL;

    *state = TY_STATE_UNSPECIFIED;
    if (ty_supervisor_new(loop, &ty_runtime_process, job, NULL, NULL, &opts, &sup, &err) < 0 ||
        ty_supervisor_start(sup, &err) < 0) {
        diag("supervisor: %s", err.msg);
        goto out;
    }
    if (cancel)
        (void)ty_loop_add_timer(loop, ty_mono_usec(), on_cancel_timer, sup);
    while (!ty_supervisor_done(sup) && ty_mono_usec() - t0 < 120 * INT64_C(1000000))
        if (ty_loop_run_once(loop) < 0)
            break;
    *state = ty_supervisor_state(sup);
    st = ty_supervisor_attempt_status(sup, true);
out:
    ty_supervisor_free(sup);
    ty_loop_free(loop);
    return st ? st : json_object();
}

static void test_all_launched(void)
{
    struct ty_job *job = make_job("scale_true", "true");
    enum ty_job_state state;
    json_t *st;

    if (!ok(job != NULL, "true: job"))
        return;
    st = run(job, false, &state);
    is_str(ty_job_state_name(state), "SUCCEEDED", "true: 1 + %d replicas succeed", WORKERS);
    is_int(count_state(st, "PENDING"), 0, "true: every replica was launched, the master last");
    is_int(count_state(st, "SUCCEEDED") + count_state(st, "STOPPED"),
           WORKERS + 1,
           "true: every replica ended");
    json_decref(st);
    ty_job_free(job);
}

static void test_cancel_while_starting(void)
{
    char marker[64], script[128];
    struct ty_job *job;
    enum ty_job_state state;
    size_t pending, stopped;
    json_t *st;

    (void)snprintf(marker, sizeof(marker), "30.%d%d", (int)getpid(), 7);
    (void)snprintf(script, sizeof(script), "exec sleep %s", marker);
    job = make_job("scale_cancel", script);
    if (!ok(job != NULL, "cancel: job"))
        return;
    st = run(job, true, &state);
    pending = count_state(st, "PENDING");
    stopped = count_state(st, "STOPPED");
    is_str(ty_job_state_name(state), "CANCELLED", "cancel: the run ends CANCELLED");
    ok(pending > 0 && pending <= WORKERS + 1 - TY_LAUNCH_BATCH,
       "cancel: replicas not yet launched stay so (%zu pending)",
       pending);
    ok(stopped >= TY_LAUNCH_BATCH && stopped + pending == WORKERS + 1,
       "cancel: those launched were stopped (%zu)",
       stopped);
    is_str(state_of(st, "master-replica-0"), "PENDING", "cancel: the master, last, never started");
    is_int(count_marked(marker), 0, "cancel: nothing the run started is left");
    json_decref(st);
    ty_job_free(job);
}

int main(void)
{
    test_all_launched();
    test_cancel_while_starting();
    return done_testing();
}
