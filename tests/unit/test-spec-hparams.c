/* SPDX-License-Identifier: Apache-2.0
 * test-spec-hparams.c: trainingInput.hyperparameters (spec-hparams.c): the typed spec and
 * every rule, through the public path (ty_spec_parse + ty_job_from_json).
 *
 * JSON documents are written with ' for " (dq() swaps them) to keep them readable. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "spec-check.h"

/* A job around a HyperparameterSpec body ("'params':[...]" etc.). */
#define HPJOB(body)                                                                                \
    "{'jobId':'hp_job','trainingInput':{'masterConfig':{'imageUri':'i'},"                          \
    "'hyperparameters':{" body "}}}"
#define P_LR "{'parameterName':'lr','type':'DOUBLE','minValue':0.0001,'maxValue':0.1}"

/* The job model's own reading (ty_job_from_json); an accepted document must carry a
 * hyperparameter spec. */
static int spec_build(json_t *doc, struct ty_job **ret, struct ty_error *e)
{
    if (ty_job_from_json(doc, ret, e) < 0)
        return -1;
    if (ty_hp_check_new((*ret)->hp, e) < 0) { /* a new job's rules (ty_job_accept's) */
        *ret = ty_job_free(*ret);
        return -1;
    }
    if (!(*ret)->hp) {
        ty_job_free(*ret);
        *ret = NULL;
        return ty_error_set(e, EINVAL, "(test) the job has no hyperparameters");
    }
    return 0;
}

