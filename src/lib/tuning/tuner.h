/* SPDX-License-Identifier: Apache-2.0
 * tuner.h: the hyperparameter search as an ask/tell object, usable without jobs (the tuning
 * job runner and `trainyard study --jsonl` both drive it).
 *
 * A study: ty_tuner_new() on a validated struct ty_hp_spec (spec.h), then any interleaving of
 * ty_tuner_suggest() (ask for new trials) and ty_tuner_complete() (report a trial's final
 * objective, or its failure), then ty_tuner_free(). Trial ids are "1", "2", ... in the order
 * suggested. Every suggested trial counts against maxTrials, so completed trials count whether
 * they failed or not. The tuner does not enforce maxParallelTrials or maxFailedTrials: the
 * caller (the trial runner, the protocol's harness) decides how many trials run at once and
 * when failures end the study.
 *
 * Algorithms: RANDOM_SEARCH (uniform in each parameter's warped unit interval; DISCRETE and
 * CATEGORICAL uniform over their values) and GRID_SEARCH (INTEGER, CATEGORICAL and DISCRETE
 * only; every grid point once, in a fixed order). ALGORITHM_UNSPECIFIED: Bayesian
 * optimisation (tuner-gp.c: a Gaussian process and expected improvement, pending trials as
 * fantasies, failed trials left out of the model). Everything is deterministic for a seed.
 *
 * The search space: each parameter maps to and from [0, 1] honouring its scaleType (the
 * ty_hp_unit functions below); a model-based optimiser works in that unit cube. */
#ifndef TY_TUNER_H
#define TY_TUNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "spec.h"

/* ---- the search space ------------------------------------------------------------------- */

/* A parameter value is held as a double: DOUBLE its value, INTEGER a whole number, DISCRETE
 * one of its discreteValues, CATEGORICAL the index of its category (0 .. n-1). */

/* Number of choices of a CATEGORICAL or DISCRETE parameter; 0 for DOUBLE and INTEGER. */
size_t ty_hp_n_choices(const struct ty_hp_param *p);

/* Map unit coordinate @u (clamped to [0, 1]) to a feasible value of @p:
 * - DOUBLE: min + (max - min) u (UNIT_LINEAR_SCALE and NONE); exp(ln min + u (ln max - ln min))
 *   (UNIT_LOG_SCALE); max + min - exp(ln min + (1 - u)(ln max - ln min))
 *   (UNIT_REVERSE_LOG_SCALE: dense near max), as the shared harness's random_tuner.py; the
 *   result is clamped to [min, max], and u = 0 and 1 give min and max exactly.
 * - INTEGER: the same warps over [min - 0.5, max + 0.5] (for the log scales the lower end is
 *   min - 0.5 only when min > 0.5, else min), rounded to the nearest integer and clamped, so
 *   each integer owns an equal share of the warped interval.
 * - DISCRETE: the value whose ty_hp_to_unit() is nearest to @u (the warp over [first, last]).
 * - CATEGORICAL: the index floor(u n), at most n - 1. */
double ty_hp_from_unit(const struct ty_hp_param *p, double u);

/* Inverse of ty_hp_from_unit: the unit coordinate of value @v (clamped to @p's bounds) in
 * [0, 1]. For INTEGER the centre of the integer's share; for CATEGORICAL (index + 0.5) / n;
 * for a DISCRETE or CATEGORICAL parameter with one value, 0.5. */
double ty_hp_to_unit(const struct ty_hp_param *p, double v);

/* @v as the JSON the protocol and the trial arguments use: a real for DOUBLE and DISCRETE, an
 * integer for INTEGER, the category's string for CATEGORICAL. New reference. Exposed for tests. */
json_t *ty_hp_value_to_json(const struct ty_hp_param *p, double v);

/* Parse JSON value @j for @p into *ret, checking the value rules (a finite number within
 * bounds; integral for INTEGER; exactly one of the discreteValues; one of the category
 * strings, giving its index). Returns 0, or -EINVAL with err naming the parameter and rule.
 * Exposed for tests. */
int ty_hp_value_from_json(const struct ty_hp_param *p,
                          const json_t *j,
                          double *ret,
                          struct ty_error *err);

/* As ty_hp_value_from_json, but a number may also be given as a JSON string holding one
 * (trainingOutput's hyperparameters are strings): "0.01", "64". */
int ty_hp_value_from_text(const struct ty_hp_param *p,
                          const json_t *j,
                          double *ret,
                          struct ty_error *err);

/* The object {name: value, ...} for values @x (one per parameter of @spec). New reference. */
json_t *ty_hp_values_to_json(const struct ty_hp_spec *spec, const double *x);

/* ---- the tuner ---------------------------------------------------------------------------- */

struct ty_tuner;

struct ty_trial_suggestion {
    char *trial_id;     /* "1", "2", ... */
    json_t *parameters; /* {parameterName: value} following the value rules */
    json_t *explain;    /* why this point (ty_tuner_set_explain), else NULL */
};

