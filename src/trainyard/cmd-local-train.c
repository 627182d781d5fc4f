/* SPDX-License-Identifier: Apache-2.0
 * cmd-local-train.c: `trainyard local train [JOB_ID] [flags] [-- USER_ARGS]`: runs a whole
 * job in the foreground with the library (no daemon): validates it, starts every replica
 * with the contract environment, streams their labelled logs, and exits 0 only when the job
 * SUCCEEDED. Ctrl-C (or SIGTERM) cancels; a second Ctrl-C kills at once. A job with
 * trainingInput.hyperparameters runs its trials through the study runner (study.h) and ends
 * with a table of the trials. A job that needs GPUs runs with this machine's devices locked for
 * it, waiting while other jobs hold them (local-gpus.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accept.h"
#include "alloc.h"
#include "cli.h"
#include "clusterenv.h"
#include "fdutil.h"
#include "format.h"
#include "hypertune.h"
#include "jobrun.h"
#include "jobs.h"
#include "json.h"
#include "live-out.h"
#include "local-dryrun.h"
#include "local-gpus.h"
#include "local-previous.h"
#include "macro.h"
#include "parse.h"
#include "runtimes.h"
#include "sigpipe.h"
#include "spec.h"
#include "statedir.h"
#include "statemode.h"
#include "strv.h"
#include "study.h"
#include "supervise.h"
#include "timeutil.h"
#include "utf8.h"

#define PATH "local.train"

enum {
    O_RUNTIME = 1,
    O_PYTORCH_ENV,
    O_MXNET_ENV,
    O_DRY_RUN,
    O_GRACE,
    O_STATE_DIR,
    O_HELP,
};

static const struct option own_options[] = {
    {"runtime", required_argument, NULL, O_RUNTIME},
    {"pytorch-env", no_argument, NULL, O_PYTORCH_ENV},
    {"mxnet-env", no_argument, NULL, O_MXNET_ENV},
    {"dry-run", no_argument, NULL, O_DRY_RUN},
    {"grace-period", required_argument, NULL, O_GRACE},
    {"state-dir", required_argument, NULL, O_STATE_DIR},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
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
    "  --runtime=NAME          where replicas run: process (local programs; the default),\n"
    "                          container (each replica in its image, through the Docker\n"
    "                          Engine API: Docker or Podman) or slurm (one Slurm job, a task\n"
    "                          per replica); default from $TRAINYARD_RUNTIME\n"
    "  --pytorch-env           also set MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (or label\n"
    "                          the job trainyard-pytorch-env=true)\n"
    "  --mxnet-env             also set DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT,\n"
    "                          DMLC_NUM_WORKER, DMLC_NUM_SERVER (or label the job\n"
    "                          trainyard-mxnet-env=true)\n"
    "  --grace-period=SECONDS  SIGTERM-to-SIGKILL time when replicas are stopped (default 10)\n"
    "  --state-dir=DIR         where runs and logs are kept (default $TRAINYARD_HOME, else\n"
    "                          $XDG_STATE_HOME/trainyard, else ~/.local/state/trainyard);\n"
    "                          read them with 'trainyard jobs list|describe|stream-logs\n"
    "                          --local'. A JOB_ID whose run failed, was cancelled or\n"
    "                          killed may be run again (the old run is kept as JOB_ID.1)\n"
    "  --dry-run               print every replica's command and environment as JSON; run\n"
    "                          nothing (a tuning job: its first trial's, with its arguments)\n"
    "  --quiet, -q             no prompts (trainyard asks nothing; taken for gcloud)\n"
    "  --verbosity=LEVEL       debug, info, warning (default), error: no WARNING lines,\n"
    "                          critical or none: no ERROR lines either\n"
    "  --help                  this text\n"
    "\n";

struct run_ctx {
    struct ty_jobrun *jr; /* NULL until it is created */
    const struct ty_job *job;
    char *job_record; /* <dir>/job.json */
    int64_t create_usec, start_usec, end_usec;
    enum ty_job_state state; /* the job's state now */
    bool dirty;              /* the record is behind: written before the run next waits */
    const char *error;       /* errorMessage of a job that ended before it ran, or NULL */
    struct ty_loop *loop;    /* the run's, while it runs (flush_record's timer) */
    int64_t written_usec;    /* monotonic time of the last write of job.json */
    uint64_t record_timer;   /* a write of job.json that waits for RECORD_EVERY_USEC */
};

