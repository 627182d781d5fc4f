/* SPDX-License-Identifier: Apache-2.0
 * train-flags.c: the training flags of `gcloud ai-platform jobs submit training` (container
 * jobs), plus the evaluator flags gcloud never had and --<role>-command (containerCommand, so
 * that flags alone make a process-runtime job), mapped onto TrainingInput fields; gcloud's
 * python-package flags are refused with the reason. The
 * flags only *write* fields; all checking happens in the library's validation, so a flag and
 * the same field in --config are held to the same rules. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "schema.h"
#include "spec.h"
#include "strv.h"
#include "suggest.h"

enum {
    O_CONFIG = TRAIN_OPT_BASE,
    O_SCALE_TIER,
    O_REGION,
    O_JOB_DIR,
    O_LABELS,
    O_USE_CHIEF,
    /* recorded in the job, no effect here (as in a config file) */
    O_SERVICE_ACCOUNT,
    O_ENABLE_WEB_ACCESS,
    O_KMS_KEY, /* then O_KMS_KEYRING, O_KMS_LOCATION, O_KMS_PROJECT: tf->kms[] in order */
    O_KMS_KEYRING,
    O_KMS_LOCATION,
    O_KMS_PROJECT,
    O_STAGING_BUCKET, /* accepted, no effect: nothing is uploaded */
    /* gcloud's python-package (runtime-version) flags: refused with the reason, but
     * --python-version, recorded as pythonVersion is in a config file */
    O_MODULE_NAME,
    O_PACKAGE_PATH,
    O_PACKAGES,
    O_RUNTIME_VERSION,
    O_PYTHON_VERSION,
    /* gcloud ai-platform local train's cluster flags: refused with what to give instead */
    O_DISTRIBUTED,
    O_START_PORT,
    /* per role: machine type, image, accelerator, count (master has no count), command */
    O_ROLE_FIRST,
};

#define ROLE_OPT(role, what) (O_ROLE_FIRST + (role)*W_N + (what))
enum { W_TYPE, W_IMAGE, W_ACCEL, W_COUNT, W_COMMAND, W_N };

const struct option train_options[] = {
    {"config", required_argument, NULL, O_CONFIG},
    {"scale-tier", required_argument, NULL, O_SCALE_TIER},
    {"region", required_argument, NULL, O_REGION},
    {"job-dir", required_argument, NULL, O_JOB_DIR},
    {"labels", required_argument, NULL, O_LABELS},
    {"use-chief-in-tf-config", required_argument, NULL, O_USE_CHIEF},
    {"service-account", required_argument, NULL, O_SERVICE_ACCOUNT},
    {"enable-web-access", no_argument, NULL, O_ENABLE_WEB_ACCESS},
    {"kms-key", required_argument, NULL, O_KMS_KEY},
    {"kms-keyring", required_argument, NULL, O_KMS_KEYRING},
    {"kms-location", required_argument, NULL, O_KMS_LOCATION},
    {"kms-project", required_argument, NULL, O_KMS_PROJECT},
    {"staging-bucket", required_argument, NULL, O_STAGING_BUCKET},
    {"module-name", required_argument, NULL, O_MODULE_NAME},
    {"package-path", required_argument, NULL, O_PACKAGE_PATH},
    {"packages", required_argument, NULL, O_PACKAGES},
    {"runtime-version", required_argument, NULL, O_RUNTIME_VERSION},
    {"python-version", required_argument, NULL, O_PYTHON_VERSION},
    {"distributed", no_argument, NULL, O_DISTRIBUTED},
    {"start-port", required_argument, NULL, O_START_PORT},
    {"master-machine-type", required_argument, NULL, ROLE_OPT(TY_ROLE_MASTER, W_TYPE)},
    {"master-image-uri", required_argument, NULL, ROLE_OPT(TY_ROLE_MASTER, W_IMAGE)},
    {"master-accelerator", required_argument, NULL, ROLE_OPT(TY_ROLE_MASTER, W_ACCEL)},
    {"master-command", required_argument, NULL, ROLE_OPT(TY_ROLE_MASTER, W_COMMAND)},
    {"worker-machine-type", required_argument, NULL, ROLE_OPT(TY_ROLE_WORKER, W_TYPE)},
    {"worker-image-uri", required_argument, NULL, ROLE_OPT(TY_ROLE_WORKER, W_IMAGE)},
    {"worker-accelerator", required_argument, NULL, ROLE_OPT(TY_ROLE_WORKER, W_ACCEL)},
    {"worker-command", required_argument, NULL, ROLE_OPT(TY_ROLE_WORKER, W_COMMAND)},
    {"worker-count", required_argument, NULL, ROLE_OPT(TY_ROLE_WORKER, W_COUNT)},
    {"parameter-server-machine-type", required_argument, NULL, ROLE_OPT(TY_ROLE_PS, W_TYPE)},
    {"parameter-server-image-uri", required_argument, NULL, ROLE_OPT(TY_ROLE_PS, W_IMAGE)},
    {"parameter-server-accelerator", required_argument, NULL, ROLE_OPT(TY_ROLE_PS, W_ACCEL)},
    {"parameter-server-command", required_argument, NULL, ROLE_OPT(TY_ROLE_PS, W_COMMAND)},
    {"parameter-server-count", required_argument, NULL, ROLE_OPT(TY_ROLE_PS, W_COUNT)},
    {"evaluator-machine-type", required_argument, NULL, ROLE_OPT(TY_ROLE_EVALUATOR, W_TYPE)},
    {"evaluator-image-uri", required_argument, NULL, ROLE_OPT(TY_ROLE_EVALUATOR, W_IMAGE)},
    {"evaluator-accelerator", required_argument, NULL, ROLE_OPT(TY_ROLE_EVALUATOR, W_ACCEL)},
    {"evaluator-command", required_argument, NULL, ROLE_OPT(TY_ROLE_EVALUATOR, W_COMMAND)},
    {"evaluator-count", required_argument, NULL, ROLE_OPT(TY_ROLE_EVALUATOR, W_COUNT)},
    {NULL, 0, NULL, 0},
};

