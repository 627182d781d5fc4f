/* SPDX-License-Identifier: Apache-2.0
 * main.c: `trainyardd`, the trainyard service: the ml v1 projects.jobs REST API over a
 * durable store, running each job under its own supervisor process. Options come from the
 * command line over a config file (docs/service.md); SIGTERM or SIGINT stops the service
 * cleanly (running jobs carry on under their supervisors and are picked up by the next
 * start); SIGHUP reads the tokens file again. Each job runs under its own `trainyard-supervisor`
 * process (src/trainyard-supervisor). */
#include <dirent.h>
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
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admission.h"
#include "alloc.h"
#include "buf.h"
#include "daemon.h"
#include "fdutil.h"
#include "imageref.h"
#include "jobcache.h"
#include "jobenv.h"
#include "kvconf.h"
#include "loop.h"
#include "macro.h"
#include "parse.h"
#include "runtime.h"
#include "sigpipe.h"
#include "statedir.h"
#include "statemode.h"
#include "strv.h"
#include "suggest.h"
#include "timeutil.h"
#include "ty-config.h"

/* AI Platform's smallest scheduling.maxWaitTime (30 minutes): the default of
 * --shortest-max-wait-time. */
#define DEFAULT_MIN_WAIT_S 1800
/* Loopback: without --auth-tokens only programs on this machine may reach the API (a
 * non-loopback address needs tokens). 8080: the usual unprivileged port of a local HTTP API. */
#define DEFAULT_LISTEN "127.0.0.1:8080"
#define DEFAULT_CONFIG "/etc/trainyard/trainyardd.conf"
/* The HTTP front's limits (docs/service.md#limits). 30 s: far longer than any client takes
 * to send a request, short enough that stalled ones free their place soon. 1000 connections
 * stay under the usual soft limit of 1024 file descriptors. 200 per address: the 100-client
 * load test and its followed streams from one address fit; five addresses cannot take every
 * place of the others. */
#define DEFAULT_CONN_TIMEOUT_S 30u
#define DEFAULT_MAX_CONNS      1000u
#define DEFAULT_MAX_CONNS_ADDR 200u

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
    "                            every project); the file must be mode 600; SIGHUP reads it\n"
    "                            again\n"
    "  --tls-cert=FILE, --tls-key=FILE  serve HTTPS with this PEM certificate (chain) and key\n"
    "  --allow-insecure-http     allow plain HTTP on a non-loopback address (logs a warning)\n"
    "  --allowed-hosts=LIST      more names clients reach the service by (comma-separated\n"
    "                            NAME or NAME:PORT; '*' for any): other Host headers get 403\n"
    "  --connection-timeout=SECONDS  close a connection idle, or sending a request, this\n"
    "                            long (default 30)\n"
    "  --max-connections=N       open connections at once (default 1000)\n"
    "  --max-connections-per-address=N  open connections from one client: an address, or\n"
    "                            on loopback a local user (default 200)\n"
    "  --runtime=NAME            runtime of jobs without a trainyard-runtime label:\n"
    "                            process (default), container or slurm\n"
    "  --max-running-jobs=N      jobs run at once; more wait QUEUED (default: no limit;\n"
    "                            0 runs none, to measure the API and store alone)\n"
    "  --capacity=cpus=N,memory=SIZE,gpus=TYPE:N[+TYPE:N...]\n"
    "                            what jobs may hold at once (docs/service.md#scheduling);\n"
    "                            default: the host's GPUs, CPUs and memory not counted\n"
    "  --gpu-devices=nvidia|stand-in  the GPUs of --capacity are the host's NVIDIA devices\n"
    "                            (default), or stand-ins with no device, for tests\n"
    "  --project-limit=PROJECT:jobs=N,cpus=N,memory=SIZE,gpus=TYPE:N\n"
    "                            the most a project's running jobs hold at once\n"
    "                            (repeatable; one `project-limit =` line each in the file)\n"
    "  --shortest-max-wait-time=SECONDS  the smallest scheduling.maxWaitTime accepted\n"
    "                            (default 1800, as AI Platform; tests and demos that want\n"
    "                            a short wait lower it)\n";
