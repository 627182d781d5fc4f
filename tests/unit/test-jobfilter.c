/* SPDX-License-Identifier: Apache-2.0
 * test-jobfilter.c: the list filter (jobfilter.c): operators and value types, precedence,
 * negation, quoting, missing fields, case rules, the store's hints, the error messages of
 * malformed filters (with their positions). What a match costs is measured by
 * bench/jobfilter, not asserted here.
 *
 * JSON documents are written with ' for " (dq() swaps them) to keep them readable. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "jobfilter.h"
#include "json.h"
#include "macro.h"
#include "tap.h"

static struct ty_error err;
static json_t *job1, *job2;
static int hint_violations;

static char *dq(const char *s)
{
    char *t = xstrdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    return t;
}

static json_t *load(const char *text)
{
    _cleanup_free_ char *t = dq(text);
    json_t *j = NULL;
    if (ty_json_parse(t, strlen(t), &j, &err) < 0)
        diag("fixture: %s", err.msg);
    return j;
}

/* Does @filter match @job: 1, 0, or -1 when it does not parse. */
static int m(const char *filter, const json_t *job)
{
    struct ty_filter *f = NULL;
    int r;

    ty_error_clear(&err);
    if (ty_filter_parse(filter, &f, &err) < 0)
        return -1;
    r = ty_filter_match(f, job);
    if (r) {
        /* a hint never excludes a job the filter matches */
        const char *st = ty_filter_state_hint(f), *pre = ty_filter_id_prefix_hint(f);
        const char *id = ty_json_str(job, "jobId"), *state = ty_json_str(job, "state");
        if ((st && (!state || strcmp(st, state) != 0)) ||
            (pre && (!id || strncasecmp(id, pre, strlen(pre)) != 0))) {
            diag("hint of '%s' excludes a job it matches", filter);
            hint_violations++;
        }
    }
    ty_filter_free(f);
    return r;
}

struct mcase {
    const char *filter;
    int job1, job2;
};

static void check_cases(const char *what, const struct mcase *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int a = m(c[i].filter, job1), b = m(c[i].filter, job2);
        if (!ok(a == c[i].job1 && b == c[i].job2, "%s: %s", what, c[i].filter))
            diag("got %d %d, want %d %d%s%s",
                 a,
                 b,
                 c[i].job1,
                 c[i].job2,
                 a < 0 ? ": " : "",
                 a < 0 ? err.msg : "");
    }
}

static void test_operators(void)
{
    static const struct mcase c[] = {
        {"jobId:census_1", 1, 0},
        {"jobId:CENSUS_1", 1, 0},
        {"jobId=census_1", 1, 0},
        /* '=' and '!=' compare strings ignoring case, as gcloud's filters do */
        {"jobId=CENSUS_1", 1, 0},
        {"jobId!=census_1", 0, 1},
        {"jobId!=Census_1", 0, 1},
        /* ':' as gcloud's: the value occurs in the string; one '*' anchors its two sides */
        {"jobId:census", 1, 0},
        {"jobId:SUS_", 1, 0},
        {"jobId:n_", 0, 1},
        {"jobId:_", 1, 1},
        {"jobId:*_7", 0, 1},
        {"jobId:*SUS", 0, 0},
        {"jobId:c*1", 1, 0},
        {"jobId:C*S_1", 1, 0},
        {"jobId:census_1*1", 0, 0},
        {"jobId=census", 0, 0},
        {"jobId!=census", 1, 1},
        {"jobId:census*", 1, 0},
        {"jobId:CEN*", 1, 0},
        {"jobId=cen*", 1, 0},
        {"jobId=CEN*", 1, 0},
        {"jobId!=cen*", 0, 1},
        {"jobId!=CEN*", 0, 1},
        {"jobId:\"census*\"", 1, 0},
        /* single quotes, as gcloud's filters take them */
        {"jobId:'census*'", 1, 0},
        {"labels.team='vision'", 1, 0},
        {"labels.q='say \"hi\" \\\\ ok'", 1, 0},
        {"labels.q='say \\\"hi\\\" \\\\ ok'", 1, 0},
        {"labels.q='say \"hi\\' \\\\ ok'", 0, 0},
        {"state='FAILED'", 1, 0},
        {"jobId~'^cen'", 1, 0},
        {"'vision'", 1, 0},
        /* gcloud's list of values: any of them */
        {"state:(FAILED SUCCEEDED)", 1, 1},
        {"state:(failed OR cancelled)", 1, 0},
        {"state=(CANCELLED)", 0, 0},
        {"jobId:(rnn* 'nothing')", 0, 1},
        {"NOT state:(FAILED SUCCEEDED)", 0, 0},
        {"labels.team:(vision nlp) AND jobId:census*", 1, 0},
        {"jobId:*", 1, 1},
        {"jobId=*", 1, 1},
        {"jobId<d", 1, 0},
        {"jobId>=rnn_7", 0, 1},
        {"jobId > census_1", 0, 1},
        {"jobId <= census_1", 1, 0},
        {"state:failed", 1, 0},
        {"state:Failed", 1, 0},
        /* an enum's value matches ignoring case, as gcloud's '=' does */
        {"state=failed", 1, 0},
        {"state=FAILED", 1, 0},
        {"state!=failed", 0, 1},
        {"state=fail*", 1, 0},
        {"trainingInput.scaleTier=custom", 1, 0},
        {"trainingInput.scaleTier:basic", 0, 1},
        {"state!=FAILED", 0, 1},
        {"state : FAILED", 1, 0},
        {"etag=\"AAAAAAAAAAE=\"", 1, 0},
        {"trainingInput.region=us-central1", 1, 0},
        {"trainingInput.masterConfig.imageUri=gcr.io/p/img:1", 1, 0},
    };
    check_cases("operators", c, TY_ARRAY_SIZE(c));
}

