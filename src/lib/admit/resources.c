/* SPDX-License-Identifier: Apache-2.0
 * resources.c: resource vectors, the capacity and limit settings that declare them, and the
 * demand of a job (resources.h). */
#include "resources.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "machine.h"
#include "macro.h"
#include "parse.h"
#include "suggest.h"

static const char *const gpu_names[TY_GPU_NTYPES] = {
    "NVIDIA_TESLA_K80",
    "NVIDIA_TESLA_P100",
    "NVIDIA_TESLA_V100",
    "NVIDIA_TESLA_P4",
    "NVIDIA_TESLA_T4",
    "NVIDIA_TESLA_A100",
};

const char *ty_gpu_type_name(int type)
{
    return type >= 0 && type < TY_GPU_NTYPES ? gpu_names[type] : "GPU";
}

int ty_gpu_type_index(const char *name)
{
    for (int i = 0; name && i < TY_GPU_NTYPES; i++)
        if (strcmp(name, gpu_names[i]) == 0)
            return i;
    return -1;
}

/* The enum name, or gcloud's spelling of it (nvidia-tesla-t4): -1 when neither. */
static int gpu_type_lenient(const char *name, size_t len)
{
    for (int i = 0; i < TY_GPU_NTYPES; i++) {
        const char *g = gpu_names[i];
        if (strlen(g) != len)
            continue;
        size_t k = 0;
        for (; k < len; k++) {
            char c = name[k] == '-' ? '_' : name[k];
            if (c >= 'a' && c <= 'z')
                c = (char)(c - 'a' + 'A');
            if (c != g[k])
                break;
        }
        if (k == len)
            return i;
    }
    return -1;
}

/* The error for the GPU type @name (@len bytes) of the setting @where: with the nearest type
 * (typed in either spelling, nvidia-tesla-t4 or NVIDIA_TESLA_T4), if one is near. */
static int unknown_gpu_type(const char *where, const char *name, size_t len, struct ty_error *err)
{
    char word[64];
    struct ty_buf known = TY_BUF_INIT;
    struct ty_suggest s;
    int r;

    (void)snprintf(word, sizeof(word), "%.*s", (int)len, name);
    for (char *c = word; *c; c++)
        *c = *c == '-' ? '_' : *c;
    ty_suggest_init(&s, word);
    for (int i = 0; i < TY_GPU_NTYPES; i++) {
        ty_suggest_add(&s, gpu_names[i]);
        ty_buf_printf(&known, "%s%s", i ? ", " : "", gpu_names[i]);
    }
    if (ty_suggest_best(&s))
        r = ty_error_set(err,
                         EINVAL,
                         "%s: gpus: unknown GPU type '%.*s' (did you mean %s? known: %s)",
                         where,
                         (int)len,
                         name,
                         ty_suggest_best(&s),
                         ty_buf_str(&known));
    else
        r = ty_error_set(err,
                         EINVAL,
                         "%s: gpus: unknown GPU type '%.*s' (known: %s)",
                         where,
                         (int)len,
                         name,
                         ty_buf_str(&known));
    ty_buf_release(&known);
    return r;
}

void ty_resources_unlimited(struct ty_resources *r)
{
    for (int i = 0; i < TY_RES_NDIMS; i++)
        r->v[i] = TY_RES_UNLIMITED;
}

void ty_resources_zero(struct ty_resources *r)
{
    memset(r, 0, sizeof(*r));
}

void ty_resources_add(struct ty_resources *r, const struct ty_resources *a, int64_t times)
{
    for (int i = 0; i < TY_RES_NDIMS; i++)
        if (r->v[i] != TY_RES_UNLIMITED)
            r->v[i] += a->v[i] * times;
}

void ty_resources_sub(struct ty_resources *r, const struct ty_resources *a)
{
    for (int i = 0; i < TY_RES_NDIMS; i++)
        if (r->v[i] != TY_RES_UNLIMITED)
            r->v[i] = r->v[i] > a->v[i] ? r->v[i] - a->v[i] : 0;
}

