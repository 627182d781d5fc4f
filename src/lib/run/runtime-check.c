/* SPDX-License-Identifier: Apache-2.0
 * runtime-check.c: which runtimes this build has and what each accepts, without linking
 * the runtimes themselves: the service checks jobs at submission with these, while only
 * the job supervisors (a separate program) carry the runtimes and their libraries. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "macro.h"
#include "parse.h"
#include "ports.h"
#include "runtime.h"
#include "suggest.h"

/* Every replica runs its command as a program: each role needs a containerCommand (its own
 * or the master's, see spec.c). @why says where, for the message. */
static int require_commands(const struct ty_job *job, const char *why, struct ty_error *err)
{
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        if (job->roles[role].count == 0 || job->roles[role].container_command)
            continue;
        return ty_error_set(err,
                            EINVAL,
                            "trainingInput.%sConfig.containerCommand: required by the %s",
                            ty_role_field((enum ty_role)role),
                            why);
    }
    return 0;
}

int ty_process_validate_commands(const struct ty_job *job, struct ty_error *err)
{
    return require_commands(job,
                            "process runtime, which runs each replica's command (with "
                            "containerArgs or args) as a local program instead of its image; "
                            "set it, or run the image itself with the container runtime "
                            "(--runtime=container; for the service, the label "
                            "trainyard-runtime=container)",
                            err);
}

int ty_process_validate(const struct ty_job *job, struct ty_error *err)
{
    int64_t n = ty_job_replica_count(job);
    int ports = ty_port_range_size();
    int r = ty_process_validate_commands(job, err);

    /* Every replica holds a port of this host from its placing to its start: a job with more
     * replicas than the range has could never start, and would take every port from the
     * jobs beside it while it tried. */
    if (r == 0 && n > ports)
        r = ty_error_set(err,
                         EINVAL,
                         "the process runtime gives every replica a port of this host from %d up "
                         "to the kernel's ephemeral range (net.ipv4.ip_local_port_range): %d "
                         "ports here, and this job has %lld replicas",
                         TY_PORT_LOW,
                         ports,
                         (long long)n);
    return r;
}

static bool all_have_commands(const struct ty_job *job)
{
    for (int role = 0; role < TY_ROLE_MAX; role++)
        if (job->roles[role].count > 0 && !job->roles[role].container_command)
            return false;
    return true;
}

const char *ty_slurm_replica_runtime(const struct ty_job *job)
{
    const char *mode = getenv("TRAINYARD_SLURM_REPLICAS");
    if (mode && (strcmp(mode, "process") == 0 || strcmp(mode, "container") == 0))
        return mode;
    return all_have_commands(job) ? "process" : "container";
}

/* Slurm's commands (srun, squeue, scancel) read the cluster's configuration: SLURM_CONF's
 * file, else the installed one, else, on a configless cluster, the one a server named by
 * SLURM_CONF_SERVER gives or slurmd keeps a copy of. Without any they look for the
 * controller in DNS (SRV records) and fail, and every step of the run waits on that: a
 * missing configuration is said before anything starts. */
#define SLURM_CONF_INSTALLED "/etc/slurm/slurm.conf"
#define SLURM_CONF_CACHED    "/run/slurm/conf/slurm.conf"
static int slurm_config_found(struct ty_error *err)
{
    const char *conf = getenv("SLURM_CONF"), *server = getenv("SLURM_CONF_SERVER");

    if (conf && *conf)
        return access(conf, R_OK) == 0
                   ? 0
                   : ty_error_set(err,
                                  ENOENT,
                                  "the slurm runtime cannot read the Slurm configuration "
                                  "SLURM_CONF names ('%s': %s)",
                                  conf,
                                  strerror(errno));
    if ((server && *server) || access(SLURM_CONF_INSTALLED, R_OK) == 0 ||
        access(SLURM_CONF_CACHED, R_OK) == 0)
        return 0;
    return ty_error_set(err,
                        ENOENT,
                        "the slurm runtime found no Slurm configuration: SLURM_CONF is not set "
                        "and there is no " SLURM_CONF_INSTALLED " (nor, for a configless "
                        "cluster, SLURM_CONF_SERVER or slurmd's copy " SLURM_CONF_CACHED ")");
}

/* On the nodes a replica runs its command as a program, or its image through the node's
 * container engine (TRAINYARD_SLURM_REPLICAS; see ty_slurm_replica_runtime). And Slurm must
 * be configured here (slurm_config_found). */
int ty_slurm_validate(const struct ty_job *job, struct ty_error *err)
{
    const char *mode = getenv("TRAINYARD_SLURM_REPLICAS");

    if (mode && *mode && strcmp(mode, "auto") != 0 && strcmp(mode, "process") != 0 &&
        strcmp(mode, "container") != 0)
        return ty_error_set(err,
                            EINVAL,
                            "TRAINYARD_SLURM_REPLICAS (slurm-replicas): expected auto, process "
                            "or container, got '%s'",
                            mode);
    if (slurm_config_found(err) < 0)
        return -ENOENT;
    if (strcmp(ty_slurm_replica_runtime(job), "process") == 0)
        return require_commands(job,
                                "slurm runtime when its replicas run as programs "
                                "(slurm-replicas = process), which runs each replica's command "
                                "(with containerArgs or args) on its node; set it, or run the "
                                "images (slurm-replicas = container or auto)",
                                err);
    return 0;
}

