/* SPDX-License-Identifier: Apache-2.0
 * test-taskproto.c: framing of the supervisor <-> trainyard-task protocol (taskproto.c):
 * round trips, frames split at every byte, binary payloads, and the refusals (zero or
 * oversized lengths, unknown types, a broken stream). */
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "tap.h"
#include "taskproto.h"

struct got {
    int types[16];
    struct ty_buf payload[16];
    size_t n;
};

static int collect(void *ctx, int type, const char *payload, size_t len)
{
    struct got *g = ctx;
    if (g->n == 16)
        return -ENOSPC;
    g->types[g->n] = type;
    ty_buf_append(&g->payload[g->n], payload, len);
    g->n++;
    return 0;
}

static void got_release(struct got *g)
{
    for (size_t i = 0; i < 16; i++)
        ty_buf_release(&g->payload[i]);
    memset(g, 0, sizeof(*g));
}

static void test_round_trip(void)
{
    struct ty_buf wire = TY_BUF_INIT;
    struct ty_taskproto_reader rd = {0};
    struct ty_error err = {0};
    struct got g = {0};
    _cleanup_json_ json_t *hello = json_pack("{s:s, s:i}", "node", "n1", "port", 40001);
    static const char bin[] = {'a', 0, '\xff', '\n', 'b'};
    json_t *j = NULL;

    ok(ty_taskproto_frame_json(&wire, TY_TASK_HELLO, hello) == 0, "HELLO framed");
    ok(ty_taskproto_frame(&wire, TY_TASK_OUT, bin, sizeof(bin)) == 0, "binary OUT framed");
    ok(ty_taskproto_frame(&wire, TY_TASK_QUIT, NULL, 0) == 0, "empty payload framed");
    is_int(wire.len,
           4 + 1 + strlen("{\"node\":\"n1\",\"port\":40001}") + 5 + sizeof(bin) + 5,
           "sizes: 4-byte length, type, payload");

    /* Byte by byte: the reader must reassemble every frame. */
    for (size_t i = 0; i < wire.len; i++)
        if (ty_taskproto_feed(&rd, wire.data + i, 1, collect, &g, &err) < 0)
            break;
    is_int(g.n, 3, "three frames out of single bytes");
    ok(g.types[0] == TY_TASK_HELLO && g.types[1] == TY_TASK_OUT && g.types[2] == TY_TASK_QUIT,
       "types in order");
    ok(g.payload[1].len == sizeof(bin) && memcmp(g.payload[1].data, bin, sizeof(bin)) == 0,
       "binary payload intact (NUL, 0xff, newline)");
    is_int(g.payload[2].len, 0, "empty payload");
    is_int(ty_taskproto_pending(&rd), 0, "nothing left over");
    ok(ty_taskproto_json(g.payload[0].data, g.payload[0].len, &j, &err) == 0 &&
           json_integer_value(json_object_get(j, "port")) == 40001,
       "JSON payload parses back");
    json_decref(j);
    got_release(&g);

    /* All at once, plus half of another frame. */
    ty_buf_append(&wire, wire.data, 7);
    ok(ty_taskproto_feed(&rd, wire.data, wire.len, collect, &g, &err) == 0, "fed at once");
    is_int(g.n, 3, "three frames");
    is_int(ty_taskproto_pending(&rd), 7, "the partial frame is kept");
    got_release(&g);
    ty_taskproto_reader_release(&rd);
    ty_buf_release(&wire);
}

static void test_refusals(void)
{
    struct ty_taskproto_reader rd = {0};
    struct ty_error err = {0};
    struct got g = {0};
    struct ty_buf big = TY_BUF_INIT;
    json_t *j = NULL;

    is_int(ty_taskproto_feed(&rd, "\0\0\0\0", 4, collect, &g, &err), -EPROTO, "length 0");
    ok(strstr(err.msg, "bad frame length 0") != NULL, "says why: %s", err.msg);
    is_int(ty_taskproto_feed(&rd, "\0\0\0\1Q", 5, collect, &g, &err),
           -EPROTO,
           "a broken stream refuses more");
    ty_taskproto_reader_release(&rd);
    memset(&rd, 0, sizeof(rd));

    is_int(ty_taskproto_feed(&rd, "\x00\x40\x00\x01", 4, collect, &g, &err),
           -EPROTO,
           "length over 4 MiB");
    ty_taskproto_reader_release(&rd);
    memset(&rd, 0, sizeof(rd));

    is_int(ty_taskproto_feed(&rd, "\0\0\0\1Z", 5, collect, &g, &err), -EPROTO, "unknown type");
    ok(strstr(err.msg, "unknown message type 0x5a") != NULL, "names it: %s", err.msg);
    is_int(g.n, 0, "no frame delivered");
    ty_taskproto_reader_release(&rd);

    ty_buf_append(&big, "", 0);
    {
        char *p = xcalloc(TY_TASKPROTO_MAX_FRAME, 1);
        is_int(ty_taskproto_frame(&big, TY_TASK_OUT, p, TY_TASKPROTO_MAX_FRAME),
               -EMSGSIZE,
               "an oversized frame is not written");
        is_int(ty_taskproto_frame(&big, TY_TASK_OUT, p, TY_TASKPROTO_MAX_FRAME - 1),
               0,
               "the largest frame is");
        free(p);
    }
    ty_buf_release(&big);

    is_int(ty_taskproto_json("[1]", 3, &j, &err), -EPROTO, "a JSON array is no message");
    is_int(ty_taskproto_json("{", 1, &j, &err), -EPROTO, "nor is broken JSON");
    got_release(&g);
}

int main(void)
{
    test_round_trip();
    test_refusals();
    return done_testing();
}
