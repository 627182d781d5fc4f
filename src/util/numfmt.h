/* SPDX-License-Identifier: Apache-2.0
 * numfmt.h: the one way trainyard writes a double for people and for JSON: the shortest
 * decimal text that reads back as the same double (0.0919665702559074, never
 * 0.091966570255907404), so a value looks the same in a log line, a table and a document. */
#ifndef TY_NUMFMT_H
#define TY_NUMFMT_H

#include <stddef.h>

/* Room for any text ty_fmt_double writes, with its NUL. */
#define TY_DOUBLE_TEXT_MAX 32

/* Write @v to @buf with the fewest significant digits (1 to 17) that strtod reads back as
 * @v: without an exponent from 1e-4 to below 1e16 ("0.1", "10", "123456", "0.0001",
 * "0.30000000000000004"), else as %g writes them ("1e-05", "1e+22"); NaN and the infinities
 * as "nan", "inf" and "-inf". Returns @buf. */
char *ty_fmt_double(double v, char buf[TY_DOUBLE_TEXT_MAX]);

/* A copy of the JSON text @json in which every number with a fraction or an exponent is
 * written as ty_fmt_double writes it, in JSON's spelling as jansson dumps it (no '+' and no
 * leading zeros in the exponent, ".0" after a whole number, so that it stays a real);
 * strings and integers are copied unchanged. @json must be valid JSON (a dumped document).
 * Caller frees. */
char *ty_json_shortest_reals(const char *json);

#endif
