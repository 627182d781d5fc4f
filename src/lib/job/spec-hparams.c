/* SPDX-License-Identifier: Apache-2.0
 * spec-hparams.c: trainingInput.hyperparameters (HyperparameterSpec) -> struct ty_hp_spec,
 * with the API's rules; the tuner (src/lib/tuning) searches the space it describes. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "numfmt.h"
#include "schema.h"
#include "spec.h"
#include "strv.h"

#define HP "trainingInput.hyperparameters"

/* The largest magnitude of a DOUBLE or DISCRETE parameter's values: half the largest double,
 * so that the tuner can take the difference and the sum of any two (its scales do). */
#define HP_VALUE_MAX (DBL_MAX / 2)
/* The largest magnitude of an INTEGER parameter's bounds: 2^53, the whole numbers a double
 * (JSON's number) holds exactly, so every integer of the range can be suggested. */
#define HP_INTEGER_MAX 9007199254740992.0

static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
    const char *s = ty_json_str(o, k);
    return s ? s : dflt;
}

/* A parameter name: letters, digits, '_', '-' and '.' (ty_hp_check_new adds the rules of a
 * new job's). */
static bool name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-' || *s == '.'))
            return false;
    return true;
}

/* The parameter's name and type (and scaleType) into p; fails on a missing or bad one. */
static int param_head(const json_t *pj, size_t idx, struct ty_hp_param *p, struct ty_error *err)
{
    const char *type = str_or(pj, "type", "PARAMETER_TYPE_UNSPECIFIED");
    const char *scale = str_or(pj, "scaleType", "NONE");
    const char *name = ty_json_str(pj, "parameterName");

    if (!name || !*name)
        return ty_error_set(err, EINVAL, HP ".params[%zu].parameterName: required", idx);
    if (!name_ok(name))
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu].parameterName: '%s' may contain only letters, "
                               "digits, '_', '-' and '.' (it becomes a --%s=VALUE argument)",
                            idx,
                            name,
                            name);
    p->name = xstrdup(name);
    if (strcmp(type, "DOUBLE") == 0)
        p->type = TY_HP_DOUBLE;
    else if (strcmp(type, "INTEGER") == 0)
        p->type = TY_HP_INTEGER;
    else if (strcmp(type, "CATEGORICAL") == 0)
        p->type = TY_HP_CATEGORICAL;
    else if (strcmp(type, "DISCRETE") == 0)
        p->type = TY_HP_DISCRETE;
    else
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu].type: required (DOUBLE, INTEGER, CATEGORICAL or "
                               "DISCRETE) for parameter '%s'",
                            idx,
                            name);
    p->scale = strcmp(scale, "UNIT_LINEAR_SCALE") == 0        ? TY_HP_SCALE_LINEAR
               : strcmp(scale, "UNIT_LOG_SCALE") == 0         ? TY_HP_SCALE_LOG
               : strcmp(scale, "UNIT_REVERSE_LOG_SCALE") == 0 ? TY_HP_SCALE_REVERSE_LOG
                                                              : TY_HP_SCALE_NONE;
    return 0;
}

static bool scale_is_log(enum ty_hp_scale scale)
{
    return scale == TY_HP_SCALE_LOG || scale == TY_HP_SCALE_REVERSE_LOG;
}

/* minValue/maxValue of a DOUBLE or INTEGER parameter p (name, type, scale already set). */
static int param_range(const json_t *pj,
                       size_t idx,
                       struct ty_hp_param *p,
                       enum ty_hp_algorithm algo,
                       struct ty_error *err)
{
    const char *type = ty_json_str(pj, "type"), *scale = str_or(pj, "scaleType", "NONE");
    json_t *minv = json_object_get(pj, "minValue"), *maxv = json_object_get(pj, "maxValue");
    json_t *cats = json_object_get(pj, "categoricalValues");
    json_t *disc = json_object_get(pj, "discreteValues");
    char a[TY_DOUBLE_TEXT_MAX], b[TY_DOUBLE_TEXT_MAX];

