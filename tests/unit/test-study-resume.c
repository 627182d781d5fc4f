/* SPDX-License-Identifier: Apache-2.0
 * test-study-resume.c: resumePreviousJobId's loading (study-resume.c): the chain of jobs a
 * resumed job resumed in turn, their trials as one study's (the next trial's number, GRID
 * points not run again), and the earlier trials' reports as the median rule's reference
 * curves when they carry no global_step (numbered by their order, as a running trial's). */
#include <math.h>
#include <string.h>

#include "jobstate.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "stoprule.h"
#include "tap.h"
#include "trials.h"
#include "tuner.h"

/* A GRID_SEARCH over x in 1..@max (INTEGER), minimising "loss", resuming @resume (or none). */
static json_t *hp_json(int max, const char *resume)
{
    json_t *hp = json_pack("{s:s, s:s, s:i, s:s, s:[{s:s, s:s, s:i, s:i}]}",
                           "goal",
                           "MINIMIZE",
                           "hyperparameterMetricTag",
                           "loss",
                           "maxTrials",
                           10,
                           "algorithm",
                           "GRID_SEARCH",
                           "params",
                           "parameterName",
                           "x",
                           "type",
                           "INTEGER",
                           "minValue",
                           1,
                           "maxValue",
                           max);
    if (resume)
        json_object_set_new(hp, "resumePreviousJobId", json_string(resume));
    return hp;
}

/* A SUCCEEDED trial @id with x = @x; its 12 reports carry trainingStep "0" (none given), loss
 * 1 - 0.075 k + 0.01 @n at the kth. */
static json_t *trial_json(const char *id, int x, int n)
{
    json_t *all = json_array();
    for (int k = 1; k <= 12; k++)
        json_array_append_new(
            all,
            json_pack(
                "{s:s, s:f}", "trainingStep", "0", "objectiveValue", 1 - 0.075 * k + 0.01 * n));
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:f}, s:o}",
                     "trialId",
                     id,
                     "state",
                     "SUCCEEDED",
                     "hyperparameters",
                     "x",
                     x == 1   ? "1"
                     : x == 2 ? "2"
                              : "3",
                     "finalMetric",
                     "trainingStep",
                     "0",
                     "objectiveValue",
                     1 - 0.075 * 12 + 0.01 * n,
                     "allMetrics",
                     all);
}

/* An ended job @id of hyperparameters @hp (taken) and trials @trials (taken). */
static json_t *job_json(const char *id, json_t *hp, json_t *trials)
{
    return json_pack("{s:s, s:s, s:{s:o}, s:{s:o}}",
                     "jobId",
                     id,
                     "state",
                     "SUCCEEDED",
                     "trainingInput",
                     "hyperparameters",
                     hp,
                     "trainingOutput",
                     "trials",
                     trials);
}

/* The jobs by id, for ty_study_resume_chain. */
static json_t *lookup(void *ctx, const char *id)
{
    json_t *j = json_object_get(ctx, id);
    return j ? json_incref(j) : NULL;
}

