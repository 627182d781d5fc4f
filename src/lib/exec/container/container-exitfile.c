/* SPDX-License-Identifier: Apache-2.0
 * container-exitfile.c: a container's end learnt the moment it happens, from the exit file
 * Podman's conmon writes. conmon is the parent of each container's process; when that
 * process ends, conmon drains its output into the log, then writes the exit status (a
 * decimal, 128+N for signal N) to <exit dir>/<container id> (a temporary file renamed into
 * place), and only then runs `podman container cleanup`, after which Podman records the die
 * event and polls its events file (every 250 ms). So inotify on the exit directory tells of
 * the end 0.3 to 0.6 s before the events stream does, with the same status.
 *
 * The directory: TRAINYARD_CONTAINER_EXIT_DIR when set; else the one the engine's own
 * conmon was given (its --exit-dir, read from /proc once a container runs: the parent of
 * State.Pid, when it is a conmon), watched from then on; until that is known, Podman's
 * default (/run/libpod/exits as root, $XDG_RUNTIME_DIR/libpod/tmp/exits rootless) when it
 * exists, so that the first container's end is seen too. An engine that writes no such
 * files (Docker) or whose processes we cannot see (another host or pid namespace) simply
 * never matches: the events stream and the waits (container-events.c, container-run.c) tell
 * then, as they still do when a file is missed. Each file names a container id, so only
 * the current run of one of this job's replicas is acted on (ctr_run_died). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "container-internal.h"
#include "fdutil.h"
#include "macro.h"

/* How many containers' processes are looked at for a conmon: an engine without one (Docker,
 * another pid namespace) costs no inspect per replica after these. */
#define LEARN_TRIES 3

/* An exit file is a few bytes; a longer one is not conmon's. */
#define EXIT_FILE_MAX 64

bool ctr_exit_file_parse(const char *text, size_t len, long *code)
{
    char buf[EXIT_FILE_MAX + 1], *end;
    long v;

    if (len == 0 || len > EXIT_FILE_MAX)
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    errno = 0;
    v = strtol(buf, &end, 10);
    while (*end == '\n' || *end == ' ')
        end++;
    if (errno || end == buf || *end || v < 0 || v > 255)
        return false;
    *code = v;
    return true;
}

bool ctr_exit_dir_parse(const char *cmdline, size_t len, char *out, size_t n)
{
    const char *p = cmdline, *end = cmdline + len;

    while (p < end) {
        size_t k = strnlen(p, (size_t)(end - p));
        const char *next = p + k + 1;
        if (strcmp(p, "--exit-dir") == 0 && next < end && next[0] == '/') {
            size_t vk = strnlen(next, (size_t)(end - next));
            if (vk >= n || next + vk >= end) /* too long, or cut short (no NUL) */
                return false;
            memcpy(out, next, vk);
            out[vk] = '\0';
            return true;
        }
        if (strncmp(p, "--exit-dir=/", 12) == 0 && k - 11 < n && p + k < end) {
            (void)snprintf(out, n, "%.*s", (int)(k - 11), p + 11);
            return true;
        }
        p = next;
    }
    return false;
}

/* Read the exit file of replica @cr's container, if there is one, and act on it. */
static void check_file(struct container_rt *c, struct ctr_replica *cr)
{
    _cleanup_free_ char *path = NULL, *text = NULL;
    size_t len = 0;
    long code;

    if (!cr->id || cr->reported || cr->runs == 0)
        return;
    path = xasprintf("%s/%s", c->exits.dir, cr->id);
    if (ty_read_file(path, EXIT_FILE_MAX, &text, &len, NULL) < 0)
        return;
    if (ctr_exit_file_parse(text, len, &code))
        ctr_run_died(cr, code);
}

/* The replica whose current container has the id @name, or NULL. */
static struct ctr_replica *by_id(struct container_rt *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->reps[i].id && strcmp(c->reps[i].id, name) == 0)
            return &c->reps[i];
    return NULL;
}

