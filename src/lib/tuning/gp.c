/* SPDX-License-Identifier: Apache-2.0
 * gp.c: the Matérn-5/2 Gaussian process of gp.h (ARD or additive; its linear algebra is
 * linalg.c): covariance, log marginal likelihood with analytic gradients, weak priors, a
 * projected L-BFGS for the hyperparameters, and posterior mean and variance. */
#include "gp.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define SQRT5   2.23606797749978969641
#define LOG2PI  1.83787706640934548356
#define LBFGS_M 6

/* Hyperparameter bounds and log-normal priors (on the log values), inputs in [0, 1]. */
static const double LS_LO = -3.912023005428146;  /* log 0.02 */
static const double LS_HI = 2.302585092994046;   /* log 10 */
static const double LS_MU = -1.2039728043259361; /* log 0.3 */
static const double LS_SD = 1.5;
static const double SF_LO = -2.995732273553991; /* log 0.05 */
static const double SF_HI = 2.995732273553991;  /* log 20 */
static const double SF_MU = 0.0;
static const double SF_SD = 1.5;
static const double SN_LO = -16.11809565095832;  /* log 1e-7: the noise floor */
static const double SN_HI = 0.0;                 /* log 1 */
static const double SN_MU = -11.512925464970229; /* log 1e-5 */
static const double SN_SD = 3.0;

/* ---- kernel -------------------------------------------------------------------------------- */

/* Scaled distance r between @a and @b under inverse squared length-scales @ils2. */
static double scaled_dist(const double *a, const double *b, const double *ils2, size_t dim)
{
    double r2 = 0;
    for (size_t d = 0; d < dim; d++) {
        double t = a[d] - b[d];
        r2 += t * t * ils2[d];
    }
    return sqrt(r2);
}

/* Matérn-5/2 with unit variance at scaled distance @r, given @e = exp(-√5 r). */
static double matern_e(double r, double e)
{
    return (1 + SQRT5 * r + 5.0 / 3.0 * r * r) * e;
}

/* Matérn-5/2 with unit variance at scaled distance @r. */
static double matern(double r)
{
    return matern_e(r, exp(-SQRT5 * r));
}

/* The additive kernel with unit variance between @a and @b: the mean over dimensions of the
 * one-dimensional Matérn-5/2 at |a_d - b_d| scaled by the inverse length-scale @il[d]. */
static double additive(const double *a, const double *b, const double *il, size_t dim)
{
    double k = 0;
    for (size_t d = 0; d < dim; d++)
        k += matern(fabs(a[d] - b[d]) * il[d]);
    return k / (double)dim;
}

/* The kernel of @gp with unit variance between @a and @b, given the inverse squared
 * length-scales @ils2 and (additive) their square roots @il. */
static double kernel(
    const struct ty_gp *gp, const double *a, const double *b, const double *ils2, const double *il)
{
    return gp->additive ? additive(a, b, il, gp->dim) : matern(scaled_dist(a, b, ils2, gp->dim));
}

/* ---- the Gaussian process ------------------------------------------------------------------ */

struct ty_gp *ty_gp_new(size_t dim)
{
    struct ty_gp *gp = xcalloc(1, sizeof(*gp));
    gp->dim = dim;
    gp->log_ls = xcalloc(dim, sizeof(double));
    for (size_t d = 0; d < dim; d++)
        gp->log_ls[d] = LS_MU;
    gp->log_sf2 = 0;
    gp->log_sn2 = log(1e-4);
    gp->fit_nlp = INFINITY;
    return gp;
}

void ty_gp_set_data(struct ty_gp *gp, const double *x, const double *y, size_t n)
{
    if (n > gp->cap) {
        gp->cap = n;
        free(gp->x);
        free(gp->y);
        free(gp->l);
        free(gp->alpha);
        free(gp->work);
        free(gp->work2);
        gp->x = xcalloc(n * gp->dim, sizeof(double));
        gp->y = xcalloc(n, sizeof(double));
        gp->l = xcalloc(n * n, sizeof(double));
        gp->alpha = xcalloc(n, sizeof(double));
        gp->work = xcalloc(n, sizeof(double));
        gp->work2 = xcalloc(n * n, sizeof(double));
    }
    gp->n = n;
    if (n) {
        memcpy(gp->x, x, n * gp->dim * sizeof(double));
        memcpy(gp->y, y, n * sizeof(double));
    }
    gp->ready = 0;
}

