/* SPDX-License-Identifier: Apache-2.0
 * supervisor.c: `trainyard-supervisor supervise-job STATE_DIR SEQ GRACE_USEC`, the process that
 * runs one job of the service from claim to final state, with the same library code as `trainyard
 * local train`. It records every state change in the store (which the API reads) and every log file
 * in the store's index; SIGTERM (sent by jobs.cancel) cancels, a second one kills at once. It runs
 * in its own session, so it and the job outlive a trainyardd that is restarted or killed; a new
 * trainyardd watches it again.
 *
 * Also `trainyard-supervisor sweep-containers`: removes containers and networks whose supervising
 * process is gone (run by the daemon after a supervisor died). */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "container.h"
#include "jobrun.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "parse.h"
#include "proctree.h"
#include "runtimes.h"
#include "sigpipe.h"
#include "slurm.h"
#include "spec.h"
#include "statedir.h"
#include "store.h"
#include "study.h"
#include "supervise.h"
#include "timeutil.h"

struct run {
    int sig_fd;
    struct ty_store *store;
    struct ty_job_row *row;
    struct ty_jobrun *jr; /* NULL until it is created */
    /* What a must_record() write records: */
    enum ty_job_state rec_state;
    const char *rec_msg;
};

/* How long a supervisor keeps trying to claim its job while the store refuses writes (busy
 * under load, full, failing): after that it exits without having run anything, and the
 * daemon starts a new one (no attempt is spent on it). */
#define CLAIM_PATIENCE_USEC (60 * INT64_C(1000000))
/* How long it keeps trying to record the outcome it decided before it tears the replicas
 * down anyway (the final state, recorded after, is tried for as long as it takes). */
#define OUTCOME_PATIENCE_USEC (30 * INT64_C(1000000))

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

/* Run @fn (a store write of @run) until it succeeds, the job is final (-EALREADY), gone
 * (-ENOENT) or the write is refused for good (-EINVAL), or @patience_usec (0: no end) has
 * passed. A store that is busy under load, full or failing does not make the supervisor lose
 * what it must record: the daemon reads the job's end from the store alone, and a supervisor
 * that exits before its job's final state is written reads as lost (an internal error, the
 * job run again). It sleeps between tries (20 ms, doubling to 2 s): whatever it records next
 * waits for this. Returns fn's last result. */
