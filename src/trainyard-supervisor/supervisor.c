/* SPDX-License-Identifier: Apache-2.0
 * supervisor.c: `trainyard-supervisor supervise-job [--run-as=USER] [--grant=JSON] STATE_DIR SEQ
 * GRACE_USEC`, the process that
 * runs one job of the service from claim to final state, with the same library code as `trainyard
 * local train`. It records every state change in the store (which the API reads) and every log file
 * in the store's index; SIGTERM (sent by jobs.cancel) cancels, a second one kills at once (one
 * sent from outside, while the job is not CANCELLING, ends it as if killed). It runs
 * in its own session, so it and the job outlive a trainyardd that is restarted or killed; a new
 * trainyardd watches it again. With --run-as=USER the process runtime runs the replicas as
 * that user (its uid, gid and groups); the supervisor itself stays root, and so do the job's
 * cgroups, logs and state. With --grant (what the scheduler gave the job: trials at once, GPU
 * devices) the GPU locks are inherited as fds 3, 4, ... and held until this process
 * exits, the replicas get those GPUs, the grant is recorded when the job is claimed and the log
 * says when the job was admitted and what it was given. scheduling.maxWaitTime: a job that has
 * not started by createTime + maxWaitTime (images still pulled, or queued in Slurm) is cancelled.
 *
 * Also `trainyard-supervisor sweep-containers`: removes containers and networks whose supervising
 * process is gone (run by the daemon after a supervisor died). */
#include "supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "container.h"
#include "gpudev.h"
#include "grant.h"
#include "jobenv.h"
#include "jobrun.h"
#include "json.h"
#include "logs.h"
#include "loop.h"
#include "macro.h"
#include "parse.h"
#include "proctree.h"
#include "resources.h"
#include "runtime.h"
#include "runtimes.h"
#include "sigpipe.h"
#include "slurm.h"
#include "spec.h"
#include "statedir.h"
#include "store.h"
#include "strv.h"
#include "study.h"
#include "supervise.h"
#include "timeutil.h"

/* ---- the run ---- */

/* A log file the store has not indexed yet (its write failed). */
struct unindexed {
    char *task, *trial, *path;
};

struct run {
    int sig_fd;
    struct ty_store *store;
    struct ty_job_row *row;
    struct ty_jobrun *jr; /* NULL until it is created */
    struct ty_loop *loop; /* the run's loop, while it runs */
    /* Writes the store refused because its filesystem is full or failing (docs/service.md,
     * "When the disk fills"): made again every RETRY_USEC until they succeed, in this order,
     * so that nothing the API shows is lost and the final state is never skipped. */
    struct unindexed *files;
    size_t nfiles;
    bool want_attempt, want_output, want_reason, want_outcome, want_state;
    char *reason;
    enum ty_job_state outcome, state;
    char *outcome_msg, *state_msg;
    uint64_t retry_timer;
    uint64_t replica_timer; /* gathers replica changes into one write (REPLICA_USEC) */
    bool told;              /* the diagnostics said once that writes wait */
};

/* How often refused writes are made again while the job runs, and at most between tries once
 * it has ended (the supervisor then only waits to record the final state). */
#define RETRY_USEC (1000 * INT64_C(1000))
/* Replicas' starts and ends are recorded at most this often: a job of 1,000 replicas makes
 * one write per quarter second as they start, not 2,000. */
#define REPLICA_USEC (250 * INT64_C(1000))

