/* SPDX-License-Identifier: Apache-2.0
 * fuzz-format.c: libFuzzer target for the text of --format and --sort-by (format.h: the
 * projection parser of the jobs verbs). An input is one format text, or after a first line
 * "sort:" a --sort-by text. Besides memory errors it checks the parser's promises: a refused
 * text says where ("at position N"), and a parsed one prints fixed jobs in every layout and
 * sorts them without losing one.
 *
 * Build: CC=clang meson setup /tmp/fz -Dfuzz=true -Db_lundef=false, then ninja -C /tmp/fz.
 * Run:   /tmp/fz/fuzz/fuzz-format -max_total_time=60 -dict=fuzz/format.dict NEW_DIR \
 *            fuzz/corpus/format */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char jobs_text[] =
    "[{\"jobId\":\"a1\",\"state\":\"FAILED\",\"createTime\":\"2026-11-30T09:00:00Z\","
    "\"labels\":{\"team\":\"vision\"},\"trainingInput\":{\"args\":[\"--x\",\"1\"],"
    "\"masterConfig\":{\"imageUri\":\"gcr.io/p/i:1\"}},\"trainingOutput\":{\"trials\":"
    "[{\"trialId\":\"1\",\"hyperparameters\":{\"lr\":\"0.1\"}}],\"consumedMLUnits\":1.5}},"
    "{\"jobId\":\"b2\",\"jobPosition\":\"3\",\"errorMessage\":\"a \\\"b\\\", c\\nd\"}]";

static void check_error(const struct ty_error *e)
{
    if (!strstr(e->msg, " at position ") && !strstr(e->msg, "longer than"))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *jobs;
    char *text = malloc(size + 1);
    struct ty_format *f = NULL;
    struct ty_fmt_key *keys = NULL;
    struct ty_error e = {0};
    size_t n = 0;

    if (!jobs)
        jobs = json_loads(jobs_text, 0, NULL);
    if (!text || !jobs)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    if (strncmp(text, "sort:\n", 6) == 0) {
        if (ty_format_sort_parse(text + 6, &keys, &n, &e) < 0) {
            check_error(&e);
        } else {
            json_t *copy = json_copy(jobs);
            ty_format_sort(copy, keys, n, NULL);
            if (json_array_size(copy) != json_array_size(jobs))
                abort();
            json_decref(copy);
            ty_format_keys_free(keys, n);
        }
        free(text);
        return 0;
    }
    if (ty_format_parse(text, &f, &e) < 0) {
        check_error(&e);
    } else {
        FILE *out = fopen("/dev/null", "w");
        json_t *copy = json_copy(jobs);
        if (!out)
            abort();
        ty_format_sort(copy, NULL, 0, f);
        if (!ty_format_needs_keys(f))
            ty_format_print(f, copy, false, out);
        for (enum ty_fmt_name k = TY_FMT_JSON; k <= TY_FMT_FLATTENED && f->nkeys; k++) {
            f->name = k;
            ty_format_print(f, copy, k == TY_FMT_JSON, out);
        }
        fclose(out);
        json_decref(copy);
        ty_format_free(f);
    }
    free(text);
    return 0;
}
