/* SPDX-License-Identifier: Apache-2.0
 * cmd-jobs-submit.c: `trainyard jobs submit training JOB [flags] [-- USER_ARGS]`: builds the
 * job from --config and the gcloud training flags exactly as `local train` does, checks it
 * here (a bad spec never reaches the daemon), creates it with POST .../jobs, and either
 * returns at once (gcloud's default, --async) or streams its logs until it ends
 * (--stream-logs; exit 1 unless it SUCCEEDED). */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accept.h"
#include "alloc.h"
#include "cli.h"
#include "jobs.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "strv.h"

#define PATH "jobs.submit.training"

enum {
    O_RUNTIME = 1,
    O_PYTORCH_ENV,
    O_MXNET_ENV,
    O_STREAM_LOGS,
    O_ASYNC,
    O_FORMAT,
};

static const struct option own_options[] = {
    {"runtime", required_argument, NULL, O_RUNTIME},
    {"pytorch-env", no_argument, NULL, O_PYTORCH_ENV},
    {"mxnet-env", no_argument, NULL, O_MXNET_ENV},
    {"stream-logs", no_argument, NULL, O_STREAM_LOGS},
    {"async", no_argument, NULL, O_ASYNC},
    {"format", required_argument, NULL, O_FORMAT},
    JOBS_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char usage[] =
    "Usage: trainyard jobs submit training JOB [flags] [-- USER_ARGS...]\n"
    "\n"
    "Submit a training job to trainyardd. The job is built and checked as by 'trainyard local\n"
    "train' (same job flags), then created; it starts QUEUED. Prints 'Job [JOB] submitted\n"
    "successfully.' and how to follow it on stderr, and the job's jobId and state (YAML) on\n"
    "stdout. With --stream-logs, waits instead, printing the job's logs on stderr, then the\n"
    "final state. Exit 0; 1 when the request fails or (--stream-logs) the job did not\n"
    "SUCCEED; 2 for usage and job-spec errors.\n"
    "\n"
    "Submit flags:\n"
    "  --runtime=NAME            where the daemon runs the replicas: process, container, ...\n"
    "                            (sets the label trainyard-runtime=NAME; default: the\n"
    "                            daemon's)\n"
    "  --pytorch-env             also set MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (sets\n"
    "                            the label trainyard-pytorch-env=true)\n"
    "  --mxnet-env               also set DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT,\n"
    "                            DMLC_NUM_WORKER, DMLC_NUM_SERVER (sets the label\n"
    "                            trainyard-mxnet-env=true)\n"
    "  --stream-logs             stream the logs until the job ends; exit 1 unless it\n"
    "                            SUCCEEDED\n"
    "  --async                   return once the job is created (the default; not with\n"
    "                            --stream-logs)\n"
    "  --format=FORMAT           print the created Job in this format (json, yaml,\n"
    "                            value(KEY,...), ...: docs/cli.md)\n"
    "A relative --job-dir (or jobDir in --config; not a URI such as gs://...) is made\n"
    "absolute here, against this command's working directory ('..' and '.' resolved),\n"
    "before the job is sent.\n"
    "\n";

struct submit_args {
    struct train_flags tf;
    const char *runtime;
    bool pytorch;
    bool mxnet;
    bool stream_logs;
    bool async;
    struct ty_format *format; /* --format; NULL: gcloud's brief form */
};

static int on_opt(void *ctx, int id, const char *arg)
{
    struct submit_args *a = ctx;
    struct ty_error e = {0};

    switch (id) {
    case O_RUNTIME:
        if (!*arg) {
            cli_error(PATH, "--runtime: the runtime name is empty");
            return -1;
        }
        a->runtime = arg;
        return 0;
    case O_PYTORCH_ENV:
        a->pytorch = true;
        return 0;
    case O_MXNET_ENV:
        a->mxnet = true;
        return 0;
    case O_STREAM_LOGS:
        a->stream_logs = true;
        return 0;
    case O_ASYNC:
        a->async = true;
        return 0;
    case O_FORMAT:
        return jobs_format_opt(PATH, arg, &a->format);
    default:
        if (train_flags_apply(&a->tf, id, arg, &e) < 0) {
            cli_error(PATH, "%s", ty_error_msg(&e));
            return -1;
        }
        return 0;
    }
}

/* gcloud's default output of a submitted job: yaml(jobId, state, startTime, endTime), the
 * times in local time. */
static void print_brief(const json_t *job)
{
    _cleanup_json_ json_t *out = json_object();
    static const char *const keys[] = {"jobId", "state", "startTime", "endTime"};

    for (size_t i = 0; i < TY_ARRAY_SIZE(keys); i++) {
        const char *v = ty_json_str(job, keys[i]);
        char buf[64];
        if (!v)
            continue;
        if (i >= 2)
            v = jobs_local_time(v, JOBS_TIME_ISO, buf, sizeof(buf));
        json_object_set_new(out, keys[i], json_string(v));
    }
    jobs_print_job(PATH, out, NULL, NULL);
}

/* The absolute @path, changed in place to its lexically clean form: empty and '.' components
 * dropped, a '..' removing the component before it ("/.." is "/"), no trailing '/'. */
static void clean_path(char *path)
{
    size_t n = 0; /* the clean prefix: path[0..n) */
    char *in = path;

    for (;;) {
        size_t len;
        while (*in == '/')
            in++;
        if (!*in)
            break;
        len = strcspn(in, "/");
        if (len == 2 && in[0] == '.' && in[1] == '.') {
            while (n > 0 && path[--n] != '/')
                ;
        } else if (len != 1 || in[0] != '.') {
            path[n++] = '/'; /* never past @in: each kept name had a '/' before it */
            memmove(path + n, in, len);
            n += len;
        }
        in += len;
    }
    if (n == 0)
        path[n++] = '/';
    path[n] = '\0';
}

/* A relative local jobDir (no "://", not absolute) means this directory's, not the daemon's:
 * made absolute against the working directory, and clean (`../x` and `./a//b` are resolved
 * lexically, as the service takes only clean paths). Returns 0, or -errno with err. */
static int absolute_job_dir(json_t *doc, struct ty_error *err)
{
    json_t *ti = json_object_get(doc, "trainingInput");
    const char *dir = ty_json_str(ti, "jobDir");
    _cleanup_free_ char *cwd = NULL, *path = NULL;

    if (!ty_job_dir_is_local(dir) || dir[0] == '/')
        return 0;
    cwd = getcwd(NULL, 0);
    if (!cwd)
        return ty_error_set(err,
                            errno,
                            "--job-dir: '%s' is relative and the working directory is unknown "
                            "(%s): give an absolute path",
                            dir,
                            strerror(errno));
    path = xasprintf("%s/%s", cwd, dir);
    clean_path(path);
    json_object_set_new(ti, "jobDir", json_string(path));
    return 0;
}

/* Build the request body: the job checked locally, in its canonical form. Returns 0, or -1
 * after printing the error. */
static int build_job(struct submit_args *a, const char *job_id, json_t **ret)
{
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_json_ json_t *doc = NULL;
    struct ty_error e = {0};
    json_t *labels, *body;
    int r;

    r = train_flags_build_job(&a->tf, job_id, &doc, &e);
    if (r >= 0)
        r = absolute_job_dir(doc, &e);
    if (r >= 0 && (a->runtime || a->pytorch || a->mxnet)) {
        labels = json_object_get(doc, "labels");
        if (!json_is_object(labels)) {
            labels = json_object();
            json_object_set_new(doc, "labels", labels);
        }
        if (a->runtime)
            json_object_set_new(labels, "trainyard-runtime", json_string(a->runtime));
        if (a->pytorch)
            json_object_set_new(labels, "trainyard-pytorch-env", json_string("true"));
        if (a->mxnet)
            json_object_set_new(labels, "trainyard-mxnet-env", json_string("true"));
    }
    /* The shortest scheduling.maxWaitTime is the service's setting
     * (--shortest-max-wait-time): it decides, not the CLI. */
    if (r >= 0)
        r = ty_job_accept_wait(doc, 1000000, &job, &e);
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return -1;
    }
    body = json_object();
    json_object_set_new(body, "jobId", json_string(job->job_id));
    if (json_object_size(job->labels) > 0)
        json_object_set(body, "labels", job->labels);
    json_object_set(body, "trainingInput", job->training_input);
    *ret = body;
    return 0;
}

