/* SPDX-License-Identifier: Apache-2.0
 * container-config.c: what each container of the container runtime is created with: CPU and
 * memory limits from machine types (capped to the host), the GPUs each replica was given, the
 * network endpoint with its fixed address and every peer in /etc/hosts, the job directory bind,
 * Kubernetes-style command semantics, and the engine's init as PID 1 (HostConfig.Init: it
 * forwards signals to the program and reaps orphaned children), dropped with a notice when
 * the engine has none (see container.c for the runtime itself). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "container-internal.h"
#include "json.h"
#include "machine.h"
#include "macro.h"
#include "parse.h"

/* cloudml-hypertune's default directory (hypertune.h: TY_HYPERTUNE_DEFAULT_FILE). */
#define CTR_HYPERTUNE_DIR "/tmp/hypertune"

/* The memory one container may have: the host's, or less when the operator says so with
 * TRAINYARD_CONTAINER_MAX_MEMORY (bytes, or with a k/m/g suffix), e.g. to keep a shared host
 * responsive (docs/container-runtime.md). */
int64_t ctr_host_memory(void)
{
    int64_t mem = (int64_t)sysconf(_SC_PHYS_PAGES) * (int64_t)sysconf(_SC_PAGESIZE);
    const char *cap = getenv("TRAINYARD_CONTAINER_MAX_MEMORY");
    int64_t v;

    /* checked before the job was taken (ty_container_validate) */
    if (!cap || !*cap || ty_parse_bytes(cap, TY_CONTAINER_MIN_MEMORY, &v) < 0)
        return mem;
    return v < mem ? v : mem;
}

/* @bytes as a person reads it, into @buf: "3.8 GiB", and below 1 GiB "40 MiB" (a cap of
 * TRAINYARD_CONTAINER_MAX_MEMORY=40m was "0.0 GiB"). Returns @buf. */
static const char *mem_text(int64_t bytes, char *buf, size_t n)
{
    if (bytes >= (INT64_C(1) << 30))
        (void)snprintf(buf, n, "%.1f GiB", (double)bytes / (1 << 30));
    else
        (void)snprintf(buf, n, "%lld MiB", (long long)(bytes >> 20));
    return buf;
}

/* Machine type -> CPU and memory limits per role, capped to the host with a notice. */
void ctr_size_roles(struct container_rt *c)
{
    const struct ty_job *job = c->base.plan->job;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t mem = ctr_host_memory();
    bool capped = mem < (int64_t)sysconf(_SC_PHYS_PAGES) * (int64_t)sysconf(_SC_PAGESIZE);

    for (int role = 0; role < TY_ROLE_MAX; role++) {
        const struct ty_machine_type *mt = ty_machine_lookup(job->roles[role].machine_type);
        int64_t want_cpu, want_mem;
        char m1[32], m2[32], m3[32];
        if (job->roles[role].count == 0 || !mt)
            continue;
        want_cpu = mt->vcpus;
        want_mem = mt->memory_mb * 1024 * 1024;
        c->nano_cpus[role] = (want_cpu > cpus ? cpus : want_cpu) * INT64_C(1000000000);
        c->memory[role] = want_mem > mem ? mem : want_mem;
        if (want_cpu > cpus || want_mem > mem)
            ty_runtime_notice(&c->base,
                              TY_SEV_WARNING,
                              "%s machine type %s asks for %lld vCPUs and %s; this host "
                              "has %ld CPUs and %s%s, so each %s replica is limited to "
                              "%lld CPUs and %s.",
                              ty_role_name((enum ty_role)role),
                              mt->name,
                              (long long)want_cpu,
                              mem_text(want_mem, m1, sizeof(m1)),
                              cpus,
                              mem_text(mem, m2, sizeof(m2)),
                              capped ? " for a container (TRAINYARD_CONTAINER_MAX_MEMORY)" : "",
                              ty_role_name((enum ty_role)role),
                              (long long)(c->nano_cpus[role] / 1000000000),
                              mem_text(c->memory[role], m3, sizeof(m3)));
    }
}

