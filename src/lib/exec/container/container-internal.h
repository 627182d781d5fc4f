/* SPDX-License-Identifier: Apache-2.0
 * container-internal.h: the container runtime's state, shared by container.c (the runtime's
 * operations and each replica's asynchronous create/start/wait/logs chain),
 * container-prepare.c (the asynchronous prepare) and container-config.c (what a container is
 * created with: limits, GPUs, network, command). Not a public interface: only the container
 * runtime's files include it. */
#ifndef TY_CONTAINER_INTERNAL_H
#define TY_CONTAINER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "container-engine.h"
#include "docker-api.h"
#include "linesplit.h"
#include "runtime.h"

#define REPLICA_PORT 2222 /* as on AI Platform */
/* 10 minutes: a pull may be gigabytes (CUDA images); a hung registry must not hang us. */
#define PULL_TIMEOUT_MS TY_CONTAINER_PULL_TIMEOUT_MS
/* After a container's end, its log is read again without follow when no more than this was
 * delivered (container-run.c read_log_rest); a longer one is left to the follow. */
#define LOG_REST_MAX (UINT64_C(8) << 20)
/* After a container's wait returns, how long its log stream may take to drain. */
#define LOG_DRAIN_USEC (2 * INT64_C(1000000))
/* How long force-removing one container may take (a removal kills a running container and
 * waits for it; Podman also unmounts its storage), and inspecting one (answered from the
 * engine's state at once unless it hangs). */
#define CTR_REMOVE_TIMEOUT_MS  60000L
#define CTR_INSPECT_TIMEOUT_MS 30000L
/* 2 GiB: PyTorch data loaders want far more than Docker's 64 MiB /dev/shm default. */
#define MAX_SHM_BYTES (INT64_C(2) << 30)

struct container_rt;

/* Is the kernel's OOM killer at work in a container (container-oom.c)? */
struct ctr_oom_watch {
    struct ty_loop *loop;
    int notify_fd;  /* v1: eventfd registered in cgroup.event_control; v2: inotify; or -1 */
    int counter_fd; /* memory.oom_control (v1) or memory.events (v2), or -1 */
    uint64_t timer; /* the next re-read after a notice */
    int rereads;    /* re-reads left */
    bool killed;    /* an oom_kill count above 0 was read */
};

struct ctr_replica {
    struct container_rt *rt;
    struct ty_replica *r;
    char *name;
    char *id;
    char ip[32];
    /* The create body of its first launch: a relaunch sends the same bytes (environment,
     * address, GPUs). */
    char *body;
    unsigned runs;             /* launches so far */
    struct ty_docker_req *req; /* create or start in flight */
    struct ty_docker_req *wait_req, *logs_req;
    struct ty_engine_call pid_call;  /* inspect after the start: its process (OOM watch) */
    struct ty_engine_call exit_call; /* inspect at its end: exit status, OOMKilled, or gone */
    struct ctr_oom_watch oom;
    struct ty_docker_demux dm;
    struct ty_linesplit out_ls, err_ls;
    int pending_signal;
    int reserve_fd; /* host networking: the port held until the container starts, or -1 */
    long exit_code, wait_code;
    /* The engine's die event (container-events.c) came, with this status: maybe before
     * the start's answer, which then acts on it. */
    bool died;
    long died_code;
    /* Log bytes delivered so far per stream (stdout, stderr), and how many of them the log
     * request in flight is still to skip: every log request replays from the start, and the
     * one after the exit (`logs_rest`) reads what the follow had not yet sent. */
    uint64_t log_seen[2], log_skip[2];
    bool logs_rest;
    char lost[200]; /* not empty: the engine lost the container, and why */
    uint64_t drain_timer;
    struct ty_engine_call rm_call;      /* its removal: before a relaunch, and in cleanup */
    struct ty_engine_call unpause_call; /* before a signal (send_kill) */
    int unpause_signal;                 /* ... the signal to send once it is answered */
    /* Its image's Config.User ("" for root) and Id (NULL if unknown): container-user.c */
    char *image_user, *image_id;
    bool started, exited, reported;
    bool await_engine; /* its launch goes on once the engine is back (container.c) */
    bool wait_done, wait_ok, logs_done, exit_known, engine_oom;
};

