/* SPDX-License-Identifier: Apache-2.0
 * main.c: `trainyard`: dispatches `trainyard GROUP VERB ...` (or GROUP SUBGROUP VERB, as in
 * `jobs submit training`) to the verb table. Only `local train` uses the library directly;
 * the `jobs` verbs talk to trainyardd over its REST API. Also here: `-h` for `--help` on
 * every verb, `trainyard help [GROUP...] VERB`, "did you mean" for a mistyped command, and
 * cli_error / cli_flag_error, which every verb reports with (the flags' "did you mean" is
 * util's ty_suggest_option_error, which trainyardd's options share). */
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "macro.h"
#include "suggest.h"
#include "ty-config.h"
#include "utf8.h"

static const struct cli_command *const commands[] = {
    &cmd_local_train,
    &cmd_jobs_submit_training,
    &cmd_jobs_describe,
    &cmd_jobs_list,
    &cmd_jobs_cancel,
    &cmd_jobs_stream_logs,
    &cmd_jobs_update,
    &cmd_study,
    &cmd_config_set,
    &cmd_config_get,
    &cmd_config_unset,
    &cmd_config_list,
};

/* Number of words of a command path ("jobs submit training": 3). */
static int path_words(const char *path)
{
    int n = 1;
    for (; *path; path++)
        n += *path == ' ';
    return n;
}

/* How many leading words of @path equal the @n words @w (in order). */
static int match_words(const char *path, char **w, int n)
{
    int m = 0;
    while (m < n) {
        size_t len = strcspn(path, " ");
        if (strlen(w[m]) != len || strncmp(w[m], path, len) != 0)
            break;
        m++;
        if (!path[len])
            break;
        path += len + 1;
    }
    return m;
}

enum cli_verbosity cli_verbosity = CLI_VERBOSITY_WARNING;

/* Write the message @fmt, @ap to stderr and end the line. A message quotes what the user
 * gave (a job id, a label, a YAML key): its control characters (C0 but newline and tab, DEL,
 * C1) and the bytes that are no UTF-8 are written as '?', so that none can drive the
 * terminal. */
__attribute__((format(printf, 1, 0))) static void put_message(const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    char *m;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    m = xmalloc((size_t)n + 1);
    (void)vsnprintf(m, (size_t)n + 1, fmt, ap);
    (void)ty_utf8_scrub(m); /* a lone 0x9b is CSI to an 8-bit terminal */
    for (unsigned char *p = (unsigned char *)m; *p; p++) {
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            *p = '?';
        else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* U+0080..U+009F: C1 controls */
            p[0] = p[1] = '?';
    }
    fputs(m, stderr);
    fputc('\n', stderr);
    free(m);
}

void cli_error(const char *path, const char *fmt, ...)
{
    va_list ap;
    if (cli_verbosity >= CLI_VERBOSITY_CRITICAL)
        return;
    if (path)
        fprintf(stderr, "ERROR: (trainyard.%s) ", path);
    else
        fputs("ERROR: (trainyard) ", stderr);
    va_start(ap, fmt);
    put_message(fmt, ap);
    va_end(ap);
}

void cli_warning(const char *fmt, ...)
{
    va_list ap;
    if (cli_verbosity >= CLI_VERBOSITY_ERROR)
        return;
    fputs("WARNING: ", stderr);
    va_start(ap, fmt);
    put_message(fmt, ap);
    va_end(ap);
}

/* The message of the flag cli_getopt last refused (abbreviated, or missing its value). */
static char abbreviated_msg[512];

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *opts)
{
    int li = -1, c;
    struct ty_error e = {0};

    if (optind <= 1 && getenv("POSIXLY_CORRECT")) {
        /* The documented order (JOB_ID anywhere before "--") needs getopt's permutation,
         * which POSIXLY_CORRECT turns off when a parse starts: hide it for that call only,
         * so that the programs a run starts still see it. */
        _cleanup_free_ char *pc = xstrdup(getenv("POSIXLY_CORRECT"));
        (void)unsetenv("POSIXLY_CORRECT");
        c = getopt_long(argc, argv, shortopts, opts, &li);
        (void)setenv("POSIXLY_CORRECT", pc, 1);
    } else {
        c = getopt_long(argc, argv, shortopts, opts, &li);
    }
    if (c == -1 || c == '?' || c == ':')
        return c;
    if (ty_option_typed_in_full(opts, li, argv, optind, optarg, "flag", &e) < 0) {
        (void)snprintf(abbreviated_msg, sizeof(abbreviated_msg), "%s", ty_error_msg(&e));
        return CLI_FLAG_ABBREVIATED;
    }
    if (li >= 0 && opts[li].has_arg == required_argument && optarg && optind >= 2 &&
        optarg == argv[optind - 1] && strncmp(optarg, "--", 2) == 0) {
        /* "--region --dry-run": the next flag is not a value (as gcloud's argparse says) */
        (void)snprintf(abbreviated_msg,
                       sizeof(abbreviated_msg),
                       "argument --%s: expected one argument, not the flag '%.100s' (for a "
                       "value that starts with --, write --%s=VALUE)",
                       opts[li].name,
                       optarg,
                       opts[li].name);
        return CLI_FLAG_ABBREVIATED;
    }
    return c;
}

