/*
 * umadv run's iterations from the repeating launch sequence, without a
 * GPU: launch ids fed to the injection library as its launch hooks and
 * PyTorch's module hook feed them (umadv_inject_launch), on a host
 * context as the process's. Each case runs in a child process (the knobs
 * are read once per process): a loop found and planned, its iterations
 * counted as the launch sequence's; an optimizer step that takes over
 * under auto (numbering restarted, launches left); UMADV_ITERATION_SOURCE
 * keeping one source and refusing the others; a second loop restarting
 * the profile; a sequence that never repeats, whose program is told at
 * exit how to mark its iterations.
 */
#include <umadv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "inject/inject.h"
#include "interpose/torch.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)

int umadv_inject_launch(uint64_t id);

static umadv_context_t ctx;
static void *block;

/* A host context as the process's, with one block of two sections. */
static int setup(void)
{
    ctx = test_host_context(SECTION, 0);
    return ctx != NULL && umadv__torch_reset(ctx) == NULL &&
           umadv_malloc(ctx, 2 * SECTION, "x", &block) == UMADV_OK;
}

/* @n launches of a unit of @len kernels from @base: each launch a step
 * that touches a section. The last answer of umadv_inject_launch. */
static int launches(uint64_t base, unsigned len, unsigned n)
{
    int wanted = 1;

    for (unsigned k = 0; k < n; k++) {
        wanted = umadv_inject_launch(base + k % len);
        umadv_step_begin(ctx, NULL, NULL);
        umadv_step_access(ctx, (char *)block + (k % 2) * SECTION, SECTION, UMADV_ACCESS_RW);
        umadv_step_end(ctx, 1000);
    }
    return wanted;
}

static umadv_inject_counts_t counts(void)
{
    umadv_inject_counts_t c;

    umadv__inject_counts(&c);
    return c;
}

#define CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            umadv_inject_counts_t c_ = counts(); \
            fprintf(stderr, "# %s: %llu iterations (base %llu, from %d), period %u, planned %d\n", \
                    #_cond, (unsigned long long)c_.iterations, (unsigned long long)c_.base, \
                    c_.source, c_.period, c_.planned); \
            return 1; \
        } \
    } while (0)

/* ---- the cases, each in a child ---- */

static int case_found(void)
{
    umadv_inject_counts_t c;

    CHECK(launches(100, 5, 5 * 20) == 1);
    c = counts();
    CHECK(c.iterations >= 12 && c.iterations <= 20 && c.period == 5 && c.launches == 100);
    CHECK(c.source == UMADV_ITERATION_SOURCE_LAUNCHES && c.base == 0);
    CHECK(c.planned && c.plan_status == UMADV_OK && c.replay_first == 2);
    return 0;
}

static int case_optimizer_wins(void)
{
    umadv_inject_counts_t c;
    uint64_t before;

    launches(100, 5, 5 * 20);
    before = counts().iterations;
    CHECK(before > 0);
    umadv_inject_iteration(); /* PyTorch's optimizer stepped */
    c = counts();
    CHECK(c.base == before && c.iterations == before + 1 &&
          c.source == UMADV_ITERATION_SOURCE_OPTIMIZER);
    CHECK(launches(100, 5, 5 * 4) == 0 && counts().iterations == before + 1);
    umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0); /* the first explicit source stays */
    CHECK(counts().iterations == before + 1);
    return 0;
}

static int case_nvtx_only(void)
{
    CHECK(launches(100, 5, 5 * 20) == 0 && counts().iterations == 0);
    umadv_inject_iteration();
    CHECK(counts().iterations == 0);
    umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0);
    CHECK(counts().iterations == 1 && counts().source == UMADV_ITERATION_SOURCE_NVTX);
    return 0;
}

static int case_launches_only(void)
{
    uint64_t before;

    launches(100, 5, 5 * 20);
    before = counts().iterations;
    umadv_inject_iteration();
    umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0);
    CHECK(before > 0 && counts().iterations == before && counts().base == 0);
    CHECK(launches(100, 5, 5 * 4) == 1 && counts().iterations == before + 4);
    return 0;
}

static int case_second_loop(void)
{
    umadv_stats_t s = {.size = sizeof(s)};
    umadv_inject_counts_t c;

    launches(100, 6, 6 * 20);
    launches(500, 9, 9 * 40); /* another phase: another loop */
    c = counts();
    umadv_get_stats(ctx, &s);
    CHECK(c.period == 9 && c.base > 0 && c.iterations - c.base >= 20);
    CHECK(s.plans >= 2 && c.replay_first > c.base);
    return 0;
}

static int case_no_period(void)
{
    uint64_t x = 88172645463325252ull;

    for (int k = 0; k < 5000; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        umadv_inject_launch(x);
    }
    CHECK(counts().iterations == 0 && counts().launches == 5000);
    return 0; /* the hint is said at exit */
}

/* Run @fn in a child with UMADV_ITERATION_SOURCE=@source (NULL: unset),
 * its log in @log; its exit status. */
static int in_child(int (*fn)(void), const char *source, const char *log)
{
    pid_t pid;
    int status = -1;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        if (source != NULL)
            setenv("UMADV_ITERATION_SOURCE", source, 1);
        setenv("UMADV_LOG_FILE", log, 1);
        if (!setup()) {
            fprintf(stderr, "# no host context\n");
            _exit(1);
        }
        exit(fn()); /* exit: the handlers run */
    }
    if (pid > 0)
        waitpid(pid, &status, 0);
    return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = calloc(1, 8192);

    if (f != NULL && text != NULL)
        text[fread(text, 1, 8191, f)] = '\0';
    if (f != NULL)
        fclose(f);
    return text;
}

int main(void)
{
    char log[] = "/tmp/umadv-test-launches.XXXXXX";
    int fd = mkstemp(log);
    char *said;

    if (fd < 0)
        skip_all("cannot create a temporary file");
    close(fd);
    plan(7);
    env_clear();
    setenv("UMADV_PROFILE_ITERATION", "1", 1);
    is(in_child(case_found, NULL, log), 0,
       "auto: a loop of 5 launches found, iterations counted from its second unit, the "
       "iteration after warm-up profiled and planned");
    is(in_child(case_optimizer_wins, "auto", log), 0,
       "auto: an optimizer step takes over for good (numbering restarted), launches and NVTX "
       "left out");
    is(in_child(case_nvtx_only, "nvtx", log), 0,
       "UMADV_ITERATION_SOURCE=nvtx: launches and optimizer steps begin nothing");
    is(in_child(case_launches_only, "launches", log), 0,
       "UMADV_ITERATION_SOURCE=launches: optimizer steps and NVTX ranges begin nothing");
    is(in_child(case_second_loop, NULL, log), 0,
       "a second loop (another phase): numbering restarted, profiled and planned anew");
    if (truncate(log, 0) != 0)
        diag("cannot empty %s", log);
    is(in_child(case_no_period, NULL, log), 0, "5000 launches that never repeat: no iteration");
    said = slurp(log);
    ok(said != NULL && strstr(said, "no iteration found: 5000 launches repeat no sequence") &&
       strstr(said, "NVTX range named \"iteration\""),
       "...and at exit the program is told to mark its iterations with an NVTX range");
    if (said == NULL || !strstr(said, "no iteration found"))
        diag("%s", said != NULL ? said : "");
    free(said);
    unlink(log);
    return exit_status();
}
