/* SPDX-License-Identifier: Apache-2.0
 * main.c: `trainyard-supervisor`, the program trainyardd starts for each job
 * (`supervise-job [--run-as=USER] [--grant=JSON] STATE_DIR SEQ GRACE_USEC`) and to remove a dead
 * supervisor's containers (`sweep-containers`) or Slurm jobs (`sweep-slurm KEY`). A program of
 * its own so that the daemon does not carry the runtimes and their libraries (libcurl and its
 * TLS stack): the service stays small. */
#include <stdio.h>
#include <string.h>

#include "fdutil.h"
#include "supervisor.h"

/* What --help (or -h) prints, and a wrong command line gets on stderr. */
static const char usage[] =
    "usage: trainyard-supervisor supervise-job [--run-as=USER] [--grant=JSON] STATE_DIR SEQ "
    "GRACE_USEC\n"
    "       trainyard-supervisor sweep-containers | sweep-slurm KEY\n"
    "An internal program of trainyardd, started by it for each job (and to remove a dead\n"
    "supervisor's containers or Slurm jobs). Not for direct use.\n";

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "supervise-job") == 0) {
        /* A thousand replicas hold more descriptors than the usual soft limit allows; the
         * replicas themselves get the original limit back (process runtime). */
        (void)ty_nofile_raise();
        return tys_supervise_main(argc - 1, argv + 1);
    }
    if (argc > 1 && strcmp(argv[1], "sweep-containers") == 0)
        return tys_sweep_containers_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "sweep-slurm") == 0)
        return tys_sweep_slurm_main(argc - 1, argv + 1);
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    fputs(usage, stderr);
    return 2;
}
