/* SPDX-License-Identifier: Apache-2.0
 * test-taskproto.c: framing of the supervisor <-> trainyard-task protocol (taskproto.c):
 * round trips, frames split at every byte, binary payloads, and the refusals (zero or
 * oversized lengths, unknown types, a broken stream); a replica's end (EXIT) with every exit
 * kind, and how a launcher judges a kill (ty_taskproto_exit_judge); a program replica's
 * environment from the supervisor's base and what Slurm set (ty_taskproto_replica_env). */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"
#include "taskproto.h"

struct got {
    int types[16];
    struct ty_buf payload[16];
    size_t n;
};

static int collect(void *ctx, int type, const char *payload, size_t len)
{
    struct got *g = ctx;
    if (g->n == 16)
        return -ENOSPC;
    g->types[g->n] = type;
    ty_buf_append(&g->payload[g->n], payload, len);
    g->n++;
    return 0;
}

static void got_release(struct got *g)
{
    for (size_t i = 0; i < 16; i++)
        ty_buf_release(&g->payload[i]);
    memset(g, 0, sizeof(*g));
}

static void test_round_trip(void)
{
    struct ty_buf wire = TY_BUF_INIT;
    struct ty_taskproto_reader rd = {0};
    struct ty_error err = {0};
    struct got g = {0};
    _cleanup_json_ json_t *hello = json_pack("{s:s, s:i}", "node", "n1", "port", 40001);
    static const char bin[] = {'a', 0, '\xff', '\n', 'b'};
    json_t *j = NULL;

    ok(ty_taskproto_frame_json(&wire, TY_TASK_HELLO, hello) == 0, "HELLO framed");
    ok(ty_taskproto_frame(&wire, TY_TASK_OUT, bin, sizeof(bin)) == 0, "binary OUT framed");
    ok(ty_taskproto_frame(&wire, TY_TASK_QUIT, NULL, 0) == 0, "empty payload framed");
    is_int(wire.len,
           4 + 1 + strlen("{\"node\":\"n1\",\"port\":40001}") + 5 + sizeof(bin) + 5,
           "sizes: 4-byte length, type, payload");

    /* Byte by byte: the reader must reassemble every frame. */
    for (size_t i = 0; i < wire.len; i++)
        if (ty_taskproto_feed(&rd, wire.data + i, 1, collect, &g, &err) < 0)
            break;
    is_int(g.n, 3, "three frames out of single bytes");
    ok(g.types[0] == TY_TASK_HELLO && g.types[1] == TY_TASK_OUT && g.types[2] == TY_TASK_QUIT,
       "types in order");
    ok(g.payload[1].len == sizeof(bin) && memcmp(g.payload[1].data, bin, sizeof(bin)) == 0,
       "binary payload intact (NUL, 0xff, newline)");
    is_int(g.payload[2].len, 0, "empty payload");
    is_int(ty_taskproto_pending(&rd), 0, "nothing left over");
    ok(ty_taskproto_json(g.payload[0].data, g.payload[0].len, &j, &err) == 0 &&
           json_integer_value(json_object_get(j, "port")) == 40001,
       "JSON payload parses back");
    json_decref(j);
    got_release(&g);

    /* All at once, plus half of another frame. */
    ty_buf_append(&wire, wire.data, 7);
    ok(ty_taskproto_feed(&rd, wire.data, wire.len, collect, &g, &err) == 0, "fed at once");
    is_int(g.n, 3, "three frames");
    is_int(ty_taskproto_pending(&rd), 7, "the partial frame is kept");
    got_release(&g);
    ty_taskproto_reader_release(&rd);
    ty_buf_release(&wire);
}

