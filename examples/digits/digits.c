/* digits.c - digits example entry point: flags, CLUSTER_SPEC parsing and the
 * master, worker and evaluator roles of a data-parallel parameter-server
 * trainer for the sklearn 8x8 digits data (the ps role lives in ps.c, the
 * wire protocol is documented in net.c, the wiring from MXNet's DMLC_*
 * variables in dmlc.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "digits.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmlc.h"

#define DEFAULT_DATA "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
#define EVAL_POLL_MS 200

volatile sig_atomic_t g_stop;

enum role { R_MASTER, R_WORKER, R_PS, R_EVALUATOR, R_COUNT };
static const char *const role_names[R_COUNT] = {"master", "worker", "ps", "evaluator"};

struct cluster {
    json_t *root;
    const char **addr[R_COUNT];
    int n[R_COUNT];
    enum role role;
    int index;
    char trial[64];
};

/* ---------------------------------------------------------------- flags */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: digits [--steps N] [--learning-rate X] [--optimizer sgd|momentum]\n"
            "              [--batch-size N] [--hidden N] [--seed N] [--checkpoint-every N]\n"
            "              [--job-dir DIR] [--data PATH]\n"
            "Role and peers come from the CLUSTER_SPEC environment variable, or from the\n"
            "DMLC_* ones (MXNet's ps-lite) when DMLC_ROLE is set; see README.md.\n");
}

/* Flag names match with '-' and '_' treated alike (--learning_rate works). */
static int flag_is(const char *name, size_t len, const char *want)
{
    if (strlen(want) != len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char a = name[i] == '_' ? '-' : name[i];
        if (a != want[i])
            return 0;
    }
    return 1;
}

