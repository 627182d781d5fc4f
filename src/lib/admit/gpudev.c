/* SPDX-License-Identifier: Apache-2.0
 * gpudev.c: the GPU devices of this machine (real NVIDIA devices with their types from the
 * driver, or stand-ins declared for tests) and the lock files that say who holds each
 * (gpudev.h). */
#include "gpudev.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"
#include "suggest.h"

/* The word of a model name that names each API type, in the enum's order. */
static const char *const model_words[TY_GPU_NTYPES] = {"K80", "P100", "V100", "P4", "T4", "A100"};

int ty_gpu_devices_parse(const char *v, const char *where, bool *stand_in, struct ty_error *err)
{
    static const char *const values[] = {"nvidia", "stand-in", NULL};
    const char *near;

    if (strcmp(v, "nvidia") == 0 || strcmp(v, "stand-in") == 0) {
        *stand_in = strcmp(v, "stand-in") == 0;
        return 0;
    }
    near = ty_suggest_among(v, values);
    return ty_error_set(err,
                        EINVAL,
                        "%s: expected nvidia (the host's NVIDIA devices) or stand-in (declared "
                        "devices without a device file, for tests) (got '%s'%s%s%s)",
                        where,
                        v,
                        near ? "; did you mean '" : "",
                        near ? near : "",
                        near ? "'?" : "");
}

int ty_gpu_model_type(const char *model)
{
    const char *p = model;

    while (p && *p) {
        size_t len;
        while (*p && !isalnum((unsigned char)*p))
            p++;
        len = 0;
        while (isalnum((unsigned char)p[len]))
            len++;
        for (int t = 0; len && t < TY_GPU_NTYPES; t++)
            if (strlen(model_words[t]) == len && strncasecmp(p, model_words[t], len) == 0)
                return t;
        p += len;
    }
    return -1;
}

static char *join(const char *root, const char *rel)
{
    size_t n = strlen(root);
    return xasprintf("%s%s%s", root, n && root[n - 1] == '/' ? "" : "/", rel);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The numbers N of @root/dev/nvidia<N> (digits only), ascending, into *@nums. */
static int scan_dev(const char *root, int **nums, size_t *n, struct ty_error *err)
{
    _cleanup_free_ char *dir = join(root, "dev");
    DIR *d = opendir(dir);
    struct dirent *de;

    *nums = NULL;
    *n = 0;
    if (!d)
        return errno == ENOENT ? 0 : ty_error_set(err, errno, "%s: %s", dir, strerror(errno));
    while ((de = readdir(d))) {
        const char *digits = de->d_name + 6;
        int64_t v;
        if (strncmp(de->d_name, "nvidia", 6) != 0 || !*digits ||
            strspn(digits, "0123456789") != strlen(digits) ||
            ty_parse_int64(digits, 0, 65535, &v) < 0)
            continue;
        *nums = xreallocarray(*nums, *n + 1, sizeof(int));
        (*nums)[(*n)++] = (int)v;
    }
    closedir(d);
    if (*n)
        qsort(*nums, *n, sizeof(int), cmp_int);
    return 0;
}

/* The value of "@key:" in the driver's information text @text (trimmed; caller frees), or
 * NULL. */
static char *info_value(const char *text, const char *key)
{
    size_t klen = strlen(key);

    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        const char *v, *end;
        if (strncmp(line, key, klen) != 0 || line[klen] != ':')
            continue;
        v = line + klen + 1;
        v += strspn(v, " \t");
        end = strchr(v, '\n');
        if (!end)
            end = v + strlen(v);
        while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            end--;
        return xstrndup(v, (size_t)(end - v));
    }
    return NULL;
}

/* The driver's model of each device in @inv (by "Device Minor:"), from
 * @root/proc/driver/nvidia/gpus/<bus>/information. A missing directory leaves them unknown. */
static void read_models(const char *root, struct ty_gpu_inventory *inv)
{
    _cleanup_free_ char *dir = join(root, "proc/driver/nvidia/gpus");
    DIR *d = opendir(dir);
    struct dirent *de;

    while (d && (de = readdir(d))) {
        _cleanup_free_ char *path = NULL, *text = NULL, *model = NULL, *minor = NULL;
        size_t len = 0;
        int64_t v;

        if (de->d_name[0] == '.')
            continue;
        path = xasprintf("%s/%s/information", dir, de->d_name);
        if (ty_read_file(path, 64 * 1024, &text, &len, NULL) < 0)
            continue;
        model = info_value(text, "Model");
        minor = info_value(text, "Device Minor");
        if (!model || !minor || ty_parse_int64(minor, 0, 65535, &v) < 0)
            continue;
        for (size_t i = 0; i < inv->n; i++)
            if (inv->dev[i].number == v && !inv->dev[i].model)
                inv->dev[i].model = TAKE_PTR(model);
    }
    if (d)
        closedir(d);
}

