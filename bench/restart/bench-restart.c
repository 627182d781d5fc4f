/* SPDX-License-Identifier: Apache-2.0
 * bench-restart.c: how long does a replica killed from outside stay down before trainyard has
 * its program running again (docs/lifecycle.md, "Restarts and retries")?
 *
 * Runs, interleaved so machine noise hits both alike:
 *   trainyard: `trainyard local train` of a master and one worker; the worker kills itself with
 *              SIGKILL five times (so trainyard restarts it five times in place) and then ends;
 *   baseline:  this program respawning the same worker command five times itself (fork, exec,
 *              waitpid, fork again at once): a plain respawn loop, the least any restart costs.
 * Both workers are `sh -c` running this program as a probe, which appends the wall clock to
 * <file>.start when it starts and to <file>.death right before it kills itself; a restart's
 * latency is the next start minus the death. Prints the medians and their ratio. Not a test:
 * nothing here passes or fails.
 *
 * Usage: bench-restart TRAINYARD SCRATCH_DIR ROUNDS
 *        bench-restart probe start|die FILE       (the replicas' probe) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../bench-stats.h"

#define RESTARTS    5
#define MAX_SAMPLES 4096

static double now_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void append_time(const char *file, const char *suffix)
{
    char path[4096], line[64];
    int fd, n;

    (void)snprintf(path, sizeof(path), "%s.%s", file, suffix);
    n = snprintf(line, sizeof(line), "%.6f\n", now_real());
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, line, (size_t)n) != n)
        exit(1);
    close(fd);
}

static int probe(const char *what, const char *file)
{
    if (strcmp(what, "start") == 0) {
        append_time(file, "start");
        return 0;
    }
    append_time(file, "death");
    raise(SIGKILL);
    return 1;
}

/* Read up to @max times from @path. */
static int read_times(const char *path, double *v, int max)
{
    FILE *f = fopen(path, "re");
    int n = 0;
    if (!f)
        return 0;
    while (n < max && fscanf(f, "%lf", &v[n]) == 1)
        n++;
    fclose(f);
    return n;
}

/* Add start[i+1] - death[i] of the probe file @file to @out. */
static void collect(const char *file, double *out, int *n_out)
{
    char path[4096];
    double starts[64], deaths[64];
    int ns, nd;

    (void)snprintf(path, sizeof(path), "%s.start", file);
    ns = read_times(path, starts, 64);
    (void)snprintf(path, sizeof(path), "%s.death", file);
    nd = read_times(path, deaths, 64);
    for (int i = 0; i < nd && i + 1 < ns && *n_out < MAX_SAMPLES; i++)
        out[(*n_out)++] = starts[i + 1] - deaths[i];
}

/* The worker's command: start, die until RESTARTS deaths are recorded, then end. */
static void worker_script(char *buf, size_t n, const char *self, const char *file)
{
    (void)snprintf(
        buf,
        n,
        "%s probe start %s; "
        "if [ \"$(cat %s.death 2>/dev/null | wc -l)\" -lt %d ]; then exec %s probe die %s; fi; "
        "touch %s.done",
        self,
        file,
        file,
        RESTARTS,
        self,
        file,
        file);
}

static int run_sh(const char *script)
{
    int status;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* Baseline: respawn the worker at once each time it dies, RESTARTS times. */
static void baseline(const char *self, const char *file)
{
    char script[16384];
    worker_script(script, sizeof(script), self, file);
    for (int i = 0; i <= RESTARTS; i++)
        if (!WIFSIGNALED(run_sh(script)))
            break;
}

/* trainyard: a job whose worker is restarted RESTARTS times in place. */
static int trainyard(const char *ty, const char *dir, int round, const char *self, const char *file)
{
    char worker[16384], job[32768], path[2048], cmd[40000];
    FILE *f;

    worker_script(worker, sizeof(worker), self, file);
    (void)snprintf(path, sizeof(path), "%s/job-%d.json", dir, round);
    f = fopen(path, "we");
    if (!f)
        return -1;
    /* The master waits for the worker's end; both run `sh -c`, told apart by TF_CONFIG. */
    (void)snprintf(job,
                   sizeof(job),
                   "case \"$TF_CONFIG\" in *'\"type\":\"worker\"'*) %s ;; "
                   "*) while [ ! -e %s.done ]; do sleep 0.02; done ;; esac",
                   worker,
                   file);
    fprintf(f,
            "{\"trainingInput\": {\"scaleTier\": \"CUSTOM\", \"masterType\": \"n1-standard-4\", "
            "\"workerType\": \"n1-standard-4\", \"workerCount\": 1, \"masterConfig\": "
            "{\"imageUri\": \"example.com/bench:1\", \"containerCommand\": [\"sh\", \"-c\", ");
    fputc('"', f);
    for (const char *p = job; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        fputc(*p, f);
    }
    fprintf(f, "\"]}}}\n");
    fclose(f);
    (void)snprintf(cmd,
                   sizeof(cmd),
                   "%s local train bench_restart_%d_%d --config %s >/dev/null 2>&1",
                   ty,
                   (int)getpid(),
                   round,
                   path);
    return run_sh(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    static double ty_lat[MAX_SAMPLES], base_lat[MAX_SAMPLES];
    int n_ty = 0, n_base = 0, rounds, failed = 0;
    char self[1024], file[1024];
    ssize_t len;

    if (argc == 4 && strcmp(argv[1], "probe") == 0)
        return probe(argv[2], argv[3]);
    if (argc != 4) {
        fprintf(stderr, "usage: bench-restart TRAINYARD SCRATCH_DIR ROUNDS\n");
        return 2;
    }
    rounds = (int)strtol(argv[3], NULL, 10);
    len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len < 0)
        return 1;
    self[len] = '\0';
    for (int r = 0; r < rounds; r++) {
        (void)snprintf(file, sizeof(file), "%s/base-%d", argv[2], r);
        baseline(self, file);
        collect(file, base_lat, &n_base);
        (void)snprintf(file, sizeof(file), "%s/ty-%d", argv[2], r);
        if (trainyard(argv[1], argv[2], r, self, file) < 0)
            failed++;
        collect(file, ty_lat, &n_ty);
    }
    printf("restart latency (replica death to its program running again), %d rounds x %d "
           "restarts\n",
           rounds,
           RESTARTS);
    printf("  baseline (plain respawn):  median %.2f ms  (%d samples)\n",
           bench_median(base_lat, n_base) * 1e3,
           n_base);
    printf("  trainyard (process runtime): median %.2f ms  (%d samples, %d failed jobs)\n",
           bench_median(ty_lat, n_ty) * 1e3,
           n_ty,
           failed);
    if (n_base > 0 && n_ty > 0)
        printf("  ratio trainyard/baseline: %.2fx\n",
               bench_median(ty_lat, n_ty) / bench_median(base_lat, n_base));
    return failed ? 1 : 0;
}
