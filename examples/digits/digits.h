/* digits.h - shared declarations for the digits data-parallel
 * parameter-server example (see README.md and the protocol notes in net.c). */
#ifndef DIGITS_H
#define DIGITS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define NPIX   64
#define NCLASS 10

/* Wire protocol (details at the top of net.c). */
#define OP_HELLO      0x01u
#define OP_PULL       0x02u
#define OP_PUSH       0x03u
#define OP_SNAP       0x04u
#define OP_HELLO_OK   0x81u
#define OP_PARAMS     0x82u
#define OP_ERROR      0xffu
#define FRAME_HDR     12u         /* u32 len, u8 op, u8 pad[3], u32 arg */
#define FRAME_MAX     (64u << 20) /* largest accepted frame body */
#define IO_TIMEOUT_MS 600000      /* a peer silent this long is an error */

/* --optimizer: plain SGD, or SGD with heavy-ball momentum MOMENTUM
 * (v = MOMENTUM * v + g; p -= lr * v). */
enum optimizer { OPT_SGD, OPT_MOMENTUM };
#define MOMENTUM 0.9

/* Command-line options; every role parses the same argv. */
struct options {
    long steps;
    double lr;
    enum optimizer optimizer;
    long batch;
    long hidden;
    long long seed;
    long ckpt_every;
    const char *job_dir; /* NULL: no checkpoints */
    const char *data_path;
};

/* A split of the digits data: x is n*NPIX floats in [0,1], y the labels. */
struct dataset {
    float *x;
    int *y;
    size_t n;
};

/* Growable byte buffer. */
struct buf {
    unsigned char *p;
    size_t cap;
};

/* Connections from a worker or the master to all parameter servers. */
struct ps_client {
    int n;
    int *fd;
    const char *const *addr;
    size_t *off, *len;
    size_t ntotal;
    unsigned char *wire;
    struct buf rx;
};

extern volatile sig_atomic_t g_stop;

/* util (model.c) */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n, size_t size);
double wall_now(void);
double mono_now(void);
void sleep_ms(long ms);
int mkdir_p(const char *path);
void shard_range(size_t n, int parts, int i, size_t *off, size_t *len);

/* PRNG (splitmix64) and minibatch sampling (model.c) */
uint64_t rng_next(uint64_t *s);
void shuffle_idx(size_t *a, size_t n, uint64_t *s);
struct sampler {
    size_t *idx;
    size_t n, pos;
    uint64_t rng;
};
void sampler_init(struct sampler *s, size_t n_rows, int part, int parts, uint64_t seed);
void sampler_next(struct sampler *s, size_t *out, size_t batch);
void sampler_free(struct sampler *s);

/* data and model (model.c) */
int load_digits(const char *path, struct dataset *train, struct dataset *test);
void dataset_free(struct dataset *d);
size_t param_count(int hidden);
void params_init(float *p, int hidden, uint64_t seed);
double model_grad(const float *p,
                  int hidden,
                  const struct dataset *d,
                  const size_t *idx,
                  size_t nidx,
                  float *grad);
double model_eval(const float *p, int hidden, const struct dataset *d, double *mean_loss);

/* checkpoints and hypertune (model.c) */
int write_file_atomic(const char *path, const void *data, size_t len);
int ckpt_write(const char *dir, const char *name, long step, int hidden, const float *p, size_t n);
int ckpt_read(const char *path, long *step, int *hidden, float **p, size_t *n);
struct hypertune {
    int enabled; /* a tuning trial, or CLOUD_ML_HP_METRIC_FILE set: see hypertune_init */
    char *path;
    const char *tag;
    char trial[128];
    void *records; /* json_t array of the last 100 reports */
};
void hypertune_init(struct hypertune *h, const char *cluster_trial);
int hypertune_report(struct hypertune *h, long step, double metric);
void hypertune_free(struct hypertune *h);

/* network (net.c) */
const char *net_error(void);
int split_hostport(const char *addr, char *host, size_t hcap, char *port, size_t pcap);
int net_listen(const char *addr);
int net_connect_retry(const char *what, const char *addr);
int net_send_frame(int fd, unsigned op, uint32_t arg, const void *payload, size_t plen);
int net_recv_frame(
    int fd, int timeout_ms, unsigned *op, uint32_t *arg, struct buf *b, size_t *plen);
void put_u32be(unsigned char *p, uint32_t v);
uint32_t get_u32be(const unsigned char *p);
void floats_to_wire(const float *f, size_t n, unsigned char *out);
void wire_to_floats(const unsigned char *in, size_t n, float *f);
int psc_open(
    struct ps_client *c, const char *const *addrs, int n, size_t ntotal, uint32_t *version);
int psc_fetch(struct ps_client *c, unsigned op, uint32_t v, float *params, uint32_t *version);
int psc_push(struct ps_client *c, uint32_t step, const float *grad);
void psc_close(struct ps_client *c);

/* parameter server (ps.c): run_ps listens on addr's port; run_ps_on serves on
 * the listening socket lfd (non-blocking; closed at the end), addr only names it */
int run_ps(const struct options *o, const char *addr, int index, int nps, int nworkers);
int run_ps_on(const struct options *o, int lfd, const char *addr, int index, int nps, int nworkers);

#endif
