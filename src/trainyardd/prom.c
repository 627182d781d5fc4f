/* SPDX-License-Identifier: Apache-2.0
 * prom.c: the Prometheus text exposition format (version 0.0.4) written into a buffer; the
 * rules are in prom.h. */
#include "prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"

void tyd_prom_value(struct ty_buf *b, double v)
{
    char text[40];

    if (isnan(v)) {
        ty_buf_puts(b, "NaN");
        return;
    }
    if (isinf(v)) {
        ty_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    /* Whole numbers in full ("1048576000", not "1.048576e+09"); others as the shortest %g
     * text that reads back as @v: bounds as people write them ("0.005", never
     * "0.0050000000000000001"). */
    if (v == floor(v) && fabs(v) <= 9007199254740992.0) { /* 2^53: exact */
        (void)snprintf(text, sizeof(text), "%.0f", v);
        ty_buf_puts(b, text);
        return;
    }
    ty_buf_puts(b, ty_fmt_double(v, text));
}

/* Append @s with a backslash and a line feed escaped, and a double quote too when @quote. */
static void escape(struct ty_buf *b, const char *s, int quote)
{
    for (; s && *s; s++) {
        size_t n = strcspn(s, quote ? "\\\"\n" : "\\\n");
        ty_buf_append(b, s, n);
        s += n;
        if (!*s)
            break;
        ty_buf_putc(b, '\\');
        ty_buf_putc(b, *s == '\n' ? 'n' : *s);
    }
}

void tyd_prom_escape_label(struct ty_buf *b, const char *s)
{
    escape(b, s, 1);
}

void tyd_prom_family(struct ty_buf *b, const char *name, enum tyd_prom_type type, const char *help)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};

    ty_buf_printf(b, "# HELP %s ", name);
    escape(b, help, 0);
    ty_buf_printf(b, "\n# TYPE %s %s\n", name, types[type]);
}

/* Append "{a="x",b="y"" for @labels without the closing brace ("" when none and !@more;
 * "{" when none and @more: the caller adds one label of its own and the brace). */
static void open_labels(struct ty_buf *b, const struct tyd_prom_label *labels, int more)
{
    const char *sep = "{";

    for (; labels && labels->name; labels++) {
        ty_buf_printf(b, "%s%s=\"", sep, labels->name);
        escape(b, labels->value, 1);
        ty_buf_putc(b, '"');
        sep = ",";
    }
    if (more && sep[0] == '{')
        ty_buf_putc(b, '{');
    else if (more)
        ty_buf_putc(b, ',');
}

/* Append "@name_bucket{...,le="@bound"} @count". */
static void bucket(struct ty_buf *b,
                   const char *name,
                   const struct tyd_prom_label *labels,
                   double bound,
                   uint64_t count)
{
    ty_buf_printf(b, "%s_bucket", name);
    open_labels(b, labels, 1);
    ty_buf_puts(b, "le=\"");
    tyd_prom_value(b, bound);
    ty_buf_printf(b, "\"} %llu\n", (unsigned long long)count);
}

/* Append "@name@suffix{...} " (no labels: "@name@suffix "). */
static void
series(struct ty_buf *b, const char *name, const char *suffix, const struct tyd_prom_label *labels)
{
    ty_buf_printf(b, "%s%s", name, suffix);
    open_labels(b, labels, 0);
    if (labels && labels->name)
        ty_buf_putc(b, '}');
    ty_buf_putc(b, ' ');
}

void tyd_prom_sample(struct ty_buf *b,
                     const char *name,
                     const struct tyd_prom_label *labels,
                     double value)
{
    series(b, name, "", labels);
    tyd_prom_value(b, value);
    ty_buf_putc(b, '\n');
}

void tyd_prom_histogram(struct ty_buf *b,
                        const char *name,
                        const struct tyd_prom_label *labels,
                        const double *bounds,
                        const uint64_t *counts,
                        size_t n,
                        double sum)
{
    uint64_t total = 0;

    for (size_t i = 0; i < n; i++) {
        total += counts[i];
        bucket(b, name, labels, bounds[i], total);
    }
    if (n == 0 || !(isinf(bounds[n - 1]) && bounds[n - 1] > 0))
        bucket(b, name, labels, INFINITY, total);
    series(b, name, "_sum", labels);
    tyd_prom_value(b, sum);
    ty_buf_putc(b, '\n');
    series(b, name, "_count", labels);
    ty_buf_printf(b, "%llu\n", (unsigned long long)total);
}
