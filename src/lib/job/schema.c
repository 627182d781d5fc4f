/* SPDX-License-Identifier: Apache-2.0
 * schema.c: the ml v1 message tables (from the REST discovery document, revision 20230121)
 * and the normaliser that turns an untrusted JSON/YAML tree into the canonical form. */
#include "schema.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "suggest.h"
#include "timeutil.h"

#define MSG(n, f)                                                                                  \
    {                                                                                              \
        n, f, TY_ARRAY_SIZE(f)                                                                     \
    }

static const char *const e_scale_tier[] = {
    "BASIC", "STANDARD_1", "PREMIUM_1", "BASIC_GPU", "BASIC_TPU", "CUSTOM", NULL};
static const char *const e_accel[] = {"ACCELERATOR_TYPE_UNSPECIFIED",
                                      "NVIDIA_TESLA_K80",
                                      "NVIDIA_TESLA_P100",
                                      "NVIDIA_TESLA_V100",
                                      "NVIDIA_TESLA_P4",
                                      "NVIDIA_TESLA_T4",
                                      "NVIDIA_TESLA_A100",
                                      "TPU_V2",
                                      "TPU_V3",
                                      "TPU_V2_POD",
                                      "TPU_V3_POD",
                                      NULL};
static const char *const e_algorithm[] = {
    "ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH", NULL};
static const char *const e_goal[] = {"GOAL_TYPE_UNSPECIFIED", "MAXIMIZE", "MINIMIZE", NULL};
static const char *const e_scale_type[] = {
    "NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE", NULL};
static const char *const e_param_type[] = {
    "PARAMETER_TYPE_UNSPECIFIED", "DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE", NULL};
const char *const ty_job_state_names[] = {"STATE_UNSPECIFIED",
                                          "QUEUED",
                                          "PREPARING",
                                          "RUNNING",
                                          "SUCCEEDED",
                                          "FAILED",
                                          "CANCELLING",
                                          "CANCELLED",
                                          NULL};

static const struct ty_field f_accel[] = {
    {"count", TY_FT_INT64, NULL, NULL, false, NULL},
    {"type", TY_FT_ENUM, NULL, e_accel, false, NULL},
};
static const struct ty_message m_accel = MSG("AcceleratorConfig", f_accel);

static const struct ty_field f_disk[] = {
    {"bootDiskSizeGb", TY_FT_INT32, NULL, NULL, false, NULL},
    {"bootDiskType", TY_FT_STRING, NULL, NULL, false, NULL},
};
static const struct ty_message m_disk = MSG("DiskConfig", f_disk);

static const struct ty_field f_replica[] = {
    {"imageUri", TY_FT_STRING, NULL, NULL, false, NULL},
    {"acceleratorConfig", TY_FT_MESSAGE, &m_accel, NULL, false, NULL},
    {"containerCommand", TY_FT_STRING_ARRAY, NULL, NULL, false, NULL},
    {"containerArgs", TY_FT_STRING_ARRAY, NULL, NULL, false, NULL},
    {"diskConfig", TY_FT_MESSAGE, &m_disk, NULL, false, NULL},
    {"tpuTfVersion", TY_FT_STRING, NULL, NULL, false, NULL},
};
static const struct ty_message m_replica = MSG("ReplicaConfig", f_replica);

static const struct ty_field f_param[] = {
    {"parameterName", TY_FT_STRING, NULL, NULL, false, NULL},
    {"type", TY_FT_ENUM, NULL, e_param_type, false, NULL},
    {"minValue", TY_FT_DOUBLE, NULL, NULL, false, NULL},
    {"maxValue", TY_FT_DOUBLE, NULL, NULL, false, NULL},
    {"categoricalValues", TY_FT_STRING_ARRAY, NULL, NULL, false, NULL},
    {"discreteValues", TY_FT_DOUBLE_ARRAY, NULL, NULL, false, NULL},
    {"scaleType", TY_FT_ENUM, NULL, e_scale_type, false, NULL},
};
static const struct ty_message m_param = MSG("ParameterSpec", f_param);

