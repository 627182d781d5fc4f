/* SPDX-License-Identifier: Apache-2.0
 * cgroup.c: control groups for a job's processes, v1 and v2 (see cgroup.h). The hierarchies
 * are found in /proc/self/mountinfo and this process's own cgroups in /proc/self/cgroup. */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "macro.h"

/* How many times a v1 freeze is looked at (without sleeping) before the kill goes ahead
 * anyway; a process that forks meanwhile is caught by the caller's next pass. */
#define FREEZE_POLLS 2000

struct ty_cgroup {
    int version;
    size_t n;
    char *dir[TY_CGROUP_MAX_DIRS];
    const char *ctrl[TY_CGROUP_MAX_DIRS]; /* v1 controller of each dir; v2: "" */
    bool fresh; /* every directory was made by this process (none existed) */
};

/* v1 hierarchies used, the freezer first (it lists and freezes every process). No pids
 * hierarchy: no limit is set there, and each directory is a mkdir, an rmdir and a tasks
 * write per replica. */
static const char *const v1_ctrls[] = {"freezer", "memory", "cpu"};

/* ---- small file helpers ------------------------------------------------------------------ */

static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n;
    int e;

    if (fd < 0)
        return -errno;
    n = write(fd, s, strlen(s));
    e = errno;
    close(fd);
    return n < 0 ? -e : 0;
}

static int write_at(const char *dir, const char *file, const char *s)
{
    _cleanup_free_ char *p = xasprintf("%s/%s", dir, file);
    return write_str(p, s);
}

/* Read a small file (at most @size - 1 bytes) NUL-terminated into @buf. Returns 0 or -errno. */
static int read_small(const char *dir, const char *file, char *buf, size_t size)
{
    _cleanup_free_ char *p = xasprintf("%s/%s", dir, file);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    size_t len = 0;

    if (fd < 0)
        return -errno;
    while (len + 1 < size) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return 0;
}

static bool file_exists(const char *dir, const char *file)
{
    _cleanup_free_ char *p = xasprintf("%s/%s", dir, file);
    return access(p, F_OK) == 0;
}

/* The value of the line "@key N" of a flat-keyed file, or -1. */
static int64_t keyed_value(const char *dir, const char *file, const char *key)
{
    char buf[4096];
    size_t kl = strlen(key);

    if (read_small(dir, file, buf, sizeof(buf)) < 0)
        return -1;
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
            return strtoll(line + kl + 1, NULL, 10);
    return -1;
}

