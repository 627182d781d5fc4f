/* SPDX-License-Identifier: Apache-2.0
 * supervise.h: one run of a job (a whole job, or one tuning trial) from plan to result,
 * driving a runtime on the caller's event loop.
 *
 * States (the REST API's): PREPARING -> RUNNING -> SUCCEEDED | FAILED, and from PREPARING
 * or RUNNING, on cancel: CANCELLING -> CANCELLED. With a runtime that has a queue of its own
 * (slurm) the run stays QUEUED until the runtime has its allocation.
 * Rules (docs/lifecycle.md): the master exiting 0 ends the run SUCCEEDED; every other end of
 * a replica is classified (restart.h): a permanent failure fails the run at once, with the
 * service's wording ("The replica worker 1 exited with a non-zero status of 3."); a replica
 * killed from outside is restarted in place (at most 5 times per attempt), and a crash, a lost
 * node or a 6th such failure retries the whole job as a new attempt (at most 4 attempts),
 * unless the job's scheduling options say otherwise. When the run ends every other replica
 * gets SIGTERM and, after the grace period, SIGKILL, and the runtime's cleanup removes
 * whatever is left; the run ends (final state, ty_supervisor_done) when that cleanup has
 * ended, which may take a while on the loop (containers removed, a Slurm job leaving the
 * queue). A retry does the same teardown, then starts the job again on a new runtime; the run
 * stays RUNNING meanwhile. scheduling.maxRunningTime, when set, fails a run that is still
 * RUNNING then (counted from its first RUNNING, across attempts).
 *
 * Every replica output line and every service message becomes a log record: written to the
 * job's log files and handed to the caller's log sink. */
#ifndef TY_SUPERVISE_H
#define TY_SUPERVISE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "clusterenv.h"
#include "jobstate.h"
#include "logs.h"
#include "loop.h"
#include "spec.h"

/* Default time between SIGTERM and SIGKILL when replicas are stopped. */
#define TY_DEFAULT_GRACE_USEC (10 * INT64_C(1000000))

struct ty_supervisor_options {
    int64_t grace_usec;        /* 0: TY_DEFAULT_GRACE_USEC */
    struct ty_env_options env; /* opt-in variables */
    struct ty_joblog *log;     /* where records are written (borrowed; may be NULL) */
    /* Extra variables (NAME=VALUE, NULL-terminated; borrowed; may be NULL) every replica gets
     * on top of the contract variables, which they may not replace. */
    char *const *extra_env;
    /* A tuning trial's host directory for the hypertune metric file (borrowed; NULL outside
     * tuning): the runtimes point CLOUD_ML_HP_METRIC_FILE at <dir>/output.metrics, or mount
     * it where the library writes by default (plan.h, metric_dir). */
    const char *metric_dir;
    /* The user the replicas run as (a name; borrowed; NULL: as this process): handed to the
     * runtime (ty_runtime.run_as), which only the process runtime uses. */
    const char *run_as;
    /* The environment the replicas start from (NAME=VALUE, NULL-terminated; borrowed; NULL:
     * this process's own, as `local train` does) and what set its PATH, for errors (NULL:
     * "PATH"): handed to the runtime (ty_runtime.base_env), which the process runtime and
     * the slurm runtime's program replicas use. The service gives jobenv.h's. */
    char *const *base_env;
    const char *path_setting;
    /* The replicas start in the job's local jobDir (created for them), or in / when it has
     * none or it is a URI, as a service's programs do: the service sets this. false: in this
     * process's working directory, as `local train` does (the user's). Handed to the runtime
     * (ty_runtime.workdir). */
    bool start_in_job_dir;
    /* The local jobDir is created, and opened, without following a symbolic link anywhere on
     * its path (ty_mkdir_nofollow): the service's, whose jobs may plant links in their
     * directories. false: mkdir -p, as `local train` does (the user's own paths). */
    bool job_dir_no_links;
    /* Called for every record (replica lines and service messages), and on each state
     * change. Both optional. */
    void (*on_log)(void *ctx, const struct ty_log_record *rec);
    void (*on_state)(void *ctx, enum ty_job_state state);
    /* The run waits in the runtime's queue (slurm) because of @reason; on every change.
     * Optional. */
    void (*on_queued)(void *ctx, const char *reason);
    /* The attempt number or a replica's restart count changed (ty_supervisor_attempt_status).
     * Optional. */
    void (*on_progress)(void *ctx);
    /* A replica's program started or ended (the `replicas` of ty_supervisor_attempt_status
     * changed). Called twice per replica launch, so a caller that records it should gather
     * the calls (the service writes at most one per quarter second). Optional. */
    void (*on_replica)(void *ctx);
    /* The run's outcome is decided (@state SUCCEEDED, FAILED or CANCELLED; @error its
     * errorMessage, "" for SUCCEEDED): the replicas are being stopped and the final state
     * follows once the runtime is clean. Called once, when the outcome is decided (before the
     * teardown, if there is one). Optional (the service records it, so that a lost
     * supervisor's job ends with it instead of being run again). */
    void (*on_outcome)(void *ctx, enum ty_job_state state, const char *error);
    /* The number of the run's first attempt (0: 1). The service starts a job again after an
     * internal error as the attempt after the last one recorded; the run may then go on to
     * first_attempt + TY_MAX_ATTEMPTS - 1 (restart.h). */
    unsigned first_attempt;
    /* When the job first became RUNNING (wall clock, µs; 0: not yet), for a run that takes
     * over from a supervisor that was lost: scheduling.maxRunningTime counts from then. */
    int64_t running_since_usec;
    /* What the job was given on this machine (runtime.h; borrowed, outlives the run; NULL:
     * nothing, as for a runtime that schedules its own, or a caller that hands none): this
     * run's replicas get the GPUs of trial slot @gpu_slot (0 for a plain job). */
    const struct ty_run_gpus *gpus;
    int gpu_slot;
    /* scheduling.maxWaitTime: when the job must have started (wall clock, µs since the
     * epoch: createTime + maxWaitTime; 0: no limit). A run not RUNNING then (PREPARING:
     * images being pulled; QUEUED in its runtime's queue; between attempts before it ever
     * ran) is cancelled and ends CANCELLED with ty_run_wait_expired's message. */
    int64_t wait_deadline_usec;
    /* scheduling.maxRunningTime is the caller's to enforce: the run sets no deadline of its
     * own (a study's trials: the limit is the whole job's, ty_study's). */
    bool deadline_by_caller;
    /* The job's log has its first lines already (the service writes them when it accepts
     * the job): ty_run_announce does not repeat them. */
    bool announced;
    /* A service line written after the "Job ... is queued." of ty_run_announce (the
     * admission: how long the job waited and what it was given); NULL: none. Borrowed. */
    const char *admitted;
    void *ctx;
};

