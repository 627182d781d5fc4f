/* SPDX-License-Identifier: Apache-2.0
 * test-gpudev.c: the GPU devices and grants (gpudev.c, grant.c): model names to API types
 * (a P40 is not a P4), the devices of a fake host tree (digits-only /dev/nvidia<N>, types by
 * "Device Minor:", notes for unknown models and undescribed devices), declared types over
 * found devices and their errors, stand-ins, the lock files (two open files of this process
 * conflict, as two processes would; modes; no symbolic links followed), the grant's JSON form
 * and its bad forms naming the field, the devices of each replica of each trial slot, and the
 * admission log line. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fdutil.h"
#include "gpudev.h"
#include "json.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

static char tmpdir[] = "/tmp/ty-gpudev-XXXXXX";

static void put(const char *rel, const char *text)
{
    _cleanup_free_ char *path = xasprintf("%s/%s", tmpdir, rel);
    char *slash = strrchr(path, '/');
    FILE *f;

    *slash = '\0';
    if (ty_mkdir_p(path, 0755, NULL) < 0)
        BAIL_OUT("mkdir %s", path);
    *slash = '/';
    f = fopen(path, "w");
    if (!f)
        BAIL_OUT("create %s", path);
    fputs(text, f);
    fclose(f);
}

static void info(const char *bus, const char *model, int minor)
{
    _cleanup_free_ char *rel = xasprintf("host/proc/driver/nvidia/gpus/%s/information", bus);
    _cleanup_free_ char *text = xasprintf("Model: \t\t %s\nIRQ:             38\n"
                                          "GPU UUID: \t GPU-1234\nDevice Minor: \t %d\n"
                                          "Bus Location: \t %s\n",
                                          model,
                                          minor,
                                          bus);
    put(rel, text);
}

static void test_models(void)
{
    is_int(ty_gpu_model_type("Tesla T4"), 4, "Tesla T4 is NVIDIA_TESLA_T4");
    is_int(ty_gpu_model_type("Tesla V100-SXM2-16GB"), 2, "Tesla V100-SXM2-16GB is a V100");
    is_int(ty_gpu_model_type("A100-SXM4-40GB"), 5, "A100-SXM4-40GB is an A100");
    is_int(ty_gpu_model_type("NVIDIA A100-PCIE-40GB"), 5, "NVIDIA A100-PCIE-40GB is an A100");
    is_int(ty_gpu_model_type("Tesla K80"), 0, "Tesla K80");
    is_int(ty_gpu_model_type("Tesla P100-PCIE-16GB"), 1, "Tesla P100-PCIE-16GB");
    is_int(ty_gpu_model_type("Tesla P4"), 3, "Tesla P4");
    is_int(ty_gpu_model_type("Tesla P40"), -1, "a P40 is not a P4");
    is_int(ty_gpu_model_type("Tesla V100S-PCIE-32GB"), -1, "a V100S is not an API type");
    is_int(ty_gpu_model_type("NVIDIA A10"), -1, "an A10 is not an A100");
    is_int(ty_gpu_model_type("NVIDIA GeForce RTX 3090"), -1, "a GeForce is none");
    is_int(ty_gpu_model_type(NULL), -1, "no model is none");
}

/* A host with /dev/nvidia0, 1, 3 and 10 (and the driver's other files), described by the
 * driver as a T4, a P40 and a V100; nvidia10 undescribed. */
static void make_host(void)
{
    static const char *const devs[] = {"nvidia0",
                                       "nvidia1",
                                       "nvidia3",
                                       "nvidia10",
                                       "nvidiactl",
                                       "nvidia-uvm",
                                       "nvidia-uvm-tools",
                                       "nvidia-modeset",
                                       "nvidia2x",
                                       "null"};
    for (size_t i = 0; i < TY_ARRAY_SIZE(devs); i++) {
        _cleanup_free_ char *rel = xasprintf("host/dev/%s", devs[i]);
        put(rel, "");
    }
    info("0000:00:04.0", "Tesla T4", 0);
    info("0000:00:05.0", "Tesla P40", 1);
    info("0000:00:06.0", "Tesla V100-SXM2-16GB", 3);
}