int ty_container_validate(const struct ty_job *job, struct ty_error *err)
{
    const char *dir = ty_json_str(job->training_input, "jobDir");
    const char *cap = getenv("TRAINYARD_CONTAINER_MAX_MEMORY");
    int64_t bytes;

    /* A local jobDir is bind-mounted at the same path in every container (the engine's
     * "SOURCE:TARGET" form): the replicas do not run in this directory, so a relative one
     * would name another place inside, and a ':' would split it. */
    if (ty_job_dir_is_local(dir)) {
        if (dir[0] != '/')
            return ty_error_set(err,
                                EINVAL,
                                "trainingInput.jobDir: the container runtime mounts a local job "
                                "directory at the same path in its containers, so it must be "
                                "absolute (got '%s'; --job-dir \"$PWD/%s\" is this directory's)",
                                dir,
                                dir);
        if (strchr(dir, ':'))
            return ty_error_set(err,
                                EINVAL,
                                "trainingInput.jobDir: the container runtime cannot mount a local "
                                "job directory whose path has a ':' (got '%s')",
                                dir);
    }
    if (cap && *cap && ty_parse_bytes(cap, TY_CONTAINER_MIN_MEMORY, &bytes) < 0)
        return ty_error_set(err,
                            EINVAL,
                            "TRAINYARD_CONTAINER_MAX_MEMORY: expected a whole number of bytes, "
                            "optionally with a k, m, g or t suffix, of at least 4m (got '%s')",
                            cap);
    if (ty_job_replica_count(job) > TY_CONTAINER_MAX_REPLICAS)
        return ty_error_set(err,
                            EINVAL,
                            "the container runtime runs at most %d replicas per job (one /24 "
                            "network); this job has %lld",
                            TY_CONTAINER_MAX_REPLICAS,
                            (long long)ty_job_replica_count(job));
    return 0;
}

/* The runtimes of this build and their checks, in one list: the table below and the names
 * of ty_runtime_names() are both made from it. */
#define RUNTIMES(X)                                                                                \
    X("process", ty_process_validate)                                                              \
    X("container", ty_container_validate)                                                          \
    X("slurm", ty_slurm_validate)

#define CHECK_ROW(name, fn) {name, fn},
#define NAME_ITEM(name, fn) ", " name

static const struct {
    const char *name;
    int (*validate)(const struct ty_job *job, struct ty_error *err);
} checks[] = {RUNTIMES(CHECK_ROW)};

bool ty_runtime_known(const char *name)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(checks); i++)
        if (strcmp(checks[i].name, name) == 0)
            return true;
    return false;
}

const char *ty_runtime_names(void)
{
    /* ", process, container, slurm" without its first ", ": a constant, so that request
     * threads may read it at any time. */
    static const char names[] = RUNTIMES(NAME_ITEM);
    return names + 2;
}

int ty_runtime_unknown(const char *name, struct ty_error *err)
{
    struct ty_suggest s;

    ty_suggest_init(&s, name);
    for (size_t i = 0; i < TY_ARRAY_SIZE(checks); i++)
        ty_suggest_add(&s, checks[i].name);
    if (ty_suggest_best(&s))
        return ty_error_set(err,
                            EINVAL,
                            "unknown runtime '%s' (did you mean '%s'? this build has: %s)",
                            name,
                            ty_suggest_best(&s),
                            ty_runtime_names());
    return ty_error_set(
        err, EINVAL, "unknown runtime '%s' (this build has: %s)", name, ty_runtime_names());
}

int ty_runtime_validate(const char *name, const struct ty_job *job, struct ty_error *err)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(checks); i++)
        if (strcmp(checks[i].name, name) == 0)
            return checks[i].validate(job, err);
    return ty_runtime_unknown(name, err);
}

int ty_runtime_labels_check(const struct ty_job *job, struct ty_error *err)
{
    static const char *const flags[] = {TY_LABEL_PYTORCH, TY_LABEL_MXNET};
    const char *runtime = ty_json_str(job->labels, TY_LABEL_RUNTIME);

    if (runtime && !ty_runtime_known(runtime)) {
        (void)ty_runtime_unknown(runtime, err);
        return ty_error_prefix(err, -EINVAL, "labels.%s", TY_LABEL_RUNTIME);
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(flags); i++) {
        const char *v = ty_json_str(job->labels, flags[i]);
        if (v && strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return ty_error_set(
                err, EINVAL, "labels.%s: expected true or false (got '%s')", flags[i], v);
    }
    return 0;
}

bool ty_label_true(const struct ty_job *job, const char *key)
{
    const char *v = ty_json_str(job->labels, key);
    return v && strcmp(v, "true") == 0;
}

/* What the container runtime's prepare may take besides its pulls: the engine's start (30 s),
 * removing what dead runs left, the images' inspects and user (container-user.c), the
 * network (a few tries of 30 s each); generous, as the pull's own limit is. */
#define CONTAINER_PREPARE_STEPS_USEC (5 * 60 * INT64_C(1000000))
/* The process runtime's prepare: cgroups, the guardian, port reservations (milliseconds),
 * with room for a loaded machine. */
#define PROCESS_PREPARE_USEC (60 * INT64_C(1000000))

int64_t ty_runtime_prepare_usec(const char *name, const struct ty_job *job)
{
    int64_t images = 0;

    if (!name || strcmp(name, "process") == 0)
        return PROCESS_PREPARE_USEC;
    if (strcmp(name, "container") != 0)
        return 0; /* slurm: its own queue */
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        const char *img = job->roles[role].image_uri;
        bool seen = false;
        if (job->roles[role].count == 0 || !img)
            continue;
        for (int k = 0; k < role && !seen; k++)
            seen = job->roles[k].count > 0 && job->roles[k].image_uri &&
                   strcmp(job->roles[k].image_uri, img) == 0;
        images += !seen;
    }
    return images * (TY_CONTAINER_PULL_TIMEOUT_MS + 30000) * 1000 + CONTAINER_PREPARE_STEPS_USEC;
}
