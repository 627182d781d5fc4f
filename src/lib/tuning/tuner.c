/* SPDX-License-Identifier: Apache-2.0
 * tuner.c: the ask/tell study (tuner.h): trial bookkeeping against maxTrials, RANDOM_SEARCH
 * and GRID_SEARCH; ALGORITHM_UNSPECIFIED is dispatched to the Bayesian optimiser (tuner-gp.c). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "macro.h"
#include "parse.h"
#include "tuner-internal.h"

int ty_tuner_new(const struct ty_hp_spec *spec,
                 uint64_t seed,
                 struct ty_tuner **ret,
                 struct ty_error *err)
{
    struct ty_tuner *t;

    if (spec->n_params == 0)
        return ty_error_set(err, EINVAL, "params: at least one parameter is required");
    if (spec->algorithm == TY_HP_ALGO_GRID)
        for (size_t i = 0; i < spec->n_params; i++)
            if (spec->params[i].type == TY_HP_DOUBLE)
                return ty_error_set(err,
                                    EINVAL,
                                    "algorithm: GRID_SEARCH needs INTEGER, CATEGORICAL or "
                                    "DISCRETE parameters, and '%s' is DOUBLE",
                                    spec->params[i].name);
    t = xcalloc(1, sizeof(*t));
    t->spec = spec;
    ty_rng_seed(&t->rng, seed);
    if (spec->algorithm == TY_HP_ALGO_GRID)
        t->grid = xcalloc(spec->n_params, sizeof(*t->grid));
    if (spec->algorithm == TY_HP_ALGO_DEFAULT) {
        int r = ty_bo_new(t, err);
        if (r < 0) {
            ty_tuner_free(t);
            return r;
        }
    }
    *ret = t;
    return 0;
}

/* Number of grid values of parameter @p (INTEGER, CATEGORICAL or DISCRETE). */
static uint64_t grid_size(const struct ty_hp_param *p)
{
    if (p->type == TY_HP_INTEGER)
        return p->max - p->min >= 0x1.0p63 ? UINT64_MAX : (uint64_t)(p->max - p->min) + 1;
    return ty_hp_n_choices(p);
}

/* The next grid point into @x, then advance the counter (last parameter fastest). Returns
 * false when the grid is exhausted. */
static bool grid_next(struct ty_tuner *t, double *x)
{
    const struct ty_hp_spec *spec = t->spec;
    size_t i;

    if (t->grid_done)
        return false;
    for (i = 0; i < spec->n_params; i++) {
        const struct ty_hp_param *p = &spec->params[i];
        uint64_t k = t->grid[i];
        x[i] = p->type == TY_HP_INTEGER    ? p->min + (double)k
               : p->type == TY_HP_DISCRETE ? p->discrete[k]
                                           : (double)k;
    }
    for (i = spec->n_params; i-- > 0;) {
        if (++t->grid[i] < grid_size(&spec->params[i]))
            break;
        t->grid[i] = 0;
    }
    if (i == SIZE_MAX)
        t->grid_done = true; /* the counter wrapped: that was the last point */
    return true;
}

/* A random point into @x: numeric parameters uniform in the warped unit interval, DISCRETE and
 * CATEGORICAL uniform over their values. */
static void random_point(struct ty_tuner *t, double *x)
{
    for (size_t i = 0; i < t->spec->n_params; i++) {
        const struct ty_hp_param *p = &t->spec->params[i];
        if (p->type == TY_HP_DISCRETE)
            x[i] = p->discrete[ty_rng_below(&t->rng, p->n_discrete)];
        else if (p->type == TY_HP_CATEGORICAL)
            x[i] = (double)ty_rng_below(&t->rng, ty_hp_n_choices(p));
        else
            x[i] = ty_hp_from_unit(p, ty_rng_unit(&t->rng));
    }
}

/* Whether @x is the point of a prior trial (GRID_SEARCH skips those). */
static bool is_prior(const struct ty_tuner *t, const double *x)
{
    for (size_t i = 0; i < t->n_prior; i++)
        if (memcmp(t->trials[i].x, x, t->spec->n_params * sizeof(double)) == 0)
            return true;
    return false;
}