static const struct ty_field f_hp[] = {
    {"goal", TY_FT_ENUM, NULL, e_goal, false, NULL},
    {"params", TY_FT_MESSAGE_ARRAY, &m_param, NULL, false, NULL},
    {"maxTrials", TY_FT_INT32, NULL, NULL, false, NULL},
    {"maxParallelTrials", TY_FT_INT32, NULL, NULL, false, NULL},
    {"maxFailedTrials", TY_FT_INT32, NULL, NULL, false, NULL},
    {"hyperparameterMetricTag", TY_FT_STRING, NULL, NULL, false, NULL},
    {"resumePreviousJobId", TY_FT_STRING, NULL, NULL, false, NULL},
    {"enableTrialEarlyStopping", TY_FT_BOOL, NULL, NULL, false, NULL},
    {"algorithm", TY_FT_ENUM, NULL, e_algorithm, false, NULL},
};
static const struct ty_message m_hp = MSG("HyperparameterSpec", f_hp);

static const struct ty_field f_sched[] = {
    {"maxRunningTime", TY_FT_DURATION, NULL, NULL, false, NULL},
    {"maxWaitTime", TY_FT_DURATION, NULL, NULL, false, NULL},
    {"priority", TY_FT_INT32, NULL, NULL, false, NULL},
    /* Vertex AI's, accepted as trainyard's extensions (docs/lifecycle.md). */
    {"restartJobOnWorkerRestart", TY_FT_BOOL, NULL, NULL, false, NULL},
    {"disableRetries", TY_FT_BOOL, NULL, NULL, false, NULL},
};
static const struct ty_message m_sched = MSG("Scheduling", f_sched);

static const struct ty_field f_enc[] = {
    {"kmsKeyName", TY_FT_STRING, NULL, NULL, false, NULL},
};
static const struct ty_message m_enc = MSG("EncryptionConfig", f_enc);

static const struct ty_field f_ti[] = {
    {"scaleTier", TY_FT_ENUM, NULL, e_scale_tier, false, NULL},
    {"masterType", TY_FT_STRING, NULL, NULL, false, NULL},
    {"masterConfig", TY_FT_MESSAGE, &m_replica, NULL, false, NULL},
    {"workerType", TY_FT_STRING, NULL, NULL, false, NULL},
    {"workerConfig", TY_FT_MESSAGE, &m_replica, NULL, false, NULL},
    {"parameterServerType", TY_FT_STRING, NULL, NULL, false, NULL},
    {"parameterServerConfig", TY_FT_MESSAGE, &m_replica, NULL, false, NULL},
    {"evaluatorType", TY_FT_STRING, NULL, NULL, false, NULL},
    {"evaluatorConfig", TY_FT_MESSAGE, &m_replica, NULL, false, NULL},
    {"useChiefInTfConfig", TY_FT_BOOL, NULL, NULL, false, NULL},
    {"workerCount", TY_FT_INT64, NULL, NULL, false, NULL},
    {"parameterServerCount", TY_FT_INT64, NULL, NULL, false, NULL},
    {"evaluatorCount", TY_FT_INT64, NULL, NULL, false, NULL},
    {"packageUris", TY_FT_STRING_ARRAY, NULL, NULL, false, NULL},
    {"pythonModule", TY_FT_STRING, NULL, NULL, false, NULL},
    {"args", TY_FT_STRING_ARRAY, NULL, NULL, false, NULL},
    {"hyperparameters", TY_FT_MESSAGE, &m_hp, NULL, false, NULL},
    {"region", TY_FT_STRING, NULL, NULL, false, NULL},
    {"jobDir", TY_FT_STRING, NULL, NULL, false, NULL},
    {"runtimeVersion", TY_FT_STRING, NULL, NULL, false, NULL},
    {"pythonVersion", TY_FT_STRING, NULL, NULL, false, NULL},
    {"scheduling", TY_FT_MESSAGE, &m_sched, NULL, false, NULL},
    {"network", TY_FT_STRING, NULL, NULL, false, NULL},
    {"serviceAccount", TY_FT_STRING, NULL, NULL, false, NULL},
    {"enableWebAccess", TY_FT_BOOL, NULL, NULL, false, NULL},
    {"encryptionConfig", TY_FT_MESSAGE, &m_enc, NULL, false, NULL},
};
const struct ty_message ty_msg_training_input = MSG("TrainingInput", f_ti);

