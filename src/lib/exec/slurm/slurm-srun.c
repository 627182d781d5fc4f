/* SPDX-License-Identifier: Apache-2.0
 * slurm-srun.c: the slurm runtime's Slurm job, started by one `srun` that asks for the
 * allocation and runs every launcher (trainyard-task) as a task of it, in one go
 * (docs/internals/slurm.md, "The allocation"): no batch job, so no wait for the scheduler's
 * backfill tick and no batch step before the tasks. srun stays on the runtime's loop for the
 * whole run (an asynchronous subprocess without deadline): the allocation is srun's, and Slurm
 * ends it when srun ends, by itself (its tasks, the launchers, exit when their connections to
 * the supervisor drop) or killed (slurmctld revokes an interactive allocation whose srun is
 * gone). So a supervisor killed with SIGKILL leaves no allocation behind, as the batch job it
 * replaces did not either.
 *
 * srun prints no job id: the id comes from the first launcher's HELLO (SLURM_JOB_ID) or from
 * squeue by the job's name, whichever answers first (slurm_job_known); the name carries a
 * random part, so it names this run's job only. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "macro.h"
#include "slurm-internal.h"
#include "slurm-refusal.h"
#include "strv.h"
#include "subproc.h"

/* Variables that would make srun run a step in an allocation the supervisor itself runs in
 * (a `local train` from an salloc shell) or shape the job, instead of asking for a new job:
 * srun reads them as defaults, sbatch did not. */
static const char *const srun_unset[] = {
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_NNODES",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_DISTRIBUTION",
};

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* The launcher: $TRAINYARD_TASK, else next to this program (the build puts every program
 * in build/bin, an install in one bin directory), else trainyard-task from PATH. */
static char *task_path(void)
{
    return ty_sibling_program("TRAINYARD_TASK", "trainyard-task", "trainyard-task");
}

/* Per-task requests: the largest of the replicas' (one component: Slurm 22.05's
 * heterogeneous jobs cannot share a node). */
static void add_resources(struct slurm_rt *s, char ***argv)
{
    struct slurm_shape sh;

    slurm_shape_of(s, &sh);
    ty_strv_push_take(argv, xasprintf("--cpus-per-task=%d", sh.cpus));
    if (sh.mem_asked)
        ty_strv_push_take(
            argv, xasprintf("--mem-per-cpu=%" PRId64 "M", (sh.mem_mb + sh.cpus - 1) / sh.cpus));
    if (sh.gpus > 0)
        ty_strv_push_take(argv, xasprintf("--gpus-per-task=%" PRId64, sh.gpus));
}

/* scheduling.maxRunningTime -> --time; scheduling.priority (0..1000, higher first) ->
 * --nice=1000-priority when set (a user may only lower a job's priority in Slurm). */
static void add_scheduling(const struct ty_job *job, char ***argv)
{
    json_t *sched = json_object_get(job->training_input, "scheduling");
    json_t *prio = json_object_get(sched, "priority");

    if (job->max_running_usec > 0) {
        /* Slurm counts --time from the allocation, trainyard maxRunningTime from RUNNING: the
         * launchers connecting and the images being pulled on the nodes come between, and
         * Slurm must not end the job first (trainyard ends it at the exact time itself). */
        int64_t secs = (job->max_running_usec + 999999) / 1000000 + TY_SLURM_TIME_HEADROOM_SEC;
        ty_strv_push_take(argv,
                          xasprintf("--time=%" PRId64 "-%02d:%02d:%02d",
                                    secs / 86400,
                                    (int)(secs % 86400 / 3600),
                                    (int)(secs % 3600 / 60),
                                    (int)(secs % 60)));
    }
    /* scheduling.priority 0 (the default) to 1000 is --nice 1000 to 0: a job that sets none
     * has priority 0, and must not go ahead of one that set 900 (nice 100) */
    ty_strv_push_take(
        argv,
        xasprintf("--nice=%d", 1000 - (json_is_integer(prio) ? (int)json_integer_value(prio) : 0)));
}

/* The job's name: trainyard-JOB[-TRIAL]-NONCE[-KEY]. Under the service it ends with the
 * supervisor's sweep key, so the service can cancel what a supervisor that died left in
 * Slurm's queue (ty_slurm_sweep); s->nonce makes it this run's alone (a retry's job has the same
 * job and trial), as cleanup and the state polls look the job up by name until they know its
 * id. */
static void set_job_name(struct slurm_rt *s)
{
    const struct ty_cluster_plan *plan = s->base.plan;
    const char *key = env_or(TY_SWEEP_ENV, NULL);

    (void)snprintf(s->job_name,
                   sizeof(s->job_name),
                   "trainyard-%s%s%s-%s%s%.8s",
                   plan->job->job_id,
                   plan->trial_id ? "-" : "",
                   plan->trial_id ? plan->trial_id : "",
                   s->nonce,
                   key ? "-" : "",
                   key ? key : "");
}

/* srun's command line for the run: with `env -u ...` first when one of srun_unset is set
 * (rarely: no exec of env otherwise), then srun with the job's requests and the launcher. */
