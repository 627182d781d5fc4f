/* SPDX-License-Identifier: Apache-2.0
 * jobs-common.c: the parts of the remote `trainyard jobs ...` verbs that are not verbs:
 * global flags and argument parsing, and local times (output formats: jobs-format.c). */
#include <errno.h>
#include <signal.h>
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
    "  --quiet, -q               no prompts (trainyard asks nothing; taken for gcloud)\n"
    "  --verbosity=LEVEL         debug, info, warning (default), error: no WARNING lines,\n"
    "                            critical or none: no ERROR lines either\n"
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
    while ((c = cli_getopt(argc, argv, ":", opts)) != -1) {
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
        case CLI_FLAG_ABBREVIATED:
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

static void on_interrupt(int sig)
{
    api_interrupted = 1;
}

void jobs_catch_interrupt(void)
{
    struct sigaction sa = {.sa_handler = on_interrupt}; /* no SA_RESTART: waits end */
    sigemptyset(&sa.sa_mask);
    api_interrupted = 0;
    (void)sigaction(SIGINT, &sa, NULL);
}

void jobs_release_interrupt(void)
{
    struct sigaction sa = {.sa_handler = SIG_DFL};
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGINT, &sa, NULL);
    api_interrupted = 0;
}

int jobs_fail(const char *path, const struct ty_error *err)
{
    cli_error(path, "%s", ty_error_msg(err));
    return TY_EXIT_FAILED;
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
