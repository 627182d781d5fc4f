/* SPDX-License-Identifier: Apache-2.0
 * test-tuner.c: the tuner (tuner.h): the unit-interval space for every type and scale, random
 * search (in bounds, deterministic per seed, uniform in the warped space), grid search (each
 * point once, then exhausted; DOUBLE refused), maxTrials with failed trials, a short study of
 * the default algorithm (tested in depth by test-gp.c), trial bookkeeping errors, and
 * ty_hp_spec_from_json.
 *
 * JSON documents are written with ' for " (dq() swaps them) to keep them readable. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "hp-check.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "spec.h"
#include "tap.h"
#include "tuner.h"

#define P_X "{'parameterName':'x','type':'DOUBLE','minValue':-5,'maxValue':10}"
#define P_LOG                                                                                      \
    "{'parameterName':'lr','type':'DOUBLE','minValue':1e-5,'maxValue':1,'scaleType':'UNIT_LOG_"    \
    "SCALE'}"
#define P_RLOG                                                                                     \
    "{'parameterName':'m','type':'DOUBLE','minValue':0.5,'maxValue':0.999,'scaleType':'UNIT_"      \
    "REVERSE_LOG_SCALE'}"
#define P_INT                                                                                      \
    "{'parameterName':'n','type':'INTEGER','minValue':1,'maxValue':10,'scaleType':'UNIT_LINEAR_"   \
    "SCALE'}"
#define P_ILOG                                                                                     \
    "{'parameterName':'b','type':'INTEGER','minValue':8,'maxValue':512,'scaleType':'UNIT_LOG_"     \
    "SCALE'}"
#define P_IRLOG                                                                                    \
    "{'parameterName':'e','type':'INTEGER','minValue':1,'maxValue':100,'scaleType':'UNIT_REVERSE_" \
    "LOG_SCALE'}"
#define P_DISC                                                                                     \
    "{'parameterName':'d','type':'DISCRETE','discreteValues':[1,2,4,8,16],'scaleType':'UNIT_LOG_"  \
    "SCALE'}"
#define P_CAT                                                                                      \
    "{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['sgd','adam','rmsprop']}"
#define ALL P_X "," P_LOG "," P_RLOG "," P_INT "," P_ILOG "," P_IRLOG "," P_DISC "," P_CAT

/* ---- the space ----------------------------------------------------------------------------- */

