/* SPDX-License-Identifier: Apache-2.0
 * prom.h: writing the Prometheus text exposition format, version 0.0.4, into a buffer: a
 * metric family's "# HELP" and "# TYPE" lines, samples with escaped label values, and
 * histograms (cumulative _bucket lines with an "le" label, _sum, _count). metrics.c writes
 * GET /metrics with it; tests/unit/test-prom.c checks it. Pure: no I/O, no state.
 *
 * The caller keeps the format's rules that are its own: metric and label names match
 * [a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]*, every sample of a family follows its
 * header (a family's lines are not interleaved with another's), and no two samples of a
 * family have the same labels. Label values are any UTF-8 text. */
#ifndef TYD_PROM_H
#define TYD_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* The Content-Type of the format. */
#define TYD_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum tyd_prom_type { TYD_PROM_COUNTER, TYD_PROM_GAUGE, TYD_PROM_HISTOGRAM };

/* One label of a sample. Lists of labels end with an entry whose name is NULL. */
struct tyd_prom_label {
    const char *name;
    const char *value;
};
/* A list of labels for the calls below: TYD_PROM_LABELS({"project", p}, {"state", s}). */
#define TYD_PROM_LABELS(...) ((const struct tyd_prom_label[]){__VA_ARGS__, {NULL, NULL}})
/* No labels. */
#define TYD_PROM_NO_LABELS ((const struct tyd_prom_label[]){{NULL, NULL}})

/* Append the header of family @name: "# HELP @name @help" (a backslash and a line feed of
 * @help escaped as \\ and \n) and "# TYPE @name counter|gauge|histogram". */
void tyd_prom_family(struct ty_buf *b, const char *name, enum tyd_prom_type type, const char *help);

/* Append "@name{label="value",...} @value\n" ("@name @value\n" without labels); in values a
 * backslash, a double quote and a line feed are escaped as \\, \" and \n. */
void tyd_prom_sample(struct ty_buf *b,
                     const char *name,
                     const struct tyd_prom_label *labels,
                     double value);

/* Append the samples of histogram @name with @labels: for each of the @n upper bounds
 * @bounds (increasing) "@name_bucket{...,le="BOUND"}" with the observations <= the bound
 * (the running sum of @counts, which holds the observations of each bucket alone: above the
 * bound before, at most its own); a bucket le="+Inf" with them all when the last bound is
 * not +Inf (the caller then has counted none above it); "@name_sum" @sum and "@name_count"
 * (the +Inf bucket's count). */
void tyd_prom_histogram(struct ty_buf *b,
                        const char *name,
                        const struct tyd_prom_label *labels,
                        const double *bounds,
                        const uint64_t *counts,
                        size_t n,
                        double sum);

/* Append @v as the format writes a value: "+Inf", "-Inf", "NaN", or the shortest decimal
 * text that reads back as @v ("3", "0.25", "1e+21"). */
void tyd_prom_value(struct ty_buf *b, double v);
/* Append @s escaped as a label value (\\, \", \n). */
void tyd_prom_escape_label(struct ty_buf *b, const char *s);

#endif