static void test_numbers_and_times(void)
{
    static const struct mcase c[] = {
        /* int64 strings compare as numbers: "4" < "10" although '4' > '1' */
        {"trainingInput.workerCount=4", 1, 0},
        {"trainingInput.workerCount:4", 1, 0},
        {"trainingInput.workerCount=4.0", 1, 0},
        {"trainingInput.workerCount>3", 1, 0},
        {"trainingInput.workerCount>=4", 1, 0},
        {"trainingInput.workerCount<4", 0, 0},
        {"trainingInput.workerCount<=4", 1, 0},
        {"trainingInput.workerCount<10", 1, 0},
        {"trainingInput.workerCount>10", 0, 0},
        {"trainingInput.workerCount!=4", 0, 1},
        {"trainingInput.workerCount>-1", 1, 0},
        {"trainingOutput.consumedMLUnits>1", 1, 0},
        {"trainingOutput.consumedMLUnits<1.5", 1, 0},
        {"trainingOutput.consumedMLUnits=1.25", 1, 0},
        {"trainingOutput.consumedMLUnits:1.25", 1, 0},
        {"trainingOutput.consumedMLUnits=abc", 0, 0},
        {"trainingOutput.completedTrialCount>=3", 1, 0},
        {"trainingOutput.isHyperparameterTuningJob=true", 1, 0},
        {"trainingOutput.isHyperparameterTuningJob:TRUE", 1, 0},
        {"trainingOutput.isHyperparameterTuningJob=false", 0, 0},
        {"createTime>\"2026-11-30T00:00:00Z\"", 1, 1},
        {"createTime<2026-12-01", 1, 0},
        {"createTime>=2026-11-30T09:00:00Z", 1, 1},
        {"createTime>2026-11-30T09:00:00Z", 0, 1},
        {"createTime=2026-11-30T09:00:00Z", 1, 0},
        {"createTime=2026-11-30T10:00:00+01:00", 1, 0},
        {"createTime>2026-11-30T10:00:00+02:00", 1, 1},
        {"createTime<2026-11-30t10:00:00.000000001z", 1, 0},
        {"createTime:2026-11-30", 1, 0},
        {"createTime:2026-12-01", 0, 1},
        {"createTime:2026-11-30T09:00:00Z", 1, 0},
        {"createTime!=2026-11-30T09:00:00Z", 0, 1},
        /* gcloud's relative times: an ISO 8601 duration from now (the fixtures are older) */
        {"createTime<-P1D", 1, 1},
        {"createTime>-P1D", 0, 0},
        {"createTime>-PT1H", 0, 0},
        {"createTime>-P900Y", 1, 1},
        {"createTime<P1W", 1, 1},
        {"createTime>P1W", 0, 0},
        {"startTime>2026-11-30T09:01:00.4Z", 1, 0},
        {"startTime<2026-11-30T09:01:00.500001Z", 1, 0},
        {"startTime:*", 1, 0},
        {"-startTime:*", 0, 1},
        {"trainingInput.scheduling.maxRunningTime>3600s", 1, 0},
        {"trainingInput.scheduling.maxRunningTime<=3600s", 0, 0},
        {"trainingInput.scheduling.maxRunningTime=7200s", 1, 0},
        {"labels.runTime=fast", 1, 0}, /* a label is text, whatever its name */
        {"labels.runTime:fa*", 1, 0},
    };
    check_cases("numbers and times", c, TY_ARRAY_SIZE(c));
}