static void test_space(void)
{
    struct ty_hp_spec *hp = spec_of("{'algorithm':'RANDOM_SEARCH','params':[" ALL "]}");
    if (!ok(hp, "spec with every type and scale parses"))
        return;
    for (size_t i = 0; i < hp->n_params; i++) {
        const struct ty_hp_param *p = &hp->params[i];
        bool in_bounds = true, integral = true, round_trip = true, monotone = true;
        double prev = -INFINITY;
        for (int k = 0; k <= 1000; k++) {
            double u = k / 1000.0, v = ty_hp_from_unit(p, u), u2 = ty_hp_to_unit(p, v);
            double v2 = ty_hp_from_unit(p, u2);
            double val;
            if (p->type == TY_HP_DOUBLE || p->type == TY_HP_INTEGER)
                in_bounds &= v >= p->min && v <= p->max;
            if (p->type == TY_HP_INTEGER)
                integral &= v == floor(v);
            in_bounds &= u2 >= 0 && u2 <= 1;
            /* continuous: value -> unit -> value is the identity (to rounding) */
            if (p->type == TY_HP_DOUBLE)
                round_trip &= fabs(v2 - v) <= 1e-9 * fmax(1, fabs(v)) && fabs(u2 - u) < 1e-9;
            else
                round_trip &= v2 == v; /* snapped values are fixed points */
            monotone &= v >= prev;
            prev = v;
            _cleanup_json_ json_t *j = ty_hp_value_to_json(p, v);
            in_bounds &= ty_hp_value_from_json(p, j, &val, &err) == 0 && val == v;
        }
        ok(in_bounds, "%s: values and unit coordinates stay in bounds and are valid", p->name);
        ok(integral, "%s: INTEGER values are integral", p->name);
        ok(round_trip, "%s: unit -> value -> unit -> value is stable", p->name);
        ok(monotone, "%s: from_unit is non-decreasing", p->name);
    }
    /* the exact warps */
    ok(fabs(ty_hp_from_unit(&hp->params[0], 0.5) - 2.5) < 1e-12, "linear: midpoint of [-5,10]");
    ok(fabs(ty_hp_from_unit(&hp->params[1], 0.5) - 1e-5 * pow(1e5, 0.5)) < 1e-12,
       "log: u=0.5 is the geometric mean");
    ok(fabs(ty_hp_from_unit(&hp->params[2], 0.5) - (0.999 + 0.5 - sqrt(0.5 * 0.999))) < 1e-12,
       "reverse log: u=0.5 is max + min - geometric mean (as random_tuner.py)");
    ok(ty_hp_from_unit(&hp->params[2], 0.9) - ty_hp_from_unit(&hp->params[2], 0.8) <
           ty_hp_from_unit(&hp->params[2], 0.2) - ty_hp_from_unit(&hp->params[2], 0.1),
       "reverse log: dense near max");
    ok(ty_hp_from_unit(&hp->params[0], 0) == -5 && ty_hp_from_unit(&hp->params[0], 1) == 10 &&
           ty_hp_from_unit(&hp->params[0], 7) == 10 && ty_hp_from_unit(&hp->params[0], -1) == -5,
       "ends map to bounds, outside [0,1] clamps");
    ok(ty_hp_from_unit(&hp->params[3], 0) == 1 && ty_hp_from_unit(&hp->params[3], 1) == 10 &&
           ty_hp_from_unit(&hp->params[3], 0.05) == 1 && ty_hp_from_unit(&hp->params[3], 0.15) == 2,
       "integer: each value owns an equal share of [0,1]");
    ok(ty_hp_from_unit(&hp->params[6], 0.5) == 4 && ty_hp_from_unit(&hp->params[6], 0.2) == 2 &&
           ty_hp_from_unit(&hp->params[6], 1) == 16,
       "discrete: nearest value in the warped space");
    ok(ty_hp_from_unit(&hp->params[7], 0) == 0 && ty_hp_from_unit(&hp->params[7], 0.5) == 1 &&
           ty_hp_from_unit(&hp->params[7], 1) == 2 && ty_hp_to_unit(&hp->params[7], 1) == 0.5,
       "categorical: index <-> unit");
    is_int(ty_hp_n_choices(&hp->params[7]), 3, "categorical has 3 choices");
    {
        _cleanup_json_ json_t *j = ty_hp_value_to_json(&hp->params[7], 2);
        is_str(json_string_value(j), "rmsprop", "categorical index 2 is 'rmsprop'");
    }
    {
        double v;
        _cleanup_json_ json_t *bad_int = json_real(2.5), *bad_disc = json_real(3);
        _cleanup_json_ json_t *bad_cat = json_string("nadam"), *bad_x = json_real(10.5);
        ok(ty_hp_value_from_json(&hp->params[3], bad_int, &v, &err) == -EINVAL,
           "2.5 is no INTEGER");
        like(err.msg, "n: INTEGER", "message names the parameter and rule");
        ok(ty_hp_value_from_json(&hp->params[6], bad_disc, &v, &err) == -EINVAL,
           "3 is no DISCRETE value");
        ok(ty_hp_value_from_json(&hp->params[7], bad_cat, &v, &err) == -EINVAL,
           "'nadam' is no category");
        ok(ty_hp_value_from_json(&hp->params[0], bad_x, &v, &err) == -EINVAL,
           "10.5 is out of bounds");
    }
    ty_hp_free(hp);
    {
        struct ty_hp_spec *lg = spec_of("{'params':[" P_LOG "," P_RLOG "]}");
        if (ok(lg, "log spec parses")) {
            ok(ty_hp_from_unit(&lg->params[0], 0) == 1e-5 &&
                   ty_hp_from_unit(&lg->params[0], 1) == 1,
               "UNIT_LOG_SCALE: the ends are the bounds exactly");
            ok(ty_hp_from_unit(&lg->params[1], 0) == 0.5 &&
                   ty_hp_from_unit(&lg->params[1], 1) == 0.999,
               "UNIT_REVERSE_LOG_SCALE: the ends are the bounds exactly");
        }
        ty_hp_free(lg);
    }
}

