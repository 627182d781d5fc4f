/* SPDX-License-Identifier: Apache-2.0
 * cli-flags.c: what every verb says when getopt_long refuses a flag (cli.h): a missing value,
 * an unknown flag with the nearest one of the verb's table ("did you mean '--job-dir'?", as
 * gcloud), an ambiguous prefix with the flags it matches, a value given to a flag without
 * one. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "macro.h"
#include "suggest.h"

/* The long options of @opts whose name starts with @name (@len bytes), as "--a, --b". */
static char *prefix_matches(const struct option *opts, const char *name, size_t len, int *count)
{
    struct ty_buf b = TY_BUF_INIT;

    *count = 0;
    for (size_t i = 0; opts && opts[i].name; i++) {
        if (strncmp(opts[i].name, name, len) != 0)
            continue;
        ty_buf_printf(&b, "%s--%s", *count ? ", " : "", opts[i].name);
        (*count)++;
    }
    return ty_buf_take(&b);
}

/* The option of @opts named exactly @name (@len bytes), or NULL. */
static const struct option *find_exact(const struct option *opts, const char *name, size_t len)
{
    for (size_t i = 0; opts && opts[i].name; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
            return &opts[i];
    return NULL;
}

static int long_flag_error(const char *path, const char *arg, const struct option *opts)
{
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    _cleanup_free_ char *word = xstrndup(name, len);
    _cleanup_free_ char *matches = NULL;
    const struct option *o = find_exact(opts, name, len);
    struct ty_suggest s;
    int count;

    if (o && name[len] == '=' && o->has_arg == no_argument) {
        cli_error(path, "--%s takes no value (got '%s')", o->name, arg);
        return TY_EXIT_USAGE;
    }
    matches = prefix_matches(opts, name, len, &count);
    if (len > 0 && count > 1) {
        cli_error(path, "ambiguous flag '--%s': %s (see --help)", word, matches);
        return TY_EXIT_USAGE;
    }
    ty_suggest_init(&s, word);
    for (size_t i = 0; opts && opts[i].name; i++)
        ty_suggest_add(&s, opts[i].name);
    if (ty_suggest_best(&s))
        cli_error(path, "unknown flag '--%s' (did you mean '--%s'?)", word, ty_suggest_best(&s));
    else
        cli_error(path, "unknown flag '--%s' (see --help)", word);
    return TY_EXIT_USAGE;
}

int cli_flag_error(const char *path, int c, char **argv, const struct option *opts)
{
    const char *arg = argv[optind - 1];

    if (c == ':') {
        cli_error(path, "%s needs a value", arg);
        return TY_EXIT_USAGE;
    }
    if (strncmp(arg, "--", 2) == 0)
        return long_flag_error(path, arg, opts);
    if (optopt > ' ' && optopt < 0x7f)
        cli_error(path, "unknown flag '-%c' (see --help)", optopt);
    else
        cli_error(path, "unknown flag '%s' (see --help)", arg);
    return TY_EXIT_USAGE;
}
