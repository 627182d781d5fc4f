/* SPDX-License-Identifier: Apache-2.0
 * test-clusterenv-scale.c: CLUSTER_SPEC and TF_CONFIG of large clusters. The shared cluster
 * object and job are serialised once and spliced around each replica's task part; this checks
 * the spliced strings against an independent rendering (jansson building the whole object,
 * keys in contract order) for every replica of a 1 + 999 + 4 + 2 job and of a trial, and the
 * exact size limit: a variable of 131072 bytes with its NUL fits, one byte more is refused
 * with the size it would have. Also the plan: a role's replicas share one args vector. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clusterenv-check.h"
#include "clusterenv.h"
#include "json.h"
#include "macro.h"
#include "plan.h"
#include "spec.h"
#include "strv.h"
#include "tap.h"

/* Addresses like the process runtime's: 127.0.0.1 and a port per replica; IPv6 for every
 * seventh replica, to cover the bracketed form. */
static void place(struct ty_cluster_plan *plan, const char *host)
{
    for (size_t i = 0; i < plan->n_replicas; i++) {
        struct ty_replica *r = &plan->replicas[i];
        free(r->host);
        r->host = xstrdup(host ? host : i % 7 == 3 ? "fd00::1" : "127.0.0.1");
        r->port = 20000 + (int)i;
    }
}

/* The reference "cluster" object of CLUSTER_SPEC (or, @tf, TF_CONFIG), built with jansson. */
static json_t *reference_cluster(const struct ty_cluster_plan *plan, bool tf)
{
    json_t *cluster = json_object();

    for (int role = 0; role < TY_ROLE_MAX; role++) {
        json_t *list;
        if (plan->job->roles[role].count == 0 || (tf && role == TY_ROLE_EVALUATOR))
            continue;
        list = json_array();
        for (size_t i = 0; i < plan->n_replicas; i++) {
            const struct ty_replica *x = &plan->replicas[i];
            char addr[128];
            if ((int)x->role != role)
                continue;
            (void)snprintf(
                addr, sizeof(addr), strchr(x->host, ':') ? "[%s]:%d" : "%s:%d", x->host, x->port);
            json_array_append_new(list, json_string(addr));
        }
        json_object_set_new(cluster,
                            tf ? ty_clusterenv_tf_role(plan->job, (enum ty_role)role)
                               : ty_role_name((enum ty_role)role),
                            list);
    }
    return cluster;
}

/* The reference: the whole variable built as one jansson object around @cluster. */
static char *
reference(const struct ty_cluster_plan *plan, const struct ty_replica *r, bool tf, json_t *cluster)
{
    json_t *task, *doc;
    char *out;

    task = json_pack("{s:s,s:i}",
                     "type",
                     tf ? ty_clusterenv_tf_role(plan->job, r->role) : ty_role_name(r->role),
                     "index",
                     r->index);
    if (plan->trial_id)
        json_object_set_new(task, "trial", json_string(plan->trial_id));
    doc = json_pack("{s:O,s:s,s:o,s:O}",
                    "cluster",
                    cluster,
                    "environment",
                    "cloud",
                    "task",
                    task,
                    "job",
                    plan->job->training_input);
    out = ty_json_compact(doc);
    json_decref(doc);
    return out;
}

/* Every replica of @doc (as trial @trial, or NULL): both variables, through both the accessors
 * and ty_clusterenv_render, equal the reference. */
static void check_every_replica(const char *what, const char *doc, const char *trial)
{
    struct ty_job *job = job_from(doc);
    struct ty_cluster_plan *plan = NULL;
    struct ty_clusterenv *ce = NULL;
    struct ty_error err = {0};
    size_t bad = 0, n = 0;
    char **env = NULL;
    json_t *cs_cluster = NULL, *tf_cluster = NULL;

    if (!ok(job != NULL, "%s: job", what))
        return;
    if (!ok(ty_plan_build(job, trial, NULL, &plan, &err) == 0, "%s: plan", what))
        goto out;
    place(plan, NULL);
    if (!ok(ty_clusterenv_new(plan, &ce, &err) == 0, "%s: clusterenv", what))
        goto out;
    cs_cluster = reference_cluster(plan, false);
    tf_cluster = reference_cluster(plan, true);
    ty_strv_push(&env, "CLUSTER_SPEC=stale");
    ty_strv_push(&env, "KEEP=1");
    for (size_t i = 0; i < plan->n_replicas; i++) {
        const struct ty_replica *r = &plan->replicas[i];
        _cleanup_free_ char *cs_ref = reference(plan, r, false, cs_cluster);
        _cleanup_free_ char *tf_ref = reference(plan, r, true, tf_cluster);
        _cleanup_free_ char *cs = ty_clusterenv_cluster_spec(ce, r);
        _cleanup_free_ char *tf = ty_clusterenv_tf_config(ce, r);

        n++;
        if (ty_clusterenv_render(ce, r, NULL, &env, &err) < 0 || strcmp(cs, cs_ref) != 0 ||
            strcmp(tf, tf_ref) != 0 || strcmp(ty_strv_getenv(env, "CLUSTER_SPEC"), cs_ref) != 0 ||
            strcmp(ty_strv_getenv(env, "TF_CONFIG"), tf_ref) != 0) {
            if (bad++ == 0)
                diag("%s: first difference at %s:\n  got  %.300s\n  want %.300s",
                     what,
                     r->display_name,
                     cs,
                     cs_ref);
        }
    }
    is_int(n, ty_job_replica_count(job), "%s: every replica rendered", what);
    is_int(bad, 0, "%s: every replica's variables equal the reference, byte for byte", what);
    is_int(ty_strv_len(env), trial ? 5 : 4, "%s: the vector holds each variable once", what);
    is_str(ty_strv_getenv(env, "KEEP"), "1", "%s: other entries kept", what);
out:
    if (cs_cluster)
        json_decref(cs_cluster);
    if (tf_cluster)
        json_decref(tf_cluster);
    ty_strv_free(env);
    ty_clusterenv_free(ce);
    ty_plan_free(plan);
    ty_job_free(job);
}