/* Parse the flags and build the request body. Returns -1 to go on, with *job_id (in argv) and
 * *body, else the exit status (the error printed). */
static int parse_submit(int argc,
                        char **argv,
                        struct submit_args *a,
                        struct api_settings *settings,
                        const char **job_id,
                        json_t **body)
{
    static const char *const help[] = {usage, train_flags_help, "\n", jobs_global_help, NULL};
    _cleanup_free_ struct option *longopts = train_flags_options(own_options);
    int split = train_flags_split_user_args(&a->tf, argc, argv);
    int first, rc;

    rc = jobs_parse_args(PATH, split, argv, longopts, help, settings, on_opt, a, &first);
    if (rc >= 0)
        return rc;
    if (a->stream_logs && a->async) {
        cli_error(PATH, "--async and --stream-logs cannot be used together");
        return TY_EXIT_USAGE;
    }
    *job_id = jobs_job_arg(PATH, split, argv, first);
    if (!*job_id || build_job(a, *job_id, body) < 0)
        return TY_EXIT_USAGE;
    if (a->async) /* as gcloud says it */
        cli_warning("The --async flag is deprecated: submitting without waiting is the default, "
                    "so it can be left out. To wait for the job, pass --stream-logs.");
    return -1;
}

/* The job on stdout: the whole resource with --format, else gcloud's brief form. */
static void print_job(const struct submit_args *a, const json_t *job)
{
    if (a->format)
        jobs_print_job(PATH, job, a->format, NULL);
    else
        print_brief(job);
}

