/* SPDX-License-Identifier: Apache-2.0
 * docker-test-server.c: the forked HTTP server and loop helpers of docker-test-server.h. */
#include "docker-test-server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "docker-api.h"
#include "docker-test-server.h"
#include "json.h"
#include "loop.h"
#include "macro.h"
#include "timeutil.h"

char dts_tmpdir[64];
char dts_sock_path[108];
static pid_t server_pid = -1;

static void msleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(0); /* the client went away */
        c += w;
        n -= (size_t)w;
    }
}

static void respond_bytes(int fd, int status, const char *ctype, const char *body, size_t len)
{
    char head[256];
    int n = snprintf(head,
                     sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                     status,
                     ctype,
                     len);
    send_all(fd, head, (size_t)n);
    send_all(fd, body, len);
}

static void respond(int fd, int status, const char *ctype, const char *body)
{
    respond_bytes(fd, status, ctype, body, strlen(body));
}

static void chunked_head(int fd, const char *ctype)
{
    char head[256];
    int n = snprintf(head,
                     sizeof(head),
                     "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n",
                     ctype);
    send_all(fd, head, (size_t)n);
}

static void chunk(int fd, const void *p, size_t n)
{
    char head[32];
    int k = snprintf(head, sizeof(head), "%zx\r\n", n);
    send_all(fd, head, (size_t)k);
    send_all(fd, p, n);
    send_all(fd, "\r\n", 2);
}

/* The header value of @name in @head (a request's header block), or "". */
static void header_value(const char *head, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    const char *p = head;

    out[0] = '\0';
    while ((p = strstr(p, "\r\n"))) {
        p += 2;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1, *e;
            while (*v == ' ')
                v++;
            e = strstr(v, "\r\n");
            if (!e)
                return;
            (void)snprintf(out, n, "%.*s", (int)(e - v), v);
            return;
        }
    }
}

/* Build the multiplexed log stream used by /logs and the demux tests. */
size_t mux_frame(char *out, int stream, const char *p, size_t n)
{
    out[0] = (char)stream;
    out[1] = out[2] = out[3] = 0;
    out[4] = (char)(n >> 24);
    out[5] = (char)(n >> 16);
    out[6] = (char)(n >> 8);
    out[7] = (char)n;
    memcpy(out + 8, p, n);
    return n + 8;
}

/* ---- the container runtime's routes: a tiny engine whose containers behave as their image
 * says (docker-test-server.h), keeping its state in files of the scratch folder (every
 * connection is served by a process of its own) ---- */

/* Append @line to the scratch folder's request log (O_APPEND: whole lines). */
static void log_request(const char *method, const char *path)
{
    _cleanup_free_ char *file = xasprintf("%s/requests.log", dts_tmpdir);
    _cleanup_free_ char *line = xasprintf("%s %s\n", method, path);
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        send_all(fd, line, strlen(line));
        close(fd);
    }
}

/* Save @body as the next of @what's files ("create-<name>", "network"): <what>-<k>.json.
 * Returns k (1 for the first). */
static int save_body(const char *what, const char *body)
{
    for (int k = 1; k < 1000; k++) {
        _cleanup_free_ char *file = xasprintf("%s/%s-%d.json", dts_tmpdir, what, k);
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            continue;
        send_all(fd, body, strlen(body));
        close(fd);
        return k;
    }
    return 0;
}

/* A container id is "<image>~<run>": how it behaves. rt-once: exit 137 on its first run, 0
 * after; rt-kill: 137; rt-oom: 137 with OOMKilled; rt-gone: removed under the wait. */
static int container_exit(const char *id, bool *oom, bool *gone)
{
    const char *tilde = strchr(id, '~');
    int run = tilde ? (int)strtol(tilde + 1, NULL, 10) : 1;

    *oom = strncmp(id, "rt-oom~", 7) == 0;
    *gone = strncmp(id, "rt-gone~", 8) == 0;
    if (strncmp(id, "rt-once~", 8) == 0)
        return run == 1 ? 137 : 0;
    if (strncmp(id, "rt-evt~", 7) == 0)
        return 7;
    if (strncmp(id, "rt-xf~", 6) == 0)
        return 5;
    if (strncmp(id, "rt-kill~", 8) == 0 || *oom)
        return 137;
    return 0;
}

