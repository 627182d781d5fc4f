/* SPDX-License-Identifier: Apache-2.0
 * docker-test-loop.c: driving a loop in the tests of the engine clients (docker-test-server.h):
 * run it until a flag is set or a time has passed. */
#include <stdbool.h>
#include <stdint.h>

#include "docker-test-server.h"
#include "loop.h"
#include "timeutil.h"

static bool expired;

static void on_expire(struct ty_loop *loop, void *data)
{
    expired = true;
}

/* Run @loop until *flag is true or @ms passed. Returns *flag. */
bool run_until(struct ty_loop *loop, const bool *flag, int ms)
{
    uint64_t t;

    expired = false;
    t = ty_loop_add_timer(loop, ty_mono_usec() + (int64_t)ms * 1000, on_expire, NULL);
    while (!(flag && *flag) && !expired)
        if (ty_loop_run_once(loop) < 0)
            break;
    ty_loop_cancel_timer(loop, t);
    return flag && *flag;
}

void run_for(struct ty_loop *loop, int ms)
{
    (void)run_until(loop, NULL, ms);
}