static const struct ty_field f_job[] = {
    {"jobId", TY_FT_STRING, NULL, NULL, false, NULL},
    {"labels", TY_FT_STRING_MAP, NULL, NULL, false, NULL},
    {"trainingInput", TY_FT_MESSAGE, &ty_msg_training_input, NULL, false, NULL},
    {"predictionInput",
     TY_FT_STRING,
     NULL,
     NULL,
     false,
     "batch prediction jobs are not supported by trainyard"},
    {"etag", TY_FT_STRING, NULL, NULL, false, NULL},
    {"createTime", TY_FT_STRING, NULL, NULL, true, NULL},
    {"startTime", TY_FT_STRING, NULL, NULL, true, NULL},
    {"endTime", TY_FT_STRING, NULL, NULL, true, NULL},
    {"state", TY_FT_ENUM, NULL, ty_job_state_names, true, NULL},
    {"errorMessage", TY_FT_STRING, NULL, NULL, true, NULL},
    {"jobPosition", TY_FT_INT64, NULL, NULL, true, NULL},
    {"trainingOutput", TY_FT_STRING, NULL, NULL, true, NULL},
    {"predictionOutput", TY_FT_STRING, NULL, NULL, true, NULL},
    /* trainyard's own output (docs/service.md): a job written by trainyard reads back */
    {"attemptStatus", TY_FT_STRING, NULL, NULL, true, NULL},
    {"stateReason", TY_FT_STRING, NULL, NULL, true, NULL},
    {"transitions", TY_FT_STRING, NULL, NULL, true, NULL},
};
const struct ty_message ty_msg_job = MSG("Job", f_job);

/* "parameterServerCount" -> "parameter_server_count" */
static void camel_to_snake(const char *camel, char *out, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; camel[i] && j + 2 < n; i++) {
        char c = camel[i];
        if (c >= 'A' && c <= 'Z') {
            out[j++] = '_';
            c = (char)(c - 'A' + 'a');
        }
        out[j++] = c;
    }
    out[j] = '\0';
}

static const struct ty_field *find_field(const struct ty_message *msg, const char *key)
{
    char snake[128];
    for (size_t i = 0; i < msg->n_fields; i++) {
        if (strcmp(msg->fields[i].name, key) == 0)
            return &msg->fields[i];
        camel_to_snake(msg->fields[i].name, snake, sizeof(snake));
        if (strcmp(snake, key) == 0)
            return &msg->fields[i];
    }
    return NULL;
}

/* The field of @msg nearest to the unknown @key (by its camel or snake spelling), or NULL:
 * the "did you mean" of an unknown name ("masterconfig" -> masterConfig). */
static const struct ty_field *near_field(const struct ty_message *msg, const char *key)
{
    const struct ty_field *best = NULL;
    size_t best_d = ty_suggest_threshold(key) + 1;
    char snake[128];

    for (size_t i = 0; i < msg->n_fields; i++) {
        size_t d = ty_edit_distance(key, msg->fields[i].name);
        camel_to_snake(msg->fields[i].name, snake, sizeof(snake));
        if (ty_edit_distance(key, snake) < d)
            d = ty_edit_distance(key, snake);
        if (d < best_d && d < strlen(msg->fields[i].name)) {
            best = &msg->fields[i];
            best_d = d;
        }
    }
    return best;
}

bool ty_schema_has_field(const struct ty_message *msg, const char *key)
{
    return find_field(msg, key) != NULL;
}

const char *const *ty_schema_enum_values(const struct ty_message *msg, const char *path)
{
    _cleanup_free_ char *copy = xstrdup(path);
    const struct ty_field *f = NULL;
    char *save = NULL;

    for (char *name = strtok_r(copy, ".", &save); name; name = strtok_r(NULL, ".", &save)) {
        if (!msg)
            return NULL; /* a name under a field that is not a message */
        f = find_field(msg, name);
        if (!f)
            return NULL;
        msg = f->message;
    }
    return f && f->type == TY_FT_ENUM ? f->enum_values : NULL;
}

