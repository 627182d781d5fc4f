/* SPDX-License-Identifier: Apache-2.0
 * container-engine.c: engine discovery and start-up, garbage collection, images and subnets
 * for the container runtime (see container-engine.h). */
#include "container-engine.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "fdutil.h"
#include "json.h"
#include "macro.h"
#include "proctree.h"
#include "timeutil.h"

/* How long a freshly started podman service may take to answer (it sets up storage). */
#define SERVICE_START_TIMEOUT_USEC (30 * INT64_C(1000000))

static bool ping(struct ty_loop *loop, const char *socket, struct ty_docker **ret)
{
    struct ty_docker *d = NULL;
    struct ty_docker_call call = {.method = "GET", .path = "/_ping"};
    bool ok;

    if (access(socket, F_OK) < 0 || ty_docker_new(loop, socket, &d, NULL) < 0)
        return false;
    ok = ty_docker_call(d, &call, 2000, NULL) == 0 && call.status == 200;
    ty_docker_batch_release(&call, 1);
    if (ok && ret)
        *ret = d;
    else
        ty_docker_free(d);
    return ok;
}

static char *find_in_path(const char *prog)
{
    const char *path = getenv("PATH");
    _cleanup_free_ char *copy = xstrdup(path ? path : "/usr/bin:/bin");
    char *save = NULL;

    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        char *cand = xasprintf("%s/%s", dir, prog);
        if (access(cand, X_OK) == 0)
            return cand;
        free(cand);
    }
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    (void)nanosleep(&ts, NULL);
}

/* Start `podman system service --time=0 unix://DIR/podman.sock` as our child. */
static int
start_service(struct ty_engine *eng, struct ty_loop *loop, const char *podman, struct ty_error *err)
{
    char tmpl[] = "/tmp/trainyard-podman.XXXXXX";
    _cleanup_free_ char *url = NULL;
    int64_t deadline;
    pid_t pid;

    if (!mkdtemp(tmpl))
        return ty_error_set(
            err, errno, "cannot create a directory for podman's socket: %s", strerror(errno));
    eng->service_dir = xstrdup(tmpl);
    eng->socket = xasprintf("%s/podman.sock", tmpl);
    url = xasprintf("unix://%s", eng->socket);
    pid = fork();
    if (pid < 0)
        return ty_error_set(err, errno, "cannot fork: %s", strerror(errno));
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        (void)setpgid(0, 0);
        /* The service must not outlive us, however we end. */
        (void)prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (devnull >= 0) {
            (void)dup2(devnull, STDIN_FILENO);
            (void)dup2(devnull, STDOUT_FILENO);
            (void)dup2(devnull, STDERR_FILENO);
        }
        execl(podman, "podman", "system", "service", "--time=0", url, (char *)NULL);
        _exit(127);
    }
    eng->service_pid = pid;
    ty_proctree_own(pid);
    deadline = ty_mono_usec() + SERVICE_START_TIMEOUT_USEC;
    while (ty_mono_usec() < deadline) {
        if (ping(loop, eng->socket, &eng->api))
            return 0;
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            ty_proctree_disown(pid);
            eng->service_pid = 0;
            return ty_error_set(err, ECHILD, "'%s system service' exited at once", podman);
        }
        sleep_ms(50);
    }
    return ty_error_set(err,
                        ETIMEDOUT,
                        "'%s system service' did not answer within %lld s",
                        podman,
                        (long long)(SERVICE_START_TIMEOUT_USEC / 1000000));
}

int ty_engine_open(struct ty_engine *eng,
                   struct ty_loop *loop,
                   char **started_msg,
                   struct ty_error *err)
{
    const char *host = getenv("DOCKER_HOST");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    _cleanup_free_ char *xdg_sock = xdg ? xasprintf("%s/podman/podman.sock", xdg) : NULL;
    const char *candidates[] = {"/var/run/docker.sock", "/run/podman/podman.sock", xdg_sock};
    _cleanup_free_ char *podman = NULL;
    struct ty_buf tried = TY_BUF_INIT;
    int r;

