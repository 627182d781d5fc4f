/* SPDX-License-Identifier: Apache-2.0
 * spec.h: the job model. A job document (a Job, or a bare TrainingInput; JSON or YAML) is
 * parsed into its canonical JSON form (schema.h), then into struct ty_job: a typed, validated
 * and expanded view (scale tiers expanded, images defaulted to the master's) that the plan and
 * the runtimes read. The canonical TrainingInput is kept alongside: it is what TF_CONFIG's
 * `job` and the REST API show.
 *
 * Lifecycle: ty_spec_parse() -> json (optionally patched by CLI flags) -> ty_job_from_json()
 * -> struct ty_job (immutable afterwards) -> ty_job_free(). */
#ifndef TY_SPEC_H
#define TY_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

enum ty_role {
    TY_ROLE_MASTER,
    TY_ROLE_WORKER,
    TY_ROLE_PS,
    TY_ROLE_EVALUATOR,
    TY_ROLE_MAX,
};

enum ty_scale_tier {
    TY_TIER_BASIC,
    TY_TIER_STANDARD_1,
    TY_TIER_PREMIUM_1,
    TY_TIER_BASIC_GPU,
    TY_TIER_BASIC_TPU,
    TY_TIER_CUSTOM,
};

/* Limits, each with its reason. */
#define TY_JOB_ID_MAX 128 /* AI Platform's documented job-id limit */
/* a project id names a directory of trainyardd's state (jobs/<project>) */
#define TY_PROJECT_ID_MAX 128
/* What a project id may be, for messages: ty_project_id_ok's rule. */
#define TY_PROJECT_ID_RULE                                                                         \
    "use only letters, numbers and - . _ : ~, start with a letter or number, at most 128 "         \
    "characters"
/* far beyond one machine; stops a typo from planning 1e12 replicas */
#define TY_MAX_REPLICAS_PER_ROLE 10000
#define TY_MAX_LABELS            64   /* Google's per-resource label limit */
#define TY_LABEL_MAX             63   /* Google's label key/value length limit */
#define TY_HP_MAX_PARAMS         100  /* more dimensions than any search can use */
#define TY_HP_MAX_DISCRETE       1000 /* the API's documented discreteValues limit */
/* categoricalValues of one parameter (the API documents none): each is one dimension of the
 * default search, and checking them for repeats is quadratic */
#define TY_HP_MAX_CATEGORIES 1000
#define TY_HP_MAX_TRIALS     10000 /* bounds the study held in memory and on disk */

/* Role name as CLUSTER_SPEC writes it ("master", "worker", "ps", "evaluator"). */
const char *ty_role_name(enum ty_role role);
/* Role as field prefix in TrainingInput ("master", "worker", "parameterServer", "evaluator"). */
const char *ty_role_field(enum ty_role role);
/* Scale tier enum name ("BASIC", ...). */
const char *ty_scale_tier_name(enum ty_scale_tier t);

struct ty_accelerator {
    char *type; /* AcceleratorConfig enum name, NULL when none */
    int64_t count;
};

/* One role of the cluster after expansion. */
struct ty_role_spec {
    int64_t count;               /* master: always 1 */
    char *machine_type;          /* NULL only for a role with count 0 and no type */
    char *image_uri;             /* after the fallback to the master's image */
    struct ty_accelerator accel; /* from acceleratorConfig */
    char **container_command;    /* NULL when unset */
    char **container_args;       /* NULL when unset */
};

enum ty_hp_type { TY_HP_DOUBLE, TY_HP_INTEGER, TY_HP_CATEGORICAL, TY_HP_DISCRETE };
enum ty_hp_scale { TY_HP_SCALE_NONE, TY_HP_SCALE_LINEAR, TY_HP_SCALE_LOG, TY_HP_SCALE_REVERSE_LOG };
enum ty_hp_algorithm { TY_HP_ALGO_DEFAULT, TY_HP_ALGO_GRID, TY_HP_ALGO_RANDOM };

