/* SPDX-License-Identifier: Apache-2.0
 * study.h: a hyperparameter-tuning job run on the caller's event loop: the tuner (tuner.h)
 * suggests trials, each trial is one whole run of the job's cluster (a ty_supervisor with the
 * trial's id, `--name=value` arguments, per-trial job dir and metric file), and the trials'
 * outcomes go back to the tuner until the study ends. docs/lifecycle.md, "Hyperparameter
 * tuning", describes the rules:
 *
 * - Up to maxParallelTrials trials run at once; every trial, failed or not, counts against
 *   maxTrials (GRID_SEARCH also ends when its grid is exhausted).
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

#include "hypertune.h"
#include "jobstate.h"
#include "loop.h"
#include "spec.h"
#include "supervise.h"
#include "tuner.h"

/* enableTrialEarlyStopping: how often a running trial's metric file is read. */
#define TY_STUDY_POLL_USEC (INT64_C(1000000))

/* maxFailedTrials 0: the number of first trials whose failing all fails the job. */
#define TY_STUDY_DEFAULT_FAILURES 3

/* One trial as the study knows it (read-only for callers). */
struct ty_study_trial {
    char *trial_id;               /* "1", "2", ... */
    json_t *parameters;           /* {parameterName: value} as the tuner suggested them */
    enum ty_job_state state;      /* PREPARING, RUNNING, then SUCCEEDED, FAILED or CANCELLED */
    int64_t start_usec, end_usec; /* end_usec 0 while running */
    bool has_metric;
    struct ty_hp_measurement final;    /* the last report, when has_metric */
    struct ty_hp_measurement *metrics; /* every report read at the end */
    size_t n_metrics;
    char *error;        /* why a trial FAILED or was CANCELLED; NULL otherwise */
    bool stopped_early; /* ended by the early-stopping rule (isTrialStoppedEarly) */
};

struct ty_study_options {
    const char *runtime;   /* runtime name (runtime.h) */
    const char *state_dir; /* the job's state directory; trials/<trial>/ are made under it */
    uint64_t seed;         /* the tuner's seed */
    /* Per-trial supervisor options: grace_usec, env, log, on_log and on_queued (their ctx is
     * `ctx` below) are used; on_state, extra_env and metric_dir are the study's. */
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
    void *ctx;
};

struct ty_study;

/* The tuner seed of a job when none is given: a hash of its id, so a job run again under
 * the same id suggests the same trials. */
uint64_t ty_study_default_seed(const struct ty_job *job);

/* Create the study of tuning job @job (job->hp set; @job must outlive the study). Returns 0
 * and *ret; -EINVAL when the job has no hyperparameters; the tuner's errors (-EINVAL,
 * -ENOTSUP for an algorithm not implemented yet) with its message. */
int ty_study_new(struct ty_loop *loop,
                 const struct ty_job *job,
                 const struct ty_study_options *opts,
                 struct ty_study **ret,
                 struct ty_error *err);

/* Start the first trials. Returns 0 (the study runs on the loop until ty_study_done), or
 * -errno for failures of the runner itself. */
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

/* Free; running trials are cleaned up (replicas killed). NULL-safe. */
void ty_study_free(struct ty_study *st);

/* The first trial a study of @job (with @seed and, when it resumes an earlier job,
 * @previous_job as in ty_study_options) would start, for --dry-run: its id, parameters and
 * `--name=value` arguments. Returns 0 and *ret (free with ty_trial_suggestions_free(ret, 1))
 * and *args (ty_strv_free); the errors of ty_study_new. */
int ty_study_first_trial(const struct ty_job *job,
                         uint64_t seed,
                         const json_t *previous_job,
                         struct ty_trial_suggestion **ret,
                         char ***args,
                         struct ty_error *err);

/* ---- pure pieces (study-output.c), exposed for tests -------------------------------------- */

/* A parameter value as AI Platform's trial output shows it: a string as is, an integer in
 * decimal, a real in the shortest form that reads back to the same double. Caller frees. */
char *ty_study_value_string(const json_t *v);

/* The trial arguments `--name=value` for @parameters, in the spec's parameter order.
 * Caller frees (ty_strv_free). */
char **ty_study_trial_args(const struct ty_hp_spec *spec, const json_t *parameters);

/* Sort @v best first: trials with a metric by objective (highest first when @maximize, else
 * lowest), ties by trial number; then every trial without a metric by trial number. */
void ty_study_sort(const struct ty_study_trial **v, size_t n, bool maximize);

/* The HyperparameterOutput of @t: trialId, hyperparameters (values as strings), finalMetric
 * {trainingStep (int64 string), objectiveValue} and allMetrics (when it has a metric), state,
 * startTime, endTime (when ended), isTrialStoppedEarly false. New reference. */
json_t *ty_study_trial_json(const struct ty_study_trial *t);

/* The TrainingOutput of a tuning job with trials @v (any order; sorted best first here):
 * completedTrialCount (succeeded trials, int64 string), trials, isHyperparameterTuningJob,
 * hyperparameterMetricTag. New reference. */
json_t *ty_study_output_json(const struct ty_hp_spec *spec,
                             const struct ty_study_trial *const *v,
                             size_t n);

/* The failed-trial rule (see above), once a trial has ended: true when the job must fail
 * after @n_failed failed and @n_succeeded succeeded trials, with the reason in @msg. */
bool ty_study_too_many_failures(
    const struct ty_hp_spec *spec, size_t n_failed, size_t n_succeeded, char *msg, size_t len);

/* ---- resumePreviousJobId (study-resume.c) -------------------------------------------------- */

/* Whether the earlier job @previous (its REST Job JSON) can be resumed by a job with @spec
 * (whose resume_job_id names it): a hyperparameter-tuning job that has ended (SUCCEEDED,
 * FAILED or CANCELLED), with the same goal, hyperparameterMetricTag, and parameter names and
 * types (bounds and values may differ). Returns 0, or -EINVAL with a message naming
 * trainingInput.hyperparameters.resumePreviousJobId and the rule. */
int ty_study_resume_check(const struct ty_hp_spec *spec,
                          const json_t *previous,
                          struct ty_error *err);

struct ty_study_resume_stats {
    size_t succeeded, failed; /* trials added to the tuner */
    size_t skipped;           /* cancelled or unfinished, or values outside this job's spec */
    uint64_t last_id;         /* the highest trial id of the earlier job */
};

struct ty_stop_rule;

/* Add the trials of @previous (checked) to @tuner as priors (ty_tuner_add_prior; before any
 * suggestion): SUCCEEDED ones with their finalMetric, FAILED ones as failures; the rest are
 * skipped. Each succeeded trial not stopped early also becomes a reference curve of @rule
 * (may be NULL) from its allMetrics. New trials are numbered after the earlier job's last.
 * Returns 0 and *stats (may be NULL); -EBUSY when the tuner has already suggested. */
int ty_study_resume_load(const json_t *previous,
                         struct ty_tuner *tuner,
                         struct ty_stop_rule *rule,
                         struct ty_study_resume_stats *stats,
                         struct ty_error *err);

#endif