    *started_msg = NULL;
    if (host && *host) {
        if (strncmp(host, "unix://", 7) != 0)
            return ty_error_set(
                err, EPROTONOSUPPORT, "DOCKER_HOST '%s': only unix:// sockets are supported", host);
        if (ping(loop, host + 7, &eng->api)) {
            eng->socket = xstrdup(host + 7);
            return 0;
        }
        return ty_error_set(err, EHOSTUNREACH, "DOCKER_HOST '%s' does not answer GET /_ping", host);
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(candidates); i++) {
        if (!candidates[i])
            continue;
        if (ping(loop, candidates[i], &eng->api)) {
            eng->socket = xstrdup(candidates[i]);
            return 0;
        }
        ty_buf_printf(&tried, "%s%s", tried.len ? ", " : "", candidates[i]);
    }
    podman = find_in_path("podman");
    if (!podman) {
        r = ty_error_set(err,
                         EHOSTUNREACH,
                         "no container engine: nothing answers at %s, DOCKER_HOST is not set, "
                         "and podman is not installed",
                         ty_buf_str(&tried));
        ty_buf_release(&tried);
        return r;
    }
    ty_buf_release(&tried);
    r = start_service(eng, loop, podman, err);
    if (r < 0) {
        ty_engine_close(eng);
        return r;
    }
    *started_msg = xasprintf("No container engine was running; started '%s system service' "
                             "(pid %d) on %s for this run.",
                             podman,
                             (int)eng->service_pid,
                             eng->socket);
    return 0;
}

void ty_engine_close(struct ty_engine *eng)
{
    ty_docker_free(eng->api);
    eng->api = NULL;
    if (eng->service_pid > 0) {
        int64_t deadline = ty_mono_usec() + 5 * INT64_C(1000000);
        (void)kill(eng->service_pid, SIGTERM);
        while (waitpid(eng->service_pid, NULL, WNOHANG) == 0) {
            if (ty_mono_usec() > deadline) {
                (void)kill(eng->service_pid, SIGKILL);
                (void)waitpid(eng->service_pid, NULL, 0);
                break;
            }
            sleep_ms(20);
        }
        ty_proctree_disown(eng->service_pid);
        eng->service_pid = 0;
    }
    if (eng->service_dir) {
        if (eng->socket)
            (void)unlink(eng->socket);
        (void)rmdir(eng->service_dir);
    }
    free(eng->service_dir);
    free(eng->socket);
    eng->service_dir = eng->socket = NULL;
}

const char *ty_engine_owner_id(void)
{
    static char id[64];
    if (!id[0])
        (void)snprintf(id, sizeof(id), "%d:%llu", (int)getpid(), ty_proc_start_time(getpid()));
    return id;
}

static bool owner_alive(const char *owner)
{
    int pid;
    unsigned long long t;
    if (!owner || sscanf(owner, "%d:%llu", &pid, &t) != 2 || pid <= 0)
        return true; /* not ours to judge */
    if (t == 0)      /* start time unknown: the process existing must do */
        return kill(pid, 0) == 0 || errno == EPERM;
    return ty_proc_start_time(pid) == t;
}

int ty_engine_collect_garbage(struct ty_engine *eng)
{
    static const char *const lists[] = {
        "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22trainyard.owner%22%5D%7D",
        "/networks?filters=%7B%22label%22%3A%5B%22trainyard.owner%22%5D%7D",
    };
    int removed = 0;

    for (size_t l = 0; l < TY_ARRAY_SIZE(lists); l++) {
        struct ty_docker_call call = {.method = "GET", .path = lists[l]};
        json_t *arr = NULL, *item;
        size_t i;

        if (ty_docker_call(eng->api, &call, 10000, NULL) < 0 || call.status != 200 ||
            ty_json_parse(call.response, call.response_len, &arr, NULL) < 0) {
            ty_docker_batch_release(&call, 1);
            continue;
        }
        json_array_foreach(arr, i, item)
        {
            const char *id = ty_json_str(item, "Id");
            const char *owner = ty_json_str(json_object_get(item, "Labels"), TY_LABEL_OWNER);
            if (!id || owner_alive(owner))
                continue;
            _cleanup_free_ char *path =
                l == 0 ? xasprintf("/containers/%s?force=1", id) : xasprintf("/networks/%s", id);
            struct ty_docker_call del = {.method = "DELETE", .path = path};
            if (ty_docker_call(eng->api, &del, 30000, NULL) == 0 &&
                (del.status == 204 || del.status == 200))
                removed++;
            ty_docker_batch_release(&del, 1);
        }
        json_decref(arr);
        ty_docker_batch_release(&call, 1);
    }
    return removed;
}

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