/* ---- random search ----------------------------------------------------------------------- */

/* Draw @n trials of @t into @out (one JSON object per trial, compact), returns the count. */
static size_t draw(struct ty_tuner *t, size_t n, char **out)
{
    struct ty_trial_suggestion *s = NULL;
    size_t got = 0;
    if (ty_tuner_suggest(t, n, &s, &got, &err) < 0)
        return 0;
    for (size_t i = 0; i < got; i++)
        out[i] = ty_json_compact(s[i].parameters);
    ty_trial_suggestions_free(s, got);
    return got;
}

static void test_random(void)
{
    enum { N = 4000, BUCKETS = 10 };
    struct ty_hp_spec *hp =
        spec_of("{'algorithm':'RANDOM_SEARCH','maxTrials':4000,'params':[" ALL "]}");
    struct ty_tuner *a = NULL, *b = NULL, *c = NULL;
    char **sa = xcalloc(N, sizeof(char *)), **sb = xcalloc(N, sizeof(char *));
    char **sc = xcalloc(N, sizeof(char *));
    struct ty_trial_suggestion *s = NULL;
    size_t n = 0, same = 0, differ = 0;

    if (!ok(hp, "random spec parses"))
        return;
    ok(ty_tuner_new(hp, 7, &a, &err) == 0 && ty_tuner_new(hp, 7, &b, &err) == 0 &&
           ty_tuner_new(hp, 8, &c, &err) == 0,
       "three random tuners");
    is_int(draw(a, N, sa), N, "seed 7 gives %d suggestions", N);
    for (size_t k = 0; k < N; k += 1000) /* in varied batch sizes */
        draw(b, 1000, sb + k);
    draw(c, N, sc);
    for (size_t i = 0; i < N; i++) {
        same += sa[i] && sb[i] && strcmp(sa[i], sb[i]) == 0;
        differ += sa[i] && sc[i] && strcmp(sa[i], sc[i]) != 0;
    }
    is_int(same, N, "same seed, same suggestions (whatever the batch size)");
    is_int(differ, N, "another seed, other suggestions");
    ok(ty_tuner_suggest(a, 1, &s, &n, &err) == 0 && n == 0 && !s, "maxTrials reached: exhausted");

    /* uniform in the warped space: chi-square over 10 buckets of each parameter's unit
     * coordinate (numeric) or its choices (DISCRETE, CATEGORICAL) */
    for (size_t i = 0; i < hp->n_params; i++) {
        const struct ty_hp_param *p = &hp->params[i];
        size_t nb = ty_hp_n_choices(p) ? ty_hp_n_choices(p) : BUCKETS;
        double count[BUCKETS] = {0}, chi2 = 0, expect;
        bool valid = true;
        if (p->type == TY_HP_INTEGER) /* buckets of whole integers */
            nb = p->max - p->min + 1 <= BUCKETS ? (size_t)(p->max - p->min + 1) : BUCKETS;
        for (size_t k = 0; k < N; k++) {
            _cleanup_json_ json_t *o = NULL;
            double v;
            ty_json_parse(sa[k], strlen(sa[k]), &o, NULL);
            valid &= ty_hp_value_from_json(p, json_object_get(o, p->name), &v, &err) == 0;
            if (p->type == TY_HP_CATEGORICAL)
                count[(size_t)v]++;
            else if (p->type == TY_HP_DISCRETE) {
                for (size_t d = 0; d < p->n_discrete; d++)
                    count[d] += p->discrete[d] == v;
            } else if (p->type == TY_HP_INTEGER && nb == (size_t)(p->max - p->min + 1))
                count[(size_t)(v - p->min)]++;
            else {
                double u = ty_hp_to_unit(p, v);
                count[u >= 1 ? nb - 1 : (size_t)(u * nb)]++;
            }
        }
        expect = (double)N / nb;
        for (size_t k = 0; k < nb; k++)
            chi2 += (count[k] - expect) * (count[k] - expect) / expect;
        ok(valid, "%s: every random value follows the value rules", p->name);
        /* 9 degrees of freedom: p = 1e-4 at about 33; loose on purpose. Integer log scales
         * are not uniform over whole integers, so they are only checked for validity. */
        if (p->type != TY_HP_INTEGER || p->scale == TY_HP_SCALE_LINEAR ||
            p->scale == TY_HP_SCALE_NONE)
            ok(chi2 < 35,
               "%s: uniform in the warped space (chi2 %.1f over %zu buckets)",
               p->name,
               chi2,
               nb);
    }
    for (size_t i = 0; i < N; i++) {
        free(sa[i]);
        free(sb[i]);
        free(sc[i]);
    }
    free(sa);
    free(sb);
    free(sc);
    ty_tuner_free(a);
    ty_tuner_free(b);
    ty_tuner_free(c);
    ty_hp_free(hp);
}

