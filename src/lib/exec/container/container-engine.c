/* SPDX-License-Identifier: Apache-2.0
 * container-engine.c: the engine-wide chores of the container runtime (see
 * container-engine.h), each asynchronous on the loop: garbage collection of what killed
 * runs left, images present or pulled, and a free subnet for the job's network. */
#include "container-engine.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "base64.h"
#include "buf.h"
#include "fdutil.h"
#include "imageref.h"
#include "json.h"
#include "macro.h"
#include "proctree.h"

/* How long one listing, inspection or removal may take: the engine answers these from its
 * own state at once; a minute means it is stuck, not busy. */
#define LIST_TIMEOUT_MS    10000L
#define REMOVE_TIMEOUT_MS  30000L /* removing a container may stop it first (grace period) */
#define INSPECT_TIMEOUT_MS 30000L

/* The inode of this process's PID namespace (0: unknown). */
static unsigned long long pid_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

void ty_engine_owner_id(char *buf, size_t n)
{
    (void)snprintf(
        buf, n, "%d:%llu:%llu", (int)getpid(), ty_proc_start_time(getpid()), pid_namespace());
}

static bool owner_alive(const char *owner)
{
    int pid, k;
    unsigned long long t, ns = 0;
    if (!owner || (k = sscanf(owner, "%d:%llu:%llu", &pid, &t, &ns)) < 2 || pid <= 0)
        return true; /* not ours to judge */
    if (k == 3 && ns != pid_namespace())
        return true; /* another PID namespace's pid: not ours to judge either */
    if (t == 0)      /* start time unknown: the process existing must do */
        return kill(pid, 0) == 0 || errno == EPERM;
    return ty_proc_start_time(pid) == t;
}

/* Is @item (of /containers/json, or of /networks when @network) named as trainyard names
 * what it makes: "trainyard-<10 hex digits>" for a network, and that followed by "-<its
 * trainyard.task label>" for a replica's container, "-probe" for the image-user probe? A
 * container the user made from an image committed from one of trainyard's carries its labels,
 * not its name. */
static bool named_by_trainyard(const json_t *item, bool network)
{
    const char *name = network
                           ? ty_json_str(item, "Name")
                           : json_string_value(json_array_get(json_object_get(item, "Names"), 0));
    const char *task = ty_json_str(json_object_get(item, "Labels"), TY_LABEL_TASK);
    size_t hex;

    if (name && *name == '/')
        name++;
    if (!name || strncmp(name, "trainyard-", 10) != 0)
        return false;
    name += 10;
    hex = strspn(name, "0123456789abcdef");
    if (hex != 10)
        return false;
    name += hex;
    if (network)
        return *name == '\0';
    return *name == '-' && strcmp(name + 1, task ? task : "probe") == 0;
}

/* ---- garbage collection: list containers, remove the dead owners' one by one, then the
 * same for networks ---- */

static const char *const gc_lists[] = {
    "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22trainyard.owner%22%5D%7D",
    "/networks?filters=%7B%22label%22%3A%5B%22trainyard.owner%22%5D%7D",
};

struct engine_gc {
    struct ty_engine *eng;
    void (*fn)(void *ctx, int removed);
    void *ctx;
    struct ty_engine_call call;
    size_t list;   /* index in gc_lists */
    json_t *items; /* that list's answer */
    size_t next;   /* next item to look at */
    int removed;
};

static void gc_step(struct engine_gc *gc);

static void gc_free(struct engine_gc *gc)
{
    ty_engine_call_cancel(&gc->call);
    json_decref(gc->items);
    gc->eng->gc = NULL;
    free(gc);
}

static void gc_on_remove(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct engine_gc *gc = ctx;
    if (status == 204 || status == 200)
        gc->removed++;
    gc_step(gc);
}

static void gc_on_list(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct engine_gc *gc = ctx;

    json_decref(gc->items);
    gc->items = NULL;
    gc->next = 0;
    if (status != 200 || ty_json_parse(body, len, &gc->items, NULL) < 0) {
        json_decref(gc->items);
        gc->items = NULL;
        gc->list++; /* housekeeping: a list that fails is skipped */
    }
    gc_step(gc);
}

