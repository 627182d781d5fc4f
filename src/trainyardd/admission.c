/* SPDX-License-Identifier: Apache-2.0
 * admission.c: the main thread's side of the scheduler (admission.h). Each dispatch pass asks
 * the scheduler which queued jobs start now (ty_sched_pass), locks the GPU devices each
 * admitted job was given (an exclusive flock per device, gpudev.h) and hands the job to
 * dispatch.c, which starts its supervisor with the locks inherited; jobs that waited past
 * their scheduling.maxWaitTime are cancelled. It keeps what every admitted job holds until
 * the job ends (ty_sched_release), goes back to the queue (ty_sched_unadmit) or, after an
 * internal error, gets a new supervisor with the same grant; at start-up it rebuilds that
 * from the store (the grant each supervisor recorded when it claimed its job). */
#include "admission.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "timeutil.h"

/* A deadline timer fires this much after the deadline, so that the pass it starts finds the
 * job past it (the loop's monotonic clock and the epoch clock of deadlines drift apart). */
#define DEADLINE_SLACK_USEC (10 * INT64_C(1000))
/* How often the passes read which holders entered RUNNING (refresh_running). */
#define RUNNING_REFRESH_USEC (1000 * INT64_C(1000))

/* --- holds ------------------------------------------------------------------------------ */

/* Does @runtime keep a job in a queue of its own (Slurm), so that its RUNNING start says
 * nothing the scheduler can count on? */
static bool queues_itself(const char *runtime)
{
    return runtime && strcmp(runtime, "slurm") == 0;
}