static int64_t declared_total(const struct ty_resources *declared, bool *any)
{
    int64_t total = 0;

    *any = false;
    for (int t = 0; declared && t < TY_GPU_NTYPES; t++) {
        int64_t v = declared->v[TY_RES_GPU0 + t];
        if (v == TY_RES_UNLIMITED)
            continue;
        *any = true;
        total += v;
    }
    return total;
}

/* The type of the @k-th declared device (in @order, as the declaration writes them; without
 * one, types in the enum's order), or -1 past them. */
static int
declared_type(const struct ty_resources *declared, const struct ty_gpu_order *order, int64_t k)
{
    if (order && order->n > 0)
        return k < (int64_t)order->n ? order->types[k] : -1;
    for (int t = 0; t < TY_GPU_NTYPES; t++) {
        int64_t v = declared->v[TY_RES_GPU0 + t];
        if (v == TY_RES_UNLIMITED)
            continue;
        if (k < v)
            return t;
        k -= v;
    }
    return -1;
}

/* "gpus=NVIDIA_TESLA_T4:2" for the GPU dimensions of @declared. */
static const char *declaration(const struct ty_resources *declared, char *buf, size_t len)
{
    struct ty_resources g;

    ty_resources_unlimited(&g);
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        g.v[TY_RES_GPU0 + t] = declared->v[TY_RES_GPU0 + t];
    ty_resources_format(&g, buf, len);
    if (!*buf)
        (void)snprintf(buf, len, "gpus=none");
    return buf;
}

