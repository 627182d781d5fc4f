/* SPDX-License-Identifier: Apache-2.0
 * test-study.c: the pure parts of the trial runner (study-output.c): value strings and trial
 * arguments, the order of trials, the trainingOutput JSON (as an object, and as pretty text
 * from each trial's kept text, byte for byte the same) and the failed-trial rule. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"
#include "trials.h"

static struct ty_study_trial mk(const char *id, enum ty_job_state st, bool has, double v)
{
    struct ty_study_trial t = {
        .trial_id = (char *)id, .state = st, .has_metric = has, .start_usec = 1000000};
    t.final.value = v;
    t.final.step = 7;
    t.end_usec = 2000000;
    return t; /* metrics: set by the caller, once the trial has its final address */
}

static void test_values(void)
{
    _cleanup_json_ json_t *r = json_real(0.1), *i = json_integer(-42), *s = json_string("relu");
    _cleanup_json_ json_t *big = json_real(1e-5), *whole = json_real(2.0);
    _cleanup_json_ json_t *ten = json_real(10.0), *k100 = json_real(1e5);
    _cleanup_free_ char *a = ty_study_value_string(r);
    _cleanup_free_ char *b = ty_study_value_string(i);
    _cleanup_free_ char *c = ty_study_value_string(s);
    _cleanup_free_ char *d = ty_study_value_string(big);
    _cleanup_free_ char *e = ty_study_value_string(whole);
    _cleanup_free_ char *f = ty_study_value_string(ten);
    _cleanup_free_ char *g = ty_study_value_string(k100);
    ok(strcmp(a, "0.1") == 0, "a real in its shortest form (%s)", a);
    ok(strcmp(b, "-42") == 0, "an integer in decimal");
    ok(strcmp(c, "relu") == 0, "a category as is");
    ok(strcmp(d, "1e-05") == 0, "a small real (%s)", d);
    ok(strcmp(e, "2") == 0, "a whole real (%s)", e);
    /* %g's shortest is "1e+01": a program's int("1e+01") fails (a DISCRETE value of epochs) */
    ok(strcmp(f, "10") == 0, "a whole real of one digit and a zero (%s)", f);
    ok(strcmp(g, "100000") == 0, "a whole real of one digit and zeros (%s)", g);
}

static void test_params_shown(void)
{
    _cleanup_json_ json_t *p =
        json_pack("{s:i,s:f,s:s,s:f}", "a", 1, "b", 10.0, "c", "x\"y", "d", 0.1);
    _cleanup_free_ char *s = ty_study_params_shown(p);

    ok(strcmp(s, "{\"a\":1,\"b\":10,\"c\":\"x\\\"y\",\"d\":0.1}") == 0,
       "params shown as the trial gets them: %s",
       s);
}

/* allMetrics keeps the last TY_HYPERTUNE_KEEP reports, as the library's file does. */
static void test_all_metrics_bounded(void)
{
    struct ty_study_trial t = mk("1", TY_STATE_SUCCEEDED, true, 0.5);
    struct ty_hp_measurement m[TY_HYPERTUNE_KEEP + 50];
    _cleanup_json_ json_t *o = NULL;
    json_t *all;

    for (size_t i = 0; i < TY_ARRAY_SIZE(m); i++)
        m[i] = (struct ty_hp_measurement){.value = (double)i, .step = (int64_t)i};
    t.parameters = json_object();
    t.metrics = m;
    t.n_metrics = TY_ARRAY_SIZE(m);
    o = ty_study_trial_json(&t);
    all = json_object_get(o, "allMetrics");
    ok(json_array_size(all) == TY_HYPERTUNE_KEEP &&
           strcmp(ty_json_str(json_array_get(all, 0), "trainingStep"), "50") == 0,
       "allMetrics: the last %d of %zu reports",
       TY_HYPERTUNE_KEEP,
       TY_ARRAY_SIZE(m));
    json_decref(t.parameters);
}