/* Fill @k (n × n, lower triangle and diagonal) with the covariance under hyperparameters
 * @theta (dim log length-scales, log sf2, log sn2) plus @jitter on the diagonal. With @pairs
 * (n × n), each pair's scaled distance r goes to its lower triangle (pairs[i n + j], j < i)
 * and exp(-√5 r) to its upper (pairs[j n + i]), for the fit's gradient: the same values it
 * would compute again (half the exponentials of a likelihood evaluation). */
static void
build_cov(const struct ty_gp *gp, const double *theta, double jitter, double *k, double *pairs)
{
    size_t n = gp->n, dim = gp->dim;
    double sf2 = exp(theta[dim]), sn2 = exp(theta[dim + 1]);
    double *ils2 = xcalloc(2 * dim, sizeof(double)), *il = ils2 + dim;

    for (size_t d = 0; d < dim; d++)
        ils2[d] = exp(-2 * theta[d]), il[d] = exp(-theta[d]);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            if (gp->additive) { /* the gradient computes its terms again */
                k[i * n + j] = sf2 * additive(gp->x + i * dim, gp->x + j * dim, il, dim);
                continue;
            }
            double r = scaled_dist(gp->x + i * dim, gp->x + j * dim, ils2, dim);
            double e = exp(-SQRT5 * r);
            k[i * n + j] = sf2 * matern_e(r, e);
            if (pairs)
                pairs[i * n + j] = r, pairs[j * n + i] = e;
        }
        k[i * n + i] = sf2 + sn2 + jitter;
    }
    free(ils2);
}

/* Factorise into @l with jitter as needed (@pairs: as build_cov, may be NULL); returns the
 * jitter used, or -1 on failure. */
static double factorise(const struct ty_gp *gp, const double *theta, double *l, double *pairs)
{
    double sf2 = exp(theta[gp->dim]), jitter = 0;

    for (int tries = 0; tries < 8; tries++) {
        build_cov(gp, theta, jitter, l, pairs);
        if (ty_cholesky(l, gp->n) == 0)
            return jitter;
        jitter = jitter == 0 ? 1e-9 * sf2 : jitter * 10;
    }
    return -1;
}

static void get_theta(const struct ty_gp *gp, double *theta)
{
    memcpy(theta, gp->log_ls, gp->dim * sizeof(double));
    theta[gp->dim] = gp->log_sf2;
    theta[gp->dim + 1] = gp->log_sn2;
}

static void set_theta(struct ty_gp *gp, const double *theta)
{
    memcpy(gp->log_ls, theta, gp->dim * sizeof(double));
    gp->log_sf2 = theta[gp->dim];
    gp->log_sn2 = theta[gp->dim + 1];
    gp->ready = 0;
}

int ty_gp_update(struct ty_gp *gp)
{
    double *theta = xcalloc(gp->dim + 2, sizeof(double));
    double jitter;

    get_theta(gp, theta);
    gp->ready = 0;
    jitter = gp->n ? factorise(gp, theta, gp->l, NULL) : 0;
    free(theta);
    if (jitter < 0)
        return -EDOM;
    gp->jitter = jitter;
    memcpy(gp->alpha, gp->y, gp->n * sizeof(double));
    ty_solve_lower(gp->l, gp->n, gp->alpha);
    ty_solve_lower_t(gp->l, gp->n, gp->alpha);
    gp->ready = 1;
    return 0;
}

/* Prior mean and standard deviation, and bounds, of hyperparameter @i. */
static void hyper_prior(size_t dim, size_t i, double *mu, double *sd, double *lo, double *hi)
{
    if (i < dim) {
        *mu = LS_MU, *sd = LS_SD, *lo = LS_LO, *hi = LS_HI;
    } else if (i == dim) {
        *mu = SF_MU, *sd = SF_SD, *lo = SF_LO, *hi = SF_HI;
    } else {
        *mu = SN_MU, *sd = SN_SD, *lo = SN_LO, *hi = SN_HI;
    }
}

