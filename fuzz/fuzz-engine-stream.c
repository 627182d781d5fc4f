/* SPDX-License-Identifier: Apache-2.0
 * fuzz-engine-stream.c: libFuzzer target for what the container runtime reads back from the
 * container engine (src/lib/exec/container): a container's multiplexed log stream
 * (docker-stream.c's demultiplexer) cut into log lines as container-run.c does (the
 * payload is the program's output: anything at all), error bodies and pull-stream items
 * turned into one-line messages, the test for an engine without an init, the network list
 * a subnet is picked from, cgroup counters, and an image's user (the engine's tar archive of
 * a file, /etc/passwd and /etc/group texts, a Config.User value). Besides memory errors it checks
 * promises: the same lines come out whatever the chunking, no line is longer than TY_LINE_MAX or
 * holds a newline, a message fits its buffer and is one line of printable characters, a picked
 * subnet is a /24 inside 198.18.0.0/15 that no listed network uses.
 *
 * Input: byte 0 chooses the chunk size of the second feed; the rest is the log stream, and
 * also the error body, the network list (JSON), the cgroup file, the archive, the passwd and
 * group texts and the user value.
 *
 * Build: as fuzz-job-spec.c. Run: /tmp/fz/fuzz/fuzz-engine-stream -max_total_time=60 NEW_DIR
 *        fuzz/corpus/engine-stream */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "container-engine.h"
#include "container-internal.h"
#include "docker-api.h"
#include "linesplit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond)
        abort();
}

/* What came out of a stream: lines per stream, their bytes, an order-sensitive hash. */
struct tally {
    struct ty_linesplit ls[2];
    size_t lines, bytes;
    unsigned hash;
    int stream; /* the stream of the frame being fed */
};

static void on_line(void *ctx, const char *line, size_t len)
{
    struct tally *t = ctx;
    check(len <= TY_LINE_MAX);
    check(memchr(line, '\n', len) == NULL);
    t->lines++;
    t->bytes += len;
    t->hash = t->hash * 31u + (unsigned)t->stream * 7u + (unsigned)len;
    for (size_t i = 0; i < len; i++)
        t->hash = t->hash * 131u + (unsigned char)line[i];
}

/* As container-run.c's on_frame: stream 2 is stderr, anything else stdout. */
static void on_frame(void *ctx, int stream, const char *p, size_t n)
{
    struct tally *t = ctx;
    t->stream = stream == 2 ? 2 : 1;
    ty_linesplit_feed(&t->ls[t->stream - 1], p, n, on_line, t);
}

static void demux(const char *data, size_t size, size_t chunk, struct tally *t)
{
    struct ty_docker_demux dm = {0};

    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        ty_docker_demux_feed(&dm, data + off, n, on_frame, t);
    }
    for (int s = 0; s < 2; s++) {
        t->stream = s + 1;
        ty_linesplit_flush(&t->ls[s], on_line, t);
        ty_linesplit_release(&t->ls[s]);
    }
}

/* A message is NUL-terminated within its buffer and one line of no control characters. */
static void check_message(const char *body, size_t n)
{
    char buf[512];

    check(n <= sizeof(buf));
    memset(buf, 'x', sizeof(buf));
    ty_docker_error_message(body, buf, n);
    check(memchr(buf, '\0', n) != NULL);
    for (const char *p = buf; *p; p++)
        check((unsigned char)*p >= ' ' && *p != 127);
}

/* A subnet picked from a network list: 198.18.N.0/24 or 198.19.N.0/24, its prefix the same,
 * and no network of the list has it. */
static void check_subnet(const char *text, size_t len, unsigned seed)
{
    json_t *nets = json_loadb(text, len, 0, NULL);
    char subnet[32], prefix[24];
    struct ty_error err = {0};

    if (!nets)
        return;
    if (ty_engine_pick_subnet(nets, seed, subnet, sizeof(subnet), prefix, sizeof(prefix), &err) ==
        0) {
        size_t pl = strlen(prefix);
        check(strncmp(subnet, "198.18.", 7) == 0 || strncmp(subnet, "198.19.", 7) == 0);
        check(pl > 0 && strncmp(subnet, prefix, pl) == 0 && strcmp(subnet + pl, "0/24") == 0);
        if (json_is_array(nets)) {
            size_t i;
            json_t *n;
            json_array_foreach(nets, i, n)
            {
                json_t *cfg = json_object_get(json_object_get(n, "IPAM"), "Config");
                size_t k;
                json_t *c;
                json_array_foreach(cfg, k, c)
                {
                    const char *s = json_string_value(json_object_get(c, "Subnet"));
                    check(!s || strcmp(s, subnet) != 0);
                }
            }
        }
    } else {
        check(err.msg[0] != '\0');
    }
    json_decref(nets);
}

/* An image's user (container-user.c): the first file of a tar archive lies within it, and
 * what the passwd and group lookups find in it (or in the whole text) are ids below 2^32 - 1;
 * a Config.User value splits into parts that fit and that it begins with. */
static void check_user(const char *text, size_t len, const char *value)
{
    const char *file = NULL;
    size_t n = 0;
    unsigned long uid = 0, gid = 0;
    char user[16], group[16];

    if (ctr_tar_first_file(text, len, &file, &n) == 0)
        check(file >= text + 512 && file + n <= text + len);
    else
        file = text, n = len;
    if (ctr_passwd_lookup(file, n, "trainer", &uid, &gid))
        check(uid < 0xffffffffUL && gid < 0xffffffffUL);
    if (ctr_group_lookup(file, n, "staff", &gid))
        check(gid < 0xffffffffUL);
    ctr_user_split(value, user, sizeof(user), group, sizeof(group));
    check(strlen(user) < sizeof(user) && strncmp(value, user, strlen(user)) == 0);
    check(strlen(group) < sizeof(group));
    (void)ctr_user_is_root(value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tally whole = {0}, pieces = {0};
    const char *text;
    char *body;
    size_t len;

    if (size < 1)
        return 0;
    text = (const char *)data + 1;
    len = size - 1;
    demux(text, len, len ? len : 1, &whole);
    demux(text, len, (size_t)data[0] % 23 + 1, &pieces);
    check(whole.lines == pieces.lines && whole.bytes == pieces.bytes && whole.hash == pieces.hash);

    body = malloc(len + 1);
    check(body != NULL);
    memcpy(body, text, len);
    body[len] = '\0';
    check_message(body, 1);
    check_message(body, 7);
    check_message(body, 200);
    check_message(body, 512);
    (void)ctr_init_missing(body, NULL);
    (void)ctr_init_missing(NULL, body);
    (void)ctr_oom_parse_count(body);
    check_subnet(text, len, data[0]);
    check_user(text, len, body);
    free(body);
    return 0;
}