    if (!minv || !maxv)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu]: minValue and maxValue are required for %s "
                               "parameter '%s'",
                            idx,
                            type,
                            p->name);
    if (cats || disc)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu]: %s parameter '%s' takes minValue and maxValue, "
                               "not %s",
                            idx,
                            type,
                            p->name,
                            cats ? "categoricalValues" : "discreteValues");
    p->min = json_real_value(minv);
    p->max = json_real_value(maxv);
    if (!(p->min < p->max))
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu]: minValue (%s) must be less than maxValue (%s) "
                               "for parameter '%s'",
                            idx,
                            ty_fmt_double(p->min, a),
                            ty_fmt_double(p->max, b),
                            p->name);
    if (fabs(p->min) > HP_VALUE_MAX || fabs(p->max) > HP_VALUE_MAX)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu]: minValue and maxValue must lie within +-%g (half "
                               "the largest double) for parameter '%s'",
                            idx,
                            HP_VALUE_MAX,
                            p->name);
    if (p->type == TY_HP_INTEGER &&
        (fabs(p->min) > HP_INTEGER_MAX || fabs(p->max) > HP_INTEGER_MAX))
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu]: minValue and maxValue must lie within "
                               "+-9007199254740992 (2^53, the whole numbers a double holds "
                               "exactly) for INTEGER parameter '%s'",
                            idx,
                            p->name);
    if (p->type == TY_HP_INTEGER && (p->min != floor(p->min) || p->max != floor(p->max)))
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu]: minValue and maxValue must be whole numbers "
                               "for INTEGER parameter '%s'",
                            idx,
                            p->name);
    if (scale_is_log(p->scale) && p->min <= 0)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu].scaleType: %s needs minValue > 0 (got %s) for "
                               "parameter '%s'",
                            idx,
                            scale,
                            ty_fmt_double(p->min, a),
                            p->name);
    if (algo == TY_HP_ALGO_GRID && p->type == TY_HP_DOUBLE)
        return ty_error_set(err,
                            EINVAL,
                            HP ".algorithm: GRID_SEARCH needs INTEGER, CATEGORICAL or "
                               "DISCRETE parameters, and '%s' is DOUBLE",
                            p->name);
    return 0;
}

/* The value list @key (categoricalValues or discreteValues) of @p, whose type @type takes
 * only it, into *@ret: required non-empty, at most @max entries (0: no limit), and none of
 * the other value fields given. */
static int value_list(const json_t *pj,
                      size_t idx,
                      const struct ty_hp_param *p,
                      const char *type,
                      const char *key,
                      size_t max,
                      json_t **ret,
                      struct ty_error *err)
{
    json_t *list = json_object_get(pj, key);
    const char *other =
        strcmp(key, "categoricalValues") == 0 ? "discreteValues" : "categoricalValues";

    if (json_array_size(list) == 0)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu].%s: required (non-empty) for %s parameter '%s'",
                            idx,
                            key,
                            type,
                            p->name);
    if (max && json_array_size(list) > max)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu].%s: at most %zu values (got %zu)",
                            idx,
                            key,
                            max,
                            json_array_size(list));
    if (json_object_get(pj, "minValue") || json_object_get(pj, "maxValue") ||
        json_object_get(pj, other))
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu]: %s parameter '%s' takes only %s",
                            idx,
                            type,
                            p->name,
                            key);
    *ret = list;
    return 0;
}

/* Indices into the categories @ctx by value, then by index (qsort_r). */
static int cmp_cat(const void *a, const void *b, void *ctx)
{
    char *const *cats = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(cats[x], cats[y]);
    return c ? c : (x > y) - (x < y);
}

/* categoricalValues of a CATEGORICAL parameter p: non-empty, no value twice (at most
 * TY_HP_MAX_CATEGORIES in a new job: ty_hp_check_new). */
static int
param_categories(const json_t *pj, size_t idx, struct ty_hp_param *p, struct ty_error *err)
{
    json_t *cats = NULL, *c;
    size_t i, n, rep = SIZE_MAX;
    _cleanup_free_ size_t *order = NULL;
    int r = value_list(pj, idx, p, "CATEGORICAL", "categoricalValues", 0, &cats, err);

    if (r < 0)
        return r;
    n = json_array_size(cats);
    p->categories = xcalloc(n + 1, sizeof(char *));
    json_array_foreach(cats, i, c) p->categories[i] = xstrdup(json_string_value(c));
    /* A value listed twice, the first repeat in list order, by sorting (a stored job of
     * thousands of values costs no more than n log n to read again) */
    order = xcalloc(n, sizeof(*order));
    for (i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, n, sizeof(*order), cmp_cat, p->categories);
    for (i = 1; i < n; i++)
        if (strcmp(p->categories[order[i]], p->categories[order[i - 1]]) == 0 &&
            (rep == SIZE_MAX || order[i] < rep))
            rep = order[i];
    if (rep != SIZE_MAX)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu].categoricalValues: '%s' is listed twice",
                            idx,
                            p->categories[rep]);
    return 0;
}

