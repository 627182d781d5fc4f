/* SPDX-License-Identifier: Apache-2.0
 * spec-validate.c: the rules a job must meet before anything runs. Every message names the
 * field (camelCase path, as the REST API spells it) and the rule it breaks. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "imageref.h"
#include "json.h"
#include "labelchars.h"
#include "machine.h"
#include "macro.h"
#include "spec.h"
#include "strv.h"
#include "timeutil.h"
#include "utf8.h"

bool ty_job_id_ok(const char *id, size_t len)
{
    if (len == 0 || len > TY_JOB_ID_MAX || (unsigned char)id[0] >= 0x80 ||
        !isalpha((unsigned char)id[0]))
        return false;
    for (size_t i = 1; i < len; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c >= 0x80 || !(isalnum(c) || c == '_'))
            return false;
    }
    return true;
}

int ty_validate_job_id(const char *id, struct ty_error *err)
{
    size_t n;

    if (!id || !*id)
        return ty_error_set(err, EINVAL, "jobId: required");
    n = strlen(id);
    if (n > TY_JOB_ID_MAX)
        return ty_error_set(
            err, EINVAL, "jobId: must be at most %d characters (got %zu)", TY_JOB_ID_MAX, n);
    if (!isalpha((unsigned char)id[0]) || (unsigned char)id[0] >= 0x80)
        return ty_error_set(err, EINVAL, "jobId: must start with a letter (got '%s')", id);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c >= 0x80 || !(isalnum(c) || c == '_'))
            return ty_error_set(err,
                                EINVAL,
                                "jobId: may contain only letters, digits and underscores "
                                "(got '%s')",
                                id);
    }
    return 0;
}

bool ty_project_id_ok(const char *id, size_t len)
{
    if (len == 0 || len > TY_PROJECT_ID_MAX || (unsigned char)id[0] >= 0x80 ||
        !isalnum((unsigned char)id[0]))
        return false;
    for (size_t i = 1; i < len; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c >= 0x80 || !(isalnum(c) || (c && strchr("-._:~", c))))
            return false;
    }
    return true;
}

int ty_validate_project_id(const char *id, const char *field, struct ty_error *err)
{
    char shown[65];

    if (ty_project_id_ok(id, strlen(id)))
        return 0;
    (void)snprintf(shown, sizeof(shown), "%s", id);
    (void)ty_ctrl_scrub(shown); /* no terminal controls in a message */
    return ty_error_set(
        err, EINVAL, "%s: invalid project id '%s': " TY_PROJECT_ID_RULE, field, shown);
}

int ty_job_check_images(const struct ty_job *job, struct ty_error *err)
{
    char why[300];

    for (int i = 0; i < TY_ROLE_MAX; i++) {
        const char *ref = job->roles[i].image_uri;
        if (ref && *ref && ty_image_ref_check(ref, why, sizeof(why)) < 0) {
            /* quoted as JSON: a control character of the user's shows escaped */
            _cleanup_json_ json_t *j = json_string(ref);
            _cleanup_free_ char *shown = j ? ty_json_compact_short(j) : xstrdup("(not UTF-8)");
            return ty_error_set(err,
                                EINVAL,
                                "trainingInput.%sConfig.imageUri: %s is not a container image "
                                "reference ([REGISTRY/]PATH[:TAG][@DIGEST], such as "
                                "gcr.io/project/trainer:v1): %s",
                                ty_role_field((enum ty_role)i),
                                shown,
                                why);
        }
    }
    return 0;
}