static void test_args(void)
{
    struct ty_error err = {0};
    struct ty_hp_spec *spec = NULL;
    _cleanup_json_ json_t *j = NULL, *params = NULL;
    char **args;

    static const char text[] =
        "{\"params\":[{\"parameterName\":\"lr\",\"type\":\"DOUBLE\",\"minValue\":0.001,"
        "\"maxValue\":1,\"scaleType\":\"UNIT_LOG_SCALE\"},{\"parameterName\":\"layers\","
        "\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":4}],\"maxTrials\":3}";

    (void)ty_json_parse(text, strlen(text), &j, &err);
    ok(j && ty_hp_spec_from_json(j, &spec, &err) == 0, "spec parses: %s", ty_error_msg(&err));
    if (!spec)
        return;
    params = json_pack("{s:i,s:f}", "layers", 3, "lr", 0.01);
    args = ty_study_trial_args(spec, params);
    ok(ty_strv_len(args) == 2 && strcmp(args[0], "--lr=0.01") == 0 &&
           strcmp(args[1], "--layers=3") == 0,
       "trial args in the spec's order: %s %s",
       args[0],
       args[1] ? args[1] : "");
    ty_strv_free(args);

    is_int(ty_study_too_many_failures(spec, 2, 0, (char[128]){0}, 128),
           0,
           "unset: 2 of 3 fail: go on");
    {
        char msg[128];
        ok(ty_study_too_many_failures(spec, 3, 0, msg, sizeof(msg)) &&
               strstr(msg, "first 3 trials all failed"),
           "unset: the first 3 all fail: stop (%s)",
           msg);
    }
    is_int(ty_study_too_many_failures(spec, 5, 1, (char[128]){0}, 128),
           0,
           "unset: after a success failures never stop");
    spec->max_trials = 2;
    is_int(ty_study_too_many_failures(spec, 2, 0, (char[128]){0}, 128),
           1,
           "unset, maxTrials 2: both fail: stop");
    spec->max_failed_trials = 4;
    is_int(ty_study_too_many_failures(spec, 3, 0, (char[128]){0}, 128),
           0,
           "maxFailedTrials 4: 3 failed: go on");
    {
        char msg[128];
        ok(ty_study_too_many_failures(spec, 4, 2, msg, sizeof(msg)) &&
               strcmp(msg, "4 trials failed, reaching maxFailedTrials (4).") == 0,
           "maxFailedTrials 4: 4 failed (even after successes): stop (%s)",
           msg);
        spec->max_failed_trials = 0;
        spec->max_trials = 1;
        ok(ty_study_too_many_failures(spec, 1, 0, msg, sizeof(msg)) &&
               strcmp(msg, "1 trial failed: the first trial failed (maxFailedTrials is unset).") ==
                   0,
           "unset, maxTrials 1: one trial (%s)",
           msg);
        spec->max_failed_trials = 1;
        ok(ty_study_too_many_failures(spec, 1, 0, msg, sizeof(msg)) &&
               strcmp(msg, "1 trial failed, reaching maxFailedTrials (1).") == 0,
           "maxFailedTrials 1: one trial (%s)",
           msg);
    }
    ty_hp_free(spec);
}

static void test_sort_and_output(void)
{
    struct ty_study_trial t[5] = {
        mk("1", TY_STATE_FAILED, false, 0),
        mk("2", TY_STATE_SUCCEEDED, true, 0.5),
        mk("10", TY_STATE_SUCCEEDED, true, 0.9),
        mk("3", TY_STATE_SUCCEEDED, true, 0.9),
        mk("4", TY_STATE_CANCELLED, false, 0),
    };
    const struct ty_study_trial *v[5];
    struct ty_hp_spec spec = {.maximize = true};
    _cleanup_json_ json_t *out = NULL;
    json_t *tr;

    for (size_t i = 0; i < 5; i++) {
        t[i].parameters = json_pack("{s:f}", "x", (double)i / 4);
        if (t[i].has_metric) {
            t[i].metrics = &t[i].final;
            t[i].n_metrics = 1;
        }
        v[i] = &t[i];
    }
    ty_study_sort(v, 5, true);
    ok(strcmp(v[0]->trial_id, "3") == 0 && strcmp(v[1]->trial_id, "10") == 0 &&
           strcmp(v[2]->trial_id, "2") == 0 && strcmp(v[3]->trial_id, "1") == 0 &&
           strcmp(v[4]->trial_id, "4") == 0,
       "maximize: best first, ties by trial number, trials without a metric last");
    ty_study_sort(v, 5, false);
    ok(strcmp(v[0]->trial_id, "2") == 0 && strcmp(v[1]->trial_id, "3") == 0 &&
           strcmp(v[3]->trial_id, "1") == 0,
       "minimize: lowest first");

    t[0].error = (char *)"The replica master 0 exited with a non-zero status of 1.";
    out = ty_study_output_json(&spec, v, 5);
    ok(strcmp(ty_json_str(out, "completedTrialCount"), "3") == 0,
       "completedTrialCount: succeeded trials, as a string");
    ok(json_is_true(json_object_get(out, "isHyperparameterTuningJob")),
       "isHyperparameterTuningJob");
    ok(strcmp(ty_json_str(out, "hyperparameterMetricTag"), "training/hptuning/metric") == 0,
       "default tag");
    tr = json_array_get(json_object_get(out, "trials"), 0);
    ok(strcmp(ty_json_str(tr, "trialId"), "3") == 0, "trials best first (goal maximize)");
    ok(strcmp(ty_json_str(json_object_get(tr, "finalMetric"), "trainingStep"), "7") == 0 &&
           json_real_value(json_object_get(json_object_get(tr, "finalMetric"), "objectiveValue")) ==
               0.9,
       "finalMetric {trainingStep string, objectiveValue}");
    ok(strcmp(ty_json_str(json_object_get(tr, "hyperparameters"), "x"), "0.75") == 0,
       "hyperparameters as strings");
    ok(strcmp(ty_json_str(tr, "startTime"), "1970-01-01T00:00:01Z") == 0 ||
           strncmp(ty_json_str(tr, "startTime"), "1970-01-01T00:00:01", 19) == 0,
       "startTime RFC 3339 (%s)",
       ty_json_str(tr, "startTime"));
    ok(json_is_false(json_object_get(tr, "isTrialStoppedEarly")), "isTrialStoppedEarly false");
    tr = json_array_get(json_object_get(out, "trials"), 3);
    ok(strcmp(ty_json_str(tr, "trialId"), "1") == 0 &&
           strcmp(ty_json_str(tr, "state"), "FAILED") == 0 && !json_object_get(tr, "finalMetric") &&
           strcmp(ty_json_str(tr, "errorMessage"), t[0].error) == 0,
       "a failed trial: no finalMetric, its error");
    for (size_t i = 0; i < 5; i++)
        json_decref(t[i].parameters);
}