static int must_record(struct run *run,
                       const char *what,
                       int (*fn)(struct run *run, struct ty_error *e),
                       int64_t patience_usec)
{
    int64_t deadline = patience_usec > 0 ? ty_mono_usec() + patience_usec : INT64_MAX;
    long delay_ms = 20;

    for (unsigned tries = 1;; tries++) {
        struct ty_error e = {0};
        struct timespec ts;
        int r = fn(run, &e);

        if (r >= 0 || r == -EALREADY || r == -ENOENT || r == -EINVAL) {
            if (r >= 0 && tries > 1)
                diag(run->row, "recorded %s after %u tries", what, tries);
            return r;
        }
        if (tries == 1 || tries % 30 == 0)
            diag(run->row,
                 "cannot record %s (try %u; %s): %s",
                 what,
                 tries,
                 ty_mono_usec() < deadline ? "trying again" : "giving up",
                 ty_error_msg(&e));
        if (ty_mono_usec() >= deadline)
            return r;
        ts = (struct timespec){delay_ms / 1000, (delay_ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        delay_ms = delay_ms < 1000 ? delay_ms * 2 : 2000;
    }
}

static int write_state(struct run *run, struct ty_error *e)
{
    return ty_store_set_state(
        run->store, run->row->seq, run->rec_state, ty_now_usec(), run->rec_msg, e);
}

static int write_outcome(struct run *run, struct ty_error *e)
{
    return ty_store_set_outcome(run->store, run->row->seq, run->rec_state, run->rec_msg, e);
}

static int write_claim(struct run *run, struct ty_error *e)
{
    return ty_store_claim_job(
        run->store, run->row->seq, getpid(), (int64_t)ty_proc_start_time(getpid()), e);
}

/* Record job state @st (final: with @msg as its errorMessage), for as long as it takes when
 * it is final. */
static void record_state(struct run *run, enum ty_job_state st, const char *msg)
{
    char what[64];

    run->rec_state = st;
    run->rec_msg = msg;
    (void)snprintf(what, sizeof(what), "state %s", ty_job_state_name(st));
    (void)must_record(run, what, write_state, ty_job_state_is_final(st) ? 0 : 1);
}

/* Record the plain job's attempt status now (attemptStatus of the API; tuning jobs' trials
 * carry theirs in trainingOutput). */
static void record_attempt_status(struct run *run)
{
    struct ty_error e = {0};
    _cleanup_json_ json_t *as = run->jr ? ty_jobrun_attempt_status(run->jr) : NULL;

    if (as && ty_store_set_attempt_status(run->store, run->row->seq, as, &e) < 0)
        diag(run->row, "cannot record the attempt status: %s", ty_error_msg(&e));
}

/* The attempt or a replica's restart count changed. */
static void on_progress(void *ctx)
{
    record_attempt_status(ctx);
}

/* The outcome is decided; the replicas are being stopped. Recorded so that if this process
 * dies before the final state, the daemon ends the job with it rather than run it again. */
static void on_outcome(void *ctx, enum ty_job_state st, const char *error)
{
    struct run *run = ctx;

    run->rec_state = st;
    run->rec_msg = error;
    (void)must_record(run, "the outcome", write_outcome, OUTCOME_PATIENCE_USEC);
}

static void on_state(void *ctx, enum ty_job_state st)
{
    struct run *run = ctx;
    struct ty_error e = {0};
    const char *msg = ty_job_state_is_final(st) && run->jr ? ty_jobrun_error(run->jr) : NULL;

    if (run->jr && ty_jobrun_study(run->jr) && ty_job_state_is_final(st)) {
        _cleanup_json_ json_t *out = ty_jobrun_training_output(run->jr);
        if (ty_store_set_output(run->store, run->row->seq, out, &e) < 0)
            diag(run->row, "cannot record the trials: %s", ty_error_msg(&e));
    }
    if (ty_job_state_is_final(st))
        record_attempt_status(run); /* the attempt that ended the job, as it ended */
    record_state(run, st, msg);
}

/* The job waits in its runtime's queue (Slurm): describe shows why. */
static void on_queued(void *ctx, const char *reason)
{
    struct run *run = ctx;
    struct ty_error e = {0};
    if (ty_store_set_state_reason(run->store, run->row->seq, reason, &e) < 0)
        diag(run->row, "cannot record the queue reason: %s", ty_error_msg(&e));
}

/* A trial started or ended: the stored trainingOutput follows. */
static void on_trial(void *ctx, const struct ty_study_trial *trial)
{
    struct run *run = ctx;
    struct ty_error e = {0};
    _cleanup_json_ json_t *out = ty_jobrun_training_output(run->jr);

    (void)trial;
    if (ty_store_set_output(run->store, run->row->seq, out, &e) < 0)
        diag(run->row, "cannot record the trials: %s", ty_error_msg(&e));
}

static void on_new_file(void *ctx, const char *task, const char *trial, const char *path)
{
    struct run *run = ctx;
    struct ty_error e = {0};
    if (ty_store_add_log_file(run->store, run->row->seq, task, trial, path, &e) < 0)
        diag(run->row, "cannot index log file %s: %s", path, ty_error_msg(&e));
}

/* SIGTERM (jobs.cancel) and SIGINT cancel; returns the signal pipe's read end. */
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

/* The first line of a supervisor that replaces a lost one (the daemon logged why). */
static void announce_replacement(struct run *run, const struct ty_supervisor_options *opts)
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
                       "its trials run anew.",
                       (long long)run->row->internal_retries);
    ty_run_log(opts, run, TY_SEV_INFO, "service", NULL, as ? attempt : 0, msg, strlen(msg));
}

/* Fail the job before it ran (nothing to clean up). */
static int fail_early(struct run *run, const char *msg)
{
    diag(run->row, "%s", msg);
    record_state(run, TY_STATE_FAILED, msg);
    return 1;
}

