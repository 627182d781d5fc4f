/* SPDX-License-Identifier: Apache-2.0
 * test-clusterenv.c: the replica environment contract (CLUSTER_SPEC, TF_CONFIG and friends,
 * see aip-contract.md "Decisions for trainyard") rendered from the cluster plan (the plan
 * itself: test-plan.c). Every CLUSTER_SPEC / TF_CONFIG value below is a golden string compared
 * byte for byte. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "alloc.h"
#include "clusterenv-check.h"
#include "clusterenv.h"
#include "json.h"
#include "plan.h"
#include "spec.h"
#include "strv.h"
#include "tap.h"

/* ---- fixtures ---------------------------------------------------------------------------- */

#define TI_HEAD "\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\""
#define TI_IMG  "\"masterConfig\":{\"imageUri\":\"img:1\"}"

/* Canonical TrainingInput of the job shapes (schema order, int64 counts as strings). */
#define JOB_SINGLE       "{" TI_HEAD "," TI_IMG "}"
#define JOB_SINGLE_CHIEF "{" TI_HEAD "," TI_IMG ",\"useChiefInTfConfig\":true}"
#define JOB_MW           "{" TI_HEAD "," TI_IMG ",\"workerType\":\"n1-standard-4\",\"workerCount\":\"1\"}"
#define JOB_MP                                                                                     \
    "{" TI_HEAD "," TI_IMG ",\"parameterServerType\":\"n1-standard-4\","                           \
    "\"parameterServerCount\":\"1\"}"
#define JOB_ME                                                                                     \
    "{" TI_HEAD "," TI_IMG ",\"evaluatorType\":\"n1-standard-4\",\"evaluatorCount\":\"1\"}"
#define JOB_FULL_HEAD                                                                              \
    "{" TI_HEAD "," TI_IMG ",\"workerType\":\"n1-standard-4\","                                    \
    "\"parameterServerType\":\"n1-standard-4\",\"evaluatorType\":\"n1-standard-4\""
#define JOB_FULL                                                                                   \
    JOB_FULL_HEAD ",\"workerCount\":\"2\",\"parameterServerCount\":\"1\",\"evaluatorCount\":"      \
                  "\"1\"}"
#define JOB_FULL_CHIEF                                                                             \
    JOB_FULL_HEAD ",\"useChiefInTfConfig\":true,\"workerCount\":\"2\","                            \
                  "\"parameterServerCount\":\"1\",\"evaluatorCount\":\"1\"}"
#define JOB_MWP                                                                                    \
    "{" TI_HEAD "," TI_IMG ",\"workerType\":\"n1-standard-4\","                                    \
    "\"parameterServerType\":\"n1-standard-4\",\"workerCount\":\"2\","                             \
    "\"parameterServerCount\":\"1\"}"
#define JOB_MWP_CHIEF                                                                              \
    "{" TI_HEAD "," TI_IMG ",\"workerType\":\"n1-standard-4\","                                    \
    "\"parameterServerType\":\"n1-standard-4\",\"useChiefInTfConfig\":true,"                       \
    "\"workerCount\":\"2\",\"parameterServerCount\":\"1\"}"

/* Cluster objects with the addresses place() below gives. */
#define A_M  "\"h-master-0:2222\""
#define A_W0 "\"h-worker-0:2300\""
#define A_W1 "\"h-worker-1:2301\""
#define A_P0 "\"h-ps-0:2400\""
#define A_E0 "\"h-evaluator-0:2500\""

/* Deterministic addresses: host h-<role>-<index>, port 2222 for the master and
 * 2200 + 100 * role + index for everyone else. */
static void place(struct ty_cluster_plan *plan)
{
    for (size_t i = 0; i < plan->n_replicas; i++) {
        struct ty_replica *r = &plan->replicas[i];
        char host[64];
        (void)snprintf(host, sizeof(host), "h-%s-%d", ty_role_name(r->role), r->index);
        free(r->host);
        r->host = xstrdup(host);
        r->port = r->role == TY_ROLE_MASTER ? 2222 : 2200 + 100 * (int)r->role + r->index;
    }
}

struct fixture {
    struct ty_job *job;
    struct ty_cluster_plan *plan;
    struct ty_clusterenv *ce;
};

static void fixture_free(struct fixture *f)
{
    ty_clusterenv_free(f->ce);
    ty_plan_free(f->plan);
    ty_job_free(f->job);
    memset(f, 0, sizeof(*f));
}

