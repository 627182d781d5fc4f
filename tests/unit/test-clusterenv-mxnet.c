/* SPDX-License-Identifier: Apache-2.0
 * test-clusterenv-mxnet.c: the opt-in DMLC_* variables of MXNet's ps-lite
 * (docs/environment.md#mxnet-variables): the master is the scheduler, workers are workers,
 * parameter servers are servers, evaluators get none; the root URI is the master's address
 * (its IP where the runtime names it), the counts leave the scheduler out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clusterenv-check.h"
#include "clusterenv.h"
#include "json.h"
#include "plan.h"
#include "spec.h"
#include "strv.h"
#include "tap.h"

static const char DOC_FULL[] = DOC("mx",
                                   ",\"workerType\":" N4 ",\"workerCount\":2,"
                                   "\"parameterServerType\":" N4 ",\"parameterServerCount\":3,"
                                   "\"evaluatorType\":" N4 ",\"evaluatorCount\":1");
static const char DOC_SINGLE[] = DOC("mx1", "");

static const char *const DMLC_VARS[] = {
    "DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_WORKER", "DMLC_NUM_SERVER"};

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

/* Build and place @text: host h-<role>-<index>, port 2222 on the master, 3000 + i on the
 * others; the master's IP is @master_ip (NULL: its host is an address). */
static int fixture_new(struct fixture *f, const char *text, const char *master_ip)
{
    struct ty_error err = {0};
    json_t *tree = NULL;
    int r;

    memset(f, 0, sizeof(*f));
    r = ty_spec_parse(text, strlen(text), TY_SPEC_JSON, &tree, &err);
    if (r >= 0)
        r = ty_job_from_json(tree, &f->job, &err);
    json_decref(tree);
    if (r >= 0)
        r = ty_plan_build(f->job, NULL, NULL, &f->plan, &err);
    for (size_t i = 0; r >= 0 && i < f->plan->n_replicas; i++) {
        struct ty_replica *rep = &f->plan->replicas[i];
        rep->host = xasprintf("h-%s-%d", ty_role_name(rep->role), rep->index);
        rep->port = rep->role == TY_ROLE_MASTER ? 2222 : 3000 + (int)i;
        if (rep->role == TY_ROLE_MASTER && master_ip)
            rep->ip = xstrdup(master_ip);
    }
    if (r >= 0)
        r = ty_clusterenv_new(f->plan, &f->ce, &err);
    if (r < 0) {
        diag("set up: %s", ty_error_msg(&err));
        fixture_free(f);
    }
    return r;
}

/* Render replica (@role, @index) of @f with @opts into a fresh vector. */
static char **
render(const struct fixture *f, enum ty_role role, int index, const struct ty_env_options *opts)
{
    char **env = NULL;
    struct ty_replica *r = ty_plan_find(f->plan, role, index);

    if (!r || ty_clusterenv_render(f->ce, r, opts, &env, NULL) < 0) {
        ty_strv_free(env);
        return NULL;
    }
    return env;
}

static bool no_dmlc(char *const *env)
{
    for (size_t i = 0; i < sizeof(DMLC_VARS) / sizeof(DMLC_VARS[0]); i++)
        if (ty_strv_getenv(env, DMLC_VARS[i]))
            return false;
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], "DMLC_", 5) == 0)
            return false;
    return true;
}

static void test_roles(void)
{
    is_str(ty_clusterenv_dmlc_role(TY_ROLE_MASTER), "scheduler", "role: master is the scheduler");
    is_str(ty_clusterenv_dmlc_role(TY_ROLE_WORKER), "worker", "role: worker is a worker");
    is_str(ty_clusterenv_dmlc_role(TY_ROLE_PS), "server", "role: ps is a server");
    ok(ty_clusterenv_dmlc_role(TY_ROLE_EVALUATOR) == NULL, "role: an evaluator has none");
}

