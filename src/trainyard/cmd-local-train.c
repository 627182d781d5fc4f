/* SPDX-License-Identifier: Apache-2.0
 * cmd-local-train.c: `trainyard local train [JOB_ID] [flags] [-- USER_ARGS]`: runs a whole
 * job in the foreground with the library (no daemon): validates it, starts every replica
 * with the contract environment, streams their labelled logs, and exits 0 only when the job
 * SUCCEEDED. Ctrl-C (or SIGTERM) cancels; a second Ctrl-C kills at once. A job with
 * trainingInput.hyperparameters runs its trials through the study runner (study.h) and ends
 * with a table of the trials. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accept.h"
#include "alloc.h"
#include "cli.h"
#include "clusterenv.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "runtimes.h"
#include "sigpipe.h"
#include "spec.h"
#include "statedir.h"
#include "strv.h"
#include "study.h"
#include "supervise.h"
#include "timeutil.h"

#define PATH "local.train"

enum {
    O_RUNTIME = 1,
    O_PYTORCH_ENV,
    O_DRY_RUN,
    O_GRACE,
    O_STATE_DIR,
    O_HELP,
};

static const struct option own_options[] = {
    {"runtime", required_argument, NULL, O_RUNTIME},
    {"pytorch-env", no_argument, NULL, O_PYTORCH_ENV},
    {"dry-run", no_argument, NULL, O_DRY_RUN},
    {"grace-period", required_argument, NULL, O_GRACE},
    {"state-dir", required_argument, NULL, O_STATE_DIR},
    {"help", no_argument, NULL, O_HELP},
};

static const char usage[] =
    "Usage: trainyard local train [JOB_ID] [flags] [-- USER_ARGS...]\n"
    "\n"
    "Run a training job on this machine in the foreground: every replica (master, workers,\n"
    "parameter servers, evaluators) with CLUSTER_SPEC and TF_CONFIG, logs streamed with their\n"
    "task names. Exits 0 when the job SUCCEEDED, 1 when it FAILED or was CANCELLED (Ctrl-C),\n"
    "2 for usage or job-spec errors. Without JOB_ID a name is generated. A job with\n"
    "trainingInput.hyperparameters runs its trials (docs/tuning.md) and ends with a table.\n"
    "\n"
    "Run flags:\n"
    "  --runtime=NAME          where replicas run: process (local programs; the default)\n"
    "                          or container (each replica in its image, through the Docker\n"
    "                          Engine API: Docker or Podman); default from $TRAINYARD_RUNTIME\n"
    "  --pytorch-env           also set MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (or label\n"
    "                          the job trainyard-pytorch-env=true)\n"
    "  --grace-period=SECONDS  SIGTERM-to-SIGKILL time when replicas are stopped (default 10)\n"
    "  --state-dir=DIR         where logs are kept (default $TRAINYARD_HOME, else\n"
    "                          $XDG_STATE_HOME/trainyard, else ~/.local/state/trainyard)\n"
    "  --dry-run               print every replica's command and environment as JSON; run\n"
    "                          nothing (tuning jobs: without trial arguments)\n"
    "  --help                  this text\n"
    "\n";

struct run_ctx {
    struct ty_supervisor *sup;
    struct ty_study *study; /* tuning jobs, instead of sup */
    const struct ty_job *job;
    char *job_record; /* <dir>/job.json */
    int64_t create_usec, start_usec, end_usec;
    enum ty_job_state state; /* as last recorded */
};

static void print_record(void *ctx, const struct ty_log_record *rec)
{
    char ts[40];
    (void)ctx;
    if (rec->trial)
        printf("%s %-19s [trial %s] %.*s\n",
               ty_rfc3339(rec->time_usec, 3, ts, sizeof(ts)),
               rec->task,
               rec->trial,
               (int)rec->len,
               rec->message);
    else
        printf("%s %-19s %.*s\n",
               ty_rfc3339(rec->time_usec, 3, ts, sizeof(ts)),
               rec->task,
               (int)rec->len,
               rec->message);
}