/* Start the next removal or listing; report when nothing is left. */
static void gc_step(struct engine_gc *gc)
{
    struct ty_engine *eng = gc->eng;

    while (gc->list < TY_ARRAY_SIZE(gc_lists)) {
        if (!gc->items) {
            if (ty_engine_call_start(&gc->call,
                                     eng->api,
                                     eng->loop,
                                     "GET",
                                     gc_lists[gc->list],
                                     NULL,
                                     NULL,
                                     LIST_TIMEOUT_MS,
                                     gc_on_list,
                                     gc,
                                     NULL) == 0)
                return;
            gc->list++;
            continue;
        }
        while (gc->next < json_array_size(gc->items)) {
            json_t *item = json_array_get(gc->items, gc->next++);
            const char *id = ty_json_str(item, "Id");
            const char *owner = ty_json_str(json_object_get(item, "Labels"), TY_LABEL_OWNER);
            if (!id || owner_alive(owner) || !named_by_trainyard(item, gc->list == 1))
                continue;
            _cleanup_free_ char *path = gc->list == 0 ? xasprintf("/containers/%s?force=1&v=1", id)
                                                      : xasprintf("/networks/%s", id);
            if (ty_engine_call_start(&gc->call,
                                     eng->api,
                                     eng->loop,
                                     "DELETE",
                                     path,
                                     NULL,
                                     NULL,
                                     REMOVE_TIMEOUT_MS,
                                     gc_on_remove,
                                     gc,
                                     NULL) == 0)
                return;
        }
        json_decref(gc->items);
        gc->items = NULL;
        gc->list++;
    }
    void (*fn)(void *, int) = gc->fn;
    void *fctx = gc->ctx;
    int removed = gc->removed;
    gc_free(gc);
    fn(fctx, removed);
}

int ty_engine_collect_garbage(struct ty_engine *eng, void (*fn)(void *ctx, int removed), void *ctx)
{
    struct engine_gc *gc;

    if (eng->gc)
        return -EBUSY;
    gc = xcalloc(1, sizeof(*gc));
    gc->eng = eng;
    gc->fn = fn;
    gc->ctx = ctx;
    eng->gc = gc;
    if (ty_engine_call_start(&gc->call,
                             eng->api,
                             eng->loop,
                             "GET",
                             gc_lists[0],
                             NULL,
                             NULL,
                             LIST_TIMEOUT_MS,
                             gc_on_list,
                             gc,
                             NULL) < 0) {
        gc_free(gc);
        return -EIO;
    }
    return 0;
}

/* ---- images: inspect; on 404 pull (Podman's own endpoint first for a listed insecure
 * registry on loopback, then the Docker-compatible one) ---- */

/* Split "host/repo:tag" (or "@digest") into fromImage and tag query parts. */
static void split_ref(const char *image, char **repo, char **tag)
{
    const char *at = strchr(image, '@');
    const char *slash = strrchr(image, '/');
    const char *colon = strrchr(image, ':');

    if (at) {
        *repo = xstrdup(image);
        *tag = NULL;
    } else if (colon && (!slash || colon > slash)) {
        *repo = xstrndup(image, (size_t)(colon - image));
        *tag = xstrdup(colon + 1);
    } else {
        *repo = xstrdup(image);
        *tag = xstrdup("latest");
    }
}

char *ty_engine_url_escape(const char *s)
{
    struct ty_buf b = TY_BUF_INIT;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~/:@", c))
            ty_buf_putc(&b, (char)c);
        else
            ty_buf_printf(&b, "%%%02X", c);
    }
    return ty_buf_take(&b);
}

/* X-Registry-Auth for @image's registry from the Docker config file (auths.<host>.auth =
 * base64("user:password")), or NULL. */
static char *registry_auth(const char *image)
{
    const char *dir = getenv("DOCKER_CONFIG");
    const char *home = getenv("HOME");
    _cleanup_free_ char *path = dir    ? xasprintf("%s/config.json", dir)
                                : home ? xasprintf("%s/.docker/config.json", home)
                                       : NULL;
    _cleanup_free_ char *text = NULL, *host = NULL, *raw = NULL, *hdr_json = NULL, *hdr = NULL;
    _cleanup_json_ json_t *cfg = NULL;
    size_t len, raw_len;
    const char *slash = strchr(image, '/');
    const char *auth;
    char *colon;
    json_t *o;

    if (!path || !slash || ty_read_file(path, 1 << 20, &text, &len, NULL) < 0 ||
        ty_json_parse(text, len, &cfg, NULL) < 0)
        return NULL;
    host = xstrndup(image, (size_t)(slash - image));
    auth = ty_json_str(json_object_get(json_object_get(cfg, "auths"), host), "auth");
    if (!auth || ty_base64_decode(auth, false, (unsigned char **)&raw, &raw_len) < 0 ||
        strlen(raw) != raw_len || !(colon = strchr(raw, ':')))
        return NULL;
    *colon = '\0';
    o = json_pack("{s:s,s:s,s:s}", "username", raw, "password", colon + 1, "serveraddress", host);
    hdr_json = ty_json_compact(o);
    json_decref(o);
    /* Docker decodes the header with Go's base64.URLEncoding: URL-safe, padded. */
    hdr = ty_base64url_encode_padded(hdr_json, strlen(hdr_json));
    return xasprintf("X-Registry-Auth: %s", hdr);
}

