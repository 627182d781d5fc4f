/* SPDX-License-Identifier: Apache-2.0
 * scheduler-reason.c: why a queued job waits, in words a person reads as the job's
 * stateReason (ty_sched_reason). A pass stores only numbers (struct sched_reason); they are
 * put in words here, when asked, with the job's live position. */
#include <inttypes.h>
#include <stdio.h>

#include "scheduler-int.h"

/* A bare amount of @dim for "N of M" and "it holds N": a number, GiB for memory. */
static const char *bare(int dim, int64_t n, char *buf, size_t len)
{
    if (dim == TY_RES_MEMORY)
        (void)snprintf(buf, len, "%.1f GiB", (double)n / 1024.0);
    else
        (void)snprintf(buf, len, "%" PRId64, n);
    return buf;
}

/* "a running-job slot", or the amount ("16 vCPUs", "2 × NVIDIA_TESLA_T4"). */
static const char *wanted(int dim, int64_t n, char *buf, size_t len)
{
    if (dim == TY_RES_JOBS) {
        (void)snprintf(buf, len, "a running-job slot");
        return buf;
    }
    return ty_res_amount(dim, n, buf, len);
}

/* "Waiting for 2 × NVIDIA_TESLA_T4: 1 of 2 free (1 held outside the service)". */
static void resource(const struct sched_job *j, char *buf, size_t len)
{
    const struct sched_reason *r = &j->reason;
    char a[64], b[32], c[32], outside[64] = "";

    if (r->dim >= TY_RES_GPU0 && r->aux > 0)
        (void)snprintf(outside, sizeof(outside), " (%" PRId64 " held outside the service)", r->aux);
    if (r->dim == TY_RES_JOBS)
        (void)snprintf(buf,
                       len,
                       "Waiting for a running-job slot: %" PRId64 " of %" PRId64 " in use",
                       r->aux,
                       r->total);
    else if (r->dim == TY_RES_MEMORY)
        (void)snprintf(buf,
                       len,
                       "Waiting for %s%s: %.1f of %s free",
                       ty_res_amount(r->dim, r->need, a, sizeof(a)),
                       j->demand.tuning ? " for one trial" : "",
                       (double)r->avail / 1024.0,
                       bare(r->dim, r->total, c, sizeof(c)));
    else
        (void)snprintf(buf,
                       len,
                       "Waiting for %s%s: %s of %s free%s",
                       ty_res_amount(r->dim, r->need, a, sizeof(a)),
                       j->demand.tuning ? " for one trial" : "",
                       bare(r->dim, r->avail, b, sizeof(b)),
                       bare(r->dim, r->total, c, sizeof(c)),
                       outside);
}

/* "Project vision is at its limit of 8 vCPUs (it holds 8, the job needs 4)". */
static void project(const struct sched_job *j, char *buf, size_t len)
{
    const struct sched_reason *r = &j->reason;
    char a[64], b[32], c[32];

    if (r->dim == TY_RES_JOBS)
        (void)snprintf(buf,
                       len,
                       "Project %s is at its limit of %s (it runs %" PRId64 ")",
                       j->proj->name,
                       ty_res_amount(r->dim, r->total, a, sizeof(a)),
                       r->aux);
    else
        (void)snprintf(buf,
                       len,
                       "Project %s is at its limit of %s (it holds %s, the job needs %s%s)",
                       j->proj->name,
                       ty_res_amount(r->dim, r->total, a, sizeof(a)),
                       bare(r->dim, r->aux, b, sizeof(b)),
                       bare(r->dim, r->need, c, sizeof(c)),
                       j->demand.tuning ? " for one trial" : "");
}

/* "Waiting behind job big-1, which is ahead of it in the queue and waits for 4 ×
 * NVIDIA_TESLA_T4: starting this one now would delay it". A job of another project is not
 * named (a project's token may not learn another's job ids: docs/security.md). */
static void behind(const struct ty_sched *s, const struct sched_job *j, char *buf, size_t len)
{
    const struct sched_reason *r = &j->reason;
    const struct sched_job *head = sched_index_get(&s->index, r->head_seq);
    char a[64];

    if (head && head->state == ST_QUEUED && head->proj == j->proj)
        (void)snprintf(buf,
                       len,
                       "Waiting behind job %s, which is ahead of it in the queue and waits for "
                       "%s: starting this one now would delay it",
                       head->job_id,
                       wanted(r->dim, r->need, a, sizeof(a)));
    else if (head && head->state == ST_QUEUED)
        (void)snprintf(buf,
                       len,
                       "Waiting behind a job of another project, which is ahead of it in the "
                       "queue and waits for %s: starting this one now would delay it",
                       wanted(r->dim, r->need, a, sizeof(a)));
    else /* the head started or left since the pass; the next pass says more */
        (void)snprintf(buf,
                       len,
                       "Waiting behind a job ahead of it in the queue: starting this one now "
                       "would have delayed it");
}

/* Why @j can never start as things are: "The job needs 8 × NVIDIA_TESLA_T4 at once, more
 * than this service has (4); it waits until the capacity grows", or its project's limit. */
static void never(const struct sched_job *j, char *buf, size_t len)
{
    const struct sched_reason *r = &j->reason;
    char a[64], b[64];

    if (r->why == WHY_CAPACITY_NEVER)
        (void)snprintf(buf,
                       len,
                       "%s needs %s at once, more than this service has (%s); it waits until "
                       "the capacity grows",
                       j->demand.tuning ? "One trial of the job" : "The job",
                       ty_res_amount(r->dim, r->need, a, sizeof(a)),
                       r->dim >= TY_RES_GPU0 ? bare(r->dim, r->total, b, sizeof(b))
                                             : ty_res_amount(r->dim, r->total, b, sizeof(b)));
    else
        (void)snprintf(buf,
                       len,
                       "Project %s has a limit of %s, less than %s needs at once (%s); it "
                       "waits until the limit is raised",
                       j->proj->name,
                       ty_res_amount(r->dim, r->total, b, sizeof(b)),
                       j->demand.tuning ? "one trial of the job" : "the job",
                       ty_res_amount(r->dim, r->need, a, sizeof(a)));
}

void sched_reason_format(
    const struct ty_sched *s, const struct sched_job *j, int64_t pos, char *buf, size_t len)
{
    char text[512];
    int64_t ahead = pos > 0 ? pos - 1 : 0;

    switch ((enum sched_why)j->reason.why) {
    case WHY_RESOURCE:
        resource(j, text, sizeof(text));
        break;
    case WHY_PROJECT:
        project(j, text, sizeof(text));
        break;
    case WHY_BEHIND_HEAD:
        behind(s, j, text, sizeof(text));
        break;
    case WHY_CAPACITY_NEVER:
    case WHY_PROJECT_NEVER:
        never(j, text, sizeof(text));
        break;
    case WHY_UNSEEN:
    default:
        (void)snprintf(text, sizeof(text), "Waiting to be scheduled");
        break;
    }
    if (ahead > 0)
        (void)snprintf(
            buf, len, "%s; %" PRId64 " job%s ahead of it", text, ahead, ahead == 1 ? "" : "s");
    else
        (void)snprintf(buf, len, "%s", text);
}
