/* SPDX-License-Identifier: Apache-2.0
 * clusterenv.h: the environment contract every replica gets (docs/environment.md):
 *   CLUSTER_SPEC {"cluster":{master,worker,ps,evaluator},"environment":"cloud","task":..,"job":..}
 *   TF_CONFIG      the same, with "chief" for "master" when useChiefInTfConfig is true or the
 *                  job has evaluators, and never listing evaluators in "cluster"
 *   CLOUD_ML_JOB_ID, CLOUD_ML_TRIAL_ID (trials only),
 *   MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (opt-in, master and workers only),
 *   DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_WORKER, DMLC_NUM_SERVER
 *                  (opt-in, MXNet's ps-lite: master, workers and ps; never evaluators).
 * Both JSON variables are compact with keys in the order cluster, environment, task, job;
 * `job` is the canonical TrainingInput object; `task.trial` exists only in trials.
 *
 * The cluster parts are serialised once per plan (ty_clusterenv_new) so rendering every
 * replica of a large cluster stays linear. */
#ifndef TY_CLUSTERENV_H
#define TY_CLUSTERENV_H

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"

/* Linux refuses an execve whose single environment string ("NAME=value" plus its NUL) is
 * longer than MAX_ARG_STRLEN, 32 pages = 131072 bytes. */
#define TY_ENV_STRING_MAX 131072

/* Worst-case "host:port" length assumed when checking a job before it is placed: covers the
 * container runtime's "cmle-training-evaluator-<10 hex>-<index>:2222" names. */
#define TY_ADDR_LEN_VALIDATE 48

struct ty_clusterenv;

/* Every variable of the contract that trainyard may set for a replica (the list above, and
 * the tuning trial's CLOUD_ML_HP_METRIC_FILE and CLOUD_ML_HP_METRIC_TAG), NULL-terminated.
 * A replica that inherits an environment (the process runtime's) has these removed from it
 * first: one the job does not set for the replica must not leak in from the caller's. */
extern const char *const ty_clusterenv_names[];

struct ty_env_options {
    bool pytorch; /* also set MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK */
    /* Also set the DMLC_* variables of MXNet's ps-lite: the master is the scheduler, the
     * workers its workers, the ps its servers; evaluators get none. Independent of pytorch
     * (the names do not overlap: a job may have both). */
    bool mxnet;
};

/* Precompute the cluster objects for @plan, whose replicas must all be placed (host and
 * port set). Returns 0 and *ret, or -EINVAL (a replica is not placed) / -E2BIG (a variable
 * would exceed TY_ENV_STRING_MAX; err names the replica count). */
int ty_clusterenv_new(const struct ty_cluster_plan *plan,
                      struct ty_clusterenv **ret,
                      struct ty_error *err);
/* Free @ce; NULL-safe. */
void ty_clusterenv_free(struct ty_clusterenv *ce);

/* The CLUSTER_SPEC / TF_CONFIG value for replica @r. Caller frees. Exposed for tests. */
char *ty_clusterenv_cluster_spec(const struct ty_clusterenv *ce, const struct ty_replica *r);
char *ty_clusterenv_tf_config(const struct ty_clusterenv *ce, const struct ty_replica *r);

/* Set every contract variable for replica @r in the environment vector *env (existing
 * entries of the same names are replaced). Returns 0 or -E2BIG. */
int ty_clusterenv_render(const struct ty_clusterenv *ce,
                         const struct ty_replica *r,
                         const struct ty_env_options *opts,
                         char ***env,
                         struct ty_error *err);

/* Check, before placement, that @job's variables fit for every replica when each address is
 * at most @addr_len bytes. Returns 0 or -E2BIG with a message naming the replica count. */
int ty_clusterenv_check_size(const struct ty_job *job, size_t addr_len, struct ty_error *err);

/* DMLC_ROLE of @role: "scheduler" (master), "worker", "server" (ps), or NULL (evaluator,
 * which gets no DMLC_* variable). Exposed for tests. */
const char *ty_clusterenv_dmlc_role(enum ty_role role);

/* The TF_CONFIG name of @role ("chief" or "master" for the master). Exposed for tests. */
const char *ty_clusterenv_tf_role(const struct ty_job *job, enum ty_role role);

#endif
