/* SPDX-License-Identifier: Apache-2.0
 * tuner-gp.c: the default algorithm (ALGORITHM_UNSPECIFIED): Bayesian optimisation with the
 * Gaussian process of gp.h. Parameters are encoded in a unit cube: DOUBLE, INTEGER and
 * DISCRETE through their scaleType warp (tuner-space.c), CATEGORICAL as one-hot dimensions.
 * Two GPs are fitted to the trials, one with the ARD kernel over all dimensions and one with
 * the additive kernel (a sum of one function per dimension); the one of the higher marginal
 * likelihood (same priors, same number of hyperparameters) makes the suggestion, so that on
 * an objective made of separate effects a good value of one parameter, found beside poor
 * values of the others, is carried to the best point.
 * A seeded Latin hypercube opens the study; then each suggestion maximises log expected
 * improvement over the succeeded trials (objectives oriented to minimise, log-warped when
 * heavy-tailed with a scale taken from the opening design, standardised, the prior mean at an
 * upper quantile of them) inside a trust region around the best trial of the current run
 * (tuner-trust.c: it grows on successes, shrinks on failures, and a new run starts from a
 * global suggestion once it has shrunk to nothing; a few candidates move one coordinate of the
 * best point anywhere in its range, to reach a basin the region cannot), with pending trials
 * entered as kriging-believer fantasies (which may lower the incumbent) so parallel suggestions
 * differ. While trials are pending, most acquisition candidates are drawn around the best
 * trials: filling a batch refines the promising region instead of spending the batch on
 * far-off exploration. The acquisition is evaluated at decoded-then-re-encoded points
 * (integers rounded, DISCRETE snapped, one category hot), so trials already suggested are
 * recognised and never suggested again while another point is available. Failed trials are left out
 * of the model. Deterministic for the study's seed. How each suggestion was chosen is kept for
 * ty_bo_explain (`trainyard study --explain`), without changing the search. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "gp.h"
#include "macro.h"
#include "tuner-internal.h"

#define N_RANDOM         768  /* uniform candidates per suggestion */
#define N_RANDOM_PENDING 128  /* of which while trials are pending (the rest local) */
#define N_LOCAL          768  /* candidates around the best trials */
#define N_STARTS         5    /* best candidates refined by pattern search */
#define SEARCH_EVALS     160  /* acquisition evaluations per pattern search */
#define FIT_EVALS        40   /* likelihood evaluations per hyperparameter fit start */
#define DUP_TOL          1e-9 /* encoded points closer than this (max norm) are the same trial */
#define LOCAL_CENTRES    5    /* local candidates are drawn around this many best trials */
#define LOCAL_SWITCH     0.2  /* chance that a local candidate switches a category */
/* Of the local candidates, this many are coordinate moves (coord_z): the best point with one
 * numeric coordinate anywhere in its range, two with chance COORD_TWO. */
#define N_COORD   64
#define COORD_TWO 0.3
/* The opening design has dim + 1 points (fewer trials than dimensions cannot fit one
 * length-scale each), and at least MIN_INIT, or a 1-parameter study starts on 2 points. */
#define MIN_INIT 5
/* Random draws tried for a point not yet suggested: a fresh one takes a few unless the space
 * is (nearly) exhausted, and then this bounds the search. */
#define FRESH_TRIES 1000
/* Below this standardised improvement z the closed form of EI cancels to nothing, and log_ei
 * uses the tail's asymptotic series instead (its error is O(z^-6), 2e-5 relative, there). */
#define EI_TAIL_Z -6
/* Pattern search starts with steps of a twentieth of each unit range and halves them down to
 * SEARCH_STEP_MIN, finer than any parameter needs. */
#define SEARCH_STEP     0.05
#define SEARCH_STEP_MIN 1e-6
/* The hyperparameter fit also starts again from a default point (ty_gp_fit's restart) while
 * fewer than REFIT_FULL_BELOW trials succeeded, when the likelihood is flattest and a local
 * optimum likeliest, and then on every REFIT_FULL_EVERYth, to bound the cost. */
#define REFIT_FULL_BELOW 20
#define REFIT_FULL_EVERY 10
/* The additive model makes the suggestion only when its log posterior (marginal likelihood
 * and the hyperparameters' priors, the same for both kernels) beats the ARD model's by this
 * much: prior odds of e^2 (about 7 to 1) for the kernel that assumes nothing of the
 * objective's structure. With no margin (the likelier model always), Rosenbrock4 and
 * Hartmann6 in parallel lost most of their progress (bench/hpo/README.md). */
