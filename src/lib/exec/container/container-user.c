/* SPDX-License-Identifier: Apache-2.0
 * container-user.c: the directories a run makes for its replicas (a local jobDir created for
 * it, a tuning trial's metric directory) belong to root; an image whose USER is another user
 * could not write its outputs there. A step of prepare (container-prepare.c), after the
 * images are present: inspect each distinct image for its Config.User, choose the user the
 * replicas run as (the master's when it is not root, else the first replica's that is not),
 * find its numeric uid (a name is looked up in the image's own /etc/passwd, read through a
 * container created for that and never started, trainyard-<hash>-probe: GET
 * /containers/NAME/archive), and give the directories to it. The image's content is untrusted
 * input: the archive and the passwd and group texts are parsed by the pure functions below
 * (fuzz/fuzz-engine-stream.c).
 *
 * It never fails the run: a user that cannot be found is the engine's to report at start,
 * and a directory that cannot be given is a warning in the job's log. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "container-internal.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"

#define USER_CALL_TIMEOUT_MS 30000L
/* /etc/passwd and /etc/group larger than this are not read (a name's line is not looked up
 * then: the directories stay root's). */
#define ACCOUNTS_MAX_BYTES (1 << 20)
/* The archive around it: headers (a pax header, the file's), padding, the end blocks. The
 * answer is cut off past both, as it arrives: an image's file is never buffered whole. */
#define ARCHIVE_SLACK_BYTES (64 << 10)

/* ---- the pure parsers ---- */

/* The value of the octal field @f (@n bytes: digits, maybe leading spaces, ended by a NUL or
 * space), or -1 when it is not one. */
static long long tar_octal(const char *f, size_t n)
{
    long long v = 0;
    size_t i = 0;
    bool any = false;

    while (i < n && f[i] == ' ')
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, any = true) {
        if (v > (LLONG_MAX >> 3))
            return -1;
        v = v * 8 + (f[i] - '0');
    }
    if (!any || (i < n && f[i] != '\0' && f[i] != ' '))
        return -1;
    return v;
}

int ctr_tar_first_file(const char *tar, size_t len, const char **data, size_t *n)
{
    size_t off = 0;

    while (len - off >= 512) {
        const char *h = tar + off;
        long long size;
        size_t blocks;
        bool zero = true;

        for (size_t i = 0; i < 512 && zero; i++)
            zero = h[i] == '\0';
        if (zero)
            return -ENOENT; /* the end-of-archive blocks */
        size = tar_octal(h + 124, 12);
        if (size < 0 || (unsigned long long)size > len - off - 512)
            return -EINVAL;
        if (h[156] == '0' || h[156] == '\0') { /* a regular file */
            *data = h + 512;
            *n = (size_t)size;
            return 0;
        }
        /* Skip a pax or GNU header (the next entry's attributes or long name) and any other
         * entry: a link, a directory. */
        blocks = ((size_t)size + 511) / 512;
        off += 512 + blocks * 512;
        if (off > len)
            return -EINVAL;
    }
    return off == len ? -ENOENT : -EINVAL;
}

/* A decimal id of at most 10 digits below 2^32 - 1 in [@p, @e) into *id. */
static bool parse_id(const char *p, const char *e, unsigned long *id)
{
    unsigned long long v = 0;

    if (p == e || e - p > 10)
        return false;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (v >= 0xffffffffULL)
        return false;
    *id = (unsigned long)v;
    return true;
}

/* Find the line of @text (@len bytes) whose first field is @name, and return its field
 * number @field (0-based) as an id. */
static bool
accounts_field(const char *text, size_t len, const char *name, int field, unsigned long *id)
{
    size_t nl = strlen(name);
    const char *p = text, *end = text + len;

    if (nl == 0)
        return false;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end, *f = p;
        if ((size_t)(le - p) > nl && memcmp(p, name, nl) == 0 && p[nl] == ':') {
            for (int i = 0; i < field && f; i++) {
                f = memchr(f, ':', (size_t)(le - f));
                f = f ? f + 1 : NULL;
            }
            if (f) {
                const char *fe = memchr(f, ':', (size_t)(le - f));
                return parse_id(f, fe ? fe : le, id);
            }
            return false;
        }
        p = eol ? eol + 1 : end;
    }
    return false;
}

