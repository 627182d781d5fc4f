/* SPDX-License-Identifier: Apache-2.0
 * stoprule.h: automated early stopping of tuning trials (enableTrialEarlyStopping) by the
 * median stopping rule of Google Vizier (Golovin et al., KDD 2017):
 *
 *   stop trial t at step s when its best objective reported up to s is strictly worse than
 *   the median, over the reference trials, of their running averages up to s.
 *
 * The running average of a reference trial up to s is the mean of its reports at steps <= s;
 * a reference trial with no report at or before s takes no part. The reference trials are
 * the trials that ran to their end and succeeded (never a trial that was itself stopped
 * early, so a stopped trial's short curve does not pull the median down). The rule decides
 * nothing until at least TY_STOP_MIN_REFERENCE reference trials take part at s.
 *
 * Steps are the reports' global_step; a caller whose reports carry no step numbers them by
 * their order (1, 2, ...). Everything here is pure bookkeeping: no I/O, no clock. */
#ifndef TY_STOPRULE_H
#define TY_STOPRULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fewest reference trials the median is taken over. */
#define TY_STOP_MIN_REFERENCE 3

struct ty_stop_rule;

/* What a decision was based on (ty_stop_rule_check). */
struct ty_stop_decision {
    int64_t step;       /* the trial's latest report's step */
    double best;        /* the trial's best value up to step */
    double median;      /* the median of the reference running averages at step */
    size_t n_reference; /* how many reference trials took part */
};

/* A rule for a study that maximises (@maximize) or minimises its objective. Never NULL. */
struct ty_stop_rule *ty_stop_rule_new(bool maximize);

/* Free (NULL-safe). */
void ty_stop_rule_free(struct ty_stop_rule *r);

/* The step a trial's @index-th report (from 0) stands at for the rule: its global_step, or,
 * when it has none (@step 0, what cloudml-hypertune writes without one), its position 1, 2,
 * ... among the trial's reports. The same for a running trial's metric file and a resumed
 * job's allMetrics. */
static inline int64_t ty_stop_rule_step(int64_t step, size_t index)
{
    return step > 0 ? step : (int64_t)index + 1;
}

/* Trial @trial_id starts again from nothing (a new attempt): its reports so far are
 * forgotten. No effect on a trial that has ended. */
void ty_stop_rule_restart(struct ty_stop_rule *r, const char *trial_id);

/* Record trial @trial_id's report of finite @value at @step (>= 0). Reports come in
 * increasing step order: one at a step not after the trial's last report is ignored (a
 * metric file read again holds the reports already seen), as is a non-finite value or a
 * report for a trial already ended. Returns true when the report was recorded. */
bool ty_stop_rule_report(struct ty_stop_rule *r, const char *trial_id, int64_t step, double value);

/* Trial @trial_id ended. When @reference (it ran to its end and succeeded) its reports join
 * the reference set; otherwise they are dropped. Unknown trials with @reference are added
 * without reports (they take no part). Idempotent per trial. */
void ty_stop_rule_end(struct ty_stop_rule *r, const char *trial_id, bool reference);

/* Whether running trial @trial_id should stop now, by the rule above at its latest report.
 * False for a trial without reports, an ended trial, or too few reference trials. On true,
 * *d (may be NULL) says why. */
bool ty_stop_rule_check(const struct ty_stop_rule *r,
                        const char *trial_id,
                        struct ty_stop_decision *d);

/* Whether trial @trial_id ended without joining the reference set (ty_stop_rule_end without
 * @reference: stopped by the rule, or failed). */
bool ty_stop_rule_dropped(const struct ty_stop_rule *r, const char *trial_id);

/* Number of reference trials so far. Exposed for tests. */
size_t ty_stop_rule_n_reference(const struct ty_stop_rule *r);

#endif
