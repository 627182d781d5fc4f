/* SPDX-License-Identifier: Apache-2.0
 * numfmt.c: doubles written as the shortest text that reads back exactly (numfmt.h); JSON
 * text from jansson (which writes reals with %.17g) rewritten so. */
#include "numfmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"

char *ty_fmt_double(double v, char buf[TY_DOUBLE_TEXT_MAX])
{
    if (isnan(v)) {
        (void)snprintf(buf, TY_DOUBLE_TEXT_MAX, "nan");
        return buf;
    }
    if (isinf(v)) {
        (void)snprintf(buf, TY_DOUBLE_TEXT_MAX, v < 0 ? "-inf" : "inf");
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        int exp10;
        (void)snprintf(buf, TY_DOUBLE_TEXT_MAX, "%.*e", prec - 1, v);
        if (strtod(buf, NULL) != v)
            continue;
        /* the same digits without an exponent from 1e-4 to below 1e16, as Python's repr:
         * %g would write 10 as "1e+01" at one digit, which no int parser takes */
        exp10 = (int)strtol(strchr(buf, 'e') + 1, NULL, 10);
        if (exp10 >= -4 && exp10 < 16)
            (void)snprintf(
                buf, TY_DOUBLE_TEXT_MAX, "%.*f", prec - 1 > exp10 ? prec - 1 - exp10 : 0, v);
        else
            (void)snprintf(buf, TY_DOUBLE_TEXT_MAX, "%.*g", prec, v);
        break;
    }
    return buf;
}

/* Append the real number @v in jansson's spelling of ty_fmt_double's text. */
static void put_json_real(struct ty_buf *b, double v)
{
    char text[TY_DOUBLE_TEXT_MAX];
    const char *e;

    ty_fmt_double(v, text);
    e = strchr(text, 'e');
    if (!e) {
        ty_buf_puts(b, text);
        if (!strchr(text, '.'))
            ty_buf_puts(b, ".0");
        return;
    }
    ty_buf_append(b, text, (size_t)(e - text) + 1);
    e++;
    if (*e == '-')
        ty_buf_putc(b, *e++);
    else if (*e == '+')
        e++;
    while (*e == '0' && e[1])
        e++;
    ty_buf_puts(b, e);
}

char *ty_json_shortest_reals(const char *json)
{
    struct ty_buf b = {0};
    const char *p = json;

    while (*p) {
        if (*p == '"') { /* a string, with its escapes, as it is */
            const char *q = p + 1;
            while (*q && *q != '"')
                q += (*q == '\\' && q[1]) ? 2 : 1;
            if (*q)
                q++;
            ty_buf_append(&b, p, (size_t)(q - p));
            p = q;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            size_t n = strspn(p, "-+0123456789.eE");
            if (strcspn(p, ".eE") < n) {
                put_json_real(&b, strtod(p, NULL));
            } else {
                ty_buf_append(&b, p, n);
            }
            p += n;
        } else {
            size_t n = strcspn(p, "\"-0123456789");
            ty_buf_append(&b, p, n);
            p += n;
        }
    }
    return ty_buf_take(&b);
}
