/* SPDX-License-Identifier: Apache-2.0
 * jobfilter-keys.c: the keys of the REST Job resource (jobkeys.h): a tree of the output
 * messages (from the ml v1 discovery document, revision 20230121, plus trainyard's
 * additions) over the input messages of schema.h, walked name by name, with a "did you mean"
 * from the edit distance to the names at the level where a key went wrong. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "jobfilter-internal.h"
#include "jobkeys.h"
#include "macro.h"
#include "schema.h"

enum jk_kind {
    JK_LEAF,
    JK_ENUM,
    JK_TIME,     /* a leaf holding an RFC 3339 time */
    JK_DURATION, /* a leaf holding a Duration ("3600s") */
    JK_MAP,      /* any name below it, each a leaf (labels, hyperparameters, ...) */
    JK_OBJ,      /* kids (a table here) or msg (a message of schema.h) */
};

struct jk_node {
    const char *name;
    enum jk_kind kind;
    bool array;
    const struct jk_node *kids; /* terminated by a NULL name */
    const struct ty_message *msg;
    const char *const *enums;
};

#define LEAF(n)                                                                                    \
    {                                                                                              \
        n, JK_LEAF, false, NULL, NULL, NULL                                                        \
    }
#define LEAFS(n)                                                                                   \
    {                                                                                              \
        n, JK_LEAF, true, NULL, NULL, NULL                                                         \
    }
#define TIME(n)                                                                                    \
    {                                                                                              \
        n, JK_TIME, false, NULL, NULL, NULL                                                        \
    }
#define MAP(n)                                                                                     \
    {                                                                                              \
        n, JK_MAP, false, NULL, NULL, NULL                                                         \
    }
#define OBJ(n, k)                                                                                  \
    {                                                                                              \
        n, JK_OBJ, false, k, NULL, NULL                                                            \
    }
#define OBJS(n, k)                                                                                 \
    {                                                                                              \
        n, JK_OBJ, true, k, NULL, NULL                                                             \
    }
#define ENUM(n, e)                                                                                 \
    {                                                                                              \
        n, JK_ENUM, false, NULL, NULL, e                                                           \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, JK_LEAF, false, NULL, NULL, NULL                                                     \
    }

static const struct jk_node k_metric[] = {LEAF("objectiveValue"), LEAF("trainingStep"), END};
static const struct jk_node k_builtin[] = {
    LEAF("framework"), LEAF("modelPath"), LEAF("pythonVersion"), LEAF("runtimeVersion"), END};
/* trainyard's attemptStatus (docs/service.md): of the job and of each trial. */
static const struct jk_node k_replica[] = {LEAF("taskName"),
                                           LEAF("role"),
                                           LEAF("index"),
                                           LEAF("address"),
                                           LEAF("state"),
                                           LEAF("exitCode"),
                                           LEAF("signal"),
                                           TIME("exitTime"),
                                           LEAF("restarts"),
                                           END};
static const struct jk_node k_attempt[] = {LEAF("attempt"),
                                           LEAF("maxAttempts"),
                                           LEAF("internalRetries"),
                                           MAP("replicaRestarts"),
                                           OBJS("replicas", k_replica),
                                           END};
static const struct jk_node k_trial[] = {OBJS("allMetrics", k_metric),
                                         OBJ("builtInAlgorithmOutput", k_builtin),
                                         TIME("endTime"),
                                         LEAF("errorMessage"),
                                         OBJ("finalMetric", k_metric),
                                         MAP("hyperparameters"),
                                         LEAF("isTrialStoppedEarly"),
                                         TIME("startTime"),
                                         ENUM("state", ty_job_state_names),
                                         LEAF("trialId"),
                                         MAP("webAccessUris"),
                                         OBJ("attemptStatus", k_attempt),
                                         END};
static const struct jk_node k_output[] = {OBJ("builtInAlgorithmOutput", k_builtin),
                                          LEAF("completedTrialCount"),
                                          LEAF("consumedMLUnits"),
                                          LEAF("hyperparameterMetricTag"),
                                          LEAF("isBuiltInAlgorithmJob"),
                                          LEAF("isHyperparameterTuningJob"),
                                          OBJS("trials", k_trial),
                                          MAP("webAccessUris"),
                                          END};
/* trainyard's transitions (docs/service.md): shown by jobs.get only. */
static const struct jk_node k_transition[] = {ENUM("state", ty_job_state_names), TIME("time"), END};
static const struct jk_node k_job[] = {
    OBJ("attemptStatus", k_attempt),
    TIME("createTime"),
    TIME("endTime"),
    LEAF("errorMessage"),
    LEAF("etag"),
    LEAF("jobId"),
    LEAF("jobPosition"),
    MAP("labels"),
    MAP("predictionInput"),
    MAP("predictionOutput"),
    TIME("startTime"),
    ENUM("state", ty_job_state_names),
    LEAF("stateReason"),
    {"trainingInput", JK_OBJ, false, NULL, &ty_msg_training_input, NULL},
    OBJ("trainingOutput", k_output),
    OBJS("transitions", k_transition),
    END,
};
static const struct jk_node root = OBJ("Job", k_job);

