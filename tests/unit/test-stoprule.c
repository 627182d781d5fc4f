/* SPDX-License-Identifier: Apache-2.0
 * test-stoprule.c: the median stopping rule (stoprule.c): when it decides, what the median
 * and the best value are, both goals, uneven steps, and the trials it leaves out. */
#include <math.h>
#include <stdio.h>

#include "stoprule.h"
#include "tap.h"

/* Reference trial @id with reports value(step) = a + b * step / 100 at steps 100..@last. */
static void reference(struct ty_stop_rule *r, const char *id, double a, double b, int64_t last)
{
    for (int64_t s = 100; s <= last; s += 100)
        ty_stop_rule_report(r, id, s, a + b * (double)s / 100);
    ty_stop_rule_end(r, id, true);
}

static void test_maximize(void)
{
    struct ty_stop_rule *r = ty_stop_rule_new(true);
    struct ty_stop_decision d = {0};

    /* Running averages at step 200: (0.5+0.6)/2=0.55, (0.6+0.7)/2=0.65, (0.7+0.8)/2=0.75 */
    ty_stop_rule_report(r, "9", 100, 0.1);
    ty_stop_rule_report(r, "9", 200, 0.2);
    reference(r, "1", 0.4, 0.1, 500);
    ok(!ty_stop_rule_check(r, "9", &d), "one reference trial: no decision");
    reference(r, "2", 0.5, 0.1, 500);
    ok(!ty_stop_rule_check(r, "9", &d), "two reference trials: no decision");
    reference(r, "3", 0.6, 0.1, 500);
    is_int(ty_stop_rule_n_reference(r), 3, "three reference trials");
    ok(ty_stop_rule_check(r, "9", &d), "best 0.2 < median 0.65: stop");
    is_int(d.step, 200, "decided at the trial's latest step");
    ok(fabs(d.best - 0.2) < 1e-12, "best so far 0.2");
    ok(fabs(d.median - 0.65) < 1e-12, "median of running averages 0.65");
    is_int(d.n_reference, 3, "three took part");

    /* A good trial: best 0.7 at step 200 beats the median. */
    ty_stop_rule_report(r, "10", 100, 0.3);
    ty_stop_rule_report(r, "10", 200, 0.7);
    ok(!ty_stop_rule_check(r, "10", NULL), "best 0.7 > median 0.65: continue");
    /* Equal to the median: not strictly worse. */
    ty_stop_rule_report(r, "11", 200, 0.65);
    ok(!ty_stop_rule_check(r, "11", NULL), "equal to the median: continue");
    /* The best, not the latest, value counts. */
    ty_stop_rule_report(r, "12", 100, 0.9);
    ty_stop_rule_report(r, "12", 200, 0.1);
    ok(!ty_stop_rule_check(r, "12", NULL), "a good earlier report keeps the trial");
    ty_stop_rule_free(r);
}

static void test_minimize_and_steps(void)
{
    struct ty_stop_rule *r = ty_stop_rule_new(false);
    struct ty_stop_decision d = {0};

    /* Losses; reference averages at step 50 use only reports at or before 50. */
    ty_stop_rule_report(r, "a", 10, 4.0);
    ty_stop_rule_report(r, "a", 60, 1.0);
    ty_stop_rule_end(r, "a", true);
    ty_stop_rule_report(r, "b", 20, 2.0);
    ty_stop_rule_report(r, "b", 40, 1.0);
    ty_stop_rule_end(r, "b", true);
    ty_stop_rule_report(r, "c", 30, 3.0);
    ty_stop_rule_end(r, "c", true);
    ty_stop_rule_report(r, "d", 70, 0.1); /* no report at or before 50: takes no part */
    ty_stop_rule_end(r, "d", true);
    /* At step 50: a -> 4.0, b -> 1.5, c -> 3.0; median 3.0. */
    ty_stop_rule_report(r, "x", 50, 3.5);
    ok(ty_stop_rule_check(r, "x", &d), "loss 3.5 > median 3.0: stop");
    ok(fabs(d.median - 3.0) < 1e-12, "median 3.0 over the trials with reports by step 50");
    is_int(d.n_reference, 3, "the trial with no early report took no part");
    ty_stop_rule_report(r, "y", 50, 2.5);
    ok(!ty_stop_rule_check(r, "y", NULL), "loss 2.5 < median 3.0: continue");
    /* Step 5: no reference trial has a report yet. */
    ty_stop_rule_report(r, "z", 5, 100.0);
    ok(!ty_stop_rule_check(r, "z", NULL), "before any reference report: no decision");
    /* At step 80 all four take part: a 2.5, b 1.5, c 3.0, d 0.1 -> median (1.5+2.5)/2. */
    ty_stop_rule_report(r, "z", 80, 2.1);
    ok(ty_stop_rule_check(r, "z", &d), "best loss 2.1 > median 2.0: stop");
    ok(fabs(d.median - 2.0) < 1e-12, "an even count: the mean of the middle two");
    is_int(d.n_reference, 4, "all four took part at step 80");
    ty_stop_rule_free(r);
}

static void test_reports_and_ends(void)
{
    struct ty_stop_rule *r = ty_stop_rule_new(true);

    ok(ty_stop_rule_report(r, "1", 10, 0.5), "first report recorded");
    ok(!ty_stop_rule_report(r, "1", 10, 0.9), "same step again: ignored");
    ok(!ty_stop_rule_report(r, "1", 5, 0.9), "an earlier step: ignored");
    ok(!ty_stop_rule_report(r, "1", 20, NAN), "NaN: ignored");
    ok(!ty_stop_rule_report(r, "1", 20, INFINITY), "infinity: ignored");
    ok(!ty_stop_rule_report(r, "1", -1, 0.5), "negative step: ignored");
    ok(ty_stop_rule_report(r, "1", 20, 0.6), "a later step: recorded");
    ty_stop_rule_end(r, "1", false);
    is_int(ty_stop_rule_n_reference(r), 0, "a trial that did not run to its end is no reference");
    ok(!ty_stop_rule_report(r, "1", 30, 0.7), "report after the end: ignored");
    ty_stop_rule_end(r, "1", true);
    is_int(ty_stop_rule_n_reference(r), 0, "ending twice changes nothing");
    ty_stop_rule_end(r, "2", true);
    ty_stop_rule_end(r, "3", true);
    ty_stop_rule_end(r, "4", true);
    is_int(ty_stop_rule_n_reference(r), 3, "references without reports are counted");
    ty_stop_rule_report(r, "5", 10, 0.0);
    ok(!ty_stop_rule_check(r, "5", NULL), "but take no part: no decision");
    ok(!ty_stop_rule_check(r, "6", NULL), "unknown trial: no decision");
    ok(!ty_stop_rule_check(r, "1", NULL), "ended trial: no decision");
    ok(ty_stop_rule_dropped(r, "1"), "a trial ended without its end is dropped");
    ok(!ty_stop_rule_dropped(r, "2"), "a reference is not");
    ok(!ty_stop_rule_dropped(r, "5"), "a running trial is not");
    ok(!ty_stop_rule_dropped(r, "6"), "an unknown trial is not");
    ty_stop_rule_free(r);
    ty_stop_rule_free(NULL);
}

int main(void)
{
    test_maximize();
    test_minimize_and_steps();
    test_reports_and_ends();
    return done_testing();
}