static int
fixture_new(struct fixture *f, const char *text, const char *trial, char *const *trial_args)
{
    struct ty_error err = {0};

    memset(f, 0, sizeof(*f));
    f->job = job_from(text);
    if (!f->job)
        return -1;
    if (ty_plan_build(f->job, trial, trial_args, &f->plan, &err) == 0) {
        place(f->plan);
        if (ty_clusterenv_new(f->plan, &f->ce, &err) == 0)
            return 0;
    }
    diag("set up: %s", ty_error_msg(&err));
    fixture_free(f);
    return -1;
}

static bool valid_json(const char *s)
{
    json_t *j = NULL;
    bool good = ty_json_parse(s, strlen(s), &j, NULL) == 0 && json_is_object(j) &&
                json_is_object(json_object_get(j, "job"));
    if (j)
        json_decref(j);
    return good;
}

/* Compare both variables of one replica against golden strings. */
static void check_replica(const struct fixture *f,
                          enum ty_role role,
                          int index,
                          const char *cs,
                          const char *tf,
                          const char *what)
{
    struct ty_replica *r = ty_plan_find(f->plan, role, index);
    char *got;

    if (!ok(r != NULL, "%s: %s %d exists", what, ty_role_name(role), index))
        return;
    got = ty_clusterenv_cluster_spec(f->ce, r);
    is_str(got, cs, "%s: CLUSTER_SPEC of %s", what, r->display_name);
    ok(valid_json(got), "%s: CLUSTER_SPEC of %s is a JSON object", what, r->display_name);
    free(got);
    got = ty_clusterenv_tf_config(f->ce, r);
    is_str(got, tf, "%s: TF_CONFIG of %s", what, r->display_name);
    ok(valid_json(got), "%s: TF_CONFIG of %s is a JSON object", what, r->display_name);
    free(got);
}

/* ---- golden matrix ----------------------------------------------------------------------- */

static const char DOC_SINGLE[] = DOC("single", "");
static const char DOC_SINGLE_CHIEF[] = DOC("single", ",\"useChiefInTfConfig\":true");
static const char DOC_MW[] = DOC("mw", ",\"workerType\":" N4 ",\"workerCount\":1");
static const char DOC_MP[] =
    DOC("mp", ",\"parameterServerType\":" N4 ",\"parameterServerCount\":\"1\"");
static const char DOC_ME[] = DOC("me", ",\"evaluatorType\":" N4 ",\"evaluatorCount\":1");
/* Keys deliberately out of schema order: the canonical `job` must not depend on them. */
static const char DOC_FULL[] =
    "{\"jobId\":\"my_job\",\"trainingInput\":{\"evaluatorCount\":1,\"parameterServerCount\":1,"
    "\"workerCount\":2,\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\","
    "\"workerType\":\"n1-standard-4\",\"parameterServerType\":\"n1-standard-4\","
    "\"evaluatorType\":\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"img:1\"}}}";
static const char DOC_FULL_CHIEF[] =
    DOC("my_job",
        ",\"workerType\":" N4 ",\"workerCount\":2,\"parameterServerType\":" N4
        ",\"parameterServerCount\":1,\"evaluatorType\":" N4 ",\"evaluatorCount\":1,"
        "\"useChiefInTfConfig\":true");
static const char DOC_MWP[] =
    DOC("mwp",
        ",\"workerType\":" N4 ",\"workerCount\":2,\"parameterServerType\":" N4
        ",\"parameterServerCount\":1");
static const char DOC_MWP_CHIEF[] =
    DOC("mwp",
        ",\"workerType\":" N4 ",\"workerCount\":2,\"parameterServerType\":" N4
        ",\"parameterServerCount\":1,\"useChiefInTfConfig\":true");

#define TASK(t, i) "\"environment\":\"cloud\",\"task\":{\"type\":\"" t "\",\"index\":" #i "}"
#define TASKT(t, i, n)                                                                             \
    "\"environment\":\"cloud\",\"task\":{\"type\":\"" t "\",\"index\":" #i ",\"trial\":\"" n "\"}"

/* A golden variable of replica 0 of a role: cluster object, task type, canonical job. */
#define G(cl, type, job) cl TASK(type, 0) ",\"job\":" job "}"
#define CL_MW            "{\"cluster\":{\"master\":[" A_M "],\"worker\":[" A_W0 "]},"
#define CL_MP            "{\"cluster\":{\"master\":[" A_M "],\"ps\":[" A_P0 "]},"
#define CL_ME            "{\"cluster\":{\"master\":[" A_M "],\"evaluator\":[" A_E0 "]},"
#define CL_M             "{\"cluster\":{\"master\":[" A_M "]},"
#define CL_CHIEF         "{\"cluster\":{\"chief\":[" A_M "]},"