int cli_flag_error(const char *path, int c, char **argv, const struct option *opts)
{
    const char *arg = argv[optind - 1];
    struct ty_error e = {0};

    if (c == CLI_FLAG_ABBREVIATED) {
        cli_error(path, "%s", abbreviated_msg);
        return TY_EXIT_USAGE;
    }
    if (c == ':') {
        cli_error(path, "%s needs a value", arg);
        return TY_EXIT_USAGE;
    }
    (void)ty_suggest_option_error(opts, arg, optopt, "flag", &e);
    cli_error(path, "%s", ty_error_msg(&e));
    return TY_EXIT_USAGE;
}

/* Print the commands whose path starts with the @n words @prefix (all when @n is 0). */
static void list_commands(FILE *f, char **prefix, int n)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(commands); i++) {
        if (match_words(commands[i]->path, prefix, n) < n)
            continue;
        fprintf(f, "  %-22s %s\n", commands[i]->path, commands[i]->summary);
    }
}

static void help(FILE *f)
{
    fputs("Usage: trainyard GROUP VERB [flags]\n\n"
          "Distributed training jobs with the AI Platform Training contract.\n\n"
          "Commands:\n",
          f);
    list_commands(f, NULL, 0);
    fputs("\nRun 'trainyard help GROUP VERB' (or 'trainyard GROUP VERB --help', -h) for a\n"
          "command's flags, 'trainyard --version' for the version. See trainyard(1).\n",
          f);
}

/* `trainyard jobs` or `trainyard jobs submit --help`: the commands of that group. */
static void group_help(FILE *f, char **words, int n)
{
    fputs("Usage: trainyard", f);
    for (int i = 0; i < n; i++)
        fprintf(f, " %s", words[i]);
    fputs(" VERB [flags]\n\nCommands:\n", f);
    list_commands(f, words, n);
    fputs("\nRun 'trainyard help GROUP VERB' (or 'trainyard GROUP VERB --help') for a "
          "command's flags.\n",
          f);
}

/* The @k-th word (0-based) of @path into @buf (@n bytes); false when @path is shorter. */
static bool nth_word(const char *path, int k, char *buf, size_t n)
{
    for (; k > 0; k--) {
        path = strchr(path, ' ');
        if (!path)
            return false;
        path++;
    }
    snprintf(buf, n, "%.*s", (int)strcspn(path, " "), path);
    return true;
}

/* Correct the command words @w (@n of them) word by word against the verb table: each word
 * that is not a next word of the commands so far is replaced by the nearest one. Returns the
 * corrected words ("jobs submit training") when a word was corrected and they make a command
 * or a group, else NULL. Caller frees. */
static char *suggest_command(char **w, int n)
{
    char fixed[8][64];
    char *words[8];
    bool changed = false;
    int k = 0;

    for (; k < n && k < 8 && w[k][0] != '-'; k++) {
        struct ty_suggest s;
        bool exact = false, full = false;
        char cand[TY_ARRAY_SIZE(commands)][64];

        ty_suggest_init(&s, w[k]);
        for (size_t i = 0; i < TY_ARRAY_SIZE(commands); i++) {
            cand[i][0] = '\0';
            if (match_words(commands[i]->path, words, k) < k ||
                !nth_word(commands[i]->path, k, cand[i], sizeof(cand[i])))
                continue;
            exact |= strcmp(cand[i], w[k]) == 0;
            ty_suggest_add(&s, cand[i]);
        }
        if (!exact && !ty_suggest_best(&s))
            break;
        snprintf(fixed[k], sizeof(fixed[k]), "%s", exact ? w[k] : ty_suggest_best(&s));
        words[k] = fixed[k];
        changed |= !exact;
        for (size_t i = 0; i < TY_ARRAY_SIZE(commands); i++)
            full |= path_words(commands[i]->path) == k + 1 &&
                    match_words(commands[i]->path, words, k + 1) == k + 1;
        if (full) {
            k++;
            break;
        }
    }
    if (!changed || k == 0)
        return NULL;
    {
        struct ty_buf b = TY_BUF_INIT;
        for (int i = 0; i < k; i++)
            ty_buf_printf(&b, "%s%s", i ? " " : "", words[i]);
        return ty_buf_take(&b);
    }
}

