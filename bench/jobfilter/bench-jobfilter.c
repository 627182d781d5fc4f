/* SPDX-License-Identifier: Apache-2.0
 * bench-jobfilter.c: what does matching a job against a list filter cost?
 *
 * Runs, in alternating rounds so machine noise hits both alike:
 *   filter:   ty_filter_match of the parsed filter
 *                 jobId:census* AND state:FAILED AND labels.team:vision AND
 *                 createTime>2026-01-01
 *             against a job resource of the size the API lists (the unit test's job);
 *   baseline: a plain function doing the minimal equivalent on the same JSON: four object
 *             lookups, a case-insensitive prefix, two string comparisons and a comparison of
 *             the RFC 3339 text with the bound;
 * then, for each of a few '~' patterns (typical ones, and one that keeps many threads alive):
 *   filter:   ty_filter_match of "FIELD~PATTERN" (the linear-time matcher of ere.h);
 *   glibc:    the field looked up and searched by glibc's regexec, compiled once (what the
 *             filter used before; its regcomp is exponential on some patterns, its regexec
 *             fast on these).
 * Prints the median nanoseconds per match of each and their ratio. Not a test: nothing here
 * passes or fails (the filter's unit test checks what it matches; this only measures).
 * Usage: bench-jobfilter [MATCHES_PER_ROUND [ROUNDS]] */
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "jobfilter.h"
#include "json.h"
#include "parse.h"
#include "timeutil.h"

#define FILTER "jobId:census* AND state:FAILED AND labels.team:vision AND createTime>2026-01-01"

static const char JOB[] =
    "{\"jobId\":\"census_1\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
    "\"masterType\":\"n1-standard-4\",\"workerCount\":\"4\",\"args\":[\"--epochs\",\"10\"],"
    "\"region\":\"us-central1\",\"masterConfig\":{\"imageUri\":\"gcr.io/p/img:1\"},"
    "\"scheduling\":{\"maxRunningTime\":\"7200s\"},"
    "\"hyperparameters\":{\"params\":[{\"parameterName\":\"lr\",\"maxValue\":0.9}]}},"
    "\"createTime\":\"2026-11-30T09:00:00.000000Z\","
    "\"startTime\":\"2026-11-30T09:01:00.500000Z\",\"state\":\"FAILED\","
    "\"errorMessage\":\"The replica master 0 exited with a non-zero status of 1.\","
    "\"trainingOutput\":{\"consumedMLUnits\":1.25,\"completedTrialCount\":\"3\","
    "\"isHyperparameterTuningJob\":true},"
    "\"labels\":{\"team\":\"vision\",\"owner\":\"ada lovelace\",\"my-key\":\"a_b\"},"
    "\"etag\":\"AAAAAAAAAAE=\"}";

/* The baseline: the same question asked directly of the JSON. */
static bool plain_match(const json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "jobId"));
    const char *state = json_string_value(json_object_get(job, "state"));
    const char *team = json_string_value(json_object_get(json_object_get(job, "labels"), "team"));
    const char *created = json_string_value(json_object_get(job, "createTime"));

    return id && strncasecmp(id, "census", 6) == 0 && state && strcmp(state, "FAILED") == 0 &&
           team && strcmp(team, "vision") == 0 && created && strcmp(created, "2026-01-01") > 0;
}

/* The '~' rows: the field, the pattern, whether the unit test's job matches. */
static const struct {
    const char *field, *pattern;
    bool match;
} patterns[] = {
    {"jobId", "^census_[0-9]+$", true},
    {"errorMessage", "status of [0-9]+", true},
    {"errorMessage", "(master|worker) [0-9]+ exited", true},
    {"errorMessage", "^The [a-z]+ [a-z]+ [0-9] exited", true},
    {"errorMessage", "(a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q|r|s|t|u|v|w|x|y|z| )+Z", false},
};

static const json_t *bench_job;
static const struct ty_filter *bench_filter;
static const char *bench_field;
static regex_t bench_re;

static bool run_filter(const void *ctx)
{
    (void)ctx;
    return ty_filter_match(bench_filter, bench_job);
}

static bool run_plain(const void *ctx)
{
    (void)ctx;
    return plain_match(bench_job);
}

