/* SPDX-License-Identifier: Apache-2.0
 * jobs-common.c: the parts of the remote `trainyard jobs ...` verbs that are not verbs:
 * global flags and argument parsing, output formats, local times and gcloud-style tables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "jobs.h"
#include "macro.h"
#include "timeutil.h"
#include "yaml-emit.h"

const char jobs_global_help[] =
    "Global flags:\n"
    "  --api-endpoint=URL        trainyardd's address (default $TRAINYARD_API_ENDPOINT, else\n"
    "                            api_endpoint in the config file, else " API_DEFAULT_ENDPOINT ")\n"
    "  --project=PROJECT         the project of the jobs (default $TRAINYARD_PROJECT, else\n"
    "                            project in the config file, else " API_DEFAULT_PROJECT ")\n"
    "  --access-token-file=FILE  send the token in FILE as 'Authorization: Bearer' (default\n"
    "                            $TRAINYARD_ACCESS_TOKEN, else access_token or\n"
    "                            access_token_file in the config file, else none)\n"
    "  --help                    this text\n"
    "The config file is $TRAINYARD_CONFIG, else $XDG_CONFIG_HOME/trainyard/config, else\n"
    "~/.config/trainyard/config: 'key = value' lines (see docs/cli.md).\n";

int jobs_parse_args(const char *path,
                    int argc,
                    char **argv,
                    const struct option *opts,
                    const char *const *help,
                    struct api_settings *settings,
                    jobs_opt_fn fn,
                    void *ctx,
                    int *first_pos)
{
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case JOBS_OPT_ENDPOINT:
            settings->endpoint = optarg;
            break;
        case JOBS_OPT_PROJECT:
            settings->project = optarg;
            break;
        case JOBS_OPT_TOKEN_FILE:
            settings->token_file = optarg;
            break;
        case JOBS_OPT_HELP:
            for (size_t i = 0; help[i]; i++)
                fputs(help[i], stdout);
            return TY_EXIT_OK;
        case ':':
        case '?':
            return cli_flag_error(path, c, argv, opts);
        default:
            if (!fn || fn(ctx, c, optarg) < 0) {
                if (!fn)
                    cli_error(path, "internal: unhandled option %d", c);
                return TY_EXIT_USAGE;
            }
        }
    }
    *first_pos = optind;
    return -1;
}

const char *jobs_job_arg(const char *path, int argc, char **argv, int first)
{
    _cleanup_free_ char *verb = xstrdup(path);
    for (char *p = verb; *p; p++)
        if (*p == '.')
            *p = ' ';
    if (argc <= first) {
        cli_error(path, "JOB is required (trainyard %s JOB)", verb);
        return NULL;
    }
    if (argc - first > 1) {
        cli_error(path, "unexpected argument '%s' (only one JOB)", argv[first + 1]);
        return NULL;
    }
    if (!*argv[first]) {
        cli_error(path, "JOB is empty");
        return NULL;
    }
    return argv[first];
}

struct api_client *jobs_client(const char *path, const struct api_settings *settings)
{
    struct api_client *c = NULL;
    struct ty_error e = {0};

    if (api_client_new(settings, &c, &e) < 0) {
        cli_error(path, "%s", ty_error_msg(&e));
        return NULL;
    }
    return c;
}

int jobs_job_call(const char *path,
                  const struct api_settings *settings,
                  const char *method,
                  const char *job_id,
                  const char *suffix,
                  const json_t *body,
                  json_t **ret)
{
    struct api_client *c = jobs_client(path, settings);
    _cleanup_free_ char *p = NULL;
    struct ty_error e = {0};
    int r;

    if (!c)
        return TY_EXIT_USAGE;
    p = api_jobs_path(c, job_id, suffix);
    r = api_call(c, method, p, body, ret, &e);
    api_client_free(c);
    return r < 0 ? jobs_fail(path, &e) : -1;
}

int jobs_fail(const char *path, const struct ty_error *err)
{
    cli_error(path, "%s", ty_error_msg(err));
    return TY_EXIT_FAILED;
}

int jobs_parse_format(const char *path, const char *arg, enum jobs_format *ret)
{
    if (strcmp(arg, "json") == 0)
        *ret = JOBS_FORMAT_JSON;
    else if (strcmp(arg, "yaml") == 0)
        *ret = JOBS_FORMAT_YAML;
    else {
        cli_error(path, "--format: expected json or yaml (got '%s')", arg);
        return -1;
    }
    return 0;
}

void jobs_print_resource(const json_t *v, enum jobs_format fmt)
{
    _cleanup_free_ char *text = NULL;

    if (fmt == JOBS_FORMAT_JSON) {
        text = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        if (text)
            printf("%s\n", text);
        return;
    }
    text = ty_yaml_dump(v);
    fputs(text, stdout);
}

/* ---- times ---------------------------------------------------------------------------------- */