static void test_real(void)
{
    _cleanup_free_ char *root = xasprintf("%s/host", tmpdir);
    struct ty_gpu_inventory inv;
    struct ty_resources r, decl;
    struct ty_error e = {0};
    char **notes = NULL;
    int types[8];

    make_host();
    ok(ty_gpu_inventory_load(false, NULL, NULL, root, NULL, "--capacity", &inv, &notes, &e) == 0,
       "the host's devices load: %s",
       e.msg);
    is_int(inv.n, 4, "nvidia<digits> only: 4 devices");
    is_int(inv.dev[0].number, 0, "device 0");
    is_int(inv.dev[3].number, 10, "device 10 last (number order, not name order)");
    ty_gpu_inventory_types(&inv, types);
    ok(types[0] == 4 && types[1] == -1 && types[2] == 2 && types[3] == -1,
       "types by Device Minor: T4, unknown (P40), V100, unknown (undescribed)");
    is_str(inv.dev[1].model, "Tesla P40", "the driver's model is kept");
    ok(!inv.stand_in, "real devices");
    is_int(ty_strv_len(notes), 2, "two notes");
    like(notes ? notes[0] : NULL, "--capacity: /dev/nvidia1", "a note names the device");
    like(notes ? notes[0] : NULL, "\"Tesla P40\" is none of the API's GPU types", "and the model");
    like(notes ? notes[0] : NULL, "--capacity gpus=TYPE:N", "and how to declare it");
    like(notes ? notes[1] : NULL, "/dev/nvidia10", "the undescribed device");
    like(notes ? notes[1] : NULL, "does not describe it", "is said to be undescribed");
    ty_resources_unlimited(&r);
    ty_gpu_inventory_count(&inv, &r);
    ok(r.v[TY_RES_GPU0 + 4] == 1 && r.v[TY_RES_GPU0 + 2] == 1 && r.v[TY_RES_GPU0 + 0] == 0 &&
           r.v[TY_RES_CPUS] == TY_RES_UNLIMITED,
       "counted: one T4, one V100, no K80; the CPUs untouched");
    ty_gpu_inventory_release(&inv);
    notes = ty_strv_free(notes);

    ty_resources_unlimited(&decl);
    if (ty_resources_parse("gpus=NVIDIA_TESLA_T4:2", false, "x", &decl, &e) < 0)
        BAIL_OUT("%s", e.msg);
    ok(ty_gpu_inventory_load(false, &decl, NULL, root, NULL, "--capacity", &inv, &notes, &e) == 0,
       "declared T4:2 loads: %s",
       e.msg);
    ty_gpu_inventory_types(&inv, types);
    ok(types[0] == 4 && types[1] == 4 && types[2] == -1 && types[3] == -1,
       "the first two devices are T4s; the others not offered");
    is_int(ty_strv_len(notes), 2, "a note for each device not offered");
    like(notes ? notes[0] : NULL,
         "/dev/nvidia3 is not offered to jobs: gpus=NVIDIA_TESLA_T4:2 declares only 2 devices",
         "names the declaration");
    ty_gpu_inventory_release(&inv);
    notes = ty_strv_free(notes);

    if (ty_resources_parse("gpus=NVIDIA_TESLA_T4:1+NVIDIA_TESLA_V100:1", false, "x", &decl, &e) < 0)
        BAIL_OUT("%s", e.msg);
    ok(ty_gpu_inventory_load(false, &decl, NULL, root, NULL, "TRAINYARD_GPUS", &inv, &notes, &e) ==
           0,
       "declared T4:1+V100:1 loads");
    ty_gpu_inventory_types(&inv, types);
    ok(types[0] == 2 && types[1] == 4, "types in the enum's order: V100 (device 0), T4 (1)");
    like(notes ? notes[0] : NULL,
         "TRAINYARD_GPUS: /dev/nvidia0 is declared NVIDIA_TESLA_V100, and the driver says it is "
         "a \"Tesla T4\" (NVIDIA_TESLA_T4); the declaration is used",
         "a declaration that differs from the driver is noted");
    ty_gpu_inventory_release(&inv);
    notes = ty_strv_free(notes);

    /* As the declaration writes them (ty_resources_parse_ordered): device 0 a T4, 1 a V100,
     * 2 a T4 again, as the driver says too */
    {
        _cleanup_(ty_gpu_order_release) struct ty_gpu_order order = {0};
        if (ty_resources_parse_ordered("gpus=NVIDIA_TESLA_T4:1+NVIDIA_TESLA_V100:1+"
                                       "nvidia-tesla-t4:1",
                                       false,
                                       "x",
                                       &decl,
                                       &order,
                                       &e) < 0)
            BAIL_OUT("%s", e.msg);
        ok(order.n == 3 && order.types[0] == 4 && order.types[1] == 2 && order.types[2] == 4,
           "the order as written: T4, V100, T4");
        ok(ty_gpu_inventory_load(
               false, &decl, &order, root, NULL, "--capacity", &inv, &notes, &e) == 0,
           "declared T4:1+V100:1+T4:1 in that order loads");
        ty_gpu_inventory_types(&inv, types);
        ok(types[0] == 4 && types[1] == 2 && types[2] == 4,
           "types in the order written: T4 (device 0), V100 (1), T4 (2)");
        ok(!notes || !strstr(notes[0], "/dev/nvidia0 is declared"),
           "no note that device 0 differs from the driver's type");
        ty_gpu_inventory_release(&inv);
        notes = ty_strv_free(notes);
    }

    if (ty_resources_parse("gpus=NVIDIA_TESLA_A100:5", false, "x", &decl, &e) < 0)
        BAIL_OUT("%s", e.msg);
    is_int(ty_gpu_inventory_load(false, &decl, NULL, root, NULL, "--capacity", &inv, &notes, &e),
           -EINVAL,
           "more declared than found is an error");
    is_str(e.msg,
           "--capacity: gpus=NVIDIA_TESLA_A100:5 declares 5 GPU devices, and this host has 4 "
           "NVIDIA GPU devices under /dev",
           "naming the setting, the declaration and what was found");
    ok(inv.n == 0 && inv.dev == NULL, "the inventory is left empty");

    _cleanup_free_ char *empty = xasprintf("%s/empty", tmpdir);
    ok(ty_gpu_inventory_load(false, NULL, NULL, empty, NULL, "--capacity", &inv, &notes, &e) == 0 &&
           inv.n == 0 && notes == NULL,
       "a host without /dev/nvidia*: no devices, no notes");
    ty_gpu_inventory_release(&inv);
}

