/* SPDX-License-Identifier: Apache-2.0
 * strv.h: NULL-terminated string vectors (argv/envp style). */
#ifndef TY_STRV_H
#define TY_STRV_H

#include <stdbool.h>
#include <stddef.h>

/* Number of entries (0 for NULL). */
size_t ty_strv_len(char *const *v);
/* Append a copy of @s; *v may be NULL (creates the vector). */
void ty_strv_push(char ***v, const char *s);
/* Append, taking ownership of @s. */
void ty_strv_push_take(char ***v, char *s);
/* Append copies of all entries of @src. */
void ty_strv_extend(char ***v, char *const *src);
/* Deep copy; NULL for NULL. */
char **ty_strv_copy(char *const *v);
/* Free all entries and the vector; NULL-safe; returns NULL. */
char **ty_strv_free(char **v);
/* Set NAME=VALUE in an environment vector, replacing an existing NAME. */
void ty_strv_setenv(char ***env, const char *name, const char *value);
/* Remove NAME from an environment vector (every entry of it); nothing when it is not set. */
void ty_strv_unsetenv(char **env, const char *name);
/* Value of NAME in an environment vector, or NULL. */
const char *ty_strv_getenv(char *const *env, const char *name);
/* Whether @v (NULL-safe) holds a string equal to @s. */
bool ty_strv_contains(char *const *v, const char *s);
/* How much of the @sep-separated list @s (a PATH) to show in @room bytes: all of it when it
 * fits; else the longest prefix of whole entries that leaves 4 bytes for ":...", *@cut set
 * (0 when not even the first entry fits). */
size_t ty_list_fit(const char *s, char sep, size_t room, bool *cut);

static inline void ty_strv_freep(char ***v)
{
    ty_strv_free(*v);
}
#define _cleanup_strv_free_ __attribute__((cleanup(ty_strv_freep)))

#endif
