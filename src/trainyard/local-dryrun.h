/* SPDX-License-Identifier: Apache-2.0
 * local-dryrun.h: `trainyard local train --dry-run`: every replica's command, arguments and
 * contract environment as JSON on stdout, for a tuning job its first trial's (with the metric
 * variables the trial runner sets), and nothing started. */
#ifndef TY_LOCAL_DRYRUN_H
#define TY_LOCAL_DRYRUN_H

#include "clusterenv.h"
#include "local-previous.h"
#include "spec.h"

/* The dry run of @job on runtime @runtime ("process", "container", "slurm") with the
 * environment options @env, a tuning job's first trial chosen as the real run would (after
 * @previous's trials when it resumes them), its metric file placed under @state_dir (may be
 * NULL). Prints the JSON and a line on stderr; returns the exit status. */
int local_dry_run(const char *runtime,
                  const struct ty_env_options *env,
                  const char *state_dir,
                  const struct ty_job *job,
                  const struct local_previous *previous);

#endif
