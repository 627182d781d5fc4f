/* SPDX-License-Identifier: Apache-2.0
 * grant.h: what the scheduler gave a job (--grant of supervise-job; admit/gpudev.h) as its
 * supervisor holds it: the grant read and checked, the GPU lock descriptors inherited as fds
 * 3, 4, ... (one per granted GPU, in grant order) made close-on-exec and kept open until the
 * process exits (so the devices stay held while the job runs, and no replica inherits them),
 * the grant in the run's plain form (runtime.h, ty_run_gpus), and the admission line of the
 * job's log. */
#ifndef TYS_GRANT_H
#define TYS_GRANT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "gpudev.h"
#include "runtime.h"
#include "spec.h"

/* What --grant says. */
struct tys_grant {
    bool given; /* --grant was given */
    struct ty_grant grant;
    json_t *json; /* as given, recorded in the store when the job is claimed */
};

/* The first inherited lock descriptor. */
#define TYS_FIRST_LOCK_FD 3

/* Read --grant's @text into *@out. Returns 0, or -EINVAL with err naming --grant and the
 * field. */
int tys_grant_read(const char *text, struct tys_grant *out, struct ty_error *err);

/* The GPU lock descriptors trainyardd passed (fds 3, 4, ..., one per granted GPU, in grant
 * order): made close-on-exec at once, so that no replica inherits them, and left open until
 * this process exits (the devices stay held). Returns how many are not open, described in
 * @missing ("fd 4 (GPU 1)"). */
size_t tys_grant_hold_fds(const struct tys_grant *g, char *missing, size_t len);

/* The grant in the run's plain form (borrowing @g's devices). */
void tys_grant_run_gpus(const struct tys_grant *g, struct ty_run_gpus *out);

/* The admission line of the job's log (ty_grant_describe) for @job created at @create_usec:
 * what @g gives, or without a grant (not given) one trial and no GPU (docs/service.md).
 * Returns @buf. */
const char *tys_grant_admitted(const struct tys_grant *g,
                               const struct ty_job *job,
                               int64_t create_usec,
                               char *buf,
                               size_t len);

/* Free what @g holds and zero it (the lock descriptors stay open). */
void tys_grant_release(struct tys_grant *g);

#endif
