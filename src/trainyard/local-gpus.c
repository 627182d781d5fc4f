/* SPDX-License-Identifier: Apache-2.0
 * local-gpus.c: the GPUs of `trainyard local train` (local-gpus.h). The devices are found as
 * trainyardd finds them (gpudev.h), from settings read as gcloud reads its properties, the
 * environment over the config file: TRAINYARD_GPUS / gpus (TYPE:N[+TYPE:N...]: the types of
 * the first devices, or the stand-ins) and TRAINYARD_GPU_DEVICES / gpu_devices (nvidia, the
 * default, or stand-in). Stand-ins are locked under the state directory, so a `local train`
 * and a trainyardd with the same state directory share them; real devices under
 * /run/trainyard, shared by everything on the machine. */
#include "local-gpus.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cli.h"
#include "gpudev.h"
#include "macro.h"
#include "strv.h"
#include "supervise.h"
#include "timeutil.h"

#define PATH "local.train"

/* How often the wait tries again. */
#define RETRY_MSEC 1000

struct setting {
    char *value;  /* NULL when unset */
    char *source; /* "TRAINYARD_GPUS", "FILE:LINE: gpus" */
};

static void setting_release(struct setting *s)
{
    free(s->value);
    free(s->source);
}

/* @env over the config file's @key. */
static int read_setting(const char *env, const char *key, struct setting *s, struct ty_error *err)
{
    const char *v = getenv(env);
    _cleanup_free_ char *src = NULL;
    int r;

    if (v && *v) {
        s->value = xstrdup(v);
        s->source = xstrdup(env);
        return 0;
    }
    r = cli_config_value(key, &s->value, &src, err);
    if (r >= 0 && s->value)
        s->source = xasprintf("%s: %s", src, key);
    return r;
}

/* The settings into *@stand_in, *@decl (GPU dimensions counted when declared), *@order (the
 * declared devices' types in the order written) and @lg->how.
 * Returns 0, or -EINVAL with err naming the setting. */
static int read_settings(struct local_gpus *lg,
                         bool *stand_in,
                         struct ty_resources *decl,
                         struct ty_gpu_order *order,
                         char **where,
                         struct ty_error *err)
{
    struct setting gpus = {0}, devices = {0};
    int r;

    ty_resources_unlimited(decl);
    *stand_in = false;
    r = read_setting("TRAINYARD_GPU_DEVICES", "gpu_devices", &devices, err);
    if (r >= 0)
        r = read_setting("TRAINYARD_GPUS", "gpus", &gpus, err);
    if (r >= 0 && devices.value)
        r = ty_gpu_devices_parse(devices.value, devices.source, stand_in, err);
    if (r >= 0 && gpus.value) {
        _cleanup_free_ char *text = xasprintf("gpus=%s", gpus.value);
        r = ty_resources_parse_ordered(text, false, gpus.source, decl, order, err);
        lg->how = strcmp(gpus.source, "TRAINYARD_GPUS") == 0
                      ? xasprintf("TRAINYARD_GPUS=%s", gpus.value)
                      : xasprintf("%s = %s", gpus.source, gpus.value);
    }
    if (r >= 0)
        *where = xstrdup(gpus.source      ? gpus.source
                         : devices.source ? devices.source
                                          : "trainyard local train");
    setting_release(&gpus);
    setting_release(&devices);
    return r;
}

/* lg->how for the host's own devices (nothing declared). */
static char *host_how(const struct ty_gpu_inventory *inv)
{
    struct ty_resources have;
    char buf[256];

    if (inv->n == 0)
        return xstrdup("no NVIDIA GPU devices under /dev");
    ty_resources_unlimited(&have);
    ty_gpu_inventory_count(inv, &have);
    ty_resources_format(&have, buf, sizeof(buf));
    return xasprintf("%zu NVIDIA GPU device%s under /dev: %s",
                     inv->n,
                     inv->n == 1 ? "" : "s",
                     *buf ? buf : "none of a known type");
}

