/* SPDX-License-Identifier: Apache-2.0
 * scheduler-pass.c: one scheduling decision (ty_sched_pass): expiry, gang admission in
 * order, the head's reservation (EASY backfill), per-project limits, tuning trials, GPU
 * devices, and the reason each waiting job keeps. docs/internals/scheduler.md has the rules
 * and why the head is never delayed by a job behind it. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "scheduler-int.h"

/* How many jobs ahead a pass prefetches. */
#define PREFETCH 8

struct pass {
    struct ty_sched *s;
    int64_t now;
    struct ty_resources free;       /* now, never negative; GPUs: free devices not busy */
    int64_t outside[TY_GPU_NTYPES]; /* devices held outside the scheduler only */
    /* the head, once found */
    struct sched_job *head;
    int64_t shadow;                 /* T: when the head's one trial is sure to fit */
    struct ty_resources extra;      /* what is free at T beyond the head's one trial */
    struct ty_resources proj_extra; /* what the head's project may take beyond it */
    struct ty_sched_admission *adm;
    size_t nadm, adm_cap;
};

/* Where @v is counted, at least 0. */
static void clamp0(struct ty_resources *v)
{
    for (int d = 0; d < TY_RES_NDIMS; d++)
        if (v->v[d] != TY_RES_UNLIMITED && v->v[d] < 0)
            v->v[d] = 0;
}

/* The room @p has under its limit (unlimited without one). */
static void proj_room(const struct sched_proj *p, struct ty_resources *room)
{
    if (!p->has_limit) {
        ty_resources_unlimited(room);
        return;
    }
    *room = p->limit;
    ty_resources_sub(room, &p->used);
    clamp0(room);
}

static void pass_free(struct pass *ps)
{
    const struct ty_sched *s = ps->s;

    for (size_t i = 0; i < s->nprojects; i++)
        if (s->projects[i]->has_limit)
            proj_room(s->projects[i], &s->projects[i]->room);

    ps->free = s->capacity;
    ty_resources_sub(&ps->free, &s->used);
    memset(ps->outside, 0, sizeof(ps->outside));
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        ps->free.v[TY_RES_GPU0 + t] = 0;
    for (size_t i = 0; i < s->ndev; i++) {
        int t = s->dev_type[i];
        if (t < 0 || s->dev_holds[i] > 0)
            continue;
        if (s->dev_busy[i])
            ps->outside[t]++;
        else
            ps->free.v[TY_RES_GPU0 + t]++;
    }
    clamp0(&ps->free);
}

/* The most trials (1..max_trials) of @d within @bound, 0 when not even one fits. */
static int trials_within(const struct ty_demand *d, const struct ty_resources *bound, int k)
{
    if (bound->v[TY_RES_JOBS] != TY_RES_UNLIMITED && bound->v[TY_RES_JOBS] < 1)
        return 0;
    for (int dim = TY_RES_JOBS + 1; dim < TY_RES_NDIMS; dim++) {
        int64_t per = d->trial.v[dim], b = bound->v[dim];
        if (per > 0 && b != TY_RES_UNLIMITED && b / per < k)
            k = (int)(b / per);
    }
    return k;
}

/* @a = min(@a, @b), dimension by dimension (unlimited is the largest). */
static void res_min(struct ty_resources *a, const struct ty_resources *b)
{
    for (int d = 0; d < TY_RES_NDIMS; d++)
        if (b->v[d] != TY_RES_UNLIMITED && (a->v[d] == TY_RES_UNLIMITED || b->v[d] < a->v[d]))
            a->v[d] = b->v[d];
}

/* The devices @k trials of @j get: the lowest-numbered free ones of each role's type, trial
 * slot by slot, role by role, replica by replica. NULL (and *@n 0) when it needs none. */
