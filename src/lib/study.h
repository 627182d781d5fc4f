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
    char *error; /* why a trial FAILED or was CANCELLED; NULL otherwise */
};

struct ty_study_options {
    const char *runtime;   /* runtime name (runtime.h) */
    const char *state_dir; /* the job's state directory; trials/<trial>/ are made under it */
    uint64_t seed;         /* the tuner's seed */
    /* Per-trial supervisor options: grace_usec, env, log and on_log (its ctx is `ctx` below)
     * are used; on_state, extra_env and metric_dir are the study's. */
    struct ty_supervisor_options sup;
    /* The job's state changes (QUEUED -> PREPARING -> RUNNING -> final; CANCELLING). */
    void (*on_state)(void *ctx, enum ty_job_state state);
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

#endif