static void note(char ***notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(char ***notes, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (!notes)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ty_strv_push(notes, buf);
}

#define DECLARE_HINT                                                                               \
    "declare the types of the devices with gpus=TYPE:N (trainyardd: --capacity gpus=TYPE:N; "      \
    "local train: TRAINYARD_GPUS=TYPE:N)"

/* Each real device's type: the declared one, else the driver's. */
static int type_real(struct ty_gpu_inventory *inv,
                     const struct ty_resources *declared,
                     const struct ty_gpu_order *order,
                     const char *where,
                     char ***notes,
                     struct ty_error *err)
{
    bool any;
    int64_t total = declared_total(declared, &any);
    char decl[256];

    if (any && total > (int64_t)inv->n)
        return ty_error_set(err,
                            EINVAL,
                            "%s: %s declares %" PRId64 " GPU device%s, and this host has %zu "
                            "NVIDIA GPU device%s under /dev",
                            where,
                            declaration(declared, decl, sizeof(decl)),
                            total,
                            total == 1 ? "" : "s",
                            inv->n,
                            inv->n == 1 ? "" : "s");
    for (size_t i = 0; i < inv->n; i++) {
        struct ty_gpu_dev *dv = &inv->dev[i];
        int driver = ty_gpu_model_type(dv->model);

        if (!any) {
            dv->type = driver;
            if (!dv->model)
                note(notes,
                     "%s: /dev/nvidia%d is not offered to jobs: the driver does not describe it "
                     "under /proc/driver/nvidia/gpus, so its type is not known; " DECLARE_HINT,
                     where,
                     dv->number);
            else if (driver < 0)
                note(notes,
                     "%s: /dev/nvidia%d is not offered to jobs: its model \"%s\" is none of the "
                     "API's GPU types (NVIDIA_TESLA_K80, _P100, _V100, _P4, _T4, "
                     "_A100); " DECLARE_HINT,
                     where,
                     dv->number,
                     dv->model);
            continue;
        }
        dv->type = declared_type(declared, order, (int64_t)i);
        if (dv->type < 0)
            note(notes,
                 "%s: /dev/nvidia%d is not offered to jobs: %s declares only %" PRId64 " device%s",
                 where,
                 dv->number,
                 declaration(declared, decl, sizeof(decl)),
                 total,
                 total == 1 ? "" : "s");
        else if (driver >= 0 && driver != dv->type)
            note(notes,
                 "%s: /dev/nvidia%d is declared %s, and the driver says it is a \"%s\" (%s); "
                 "the declaration is used",
                 where,
                 dv->number,
                 ty_gpu_type_name(dv->type),
                 dv->model,
                 ty_gpu_type_name(driver));
    }
    return 0;
}

static int load_real(const struct ty_resources *declared,
                     const struct ty_gpu_order *order,
                     const char *root,
                     const char *where,
                     struct ty_gpu_inventory *inv,
                     char ***notes,
                     struct ty_error *err)
{
    _cleanup_free_ int *nums = NULL;
    size_t n = 0;
    int r = scan_dev(root, &nums, &n, err);

    if (r < 0)
        return ty_error_prefix(err, r, "%s: cannot list the GPU devices", where);
    inv->dev = xcalloc(n ? n : 1, sizeof(*inv->dev));
    inv->n = n;
    for (size_t i = 0; i < n; i++)
        inv->dev[i] = (struct ty_gpu_dev){.number = nums[i], .type = -1};
    read_models(root, inv);
    inv->lock_dir = join(root, "run/trainyard");
    return type_real(inv, declared, order, where, notes, err);
}

static int load_stand_in(const struct ty_resources *declared,
                         const struct ty_gpu_order *order,
                         const char *state_dir,
                         const char *where,
                         struct ty_gpu_inventory *inv,
                         struct ty_error *err)
{
    bool any;
    int64_t total = declared_total(declared, &any);
    struct stat st;
    int r;

    if (!any)
        return ty_error_set(err,
                            EINVAL,
                            "%s: stand-in GPU devices are the declared ones, and none are "
                            "declared (declare them with gpus=TYPE:N[+TYPE:N...])",
                            where);
    if (!state_dir || !*state_dir)
        return ty_error_set(
            err, EINVAL, "%s: stand-in GPU devices need a state directory for their locks", where);
    inv->dev = xcalloc(total ? (size_t)total : 1, sizeof(*inv->dev));
    inv->n = (size_t)total;
    for (int64_t i = 0; i < total; i++)
        inv->dev[i] =
            (struct ty_gpu_dev){.number = (int)i, .type = declared_type(declared, order, i)};
    inv->lock_dir = xasprintf("%s/stand-in-gpus", state_dir);
    if (lstat(inv->lock_dir, &st) == 0)
        return 0;
    r = ty_mkdir_p(inv->lock_dir, 0755, err);
    if (r < 0)
        return ty_error_prefix(err, r, "%s: stand-in GPU locks", where);
    (void)chmod(inv->lock_dir, 0755); /* whatever the umask: every user's runs lock there */
    return 0;
}

int ty_gpu_inventory_load(bool stand_in,
                          const struct ty_resources *declared,
                          const struct ty_gpu_order *order,
                          const char *root,
                          const char *state_dir,
                          const char *where,
                          struct ty_gpu_inventory *inv,
                          char ***notes,
                          struct ty_error *err)
{
    int r;

    memset(inv, 0, sizeof(*inv));
    inv->stand_in = stand_in;
    r = stand_in ? load_stand_in(declared, order, state_dir, where, inv, err)
                 : load_real(declared, order, root ? root : "/", where, inv, notes, err);
    if (r < 0)
        ty_gpu_inventory_release(inv);
    return r;
}

void ty_gpu_inventory_release(struct ty_gpu_inventory *inv)
{
    if (!inv)
        return;
    for (size_t i = 0; i < inv->n; i++)
        free(inv->dev[i].model);
    free(inv->dev);
    free(inv->lock_dir);
    memset(inv, 0, sizeof(*inv));
}

void ty_gpu_inventory_types(const struct ty_gpu_inventory *inv, int *types)
{
    for (size_t i = 0; i < inv->n; i++)
        types[i] = inv->dev[i].type;
}

void ty_gpu_inventory_count(const struct ty_gpu_inventory *inv, struct ty_resources *r)
{
    for (int t = 0; t < TY_GPU_NTYPES; t++)
        r->v[TY_RES_GPU0 + t] = 0;
    for (size_t i = 0; i < inv->n; i++)
        if (inv->dev[i].type >= 0)
            r->v[TY_RES_GPU0 + inv->dev[i].type]++;
}

const struct ty_gpu_dev *ty_gpu_inventory_find(const struct ty_gpu_inventory *inv, int number)
{
    for (size_t i = 0; i < inv->n; i++)
        if (inv->dev[i].number == number)
            return &inv->dev[i];
    return NULL;
}

const char *ty_gpu_lock_path(const struct ty_gpu_inventory *inv, int number, char *buf, size_t len)
{
    (void)snprintf(buf, len, "%s/gpu-%d.lock", inv->lock_dir ? inv->lock_dir : ".", number);
    return buf;
}

/* Open (making it, 0644, when missing) the lock file @path. Returns the fd or -errno. */
static int open_lock(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);

    if (fd >= 0) {
        (void)fchmod(fd, 0644); /* whatever the umask: every user's runs lock it */
        return fd;
    }
    if (errno != EEXIST)
        return -errno;
    fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == EACCES) /* another user's lock file: flock needs no write access */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    return fd < 0 ? -errno : fd;
}

int ty_gpu_lock(const struct ty_gpu_inventory *inv, int number)
{
    char path[4096];
    struct stat st;
    int fd;

    if (!ty_gpu_inventory_find(inv, number) || !inv->lock_dir)
        return -ENODEV;
    if (lstat(inv->lock_dir, &st) < 0) {
        int r = ty_mkdir_p(inv->lock_dir, 0755, NULL);
        if (r < 0)
            return r;
        (void)chmod(inv->lock_dir, 0755); /* whatever the umask */
    }
    fd = open_lock(ty_gpu_lock_path(inv, number, path, sizeof(path)));
    if (fd < 0)
        return fd;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int r = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
        close(fd);
        return r;
    }
    return fd;
}

bool ty_gpu_busy(const struct ty_gpu_inventory *inv, int number)
{
    char path[4096];
    int fd;
    bool busy;

    if (!ty_gpu_inventory_find(inv, number) || !inv->lock_dir)
        return false;
    fd = open(ty_gpu_lock_path(inv, number, path, sizeof(path)), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    busy = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd); /* lets a shared lock taken here go */
    return busy;
}