/* job.json is replaced at most this often while the job runs (its end is written at once):
 * a job's first moments (PREPARING, the attempt, RUNNING, a short job's replicas ending) and
 * a tuning study's quick trials make one write, not one per turn of the run's loop. */
#define RECORD_EVERY_USEC (50 * INT64_C(1000))

/* The run's live output (live-out.h), from run_job's start to the run's end: a stdout nobody
 * reads stops neither the run's loop nor its signals. */
static struct live_out *live;

static void print_record(void *ctx, const struct ty_log_record *rec)
{
    char ts[40], trial[64] = "", attempt[32] = "";
    /* The whole message as the logs API and `jobs stream-logs` show it: a NUL byte or a byte
     * that is no UTF-8 is U+FFFD (a NUL once ended the line here). */
    _cleanup_free_ char *msg = ty_utf8_dup_replacing(rec->message, rec->len);
    (void)ctx;
    /* As `jobs stream-logs` shows them: a trial's lines say which trial, and from the second
     * attempt on every line says which attempt (docs/lifecycle.md). */
    if (rec->trial)
        (void)snprintf(trial, sizeof(trial), "[trial %s] ", rec->trial);
    if (rec->attempt > 1)
        (void)snprintf(attempt, sizeof(attempt), "[attempt %u] ", rec->attempt);
    _cleanup_free_ char *line = xasprintf("%s %-19s %s%s%s\n",
                                          ty_rfc3339(rec->time_usec, 3, ts, sizeof(ts)),
                                          rec->task,
                                          trial,
                                          attempt,
                                          msg);
    live_out_line(live, line, strlen(line));
}

/* ty_json_pretty of @j with the study's trainingOutput as its last member, byte for byte,
 * with each trial's text kept from the last write unless the trial changed: a study writes
 * its record at every change of any trial (bench/tuning-overhead). */
static char *with_training_output(const json_t *j, const struct ty_study *study)
{
    _cleanup_free_ char *head = ty_json_pretty(j);
    _cleanup_free_ char *out = ty_study_training_output_pretty(study, 1);
    size_t n = strlen(head);

    /* head ends "\n}" (j has members): the output goes before that */
    while (n > 0 && head[n - 1] != '}')
        n--;
    while (n > 1 && head[n - 2] == ' ')
        n--;
    if (n < 2 || head[n - 2] != '\n')
        return NULL;
    return xasprintf("%.*s,\n  \"trainingOutput\": %s\n}", (int)(n - 2), head, out);
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
    if (rc->jr && *ty_jobrun_error(rc->jr) && ty_job_state_is_final(st))
        json_object_set_new(j, "errorMessage", json_string(ty_jobrun_error(rc->jr)));
    else if (rc->error && ty_job_state_is_final(st))
        json_object_set_new(j, "errorMessage", json_string(rc->error));
    if (rc->jr && ty_jobrun_study(rc->jr))
        text = with_training_output(j, ty_jobrun_study(rc->jr));
    else if (rc->jr && st != TY_STATE_QUEUED)
        json_object_set_new(j, "attemptStatus", ty_jobrun_attempt_status(rc->jr));
    if (!text)
        text = ty_json_pretty(j);
    tmp = xasprintf("%s.tmp", rc->job_record);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, TY_STATE_FILE_MODE);
    if (fd < 0)
        return;
    if (ty_write_all(fd, text, strlen(text)) == 0 && ty_write_all(fd, "\n", 1) == 0 &&
        close(fd) == 0)
        (void)rename(tmp, rc->job_record);
    else
        (void)unlink(tmp);
    rc->written_usec = ty_mono_usec();
}

/* Write job.json now if it is behind. */
static void flush_record_now(struct run_ctx *rc)
{
    if (rc->dirty)
        write_record(rc, rc->state);
    rc->dirty = false;
}

