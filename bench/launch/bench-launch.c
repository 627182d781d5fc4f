/* SPDX-License-Identifier: Apache-2.0
 * bench-launch.c: how much does trainyard add to starting and ending a job?
 *
 * Runs, interleaved so machine noise hits both alike:
 *   trainyard: `trainyard local train` of a 1 master + 16 worker job whose replicas run
 *              `true`, timed from the CLI's start to every replica started (the job's
 *              startTime, which the CLI records once all replicas are launched) and to the
 *              CLI's exit;
 *   baseline:  a plain fork/exec of 17 `true` processes from this program, timed to every
 *              exec done and to every child reaped;
 *   contained: the same, each child in a cgroup of its own with its machine type's limits,
 *              all removed after the reaping (bench-contained.h): what the kernel charges for
 *              containing the replicas as the process runtime does, without trainyard.
 * Prints the medians and the ratios to both baselines (goal: <= 1.2x the plain one). Not a
 * test: nothing here passes or fails. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../bench-contained.h"
#include "../bench-stats.h"

#define REPLICAS 17

static double now_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Baseline: fork/exec 17 `true`, each in a cgroup of its own when @c is not NULL; returns
 * seconds to all exec'd (*started) and all reaped (and, contained, the cgroups removed). */
static double baseline(struct bench_contained *c, double *started)
{
    double t0 = bench_now_mono();
    pid_t pids[REPLICAS];
    int pipes[REPLICAS];

    if (c)
        bench_contained_begin(c, REPLICAS);
    for (int i = 0; i < REPLICAS; i++) {
        int p[2];
        if (c)
            bench_contained_replica(c, i);
        if (pipe2(p, O_CLOEXEC) < 0)
            exit(1);
        pids[i] = fork();
        if (pids[i] == 0) {
            char *argv[] = {"true", NULL};
            if (c && bench_contained_enter(c, i) < 0)
                _exit(126);
            execvp(argv[0], argv);
            _exit(127);
        }
        if (c)
            bench_contained_forked(c, i);
        close(p[1]);
        pipes[i] = p[0];
    }
    for (int i = 0; i < REPLICAS; i++) {
        char byte;
        while (read(pipes[i], &byte, 1) > 0) /* EOF once the child has exec'd */
            ;
        close(pipes[i]);
    }
    *started = bench_now_mono() - t0;
    for (int i = 0; i < REPLICAS; i++)
        waitpid(pids[i], NULL, 0);
    if (c)
        bench_contained_end(c);
    return bench_now_mono() - t0;
}

/* Parse "2026-11-30T09:00:00.123456Z" into epoch seconds. */
static double parse_time(const char *s)
{
    struct tm tm = {0};
    double frac = 0;
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return 0;
    if (*p == '.')
        frac = strtod(p, NULL);
    return (double)timegm(&tm) + frac;
}

static double job_start_time(const char *home, const char *id)
{
    char path[4096], buf[65536];
    FILE *f;
    size_t n;
    char *p;

    snprintf(path, sizeof(path), "%s/jobs/local/%s/job.json", home, id);
    f = fopen(path, "r");
    if (!f)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strstr(buf, "\"startTime\": \"");
    return p ? parse_time(p + 14) : 0;
}

static double
trainyard(const char *bin, const char *config, const char *home, int run, double *started)
{
    char id[64];
    double r0 = now_real(), t0 = bench_now_mono(), t;
    pid_t pid;
    int status;

    snprintf(id, sizeof(id), "bench_%d_%d", (int)getpid(), run);
    pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(bin, bin, "local", "train", id, "--config", config, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    t = bench_now_mono() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench-launch: trainyard run %d failed (status %d)\n", run, status);
        exit(1);
    }
    *started = job_start_time(home, id) - r0;
    return t;
}

int main(int argc, char **argv)
{
    const char *bin, *config, *home;
    int runs = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 30;
    double *b_start, *b_end, *c_start, *c_end, *t_start, *t_end;
    struct bench_contained c;

    if (argc < 3 || runs < 1) {
        fprintf(stderr,
                "usage: bench-launch TRAINYARD CONFIG [RUNS]\n"
                "(TRAINYARD_HOME must name a scratch state directory)\n");
        return 2;
    }
    bin = argv[1];
    config = argv[2];
    home = getenv("TRAINYARD_HOME");
    if (!home)
        return 2;
    b_start = calloc((size_t)runs, sizeof(double));
    b_end = calloc((size_t)runs, sizeof(double));
    c_start = calloc((size_t)runs, sizeof(double));
    c_end = calloc((size_t)runs, sizeof(double));
    t_start = calloc((size_t)runs, sizeof(double));
    t_end = calloc((size_t)runs, sizeof(double));
    /* One warm-up of each, not counted. */
    {
        double s;
        baseline(NULL, &s);
        baseline(&c, &s);
        trainyard(bin, config, home, runs, &s);
    }
    for (int i = 0; i < runs; i++) {
        b_end[i] = baseline(NULL, &b_start[i]);
        c_end[i] = baseline(&c, &c_start[i]);
        t_end[i] = trainyard(bin, config, home, i, &t_start[i]);
    }
    double bs = bench_median(b_start, runs), be = bench_median(b_end, runs);
    double cs = bench_median(c_start, runs), ce = bench_median(c_end, runs);
    double ts = bench_median(t_start, runs), te = bench_median(t_end, runs);
    printf("launch benchmark: 1 master + 16 workers running `true`, %d runs, medians\n", runs);
    printf("  %-34s %10s %10s\n", "", "started", "ended");
    printf("  %-34s %8.2f ms %8.2f ms\n", "baseline (fork/exec 17 true)", bs * 1e3, be * 1e3);
    printf("  %-34s %8.2f ms %8.2f ms\n", "contained (the same, in cgroups)", cs * 1e3, ce * 1e3);
    printf("  %-34s %8.2f ms %8.2f ms\n", "trainyard local train", ts * 1e3, te * 1e3);
    printf("  %-34s %9.2fx %9.2fx   (goal: <= 1.2x)\n", "ratio", ts / bs, te / be);
    printf("  %-34s %9.2fx %9.2fx\n", "ratio to the contained baseline", ts / cs, te / ce);
    return 0;
}
