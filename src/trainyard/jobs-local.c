/* SPDX-License-Identifier: Apache-2.0
 * jobs-local.c: the runs of `trainyard local train` as Job resources for `jobs list|describe
 * --local` (jobs-local.h): each run's job.json (the REST form, written at each state change),
 * with a run whose process is gone before it recorded its end (its run.lock is no longer held:
 * killed, or the machine went down) shown as FAILED, ended when its files were last written;
 * an earlier run kept aside (<jobId>.<N>) is one too, its jobId that name. */
#include "jobs-local.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "cli.h"
#include "fdutil.h"
#include "jobfilter.h"
#include "jobstate.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "statedir.h"
#include "timeutil.h"

const char jobs_local_help[] =
    "Local runs:\n"
    "  --local                   the runs of 'trainyard local train' on this machine, read\n"
    "                            from the state directory, instead of the service's jobs\n"
    "  --state-dir=DIR           with --local: that state directory (default as local\n"
    "                            train: $TRAINYARD_HOME, else $XDG_STATE_HOME/trainyard,\n"
    "                            else ~/.local/state/trainyard)\n";

int jobs_local_opt(struct jobs_local *l, int id, const char *arg)
{
    if (id == JOBS_LOCAL_OPT) {
        l->on = true;
        return 1;
    }
    if (id == JOBS_LOCAL_OPT_STATE_DIR) {
        l->state_dir = arg;
        return 1;
    }
    return 0;
}

int jobs_local_check(const char *path, const struct jobs_local *l)
{
    struct stat st;

    if (l->state_dir && !l->on) {
        cli_error(path, "--state-dir: only with --local (the service keeps its own state)");
        return -1;
    }
    if (l->state_dir && !*l->state_dir) {
        cli_error(path, "--state-dir: the directory is empty");
        return -1;
    }
    /* A mistyped directory is not "no runs yet" (the default one may not exist yet). */
    if (l->state_dir && stat(l->state_dir, &st) < 0) {
        cli_error(path, "--state-dir: '%s': %s", l->state_dir, strerror(errno));
        return -1;
    }
    if (l->state_dir && !S_ISDIR(st.st_mode)) {
        cli_error(path, "--state-dir: '%s' is not a directory", l->state_dir);
        return -1;
    }
    return 0;
}

char *jobs_local_state(const struct jobs_local *l, struct ty_error *err)
{
    char *s = l->state_dir ? xstrdup(l->state_dir) : ty_statedir_default();
    if (!s)
        (void)ty_error_set(err, ENOENT, "no state directory: set --state-dir or TRAINYARD_HOME");
    return s;
}

