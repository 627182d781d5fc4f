/* SPDX-License-Identifier: Apache-2.0
 * scheduler.c: the scheduler's state (scheduler.h): the queue kept in order by binary
 * insertion, the seq index, the holders and their devices, project limits, positions and
 * statistics. The pass itself is in scheduler-pass.c, reasons in scheduler-reason.c;
 * docs/internals/scheduler.md has the design. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "scheduler-int.h"

const double ty_sched_wait_bounds[TY_SCHED_WAIT_BUCKETS] = {
    1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200, 86400, INFINITY};

#define LOCK(s)   pthread_mutex_lock((pthread_mutex_t *)&(s)->lock)
#define UNLOCK(s) pthread_mutex_unlock((pthread_mutex_t *)&(s)->lock)

/* ---- the seq index ---- */

static size_t hash_seq(int64_t seq)
{
    uint64_t x = (uint64_t)seq + UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return (size_t)(x ^ (x >> 31));
}

struct sched_job *sched_index_get(const struct sched_index *ix, int64_t seq)
{
    if (ix->cap == 0)
        return NULL;
    for (size_t i = hash_seq(seq) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        struct sched_job *j = ix->slot[i];
        if (!j)
            return NULL;
        if (j->seq == seq)
            return j;
    }
}

static void index_put_slot(struct sched_index *ix, struct sched_job *j)
{
    size_t i = hash_seq(j->seq) & (ix->cap - 1);
    while (ix->slot[i])
        i = (i + 1) & (ix->cap - 1);
    ix->slot[i] = j;
}

/* Add @j (its seq is not in the index); the table stays at most half full. */
static void index_add(struct sched_index *ix, struct sched_job *j)
{
    if ((ix->n + 1) * 2 > ix->cap) {
        struct sched_job **old = ix->slot;
        size_t oldcap = ix->cap;

        ix->cap = oldcap ? oldcap * 2 : 64;
        ix->slot = xcalloc(ix->cap, sizeof(*ix->slot));
        for (size_t i = 0; i < oldcap; i++)
            if (old[i])
                index_put_slot(ix, old[i]);
        free(old);
    }
    index_put_slot(ix, j);
    ix->n++;
}

/* Remove @seq; the entries after it in its probe run move back (no tombstones). */
static void index_del(struct sched_index *ix, int64_t seq)
{
    size_t mask = ix->cap - 1, i, k;

    if (ix->cap == 0)
        return;
    for (i = hash_seq(seq) & mask; ix->slot[i] && ix->slot[i]->seq != seq; i = (i + 1) & mask)
        ;
    if (!ix->slot[i])
        return;
    ix->slot[i] = NULL;
    ix->n--;
    for (k = (i + 1) & mask; ix->slot[k]; k = (k + 1) & mask) {
        size_t home = hash_seq(ix->slot[k]->seq) & mask;
        /* move slot k back to the hole at i unless its home lies cyclically in (i, k] */
        bool stays = i <= k ? (home > i && home <= k) : (home > i || home <= k);
        if (!stays) {
            ix->slot[i] = ix->slot[k];
            ix->slot[k] = NULL;
            i = k;
        }
    }
}

/* ---- the queue ---- */

/* The first place in the queue whose job does not come before @j. */
static size_t queue_lower_bound(const struct ty_sched *s, const struct sched_job *j)
{
    size_t lo = 0, hi = s->nqueue;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sched_before(s->queue[mid], j))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool sched_reason_never(const struct sched_job *j)
{
    return j->reason.why == WHY_CAPACITY_NEVER || j->reason.why == WHY_PROJECT_NEVER;
}

size_t sched_queue_rank(const struct ty_sched *s, const struct sched_job *j)
{
    size_t at = queue_lower_bound(s, j), n = 0;

    /* a job that cannot start either keeps its place among all (with no capacity at all,
     * --max-running-jobs 0, every job is one), and so does one no pass has seen yet: whether
     * it could pass those ahead is not known (with --max-running-jobs 0 no pass follows a
     * create at once, and it cannot) */
    if (!s->any_never || sched_reason_never(j) || j->reason.why == WHY_UNSEEN)
        return at;
    for (size_t i = 0; i < at; i++)
        n += !sched_reason_never(s->queue[i]);
    return n;
}

