/* SPDX-License-Identifier: Apache-2.0
 * fuzz-taskproto.c: libFuzzer target for the supervisor <-> trainyard-task protocol decoder
 * (taskproto.c): the input is a byte stream fed in chunks whose sizes come from the first
 * byte; every frame's JSON payload is parsed as the runtime and the launcher would. Besides
 * memory errors it checks the decoder's promises: the same frames come out whatever the
 * chunking, and a broken stream stays broken.
 *
 * Build: as fuzz-job-spec.c. Run: /tmp/fz/fuzz/fuzz-taskproto -max_total_time=60 NEW_DIR
 *        fuzz/corpus/taskproto */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "taskproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond)
        abort();
}

struct tally {
    size_t frames;
    size_t bytes;
    unsigned hash;
};

static int on_frame(void *ctx, int type, const char *payload, size_t len)
{
    struct tally *t = ctx;
    check(ty_task_msg_known(type));
    t->frames++;
    t->bytes += len;
    t->hash = t->hash * 31u + (unsigned)type + (unsigned)len;
    if (type != TY_TASK_OUT && type != TY_TASK_ERR && type != TY_TASK_METRICS) {
        json_t *j = NULL;
        struct ty_error err = {0};
        if (ty_taskproto_json(payload, len, &j, &err) == 0) {
            check(json_is_object(j));
            /* An EXIT's status: parsed or refused, and what parses writes back the same. */
            if (type == TY_TASK_EXIT) {
                struct ty_exit_status st = {0}, st2 = {0};
                if (ty_taskproto_exit_parse(j, &st, &err) == 0) {
                    json_t *back = ty_taskproto_exit_json(&st);
                    check(ty_taskproto_exit_parse(back, &st2, &err) == 0);
                    check(st2.kind == st.kind && st2.code == st.code);
                    json_decref(back);
                }
            }
            json_decref(j);
        }
    }
    return 0;
}

/* Decode @data in chunks of @chunk bytes; returns the result of the last feed. */
static int decode(const uint8_t *data, size_t size, size_t chunk, struct tally *t)
{
    struct ty_taskproto_reader rd = {0};
    struct ty_error err = {0};
    int r = 0;

    for (size_t off = 0; off < size && r == 0; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        r = ty_taskproto_feed(&rd, (const char *)data + off, n, on_frame, t, &err);
    }
    if (r < 0)
        check(ty_taskproto_feed(&rd, "x", 1, on_frame, t, &err) < 0);
    ty_taskproto_reader_release(&rd);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tally whole = {0}, pieces = {0};
    size_t chunk;
    int r1, r2;

    if (size < 1)
        return 0;
    chunk = (size_t)data[0] % 17 + 1;
    r1 = decode(data + 1, size - 1, size, &whole);
    r2 = decode(data + 1, size - 1, chunk, &pieces);
    check((r1 < 0) == (r2 < 0));
    check(whole.frames == pieces.frames && whole.bytes == pieces.bytes &&
          whole.hash == pieces.hash);
    return 0;
}