/* The flush's timer: its only work is to wake the loop, whose next turn writes. */
static void on_record_timer(struct ty_loop *loop, void *ctx)
{
    struct run_ctx *rc = ctx;
    (void)loop;
    rc->record_timer = 0;
}

/* Before the run's loop waits (ty_jobrun_options.before_wait): write the changes of the turns
 * since the last write, the end at once, others once RECORD_EVERY_USEC has passed since the
 * last write (a timer wakes the loop for it). Each replacement of job.json costs the
 * filesystem a flush of the new file (ext4's auto_da_alloc); a launch's PREPARING, attempt
 * and RUNNING were three. */
static void flush_record(void *ctx)
{
    struct run_ctx *rc = ctx;
    int64_t due = rc->written_usec + RECORD_EVERY_USEC;

    if (!rc->dirty)
        return;
    if (rc->loop && !ty_job_state_is_final(rc->state) && ty_mono_usec() < due) {
        if (!rc->record_timer)
            rc->record_timer = ty_loop_add_timer(rc->loop, due, on_record_timer, rc);
        return;
    }
    flush_record_now(rc);
}

static void on_state(void *ctx, enum ty_job_state st)
{
    struct run_ctx *rc = ctx;
    if (st == TY_STATE_RUNNING)
        rc->start_usec = ty_now_usec();
    if (ty_job_state_is_final(st))
        rc->end_usec = ty_now_usec();
    rc->state = st;
    rc->dirty = true;
}

/* A replica was restarted or the job retried: job.json's attemptStatus follows. */
static void on_progress(void *ctx)
{
    struct run_ctx *rc = ctx;
    if (rc->jr)
        rc->dirty = true;
}

/* A trial started or ended: job.json's trainingOutput follows. */
static void on_trial(void *ctx, const struct ty_study_trial *trial)
{
    struct run_ctx *rc = ctx;
    (void)trial;
    rc->dirty = true;
}

/* Ctrl-C, SIGTERM and SIGHUP cancel the job; SIGHUP not when it was ignored as trainyard
 * started (`nohup`: the run outlives its terminal). SIGINT is handled even then: a script's
 * background job starts with it ignored, and `kill -INT` of one cancels it. Returns the signal
 * pipe's read end. */
static int install_signals(void)
{
    int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction ign = {.sa_handler = SIG_IGN}, was;
    size_t n = TY_ARRAY_SIZE(sigs);

    if (sigaction(SIGHUP, NULL, &was) == 0 && was.sa_handler == SIG_IGN)
        n--; /* SIGHUP is the last */
    (void)sigaction(SIGPIPE, &ign, NULL);
    return ty_sigpipe_install(sigs, n);
}

/* local_<date>_<time>_<4 random hex digits>: a claim that finds one taken (runs started in
 * the same second) draws again (claim_run). */
static char *generate_job_id(void)
{
    char ts[40];
    int64_t now = ty_now_usec();
    static unsigned draws; /* without getrandom (a seccomp filter): differ within a ms */
    uint16_t draw;

    if (getrandom(&draw, sizeof(draw), GRND_NONBLOCK) != (ssize_t)sizeof(draw))
        draw = (uint16_t)((now / 1000) ^ getpid() ^ (++draws * 40503u));
    ty_rfc3339(now, 0, ts, sizeof(ts)); /* 2026-11-30T09:00:00Z */
    return xasprintf("local_%.4s%.2s%.2s_%.2s%.2s%.2s_%04x",
                     ts,
                     ts + 5,
                     ts + 8,
                     ts + 11,
                     ts + 14,
                     ts + 17,
                     (unsigned)draw);
}

/* The trials table at the end of a tuning job: best first (as trainingOutput), then each
 * hyperparameter in the spec's order; trials stopped early are marked. Fitted to the terminal
 * as `jobs describe --summarize` is (80 columns when stdout is none): the columns that do not
 * fit go on to a table below, each starting with TRIAL. */
