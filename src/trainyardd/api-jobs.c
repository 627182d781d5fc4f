/* SPDX-License-Identifier: Apache-2.0
 * api-jobs.c: the ml v1 projects.jobs methods create, get and list (cancel and patch:
 * api-jobs-change.c).
 * Input is validated by the same code as `local train` (spec.h), so a bad spec gets the same
 * message naming the field and the rule; a job that could never run here (more than the
 * service's capacity or its project's limit) is refused too; a job accepted with 200 is
 * durable in the store before the reply, and queued for the scheduler (admission.h). */
#include "api-jobs.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "accept.h"
#include "admission.h"
#include "alloc.h"
#include "base64.h"
#include "daemon.h"
#include "jobcache.h"
#include "jobfilter.h"
#include "json.h"
#include "logs.h"
#include "macro.h"
#include "parse.h"
#include "route.h"
#include "runtime.h"
#include "schema.h"
#include "spec.h"
#include "statedir.h"
#include "timeutil.h"
#include "trials.h"
#include "tuner.h"

/* jobs.list pageSize: ml v1's documented default (20) and maximum (100). */
#define LIST_PAGE_DEFAULT 20
#define LIST_PAGE_MAX     100

static const char *const no_params[] = {NULL};

/* What job_json adds to a row from outside the store (the scheduler's memory), as a kind and a
 * text: what a cached jobs.get answer is checked against (jobcache.h). */
enum live_kind {
    LIVE_NONE,     /* not QUEUED: nothing */
    LIVE_POSITION, /* QUEUED with its runtime's own reason: jobPosition only */
    LIVE_SCHED,    /* QUEUED: jobPosition and the scheduler's stateReason (when it has one) */
};
struct live {
    enum live_kind kind;
    uint64_t at; /* ty_sched_changes, read before the values were taken */
    int64_t position;
    bool sched_reason; /* the scheduler gave a reason (LIVE_SCHED) */
    char reason[512];
    char text[560]; /* the above as one text (live_text) */
};

/* The live values of kind @kind for job @seq, now, into @lv (with their text). */
static void live_compute(struct tyd *d, enum live_kind kind, int64_t seq, struct live *lv)
{
    lv->kind = kind;
    lv->at = ty_sched_changes(d->sched);
    lv->position = 0;
    lv->sched_reason = false;
    lv->reason[0] = '\0';
    if (kind != LIVE_NONE)
        lv->position = ty_sched_position(d->sched, seq);
    if (kind == LIVE_SCHED)
        lv->sched_reason = ty_sched_reason(d->sched, seq, lv->reason, sizeof(lv->reason));
    if (kind == LIVE_NONE)
        lv->text[0] = '\0';
    else
        (void)snprintf(lv->text,
                       sizeof(lv->text),
                       "%lld %d %s",
                       (long long)lv->position,
                       lv->sched_reason,
                       lv->reason);
}

/* The Job resource of @row as the API returns it. While QUEUED: jobPosition, its place in the
 * scheduler's order (0 once admitted), and stateReason, why it waits, from the scheduler's
 * memory; a runtime's own reason (Slurm's, recorded by the supervisor that has the job) wins.
 * When @lv, what was taken from the scheduler goes there too. */
static json_t *job_json_live(struct tyd *d, const struct ty_job_row *row, struct live *lv)
{
    struct ty_job_row shown;
    struct live mine;
    char pos[24];
    json_t *j;

    if (!lv)
        lv = &mine;
    if (row->state != TY_STATE_QUEUED) {
        live_compute(d, LIVE_NONE, row->seq, lv);
        return ty_job_row_to_json(row);
    }
    shown = *row; /* shallow: only its stateReason may differ */
    if (row->shim_pid > 0 && row->state_reason && row->state_reason[0]) {
        live_compute(d, LIVE_POSITION, row->seq, lv);
    } else {
        live_compute(d, LIVE_SCHED, row->seq, lv);
        if (lv->sched_reason)
            shown.state_reason = lv->reason;
    }
    j = ty_job_row_to_json(&shown);
    (void)snprintf(pos, sizeof(pos), "%lld", (long long)lv->position);
    json_object_set_new(j, "jobPosition", json_string(pos));
    return j;
}

