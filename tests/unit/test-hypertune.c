/* SPDX-License-Identifier: Apache-2.0
 * test-hypertune.c: parsing cloudml-hypertune metric files (hypertune.c): the library's own
 * lines, numbers in other forms, partial and malformed lines, the size limit.
 *
 * JSON lines are written with ' for " (dq() swaps them) to keep them readable. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "hypertune.h"
#include "macro.h"
#include "tap.h"

static struct ty_error err;
static struct ty_hp_measurement *ms;
static size_t n, skipped;

static char *dq(const char *text)
{
    char *t = xstrdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    return t;
}

/* Parse @text (quotes swapped) into the globals; returns the result. */
static int parse(const char *text, const char *tag, bool final)
{
    _cleanup_free_ char *t = dq(text);
    free(ms);
    ms = NULL;
    ty_error_clear(&err);
    return ty_hypertune_parse(t, strlen(t), tag, final, &ms, &n, &skipped, NULL, &err);
}

/* Exactly what cloudml-hypertune writes: json.dumps(record, sort_keys=True) per line. */
#define LIB_LINE(step, ts, value, trial)                                                           \
    "{'checkpoint_path': '', 'global_step': '" step "', 'timestamp': " ts                          \
    ", 'training/hptuning/metric': '" value "', 'trial': '" trial "'}\n"

static void test_library_output(void)
{
    struct ty_hp_measurement last;

    is_int(parse(LIB_LINE("100", "1700000000.123456", "0.5", "1"), NULL, false),
           0,
           "one library line parses");
    is_int(n, 1, "one measurement");
    is_int(skipped, 0, "nothing skipped");
    ok(n == 1 && ms[0].value == 0.5, "value 0.5");
    ok(n == 1 && ms[0].step == 100, "step 100");
    ok(n == 1 && fabs(ms[0].timestamp - 1700000000.123456) < 1e-6, "float timestamp");

    is_int(parse(LIB_LINE("0", "1700000000.1", "0.9", "3")
                     LIB_LINE("1000", "1700000001.5", "0.7", "3")
                         LIB_LINE("2000", "1700000002.25", "0.625", "3"),
                 "",
                 false),
           0,
           "three reports parse (empty tag = default)");
    is_int(n, 3, "three measurements, in file order");
    ok(n == 3 && ms[0].value == 0.9 && ms[1].value == 0.7 && ms[2].value == 0.625,
       "values in order");
    ok(n == 3 && ms[0].step == 0 && ms[1].step == 1000 && ms[2].step == 2000, "steps in order");
    ok(ty_hypertune_final(ms, n, &last) && last.value == 0.625 && last.step == 2000,
       "final metric is the last report");
    ok(ty_hypertune_final(ms, n, NULL), "final with out = NULL");
    ok(!ty_hypertune_final(NULL, 0, &last), "no final metric without measurements");

    /* README example (older library: no checkpoint_path) with a custom tag. */
    is_int(parse("{'global_step': '1000', 'my_metric_tag': '0.987', 'timestamp': "
                 "1525851440.123456, 'trial': '0'}\n",
                 "my_metric_tag",
                 false),
           0,
           "README example parses");
    ok(n == 1 && ms[0].value == 0.987 && ms[0].step == 1000, "custom tag read");
    is_int(parse("{'global_step': '1000', 'my_metric_tag': '0.987'}\n", NULL, false),
           0,
           "default tag parse");
    ok(n == 0 && skipped == 1 && ms == NULL, "a line without the default tag is skipped");

    /* Tags with the library's str(float()) forms. */
    is_int(parse(LIB_LINE("5", "1.0", "1e-05", "1") LIB_LINE("6", "2.0", "-3.0", "1"), NULL, false),
           0,
           "exponent and negative values parse");
    ok(n == 2 && ms[0].value == 1e-05 && ms[1].value == -3.0, "1e-05 and -3.0");
}

static void test_json_numbers(void)
{
    is_int(parse("{'loss': 0.25, 'global_step': 42, 'timestamp': 17}\n", "loss", false),
           0,
           "numbers as JSON numbers");
    ok(n == 1 && ms[0].value == 0.25 && ms[0].step == 42 && ms[0].timestamp == 17.0,
       "value, step and timestamp from numbers");
    is_int(parse("{'loss': 3}\n{'loss': '4', 'global_step': null, 'timestamp': '5.5'}\n",
                 "loss",
                 false),
           0,
           "integer value, missing and null fields");
    ok(n == 2 && ms[0].value == 3 && ms[0].step == 0 && ms[0].timestamp == 0,
       "missing step and timestamp are 0");
    ok(n == 2 && ms[1].value == 4 && ms[1].step == 0 && ms[1].timestamp == 5.5,
       "null step is 0, string timestamp read");
}

