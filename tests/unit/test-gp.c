/* SPDX-License-Identifier: Apache-2.0
 * test-gp.c: the Gaussian process (gp.h) and the default algorithm (tuner-gp.c): Cholesky and
 * triangular solves against known matrices, interpolation and shrinking variance at the data,
 * a hyperparameter fit recovering a length-scale, the fit's gradients for both kernels, the
 * additive kernel (likelier on a sum of one function per input, and predicting combinations not
 * seen; not on an interaction), the output warp (values and log-Jacobians),
 * and the Bayesian-optimising tuner:
 * deterministic per seed, valid values for every parameter type and scale, no duplicates,
 * distinct pending suggestions, failed trials, MAXIMIZE, a 2-D quadratic solved in 30
 * trials, and 4-D Rosenbrock and Hartmann6 at 100 trials (with the time per suggestion in 6-D).
 * JSON documents are written with ' for " (dq() swaps them). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "gp.h"
#include "hp-check.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "tap.h"
#include "tuner.h"

static void test_linalg(void)
{
    /* A = [[4,2,0],[2,5,3],[0,3,6]] = L L^T with L = [[2,0,0],[1,2,0],[0,1.5,sqrt(3.75)]] */
    double a[9] = {4, 2, 0, 2, 5, 3, 0, 3, 6}, b[3] = {2, 10, 9}, x[3];
    double bad[4] = {1, 2, 2, 1};

    is_int(ty_cholesky(a, 3), 0, "Cholesky of a positive-definite matrix");
    ok(fabs(a[0] - 2) < 1e-12 && fabs(a[3] - 1) < 1e-12 && fabs(a[4] - 2) < 1e-12 &&
           fabs(a[7] - 1.5) < 1e-12 && fabs(a[8] - sqrt(3.75)) < 1e-12,
       "the factor is the known L");
    ok(a[1] == 0 && a[2] == 0 && a[5] == 0, "upper triangle zeroed");
    /* A x = b with x = (0, 1, 1): b = (2, 8, 9) */
    b[1] = 8;
    memcpy(x, b, sizeof(x));
    ty_solve_lower(a, 3, x);
    ty_solve_lower_t(a, 3, x);
    ok(fabs(x[0]) < 1e-12 && fabs(x[1] - 1) < 1e-12 && fabs(x[2] - 1) < 1e-12,
       "L L^T x = b solved (x = 0, 1, 1)");
    is_int(ty_cholesky(bad, 2), -EDOM, "an indefinite matrix is refused");
}

static double f1(double x)
{
    return sin(6 * x) + 0.5 * x;
}

/* The one-chain-at-a-time forms that linalg.c's four-chain loops must match bit for bit. */
static void ref_cholesky(double *a, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        double *rj = a + j * n, d = rj[j];
        for (size_t k = 0; k < j; k++)
            d -= rj[k] * rj[k];
        d = sqrt(d);
        rj[j] = d;
        for (size_t i = j + 1; i < n; i++) {
            double *ri = a + i * n, s = ri[j];
            for (size_t k = 0; k < j; k++)
                s -= ri[k] * rj[k];
            ri[j] = s / d;
        }
        for (size_t k = j + 1; k < n; k++)
            rj[k] = 0;
    }
}

static void ref_solve_lower(const double *l, size_t n, double *b)
{
    for (size_t i = 0; i < n; i++) {
        double s = b[i];
        for (size_t k = 0; k < i; k++)
            s -= l[i * n + k] * b[k];
        b[i] = s / l[i * n + i];
    }
}

/* Factor and solve of random SPD matrices of every size from 1 to 13 (blocks of four and
 * their remainders): the same bits as the reference, and the fit's gradient (which inverts
 * the factor with the same loops) unchanged at a fixed point. */