struct ty_hp_param {
    char *name;
    enum ty_hp_type type;
    double min, max;   /* DOUBLE, INTEGER */
    char **categories; /* CATEGORICAL */
    double *discrete;  /* DISCRETE, strictly increasing */
    size_t n_discrete;
    enum ty_hp_scale scale;
};

struct ty_hp_spec {
    bool maximize;
    struct ty_hp_param *params;
    size_t n_params;
    int max_trials;          /* default 1 */
    int max_parallel_trials; /* default 1 */
    int max_failed_trials;   /* 0 = trainyard decides (documented with tuning) */
    char *metric_tag;        /* default "training/hptuning/metric" */
    enum ty_hp_algorithm algorithm;
    bool early_stopping;
    char *resume_job_id; /* NULL when unset */
};

struct ty_job {
    char *job_id;
    json_t *labels;         /* canonical object of string -> string (never NULL) */
    json_t *training_input; /* canonical TrainingInput (never NULL) */

    enum ty_scale_tier scale_tier;
    struct ty_role_spec roles[TY_ROLE_MAX];
    char **args;              /* trainingInput.args, NULL when unset */
    char *job_dir;            /* NULL when unset */
    char *region;             /* NULL when unset */
    bool use_chief;           /* useChiefInTfConfig */
    int64_t max_running_usec; /* scheduling.maxRunningTime, 0 when unset */
    struct ty_hp_spec *hp;    /* NULL for jobs without tuning */
};

enum ty_spec_format { TY_SPEC_AUTO, TY_SPEC_JSON, TY_SPEC_YAML };

/* Parse a job document into its canonical Job JSON ({"jobId"?, "labels"?, "trainingInput"}).
 * A document whose top level has none of the Job fields is taken as a bare TrainingInput.
 * TY_SPEC_AUTO tries JSON when the text starts with '{', YAML otherwise (YAML is a superset,
 * so a JSON document with YAML-only quirks still parses). Returns 0 and *ret (new reference)
 * or -EINVAL/-E2BIG with err naming the field and the rule. */
int ty_spec_parse(
    const char *text, size_t len, enum ty_spec_format fmt, json_t **ret, struct ty_error *err);

/* Normalise an already-parsed Job tree (e.g. a REST body). @lenient as for YAML input. */
int ty_spec_normalize_job(const json_t *in, bool lenient, json_t **ret, struct ty_error *err);

/* Build and validate the typed job from canonical Job JSON (as made by ty_spec_parse, then
 * possibly edited: the JSON is normalised again, so edits are checked too). The job must have
 * a jobId. Returns 0 and *ret (free with ty_job_free), or -EINVAL with err naming the field
 * and the rule; nothing is allocated on failure. Whether the job's environment fits is the
 * plan's question: a job a user submits goes through ty_job_accept (plan/accept.h). */
int ty_job_from_json(const json_t *job_json, struct ty_job **ret, struct ty_error *err);

/* Free a job; NULL-safe; returns NULL. */
struct ty_job *ty_job_free(struct ty_job *job);

/* Whether @job_dir (a trainingInput.jobDir, may be NULL or empty) names a directory of this
 * machine: set, and not a URI ("gs://bucket/dir", any "scheme://"), which is the program's
 * business. */
bool ty_job_dir_is_local(const char *job_dir);

/* Whether @task names one of @job's log tasks: "service" (the service's own lines), or
 * ROLE-replica-INDEX with INDEX below the role's count (after the scale tier's expansion). */
bool ty_job_has_task(const struct ty_job *job, const char *task);

/* For a request naming @task of the job @job_id whose TrainingInput is @training_input: NULL
 * when the job has that task (or its input does not parse: nothing is checked then), else its
 * task names (ty_job_task_list) for the error. Caller frees. */
char *ty_job_task_mismatch(const char *job_id, const json_t *training_input, const char *task);

/* @job's task names for an error message, ", "-separated: "service, master-replica-0,
 * worker-replica-0, ...", each role's first and last replica when it has more than three.
 * Caller frees. */