/* A single replica, and each role alone with the master. An evaluator switches TF_CONFIG to
 * "chief" and is left out of TF_CONFIG's cluster, but still gets TF_CONFIG with its own task. */
static void test_pairs(void)
{
    static const struct {
        const char *doc, *what;
        enum ty_role role;
        const char *m_cs, *m_tf, *o_cs, *o_tf;
    } cases[] = {
        {DOC_SINGLE,
         "single",
         TY_ROLE_MASTER,
         G(CL_M, "master", JOB_SINGLE),
         G(CL_M, "master", JOB_SINGLE),
         NULL,
         NULL},
        {DOC_SINGLE_CHIEF,
         "single+chief",
         TY_ROLE_MASTER,
         G(CL_M, "master", JOB_SINGLE_CHIEF),
         G(CL_CHIEF, "chief", JOB_SINGLE_CHIEF),
         NULL,
         NULL},
        {DOC_MW,
         "master+worker",
         TY_ROLE_WORKER,
         G(CL_MW, "master", JOB_MW),
         G(CL_MW, "master", JOB_MW),
         G(CL_MW, "worker", JOB_MW),
         G(CL_MW, "worker", JOB_MW)},
        {DOC_MP,
         "master+ps",
         TY_ROLE_PS,
         G(CL_MP, "master", JOB_MP),
         G(CL_MP, "master", JOB_MP),
         G(CL_MP, "ps", JOB_MP),
         G(CL_MP, "ps", JOB_MP)},
        {DOC_ME,
         "master+evaluator",
         TY_ROLE_EVALUATOR,
         G(CL_ME, "master", JOB_ME),
         G(CL_CHIEF, "chief", JOB_ME),
         G(CL_ME, "evaluator", JOB_ME),
         G(CL_CHIEF, "evaluator", JOB_ME)},
    };
    struct fixture f;

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (!ok(fixture_new(&f, cases[c].doc, NULL, NULL) == 0, "%s: set up", cases[c].what))
            continue;
        is_int(f.plan->n_replicas, cases[c].o_cs ? 2 : 1, "%s: replica count", cases[c].what);
        check_replica(&f, TY_ROLE_MASTER, 0, cases[c].m_cs, cases[c].m_tf, cases[c].what);
        if (cases[c].o_cs)
            check_replica(&f, cases[c].role, 0, cases[c].o_cs, cases[c].o_tf, cases[c].what);
        is_str(ty_clusterenv_tf_role(f.job, TY_ROLE_MASTER),
               strstr(cases[c].m_tf, "chief") ? "chief" : "master",
               "%s: tf role of the master",
               cases[c].what);
        is_str(ty_clusterenv_tf_role(f.job, TY_ROLE_WORKER),
               "worker",
               "%s: tf role of workers",
               cases[c].what);
        fixture_free(&f);
    }
}

#define CS_FULL                                                                                    \
    "{\"cluster\":{\"master\":[" A_M "],\"worker\":[" A_W0 "," A_W1 "],\"ps\":[" A_P0 "],"         \
    "\"evaluator\":[" A_E0 "]},"
#define TF_FULL                                                                                    \
    "{\"cluster\":{\"chief\":[" A_M "],\"worker\":[" A_W0 "," A_W1 "],\"ps\":[" A_P0 "]},"

static void test_full(void)
{
    struct fixture f;
    static const struct {
        const char *doc, *job, *what;
    } cases[] = {
        {DOC_FULL, JOB_FULL, "1m+2w+1ps+1e"},
        {DOC_FULL_CHIEF, JOB_FULL_CHIEF, "1m+2w+1ps+1e+chief"},
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *what = cases[c].what;
        char cs[4096], tf[4096];
        static const struct {
            enum ty_role role;
            int index;
            const char *cs_task, *tf_task;
        } reps[] = {
            {TY_ROLE_MASTER, 0, TASK("master", 0), TASK("chief", 0)},
            {TY_ROLE_WORKER, 0, TASK("worker", 0), TASK("worker", 0)},
            {TY_ROLE_WORKER, 1, TASK("worker", 1), TASK("worker", 1)},
            {TY_ROLE_PS, 0, TASK("ps", 0), TASK("ps", 0)},
            {TY_ROLE_EVALUATOR, 0, TASK("evaluator", 0), TASK("evaluator", 0)},
        };

        if (!ok(fixture_new(&f, cases[c].doc, NULL, NULL) == 0, "%s: set up", what))
            continue;
        is_int(f.plan->n_replicas, 5, "%s: five replicas", what);
        for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
            (void)snprintf(cs, sizeof(cs), CS_FULL "%s,\"job\":%s}", reps[i].cs_task, cases[c].job);
            (void)snprintf(tf, sizeof(tf), TF_FULL "%s,\"job\":%s}", reps[i].tf_task, cases[c].job);
            check_replica(&f, reps[i].role, reps[i].index, cs, tf, what);
        }
        fixture_free(&f);
    }
}