static void test_linalg_bits(void)
{
    bool same_l = true, same_x = true;
    uint64_t seed = 12345;

    for (size_t n = 1; n <= 13; n++) {
        double *m = xcalloc(n * n, sizeof(double)), *a = xcalloc(n * n, sizeof(double));
        double *r = xcalloc(n * n, sizeof(double)), *b = xcalloc(n, sizeof(double));
        double *c = xcalloc(n, sizeof(double));
        for (size_t i = 0; i < n * n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            m[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
        }
        for (size_t i = 0; i < n; i++) /* a = m mᵀ + n I */
            for (size_t j = 0; j < n; j++) {
                double s = i == j ? (double)n : 0;
                for (size_t k = 0; k < n; k++)
                    s += m[i * n + k] * m[j * n + k];
                a[i * n + j] = r[i * n + j] = s;
            }
        for (size_t i = 0; i < n; i++)
            b[i] = c[i] = m[i] * 3 + 1.0 / 3;
        ty_cholesky(a, n);
        ref_cholesky(r, n);
        same_l = same_l && memcmp(a, r, n * n * sizeof(double)) == 0;
        ty_solve_lower(a, n, b);
        ref_solve_lower(r, n, c);
        same_x = same_x && memcmp(b, c, n * sizeof(double)) == 0;
        free(m), free(a), free(r), free(b), free(c);
    }
    ok(same_l, "Cholesky, n = 1..13: the same bits as one row at a time");
    ok(same_x, "forward substitution, n = 1..13: the same bits as one row at a time");
}

/* ty_gp_predict_many (two points' solves at once) against one point at a time, for data of
 * 1 to 11 points in 2-D: the same bits. */
static void test_predict_many(void)
{
    bool same = true;

    for (size_t n = 1; n <= 11; n++) {
        struct ty_gp *gp = ty_gp_new(2);
        double x[22], y[11], q[10], mu[5], var[5];
        for (size_t i = 0; i < n; i++) {
            x[2 * i] = fmod(0.37 * (double)i, 1), x[2 * i + 1] = fmod(0.61 * (double)i + 0.1, 1);
            y[i] = sin(5 * x[2 * i]) + x[2 * i + 1];
        }
        for (size_t i = 0; i < 10; i++)
            q[i] = fmod(0.23 * (double)i + 0.05, 1);
        ty_gp_set_data(gp, x, y, n);
        ty_gp_update(gp);
        ty_gp_predict_many(gp, q, 5, mu, var);
        for (size_t i = 0; i < 5; i++) {
            double m1, v1;
            ty_gp_predict(gp, q + 2 * i, &m1, &v1);
            same = same && memcmp(&m1, &mu[i], sizeof(double)) == 0 &&
                   memcmp(&v1, &var[i], sizeof(double)) == 0;
        }
        ty_gp_free(gp);
    }
    ok(same, "predictions of five points together: the same bits as one at a time");
}

static void test_gp(void)
{
    struct ty_gp *gp = ty_gp_new(1);
    double x[8], y[8], m, v, v_far, v_near;
    size_t n = 8;
    bool interp = true;

    for (size_t i = 0; i < n; i++) {
        x[i] = (double)i / (double)(n - 1);
        y[i] = f1(x[i]);
    }
    gp->log_sn2 = log(1e-6);
    gp->log_ls[0] = log(0.2);
    ty_gp_set_data(gp, x, y, n);
    is_int(ty_gp_update(gp), 0, "factorised");
    for (size_t i = 0; i < n; i++) {
        ty_gp_predict(gp, &x[i], &m, &v);
        interp = interp && fabs(m - y[i]) < 1e-3 && v < 1e-4;
    }
    ok(interp, "interpolates its training points with small noise, variance ~0 there");
    {
        double q = 0.5 / 7, far = 1.6;
        ty_gp_predict(gp, &q, &m, &v_near);
        gp->n = 1; /* variance with only the first point */
        ty_gp_update(gp);
        ty_gp_predict(gp, &q, &m, &v);
        ok(v_near < v, "variance shrinks as data is added nearby (%g < %g)", v_near, v);
        ty_gp_predict(gp, &far, &m, &v_far);
        ok(v_far > 0.9 * exp(gp->log_sf2), "far from the data the variance is the prior");
    }
    ty_gp_free(gp);

    /* fit: data from a GP-like smooth function with length-scale structure in dimension 0 only */
    gp = ty_gp_new(2);
    {
        size_t nn = 40;
        double *xx = xcalloc(2 * nn, sizeof(double)), *yy = xcalloc(nn, sizeof(double));
        double before, after;
        for (size_t i = 0; i < nn; i++) {
            xx[2 * i] = fmod(0.618034 * (double)i, 1.0);
            xx[2 * i + 1] = fmod(0.754878 * (double)i + 0.3, 1.0);
            yy[i] = sin(2 * M_PI * xx[2 * i] / 0.5); /* varies in x0, constant in x1 */
        }
        ty_gp_set_data(gp, xx, yy, nn);
        before = ty_gp_neg_log_posterior(gp);
        is_int(ty_gp_fit(gp, 200, 1), 0, "hyperparameters fitted");
        after = ty_gp_neg_log_posterior(gp);
        ok(after < before, "the fit improves the objective (%g -> %g)", before, after);
        ok(gp->fit_nlp == after,
           "the fit keeps the objective it ended at (%.17g, again %.17g)",
           gp->fit_nlp,
           after);
        ok(exp(gp->log_ls[0]) > 0.05 && exp(gp->log_ls[0]) < 0.5,
           "length-scale of the varying dimension recovered roughly (%g)",
           exp(gp->log_ls[0]));
        ok(exp(gp->log_ls[1]) > 3 * exp(gp->log_ls[0]),
           "the irrelevant dimension gets a longer length-scale (%g)",
           exp(gp->log_ls[1]));
        free(xx);
        free(yy);
    }
    ty_gp_free(gp);
}

/* Fit a new GP of kernel @additive (2-D) to @n points; returns it. */
static struct ty_gp *fit2(const double *x, const double *y, size_t n, int additive)
{
    struct ty_gp *gp = ty_gp_new(2);

    gp->additive = additive;
    ty_gp_set_data(gp, x, y, n);
    if (ty_gp_fit(gp, 200, 1) < 0)
        diag("fit failed");
    return gp;
}

/* The analytic gradient of the fit's objective against central differences, for both kernels,
 * at hyperparameters away from the fit (3-D data, 25 points). */
static void test_gradients(void)
{
    for (int additive = 0; additive <= 1; additive++) {
        struct ty_gp *gp = ty_gp_new(3);
        double x[75], y[25], g[5], worst = 0;

        for (size_t i = 0; i < 25; i++) {
            x[3 * i] = fmod(0.618034 * (double)i, 1), x[3 * i + 1] = fmod(0.754878 * (double)i, 1);
            x[3 * i + 2] = fmod(0.569840 * (double)i + 0.2, 1);
            y[i] = sin(5 * x[3 * i]) + x[3 * i + 1] * x[3 * i + 2];
        }
        gp->additive = additive;
        ty_gp_set_data(gp, x, y, 25);
        gp->log_ls[0] = log(0.2), gp->log_ls[1] = log(0.5), gp->log_ls[2] = log(1.3);
        gp->log_sf2 = log(0.8), gp->log_sn2 = log(1e-3);
        ty_gp_neg_log_posterior_grad(gp, g);
        for (size_t k = 0; k < 5; k++) {
            double *p = k < 3 ? &gp->log_ls[k] : k == 3 ? &gp->log_sf2 : &gp->log_sn2;
            double h = 1e-5, keep = *p, fp, fm, num;
            *p = keep + h;
            fp = ty_gp_neg_log_posterior(gp);
            *p = keep - h;
            fm = ty_gp_neg_log_posterior(gp);
            *p = keep;
            num = (fp - fm) / (2 * h);
            worst = fmax(worst, fabs(num - g[k]) / (1 + fabs(num)));
        }
        ok(worst < 1e-5,
           "%s kernel: the analytic gradient agrees with central differences (worst %.2g)",
           additive ? "additive" : "ARD",
           worst);
        ty_gp_free(gp);
    }
}

/* @n points of the unit square, scattered evenly (golden-ratio steps), into @x (n × 2). */
static void scattered(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        x[2 * i] = fmod(0.618034 * (double)i + 0.05, 1);
        x[2 * i + 1] = fmod(0.754878 * (double)i, 1);
    }
}

