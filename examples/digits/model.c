/* model.c - digits example: utilities, data loading and train/test split,
 * the softmax-regression / one-hidden-layer MLP model, checkpoint files and
 * hypertune metric reporting. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "digits.h"

#define SPLIT_SEED     UINT64_C(0x5eed0d161750) /* fixed: the test split never varies */
#define CKPT_MAGIC     "DGTCKPT1"
#define HT_MAX_RECORDS 100

/* ---------------------------------------------------------------- utils */

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "digits: out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return p;
}

void *xrealloc(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        fprintf(stderr, "digits: allocation size overflow\n");
        exit(1);
    }
    size_t total = n * size;
    void *q = realloc(p, total ? total : 1);
    if (!q) {
        fprintf(stderr, "digits: out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return q;
}

double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL); /* an EINTR wakeup early is fine for all callers */
}

int mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, len + 1);
    for (char *q = tmp + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
            return -1;
        *q = '/';
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* Contiguous shard i of parts over n items; identical on every replica. */
void shard_range(size_t n, int parts, int i, size_t *off, size_t *len)
{
    uint64_t a = (uint64_t)n * (uint64_t)i / (uint64_t)parts;
    uint64_t b = (uint64_t)n * (uint64_t)(i + 1) / (uint64_t)parts;
    *off = (size_t)a;
    *len = (size_t)(b - a);
}

/* ------------------------------------------------------------ PRNG/sampler */

uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

void shuffle_idx(size_t *a, size_t n, uint64_t *s)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rng_next(s) % i);
        size_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* Rows r of an n_rows split with r % parts == part, visited in a fresh
 * deterministic random order each epoch. */
void sampler_init(struct sampler *s, size_t n_rows, int part, int parts, uint64_t seed)
{
    s->n = 0;
    s->idx = xcalloc(n_rows / (size_t)parts + 1, sizeof *s->idx);
    for (size_t r = (size_t)part; r < n_rows; r += (size_t)parts)
        s->idx[s->n++] = r;
    s->rng = seed * UINT64_C(0x100000001B3) + (uint64_t)part + 1;
    rng_next(&s->rng);
    shuffle_idx(s->idx, s->n, &s->rng);
    s->pos = 0;
}

void sampler_next(struct sampler *s, size_t *out, size_t batch)
{
    for (size_t k = 0; k < batch; k++) {
        if (s->pos == s->n) {
            shuffle_idx(s->idx, s->n, &s->rng);
            s->pos = 0;
        }
        out[k] = s->idx[s->pos++];
    }
}

void sampler_free(struct sampler *s)
{
    free(s->idx);
    s->idx = NULL;
}

/* ------------------------------------------------------------------ data */

static int parse_row(const char *line, float *x, int *y)
{
    const char *p = line;
    for (int k = 0; k <= NPIX; k++) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno)
            return -1;
        if (k < NPIX) {
            if (v < 0 || v > 16)
                return -1;
            x[k] = (float)v / 16.0f;
        } else {
            if (v < 0 || v >= NCLASS)
                return -1;
            *y = (int)v;
        }
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (k < NPIX) {
            if (*p != ',')
                return -1;
            p++;
        }
    }
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    return *p ? -1 : 0;
}

static void take_rows(struct dataset *dst,
                      const float *x,
                      const int *y,
                      const size_t *order,
                      size_t from,
                      size_t count)
{
    dst->n = count;
    dst->x = xcalloc(count * NPIX, sizeof *dst->x);
    dst->y = xcalloc(count, sizeof *dst->y);
    for (size_t i = 0; i < count; i++) {
        size_t r = order[from + i];
        memcpy(dst->x + i * NPIX, x + r * NPIX, NPIX * sizeof *x);
        dst->y[i] = y[r];
    }
}