struct ty_supervisor;
struct ty_runtime_ops; /* runtime.h; the programs pick one (exec/runtimes.h) */
struct ty_exit_status; /* runtime.h */
struct ty_run_gpus;    /* runtime.h */

/* The errorMessage of a job cancelled because it did not start within its
 * scheduling.maxWaitTime, into @buf: "Job cancelled: it did not start within its
 * scheduling.maxWaitTime (1800s)." (the duration as the job says it). The service says the
 * same of the jobs it cancels in its queue. Returns @buf. */
const char *ty_run_wait_expired(const struct ty_job *job, char *buf, size_t len);
/* The errorMessage of a job that ran past its scheduling.maxRunningTime, into @buf: "The job
 * exceeded its maximum running time (scheduling.maxRunningTime 1.5s)." (the duration as the
 * job says it). Returns @buf. */
const char *ty_run_time_exceeded(const struct ty_job *job, char *buf, size_t len);
/* createTime + scheduling.maxWaitTime of @job created at @create_usec (epoch µs); 0 when the
 * job sets no maxWaitTime. */
int64_t ty_run_wait_deadline(const struct ty_job *job, int64_t create_usec);

/* Create a supervisor for one run of @job with the runtime @runtime on @loop.
 * @trial_id and @trial_args as for ty_plan_build (NULL outside tuning). */
int ty_supervisor_new(struct ty_loop *loop,
                      const struct ty_runtime_ops *runtime,
                      const struct ty_job *job,
                      const char *trial_id,
                      char *const *trial_args,
                      const struct ty_supervisor_options *opts,
                      struct ty_supervisor **ret,
                      struct ty_error *err);

/* Prepare, place and launch every replica. Returns 0 once every launch is under way (the run
 * is PREPARING and becomes RUNNING on the loop when every replica has started), or when the
 * run is already ending (preparing or launching failed: the run becomes FAILED once the
 * runtime's cleanup has ended, which may be now or later on the loop; see
 * ty_supervisor_done). Returns -errno only for failures of the supervisor itself. */
int ty_supervisor_start(struct ty_supervisor *sup, struct ty_error *err);

/* Request cancellation (idempotent). A second request while CANCELLING skips the rest of
 * the grace period and kills at once. Once every replica is gone and only the runtime's
 * cleanup goes on, a request is logged and changes nothing (the cleanup ends on its own).
 * Not async-signal-safe: call it from the loop. */
void ty_supervisor_cancel(struct ty_supervisor *sup);

