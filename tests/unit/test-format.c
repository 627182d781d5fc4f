/* SPDX-License-Identifier: Apache-2.0
 * test-format.c: gcloud's output formats of the jobs verbs (format.h): the --format and
 * --sort-by parser and its errors (unknown formats, attributes, transforms and keys, with
 * "did you mean"), the values of keys (dotted, indexed, through lists, transformed), each
 * printer's layout, sorting, tables fitted to a width (a key column repeated in each part), and
 * that every key of the ml v1 Job in the REST discovery document (tests/data) is a key here.
 *
 * JSON documents are written with ' for " (dq() swaps them) to keep them readable. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "format.h"
#include "jobkeys.h"
#include "json.h"
#include "macro.h"
#include "tap.h"

static json_t *jobs;

static json_t *load(const char *text)
{
    char *t = xstrdup(text);
    struct ty_error e = {0};
    json_t *j = NULL;

    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    if (ty_json_parse(t, strlen(t), &j, &e) < 0)
        diag("fixture: %s", e.msg);
    free(t);
    return j;
}

/* What @format prints for the jobs (one: the first job alone); NULL when it does not parse. */
static char *render(const char *format, bool one)
{
    struct ty_format *f = NULL;
    struct ty_error e = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *out;

    if (ty_format_parse(format, &f, &e) < 0) {
        diag("%s: %s", format, e.msg);
        return NULL;
    }
    out = open_memstream(&buf, &len);
    if (one) {
        json_t *a = json_array();
        json_array_append(a, json_array_get(jobs, 0));
        ty_format_print(f, a, true, out);
        json_decref(a);
    } else {
        ty_format_print(f, jobs, false, out);
    }
    fclose(out);
    ty_format_free(f);
    return buf;
}

static void expect_render(const char *format, bool one, const char *want)
{
    char *got = render(format, one);
    is_str(got, want, "print %s%s", format, one ? " (one job)" : "");
    free(got);
}

