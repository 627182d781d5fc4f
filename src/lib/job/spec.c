/* SPDX-License-Identifier: Apache-2.0
 * spec.c: job documents -> canonical JSON -> struct ty_job (parsing, typed extraction and
 * scale-tier expansion). The rules a valid job must meet are in spec-validate.c. */
#include "spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "json.h"
#include "machine.h"
#include "macro.h"
#include "parse.h"
#include "schema.h"
#include "strv.h"
#include "timeutil.h"
#include "yaml-load.h"

static const char *const role_names[TY_ROLE_MAX] = {"master", "worker", "ps", "evaluator"};
static const char *const role_fields[TY_ROLE_MAX] = {
    "master", "worker", "parameterServer", "evaluator"};
static const char *const tier_names[] = {
    "BASIC", "STANDARD_1", "PREMIUM_1", "BASIC_GPU", "BASIC_TPU", "CUSTOM"};

const char *ty_role_name(enum ty_role role)
{
    return role < TY_ROLE_MAX ? role_names[role] : "unknown";
}

const char *ty_role_field(enum ty_role role)
{
    return role < TY_ROLE_MAX ? role_fields[role] : "unknown";
}

const char *ty_scale_tier_name(enum ty_scale_tier t)
{
    return (size_t)t < TY_ARRAY_SIZE(tier_names) ? tier_names[t] : "UNKNOWN";
}

int ty_spec_normalize_job(const json_t *in, bool lenient, json_t **ret, struct ty_error *err)
{
    int flags = lenient ? TY_NORM_LENIENT : 0;
    const char *key;
    json_t *v;
    bool is_job = false;

    if (!json_is_object(in))
        return ty_error_set(
            err, EINVAL, "a job document must be a mapping (a Job or a TrainingInput)");
    json_object_foreach((json_t *)in, key, v)
    {
        if (ty_schema_has_field(&ty_msg_job, key))
            is_job = true;
    }
    if (is_job)
        return ty_schema_normalize(&ty_msg_job, in, "", flags, ret, err);

    /* A bare TrainingInput: wrap it so every caller sees the Job form. */
    json_t *ti = NULL;
    int r = ty_schema_normalize(&ty_msg_training_input, in, "trainingInput", flags, &ti, err);
    if (r < 0)
        return r;
    *ret = json_object();
    json_object_set_new(*ret, "trainingInput", ti);
    return 0;
}

/* The member of the canonical object @canon that the input's @key names: the same key, or
 * its camelCase spelling when it was written snake_case ("worker_count"); its name to
 * *@name. NULL when the canonical form has none (a null, an output-only field). */
static json_t *canon_member(const json_t *canon, const char *key, const char **name)
{
    char camel[128];
    size_t j = 0;
    json_t *v = json_object_get(canon, key);

    *name = key;
    if (v || !strchr(key, '_'))
        return v;
    for (size_t i = 0; key[i] && j + 1 < sizeof(camel); i++)
        camel[j++] = key[i] == '_' && key[i + 1] && i > 0
                         ? (char)(key[++i] >= 'a' && key[i] <= 'z' ? key[i] - 'a' + 'A' : key[i])
                         : key[i];
    camel[j] = '\0';
    v = json_object_get(canon, camel);
    if (v)
        *name = json_object_iter_key(json_object_iter_at((json_t *)canon, camel));
    return v;
}

/* Walk the YAML tree @in and its canonical form @canon together (@path: the canonical path
 * to them): a string of @marks (a plain scalar such as 010, octal 8 to YAML 1.1, gcloud's,
 * and 10 to YAML 1.2) that the canonical form does not hold as the same text was read as a
 * number, which the document does not say: refused with its path. A quoted "010" is text in
 * both YAMLs, and a number field reads it as proto3 JSON does, 10. */
static int check_plain_octal(const json_t *in,
                             const json_t *canon,
                             const json_t *marks,
                             struct ty_buf *path,
                             struct ty_error *err)
{
    size_t at = path->len, i;
    const char *key, *name;
    json_t *v, *c;