/* ---- grid search ------------------------------------------------------------------------- */

static void test_grid(void)
{
    struct ty_hp_spec *hp =
        spec_of("{'algorithm':'GRID_SEARCH','maxTrials':100,'params':["
                "{'parameterName':'n','type':'INTEGER','minValue':-1,'maxValue':2},"
                "{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['a','b','c']},"
                "{'parameterName':'d','type':'DISCRETE','discreteValues':[0.5,2]}]}");
    struct ty_tuner *t = NULL;
    char *seen[100] = {0};
    size_t n = 0, got, dups = 0;
    struct ty_trial_suggestion *s = NULL;

    if (!ok(hp, "grid spec parses") || !ok(ty_tuner_new(hp, 1, &t, &err) == 0, "grid tuner"))
        return;
    while ((got = draw(t, 5, seen + n)) > 0)
        n += got;
    is_int(n, 4 * 3 * 2, "the 4x3x2 grid gives 24 trials, then is exhausted");
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < i; k++)
            dups += strcmp(seen[i], seen[k]) == 0;
    is_int(dups, 0, "every grid point exactly once");
    is_str(seen[0],
           "{\"n\":-1,\"o\":\"a\",\"d\":0.5}",
           "first point: every parameter at its first value");
    is_str(seen[1], "{\"n\":-1,\"o\":\"a\",\"d\":2.0}", "the last parameter varies fastest");
    is_str(seen[23],
           "{\"n\":2,\"o\":\"c\",\"d\":2.0}",
           "last point: every parameter at its last value");
    ok(ty_tuner_suggest(t, 1, &s, &n, &err) == 0 && n == 0, "stays exhausted");
    for (size_t i = 0; i < 100; i++)
        free(seen[i]);
    ty_tuner_free(t);
    ty_hp_free(hp);

    /* maxTrials below the grid size stops first */
    hp = spec_of("{'algorithm':'GRID_SEARCH','maxTrials':5,'params':[" P_INT "]}");
    n = 0;
    if (hp && ty_tuner_new(hp, 1, &t, &err) == 0) {
        while ((got = draw(t, 2, seen + n)) > 0)
            n += got;
        is_int(n, 5, "grid stops at maxTrials");
        is_str(seen[4], "{\"n\":5}", "in grid order");
        for (size_t i = 0; i < n; i++)
            free(seen[i]);
        ty_tuner_free(t);
    }
    ty_hp_free(hp);

    /* a DOUBLE is refused, by the spec and by the tuner itself */
    ok(!spec_of("{'algorithm':'GRID_SEARCH','params':[" P_INT "," P_X "]}"),
       "GRID_SEARCH spec with a DOUBLE is rejected");
    like(err.msg,
         "GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE parameters, and 'x' is DOUBLE",
         "the message names the parameter and the rule");
    hp = spec_of("{'algorithm':'RANDOM_SEARCH','params':[" P_INT "," P_X "]}");
    if (hp) {
        hp->algorithm = TY_HP_ALGO_GRID;
        t = NULL;
        is_int(ty_tuner_new(hp, 1, &t, &err),
               -EINVAL,
               "ty_tuner_new refuses GRID_SEARCH with a DOUBLE");
        like(err.msg, "'x' is DOUBLE", "naming the parameter");
        ok(!t, "and returns no tuner");
    }
    ty_hp_free(hp);
}

/* ---- bookkeeping ------------------------------------------------------------------------- */