const char train_flags_help[] =
    "Job flags (as gcloud ai-platform jobs submit training; flags override --config):\n"
    "  --config=FILE                     Job or TrainingInput as YAML or JSON ('-': stdin)\n"
    "  --scale-tier=TIER                 basic, basic-gpu, standard-1, premium-1, custom\n"
    "  --master-machine-type=TYPE        e.g. n1-standard-4 (with no scale tier: custom)\n"
    "  --master-image-uri=IMAGE          the master's image; default for every role\n"
    "  --master-accelerator=count=N,type=T   e.g. count=1,type=nvidia-tesla-t4\n"
    "  --master-command=PROGRAM[,ARG...]  the master's containerCommand, the default for\n"
    "                                    every role: the program the process runtime runs\n"
    "                                    (e.g. --master-command=python3,-m,trainer.task;\n"
    "                                    '^:^a,b:c' splits at ':' instead of ',')\n"
    "  --worker-count=N  --worker-machine-type=TYPE  --worker-image-uri=IMAGE\n"
    "  --worker-accelerator=count=N,type=T  --worker-command=PROGRAM[,ARG...]\n"
    "  --parameter-server-count=N  --parameter-server-machine-type=TYPE\n"
    "  --parameter-server-image-uri=IMAGE  --parameter-server-accelerator=count=N,type=T\n"
    "  --parameter-server-command=PROGRAM[,ARG...]\n"
    "  --evaluator-count=N  --evaluator-machine-type=TYPE  --evaluator-image-uri=IMAGE\n"
    "  --evaluator-accelerator=count=N,type=T  --evaluator-command=PROGRAM[,ARG...]\n"
    "  --use-chief-in-tf-config=BOOL     true: call the master \"chief\" in TF_CONFIG\n"
    "  --labels=KEY=VALUE[,...]          labels (lowercase letters, digits, - and _)\n"
    "  --region=REGION                   recorded in the job\n"
    "  --job-dir=DIR                     passed to the program as --job-dir=DIR\n"
    "  -- USER_ARGS...                   replace trainingInput.args (containerArgs of the\n"
    "                                    roles that have a command)\n"
    "  --python-version=VERSION          recorded in the job (pythonVersion), no effect\n"
    "  --service-account=ACCOUNT  --enable-web-access  --kms-key=KEY [--kms-keyring=R\n"
    "  --kms-location=L --kms-project=P]   recorded in the job (serviceAccount,\n"
    "                                    enableWebAccess, encryptionConfig.kmsKeyName), no\n"
    "                                    effect here\n"
    "  --staging-bucket=BUCKET           accepted, no effect (nothing is uploaded)\n"
    "gcloud's python-package flags (--module-name, --package-path, --packages,\n"
    "--runtime-version) are refused: trainyard runs custom-container jobs only; give the\n"
    "program with --master-command and the image with --master-image-uri. So are gcloud\n"
    "ai-platform local train's --distributed and --start-port: the whole cluster always runs,\n"
    "sized by the --*-count flags, each replica on a free port of its own.\n";

