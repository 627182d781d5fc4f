/* SPDX-License-Identifier: Apache-2.0
 * timeutil.c: clocks and time formats. */
#include "timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
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

/* The civil date of a day count since 1970-01-01 (the inverse of days_from_civil below;
 * H. Hinnant's algorithm). Arithmetic only: gmtime_r takes glibc's time-zone lock, which
 * every request thread of the service would contend for. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    int64_t era, yoe, doy, mp;
    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    yoe = z - era * 146097;
    yoe = (yoe - yoe / 1460 + yoe / 36524 - yoe / 146096) / 365;
    doy = (z - era * 146097) - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

char *ty_rfc3339(int64_t usec, int digits, char *buf, size_t n)
{
    int64_t secs = usec / 1000000, days, y;
    long frac = (long)(usec % 1000000);
    int sod, m, d;

    if (frac < 0) {
        frac += 1000000;
        secs--;
    }
    days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    sod = (int)(secs - days * 86400);
    civil_from_days(days, &y, &m, &d);
    if (digits == 3)
        (void)snprintf(buf,
                       n,
                       "%04lld-%02d-%02dT%02d:%02d:%02d.%03ldZ",
                       (long long)y,
                       m,
                       d,
                       sod / 3600,
                       sod / 60 % 60,
                       sod % 60,
                       frac / 1000);
    else if (digits == 6)
        (void)snprintf(buf,
                       n,
                       "%04lld-%02d-%02dT%02d:%02d:%02d.%06ldZ",
                       (long long)y,
                       m,
                       d,
                       sod / 3600,
                       sod / 60 % 60,
                       sod % 60,
                       frac);
    else
        (void)snprintf(buf,
                       n,
                       "%04lld-%02d-%02dT%02d:%02d:%02dZ",
                       (long long)y,
                       m,
                       d,
                       sod / 3600,
                       sod / 60 % 60,
                       sod % 60);
    return buf;
}

int ty_duration_parse(const char *s, int64_t *ret_usec, struct ty_error *err)
{
    const char *p = s;
    int64_t secs = 0, frac_usec = 0;
    int fd = 0;
    bool finer = false; /* a non-zero digit past the microseconds */

    if (!isdigit((unsigned char)*p))
        goto bad;
    while (isdigit((unsigned char)*p)) {
        if (secs > (INT64_MAX / 1000000 - 9) / 10)
            secs = TY_DURATION_MAX_SEC + 1; /* too long, if well formed: said below */
        else
            secs = secs * 10 + (*p - '0');
        p++;
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
            else
                finer = finer || *p != '0';
            p++;
        }
        for (int i = fd; i < 6; i++)
            frac_usec *= 10;
    }
    if (p[0] != 's' || p[1] != '\0')
        goto bad;
    if (secs > TY_DURATION_MAX_SEC || (secs == TY_DURATION_MAX_SEC && frac_usec > 0))
        return ty_error_set(err,
                            ERANGE,
                            "'%s' is longer than the longest duration, %llds (10,000 years)",
                            s,
                            (long long)TY_DURATION_MAX_SEC);
    if (finer)
        return ty_error_set(
            err, EDOM, "'%s' is finer than a microsecond, the resolution trainyard keeps", s);
    *ret_usec = secs * 1000000 + frac_usec;
    return 0;
bad:
    return ty_error_set(err,
                        EINVAL,
                        "'%s' is not a duration: expected seconds with an 's' suffix, "
                        "such as '7200s' or '1.5s'",
                        s);
}

/* @n decimal digits at @p into *v; 0 when one is not a digit (stops at the NUL). */
static int digits(const char *p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        *v = *v * 10 + (p[i] - '0');
    }
    return 1;
}