static void test_trials(void)
{
    struct ty_hp_spec *hp =
        spec_of("{'algorithm':'RANDOM_SEARCH','goal':'MINIMIZE','maxTrials':4,'params':[" P_X "]}");
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    const json_t *params = NULL;
    double best = 0;
    size_t n = 0;

    if (!ok(hp && ty_tuner_new(hp, 3, &t, &err) == 0, "tuner for bookkeeping"))
        return;
    ok(!ty_tuner_best(t, &best, &params), "no best before any success");
    is_int(ty_tuner_suggest(t, 0, &s, &n, &err), -EINVAL, "count 0 is refused");
    ok(ty_tuner_suggest(t, 3, &s, &n, &err) == 0 && n == 3, "3 suggestions");
    if (n == 3) {
        is_str(s[0].trial_id, "1", "ids start at 1");
        is_str(s[2].trial_id, "3", "and count up");
    }
    ty_trial_suggestions_free(s, n);
    is_int(ty_tuner_complete(t, "1", false, 0, &err), 0, "trial 1 failed");
    is_int(ty_tuner_complete(t, "2", true, 5.5, &err), 0, "trial 2 succeeded");
    is_int(ty_tuner_complete(t, "3", true, -1, &err), 0, "trial 3 succeeded");
    is_int(ty_tuner_complete(t, "2", true, 1, &err), -EALREADY, "a trial completes once");
    is_int(ty_tuner_complete(t, "9", true, 1, &err), -ENOENT, "unknown trial");
    like(err.msg, "trialId: '9'", "message names the trial");
    is_int(ty_tuner_complete(t, "03", true, 1, &err), -ENOENT, "only canonical ids");
    is_int(ty_tuner_complete(t, NULL, true, 1, &err), -ENOENT, "no id");
    is_int(ty_tuner_n_completed(t), 3, "3 completed");
    is_int(ty_tuner_n_failed(t), 1, "1 failed");
    is_str(ty_tuner_best(t, &best, &params), "3", "best of a MINIMIZE study is the lowest");
    ok(best == -1 && json_is_object(params), "with its objective and parameters");
    ok(ty_tuner_suggest(t, 5, &s, &n, &err) == 0 && n == 1, "the failed trial counted: 1 left");
    if (n == 1)
        is_int(ty_tuner_complete(t, s[0].trial_id, true, NAN, &err), -EINVAL, "NaN objective");
    ty_trial_suggestions_free(s, n);
    ok(ty_tuner_suggest(t, 5, &s, &n, &err) == 0 && n == 0, "maxTrials 4 reached");
    ty_tuner_free(t);
    ty_hp_free(hp);

    hp = spec_of("{'algorithm':'RANDOM_SEARCH','goal':'MAXIMIZE','maxTrials':2,'params':[" P_CAT
                 "]}");
    if (hp && ty_tuner_new(hp, 3, &t, &err) == 0) {
        ty_tuner_suggest(t, 2, &s, &n, &err);
        ty_trial_suggestions_free(s, n);
        ty_tuner_complete(t, "1", true, 1, &err);
        ty_tuner_complete(t, "2", true, 2, &err);
        is_str(ty_tuner_best(t, &best, &params), "2", "best of a MAXIMIZE study is the highest");
        ty_tuner_free(t);
    }
    ty_hp_free(hp);
}

static void test_default_accepted(void)
{
    struct ty_hp_spec *hp = spec_of("{'maxTrials':8,'params':[" P_X "]}");
    struct ty_trial_suggestion *s = NULL;
    struct ty_tuner *t = NULL;
    size_t n = 0, total = 0;
    bool in_range = true;

    if (!ok(hp, "spec without algorithm parses"))
        return;
    is_int(ty_tuner_new(hp, 1, &t, &err), 0, "ALGORITHM_UNSPECIFIED is accepted (tuner-gp.c)");
    while (t && ty_tuner_suggest(t, 2, &s, &n, &err) == 0 && n > 0) {
        for (size_t i = 0; i < n; i++) {
            double x = json_real_value(json_object_get(s[i].parameters, "x"));
            in_range = in_range && x >= -5 && x <= 10;
            ty_tuner_complete(t, s[i].trial_id, true, (x - 2) * (x - 2), &err);
        }
        total += n;
        ty_trial_suggestions_free(s, n);
    }
    is_int(total, 8, "a short default study runs to maxTrials");
    ok(in_range, "within bounds");
    ty_tuner_free(t);
    ty_hp_free(hp);
}