static void test_fields(void)
{
    static const struct mcase c[] = {
        /* a missing field: false, and its negation true */
        {"labels.nope=x", 0, 0},
        {"labels.nope!=x", 1, 1},
        {"NOT labels.nope:x", 1, 1},
        /* a key the Job does not have is an error, not an empty list */
        {"nosuch.deep.path:*", -1, -1},
        {"-nosuch:*", -1, -1},
        {"jobId.sub:x", -1, -1},
        {"createTime.x>2026-01-01", -1, -1},
        {"trainingOutput.trials.state:RUNNING", 0, 0},
        {"trainingOutput.trials.hyperparameters.lr:*", 0, 0},
        {"attemptStatus.replicaRestarts.master-replica-0>0", 0, 0},
        /* labels: has key, values */
        {"labels:team", 1, 1},
        {"labels:TEAM", 1, 1},
        {"labels:owner", 1, 0},
        {"labels:own*", 1, 0},
        {"-labels:owner", 0, 1},
        {"labels=team", 0, 0},
        {"labels.team=vision", 1, 0},
        {"labels.team:VISION", 1, 0},
        {"labels.team=VISION", 1, 0},
        {"labels.team=Vision", 1, 0},
        {"labels.team!=VISION", 0, 1},
        {"labels.team=NLP", 0, 1},
        {"labels:*", 1, 1},
        {"labels.my-key:a_b", 1, 0},
        {"labels.owner=\"ada lovelace\"", 1, 0},
        {"labels.owner:\"ADA LOVELACE\"", 1, 0},
        {"labels.owner:ada", 1, 0},
        {"labels.owner=ada", 0, 0},
        {"labels.q=\"say \\\"hi\\\" \\\\ ok\"", 1, 0},
        {"errorMessage:\"The replica master 0 exited with a non-zero status of 1.\"", 1, 0},
        {"errorMessage:*", 1, 0},
        /* arrays: any element */
        {"trainingInput.args:--epochs", 1, 0},
        {"trainingInput.args=\"--EPOCHS\"", 1, 0},
        {"trainingInput.args=10", 1, 0},
        {"trainingInput.args>5", 1, 0},
        {"trainingInput.args:*", 1, 0},
        {"trainingInput.hyperparameters.params.parameterName=lr", 1, 0},
        {"trainingInput.hyperparameters.params.maxValue>0.5", 1, 0},
        /* bare values: id, state or a label value contains it */
        {"census", 1, 0},
        {"CENSUS", 1, 0},
        {"VISION", 1, 0},
        {"nlp", 0, 1},
        {"\"ada love\"", 1, 0},
        {"succeeded", 0, 1},
        {"cens*", 1, 0},
        {"*", 1, 1},
        {"nothing_like_it", 0, 0},
        {"", 1, 1},
        {"   ", 1, 1},
    };
    check_cases("fields", c, TY_ARRAY_SIZE(c));
    ok(m(NULL, job1) == 1, "fields: NULL filter matches");
}