int ty_resources_short(const struct ty_resources *need, const struct ty_resources *avail)
{
    for (int i = 0; i < TY_RES_NDIMS; i++)
        if (avail->v[i] != TY_RES_UNLIMITED && need->v[i] > avail->v[i])
            return i;
    return -1;
}

bool ty_resources_any_counted(const struct ty_resources *r)
{
    for (int i = 0; i < TY_RES_NDIMS; i++)
        if (r->v[i] != TY_RES_UNLIMITED)
            return true;
    return false;
}

const char *ty_res_key(int dim)
{
    switch (dim) {
    case TY_RES_JOBS:
        return "jobs";
    case TY_RES_CPUS:
        return "cpus";
    case TY_RES_MEMORY:
        return "memory";
    default:
        return "gpus";
    }
}

const char *ty_res_amount(int dim, int64_t amount, char *buf, size_t len)
{
    switch (dim) {
    case TY_RES_JOBS:
        (void)snprintf(buf, len, "%" PRId64 " running job%s", amount, amount == 1 ? "" : "s");
        break;
    case TY_RES_CPUS:
        (void)snprintf(buf, len, "%" PRId64 " vCPU%s", amount, amount == 1 ? "" : "s");
        break;
    case TY_RES_MEMORY:
        if (amount < 1024)
            (void)snprintf(buf, len, "%" PRId64 " MiB of memory", amount);
        else
            (void)snprintf(buf, len, "%.1f GiB of memory", (double)amount / 1024.0);
        break;
    default:
        (void)snprintf(buf, len, "%" PRId64 " × %s", amount, ty_gpu_type_name(dim - TY_RES_GPU0));
        break;
    }
    return buf;
}

/* SIZE: bytes with an optional binary suffix, into MiB (at least 1). */
static int parse_size_mb(const char *v, int64_t *mb)
{
    static const struct {
        const char *suffix;
        int shift;
    } units[] = {{"", 0},
                 {"k", 10},
                 {"kib", 10},
                 {"m", 20},
                 {"mib", 20},
                 {"g", 30},
                 {"gib", 30},
                 {"t", 40},
                 {"tib", 40}};
    size_t digits = strspn(v, "0123456789");
    char num[24];
    int64_t n;

    if (digits == 0 || digits >= sizeof(num))
        return -EINVAL;
    memcpy(num, v, digits);
    num[digits] = '\0';
    if (ty_parse_int64(num, 0, INT64_MAX, &n) < 0)
        return -EINVAL;
    for (size_t i = 0; i < TY_ARRAY_SIZE(units); i++) {
        if (strcasecmp(v + digits, units[i].suffix) != 0)
            continue;
        /* MiB = bytes >> 20; refuse what would overflow */
        if (units[i].shift >= 20) {
            int up = units[i].shift - 20;
            if (n > (INT64_MAX >> up))
                return -ERANGE;
            *mb = n << up;
        } else {
            *mb = n >> (20 - units[i].shift);
        }
        return *mb >= 1 ? 0 : -ERANGE;
    }
    return -EINVAL;
}

void ty_gpu_order_release(struct ty_gpu_order *o)
{
    free(o->types);
    *o = (struct ty_gpu_order){0};
}

/* gpus=TYPE:N[+TYPE:N...] into @r's GPU dimensions (all set: unnamed types 0), and when @order
 * is not NULL the devices' types in the order written into it (on success only). */
static int parse_gpus(const char *v,
                      const char *where,
                      struct ty_resources *r,
                      struct ty_gpu_order *order,
                      struct ty_error *err)
{
    _cleanup_(ty_gpu_order_release) struct ty_gpu_order o = {0};
    struct ty_resources g;
    const char *p = v;

