/* SPDX-License-Identifier: Apache-2.0
 * clusterenv.c: rendering of CLUSTER_SPEC, TF_CONFIG and the other contract variables
 * (the opt-in PyTorch and MXNet ones too). */
#include "clusterenv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "json.h"
#include "macro.h"
#include "strv.h"

/* Everything replicas share, serialised once: a replica's CLUSTER_SPEC and TF_CONFIG are
 * these spliced around its own task part. */
struct ty_clusterenv {
    const struct ty_cluster_plan *plan;
    char *cluster_spec_cluster; /* serialised "cluster" object of CLUSTER_SPEC */
    size_t cluster_spec_cluster_len;
    char *tf_config_cluster; /* serialised "cluster" object of TF_CONFIG */
    size_t tf_config_cluster_len;
    char *job; /* serialised TrainingInput */
    size_t job_len;
    char *trial; /* the trial id as a JSON string, or NULL outside trials */
    const struct ty_replica *master;
    int world_size; /* master + workers */
};

static bool chief_mode(const struct ty_job *job)
{
    return job->use_chief || job->roles[TY_ROLE_EVALUATOR].count > 0;
}

const char *ty_clusterenv_tf_role(const struct ty_job *job, enum ty_role role)
{
    if (role == TY_ROLE_MASTER && chief_mode(job))
        return "chief";
    return ty_role_name(role);
}

static void put_address(struct ty_buf *b, const char *host, int port)
{
    _cleanup_free_ char *addr = NULL;
    json_t *s;
    char *enc;

    if (strchr(host, ':'))
        addr = xasprintf("[%s]:%d", host, port);
    else
        addr = xasprintf("%s:%d", host, port);
    s = json_string(addr);
    enc = ty_json_compact(s);
    ty_buf_puts(b, enc);
    free(enc);
    json_decref(s);
}

/* {"master":["h:p"],"worker":[...],...} for the roles the job has; TF_CONFIG leaves out
 * evaluators and may call the master "chief". */
static char *cluster_object(const struct ty_cluster_plan *plan, bool tf_config)
{
    struct ty_buf b = TY_BUF_INIT;
    bool first_role = true;

    ty_buf_putc(&b, '{');
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        bool first = true;
        if (tf_config && role == TY_ROLE_EVALUATOR)
            continue;
        if (plan->job->roles[role].count == 0)
            continue;
        ty_buf_printf(&b,
                      "%s\"%s\":[",
                      first_role ? "" : ",",
                      tf_config ? ty_clusterenv_tf_role(plan->job, (enum ty_role)role)
                                : ty_role_name((enum ty_role)role));
        first_role = false;
        for (size_t i = 0; i < plan->n_replicas; i++) {
            const struct ty_replica *r = &plan->replicas[i];
            if ((int)r->role != role)
                continue;
            if (!first)
                ty_buf_putc(&b, ',');
            first = false;
            put_address(&b, r->host, r->port);
        }
        ty_buf_putc(&b, ']');
    }
    ty_buf_putc(&b, '}');
    return ty_buf_take(&b);
}

/* One contiguous piece of a rendered variable. */
struct piece {
    const char *s;
    size_t n;
};

#define PIECE(lit) ((struct piece){(lit), sizeof(lit) - 1})

/* The pieces of replica @r's CLUSTER_SPEC or TF_CONFIG, in order: the shared cluster object
 * and job are spliced in as they are (serialised once, in ty_clusterenv_new); only the task
 * part is the replica's. @task holds that part's text. Returns the number of pieces. */
static size_t pieces_of(const struct ty_clusterenv *ce,
                        const struct ty_replica *r,
                        bool tf_config,
                        char task[static 96],
                        struct piece p[static 8])
{
    const char *type =
        tf_config ? ty_clusterenv_tf_role(ce->plan->job, r->role) : ty_role_name(r->role);
    const char *cluster = tf_config ? ce->tf_config_cluster : ce->cluster_spec_cluster;
    int tn = snprintf(task, 96, "{\"type\":\"%s\",\"index\":%d", type, r->index);
    size_t n = 0;