static void test_partial(void)
{
    const char *two = LIB_LINE("1", "1.5", "0.5", "1") "{'checkpoint_path': '', 'global_s";

    is_int(parse(two, NULL, false), 0, "partial last line parses");
    ok(n == 1 && skipped == 1, "partial last line skipped while running");
    is_int(parse(two, NULL, true), 0, "partial last line, final");
    ok(n == 1 && skipped == 1, "a cut line is still skipped when final");

    is_int(parse("{'training/hptuning/metric': '0.1'}\n{'training/hptuning/metric': '0.2'}",
                 NULL,
                 false),
           0,
           "complete last line without newline");
    ok(n == 1 && skipped == 1 && ms[0].value == 0.1, "waits for its newline while running");
    is_int(parse("{'training/hptuning/metric': '0.1'}\n{'training/hptuning/metric': '0.2'}",
                 NULL,
                 true),
           0,
           "complete last line without newline, final");
    ok(n == 2 && skipped == 0 && ms[1].value == 0.2, "taken when final");
}

static void test_malformed(void)
{
    static const struct {
        const char *line, *name;
    } bad[] = {
        {"garbage", "garbage"},
        {"[1]", "an array"},
        {"1.5", "a bare number"},
        {"'0.5'", "a bare string"},
        {"{}", "an empty object"},
        {"{'m': 'abc'}", "value 'abc'"},
        {"{'m': 'nan'}", "value 'nan'"},
        {"{'m': 'inf'}", "value 'inf'"},
        {"{'m': '-Infinity'}", "value '-Infinity'"},
        {"{'m': '1e999'}", "value '1e999' (overflows)"},
        {"{'m': 1e999}", "number 1e999 (overflows)"},
        {"{'m': ''}", "empty value"},
        {"{'m': ' 1'}", "value with a leading space"},
        {"{'m': '1 '}", "value with a trailing space"},
        {"{'m': '1\\u00002'}", "value with a NUL"},
        {"{'m': true}", "value true"},
        {"{'m': null}", "value null"},
        {"{'m': [1]}", "value [1]"},
        {"{'m': {'v': 1}}", "value an object"},
        {"{'m': '1', 'global_step': 'x'}", "global_step 'x'"},
        {"{'m': '1', 'global_step': 1.5}", "global_step 1.5"},
        {"{'m': '1', 'global_step': '-7'}", "global_step '-7' (steps count up from 0)"},
        {"{'m': '1', 'global_step': '3.5'}", "global_step '3.5'"},
        {"{'m': '1', 'global_step': '99999999999999999999'}", "global_step out of range"},
        {"{'m': '1', 'timestamp': 'soon'}", "timestamp 'soon'"},
        {"{'m': '1', 'm': '2'}", "duplicate keys"},
        {"{'m': '1'} {'m': '2'}", "two objects on a line"},
        {"{'m': '1'", "an unclosed object"},
        {"   ", "a blank line"},
        {"", "an empty line"},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(bad); i++) {
        _cleanup_free_ char *text = xasprintf("{'m': '0.5'}\n%s\n{'m': '0.25'}\n", bad[i].line);
        int r = parse(text, "m", false);
        ok(r == 0 && n == 2 && skipped == 1 && ms[0].value == 0.5 && ms[1].value == 0.25,
           "skips %s",
           bad[i].name);
    }

    /* A NUL byte in the raw text (not escaped) is skipped too. */
    {
        static const char raw[] = "{\"m\": \"1\"}\n{\"m\":\0\"2\"}\n{\"m\": \"3\"}\n";
        free(ms);
        ms = NULL;
        is_int(ty_hypertune_parse(raw, sizeof(raw) - 1, "m", false, &ms, &n, &skipped, NULL, &err),
               0,
               "raw NUL parse");
        ok(n == 2 && skipped == 1 && ms[1].value == 3, "a line with a raw NUL is skipped");
    }
    is_int(parse("nothing\nto\nsee\n", "m", true), 0, "all-garbage file is not an error");
    ok(n == 0 && skipped == 3 && ms == NULL, "three skipped, no array");
}

static void test_line_ends(void)
{
    is_int(parse("{'m': '1'}\r\n{'m': '2'}\r\n\r\n{'m': '3'}\r\n", "m", false), 0, "CRLF parses");
    ok(n == 3 && skipped == 1 && ms[2].value == 3, "CRLF lines read, blank one skipped");
    is_int(parse("{'m': '1'}\r", "m", true), 0, "CR-ended final line");
    ok(n == 1 && ms[0].value == 1, "CR before the end is ignored");
}

