/* SPDX-License-Identifier: Apache-2.0
 * sigpipe.c: the self-pipe for signals (sigpipe.h). */
#include "sigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

static int fds[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    (void)!write(fds[1], &c, 1);
    errno = saved;
}

int ty_sigpipe_install(const int *sigs, size_t n)
{
    struct sigaction sa = {.sa_handler = on_signal};

    if (fds[0] < 0 && pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < n; i++)
        if (sigaction(sigs[i], &sa, NULL) < 0)
            return -errno;
    return fds[0];
}