static void test_printers(void)
{
    expect_render("value(jobId,state)", false, "a1\tSUCCEEDED\nb2\tFAILED\n");
    expect_render("value(state)", true, "SUCCEEDED\n");
    expect_render("value(labels.team,trainingInput.masterConfig.imageUri)",
                  false,
                  "vision\tgcr.io/p/img:1\n\t\n");
    expect_render("value(trainingInput.args)", true, "--epochs;10\n");
    expect_render("value[delimiter=' '](trainingInput.args)", true, "--epochs 10\n");
    expect_render("value[separator=','](jobId,jobPosition)", false, "a1,\nb2,3\n");
    expect_render("value(labels)", true, "owner=ada;team=vision\n");
    expect_render("value(trainingOutput.trials[0].trialId,trainingOutput.trials[-1].trialId)",
                  true,
                  "1\t2\n");
    expect_render("value(trainingOutput.trials.trialId)", true, "1;2\n");
    expect_render("value(trainingOutput.isHyperparameterTuningJob,trainingOutput.consumedMLUnits)",
                  true,
                  "True\t1.25\n");
    expect_render("value(trainingInput.masterConfig.imageUri.basename())", true, "img:1\n");
    /* join() of a list (under ASan, also that nothing leaks: fuzz-format found a leak) */
    expect_render("value(trainingInput.args.join(' '))", true, "--epochs 10\n");
    expect_render("value(trainingOutput.trials.trialId.join())", true, "1,2\n");
    expect_render("value(jobId.join(-))", true, "a1\n");
    expect_render("value(createTime.date('%Y-%m-%d',tz=UTC))", true, "2026-11-30\n");
    expect_render("value(createTime.date(format='%H:%M', tz=UTC))", true, "09:00\n");
    /* gcloud's: without tz=, the zone the time states (UTC for ...Z), whatever TZ says */
    setenv("TZ", "Asia/Tokyo", 1);
    tzset();
    expect_render("value(createTime.date())", true, "2026-11-30T09:00:00\n");
    expect_render("value(createTime.date('%H:%M %Z %z'))", true, "09:00 UTC +0000\n");
    expect_render("value(createTime.date('%H:%M',tz=LOCAL))", true, "18:00\n");
    expect_render("value(createTime.date(tz=US/Pacific,format='%H:%M %Z'))", true, "01:00 PST\n");
    expect_render(
        "value(createTime.date(tz_default=UTC, tz=Europe/Paris))", true, "2026-11-30T10:00:00\n");
    expect_render("value(createTime.date('%H:%M'))", true, "09:00\n"); /* TZ put back */
    unsetenv("TZ");
    tzset();
    expect_render("value(errorMessage.yesno(bad,good),jobId.len(),jobId.upper())",
                  false,
                  "good\t2\tA1\nbad\t2\tB2\n");
    expect_render("csv(jobId,state:label=Status,labels.team)",
                  false,
                  "job_id,status,team\na1,SUCCEEDED,vision\nb2,FAILED,\n");
    expect_render("csv[no-heading](jobId,errorMessage)", false, "a1,\nb2,\"said \"\"no\"\", x\"\n");
    expect_render("table(jobId,state:label=STATUS,createTime.date('%Y',tz=UTC):label=YEAR)",
                  false,
                  "JOB_ID  STATUS     YEAR\na1      SUCCEEDED  2026\nb2      FAILED     2026\n");
    expect_render("table[no-heading](jobId,state)", false, "a1  SUCCEEDED\nb2  FAILED\n");
    expect_render("table[box,title=Jobs](jobId)",
                  false,
                  "+--------+\n|  Jobs  |\n+--------+\n| JOB_ID |\n+--------+\n| a1     |\n"
                  "| b2     |\n+--------+\n");
    expect_render("list(jobId,state)", false, " - a1\n   SUCCEEDED\n - b2\n   FAILED\n");
    expect_render("list",
                  true,
                  " - createTime: 2026-11-30T09:00:00Z\n   jobId: a1\n"
                  "   labels: owner=ada;team=vision\n   state: SUCCEEDED\n"
                  "   trainingInput: args=[\"--epochs\",\"10\"];masterConfig={\"imageUri\":"
                  "\"gcr.io/p/img:1\"};scaleTier=CUSTOM\n"
                  "   trainingOutput: consumedMLUnits=1.25;isHyperparameterTuningJob=True;"
                  "trials=[{\"trialId\":\"1\",\"state\":\"SUCCEEDED\"},{\"trialId\":\"2\"}]\n");
    expect_render("text(jobId,labels.team,trainingInput.args)",
                  true,
                  "jobId: a1\nlabels.team: vision\ntrainingInput.args[0]: --epochs\n"
                  "trainingInput.args[1]: 10\n");
    expect_render("flattened(jobId,labels.team)",
                  false,
                  "---\njobId:       a1\nlabels.team: vision\n---\njobId: b2\n");
    expect_render("json(jobId,labels.team)",
                  true,
                  "{\n  \"jobId\": \"a1\",\n  \"labels\": {\n    \"team\": \"vision\"\n  }\n}\n");
    expect_render("json(jobId)",
                  false,
                  "[\n  {\n    \"jobId\": \"a1\"\n  },\n  {\n    \"jobId\": \"b2\"\n  }\n]\n");
    expect_render("yaml(jobId,state)",
                  false,
                  "---\njobId: a1\nstate: SUCCEEDED\n---\njobId: b2\nstate: FAILED\n");
    expect_render("none", false, "");
    expect_render(" value ( jobId , state ) ", true, "a1\tSUCCEEDED\n");
}