int load_digits(const char *path, struct dataset *train, struct dataset *test)
{
    errno = 0;
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        fprintf(stderr,
                "digits: cannot open data file %s: %s\n",
                path,
                errno ? strerror(errno) : "gzopen failed");
        return -1;
    }
    char line[4096];
    size_t n = 0, cap = 0;
    long lineno = 0;
    float *x = NULL;
    int *y = NULL;
    int rc = 0;
    while (gzgets(gz, line, (int)sizeof line)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            fprintf(stderr, "digits: %s:%ld: line too long\n", path, lineno);
            rc = -1;
            break;
        }
        if (strspn(line, " \t\r\n") == len)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 2048;
            x = xrealloc(x, cap * NPIX, sizeof *x);
            y = xrealloc(y, cap, sizeof *y);
        }
        if (parse_row(line, x + n * NPIX, y + n) != 0) {
            fprintf(stderr,
                    "digits: %s:%ld: expected 64 pixel values 0..16 and a "
                    "label 0..9, comma-separated\n",
                    path,
                    lineno);
            rc = -1;
            break;
        }
        n++;
    }
    int zerr = Z_OK;
    const char *zmsg = gzerror(gz, &zerr);
    if (rc == 0 && zerr != Z_OK && zerr != Z_STREAM_END) {
        fprintf(stderr,
                "digits: error reading %s: %s\n",
                path,
                zerr == Z_ERRNO ? strerror(errno) : zmsg);
        rc = -1;
    }
    gzclose(gz);
    if (rc == 0 && n < 10) {
        fprintf(stderr, "digits: %s: only %zu rows, need at least 10\n", path, n);
        rc = -1;
    }
    if (rc == 0) {
        size_t *order = xcalloc(n, sizeof *order);
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        uint64_t s = SPLIT_SEED;
        shuffle_idx(order, n, &s);
        size_t ntrain = n * 8 / 10;
        take_rows(train, x, y, order, 0, ntrain);
        take_rows(test, x, y, order, ntrain, n - ntrain);
        free(order);
    }
    free(x);
    free(y);
    return rc;
}

void dataset_free(struct dataset *d)
{
    free(d->x);
    free(d->y);
    d->x = NULL;
    d->y = NULL;
    d->n = 0;
}

/* ----------------------------------------------------------------- model */
/* Flattened parameter layout.
 *   hidden == 0: W[10][64], b[10]                 (softmax regression)
 *   hidden == H: W1[H][64], b1[H], W2[10][H], b2[10]  (ReLU MLP) */

size_t param_count(int hidden)
{
    size_t h = (size_t)hidden;
    if (h == 0)
        return NCLASS * NPIX + NCLASS;
    return h * NPIX + h + NCLASS * h + NCLASS;
}

void params_init(float *p, int hidden, uint64_t seed)
{
    size_t h = (size_t)hidden;
    memset(p, 0, param_count(hidden) * sizeof *p);
    if (h == 0)
        return; /* zeros are a fine start for a convex model */
    uint64_t s = seed ^ UINT64_C(0xD1B54A32D192ED03);
    double a1 = sqrt(6.0 / (double)(NPIX + h));
    double a2 = sqrt(6.0 / (double)(h + NCLASS));
    for (size_t i = 0; i < h * NPIX; i++)
        p[i] = (float)((2.0 * rng_uniform(&s) - 1.0) * a1);
    float *w2 = p + h * NPIX + h;
    for (size_t i = 0; i < NCLASS * h; i++)
        w2[i] = (float)((2.0 * rng_uniform(&s) - 1.0) * a2);
}