static const char *const flag_role[TY_ROLE_MAX] = {
    "master", "worker", "parameter-server", "evaluator"};

/* "nvidia-tesla-t4" -> "NVIDIA_TESLA_T4"; "standard-1" -> "STANDARD_1". */
static char *enum_name(const char *s)
{
    char *e = xstrdup(s);
    for (char *p = e; *p; p++)
        *p = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    return e;
}

/* gcloud's spelling of an enum name: "STANDARD_1" -> "standard-1". */
static char *flag_choice(const char *name)
{
    char *c = xstrdup(name);
    for (char *p = c; *p; p++)
        *p = *p == '_' ? '-' : (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    return c;
}

/* The value of an enum flag (--scale-tier, an accelerator's type) checked against the field at
 * @path under TrainingInput as gcloud checks its choices: in gcloud's spelling, any case, '_'
 * for '-' too. Sets *@ret to the enum name (caller frees); -EINVAL naming --@flag, the choices
 * and the nearest one otherwise. */
static int
flag_enum(const char *flag, const char *arg, const char *path, char **ret, struct ty_error *err)
{
    const char *const *names = ty_schema_enum_values(&ty_msg_training_input, path);
    _cleanup_free_ char *name = enum_name(arg), *given = flag_choice(arg);
    _cleanup_strv_free_ char **choices = NULL;
    _cleanup_(ty_buf_release) struct ty_buf list = {0};

    for (size_t i = 0; names && names[i]; i++) {
        size_t n = strlen(names[i]);
        if (n > 12 && strcmp(names[i] + n - 12, "_UNSPECIFIED") == 0)
            continue;
        if (strcmp(names[i], name) == 0) {
            *ret = TAKE_PTR(name);
            return 0;
        }
        ty_strv_push_take(&choices, flag_choice(names[i]));
        ty_buf_printf(&list, "%s%s", list.len ? ", " : "", choices[ty_strv_len(choices) - 1]);
    }
    const char *near = ty_suggest_among(given, (const char *const *)choices);
    return ty_error_set(err,
                        EINVAL,
                        "--%s: '%s' is not a valid choice: expected one of %s%s%s%s",
                        flag,
                        arg,
                        ty_buf_str(&list),
                        near ? " (did you mean '" : "",
                        near ? near : "",
                        near ? "'?)" : "");
}

static json_t *role_config(struct train_flags *tf, enum ty_role role)
{
    _cleanup_free_ char *key = xasprintf("%sConfig", ty_role_field(role));
    json_t *cfg = json_object_get(tf->ti_patch, key);
    if (!cfg) {
        cfg = json_object();
        json_object_set_new(tf->ti_patch, key, cfg);
    }
    return cfg;
}

static int parse_accelerator(const char *flag, const char *arg, json_t **ret, struct ty_error *err)
{
    _cleanup_free_ char *copy = xstrdup(arg);
    _cleanup_free_ char *type = NULL;
    char *save = NULL;
    int64_t count = 0;
    bool have_count = false;

    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (strncmp(item, "count=", 6) == 0) {
            if (ty_parse_int64(item + 6, INT64_MIN, INT64_MAX, &count) < 0)
                return ty_error_set(
                    err, EINVAL, "--%s: count '%s' is not a number", flag, item + 6);
            have_count = true;
        } else if (strncmp(item, "type=", 5) == 0) {
            free(type);
            type = NULL;
            int r = flag_enum(flag, item + 5, "masterConfig.acceleratorConfig.type", &type, err);
            if (r < 0)
                return r;
        } else {
            _cleanup_free_ char *key = xstrndup(item, strcspn(item, "="));
            const char *near = ty_suggest_among(key, (const char *const[]){"count", "type", NULL});
            return ty_error_set(err,
                                EINVAL,
                                "--%s: unknown key '%s' in '%s' (%s%s%sexpected "
                                "count=COUNT,type=TYPE)",
                                flag,
                                key,
                                item,
                                near ? "did you mean '" : "",
                                near ? near : "",
                                near ? "'? " : "");
        }
    }
    if (!type || !have_count)
        return ty_error_set(err,
                            EINVAL,
                            "--%s: both count and type are required, e.g. "
                            "count=1,type=nvidia-tesla-t4",
                            flag);
    if (count <= 0)
        return ty_error_set(err,
                            EINVAL,
                            "--%s: The count of the accelerator must be greater "
                            "than 0.",
                            flag);
    *ret = json_object();
    json_object_set_new(*ret, "count", json_sprintf("%lld", (long long)count));
    json_object_set_new(*ret, "type", json_string(type));
    return 0;
}