    ty_resources_zero(&g);
    if (!*v)
        return ty_error_set(err,
                            EINVAL,
                            "%s: gpus: expected TYPE:N[+TYPE:N...] or 0, for example "
                            "NVIDIA_TESLA_T4:2 (got nothing)",
                            where);
    if (strcmp(v, "0") == 0 || strcasecmp(v, "none") == 0)
        p = ""; /* no GPU of any type */
    while (*p) {
        size_t len = strcspn(p, "+");
        const char *colon = memchr(p, ':', len);
        char count[24];
        int64_t n;
        int type = colon ? gpu_type_lenient(p, (size_t)(colon - p)) : -1;
        size_t clen = colon ? len - (size_t)(colon - p) - 1 : 0;

        if (!colon)
            return ty_error_set(err,
                                EINVAL,
                                "%s: gpus: '%.*s' is not TYPE:N (for example NVIDIA_TESLA_T4:2)",
                                where,
                                (int)len,
                                p);
        if (type < 0)
            return unknown_gpu_type(where, p, (size_t)(colon - p), err);
        if (clen == 0 || clen >= sizeof(count))
            return ty_error_set(err,
                                EINVAL,
                                "%s: gpus: expected a count after '%.*s:'",
                                where,
                                (int)(colon - p),
                                p);
        memcpy(count, colon + 1, clen);
        count[clen] = '\0';
        if (ty_parse_int64(count, 0, 4096, &n) < 0)
            return ty_error_set(err,
                                EINVAL,
                                "%s: gpus: the count of %s must be a number from 0 to 4096 "
                                "(got '%s')",
                                where,
                                gpu_names[type],
                                count);
        g.v[TY_RES_GPU0 + type] += n;
        if (g.v[TY_RES_GPU0 + type] > 4096)
            return ty_error_set(
                err, EINVAL, "%s: gpus: more than 4096 × %s in all", where, gpu_names[type]);
        o.types = xreallocarray(o.types, o.n + (size_t)n + 1, sizeof(*o.types));
        for (int64_t k = 0; k < n; k++)
            o.types[o.n++] = type;
        p += len;
        if (*p == '+') {
            p++;
            if (!*p)
                return ty_error_set(err, EINVAL, "%s: gpus: nothing after the last '+'", where);
        }
    }
    for (int i = 0; i < TY_GPU_NTYPES; i++)
        r->v[TY_RES_GPU0 + i] = g.v[TY_RES_GPU0 + i];
    if (order) {
        ty_gpu_order_release(order);
        *order = o;
        o = (struct ty_gpu_order){0};
    }
    return 0;
}

/* One KEY=VALUE of a setting. */
static int parse_one(const char *key,
                     const char *v,
                     bool allow_jobs,
                     const char *where,
                     struct ty_resources *r,
                     struct ty_gpu_order *order,
                     struct ty_error *err)
{
    int64_t n;

    if (strcmp(key, "cpus") == 0) {
        if (ty_parse_int64(v, 0, 1000000, &n) < 0)
            return ty_error_set(
                err, EINVAL, "%s: cpus: expected a number from 0 to 1000000 (got '%s')", where, v);
        r->v[TY_RES_CPUS] = n;
        return 0;
    }
    if (strcmp(key, "memory") == 0) {
        int rc = parse_size_mb(v, &n);
        if (rc < 0)
            return ty_error_set(err,
                                EINVAL,
                                "%s: memory: expected a size such as 64G, 65536M or 68719476736 "
                                "(bytes, with an optional K, M, G or T suffix; at least 1M) "
                                "(got '%s')",
                                where,
                                v);
        r->v[TY_RES_MEMORY] = n;
        return 0;
    }
    if (strcmp(key, "gpus") == 0)
        return parse_gpus(v, where, r, order, err);
    if (allow_jobs && strcmp(key, "jobs") == 0) {
        if (ty_parse_int64(v, 0, 100000, &n) < 0)
            return ty_error_set(
                err, EINVAL, "%s: jobs: expected a number from 0 to 100000 (got '%s')", where, v);
        r->v[TY_RES_JOBS] = n;
        return 0;
    }
    if (strcmp(key, "jobs") == 0)
        return ty_error_set(err,
                            EINVAL,
                            "%s: jobs: not a key of this setting (known: cpus, memory, gpus; "
                            "the service's running-job slots are --max-running-jobs)",
                            where);
    return ty_error_set(err,
                        EINVAL,
                        "%s: unknown key '%s' (known: %scpus, memory, gpus)",
                        where,
                        key,
                        allow_jobs ? "jobs, " : "");
}

