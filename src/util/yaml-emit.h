/* SPDX-License-Identifier: Apache-2.0
 * yaml-emit.h: print a jansson value as YAML the way gcloud prints resources with
 * `--format yaml` (PyYAML's block style):
 *   - mapping keys sorted (byte order), nested mappings indented 2, `key: {}` when empty;
 *   - sequences as `- ` items at the indentation of their key (`key: []` when empty);
 *   - strings plain when YAML reads them back as the same string, else single-quoted
 *     ('it''s'): numbers ('5', '0.1', '1e3', '0x1f'), booleans and nulls (true, no, on, ~,
 *     null), times ('2026-11-30T09:00:00Z'), the empty string, leading or trailing blanks,
 *     leading indicator characters (- ? : followed by a blank, # & * ! | > ' " % @ ` , [ ] { }),
 *     ': ' and ' #' inside, a trailing ':';
 *   - strings with line breaks as `|-` literal blocks (`|` / `|+` keep trailing newlines),
 *     or double-quoted when a block cannot hold them (a first line starting with a blank);
 *   - strings with control characters double-quoted with escapes ("\t", "\x01");
 *   - integers and booleans as is, null as `null`, reals as Python's repr (0.1, 1.0, 1.0e+16). */
#ifndef TY_YAML_EMIT_H
#define TY_YAML_EMIT_H

#include <jansson.h>
#include <stdbool.h>

#include "buf.h"

/* Append @v as one YAML document (no "---" marker), every line ending in '\n'. */
void ty_yaml_emit(struct ty_buf *b, const json_t *v);

/* The same as a new string (caller frees). */
char *ty_yaml_dump(const json_t *v);

/* True when the one-line string @s would not be read back as that string if written plain
 * (so the emitter quotes it). */
bool ty_yaml_needs_quotes(const char *s);

#endif
