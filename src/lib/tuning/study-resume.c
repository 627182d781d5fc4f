/* SPDX-License-Identifier: Apache-2.0
 * study-resume.c: resumePreviousJobId (study.h): whether an earlier tuning job can be
 * continued by this one, and its trials as the tuner's priors and the stopping rule's
 * reference curves. Pure: the caller finds the earlier job (the store, or a local job.json). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "stoprule.h"
#include "trials.h"
#include "tuner.h"

#define FIELD "trainingInput.hyperparameters.resumePreviousJobId"

static const char *type_name(enum ty_hp_type t)
{
    return t == TY_HP_DOUBLE     ? "DOUBLE"
           : t == TY_HP_INTEGER  ? "INTEGER"
           : t == TY_HP_DISCRETE ? "DISCRETE"
                                 : "CATEGORICAL";
}

static const char *tag_of(const struct ty_hp_spec *hp)
{
    return hp->metric_tag && *hp->metric_tag ? hp->metric_tag : TY_HYPERTUNE_DEFAULT_TAG;
}

int ty_study_resume_check(const struct ty_hp_spec *spec,
                          const json_t *previous,
                          struct ty_error *err)
{
    const char *id = spec->resume_job_id ? spec->resume_job_id : "";
    const char *state = ty_json_str(previous, "state");
    json_t *hj = json_object_get(json_object_get(previous, "trainingInput"), "hyperparameters");
    struct ty_hp_spec *prev = NULL;
    struct ty_error e = {0};
    int r = 0;

    if (!json_is_object(hj))
        return ty_error_set(err, EINVAL, FIELD ": job '%s' is not a hyperparameter tuning job", id);
    if (!state || (strcmp(state, "SUCCEEDED") != 0 && strcmp(state, "FAILED") != 0 &&
                   strcmp(state, "CANCELLED") != 0))
        return ty_error_set(err,
                            EINVAL,
                            FIELD ": job '%s' is %s; a tuning job can be resumed once it has "
                                  "ended",
                            id,
                            state ? state : "in no known state");
    if (ty_hp_spec_from_json(hj, &prev, &e) < 0)
        return ty_error_set(err,
                            EINVAL,
                            FIELD ": job '%s' has a hyperparameter spec that is not valid: %s",
                            id,
                            ty_error_msg(&e));
    if (prev->maximize != spec->maximize)
        r = ty_error_set(err,
                         EINVAL,
                         FIELD ": job '%s' %s its metric and this job %s it; the goal must be "
                               "the same",
                         id,
                         prev->maximize ? "maximizes" : "minimizes",
                         spec->maximize ? "maximizes" : "minimizes");
    else if (strcmp(tag_of(prev), tag_of(spec)) != 0)
        r = ty_error_set(err,
                         EINVAL,
                         FIELD ": job '%s' tuned the metric '%s' and this job '%s'; the "
                               "hyperparameterMetricTag must be the same",
                         id,
                         tag_of(prev),
                         tag_of(spec));
    else if (prev->n_params != spec->n_params)
        r = ty_error_set(err,
                         EINVAL,
                         FIELD ": job '%s' tuned %zu parameters and this job %zu; the params "
                               "must have the same names and types",
                         id,
                         prev->n_params,
                         spec->n_params);
    for (size_t i = 0; r == 0 && i < spec->n_params; i++) {
        const struct ty_hp_param *p = &spec->params[i], *q = NULL;
        for (size_t k = 0; k < prev->n_params && !q; k++)
            if (strcmp(prev->params[k].name, p->name) == 0)
                q = &prev->params[k];
        if (!q)
            r = ty_error_set(err,
                             EINVAL,
                             FIELD ": job '%s' has no parameter '%s'; the params must have the "
                                   "same names and types",
                             id,
                             p->name);
        else if (q->type != p->type)
            r = ty_error_set(err,
                             EINVAL,
                             FIELD ": parameter '%s' is %s in job '%s' and %s here; the params "
                                   "must have the same names and types",
                             p->name,
                             type_name(q->type),
                             id,
                             type_name(p->type));
    }
    ty_hp_free(prev);
    return r;
}

/* The objective of a trial's finalMetric, or NAN. */
static double final_objective(const json_t *trial)
{
    json_t *v = json_object_get(json_object_get(trial, "finalMetric"), "objectiveValue");
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A HyperparameterOutput metric's step (an int64 string or number), or -1. */
static int64_t metric_step(const json_t *m)
{
    json_t *v = json_object_get(m, "trainingStep");
    int64_t step = -1;
    if (json_is_integer(v))
        step = json_integer_value(v);
    else if (json_is_string(v) && ty_parse_int64(json_string_value(v), 0, INT64_MAX, &step) < 0)
        step = -1;
    return step;
}

/* Add the trials of one earlier job to @tuner and @rule, counted in @s (ty_study_resume_load). */
static int load_job(const json_t *job,
                    struct ty_tuner *tuner,
                    struct ty_stop_rule *rule,
                    struct ty_study_resume_stats *s,
                    struct ty_error *err)
{
    json_t *trials = json_object_get(json_object_get(job, "trainingOutput"), "trials");
    size_t i;
    json_t *t;
    int r;

    json_array_foreach(trials, i, t)
    {
        const char *id = ty_json_str(t, "trialId");
        const char *state = ty_json_str(t, "state");
        double y = final_objective(t);
        bool succeeded = state && strcmp(state, "SUCCEEDED") == 0 && isfinite(y);
        bool failed = state && strcmp(state, "FAILED") == 0;
        struct ty_error e = {0};
        int64_t num;

        if (!id || ty_parse_int64(id, 1, INT64_MAX, &num) < 0) {
            s->skipped++;
            continue;
        }
        if ((uint64_t)num > s->last_id)
            s->last_id = (uint64_t)num;
        if (!succeeded && !failed) {
            s->skipped++;
            continue;
        }
        r = ty_tuner_add_prior(
            tuner, id, json_object_get(t, "hyperparameters"), succeeded, succeeded ? y : 0, &e);
        if (r == -EBUSY)
            return ty_error_set(err, EBUSY, "%s", ty_error_msg(&e));
        if (r < 0) {
            s->skipped++; /* a value outside this job's bounds, a repeated id */
            continue;
        }
        if (succeeded)
            s->succeeded++;
        else
            s->failed++;
        /* A trial that ran to its end is a reference curve for early stopping. */
        if (rule && succeeded && !json_is_true(json_object_get(t, "isTrialStoppedEarly"))) {
            size_t k;
            json_t *m;
            json_array_foreach(json_object_get(t, "allMetrics"), k, m)
            {
                json_t *v = json_object_get(m, "objectiveValue");
                int64_t step = metric_step(m);
                if (json_is_number(v) && step >= 0)
                    (void)ty_stop_rule_report(
                        rule, id, ty_stop_rule_step(step, k), json_number_value(v));
            }
            ty_stop_rule_end(rule, id, true);
        }
    }
    return 0;
}

/* The resumePreviousJobId of REST Job @job, or NULL. */
static const char *resumed_id(const json_t *job)
{
    json_t *hp = json_object_get(json_object_get(job, "trainingInput"), "hyperparameters");
    const char *id = ty_json_str(hp, "resumePreviousJobId");
    return id && *id ? id : NULL;
}

/* Is REST Job @job the job @id? */
static bool is_job(const json_t *job, const char *id)
{
    const char *jid = ty_json_str(job, "jobId");
    return jid && strcmp(jid, id) == 0;
}

json_t *ty_study_resume_chain(const json_t *previous,
                              json_t *(*lookup)(void *ctx, const char *job_id),
                              void *ctx)
{
    json_t *chain = json_array();
    const json_t *cur = previous;
    const char *next;

    while (json_array_size(chain) < TY_RESUME_CHAIN_MAX && (next = resumed_id(cur))) {
        json_t *job, *seen;
        size_t i;
        bool loop = is_job(previous, next);
        json_array_foreach(chain, i, seen) loop = loop || is_job(seen, next);
        if (loop || !(job = lookup(ctx, next)))
            break;
        json_array_append_new(chain, job);
        cur = job;
    }
    return chain;
}

int ty_study_resume_load(const struct ty_hp_spec *spec,
                         const json_t *previous,
                         const json_t *earlier,
                         struct ty_tuner *tuner,
                         struct ty_stop_rule *rule,
                         struct ty_study_resume_stats *stats,
                         struct ty_error *err)
{
    struct ty_study_resume_stats s = {0};
    size_t i;
    json_t *job;
    int r;

    r = load_job(previous, tuner, rule, &s, err);
    json_array_foreach(earlier, i, job)
    {
        if (r < 0 || ty_study_resume_check(spec, job, NULL) < 0)
            break;
        r = load_job(job, tuner, rule, &s, err);
        s.chained++;
    }
    if (r < 0)
        return r;
    ty_tuner_skip_ids(tuner, s.last_id);
    if (stats)
        *stats = s;
    return 0;
}
