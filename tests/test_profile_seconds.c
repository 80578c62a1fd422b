/*
 * umadv profile --seconds (UMADV_PROFILE_SECONDS) in the injection
 * library's driver, without a GPU: a host context as the process's, the
 * window's clock a fake one (UMADV_TEST_HOOKS). Each case runs in a
 * child (the knobs are read once per process): the window begins when
 * the library first sees the context, iteration boundaries (NVTX, the
 * optimizer) and launches before its time leave it open, the first
 * launch or allocation after its time ends it and saves its trace; a
 * program that exits first has it saved at exit; the summary says
 * "profile saved"; without profile mode the knob does nothing.
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
#include "trace/trace_io.h"

#define SECTION (64 * UMADV_KIB)
#define SECOND  UINT64_C(1000000000)

int umadv_inject_launch(uint64_t id);

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
    return fake_now;
}

static umadv_context_t ctx;
static void *block;
static char trace_path[64], summary_path[80];

/* A host context as the process's, one block made before the window. */
static int setup(int profile_mode)
{
    snprintf(summary_path, sizeof(summary_path), "%s.summary", trace_path);
    if (profile_mode)
        setenv("UMADV_PROFILE_OUTPUT", trace_path, 1);
    setenv("UMADV_PROFILE_SECONDS", "5", 1);
    setenv("UMADV_RUN_SUMMARY", summary_path, 1);
    umadv__inject_set_clock(fake_clock);
    ctx = test_host_context(SECTION, 0);
    return ctx != NULL && umadv__torch_reset(ctx) == NULL &&
           umadv_malloc(ctx, 2 * SECTION, "x", &block) == UMADV_OK;
}

/* @n steps, each touching a section of the block. */
static void steps(unsigned n)
{
    for (unsigned k = 0; k < n; k++) {
        umadv_step_begin(ctx, k % 2 ? "b" : "a", NULL);
        umadv_step_access(ctx, (char *)block + (k % 2) * SECTION, SECTION, UMADV_ACCESS_RW);
        umadv_step_end(ctx, 1000);
    }
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
            fprintf(stderr, "# %s: window %d, %llu iterations, saved %d\n", #_cond, \
                    c_.window, (unsigned long long)c_.iterations, c_.profile_saved); \
            return 1; \
        } \
    } while (0)

/* The saved trace has @nsteps steps, one iteration, @nallocs allocations. */
static int trace_is(unsigned nsteps, unsigned nallocs)
{
    umadv_trace_t trace;
    char why[256];
    int good;

    if (umadv__trace_read_file(trace_path, &trace, why, sizeof(why)) != UMADV_OK)
        return fprintf(stderr, "# %s\n", why), 0;
    good = trace.nsteps == nsteps && trace.niterations == 1 && trace.nallocs == nallocs;
    if (!good)
        fprintf(stderr, "# the trace: %u steps, %u iterations, %u allocations\n", trace.nsteps,
                trace.niterations, trace.nallocs);
    umadv__trace_cleanup(&trace);
    return good;
}

static int summary_says(const char *line)
{
    char text[4096] = "";
    FILE *f = fopen(summary_path, "r");

    if (f != NULL) {
        text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
        fclose(f);
    }
    if (strstr(text, line) == NULL)
        return fprintf(stderr, "# no '%s' in the record:\n%s", line, text), 0;
    return 1;
}

/* ---- the cases, each in a child ---- */

