/* SPDX-License-Identifier: Apache-2.0
 * supervise-status.c: what a run shows of itself on the job resource: its attempt, the last
 * attempt it may go to, each replica's restarts, and each replica's state in the current
 * attempt (role, index, address, PENDING/RUNNING/RESTARTING/SUCCEEDED/FAILED/STOPPED, how
 * its last launch ended), for `attemptStatus` (docs/service.md) and the dashboard; and the
 * run's state, error and attempt as its callers read them. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "supervise-int.h"

/* The state of replica @i in the current attempt, as docs/service.md words it. */
static const char *replica_state(const struct ty_supervisor *sup, size_t i)
{
    const struct rep_state *rs = &sup->reps[i];

    if (rs->restart_pending)
        return "RESTARTING";
    if (!rs->launched)
        return rs->exited ? "FAILED" : "PENDING"; /* a launch that failed */
    if (!rs->exited)
        return rs->started ? "RUNNING" : "PENDING";
    if (rs->last.kind == TY_EXIT_CODE && rs->last.code == 0)
        return "SUCCEEDED";
    /* Ended by the teardown (SIGTERM, SIGKILL, a container removed) rather than by itself */
    return rs->stopped ? "STOPPED" : "FAILED";
}

/* How replica @i's last launch ended, into @o: exitCode or signal, and the service's words. */
static void add_exit(const struct ty_supervisor *sup, size_t i, json_t *o)
{
    const struct rep_state *rs = &sup->reps[i];
    char msg[TY_ERROR_MSG_MAX + 128];

    switch (rs->last.kind) {
    case TY_EXIT_CODE:
    case TY_EXIT_OOM:
        json_object_set_new(o, "exitCode", json_integer(rs->last.code));
        break;
    case TY_EXIT_SIGNAL:
        json_object_set_new(o, "signal", json_integer(rs->last.code));
        break;
    default:
        break;
    }
    if (rs->last.kind == TY_EXIT_CODE && rs->last.code == 0)
        return;
    ty_describe_exit(&sup->plan->replicas[i], &rs->last, msg, sizeof(msg));
    json_object_set_new(o, "exit", json_string(msg));
}

static json_t *replicas_json(const struct ty_supervisor *sup)
{
    json_t *list = json_array();

    for (size_t i = 0; i < sup->plan->n_replicas; i++) {
        const struct ty_replica *r = &sup->plan->replicas[i];
        json_t *o = json_pack("{s:s, s:s, s:i}",
                              "taskName",
                              r->task_name,
                              "role",
                              ty_role_name(r->role),
                              "index",
                              r->index);
        if (r->host && r->port > 0) {
            char addr[300];
            (void)snprintf(addr, sizeof(addr), "%s:%d", r->host, r->port);
            json_object_set_new(o, "address", json_string(addr));
        }
        json_object_set_new(o, "state", json_string(replica_state(sup, i)));
        if (sup->reps[i].exited)
            add_exit(sup, i, o);
        json_object_set_new(o, "restarts", json_integer(sup->reps[i].restarts));
        if (sup->reps[i].restarts > 0) { /* why it was last restarted, whatever came after */
            char msg[TY_ERROR_MSG_MAX + 128];
            ty_describe_exit(r, &sup->reps[i].restarted_after, msg, sizeof(msg));
            json_object_set_new(o, "lastRestart", json_string(msg));
        }
        json_array_append_new(list, o);
    }
    return list;
}

json_t *ty_supervisor_attempt_status(const struct ty_supervisor *sup, bool with_replicas)
{
    json_t *o = json_object(), *restarts = json_object();

    json_object_set_new(o, "attempt", json_integer(sup->attempt));
    json_object_set_new(o, "maxAttempts", json_integer(ty_supervisor_last_attempt(sup)));
    for (size_t i = 0; i < sup->plan->n_replicas; i++)
        json_object_set_new(
            restarts, sup->plan->replicas[i].task_name, json_integer(sup->reps[i].restarts));
    json_object_set_new(o, "replicaRestarts", restarts);
    if (with_replicas && sup->reps)
        json_object_set_new(o, "replicas", replicas_json(sup));
    return o;
}

unsigned ty_supervisor_last_attempt(const struct ty_supervisor *sup)
{
    return sup->first_attempt + sup->policy.max_attempts - 1;
}

enum ty_job_state ty_supervisor_state(const struct ty_supervisor *sup)
{
    return sup->state;
}

bool ty_supervisor_done(const struct ty_supervisor *sup)
{
    return sup->done;
}

const char *ty_supervisor_error(const struct ty_supervisor *sup)
{
    return sup->state == TY_STATE_SUCCEEDED ? "" : sup->error;
}

unsigned ty_supervisor_attempt(const struct ty_supervisor *sup)
{
    return sup->attempt;
}
