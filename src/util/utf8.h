/* SPDX-License-Identifier: Apache-2.0
 * utf8.h: strict UTF-8 (RFC 3629): decoding one character, and making a message valid UTF-8
 * before it goes into JSON (Jansson refuses a string that is not, and a message may quote
 * untrusted bytes or be cut short inside a character). */
#ifndef TY_UTF8_H
#define TY_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length (1-4) of the UTF-8 character at @s, @n > 0 bytes being readable there, with its
 * code point in *@cp; 0 when the bytes there are not one (a stray continuation byte, an
 * overlong form, a surrogate, a value over U+10FFFF, or a character cut short by @n). */
size_t ty_utf8_char(const unsigned char *s, size_t n, uint32_t *cp);

/* A NUL-terminated copy of the @n bytes at @p that is valid UTF-8: each NUL byte and each byte
 * that does not start a strict UTF-8 character becomes U+FFFD (as the logs API shows a log
 * line). Caller frees. */
char *ty_utf8_dup_replacing(const char *p, size_t n);

/* Replace, in the NUL-terminated @s, every byte that is not part of a strict UTF-8 character
 * with '?', so that @s is valid UTF-8 of the same length. Returns how many bytes it replaced. */
size_t ty_utf8_scrub(char *s);

/* Replace, in the NUL-terminated @s, every control character (below 0x20, and DEL) with '?',
 * so that a message quoting a user's bytes cannot drive a terminal. Returns how many. */
size_t ty_ctrl_scrub(char *s);

#endif
