/* SPDX-License-Identifier: Apache-2.0
 * slurm-refusal.c: a run's task shape (what sbatch is asked for) and sbatch's refusals
 * explained in trainyard's terms (slurm-refusal.h). Slurm says only "Requested node
 * configuration is not available"; the user needs what was asked for, which replica's
 * machine type decided it, and which setting changes it. */
#include "slurm-refusal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "machine.h"
#include "slurm-internal.h"

static const char *env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* "master n1-standard-16", "worker 1 n1-highmem-8" (the index when the role has several). */
static void describe(const struct ty_replica *r, const char *what, char *buf, size_t len)
{
    (void)snprintf(buf, len, "%s %d %s", ty_role_name(r->role), r->index, what);
    if (r->role == TY_ROLE_MASTER)
        (void)snprintf(buf, len, "master %s", what);
}

void slurm_shape_of(const struct slurm_rt *s, struct slurm_shape *sh)
{
    const char *mem = env_set("TRAINYARD_SLURM_MEMORY");

    memset(sh, 0, sizeof(*sh));
    sh->ntasks = s->n;
    sh->cpus = 1;
    for (size_t i = 0; i < s->n; i++) {
        const struct ty_replica *r = s->reps[i].r;
        const struct ty_machine_type *mt =
            r->machine_type ? ty_machine_lookup(r->machine_type) : NULL;
        bool accel = r->accel && r->accel->count;
        int64_t g = accel ? r->accel->count : mt ? mt->gpus : 0;
        if (mt && mt->vcpus > sh->cpus) {
            sh->cpus = mt->vcpus;
            describe(r, mt->name, sh->cpus_from, sizeof(sh->cpus_from));
        }
        if (mt && mt->memory_mb > sh->mem_mb) {
            sh->mem_mb = mt->memory_mb;
            describe(r, mt->name, sh->mem_from, sizeof(sh->mem_from));
        }
        if (g > sh->gpus) {
            sh->gpus = g;
            describe(
                r, accel ? "acceleratorConfig" : mt->name, sh->gpus_from, sizeof(sh->gpus_from));
        }
    }
    sh->mem_asked = sh->mem_mb > 0 && !(mem && strcmp(mem, "none") == 0);
    sh->partition = env_set("TRAINYARD_SLURM_PARTITION");
    sh->account = env_set("TRAINYARD_SLURM_ACCOUNT");
    sh->qos = env_set("TRAINYARD_SLURM_QOS");
    sh->extra = env_set("TRAINYARD_SLURM_SBATCH_ARGS");
}

enum refusal { NOT_OURS, SHAPE, PARTITION, ACCOUNT, TIME };

/* Slurm's messages (slurm_strerror) for what trainyard chose. */
static const struct {
    const char *words;
    enum refusal kind;
} refusals[] = {
    {"Requested node configuration is not available", SHAPE},
    {"More processors requested than permitted", SHAPE},
    {"Memory required by task is not available", SHAPE},
    {"Invalid generic resource (gres) specification", SHAPE},
    {"Node count specification invalid", SHAPE},
    {"Requested partition configuration not available now", PARTITION},
    {"invalid partition specified", PARTITION},
    {"Invalid account or account/partition combination specified", ACCOUNT},
    {"Invalid qos specification", ACCOUNT},
    {"Job violates accounting/QOS policy", ACCOUNT},
    {"Requested time limit is invalid", TIME},
};

/* What trainyard asked for, as a clause: "4 tasks (on any nodes), each 16 CPUs (master
 * n1-standard-16), 60.0 GiB of memory (master n1-standard-16) and 1 GPU (worker 0
 * acceleratorConfig), in the partition 'gpu'". */
static void put_asked(struct ty_buf *b, const struct slurm_shape *sh)
{
    ty_buf_printf(b,
                  "trainyard asked for %zu task%s (on any nodes), each %d CPU%s",
                  sh->ntasks,
                  sh->ntasks == 1 ? "" : "s",
                  sh->cpus,
                  sh->cpus == 1 ? "" : "s");
    if (*sh->cpus_from)
        ty_buf_printf(b, " (%s)", sh->cpus_from);
    if (sh->mem_asked)
        ty_buf_printf(b,
                      ", %.1f GiB of memory (%s; --mem-per-cpu=%" PRId64 "M)",
                      (double)sh->mem_mb / 1024,
                      sh->mem_from,
                      (sh->mem_mb + sh->cpus - 1) / sh->cpus);
    else
        ty_buf_puts(b, ", the cluster's default memory");
    if (sh->gpus > 0)
        ty_buf_printf(b,
                      " and %" PRId64 " GPU%s (%s; --gpus-per-task)",
                      sh->gpus,
                      sh->gpus == 1 ? "" : "s",
                      sh->gpus_from);
    if (sh->partition)
        ty_buf_printf(b, ", in the partition '%s'", sh->partition);
    else
        ty_buf_puts(b, ", in the cluster's default partition");
    if (sh->account)
        ty_buf_printf(b, ", account '%s'", sh->account);
    if (sh->qos)
        ty_buf_printf(b, ", QOS '%s'", sh->qos);
    if (sh->extra)
        ty_buf_printf(b, ", with '%s' (TRAINYARD_SLURM_SBATCH_ARGS)", sh->extra);
}

static void put_fix(struct ty_buf *b, enum refusal kind, const struct slurm_shape *sh)
{
    switch (kind) {
    case SHAPE:
        ty_buf_puts(b,
                    ". Every task asks for the largest replica's resources: give the roles "
                    "smaller machine types");
        if (sh->mem_asked)
            ty_buf_puts(b,
                        ", leave memory to the cluster (TRAINYARD_SLURM_MEMORY=none; the "
                        "service: slurm-memory = none)");
        ty_buf_puts(b,
                    ", or choose a partition whose nodes fit (TRAINYARD_SLURM_PARTITION; the "
                    "service: slurm-partition)");
        break;
    case PARTITION:
        ty_buf_puts(b,
                    ". The partition is TRAINYARD_SLURM_PARTITION (the service: "
                    "slurm-partition); `sinfo -s` lists the cluster's partitions");
        break;
    case ACCOUNT:
        ty_buf_puts(b,
                    ". The account and QOS are TRAINYARD_SLURM_ACCOUNT and TRAINYARD_SLURM_QOS "
                    "(the service: slurm-account, slurm-qos); `sacctmgr show assoc user=$USER` "
                    "lists yours");
        break;
    case TIME:
        ty_buf_puts(b,
                    ". The time limit is the job's scheduling.maxRunningTime (--time); the "
                    "partition's MaxTime may be lower (`sinfo -o '%P %l'`)");
        break;
    case NOT_OURS:
        break;
    }
}

char *slurm_refusal_explain(const char *err, const struct slurm_shape *sh)
{
    struct ty_buf b = TY_BUF_INIT;
    enum refusal kind = NOT_OURS;
    const char *words = NULL;

    for (size_t i = 0; err && i < sizeof(refusals) / sizeof(refusals[0]); i++)
        if ((words = strstr(err, refusals[i].words))) {
            kind = refusals[i].kind;
            break;
        }
    if (kind == NOT_OURS)
        return NULL;
    ty_buf_printf(&b, "Slurm refused the job: %.*s; ", (int)strcspn(words, "\n"), words);
    put_asked(&b, sh);
    put_fix(&b, kind, sh);
    ty_buf_putc(&b, '.');
    return ty_buf_take(&b);
}