static char *join_path(const char *path, const char *name)
{
    return *path ? xasprintf("%s.%s", path, name) : xstrdup(name);
}

static int bad_value(
    struct ty_error *err, const char *path, const char *type, const json_t *v, const char *why)
{
    _cleanup_free_ char *text = ty_json_compact_short(v);
    return ty_error_set(err,
                        EINVAL,
                        "Invalid value at '%s' (%s), %s%s%s",
                        path,
                        type,
                        text,
                        why ? ": " : "",
                        why ? why : "");
}

static int norm_int(
    const json_t *v, const char *path, bool is64, int flags, json_t **ret, struct ty_error *err)
{
    const char *type = is64 ? "TYPE_INT64" : "TYPE_INT32";
    int64_t lo = is64 ? INT64_MIN : INT32_MIN, hi = is64 ? INT64_MAX : INT32_MAX;
    int64_t n;

    if (json_is_integer(v)) {
        n = json_integer_value(v);
        if (n < lo || n > hi)
            return bad_value(err, path, type, v, "out of range");
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != floor(d))
            return bad_value(err, path, type, v, "expected an integer");
        /* (double) INT64_MAX rounds up to 2^63, which does not fit: compare with >=. */
        if (d < (double)lo || d >= (double)hi + 1.0)
            return bad_value(err, path, type, v, "out of range");
        n = (int64_t)d;
    } else if (json_is_string(v)) {
        int r = ty_parse_int64(json_string_value(v), lo, hi, &n);
        double d;
        /* YAML's scalars are all strings here: its 2.0 is a number, taken as JSON's 2.0 is */
        if (r == -EINVAL && (flags & TY_NORM_LENIENT) &&
            ty_parse_double(json_string_value(v), &d) == 0 && isfinite(d)) {
            if (d != floor(d))
                return bad_value(err, path, type, v, "expected an integer");
            if (d < (double)lo || d >= (double)hi + 1.0)
                return bad_value(err, path, type, v, "out of range");
            n = (int64_t)d;
            r = 0;
        }
        if (r == -ERANGE)
            return bad_value(err, path, type, v, "out of range");
        if (r < 0)
            return bad_value(err, path, type, v, "expected an integer");
    } else {
        return bad_value(err, path, type, v, "expected an integer");
    }
    *ret = is64 ? json_sprintf("%lld", (long long)n) : json_integer(n);
    return 0;
}

static int
norm_double(const json_t *v, const char *path, int flags, json_t **ret, struct ty_error *err)
{
    double d;
    if (json_is_number(v)) {
        d = json_number_value(v);
    } else if (!json_is_string(v) || ty_parse_double(json_string_value(v), &d) < 0) {
        return bad_value(err, path, "TYPE_DOUBLE", v, "expected a number");
    }
    if (!isfinite(d))
        return bad_value(err, path, "TYPE_DOUBLE", v, "expected a finite number");
    *ret = json_real(d);
    return 0;
}

static int
norm_bool(const json_t *v, const char *path, int flags, json_t **ret, struct ty_error *err)
{
    if (json_is_boolean(v)) {
        *ret = json_boolean(json_is_true(v));
        return 0;
    }
    if ((flags & TY_NORM_LENIENT) && json_is_string(v)) {
        /* YAML 1.1 booleans, as PyYAML (and so gcloud) read them. */
        static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {
                                                                    "false", "no", "off"};
        const char *s = json_string_value(v);
        for (size_t i = 0; i < TY_ARRAY_SIZE(yes); i++) {
            if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
                *ret = json_boolean(strcasecmp(s, yes[i]) == 0);
                return 0;
            }
        }
    }
    return bad_value(err, path, "TYPE_BOOL", v, "expected true or false");
}

static int
norm_string(const json_t *v, const char *path, int flags, json_t **ret, struct ty_error *err)
{
    if (json_is_string(v)) {
        /* Everything downstream reads C strings: a NUL would cut the value short. */
        if (strlen(json_string_value(v)) != json_string_length(v))
            return bad_value(err, path, "TYPE_STRING", v, "must not contain NUL characters");
        *ret = json_stringn(json_string_value(v), json_string_length(v));
        return 0;
    }
    if ((flags & TY_NORM_LENIENT) && json_is_boolean(v)) {
        *ret = json_string(json_is_true(v) ? "true" : "false");
        return 0;
    }
    return bad_value(err, path, "TYPE_STRING", v, "expected a string");
}

