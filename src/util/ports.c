/* SPDX-License-Identifier: Apache-2.0
 * ports.c: holding free TCP ports for replicas, and the list of this process's reservations
 * (ports.h). */
#include "ports.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"
#include "timeutil.h"

/* This process's reservations, ascending. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static int *held;
static size_t n_held, cap_held;

static void held_add(int fd)
{
    size_t i;

    pthread_mutex_lock(&held_lock);
    if (n_held == cap_held) {
        cap_held = cap_held ? 2 * cap_held : 64;
        held = xreallocarray(held, cap_held, sizeof(int));
    }
    for (i = n_held; i > 0 && held[i - 1] > fd; i--) /* usually appended: fds grow */
        held[i] = held[i - 1];
    held[i] = fd;
    n_held++;
    pthread_mutex_unlock(&held_lock);
}

void ty_port_release(int fd)
{
    if (fd < 0)
        return;
    pthread_mutex_lock(&held_lock);
    for (size_t i = n_held; i > 0; i--)
        if (held[i - 1] == fd) {
            memmove(&held[i - 1], &held[i], (n_held - i) * sizeof(int));
            n_held--;
            break;
        }
    /* Closed under the lock: its number cannot be reused and listed again meanwhile. */
    close(fd);
    pthread_mutex_unlock(&held_lock);
}

size_t ty_port_held(int **fds)
{
    size_t n;

    pthread_mutex_lock(&held_lock);
    n = n_held;
    *fds = n ? xreallocarray(NULL, n, sizeof(int)) : NULL;
    if (n)
        memcpy(*fds, held, n * sizeof(int));
    pthread_mutex_unlock(&held_lock);
    return n;
}

/* The first port of the kernel's ephemeral range (replicas' ports stay below it), read again
 * at most once a second: a job of 1,000 replicas reserves 1,000 ports, and reading
 * /proc/sys for each was about 1% of bench/scale's launch. */
static int ephemeral_low(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static int cached;
    static int64_t read_at;
    int64_t now = ty_mono_usec();
    int lo;

    pthread_mutex_lock(&lock);
    if (cached == 0 || now - read_at >= 1000000) {
        _cleanup_fclose_ FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
        int hi = 60999;
        cached = 32768;
        if (f && fscanf(f, "%d %d", &cached, &hi) != 2)
            cached = 32768;
        read_at = now;
    }
    lo = cached;
    pthread_mutex_unlock(&lock);
    return lo;
}

int ty_port_range_size(void)
{
    int n = ephemeral_low() - TY_PORT_LOW;
    return n > 0 ? n : 0;
}

/* Bind a socket to 0.0.0.0:@port; returns the fd or -errno. */
static int bind_port(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return ty_negerrno();
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int r = ty_negerrno();
        close(fd);
        return r;
    }
    return fd;
}

int ty_port_hold(int *cursor, int *fd, const char *what, struct ty_error *err)
{
    int hi = ephemeral_low() - 1;
    int span = hi - TY_PORT_LOW + 1;
    int port = *cursor;

    if (span < 1024)
        return ty_error_set(
            err, ERANGE, "no port range for replicas: the ephemeral range starts at %d", hi + 1);
    if (port < TY_PORT_LOW || port > hi)
        port = TY_PORT_LOW + (int)((unsigned)(ty_now_usec() ^ getpid()) % (unsigned)span);
    for (int tries = 0; tries < span; tries++) {
        int r;
        if (++port > hi)
            port = TY_PORT_LOW;
        r = bind_port(port);
        if (r >= 0) {
            held_add(r);
            *fd = r;
            *cursor = port;
            return port;
        }
        if (r != -EADDRINUSE && r != -EACCES)
            return ty_error_set(err, -r, "cannot reserve a port: %s", strerror(-r));
    }
    return ty_error_set(
        err, EADDRINUSE, "no free port for replica %s in %d-%d", what, TY_PORT_LOW, hi);
}

int ty_port_hold_exact(int port)
{
    int fd;

    if (port <= 0 || port > 65535)
        return -EINVAL;
    fd = bind_port(port);
    if (fd >= 0)
        held_add(fd);
    return fd;
}