static bool run_glibc(const void *ctx)
{
    const char *v = json_string_value(json_object_get(bench_job, bench_field));
    (void)ctx;
    return v && regexec(&bench_re, v, 0, NULL, 0) == 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long arg_or(int argc, char **argv, int i, long dflt)
{
    int64_t v;

    if (argc <= i)
        return dflt;
    if (ty_parse_int64(argv[i], 1, 100000000, &v) < 0) {
        fprintf(stderr, "bench-jobfilter: '%s' is not a count from 1 to 100000000\n", argv[i]);
        exit(2);
    }
    return (long)v;
}

/* Median ns per call of @a and of @b over @rounds alternating rounds of @n calls each. */
static void measure(
    bool (*a)(const void *), bool (*b)(const void *), long n, long rounds, double *ma, double *mb)
{
    double *ta = calloc((size_t)rounds, sizeof(double)),
           *tb = calloc((size_t)rounds, sizeof(double));
    volatile long sink = 0;

    if (!ta || !tb) {
        fprintf(stderr, "bench-jobfilter: out of memory\n");
        exit(2);
    }
    for (long r = 0; r < rounds; r++) {
        int64_t t0 = ty_mono_usec(), t1, t2;
        long hits = 0;
        for (long i = 0; i < n; i++)
            hits += a(NULL);
        t1 = ty_mono_usec();
        for (long i = 0; i < n; i++)
            hits += b(NULL);
        t2 = ty_mono_usec();
        sink += hits;
        ta[r] = (double)(t1 - t0) * 1000 / (double)n;
        tb[r] = (double)(t2 - t1) * 1000 / (double)n;
    }
    qsort(ta, (size_t)rounds, sizeof(double), cmp_double);
    qsort(tb, (size_t)rounds, sizeof(double), cmp_double);
    *ma = ta[rounds / 2];
    *mb = tb[rounds / 2];
    (void)sink;
    free(ta);
    free(tb);
}

int main(int argc, char **argv)
{
    long n = arg_or(argc, argv, 1, 200000), rounds = arg_or(argc, argv, 2, 7);
    struct ty_error err = {0};
    struct ty_filter *f = NULL;
    json_t *job = NULL;
    double ma, mb;

    if (ty_json_parse(JOB, strlen(JOB), &job, &err) < 0 || ty_filter_parse(FILTER, &f, &err) < 0) {
        fprintf(stderr, "bench-jobfilter: setup failed: %s\n", err.msg);
        return 2;
    }
    bench_job = job;
    bench_filter = f;
    if (!ty_filter_match(f, job) || !plain_match(job)) {
        fprintf(stderr, "bench-jobfilter: the filter and the baseline must both match the job\n");
        return 2;
    }
    measure(run_filter, run_plain, n, rounds, &ma, &mb);
    printf("bench/jobfilter: %ld matches x %ld rounds; medians\n", n, rounds);
    printf("%-28s %12s\n", "", "ns/match");
    printf("%-28s %12.1f\n", "ty_filter_match", ma);
    printf("%-28s %12.1f\n", "baseline (plain lookups)", mb);
    printf("%-28s %11.2fx\n", "ratio", ma / mb);
    ty_filter_free(f);

    printf("\n%-62s %9s %9s %7s\n", "'~' pattern (ns/match)", "filter", "glibc", "ratio");
    for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
        char text[256];
        (void)snprintf(text, sizeof(text), "%s~\"%s\"", patterns[i].field, patterns[i].pattern);
        f = NULL;
        if (ty_filter_parse(text, &f, &err) < 0 ||
            regcomp(&bench_re, patterns[i].pattern, REG_EXTENDED | REG_NOSUB) != 0) {
            fprintf(stderr, "bench-jobfilter: '%s' failed: %s\n", text, err.msg);
            return 2;
        }
        /* millions of matches: past TY_FILTER_MAX_STEPS, which the service spends per request,
         * the filter would stop matching and the figures would be of doing nothing */
        ty_filter_set_budget(f, UINT64_MAX);
        bench_filter = f;
        bench_field = patterns[i].field;
        if (run_filter(NULL) != patterns[i].match || run_glibc(NULL) != patterns[i].match) {
            fprintf(stderr,
                    "bench-jobfilter: '%s' must %smatch the job\n",
                    text,
                    patterns[i].match ? "" : "not ");
            return 2;
        }
        measure(run_filter, run_glibc, n / 4, rounds, &ma, &mb);
        if (ty_filter_spent(f, &err) < 0 || run_filter(NULL) != patterns[i].match) {
            fprintf(stderr, "bench-jobfilter: '%s' stopped matching: %s\n", text, err.msg);
            return 2;
        }
        printf("%-62s %9.1f %9.1f %6.2fx\n", text, ma, mb, ma / mb);
        regfree(&bench_re);
        ty_filter_free(f);
    }
    json_decref(job);
    return 0;
}
