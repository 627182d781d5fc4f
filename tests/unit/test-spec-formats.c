/* SPDX-License-Identifier: Apache-2.0
 * test-spec-formats.c: job documents -> canonical JSON -> struct ty_job: the schema gate
 * (schema.c), JSON, YAML and the lenient forms gcloud's config files take (the YAML loader).
 * The validation rules are in test-spec.c; the checks' helpers in spec-check.h. */

#include <stdlib.h>
#include <string.h>

#define SPEC_CHECK_ACCEPT
#include "spec-check.h"

static void test_schema(void)
{
    _cleanup_free_ char *c1 = NULL, *c2 = NULL, *c3 = NULL, *c4 = NULL, *c5 = NULL;

    /* A UTF-8 byte order mark before a JSON document: JSON's rules, not YAML's ("010" is
     * decimal, not an ambiguous octal). */
    {
        struct ty_job *job =
            good_fmt(TY_SPEC_AUTO,
                     "\xef\xbb\xbf{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'010'}",
                     "a JSON document after a byte order mark");
        ok(job && job->roles[TY_ROLE_WORKER].count == 10, "read as JSON: workerCount 10");
        ty_job_free(job);
    }

    /* Unknown names, Google's wording, at every level. */
    bad("{'masterConfig':{'imageUrl':'i'}}",
        "Invalid JSON payload received. Unknown name \"imageUrl\" at "
        "'trainingInput.masterConfig': Cannot find field.",
        "imageUrl in masterConfig");
    bad("{'jobId':'j','trainingInput':{" IMG "},'owner':'me'}",
        "Unknown name \"owner\" at 'Job'",
        "an unknown Job field");
    bad("{" IMG ",'masterMachineType':'n1-standard-4'}",
        "Unknown name \"masterMachineType\" at 'trainingInput'",
        "an unknown TrainingInput field");
    bad("{'jobId':'j','masterType':'n1-standard-4'}",
        "Unknown name \"masterType\" at 'Job'",
        "a TrainingInput field beside jobId");
    bad("{" IMG ",'hyperparameters':{'params':[{'parameterName':'a','type':'DOUBLE',"
        "'minValue':0,'maxValue':1,'step':1}]}}",
        "Unknown name \"step\" at 'trainingInput.hyperparameters.params[0]'",
        "an unknown field deep in hyperparameters");
    bad("{" IMG ",'scheduling':{'maxRuntime':'5s'}}",
        "Unknown name \"maxRuntime\" at 'trainingInput.scheduling'",
        "an unknown scheduling field");

    /* camelCase and snake_case */
    c1 = canon("{'job_id':'j','training_input':{'scale_tier':'CUSTOM','master_type':"
               "'n1-standard-4','master_config':{'image_uri':'i','container_args':['a']},"
               "'worker_count':2,'worker_type':'n1-standard-4','use_chief_in_tf_config':true}}",
               TY_SPEC_JSON);
    is_str(c1,
           "{\"jobId\":\"j\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":"
           "\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"i\",\"containerArgs\":"
           "[\"a\"]},\"workerType\":\"n1-standard-4\",\"useChiefInTfConfig\":true,"
           "\"workerCount\":\"2\"}}",
           "snake_case input gives the camelCase canonical form in schema order");
    bad("{'masterType':'n1-standard-4','master_type':'n1-standard-8'," IMG "}",
        "Field \"masterType\" at 'trainingInput' is given twice",
        "masterType + master_type");
    bad("{'masterConfig':{'imageUri':'a','image_uri':'b'}}",
        "Field \"imageUri\" at 'trainingInput.masterConfig' is given twice",
        "imageUri + image_uri");
    bad("{'jobId':'a','job_id':'b','trainingInput':{" IMG "}}",
        "Field \"jobId\" at 'Job'",
        "jobId + job_id");

    /* int64 as string or number; canonical output */
    c2 = canon("{'jobId':'j','labels':{'b':'2','a':'1'},'state':'RUNNING','createTime':'x',"
               "'attemptStatus':{'attempt':2},'stateReason':'why','transitions':[{}],"
               "'trainingInput':{'scheduling':{'priority':'7','maxRunningTime':'7200.000s',"
               "'maxWaitTime':'1.5s'},'evaluatorCount':'0','workerCount':3,'masterConfig':"
               "{'acceleratorConfig':{'count':2,'type':'NVIDIA_TESLA_T4'},'imageUri':'i'},"
               "'region':null}}",
               TY_SPEC_JSON);
    is_str(c2,
           "{\"jobId\":\"j\",\"labels\":{\"b\":\"2\",\"a\":\"1\"},\"trainingInput\":{"
           "\"masterConfig\":{\"imageUri\":\"i\",\"acceleratorConfig\":{\"count\":\"2\","
           "\"type\":\"NVIDIA_TESLA_T4\"}},\"workerCount\":\"3\",\"evaluatorCount\":\"0\","
           "\"scheduling\":{\"maxRunningTime\":\"7200s\",\"maxWaitTime\":\"1.5s\","
           "\"priority\":7}}}",
           "canonical: int64 as strings, int32 as numbers, schema order, durations normalised, "
           "output-only fields and nulls dropped");
    bad("{" IMG ",'scheduling':{'maxRunningTime':'1.0000001s'}}",
        "Invalid value at 'trainingInput.scheduling.maxRunningTime' "
        "(google.protobuf.Duration), \"1.0000001s\": finer than a microsecond",
        "a duration finer than a microsecond (it would change unseen)");
    bad("{" IMG ",'workerCount':'3x'}",
        "Invalid value at 'trainingInput.workerCount' "
        "(TYPE_INT64), \"3x\": expected an integer",
        "workerCount '3x'");
    bad("{" IMG ",'workerCount':' 3'}",
        "'trainingInput.workerCount' (TYPE_INT64)",
        "workerCount with a leading space");
    bad("{" IMG ",'workerCount':2.5}",
        "'trainingInput.workerCount' (TYPE_INT64), 2.5",
        "workerCount 2.5");
    bad("{" IMG ",'workerCount':'99999999999999999999'}",
        "(TYPE_INT64), \"9999999999999999"
        "9999\": out of range",
        "workerCount beyond int64");
    bad("{" IMG ",'workerCount':9.3e18}",
        "'trainingInput.workerCount' (TYPE_INT64), "
        "9.3e18: out of range",
        "workerCount 9.3e18 (a real beyond int64)");
    bad("{" IMG ",'workerCount':9223372036854775808.0}",
        "'trainingInput.workerCount' "
        "(TYPE_INT64), 9.223372036854776e18: out of range",
        "workerCount 2^63 as a real");
    bad("{" IMG ",'scheduling':{'priority':2147483648.0}}",
        "'trainingInput.scheduling.priority'"
        " (TYPE_INT32), 2147483648.0: out of range",
        "priority 2^31 as a real");
    bad("{" IMG ",'workerCount':true}",
        "'trainingInput.workerCount' (TYPE_INT64)",
        "workerCount true");
    c3 = canon("{" IMG ",'workerCount':4.0}", TY_SPEC_JSON);
    like(c3, "\"workerCount\":\"4\"", "workerCount 4.0 is the integer 4");

    /* enums and JSON types */
    bad("{'scaleTier':'basic'," IMG "}",
        "Invalid value at 'trainingInput.scaleTier' (TYPE_ENUM),"
        " \"basic\": expected one of BASIC, STANDARD_1",
        "a lowercase scaleTier");
    bad("{'scaleTier':0," IMG "}",
        "'trainingInput.scaleTier' (TYPE_ENUM)",
        "scaleTier as a number");
    bad("{'masterType':5," IMG "}",
        "'trainingInput.masterType' (TYPE_STRING), 5",
        "masterType as a number");
    bad("{" IMG ",'args':'--x'}", "'trainingInput.args' (TYPE_ARRAY)", "args as a string");
    bad("{" IMG ",'args':['--x',1]}",
        "Invalid value at 'trainingInput.args[1]' (TYPE_STRING)",
        "a number inside args");
    bad("{'masterConfig':'gcr.io/p/img'}",
        "'trainingInput.masterConfig' (ReplicaConfig)",
        "masterConfig as a string");
    bad("{" IMG ",'useChiefInTfConfig':'true'}",
        "'trainingInput.useChiefInTfConfig' (TYPE_BOOL)",
        "a quoted boolean in JSON");
    bad("{'jobId':'j','trainingInput':[]}",
        "'trainingInput' (TrainingInput)",
        "trainingInput as a list");
    bad("[1,2]", "a job document must be a mapping", "a JSON list");
    bad("{'jobId':'ab\\u0000c','trainingInput':{" IMG "}}",
        "'jobId' (TYPE_STRING)",
        "a NUL inside a string");

    /* Job vs bare TrainingInput */
    c4 = canon("{" IMG ",'region':'us-central1'}", TY_SPEC_JSON);
    is_str(c4,
           "{\"trainingInput\":{\"masterConfig\":{\"imageUri\":\"gcr.io/p/img:1\"},"
           "\"region\":\"us-central1\"}}",
           "a bare TrainingInput is wrapped as a Job");
    c5 = canon("{'jobId':'j'}", TY_SPEC_JSON);
    is_str(c5, "{\"jobId\":\"j\"}", "a Job without trainingInput parses");
    bad("{'jobId':'j'}", "trainingInput: required", "a Job without trainingInput");

    /* An edited canonical tree is normalised and checked again. */
    {
        _cleanup_json_ json_t *doc = NULL;
        _cleanup_free_ char *t = dq("{'jobId':'j','trainingInput':{" CUSTOM "}}");
        struct ty_job *job = NULL;
        ok(ty_spec_parse(t, strlen(t), TY_SPEC_JSON, &doc, &err) == 0, "edit: parse");
        json_t *ti = json_object_get(doc, "trainingInput");
        json_object_set_new(ti, "workerCount", json_integer(2));
        ok(ty_job_from_json(doc, &job, &err) < 0, "edit: workerCount without workerType");
        like(err.msg, "trainingInput.workerType: required", "edit: message");
        json_object_set_new(ti, "workerType", json_string("n1-standard-4"));
        ok(ty_job_from_json(doc, &job, &err) == 0 && job, "edit: fixed");
        if (job)
            is_str(ty_json_str(job->training_input, "workerCount"),
                   "2",
                   "edit: canonical again (int64 as a string)");
        ty_job_free(job);
        json_object_set_new(ti, "useChiefInTfConfig", json_string("true"));
        job = NULL;
        ok(ty_job_from_json(doc, &job, &err) < 0 && !job,
           "edit: ty_job_from_json is strict (no YAML leniency)");
    }
}

