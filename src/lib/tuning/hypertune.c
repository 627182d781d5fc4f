/* SPDX-License-Identifier: Apache-2.0
 * hypertune.c: parsing a cloudml-hypertune metric file (hypertune.h). The text is cut into
 * lines by hand and each line goes through ty_json_parse (bounded, duplicate keys refused);
 * every rule that rejects a line only counts it. */
#include "hypertune.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "parse.h"

/* A JSON string's text as a C string, or NULL when it holds a NUL byte. */
static const char *plain_string(const json_t *j)
{
    const char *s = json_string_value(j);
    return s && strlen(s) == json_string_length(j) ? s : NULL;
}

/* A finite number from a JSON number or a string of one. */
static int get_double(const json_t *j, double *ret)
{
    if (json_is_number(j)) {
        double v = json_number_value(j);
        if (!isfinite(v))
            return -EINVAL;
        *ret = v;
        return 0;
    }
    if (json_is_string(j)) {
        const char *s = plain_string(j);
        return s ? ty_parse_double(s, ret) : -EINVAL;
    }
    return -EINVAL;
}

/* An integer from a JSON integer or a string of one. */
static int get_int64(const json_t *j, int64_t *ret)
{
    if (json_is_integer(j)) {
        *ret = (int64_t)json_integer_value(j);
        return 0;
    }
    if (json_is_string(j)) {
        const char *s = plain_string(j);
        return s ? ty_parse_int64(s, INT64_MIN, INT64_MAX, ret) : -EINVAL;
    }
    return -EINVAL;
}

static bool is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Is @j a string of a number that is not finite ("nan", "inf", "-inf": what the library
 * writes of a float('nan') a diverged training reports)? Its value into *@ret. */
static bool nonfinite_text(const json_t *j, double *ret)
{
    const char *s = json_is_string(j) ? plain_string(j) : NULL;
    char *end = NULL;
    double v;

    if (!s || !*s || strpbrk(s, "xX"))
        return false;
    v = strtod(s, &end);
    if (*end != '\0' || isfinite(v))
        return false;
    *ret = v;
    return true;
}

enum line_kind { NOT_A_REPORT, REPORT, REPORT_NONFINITE };

/* One line (without its '\n'): a report of @tag (*m filled), one whose value is a number
 * that is not finite (m->value is it), or no report. */
static enum line_kind
parse_line(const char *line, size_t len, const char *tag, struct ty_hp_measurement *m)
{
    _cleanup_json_ json_t *doc = NULL;
    enum line_kind kind = REPORT;
    const json_t *v;

    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (is_blank(line, len) || ty_json_parse(line, len, &doc, NULL) < 0 || !json_is_object(doc))
        return NOT_A_REPORT;
    *m = (struct ty_hp_measurement){0};
    v = json_object_get(doc, tag);
    if (nonfinite_text(v, &m->value))
        kind = REPORT_NONFINITE;
    else if (get_double(v, &m->value) < 0)
        return NOT_A_REPORT;
    v = json_object_get(doc, "global_step");
    if (v && !json_is_null(v) && (get_int64(v, &m->step) < 0 || m->step < 0))
        return NOT_A_REPORT;
    v = json_object_get(doc, "timestamp");
    if (v && !json_is_null(v) && get_double(v, &m->timestamp) < 0)
        return NOT_A_REPORT;
    return kind;
}

int ty_hypertune_parse(const char *text,
                       size_t len,
                       const char *tag,
                       bool final,
                       struct ty_hp_measurement **ret,
                       size_t *n,
                       size_t *skipped,
                       struct ty_hp_measurement *last_nonfinite,
                       struct ty_error *err)
{
    _cleanup_free_ struct ty_hp_measurement *out = NULL;
    struct ty_hp_measurement nonfinite = {0};
    size_t count = 0, cap = 0, bad = 0, pos = 0;

    *ret = NULL;
    *n = 0;
    if (skipped)
        *skipped = 0;
    if (last_nonfinite)
        *last_nonfinite = nonfinite;
    if (len > TY_HYPERTUNE_MAX_BYTES)
        return ty_error_set(err,
                            E2BIG,
                            "metric file of %zu bytes is over the limit of %u",
                            len,
                            TY_HYPERTUNE_MAX_BYTES);
    if (!tag || !*tag)
        tag = TY_HYPERTUNE_DEFAULT_TAG;

    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t linelen = nl ? (size_t)(nl - line) : len - pos;
        struct ty_hp_measurement m;
        enum line_kind kind;

        pos += linelen + (nl ? 1 : 0);
        if (!nl && !final) {
            bad++; /* still being written */
            break;
        }
        kind = parse_line(line, linelen, tag, &m);
        if (kind != REPORT) {
            bad++;
            if (kind == REPORT_NONFINITE)
                nonfinite = m;
            continue;
        }
        nonfinite = (struct ty_hp_measurement){0};
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            out = xreallocarray(out, cap, sizeof(*out));
        }
        out[count++] = m;
    }

    if (skipped)
        *skipped = bad;
    if (last_nonfinite)
        *last_nonfinite = nonfinite;
    *n = count;
    *ret = count ? TAKE_PTR(out) : NULL;
    return 0;
}

bool ty_hypertune_final(const struct ty_hp_measurement *m, size_t n, struct ty_hp_measurement *out)
{
    if (!m || n == 0)
        return false;
    if (out)
        *out = m[n - 1];
    return true;
}