int ty_resources_parse(const char *text,
                       bool allow_jobs,
                       const char *where,
                       struct ty_resources *r,
                       struct ty_error *err)
{
    return ty_resources_parse_ordered(text, allow_jobs, where, r, NULL, err);
}

int ty_resources_parse_ordered(const char *text,
                               bool allow_jobs,
                               const char *where,
                               struct ty_resources *r,
                               struct ty_gpu_order *order,
                               struct ty_error *err)
{
    _cleanup_(ty_gpu_order_release) struct ty_gpu_order o = {0};
    _cleanup_free_ char *copy = xstrdup(text);
    struct ty_resources out = *r;
    char *save = NULL;
    bool any = false;
    unsigned seen = 0; /* keys given, by bit: jobs, cpus, memory, gpus */

    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        static const char *const keys[] = {"jobs", "cpus", "memory", "gpus"};
        char *val;
        int rc;

        item += strspn(item, " \t");
        if (!*item)
            continue;
        if (!eq)
            return ty_error_set(err,
                                EINVAL,
                                "%s: '%s' is not KEY=VALUE (for example "
                                "cpus=8,memory=32G,gpus=NVIDIA_TESLA_T4:2)",
                                where,
                                item);
        *eq = '\0';
        for (char *e = eq; e > item && (e[-1] == ' ' || e[-1] == '\t');)
            *--e = '\0';
        val = eq + 1 + strspn(eq + 1, " \t");
        for (char *e = val + strlen(val); e > val && (e[-1] == ' ' || e[-1] == '\t');)
            *--e = '\0';
        for (unsigned k = 0; k < TY_ARRAY_SIZE(keys); k++) {
            if (strcmp(item, keys[k]) != 0)
                continue;
            if (seen & (1u << k))
                return ty_error_set(
                    err, EINVAL, "%s: %s is given twice (give each key once)", where, item);
            seen |= 1u << k;
        }
        rc = parse_one(item, val, allow_jobs, where, &out, &o, err);
        if (rc < 0)
            return rc;
        any = true;
    }
    if (!any)
        return ty_error_set(err,
                            EINVAL,
                            "%s: expected KEY=VALUE settings, for example "
                            "cpus=8,memory=32G,gpus=NVIDIA_TESLA_T4:2 (got '%s')",
                            where,
                            text);
    *r = out;
    if (order && (seen & (1u << 3))) { /* gpus= */
        ty_gpu_order_release(order);
        *order = o;
        o = (struct ty_gpu_order){0};
    }
    return 0;
}