int ctr_check_gpus(struct container_rt *c, struct ty_error *err)
{
    const struct ty_cluster_plan *plan = c->base.plan;
    bool any = false;

    for (size_t i = 0; i < plan->n_replicas; i++) {
        const struct ty_replica *r = &plan->replicas[i];
        const char *type = NULL;
        int need = ty_role_gpus(plan->job, r->role, &type);
        size_t given = c->base.gpus ? c->base.gpus[i].n : 0;

        if (need <= 0)
            continue;
        if (given < (size_t)need)
            return ty_error_set(err,
                                ENODEV,
                                "the replica %s needs %d × %s and was given %s%zu: GPUs are "
                                "given by the one who runs the job (trainyardd's scheduler, "
                                "trainyard local train), which holds them for it",
                                r->display_name,
                                need,
                                type ? type : "GPU",
                                given ? "only " : "",
                                given);
        any = true;
    }
    if (any && c->base.gpu_stand_in)
        ty_runtime_notice(&c->base,
                          TY_SEV_INFO,
                          "The job's GPUs are stand-ins (no GPU device): its replicas get "
                          "NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES but no device file.");
    return 0;
}

json_t *ctr_strv_array(char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* The devices and variables of the GPUs given to one replica: NVIDIA_VISIBLE_DEVICES names
 * the host's devices, CUDA_VISIBLE_DEVICES numbers them from 0 as the container sees them;
 * stand-ins get the variables only; a replica given none NVIDIA_VISIBLE_DEVICES=void. */
static void
add_gpus(struct container_rt *c, struct ctr_replica *cr, json_t *host_config, json_t *env)
{
    const struct ty_replica_gpus *g =
        c->base.gpus ? &c->base.gpus[ty_runtime_replica_index(&c->base, cr->r)] : NULL;
    json_t *devices;
    struct ty_buf visible = TY_BUF_INIT, cuda = TY_BUF_INIT;
    static const char *const shared[] = {
        "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};

    if (!g || g->n == 0) {
        /* none: an image's NVIDIA_VISIBLE_DEVICES=all (CUDA's images set it) would give the
         * replica every GPU under NVIDIA's runtime or hook, those of other jobs included */
        json_array_append_new(env, json_string("NVIDIA_VISIBLE_DEVICES=void"));
        return;
    }
    devices = json_array();
    for (size_t i = 0; i < g->n; i++) {
        _cleanup_free_ char *dev = xasprintf("/dev/nvidia%d", g->dev[i]);
        if (!c->base.gpu_stand_in)
            json_array_append_new(devices,
                                  json_pack("{s:s,s:s,s:s}",
                                            "PathOnHost",
                                            dev,
                                            "PathInContainer",
                                            dev,
                                            "CgroupPermissions",
                                            "rwm"));
        ty_buf_printf(&visible, "%s%d", i ? "," : "", g->dev[i]);
        ty_buf_printf(&cuda, "%s%zu", i ? "," : "", i);
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(shared) && !c->base.gpu_stand_in; i++)
        if (access(shared[i], F_OK) == 0)
            json_array_append_new(devices,
                                  json_pack("{s:s,s:s,s:s}",
                                            "PathOnHost",
                                            shared[i],
                                            "PathInContainer",
                                            shared[i],
                                            "CgroupPermissions",
                                            "rwm"));
    if (json_array_size(devices) > 0)
        json_object_set_new(host_config, "Devices", devices);
    else
        json_decref(devices);
    json_array_append_new(env, json_sprintf("NVIDIA_VISIBLE_DEVICES=%s", ty_buf_str(&visible)));
    json_array_append_new(env, json_sprintf("CUDA_VISIBLE_DEVICES=%s", ty_buf_str(&cuda)));
    ty_buf_release(&visible);
    ty_buf_release(&cuda);
}

const char *ctr_mac_of(const char *ip, char mac[CTR_MAC_TEXT_MAX])
{
    unsigned a, b, c, d;

    if (sscanf(ip, "%u.%u.%u.%u", &a, &b, &c, &d) != 4 || a > 255 || b > 255 || c > 255 || d > 255)
        a = b = c = d = 0;
    (void)snprintf(mac, CTR_MAC_TEXT_MAX, "02:42:%02x:%02x:%02x:%02x", a, b, c, d);
    return mac;
}

/* The HostConfig of @cr's container: names of the other replicas, limits, the init, the job's
 * directories and GPUs (adding to @envj what they need), and its network or the host's. */
static json_t *host_config(struct container_rt *c, struct ctr_replica *cr, json_t *envj)
{
    const struct ty_cluster_plan *plan = c->base.plan;
    struct ty_replica *rep = cr->r;
    json_t *hosts = json_array(), *hc, *binds;
    int64_t mem = c->memory[rep->role];

    for (size_t i = 0; i < c->n && !plan->host_network; i++)
        json_array_append_new(hosts, json_sprintf("%s:%s", c->reps[i].r->host, c->reps[i].ip));
    hc = json_pack("{s:o,s:I,s:[{s:s,s:i,s:i},{s:s,s:i,s:i}]}",
                   "ExtraHosts",
                   hosts,
                   "PidsLimit",
                   (json_int_t)32768,
                   "Ulimits",
                   "Name",
                   "nofile",
                   "Soft",
                   20000,
                   "Hard",
                   20000,
                   "Name",
                   "nproc",
                   "Soft",
                   32768,
                   "Hard",
                   32768);
    /* The engine's init (Podman: catatonit at /run/podman-init; Docker: docker-init) is PID 1
     * and the program its child: a SIGTERM reaches a program with no handler of its own
     * (PID 1 ignores signals it does not handle), and orphans are reaped. */
    if (!c->no_init)
        json_object_set_new(hc, "Init", json_true());
    if (c->nano_cpus[rep->role] > 0)
        json_object_set_new(hc, "NanoCpus", json_integer(c->nano_cpus[rep->role]));
    if (mem > 0) {
        json_object_set_new(hc, "Memory", json_integer(mem));
        json_object_set_new(
            hc, "ShmSize", json_integer(mem / 2 > MAX_SHM_BYTES ? MAX_SHM_BYTES : mem / 2));
    }
    binds = json_array();
    if (ty_job_dir_is_local(plan->job->job_dir)) {
        /* The job directory appears at the same path inside, as --job-dir says; a tuning
         * trial's (--job-dir=JOBDIR/TRIAL) within the whole job's, which CLUSTER_SPEC's
         * job.jobDir names, as every trial saw its bucket on AI Platform. */
        json_array_append_new(binds, json_sprintf("%s:%s", plan->job->job_dir, plan->job->job_dir));
    }
    if (plan->metric_dir) {
        /* A tuning trial's metric file: the trial's own host directory where
         * cloudml-hypertune writes by default, so programs need no variable. */
        json_array_append_new(binds, json_sprintf("%s:" CTR_HYPERTUNE_DIR, plan->metric_dir));
        json_array_append_new(
            envj, json_string("CLOUD_ML_HP_METRIC_FILE=" CTR_HYPERTUNE_DIR "/output.metrics"));
    }
    if (json_array_size(binds) > 0)
        json_object_set_new(hc, "Binds", binds);
    else
        json_decref(binds);
    add_gpus(c, cr, hc, envj);
    if (plan->host_network) /* the host's network, names and resolver */
        json_object_set_new(hc, "NetworkMode", json_string("host"));
    else /* resolution stays on the job's network: no lookup ever leaves the machine */
        json_object_set_new(hc, "Dns", json_pack("[s]", "127.0.0.1"));
    return hc;
}

char *ctr_create_body(struct container_rt *c, struct ctr_replica *cr, char *const env[])
{
    const struct ty_cluster_plan *plan = c->base.plan;
    struct ty_replica *rep = cr->r;
    json_t *envj = ctr_strv_array(env), *hc = host_config(c, cr, envj), *body, *endpoints;
    char mac[CTR_MAC_TEXT_MAX];
    char *text;

    /* On the host's network the cluster's addresses are the hosts'; else the replica's
     * address, MAC address and name on the job's network. */
    endpoints = plan->host_network ? json_object()
                                   : json_pack("{s:{s:{s:s},s:s,s:[s]}}",
                                               c->network,
                                               "IPAMConfig",
                                               "IPv4Address",
                                               cr->ip,
                                               "MacAddress",
                                               ctr_mac_of(cr->ip, mac),
                                               "Aliases",
                                               rep->host);
    body = json_pack("{s:s,s:o,s:{s:s,s:s,s:s,s:s},s:o,s:{s:o}}",
                     "Image",
                     rep->image,
                     "Env",
                     envj,
                     "Labels",
                     TY_LABEL_RUN,
                     c->token,
                     TY_LABEL_JOB,
                     plan->job->job_id,
                     TY_LABEL_TASK,
                     rep->task_name,
                     TY_LABEL_OWNER,
                     c->owner,
                     "HostConfig",
                     hc,
                     "NetworkingConfig",
                     "EndpointsConfig",
                     endpoints);
    if (!plan->host_network)
        json_object_set_new(body, "Hostname", json_string(rep->host));
    /* Kubernetes semantics (plan.h): a command replaces ENTRYPOINT and drops the image's
     * CMD; args replace CMD. */
    if (rep->command) {
        json_object_set_new(body, "Entrypoint", ctr_strv_array(rep->command));
        json_object_set_new(body, "Cmd", ctr_strv_array(rep->args));
    } else if (rep->args) {
        json_object_set_new(body, "Cmd", ctr_strv_array(rep->args));
    }
    text = ty_json_compact(body);
    json_decref(body);
    return text;
}

bool ctr_init_missing(const char *body, const char *error)
{
    /* Podman: "container-init binary not found on the host: stat ...", or "lookup init
     * binary: could not find \"catatonit\" in one of [...]"; Docker: exec: "docker-init":
     * executable file not found in $PATH. Only the init's own names count: an image's
     * missing entrypoint is no reason to drop it. */
    static const char *const names[] = {
        "container-init", "init binary", "catatonit", "docker-init", "podman-init"};
    char msg[512];

    if (body && *body)
        ty_docker_error_message(body, msg, sizeof(msg));
    else
        (void)snprintf(msg, sizeof(msg), "%s", error ? error : "");
    for (size_t i = 0; i < TY_ARRAY_SIZE(names); i++)
        if (strstr(msg, names[i]))
            return true;
    return false;
}

bool ctr_drop_init(struct container_rt *c, struct ctr_replica *cr, const char *why)
{
    _cleanup_json_ json_t *body = NULL;
    json_t *hc;

    if (!cr->body || ty_json_parse(cr->body, strlen(cr->body), &body, NULL) < 0 ||
        !json_is_object(hc = json_object_get(body, "HostConfig")) ||
        json_object_del(hc, "Init") < 0)
        return false;
    free(cr->body);
    cr->body = ty_json_compact(body);
    if (!c->no_init) {
        c->no_init = true;
        ty_runtime_notice(&c->base,
                          TY_SEV_WARNING,
                          "The container engine has no init to run as PID 1 in containers (%s): "
                          "running them without one. A program that is PID 1 and does not handle "
                          "SIGTERM stops only when the grace period ends, and the zombies of its "
                          "orphaned children are not reaped.",
                          why);
    }
    return true;
}