static void print_trials(const struct ty_job *job, const struct ty_study *st)
{
    size_t n = ty_study_n_trials(st), ncols = 3 + job->hp->n_params;
    const struct ty_hp_spec *hp = job->hp;
    _cleanup_free_ const struct ty_study_trial **v = xcalloc(n ? n : 1, sizeof(*v));
    _cleanup_free_ const char **head = xcalloc(ncols, sizeof(*head));
    struct ty_table_style style = {.max_width = jobs_term_width(), .repeat = 1};
    struct ty_table *t;
    bool any_stopped = false;

    if (n == 0) /* a resumed grid the earlier trials covered: the log says so */
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = ty_study_trial(st, i);
    ty_study_sort(v, n, hp->maximize);
    head[0] = "TRIAL", head[1] = "STATE", head[2] = "OBJECTIVE";
    for (size_t k = 0; k < hp->n_params; k++)
        head[3 + k] = hp->params[k].name;
    t = ty_table_new(ncols, head);
    for (size_t i = 0; i < n; i++) {
        char **row = xcalloc(ncols + 1, sizeof(char *));
        row[0] = xstrdup(v[i]->trial_id);
        row[1] = xasprintf("%s%s", ty_job_state_name(v[i]->state), v[i]->stopped_early ? "*" : "");
        row[2] = v[i]->has_metric ? xasprintf("%.10g", v[i]->final.value) : xstrdup("-");
        for (size_t k = 0; k < hp->n_params; k++) {
            const json_t *val = json_object_get(v[i]->parameters, hp->params[k].name);
            row[3 + k] = val ? ty_study_value_string(val) : xstrdup("-");
        }
        any_stopped |= v[i]->stopped_early;
        ty_table_add(t, (const char *const *)row);
        ty_strv_free(row);
    }
    printf("\n");
    ty_table_print(t, stdout, &style);
    ty_table_free(t);
    if (any_stopped)
        printf(
            "* stopped early: behind the median of the completed trials (isTrialStoppedEarly)\n");
    printf("\n");
}

/* The job ended while it waited for GPUs (@w, @why): recorded and logged as the run would.
 * Returns the exit status. */
static int
ended_waiting(struct run_ctx *rc, const struct ty_supervisor_options *o, int w, const char *why)
{
    enum ty_job_state st = w == LOCAL_GPUS_ERROR ? TY_STATE_FAILED : TY_STATE_CANCELLED;

    rc->error = why;
    rc->end_usec = ty_now_usec();
    ty_run_announce(o, rc, NULL, 0, rc->job->job_id);
    if (st == TY_STATE_CANCELLED) /* as a run cancelled later says it */
        ty_run_log(o, rc, TY_SEV_INFO, "service", NULL, 0, "Job cancellation requested.", 27);
    ty_run_announce_result(o, rc, NULL, 0, st, why);
    write_record(rc, st);
    cli_error(PATH,
              "Job %s %s: %s",
              rc->job->job_id,
              st == TY_STATE_CANCELLED ? "was cancelled" : "failed",
              why);
    return TY_EXIT_FAILED;
}

/* Claim <state>/jobs/local/<job's id> for this run (statedir.h), saying where an earlier run
 * that did not succeed was moved. A @generated id is only ever a new directory: one taken
 * already (another run's) makes the job draw another id. Returns 0, or -1 after printing the
 * error. */
static int
claim_run(const char *state_dir, struct ty_job *job, bool generated, char **dir, int *lock_fd)
{
    _cleanup_free_ char *moved = NULL;
    struct ty_error e = {0};
    int r;

    for (int draws = 1;; draws++) {
        r = ty_statedir_claim_run(
            state_dir, job->job_id, dir, lock_fd, generated ? NULL : &moved, &e);
        if (r != -EEXIST || !generated)
            break;
        if (draws == 100) {
            e = (struct ty_error){0};
            r = ty_error_set(&e,
                             EEXIST,
                             "no free job id among 100 generated ones (the last: '%s'); name "
                             "the job",
                             job->job_id);
            break;
        }
        free(job->job_id);
        job->job_id = generate_job_id();
        e = (struct ty_error){0};
    }
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return -1;
    }
    if (moved)
        fprintf(
            stderr, "The earlier run of job %s did not succeed: kept as %s\n", job->job_id, moved);
    return 0;
}