static void test_full_spec(void)
{
    struct ty_job *job;

    job = good(HPJOB("'goal':'MINIMIZE','maxTrials':'20','maxParallelTrials':4,"
                     "'maxFailedTrials':2,'hyperparameterMetricTag':'loss',"
                     "'enableTrialEarlyStopping':true,'algorithm':'RANDOM_SEARCH',"
                     "'resumePreviousJobId':'prev_job_1','params':["
                     "{'parameterName':'lr','type':'DOUBLE','minValue':'1e-4','maxValue':0.1,"
                     "'scaleType':'UNIT_LOG_SCALE'},"
                     "{'parameterName':'layers','type':'INTEGER','minValue':1,'maxValue':8,"
                     "'scaleType':'UNIT_LINEAR_SCALE'},"
                     "{'parameterName':'opt','type':'CATEGORICAL','categoricalValues':"
                     "['adam','sgd']},"
                     "{'parameterName':'batch.size','type':'DISCRETE','discreteValues':"
                     "[16,32,64.5]}]"),
               "a full HyperparameterSpec");
    if (job && job->hp) {
        const struct ty_hp_spec *hp = job->hp;
        ok(!hp->maximize, "goal MINIMIZE");
        is_int(hp->max_trials, 20, "maxTrials from a string");
        is_int(hp->max_parallel_trials, 4, "maxParallelTrials");
        is_int(hp->max_failed_trials, 2, "maxFailedTrials");
        is_str(hp->metric_tag, "loss", "hyperparameterMetricTag");
        ok(hp->early_stopping, "enableTrialEarlyStopping");
        is_int(hp->algorithm, TY_HP_ALGO_RANDOM, "algorithm RANDOM_SEARCH");
        is_str(hp->resume_job_id, "prev_job_1", "resumePreviousJobId");
        is_int(hp->n_params, 4, "four params");
        is_str(hp->params[0].name, "lr", "param 0 name");
        is_int(hp->params[0].type, TY_HP_DOUBLE, "param 0 DOUBLE");
        ok(hp->params[0].min == 1e-4 && hp->params[0].max == 0.1, "param 0 bounds");
        is_int(hp->params[0].scale, TY_HP_SCALE_LOG, "param 0 log scale");
        is_int(hp->params[1].type, TY_HP_INTEGER, "param 1 INTEGER");
        ok(hp->params[1].min == 1 && hp->params[1].max == 8, "param 1 bounds");
        is_int(hp->params[1].scale, TY_HP_SCALE_LINEAR, "param 1 linear scale");
        ok(hp->params[2].categories && strcmp(hp->params[2].categories[1], "sgd") == 0 &&
               !hp->params[2].categories[2],
           "param 2 categories");
        is_int(hp->params[2].scale, TY_HP_SCALE_NONE, "param 2 no scale");
        is_int(hp->params[3].n_discrete, 3, "param 3: three values");
        ok(hp->params[3].discrete && hp->params[3].discrete[2] == 64.5, "param 3 values");
        _cleanup_free_ char *c =
            ty_json_compact(json_object_get(job->training_input, "hyperparameters"));
        like(c, "\"maxTrials\":20,\"maxParallelTrials\":4", "canonical: int32 fields as numbers");
        like(c, "\"minValue\":0.0001", "canonical: a double from a string");
    }
    ty_job_free(job);

    job = good(HPJOB("'params':[" P_LR "]"), "the defaults");
    if (job && job->hp) {
        ok(job->hp->maximize, "goal defaults to MAXIMIZE");
        is_int(job->hp->max_trials, 1, "maxTrials defaults to 1");
        is_int(job->hp->max_parallel_trials, 1, "maxParallelTrials defaults to 1");
        is_int(job->hp->max_failed_trials, 0, "maxFailedTrials defaults to 0");
        is_str(job->hp->metric_tag, "training/hptuning/metric", "metric tag default");
        is_int(job->hp->algorithm, TY_HP_ALGO_DEFAULT, "algorithm default");
        ok(!job->hp->resume_job_id && !job->hp->early_stopping, "no resume, no early stopping");
    }
    ty_job_free(job);

    /* proto3: a 0 is the field's default, as if absent (AI Platform ran one trial) */
    job = good(HPJOB("'maxTrials':0,'maxParallelTrials':'0','params':[" P_LR "]"), "zeros");
    if (job && job->hp) {
        is_int(job->hp->max_trials, 1, "maxTrials 0 is the default, 1");
        is_int(job->hp->max_parallel_trials, 1, "maxParallelTrials 0 is the default, 1");
    }
    ty_job_free(job);

    job =
        good(HPJOB("'goal':'GOAL_TYPE_UNSPECIFIED','params':[" P_LR "]"), "GOAL_TYPE_UNSPECIFIED");
    if (job && job->hp)
        ok(job->hp->maximize, "GOAL_TYPE_UNSPECIFIED maximizes");
    ty_job_free(job);

    job = good_fmt(TY_SPEC_YAML,
                   "jobId: hp_yaml\n"
                   "trainingInput:\n"
                   "  masterConfig: {imageUri: i}\n"
                   "  hyperparameters:\n"
                   "    goal: MAXIMIZE\n"
                   "    maxTrials: 10\n"
                   "    maxParallelTrials: 5\n"
                   "    hyperparameterMetricTag: my_accuracy_tag\n"
                   "    enableTrialEarlyStopping: TRUE\n"
                   "    params:\n"
                   "    - parameterName: epochs\n"
                   "      type: INTEGER\n"
                   "      minValue: 10\n"
                   "      maxValue: 250\n"
                   "      scaleType: UNIT_LINEAR_SCALE\n"
                   "    - parameterName: lr\n"
                   "      type: DOUBLE\n"
                   "      minValue: 0.0001\n"
                   "      maxValue: 0.1\n"
                   "      scaleType: UNIT_LINEAR_SCALE\n",
                   "the cloudml-samples hptuning_config.yaml");
    if (job && job->hp) {
        is_int(job->hp->max_trials, 10, "yaml: maxTrials");
        ok(job->hp->early_stopping, "yaml: TRUE");
        ok(job->hp->params[0].max == 250 && job->hp->params[1].min == 0.0001,
           "yaml: numbers from plain scalars");
    }
    ty_job_free(job);
}

