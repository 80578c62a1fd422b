/*
 * exit_race: how often a CUDA process crashes on its way out when a
 * thread of its own still calls CUDA (umadv(7), PROCESS EXIT).
 *
 * Each run is this program again, as a child (--child WAY): device 0
 * made current, one managed allocation, then for WAY "tight" a thread
 * calling cudaMemGetInfo without pause, for "monitor" the same every
 * 2 ms (the period of umadv's GPU memory monitor), for "none" no
 * thread, and for "umadv" a umadv context that profiles an iteration of
 * one step, plans it and replays it (its executor's threads, the monitor
 * among them, running); main returns 20 ms later, the thread or the
 * replay still running. The parent
 * starts --at-once children at a time, --runs per way, and counts how
 * they ended: exit status 0, killed by a signal (SIGSEGV above all), or
 * another status. The ways alternate, so that each sees the same load.
 *
 * Measured (H200, driver 580.159.04, 2026-11-29, six at once, 120 runs,
 * by a throwaway copy of the child): tight 18 of 120 killed by SIGSEGV,
 * every 2 ms 2 of 120. umadv's replay had such a thread and nothing
 * stopped it at exit: `umadv run` on examples/jacobi crashed after its
 * summary in 3 of 48 runs. Every live context now stops its replay from
 * an exit handler that runs before CUDA's own (src/api/context.c,
 * PROCESS EXIT): the "umadv" row counts its children's crashes.
 *
 *   bench/exit_race [--runs N] [--at-once N]
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umadv.h>

#include "bench_gpu.h"

#define PROG           "exit_race"
#define MONITOR_US     2000 /* src/api/replay.c, REPLAY_MONITOR_PERIOD_NS */
#define CHILD_LIFE_MS  20

typedef enum { WAY_NONE, WAY_MONITOR, WAY_TIGHT, WAY_UMADV, WAY_COUNT } way_t;

static const char *const way_names[WAY_COUNT] = {"none", "monitor", "tight", "umadv"};

/* How the children of one way ended. */
typedef struct tally {
    unsigned ok, segv, signal, other;
} tally_t;

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *sampler_main(void *arg)
{
    long period_us = *(const long *)arg;
    size_t free_b, total_b;

    (void)cudaSetDevice(0);
    for (;;) {
        (void)cudaMemGetInfo(&free_b, &total_b);
        if (period_us > 0)
            sleep_us(period_us);
    }
    return NULL;
}

/* A umadv context replaying a plan of one step over a block of its own,
 * left alive: its exit handler stops the replay (umadv(7), PROCESS
 * EXIT). */