/* The node of field @f of a schema.h message, in @buf. */
static const struct jk_node *field_node(const struct ty_field *f, struct jk_node *buf)
{
    *buf = (struct jk_node){.name = f->name, .kind = JK_LEAF};
    switch (f->type) {
    case TY_FT_MESSAGE_ARRAY:
        buf->array = true;
        /* fall through */
    case TY_FT_MESSAGE:
        buf->kind = JK_OBJ;
        buf->msg = f->message;
        break;
    case TY_FT_STRING_MAP:
        buf->kind = JK_MAP;
        break;
    case TY_FT_ENUM:
        buf->kind = JK_ENUM;
        buf->enums = f->enum_values;
        break;
    case TY_FT_DURATION:
        buf->kind = JK_DURATION;
        break;
    case TY_FT_STRING_ARRAY:
    case TY_FT_DOUBLE_ARRAY:
        buf->array = true;
        break;
    default:
        break;
    }
    return buf;
}

static size_t n_kids(const struct jk_node *obj)
{
    size_t n = 0;
    if (obj->msg)
        return obj->msg->n_fields;
    while (obj->kids[n].name)
        n++;
    return n;
}

/* The @i-th kid of @obj (in @buf when it comes from a message). */
static const struct jk_node *kid(const struct jk_node *obj, size_t i, struct jk_node *buf)
{
    return obj->msg ? field_node(&obj->msg->fields[i], buf) : &obj->kids[i];
}

