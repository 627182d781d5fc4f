/* SPDX-License-Identifier: Apache-2.0
 * kvconf.h: a reader for the small "key = value" configuration files of the CLI
 * (~/.config/trainyard/config) and the daemon.
 *
 * Format, one setting per line:
 *     # a comment (a line whose first non-blank character is '#')
 *     api_endpoint = http://127.0.0.1:8080
 *     project      = "my project"          # no: comments only on lines of their own
 * Blank lines and comment lines are ignored. Whitespace around the key and the value is
 * trimmed. A key is [a-z0-9_-]+. A value may be "double-quoted" to keep leading or trailing
 * spaces (and '#'); inside quotes \" and \\ are the only escapes, and nothing but blanks may
 * follow the closing quote. An unquoted value is taken as written, up to the end of the line
 * ('#' in it is part of the value). `key =` gives the empty value. CR before LF is ignored.
 * Keys may repeat: the pairs are returned in file order and the reader decides (normally the
 * last one wins). The file is read whole and must not exceed TY_KVCONF_MAX_BYTES. */
#ifndef TY_KVCONF_H
#define TY_KVCONF_H

#include <stddef.h>

#include "error.h"

/* Largest configuration file read: 1 MiB (a real one is a few hundred bytes). */
#define TY_KVCONF_MAX_BYTES (1024 * 1024)

struct ty_kv {
    char *key;
    char *value;
    int line; /* 1-based line number in the file */
};

/* Read @path. Returns 0 and the pairs in file order (*ret, *n; *ret is NULL when there are
 * none), -ENOENT if the file does not exist, -EINVAL with err "PATH:LINE: ..." for a
 * malformed line, -EFBIG for a file over TY_KVCONF_MAX_BYTES, other -errno when it cannot be
 * read (err names the file). On failure *ret is NULL and *n is 0. */
int ty_kvconf_load(const char *path, struct ty_kv **ret, size_t *n, struct ty_error *err);

/* Free what ty_kvconf_load returned; NULL-safe. */
void ty_kvconf_free(struct ty_kv *kv, size_t n);

#endif
