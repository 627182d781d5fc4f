/* SPDX-License-Identifier: Apache-2.0
 * tuner-trust.c: the default algorithm's trust region (tuner-gp.c), after TuRBO (Eriksson et
 * al., "Scalable Global Optimization via Local Bayesian Optimization", NeurIPS 2019), kept
 * with one global Gaussian process.
 *
 * A suggestion is searched for only in a box around the best trial of the current "run",
 * shaped by the GP's length-scales. The box doubles after TY_TRUST_SUCC successes in a row (a
 * trial that beats the run's best by a margin) and halves after as many failures in a row as
 * the space has dimensions (at least TY_TRUST_FAIL_MIN); once it is smaller than
 * TY_TRUST_LEN_MIN the run has converged, and a new run starts: its first trial is a global
 * suggestion (the whole space), and its box is centred on its own best. Without the box, a
 * GP fitted to a rippled objective (many local minima) has high variance everywhere, and its
 * expected improvement kept choosing corners of the space and far-off points to the end of
 * the study, never refining the best basin (bench/hpo/README.md, issue 18).
 *
 * The state is replayed from the trials in order at every suggestion: nothing more is stored,
 * and a study resumed from an earlier one's trials (study-resume.c: the priors) starts from
 * the region they make. */
#include <math.h>
#include <stdint.h>

#include "tuner-internal.h"

/* TuRBO's published settings (its paper, section 3): initial, largest and smallest side (in
 * the unit cube, for length-scales at their geometric mean), successes to double, and the
 * fewest failures to halve; an improvement must beat the run's best by 1e-3 of its size. */
#define TY_TRUST_LEN_INIT 0.8
#define TY_TRUST_LEN_MAX  1.6
#define TY_TRUST_LEN_MIN  0.0078125 /* 0.5^7 */
#define TY_TRUST_SUCC     3
#define TY_TRUST_FAIL_MIN 4
#define TY_TRUST_IMPROVE  1e-3

/* The objective of succeeded trial @i, oriented to minimise. */
static double oriented(const struct ty_tuner *t, size_t i)
{
    return t->spec->maximize ? -t->trials[i].objective : t->trials[i].objective;
}

void ty_trust_replay(const struct ty_tuner *t, size_t n_init, size_t dim, struct ty_trust *tr)
{
    size_t tau_fail = dim > TY_TRUST_FAIL_MIN ? dim : TY_TRUST_FAIL_MIN, succ = 0, fail = 0;
    double best = INFINITY;

    tr->len = TY_TRUST_LEN_INIT;
    tr->centre = SIZE_MAX;
    tr->run_start = 0;
    tr->restarts = 0;
    for (size_t i = 0; i < t->n_trials; i++) {
        double y;
        if (t->trials[i].state != TY_TRIAL_SUCCEEDED)
            continue; /* pending: not known yet; failed: tells nothing of the objective */
        y = oriented(t, i);
        if (i >= n_init && tr->centre != SIZE_MAX) { /* the opening design is not judged */
            if (y < best - TY_TRUST_IMPROVE * fabs(best))
                succ++, fail = 0;
            else
                fail++, succ = 0;
        }
        if (y < best) {
            best = y;
            tr->centre = i;
        }
        if (succ == TY_TRUST_SUCC) {
            tr->len = fmin(2 * tr->len, TY_TRUST_LEN_MAX);
            succ = 0;
        } else if (fail == tau_fail) {
            tr->len /= 2;
            fail = 0;
        }
        if (tr->len < TY_TRUST_LEN_MIN) { /* converged: a new run from the next trial */
            tr->len = TY_TRUST_LEN_INIT;
            tr->centre = SIZE_MAX;
            tr->run_start = i + 1;
            tr->restarts++;
            best = INFINITY;
            succ = fail = 0;
        }
    }
}

void ty_trust_box(const struct ty_trust *tr,
                  const double *centre,
                  const double *log_ls,
                  const bool *numeric,
                  size_t dim,
                  double *lo,
                  double *hi)
{
    double mean_log = 0;
    size_t n = 0;

    for (size_t d = 0; d < dim; d++)
        if (numeric[d])
            mean_log += log_ls[d], n++;
    mean_log = n ? mean_log / (double)n : 0;
    for (size_t d = 0; d < dim; d++) {
        double half;
        if (!numeric[d]) {
            lo[d] = 0, hi[d] = 1;
            continue;
        }
        half = 0.5 * tr->len * exp(log_ls[d] - mean_log);
        lo[d] = fmax(0, centre[d] - half);
        hi[d] = fmin(1, centre[d] + half);
    }
}