/* The last {"error": ...} in a pull progress stream (one JSON object per line) into @msg
 * (size @n). Returns whether there was one. */
static bool pull_error(const char *stream, size_t len, char *msg, size_t n)
{
    _cleanup_free_ char *copy = xstrndup(stream ? stream : "", stream ? len : 0);
    char *save = NULL;
    bool found = false;

    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *e = ty_json_str(j, "error");
        if (e) {
            (void)snprintf(msg, n, "%s", e);
            found = true;
        }
        json_decref(j);
    }
    return found;
}

/* Is @image's registry listed in TRAINYARD_INSECURE_REGISTRIES (comma-separated host[:port])?
 * Returns 1 when listed (and on loopback), 0 when not listed, -EPERM when listed but not on
 * loopback: plain HTTP is allowed only there. */
static int insecure_registry(const char *image, struct ty_error *err)
{
    const char *list = getenv("TRAINYARD_INSECURE_REGISTRIES");
    _cleanup_free_ char *host = ty_image_registry(image);
    _cleanup_free_ char *copy = NULL;
    char *save = NULL;

    if (!host || !list || !*list)
        return 0;
    copy = xstrdup(list);
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ')
            item++;
        if (strcmp(item, host) != 0)
            continue;
        if (ty_registry_on_loopback(host))
            return 1;
        return ty_error_set(err,
                            EPERM,
                            "TRAINYARD_INSECURE_REGISTRIES lists '%s', but plain-HTTP registries "
                            "are allowed only on loopback (127.0.0.0/8, localhost, [::1])",
                            host);
    }
    return 0;
}

struct engine_pull {
    struct ty_engine *eng;
    ty_engine_image_fn fn;
    void *ctx;
    struct ty_engine_call call;
    char *image;
    char *auth; /* X-Registry-Auth header or NULL */
    long timeout_ms;
};

static void pull_free(struct engine_pull *p)
{
    ty_engine_call_cancel(&p->call);
    p->eng->pull = NULL;
    free(p->image);
    free(p->auth);
    free(p);
}

/* Report @r with @msg (NULL on success) and forget the image. */
static void pull_report(struct engine_pull *p, int r, const char *msg)
{
    ty_engine_image_fn fn = p->fn;
    void *ctx = p->ctx;

    pull_free(p);
    fn(ctx, r, msg);
}

/* Report how the pull ended (@why: the reason it failed). */
static void pull_end(struct engine_pull *p, int r, const char *why)
{
    _cleanup_free_ char *msg =
        r < 0 ? xasprintf("image '%s' is not present and pulling it failed: %s", p->image, why)
              : NULL;
    pull_report(p, r, msg);
}

static void pull_on_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct engine_pull *p = ctx;
    char msg[512];

    if (status == 0) {
        pull_end(p, -ETIMEDOUT, error);
        return;
    }
    if (status == 200 && !pull_error(body, len, msg, sizeof(msg))) {
        pull_end(p, 0, NULL);
        return;
    }
    if (status != 200)
        ty_docker_error_message(body, msg, sizeof(msg));
    pull_end(p, -ENOENT, msg);
}

/* POST @path for the pull, with the registry credentials; @fn gets the answer. */
static void pull_post(struct engine_pull *p, const char *path, ty_engine_call_fn fn)
{
    struct ty_error e = {0};

    if (ty_engine_call_start(&p->call,
                             p->eng->api,
                             p->eng->loop,
                             "POST",
                             path,
                             NULL,
                             p->auth,
                             p->timeout_ms,
                             fn,
                             p,
                             &e) < 0)
        pull_end(p, e.code ? -e.code : -EIO, ty_error_msg(&e));
}

/* Docker-compatible pull: POST /images/create?fromImage=REPO&tag=TAG. */
static void pull_docker(struct engine_pull *p)
{
    _cleanup_free_ char *repo = NULL, *tag = NULL, *erepo = NULL, *path = NULL;

    split_ref(p->image, &repo, &tag);
    erepo = ty_engine_url_escape(repo);
    path = tag ? xasprintf("/images/create?fromImage=%s&tag=%s", erepo, tag)
               : xasprintf("/images/create?fromImage=%s", erepo);
    pull_post(p, path, pull_on_done);
}

static void pull_on_libpod(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct engine_pull *p = ctx;

    /* Docker has no /libpod: there loopback registries are insecure already. */
    if (status == 404)
        pull_docker(p);
    else
        pull_on_done(ctx, status, body, len, error);
}

