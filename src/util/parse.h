/* SPDX-License-Identifier: Apache-2.0
 * parse.h: checked number parsing (instead of atoi and friends). */
#ifndef TY_PARSE_H
#define TY_PARSE_H

#include <stdint.h>

/* Parse a whole decimal integer (optional sign, no spaces, no trailing text) in
 * [min, max]. Returns 0, -EINVAL (not a number) or -ERANGE (outside the range). */
int ty_parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret);
/* Parse a whole finite decimal floating-point number ("1.5", "-2e-3"; not strtod's hexadecimal
 * "0x10", which no user means as 16). Returns 0 or -EINVAL. */
int ty_parse_double(const char *s, double *ret);
/* Parse a size in bytes: a whole decimal number, optionally followed by one of k, m, g, t
 * (either case; powers of 1024), in [min, INT64_MAX]. "1.5g" and "-1" are not sizes. Returns
 * 0, -EINVAL (not a size) or -ERANGE (below @min, or too large). */
int ty_parse_bytes(const char *s, int64_t min, int64_t *ret);

#endif