/* Create the scratch file @name (empty). */
static void touch_file(const char *name)
{
    _cleanup_free_ char *file = xasprintf("%s/%s", dts_tmpdir, name);
    int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
}

/* GET /events: every request is appended to events.log. Normally a stream that tells of
 * other things (a start, another container's end) and, about 20 ms after an rt-evt
 * container was started (its started-<id> file), its die event with exit status 7. With a
 * scratch file events-break: a stream that ends after half a line. */
static void serve_events(int fd, const char *p)
{
    _cleanup_free_ char *brk = xasprintf("%s/events-break", dts_tmpdir);
    char told[16][64];
    size_t ntold = 0;
    static const char other[] =
        "{\"status\":\"start\",\"id\":\"x\",\"Type\":\"container\",\"Action\":\"start\","
        "\"Actor\":{\"ID\":\"x\",\"Attributes\":{}}}\n"
        "{\"status\":\"die\",\"id\":\"stranger\",\"Type\":\"container\",\"Action\":"
        "\"die\",\"Actor\":{\"ID\":\"stranger\",\"Attributes\":{\"exitCode\":\"1\"}}}\n";

    {
        _cleanup_free_ char *file = xasprintf("%s/events.log", dts_tmpdir);
        _cleanup_free_ char *line = xasprintf("GET %s\n", p);
        int lfd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (lfd >= 0) {
            send_all(lfd, line, strlen(line));
            close(lfd);
        }
    }
    chunked_head(fd, "application/json");
    if (access(brk, F_OK) == 0) {
        chunk(fd, "{\"status\":\"di", 13);
        send_all(fd, "0\r\n\r\n", 5);
        return;
    }
    chunk(fd, other, sizeof(other) - 1);
    for (int round = 0; round < 1500; round++) { /* 30 s */
        DIR *dir = opendir(dts_tmpdir);
        struct dirent *de;
        while (dir && (de = readdir(dir))) {
            const char *id = de->d_name + 8;
            bool seen = false;
            if (strncmp(de->d_name, "started-", 8) != 0)
                continue;
            for (size_t i = 0; i < ntold; i++)
                seen = seen || strcmp(told[i], id) == 0;
            if (seen || ntold >= 16)
                continue;
            (void)snprintf(told[ntold++], sizeof(told[0]), "%s", id);
            msleep(20);
            _cleanup_free_ char *ev = xasprintf(
                "{\"status\":\"die\",\"id\":\"%s\",\"Type\":\"container\",\"Action\":\"die\","
                "\"Actor\":{\"ID\":\"%s\",\"Attributes\":{\"containerExitCode\":\"7\","
                "\"exitCode\":\"7\",\"name\":\"n\"}},\"time\":1}\n",
                id,
                id);
            chunk(fd, ev, strlen(ev));
        }
        if (dir)
            closedir(dir);
        msleep(20);
    }
    send_all(fd, "0\r\n\r\n", 5);
}

/* rt-xf's exit file, as conmon writes it: a temporary file renamed to exits/<id>. */
static void write_exit_file(const char *id, int code)
{
    _cleanup_free_ char *tmp = xasprintf("%s/exits/%s.tmp", dts_tmpdir, id);
    _cleanup_free_ char *file = xasprintf("%s/exits/%s", dts_tmpdir, id);
    _cleanup_free_ char *text = xasprintf("%d", code);
    int wfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (wfd < 0)
        return;
    send_all(wfd, text, strlen(text));
    close(wfd);
    (void)rename(tmp, file);
}

/* rt-evt, rt-xf: its log stream follows the log for 1.5 s (one line, then the second, then
 * its end), its wait answers after 3 s. rt-evt: its die event (serve_events) is the first to
 * tell. rt-xf: no die event; its exit file (status 5) appears 100 ms after its start. */
