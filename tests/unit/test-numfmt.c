/* SPDX-License-Identifier: Apache-2.0
 * test-numfmt: doubles written shortest (ty_fmt_double) and JSON text with its reals so
 * written (ty_json_shortest_reals), as every serialisation of json.c writes them: a trial's
 * parameter reads the same in its log line ("Trial 1 started with {...}", ty_json_compact)
 * and in the table of trials (ty_study_value_string, which uses ty_fmt_double). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "numfmt.h"
#include "tap.h"

static void fmt_is(double v, const char *want)
{
    char buf[TY_DOUBLE_TEXT_MAX];
    is_str(ty_fmt_double(v, buf), want, "ty_fmt_double(%.17g)", v);
}

static void shortest_is(const char *json, const char *want)
{
    char *got = ty_json_shortest_reals(json);
    is_str(got, want, "shortest reals of %s", json);
    free(got);
}

static void compact_is(json_t *j, const char *want, const char *what)
{
    char *got = ty_json_compact(j);
    is_str(got, want, "%s", what);
    free(got);
    json_decref(j);
}

int main(void)
{
    fmt_is(0.091966570255907404, "0.0919665702559074");
    fmt_is(0.1, "0.1");
    fmt_is(0.1 + 0.2, "0.30000000000000004");
    fmt_is(1e-5, "1e-05");
    fmt_is(123456, "123456");
    fmt_is(10, "10"); /* not "1e+01": a DISCRETE value 10 is --epochs=10 */
    fmt_is(100000, "100000");
    fmt_is(-2000, "-2000");
    fmt_is(1.5e15, "1500000000000000");
    fmt_is(1e16, "1e+16");
    fmt_is(0.0001, "0.0001");
    fmt_is(0.00012, "0.00012");
    fmt_is(1234.5, "1234.5");
    fmt_is(0, "0");
    fmt_is(-2.5, "-2.5");
    fmt_is(1e22, "1e+22");
    fmt_is(5e-324, "5e-324");
    fmt_is(NAN, "nan");
    fmt_is(-INFINITY, "-inf");
    for (double v = 1e-7; v < 1e20; v *= 3.7) { /* every value reads back exactly */
        char buf[TY_DOUBLE_TEXT_MAX];
        if (strtod(ty_fmt_double(v / 7, buf), NULL) != v / 7) {
            ok(0, "%.17g reads back", v / 7);
            break;
        }
    }
    ok(1, "values from 1e-7 to 1e20 read back exactly");

    shortest_is("{\"lr\":0.091966570255907404}", "{\"lr\":0.0919665702559074}");
    shortest_is("[1.0, -0.10000000000000001, 1.0000000000000001e-5, 1e22, 42, -7]",
                "[1.0, -0.1, 1e-5, 1e22, 42, -7]");
    shortest_is("{\"s\":\"0.10000000000000001 \\\" 2.50\",\"n\":null,\"t\":true}",
                "{\"s\":\"0.10000000000000001 \\\" 2.50\",\"n\":null,\"t\":true}");
    shortest_is("{\"a\\\\\":0.20000000000000001}", "{\"a\\\\\":0.2}");
    shortest_is("1e+300", "1e300");
    shortest_is("", "");

    compact_is(json_pack("{s:f,s:i,s:s}",
                         "learning_rate",
                         0.091966570255907404,
                         "hidden",
                         64,
                         "optimizer",
                         "sgd"),
               "{\"learning_rate\":0.0919665702559074,\"hidden\":64,\"optimizer\":\"sgd\"}",
               "a trial's parameters as its log line shows them");
    compact_is(json_real(3.0), "3.0", "a whole real stays a real");
    {
        json_t *j = json_pack("{s:f}", "v", 0.1);
        char *pretty = ty_json_pretty(j);
        like(pretty, "\"v\": 0.1\n", "pretty JSON writes reals shortest too");
        free(pretty);
        json_decref(j);
    }
    return done_testing();
}
