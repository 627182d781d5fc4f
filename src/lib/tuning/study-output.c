/* SPDX-License-Identifier: Apache-2.0
 * study-output.c: the pure parts of the trial runner (study.h): trial arguments, the order of
 * trials, the trainingOutput JSON and the failed-trial rule. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "json.h"
#include "macro.h"
#include "numfmt.h"
#include "strv.h"
#include "timeutil.h"
#include "trials.h"

char *ty_study_value_string(const json_t *v)
{
    char buf[TY_DOUBLE_TEXT_MAX];

    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    if (json_is_integer(v))
        return xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    if (json_is_real(v))
        return xstrdup(ty_fmt_double(json_real_value(v), buf));
    if (json_is_true(v))
        return xstrdup("true");
    if (json_is_false(v))
        return xstrdup("false");
    return ty_json_compact(v);
}

char *ty_study_params_shown(const json_t *parameters)
{
    struct ty_buf b = TY_BUF_INIT;
    const char *key;
    json_t *v;
    bool first = true;

    ty_buf_putc(&b, '{');
    json_object_foreach((json_t *)parameters, key, v)
    {
        _cleanup_json_ json_t *k = json_string(key);
        _cleanup_free_ char *kt = ty_json_compact(k);
        _cleanup_free_ char *vt = json_is_number(v) ? ty_study_value_string(v) : ty_json_compact(v);
        ty_buf_printf(&b, "%s%s:%s", first ? "" : ",", kt, vt);
        first = false;
    }
    ty_buf_putc(&b, '}');
    return ty_buf_take(&b);
}

char **ty_study_trial_args(const struct ty_hp_spec *spec, const json_t *parameters)
{
    char **args = xcalloc(1, sizeof(char *));

    for (size_t i = 0; i < spec->n_params; i++) {
        const char *name = spec->params[i].name;
        const json_t *v = json_object_get(parameters, name);
        _cleanup_free_ char *s = NULL;
        if (!v)
            continue;
        s = ty_study_value_string(v);
        ty_strv_push_take(&args, xasprintf("--%s=%s", name, s));
    }
    return args;
}

static unsigned long long trial_number(const struct ty_study_trial *t)
{
    return strtoull(t->trial_id, NULL, 10);
}

/* qsort_r comparator: trials with a final metric first, best first (@arg points to the
 * study's maximize flag), then by trial number. */
static int cmp_trials(const void *pa, const void *pb, void *arg)
{
    bool maximize = *(const bool *)arg;
    const struct ty_study_trial *a = *(const struct ty_study_trial *const *)pa;
    const struct ty_study_trial *b = *(const struct ty_study_trial *const *)pb;
    unsigned long long na = trial_number(a), nb = trial_number(b);

    if (a->has_metric != b->has_metric)
        return a->has_metric ? -1 : 1;
    if (a->has_metric && a->final.value != b->final.value) {
        bool a_better =
            maximize ? a->final.value > b->final.value : a->final.value < b->final.value;
        return a_better ? -1 : 1;
    }
    return na < nb ? -1 : na > nb ? 1 : 0;
}

void ty_study_sort(const struct ty_study_trial **v, size_t n, bool maximize)
{
    if (n > 1)
        qsort_r(v, n, sizeof(*v), cmp_trials, &maximize);
}

static json_t *metric_json(const struct ty_hp_measurement *m)
{
    return json_pack(
        "{s:o,s:f}", "trainingStep", json_sprintf("%" PRId64, m->step), "objectiveValue", m->value);
}

