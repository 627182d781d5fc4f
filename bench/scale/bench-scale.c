/* SPDX-License-Identifier: Apache-2.0
 * bench-scale.c: does trainyard stay close to the floor at 1,000 replicas?
 *
 *   time:   `trainyard local train` of a 1 master + 999 worker job whose replicas run `true`,
 *           from the CLI's start to its exit, against the floor: this program posix_spawn()ing
 *           1,000 `true` and waiting for them; and against the contained floor: fork/exec of
 *           1,000 `true`, each in a cgroup of its own with its machine type's limits, all
 *           removed once reaped (bench-contained.h: what the kernel charges for containing the
 *           replicas as the process runtime does). Runs interleaved so machine noise hits all
 *           alike; medians and their ratios (goal: <= 1.3x the plain floor).
 *   memory: a 1 + 999 job of `sleep`: once every replica has started (the job's startTime is
 *           recorded), the VmRSS of the supervising process (`local train` itself) divided by
 *           the replicas, and the same less the RSS of a 1 + 0 job (what each replica adds);
 *           goal < 50 KB. The job is then cancelled (SIGINT) and waited for.
 * Not a test: nothing here passes or fails. */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../bench-contained.h"
#include "../bench-stats.h"

#define REPLICAS 1000

extern char **environ;

/* The floor: posix_spawn 1,000 `true`, wait for every one. Seconds. */
static double floor_run(void)
{
    char *argv[] = {"true", NULL};
    double t0 = bench_now_mono();
    int n = 0;

    for (int i = 0; i < REPLICAS; i++) {
        pid_t pid;
        if (posix_spawnp(&pid, "true", NULL, NULL, argv, environ) == 0)
            n++;
    }
    while (n > 0 && wait(NULL) > 0)
        n--;
    return bench_now_mono() - t0;
}

/* The contained floor: fork/exec 1,000 `true`, each in a cgroup of its own, wait for every
 * one, remove the cgroups. Seconds. */
static double contained_run(void)
{
    struct bench_contained c;
    double t0 = bench_now_mono();
    int n = 0;

    bench_contained_begin(&c, REPLICAS);
    for (int i = 0; i < REPLICAS; i++) {
        pid_t pid;
        bench_contained_replica(&c, i);
        pid = fork();
        if (pid == 0) {
            char *argv[] = {"true", NULL};
            if (bench_contained_enter(&c, i) < 0)
                _exit(126);
            execvp(argv[0], argv);
            _exit(127);
        }
        bench_contained_forked(&c, i);
        n += pid > 0;
    }
    while (n > 0 && wait(NULL) > 0)
        n--;
    bench_contained_end(&c);
    return bench_now_mono() - t0;
}

/* Start `trainyard local train ID --config CONFIG` with its output to /dev/null. */
static pid_t start_trainyard(const char *bin, const char *config, const char *id)
{
    pid_t pid = fork();

    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(bin, bin, "local", "train", id, "--config", config, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static double trainyard_run(const char *bin, const char *config, int run)
{
    char id[64];
    double t0 = bench_now_mono();
    int status;
    pid_t pid;

    snprintf(id, sizeof(id), "scale_%d_%d", (int)getpid(), run);
    pid = start_trainyard(bin, config, id);
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench-scale: trainyard run %d failed (status %d)\n", run, status);
        exit(1);
    }
    return bench_now_mono() - t0;
}

/* Whether job @id's record has its startTime (every replica started). */
static int job_started(const char *home, const char *id)
{
    char path[4096], buf[65536];
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "%s/jobs/local/%s/job.json", home, id);
    f = fopen(path, "r");
    if (!f)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, "\"startTime\"") != NULL;
}

/* A /proc/PID/status field in kB, or -1. */
static long status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    size_t fl = strlen(field);
    long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':')
            v = strtol(line + fl + 1, NULL, 10);
    fclose(f);
    return v;
}

/* Run the sleep job of @config until it is RUNNING, read the supervisor's RSS (kB) into
 * *rss and *anon, cancel it and wait. Returns 0, or -1 when it did not start in 300 s. */
static int
sleep_job_rss(const char *bin, const char *config, const char *home, long *rss, long *anon)
{
    static int seq;
    char id[64];
    double t0 = bench_now_mono();
    pid_t pid;
    int started = 0;

    snprintf(id, sizeof(id), "scale_mem_%d_%d", (int)getpid(), seq++);
    pid = start_trainyard(bin, config, id);
    while (!(started = job_started(home, id)) && bench_now_mono() - t0 < 300) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
        usleep(20000);
    }
    *rss = status_kb(pid, "VmRSS");
    *anon = status_kb(pid, "RssAnon");
    kill(pid, SIGINT);
    waitpid(pid, NULL, 0);
    return started ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *home = getenv("TRAINYARD_HOME");
    int runs = argc > 5 ? (int)strtol(argv[5], NULL, 10) : 3;
    double *f, *c, *t, fm, cm, tm;
    long rss1, anon1, rss, anon;

    if (argc < 5 || runs < 1 || !home) {
        fprintf(stderr,
                "usage: bench-scale TRAINYARD TRUE_JOB SLEEP_JOB SLEEP_JOB_1 [RUNS]\n"
                "(TRAINYARD_HOME must name a scratch state directory)\n");
        return 2;
    }
    f = calloc((size_t)runs, sizeof(double));
    c = calloc((size_t)runs, sizeof(double));
    t = calloc((size_t)runs, sizeof(double));
    for (int i = 0; i < runs; i++) {
        f[i] = floor_run();
        c[i] = contained_run();
        t[i] = trainyard_run(argv[1], argv[2], i);
    }
    fm = bench_median(f, runs);
    cm = bench_median(c, runs);
    tm = bench_median(t, runs);
    printf("scale benchmark: 1 master + 999 workers running `true`, %d runs, medians\n", runs);
    printf("  %-44s %8.2f s\n", "floor (posix_spawn 1000 true, wait)", fm);
    printf("  %-44s %8.2f s\n", "contained floor (fork/exec in cgroups)", cm);
    printf("  %-44s %8.2f s\n", "trainyard local train", tm);
    printf("  %-44s %8.2fx   (goal: <= 1.3x)\n", "ratio", tm / fm);
    printf("  %-44s %8.2fx\n", "ratio to the contained floor", tm / cm);

    if (sleep_job_rss(argv[1], argv[4], home, &rss1, &anon1) < 0 ||
        sleep_job_rss(argv[1], argv[3], home, &rss, &anon) < 0) {
        fprintf(stderr, "bench-scale: the sleep job did not start\n");
        return 1;
    }
    printf("memory: supervising process of a 1 + 999 `sleep` job, once every replica started\n");
    printf("  %-44s %8ld kB (RssAnon %ld kB)\n", "VmRSS, 1 + 999 replicas", rss, anon);
    printf("  %-44s %8ld kB (RssAnon %ld kB)\n", "VmRSS, 1 + 0 replicas", rss1, anon1);
    printf("  %-44s %8.1f kB   (goal: < 50 kB)\n",
           "per replica (VmRSS / 1000)",
           rss / (double)REPLICAS);
    printf("  %-44s %8.1f kB\n",
           "added per replica ((VmRSS - VmRSS 1+0) / 999)",
           (rss - rss1) / (double)(REPLICAS - 1));
    free(f);
    free(c);
    free(t);
    return 0;
}