static int parse_long(const char *flag, const char *v, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < min || x > max) {
        fprintf(stderr,
                "digits: --%s: expected an integer in [%ld, %ld], got '%s'\n",
                flag,
                min,
                max,
                v);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    static const char *const known[] = {"steps",
                                        "learning-rate",
                                        "batch-size",
                                        "hidden",
                                        "seed",
                                        "checkpoint-every",
                                        "job-dir",
                                        "data",
                                        "optimizer"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            fprintf(stderr, "digits: warning: ignoring argument '%s'\n", a);
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '='), *val = eq ? eq + 1 : NULL;
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        int k = -1;
        for (int j = 0; j < (int)(sizeof known / sizeof *known); j++)
            if (flag_is(name, nlen, known[j]))
                k = j;
        if (k < 0) {
            if (!eq && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                fprintf(stderr, "digits: warning: ignoring unknown flag %s %s\n", a, argv[++i]);
            else
                fprintf(stderr, "digits: warning: ignoring unknown flag %s\n", a);
            continue;
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "digits: --%s needs a value\n", known[k]);
                return -1;
            }
            val = argv[++i];
        }
        long x = 0;
        int rc = 0;
        switch (k) {
        case 0:
            rc = parse_long(known[k], val, 1, 100000000L, &o->steps);
            break;
        case 1: {
            char *end;
            errno = 0;
            o->lr = strtod(val, &end);
            if (end == val || *end || errno || !isfinite(o->lr) || o->lr <= 0.0) {
                fprintf(
                    stderr, "digits: --learning-rate: expected a positive number, got '%s'\n", val);
                rc = -1;
            }
            break;
        }
        case 2:
            rc = parse_long(known[k], val, 1, 1000000L, &o->batch);
            break;
        case 3:
            rc = parse_long(known[k], val, 0, 4096, &o->hidden);
            break;
        case 4:
            rc = parse_long(known[k], val, LONG_MIN, LONG_MAX, &x);
            o->seed = x;
            break;
        case 5:
            rc = parse_long(known[k], val, 0, 100000000L, &o->ckpt_every);
            break;
        case 6:
            o->job_dir = *val ? val : NULL;
            break;
        case 7:
            o->data_path = val;
            break;
        default:
            if (!strcmp(val, "sgd")) {
                o->optimizer = OPT_SGD;
            } else if (!strcmp(val, "momentum")) {
                o->optimizer = OPT_MOMENTUM;
            } else {
                fprintf(
                    stderr, "digits: --optimizer: expected 'sgd' or 'momentum', got '%s'\n", val);
                rc = -1;
            }
            break;
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* --------------------------------------------------------- CLUSTER_SPEC */

static int cluster_role_list(struct cluster *cl, json_t *cluster, enum role r, const char *key)
{
    json_t *arr = json_object_get(cluster, key);
    if (!arr)
        return 0;
    if (!json_is_array(arr)) {
        fprintf(stderr, "digits: CLUSTER_SPEC: cluster.%s must be a list of \"host:port\"\n", key);
        return -1;
    }
    cl->n[r] = (int)json_array_size(arr);
    cl->addr[r] = xcalloc((size_t)cl->n[r] + 1, sizeof *cl->addr[r]);
    for (int i = 0; i < cl->n[r]; i++) {
        const char *s = json_string_value(json_array_get(arr, (size_t)i));
        if (!s || !*s) {
            fprintf(stderr,
                    "digits: CLUSTER_SPEC: cluster.%s[%d] is not a \"host:port\" string\n",
                    key,
                    i);
            return -1;
        }
        cl->addr[r][i] = s;
    }
    return 0;
}

/* task.trial of a CLUSTER_SPEC or TF_CONFIG object (a string, or a number)
 * into @out; "" outside tuning trials. */
static void task_trial(json_t *root, char *out, size_t cap)
{
    json_t *trial = json_object_get(json_object_get(root, "task"), "trial");
    if (json_is_string(trial))
        snprintf(out, cap, "%s", json_string_value(trial));
    else if (json_is_integer(trial))
        snprintf(out, cap, "%lld", (long long)json_integer_value(trial));
}

/* The trial id when CLUSTER_SPEC names none: TF_CONFIG's task.trial, if any. */
static void tf_config_trial(struct cluster *cl)
{
    const char *tf = getenv("TF_CONFIG");
    if (cl->trial[0] || !tf || !*tf)
        return;
    json_t *root = json_loads(tf, 0, NULL);
    task_trial(root, cl->trial, sizeof cl->trial);
    json_decref(root);
}

static int parse_cluster(struct cluster *cl)
{
    memset(cl, 0, sizeof *cl);
    const char *spec = getenv("CLUSTER_SPEC");
    if (!spec || !*spec) {
        fprintf(stderr, "digits: CLUSTER_SPEC is not set; running as a single master\n");
        cl->role = R_MASTER;
        tf_config_trial(cl);
        return 0;
    }
    json_error_t err;
    cl->root = json_loads(spec, 0, &err);
    if (!cl->root) {
        fprintf(stderr,
                "digits: CLUSTER_SPEC is not valid JSON (line %d, column %d): %s\n",
                err.line,
                err.column,
                err.text);
        return -1;
    }
    json_t *cluster = json_object_get(cl->root, "cluster");
    json_t *task = json_object_get(cl->root, "task");
    if (!json_is_object(cluster) || !json_is_object(task)) {
        fprintf(stderr, "digits: CLUSTER_SPEC needs \"cluster\" and \"task\" objects\n");
        return -1;
    }
    for (int r = 0; r < R_COUNT; r++)
        if (cluster_role_list(cl, cluster, (enum role)r, role_names[r]) != 0)
            return -1;
    if (cl->n[R_MASTER] == 0 && cluster_role_list(cl, cluster, R_MASTER, "chief") != 0)
        return -1;
    const char *type = json_string_value(json_object_get(task, "type"));
    if (!type) {
        fprintf(stderr, "digits: CLUSTER_SPEC: task.type is missing\n");
        return -1;
    }
    int role = strcmp(type, "chief") == 0 ? R_MASTER : -1;
    for (int r = 0; r < R_COUNT; r++)
        if (strcmp(type, role_names[r]) == 0)
            role = r;
    if (role < 0) {
        fprintf(stderr, "digits: CLUSTER_SPEC: unknown task.type '%s'\n", type);
        return -1;
    }
    cl->role = (enum role)role;
    json_t *idx = json_object_get(task, "index");
    long index = 0;
    if (json_is_integer(idx)) {
        index = (long)json_integer_value(idx);
    } else if (json_is_string(idx)) {
        if (parse_long("task.index", json_string_value(idx), 0, INT_MAX, &index) != 0)
            return -1;
    } else if (idx) {
        fprintf(stderr, "digits: CLUSTER_SPEC: task.index must be an integer\n");
        return -1;
    }
    if (index < 0 || index >= cl->n[role]) {
        fprintf(stderr,
                "digits: CLUSTER_SPEC: task %s index %ld, but the cluster lists %d %s "
                "replica(s)\n",
                type,
                index,
                cl->n[role],
                role_names[role]);
        return -1;
    }
    cl->index = (int)index;
    if (cl->n[R_MASTER] != 1) {
        fprintf(stderr,
                "digits: CLUSTER_SPEC: the cluster must have exactly one master, "
                "it has %d\n",
                cl->n[R_MASTER]);
        return -1;
    }
    task_trial(cl->root, cl->trial, sizeof cl->trial);
    tf_config_trial(cl);
    return 0;
}

static void cluster_free(struct cluster *cl)
{
    for (int r = 0; r < R_COUNT; r++)
        free(cl->addr[r]);
    json_decref(cl->root);
}

/* ---------------------------------------------------------------- master */

struct master {
    const struct options *o;
    struct dataset train, test;
    struct hypertune ht;
    char ckdir[PATH_MAX]; /* "" when not checkpointing */
    size_t np;
};

/* A checkpoint name is "ckpt-<digits>.bin"; returns the step or -1. */
static long ckpt_step_of(const char *name)
{
    if (strncmp(name, "ckpt-", 5) != 0)
        return -1;
    const char *d = name + 5;
    size_t nd = strspn(d, "0123456789");
    if (nd == 0 || nd > 9 || strcmp(d + nd, ".bin") != 0)
        return -1;
    return strtol(d, NULL, 10);
}

static int prepare_ckdir(struct master *m)
{
    m->ckdir[0] = '\0';
    const char *jd = m->o->job_dir;
    if (!jd)
        return 0;
    int k = snprintf(m->ckdir, sizeof m->ckdir, "%s/checkpoints", jd);
    if (k < 0 || (size_t)k >= sizeof m->ckdir - 64) {
        fprintf(stderr, "digits: --job-dir is too long\n");
        return -1;
    }
    if (mkdir_p(m->ckdir) != 0) {
        fprintf(stderr,
                "digits: cannot create checkpoint directory %s: %s\n",
                m->ckdir,
                strerror(errno));
        return -1;
    }
    /* This example does not resume: remove a previous run's checkpoints so an
     * evaluator never mistakes them for this run's. */
    DIR *d = opendir(m->ckdir);
    int removed = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (ckpt_step_of(e->d_name) >= 0 || !strcmp(e->d_name, "ckpt-final.bin") ||
            !strcmp(e->d_name, "latest")) {
            char path[PATH_MAX + 300];
            snprintf(path, sizeof path, "%s/%s", m->ckdir, e->d_name);
            removed += unlink(path) == 0;
        }
    }
    if (d)
        closedir(d);
    if (removed)
        printf("master: removed %d checkpoint file(s) of a previous run\n", removed);
    return 0;
}

