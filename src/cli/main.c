/* SPDX-License-Identifier: Apache-2.0
 * main.c: `trainyard`: dispatches `trainyard GROUP VERB ...` to the verb table. Only
 * `local train` uses the library directly; later verbs talk to trainyardd over its API. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "macro.h"
#include "ty-config.h"

static const struct cli_command *const commands[] = {
    &cmd_local_train,
};

void cli_error(const char *path, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ERROR: (trainyard.%s) ", path);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void help(FILE *f)
{
    fputs("Usage: trainyard GROUP VERB [flags]\n\n"
          "Distributed training jobs with the AI Platform Training contract.\n\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < TY_ARRAY_SIZE(commands); i++)
        fprintf(f, "  %-14s %s\n", commands[i]->path, commands[i]->summary);
    fputs("\nRun 'trainyard GROUP VERB --help' for a command's flags.\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        help(argc < 2 ? stderr : stdout);
        return argc < 2 ? TY_EXIT_USAGE : TY_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("trainyard %s\n", TY_VERSION);
        return TY_EXIT_OK;
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(commands); i++) {
        const char *path = commands[i]->path;
        size_t glen = strcspn(path, " ");
        if (strlen(argv[1]) != glen || strncmp(argv[1], path, glen) != 0)
            continue;
        if (argc < 3 || strcmp(argv[2], path + glen + 1) != 0)
            continue;
        return commands[i]->run(argc - 2, argv + 2);
    }
    fprintf(stderr,
            "ERROR: (trainyard) unknown command '%s%s%s'\n\n",
            argv[1],
            argc > 2 ? " " : "",
            argc > 2 ? argv[2] : "");
    help(stderr);
    return TY_EXIT_USAGE;
}