static char *url_escape(const char *s)
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

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64(const unsigned char *p, size_t n, bool url)
{
    struct ty_buf b = TY_BUF_INIT;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {b64[v >> 18 & 63],
                     b64[v >> 12 & 63],
                     i + 1 < n ? b64[v >> 6 & 63] : '=',
                     i + 2 < n ? b64[v & 63] : '='};
        if (url)
            for (int k = 0; k < 4; k++)
                q[k] = q[k] == '+' ? '-' : q[k] == '/' ? '_' : q[k];
        ty_buf_append(&b, q, 4);
    }
    return ty_buf_take(&b);
}

static int unbase64(const char *s, struct ty_buf *out)
{
    unsigned v = 0;
    int bits = 0;
    for (; *s && *s != '='; s++) {
        const char *pos = strchr(b64, *s);
        if (!pos)
            return -EINVAL;
        v = v << 6 | (unsigned)(pos - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            ty_buf_putc(out, (char)(v >> bits & 0xff));
        }
    }
    return 0;
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
    _cleanup_free_ char *text = NULL, *host = NULL;
    _cleanup_json_ json_t *cfg = NULL;
    size_t len;
    const char *slash = strchr(image, '/');
    const char *auth;
    struct ty_buf raw = TY_BUF_INIT;
    char *colon, *hdr_json, *hdr;
    json_t *o;

    if (!path || !slash || ty_read_file(path, 1 << 20, &text, &len, NULL) < 0 ||
        ty_json_parse(text, len, &cfg, NULL) < 0)
        return NULL;
    host = xstrndup(image, (size_t)(slash - image));
    auth = ty_json_str(json_object_get(json_object_get(cfg, "auths"), host), "auth");
    if (!auth || unbase64(auth, &raw) < 0 || !(colon = strchr(ty_buf_str(&raw), ':'))) {
        ty_buf_release(&raw);
        return NULL;
    }
    *colon = '\0';
    o = json_pack(
        "{s:s,s:s,s:s}", "username", raw.data, "password", colon + 1, "serveraddress", host);
    ty_buf_release(&raw);
    hdr_json = ty_json_compact(o);
    json_decref(o);
    hdr = base64((const unsigned char *)hdr_json, strlen(hdr_json), true);
    free(hdr_json);
    text = xasprintf("X-Registry-Auth: %s", hdr);
    free(hdr);
    return TAKE_PTR(text);
}

/* The last {"error": ...} in a pull progress stream (one JSON object per line). */
static const char *pull_error(char *stream)
{
    const char *last = NULL;
    static char msg[512];
    char *save = NULL;
    for (char *line = strtok_r(stream, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *e = ty_json_str(j, "error");
        if (e) {
            (void)snprintf(msg, sizeof(msg), "%s", e);
            last = msg;
        }
        json_decref(j);
    }
    return last;
}

static int pull_result(struct ty_docker_call *pull_call, const char *image, struct ty_error *err);

/* The registry host of @image ("127.0.0.1:5000" in "127.0.0.1:5000/ml/x:1"), or NULL when the
 * first component is not a host (no '.', ':' or "localhost"). Caller frees. */
static char *registry_host(const char *image)
{
    const char *slash = strchr(image, '/');
    char *host;
    if (!slash)
        return NULL;
    host = xstrndup(image, (size_t)(slash - image));
    if (!strchr(host, '.') && !strchr(host, ':') && strcmp(host, "localhost") != 0) {
        free(host);
        return NULL;
    }
    return host;
}

/* Is @image's registry listed in TRAINYARD_INSECURE_REGISTRIES (comma-separated host[:port])?
 * Returns 1 when listed (and on loopback), 0 when not listed, -EPERM when listed but not on
 * loopback: plain HTTP is allowed only there. */
static int insecure_registry(const char *image, struct ty_error *err)
{
    const char *list = getenv("TRAINYARD_INSECURE_REGISTRIES");
    _cleanup_free_ char *host = registry_host(image);
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
        if (strncmp(host, "127.", 4) == 0 || strncmp(host, "localhost", 9) == 0 ||
            strncmp(host, "[::1]", 5) == 0)
            return 1;
        return ty_error_set(err,
                            EPERM,
                            "TRAINYARD_INSECURE_REGISTRIES lists '%s', but plain-HTTP registries "
                            "are allowed only on loopback (127.0.0.0/8, localhost, [::1])",
                            host);
    }
    return 0;
}

