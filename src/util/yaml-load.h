/* SPDX-License-Identifier: Apache-2.0
 * yaml-load.h: load a YAML document (the `gcloud --config` form) into a jansson tree.
 *
 * Mappings become objects (keys must be scalars), sequences arrays. Plain scalars:
 * null/~/empty become null, YAML 1.1 booleans (true/false/yes/no/on/off in their usual
 * spellings) become booleans, everything else a *string* holding the scalar's text: the
 * spec normaliser converts strings to numbers where the schema wants a number, so
 * `runtimeVersion: 2.10` keeps its text. Quoted scalars are always strings.
 * Bounded: depth 64, 100,000 nodes after alias expansion (stops "billion laughs"). */
#ifndef TY_YAML_H
#define TY_YAML_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

/* Parse @len bytes of YAML (a single document; an empty document yields an empty object).
 * Returns 0 and *ret (new reference), or -EINVAL/-E2BIG with err naming line and column. */
int ty_yaml_parse(const char *text, size_t len, json_t **ret, struct ty_error *err);

#endif