static int run_job(struct run *run, const char *state_dir, int64_t grace)
{
    struct ty_job_row *row = run->row;
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_json_ json_t *previous = NULL; /* the job resumePreviousJobId names */
    _cleanup_free_ char *dir = NULL;
    _cleanup_free_ char *logdir = NULL;
    struct ty_supervisor_options opts = {.grace_usec = grace};
    const struct ty_runtime_ops *runtime = NULL;
    struct ty_joblog *log = NULL;
    struct ty_loop *loop = NULL;
    struct ty_error e = {0};
    char msg[TY_ERROR_MSG_MAX + 64];
    int r;

    doc = json_pack("{s:s,s:O,s:O}",
                    "jobId",
                    row->job_id,
                    "labels",
                    row->labels,
                    "trainingInput",
                    row->training_input);
    if (ty_job_from_json(doc, &job, &e) < 0) {
        (void)snprintf(msg, sizeof(msg), "The stored job is no longer valid: %s", ty_error_msg(&e));
        return fail_early(run, msg);
    }
    if (ty_runtime_lookup(row->runtime, &runtime, &e) < 0) {
        (void)snprintf(msg, sizeof(msg), "The stored job cannot run here: %s", ty_error_msg(&e));
        return fail_early(run, msg);
    }
    /* A job run again after an internal error keeps its directory (checkpoints resume). */
    if (row->internal_retries > 0)
        r = ty_statedir_reopen_job(state_dir, row->project, row->job_id, &dir, &e);
    else
        r = ty_statedir_claim_job(state_dir, row->project, row->job_id, &dir, &e);
    if (r < 0) {
        (void)snprintf(msg, sizeof(msg), "Cannot create the job's directory: %s", ty_error_msg(&e));
        return fail_early(run, msg);
    }
    logdir = xasprintf("%s/logs", dir);
    if (ty_joblog_open(logdir, &log, &e) < 0) {
        (void)snprintf(msg, sizeof(msg), "Cannot open the job's logs: %s", ty_error_msg(&e));
        return fail_early(run, msg);
    }
    ty_joblog_on_new_file(log, on_new_file, run);
    opts.env.pytorch = json_is_true(json_object_get(row->options, "pytorchEnv"));
    opts.log = log;
    opts.on_queued = on_queued;
    opts.on_progress = on_progress;
    opts.on_outcome = on_outcome;
    opts.first_attempt = row->first_attempt > 0 ? (unsigned)row->first_attempt : 0;
    opts.running_since_usec = row->start_usec; /* after an internal error: maxRunningTime */
    loop = ty_loop_new();
    if (job->hp && job->hp->resume_job_id) {
        /* Checked when the job was created; if it is gone now, ty_study_new says so. */
        _cleanup_(ty_job_row_freep) struct ty_job_row *prev = NULL;
        if (ty_store_get_job(run->store, row->project, job->hp->resume_job_id, &prev, NULL) >= 0)
            previous = ty_job_row_to_json(prev);
    }
    {
        struct ty_jobrun_options jo = {
            .runtime = runtime,
            .state_dir = dir,
            .sup = opts,
            .on_state = on_state,
            .on_trial = on_trial,
            .previous_job = previous,
            .ctx = run,
        };
        r = ty_jobrun_new(loop, job, &jo, &run->jr, &e);
    }
    if (r >= 0) {
        record_attempt_status(run); /* the attempt starts: recorded before anything runs */
        if (row->internal_retries > 0)
            announce_replacement(run, &opts);
    }
    if (r >= 0 && (r = ty_jobrun_cancel_on(run->jr, run->sig_fd)) < 0)
        (void)ty_error_set(&e, -r, "cannot watch for signals: %s", strerror(-r));
    if (r >= 0)
        r = ty_jobrun_run(run->jr, &e);
    if (r < 0) {
        (void)snprintf(
            msg, sizeof(msg), "Internal error while supervising the job: %s", ty_error_msg(&e));
        diag(row, "%s", msg);
        record_state(run, TY_STATE_FAILED, msg);
    }
    ty_jobrun_free(run->jr);
    run->jr = NULL;
    ty_loop_free(loop);
    ty_joblog_close(log);
    return r < 0 ? 1 : 0;
}

/* Open the store at @db and read job @seq into @run, trying again for CLAIM_PATIENCE_USEC
 * while the store refuses (busy, as when another process migrates or holds the lock). */