/* Keep <dir>/job.json in the REST Job form, replaced atomically at each state change. */
static void write_record(struct run_ctx *rc, enum ty_job_state st)
{
    _cleanup_json_ json_t *j = json_object();
    _cleanup_free_ char *text = NULL;
    _cleanup_free_ char *tmp = NULL;
    char ts[40];
    int fd;

    json_object_set_new(j, "jobId", json_string(rc->job->job_id));
    json_object_set(j, "labels", rc->job->labels);
    json_object_set(j, "trainingInput", rc->job->training_input);
    json_object_set_new(j, "createTime", json_string(ty_rfc3339(rc->create_usec, 6, ts, 40)));
    if (rc->start_usec)
        json_object_set_new(j, "startTime", json_string(ty_rfc3339(rc->start_usec, 6, ts, 40)));
    if (rc->end_usec)
        json_object_set_new(j, "endTime", json_string(ty_rfc3339(rc->end_usec, 6, ts, 40)));
    rc->state = st;
    json_object_set_new(j, "state", json_string(ty_job_state_name(st)));
    if (rc->sup && *ty_supervisor_error(rc->sup) && ty_job_state_is_final(st))
        json_object_set_new(j, "errorMessage", json_string(ty_supervisor_error(rc->sup)));
    if (rc->study) {
        if (*ty_study_error(rc->study) && ty_job_state_is_final(st))
            json_object_set_new(j, "errorMessage", json_string(ty_study_error(rc->study)));
        json_object_set_new(j, "trainingOutput", ty_study_training_output(rc->study));
    }
    text = ty_json_pretty(j);
    tmp = xasprintf("%s.tmp", rc->job_record);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (ty_write_all(fd, text, strlen(text)) == 0 && ty_write_all(fd, "\n", 1) == 0 &&
        close(fd) == 0)
        (void)rename(tmp, rc->job_record);
    else
        (void)unlink(tmp);
}

static void on_state(void *ctx, enum ty_job_state st)
{
    struct run_ctx *rc = ctx;
    if (st == TY_STATE_RUNNING)
        rc->start_usec = ty_now_usec();
    if (ty_job_state_is_final(st))
        rc->end_usec = ty_now_usec();
    write_record(rc, st);
}

/* A trial started or ended: job.json's trainingOutput follows. */
static void on_trial(void *ctx, const struct ty_study_trial *trial)
{
    struct run_ctx *rc = ctx;
    (void)trial;
    write_record(rc, rc->state);
}

static void on_sig_pipe(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct run_ctx *rc = data;
    unsigned char c;
    while (read(fd, &c, 1) == 1) {
        if (rc->study)
            ty_study_cancel(rc->study);
        else if (rc->sup)
            ty_supervisor_cancel(rc->sup);
    }
}

/* Ctrl-C, SIGTERM and SIGHUP cancel the job; returns the signal pipe's read end. */
static int install_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction ign = {.sa_handler = SIG_IGN};

    (void)sigaction(SIGPIPE, &ign, NULL);
    return ty_sigpipe_install(sigs, TY_ARRAY_SIZE(sigs));
}

static char *generate_job_id(void)
{
    char ts[40];
    int64_t now = ty_now_usec();
    ty_rfc3339(now, 0, ts, sizeof(ts)); /* 2026-11-30T09:00:00Z */
    return xasprintf("local_%.4s%.2s%.2s_%.2s%.2s%.2s_%04x",
                     ts,
                     ts + 5,
                     ts + 8,
                     ts + 11,
                     ts + 14,
                     ts + 17,
                     (unsigned)((now / 1000) ^ getpid()) & 0xffff);
}

static bool label_true(const struct ty_job *job, const char *key)
{
    const char *v = ty_json_str(job->labels, key);
    return v && strcmp(v, "true") == 0;
}

/* The trials table at the end of a tuning job: best first (as trainingOutput), then each
 * hyperparameter in the spec's order; trials stopped early are marked. */
