/* SPDX-License-Identifier: Apache-2.0
 * supervisor.h: the commands of trainyard-supervisor (supervisor.c), the program trainyardd
 * starts for each job and to sweep what a dead supervisor left. */
#ifndef TYS_SUPERVISOR_H
#define TYS_SUPERVISOR_H

/* `trainyard-supervisor supervise-job [--run-as=USER] [--grant=JSON] STATE_DIR SEQ
 * GRACE_USEC`: run one job to its end, recording it in the store. Returns the process exit
 * status. */
int tys_supervise_main(int argc, char **argv);
/* `trainyard-supervisor sweep-containers`: remove containers and networks of dead
 * supervisors. */
int tys_sweep_containers_main(int argc, char **argv);
/* `trainyard-supervisor sweep-slurm KEY`: cancel the Slurm jobs a dead supervisor with sweep
 * key KEY left (ty_slurm_sweep). Exit status 0, or 1 when squeue failed. */
int tys_sweep_slurm_main(int argc, char **argv);

#endif