json_t *ty_study_trial_json(const struct ty_study_trial *t)
{
    json_t *o = json_object(), *hp = json_object();
    const char *name;
    json_t *v;
    char ts[40];

    json_object_set_new(o, "trialId", json_string(t->trial_id));
    json_object_foreach((json_t *)t->parameters, name, v)
    {
        _cleanup_free_ char *s = ty_study_value_string(v);
        json_object_set_new(hp, name, json_string(s));
    }
    json_object_set_new(o, "hyperparameters", hp);
    if (t->has_metric)
        json_object_set_new(o, "finalMetric", metric_json(&t->final));
    if (t->n_metrics > 0) { /* a failed or cancelled trial's too: what it reported, for why */
        json_t *all = json_array();
        /* the last TY_HYPERTUNE_KEEP, as many as the library keeps in its file: a program
         * appending its own reports must not make every jobs.get megabytes long */
        for (size_t i = t->n_metrics > TY_HYPERTUNE_KEEP ? t->n_metrics - TY_HYPERTUNE_KEEP : 0;
             i < t->n_metrics;
             i++)
            json_array_append_new(all, metric_json(&t->metrics[i]));
        json_object_set_new(o, "allMetrics", all);
    }
    json_object_set_new(o, "state", json_string(ty_job_state_name(t->state)));
    if (t->start_usec)
        json_object_set_new(o, "startTime", json_string(ty_rfc3339(t->start_usec, 6, ts, 40)));
    if (t->end_usec)
        json_object_set_new(o, "endTime", json_string(ty_rfc3339(t->end_usec, 6, ts, 40)));
    json_object_set_new(o, "isTrialStoppedEarly", json_boolean(t->stopped_early));
    if (t->error && *t->error)
        json_object_set_new(o, "errorMessage", json_string(t->error));
    if (t->attempt_status)
        json_object_set(o, "attemptStatus", t->attempt_status);
    return o;
}

/* The TrainingOutput object of @n trials of which @succeeded SUCCEEDED, its trials array
 * @trials (taken). */
static json_t *output_object(const struct ty_hp_spec *spec, size_t succeeded, json_t *trials)
{
    json_t *out = json_object();

    json_object_set_new(out, "completedTrialCount", json_sprintf("%zu", succeeded));
    json_object_set_new(out, "trials", trials);
    json_object_set_new(out, "isHyperparameterTuningJob", json_true());
    json_object_set_new(out,
                        "hyperparameterMetricTag",
                        json_string(spec->metric_tag && *spec->metric_tag
                                        ? spec->metric_tag
                                        : TY_HYPERTUNE_DEFAULT_TAG));
    return out;
}

/* @v sorted best first into a new array (caller frees); *@succeeded counts the SUCCEEDED. */
static const struct ty_study_trial **sorted_copy(const struct ty_hp_spec *spec,
                                                 const struct ty_study_trial *const *v,
                                                 size_t n,
                                                 size_t *succeeded)
{
    const struct ty_study_trial **sorted = xcalloc(n ? n : 1, sizeof(*sorted));

    *succeeded = 0;
    for (size_t i = 0; i < n; i++) {
        sorted[i] = v[i];
        if (v[i]->state == TY_STATE_SUCCEEDED)
            (*succeeded)++;
    }
    ty_study_sort(sorted, n, spec->maximize);
    return sorted;
}

json_t *
ty_study_output_json(const struct ty_hp_spec *spec, const struct ty_study_trial *const *v, size_t n)
{
    size_t succeeded;
    _cleanup_free_ const struct ty_study_trial **sorted = sorted_copy(spec, v, n, &succeeded);
    json_t *trials = json_array();

    for (size_t i = 0; i < n; i++)
        json_array_append_new(trials, ty_study_trial_json(sorted[i]));
    return output_object(spec, succeeded, trials);
}

/* Append @len bytes of @s to the buffer @b (*@n used, *@cap allocated). */
static void buf_add(char **b, size_t *n, size_t *cap, const char *s, size_t len)
{
    if (*n + len + 1 > *cap) {
        *cap = (*n + len + 1) * 2;
        *b = xreallocarray(*b, *cap, 1);
    }
    memcpy(*b + *n, s, len);
    *n += len;
    (*b)[*n] = '\0';
}

/* Append @text with 2 × @depth spaces after each of its newlines (jansson writes a newline
 * only between tokens: one inside a string is escaped). */
