/* SPDX-License-Identifier: Apache-2.0
 * taskproto.c: framing of the supervisor <-> trainyard-task protocol (taskproto.h). */
#include "taskproto.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "json.h"
#include "macro.h"
#include "strv.h"

bool ty_task_msg_known(int type)
{
    switch (type) {
    case TY_TASK_HELLO:
    case TY_TASK_ASSIGN:
    case TY_TASK_PLACED:
    case TY_TASK_START:
    case TY_TASK_STARTED:
    case TY_TASK_OUT:
    case TY_TASK_ERR:
    case TY_TASK_METRICS:
    case TY_TASK_NOTICE:
    case TY_TASK_EXIT:
    case TY_TASK_SIGNAL:
    case TY_TASK_QUIT:
        return true;
    default:
        return false;
    }
}

int ty_taskproto_frame(struct ty_buf *out, int type, const void *payload, size_t len)
{
    unsigned char hdr[5];
    size_t flen = len + 1;

    if (len >= TY_TASKPROTO_MAX_FRAME)
        return -EMSGSIZE;
    hdr[0] = (unsigned char)(flen >> 24);
    hdr[1] = (unsigned char)(flen >> 16);
    hdr[2] = (unsigned char)(flen >> 8);
    hdr[3] = (unsigned char)flen;
    hdr[4] = (unsigned char)type;
    ty_buf_append(out, hdr, sizeof(hdr));
    if (len)
        ty_buf_append(out, payload, len);
    return 0;
}

int ty_taskproto_frame_json(struct ty_buf *out, int type, const json_t *obj)
{
    _cleanup_free_ char *text = ty_json_compact(obj);
    return ty_taskproto_frame(out, type, text, strlen(text));
}

int ty_taskproto_feed(struct ty_taskproto_reader *rd,
                      const char *p,
                      size_t n,
                      ty_taskproto_fn fn,
                      void *ctx,
                      struct ty_error *err)
{
    size_t off = 0;
    int r = 0;

    if (rd->broken)
        return ty_error_set(err, EPROTO, "the stream was already broken by a bad frame");
    ty_buf_append(&rd->in, p, n);
    while (rd->in.len - off >= 4) {
        const unsigned char *h = (const unsigned char *)rd->in.data + off;
        size_t flen = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
        int type;

        if (flen == 0 || flen > TY_TASKPROTO_MAX_FRAME) {
            rd->broken = true;
            r = ty_error_set(err, EPROTO, "bad frame length %zu", flen);
            break;
        }
        if (rd->in.len - off - 4 < flen)
            break;
        type = h[4];
        if (!ty_task_msg_known(type)) {
            rd->broken = true;
            r = ty_error_set(err, EPROTO, "unknown message type 0x%02x", (unsigned)type);
            break;
        }
        off += 4 + flen;
        r = fn(ctx, type, (const char *)h + 5, flen - 1);
        if (r < 0)
            break;
    }
    ty_buf_consume(&rd->in, off);
    return r;
}

size_t ty_taskproto_pending(const struct ty_taskproto_reader *rd)
{
    return rd->in.len;
}

void ty_taskproto_reader_release(struct ty_taskproto_reader *rd)
{
    ty_buf_release(&rd->in);
}

int ty_taskproto_json(const char *payload, size_t len, json_t **ret, struct ty_error *err)
{
    json_t *j = NULL;
    struct ty_error e = {0};

    if (ty_json_parse(payload, len, &j, &e) < 0)
        return ty_error_set(err, EPROTO, "bad message: %s", ty_error_msg(&e));
    if (!json_is_object(j)) {
        json_decref(j);
        return ty_error_set(err, EPROTO, "bad message: not a JSON object");
    }
    *ret = j;
    return 0;
}

static const struct {
    enum ty_exit_kind kind;
    const char *name;
} exit_kinds[] = {
    {TY_EXIT_CODE, "code"},
    {TY_EXIT_SIGNAL, "signal"},
    {TY_EXIT_OOM, "oom"},
    {TY_EXIT_START_FAILED, "start_failed"},
    {TY_EXIT_LOST, "lost"},
    {TY_EXIT_NODE_LOST, "node_lost"},
};

const char *ty_taskproto_exit_kind_name(enum ty_exit_kind kind)
{
    for (size_t i = 0; i < TY_ARRAY_SIZE(exit_kinds); i++)
        if (exit_kinds[i].kind == kind)
            return exit_kinds[i].name;
    return "lost";
}

int ty_taskproto_exit_kind_parse(const char *name, enum ty_exit_kind *ret)
{
    for (size_t i = 0; name && i < TY_ARRAY_SIZE(exit_kinds); i++)
        if (strcmp(exit_kinds[i].name, name) == 0) {
            *ret = exit_kinds[i].kind;
            return 0;
        }
    return -EPROTO;
}

