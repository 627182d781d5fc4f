/* SPDX-License-Identifier: Apache-2.0
 * gp.h: a Gaussian process for the Bayesian optimiser (tuner-gp.c): Matérn-5/2 kernel with one
 * length-scale per input dimension (ARD), or the additive kernel of the same hyperparameters
 * (struct ty_gp's additive); inputs in [0, 1]^dim, targets standardised by the caller.
 * Hyperparameters (log length-scales, log signal variance, log noise variance) are fitted by
 * maximising the log marginal likelihood plus weak log-normal priors, inside fixed bounds, with
 * analytic gradients and a projected L-BFGS. Everything is deterministic; nothing is thread-safe
 * (the GP owns its scratch buffers). Matrices are row-major and heap-allocated. Also the
 * objectives' output warp (log1p of the gap to the best, standardised). */
#ifndef TY_GP_H
#define TY_GP_H

#include <stddef.h>

#include "linalg.h"

/* ---- the Gaussian process ------------------------------------------------------------------ */

struct ty_gp {
    size_t dim;     /* input dimension */
    size_t n, cap;  /* training points held, and room for */
    double *x;      /* n × dim inputs */
    double *y;      /* n targets (already standardised) */
    double *log_ls; /* dim log length-scales */
    double log_sf2; /* log signal variance */
    double log_sn2; /* log noise variance (>= the floor) */
    double jitter;  /* extra diagonal the last factorisation needed (0 when none) */
    double *l;      /* n × n Cholesky factor of K + (sn2 + jitter) I, valid after update */
    double *alpha;  /* (K + sn2 I)^-1 y */
    double *work;   /* scratch: n */
    double *work2;  /* scratch: n × n (hyperparameter fit) */
    int ready;      /* l and alpha match the data and hyperparameters */
    /* The kernel: 0 (the default) Matérn-5/2 of the scaled distance over all dimensions
     * (ARD); 1 additive, sf2 times the mean over dimensions of a one-dimensional Matérn-5/2
     * of |x_d - x'_d| / l_d: the objective as a sum of one function per input, so that what
     * the data say of one input's values holds whatever the others are. Set before a fit; the
     * hyperparameters mean the same in both. */
    int additive;
    /* The negative log posterior (ty_gp_neg_log_posterior) the last ty_gp_fit ended at, for
     * the data and hyperparameters it left; INFINITY before a fit, or when that fit could not
     * factorise. Not kept current: it is stale once the data or hyperparameters change. */
    double fit_nlp;
};

/* A GP on [0, 1]^@dim with the default hyperparameters (length-scales 0.3, signal variance 1,
 * noise variance 1e-4). @dim > 0. Never NULL (allocation failure aborts). */
struct ty_gp *ty_gp_new(size_t dim);

/* Replace the training data by @n points @x (n × dim, row-major) with targets @y (copied).
 * Invalidates the factorisation. */
void ty_gp_set_data(struct ty_gp *gp, const double *x, const double *y, size_t n);

/* Factorise the covariance of the current data under the current hyperparameters (adding
 * jitter as needed) and compute alpha. Returns 0, or -EDOM when even the largest jitter fails
 * (the GP then predicts the prior). */
int ty_gp_update(struct ty_gp *gp);

/* Fit the hyperparameters by maximising log marginal likelihood + log prior: projected L-BFGS
 * from the current hyperparameters and, when @restart, also from the defaults, keeping the
 * better; at most @max_evals likelihood evaluations per start. Then ty_gp_update(), and the
 * objective at the result in gp->fit_nlp (what ty_gp_neg_log_posterior would compute again).
 * Needs n >= 1. Returns 0 or -EDOM (as ty_gp_update). */
int ty_gp_fit(struct ty_gp *gp, int max_evals, int restart);

/* Negative log marginal likelihood + negative log prior at the current hyperparameters (for
 * diagnostics, and to compare two kernels' fits of the same data); INFINITY when the covariance
 * cannot be factorised. */
double ty_gp_neg_log_posterior(struct ty_gp *gp);

/* The same, and its gradient with respect to (log length-scales, log sf2, log sn2) into @grad
 * (dim + 2 values), as the fit computes it. Exposed for tests. */
double ty_gp_neg_log_posterior_grad(struct ty_gp *gp, double *grad);

/* Posterior mean *mean and variance *var (of the latent function, >= 1e-12) at @xq (dim
 * values). Needs a successful ty_gp_update(); with no data it is the prior (0, sf2). */
void ty_gp_predict(struct ty_gp *gp, const double *xq, double *mean, double *var);

/* ty_gp_predict of @m points @xq (m × dim) into @mean[m] and @var[m], the same values, two
 * points' solves at a time (faster: ty_solve_lower_2 in linalg.c). */
void ty_gp_predict_many(struct ty_gp *gp, const double *xq, size_t m, double *mean, double *var);

/* Output warping of objectives to minimise, for skewed ones: @z[i] = w(@y[i]) standardised to
 * mean 0 and standard deviation 1 (not scaled when the spread is ~0), where
 * w(y) = log1p((y - min y) / @scale) for a finite @scale > 0, else w(y) = y. Each point's
 * log |dz/dy| goes to @logjac[i] when @logjac is not NULL; returns their sum, so that a GP's
 * negative log likelihood of @z minus it is the negative log likelihood of @y under the warped
 * model, comparable across scales. n >= 1. */
double ty_warp_output(const double *y, size_t n, double scale, double *z, double *logjac);

/* Free @gp (NULL is fine). Returns NULL. */
struct ty_gp *ty_gp_free(struct ty_gp *gp);

#endif