static void print_trials(const struct ty_job *job, const struct ty_study *st)
{
    size_t n = ty_study_n_trials(st);
    const struct ty_hp_spec *hp = job->hp;
    _cleanup_free_ const struct ty_study_trial **v = xcalloc(n ? n : 1, sizeof(*v));
    _cleanup_free_ int *width = xcalloc(hp->n_params ? hp->n_params : 1, sizeof(int));
    char ***cells = xcalloc(n ? n : 1, sizeof(char **));
    bool any_stopped = false;

    for (size_t i = 0; i < n; i++)
        v[i] = ty_study_trial(st, i);
    ty_study_sort(v, n, hp->maximize);
    for (size_t k = 0; k < hp->n_params; k++)
        width[k] = (int)strlen(hp->params[k].name);
    for (size_t i = 0; i < n; i++) {
        cells[i] = xcalloc(hp->n_params + 1, sizeof(char *));
        for (size_t k = 0; k < hp->n_params; k++) {
            const json_t *val = json_object_get(v[i]->parameters, hp->params[k].name);
            cells[i][k] = val ? ty_study_value_string(val) : xstrdup("-");
            if ((int)strlen(cells[i][k]) > width[k])
                width[k] = (int)strlen(cells[i][k]);
        }
    }
    printf("\n%-6s %-10s %-22s", "TRIAL", "STATE", "OBJECTIVE");
    for (size_t k = 0; k < hp->n_params; k++)
        printf(" %-*s", width[k], hp->params[k].name);
    printf("\n");
    for (size_t i = 0; i < n; i++) {
        char obj[32] = "-";
        if (v[i]->has_metric)
            (void)snprintf(obj, sizeof(obj), "%.10g", v[i]->final.value);
        char state[32];
        (void)snprintf(state,
                       sizeof(state),
                       "%s%s",
                       ty_job_state_name(v[i]->state),
                       v[i]->stopped_early ? "*" : "");
        any_stopped |= v[i]->stopped_early;
        printf("%-6s %-10s %-22s", v[i]->trial_id, state, obj);
        for (size_t k = 0; k < hp->n_params; k++)
            printf(" %-*s", width[k], cells[i][k]);
        printf("\n");
        ty_strv_free(cells[i]);
    }
    free(cells);
    if (any_stopped)
        printf(
            "* stopped early: behind the median of the completed trials (isTrialStoppedEarly)\n");
    printf("\n");
}

/* resumePreviousJobId: the earlier local job's record, <state>/jobs/local/<id>/job.json.
 * Returns 0 and *ret, or -errno with err naming the field. */
static int read_previous(const char *state_dir, const char *id, json_t **ret, struct ty_error *err)
{
    _cleanup_free_ char *path = xasprintf("%s/jobs/local/%s/job.json", state_dir, id);
    _cleanup_free_ char *text = NULL;
    struct ty_error e = {0};
    size_t len = 0;
    int r;

    r = ty_read_file(path, 64 * 1024 * 1024, &text, &len, &e);
    if (r == -ENOENT)
        return ty_error_set(err,
                            ENOENT,
                            "trainingInput.hyperparameters.resumePreviousJobId: no local job "
                            "'%s' (no %s)",
                            id,
                            path);
    if (r >= 0)
        r = ty_json_parse(text, len, ret, &e);
    if (r < 0)
        return ty_error_set(err,
                            -r,
                            "trainingInput.hyperparameters.resumePreviousJobId: cannot read "
                            "job '%s': %s",
                            id,
                            ty_error_msg(&e));
    return 0;
}

