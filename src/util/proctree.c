/* SPDX-License-Identifier: Apache-2.0
 * proctree.c: /proc walking for replica clean-up (see proctree.h). */
#include "proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"
#include "parse.h"

struct pinfo {
    pid_t pid, ppid;
    char state;
};

/* The owned pids: an open-addressing hash set (0 empty, -1 a removed entry), so that
 * reaping orphans after each of 1,000 replicas' exits does not scan a list of 1,000 for
 * each child (quadratic). */
static pid_t *owned;
static size_t n_owned, n_used, cap_owned; /* live entries, live + removed, slots (2^k) */

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

static size_t slot_of(pid_t pid)
{
    return ((size_t)pid * 2654435761u) & (cap_owned - 1);
}

/* The slot holding @pid, or cap_owned when it is not in the set. */
static size_t find_owned(pid_t pid)
{
    for (size_t i = cap_owned ? slot_of(pid) : 0, k = 0; k < cap_owned;
         k++, i = (i + 1) & (cap_owned - 1)) {
        if (owned[i] == pid)
            return i;
        if (owned[i] == 0)
            break;
    }
    return cap_owned;
}

static void insert_owned(pid_t pid)
{
    size_t i = slot_of(pid);
    while (owned[i] > 0)
        i = (i + 1) & (cap_owned - 1);
    if (owned[i] == 0)
        n_used++;
    owned[i] = pid;
    n_owned++;
}

void ty_proctree_own(pid_t pid)
{
    if (pid <= 0 || find_owned(pid) < cap_owned)
        return;
    if ((n_used + 1) * 2 > cap_owned) { /* grow (or just drop the removed entries) */
        pid_t *old = owned;
        size_t old_cap = cap_owned;
        cap_owned = cap_owned ? cap_owned : 64;
        while ((n_owned + 1) * 4 > cap_owned)
            cap_owned *= 2;
        owned = xcalloc(cap_owned, sizeof(pid_t));
        n_owned = n_used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i] > 0)
                insert_owned(old[i]);
        free(old);
    }
    insert_owned(pid);
}

void ty_proctree_disown(pid_t pid)
{
    size_t i = pid > 0 ? find_owned(pid) : cap_owned;

    if (i < cap_owned) {
        owned[i] = -1;
        n_owned--;
    }
}

static bool is_owned(pid_t pid)
{
    return pid > 0 && find_owned(pid) < cap_owned;
}

/* Read pid, ppid and state from /proc/<pid>/stat. The comm field may hold spaces and
 * parentheses, so parse from the last ')'. */
static bool read_stat(pid_t pid, struct pinfo *pi)
{
    char path[64], buf[512];
    _cleanup_close_ int fd = -EBADF;
    ssize_t n;
    char *p;

    (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
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

/* Append the children of @pid (all its threads) to *v, via /proc/<pid>/task/<tid>/children
 * (Linux >= 3.5 with CONFIG_PROC_CHILDREN, as every distribution kernel has). Cost is
 * proportional to the job's processes, not to the machine's. */
static void children_of(pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
    char path[64];
    DIR *d;
    struct dirent *de;

    (void)snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (!d)
        return;
    while ((de = readdir(d))) {
        char cpath[320];
        _cleanup_fclose_ FILE *f = NULL;
        long c;
        if (de->d_name[0] == '.')
            continue;
        (void)snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid, de->d_name);
        f = fopen(cpath, "re");
        if (!f)
            continue;
        while (fscanf(f, "%ld", &c) == 1) {
            if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 64;
                *v = xreallocarray(*v, *cap, sizeof(pid_t));
            }
            (*v)[(*n)++] = (pid_t)c;
        }
    }
    closedir(d);
}

static bool is_zombie(pid_t pid)
{
    struct pinfo pi;
    return !read_stat(pid, &pi) || pi.state == 'Z' || pi.state == 'X';
}

