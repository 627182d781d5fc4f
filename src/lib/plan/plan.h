/* SPDX-License-Identifier: Apache-2.0
 * plan.h: the cluster plan: every replica of one run of a job (one trial, for tuning jobs)
 * with its role, index, task name, image, command and arguments, resources, and - once the
 * runtime has placed it - its host and port.
 *
 * Command semantics are AI Platform's (Kubernetes style), resolved here once for every
 * runtime: `command` is containerCommand (NULL = the image's ENTRYPOINT) and `args` is
 * containerArgs, else trainingInput.args (NULL = the image's CMD), followed by
 * `--job-dir=DIR` when the job has a jobDir and then the trial's `--name=value` arguments. */
#ifndef TY_PLAN_H
#define TY_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "spec.h"

struct ty_replica {
    enum ty_role role;
    int index;
    char task_name[48];    /* "worker-replica-1", as the service's logs name it */
    char display_name[40]; /* "worker 1", as the service's messages name it */
    const char *image;     /* borrowed from the job */
    const char *machine_type;
    const struct ty_accelerator *accel;
    /* NULL: the image's ENTRYPOINT / CMD. Shared by every replica of the role (the plan owns
     * them, once per role, not once per replica: 1,000 workers of a job with long args hold one
     * copy); never changed after ty_plan_build. */
    char **command;
    char **args;
    char *host; /* set by the runtime's place() */
    int port;   /* set by the runtime's place() */
    /* The replica's numeric IP address where host is a name (the container runtime's
     * network); NULL where host is itself an address. Set by place(); DMLC_PS_ROOT_URI. */
    char *ip;
};

struct ty_cluster_plan {
    const struct ty_job *job; /* borrowed; outlives the plan */
    char *trial_id;           /* NULL outside tuning trials */
    char **trial_args;        /* the trial's --name=value arguments (NULL outside trials) */
    char *job_dir;            /* jobDir, or <jobDir>/<trial> for trials; NULL when unset */
    /* Tuning trials: the host directory that receives the hypertune metric file (set by the
     * supervisor; NULL otherwise). The process runtime sets CLOUD_ML_HP_METRIC_FILE to
     * <metric_dir>/output.metrics; the container runtime bind-mounts it at /tmp/hypertune,
     * the library's default directory, and sets the variable to the default path. */
    char *metric_dir;
    /* The supervisor created the local job_dir for this attempt (it did not exist before):
     * a runtime whose replicas run as a user of their own may give it to that user (the
     * container runtime: the image's USER). job_dir_no_links: it was made walking from "/"
     * without following a link, and must be opened so again. */
    bool job_dir_made, job_dir_no_links;
    /* The replicas share the host's network (the slurm launcher runs one replica per node
     * this way): a runtime holds a free port on the host for each and creates no network of
     * its own. */
    bool host_network;
    struct ty_replica *replicas; /* master first, then workers, ps, evaluators */
    size_t n_replicas;
    char **role_command[TY_ROLE_MAX]; /* what each role's replicas' command and args are */
    char **role_args[TY_ROLE_MAX];
};

/* Build the plan of one run of @job. @trial_id (NULL for none) and @trial_args (extra
 * `--name=value` arguments, NULL for none) come from the tuner. Addresses are unset.
 * Returns 0 and *ret (free with ty_plan_free). */
int ty_plan_build(const struct ty_job *job,
                  const char *trial_id,
                  char *const *trial_args,
                  struct ty_cluster_plan **ret,
                  struct ty_error *err);

/* Free a plan; NULL-safe; returns NULL. */
struct ty_cluster_plan *ty_plan_free(struct ty_cluster_plan *plan);

/* The replica with @role and @index, or NULL. */
struct ty_replica *ty_plan_find(struct ty_cluster_plan *plan, enum ty_role role, int index);

/* The program to start for replicas without an image to run: command + args as one argv.
 * Returns NULL when the replica has no command (containerCommand is unset). Caller frees. */
char **ty_replica_argv(const struct ty_replica *r);

#endif