static void test_refusals(void)
{
    struct ty_taskproto_reader rd = {0};
    struct ty_error err = {0};
    struct got g = {0};
    struct ty_buf big = TY_BUF_INIT;
    json_t *j = NULL;

    is_int(ty_taskproto_feed(&rd, "\0\0\0\0", 4, collect, &g, &err), -EPROTO, "length 0");
    ok(strstr(err.msg, "bad frame length 0") != NULL, "says why: %s", err.msg);
    is_int(ty_taskproto_feed(&rd, "\0\0\0\1Q", 5, collect, &g, &err),
           -EPROTO,
           "a broken stream refuses more");
    ty_taskproto_reader_release(&rd);
    memset(&rd, 0, sizeof(rd));

    is_int(ty_taskproto_feed(&rd, "\x00\x40\x00\x01", 4, collect, &g, &err),
           -EPROTO,
           "length over 4 MiB");
    ty_taskproto_reader_release(&rd);
    memset(&rd, 0, sizeof(rd));

    is_int(ty_taskproto_feed(&rd, "\0\0\0\1Z", 5, collect, &g, &err), -EPROTO, "unknown type");
    ok(strstr(err.msg, "unknown message type 0x5a") != NULL, "names it: %s", err.msg);
    is_int(g.n, 0, "no frame delivered");
    ty_taskproto_reader_release(&rd);

    ty_buf_append(&big, "", 0);
    {
        char *p = xcalloc(TY_TASKPROTO_MAX_FRAME, 1);
        is_int(ty_taskproto_frame(&big, TY_TASK_OUT, p, TY_TASKPROTO_MAX_FRAME),
               -EMSGSIZE,
               "an oversized frame is not written");
        is_int(ty_taskproto_frame(&big, TY_TASK_OUT, p, TY_TASKPROTO_MAX_FRAME - 1),
               0,
               "the largest frame is");
        free(p);
    }
    ty_buf_release(&big);

    is_int(ty_taskproto_json("[1]", 3, &j, &err), -EPROTO, "a JSON array is no message");
    is_int(ty_taskproto_json("{", 1, &j, &err), -EPROTO, "nor is broken JSON");
    got_release(&g);
}

/* Every kind of runtime.h travels as itself, through a frame and back. */
static void test_exit_kinds(void)
{
    static const enum ty_exit_kind kinds[] = {TY_EXIT_CODE,
                                              TY_EXIT_SIGNAL,
                                              TY_EXIT_OOM,
                                              TY_EXIT_START_FAILED,
                                              TY_EXIT_LOST,
                                              TY_EXIT_NODE_LOST};
    static const char *const names[] = {
        "code", "signal", "oom", "start_failed", "lost", "node_lost"};

    for (size_t i = 0; i < TY_ARRAY_SIZE(kinds); i++) {
        struct ty_exit_status st = {.kind = kinds[i], .code = (int)i + 3}, back;
        struct ty_buf wire = TY_BUF_INIT;
        struct ty_taskproto_reader rd = {0};
        struct ty_error err = {0};
        struct got g = {0};
        json_t *j, *m = NULL;
        enum ty_exit_kind k;

        (void)snprintf(st.detail, sizeof(st.detail), "detail %zu", i);
        j = ty_taskproto_exit_json(&st);
        is_str(ty_taskproto_exit_kind_name(kinds[i]), names[i], "kind %zu is '%s'", i, names[i]);
        ok(ty_taskproto_exit_kind_parse(names[i], &k) == 0 && k == kinds[i],
           "'%s' parses back",
           names[i]);
        ok(ty_taskproto_frame_json(&wire, TY_TASK_EXIT, j) == 0 &&
               ty_taskproto_feed(&rd, wire.data, wire.len, collect, &g, &err) == 0 && g.n == 1 &&
               ty_taskproto_json(g.payload[0].data, g.payload[0].len, &m, &err) == 0,
           "EXIT '%s' framed and read",
           names[i]);
        ok(m && ty_taskproto_exit_parse(m, &back, &err) == 0 && back.kind == kinds[i] &&
               back.code == st.code && strcmp(back.detail, st.detail) == 0,
           "EXIT '%s' comes back whole (kind, code, detail)",
           names[i]);
        json_decref(j);
        json_decref(m);
        got_release(&g);
        ty_taskproto_reader_release(&rd);
        ty_buf_release(&wire);
    }
}