/* The additive kernel: on a sum of one function per input it is the likelier model and
 * predicts where no trial combined the two inputs' values; on a pure interaction the ARD
 * kernel is the likelier. */
static void test_additive(void)
{
    double x[2 * 40], y[40], q[2] = {0.75, 0.8}, m_add, m_ard, v, truth;
    struct ty_gp *add, *ard;
    size_t n = 0;

    /* f = sin(6 x0) + cos(5 x1) on 30 scattered points */
    scattered(x, 30);
    for (size_t i = 0; i < 30; i++)
        y[i] = sin(6 * x[2 * i]) + cos(5 * x[2 * i + 1]);
    add = fit2(x, y, 30, 1);
    ard = fit2(x, y, 30, 0);
    ok(ty_gp_neg_log_posterior(add) < ty_gp_neg_log_posterior(ard),
       "a sum of one function per input: the additive kernel is the likelier (%.2f < %.2f)",
       ty_gp_neg_log_posterior(add),
       ty_gp_neg_log_posterior(ard));
    ty_gp_free(add);
    ty_gp_free(ard);

    /* the same, seen along x1 = 0.1 and along x0 = 0.1 only */
    for (size_t i = 0; i < 10; i++, n++)
        x[2 * n] = (double)i / 9, x[2 * n + 1] = 0.1;
    for (size_t i = 0; i < 10; i++, n++)
        x[2 * n] = 0.1, x[2 * n + 1] = (double)i / 9;
    for (size_t i = 0; i < n; i++)
        y[i] = sin(6 * x[2 * i]) + cos(5 * x[2 * i + 1]);
    add = fit2(x, y, n, 1);
    ard = fit2(x, y, n, 0);
    truth = sin(6 * q[0]) + cos(5 * q[1]);
    ty_gp_predict(add, q, &m_add, &v);
    ty_gp_predict(ard, q, &m_ard, &v);
    ok(fabs(m_add - truth) < 0.1 && fabs(m_add - truth) < 0.5 * fabs(m_ard - truth),
       "and from two lines through the space it predicts a point combining their values "
       "(%.3f, ARD %.3f, true %.3f)",
       m_add,
       m_ard,
       truth);
    ty_gp_free(add);
    ty_gp_free(ard);

    /* f = 8 (x0 - 0.5)(x1 - 0.5) on 40 scattered points: no part of it is one input's */
    scattered(x, 40);
    for (size_t i = 0; i < 40; i++)
        y[i] = 8 * (x[2 * i] - 0.5) * (x[2 * i + 1] - 0.5);
    add = fit2(x, y, 40, 1);
    ard = fit2(x, y, 40, 0);
    ok(ty_gp_neg_log_posterior(ard) < ty_gp_neg_log_posterior(add),
       "a pure interaction: the ARD kernel is the likelier (%.2f < %.2f)",
       ty_gp_neg_log_posterior(ard),
       ty_gp_neg_log_posterior(add));
    ty_gp_free(add);
    ty_gp_free(ard);
}

