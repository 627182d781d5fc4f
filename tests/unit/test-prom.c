/* SPDX-License-Identifier: Apache-2.0
 * test-prom.c: the Prometheus text format as trainyardd writes it (src/trainyardd/prom.c):
 * family headers with escaped help, samples with and without labels, label values with a
 * backslash, a double quote and a line feed escaped, values (integers, fractions, +Inf, NaN),
 * and histograms: cumulative buckets, the +Inf bucket added when the bounds lack it, _sum and
 * _count equal to the +Inf bucket. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "macro.h"
#include "prom.h"
#include "tap.h"

static void test_values(void)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {42, "42"},
        {-3, "-3"},
        {0.005, "0.005"},
        {0.1, "0.1"},
        {2.5, "2.5"},
        {1048576000, "1048576000"},
        {9007199254740993.0, "9007199254740992"},
        {1e21, "1e+21"},
        {1.0 / 3, "0.3333333333333333"},
    };
    struct ty_buf b = TY_BUF_INIT;

    for (size_t i = 0; i < TY_ARRAY_SIZE(cases); i++) {
        ty_buf_reset(&b);
        tyd_prom_value(&b, cases[i].v);
        is_str(ty_buf_str(&b), cases[i].text, "value %s", cases[i].text);
    }
    ty_buf_reset(&b);
    tyd_prom_value(&b, INFINITY);
    tyd_prom_value(&b, -INFINITY);
    tyd_prom_value(&b, NAN);
    is_str(ty_buf_str(&b), "+Inf-InfNaN", "+Inf, -Inf, NaN");
    ty_buf_release(&b);
}

static void test_escaping(void)
{
    struct ty_buf b = TY_BUF_INIT;

    tyd_prom_escape_label(&b, "a\\b\"c\nd");
    is_str(ty_buf_str(&b), "a\\\\b\\\"c\\nd", "label value: backslash, quote, line feed");
    ty_buf_reset(&b);
    tyd_prom_escape_label(&b, "\\\\\"\"\n\n");
    is_str(ty_buf_str(&b), "\\\\\\\\\\\"\\\"\\n\\n", "label value: only escapes");
    ty_buf_reset(&b);
    tyd_prom_escape_label(&b, "plain-text_1.2:3~");
    is_str(ty_buf_str(&b), "plain-text_1.2:3~", "label value: nothing to escape");
    ty_buf_reset(&b);
    tyd_prom_family(&b, "x_total", TYD_PROM_COUNTER, "a \"quoted\" \\ help\nline");
    is_str(ty_buf_str(&b),
           "# HELP x_total a \"quoted\" \\\\ help\\nline\n# TYPE x_total counter\n",
           "help: backslash and line feed escaped, quotes kept");
    ty_buf_release(&b);
}

static void test_samples(void)
{
    struct ty_buf b = TY_BUF_INIT;

    tyd_prom_family(&b, "jobs", TYD_PROM_GAUGE, "Jobs.");
    tyd_prom_sample(&b, "jobs", TYD_PROM_LABELS({"project", "p\"1"}, {"state", "QUEUED"}), 3);
    tyd_prom_sample(&b, "jobs", TYD_PROM_LABELS({"project", "a\\b\nc"}), 0.5);
    tyd_prom_sample(&b, "up", TYD_PROM_NO_LABELS, 1);
    tyd_prom_sample(&b, "up", NULL, 2);
    is_str(ty_buf_str(&b),
           "# HELP jobs Jobs.\n"
           "# TYPE jobs gauge\n"
           "jobs{project=\"p\\\"1\",state=\"QUEUED\"} 3\n"
           "jobs{project=\"a\\\\b\\nc\"} 0.5\n"
           "up 1\n"
           "up 2\n",
           "samples with labels, escaped, and without");
    ty_buf_release(&b);
}

static void test_histogram(void)
{
    static const double bounds[] = {0.1, 1, INFINITY};
    static const double finite[] = {0.25, 2.5};
    static const uint64_t counts[] = {2, 0, 3};
    static const uint64_t fcounts[] = {1, 4};
    static const uint64_t zero[] = {0, 0, 0};
    struct ty_buf b = TY_BUF_INIT;

    tyd_prom_histogram(&b, "w_seconds", TYD_PROM_LABELS({"route", "/x"}), bounds, counts, 3, 7.5);
    is_str(ty_buf_str(&b),
           "w_seconds_bucket{route=\"/x\",le=\"0.1\"} 2\n"
           "w_seconds_bucket{route=\"/x\",le=\"1\"} 2\n"
           "w_seconds_bucket{route=\"/x\",le=\"+Inf\"} 5\n"
           "w_seconds_sum{route=\"/x\"} 7.5\n"
           "w_seconds_count{route=\"/x\"} 5\n",
           "histogram: cumulative buckets, _count is the +Inf bucket");
    ty_buf_reset(&b);
    tyd_prom_histogram(&b, "h", TYD_PROM_NO_LABELS, finite, fcounts, 2, 3);
    is_str(ty_buf_str(&b),
           "h_bucket{le=\"0.25\"} 1\n"
           "h_bucket{le=\"2.5\"} 5\n"
           "h_bucket{le=\"+Inf\"} 5\n"
           "h_sum 3\n"
           "h_count 5\n",
           "histogram without labels: +Inf added after finite bounds");
    ty_buf_reset(&b);
    tyd_prom_histogram(&b, "h", TYD_PROM_LABELS({"a", "\""}), bounds, zero, 3, 0);
    is_str(ty_buf_str(&b),
           "h_bucket{a=\"\\\"\",le=\"0.1\"} 0\n"
           "h_bucket{a=\"\\\"\",le=\"1\"} 0\n"
           "h_bucket{a=\"\\\"\",le=\"+Inf\"} 0\n"
           "h_sum{a=\"\\\"\"} 0\n"
           "h_count{a=\"\\\"\"} 0\n",
           "empty histogram, escaped label");
    ty_buf_reset(&b);
    tyd_prom_histogram(&b, "h", NULL, NULL, NULL, 0, 0);
    is_str(ty_buf_str(&b),
           "h_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n",
           "no bounds: the +Inf bucket alone");
    ty_buf_release(&b);
}

int main(void)
{
    test_values();
    test_escaping();
    test_samples();
    test_histogram();
    return done_testing();
}