int ty_validate_label(const char *what, const char *key, const char *value, struct ty_error *err)
{
    bool flag = what[0] == '-';

    if (!ty_label_text_ok(key, true, TY_LABEL_MAX))
        return ty_error_set(err,
                            EINVAL,
                            "%s: key '%s' must start with a lowercase letter and contain "
                            "only lowercase letters, digits, hyphens and underscores "
                            "(international characters are allowed; at most %d characters)",
                            what,
                            key,
                            TY_LABEL_MAX);
    if (!ty_label_text_ok(value, false, TY_LABEL_MAX))
        return ty_error_set(err,
                            EINVAL,
                            "%s%s%s: value '%s'%s%s%s may contain only lowercase letters, "
                            "digits, hyphens and underscores (international characters are "
                            "allowed; at most %d characters)",
                            what,
                            flag ? "" : ".",
                            flag ? "" : key,
                            value,
                            flag ? " of key '" : "",
                            flag ? key : "",
                            flag ? "'" : "",
                            TY_LABEL_MAX);
    return 0;
}

static int validate_labels(const json_t *labels, struct ty_error *err)
{
    const char *k;
    json_t *v;

    if (json_object_size(labels) > TY_MAX_LABELS)
        return ty_error_set(err,
                            EINVAL,
                            "labels: at most %d labels (got %zu)",
                            TY_MAX_LABELS,
                            json_object_size(labels));
    json_object_foreach((json_t *)labels, k, v)
    {
        int r = ty_validate_label("labels", k, json_string_value(v), err);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The most accelerators one replica may ask for: what the largest Compute Engine machine
 * holds (a2-megagpu-16g, 16 A100s); also keeps the count within an int downstream. */
#define ACCEL_COUNT_MAX 16

static int validate_accelerator(const struct ty_job *job,
                                enum ty_role role,
                                const struct ty_machine_type *mt,
                                struct ty_error *err)
{
    const struct ty_accelerator *a = &job->roles[role].accel;
    const char *f = ty_role_field(role);

    if (!a->type && a->count == 0)
        return 0;
    if (!a->type || strcmp(a->type, "ACCELERATOR_TYPE_UNSPECIFIED") == 0)
        return ty_error_set(
            err, EINVAL, "trainingInput.%sConfig.acceleratorConfig.type: required", f);
    if (a->count <= 0)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.acceleratorConfig.count: must be greater "
                            "than 0 (got %lld)",
                            f,
                            (long long)a->count);
    if (a->count > ACCEL_COUNT_MAX)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.acceleratorConfig.count: at most %d per "
                            "replica, as on the largest Compute Engine machine (got %lld)",
                            f,
                            ACCEL_COUNT_MAX,
                            (long long)a->count);
    if (strncmp(a->type, "TPU_", 4) == 0)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.acceleratorConfig.type: '%s': Cloud TPUs "
                            "are not available in trainyard (GPU types are)",
                            f,
                            a->type);
    if (!mt && job->scale_tier != TY_TIER_CUSTOM)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.acceleratorConfig: accelerators can only be "
                            "attached to Compute Engine machine types, and scaleTier %s runs "
                            "legacy types: use scaleTier CUSTOM with a masterType such as "
                            "n1-standard-8",
                            f,
                            ty_scale_tier_name(job->scale_tier));
    if (mt && mt->family == TY_MACHINE_COMPUTE_ENGINE && mt->gpus > 0 &&
        (strcmp(a->type, mt->gpu_type) != 0 || a->count != mt->gpus))
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.acceleratorConfig: '%s' comes with %d %s; "
                            "omit acceleratorConfig or set exactly that (got %lld %s)",
                            f,
                            mt->name,
                            mt->gpus,
                            mt->gpu_type,
                            (long long)a->count,
                            a->type);
    if (mt && mt->family == TY_MACHINE_LEGACY)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.acceleratorConfig: accelerators can only be "
                            "attached to Compute Engine machine types, and '%s' is a legacy "
                            "type (its GPUs, if any, are built in)",
                            f,
                            mt->name);
    return 0;
}

/* The replica count and machine type of role @i against the scale tier; the role's machine
 * type into *@mt (NULL when it names none), the master's into *@master_mt. */