    p[n++] = PIECE("{\"cluster\":");
    p[n++] = (struct piece){cluster,
                            tf_config ? ce->tf_config_cluster_len : ce->cluster_spec_cluster_len};
    p[n++] = PIECE(",\"environment\":\"cloud\",\"task\":");
    p[n++] = (struct piece){task, tn > 0 ? (size_t)tn : 0};
    if (ce->trial) {
        p[n++] = PIECE(",\"trial\":");
        p[n++] = (struct piece){ce->trial, strlen(ce->trial)};
    }
    p[n++] = PIECE("},\"job\":");
    p[n++] = (struct piece){ce->job, ce->job_len};
    return n;
}

/* Replica @r's CLUSTER_SPEC or TF_CONFIG value preceded by @prefix ("" or "NAME="), in one
 * allocation of the exact size (the cluster object of a large job is tens of KB: copied, not
 * formatted). Caller frees; *len is the string's length. */
static char *render(const struct ty_clusterenv *ce,
                    const struct ty_replica *r,
                    bool tf_config,
                    const char *prefix,
                    size_t *len)
{
    char task[96];
    struct piece p[8];
    size_t n = pieces_of(ce, r, tf_config, task, p);
    size_t total = strlen(prefix) + 1; /* the closing brace */
    char *out, *w;

    for (size_t i = 0; i < n; i++)
        total += p[i].n;
    out = xmalloc(total + 1);
    w = mempcpy(out, prefix, strlen(prefix));
    for (size_t i = 0; i < n; i++)
        w = mempcpy(w, p[i].s, p[i].n);
    *w++ = '}';
    *w = '\0';
    *len = total;
    return out;
}

char *ty_clusterenv_cluster_spec(const struct ty_clusterenv *ce, const struct ty_replica *r)
{
    size_t len;
    return render(ce, r, false, "", &len);
}

char *ty_clusterenv_tf_config(const struct ty_clusterenv *ce, const struct ty_replica *r)
{
    size_t len;
    return render(ce, r, true, "", &len);
}

/* The member of @ti (or of one of its object members, one level down: masterConfig.
 * containerArgs, hyperparameters.params) whose compact JSON is longest: its path into @path,
 * its length returned (0 for an empty @ti). */
static size_t largest_part(const json_t *ti, char *path, size_t pathlen)
{
    const char *k, *k2;
    json_t *v, *v2;
    size_t best = 0;

    (void)snprintf(path, pathlen, "trainingInput");
    json_object_foreach((json_t *)ti, k, v)
    {
        if (!json_is_object(v)) {
            size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
            if (n > best)
                best = n, (void)snprintf(path, pathlen, "trainingInput.%s", k);
            continue;
        }
        json_object_foreach(v, k2, v2)
        {
            size_t n = json_dumpb(v2, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
            if (n > best)
                best = n, (void)snprintf(path, pathlen, "trainingInput.%s.%s", k, k2);
        }
    }
    return best;
}

/* -E2BIG for @var, @len bytes with "NAME=" and its NUL ("at least" when @at_least), in the
 * cluster of @n replicas of the job of TrainingInput @ti. When the job itself is a quarter of
 * the limit or more, the message also names its largest part, the field to shorten (a 140 KB
 * args list of one replica was told to use fewer replicas). */
static int too_big(const json_t *ti,
                   size_t n,
                   const char *var,
                   unsigned long long len,
                   bool at_least,
                   struct ty_error *err)
{
    size_t ti_len = json_dumpb(ti, NULL, 0, JSON_COMPACT), part_len;
    _cleanup_free_ char *advice = NULL;
    char part[256];

    if (ti_len * 4 < TY_ENV_STRING_MAX) {
        advice = xstrdup("use fewer replicas");
    } else {
        part_len = largest_part(ti, part, sizeof(part));
        advice = xasprintf("it holds every replica's address and the job's trainingInput, %zu "
                           "bytes, %zu of them in %s: %smake %s smaller",
                           ti_len,
                           part_len,
                           part,
                           n > 1 ? "use fewer replicas or " : "",
                           part);
    }
    return ty_error_set(err,
                        E2BIG,
                        "the cluster of %zu replicas is too large: %s would be %s%llu bytes, "
                        "over Linux's limit of %d bytes for one environment string; %s",
                        n,
                        var,
                        at_least ? "at least " : "",
                        len,
                        TY_ENV_STRING_MAX,
                        advice);
}

/* Set the "NAME=..." string @entry (taken) in *env, replacing an entry of the same name:
 * ty_strv_setenv without formatting the value again. */
static void put_entry(char ***env, char *entry)
{
    size_t nl = (size_t)(strchr(entry, '=') - entry) + 1;

    for (size_t i = 0; *env && (*env)[i]; i++) {
        if (strncmp((*env)[i], entry, nl) == 0) {
            free((*env)[i]);
            (*env)[i] = entry;
            return;
        }
    }
    ty_strv_push_take(env, entry);
}

/* Render CLUSTER_SPEC (or TF_CONFIG) of @r into *env, or, with @env NULL, only check its
 * size. Returns 0 or -E2BIG. */
static int set_json_var(const struct ty_clusterenv *ce,
                        const struct ty_replica *r,
                        bool tf_config,
                        char ***env,
                        struct ty_error *err)
{
    const char *name = tf_config ? "TF_CONFIG=" : "CLUSTER_SPEC=";
    size_t len;
    char *entry = render(ce, r, tf_config, name, &len);

    if (len + 1 > TY_ENV_STRING_MAX) {
        free(entry);
        return too_big(ce->plan->job->training_input,
                       ce->plan->n_replicas,
                       tf_config ? "TF_CONFIG" : "CLUSTER_SPEC",
                       len + 1,
                       false,
                       err);
    }
    if (env)
        put_entry(env, entry);
    else
        free(entry);
    return 0;
}

/* Check every distinct shape of variable: one replica per role is enough, since addresses
 * are the only per-replica difference and the cluster object is shared. */
static int check_sizes(const struct ty_clusterenv *ce, struct ty_error *err)
{
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        for (size_t i = 0; i < ce->plan->n_replicas; i++) {
            const struct ty_replica *r = &ce->plan->replicas[i];
            int rc;
            if ((int)r->role != role)
                continue;
            rc = set_json_var(ce, r, false, NULL, err);
            if (rc >= 0)
                rc = set_json_var(ce, r, true, NULL, err);
            if (rc < 0)
                return rc;
            break;
        }
    }
    return 0;
}

