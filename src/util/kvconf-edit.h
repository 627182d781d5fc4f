/* SPDX-License-Identifier: Apache-2.0
 * kvconf-edit.h: editing a "key = value" file (the format of kvconf.h) the way a person
 * would: one setting changed, added or removed, every other line (comments, blank lines,
 * other keys, CRLF endings) kept byte for byte, and the file replaced atomically. Used by
 * `trainyard config set|unset`. */
#ifndef TY_KVCONF_EDIT_H
#define TY_KVCONF_EDIT_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* Set @key to @value in @text (a file's content that ty_kvconf_load accepts; "" for a new
 * file): the last line setting @key is rewritten as "key = value" in place and earlier lines
 * setting it (overridden, so dead) are dropped; without one, the line is appended, ending as
 * the text's first line does (CRLF or LF; LF in a new file). @value is
 * double-quoted (kvconf's escapes) when it is empty, starts with '"' or has blanks at either
 * end, else written as it is. Returns 0 and *ret (the new text, caller frees), or -EINVAL
 * with err when @value holds a line break or another control character but the tab. */
int ty_kvconf_set(
    const char *text, const char *key, const char *value, char **ret, struct ty_error *err);

/* Remove every line setting @key from @text. Returns the new text (caller frees) and
 * *removed: whether there was one. */
char *ty_kvconf_unset(const char *text, const char *key, bool *removed);

/* Replace the file @path with @text atomically: a temporary file beside it (mode @mode,
 * fsync'd) renamed over it, so a reader sees the old content or the new, never part. Symbolic
 * links at @path are followed (the file they end at is replaced); something there that is not
 * a regular file (a device, a directory, a FIFO) is -EINVAL, left as it is. Missing parent
 * directories are created (mode 0700). Returns 0, or -errno with err naming the file. */
int ty_write_file_atomic(const char *path, const char *text, mode_t mode, struct ty_error *err);

/* Lock (flock, exclusive, waiting) the directory that holds the file @path (symbolic links
 * followed, the directory made as ty_write_file_atomic would): a read-modify-write of the file
 * under it is not lost to another's (the file itself is replaced, so its own lock would not
 * hold). Returns the locked descriptor (close it to unlock), or -errno with err. */
int ty_file_lock_dir(const char *path, struct ty_error *err);

#endif
