/* SPDX-License-Identifier: Apache-2.0
 * test-plan.c: the cluster plan (plan.h) a job becomes: one replica per role and index, with
 * its task and display names, image, command and args (containerCommand and containerArgs,
 * inherited from the master; --job-dir; a trial's arguments). The environment rendered from
 * the plan is in test-clusterenv*.c. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "clusterenv-check.h"
#include "plan.h"
#include "strv.h"

/* Every role: two workers, one ps, one evaluator. */
static const char DOC_FULL[] = DOC("my_job",
                                   ",\"workerType\":" N4 ",\"workerCount\":2,"
                                   "\"parameterServerType\":" N4 ",\"parameterServerCount\":1,"
                                   "\"evaluatorType\":" N4 ",\"evaluatorCount\":1");

static void test_plan_names(void)
{
    static const char *const tasks[] = {"master-replica-0",
                                        "worker-replica-0",
                                        "worker-replica-1",
                                        "ps-replica-0",
                                        "evaluator-replica-0"};
    static const char *const names[] = {"master 0", "worker 0", "worker 1", "ps 0", "evaluator 0"};
    struct ty_job *job = job_from(DOC_FULL);
    struct ty_cluster_plan *plan = NULL;

    if (!ok(job != NULL, "plan: job"))
        return;
    is_int(ty_plan_build(job, NULL, NULL, &plan, NULL), 0, "plan: build");
    is_int(plan->n_replicas, 5, "plan: five replicas");
    for (size_t i = 0; i < plan->n_replicas && i < 5; i++) {
        const struct ty_replica *r = &plan->replicas[i];
        is_str(r->task_name, tasks[i], "plan: task name %zu", i);
        is_str(r->display_name, names[i], "plan: display name %zu", i);
        is_str(r->image, "img:1", "plan: %s runs the master's image", names[i]);
        is_str(r->machine_type, "n1-standard-4", "plan: %s machine type", names[i]);
        ok(r->host == NULL && r->port == 0, "plan: %s unplaced", names[i]);
        ok(r->command == NULL && r->args == NULL, "plan: %s uses ENTRYPOINT and CMD", names[i]);
        ok(ty_replica_argv(r) == NULL, "plan: %s has no argv of its own", names[i]);
    }
    ok(plan->trial_id == NULL && plan->job_dir == NULL, "plan: no trial, no job dir");
    ok(ty_plan_find(plan, TY_ROLE_WORKER, 1) == &plan->replicas[2], "plan: find worker 1");
    ok(ty_plan_find(plan, TY_ROLE_WORKER, 2) == NULL, "plan: no worker 2");
    ok(ty_plan_find(plan, TY_ROLE_PS, 1) == NULL, "plan: no ps 1");
    ok(ty_plan_free(plan) == NULL, "plan: free returns NULL");
    ok(ty_plan_free(NULL) == NULL, "plan: free(NULL)");
    ty_job_free(job);
}

static const char DOC_CMD[] =
    "{\"jobId\":\"cmd\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":"
    "\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"img:1\",\"containerCommand\":[\"python\","
    "\"train.py\"],\"containerArgs\":[\"--role\",\"any\"]},\"workerType\":\"n1-standard-4\","
    "\"workerCount\":1,\"parameterServerType\":\"n1-standard-4\",\"parameterServerCount\":1,"
    "\"parameterServerConfig\":{\"imageUri\":\"ps:2\",\"containerArgs\":[\"serve\"]},"
    "\"evaluatorType\":\"n1-standard-4\",\"evaluatorCount\":1,\"evaluatorConfig\":{\"imageUri\":"
    "\"eval:3\"},\"jobDir\":\"/jd\"}}";
static const char DOC_JOBDIR[] =
    "{\"jobId\":\"jd\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":"
    "\"n1-standard-4\",\"masterConfig\":{\"imageUri\":\"img:1\"},\"jobDir\":\"gs://b/out\"}}";

static void is_strv(char *const *got, const char *const *want, const char *what)
{
    size_t n = 0;
    bool same;

    while (want[n])
        n++;
    same = ty_strv_len(got) == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(got[i], want[i]) == 0;
    if (!ok(same, "%s", what))
        for (size_t i = 0; got && got[i]; i++)
            diag("  got[%zu] = '%s'", i, got[i]);
}