/* Index of the first hold with seq >= @seq. */
static size_t hold_lower(const struct tyd_admit *a, int64_t seq)
{
    size_t lo = 0, hi = a->nholds;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->holds[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct tyd_hold *find_hold(struct tyd_admit *a, int64_t seq)
{
    size_t i = hold_lower(a, seq);
    return i < a->nholds && a->holds[i].seq == seq ? &a->holds[i] : NULL;
}

/* A new hold for @seq (an earlier one is replaced), zeroed but for its seq. */
static struct tyd_hold *add_hold(struct tyd_admit *a, int64_t seq)
{
    size_t i = hold_lower(a, seq);

    if (i < a->nholds && a->holds[i].seq == seq) {
        ty_grant_release(&a->holds[i].grant);
    } else {
        a->holds = xreallocarray(a->holds, a->nholds + 1, sizeof(*a->holds));
        memmove(a->holds + i + 1, a->holds + i, (a->nholds - i) * sizeof(*a->holds));
        a->nholds++;
    }
    memset(&a->holds[i], 0, sizeof(a->holds[i]));
    a->holds[i].seq = seq;
    return &a->holds[i];
}

static void drop_pending(struct tyd_admit *a, int64_t seq)
{
    for (size_t i = 0; i < a->npending; i++)
        if (a->pending[i] == seq) {
            memmove(a->pending + i, a->pending + i + 1, (a->npending - i - 1) * sizeof(int64_t));
            a->npending--;
            return;
        }
}

static void drop_hold(struct tyd_admit *a, int64_t seq)
{
    size_t i = hold_lower(a, seq);

    if (i == a->nholds || a->holds[i].seq != seq)
        return;
    if (a->holds[i].pending)
        drop_pending(a, seq);
    ty_grant_release(&a->holds[i].grant);
    memmove(a->holds + i, a->holds + i + 1, (a->nholds - i - 1) * sizeof(*a->holds));
    a->nholds--;
}

/* Job @seq holds nothing any more. */
static void release(struct tyd *d, int64_t seq)
{
    (void)ty_sched_release(d->sched, seq);
    drop_hold(d->admit, seq);
}

/* The scheduler's index of GPU device number @number, or -1. */
static int dev_index(const struct tyd_admit *a, int number)
{
    for (size_t i = 0; i < a->inv.n; i++)
        if (a->inv.dev[i].number == number)
            return (int)i;
    return -1;
}

/* Queue job @row again, from its stored document. */
static void enqueue_row(struct tyd *d, const struct ty_job_row *row)
{
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    struct ty_error e = {0};
    struct ty_demand dem;

    if (tyd_admit_row_job(row, &job, &e) < 0) {
        tyd_log("job %s/%s: its stored document is refused now (%s): it is not queued",
                row->project,
                row->job_id,
                ty_error_msg(&e));
        return;
    }
    tyd_admit_demand(row->runtime, job, &dem);
    tyd_admit_enqueue(d, row, job, &dem);
}

/* Job @row goes back to its place in the queue (its supervisor gave it back). */
static void back_to_queue(struct tyd *d, const struct ty_job_row *row)
{
    if (!ty_sched_unadmit(d->sched, row->seq)) {
        /* Held since a restart (ty_sched_hold): no place to go back to; queue it anew. */
        (void)ty_sched_release(d->sched, row->seq);
        enqueue_row(d, row);
    }
    drop_hold(d->admit, row->seq);
}

void tyd_admit_after(struct tyd *d, const struct ty_job_row *row)
{
    if (ty_job_state_is_final(row->state))
        release(d, row->seq);
    else if (row->state == TY_STATE_QUEUED && row->shim_pid == 0 && row->internal_retries == 0)
        back_to_queue(d, row);
}

void tyd_admit_watched(struct tyd *d, int64_t seq, int delta)
{
    struct tyd_hold *h = find_hold(d->admit, seq);

    if (!h)
        return;
    if (delta > 0)
        h->watched++;
    else if (h->watched > 0)
        h->watched--;
}

/* --- recovery --------------------------------------------------------------------------- */

/* Job @row holds what its supervisor recorded (or, with no record, one trial and no GPU). */
static void hold_found(struct tyd *d, const struct ty_job_row *row)
{
    struct tyd_admit *a = d->admit;
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_free_ int *idx = NULL;
    struct ty_grant g = {.trials = 1};
    struct ty_error e = {0};
    struct ty_demand dem;
    struct tyd_hold *h;
    size_t n = 0;

    if (tyd_admit_row_job(row, &job, &e) < 0) {
        tyd_log("job %s/%s: %s: counted as a running job only",
                row->project,
                row->job_id,
                ty_error_msg(&e));
        tyd_admit_demand("slurm", NULL, &dem);
    } else {
        tyd_admit_demand(row->runtime, job, &dem);
    }
    if (row->grant && ty_grant_from_json(row->grant, &g, &e) < 0) {
        tyd_log("job %s/%s: its recorded grant is not readable (%s): it holds one trial and no "
                "GPU",
                row->project,
                row->job_id,
                ty_error_msg(&e));
        g = (struct ty_grant){.trials = 1};
    }
    if (g.trials < 1)
        g.trials = 1;
    idx = xcalloc(g.ngpus + 1, sizeof(*idx));
    for (size_t i = 0; i < g.ngpus; i++) {
        int k = dev_index(a, g.gpus[i]);
        if (k < 0)
            tyd_log("job %s/%s: holds GPU device %d, which this service does not have",
                    row->project,
                    row->job_id,
                    g.gpus[i]);
        else
            idx[n++] = k;
    }
    h = add_hold(a, row->seq);
    h->grant = g;
    h->pass_grant = row->grant != NULL;
    ty_demand_total(&dem, g.trials, &h->held);
    /* RUNNING since its start_usec; else PREPARING since before now, for at most its
     * runtime's allowance more. */
    h->running_known = row->start_usec > 0 || queues_itself(row->runtime);
    if (ty_sched_hold(d->sched,
                      row->seq,
                      row->project,
                      &h->held,
                      idx,
                      n,
                      row->start_usec > 0 ? row->start_usec : ty_now_usec(),
                      job ? job->max_running_usec : 0,
                      row->start_usec > 0 || !job ? 0
                                                  : ty_runtime_prepare_usec(row->runtime, job)) < 0)
        tyd_log("job %s/%s: already held", row->project, row->job_id);
}

void tyd_admit_recover(struct tyd *d, const struct ty_job_row *row)
{
    if (ty_job_state_is_final(row->state))
        return;
    if (row->shim_pid == 0 && row->internal_retries == 0) {
        if (row->state == TY_STATE_QUEUED)
            enqueue_row(d, row);
        return; /* CANCELLING with no supervisor: dispatch.c ends it */
    }
    if (row->shim_pid == 0 && row->state == TY_STATE_CANCELLING)
        return;
    hold_found(d, row);
}

bool tyd_admit_unsupervised(struct tyd *d)
{
    for (size_t i = 0; i < d->admit->nholds; i++)
        if (!d->admit->holds[i].watched && !d->admit->holds[i].pending)
            return true;
    return false;
}

void tyd_admit_settle(struct tyd *d, const int64_t *retry, size_t nretry)
{
    struct tyd_admit *a = d->admit;
    _cleanup_free_ int64_t *seqs = NULL;
    size_t n = 0, k = 0;

    for (size_t i = 0; i < a->nholds; i++) {
        const struct tyd_hold *h = &a->holds[i];
        if (h->watched || h->pending)
            continue;
        while (k < nretry && retry[k] < h->seq)
            k++;
        if (k < nretry && retry[k] == h->seq)
            continue; /* waits for its new supervisor */
        if (!seqs)
            seqs = xcalloc(a->nholds, sizeof(*seqs));
        seqs[n++] = h->seq;
    }
    for (size_t i = 0; i < n; i++) {
        _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
        int r = ty_store_get_job_by_seq(d->store, seqs[i], &row, NULL);
        if (r == -ENOENT)
            release(d, seqs[i]);
        else if (r == 0 && row->shim_pid == 0)
            tyd_admit_after(d, row);
    }
}

/* --- GPU locks -------------------------------------------------------------------------- */

/* Lock the devices of grant @g: 0 and *@fds, or -errno with nothing locked and *@failed the
 * device that could not be. */
static int lock_all(struct tyd_admit *a, const struct ty_grant *g, int **fds, int *failed)
{
    int *v = xcalloc(g->ngpus + 1, sizeof(*v));

    for (size_t i = 0; i < g->ngpus; i++) {
        int fd = ty_gpu_lock(&a->inv, g->gpus[i]);
        if (fd == -ENODEV) {
            /* Recorded before a restart with other devices: nothing to lock (its supervisor
             * says the lock is missing), nothing to wait for. */
            v[i] = -1;
            continue;
        }
        if (fd < 0) {
            for (size_t k = 0; k < i; k++)
                if (v[k] >= 0)
                    close(v[k]);
            free(v);
            *failed = g->gpus[i];
            return fd;
        }
        v[i] = fd;
    }
    *fds = v;
    return 0;
}

static char *grant_text(const struct tyd_hold *h)
{
    _cleanup_json_ json_t *j = NULL;

    if (!h->pass_grant)
        return NULL;
    j = ty_grant_to_json(&h->grant);
    return json_dumps(j, JSON_COMPACT);
}

int tyd_admit_relock(
    struct tyd *d, const struct ty_job_row *row, int **fds, size_t *nfds, char **grant)
{
    struct tyd_hold *h = find_hold(d->admit, row->seq);
    int failed = -1, r;

    *fds = NULL;
    *nfds = 0;
    *grant = NULL;
    if (!h)
        return 0;
    r = lock_all(d->admit, &h->grant, fds, &failed);
    if (r == -EWOULDBLOCK && !h->relock_waits) {
        /* the job's own log says so once: it shows RUNNING, its last attempt's replicas
         * gone, until the device is free again */
        h->relock_waits = true;
        tyd_job_log(d,
                    row,
                    ty_job_row_attempt(row),
                    TY_SEV_WARNING,
                    "The job's supervisor was lost; its next attempt waits for GPU device %d, "
                    "which it held and another process (a `local train`, another service) has "
                    "taken meanwhile.",
                    failed);
    }
    if (r < 0)
        return r;
    h->relock_waits = false;
    /* Its new supervisor prepares again (image pulls): its allowance starts over, unless it
     * entered RUNNING before (maxRunningTime goes on counting from then). */
    if (queues_itself(row->runtime)) {
        /* Slurm's queue bounds nothing: counted from admission, as it was */
    } else if (row->start_usec > 0 && !h->running_known) {
        (void)ty_sched_running(d->sched, row->seq, row->start_usec);
        h->running_known = true;
    } else if (row->start_usec == 0) {
        ty_sched_prepare_again(d->sched, row->seq, ty_now_usec());
    }
    *nfds = h->grant.ngpus;
    *grant = grant_text(h);
    return 0;
}

/* Mark the GPU devices that no job of this service holds busy when another process (a `local
 * train`, another service) holds them, free when not. Only while jobs wait. */
static void refresh_busy(struct tyd *d)
{
    struct tyd_admit *a = d->admit;
    struct ty_sched_stats st;
    _cleanup_free_ bool *ours = NULL;

    if (a->inv.n == 0)
        return;
    ty_sched_stats(d->sched, &st);
    if (st.queued == 0)
        return;
    ours = xcalloc(a->inv.n, sizeof(*ours));
    for (size_t i = 0; i < a->nholds; i++)
        for (size_t k = 0; k < a->holds[i].grant.ngpus; k++) {
            int x = dev_index(a, a->holds[i].grant.gpus[k]);
            if (x >= 0)
                ours[x] = true;
        }
    for (size_t i = 0; i < a->inv.n; i++)
        if (!ours[i] && a->inv.dev[i].type >= 0)
            ty_sched_set_device_busy(d->sched, (int)i, ty_gpu_busy(&a->inv, a->inv.dev[i].number));
}

/* --- expiry ----------------------------------------------------------------------------- */

/* Cancel job @seq, which waited past its maxWaitTime. Returns 0, or -1 when the store could
 * not write (tried again on the next pass). */
static int expire_one(struct tyd *d, int64_t seq)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    struct ty_error e = {0};
    const char *wait;
    char msg[300];
    int r;

    r = ty_store_get_job_by_seq(d->store, seq, &row, &e);
    if (r < 0)
        return r == -ENOENT || !ty_store_fs_error(e.code) ? 0 : -1;
    if (row->state != TY_STATE_QUEUED || row->shim_pid != 0)
        return 0; /* cancelled meanwhile (or claimed, which a queued job cannot be) */
    wait = ty_json_str(json_object_get(row->training_input, "scheduling"), "maxWaitTime");
    (void)snprintf(msg,
                   sizeof(msg),
                   "Job cancelled: it did not start within its scheduling.maxWaitTime (%s).",
                   wait ? wait : "?");
    r = ty_store_set_state(d->store, seq, TY_STATE_CANCELLED, ty_now_usec(), msg, &e);
    if (r == -EALREADY)
        return 0;
    if (r < 0) {
        tyd_log("job %s/%s: %s", row->project, row->job_id, ty_error_msg(&e));
        return ty_store_fs_error(e.code) ? -1 : 0;
    }
    tyd_log("job %s/%s: cancelled: it waited longer than its maxWaitTime (%s)",
            row->project,
            row->job_id,
            wait ? wait : "?");
    tyd_job_log(d, row, 1, TY_SEV_WARNING, "%s", msg);
    return 0;
}

static void record_expired(struct tyd *d)
{
    struct tyd_admit *a = d->admit;
    size_t keep = 0;

    for (size_t i = 0; i < a->nexpired; i++)
        if (expire_one(d, a->expired[i]) < 0)
            a->expired[keep++] = a->expired[i];
    a->nexpired = keep;
}

/* --- starting admitted jobs ------------------------------------------------------------- */

/* @usec as a short duration: "0.4s", "12s", "5m 03s", "2h 10m". */
static const char *duration_text(int64_t usec, char *buf, size_t len)
{
    int64_t s = usec / 1000000;

    if (usec < 0)
        usec = s = 0;
    if (s < 10)
        (void)snprintf(buf, len, "%.1fs", (double)usec / 1e6);
    else if (s < 60)
        (void)snprintf(buf, len, "%" PRId64 "s", s);
    else if (s < 3600)
        (void)snprintf(buf, len, "%" PRId64 "m %02" PRId64 "s", s / 60, s % 60);
    else
        (void)snprintf(buf, len, "%" PRId64 "h %02" PRId64 "m", s / 3600, s / 60 % 60);
    return buf;
}

/* Log that job @row was admitted: how long it waited and what it was given (the job's own log
 * gets the line from its supervisor, which has the grant). */
static void log_admitted(struct tyd *d, const struct ty_job_row *row, const struct tyd_hold *h)
{
    const struct tyd_admit *a = d->admit;
    struct ty_buf what = TY_BUF_INIT;
    char amount[96], waited[32];

    if (h->grant.trials > 1)
        ty_buf_printf(&what, ", %d trials at once", h->grant.trials);
    for (int dim = TY_RES_GPU0; dim < TY_RES_NDIMS; dim++)
        if (h->held.v[dim] > 0)
            ty_buf_printf(
                &what, ", %s", ty_res_amount(dim, h->held.v[dim], amount, sizeof(amount)));
    if (h->grant.ngpus) {
        ty_buf_printf(&what, " (GPU device%s", h->grant.ngpus > 1 ? "s" : "");
        for (size_t i = 0; i < h->grant.ngpus; i++)
            ty_buf_printf(&what, "%s %d", i ? "," : "", h->grant.gpus[i]);
        ty_buf_printf(&what, "%s)", h->grant.stand_in ? ", stand-ins" : "");
    }
    for (int dim = TY_RES_CPUS; dim <= TY_RES_MEMORY; dim++)
        if (a->capacity.v[dim] != TY_RES_UNLIMITED && h->held.v[dim] > 0)
            ty_buf_printf(
                &what, ", %s", ty_res_amount(dim, h->held.v[dim], amount, sizeof(amount)));
    duration_text(ty_now_usec() - row->create_usec, waited, sizeof(waited));
    tyd_log("job %s/%s: admitted after %s in the queue%s%s",
            row->project,
            row->job_id,
            waited,
            what.len ? ": " : "",
            what.len ? ty_buf_str(&what) + 2 : "");
    ty_buf_release(&what);
}

/* Start the supervisor of admitted job @seq. Returns 0, or -1 when the store could not be
 * read (the job stays to be started on a later pass). */
static int start_admitted(struct tyd *d, struct tyd_dispatch *dp, int64_t seq)
{
    struct tyd_admit *a = d->admit;
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    _cleanup_free_ int *fds = NULL;
    _cleanup_free_ char *grant = NULL;
    struct ty_error e = {0};
    struct tyd_hold *h;
    int failed = -1, r;

    r = ty_store_get_job_by_seq(d->store, seq, &row, &e);
    if (r < 0 && r != -ENOENT && ty_store_fs_error(e.code))
        return -1;
    h = find_hold(a, seq);
    if (r < 0 || !h || row->state != TY_STATE_QUEUED || row->shim_pid != 0 ||
        row->internal_retries != 0) {
        release(d, seq); /* cancelled since it was admitted */
        return 0;
    }
    h->pending = false;
    /* The grant says something only when it gives GPUs or bounds a study's trials at once
     * (no grant: one trial, no GPU, as a restart assumes); Slurm schedules its own jobs. */
    h->pass_grant = (!row->runtime || strcmp(row->runtime, "slurm") != 0) &&
                    (h->grant.ngpus > 0 || json_object_get(row->training_input, "hyperparameters"));
    r = lock_all(a, &h->grant, &fds, &failed);
    if (r < 0) {
        int x = dev_index(a, failed);
        tyd_log("job %s/%s: GPU device %d is %s: the job waits",
                row->project,
                row->job_id,
                failed,
                r == -EWOULDBLOCK ? "held by another process" : strerror(-r));
        if (x >= 0)
            ty_sched_set_device_busy(d->sched, x, true);
        (void)ty_sched_unadmit(d->sched, seq);
        drop_hold(a, seq);
        return 0;
    }
    grant = grant_text(h);
    log_admitted(d, row, h);
    r = tyd_dispatch_start(dp, row, grant, fds, h->grant.ngpus);
    if (r > 0) {
        release(d, seq); /* failed: it must not run */
    } else if (r < 0) {
        (void)ty_sched_unadmit(d->sched, seq);
        drop_hold(a, seq);
    }
    return 0;
}

/* Start up to TYD_START_BATCH admitted jobs, oldest admission first; more on the next pass,
 * which comes at once. */
static void start_pending(struct tyd *d, struct tyd_dispatch *dp)
{
    struct tyd_admit *a = d->admit;
    size_t started = 0;

    while (a->npending > 0 && started < TYD_START_BATCH) {
        int64_t seq = a->pending[0];
        if (start_admitted(d, dp, seq) < 0)
            return; /* the store cannot be read: the next pass tries again */
        drop_pending(a, seq);
        started++;
    }
    if (a->npending > 0)
        tyd_kick(d);
}

static void on_deadline(struct ty_loop *loop, void *data)
{
    struct tyd *d = data;
    d->admit->deadline_timer = 0;
    d->admit->deadline_at = 0;
    tyd_kick(d);
}

/* A timer for the earliest wait deadline of the queue, so that a job is cancelled then and
 * not at the next rescan. */
static void arm_deadline(struct tyd *d, struct ty_loop *loop)
{
    struct tyd_admit *a = d->admit;
    int64_t next = ty_sched_next_deadline(d->sched), wait;

    if (next == a->deadline_at && (a->deadline_timer || next == 0))
        return;
    ty_loop_cancel_timer(loop, a->deadline_timer);
    a->deadline_timer = 0;
    a->deadline_at = next;
    if (next == 0)
        return;
    wait = next - ty_now_usec();
    a->deadline_timer = ty_loop_add_timer(
        loop, ty_mono_usec() + (wait > 0 ? wait : 0) + DEADLINE_SLACK_USEC, on_deadline, d);
}

/* Tell the scheduler which holders entered RUNNING since (their supervisors record it in the
 * store): their expected ends count from then, not from their PREPARING allowance. One read
 * per holder not yet known to run. */
static void refresh_running(struct tyd *d)
{
    struct tyd_admit *a = d->admit;
    int64_t now = ty_mono_usec();
    uint64_t epoch = ty_store_commit_epoch(d->store);

    /* At most once per RUNNING_REFRESH_USEC (a burst of creates makes a pass each, and a
     * thousand jobs admitted at once are a thousand reads), and not when nothing was
     * committed since the last look. */
    if (a->running_refreshed && now - a->running_refreshed < RUNNING_REFRESH_USEC)
        return;
    if (epoch && epoch == a->running_epoch)
        return;
    a->running_refreshed = now;
    a->running_epoch = epoch;
    for (size_t i = 0; i < a->nholds; i++) {
        struct tyd_hold *h = &a->holds[i];
        _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
        if (h->running_known || h->pending ||
            ty_store_get_job_by_seq(d->store, h->seq, &row, NULL) < 0)
            continue;
        if (queues_itself(row->runtime)) {
            h->running_known = true; /* Slurm's queue bounds nothing: counted from admission */
        } else if (row->start_usec > 0) {
            (void)ty_sched_running(d->sched, h->seq, row->start_usec);
            h->running_known = true;
        }
    }
}

void tyd_admit_pass(struct tyd *d, struct tyd_dispatch *dp, struct ty_loop *loop)
{
    struct tyd_admit *a = d->admit;
    struct ty_sched_admission *adm = NULL;
    int64_t *exp = NULL;
    size_t nadm = 0, nexp = 0;

    refresh_busy(d);
    refresh_running(d);
    (void)ty_sched_pass(d->sched, ty_now_usec(), &adm, &nadm, &exp, &nexp);
    if (!a->passed) { /* at start: jobs queued under a larger capacity or limit than now */
        size_t never = ty_sched_never_count(d->sched);
        a->passed = true;
        if (never)
            tyd_log("%zu queued job%s can never start with this capacity and these project "
                    "limits: each waits until they grow (its stateReason says what it needs)",
                    never,
                    never == 1 ? "" : "s");
    }
    if (nexp) {
        a->expired = xreallocarray(a->expired, a->nexpired + nexp, sizeof(*a->expired));
        memcpy(a->expired + a->nexpired, exp, nexp * sizeof(*exp));
        a->nexpired += nexp;
    }
    free(exp);
    if (a->nexpired)
        record_expired(d);
    if (nadm)
        a->pending = xreallocarray(a->pending, a->npending + nadm, sizeof(*a->pending));
    for (size_t i = 0; i < nadm; i++) {
        struct tyd_hold *h = add_hold(a, adm[i].seq);
        h->held = adm[i].held;
        h->pending = true;
        h->grant.trials = adm[i].trials;
        h->grant.stand_in = a->inv.stand_in;
        h->grant.ngpus = adm[i].ngpus;
        h->grant.gpus = xcalloc(adm[i].ngpus + 1, sizeof(int));
        for (size_t k = 0; k < adm[i].ngpus; k++)
            h->grant.gpus[k] = adm[i].gpus[k] >= 0 && (size_t)adm[i].gpus[k] < a->inv.n
                                   ? a->inv.dev[adm[i].gpus[k]].number
                                   : adm[i].gpus[k];
        a->pending[a->npending++] = adm[i].seq;
    }
    ty_sched_admissions_free(adm, nadm);
    start_pending(d, dp);
    arm_deadline(d, loop);
}
