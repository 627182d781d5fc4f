/* SPDX-License-Identifier: Apache-2.0
 * study.h: a hyperparameter-tuning job run on the caller's event loop: the tuner (tuner.h)
 * suggests trials, each trial is one whole run of the job's cluster (a ty_supervisor with the
 * trial's id, `--name=value` arguments, per-trial job dir and metric file), and the trials'
 * outcomes go back to the tuner until the study ends. docs/lifecycle.md, "Hyperparameter
 * tuning", describes the rules:
 *
 * - Up to maxParallelTrials trials run at once, and at most the trial slots the job was given
 *   (sup.gpus->trials); each running trial holds a slot (the lowest free one) and its GPUs
 *   until its run has been cleaned up. Every trial, failed or not, counts against maxTrials
 *   (GRID_SEARCH also ends when its grid is exhausted).
 * - scheduling.maxWaitTime (sup.wait_deadline_usec): a study none of whose trials is RUNNING
 *   by then is cancelled, with ty_run_wait_expired's errorMessage.
 * - scheduling.maxRunningTime is the whole job's, as AI Platform's: counted from its first
 *   trial RUNNING (or sup.running_since_usec, a run taking over), then every running trial is
 *   stopped (CANCELLED) and the job FAILS with ty_run_time_exceeded's errorMessage. Its
 *   trials have no limit of their own.
 * - Each trial's replicas report through cloudml-hypertune into the trial's own metric file,
 *   <state_dir>/trials/<trial>/output.metrics (CLOUD_ML_HP_METRIC_FILE in processes; the
 *   directory is mounted at /tmp/hypertune in containers), and get CLOUD_ML_HP_METRIC_TAG.
 *   The final metric is the last reported value of hyperparameterMetricTag.
 * - A trial that SUCCEEDED with a metric succeeds; one that SUCCEEDED without it, or FAILED,
 *   is a failed trial; one stopped by the job's cancellation is CANCELLED.
 * - maxFailedTrials N > 0: once N trials failed, no trial starts, the running ones end, and
 *   the job FAILS. maxFailedTrials 0 (unset): the job FAILS when the first
 *   min(maxTrials, TY_STUDY_DEFAULT_FAILURES) trials to end all failed.
 * - enableTrialEarlyStopping: every TY_STUDY_POLL_USEC the metric files of running trials are
 *   read and their reports fed to the median stopping rule (stoprule.h); a trial it stops is
 *   ended like a finished one (its replicas get SIGTERM) and SUCCEEDS with its last report as
 *   the final metric and isTrialStoppedEarly. Reports without a global_step are numbered by
 *   their order in the file.
 * - resumePreviousJobId: the earlier job's succeeded and failed trials inform the search
 *   (and, with early stopping, the median rule) without running again or counting against
 *   maxTrials; new trials are numbered after the earlier job's last; trainingOutput lists
 *   this job's trials only.
 * - The job SUCCEEDS when the study ends with at least one succeeded trial, else FAILS;
 *   cancelling cancels every running trial and the job ends CANCELLED. */
#ifndef TY_STUDY_H
#define TY_STUDY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobstate.h"
#include "loop.h"
#include "spec.h"
#include "supervise.h"
#include "trials.h"
#include "tuner.h"

/* enableTrialEarlyStopping: how often a running trial's metric file is read. */
#define TY_STUDY_POLL_USEC (INT64_C(1000000))