char *ty_job_task_list(const struct ty_job *job);

/* The GPUs each replica of @role gets: its acceleratorConfig when set (type and count), else
 * the built-in GPUs of its machine type (legacy GPU types, a2-highgpu-*), else 0. *@type (may
 * be NULL) is set to the AcceleratorConfig type name, or NULL when the count is 0. */
int ty_role_gpus(const struct ty_job *job, enum ty_role role, const char **type);

static inline void ty_job_freep(struct ty_job **j)
{
    ty_job_free(*j);
}

/* Total number of replicas (all roles). */
int64_t ty_job_replica_count(const struct ty_job *job);

/* Validation pieces, exposed for the CLI (flags are checked before a job exists) and tests. */
int ty_validate_job_id(const char *id, struct ty_error *err);
/* Do the @len bytes of @id follow the job id rule (1-128 ASCII letters, digits and
 * underscores, the first a letter)? ty_validate_job_id's rule without its messages, for ids
 * not NUL-terminated (a segment of a URL path). */
bool ty_job_id_ok(const char *id, size_t len);
/* Do the @len bytes of @id follow TY_PROJECT_ID_RULE (1-128 of letters, digits and - . _ : ~,
 * the first a letter or digit; so "." and ".." never pass)? The service's rule for the
 * project of a path; the CLI checks a project with it before sending one. */
bool ty_project_id_ok(const char *id, size_t len);
/* 0 when @id passes ty_project_id_ok, else -EINVAL with "@field: invalid project id '...':"
 * and the rule in @err (@field names where the id came from: "--project", a config line). */
int ty_validate_project_id(const char *id, const char *field, struct ty_error *err);
/* 0 when @key and @value follow the label rules (TY_LABEL_MAX characters; a key starts with a
 * lowercase letter; lowercase letters, digits, '-', '_' and international characters), else
 * -EINVAL with @err naming @what ("labels" for the field, a flag such as "--labels") and the
 * rule. */
int ty_validate_label(const char *what, const char *key, const char *value, struct ty_error *err);
/* Is every role's imageUri (after the fallback to the master's) a container image reference
 * (imageref.h)? A rule for a job as it is submitted (ty_job_accept_wait), not one of the job
 * model: a job stored before the rule keeps its meaning (the process runtime runs no image).
 * Returns 0, or -EINVAL naming the role's field, the part that broke and its rule; the
 * master's first. */
int ty_job_check_images(const struct ty_job *job, struct ty_error *err);

/* Exposed for spec.c only: semantic checks on a fully extracted job. */
int ty_job_validate(const struct ty_job *job, struct ty_error *err);
/* Exposed for spec.c only: extract and check trainingInput.hyperparameters. */
int ty_hp_from_json(const json_t *hp_json, struct ty_hp_spec **ret, struct ty_error *err);
struct ty_hp_spec *ty_hp_free(struct ty_hp_spec *hp);
/* A bare HyperparameterSpec JSON object (camelCase or snake_case, numbers or strings for
 * numbers, as in a job document or the hpo-jsonl/1 `study` message) -> *ret: checked against
 * the schema (unknown names, enum values, types), then every rule of ty_hp_from_json. Error
 * messages name fields under "trainingInput.hyperparameters". Returns 0 or -EINVAL. */
int ty_hp_spec_from_json(const json_t *spec, struct ty_hp_spec **ret, struct ty_error *err);
/* The rules of a new study's spec that a stored one is not held to (a job queued before
 * trainyard took them up must still run): a parameterName not starting with '-' or '.' nor
 * 'job-dir', no scaleType on a CATEGORICAL parameter, at most TY_HP_MAX_CATEGORIES
 * categoricalValues. ty_job_accept and `trainyard study` apply them (not ty_hp_spec_from_json,
 * which also reads stored jobs' specs, for resumePreviousJobId). @hp may be NULL.
 * Returns 0 or -EINVAL naming the field. */
int ty_hp_check_new(const struct ty_hp_spec *hp, struct ty_error *err);

#endif
