/* SPDX-License-Identifier: Apache-2.0
 * study-int.h: the state of a study (study.h), shared by study.c (running the trials and
 * deciding the job's result) and study-metrics.c (a trial's metric file: read while it runs
 * for early stopping, and at its end for its result). Not for use elsewhere. */
#ifndef TY_STUDY_INT_H
#define TY_STUDY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fdutil.h"
#include "loop.h"
#include "stoprule.h"
#include "study.h"
#include "supervise.h"
#include "trials.h"
#include "tuner.h"

struct trial_run {
    struct ty_study *st;
    struct ty_study_trial t;
    struct ty_supervisor *sup;         /* NULL once reaped */
    char *metric_dir;                  /* <state_dir>/trials/<trial> */
    char **args;                       /* --name=value */
    char **env;                        /* CLOUD_ML_HP_METRIC_TAG=... */
    bool ended;                        /* the supervisor's run ended; not yet reaped when sup set */
    bool replicas_changed;             /* a replica started or ended since attempt_status */
    int slot;                          /* the trial slot it holds while sup is set */
    struct ty_file_stamp metric_stamp; /* the metric file as last read while running */
    /* The metric file's last report of the tag when its value was not finite ("nan": value
     * NaN), else all zeros: a trial whose training diverged has no result */
    struct ty_hp_measurement nonfinite;
    size_t skipped_lines; /* of the metric file at its last read: not usable reports */
    char *text;           /* ty_study_trial_pretty at text_depth; NULL: changed */
    int text_depth;
};

struct ty_study {
    struct ty_loop *loop;
    const struct ty_job *job;
    struct ty_study_options opts;
    struct ty_tuner *tuner;
    const char *tag;
    struct trial_run **trials;
    size_t n_trials;
    size_t n_failed, n_succeeded;
    enum ty_job_state state;
    bool stopping;     /* no new trials */
    bool exhausted;    /* the tuner has no more */
    bool tuner_failed; /* ... because it failed (its error logged) */
    bool cancelled;
    bool failed_limit;
    bool done;
    bool started; /* ty_study_start was called */
    uint64_t pump_timer;
    uint64_t notify_timer;          /* on_trial is due (notify_trial) */
    uint64_t replica_timer;         /* gathers trials' replica changes (TRIAL_REPLICA_USEC) */
    struct trial_run *notify_last;  /* the trial that changed last, told by that call */
    struct ty_stop_rule *stop_rule; /* enableTrialEarlyStopping, else NULL */
    uint64_t poll_timer;
    uint64_t wait_timer;     /* scheduling.maxWaitTime, until a trial is RUNNING */
    uint64_t deadline_timer; /* scheduling.maxRunningTime, from the first trial RUNNING */
    bool timed_out;          /* ... which passed: cancelled, and the job FAILS */
    char *cancel_error;      /* the errorMessage of a cancel that was not the user's, or NULL */
    char *error;             /* the job's errorMessage, once decided */
    struct ty_study_resume_stats resumed;
};

/* The trial's record changed: its kept text is rendered again at the next write. */
void study_trial_changed(struct trial_run *tr);

/* ---- study-metrics.c ---- */

/* Early stopping, a loop timer (@data: the study): read the running trials' metric files that
 * changed since last time, stop those the rule says are behind, and come again. */
void study_poll_trials(struct ty_loop *loop, void *data);
/* The result of a trial whose run ended as @state: a run that SUCCEEDED is a failed trial
 * when its final metric cannot be read, is missing or is not finite (*@error then says why,
 * in @msg, @n bytes). Reads the metric file either way, but only a succeeded trial has a
 * result (finalMetric and allMetrics). Returns the trial's state. */
enum ty_job_state study_judge_trial(
    struct trial_run *tr, enum ty_job_state state, const char **error, char *msg, size_t n);

#endif