/* Is @tok one of the comma-separated words of @list? */
static bool has_word(const char *list, const char *tok, size_t toklen)
{
    size_t tl = toklen ? toklen : strlen(tok);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == tl && strncmp(p, tok, tl) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

/* ---- finding this process's cgroups ------------------------------------------------------ */

/* What this process's cgroups are found from, each read once per ty_cgroup_new (a job
 * looks in up to four hierarchies). */
struct self_files {
    char *mountinfo; /* /proc/self/mountinfo */
    char *cgroup;    /* /proc/self/cgroup */
};

/* The whole of a /proc file, NUL-terminated; NULL when it cannot be read. Caller frees. */
static char *read_proc(const char *path)
{
    char *buf = NULL;
    size_t len;

    return ty_read_file(path, 1 << 20, &buf, &len, NULL) < 0 ? NULL : buf;
}

/* Copy the line at *@cur (without its newline, cut to @size - 1) into @line and move *@cur
 * past it. Returns false at the end of the text. */
static bool next_line(const char **cur, char *line, size_t size)
{
    const char *p = *cur, *nl;
    size_t l;

    if (!p || !*p)
        return false;
    nl = strchr(p, '\n');
    l = nl ? (size_t)(nl - p) : strlen(p);
    memcpy(line, p, l < size ? l : size - 1);
    line[l < size ? l : size - 1] = '\0';
    *cur = nl ? nl + 1 : p + l;
    return true;
}

/* The mount point of the cgroup hierarchy with @ctrl (v1) or of cgroup2 (@ctrl NULL), and
 * its root, from @self's mountinfo; caller frees. Returns false when none is mounted. */
static bool find_mount(const struct self_files *self, const char *ctrl, char **mnt, char **root)
{
    const char *cur = self->mountinfo;
    char line[4096];
    bool found = false;

    while (!found && next_line(&cur, line, sizeof(line))) {
        char *f_root, *f_mnt, *dash, *save = NULL, *fstype, *super;
        (void)strtok_r(line, " ", &save); /* id */
        (void)strtok_r(NULL, " ", &save); /* parent */
        (void)strtok_r(NULL, " ", &save); /* dev */
        f_root = strtok_r(NULL, " ", &save);
        f_mnt = strtok_r(NULL, " ", &save);
        dash = strstr(save ? save : "", " - ");
        if (!f_root || !f_mnt || !dash)
            continue;
        save = NULL;
        fstype = strtok_r(dash + 3, " ", &save);
        (void)strtok_r(NULL, " ", &save); /* source */
        super = strtok_r(NULL, " \n", &save);
        if (!fstype || !super)
            continue;
        if (ctrl ? (strcmp(fstype, "cgroup") == 0 && has_word(super, ctrl, 0))
                 : strcmp(fstype, "cgroup2") == 0) {
            *mnt = xstrdup(f_mnt);
            *root = xstrdup(f_root);
            found = true;
        }
    }
    return found;
}

/* This process's cgroup in the hierarchy of @ctrl (v1) or in cgroup2 (@ctrl NULL), as a
 * directory. Caller frees; NULL when not found. */
static char *own_dir(const struct self_files *self, const char *ctrl)
{
    _cleanup_free_ char *mnt = NULL, *root = NULL;
    const char *cur = self->cgroup;
    char line[4096];
    char *ret = NULL;

    if (!find_mount(self, ctrl, &mnt, &root))
        return NULL;
    while (!ret && next_line(&cur, line, sizeof(line))) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        const char *path;
        size_t rl = strlen(root);
        if (!c2)
            continue;
        *c2 = '\0'; /* c1 + 1: the hierarchy's controllers ("cpu,cpuacct"; v2: none) */
        if (ctrl ? !has_word(c1 + 1, ctrl, 0) : c2 != c1 + 1)
            continue;
        path = c2 + 1;
        if (strcmp(root, "/") != 0 && strncmp(path, root, rl) == 0)
            path += rl;
        ret = xasprintf("%s%s%s", mnt, *path == '/' ? "" : "/", strcmp(path, "/") ? path : "");
    }
    return ret;
}

/* ---- making ------------------------------------------------------------------------------ */

static struct ty_cgroup *cg_alloc(int version)
{
    struct ty_cgroup *cg = xcalloc(1, sizeof(*cg));
    cg->version = version;
    return cg;
}

static void enable_controllers(const char *dir)
{
    static const char *const want[] = {"+cpu", "+memory", "+pids"};
    for (size_t i = 0; i < TY_ARRAY_SIZE(want); i++)
        (void)write_at(dir, "cgroup.subtree_control", want[i]);
}

static bool valid_name(const char *name)
{
    return name && *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") &&
           strlen(name) < NAME_MAX;
}

/* Make @name below each of the @n @bases into a new cgroup of @version. */
static int make_below(int version,
                      char *const *bases,
                      const char *const *ctrls,
                      size_t n,
                      const char *name,
                      struct ty_cgroup **ret,
                      struct ty_error *err)
{
    struct ty_cgroup *cg;

    if (!valid_name(name))
        return ty_error_set(
            err, EINVAL, "cgroup name '%s': one path component is required", name ? name : "");
    cg = cg_alloc(version);
    cg->fresh = true;
    for (size_t i = 0; i < n; i++) {
        char *d = xasprintf("%s/%s", bases[i], name);
        int made = mkdir(d, 0755);
        if (made < 0 && errno == EEXIST)
            cg->fresh = false;
        if (made < 0 && errno != EEXIST) {
            int e = errno;
            (void)ty_error_set(err, e, "cannot make cgroup %s: %s", d, strerror(e));
            free(d);
            (void)ty_cgroup_remove(cg);
            ty_cgroup_free(cg);
            return -e;
        }
        cg->dir[cg->n] = d;
        cg->ctrl[cg->n++] = ctrls[i];
    }
    *ret = cg;
    return 0;
}