/* Negative log posterior at @theta, and its gradient into @grad when not NULL. @l is n × n
 * scratch, @kinv 2 n × n (with @grad). INFINITY when the covariance cannot be factorised. */
static double
nlp(const struct ty_gp *gp, const double *theta, double *grad, double *l, double *kinv)
{
    size_t n = gp->n, dim = gp->dim, np = dim + 2;
    double *alpha = gp->work, f = 0, jitter;

    jitter = factorise(gp, theta, l, grad ? kinv + n * n : NULL);
    if (jitter < 0)
        return INFINITY;
    memcpy(alpha, gp->y, n * sizeof(double));
    ty_solve_lower(l, n, alpha);
    for (size_t i = 0; i < n; i++)
        f += 0.5 * alpha[i] * alpha[i] + log(l[i * n + i]);
    f += 0.5 * (double)n * LOG2PI;
    ty_solve_lower_t(l, n, alpha);
    for (size_t i = 0; i < np; i++) {
        double mu, sd, lo, hi, z;
        hyper_prior(dim, i, &mu, &sd, &lo, &hi);
        z = (theta[i] - mu) / sd;
        f += 0.5 * z * z;
        if (grad)
            grad[i] = z / sd;
    }
    if (!grad)
        return f;

    /* kinv = L^-T L^-1: first L^-1 in place of l's upper part is awkward, so column by column */
    for (size_t c = 0; c < n; c++) {
        double *e = gp->work2 + c * n; /* row c of work2 holds L^-1 e_c */
        memset(e, 0, n * sizeof(double));
        e[c] = 1;
        ty_solve_lower_from(l, n, c, e);
    }
    ty_kinv_lower(gp->work2, n, kinv);

    {
        double sf2 = exp(theta[dim]), sn2 = exp(theta[dim + 1]);
        double *ils2 = xcalloc(dim, sizeof(double)), g_sf = 0, g_sn = 0;
        for (size_t d = 0; d < dim; d++)
            ils2[d] = exp(-2 * theta[d]);
        for (size_t i = 0; i < n; i++) {
            const double *xi = gp->x + i * dim;
            for (size_t j = 0; j < i; j++) {
                const double *xj = gp->x + j * dim;
                double w = 2 * (alpha[i] * alpha[j] - kinv[i * n + j]);
                if (gp->additive) {
                    /* d k / d log l_d = sf2 / dim (5/3) r_d² (1 + √5 r_d) exp(-√5 r_d) */
                    double c = w * sf2 / (double)dim;
                    for (size_t d = 0; d < dim; d++) {
                        double r = fabs(xi[d] - xj[d]) * sqrt(ils2[d]), e = exp(-SQRT5 * r);
                        g_sf += c * matern_e(r, e);
                        grad[d] -= 0.5 * c * (5.0 / 3.0) * r * r * (1 + SQRT5 * r) * e;
                    }
                    continue;
                }
                double r = kinv[n * n + i * n + j], e = kinv[n * n + j * n + i];
                double c = w * sf2 * (5.0 / 3.0) * (1 + SQRT5 * r) * e;
                g_sf += w * sf2 * (1 + SQRT5 * r + 5.0 / 3.0 * r * r) * e;
                for (size_t d = 0; d < dim; d++) {
                    double t = xi[d] - xj[d];
                    grad[d] -= 0.5 * c * t * t * ils2[d];
                }
            }
            {
                double w = alpha[i] * alpha[i] - kinv[i * n + i];
                g_sf += w * sf2;
                g_sn += w * sn2;
            }
        }
        grad[dim] -= 0.5 * g_sf;
        grad[dim + 1] -= 0.5 * g_sn;
        free(ils2);
    }
    return f;
}

double ty_gp_neg_log_posterior(struct ty_gp *gp)
{
    double *theta = xcalloc(gp->dim + 2, sizeof(double)), *l, f;
    get_theta(gp, theta);
    l = xcalloc(gp->n * gp->n + 1, sizeof(double));
    f = nlp(gp, theta, NULL, l, NULL);
    free(l);
    free(theta);
    return f;
}

