/* SPDX-License-Identifier: Apache-2.0
 * tuner-space.c: the search space of a HyperparameterSpec: each parameter to and from the
 * unit interval honouring scaleType (the warps match the shared harness's random_tuner.py),
 * integer rounding, nearest DISCRETE value, CATEGORICAL indices; values to and from the JSON
 * of the value rules; and the study's pseudo-random generator (xoshiro256**). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "numfmt.h"
#include "parse.h"
#include "tuner-internal.h"

/* ---- pseudo-random numbers ------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void ty_rng_seed(struct ty_rng *r, uint64_t seed)
{
    for (size_t i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Next 64 random bits. */
static uint64_t rng_next(struct ty_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ty_rng_unit(struct ty_rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t ty_rng_below(struct ty_rng *r, uint64_t n)
{
    /* reject the top partial block of 2^64 so every residue is equally likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, v;
    do
        v = rng_next(r);
    while (v >= limit);
    return v % n;
}

/* ---- unit interval -------------------------------------------------------------------- */

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

size_t ty_hp_n_choices(const struct ty_hp_param *p)
{
    size_t n = 0;
    if (p->type == TY_HP_DISCRETE)
        return p->n_discrete;
    if (p->type == TY_HP_CATEGORICAL)
        while (p->categories[n])
            n++;
    return n;
}

static bool is_log(const struct ty_hp_param *p)
{
    return p->scale == TY_HP_SCALE_LOG || p->scale == TY_HP_SCALE_REVERSE_LOG;
}

/* The interval [*lo, *hi] that the warp spans for a numeric parameter. */
static void warp_bounds(const struct ty_hp_param *p, double *lo, double *hi)
{
    if (p->type == TY_HP_DISCRETE) {
        *lo = p->discrete[0];
        *hi = p->discrete[p->n_discrete - 1];
    } else if (p->type == TY_HP_INTEGER) {
        *lo = is_log(p) && p->min <= 0.5 ? p->min : p->min - 0.5;
        *hi = p->max + 0.5;
    } else {
        *lo = p->min;
        *hi = p->max;
    }
}

/* [lo, hi] -> [0, 1] under @p's scale; lo < hi. */
static double warp(const struct ty_hp_param *p, double lo, double hi, double v)
{
    v = clamp(v, lo, hi);
    switch (p->scale) {
    case TY_HP_SCALE_LOG:
        return clamp((log(v) - log(lo)) / (log(hi) - log(lo)), 0, 1);
    case TY_HP_SCALE_REVERSE_LOG:
        return clamp(1 - (log(hi + lo - v) - log(lo)) / (log(hi) - log(lo)), 0, 1);
    default:
        return clamp((v - lo) / (hi - lo), 0, 1);
    }
}

/* [0, 1] -> [lo, hi] under @p's scale; lo < hi. */
static double unwarp(const struct ty_hp_param *p, double lo, double hi, double u)
{
    switch (p->scale) {
    case TY_HP_SCALE_LOG:
        return clamp(exp(log(lo) + u * (log(hi) - log(lo))), lo, hi);
    case TY_HP_SCALE_REVERSE_LOG:
        return clamp(hi + lo - exp(log(lo) + (1 - u) * (log(hi) - log(lo))), lo, hi);
    default:
        return clamp(lo + u * (hi - lo), lo, hi);
    }
}

double ty_hp_from_unit(const struct ty_hp_param *p, double u)
{
    double lo, hi;
    size_t n;

    u = isnan(u) ? 0.5 : clamp(u, 0, 1);
    switch (p->type) {
    case TY_HP_CATEGORICAL:
        n = ty_hp_n_choices(p);
        return (double)(u * (double)n >= (double)n ? n - 1 : (size_t)(u * (double)n));
    case TY_HP_DISCRETE: {
        size_t best = 0;
        double best_d = INFINITY;
        for (size_t i = 0; i < p->n_discrete; i++) {
            double d = fabs(ty_hp_to_unit(p, p->discrete[i]) - u);
            if (d < best_d) {
                best_d = d;
                best = i;
            }
        }
        return p->discrete[best];
    }
    case TY_HP_INTEGER:
        warp_bounds(p, &lo, &hi);
        return clamp(round(unwarp(p, lo, hi, u)), p->min, p->max);
    default:
        /* The ends are the bounds themselves: exp(log(0.01)) is 0.010000000000000004. */
        if (u == 0)
            return p->min;
        if (u == 1)
            return p->max;
        return unwarp(p, p->min, p->max, u);
    }
}

double ty_hp_to_unit(const struct ty_hp_param *p, double v)
{
    double lo, hi;
    size_t n;

    switch (p->type) {
    case TY_HP_CATEGORICAL:
        n = ty_hp_n_choices(p);
        return (clamp(floor(v), 0, (double)n - 1) + 0.5) / (double)n;
    case TY_HP_DISCRETE:
        if (p->n_discrete == 1)
            return 0.5;
        warp_bounds(p, &lo, &hi);
        return warp(p, lo, hi, v);
    case TY_HP_INTEGER:
        warp_bounds(p, &lo, &hi);
        return warp(p, lo, hi, clamp(round(v), p->min, p->max));
    default:
        return warp(p, p->min, p->max, v);
    }
}

/* ---- values as JSON ------------------------------------------------------------------- */

json_t *ty_hp_value_to_json(const struct ty_hp_param *p, double v)
{
    switch (p->type) {
    case TY_HP_CATEGORICAL:
        return json_string(
            p->categories[(size_t)clamp(floor(v), 0, (double)ty_hp_n_choices(p) - 1)]);
    case TY_HP_INTEGER:
        return json_integer((json_int_t)v);
    default:
        return json_real(v);
    }
}

int ty_hp_value_from_json(const struct ty_hp_param *p,
                          const json_t *j,
                          double *ret,
                          struct ty_error *err)
{
    double v;
    char tv[TY_DOUBLE_TEXT_MAX], tmin[TY_DOUBLE_TEXT_MAX], tmax[TY_DOUBLE_TEXT_MAX];

    if (p->type == TY_HP_CATEGORICAL) {
        const char *s = json_string_value(j);
        if (!s)
            return ty_error_set(err, EINVAL, "%s: CATEGORICAL value must be a string", p->name);
        for (size_t i = 0; p->categories[i]; i++)
            if (strcmp(p->categories[i], s) == 0) {
                *ret = (double)i;
                return 0;
            }
        return ty_error_set(
            err, EINVAL, "%s: '%s' is not one of the categoricalValues", p->name, s);
    }
    if (!json_is_number(j) || !isfinite(json_number_value(j)))
        return ty_error_set(err, EINVAL, "%s: value must be a finite number", p->name);
    v = json_number_value(j);
    if (p->type == TY_HP_DISCRETE) {
        for (size_t i = 0; i < p->n_discrete; i++)
            if (p->discrete[i] == v) {
                *ret = v;
                return 0;
            }
        return ty_error_set(
            err, EINVAL, "%s: %s is not one of the discreteValues", p->name, ty_fmt_double(v, tv));
    }
    if (v < p->min || v > p->max)
        return ty_error_set(err,
                            EINVAL,
                            "%s: %s is outside [%s, %s]",
                            p->name,
                            ty_fmt_double(v, tv),
                            ty_fmt_double(p->min, tmin),
                            ty_fmt_double(p->max, tmax));
    if (p->type == TY_HP_INTEGER && v != floor(v))
        return ty_error_set(
            err, EINVAL, "%s: INTEGER value %s is not whole", p->name, ty_fmt_double(v, tv));
    *ret = v;
    return 0;
}

int ty_hp_value_from_text(const struct ty_hp_param *p,
                          const json_t *j,
                          double *ret,
                          struct ty_error *err)
{
    _cleanup_json_ json_t *num = NULL;
    const char *s = json_string_value(j);
    double v;

    if (!j)
        return ty_error_set(err, EINVAL, "%s: a value is required", p->name);
    if (p->type == TY_HP_CATEGORICAL || !s)
        return ty_hp_value_from_json(p, j, ret, err);
    if (ty_parse_double(s, &v) < 0)
        return ty_error_set(err, EINVAL, "%s: '%s' is not a number", p->name, s);
    num = json_real(v);
    return ty_hp_value_from_json(p, num, ret, err);
}

json_t *ty_hp_values_to_json(const struct ty_hp_spec *spec, const double *x)
{
    json_t *o = json_object();
    for (size_t i = 0; i < spec->n_params; i++)
        json_object_set_new(o, spec->params[i].name, ty_hp_value_to_json(&spec->params[i], x[i]));
    return o;
}