bool ctr_passwd_lookup(
    const char *text, size_t len, const char *name, unsigned long *uid, unsigned long *gid)
{
    return accounts_field(text, len, name, 2, uid) && accounts_field(text, len, name, 3, gid);
}

bool ctr_group_lookup(const char *text, size_t len, const char *name, unsigned long *gid)
{
    return accounts_field(text, len, name, 2, gid);
}

void ctr_user_split(const char *value, char *user, size_t un, char *group, size_t gn)
{
    const char *colon = strchr(value ? value : "", ':');
    size_t ul = colon ? (size_t)(colon - value) : strlen(value ? value : "");

    (void)snprintf(user, un, "%.*s", (int)(ul < un ? ul : un - 1), value ? value : "");
    (void)snprintf(group, gn, "%s", colon ? colon + 1 : "");
}

bool ctr_user_is_root(const char *value)
{
    char user[256], group[256];
    unsigned long id;

    ctr_user_split(value, user, sizeof(user), group, sizeof(group));
    return user[0] == '\0' || strcmp(user, "root") == 0 ||
           (parse_id(user, user + strlen(user), &id) && id == 0);
}

/* ---- what was found, kept per process (a tuning job's trials use one image) ---- */

#define KEPT_USERS 32

static struct {
    char *key; /* "<image id> <Config.User>" */
    unsigned long uid, gid;
    bool gid_known;
} kept[KEPT_USERS];
static size_t kept_next;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static char *kept_key(const struct container_rt *c)
{
    const struct ctr_replica *cr = &c->reps[c->users.chosen];
    return xasprintf("%s %s", cr->image_id ? cr->image_id : "", cr->image_user);
}

static bool kept_find(struct container_rt *c)
{
    _cleanup_free_ char *key = kept_key(c);
    bool found = false;

    (void)pthread_mutex_lock(&kept_lock);
    for (size_t i = 0; i < KEPT_USERS && !found; i++)
        if (kept[i].key && strcmp(kept[i].key, key) == 0) {
            c->users.uid = kept[i].uid;
            c->users.gid = kept[i].gid;
            c->users.gid_known = kept[i].gid_known;
            c->users.uid_known = found = true;
        }
    (void)pthread_mutex_unlock(&kept_lock);
    return found;
}

static void kept_add(struct container_rt *c)
{
    size_t slot;

    (void)pthread_mutex_lock(&kept_lock);
    slot = kept_next++ % KEPT_USERS;
    free(kept[slot].key);
    kept[slot].key = kept_key(c);
    kept[slot].uid = c->users.uid;
    kept[slot].gid = c->users.gid;
    kept[slot].gid_known = c->users.gid_known;
    (void)pthread_mutex_unlock(&kept_lock);
}

/* ---- the steps, on the loop ---- */

static void inspect_next(struct container_rt *c);
static void read_next(struct container_rt *c);

static const char *chosen_image(const struct container_rt *c)
{
    return c->reps[c->users.chosen].r->image;
}

/* Open @dir without following a link (on the whole way from "/" when @no_links), give it to
 * the user, and say so; a warning when it cannot be. Returns whether it was given. */
static bool give_dir(struct container_rt *c, const char *what, const char *dir, bool no_links)
{
    struct ty_error e = {0};
    bool created;
    int fd, r = 0;

    fd = no_links ? ty_mkdir_nofollow(dir, 0755, &created, &e)
                  : open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        r = no_links ? fd : -errno;
    else if (fchown(fd, (uid_t)c->users.uid, c->users.gid_known ? (gid_t)c->users.gid : (gid_t)-1) <
             0)
        r = -errno;
    if (fd >= 0)
        close(fd);
    if (r < 0)
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "The %s %s could not be given to uid %lu, the user image %s runs as: "
                          "%s; its replicas may not be able to write there.",
                          what,
                          dir,
                          c->users.uid,
                          chosen_image(c),
                          no_links && fd < 0 ? ty_error_msg(&e) : strerror(-r));
    return r == 0;
}