#define ADDITIVE_MARGIN 2.0
/* The quantile of the trials' (standardised) targets that the GP's prior mean stands for: see
 * pessimistic_mean. */
#define PRIOR_MEAN_QUANTILE 0.75

/* Widths (in the unit cube) of a local candidate's normal step, one drawn per candidate: from
 * a fifth of the range, to reach a neighbouring basin, down to 0.001, to polish an optimum. */
static const double LOCAL_SCALES[] = {0.2, 0.05, 0.015, 0.004, 0.001};

/* How the last suggestion was chosen (ty_bo_explain); the prediction and reach are computed
 * only when the tuner explains (t->explain), to keep them off the suggestion's path. */
struct ty_bo_last {
    const char *phase, *candidate;      /* tuner.h's names; candidate NULL: no acquisition */
    int kernel;                         /* -1: no model; else the model's gp->additive */
    double mean, sd, incumbent, log_ei; /* at the suggestion (standardised units) */
    double side, reach; /* "trustRegion": the box's side; the farthest the suggestion moved
                         * along one numeric dimension from the box's centre (unit cube) */
    unsigned restarts;
    size_t succeeded, pending;
};

struct ty_bo {
    size_t np, dim;         /* parameters, encoded dimensions */
    size_t *off, *wid;      /* per parameter: first encoded dimension and width (k for one-hot) */
    size_t n_init;          /* the opening design's size */
    double *design;         /* n_init × np unit coordinates */
    struct ty_gp *gp;       /* the model suggestions use: the likelier of the two kernels */
    struct ty_gp *gp_other; /* the other kernel's (NULL with one dimension: they are the same) */
    size_t fitted_n;        /* succeeded trials at the last hyperparameter fit (SIZE_MAX: none) */
    double *tz;             /* encoded points of every trial (refreshed per suggestion) */
    size_t tz_cap;
    double best;     /* incumbent: lowest standardised target */
    double best_run; /* the trust region's run's incumbent (tuner-trust.c) */
    double *zb, *xb; /* scratch: dim, np */
    bool *numeric;   /* per encoded dimension: not one-hot (the trust region bounds it) */
    size_t n_numeric;
    double *lo, *hi; /* the search box of a suggestion: dim each */
    double step;     /* the pattern search's first step (smaller in a small box) */
    struct ty_bo_last last;
};