struct ty_study_options {
    const struct ty_runtime_ops *runtime; /* runtime.h; the programs pick it (exec/runtimes.h) */
    const char *state_dir; /* the job's state directory; trials/<trial>/ are made under it */
    uint64_t seed;         /* the tuner's seed */
    /* Per-trial supervisor options: grace_usec, env, log, on_log, on_queued and gpus (their
     * ctx is `ctx` below) are used; on_state, extra_env, metric_dir and gpu_slot are the
     * study's; wait_deadline_usec and admitted are the job's, not each trial's. */
    struct ty_supervisor_options sup;
    /* The job's state changes (QUEUED -> PREPARING -> RUNNING -> final; CANCELLING). */
    void (*on_state)(void *ctx, enum ty_job_state state);
    /* A trial started or ended (optional): trainingOutput has changed. */
    void (*on_trial)(void *ctx, const struct ty_study_trial *trial);
    /* How often running trials' metric files are read for early stopping (0: every
     * TY_STUDY_POLL_USEC). */
    int64_t poll_usec;
    /* resumePreviousJobId: the earlier job's REST Job JSON (borrowed, used in ty_study_new);
     * NULL when the job resumes nothing, or when the earlier job was not found. */
    const json_t *previous_job;
    /* The jobs previous_job resumed in turn (ty_study_resume_chain's array; borrowed; NULL:
     * none): their trials inform the search too, as one study. */
    const json_t *earlier_jobs;
    /* Number the trials after this id (0: from 1): a study started again after an internal
     * error goes on after the lost run's trials, so that none of its trials shares an id, a
     * job directory (<jobDir>/<trialId>) or log lines with one of those. */
    uint64_t after_trial;
    void *ctx;
};

struct ty_study;

/* Create the study of tuning job @job (job->hp set; @job must outlive the study). Returns 0
 * and *ret; -EINVAL when the job has no hyperparameters; the tuner's errors (-EINVAL,
 * -ENOTSUP for an algorithm not implemented yet) with its message. */
int ty_study_new(struct ty_loop *loop,
                 const struct ty_job *job,
                 const struct ty_study_options *opts,
                 struct ty_study **ret,
                 struct ty_error *err);

/* Start the first trials. Returns 0 (the study runs on the loop until ty_study_done), or
 * -errno with err for failures of the runner itself: -EALREADY when it was started before,
 * -EINVAL without a state directory, the errors of making <state_dir>/trials (the job has not
 * started then: its state is still QUEUED). */
int ty_study_start(struct ty_study *st, struct ty_error *err);

/* Cancel: no new trial starts and every running trial is cancelled (idempotent; a second
 * request kills the trials' replicas at once). Call it from the loop. */
void ty_study_cancel(struct ty_study *st);

enum ty_job_state ty_study_state(const struct ty_study *st);
bool ty_study_done(const struct ty_study *st);
/* errorMessage of the FAILED or CANCELLED job ("" otherwise). */
const char *ty_study_error(const struct ty_study *st);

/* The trials so far, in the order they started (borrowed, valid until the study is freed). */
size_t ty_study_n_trials(const struct ty_study *st);
const struct ty_study_trial *ty_study_trial(const struct ty_study *st, size_t i);

/* The job's trainingOutput now (new reference): see ty_study_output_json. */
json_t *ty_study_training_output(const struct ty_study *st);

/* The same as ty_json_pretty writes it for a value @depth levels down in a document (see
 * ty_study_output_pretty), byte for byte; each trial's text is kept and rendered again only
 * when the trial has changed, so writing it at every change stays linear. Caller frees. */
char *ty_study_training_output_pretty(const struct ty_study *st, int depth);

/* Free; running trials are cleaned up (replicas killed). NULL-safe. */
void ty_study_free(struct ty_study *st);

/* The first trial a study of @job (with @seed and, when it resumes an earlier job,
 * @previous_job and @earlier_jobs as in ty_study_options) would start, for --dry-run: its id,
 * parameters and `--name=value` arguments. Returns 0 and *ret (free with
 * ty_trial_suggestions_free(ret, 1)) and *args (ty_strv_free); -ENOENT when no trial is left
 * to run (a resumed GRID_SEARCH whose grid the earlier trials cover); the errors of
 * ty_study_new. */
int ty_study_first_trial(const struct ty_job *job,
                         uint64_t seed,
                         const json_t *previous_job,
                         const json_t *earlier_jobs,
                         struct ty_trial_suggestion **ret,
                         char ***args,
                         struct ty_error *err);

#endif
