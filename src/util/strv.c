/* SPDX-License-Identifier: Apache-2.0
 * strv.c: string vectors. */
#include "strv.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

size_t ty_strv_len(char *const *v)
{
    size_t n = 0;
    if (!v)
        return 0;
    while (v[n])
        n++;
    return n;
}

void ty_strv_push_take(char ***v, char *s)
{
    size_t n = ty_strv_len(*v);
    *v = xreallocarray(*v, n + 2, sizeof(char *));
    (*v)[n] = s;
    (*v)[n + 1] = NULL;
}

void ty_strv_push(char ***v, const char *s)
{
    ty_strv_push_take(v, xstrdup(s));
}

void ty_strv_extend(char ***v, char *const *src)
{
    for (size_t i = 0; src && src[i]; i++)
        ty_strv_push(v, src[i]);
}

char **ty_strv_copy(char *const *v)
{
    char **c = NULL;
    if (!v)
        return NULL;
    c = xcalloc(1, sizeof(char *));
    ty_strv_extend(&c, v);
    return c;
}

char **ty_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
    return NULL;
}

static char **find_env(char **env, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], name, nl) == 0 && env[i][nl] == '=')
            return &env[i];
    return NULL;
}

void ty_strv_setenv(char ***env, const char *name, const char *value)
{
    char *entry = xasprintf("%s=%s", name, value);
    char **slot = find_env(*env, name);

    if (slot) {
        free(*slot);
        *slot = entry;
        return;
    }
    ty_strv_push_take(env, entry);
}

void ty_strv_unsetenv(char **env, const char *name)
{
    size_t n = strlen(name), k = 0;

    for (size_t i = 0; env && env[i]; i++) {
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            free(env[i]);
        else
            env[k++] = env[i];
    }
    if (env)
        env[k] = NULL;
}

const char *ty_strv_getenv(char *const *env, const char *name)
{
    char **slot = find_env((char **)env, name);
    return slot ? *slot + strlen(name) + 1 : NULL;
}

bool ty_strv_contains(char *const *v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

size_t ty_list_fit(const char *s, char sep, size_t room, bool *cut)
{
    size_t keep = strlen(s);

    *cut = keep > room;
    if (!*cut)
        return keep;
    keep = room > 4 ? room - 4 : 0;
    while (keep > 0 && s[keep] != sep)
        keep--;
    return keep;
}
