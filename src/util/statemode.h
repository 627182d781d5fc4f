/* SPDX-License-Identifier: Apache-2.0
 * statemode.h: the modes of what trainyard creates in a state directory (docs/security.md,
 * "The state directory"). Its directories are searchable but not listable, so that the user a
 * project's jobs run as (--project-user) reaches its tuning trial's metric directory while no
 * local user lists the jobs; logs, the store and the service's files are its owner's alone.
 * (The umask may only remove bits.) */
#ifndef TY_STATEMODE_H
#define TY_STATEMODE_H

/* The state directory itself and jobs/, jobs/<project>/, the job's directory and trials/. */
#define TY_STATE_DIR_MODE 0711
/* logs/ and a trial's metric directory (given to the user its replicas run as). */
#define TY_STATE_PRIVATE_DIR_MODE 0700
/* Every file: the store, logs, job records, locks, metric files. */
#define TY_STATE_FILE_MODE 0600

#endif