int ty_clusterenv_new(const struct ty_cluster_plan *plan,
                      struct ty_clusterenv **ret,
                      struct ty_error *err)
{
    struct ty_clusterenv *ce;
    int r;

    for (size_t i = 0; i < plan->n_replicas; i++)
        if (!plan->replicas[i].host || plan->replicas[i].port <= 0)
            return ty_error_set(
                err, EINVAL, "replica %s has no address yet", plan->replicas[i].display_name);
    ce = xcalloc(1, sizeof(*ce));
    ce->plan = plan;
    ce->cluster_spec_cluster = cluster_object(plan, false);
    ce->tf_config_cluster = cluster_object(plan, true);
    ce->cluster_spec_cluster_len = strlen(ce->cluster_spec_cluster);
    ce->tf_config_cluster_len = strlen(ce->tf_config_cluster);
    ce->job = ty_json_compact(plan->job->training_input);
    ce->job_len = strlen(ce->job);
    if (plan->trial_id) {
        json_t *t = json_string(plan->trial_id);
        ce->trial = ty_json_compact(t);
        json_decref(t);
    }
    ce->master = ty_plan_find((struct ty_cluster_plan *)plan, TY_ROLE_MASTER, 0);
    ce->world_size = (int)(1 + plan->job->roles[TY_ROLE_WORKER].count);
    r = check_sizes(ce, err);
    if (r < 0) {
        ty_clusterenv_free(ce);
        return r;
    }
    *ret = ce;
    return 0;
}

void ty_clusterenv_free(struct ty_clusterenv *ce)
{
    if (!ce)
        return;
    free(ce->cluster_spec_cluster);
    free(ce->tf_config_cluster);
    free(ce->job);
    free(ce->trial);
    free(ce);
}

const char *const ty_clusterenv_names[] = {
    "CLUSTER_SPEC",
    "TF_CONFIG",
    "CLOUD_ML_JOB_ID",
    "CLOUD_ML_TRIAL_ID",
    "CLOUD_ML_HP_METRIC_FILE",
    "CLOUD_ML_HP_METRIC_TAG",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "DMLC_ROLE",
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_WORKER",
    "DMLC_NUM_SERVER",
    NULL,
};

