/* SPDX-License-Identifier: Apache-2.0
 * spec-check.h: the job-document checks the spec tests share (test-spec.c,
 * test-spec-formats.c, test-spec-hparams.c): parse a document, build the typed job, and say
 * whether it was accepted or refused with a given message.
 *
 * Header-only, as tap.h is (its counters are per test program): each test includes it once
 * and defines spec_build(), how its parsed document becomes a job, or defines
 * SPEC_CHECK_ACCEPT first for the one below: the job as the service accepts it. JSON
 * documents are written with ' for " (dq() swaps them) to keep them readable; YAML is taken
 * as written. */
#ifndef TY_TEST_SPEC_CHECK_H
#define TY_TEST_SPEC_CHECK_H

#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "tap.h"

/* The last load's error (empty after a success). */
static struct ty_error err;

/* Defined by the test: the typed job of the parsed document @doc into *@ret (0), or -1 with
 * @e set. */
static int spec_build(json_t *doc, struct ty_job **ret, struct ty_error *e);

#ifdef SPEC_CHECK_ACCEPT
#include "accept.h"

/* A minimal valid CUSTOM TrainingInput, to extend with ",'field':..." */
#define IMG    "'masterConfig':{'imageUri':'gcr.io/p/img:1'}"
#define CUSTOM "'scaleTier':'CUSTOM','masterType':'n1-standard-4'," IMG

/* The job as trainyard accepts it (ty_job_accept), with a jobId when the document has none. */
static int spec_build(json_t *doc, struct ty_job **ret, struct ty_error *e)
{
    if (!json_object_get(doc, "jobId"))
        json_object_set_new(doc, "jobId", json_string("test_job"));
    return ty_job_accept(doc, ret, e);
}
#endif

/* @s with every ' made " (caller frees). */
static inline char *dq(const char *s)
{
    char *t = xstrdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    return t;
}

/* Parse @text as @fmt (JSON/AUTO text in the ' form) and build the typed job with
 * spec_build. err holds the message on failure. */
static inline int load(const char *text, enum ty_spec_format fmt, struct ty_job **ret)
{
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *t = fmt == TY_SPEC_YAML ? xstrdup(text) : dq(text);
    int r;

    *ret = NULL;
    ty_error_clear(&err);
    r = ty_spec_parse(t, strlen(t), fmt, &doc, &err);
    if (r < 0)
        return r;
    return spec_build(doc, ret, &err);
}

/* One check: the document is rejected and the message contains @needle (err.msg is empty
 * after a success, so an accepted document fails the check). */
static inline void
bad_fmt(enum ty_spec_format fmt, const char *text, const char *needle, const char *name)
{
    struct ty_job *job = NULL;
    int r = load(text, fmt, &job);
    like(r < 0 ? err.msg : "(accepted)", needle, "rejects %s", name);
    ty_job_free(job);
}

static inline void bad(const char *text, const char *needle, const char *name)
{
    bad_fmt(TY_SPEC_JSON, text, needle, name);
}

/* One check: the document is accepted. Returns the job (NULL on failure); caller frees. */
static inline struct ty_job *good_fmt(enum ty_spec_format fmt, const char *text, const char *name)
{
    struct ty_job *job = NULL;
    int r = load(text, fmt, &job);
    if (!ok(r == 0 && job, "accepts %s", name))
        diag("error: %s", err.msg);
    return job;
}

static inline struct ty_job *good(const char *text, const char *name)
{
    return good_fmt(TY_SPEC_JSON, text, name);
}

static inline void good_free(const char *text, const char *name)
{
    ty_job_free(good(text, name));
}

/* Canonical Job JSON of @text (any format), compact; "(error) <msg>" on failure. Caller
 * frees. */
static inline char *canon(const char *text, enum ty_spec_format fmt)
{
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *t = fmt == TY_SPEC_YAML ? xstrdup(text) : dq(text);

    ty_error_clear(&err);
    if (ty_spec_parse(t, strlen(t), fmt, &doc, &err) < 0)
        return xasprintf("(error) %s", err.msg);
    return ty_json_compact(doc);
}

#endif
