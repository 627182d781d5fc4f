/* SPDX-License-Identifier: Apache-2.0
 * hp-check.h: what the tuner's tests share (test-tuner.c, test-gp.c): a HyperparameterSpec
 * read from a body written with ' for " to keep it readable. Header-only, as tap.h is (its
 * counters are per test program). */
#ifndef TY_TEST_HP_CHECK_H
#define TY_TEST_HP_CHECK_H

#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "tap.h"

/* The last spec_of's error. */
static struct ty_error err;

/* The spec of a HyperparameterSpec body written with '; NULL (and a diagnostic) when it is
 * refused. Caller frees (ty_hp_free). */
static inline struct ty_hp_spec *spec_of(const char *text)
{
    _cleanup_free_ char *t = xstrdup(text);
    _cleanup_json_ json_t *j = NULL;
    struct ty_hp_spec *hp = NULL;

    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    ty_error_clear(&err);
    if (ty_json_parse(t, strlen(t), &j, &err) < 0 || ty_hp_spec_from_json(j, &hp, &err) < 0) {
        diag("spec error: %s", err.msg);
        return NULL;
    }
    return hp;
}

#endif