/* ty_supervisor_cancel for another reason than the user's: @requested is logged (the first
 * time) and @error is the run's errorMessage ("The job exceeded its maximum running time
 * ...", for a tuning trial its study's). */
void ty_supervisor_cancel_for(struct ty_supervisor *sup, const char *requested, const char *error);

/* End a RUNNING run early with success (a tuning trial stopped by the early-stopping rule):
 * logs @why, then stops every replica as when the master succeeds (SIGTERM, the grace period,
 * SIGKILL); the run ends SUCCEEDED whatever the replicas' exits. Returns false and does
 * nothing when the run is not RUNNING or is already ending (its own result stands). */
bool ty_supervisor_stop_early(struct ty_supervisor *sup, const char *why);

/* Current state, and whether the run has ended (every replica gone, the runtime's cleanup
 * ended). The final state is set only then: while the cleanup goes on on the loop the run is
 * still in its last non-final state (RUNNING, PREPARING, CANCELLING...). */
enum ty_job_state ty_supervisor_state(const struct ty_supervisor *sup);
bool ty_supervisor_done(const struct ty_supervisor *sup);
/* errorMessage of a FAILED or CANCELLED run ("" otherwise). */
const char *ty_supervisor_error(const struct ty_supervisor *sup);

/* The attempt the run is in (first_attempt, first_attempt + 1, ...). */
unsigned ty_supervisor_attempt(const struct ty_supervisor *sup);

/* The run's attempts and restarts for the job resource (docs/lifecycle.md), a new object
 *     {"attempt": 2, "maxAttempts": 4,
 *      "replicaRestarts": {"master-replica-0": 0, "worker-replica-0": 1},
 *      "replicas": [{"taskName": "worker-replica-0", "role": "worker", "index": 0,
 *                    "address": "127.0.0.1:40211", "state": "FAILED", "exitCode": 3,
 *                    "exit": "The replica worker 0 exited with a non-zero status of 3.",
 *                    "restarts": 1}, ...]}
 * with every replica's restarts in the current attempt; `replicas` only when @with_replicas
 * (supervise-status.c: each replica's state in the current attempt, docs/service.md). */
json_t *ty_supervisor_attempt_status(const struct ty_supervisor *sup, bool with_replicas);

/* Records of a run, shared by the supervisor and the study (study.h), which logs its own
 * service messages with the same options. */

/* One record from @task (@trial: NULL outside tuning; @attempt: 0 outside an attempt): written
 * to @o->log and handed to @o->on_log with @ctx (either may be unset). */
void ty_run_log(const struct ty_supervisor_options *o,
                void *ctx,
                enum ty_severity sev,
                const char *task,
                const char *trial,
                unsigned attempt,
                const char *msg,
                size_t len);

/* A message of the "service" task, printf-style (cut at 2 KiB), as ty_run_log. */
void ty_run_vservice(const struct ty_supervisor_options *o,
                     void *ctx,
                     const char *trial,
                     unsigned attempt,
                     enum ty_severity sev,
                     const char *fmt,
                     va_list ap) __attribute__((format(printf, 6, 0)));

/* The service messages every run starts with (the job was validated and queued; not for a
 * trial, @trial non-NULL: its study said so once for the job, nor for a run after an internal
 * error, @o->first_attempt over 1: the first run said so, nor when @o->announced: the
 * service did), then @o->admitted when set. */
void ty_run_announce(const struct ty_supervisor_options *o,
                     void *ctx,
                     const char *trial,
                     unsigned attempt,
                     const char *job_id);

/* The service message a run ends with, for its final @state: "Job completed successfully.",
 * "Job cancelled." or "Job failed: @error". */
void ty_run_announce_result(const struct ty_supervisor_options *o,
                            void *ctx,
                            const char *trial,
                            unsigned attempt,
                            enum ty_job_state state,
                            const char *error);

/* Free; a run that has not ended is cleaned up first (replicas killed, the runtime's
 * cleanup finished), synchronously: this may block until the runtime's deadlines (the
 * runtime's destroy; see runtime.h). NULL-safe. */
void ty_supervisor_free(struct ty_supervisor *sup);

/* The environment (contract variables only) and argv a replica of a placed plan gets; for
 * --dry-run. @trial_id and @trial_args as for ty_plan_build (NULL outside tuning). Returns 0
 * and a JSON array of replicas. */
int ty_supervisor_dry_run(const struct ty_runtime_ops *runtime,
                          const struct ty_job *job,
                          const char *trial_id,
                          char *const *trial_args,
                          const struct ty_env_options *env,
                          json_t **ret,
                          struct ty_error *err);

#endif