/* Evaluates p at step; writes ckpt-<step>.bin (and at the end ckpt-final.bin
 * and "latest") and, in a tuning trial, reports the held-out accuracy as the
 * hypertune metric at this global step. */
static int master_report(struct master *m, long step, const float *p, int final)
{
    int hidden = (int)m->o->hidden;
    double train_loss;
    model_eval(p, hidden, &m->train, &train_loss);
    double acc = model_eval(p, hidden, &m->test, NULL);
    printf("step %ld train loss %.3f test accuracy %.3f\n", step, train_loss, acc);
    if (m->ckdir[0]) {
        char name[64];
        snprintf(name, sizeof name, "ckpt-%ld.bin", step);
        if (ckpt_write(m->ckdir, name, step, hidden, p, m->np) != 0)
            return -1;
        if (final) {
            char latest[PATH_MAX + 16], text[80];
            snprintf(latest, sizeof latest, "%s/latest", m->ckdir);
            int len = snprintf(text, sizeof text, "%s\n", name);
            if (ckpt_write(m->ckdir, "ckpt-final.bin", step, hidden, p, m->np) != 0 ||
                write_file_atomic(latest, text, (size_t)len) != 0)
                return -1;
        }
    }
    if (hypertune_report(&m->ht, step, acc) != 0)
        return -1;
    if (final)
        printf("final test accuracy: %.3f\n", acc);
    return 0;
}