/* The rest of --help (C17 promises string literals of 4095 bytes only). */
static const char usage_more[] =
    "  --grace-period=SECONDS    SIGTERM-to-SIGKILL time when replicas are stopped\n"
    "                            (default 10)\n"
    "  --insecure-registries=LIST  loopback registries pulled from over plain HTTP\n"
    "                            (comma-separated host:port)\n"
    "  --container-max-memory=BYTES  cap on any container's memory limit (k/m/g/t suffix)\n"
    "  --slurm-partition=NAME, --slurm-account=NAME, --slurm-qos=NAME\n"
    "                            the allocation's --partition/--account/--qos (srun)\n"
    "  --slurm-sbatch-args=ARGS  more srun allocation options for slurm jobs (split)\n"
    "  --slurm-memory=machine|none  ask Slurm for each machine type's memory (default),\n"
    "                            or leave memory to the cluster's defaults\n"
    "  --slurm-replicas=auto|process|container  on the nodes, run each replica's command as a\n"
    "                            program, or its image; auto: programs when every role has\n"
    "                            a containerCommand (default)\n"
    "  --project-user=PROJECT:USER  when trainyardd runs as root, run the process-runtime\n"
    "                            jobs of PROJECT as USER ('*' for every other project);\n"
    "                            repeatable (one `project-user =` line each in the file)\n"
    "  --allow-root-jobs         as root, run process-runtime jobs of projects without an\n"
    "                            unprivileged project-user, and slurm-runtime jobs (srun\n"
    "                            runs them as trainyardd's user), as root (refused otherwise)\n"
    "  --job-dir-root=[PROJECT:]DIR  a local jobDir must lie inside DIR (PROJECT: of that\n"
    "                            project's jobs only; repeatable; without one, only URIs\n"
    "                            such as gs://... are taken as jobDir)\n"
    "  --leave-mounts            as root with the container runtime, only warn about a\n"
    "                            --job-dir-root or the state directory on a mount without\n"
    "                            nosuid,nodev (default: cover each with a nosuid,nodev mount)\n"
    "  --job-path=DIRS           PATH of the replicas run as programs (process runtime,\n"
    "                            slurm's too), which start from a defined environment, not\n"
    "                            this one (default " TY_JOB_PATH_DEFAULT ")\n"
    "  --log-file=FILE           diagnostics of job supervisors (default\n"
    "                            STATE_DIR/trainyardd.log)\n"
    "  --config=FILE             config file (default " DEFAULT_CONFIG " when it exists)\n"
    "  --verbose                 log every request\n"
    "  -h, --help, --version\n";

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
    O_LEAVE_MOUNTS,
    O_LOG_FILE,
    O_CONFIG,
    O_VERBOSE,
    O_HELP,
    O_VERSION,
    O_TLS_CERT,
    O_TLS_KEY,
    O_INSECURE_HTTP,
    O_ALLOWED_HOSTS,
    O_CONN_TIMEOUT,
    O_MAX_CONNS,
    O_MAX_CONNS_ADDR,
    O_CAPACITY,
    O_GPU_DEVICES,
    O_PROJECT_LIMIT,
    O_SHORTEST_WAIT,
    O_JOB_PATH,
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
    {"leave-mounts", optional_argument, NULL, O_LEAVE_MOUNTS},
    {"log-file", required_argument, NULL, O_LOG_FILE},
    {"config", required_argument, NULL, O_CONFIG},
    {"verbose", no_argument, NULL, O_VERBOSE},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {"tls-cert", required_argument, NULL, O_TLS_CERT},
    {"tls-key", required_argument, NULL, O_TLS_KEY},
    {"allow-insecure-http", no_argument, NULL, O_INSECURE_HTTP},
    {"allowed-hosts", required_argument, NULL, O_ALLOWED_HOSTS},
    {"connection-timeout", required_argument, NULL, O_CONN_TIMEOUT},
    {"max-connections", required_argument, NULL, O_MAX_CONNS},
    {"max-connections-per-address", required_argument, NULL, O_MAX_CONNS_ADDR},
    {"capacity", required_argument, NULL, O_CAPACITY},
    {"gpu-devices", required_argument, NULL, O_GPU_DEVICES},
    {"project-limit", required_argument, NULL, O_PROJECT_LIMIT},
    {"shortest-max-wait-time", required_argument, NULL, O_SHORTEST_WAIT},
    {"job-path", required_argument, NULL, O_JOB_PATH},
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