static void test_warp(void)
{
    double y[5] = {3, 0, 1, 10, 100}, z[5], lj[5], mean = 0, sd = 0, sum;
    double w[5], wm = 0, wsd = 0, c[3] = {2, 2, 2}, cz[3];
    bool lin = true, jac = true;

    /* no warp: plain standardisation, log |dz/dy| = -log sd */
    sum = ty_warp_output(y, 5, INFINITY, z, lj);
    for (size_t i = 0; i < 5; i++)
        mean += y[i] / 5;
    for (size_t i = 0; i < 5; i++)
        sd += (y[i] - mean) * (y[i] - mean) / 5;
    sd = sqrt(sd);
    for (size_t i = 0; i < 5; i++)
        lin = lin && fabs(z[i] - (y[i] - mean) / sd) < 1e-12 && fabs(lj[i] + log(sd)) < 1e-12;
    ok(lin, "no warp: the objectives standardised, log-Jacobian -log sd");
    ok(fabs(sum + 5 * log(sd)) < 1e-9, "and the sum returned (%g)", sum);

    /* log warp with scale 2: w = log1p((y - min) / 2), standardised */
    sum = ty_warp_output(y, 5, 2, z, lj);
    for (size_t i = 0; i < 5; i++) {
        w[i] = log1p(y[i] / 2); /* min y is 0 */
        wm += w[i] / 5;
    }
    for (size_t i = 0; i < 5; i++)
        wsd += (w[i] - wm) * (w[i] - wm) / 5;
    wsd = sqrt(wsd);
    for (size_t i = 0; i < 5; i++) {
        lin = lin && fabs(z[i] - (w[i] - wm) / wsd) < 1e-12;
        /* d z / d y = 1 / ((2 + y) wsd), checked by a central difference of the warp */
        jac = jac && fabs(exp(lj[i]) - (log1p((y[i] + 1e-6) / 2) - log1p((y[i] - 1e-6) / 2)) /
                                           2e-6 / wsd) < 1e-6 * exp(lj[i]);
    }
    ok(lin, "log warp: log1p(gap / scale) standardised");
    ok(jac, "per-point log-Jacobian matches a finite difference");
    ok(fabs(sum - (lj[0] + lj[1] + lj[2] + lj[3] + lj[4])) < 1e-12, "sum of the log-Jacobians");
    ok(z[1] < z[2] && z[2] < z[0] && z[0] < z[3] && z[3] < z[4], "order kept");
    ok((z[4] - z[3]) / (z[3] - z[1]) < (100.0 - 10) / (10 - 0),
       "the long tail compressed relative to the best values");
    ty_warp_output(c, 3, 2, cz, NULL);
    ok(cz[0] == 0 && cz[1] == 0 && cz[2] == 0, "constant objectives: zeros, no division by 0");
}