static void test_chain(void)
{
    _cleanup_json_ json_t *jobs = json_object();
    _cleanup_json_ json_t *chain = NULL, *hp3 = hp_json(3, "g2");
    struct ty_hp_spec *spec = NULL;
    struct ty_tuner *t = NULL;
    struct ty_study_resume_stats s = {0};
    struct ty_trial_suggestion *sg = NULL;
    struct ty_error e = {0};
    size_t n = 0;

    /* g1: x 1 and 2; g2 (resuming g1): x 3; g3 resumes g2, and g0 would resume g3: a loop */
    json_object_set_new(
        jobs,
        "g1",
        job_json("g1",
                 hp_json(2, "g0"),
                 json_pack("[o, o]", trial_json("1", 1, 1), trial_json("2", 2, 2))));
    json_object_set_new(
        jobs, "g2", job_json("g2", hp_json(3, "g1"), json_pack("[o]", trial_json("3", 3, 3))));
    json_object_set_new(jobs, "g0", job_json("g0", hp_json(3, "g2"), json_array()));

    chain = ty_study_resume_chain(json_object_get(jobs, "g2"), lookup, jobs);
    is_int(json_array_size(chain), 2, "g2 resumed g1, which resumed g0");
    is_str(ty_json_str(json_array_get(chain, 0), "jobId"), "g1", "nearest first");
    json_decref(chain);
    chain = ty_study_resume_chain(json_object_get(jobs, "g1"), lookup, jobs);
    is_int(json_array_size(chain), 2, "g1 -> g0 -> g2, and g2 resumed g1: the loop ends there");
    json_decref(chain);
    chain = ty_study_resume_chain(json_object_get(jobs, "g2"), lookup, jobs);

    ok(ty_hp_spec_from_json(hp3, &spec, &e) == 0, "spec: %s", e.msg);
    ok(ty_tuner_new(spec, 1, &t, &e) == 0, "tuner: %s", e.msg);
    ok(ty_study_resume_load(spec, json_object_get(jobs, "g2"), chain, t, NULL, &s, &e) == 0,
       "load: %s",
       e.msg);
    is_int(s.succeeded, 3, "the trials of g2 and g1 inform the search");
    is_int(s.chained, 2, "two jobs beyond g2 (g0 has no trials)");
    is_int((long long)s.last_id, 3, "numbered after trial 3");
    ok(ty_tuner_suggest(t, 1, &sg, &n, &e) == 0 && n == 0, "every grid point ran: none left");
    ty_trial_suggestions_free(sg, n);
    ty_tuner_free(t);
    ty_hp_free(spec);
}

/* A job the service ended after losing its supervisor: the trial it last recorded RUNNING
 * reads CANCELLED (ty_training_output_settle, as the API shows the job), so that a study
 * resuming it runs that grid point again instead of counting a failure. */
static void test_interrupted_trial(void)
{
    _cleanup_json_ json_t *hp = hp_json(2, "i1");
    _cleanup_json_ json_t *job =
        job_json("i1", hp_json(2, NULL), json_pack("[o]", trial_json("1", 1, 1)));
    json_t *running = trial_json("2", 2, 2), *chain = json_array();
    struct ty_hp_spec *spec = NULL;
    struct ty_tuner *t = NULL;
    struct ty_study_resume_stats s = {0};
    struct ty_trial_suggestion *sg = NULL;
    struct ty_error e = {0};
    size_t n = 0;

    json_object_set_new(running, "state", json_string("RUNNING"));
    json_object_del(running, "finalMetric");
    json_array_append_new(json_object_get(json_object_get(job, "trainingOutput"), "trials"),
                          running);
    json_object_set_new(job, "state", json_string("FAILED"));
    is_int((int)ty_training_output_settle(json_object_get(job, "trainingOutput")),
           1,
           "the interrupted trial is settled");
    is_str(ty_json_str(running, "state"), "CANCELLED", "as CANCELLED");
    ok(ty_hp_spec_from_json(hp, &spec, &e) == 0, "spec: %s", e.msg);
    ok(ty_tuner_new(spec, 1, &t, &e) == 0, "tuner: %s", e.msg);
    ok(ty_study_resume_load(spec, job, chain, t, NULL, &s, &e) == 0, "load: %s", e.msg);
    is_int(s.succeeded, 1, "interrupted: one trial succeeded");
    is_int(s.failed, 0, "and none failed");
    ok(ty_tuner_suggest(t, 1, &sg, &n, &e) == 0 && n == 1, "its grid point is run again");
    ty_trial_suggestions_free(sg, n);
    ty_tuner_free(t);
    ty_hp_free(spec);
    json_decref(chain);
}

