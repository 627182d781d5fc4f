/* SPDX-License-Identifier: Apache-2.0
 * labelchars.h: the characters of a label key or value, as gcloud and Google's APIs take them
 * ("lowercase characters, and numbers ... International characters are allowed"): letters that
 * are lowercase or have no case (most scripts' letters: Chinese, Japanese, Arabic...), digits,
 * '_' and '-'; a key starts with such a letter. Lengths count characters, not bytes. */
#ifndef TY_LABELCHARS_H
#define TY_LABELCHARS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Is the code point @cp a letter a label may hold (lowercase or caseless: 'a', 'é', 'ß', '日';
 * not 'A' or 'É')? */
bool ty_label_letter(uint32_t cp);

/* Is @cp a digit a label may hold ('0'-'9', and other scripts' digits as Python's isdigit)? */
bool ty_label_digit(uint32_t cp);

/* Is the NUL-terminated @s a label key (@key: non-empty, starting with a label letter) or value
 * (possibly empty) of at most @max_chars characters, each a label letter, a label digit, '_'
 * or '-', in strict UTF-8? */
bool ty_label_text_ok(const char *s, bool key, size_t max_chars);

#endif