static void diag(const struct ty_job_row *row, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void diag(const struct ty_job_row *row, const char *fmt, ...)
{
    char ts[40];
    va_list ap;
    fprintf(stderr,
            "%s supervise-job %s/%s [%d]: ",
            ty_rfc3339(ty_now_usec(), 3, ts, sizeof(ts)),
            row->project,
            row->job_id,
            (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* One refused write (@r, @e) of @what: true when it is to be made again (the store's filesystem
 * failed), false when it is done or can never be (logged). */
static bool refused(struct run *run, int r, const struct ty_error *e, const char *what)
{
    if (r >= 0 || e->code == EALREADY)
        return false;
    if (!ty_store_fs_error(e->code)) {
        diag(run->row, "cannot record %s: %s", what, ty_error_msg(e));
        return false;
    }
    if (!run->told)
        diag(run->row, "cannot record %s yet, retrying: %s", what, ty_error_msg(e));
    run->told = true;
    return true;
}

static void on_retry(struct ty_loop *loop, void *ctx);

/* Make every pending write, in order. Returns true when none is left; otherwise, while the run
 * is on its loop, a timer tries again. */
static bool flush(struct run *run)
{
    struct ty_error e = {0};
    int64_t seq = run->row->seq;

    while (run->nfiles) {
        struct unindexed *f = &run->files[run->nfiles - 1];
        if (refused(run,
                    ty_store_add_log_file(run->store, seq, f->task, f->trial, f->path, &e),
                    &e,
                    "a log file"))
            goto later;
        free(f->task);
        free(f->trial);
        free(f->path);
        run->nfiles--;
    }
    if (run->want_attempt) {
        _cleanup_json_ json_t *as = run->jr ? ty_jobrun_attempt_status(run->jr) : NULL;
        if (as && refused(run,
                          ty_store_set_attempt_status(run->store, seq, as, &e),
                          &e,
                          "the attempt status"))
            goto later;
        run->want_attempt = false;
    }
    if (run->want_output) {
        _cleanup_json_ json_t *out = run->jr ? ty_jobrun_training_output(run->jr) : NULL;
        if (out && refused(run, ty_store_set_output(run->store, seq, out, &e), &e, "the trials"))
            goto later;
        run->want_output = false;
    }
    if (run->want_reason) {
        if (refused(run,
                    ty_store_set_state_reason(run->store, seq, run->reason, &e),
                    &e,
                    "the queue reason"))
            goto later;
        run->want_reason = false;
    }
    if (run->want_outcome) {
        if (refused(run,
                    ty_store_set_outcome(run->store, seq, run->outcome, run->outcome_msg, &e),
                    &e,
                    "the outcome"))
            goto later;
        run->want_outcome = false;
    }
    if (run->want_state) {
        if (refused(
                run,
                ty_store_set_state(run->store, seq, run->state, ty_now_usec(), run->state_msg, &e),
                &e,
                "the job's state"))
            goto later;
        run->want_state = false;
    }
    if (run->told)
        diag(run->row, "the store accepts writes again: every pending one is recorded");
    run->told = false;
    return true;
later:
    if (run->loop && !run->retry_timer)
        run->retry_timer = ty_loop_add_timer(run->loop, ty_mono_usec() + RETRY_USEC, on_retry, run);
    return false;
}

static void on_retry(struct ty_loop *loop, void *ctx)
{
    struct run *run = ctx;
    run->retry_timer = 0;
    (void)flush(run);
}

/* The attempt or a replica's restart count changed. */
static void on_progress(void *ctx)
{
    struct run *run = ctx;
    run->want_attempt = true;
    (void)flush(run);
}

static void on_replica_timer(struct ty_loop *loop, void *ctx)
{
    struct run *run = ctx;
    run->replica_timer = 0;
    run->want_attempt = true;
    (void)flush(run);
}

/* A replica started or ended: attemptStatus.replicas follows, within REPLICA_USEC. */
static void on_replica(void *ctx)
{
    struct run *run = ctx;
    if (run->loop && !run->replica_timer)
        run->replica_timer =
            ty_loop_add_timer(run->loop, ty_mono_usec() + REPLICA_USEC, on_replica_timer, run);
}

/* The outcome is decided; the replicas are being stopped. Recorded so that if this process
 * dies before the final state, the daemon ends the job with it rather than run it again. */
static void on_outcome(void *ctx, enum ty_job_state st, const char *error)
{
    struct run *run = ctx;

    run->want_outcome = true;
    run->outcome = st;
    ty_replace_str(&run->outcome_msg, error ? error : "");
    (void)flush(run);
}

static void on_state(void *ctx, enum ty_job_state st)
{
    struct run *run = ctx;
    const char *msg = ty_job_state_is_final(st) && run->jr ? ty_jobrun_error(run->jr) : NULL;

    if (run->jr && ty_jobrun_study(run->jr) && ty_job_state_is_final(st))
        run->want_output = true;
    if (ty_job_state_is_final(st))
        run->want_attempt = true; /* the attempt that ended the job, as it ended */
    run->want_state = true;
    run->state = st;
    free(run->state_msg);
    run->state_msg = msg ? xstrdup(msg) : NULL;
    (void)flush(run);
}

/* The job waits in its runtime's queue (Slurm): describe shows why. */
static void on_queued(void *ctx, const char *reason)
{
    struct run *run = ctx;
    run->want_reason = true;
    ty_replace_str(&run->reason, reason ? reason : "");
    (void)flush(run);
}

/* A trial started or ended: the stored trainingOutput follows. */
static void on_trial(void *ctx, const struct ty_study_trial *trial)
{
    struct run *run = ctx;
    (void)trial;
    run->want_output = true;
    (void)flush(run);
}

static void on_new_file(void *ctx, const char *task, const char *trial, const char *path)
{
    struct run *run = ctx;

    run->files = xreallocarray(run->files, run->nfiles + 1, sizeof(*run->files));
    run->files[run->nfiles++] =
        (struct unindexed){xstrdup(task), trial ? xstrdup(trial) : NULL, xstrdup(path)};
    (void)flush(run);
}

/* After the run: wait until the final state and what goes with it are recorded. Giving up
 * would leave the job to the daemon's internal-error path, which would run it again. */
static void flush_final(struct run *run)
{
    int64_t delay = 100 * INT64_C(1000);

    run->loop = NULL;
    while (!flush(run)) {
        struct timespec ts = {(time_t)(delay / 1000000), (long)(delay % 1000000) * 1000};
        (void)nanosleep(&ts, NULL);
        delay = delay * 2 > RETRY_USEC * 5 ? RETRY_USEC * 5 : delay * 2;
    }
    free(run->files);
    free(run->reason);
    free(run->outcome_msg);
    free(run->state_msg);
}

/* SIGTERM and SIGINT come through the signal pipe (on_signal); returns its read end. */
static int install_signals(void)
{
    static const int sigs[] = {SIGTERM, SIGINT};
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigset_t set;
    int fd;

    (void)sigaction(SIGHUP, &ign, NULL);
    (void)sigaction(SIGPIPE, &ign, NULL);
    fd = ty_sigpipe_install(sigs, TY_ARRAY_SIZE(sigs));
    if (fd < 0)
        return fd;
    /* The daemon started us with these blocked: a cancel sent before now is delivered here. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    return sigprocmask(SIG_UNBLOCK, &set, NULL) < 0 ? -errno : fd;
}

/* A SIGTERM or SIGINT (@fd: the signal pipe). The daemon records CANCELLING before it sends
 * jobs.cancel's SIGTERM, so one that comes while the store says otherwise was sent from
 * outside trainyard (an administrator's kill; the machine shutting down, whose last SIGTERM
 * reaches the supervisors a stopped service left running): not the user's cancel. The
 * supervisor then ends at once, by that signal, as a killed one would: the daemon counts an
 * internal error and runs the job again (the replicas end with it: the process runtime's
 * PR_SET_PDEATHSIG, the daemon's sweep). A store that cannot be read counts as a cancel. */
static void on_signal(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct run *run = data;
    unsigned char sig;

    while (read(fd, &sig, 1) == 1) {
        _cleanup_(ty_job_row_freep) struct ty_job_row *now = NULL;
        struct ty_error e = {0};

        if (ty_store_get_job_by_seq(run->store, run->row->seq, &now, &e) == 0 &&
            now->state != TY_STATE_CANCELLING && !ty_job_state_is_final(now->state)) {
            diag(run->row,
                 "SIG%s from outside trainyard while the job is %s (not jobs.cancel): ending "
                 "as if killed, so that the service runs the job again",
                 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
                 ty_job_state_name(now->state));
            (void)signal(sig, SIG_DFL);
            (void)raise(sig);
        }
        ty_jobrun_cancel(run->jr);
    }
}

/* For a study started again after an internal error: the highest trial id the lost run used,
 * in its recorded trainingOutput or as a trial directory it made (trials/<id> in the job's
 * directory @dir, made before the trial was recorded), for the new study to number its trials
 * after (ty_study_options.after_trial). */
static uint64_t lost_trials(const struct ty_job_row *row, const char *dir)
{
    json_t *trials = json_object_get(row->training_output, "trials"), *t;
    _cleanup_free_ char *path = xasprintf("%s/trials", dir);
    DIR *d = opendir(path);
    uint64_t last = 0;
    size_t i;
    int64_t id;

    json_array_foreach(trials, i, t)
    {
        if (ty_parse_int64(ty_json_str(t, "trialId"), 1, INT64_MAX, &id) == 0 &&
            (uint64_t)id > last)
            last = (uint64_t)id;
    }
    for (struct dirent *de; d && (de = readdir(d));)
        if (ty_parse_int64(de->d_name, 1, INT64_MAX, &id) == 0 && (uint64_t)id > last)
            last = (uint64_t)id;
    if (d)
        closedir(d);
    return last;
}

/* The first line of a supervisor that replaces a lost one (the daemon logged why). */
static void announce_replacement(struct run *run,
                                 const struct ty_supervisor_options *opts,
                                 uint64_t after_trial)
{
    _cleanup_json_ json_t *as = ty_jobrun_attempt_status(run->jr);
    char msg[256];
    unsigned attempt = opts->first_attempt ? opts->first_attempt : 1;

    if (as)
        (void)snprintf(msg,
                       sizeof(msg),
                       "Starting attempt %u of %lld after an internal error (internal retry "
                       "%lld).",
                       attempt,
                       (long long)json_integer_value(json_object_get(as, "maxAttempts")),
                       (long long)run->row->internal_retries);
    else /* a study: its own lines have no attempt, its trials' lines theirs */
        (void)snprintf(msg,
                       sizeof(msg),
                       "Starting the job again after an internal error (internal retry %lld): "
                       "its trials run anew, numbered from %llu.",
                       (long long)run->row->internal_retries,
                       (unsigned long long)after_trial + 1);
    ty_run_log(opts, run, TY_SEV_INFO, "service", NULL, as ? attempt : 0, msg, strlen(msg));
}

/* The job cannot start for want of room (or of a working filesystem) in the state directory:
 * give the claim back (the daemon does too, if this fails) and exit TY_EXIT_UNCLAIMED, so the
 * daemon starts the job again once there is room instead of failing it. */
static int give_back(struct run *run, const char *what, const struct ty_error *why)
{
    diag(run->row, "cannot %s, giving the job back to the queue: %s", what, ty_error_msg(why));
    (void)ty_store_unclaim_job(run->store, run->row->seq, getpid(), NULL, NULL);
    return TY_EXIT_UNCLAIMED;
}

/* Fail the job before it ran (nothing to clean up). */
static int fail_early(struct run *run, const char *msg)
{
    diag(run->row, "%s", msg);
    (void)ty_store_set_state(run->store, run->row->seq, TY_STATE_FAILED, ty_now_usec(), msg, NULL);
    return 1;
}

/* Did the service make job @row's directory when it accepted it, to write the first lines
 * of its log (api-jobs.c)? Not for a job an earlier version accepted. */
static bool job_announced(const struct ty_job_row *row)
{
    return json_is_true(json_object_get(row->options, "announced"));
}

/* Are those lines in its directory @dir? Not when writing them failed (a full disk) or the
 * service was killed before it could: the supervisor writes them then. */
static bool opening_written(const struct ty_job_row *row, const char *dir)
{
    _cleanup_free_ char *logs = NULL, *path = NULL;
    struct stat st;

    if (!job_announced(row))
        return false;
    logs = xasprintf("%s/logs", dir);
    path = ty_joblog_file_path(logs, "service", NULL);
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* Make the stored job of @run ready to run: its document and runtime read back, its directory
 * under @state_dir (kept from the attempt before after an internal error) and its logs opened.
 * Returns 0, or -1 when the job ended here (failed, or given back for want of room) with
 * the supervisor's exit status in *rc. */
static int open_run(struct run *run,
                    const char *state_dir,
                    struct ty_job **jobp,
                    const struct ty_runtime_ops **runtimep,
                    char **dirp,
                    struct ty_joblog **logp,
                    int *rc)
{
    struct ty_job_row *row = run->row;
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *logdir = NULL;
    struct ty_error e = {0};
    char msg[TY_ERROR_MSG_MAX + 64];
    bool made;
    int r;

    doc = json_pack("{s:s,s:O,s:O}",
                    "jobId",
                    row->job_id,
                    "labels",
                    row->labels,
                    "trainingInput",
                    row->training_input);
    if (ty_job_from_json(doc, jobp, &e) < 0) {
        (void)snprintf(msg, sizeof(msg), "The stored job is no longer valid: %s", ty_error_msg(&e));
        *rc = fail_early(run, msg);
        return -1;
    }
    if (ty_runtime_lookup(row->runtime, runtimep, &e) < 0) {
        (void)snprintf(msg, sizeof(msg), "The stored job cannot run here: %s", ty_error_msg(&e));
        *rc = fail_early(run, msg);
        return -1;
    }
    /* A job run again after an internal error keeps its directory (checkpoints resume); the
     * service made it when it accepted the job, to write the first lines of its log (and a
     * create of the same id, refused, may have made an empty one for a job it did not). */
    if (row->internal_retries > 0 || job_announced(row))
        r = ty_statedir_reopen_job(state_dir, row->project, row->job_id, dirp, &e);
    else
        r = ty_statedir_claim_new_job(state_dir, row->project, row->job_id, dirp, &made, &e);
    if (r < 0 && ty_store_fs_error(e.code)) {
        *rc = give_back(run, "create the job's directory", &e);
        return -1;
    }
    if (r < 0) {
        (void)snprintf(msg, sizeof(msg), "Cannot create the job's directory: %s", ty_error_msg(&e));
        *rc = fail_early(run, msg);
        return -1;
    }
    logdir = xasprintf("%s/logs", *dirp);
    if (ty_joblog_open(logdir, logp, &e) < 0) {
        (void)snprintf(msg, sizeof(msg), "Cannot open the job's logs: %s", ty_error_msg(&e));
        *rc = fail_early(run, msg);
        return -1;
    }
    return 0;
}

/* ty_study_resume_chain's lookup: a job of the run's project in the store, or NULL. */
static json_t *lookup_stored(void *ctx, const char *job_id)
{
    struct run *run = ctx;
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;

    if (ty_store_get_job(run->store, run->row->project, job_id, &row, NULL) < 0)
        return NULL;
    return ty_job_row_to_json(row);
}

/* The supervisor options every job of the service runs with, and those its row @run->row
 * gives (its run options, its attempt, its RUNNING start), into @opts: the log @log in its
 * directory @dir, the replicas' environment @base_env. */
static void set_row_options(struct run *run,
                            const char *dir,
                            struct ty_joblog *log,
                            char **base_env,
                            struct ty_supervisor_options *opts)
{
    const struct ty_job_row *row = run->row;

    opts->announced = opening_written(row, dir);
    opts->env.pytorch = json_is_true(json_object_get(row->options, "pytorchEnv"));
    opts->env.mxnet = json_is_true(json_object_get(row->options, "mxnetEnv"));
    opts->base_env = base_env;
    opts->path_setting = TY_JOB_PATH_SETTING;
    opts->start_in_job_dir = true; /* not the daemon's directory: the jobDir, else / */
    opts->job_dir_no_links = true; /* jobs may plant links where the next one's jobDir is */
    opts->log = log;
    opts->on_queued = on_queued;
    opts->on_progress = on_progress;
    opts->on_replica = on_replica;
    opts->on_outcome = on_outcome;
    /* After an internal error the next attempt; a study's trials are new ones, from 1 (the
     * study's restart counts in internalRetries alone). */
    if (!json_object_get(row->training_input, "hyperparameters"))
        opts->first_attempt = row->first_attempt > 0 ? (unsigned)row->first_attempt : 0;
    opts->running_since_usec = row->start_usec; /* after an internal error: maxRunningTime */
}

static int run_job(struct run *run,
                   const char *state_dir,
                   int64_t grace,
                   const char *run_as,
                   const struct tys_grant *grant)
{
    struct ty_job_row *row = run->row;
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_json_ json_t *previous = NULL; /* the job resumePreviousJobId names */
    _cleanup_json_ json_t *earlier = NULL;  /* ... and those it resumed in turn */
    _cleanup_free_ char *dir = NULL;
    struct ty_supervisor_options opts = {.grace_usec = grace, .run_as = run_as};
    /* The replicas' environment is the service's defined one, not this process's (which is
     * the daemon's): PATH from its job_path setting (docs/service.md). */
    const char *job_path = getenv(TY_JOB_PATH_ENV);
    _cleanup_strv_free_ char **base_env =
        ty_job_base_env(job_path && *job_path ? job_path : TY_JOB_PATH_DEFAULT);
    const struct ty_runtime_ops *runtime = NULL;
    struct ty_joblog *log = NULL;
    struct ty_loop *loop = NULL;
    struct ty_error e = {0};
    struct ty_run_gpus gpus;
    char msg[TY_ERROR_MSG_MAX + 64], admitted[1024];
    uint64_t after_trial = 0;
    int r;

    if (open_run(run, state_dir, &job, &runtime, &dir, &log, &r) < 0)
        return r;
    if (grant->given) {
        tys_grant_run_gpus(grant, &gpus);
        opts.gpus = &gpus;
    }
    /* Once, when the job first starts (not again after an internal error); a runtime with
     * its own queue (Slurm) admits for itself. */
    if (row->internal_retries == 0 && (grant->given || !runtime->queues))
        opts.admitted =
            tys_grant_admitted(grant, job, row->create_usec, admitted, sizeof(admitted));
    /* A job that has run once has started: maxWaitTime is over for it. */
    if (row->start_usec == 0)
        opts.wait_deadline_usec = ty_run_wait_deadline(job, row->create_usec);
    ty_joblog_on_new_file(log, on_new_file, run);
    set_row_options(run, dir, log, base_env, &opts);
    loop = ty_loop_new();
    run->loop = loop;
    /* Checked when the job was created; if it is gone now, ty_study_new says so. */
    if (job->hp && job->hp->resume_job_id &&
        (previous = lookup_stored(run, job->hp->resume_job_id)))
        earlier = ty_study_resume_chain(previous, lookup_stored, run);
    if (job->hp && row->internal_retries > 0)
        after_trial = lost_trials(row, dir);
    {
        struct ty_jobrun_options jo = {
            .runtime = runtime,
            .state_dir = dir,
            .sup = opts,
            .on_state = on_state,
            .on_trial = on_trial,
            .previous_job = previous,
            .earlier_jobs = earlier,
            .after_trial = after_trial,
            .ctx = run,
        };
        r = ty_jobrun_new(loop, job, &jo, &run->jr, &e);
    }
    if (r >= 0) {
        on_progress(run); /* the attempt starts: recorded before anything runs */
        if (row->internal_retries > 0)
            announce_replacement(run, &opts, after_trial);
    }
    if (r >= 0 && (r = ty_loop_add_fd(loop, run->sig_fd, POLLIN, on_signal, run)) < 0)
        (void)ty_error_set(&e, -r, "cannot watch for signals: %s", strerror(-r));
    /* Cancelled between the claim and now: the daemon's SIGTERM is in the pipe already, but
     * one that did not come (the daemon died after the store's change) is sent here. Either
     * is acted on before any replica is launched (supervise.c launches from the loop). */
    if (r >= 0 && row->state == TY_STATE_CANCELLING &&
        poll(&(struct pollfd){.fd = run->sig_fd, .events = POLLIN}, 1, 0) == 0)
        (void)raise(SIGTERM);
    if (r >= 0)
        r = ty_jobrun_run(run->jr, &e);
    if (r < 0) {
        (void)snprintf(
            msg, sizeof(msg), "Internal error while supervising the job: %s", ty_error_msg(&e));
        diag(row, "%s", msg);
        run->want_state = true;
        run->state = TY_STATE_FAILED;
        ty_replace_str(&run->state_msg, msg);
    }
    if (run->retry_timer)
        ty_loop_cancel_timer(loop, run->retry_timer);
    if (run->replica_timer)
        ty_loop_cancel_timer(loop, run->replica_timer);
    run->retry_timer = run->replica_timer = 0;
    flush_final(run);
    ty_jobrun_free(run->jr);
    run->jr = NULL;
    ty_loop_free(loop);
    ty_joblog_close(log);
    return r < 0 ? 1 : 0;
}

int tys_supervise_main(int argc, char **argv)
{
    _cleanup_free_ char *db = NULL;
    struct run run = {0};
    struct ty_error e = {0};
    struct tys_grant grant = {0};
    const char *run_as = NULL;
    char missing[512];
    size_t n_missing = 0;
    int64_t seq, grace;
    int r, rc;

    /* Options first: --run-as=USER, --grant=JSON. */
    while (argc > 1 && strncmp(argv[1], "--", 2) == 0) {
        if (strncmp(argv[1], "--run-as=", 9) == 0 && argv[1][9]) {
            run_as = argv[1] + 9;
        } else if (strncmp(argv[1], "--grant=", 8) == 0 && !grant.given) {
            if (tys_grant_read(argv[1] + 8, &grant, &e) < 0) {
                fprintf(stderr, "trainyardd supervise-job: %s\n", ty_error_msg(&e));
                return 2;
            }
            /* At once: no replica may inherit a lock, and none may be closed. */
            n_missing = tys_grant_hold_fds(&grant, missing, sizeof(missing));
        } else {
            fprintf(stderr, "trainyardd supervise-job: unknown option '%s'\n", argv[1]);
            return 2;
        }
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    if (argc != 4 || ty_parse_int64(argv[2], 1, INT64_MAX, &seq) < 0 ||
        ty_parse_int64(argv[3], 0, INT64_MAX, &grace) < 0) {
        fprintf(stderr,
                "trainyardd supervise-job: internal command; usage: supervise-job "
                "[--run-as=USER] [--grant=JSON] STATE_DIR SEQ GRACE_USEC\n");
        tys_grant_release(&grant);
        return 2;
    }
    db = xasprintf("%s/%s", argv[1], TY_STORE_FILE);
    r = ty_store_open(db, &run.store, &e);
    if (r < 0) {
        fprintf(stderr, "trainyardd supervise-job: %s\n", ty_error_msg(&e));
        tys_grant_release(&grant);
        return ty_store_fs_error(e.code) ? TY_EXIT_UNCLAIMED : 1;
    }
    r = ty_store_get_job_by_seq(run.store, seq, &run.row, &e);
    if (r < 0) {
        fprintf(
            stderr, "trainyardd supervise-job: job %lld: %s\n", (long long)seq, ty_error_msg(&e));
        ty_store_close(run.store);
        tys_grant_release(&grant);
        return ty_store_fs_error(e.code) ? TY_EXIT_UNCLAIMED : 1;
    }
    if (n_missing > 0)
        diag(run.row,
             "the GPU locks of the grant are not all open (%s): the job runs, but those "
             "devices are not held for it",
             missing);
    r = ty_store_claim_job(
        run.store, seq, getpid(), (int64_t)ty_proc_start_time(getpid()), grant.json, &e);
    if (r == 0) {
        /* The row read before the claim may be stale: the job may have been released for a
         * new supervisor after an internal error since (internal_retries, first_attempt). */
        struct ty_job_row *now = NULL;
        struct ty_error e2 = {0};
        if (ty_store_get_job_by_seq(run.store, seq, &now, &e2) == 0) {
            ty_job_row_free(run.row);
            run.row = now;
        } else {
            diag(run.row, "cannot read the job again after claiming it: %s", ty_error_msg(&e2));
        }
    }
    if (r < 0 && ty_store_fs_error(e.code)) {
        diag(run.row, "cannot claim the job, leaving it queued: %s", ty_error_msg(&e));
        rc = TY_EXIT_UNCLAIMED;
    } else if (r < 0) {
        /* Claimed by another supervisor, or cancelled while queued: nothing to do. */
        rc = r == -EALREADY ? 0 : 1;
        if (rc)
            diag(run.row, "cannot claim the job: %s", ty_error_msg(&e));
    } else if ((run.sig_fd = install_signals()) < 0) {
        rc = fail_early(&run, "Cannot set up signal handling for the job's supervisor.");
    } else if (run_as && !getpwnam(run_as)) {
        char msg[512];
        (void)snprintf(msg,
                       sizeof(msg),
                       "Cannot run the job's replicas as user '%s' (--run-as): no such user.",
                       run_as);
        rc = fail_early(&run, msg);
    } else {
        rc = run_job(&run, argv[1], grace, run_as, &grant);
    }
    ty_job_row_free(run.row);
    ty_store_close(run.store);
    tys_grant_release(&grant);
    return rc;
}
