/* SPDX-License-Identifier: Apache-2.0
 * auth.c: bearer tokens for trainyardd (--auth-tokens FILE). Each line of the file is
 *     TOKEN PROJECT[,PROJECT...]
 * ('*' grants every project; '#' starts a comment). A request must carry
 * "Authorization: Bearer TOKEN" with a token granting the project in its URL. Tokens are
 * compared in constant time; the file must not be readable by others. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "daemon.h"
#include "fdutil.h"
#include "macro.h"
#include "strv.h"

/* A token must be long enough not to be guessed over the network: 16 random base64
 * characters are 96 bits. */
#define MIN_TOKEN_LEN 16
/* A tokens file is a few lines; 1 MiB is far beyond any real one and bounds what is read. */
#define MAX_TOKENS_FILE (1024 * 1024)

struct tyd_token {
    char *token;
    char **projects; /* "*" = all */
};

struct tyd_auth {
    struct tyd_token *tokens;
    size_t n;
};

void tyd_auth_free(struct tyd_auth *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free(a->tokens[i].token);
        ty_strv_free(a->tokens[i].projects);
    }
    free(a->tokens);
    free(a);
}

static int
parse_line(struct tyd_auth *a, char *line, const char *path, int lineno, struct ty_error *err)
{
    char *tok, *projects, *save = NULL, *p;
    struct tyd_token t = {0};

    line[strcspn(line, "#")] = '\0';
    tok = strtok_r(line, " \t\r", &save);
    if (!tok)
        return 0;
    projects = strtok_r(NULL, " \t\r", &save);
    if (!projects || strtok_r(NULL, " \t\r", &save))
        return ty_error_set(err,
                            EINVAL,
                            "%s:%d: expected 'TOKEN PROJECT[,PROJECT...]' ('*' for every "
                            "project)",
                            path,
                            lineno);
    if (strlen(tok) < MIN_TOKEN_LEN)
        return ty_error_set(err,
                            EINVAL,
                            "%s:%d: token too short (at least 16 characters; generate one "
                            "with e.g. 'head -c 24 /dev/urandom | base64')",
                            path,
                            lineno);
    t.token = xstrdup(tok);
    t.projects = xcalloc(1, sizeof(char *));
    for (p = strtok_r(projects, ",", &save); p; p = strtok_r(NULL, ",", &save))
        ty_strv_push(&t.projects, p);
    a->tokens = xreallocarray(a->tokens, a->n + 1, sizeof(*a->tokens));
    a->tokens[a->n++] = t;
    return 0;
}

int tyd_auth_load(const char *path, struct tyd_auth **ret, struct ty_error *err)
{
    _cleanup_free_ char *text = NULL;
    struct tyd_auth *a;
    struct stat st;
    size_t len;
    char *line, *save = NULL;
    int r, lineno = 0;

    r = ty_read_file(path, MAX_TOKENS_FILE, &text, &len, err);
    if (r < 0)
        return ty_error_prefix(err, r, "--auth-tokens");
    if (stat(path, &st) == 0 && (st.st_mode & 0077))
        return ty_error_set(err,
                            EPERM,
                            "--auth-tokens: %s is readable or writable by other users; "
                            "chmod 600 it",
                            path);
    a = xcalloc(1, sizeof(*a));
    /* strtok_r would merge empty lines and break line numbers: split by hand. */
    for (line = text; line; line = save) {
        save = strchr(line, '\n');
        if (save)
            *save++ = '\0';
        lineno++;
        r = parse_line(a, line, path, lineno, err);
        if (r < 0) {
            tyd_auth_free(a);
            return r;
        }
    }
    if (a->n == 0) {
        tyd_auth_free(a);
        return ty_error_set(err, EINVAL, "--auth-tokens: %s has no tokens", path);
    }
    *ret = a;
    return 0;
}

static bool same_token(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

enum tyd_auth_result
tyd_auth_check(const struct tyd_auth *a, const char *header, const char *project)
{
    const char *tok;

    if (!header || !*header)
        return TYD_AUTH_MISSING;
    if (strncasecmp(header, "Bearer ", 7) != 0)
        return TYD_AUTH_BAD_TOKEN;
    tok = header + 7;
    while (*tok == ' ')
        tok++;
    for (size_t i = 0; i < a->n; i++) {
        if (!same_token(a->tokens[i].token, tok))
            continue;
        if (!project || !*project)
            return TYD_AUTH_OK;
        for (char **p = a->tokens[i].projects; *p; p++)
            if (strcmp(*p, "*") == 0 || strcmp(*p, project) == 0)
                return TYD_AUTH_OK;
        return TYD_AUTH_FORBIDDEN;
    }
    return TYD_AUTH_BAD_TOKEN;
}