/* The error for the command words argv[1..] that name no command (@best words matched a
 * group): with the suggestion when one is near, else followed by the commands of that group
 * (or all). Returns 2. */
static int unknown_command(int argc, char **argv, int best)
{
    int shown = best > 0 ? best + 1 : 2;
    char *fix;

    if (cli_verbosity >= CLI_VERBOSITY_CRITICAL)
        return TY_EXIT_USAGE;
    fix = suggest_command(argv + 1, argc - 1);
    fputs("ERROR: (trainyard) unknown command '", stderr);
    for (int i = 1; i <= shown && i < argc; i++)
        fprintf(stderr, "%s%s", i > 1 ? " " : "", argv[i]);
    fputs("'", stderr);
    if (fix) {
        fprintf(stderr, " (did you mean 'trainyard %s'?)\n", fix);
        free(fix);
        return TY_EXIT_USAGE;
    }
    fputs("\n\n", stderr);
    if (best > 0)
        group_help(stderr, argv + 1, best);
    else
        help(stderr);
    return TY_EXIT_USAGE;
}

/* `trainyard help [WORDS...]`: the help of the command (the verb's own --help), the group or
 * everything that @words (@n) name. */
static int help_command(char **words, int n)
{
    int best = 0;

    if (n > 0 && strcmp(words[n - 1], "--help") == 0)
        n--; /* trainyard help jobs -h */
    if (n == 0) {
        help(stdout);
        return TY_EXIT_OK;
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(commands); i++) {
        int m = match_words(commands[i]->path, words, n);
        if (m == n && m == path_words(commands[i]->path)) {
            char *av[] = {words[n - 1], (char *)"--help", NULL};
            return commands[i]->run(2, av);
        }
        if (m > best)
            best = m;
    }
    if (best == n) {
        group_help(stdout, words, n);
        return TY_EXIT_OK;
    }
    {
        char *av[10] = {(char *)"trainyard"};
        int k = 0;
        for (; k < n && k < 8; k++)
            av[k + 1] = words[k];
        return unknown_command(k + 1, av, best);
    }
}

/* `trainyard -FLAG ...`: the program's own flags, --help and --version, are the only flags
 * before a command; any other gets "did you mean" among them (cli_flag_error). Returns the
 * exit status, or -1 when argv[1] is no flag after all ("-", "--"). */
static int top_flag(char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;

    opterr = 0;
    c = cli_getopt(2, argv, "+:h", opts);
    if (c == 'h') {
        help(stdout);
        return TY_EXIT_OK;
    }
    if (c == 'V') {
        printf("trainyard %s\n", TY_VERSION);
        return TY_EXIT_OK;
    }
    return c == -1 ? -1 : cli_flag_error(NULL, c, argv, opts);
}

/* Every argument must be UTF-8: a job is JSON, which holds only UTF-8 text, and a value
 * Jansson refuses was dropped without a word (a file name in USER_ARGS, a --job-dir). Returns
 * the index of the first argument that is not, or 0. */
static int first_not_utf8(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const unsigned char *s = (const unsigned char *)argv[i];
        for (size_t len = strlen(argv[i]), at = 0, n; at < len; at += n) {
            uint32_t cp;
            n = ty_utf8_char(s + at, len - at, &cp);
            if (n == 0)
                return i;
        }
    }
    return 0;
}

/* gcloud's program-wide --quiet (-q) and --verbosity=LEVEL, anywhere before "--": taken
 * out of @argv (*@argc shrinks). --quiet turns off prompts, and trainyard asks nothing.
 * Returns 0, or TY_EXIT_USAGE after saying what is wrong. */