static void test_sort(void)
{
    struct ty_fmt_key *keys = NULL;
    struct ty_format *f = NULL;
    struct ty_error e = {0};
    json_t *a = load("[{'jobId':'x','jobPosition':'10'},{'jobId':'y','jobPosition':'9'},"
                     "{'jobId':'z'},{'jobId':'w','jobPosition':'9'}]");
    size_t n = 0;
    char ids[8] = "";

    ok(ty_format_sort_parse("jobPosition,~jobId", &keys, &n, &e) == 0 && n == 2 &&
           keys[1].reverse && !keys[0].reverse,
       "sort: jobPosition,~jobId parses");
    ty_format_sort(a, keys, n, NULL);
    for (size_t i = 0; i < json_array_size(a); i++)
        ids[i] = ty_json_str(json_array_get(a, i), "jobId")[0];
    is_str(ids, "zywx", "sort: missing first, int64 strings as numbers, ties by ~jobId");
    ty_format_keys_free(keys, n);

    ok(ty_format_parse("value(jobId:sort=1:reverse)", &f, &e) == 0 && f->keys[0].sort == 1,
       "sort: :sort=1:reverse parses");
    ty_format_sort(a, NULL, 0, f);
    for (size_t i = 0; i < json_array_size(a); i++)
        ids[i] = ty_json_str(json_array_get(a, i), "jobId")[0];
    is_str(ids, "zyxw", "sort: by a projection key's :sort, reversed");
    ty_format_free(f);

    is_int(ty_format_sort_parse("~jobid", &keys, &n, &e), -EINVAL, "sort: unknown key refused");
    like(e.msg,
         "unknown key 'jobid': the Job has no key 'jobid' (did you mean 'jobId'?)",
         "sort: message");
    json_decref(a);
}

struct bad {
    const char *format, *needle;
};

static void test_errors(void)
{
    static const struct bad c[] = {
        {"tabel(jobId)",
         "unknown format 'tabel' (did you mean 'table'?); valid formats: default, none, json, "
         "yaml, value, csv, table, list, text, flattened"},
        {"expected json or yaml", "unknown format 'expected'; valid formats:"},
        {"", "unknown format ''"},
        {"value(stat)", "unknown key 'stat': the Job has no key 'stat' (did you mean 'state'?)"},
        {"value(trainingInput.masterConfg.imageUri)",
         "trainingInput has no key 'masterConfg' (did you mean "
         "'trainingInput.masterConfig.imageUri'?); valid keys here: scaleTier, masterType,"},
        {"value(labels.team.x)", "labels.team is a value, with no keys under it"},
        {"value(jobId.date2())", "unknown transform 'date2()' (valid: basename()"},
        {"value(jobId", "expected ',' or ')' after a key, found the end at position 12"},
        {"value(jobId,)", "expected a key name at position 13"},
        {"value(jobId:lable=x)", "expected a key attribute after ':' (label=NAME, sort=N"},
        {"value(jobId:sort=0)", "expected a key attribute"},
        {"table[boxx](jobId)", "unknown attribute 'boxx' (valid: box, no-heading"},
        {"table[title](jobId)", "attribute 'title' needs a value"},
        {"table[box(jobId)", "expected ']' to close the attributes"},
        {"value(jobId) x", "expected '[', '(' or the end, found 'x' at position 14"},
        {"value(labels.team[x])", "expected a list index such as [0] after 'team'"},
        {"value(createTime.date('%Y)",
         "unterminated string (no closing ') starting at position 23"},
        {"value(jobId.basename().x)", "expected a transform after a transform"},
        {"value(createTime.date(tz=Mars/Olympus))",
         "date(): unknown time zone 'Mars/Olympus' (LOCAL, UTC, or a name of the tz database"},
        {"value(createTime.date(tz_default=../../etc/passwd))", "unknown time zone"},
        {"value(jobId.yesno(tz_default=x))", "tz_default= is an argument of date() only"},
    };
    for (size_t i = 0; i < TY_ARRAY_SIZE(c); i++) {
        struct ty_format *f = NULL;
        struct ty_error e = {0};
        int r = ty_format_parse(c[i].format, &f, &e);
        ok(r == -EINVAL && !f, "errors: '%s' is refused", c[i].format);
        like(e.msg, c[i].needle, "errors: '%s' message", c[i].format);
    }
}