int local_gpus_setup(struct local_gpus *lg,
                     const struct ty_job *job,
                     const char *runtime,
                     const char *state_dir)
{
    _cleanup_free_ char *where = NULL;
    _cleanup_strv_free_ char **notes = NULL;
    _cleanup_(ty_gpu_order_release) struct ty_gpu_order order = {0};
    struct ty_resources decl, have;
    struct ty_error e = {0};
    bool stand_in = false;
    char why[1024];

    memset(lg, 0, sizeof(*lg));
    ty_demand_of_job(job, &lg->d);
    if (strcmp(runtime, "slurm") == 0 || ty_demand_trial_gpus(&lg->d) == 0)
        return 0; /* Slurm gives GPUs itself; a job without GPUs holds none */
    if (read_settings(lg, &stand_in, &decl, &order, &where, &e) < 0 ||
        ty_gpu_inventory_load(
            stand_in, &decl, &order, "/", state_dir, where, &lg->inv, &notes, &e) < 0) {
        cli_error(PATH, "%s", ty_error_msg(&e));
        return -1;
    }
    for (size_t i = 0; notes && notes[i]; i++)
        cli_warning("%s", notes[i]);
    if (!lg->how)
        lg->how = host_how(&lg->inv);
    ty_resources_unlimited(&have);
    ty_gpu_inventory_count(&lg->inv, &have);
    if (ty_demand_check(&lg->d, &have, "this machine", lg->how, why, sizeof(why)) < 0) {
        cli_error(PATH, "%s", why);
        return -1;
    }
    lg->locks = xcalloc(lg->inv.n, sizeof(int));
    lg->grant.gpus = xcalloc(lg->inv.n, sizeof(int));
    lg->active = true;
    return 0;
}

/* Let go of the devices locked from index @from of the grant on. */
static void unlock_from(struct local_gpus *lg, size_t from)
{
    while (lg->grant.ngpus > from) {
        lg->grant.ngpus--;
        close(lg->locks[lg->grant.ngpus]);
    }
}

static bool held(const struct local_gpus *lg, int number)
{
    for (size_t i = 0; i < lg->grant.ngpus; i++)
        if (lg->grant.gpus[i] == number)
            return true;
    return false;
}

/* Lock one device of @type that nobody holds, appending it to the grant. 1 when locked, 0
 * when every one is held, or -errno with @why. */
static int lock_one(struct local_gpus *lg, int type, char *why, size_t len)
{
    for (size_t i = 0; i < lg->inv.n; i++) {
        int number = lg->inv.dev[i].number, fd;
        char path[4096];

        if (lg->inv.dev[i].type != type || held(lg, number))
            continue;
        fd = ty_gpu_lock(&lg->inv, number);
        if (fd == -EWOULDBLOCK)
            continue;
        if (fd < 0) {
            (void)snprintf(why,
                           len,
                           "Cannot lock GPU %d (%s): %s",
                           number,
                           ty_gpu_lock_path(&lg->inv, number, path, sizeof(path)),
                           strerror(-fd));
            return fd;
        }
        lg->locks[lg->grant.ngpus] = fd;
        lg->grant.gpus[lg->grant.ngpus++] = number;
        return 1;
    }
    return 0;
}

/* Lock one trial's devices in the grant's order (role by role, replica by replica). 1 when
 * locked, 0 when some are held by other jobs (none of this trial's kept), or -errno. */
static int lock_trial(struct local_gpus *lg, char *why, size_t len)
{
    size_t start = lg->grant.ngpus;
    const struct ty_demand *d = &lg->d;

    for (int role = 0; role < TY_ROLE_MAX; role++)
        for (int64_t k = 0; k < d->role_count[role] * d->role_gpus[role]; k++) {
            int r = lock_one(lg, d->role_gpu_type[role], why, len);
            if (r <= 0) {
                unlock_from(lg, start);
                return r;
            }
        }
    return 1;
}