static void test_stand_in_and_locks(void)
{
    _cleanup_free_ char *state = xasprintf("%s/state", tmpdir);
    _cleanup_free_ char *lockdir = xasprintf("%s/state/stand-in-gpus", tmpdir);
    struct ty_gpu_inventory inv;
    struct ty_resources decl;
    struct ty_error e = {0};
    struct stat sb;
    char path[4096];
    int fd0, fd0b, fd1;
    mode_t old;

    ty_resources_unlimited(&decl);
    is_int(ty_gpu_inventory_load(true, &decl, NULL, "/", state, "--gpu-devices", &inv, NULL, &e),
           -EINVAL,
           "stand-ins without a declaration are refused");
    like(e.msg, "--gpu-devices: stand-in GPU devices are the declared ones", "saying why");
    if (ty_resources_parse("gpus=NVIDIA_TESLA_T4:2+NVIDIA_TESLA_K80:1", false, "x", &decl, &e) < 0)
        BAIL_OUT("%s", e.msg);
    ok(ty_gpu_inventory_load(true, &decl, NULL, "/", state, "--capacity", &inv, NULL, &e) == 0,
       "stand-ins load: %s",
       e.msg);
    ok(inv.stand_in && inv.n == 3, "three stand-ins");
    ok(inv.dev[0].number == 0 && inv.dev[0].type == 0 && inv.dev[1].type == 4 &&
           inv.dev[2].number == 2 && inv.dev[2].type == 4 && !inv.dev[0].model,
       "numbered from 0: a K80, then two T4s");
    ok(stat(lockdir, &sb) == 0 && S_ISDIR(sb.st_mode), "STATE/stand-in-gpus is made");

    old = umask(077);
    fd0 = ty_gpu_lock(&inv, 0);
    umask(old);
    ok(fd0 >= 0, "device 0 locks");
    ok(stat(ty_gpu_lock_path(&inv, 0, path, sizeof(path)), &sb) == 0 && (sb.st_mode & 0777) == 0644,
       "its lock file is 0644 whatever the umask");
    ok(fcntl(fd0, F_GETFD) & FD_CLOEXEC, "the lock fd is close-on-exec");
    fd0b = ty_gpu_lock(&inv, 0);
    is_int(fd0b, -EWOULDBLOCK, "a second open file cannot lock device 0");
    ok(ty_gpu_busy(&inv, 0), "device 0 is busy");
    ok(!ty_gpu_busy(&inv, 1), "device 1 is not (no lock file yet)");
    fd1 = ty_gpu_lock(&inv, 1);
    ok(fd1 >= 0, "device 1 locks");
    ok(ty_gpu_busy(&inv, 1), "then it is busy");
    close(fd1);
    ok(!ty_gpu_busy(&inv, 1), "closing the fd lets it go (and the probe leaves it free)");
    fd1 = ty_gpu_lock(&inv, 1);
    ok(fd1 >= 0, "so it locks again");
    close(fd1);
    close(fd0);
    fd0 = ty_gpu_lock(&inv, 0);
    ok(fd0 >= 0, "device 0 locks again once its holder closed it");
    close(fd0);
    is_int(ty_gpu_lock(&inv, 3), -ENODEV, "no device 3");
    if (symlink("/etc/passwd", ty_gpu_lock_path(&inv, 2, path, sizeof(path))) < 0)
        BAIL_OUT("symlink");
    is_int(ty_gpu_lock(&inv, 2), -ELOOP, "a symbolic link in place of a lock file is refused");
    ty_gpu_inventory_release(&inv);

    _cleanup_free_ char *root = xasprintf("%s/host", tmpdir);
    _cleanup_free_ char *run = xasprintf("%s/host/run/trainyard", tmpdir);
    ok(ty_gpu_inventory_load(false, NULL, NULL, root, NULL, "--capacity", &inv, NULL, &e) == 0,
       "the fake host loads again");
    fd0 = ty_gpu_lock(&inv, 3);
    ok(fd0 >= 0 && stat(run, &sb) == 0 && (sb.st_mode & 0777) == 0755,
       "a real device locks under ROOT/run/trainyard, made 0755");
    is_str(ty_gpu_lock_path(&inv, 3, path, sizeof(path)) + strlen(root),
           "/run/trainyard/gpu-3.lock",
           "the lock file of /dev/nvidia3");
    is_int(ty_gpu_lock(&inv, 2), -ENODEV, "no /dev/nvidia2 on this host");
    close(fd0);
    ty_gpu_inventory_release(&inv);
    ty_gpu_inventory_release(&inv);
    ty_gpu_inventory_release(NULL);
}