static int norm_enum(
    const struct ty_field *f, const json_t *v, const char *path, json_t **ret, struct ty_error *err)
{
    struct ty_buf allowed = TY_BUF_INIT;
    int r;

    if (json_is_string(v)) {
        for (size_t i = 0; f->enum_values[i]; i++) {
            if (strcmp(f->enum_values[i], json_string_value(v)) == 0) {
                *ret = json_string(f->enum_values[i]);
                return 0;
            }
        }
    }
    for (size_t i = 0; f->enum_values[i]; i++)
        ty_buf_printf(&allowed, "%s%s", i ? ", " : "", f->enum_values[i]);
    const char *near =
        json_is_string(v) ? ty_suggest_among(json_string_value(v), f->enum_values) : NULL;
    _cleanup_free_ char *why =
        near ? xasprintf("expected one of %s (did you mean %s?)", ty_buf_str(&allowed), near)
             : xasprintf("expected one of %s", ty_buf_str(&allowed));
    r = bad_value(err, path, "TYPE_ENUM", v, why);
    ty_buf_release(&allowed);
    return r;
}

static int norm_duration(const json_t *v, const char *path, json_t **ret, struct ty_error *err)
{
    struct ty_error sub;
    int64_t usec;

    if (!json_is_string(v))
        return bad_value(
            err, path, "google.protobuf.Duration", v, "expected a string such as \"7200s\"");
    if (ty_duration_parse(json_string_value(v), &usec, &sub) < 0)
        return bad_value(err,
                         path,
                         "google.protobuf.Duration",
                         v,
                         sub.code == ERANGE ? "at most 315576000000s (10,000 years)"
                         : json_string_value(v)[0] == '-'
                             ? "must be positive (a duration here is never negative)"
                         : sub.code == EDOM
                             ? "finer than a microsecond, the resolution trainyard keeps"
                             : "expected seconds with an 's' suffix, such as \"7200s\"");
    if (usec % 1000000) {
        char frac[8];
        size_t n;
        (void)snprintf(frac, sizeof(frac), "%06lld", (long long)(usec % 1000000));
        for (n = strlen(frac); n > 0 && frac[n - 1] == '0'; n--)
            frac[n - 1] = '\0';
        *ret = json_sprintf("%lld.%ss", (long long)(usec / 1000000), frac);
    } else
        *ret = json_sprintf("%llds", (long long)(usec / 1000000));
    return 0;
}

static int norm_value(const struct ty_field *f,
                      const json_t *v,
                      const char *path,
                      int flags,
                      json_t **ret,
                      struct ty_error *err);

static int norm_array(const struct ty_field *f,
                      const json_t *v,
                      const char *path,
                      int flags,
                      json_t **ret,
                      struct ty_error *err)
{
    struct ty_field elem = *f;
    json_t *out;
    size_t i;
    json_t *item;

    if (!json_is_array(v))
        return bad_value(err, path, "TYPE_ARRAY", v, "expected a list");
    elem.type = f->type == TY_FT_STRING_ARRAY   ? TY_FT_STRING
                : f->type == TY_FT_DOUBLE_ARRAY ? TY_FT_DOUBLE
                                                : TY_FT_MESSAGE;
    out = json_array();
    json_array_foreach(v, i, item)
    {
        _cleanup_free_ char *ipath = xasprintf("%s[%zu]", path, i);
        json_t *n = NULL;
        int r = norm_value(&elem, item, ipath, flags, &n, err);
        if (r < 0) {
            json_decref(out);
            return r;
        }
        json_array_append_new(out, n);
    }
    *ret = out;
    return 0;
}