/* Fully spelled out once, as in the contract's illustration (worker 1 of 1m+2w+1ps+1e). */
static void test_literal(void)
{
    struct fixture f;
    struct ty_replica *r;
    char *got;

    if (!ok(fixture_new(&f, DOC_FULL, NULL, NULL) == 0, "literal: set up"))
        return;
    r = ty_plan_find(f.plan, TY_ROLE_WORKER, 1);
    got = ty_clusterenv_cluster_spec(f.ce, r);
    is_str(got,
           "{\"cluster\":{\"master\":[\"h-master-0:2222\"],\"worker\":[\"h-worker-0:2300\","
           "\"h-worker-1:2301\"],\"ps\":[\"h-ps-0:2400\"],\"evaluator\":[\"h-evaluator-0:2500\"]},"
           "\"environment\":\"cloud\",\"task\":{\"type\":\"worker\",\"index\":1},\"job\":{"
           "\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\",\"masterConfig\":{"
           "\"imageUri\":\"img:1\"},\"workerType\":\"n1-standard-4\",\"parameterServerType\":"
           "\"n1-standard-4\",\"evaluatorType\":\"n1-standard-4\",\"workerCount\":\"2\","
           "\"parameterServerCount\":\"1\",\"evaluatorCount\":\"1\"}}",
           "literal: CLUSTER_SPEC of worker 1");
    free(got);
    got = ty_clusterenv_tf_config(f.ce, r);
    is_str(got,
           "{\"cluster\":{\"chief\":[\"h-master-0:2222\"],\"worker\":[\"h-worker-0:2300\","
           "\"h-worker-1:2301\"],\"ps\":[\"h-ps-0:2400\"]},"
           "\"environment\":\"cloud\",\"task\":{\"type\":\"worker\",\"index\":1},\"job\":{"
           "\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\",\"masterConfig\":{"
           "\"imageUri\":\"img:1\"},\"workerType\":\"n1-standard-4\",\"parameterServerType\":"
           "\"n1-standard-4\",\"evaluatorType\":\"n1-standard-4\",\"workerCount\":\"2\","
           "\"parameterServerCount\":\"1\",\"evaluatorCount\":\"1\"}}",
           "literal: TF_CONFIG of worker 1");
    free(got);
    fixture_free(&f);
}

/* Without evaluators TF_CONFIG says "master" unless useChiefInTfConfig is set. */
static void test_no_evaluators(void)
{
    static const struct {
        const char *doc, *job, *primary, *what;
    } cases[] = {
        {DOC_MWP, JOB_MWP, "master", "1m+2w+1ps"},
        {DOC_MWP_CHIEF, JOB_MWP_CHIEF, "chief", "1m+2w+1ps+chief"},
    };
    static const struct {
        enum ty_role role;
        int index;
        const char *type;
    } reps[] = {
        {TY_ROLE_MASTER, 0, NULL},
        {TY_ROLE_WORKER, 0, "worker"},
        {TY_ROLE_WORKER, 1, "worker"},
        {TY_ROLE_PS, 0, "ps"},
    };
    struct fixture f;

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *what = cases[c].what;
        if (!ok(fixture_new(&f, cases[c].doc, NULL, NULL) == 0, "%s: set up", what))
            continue;
        is_int(f.plan->n_replicas, 4, "%s: four replicas", what);
        for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
            char cs[4096], tf[4096];
            const char *cs_type = reps[i].type ? reps[i].type : "master";
            const char *tf_type = reps[i].type ? reps[i].type : cases[c].primary;
            (void)snprintf(cs,
                           sizeof(cs),
                           "{\"cluster\":{\"master\":[" A_M "],\"worker\":[" A_W0 "," A_W1
                           "],\"ps\":[" A_P0 "]},\"environment\":\"cloud\",\"task\":{\"type\":"
                           "\"%s\",\"index\":%d},\"job\":%s}",
                           cs_type,
                           reps[i].index,
                           cases[c].job);
            (void)snprintf(tf,
                           sizeof(tf),
                           "{\"cluster\":{\"%s\":[" A_M "],\"worker\":[" A_W0 "," A_W1
                           "],\"ps\":[" A_P0 "]},\"environment\":\"cloud\",\"task\":{\"type\":"
                           "\"%s\",\"index\":%d},\"job\":%s}",
                           cases[c].primary,
                           tf_type,
                           reps[i].index,
                           cases[c].job);
            check_replica(&f, reps[i].role, reps[i].index, cs, tf, what);
        }
        fixture_free(&f);
    }
}