/* A boolean flag: given alone on the command line (@v NULL), or true/false in the file. */
static int set_bool(bool *dst, const char *v, const char *where, struct ty_error *err)
{
    if (!v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0)
        *dst = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0)
        *dst = false;
    else
        return ty_error_set(err, EINVAL, "%s: expected true or false (got '%s')", where, v);
    return 0;
}

static int
set_uint(unsigned *dst, const char *v, int64_t max, const char *where, struct ty_error *err)
{
    int64_t n;
    if (ty_parse_int64(v, 1, max, &n) < 0)
        return ty_error_set(err,
                            EINVAL,
                            "%s: expected a number from 1 to %lld (got '%s')",
                            where,
                            (long long)max,
                            v);
    *dst = (unsigned)n;
    return 0;
}

/* --allowed-hosts: comma-separated NAME, NAME:PORT or '*'. */
static int set_hosts(struct tyd *d, const char *v, const char *where, struct ty_error *err)
{
    _cleanup_free_ char *copy = xstrdup(v);
    char *save = NULL;

    d->allowed_hosts = ty_strv_free(d->allowed_hosts);
    d->allowed_hosts = xcalloc(1, sizeof(char *));
    for (char *h = strtok_r(copy, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
        h += strspn(h, " \t");
        h[strcspn(h, " \t")] = '\0';
        if (!*h)
            continue;
        if (strchr(h, '/') || strchr(h, '@'))
            return ty_error_set(err,
                                EINVAL,
                                "%s: '%s' is not a host name (give NAME or NAME:PORT, no "
                                "scheme or path)",
                                where,
                                h);
        ty_strv_push(&d->allowed_hosts, h);
    }
    return 0;
}

/* Check that @v is one of @values (NULL-terminated): else the error naming @where, the values
 * and the nearest one to @v, if one is near. */
static int
check_enum(const char *v, const char *const *values, const char *where, struct ty_error *err)
{
    struct ty_buf list = TY_BUF_INIT;
    const char *near;
    size_t n = 0;
    int r;

    for (; values[n]; n++)
        if (strcmp(v, values[n]) == 0)
            return 0;
    for (size_t i = 0; i < n; i++)
        ty_buf_printf(&list, "%s'%s'", i == 0 ? "" : i + 1 < n ? ", " : " or ", values[i]);
    near = ty_suggest_among(v, values);
    r = ty_error_set(err,
                     EINVAL,
                     "%s: expected %s (got '%s'%s%s%s)",
                     where,
                     ty_buf_str(&list),
                     v,
                     near ? "; did you mean '" : "",
                     near ? near : "",
                     near ? "'?" : "");
    ty_buf_release(&list);
    return r;
}

/* The options the runtimes read from the environment the supervisors inherit (the container
 * runtime's registries and memory cap, the slurm runtime's settings). */
static int apply_runtime_env(int id, const char *v, const char *where, struct ty_error *err)
{
    static const char *const env[] = {
        [O_INSECURE] = "TRAINYARD_INSECURE_REGISTRIES",
        [O_MAX_MEMORY] = "TRAINYARD_CONTAINER_MAX_MEMORY",
        [O_SLURM_PARTITION] = "TRAINYARD_SLURM_PARTITION",
        [O_SLURM_ACCOUNT] = "TRAINYARD_SLURM_ACCOUNT",
        [O_SLURM_QOS] = "TRAINYARD_SLURM_QOS",
        [O_SLURM_SBATCH_ARGS] = "TRAINYARD_SLURM_SBATCH_ARGS",
        [O_SLURM_MEMORY] = "TRAINYARD_SLURM_MEMORY",
        [O_SLURM_REPLICAS] = "TRAINYARD_SLURM_REPLICAS",
        [O_JOB_PATH] = TY_JOB_PATH_ENV, /* the supervisors build the replicas' environment */
    };
    char why[400];
    int64_t n;
    int r = 0;

    switch (id) {
    case O_INSECURE:
        if (ty_insecure_registries_check(v, why, sizeof(why)) < 0)
            r = ty_error_set(err, EINVAL, "%s: %s", where, why);
        break;
    case O_MAX_MEMORY:
        if (ty_parse_bytes(v, TY_CONTAINER_MIN_MEMORY, &n) < 0)
            r = ty_error_set(err,
                             EINVAL,
                             "%s: expected a whole number of bytes, optionally with a k, m, g "
                             "or t suffix, of at least 4m (got '%s')",
                             where,
                             v);
        break;
    case O_SLURM_MEMORY:
        r = check_enum(v, (const char *const[]){"machine", "none", NULL}, where, err);
        break;
    case O_SLURM_REPLICAS:
        r = check_enum(v, (const char *const[]){"auto", "process", "container", NULL}, where, err);
        break;
    case O_JOB_PATH:
        r = ty_job_path_check(v, where, err);
        break;
    }
    if (r == 0 && setenv(env[id], v, 1) < 0) /* @id is one of env's (apply's cases) */
        r = -errno;
    return r;
}

/* Apply one option (from the command line or the config file; @where names it in errors). */
static int apply(struct tyd *d, int id, const char *v, const char *where, struct ty_error *err)
{
    int64_t n;
    double secs;

    switch (id) {
    case O_LISTEN:
        if (tyd_listen_check(v, where, err) < 0)
            return -EINVAL;
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
            return ty_error_prefix(err, ty_runtime_unknown(v, err), "%s", where);
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
    case O_MAX_MEMORY:
    case O_SLURM_PARTITION:
    case O_SLURM_ACCOUNT:
    case O_SLURM_QOS:
    case O_SLURM_SBATCH_ARGS:
    case O_SLURM_MEMORY:
    case O_SLURM_REPLICAS:
    case O_JOB_PATH:
        return apply_runtime_env(id, v, where, err);
    case O_PROJECT_USER:
        return tyd_runas_add(&d->runas, v, where, err);
    case O_ALLOW_ROOT:
        return set_bool(&d->allow_root_jobs, v, where, err);
    case O_LEAVE_MOUNTS:
        return set_bool(&d->leave_mounts, v, where, err);
    case O_JOB_DIR_ROOT:
        return tyd_jobdir_root_add(&d->job_dir_roots, v, where, err);
    case O_LOG_FILE:
        set_str(&d->log_file, v);
        return 0;
    case O_VERBOSE:
        return set_bool(&d->verbose, v, where, err);
    case O_TLS_CERT:
        set_str(&d->tls_cert, v);
        return 0;
    case O_TLS_KEY:
        set_str(&d->tls_key, v);
        return 0;
    case O_INSECURE_HTTP:
        return set_bool(&d->allow_insecure_http, v, where, err);
    case O_ALLOWED_HOSTS:
        return set_hosts(d, v, where, err);
    case O_CONN_TIMEOUT:
        return set_uint(&d->conn_timeout_s, v, 86400, where, err);
    case O_MAX_CONNS:
        return set_uint(&d->max_conns, v, 100000, where, err);
    case O_MAX_CONNS_ADDR:
        return set_uint(&d->max_conns_per_addr, v, 100000, where, err);
    case O_CAPACITY:
        return tyd_admit_set_capacity(d->admit, v, where, err);
    case O_GPU_DEVICES:
        return tyd_admit_set_devices(d->admit, v, where, err);
    case O_PROJECT_LIMIT:
        return tyd_admit_add_limit(d->admit, v, where, err);
    case O_SHORTEST_WAIT:
        /* Up to 10 years: ample for any maxWaitTime a person means. */
        if (ty_parse_int64(v, 1, 315360000, &n) < 0)
            return ty_error_set(
                err, EINVAL, "%s: expected seconds from 1 to 315360000 (got '%s')", where, v);
        d->min_wait_usec = n * INT64_C(1000000);
        return 0;
    default:
        return ty_error_set(err, EINVAL, "%s: not a setting", where);
    }
}

/* The error for the config file key @key (@where: file, line and key) that is no setting:
 * with the nearest setting, if one is near. */
static int unknown_setting(const char *key, const char *where, struct ty_error *err)
{
    struct ty_suggest s;

    ty_suggest_init(&s, key);
    for (const struct option *o = options; o->name; o++)
        if (o->val != O_CONFIG && o->val != O_HELP && o->val != O_VERSION)
            ty_suggest_add(&s, o->name);
    if (ty_suggest_best(&s))
        return ty_error_set(
            err, EINVAL, "%s: unknown setting (did you mean '%s'?)", where, ty_suggest_best(&s));
    return ty_error_set(err, EINVAL, "%s: unknown setting (see trainyardd --help)", where);
}

static int load_config(struct tyd *d, const char *path, bool must_exist, struct ty_error *err)
{
    struct ty_kv *kv = NULL;
    size_t n = 0;
    int r = ty_kvconf_load(path, &kv, &n, err);

    struct stat st;

    if (r == -ENOENT && !must_exist)
        return 0;
    if (r < 0)
        return ty_error_prefix(err, r, "config");
    /* who may write it decides what trainyardd runs, and as whom */
    if (stat(path, &st) == 0 && ((st.st_mode & 022) || (st.st_uid && st.st_uid != geteuid())))
        r = ty_error_set(err,
                         EPERM,
                         "config: %s may be changed by other users (mode %03o, uid %u): make it "
                         "trainyardd's user's or root's, and chmod go-w it",
                         path,
                         (unsigned)(st.st_mode & 0777),
                         (unsigned)st.st_uid);
    for (size_t i = 0; i < n && r >= 0; i++) {
        char where[600];
        const struct option *o = options;
        (void)snprintf(where, sizeof(where), "%s:%d: %s", path, kv[i].line, kv[i].key);
        while (o->name && strcmp(o->name, kv[i].key) != 0)
            o++;
        if (!o->name || o->val == O_CONFIG || o->val == O_HELP || o->val == O_VERSION)
            r = unknown_setting(kv[i].key, where, err);
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
    int c, r, li = -1;

    /* First pass: --config, --help, --version; the file is read before the other flags,
     * which override it. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", options, &li)) != -1) {
        if (c != '?' && c != ':' &&
            ty_option_typed_in_full(options, li, argv, optind, optarg, "option", err) < 0)
            return -EINVAL;
        li = -1;
        if (c == O_CONFIG)
            config = optarg;
        else if (c == O_HELP || c == 'h') {
            fputs(usage, stdout);
            fputs(usage_more, stdout);
            release(d);
            exit(0);
        } else if (c == O_VERSION) {
            printf("trainyardd %s\n", TY_VERSION);
            release(d);
            exit(0);
        } else if (c == '?')
            return ty_suggest_option_error(options, argv[optind - 1], optopt, "option", err);
        else if (c == ':')
            return ty_error_set(err, EINVAL, "%s needs a value", argv[optind - 1]);
    }
    if (optind < argc)
        return ty_error_set(err, EINVAL, "unexpected argument '%s' (see --help)", argv[optind]);
    r = load_config(d, config ? config : DEFAULT_CONFIG, config != NULL, err);
    if (r < 0)
        return r;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
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

/* SIGHUP: read the tokens file again; a bad one keeps the tokens in use. Connections and
 * requests carry on (auth.c swaps the table under its lock). */
static void reload_tokens(struct tyd *d)
{
    struct ty_error e = {0};
    int r;

    if (!d->auth) {
        tyd_log("SIGHUP: no --auth-tokens file to read again");
        return;
    }
    r = tyd_auth_reload(d->auth, d->auth_file, &e);
    if (r < 0)
        tyd_log("SIGHUP: keeping the tokens in use: %s", ty_error_msg(&e));
    else
        tyd_log("SIGHUP: read %d token%s from %s", r, r == 1 ? "" : "s", d->auth_file);
}

static void on_sig_pipe(struct ty_loop *loop, int fd, short revents, void *data)
{
    unsigned char c;
    while (read(fd, &c, 1) == 1) {
        if (c == SIGTERM || c == SIGINT)
            ty_loop_stop(loop);
        else if (c == SIGHUP)
            reload_tokens(data);
    }
}

/* One trainyardd per state directory: an exclusive lock on STATE_DIR/trainyardd.lock, held
 * until this process exits (not inherited by supervisors, which outlive it). Two would each
 * start the other's queued jobs past --max-running-jobs and both count a lost supervisor's
 * internal retry. Returns 0 or -errno with @err (naming the holder's pid, which the file
 * holds). */
static int lock_state_dir(struct tyd *d, struct ty_error *err)
{
    _cleanup_free_ char *path = xasprintf("%s/trainyardd.lock", d->state_dir);
    char pid[32] = "";
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, TY_STATE_FILE_MODE);
    ssize_t n;

    if (fd < 0)
        return ty_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (e == EWOULDBLOCK)
            return ty_error_set(err,
                                EBUSY,
                                "another trainyardd (pid %s) serves the state directory %s; "
                                "one trainyardd per state directory (%s)",
                                *pid ? pid : "?",
                                d->state_dir,
                                path);
        return ty_error_set(err, e, "cannot lock '%s': %s", path, strerror(e));
    }
    n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        tyd_log("warning: cannot write this process's pid to %s: %s", path, strerror(errno));
    d->lock_fd = fd;
    return 0;
}

/* Does @dir hold an entry besides . and ..? */
static bool dir_has_entries(const char *dir)
{
    DIR *dp = opendir(dir);
    struct dirent *de;
    bool any = false;

    while (dp && !any && (de = readdir(dp)))
        any = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    if (dp)
        closedir(dp);
    return any;
}

/* The store @db is missing or empty while STATE_DIR/jobs/<project>/ holds the service's jobs
 * (jobs/local is `local train`'s, which keeps no store): a store lost or truncated, which
 * opening would silently replace by an empty one, every job gone from the API. Returns 0, or
 * -ENOENT with @err saying what to do. */
static int check_store_present(const struct tyd *d, const char *db, struct ty_error *err)
{
    _cleanup_free_ char *jobs = xasprintf("%s/jobs", d->state_dir);
    DIR *dp;
    struct dirent *de;
    int r = 0;

    if (!ty_store_file_empty(db))
        return 0;
    if (!(dp = opendir(jobs)))
        return 0;
    while (r == 0 && (de = readdir(dp))) {
        _cleanup_free_ char *sub = NULL;
        if (de->d_name[0] == '.' || strcmp(de->d_name, "local") == 0)
            continue;
        sub = xasprintf("%s/%s", jobs, de->d_name);
        if (dir_has_entries(sub))
            r = ty_error_set(err,
                             ENOENT,
                             "the store %s is missing or empty, but %s holds the jobs of project "
                             "'%s': restore the store (with its -wal file), or move %s aside to "
                             "start with no jobs",
                             db,
                             jobs,
                             de->d_name,
                             jobs);
    }
    closedir(dp);
    return r;
}

static int serve(struct tyd *d)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    struct sigaction ign = {.sa_handler = SIG_IGN};
    _cleanup_free_ char *db = NULL;
    struct ty_loop *loop = NULL;
    struct ty_error e = {0};
    size_t n_tight;
    int r, rc, sig_fd;

    if (ty_mkdir_p_exact(d->state_dir, TY_STATE_DIR_MODE, &e) < 0 || lock_state_dir(d, &e) < 0)
        goto fail;
    if (!d->log_file)
        d->log_file = xasprintf("%s/trainyardd.log", d->state_dir);
    /* the supervisors' diagnostics go there: a file that cannot be written loses them */
    if ((r = open(d->log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0 ||
        close(r) < 0) {
        (void)ty_error_set(
            &e, errno, "--log-file: cannot open '%s': %s", d->log_file, strerror(errno));
        goto fail;
    }
    if (d->auth_file && tyd_auth_load(d->auth_file, &d->auth, &e) < 0)
        goto fail;
    db = xasprintf("%s/%s", d->state_dir, TY_STORE_FILE);
    if (check_store_present(d, db, &e) < 0 || ty_store_open(db, &d->store, &e) < 0)
        goto fail;
    if ((n_tight = ty_statedir_tighten(d->state_dir)) > 0)
        tyd_log("state directory %s: made %zu directories and files an earlier version left "
                "readable by every local user private (docs/security.md)",
                d->state_dir,
                n_tight);
    /* the address first: a trainyardd that cannot serve must not start or watch jobs it
     * would then leave behind */
    if ((d->listen_fd = tyd_listen_open(d, &e)) < 0)
        goto fail;
    d->jobcache = tyd_jobcache_new(TYD_JOBCACHE_DEFAULT_BYTES); /* NULL (no memory): no cache */
    d->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sig_fd = d->kick_fd < 0 ? -errno : ty_sigpipe_install(sigs, TY_ARRAY_SIZE(sigs));
    if (sig_fd < 0) {
        (void)ty_error_set(&e, -sig_fd, "%s", strerror(-sig_fd));
        goto fail;
    }
    (void)sigaction(SIGPIPE, &ign, NULL);
    loop = ty_loop_new();
    ty_loop_add_fd(loop, sig_fd, POLLIN, on_sig_pipe, d);
    tyd_secure_mounts(d); /* before any job's container starts */
    if (tyd_admit_start(d, &e) < 0 || tyd_dispatch_init(d, loop, &e) < 0 ||
        tyd_http_start(d, &e) < 0)
        goto fail;
    tyd_runas_log_start(d);
    tyd_log("listening on %s://%.*s:%u (state %s, runtime %s%s)",
            d->tls_cert ? "https" : "http",
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
    tyd_jobcache_free(d->jobcache);
    tyd_dispatch_free(d->dispatch);
    ty_sched_free(d->sched);
    ty_loop_free(loop);
    ty_store_close(d->store);
    tyd_auth_free(d->auth);
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
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
    free(d->tls_cert);
    free(d->tls_key);
    ty_strv_free(d->allowed_hosts);
    tyd_admit_free(d->admit);
}

int main(int argc, char **argv)
{
    struct tyd d = {.max_running = -1, .kick_fd = -1, .listen_fd = -1, .lock_fd = -1};
    struct ty_error e = {0};
    int rc;

    /* Nothing the daemon inherited (a shell's `7<secret`) may reach a supervisor or a job. */
    ty_cloexec_from(3);
    setvbuf(stderr, NULL, _IOLBF, 0);
    d.listen = xstrdup(DEFAULT_LISTEN);
    d.runtime = xstrdup("process");
    d.grace_usec = 10 * INT64_C(1000000); /* as `local train`, and `docker stop` */
    d.state_dir = ty_statedir_default();
    d.conn_timeout_s = DEFAULT_CONN_TIMEOUT_S;
    d.max_conns = DEFAULT_MAX_CONNS;
    d.max_conns_per_addr = DEFAULT_MAX_CONNS_ADDR;
    d.min_wait_usec = DEFAULT_MIN_WAIT_S * INT64_C(1000000);
    d.admit = tyd_admit_new();
    /* The default, never a value inherited from whoever started the daemon. */
    (void)setenv(TY_JOB_PATH_ENV, TY_JOB_PATH_DEFAULT, 1);
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
