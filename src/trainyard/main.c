/* SPDX-License-Identifier: Apache-2.0
 * main.c: `trainyard`: dispatches `trainyard GROUP VERB ...` (or GROUP SUBGROUP VERB, as in
 * `jobs submit training`) to the verb table. Only `local train` uses the library directly;
 * the `jobs` verbs talk to trainyardd over its REST API. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "macro.h"
#include "ty-config.h"

static const struct cli_command *const commands[] = {
    &cmd_local_train,
    &cmd_jobs_submit_training,
    &cmd_jobs_describe,
    &cmd_jobs_list,
    &cmd_jobs_cancel,
    &cmd_jobs_stream_logs,
    &cmd_jobs_update,
    &cmd_study,
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

void cli_error(const char *path, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ERROR: (trainyard.%s) ", path);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_flag_error(const char *path, int c, char **argv)
{
    if (c == ':')
        cli_error(path, "%s needs a value", argv[optind - 1]);
    else
        cli_error(path, "unknown flag '%s' (see --help)", argv[optind - 1]);
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
    fputs("\nRun 'trainyard GROUP VERB --help' for a command's flags.\n", f);
}

/* `trainyard jobs` or `trainyard jobs submit --help`: the commands of that group. */
static void group_help(FILE *f, char **words, int n)
{
    fputs("Usage: trainyard", f);
    for (int i = 0; i < n; i++)
        fprintf(f, " %s", words[i]);
    fputs(" VERB [flags]\n\nCommands:\n", f);
    list_commands(f, words, n);
    fputs("\nRun 'trainyard GROUP VERB --help' for a command's flags.\n", f);
}

int main(int argc, char **argv)
{
    int best = 0;

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        help(argc < 2 ? stderr : stdout);
        return argc < 2 ? TY_EXIT_USAGE : TY_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("trainyard %s\n", TY_VERSION);
        return TY_EXIT_OK;
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
    {
        int shown = best > 0 ? best + 1 : 2;
        fputs("ERROR: (trainyard) unknown command '", stderr);
        for (int i = 1; i <= shown && i < argc; i++)
            fprintf(stderr, "%s%s", i > 1 ? " " : "", argv[i]);
        fputs("'\n\n", stderr);
    }
    help(stderr);
    return TY_EXIT_USAGE;
}
