/* SPDX-License-Identifier: Apache-2.0
 * test-runtime-check.c: what each runtime accepts at create (runtime-check.c), for the sizes
 * of a job: the process runtime takes no more replicas than the host's port range for
 * replicas has (each holds a port from its placing to its start), the container runtime no
 * more than its /24 network; a Slurm node's launcher checks the commands alone. */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "ports.h"
#include "runtime.h"
#include "spec.h"
#include "tap.h"

/* A CUSTOM job of a master, @workers workers and @ps parameter servers, each with a command. */
static struct ty_job *job_of(int workers, int ps)
{
    json_t *cmd = json_pack(
        "{s:s,s:[s,s,s]}", "imageUri", "example.com/t:1", "containerCommand", "sh", "-c", "true");
    json_t *ti = json_pack(
        "{s:s,s:s,s:O}", "scaleTier", "CUSTOM", "masterType", "n1-standard-4", "masterConfig", cmd);
    json_t *doc;
    struct ty_job *job = NULL;
    struct ty_error e = {0};

    if (workers) {
        json_t *more = json_pack("{s:s,s:i,s:O}",
                                 "workerType",
                                 "n1-standard-4",
                                 "workerCount",
                                 workers,
                                 "workerConfig",
                                 cmd);
        json_object_update(ti, more);
        json_decref(more);
    }
    if (ps) {
        json_t *more = json_pack("{s:s,s:i,s:O}",
                                 "parameterServerType",
                                 "n1-standard-4",
                                 "parameterServerCount",
                                 ps,
                                 "parameterServerConfig",
                                 cmd);
        json_object_update(ti, more);
        json_decref(more);
    }
    doc = json_pack("{s:s,s:o}", "jobId", "sizes", "trainingInput", ti);
    if (ty_job_from_json(doc, &job, &e) < 0)
        BAIL_OUT("job: %s", e.msg);
    json_decref(doc);
    json_decref(cmd);
    return job;
}

int main(void)
{
    int ports = ty_port_range_size();
    struct ty_error e = {0};
    struct ty_job *small = job_of(10, 1), *big = job_of(10000, 3000), *mid = job_of(253, 0);

    diag("ports for replicas on this host: %d", ports);
    is_int(ty_runtime_validate("process", small, &e), 0, "process: 12 replicas fit");
    if (ports < 13001) {
        is_int(ty_runtime_validate("process", big, &e), -EINVAL, "process: 13,001 replicas do not");
        like(e.msg, "gives every replica a port of this host from 20000", "process: why");
        like(e.msg, "this job has 13001 replicas", "process: how many");
    } else {
        skip(3, "this host's port range has %d ports", ports);
    }
    is_int(ty_process_validate_commands(big, &e),
           0,
           "process: a node's launcher checks the commands alone");
    is_int(
        ty_runtime_validate("container", mid, &e), -EINVAL, "container: 254 replicas do not fit");
    like(e.msg, "at most 253 replicas per job", "container: why");
    ty_job_free(small);
    ty_job_free(big);
    ty_job_free(mid);
    return done_testing();
}
