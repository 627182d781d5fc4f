/* SPDX-License-Identifier: Apache-2.0
 * main.c: `trainyardd`, the trainyard service: the ml v1 projects.jobs REST API over a
 * durable store, running each job under its own supervisor process. Options come from the
 * command line over a config file (docs/service.md); SIGTERM or SIGINT stops the service
 * cleanly (running jobs carry on under their supervisors and are picked up by the next
 * start). Each job runs under its own `trainyard-supervisor` process
 * (src/trainyard-supervisor). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "alloc.h"
#include "daemon.h"
#include "fdutil.h"
#include "kvconf.h"
#include "loop.h"
#include "macro.h"
#include "parse.h"
#include "runtime.h"
#include "sigpipe.h"
#include "statedir.h"
#include "strv.h"
#include "timeutil.h"
#include "ty-config.h"

/* Loopback: without --auth-tokens only programs on this machine may reach the API (a
 * non-loopback address needs tokens). 8080: the usual unprivileged port of a local HTTP API. */
#define DEFAULT_LISTEN "127.0.0.1:8080"
#define DEFAULT_CONFIG "/etc/trainyard/trainyardd.conf"

static const char usage[] =
    "Usage: trainyardd [OPTIONS]\n"
    "\n"
    "The trainyard service: the AI Platform Training REST API (ml v1 projects.jobs) for\n"
    "jobs run on this machine. Stop it with SIGTERM; running jobs carry on and are picked up\n"
    "again by the next start.\n"
    "\n"
    "Options (each may also be set in the config file as `name = value`):\n"
    "  --listen=HOST:PORT        address to serve on (default 127.0.0.1:8080; port 0 picks\n"
    "                            a free port). Non-loopback addresses need --auth-tokens\n"
    "  --state-dir=DIR           store, logs and job directories (default $TRAINYARD_HOME,\n"
    "                            else $XDG_STATE_HOME/trainyard, else\n"
    "                            ~/.local/state/trainyard)\n"
    "  --auth-tokens=FILE        bearer tokens: lines 'TOKEN PROJECT[,PROJECT...]' ('*' for\n"
    "                            every project); the file must be mode 600\n"
    "  --runtime=NAME            runtime of jobs without a trainyard-runtime label:\n"
    "                            process (default), container or slurm\n"
    "  --max-running-jobs=N      jobs run at once; more wait QUEUED (default: no limit;\n"
    "                            0 runs none, to measure the API and store alone)\n"
    "  --grace-period=SECONDS    SIGTERM-to-SIGKILL time when replicas are stopped\n"
    "                            (default 10)\n"
    "  --insecure-registries=LIST  loopback registries pulled from over plain HTTP\n"
    "                            (comma-separated host:port)\n"
    "  --container-max-memory=BYTES  cap on any container's memory limit\n"
    "  --slurm-partition=NAME, --slurm-account=NAME, --slurm-qos=NAME\n"
    "                            sbatch's --partition/--account/--qos for slurm jobs\n"
    "  --slurm-sbatch-args=ARGS  more sbatch options for slurm jobs (split at spaces)\n"
    "  --slurm-memory=machine|none  ask Slurm for each machine type's memory (default),\n"
    "                            or leave memory to the cluster's defaults\n"
    "  --slurm-replicas=auto|process|container  on the nodes, run each replica's command as a\n"
    "                            program, or its image; auto: programs when every role has\n"
    "                            a containerCommand (default)\n"
    "  --project-user=PROJECT:USER  when trainyardd runs as root, run the process-runtime\n"
    "                            jobs of PROJECT as USER ('*' for every other project);\n"
    "                            repeatable (one `project-user =` line each in the file)\n"
    "  --allow-root-jobs         as root, run process-runtime jobs of projects without an\n"
    "                            unprivileged project-user, and slurm-runtime jobs (sbatch\n"
    "                            runs them as trainyardd's user), as root (refused otherwise)\n"
    "  --job-dir-root=DIR        a local jobDir must lie inside DIR (repeatable; without\n"
    "                            one, only URIs such as gs://... are taken as jobDir)\n"
    "  --log-file=FILE           diagnostics of job supervisors (default\n"
    "                            STATE_DIR/trainyardd.log)\n"
    "  --config=FILE             config file (default " DEFAULT_CONFIG " when it exists)\n"
    "  --verbose                 log every request\n"
    "  --help, --version\n";

