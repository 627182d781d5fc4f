/* SPDX-License-Identifier: Apache-2.0
 * linalg.c: the dense linear algebra of the Gaussian process (linalg.h): Cholesky
 * factorisation, forward and back substitution, and the inverse from a factor's inverse, in
 * fixed summation orders so that results are the same bits however they are grouped. */
#include "linalg.h"

#include <errno.h>
#include <math.h>

/* The dot products below are chains of dependent additions, each in one fixed order (k
 * ascending) so that results do not depend on how they are computed: no reassociation, so no
 * vectors. Their speed is the adder's latency, not its throughput; so the loops run four
 * independent chains at once (four rows, or four columns), each still summed in its own order:
 * the same bits as one chain at a time, three to four times faster. */

/* Rows @i0 .. @n - 1 of column @j of the factor: a[i][j] = (a[i][j] - sum_k<j a[i][k] a[j][k])
 * / @d. */
static void chol_column(double *a, size_t n, size_t j, size_t i0, double d)
{
    const double *rj = a + j * n;
    size_t i = i0;

    for (; i + 4 <= n; i += 4) {
        double *r0 = a + i * n, *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
        double s0 = r0[j], s1 = r1[j], s2 = r2[j], s3 = r3[j];
        for (size_t k = 0; k < j; k++) {
            double v = rj[k];
            s0 -= r0[k] * v;
            s1 -= r1[k] * v;
            s2 -= r2[k] * v;
            s3 -= r3[k] * v;
        }
        r0[j] = s0 / d, r1[j] = s1 / d, r2[j] = s2 / d, r3[j] = s3 / d;
    }
    for (; i < n; i++) {
        double *ri = a + i * n, s = ri[j];
        for (size_t k = 0; k < j; k++)
            s -= ri[k] * rj[k];
        ri[j] = s / d;
    }
}

int ty_cholesky(double *a, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        double *rj = a + j * n, d = rj[j];
        for (size_t k = 0; k < j; k++)
            d -= rj[k] * rj[k];
        if (!(d > 0) || !isfinite(d))
            return -EDOM;
        d = sqrt(d);
        rj[j] = d;
        chol_column(a, n, j, j + 1, d);
        for (size_t k = j + 1; k < n; k++)
            rj[k] = 0;
    }
    return 0;
}

/* Rows @i0 .. @n - 1 of forward substitution from row @from, one at a time. */
static void solve_tail(const double *l, size_t n, size_t from, size_t i0, double *b)
{
    for (size_t i = i0; i < n; i++) {
        const double *ri = l + i * n;
        double s = b[i];
        for (size_t k = from; k < i; k++)
            s -= ri[k] * b[k];
        b[i] = s / ri[i];
    }
}

/* Four rows at a time: their sums over the columns before the four run together, then each
 * row takes its last terms in order. */
void ty_solve_lower_from(const double *l, size_t n, size_t from, double *b)
{
    size_t i = from;

    for (; i + 4 <= n; i += 4) {
        const double *r0 = l + i * n, *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
        double s0 = b[i], s1 = b[i + 1], s2 = b[i + 2], s3 = b[i + 3];
        for (size_t k = from; k < i; k++) {
            double v = b[k];
            s0 -= r0[k] * v;
            s1 -= r1[k] * v;
            s2 -= r2[k] * v;
            s3 -= r3[k] * v;
        }
        b[i] = s0 = s0 / r0[i];
        s1 -= r1[i] * s0;
        b[i + 1] = s1 = s1 / r1[i + 1];
        s2 -= r2[i] * s0;
        s2 -= r2[i + 1] * s1;
        b[i + 2] = s2 = s2 / r2[i + 2];
        s3 -= r3[i] * s0;
        s3 -= r3[i + 1] * s1;
        s3 -= r3[i + 2] * s2;
        b[i + 3] = s3 / r3[i + 3];
    }
    solve_tail(l, n, from, i, b);
}

void ty_solve_lower_2(const double *l, size_t n, double *b, double *c)
{
    size_t i = 0;

    for (; i + 4 <= n; i += 4) {
        const double *r0 = l + i * n, *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
        double s0 = b[i], s1 = b[i + 1], s2 = b[i + 2], s3 = b[i + 3];
        double t0 = c[i], t1 = c[i + 1], t2 = c[i + 2], t3 = c[i + 3];
        for (size_t k = 0; k < i; k++) {
            double v = b[k], w = c[k];
            s0 -= r0[k] * v;
            t0 -= r0[k] * w;
            s1 -= r1[k] * v;
            t1 -= r1[k] * w;
            s2 -= r2[k] * v;
            t2 -= r2[k] * w;
            s3 -= r3[k] * v;
            t3 -= r3[k] * w;
        }
        b[i] = s0 = s0 / r0[i];
        c[i] = t0 = t0 / r0[i];
        s1 -= r1[i] * s0;
        t1 -= r1[i] * t0;
        b[i + 1] = s1 = s1 / r1[i + 1];
        c[i + 1] = t1 = t1 / r1[i + 1];
        s2 -= r2[i] * s0;
        s2 -= r2[i + 1] * s1;
        t2 -= r2[i] * t0;
        t2 -= r2[i + 1] * t1;
        b[i + 2] = s2 = s2 / r2[i + 2];
        c[i + 2] = t2 = t2 / r2[i + 2];
        s3 -= r3[i] * s0;
        s3 -= r3[i + 1] * s1;
        s3 -= r3[i + 2] * s2;
        t3 -= r3[i] * t0;
        t3 -= r3[i + 1] * t1;
        t3 -= r3[i + 2] * t2;
        b[i + 3] = s3 / r3[i + 3];
        c[i + 3] = t3 / r3[i + 3];
    }
    if (i < n) { /* the last rows, one vector then the other */
        solve_tail(l, n, 0, i, b);
        solve_tail(l, n, 0, i, c);
    }
}

void ty_solve_lower(const double *l, size_t n, double *b)
{
    ty_solve_lower_from(l, n, 0, b);
}

void ty_solve_lower_t(const double *l, size_t n, double *b)
{
    for (size_t i = n; i-- > 0;) {
        double s = b[i] / l[i * n + i];
        b[i] = s;
        for (size_t k = 0; k < i; k++)
            b[k] -= l[i * n + k] * s;
    }
}

/* Four j at a time (see chol_column). */
void ty_kinv_lower(const double *w, size_t n, double *kinv)
{
    for (size_t i = 0; i < n; i++) {
        const double *a = w + i * n;
        size_t j = 0;
        for (; j + 4 <= i + 1; j += 4) {
            const double *b0 = w + j * n, *b1 = b0 + n, *b2 = b1 + n, *b3 = b2 + n;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (size_t k = i; k < n; k++) {
                double v = a[k];
                s0 += v * b0[k];
                s1 += v * b1[k];
                s2 += v * b2[k];
                s3 += v * b3[k];
            }
            kinv[i * n + j] = s0, kinv[i * n + j + 1] = s1;
            kinv[i * n + j + 2] = s2, kinv[i * n + j + 3] = s3;
        }
        for (; j <= i; j++) {
            const double *b = w + j * n;
            double s = 0;
            for (size_t k = i; k < n; k++)
                s += a[k] * b[k];
            kinv[i * n + j] = s;
        }
    }
}