static void bad_grant(const char *text, const char *msg, const char *name)
{
    _cleanup_json_ json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    struct ty_grant g;
    struct ty_error e = {0};

    if (!j)
        BAIL_OUT("bad test JSON %s", text);
    is_int(ty_grant_from_json(j, &g, &e), -EINVAL, "%s is refused", name);
    is_str(e.msg, msg, "%s: the message names the field", name);
    ok(g.gpus == NULL && g.ngpus == 0, "%s: nothing is left allocated", name);
}

static void test_grant_json(void)
{
    int gpus[] = {3, 0, 7};
    struct ty_grant g = {.trials = 3, .gpus = gpus, .ngpus = 3, .stand_in = true}, back;
    _cleanup_json_ json_t *j = ty_grant_to_json(&g);
    _cleanup_free_ char *text = ty_json_compact(j);
    _cleanup_json_ json_t *minimal = json_pack("{s:i,s:s}", "trials", 1, "other", "x");
    struct ty_error e = {0};

    is_str(text, "{\"trials\":3,\"gpus\":[3,0,7],\"gpuStandIn\":true}", "the JSON form");
    ok(ty_grant_from_json(j, &back, &e) == 0, "it reads back: %s", e.msg);
    ok(back.trials == 3 && back.ngpus == 3 && back.gpus[0] == 3 && back.gpus[2] == 7 &&
           back.stand_in,
       "the same grant");
    ty_grant_release(&back);
    ok(back.gpus == NULL && back.ngpus == 0, "released");
    ok(ty_grant_from_json(minimal, &back, &e) == 0 && back.trials == 1 && back.ngpus == 0 &&
           !back.stand_in,
       "gpus and gpuStandIn are optional; other members ignored");
    ty_grant_release(&back);

    bad_grant("[1]", "grant: expected a JSON object", "an array");
    bad_grant("{}", "grant: trials: expected an integer from 1 to 100000 (required)", "no trials");
    bad_grant("{\"trials\":0}",
              "grant: trials: expected an integer from 1 to 100000 (required)",
              "trials 0");
    bad_grant("{\"trials\":1,\"gpus\":3}",
              "grant: gpus: expected an array of device numbers",
              "gpus not an array");
    bad_grant("{\"trials\":1,\"gpus\":[0,\"1\"]}",
              "grant: gpus[1]: expected a device number from 0 to 65535",
              "a device that is a string");
    bad_grant("{\"trials\":1,\"gpus\":[-1]}",
              "grant: gpus[0]: expected a device number from 0 to 65535",
              "a negative device");
    bad_grant("{\"trials\":1,\"gpus\":[4,5,4]}",
              "grant: gpus[2]: device 4 is given twice (also gpus[0])",
              "a device given twice");
    bad_grant("{\"trials\":1,\"gpuStandIn\":\"yes\"}",
              "grant: gpuStandIn: expected true or false",
              "gpuStandIn not a boolean");
}