static void test_text_formats(void)
{
    struct ty_job *job;
    json_t *doc = NULL;
    int r;

    /* the gcloud config.yaml form */
    job = good_fmt(TY_SPEC_YAML,
                   "# config.yaml\n"
                   "jobId: yaml_job\n"
                   "labels:\n  team: ml\n"
                   "trainingInput:\n"
                   "  scaleTier: CUSTOM\n"
                   "  masterType: n1-highcpu-16\n"
                   "  workerType: n1-highcpu-16\n"
                   "  parameterServerType: n1-highmem-8\n"
                   "  evaluatorType: n1-highcpu-16\n"
                   "  workerCount: 9\n"
                   "  parameterServerCount: '3'\n"
                   "  evaluatorCount: 1\n"
                   "  useChiefInTfConfig: true\n"
                   "  masterConfig:\n"
                   "    imageUri: \"gcr.io/p/img:1\"\n"
                   "  args: [--epochs, 5, \"--lr\", '0.1']\n"
                   "  scheduling:\n    maxRunningTime: 7200s\n    priority: 10\n",
                   "a config.yaml");
    if (job) {
        is_str(job->job_id, "yaml_job", "yaml: jobId");
        is_int(job->roles[TY_ROLE_WORKER].count, 9, "yaml: workerCount as a plain scalar");
        is_int(job->roles[TY_ROLE_PS].count, 3, "yaml: quoted parameterServerCount");
        ok(job->use_chief, "yaml: useChiefInTfConfig true");
        ok(job->args && job->args[1] && strcmp(job->args[1], "5") == 0 && job->args[3] &&
               strcmp(job->args[3], "0.1") == 0,
           "yaml: numbers in args stay their text");
        is_int(json_integer_value(
                   json_object_get(json_object_get(job->training_input, "scheduling"), "priority")),
               10,
               "yaml: priority as a number in the canonical form");
        is_str(ty_json_str(job->training_input, "workerCount"),
               "9",
               "yaml: workerCount as a string in the canonical form");
    }
    ty_job_free(job);

    job = good_fmt(TY_SPEC_YAML,
                   "scaleTier: CUSTOM\nmasterType: n1-standard-4\nworkerType: n1-standard-4\n"
                   "workerCount: 2.0\nmasterConfig: {imageUri: i}\n",
                   "yaml: workerCount 2.0, a whole number, as JSON's 2.0");
    if (job)
        is_int(job->roles[TY_ROLE_WORKER].count, 2, "yaml: workerCount 2.0 is 2");
    ty_job_free(job);
    bad_fmt(TY_SPEC_YAML,
            "scaleTier: CUSTOM\nmasterType: n1-standard-4\nworkerType: n1-standard-4\n"
            "workerCount: 1.5\nmasterConfig: {imageUri: i}\n",
            "\"1.5\": expected an integer",
            "yaml: workerCount 1.5");
    bad_fmt(TY_SPEC_YAML,
            "scaleTier: CUSTOM\nmasterType: n1-standard-4\nworkerType: n1-standard-4\n"
            "workerCount: 010\nmasterConfig: {imageUri: i}\n",
            "Invalid value at 'trainingInput.workerCount', \"010\": a leading 0 is ambiguous: YAML "
            "1.1 (gcloud's) reads an unquoted 010 as octal 8, YAML 1.2 as 10",
            "yaml: workerCount 010 (8 to gcloud, 10 to YAML 1.2)");
    job = good_fmt(TY_SPEC_YAML,
                   "scaleTier: CUSTOM\nmasterType: n1-standard-4\nworkerType: n1-standard-4\n"
                   "workerCount: 07\nmasterConfig: {imageUri: i}\n",
                   "yaml: workerCount 07, the same in YAML 1.1 and 1.2");
    if (job)
        is_int(job->roles[TY_ROLE_WORKER].count, 7, "yaml: 07 is 7");
    ty_job_free(job);
    bad_fmt(TY_SPEC_YAML,
            "masterConfig: {imageUri: i}\nhyperparameters: {goal: MAXIMIZE, maxTrials: 2, params: "
            "[{parameterName: lr, type: DOUBLE, minValue: 010, maxValue: 20}]}\n",
            "'trainingInput.hyperparameters.params[0].minValue', \"010\": a leading 0",
            "yaml: a double minValue 010 (8 to gcloud)");
    bad_fmt(TY_SPEC_YAML,
            "masterConfig: {imageUri: i}\nhyperparameters: {goal: MAXIMIZE, maxTrials: 2, params: "
            "[{parameterName: n, type: DISCRETE, discreteValues: [1, -0100]}]}\n",
            "params[0].discreteValues[1]', \"-0100\": a leading 0 is ambiguous",
            "yaml: a discrete value -0100");
    /* Quoted, 010 is text in YAML 1.1 and 1.2 alike: a number field reads it as proto3 JSON
     * does (decimal), and a text field keeps it; snake_case keys are followed too. */
    job = good_fmt(TY_SPEC_YAML,
                   "scale_tier: CUSTOM\nmaster_type: n1-standard-4\nworker_type: n1-standard-4\n"
                   "worker_count: \"010\"\nmaster_config: {image_uri: i, container_args: [010]}\n",
                   "yaml: a quoted \"010\" (text in both YAMLs) and a plain 010 of a text field");
    if (job) {
        is_int(job->roles[TY_ROLE_WORKER].count, 10, "yaml: \"010\" is 10");
        is_str(job->roles[TY_ROLE_MASTER].container_args
                   ? job->roles[TY_ROLE_MASTER].container_args[0]
                   : "(none)",
               "010",
               "yaml: a plain 010 of a text field keeps its text");
    }
    ty_job_free(job);
    bad_fmt(TY_SPEC_YAML,
            "scale_tier: CUSTOM\nmaster_type: n1-standard-4\nworker_type: n1-standard-4\n"
            "worker_count: 010\nmaster_config: {image_uri: i}\n",
            "Invalid value at 'trainingInput.workerCount', \"010\": a leading 0",
            "yaml: a plain 010 under a snake_case key, named by its field's name");
    bad_fmt(TY_SPEC_YAML,
            "labels: {v: &w 010}\ntrainingInput: {scaleTier: CUSTOM, masterType: n1-standard-4, "
            "workerType: n1-standard-4, workerCount: *w, masterConfig: {imageUri: i}}\n",
            "'trainingInput.workerCount', \"010\"",
            "yaml: a plain 010 through an alias");
    job = good("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'010'}",
               "JSON: the int64 string '010' (proto3 JSON: decimal)");
    if (job)
        is_int(job->roles[TY_ROLE_WORKER].count, 10, "JSON: '010' is 10");
    ty_job_free(job);
    bad("{" CUSTOM ",'workerType':'n1-standard-4','workerCount':'2.0'}",
        "expected an integer",
        "JSON: the string '2.0' for an int64 is not an integer");

    job = good_fmt(TY_SPEC_YAML,
                   "masterConfig: {imageUri: i}\nuseChiefInTfConfig: yes\n"
                   "region: 'on'\nenableWebAccess: 'false'\n",
                   "yaml booleans and quoting");
    if (job) {
        ok(job->use_chief, "yaml: 'yes' is true");
        is_str(job->region, "on", "yaml: quoted 'on' stays a string");
        ok(json_is_false(json_object_get(job->training_input, "enableWebAccess")),
           "yaml: the quoted string 'false' is accepted for a boolean");
    }
    ty_job_free(job);
    job = good_fmt(TY_SPEC_YAML,
                   "masterConfig: {imageUri: i}\nargs: [--verbose, yes, on, 2.10]\n",
                   "yaml: args keep their text");
    if (job)
        is_str(job->args[1], "yes", "yaml: a plain 'yes' in args stays 'yes'");
    if (job)
        is_str(job->args[3], "2.10", "yaml: a plain 2.10 in args stays '2.10'");
    ty_job_free(job);
    bad_fmt(TY_SPEC_YAML,
            "masterConfig: {imageUri: i}\nuseChiefInTfConfig: maybe\n",
            "'trainingInput.useChiefInTfConfig' (TYPE_BOOL)",
            "yaml: useChiefInTfConfig: maybe");
    bad_fmt(TY_SPEC_YAML,
            "masterConfig: {imageUri: i}\nworkerCount: two\n",
            "'trainingInput.workerCount' (TYPE_INT64)",
            "yaml: workerCount: two");

    /* YAML errors carry line numbers. */
    bad_fmt(TY_SPEC_YAML,
            "trainingInput:\n  scaleTier: CUSTOM\n  args: [a, b\n",
            "invalid YAML at line 4",
            "yaml: an unclosed flow sequence");
    bad_fmt(TY_SPEC_YAML,
            "trainingInput:\n  region: a\n  region: b\n",
            "YAML: line 3: duplicate key 'region'",
            "yaml: a duplicate key");
    bad_fmt(TY_SPEC_YAML,
            "trainingInput:\n  ? [a]\n  : b\n",
            "mapping keys must be scalars",
            "yaml: a sequence as a key");
    bad_fmt(TY_SPEC_YAML, "- a\n- b\n", "a job document must be a mapping", "yaml: a list");
    bad_fmt(TY_SPEC_YAML,
            "masterConfig: {imageUri: a}\n---\nregion: b\n",
            "invalid YAML at line 3: a second document",
            "yaml: two documents");
    ty_job_free(good_fmt(TY_SPEC_YAML,
                         "---\nmasterConfig: {imageUri: a}\n---\n",
                         "yaml: one document between '---' markers"));
    bad_fmt(TY_SPEC_YAML,
            "trainingInput:\n\tregion: x\n",
            "a tab character at line 2 column 1: YAML indents with spaces",
            "yaml: a tab for indentation");
    bad_fmt(TY_SPEC_JSON,
            "{'jobId':'j',\n'trainingInput':{,}}",
            "invalid JSON at line 2",
            "json: a syntax error");
    bad_fmt(TY_SPEC_JSON, "{'jobId':'j','jobId':'k'}", "duplicate", "json: a duplicate key");
    bad_fmt(TY_SPEC_JSON, "{'jobId':'j'} x", "invalid JSON", "json: trailing garbage");

    /* The alias bomb stops at the node limit; deep nesting at the depth limit. */
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
    r = ty_spec_parse(bomb, strlen(bomb), TY_SPEC_YAML, &doc, &err);
    is_int(r, -E2BIG, "yaml: an alias bomb is refused");
    like(err.msg, "more than 100000 nodes", "yaml: alias bomb message");
    {
        /* Few nodes, but a 100 KB scalar repeated 1000 times: 100 MB of text. */
        _cleanup_free_ char *x = xmalloc(100001);
        memset(x, 'x', 100000);
        x[100000] = '\0';
        _cleanup_free_ char *t = xasprintf("a: &a %s\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, "
                                           "*a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                                           "d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
                                           x);
        r = ty_spec_parse(t, strlen(t), TY_SPEC_YAML, &doc, &err);
        is_int(r, -E2BIG, "yaml: a long scalar aliased 1000 times is refused");
        like(err.msg, "bytes of text (after expanding aliases)", "yaml: text bomb message");
    }
    {
        char deep[300];
        size_t n = 0;
        for (int i = 0; i < 70; i++)
            deep[n++] = '[';
        deep[n] = '\0';
        r = ty_spec_parse(deep, n, TY_SPEC_YAML, &doc, &err);
        ok(r < 0, "yaml: 70 nested sequences are refused");
        memset(deep, ' ', 70);
        for (int i = 0; i < 70; i++)
            deep[i] = '[', deep[140 - 1 - i] = ']';
        deep[140] = '\0';
        r = ty_spec_parse(deep, 140, TY_SPEC_YAML, &doc, &err);
        like(r < 0 ? err.msg : "", "nesting deeper than 64", "yaml: depth limit message");
    }
    {
        size_t big = TY_JSON_MAX_BYTES + 1;
        char *text = xmalloc(big);
        memset(text, ' ', big);
        text[0] = '{';
        is_int(ty_spec_parse(text, big, TY_SPEC_JSON, &doc, &err),
               -E2BIG,
               "json: a document over 4 MiB");
        is_int(ty_spec_parse(text, big, TY_SPEC_YAML, &doc, &err),
               -E2BIG,
               "yaml: a document over 4 MiB");
        free(text);
    }

    /* AUTO: '{' (after blanks) means JSON, anything else YAML; empty YAML is an error. */
    good_free("  \n{'masterConfig':{'imageUri':'i'}}", "auto: JSON after blank lines");
    ty_job_free(good_fmt(TY_SPEC_AUTO, "masterConfig:\n  imageUri: i\n", "auto: YAML"));
    ty_job_free(good_fmt(TY_SPEC_YAML,
                         "{\"masterConfig\": {\"imageUri\": \"i\"}}",
                         "yaml: a JSON document read as YAML"));
    _cleanup_free_ char *c = canon("", TY_SPEC_YAML);
    is_str(c, "(error) the document is empty", "yaml: an empty document is refused as such");
}

int main(void)
{
    test_schema();
    test_text_formats();
    return done_testing();
}
