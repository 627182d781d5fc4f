/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-list.c: `trainyard jobs list`: the project's jobs from trainyardd, newest
 * first, following the pages of projects.jobs.list, printed as gcloud's table JOB_ID STATUS
 * CREATED, or in any of gcloud's formats (--format, format.h: json, yaml, value(...),
 * table(...), csv(...), list, text, ...; any key of the Job, such as why a QUEUED job waits:
 * stateReason and jobPosition), sorted by --sort-by, or as URIs (--uri). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "api-client-int.h"
#include "buf.h"
#include "cli.h"
#include "jobs-local.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"
#include "suggest.h"

#define PATH     "jobs.list"
#define MAX_PAGE 100

enum { O_FORMAT = 1, O_FILTER, O_LIMIT, O_PAGE_SIZE, O_SORT_BY, O_URI };

static const struct option list_options[] = {
    {"filter", required_argument, NULL, O_FILTER},
    {"limit", required_argument, NULL, O_LIMIT},
    {"page-size", required_argument, NULL, O_PAGE_SIZE},
    {"sort-by", required_argument, NULL, O_SORT_BY},
    {"uri", no_argument, NULL, O_URI},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_LOCAL_OPTIONS,
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char list_usage[] =
    "Usage: trainyard jobs list [flags]\n"
    "\n"
    "List the project's jobs, newest first, as a table JOB_ID, STATUS, CREATED (local time),\n"
    "following the pages until --limit jobs were listed or there are no more. With no jobs\n"
    "(and no --format), 'Listed 0 items.' goes to stderr. Exit 0, 1 when the list cannot be read "
    "(an unknown\n"
    "key or value in --filter, a project the token does not grant), 2 for usage errors.\n"
    "\n"
    "Flags:\n"
    "  --filter=EXPRESSION       evaluated by the server, e.g. 'jobId:census* AND "
    "state=failed'\n"
    "                            (keys of the Job; enum values in any case)\n"
    "  --limit=N                 list at most N jobs (or 'unlimited', the default)\n"
    "  --page-size=N             jobs per request (default and most 100; unlimited: 100)\n"
    "  --sort-by=[~]KEY[,...]    sort by these keys of the Job ('~': descending), e.g.\n"
    "                            '~createTime' or 'state,jobId'; with --limit, the first N\n"
    "                            after sorting all\n"
    "  --uri                     print each job's URI (ENDPOINT/v1/projects/P/jobs/J) only\n"
    "  --format=FORMAT           gcloud's NAME[ATTRIBUTES](KEYS): json, yaml, value(KEY,...),\n"
    "                            csv(KEY,...), table(KEY,...), list, text, flattened, none;\n"
    "                            keys such as trainingInput.masterConfig.imageUri, labels.team,\n"
    "                            with :label=NAME, :sort=N, :reverse and .date(), .basename(),\n"
    "                            .yesno() (docs/cli.md), e.g. 'value(jobId,state)' or\n"
    "                            'table[box](jobId,state,jobPosition,stateReason)'\n"
    "\n";

struct list_args {
    struct jobs_local local; /* --local: `local train` runs (jobs-local.h) */
    const char *filter;
    int64_t limit; /* 0: unlimited */
    int64_t page_size;
    struct ty_format *format;
    struct ty_fmt_key *sort;
    size_t nsort;
    bool uri;
};

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
            const char *near = ty_suggest_among(arg, (const char *const[]){"unlimited", NULL});
            cli_error(PATH,
                      "--limit: expected a positive number or unlimited (got '%s'%s)",
                      arg,
                      near ? "; did you mean 'unlimited'?" : "");
            return -1;
        }
        return 0;
    case O_PAGE_SIZE: /* as gcloud's: any positive number or unlimited; the service sends
                       * at most MAX_PAGE a page */
        if (strcmp(arg, "unlimited") == 0) {
            a->page_size = MAX_PAGE;
        } else if (ty_parse_int64(arg, 1, INT64_MAX, &a->page_size) < 0) {
            const char *near = ty_suggest_among(arg, (const char *const[]){"unlimited", NULL});
            cli_error(PATH,
                      "--page-size: expected a positive number or unlimited (got '%s'%s)",
                      arg,
                      near ? "; did you mean 'unlimited'?" : "");
            return -1;
        }
        if (a->page_size > MAX_PAGE)
            a->page_size = MAX_PAGE;
        return 0;
    case O_SORT_BY:
        return jobs_sort_opt(PATH, arg, &a->sort, &a->nsort);
    case O_URI:
        a->uri = true;
        return 0;
    case O_FORMAT:
        return jobs_format_opt(PATH, arg, &a->format);
    }
    return -1;
}

/* Does the listing sort (--sort-by, or a :sort=N of --format)? Then --limit is applied after
 * all are read and sorted, as gcloud does. */
static bool sorts(const struct list_args *a)
{
    return a->nsort > 0 || ty_format_sorts(a->format);
}