static int is_report_step(const struct options *o, long step)
{
    return o->ckpt_every > 0 && step % o->ckpt_every == 0 && step < o->steps;
}

/* Single-process SGD: used when the cluster has no workers or no ps. */
static int master_train_local(struct master *m, float *p)
{
    const struct options *o = m->o;
    float *grad = xcalloc(m->np, sizeof *grad);
    double *vel = xcalloc(m->np, sizeof *vel);
    size_t *idx = xcalloc((size_t)o->batch, sizeof *idx);
    struct sampler smp;
    sampler_init(&smp, m->train.n, 0, 1, (uint64_t)o->seed);
    params_init(p, (int)o->hidden, (uint64_t)o->seed);
    double mu = o->optimizer == OPT_MOMENTUM ? MOMENTUM : 0.0;
    int rc = 0;
    for (long s = 0; s < o->steps && rc == 0; s++) {
        sampler_next(&smp, idx, (size_t)o->batch);
        model_grad(p, (int)o->hidden, &m->train, idx, (size_t)o->batch, grad);
        for (size_t i = 0; i < m->np; i++) {
            vel[i] = mu * vel[i] + (double)grad[i];
            p[i] -= (float)(o->lr * (mu > 0.0 ? vel[i] : (double)grad[i]));
        }
        if (is_report_step(o, s + 1))
            rc = master_report(m, s + 1, p, 0);
    }
    sampler_free(&smp);
    free(grad);
    free(vel);
    free(idx);
    return rc;
}

/* Distributed: collect consistent snapshots from the ps as training runs. */
static int master_monitor(struct master *m, const struct cluster *cl, float *p)
{
    const struct options *o = m->o;
    struct ps_client pc;
    uint32_t v;
    int rc = psc_open(&pc, cl->addr[R_PS], cl->n[R_PS], m->np, &v);
    for (long step = 1; rc == 0 && step <= o->steps; step++) {
        if (!is_report_step(o, step) && step != o->steps)
            continue;
        rc = psc_fetch(&pc, OP_SNAP, (uint32_t)step, p, &v);
        if (rc == 0 && step < o->steps)
            rc = master_report(m, step, p, 0);
    }
    psc_close(&pc);
    return rc;
}