/* Days from 1970-01-01 to @y-@m-@d of the proleptic Gregorian calendar (H. Hinnant's
 * days_from_civil), independent of the process's time zone. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int ty_rfc3339_parse(const char *s, int64_t *ret_usec, struct ty_error *err)
{
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int y, mo, d, h = 0, mi = 0, sec = 0, oh = 0, om = 0, sign = 0, nfrac = 0;
    int64_t frac = 0, usec;

    if (!digits(p, 4, &y) || p[4] != '-' || !digits(p + 5, 2, &mo) || p[7] != '-' ||
        !digits(p + 8, 2, &d))
        goto bad;
    p += 10;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
        goto bad;
    if (*p != '\0') {
        if (*p != 'T' && *p != 't')
            goto bad;
        if (!digits(p + 1, 2, &h) || p[3] != ':' || !digits(p + 4, 2, &mi) || p[6] != ':' ||
            !digits(p + 7, 2, &sec))
            goto bad;
        p += 9;
        if (h > 23 || mi > 59 || sec > 59)
            goto bad;
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                if (++nfrac > 9)
                    goto bad;
                if (nfrac <= 6)
                    frac = frac * 10 + (*p - '0');
                p++;
            }
            if (nfrac == 0)
                goto bad;
            for (int i = nfrac; i < 6; i++)
                frac *= 10;
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            sign = *p == '-' ? -1 : 1;
            if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 ||
                om > 59)
                goto bad;
            p += 6;
        } else if (*p == '\0') {
            return ty_error_set(err,
                                EDOM,
                                "'%.64s' has no time zone: add Z (UTC) or an offset such as "
                                "+01:00",
                                s);
        } else {
            goto bad;
        }
        if (*p != '\0')
            goto bad;
    }
    usec = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
    usec -= (int64_t)sign * (oh * 3600 + om * 60);
    *ret_usec = usec * 1000000 + frac;
    return 0;
bad:
    return ty_error_set(err,
                        EINVAL,
                        "'%.64s' is not an RFC 3339 time: expected a time such as "
                        "'2026-11-30T09:00:00Z' or a date such as '2026-11-30'",
                        s);
}

/* One "nX" of an ISO 8601 duration at *@p: its number (at most 9 digits; with @frac, up to 6
 * fractional digits, as microseconds in *@us) and its designator in *@unit. */
static bool iso_part(const char **p, bool frac, int64_t *n, int64_t *us, char *unit)
{
    const char *q = *p;
    int nd = 0;

    *n = 0;
    *us = 0;
    while (*q >= '0' && *q <= '9' && nd < 10) {
        *n = *n * 10 + (*q++ - '0');
        nd++;
    }
    if (nd == 0 || nd > 9)
        return false;
    if (frac && *q == '.') {
        int nf = 0;
        q++;
        while (*q >= '0' && *q <= '9' && nf < 7) {
            *us = *us * 10 + (*q++ - '0');
            nf++;
        }
        if (nf == 0 || nf > 6 || *q != 'S')
            return false;
        while (nf++ < 6)
            *us *= 10;
    }
    *unit = *q;
    if (!*unit)
        return false;
    *p = q + 1;
    return true;
}

int ty_iso8601_offset(const char *s, int64_t now_usec, int64_t *ret_usec, struct ty_error *err)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const int64_t day = 86400000000LL, limit = 10000LL * 366 * day;
    const char *p = s, *order = "YMWD";
    int64_t months = 0, usec = 0, y, days, sod;
    int sign = 1, parts = 0, m, d, last;
    bool in_time = false;

    if (*p == '-') {
        sign = -1;
        p++;
    }
    if (*p++ != 'P')
        goto bad;
    while (*p) {
        int64_t n, us, unit_usec;
        const char *at;
        char unit;
        if (*p == 'T' && !in_time) {
            in_time = true;
            order = "HMS";
            if (!*++p)
                goto bad;
            continue;
        }
        if (!iso_part(&p, in_time, &n, &us, &unit) || !(at = strchr(order, unit)))
            goto bad;
        order = at + 1; /* each designator at most once, in order */
        parts++;
        if (!in_time && (unit == 'Y' || unit == 'M')) {
            months += unit == 'Y' ? n * 12 : n;
            if (months > 12 * 10000)
                goto range;
            continue;
        }
        unit_usec = in_time ? (unit == 'H'   ? 3600
                               : unit == 'M' ? 60
                                             : 1) *
                                  1000000LL
                            : (unit == 'W' ? 7 : 1) * day;
        if (n > limit / unit_usec)
            goto range;
        usec += n * unit_usec + us;
        if (usec > limit)
            goto range;
    }
    if (parts == 0)
        goto bad;
    /* the calendar part: the date of @now_usec moved by whole months, the day clamped */
    days = now_usec >= 0 ? now_usec / day : (now_usec - day + 1) / day;
    sod = now_usec - days * day;
    civil_from_days(days, &y, &m, &d);
    if (months) {
        int64_t mi = y * 12 + (m - 1) + sign * months;
        y = mi >= 0 ? mi / 12 : (mi - 11) / 12;
        m = (int)(mi - y * 12) + 1;
        last = mdays[m - 1] + (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
        d = d > last ? last : d;
    }
    if (y < 0 || y > 9999)
        goto range;
    *ret_usec = days_from_civil(y, m, d) * day + sod + sign * usec;
    if (*ret_usec < days_from_civil(0, 1, 1) * day ||
        *ret_usec >= days_from_civil(10000, 1, 1) * day)
        goto range;
    return 0;
range:
    return ty_error_set(err, ERANGE, "'%.64s' reaches beyond the years 0000-9999", s);
bad:
    return ty_error_set(err,
                        EINVAL,
                        "'%.64s' is not an ISO 8601 duration such as '-P1D', 'P1W' or "
                        "'-PT2H30M'",
                        s);
}
