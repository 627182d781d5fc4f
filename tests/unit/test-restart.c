/* SPDX-License-Identifier: Apache-2.0
 * test-restart.c: the restart and retry rules (restart.h): how every replica end is
 * classified, what is done about it, and the service's wording. */
#include <signal.h>
#include <string.h>

#include "restart.h"
#include "tap.h"

static struct ty_exit_status st_of(enum ty_exit_kind kind, int code)
{
    struct ty_exit_status st = {.kind = kind, .code = code};
    return st;
}

static enum ty_end_class classify(enum ty_exit_kind kind, int code)
{
    struct ty_exit_status st = st_of(kind, code);
    ty_exit_normalize(&st);
    return ty_end_classify(&st);
}

static void test_classify(void)
{
    static const struct {
        enum ty_exit_kind kind;
        int code;
        enum ty_end_class want;
    } cases[] = {
        {TY_EXIT_CODE, 0, TY_END_SUCCESS},
        {TY_EXIT_CODE, 1, TY_END_PERMANENT},
        {TY_EXIT_CODE, 3, TY_END_PERMANENT},
        {TY_EXIT_CODE, 6, TY_END_CRASH},
        {TY_EXIT_CODE, 11, TY_END_CRASH},
        {TY_EXIT_CODE, 127, TY_END_PERMANENT},
        {TY_EXIT_CODE, 128, TY_END_PERMANENT},
        {TY_EXIT_CODE, 134, TY_END_CRASH},
        {TY_EXIT_CODE, 139, TY_END_CRASH},
        {TY_EXIT_CODE, 137, TY_END_INFRA}, /* SIGKILL from outside, as a container reports it */
        {TY_EXIT_CODE, 143, TY_END_INFRA}, /* SIGTERM */
        {TY_EXIT_CODE, 135, TY_END_CRASH}, /* SIGBUS */
        {TY_EXIT_CODE, 136, TY_END_CRASH}, /* SIGFPE */
        {TY_EXIT_CODE, 132, TY_END_CRASH}, /* SIGILL */
        {TY_EXIT_CODE, 255, TY_END_PERMANENT},
        {TY_EXIT_SIGNAL, SIGKILL, TY_END_INFRA},
        {TY_EXIT_SIGNAL, SIGTERM, TY_END_INFRA},
        {TY_EXIT_SIGNAL, SIGINT, TY_END_INFRA},
        {TY_EXIT_SIGNAL, SIGABRT, TY_END_CRASH},
        {TY_EXIT_SIGNAL, SIGSEGV, TY_END_CRASH},
        {TY_EXIT_SIGNAL, SIGBUS, TY_END_CRASH},
        {TY_EXIT_SIGNAL, SIGFPE, TY_END_CRASH},
        {TY_EXIT_SIGNAL, SIGILL, TY_END_CRASH},
        {TY_EXIT_OOM, 137, TY_END_PERMANENT},
        {TY_EXIT_START_FAILED, 0, TY_END_PERMANENT},
        {TY_EXIT_LOST, 0, TY_END_INFRA},
        {TY_EXIT_NODE_LOST, 0, TY_END_NODE_LOST},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        is_str(ty_end_class_name(classify(cases[i].kind, cases[i].code)),
               ty_end_class_name(cases[i].want),
               "kind %d code %d is %s",
               (int)cases[i].kind,
               cases[i].code,
               ty_end_class_name(cases[i].want));
}

static void test_normalize(void)
{
    struct ty_exit_status st = st_of(TY_EXIT_CODE, 137);
    ty_exit_normalize(&st);
    ok(st.kind == TY_EXIT_SIGNAL && st.code == SIGKILL, "137 becomes signal 9");
    st = st_of(TY_EXIT_CODE, 139);
    ty_exit_normalize(&st);
    ok(st.kind == TY_EXIT_CODE && st.code == 139, "139 keeps its status (the service's wording)");
    st = st_of(TY_EXIT_CODE, 134);
    ty_exit_normalize(&st);
    ok(st.kind == TY_EXIT_CODE && st.code == 134, "134 keeps its status");
    st = st_of(TY_EXIT_CODE, 255);
    ty_exit_normalize(&st);
    ok(st.kind == TY_EXIT_CODE && st.code == 255, "255 is no signal (beyond SIGRTMAX)");
    st = st_of(TY_EXIT_OOM, 137);
    ty_exit_normalize(&st);
    ok(st.kind == TY_EXIT_OOM && st.code == 137, "out of memory is left alone");
}

static void test_decide(void)
{
    struct ty_retry_policy p = {.max_restarts = 5, .max_attempts = 4};

    is_int(ty_retry_decide(&p, TY_END_SUCCESS, 0, 1), TY_RETRY_NONE, "success: nothing");
    is_int(ty_retry_decide(&p, TY_END_PERMANENT, 0, 1), TY_RETRY_FAIL, "permanent: fail");
    is_int(ty_retry_decide(&p, TY_END_INFRA, 0, 1), TY_RETRY_RESTART, "infra: restart");
    is_int(ty_retry_decide(&p, TY_END_INFRA, 4, 1), TY_RETRY_RESTART, "5th restart");
    is_int(ty_retry_decide(&p, TY_END_INFRA, 5, 1), TY_RETRY_JOB, "6th failure: retry the job");
    is_int(ty_retry_decide(&p, TY_END_INFRA, 5, 4), TY_RETRY_FAIL, "6th failure, last attempt");
    is_int(ty_retry_decide(&p, TY_END_INFRA, 0, 4), TY_RETRY_RESTART, "last attempt restarts");
    is_int(ty_retry_decide(&p, TY_END_CRASH, 0, 1), TY_RETRY_JOB, "crash: retry at once");
    is_int(ty_retry_decide(&p, TY_END_CRASH, 0, 3), TY_RETRY_JOB, "crash in attempt 3");
    is_int(ty_retry_decide(&p, TY_END_CRASH, 0, 4), TY_RETRY_FAIL, "crash in attempt 4: fail");
    is_int(ty_retry_decide(&p, TY_END_NODE_LOST, 0, 2), TY_RETRY_JOB, "node lost: retry");
    is_int(ty_retry_decide(&p, TY_END_NODE_LOST, 0, 4), TY_RETRY_FAIL, "node lost at the end");

    p.job_on_worker_restart = true;
    is_int(ty_retry_decide(&p, TY_END_INFRA, 0, 1), TY_RETRY_JOB, "restartJobOnWorkerRestart");
    is_int(ty_retry_decide(&p, TY_END_INFRA, 0, 4), TY_RETRY_FAIL, "... counts as a retry");
    is_int(ty_retry_decide(&p, TY_END_PERMANENT, 0, 1), TY_RETRY_FAIL, "... permanent fails");

    p.disabled = true;
    is_int(ty_retry_decide(&p, TY_END_INFRA, 0, 1), TY_RETRY_FAIL, "disableRetries wins");
    is_int(ty_retry_decide(&p, TY_END_CRASH, 0, 1), TY_RETRY_FAIL, "disableRetries: crash");
    is_int(ty_retry_decide(&p, TY_END_NODE_LOST, 0, 1), TY_RETRY_FAIL, "disableRetries: node");
    is_int(ty_retry_decide(&p, TY_END_SUCCESS, 0, 1), TY_RETRY_NONE, "disableRetries: success");
}

static void test_wording(void)
{
    struct ty_replica r = {.display_name = "worker 1"};
    struct ty_exit_status st = st_of(TY_EXIT_SIGNAL, SIGKILL);
    char buf[512];

    ty_describe_restart(&r, &st, 1, 5, buf, sizeof(buf));
    is_str(buf,
           "The replica worker 1 was killed by signal 9 (SIGKILL) from outside trainyard; "
           "restarting it (restart 1 of 5).",
           "restart of a replica killed from outside");
    ty_describe_exit(&r, &st, buf, sizeof(buf));
    is_str(buf, "The replica worker 1 was terminated by signal 9 (SIGKILL).", "final wording");
    st = st_of(TY_EXIT_LOST, 0);
    (void)snprintf(st.detail, sizeof(st.detail), "the container engine lost it");
    ty_describe_restart(&r, &st, 2, 5, buf, sizeof(buf));
    is_str(buf,
           "The replica worker 1 was lost: the container engine lost it; restarting it "
           "(restart 2 of 5).",
           "restart of a replica the engine lost");
    st = st_of(TY_EXIT_CODE, 139);
    ty_describe_exit(&r, &st, buf, sizeof(buf));
    is_str(buf, "The replica worker 1 exited with a non-zero status of 139.", "crash wording");
}

static void test_policy_of(void)
{
    struct ty_job job = {0};
    struct ty_retry_policy p;

    job.training_input = json_pack(
        "{s:{s:b,s:b}}", "scheduling", "restartJobOnWorkerRestart", 1, "disableRetries", 0);
    ty_retry_policy_of(&job, &p);
    ok(p.job_on_worker_restart && !p.disabled, "policy: restartJobOnWorkerRestart");
    is_int(p.max_restarts, 5, "5 restarts per replica per attempt");
    is_int(p.max_attempts, 4, "4 attempts");
    json_decref(job.training_input);
    job.training_input = json_pack("{s:{s:b}}", "scheduling", "disableRetries", 1);
    ty_retry_policy_of(&job, &p);
    ok(!p.job_on_worker_restart && p.disabled, "policy: disableRetries");
    is_int(p.max_restarts, 0, "disableRetries: no restart");
    is_int(p.max_attempts, 1, "disableRetries: one attempt");
    json_decref(job.training_input);
    job.training_input = json_object();
    ty_retry_policy_of(&job, &p);
    ok(!p.job_on_worker_restart && !p.disabled, "policy: the defaults");
    json_decref(job.training_input);
}

int main(void)
{
    test_classify();
    test_normalize();
    test_decide();
    test_wording();
    test_policy_of();
    return done_testing();
}