static void test_parse(void)
{
    struct ty_format *f = NULL;
    struct ty_error e = {0};

    ok(ty_format_parse("table[box,title='My jobs, all',no-heading](jobId:label='ID, mine':sort=2,"
                       "trainingOutput.trials[3].hyperparameters.lr, createTime.date('%Y-%m-%d'))",
                       &f,
                       &e) == 0,
       "parse: attributes, labels, indexes, transforms (%s)",
       e.msg);
    if (f) {
        is_int(f->name, TY_FMT_TABLE, "parse: name");
        ok(f->box && f->no_heading, "parse: flags");
        is_str(f->title, "My jobs, all", "parse: quoted title");
        is_int(f->nkeys, 3, "parse: three keys");
        is_str(f->keys[0].label, "ID, mine", "parse: quoted label");
        is_int(f->keys[0].sort, 2, "parse: sort");
        is_str(f->keys[1].path, "trainingOutput.trials[3].hyperparameters.lr", "parse: path");
        ok(f->keys[1].segs[1].has_index && f->keys[1].segs[1].index == 3, "parse: index");
        ok(f->keys[2].ntr == 1 && f->keys[2].tr[0].kind == TY_TR_DATE &&
               strcmp(f->keys[2].tr[0].arg[0], "%Y-%m-%d") == 0,
           "parse: transform and its argument");
        _cleanup_free_ char *h = ty_format_heading(&f->keys[1]);
        is_str(h, "LR", "parse: heading of the last name");
    }
    ty_format_free(f);
    f = NULL;
    ok(ty_format_parse("table", &f, &e) == 0 && ty_format_needs_keys(f),
       "parse: table alone needs keys");
    ty_format_free(f);
}

static void test_table_width(void)
{
    static const char *const heads[] = {"JOB_ID", "CREATE_TIME", "ERROR_MESSAGE"};
    static const char *const row[] = {
        "census_1",
        "2026-11-30T09:00:00Z",
        "The replica master 0 exited with a non-zero status of 1. Termination reason: Error."};
    struct ty_table_style st = {.box = true, .title = "Job Overview", .max_width = 40};
    struct ty_table *t = ty_table_new(3, heads);
    char *buf = NULL, *line, *save = NULL;
    size_t len = 0, widest = 0, lines = 0;
    FILE *out = open_memstream(&buf, &len);

    ty_table_add(t, row);
    ty_table_print(t, out, &st);
    fclose(out);
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lines++)
        if (strlen(line) > widest)
            widest = strlen(line);
    ok(widest <= 40, "table: every line fits 40 columns (widest %zu)", widest);
    ok(lines > 8, "table: columns that do not fit go below, long cells wrap (%zu lines)", lines);
    free(buf);
    ty_table_free(t);
}

/* A cell's tab, carriage return or escape is shown as '?': a user's value neither misaligns
 * the columns nor drives the terminal. */
static void test_table_controls(void)
{
    static const char *const heads[] = {"TRIAL", "opt"};
    static const char *const row[] = {"1", "a\tb\rc\033[2Jd\x7f"};
    struct ty_table_style st = {0};
    struct ty_table *t = ty_table_new(2, heads);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    ty_table_add(t, row);
    ty_table_print(t, out, &st);
    fclose(out);
    is_str(buf,
           "TRIAL  opt\n"
           "1      a?b?c?[2Jd?\n",
           "table: control characters in a cell are shown as '?'");
    free(buf);
    ty_table_free(t);
}

/* A plain table fitted to 30 columns with its first column repeated: the parts a blank line
 * apart, each starting with the key; without max_width no part is split off. */