static void test_spec_rules(void)
{
    bad(HPJOB("'maxTrials':5"),
        "trainingInput.hyperparameters.params: at least one parameter",
        "no params");
    bad(HPJOB("'params':[]"), "hyperparameters.params: at least one parameter", "empty params");
    bad(HPJOB("'params':" P_LR),
        "'trainingInput.hyperparameters.params' (TYPE_ARRAY)",
        "params as an object");
    bad(HPJOB("'maxTrials':-1,'params':[" P_LR "]"),
        "trainingInput.hyperparameters.maxTrials: must be between 1 and 10000 (got -1)",
        "maxTrials -1");
    bad(HPJOB("'maxTrials':10001,'params':[" P_LR "]"),
        "hyperparameters.maxTrials: must be",
        "maxTrials 10001");
    good_free(HPJOB("'maxTrials':10000,'params':[" P_LR "]"), "maxTrials 10000");
    bad(HPJOB("'maxTrials':'many','params':[" P_LR "]"),
        "'trainingInput.hyperparameters.maxTrials' (TYPE_INT32)",
        "maxTrials 'many'");
    bad(HPJOB("'maxParallelTrials':-2,'params':[" P_LR "]"),
        "hyperparameters.maxParallelTrials: must be at least 1 (got -2)",
        "maxParallelTrials -2");
    bad(HPJOB("'maxFailedTrials':-1,'params':[" P_LR "]"),
        "hyperparameters.maxFailedTrials: must not be negative",
        "maxFailedTrials -1");
    bad(HPJOB("'hyperparameterMetricTag':'','params':[" P_LR "]"),
        "hyperparameters.hyperparameterMetricTag: must not be empty",
        "an empty metric tag");
    bad(HPJOB("'resumePreviousJobId':'1st-run','params':[" P_LR "]"),
        "hyperparameters.resumePreviousJobId: '1st-run' is not a valid job id",
        "a bad resumePreviousJobId");
    bad(HPJOB("'goal':'BEST','params':[" P_LR "]"),
        "'trainingInput.hyperparameters.goal' (TYPE_ENUM)",
        "goal BEST");
    bad(HPJOB("'algorithm':'BAYES','params':[" P_LR "]"),
        "'trainingInput.hyperparameters.algorithm' (TYPE_ENUM)",
        "algorithm BAYES");

    char *doc;
    size_t n = 0, cap = 16384;
    char *params = xmalloc(cap);
    for (int i = 0; i <= TY_HP_MAX_PARAMS; i++)
        n += (size_t)snprintf(params + n,
                              cap - n,
                              "%s{'parameterName':'p%d','type':'INTEGER','minValue':0,"
                              "'maxValue':1}",
                              i ? "," : "",
                              i);
    doc = xasprintf(HPJOB("'params':[%s]"), params);
    bad(doc, "hyperparameters.params: at most 100 parameters (got 101)", "101 params");
    free(doc);
    free(params);
}