static int global_flags(int *argc, char **argv)
{
    static const char *const levels[] = {"debug", "info", "warning", "error", "critical", "none"};
    int out = 1;

    for (int i = 1; i < *argc; i++) {
        const char *level = NULL;
        if (strcmp(argv[i], "--") == 0) {
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0)
            continue;
        if (strncmp(argv[i], "--verbosity=", 12) == 0)
            level = argv[i] + 12;
        else if (strcmp(argv[i], "--verbosity") == 0) {
            if (i + 1 >= *argc || strncmp(argv[i + 1], "--", 2) == 0) {
                cli_error(NULL, "argument --verbosity: expected one argument");
                return TY_EXIT_USAGE;
            }
            level = argv[++i];
        } else {
            argv[out++] = argv[i];
            continue;
        }
        for (size_t k = 0; k < TY_ARRAY_SIZE(levels); k++)
            if (strcasecmp(level, levels[k]) == 0) {
                cli_verbosity = (enum cli_verbosity)k;
                level = NULL;
                break;
            }
        if (level) {
            cli_error(NULL,
                      "--verbosity: expected one of debug, info, warning, error, critical, "
                      "none (got '%s')",
                      level);
            return TY_EXIT_USAGE;
        }
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

/* How many words the remote verbs' flag at argv[@k] takes (1: --project=P, 2: --project P), or
 * 0 when it is not one of them. */
static int leading_flag_words(int argc, char **argv, int k)
{
    static const char *const with_value[] = {
        "--project", "--format", "--api-endpoint", "--access-token-file"};

    for (size_t j = 0; j < TY_ARRAY_SIZE(with_value); j++) {
        size_t len = strlen(with_value[j]);
        if (strncmp(argv[k], with_value[j], len) != 0)
            continue;
        if (argv[k][len] == '=')
            return 1;
        if (argv[k][len] == '\0' && k + 1 < argc)
            return 2;
    }
    return 0;
}

/* gcloud takes its global flags anywhere: the flags of the remote verbs given before the
 * command words (`trainyard --project p jobs list`, `--format=json`) are moved behind the
 * words that follow them, where the verb reads them. A leading flag that is not one of them
 * stays (and is refused as before). */
static void move_leading_flags(int argc, char **argv)
{
    char *moved[64];
    int k = 1, w, n;

    while (k < argc && (w = leading_flag_words(argc, argv, k)) > 0)
        k += w;
    n = k - 1;
    if (n == 0 || n > (int)TY_ARRAY_SIZE(moved) || k >= argc || argv[k][0] == '-')
        return;
    for (w = k; w < argc && argv[w][0] != '-'; w++)
        ;
    memcpy(moved, argv + 1, (size_t)n * sizeof(char *));
    memmove(argv + 1, argv + k, (size_t)(w - k) * sizeof(char *));
    memcpy(argv + 1 + (w - k), moved, (size_t)n * sizeof(char *));
}

int main(int argc, char **argv)
{
    int best = 0, bad = first_not_utf8(argc, argv);

    /* -h is --help everywhere (before "--": what follows is the program's). */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "-h") == 0)
            argv[i] = (char *)"--help";
    if (bad) {
        _cleanup_free_ char *shown = xstrdup(argv[bad]);
        (void)ty_utf8_scrub(shown);
        (void)ty_ctrl_scrub(shown);
        cli_error(NULL,
                  "the argument '%s' is not valid UTF-8 (shown with '?' for the bytes that "
                  "are not): a job and its arguments are JSON text; rename the file or pass "
                  "the name another way",
                  shown);
        return TY_EXIT_USAGE;
    }
    if (global_flags(&argc, argv) != 0)
        return TY_EXIT_USAGE;
    move_leading_flags(argc, argv);
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        help(argc < 2 ? stderr : stdout);
        return argc < 2 ? TY_EXIT_USAGE : TY_EXIT_OK;
    }
    if (strcmp(argv[1], "help") == 0)
        return help_command(argv + 2, argc - 2);
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        if (argc > 2) {
            cli_error(NULL, "%s takes no arguments (got '%s')", argv[1], argv[2]);
            return TY_EXIT_USAGE;
        }
        printf("trainyard %s\n", TY_VERSION);
        return TY_EXIT_OK;
    }
    if (argv[1][0] == '-') {
        int rc = top_flag(argv);
        if (rc >= 0)
            return rc;
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(commands); i++) {
        int words = path_words(commands[i]->path);
        int m = match_words(commands[i]->path, argv + 1, argc - 1);
        if (m == words)
            return commands[i]->run(argc - m, argv + m);
        if (m > best)
            best = m;
    }
    /* A known group (or subgroup) without its verb: list its commands. */
    if (best > 0 && (argc == best + 1 || strcmp(argv[best + 1], "--help") == 0 ||
                     strcmp(argv[best + 1], "help") == 0)) {
        bool asked = argc > best + 1;
        group_help(asked ? stdout : stderr, argv + 1, best);
        return asked ? TY_EXIT_OK : TY_EXIT_USAGE;
    }
    return unknown_command(argc, argv, best);
}