enum {
    O_LISTEN = 1,
    O_STATE_DIR,
    O_AUTH,
    O_RUNTIME,
    O_MAX_RUNNING,
    O_GRACE,
    O_INSECURE,
    O_MAX_MEMORY,
    O_SLURM_PARTITION,
    O_SLURM_ACCOUNT,
    O_SLURM_QOS,
    O_SLURM_SBATCH_ARGS,
    O_SLURM_MEMORY,
    O_SLURM_REPLICAS,
    O_PROJECT_USER,
    O_ALLOW_ROOT,
    O_JOB_DIR_ROOT,
    O_LOG_FILE,
    O_CONFIG,
    O_VERBOSE,
    O_HELP,
    O_VERSION,
};

static const struct option options[] = {
    {"listen", required_argument, NULL, O_LISTEN},
    {"state-dir", required_argument, NULL, O_STATE_DIR},
    {"auth-tokens", required_argument, NULL, O_AUTH},
    {"runtime", required_argument, NULL, O_RUNTIME},
    {"max-running-jobs", required_argument, NULL, O_MAX_RUNNING},
    {"grace-period", required_argument, NULL, O_GRACE},
    {"insecure-registries", required_argument, NULL, O_INSECURE},
    {"container-max-memory", required_argument, NULL, O_MAX_MEMORY},
    {"slurm-partition", required_argument, NULL, O_SLURM_PARTITION},
    {"slurm-account", required_argument, NULL, O_SLURM_ACCOUNT},
    {"slurm-qos", required_argument, NULL, O_SLURM_QOS},
    {"slurm-sbatch-args", required_argument, NULL, O_SLURM_SBATCH_ARGS},
    {"slurm-memory", required_argument, NULL, O_SLURM_MEMORY},
    {"slurm-replicas", required_argument, NULL, O_SLURM_REPLICAS},
    {"project-user", required_argument, NULL, O_PROJECT_USER},
    {"allow-root-jobs", optional_argument, NULL, O_ALLOW_ROOT},
    {"job-dir-root", required_argument, NULL, O_JOB_DIR_ROOT},
    {"log-file", required_argument, NULL, O_LOG_FILE},
    {"config", required_argument, NULL, O_CONFIG},
    {"verbose", no_argument, NULL, O_VERBOSE},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {NULL, 0, NULL, 0},
};

void tyd_log(const char *fmt, ...)
{
    char ts[40], msg[1400];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s trainyardd: %s\n", ty_rfc3339(ty_now_usec(), 3, ts, sizeof(ts)), msg);
}

void tyd_kick(struct tyd *d)
{
    uint64_t one = 1;
    (void)!write(d->kick_fd, &one, sizeof(one));
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
}