static void test_table_repeat(void)
{
    static const char *const heads[] = {"TRIAL", "learning_rate", "momentum_rate", "x"};
    static const char *const row[] = {"1", "0.0031622776601683794", "0.25", "7"};
    struct ty_table_style st = {.max_width = 30, .repeat = 1};
    struct ty_table *t = ty_table_new(4, heads);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    ty_table_add(t, row);
    ty_table_print(t, out, &st);
    fclose(out);
    is_str(buf,
           "TRIAL  learning_rate\n"
           "1      0.0031622776601683794\n"
           "\n"
           "TRIAL  momentum_rate  x\n"
           "1      0.25           7\n",
           "table: each part starts with the key column, a blank line between");
    free(buf);
    buf = NULL;
    out = open_memstream(&buf, &len);
    st.max_width = 0;
    ty_table_print(t, out, &st);
    fclose(out);
    is_str(buf,
           "TRIAL  learning_rate          momentum_rate  x\n"
           "1      0.0031622776601683794  0.25           7\n",
           "table: no width, one part");
    free(buf);
    ty_table_free(t);
}

/* Every property of the ml v1 Job in the discovery document is a key (and so can be printed,
 * sorted by and filtered on). */
static void walk_schema(
    json_t *schemas, const char *name, const char *prefix, int depth, size_t *n, size_t *bad)
{
    json_t *props = json_object_get(json_object_get(schemas, name), "properties");
    const char *k;
    json_t *p;

    json_object_foreach(props, k, p)
    {
        _cleanup_free_ char *key = *prefix ? xasprintf("%s.%s", prefix, k) : xstrdup(k);
        json_t *ref = json_object_get(p, "$ref");
        struct ty_error e = {0};
        if (!ref)
            ref = json_object_get(json_object_get(p, "items"), "$ref");
        (*n)++;
        if (ty_jobkey_check_dotted(key, NULL, &e) < 0) {
            diag("%s", e.msg);
            (*bad)++;
        }
        if (ref && depth < 5)
            walk_schema(schemas, json_string_value(ref), key, depth + 1, n, bad);
    }
}

static void test_discovery(void)
{
    const char *src = getenv("TY_SOURCE_DIR");
    _cleanup_free_ char *path = xasprintf("%s/tests/data/ml.v1.discovery.json", src ? src : "..");
    struct ty_error e = {0};
    json_t *doc = json_load_file(path, 0, NULL);
    size_t n = 0, bad = 0;

    (void)e;
    if (!doc) {
        skip(1, "no %s (set TY_SOURCE_DIR)", path);
        return;
    }
    walk_schema(json_object_get(doc, "schemas"), "GoogleCloudMlV1__Job", "", 0, &n, &bad);
    ok(n > 100 && bad == 0, "discovery: all %zu keys of the Job are keys (%zu are not)", n, bad);
    json_decref(doc);
}

int main(void)
{
    /* tables in ASCII (box drawing is Unicode only in a UTF-8 locale) */
    setenv("LC_ALL", "C", 1);
    jobs =
        load("[{'jobId':'a1','state':'SUCCEEDED','createTime':'2026-11-30T09:00:00Z',"
             "'labels':{'team':'vision','owner':'ada'},"
             "'trainingInput':{'scaleTier':'CUSTOM','masterConfig':{'imageUri':'gcr.io/p/img:1'},"
             "'args':['--epochs','10']},"
             "'trainingOutput':{'trials':[{'trialId':'1','state':'SUCCEEDED'},{'trialId':'2'}],"
             "'consumedMLUnits':1.25,'isHyperparameterTuningJob':true}},"
             "{'jobId':'b2','state':'FAILED','createTime':'2026-12-01T10:00:00Z',"
             "'jobPosition':'3','errorMessage':'said \\'no\\', x'}]");
    if (!ok(jobs != NULL, "fixtures parse"))
        return done_testing();
    test_printers();
    test_sort();
    test_errors();
    test_parse();
    test_table_width();
    test_table_repeat();
    test_table_controls();
    test_discovery();
    json_decref(jobs);
    return done_testing();
}