/* ty_study_output_pretty's text_of for the test: each trial's text kept in texts[] (indexed
 * by its place in the trial array), counting the renders. */
struct kept {
    const struct ty_study_trial *base;
    char *texts[5];
    int depth, renders;
};

static const char *kept_text(void *ctx, const struct ty_study_trial *t)
{
    struct kept *k = ctx;
    size_t i = (size_t)(t - k->base);

    if (!k->texts[i]) {
        k->texts[i] = ty_study_trial_pretty(t, k->depth);
        k->renders++;
    }
    return k->texts[i];
}

/* The text of @v (@n trials) both ways, at @depth: the same bytes? */
static bool same_text(struct kept *k,
                      const struct ty_hp_spec *spec,
                      const struct ty_study_trial *const *v,
                      size_t n,
                      int depth)
{
    _cleanup_json_ json_t *out = ty_study_output_json(spec, v, n);
    _cleanup_json_ json_t *doc = json_pack("{s:s,s:{s:{s:O}}}", "a", "b\nc", "d", "e", "f", out);
    _cleanup_free_ char *want = ty_json_pretty(depth == 0 ? out : doc);
    _cleanup_free_ char *got = ty_study_output_pretty(spec, v, n, depth, kept_text, k);
    const char *at = want;

    if (depth == 3) { /* the output inside doc: from its "f": value to its closing brace */
        at = strstr(want, "\"f\": ") + 5;
        want[strlen(want) - 12] = '\0'; /* less "\n    }\n  }\n}": the closing braces of doc */
    }
    if (strcmp(at, got) != 0)
        diag("want:\n%s\ngot:\n%s", at, got);
    return strcmp(at, got) == 0;
}

static void test_output_text(void)
{
    struct ty_study_trial t[5] = {
        mk("1", TY_STATE_FAILED, false, 0),
        mk("2", TY_STATE_SUCCEEDED, true, 0.1),
        mk("3", TY_STATE_RUNNING, false, 0),
        mk("4", TY_STATE_SUCCEEDED, true, 1e-300),
        mk("5", TY_STATE_PREPARING, false, 0),
    };
    const struct ty_study_trial *v[5];
    struct ty_hp_spec spec = {.maximize = false, .metric_tag = (char *)"loss\n\"x\""};
    struct kept k = {.base = t, .depth = 2};

    for (size_t i = 0; i < 5; i++) {
        t[i].parameters = json_pack("{s:f,s:s,s:i}", "lr", 0.1 * (double)i, "opt", "a\"\n", "n", 3);
        if (t[i].has_metric) {
            t[i].metrics = &t[i].final;
            t[i].n_metrics = 1;
        }
        v[i] = &t[i];
    }
    t[0].error = (char *)"exit 1:\n\ttab";
    t[2].end_usec = 0;
    t[2].attempt_status = json_pack("{s:i,s:[]}", "attempt", 2, "restarts");
    ok(same_text(&k, &spec, v, 0, 0), "no trials: the same text as ty_json_pretty");
    ok(same_text(&k, &spec, v, 5, 0), "five trials: the same text as ty_json_pretty");
    ok(k.renders == 5, "each trial rendered once (%d)", k.renders);
    ok(same_text(&k, &spec, v, 5, 0) && k.renders == 5, "written again: no trial rendered again");
    t[2].state = TY_STATE_SUCCEEDED;
    t[2].has_metric = true;
    t[2].final.value = -2;
    free(k.texts[2]);
    k.texts[2] = NULL; /* trial 3 changed: its text only is made again, and it moves first */
    ok(same_text(&k, &spec, v, 5, 0) && k.renders == 6, "a changed trial rendered again only");
    for (size_t i = 0; i < 5; i++) {
        free(k.texts[i]);
        k.texts[i] = NULL;
    }
    k.depth = 5;
    ok(same_text(&k, &spec, v, 5, 3), "three levels down: the same text as in a document");
    for (size_t i = 0; i < 5; i++) {
        free(k.texts[i]);
        json_decref(t[i].parameters);
    }
    json_decref(t[2].attempt_status);
}

int main(void)
{
    test_values();
    test_args();
    test_params_shown();
    test_all_metrics_bounded();
    test_sort_and_output();
    test_output_text();
    return done_testing();
}
