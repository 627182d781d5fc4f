/* SPDX-License-Identifier: Apache-2.0
 * hypertune.h: reading the metric file of a hyperparameter-tuning trial.
 *
 * A training program reports its objective through Google's cloudml-hypertune library
 * (hypertune.HyperTune().report_hyperparameter_tuning_metric). The library keeps the last
 * 100 reports and, on every report, rewrites the whole file named by CLOUD_ML_HP_METRIC_FILE
 * (default TY_HYPERTUNE_DEFAULT_FILE, inside the container) with one JSON object per line,
 * json.dumps(record, sort_keys=True):
 *     {"checkpoint_path": "", "global_step": "1000", "timestamp": 1525851440.123456,
 *      "training/hptuning/metric": "0.987", "trial": "1"}
 * The metric and global_step are strings of numbers; the key of the metric is the job's
 * hyperparameterMetricTag (TY_HYPERTUNE_DEFAULT_TAG when none). The trial runner reads this
 * file once per trial (while it runs and when it ends) and gives its text to
 * ty_hypertune_parse; the file is written by untrusted code, so anything in it that is not a
 * well-formed report is skipped, never an error. This module only parses text: no I/O. */
#ifndef TY_HYPERTUNE_H
#define TY_HYPERTUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Where cloudml-hypertune writes when CLOUD_ML_HP_METRIC_FILE is not set. */
#define TY_HYPERTUNE_DEFAULT_FILE "/tmp/hypertune/output.metrics"
/* The metric key when the job names no hyperparameterMetricTag (and the library's default). */
#define TY_HYPERTUNE_DEFAULT_TAG "training/hptuning/metric"
/* The reports cloudml-hypertune keeps in its file, and a trial's allMetrics at most. */
#define TY_HYPERTUNE_KEEP 100
/* Largest metric file parsed: 1 MiB (100 records of a sane tag are a few KiB). */
#define TY_HYPERTUNE_MAX_BYTES (1024u * 1024)

/* One report of the tag. */
struct ty_hp_measurement {
    double value;     /* finite */
    int64_t step;     /* "global_step"; 0 when absent or null */
    double timestamp; /* "timestamp" (seconds since the epoch); 0 when absent or null */
};

/* Parse @len bytes of a metric file for @tag (NULL or "" = TY_HYPERTUNE_DEFAULT_TAG). Each
 * complete line (ending in '\n', a '\r' before it ignored; also a last line without one when
 * @final) that is a JSON object with @tag becomes a measurement, in file order. The value may
 * be a JSON string holding a number (the library's form) or a JSON number; "global_step" an
 * integer or a string of one; "timestamp" a number or a string of one. Lines that are blank,
 * partial (still being written), not JSON, not objects, without the tag, with a
 * non-finite/non-numeric value, or with a global_step present but not a whole number of at
 * least 0, or a timestamp present but not a number, are
 * skipped and counted in *skipped (may be NULL) — never an error. When the tag's last report
 * is a string of a number that is not finite ("nan", "inf": a training that diverged), it
 * goes to *@last_nonfinite (may be NULL), its value that number; else *@last_nonfinite is all
 * zeros. More than TY_HYPERTUNE_MAX_BYTES is refused with -E2BIG. Returns 0 with *ret (caller
 * frees; NULL when *n == 0) and *n. */
int ty_hypertune_parse(const char *text,
                       size_t len,
                       const char *tag,
                       bool final,
                       struct ty_hp_measurement **ret,
                       size_t *n,
                       size_t *skipped,
                       struct ty_hp_measurement *last_nonfinite,
                       struct ty_error *err);

/* The final metric of a trial: the last measurement (AI Platform's finalMetric is "the final
 * objective metric seen"). Copies it to *out (may be NULL); false when @n is 0. */
bool ty_hypertune_final(const struct ty_hp_measurement *m, size_t n, struct ty_hp_measurement *out);

#endif
