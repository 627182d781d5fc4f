/* SPDX-License-Identifier: Apache-2.0
 * fuzz-ere.c: libFuzzer target for the regular expressions of ere.h, which a list filter's
 * '~' takes from any API client. The input is a pattern, a newline, then a text. Besides
 * memory errors and time (a compile or search that is not linear shows as a libFuzzer
 * timeout) it checks: a refusal says why with -EINVAL or -E2BIG and returns nothing; a search
 * answers the same without its shortcuts (TY_ERE_NO_SHORTCUTS); "(P)", "P()" and "P|P" match
 * exactly where a valid P does; and, for short ASCII patterns that cannot
 * make glibc slow, that glibc's regcomp accepts the same patterns and its regexec finds the same
 * matches.
 *
 * Build: as fuzz-list-filter.c says (CC=clang meson setup /tmp/fz -Dfuzz=true ...).
 * Run:   /tmp/fz/fuzz/fuzz-ere -max_total_time=60 -dict=fuzz/ere.dict NEW_DIR fuzz/corpus/ere */
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ere.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATTERN 512

static void check(int cond)
{
    if (!cond)
        abort();
}

/* Does @pat, compiled, match @text? -1 when it is not valid, -2 when over a limit. The
 * answer is checked to be the same without the search's shortcuts. */
static int search(const char *pat, const char *text, size_t n)
{
    struct ty_ere *re = NULL, *plain = NULL;
    char msg[160];
    int rc = ty_ere_compile(pat, 0, &re, msg, sizeof(msg));

    if (rc < 0) {
        check((rc == -EINVAL || rc == -E2BIG) && re == NULL && msg[0]);
        return rc == -EINVAL ? -1 : -2;
    }
    check(ty_ere_compile(pat, TY_ERE_NO_SHORTCUTS, &plain, msg, sizeof(msg)) == 0);
    rc = ty_ere_search(re, text, n);
    check(ty_ere_search(plain, text, n) == rc);
    ty_ere_free(re);
    ty_ere_free(plain);
    return rc;
}

/* Short, printable ASCII, at most 3 repetition operators, no counts over 9 and no anchors
 * with them (glibc's regcomp takes seconds on "()+{800}" and "(\\<|$)+{9}"), no
 * back-references (refused here on purpose), no "\d" (a digit here, a 'd' for glibc) and no escape
 * inside an interval (glibc reads "{\,}" as "{,}" and "d{\0}" as nothing): a pattern glibc compiles
 * quickly and means the same by. */
static bool glibc_comparable(const char *pat, const char *text, size_t n)
{
    int ops = 0, anchors = 0;

    if (strlen(pat) > 10 || strlen(text) != n)
        return false;
    for (const char *p = pat; *p; p++) {
        if (*p < 0x20 || *p > 0x7e)
            return false;
        ops += strchr("*+?{", *p) != NULL;
        anchors += *p == '^' || *p == '$' || (*p == '\\' && p[1] && strchr("bB<>`'", p[1]));
        if (p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9')
            return false;
        if (*p == '\\' && p[1] && strchr("0123456789dD", p[1]))
            return false;
        if (*p == '{' && memchr(p, '\\', strcspn(p, "}")))
            return false;
    }
    for (size_t i = 0; i < n; i++)
        if (text[i] < 0x20 || text[i] > 0x7e)
            return false;
    return ops <= 3 && (ops == 0 || anchors == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t plen = nl ? (size_t)(nl - data) : size;
    char pat[MAX_PATTERN + 1], wrapped[2 * MAX_PATTERN + 4];
    size_t n = nl ? size - plen - 1 : 0;
    char *text;
    int m, m2;

    if (plen > MAX_PATTERN || memchr(data, '\0', plen))
        return 0;
    memcpy(pat, data, plen);
    pat[plen] = '\0';
    text = malloc(n + 1); /* NUL-terminated for strlen and regexec */
    check(text != NULL);
    if (n)
        memcpy(text, nl + 1, n);
    text[n] = '\0';
    m = search(pat, text, n);

    if (m >= 0) {                /* limits aside, these mean what the valid P means */
        if (!strchr(pat, ')')) { /* else the new '(' could close a literal ')' of P */
            (void)snprintf(wrapped, sizeof(wrapped), "(%s)", pat);
            m2 = search(wrapped, text, n);
            check(m2 == m || m2 < 0); /* one more level may be one too deep */
        }
        (void)snprintf(wrapped, sizeof(wrapped), "%s()", pat);
        check(search(wrapped, text, n) == m);
        (void)snprintf(wrapped, sizeof(wrapped), "%s|%s", pat, pat);
        m2 = search(wrapped, text, n);
        check(m2 == m || m2 < 0); /* twice the size may be over the limit */
    }

    if (m != -2 && glibc_comparable(pat, text, n)) {
        regex_t g;
        int grc = regcomp(&g, pat, REG_EXTENDED | REG_NOSUB);
        check((grc == 0) == (m >= 0));
        if (grc == 0) {
            check((regexec(&g, text, 0, NULL, 0) == 0) == (m == 1));
            regfree(&g);
        }
    }
    free(text);
    return 0;
}