static json_t *job_json(struct tyd *d, const struct ty_job_row *row)
{
    return job_json_live(d, row, NULL);
}

/* Answer a failed store call. The status follows google.rpc.Code (google/rpc/code.proto):
 *  - a full filesystem (ENOSPC, EDQUOT) is RESOURCE_EXHAUSTED, "Some resource has been exhausted,
 *    perhaps a per-user quota, or perhaps the entire file system is out of space", HTTP 429;
 *  - a read-only or failing filesystem (EROFS, EIO) or a store locked too long (EBUSY) is
 *    UNAVAILABLE, 503, "most likely a transient condition, which can be corrected by retrying
 *    with a backoff": the call changed nothing (its transaction was rolled back) and the same
 *    call succeeds once the filesystem is back, while INTERNAL (500) is "reserved for serious
 *    errors" where "some invariants expected by the underlying system have been broken";
 *  - anything else (SQLite refused a statement, a corrupt database) is INTERNAL, 500.
 * The answer says what happened in the service's words; the path and SQLite's own message go
 * to the daemon's log only (a client needs neither). */
void tyd_store_failure(struct tyd_reply *rep, int r, const struct ty_error *e)
{
    int code = e && e->code ? e->code : -r;

    tyd_log("store: %s", ty_error_msg(e));
    switch (code) {
    case ENOSPC:
    case EDQUOT:
        tyd_error(rep,
                  429,
                  "RESOURCE_EXHAUSTED",
                  "The filesystem of the service's state directory is full%s: nothing was "
                  "changed. Retry once space is freed there.",
                  code == EDQUOT ? " (disk quota exceeded)" : "");
        break;
    case EROFS:
    case EIO:
    case EBUSY:
        tyd_error(rep,
                  503,
                  "UNAVAILABLE",
                  "The service's state directory cannot be written (%s): nothing was changed. "
                  "Retry later.",
                  code == EROFS ? "its filesystem is read-only"
                  : code == EIO ? "an I/O error"
                                : "the job store is busy");
        break;
    default:
        tyd_error(rep, 500, NULL, "the job store failed: %s", ty_error_msg(e));
        break;
    }
}

static void not_found(struct tyd_reply *rep, const struct tyd_request *rq)
{
    tyd_error(rep, 404, NULL, "Job '%s' not found in project '%s'.", rq->job, rq->project);
}

bool tyd_store_ok(const struct tyd_request *rq,
                  struct tyd_reply *rep,
                  int r,
                  const struct ty_error *e)
{
    if (r == -ENOENT)
        not_found(rep, rq);
    else if (r < 0)
        tyd_store_failure(rep, r, e);
    return r >= 0;
}

void tyd_reply_row(const struct tyd_request *rq,
                   struct tyd_reply *rep,
                   int r,
                   const struct ty_job_row *row,
                   const struct ty_error *e)
{
    if (tyd_store_ok(rq, rep, r, e)) {
        rep->status = 200;
        rep->json = job_json(rq->d, row);
    }
}

int tyd_parse_body(const struct tyd_request *rq, bool empty_ok, json_t **ret, struct tyd_reply *rep)
{
    struct ty_error e = {0};
    json_t *j = NULL;

    if (rq->body_len == 0 && empty_ok) {
        *ret = json_object();
        return 0;
    }
    if (ty_json_parse(rq->body, rq->body_len, &j, &e) < 0) {
        tyd_error(rep, 400, NULL, "Invalid JSON payload received. %s", ty_error_msg(&e));
        return -1;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        tyd_error(
            rep, 400, NULL, "Invalid JSON payload received. Expected an object at the top level.");
        return -1;
    }
    *ret = j;
    return 0;
}

static char *random_key(void)
{
    unsigned char b[12];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        int64_t t = ty_mono_usec() ^ ty_now_usec();
        memset(b, 0, sizeof(b));
        memcpy(b, &t, sizeof(t));
    }
    return ty_base64_encode(b, sizeof(b), true);
}

/* resumePreviousJobId must name an ended tuning job of the same project with a compatible
 * spec. Returns 0, or -1 with a 400 (or the store's error) in @rep. */
