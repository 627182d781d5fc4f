/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-list.c: `trainyard jobs list`: the project's jobs from trainyardd, newest
 * first, following the pages of projects.jobs.list, printed as gcloud's table (or JSON/YAML,
 * or gcloud's projections table(FIELD,...) and value(FIELD,...), which can show any field of
 * the Job, such as why a QUEUED job waits: stateReason and jobPosition). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "jobs-local.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

#define PATH     "jobs.list"
#define MAX_PAGE 100

enum { O_FORMAT = 1, O_FILTER, O_LIMIT, O_PAGE_SIZE };

static const struct option list_options[] = {
    {"filter", required_argument, NULL, O_FILTER},
    {"limit", required_argument, NULL, O_LIMIT},
    {"page-size", required_argument, NULL, O_PAGE_SIZE},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_LOCAL_OPTIONS,
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
    "                            instead of the table; or table(FIELD,...) for a table of\n"
    "                            those fields of the Job (FIELD:label=NAME names a column),\n"
    "                            value(FIELD,...) for their values separated by tabs, e.g.\n"
    "                            'table(jobId,state,jobPosition,stateReason)'\n"
    "\n";

/* gcloud's table(...) and value(...) projections of --format. */
struct projection {
    bool table;    /* table(...): headers and aligned columns; value(...): tab-separated */
    char **fields; /* dotted paths in the Job (NULL-terminated) */
    char **labels; /* their column headers */
};

struct list_args {
    struct jobs_local local; /* --local: `local train` runs (jobs-local.h) */
    const char *filter;
    int64_t limit; /* 0: unlimited */
    int64_t page_size;
    enum jobs_format format;
    struct projection proj; /* fields set: --format was a projection */
};

/* gcloud's header of a field: its last component in upper snake case (jobId -> JOB_ID). */
static char *header_of(const char *field)
{
    const char *last = strrchr(field, '.');
    struct ty_buf b = TY_BUF_INIT;

    last = last ? last + 1 : field;
    for (const char *c = last; *c; c++) {
        if (isupper((unsigned char)*c) && c > last)
            ty_buf_putc(&b, '_');
        ty_buf_putc(&b, (char)toupper((unsigned char)*c));
    }
    return ty_buf_take(&b);
}

/* Parse "table(F[:label=L],...)" or "value(F,...)" into @p. Returns 0, 1 when @arg is no
 * projection, or -1 after printing the error. */
static int parse_projection(const char *arg, struct projection *p)
{
    size_t len = strlen(arg);
    _cleanup_free_ char *inner = NULL;
    char *save = NULL;

    if (strncmp(arg, "table(", 6) == 0)
        p->table = true;
    else if (strncmp(arg, "value(", 6) != 0)
        return 1;
    if (arg[len - 1] != ')' || len <= 7) {
        cli_error(PATH, "--format: expected %.5s(FIELD[,FIELD...]) (got '%s')", arg, arg);
        return -1;
    }
    inner = xstrndup(arg + 6, len - 7);
    p->fields = ty_strv_free(p->fields);
    p->labels = ty_strv_free(p->labels);
    for (char *f = strtok_r(inner, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        char *label = strstr(f, ":label=");
        f += strspn(f, " ");
        if (label)
            *label = '\0';
        f[strcspn(f, " ")] = '\0';
        if (!*f || strspn(f, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
                       strlen(f)) {
            cli_error(PATH,
                      "--format: '%s' is not a field name (such as jobId or trainingInput"
                      ".scaleTier)",
                      f);
            return -1;
        }
        ty_strv_push(&p->fields, f);
        if (label)
            ty_strv_push(&p->labels, label + 7);
        else
            ty_strv_push_take(&p->labels, header_of(f));
    }
    if (!p->fields) {
        cli_error(PATH, "--format: no field in '%s'", arg);
        return -1;
    }
    return 0;
}

/* The text of the value at @path in @job ("" when absent). */
static char *field_text(const json_t *job, const char *path)
{
    _cleanup_free_ char *copy = xstrdup(path);
    const json_t *v = job;
    char *save = NULL;

    for (char *k = strtok_r(copy, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = json_object_get(v, k);
    if (!v || json_is_null(v))
        return xstrdup("");
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void print_projection(json_t *jobs, const struct projection *p)
{
    size_t n = ty_strv_len(p->fields), i;
    struct jobs_table *t = p->table ? jobs_table_new(n, (const char *const *)p->labels) : NULL;
    json_t *job;

    json_array_foreach(jobs, i, job)
    {
        char **cells = xcalloc(n + 1, sizeof(*cells));
        for (size_t k = 0; k < n; k++)
            cells[k] = field_text(job, p->fields[k]);
        if (t)
            jobs_table_add(t, (const char *const *)cells);
        else
            for (size_t k = 0; k < n; k++)
                printf("%s%s", cells[k], k + 1 < n ? "\t" : "\n");
        ty_strv_free(cells);
    }
    if (t && json_array_size(jobs) > 0)
        jobs_table_print(t, stdout, false, NULL);
    jobs_table_free(t);
}

static int list_opt(void *ctx, int id, const char *arg)
{
    struct list_args *a = ctx;

    if (jobs_local_opt(&a->local, id, arg))
        return 0;
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
            cli_error(PATH, "--limit: expected a positive number or unlimited (got '%s')", arg);
            return -1;
        }
        return 0;
    case O_PAGE_SIZE:
        if (ty_parse_int64(arg, 1, MAX_PAGE, &a->page_size) < 0) {
            cli_error(
                PATH, "--page-size: expected a number from 1 to %d (got '%s')", MAX_PAGE, arg);
            return -1;
        }
        return 0;
    case O_FORMAT: {
        int r = parse_projection(arg, &a->proj);
        return r <= 0 ? r : jobs_parse_format(PATH, arg, &a->format);
    }
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
    static const char *const help[] = {list_usage, jobs_local_help, jobs_global_help, NULL};
    struct list_args a = {.format = JOBS_FORMAT_DEFAULT};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *all = json_array();
    _cleanup_free_ char *base = NULL;
    _cleanup_free_ char *token = NULL;
    struct api_client *c;
    struct ty_error e = {0};
    int first, rc, r = 0;

    rc = jobs_parse_args(PATH, argc, argv, list_options, help, &settings, list_opt, &a, &first);
    if (rc >= 0)
        return rc;
    if (argc > first) {
        cli_error(PATH, "unexpected argument '%s'", argv[first]);
        return TY_EXIT_USAGE;
    }
    if (jobs_local_check(PATH, &a.local) < 0)
        return TY_EXIT_USAGE;
    if (a.local.on) {
        r = jobs_local_list(&a.local, a.filter, a.limit, all, &e);
        goto listed;
    }
    c = jobs_client(PATH, &settings);
    if (!c)
        return TY_EXIT_USAGE;
    base = api_jobs_path(c, NULL, NULL);
    for (;;) {
        _cleanup_json_ json_t *page = NULL;
        struct ty_buf q = TY_BUF_INIT;
        int64_t want = a.page_size ? a.page_size : MAX_PAGE;
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
listed:
    if (r < 0)
        return jobs_fail(PATH, &e);
    if (a.proj.fields)
        print_projection(all, &a.proj);
    else
        print_list(all, a.format);
    ty_strv_free(a.proj.fields);
    ty_strv_free(a.proj.labels);
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