/* A demand: 1 master with 1 T4, 2 workers with 2 T4 each, 1 ps without, 1 evaluator with 1
 * T4: 6 GPUs per trial. */
static void demand(struct ty_demand *d)
{
    memset(d, 0, sizeof(*d));
    d->tuning = true;
    d->max_trials = 3;
    d->role_count[TY_ROLE_MASTER] = 1;
    d->role_count[TY_ROLE_WORKER] = 2;
    d->role_count[TY_ROLE_PS] = 1;
    d->role_count[TY_ROLE_EVALUATOR] = 1;
    d->role_gpus[TY_ROLE_MASTER] = 1;
    d->role_gpus[TY_ROLE_WORKER] = 2;
    d->role_gpus[TY_ROLE_EVALUATOR] = 1;
    for (int r = 0; r < TY_ROLE_MAX; r++)
        d->role_gpu_type[r] = d->role_gpus[r] ? 4 : -1;
    d->trial.v[TY_RES_JOBS] = 1;
    d->trial.v[TY_RES_CPUS] = 8;
    d->trial.v[TY_RES_MEMORY] = 30 * 1024;
    d->trial.v[TY_RES_GPU0 + 4] = 6;
}

static void test_replica_gpus(void)
{
    int gpus[12];
    struct ty_grant g = {.trials = 2, .gpus = gpus, .ngpus = 12};
    struct ty_demand d;
    const int *p;
    size_t n = 99;

    for (int i = 0; i < 12; i++)
        gpus[i] = 100 + i;
    demand(&d);
    p = ty_grant_replica_gpus(&g, &d, 0, TY_ROLE_MASTER, 0, &n);
    ok(p && n == 1 && p[0] == 100, "slot 0, master 0: the first device");
    p = ty_grant_replica_gpus(&g, &d, 0, TY_ROLE_WORKER, 1, &n);
    ok(p && n == 2 && p[0] == 103 && p[1] == 104,
       "slot 0, worker 1: after the master and worker 0");
    p = ty_grant_replica_gpus(&g, &d, 0, TY_ROLE_PS, 0, &n);
    ok(!p && n == 0, "slot 0, ps 0: none");
    p = ty_grant_replica_gpus(&g, &d, 0, TY_ROLE_EVALUATOR, 0, &n);
    ok(p && n == 1 && p[0] == 105, "slot 0, evaluator 0: the last of the slot");
    p = ty_grant_replica_gpus(&g, &d, 1, TY_ROLE_MASTER, 0, &n);
    ok(p && n == 1 && p[0] == 106, "slot 1, master 0: the first of slot 1");
    p = ty_grant_replica_gpus(&g, &d, 1, TY_ROLE_WORKER, 0, &n);
    ok(p && n == 2 && p[0] == 107 && p[1] == 108, "slot 1, worker 0");
    p = ty_grant_replica_gpus(&g, &d, 1, TY_ROLE_EVALUATOR, 0, &n);
    ok(p && n == 1 && p[0] == 111, "slot 1, evaluator 0: the last device");
    p = ty_grant_replica_gpus(&g, &d, 2, TY_ROLE_MASTER, 0, &n);
    ok(!p && n == 0, "no slot 2 in a grant of 2 trials");
    p = ty_grant_replica_gpus(&g, &d, 0, TY_ROLE_WORKER, 2, &n);
    ok(!p && n == 0, "no worker 2");
    g.ngpus = 10;
    p = ty_grant_replica_gpus(&g, &d, 1, TY_ROLE_WORKER, 1, &n);
    ok(!p && n == 0, "a grant too short gives none");
    p = ty_grant_replica_gpus(&g, &d, 1, TY_ROLE_WORKER, 0, &n);
    ok(p && n == 2, "but what it covers it gives");
    ok(ty_grant_replica_gpus(NULL, &d, 0, TY_ROLE_MASTER, 0, &n) == NULL && n == 0,
       "no grant: none");
}

