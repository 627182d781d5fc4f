/* SPDX-License-Identifier: Apache-2.0
 * test-slurm-refusal: sbatch's refusals of what trainyard chose are explained (what was asked
 * for, which replica's machine type set it, the setting that changes it); other sbatch errors
 * are left as they are. The real refusal by a simulated cluster is t7010's. */
#include <stdlib.h>
#include <string.h>

#include "slurm-refusal.h"
#include "tap.h"

static struct slurm_shape shape(void)
{
    struct slurm_shape sh = {
        .ntasks = 4,
        .cpus = 16,
        .mem_mb = 61440,
        .mem_asked = true,
        .gpus = 0,
    };
    (void)snprintf(sh.cpus_from, sizeof(sh.cpus_from), "master n1-standard-16");
    (void)snprintf(sh.mem_from, sizeof(sh.mem_from), "master n1-standard-16");
    return sh;
}

static void
explained(const char *err, const struct slurm_shape *sh, const char *const *want, const char *name)
{
    char *got = slurm_refusal_explain(err, sh);
    ok(got != NULL, "%s: explained", name);
    for (size_t i = 0; got && want[i]; i++)
        like(got, want[i], "%s: says %s", name, want[i]);
    if (got)
        ok(!strchr(got, '\n') && strlen(got) < 900, "%s: one line under 900 bytes", name);
    free(got);
}

int main(void)
{
    struct slurm_shape sh = shape();
    const char *refusal = "sbatch: error: Batch job submission failed: Requested node "
                          "configuration is not available\n";

    explained(refusal,
              &sh,
              (const char *const[]){
                  "Slurm refused the job: Requested node configuration is not available; ",
                  "trainyard asked for 4 tasks (on any nodes), each 16 CPUs (master "
                  "n1-standard-16), 60.0 GiB of memory (master n1-standard-16; "
                  "--mem-per-cpu=3840M)",
                  "in the cluster's default partition",
                  "smaller machine types",
                  "TRAINYARD_SLURM_MEMORY=none; the service: slurm-memory = none",
                  "TRAINYARD_SLURM_PARTITION; the service: slurm-partition",
                  NULL,
              },
              "the task shape");

    sh.mem_asked = false;
    sh.gpus = 2;
    (void)snprintf(sh.gpus_from, sizeof(sh.gpus_from), "worker 1 acceleratorConfig");
    sh.partition = "small";
    sh.extra = "--constraint=ib";
    {
        char *got = slurm_refusal_explain(refusal, &sh);
        like(got,
             "the cluster's default memory and 2 GPUs (worker 1 acceleratorConfig; "
             "--gpus-per-task), in the partition 'small', with '--constraint=ib' "
             "(TRAINYARD_SLURM_SBATCH_ARGS)",
             "memory left to the cluster, GPUs, a partition and extra options: said");
        ok(got && !strstr(got, "TRAINYARD_SLURM_MEMORY"), "no memory setting to suggest then");
        free(got);
    }

    sh = shape();
    sh.partition = "nope";
    explained("sbatch: error: invalid partition specified: nope\n"
              "sbatch: error: Batch job submission failed: Invalid partition name specified\n",
              &sh,
              (const char *const[]){
                  "Slurm refused the job: invalid partition specified: nope; ",
                  "in the partition 'nope'",
                  "The partition is TRAINYARD_SLURM_PARTITION (the service: slurm-partition)",
                  NULL,
              },
              "a partition");
    sh.partition = NULL;
    sh.account = "ml";
    explained(
        "sbatch: error: Batch job submission failed: Invalid account or account/partition "
        "combination specified\n",
        &sh,
        (const char *const[]){"account 'ml'", "TRAINYARD_SLURM_ACCOUNT", "slurm-account", NULL},
        "an account");
    explained("sbatch: error: Batch job submission failed: Requested time limit is invalid "
              "(missing or exceeds some limit)\n",
              &sh,
              (const char *const[]){"scheduling.maxRunningTime", NULL},
              "a time limit");

    ok(slurm_refusal_explain("sbatch: error: Unable to contact slurm controller\n", &sh) == NULL,
       "an unreachable controller is not a refusal of the job: left as it is");
    ok(slurm_refusal_explain(NULL, &sh) == NULL, "no error output: nothing to explain");
    return done_testing();
}