static void test_plan_args(void)
{
    char *targs[] = {"--opt=sgd", NULL};
    struct ty_job *job = job_from(DOC_CMD);
    struct ty_cluster_plan *plan = NULL;
    const struct ty_replica *r;
    char **argv;

    if (!ok(job != NULL, "args: job"))
        return;
    is_int(ty_plan_build(job, NULL, NULL, &plan, NULL), 0, "args: plan");
    r = ty_plan_find(plan, TY_ROLE_MASTER, 0);
    is_strv(r->command, (const char *[]){"python", "train.py", NULL}, "args: master command");
    is_strv(r->args,
            (const char *[]){"--role", "any", "--job-dir=/jd", NULL},
            "args: master containerArgs then --job-dir");
    argv = ty_replica_argv(r);
    is_strv(argv,
            (const char *[]){"python", "train.py", "--role", "any", "--job-dir=/jd", NULL},
            "args: master argv");
    ty_strv_free(argv);
    r = ty_plan_find(plan, TY_ROLE_WORKER, 0);
    is_str(r->image, "img:1", "args: worker without image runs the master's");
    is_strv(r->command,
            (const char *[]){"python", "train.py", NULL},
            "args: worker inherits the master's command");
    is_strv(r->args,
            (const char *[]){"--role", "any", "--job-dir=/jd", NULL},
            "args: worker inherits the master's args");
    r = ty_plan_find(plan, TY_ROLE_PS, 0);
    is_str(r->image, "ps:2", "args: ps image");
    ok(r->command == NULL, "args: ps with its own image keeps its ENTRYPOINT");
    is_strv(r->args, (const char *[]){"serve", "--job-dir=/jd", NULL}, "args: ps containerArgs");
    ok(ty_replica_argv(r) == NULL, "args: ps argv NULL without a command");
    r = ty_plan_find(plan, TY_ROLE_EVALUATOR, 0);
    is_str(r->image, "eval:3", "args: evaluator image");
    ok(r->command == NULL, "args: evaluator command NULL");
    is_strv(r->args, (const char *[]){"--job-dir=/jd", NULL}, "args: evaluator only --job-dir");
    ty_plan_free(plan);

    is_int(ty_plan_build(job, "7", targs, &plan, NULL), 0, "args: trial plan");
    is_str(plan->job_dir, "/jd/7", "args: trial job dir");
    is_strv(plan->replicas[0].args,
            (const char *[]){"--role", "any", "--job-dir=/jd/7", "--opt=sgd", NULL},
            "args: containerArgs, --job-dir, trial args");
    argv = ty_replica_argv(&plan->replicas[0]);
    is_strv(argv,
            (const char *[]){
                "python", "train.py", "--role", "any", "--job-dir=/jd/7", "--opt=sgd", NULL},
            "args: trial argv");
    ty_strv_free(argv);
    is_strv(ty_plan_find(plan, TY_ROLE_EVALUATOR, 0)->args,
            (const char *[]){"--job-dir=/jd/7", "--opt=sgd", NULL},
            "args: evaluator trial args");
    ty_plan_free(plan);
    {
        char *was = job->job_dir;
        job->job_dir = (char *)"gs://b/out/";
        is_int(ty_plan_build(job, "7", targs, &plan, NULL), 0, "args: trial plan, jobDir with a /");
        is_str(plan->job_dir, "gs://b/out/7", "args: one '/' before the trial (os.path.join's)");
        ty_plan_free(plan);
        job->job_dir = was;
    }
    ty_job_free(job);

    job = job_from(DOC_JOBDIR);
    if (!ok(job != NULL, "jobdir: job"))
        return;
    is_int(ty_plan_build(job, NULL, NULL, &plan, NULL), 0, "jobdir: plan");
    ok(plan->replicas[0].command == NULL, "jobdir: no command");
    is_strv(plan->replicas[0].args,
            (const char *[]){"--job-dir=gs://b/out", NULL},
            "jobdir: args is just --job-dir");
    ty_plan_free(plan);
    is_int(ty_plan_build(job, NULL, targs, &plan, NULL), 0, "jobdir: plan with trial args only");
    is_strv(plan->replicas[0].args,
            (const char *[]){"--job-dir=gs://b/out", "--opt=sgd", NULL},
            "jobdir: --job-dir then trial args");
    ty_plan_free(plan);
    ty_job_free(job);
}

int main(void)
{
    test_plan_names();
    test_plan_args();
    return done_testing();
}