/* The newest modification time (µs) of @dir/job.json and the files in @dir/logs. */
static int64_t last_written(const char *dir)
{
    _cleanup_free_ char *rec = xasprintf("%s/job.json", dir);
    _cleanup_free_ char *logs = xasprintf("%s/logs", dir);
    int64_t best = 0;
    struct stat st;
    DIR *d;
    struct dirent *de;

    if (stat(rec, &st) == 0)
        best = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
    d = opendir(logs);
    while (d && (de = readdir(d))) {
        if (fstatat(dirfd(d), de->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
            int64_t t = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
            if (t > best)
                best = t;
        }
    }
    if (d)
        closedir(d);
    return best;
}

static bool final_state(const char *s)
{
    return s &&
           (strcmp(s, "SUCCEEDED") == 0 || strcmp(s, "FAILED") == 0 || strcmp(s, "CANCELLED") == 0);
}

/* A run not in a final state whose run.lock nobody holds ended without saying so. */
static void mark_if_dead(const char *dir, json_t *job)
{
    const char *st = ty_json_str(job, "state");
    char ts[40];

    if (final_state(st) || ty_statedir_run_active(dir, NULL) != 0)
        return;
    json_object_set_new(
        job,
        "errorMessage",
        json_sprintf("The run ended without recording its end (its trainyard local train "
                     "process is gone: killed, or the machine went down); its last recorded "
                     "state was %s.",
                     st ? st : "none"));
    json_object_set_new(job, "state", json_string("FAILED"));
    (void)ty_attempt_status_settle(json_object_get(job, "attemptStatus"));
    (void)ty_training_output_settle(json_object_get(job, "trainingOutput"));
    if (!ty_json_str(job, "endTime")) {
        /* Not before the times recorded (file times are coarser than the clock). */
        int64_t end = last_written(dir), t;
        static const char *const times[] = {"createTime", "startTime"};
        for (size_t i = 0; i < TY_ARRAY_SIZE(times); i++)
            if (ty_json_str(job, times[i]) &&
                ty_rfc3339_parse(ty_json_str(job, times[i]), &t, NULL) == 0 && t > end)
                end = t;
        json_object_set_new(job, "endTime", json_string(ty_rfc3339(end, 6, ts, sizeof(ts))));
    }
}

int jobs_local_read(const char *state, const char *job_id, json_t **ret, struct ty_error *err)
{
    _cleanup_free_ char *dir = xasprintf("%s/jobs/local/%s", state, job_id);
    _cleanup_free_ char *path = xasprintf("%s/job.json", dir);
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *job = NULL;
    struct ty_error e = {0};
    size_t len = 0;
    int kept, r;

    kept = ty_statedir_run_name(job_id, &e);
    if (kept < 0)
        return ty_error_set(err, EINVAL, "%s", ty_error_msg(&e));
    r = ty_read_file(path, TY_JSON_MAX_BYTES, &text, &len, &e);
    if (r == -ENOENT)
        return ty_error_set(err,
                            ENOENT,
                            "no local run '%s' in %s/jobs/local (trainyard local train keeps its "
                            "runs there)",
                            job_id,
                            state);
    if (r >= 0)
        r = ty_json_parse(text, len, &job, &e);
    if (r >= 0 && !json_is_object(job))
        r = ty_error_set(&e, EINVAL, "not a JSON object");
    if (r < 0)
        return ty_error_set(err, -r, "%s: %s", path, ty_error_msg(&e));
    mark_if_dead(dir, job);
    if (kept) /* listed and described under the name it is kept as */
        json_object_set_new(job, "jobId", json_string(job_id));
    *ret = TAKE_PTR(job);
    return 0;
}

int jobs_local_job(const char *path, const struct jobs_local *l, const char *job_id, json_t **ret)
{
    _cleanup_free_ char *state = NULL;
    struct ty_error e = {0};

    state = jobs_local_state(l, &e);
    if (!state) {
        cli_error(path, "%s", ty_error_msg(&e));
        return TY_EXIT_USAGE;
    }
    if (jobs_local_read(state, job_id, ret, &e) < 0)
        return jobs_fail(path, &e);
    return -1;
}

/* Newest first: createTime (RFC 3339 in UTC, one width: compared as text), then jobId. */
static int newest_first(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    const char *cx = ty_json_str(x, "createTime"), *cy = ty_json_str(y, "createTime");
    int c = strcmp(cy ? cy : "", cx ? cx : "");

    return c ? c
             : strcmp(ty_json_str(x, "jobId") ? ty_json_str(x, "jobId") : "",
                      ty_json_str(y, "jobId") ? ty_json_str(y, "jobId") : "");
}

int jobs_local_list(const struct jobs_local *l,
                    const char *filter,
                    int64_t limit,
                    json_t *all,
                    struct ty_error *err)
{
    _cleanup_free_ char *state = jobs_local_state(l, err);
    _cleanup_free_ char *parent = NULL;
    struct ty_filter *f = NULL;
    json_t **v = NULL;
    size_t n = 0;
    struct dirent *de;
    DIR *d;
    int r;

    if (!state)
        return -ENOENT;
    r = ty_filter_parse(filter, &f, err);
    if (r < 0)
        return r;
    parent = xasprintf("%s/jobs/local", state);
    d = opendir(parent);
    if (!d) {
        ty_filter_free(f);
        /* No run yet: an empty list, as a project without jobs. */
        return errno == ENOENT ? 0 : ty_error_set(err, errno, "%s: %s", parent, strerror(errno));
    }
    while ((de = readdir(d))) {
        json_t *job = NULL;
        struct ty_error e = {0};
        /* Runs and runs kept aside (<id>.<N>); nothing else (".", ".."). */
        if (ty_statedir_run_name(de->d_name, NULL) < 0)
            continue;
        if (jobs_local_read(state, de->d_name, &job, &e) < 0) {
            if (e.code != ENOENT) /* ENOENT: a run being claimed, not recorded yet */
                cli_warning("skipping local run %s: %s", de->d_name, ty_error_msg(&e));
            continue;
        }
        if (!ty_filter_match(f, job)) {
            json_decref(job);
            if (ty_filter_spent(f, NULL) < 0)
                break;
            continue;
        }
        v = xreallocarray(v, n + 1, sizeof(*v));
        v[n++] = job;
    }
    closedir(d);
    r = ty_filter_spent(f, err);
    ty_filter_free(f);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            json_decref(v[i]);
        free(v);
        return r;
    }
    if (n)
        qsort(v, n, sizeof(*v), newest_first);
    for (size_t i = 0; i < n; i++) {
        if (limit <= 0 || (int64_t)i < limit)
            json_array_append(all, v[i]);
        json_decref(v[i]);
    }
    free(v);
    return 0;
}