    if (json_is_object(in) && json_is_object(canon)) {
        json_object_foreach((json_t *)in, key, v)
        {
            if (!(c = canon_member(canon, key, &name)))
                continue;
            ty_buf_printf(path, "%s%s", at ? "." : "", name);
            if (check_plain_octal(v, c, marks, path, err) < 0)
                return -EINVAL;
            path->len = at;
            path->data[at] = '\0';
        }
    } else if (json_is_array(in) && json_is_array(canon)) {
        json_array_foreach(in, i, v)
        {
            if (!(c = json_array_get(canon, i)))
                break;
            ty_buf_printf(path, "[%zu]", i);
            if (check_plain_octal(v, c, marks, path, err) < 0)
                return -EINVAL;
            path->len = at;
            path->data[at] = '\0';
        }
    } else if (json_is_string(in) && ty_yaml11_octal_differs(json_string_value(in)) &&
               !(json_is_string(canon) &&
                 strcmp(json_string_value(canon), json_string_value(in)) == 0)) {
        json_array_foreach(marks, i, v) if (v == in) return ty_error_set(
            err,
            EINVAL,
            "Invalid value at '%s', \"%s\": a leading 0 is ambiguous: YAML 1.1 (gcloud's) reads an "
            "unquoted 010 as octal 8, YAML 1.2 as 10; write the number without it",
            ty_buf_str(path),
            json_string_value(in));
    }
    return 0;
}

int ty_spec_parse(
    const char *text, size_t len, enum ty_spec_format fmt, json_t **ret, struct ty_error *err)
{
    _cleanup_json_ json_t *tree = NULL, *marks = NULL;
    int r;

    /* A UTF-8 byte order mark (editors on Windows write one) is no part of the document: left
     * in, a JSON file would be taken for YAML and read by YAML's rules. */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        text += 3, len -= 3;
    if (fmt == TY_SPEC_AUTO) {
        size_t i = 0;
        while (i < len && strchr(" \t\r\n", text[i]))
            i++;
        fmt = (i < len && text[i] == '{') ? TY_SPEC_JSON : TY_SPEC_YAML;
    }
    if (fmt == TY_SPEC_JSON)
        r = ty_json_parse(text, len, &tree, err);
    else
        r = ty_yaml_parse_marked(text, len, &tree, &marks, err);
    if (r < 0)
        return r;
    r = ty_spec_normalize_job(tree, fmt == TY_SPEC_YAML, ret, err);
    if (r >= 0 && json_array_size(marks) > 0) {
        /* a bare TrainingInput is the Job's trainingInput */
        bool is_job = false;
        const char *key;
        json_t *v;
        _cleanup_(ty_buf_release) struct ty_buf path = TY_BUF_INIT;
        json_object_foreach(tree, key, v) is_job = is_job || ty_schema_has_field(&ty_msg_job, key);
        if (!is_job)
            ty_buf_puts(&path, "trainingInput");
        r = check_plain_octal(
            tree, is_job ? *ret : json_object_get(*ret, "trainingInput"), marks, &path, err);
        if (r < 0)
            json_decref(*ret), *ret = NULL;
    }
    return r;
}

static char **strv_from_json(const json_t *arr)
{
    char **v;
    size_t i;
    json_t *s;

    if (!json_is_array(arr))
        return NULL;
    v = xcalloc(1, sizeof(char *));
    json_array_foreach(arr, i, s) ty_strv_push(&v, json_string_value(s));
    return v;
}

static int64_t int64_field(const json_t *obj, const char *key)
{
    int64_t n = 0;
    const char *s = ty_json_str(obj, key);
    if (s)
        (void)ty_parse_int64(s, INT64_MIN, INT64_MAX, &n);
    return n;
}

static void extract_role(struct ty_role_spec *rs, const json_t *ti, enum ty_role role)
{
    _cleanup_free_ char *type_key = xasprintf("%sType", ty_role_field(role));
    _cleanup_free_ char *cfg_key = xasprintf("%sConfig", ty_role_field(role));
    _cleanup_free_ char *count_key = xasprintf("%sCount", ty_role_field(role));
    json_t *cfg = json_object_get(ti, cfg_key);
    json_t *acc = json_object_get(cfg, "acceleratorConfig");

    rs->machine_type = xstrdup(ty_json_str(ti, type_key));
    rs->count = role == TY_ROLE_MASTER ? 1 : int64_field(ti, count_key);
    rs->image_uri = xstrdup(ty_json_str(cfg, "imageUri"));
    rs->container_command = strv_from_json(json_object_get(cfg, "containerCommand"));
    rs->container_args = strv_from_json(json_object_get(cfg, "containerArgs"));
    if (acc) {
        rs->accel.type = xstrdup(ty_json_str(acc, "type"));
        rs->accel.count = int64_field(acc, "count");
    }
}