static int *assign_gpus(const struct ty_sched *s, const struct ty_demand *d, int k, size_t *n)
{
    size_t cursor[TY_GPU_NTYPES] = {0}, total = (size_t)ty_demand_trial_gpus(d) * (size_t)k, at = 0;
    int *out;

    *n = 0;
    if (total == 0)
        return NULL;
    out = xreallocarray(NULL, total, sizeof(int));
    for (int slot = 0; slot < k; slot++)
        for (int r = 0; r < TY_ROLE_MAX; r++)
            for (int64_t rep = 0; rep < d->role_count[r]; rep++)
                for (int g = 0; g < d->role_gpus[r]; g++) {
                    int t = d->role_gpu_type[r];
                    size_t *c = &cursor[t];
                    while (*c < s->ndev &&
                           (s->dev_type[*c] != t || s->dev_holds[*c] > 0 || s->dev_busy[*c]))
                        (*c)++;
                    if (*c >= s->ndev || at >= total) {
                        free(out); /* cannot happen: the counts were checked */
                        return NULL;
                    }
                    out[at++] = (int)(*c)++;
                }
    *n = at;
    return out;
}

/* Admit @j with @k trials now. */
static void admit(struct pass *ps, struct sched_job *j, int k)
{
    struct ty_sched *s = ps->s;
    struct ty_sched_admission *a;
    struct ty_resources held;
    size_t ngpus = 0;
    int *gpus = assign_gpus(s, &j->demand, k, &ngpus);
    int64_t waited = ps->now > j->create_usec ? ps->now - j->create_usec : 0;
    double waited_s = (double)waited / 1e6;
    int b = 0;

    ty_demand_total(&j->demand, k, &held);
    if (ps->nadm == ps->adm_cap) {
        ps->adm_cap = ps->adm_cap ? ps->adm_cap * 2 : 8;
        ps->adm = xreallocarray(ps->adm, ps->adm_cap, sizeof(*ps->adm));
    }
    a = &ps->adm[ps->nadm++];
    a->seq = j->seq;
    a->trials = k;
    a->held = held;
    a->ngpus = ngpus;
    a->gpus = NULL;
    if (ngpus) {
        a->gpus = xreallocarray(NULL, ngpus, sizeof(int));
        memcpy(a->gpus, gpus, ngpus * sizeof(int));
    }
    a->waited_usec = waited;
    while (b < TY_SCHED_WAIT_BUCKETS - 1 && waited_s > ty_sched_wait_bounds[b])
        b++;
    s->wait_bucket[b]++;
    s->wait_sum_s += waited_s;
    s->admissions++;
    j->by_pass = true;
    sched_hold(s, j, &held, gpus, ngpus, ps->now);
    ty_resources_sub(&ps->free, &held);
    if (j->proj->has_limit) {
        ty_resources_sub(&j->proj->room, &held);
        clamp0(&j->proj->room);
    }
}

static int cmp_end(const void *a, const void *b)
{
    int64_t x = sched_expected_end(*(struct sched_job *const *)a),
            y = sched_expected_end(*(struct sched_job *const *)b);
    return x < y ? -1 : x > y;
}

/* @head does not fit now: find T, when its one trial @need is sure to fit (the holders end
 * in order of expected end, one past it ends now; devices held outside count as free now,
 * their end being unknown), and what is left over then beyond it. */