/* The end of the step: the directories to the user when it was found, then prepare's next. */
static void finish(struct container_rt *c)
{
    const struct ty_cluster_plan *plan = c->base.plan;
    bool jd = false, md = false;

    if (c->users.uid_known) {
        if (plan->job_dir_made && ty_job_dir_is_local(plan->job_dir))
            jd = give_dir(c, "jobDir", plan->job_dir, plan->job_dir_no_links);
        if (plan->metric_dir)
            md = give_dir(c, "metric directory", plan->metric_dir, false);
        if (jd || md)
            ty_runtime_notice(&c->base,
                              TY_SEV_INFO,
                              "Gave %s%s%s%s to uid %lu ('%s', the user image %s runs as).",
                              jd ? "the jobDir " : "",
                              jd ? plan->job_dir : "",
                              jd && md ? " and " : "",
                              md ? "the trial's metric directory" : "",
                              c->users.uid,
                              c->reps[c->users.chosen].image_user,
                              chosen_image(c));
    }
    c->users.next(c);
}

static void
on_probe_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;

    /* Not removed: cleanup tries again (and the next run's garbage collection after it). */
    if (status == 204 || status == 200 || status == 404) {
        free(c->users.probe_id);
        c->users.probe_id = NULL;
    }
    finish(c);
}

static void remove_probe(struct container_rt *c)
{
    if (ctr_container_remove_start(c, &c->pcall, c->users.probe_id, on_probe_removed, c, NULL) < 0)
        finish(c);
}

/* Say that the image's user could not be looked up (@why), and go on without it. */
static void lookup_failed(struct container_rt *c, const char *why)
{
    ty_runtime_notice(&c->base,
                      TY_SEV_WARNING,
                      "Could not look up the user '%s' of image %s (%s): the jobDir and metric "
                      "directory stay root's.",
                      c->reps[c->users.chosen].image_user,
                      chosen_image(c),
                      why);
    c->users.uid_known = false;
    if (c->users.probe_id)
        remove_probe(c);
    else
        finish(c);
}

static void on_archive(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;
    const char *text;
    size_t n;
    char why[300];
    bool found;

    if (status != 200) {
        if (status)
            ty_docker_error_message(body, why, sizeof(why));
        lookup_failed(c, status ? why : error ? error : "no answer");
        return;
    }
    if (ctr_tar_first_file(body, len, &text, &n) < 0) {
        lookup_failed(c, "the engine's archive of it is not a plain file");
        return;
    }
    if (n > ACCOUNTS_MAX_BYTES) {
        lookup_failed(c, "the file is larger than 1 MiB");
        return;
    }
    if (c->users.step == 0) {
        unsigned long gid;
        found = ctr_passwd_lookup(text, n, c->users.user, &c->users.uid, &gid);
        c->users.uid_known = found;
        if (found && c->users.group[0] == '\0') { /* the user's own group */
            c->users.gid = gid;
            c->users.gid_known = true;
        }
    } else {
        found = ctr_group_lookup(text, n, c->users.group, &c->users.gid);
        c->users.gid_known = found;
    }
    if (!found) { /* the engine refuses to start it: its message says why */
        c->users.uid_known = false;
        remove_probe(c);
        return;
    }
    c->users.step++;
    read_next(c);
}