const char *jobs_local_time(const char *rfc3339, enum jobs_time_style style, char *buf, size_t n)
{
    struct tm tm;
    int64_t usec;
    time_t t;

    if (!rfc3339)
        rfc3339 = "";
    if (ty_rfc3339_parse(rfc3339, &usec, NULL) < 0)
        goto raw;
    t = (time_t)(usec >= 0 ? usec / 1000000 : -((-usec + 999999) / 1000000));
    if (!localtime_r(&t, &tm))
        goto raw;
    if ((style == JOBS_TIME_LOG ? strftime(buf, n, "%Y-%m-%d %H:%M:%S %z", &tm)
                                : strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
        goto raw;
    return buf;
raw:
    snprintf(buf, n, "%s", rfc3339);
    return buf;
}

/* ---- tables --------------------------------------------------------------------------------- */

struct jobs_table {
    size_t ncols, nrows; /* rows include the header */
    char **cells;        /* row-major */
};

struct jobs_table *jobs_table_new(size_t ncols, const char *const *headers)
{
    struct jobs_table *t = xcalloc(1, sizeof(*t));
    t->ncols = ncols;
    jobs_table_add(t, headers);
    return t;
}

void jobs_table_add(struct jobs_table *t, const char *const *cells)
{
    t->cells = xreallocarray(t->cells, (t->nrows + 1) * t->ncols, sizeof(char *));
    for (size_t i = 0; i < t->ncols; i++)
        t->cells[t->nrows * t->ncols + i] = xstrdup(cells[i] ? cells[i] : "");
    t->nrows++;
}

void jobs_table_drop_empty(struct jobs_table *t, const bool *optional)
{
    size_t keep = 0, ncols = t->ncols;
    bool *drop = xcalloc(ncols, sizeof(bool));

    for (size_t c = 0; c < ncols; c++) {
        drop[c] = optional[c];
        for (size_t r = 1; r < t->nrows && drop[c]; r++)
            if (*t->cells[r * ncols + c])
                drop[c] = false;
        keep += !drop[c];
    }
    for (size_t r = 0, k = 0; r < t->nrows; r++)
        for (size_t c = 0; c < ncols; c++) {
            char *cell = t->cells[r * ncols + c];
            if (drop[c])
                free(cell);
            else
                t->cells[k++] = cell;
        }
    t->ncols = keep;
    free(drop);
}

/* Display width: one column per UTF-8 character. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void pad(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputs(s, out);
}

static bool utf8_locale(void)
{
    const char *names[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < TY_ARRAY_SIZE(names); i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
    }
    return false;
}

/* Box pieces: horizontal, vertical, then corners/junctions top (l m r), middle, bottom. */
struct box {
    const char *h, *v, *tl, *tm, *tr, *ml, *mm, *mr, *bl, *bm, *br, *tjl, *tjr;
};

static void rule(FILE *out,
                 const struct box *b,
                 const size_t *w,
                 size_t ncols,
                 const char *l,
                 const char *m,
                 const char *r)
{
    fputs(l, out);
    for (size_t c = 0; c < ncols; c++) {
        pad(out, b->h, w[c] + 2);
        fputs(c + 1 < ncols ? m : r, out);
    }
    fputc('\n', out);
}

void jobs_table_print(const struct jobs_table *t, FILE *out, bool box, const char *title)
{
    static const struct box uni = {"─", "│", "┌", "┬", "┐", "├", "┼", "┤", "└", "┴", "┘", "├", "┤"};
    static const struct box ascii = {
        "-", "|", "+", "+", "+", "+", "+", "+", "+", "+", "+", "+", "+"};
    size_t *w;

    if (t->ncols == 0)
        return;
    w = xcalloc(t->ncols, sizeof(*w));
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t cw = width(t->cells[r * t->ncols + c]);
            if (cw > w[c])
                w[c] = cw;
        }

    if (!box) {
        for (size_t r = 0; r < t->nrows; r++) {
            for (size_t c = 0; c < t->ncols; c++) {
                const char *cell = t->cells[r * t->ncols + c];
                fputs(cell, out);
                if (c + 1 < t->ncols)
                    pad(out, " ", w[c] - width(cell) + 2);
            }
            fputc('\n', out);
        }
        free(w);
        return;
    }

    const struct box *b = utf8_locale() ? &uni : &ascii;
    size_t inner = 0;
    for (size_t c = 0; c < t->ncols; c++)
        inner += w[c] + 2 + (c > 0);
    if (title && width(title) + 2 > inner) {
        w[t->ncols - 1] += width(title) + 2 - inner;
        inner = width(title) + 2;
    }
    if (title) {
        size_t tw = width(title), left = (inner - tw) / 2;
        fputs(b->tl, out);
        pad(out, b->h, inner);
        fprintf(out, "%s\n%s", b->tr, b->v);
        pad(out, " ", left);
        fputs(title, out);
        pad(out, " ", inner - tw - left);
        fprintf(out, "%s\n", b->v);
        rule(out, b, w, t->ncols, b->tjl, b->tm, b->tjr);
    } else {
        rule(out, b, w, t->ncols, b->tl, b->tm, b->tr);
    }
    for (size_t r = 0; r < t->nrows; r++) {
        fputs(b->v, out);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            fprintf(out, " %s", cell);
            pad(out, " ", w[c] - width(cell) + 1);
            fputs(b->v, out);
        }
        fputc('\n', out);
        if (r == 0)
            rule(out, b, w, t->ncols, b->ml, b->mm, b->mr);
    }
    rule(out, b, w, t->ncols, b->bl, b->bm, b->br);
    free(w);
}

void jobs_table_free(struct jobs_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}
