/* SPDX-License-Identifier: Apache-2.0
 * nosuid.c: the directories container jobs write to as root (each --job-dir-root, and the
 * state directory, whose trials' metric directories are mounted into trials), made nosuid,
 * nodev when trainyardd starts as root with the container runtime (daemon.h). A container
 * replica is root in its container: a set-user-ID program, a file with capabilities or a
 * device node it leaves there would work as root for any local user on a mount without
 * nosuid and nodev. The directory's tree (its submounts included) is cloned detached, the
 * clone made nosuid,nodev throughout, and only then attached over the directory, so that no
 * mount namespace ever sees it without the flags (a bind then a remount would leave the
 * submounts, and the copies propagated to other namespaces before the remount, as they
 * were). The path is opened following no symbolic link: a user who owns a parent of a root
 * cannot point it at /usr/bin. What stays open: a process whose directory was inside before
 * (it keeps the old mount), and another path to the same files; an /etc/fstab line or a
 * nosuid file system is the complete answer (docs/security.md). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daemon.h"
#include "fdutil.h"
#include "macro.h"

/* The mount id of the mount at "/" in the mount table @path (/proc/PID/mountinfo), or -1. */
static long root_mount_id(const char *path)
{
    FILE *f = fopen(path, "re");
    char line[4096];
    long id = -1;

    if (!f)
        return -1;
    while (id < 0 && fgets(line, sizeof(line), f)) {
        long mid;
        char point[8];
        /* "ID PARENT MAJ:MIN ROOT POINT ..." */
        if (sscanf(line, "%ld %*d %*s %*s %7s", &mid, point) == 2 && strcmp(point, "/") == 0)
            id = mid;
    }
    fclose(f);
    return id;
}

/* Is this process in PID 1's mount namespace (the host's, as far as can be told)? 1 yes, 0
 * no (a unit's private namespace, whose mounts local users do not see), -1 cannot tell. The
 * namespace links first; where PID 1's cannot be read (a hardened init), its mount table: a
 * namespace of its own holds copies of the mounts, with ids of their own. */
static int in_init_mount_ns(void)
{
    struct stat self, init;
    long a, b;

    if (stat("/proc/self/ns/mnt", &self) == 0 && stat("/proc/1/ns/mnt", &init) == 0)
        return self.st_dev == init.st_dev && self.st_ino == init.st_ino;
    a = root_mount_id("/proc/self/mountinfo");
    b = root_mount_id("/proc/1/mountinfo");
    return a < 0 || b < 0 ? -1 : a == b;
}

/* A mount point of /proc/self/mountinfo (octal escapes such as \040 decoded) in place. */
static void unescape(char *p)
{
    char *w = p;

    for (; *p; p++, w++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *w = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *w = *p;
        }
    }
    *w = '\0';
}

/* The mounts below (or at) the real directory @real: *@open, whether one of them (as its
 * path leads now) lacks nosuid or nodev; *@unbindable, whether one is unbindable (a
 * recursive clone leaves it out, and the cover would hide it). */
static void mounts_below(const char *real, bool *open, bool *unbindable)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t cap = 0, n = strlen(real);

    *open = *unbindable = false;
    if (!f)
        return;
    while (getline(&line, &cap, f) > 0) {
        char point[PATH_MAX];
        struct statvfs sv;
        /* "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER" */
        if (sscanf(line, "%*d %*d %*s %*s %4095s", point) != 1)
            continue;
        unescape(point);
        if (strncmp(point, real, n) != 0 || (point[n] != '\0' && point[n] != '/'))
            continue;
        /* the mount a path leads to now: one a cover hides (at the same point) reads as the
         * cover */
        if (statvfs(point, &sv) == 0 &&
            (sv.f_flag & (ST_NOSUID | ST_NODEV)) != (ST_NOSUID | ST_NODEV))
            *open = true;
        if (strstr(line, " unbindable ") || strstr(line, " unbindable -"))
            *unbindable = true;
    }
    free(line);
    fclose(f);
}

