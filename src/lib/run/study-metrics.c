/* SPDX-License-Identifier: Apache-2.0
 * study-metrics.c: a trial's metric file (study-int.h): read while the trial runs, for the
 * median stopping rule (enableTrialEarlyStopping), and when it ends, for its result. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "hypertune.h"
#include "json.h"
#include "macro.h"
#include "study-int.h"
#include "timeutil.h"

/* Read the trial's metric file into t.metrics (a missing file is no report; of a file over
 * TY_HYPERTUNE_MAX_BYTES, its last reports) and feed the reports to the stopping rule. The
 * trial's program writes the file: a link or FIFO planted there is refused, never followed or
 * waited on (ty_read_file_tail). @final: the trial has ended (a last line without '\n'
 * counts, and the final metric is set). Returns 0, or -errno with err saying why the file
 * could not be used. */
static int read_metrics(struct trial_run *tr, bool final, struct ty_error *err)
{
    _cleanup_free_ char *path = xasprintf("%s/output.metrics", tr->metric_dir);
    _cleanup_free_ char *text = NULL;
    struct ty_hp_measurement *m = NULL;
    size_t len = 0, n = 0;
    int r;

    r = ty_read_file_tail(path, TY_HYPERTUNE_MAX_BYTES, &text, &len, NULL, err);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    r = ty_hypertune_parse(
        text, len, tr->st->tag, final, &m, &n, &tr->skipped_lines, &tr->nonfinite, err);
    if (r < 0)
        return r;
    free(tr->t.metrics);
    tr->t.metrics = m;
    tr->t.n_metrics = n;
    if (tr->st->stop_rule)
        for (size_t i = 0; i < n; i++)
            (void)ty_stop_rule_report(
                tr->st->stop_rule, tr->t.trial_id, ty_stop_rule_step(m[i].step, i), m[i].value);
    if (final)
        tr->t.has_metric = ty_hypertune_final(m, n, &tr->t.final) && isfinite(tr->nonfinite.value);
    return 0;
}

/* Early stopping: read running trials' metric files that changed since last time and stop
 * those the rule says are behind. */
void study_poll_trials(struct ty_loop *loop, void *data)
{
    struct ty_study *st = data;

    st->poll_timer = 0;
    if (st->done)
        return;
    for (size_t i = 0; i < st->n_trials; i++) {
        struct trial_run *tr = st->trials[i];
        _cleanup_free_ char *path = NULL;
        struct ty_stop_decision d;
        struct ty_error e = {0};
        char why[512];

        if (!tr->sup || tr->ended || tr->t.stopped_early || tr->t.state != TY_STATE_RUNNING)
            continue;
        path = xasprintf("%s/output.metrics", tr->metric_dir);
        if (!ty_file_changed(path, &tr->metric_stamp))
            continue;
        if (read_metrics(tr, false, &e) < 0 ||
            !ty_stop_rule_check(st->stop_rule, tr->t.trial_id, &d))
            continue;
        char best[32], median[32]; /* running averages: 6 digits say it (not 0.1125000000002) */
        (void)snprintf(best, sizeof(best), "%.6g", d.best);
        (void)snprintf(median, sizeof(median), "%.6g", d.median);
        (void)snprintf(why,
                       sizeof(why),
                       "Stopping trial %s early: its best %s by step %" PRId64
                       " (%s) is worse than the median (%s) of %zu completed trials' running "
                       "averages.",
                       tr->t.trial_id,
                       st->tag,
                       d.step,
                       best,
                       median,
                       d.n_reference);
        if (ty_supervisor_stop_early(tr->sup, why)) { /* which logs why */
            tr->t.stopped_early = true;
            study_trial_changed(tr); /* told when it ends */
        }
    }
    st->poll_timer = ty_loop_add_timer(
        st->loop,
        ty_mono_usec() + (st->opts.poll_usec > 0 ? st->opts.poll_usec : TY_STUDY_POLL_USEC),
        study_poll_trials,
        st);
}

enum ty_job_state study_judge_trial(
    struct trial_run *tr, enum ty_job_state state, const char **error, char *msg, size_t n)
{
    struct ty_error e = {0};

    if (state != TY_STATE_SUCCEEDED) {
        (void)read_metrics(tr, true, &e);
        tr->t.has_metric = false;
        return state;
    }
    if (read_metrics(tr, true, &e) < 0)
        (void)snprintf(msg,
                       n,
                       "The trial succeeded but its metric file could not be read: %s",
                       ty_error_msg(&e));
    else if (!isfinite(tr->nonfinite.value))
        (void)snprintf(msg,
                       n,
                       "The trial succeeded but its last report of the metric '%s' (step %" PRId64
                       ") is %s, not a number the search can use: its training may have "
                       "diverged.",
                       tr->st->tag,
                       tr->nonfinite.step,
                       isnan(tr->nonfinite.value) ? "NaN"
                       : tr->nonfinite.value > 0  ? "Infinity"
                                                  : "-Infinity");
    else if (!tr->t.has_metric && tr->skipped_lines > 0)
        (void)snprintf(msg,
                       n,
                       "The trial succeeded but reported no usable value of the metric '%s' in "
                       "%s/output.metrics: none of its %zu lines is a JSON object with '%s' a "
                       "finite number (or a string of one), global_step a whole number of at "
                       "least 0 and timestamp a number, where present.",
                       tr->st->tag,
                       tr->metric_dir,
                       tr->skipped_lines,
                       tr->st->tag);
    else if (!tr->t.has_metric)
        (void)snprintf(msg,
                       n,
                       "The trial succeeded but reported no value of the metric '%s' in "
                       "%s/output.metrics.",
                       tr->st->tag,
                       tr->metric_dir);
    else
        return TY_STATE_SUCCEEDED;
    *error = msg;
    return TY_STATE_FAILED;
}