static void test_exit_refusals(void)
{
    struct ty_exit_status st;
    struct ty_error err = {0};
    enum ty_exit_kind k;
    json_t *m;

    is_int(ty_taskproto_exit_kind_parse(NULL, &k), -EPROTO, "no kind");
    is_int(ty_taskproto_exit_kind_parse("node-lost", &k), -EPROTO, "a misspelt kind");
    m = json_pack("{s:s, s:i}", "kind", "exploded", "code", 1);
    is_int(ty_taskproto_exit_parse(m, &st, &err), -EPROTO, "an unknown kind is refused");
    ok(st.kind == TY_EXIT_LOST && strstr(st.detail, "unknown kind 'exploded'"),
       "and read as lost, saying so: %s",
       st.detail);
    json_decref(m);
    m = json_pack("{s:s, s:s}", "kind", "code", "code", "3");
    is_int(ty_taskproto_exit_parse(m, &st, &err), -EPROTO, "a code that is no integer");
    json_decref(m);
    m = json_pack("{s:s}", "kind", "signal");
    ok(ty_taskproto_exit_parse(m, &st, &err) == 0 && st.code == 0 && !*st.detail,
       "code and detail may be left out");
    json_decref(m);
}

/* A kill is Slurm's only when the launcher itself was signalled; other ends stay. */
static void test_exit_judge(void)
{
    struct ty_exit_status st = {.kind = TY_EXIT_SIGNAL, .code = SIGKILL};

    ok(ty_taskproto_exit_is_kill(&st), "SIGKILL is a kill");
    st.code = SIGSEGV;
    ok(!ty_taskproto_exit_is_kill(&st), "SIGSEGV is not (a crash)");
    st = (struct ty_exit_status){.kind = TY_EXIT_CODE, .code = 143};
    ok(ty_taskproto_exit_is_kill(&st), "status 143 (a shell's SIGTERM) is");
    st.code = 139;
    ok(!ty_taskproto_exit_is_kill(&st), "status 139 is not");

    st = (struct ty_exit_status){.kind = TY_EXIT_SIGNAL, .code = SIGKILL};
    ty_taskproto_exit_judge(&st, false, "n2");
    ok(st.kind == TY_EXIT_SIGNAL && st.code == SIGKILL,
       "SIGKILL, launcher not signalled: a signal from outside (restart in place)");
    ty_taskproto_exit_judge(&st, true, "n2");
    is_int(st.kind, TY_EXIT_NODE_LOST, "SIGKILL after Slurm signalled the launcher: node lost");
    is_str(st.detail,
           "Slurm ended its step on node n2 (the replica was killed by SIGKILL)",
           "naming the node and the signal");
    st = (struct ty_exit_status){.kind = TY_EXIT_CODE, .code = 143};
    ty_taskproto_exit_judge(&st, true, "n3");
    ok(st.kind == TY_EXIT_NODE_LOST && strstr(st.detail, "by SIGTERM"),
       "status 143 too: %s",
       st.detail);
    st = (struct ty_exit_status){.kind = TY_EXIT_CODE, .code = 3};
    ty_taskproto_exit_judge(&st, true, "n2");
    ok(st.kind == TY_EXIT_CODE && st.code == 3, "the program's own status stays");
    st = (struct ty_exit_status){.kind = TY_EXIT_SIGNAL, .code = SIGSEGV};
    ty_taskproto_exit_judge(&st, true, "n2");
    ok(st.kind == TY_EXIT_SIGNAL && st.code == SIGSEGV, "so does a crash");
}