void sched_queue_insert(struct ty_sched *s, struct sched_job *j)
{
    size_t at = queue_lower_bound(s, j);

    if (s->nqueue == s->queue_cap) {
        s->queue_cap = s->queue_cap ? s->queue_cap * 2 : 64;
        s->queue = xreallocarray(s->queue, s->queue_cap, sizeof(*s->queue));
    }
    memmove(s->queue + at + 1, s->queue + at, (s->nqueue - at) * sizeof(*s->queue));
    s->queue[at] = j;
    s->nqueue++;
    j->state = ST_QUEUED;
    if (j->wait_deadline_usec && s->deadline_ok &&
        (s->next_deadline == 0 || j->wait_deadline_usec < s->next_deadline))
        s->next_deadline = j->wait_deadline_usec;
}

static void queue_remove(struct ty_sched *s, struct sched_job *j)
{
    size_t at = queue_lower_bound(s, j);

    if (at < s->nqueue && s->queue[at] == j) {
        memmove(s->queue + at, s->queue + at + 1, (s->nqueue - at - 1) * sizeof(*s->queue));
        s->nqueue--;
    }
    if (j->wait_deadline_usec && j->wait_deadline_usec == s->next_deadline)
        s->deadline_ok = false;
}

/* ---- projects, jobs, holders ---- */

static struct sched_proj *project_find(const struct ty_sched *s, const char *name)
{
    for (size_t i = 0; i < s->nprojects; i++)
        if (strcmp(s->projects[i]->name, name) == 0)
            return s->projects[i];
    return NULL;
}

static struct sched_proj *project_get(struct ty_sched *s, const char *name)
{
    struct sched_proj *p = project_find(s, name ? name : "");

    if (p)
        return p;
    p = xcalloc(1, sizeof(*p));
    p->name = xstrdup(name ? name : "");
    ty_resources_unlimited(&p->limit);
    ty_resources_zero(&p->used);
    if (s->nprojects == s->projects_cap) {
        s->projects_cap = s->projects_cap ? s->projects_cap * 2 : 8;
        s->projects = xreallocarray(s->projects, s->projects_cap, sizeof(*s->projects));
    }
    s->projects[s->nprojects++] = p;
    return p;
}

void ty_sched_set_stop_usec(struct ty_sched *s, int64_t usec)
{
    pthread_mutex_lock(&s->lock);
    s->stop_usec = usec > 0 ? usec : 0;
    pthread_mutex_unlock(&s->lock);
}

int64_t sched_running_from(const struct sched_job *j, int64_t since)
{
    int64_t from = sched_add_sat(since, j->prepare_usec);

    /* Not RUNNING by its wait deadline, it is cancelled then (and ends sooner still). */
    if (j->wait_deadline_usec > 0 && j->wait_deadline_usec < from)
        from = j->wait_deadline_usec > since ? j->wait_deadline_usec : since;
    return from;
}

int64_t sched_expected_end(const struct sched_job *j)
{
    int64_t run = j->max_running_usec > 0 ? j->max_running_usec : TY_SCHED_DEFAULT_RUNNING_USEC;
    return sched_add_sat(j->running ? j->running_usec : sched_running_from(j, j->start_usec), run);
}

void sched_hold(struct ty_sched *s,
                struct sched_job *j,
                const struct ty_resources *held,
                int *gpus,
                size_t ngpus,
                int64_t start_usec)
{
    j->state = ST_HOLDING;
    j->held = *held;
    j->gpus = gpus;
    j->ngpus = ngpus;
    j->start_usec = start_usec;
    j->running = false;
    for (size_t i = 0; i < ngpus; i++)
        if (gpus[i] >= 0 && (size_t)gpus[i] < s->ndev)
            s->dev_holds[gpus[i]]++;
    ty_resources_add(&s->used, held, 1);
    ty_resources_add(&j->proj->used, held, 1);
    if (s->nholders == s->holders_cap) {
        s->holders_cap = s->holders_cap ? s->holders_cap * 2 : 32;
        s->holders = xreallocarray(s->holders, s->holders_cap, sizeof(*s->holders));
    }
    j->hold_idx = s->nholders;
    s->holders[s->nholders++] = j;
}