#define P_MIXED                                                                                    \
    "{'parameterName':'lr','type':'DOUBLE','minValue':1e-5,'maxValue':1,'scaleType':'UNIT_LOG_"    \
    "SCALE'},"                                                                                     \
    "{'parameterName':'m','type':'DOUBLE','minValue':0.5,'maxValue':0.999,'scaleType':'UNIT_"      \
    "REVERSE_LOG_SCALE'},"                                                                         \
    "{'parameterName':'n','type':'INTEGER','minValue':1,'maxValue':10},"                           \
    "{'parameterName':'b','type':'INTEGER','minValue':8,'maxValue':512,'scaleType':'UNIT_LOG_"     \
    "SCALE'},"                                                                                     \
    "{'parameterName':'d','type':'DISCRETE','discreteValues':[1,2,4,8,16]},"                       \
    "{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['sgd','adam','rmsprop']}"

/* An objective of the mixed space's JSON parameters (lower is better). */
static double mixed_objective(const json_t *p)
{
    double lr = json_real_value(json_object_get(p, "lr"));
    double n = (double)json_integer_value(json_object_get(p, "n"));
    double d = json_real_value(json_object_get(p, "d"));
    const char *o = json_string_value(json_object_get(p, "o"));
    return pow(log10(lr) + 3, 2) + 0.1 * (n - 4) * (n - 4) + fabs(d - 4) +
           (strcmp(o, "adam") == 0 ? 0 : 1);
}

/* Run a sequential study; the JSON of every suggestion appended to *log (a string). Returns
 * the best objective; *valid false on any invalid or duplicate suggestion. */
static double run_study(const struct ty_hp_spec *hp, uint64_t seed, char **log, bool *valid)
{
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    json_t *seen = json_array();
    size_t n = 0;
    double best = INFINITY;

    *valid = ty_tuner_new(hp, seed, &t, &err) == 0;
    while (*valid && ty_tuner_suggest(t, 1, &s, &n, &err) == 0 && n == 1) {
        double f = mixed_objective(s[0].parameters), v;
        for (size_t i = 0; i < hp->n_params; i++)
            *valid = *valid &&
                     ty_hp_value_from_json(&hp->params[i],
                                           json_object_get(s[0].parameters, hp->params[i].name),
                                           &v,
                                           &err) == 0;
        for (size_t i = 0; i < json_array_size(seen); i++)
            if (json_equal(json_array_get(seen, i), s[0].parameters))
                *valid = false;
        json_array_append(seen, s[0].parameters);
        {
            _cleanup_free_ char *js = ty_json_compact(s[0].parameters);
            char *nl = xasprintf("%s%s\n", *log ? *log : "", js);
            free(*log);
            *log = nl;
        }
        best = f < best ? f : best;
        ty_tuner_complete(t, s[0].trial_id, true, f, &err);
        ty_trial_suggestions_free(s, n);
    }
    json_decref(seen);
    ty_tuner_free(t);
    return best;
}