static void test_empty_and_limits(void)
{
    struct ty_hp_measurement *m = (void *)1;
    size_t k = 7, s = 7;
    char *big;
    int r;

    is_int(
        ty_hypertune_parse(NULL, 0, NULL, false, &m, &k, &s, NULL, &err), 0, "empty file parses");
    ok(m == NULL && k == 0 && s == 0, "empty file: nothing, NULL array");
    is_int(ty_hypertune_parse("\n", 1, NULL, true, &m, &k, NULL, NULL, &err),
           0,
           "skipped may be NULL");
    ok(m == NULL && k == 0, "a single newline is nothing");

    big = xmalloc(TY_HYPERTUNE_MAX_BYTES + 1);
    memset(big, ' ', TY_HYPERTUNE_MAX_BYTES + 1);
    big[TY_HYPERTUNE_MAX_BYTES] = '\n';
    ty_error_clear(&err);
    r = ty_hypertune_parse(big, TY_HYPERTUNE_MAX_BYTES + 1, NULL, false, &m, &k, &s, NULL, &err);
    is_int(r, -E2BIG, "more than 1 MiB is refused");
    like(err.msg, "over the limit", "with a message");
    ok(m == NULL && k == 0, "no result when refused");

    /* Exactly 1 MiB: a report padded with spaces is accepted. */
    {
        static const char rec[] = "{\"m\": \"2.5\"}";
        memcpy(big, rec, sizeof(rec) - 1);
        big[TY_HYPERTUNE_MAX_BYTES - 1] = '\n';
        r = ty_hypertune_parse(big, TY_HYPERTUNE_MAX_BYTES, "m", false, &m, &k, &s, NULL, &err);
        ok(r == 0 && k == 1 && m && m[0].value == 2.5, "exactly 1 MiB is read");
        free(m);
    }
    free(big);

    /* 100 records, as the library keeps at most. */
    {
        _cleanup_free_ char *text = xstrdup("");
        for (int i = 1; i <= 100; i++) {
            char *t = xasprintf("%s{'m': '%d.5', 'global_step': '%d'}\n", text, i, i * 10);
            free(text);
            text = t;
        }
        is_int(parse(text, "m", false), 0, "100 records parse");
        ok(n == 100 && ms[99].value == 100.5 && ms[99].step == 1000 && ms[0].step == 10,
           "100 measurements, last one last");
    }
}

/* A last report that is not a finite number (a diverged training) is named, not passed over
 * for an earlier one; a finite report after it clears it. */
static void test_nonfinite_last(void)
{
    static const struct {
        const char *text;
        double want; /* 0: none named */
        const char *name;
    } cases[] = {
        {"{'m': '0.5', 'global_step': '1'}\n{'m': 'nan', 'global_step': '2'}\n", NAN, "nan last"},
        {"{'m': '0.5'}\n{'m': 'inf'}\n", INFINITY, "inf last"},
        {"{'m': '-Infinity'}\n", -INFINITY, "-Infinity alone"},
        {"{'m': 'nan'}\n{'m': '0.5'}\n", 0, "a number after nan"},
        {"{'m': '0.5'}\n{'x': 'nan'}\n", 0, "nan of another tag"},
        {"{'m': '0.5'}\n{'m': 'abc'}\n", 0, "a value that is no number"},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *t = dq(cases[i].text);
        _cleanup_free_ struct ty_hp_measurement *m = NULL;
        struct ty_hp_measurement last = {.value = 42};
        size_t k = 0;
        double w = cases[i].want;

        is_int(ty_hypertune_parse(t, strlen(t), "m", true, &m, &k, NULL, &last, &err),
               0,
               "%s: parses",
               cases[i].name);
        ok(isnan(w) ? isnan(last.value) : last.value == w,
           "%s: the last report named",
           cases[i].name);
    }
    {
        _cleanup_free_ char *t = dq("{'m': 'nan', 'global_step': '7'}\n");
        _cleanup_free_ struct ty_hp_measurement *m = NULL;
        struct ty_hp_measurement last;
        size_t k = 0;
        (void)ty_hypertune_parse(t, strlen(t), "m", true, &m, &k, NULL, &last, &err);
        ok(k == 0 && last.step == 7,
           "nan: no measurement, its step kept (%zu, %lld)",
           k,
           (long long)last.step);
    }
}

int main(void)
{
    test_library_output();
    test_json_numbers();
    test_partial();
    test_malformed();
    test_line_ends();
    test_empty_and_limits();
    test_nonfinite_last();
    free(ms);
    return done_testing();
}
