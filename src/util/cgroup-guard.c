/* SPDX-License-Identifier: Apache-2.0
 * cgroup-guard.c: a guardian's wait on its job's lifeline and its last work, killing and
 * removing the job's cgroup when the owner died (cgroup-guard.h). */
#include "cgroup-guard.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#include "timeutil.h"

int ty_cgroup_guard_wait(int fd)
{
    char c = 0;
    ssize_t n;

    do
        n = read(fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    return n == 1 && c == TY_CGROUP_GUARD_DONE;
}

int ty_cgroup_guard_end(const struct ty_cgroup *cg)
{
    int64_t end = ty_mono_usec() + TY_CGROUP_GUARD_KILL_MS * INT64_C(1000);

    while (ty_mono_usec() < end) {
        (void)ty_cgroup_kill(cg);
        if (!ty_cgroup_populated(cg))
            break;
        (void)poll(NULL, 0, TY_CGROUP_GUARD_PASS_MS);
    }
    return ty_cgroup_remove(cg);
}