static void serve_evt(int fd, const char *id, const char *verb, const char *p)
{
    char out[512], line[128];
    bool oom, gone;
    int code = container_exit(id, &oom, &gone);
    size_t len = 0;
    int n;

    if (strcmp(verb, "start") == 0 && code == 5) {
        respond(fd, 204, "text/plain", "");
        msleep(100);
        write_exit_file(id, code);
    } else if (strcmp(verb, "start") == 0) {
        _cleanup_free_ char *name = xasprintf("started-%s", id);
        touch_file(name);
        respond(fd, 204, "text/plain", "");
    } else if (strcmp(verb, "logs") == 0) {
        bool follow = strstr(p, "follow=1") != NULL;
        chunked_head(fd, "application/vnd.docker.raw-stream");
        n = snprintf(line, sizeof(line), "line one of %s\n", id);
        len = mux_frame(out, 1, line, (size_t)n);
        n = snprintf(line, sizeof(line), "err two of %s\n", id);
        len += mux_frame(out + len, 2, line, (size_t)n);
        chunk(fd, out, len);
        if (follow)
            msleep(1500);
        n = snprintf(line, sizeof(line), "line three of %s\n", id);
        len = mux_frame(out, 1, line, (size_t)n);
        chunk(fd, out, len);
        send_all(fd, "0\r\n\r\n", 5);
    } else if (strcmp(verb, "wait") == 0) {
        _cleanup_free_ char *out2 = xasprintf("{\"StatusCode\":%d,\"Error\":null}", code);
        msleep(3000);
        respond(fd, 200, "application/json", out2);
    } else {
        _cleanup_free_ char *out2 =
            xasprintf("{\"State\":{\"Status\":\"exited\",\"Running\":false,\"Pid\":0,"
                      "\"ExitCode\":%d,\"OOMKilled\":false}}",
                      code);
        respond(fd, 200, "application/json", out2);
    }
}

/* One ustar header block for a file @name of @size bytes of type @type into @h (512). */
static void tar_header(char *h, const char *name, size_t size, char type)
{
    unsigned sum = 0;

    memset(h, 0, 512);
    (void)snprintf(h, 100, "%s", name);
    (void)snprintf(h + 100, 8, "%07o", 0644);
    (void)snprintf(h + 124, 12, "%011zo", size);
    h[156] = type;
    memcpy(h + 257, "ustar", 6);
    memset(h + 148, ' ', 8);
    for (size_t i = 0; i < 512; i++)
        sum += (unsigned char)h[i];
    (void)snprintf(h + 148, 8, "%06o", sum);
}

/* The images of the container-user tests: rt-user-named runs as "trainer" (1234:1235 in its
 * /etc/passwd), rt-user-group as "trainer:staff" (staff 77), rt-user-num as "4321:4322",
 * rt-user-ghost as a user its passwd lacks, rt-user-slow as "trainer" with an archive that
 * takes 3 s, rt-user-huge as "trainer" with a passwd of 64 MiB, rt-user-stale as "trainer" with
 * a probe of the name in the way (409) until it is removed. A probe is a create whose name
 * ends in "-probe"; its archive is a tar of the one file, after a pax header. */