/* Why the job waits, into @buf ("" when no type is short: the devices were let go meanwhile). */
static void wait_reason(const struct local_gpus *lg, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int t = 0; t < TY_GPU_NTYPES; t++) {
        int64_t need = lg->d.trial.v[TY_RES_GPU0 + t], total = 0, free_n = 0;
        char amount[64];

        for (size_t i = 0; need > 0 && i < lg->inv.n; i++)
            if (lg->inv.dev[i].type == t) {
                total++;
                free_n += !ty_gpu_busy(&lg->inv, lg->inv.dev[i].number);
            }
        if (free_n >= need)
            continue;
        (void)snprintf(buf,
                       len,
                       "Waiting for %s: %" PRId64 " of %" PRId64 " free (%s held by other jobs)",
                       ty_res_amount(TY_RES_GPU0 + t, need, amount, sizeof(amount)),
                       free_n,
                       total,
                       free_n > 0   ? "the others are"
                       : total == 1 ? "it is"
                                    : "all are");
        return;
    }
}

/* Wait up to a second (less when @deadline, epoch µs, comes first) for a signal on @sig_fd.
 * Returns LOCAL_GPUS_HELD to try again, or how the wait ends. */
static enum local_gpus_wait pause_once(int sig_fd, int64_t deadline)
{
    int64_t ms = RETRY_MSEC;
    struct pollfd p = {.fd = sig_fd, .events = POLLIN};
    unsigned char c;
    bool sig = false;

    if (deadline > 0) {
        int64_t left = (deadline - ty_now_usec()) / 1000;
        if (left <= 0)
            return LOCAL_GPUS_EXPIRED;
        if (left < ms)
            ms = left;
    }
    if (poll(&p, sig_fd >= 0 ? 1 : 0, (int)ms) > 0)
        while (read(sig_fd, &c, 1) == 1)
            sig = true;
    if (sig)
        return LOCAL_GPUS_CANCELLED;
    return deadline > 0 && ty_now_usec() >= deadline ? LOCAL_GPUS_EXPIRED : LOCAL_GPUS_HELD;
}

enum local_gpus_wait local_gpus_acquire(struct local_gpus *lg,
                                        const struct ty_job *job,
                                        int sig_fd,
                                        int64_t create_usec,
                                        char *why,
                                        size_t len)
{
    int64_t deadline = ty_run_wait_deadline(job, create_usec);
    char said[512] = "", now[512];
    int slots = 0, r = 0;

    if (!lg->active)
        return LOCAL_GPUS_HELD;
    for (;;) {
        enum local_gpus_wait w;
        while (slots < lg->d.max_trials && (r = lock_trial(lg, why, len)) > 0)
            slots++;
        if (slots > 0)
            break;
        if (r < 0)
            return LOCAL_GPUS_ERROR;
        wait_reason(lg, now, sizeof(now));
        if (*now && strcmp(now, said) != 0) {
            fprintf(stderr, "%s\n", now);
            memcpy(said, now, sizeof(said));
        }
        w = pause_once(sig_fd, deadline);
        if (w == LOCAL_GPUS_CANCELLED)
            (void)snprintf(why, len, "Job cancelled by the user.");
        if (w == LOCAL_GPUS_EXPIRED)
            ty_run_wait_expired(job, why, len);
        if (w != LOCAL_GPUS_HELD)
            return w;
    }
    lg->grant.trials = slots;
    lg->grant.stand_in = lg->inv.stand_in;
    lg->run = (struct ty_run_gpus){
        .trials = slots,
        .gpus = lg->grant.gpus,
        .ngpus = lg->grant.ngpus,
        .stand_in = lg->inv.stand_in,
    };
    ty_grant_describe(
        &lg->grant, &lg->d, ty_now_usec() - create_usec, lg->admitted, sizeof(lg->admitted));
    return LOCAL_GPUS_HELD;
}

void local_gpus_release(struct local_gpus *lg)
{
    if (!lg)
        return;
    unlock_from(lg, 0);
    free(lg->locks);
    ty_grant_release(&lg->grant);
    ty_gpu_inventory_release(&lg->inv);
    free(lg->how);
    memset(lg, 0, sizeof(*lg));
}
