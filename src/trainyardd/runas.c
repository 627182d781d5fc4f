/* SPDX-License-Identifier: Apache-2.0
 * runas.c: who runs a project's jobs. When trainyardd runs as root, the replicas of a
 * `process`-runtime job run as the unprivileged user the operator names for the job's project
 * (--project-user=PROJECT:USER, one `project-user = PROJECT:USER` line per project in the
 * config file, '*' as PROJECT for every project without a line of its own). Such a job of a
 * project with no user, or whose user is root, is refused at create unless trainyardd was
 * started with --allow-root-jobs; then it runs as root, as trainyardd does. A slurm job runs
 * as trainyardd's user (srun asks for its allocation), so under a root trainyardd it too needs
 * --allow-root-jobs. The container runtime is not concerned (its isolation is the engine's:
 * docs/security.md), and a trainyardd that is not root runs every job as its own user. The
 * supervisor of a job with a user gets `--run-as=USER` and its process runtime switches to
 * that user before it runs a replica. */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "daemon.h"
#include "macro.h"
#include "route.h"

/* The one runtime whose replicas are programs of the daemon's machine run by its supervisor:
 * the one that runs them as the project's user. */
#define PROCESS_RUNTIME "process"
/* The runtime whose replicas are isolated by the container engine (their user is the image's,
 * inside the container): who submits them does not matter. Any other runtime (slurm) runs its
 * replicas as the daemon's user, without a switch. */
#define CONTAINER_RUNTIME "container"
/* getpwnam_r's buffer: _SC_GETPW_R_SIZE_MAX is often 1 KiB; 16 KiB holds any real entry. */
#define PW_BUF 16384

struct runas_entry {
    char *project; /* "*": every project without an entry of its own */
    char *user;
    uid_t uid;
};

struct tyd_runas {
    struct runas_entry *e;
    size_t n;
};

void tyd_runas_free(struct tyd_runas *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].project);
        free(m->e[i].user);
    }
    free(m->e);
    free(m);
}

/* Look up @user in the user database. Returns 0 and *uid, -ENOENT when there is no such
 * user, another -errno when the database cannot be read. */
static int user_uid(const char *user, uid_t *uid)
{
    struct passwd pw, *res = NULL;
    char *buf = xmalloc(PW_BUF);
    int r = getpwnam_r(user, &pw, buf, PW_BUF, &res);

    if (r == 0 && res)
        *uid = res->pw_uid;
    free(buf);
    if (r != 0)
        return -r;
    return res ? 0 : -ENOENT;
}

/* A user name as useradd takes it: letters, digits, '_', '-', '.', not starting with '-',
 * at most 32 characters (and a trailing '$' for machine accounts). */
static bool valid_user_name(const char *u)
{
    size_t n = strlen(u);

    if (n == 0 || n > 32 || u[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = u[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || (c == '$' && i == n - 1)))
            return false;
    }
    return true;
}

int tyd_runas_add(struct tyd_runas **m, const char *spec, const char *where, struct ty_error *err)
{
    const char *colon = strrchr(spec, ':');
    _cleanup_free_ char *project = NULL;
    const char *user;
    struct tyd_runas *map;
    uid_t uid = 0;
    int r;

    /* A project id may hold ':' (domain-scoped ids): the user follows the last one. */
    if (!colon || colon == spec || !colon[1])
        return ty_error_set(err,
                            EINVAL,
                            "%s: expected PROJECT:USER ('*' as PROJECT for every project), "
                            "got '%s'",
                            where,
                            spec);
    project = xstrndup(spec, (size_t)(colon - spec));
    user = colon + 1;
    if (strcmp(project, "*") != 0 && !ty_project_id_ok(project, strlen(project)))
        return ty_error_set(err,
                            EINVAL,
                            "%s: invalid project id '%.64s': " TY_PROJECT_ID_RULE
                            ", or '*' for every project",
                            where,
                            project);
    if (!valid_user_name(user))
        return ty_error_set(err, EINVAL, "%s: invalid user name '%.64s'", where, user);
    r = user_uid(user, &uid);
    if (r == -ENOENT)
        return ty_error_set(
            err, ENOENT, "%s: unknown user '%s' (no such user on this machine)", where, user);
    if (r < 0)
        return ty_error_set(err, -r, "%s: cannot look up user '%s': %s", where, user, strerror(-r));
    if (!*m)
        *m = xcalloc(1, sizeof(**m));
    map = *m;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->e[i].project, project) == 0) { /* a later line replaces */
            free(map->e[i].user);
            map->e[i].user = xstrdup(user);
            map->e[i].uid = uid;
            return 0;
        }
    map->e = xreallocarray(map->e, map->n + 1, sizeof(*map->e));
    map->e[map->n++] = (struct runas_entry){xstrdup(project), xstrdup(user), uid};
    return 0;
}

/* The entry for @project: its own, else '*', else NULL. */
static const struct runas_entry *find(const struct tyd_runas *m, const char *project)
{
    const struct runas_entry *any = NULL;

    for (size_t i = 0; m && i < m->n; i++) {
        if (strcmp(m->e[i].project, project) == 0)
            return &m->e[i];
        if (strcmp(m->e[i].project, "*") == 0)
            any = &m->e[i];
    }
    return any;
}

