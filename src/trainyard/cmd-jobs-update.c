/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-update.c: `trainyard jobs update JOB`: changes a job's labels with a
 * read-compute-write round (GET, then PATCH ?updateMask=labels with the job's etag), retried
 * when someone else changed the job meanwhile. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "cli.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "strv.h"

#define PATH "jobs.update"

enum { O_FORMAT = 1, O_UPDATE, O_REMOVE, O_CLEAR };
/* Re-reads after an etag mismatch (409 ABORTED) before giving up. */
#define UPDATE_RETRIES 3

static const struct option update_options[] = {
    {"update-labels", required_argument, NULL, O_UPDATE},
    {"remove-labels", required_argument, NULL, O_REMOVE},
    {"clear-labels", no_argument, NULL, O_CLEAR},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char update_usage[] =
    "Usage: trainyard jobs update JOB [flags]\n"
    "\n"
    "Change a job's labels (the only field that can change). The job is read, the labels\n"
    "computed (--clear-labels, then --update-labels, then --remove-labels, as gcloud) and\n"
    "written back with the job's etag; when someone else changed them meanwhile (409\n"
    "ABORTED) this is retried up to 3 times. Prints 'Updated job [JOB].' on stderr, or 'No\n"
    "update to perform.' when the labels would not change. Exit 0, 1 when the request\n"
    "fails, 2 for usage errors.\n"
    "\n"
    "Flags (at least one of the first three):\n"
    "  --update-labels=KEY=VALUE[,...]   add or change labels; repeatable\n"
    "  --remove-labels=KEY[,...]         remove labels (absent ones are ignored); repeatable\n"
    "  --clear-labels                    remove every label (not with --remove-labels); the\n"
    "                                    service keeps those it read when the job was created\n"
    "                                    (trainyard-runtime, trainyard-pytorch-env, ...)\n"
    "  --format=FORMAT                   also print the updated job in this format (json,\n"
    "                                    yaml, value(KEY,...), ...: docs/cli.md)\n"
    "\n";

struct update_args {
    json_t *updates; /* object */
    char **removes;
    bool clear;
    struct ty_format *format; /* NULL: print nothing */
};

static int update_opt(void *ctx, int id, const char *arg)
{
    struct update_args *a = ctx;
    _cleanup_free_ char *copy = NULL;
    struct ty_error e = {0};
    char *save = NULL;

    switch (id) {
    case O_UPDATE:
        copy = xstrdup(arg);
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(item, '=');
            if (!eq) {
                cli_error(PATH, "--update-labels: '%s' is not KEY=VALUE", item);
                return -1;
            }
            *eq = '\0';
            if (ty_validate_label("--update-labels", item, eq + 1, &e) < 0) {
                cli_error(PATH, "%s", ty_error_msg(&e));
                return -1;
            }
            json_object_set_new(a->updates, item, json_string(eq + 1));
        }
        if (json_object_size(a->updates) == 0) {
            cli_error(PATH, "--update-labels: expected KEY=VALUE[,...]");
            return -1;
        }
        return 0;
    case O_REMOVE:
        copy = xstrdup(arg);
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
            ty_strv_push(&a->removes, item);
        if (!a->removes) {
            cli_error(PATH, "--remove-labels: expected KEY[,...]");
            return -1;
        }
        return 0;
    case O_CLEAR:
        a->clear = true;
        return 0;
    case O_FORMAT:
        return jobs_format_opt(PATH, arg, &a->format);
    }
    return -1;
}

/* One read-compute-write round. Returns 1 when there was nothing to change, 0 when done,
 * -ESTALE when the etag no longer matched, other -errno. */
static int update_once(struct api_client *c,
                       const char *job_id,
                       const struct update_args *a,
                       json_t **ret,
                       struct ty_error *err)
{
    _cleanup_free_ char *path = api_jobs_path(c, job_id, NULL);
    _cleanup_free_ char *patch = NULL;
    _cleanup_json_ json_t *job = NULL;
    _cleanup_json_ json_t *labels = NULL;
    _cleanup_json_ json_t *body = NULL;
    json_t *old;
    const char *etag;
    int r;

    r = api_call(c, "GET", path, NULL, &job, err);
    if (r < 0)
        return r;
    old = json_object_get(job, "labels");
    if (!json_is_object(old))
        old = NULL;
    labels = a->clear || !old ? json_object() : json_deep_copy(old);
    /* gcloud's order (labels_util): clear, then update, then remove */
    json_object_update(labels, a->updates);
    for (size_t i = 0; a->removes && a->removes[i]; i++)
        json_object_del(labels, a->removes[i]);
    if (old ? json_equal(labels, old) : json_object_size(labels) == 0)
        return 1;
    if (json_object_size(labels) > TY_MAX_LABELS)
        return ty_error_set(err,
                            EINVAL,
                            "a job can have at most %d labels (this update would make %zu)",
                            TY_MAX_LABELS,
                            json_object_size(labels));
    body = json_object();
    json_object_set(body, "labels", labels);
    etag = ty_json_str(job, "etag");
    if (etag)
        json_object_set_new(body, "etag", json_string(etag));
    patch = api_jobs_path(c, job_id, "?updateMask=labels");
    r = api_call(c, "PATCH", patch, body, ret, err);
    return r < 0 ? r : 0;
}

static int update(int argc, char **argv)
{
    static const char *const help[] = {update_usage, jobs_global_help, NULL};
    struct update_args a = {.updates = json_object()};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *job = NULL;
    struct api_client *c = NULL;
    struct ty_error e = {0};
    const char *job_id;
    int first, rc, r;

    rc = jobs_parse_args(PATH, argc, argv, update_options, help, &settings, update_opt, &a, &first);
    if (rc >= 0)
        goto out;
    rc = TY_EXIT_USAGE;
    if (a.clear && a.removes) {
        cli_error(PATH, "--clear-labels and --remove-labels cannot be used together");
        goto out;
    }
    if (!a.clear && !a.removes && json_object_size(a.updates) == 0) {
        cli_error(PATH,
                  "nothing to update: give --update-labels, --remove-labels or --clear-labels");
        goto out;
    }
    job_id = jobs_job_arg(PATH, argc, argv, first);
    if (!job_id)
        goto out;
    c = jobs_client(PATH, &settings);
    if (!c)
        goto out;
    for (int attempt = 0;; attempt++) {
        r = update_once(c, job_id, &a, &job, &e);
        if (r != -ESTALE || attempt >= UPDATE_RETRIES)
            break;
    }
    if (r < 0) {
        rc = jobs_fail(PATH, &e);
    } else if (r == 1) {
        fprintf(stderr, "No update to perform.\n");
        rc = TY_EXIT_OK;
    } else {
        if (a.format && jobs_print_job(PATH, job, a.format, NULL) < 0) {
            rc = TY_EXIT_USAGE;
            goto out;
        }
        fflush(stdout);
        fprintf(stderr, "Updated job [%s].\n", job_id);
        rc = TY_EXIT_OK;
    }
out:
    api_client_free(c);
    json_decref(a.updates);
    ty_strv_free(a.removes);
    ty_format_free(a.format);
    return rc;
}

const struct cli_command cmd_jobs_update = {
    .path = "jobs update",
    .summary = "change a job's labels",
    .run = update,
};
