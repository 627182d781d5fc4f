/* SPDX-License-Identifier: Apache-2.0
 * tap.h: a tiny TAP producer for the unit tests (header-only). Each check prints
 * "ok N - name" or "not ok N - name" plus a diagnostic with both sides; done_testing()
 * prints the plan and returns the exit status (non-zero if anything failed). */
#ifndef TY_TAP_H
#define TY_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond) {
        tap_failed++;
        printf("#   failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long _g = (long long)(got), _w = (long long)(want);                                   \
        if (!tap_ok(_g == _w, __FILE__, __LINE__, __VA_ARGS__))                                    \
            printf("#   got: %lld\n#  want: %lld\n", _g, _w);                                      \
    } while (0)

#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *_g = (got), *_w = (want);                                                      \
        int _c = (_g && _w) ? strcmp(_g, _w) == 0 : _g == _w;                                      \
        if (!tap_ok(_c, __FILE__, __LINE__, __VA_ARGS__))                                          \
            printf("#   got: '%s'\n#  want: '%s'\n", _g ? _g : "(null)", _w ? _w : "(null)");      \
    } while (0)

/* Passes when @hay contains @needle. */
#define like(hay, needle, ...)                                                                     \
    do {                                                                                           \
        const char *_h = (hay), *_n = (needle);                                                    \
        if (!tap_ok(_h && strstr(_h, _n) != NULL, __FILE__, __LINE__, __VA_ARGS__))                \
            printf("#   got: '%s'\n#  want substring: '%s'\n", _h ? _h : "(null)", _n);            \
    } while (0)

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static inline int done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