static int parse_labels(struct train_flags *tf, const char *arg, struct ty_error *err)
{
    _cleanup_free_ char *copy = xstrdup(arg);
    char *save = NULL;

    if (!tf->labels)
        tf->labels = json_object();
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq)
            return ty_error_set(err, EINVAL, "--labels: '%s' is not KEY=VALUE", item);
        *eq = '\0';
        int r = ty_validate_label("--labels", item, eq + 1, err);
        if (r < 0)
            return r;
        const char *had = json_string_value(json_object_get(tf->labels, item));
        if (had) /* as gcloud's dict flags */
            return ty_error_set(err,
                                EINVAL,
                                "--labels: '%s' cannot be given more than once (%s=%s, %s=%s)",
                                item,
                                item,
                                had,
                                item,
                                eq + 1);
        json_object_set_new(tf->labels, item, json_string(eq + 1));
    }
    return 0;
}

/* gcloud's python-package flags: the job they describe (a trainer package run on a runtime
 * version's image) does not exist here. The same explanation as trainingInput.runtimeVersion,
 * pythonModule or packageUris in a config file (the job validation's), in the flags' words. */
static int python_package_flag(int id, struct ty_error *err)
{
    static const struct {
        int id;
        const char *flag, *field;
    } flags[] = {
        {O_MODULE_NAME, "module-name", "trainingInput.pythonModule"},
        {O_PACKAGE_PATH, "package-path", "trainingInput.packageUris"},
        {O_PACKAGES, "packages", "trainingInput.packageUris"},
        {O_RUNTIME_VERSION, "runtime-version", "trainingInput.runtimeVersion"},
    };
    size_t i = 0;

    while (i + 1 < TY_ARRAY_SIZE(flags) && flags[i].id != id)
        i++;
    return ty_error_set(err,
                        EINVAL,
                        "--%s (%s): trainyard runs custom-container jobs only; runtime-version "
                        "jobs (--module-name, --package-path, --packages, --runtime-version; "
                        "runtimeVersion, pythonModule, packageUris in a "
                        "config file) are not supported: give the image with --master-image-uri "
                        "and the program with --master-command (e.g. "
                        "--master-command=python3,-m,trainer.task)",
                        flags[i].flag,
                        flags[i].field);
}

/* gcloud ai-platform local train's --distributed and --start-port: its local cluster of a
 * python module does not exist here either; what to give instead. */
static int local_cluster_flag(int id, struct ty_error *err)
{
    if (id == O_DISTRIBUTED)
        return ty_error_set(err,
                            EINVAL,
                            "--distributed (gcloud ai-platform local train): trainyard runs the "
                            "job's whole cluster wherever it runs: give its size with "
                            "--worker-count, --parameter-server-count and --evaluator-count "
                            "(with none of them the master runs alone)");
    return ty_error_set(err,
                        EINVAL,
                        "--start-port (gcloud ai-platform local train): trainyard gives each "
                        "replica a free port of its own and names it in CLUSTER_SPEC and "
                        "TF_CONFIG; leave the flag out");
}

