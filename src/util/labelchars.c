/* SPDX-License-Identifier: Apache-2.0
 * labelchars.c: which characters a label may hold (labelchars.h), by binary search in the
 * ranges that scripts/gen-label-chars.py wrote from Unicode's database. */
#include "labelchars.h"

#include <string.h>

#include "macro.h"
#include "utf8.h"

struct label_range {
    uint32_t lo, hi;
};

#include "labelchars-table.h"

/* Is @cp in one of the @n ascending, disjoint ranges @r? */
static bool in_ranges(const struct label_range *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

bool ty_label_letter(uint32_t cp)
{
    return in_ranges(label_letters, TY_ARRAY_SIZE(label_letters), cp);
}

bool ty_label_digit(uint32_t cp)
{
    return in_ranges(label_digits, TY_ARRAY_SIZE(label_digits), cp);
}

bool ty_label_text_ok(const char *s, bool key, size_t max_chars)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s), chars = 0;

    if (key && left == 0)
        return false;
    while (left > 0) {
        uint32_t cp;
        size_t len = ty_utf8_char(p, left, &cp);

        if (len == 0 || ++chars > max_chars)
            return false;
        if (!(ty_label_letter(cp) ||
              (!(key && chars == 1) && (ty_label_digit(cp) || cp == '_' || cp == '-'))))
            return false;
        p += len;
        left -= len;
    }
    return true;
}
