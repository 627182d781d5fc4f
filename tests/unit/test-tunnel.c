/* SPDX-License-Identifier: Apache-2.0
 * test-tunnel.c: what Google's clients tunnel (src/trainyardd/tunnel.h): the methods a POST
 * may stand for, gzip request bodies (damaged, cut short, too big once decoded) and the form
 * body of a long GET. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "tap.h"
#include "tunnel.h"

static void test_override(void)
{
    is_str(tyd_override_method("PATCH"), "PATCH", "PATCH");
    is_str(tyd_override_method("get"), "GET", "any case, answered in upper case");
    is_str(tyd_override_method("Delete"), "DELETE", "DELETE");
    ok(tyd_override_method("HEAD") == NULL, "HEAD: a POST's answer has a body");
    ok(tyd_override_method("PATCHX") == NULL, "no prefix match");
    ok(tyd_override_method("") == NULL && tyd_override_method(NULL) == NULL, "empty, none");
}

/* @n bytes of @text gzip-compressed into @b. */
static void gzip_into(struct ty_buf *b, const char *text, size_t n)
{
    z_stream z = {0};
    unsigned char out[65536];

    if (deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        BAIL_OUT("deflateInit2");
    z.next_in = (unsigned char *)text;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = sizeof(out);
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        BAIL_OUT("deflate");
    ty_buf_reset(b);
    ty_buf_append(b, out, sizeof(out) - z.avail_out);
    deflateEnd(&z);
}

static void test_gzip(void)
{
    static const char json[] = "{\"jobId\": \"j1\", \"labels\": {\"a\": \"b\"}}";
    struct ty_buf b = TY_BUF_INIT;
    char *zeros = calloc(1, 300000);

    ty_buf_puts(&b, json);
    is_int(tyd_decode_body(NULL, &b, 1024), 0, "no Content-Encoding: as is");
    is_int(tyd_decode_body(" identity ", &b, 1024), 0, "identity: as is");
    is_str(ty_buf_str(&b), json, "the body unchanged");
    is_int(tyd_decode_body("br", &b, 1024), -ENOTSUP, "br: not supported");
    is_int(tyd_decode_body("gzip, gzip", &b, 1024), -ENOTSUP, "a list of codings: refused");
    is_int(tyd_decode_body("gzip", &b, 1024), -EINVAL, "plain JSON declared gzip: not gzip");

    gzip_into(&b, json, strlen(json));
    is_int(tyd_decode_body("GZIP", &b, 1024), 0, "gzip, any case");
    is_str(ty_buf_str(&b), json, "decoded");

    gzip_into(&b, json, strlen(json));
    b.len -= 5; /* cut short: no whole trailer */
    is_int(tyd_decode_body("gzip", &b, 1024), -EINVAL, "a stream cut short");
    gzip_into(&b, json, strlen(json));
    b.data[b.len / 2] ^= 0x55;
    is_int(tyd_decode_body("x-gzip", &b, 1024), -EINVAL, "a damaged stream");
    gzip_into(&b, json, strlen(json));
    ty_buf_puts(&b, "trailing");
    is_int(tyd_decode_body("gzip", &b, 1024), -EINVAL, "bytes after the stream");

    gzip_into(&b, zeros, 300000);
    size_t packed = b.len;
    is_int(tyd_decode_body("gzip", &b, 299999), -E2BIG, "one byte over the limit once decoded");
    is_int((int)b.len, (int)packed, "the body left as it was");
    is_int(tyd_decode_body("gzip", &b, 300000), 0, "at the limit");
    is_int((int)b.len, 300000, "all of it");

    ty_buf_reset(&b);
    is_int(tyd_decode_body("gzip", &b, 1024), 0, "an empty body: nothing to decode");
    ty_buf_release(&b);
    free(zeros);
}

struct pairs {
    char text[512];
};

static void add_pair(void *ctx, const char *key, const char *value)
{
    struct pairs *p = ctx;
    size_t n = strlen(p->text);
    (void)snprintf(p->text + n, sizeof(p->text) - n, "[%s=%s]", key, value ? value : "(none)");
}

static void test_form(void)
{
    struct pairs p = {{0}};
    const char *q = "filter=labels.team%3D%22a+b%22&pageSize=5&&flag&e=";

    is_int(tyd_form_parse(q, strlen(q), add_pair, &p), 0, "a query");
    is_str(p.text, "[filter=labels.team=\"a b\"][pageSize=5][flag=(none)][e=]", "its pairs");

    memset(&p, 0, sizeof(p));
    is_int(tyd_form_parse("a=1&b=%zz&c=3", 13, add_pair, &p), -EINVAL, "a bad escape");
    is_str(p.text, "[a=1]", "nothing after it");
    is_int(tyd_form_parse("a=%0", 4, add_pair, &p), -EINVAL, "an escape cut short");
    is_int(tyd_form_parse("a=%00", 5, add_pair, &p), -EINVAL, "an escape of NUL");
    memset(&p, 0, sizeof(p));
    is_int(tyd_form_parse("a=1&b=2", 3, add_pair, &p), 0, "only @len bytes");
    is_str(p.text, "[a=1]", "read");

    ok(tyd_content_type_form("application/x-www-form-urlencoded"), "the form type");
    ok(tyd_content_type_form(" Application/X-WWW-Form-Urlencoded; charset=utf-8"), "any case");
    ok(!tyd_content_type_form("application/x-www-form-urlencodedx"), "no longer name");
    ok(!tyd_content_type_form("application/json") && !tyd_content_type_form(NULL), "others");
}

int main(void)
{
    test_override();
    test_gzip();
    test_form();
    return done_testing();
}