/* ASSIGN.baseEnv / START.env: NAME=VALUE strings only. */
static void test_env_parse(void)
{
    struct ty_error err = {0};
    char **env = NULL;
    json_t *a = json_pack("[s, s]", "A=1", "B=");

    ok(ty_taskproto_env_parse(a, "ASSIGN.baseEnv", &env, &err) == 0 && ty_strv_len(env) == 2 &&
           strcmp(env[0], "A=1") == 0 && strcmp(env[1], "B=") == 0,
       "NAME=VALUE strings, an empty value too");
    env = ty_strv_free(env);
    json_decref(a);
    a = json_array();
    ok(ty_taskproto_env_parse(a, "START.env", &env, &err) == 0 && env && !env[0], "none");
    env = ty_strv_free(env);
    json_decref(a);
    a = json_pack("[s, i]", "A=1", 2);
    is_int(ty_taskproto_env_parse(a, "START.env", &env, &err), -EPROTO, "a number is refused");
    is_str(ty_error_msg(&err), "START.env: NAME=VALUE strings are required", "naming the field");
    json_decref(a);
    a = json_pack("[s]", "=x");
    is_int(ty_taskproto_env_parse(a, "START.env", &env, &err), -EPROTO, "so is an empty name");
    json_decref(a);
    a = json_pack("[s]", "NOVALUE");
    is_int(ty_taskproto_env_parse(a, "START.env", &env, &err), -EPROTO, "and a string without =");
    json_decref(a);
    a = json_string("A=1");
    is_int(ty_taskproto_env_parse(a, "ASSIGN.baseEnv", &env, &err), -EPROTO, "and no array");
    is_str(ty_error_msg(&err),
           "ASSIGN.baseEnv: an array of NAME=VALUE strings is required",
           "saying what is required");
    json_decref(a);
    ok(env == NULL, "nothing is returned on a refusal");
}

/* The base and what Slurm set; nothing else of the launcher's (the daemon's) environment. */
static void test_replica_env(void)
{
    char *base[] = {"PATH=/opt/jobs:/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", NULL};
    char *task[] = {"PATH=/daemon/bin:/usr/bin",
                    "DAEMON_SECRET=x",
                    "SLURM_PROCID=2",
                    "SLURMD_NODENAME=n3",
                    "SLURM_CONF=/etc/slurm/slurm.conf",
                    "HOME=/root",
                    "CUDA_VISIBLE_DEVICES=5",
                    "SLURMISH=no",
                    "BROKEN",
                    NULL};
    char *gpu_task[] = {
        "SLURM_STEP_GPUS=1,3", "CUDA_VISIBLE_DEVICES=0,1", "ZE_AFFINITY_MASK=0,1", "OTHER=1", NULL};
    char **env = ty_taskproto_replica_env(base, task);

    is_str(ty_strv_getenv(env, "PATH"), "/opt/jobs:/usr/bin", "PATH is the base's");
    is_str(ty_strv_getenv(env, "HOME"), "/home/u", "so is HOME (the base wins)");
    is_str(ty_strv_getenv(env, "SLURM_PROCID"), "2", "SLURM_* is kept");
    is_str(ty_strv_getenv(env, "SLURMD_NODENAME"), "n3", "so is SLURMD_*");
    ok(ty_strv_getenv(env, "SLURM_CONF") != NULL, "and the Slurm client's configuration");
    ok(!ty_strv_getenv(env, "DAEMON_SECRET") && !ty_strv_getenv(env, "SLURMISH"),
       "nothing else of the launcher's");
    ok(!ty_strv_getenv(env, "CUDA_VISIBLE_DEVICES"),
       "no CUDA_VISIBLE_DEVICES when Slurm gave no GPUs (it is not Slurm's then)");
    is_int((int)ty_strv_len(env), 6, "3 of the base, 3 of Slurm's");
    env = ty_strv_free(env);
    env = ty_taskproto_replica_env(base, gpu_task);
    is_str(ty_strv_getenv(env, "CUDA_VISIBLE_DEVICES"),
           "0,1",
           "Slurm's GPUs: its CUDA_VISIBLE_DEVICES");
    is_str(ty_strv_getenv(env, "ZE_AFFINITY_MASK"), "0,1", "and the others' counterparts");
    ok(!ty_strv_getenv(env, "OTHER"), "still nothing else");
    env = ty_strv_free(env);
    env = ty_taskproto_replica_env(NULL, NULL);
    ok(env && !env[0], "no base, no task: empty");
    ty_strv_free(env);
}

int main(void)
{
    test_env_parse();
    test_replica_env();
    test_round_trip();
    test_refusals();
    test_exit_kinds();
    test_exit_refusals();
    test_exit_judge();
    return done_testing();
}