static int validate_role_machine(const struct ty_job *job,
                                 int i,
                                 const struct ty_machine_type **mt,
                                 const struct ty_machine_type **master_mt,
                                 struct ty_error *err)
{
    const struct ty_role_spec *rs = &job->roles[i];
    const char *f = ty_role_field((enum ty_role)i);
    bool custom = job->scale_tier == TY_TIER_CUSTOM;

    *mt = NULL;
    if (rs->count < 0)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sCount: must not be negative (got %lld)",
                            f,
                            (long long)rs->count);
    if (rs->count > TY_MAX_REPLICAS_PER_ROLE)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sCount: at most %d (got %lld)",
                            f,
                            TY_MAX_REPLICAS_PER_ROLE,
                            (long long)rs->count);
    if (!custom && (rs->machine_type || (i != TY_ROLE_MASTER && rs->count > 0)))
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%s%s: may only be set when scaleTier is CUSTOM "
                            "(scaleTier is %s%s, which fixes the cluster's shape; for your "
                            "own shape, set scaleTier CUSTOM with masterType%s%s%s)",
                            f,
                            rs->machine_type ? "Type" : "Count",
                            ty_scale_tier_name(job->scale_tier),
                            ty_json_str(job->training_input, "scaleTier")
                                ? ""
                                : ", the default when neither scaleTier nor masterType is set",
                            i == TY_ROLE_MASTER ? "" : " and ",
                            i == TY_ROLE_MASTER ? "" : f,
                            i == TY_ROLE_MASTER ? "" : "Type");
    if (custom && i == TY_ROLE_MASTER && !rs->machine_type)
        return ty_error_set(
            err, EINVAL, "trainingInput.masterType: required when scaleTier is CUSTOM");
    if (custom && rs->count > 0 && !rs->machine_type)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sType: required when %sCount is positive (it is "
                            "%lld)",
                            f,
                            f,
                            (long long)rs->count);
    if (!rs->machine_type)
        return 0;
    *mt = ty_machine_lookup(rs->machine_type);
    if (!*mt) {
        const char *near = ty_machine_suggest(rs->machine_type);
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sType: unknown machine type '%s' (%s%s%ssee "
                            "docs/machine-types.md for the list)",
                            f,
                            rs->machine_type,
                            near ? "did you mean '" : "",
                            near ? near : "",
                            near ? "'? " : "");
    }
    if ((*mt)->tpu)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sType: '%s': Cloud TPUs are not available "
                            "in trainyard",
                            f,
                            rs->machine_type);
    if (i == TY_ROLE_MASTER)
        *master_mt = *mt;
    else if (*master_mt && (*master_mt)->family != (*mt)->family)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sType: '%s' and masterType '%s' cannot be "
                            "mixed: use Compute Engine types or legacy types throughout",
                            f,
                            (*mt)->name,
                            (*master_mt)->name);
    return 0;
}

/* containerCommand and containerArgs of role @i: no empty command, not with trainingInput.args. */
static int validate_role_container(const struct ty_job *job, int i, struct ty_error *err)
{
    const struct ty_role_spec *rs = &job->roles[i];
    const char *f = ty_role_field((enum ty_role)i);

    if (rs->container_command && !rs->container_command[0])
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.containerCommand: must not be an empty "
                            "list (omit it to use the image's ENTRYPOINT)",
                            f);
    if (rs->container_command && !rs->container_command[0][0])
        return ty_error_set(
            err, EINVAL, "trainingInput.%sConfig.containerCommand[0]: must not be empty", f);
    if ((rs->container_command || rs->container_args) && job->args && job->args[0])
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.args: cannot be combined with trainingInput.%s"
                            "Config.%s; put the arguments in containerArgs",
                            f,
                            rs->container_command ? "containerCommand" : "containerArgs");
    return 0;
}

