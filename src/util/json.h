/* SPDX-License-Identifier: Apache-2.0
 * json.h: small helpers over jansson used by the spec, env rendering and the CLI.
 * Parsing of untrusted text goes through ty_json_parse, which bounds size and rejects
 * duplicate keys. */
#ifndef TY_JSON_H
#define TY_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Largest job spec / request document trainyard parses: 4 MiB. A TrainingInput is a few
 * KiB; the limit only stops a runaway file or body from being held in memory. */
#define TY_JSON_MAX_BYTES (4u * 1024 * 1024)

/* Parse @len bytes of JSON text into *ret (new reference). Rejects duplicate keys, text
 * over TY_JSON_MAX_BYTES (-E2BIG) and trailing garbage. Errors name line and column. */
int ty_json_parse(const char *text, size_t len, json_t **ret, struct ty_error *err);

/* Compact serialisation (no whitespace, keys in insertion order). Caller frees. */
char *ty_json_compact(const json_t *j);
/* Compact serialisation cut to at most 80 characters ("..." marks a cut), for quoting
 * a user's value inside an error message. Caller frees. */
char *ty_json_compact_short(const json_t *j);
/* Indented serialisation for humans. Caller frees. */
char *ty_json_pretty(const json_t *j);
/* json_dumps(@j, @flags | JSON_ENCODE_ANY) with every real written shortest
 * (ty_json_shortest_reals, numfmt.h): how every serialisation here writes numbers. "null"
 * when jansson fails. Caller frees. */
char *ty_json_dumps(const json_t *j, size_t flags);

/* Borrowed string member or NULL when absent or not a string. */
const char *ty_json_str(const json_t *obj, const char *key);

static inline void ty_json_decrefp(json_t **j)
{
    if (*j)
        json_decref(*j);
}
#define _cleanup_json_ __attribute__((cleanup(ty_json_decrefp)))

#endif