/* Read /etc/passwd for a user name, then /etc/group for a group name, from the probe. */
static void read_next(struct container_rt *c)
{
    _cleanup_free_ char *path = NULL;
    struct ty_error e = {0};

    if (c->users.step == 0 && c->users.uid_known)
        c->users.step = 1; /* a numeric user */
    if (c->users.step == 1 && (c->users.group[0] == '\0' || c->users.gid_known))
        c->users.step = 2; /* no group, or a numeric one */
    if (c->users.step == 2) {
        if (c->users.uid_known)
            kept_add(c);
        remove_probe(c);
        return;
    }
    path = xasprintf("/containers/%s/archive?path=%s",
                     c->users.probe_id,
                     c->users.step == 0 ? "/etc/passwd" : "/etc/group");
    if (ty_engine_call_start_capped(&c->pcall,
                                    c->eng.api,
                                    c->base.loop,
                                    "GET",
                                    path,
                                    USER_CALL_TIMEOUT_MS,
                                    ACCOUNTS_MAX_BYTES + ARCHIVE_SLACK_BYTES,
                                    on_archive,
                                    c,
                                    &e) < 0)
        lookup_failed(c, ty_error_msg(&e));
}

static void create_probe(struct container_rt *c);

/* A probe of this name that an attempt before left is gone: make ours. */
static void
on_stale_probe_removed(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;

    if (status == 204 || status == 200 || status == 404)
        create_probe(c);
    else
        lookup_failed(c, "a container of the probe's name is in the way");
}

static void
on_probe_created(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;
    char why[300];

    c->users.creating = false;
    if (c->users.remove_when_created) { /* the cleanup began meanwhile, and waits for this */
        c->users.remove_when_created = false;
        ctr_cleanup_probe_answered(c);
        return;
    }
    if (!c->preparing) /* aborted: the cleanup removes it by its name */
        return;
    /* 409: the name is taken, by a probe an attempt before of this run left (a retry keeps
     * the run's hash): removed, then made again, once. */
    if (status == 409 && !c->users.recreated) {
        c->users.recreated = true;
        if (ctr_container_remove_start(
                c, &c->pcall, c->users.probe_id, on_stale_probe_removed, c, NULL) < 0)
            lookup_failed(c, "a container of the probe's name is in the way");
        return;
    }
    if (status != 201 && status != 200) {
        if (status)
            ty_docker_error_message(body, why, sizeof(why));
        lookup_failed(c, status ? why : error ? error : "no answer");
        return;
    }
    c->users.step = 0;
    read_next(c);
}

/* A container of the image, never started, to read its accounts from. It has a name of the
 * run's (c->users.probe_id from before the request): a cleanup that cuts the create short
 * still removes it by that name. */
static void create_probe(struct container_rt *c)
{
    _cleanup_json_ json_t *b = json_pack("{s:s,s:[s],s:{s:s,s:s,s:s},s:{s:s}}",
                                         "Image",
                                         chosen_image(c),
                                         "Cmd",
                                         "true",
                                         "Labels",
                                         TY_LABEL_RUN,
                                         c->token,
                                         TY_LABEL_JOB,
                                         c->base.plan->job->job_id,
                                         TY_LABEL_OWNER,
                                         c->owner,
                                         "HostConfig",
                                         "NetworkMode",
                                         "none");
    _cleanup_free_ char *text = ty_json_compact(b);
    _cleanup_free_ char *path = NULL;
    struct ty_error e = {0};

    if (!c->users.probe_id)
        c->users.probe_id = xasprintf("trainyard-%s-probe", c->hash);
    path = xasprintf("/containers/create?name=%s", c->users.probe_id);
    c->users.creating = true;
    if (ty_engine_call_start(&c->pcall,
                             c->eng.api,
                             c->base.loop,
                             "POST",
                             path,
                             text,
                             NULL,
                             USER_CALL_TIMEOUT_MS,
                             on_probe_created,
                             c,
                             &e) < 0) {
        c->users.creating = false;
        lookup_failed(c, ty_error_msg(&e));
    }
}