/* ty_cgroup_new's work once @self is read. */
static int new_from(const struct self_files *self,
                    const char *name,
                    struct ty_cgroup **ret,
                    struct ty_error *err)
{
    _cleanup_free_ char *v2 = own_dir(self, NULL);
    char *bases[TY_CGROUP_MAX_DIRS] = {0};
    const char *ctrls[TY_CGROUP_MAX_DIRS];
    char ctl[256] = "";
    size_t n = 0;
    int r;

    if (v2)
        (void)read_small(v2, "cgroup.controllers", ctl, sizeof(ctl));
    if (v2 && (strstr(ctl, "memory") || strstr(ctl, "cpu"))) {
        /* The cgroup trainyard runs in hands its controllers down (v2 allows that only when
         * it has no processes of its own: otherwise the job's cgroup has no limits). */
        enable_controllers(v2);
        r = make_below(2, &v2, (const char *const[]){""}, 1, name, ret, err);
        /* The job's cgroup hands them down to the replicas' in turn; a replica's, a leaf,
         * enables none (v2 refuses processes in a cgroup that has: EBUSY). */
        if (r >= 0)
            enable_controllers((*ret)->dir[0]);
        return r;
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(v1_ctrls); i++) {
        char *d = own_dir(self, v1_ctrls[i]);
        if (!d && i == 0)
            break; /* no freezer: v1 cannot end a cgroup reliably */
        if (d) {
            bases[n] = d;
            ctrls[n++] = v1_ctrls[i];
        }
    }
    if (n > 0)
        r = make_below(1, bases, ctrls, n, name, ret, err);
    else if (v2) /* no controllers (a hybrid host): nothing to enable */
        r = make_below(2, &v2, (const char *const[]){""}, 1, name, ret, err);
    else
        r = ty_error_set(err, ENOENT, "no cgroup filesystem with a freezer or cgroup2 is mounted");
    for (size_t i = 0; i < n; i++)
        free(bases[i]);
    return r;
}

int ty_cgroup_new(const char *name, struct ty_cgroup **ret, struct ty_error *err)
{
    struct self_files self = {read_proc("/proc/self/mountinfo"), read_proc("/proc/self/cgroup")};
    int r;

    if (!self.mountinfo || !self.cgroup)
        r = ty_error_set(err, ENOENT, "cannot read this process's cgroups from /proc/self");
    else
        r = new_from(&self, name, ret, err);
    free(self.mountinfo);
    free(self.cgroup);
    return r;
}

int ty_cgroup_new_child(const struct ty_cgroup *parent,
                        const char *name,
                        struct ty_cgroup **ret,
                        struct ty_error *err)
{
    return make_below(parent->version, parent->dir, parent->ctrl, parent->n, name, ret, err);
}

int ty_cgroup_version(const struct ty_cgroup *cg)
{
    return cg->version;
}

const char *ty_cgroup_path(const struct ty_cgroup *cg)
{
    return cg->dir[0];
}

const char *ty_cgroup_dir(const struct ty_cgroup *cg, const char *ctrl)
{
    if (cg->version == 2)
        return cg->dir[0];
    for (size_t i = 0; i < cg->n; i++)
        if (strcmp(cg->ctrl[i], ctrl) == 0)
            return cg->dir[i];
    return NULL;
}

size_t ty_cgroup_dirs(const struct ty_cgroup *cg,
                      const char *ctrls[TY_CGROUP_MAX_DIRS],
                      const char *dirs[TY_CGROUP_MAX_DIRS])
{
    for (size_t i = 0; i < cg->n; i++) {
        ctrls[i] = cg->ctrl[i];
        dirs[i] = cg->dir[i];
    }
    return cg->n;
}

/* The controller of this file named @name (so that a rebuilt cgroup points at the same
 * strings as a made one), or NULL. */
static const char *known_ctrl(const char *name)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(v1_ctrls); i++)
        if (strcmp(name, v1_ctrls[i]) == 0)
            return v1_ctrls[i];
    return NULL;
}

int ty_cgroup_from_dirs(int version,
                        const char *const *ctrls,
                        const char *const *dirs,
                        size_t n,
                        struct ty_cgroup **ret,
                        struct ty_error *err)
{
    struct ty_cgroup *cg;