/* The run itself, on a loop of its own, as supervisor options @opts say (its log, its GPUs),
 * cancelled by a signal read from @sig_fd; the job's directory is @dir. Says why a job that
 * did not succeed ended, prints a study's trials, and leaves job.json written. Returns the
 * job's final state. */
static enum ty_job_state run_on_loop(struct run_ctx *rc,
                                     const struct ty_runtime_ops *runtime,
                                     const char *dir,
                                     const struct local_previous *previous,
                                     const struct ty_supervisor_options *opts,
                                     int sig_fd)
{
    struct ty_loop *loop = ty_loop_new();
    struct ty_jobrun_options jo = {
        .runtime = runtime,
        .state_dir = dir,
        .sup = *opts,
        .on_state = on_state,
        .on_trial = on_trial,
        .before_wait = flush_record,
        .previous_job = previous->job,
        .earlier_jobs = previous->earlier,
        .ctx = rc,
    };
    struct ty_error e = {0};
    enum ty_job_state final;
    int r;

    rc->loop = loop;
    r = ty_jobrun_new(loop, rc->job, &jo, &rc->jr, &e);
    if (r >= 0 && (r = ty_jobrun_cancel_on(rc->jr, sig_fd)) < 0)
        (void)ty_error_set(&e, -r, "cannot watch for signals: %s", strerror(-r));
    if (r >= 0)
        r = ty_jobrun_run(rc->jr, &e);
    ty_loop_cancel_timer(loop, rc->record_timer);
    rc->record_timer = 0;
    rc->loop = NULL;
    flush_record_now(rc); /* a run that failed itself may have changes not yet written */
    live_out_end(live);   /* the run's lines before what is said of its end */
    live = NULL;
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        final = TY_STATE_FAILED;
    } else {
        final = ty_jobrun_state(rc->jr);
        if (ty_jobrun_study(rc->jr))
            print_trials(rc->job, ty_jobrun_study(rc->jr));
        if (final != TY_STATE_SUCCEEDED)
            cli_error(PATH,
                      "Job %s %s: %s",
                      rc->job->job_id,
                      final == TY_STATE_CANCELLED ? "was cancelled" : "failed",
                      ty_jobrun_error(rc->jr));
    }
    ty_jobrun_free(rc->jr);
    rc->jr = NULL;
    ty_loop_free(loop);
    return final;
}

static int run_job(struct ty_job *job,
                   bool id_generated,
                   const struct ty_runtime_ops *runtime,
                   const char *state_dir,
                   const struct local_previous *previous,
                   const struct ty_supervisor_options *base,
                   struct local_gpus *lg)
{
    struct ty_supervisor_options opts = *base;
    struct run_ctx rc = {.job = job, .create_usec = ty_now_usec()};
    _cleanup_free_ char *dir = NULL;
    /* Held (a record lock on run.lock) until this process ends: `jobs list --local` tells a
     * run that is going on from one killed before it recorded its end (statedir.h). */
    _cleanup_close_ int lock_fd = -EBADF;
    _cleanup_free_ char *logdir = NULL;
    struct ty_joblog *log = NULL;
    struct ty_error e = {0};
    enum ty_job_state final;
    char why[512];
    int sig_fd;
    int r;

    if (claim_run(state_dir, job, id_generated, &dir, &lock_fd) < 0)
        return TY_EXIT_USAGE;
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
    opts.log = log;
    live = live_out_start(STDOUT_FILENO);
    opts.on_log = print_record;
    opts.on_progress = on_progress;
    opts.wait_deadline_usec = ty_run_wait_deadline(job, rc.create_usec);
    r = local_gpus_acquire(lg, job, sig_fd, rc.create_usec, why, sizeof(why));
    if (r != LOCAL_GPUS_HELD) {
        r = ended_waiting(&rc, &opts, r, why);
        live_out_end(live);
        live = NULL;
        fprintf(stderr, "Logs: %s\n", logdir);
        ty_joblog_close(log);
        free(rc.job_record);
        return r;
    }
    if (lg->active) {
        opts.gpus = &lg->run;
        opts.admitted = lg->admitted;
    }
    final = run_on_loop(&rc, runtime, dir, previous, &opts, sig_fd);
    fprintf(stderr, "Logs: %s\n", logdir);
    ty_joblog_close(log);
    free(rc.job_record);
    return final == TY_STATE_SUCCEEDED ? TY_EXIT_OK : TY_EXIT_FAILED;
}

