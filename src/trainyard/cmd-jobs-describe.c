/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-describe.c: `trainyard jobs describe JOB`: one GET of the job from trainyardd's
 * projects.jobs API, printed as gcloud prints it: the whole resource (YAML or JSON) or, with
 * --summarize, boxed tables of its overview (with why a QUEUED job waits, stateReason, and its
 * place, jobPosition), attempt status (attemptStatus: the attempt, its maximum, internal
 * retries and each replica's restarts; per trial for a tuning job), training input and
 * output. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "jobs-local.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"
#include "yaml-emit.h"

#define PATH "jobs.describe"

enum { O_SUMMARIZE = 1, O_FORMAT };

static const struct option describe_options[] = {
    {"summarize", no_argument, NULL, O_SUMMARIZE},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_LOCAL_OPTIONS,
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char describe_usage[] =
    "Usage: trainyard jobs describe JOB [flags]\n"
    "\n"
    "Print a job: the whole Job resource (YAML by default), or with --summarize its overview,\n"
    "attempt status (the attempt, each replica's restarts), training input and training\n"
    "output as tables. Exit 0, 1 when the job cannot be read\n"
    "(e.g. NOT_FOUND), 2 for usage errors.\n"
    "\n"
    "Flags:\n"
    "  --summarize               boxed tables instead of the resource (--format ignored)\n"
    "  --format=FORMAT           gcloud's NAME[ATTRIBUTES](KEYS): yaml (the default), json,\n"
    "                            value(KEY,...) (e.g. 'value(state)' for scripts), csv(...),\n"
    "                            table(...), list, text, flattened, none (docs/cli.md)\n"
    "\n";

struct describe_args {
    struct jobs_local local; /* --local: a `local train` run (jobs-local.h) */
    bool summarize;
    struct ty_format *format;
};

static int describe_opt(void *ctx, int id, const char *arg)
{
    struct describe_args *a = ctx;
    if (jobs_local_opt(&a->local, id, arg))
        return 0;
    if (id == O_SUMMARIZE) {
        a->summarize = true;
        return 0;
    }
    return jobs_format_opt(PATH, arg, &a->format);
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
    enum {
        CELL,  /* the value as it is */
        PAIRS, /* an object, shown as "name=value, ..." in name order */
        FLAG,  /* a boolean, shown as "yes" when true and not at all when false */
    } shown;
};

/* "name=value, ..." of the object @obj, in name order ("" for anything else). */
static char *pairs_text(const json_t *obj)
{
    struct ty_buf b = TY_BUF_INIT;
    const char **keys = xcalloc(json_object_size(obj) + 1, sizeof(*keys));
    size_t n = 0;
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)obj, k, v)
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
        _cleanup_free_ char *text = cell_text(json_object_get(obj, keys[x]));
        ty_buf_printf(&b, "%s%s=%s", x ? ", " : "", keys[x], text);
    }
    free(keys);
    return ty_buf_take(&b);
}

/* One boxed table of @cols over @rows (each a JSON object), fitted to the terminal. */
static void summary_table(const char *title, const struct column *cols, size_t ncols, json_t *rows)
{
    struct ty_table_style st = {.box = true, .title = title, .max_width = jobs_term_width()};
    const char **cells = xcalloc(ncols, sizeof(*cells));
    bool *optional = xcalloc(ncols, sizeof(*optional));
    struct ty_table *t;
    size_t i;
    json_t *row;

    for (size_t c = 0; c < ncols; c++) {
        cells[c] = cols[c].label;
        optional[c] = cols[c].optional;
    }
    t = ty_table_new(ncols, cells);
    json_array_foreach(rows, i, row)
    {
        char **owned = xcalloc(ncols, sizeof(*owned));
        for (size_t c = 0; c < ncols; c++)
            owned[c] = cols[c].shown == PAIRS ? pairs_text(dig(row, cols[c].field))
                       : cols[c].shown == FLAG
                           ? xstrdup(json_is_true(dig(row, cols[c].field)) ? "yes" : "")
                           : cell_text(dig(row, cols[c].field));
        ty_table_add(t, (const char *const *)owned);
        for (size_t c = 0; c < ncols; c++)
            free(owned[c]);
        free(owned);
    }
    ty_table_drop_empty(t, optional);
    ty_table_print(t, stdout, &st);
    ty_table_free(t);
    free(cells);
    free(optional);
}

/* Whether a trial of @trials has an attemptStatus. */
static bool trials_have_attempts(const json_t *trials)
{
    size_t i;
    json_t *t;

    json_array_foreach(trials, i, t)
    {
        if (json_is_object(json_object_get(t, "attemptStatus")))
            return true;
    }
    return false;
}