    if ((version != 1 && version != 2) || n == 0 || n > TY_CGROUP_MAX_DIRS ||
        (version == 2 && (n != 1 || *ctrls[0])) ||
        (version == 1 && strcmp(ctrls[0], "freezer") != 0))
        return ty_error_set(err,
                            EINVAL,
                            "not a cgroup: version %d, %zu directories (v1: the freezer's "
                            "first; v2: one, of no controller)",
                            version,
                            n);
    for (size_t i = 0; i < n; i++)
        if (dirs[i][0] != '/' || (version == 1 && !known_ctrl(ctrls[i])))
            return ty_error_set(err,
                                EINVAL,
                                "not a cgroup directory: %s=%s (an absolute path and a "
                                "controller of freezer, memory, cpu are needed)",
                                ctrls[i],
                                dirs[i]);
    cg = cg_alloc(version);
    for (size_t i = 0; i < n; i++) {
        cg->dir[i] = xstrdup(dirs[i]);
        cg->ctrl[i] = version == 1 ? known_ctrl(ctrls[i]) : "";
    }
    cg->n = n;
    *ret = cg;
    return 0;
}

/* ---- limits ------------------------------------------------------------------------------ */

#define CPU_PERIOD_US 100000

/* Write @s to @file of @dir, a limit: ENOENT (the controller's file is not there) becomes
 * -EOPNOTSUPP with @err naming @what; another failure is its -errno. */
static int write_limit(const struct ty_cgroup *cg,
                       const char *dir,
                       const char *file,
                       const char *s,
                       const char *what,
                       struct ty_error *err)
{
    int r = dir ? write_at(dir, file, s) : -ENOENT;

    if (r == -ENOENT)
        return ty_error_set(err,
                            EOPNOTSUPP,
                            "no %s limit: the %s controller is not available to %s",
                            what,
                            strcmp(what, "CPU") == 0 ? "cpu" : "memory",
                            cg->dir[0]);
    if (r < 0)
        return ty_error_set(err, -r, "cannot set the %s limit of %s: %s", what, dir, strerror(-r));
    return 0;
}

/* The limits are written without looking for their files first (a missing file is a missing
 * controller: write_limit), and a v1 cgroup this process just made keeps the kernel's
 * default CFS period, which is CPU_PERIOD_US: at 1,000 replicas each system call counts. */
int ty_cgroup_set_limits(const struct ty_cgroup *cg,
                         int64_t cpu_millis,
                         int64_t mem_bytes,
                         struct ty_error *err)
{
    const char *cpu = ty_cgroup_dir(cg, "cpu"), *mem = ty_cgroup_dir(cg, "memory");
    char v[64];
    int r = 0;

    if (cpu_millis > 0) {
        long long quota = (long long)(cpu_millis * CPU_PERIOD_US / 1000);
        if (cg->version == 2) {
            (void)snprintf(v, sizeof(v), "%lld %d", quota, CPU_PERIOD_US);
            r = write_limit(cg, cpu, "cpu.max", v, "CPU", err);
        } else {
            (void)snprintf(v, sizeof(v), "%d", CPU_PERIOD_US);
            if (!cg->fresh)
                r = write_limit(cg, cpu, "cpu.cfs_period_us", v, "CPU", err);
            (void)snprintf(v, sizeof(v), "%lld", quota);
            if (r >= 0)
                r = write_limit(cg, cpu, "cpu.cfs_quota_us", v, "CPU", err);
        }
        if (r < 0)
            return r;
    }
    if (mem_bytes > 0) {
        (void)snprintf(v, sizeof(v), "%lld", (long long)mem_bytes);
        r = write_limit(
            cg, mem, cg->version == 2 ? "memory.max" : "memory.limit_in_bytes", v, "memory", err);
        if (r < 0)
            return r;
        /* Swap counts against the limit, as on a VM without swap (the file exists only when
         * the kernel accounts swap: ENOENT is no error). */
        r = cg->version == 1 ? write_at(mem, "memory.memsw.limit_in_bytes", v)
                             : write_at(mem, "memory.swap.max", "0");
        if (r < 0 && r != -ENOENT)
            return ty_error_set(
                err, -r, "cannot set the memory limit of %s: %s", mem, strerror(-r));
    }
    return 0;
}