static int case_boundaries_leave_it_open(void)
{
    fake_now = 100 * SECOND;
    CHECK(setup(1) && umadv__inject_window_mode());
    CHECK(counts().window == UMADV_INJECT_WINDOW_NONE); /* nothing seen yet */
    CHECK(umadv_inject_launch(7) == 1);                  /* the library sees the context */
    CHECK(counts().window == UMADV_INJECT_WINDOW_OPEN && counts().iterations == 1 &&
          counts().window_begin_ns == 100 * SECOND);
    steps(3);
    fake_now += 2 * SECOND;
    umadv_inject_iteration();                           /* an optimizer step */
    umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0); /* an NVTX range */
    umadv__inject_iteration();
    fake_now += 3 * SECOND - 1;
    CHECK(umadv_inject_launch(7) == 1);
    CHECK(counts().window == UMADV_INJECT_WINDOW_OPEN && counts().iterations == 1 &&
          counts().profile_saved == 0);
    steps(1);
    fake_now += 1; /* 5 s after the window began: the next launch ends it */
    CHECK(umadv_inject_launch(7) == 0);
    CHECK(counts().window == UMADV_INJECT_WINDOW_ENDED && counts().profile_saved == 1 &&
          counts().window_end_ns == 105 * SECOND);
    steps(2); /* after the window: not in its trace */
    CHECK(umadv_inject_launch(8) == 0 && counts().profile_saved == 1);
    CHECK(trace_is(4, 1));
    umadv__inject_exit();
    CHECK(summary_says("\nprofile saved\n") && summary_says("\niterations 1\n"));
    return 0;
}

static int case_allocation_ends_it(void)
{
    void *p;

    fake_now = 0;
    CHECK(setup(1));
    p = umadv_inject_torch_malloc(SECTION, 0, NULL); /* PyTorch's first allocation */
    CHECK(p != NULL && counts().window == UMADV_INJECT_WINDOW_OPEN);
    steps(2);
    fake_now = 4 * SECOND;
    umadv_inject_torch_free(p, SECTION, 0, NULL);
    CHECK(counts().window == UMADV_INJECT_WINDOW_OPEN); /* a free is no boundary */
    fake_now = 6 * SECOND;
    p = umadv_inject_torch_malloc(SECTION, 0, NULL);
    CHECK(p != NULL && counts().window == UMADV_INJECT_WINDOW_ENDED &&
          counts().profile_saved == 1);
    CHECK(trace_is(2, 2)); /* the block, and the tensor freed in the window */
    return 0;
}

static int case_saved_at_exit(void)
{
    fake_now = 0;
    CHECK(setup(1));
    CHECK(umadv_inject_launch(1) == 1);
    steps(3);
    fake_now = 1 * SECOND; /* the program ends long before its time */
    umadv_inject_exit();   /* what Python's exit calls */
    CHECK(counts().window == UMADV_INJECT_WINDOW_ENDED && counts().profile_saved == 1 &&
          counts().window_end_ns == 1 * SECOND);
    CHECK(trace_is(3, 1));
    CHECK(summary_says("\nprofile saved\n") && summary_says("\nplan none\n"));
    return 0;
}

static int case_not_profile_mode(void)
{
    CHECK(setup(0) && !umadv__inject_window_mode());
    umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0);
    umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0);
    CHECK(counts().window == UMADV_INJECT_WINDOW_NONE && counts().iterations == 2);
    return 0;
}

static void run_case(int (*fn)(void), const char *name)
{
    int fd, status = -1;
    pid_t pid;

    snprintf(trace_path, sizeof(trace_path), "/tmp/umadv-test-seconds.XXXXXX");
    fd = mkstemp(trace_path);
    if (fd >= 0)
        close(fd);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(fn());
    if (pid > 0)
        waitpid(pid, &status, 0);
    ok(fd >= 0 && pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", name);
    unlink(trace_path);
    snprintf(summary_path, sizeof(summary_path), "%s.summary", trace_path);
    unlink(summary_path);
}

int main(void)
{
    plan(4);
    env_clear();
    run_case(case_boundaries_leave_it_open,
             "the window begins at the context, optimizer steps, NVTX ranges and launches "
             "before 5 s leave it open, the first launch at 5 s ends it: its 4 steps saved, "
             "the summary says so");
    run_case(case_allocation_ends_it,
             "PyTorch's allocator through the library: its first allocation begins the window, "
             "a free does not end it, an allocation after its time does");
    run_case(case_saved_at_exit, "a program that exits before its time: the window saved at "
                                 "exit, before the summary is written");
    run_case(case_not_profile_mode,
             "without profile mode UMADV_PROFILE_SECONDS does nothing: NVTX ranges are "
             "iterations");
    return exit_status();
}