json_t *ty_taskproto_exit_json(const struct ty_exit_status *st)
{
    return json_pack("{s:s, s:i, s:s}",
                     "kind",
                     ty_taskproto_exit_kind_name(st->kind),
                     "code",
                     st->code,
                     "detail",
                     st->detail);
}

int ty_taskproto_exit_parse(const json_t *m, struct ty_exit_status *st, struct ty_error *err)
{
    const char *kind = ty_json_str(m, "kind"), *detail = ty_json_str(m, "detail");
    json_t *code = json_object_get(m, "code");

    *st = (struct ty_exit_status){.kind = TY_EXIT_LOST};
    if (ty_taskproto_exit_kind_parse(kind, &st->kind) < 0) {
        st->kind = TY_EXIT_LOST;
        (void)snprintf(st->detail,
                       sizeof(st->detail),
                       "its launcher reported an end of unknown kind '%.64s'",
                       kind ? kind : "(none)");
        return ty_error_set(err, EPROTO, "EXIT.kind: '%s' is no exit kind", kind ? kind : "");
    }
    if (code && !json_is_integer(code)) {
        st->kind = TY_EXIT_LOST;
        (void)snprintf(st->detail, sizeof(st->detail), "its launcher reported a bad exit code");
        return ty_error_set(err, EPROTO, "EXIT.code: an integer is required");
    }
    st->code = code ? (int)json_integer_value(code) : 0;
    (void)snprintf(st->detail, sizeof(st->detail), "%s", detail ? detail : "");
    return 0;
}

bool ty_taskproto_exit_is_kill(const struct ty_exit_status *st)
{
    if (st->kind == TY_EXIT_SIGNAL)
        return st->code == SIGTERM || st->code == SIGKILL;
    return st->kind == TY_EXIT_CODE && (st->code == 128 + SIGTERM || st->code == 128 + SIGKILL);
}

void ty_taskproto_exit_judge(struct ty_exit_status *st, bool step_ended, const char *node)
{
    int sig;

    if (!step_ended || !ty_taskproto_exit_is_kill(st))
        return;
    sig = st->kind == TY_EXIT_SIGNAL ? st->code : st->code - 128;
    st->kind = TY_EXIT_NODE_LOST;
    (void)snprintf(st->detail,
                   sizeof(st->detail),
                   "Slurm ended its step on node %s (the replica was killed by %s)",
                   node && *node ? node : "?",
                   sig == SIGKILL ? "SIGKILL" : "SIGTERM");
}

int ty_taskproto_env_parse(const json_t *arr, const char *where, char ***ret, struct ty_error *err)
{
    _cleanup_strv_free_ char **env = xcalloc(1, sizeof(char *));
    json_t *v;
    size_t i;

    if (!json_is_array(arr))
        return ty_error_set(err, EPROTO, "%s: an array of NAME=VALUE strings is required", where);
    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);
        if (!s || !strchr(s, '=') || s[0] == '=')
            return ty_error_set(err, EPROTO, "%s: NAME=VALUE strings are required", where);
        ty_strv_push(&env, s);
    }
    *ret = TAKE_PTR(env);
    return 0;
}

/* Whether @entry (NAME=VALUE) is one of the variables Slurm sets in a task that
 * ty_taskproto_replica_env keeps; @gpus: Slurm gave the task GPUs. */
static bool slurm_set(const char *entry, bool gpus)
{
    static const char *const gpu_vars[] = {
        "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"};
    size_t n = strcspn(entry, "=");

    if (strncmp(entry, "SLURM_", 6) == 0 || strncmp(entry, "SLURMD_", 7) == 0)
        return true;
    for (size_t i = 0; gpus && i < TY_ARRAY_SIZE(gpu_vars); i++)
        if (strlen(gpu_vars[i]) == n && strncmp(entry, gpu_vars[i], n) == 0)
            return true;
    return false;
}

char **ty_taskproto_replica_env(char *const base[], char *const task[])
{
    char **env = ty_strv_copy(base);
    const char *step = ty_strv_getenv(task, "SLURM_STEP_GPUS");
    const char *job = ty_strv_getenv(task, "SLURM_JOB_GPUS");
    bool gpus = (step && *step) || (job && *job);

    if (!env)
        env = xcalloc(1, sizeof(char *));
    for (size_t i = 0; task && task[i]; i++) {
        size_t n = strcspn(task[i], "=");
        _cleanup_free_ char *name = NULL;
        if (!task[i][n] || !slurm_set(task[i], gpus))
            continue;
        name = xstrndup(task[i], n);
        if (!ty_strv_getenv(env, name))
            ty_strv_setenv(&env, name, task[i] + n + 1);
    }
    return env;
}
