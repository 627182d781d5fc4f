/* SPDX-License-Identifier: Apache-2.0
 * timeutil.h: clocks, RFC 3339 timestamps and google.protobuf.Duration strings. */
#ifndef TY_TIMEUTIL_H
#define TY_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Microseconds since the epoch (CLOCK_REALTIME) / since boot (CLOCK_MONOTONIC). */
int64_t ty_now_usec(void);
int64_t ty_mono_usec(void);

/* Format @usec (epoch microseconds) as RFC 3339 UTC with @digits fractional digits
 * (0, 3 or 6), e.g. "2026-11-30T09:00:00.123456Z". Returns @buf. @n >= 32. */
char *ty_rfc3339(int64_t usec, int digits, char *buf, size_t n);

/* The longest google.protobuf.Duration: 315,576,000,000 seconds (10,000 years). */
#define TY_DURATION_MAX_SEC 315576000000LL

/* Parse a Duration string: decimal seconds with up to 9 fractional digits and a trailing
 * 's' ("7200s", "1.5s"), at most TY_DURATION_MAX_SEC (so that a deadline computed from it
 * cannot overflow). Returns 0 and *ret_usec; -EINVAL for another form, -ERANGE for a longer
 * one, -EDOM for one with a non-zero digit past the microseconds ("1.0000001s": kept, it
 * would change without a word). */
int ty_duration_parse(const char *s, int64_t *ret_usec, struct ty_error *err);

/* Parse an RFC 3339 time: "2026-11-30T09:00:00Z", with up to 9 fractional digits (kept to
 * the microsecond, the rest truncated), a numeric offset ("+02:00") or Z, 't' and 'z' in
 * either case; or a bare date "2026-11-30" (midnight UTC). Years 0000-9999, no leap second.
 * Returns 0 and *ret_usec (epoch microseconds), or -EINVAL (@ret_usec untouched; -EDOM for a
 * date and time without a zone), with @err saying what is wrong. */
int ty_rfc3339_parse(const char *s, int64_t *ret_usec, struct ty_error *err);

/* The time an ISO 8601 duration away from @now_usec, as gcloud's filters read one
 * ("-P1D": a day before, "P1W", "-PT2H30M", "-P1Y2M3DT4H5M6.5S"): [-]P, then any of nY nM nW
 * nD, then T and any of nH nM nS (whole numbers of at most 9 digits; the seconds may have up
 * to 6 fractional digits), at least one of them. Years and months move the calendar date (in
 * UTC; a day past the month's end is its last day), the rest are exact. Returns 0 and
 * *ret_usec; -EINVAL for another form, -ERANGE for a time outside years 0000-9999. */
int ty_iso8601_offset(const char *s, int64_t now_usec, int64_t *ret_usec, struct ty_error *err);

#endif