/* ---- trials ------------------------------------------------------------------------------ */

static const char DOC_TUNED[] =
    "{\"jobId\":\"tuned\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":"
    "\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"img:1\"},\"workerType\":\"n1-standard-4\","
    "\"workerCount\":1,\"evaluatorType\":\"n1-standard-4\",\"evaluatorCount\":1,"
    "\"args\":[\"--epochs\",\"5\"],\"jobDir\":\"/data/out\",\"hyperparameters\":{\"goal\":"
    "\"MAXIMIZE\",\"maxTrials\":4,\"params\":[{\"parameterName\":\"opt\",\"type\":"
    "\"CATEGORICAL\",\"categoricalValues\":[\"adam\",\"sgd\"]}]}}}";
#define JOB_TUNED                                                                                  \
    "{" TI_HEAD "," TI_IMG ",\"workerType\":" N4 ",\"evaluatorType\":" N4 ","                      \
    "\"workerCount\":\"1\",\"evaluatorCount\":\"1\",\"args\":[\"--epochs\",\"5\"],"                \
    "\"hyperparameters\":{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"opt\","           \
    "\"type\":\"CATEGORICAL\",\"categoricalValues\":[\"adam\",\"sgd\"]}],\"maxTrials\":4},"        \
    "\"jobDir\":\"/data/out\"}"
#define CS_TUNED                                                                                   \
    "{\"cluster\":{\"master\":[" A_M "],\"worker\":[" A_W0 "],\"evaluator\":[" A_E0 "]},"
#define TF_TUNED "{\"cluster\":{\"chief\":[" A_M "],\"worker\":[" A_W0 "]},"

static void test_trials(void)
{
    char *trial_args[] = {"--opt=adam", "--lr=0.01", NULL};
    struct fixture f;
    char **env = NULL;
    struct ty_replica *m;

    if (ok(fixture_new(&f, DOC_TUNED, "3", trial_args) == 0, "trial: set up")) {
        check_replica(&f,
                      TY_ROLE_MASTER,
                      0,
                      CS_TUNED TASKT("master", 0, "3") ",\"job\":" JOB_TUNED "}",
                      TF_TUNED TASKT("chief", 0, "3") ",\"job\":" JOB_TUNED "}",
                      "trial 3");
        check_replica(&f,
                      TY_ROLE_WORKER,
                      0,
                      CS_TUNED TASKT("worker", 0, "3") ",\"job\":" JOB_TUNED "}",
                      TF_TUNED TASKT("worker", 0, "3") ",\"job\":" JOB_TUNED "}",
                      "trial 3");
        check_replica(&f,
                      TY_ROLE_EVALUATOR,
                      0,
                      CS_TUNED TASKT("evaluator", 0, "3") ",\"job\":" JOB_TUNED "}",
                      TF_TUNED TASKT("evaluator", 0, "3") ",\"job\":" JOB_TUNED "}",
                      "trial 3");
        is_str(f.plan->trial_id, "3", "trial: plan trial id");
        is_str(f.plan->job_dir, "/data/out/3", "trial: per-trial job dir");
        for (size_t i = 0; i < f.plan->n_replicas; i++) {
            struct ty_replica *r = &f.plan->replicas[i];
            ty_strv_free(env);
            env = NULL;
            is_int(ty_clusterenv_render(f.ce, r, NULL, &env, NULL),
                   0,
                   "trial: render %s",
                   r->display_name);
            is_str(ty_strv_getenv(env, "CLOUD_ML_TRIAL_ID"),
                   "3",
                   "trial: CLOUD_ML_TRIAL_ID on %s",
                   r->display_name);
            is_str(ty_strv_getenv(env, "CLOUD_ML_JOB_ID"),
                   "tuned",
                   "trial: CLOUD_ML_JOB_ID on %s",
                   r->display_name);
        }
        m = ty_plan_find(f.plan, TY_ROLE_MASTER, 0);
        is_int(ty_strv_len(m->args), 5, "trial: master has five args");
        if (ty_strv_len(m->args) == 5) {
            is_str(m->args[0], "--epochs", "trial: args[0]");
            is_str(m->args[1], "5", "trial: args[1]");
            is_str(m->args[2], "--job-dir=/data/out/3", "trial: args[2] is the trial's job dir");
            is_str(m->args[3], "--opt=adam", "trial: args[3] is the first trial arg");
            is_str(m->args[4], "--lr=0.01", "trial: args[4] is the second trial arg");
        }
        fixture_free(&f);
    }

    /* The same job outside a trial: no "trial" key, no CLOUD_ML_TRIAL_ID. */
    if (ok(fixture_new(&f, DOC_TUNED, NULL, NULL) == 0, "no trial: set up")) {
        check_replica(&f,
                      TY_ROLE_MASTER,
                      0,
                      CS_TUNED TASK("master", 0) ",\"job\":" JOB_TUNED "}",
                      TF_TUNED TASK("chief", 0) ",\"job\":" JOB_TUNED "}",
                      "no trial");
        ok(f.plan->trial_id == NULL, "no trial: plan has no trial id");
        is_str(f.plan->job_dir, "/data/out", "no trial: job dir unchanged");
        ty_strv_free(env);
        env = NULL;
        m = ty_plan_find(f.plan, TY_ROLE_MASTER, 0);
        is_int(ty_clusterenv_render(f.ce, m, NULL, &env, NULL), 0, "no trial: render");
        ok(ty_strv_getenv(env, "CLOUD_ML_TRIAL_ID") == NULL, "no trial: no CLOUD_ML_TRIAL_ID");
        is_int(ty_strv_len(m->args), 3, "no trial: master has three args");
        if (ty_strv_len(m->args) == 3)
            is_str(m->args[2], "--job-dir=/data/out", "no trial: --job-dir last");
        fixture_free(&f);
    }
    ty_strv_free(env);
}

