/* SPDX-License-Identifier: Apache-2.0
 * jobrun.c: one job run to its end, a supervisor or a study (jobrun.h). */
#include "jobrun.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"

struct ty_jobrun {
    struct ty_loop *loop;
    struct ty_supervisor *sup; /* a plain job */
    struct ty_study *study;    /* a tuning job, instead */
    int cancel_fd;             /* ty_jobrun_cancel_on's, or -1 */
    void (*before_wait)(void *ctx);
    void *ctx;
};

int ty_jobrun_new(struct ty_loop *loop,
                  const struct ty_job *job,
                  const struct ty_jobrun_options *opts,
                  struct ty_jobrun **ret,
                  struct ty_error *err)
{
    struct ty_jobrun *jr = xcalloc(1, sizeof(*jr));
    struct ty_supervisor_options sup = opts->sup;
    int r;

    jr->loop = loop;
    jr->cancel_fd = -1;
    jr->before_wait = opts->before_wait;
    jr->ctx = opts->ctx;
    sup.on_state = opts->on_state;
    sup.ctx = opts->ctx;
    if (job->hp) {
        struct ty_study_options so = {
            .runtime = opts->runtime,
            .state_dir = opts->state_dir,
            .seed = ty_study_default_seed(job),
            .sup = sup,
            .on_state = opts->on_state,
            .on_trial = opts->on_trial,
            .previous_job = opts->previous_job,
            .earlier_jobs = opts->earlier_jobs,
            .after_trial = opts->after_trial,
            .ctx = opts->ctx,
        };
        so.sup.on_outcome = NULL; /* a trial's outcome is not the job's */
        r = ty_study_new(loop, job, &so, &jr->study, err);
    } else {
        r = ty_supervisor_new(loop, opts->runtime, job, NULL, NULL, &sup, &jr->sup, err);
    }
    if (r < 0) {
        free(jr);
        return r;
    }
    *ret = jr;
    return 0;
}

static bool done(const struct ty_jobrun *jr)
{
    return jr->study ? ty_study_done(jr->study) : ty_supervisor_done(jr->sup);
}

int ty_jobrun_run(struct ty_jobrun *jr, struct ty_error *err)
{
    int r;

    r = jr->study ? ty_study_start(jr->study, err) : ty_supervisor_start(jr->sup, err);
    while (r >= 0 && !done(jr)) {
        if (jr->before_wait)
            jr->before_wait(jr->ctx);
        r = ty_loop_run_once(jr->loop);
        if (r < 0)
            return ty_error_set(err, -r, "event loop: %s", strerror(-r));
    }
    if (jr->before_wait)
        jr->before_wait(jr->ctx);
    return r < 0 ? r : 0;
}

void ty_jobrun_cancel(struct ty_jobrun *jr)
{
    if (jr->study)
        ty_study_cancel(jr->study);
    else
        ty_supervisor_cancel(jr->sup);
}

static void on_cancel_fd(struct ty_loop *loop, int fd, short revents, void *data)
{
    unsigned char c;

    while (read(fd, &c, 1) == 1)
        ty_jobrun_cancel(data);
}

int ty_jobrun_cancel_on(struct ty_jobrun *jr, int fd)
{
    int r = ty_loop_add_fd(jr->loop, fd, POLLIN, on_cancel_fd, jr);

    if (r >= 0)
        jr->cancel_fd = fd;
    return r < 0 ? r : 0;
}

enum ty_job_state ty_jobrun_state(const struct ty_jobrun *jr)
{
    return jr->study ? ty_study_state(jr->study) : ty_supervisor_state(jr->sup);
}

const char *ty_jobrun_error(const struct ty_jobrun *jr)
{
    return jr->study ? ty_study_error(jr->study) : ty_supervisor_error(jr->sup);
}

const struct ty_study *ty_jobrun_study(const struct ty_jobrun *jr)
{
    return jr->study;
}

json_t *ty_jobrun_training_output(const struct ty_jobrun *jr)
{
    return jr->study ? ty_study_training_output(jr->study) : NULL;
}

json_t *ty_jobrun_attempt_status(const struct ty_jobrun *jr)
{
    return jr->sup ? ty_supervisor_attempt_status(jr->sup, true) : NULL;
}

void ty_jobrun_free(struct ty_jobrun *jr)
{
    if (!jr)
        return;
    if (jr->cancel_fd >= 0)
        ty_loop_remove_fd(jr->loop, jr->cancel_fd);
    ty_study_free(jr->study);
    ty_supervisor_free(jr->sup);
    free(jr);
}
