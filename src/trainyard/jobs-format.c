/* SPDX-License-Identifier: Apache-2.0
 * jobs-format.c: the output flags of the `trainyard jobs` verbs over format.h: --format and
 * --sort-by as flags (errors printed for the verb), a list of jobs (gcloud's default table
 * JOB_ID STATUS CREATED, or the --format, or --uri), one job (YAML by default), the URI of a
 * job, and the width tables must fit. The verbs hand these a JSON array of jobs, so that a
 * listing from elsewhere (local runs) prints the same way. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "alloc.h"
#include "api-client-int.h"
#include "cli.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"
#include "parse.h"

/* gcloud ai-platform jobs list's columns. */
#define LIST_DEFAULT                                                                               \
    "table(jobId:label=JOB_ID,state:label=STATUS,createTime.date(tz=LOCAL):label=CREATED)"

int jobs_format_opt(const char *path, const char *arg, struct ty_format **fmt)
{
    struct ty_format *f = NULL;
    struct ty_error e = {0};

    if (ty_format_parse(arg, &f, &e) < 0) {
        cli_error(path, "--format: %s", ty_error_msg(&e));
        return -1;
    }
    ty_format_free(*fmt);
    *fmt = f;
    return 0;
}

int jobs_sort_opt(const char *path, const char *arg, struct ty_fmt_key **keys, size_t *n)
{
    struct ty_fmt_key *k = NULL;
    struct ty_error e = {0};
    size_t nk = 0;

    if (ty_format_sort_parse(arg, &k, &nk, &e) < 0) {
        cli_error(path, "--sort-by: %s", ty_error_msg(&e));
        return -1;
    }
    ty_format_keys_free(*keys, *n);
    *keys = k;
    *n = nk;
    return 0;
}

/* @f with the keys of the format text @dflt when it needs keys and has none: a new format
 * the caller frees, else NULL (use @f). */
static struct ty_format *with_default_keys(const struct ty_format *f, const char *dflt)
{
    struct ty_format *d = NULL, *out;
    struct ty_error e = {0};

    if (!ty_format_needs_keys(f) || !dflt || ty_format_parse(dflt, &d, &e) < 0 || d->nkeys == 0) {
        ty_format_free(d);
        return NULL;
    }
    /* the user's name and attributes, the default's keys */
    out = xcalloc(1, sizeof(*out));
    *out = *f;
    out->title = f->title ? xstrdup(f->title) : NULL;
    out->separator = f->separator ? xstrdup(f->separator) : NULL;
    out->delimiter = f->delimiter ? xstrdup(f->delimiter) : NULL;
    out->terminator = f->terminator ? xstrdup(f->terminator) : NULL;
    out->keys = TAKE_PTR(d->keys);
    out->nkeys = d->nkeys;
    d->nkeys = 0;
    ty_format_free(d);
    return out;
}

static int print_items(
    const char *path, const json_t *items, bool one, const struct ty_format *fmt, const char *dflt)
{
    _cleanup_(ty_format_freep) struct ty_format *own = NULL;
    struct ty_error e = {0};

    if (!fmt || fmt->name == TY_FMT_DEFAULT) {
        if (ty_format_parse(dflt ? dflt : "yaml", &own, &e) < 0) {
            cli_error(path, "internal: default format: %s", ty_error_msg(&e));
            return -1;
        }
        fmt = own;
    } else if (ty_format_needs_keys(fmt)) {
        own = with_default_keys(fmt, dflt);
        if (!own) {
            cli_error(path,
                      "--format: %s needs keys, e.g. %s(jobId,state)",
                      fmt->name == TY_FMT_VALUE ? "value"
                      : fmt->name == TY_FMT_CSV ? "csv"
                                                : "table",
                      fmt->name == TY_FMT_VALUE ? "value"
                      : fmt->name == TY_FMT_CSV ? "csv"
                                                : "table");
            return -1;
        }
        fmt = own;
    }
    ty_format_print(fmt, items, one, stdout);
    return 0;
}

int jobs_print_list(const char *path, json_t *jobs, const struct jobs_list_output *o)
{
    const struct ty_format *f = o->format;
    size_t i;
    json_t *job;

    ty_format_sort(jobs, o->sort, o->nsort, f);
    if (o->uri_prefix) {
        json_array_foreach(jobs, i, job)
        {
            const char *id = json_string_value(json_object_get(job, "jobId"));
            _cleanup_free_ char *esc = api_escape(id ? id : "");
            printf("%s%s\n", o->uri_prefix, esc);
        }
        return 0;
    }
    return print_items(path, jobs, false, f, LIST_DEFAULT);
}

int jobs_print_job(const char *path,
                   const json_t *job,
                   const struct ty_format *fmt,
                   const char *dflt)
{
    _cleanup_json_ json_t *one = json_array();

    json_array_append(one, (json_t *)job);
    return print_items(path, one, true, fmt, dflt);
}

char *jobs_uri_prefix(const struct api_client *c)
{
    _cleanup_free_ char *jobs = api_jobs_path(c, NULL, NULL);
    size_t n = strlen(c->endpoint);

    while (n > 0 && c->endpoint[n - 1] == '/')
        n--;
    return xasprintf("%.*s%s/", (int)n, c->endpoint, jobs);
}

size_t jobs_term_width(void)
{
    struct winsize ws;
    const char *cols = getenv("COLUMNS");
    int64_t n;

    if (!isatty(STDOUT_FILENO))
        return 80;
    if (cols && ty_parse_int64(cols, 20, 10000, &n) == 0)
        return (size_t)n;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}