double ty_gp_neg_log_posterior_grad(struct ty_gp *gp, double *grad)
{
    size_t n = gp->n;
    double *theta = xcalloc(gp->dim + 2, sizeof(double)), *l, *kinv, f;

    get_theta(gp, theta);
    l = xcalloc(n * n + 1, sizeof(double));
    kinv = xcalloc(2 * n * n + 1, sizeof(double));
    f = nlp(gp, theta, grad, l, kinv);
    free(kinv);
    free(l);
    free(theta);
    return f;
}

/* The L-BFGS memory: the last (up to LBFGS_M) steps s and gradient changes y, newest at
 * head - 1, with rho = 1 / (s . y); al is the two-loop recursion's scratch. */
struct lbfgs {
    size_t np, hist, head;
    double *s, *y, *rho, *al;
};

/* The search direction @d = -H @g by the two-loop recursion over the memory @m. Returns the
 * first step to try: 1, or for plain steepest descent (no memory) 1/|g| when |g| > 1. */
static double lbfgs_direction(struct lbfgs *m, const double *g, double *d)
{
    size_t np = m->np;
    double t = 1;

    for (size_t i = 0; i < np; i++)
        d[i] = -g[i];
    for (size_t k = 0; k < m->hist; k++) {
        size_t j = (m->head + LBFGS_M - 1 - k) % LBFGS_M;
        double a = 0;
        for (size_t i = 0; i < np; i++)
            a += m->s[j * np + i] * d[i];
        m->al[j] = a * m->rho[j];
        for (size_t i = 0; i < np; i++)
            d[i] -= m->al[j] * m->y[j * np + i];
    }
    if (m->hist) {
        size_t j = (m->head + LBFGS_M - 1) % LBFGS_M;
        double sy = 1 / m->rho[j], yy = 0;
        for (size_t i = 0; i < np; i++)
            yy += m->y[j * np + i] * m->y[j * np + i];
        for (size_t i = 0; i < np; i++)
            d[i] *= sy / yy;
    } else {
        double gg = 0;
        for (size_t i = 0; i < np; i++)
            gg += g[i] * g[i];
        t = gg > 1 ? 1 / sqrt(gg) : 1;
    }
    for (size_t k = m->hist; k-- > 0;) {
        size_t j = (m->head + LBFGS_M - 1 - k) % LBFGS_M;
        double b = 0;
        for (size_t i = 0; i < np; i++)
            b += m->y[j * np + i] * d[i];
        b *= m->rho[j];
        for (size_t i = 0; i < np; i++)
            d[i] += m->s[j * np + i] * (m->al[j] - b);
    }
    return t;
}

/* Remember the step from @x to @xn with gradients @g, @gn (skipped unless s . y > 1e-12, which
 * keeps the inverse Hessian estimate positive definite). */
static void
lbfgs_push(struct lbfgs *m, const double *x, const double *xn, const double *g, const double *gn)
{
    size_t np = m->np, h = m->head;
    double sy = 0;

    for (size_t i = 0; i < np; i++) {
        m->s[h * np + i] = xn[i] - x[i];
        m->y[h * np + i] = gn[i] - g[i];
        sy += m->s[h * np + i] * m->y[h * np + i];
    }
    if (sy > 1e-12) {
        m->rho[h] = 1 / sy;
        m->head = (h + 1) % LBFGS_M;
        m->hist += m->hist < LBFGS_M;
    }
}

/* Zero the components of @d that push @x out through a bound it sits on. Returns g . d. */
static double project_direction(
    size_t np, const double *x, const double *g, const double *lo, const double *hi, double *d)
{
    double gd = 0;

    for (size_t i = 0; i < np; i++) {
        if ((x[i] <= lo[i] && d[i] < 0) || (x[i] >= hi[i] && d[i] > 0))
            d[i] = 0; /* pinned at a bound */
        gd += g[i] * d[i];
    }
    return gd;
}