/* The run's events stream (container-events.c). */
struct ctr_events {
    struct ty_docker_req *req; /* in flight, or NULL */
    struct ty_linesplit ls;    /* its lines: one JSON event each */
    int reopens;               /* times it broke and was opened again */
    bool off;                  /* refused, or broke too often: the waits alone this run */
};

/* The engine's exit files (container-exitfile.c). */
struct ctr_exitwatch {
    int fd;          /* inotify on dir, or -1 */
    char *dir;       /* the directory watched, or NULL */
    bool tried;      /* ctr_exitwatch_start ran */
    bool confirmed;  /* dir is the engine's own (given, or a conmon's --exit-dir) */
    int learn_tries; /* containers' processes looked at for a conmon so far */
};

/* Giving the run's directories to the images' user (container-user.c), during prepare. */
struct ctr_users {
    void (*next)(struct container_rt *c); /* prepare's next step */
    size_t image;                         /* the replica whose image is being inspected */
    size_t chosen;                        /* the replica whose image's user gets them */
    char user[256], group[256];           /* its Config.User, split at ':' */
    unsigned long uid, gid;
    bool uid_known, gid_known;
    int step;       /* reading the probe's 0 /etc/passwd, 1 /etc/group; 2 done */
    char *probe_id; /* the name of the container made to read the image's accounts, from its
                     * create until it is removed */
    bool recreated; /* a probe of that name was in the way, and removed */
    /* Its create is in flight: a cleanup lets it be answered before the removal by name
     * (cut short, the engine may make it after the removal, or be stopped in the middle of
     * making it, which left Podman's store broken for every later job) */
    bool creating;
    bool remove_when_created; /* ... and the cleanup waits for that answer */
    struct ty_engine_call rm; /* its removal in cleanup */
};

struct container_rt {
    struct ty_runtime base;
    struct ctr_events events;
    struct ctr_exitwatch exits;
    struct ty_engine eng;
    struct ctr_replica *reps;
    size_t n;
    char token[40];
    char hash[16];
    char *network;
    bool network_created;
    bool net_compat; /* the engine has no /libpod (Docker): its networks/create */
    char subnet[32], prefix[24];
    int64_t nano_cpus[TY_ROLE_MAX], memory[TY_ROLE_MAX];
    char owner[64]; /* TY_LABEL_OWNER's value: ty_engine_owner_id */
    /* prepare() under way (container-prepare.c) */
    bool preparing;
    struct ty_engine_call pcall; /* the network listing or creation in flight */
    size_t next_image;           /* the replica whose image is being made present */
    int net_attempt;             /* subnets tried so far */
    /* A retry: the plan holds the names of the attempt before, and so does this run. */
    bool reused;
    bool oom_warned; /* said once that the OOM watch cannot work here */
    /* The engine has no init (a create or start said so): containers run without
     * HostConfig.Init from then on; said once (ctr_drop_init). */
    bool no_init;
    /* The engine went away under the run and is being reached again (container.c). */
    bool reopening;
    int reopens;
    int64_t reopen_since;     /* monotonic: when it went away */
    int64_t engine_wait_usec; /* ... and how long it is tried again (container.c; tests set it) */
    uint64_t reopen_timer;    /* the next try, while it does not answer */
    bool cleanup_waiting;     /* cleanup goes on once the engine is back */
    size_t clearing;          /* removals of what the attempt before left, in flight */
    int cleared;              /* ... that removed something */
    /* cleanup under way (container-cleanup.c) */
    bool cleaning, cleaned;
    size_t removing;                /* container removals still in flight */
    struct ty_engine_call net_call; /* the network's removal */
    bool network_forced;            /* ... with ?force=1 */
    struct ctr_users users;
};

/* The probe's create, in flight when the cleanup began (ctr_users.remove_when_created), has
 * been answered: its removal starts now (container-cleanup.c). */