static void test_spec_from_json(void)
{
    struct ty_hp_spec *hp =
        spec_of("{'algorithm':'RANDOM_SEARCH','max_trials':'7','params':["
                "{'parameterName':'n','type':'INTEGER','minValue':1,'maxValue':10}]}");
    if (ok(hp, "integers, snake_case and int strings are accepted")) {
        ok(hp->max_trials == 7 && hp->params[0].min == 1 && hp->params[0].max == 10,
           "and read as numbers");
        ty_hp_free(hp);
    }
    ok(!spec_of("{'params':[" P_X "],'maxTrails':3}"), "unknown field rejected");
    like(err.msg, "maxTrails", "naming it");
    ok(!spec_of("{'params':[" P_X "],'algorithm':'HILL_CLIMB'}"), "unknown algorithm rejected");
    ok(!spec_of("{'params':[{'parameterName':'x','type':'DOUBLE','minValue':'a','maxValue':1}]}"),
       "a non-number minValue is rejected");
    ok(!spec_of("{'params':[{'parameterName':'x','type':'DOUBLE','minValue':2,'maxValue':1}]}"),
       "the existing rules apply (minValue < maxValue)");
    like(err.msg, "must be less than maxValue", "with their message");
    {
        _cleanup_json_ json_t *arr = json_array();
        struct ty_hp_spec *h = NULL;
        is_int(ty_hp_spec_from_json(arr, &h, &err), -EINVAL, "a non-object is rejected");
    }
}

/* ---- resuming: priors ---------------------------------------------------------------------- */

static json_t *params_of(const char *text)
{
    _cleanup_free_ char *t = xstrdup(text);
    json_t *j = NULL;
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    (void)ty_json_parse(t, strlen(t), &j, &err);
    return j;
}

static int add_prior(struct ty_tuner *t, const char *id, const char *params, bool ok_, double y)
{
    _cleanup_json_ json_t *p = params_of(params);
    ty_error_clear(&err);
    return ty_tuner_add_prior(t, id, p, ok_, y, &err);
}

static void test_priors_grid(void)
{
    struct ty_hp_spec *hp =
        spec_of("{'algorithm':'GRID_SEARCH','maxTrials':10,'params':["
                "{'parameterName':'n','type':'INTEGER','minValue':1,'maxValue':3},"
                "{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['a','b']}]}");
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    size_t n = 0, total = 0;
    bool clash = false, ids_ok = true;

    if (!ok(hp, "grid spec parses") || !ok(ty_tuner_new(hp, 1, &t, &err) == 0, "grid tuner"))
        return;
    is_int(add_prior(t, "1", "{'n':'1','o':'a'}", true, 0.5), 0, "a succeeded prior (strings)");
    is_int(add_prior(t, "2", "{'n':2,'o':'b'}", false, 0), 0, "a failed prior (JSON values)");
    is_int(add_prior(t, "2", "{'n':3,'o':'b'}", true, 1), -EEXIST, "a repeated id is refused");
    is_int(add_prior(t, "3", "{'n':'x','o':'a'}", true, 1), -EINVAL, "a value not a number");
    ok(strstr(err.msg, "trial 3: n: 'x' is not a number") != NULL,
       "the message names it: %s",
       err.msg);
    is_int(add_prior(t, "3", "{'n':'9','o':'a'}", true, 1), -EINVAL, "a value out of bounds");
    ok(strstr(err.msg, "n: 9 is outside [1, 3]") != NULL, "the message says so: %s", err.msg);
    is_int(add_prior(t, "3", "{'n':'2'}", true, 1), -EINVAL, "a missing parameter");
    is_int(add_prior(t, "3", "{'n':'2','o':'z'}", true, 1), -EINVAL, "an unknown category");
    is_int(add_prior(t, "3", "{'n':'2','o':'a'}", true, NAN), -EINVAL, "a NaN objective");
    is_int(add_prior(t, "03", "{'n':'2','o':'a'}", true, 1), -EINVAL, "a non-canonical id");
    ty_tuner_skip_ids(t, 4); /* trials 3 and 4 were cancelled */
    is_int(ty_tuner_complete(t, "1", true, 1, &err), -EALREADY, "a prior is not pending");
    while (ty_tuner_suggest(t, 3, &s, &n, &err) == 0 && n > 0) {
        for (size_t i = 0; i < n; i++) {
            const char *o = json_string_value(json_object_get(s[i].parameters, "o"));
            json_int_t v = json_integer_value(json_object_get(s[i].parameters, "n"));
            clash |= (v == 1 && strcmp(o, "a") == 0) || (v == 2 && strcmp(o, "b") == 0);
            int64_t id;
            ids_ok &= ty_parse_int64(s[i].trial_id, 1, INT64_MAX, &id) == 0 &&
                      id == (int64_t)(5 + total + i);
        }
        if (total == 0)
            is_int(add_prior(t, "9", "{'n':'3','o':'a'}", true, 1),
                   -EBUSY,
                   "no priors once suggestions started");
        total += n;
        ty_trial_suggestions_free(s, n);
    }
    is_int(total, 4, "the 6-point grid less the 2 priors' points: 4 trials");
    ok(!clash, "no prior's point suggested again");
    ok(ids_ok, "new trials are numbered 5, 6, ... after the skipped ids");
    ok(ty_tuner_is_pending(t, "5") && !ty_tuner_is_pending(t, "1") &&
           !ty_tuner_is_pending(t, "3") && !ty_tuner_is_pending(t, "10"),
       "pending: only new trials not completed");
    is_int(ty_tuner_complete(t, "6", true, 2, &err), 0, "a new trial completes by its id");
    is_int(ty_tuner_n_suggested(t), 4, "priors are not counted as suggested");
    is_int(ty_tuner_n_completed(t), 1, "nor as completed");
    ty_tuner_free(t);
    ty_hp_free(hp);
}

