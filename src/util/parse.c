/* SPDX-License-Identifier: Apache-2.0
 * parse.c: checked number parsing. */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ty_parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret)
{
    char *end = NULL;
    long long v;

    if (!s || !*s || isspace((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end != '\0')
        return -EINVAL;
    if (errno == ERANGE || v < min || v > max)
        return -ERANGE;
    *ret = (int64_t)v;
    return 0;
}

int ty_parse_bytes(const char *s, int64_t min, int64_t *ret)
{
    static const char units[] = "kmgt";
    size_t n = s ? strlen(s) : 0;
    const char *u;
    char digits[32];
    int64_t v;
    int shift = 0, r;

    if (n == 0 || n >= sizeof(digits))
        return -EINVAL;
    memcpy(digits, s, n + 1);
    if ((u = strchr(units, tolower((unsigned char)digits[n - 1]))) && *u) {
        shift = 10 * (int)(u - units + 1);
        digits[--n] = '\0';
    }
    if (n == 0 || !isdigit((unsigned char)digits[0]))
        return -EINVAL;
    if ((r = ty_parse_int64(digits, 0, INT64_MAX, &v)) < 0)
        return r;
    if (v > (INT64_MAX >> shift))
        return -ERANGE;
    v <<= shift;
    if (v < min)
        return -ERANGE;
    *ret = v;
    return 0;
}

int ty_parse_double(const char *s, double *ret)
{
    char *end = NULL;
    double v;

    if (!s || !*s || isspace((unsigned char)*s) || strpbrk(s, "xX"))
        return -EINVAL;
    errno = 0;
    v = strtod(s, &end);
    /* ERANGE with a finite result is an underflow ("1e-320": a denormal or 0), a number all
     * the same; an overflow is infinite */
    if (*end != '\0' || !isfinite(v))
        return -EINVAL;
    *ret = v;
    return 0;
}