static int
check_resume(const struct tyd_request *rq, const struct ty_job *job, struct tyd_reply *rep)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *prev = NULL;
    _cleanup_json_ json_t *pj = NULL;
    struct ty_error e = {0};
    int r;

    r = ty_store_get_job(rq->d->store, rq->project, job->hp->resume_job_id, &prev, &e);
    if (r == -ENOENT) {
        tyd_error(rep,
                  400,
                  NULL,
                  "trainingInput.hyperparameters.resumePreviousJobId: job '%s' was not found in "
                  "project '%s'",
                  job->hp->resume_job_id,
                  rq->project);
        return -1;
    }
    if (r < 0) {
        tyd_store_failure(rep, r, &e);
        return -1;
    }
    pj = ty_job_row_to_json(prev);
    if (ty_study_resume_check(job->hp, pj, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return -1;
    }
    return 0;
}

/* The checks of a valid job against this service before it is stored: who would run it, where
 * it would write, whether it can ever fit, what the tuner accepts. Returns 0, or -1 with @rep
 * filled (400). */
static int check_runnable(const struct tyd_request *rq,
                          const char *runtime,
                          const struct ty_job *job,
                          const struct ty_demand *demand,
                          struct tyd_reply *rep)
{
    struct tyd *d = rq->d;
    struct ty_error e = {0};
    char why[700];

    /* Who would run it (runas.c): a process job that would run as root without
     * --allow-root-jobs is refused now, before anything is stored or queued. */
    if (tyd_runas_supervisor_arg(d, rq->project, runtime, why, sizeof(why)) < 0) {
        tyd_error(rep, 400, NULL, "%s", why);
        return -1;
    }
    /* Where it would write on this machine (jobdir.c). */
    if (tyd_jobdir_check(d->job_dir_roots, rq->project, job->job_dir, why, sizeof(why)) < 0) {
        tyd_error(rep, 400, NULL, "%s", why);
        return -1;
    }
    /* Whether it can ever run here: a job that needs more than the capacity or its
     * project's limit would wait forever. */
    if (tyd_admit_check(d, rq->project, demand, why, sizeof(why)) < 0) {
        tyd_error(rep, 400, NULL, "%s", why);
        return -1;
    }
    if (job->hp) { /* what the tuner refuses (e.g. GRID_SEARCH over a DOUBLE) is a bad spec */
        struct ty_tuner *t = NULL;
        if (ty_tuner_new(job->hp, 0, &t, &e) < 0) {
            tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
            return -1;
        }
        ty_tuner_free(t);
        if (job->hp->resume_job_id && check_resume(rq, job, rep) < 0)
            return -1;
    }
    return 0;
}

/* Claim job @job_id's directory in the state directory (statedir.h) for the first lines of its
 * log, written at create: true and *@dir (*@made: this call made it), or false when it cannot
 * be claimed here (one an earlier job left, a job of the same id: the supervisor claims it
 * then, as for a job of an earlier version, and says it failed when it cannot; a full disk:
 * the same). */
static bool
claim_dir(struct tyd *d, const char *project, const char *job_id, char **dir, bool *made)
{
    struct ty_error e = {0};

    *dir = NULL;
    return ty_statedir_claim_new_job(d->state_dir, project, job_id, dir, made, &e) == 0;
}

/* Remove the directory claim_dir made for a job the store then refused (only its logs/). */
static void unclaim_dir(const char *dir)
{
    _cleanup_free_ char *logs = xasprintf("%s/logs", dir);

    (void)rmdir(logs);
    (void)rmdir(dir);
}

/* The first lines of a job's log, at its creation (lifecycle.md): a job that waits in the
 * queue has a log that says so from the start, as AI Platform's did. */
static void announce(struct tyd *d, const struct ty_job_row *row, const char *dir)
{
    _cleanup_free_ char *queued = xasprintf("Job %s is queued.", row->job_id);

    tyd_job_log_lines(d,
                      row,
                      1,
                      TY_SEV_INFO,
                      (const char *const[]){"Validating job requirements...",
                                            "Job creation request has been successfully validated.",
                                            queued,
                                            NULL},
                      dir);
}

