/* SPDX-License-Identifier: Apache-2.0
 * linalg.h: small dense linear algebra for the Gaussian process (gp.c): Cholesky, triangular
 * solves, the inverse from a factor's inverse. Matrices are row-major, n × n. Each dot product
 * is summed in one fixed order (k ascending), so results are the same bits however many rows
 * or vectors are computed together. */
#ifndef TY_LINALG_H
#define TY_LINALG_H

#include <stddef.h>

/* Cholesky factorisation in place of the symmetric @n × @n matrix @a (row-major; only the lower
 * triangle is read): on success the lower triangle holds L with a = L Lᵀ and the strict upper
 * triangle is zeroed. Returns 0, or -EDOM when @a is not (numerically) positive definite, in
 * which case @a is partly overwritten. Exposed for tests. */
int ty_cholesky(double *a, size_t n);

/* Solve L x = b in place (@b becomes x) for the lower-triangular @n × @n factor @l. Exposed
 * for tests. */
void ty_solve_lower(const double *l, size_t n, double *b);

/* Solve Lᵀ x = b in place for the lower-triangular factor @l. Exposed for tests. */
void ty_solve_lower_t(const double *l, size_t n, double *b);

/* Forward substitution from row @from: b[i] = (b[i] - sum_{from<=k<i} l[i][k] b[k]) / l[i][i]
 * for i >= @from, in place (rows before it are not read). ty_solve_lower is @from 0. */
void ty_solve_lower_from(const double *l, size_t n, size_t from, double *b);

/* ty_solve_lower of @b and @c together (the same bits, about twice as fast). */
void ty_solve_lower_2(const double *l, size_t n, double *b, double *c);

/* kinv[i][j] = sum_k w[i][k] w[j][k] over k >= max(i, j), for j <= i (the lower triangle of
 * L^-T L^-1 when row c of @w, n × n, holds L^-1 e_c). */
void ty_kinv_lower(const double *w, size_t n, double *kinv);

#endif