/* A role's --*-command: PROGRAM[,ARG...] split at commas, or at DELIM with gcloud's escape
 * '^DELIM^PROGRAM DELIM ARG...' (gcloud topic escaping), into a JSON array of strings. The
 * job validation checks the list (a program that is not empty). */
static int parse_command(const char *flag, const char *arg, json_t **ret, struct ty_error *err)
{
    _cleanup_free_ char *delim = xstrdup(",");
    const char *p = arg, *end;

    if (arg[0] == '^') {
        const char *close = strchr(arg + 1, '^');
        if (!close || close == arg + 1)
            return ty_error_set(err,
                                EINVAL,
                                "--%s: '%s' starts with '^' but is not ^DELIM^PROGRAM[DELIM"
                                "ARG...] (gcloud's escape for another delimiter)",
                                flag,
                                arg);
        free(delim);
        delim = xstrndup(arg + 1, (size_t)(close - arg - 1));
        p = close + 1;
    }
    if (!*p)
        return ty_error_set(
            err, EINVAL, "--%s: the command is empty (give PROGRAM[,ARG...])", flag);
    *ret = json_array();
    for (;;) {
        end = strstr(p, delim);
        if (!end) {
            json_array_append_new(*ret, json_string(p));
            return 0;
        }
        json_array_append_new(*ret, json_stringn(p, (size_t)(end - p)));
        p = end + strlen(delim);
    }
}

/* gcloud's ArgBoolean: true, yes, false, no, in any case, into *@ret. Returns 0 or -EINVAL
 * with err naming --@flag. */
static int parse_bool(const char *flag, const char *arg, bool *ret, struct ty_error *err)
{
    static const char *const words[] = {"true", "yes", "false", "no", NULL};
    const char *near;
    int i = 0;

    while (words[i] && strcasecmp(arg, words[i]) != 0)
        i++;
    if (words[i]) {
        *ret = i < 2;
        return 0;
    }
    near = ty_suggest_among(arg, words);
    return ty_error_set(err,
                        EINVAL,
                        "--%s: expected true, false, yes or no (got '%s'%s%s%s)",
                        flag,
                        arg,
                        near ? "; did you mean '" : "",
                        near ? near : "",
                        near ? "'?" : "");
}

/* One of the per-role flags (ROLE_OPT ids). */
static int apply_role_flag(struct train_flags *tf, int id, const char *arg, struct ty_error *err)
{
    enum ty_role role = (enum ty_role)((id - O_ROLE_FIRST) / W_N);
    _cleanup_free_ char *flag = NULL;
    json_t *acc = NULL;
    int r;

    switch ((id - O_ROLE_FIRST) % W_N) {
    case W_TYPE: {
        _cleanup_free_ char *key = xasprintf("%sType", ty_role_field(role));
        json_object_set_new(tf->ti_patch, key, json_string(arg));
        return 0;
    }
    case W_IMAGE:
        json_object_set_new(role_config(tf, role), "imageUri", json_string(arg));
        return 0;
    case W_COMMAND:
        flag = xasprintf("%s-command", flag_role[role]);
        r = parse_command(flag, arg, &acc, err);
        if (r < 0)
            return r;
        json_object_set_new(role_config(tf, role), "containerCommand", acc);
        return 0;
    case W_ACCEL:
        flag = xasprintf("%s-accelerator", flag_role[role]);
        r = parse_accelerator(flag, arg, &acc, err);
        if (r < 0)
            return r;
        json_object_set_new(role_config(tf, role), "acceleratorConfig", acc);
        return 0;
    default: { /* W_COUNT */
        _cleanup_free_ char *key = xasprintf("%sCount", ty_role_field(role));
        int64_t n;
        if (ty_parse_int64(arg, 0, TY_MAX_REPLICAS_PER_ROLE, &n) < 0)
            return ty_error_set(err,
                                EINVAL,
                                "--%s-count: expected a whole number from 0 to %d (got '%s')",
                                flag_role[role],
                                TY_MAX_REPLICAS_PER_ROLE,
                                arg);
        json_object_set_new(tf->ti_patch, key, json_sprintf("%lld", (long long)n));
        return 0;
    }
    }
}