static float dot(const float *a, const float *b, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Logits z for one example; h receives the hidden activations. */
static void forward(const float *p, size_t h, const float *x, float *hid, double *z)
{
    if (h == 0) {
        const float *b = p + NCLASS * NPIX;
        for (size_t c = 0; c < NCLASS; c++)
            z[c] = (double)(b[c] + dot(p + c * NPIX, x, NPIX));
        return;
    }
    const float *b1 = p + h * NPIX, *w2 = b1 + h, *b2 = w2 + NCLASS * h;
    for (size_t j = 0; j < h; j++) {
        float a = b1[j] + dot(p + j * NPIX, x, NPIX);
        hid[j] = a > 0.0f ? a : 0.0f;
    }
    for (size_t c = 0; c < NCLASS; c++)
        z[c] = (double)(b2[c] + dot(w2 + c * h, hid, h));
}

/* Turns logits into probabilities in place; returns -log p[label]. */
static double softmax_xent(double *z, int label)
{
    double m = z[0];
    for (int c = 1; c < NCLASS; c++)
        if (z[c] > m)
            m = z[c];
    double sum = 0.0;
    for (int c = 0; c < NCLASS; c++)
        sum += exp(z[c] - m);
    double lse = m + log(sum);
    double loss = lse - z[label];
    for (int c = 0; c < NCLASS; c++)
        z[c] = exp(z[c] - lse);
    return loss;
}

double model_grad(const float *p,
                  int hidden,
                  const struct dataset *d,
                  const size_t *idx,
                  size_t nidx,
                  float *grad)
{
    size_t h = (size_t)hidden;
    size_t np = param_count(hidden);
    float *hid = xcalloc(h + 1, sizeof *hid), *dh = xcalloc(h + 1, sizeof *dh);
    double z[NCLASS], loss = 0.0;
    memset(grad, 0, np * sizeof *grad);
    for (size_t k = 0; k < nidx; k++) {
        const float *x = d->x + idx[k] * NPIX;
        int label = d->y[idx[k]];
        forward(p, h, x, hid, z);
        loss += softmax_xent(z, label);
        float dz[NCLASS];
        for (int c = 0; c < NCLASS; c++)
            dz[c] = (float)((z[c] - (c == label ? 1.0 : 0.0)) / (double)nidx);
        if (h == 0) {
            float *gb = grad + NCLASS * NPIX;
            for (size_t c = 0; c < NCLASS; c++) {
                float *gw = grad + c * NPIX;
                for (size_t i = 0; i < NPIX; i++)
                    gw[i] += dz[c] * x[i];
                gb[c] += dz[c];
            }
            continue;
        }
        const float *w2 = p + h * NPIX + h;
        float *gb1 = grad + h * NPIX, *gw2 = gb1 + h, *gb2 = gw2 + NCLASS * h;
        memset(dh, 0, h * sizeof *dh);
        for (size_t c = 0; c < NCLASS; c++) {
            for (size_t j = 0; j < h; j++) {
                gw2[c * h + j] += dz[c] * hid[j];
                dh[j] += dz[c] * w2[c * h + j];
            }
            gb2[c] += dz[c];
        }
        for (size_t j = 0; j < h; j++) {
            if (hid[j] <= 0.0f)
                continue;
            float *gw1 = grad + j * NPIX;
            for (size_t i = 0; i < NPIX; i++)
                gw1[i] += dh[j] * x[i];
            gb1[j] += dh[j];
        }
    }
    free(hid);
    free(dh);
    return nidx ? loss / (double)nidx : 0.0;
}

double model_eval(const float *p, int hidden, const struct dataset *d, double *mean_loss)
{
    size_t h = (size_t)hidden, correct = 0;
    float *hid = xcalloc(h + 1, sizeof *hid);
    double z[NCLASS], loss = 0.0;
    for (size_t k = 0; k < d->n; k++) {
        forward(p, h, d->x + k * NPIX, hid, z);
        int best = 0;
        for (int c = 1; c < NCLASS; c++)
            if (z[c] > z[best])
                best = c;
        correct += best == d->y[k];
        loss += softmax_xent(z, d->y[k]);
    }
    free(hid);
    if (mean_loss)
        *mean_loss = d->n ? loss / (double)d->n : 0.0;
    return d->n ? (double)correct / (double)d->n : 0.0;
}

/* ------------------------------------------------------------ checkpoints */
/* File: "DGTCKPT1", u32le step, u32le hidden, u32le nparams,
 *       nparams x float32le, u32le crc32 (zlib) of all preceding bytes. */

static void put_u32le(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (k < 0 || (size_t)k >= sizeof tmp) {
        fprintf(stderr, "digits: path too long: %s\n", path);
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "digits: cannot create %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    int ok = fwrite(data, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok || rename(tmp, path) != 0) {
        if (ok)
            saved = errno;
        fprintf(stderr, "digits: cannot write %s: %s\n", path, strerror(saved));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int ckpt_write(const char *dir, const char *name, long step, int hidden, const float *p, size_t n)
{
    char path[PATH_MAX];
    int k = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= sizeof path) {
        fprintf(stderr, "digits: checkpoint path too long in %s\n", dir);
        return -1;
    }
    size_t len = 8 + 12 + 4 * n + 4;
    unsigned char *b = xcalloc(len, 1);
    memcpy(b, CKPT_MAGIC, 8);
    put_u32le(b + 8, (uint32_t)step);
    put_u32le(b + 12, (uint32_t)hidden);
    put_u32le(b + 16, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        put_u32le(b + 20 + 4 * i, u);
    }
    put_u32le(b + len - 4, (uint32_t)crc32(0L, b, (uInt)(len - 4)));
    int rc = write_file_atomic(path, b, len);
    free(b);
    return rc;
}

int ckpt_read(const char *path, long *step, int *hidden, float **p, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "digits: cannot open checkpoint %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = xcalloc(cap, 1);
    for (;;) {
        if (len == cap) {
            if (cap >= (size_t)FRAME_MAX)
                break;
            cap *= 2;
            b = xrealloc(b, cap, 1);
        }
        size_t got = fread(b + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    const char *why = NULL;
    uint32_t np = 0, hd = 0;
    if (bad)
        why = "read error";
    else if (len < 24 || memcmp(b, CKPT_MAGIC, 8) != 0)
        why = "not a digits checkpoint";
    else {
        hd = get_u32le(b + 12);
        np = get_u32le(b + 16);
        if (hd > 65536 || np != param_count((int)hd) || len != 24 + 4 * (size_t)np)
            why = "bad size";
        else if (get_u32le(b + len - 4) != (uint32_t)crc32(0L, b, (uInt)(len - 4)))
            why = "checksum mismatch";
    }
    if (why) {
        fprintf(stderr, "digits: checkpoint %s: %s\n", path, why);
        free(b);
        return -1;
    }
    *step = (long)get_u32le(b + 8);
    *hidden = (int)hd;
    *n = np;
    *p = xcalloc(np, sizeof **p);
    for (size_t i = 0; i < np; i++) {
        uint32_t u = get_u32le(b + 20 + 4 * i);
        memcpy(&(*p)[i], &u, 4);
    }
    free(b);
    return 0;
}

/* -------------------------------------------------------------- hypertune */
/* Mirrors Google's cloudml-hypertune library (hypertune.HyperTune()
 * .report_hyperparameter_tuning_metric): each report appends a record to an
 * in-process deque of the last 100 and the whole file is rewritten (here
 * through a temporary file and rename(), so a reader never sees a partial
 * file), one json.dumps(record, sort_keys=True) line per record:
 *   {"checkpoint_path": "", "global_step": "300", "timestamp": 1700000000.123456,
 *    "<tag>": "0.95", "trial": "1"}
 * The file is $CLOUD_ML_HP_METRIC_FILE, else /tmp/hypertune/output.metrics;
 * the tag $CLOUD_ML_HP_METRIC_TAG, else "training/hptuning/metric"; the
 * trial $CLOUD_ML_TRIAL_ID, else task.trial, else "0".
 *
 * Unlike the library, which writes whenever it is called, the example only
 * reports when it runs as a tuning trial (CLOUD_ML_TRIAL_ID or task.trial
 * set) or when CLOUD_ML_HP_METRIC_FILE names a file: a plain run writes
 * nothing under /tmp. */

void hypertune_init(struct hypertune *h, const char *cluster_trial)
{
    const char *path = getenv("CLOUD_ML_HP_METRIC_FILE");
    const char *tag = getenv("CLOUD_ML_HP_METRIC_TAG");
    const char *trial = getenv("CLOUD_ML_TRIAL_ID");
    int has_path = path && *path;
    if (!trial || !*trial)
        trial = cluster_trial && *cluster_trial ? cluster_trial : NULL;
    h->enabled = has_path || trial;
    h->path = strdup(has_path ? path : "/tmp/hypertune/output.metrics");
    if (!h->path) {
        fprintf(stderr, "digits: out of memory\n");
        exit(1);
    }
    h->tag = tag && *tag ? tag : "training/hptuning/metric";
    snprintf(h->trial, sizeof h->trial, "%s", trial ? trial : "0");
    h->records = json_array();
}

/* A double as Python's str(float) writes it: the shortest form that reads
 * back to the same value, with ".0" on integral values ("0.95", "1.0"). */
static void format_py_float(double v, char *out, size_t cap)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    if (isfinite(v) && !strpbrk(out, ".e")) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, ".0");
    }
}

int hypertune_report(struct hypertune *h, long step, double metric)
{
    if (!h->enabled)
        return 0;
    char sstep[32], sval[40];
    snprintf(sstep, sizeof sstep, "%ld", step);
    format_py_float(metric, sval, sizeof sval);
    json_t *rec = json_object();
    json_object_set_new(rec, "checkpoint_path", json_string(""));
    json_object_set_new(rec, "global_step", json_string(sstep));
    json_object_set_new(rec, "timestamp", json_real(floor(wall_now() * 1e6) / 1e6));
    json_object_set_new(rec, "trial", json_string(h->trial));
    json_object_set_new(rec, h->tag, json_string(sval));
    json_t *arr = h->records;
    json_array_append_new(arr, rec);
    while (json_array_size(arr) > HT_MAX_RECORDS)
        json_array_remove(arr, 0);

    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", h->path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (mkdir_p(dir) != 0) {
            fprintf(
                stderr, "digits: cannot create metric directory %s: %s\n", dir, strerror(errno));
            return -1;
        }
    }
    size_t cap = 4096, len = 0;
    char *out = xcalloc(cap, 1);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char *line = json_dumps(json_array_get(arr, i), JSON_SORT_KEYS | JSON_REAL_PRECISION(16));
        if (!line) {
            fprintf(stderr, "digits: cannot encode metric record\n");
            free(out);
            return -1;
        }
        size_t l = strlen(line);
        while (len + l + 2 > cap) {
            cap *= 2;
            out = xrealloc(out, cap, 1);
        }
        memcpy(out + len, line, l);
        len += l;
        out[len++] = '\n';
        free(line);
    }
    int rc = write_file_atomic(h->path, out, len);
    free(out);
    return rc;
}

void hypertune_free(struct hypertune *h)
{
    json_decref(h->records);
    free(h->path);
    h->records = NULL;
    h->path = NULL;
}