static void test_priors_default(void)
{
    struct ty_hp_spec *hp = spec_of("{'maxTrials':3,'params':[" P_X "," P_CAT "]}");
    struct ty_tuner *t = NULL;
    struct ty_trial_suggestion *s = NULL;
    size_t n = 0, total = 0;
    char id[16];
    bool fresh = true;

    if (!ok(hp, "spec parses") || !ok(ty_tuner_new(hp, 7, &t, &err) == 0, "default tuner"))
        return;
    for (int i = 1; i <= 12; i++) {
        _cleanup_free_ char *p = xasprintf("{'x':'%g','o':'%s'}",
                                           -5 + 1.25 * i,
                                           i % 3 == 0   ? "sgd"
                                           : i % 3 == 1 ? "adam"
                                                        : "rmsprop");
        snprintf(id, sizeof(id), "%d", i);
        if (add_prior(t, id, p, i != 4, (-5 + 1.25 * i) * (-5 + 1.25 * i)) < 0)
            diag("prior %d: %s", i, err.msg);
    }
    while (ty_tuner_suggest(t, 2, &s, &n, &err) == 0 && n > 0) {
        for (size_t i = 0; i < n; i++) {
            double x = json_number_value(json_object_get(s[i].parameters, "x"));
            const char *o = json_string_value(json_object_get(s[i].parameters, "o"));
            for (int k = 1; k <= 12; k++)
                fresh &= fabs(x - (-5 + 1.25 * k)) > 1e-9 || strcmp(o,
                                                                    k % 3 == 0   ? "sgd"
                                                                    : k % 3 == 1 ? "adam"
                                                                                 : "rmsprop") != 0;
            (void)ty_tuner_complete(t, s[i].trial_id, true, x * x, &err);
        }
        total += n;
        ty_trial_suggestions_free(s, n);
    }
    is_int(total, 3, "maxTrials counts only the new trials");
    ok(fresh, "no new trial repeats a prior's point");
    ok(ty_tuner_is_pending(t, "13") == false && ty_tuner_n_completed(t) == 3,
       "new trials 13..15 completed");
    ty_tuner_free(t);
    ty_hp_free(hp);
}

int main(void)
{
    test_space();
    test_random();
    test_grid();
    test_trials();
    test_default_accepted();
    test_spec_from_json();
    test_priors_grid();
    test_priors_default();
    return done_testing();
}