/* Start a study on @spec, which must outlive the tuner. Returns 0 and *ret; -EINVAL when the
 * spec does not suit the algorithm (GRID_SEARCH with a DOUBLE parameter; the message names it). */
int ty_tuner_new(const struct ty_hp_spec *spec,
                 uint64_t seed,
                 struct ty_tuner **ret,
                 struct ty_error *err);

/* Suggest up to @count new trials (fewer when maxTrials or the grid runs out). Returns 0 with
 * *ret (caller frees with ty_trial_suggestions_free) and *n; *n == 0 (and *ret NULL) means the
 * search is exhausted. -EINVAL when @count is 0. */
int ty_tuner_suggest(struct ty_tuner *t,
                     size_t count,
                     struct ty_trial_suggestion **ret,
                     size_t *n,
                     struct ty_error *err);

/* Make each later suggestion carry an explanation of how it was chosen, for diagnosing the
 * search (`trainyard study --jsonl --explain`, bench/hpo): an object with "phase", one of
 * "openingDesign", "random" (too few results to model), "global" (the whole space: a
 * trust-region run's first suggestion, or any without a numeric parameter), "trustRegion" (in
 * the box around the run's best), and for RANDOM_SEARCH and GRID_SEARCH "randomSearch" and
 * "gridSearch". The model's phases add "kernel" ("ARD" or "ADDITIVE"), "candidate" (where the
 * winning acquisition start came from: "uniform", "local", "coordinate", or "random" when every
 * candidate was a trial already), "mean", "sd" and "incumbent" (the model's prediction there
 * and the value expected improvement is measured against, in its standardised units, pending
 * trials' fantasies included), "logEI", "succeeded" and "pending" (the results and pending
 * trials it saw), and for "trustRegion" also "side" (the box's side at the length-scales'
 * geometric mean, in the unit cube), "reach" (the farthest the suggestion lies from the box's
 * centre along one numeric parameter, in the unit cube: beyond the box for a coordinate move)
 * and "restarts" (runs converged so far). The suggestions themselves are the same with or
 * without it. */
void ty_tuner_set_explain(struct ty_tuner *t, bool on);

/* Report pending trial @trial_id's end: @succeeded with final @objective (in the spec's goal
 * orientation, finite), or failed (@objective ignored). Returns 0; -ENOENT for an id never
 * suggested; -EALREADY when the trial was already completed; -EINVAL for a non-finite
 * objective. */
int ty_tuner_complete(struct ty_tuner *t,
                      const char *trial_id,
                      bool succeeded,
                      double objective,
                      struct ty_error *err);

/* Whether @trial_id names a trial suggested and not yet completed. */
bool ty_tuner_is_pending(const struct ty_tuner *t, const char *trial_id);

/* Resuming a study (resumePreviousJobId): before the first ty_tuner_suggest, add trial
 * @trial_id (a positive decimal number, unique) of the earlier study with @parameters
 * ({name: value} for every parameter of the spec, each a value following the value rules or
 * a string holding one, as trainingOutput shows them), and its outcome: @succeeded with
 * @objective, or failed. The default algorithm models it like its own trials; GRID_SEARCH
 * does not suggest its point again. Priors do not count against maxTrials or in the counts
 * below, and new trials are numbered after the highest prior id. Returns 0; -EINVAL for a
 * value that is not valid in this spec (the message names the parameter), a bad id or a
 * non-finite objective; -EEXIST for an id already added; -EBUSY once suggestions started. */
int ty_tuner_add_prior(struct ty_tuner *t,
                       const char *trial_id,
                       const json_t *parameters,
                       bool succeeded,
                       double objective,
                       struct ty_error *err);

/* Resuming: number new trials after @id at least (an earlier trial not added as a prior, a
 * cancelled one say). Before the first ty_tuner_suggest; later calls are ignored. */
void ty_tuner_skip_ids(struct ty_tuner *t, uint64_t id);

/* Counts so far: trials suggested, completed (succeeded or failed), and failed. */
size_t ty_tuner_n_suggested(const struct ty_tuner *t);
size_t ty_tuner_n_completed(const struct ty_tuner *t);
size_t ty_tuner_n_failed(const struct ty_tuner *t);

/* The best succeeded trial by the spec's goal (the earliest on a tie): returns its id and sets
 * *objective and *parameters (borrowed, valid until the tuner is freed). NULL when no trial
 * has succeeded yet. */
const char *ty_tuner_best(const struct ty_tuner *t, double *objective, const json_t **parameters);

/* Free the @n suggestions of @s (as ty_tuner_suggest returned them) and the array; NULL-safe. */
void ty_trial_suggestions_free(struct ty_trial_suggestion *s, size_t n);
struct ty_tuner *ty_tuner_free(struct ty_tuner *t);

#endif