static void test_regex(void)
{
    static const struct mcase c[] = {
        /* '~': a POSIX extended regular expression occurs in the value (unanchored) */
        {"jobId~^census", 1, 0},
        {"jobId~^c", 1, 0},
        {"jobId~_[0-9]$", 1, 1},
        {"jobId~\"^(census|rnn)_[17]$\"", 1, 1},
        {"jobId~sus", 1, 0},
        {"jobId ~ ^rnn", 0, 1},
        {"jobId~.", 1, 1},
        {"jobId~^[a-z]{1,63}_[0-9]+$", 1, 1},
        {"jobId~\"(a|b|c|(d*e?)+){45}\"", 1, 1},
        {"jobId~(((((((((((((((((((((((((((((((([cr]))))))))))))))))))))))))))))))))", 1, 1},
        /* patterns that took glibc's regcomp minutes: linear here */
        {"jobId~^:pr+++++()+++++++++++++++++++++++++", 0, 0},
        {"jobId~()+++++++++++++++++++++++++++++++++++++++1$", 1, 0},
        {"jobId~(\\b|\\<|\\>|^|$)*(\\b|\\<|\\>|^|$)*(\\b|\\<|\\>|^|$)*", 1, 1},
        {"jobId~((((((((((a+)+)+)+)+)+)+)+)+)+)", 0, 0},
        {"jobId~\"^(c|e|n|s|u|(s*u?)+){40}_1\"", 1, 0},
        {"jobId~[]a[:digit:][.-.][=_=]]7$", 0, 1},
        {"jobId~_\\(?1", 1, 0},
        {"jobId~[(]|[)]|x{,3}1$", 1, 0},
        /* case-sensitive, as gcloud's */
        {"jobId~^CENSUS", 0, 0},
        {"jobId~[Cc]ENSUS|^census", 1, 0},
        /* '!~': the pattern occurs in no value; a missing field does not match it */
        {"jobId!~^census", 0, 1},
        {"jobId !~ ^rnn", 1, 0},
        {"labels.owner!~ada", 0, 1},
        {"labels.owner~^ada ", 1, 0},
        {"NOT jobId~^census", 0, 1},
        {"-jobId~^census", 0, 1},
        /* a '*' is the pattern's, not a prefix */
        {"jobId~census_1*", 1, 0},
        {"jobId~^c.*1$", 1, 0},
        /* enum keys, numbers, times, booleans, arrays (any element) */
        {"state~^FAIL", 1, 0},
        {"state~ED$", 1, 1},
        {"state!~^SUCC", 1, 0},
        /* an unquoted pattern holds balanced parentheses; a ')' after them closes a group */
        {"trainingInput.scaleTier~^(BASIC|CUSTOM)$", 1, 1},
        {"(jobId~^(census|rnn)_1$)", 1, 0},
        {"(state:FAILED OR jobId~(rnn)) labels:team", 1, 1},
        {"jobId~a=b|^r[<>]?n!?n", 0, 1},
        {"trainingInput.workerCount~^4$", 1, 0},
        {"trainingOutput.consumedMLUnits~^1\\.25", 1, 0},
        {"trainingOutput.isHyperparameterTuningJob~^true$", 1, 0},
        {"createTime~^2026-12", 0, 1},
        {"trainingInput.args~^--ep", 1, 0},
        {"trainingInput.args~^1[0-9]$", 1, 0},
        {"trainingInput.hyperparameters.params.parameterName~^l", 1, 0},
        /* a label value may hold ':' and '~' unquoted */
        {"labels.my-key~a_b", 1, 0},
        {"jobId~^rnn AND labels.team~^n", 0, 1},
        {"(jobId~^census OR jobId~^rnn) state~ED$", 1, 1},
    };
    check_cases("regex", c, TY_ARRAY_SIZE(c));
}

static void test_logic(void)
{
    static const struct mcase c[] = {
        /* OR binds tighter than AND: (FAILED OR x) AND nlp, not FAILED OR (x AND nlp) */
        {"state:FAILED OR jobId:x AND labels.team:nlp", 0, 0},
        {"labels.team:nlp AND state:FAILED OR jobId:x", 0, 0},
        {"state:FAILED OR jobId:x AND labels.team:vision", 1, 0},
        /* NOT binds tighter than OR: (NOT FAILED) OR team, not NOT (FAILED OR team) */
        {"NOT state:FAILED OR labels:team", 1, 1},
        {"-state:FAILED OR labels:owner", 1, 1},
        {"NOT (state:FAILED OR labels:team)", 0, 0},
        /* juxtaposition is AND */
        {"state:FAILED labels.team:vision", 1, 0},
        {"state:FAILED labels.team:nlp", 0, 0},
        {"labels.team:nlp state:FAILED OR state:SUCCEEDED", 0, 1},
        {"state:FAILED AND labels.team:vision", 1, 0},
        {"state:FAILED AND NOT labels.team:vision", 0, 0},
        {"state:FAILED OR NOT labels:owner", 1, 1},
        /* parentheses */
        {"(state:FAILED OR state:CANCELLED) AND -labels:owner", 0, 0},
        {"(state:SUCCEEDED OR state:CANCELLED) AND -labels:owner", 0, 1},
        {"(state:FAILED OR state:SUCCEEDED) (labels.team:nlp)", 0, 1},
        {"((((jobId:census*))))", 1, 0},
        {"(jobId:census*)(state:FAILED)", 1, 0},
        {"( jobId:census* OR (labels.team:nlp AND state:SUCCEEDED) )", 1, 1},
        {"NOT(state:FAILED)", 0, 1},
        /* '-' and NOT, repeated */
        {"-state:FAILED", 0, 1},
        {"--state:FAILED", 1, 0},
        {"- state:FAILED", 0, 1},
        {"NOT NOT state:FAILED", 1, 0},
        {"NOT -state:FAILED", 1, 0},
        {"-(state:FAILED)", 0, 1},
        /* keywords are upper case only: lower case are bare values */
        {"state:FAILED and jobId:census*", 0, 0},
        {"state:FAILED or state:SUCCEEDED", 0, 0},
        {"state:FAILED AND jobId:census*", 1, 0},
        {"NOTE", 0, 0},
        {"ORDER", 0, 0},
        {"jobId:\"AND\"", 0, 0},
    };
    check_cases("logic", c, TY_ARRAY_SIZE(c));
}