static void on_inotify(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct container_rt *c = data;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t k;

    (void)loop;
    (void)revents;
    while ((k = read(fd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + k;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            struct ctr_replica *cr;
            p += sizeof(*ev) + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) { /* events lost: look at every file */
                for (size_t i = 0; i < c->n; i++)
                    check_file(c, &c->reps[i]);
                continue;
            }
            if (ev->len > 0 && (cr = by_id(c, ev->name)) != NULL)
                check_file(c, cr);
        }
    }
}

/* Watch @dir (replacing any watch). Returns whether it is watched. */
static bool watch_dir(struct container_rt *c, const char *dir)
{
    struct stat st;
    int fd;

    ctr_exitwatch_stop(c);
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return false;
    fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        return false;
    /* conmon renames a finished temporary file into place; a writer that does not rename
     * closes it. */
    if (inotify_add_watch(fd, dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
        close(fd);
        return false;
    }
    c->exits.fd = fd;
    c->exits.dir = xstrdup(dir);
    (void)ty_loop_add_fd(c->base.loop, fd, POLLIN, on_inotify, c);
    return true;
}

void ctr_exitwatch_start(struct container_rt *c)
{
    const char *given = getenv("TRAINYARD_CONTAINER_EXIT_DIR");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    _cleanup_free_ char *dflt = NULL;

    if (c->exits.tried)
        return;
    c->exits.tried = true;
    if (given && given[0] == '/') {
        c->exits.confirmed = true;
        (void)watch_dir(c, given);
        return;
    }
    if (geteuid() == 0)
        dflt = xstrdup("/run/libpod/exits");
    else if (xdg && xdg[0] == '/')
        dflt = xasprintf("%s/libpod/tmp/exits", xdg);
    if (dflt)
        (void)watch_dir(c, dflt);
}

/* The --exit-dir of the conmon that is @pid's parent into @out. Returns whether found. */
static bool conmon_exit_dir(pid_t pid, char *out, size_t n)
{
    char path[64];
    _cleanup_free_ char *status = NULL, *cmdline = NULL;
    size_t len = 0;
    const char *pp;
    long ppid;

    (void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (ty_read_file(path, 1 << 16, &status, &len, NULL) < 0 || !(pp = strstr(status, "\nPPid:")) ||
        (ppid = strtol(pp + 6, NULL, 10)) <= 1)
        return false;
    free(status);
    status = NULL;
    (void)snprintf(path, sizeof(path), "/proc/%ld/comm", ppid);
    if (ty_read_file(path, 64, &status, &len, NULL) < 0 || strncmp(status, "conmon\n", 7) != 0)
        return false;
    (void)snprintf(path, sizeof(path), "/proc/%ld/cmdline", ppid);
    if (ty_read_file(path, 1 << 20, &cmdline, &len, NULL) < 0)
        return false;
    return ctr_exit_dir_parse(cmdline, len, out, n);
}

bool ctr_exitwatch_wants_pid(const struct container_rt *c)
{
    return c->exits.tried && !c->exits.confirmed && c->exits.learn_tries < LEARN_TRIES;
}

void ctr_exitwatch_learn(struct container_rt *c, pid_t pid)
{
    char dir[4096];

    if (!c->exits.tried || c->exits.confirmed || pid <= 0 || c->exits.learn_tries >= LEARN_TRIES)
        return;
    c->exits.learn_tries++;
    if (!conmon_exit_dir(pid, dir, sizeof(dir)))
        return;
    c->exits.confirmed = true;
    if (c->exits.fd >= 0 && c->exits.dir && strcmp(c->exits.dir, dir) == 0)
        return;
    if (!watch_dir(c, dir))
        return;
    /* Ends that came before the watch. */
    for (size_t i = 0; i < c->n; i++)
        check_file(c, &c->reps[i]);
}

void ctr_exitwatch_check(struct container_rt *c, struct ctr_replica *cr)
{
    if (c->exits.fd >= 0)
        check_file(c, cr);
}

void ctr_exitwatch_stop(struct container_rt *c)
{
    if (c->exits.fd >= 0) {
        ty_loop_remove_fd(c->base.loop, c->exits.fd);
        close(c->exits.fd);
    }
    c->exits.fd = -1;
    free(c->exits.dir);
    c->exits.dir = NULL;
}