static void test_tuner_mixed(void)
{
    struct ty_hp_spec *hp = spec_of("{'maxTrials':25,'params':[" P_MIXED "]}");
    char *a = NULL, *b = NULL, *c = NULL;
    bool va, vb, vc;
    double best;

    if (!ok(hp, "mixed spec with the default algorithm parses"))
        return;
    best = run_study(hp, 7, &a, &va);
    run_study(hp, 7, &b, &vb);
    run_study(hp, 8, &c, &vc);
    ok(va && vb && vc, "every suggestion valid for its type and scale, none repeated");
    ok(a && b && strcmp(a, b) == 0, "deterministic for a seed");
    ok(a && c && strcmp(a, c) != 0, "another seed, another study");
    ok(best < 2, "the mixed objective is improved on (best %g)", best);
    free(a);
    free(b);
    free(c);
    ty_hp_free(hp);
}

static void test_tuner_small_space(void)
{
    /* 6 points in all: the tuner must cover them without repeats, then may repeat */
    struct ty_hp_spec *hp = spec_of("{'maxTrials':6,'params':["
                                    "{'parameterName':'n','type':'INTEGER','minValue':1,'maxValue':"
                                    "3},{'parameterName':'o','type':'CATEGORICAL',"
                                    "'categoricalValues':['a','b']}]}");
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    json_t *seen = json_array();
    size_t n = 0;
    bool dup = false;

    if (!hp || ty_tuner_new(hp, 1, &t, &err) < 0) {
        ok(0, "small space study");
        json_decref(seen);
        ty_hp_free(hp);
        return;
    }
    while (ty_tuner_suggest(t, 1, &s, &n, &err) == 0 && n == 1) {
        for (size_t i = 0; i < json_array_size(seen); i++)
            dup = dup || json_equal(json_array_get(seen, i), s[0].parameters);
        json_array_append(seen, s[0].parameters);
        ty_tuner_complete(t, s[0].trial_id, json_array_size(seen) % 3 != 0, 1.0, &err);
        ty_trial_suggestions_free(s, n);
    }
    is_int(json_array_size(seen), 6, "maxTrials suggestions, failed ones counted");
    ok(!dup, "a 6-point space covered without a repeat (failures included)");
    json_decref(seen);
    ty_tuner_free(t);
    ty_hp_free(hp);
}

static double quad(const json_t *p)
{
    double x = json_real_value(json_object_get(p, "x"));
    double y = json_real_value(json_object_get(p, "y"));
    return -((x - 1.3) * (x - 1.3) + 2 * (y + 0.7) * (y + 0.7)); /* MAXIMIZE: 0 at (1.3, -0.7) */
}

static void test_tuner_quadratic(void)
{
    struct ty_hp_spec *hp =
        spec_of("{'goal':'MAXIMIZE','maxTrials':30,'maxParallelTrials':3,'params':["
                "{'parameterName':'x','type':'DOUBLE','minValue':-5,'maxValue':5},"
                "{'parameterName':'y','type':'DOUBLE','minValue':-5,'maxValue':5}]}");
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    size_t n = 0, batches = 0, distinct = 0;
    double best = -INFINITY, ms = 0;
    const json_t *bp;

    if (!hp || ty_tuner_new(hp, 11, &t, &err) < 0) {
        ok(0, "quadratic study");
        ty_hp_free(hp);
        return;
    }
    while (ty_tuner_suggest(t, 3, &s, &n, &err) == 0 && n > 0) {
        batches++;
        distinct += n < 2 || !json_equal(s[0].parameters, s[1].parameters);
        for (size_t i = 0; i < n; i++) {
            double f = quad(s[i].parameters);
            best = f > best ? f : best;
            /* one trial in 7 fails: left out of the model, still counted */
            ty_tuner_complete(t, s[i].trial_id, (ty_tuner_n_completed(t) + 1) % 7 != 0, f, &err);
        }
        ty_trial_suggestions_free(s, n);
    }
    is_int(ty_tuner_n_suggested(t), 30, "30 trials in batches of 3");
    ok(distinct == batches, "suggestions made while others are pending differ");
    ok(best > -0.05, "a 2-D quadratic gets close to its maximum in 30 trials (%g)", best);
    ok(ty_tuner_best(t, &best, &bp) && best > -0.05, "and the best trial says so");
    ty_tuner_free(t);

    /* latency at 100 trials */
    hp->max_trials = 101;
    if (ty_tuner_new(hp, 3, &t, &err) == 0) {
        struct timespec t0, t1;
        for (int i = 0; i < 101; i++) {
            clock_gettime(CLOCK_MONOTONIC, &t0);
            ty_tuner_suggest(t, 1, &s, &n, &err);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (i >= 90)
                ms +=
                    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
            if (n)
                ty_tuner_complete(t, s[0].trial_id, true, quad(s[0].parameters), &err);
            ty_trial_suggestions_free(s, n);
        }
        diag("mean ms per suggestion at trials 91-101: %.2f", ms / 11);
        ty_tuner_free(t);
    }
    ty_hp_free(hp);
}

