/* SPDX-License-Identifier: Apache-2.0
 * cli.h: what the `trainyard` command's verbs share: the verb table entry, the training
 * flags of `gcloud ai-platform jobs submit training` (used by `local train` and, later,
 * `jobs submit training`), and error printing in gcloud's style. */
#ifndef TY_CLI_H
#define TY_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>

#include "error.h"

/* Exit codes: 0 success, 1 the job (or request) failed, 2 bad usage or a bad job spec. */
enum { TY_EXIT_OK = 0, TY_EXIT_FAILED = 1, TY_EXIT_USAGE = 2 };

struct cli_command {
    const char *path; /* "local train", "jobs submit training": words separated by one space */
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the last word of the path */
};

extern const struct cli_command cmd_local_train;
extern const struct cli_command cmd_jobs_submit_training;
extern const struct cli_command cmd_jobs_describe;
extern const struct cli_command cmd_jobs_list;
extern const struct cli_command cmd_jobs_cancel;
extern const struct cli_command cmd_jobs_stream_logs;
extern const struct cli_command cmd_jobs_update;
extern const struct cli_command cmd_study;
extern const struct cli_command cmd_config_set;
extern const struct cli_command cmd_config_get;
extern const struct cli_command cmd_config_unset;
extern const struct cli_command cmd_config_list;

/* gcloud's --verbosity (a program-wide flag, as --quiet): which of the CLI's own messages
 * are printed. Exit statuses and a verb's output do not change. */
enum cli_verbosity {
    CLI_VERBOSITY_DEBUG,
    CLI_VERBOSITY_INFO,
    CLI_VERBOSITY_WARNING, /* the default: warnings and errors */
    CLI_VERBOSITY_ERROR,   /* errors only */
    CLI_VERBOSITY_CRITICAL,
    CLI_VERBOSITY_NONE, /* neither (nothing of trainyard's own fails "critically") */
};
extern enum cli_verbosity cli_verbosity;

/* Print "ERROR: (trainyard.<path>) <msg>" to stderr ("ERROR: (trainyard) <msg>" when @path is
 * NULL: the program's own flags), unless --verbosity is critical or none. */
void cli_error(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "WARNING: <msg>" to stderr, unless --verbosity is error or above. */
void cli_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Report getopt_long's ':' (a flag without its value) or '?' (an unknown or ambiguous flag,
 * or a value given to a flag that takes none) for @c, the flag being argv[optind - 1], with
 * "did you mean" the nearest flag of @opts (the verb's getopt table, terminated; NULL: no
 * suggestion), or the flags an ambiguous prefix matches. Returns TY_EXIT_USAGE. */
int cli_flag_error(const char *path, int c, char **argv, const struct option *opts);

/* What cli_getopt returns for a long flag typed as an abbreviation ("--conf" for "--config"),
 * or given the next flag as its value ("--region --dry-run"): pass it to cli_flag_error,
 * which says so. */
#define CLI_FLAG_ABBREVIATED '!'

/* getopt_long(@argc, @argv, @shortopts, @opts), except that a long flag must be typed in
 * full (docs/cli.md: any other flag is refused; gcloud takes no abbreviations either), and
 * that a flag's value given as the next argument may not be a flag ("--region --dry-run",
 * which argparse refuses too): CLI_FLAG_ABBREVIATED instead of the flag's id then. Flags and
 * arguments are permuted (flags anywhere before "--") even under POSIXLY_CORRECT. */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *opts);

/* api-settings.c: the keys of the CLI's config file (NULL-terminated), in the order
 * `config list` prints them. */
extern const char *const cli_config_keys[];

/* api-settings.c: the CLI's config file, TRAINYARD_CONFIG (then *@must_exist is true), else
 * $XDG_CONFIG_HOME/trainyard/config, else ~/.config/trainyard/config; NULL when there is no
 * home directory. Caller frees. */
char *cli_config_path(bool *must_exist);

/* api-settings.c: NULL when @key is a key of the config file, else why not ("unknown key 'x'
 * (did you mean 'y'? known keys: ...)"). Caller frees. */
char *cli_config_unknown_key(const char *key);

/* api-settings.c: check @value for the config key @key as the CLI checks it when it reads
 * the file (a URL for api_endpoint, a non-empty project, a token's characters, a readable token
 * or CA file, a GPU list, nvidia or stand-in). Returns 0 and *@ret, the value to write (a
 * relative file name made absolute: the file reads it relative to its own directory), or
 * -errno with err naming the key and the rule (an unknown key: with "did you mean"). */
int cli_config_check(const char *key, const char *value, char **ret, struct ty_error *err);

/* Options parsed from the training flags. */
struct train_flags {
    const char *config; /* --config FILE */
    json_t *ti_patch;   /* TrainingInput fields set by flags (canonical names) */
    json_t *labels;     /* --labels, replacing the config's (as gcloud) */
    char **user_args;   /* after "--": replace trainingInput.args; NULL if none */
    const char *kms[4]; /* --kms-key, --kms-keyring, --kms-location, --kms-project */
    bool have_user_args;
};

/* getopt_long option ids for the training flags start here; each verb adds its own below. */
#define TRAIN_OPT_BASE 1000

/* The training flags' getopt table (terminated), and their help text. */
extern const struct option train_options[];
extern const char train_flags_help[];

/* Handle one parsed training option (@id from train_options, @arg its value). Returns 0,
 * or -EINVAL with err naming the flag and the rule. */
int train_flags_apply(struct train_flags *tf, int id, const char *arg, struct ty_error *err);

/* Everything after the first "--" in argv[1..argc) is USER_ARGS (kept in @tf, untouched by
 * option parsing). Returns the index of that "--", or @argc when there is none: parse the
 * flags in argv[0..result). */
int train_flags_split_user_args(struct train_flags *tf, int argc, char **argv);

/* A getopt_long table of the training flags followed by @own (both terminated by an entry
 * with a NULL name), itself terminated. Caller frees. */
struct option *train_flags_options(const struct option *own);

/* Build the job document: the --config file (if any), then flags over it, then USER_ARGS,
 * with @job_id (NULL keeps the config's). Returns 0 and *ret (canonical Job JSON). */
int train_flags_build_job(struct train_flags *tf,
                          const char *job_id,
                          json_t **ret,
                          struct ty_error *err);

/* Free what the flags hold (labels, patch, USER_ARGS) and zero @tf (the caller's). */
void train_flags_release(struct train_flags *tf);

#endif
