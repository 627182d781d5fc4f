/* SPDX-License-Identifier: Apache-2.0
 * fuzz-hypertune.c: libFuzzer target for the metric-file parser (ty_hypertune_parse), with
 * the default tag and a short custom one, running and final. Besides memory errors it checks
 * the parser's promises: it never fails under the size limit, every measurement is finite,
 * a final read takes at least what a running read took, and the counts add up.
 *
 * Build: as fuzz-job-spec.c. Run: /tmp/fz/fuzz/fuzz-hypertune -max_total_time=60 NEW_DIR
 *        fuzz/corpus/hypertune */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hypertune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond)
        abort();
}

/* Lines in @text, a last one without '\n' included: each is read or skipped. */
static size_t lines(const char *text, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n')
            k++;
    if (len > 0 && text[len - 1] != '\n')
        k++;
    return k;
}

static void one(const char *text, size_t len, const char *tag)
{
    struct ty_error err = {0};
    struct ty_hp_measurement *run = NULL, *fin = NULL, last;
    size_t nrun = 0, nfin = 0, srun = 0, sfin = 0;

    check(ty_hypertune_parse(text, len, tag, false, &run, &nrun, &srun, NULL, &err) == 0);
    check(ty_hypertune_parse(text, len, tag, true, &fin, &nfin, &sfin, NULL, &err) == 0);
    check((nrun == 0) == (run == NULL) && (nfin == 0) == (fin == NULL));
    check(nrun + srun == lines(text, len));
    check(nfin + sfin == lines(text, len));
    check(nfin >= nrun && nfin <= nrun + 1);
    for (size_t i = 0; i < nfin; i++) {
        check(isfinite(fin[i].value) && isfinite(fin[i].timestamp));
        if (i < nrun)
            check(memcmp(&fin[i], &run[i], sizeof(fin[i])) == 0);
    }
    check(ty_hypertune_final(fin, nfin, &last) == (nfin > 0));
    if (nfin > 0)
        check(memcmp(&last, &fin[nfin - 1], sizeof(last)) == 0);
    free(run);
    free(fin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Copied to a buffer of exactly its size (no terminating NUL), so that a read past its
     * end is caught. */
    char *text;

    if (size > TY_HYPERTUNE_MAX_BYTES)
        return 0;
    text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    one(text, size, NULL);
    one(text, size, "m");
    free(text);
    return 0;
}
