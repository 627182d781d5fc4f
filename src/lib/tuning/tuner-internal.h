/* SPDX-License-Identifier: Apache-2.0
 * tuner-internal.h: the tuner's state, shared by its algorithm files (tuner.c holds the
 * study bookkeeping, random and grid search; tuner-gp.c, the default algorithm, reads the
 * trials here).
 * Also the study's pseudo-random generator: xoshiro256** seeded through splitmix64, so a
 * study is reproducible for a seed on every platform. */
#ifndef TY_TUNER_INTERNAL_H
#define TY_TUNER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tuner.h"

struct ty_rng {
    uint64_t s[4];
};

/* Seed @r from @seed (any value, 0 included). */
void ty_rng_seed(struct ty_rng *r, uint64_t seed);
/* Uniform double in [0, 1) with 53 random bits. */
double ty_rng_unit(struct ty_rng *r);
/* Uniform integer in [0, n) without modulo bias; @n > 0. */
uint64_t ty_rng_below(struct ty_rng *r, uint64_t n);

enum ty_trial_state { TY_TRIAL_PENDING, TY_TRIAL_SUCCEEDED, TY_TRIAL_FAILED };

struct ty_trial {
    uint64_t id;        /* id_base + 1, id_base + 2, ... (priors: their earlier id) */
    char name[24];      /* the id as a string: "1", "2", ... */
    double *x;          /* one value per parameter (see tuner.h) */
    json_t *parameters; /* the same values as JSON */
    enum ty_trial_state state;
    double objective; /* SUCCEEDED only, as reported (goal orientation) */
};

struct ty_tuner {
    const struct ty_hp_spec *spec;
    struct ty_rng rng;
    struct ty_trial *trials; /* the priors (ty_tuner_add_prior), then every suggested trial */
    size_t n_trials, cap_trials;
    size_t n_prior;   /* trials[0 .. n_prior) came from an earlier study */
    uint64_t id_base; /* suggested trial k (1, 2, ...) is named id_base + k */
    size_t n_completed, n_failed;
    uint64_t *grid; /* GRID_SEARCH: next grid point's index per parameter */
    bool grid_done;
    struct ty_bo *bo; /* ALGORITHM_UNSPECIFIED: the Bayesian optimiser's state (tuner-gp.c) */
    bool explain;     /* suggestions carry an explanation (ty_tuner_set_explain) */
};

/* ---- the default algorithm (tuner-gp.c) ---------------------------------------------------- */

/* Set up Bayesian optimisation for @t (t->spec and t->rng ready): the encoding and the opening
 * design, into t->bo. Returns 0 (the errors are reserved: every valid spec is accepted). */
int ty_bo_new(struct ty_tuner *t, struct ty_error *err);

/* The next trial's parameter values into @x (one per parameter), given every trial in
 * t->trials (pending ones included). Never a trial already suggested while a fresh point can
 * be found. Consumes t->rng. */
void ty_bo_next(struct ty_tuner *t, double *x);

/* A new object explaining the last ty_bo_next's choice (ty_tuner_set_explain's fields). */
json_t *ty_bo_explain(const struct ty_bo *b);

/* Free the optimiser's state (NULL is fine). */
void ty_bo_free(struct ty_bo *b);

/* ---- the default algorithm's trust region (tuner-trust.c) ----------------------------------- */

struct ty_trust {
    double len;        /* the box's side, for length-scales at their geometric mean */
    size_t centre;     /* the trial it is centred on: the run's best; SIZE_MAX: none yet (a
                        * run that just started: the next suggestion is global) */
    size_t run_start;  /* the current run's first trial */
    unsigned restarts; /* runs that converged so far */
};

/* The trust region after every trial of @t in order (succeeded ones judged; the first @n_init,
 * the opening design and any priors, are not), for a space of @dim numeric dimensions, into
 * @tr. Deterministic: the same trials give the same region. */
void ty_trust_replay(const struct ty_tuner *t, size_t n_init, size_t dim, struct ty_trust *tr);

/* The box of @tr around the encoded point @centre, into @lo and @hi (@dim values each, within
 * [0, 1]): along numeric dimension d, a side of tr->len times the GP's length-scale there
 * (exp @log_ls[d]) over the geometric mean of the numeric ones; [0, 1] along the others
 * (@numeric[d] false: one-hot categories). */
void ty_trust_box(const struct ty_trust *tr,
                  const double *centre,
                  const double *log_ls,
                  const bool *numeric,
                  size_t dim,
                  double *lo,
                  double *hi);

#endif