/* @j holds nothing any more (it stays in the index). */
static void unhold(struct ty_sched *s, struct sched_job *j)
{
    struct ty_resources neg = j->held;

    for (int d = 0; d < TY_RES_NDIMS; d++)
        neg.v[d] = -neg.v[d];
    ty_resources_add(&s->used, &neg, 1);
    ty_resources_add(&j->proj->used, &neg, 1);
    for (size_t i = 0; i < j->ngpus; i++)
        if (j->gpus[i] >= 0 && (size_t)j->gpus[i] < s->ndev)
            s->dev_holds[j->gpus[i]]--;
    free(j->gpus);
    j->gpus = NULL;
    j->ngpus = 0;
    s->holders[j->hold_idx] = s->holders[--s->nholders];
    s->holders[j->hold_idx]->hold_idx = j->hold_idx;
}

void sched_job_drop(struct ty_sched *s, struct sched_job *j)
{
    index_del(&s->index, j->seq);
    free(j->job_id);
    free(j->gpus);
    free(j);
}

static struct sched_job *
job_new(struct ty_sched *s, int64_t seq, const char *project, const char *job_id)
{
    struct sched_job *j = xcalloc(1, sizeof(*j));

    j->seq = seq;
    j->proj = project_get(s, project);
    j->job_id = xstrdup(job_id ? job_id : "");
    index_add(&s->index, j);
    return j;
}

/* ---- the API ---- */

struct ty_sched *ty_sched_new(const struct ty_resources *capacity, const int *dev_type, size_t ndev)
{
    struct ty_sched *s = xcalloc(1, sizeof(*s));

    pthread_mutex_init(&s->lock, NULL);
    s->capacity = *capacity;
    ty_resources_zero(&s->used);
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        s->capacity.v[TY_RES_GPU0 + t] = 0;
    s->ndev = ndev;
    s->dev_type = xcalloc(ndev ? ndev : 1, sizeof(int));
    s->dev_holds = xcalloc(ndev ? ndev : 1, sizeof(int));
    s->dev_busy = xcalloc(ndev ? ndev : 1, sizeof(bool));
    for (size_t i = 0; i < ndev; i++) {
        int t = dev_type[i] >= 0 && dev_type[i] < TY_GPU_NTYPES ? dev_type[i] : -1;
        s->dev_type[i] = t;
        if (t >= 0)
            s->capacity.v[TY_RES_GPU0 + t]++;
    }
    s->deadline_ok = true;
    return s;
}

void ty_sched_free(struct ty_sched *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->index.cap; i++)
        if (s->index.slot[i]) {
            free(s->index.slot[i]->job_id);
            free(s->index.slot[i]->gpus);
            free(s->index.slot[i]);
        }
    for (size_t i = 0; i < s->nprojects; i++) {
        free(s->projects[i]->name);
        free(s->projects[i]);
    }
    free(s->index.slot);
    free(s->projects);
    free(s->queue);
    free(s->holders);
    free(s->dev_type);
    free(s->dev_holds);
    free(s->dev_busy);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void ty_sched_capacity(const struct ty_sched *s, struct ty_resources *out)
{
    *out = s->capacity; /* never changes after ty_sched_new */
}

void ty_sched_set_limit(struct ty_sched *s, const char *project, const struct ty_resources *limit)
{
    LOCK(s);
    struct sched_proj *p = project_get(s, project);
    p->has_limit = true;
    p->limit = *limit;
    sched_changed(s);
    UNLOCK(s);
}

bool ty_sched_get_limit(const struct ty_sched *s, const char *project, struct ty_resources *out)
{
    LOCK(s);
    const struct sched_proj *p = project_find(s, project ? project : "");
    bool has = p && p->has_limit;
    if (has)
        *out = p->limit;
    else
        ty_resources_unlimited(out);
    UNLOCK(s);
    return has;
}

void ty_sched_set_device_busy(struct ty_sched *s, int dev, bool busy)
{
    LOCK(s);
    if (dev >= 0 && (size_t)dev < s->ndev && s->dev_busy[dev] != busy) {
        s->dev_busy[dev] = busy;
        sched_changed(s);
    }
    UNLOCK(s);
}

/* Whether @d is well formed: no negative amount, and GPUs in its trial either none or
 * exactly its roles' (role_count × role_gpus of role_gpu_type). */