/* Scale tiers other than CUSTOM fix the cluster shape (docs/job-spec.md#scale-tiers). */
static void expand_tier(struct ty_job *job)
{
    static const struct {
        enum ty_scale_tier tier;
        const char *master;
        int64_t workers, ps;
    } shapes[] = {
        {TY_TIER_BASIC, "standard", 0, 0},
        {TY_TIER_BASIC_GPU, "standard_gpu", 0, 0},
        {TY_TIER_STANDARD_1, "standard", 4, 3},
        {TY_TIER_PREMIUM_1, "standard", 19, 11},
    };
    for (size_t i = 0; i < TY_ARRAY_SIZE(shapes); i++) {
        if (shapes[i].tier != job->scale_tier)
            continue;
        ty_replace_str(&job->roles[TY_ROLE_MASTER].machine_type, shapes[i].master);
        job->roles[TY_ROLE_WORKER].count = shapes[i].workers;
        job->roles[TY_ROLE_PS].count = shapes[i].ps;
        if (shapes[i].workers)
            ty_replace_str(&job->roles[TY_ROLE_WORKER].machine_type, "standard");
        if (shapes[i].ps)
            ty_replace_str(&job->roles[TY_ROLE_PS].machine_type, "standard");
    }
}

static void resolve_tier(struct ty_job *job, const json_t *ti)
{
    const char *tier = ty_json_str(ti, "scaleTier");

    job->scale_tier = TY_TIER_BASIC;
    if (!tier) {
        /* An omitted scaleTier is BASIC (the proto default), unless the job names a master
         * machine type: then the user evidently meant CUSTOM. */
        if (ty_json_str(ti, "masterType"))
            job->scale_tier = TY_TIER_CUSTOM;
        return;
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(tier_names); i++)
        if (strcmp(tier, tier_names[i]) == 0)
            job->scale_tier = (enum ty_scale_tier)i;
}

