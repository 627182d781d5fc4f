/* SPDX-License-Identifier: Apache-2.0
 * cmd-config.c: `trainyard config set|get|unset|list`, as `gcloud config`, on the file the
 * CLI already reads (cli_config_path: TRAINYARD_CONFIG, else $XDG_CONFIG_HOME/trainyard/config,
 * else ~/.config/trainyard/config) and only for its keys (cli_config_keys). A value is checked
 * as the reader checks it; the file is rewritten atomically with mode 0600 (it can hold a
 * token), its comments and other lines kept (kvconf-edit.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cli.h"
#include "fdutil.h"
#include "kvconf-edit.h"
#include "kvconf.h"
#include "macro.h"

/* The variables that override each key (api-settings.c, local-gpus.c), for the notes. */
static const struct {
    const char *key, *env;
} overrides[] = {
    {"api_endpoint", "TRAINYARD_API_ENDPOINT"},
    {"project", "TRAINYARD_PROJECT"},
    {"access_token", "TRAINYARD_ACCESS_TOKEN"},
    {"access_token_file", "TRAINYARD_ACCESS_TOKEN"},
    {"custom_ca_certs_file", "TRAINYARD_CUSTOM_CA_CERTS_FILE"},
    {"custom_ca_certs_file", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE"},
    {"gpus", "TRAINYARD_GPUS"},
    {"gpu_devices", "TRAINYARD_GPU_DEVICES"},
};

/* The usage lines of each verb, then what they share. */
static const char *const usages[] = {
    "Usage: trainyard config set KEY VALUE\n\nSet KEY in the CLI's config file.",
    "Usage: trainyard config get KEY\n\nPrint KEY's value in the CLI's config file (exit 1 and "
    "'(unset)' on stderr\nwhen it is not set).",
    "Usage: trainyard config unset KEY\n\nRemove KEY from the CLI's config file.",
    "Usage: trainyard config list [--all]\n\nPrint the keys set in the CLI's config file, 'key = "
    "value', an access token\nmasked.",
};

static const char help_text[] =
    "\n\nThe file is $TRAINYARD_CONFIG, else $XDG_CONFIG_HOME/trainyard/config, else\n"
    "~/.config/trainyard/config, as gcloud config. set checks VALUE as the settings are\n"
    "checked when they are read and rewrites the file atomically (mode 0600), keeping its\n"
    "comments and other lines; a relative file name is made absolute. Flags, then the\n"
    "environment (TRAINYARD_PROJECT, ...) override the file.\n\n"
    "Keys:\n"
    "  api_endpoint          trainyardd's address (http://HOST:PORT or https://...)\n"
    "  project               the project of the jobs\n"
    "  access_token          the token sent as 'Authorization: Bearer' (before _file)\n"
    "  access_token_file     a file holding the token\n"
    "  custom_ca_certs_file  the CA certificates to verify https:// with\n"
    "  gpus                  local train's GPUs, TYPE:N[+TYPE:N...]\n"
    "  gpu_devices           nvidia or stand-in\n\n"
    "Flags:\n";

enum { CFG_SET, CFG_GET, CFG_UNSET, CFG_LIST };

struct config_file {
    char *path;
    char *text; /* the content ("" when the file does not exist) */
    struct ty_kv *kv;
    size_t n;
    bool locked; /* lock_fd holds the lock of the file's directory */
    int lock_fd;
};

static void config_file_release(struct config_file *f)
{
    free(f->path);
    free(f->text);
    ty_kvconf_free(f->kv, f->n);
    if (f->locked)
        close(f->lock_fd);
}

/* Read the config file (a missing one is empty; one TRAINYARD_CONFIG names must exist to be
 * read, as for every other verb, but `set` and `unset` may create it); with @for_write, under the
 * lock of its directory, held until config_file_release, so that two `config set` at once both
 * land. Returns 0, or after printing the error the exit status: TY_EXIT_USAGE for a file that
 * cannot be read or is malformed (as for every verb reading it), TY_EXIT_FAILED when its directory
 * cannot be locked. */
static int config_file_read(const char *cmd, struct config_file *f, bool for_write)
{
    struct ty_error e = {0};
    bool must_exist;
    size_t len;
    int r;

    f->path = cli_config_path(&must_exist);
    if (!f->path) {
        cli_error(cmd, "no home directory for the config file: set TRAINYARD_CONFIG");
        return TY_EXIT_USAGE;
    }
    if (for_write) {
        f->lock_fd = ty_file_lock_dir(f->path, &e);
        if (f->lock_fd < 0) {
            cli_error(cmd, "%s", ty_error_msg(&e));
            return TY_EXIT_FAILED;
        }
        f->locked = true;
    }
    r = ty_kvconf_load(f->path, &f->kv, &f->n, &e);
    if (r == -ENOENT && must_exist && !for_write) {
        cli_error(cmd, "config file %s (from TRAINYARD_CONFIG) does not exist", f->path);
        return TY_EXIT_USAGE;
    }
    if (r == -ENOENT) {
        f->text = xstrdup("");
        return 0;
    }
    if (r >= 0)
        r = ty_read_file(f->path, TY_KVCONF_MAX_BYTES, &f->text, &len, &e);
    if (r < 0) {
        cli_error(cmd, "%s", ty_error_msg(&e));
        return TY_EXIT_USAGE;
    }
    return 0;
}

/* The last value of @key in @f, or NULL. */
static const struct ty_kv *config_file_get(const struct config_file *f, const char *key)
{
    for (size_t i = f->n; i > 0; i--)
        if (strcmp(f->kv[i - 1].key, key) == 0)
            return &f->kv[i - 1];
    return NULL;
}

/* Say on stderr which variables of the environment override @key. */
static void note_overrides(const char *key)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(overrides); i++) {
        const char *v = getenv(overrides[i].env);
        if (strcmp(overrides[i].key, key) == 0 && v && *v)
            cli_warning("%s is set in the environment and overrides %s of the config file.",
                        overrides[i].env,
                        key);
    }
}