int train_flags_apply(struct train_flags *tf, int id, const char *arg, struct ty_error *err)
{
    bool b = false;
    int r;

    if (!tf->ti_patch)
        tf->ti_patch = json_object();
    switch (id) {
    case O_CONFIG:
        tf->config = arg;
        return 0;
    case O_SCALE_TIER: {
        _cleanup_free_ char *tier = NULL;
        r = flag_enum("scale-tier", arg, "scaleTier", &tier, err);
        if (r < 0)
            return r;
        json_object_set_new(tf->ti_patch, "scaleTier", json_string(tier));
        return 0;
    }
    /* recorded in the job, no effect here (as the same fields in a config file) */
    case O_REGION:
        json_object_set_new(tf->ti_patch, "region", json_string(arg));
        return 0;
    case O_PYTHON_VERSION:
        json_object_set_new(tf->ti_patch, "pythonVersion", json_string(arg));
        return 0;
    case O_SERVICE_ACCOUNT:
        json_object_set_new(tf->ti_patch, "serviceAccount", json_string(arg));
        return 0;
    case O_ENABLE_WEB_ACCESS:
        json_object_set_new(tf->ti_patch, "enableWebAccess", json_true());
        return 0;
    case O_KMS_KEY:
    case O_KMS_KEYRING:
    case O_KMS_LOCATION:
    case O_KMS_PROJECT:
        tf->kms[id - O_KMS_KEY] = arg;
        return 0;
    case O_STAGING_BUCKET: /* accepted: nothing is uploaded */
        return 0;
    case O_JOB_DIR:
        if (!*arg) /* `--job-dir=$DIR` with DIR unset: a mistake, not "no directory" */
            return ty_error_set(err,
                                EINVAL,
                                "--job-dir: the directory is empty (leave the flag out for "
                                "a job without one)");
        json_object_set_new(tf->ti_patch, "jobDir", json_string(arg));
        return 0;
    case O_LABELS:
        return parse_labels(tf, arg, err);
    case O_MODULE_NAME:
    case O_PACKAGE_PATH:
    case O_PACKAGES:
    case O_RUNTIME_VERSION:
        return python_package_flag(id, err);
    case O_DISTRIBUTED:
    case O_START_PORT:
        return local_cluster_flag(id, err);
    case O_USE_CHIEF:
        r = parse_bool("use-chief-in-tf-config", arg, &b, err);
        if (r == 0)
            json_object_set_new(tf->ti_patch, "useChiefInTfConfig", json_boolean(b));
        return r;
    default:
        break;
    }
    if (id >= O_ROLE_FIRST && id < ROLE_OPT(TY_ROLE_MAX, 0))
        return apply_role_flag(tf, id, arg, err);
    return ty_error_set(err, EINVAL, "internal: unknown option %d", id);
}

/* Set @patch's fields into @dst, recursing into objects (so --worker-image-uri keeps the
 * config's workerConfig.containerCommand). */
static void merge(json_t *dst, json_t *patch)
{
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        json_t *cur = json_object_get(dst, k);
        if (json_is_object(v) && json_is_object(cur))
            merge(cur, v);
        else
            json_object_set(dst, k, v);
    }
}

/* USER_ARGS replace trainingInput.args, as in gcloud. The API forbids args together with
 * containerCommand/containerArgs, so for a job that uses those (every process-runtime job
 * does), USER_ARGS replace containerArgs of each role config that sets either one instead,
 * and a config file's trainingInput.args go: the only reading under which the command line is
 * valid (docs/cli.md). */
static void set_user_args(json_t *ti, char *const *user_args)
{
    json_t *a = json_array();
    bool container = false;

    for (size_t i = 0; user_args && user_args[i]; i++)
        json_array_append_new(a, json_string(user_args[i]));
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        _cleanup_free_ char *key = xasprintf("%sConfig", ty_role_field((enum ty_role)role));
        json_t *cfg = json_object_get(ti, key);
        if (!json_is_object(cfg))
            continue;
        if (json_object_get(cfg, "containerCommand") || json_object_get(cfg, "containerArgs") ||
            json_object_get(cfg, "container_command") || json_object_get(cfg, "container_args")) {
            json_object_del(cfg, "container_args");
            json_object_set(cfg, "containerArgs", a);
            container = true;
        }
    }
    if (container) /* they replace the config's args too, wherever they go */
        json_object_del(ti, "args");
    else
        json_object_set(ti, "args", a);
    json_decref(a);
}