void ctr_cleanup_probe_answered(struct container_rt *c);

/* ---- each replica's run (container-run.c) ---- */

/* Start replica @cr's container with @env: create, start (`started`), then follow its logs
 * and wait for its end (`exited`). A relaunch (the previous run's `exited` was reported)
 * first removes the old container, then creates an identical one from the same body.
 * Returns 0 with the chain under way, or -errno (-EBUSY: the previous run goes on). */
int ctr_run_launch(struct ctr_replica *cr, char *const env[], struct ty_error *err);
/* Force-remove @container (a name or id) with its anonymous volumes (DELETE ?force=1&v=1,
 * within CTR_REMOVE_TIMEOUT_MS) on @call; @fn(@ctx) gets the answer (404: there was none).
 * Returns 0 once under way, or -errno with @err (may be NULL). */
int ctr_container_remove_start(struct container_rt *c,
                               struct ty_engine_call *call,
                               const char *container,
                               ty_engine_call_fn fn,
                               void *ctx,
                               struct ty_error *err);
/* ctr_container_remove_start of the replica's container, by name, on cr->rm_call; @fn gets
 * @cr. */
int ctr_remove_start(struct ctr_replica *cr, ty_engine_call_fn fn, struct ty_error *err);
/* Deliver @sig to the running container (kept until it runs; no-op once it ended). */
void ctr_run_signal(struct ctr_replica *cr, int sig);
/* Stop everything of the current run: requests, timers, the OOM watch. Nothing more is
 * reported for it. */
void ctr_run_cancel(struct ctr_replica *cr);
/* Free what the replica holds (destroy). */
void ctr_run_free(struct ctr_replica *cr);

/* A relaunch's removal, or the launch of a replica whose start the engine's loss cut short:
 * force-remove the container by name, then create it (container-run.c). */
void ctr_run_resume(struct ctr_replica *cr);
/* Report the replica's end as a start failure: @what ("creating", ...) container <name>
 * failed: the error in @body / @error (status 0). */
void ctr_run_start_failed(
    struct ctr_replica *cr, const char *what, long status, const char *body, const char *error);
/* Report the running replica lost: @why. */
void ctr_run_lost(struct ctr_replica *cr, const char *why);

/* The engine's die event for the replica's container, with its exit status @code: its end
 * is known now (for 137 the inspect still says whether it was out of memory); the rest of
 * its log is read at once instead of waiting for the follow to notice. No-op when its end
 * is known already or its run was reported. */
void ctr_run_died(struct ctr_replica *cr, long code);

/* ---- the events stream (container-events.c) ---- */

/* Open the run's events stream when it is not open (no-op without an engine client). Its
 * die events go to ctr_run_died; a failure to open leaves the waits to report every end. */
void ctr_events_start(struct container_rt *c);
/* Close it (no callbacks); idempotent. */
void ctr_events_stop(struct container_rt *c);
/* A die event (one line of the stream, @len bytes): the container's id into @id (size @n)
 * and its exit status (Actor.Attributes.exitCode, 0..255) into *code. Returns false for
 * anything else (another action, no or a malformed status, not JSON). */
bool ctr_events_parse(const char *line, size_t len, char *id, size_t n, long *code);

/* ---- the exit files (container-exitfile.c) ---- */

/* Watch the engine's exit directory (TRAINYARD_CONTAINER_EXIT_DIR, else Podman's default
 * for this user when it exists) for the ends of the run's containers, which go to
 * ctr_run_died; once per run (no-op after). Nothing is watched when there is no such
 * directory: the events stream and the waits tell then. */
void ctr_exitwatch_start(struct container_rt *c);
/* Does the watch want a running container's process id, to learn the engine's real exit
 * directory (ctr_exitwatch_learn)? Not once learnt, nor after a few processes without a
 * conmon parent. */
bool ctr_exitwatch_wants_pid(const struct container_rt *c);
/* @pid is a running container's process: when its parent is a conmon, watch the directory
 * its --exit-dir names from now on (if it is another), and read the exit files that are
 * there already. Once per run; no-op when nothing is found. */