int ty_tuner_suggest(struct ty_tuner *t,
                     size_t count,
                     struct ty_trial_suggestion **ret,
                     size_t *n,
                     struct ty_error *err)
{
    size_t own = t->n_trials - t->n_prior;
    size_t left = (size_t)t->spec->max_trials > own ? (size_t)t->spec->max_trials - own : 0;
    struct ty_trial_suggestion *out;
    size_t k = 0;

    *ret = NULL;
    *n = 0;
    if (count == 0)
        return ty_error_set(err, EINVAL, "count: must be at least 1");
    if (count > left)
        count = left;
    if (count == 0)
        return 0;
    out = xcalloc(count, sizeof(*out));
    if (t->n_trials + count > t->cap_trials) {
        t->cap_trials =
            t->n_trials + count > 2 * t->cap_trials ? t->n_trials + count : 2 * t->cap_trials;
        t->trials = xreallocarray(t->trials, t->cap_trials, sizeof(*t->trials));
    }
    for (; k < count; k++) {
        struct ty_trial *tr = &t->trials[t->n_trials];
        double *x = xcalloc(t->spec->n_params, sizeof(double));

        if (t->spec->algorithm == TY_HP_ALGO_GRID) {
            bool fresh;
            while ((fresh = grid_next(t, x)) && is_prior(t, x))
                ;
            if (!fresh) {
                free(x);
                break;
            }
        } else if (t->spec->algorithm == TY_HP_ALGO_DEFAULT) {
            ty_bo_next(t, x);
        } else {
            random_point(t, x);
        }
        *tr = (struct ty_trial){
            .id = t->id_base + (t->n_trials - t->n_prior) + 1,
            .x = x,
            .parameters = ty_hp_values_to_json(t->spec, x),
            .state = TY_TRIAL_PENDING,
        };
        snprintf(tr->name, sizeof(tr->name), "%" PRIu64, tr->id);
        t->n_trials++;
        out[k].trial_id = xstrdup(tr->name);
        out[k].parameters = json_incref(tr->parameters);
        if (t->explain)
            out[k].explain =
                t->spec->algorithm == TY_HP_ALGO_DEFAULT
                    ? ty_bo_explain(t->bo)
                    : json_pack("{s:s}",
                                "phase",
                                t->spec->algorithm == TY_HP_ALGO_GRID ? "gridSearch"
                                                                      : "randomSearch");
    }
    if (k == 0) {
        free(out);
        return 0;
    }
    *ret = out;
    *n = k;
    return 0;
}

/* The trial named @id (canonical spelling only: not "07", "+7" or " 7"), or NULL. */
static struct ty_trial *find_trial(const struct ty_tuner *t, const char *id)
{
    int64_t v;
    size_t i;

    if (!id || ty_parse_int64(id, 1, INT64_MAX, &v) < 0)
        return NULL;
    if ((uint64_t)v > t->id_base) {
        i = t->n_prior + (size_t)((uint64_t)v - t->id_base - 1);
        if (i >= t->n_trials)
            return NULL;
    } else {
        for (i = 0; i < t->n_prior && t->trials[i].id != (uint64_t)v; i++)
            ;
        if (i == t->n_prior)
            return NULL;
    }
    return strcmp(id, t->trials[i].name) == 0 ? &t->trials[i] : NULL;
}

int ty_tuner_add_prior(struct ty_tuner *t,
                       const char *trial_id,
                       const json_t *parameters,
                       bool succeeded,
                       double objective,
                       struct ty_error *err)
{
    _cleanup_free_ double *x = NULL;
    struct ty_trial *tr;
    char name[24]; /* a positive int64_t: at most 19 digits */
    int64_t id;
    int r;

