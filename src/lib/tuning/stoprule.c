/* SPDX-License-Identifier: Apache-2.0
 * stoprule.c: the median stopping rule over the trials' intermediate reports (stoprule.h). */
#include "stoprule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "macro.h"

struct point {
    int64_t step;
    double value;
};

enum curve_state { CURVE_RUNNING, CURVE_REFERENCE, CURVE_DROPPED };

struct curve {
    char *trial_id;
    struct point *p; /* increasing step */
    size_t n, cap;
    enum curve_state state;
};

struct ty_stop_rule {
    bool maximize;
    struct curve *c;
    size_t n, cap;
    size_t n_reference;
};

struct ty_stop_rule *ty_stop_rule_new(bool maximize)
{
    struct ty_stop_rule *r = xcalloc(1, sizeof(*r));
    r->maximize = maximize;
    return r;
}

void ty_stop_rule_free(struct ty_stop_rule *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->c[i].trial_id);
        free(r->c[i].p);
    }
    free(r->c);
    free(r);
}

static struct curve *find(const struct ty_stop_rule *r, const char *trial_id)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->c[i].trial_id, trial_id) == 0)
            return &r->c[i];
    return NULL;
}

static struct curve *find_or_add(struct ty_stop_rule *r, const char *trial_id)
{
    struct curve *c = find(r, trial_id);
    if (c)
        return c;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->c = xreallocarray(r->c, r->cap, sizeof(*r->c));
    }
    c = &r->c[r->n++];
    *c = (struct curve){.trial_id = xstrdup(trial_id), .state = CURVE_RUNNING};
    return c;
}

bool ty_stop_rule_report(struct ty_stop_rule *r, const char *trial_id, int64_t step, double value)
{
    struct curve *c;

    if (!isfinite(value) || step < 0)
        return false;
    c = find_or_add(r, trial_id);
    if (c->state != CURVE_RUNNING || (c->n > 0 && step <= c->p[c->n - 1].step))
        return false;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->p = xreallocarray(c->p, c->cap, sizeof(*c->p));
    }
    c->p[c->n++] = (struct point){.step = step, .value = value};
    return true;
}

void ty_stop_rule_restart(struct ty_stop_rule *r, const char *trial_id)
{
    struct curve *c = find(r, trial_id);

    if (c && c->state == CURVE_RUNNING)
        c->n = 0;
}

void ty_stop_rule_end(struct ty_stop_rule *r, const char *trial_id, bool reference)
{
    struct curve *c = find_or_add(r, trial_id);

    if (c->state != CURVE_RUNNING)
        return;
    c->state = reference ? CURVE_REFERENCE : CURVE_DROPPED;
    if (reference) {
        r->n_reference++;
    } else {
        free(c->p);
        c->p = NULL;
        c->n = c->cap = 0;
    }
}

bool ty_stop_rule_dropped(const struct ty_stop_rule *r, const char *trial_id)
{
    const struct curve *c = find(r, trial_id);
    return c && c->state == CURVE_DROPPED;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

bool ty_stop_rule_check(const struct ty_stop_rule *r,
                        const char *trial_id,
                        struct ty_stop_decision *d)
{
    const struct curve *c = find(r, trial_id);
    _cleanup_free_ double *avg = NULL;
    size_t k = 0;
    int64_t s;
    double best, median;
    bool worse;

    if (!c || c->state != CURVE_RUNNING || c->n == 0 || r->n_reference < TY_STOP_MIN_REFERENCE)
        return false;
    s = c->p[c->n - 1].step;
    best = c->p[0].value;
    for (size_t i = 1; i < c->n; i++)
        if (r->maximize ? c->p[i].value > best : c->p[i].value < best)
            best = c->p[i].value;

    avg = xcalloc(r->n_reference, sizeof(*avg));
    for (size_t i = 0; i < r->n; i++) {
        const struct curve *ref = &r->c[i];
        double sum = 0;
        size_t m = 0;
        if (ref->state != CURVE_REFERENCE)
            continue;
        for (; m < ref->n && ref->p[m].step <= s; m++)
            sum += ref->p[m].value;
        if (m > 0)
            avg[k++] = sum / (double)m;
    }
    if (k < TY_STOP_MIN_REFERENCE)
        return false;
    qsort(avg, k, sizeof(*avg), cmp_double);
    median = k % 2 ? avg[k / 2] : (avg[k / 2 - 1] + avg[k / 2]) / 2;
    worse = r->maximize ? best < median : best > median;
    if (worse && d)
        *d = (struct ty_stop_decision){.step = s, .best = best, .median = median, .n_reference = k};
    return worse;
}

size_t ty_stop_rule_n_reference(const struct ty_stop_rule *r)
{
    return r->n_reference;
}