void ctr_exitwatch_learn(struct container_rt *c, pid_t pid);
/* Read the exit file of @cr's current container now, if the watch is on and it has one
 * (an end that came before the watch saw it). */
void ctr_exitwatch_check(struct container_rt *c, struct ctr_replica *cr);
/* Stop watching (no callbacks after); idempotent. */
void ctr_exitwatch_stop(struct container_rt *c);
/* An exit file's text (@len bytes: a decimal 0..255, maybe a newline) into *code. Returns
 * false for anything else. */
bool ctr_exit_file_parse(const char *text, size_t len, long *code);
/* The value of --exit-dir (an absolute path; "--exit-dir DIR" or "--exit-dir=DIR") in a
 * NUL-separated command line (@len bytes, as /proc/PID/cmdline) into @out (size @n).
 * Returns whether there was one that fits. */
bool ctr_exit_dir_parse(const char *cmdline, size_t len, char *out, size_t n);

/* ---- the engine going away (container.c) ---- */

/* Did a request end because nothing answers on the engine's socket any more (and, when the
 * engine is the podman service we started, because that service has ended or refuses
 * connections: nothing listens)? */
bool ctr_engine_gone(struct container_rt *c, long status, const char *error);
/* Reach the engine again (start podman's service again when it was ours), at most a few
 * times per run. Everything under way on the old engine stops: a running replica is
 * reported lost (restarted in place by the supervisor), one being started waits and goes on
 * (ctr_run_resume), a cleanup under way starts over (ctr_cleanup_engine_back). Returns false
 * when it may not (then the caller reports its failure as usual). */
bool ctr_engine_reopen(struct container_rt *c);
/* The engine is back (@r 0) or could not be reached (@r -errno): cleanup goes on. */
void ctr_cleanup_engine_back(struct container_rt *c, int r);

/* ---- the OOM watch (container-oom.c) ---- */

/* An idle watch. */
void ctr_oom_watch_init(struct ctr_oom_watch *w);
/* Watch the memory cgroup of process @pid (a container's) on @loop. Returns 0, or -errno
 * when it cannot be found or watched (the engine's State.OOMKilled is then all there is):
 * -ESRCH the process or its cgroup is gone already, -ENODEV no memory controller is
 * mounted here (or not in our view), else why opening or registering failed (-EACCES). */
int ctr_oom_watch_start(struct ctr_oom_watch *w, struct ty_loop *loop, pid_t pid);
/* Has the kernel counted an OOM kill in it (read once more if the cgroup is still there)? */
bool ctr_oom_watch_killed(struct ctr_oom_watch *w);
/* Stop watching and forget; idempotent. */
void ctr_oom_watch_stop(struct ctr_oom_watch *w);
/* The N of an "oom_kill N" line in @text (memory.oom_control, memory.events), or 0. */
unsigned long long ctr_oom_parse_count(const char *text);

/* ---- retries ---- */

/* A job retry runs on a new runtime with the same plan: the replicas keep the host names
 * of the attempt before, and so the same hash, container and network names. Remember the
 * /24 (its index in 198.18.0.0/15) that the network of @hash had, and look it up (-1: none
 * known), so the retry gets the same addresses when that subnet is free. */
void ctr_subnet_remember(const char *hash, int index);
int ctr_subnet_recall(const char *hash);

/* The runtime's prepare(): validate, then (unless a dry run) open the engine and go on on
 * the loop (container-prepare.c). Returns TY_RUNTIME_ASYNC, 0 (dry run) or -errno. */
int ctr_prepare(struct ty_runtime *rt, struct ty_error *err);
/* cleanup() during prepare: abort the chain; no `prepared` follows. */
void ctr_prepare_abort(struct container_rt *c);

/* ---- the images' user (container-user.c) ---- */