/* Apply one option (from the command line or the config file; @where names it in errors). */
static int apply(struct tyd *d, int id, const char *v, const char *where, struct ty_error *err)
{
    int64_t n;
    double secs;

    switch (id) {
    case O_LISTEN:
        set_str(&d->listen, v);
        return 0;
    case O_STATE_DIR:
        set_str(&d->state_dir, v);
        return 0;
    case O_AUTH:
        set_str(&d->auth_file, v);
        return 0;
    case O_RUNTIME:
        if (!ty_runtime_known(v))
            return ty_error_set(
                err, EINVAL, "%s: unknown runtime '%s' (known: %s)", where, v, ty_runtime_names());
        set_str(&d->runtime, v);
        return 0;
    case O_MAX_RUNNING:
        if (ty_parse_int64(v, 0, 100000, &n) < 0)
            return ty_error_set(
                err, EINVAL, "%s: expected a number from 0 to 100000 (got '%s')", where, v);
        d->max_running = (long)n;
        return 0;
    case O_GRACE:
        if (ty_parse_double(v, &secs) < 0 || secs < 0 || secs > 86400)
            return ty_error_set(
                err, EINVAL, "%s: expected seconds from 0 to 86400 (got '%s')", where, v);
        d->grace_usec = secs > 0 ? (int64_t)(secs * 1e6) : 1;
        return 0;
    case O_INSECURE:
        return setenv("TRAINYARD_INSECURE_REGISTRIES", v, 1) < 0 ? -errno : 0;
    case O_MAX_MEMORY:
        if (ty_parse_int64(v, 4 * 1024 * 1024, INT64_MAX, &n) < 0)
            return ty_error_set(err,
                                EINVAL,
                                "%s: expected a number of bytes of at least 4194304 (got '%s')",
                                where,
                                v);
        return setenv("TRAINYARD_CONTAINER_MAX_MEMORY", v, 1) < 0 ? -errno : 0;
    /* The slurm runtime reads its settings from the environment the supervisors inherit. */
    case O_SLURM_PARTITION:
        return setenv("TRAINYARD_SLURM_PARTITION", v, 1) < 0 ? -errno : 0;
    case O_SLURM_ACCOUNT:
        return setenv("TRAINYARD_SLURM_ACCOUNT", v, 1) < 0 ? -errno : 0;
    case O_SLURM_QOS:
        return setenv("TRAINYARD_SLURM_QOS", v, 1) < 0 ? -errno : 0;
    case O_SLURM_SBATCH_ARGS:
        return setenv("TRAINYARD_SLURM_SBATCH_ARGS", v, 1) < 0 ? -errno : 0;
    case O_SLURM_MEMORY:
        if (strcmp(v, "machine") != 0 && strcmp(v, "none") != 0)
            return ty_error_set(
                err, EINVAL, "%s: expected 'machine' or 'none' (got '%s')", where, v);
        return setenv("TRAINYARD_SLURM_MEMORY", v, 1) < 0 ? -errno : 0;
    case O_SLURM_REPLICAS:
        if (strcmp(v, "auto") != 0 && strcmp(v, "process") != 0 && strcmp(v, "container") != 0)
            return ty_error_set(
                err, EINVAL, "%s: expected 'auto', 'process' or 'container' (got '%s')", where, v);
        return setenv("TRAINYARD_SLURM_REPLICAS", v, 1) < 0 ? -errno : 0;
    case O_PROJECT_USER:
        return tyd_runas_add(&d->runas, v, where, err);
    case O_ALLOW_ROOT:
        if (v && strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return ty_error_set(err, EINVAL, "%s: expected 'true' or 'false' (got '%s')", where, v);
        d->allow_root_jobs = !v || strcmp(v, "true") == 0;
        return 0;
    case O_JOB_DIR_ROOT:
        return tyd_jobdir_root_add(&d->job_dir_roots, v, where, err);
    case O_LOG_FILE:
        set_str(&d->log_file, v);
        return 0;
    case O_VERBOSE:
        d->verbose = !v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0;
        return 0;
    default:
        return ty_error_set(err, EINVAL, "%s: not a setting", where);
    }
}

static int load_config(struct tyd *d, const char *path, bool must_exist, struct ty_error *err)
{
    struct ty_kv *kv = NULL;
    size_t n = 0;
    int r = ty_kvconf_load(path, &kv, &n, err);

    if (r == -ENOENT && !must_exist)
        return 0;
    if (r < 0)
        return ty_error_prefix(err, r, "config");
    for (size_t i = 0; i < n && r >= 0; i++) {
        char where[600];
        const struct option *o = options;
        (void)snprintf(where, sizeof(where), "%s:%d: %s", path, kv[i].line, kv[i].key);
        while (o->name && strcmp(o->name, kv[i].key) != 0)
            o++;
        if (!o->name || o->val == O_CONFIG || o->val == O_HELP || o->val == O_VERSION)
            r = ty_error_set(err, EINVAL, "%s: unknown setting (see trainyardd --help)", where);
        else
            r = apply(d, o->val, kv[i].value, where, err);
    }
    ty_kvconf_free(kv, n);
    return r;
}

static void release(struct tyd *d);

static int parse_args(struct tyd *d, int argc, char **argv, struct ty_error *err)
{
    const char *config = NULL;
    int c, r;

    /* First pass: --config, --help, --version; the file is read before the other flags,
     * which override it. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
        if (c == O_CONFIG)
            config = optarg;
        else if (c == O_HELP) {
            fputs(usage, stdout);
            release(d);
            exit(0);
        } else if (c == O_VERSION) {
            printf("trainyardd %s\n", TY_VERSION);
            release(d);
            exit(0);
        } else if (c == '?')
            return ty_error_set(err, EINVAL, "unknown option '%s' (see --help)", argv[optind - 1]);
        else if (c == ':')
            return ty_error_set(err, EINVAL, "%s needs a value", argv[optind - 1]);
    }
    if (optind < argc)
        return ty_error_set(err, EINVAL, "unexpected argument '%s' (see --help)", argv[optind]);
    r = load_config(d, config ? config : DEFAULT_CONFIG, config != NULL, err);
    if (r < 0)
        return r;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
        char where[64];
        if (c == O_CONFIG)
            continue;
        (void)snprintf(where, sizeof(where), "--%s", options[c - 1].name);
        r = apply(d, c, optarg, where, err);
        if (r < 0)
            return r;
    }
    return 0;
}

static void on_sig_pipe(struct ty_loop *loop, int fd, short revents, void *data)
{
    unsigned char c;
    while (read(fd, &c, 1) == 1)
        if (c == SIGTERM || c == SIGINT)
            ty_loop_stop(loop);
}

static int serve(struct tyd *d)
{
    static const int sigs[] = {SIGTERM, SIGINT};
    struct sigaction ign = {.sa_handler = SIG_IGN};
    _cleanup_free_ char *db = NULL;
    struct ty_loop *loop = NULL;
    struct ty_error e = {0};
    int r, rc, sig_fd;

    if (ty_mkdir_p(d->state_dir, 0755, &e) < 0)
        goto fail;
    if (!d->log_file)
        d->log_file = xasprintf("%s/trainyardd.log", d->state_dir);
    if (d->auth_file && tyd_auth_load(d->auth_file, &d->auth, &e) < 0)
        goto fail;
    db = xasprintf("%s/%s", d->state_dir, TY_STORE_FILE);
    if (ty_store_open(db, &d->store, &e) < 0)
        goto fail;
    d->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sig_fd = d->kick_fd < 0 ? -errno : ty_sigpipe_install(sigs, TY_ARRAY_SIZE(sigs));
    if (sig_fd < 0) {
        (void)ty_error_set(&e, -sig_fd, "%s", strerror(-sig_fd));
        goto fail;
    }
    (void)sigaction(SIGPIPE, &ign, NULL);
    (void)sigaction(SIGHUP, &ign, NULL);
    loop = ty_loop_new();
    ty_loop_add_fd(loop, sig_fd, POLLIN, on_sig_pipe, d);
    d->queue = tyd_queue_new();
    if (tyd_dispatch_init(d, loop, &e) < 0 || tyd_http_start(d, &e) < 0)
        goto fail;
    tyd_runas_log_start(d);
    tyd_log("listening on http://%.*s:%u (state %s, runtime %s%s)",
            (int)(strrchr(d->listen, ':') - d->listen),
            d->listen,
            d->port,
            d->state_dir,
            d->runtime,
            d->auth ? ", tokens required" : "");
    r = ty_loop_run(loop);
    tyd_log("stopping%s", r < 0 ? " (event loop failed)" : "");
    rc = r < 0 ? 1 : 0;
    goto out;
fail:
    tyd_log("%s", ty_error_msg(&e));
    rc = 1;
out:
    tyd_http_stop(d);
    tyd_dispatch_free(d->dispatch);
    tyd_queue_free(d->queue);
    ty_loop_free(loop);
    ty_store_close(d->store);
    tyd_auth_free(d->auth);
    return rc;
}

static void release(struct tyd *d)
{
    free(d->listen);
    free(d->state_dir);
    free(d->auth_file);
    free(d->runtime);
    free(d->log_file);
    tyd_runas_free(d->runas);
    ty_strv_free(d->job_dir_roots);
}

int main(int argc, char **argv)
{
    struct tyd d = {.max_running = -1, .kick_fd = -1};
    struct ty_error e = {0};
    int rc;

    setvbuf(stderr, NULL, _IOLBF, 0);
    d.listen = xstrdup(DEFAULT_LISTEN);
    d.runtime = xstrdup("process");
    d.grace_usec = 10 * INT64_C(1000000); /* as `local train`, and `docker stop` */
    d.state_dir = ty_statedir_default();
    if (parse_args(&d, argc, argv, &e) < 0) {
        fprintf(stderr, "trainyardd: %s\n", ty_error_msg(&e));
        release(&d);
        return 2;
    }
    if (!d.state_dir) {
        fprintf(stderr, "trainyardd: no state directory: give --state-dir or set TRAINYARD_HOME\n");
        release(&d);
        return 2;
    }
    rc = serve(&d);
    release(&d);
    return rc;
}