static void shadow(struct pass *ps, struct sched_job *head, const struct ty_resources *need)
{
    struct ty_sched *s = ps->s;
    struct ty_resources avail = ps->free;
    struct sched_job **order = NULL;
    int *holds = NULL;
    bool fits;

    ps->head = head;
    ps->shadow = ps->now;
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        avail.v[TY_RES_GPU0 + t] += ps->outside[t];
    fits = ty_resources_short(need, &avail) < 0;
    if (!fits && s->nholders) {
        order = xreallocarray(NULL, s->nholders, sizeof(*order));
        memcpy(order, s->holders, s->nholders * sizeof(*order));
        qsort(order, s->nholders, sizeof(*order), cmp_end);
        holds = xreallocarray(NULL, s->ndev ? s->ndev : 1, sizeof(int));
        memcpy(holds, s->dev_holds, s->ndev * sizeof(int));
    }
    for (size_t i = 0; !fits && i < s->nholders; i++) {
        const struct sched_job *h = order[i];
        int64_t end = sched_add_sat(sched_expected_end(h), s->stop_usec);
        for (int d = 0; d < TY_RES_GPU0; d++)
            if (avail.v[d] != TY_RES_UNLIMITED)
                avail.v[d] += h->held.v[d];
        for (size_t g = 0; g < h->ngpus; g++) {
            int dev = h->gpus[g];
            if (dev >= 0 && (size_t)dev < s->ndev && --holds[dev] == 0 && s->dev_type[dev] >= 0)
                avail.v[TY_RES_GPU0 + s->dev_type[dev]]++;
        }
        ps->shadow = end > ps->now ? end : ps->now;
        fits = ty_resources_short(need, &avail) < 0;
    }
    free(order);
    free(holds);
    if (!fits) /* the holders' records disagree with the capacity: reserve from now */
        ps->shadow = ps->now;
    ps->extra = avail;
    ty_resources_sub(&ps->extra, need);
    clamp0(&ps->extra);
    if (head->proj->has_limit)
        ps->proj_extra = head->proj->room;
    else
        ty_resources_unlimited(&ps->proj_extra);
    ty_resources_sub(&ps->proj_extra, need);
    clamp0(&ps->proj_extra);
}

static void set_reason(struct sched_job *j,
                       enum sched_why why,
                       int dim,
                       int64_t need,
                       int64_t avail,
                       int64_t total,
                       int64_t aux)
{
    j->reason.why = (uint8_t)why;
    j->reason.dim = (uint8_t)dim;
    j->reason.need = need;
    j->reason.avail = avail;
    j->reason.total = total;
    j->reason.aux = aux;
    j->reason.head_seq = 0;
}

/* A job after the head that fits now: admit it if that cannot delay the head. */
static bool backfill(struct pass *ps,
                     struct sched_job *j,
                     const struct ty_resources *need,
                     const struct ty_resources *bound)
{
    int64_t run = j->max_running_usec > 0 ? j->max_running_usec : TY_SCHED_DEFAULT_RUNNING_USEC;
    bool same = j->proj == ps->head->proj;
    struct ty_resources b = *bound, held;
    int k;

    /* A job of the head's project takes its project's room now: only what the head leaves,
     * however short it runs, or the head would wait for its project (and lose its place as
     * the head, its reservation with it). */
    if (same && ty_resources_short(need, &ps->proj_extra) >= 0)
        return false;
    if (same)
        res_min(&b, &ps->proj_extra);
    if (sched_add_sat(sched_running_from(j, ps->now), sched_add_sat(run, ps->s->stop_usec)) <=
        ps->shadow) {
        /* prepared, run and torn down before T */
        k = trials_within(&j->demand, &b, j->demand.max_trials);
        admit(ps, j, k);
    } else if (ty_resources_short(need, &ps->extra) < 0) { /* takes what is left at T */
        res_min(&b, &ps->extra);
        k = trials_within(&j->demand, &b, j->demand.max_trials);
        admit(ps, j, k);
        ty_demand_total(&j->demand, k, &held);
        ty_resources_sub(&ps->extra, &held);
    } else {
        return false;
    }
    if (same) {
        ty_demand_total(&j->demand, k, &held);
        ty_resources_sub(&ps->proj_extra, &held);
    }
    return true;
}

/* Whether @a and @b say the same (field by field: the padding is not compared). */
static bool reason_same(const struct sched_reason *a, const struct sched_reason *b)
{
    return a->why == b->why && a->dim == b->dim && a->need == b->need && a->avail == b->avail &&
           a->total == b->total && a->aux == b->aux && a->head_seq == b->head_seq;
}

