/* SPDX-License-Identifier: Apache-2.0
 * test-labelchars.c: the characters of a label (labelchars.c) as gcloud takes them: lowercase
 * and caseless letters of any script, other scripts' digits, '_' and '-'; a key starting with
 * a letter; lengths in characters; strict UTF-8. */
#include <string.h>

#include "labelchars.h"
#include "tap.h"

int main(void)
{
    char s[512];

    ok(ty_label_letter('a') && ty_label_letter('z') && !ty_label_letter('A'), "ASCII letters");
    ok(ty_label_letter(0xE9) && !ty_label_letter(0xC9), "e acute is one, E acute is not");
    ok(ty_label_letter(0xDF), "sharp s (lowercase, no uppercase form)");
    ok(ty_label_letter(0x65E5) && ty_label_letter(0x30C1), "caseless letters: kanji, katakana");
    ok(ty_label_letter(0x1C5), "a titlecase letter (isupper is false for it, as gcloud reads it)");
    ok(!ty_label_letter('0') && !ty_label_letter('_') && !ty_label_letter(0xB7),
       "digits, '_' and punctuation are not letters");
    ok(ty_label_digit('7') && ty_label_digit(0x663) && ty_label_digit(0xB2),
       "digits: ASCII, Arabic-Indic, superscript two");
    ok(!ty_label_digit(0x2155) && !ty_label_digit('x'), "a vulgar fraction is not a digit");
    ok(!ty_label_letter(0x110000) && !ty_label_digit(0xFFFFFFFF), "past Unicode: neither");

    ok(ty_label_text_ok("team-1_a", true, 63), "an ASCII key");
    ok(ty_label_text_ok("\xe6\x97\xa5\xe6\x9c\xac", true, 63), "a key in kanji");
    ok(ty_label_text_ok("\xc3\xa9quipe", true, 63), "a key starting with e acute");
    ok(!ty_label_text_ok("\xc3\x89quipe", true, 63), "nor with E acute");
    ok(!ty_label_text_ok("1team", true, 63) && ty_label_text_ok("1team", false, 63),
       "a digit may start a value, not a key");
    ok(!ty_label_text_ok("-a", true, 63) && ty_label_text_ok("-a", false, 63), "nor '-'");
    ok(!ty_label_text_ok("", true, 63) && ty_label_text_ok("", false, 63), "an empty value only");
    ok(!ty_label_text_ok("a b", false, 63) && !ty_label_text_ok("a.b", false, 63),
       "no space or dot");
    ok(!ty_label_text_ok("a\xff", false, 63) && !ty_label_text_ok("a\xc3", false, 63) &&
           !ty_label_text_ok("\xc0\xa1", false, 63),
       "strict UTF-8: a stray byte, a cut character, an overlong form");
    for (int i = 0; i < 63; i++)
        memcpy(s + 3 * i, "\xe6\x97\xa5", 3);
    s[189] = '\0';
    ok(ty_label_text_ok(s, true, 63), "63 characters of 3 bytes each (189 bytes)");
    s[189] = 'a';
    s[190] = '\0';
    ok(!ty_label_text_ok(s, true, 63), "64 characters are one too many");
    return done_testing();
}