enum tyd_runas_kind tyd_runas_decide(const struct tyd_runas *m,
                                     uid_t euid,
                                     bool allow_root,
                                     const char *project,
                                     const char *runtime,
                                     const char **user,
                                     char *why,
                                     size_t whylen)
{
    const struct runas_entry *e;

    *user = NULL;
    if (whylen)
        why[0] = '\0';
    if (!runtime || euid != 0 || strcmp(runtime, CONTAINER_RUNTIME) == 0)
        return TYD_RUNAS_DAEMON;
    if (strcmp(runtime, PROCESS_RUNTIME) != 0) {
        /* The slurm runtime asks for its allocation with srun as trainyardd's user: its tasks run
         * as root. */
        if (allow_root)
            return TYD_RUNAS_DAEMON;
        (void)snprintf(why,
                       whylen,
                       "this trainyardd runs as root and %s-runtime jobs run as its user: they "
                       "are not run as root unless trainyardd is started with --allow-root-jobs "
                       "(allow-root-jobs = true in its config file), or run trainyardd as an "
                       "unprivileged user",
                       runtime);
        return TYD_RUNAS_REFUSED;
    }
    e = find(m, project);
    if (e && e->uid != 0) {
        *user = e->user;
        return TYD_RUNAS_USER;
    }
    if (allow_root)
        return TYD_RUNAS_DAEMON;
    if (e)
        (void)snprintf(why,
                       whylen,
                       "this trainyardd runs as root and project-user maps project '%s' to "
                       "'%s', which is root (uid 0): process-runtime jobs are not run as root "
                       "unless trainyardd is started with --allow-root-jobs (allow-root-jobs = "
                       "true in its config file); name an unprivileged user with "
                       "--project-user=%s:USER",
                       project,
                       e->user,
                       project);
    else
        (void)snprintf(why,
                       whylen,
                       "this trainyardd runs as root and no project-user is set for project "
                       "'%s': process-runtime jobs run as the project's user, named with "
                       "--project-user=%s:USER (project-user = %s:USER in the config file; "
                       "'*' for every project), and as root only when trainyardd is started "
                       "with --allow-root-jobs (allow-root-jobs = true)",
                       project,
                       project,
                       project);
    return TYD_RUNAS_REFUSED;
}

int tyd_runas_supervisor_arg(
    const struct tyd *d, const char *project, const char *runtime, char *buf, size_t len)
{
    const char *user = NULL;

    switch (tyd_runas_decide(
        d->runas, geteuid(), d->allow_root_jobs, project, runtime, &user, buf, len)) {
    case TYD_RUNAS_USER:
        (void)snprintf(buf, len, "--run-as=%s", user);
        return 1;
    case TYD_RUNAS_REFUSED:
        return -1;
    case TYD_RUNAS_DAEMON:
    default:
        return 0;
    }
}

/* The first directory on the way to @dir (resolved) that @user may not search, in @buf;
 * false when every one can be (or @dir cannot be resolved, or @user is unknown). */
static bool closed_to(const char *dir, const char *user, char *buf, size_t len)
{
    struct passwd *pw = getpwnam(user);
    gid_t groups[256];
    int ng = (int)TY_ARRAY_SIZE(groups);
    char real[PATH_MAX];

    if (!pw || !realpath(dir, real) || getgrouplist(user, pw->pw_gid, groups, &ng) < 0)
        return false;
    for (char *end = real;; end = strchr(end + 1, '/')) {
        char c = end ? *end : '\0';
        struct stat st;
        bool in_group = false;
        mode_t bit;

        if (end && end != real)
            *end = '\0';
        if (stat(end == real ? "/" : real, &st) == 0) {
            for (int g = 0; g < ng && !in_group; g++)
                in_group = groups[g] == st.st_gid;
            bit = st.st_uid == pw->pw_uid ? S_IXUSR : in_group ? S_IXGRP : S_IXOTH;
            if (!(st.st_mode & bit)) {
                (void)snprintf(buf, len, "%s", end == real ? "/" : real);
                return true;
            }
        }
        if (!end || !c)
            return false;
        *end = c;
    }
}

void tyd_runas_log_start(const struct tyd *d)
{
    const struct tyd_runas *m = d->runas;

    if (geteuid() != 0) {
        if (m && m->n)
            tyd_log("project-user is ignored: trainyardd does not run as root, so every job "
                    "runs as its own user");
        return;
    }
    for (size_t i = 0; m && i < m->n; i++)
        tyd_log("process-runtime jobs of %s%s%s run as %s (uid %u)%s",
                strcmp(m->e[i].project, "*") == 0 ? "every other project" : "project '",
                strcmp(m->e[i].project, "*") == 0 ? "" : m->e[i].project,
                strcmp(m->e[i].project, "*") == 0 ? "" : "'",
                m->e[i].user,
                (unsigned)m->e[i].uid,
                m->e[i].uid == 0 && !d->allow_root_jobs ? ": refused, root needs --allow-root-jobs"
                                                        : "");
    for (size_t i = 0; m && i < m->n; i++) {
        char closed[PATH_MAX];
        if (m->e[i].uid == 0 || !closed_to(d->state_dir, m->e[i].user, closed, sizeof(closed)))
            continue;
        tyd_log("warning: the state directory %s is out of reach of project-user %s (%s is "
                "not searchable by it): its tuning trials cannot reach their metric "
                "directories there, and fail; make the directories on the way searchable "
                "(0711 lets nobody list or read the jobs; docs/security.md)",
                d->state_dir,
                m->e[i].user,
                closed);
        break; /* one is enough to say it */
    }
    if (d->allow_root_jobs)
        tyd_log("--allow-root-jobs: process-runtime jobs of projects without an unprivileged "
                "project-user run as root");
    else if (!find(m, "*"))
        tyd_log("process-runtime jobs of projects without a project-user are refused "
                "(trainyardd runs as root; see --project-user and --allow-root-jobs)");
}