/* Cover the directory @dfd with a nosuid,nodev copy of its tree (the module comment).
 * 0, or -errno with nothing attached. */
static int cover_nosuid(int dfd)
{
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    int tree =
        open_tree(dfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    int r = 0;

    if (tree < 0)
        return -errno;
    if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0 ||
        move_mount(tree, "", dfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        r = -errno;
    close(tree); /* attached, it stays; else the detached copy goes with its descriptor */
    return r;
}

/* Why @dir (on a mount without nosuid,nodev) is left so, or NULL once it was covered;
 * @leave: the reason it is not to be covered, or NULL; @buf holds a reason made here. */
static const char *cover(const char *dir, const char *leave, char *buf, size_t len)
{
    _cleanup_close_ int fd = -EBADF;
    int ns, r;

    if (leave)
        return leave;
    if ((ns = in_init_mount_ns()) <= 0)
        return ns < 0 ? "trainyardd cannot tell whether it is in the host's mount namespace, "
                        "where a mount of its own would be seen"
                      : "trainyardd is not in the host's mount namespace, where a mount of "
                        "its own would be seen";
    if ((fd = ty_open_dir_no_links(dir)) < 0) {
        (void)snprintf(buf,
                       len,
                       "%s",
                       fd == -ELOOP ? "a symbolic link on its way, which is not followed"
                                    : strerror(-fd));
        return buf;
    }
    if ((r = cover_nosuid(fd)) < 0) {
        (void)snprintf(buf,
                       len,
                       "%s%s",
                       strerror(-r),
                       r == -ENOSYS ? ": the kernel lacks mount_setattr (Linux 5.12)" : "");
        return buf;
    }
    return NULL;
}

/* @dir (@what: the setting that names it) on a mount that lets set-user-ID programs, file
 * capabilities and device nodes work: covered (unless @leave says why not), else a warning.
 * Logs either. */
static void secure_mount(const char *what, const char *dir, const char *leave)
{
    struct statvfs sv;
    char buf[256];
    const char *why;

    bool below_open = false, unbindable = false;
    char real[PATH_MAX];

    if (statvfs(dir, &sv) < 0 || !realpath(dir, real))
        return;
    mounts_below(real, &below_open, &unbindable);
    if ((sv.f_flag & (ST_NOSUID | ST_NODEV)) == (ST_NOSUID | ST_NODEV) && !below_open)
        return;
    if (!leave && unbindable)
        leave = "an unbindable mount below it, which a cover would hide";
    if (!(why = cover(dir, leave, buf, sizeof(buf)))) {
        tyd_log("%s %s: covered it with a nosuid,nodev mount of its own, which stays when "
                "trainyardd stops (a container job's set-user-ID program or device node there "
                "would work as root on this host; docs/security.md)",
                what,
                dir);
        return;
    }
    tyd_log("warning: %s %s is on a mount without nosuid and nodev, and is left so (%s): a "
            "container job (root in its container) can leave a set-user-ID program or a "
            "device node there that works as root on this host; mount it nosuid,nodev "
            "(docs/security.md)",
            what,
            dir,
            why);
}

void tyd_secure_mounts(const struct tyd *d)
{
    /* Only a container job writes there as root: a process job runs as its project's user
     * (or as root only by --allow-root-jobs, root already). The slurm runtime's image
     * replicas do too, on its nodes: warned about, since this host may be one of them. */
    bool slurm = strcmp(d->runtime, "slurm") == 0;
    const char *leave = slurm ? "the slurm runtime: its nodes mount it for image replicas"
                        : d->leave_mounts ? "--leave-mounts"
                                          : NULL;

    if (geteuid() != 0 || (strcmp(d->runtime, "container") != 0 && !slurm))
        return;
    for (size_t i = 0; d->job_dir_roots && d->job_dir_roots[i]; i++)
        secure_mount("--job-dir-root", tyd_jobdir_root_dir(d->job_dir_roots[i]), leave);
    if (!slurm)
        secure_mount("the state directory (its trials' metric directories)", d->state_dir, leave);
}