    if (t->n_trials > t->n_prior)
        return ty_error_set(err, EBUSY, "trial %s: priors must come before suggestions", trial_id);
    if (!trial_id || ty_parse_int64(trial_id, 1, INT64_MAX, &id) < 0 ||
        strcmp(trial_id, (snprintf(name, sizeof(name), "%" PRId64, id), name)) != 0)
        return ty_error_set(
            err, EINVAL, "trialId: '%s' is not a positive number", trial_id ? trial_id : "");
    if (find_trial(t, trial_id))
        return ty_error_set(err, EEXIST, "trialId: trial %s is already known", trial_id);
    if (succeeded && !isfinite(objective))
        return ty_error_set(err, EINVAL, "trial %s: objective must be a finite number", trial_id);
    x = xcalloc(t->spec->n_params, sizeof(double));
    for (size_t i = 0; i < t->spec->n_params; i++) {
        const struct ty_hp_param *p = &t->spec->params[i];
        json_t *v = json_object_get(parameters, p->name);
        r = ty_hp_value_from_text(p, v, &x[i], err);
        if (r < 0)
            return ty_error_prefix(err, r, "trial %s", trial_id);
    }
    if (t->n_trials == t->cap_trials) {
        t->cap_trials = t->cap_trials ? 2 * t->cap_trials : 16;
        t->trials = xreallocarray(t->trials, t->cap_trials, sizeof(*t->trials));
    }
    tr = &t->trials[t->n_trials++];
    *tr = (struct ty_trial){
        .id = (uint64_t)id,
        .x = TAKE_PTR(x),
        .state = succeeded ? TY_TRIAL_SUCCEEDED : TY_TRIAL_FAILED,
        .objective = succeeded ? objective : 0,
    };
    tr->parameters = ty_hp_values_to_json(t->spec, tr->x);
    snprintf(tr->name, sizeof(tr->name), "%" PRIu64, tr->id);
    t->n_prior++;
    if (tr->id > t->id_base)
        t->id_base = tr->id;
    return 0;
}

void ty_tuner_skip_ids(struct ty_tuner *t, uint64_t id)
{
    if (t->n_trials == t->n_prior && id > t->id_base)
        t->id_base = id;
}

int ty_tuner_complete(struct ty_tuner *t,
                      const char *trial_id,
                      bool succeeded,
                      double objective,
                      struct ty_error *err)
{
    struct ty_trial *tr = find_trial(t, trial_id);

    if (!tr)
        return ty_error_set(
            err, ENOENT, "trialId: '%s' is not a suggested trial", trial_id ? trial_id : "");
    if (tr->state != TY_TRIAL_PENDING)
        return ty_error_set(err, EALREADY, "trialId: trial '%s' is already completed", trial_id);
    if (succeeded && !isfinite(objective))
        return ty_error_set(
            err, EINVAL, "objective: must be a finite number for trial '%s'", trial_id);
    tr->state = succeeded ? TY_TRIAL_SUCCEEDED : TY_TRIAL_FAILED;
    tr->objective = succeeded ? objective : 0;
    t->n_completed++;
    t->n_failed += !succeeded;
    return 0;
}

bool ty_tuner_is_pending(const struct ty_tuner *t, const char *trial_id)
{
    const struct ty_trial *tr = find_trial(t, trial_id);
    return tr && tr->state == TY_TRIAL_PENDING;
}

size_t ty_tuner_n_suggested(const struct ty_tuner *t)
{
    return t->n_trials - t->n_prior;
}

size_t ty_tuner_n_completed(const struct ty_tuner *t)
{
    return t->n_completed;
}

size_t ty_tuner_n_failed(const struct ty_tuner *t)
{
    return t->n_failed;
}

const char *ty_tuner_best(const struct ty_tuner *t, double *objective, const json_t **parameters)
{
    const struct ty_trial *best = NULL;

    for (size_t i = 0; i < t->n_trials; i++) {
        const struct ty_trial *tr = &t->trials[i];
        if (tr->state != TY_TRIAL_SUCCEEDED)
            continue;
        if (!best ||
            (t->spec->maximize ? tr->objective > best->objective : tr->objective < best->objective))
            best = tr;
    }
    if (!best)
        return NULL;
    *objective = best->objective;
    *parameters = best->parameters;
    return best->name;
}

void ty_tuner_set_explain(struct ty_tuner *t, bool on)
{
    t->explain = on;
}

void ty_trial_suggestions_free(struct ty_trial_suggestion *s, size_t n)
{
    if (!s)
        return;
    for (size_t i = 0; i < n; i++) {
        free(s[i].trial_id);
        json_decref(s[i].parameters);
        json_decref(s[i].explain);
    }
    free(s);
}

struct ty_tuner *ty_tuner_free(struct ty_tuner *t)
{
    if (!t)
        return NULL;
    for (size_t i = 0; i < t->n_trials; i++) {
        free(t->trials[i].x);
        json_decref(t->trials[i].parameters);
    }
    free(t->trials);
    free(t->grid);
    ty_bo_free(t->bo);
    free(t);
    return NULL;
}
