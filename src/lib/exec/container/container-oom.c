/* SPDX-License-Identifier: Apache-2.0
 * container-oom.c: did the kernel OOM-kill something in a container? Exit status 137 alone
 * does not say: `podman kill`, an operator's SIGKILL and the OOM killer all give it, and
 * Podman 4.3 never sets State.OOMKilled (docs/internals/runtime.md). The kernel keeps the
 * count in the container's memory cgroup: `oom_kill N` in memory.oom_control (cgroup v1)
 * or memory.events (cgroup v2). That cgroup is removed right after the container exits,
 * before the engine reports the exit, so the count has to be read while it lives: the
 * watch finds the cgroup of the container's process once it runs, and is told of every
 * OOM in it (v1: an eventfd registered in cgroup.event_control; v2: inotify on
 * memory.events), reading the count then and, since the kill follows the notice, again a
 * few milliseconds later. Everything is a loop watcher or timer; nothing blocks. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "alloc.h"
#include "container-internal.h"
#include "fdutil.h"
#include "macro.h"
#include "timeutil.h"

/* Re-reads after a notice: the OOM killer counts its kill just after it notifies. */
#define REREAD_USEC  (5 * INT64_C(1000))
#define REREAD_TIMES 20

unsigned long long ctr_oom_parse_count(const char *text)
{
    const char *p = text;

    while (p && *p) {
        if (strncmp(p, "oom_kill ", 9) == 0)
            return strtoull(p + 9, NULL, 10);
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

/* The mount of the memory controller: v1 ("cgroup" with the memory option) when there is
 * one, else the unified hierarchy. Its mount point and root into @dir, @root. Returns 1
 * for v1, 2 for v2, 0 when there is none. */
static int memory_mount(char *dir, size_t n, char *root, size_t rn)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    int found = 0;

    while (f && fgets(line, sizeof(line), f)) {
        char mroot[1024], mpoint[1024], fstype[64], super[1024];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", mroot, mpoint) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2)
            continue;
        bool v1 = strcmp(fstype, "cgroup") == 0 &&
                  (strstr(super, ",memory") || strncmp(super, "memory", 6) == 0);
        if (v1 || (strcmp(fstype, "cgroup2") == 0 && !found)) {
            (void)snprintf(dir, n, "%s", mpoint);
            (void)snprintf(root, rn, "%s", mroot);
            found = v1 ? 1 : 2;
            if (v1)
                break;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* The memory cgroup of @pid relative to the hierarchy's root ("/libpod_parent/libpod-<id>")
 * into @out, from /proc/<pid>/cgroup: the v1 line naming memory, or v2's "0::". */
static int pid_cgroup(pid_t pid, int version, char *out, size_t n)
{
    char path[64], line[4096];
    FILE *f;
    int r = -ENOENT;

    (void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -ESRCH; /* it has ended already */
    while (fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        char *ctrls, *cpath;
        bool match;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        ctrls = c1 + 1;
        cpath = c2 + 1;
        cpath[strcspn(cpath, "\n")] = '\0';
        if (version == 2) {
            match = ctrls[0] == '\0'; /* "0::/path" */
        } else {
            /* "4:memory:/path" or "4:cpu,memory:/path" */
            _cleanup_free_ char *list = xasprintf(",%s,", ctrls);
            match = strstr(list, ",memory,") != NULL;
        }
        if (match) {
            (void)snprintf(out, n, "%s", cpath);
            r = 0;
            break;
        }
    }
    fclose(f);
    return r;
}

/* Read the counter through the open file; false once the cgroup is gone. */
static bool read_count(struct ctr_oom_watch *w)
{
    char buf[1024];
    ssize_t k;

    if (w->counter_fd < 0)
        return false;
    k = pread(w->counter_fd, buf, sizeof(buf) - 1, 0);
    if (k <= 0)
        return false;
    buf[k] = '\0';
    if (ctr_oom_parse_count(buf) > 0)
        w->killed = true;
    return true;
}

static void stop_watching(struct ctr_oom_watch *w)
{
    if (w->notify_fd >= 0) {
        ty_loop_remove_fd(w->loop, w->notify_fd);
        close(w->notify_fd);
    }
    if (w->counter_fd >= 0)
        close(w->counter_fd);
    if (w->timer)
        ty_loop_cancel_timer(w->loop, w->timer);
    w->timer = 0;
    w->notify_fd = w->counter_fd = -1;
}

static void on_reread(struct ty_loop *loop, void *data)
{
    struct ctr_oom_watch *w = data;

    w->timer = 0;
    if (!read_count(w)) {
        stop_watching(w); /* the cgroup is gone: nothing more to learn */
        return;
    }
    if (!w->killed && --w->rereads > 0)
        w->timer = ty_loop_add_timer(loop, ty_mono_usec() + REREAD_USEC, on_reread, w);
}

static void on_notify(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct ctr_oom_watch *w = data;
    char buf[4096];

    /* Drain: the eventfd's count, or inotify's events. */
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    if (!read_count(w)) {
        stop_watching(w);
        return;
    }
    if (!w->killed && !w->timer) {
        w->rereads = REREAD_TIMES;
        w->timer = ty_loop_add_timer(loop, ty_mono_usec() + REREAD_USEC, on_reread, w);
    }
}

void ctr_oom_watch_init(struct ctr_oom_watch *w)
{
    *w = (struct ctr_oom_watch){.notify_fd = -1, .counter_fd = -1};
}

int ctr_oom_watch_start(struct ctr_oom_watch *w, struct ty_loop *loop, pid_t pid)
{
    char mnt[1024], root[1024], cg[2048];
    _cleanup_free_ char *dir = NULL, *file = NULL;
    size_t rl;
    int version, r;

    ctr_oom_watch_stop(w);
    w->loop = loop;
    version = memory_mount(mnt, sizeof(mnt), root, sizeof(root));
    if (version == 0)
        return -ENODEV;
    r = pid_cgroup(pid, version, cg, sizeof(cg));
    if (r < 0)
        return r;
    /* The path is relative to our cgroup namespace; the mount shows the hierarchy from
     * @root on. */
    rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (rl && (strncmp(cg, root, rl) != 0 || (cg[rl] != '/' && cg[rl] != '\0')))
        return -ENODEV;
    dir = xasprintf("%s%s", mnt, cg + rl);
    file = xasprintf("%s/%s", dir, version == 1 ? "memory.oom_control" : "memory.events");
    w->counter_fd = open(file, O_RDONLY | O_CLOEXEC);
    if (w->counter_fd < 0)
        return errno == ENOENT ? -ESRCH : -errno; /* ENOENT: removed, it has ended */
    if (version == 1) {
        _cleanup_free_ char *ctl = xasprintf("%s/cgroup.event_control", dir);
        char reg[64];
        int cfd;
        w->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        cfd = open(ctl, O_WRONLY | O_CLOEXEC);
        (void)snprintf(reg, sizeof(reg), "%d %d", w->notify_fd, w->counter_fd);
        r = w->notify_fd < 0 || cfd < 0 ? -errno : ty_write_all(cfd, reg, strlen(reg));
        if (cfd >= 0)
            close(cfd);
    } else {
        w->notify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        r = w->notify_fd < 0 || inotify_add_watch(w->notify_fd, file, IN_MODIFY) < 0 ? -errno : 0;
    }
    if (r < 0) {
        stop_watching(w);
        return r;
    }
    (void)ty_loop_add_fd(loop, w->notify_fd, POLLIN, on_notify, w);
    /* An OOM before the watch began is counted already. */
    (void)read_count(w);
    return 0;
}

bool ctr_oom_watch_killed(struct ctr_oom_watch *w)
{
    if (!w->killed)
        (void)read_count(w);
    return w->killed;
}

void ctr_oom_watch_stop(struct ctr_oom_watch *w)
{
    stop_watching(w);
    w->killed = false;
}