static void buf_add_indented(char **b, size_t *n, size_t *cap, const char *text, int depth)
{
    static const char spaces[] = "                                                  ";
    size_t pad = (size_t)(2 * depth);

    for (const char *p = text, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl) {
            buf_add(b, n, cap, p, strlen(p));
            return;
        }
        buf_add(b, n, cap, p, (size_t)(nl - p + 1));
        for (size_t left = pad; left > 0;) {
            size_t k = left < sizeof(spaces) - 1 ? left : sizeof(spaces) - 1;
            buf_add(b, n, cap, spaces, k);
            left -= k;
        }
    }
}

char *ty_study_trial_pretty(const struct ty_study_trial *t, int depth)
{
    _cleanup_json_ json_t *j = ty_study_trial_json(t);
    _cleanup_free_ char *text = ty_json_pretty(j);
    char *b = NULL;
    size_t n = 0, cap = 0;

    buf_add_indented(&b, &n, &cap, text, depth);
    return b;
}

char *ty_study_output_pretty(const struct ty_hp_spec *spec,
                             const struct ty_study_trial *const *v,
                             size_t n,
                             int depth,
                             const char *(*text_of)(void *ctx, const struct ty_study_trial *t),
                             void *ctx)
{
    static const char hole[] = "\"trials\": []";
    size_t succeeded, len = 0, cap = 0;
    _cleanup_free_ const struct ty_study_trial **sorted = sorted_copy(spec, v, n, &succeeded);
    _cleanup_json_ json_t *head = output_object(spec, succeeded, json_array());
    _cleanup_free_ char *head_text = ty_json_pretty(head);
    _cleanup_free_ char *inner = NULL, *close = NULL;
    const char *at = strstr(head_text, hole); /* the first key but one: never in a value */
    char *b = NULL;

    if (!at || n == 0) {
        buf_add_indented(&b, &len, &cap, head_text, depth);
        return b;
    }
    inner = xasprintf(",\n%*s", 2 * (depth + 2), "");
    close = xasprintf("\n%*s]", 2 * (depth + 1), "");
    at += sizeof(hole) - 3; /* at the "[]" */
    _cleanup_free_ char *before = xstrndup(head_text, (size_t)(at - head_text));
    buf_add_indented(&b, &len, &cap, before, depth);
    buf_add(&b, &len, &cap, "[", 1);
    for (size_t i = 0; i < n; i++) {
        buf_add(&b, &len, &cap, inner + (i == 0), strlen(inner + (i == 0)));
        const char *t = text_of(ctx, sorted[i]);
        buf_add(&b, &len, &cap, t, strlen(t));
    }
    buf_add(&b, &len, &cap, close, strlen(close));
    buf_add_indented(&b, &len, &cap, at + 2, depth);
    return b;
}

bool ty_study_too_many_failures(
    const struct ty_hp_spec *spec, size_t n_failed, size_t n_succeeded, char *msg, size_t len)
{
    size_t first;

    if (spec->max_failed_trials > 0) {
        if (n_failed < (size_t)spec->max_failed_trials)
            return false;
        (void)snprintf(msg,
                       len,
                       "%zu %s failed, reaching maxFailedTrials (%d).",
                       n_failed,
                       n_failed == 1 ? "trial" : "trials",
                       spec->max_failed_trials);
        return true;
    }
    /* Unset: the service decides. trainyard gives up when the first few trials to end all
     * failed (the program is most likely broken), and otherwise lets the study run on. */
    first = spec->max_trials < TY_STUDY_DEFAULT_FAILURES ? (size_t)spec->max_trials
                                                         : TY_STUDY_DEFAULT_FAILURES;
    if (first == 0)
        first = 1;
    if (n_succeeded > 0 || n_failed < first)
        return false;
    if (first == 1)
        (void)snprintf(msg,
                       len,
                       "%zu %s failed: the first trial failed (maxFailedTrials is unset).",
                       n_failed,
                       n_failed == 1 ? "trial" : "trials");
    else
        (void)snprintf(msg,
                       len,
                       "%zu trials failed: the first %zu trials all failed (maxFailedTrials is "
                       "unset).",
                       n_failed,
                       first);
    return true;
}

uint64_t ty_study_default_seed(const struct ty_job *job)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (const char *p = job->job_id; *p; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
    return h;
}