struct hcase {
    const char *filter, *state, *prefix;
};

static void test_hints(void)
{
    static const struct hcase c[] = {
        {"state:failed", "FAILED", NULL},
        {"state=FAILED", "FAILED", NULL},
        {"state:queued", "QUEUED", NULL},
        {"state:STATE_UNSPECIFIED", "STATE_UNSPECIFIED", NULL},
        {"state=failed", "FAILED", NULL},
        {"jobId=census* AND state:RUNNING", "RUNNING", "census"},
        {"jobId=census* state:RUNNING", "RUNNING", "census"},
        /* the store compares the prefix ignoring case, as ':' and '=' do */
        {"jobId:census* state:RUNNING", "RUNNING", "census"},
        {"jobId:123_* state:RUNNING", "RUNNING", "123_"},
        {"labels:x jobId=Census* (state:CANCELLING)", "CANCELLING", "Census"},
        {"(state:FAILED AND jobId=x*) AND labels:y", "FAILED", "x"},
        {"state:FAILED OR state:RUNNING", NULL, NULL},
        {"state:FAILED OR jobId:x*", NULL, NULL},
        {"(state:FAILED OR jobId:x*) AND labels:y", NULL, NULL},
        {"NOT state:FAILED", NULL, NULL},
        {"-jobId:census*", NULL, NULL},
        {"jobId:Census*", NULL, "Census"},
        {"-state:FAILED jobId=a*", NULL, "a"},
        {"state!=FAILED", NULL, NULL},
        {"jobId!=x*", NULL, NULL},
        {"jobId:census", NULL, NULL},
        {"jobId:*", NULL, NULL},
        {"jobId:ab*c", NULL, NULL},
        {"jobId=census*", NULL, "census"},
        {"jobId>census*", NULL, NULL},
        {"jobId~^census state:FAILED", "FAILED", NULL},
        {"state~^FAILED$", NULL, NULL},
        {"state:FAIL*", NULL, NULL},
        {"state<FAILED", NULL, NULL},
        {"labels.state:FAILED", NULL, NULL},
        {"FAILED", NULL, NULL},
        {"", NULL, NULL},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(c); i++) {
        struct ty_filter *f = NULL;
        if (!ok(ty_filter_parse(c[i].filter, &f, &err) == 0, "hints: '%s' parses", c[i].filter)) {
            diag("%s", err.msg);
            continue;
        }
        is_str(ty_filter_state_hint(f), c[i].state, "hints: '%s' state", c[i].filter);
        is_str(ty_filter_id_prefix_hint(f), c[i].prefix, "hints: '%s' id prefix", c[i].filter);
        ty_filter_free(f);
    }
    is_int(hint_violations, 0, "hints: agree with every match of the tables above");
}

struct ecase {
    const char *filter, *needle;
};