static void pull_on_inspect(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct engine_pull *p = ctx;
    struct ty_error e = {0};
    char msg[512];
    int r;

    if (status == 200) {
        pull_end(p, 0, NULL);
        return;
    }
    if (status != 404) {
        if (status == 0)
            (void)snprintf(msg, sizeof(msg), "%s", error ? error : "no answer");
        else
            ty_docker_error_message(body, msg, sizeof(msg));
        _cleanup_free_ char *m = xasprintf("inspecting image '%s' failed: %s", p->image, msg);
        pull_report(p, -EIO, m);
        return;
    }
    r = insecure_registry(p->image, &e);
    if (r < 0) {
        pull_report(p, r, ty_error_msg(&e));
        return;
    }
    if (r == 0) {
        pull_docker(p);
        return;
    }
    /* A plain-HTTP registry on loopback the operator listed: Podman's own pull endpoint
     * takes tlsVerify=false (its Docker-compatible one ignores it). */
    _cleanup_free_ char *eimage = ty_engine_url_escape(p->image);
    _cleanup_free_ char *path =
        xasprintf("/libpod/images/pull?reference=%s&tlsVerify=false", eimage);
    pull_post(p, path, pull_on_libpod);
}

int ty_engine_ensure_image(struct ty_engine *eng,
                           const char *image,
                           long timeout_ms,
                           ty_engine_image_fn fn,
                           void *ctx,
                           struct ty_error *err)
{
    _cleanup_free_ char *esc = ty_engine_url_escape(image);
    _cleanup_free_ char *path = xasprintf("/images/%s/json", esc);
    struct engine_pull *p;
    int r;

    if (eng->pull)
        return ty_error_set(err, EBUSY, "an image is already being looked at");
    p = xcalloc(1, sizeof(*p));
    p->eng = eng;
    p->fn = fn;
    p->ctx = ctx;
    p->image = xstrdup(image);
    p->auth = registry_auth(image);
    p->timeout_ms = timeout_ms;
    eng->pull = p;
    r = ty_engine_call_start(&p->call,
                             eng->api,
                             eng->loop,
                             "GET",
                             path,
                             NULL,
                             NULL,
                             INSPECT_TIMEOUT_MS,
                             pull_on_inspect,
                             p,
                             err);
    if (r < 0)
        pull_free(p);
    return r;
}

void ty_engine_chores_cancel(struct ty_engine *eng)
{
    if (eng->gc)
        gc_free(eng->gc);
    if (eng->pull)
        pull_free(eng->pull);
}

int ty_engine_pick_subnet(json_t *nets,
                          unsigned seed,
                          char *subnet,
                          size_t n,
                          char *prefix,
                          size_t np,
                          struct ty_error *err)
{
    bool used[512] = {false}; /* 198.18.0.0/15 = 512 /24s */
    json_t *net;
    size_t i;

    json_array_foreach(nets, i, net)
    {
        json_t *cfgs = json_object_get(json_object_get(net, "IPAM"), "Config"), *c;
        size_t k;
        json_array_foreach(cfgs, k, c)
        {
            unsigned a, b, x, y, len;
            const char *s = ty_json_str(c, "Subnet");
            if (!s || sscanf(s, "%u.%u.%u.%u/%u", &a, &b, &x, &y, &len) != 5 || len > 32)
                continue;
            /* Mark every /24 of 198.18.0.0/15 that this subnet overlaps. */
            unsigned long lo = (unsigned long)a << 24 | (unsigned long)b << 16 | x << 8 | y;
            unsigned long size = len >= 32 ? 1 : 1UL << (32 - len);
            lo &= ~(size - 1);
            for (unsigned idx = 0; idx < 512; idx++) {
                unsigned long s24 = (198UL << 24 | 18UL << 16) + (unsigned long)idx * 256;
                if (s24 + 256 > lo && s24 < lo + size)
                    used[idx] = true;
            }
        }
    }
    /* Skip 198.18.0.0/24 (podman's default network lives there on some hosts). */
    used[0] = true;
    for (unsigned k = 0; k < 512; k++) {
        unsigned idx = (seed + k) % 512;
        if (used[idx])
            continue;
        (void)snprintf(subnet, n, "198.%u.%u.0/24", 18 + idx / 256, idx % 256);
        (void)snprintf(prefix, np, "198.%u.%u.", 18 + idx / 256, idx % 256);
        return 0;
    }
    return ty_error_set(err,
                        EADDRNOTAVAIL,
                        "no free /24 left in 198.18.0.0/15 for the job's "
                        "network");
}