int64_t ty_cgroup_oom_kills(const struct ty_cgroup *cg)
{
    const char *mem = ty_cgroup_dir(cg, "memory");
    if (!mem)
        return -1;
    return keyed_value(mem, cg->version == 2 ? "memory.events" : "memory.oom_control", "oom_kill");
}

/* ---- processes --------------------------------------------------------------------------- */

int ty_cgroup_open_procs(const struct ty_cgroup *cg,
                         int fds[TY_CGROUP_MAX_DIRS],
                         struct ty_error *err)
{
    /* v1: the tasks file, for one thread: the process about to enter is a new one of a
     * single thread, and a thread moving itself skips the lock that holds every thread
     * group still (cgroup_threadgroup_rwsem), whose writer waits for an RCU grace period
     * with cgroup_mutex held: 10-30 ms when launchers start replicas at once. (A kernel
     * without that skip, "cgroup: Optimize single thread migration", makes the write cost
     * what cgroup.procs does: nothing is lost.) */
    for (size_t i = 0; i < cg->n; i++) {
        _cleanup_free_ char *p =
            xasprintf("%s/%s", cg->dir[i], cg->version == 2 ? "cgroup.procs" : "tasks");
        fds[i] = open(p, O_WRONLY | O_CLOEXEC);
        if (fds[i] < 0) {
            int e = errno;
            for (size_t j = 0; j < i; j++)
                close(fds[j]);
            return ty_error_set(err, e, "cannot open %s: %s", p, strerror(e));
        }
    }
    return (int)cg->n;
}

int ty_cgroup_enter(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (write(fds[i], "0", 1) < 0)
            return -errno;
    return 0;
}

/* Call @fn(pid, @ctx) for every pid in @dir's cgroup.procs and in those of its descendants.
 * Returns the count. */
static size_t walk_pids(const char *dir, void (*fn)(pid_t pid, void *ctx), void *ctx)
{
    _cleanup_free_ char *p = xasprintf("%s/cgroup.procs", dir);
    size_t count = 0;
    FILE *f = fopen(p, "re");
    DIR *d;
    struct dirent *de;
    long pid;

    if (f) {
        while (fscanf(f, "%ld", &pid) == 1) {
            count++;
            if (fn && pid > 0)
                fn((pid_t)pid, ctx);
        }
        fclose(f);
    }
    d = opendir(dir);
    while (d && (de = readdir(d))) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        _cleanup_free_ char *sub = xasprintf("%s/%s", dir, de->d_name);
        count += walk_pids(sub, fn, ctx);
    }
    if (d)
        closedir(d);
    return count;
}

static void send_sig(pid_t pid, void *ctx)
{
    (void)kill(pid, *(const int *)ctx);
}

size_t ty_cgroup_signal(const struct ty_cgroup *cg, int sig)
{
    return walk_pids(cg->dir[0], send_sig, &sig);
}

struct pid_list {
    pid_t *v;
    size_t n, cap;
};

static void add_pid(pid_t pid, void *ctx)
{
    struct pid_list *l = ctx;

    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xreallocarray(l->v, l->cap, sizeof(pid_t));
    }
    l->v[l->n++] = pid;
}

size_t ty_cgroup_pids(const struct ty_cgroup *cg, pid_t **ret)
{
    struct pid_list l = {0};

    (void)walk_pids(cg->dir[0], add_pid, &l);
    *ret = l.v;
    return l.n;
}

bool ty_cgroup_populated(const struct ty_cgroup *cg)
{
    if (cg->version == 2) {
        int64_t v = keyed_value(cg->dir[0], "cgroup.events", "populated");
        if (v >= 0)
            return v > 0;
    }
    return walk_pids(cg->dir[0], NULL, NULL) > 0;
}

/* Freeze (@on) or thaw the cgroup; when freezing, look (without sleeping) until the kernel
 * says it is frozen, a bounded number of times. */
static void freeze(const struct ty_cgroup *cg, bool on)
{
    const char *file = cg->version == 2 ? "cgroup.freeze" : "freezer.state";
    char buf[64];

    if (write_at(cg->dir[0],
                 file,
                 cg->version == 2 ? (on ? "1" : "0") : (on ? "FROZEN" : "THAWED")) < 0 ||
        !on)
        return;
    for (int i = 0; i < FREEZE_POLLS; i++) {
        if (cg->version == 2 ? keyed_value(cg->dir[0], "cgroup.events", "frozen") == 1
                             : read_small(cg->dir[0], "freezer.state", buf, sizeof(buf)) == 0 &&
                                   strncmp(buf, "FROZEN", 6) == 0)
            return;
        (void)sched_yield();
    }
}