bool ty_proc_env_has(pid_t pid, const char *name, const char *value)
{
    char path[64];
    _cleanup_free_ char *want = xasprintf("%s=%s", name, value ? value : "");
    size_t n = strlen(want);
    _cleanup_fclose_ FILE *f = NULL;
    char *entry = NULL;
    size_t cap = 0;
    bool found = false;

    (void)snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return false;
    /* Entry by entry to the end of the file: no size limit to miss an entry past. */
    while (getdelim(&entry, &cap, '\0', f) > 0) {
        if (value ? strcmp(entry, want) == 0 : strncmp(entry, want, n) == 0) {
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
    pid_t *queue = NULL, *mine = NULL, *out = NULL;
    size_t nq = 0, capq = 0, nm = 0, capm = 0, nout = 0;

    for (size_t i = 0; i < n; i++)
        if (roots[i] > 0)
            children_of(roots[i], &queue, &nq, &capq);
    if (token) {
        /* Orphans re-parented to us (we are their subreaper) that carry the run's token. */
        children_of(getpid(), &mine, &nm, &capm);
        for (size_t i = 0; i < nm; i++) {
            if (is_owned(mine[i]) || contains(roots, n, mine[i]) || contains(queue, nq, mine[i]))
                continue;
            if (!ty_proc_env_has(mine[i], TY_RUN_TOKEN_ENV, token))
                continue;
            if (nq == capq) {
                capq = capq ? capq * 2 : 64;
                queue = xreallocarray(queue, capq, sizeof(pid_t));
            }
            queue[nq++] = mine[i];
        }
        free(mine);
    }
    /* Breadth-first over the children lists; the queue doubles as the result. */
    for (size_t i = 0; i < nq; i++)
        children_of(queue[i], &queue, &nq, &capq);
    out = xcalloc(nq + 1, sizeof(pid_t));
    for (size_t i = 0; i < nq; i++)
        if (!contains(out, nout, queue[i]) && !is_zombie(queue[i]))
            out[nout++] = queue[i];
    free(queue);
    *ret = out;
    return nout;
}

size_t ty_proctree_outside_group(
    pid_t group, const pid_t *a, size_t na, const pid_t *b, size_t nb, pid_t **ret)
{
    pid_t *out = NULL;
    size_t n = 0;

    for (size_t i = 0; i < na + nb; i++) {
        pid_t pid = i < na ? a[i] : b[i - na];
        bool skip = pid <= 0 || pid == group || getpgid(pid) == group;
        for (size_t k = 0; k < n && !skip; k++)
            skip = out[k] == pid;
        if (skip)
            continue;
        out = xreallocarray(out, n + 1, sizeof(pid_t));
        out[n++] = pid;
    }
    *ret = out;
    return n;
}

void ty_proctree_kill(const pid_t *pids, size_t n, int sig)
{
    for (size_t i = 0; i < n; i++)
        (void)kill(pids[i], sig);
}

pid_t ty_proctree_first_zombie(void)
{
    siginfo_t si = {0};

    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return 0;
    return si.si_pid;
}

int ty_proctree_reap_orphans(void)
{
    pid_t *kids = NULL;
    size_t n = 0, cap = 0;
    int reaped = 0;

    /* Ask the kernel first which child is a zombie, without reaping it (WNOWAIT): none (the
     * common case, after a replica's exit) needs no /proc, and one no one owns is reaped by
     * its pid. Only an owned zombie, waited for by its owner later, hides the others: then
     * list the children. (Listing them after every exit of 1,000 replicas was quadratic.) */
    for (;;) {
        pid_t z = ty_proctree_first_zombie();
        if (z <= 0)
            return reaped;
        if (is_owned(z) || waitpid(z, NULL, WNOHANG) <= 0)
            break;
        reaped++;
    }
    children_of(getpid(), &kids, &n, &cap);
    for (size_t i = 0; i < n; i++) {
        if (is_owned(kids[i]) || !is_zombie(kids[i]))
            continue;
        if (waitpid(kids[i], NULL, WNOHANG) > 0)
            reaped++;
    }
    free(kids);
    return reaped;
}

/* Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. */
unsigned long long ty_proc_start_time(pid_t pid)
{
    char path[64], buf[1024];
    _cleanup_close_ int fd = -EBADF;
    unsigned long long t = 0;
    ssize_t n;
    char *p;

    (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p)
        return 0;
    /* after ")": state is field 3 ... starttime field 22: move to the space before it */
    for (int field = 3; p && field <= 22; field++)
        p = strchr(p + 1, ' ');
    if (p)
        t = strtoull(p + 1, NULL, 10);
    return t;
}

/* Does process @pid's environment have an entry named in @names (NULL-terminated; NULL)? */
static bool env_has_any(pid_t pid, const char *const *names)
{
    for (size_t i = 0; names && names[i]; i++)
        if (ty_proc_env_has(pid, names[i], NULL))
            return true;
    return false;
}

int ty_proc_kill_by_env(const char *name, const char *value, const char *const *unless)
{
    DIR *dir = opendir("/proc");
    struct dirent *de;
    int killed = 0;

    if (!dir)
        return 0;
    while ((de = readdir(dir))) {
        int64_t pid;

        if (ty_parse_int64(de->d_name, 2, INT32_MAX, &pid) < 0 || pid == getpid())
            continue; /* not a process (".", "self", ...), init, or ourselves */
        if (!ty_proc_env_has((pid_t)pid, name, value) || env_has_any((pid_t)pid, unless))
            continue;
        if (kill((pid_t)pid, SIGKILL) == 0)
            killed++;
    }
    closedir(dir);
    return killed;
}