/* Decide for queued job @j. True when it was admitted (it left the queue). */
static bool decide(struct pass *ps, struct sched_job *j)
{
    const struct ty_resources *cap = &ps->s->capacity, *need = &j->need1;
    const struct sched_proj *p = j->proj;
    struct ty_resources room;
    int dim;

    if ((dim = j->cap_short) >= 0) {
        set_reason(j, WHY_CAPACITY_NEVER, dim, need->v[dim], 0, cap->v[dim], 0);
        return false;
    }
    if (p->has_limit && (dim = ty_resources_short(need, &p->room)) >= 0) {
        if (ty_resources_short(need, &p->limit) >= 0) {
            dim = ty_resources_short(need, &p->limit);
            set_reason(j, WHY_PROJECT_NEVER, dim, need->v[dim], 0, p->limit.v[dim], 0);
        } else {
            set_reason(
                j, WHY_PROJECT, dim, need->v[dim], p->room.v[dim], p->limit.v[dim], p->used.v[dim]);
        }
        return false;
    }
    if ((dim = ty_resources_short(need, &ps->free)) >= 0) {
        set_reason(j,
                   WHY_RESOURCE,
                   dim,
                   need->v[dim],
                   ps->free.v[dim],
                   cap->v[dim],
                   dim >= TY_RES_GPU0   ? ps->outside[dim - TY_RES_GPU0]
                   : dim == TY_RES_JOBS ? ps->s->used.v[TY_RES_JOBS]
                                        : 0);
        if (!ps->head)
            shadow(ps, j, need);
        return false;
    }
    room = ps->free;
    if (p->has_limit)
        res_min(&room, &p->room);
    if (!ps->head) {
        admit(ps, j, trials_within(&j->demand, &room, j->demand.max_trials));
        return true;
    }
    if (backfill(ps, j, need, &room))
        return true;
    set_reason(j, WHY_BEHIND_HEAD, ps->head->reason.dim, ps->head->reason.need, 0, 0, 0);
    j->reason.head_seq = ps->head->seq;
    return false;
}

int ty_sched_pass(struct ty_sched *s,
                  int64_t now_usec,
                  struct ty_sched_admission **adm,
                  size_t *nadm,
                  int64_t **expired,
                  size_t *nexp)
{
    struct pass ps = {.s = s, .now = now_usec};
    int64_t *exp = NULL;
    size_t w = 0, ne = 0;
    bool changed = false; /* a waiting job's reason moved */
    bool any_never = false;

    pthread_mutex_lock(&s->lock);
    size_t n0 = s->nqueue;
    s->next_deadline = 0;
    pass_free(&ps);
    for (size_t i = 0; i < s->nqueue; i++) {
        struct sched_job *j = s->queue[i];
        if (i + PREFETCH < s->nqueue) { /* the jobs lie anywhere in memory: ask ahead */
            const char *next = (const char *)s->queue[i + PREFETCH];
            __builtin_prefetch(next);
            __builtin_prefetch(next + 64);
            __builtin_prefetch(next + 128);
        }
        struct sched_reason before = j->reason;
        if (j->wait_deadline_usec && j->wait_deadline_usec <= now_usec) {
            exp = xreallocarray(exp, ne + 1, sizeof(*exp));
            exp[ne++] = j->seq;
            s->expirations++;
            sched_job_drop(s, j);
            continue;
        }
        if (decide(&ps, j))
            continue;
        changed = changed || !reason_same(&before, &j->reason);
        any_never = any_never || sched_reason_never(j);
        s->queue[w++] = j;
        if (j->wait_deadline_usec &&
            (s->next_deadline == 0 || j->wait_deadline_usec < s->next_deadline))
            s->next_deadline = j->wait_deadline_usec;
    }
    s->nqueue = w;
    s->any_never = any_never;
    s->deadline_ok = true;
    s->head_seq = ps.head ? ps.head->seq : 0;
    s->head_shadow = ps.head ? ps.shadow : 0;
    if (changed || w != n0) /* or a job left the queue */
        sched_changed(s);
    pthread_mutex_unlock(&s->lock);
    *adm = ps.adm;
    *nadm = ps.nadm;
    *expired = exp;
    *nexp = ne;
    return 0;
}
