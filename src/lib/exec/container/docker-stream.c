/* SPDX-License-Identifier: Apache-2.0
 * docker-stream.c: the parts of the Docker API client that read what the engine sends back
 * without any I/O of their own: error messages out of error bodies and pull streams, and the
 * demultiplexing of non-TTY log streams (see docker-api.h). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "docker-api.h"
#include "macro.h"

void ty_docker_copy_cut(char *dst, size_t n, const char *src, size_t len)
{
    if (!n)
        return;
    if (len > n - 1) {
        len = n - 1;
        /* Do not leave half of a UTF-8 sequence at the end. */
        while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(dst, src, len);
    dst[len] = '\0';
}

void ty_docker_error_message(const char *body, char *buf, size_t n)
{
    const char *s = NULL;
    size_t len = 0;
    json_t *j = NULL;

    if (!buf || !n)
        return;
    buf[0] = '\0';
    if (!body)
        return;
    j = json_loadb(body, strlen(body), 0, NULL);
    if (json_is_object(j)) {
        json_t *m = json_object_get(j, "message");
        if (!json_is_string(m) || !json_string_length(m))
            m = json_object_get(j, "error"); /* the error item of a pull stream */
        if (json_is_string(m) && json_string_length(m)) {
            s = json_string_value(m);
            len = json_string_length(m);
        }
    }
    if (!s) {
        s = body;
        len = strlen(body);
    }
    while (len && (unsigned char)*s <= ' ') {
        s++;
        len--;
    }
    while (len && (unsigned char)s[len - 1] <= ' ')
        len--;
    ty_docker_copy_cut(buf, n, s, len);
    /* One line: control characters (newlines of a raw body) become spaces. */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < ' ' || *p == 127)
            *p = ' ';
    json_decref(j);
}

void ty_docker_demux_feed(struct ty_docker_demux *dm,
                          const char *data,
                          size_t len,
                          void (*on_frame)(void *ctx, int stream, const char *p, size_t n),
                          void *ctx)
{
    while (len) {
        if (dm->remaining == 0) {
            size_t take = sizeof(dm->header) - dm->header_have;
            if (take > len)
                take = len;
            memcpy(dm->header + dm->header_have, data, take);
            dm->header_have += take;
            data += take;
            len -= take;
            if (dm->header_have < sizeof(dm->header))
                return;
            dm->header_have = 0;
            dm->stream = dm->header[0];
            dm->remaining = (uint32_t)dm->header[4] << 24 | (uint32_t)dm->header[5] << 16 |
                            (uint32_t)dm->header[6] << 8 | (uint32_t)dm->header[7];
            continue;
        }
        size_t take = dm->remaining < len ? dm->remaining : len;
        if (on_frame)
            on_frame(ctx, dm->stream, data, take);
        dm->remaining -= (uint32_t)take;
        data += take;
        len -= take;
    }
}