void tyd_jobs_create(const struct tyd_request *rq, struct tyd_reply *rep)
{
    struct tyd *d = rq->d;
    _cleanup_json_ json_t *body = NULL;
    _cleanup_json_ json_t *canon = NULL;
    _cleanup_(ty_job_freep) struct ty_job *job = NULL;
    _cleanup_free_ char *key = NULL;
    _cleanup_free_ char *dir = NULL, *service_log = NULL;
    struct ty_job_row row = {0};
    struct ty_demand demand;
    bool announced, made = false;
    struct ty_error e = {0};
    const char *runtime;
    int r;

    if (tyd_check_params(rq, no_params, rep) < 0 || tyd_parse_body(rq, false, &body, rep) < 0)
        return;
    if (ty_spec_normalize_job(body, false, &canon, &e) < 0 ||
        ty_job_accept_wait(canon, d->min_wait_usec, &job, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    if (ty_runtime_labels_check(job, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    runtime = ty_json_str(job->labels, TY_LABEL_RUNTIME);
    if (!runtime)
        runtime = d->runtime;
    if (ty_runtime_validate(runtime, job, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    tyd_admit_demand(runtime, job, &demand);
    if (check_runnable(rq, runtime, job, &demand, rep) < 0)
        return;
    key = random_key();
    announced = claim_dir(d, rq->project, job->job_id, &dir, &made);
    row.project = (char *)rq->project;
    row.job_id = job->job_id;
    row.state = TY_STATE_QUEUED;
    row.create_usec = ty_now_usec();
    row.labels = job->labels;
    row.training_input = job->training_input;
    row.runtime = (char *)runtime;
    /* announced: its log's first lines are written (below); its supervisor does not repeat
     * them, and reopens the directory claimed here */
    row.options = json_pack("{s:b, s:b, s:b}",
                            "pytorchEnv",
                            ty_label_true(job, TY_LABEL_PYTORCH),
                            "mxnetEnv",
                            ty_label_true(job, TY_LABEL_MXNET),
                            "announced",
                            announced);
    row.sweep_key = key;
    if (announced) { /* its service log is indexed with it: one commit for both */
        _cleanup_free_ char *logs = xasprintf("%s/logs", dir);
        service_log = ty_joblog_file_path(logs, "service", NULL);
    }
    r = ty_store_insert_job_logged(d->store, &row, service_log, &e);
    json_decref(row.options);
    row.options = NULL;
    /* Not stored: the directory goes again if this create made it, unless the id is taken
     * (then it may be the stored job's, made by a create of the same id running beside this
     * one, or taken by that job's supervisor: ty_statedir_claim_new_job). */
    if (r < 0 && r != -EEXIST && made)
        unclaim_dir(dir);
    if (r == -EEXIST) {
        tyd_error(rep,
                  409,
                  NULL,
                  "Field: job.job_id Error: A job with the id '%s' already exists in project "
                  "'%s'.",
                  job->job_id,
                  rq->project);
        return;
    }
    if (r < 0) {
        tyd_store_failure(rep, r, &e);
        return;
    }
    if (announced)
        announce(d, &row, dir);
    tyd_admit_enqueue(d, &row, job, &demand);
    if (d->max_running != 0)
        tyd_kick(d);
    /* The job as created (the insert set its seq and etag): no need to read it back. */
    rep->status = 200;
    rep->json = job_json(d, &row);
}

/* jobs.get's `transitions` (trainyard's field): every recorded state change of job @seq,
 * oldest first, as [{"state", "time"}]. A store failure here fails the answer as any other. */
static void add_transitions(const struct tyd_request *rq, struct tyd_reply *rep, int64_t seq)
{
    _cleanup_free_ struct ty_transition *tr = NULL;
    struct ty_error e = {0};
    size_t n = 0;
    json_t *list;
    char ts[40];
    int r = ty_store_transitions(rq->d->store, seq, &tr, &n, &e);

    if (r < 0) {
        json_decref(rep->json);
        rep->json = NULL;
        tyd_store_failure(rep, r, &e);
        return;
    }
    list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list,
                              json_pack("{s:s, s:s}",
                                        "state",
                                        ty_job_state_name(tr[i].state),
                                        "time",
                                        ty_rfc3339(tr[i].usec, 6, ts, sizeof(ts))));
    json_object_set_new(rep->json, "transitions", list);
}

/* Answer 200 with @body (@len bytes) as http.c would send the same JSON; @body is @ref's,
 * released by @release when the response is done with it (here, when it cannot be made).
 * False when the response cannot be made (nothing answered). */
static bool reply_body(struct tyd_reply *rep,
                       const char *body,
                       size_t len,
                       MHD_ContentReaderFreeCallback release,
                       void *ref)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)body, release, ref);

    if (!resp) {
        release(ref);
        return false;
    }
    (void)MHD_add_response_header(resp, "Content-Type", "application/json; charset=UTF-8");
    rep->status = 200;
    rep->stream = resp;
    return true;
}

/* jobs.get from the cache of rendered answers: true when answered (from the cache, or 404
 * for a job that is not there); false when the job must be read and rendered (the cache had no
 * answer for the row's current version, or the scheduler's values it holds moved on). When
 * nothing was committed to the store since the answer's row version was last found current
 * (the store's commit epoch @store_at, read before anything else, still the one recorded with
 * it), the answer is the row's still; otherwise the row's version is read from the store: a
 * write by any process is seen either way. The scheduler's values are computed again only when
 * the scheduler changed since the answer's were last found current (ty_sched_changes); the
 * answer's bytes are sent without a copy. */
static bool get_cached(const struct tyd_request *rq,
                       struct tyd_reply *rep,
                       const struct tyd_jobcache_key *key,
                       uint64_t store_at)
{
    struct tyd_jobcache_hit hit;
    struct ty_error e = {0};
    int64_t seq = 0, version = 0;
    struct live lv;
    int r;

    if (!tyd_jobcache_get_unchanged(rq->d->jobcache, key, store_at, &hit)) {
        r = ty_store_job_version(rq->d->store, rq->project, rq->job, &seq, &version, &e);
        if (r == -ENOENT) {
            not_found(rep, rq);
            return true;
        }
        if (r < 0 || !tyd_jobcache_get(rq->d->jobcache, key, seq, version, store_at, &hit))
            return false;
    }
    if (hit.kind != LIVE_NONE && hit.live_at != ty_sched_changes(rq->d->sched)) {
        live_compute(rq->d, (enum live_kind)hit.kind, hit.seq, &lv);
        if (strcmp(lv.text, hit.live) != 0) {
            tyd_jobcache_release(hit.ref);
            return false;
        }
        tyd_jobcache_confirm(rq->d->jobcache, key, hit.seq, hit.version, lv.text, lv.at);
    }
    return reply_body(rep, hit.body, hit.len, tyd_jobcache_release, hit.ref);
}

/* Render the answer @rep holds (200, JSON) as send_reply would, keep it in the cache under
 * @key stamped with @row's seq and version (read with the row: the transitions, read after,
 * can only be newer, and a newer version then misses), the store's commit epoch @store_at read
 * before the row, and @lv, and answer with those bytes. */
static void render_and_keep(const struct tyd_request *rq,
                            struct tyd_reply *rep,
                            const struct tyd_jobcache_key *key,
                            const struct ty_job_row *row,
                            uint64_t store_at,
                            const struct live *lv)
{
    struct tyd_jobcache_stamp stamp = {.seq = row->seq,
                                       .version = row->version,
                                       .kind = lv->kind,
                                       .live = lv->text,
                                       .live_at = lv->at,
                                       .store_at = store_at};
    char *text = key->pretty ? ty_json_pretty(rep->json) : ty_json_compact(rep->json);
    size_t n = strlen(text);

    text[n] = '\n'; /* as send_reply: the body ends with a newline (replacing the NUL) */
    tyd_jobcache_put(rq->d->jobcache, key, &stamp, text, n + 1);
    if (reply_body(rep, text, n + 1, free, text)) {
        json_decref(rep->json);
        rep->json = NULL;
    }
}

void tyd_jobs_get(const struct tyd_request *rq, struct tyd_reply *rep)
{
    _cleanup_(ty_job_row_freep) struct ty_job_row *row = NULL;
    struct tyd_jobcache_key key = {rq->project, rq->job, tyd_wants_pretty(rq, rq->conn)};
    struct ty_error e = {0};
    struct live lv;
    uint64_t store_at = 0;
    int r;

    if (tyd_check_params(rq, no_params, rep) < 0)
        return;
    if (rq->d->jobcache) {
        store_at = ty_store_commit_epoch(rq->d->store); /* before anything is read */
        if (get_cached(rq, rep, &key, store_at))
            return;
    }
    r = ty_store_get_job(rq->d->store, rq->project, rq->job, &row, &e);
    if (!tyd_store_ok(rq, rep, r, &e))
        return;
    rep->status = 200;
    rep->json = job_json_live(rq->d, row, &lv);
    add_transitions(rq, rep, row->seq);
    if (rep->json && rq->d->jobcache)
        render_and_keep(rq, rep, &key, row, store_at, &lv);
}

/* --- list ---------------------------------------------------------------------------- */

struct list_ctx {
    const struct ty_filter *filter;
    json_t *jobs;
    size_t want;
    int64_t last_seq;
    bool more;
    struct tyd *d;
};

/* The filter sees the job as the list shows it, the scheduler's jobPosition and stateReason
 * of a QUEUED job included. */
static int list_one(const struct ty_job_row *row, void *data)
{
    struct list_ctx *lc = data;
    _cleanup_json_ json_t *j = job_json(lc->d, row);

    if (lc->filter && !ty_filter_match(lc->filter, j))
        return ty_filter_spent(lc->filter, NULL) < 0; /* stop: the patterns' budget is spent */
    if (json_array_size(lc->jobs) == lc->want) {
        lc->more = true;
        return 1;
    }
    json_array_append_new(lc->jobs, TAKE_PTR(j));
    lc->last_seq = row->seq;
    return 0;
}

void tyd_jobs_list(const struct tyd_request *rq, struct tyd_reply *rep)
{
    static const char *const own[] = {"filter", "pageSize", "pageToken", NULL};
    const char *ftext = tyd_query(rq, "filter");
    const char *ps = tyd_query(rq, "pageSize");
    const char *tok = tyd_query(rq, "pageToken");
    struct ty_filter *filter = NULL;
    struct ty_store_scan q = {.project = rq->project, .state = -1};
    struct list_ctx lc = {.want = LIST_PAGE_DEFAULT, .d = rq->d};
    struct ty_error e = {0};
    int64_t n;
    int r;

    if (tyd_check_params(rq, own, rep) < 0)
        return;
    if (ps && *ps) {
        if (ty_parse_int64(ps, 0, INT32_MAX, &n) < 0) {
            tyd_error(rep,
                      400,
                      NULL,
                      "pageSize: expected a number from 0 to 2147483647 (got '%.40s')",
                      ps);
            return;
        }
        lc.want = n == 0 ? LIST_PAGE_DEFAULT : n > LIST_PAGE_MAX ? LIST_PAGE_MAX : (size_t)n;
    }
    if (tok && *tok) {
        r = tyd_list_token_parse(tok, rq->project, ftext ? ftext : "", &q.before_seq);
        if (r < 0) {
            tyd_error(rep,
                      400,
                      NULL,
                      r == -ESTALE ? "pageToken: the token was made for another project or filter"
                                   : "pageToken: not a page token of this service");
            return;
        }
    }
    if (ty_filter_parse(ftext, &filter, &e) < 0) {
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    if (filter) {
        const char *st = ty_filter_state_hint(filter);
        q.id_prefix = ty_filter_id_prefix_hint(filter);
        if (st)
            for (int s = 0; ty_job_state_names[s]; s++)
                if (strcmp(ty_job_state_names[s], st) == 0)
                    q.state = s;
    }
    lc.filter = filter;
    lc.jobs = json_array();
    r = ty_store_scan_jobs(rq->d->store, &q, list_one, &lc, &e);
    if (r >= 0 && ty_filter_spent(filter, &e) < 0) {
        ty_filter_free(filter);
        json_decref(lc.jobs);
        tyd_error(rep, 400, NULL, "%s", ty_error_msg(&e));
        return;
    }
    ty_filter_free(filter);
    if (r < 0) {
        json_decref(lc.jobs);
        {
            tyd_store_failure(rep, r, &e);
            return;
        }
    }
    rep->status = 200;
    rep->json = json_object();
    if (json_array_size(lc.jobs))
        json_object_set_new(rep->json, "jobs", lc.jobs);
    else
        json_decref(lc.jobs);
    if (lc.more) {
        _cleanup_free_ char *t =
            tyd_list_token_format(lc.last_seq, rq->project, ftext ? ftext : "");
        json_object_set_new(rep->json, "nextPageToken", json_string(t));
    }
}