/* A single-replica trial: the trial key sits after the index. */
static void test_trial_single(void)
{
    struct fixture f;

    if (ok(fixture_new(&f, DOC_SINGLE, "12", NULL) == 0, "trial 12: set up"))
        check_replica(&f,
                      TY_ROLE_MASTER,
                      0,
                      CL_M TASKT("master", 0, "12") ",\"job\":" JOB_SINGLE "}",
                      CL_M TASKT("master", 0, "12") ",\"job\":" JOB_SINGLE "}",
                      "trial 12");
    fixture_free(&f);
}

/* ---- rendering into an environment vector ------------------------------------------------- */

static size_t count_name(char *const *env, const char *name)
{
    size_t n = 0, l = strlen(name);
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], name, l) == 0 && env[i][l] == '=')
            n++;
    return n;
}

static void test_render(void)
{
    struct fixture f;
    struct ty_replica *w1;
    char **env = NULL;
    char *cs, *tf;

    if (!ok(fixture_new(&f, DOC_FULL, NULL, NULL) == 0, "render: set up"))
        return;
    ty_strv_push(&env, "PATH=/usr/bin");
    ty_strv_push(&env, "TF_CONFIG=stale");
    ty_strv_push(&env, "CLUSTER_SPEC=stale");
    ty_strv_push(&env, "CLOUD_ML_JOB_ID=stale");
    ty_strv_push(&env, "HOME=/root");
    w1 = ty_plan_find(f.plan, TY_ROLE_WORKER, 1);
    is_int(ty_clusterenv_render(f.ce, w1, NULL, &env, NULL), 0, "render: worker 1");
    cs = ty_clusterenv_cluster_spec(f.ce, w1);
    tf = ty_clusterenv_tf_config(f.ce, w1);
    is_str(ty_strv_getenv(env, "CLUSTER_SPEC"), cs, "render: CLUSTER_SPEC replaced");
    is_str(ty_strv_getenv(env, "TF_CONFIG"), tf, "render: TF_CONFIG replaced");
    is_str(ty_strv_getenv(env, "CLOUD_ML_JOB_ID"), "my_job", "render: CLOUD_ML_JOB_ID replaced");
    is_int(count_name(env, "CLUSTER_SPEC"), 1, "render: one CLUSTER_SPEC");
    is_int(count_name(env, "TF_CONFIG"), 1, "render: one TF_CONFIG");
    is_int(count_name(env, "CLOUD_ML_JOB_ID"), 1, "render: one CLOUD_ML_JOB_ID");
    is_str(ty_strv_getenv(env, "PATH"), "/usr/bin", "render: PATH kept");
    is_str(ty_strv_getenv(env, "HOME"), "/root", "render: HOME kept");
    is_int(ty_strv_len(env), 5, "render: nothing else added");
    ok(ty_strv_getenv(env, "CLOUD_ML_TRIAL_ID") == NULL, "render: no trial id outside trials");
    ok(ty_strv_getenv(env, "MASTER_ADDR") == NULL, "render: no MASTER_ADDR without the option");
    ok(ty_strv_getenv(env, "RANK") == NULL, "render: no RANK without the option");
    free(cs);
    free(tf);

    /* Rendering again (another replica) into the same vector replaces, not appends. */
    is_int(ty_clusterenv_render(f.ce, &f.plan->replicas[0], NULL, &env, NULL),
           0,
           "render: master into the same vector");
    is_int(ty_strv_len(env), 5, "render: still five entries");
    like(ty_strv_getenv(env, "TF_CONFIG"),
         "\"task\":{\"type\":\"chief\",\"index\":0}",
         "render: TF_CONFIG now the master's");

    /* Into an empty (NULL) vector. */
    ty_strv_free(env);
    env = NULL;
    is_int(ty_clusterenv_render(f.ce, w1, NULL, &env, NULL), 0, "render: into NULL vector");
    is_int(ty_strv_len(env), 3, "render: three variables");
    ty_strv_free(env);
    fixture_free(&f);
}