int ty_job_from_json(const json_t *job_json, struct ty_job **ret, struct ty_error *err)
{
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_json_ json_t *canon = NULL;
    json_t *ti;
    const char *job_dir;
    json_t *sched;
    int r;

    r = ty_spec_normalize_job(job_json, false, &canon, err);
    if (r < 0)
        return r;
    ti = json_object_get(canon, "trainingInput");
    if (!ti)
        return ty_error_set(err, EINVAL, "trainingInput: required");

    job = xcalloc(1, sizeof(*job));
    job->job_id = xstrdup(ty_json_str(canon, "jobId"));
    job->labels = json_object_get(canon, "labels");
    job->labels = job->labels ? json_incref(job->labels) : json_object();
    job->training_input = json_incref(ti);

    resolve_tier(job, ti);
    for (int i = 0; i < TY_ROLE_MAX; i++)
        extract_role(&job->roles[i], ti, (enum ty_role)i);
    job->args = strv_from_json(json_object_get(ti, "args"));
    job_dir = ty_json_str(ti, "jobDir");
    /* an empty string is no value (proto3), as on AI Platform: no --job-dir=, no mount */
    job->job_dir = job_dir && *job_dir ? xstrdup(job_dir) : NULL;
    job->region = xstrdup(ty_json_str(ti, "region"));
    job->use_chief = json_is_true(json_object_get(ti, "useChiefInTfConfig"));
    sched = json_object_get(ti, "scheduling");
    if (ty_json_str(sched, "maxRunningTime"))
        (void)ty_duration_parse(ty_json_str(sched, "maxRunningTime"), &job->max_running_usec, NULL);

    /* Check the user's shape before expanding it, so errors talk about what was written. */
    r = ty_job_validate(job, err);
    if (r < 0)
        return r;
    expand_tier(job);
    /* A role without an image of its own runs the master's image, and then also the
     * master's command and arguments unless it sets its own (docs/job-spec.md). */
    for (int i = 1; i < TY_ROLE_MAX; i++) {
        struct ty_role_spec *rs = &job->roles[i], *m = &job->roles[TY_ROLE_MASTER];
        if (rs->image_uri && *rs->image_uri)
            continue;
        ty_replace_str(&rs->image_uri, m->image_uri);
        if (!rs->container_command && !rs->container_args) {
            rs->container_command = ty_strv_copy(m->container_command);
            rs->container_args = ty_strv_copy(m->container_args);
        }
    }

    if (json_object_get(ti, "hyperparameters")) {
        r = ty_hp_from_json(json_object_get(ti, "hyperparameters"), &job->hp, err);
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(job);
    return 0;
}

struct ty_job *ty_job_free(struct ty_job *job)
{
    if (!job)
        return NULL;
    free(job->job_id);
    json_decref(job->labels);
    json_decref(job->training_input);
    for (int i = 0; i < TY_ROLE_MAX; i++) {
        struct ty_role_spec *rs = &job->roles[i];
        free(rs->machine_type);
        free(rs->image_uri);
        free(rs->accel.type);
        ty_strv_free(rs->container_command);
        ty_strv_free(rs->container_args);
    }
    ty_strv_free(job->args);
    free(job->job_dir);
    free(job->region);
    ty_hp_free(job->hp);
    free(job);
    return NULL;
}

int64_t ty_job_replica_count(const struct ty_job *job)
{
    int64_t n = 0;
    for (int i = 0; i < TY_ROLE_MAX; i++)
        n += job->roles[i].count;
    return n;
}

int ty_role_gpus(const struct ty_job *job, enum ty_role role, const char **type)
{
    const struct ty_role_spec *rs = &job->roles[role];
    const struct ty_machine_type *mt =
        rs->machine_type ? ty_machine_lookup(rs->machine_type) : NULL;

    if (type)
        *type = NULL;
    if (rs->accel.type && rs->accel.count > 0) {
        if (type)
            *type = rs->accel.type;
        return (int)rs->accel.count;
    }
    if (mt && mt->gpus > 0) {
        if (type)
            *type = mt->gpu_type;
        return mt->gpus;
    }
    return 0;
}

bool ty_job_dir_is_local(const char *job_dir)
{
    return job_dir && job_dir[0] && !strstr(job_dir, "://");
}

bool ty_job_has_task(const struct ty_job *job, const char *task)
{
    if (strcmp(task, "service") == 0)
        return true;
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        const char *name = role_names[role];
        size_t n = strlen(name);
        int64_t index;

        if (strncmp(task, name, n) != 0 || strncmp(task + n, "-replica-", 9) != 0)
            continue;
        /* Canonical numbers only: "worker-replica-01" is no task. */
        if ((task[n + 9] == '0' && task[n + 10]) ||
            ty_parse_int64(task + n + 9, 0, INT64_MAX, &index) < 0)
            return false;
        return index < job->roles[role].count;
    }
    return false;
}

char *ty_job_task_list(const struct ty_job *job)
{
    struct ty_buf b = TY_BUF_INIT;

    ty_buf_puts(&b, "service");
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        int64_t count = job->roles[role].count;
        for (int64_t i = 0; i < count; i++) {
            if (count > 3 && i == 1) {
                ty_buf_puts(&b, ", ...");
                i = count - 1;
            }
            ty_buf_printf(&b, ", %s-replica-%lld", role_names[role], (long long)i);
        }
    }
    return ty_buf_take(&b);
}

char *ty_job_task_mismatch(const char *job_id, const json_t *training_input, const char *task)
{
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_json_ json_t *doc = json_pack("{s:s, s:O}",
                                           "jobId",
                                           job_id,
                                           "trainingInput",
                                           training_input ? training_input : json_null());
    struct ty_error e = {0};

    if (!doc || ty_job_from_json(doc, &job, &e) < 0 || ty_job_has_task(job, task))
        return NULL;
    return ty_job_task_list(job);
}