/* A step of prepare, after the images: when trainyard runs as root and the plan has a local
 * jobDir the supervisor made for this run (plan.job_dir_made) or a trial's metric directory,
 * find the user the replicas' images run as (the master's Config.User when it is not root,
 * else the first replica's that is not; a name looked up in the image's /etc/passwd and
 * /etc/group through a container created from it and never started, c->users.probe_id
 * from its create until removed) and give those directories to it, saying so in the job's log; a
 * replica whose image runs as yet another user is warned about. Never fails: then @next runs as
 * before. Calls run on c->pcall (ctr_prepare_abort stops them; cleanup removes a probe left). */
void ctr_users_start(struct container_rt *c, void (*next)(struct container_rt *c));
/* The first regular file of the tar archive @tar (@len bytes; pax and GNU headers and other
 * entries before it skipped): its content in *data, *n bytes (within @tar). Returns 0,
 * -ENOENT (no regular file) or -EINVAL (a truncated or malformed header). */
int ctr_tar_first_file(const char *tar, size_t len, const char **data, size_t *n);
/* The uid and gid of the line of @name in an /etc/passwd text (@len bytes). */
bool ctr_passwd_lookup(
    const char *text, size_t len, const char *name, unsigned long *uid, unsigned long *gid);
/* The gid of the line of @name in an /etc/group text (@len bytes). */
bool ctr_group_lookup(const char *text, size_t len, const char *name, unsigned long *gid);
/* Split a Config.User value "USER[:GROUP]" (NULL as "") into @user and @group (truncated to
 * their sizes @un, @gn; "" when absent). */
void ctr_user_split(const char *value, char *user, size_t un, char *group, size_t gn);
/* Does a Config.User value run as root ("" , "root", "0", with any group)? */
bool ctr_user_is_root(const char *value);

/* The runtime's cleanup(): remove the containers, then the network, on the loop
 * (container-cleanup.c). Returns 0 (nothing to remove, or done) or TY_RUNTIME_ASYNC. */
int ctr_cleanup(struct ty_runtime *rt);
/* destroy(): finish the cleanup (or do all of it) now, blocking (a private curl handle;
 * the caller's loop does not run). */
void ctr_cleanup_now(struct container_rt *c);
/* The memory one container may have (the host's, or TRAINYARD_CONTAINER_MAX_MEMORY). */
int64_t ctr_host_memory(void);
/* Fill c->nano_cpus and c->memory from each role's machine type, capped to the host with a
 * notice. */
void ctr_size_roles(struct container_rt *c);
/* Check that every replica that needs GPUs (ty_role_gpus) was given as many (ty_runtime.gpus:
 * the caller holds them); say once that stand-ins are stand-ins. Returns 0, or -ENODEV with a
 * message naming the replica. */
int ctr_check_gpus(struct container_rt *c, struct ty_error *err);
/* A JSON array of the strings of @v ([] for NULL). */
json_t *ctr_strv_array(char *const *v);
/* The MAC address of the replica at the IPv4 address @ip on its job's network, into @mac:
 * Docker's own rule (02:42 and the address's four bytes), fixed so that a replica restarted
 * in place (a new container at the same address) is reached at once: with a new MAC its
 * peers' neighbour tables kept the old one for half a minute. Returns @mac. */
#define CTR_MAC_TEXT_MAX 18
const char *ctr_mac_of(const char *ip, char mac[CTR_MAC_TEXT_MAX]);

/* The body of POST /containers/create for replica @cr with the contract variables @env,
 * with HostConfig.Init unless c->no_init. Caller frees. */
char *ctr_create_body(struct container_rt *c, struct ctr_replica *cr, char *const env[]);
/* Does an engine's failed create or start (its error @body, or @error when no answer
 * came) say that it has no init binary (Podman's catatonit, Docker's docker-init)? */
bool ctr_init_missing(const char *body, const char *error);
/* The engine has no init (@why: its words): remove HostConfig.Init from cr->body and, the
 * first time in this run, set c->no_init and say so in the job's log (a warning). Returns
 * false when cr->body had no Init (then a retry would fail the same way). */
bool ctr_drop_init(struct container_rt *c, struct ctr_replica *cr, const char *why);

#endif