size_t ty_cgroup_kill(const struct ty_cgroup *cg)
{
    size_t n;

    if (cg->version == 2 && file_exists(cg->dir[0], "cgroup.kill")) {
        bool pop = ty_cgroup_populated(cg);
        if (pop)
            (void)write_at(cg->dir[0], "cgroup.kill", "1");
        return pop ? 1 : 0;
    }
    if (!ty_cgroup_populated(cg))
        return 0;
    freeze(cg, true);
    n = walk_pids(cg->dir[0], send_sig, &(int){SIGKILL});
    freeze(cg, false); /* SIGKILL takes effect once the processes run again */
    return n;
}

/* rmdir @dir's descendants, then @dir. */
static int remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int r = 0;

    if (!d)
        return errno == ENOENT ? 0 : -errno;
    while ((de = readdir(d))) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        _cleanup_free_ char *sub = xasprintf("%s/%s", dir, de->d_name);
        int r2 = remove_tree(sub);
        if (r2 < 0 && r == 0)
            r = r2;
    }
    closedir(d);
    if (rmdir(dir) < 0 && errno != ENOENT && r == 0)
        r = -errno;
    return r;
}

int ty_cgroup_remove(const struct ty_cgroup *cg)
{
    int r = 0;
    for (size_t i = 0; i < cg->n; i++) {
        /* A cgroup without child cgroups goes with one rmdir (its control files with it);
         * only one that has children (EBUSY) is listed and emptied first. */
        int r2 = rmdir(cg->dir[i]) == 0 || errno == ENOENT ? 0 : remove_tree(cg->dir[i]);
        if (r2 < 0 && r == 0)
            r = r2;
    }
    return r;
}

int ty_cgroup_remove_empty(const struct ty_cgroup *cg)
{
    for (size_t i = 0; i < cg->n; i++)
        if (rmdir(cg->dir[i]) < 0 && errno != ENOENT)
            return -errno;
    return 0;
}

size_t ty_cgroup_sweep_beside(const struct ty_cgroup *cg,
                              const char *prefix,
                              bool (*dead)(const char *name, void *ctx),
                              void *ctx,
                              int64_t min_age_s)
{
    size_t removed = 0, pl = strlen(prefix);
    time_t now = time(NULL);

    for (size_t i = 0; i < cg->n; i++) {
        _cleanup_free_ char *base = xstrdup(cg->dir[i]);
        char *slash = strrchr(base, '/');
        const char *own = slash ? slash + 1 : "";
        DIR *d;
        struct dirent *de;

        if (!slash || slash == base)
            continue;
        *slash = '\0';
        d = opendir(base);
        while (d && (de = readdir(d))) {
            struct stat st;
            if (de->d_type != DT_DIR || strncmp(de->d_name, prefix, pl) != 0 ||
                strcmp(de->d_name, own) == 0 || !dead(de->d_name, ctx))
                continue;
            _cleanup_free_ char *dir = xasprintf("%s/%s", base, de->d_name);
            /* Young: maybe a run (of another PID namespace) that has not entered it yet. The
             * directory's mtime: when it was made or a child cgroup was made or removed. */
            if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
                (int64_t)(now - st.st_mtime) < min_age_s)
                continue;
            /* A process anywhere below: its run is alive after all (another PID namespace's
             * pids), and its empty replica cgroups (one waiting to restart) stay with it. */
            if (walk_pids(dir, NULL, NULL) > 0)
                continue;
            if (remove_tree(dir) == 0 && i == 0)
                removed++;
        }
        if (d)
            closedir(d);
    }
    return removed;
}

bool ty_cgroup_is_new(const struct ty_cgroup *cg)
{
    return cg->fresh;
}

void ty_cgroup_free(struct ty_cgroup *cg)
{
    if (!cg)
        return;
    for (size_t i = 0; i < cg->n; i++)
        free(cg->dir[i]);
    free(cg);
}