static char **srun_argv(struct slurm_rt *s)
{
    char **argv = xcalloc(1, sizeof(char *));
    _cleanup_free_ char *task = task_path();
    const char *v;
    bool unset = false;

    for (size_t i = 0; i < TY_ARRAY_SIZE(srun_unset) && !unset; i++)
        unset = getenv(srun_unset[i]) != NULL;
    if (unset) {
        ty_strv_push(&argv, "env");
        for (size_t i = 0; i < TY_ARRAY_SIZE(srun_unset); i++) {
            ty_strv_push(&argv, "-u");
            ty_strv_push(&argv, srun_unset[i]);
        }
    }
    ty_strv_push(&argv, "srun");
    ty_strv_push(&argv, "--quiet");
    ty_strv_push_take(&argv, xasprintf("--job-name=%s", s->job_name));
    ty_strv_push_take(&argv, xasprintf("--ntasks=%zu", s->n));
    add_resources(s, &argv);
    add_scheduling(s->base.plan->job, &argv);
    if ((v = env_or("TRAINYARD_SLURM_PARTITION", NULL)))
        ty_strv_push_take(&argv, xasprintf("--partition=%s", v));
    if ((v = env_or("TRAINYARD_SLURM_ACCOUNT", NULL)))
        ty_strv_push_take(&argv, xasprintf("--account=%s", v));
    if ((v = env_or("TRAINYARD_SLURM_QOS", NULL)))
        ty_strv_push_take(&argv, xasprintf("--qos=%s", v));
    if ((v = env_or("TRAINYARD_SLURM_SBATCH_ARGS", NULL))) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
            ty_strv_push(&argv, t);
    }
    /* The launchers stay until QUIT: one exiting early must not end the others (the
     * supervisor decides), and they speak no MPI. */
    ty_strv_push(&argv, "--kill-on-bad-exit=0");
    ty_strv_push(&argv, "--mpi=none");
    ty_strv_push(&argv, "--export=ALL");
    /* The service's directory for the replicas (runtime.h), not srun's (the daemon's). */
    if (s->base.workdir)
        ty_strv_push_take(&argv, xasprintf("--chdir=%s", s->base.workdir));
    ty_strv_push(&argv, task);
    ty_strv_push(&argv, "--connect");
    ty_strv_push(&argv, s->listen_addr);
    return argv;
}

void slurm_job_known(struct slurm_rt *s, const char *id)
{
    size_t n = strspn(id, "0123456789");

    if (*s->job_id || n == 0 || n >= sizeof(s->job_id))
        return;
    (void)snprintf(s->job_id, sizeof(s->job_id), "%.*s", (int)n, id);
    ty_runtime_notice(&s->base, TY_SEV_INFO, "Submitted as Slurm job %s.", s->job_id);
}

/* The last line of srun's error output @err into @out ("" when none). */
static void last_line(const char *err, char *out, size_t n)
{
    const char *p = err ? strrchr(err, '\n') : NULL;

    (void)snprintf(out, n, "%s", p ? p + 1 : err ? err : "");
}

/* srun ended. Before every launcher was placed: a refusal (no allocation was made) fails
 * prepare() with Slurm's reason explained; any other end is the job's (an allocation whose
 * tasks ended, a job cancelled while it waited), which the job's state says: read it now
 * rather than at the next poll. While the replicas run, likewise. After cleanup began,
 * cleanup's wait for the launchers' own end is over (slurm-cancel.c). */
static void on_srun(struct ty_loop *loop, struct ty_subproc_result *res, void *data)
{
    struct slurm_rt *s = data;
    struct ty_error e = {0};
    struct slurm_shape sh;
    _cleanup_free_ char *why = NULL;

    (void)loop;
    s->srun_cmd = NULL;
    s->srun_ended = true;
    last_line(res->err, s->srun_err, sizeof(s->srun_err));
    if (s->phase == PHASE_ENDED) {
        slurm_cancel_srun_ended(s);
        return;
    }
    if (s->phase == PHASE_SUBMITTED && !*s->job_id) {
        /* No launcher said HELLO and no squeue saw the job: most likely no job was made. */
        slurm_shape_of(s, &sh);
        why = res->err && strstr(res->err, "Unable to allocate resources")
                  ? slurm_refusal_explain(res->err, &sh)
                  : NULL;
        /* srun's own error as it printed it; where srun succeeded, where the launchers (which
         * did not come) were to connect */
        bool quiet = !why && slurm_cmd_check(res, "srun", &e) == 0;
        if (quiet)
            (void)ty_error_set(&e, EIO, "srun ended before its tasks connected back");
        slurm_prepared(s,
                       -EIO,
                       "%s%s%s",
                       why ? why : ty_error_msg(&e),
                       quiet ? "; the launchers (trainyard-task) connect back to " : "",
                       quiet ? s->listen_addr : "");
        return;
    }
    slurm_poll_now(s);
}

int slurm_submit(struct slurm_rt *s, struct ty_error *err)
{
    _cleanup_strv_free_ char **argv = NULL;
    _cleanup_strv_free_ char **env = xcalloc(1, sizeof(char *));
    struct ty_subproc_options opt = {0};
    int r = slurm_listen(s, *s->rv_addr ? s->rv_addr : NULL, err);

    if (r < 0)
        return r;
    set_job_name(s);
    argv = srun_argv(s);
    /* The token reaches the tasks through the job's environment, never a command line. */
    ty_strv_push_take(&env, xasprintf("TRAINYARD_TASK_TOKEN=%s", s->token));
    ty_strv_push_take(&env, xasprintf("%s=1", TY_SLURM_CLIENT_ENV)); /* spared by a sweep */
    opt.argv = argv;
    opt.extra_env = env;
    opt.timeout_usec = 0; /* srun lasts as long as the job */
    r = ty_subproc_start(s->base.loop, &opt, on_srun, s, &s->srun_cmd, err);
    if (r < 0)
        return r;
    s->submitting = true;
    slurm_start_polling(s);
    return 0;
}
