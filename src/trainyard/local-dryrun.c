/* SPDX-License-Identifier: Apache-2.0
 * local-dryrun.c: `local train --dry-run` (local-dryrun.h): what every replica would be
 * started with, the first trial's of a tuning job, without starting anything. */
#include "local-dryrun.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "cli.h"
#include "hypertune.h"
#include "json.h"
#include "macro.h"
#include "runtimes.h"
#include "strv.h"
#include "study.h"
#include "supervise.h"
#include "trials.h"

#define PATH "local.train"

/* The trial's metric variables into each replica's "env" of the dry run's @out, as the trial
 * runner and the runtime set them (study.c; the file: in the trial's directory for a
 * process, the library's default path in a container, where that directory is mounted; on
 * Slurm a directory the node's launcher makes, so not shown). */
static void metric_env(const char *runtime,
                       const char *state_dir,
                       const struct ty_job *job,
                       const char *trial_id,
                       json_t *out)
{
    const char *tag = job->hp->metric_tag && *job->hp->metric_tag ? job->hp->metric_tag
                                                                  : TY_HYPERTUNE_DEFAULT_TAG;
    _cleanup_free_ char *file = NULL;
    size_t i;
    json_t *rep;

    if (strcmp(runtime, "container") == 0)
        file = xstrdup(TY_HYPERTUNE_DEFAULT_FILE);
    else if (strcmp(runtime, "process") == 0 && state_dir)
        file = xasprintf(
            "%s/jobs/local/%s/trials/%s/output.metrics", state_dir, job->job_id, trial_id);
    json_array_foreach(out, i, rep)
    {
        json_t *env = json_object_get(rep, "env");
        json_object_set_new(env, "CLOUD_ML_HP_METRIC_TAG", json_string(tag));
        if (file)
            json_object_set_new(env, "CLOUD_ML_HP_METRIC_FILE", json_string(file));
    }
}

int local_dry_run(const char *runtime,
                  const struct ty_env_options *env,
                  const char *state_dir,
                  const struct ty_job *job,
                  const struct local_previous *previous)
{
    _cleanup_json_ json_t *out = NULL;
    _cleanup_free_ char *text = NULL;
    _cleanup_strv_free_ char **trial_args = NULL;
    struct ty_trial_suggestion *trial = NULL;
    struct ty_error e = {0};
    int r = 0;

    if (job->hp) {
        r = ty_study_first_trial(job,
                                 ty_study_default_seed(job),
                                 previous->job,
                                 previous->earlier,
                                 &trial,
                                 &trial_args,
                                 &e);
        if (r == -ENOENT && job->hp->resume_job_id) {
            /* a valid job with nothing left to run: it would succeed (or fail) at once */
            fprintf(stderr,
                    "Dry run: no trial is left to run (the earlier trials of job %s%s cover "
                    "the grid): the job would end at once.\n",
                    job->hp->resume_job_id,
                    json_array_size(previous->earlier) ? " and the jobs it resumed" : "");
            return TY_EXIT_OK;
        }
        if (r >= 0) {
            _cleanup_free_ char *shown = ty_study_params_shown(trial->parameters);
            if (job->hp->resume_job_id) /* its trials are numbered on from the earlier ones */
                fprintf(stderr,
                        "Dry run of trial %s, the first of up to %d of this job (it resumes "
                        "job %s), with %s.\n",
                        trial->trial_id,
                        job->hp->max_trials,
                        job->hp->resume_job_id,
                        shown);
            else
                fprintf(stderr,
                        "Dry run of trial %s of up to %d, with %s.\n",
                        trial->trial_id,
                        job->hp->max_trials,
                        shown);
        }
    }
    if (r >= 0)
        r = ty_supervisor_dry_run(ty_runtime_find(runtime),
                                  job,
                                  trial ? trial->trial_id : NULL,
                                  trial_args,
                                  env,
                                  &out,
                                  &e);
    if (r >= 0 && trial)
        metric_env(runtime, state_dir, job, trial->trial_id, out);
    ty_trial_suggestions_free(trial, trial ? 1 : 0);
    if (r < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return TY_EXIT_USAGE;
    }
    text = ty_json_pretty(out);
    puts(text);
    return TY_EXIT_OK;
}