static void test_param_rules(void)
{
#define PARAMS(p) HPJOB("'params':[" p "]")
    bad(PARAMS("{'type':'DOUBLE','minValue':0,'maxValue':1}"),
        "hyperparameters.params[0].parameterName: required",
        "a param without a name");
    bad(PARAMS("{'parameterName':'learning rate','type':'DOUBLE','minValue':0,'maxValue':1}"),
        "hyperparameters.params[0].parameterName: 'learning rate' may contain only",
        "a param name with a space");
    bad(PARAMS("{'parameterName':'a=b','type':'DOUBLE','minValue':0,'maxValue':1}"),
        "params[0].parameterName: 'a=b'",
        "a param name with '='");
    bad(PARAMS("{'parameterName':'','type':'DOUBLE','minValue':0,'maxValue':1}"),
        "params[0].parameterName: required",
        "an empty param name is a missing one");
    bad(PARAMS("{'parameterName':'-x','type':'DOUBLE','minValue':0,'maxValue':1}"),
        "params[0].parameterName: '-x' must not start with '-' or '.' (it becomes a ---x=VALUE "
        "argument, which no option parser reads)",
        "a param name starting with '-'");
    bad(PARAMS("{'parameterName':'.x','type':'DOUBLE','minValue':0,'maxValue':1}"),
        "params[0].parameterName: '.x' must not start with",
        "a param name starting with '.'");
    good_free(PARAMS("{'parameterName':'_x-1.y','type':'DOUBLE','minValue':0,'maxValue':1}"),
              "'_x-1.y' is a name");
    bad(PARAMS("{'parameterName':'job-dir','type':'DOUBLE','minValue':0,'maxValue':1}"),
        "params[0].parameterName: 'job-dir' is the argument that passes trainingInput.jobDir",
        "a param named job-dir");
    bad(PARAMS(P_LR ",{'parameterName':'lr','type':'INTEGER','minValue':0,'maxValue':1}"),
        "hyperparameters.params[1].parameterName: 'lr' is already used by params[0]",
        "a duplicate param name");
    bad(PARAMS("{'parameterName':'lr','minValue':0,'maxValue':1}"),
        "hyperparameters.params[0].type: required",
        "a param without a type");
    bad(PARAMS("{'parameterName':'lr','type':'PARAMETER_TYPE_UNSPECIFIED'}"),
        "params[0].type: required",
        "PARAMETER_TYPE_UNSPECIFIED");
    bad(PARAMS("{'parameterName':'lr','type':'FLOAT','minValue':0,'maxValue':1}"),
        "'trainingInput.hyperparameters.params[0].type' (TYPE_ENUM)",
        "type FLOAT");

    /* DOUBLE and INTEGER */
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','maxValue':1}"),
        "hyperparameters.params[0]: minValue and maxValue are required for DOUBLE",
        "DOUBLE without minValue");
    bad(PARAMS("{'parameterName':'n','type':'INTEGER','minValue':1}"),
        "minValue and maxValue are required for INTEGER",
        "INTEGER without maxValue");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':0,'maxValue':1,"
               "'categoricalValues':['a']}"),
        "params[0]: DOUBLE parameter 'lr' takes minValue and maxValue, not categoricalValues",
        "DOUBLE with categoricalValues");
    bad(PARAMS("{'parameterName':'x','type':'DOUBLE','minValue':-1e308,'maxValue':1e308}"),
        "params[0]: minValue and maxValue must lie within +-8.98847e+307 (half the largest "
        "double) for parameter 'x'",
        "a DOUBLE range whose width overflows a double");
    bad(PARAMS("{'parameterName':'i','type':'INTEGER','minValue':0,'maxValue':1e19}"),
        "params[0]: minValue and maxValue must lie within +-9007199254740992 (2^53",
        "an INTEGER bound beyond 2^53");
    good_free(PARAMS("{'parameterName':'i','type':'INTEGER','minValue':-9007199254740992,"
                     "'maxValue':9007199254740992}"),
              "INTEGER bounds of +-2^53");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[-1e308,0,1e308]}"),
        "params[0].discreteValues: -1e+308 is out of range",
        "a DISCRETE value beyond half the largest double");
    bad(PARAMS("{'parameterName':'n','type':'INTEGER','minValue':0,'maxValue':1,"
               "'discreteValues':[1]}"),
        "not discreteValues",
        "INTEGER with discreteValues");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':1,'maxValue':1}"),
        "params[0]: minValue (1) must be less than maxValue (1)",
        "minValue == maxValue");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':2,'maxValue':1}"),
        "minValue (2) must be less than maxValue (1)",
        "minValue > maxValue");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':0.30000001,'maxValue':0.3}"),
        "minValue (0.30000001) must be less than maxValue (0.3)",
        "the values are written as given, not rounded to 6 digits");
    bad(PARAMS("{'parameterName':'n','type':'INTEGER','minValue':0.5,'maxValue':4}"),
        "params[0]: minValue and maxValue must be whole numbers for INTEGER parameter 'n'",
        "INTEGER with a fractional minValue");
    bad(PARAMS("{'parameterName':'n','type':'INTEGER','minValue':0,'maxValue':4.5}"),
        "must be whole numbers",
        "INTEGER with a fractional maxValue");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':0,'maxValue':1,"
               "'scaleType':'UNIT_LOG_SCALE'}"),
        "hyperparameters.params[0].scaleType: UNIT_LOG_SCALE needs minValue > 0 (got 0)",
        "log scale from 0");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':-1,'maxValue':1,"
               "'scaleType':'UNIT_REVERSE_LOG_SCALE'}"),
        "params[0].scaleType: UNIT_REVERSE_LOG_SCALE needs minValue > 0",
        "reverse log scale from -1");
    good_free(PARAMS("{'parameterName':'n','type':'INTEGER','minValue':1,'maxValue':64,"
                     "'scaleType':'UNIT_REVERSE_LOG_SCALE'}"),
              "INTEGER on a reverse log scale from 1");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':'x','maxValue':1}"),
        "'trainingInput.hyperparameters.params[0].minValue' (TYPE_DOUBLE)",
        "minValue 'x'");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','minValue':'inf','maxValue':1}"),
        "params[0].minValue' (TYPE_DOUBLE)",
        "minValue 'inf'");
    bad(PARAMS("{'parameterName':'lr','type':'DOUBLE','scaleType':'LOG','minValue':1,"
               "'maxValue':2}"),
        "'trainingInput.hyperparameters.params[0].scaleType' (TYPE_ENUM)",
        "scaleType LOG");

    /* GRID_SEARCH */
    bad(HPJOB("'algorithm':'GRID_SEARCH','params':[" P_LR "]"),
        "trainingInput.hyperparameters.algorithm: GRID_SEARCH needs INTEGER, CATEGORICAL or "
        "DISCRETE parameters, and 'lr' is DOUBLE",
        "GRID_SEARCH with a DOUBLE");
    good_free(HPJOB("'algorithm':'GRID_SEARCH','maxTrials':12,'params':[{'parameterName':'n',"
                    "'type':'INTEGER','minValue':1,'maxValue':3},{'parameterName':'o','type':"
                    "'CATEGORICAL','categoricalValues':['a','b']},{'parameterName':'d','type':"
                    "'DISCRETE','discreteValues':[1,2]}]"),
              "GRID_SEARCH with INTEGER, CATEGORICAL and DISCRETE");

    /* CATEGORICAL */
    bad(PARAMS("{'parameterName':'o','type':'CATEGORICAL'}"),
        "hyperparameters.params[0].categoricalValues: required (non-empty) for CATEGORICAL",
        "CATEGORICAL without values");
    bad(PARAMS("{'parameterName':'o','type':'CATEGORICAL','categoricalValues':[]}"),
        "params[0].categoricalValues: required",
        "CATEGORICAL with an empty list");
    bad(PARAMS("{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['a'],"
               "'minValue':0}"),
        "params[0]: CATEGORICAL parameter 'o' takes only categoricalValues",
        "CATEGORICAL with minValue");
    bad(PARAMS("{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['a','b','a']}"),
        "params[0].categoricalValues: 'a' is listed twice",
        "a repeated category");
    bad(PARAMS("{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['a'],"
               "'scaleType':'UNIT_LOG_SCALE'}"),
        "params[0].scaleType: CATEGORICAL parameter 'o' takes no scaleType (got UNIT_LOG_SCALE)",
        "CATEGORICAL with a scaleType");
    good_free(PARAMS("{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['a'],"
                     "'scaleType':'NONE'}"),
              "CATEGORICAL with scaleType NONE");
    {
        /* A job stored before these rules still reads (its supervisor starts it): they are a
         * new job's (ty_hp_check_new), not the model's. */
        _cleanup_free_ char *t =
            dq(PARAMS("{'parameterName':'-o','type':'CATEGORICAL','categoricalValues':['a'],"
                      "'scaleType':'UNIT_LOG_SCALE'}"));
        _cleanup_json_ json_t *doc = NULL;
        struct ty_job *job = NULL;
        ok(ty_spec_parse(t, strlen(t), TY_SPEC_JSON, &doc, &err) == 0 &&
               ty_job_from_json(doc, &job, &err) == 0,
           "a stored job of the older rules reads: %s",
           err.msg);
        ty_job_free(job);
    }
    bad(PARAMS("{'parameterName':'o','type':'CATEGORICAL','categoricalValues':['a',3]}"),
        "'trainingInput.hyperparameters.params[0].categoricalValues[1]' (TYPE_STRING)",
        "a number as a category in JSON");

    /* DISCRETE */
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE'}"),
        "hyperparameters.params[0].discreteValues: required (non-empty) for DISCRETE",
        "DISCRETE without values");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[]}"),
        "params[0].discreteValues: required",
        "DISCRETE with an empty list");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[1,2],'maxValue':3}"),
        "params[0]: DISCRETE parameter 'd' takes only discreteValues",
        "DISCRETE with maxValue");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[1,2,2]}"),
        "params[0].discreteValues: must be strictly increasing (2 follows 2)",
        "a repeated discrete value");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[3,1]}"),
        "must be strictly increasing (1 follows 3)",
        "decreasing discrete values");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[1.0000001,1.0000002,"
               "1.00000015]}"),
        "must be strictly increasing (1.00000015 follows 1.0000002)",
        "discrete values are written as given");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[0,1],"
               "'scaleType':'UNIT_LOG_SCALE'}"),
        "params[0].scaleType: UNIT_LOG_SCALE needs values > 0",
        "log scale over 0");
    bad(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[1,'two']}"),
        "'trainingInput.hyperparameters.params[0].discreteValues[1]' (TYPE_DOUBLE)",
        "a discrete value that is no number");
    good_free(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[-1,'0.5',2e3]}"),
              "discrete values as numbers and strings");

    {
        size_t n = 0, cap = 8192;
        char *vals = xmalloc(cap);
        char *doc;
        for (int i = 0; i <= TY_HP_MAX_DISCRETE; i++)
            n += (size_t)snprintf(vals + n, cap - n, "%s%d", i ? "," : "", i);
        doc = xasprintf(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[%s]}"),
                        vals);
        bad(doc,
            "params[0].discreteValues: at most 1000 values (got 1001)",
            "1001 discrete values");
        free(doc);
        /* 1000 values: drop the last one */
        *strrchr(vals, ',') = '\0';
        doc = xasprintf(PARAMS("{'parameterName':'d','type':'DISCRETE','discreteValues':[%s]}"),
                        vals);
        good_free(doc, "1000 discrete values");
        free(doc);
        free(vals);
    }
    {
        size_t n = 0, cap = 16384;
        char *vals = xmalloc(cap);
        char *doc;
        for (int i = 0; i <= TY_HP_MAX_CATEGORIES; i++)
            n += (size_t)snprintf(vals + n, cap - n, "%s'c%d'", i ? "," : "", i);
        doc = xasprintf(
            PARAMS("{'parameterName':'c','type':'CATEGORICAL','categoricalValues':[%s]}"), vals);
        bad(doc, "params[0].categoricalValues: at most 1000 values (got 1001)", "1001 categories");
        free(doc);
        *strrchr(vals, ',') = '\0';
        doc = xasprintf(
            PARAMS("{'parameterName':'c','type':'CATEGORICAL','categoricalValues':[%s]}"), vals);
        good_free(doc, "1000 categories");
        free(doc);
        free(vals);
    }
#undef PARAMS
}

int main(void)
{
    test_full_spec();
    test_spec_rules();
    test_param_rules();
    return done_testing();
}