/* discreteValues of a DISCRETE parameter p: 1..TY_HP_MAX_DISCRETE, strictly increasing. */
static int param_discrete(const json_t *pj, size_t idx, struct ty_hp_param *p, struct ty_error *err)
{
    json_t *disc, *d;
    size_t i;
    char a[TY_DOUBLE_TEXT_MAX], b[TY_DOUBLE_TEXT_MAX];
    int r = value_list(pj, idx, p, "DISCRETE", "discreteValues", TY_HP_MAX_DISCRETE, &disc, err);

    if (r < 0)
        return r;
    p->n_discrete = json_array_size(disc);
    p->discrete = xcalloc(p->n_discrete, sizeof(double));
    json_array_foreach(disc, i, d)
    {
        p->discrete[i] = json_real_value(d);
        if (fabs(p->discrete[i]) > HP_VALUE_MAX)
            return ty_error_set(err,
                                EINVAL,
                                HP ".params[%zu].discreteValues: %s is out of range: values must "
                                   "lie within +-%g (half the largest double)",
                                idx,
                                ty_fmt_double(p->discrete[i], a),
                                HP_VALUE_MAX);
        if (i > 0 && !(p->discrete[i] > p->discrete[i - 1]))
            return ty_error_set(err,
                                EINVAL,
                                HP ".params[%zu].discreteValues: must be strictly increasing "
                                   "(%s follows %s)",
                                idx,
                                ty_fmt_double(p->discrete[i], a),
                                ty_fmt_double(p->discrete[i - 1], b));
    }
    if (scale_is_log(p->scale) && p->discrete[0] <= 0)
        return ty_error_set(err,
                            EINVAL,
                            HP ".params[%zu].scaleType: %s needs values > 0 for parameter "
                               "'%s'",
                            idx,
                            str_or(pj, "scaleType", "NONE"),
                            p->name);
    return 0;
}

/* One element of params into p: its name and type, then the values its type takes. */
static int param_from_json(const json_t *pj,
                           size_t idx,
                           struct ty_hp_param *p,
                           enum ty_hp_algorithm algo,
                           struct ty_error *err)
{
    int r = param_head(pj, idx, p, err);

    if (r < 0)
        return r;
    switch (p->type) {
    case TY_HP_DOUBLE:
    case TY_HP_INTEGER:
        return param_range(pj, idx, p, algo, err);
    case TY_HP_CATEGORICAL:
        return param_categories(pj, idx, p, err);
    case TY_HP_DISCRETE:
        return param_discrete(pj, idx, p, err);
    }
    return 0;
}

/* An int32 field of the API, @dflt when absent or 0: proto3 cannot tell a 0 from an absent
 * field, so AI Platform read `maxTrials: 0` as its default (one trial). */
static int int_or(const json_t *o, const char *k, int dflt)
{
    json_t *v = json_object_get(o, k);
    int i = v ? (int)json_integer_value(v) : 0;
    return i ? i : dflt;
}

int ty_hp_from_json(const json_t *hj, struct ty_hp_spec **ret, struct ty_error *err)
{
    struct ty_hp_spec *hp = xcalloc(1, sizeof(*hp));
    json_t *params = json_object_get(hj, "params");
    const char *algo = str_or(hj, "algorithm", "ALGORITHM_UNSPECIFIED");
    int r = 0;

    hp->maximize = strcmp(str_or(hj, "goal", "MAXIMIZE"), "MINIMIZE") != 0;
    hp->max_trials = int_or(hj, "maxTrials", 1);
    hp->max_parallel_trials = int_or(hj, "maxParallelTrials", 1);
    hp->max_failed_trials = int_or(hj, "maxFailedTrials", 0);
    hp->metric_tag = xstrdup(str_or(hj, "hyperparameterMetricTag", "training/hptuning/metric"));
    hp->algorithm = strcmp(algo, "GRID_SEARCH") == 0     ? TY_HP_ALGO_GRID
                    : strcmp(algo, "RANDOM_SEARCH") == 0 ? TY_HP_ALGO_RANDOM
                                                         : TY_HP_ALGO_DEFAULT;
    hp->early_stopping = json_is_true(json_object_get(hj, "enableTrialEarlyStopping"));
    hp->resume_job_id = xstrdup(ty_json_str(hj, "resumePreviousJobId"));

    if (hp->max_trials < 1 || hp->max_trials > TY_HP_MAX_TRIALS)
        r = ty_error_set(err,
                         EINVAL,
                         HP ".maxTrials: must be between 1 and %d (got %d)",
                         TY_HP_MAX_TRIALS,
                         hp->max_trials);
    else if (hp->max_parallel_trials < 1)
        r = ty_error_set(err,
                         EINVAL,
                         HP ".maxParallelTrials: must be at least 1 (got %d)",
                         hp->max_parallel_trials);
    else if (hp->max_failed_trials < 0)
        r = ty_error_set(err,
                         EINVAL,
                         HP ".maxFailedTrials: must not be negative (got %d)",
                         hp->max_failed_trials);
    else if (!*hp->metric_tag)
        r = ty_error_set(err, EINVAL, HP ".hyperparameterMetricTag: must not be empty");
    else if (hp->resume_job_id && ty_validate_job_id(hp->resume_job_id, NULL) < 0)
        r = ty_error_set(err,
                         EINVAL,
                         HP ".resumePreviousJobId: '%s' is not a valid job id (letters, digits "
                            "and underscores, starting with a letter)",
                         hp->resume_job_id);
    else if (json_array_size(params) == 0)
        r = ty_error_set(err, EINVAL, HP ".params: at least one parameter is required");
    else if (json_array_size(params) > TY_HP_MAX_PARAMS)
        r = ty_error_set(err,
                         EINVAL,
                         HP ".params: at most %d parameters (got %zu)",
                         TY_HP_MAX_PARAMS,
                         json_array_size(params));
    if (r < 0) {
        ty_hp_free(hp);
        return r;
    }
    hp->n_params = json_array_size(params);
    hp->params = xcalloc(hp->n_params, sizeof(*hp->params));
    for (size_t i = 0; i < hp->n_params && r >= 0; i++) {
        r = param_from_json(json_array_get(params, i), i, &hp->params[i], hp->algorithm, err);
        for (size_t k = 0; r >= 0 && k < i; k++)
            if (strcmp(hp->params[k].name, hp->params[i].name) == 0)
                r = ty_error_set(err,
                                 EINVAL,
                                 HP ".params[%zu].parameterName: '%s' is already used by "
                                    "params[%zu]",
                                 i,
                                 hp->params[i].name,
                                 k);
    }
    if (r < 0) {
        ty_hp_free(hp);
        return r;
    }
    *ret = hp;
    return 0;
}