/* --kms-key (a full name, or a key id with --kms-keyring, --kms-location and --kms-project,
 * as gcloud's resource arguments) into encryptionConfig.kmsKeyName. */
static int kms_key_name(struct train_flags *tf, struct ty_error *err)
{
    static const char *const flags[4] = {"kms-key", "kms-keyring", "kms-location", "kms-project"};
    _cleanup_free_ char *name = NULL;
    json_t *enc;

    if (!tf->kms[0]) {
        for (int i = 1; i < 4; i++)
            if (tf->kms[i])
                return ty_error_set(err, EINVAL, "--%s: needs --kms-key", flags[i]);
        return 0;
    }
    if (strncmp(tf->kms[0], "projects/", 9) == 0 || strchr(tf->kms[0], '/')) {
        name = xstrdup(tf->kms[0]);
    } else {
        for (int i = 1; i < 4; i++)
            if (!tf->kms[i])
                return ty_error_set(err,
                                    EINVAL,
                                    "--kms-key: '%s' is a key id: give --kms-keyring, "
                                    "--kms-location and --kms-project too (--%s is missing), or "
                                    "the key's full name, projects/P/locations/L/keyRings/R/"
                                    "cryptoKeys/K",
                                    tf->kms[0],
                                    flags[i]);
        name = xasprintf("projects/%s/locations/%s/keyRings/%s/cryptoKeys/%s",
                         tf->kms[3],
                         tf->kms[2],
                         tf->kms[1],
                         tf->kms[0]);
    }
    if (!tf->ti_patch)
        tf->ti_patch = json_object();
    enc = json_object();
    json_object_set_new(enc, "kmsKeyName", json_string(name));
    json_object_set_new(tf->ti_patch, "encryptionConfig", enc);
    return 0;
}

int train_flags_build_job(struct train_flags *tf,
                          const char *job_id,
                          json_t **ret,
                          struct ty_error *err)
{
    _cleanup_json_ json_t *job = NULL;
    json_t *ti;
    int r;

    if (tf->config) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        r = ty_read_file(tf->config, TY_JSON_MAX_BYTES, &text, &len, err);
        if (r < 0)
            return ty_error_prefix(err, r, "--config");
        r = ty_spec_parse(text, len, TY_SPEC_AUTO, &job, err);
        if (r < 0)
            return ty_error_prefix(err, r, "%s", tf->config);
    } else {
        job = json_object();
    }
    ti = json_object_get(job, "trainingInput");
    if (!ti) {
        ti = json_object();
        json_object_set_new(job, "trainingInput", ti);
    }
    r = kms_key_name(tf, err);
    if (r < 0)
        return r;
    if (tf->ti_patch)
        merge(ti, tf->ti_patch);
    if (tf->have_user_args)
        set_user_args(ti, tf->user_args);
    if (tf->labels) /* as gcloud: --labels replace the file's labels */
        json_object_set(job, "labels", tf->labels);
    if (job_id)
        json_object_set_new(job, "jobId", json_string(job_id));
    *ret = TAKE_PTR(job);
    return 0;
}

int train_flags_split_user_args(struct train_flags *tf, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") != 0)
            continue;
        tf->have_user_args = true;
        tf->user_args = xcalloc(1, sizeof(char *));
        for (int k = i + 1; k < argc; k++)
            ty_strv_push(&tf->user_args, argv[k]);
        return i;
    }
    return argc;
}

struct option *train_flags_options(const struct option *own)
{
    size_t n_train = 0, n_own = 0;
    struct option *all;

    while (train_options[n_train].name)
        n_train++;
    while (own[n_own].name)
        n_own++;
    all = xcalloc(n_train + n_own + 1, sizeof(*all));
    memcpy(all, train_options, n_train * sizeof(*all));
    memcpy(all + n_train, own, n_own * sizeof(*all));
    return all;
}

void train_flags_release(struct train_flags *tf)
{
    json_decref(tf->ti_patch);
    json_decref(tf->labels);
    ty_strv_free(tf->user_args);
    memset(tf, 0, sizeof(*tf));
}