const char *ty_clusterenv_dmlc_role(enum ty_role role)
{
    switch (role) {
    case TY_ROLE_MASTER:
        return "scheduler";
    case TY_ROLE_WORKER:
        return "worker";
    case TY_ROLE_PS:
        return "server";
    default:
        return NULL;
    }
}

static void set_int(char ***env, const char *name, long long v)
{
    char num[32];

    (void)snprintf(num, sizeof(num), "%lld", v);
    ty_strv_setenv(env, name, num);
}

/* MXNet's ps-lite: ps-lite's scheduler is not one of its DMLC_NUM_WORKER workers, so the
 * master is not counted. The root URI is an address, never a name: ps-lite binds and
 * connects to it as given. */
static void render_dmlc(const struct ty_clusterenv *ce, const struct ty_replica *r, char ***env)
{
    const char *role = ty_clusterenv_dmlc_role(r->role);
    const struct ty_replica *m = ce->master;

    if (!role || !m)
        return;
    ty_strv_setenv(env, "DMLC_ROLE", role);
    ty_strv_setenv(env, "DMLC_PS_ROOT_URI", m->ip ? m->ip : m->host);
    set_int(env, "DMLC_PS_ROOT_PORT", m->port);
    set_int(env, "DMLC_NUM_WORKER", ce->plan->job->roles[TY_ROLE_WORKER].count);
    set_int(env, "DMLC_NUM_SERVER", ce->plan->job->roles[TY_ROLE_PS].count);
}

int ty_clusterenv_render(const struct ty_clusterenv *ce,
                         const struct ty_replica *r,
                         const struct ty_env_options *opts,
                         char ***env,
                         struct ty_error *err)
{
    int rc = set_json_var(ce, r, false, env, err);

    if (rc >= 0)
        rc = set_json_var(ce, r, true, env, err);
    if (rc < 0)
        return rc;
    ty_strv_setenv(env, "CLOUD_ML_JOB_ID", ce->plan->job->job_id);
    if (ce->plan->trial_id)
        ty_strv_setenv(env, "CLOUD_ML_TRIAL_ID", ce->plan->trial_id);
    if (opts && opts->pytorch && (r->role == TY_ROLE_MASTER || r->role == TY_ROLE_WORKER) &&
        ce->master) {
        ty_strv_setenv(env, "MASTER_ADDR", ce->master->host);
        set_int(env, "MASTER_PORT", ce->master->port);
        set_int(env, "WORLD_SIZE", ce->world_size);
        set_int(env, "RANK", r->role == TY_ROLE_MASTER ? 0 : r->index + 1);
    }
    if (opts && opts->mxnet)
        render_dmlc(ce, r, env);
    return 0;
}

int ty_clusterenv_check_size(const struct ty_job *job, size_t addr_len, struct ty_error *err)
{
    struct ty_cluster_plan *plan = NULL;
    struct ty_clusterenv *ce = NULL;
    /* "host:port" of addr_len bytes: a host of addr_len - 6 characters and a 5-digit port. */
    size_t hl = addr_len > 7 ? addr_len - 6 : 1;
    _cleanup_free_ char *host = xmalloc(hl + 1);
    int r;

    /* A cheap lower bound first: every CLUSTER_SPEC holds each replica's quoted address and
     * the job, so a cluster far over the limit is refused before its plan (one copy of the
     * args per replica: gigabytes for 30000 replicas with 100 KB of args) is built. */
    _cleanup_free_ char *ti = ty_json_compact(job->training_input);
    unsigned long long least = (unsigned long long)ty_job_replica_count(job) * (addr_len + 2) +
                               strlen(ti) + strlen("CLUSTER_SPEC=");
    if (least > TY_ENV_STRING_MAX)
        return too_big(job->training_input,
                       (size_t)ty_job_replica_count(job),
                       "CLUSTER_SPEC",
                       least,
                       true,
                       err);

    memset(host, 'h', hl);
    host[hl] = '\0';
    r = ty_plan_build(job, job->hp ? "9999" : NULL, NULL, &plan, err);
    if (r < 0)
        return r;
    for (size_t i = 0; i < plan->n_replicas; i++) {
        plan->replicas[i].host = xstrdup(host);
        plan->replicas[i].port = 65535;
    }
    r = ty_clusterenv_new(plan, &ce, err);
    ty_clusterenv_free(ce);
    ty_plan_free(plan);
    return r;
}