/* gcloud's words for a job left running. */
static void print_follow_up(const char *job_id)
{
    fprintf(stderr,
            "Your job is still active. You may view the status of your job with the "
            "command\n\n  $ trainyard jobs describe %s\n\nor continue streaming the logs "
            "with the command\n\n  $ trainyard jobs stream-logs %s\n",
            job_id,
            job_id);
}

/* --stream-logs: the logs on stderr (as gcloud) until the job ends, then the final job on
 * stdout. Ctrl-C stops the logs (the job runs on): the job as it is then, exit 1 unless it
 * had SUCCEEDED, as gcloud. Returns the exit status: 0 only when the job SUCCEEDED. */
static int stream_until_end(struct api_client *c, const struct submit_args *a, const char *job_id)
{
    struct jobs_logs_opts lo = {.out = stderr};
    _cleanup_free_ char *path = NULL;
    _cleanup_json_ json_t *job = NULL;
    struct ty_error e = {0};
    const char *state, *msg;
    int r;

    jobs_catch_interrupt();
    r = jobs_stream_logs(c, job_id, &lo, &e);
    if (api_interrupted) {
        jobs_release_interrupt();
        fprintf(stderr, "Received keyboard interrupt.\n\n");
        print_follow_up(job_id);
        path = api_jobs_path(c, job_id, NULL);
        if (api_call(c, "GET", path, NULL, &job, &e) < 0)
            return jobs_fail(PATH, &e);
        print_job(a, job);
        state = ty_json_str(job, "state");
        return state && strcmp(state, "SUCCEEDED") == 0 ? TY_EXIT_OK : TY_EXIT_FAILED;
    }
    jobs_release_interrupt();
    if (r < 0)
        return jobs_fail(PATH, &e);
    path = api_jobs_path(c, job_id, NULL);
    if (api_call(c, "GET", path, NULL, &job, &e) < 0)
        return jobs_fail(PATH, &e);
    print_job(a, job);
    fflush(stdout);
    state = ty_json_str(job, "state");
    if (state && strcmp(state, "SUCCEEDED") == 0)
        return TY_EXIT_OK;
    msg = ty_json_str(job, "errorMessage");
    cli_error(PATH,
              "Job %s ended %s%s%s",
              job_id,
              state ? state : "in an unknown state",
              msg && *msg ? ": " : "",
              msg && *msg ? msg : "");
    return TY_EXIT_FAILED;
}

static int submit_training(int argc, char **argv)
{
    struct submit_args a = {0};
    struct api_settings settings = {0};
    _cleanup_json_ json_t *body = NULL;
    _cleanup_json_ json_t *job = NULL;
    _cleanup_free_ char *path = NULL;
    struct api_client *c = NULL;
    struct ty_error e = {0};
    const char *job_id = NULL;
    int rc;

    rc = parse_submit(argc, argv, &a, &settings, &job_id, &body);
    if (rc >= 0)
        goto out;
    c = jobs_client(PATH, &settings);
    if (!c) {
        rc = TY_EXIT_USAGE;
        goto out;
    }
    path = api_jobs_path(c, NULL, NULL);
    if (api_call(c, "POST", path, body, &job, &e) < 0) {
        rc = jobs_fail(PATH, &e);
        goto out;
    }
    fprintf(stderr, "Job [%s] submitted successfully.\n", job_id);
    if (a.stream_logs) {
        rc = stream_until_end(c, &a, job_id);
        goto out;
    }
    print_follow_up(job_id);
    print_job(&a, job);
    rc = TY_EXIT_OK;
out:
    api_client_free(c);
    train_flags_release(&a.tf);
    ty_format_free(a.format);
    return rc;
}

const struct cli_command cmd_jobs_submit_training = {
    .path = "jobs submit training",
    .summary = "submit a training job to trainyardd",
    .run = submit_training,
};