static void test_full(void)
{
    struct ty_env_options on = {.mxnet = true};
    static const struct {
        enum ty_role role;
        int index;
        const char *dmlc_role;
    } reps[] = {
        {TY_ROLE_MASTER, 0, "scheduler"},
        {TY_ROLE_WORKER, 0, "worker"},
        {TY_ROLE_WORKER, 1, "worker"},
        {TY_ROLE_PS, 0, "server"},
        {TY_ROLE_PS, 2, "server"},
        {TY_ROLE_EVALUATOR, 0, NULL},
    };
    struct fixture f;

    if (!ok(fixture_new(&f, DOC_FULL, NULL) == 0, "full: set up"))
        return;
    for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
        char **env = render(&f, reps[i].role, reps[i].index, &on);
        const char *name = ty_plan_find(f.plan, reps[i].role, reps[i].index)->display_name;

        if (!ok(env != NULL, "full: render %s", name))
            continue;
        if (!reps[i].dmlc_role) {
            ok(no_dmlc(env), "full: no DMLC_* on %s", name);
            is_int(ty_strv_len(env), 3, "full: only the three contract variables on %s", name);
            ty_strv_free(env);
            continue;
        }
        is_str(ty_strv_getenv(env, "DMLC_ROLE"), reps[i].dmlc_role, "full: DMLC_ROLE on %s", name);
        is_str(ty_strv_getenv(env, "DMLC_PS_ROOT_URI"),
               "h-master-0",
               "full: DMLC_PS_ROOT_URI on %s is the master's host",
               name);
        is_str(ty_strv_getenv(env, "DMLC_PS_ROOT_PORT"),
               "2222",
               "full: DMLC_PS_ROOT_PORT on %s is the master's port",
               name);
        is_str(ty_strv_getenv(env, "DMLC_NUM_WORKER"),
               "2",
               "full: DMLC_NUM_WORKER on %s leaves the scheduler out",
               name);
        is_str(ty_strv_getenv(env, "DMLC_NUM_SERVER"), "3", "full: DMLC_NUM_SERVER on %s", name);
        is_int(ty_strv_len(env), 8, "full: 3 + 5 variables on %s", name);
        ok(!ty_strv_getenv(env, "MASTER_ADDR") && !ty_strv_getenv(env, "RANK"),
           "full: no PyTorch variables on %s",
           name);
        ty_strv_free(env);
    }
    fixture_free(&f);
}

static void test_off(void)
{
    struct ty_env_options off = {.mxnet = false}, pt = {.pytorch = true};
    struct fixture f;

    if (!ok(fixture_new(&f, DOC_FULL, NULL) == 0, "off: set up"))
        return;
    for (size_t i = 0; i < f.plan->n_replicas; i++) {
        const struct ty_replica *r = &f.plan->replicas[i];
        char **env = NULL;

        is_int(ty_clusterenv_render(f.ce, r, &off, &env, NULL), 0, "off: render");
        ok(no_dmlc(env), "off: no DMLC_* on %s", r->display_name);
        ty_strv_free(env);
        env = NULL;
        is_int(ty_clusterenv_render(f.ce, r, NULL, &env, NULL), 0, "no options: render");
        ok(no_dmlc(env), "no options: no DMLC_* on %s", r->display_name);
        ty_strv_free(env);
        env = NULL;
        is_int(ty_clusterenv_render(f.ce, r, &pt, &env, NULL), 0, "pytorch only: render");
        ok(no_dmlc(env), "pytorch only: no DMLC_* on %s", r->display_name);
        ty_strv_free(env);
    }
    fixture_free(&f);
}