/* Every role in order: its machine, its accelerator, its container overrides. */
static int validate_roles(const struct ty_job *job, struct ty_error *err)
{
    const struct ty_machine_type *master_mt = NULL;

    for (int i = 0; i < TY_ROLE_MAX; i++) {
        const struct ty_machine_type *mt;
        int r = validate_role_machine(job, i, &mt, &master_mt, err);

        if (r >= 0)
            r = validate_accelerator(job, (enum ty_role)i, mt, err);
        if (r >= 0)
            r = validate_role_container(job, i, err);
        if (r < 0)
            return r;
    }
    return 0;
}

static int validate_scheduling(const json_t *ti, struct ty_error *err)
{
    json_t *s = json_object_get(ti, "scheduling");
    json_t *prio = json_object_get(s, "priority");
    int64_t usec;

    if (ty_json_str(s, "maxRunningTime")) {
        (void)ty_duration_parse(ty_json_str(s, "maxRunningTime"), &usec, NULL);
        if (usec <= 0)
            return ty_error_set(
                err, EINVAL, "trainingInput.scheduling.maxRunningTime: must be positive");
    }
    if (ty_json_str(s, "maxWaitTime")) {
        (void)ty_duration_parse(ty_json_str(s, "maxWaitTime"), &usec, NULL);
        /* The smallest wait a user may ask for is the service's setting (plan/accept.h):
         * a stored job is never refused here. */
        if (usec <= 0)
            return ty_error_set(
                err, EINVAL, "trainingInput.scheduling.maxWaitTime: must be positive");
    }
    if (prio && (json_integer_value(prio) < 0 || json_integer_value(prio) > 1000))
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.scheduling.priority: must be between 0 and 1000 (got "
                            "%lld)",
                            (long long)json_integer_value(prio));
    return 0;
}

static int validate_disks(const json_t *ti, struct ty_error *err)
{
    for (int i = 0; i < TY_ROLE_MAX; i++) {
        _cleanup_free_ char *key = xasprintf("%sConfig", ty_role_field((enum ty_role)i));
        json_t *disk = json_object_get(json_object_get(ti, key), "diskConfig");
        const char *type = ty_json_str(disk, "bootDiskType");
        json_t *size = json_object_get(disk, "bootDiskSizeGb");
        if (type && strcmp(type, "pd-ssd") != 0 && strcmp(type, "pd-standard") != 0)
            return ty_error_set(err,
                                EINVAL,
                                "trainingInput.%s.diskConfig.bootDiskType: must be 'pd-ssd' or "
                                "'pd-standard' (got '%s')",
                                key,
                                type);
        if (size && json_integer_value(size) <= 0)
            return ty_error_set(
                err, EINVAL, "trainingInput.%s.diskConfig.bootDiskSizeGb: must be positive", key);
    }
    return 0;
}

int ty_job_validate(const struct ty_job *job, struct ty_error *err)
{
    const json_t *ti = job->training_input;
    int r;

    r = ty_validate_job_id(job->job_id, err);
    if (r < 0)
        return r;
    r = validate_labels(job->labels, err);
    if (r < 0)
        return r;
    if (job->scale_tier == TY_TIER_BASIC_TPU)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.scaleTier: BASIC_TPU: Cloud TPUs are not available in "
                            "trainyard");
    if (ty_json_str(ti, "runtimeVersion") || ty_json_str(ti, "pythonModule") ||
        json_object_get(ti, "packageUris"))
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%s: trainyard runs custom-container jobs only; "
                            "runtime-version jobs (runtimeVersion, pythonModule, packageUris) "
                            "are not supported: set masterConfig.imageUri instead",
                            ty_json_str(ti, "runtimeVersion") ? "runtimeVersion"
                            : ty_json_str(ti, "pythonModule") ? "pythonModule"
                                                              : "packageUris");
    if (!job->roles[TY_ROLE_MASTER].image_uri || !*job->roles[TY_ROLE_MASTER].image_uri)
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.masterConfig.imageUri: required (the master's image "
                            "is also the default for every other role)");
    r = validate_roles(job, err);
    if (r < 0)
        return r;
    r = validate_scheduling(ti, err);
    if (r < 0)
        return r;
    return validate_disks(ti, err);
}