/* Parse the flags of the verb @verb (CFG_*: --help, and --all for list) and check that its
 * KEY/VALUE arguments follow. Returns -1 to go on, else the exit status. */
static int parse(int verb, int argc, char **argv, bool *all)
{
    static const char *const cmds[] = {"config.set", "config.get", "config.unset", "config.list"};
    static const int nargs[] = {2, 1, 1, 0};
    static const char *const names[] = {"KEY", "VALUE"};
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"all", no_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    /* Only list has --all: the others' table ends before it. */
    static const struct option help_only[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const struct option *table = verb == CFG_LIST ? opts : help_only;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = cli_getopt(argc, argv, ":", table)) != -1) {
        if (c == 'h') {
            fputs(usages[verb], stdout);
            fputs(help_text, stdout);
            if (verb == CFG_LIST)
                fputs("  --all                 every key, '(unset)' for those not set\n", stdout);
            fputs("  --quiet, -q           no prompts (trainyard asks nothing; taken for gcloud)\n"
                  "  --verbosity=LEVEL     debug, info, warning (default), error: no WARNING\n"
                  "                        lines, critical or none: no ERROR lines either\n"
                  "  --help                this text (also -h)\n",
                  stdout);
            return TY_EXIT_OK;
        }
        if (c == 'a') {
            *all = true;
            continue;
        }
        return cli_flag_error(cmds[verb], c, argv, table);
    }
    if (argc - optind < nargs[verb]) {
        cli_error(cmds[verb], "%s is required (see --help)", names[argc - optind]);
        return TY_EXIT_USAGE;
    }
    if (argc - optind > nargs[verb]) {
        cli_error(cmds[verb], "unexpected argument '%s'", argv[optind + nargs[verb]]);
        return TY_EXIT_USAGE;
    }
    return -1;
}

/* Check that @key is a key of the file. Returns 0, or -1 after printing the error. */
static int known_key(const char *cmd, const char *key)
{
    _cleanup_free_ char *why = cli_config_unknown_key(key);
    if (!why)
        return 0;
    cli_error(cmd, "%s", why);
    return -1;
}

/* Write @text to the file of @f. Returns 0, or -1 after printing the error. */
static int config_file_write(const char *cmd, const struct config_file *f, const char *text)
{
    struct ty_error e = {0};
    if (ty_write_file_atomic(f->path, text, 0600, &e) < 0) {
        cli_error(cmd, "%s", ty_error_msg(&e));
        return -1;
    }
    return 0;
}

static int config_set(int argc, char **argv)
{
    static const char cmd[] = "config.set";
    struct config_file f = {0};
    _cleanup_free_ char *value = NULL;
    _cleanup_free_ char *text = NULL;
    struct ty_error e = {0};
    int rc = parse(CFG_SET, argc, argv, NULL);

    if (rc >= 0)
        return rc;
    if (known_key(cmd, argv[optind]) < 0)
        return TY_EXIT_USAGE;
    if (cli_config_check(argv[optind], argv[optind + 1], &value, &e) < 0) {
        cli_error(cmd, "%s", ty_error_msg(&e));
        return TY_EXIT_USAGE;
    }
    rc = config_file_read(cmd, &f, true);
    if (rc != 0)
        goto out;
    rc = TY_EXIT_FAILED;
    if (ty_kvconf_set(f.text, argv[optind], value, &text, &e) < 0) {
        cli_error(cmd, "%s", ty_error_msg(&e));
        rc = TY_EXIT_USAGE;
        goto out;
    }
    if (config_file_write(cmd, &f, text) < 0)
        goto out;
    fprintf(stderr, "Updated property [%s] in %s.\n", argv[optind], f.path);
    note_overrides(argv[optind]);
    if (strcmp(argv[optind], "access_token_file") == 0 && config_file_get(&f, "access_token"))
        cli_warning("access_token is also set in the file and is used first.");
    rc = TY_EXIT_OK;
out:
    config_file_release(&f);
    return rc;
}