static int replay_left_running(void)
{
    const size_t size = 8u << 20;
    umadv_context_t ctx = NULL;
    umadv_status_t status;
    void *p = NULL;

    setenv("UMADV_LINK_PROBE", "0", 1); /* a second per child, and not measured here */
    status = umadv_context_create(NULL, &ctx);
    if (status == UMADV_OK)
        status = umadv_malloc(ctx, size, "block", &p);
    if (status == UMADV_OK)
        status = umadv_profile_next_iteration(ctx);
    for (int i = 0; i < 4 && status == UMADV_OK; i++) {
        if (i == 2)
            status = umadv_plan(ctx);
        if (status == UMADV_OK)
            status = umadv_iteration_begin(ctx);
        if (status == UMADV_OK)
            status = umadv_step_begin(ctx, "touch", NULL);
        if (status == UMADV_OK)
            status = umadv_step_access(ctx, p, size, UMADV_ACCESS_READ);
        if (status == UMADV_OK)
            status = umadv_step_end(ctx, 0);
    }
    if (status != UMADV_OK) {
        fprintf(stderr, PROG ": no replay: %s\n", umadv_status_string(status));
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

/* The child: returns from main with the sampler or the replay, if any,
 * running. */
static int child_main(way_t way)
{
    static long period_us;
    pthread_t thread;
    void *p = NULL;

    bench_require_managed_gpu(PROG);
    bench_cuda_check(PROG, cudaMallocManaged(&p, 1 << 20, cudaMemAttachGlobal),
                     "cudaMallocManaged");
    if (way == WAY_UMADV && replay_left_running() != EXIT_SUCCESS)
        return EXIT_FAILURE;
    if (way == WAY_MONITOR || way == WAY_TIGHT) {
        period_us = way == WAY_MONITOR ? MONITOR_US : 0;
        if (pthread_create(&thread, NULL, sampler_main, &period_us) != 0) {
            fprintf(stderr, PROG ": cannot start a thread\n");
            return EXIT_FAILURE;
        }
    }
    sleep_us(CHILD_LIFE_MS * 1000L);
    return EXIT_SUCCESS;
}

static pid_t child_start(const char *self, way_t way)
{
    pid_t pid = fork();

    if (pid == 0) {
        execl(self, self, "--child", way_names[way], (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void tally_add(tally_t *t, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        t->ok++;
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
        t->segv++;
    else if (WIFSIGNALED(status))
        t->signal++;
    else
        t->other++;
}

/* @runs children per way, @at_once at a time, the ways in turn. */
static void race(const char *self, unsigned runs, unsigned at_once, tally_t *tallies)
{
    pid_t pids[64];
    way_t ways[64];
    unsigned started = 0, total = runs * WAY_COUNT;

    while (started < total) {
        unsigned n = 0;

        for (; n < at_once && started < total; n++, started++) {
            ways[n] = (way_t)(started % WAY_COUNT);
            pids[n] = child_start(self, ways[n]);
        }
        for (unsigned i = 0; i < n; i++) {
            int status = -1;

            if (pids[i] < 0 || waitpid(pids[i], &status, 0) < 0)
                tallies[ways[i]].other++;
            else
                tally_add(&tallies[ways[i]], status);
        }
    }
}

static int way_parse(const char *name)
{
    for (int w = 0; w < WAY_COUNT; w++)
        if (strcmp(name, way_names[w]) == 0)
            return w;
    return -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: exit_race [--runs N] [--at-once N]\n");
    exit(2);
}

static unsigned count_parse(const char *flag, const char *text, unsigned max)
{
    char *end;
    unsigned long v = strtoul(text, &end, 10);

    if (*text == '\0' || *end != '\0' || v == 0 || v > max) {
        fprintf(stderr, PROG ": %s: '%s' is not a number from 1 to %u\n", flag, text, max);
        exit(2);
    }
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    unsigned runs = 120, at_once = 6;
    tally_t tallies[WAY_COUNT];
    char self[4096];
    ssize_t len;

    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        int way = way_parse(argv[2]);

        if (way < 0) {
            fprintf(stderr, PROG ": --child: '%s' is no way (none, monitor, tight, umadv)\n",
                    argv[2]);
            return 2;
        }
        return child_main((way_t)way);
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = count_parse("--runs", argv[++i], 100000);
        else if (strcmp(argv[i], "--at-once") == 0 && i + 1 < argc)
            at_once = count_parse("--at-once", argv[++i], 64);
        else
            usage();
    }
    len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) {
        fprintf(stderr, PROG ": cannot find its own executable (/proc/self/exe)\n");
        return EXIT_FAILURE;
    }
    self[len] = '\0';
    bench_require_managed_gpu(PROG);
    memset(tallies, 0, sizeof(tallies));
    printf(PROG ": %u runs per way, %u at once; a child returns from main %d ms after "
           "its thread starts\n", runs, at_once, CHILD_LIFE_MS);
    race(self, runs, at_once, tallies);
    printf("%-8s %6s %8s %8s %14s %8s\n", "way", "runs", "exit 0", "SIGSEGV", "other signal",
           "other");
    for (int w = 0; w < WAY_COUNT; w++)
        printf("%-8s %6u %8u %8u %14u %8u\n", way_names[w], runs, tallies[w].ok, tallies[w].segv,
               tallies[w].signal, tallies[w].other);
    return EXIT_SUCCESS;
}
