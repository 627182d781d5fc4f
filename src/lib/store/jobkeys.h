/* SPDX-License-Identifier: Apache-2.0
 * jobkeys.h: the keys of the REST Job resource as trainyardd serves it: ml v1's Job (with the
 * TrainingInput messages of schema.h and the output messages TrainingOutput,
 * HyperparameterOutput, ...) and trainyard's additions (stateReason, jobPosition,
 * attemptStatus). A key is a dotted path of names (trainingInput.masterConfig.imageUri,
 * labels.team, trainingOutput.trials.trialId: an array's elements are reached through its
 * name). Used by the list filter (unknown keys are a 400) and by the CLI's --format and
 * --sort-by (unknown keys are a usage error), both with a "did you mean". */
#ifndef TY_JOBKEYS_H
#define TY_JOBKEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* What a valid key is. */
/* What a leaf's value is, for comparisons that read it as more than text. */
enum ty_jobkey_value {
    TY_JOBKEY_TEXT,      /* a string, number or bool */
    TY_JOBKEY_TIMESTAMP, /* an RFC 3339 time (createTime, startTime, endTime, exitTime) */
    TY_JOBKEY_DURATION,  /* a google.protobuf.Duration, "3600s" (scheduling.maxRunningTime) */
};

struct ty_jobkey_info {
    const char *const *enums;   /* an enum: its value names (NULL-terminated), else NULL */
    bool is_array;              /* the key (or a key on its way) is a list */
    bool is_leaf;               /* a scalar, not an object */
    enum ty_jobkey_value value; /* a leaf's kind of value (a map's values are TEXT) */
    bool get_only;              /* shown by jobs.get only (transitions), not in a list */
};

/* Check the key of @n names @segs. Returns 0 with *info (may be NULL) filled, or -EINVAL with
 * err: "unknown key 'trainingInput.masterConfg': trainingInput has no key 'masterConfg' (did
 * you mean 'trainingInput.masterConfig'?); its keys are: args, ...". Any name is a key under
 * labels and the other maps (hyperparameters, replicaRestarts, webAccessUris). */
int ty_jobkey_check(const char *const *segs,
                    size_t n,
                    struct ty_jobkey_info *info,
                    struct ty_error *err);

/* ty_jobkey_check of a dotted @key ("a.b.c"; no indexes). */
int ty_jobkey_check_dotted(const char *key, struct ty_jobkey_info *info, struct ty_error *err);

/* Edit distance of @a and @b, ignoring ASCII case and '_' (for "did you mean"). */
size_t ty_jobkey_distance(const char *a, const char *b);

#endif