static bool demand_ok(const struct ty_demand *d)
{
    struct ty_resources roles;
    bool any_gpu = false;

    ty_resources_zero(&roles);
    for (int d_ = 0; d_ < TY_RES_NDIMS; d_++)
        if (d->trial.v[d_] < 0)
            return false;
    for (int r = 0; r < TY_ROLE_MAX; r++) {
        if (d->role_count[r] < 0 || d->role_gpus[r] < 0)
            return false;
        if (d->role_count[r] == 0 || d->role_gpus[r] == 0)
            continue;
        if (d->role_gpu_type[r] < 0 || d->role_gpu_type[r] >= TY_GPU_NTYPES)
            return false;
        roles.v[TY_RES_GPU0 + d->role_gpu_type[r]] += d->role_count[r] * d->role_gpus[r];
    }
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        any_gpu = any_gpu || d->trial.v[TY_RES_GPU0 + t] > 0;
    if (!any_gpu)
        return true;
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        if (d->trial.v[TY_RES_GPU0 + t] != roles.v[TY_RES_GPU0 + t])
            return false;
    return true;
}

int ty_sched_enqueue(struct ty_sched *s, const struct ty_sched_job *jj)
{
    struct sched_job *j;

    if (!demand_ok(&jj->demand))
        return -EINVAL;
    LOCK(s);
    if (sched_index_get(&s->index, jj->seq)) {
        UNLOCK(s);
        return -EEXIST;
    }
    j = job_new(s, jj->seq, jj->project, jj->job_id);
    j->priority = jj->priority;
    j->create_usec = jj->create_usec;
    j->max_running_usec = jj->max_running_usec > 0 ? jj->max_running_usec : 0;
    j->wait_deadline_usec = jj->wait_deadline_usec > 0 ? jj->wait_deadline_usec : 0;
    j->prepare_usec = jj->prepare_usec > 0 ? jj->prepare_usec : 0;
    j->demand = jj->demand;
    if (j->demand.max_trials < 1)
        j->demand.max_trials = 1;
    ty_demand_total(&j->demand, 1, &j->need1);
    j->cap_short = ty_resources_short(&j->need1, &s->capacity);
    j->reason.why = WHY_UNSEEN;
    sched_queue_insert(s, j);
    sched_changed(s);
    UNLOCK(s);
    return 0;
}

bool ty_sched_dequeue(struct ty_sched *s, int64_t seq)
{
    LOCK(s);
    struct sched_job *j = sched_index_get(&s->index, seq);
    bool queued = j && j->state == ST_QUEUED;
    if (queued) {
        queue_remove(s, j);
        sched_job_drop(s, j);
        sched_changed(s);
    }
    UNLOCK(s);
    return queued;
}

int ty_sched_hold(struct ty_sched *s,
                  int64_t seq,
                  const char *project,
                  const struct ty_resources *held,
                  const int *gpus,
                  size_t ngpus,
                  int64_t start_usec,
                  int64_t max_running_usec,
                  int64_t prepare_usec)
{
    struct ty_resources h = *held;
    int *copy = NULL;

    for (int d = 0; d < TY_RES_NDIMS; d++)
        if (h.v[d] < 0)
            h.v[d] = 0;
    LOCK(s);
    if (sched_index_get(&s->index, seq)) {
        UNLOCK(s);
        return -EEXIST;
    }
    struct sched_job *j = job_new(s, seq, project, NULL);
    j->max_running_usec = max_running_usec > 0 ? max_running_usec : 0;
    j->prepare_usec = prepare_usec > 0 ? prepare_usec : 0;
    if (ngpus) {
        copy = xreallocarray(NULL, ngpus, sizeof(int));
        memcpy(copy, gpus, ngpus * sizeof(int));
    }
    sched_hold(s, j, &h, copy, ngpus, start_usec);
    sched_changed(s);
    UNLOCK(s);
    return 0;
}

bool ty_sched_running(struct ty_sched *s, int64_t seq, int64_t running_usec)
{
    LOCK(s);
    struct sched_job *j = sched_index_get(&s->index, seq);
    bool first = j && j->state == ST_HOLDING && !j->running;
    if (first) {
        j->running = true;
        j->running_usec = running_usec;
        sched_changed(s);
    }
    UNLOCK(s);
    return first;
}