static bool serve_user(int fd, const char *method, const char *p, const char *body)
{
    static const char passwd[] = "root:x:0:0:root:/root:/bin/sh\n"
                                 "train:x:99:99::/:/bin/sh\n"
                                 "trainer:x:1234:1235:Trainer:/home/trainer:/bin/sh\n";
    static const char group[] = "root:x:0:\nstaff:x:77:trainer\n";
    static const struct {
        const char *image, *user;
    } users[] = {{"rt-user-named", "trainer"},
                 {"rt-user-group", "trainer:staff"},
                 {"rt-user-num", "4321:4322"},
                 {"rt-user-ghost", "ghost"},
                 {"rt-user-slow", "trainer"},
                 {"rt-user-huge", "trainer"},
                 {"rt-user-stale", "trainer"}};
    char id[64];

    for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
        _cleanup_free_ char *path = xasprintf("/images/%s/json", users[i].image);
        if (strcmp(p, path) == 0) {
            _cleanup_free_ char *out =
                xasprintf("{\"Id\":\"sha256:%s\",\"Config\":{\"User\":\"%s\"}}",
                          users[i].image,
                          users[i].user);
            respond(fd, 200, "application/json", out);
            return true;
        }
    }
    if (strcmp(method, "POST") == 0 && strncmp(p, "/containers/create?name=", 24) == 0 &&
        strlen(p) > 30 && strcmp(p + strlen(p) - 6, "-probe") == 0) {
        json_t *j = json_loads(body, 0, NULL);
        const char *image = ty_json_str(j, "Image");
        _cleanup_free_ char *mark = xasprintf("%s/image-of-%s", dts_tmpdir, p + 24);
        _cleanup_free_ char *taken = xasprintf("%s/taken-%s", dts_tmpdir, p + 24);
        int mfd;

        /* rt-user-stale: a probe of that name is there until it is removed */
        if (strcmp(image, "rt-user-stale") == 0 && access(taken, F_OK) != 0) {
            mfd = open(taken, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (mfd >= 0)
                close(mfd);
            respond(fd,
                    409,
                    "application/json",
                    "{\"message\":\"creating container storage: the container name is "
                    "already in use\",\"response\":409}");
            json_decref(j);
            return true;
        }
        mfd = open(mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (mfd >= 0) {
            send_all(mfd, image, strlen(image));
            close(mfd);
        }
        (void)save_body("probe", body);
        respond(fd, 201, "application/json", "{\"Id\":\"0123456789ab\",\"Warnings\":[]}");
        json_decref(j);
        return true;
    }
    if (strcmp(method, "GET") == 0 && sscanf(p, "/containers/%63[^/]/archive", id) == 1 &&
        strlen(id) > 6 && strcmp(id + strlen(id) - 6, "-probe") == 0) {
        _cleanup_free_ char *mark = xasprintf("%s/image-of-%s", dts_tmpdir, id);
        char image[64] = "";
        int mfd = open(mark, O_RDONLY | O_CLOEXEC);
        if (mfd >= 0) {
            ssize_t got = read(mfd, image, sizeof(image) - 1);
            image[got > 0 ? got : 0] = '\0';
            close(mfd);
        }
        bool pw = strstr(p, "?path=/etc/passwd") != NULL;
        const char *text = pw ? passwd : group;
        size_t n = strlen(text), padded = (n + 511) / 512 * 512;
        static const char pax[] = "30 mtime=1700000000.123456789\n";
        char *tar = xcalloc(1, 512 * 2 + 512 + padded + 1024);
        size_t len = 0;

        if (strcmp(image, "rt-user-slow") == 0)
            msleep(3000);
        if (strcmp(image, "rt-user-huge") == 0) { /* a passwd of 64 MiB */
            size_t big = (size_t)64 << 20;
            char *huge = xcalloc(1, 512 + big + 1024);
            tar_header(huge, "passwd", big, '0');
            memset(huge + 512, 'x', big);
            respond_bytes(fd, 200, "application/x-tar", huge, 512 + big + 1024);
            free(huge);
            free(tar);
            return true;
        }
        tar_header(tar, "PaxHeaders/passwd", sizeof(pax) - 1, 'x');
        memcpy(tar + 512, pax, sizeof(pax) - 1);
        tar_header(tar + 1024, pw ? "passwd" : "group", n, '0');
        memcpy(tar + 1536, text, n);
        len = 1536 + padded + 1024;
        respond_bytes(fd, 200, "application/x-tar", tar, len);
        free(tar);
        return true;
    }
    return false;
}

static bool serve_runtime(int fd, const char *method, const char *p, const char *body)
{
    char id[128] = "", verb[32] = "";
    bool oom, gone;
    int code;

    if (strncmp(p, "/containers/", 12) == 0 || strncmp(p, "/networks", 9) == 0)
        log_request(method, p);
    if (serve_user(fd, method, p, body))
        return true;
    if (strcmp(method, "POST") == 0 && strncmp(p, "/containers/create?name=", 24) == 0) {
        _cleanup_free_ char *what = xasprintf("create-%s", p + 24);
        json_t *j = json_loads(body, 0, NULL);
        const char *image = ty_json_str(j, "Image");
        bool init = json_is_true(json_object_get(json_object_get(j, "HostConfig"), "Init"));
        int k = save_body(what, body);
        /* An engine without an init: Podman refuses the create, Docker the start. */
        _cleanup_free_ char *out = xasprintf("{\"Id\":\"%s%s~%d\",\"Warnings\":[]}",
                                             image,
                                             init && strcmp(image, "rt-dinit") == 0 ? "-i" : "",
                                             k);
        if (init && strcmp(image, "rt-noinit") == 0)
            respond(fd,
                    500,
                    "application/json",
                    "{\"cause\":\"no such file or directory\",\"message\":\"container-init "
                    "binary not found on the host: stat /usr/libexec/podman/catatonit: no such "
                    "file or directory\",\"response\":500}");
        else
            respond(fd, 201, "application/json", out);
        json_decref(j);
        return true;
    }
    if (strcmp(p, "/networks") == 0) {
        respond(fd, 200, "application/json", "[]");
        return true;
    }
    if (strcmp(method, "POST") == 0 && strcmp(p, "/networks/create") == 0) {
        (void)save_body("network", body);
        respond(fd, 201, "application/json", "{\"Id\":\"net1\"}");
        return true;
    }
    if (strcmp(method, "DELETE") == 0 &&
        (strncmp(p, "/containers/", 12) == 0 || strncmp(p, "/networks/", 10) == 0)) {
        respond(fd, 204, "text/plain", "");
        return true;
    }
    if (strncmp(p, "/events?", 8) == 0) {
        serve_events(fd, p);
        return true;
    }
    if (strncmp(p, "/images/rt-", 11) == 0) {
        respond(fd, 200, "application/json", "{\"Id\":\"sha256:3\"}");
        return true;
    }
    if (strncmp(p, "/containers/rt-", 15) != 0 || sscanf(p + 12, "%127[^/]/%31[a-z]", id, verb) < 1)
        return false;
    code = container_exit(id, &oom, &gone);
    if (strncmp(id, "rt-evt~", 7) == 0 || strncmp(id, "rt-xf~", 6) == 0) {
        serve_evt(fd, id, verb, p);
        return true;
    }
    if (strcmp(verb, "start") == 0 && strncmp(id, "rt-dinit-i~", 11) == 0) {
        respond(fd,
                500,
                "application/json",
                "{\"message\":\"failed to create task for container: OCI runtime create "
                "failed: exec: \\\"docker-init\\\": executable file not found in $PATH\"}");
    } else if (strcmp(verb, "start") == 0 || strcmp(verb, "kill") == 0) {
        respond(fd, 204, "text/plain", "");
    } else if (strncmp(id, "rt-long~", 8) == 0 && strcmp(verb, "json") != 0) {
        /* Runs until the server goes (logs, wait: no end). */
        chunked_head(fd, "application/vnd.docker.raw-stream");
        for (;;)
            msleep(1000);
    } else if (strcmp(verb, "logs") == 0) {
        char out[256], line[128];
        int n = snprintf(line, sizeof(line), "output of %s\n", id);
        size_t len = mux_frame(out, 1, line, (size_t)n);
        chunked_head(fd, "application/vnd.docker.raw-stream");
        chunk(fd, out, len);
        msleep(50);
        send_all(fd, "0\r\n\r\n", 5);
    } else if (strcmp(verb, "wait") == 0) {
        msleep(400); /* Podman's wait polls: later than the log stream's end */
        respond(fd,
                200,
                "application/json",
                gone   ? "{\"StatusCode\":0,\"Error\":{\"Message\":\"no such container\"}}"
                : code ? "{\"StatusCode\":137,\"Error\":null}"
                       : "{\"StatusCode\":0,\"Error\":null}");
    } else if (gone) {
        respond(fd, 404, "application/json", "{\"message\":\"no such container\"}");
    } else {
        _cleanup_free_ char *out =
            xasprintf("{\"Id\":\"%s\",\"State\":{\"Status\":\"exited\",\"Running\":false,"
                      "\"Pid\":0,\"ExitCode\":%d,\"OOMKilled\":%s}}",
                      id,
                      code,
                      oom ? "true" : "false");
        respond(fd, 200, "application/json", out);
    }
    return true;
}

/* The engine's routes (images, garbage collection) for the container-engine tests. Returns
 * whether @p was one. */
static bool serve_engine(int fd, const char *p)
{
    if (strcmp(p, "/images/present/json") == 0) {
        respond(fd, 200, "application/json", "{\"Id\":\"sha256:1\"}");
    } else if (strcmp(p, "/images/slow/json") == 0) {
        msleep(300);
        respond(fd, 200, "application/json", "{\"Id\":\"sha256:2\"}");
    } else if (strncmp(p, "/images/create?fromImage=good", 29) == 0) {
        chunked_head(fd, "application/json");
        chunk(fd, "{\"status\":\"Pulling\"}\n", 21);
        msleep(50);
        chunk(fd, "{\"status\":\"Done\"}\n", 18);
        send_all(fd, "0\r\n\r\n", 5);
    } else if (strncmp(p, "/images/create?fromImage=broken", 31) == 0) {
        respond(fd,
                200,
                "application/json",
                "{\"status\":\"Pulling\"}\n{\"error\":\"manifest unknown\"}\n");
    } else if (strncmp(p, "/containers/json?all=1", 22) == 0) {
        /* dead owners: one of the older label (pid:start), one of this PID namespace; one
         * of another namespace, whose pids are not ours to judge; one not trainyard's; one
         * with a dead owner's labels but a user's name (run from an image committed from a
         * replica's container) */
        struct stat ns;
        char list[1024];
        (void)snprintf(
            list,
            sizeof(list),
            "[{\"Id\":\"dead1\",\"Names\":[\"/trainyard-0123456789-master-replica-0\"],"
            "\"Labels\":{\"trainyard.owner\":\"999999999:1\",\"trainyard.task\":"
            "\"master-replica-0\"}},"
            "{\"Id\":\"dead2\",\"Names\":[\"/trainyard-0123456789-probe\"],"
            "\"Labels\":{\"trainyard.owner\":\"999999998:1:%llu\"}},"
            "{\"Id\":\"foreign\",\"Names\":[\"/trainyard-abcdef0123-probe\"],"
            "\"Labels\":{\"trainyard.owner\":\"999999997:1:1\"}},"
            "{\"Id\":\"committed\",\"Names\":[\"/mine\"],\"Labels\":{\"trainyard.owner\":"
            "\"999999996:1\",\"trainyard.task\":\"master-replica-0\"}},"
            "{\"Id\":\"other\",\"Labels\":{}}]",
            stat("/proc/self/ns/pid", &ns) == 0 ? (unsigned long long)ns.st_ino : 0ULL);
        respond(fd, 200, "application/json", list);
    } else if (strncmp(p, "/networks?filters=", 18) == 0) {
        respond(fd, 200, "application/json", "[]");
    } else if (strcmp(p, "/containers/dead1?force=1&v=1") == 0 ||
               strcmp(p, "/containers/dead2?force=1&v=1") == 0 ||
               strcmp(p, "/containers/foreign?force=1&v=1") == 0 ||
               strcmp(p, "/containers/committed?force=1&v=1") == 0) {
        respond(fd, 204, "text/plain", "");
    } else {
        return false;
    }
    return true;
}

static void serve_conn(int fd)
{
    struct ty_buf in = TY_BUF_INIT;
    int nreq = 0;

    for (;;) {
        char method[16], path[256], clen_s[32], ctype[128], xtest[128];
        char *end;
        size_t head_len, clen;

        while (!(end = in.data ? strstr(in.data, "\r\n\r\n") : NULL)) {
            char b[4096];
            ssize_t r = read(fd, b, sizeof(b));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                _exit(0);
            ty_buf_append(&in, b, (size_t)r);
        }
        head_len = (size_t)(end - in.data) + 4;
        if (sscanf(in.data, "%15s %255s", method, path) != 2)
            _exit(1);
        header_value(in.data, "Content-Length", clen_s, sizeof(clen_s));
        header_value(in.data, "Content-Type", ctype, sizeof(ctype));
        header_value(in.data, "X-Test", xtest, sizeof(xtest));
        clen = clen_s[0] ? strtoul(clen_s, NULL, 10) : 0;
        while (in.len < head_len + clen) {
            char b[4096];
            ssize_t r = read(fd, b, sizeof(b));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                _exit(0);
            ty_buf_append(&in, b, (size_t)r);
        }
        _cleanup_free_ char *body = xstrndup(in.data + head_len, clen);
        ty_buf_consume(&in, head_len + clen);
        nreq++;

        if (strncmp(path, "/v1.41/", 7) != 0) {
            respond(fd, 400, "text/plain", "no version prefix");
            continue;
        }
        const char *p = path + 6;
        if (serve_engine(fd, p) || serve_runtime(fd, method, p, body)) {
            /* answered */
        } else if (strcmp(p, "/_ping") == 0) {
            respond(fd, 200, "text/plain", "OK");
        } else if (strcmp(p, "/json") == 0) {
            char b[128];
            (void)snprintf(b, sizeof(b), "{\"Id\":\"abc123\",\"conn_req\":%d}", nreq);
            respond(fd, 200, "application/json", b);
        } else if (strcmp(p, "/stream") == 0) {
            chunked_head(fd, "text/plain");
            for (int i = 1; i <= 4; i++) {
                char b[32];
                int k = snprintf(b, sizeof(b), "piece-%d\n", i);
                chunk(fd, b, (size_t)k);
                if (i < 4)
                    msleep(150);
            }
            send_all(fd, "0\r\n\r\n", 5);
        } else if (strcmp(p, "/forever") == 0) {
            chunked_head(fd, "text/plain");
            for (;;) {
                chunk(fd, "tick\n", 5);
                msleep(40);
            }
        } else if (strncmp(p, "/slow?ms=", 9) == 0) {
            msleep(strtol(p + 9, NULL, 10));
            respond(fd, 200, "text/plain", "late");
        } else if (strcmp(p, "/echo") == 0) {
            _cleanup_free_ char *b = xasprintf("method=%s\nctype=%s\nclen=%s\nxtest=%s\nbody=%s",
                                               method,
                                               ctype,
                                               clen_s[0] ? clen_s : "-",
                                               xtest,
                                               body);
            respond(fd, 200, "text/plain", b);
        } else if (strcmp(p, "/error") == 0) {
            respond(fd,
                    404,
                    "application/json",
                    "{\"cause\":\"no such container\",\"message\":\"no such container: x\","
                    "\"response\":404}\n");
        } else if (strcmp(p, "/close") == 0) {
            _exit(0);
        } else if (strcmp(p, "/logs") == 0) {
            char s[256];
            size_t n = 0;
            n += mux_frame(s + n, 1, "line one\n", 9);
            n += mux_frame(s + n, 2, "warn\n", 5);
            n += mux_frame(s + n, 1, "line two\n", 9);
            chunked_head(fd, "application/vnd.docker.raw-stream");
            for (size_t off = 0; off < n; off += 5) {
                chunk(fd, s + off, n - off < 5 ? n - off : 5);
                msleep(5);
            }
            send_all(fd, "0\r\n\r\n", 5);
        } else {
            respond(fd, 404, "application/json", "{\"message\":\"page not found\"}");
        }
    }
}

int start_server(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd, pipefd[2];
    char c;

    if (pipe(pipefd) < 0)
        return -1;
    (void)unlink(dts_sock_path); /* a server stopped before left it */
    (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dts_sock_path);
    server_pid = fork();
    if (server_pid < 0)
        return -1;
    if (server_pid == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGCHLD, SIG_IGN); /* connection handlers reap themselves */
        signal(SIGPIPE, SIG_IGN);
        close(pipefd[0]);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
            _exit(1);
        send_all(pipefd[1], "r", 1);
        close(pipefd[1]);
        for (;;) {
            int c2 = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
            if (c2 < 0)
                continue;
            pid_t h = fork();
            if (h == 0) {
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() == 1)
                    _exit(0);
                close(fd);
                serve_conn(c2);
                _exit(0);
            }
            close(c2);
        }
    }
    close(pipefd[1]);
    if (read(pipefd[0], &c, 1) != 1) {
        close(pipefd[0]);
        return -1;
    }
    close(pipefd[0]);
    return 0;
}

void stop_server(void)
{
    int st;
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        (void)waitpid(server_pid, &st, 0);
        server_pid = -1;
    }
}

int dts_setup(void)
{
    (void)snprintf(dts_tmpdir, sizeof(dts_tmpdir), "/tmp/ty-dapi-XXXXXX");
    if (!mkdtemp(dts_tmpdir))
        return -1;
    (void)snprintf(dts_sock_path, sizeof(dts_sock_path), "%s/api.sock", dts_tmpdir);
    return 0;
}

void dts_teardown(void)
{
    DIR *d = opendir(dts_tmpdir);
    struct dirent *de;

    /* Only plain names the tests made: sockets, the request log, saved bodies, and empty
     * directories (test-container-user's jobDirs and metric directories). */
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        _cleanup_free_ char *f = xasprintf("%s/%s", dts_tmpdir, de->d_name);
        if (unlink(f) < 0 && errno == EISDIR)
            (void)rmdir(f);
    }
    if (d)
        closedir(d);
    (void)rmdir(dts_tmpdir);
}