/* A bowl of objectives scaled by @scale: the search must not depend on the scale, even where
 * the objectives' gaps and squares overflow a double (1e200). Returns the best found after
 * 20 trials over @scale, less 1: the bowl's least is 1 at (0.3, 0.6), and with @scale below 0
 * the least of the objective is at the corner (1, 0), 1.85 times @scale. */
static double scaled_bowl(double scale)
{
    struct ty_hp_spec *hp =
        spec_of("{'goal':'MINIMIZE','maxTrials':20,'params':["
                "{'parameterName':'x','type':'DOUBLE','minValue':0,'maxValue':1},"
                "{'parameterName':'y','type':'DOUBLE','minValue':0,'maxValue':1}]}");
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    size_t n = 0;
    double best = INFINITY;

    if (!hp || ty_tuner_new(hp, 0, &t, &err) < 0) {
        ty_hp_free(hp);
        return INFINITY;
    }
    while (ty_tuner_suggest(t, 1, &s, &n, &err) == 0 && n == 1) {
        double x = json_real_value(json_object_get(s[0].parameters, "x"));
        double y = json_real_value(json_object_get(s[0].parameters, "y"));
        double f = scale * ((x - 0.3) * (x - 0.3) + (y - 0.6) * (y - 0.6) + 1);
        best = f < best ? f : best;
        ty_tuner_complete(t, s[0].trial_id, true, f, &err);
        ty_trial_suggestions_free(s, n);
    }
    ty_tuner_free(t);
    ty_hp_free(hp);
    return best / scale - 1;
}

static void test_tuner_huge_objectives(void)
{
    double r1 = scaled_bowl(1), r200 = scaled_bowl(1e200), r300 = scaled_bowl(-1e300);

    ok(r1 < 1e-4, "a 2-D bowl in 20 trials: relative regret %g", r1);
    ok(r200 < 1e-4, "the same bowl times 1e200 (gaps whose squares overflow): %g", r200);
    ok(fabs(r300 - 0.85) < 1e-4, "times -1e300 (its least 1.85e300 at a corner): %g", r300 + 1);
}