static int
norm_map(const json_t *v, const char *path, int flags, json_t **ret, struct ty_error *err)
{
    const char *k;
    json_t *item;
    json_t *out;

    if (!json_is_object(v))
        return bad_value(err, path, "TYPE_MAP", v, "expected a mapping of strings");
    out = json_object();
    json_object_foreach((json_t *)v, k, item)
    {
        _cleanup_free_ char *kpath = xasprintf("%s.%s", path, k);
        json_t *n = NULL;
        int r = norm_string(item, kpath, flags, &n, err);
        if (r < 0) {
            json_decref(out);
            return r;
        }
        json_object_set_new(out, k, n);
    }
    *ret = out;
    return 0;
}

static int norm_value(const struct ty_field *f,
                      const json_t *v,
                      const char *path,
                      int flags,
                      json_t **ret,
                      struct ty_error *err)
{
    switch (f->type) {
    case TY_FT_STRING:
        return norm_string(v, path, flags, ret, err);
    case TY_FT_INT64:
    case TY_FT_INT32:
        return norm_int(v, path, f->type == TY_FT_INT64, flags, ret, err);
    case TY_FT_DOUBLE:
        return norm_double(v, path, flags, ret, err);
    case TY_FT_BOOL:
        return norm_bool(v, path, flags, ret, err);
    case TY_FT_ENUM:
        return norm_enum(f, v, path, ret, err);
    case TY_FT_DURATION:
        return norm_duration(v, path, ret, err);
    case TY_FT_MESSAGE:
        return ty_schema_normalize(f->message, v, path, flags, ret, err);
    case TY_FT_STRING_ARRAY:
    case TY_FT_DOUBLE_ARRAY:
    case TY_FT_MESSAGE_ARRAY:
        return norm_array(f, v, path, flags, ret, err);
    case TY_FT_STRING_MAP:
        return norm_map(v, path, flags, ret, err);
    }
    return ty_error_set(err, EINVAL, "internal: unknown field type at '%s'", path);
}

int ty_schema_normalize(const struct ty_message *msg,
                        const json_t *in,
                        const char *path,
                        int flags,
                        json_t **ret,
                        struct ty_error *err)
{
    json_t *out;
    const char *key;
    json_t *v;

    if (!json_is_object(in)) {
        _cleanup_free_ char *type = xasprintf("%s", msg->name);
        return bad_value(err, *path ? path : msg->name, type, in, "expected an object");
    }
    /* First pass: every key must be known, and known once (camel and snake spellings of
     * the same field count as the same field). */
    json_object_foreach((json_t *)in, key, v)
    {
        const struct ty_field *f = find_field(msg, key);
        if (!f) {
            const struct ty_field *near = near_field(msg, key);
            return ty_error_set(err,
                                EINVAL,
                                "Invalid JSON payload received. Unknown name \"%s\" at '%s': "
                                "Cannot find field.%s%s%s",
                                key,
                                *path ? path : msg->name,
                                near ? " Did you mean \"" : "",
                                near ? near->name : "",
                                near ? "\"?" : "");
        }
        const char *k2;
        json_t *v2;
        json_object_foreach((json_t *)in, k2, v2)
        {
            if (k2 != key && strcmp(k2, key) != 0 && find_field(msg, k2) == f)
                return ty_error_set(err,
                                    EINVAL,
                                    "Invalid JSON payload received. Field \"%s\" at '%s' is "
                                    "given twice (as \"%s\" and \"%s\").",
                                    f->name,
                                    *path ? path : msg->name,
                                    key,
                                    k2);
        }
    }
    /* Second pass, in schema order, so the canonical form has a stable key order. */
    out = json_object();
    for (size_t i = 0; i < msg->n_fields; i++) {
        const struct ty_field *f = &msg->fields[i];
        json_t *n = NULL;
        json_t *val = NULL;
        json_object_foreach((json_t *)in, key, v)
        {
            if (find_field(msg, key) == f)
                val = v;
        }
        if (!val || json_is_null(val) || f->output_only)
            continue;
        _cleanup_free_ char *fpath = join_path(path, f->name);
        if (f->unsupported) {
            json_decref(out);
            return ty_error_set(err, EINVAL, "%s: %s", fpath, f->unsupported);
        }
        int r = norm_value(f, val, fpath, flags, &n, err);
        if (r < 0) {
            json_decref(out);
            return r;
        }
        json_object_set_new(out, f->name, n);
    }
    *ret = out;
    return 0;
}