static int config_get(int argc, char **argv)
{
    static const char cmd[] = "config.get";
    struct config_file f = {0};
    const struct ty_kv *kv;
    int rc = parse(CFG_GET, argc, argv, NULL);

    if (rc >= 0)
        return rc;
    if (known_key(cmd, argv[optind]) < 0)
        return TY_EXIT_USAGE;
    rc = config_file_read(cmd, &f, false);
    if (rc != 0) {
        config_file_release(&f);
        return rc;
    }
    kv = config_file_get(&f, argv[optind]);
    if (kv)
        printf("%s\n", kv->value);
    else
        fputs("(unset)\n", stderr);
    note_overrides(argv[optind]);
    config_file_release(&f);
    return kv ? TY_EXIT_OK : TY_EXIT_FAILED;
}

static int config_unset(int argc, char **argv)
{
    static const char cmd[] = "config.unset";
    struct config_file f = {0};
    _cleanup_free_ char *text = NULL;
    bool removed = false;
    int rc = parse(CFG_UNSET, argc, argv, NULL);

    if (rc >= 0)
        return rc;
    if (known_key(cmd, argv[optind]) < 0)
        return TY_EXIT_USAGE;
    rc = config_file_read(cmd, &f, true);
    if (rc != 0)
        goto out;
    rc = TY_EXIT_FAILED;
    text = ty_kvconf_unset(f.text, argv[optind], &removed);
    if (removed && config_file_write(cmd, &f, text) < 0)
        goto out;
    fprintf(stderr,
            "Unset property [%s]%s in %s.\n",
            argv[optind],
            removed ? "" : " (it was not set)",
            f.path);
    rc = TY_EXIT_OK;
out:
    config_file_release(&f);
    return rc;
}

/* A token as `config list` shows it: its first 4 characters (only of a token of 16 or more),
 * then "********" and its length. */
static void print_masked(const char *token)
{
    size_t n = strlen(token);
    size_t shown = n >= 16 ? 4 : 0;
    printf("%.*s%s (%zu characters)\n", (int)shown, token, "********", n);
}

static int config_list(int argc, char **argv)
{
    static const char cmd[] = "config.list";
    struct config_file f = {0};
    bool all = false;
    int rc = parse(CFG_LIST, argc, argv, &all);

    if (rc >= 0)
        return rc;
    rc = config_file_read(cmd, &f, false);
    if (rc != 0) {
        config_file_release(&f);
        return rc;
    }
    for (size_t i = 0; i < f.n; i++) {
        _cleanup_free_ char *why = cli_config_unknown_key(f.kv[i].key);
        if (why) {
            cli_error(cmd, "%s:%d: %s", f.path, f.kv[i].line, why);
            config_file_release(&f);
            return TY_EXIT_USAGE;
        }
    }
    for (size_t k = 0; cli_config_keys[k]; k++) {
        const struct ty_kv *kv = config_file_get(&f, cli_config_keys[k]);
        if (!kv && !all)
            continue;
        printf("%s = ", cli_config_keys[k]);
        if (!kv)
            puts("(unset)");
        else if (strcmp(kv->key, "access_token") == 0)
            print_masked(kv->value);
        else
            printf("%s\n", kv->value);
    }
    config_file_release(&f);
    return TY_EXIT_OK;
}

const struct cli_command cmd_config_set = {
    .path = "config set",
    .summary = "set a key of the config file (project, api_endpoint, ...)",
    .run = config_set,
};
const struct cli_command cmd_config_get = {
    .path = "config get",
    .summary = "print a key of the config file (exit 1 when unset)",
    .run = config_get,
};
const struct cli_command cmd_config_unset = {
    .path = "config unset",
    .summary = "remove a key from the config file",
    .run = config_unset,
};
const struct cli_command cmd_config_list = {
    .path = "config list",
    .summary = "print the keys set in the config file (a token masked)",
    .run = config_list,
};