static void test_pytorch(void)
{
    struct ty_env_options on = {.pytorch = true}, off = {.pytorch = false};
    static const struct {
        enum ty_role role;
        int index;
        const char *rank;
    } reps[] = {
        {TY_ROLE_MASTER, 0, "0"},
        {TY_ROLE_WORKER, 0, "1"},
        {TY_ROLE_WORKER, 1, "2"},
        {TY_ROLE_PS, 0, NULL},
        {TY_ROLE_EVALUATOR, 0, NULL},
    };
    struct fixture f;

    if (!ok(fixture_new(&f, DOC_FULL, NULL, NULL) == 0, "pytorch: set up"))
        return;
    for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
        struct ty_replica *r = ty_plan_find(f.plan, reps[i].role, reps[i].index);
        char **env = NULL;

        is_int(ty_clusterenv_render(f.ce, r, &on, &env, NULL),
               0,
               "pytorch: render %s",
               r->display_name);
        if (reps[i].rank) {
            is_str(ty_strv_getenv(env, "MASTER_ADDR"),
                   "h-master-0",
                   "pytorch: MASTER_ADDR on %s",
                   r->display_name);
            is_str(ty_strv_getenv(env, "MASTER_PORT"),
                   "2222",
                   "pytorch: MASTER_PORT on %s",
                   r->display_name);
            is_str(ty_strv_getenv(env, "WORLD_SIZE"),
                   "3",
                   "pytorch: WORLD_SIZE on %s",
                   r->display_name);
            is_str(
                ty_strv_getenv(env, "RANK"), reps[i].rank, "pytorch: RANK on %s", r->display_name);
            is_int(ty_strv_len(env), 7, "pytorch: seven variables on %s", r->display_name);
        } else {
            ok(!ty_strv_getenv(env, "MASTER_ADDR") && !ty_strv_getenv(env, "MASTER_PORT") &&
                   !ty_strv_getenv(env, "WORLD_SIZE") && !ty_strv_getenv(env, "RANK"),
               "pytorch: nothing for %s",
               r->display_name);
            is_int(ty_strv_len(env), 3, "pytorch: three variables on %s", r->display_name);
        }
        ty_strv_free(env);
        env = NULL;
        is_int(ty_clusterenv_render(f.ce, r, &off, &env, NULL),
               0,
               "pytorch off: render %s",
               r->display_name);
        ok(!ty_strv_getenv(env, "MASTER_ADDR") && !ty_strv_getenv(env, "RANK") &&
               !ty_strv_getenv(env, "WORLD_SIZE") && !ty_strv_getenv(env, "MASTER_PORT"),
           "pytorch off: nothing for %s",
           r->display_name);
        ty_strv_free(env);
    }
    fixture_free(&f);

    /* A single replica: WORLD_SIZE 1, RANK 0. */
    if (ok(fixture_new(&f, DOC_SINGLE, NULL, NULL) == 0, "pytorch single: set up")) {
        char **env = NULL;
        is_int(ty_clusterenv_render(f.ce, &f.plan->replicas[0], &on, &env, NULL),
               0,
               "pytorch single: render");
        is_str(ty_strv_getenv(env, "WORLD_SIZE"), "1", "pytorch single: WORLD_SIZE 1");
        is_str(ty_strv_getenv(env, "RANK"), "0", "pytorch single: RANK 0");
        ty_strv_free(env);
        fixture_free(&f);
    }
}