size_t ty_jobkey_distance(const char *a, const char *b)
{
    char x[128], y[128];
    size_t nx = 0, ny = 0, row[129];

    for (; *a && nx < sizeof(x); a++)
        if (*a != '_')
            x[nx++] = (char)((*a >= 'A' && *a <= 'Z') ? *a - 'A' + 'a' : *a);
    for (; *b && ny < sizeof(y); b++)
        if (*b != '_')
            y[ny++] = (char)((*b >= 'A' && *b <= 'Z') ? *b - 'A' + 'a' : *b);
    for (size_t j = 0; j <= ny; j++)
        row[j] = j;
    for (size_t i = 1; i <= nx; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= ny; j++) {
            size_t up = row[j], best = diag + (x[i - 1] != y[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[ny];
}

/* The error for @segs[bad] not being a key of @obj (reached by segs[0..bad)). */
static int unknown(
    const char *const *segs, size_t n, size_t bad, const struct jk_node *obj, struct ty_error *err)
{
    struct ty_buf key = TY_BUF_INIT, parent = TY_BUF_INIT, names = TY_BUF_INIT;
    const char *best = NULL;
    size_t best_d = (size_t)-1, k = n_kids(obj), limit;
    struct jk_node buf;
    int r;

    for (size_t i = 0; i < n; i++)
        ty_buf_printf(&key, "%s%s", i ? "." : "", segs[i]);
    for (size_t i = 0; i < bad; i++)
        ty_buf_printf(&parent, "%s%s", i ? "." : "", segs[i]);
    for (size_t i = 0; i < k; i++) {
        const struct jk_node *c = kid(obj, i, &buf);
        size_t d = ty_jobkey_distance(segs[bad], c->name);
        ty_buf_printf(&names, "%s%s", i ? ", " : "", c->name);
        if (d < best_d) {
            best_d = d;
            best = c->name;
        }
    }
    limit = strlen(segs[bad]) / 2;
    if (limit < 3)
        limit = 3;
    if (best && best_d <= limit) {
        struct ty_buf mean = TY_BUF_INIT;
        ty_buf_printf(&mean, "%s%s%s", ty_buf_str(&parent), bad ? "." : "", best);
        for (size_t i = bad + 1; i < n; i++)
            ty_buf_printf(&mean, ".%s", segs[i]);
        ty_buf_release(&names);
        ty_buf_printf(&names, " (did you mean '%.160s'?)", ty_buf_str(&mean));
        ty_buf_release(&mean);
        for (size_t i = 0; i < k; i++)
            ty_buf_printf(
                &names, "%s%s", i ? ", " : "; valid keys here: ", kid(obj, i, &buf)->name);
    } else {
        char *list = ty_buf_take(&names);
        ty_buf_printf(&names, "; valid keys here: %s", list);
        free(list);
    }
    if (bad == 0)
        r = ty_error_set(err,
                         EINVAL,
                         "unknown key '%.100s': the Job has no key '%.60s'%s",
                         ty_buf_str(&key),
                         segs[bad],
                         ty_buf_str(&names));
    else
        r = ty_error_set(err,
                         EINVAL,
                         "unknown key '%.100s': %.100s has no key '%.60s'%s",
                         ty_buf_str(&key),
                         ty_buf_str(&parent),
                         segs[bad],
                         ty_buf_str(&names));
    ty_buf_release(&key);
    ty_buf_release(&parent);
    ty_buf_release(&names);
    return r;
}

/* The error for a key that goes below the value segs[0..upto). */
static int below_value(const char *const *segs, size_t n, size_t upto, struct ty_error *err)
{
    struct ty_buf p = TY_BUF_INIT, key = TY_BUF_INIT;
    int r;

    for (size_t k = 0; k < n; k++) {
        ty_buf_printf(&key, "%s%s", k ? "." : "", segs[k]);
        if (k < upto)
            ty_buf_printf(&p, "%s%s", k ? "." : "", segs[k]);
    }
    r = ty_error_set(err,
                     EINVAL,
                     "unknown key '%.100s': %.100s is a value, with no keys under it",
                     ty_buf_str(&key),
                     ty_buf_str(&p));
    ty_buf_release(&p);
    ty_buf_release(&key);
    return r;
}

int ty_jobkey_check(const char *const *segs,
                    size_t n,
                    struct ty_jobkey_info *info,
                    struct ty_error *err)
{
    struct ty_jobkey_info dummy;
    const struct jk_node *cur = &root;
    struct jk_node buf[2];
    int which = 0;

    if (!info)
        info = &dummy;
    *info = (struct ty_jobkey_info){0};
    if (n == 0)
        return ty_error_set(err, EINVAL, "empty key");
    for (size_t i = 0; i < n; i++) {
        const struct jk_node *next = NULL;
        if (cur->kind == JK_MAP) /* any name, a value with nothing below it */
            return i + 1 < n ? below_value(segs, n, i + 1, err) : (info->is_leaf = true, 0);
        if (cur->kind != JK_OBJ)
            return below_value(segs, n, i, err);
        for (size_t k = 0, nk = n_kids(cur); k < nk && !next; k++) {
            const struct jk_node *c = kid(cur, k, &buf[which]);
            if (strcmp(c->name, segs[i]) == 0)
                next = c;
        }
        if (!next)
            return unknown(segs, n, i, cur, err);
        info->is_array |= next->array;
        info->get_only |= i == 0 && strcmp(next->name, "transitions") == 0;
        cur = next;
        which ^= 1;
    }
    info->is_leaf = cur->kind != JK_OBJ;
    info->enums = cur->kind == JK_ENUM ? cur->enums : NULL;
    info->value = cur->kind == JK_TIME       ? TY_JOBKEY_TIMESTAMP
                  : cur->kind == JK_DURATION ? TY_JOBKEY_DURATION
                                             : TY_JOBKEY_TEXT;
    return 0;
}

int ty_jobkey_check_dotted(const char *key, struct ty_jobkey_info *info, struct ty_error *err)
{
    _cleanup_free_ char *copy = xstrdup(key);
    const char *segs[64];
    size_t n = 0;
    char *p = copy;

    for (;;) {
        char *dot = strchr(p, '.');
        if (n == TY_ARRAY_SIZE(segs))
            return ty_error_set(err, EINVAL, "key '%.100s' is too deep", key);
        if (dot)
            *dot = '\0';
        if (!*p)
            return ty_error_set(err, EINVAL, "key '%.100s' has an empty name", key);
        segs[n++] = p;
        if (!dot)
            break;
        p = dot + 1;
    }
    return ty_jobkey_check(segs, n, info, err);
}

int jf_enum_value(const char *const *enums, char *value, bool prefix, char *msg, size_t len)
{
    struct ty_buf names = TY_BUF_INIT;
    size_t vlen = strlen(value);

    for (size_t i = 0; enums[i]; i++) {
        if (prefix ? strncasecmp(enums[i], value, vlen) == 0 : strcasecmp(enums[i], value) == 0) {
            /* the names are upper case: the value, matched ignoring case, becomes the name */
            for (char *c = value; *c; c++)
                if (*c >= 'a' && *c <= 'z')
                    *c = (char)(*c - 'a' + 'A');
            ty_buf_release(&names);
            return 0;
        }
        ty_buf_printf(&names, "%s%s", i ? ", " : "", enums[i]);
    }
    (void)snprintf(msg,
                   len,
                   "'%.40s%s' %s; valid values (any case): %s",
                   value,
                   prefix ? "*" : "",
                   prefix ? "is the start of no value of this key" : "is not a value of this key",
                   ty_buf_str(&names));
    ty_buf_release(&names);
    return -EINVAL;
}