static void test_errors(void)
{
    static const struct ecase c[] = {
        {"state:", "expected a value after 'state:' at position 7"},
        {"state: ", "expected a value after 'state:' at position 8"},
        {"jobId<", "expected a value after 'jobId<' at position 7"},
        {"state:)", "expected a value after 'state:' at position 7"},
        {"state:AND", "expected a value after 'state:' (quote a keyword"},
        {"state:FAILED AND", "expected a restriction after 'AND', found the end at position 17"},
        {"AND state:FAILED", "expected a restriction, found 'AND' at position 1"},
        {"state:FAILED OR", "expected a restriction after 'OR', found the end at position 16"},
        {"a OR OR b", "expected a restriction after 'OR', found 'OR' at position 6"},
        {"a AND OR b", "expected a restriction after 'AND', found 'OR' at position 7"},
        {"(state:FAILED",
         "expected ')' to close the '(' at position 1, found the end at position 14"},
        {"state:FAILED)", "unexpected ')' (no '(' to close) at position 13"},
        {"()", "expected a restriction, found ')' at position 2"},
        {"jobId:\"abc", "unterminated string (no closing '\"') starting at position 7"},
        {"jobId:\"a\\nb\"",
         "unknown escape in a string (only \\\", \\' and \\\\ are allowed) at position 9"},
        {"jobId:'abc", "unterminated string (no closing ''') starting at position 7"},
        {"state:(FAILED", "unterminated list of values (no closing ')') starting at position 7"},
        {"state:()", "expected a value after 'state:' at position 8"},
        {"state:(FAILED AND SUCCEEDED)", "expected a value after 'state:'"},
        {"state:(FAILED BOGUS)", "state: 'BOGUS' is not"},
        {"state:(FAILED)x", "found 'x' at position 15"},
        {"state:(FAILED OR)", "expected a value after 'OR' in the list of values at position 17"},
        {"state:(FAILED OR OR RUNNING)", "expected a value after 'OR' in the list of values"},
        {"state:(OR FAILED)",
         "expected a value after 'state:' (quote a keyword to use it as a value) at position 8"},
        {"jobId!census", "expected '=' or '~' after '!' at position 7"},
        {"jobId=a=b", "expected a space, ')' or the end after the value, found '=' at position 8"},
        {"jobId:\"x\"y", "found 'y' at position 10"},
        {"census\"x\"", "found a quoted string at position 7"},
        {"\"jobId\"=x", "expected a field name before '=', not a quoted string at position 1"},
        {"labels..team:x", "'labels..team' is not a field name"},
        {".a:x", "at position 1"},
        {"a.:x", "is not a field name"},
        {"job*:x", "'job*' is not a field name"},
        {"createTime>yesterday", "'createTime' is a time: expected an RFC 3339 time"},
        {"createTime>2026-12-07T00:00:00",
         "'createTime' is a time: '2026-12-07T00:00:00' has no time zone: add Z (UTC)"},
        {"createTime>3600s", "'createTime' is a time"}, /* a duration never matched */
        {"createTime>-P1X", "or a duration from now such as -P1D (ISO 8601), not '-P1X'"},
        {"createTime>-PT", "not '-PT' at position 12"},
        {"createTime>-P5000Y", "'createTime': '-P5000Y' reaches beyond the years 0000-9999"},
        {"attemptStatus.replicas.exitTime<1s", "'attemptStatus.replicas.exitTime' is a time"},
        {"trainingInput.scheduling.maxRunningTime>2026-01-01",
         "'trainingInput.scheduling.maxRunningTime' is a duration: expected seconds such as "
         "3600s"},
        {"createTime>yesterday", "not 'yesterday' at position 12"},
        {"createTime:2026*", "not '2026*' at position 12"},
        {"NOT", "expected a restriction after 'NOT', found the end at position 4"},
        {"-", "expected a restriction after '-', found the end at position 2"},
        {"state:FAILED NOT", "after 'NOT', found the end at position 17"},
        /* keys and enum values */
        {"bogus:1",
         "unknown key 'bogus': the Job has no key 'bogus'; valid keys here: attemptStatus, "
         "createTime"},
        {"sate=FAILED", "unknown key 'sate': the Job has no key 'sate' (did you mean 'state'?)"},
        {"transitions.state=RUNNING",
         "'transitions' is shown by jobs.get (trainyard jobs describe) only: a list's jobs do "
         "not carry it at position 1"},
        {"trainingInput.masterConfg.imageUri:x",
         "trainingInput has no key 'masterConfg' (did you mean "
         "'trainingInput.masterConfig.imageUri'?); valid keys here: scaleTier, masterType"},
        {"training_input.scale_tier:BASIC", "(did you mean 'trainingInput.scale_tier'?)"},
        {"labels.team.x:y", "unknown key 'labels.team.x': labels.team is a value, with no keys"},
        {"state=FAILD",
         "state: 'FAILD' is not a value of this key; valid values (any case): STATE_UNSPECIFIED, "
         "QUEUED, PREPARING, RUNNING, SUCCEEDED, FAILED, CANCELLING, CANCELLED at position 7"},
        {"state:x*", "state: 'x*' is the start of no value of this key"},
        {"jobId:a*b*", "at most one '*' in a ':' pattern, not 'a*b*' at position 7"},
        {"jobId:*a*", "at most one '*' in a ':' pattern, not '*a*' at position 7"},
        {"trainingInput.scaleTier=huge", "valid values (any case): BASIC, STANDARD_1"},
        {"=x", "expected a restriction, found '=' at position 1"},
        {"state:FAILED !", "expected a restriction, found '!' at position 14"},
        {"state!", "expected '=' or '~' after '!' at position 7"},
        /* '~' and '!~': the pattern must compile, and match some value of an enum key */
        {"jobId~\"(census\"", "jobId~: '(census' is not a POSIX extended regular expression: "},
        {"jobId!~\"a{2\"", "jobId!~: 'a{2' is not a POSIX extended regular expression: "},
        {"jobId~\"[z-a]\" AND state:FAILED", "regular expression: Invalid range end at position 7"},
        {"jobId~", "expected a value after 'jobId~' at position 7"},
        {"jobId!~ ", "expected a value after 'jobId!~' at position 9"},
        {"state~fail",
         "state~: the pattern 'fail' matches no value of this key (patterns compare "
         "case-sensitively); valid values: STATE_UNSPECIFIED, QUEUED, PREPARING, RUNNING, "
         "SUCCEEDED, FAILED, CANCELLING, CANCELLED at position 7"},
        {"state!~^X", "state!~: the pattern '^X' matches no value of this key"},
        {"trainingInput.scaleTier~huge", "valid values: BASIC, STANDARD_1"},
        {"sate~^F", "unknown key 'sate': the Job has no key 'sate' (did you mean 'state'?)"},
        {"~x", "expected a restriction, found '~' at position 1"},
        {"jobId~^(census", "jobId~: '^(census' is not a POSIX extended regular expression: "},
        {"(jobId~census))", "unexpected ')' (no '(' to close) at position 15"},
        /* the compiled pattern, and so the time of a match, stay bounded (ere.h) */
        {"jobId~(a{40}){50} state:FAILED",
         "jobId~: '(a{40}){50}' is too large: with its repetitions written out it is over 1000 "
         "matching steps at position 7"},
        {"jobId~\"(a|b|c|(d*e?)+){67}\"", "is too large"},
        {"jobId~(a)\\1",
         "jobId~: '(a)\\1' uses a back-reference (\\1), which is not supported at position 7"},
        {"jobId~(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))",
         "nests parentheses deeper than 32"},
        {"fn(x)", "function calls are not supported) at position 3"},
        {"state:\x01", "unexpected control character 0x01 at position 7"},
        /* positions count characters, not bytes: 'ü' is two bytes */
        {"labels.\xc3\xbc:x AND", "found the end at position 15"},
        {"\xc3\xa9t\xc3\xa9 (", "found the end at position 6"},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(c); i++) {
        struct ty_filter *f = NULL;
        int r;
        ty_error_clear(&err);
        r = ty_filter_parse(c[i].filter, &f, &err);
        ok(r == -EINVAL && f == NULL && err.code == EINVAL, "errors: '%s' is refused", c[i].filter);
        like(err.msg, c[i].needle, "errors: '%s' message", c[i].filter);
        like(err.msg, "filter: ", "errors: '%s' message prefix", c[i].filter);
        ty_filter_free(f);
    }
}

