/* SPDX-License-Identifier: Apache-2.0
 * tap.h: a tiny TAP producer for the unit tests (header-only). Each check prints
 * "ok N - name" or "not ok N - name" plus a diagnostic with both sides; done_testing()
 * prints the plan (unless plan() gave it first) and returns the exit status (non-zero if
 * anything failed, or if the count differs from plan()'s).
 *
 * A test never returns early in silence: a check that cannot run is skip()ped with its
 * reason, a program that cannot run at all says skip_all(), and a set-up that fails so
 * that nothing after it means anything says BAIL_OUT(). */
#ifndef TY_TAP_H
#define TY_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed, tap_planned = -1;

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

/* Announce that @n checks follow (optional; done_testing() then checks the count). */
static inline void plan(int n)
{
    tap_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

/* Report the next @n checks as skipped, for @reason (printf format). */
static inline void skip(int n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void skip(int n, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    for (int i = 0; i < n; i++)
        printf("ok %d # SKIP %s\n", ++tap_n, why);
    fflush(stdout);
}

/* The whole program cannot run here (no engine, say): say why, and exit with success. Only
 * before the first check. */
static inline void skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void skip_all(const char *fmt, ...)
{
    va_list ap;

    printf("1..0 # SKIP ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(0);
}

/* Stop the run: what follows cannot mean anything (a set-up failed). Exits non-zero. */
static inline void BAIL_OUT(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void BAIL_OUT(const char *fmt, ...)
{
    va_list ap;

    printf("Bail out! ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(255);
}

static inline int done_testing(void)
{
    if (tap_planned < 0) {
        printf("1..%d\n", tap_n);
    } else if (tap_planned != tap_n) {
        printf("# planned %d checks but ran %d\n", tap_planned, tap_n);
        return 1;
    }
    return tap_failed ? 1 : 0;
}

#endif
