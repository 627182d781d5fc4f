/* SPDX-License-Identifier: Apache-2.0
 * test-job-tasks.c: a job's log task names (ty_job_has_task, ty_job_task_list): what
 * `stream-logs --task-name` and the logs endpoint accept, and the list their errors show. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "spec.h"
#include "tap.h"

static struct ty_job *job_of(const char *json_text)
{
    json_error_t je;
    _cleanup_json_ json_t *doc = json_loads(json_text, 0, &je);
    struct ty_job *job = NULL;
    struct ty_error e = {0};

    if (!doc || ty_job_from_json(doc, &job, &e) < 0)
        BAIL_OUT("job %s: %s", json_text, doc ? ty_error_msg(&e) : je.text);
    return job;
}

int main(void)
{
    _cleanup_(ty_job_freep) struct ty_job *one =
        job_of("{\"jobId\":\"a\",\"trainingInput\":{\"masterConfig\":{\"imageUri\":\"i\"}}}");
    _cleanup_(ty_job_freep) struct ty_job *big =
        job_of("{\"jobId\":\"b\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-"
               "standard-4\","
               "\"masterConfig\":{\"imageUri\":\"i\"},\"workerType\":\"n1-standard-4\","
               "\"workerCount\":\"5\","
               "\"parameterServerType\":\"n1-standard-4\",\"parameterServerCount\":\"2\","
               "\"evaluatorType\":\"n1-standard-4\",\"evaluatorCount\":\"1\"}}");
    _cleanup_(ty_job_freep) struct ty_job *tier =
        job_of("{\"jobId\":\"c\",\"trainingInput\":{\"scaleTier\":\"STANDARD_1\","
               "\"masterConfig\":{\"imageUri\":\"i\"}}}");
    _cleanup_free_ char *one_list = ty_job_task_list(one);
    _cleanup_free_ char *big_list = ty_job_task_list(big);

    ok(ty_job_has_task(one, "service"), "service is every job's task");
    ok(ty_job_has_task(one, "master-replica-0"), "master-replica-0");
    ok(!ty_job_has_task(one, "master"), "a role name alone is no task");
    ok(!ty_job_has_task(one, "master-replica-1"), "only one master");
    ok(!ty_job_has_task(one, "worker-replica-0"), "no workers in a master-only job");
    ok(!ty_job_has_task(one, ""), "empty");
    ok(ty_job_has_task(big, "worker-replica-4"), "the last worker");
    ok(!ty_job_has_task(big, "worker-replica-5"), "one past the last worker");
    ok(!ty_job_has_task(big, "worker-replica-01"), "no leading zero");
    ok(!ty_job_has_task(big, "worker-replica-"), "no index");
    ok(!ty_job_has_task(big, "worker-replica--1"), "no negative index");
    ok(!ty_job_has_task(big, "worker-replica-1x"), "trailing characters");
    ok(ty_job_has_task(big, "ps-replica-1") && !ty_job_has_task(big, "ps-replica-2"),
       "parameter servers: ps-replica-N");
    ok(ty_job_has_task(big, "evaluator-replica-0"), "evaluator");
    ok(ty_job_has_task(tier, "worker-replica-0"), "a scale tier's workers (expanded)");
    is_str(one_list, "service, master-replica-0", "a master-only job's list");
    is_str(big_list,
           "service, master-replica-0, worker-replica-0, ..., worker-replica-4, ps-replica-0, "
           "ps-replica-1, evaluator-replica-0",
           "a role with more than three replicas: its first and last");
    return done_testing();
}