const char *ty_resources_format(const struct ty_resources *r, char *buf, size_t len)
{
    size_t off = 0;
    bool gpus = false, gpu_counted = false;

#define PUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__);                      \
        off += k_ > 0 ? (size_t)k_ : 0;                                                            \
    } while (0)
    if (len)
        buf[0] = '\0';
    if (r->v[TY_RES_JOBS] != TY_RES_UNLIMITED)
        PUT("%sjobs=%" PRId64, off ? "," : "", r->v[TY_RES_JOBS]);
    if (r->v[TY_RES_CPUS] != TY_RES_UNLIMITED)
        PUT("%scpus=%" PRId64, off ? "," : "", r->v[TY_RES_CPUS]);
    if (r->v[TY_RES_MEMORY] != TY_RES_UNLIMITED)
        PUT("%smemory=%" PRId64 "M", off ? "," : "", r->v[TY_RES_MEMORY]);
    for (int i = 0; i < TY_GPU_NTYPES; i++) {
        int64_t n = r->v[TY_RES_GPU0 + i];
        if (n != TY_RES_UNLIMITED)
            gpu_counted = true;
        if (n == TY_RES_UNLIMITED || n == 0)
            continue;
        PUT("%s%s:%" PRId64, gpus ? "+" : off ? ",gpus=" : "gpus=", gpu_names[i], n);
        gpus = true;
    }
    if (gpu_counted && !gpus)
        PUT("%sgpus=0", off ? "," : "");
#undef PUT
    if (off >= len && len)
        buf[len - 1] = '\0';
    return buf;
}

void ty_demand_of_job(const struct ty_job *job, struct ty_demand *d)
{
    memset(d, 0, sizeof(*d));
    d->trial.v[TY_RES_JOBS] = 1;
    d->tuning = job->hp != NULL;
    d->max_trials = 1;
    if (job->hp) { /* never more at once than the trials there are */
        d->max_trials = job->hp->max_parallel_trials;
        if (job->hp->max_trials < d->max_trials)
            d->max_trials = job->hp->max_trials;
        if (d->max_trials < 1)
            d->max_trials = 1;
    }
    for (int role = 0; role < TY_ROLE_MAX; role++) {
        const struct ty_role_spec *rs = &job->roles[role];
        const struct ty_machine_type *mt =
            rs->machine_type ? ty_machine_lookup(rs->machine_type) : NULL;
        const char *type = NULL;
        int g = ty_role_gpus(job, (enum ty_role)role, &type);
        int gi = g > 0 ? ty_gpu_type_index(type) : -1;

        d->role_count[role] = rs->count;
        d->role_gpu_type[role] = gi;
        d->role_gpus[role] = gi >= 0 ? g : 0;
        if (rs->count <= 0)
            continue;
        if (mt) {
            d->trial.v[TY_RES_CPUS] += rs->count * mt->vcpus;
            d->trial.v[TY_RES_MEMORY] += rs->count * mt->memory_mb;
        }
        if (gi >= 0)
            d->trial.v[TY_RES_GPU0 + gi] += rs->count * g;
    }
}

void ty_demand_total(const struct ty_demand *d, int trials, struct ty_resources *out)
{
    ty_resources_zero(out);
    ty_resources_add(out, &d->trial, trials);
    out->v[TY_RES_JOBS] = 1;
}

int64_t ty_demand_trial_gpus(const struct ty_demand *d)
{
    int64_t n = 0;
    for (int i = 0; i < TY_GPU_NTYPES; i++)
        n += d->trial.v[TY_RES_GPU0 + i];
    return n;
}

int ty_demand_check(const struct ty_demand *d,
                    const struct ty_resources *have,
                    const char *whose,
                    const char *how,
                    char *why,
                    size_t whylen)
{
    int dim = ty_resources_short(&d->trial, have);
    char need[64], has[64];

    if (dim < 0)
        return 0;
    (void)ty_res_amount(dim, d->trial.v[dim], need, sizeof(need));
    if (dim >= TY_RES_GPU0)
        (void)snprintf(has, sizeof(has), "%" PRId64, have->v[dim]);
    else
        (void)ty_res_amount(dim, have->v[dim], has, sizeof(has));
    (void)snprintf(why,
                   whylen,
                   "trainingInput: %s needs %s at once, and %s has %s%s%s%s",
                   d->tuning ? "one trial of the job" : "the job",
                   need,
                   whose,
                   have->v[dim] == 0 ? "none" : has,
                   how ? " (" : "",
                   how ? how : "",
                   how ? ")" : "");
    return -1;
}