/* What `local train` was asked to do. */
struct local_args {
    struct train_flags tf;
    struct ty_supervisor_options opts; /* env.pytorch and grace_usec from the flags */
    const char *runtime;
    bool runtime_flag; /* runtime from --runtime (else TRAINYARD_RUNTIME or the default) */
    char *state_dir;   /* NULL: the default */
    char *job_id;      /* NULL: the config's, else generated */
    bool id_generated; /* neither the command line nor the config named the job */
    bool dry_run;
};

static void local_args_release(struct local_args *a)
{
    train_flags_release(&a->tf);
    free(a->state_dir);
    free(a->job_id);
}

/* One parsed option @c (a run flag or a training flag). Returns -1 to go on, else the exit
 * status (the error or the help printed). */
static int local_opt(struct local_args *a, int c, const char *arg, char **argv)
{
    struct ty_error e = {0};
    double secs;

    switch (c) {
    case O_RUNTIME:
        a->runtime = arg;
        a->runtime_flag = true;
        return -1;
    case O_PYTORCH_ENV:
        a->opts.env.pytorch = true;
        return -1;
    case O_MXNET_ENV:
        a->opts.env.mxnet = true;
        return -1;
    case O_DRY_RUN:
        a->dry_run = true;
        return -1;
    case O_GRACE:
        if (ty_parse_double(arg, &secs) < 0 || secs < 0 || secs > 86400) {
            cli_error(PATH, "--grace-period: expected seconds from 0 to 86400 (got '%s')", arg);
            return TY_EXIT_USAGE;
        }
        a->opts.grace_usec = (int64_t)(secs * 1e6);
        if (a->opts.grace_usec == 0)
            a->opts.grace_usec = 1;
        return -1;
    case O_STATE_DIR:
        if (!*arg) {
            cli_error(PATH,
                      "--state-dir: the directory is empty (leave the flag out for the "
                      "default: $TRAINYARD_HOME, else $XDG_STATE_HOME/trainyard, else "
                      "~/.local/state/trainyard)");
            return TY_EXIT_USAGE;
        }
        ty_replace_str(&a->state_dir, arg);
        return -1;
    case O_HELP:
        fputs(usage, stdout);
        fputs(train_flags_help, stdout);
        return TY_EXIT_OK;
    default:
        if (train_flags_apply(&a->tf, c, arg, &e) < 0) {
            cli_error(PATH, "%s", ty_error_msg(&e));
            return TY_EXIT_USAGE;
        }
        return -1;
    }
}

/* Parse the flags and the JOB_ID. Returns -1 to go on, else the exit status. */
static int parse_local(int argc, char **argv, struct local_args *a)
{
    _cleanup_free_ struct option *longopts = train_flags_options(own_options);
    int split = train_flags_split_user_args(&a->tf, argc, argv);
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = cli_getopt(split, argv, ":", longopts)) != -1) {
        if (c == ':' || c == '?' || c == CLI_FLAG_ABBREVIATED)
            return cli_flag_error(PATH, c, argv, longopts);
        rc = local_opt(a, c, optarg, argv);
        if (rc >= 0)
            return rc;
    }
    if (split - optind > 1) {
        cli_error(PATH,
                  "unexpected argument '%s' (only one JOB_ID; put program arguments "
                  "after --)",
                  argv[optind + 1]);
        return TY_EXIT_USAGE;
    }
    if (split - optind == 1)
        a->job_id = xstrdup(argv[optind]);
    return -1;
}

