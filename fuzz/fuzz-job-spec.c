/* SPDX-License-Identifier: Apache-2.0
 * fuzz-job-spec.c: libFuzzer target for the job-document gate: ty_spec_parse (JSON, YAML
 * and AUTO) and, when a document parses, ty_job_accept. Besides memory errors it checks
 * the gate's promises: every failure carries a message, the canonical form is a fixed point
 * of the normaliser, and an accepted job is fully expanded.
 *
 * Build: CC=clang meson setup /tmp/fz -Dfuzz=true -Db_lundef=false
 *        (add -Db_sanitize=address,undefined -Dc_args=-fsanitize=fuzzer-no-link to give
 *        libFuzzer coverage of the library too), then ninja -C /tmp/fz.
 * Run:   /tmp/fz/fuzz/fuzz-job-spec -max_total_time=60 NEW_DIR fuzz/corpus/job-spec */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "json.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond)
        abort();
}

static void check_job(const struct ty_job *job)
{
    check(job->job_id && job->training_input && job->labels);
    check(job->roles[TY_ROLE_MASTER].count == 1);
    check(ty_job_replica_count(job) >= 1);
    for (int i = 0; i < TY_ROLE_MAX; i++) {
        const struct ty_role_spec *rs = &job->roles[i];
        check(rs->count >= 0 && rs->count <= TY_MAX_REPLICAS_PER_ROLE);
        if (rs->count > 0)
            check(rs->machine_type && rs->image_uri && *rs->image_uri);
    }
}

static void one(const char *text, size_t len, enum ty_spec_format fmt)
{
    struct ty_error err = {0};
    struct ty_job *job = NULL;
    json_t *doc = NULL, *again = NULL;

    if (ty_spec_parse(text, len, fmt, &doc, &err) < 0) {
        check(err.code != 0 && err.msg[0] != '\0');
        return;
    }
    check(json_is_object(doc) && json_is_object(json_object_get(doc, "trainingInput")) ==
                                     !!json_object_get(doc, "trainingInput"));
    /* The canonical form normalises to itself, strictly (no YAML leniency needed). The one
     * exception is a Job of output-only or null fields only, e.g. {"state":null}: it becomes
     * {}, which reads as an empty bare TrainingInput; both fail ty_job_from_json alike. */
    check(ty_spec_normalize_job(doc, false, &again, &err) == 0);
    check(json_object_size(doc) == 0 || json_equal(doc, again));
    json_decref(again);

    if (!json_object_get(doc, "jobId"))
        json_object_set_new(doc, "jobId", json_string("fuzz_job"));
    err.code = 0;
    err.msg[0] = '\0';
    if (ty_job_accept(doc, &job, &err) == 0) {
        check(job != NULL);
        check_job(job);
        check(json_equal(job->training_input, json_object_get(doc, "trainingInput")));
        ty_job_free(job);
    } else {
        check(job == NULL && err.code != 0 && err.msg[0] != '\0');
    }
    json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Every input goes through all three formats. It is copied to a buffer of exactly its
     * size (no terminating NUL), so that a read past its end is caught. */
    char *text = malloc(size ? size : 1);

    if (!text)
        return 0;
    memcpy(text, data, size);
    one(text, size, TY_SPEC_JSON);
    one(text, size, TY_SPEC_YAML);
    one(text, size, TY_SPEC_AUTO);
    free(text);
    return 0;
}
