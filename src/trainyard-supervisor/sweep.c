/* SPDX-License-Identifier: Apache-2.0
 * sweep.c: trainyard-supervisor's sweep commands, which the service runs for what a dead
 * supervisor left: its containers (sweep-containers) and its Slurm jobs (sweep-slurm). */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "container.h"
#include "slurm.h"
#include "supervisor.h"
#include "timeutil.h"

/* sweep-slurm: how long it lets the launchers end by themselves first, how long it waits for
 * the Slurm jobs it cancelled to end, and how often it asks squeue meanwhile. */
#define SWEEP_QUIT_USEC (15 * INT64_C(1000000))
#define SWEEP_WAIT_USEC (90 * INT64_C(1000000))
#define SWEEP_POLL_USEC 500000

int tys_sweep_containers_main(int argc, char **argv)
{
    struct ty_error e = {0};
    int r;

    r = ty_container_sweep(&e);
    if (r > 0)
        fprintf(stderr, "trainyardd sweep-containers: removed %d container(s) and network(s)\n", r);
    else if (r < 0)
        fprintf(stderr, "trainyardd sweep-containers: %s\n", ty_error_msg(&e));
    return r < 0 ? 1 : 0;
}

int tys_sweep_slurm_main(int argc, char **argv)
{
    struct ty_error e = {0};
    int n;

    if (argc != 2) {
        fprintf(stderr, "usage: trainyard-supervisor sweep-slurm KEY\n");
        return 2;
    }
    /* Each launcher sees its supervisor gone and removes what it made (a container, through
     * the engine it may have started) before it exits; Slurm's cancel would signal that
     * engine with it, and the container stayed. So the steps get SWEEP_QUIT_USEC to end by
     * themselves (slurm-cancel.c waits for srun so, for the same reason). */
    for (int64_t until = ty_mono_usec() + SWEEP_QUIT_USEC;
         ty_slurm_sweep_steps_left(argv[1], &e) > 0 && ty_mono_usec() < until;)
        (void)usleep(SWEEP_POLL_USEC);
    n = ty_slurm_sweep(argv[1], &e);
    if (n < 0) {
        fprintf(stderr, "trainyardd sweep-slurm: %s\n", ty_error_msg(&e));
        return 1;
    }
    if (n > 0)
        fprintf(stderr, "trainyardd sweep-slurm: cancelled %d Slurm job(s)\n", n);
    /* The job's next attempt waits for this helper: not before the cancelled jobs' tasks
     * (spared by the service's sweep, so that they clean up) have ended, at most
     * SWEEP_WAIT_USEC (Slurm's default KillWait is 30 s). */
    for (int64_t until = ty_mono_usec() + SWEEP_WAIT_USEC;
         n > 0 && (n = ty_slurm_sweep_left(argv[1], &e)) > 0 && ty_mono_usec() < until;)
        (void)usleep(SWEEP_POLL_USEC);
    if (n > 0)
        fprintf(stderr, "trainyardd sweep-slurm: %d Slurm job(s) still ending; going on\n", n);
    return 0;
}