static void test_reference_steps(void)
{
    _cleanup_json_ json_t *hp = hp_json(3, "es0");
    _cleanup_json_ json_t *prev = job_json(
        "es0",
        hp_json(3, NULL),
        json_pack(
            "[o, o, o]", trial_json("1", 1, 1), trial_json("2", 2, 2), trial_json("3", 3, 3)));
    struct ty_stop_rule *rule = ty_stop_rule_new(false);
    struct ty_stop_decision d = {0};
    struct ty_hp_spec *spec = NULL;
    struct ty_tuner *t = NULL;
    struct ty_error e = {0};

    ok(ty_hp_spec_from_json(hp, &spec, &e) == 0 && ty_tuner_new(spec, 1, &t, &e) == 0, "set up");
    ok(ty_study_resume_load(spec, prev, NULL, t, rule, NULL, &e) == 0, "load: %s", e.msg);
    is_int(ty_stop_rule_n_reference(rule), 3, "three reference curves");
    /* a new trial at 0.7 throughout, its reports numbered 1..10 as a running trial's are */
    for (size_t i = 0; i < 10; i++)
        ty_stop_rule_report(rule, "4", ty_stop_rule_step(0, i), 0.7);
    ok(ty_stop_rule_check(rule, "4", &d), "stopped at step 10");
    /* running averages at step 10: 1 - 0.075 * 5.5 + 0.01 n = 0.5975, 0.6075, 0.6175 */
    ok(fabs(d.median - 0.6075) < 1e-9, "median of the whole curves at step 10: %g", d.median);
    is_int(d.step, 10, "at the trial's own step");

    /* a new attempt of trial 4 starts from nothing */
    ty_stop_rule_restart(rule, "4");
    ok(!ty_stop_rule_check(rule, "4", &d), "no reports after a restart: no decision");
    ty_stop_rule_report(rule, "4", 1, 2.0);
    ok(ty_stop_rule_check(rule, "4", &d) && d.step == 1, "its new reports count from step 1");
    ty_stop_rule_free(rule);
    ty_tuner_free(t);
    ty_hp_free(spec);
}

/* A job stored before a rule of new jobs (no scaleType on a CATEGORICAL parameter) can be
 * resumed all the same: the rule is a new job's (ty_hp_check_new), not a stored one's. */
static void test_older_rules(void)
{
    _cleanup_json_ json_t *jobs = json_object();
    _cleanup_json_ json_t *hp_old = hp_json(3, NULL), *hp_new = hp_json(3, "old");
    _cleanup_json_ json_t *chain = NULL;
    struct ty_hp_spec *spec = NULL;
    struct ty_tuner *t = NULL;
    struct ty_study_resume_stats s = {0};
    struct ty_error e = {0};

    json_array_append_new(json_object_get(hp_old, "params"),
                          json_pack("{s:s, s:s, s:[s], s:s}",
                                    "parameterName",
                                    "o",
                                    "type",
                                    "CATEGORICAL",
                                    "categoricalValues",
                                    "a",
                                    "scaleType",
                                    "UNIT_LINEAR_SCALE"));
    json_array_append_new(json_object_get(hp_new, "params"),
                          json_pack("{s:s, s:s, s:[s]}",
                                    "parameterName",
                                    "o",
                                    "type",
                                    "CATEGORICAL",
                                    "categoricalValues",
                                    "a"));
    json_object_set_new(jobs, "old", job_json("old", json_incref(hp_old), json_array()));
    chain = ty_study_resume_chain(json_object_get(jobs, "old"), lookup, jobs);
    ok(ty_hp_spec_from_json(hp_new, &spec, &e) == 0, "spec: %s", e.msg);
    ok(spec && ty_tuner_new(spec, 1, &t, &e) == 0, "tuner: %s", e.msg);
    ok(t && ty_study_resume_load(spec, json_object_get(jobs, "old"), chain, t, NULL, &s, &e) == 0,
       "a job stored before the rules of new jobs is resumed: %s",
       e.msg);
    ty_tuner_free(t);
    ty_hp_free(spec);
}

int main(void)
{
    test_chain();
    test_interrupted_trial();
    test_reference_steps();
    test_older_rules();
    return done_testing();
}
