/* SPDX-License-Identifier: Apache-2.0
 * test-utf8.c: strict UTF-8 decoding and scrubbing (src/util/utf8.h), and the messages of
 * struct ty_error, which are scrubbed so that they can always go into JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tap.h"
#include "utf8.h"

static void test_char(void)
{
    static const struct {
        const char *s;
        size_t len;
        uint32_t cp;
        const char *what;
    } cases[] = {
        {"A", 1, 'A', "ASCII"},
        {"\xc3\xa9", 2, 0xe9, "two bytes (e acute)"},
        {"\xe2\x82\xac", 3, 0x20ac, "three bytes (euro)"},
        {"\xf0\x9f\x98\x80", 4, 0x1f600, "four bytes (emoji)"},
        {"\xf4\x8f\xbf\xbf", 4, 0x10ffff, "the last code point"},
        {"\x80", 0, 0, "a stray continuation byte"},
        {"\xc0\xaf", 0, 0, "an overlong '/'"},
        {"\xe0\x80\xaf", 0, 0, "an overlong three-byte form"},
        {"\xed\xa0\x80", 0, 0, "a surrogate"},
        {"\xf4\x90\x80\x80", 0, 0, "over U+10FFFF"},
        {"\xff", 0, 0, "0xff"},
        {"\xc3(", 0, 0, "a lead byte without its continuation"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t cp = 0;
        size_t n = strlen(cases[i].s);
        is_int(ty_utf8_char((const unsigned char *)cases[i].s, n, &cp),
               cases[i].len,
               "char: %s",
               cases[i].what);
        if (cases[i].len)
            is_int(cp, cases[i].cp, "char: %s: its code point", cases[i].what);
    }
    /* a character cut short by the bytes available */
    is_int(ty_utf8_char((const unsigned char *)"\xe2\x82\xac", 2, &(uint32_t){0}),
           0,
           "char: three bytes with two readable");
}

static void test_scrub(void)
{
    char s[64];

    snprintf(s, sizeof(s), "%s", "plain \xc3\xa9t\xc3\xa9 \xe2\x82\xac");
    is_int(ty_utf8_scrub(s), 0, "scrub: valid UTF-8 untouched");
    is_str(s, "plain \xc3\xa9t\xc3\xa9 \xe2\x82\xac", "scrub: the same text");
    snprintf(s,
             sizeof(s),
             "%s",
             "a\xff"
             "b\xc0\xaf"
             "c\x80");
    is_int(ty_utf8_scrub(s), 4, "scrub: four bad bytes");
    is_str(s,
           "a?b?"
           "?c?",
           "scrub: each bad byte one '?'");
    snprintf(s, sizeof(s), "%s", "cut \xc3");
    is_int(ty_utf8_scrub(s), 1, "scrub: a character cut at the end");
    is_str(s, "cut ?", "scrub: its lead byte replaced");
    snprintf(s, sizeof(s), "%s", "");
    is_int(ty_utf8_scrub(s), 0, "scrub: empty");
    snprintf(s, sizeof(s), "%s", "a\x1b[2J\tb\x7f \xc3\xa9");
    is_int(ty_ctrl_scrub(s), 3, "control scrub: ESC, tab and DEL");
    is_str(s, "a?[2J?b? \xc3\xa9", "control scrub: each one '?', UTF-8 untouched");
}

static void test_dup_replacing(void)
{
    char *d;

    d = ty_utf8_dup_replacing("nul\0in\0middle", 13);
    is_str(d, "nul\xef\xbf\xbdin\xef\xbf\xbdmiddle", "dup: each NUL is U+FFFD, the rest kept");
    free(d);
    d = ty_utf8_dup_replacing("a\xff\xc3\xa9\xc3(\xed\xa0\x80z", 10);
    is_str(d,
           "a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz",
           "dup: each byte that is no character is U+FFFD (a surrogate's three)");
    free(d);
    d = ty_utf8_dup_replacing("plain \x1b[0m\r", 11);
    is_str(d, "plain \x1b[0m\r", "dup: ASCII (controls too) as it is");
    free(d);
}

static void test_error_messages(void)
{
    struct ty_error err = {0};
    char quoted[3000];
    json_t *j;

    ty_error_set(&err, EINVAL, "unknown name '%s'", "x\xff\xfe");
    is_str(err.msg,
           "unknown name 'x?"
           "?'",
           "error: bytes that are not UTF-8 quoted become '?'");
    /* a message cut at the buffer's end inside a two-byte character */
    memset(quoted, 0, sizeof(quoted));
    for (size_t i = 0; i + 2 < sizeof(quoted); i += 2)
        memcpy(quoted + i, "\xc3\xa9", 2);
    ty_error_set(&err, EINVAL, "x%s", quoted);
    j = json_string(err.msg);
    ok(j != NULL, "error: a long message cut inside a character is still valid UTF-8");
    json_decref(j);
    ty_error_set(&err, EINVAL, "tail");
    ty_error_prefix(&err, -EINVAL, "%s", quoted);
    j = json_string(err.msg);
    ok(j != NULL, "error: a prefix cut inside a character is still valid UTF-8");
    json_decref(j);
}

int main(void)
{
    test_char();
    test_scrub();
    test_dup_replacing();
    test_error_messages();
    return done_testing();
}
