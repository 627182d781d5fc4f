/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs.c: the remote verbs `trainyard jobs describe | list | cancel | update`, each one
 * or a few calls of trainyardd's ml v1 projects.jobs API, printed as gcloud prints them.
 * (`jobs submit training` is in cmd-jobs-submit.c, `jobs stream-logs` in cmd-jobs-logs.c.) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "spec.h"
#include "strv.h"
#include "yaml-emit.h"

/* ---- describe ------------------------------------------------------------------------------- */

#define DESCRIBE_PATH "jobs.describe"

enum { O_SUMMARIZE = 1, O_FORMAT, O_FILTER, O_LIMIT, O_PAGE_SIZE, O_UPDATE, O_REMOVE, O_CLEAR };

static const struct option describe_options[] = {
    {"summarize", no_argument, NULL, O_SUMMARIZE},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char describe_usage[] =
    "Usage: trainyard jobs describe JOB [flags]\n"
    "\n"
    "Print a job: the whole Job resource (YAML by default), or with --summarize its overview,\n"
    "training input and training output as tables. Exit 0, 1 when the job cannot be read\n"
    "(e.g. NOT_FOUND), 2 for usage errors.\n"
    "\n"
    "Flags:\n"
    "  --summarize               boxed tables instead of the resource\n"
    "  --format=FORMAT           yaml (the default) or json\n"
    "\n";

struct describe_args {
    bool summarize;
    bool format_set;
    enum jobs_format format;
};

static int describe_opt(void *ctx, int id, const char *arg)
{
    struct describe_args *a = ctx;
    if (id == O_SUMMARIZE) {
        a->summarize = true;
        return 0;
    }
    a->format_set = true;
    return jobs_parse_format(DESCRIBE_PATH, arg, &a->format);
}

/* A table cell for a JSON value: strings as they are, numbers as YAML prints them. */
static char *cell_text(const json_t *v)
{
    if (!v || json_is_null(v))
        return xstrdup("");
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    if (json_is_object(v) || json_is_array(v))
        return ty_json_compact(v);
    char *s = ty_yaml_dump(v);
    s[strcspn(s, "\n")] = '\0';
    return s;
}

/* Value at a dotted @path in @obj, or NULL. */
static const json_t *dig(const json_t *obj, const char *path)
{
    _cleanup_free_ char *copy = xstrdup(path);
    char *save = NULL;
    for (char *k = strtok_r(copy, ".", &save); k && obj; k = strtok_r(NULL, ".", &save))
        obj = json_object_get(obj, k);
    return obj;
}

struct column {
    const char *label;
    const char *field; /* dotted path */
    bool optional;     /* dropped when empty in every row */
};

/* One boxed table of @cols over @rows (each a JSON object). */
static void summary_table(const char *title, const struct column *cols, size_t ncols, json_t *rows)
{
    const char **cells = xcalloc(ncols, sizeof(*cells));
    bool *optional = xcalloc(ncols, sizeof(*optional));
    struct jobs_table *t;
    size_t i;
    json_t *row;

    for (size_t c = 0; c < ncols; c++) {
        cells[c] = cols[c].label;
        optional[c] = cols[c].optional;
    }
    t = jobs_table_new(ncols, cells);
    json_array_foreach(rows, i, row)
    {
        char **owned = xcalloc(ncols, sizeof(*owned));
        for (size_t c = 0; c < ncols; c++) {
            if (strcmp(cols[c].field, "hyperparameters") == 0) {
                /* "name=value, ..." in key order */
                json_t *hp = json_object_get(row, "hyperparameters");
                _cleanup_free_ char *text = NULL;
                struct ty_buf b = TY_BUF_INIT;
                const char **keys = xcalloc(json_object_size(hp) + 1, sizeof(*keys));
                size_t n = 0;
                const char *k;
                json_t *v;
                json_object_foreach(hp, k, v)
                {
                    keys[n++] = k;
                }
                for (size_t x = 1; x < n; x++) /* insertion sort: a handful of keys */
                    for (size_t y = x; y > 0 && strcmp(keys[y - 1], keys[y]) > 0; y--) {
                        const char *tmp = keys[y];
                        keys[y] = keys[y - 1];
                        keys[y - 1] = tmp;
                    }
                for (size_t x = 0; x < n; x++) {
                    text = cell_text(json_object_get(hp, keys[x]));
                    ty_buf_printf(&b, "%s%s=%s", x ? ", " : "", keys[x], text);
                    free(TAKE_PTR(text));
                }
                free(keys);
                owned[c] = ty_buf_take(&b);
            } else {
                owned[c] = cell_text(dig(row, cols[c].field));
            }
        }
        jobs_table_add(t, (const char *const *)owned);
        for (size_t c = 0; c < ncols; c++)
            free(owned[c]);
        free(owned);
    }
    jobs_table_drop_empty(t, optional);
    jobs_table_print(t, stdout, true, title);
    jobs_table_free(t);
    free(cells);
    free(optional);
}

static void print_summary(json_t *job)
{
    static const struct column overview[] = {
        {"JOB_ID", "jobId", false},
        {"CREATE_TIME", "createTime", false},
        {"START_TIME", "startTime", false},
        {"END_TIME", "endTime", false},
        {"STATE", "state", false},
        {"ERROR_MESSAGE", "errorMessage", true},
    };
    static const struct column input[] = {
        {"RUNTIME_VERSION", "runtimeVersion", true},
        {"REGION", "region", false},
        {"SCALE_TIER", "scaleTier", false},
        {"PYTHON_MODULE", "pythonModule", true},
        {"PARAMETER_SERVER_TYPE", "parameterServerType", true},
        {"PARAMETER_SERVER_COUNT", "parameterServerCount", true},
        {"MASTER_TYPE", "masterType", true},
        {"WORKER_TYPE", "workerType", true},
        {"WORKER_COUNT", "workerCount", true},
        {"EVALUATOR_TYPE", "evaluatorType", true},
        {"EVALUATOR_COUNT", "evaluatorCount", true},
        {"JOB_DIR", "jobDir", true},
    };
    static const struct column output[] = {
        {"TRIALS", "completedTrialCount", false},
        {"ML_UNITS", "consumedMLUnits", false},
    };
    static const struct column trials[] = {
        {"TRIAL", "trialId", false},
        {"STATE", "state", true},
        {"OBJECTIVE_VALUE", "finalMetric.objectiveValue", false},
        {"STEP", "finalMetric.trainingStep", false},
        {"HYPERPARAMETERS", "hyperparameters", false},
    };
    json_t *ti = json_object_get(job, "trainingInput");
    json_t *to = json_object_get(job, "trainingOutput");
    json_t *tr = json_object_get(to, "trials");
    _cleanup_json_ json_t *rows = json_array();

    json_array_append(rows, job);
    summary_table("Job Overview", overview, TY_ARRAY_SIZE(overview), rows);
    json_array_clear(rows);
    json_array_append_new(rows, json_is_object(ti) ? json_incref(ti) : json_object());
    summary_table("Training Input Summary", input, TY_ARRAY_SIZE(input), rows);
    if (json_object_get(to, "completedTrialCount") || json_object_get(to, "consumedMLUnits")) {
        json_array_clear(rows);
        json_array_append(rows, to);
        summary_table("Training Output Summary", output, TY_ARRAY_SIZE(output), rows);
    }
    if (json_array_size(tr) > 0)
        summary_table("Training Output Trials", trials, TY_ARRAY_SIZE(trials), tr);
}

static int describe(int argc, char **argv)
{
    static const char *const help[] = {describe_usage, jobs_global_help, NULL};
    struct describe_args a = {.format = JOBS_FORMAT_YAML};
    struct api_settings settings = {0};
    _cleanup_free_ char *path = NULL;
    _cleanup_json_ json_t *job = NULL;
    struct api_client *c;
    struct ty_error e = {0};
    const char *job_id;
    int first, rc, r;

    rc = jobs_parse_args(
        DESCRIBE_PATH, argc, argv, describe_options, help, &settings, describe_opt, &a, &first);
    if (rc >= 0)
        return rc;
    if (a.summarize && a.format_set) {
        cli_error(DESCRIBE_PATH, "--summarize and --format cannot be used together");
        return TY_EXIT_USAGE;
    }
    job_id = jobs_job_arg(DESCRIBE_PATH, argc, argv, first);
    if (!job_id)
        return TY_EXIT_USAGE;
    c = jobs_client(DESCRIBE_PATH, &settings);
    if (!c)
        return TY_EXIT_USAGE;
    path = api_jobs_path(c, job_id, NULL);
    r = api_call(c, "GET", path, NULL, &job, &e);
    api_client_free(c);
    if (r < 0)
        return jobs_fail(DESCRIBE_PATH, &e);
    if (a.summarize)
        print_summary(job);
    else
        jobs_print_resource(job, a.format);
    fflush(stdout);
    fprintf(stderr, "\nView logs with:\n  $ trainyard jobs stream-logs %s\n", job_id);
    return TY_EXIT_OK;
}

const struct cli_command cmd_jobs_describe = {
    .path = "jobs describe",
    .summary = "print a job",
    .run = describe,
};

/* ---- list ----------------------------------------------------------------------------------- */

#define LIST_PATH     "jobs.list"
#define LIST_MAX_PAGE 100

static const struct option list_options[] = {
    {"filter", required_argument, NULL, O_FILTER},
    {"limit", required_argument, NULL, O_LIMIT},
    {"page-size", required_argument, NULL, O_PAGE_SIZE},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char list_usage[] =
    "Usage: trainyard jobs list [flags]\n"
    "\n"
    "List the project's jobs, newest first, as a table JOB_ID, STATUS, CREATED (local time),\n"
    "following the pages until --limit jobs were listed or there are no more. With no jobs,\n"
    "'Listed 0 items.' goes to stderr. Exit 0, 1 when the list cannot be read, 2 for usage\n"
    "errors.\n"
    "\n"
    "Flags:\n"
    "  --filter=EXPRESSION       evaluated by the server, e.g. 'jobId:census* AND "
    "state:FAILED'\n"
    "  --limit=N                 list at most N jobs (or 'unlimited', the default)\n"
    "  --page-size=N             jobs per request, 1 to 100 (default 100)\n"
    "  --format=FORMAT           json (an array) or yaml (documents separated by ---)\n"
    "                            instead of the table\n"
    "\n";

struct list_args {
    const char *filter;
    int64_t limit; /* 0: unlimited */
    int64_t page_size;
    enum jobs_format format;
};

static int list_opt(void *ctx, int id, const char *arg)
{
    struct list_args *a = ctx;

    switch (id) {
    case O_FILTER:
        a->filter = arg;
        return 0;
    case O_LIMIT:
        if (strcmp(arg, "unlimited") == 0) {
            a->limit = 0;
            return 0;
        }
        if (ty_parse_int64(arg, 1, INT64_MAX, &a->limit) < 0) {
            cli_error(
                LIST_PATH, "--limit: expected a positive number or unlimited (got '%s')", arg);
            return -1;
        }
        return 0;
    case O_PAGE_SIZE:
        if (ty_parse_int64(arg, 1, LIST_MAX_PAGE, &a->page_size) < 0) {
            cli_error(LIST_PATH,
                      "--page-size: expected a number from 1 to %d (got '%s')",
                      LIST_MAX_PAGE,
                      arg);
            return -1;
        }
        return 0;
    case O_FORMAT:
        return jobs_parse_format(LIST_PATH, arg, &a->format);
    }
    return -1;
}

static void print_list(json_t *jobs, enum jobs_format fmt)
{
    static const char *const headers[] = {"JOB_ID", "STATUS", "CREATED"};
    struct jobs_table *t;
    size_t i;
    json_t *job;

    if (fmt == JOBS_FORMAT_JSON) {
        jobs_print_resource(jobs, fmt);
        return;
    }
    if (fmt == JOBS_FORMAT_YAML) {
        json_array_foreach(jobs, i, job)
        {
            if (i > 0)
                fputs("---\n", stdout);
            jobs_print_resource(job, fmt);
        }
        return;
    }
    t = jobs_table_new(3, headers);
    json_array_foreach(jobs, i, job)
    {
        char created[64];
        const char *row[3] = {
            ty_json_str(job, "jobId"),
            ty_json_str(job, "state"),
            ty_json_str(job, "createTime")
                ? jobs_local_time(
                      ty_json_str(job, "createTime"), JOBS_TIME_ISO, created, sizeof(created))
                : NULL,
        };
        jobs_table_add(t, row);
    }
    if (json_array_size(jobs) > 0)
        jobs_table_print(t, stdout, false, NULL);
    jobs_table_free(t);
}

static int list(int argc, char **argv)
{
    static const char *const help[] = {list_usage, jobs_global_help, NULL};
    struct list_args a = {.format = JOBS_FORMAT_DEFAULT};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *all = json_array();
    _cleanup_free_ char *base = NULL;
    _cleanup_free_ char *token = NULL;
    struct api_client *c;
    struct ty_error e = {0};
    int first, rc, r = 0;

    rc =
        jobs_parse_args(LIST_PATH, argc, argv, list_options, help, &settings, list_opt, &a, &first);
    if (rc >= 0)
        return rc;
    if (argc > first) {
        cli_error(LIST_PATH, "unexpected argument '%s'", argv[first]);
        return TY_EXIT_USAGE;
    }
    c = jobs_client(LIST_PATH, &settings);
    if (!c)
        return TY_EXIT_USAGE;
    base = api_jobs_path(c, NULL, NULL);
    for (;;) {
        _cleanup_json_ json_t *page = NULL;
        struct ty_buf q = TY_BUF_INIT;
        int64_t want = a.page_size ? a.page_size : LIST_MAX_PAGE;
        char size[24];
        const char *next;
        json_t *jobs, *job;
        size_t i;

        if (a.limit > 0 && a.limit - (int64_t)json_array_size(all) < want)
            want = a.limit - (int64_t)json_array_size(all);
        snprintf(size, sizeof(size), "%lld", (long long)want);
        ty_buf_puts(&q, base);
        if (a.filter && *a.filter)
            api_query_add(&q, "filter", a.filter);
        api_query_add(&q, "pageSize", size);
        api_query_add(&q, "pageToken", token);
        r = api_call(c, "GET", ty_buf_str(&q), NULL, &page, &e);
        ty_buf_release(&q);
        if (r < 0)
            break;
        jobs = json_object_get(page, "jobs");
        json_array_foreach(jobs, i, job)
        {
            if (a.limit > 0 && (int64_t)json_array_size(all) >= a.limit)
                break;
            json_array_append(all, job);
        }
        next = ty_json_str(page, "nextPageToken");
        if (!next || !*next || (a.limit > 0 && (int64_t)json_array_size(all) >= a.limit))
            break;
        if (token && strcmp(token, next) == 0) {
            r = ty_error_set(&e, EPROTO, "the server returned the same page token twice");
            break;
        }
        ty_replace_str(&token, next);
    }
    api_client_free(c);
    if (r < 0)
        return jobs_fail(LIST_PATH, &e);
    print_list(all, a.format);
    fflush(stdout);
    if (json_array_size(all) == 0)
        fprintf(stderr, "Listed 0 items.\n");
    return TY_EXIT_OK;
}

const struct cli_command cmd_jobs_list = {
    .path = "jobs list",
    .summary = "list jobs, newest first",
    .run = list,
};

/* ---- cancel --------------------------------------------------------------------------------- */

#define CANCEL_PATH "jobs.cancel"

static const struct option cancel_options[] = {
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char cancel_usage[] =
    "Usage: trainyard jobs cancel JOB [flags]\n"
    "\n"
    "Cancel a job: a queued one ends CANCELLED at once, a running one is stopped (its replicas\n"
    "get SIGTERM, then SIGKILL after the grace period). A job that has already ended stays as\n"
    "it is, and the command still succeeds. Prints 'Cancelled job [JOB].' on stderr. Exit 0,\n"
    "1 when the request fails (e.g. NOT_FOUND), 2 for usage errors.\n"
    "\n";

static int cancel(int argc, char **argv)
{
    static const char *const help[] = {cancel_usage, jobs_global_help, NULL};
    struct api_settings settings = {0};
    _cleanup_free_ char *path = NULL;
    _cleanup_json_ json_t *reply = NULL;
    _cleanup_json_ json_t *body = json_object();
    struct api_client *c;
    struct ty_error e = {0};
    const char *job_id;
    int first, rc, r;

    rc = jobs_parse_args(
        CANCEL_PATH, argc, argv, cancel_options, help, &settings, NULL, NULL, &first);
    if (rc >= 0)
        return rc;
    job_id = jobs_job_arg(CANCEL_PATH, argc, argv, first);
    if (!job_id)
        return TY_EXIT_USAGE;
    c = jobs_client(CANCEL_PATH, &settings);
    if (!c)
        return TY_EXIT_USAGE;
    path = api_jobs_path(c, job_id, ":cancel");
    r = api_call(c, "POST", path, body, &reply, &e);
    api_client_free(c);
    if (r < 0)
        return jobs_fail(CANCEL_PATH, &e);
    fprintf(stderr, "Cancelled job [%s].\n", job_id);
    return TY_EXIT_OK;
}

const struct cli_command cmd_jobs_cancel = {
    .path = "jobs cancel",
    .summary = "cancel a job",
    .run = cancel,
};

/* ---- update --------------------------------------------------------------------------------- */

#define UPDATE_PATH "jobs.update"
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
    "computed (--clear-labels, then --remove-labels, then --update-labels) and written back\n"
    "with the job's etag; when someone else changed them meanwhile (409 ABORTED) this is\n"
    "retried up to 3 times. Prints 'Updated job [JOB].' on stderr, or 'No update to\n"
    "perform.' when the labels would not change. Exit 0, 1 when the request fails, 2 for\n"
    "usage errors.\n"
    "\n"
    "Flags (at least one of the first three):\n"
    "  --update-labels=KEY=VALUE[,...]   add or change labels; repeatable\n"
    "  --remove-labels=KEY[,...]         remove labels (absent ones are ignored); repeatable\n"
    "  --clear-labels                    remove every label (not with --remove-labels)\n"
    "  --format=FORMAT                   also print the updated job: json or yaml\n"
    "\n";

struct update_args {
    json_t *updates; /* object */
    char **removes;
    bool clear;
    bool print;
    enum jobs_format format;
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
                cli_error(UPDATE_PATH, "--update-labels: '%s' is not KEY=VALUE", item);
                return -1;
            }
            *eq = '\0';
            if (ty_validate_label(item, eq + 1, &e) < 0) {
                cli_error(UPDATE_PATH, "--update-labels: %s", ty_error_msg(&e));
                return -1;
            }
            json_object_set_new(a->updates, item, json_string(eq + 1));
        }
        if (json_object_size(a->updates) == 0) {
            cli_error(UPDATE_PATH, "--update-labels: expected KEY=VALUE[,...]");
            return -1;
        }
        return 0;
    case O_REMOVE:
        copy = xstrdup(arg);
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
            ty_strv_push(&a->removes, item);
        if (!a->removes) {
            cli_error(UPDATE_PATH, "--remove-labels: expected KEY[,...]");
            return -1;
        }
        return 0;
    case O_CLEAR:
        a->clear = true;
        return 0;
    case O_FORMAT:
        a->print = true;
        return jobs_parse_format(UPDATE_PATH, arg, &a->format);
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
    for (size_t i = 0; a->removes && a->removes[i]; i++)
        json_object_del(labels, a->removes[i]);
    json_object_update(labels, a->updates);
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

    rc = jobs_parse_args(
        UPDATE_PATH, argc, argv, update_options, help, &settings, update_opt, &a, &first);
    if (rc >= 0)
        goto out;
    rc = TY_EXIT_USAGE;
    if (a.clear && a.removes) {
        cli_error(UPDATE_PATH, "--clear-labels and --remove-labels cannot be used together");
        goto out;
    }
    if (!a.clear && !a.removes && json_object_size(a.updates) == 0) {
        cli_error(UPDATE_PATH,
                  "nothing to update: give --update-labels, --remove-labels or --clear-labels");
        goto out;
    }
    job_id = jobs_job_arg(UPDATE_PATH, argc, argv, first);
    if (!job_id)
        goto out;
    c = jobs_client(UPDATE_PATH, &settings);
    if (!c)
        goto out;
    for (int attempt = 0;; attempt++) {
        r = update_once(c, job_id, &a, &job, &e);
        if (r != -ESTALE || attempt >= UPDATE_RETRIES)
            break;
    }
    if (r < 0) {
        rc = jobs_fail(UPDATE_PATH, &e);
    } else if (r == 1) {
        fprintf(stderr, "No update to perform.\n");
        rc = TY_EXIT_OK;
    } else {
        if (a.print)
            jobs_print_resource(job, a.format);
        fflush(stdout);
        fprintf(stderr, "Updated job [%s].\n", job_id);
        rc = TY_EXIT_OK;
    }
out:
    api_client_free(c);
    json_decref(a.updates);
    ty_strv_free(a.removes);
    return rc;
}

const struct cli_command cmd_jobs_update = {
    .path = "jobs update",
    .summary = "change a job's labels",
    .run = update,
};