static int run_job(const struct ty_job *job,
                   const struct ty_runtime_ops *runtime,
                   const char *state_dir,
                   const json_t *previous,
                   const struct ty_supervisor_options *base)
{
    struct ty_supervisor_options opts = *base;
    struct run_ctx rc = {.job = job, .create_usec = ty_now_usec()};
    _cleanup_free_ char *dir = NULL;
    _cleanup_free_ char *logdir = NULL;
    struct ty_joblog *log = NULL;
    struct ty_loop *loop = NULL;
    struct ty_error e = {0};
    enum ty_job_state final;
    int sig_fd;
    int r;

    r = ty_statedir_claim_job(state_dir, "local", job->job_id, &dir, &e);
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return TY_EXIT_USAGE;
    }
    logdir = xasprintf("%s/logs", dir);
    rc.job_record = xasprintf("%s/job.json", dir);
    r = ty_joblog_open(logdir, &log, &e);
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        free(rc.job_record);
        return TY_EXIT_FAILED;
    }
    write_record(&rc, TY_STATE_QUEUED);
    sig_fd = install_signals();
    if (sig_fd < 0) {
        cli_error(PATH, "cannot set up signal handling: %s", strerror(errno));
        ty_joblog_close(log);
        free(rc.job_record);
        return TY_EXIT_FAILED;
    }
    loop = ty_loop_new();
    opts.log = log;
    opts.on_log = print_record;
    opts.on_state = on_state;
    opts.ctx = &rc;
    if (job->hp) {
        struct ty_study_options so = {
            .runtime = runtime,
            .state_dir = dir,
            .seed = ty_study_default_seed(job),
            .sup = opts,
            .previous_job = previous,
            .on_trial = on_trial,
            .on_state = on_state,
            .ctx = &rc,
        };
        r = ty_study_new(loop, job, &so, &rc.study, &e);
        if (r >= 0) {
            ty_loop_add_fd(loop, sig_fd, POLLIN, on_sig_pipe, &rc);
            r = ty_study_start(rc.study, &e);
        }
    } else {
        r = ty_supervisor_new(loop, runtime, job, NULL, NULL, &opts, &rc.sup, &e);
        if (r >= 0) {
            ty_loop_add_fd(loop, sig_fd, POLLIN, on_sig_pipe, &rc);
            r = ty_supervisor_start(rc.sup, &e);
        }
    }
    while (r >= 0 && !(rc.study ? ty_study_done(rc.study) : ty_supervisor_done(rc.sup))) {
        r = ty_loop_run_once(loop);
        if (r < 0)
            (void)ty_error_set(&e, -r, "event loop: %s", strerror(-r));
    }
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        final = TY_STATE_FAILED;
    } else {
        final = rc.study ? ty_study_state(rc.study) : ty_supervisor_state(rc.sup);
        if (rc.study)
            print_trials(job, rc.study);
        if (final != TY_STATE_SUCCEEDED)
            cli_error(PATH,
                      "Job %s %s: %s",
                      job->job_id,
                      final == TY_STATE_CANCELLED ? "was cancelled" : "failed",
                      rc.study ? ty_study_error(rc.study) : ty_supervisor_error(rc.sup));
    }
    fprintf(stderr, "Logs: %s\n", logdir);
    ty_study_free(rc.study);
    ty_supervisor_free(rc.sup);
    ty_loop_free(loop);
    ty_joblog_close(log);
    free(rc.job_record);
    return final == TY_STATE_SUCCEEDED ? TY_EXIT_OK : TY_EXIT_FAILED;
}