/* Backtracking line search from @x (value @fx, gradient @g) along @d from step @t, halving it,
 * each trial point clamped to the bounds: @xn, @gn, *@fn get the last point tried. Counts
 * evaluations in *@evals up to @max_evals. Returns whether the Armijo condition (a decrease of
 * at least 1e-4 of the one predicted by the gradient) was met. */
static bool line_search(const struct ty_gp *gp,
                        const double *x,
                        double fx,
                        const double *g,
                        const double *d,
                        double t,
                        const double *lo,
                        const double *hi,
                        double *xn,
                        double *gn,
                        double *fn,
                        int *evals,
                        int max_evals,
                        double *l,
                        double *kinv)
{
    size_t np = gp->dim + 2;
    double dec = 0;

    *fn = INFINITY;
    for (; *evals < max_evals; t *= 0.5) {
        dec = 0;
        for (size_t i = 0; i < np; i++) {
            double v = x[i] + t * d[i];
            xn[i] = v < lo[i] ? lo[i] : v > hi[i] ? hi[i] : v;
            dec += g[i] * (xn[i] - x[i]);
        }
        *fn = nlp(gp, xn, gn, l, kinv);
        (*evals)++;
        if (*fn <= fx + 1e-4 * dec)
            break;
    }
    return *fn <= fx + 1e-4 * dec;
}

/* Projected L-BFGS from @x (np values, updated to the best point found) within the bounds.
 * Returns the objective there. */
static double minimise(const struct ty_gp *gp, double *x, int max_evals, double *l, double *kinv)
{
    size_t np = gp->dim + 2;
    double *buf = xcalloc(np * (6 + 2 * LBFGS_M) + LBFGS_M * 2, sizeof(double));
    double *g = buf, *d = g + np, *xn = d + np, *gn = xn + np, *lo = gn + np, *hi = lo + np;
    struct lbfgs m = {.np = np, .s = hi + np};
    double fx;
    int evals = 1;

    m.y = m.s + np * LBFGS_M;
    m.rho = m.y + np * LBFGS_M;
    m.al = m.rho + LBFGS_M;
    for (size_t i = 0; i < np; i++) {
        double mu, sd;
        hyper_prior(gp->dim, i, &mu, &sd, &lo[i], &hi[i]);
        x[i] = x[i] < lo[i] ? lo[i] : x[i] > hi[i] ? hi[i] : x[i];
    }
    fx = nlp(gp, x, g, l, kinv);
    while (isfinite(fx) && evals < max_evals) {
        double t = lbfgs_direction(&m, g, d), fn;
        bool ok = project_direction(np, x, g, lo, hi, d) < 0;

        ok = ok && line_search(gp, x, fx, g, d, t, lo, hi, xn, gn, &fn, &evals, max_evals, l, kinv);
        if (!ok) {
            /* not a descent direction, or no decrease along it: restart from steepest descent,
             * or stop if that was steepest descent already */
            if (m.hist == 0)
                break;
            m.hist = 0;
            continue;
        }
        lbfgs_push(&m, x, xn, g, gn);
        memcpy(x, xn, np * sizeof(double));
        memcpy(g, gn, np * sizeof(double));
        /* converged: a relative decrease under 1e-7 */
        if (fx - fn < 1e-7 * (1 + fabs(fx))) {
            fx = fn;
            break;
        }
        fx = fn;
    }
    free(buf);
    return fx;
}

int ty_gp_fit(struct ty_gp *gp, int max_evals, int restart)
{
    size_t np = gp->dim + 2, n = gp->n;
    double *a = xcalloc(2 * np, sizeof(double)), *b = a + np;
    double *l = xcalloc(n * n + 1, sizeof(double)), *kinv = xcalloc(2 * n * n + 1, sizeof(double));
    double fa, fb;
    int r;

    get_theta(gp, a);
    fa = minimise(gp, a, max_evals, l, kinv);
    if (restart) {
        /* the default start: the length-scales' prior mean, unit signal, and a noise of 1e-4,
         * above the prior's 1e-5 so the fit does not start out interpolating */
        for (size_t d = 0; d < gp->dim; d++)
            b[d] = LS_MU;
        b[gp->dim] = 0;
        b[gp->dim + 1] = log(1e-4);
        fb = minimise(gp, b, max_evals, l, kinv);
        if (fb < fa || !isfinite(fa)) {
            memcpy(a, b, np * sizeof(double));
            fa = fb;
        }
    }
    set_theta(gp, a);
    gp->fit_nlp = fa;
    free(l);
    free(kinv);
    free(a);
    r = ty_gp_update(gp);
    return r;
}