/* Every image inspected: choose the user, say which replicas' users differ, find its ids. */
static void choose(struct container_rt *c)
{
    struct ctr_users *u = &c->users;
    const char *value;

    u->chosen = c->n;
    for (size_t i = 0; i < c->n && u->chosen == c->n; i++)
        if (!ctr_user_is_root(c->reps[i].image_user))
            u->chosen = i;   /* replica 0 is the master */
    if (u->chosen == c->n) { /* root everywhere: nothing to give */
        finish(c);
        return;
    }
    value = c->reps[u->chosen].image_user;
    for (size_t i = 0; i < c->n; i++) {
        const struct ctr_replica *cr = &c->reps[i];
        bool said = false;
        for (size_t k = 0; k < i && !said; k++)
            said = strcmp(c->reps[k].r->image, cr->r->image) == 0;
        if (!said && !ctr_user_is_root(cr->image_user) && strcmp(cr->image_user, value) != 0)
            ty_runtime_notice(&c->base,
                              TY_SEV_WARNING,
                              "Replica %s's image %s runs as '%s', not as '%s' (image %s): the "
                              "jobDir and metric directory go to '%s', and %s may not be able "
                              "to write there.",
                              cr->r->display_name,
                              cr->r->image,
                              cr->image_user,
                              value,
                              chosen_image(c),
                              value,
                              cr->r->display_name);
    }
    ctr_user_split(value, u->user, sizeof(u->user), u->group, sizeof(u->group));
    u->uid_known = u->gid_known = false;
    {
        const char *ue = u->user + strlen(u->user), *ge = u->group + strlen(u->group);
        u->uid_known = parse_id(u->user, ue, &u->uid);
        u->gid_known = u->group[0] && parse_id(u->group, ge, &u->gid);
    }
    if (u->uid_known && (u->group[0] == '\0' || u->gid_known)) {
        finish(c);
        return;
    }
    if (kept_find(c)) {
        finish(c);
        return;
    }
    create_probe(c);
}

static void on_inspect(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;
    struct ctr_replica *cr = &c->reps[c->users.image];
    _cleanup_json_ json_t *j = NULL;
    const char *user = NULL, *id = NULL;

    if (status == 200) {
        j = json_loadb(body ? body : "", len, 0, NULL);
        user = json_string_value(json_object_get(json_object_get(j, "Config"), "User"));
        id = json_string_value(json_object_get(j, "Id"));
    }
    /* Not answered: taken as root's (nothing given), as before this step existed. */
    cr->image_user = xstrdup(user ? user : "");
    cr->image_id = id ? xstrdup(id) : NULL;
    c->users.image++;
    inspect_next(c);
}

/* Inspect the next distinct image in replica order (a repeated one takes the first's). */
static void inspect_next(struct container_rt *c)
{
    for (; c->users.image < c->n; c->users.image++) {
        struct ctr_replica *cr = &c->reps[c->users.image];
        size_t k;
        for (k = 0; k < c->users.image; k++)
            if (strcmp(c->reps[k].r->image, cr->r->image) == 0)
                break;
        if (k < c->users.image) {
            cr->image_user = xstrdup(c->reps[k].image_user);
            cr->image_id = c->reps[k].image_id ? xstrdup(c->reps[k].image_id) : NULL;
            continue;
        }
        _cleanup_free_ char *esc = ty_engine_url_escape(cr->r->image);
        _cleanup_free_ char *path = xasprintf("/images/%s/json", esc);
        if (ty_engine_call_start(&c->pcall,
                                 c->eng.api,
                                 c->base.loop,
                                 "GET",
                                 path,
                                 NULL,
                                 NULL,
                                 USER_CALL_TIMEOUT_MS,
                                 on_inspect,
                                 c,
                                 NULL) < 0)
            on_inspect(c, 0, NULL, 0, NULL);
        return;
    }
    choose(c);
}

void ctr_users_start(struct container_rt *c, void (*next)(struct container_rt *c))
{
    const struct ty_cluster_plan *plan = c->base.plan;
    bool job_dir = plan->job_dir_made && ty_job_dir_is_local(plan->job_dir);

    c->users.next = next;
    c->users.image = 0;
    /* Only root can give a directory away (a rootless engine maps users of its own). */
    if ((!job_dir && !plan->metric_dir) || geteuid() != 0 || c->n == 0) {
        next(c);
        return;
    }
    inspect_next(c);
}