static int open_job(const char *db, int64_t seq, struct run *run, struct ty_error *e)
{
    int64_t deadline = ty_mono_usec() + CLAIM_PATIENCE_USEC;
    struct timespec ts = {0, 200 * 1000000};
    int r;

    for (;;) {
        r = ty_store_open(db, &run->store, e);
        if (r >= 0) {
            r = ty_store_get_job_by_seq(run->store, seq, &run->row, e);
            if (r >= 0)
                return 0;
            ty_store_close(run->store);
            run->store = NULL;
        }
        if (r == -ENOENT || ty_mono_usec() >= deadline)
            return r;
        (void)nanosleep(&ts, NULL);
    }
}

int tys_supervise_main(int argc, char **argv)
{
    _cleanup_free_ char *db = NULL;
    struct run run = {0};
    struct ty_error e = {0};
    int64_t seq, grace;
    int r, rc;

    if (argc != 4 || ty_parse_int64(argv[2], 1, INT64_MAX, &seq) < 0 ||
        ty_parse_int64(argv[3], 0, INT64_MAX, &grace) < 0) {
        fprintf(stderr,
                "trainyardd supervise-job: internal command; usage: supervise-job STATE_DIR SEQ "
                "GRACE_USEC\n");
        return 2;
    }
    db = xasprintf("%s/%s", argv[1], TY_STORE_FILE);
    if ((r = open_job(db, seq, &run, &e)) < 0) {
        fprintf(
            stderr, "trainyardd supervise-job: job %lld: %s\n", (long long)seq, ty_error_msg(&e));
        /* Not claimed, nothing ran: EX_TEMPFAIL tells the daemon to start a new supervisor. */
        return r == -ENOENT ? 1 : EX_TEMPFAIL;
    }
    r = must_record(&run, "the claim of the job", write_claim, CLAIM_PATIENCE_USEC);
    if (r >= 0) {
        /* The row read before the claim may be stale: the job may have been released for a
         * new supervisor after an internal error since (internal_retries, first_attempt). */
        struct ty_job_row *now = NULL;
        if (ty_store_get_job_by_seq(run.store, seq, &now, &e) == 0) {
            ty_job_row_free(run.row);
            run.row = now;
        } else {
            diag(run.row, "cannot read the job again after claiming it: %s", ty_error_msg(&e));
        }
    }
    if (r < 0) {
        /* Claimed by another supervisor, or cancelled while queued: nothing to do. The store
         * refused for a minute (logged): the job was not claimed and nothing of it ran; the
         * daemon reads EX_TEMPFAIL so and starts a new supervisor without counting a retry. */
        rc = r == -EALREADY ? 0 : r == -ENOENT ? 1 : EX_TEMPFAIL;
    } else if ((run.sig_fd = install_signals()) < 0) {
        rc = fail_early(&run, "Cannot set up signal handling for the job's supervisor.");
    } else {
        rc = run_job(&run, argv[1], grace);
    }
    ty_job_row_free(run.row);
    ty_store_close(run.store);
    return rc;
}

int tys_sweep_containers_main(int argc, char **argv)
{
    struct ty_error e = {0};
    int r;

    r = ty_container_sweep(&e);
    if (r > 0)
        fprintf(stderr, "trainyardd sweep-containers: removed %d container(s) and network(s)\n", r);
    else if (r < 0)
        fprintf(stderr, "trainyardd sweep-containers: %s\n", ty_error_msg(&e));
    return r < 0 ? 1 : 0;
}

int tys_sweep_slurm_main(int argc, char **argv)
{
    struct ty_error e = {0};
    int n;

    if (argc != 2) {
        fprintf(stderr, "usage: trainyard-supervisor sweep-slurm KEY\n");
        return 2;
    }
    n = ty_slurm_sweep(argv[1], &e);
    if (n < 0) {
        fprintf(stderr, "trainyardd sweep-slurm: %s\n", ty_error_msg(&e));
        return 1;
    }
    if (n > 0)
        fprintf(stderr, "trainyardd sweep-slurm: cancelled %d Slurm job(s)\n", n);
    return 0;
}