static void test_limits(void)
{
    char text[TY_FILTER_MAX_LEN + 2];
    struct ty_filter *f = NULL;
    int depth;

    /* 32 levels of parentheses are fine, 33 are not */
    for (depth = 32; depth <= 33; depth++) {
        size_t n = 0;
        for (int i = 0; i < depth; i++)
            text[n++] = '(';
        memcpy(text + n, "state:FAILED", 12);
        n += 12;
        for (int i = 0; i < depth; i++)
            text[n++] = ')';
        text[n] = '\0';
        f = NULL;
        ty_error_clear(&err);
        if (depth == 32) {
            ok(ty_filter_parse(text, &f, &err) == 0 && ty_filter_match(f, job1),
               "limits: 32 nested parentheses");
        } else {
            is_int(ty_filter_parse(text, &f, &err), -EINVAL, "limits: 33 nested parentheses");
            like(err.msg, "parentheses nest deeper than 32 at position 33", "limits: message");
        }
        ty_filter_free(f);
    }

    /* many negations and a long flat conjunction are no problem */
    memset(text, '-', 1000);
    memcpy(text + 1000, "state:FAILED", sizeof("state:FAILED"));
    f = NULL;
    ok(ty_filter_parse(text, &f, &err) == 0 && ty_filter_match(f, job1), "limits: 1000 '-'");
    ty_filter_free(f);

    memset(text, 'a', TY_FILTER_MAX_LEN);
    text[TY_FILTER_MAX_LEN] = '\0';
    f = NULL;
    ok(ty_filter_parse(text, &f, &err) == 0, "limits: %d characters", TY_FILTER_MAX_LEN);
    ty_filter_free(f);
    text[TY_FILTER_MAX_LEN] = 'a';
    text[TY_FILTER_MAX_LEN + 1] = '\0';
    f = NULL;
    is_int(ty_filter_parse(text, &f, &err), -EINVAL, "limits: longer is refused");
    like(err.msg, "filter: longer than 2048 characters", "limits: length message");
}

