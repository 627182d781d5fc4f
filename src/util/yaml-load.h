/* SPDX-License-Identifier: Apache-2.0
 * yaml-load.h: load a YAML document (the `gcloud --config` form) into a jansson tree.
 *
 * Mappings become objects (keys must be scalars; YAML 1.1's merge key "<<" merges a mapping
 * or a list of them, the mapping's own keys winning), sequences arrays. Scalars: plain null, ~
 * and empty become null; every other scalar becomes a *string* holding its text, quoted or
 * not. The spec normaliser turns strings into numbers and booleans (YAML 1.1 spellings:
 * true/false/yes/no/on/off) where the schema wants one, so `runtimeVersion: 2.10` keeps its
 * text and `args: [--verbose, yes]` reaches the program as "yes", not "true".
 * Bounded: depth 64, 100,000 nodes after alias expansion (stops "billion laughs"). */
#ifndef TY_YAML_H
#define TY_YAML_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Parse @len bytes of YAML (a single document). Returns 0 and *ret (new reference), or
 * -EINVAL/-E2BIG with err naming line and column (a tab where YAML wants an indent is named
 * as such), or -ENODATA for a text without a document (blank lines and comments only: "the
 * document is empty"). */
int ty_yaml_parse(const char *text, size_t len, json_t **ret, struct ty_error *err);

/* ty_yaml_parse, and the strings of the tree that are plain (unquoted) scalars YAML 1.1 and
 * 1.2 read as two numbers (ty_yaml11_octal_differs) into *@plain_octal: an array holding
 * those very json_t (compare by pointer), set on success only. A quoted "010" is text in
 * both, and is not among them. */
int ty_yaml_parse_marked(
    const char *text, size_t len, json_t **ret, json_t **plain_octal, struct ty_error *err);

/* Does the scalar @s read as another number in YAML 1.1 than in YAML 1.2: an octal integer
 * there ([-+]?0[0-7]+) with two or more digits after its leading zeros? 010 is 8 to gcloud
 * (YAML 1.1) and 10 to a YAML 1.2 reader, so a job file meant for one would run another
 * cluster, or search another range, in the other; 07 and 00 read the same in both. */
bool ty_yaml11_octal_differs(const char *s);

#endif