void ty_sched_prepare_again(struct ty_sched *s, int64_t seq, int64_t now_usec)
{
    LOCK(s);
    struct sched_job *j = sched_index_get(&s->index, seq);
    if (j && j->state == ST_HOLDING && !j->running && now_usec > j->start_usec) {
        j->start_usec = now_usec;
        sched_changed(s);
    }
    UNLOCK(s);
}

bool ty_sched_release(struct ty_sched *s, int64_t seq)
{
    LOCK(s);
    struct sched_job *j = sched_index_get(&s->index, seq);
    bool holding = j && j->state == ST_HOLDING;
    if (holding) {
        unhold(s, j);
        sched_job_drop(s, j);
        sched_changed(s);
    }
    UNLOCK(s);
    return holding;
}

bool ty_sched_unadmit(struct ty_sched *s, int64_t seq)
{
    LOCK(s);
    struct sched_job *j = sched_index_get(&s->index, seq);
    bool undo = j && j->state == ST_HOLDING && j->by_pass;
    if (undo) {
        unhold(s, j);
        j->by_pass = false;
        j->reason.why = WHY_UNSEEN;
        s->unadmissions++;
        sched_queue_insert(s, j);
        sched_changed(s);
    }
    UNLOCK(s);
    return undo;
}

void ty_sched_admissions_free(struct ty_sched_admission *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        free(a[i].gpus);
    free(a);
}

int64_t ty_sched_position(struct ty_sched *s, int64_t seq)
{
    LOCK(s);
    const struct sched_job *j = sched_index_get(&s->index, seq);
    int64_t pos = j && j->state == ST_QUEUED ? (int64_t)sched_queue_rank(s, j) + 1 : 0;
    UNLOCK(s);
    return pos;
}

size_t ty_sched_never_count(struct ty_sched *s)
{
    size_t n = 0;

    LOCK(s);
    for (size_t i = 0; s->any_never && i < s->nqueue; i++)
        n += sched_reason_never(s->queue[i]);
    UNLOCK(s);
    return n;
}

bool ty_sched_reason(struct ty_sched *s, int64_t seq, char *buf, size_t len)
{
    LOCK(s);
    const struct sched_job *j = sched_index_get(&s->index, seq);
    bool queued = j && j->state == ST_QUEUED;
    if (queued)
        sched_reason_format(s, j, (int64_t)sched_queue_rank(s, j) + 1, buf, len);
    else if (len)
        buf[0] = '\0';
    UNLOCK(s);
    return queued;
}

uint64_t ty_sched_changes(const struct ty_sched *s)
{
    return atomic_load_explicit(&((struct ty_sched *)s)->changes, memory_order_acquire);
}

int64_t ty_sched_head(struct ty_sched *s, int64_t *reserve_usec)
{
    LOCK(s);
    const struct sched_job *j = s->head_seq ? sched_index_get(&s->index, s->head_seq) : NULL;
    bool queued = j && j->state == ST_QUEUED;
    int64_t seq = queued ? s->head_seq : 0;
    if (reserve_usec)
        *reserve_usec = queued ? s->head_shadow : 0;
    UNLOCK(s);
    return seq;
}

int64_t ty_sched_next_deadline(struct ty_sched *s)
{
    LOCK(s);
    if (!s->deadline_ok) {
        s->next_deadline = 0;
        for (size_t i = 0; i < s->nqueue; i++) {
            int64_t d = s->queue[i]->wait_deadline_usec;
            if (d && (s->next_deadline == 0 || d < s->next_deadline))
                s->next_deadline = d;
        }
        s->deadline_ok = true;
    }
    int64_t next = s->next_deadline;
    UNLOCK(s);
    return next;
}

void ty_sched_stats(struct ty_sched *s, struct ty_sched_stats *st)
{
    LOCK(s);
    st->queued = s->nqueue;
    st->holding = s->nholders;
    st->capacity = s->capacity;
    st->used = s->used;
    st->admissions = s->admissions;
    st->expirations = s->expirations;
    st->unadmissions = s->unadmissions;
    memcpy(st->wait_bucket, s->wait_bucket, sizeof(st->wait_bucket));
    st->wait_sum_s = s->wait_sum_s;
    UNLOCK(s);
}