/* Build the job from the flags (a generated id when it has none) and check it, also against
 * the runtime. Returns 0 and *ret, or -1 after printing the error. */
/* A local jobDir that names something other than a directory cannot be made: a mistake of
 * the command line (exit 2), said before the run is created, not as its failure. Returns 0,
 * or -1 after printing the error. */
static int job_dir_usable(const struct ty_job *job)
{
    const char *dir = job->job_dir;
    struct stat st;

    if (!dir || !ty_job_dir_is_local(dir) || stat(dir, &st) < 0 || S_ISDIR(st.st_mode))
        return 0;
    cli_error(PATH, "trainingInput.jobDir: '%s' exists and is not a directory", dir);
    return -1;
}

static int build_local_job(struct local_args *a, struct ty_job **ret)
{
    _cleanup_json_ json_t *doc = NULL;
    struct ty_error e = {0};
    int r;

    r = train_flags_build_job(&a->tf, a->job_id, &doc, &e);
    if (r >= 0 && !json_object_get(doc, "jobId")) {
        _cleanup_free_ char *gen = generate_job_id();
        json_object_set_new(doc, "jobId", json_string(gen));
        a->id_generated = true;
    }
    if (r >= 0)
        r = ty_job_accept(doc, ret, &e);
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return -1;
    }
    if (ty_runtime_labels_check(*ret, &e) < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return -1;
    }
    if (ty_label_true(*ret, TY_LABEL_PYTORCH))
        a->opts.env.pytorch = true;
    if (ty_label_true(*ret, TY_LABEL_MXNET))
        a->opts.env.mxnet = true;
    r = ty_runtime_validate(a->runtime, *ret, &e);
    if (r < 0) {
        cli_error(PATH,
                  "%s%s",
                  ty_runtime_known(a->runtime) ? ""
                  : a->runtime_flag            ? "--runtime: "
                                               : "TRAINYARD_RUNTIME: ",
                  ty_error_msg(&e));
        return -1;
    }
    return job_dir_usable(*ret);
}

/* resumePreviousJobId: read and check the earlier jobs (local-previous.h). Returns 0, or -1
 * after printing the error. */
static int
load_previous(const struct local_args *a, const struct ty_job *job, struct local_previous *ret)
{
    struct ty_error e = {0};

    if (local_previous_load(a->state_dir, job, ret, &e) < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return -1;
    }
    return 0;
}

static int local_train(int argc, char **argv)
{
    const char *env_runtime = getenv("TRAINYARD_RUNTIME");
    struct local_args a = {.runtime = env_runtime && *env_runtime ? env_runtime : "process"};
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    struct local_gpus lg = {0};
    _cleanup_(local_previous_release) struct local_previous previous = {0};
    int rc;

    rc = parse_local(argc, argv, &a);
    if (rc >= 0)
        goto out;
    rc = TY_EXIT_USAGE;
    /* A thousand replicas hold more descriptors than the usual soft limit allows; the replicas
     * themselves get the original limit back. */
    (void)ty_nofile_raise();
    if (build_local_job(&a, &job) < 0)
        goto out;
    if (!a.state_dir)
        a.state_dir = ty_statedir_default();
    if (load_previous(&a, job, &previous) < 0)
        goto out;
    if (a.dry_run) {
        rc = local_dry_run(a.runtime, &a.opts.env, a.state_dir, job, &previous);
        goto out;
    }
    if (!a.state_dir) {
        cli_error(PATH, "no state directory: set --state-dir or TRAINYARD_HOME");
        goto out;
    }
    if (local_gpus_setup(&lg, job, a.runtime, a.state_dir) < 0)
        goto out;
    setvbuf(stdout, NULL, _IOLBF, 0);
    rc = run_job(
        job, a.id_generated, ty_runtime_find(a.runtime), a.state_dir, &previous, &a.opts, &lg);
out:
    local_gpus_release(&lg);
    local_args_release(&a);
    return rc;
}

const struct cli_command cmd_local_train = {
    .path = "local train",
    .summary = "run a training job on this machine, in the foreground",
    .run = local_train,
};