static int local_train(int argc, char **argv)
{
    _cleanup_free_ struct option *longopts = NULL;
    struct train_flags tf = {0};
    struct ty_supervisor_options opts = {0};
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_json_ json_t *previous = NULL;
    _cleanup_free_ char *job_id = NULL;
    _cleanup_free_ char *state_dir = NULL;
    const char *runtime = getenv("TRAINYARD_RUNTIME") && *getenv("TRAINYARD_RUNTIME")
                              ? getenv("TRAINYARD_RUNTIME")
                              : "process";
    bool dry_run = false;
    struct ty_error e = {0};
    int nopts = 0, split = argc, c, r, rc;

    /* Everything after "--" is USER_ARGS, untouched by option parsing. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            split = i;
            tf.have_user_args = true;
            tf.user_args = xcalloc(1, sizeof(char *));
            for (int k = i + 1; k < argc; k++)
                ty_strv_push(&tf.user_args, argv[k]);
            break;
        }
    }
    while (train_options[nopts].name)
        nopts++;
    longopts = xcalloc((size_t)nopts + TY_ARRAY_SIZE(own_options) + 1, sizeof(*longopts));
    memcpy(longopts, train_options, (size_t)nopts * sizeof(*longopts));
    memcpy(longopts + nopts, own_options, sizeof(own_options));

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(split, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case O_RUNTIME:
            runtime = optarg;
            break;
        case O_PYTORCH_ENV:
            opts.env.pytorch = true;
            break;
        case O_DRY_RUN:
            dry_run = true;
            break;
        case O_GRACE: {
            double secs;
            if (ty_parse_double(optarg, &secs) < 0 || secs < 0 || secs > 86400) {
                cli_error(
                    PATH, "--grace-period: expected seconds from 0 to 86400 (got '%s')", optarg);
                train_flags_release(&tf);
                return TY_EXIT_USAGE;
            }
            opts.grace_usec = (int64_t)(secs * 1e6);
            if (opts.grace_usec == 0)
                opts.grace_usec = 1;
            break;
        }
        case O_STATE_DIR:
            free(state_dir);
            state_dir = xstrdup(optarg);
            break;
        case O_HELP:
            fputs(usage, stdout);
            fputs(train_flags_help, stdout);
            train_flags_release(&tf);
            return TY_EXIT_OK;
        case ':':
            cli_error(PATH, "%s needs a value", argv[optind - 1]);
            train_flags_release(&tf);
            return TY_EXIT_USAGE;
        case '?':
            cli_error(PATH, "unknown flag '%s' (see --help)", argv[optind - 1]);
            train_flags_release(&tf);
            return TY_EXIT_USAGE;
        default:
            r = train_flags_apply(&tf, c, optarg, &e);
            if (r < 0) {
                cli_error(PATH, "%s", ty_error_msg(&e));
                train_flags_release(&tf);
                return TY_EXIT_USAGE;
            }
        }
    }
    if (split - optind > 1) {
        cli_error(PATH,
                  "unexpected argument '%s' (only one JOB_ID; put program arguments "
                  "after --)",
                  argv[optind + 1]);
        train_flags_release(&tf);
        return TY_EXIT_USAGE;
    }
    if (split - optind == 1)
        job_id = xstrdup(argv[optind]);

    r = train_flags_build_job(&tf, job_id, &doc, &e);
    train_flags_release(&tf);
    if (r >= 0 && !json_object_get(doc, "jobId")) {
        _cleanup_free_ char *gen = generate_job_id();
        json_object_set_new(doc, "jobId", json_string(gen));
    }
    if (r >= 0)
        r = ty_job_accept(doc, &job, &e);
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return TY_EXIT_USAGE;
    }
    if (label_true(job, "trainyard-pytorch-env"))
        opts.env.pytorch = true;
    r = ty_runtime_validate(runtime, job, &e);
    if (r < 0) {
        cli_error(PATH, "%s%s", ty_runtime_known(runtime) ? "" : "--runtime: ", ty_error_msg(&e));
        return TY_EXIT_USAGE;
    }

    if (!state_dir)
        state_dir = ty_statedir_default();
    if (job->hp && job->hp->resume_job_id) {
        r = state_dir ? read_previous(state_dir, job->hp->resume_job_id, &previous, &e)
                      : ty_error_set(&e, ENOENT, "no state directory to find the job to resume");
        if (r >= 0)
            r = ty_study_resume_check(job->hp, previous, &e);
        if (r < 0) {
            cli_error(PATH, "%s", ty_error_msg(&e));
            return TY_EXIT_USAGE;
        }
    }
    if (dry_run) {
        _cleanup_json_ json_t *out = NULL;
        _cleanup_free_ char *text = NULL;
        struct ty_trial_suggestion *trial = NULL;
        _cleanup_strv_free_ char **trial_args = NULL;

        r = 0;
        if (job->hp) {
            r = ty_study_first_trial(
                job, ty_study_default_seed(job), previous, &trial, &trial_args, &e);
            if (r >= 0) {
                _cleanup_free_ char *shown = ty_json_compact(trial->parameters);
                fprintf(stderr,
                        "Dry run of trial %s of up to %d, with %s.\n",
                        trial->trial_id,
                        job->hp->max_trials,
                        shown);
            }
        }
        if (r >= 0)
            r = ty_supervisor_dry_run(ty_runtime_find(runtime),
                                      job,
                                      trial ? trial->trial_id : NULL,
                                      trial_args,
                                      &opts.env,
                                      &out,
                                      &e);
        ty_trial_suggestions_free(trial, trial ? 1 : 0);
        if (r < 0) {
            cli_error(PATH, "%s", ty_error_msg(&e));
            return TY_EXIT_USAGE;
        }
        text = ty_json_pretty(out);
        puts(text);
        return TY_EXIT_OK;
    }
    if (!state_dir) {
        cli_error(PATH, "no state directory: set --state-dir or TRAINYARD_HOME");
        return TY_EXIT_USAGE;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    rc = run_job(job, ty_runtime_find(runtime), state_dir, previous, &opts);
    return rc;
}

const struct cli_command cmd_local_train = {
    .path = "local train",
    .summary = "run a training job on this machine, in the foreground",
    .run = local_train,
};