/* Follow the pages into @all: --limit jobs at most, unless sorting wants them all first.
 * Returns 0 or -errno with err. */
static int fetch(struct api_client *c, const struct list_args *a, json_t *all, struct ty_error *e)
{
    _cleanup_free_ char *base = api_jobs_path(c, NULL, NULL);
    _cleanup_free_ char *token = NULL;
    int64_t limit = sorts(a) ? 0 : a->limit;

    for (;;) {
        _cleanup_json_ json_t *page = NULL;
        struct ty_buf q = TY_BUF_INIT;
        int64_t want = a->page_size ? a->page_size : MAX_PAGE;
        char size[24];
        const char *next;
        json_t *jobs, *job;
        size_t i;
        int r;

        if (limit > 0 && limit - (int64_t)json_array_size(all) < want)
            want = limit - (int64_t)json_array_size(all);
        snprintf(size, sizeof(size), "%lld", (long long)want);
        ty_buf_puts(&q, base);
        if (a->filter && *a->filter)
            api_query_add(&q, "filter", a->filter);
        api_query_add(&q, "pageSize", size);
        api_query_add(&q, "pageToken", token);
        r = api_call(c, "GET", ty_buf_str(&q), NULL, &page, e);
        ty_buf_release(&q);
        if (r < 0)
            return r;
        jobs = json_object_get(page, "jobs");
        json_array_foreach(jobs, i, job)
        {
            if (limit > 0 && (int64_t)json_array_size(all) >= limit)
                break;
            json_array_append(all, job);
        }
        next = ty_json_str(page, "nextPageToken");
        if (!next || !*next || (limit > 0 && (int64_t)json_array_size(all) >= limit))
            return 0;
        if (token && strcmp(token, next) == 0)
            return ty_error_set(e, EPROTO, "the server returned the same page token twice");
        ty_replace_str(&token, next);
    }
}

static int list(int argc, char **argv)
{
    static const char *const help[] = {list_usage, jobs_local_help, jobs_global_help, NULL};
    struct list_args a = {0};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *all = json_array();
    _cleanup_free_ char *uri = NULL;
    _cleanup_free_ char *project = NULL;
    struct jobs_list_output out;
    struct api_client *c = NULL;
    struct ty_error e = {0};
    int first, rc;

    rc = jobs_parse_args(PATH, argc, argv, list_options, help, &settings, list_opt, &a, &first);
    if (rc >= 0)
        goto done;
    rc = TY_EXIT_USAGE;
    if (argc > first) {
        cli_error(PATH, "unexpected argument '%s'", argv[first]);
        goto done;
    }
    if (jobs_local_check(PATH, &a.local) < 0)
        goto done;
    {
        const char *key = ty_format_get_only_key(a.format, a.sort, a.nsort);
        if (key) {
            cli_error(PATH,
                      "'%s': only jobs describe (jobs.get) shows it; a list's jobs do not carry "
                      "it",
                      key);
            goto done;
        }
    }
    if (a.local.on && a.uri) {
        cli_error(PATH, "--uri: a local run has no URI (not with --local)");
        goto done;
    }
    if (a.local.on) {
        /* When sorting, the first N after sorting all (as for the service). */
        if (jobs_local_list(&a.local, a.filter, sorts(&a) ? 0 : a.limit, all, &e) < 0) {
            rc = jobs_fail(PATH, &e);
            goto done;
        }
    } else {
        c = jobs_client(PATH, &settings);
        if (!c)
            goto done;
        if (fetch(c, &a, all, &e) < 0) {
            rc = jobs_fail(PATH, &e);
            goto done;
        }
        if (a.uri)
            uri = jobs_uri_prefix(c);
        project = xstrdup(c->project);
    }
    out = (struct jobs_list_output){a.format, a.sort, a.nsort, uri};
    ty_format_sort(all, a.sort, a.nsort, a.format);
    while (sorts(&a) && a.limit > 0 && (int64_t)json_array_size(all) > a.limit)
        json_array_remove(all, json_array_size(all) - 1);
    if (jobs_print_list(PATH, all, &out) < 0)
        goto done;
    fflush(stdout);
    if (json_array_size(all) == 0 && !a.format) { /* gcloud's epilog: not with --format */
        fprintf(stderr, "Listed 0 items.\n");
        if ((!a.filter || !*a.filter) && project)
            fprintf(stderr, "Project [%s] has no jobs.\n", project);
        else if (!a.filter || !*a.filter)
            fprintf(stderr, "No local runs yet (trainyard local train records them).\n");
    }
    rc = TY_EXIT_OK;
done:
    api_client_free(c);
    ty_format_free(a.format);
    ty_format_keys_free(a.sort, a.nsort);
    return rc;
}

const struct cli_command cmd_jobs_list = {
    .path = "jobs list",
    .summary = "list jobs, newest first",
    .run = list,
};
