/* SPDX-License-Identifier: Apache-2.0
 * trials.h: the trials of a hyperparameter-tuning study as data, apart from running them
 * (run/study.h runs them): the HyperparameterOutput and TrainingOutput JSON the service
 * shows, the failed-trial rule, the trial arguments, and resumePreviousJobId (an earlier
 * job's trials as the tuner's priors). Pure functions over their arguments. */
#ifndef TY_TRIALS_H
#define TY_TRIALS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "hypertune.h"
#include "jobstate.h"
#include "spec.h"
#include "tuner.h"

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
    char *error;            /* why a trial FAILED or was CANCELLED; NULL otherwise */
    bool stopped_early;     /* ended by the early-stopping rule (isTrialStoppedEarly) */
    json_t *attempt_status; /* the trial's attempts and restarts (supervise.h), or NULL */
};

/* ---- a study's output (study-output.c) ---------------------------------------------------- */

/* The tuner seed of a job when none is given: a hash of its id, so a job run again under
 * the same id suggests the same trials. */
uint64_t ty_study_default_seed(const struct ty_job *job);

/* A parameter value as AI Platform's trial output shows it: a string as is, an integer in
 * decimal, a real in the shortest form that reads back to the same double. Caller frees. */
char *ty_study_value_string(const json_t *v);

/* @parameters as a compact JSON object whose numbers are written as the trial gets them
 * (ty_study_value_string: a DISCRETE 10 is 10, not 10.0), for the "Trial N started with"
 * line. Caller frees. */
char *ty_study_params_shown(const json_t *parameters);

/* The trial arguments `--name=value` for @parameters, in the spec's parameter order.
 * Caller frees (ty_strv_free). */
char **ty_study_trial_args(const struct ty_hp_spec *spec, const json_t *parameters);

/* Sort @v best first: trials with a metric by objective (highest first when @maximize, else
 * lowest), ties by trial number; then every trial without a metric by trial number. */
void ty_study_sort(const struct ty_study_trial **v, size_t n, bool maximize);

/* The TrainingOutput of a tuning job with trials @v (any order; sorted best first here):
 * completedTrialCount (succeeded trials, int64 string), trials, isHyperparameterTuningJob,
 * hyperparameterMetricTag. New reference. */
json_t *ty_study_output_json(const struct ty_hp_spec *spec,
                             const struct ty_study_trial *const *v,
                             size_t n);

/* The HyperparameterOutput of @t: trialId, hyperparameters (values as strings), finalMetric
 * {trainingStep (int64 string), objectiveValue} and allMetrics (when it has a metric), state,
 * startTime, endTime (when ended), isTrialStoppedEarly, errorMessage (when set), and
 * trainyard's attemptStatus (when known). New reference. */
json_t *ty_study_trial_json(const struct ty_study_trial *t);

/* ty_study_trial_json(@t) as ty_json_pretty writes it, for a value @depth levels down in a
 * document: 2 × @depth more spaces after each newline. Caller frees. */
char *ty_study_trial_pretty(const struct ty_study_trial *t, int depth);

/* ty_study_output_json(@spec, @v, @n) as ty_json_pretty writes it, @depth levels down (as
 * ty_study_trial_pretty), byte for byte, but each trial's text is @text_of(@ctx, trial): its
 * ty_study_trial_pretty at @depth + 2, which the caller may keep from one call to the next
 * while the trial does not change (a study's job record is written at each change of any
 * trial; rendering only the changed ones keeps that linear in the trials). Caller frees. */
char *ty_study_output_pretty(const struct ty_hp_spec *spec,
                             const struct ty_study_trial *const *v,
                             size_t n,
                             int depth,
                             const char *(*text_of)(void *ctx, const struct ty_study_trial *t),
                             void *ctx);

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
    uint64_t last_id;         /* the highest trial id of the earlier jobs */
    size_t chained;           /* the jobs beyond the one named whose trials were added */
};

struct ty_stop_rule;

/* Most earlier jobs a study resumes through a chain of resumePreviousJobId. */
#define TY_RESUME_CHAIN_MAX 100

/* The jobs that @previous (a REST Job JSON) resumed in turn, nearest first, as a new JSON
 * array (empty when it resumed none): its resumePreviousJobId looked up with @lookup (a new
 * reference, or NULL when not found: the chain ends there), then that job's, and so on, at
 * most TY_RESUME_CHAIN_MAX, ending before a job already in the chain. AI Platform resumes
 * one study however many jobs continued it, so a job resuming a resumed job continues all
 * of their trials. */
json_t *ty_study_resume_chain(const json_t *previous,
                              json_t *(*lookup)(void *ctx, const char *job_id),
                              void *ctx);

/* Add the trials of @previous (checked) and of the @earlier jobs it resumed in turn (an
 * array from ty_study_resume_chain, or NULL; one that fails ty_study_resume_check for @spec
 * ends the chain) to @tuner as priors (ty_tuner_add_prior; before any suggestion): SUCCEEDED
 * ones with their finalMetric, FAILED ones as failures; the rest are skipped. Each succeeded
 * trial not stopped early also becomes a reference curve of @rule (may be NULL) from its
 * allMetrics. New trials are numbered after the highest of them. Returns 0 and *stats (may
 * be NULL); -EBUSY when the tuner has already suggested. */
int ty_study_resume_load(const struct ty_hp_spec *spec,
                         const json_t *previous,
                         const json_t *earlier,
                         struct ty_tuner *tuner,
                         struct ty_stop_rule *rule,
                         struct ty_study_resume_stats *stats,
                         struct ty_error *err);

#endif