/* The kernel vector @k of @xq against the data and the mean (k · alpha), with @il the inverse
 * squared length-scales followed by their square roots. */
static double predict_k(const struct ty_gp *gp, const double *xq, const double *il, double *k)
{
    size_t n = gp->n, dim = gp->dim;
    double sf2 = exp(gp->log_sf2), m = 0;

    for (size_t i = 0; i < n; i++) {
        k[i] = sf2 * kernel(gp, xq, gp->x + i * dim, il, il + dim);
        m += k[i] * gp->alpha[i];
    }
    return m;
}

/* The variance sf2 - |L^-1 k|² from the solved @k (>= 1e-12). */
static double predict_var(const struct ty_gp *gp, const double *k)
{
    double v = exp(gp->log_sf2);

    for (size_t i = 0; i < gp->n; i++)
        v -= k[i] * k[i];
    return v > 1e-12 ? v : 1e-12;
}

void ty_gp_predict_many(struct ty_gp *gp, const double *xq, size_t m, double *mean, double *var)
{
    size_t n = gp->n, dim = gp->dim, q = 0;
    double *il, *k;

    if (!gp->ready || n == 0) {
        for (size_t i = 0; i < m; i++)
            mean[i] = 0, var[i] = exp(gp->log_sf2);
        return;
    }
    il = xcalloc(2 * dim + 2 * n, sizeof(double));
    k = il + 2 * dim;
    for (size_t d = 0; d < dim; d++)
        il[d] = exp(-2 * gp->log_ls[d]), il[dim + d] = exp(-gp->log_ls[d]);
    for (; q + 2 <= m; q += 2) {
        mean[q] = predict_k(gp, xq + q * dim, il, k);
        mean[q + 1] = predict_k(gp, xq + (q + 1) * dim, il, k + n);
        ty_solve_lower_2(gp->l, n, k, k + n);
        var[q] = predict_var(gp, k);
        var[q + 1] = predict_var(gp, k + n);
    }
    if (q < m) {
        mean[q] = predict_k(gp, xq + q * dim, il, k);
        ty_solve_lower(gp->l, n, k);
        var[q] = predict_var(gp, k);
    }
    free(il);
}

void ty_gp_predict(struct ty_gp *gp, const double *xq, double *mean, double *var)
{
    ty_gp_predict_many(gp, xq, 1, mean, var);
}

double ty_warp_output(const double *y, size_t n, double scale, double *z, double *logjac)
{
    bool logw = isfinite(scale) && scale > 0;
    double ymin = INFINITY, mean = 0, sd = 0, sum = 0;

    for (size_t i = 0; i < n; i++)
        ymin = y[i] < ymin ? y[i] : ymin;
    for (size_t i = 0; i < n; i++) {
        if (logw) {
            double lj = -log(scale + (y[i] - ymin));
            z[i] = log1p((y[i] - ymin) / scale);
            sum += lj;
            if (logjac)
                logjac[i] = lj;
        } else {
            z[i] = y[i];
            if (logjac)
                logjac[i] = 0;
        }
        mean += z[i];
    }
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        sd += (z[i] - mean) * (z[i] - mean);
    sd = sqrt(sd / (double)n);
    if (!(sd > 1e-12 * (1 + fabs(mean))))
        sd = 1;
    for (size_t i = 0; i < n; i++) {
        z[i] = (z[i] - mean) / sd;
        if (logjac)
            logjac[i] -= log(sd);
    }
    return sum - (double)n * log(sd);
}

struct ty_gp *ty_gp_free(struct ty_gp *gp)
{
    if (!gp)
        return NULL;
    free(gp->x);
    free(gp->y);
    free(gp->log_ls);
    free(gp->l);
    free(gp->alpha);
    free(gp->work);
    free(gp->work2);
    free(gp);
    return NULL;
}
