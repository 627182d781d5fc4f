/* SPDX-License-Identifier: Apache-2.0
 * timeutil.c: clocks and time formats. */
#include "timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>

static int64_t clock_usec(clockid_t id)
{
    struct timespec ts;
    (void)clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ty_now_usec(void)
{
    return clock_usec(CLOCK_REALTIME);
}

int64_t ty_mono_usec(void)
{
    return clock_usec(CLOCK_MONOTONIC);
}

char *ty_rfc3339(int64_t usec, int digits, char *buf, size_t n)
{
    time_t secs = (time_t)(usec / 1000000);
    long frac = (long)(usec % 1000000);
    struct tm tm;
    size_t l;

    if (frac < 0) {
        frac += 1000000;
        secs--;
    }
    (void)gmtime_r(&secs, &tm);
    l = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    if (digits == 3)
        (void)snprintf(buf + l, n - l, ".%03ldZ", frac / 1000);
    else if (digits == 6)
        (void)snprintf(buf + l, n - l, ".%06ldZ", frac);
    else
        (void)snprintf(buf + l, n - l, "Z");
    return buf;
}

int ty_duration_parse(const char *s, int64_t *ret_usec, struct ty_error *err)
{
    const char *p = s;
    int64_t secs = 0, frac_usec = 0;
    int fd = 0;

    if (!isdigit((unsigned char)*p))
        goto bad;
    while (isdigit((unsigned char)*p)) {
        if (secs > (INT64_MAX / 1000000 - 9) / 10)
            goto bad;
        secs = secs * 10 + (*p++ - '0');
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            goto bad;
        while (isdigit((unsigned char)*p)) {
            if (++fd > 9)
                goto bad;
            if (fd <= 6)
                frac_usec = frac_usec * 10 + (*p - '0');
            p++;
        }
        for (int i = fd; i < 6; i++)
            frac_usec *= 10;
    }
    if (p[0] != 's' || p[1] != '\0')
        goto bad;
    *ret_usec = secs * 1000000 + frac_usec;
    return 0;
bad:
    return ty_error_set(err,
                        EINVAL,
                        "'%s' is not a duration: expected seconds with an 's' suffix, "
                        "such as '7200s' or '1.5s'",
                        s);
}