static size_t max_sz(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* Encode parameter values @x into the unit cube @z. */
static void encode(const struct ty_bo *b, const struct ty_hp_spec *spec, const double *x, double *z)
{
    for (size_t i = 0; i < b->np; i++) {
        const struct ty_hp_param *p = &spec->params[i];
        if (p->type == TY_HP_CATEGORICAL) {
            for (size_t c = 0; c < b->wid[i]; c++)
                z[b->off[i] + c] = (double)c == x[i] ? 1 : 0;
        } else {
            z[b->off[i]] = ty_hp_to_unit(p, x[i]);
        }
    }
}

/* Decode @z into feasible parameter values @x (the hottest category, first on a tie). */
static void decode(const struct ty_bo *b, const struct ty_hp_spec *spec, const double *z, double *x)
{
    for (size_t i = 0; i < b->np; i++) {
        const struct ty_hp_param *p = &spec->params[i];
        if (p->type == TY_HP_CATEGORICAL) {
            size_t best = 0;
            for (size_t c = 1; c < b->wid[i]; c++)
                if (z[b->off[i] + c] > z[b->off[i] + best])
                    best = c;
            x[i] = (double)best;
        } else {
            x[i] = ty_hp_from_unit(p, z[b->off[i]]);
        }
    }
}

int ty_bo_new(struct ty_tuner *t, struct ty_error *err)
{
    const struct ty_hp_spec *spec = t->spec;
    struct ty_bo *b = xcalloc(1, sizeof(*b));
    size_t *perm;

    (void)err;
    b->np = spec->n_params;
    b->off = xcalloc(b->np, sizeof(size_t));
    b->wid = xcalloc(b->np, sizeof(size_t));
    for (size_t i = 0; i < b->np; i++) {
        const struct ty_hp_param *p = &spec->params[i];
        b->off[i] = b->dim;
        b->wid[i] = p->type == TY_HP_CATEGORICAL ? max_sz(ty_hp_n_choices(p), 1) : 1;
        b->dim += b->wid[i];
    }
    b->n_init = max_sz(MIN_INIT, b->dim + 1);
    if (spec->max_trials > 0 && b->n_init > (size_t)spec->max_trials)
        b->n_init = (size_t)spec->max_trials;
    /* Latin hypercube: each parameter's unit interval cut into n_init strata, one point each */
    b->design = xcalloc(b->n_init * b->np, sizeof(double));
    perm = xcalloc(b->n_init, sizeof(size_t));
    for (size_t i = 0; i < b->np; i++) {
        for (size_t k = 0; k < b->n_init; k++)
            perm[k] = k;
        for (size_t k = b->n_init; k > 1; k--) {
            size_t r = (size_t)ty_rng_below(&t->rng, k), tmp = perm[k - 1];
            perm[k - 1] = perm[r];
            perm[r] = tmp;
        }
        for (size_t k = 0; k < b->n_init; k++)
            b->design[k * b->np + i] = ((double)perm[k] + ty_rng_unit(&t->rng)) / (double)b->n_init;
    }
    free(perm);
    b->gp = ty_gp_new(b->dim);
    if (b->dim > 1) {
        b->gp_other = ty_gp_new(b->dim);
        b->gp_other->additive = 1;
    }
    b->fitted_n = SIZE_MAX;
    b->zb = xcalloc(b->dim, sizeof(double));
    b->xb = xcalloc(b->np, sizeof(double));
    b->numeric = xcalloc(b->dim, sizeof(bool));
    for (size_t i = 0; i < b->np; i++)
        if (spec->params[i].type != TY_HP_CATEGORICAL) {
            b->numeric[b->off[i]] = true;
            b->n_numeric++;
        }
    b->lo = xcalloc(b->dim, sizeof(double));
    b->hi = xcalloc(b->dim, sizeof(double));
    t->bo = b;
    return 0;
}

void ty_bo_free(struct ty_bo *b)
{
    if (!b)
        return;
    free(b->off);
    free(b->wid);
    free(b->design);
    ty_gp_free(b->gp);
    ty_gp_free(b->gp_other);
    free(b->tz);
    free(b->zb);
    free(b->xb);
    free(b->numeric);
    free(b->lo);
    free(b->hi);
    free(b);
}

/* Whether the point @x (parameter values), encoded @z, is one of the tuner's trials
 * (succeeded, failed or pending): DOUBLE parameters compared encoded, within DUP_TOL; the
 * others by value, since two INTEGER or DISCRETE values may lie closer than that in the unit
 * interval (a range of 2^40, or discreteValues [1e-12, 1e-10, 1]) and still differ. */
static bool
is_duplicate(const struct ty_bo *b, const struct ty_tuner *t, const double *z, const double *x)
{
    for (size_t i = 0; i < t->n_trials; i++) {
        const double *q = b->tz + i * b->dim;
        size_t k = 0;
        while (k < b->np) {
            size_t o = b->off[k];
            if (t->spec->params[k].type == TY_HP_DOUBLE ? !(fabs(q[o] - z[o]) < DUP_TOL)
                                                        : t->trials[i].x[k] != x[k])
                break;
            k++;
        }
        if (k == b->np)
            return true;
    }
    return false;
}

/* A uniformly random encoded point (one category hot) into @z. */
static void random_z(const struct ty_bo *b, struct ty_tuner *t, double *z)
{
    for (size_t i = 0; i < b->np; i++) {
        if (t->spec->params[i].type == TY_HP_CATEGORICAL) {
            size_t c = (size_t)ty_rng_below(&t->rng, b->wid[i]);
            for (size_t k = 0; k < b->wid[i]; k++)
                z[b->off[i] + k] = k == c ? 1 : 0;
        } else {
            z[b->off[i]] = ty_rng_unit(&t->rng);
        }
    }
}

/* A random point not yet suggested into @x (any random point after many tries: a small
 * discrete space may be exhausted). A DISCRETE parameter takes each of its values with equal
 * chance: drawn in the unit interval, a value whose neighbours lie close to it on the
 * parameter's scale (discreteValues [1, 2, 3, 1000000]) would hardly ever be drawn. */
static void random_fresh(struct ty_bo *b, struct ty_tuner *t, double *x)
{
    for (int tries = 0; tries < FRESH_TRIES; tries++) {
        random_z(b, t, b->zb);
        decode(b, t->spec, b->zb, x);
        for (size_t i = 0; i < b->np; i++) {
            const struct ty_hp_param *p = &t->spec->params[i];
            if (p->type == TY_HP_DISCRETE)
                x[i] = p->discrete[ty_rng_below(&t->rng, p->n_discrete)];
        }
        encode(b, t->spec, x, b->zb);
        if (!is_duplicate(b, t, b->zb, x))
            return;
    }
}

/* log of the expected improvement below @best of N(@mu, @var), stable far into the tail. */
static double log_ei(double mu, double var, double best)
{
    double s = sqrt(var), z = (best - mu) / s;
    if (z > EI_TAIL_Z) {
        double h = z * 0.5 * erfc(-z / M_SQRT2) + exp(-0.5 * z * z) / sqrt(2 * M_PI);
        return log(s) + log(h > 1e-300 ? h : 1e-300); /* h may underflow to 0 */
    }
    return log(s) - 0.5 * z * z - 0.5 * log(2 * M_PI) - 2 * log(-z) +
           log1p(-3 / (z * z) + 15 / (z * z * z * z));
}

/* The acquisition at @z after snapping it in place to a feasible point; -INFINITY for a
 * trial already suggested. */
static double acquire(struct ty_bo *b, struct ty_tuner *t, double *z)
{
    double mu, var;
    decode(b, t->spec, z, b->xb);
    encode(b, t->spec, b->xb, z);
    if (is_duplicate(b, t, z, b->xb))
        return -INFINITY;
    ty_gp_predict(b->gp, z, &mu, &var);
    return log_ei(mu, var, b->best);
}

/* acquire() of each of the @n points @z (n × dim, snapped in place) into @f: the points
 * predicted together (ty_gp_predict_many), the same values. */
static void acquire_many(struct ty_bo *b, struct ty_tuner *t, double *z, size_t n, double *f)
{
    size_t dim = b->dim, m = 0;
    double *q = xcalloc(n * dim + 2 * n, sizeof(double)), *mu = q + n * dim, *var = mu + n;
    size_t *at = xcalloc(n ? n : 1, sizeof(size_t));

    for (size_t c = 0; c < n; c++) {
        double *zc = z + c * dim;
        decode(b, t->spec, zc, b->xb);
        encode(b, t->spec, b->xb, zc);
        f[c] = -INFINITY;
        if (is_duplicate(b, t, zc, b->xb))
            continue;
        memcpy(q + m * dim, zc, dim * sizeof(double));
        at[m++] = c;
    }
    ty_gp_predict_many(b->gp, q, m, mu, var);
    for (size_t i = 0; i < m; i++)
        f[at[i]] = log_ei(mu[i], var[i], b->best);
    free(at);
    free(q);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The output warp's scale (INFINITY: none) for the objectives @y of the @ns succeeded trials
 * (oriented to minimise, in trial order, so the opening design's come first), best @ymin. The
 * scale is the median gap to the best over the opening design's succeeded trials: those
 * sample the space uniformly, so the scale tracks the objective's typical spread over the
 * search space and stays put while later trials concentrate near the optimum (a median over
 * every trial shrinks as they do, and the ever stronger log warp then stalls convergence in a
 * narrow valley: Rosenbrock's regret at 100 trials went from 0.75 to 0.19). Every succeeded
 * trial stands in when no design trial succeeded. A warp only for a long tail: the worst gap
 * over 10 scales. */
static double
warp_scale(const struct ty_bo *b, const struct ty_tuner *t, const double *y, size_t ns, double ymin)
{
    double *g = xcalloc(ns, sizeof(double)), scale, worst = 0;
    size_t ng = 0;

    for (size_t i = 0; i < t->n_trials && i < b->n_init; i++)
        ng += t->trials[i].state == TY_TRIAL_SUCCEEDED;
    if (ng == 0)
        ng = ns;
    for (size_t i = 0; i < ng; i++)
        g[i] = y[i] - ymin;
    qsort(g, ng, sizeof(double), cmp_double);
    scale = g[ng / 2];
    for (size_t i = ng / 2; i < ng && !(scale > 0); i++)
        scale = g[i];
    for (size_t i = 0; i < ns; i++)
        worst = y[i] - ymin > worst ? y[i] - ymin : worst;
    free(g);
    return scale > 0 && worst > 10 * scale ? scale : INFINITY;
}

/* Shift the @n standardised targets @w so that the GP's prior mean, 0, is their
 * PRIOR_MEAN_QUANTILE: where the model knows nothing, it expects a result worse than most
 * trials, not an average one. With the average, a GP fitted to a rippled objective (short
 * length-scales: most of the space unknown) had its highest expected improvement in the
 * corners of the space and kept suggesting them to the end of the study (bench/hpo/README.md,
 * issue 18); Hartmann6's second basin also held fewer studies. */
static void pessimistic_mean(double *w, size_t n)
{
    double *q = xcalloc(n, sizeof(double)), shift;

    memcpy(q, w, n * sizeof(double));
    qsort(q, n, sizeof(double), cmp_double);
    shift = q[(size_t)(PRIOR_MEAN_QUANTILE * (double)(n - 1))];
    for (size_t i = 0; i < n; i++)
        w[i] -= shift;
    free(q);
}

/* Objectives beyond this magnitude are scaled down (by a power of two, exactly) before the
 * warp: their gaps and squares would overflow a double, and the model would see infinities. */
#define Y_MAX 1e100

/* Scale the @n objectives @y (and their least, *@ymin) by one power of two so that none is
 * larger than Y_MAX in magnitude; as they are when none is. The warp and the standardisation
 * that follow do not depend on the objectives' scale, so nothing else changes. */
static void scale_down(double *y, size_t n, double *ymin)
{
    double m = 0;
    int e;

    for (size_t i = 0; i < n; i++)
        m = fabs(y[i]) > m ? fabs(y[i]) : m;
    if (!(m > Y_MAX))
        return;
    (void)frexp(m / Y_MAX, &e);
    for (size_t i = 0; i < n; i++)
        y[i] = ldexp(y[i], -e);
    *ymin = ldexp(*ymin, -e);
}

/* Fit the GP to the succeeded trials (targets warped and standardised) and add the pending
 * trials as kriging-believer fantasies; b->best is the incumbent, b->best_run the best of the
 * trials from @run_start on (the trust region's run), each lowered by the fantasies. Returns
 * the number of succeeded trials. */
static size_t build_model(struct ty_bo *b, struct ty_tuner *t, size_t run_start)
{
    size_t n = t->n_trials, ns = 0, np_ = 0, dim = b->dim, first_run = 0;
    double *z = xcalloc((n + 1) * dim, sizeof(double)), *y = xcalloc(n + 1, sizeof(double));
    double *w = xcalloc(n + 1, sizeof(double)), ymin = INFINITY;

    for (size_t i = 0; i < n; i++)
        if (t->trials[i].state == TY_TRIAL_SUCCEEDED) {
            double v = t->spec->maximize ? -t->trials[i].objective : t->trials[i].objective;
            if (i < run_start)
                first_run = ns + 1; /* the run's trials are w[first_run ..) */
            memcpy(z + ns * dim, b->tz + i * dim, dim * sizeof(double));
            y[ns++] = v;
            ymin = v < ymin ? v : ymin;
        }
    if (ns < 2)
        goto out;
    scale_down(y, ns, &ymin);
    ty_warp_output(y, ns, warp_scale(b, t, y, ns, ymin), w, NULL);
    pessimistic_mean(w, ns);
    ty_gp_set_data(b->gp, z, w, ns);
    if (b->fitted_n != ns) {
        bool restart = ns < REFIT_FULL_BELOW || ns % REFIT_FULL_EVERY == 0;
        ty_gp_fit(b->gp, FIT_EVALS, restart);
        if (b->gp_other) {
            ty_gp_set_data(b->gp_other, z, w, ns);
            ty_gp_fit(b->gp_other, FIT_EVALS, restart);
            double fo = b->gp_other->fit_nlp, fg = b->gp->fit_nlp;
            if (fo < fg - (b->gp_other->additive ? ADDITIVE_MARGIN : -ADDITIVE_MARGIN)) {
                struct ty_gp *g = b->gp;
                b->gp = b->gp_other;
                b->gp_other = g;
            }
        }
        b->fitted_n = ns;
    } else {
        ty_gp_update(b->gp);
    }
    b->best = b->best_run = INFINITY;
    for (size_t i = 0; i < ns; i++) {
        b->best = w[i] < b->best ? w[i] : b->best;
        if (i >= first_run)
            b->best_run = w[i] < b->best_run ? w[i] : b->best_run;
    }
    /* kriging believer: each pending trial is taken to have returned the posterior mean, as if
     * observed, so it may lower the incumbent too (else EI next to a pending trial whose mean
     * beats the incumbent stays high, and the batch crowds there) */
    for (size_t i = 0; i < n; i++)
        if (t->trials[i].state == TY_TRIAL_PENDING) {
            double mu, var;
            memcpy(z + (ns + np_) * dim, b->tz + i * dim, dim * sizeof(double));
            ty_gp_predict(b->gp, b->tz + i * dim, &mu, &var);
            w[ns + np_++] = mu;
            b->best = mu < b->best ? mu : b->best;
            b->best_run = mu < b->best_run ? mu : b->best_run;
        }
    if (np_) {
        ty_gp_set_data(b->gp, z, w, ns + np_);
        ty_gp_update(b->gp);
    }
    b->last.kernel = b->gp->additive;
    b->last.succeeded = ns;
    b->last.pending = np_;
out:
    free(z);
    free(y);
    free(w);
    return ns;
}

/* Pattern search from @z (value *@f) on the acquisition: each numeric dimension ± step, each
 * other category, the step halved when nothing improves. */
static void pattern_search(struct ty_bo *b, struct ty_tuner *t, double *z, double *f)
{
    double *c = xcalloc(b->dim, sizeof(double)), step = b->step;
    int evals = 0;

    while (step > SEARCH_STEP_MIN && evals < SEARCH_EVALS) {
        bool improved = false;
        for (size_t i = 0; i < b->np && evals < SEARCH_EVALS; i++) {
            size_t o = b->off[i];
            if (t->spec->params[i].type == TY_HP_CATEGORICAL) {
                for (size_t k = 0; k < b->wid[i]; k++) {
                    double v;
                    if (z[o + k] == 1)
                        continue;
                    memcpy(c, z, b->dim * sizeof(double));
                    for (size_t q = 0; q < b->wid[i]; q++)
                        c[o + q] = q == k ? 1 : 0;
                    v = acquire(b, t, c);
                    evals++;
                    if (v > *f) {
                        *f = v;
                        memcpy(z, c, b->dim * sizeof(double));
                        improved = true;
                    }
                }
                continue;
            }
            for (int sgn = -1; sgn <= 1; sgn += 2) {
                double v;
                memcpy(c, z, b->dim * sizeof(double));
                c[o] = fmin(b->hi[o], fmax(b->lo[o], z[o] + sgn * step));
                if (c[o] == z[o])
                    continue;
                v = acquire(b, t, c);
                evals++;
                if (v > *f) {
                    *f = v;
                    memcpy(z, c, b->dim * sizeof(double));
                    improved = true;
                    break;
                }
            }
        }
        if (!improved)
            step *= 0.5;
    }
    free(c);
}

/* Encode every trial's values into b->tz (grown as needed). */
static void encode_trials(struct ty_bo *b, struct ty_tuner *t)
{
    size_t dim = b->dim, n = t->n_trials;

    if (n * dim > b->tz_cap) {
        b->tz_cap = 2 * n * dim + dim;
        b->tz = xreallocarray(b->tz, b->tz_cap, sizeof(double));
    }
    for (size_t i = 0; i < n; i++)
        encode(b, t->spec, t->trials[i].x, b->tz + i * dim);
}

/* The next point of the opening design into @x (a fresh random one if it was suggested). */
static void design_point(struct ty_bo *b, struct ty_tuner *t, double *x)
{
    const double *u = b->design + t->n_trials * b->np;

    for (size_t i = 0; i < b->np; i++)
        x[i] = ty_hp_from_unit(&t->spec->params[i], u[i]);
    encode(b, t->spec, x, b->zb);
    if (is_duplicate(b, t, b->zb, x))
        random_fresh(b, t, x);
}

/* The indices of the @ns succeeded trials, best objective first (ties in trial order). */
static size_t *ranked_succeeded(const struct ty_tuner *t, size_t ns)
{
    size_t *good = xcalloc(ns, sizeof(size_t));
    double *ys = xcalloc(ns, sizeof(double));

    for (size_t i = 0, k = 0; i < t->n_trials; i++)
        if (t->trials[i].state == TY_TRIAL_SUCCEEDED) {
            ys[k] = t->spec->maximize ? -t->trials[i].objective : t->trials[i].objective;
            good[k++] = i;
        }
    for (size_t i = 1; i < ns; i++) /* insertion sort by objective, stable */
        for (size_t j = i; j > 0 && ys[j] < ys[j - 1]; j--) {
            double ty = ys[j];
            size_t tg = good[j];
            ys[j] = ys[j - 1], ys[j - 1] = ty;
            good[j] = good[j - 1], good[j - 1] = tg;
        }
    free(ys);
    return good;
}

/* A local candidate into @z: one of the best (up to LOCAL_CENTRES) of the @ns trials @good,
 * the better ones more often, moved by a normal step of a random LOCAL_SCALES width times
 * @scale in each numeric dimension (kept in the search box), each category switched with
 * probability LOCAL_SWITCH. */
static void
local_z(struct ty_bo *b, struct ty_tuner *t, const size_t *good, size_t ns, double scale, double *z)
{
    double u = ty_rng_unit(&t->rng);
    size_t g = (size_t)(u * u * (double)(ns < LOCAL_CENTRES ? ns : LOCAL_CENTRES));
    double sc = scale * LOCAL_SCALES[ty_rng_below(&t->rng, TY_ARRAY_SIZE(LOCAL_SCALES))];

    memcpy(z, b->tz + good[g] * b->dim, b->dim * sizeof(double));
    for (size_t i = 0; i < b->np; i++) {
        size_t o = b->off[i];
        if (t->spec->params[i].type == TY_HP_CATEGORICAL) {
            if (ty_rng_unit(&t->rng) < LOCAL_SWITCH) {
                size_t k = (size_t)ty_rng_below(&t->rng, b->wid[i]);
                for (size_t q = 0; q < b->wid[i]; q++)
                    z[o + q] = q == k ? 1 : 0;
            }
        } else {
            /* Box-Muller normal step */
            double u1 = ty_rng_unit(&t->rng), u2 = ty_rng_unit(&t->rng);
            double nrm = sqrt(-2 * log(1 - u1)) * cos(2 * M_PI * u2);
            z[o] = fmin(b->hi[o], fmax(b->lo[o], z[o] + sc * nrm));
        }
    }
}

/* Up to N_STARTS indices into @top of the best candidates by acquisition @cf (@n of them),
 * one per distinct value, none of a trial already suggested. Returns how many. */
static size_t best_starts(const double *cf, size_t n, size_t top[N_STARTS])
{
    size_t n_top = 0;

    for (size_t k = 0; k < N_STARTS && k < n; k++) {
        size_t bi = SIZE_MAX;
        for (size_t c = 0; c < n; c++) {
            bool taken = false;
            if (!(cf[c] > -INFINITY))
                continue;
            for (size_t q = 0; q < n_top && !taken; q++)
                taken = cf[c] == cf[top[q]];
            if (!taken && (bi == SIZE_MAX || cf[c] > cf[bi]))
                bi = c;
        }
        if (bi == SIZE_MAX)
            break;
        top[n_top++] = bi;
    }
    return n_top;
}

/* A uniformly random encoded point of the search box (one category hot) into @z. */
static void box_z(const struct ty_bo *b, struct ty_tuner *t, double *z)
{
    random_z(b, t, z);
    for (size_t d = 0; d < b->dim; d++)
        if (b->numeric[d])
            z[d] = b->lo[d] + z[d] * (b->hi[d] - b->lo[d]);
}

/* A coordinate move into @z: the encoded trial @g with one numeric coordinate (two with
 * chance COORD_TWO) set uniformly anywhere in its range, outside the search box too. A
 * trust region's box, or a step around the best trials, moves every coordinate a little: it
 * cannot carry one coordinate across its range to another basin while the others stay put,
 * which a separable or deceptive objective (Schwefel's) asks for (bench/hpo/README.md,
 * issue 18). Needs a numeric parameter. */
static void coord_z(struct ty_bo *b, struct ty_tuner *t, size_t g, double *z)
{
    int moves = ty_rng_unit(&t->rng) < COORD_TWO ? 2 : 1;

    memcpy(z, b->tz + g * b->dim, b->dim * sizeof(double));
    for (int m = 0; m < moves; m++) {
        size_t k = (size_t)ty_rng_below(&t->rng, b->n_numeric), d = 0;
        while (!b->numeric[d] || k-- > 0)
            d++;
        z[d] = ty_rng_unit(&t->rng);
    }
}

/* Maximise the acquisition in the search box b->lo..b->hi: score uniform and local candidates
 * (around the @n_good trials @good, N_COORD of them coordinate moves of @good[0], the best),
 * refine the best few by pattern search, decode the best into @x (a fresh random point when
 * every candidate was a trial). @scale sizes the local steps and the pattern search's first
 * step (1: the whole space). */
static void maximise_acquisition(
    struct ty_bo *b, struct ty_tuner *t, const size_t *good, size_t n_good, double scale, double *x)
{
    size_t dim = b->dim, n_cand = N_RANDOM + N_LOCAL, n_rand = N_RANDOM, top[N_STARTS], n_top;
    double *cz = xcalloc(n_cand * dim, sizeof(double)), *cf = xcalloc(n_cand, sizeof(double));
    double *best_z = xcalloc(dim, sizeof(double)), best_f = -INFINITY;

    /* filling a batch (trials pending): mostly local candidates; the fantasies already push
     * the suggestion away from the pending trials, and far-off exploration by every member of
     * a batch cost the most on Hartmann6 and Rosenbrock (measured in bench/hpo/README.md) */
    for (size_t i = 0; i < t->n_trials; i++)
        if (t->trials[i].state == TY_TRIAL_PENDING)
            n_rand = N_RANDOM_PENDING;
    for (size_t c = 0; c < n_cand; c++) {
        double *z = cz + c * dim;
        if (c < n_rand)
            box_z(b, t, z);
        else if (c >= n_cand - N_COORD && b->n_numeric > 0)
            coord_z(b, t, good[0], z);
        else
            local_z(b, t, good, n_good, scale, z);
    }
    acquire_many(b, t, cz, n_cand, cf);
    n_top = best_starts(cf, n_cand, top);
    b->last.candidate = "random";
    for (size_t k = 0; k < n_top; k++) {
        double *z = cz + top[k] * dim, f = cf[top[k]];
        pattern_search(b, t, z, &f);
        if (f > best_f) {
            best_f = f;
            memcpy(best_z, z, dim * sizeof(double));
            b->last.candidate = top[k] < n_rand                                  ? "uniform"
                                : top[k] >= n_cand - N_COORD && b->n_numeric > 0 ? "coordinate"
                                                                                 : "local";
        }
    }
    if (best_f > -INFINITY && t->explain) { /* the prediction only for an explanation */
        double mu, var;
        ty_gp_predict(b->gp, best_z, &mu, &var);
        b->last.mean = mu;
        b->last.sd = sqrt(var);
        b->last.incumbent = b->best;
        b->last.log_ei = best_f;
    }
    if (best_f > -INFINITY)
        decode(b, t->spec, best_z, x);
    else
        random_fresh(b, t, x);
    free(best_z);
    free(cz);
    free(cf);
}

void ty_bo_next(struct ty_tuner *t, double *x)
{
    struct ty_bo *b = t->bo;
    struct ty_trust tr;
    size_t ns;

    encode_trials(b, t);
    b->last = (struct ty_bo_last){.phase = "openingDesign", .kernel = -1};
    if (t->n_trials < b->n_init) {
        design_point(b, t, x);
        return;
    }
    ty_trust_replay(t, b->n_init, b->n_numeric, &tr);
    ns = build_model(b, t, tr.run_start);
    if (ns < 2) {
        b->last = (struct ty_bo_last){.phase = "random", .kernel = -1};
        random_fresh(b, t, x);
        return;
    }
    for (size_t d = 0; d < b->dim; d++)
        b->lo[d] = 0, b->hi[d] = 1;
    b->step = SEARCH_STEP;
    if (tr.centre == SIZE_MAX || b->n_numeric == 0) {
        /* a run's first suggestion (or no numeric parameter): the whole space, around the
         * best trials */
        size_t *good = ranked_succeeded(t, ns);
        b->last.phase = "global";
        maximise_acquisition(b, t, good, ns, 1, x);
        free(good);
        return;
    }
    /* in the trust region around the run's best, for improvement on the run's best */
    ty_trust_box(&tr, b->tz + tr.centre * b->dim, b->gp->log_ls, b->numeric, b->dim, b->lo, b->hi);
    b->best = b->best_run;
    b->step = SEARCH_STEP * fmin(1, tr.len);
    b->last.phase = "trustRegion";
    b->last.side = tr.len;
    b->last.restarts = tr.restarts;
    maximise_acquisition(b, t, &tr.centre, 1, fmin(1, tr.len), x);
    if (!t->explain)
        return;
    encode(b, t->spec, x, b->zb);
    for (size_t d = 0; d < b->dim; d++)
        if (b->numeric[d])
            b->last.reach = fmax(b->last.reach, fabs(b->zb[d] - b->tz[tr.centre * b->dim + d]));
}

json_t *ty_bo_explain(const struct ty_bo *b)
{
    const struct ty_bo_last *l = &b->last;
    json_t *o = json_pack("{s:s}", "phase", l->phase);

    if (l->kernel < 0)
        return o;
    json_object_set_new(o, "kernel", json_string(l->kernel ? "ADDITIVE" : "ARD"));
    json_object_set_new(o, "succeeded", json_integer((json_int_t)l->succeeded));
    json_object_set_new(o, "pending", json_integer((json_int_t)l->pending));
    if (strcmp(l->phase, "trustRegion") == 0) {
        json_object_set_new(o, "side", json_real(l->side));
        json_object_set_new(o, "reach", json_real(l->reach));
        json_object_set_new(o, "restarts", json_integer(l->restarts));
    }
    if (!l->candidate)
        return o;
    json_object_set_new(o, "candidate", json_string(l->candidate));
    if (strcmp(l->candidate, "random") == 0)
        return o;
    json_object_set_new(o, "mean", json_real(l->mean));
    json_object_set_new(o, "sd", json_real(l->sd));
    json_object_set_new(o, "incumbent", json_real(l->incumbent));
    json_object_set_new(o, "logEI", json_real(l->log_ei));
    return o;
}