/* Both labels: the two sets do not overlap, so each replica gets both of its sets. */
static void test_both(void)
{
    struct ty_env_options both = {.pytorch = true, .mxnet = true};
    struct fixture f;
    char **env;

    if (!ok(fixture_new(&f, DOC_FULL, NULL) == 0, "both: set up"))
        return;
    env = render(&f, TY_ROLE_WORKER, 1, &both);
    if (ok(env != NULL, "both: render worker 1")) {
        is_str(ty_strv_getenv(env, "RANK"), "2", "both: RANK on worker 1");
        is_str(ty_strv_getenv(env, "WORLD_SIZE"), "3", "both: WORLD_SIZE counts the master");
        is_str(ty_strv_getenv(env, "DMLC_ROLE"), "worker", "both: DMLC_ROLE on worker 1");
        is_str(ty_strv_getenv(env, "DMLC_NUM_WORKER"), "2", "both: DMLC_NUM_WORKER does not");
        is_int(ty_strv_len(env), 12, "both: 3 + 4 + 5 variables on worker 1");
    }
    ty_strv_free(env);
    env = render(&f, TY_ROLE_PS, 1, &both);
    if (ok(env != NULL, "both: render ps 1")) {
        is_str(ty_strv_getenv(env, "DMLC_ROLE"), "server", "both: DMLC_ROLE on ps 1");
        ok(!ty_strv_getenv(env, "RANK"), "both: no RANK on ps 1");
        is_int(ty_strv_len(env), 8, "both: 3 + 5 variables on ps 1");
    }
    ty_strv_free(env);
    env = render(&f, TY_ROLE_EVALUATOR, 0, &both);
    if (ok(env != NULL, "both: render evaluator 0"))
        is_int(ty_strv_len(env), 3, "both: nothing more on the evaluator");
    ty_strv_free(env);
    fixture_free(&f);
}

/* The container runtime names its replicas and gives their IP apart: the URI is the IP. */
static void test_ip(void)
{
    struct ty_env_options on = {.mxnet = true};
    struct fixture f;
    char **env;

    if (!ok(fixture_new(&f, DOC_FULL, "198.18.4.2") == 0, "ip: set up"))
        return;
    env = render(&f, TY_ROLE_PS, 0, &on);
    is_str(ty_strv_getenv(env, "DMLC_PS_ROOT_URI"), "198.18.4.2", "ip: the master's IP on ps 0");
    ty_strv_free(env);
    env = render(&f, TY_ROLE_MASTER, 0, &on);
    is_str(ty_strv_getenv(env, "DMLC_PS_ROOT_URI"), "198.18.4.2", "ip: and on the scheduler");
    ty_strv_free(env);
    fixture_free(&f);
}

/* A master alone: a scheduler with no workers and no servers. Rendering again into the same
 * vector replaces the variables rather than adding a second copy. */
static void test_single_and_again(void)
{
    struct ty_env_options on = {.mxnet = true};
    struct fixture f;
    char **env = NULL;

    if (!ok(fixture_new(&f, DOC_SINGLE, NULL) == 0, "single: set up"))
        return;
    ty_strv_setenv(&env, "DMLC_ROLE", "stale");
    ty_strv_setenv(&env, "KEEP", "1");
    is_int(ty_clusterenv_render(f.ce, &f.plan->replicas[0], &on, &env, NULL), 0, "single: render");
    is_int(ty_clusterenv_render(f.ce, &f.plan->replicas[0], &on, &env, NULL), 0, "single: again");
    is_str(ty_strv_getenv(env, "DMLC_ROLE"), "scheduler", "single: the stale role replaced");
    is_str(ty_strv_getenv(env, "DMLC_NUM_WORKER"), "0", "single: no workers");
    is_str(ty_strv_getenv(env, "DMLC_NUM_SERVER"), "0", "single: no servers");
    is_str(ty_strv_getenv(env, "KEEP"), "1", "single: other variables kept");
    is_int(ty_strv_len(env), 9, "single: 1 + 3 + 5 variables, none twice");
    ty_strv_free(env);
    fixture_free(&f);
}

int main(void)
{
    test_roles();
    test_full();
    test_off();
    test_both();
    test_ip();
    test_single_and_again();
    return done_testing();
}