static void test_addresses(void)
{
    struct ty_job *job = job_from(DOC_MW);
    struct ty_cluster_plan *plan = NULL;
    struct ty_clusterenv *ce = NULL;
    struct ty_error err = {0};
    char *got;

    if (!ok(job != NULL, "addresses: job"))
        return;
    is_int(ty_plan_build(job, NULL, NULL, &plan, &err), 0, "addresses: plan");

    /* Unplaced replicas. */
    ce = (struct ty_clusterenv *)&err; /* must stay untouched on failure */
    is_int(ty_clusterenv_new(plan, &ce, &err), -EINVAL, "unplaced: -EINVAL");
    ok(ce == (struct ty_clusterenv *)&err, "unplaced: *ret untouched");
    like(err.msg, "master 0", "unplaced: names the replica");
    like(err.msg, "no address", "unplaced: says what is missing");
    ce = NULL;

    plan->replicas[0].host = xstrdup("h-master-0");
    plan->replicas[0].port = 2222;
    ty_error_clear(&err);
    is_int(ty_clusterenv_new(plan, &ce, &err), -EINVAL, "half placed: -EINVAL");
    like(err.msg, "worker 0", "half placed: names the worker");
    plan->replicas[1].host = xstrdup("h-worker-0");
    plan->replicas[1].port = 0;
    is_int(ty_clusterenv_new(plan, &ce, &err), -EINVAL, "port 0: -EINVAL");

    /* IPv6 literal hosts are bracketed. */
    free(plan->replicas[1].host);
    plan->replicas[1].host = xstrdup("fd00::2");
    plan->replicas[1].port = 2300;
    is_int(ty_clusterenv_new(plan, &ce, &err), 0, "ipv6: placed");
    if (ce) {
        got = ty_clusterenv_cluster_spec(ce, &plan->replicas[0]);
        like(got,
             "{\"cluster\":{\"master\":[\"h-master-0:2222\"],\"worker\":[\"[fd00::2]:2300\"]}",
             "ipv6: bracketed address");
        free(got);
        ty_clusterenv_free(ce);
    }
    ty_clusterenv_free(NULL);
    ty_plan_free(plan);
    ty_job_free(job);
}

/* ---- size limits ------------------------------------------------------------------------- */

static const char DOC_HUGE[] =
    "{\"jobId\":\"huge\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":"
    "\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"img:1\"},\"workerType\":\"n1-standard-4\","
    "\"workerCount\":5000}}";

static void test_size(void)
{
    struct ty_job *job = job_from(DOC_FULL);
    struct ty_cluster_plan *plan = NULL;
    struct ty_clusterenv *ce = NULL;
    struct ty_error err = {0};
    json_t *tree = NULL;
    struct ty_job *huge = NULL;

    if (!ok(job != NULL, "size: job"))
        return;
    is_int(ty_clusterenv_check_size(job, TY_ADDR_LEN_VALIDATE, &err), 0, "size: normal job fits");

    /* The same job grown to 5000 workers no longer fits. */
    job->roles[TY_ROLE_WORKER].count = 5000;
    is_int(ty_clusterenv_check_size(job, TY_ADDR_LEN_VALIDATE, &err),
           -E2BIG,
           "size: 5000 workers refused");
    like(err.msg, "5003 replicas", "size: message names the replica count");
    like(err.msg, "131072", "size: message names the limit");
    /* The size depends on the address length: 5003 addresses of 16 bytes fit. */
    is_int(ty_clusterenv_check_size(job, 16, &err), 0, "size: fits with short addresses");

    /* ty_clusterenv_new checks too, on a placed plan (10003 addresses of ~17 bytes). */
    job->roles[TY_ROLE_WORKER].count = 10000;
    is_int(ty_plan_build(job, NULL, NULL, &plan, &err), 0, "size: huge plan builds");
    place(plan);
    ty_error_clear(&err);
    is_int(ty_clusterenv_new(plan, &ce, &err), -E2BIG, "size: clusterenv_new refuses");
    like(err.msg, "10003 replicas", "size: clusterenv_new names the count");
    like(err.msg, "CLUSTER_SPEC", "size: clusterenv_new names the variable");
    ok(ce == NULL, "size: nothing returned");
    ty_plan_free(plan);
    job->roles[TY_ROLE_WORKER].count = 2;
    ty_job_free(job);

    /* And a job document that asks for it is rejected up front. */
    ty_error_clear(&err);
    is_int(ty_spec_parse(DOC_HUGE, strlen(DOC_HUGE), TY_SPEC_JSON, &tree, &err),
           0,
           "size: huge document parses");
    is_int(ty_job_accept(tree, &huge, &err), -E2BIG, "size: huge job refused");
    like(err.msg, "5001 replicas", "size: job message names the replica count");
    ok(huge == NULL, "size: no job returned");
    json_decref(tree);
}

int main(void)
{
    test_pairs();
    test_full();
    test_literal();
    test_no_evaluators();
    test_trials();
    test_trial_single();
    test_render();
    test_pytorch();
    test_addresses();
    test_size();
    return done_testing();
}