/* The filter bench/jobfilter times (its cost is measured there, not asserted here). */
static void test_bench_filter(void)
{
    struct ty_filter *f = NULL;

    ok(ty_filter_parse("jobId:census* AND state:FAILED AND labels.team:vision AND "
                       "createTime>2026-01-01",
                       &f,
                       &err) == 0,
       "bench filter: parses");
    ok(ty_filter_match(f, job1), "bench filter: matches job1");
    ok(!ty_filter_match(f, job2), "bench filter: not job2");
    ty_filter_free(f);
}

/* The '~' patterns share one budget of matching steps: a costly pattern over long values is
 * stopped, said so, and matches nothing after (not even under '!~'); a cheap one is not. */
static void test_budget(void)
{
    char *msg = xcalloc(20001, 1);
    struct ty_filter *f = NULL;
    json_t *job;

    for (size_t i = 0; i < 20000; i++)
        msg[i] = i % 2 ? ' ' : 'a';
    job = json_pack("{s:s, s:s, s:s}", "jobId", "long_1", "state", "FAILED", "errorMessage", msg);
    free(msg);

    ok(ty_filter_parse("errorMessage~.{400}x", &f, &err) == 0, "budget: a costly pattern parses");
    ok(!ty_filter_match(f, job) && ty_filter_spent(f, &err) == 0,
       "budget: 20,000 characters x 400 threads fit the default budget");
    ty_filter_set_budget(f, 1000000);
    ok(!ty_filter_match(f, job), "budget: with a budget of 1,000,000 steps, no match");
    is_int(ty_filter_spent(f, &err), -E2BIG, "budget: spent");
    like(err.msg,
         "filter: its patterns ('~') took over 1000000 matching steps on the jobs read, and were "
         "stopped: narrow the filter with state: or a jobId: prefix",
         "budget: the message says what to do");
    ok(!ty_filter_match(f, job1), "budget: once spent, nothing matches");
    ty_filter_free(f);

    f = NULL;
    ok(ty_filter_parse("errorMessage!~.{400}x", &f, &err) == 0, "budget: '!~' parses");
    ty_filter_set_budget(f, 1000000);
    ok(!ty_filter_match(f, job) && ty_filter_spent(f, &err) == -E2BIG,
       "budget: a stopped '!~' does not turn into a match");
    ty_filter_free(f);

    f = NULL;
    ok(ty_filter_parse("errorMessage~^a a", &f, &err) == 0, "budget: an anchored pattern parses");
    ty_filter_set_budget(f, 1000);
    ok(ty_filter_match(f, job) && ty_filter_spent(f, &err) == 0,
       "budget: an anchored pattern reads a few characters of the 20,000");
    ty_filter_free(f);

    f = NULL;
    ok(ty_filter_parse("state:FAILED", &f, &err) == 0, "budget: no pattern");
    ty_filter_set_budget(f, 0);
    ok(ty_filter_match(f, job), "budget: restrictions without a pattern spend nothing");
    ty_filter_free(f);
    json_decref(job);
}

int main(void)
{
    job1 = load("{'jobId':'census_1','trainingInput':{'scaleTier':'CUSTOM',"
                "'masterType':'n1-standard-4','workerCount':'4','args':['--epochs','10'],"
                "'region':'us-central1','masterConfig':{'imageUri':'gcr.io/p/img:1'},"
                "'scheduling':{'maxRunningTime':'7200s'},"
                "'hyperparameters':{'params':[{'parameterName':'lr','maxValue':0.9}]}},"
                "'createTime':'2026-11-30T09:00:00.000000Z',"
                "'startTime':'2026-11-30T09:01:00.500000Z','state':'FAILED',"
                "'errorMessage':'The replica master 0 exited with a non-zero status of 1.',"
                "'trainingOutput':{'consumedMLUnits':1.25,'completedTrialCount':'3',"
                "'isHyperparameterTuningJob':true},"
                "'labels':{'team':'vision','owner':'ada lovelace','my-key':'a_b',"
                "'q':'say \\'hi\\' \\\\ ok','runTime':'fast'},'etag':'AAAAAAAAAAE='}");
    job2 = load("{'jobId':'rnn_7','trainingInput':{'scaleTier':'BASIC'},"
                "'createTime':'2026-12-01T10:00:00Z','state':'SUCCEEDED',"
                "'labels':{'team':'nlp'},'etag':'AAAAAAAAAAI='}");
    if (!ok(job1 && job2, "fixtures parse"))
        return done_testing();
    test_operators();
    test_numbers_and_times();
    test_fields();
    test_regex();
    test_logic();
    test_hints();
    test_errors();
    test_limits();
    test_budget();
    test_bench_filter();
    json_decref(job1);
    json_decref(job2);
    return done_testing();
}