/* Hartmann6 (minimum -3.32237) and 4-D Rosenbrock (minimum 0) of the parameters x1..x6. */
static double hartmann6(const double *x)
{
    static const double al[4] = {1, 1.2, 3, 3.2};
    static const double a[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double p[4][6] = {{.1312, .1696, .5569, .0124, .8283, .5886},
                                   {.2329, .4135, .8307, .3736, .1004, .9991},
                                   {.2348, .1451, .3522, .2883, .3047, .6650},
                                   {.4047, .8828, .8732, .5743, .1091, .0381}};
    double f = 0;
    for (int i = 0; i < 4; i++) {
        double e = 0;
        for (int d = 0; d < 6; d++)
            e += a[i][d] * (x[d] - p[i][d]) * (x[d] - p[i][d]);
        f -= al[i] * exp(-e);
    }
    return f;
}

static double rosenbrock4(const double *x)
{
    double f = 0;
    for (int i = 0; i < 3; i++)
        f += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
    return f;
}

/* Schwefel's function in 3-D on [-500, 500] (minimum 0 at 420.97 in every coordinate; the
 * second-best basin of each coordinate at -302.5, far across its range). */
static double schwefel3(const double *x)
{
    double f = 418.9828872724338 * 3;
    for (int d = 0; d < 3; d++)
        f -= x[d] * sin(sqrt(fabs(x[d])));
    return f;
}

/* A sequential study of @dim DOUBLE parameters x1.. on [lo, hi] minimising @fn for @trials
 * trials; returns the best value, and *ms_last10 and *cpu_last10 the mean wall and CPU time
 * (ms) of the last 10 suggestions. */
static double run_box(size_t dim,
                      double lo,
                      double hi,
                      double (*fn)(const double *),
                      int trials,
                      uint64_t seed,
                      double *ms_last10,
                      double *cpu_last10)
{
    char params[1024] = "", *text;
    struct ty_hp_spec *hp;
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    size_t n = 0;
    double best = INFINITY, x[8];

    *ms_last10 = *cpu_last10 = 0;
    for (size_t d = 0; d < dim; d++)
        snprintf(params + strlen(params),
                 sizeof(params) - strlen(params),
                 "%s{'parameterName':'x%zu','type':'DOUBLE','minValue':%g,'maxValue':%g}",
                 d ? "," : "",
                 d + 1,
                 lo,
                 hi);
    text = xasprintf("{'goal':'MINIMIZE','maxTrials':%d,'params':[%s]}", trials, params);
    hp = spec_of(text);
    free(text);
    if (!hp || ty_tuner_new(hp, seed, &t, &err) < 0) {
        ty_hp_free(hp);
        return INFINITY;
    }
    for (int i = 0; i < trials; i++) {
        struct timespec t0, t1, c0, c1;
        char name[32];
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        if (ty_tuner_suggest(t, 1, &s, &n, &err) < 0 || n != 1) {
            diag("suggest stopped at trial %d: %s", i, err.msg);
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        if (i >= trials - 10)
            *cpu_last10 +=
                ((double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6) /
                10;
        if (i >= trials - 10)
            *ms_last10 +=
                ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) /
                10;
        for (size_t d = 0; d < dim; d++) {
            snprintf(name, sizeof(name), "x%zu", d + 1);
            x[d] = json_number_value(json_object_get(s[0].parameters, name));
        }
        best = fn(x) < best ? fn(x) : best;
        ty_tuner_complete(t, s[0].trial_id, true, fn(x), &err);
        ty_trial_suggestions_free(s, n);
    }
    ty_tuner_free(t);
    ty_hp_free(hp);
    return best;
}

static void test_tuner_benchmarks(void)
{
    double ms, cpu, best;

    /* the design-anchored output warp converges down Rosenbrock's valley (before it:
     * this seed: 0.57); deterministic for the seed */
    best = run_box(4, -2, 2, rosenbrock4, 100, 5, &ms, &cpu);
    ok(best < 0.5, "4-D Rosenbrock: regret %g after 100 trials (< 0.5)", best);
    best = run_box(6, 0, 1, hartmann6, 100, 1, &ms, &cpu);
    ok(best + 3.32237 < 0.01, "Hartmann6: regret %g after 100 trials (< 0.01)", best + 3.32237);
    diag("Hartmann6 (6-D): mean per suggestion over trials 91-100: %.2f ms wall, %.2f ms CPU",
         ms,
         cpu);
}

/* Schwefel's minimum lies across the range of each coordinate from the second-best basins: a
 * trust region around the best trial does not reach it, a coordinate move of the best point
 * does (without them none of these seeds found it in 100 trials: regrets 217 to 632). */
static void test_tuner_coordinate_moves(void)
{
    static const uint64_t seeds[] = {1, 2, 7, 14, 17, 19};
    double ms, cpu;
    int found = 0;

    for (size_t i = 0; i < TY_ARRAY_SIZE(seeds); i++) {
        double best = run_box(3, -500, 500, schwefel3, 100, seeds[i], &ms, &cpu);
        diag("Schwefel3, seed %" PRIu64 ": regret %g after 100 trials", seeds[i], best);
        found += best < 1;
    }
    ok(found >= 4, "Schwefel3: the global basin found in %d of 6 studies (>= 4)", found);
}

int main(void)
{
    test_tuner_huge_objectives();
    test_linalg();
    test_linalg_bits();
    test_predict_many();
    test_gp();
    test_gradients();
    test_additive();
    test_warp();
    test_tuner_mixed();
    test_tuner_small_space();
    test_tuner_quadratic();
    test_tuner_benchmarks();
    test_tuner_coordinate_moves();
    return done_testing();
}