static int run_master(const struct options *o, const struct cluster *cl)
{
    struct master m;
    memset(&m, 0, sizeof m);
    m.o = o;
    m.np = param_count((int)o->hidden);
    if (prepare_ckdir(&m) != 0 || load_digits(o->data_path, &m.train, &m.test) != 0)
        return 1;
    hypertune_init(&m.ht, cl->trial);
    int nw = cl->n[R_WORKER], nps = cl->n[R_PS];
    printf("master: %d worker(s), %d ps, %zu train / %zu test examples, %zu parameters "
           "(hidden %ld)\n",
           nw,
           nps,
           m.train.n,
           m.test.n,
           m.np,
           o->hidden);
    printf("master: steps %ld, learning rate %g, optimizer %s, batch size %ld, seed %lld, "
           "checkpoint every %ld, job dir %s\n",
           o->steps,
           o->lr,
           o->optimizer == OPT_MOMENTUM ? "momentum" : "sgd",
           o->batch,
           o->seed,
           o->ckpt_every,
           m.ckdir[0] ? o->job_dir : "(none: no checkpoints)");
    if (m.ht.enabled)
        printf("master: trial %s: reporting test accuracy as '%s' to %s\n",
               m.ht.trial,
               m.ht.tag,
               m.ht.path);
    float *p = xcalloc(m.np, sizeof *p);
    int rc;
    if (nw > 0 && nps > 0) {
        rc = master_monitor(&m, cl, p);
    } else {
        printf("master: %s; training alone\n", nw ? "no ps in the cluster" : "no workers");
        rc = master_train_local(&m, p);
    }
    if (rc == 0)
        rc = master_report(&m, o->steps, p, 1);
    free(p);
    hypertune_free(&m.ht);
    dataset_free(&m.train);
    dataset_free(&m.test);
    return rc == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- worker */

static int run_worker(const struct options *o, const struct cluster *cl)
{
    int w = cl->index, nw = cl->n[R_WORKER];
    if (cl->n[R_PS] == 0) {
        printf("worker %d: the cluster has no ps; the master trains alone, exiting\n", w);
        return 0;
    }
    struct dataset train, test;
    if (load_digits(o->data_path, &train, &test) != 0)
        return 1;
    size_t np = param_count((int)o->hidden);
    float *p = xcalloc(np, sizeof *p), *grad = xcalloc(np, sizeof *grad);
    size_t *idx = xcalloc((size_t)o->batch, sizeof *idx);
    struct sampler smp;
    sampler_init(&smp, train.n, w, nw, (uint64_t)o->seed);
    struct ps_client pc;
    uint32_t start = 0;
    int rc = psc_open(&pc, cl->addr[R_PS], cl->n[R_PS], np, &start);
    if (rc == 0)
        printf("worker %d: %zu of %zu training examples, steps %lu..%ld\n",
               w,
               smp.n,
               train.n,
               (unsigned long)start,
               o->steps);
    long log_every = o->steps >= 300 ? 100 : o->steps;
    for (long s = start; rc == 0 && s < o->steps; s++) {
        uint32_t v;
        rc = psc_fetch(&pc, OP_PULL, (uint32_t)s, p, &v);
        if (rc == 0 && v != (uint32_t)s) {
            fprintf(stderr,
                    "digits: worker %d: expected parameters of version %ld, got %lu\n",
                    w,
                    s,
                    (unsigned long)v);
            rc = -1;
        }
        if (rc != 0)
            break;
        sampler_next(&smp, idx, (size_t)o->batch);
        double loss = model_grad(p, (int)o->hidden, &train, idx, (size_t)o->batch, grad);
        rc = psc_push(&pc, (uint32_t)s, grad);
        if (rc == 0 && (s + 1) % log_every == 0)
            printf("worker %d: step %ld batch loss %.3f\n", w, s + 1, loss);
    }
    if (rc == 0)
        printf("worker %d: done\n", w);
    psc_close(&pc);
    sampler_free(&smp);
    free(p);
    free(grad);
    free(idx);
    dataset_free(&train);
    dataset_free(&test);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------- evaluator */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Evaluates one checkpoint file; returns its step, or -1 if unreadable. */
static long eval_ckpt(const char *path, const struct dataset *test)
{
    long step;
    int hidden;
    float *p;
    size_t n;
    if (ckpt_read(path, &step, &hidden, &p, &n) != 0)
        return -1;
    double acc = model_eval(p, hidden, test, NULL);
    printf("evaluator: step %ld test accuracy %.3f\n", step, acc);
    free(p);
    return step;
}

static int run_evaluator(const struct options *o)
{
    if (!o->job_dir) {
        printf("evaluator: no --job-dir, so there are no checkpoints to evaluate; exiting\n");
        return 0;
    }
    struct dataset train, test;
    if (load_digits(o->data_path, &train, &test) != 0)
        return 1;
    dataset_free(&train);
    char dir[PATH_MAX], final_path[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/checkpoints", o->job_dir);
    snprintf(final_path, sizeof final_path, "%s/ckpt-final.bin", dir);
    printf("evaluator: watching %s\n", dir);
    long last = 0;
    size_t cap = 16;
    long *steps = xcalloc(cap, sizeof *steps);
    int done = 0;
    while (!g_stop && !done) {
        size_t n = 0;
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            long s = ckpt_step_of(e->d_name);
            if (s <= last)
                continue;
            if (n == cap)
                steps = xrealloc(steps, cap *= 2, sizeof *steps);
            steps[n++] = s;
        }
        if (d)
            closedir(d);
        qsort(steps, n, sizeof *steps, cmp_long);
        for (size_t i = 0; i < n && !g_stop; i++) {
            char path[PATH_MAX + 32];
            snprintf(path, sizeof path, "%s/ckpt-%ld.bin", dir, steps[i]);
            eval_ckpt(path, &test);
            last = steps[i]; /* unreadable ones are skipped, not retried */
        }
        struct stat st;
        if (!g_stop && stat(final_path, &st) == 0) {
            long step;
            int hidden;
            float *p;
            size_t np;
            if (ckpt_read(final_path, &step, &hidden, &p, &np) == 0) {
                free(p);
                if (step > last)
                    eval_ckpt(final_path, &test);
                printf("evaluator: evaluated the final checkpoint (step %ld); exiting\n", step);
            }
            done = 1;
        }
        if (!done && !g_stop)
            sleep_ms(EVAL_POLL_MS);
    }
    if (!done)
        printf("evaluator: terminated by signal\n");
    free(steps);
    dataset_free(&test);
    return 0;
}

/* ------------------------------------------------------------------ main */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void set_signals(int catch_term)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    if (!catch_term)
        return;
    sa.sa_handler = on_signal; /* no SA_RESTART: blocking waits return EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* DMLC_ROLE is set: role, rank and peers come from the rendezvous at the
 * scheduler (dmlc.c), which is the master; CLUSTER_SPEC and TF_CONFIG are not
 * read. Training then runs as with CLUSTER_SPEC. */
static int run_dmlc(const struct options *o)
{
    static const enum role roles[] = {
        [DMLC_SCHEDULER] = R_MASTER, [DMLC_WORKER] = R_WORKER, [DMLC_SERVER] = R_PS};
    struct cluster cl;
    struct dmlc d;
    int rc = 1;

    memset(&cl, 0, sizeof cl);
    fprintf(stderr,
            "digits: DMLC_ROLE is set: wiring from the DMLC_* variables "
            "(CLUSTER_SPEC and TF_CONFIG are not read)\n");
    /* SIGTERM's default (exit) until the rendezvous is over: a server waiting
     * for its rank must not outlive a cancelled job. */
    set_signals(0);
    if (dmlc_setup(&d) == 0) {
        cl.role = roles[d.role];
        cl.index = d.rank;
        cl.n[R_MASTER] = 1;
        cl.n[R_WORKER] = d.nworkers;
        cl.n[R_PS] = d.nservers;
        cl.addr[R_PS] = (const char **)d.servers;
        set_signals(cl.role == R_PS);
        if (cl.role == R_MASTER) {
            rc = run_master(o, &cl);
        } else if (cl.role == R_WORKER) {
            rc = run_worker(o, &cl);
        } else {
            rc = run_ps_on(o, d.listen_fd, d.self, d.rank, d.nservers, d.nworkers);
            d.listen_fd = -1; /* run_ps_on closed it */
        }
    }
    dmlc_free(&d);
    return rc;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct options o = {.steps = 300,
                        .lr = 0.5,
                        .optimizer = OPT_SGD,
                        .batch = 32,
                        .hidden = 0,
                        .seed = 1,
                        .ckpt_every = 50,
                        .job_dir = NULL,
                        .data_path = DEFAULT_DATA};
    const char *env_jd = getenv("JOB_DIR");
    if (env_jd && *env_jd)
        o.job_dir = env_jd;
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    if (o.job_dir && strncmp(o.job_dir, "gs://", 5) == 0) {
        fprintf(stderr,
                "digits: warning: job dir %s is not a local path; "
                "checkpoints disabled\n",
                o.job_dir);
        o.job_dir = NULL;
    }
    if (dmlc_wanted())
        return run_dmlc(&o);
    struct cluster cl;
    if (parse_cluster(&cl) != 0) {
        cluster_free(&cl);
        return 1;
    }
    set_signals(cl.role == R_PS || cl.role == R_EVALUATOR);
    int rc;
    switch (cl.role) {
    case R_MASTER:
        rc = run_master(&o, &cl);
        break;
    case R_WORKER:
        rc = run_worker(&o, &cl);
        break;
    case R_PS:
        rc = run_ps(&o, cl.addr[R_PS][cl.index], cl.index, cl.n[R_PS], cl.n[R_WORKER]);
        break;
    case R_EVALUATOR:
    default:
        rc = run_evaluator(&o);
        break;
    }
    cluster_free(&cl);
    return rc;
}