static void print_summary(json_t *job)
{
    static const struct column overview[] = {
        {"JOB_ID", "jobId", false, CELL},
        {"CREATE_TIME", "createTime", false, CELL},
        {"START_TIME", "startTime", false, CELL},
        {"END_TIME", "endTime", false, CELL},
        {"STATE", "state", false, CELL},
        {"STATE_REASON", "stateReason", true, CELL},
        {"JOB_POSITION", "jobPosition", true, CELL},
        {"ERROR_MESSAGE", "errorMessage", true, CELL},
    };
    static const struct column input[] = {
        {"RUNTIME_VERSION", "runtimeVersion", true, CELL},
        {"REGION", "region", false, CELL},
        {"SCALE_TIER", "scaleTier", false, CELL},
        {"PYTHON_MODULE", "pythonModule", true, CELL},
        {"PARAMETER_SERVER_TYPE", "parameterServerType", true, CELL},
        {"PARAMETER_SERVER_COUNT", "parameterServerCount", true, CELL},
        {"MASTER_TYPE", "masterType", true, CELL},
        {"WORKER_TYPE", "workerType", true, CELL},
        {"WORKER_COUNT", "workerCount", true, CELL},
        {"EVALUATOR_TYPE", "evaluatorType", true, CELL},
        {"EVALUATOR_COUNT", "evaluatorCount", true, CELL},
        {"JOB_DIR", "jobDir", true, CELL},
    };
    static const struct column output[] = {
        {"TRIALS", "completedTrialCount", false, CELL},
        {"ML_UNITS", "consumedMLUnits", false, CELL},
    };
    static const struct column trials[] = {
        {"TRIAL", "trialId", false, CELL},
        {"STATE", "state", true, CELL},
        {"OBJECTIVE_VALUE", "finalMetric.objectiveValue", false, CELL},
        {"STEP", "finalMetric.trainingStep", false, CELL},
        {"STOPPED_EARLY", "isTrialStoppedEarly", true, FLAG},
        {"HYPERPARAMETERS", "hyperparameters", false, PAIRS},
    };
    static const struct column attempts[] = {
        {"ATTEMPT", "attempt", true, CELL},
        {"MAX_ATTEMPTS", "maxAttempts", true, CELL},
        {"INTERNAL_RETRIES", "internalRetries", true, CELL},
        {"REPLICA_RESTARTS", "replicaRestarts", true, PAIRS},
    };
    static const struct column trial_attempts[] = {
        {"TRIAL", "trialId", false, CELL},
        {"ATTEMPT", "attemptStatus.attempt", true, CELL},
        {"MAX_ATTEMPTS", "attemptStatus.maxAttempts", true, CELL},
        {"REPLICA_RESTARTS", "attemptStatus.replicaRestarts", true, PAIRS},
    };
    json_t *as = json_object_get(job, "attemptStatus");
    json_t *ti = json_object_get(job, "trainingInput");
    json_t *to = json_object_get(job, "trainingOutput");
    json_t *tr = json_object_get(to, "trials");
    _cleanup_json_ json_t *rows = json_array();

    json_array_append(rows, job);
    summary_table("Job Overview", overview, TY_ARRAY_SIZE(overview), rows);
    if (json_is_object(as)) {
        json_array_clear(rows);
        json_array_append(rows, as);
        summary_table("Attempt Status", attempts, TY_ARRAY_SIZE(attempts), rows);
    }
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
    if (trials_have_attempts(tr))
        summary_table(
            "Training Output Trial Attempts", trial_attempts, TY_ARRAY_SIZE(trial_attempts), tr);
}

static int describe(int argc, char **argv)
{
    static const char *const help[] = {describe_usage, jobs_local_help, jobs_global_help, NULL};
    struct describe_args a = {0};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *job = NULL;
    const char *job_id;
    int first, rc;

    rc = jobs_parse_args(
        PATH, argc, argv, describe_options, help, &settings, describe_opt, &a, &first);
    if (rc >= 0)
        goto out;
    rc = TY_EXIT_USAGE;
    if (a.summarize && a.format) /* as gcloud: the summary wins */
        cli_warning("--format is ignored when --summarize is present");
    job_id = jobs_job_arg(PATH, argc, argv, first);
    if (!job_id || jobs_local_check(PATH, &a.local) < 0)
        goto out;
    if (a.local.on)
        rc = jobs_local_job(PATH, &a.local, job_id, &job);
    else
        rc = jobs_job_call(PATH, &settings, "GET", job_id, NULL, NULL, &job);
    if (rc >= 0)
        goto out;
    rc = TY_EXIT_USAGE;
    if (a.summarize)
        print_summary(job);
    else if (jobs_print_job(PATH, job, a.format, NULL) < 0)
        goto out;
    fflush(stdout);
    if (!a.format || a.summarize) /* gcloud prints its epilog only without --format */
        fprintf(stderr,
                "\nView logs with:\n  $ trainyard jobs stream-logs %s%s\n",
                job_id,
                a.local.on ? " --local" : "");
    rc = TY_EXIT_OK;
out:
    ty_format_free(a.format);
    return rc;
}

const struct cli_command cmd_jobs_describe = {
    .path = "jobs describe",
    .summary = "print a job",
    .run = describe,
};