static void test_describe(void)
{
    int gpus[] = {0, 1}, six[] = {5, 4, 3, 2, 1, 0};
    struct ty_grant g = {.trials = 2, .gpus = gpus, .ngpus = 2, .stand_in = true};
    struct ty_demand d;
    char buf[512];

    memset(&d, 0, sizeof(d));
    d.tuning = true;
    d.role_count[TY_ROLE_MASTER] = 1;
    d.role_gpus[TY_ROLE_MASTER] = 1;
    d.role_gpu_type[TY_ROLE_MASTER] = 4;
    d.trial.v[TY_RES_CPUS] = 8;
    d.trial.v[TY_RES_MEMORY] = 30 * 1024;
    is_str(ty_grant_describe(&g, &d, 12345678, buf, sizeof(buf)),
           "Admitted after 12.3 s in the queue: 2 trials at once, each 8 vCPUs and 30.0 GiB of "
           "memory; GPUs 0, 1 (NVIDIA_TESLA_T4, stand-ins).",
           "a tuning job with stand-ins");
    d.tuning = false;
    g.trials = 1;
    g.ngpus = 0;
    is_str(ty_grant_describe(&g, &d, 200000, buf, sizeof(buf)),
           "Admitted after 0.2 s in the queue: 8 vCPUs and 30.0 GiB of memory.",
           "a plain job without GPUs");
    demand(&d);
    d.tuning = false;
    d.role_gpu_type[TY_ROLE_EVALUATOR] = 2;
    g.ngpus = 6;
    g.gpus = six;
    g.stand_in = false;
    is_str(ty_grant_describe(&g, &d, 0, buf, sizeof(buf)),
           "Admitted after 0.0 s in the queue: 8 vCPUs and 30.0 GiB of memory; GPUs 5, 4, 3, 2, "
           "1 (NVIDIA_TESLA_T4), 0 (NVIDIA_TESLA_V100).",
           "devices of two types, grouped");
    is_str(ty_grant_describe(&g, &d, 0, buf, 20), "Admitted after 0.0 ", "cut at the length");
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        BAIL_OUT("mkdtemp");
    test_models();
    test_real();
    test_stand_in_and_locks();
    test_grant_json();
    test_replica_gpus();
    test_describe();
    (void)nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
