/* SPDX-License-Identifier: Apache-2.0
 * test-tuner-trust.c: the default algorithm's trust region (tuner-trust.c), replayed from
 * hand-made trial lists: the opening design is not judged and centres the region on its best;
 * three successes in a row double the side (up to 1.6), as many failures in a row as
 * dimensions (at least 4) halve it; pending and failed trials count for nothing; below the
 * smallest side the run restarts (no centre until a new trial succeeds, then that one); the
 * goal's orientation; and the box: sides in proportion to the length-scales (geometric mean
 * 1), clipped to the unit cube, one-hot dimensions left whole. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "spec.h"
#include "tap.h"
#include "tuner-internal.h"

/* A tuner whose trials have the objectives @y (NAN: failed, INFINITY: pending). */
static struct ty_tuner *tuner_of(struct ty_hp_spec *spec, const double *y, size_t n)
{
    struct ty_tuner *t = xcalloc(1, sizeof(*t));

    t->spec = spec;
    t->trials = xcalloc(n ? n : 1, sizeof(*t->trials));
    t->n_trials = n;
    for (size_t i = 0; i < n; i++) {
        t->trials[i].state = isnan(y[i])   ? TY_TRIAL_FAILED
                             : isinf(y[i]) ? TY_TRIAL_PENDING
                                           : TY_TRIAL_SUCCEEDED;
        t->trials[i].objective = isfinite(y[i]) ? y[i] : 0;
    }
    return t;
}

static void tuner_free(struct ty_tuner *t)
{
    free(t->trials);
    free(t);
}

/* Replay @n objectives @y with an opening design of @n_init, in @dim dimensions. */
static struct ty_trust replay(bool maximize, const double *y, size_t n, size_t n_init, size_t dim)
{
    struct ty_hp_spec spec = {.maximize = maximize};
    struct ty_tuner *t = tuner_of(&spec, y, n);
    struct ty_trust tr;

    ty_trust_replay(t, n_init, dim, &tr);
    tuner_free(t);
    return tr;
}

static void test_replay(void)
{
    double y[64];
    struct ty_trust tr;
    size_t n;

    /* the design: not judged, the best of it is the centre */
    double design[] = {5, 3, 4, 9, 7};
    tr = replay(false, design, 5, 5, 2);
    ok(tr.len == 0.8 && tr.centre == 1 && tr.run_start == 0 && tr.restarts == 0,
       "after the design: side 0.8, centred on its best (trial 1)");
    tr = replay(true, design, 5, 5, 2);
    ok(tr.centre == 3, "MAXIMIZE: centred on the highest (trial 3)");

    /* three successes double the side; six, capped at 1.6 */
    memcpy(y, design, sizeof(design));
    y[5] = 2, y[6] = 1, y[7] = 0.5;
    tr = replay(false, y, 8, 5, 2);
    ok(tr.len == 1.6 && tr.centre == 7, "three successes in a row: side 1.6, centred on the last");
    y[8] = 0.25, y[9] = 0.125, y[10] = 0.0625;
    tr = replay(false, y, 11, 5, 2);
    ok(tr.len == 1.6, "three more: still 1.6 (the largest)");

    /* a gain below 1e-3 of the best is no success: four failures halve (2 dimensions) */
    n = 5;
    memcpy(y, design, sizeof(design));
    y[n++] = 2.9999; /* better, but by less than the margin */
    y[n++] = 8;
    y[n++] = NAN;      /* failed: nothing */
    y[n++] = INFINITY; /* pending: nothing */
    y[n++] = 6;
    tr = replay(false, y, n, 5, 2);
    ok(tr.len == 0.8 && tr.centre == 5,
       "three failures (one a tiny gain), a failed and a pending "
       "trial: side unchanged, centred on the tiny gain");
    y[n++] = 7;
    tr = replay(false, y, n, 5, 2);
    ok(tr.len == 0.4, "the fourth failure halves the side");
    tr = replay(false, y, n, 5, 6);
    ok(tr.len == 0.8, "in 6 dimensions four failures are not enough");

    /* failures until the side is below 0.5^7: a new run from the next trial */
    n = 5;
    memcpy(y, design, sizeof(design));
    for (int k = 0; k < 4 * 7; k++)
        y[n++] = 10;
    tr = replay(false, y, n, 5, 2);
    ok(tr.restarts == 1 && tr.centre == SIZE_MAX && tr.run_start == n && tr.len == 0.8,
       "28 failures: the run restarted (no centre yet, from trial %zu, side 0.8)",
       n);
    y[n++] = INFINITY;
    y[n++] = 50;
    tr = replay(false, y, n, 5, 2);
    ok(tr.restarts == 1 && tr.centre == n - 1 && tr.run_start == n - 2,
       "the new run's first result centres it, however poor");
}

static void test_box(void)
{
    struct ty_trust tr = {.len = 0.4};
    double centre[] = {0.5, 0.05, 1, 0}, lo[4], hi[4];
    double log_ls[] = {log(0.1), log(0.4), 0, 0};
    bool numeric[] = {true, true, false, false};

    ty_trust_box(&tr, centre, log_ls, numeric, 4, lo, hi);
    ok(fabs(lo[0] - 0.4) < 1e-12 && fabs(hi[0] - 0.6) < 1e-12,
       "a short length-scale: a narrow side (0.4 x 0.1/0.2 = 0.2)");
    ok(lo[1] == 0 && fabs(hi[1] - 0.45) < 1e-12, "a long one: a wide side (0.8), clipped at 0");
    ok(lo[2] == 0 && hi[2] == 1 && lo[3] == 0 && hi[3] == 1, "one-hot dimensions: [0, 1]");
}

int main(void)
{
    plan(12);
    test_replay();
    test_box();
    return done_testing();
}