#define BIG_DOC(extra)                                                                             \
    "{\"jobId\":\"big\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":" N4            \
    ",\"workerType\":" N4 ",\"workerCount\":999,\"parameterServerType\":" N4                       \
    ",\"parameterServerCount\":4,\"evaluatorType\":" N4 ",\"evaluatorCount\":2,"                   \
    "\"masterConfig\":{\"imageUri\":\"img:1\"},\"args\":[\"--q=\\\"x\\\"\",\"é\"]" extra "}}"

static void test_large(void)
{
    check_every_replica("1+999+4+2", BIG_DOC(""), NULL);
    check_every_replica("1+999+4+2 chief", BIG_DOC(",\"useChiefInTfConfig\":true"), NULL);
    check_every_replica("trial", BIG_DOC(""), "7\"q");
}

/* The length of the master's CLUSTER_SPEC entry ("CLUSTER_SPEC=" + value) when its host is
 * @hl bytes long, in a job of one master. */
static size_t entry_len(struct ty_cluster_plan *plan, size_t hl, int *rc, struct ty_error *err)
{
    struct ty_clusterenv *ce = NULL;
    _cleanup_free_ char *host = xmalloc(hl + 1);
    size_t len = 0;

    memset(host, 'h', hl);
    host[hl] = '\0';
    place(plan, host);
    *rc = ty_clusterenv_new(plan, &ce, err);
    if (*rc == 0) {
        _cleanup_free_ char *cs = ty_clusterenv_cluster_spec(ce, &plan->replicas[0]);
        len = strlen("CLUSTER_SPEC=") + strlen(cs);
    }
    ty_clusterenv_free(ce);
    return len;
}

static void test_limit(void)
{
    struct ty_job *job = job_from("{\"jobId\":\"one\",\"trainingInput\":{\"scaleTier\":\"BASIC\","
                                  "\"masterConfig\":{\"imageUri\":\"img:1\"}}}");
    struct ty_cluster_plan *plan = NULL;
    struct ty_error err = {0};
    size_t base, hl;
    int rc;

    if (!ok(job != NULL && ty_plan_build(job, NULL, NULL, &plan, &err) == 0, "limit: plan"))
        goto out;
    base = entry_len(plan, 10, &rc, &err);
    is_int(rc, 0, "limit: a short host fits");
    /* The entry grows byte for byte with the host: pick the host that makes it, with its NUL,
     * exactly TY_ENV_STRING_MAX bytes. */
    hl = 10 + (TY_ENV_STRING_MAX - 1 - base);
    is_int(entry_len(plan, hl, &rc, &err), TY_ENV_STRING_MAX - 1, "limit: entry at the limit");
    is_int(rc, 0, "limit: a variable of exactly 131072 bytes with its NUL is accepted");
    ty_error_clear(&err);
    (void)entry_len(plan, hl + 1, &rc, &err);
    is_int(rc, -E2BIG, "limit: one byte more is refused");
    like(err.msg, "CLUSTER_SPEC would be 131073 bytes", "limit: the message gives the size");
    like(err.msg, "the cluster of 1 replicas is too large", "limit: and the replica count");
out:
    ty_plan_free(plan);
    ty_job_free(job);
}

/* The replicas of a role share one command and one args vector (the plan's), with the
 * role's own values. */
static void test_shared_args(void)
{
    struct ty_job *job = job_from(BIG_DOC(",\"jobDir\":\"/jd\""));
    struct ty_cluster_plan *plan = NULL;
    size_t shared = 0, workers = 0;
    const struct ty_replica *w0;

    if (!ok(job != NULL && ty_plan_build(job, "4", NULL, &plan, NULL) == 0, "shared: plan"))
        goto out;
    w0 = ty_plan_find(plan, TY_ROLE_WORKER, 0);
    for (size_t i = 0; i < plan->n_replicas; i++) {
        const struct ty_replica *r = &plan->replicas[i];
        if (r->role != TY_ROLE_WORKER)
            continue;
        workers++;
        shared += r->args == w0->args && r->command == w0->command;
    }
    is_int(workers, 999, "shared: 999 workers");
    is_int(shared, 999, "shared: they share one args and one command vector");
    ok(w0->args && strcmp(w0->args[0], "--q=\"x\"") == 0 &&
           strcmp(w0->args[2], "--job-dir=/jd/4") == 0 && !w0->args[3],
       "shared: with the job's args and the trial's --job-dir");
out:
    ty_plan_free(plan);
    ty_job_free(job);
}

int main(void)
{
    test_shared_args();
    test_large();
    test_limit();
    return done_testing();
}