int ty_hp_spec_from_json(const json_t *spec, struct ty_hp_spec **ret, struct ty_error *err)
{
    _cleanup_json_ json_t *wrap = NULL, *canon = NULL;
    int r;

    if (!json_is_object(spec))
        return ty_error_set(err, EINVAL, HP ": must be a HyperparameterSpec object");
    /* the schema knows HyperparameterSpec as a field of TrainingInput */
    wrap = json_pack("{s:O}", "hyperparameters", spec);
    r = ty_schema_normalize(&ty_msg_training_input, wrap, "trainingInput", 0, &canon, err);
    if (r >= 0)
        r = ty_hp_from_json(json_object_get(canon, "hyperparameters"), ret, err);
    return r;
}

static const char *scale_name(enum ty_hp_scale s)
{
    return s == TY_HP_SCALE_LINEAR ? "UNIT_LINEAR_SCALE"
           : s == TY_HP_SCALE_LOG  ? "UNIT_LOG_SCALE"
                                   : "UNIT_REVERSE_LOG_SCALE";
}

int ty_hp_check_new(const struct ty_hp_spec *hp, struct ty_error *err)
{
    for (size_t i = 0; hp && i < hp->n_params; i++) {
        const struct ty_hp_param *p = &hp->params[i];
        size_t n = ty_strv_len(p->categories);

        if (p->name[0] == '-' || p->name[0] == '.')
            return ty_error_set(err,
                                EINVAL,
                                HP ".params[%zu].parameterName: '%s' must not start with '-' or "
                                   "'.' (it becomes a --%s=VALUE argument, which no option parser "
                                   "reads)",
                                i,
                                p->name,
                                p->name);
        if (strcmp(p->name, "job-dir") == 0)
            return ty_error_set(err,
                                EINVAL,
                                HP ".params[%zu].parameterName: 'job-dir' is the argument that "
                                   "passes trainingInput.jobDir (--job-dir=DIR); name the "
                                   "parameter otherwise",
                                i);
        /* the API: "Leave unset for categorical parameters" (NONE says the same) */
        if (p->type == TY_HP_CATEGORICAL && p->scale != TY_HP_SCALE_NONE)
            return ty_error_set(err,
                                EINVAL,
                                HP ".params[%zu].scaleType: CATEGORICAL parameter '%s' takes no "
                                   "scaleType (got %s)",
                                i,
                                p->name,
                                scale_name(p->scale));
        if (n > TY_HP_MAX_CATEGORIES)
            return ty_error_set(err,
                                EINVAL,
                                HP ".params[%zu].categoricalValues: at most %d values (got %zu)",
                                i,
                                TY_HP_MAX_CATEGORIES,
                                n);
    }
    return 0;
}

struct ty_hp_spec *ty_hp_free(struct ty_hp_spec *hp)
{
    if (!hp)
        return NULL;
    for (size_t i = 0; i < hp->n_params; i++) {
        free(hp->params[i].name);
        ty_strv_free(hp->params[i].categories);
        free(hp->params[i].discrete);
    }
    free(hp->params);
    free(hp->metric_tag);
    free(hp->resume_job_id);
    free(hp);
    return NULL;
}
