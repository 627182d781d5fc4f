/* SPDX-License-Identifier: Apache-2.0
 * grant.c: the scheduler's grant as a job's supervisor holds it (grant.h). */
#include "grant.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "macro.h"
#include "resources.h"
#include "timeutil.h"

int tys_grant_read(const char *text, struct tys_grant *out, struct ty_error *err)
{
    _cleanup_json_ json_t *j = NULL;
    int r;

    memset(out, 0, sizeof(*out));
    r = ty_json_parse(text, strlen(text), &j, err);
    if (r < 0)
        return ty_error_prefix(err, r, "--grant");
    r = ty_grant_from_json(j, &out->grant, err);
    if (r < 0)
        return ty_error_prefix(err, r, "--grant");
    out->json = TAKE_PTR(j);
    out->given = true;
    return 0;
}

size_t tys_grant_hold_fds(const struct tys_grant *g, char *missing, size_t len)
{
    size_t n = 0, off = 0;

    if (len)
        missing[0] = '\0';
    for (size_t i = 0; i < g->grant.ngpus; i++) {
        int fd = TYS_FIRST_LOCK_FD + (int)i;
        int flags = fcntl(fd, F_GETFD);
        int k;

        if (flags >= 0 && fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0)
            continue;
        n++;
        k = snprintf(missing + off,
                     off < len ? len - off : 0,
                     "%sfd %d (GPU %d)",
                     off ? ", " : "",
                     fd,
                     g->grant.gpus[i]);
        off += k > 0 ? (size_t)k : 0;
    }
    return n;
}

void tys_grant_run_gpus(const struct tys_grant *g, struct ty_run_gpus *out)
{
    *out = (struct ty_run_gpus){
        .trials = g->grant.trials,
        .gpus = g->grant.gpus,
        .ngpus = g->grant.ngpus,
        .stand_in = g->grant.stand_in,
    };
}

const char *tys_grant_admitted(
    const struct tys_grant *g, const struct ty_job *job, int64_t create_usec, char *buf, size_t len)
{
    const struct ty_grant one = {.trials = 1};
    struct ty_demand d;

    ty_demand_of_job(job, &d);
    return ty_grant_describe(
        g->given ? &g->grant : &one, &d, ty_now_usec() - create_usec, buf, len);
}

void tys_grant_release(struct tys_grant *g)
{
    ty_grant_release(&g->grant);
    json_decref(g->json);
    memset(g, 0, sizeof(*g));
}