int ty_engine_ensure_image(struct ty_engine *eng,
                           const char *image,
                           long timeout_ms,
                           struct ty_error *err)
{
    _cleanup_free_ char *esc = url_escape(image);
    _cleanup_free_ char *ipath = xasprintf("/images/%s/json", esc);
    _cleanup_free_ char *repo = NULL, *tag = NULL, *erepo = NULL, *ppath = NULL;
    _cleanup_free_ char *auth = NULL;
    struct ty_docker_call inspect = {.method = "GET", .path = ipath};
    struct ty_docker_call pull = {.method = "POST"};
    char msg[512];
    int r;

    r = ty_docker_call(eng->api, &inspect, 30000, err);
    if (r < 0)
        return r;
    if (inspect.status == 200) {
        ty_docker_batch_release(&inspect, 1);
        return 0;
    }
    if (inspect.status != 404) {
        ty_docker_error_message(inspect.response, msg, sizeof(msg));
        ty_docker_batch_release(&inspect, 1);
        return ty_error_set(err, EIO, "inspecting image '%s' failed: %s", image, msg);
    }
    ty_docker_batch_release(&inspect, 1);

    r = insecure_registry(image, err);
    if (r < 0)
        return r;
    auth = registry_auth(image);
    pull.extra_header = auth;
    if (r > 0) {
        /* A plain-HTTP registry on loopback the operator listed: Podman's own pull endpoint
         * takes tlsVerify=false (its Docker-compatible one ignores it); Docker treats loopback
         * registries as insecure already, so on Docker (404 here) the plain pull below works. */
        _cleanup_free_ char *eimage = url_escape(image);
        _cleanup_free_ char *lpath =
            xasprintf("/libpod/images/pull?reference=%s&tlsVerify=false", eimage);
        pull.path = lpath;
        r = ty_docker_call(eng->api, &pull, timeout_ms, err);
        if (r < 0)
            return r;
        if (pull.status != 404)
            return pull_result(&pull, image, err);
        ty_docker_batch_release(&pull, 1);
        pull = (struct ty_docker_call){.method = "POST", .extra_header = auth};
    }
    split_ref(image, &repo, &tag);
    erepo = url_escape(repo);
    ppath = tag ? xasprintf("/images/create?fromImage=%s&tag=%s", erepo, tag)
                : xasprintf("/images/create?fromImage=%s", erepo);
    pull.path = ppath;
    r = ty_docker_call(eng->api, &pull, timeout_ms, err);
    if (r < 0)
        return r;
    return pull_result(&pull, image, err);
}

static int pull_result(struct ty_docker_call *pull_call, const char *image, struct ty_error *err)
{
    struct ty_docker_call pull = *pull_call;
    const char *why;
    char msg[512];
    int r;

    if (pull.status == 0) {
        r = ty_error_set(err,
                         ETIMEDOUT,
                         "image '%s' is not present and pulling it failed: %s",
                         image,
                         pull.error);
        ty_docker_batch_release(&pull, 1);
        return r;
    }
    why = pull.status == 200 ? pull_error(pull.response) : NULL;
    if (pull.status != 200 || why) {
        if (!why) {
            ty_docker_error_message(pull.response, msg, sizeof(msg));
            why = msg;
        }
        r = ty_error_set(
            err, ENOENT, "image '%s' is not present and pulling it failed: %s", image, why);
        ty_docker_batch_release(&pull, 1);
        return r;
    }
    ty_docker_batch_release(&pull, 1);
    return 0;
}

int ty_engine_pick_subnet(struct ty_engine *eng,
                          unsigned seed,
                          char *subnet,
                          size_t n,
                          char *prefix,
                          size_t np,
                          struct ty_error *err)
{
    struct ty_docker_call call = {.method = "GET", .path = "/networks"};
    _cleanup_json_ json_t *nets = NULL;
    bool used[512] = {false}; /* 198.18.0.0/15 = 512 /24s */
    json_t *net;
    size_t i;
    int r;

    r = ty_docker_call(eng->api, &call, 30000, err);
    if (r < 0)
        return r;
    if (call.status != 200 || ty_json_parse(call.response, call.response_len, &nets, NULL) < 0) {
        ty_docker_batch_release(&call, 1);
        return ty_error_set(
            err, EIO, "listing the engine's networks failed (HTTP %ld)", call.status);
    }
    ty_docker_batch_release(&call, 1);
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
