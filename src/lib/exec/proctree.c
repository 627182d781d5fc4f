/* SPDX-License-Identifier: Apache-2.0
 * proctree.c: /proc walking for replica clean-up (see proctree.h). */
#include "proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"

struct pinfo {
    pid_t pid, ppid;
    char state;
};

static pid_t *owned;
static size_t n_owned, cap_owned;

int ty_proctree_become_subreaper(void)
{
    static bool done;
    if (done)
        return 0;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return ty_negerrno();
    done = true;
    return 0;
}

void ty_proctree_own(pid_t pid)
{
    if (n_owned == cap_owned) {
        cap_owned = cap_owned ? cap_owned * 2 : 32;
        owned = xreallocarray(owned, cap_owned, sizeof(pid_t));
    }
    owned[n_owned++] = pid;
}

void ty_proctree_disown(pid_t pid)
{
    for (size_t i = 0; i < n_owned; i++) {
        if (owned[i] == pid) {
            owned[i] = owned[--n_owned];
            return;
        }
    }
}

static bool is_owned(pid_t pid)
{
    for (size_t i = 0; i < n_owned; i++)
        if (owned[i] == pid)
            return true;
    return false;
}

/* Read pid, ppid and state from /proc/<pid>/stat. The comm field may hold spaces and
 * parentheses, so parse from the last ')'. */
static bool read_stat(pid_t pid, struct pinfo *pi)
{
    char path[64], buf[512];
    _cleanup_close_ int fd = -EBADF;
    ssize_t n;
    char *p;

    (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c %d", &pi->state, &pi->ppid) != 2)
        return false;
    pi->pid = pid;
    return true;
}

static size_t snapshot(struct pinfo **ret)
{
    DIR *d = opendir("/proc");
    struct pinfo *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;

    if (!d) {
        *ret = NULL;
        return 0;
    }
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        struct pinfo pi;
        if (*end || pid <= 0 || !read_stat((pid_t) pid, &pi))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            v = xreallocarray(v, cap, sizeof(*v));
        }
        v[n++] = pi;
    }
    closedir(d);
    *ret = v;
    return n;
}

static bool env_has_token(pid_t pid, const char *token)
{
    char path[64];
    _cleanup_free_ char *want = xasprintf("%s=%s", TY_RUN_TOKEN_ENV, token);
    _cleanup_fclose_ FILE *f = NULL;
    char *entry = NULL;
    size_t cap = 0;
    bool found = false;

    (void) snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
    f = fopen(path, "re");
    if (!f)
        return false;
    while (getdelim(&entry, &cap, '\0', f) > 0) {
        if (strcmp(entry, want) == 0) {
            found = true;
            break;
        }
    }
    free(entry);
    return found;
}

static bool contains(const pid_t *v, size_t n, pid_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == pid)
            return true;
    return false;
}

size_t ty_proctree_collect(const pid_t *roots, size_t n, const char *token, pid_t **ret)
{
    struct pinfo *all = NULL;
    size_t na = snapshot(&all);
    pid_t *set = NULL, *out = NULL;
    size_t ns = 0, nout = 0;
    pid_t self = getpid();
    bool grew = true;

    set = xcalloc(na + n + 1, sizeof(pid_t));
    out = xcalloc(na + 1, sizeof(pid_t));
    for (size_t i = 0; i < n; i++)
        if (roots[i] > 0)
            set[ns++] = roots[i];
    for (size_t i = 0; i < na; i++) {
        if (all[i].ppid == self && all[i].state != 'Z' && !contains(set, ns, all[i].pid) &&
            !is_owned(all[i].pid) && token && env_has_token(all[i].pid, token)) {
            set[ns++] = all[i].pid;
            out[nout++] = all[i].pid;
        }
    }
    /* Transitive closure over parent links; the table is small (one machine's processes). */
    while (grew) {
        grew = false;
        for (size_t i = 0; i < na; i++) {
            if (all[i].state == 'Z' || contains(set, ns, all[i].pid))
                continue;
            if (contains(set, ns, all[i].ppid)) {
                set[ns++] = all[i].pid;
                out[nout++] = all[i].pid;
                grew = true;
            }
        }
    }
    free(set);
    free(all);
    *ret = out;
    return nout;
}

void ty_proctree_kill(const pid_t *pids, size_t n, int sig)
{
    for (size_t i = 0; i < n; i++)
        (void) kill(pids[i], sig);
}

int ty_proctree_reap_orphans(void)
{
    struct pinfo *all = NULL;
    size_t na = snapshot(&all);
    pid_t self = getpid();
    int reaped = 0;

    for (size_t i = 0; i < na; i++) {
        if (all[i].ppid != self || all[i].state != 'Z' || is_owned(all[i].pid))
            continue;
        if (waitpid(all[i].pid, NULL, WNOHANG) > 0)
            reaped++;
    }
    free(all);
    return reaped;
}
