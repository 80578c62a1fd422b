/*
 * The profiling pass through a context, with CUPTI mocked: CUPTI taken,
 * failing or without unified-memory counters must leave a working context
 * with a warning that names the reason; a recorded iteration numbers the
 * launches into steps, scans their parameters, attributes synthetic kernel
 * and fault records, and replay counts faults. CUPTI works only while it
 * must: callbacks and kernel records while recording, unified-memory
 * counters while recording or replaying. The timing pass after a
 * recording replaces the step durations (which hold fault stalls) by
 * those of the next iteration when its steps match, and plans again.
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>

#include "api/context.h"
#include "common/util.h"
#include "exec/exec_int.h"
#include "profiler/cupti_ops.h"
#include "profiler/profiler_int.h"
#include "tap.h"
#include "testutil.h"
#define SECTION (64 * UMADV_KIB)

#include "cupti_mock.h"

/* ---- launches as CUPTI reports them ----------------------------------- */

static void runtime_launch(const char *symbol, uint32_t corr, void **args, int nested_driver)
{
    cudaLaunchKernel_v7000_params p = {.func = FUNC_RT, .args = args};
    cuLaunchKernel_params d = {.f = (CUfunction)(uintptr_t)0x9999, .kernelParams = args};

    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
              CUPTI_API_ENTER, &p, symbol, corr);
    if (nested_driver) /* the runtime's own driver launch: the same kernel */
        mock_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                  CUPTI_API_ENTER, &d, symbol, corr + 1);
    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
              CUPTI_API_EXIT, &p, symbol, corr);
}

static void driver_launch_of(const void *func, const char *symbol, uint32_t corr, void **args)
{
    cuLaunchKernel_params d = {.f = (CUfunction)(uintptr_t)func, .kernelParams = args};

    mock_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER,
              &d, symbol, corr);
    mock_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT,
              &d, symbol, corr);
}

static void driver_launch(const char *symbol, uint32_t corr, void **args)
{
    driver_launch_of(FUNC_DRV, symbol, corr, args);
}

static void graph_launch(uint32_t corr)
{
    cudaGraphLaunch_v10000_params g = {0};

    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
              CUPTI_API_ENTER, &g, NULL, corr);
    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
              CUPTI_API_EXIT, &g, NULL, corr);
}

/* ---- tests ------------------------------------------------------------- */

/* A declared iteration still records without a profiler. */
static int declared_iteration_works(umadv_context_t ctx)
{
    void *a = NULL;
    int good;

    umadv_malloc(ctx, 100000, "a", &a);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv_step_begin(ctx, "s", NULL);
    umadv_step_access(ctx, a, 100000, UMADV_ACCESS_READ);
    umadv_step_end(ctx, 5);
    good = umadv_iteration_begin(ctx) == UMADV_OK && ctx->record == UMADV_CTX_REC_DONE &&
           ctx->trace.nsteps == 1 && ctx->trace.naccesses == 1;
    umadv_free(ctx, a);
    return good;
}

static void test_unavailable(void)
{
    umadv_context_t ctx;

    mock_reset();
    mock.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    log_take();
    ctx = test_host_context(SECTION, 0);
    ok(ctx != NULL && ctx->profiler == NULL, "cupti taken: the context is made, unprofiled");
    ok(strstr(log_take(), "cupti is held by another tool") != NULL, "warned, naming why");
    ok(ctx != NULL && declared_iteration_works(ctx), "declared accesses are still recorded");
    umadv_context_destroy(ctx);

    mock_reset();
    mock.subscribe_result = CUPTI_ERROR_NOT_INITIALIZED;
    ctx = test_host_context(SECTION, 0);
    ok(ctx != NULL && ctx->profiler == NULL, "cupti failing: the context is made, unprofiled");
    ok(strstr(log_take(), "mock failure") != NULL, "the warning carries cupti's error string");
    umadv_context_destroy(ctx);

    mock_reset();
    mock.configure_result = CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED;
    ctx = test_host_context(SECTION, 0);
    ok(ctx != NULL && ctx->profiler != NULL && !umadv__prof_has_um_counters(ctx->profiler),
       "no unified-memory counters: profiled without fault records");
    ok(strstr(log_take(), "unified memory counters unavailable") != NULL, "warned");
    umadv_context_destroy(ctx);

    mock_reset();
    setenv("UMADV_PROFILER", "0", 1);
    ctx = test_host_context(SECTION, 0);
    ok(ctx != NULL && ctx->profiler == NULL && mock.subscribe_calls == 0,
       "UMADV_PROFILER=0: cupti is not touched");
    unsetenv("UMADV_PROFILER");
    umadv_context_destroy(ctx);
}

static void test_second_context(void)
{
    umadv_context_t one, two;

    mock_reset();
    one = test_host_context(SECTION, 0);
    log_take();
    two = test_host_context(SECTION, 0);
    ok(one->profiler != NULL && two->profiler == NULL,
       "the profiler belongs to the first context");
    ok(strstr(log_take(), "another umadv context holds the profiler") != NULL, "warned");
    umadv_context_destroy(two);
    umadv_context_destroy(one);
    one = test_host_context(SECTION, 0);
    ok(one->profiler != NULL, "released when its context goes");
    umadv_context_destroy(one);
}

/* The access of @step to @alloc, or NULL. */
static const umadv_trace_access_t *access_of(const umadv_trace_t *t, uint32_t step,
                                             uint32_t alloc)
{
    const umadv_trace_step_t *s = &t->steps[step];

    for (uint32_t i = 0; i < s->naccesses; i++) {
        if (t->accesses[s->first_access + i].alloc == alloc)
            return &t->accesses[s->first_access + i];
    }
    return NULL;
}

static void test_recording(void)
{
    umadv_cuda_host_counters_t counters;
    const umadv_trace_access_t *x;
    void *a, *b, *c, *a_mid, *args2[2], *args1[1];
    const umadv_trace_t *t;
    umadv_context_t ctx;
    uint32_t ia, ib, ic;

    mock_reset();
    ctx = test_host_context(SECTION, 0);
    umadv_malloc(ctx, 4 * SECTION, "A", &a);
    umadv_malloc(ctx, 2 * SECTION, "B", &b);
    umadv_malloc(ctx, SECTION, "C", &c);
    umadv__cuda_host_reset();
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 1 && counters.prefetch_bytes_to_host >= 7 * SECTION,
       "profiling begins by evicting every block, in one call for their arena");

    a_mid = (char *)a + SECTION + 8;  /* an interior pointer */
    args2[0] = &a_mid;
    args2[1] = &b;
    usleep(2000);
    runtime_launch("kA", 10, args2, 1);       /* step 0 */
    args1[0] = &c;
    usleep(3000);
    driver_launch("kC", 20, args1);           /* step 1 */
    umadv_step_begin(ctx, "layer", NULL);     /* step 2 */
    args2[0] = &b;
    args2[1] = &c;
    runtime_launch("kB", 30, args2, 0);
    runtime_launch("kB2", 31, args2, 0);
    umadv_step_end(ctx, 123);
    graph_launch(40);                         /* step 3 */

    queue_kernel(11, 1000, 2000);             /* kA, under its driver call's id */
    queue_kernel(20, 3000, 4000);
    queue_kernel(30, 5000, 5500);
    queue_kernel(31, 5600, 6000);
    queue_kernel(40, 7000, 7500);             /* the graph's two kernels */
    queue_kernel(40, 7600, 8000);
    queue_fault((char *)a + 3 * SECTION, 7700, 4);  /* only the fault sees the graph use A */
    queue_fault((char *)c + 5, 3500, 2);
    /* a fault-driven migration shows B in the graph; a prefetch shows nothing */
    queue_migration(b, 7800, 2 * SECTION, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE);
    queue_migration(c, 7800, SECTION, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER);
    umadv_iteration_begin(ctx);

    t = &ctx->trace;
    ok(ctx->record == UMADV_CTX_REC_DONE, "the iteration is recorded");
    is(t->nsteps, 4, "two launched kernels, one marked layer of two kernels, one graph");
    if (t->nsteps != 4)
        goto out;
    ia = 0; ib = 1; ic = 2; /* allocations enter in pool order at the first step */
    for (uint32_t i = 0; i < t->nallocs; i++) {
        if (strcmp(t->allocs[i].tag, "A") == 0) ia = i;
        if (strcmp(t->allocs[i].tag, "B") == 0) ib = i;
        if (strcmp(t->allocs[i].tag, "C") == 0) ic = i;
    }
    ok(strcmp(t->steps[0].name, "kA") == 0 && t->steps[0].kind == UMADV_STEP_KERNEL &&
       strcmp(t->steps[3].name, "graph") == 0 && t->steps[2].kind == UMADV_STEP_LAYER,
       "steps named by their kernels; the marked one keeps its name and kind");
    x = access_of(t, 0, ia);
    ok(x != NULL && x->first == 0 && x->count == 4 && x->mode == UMADV_ACCESS_RW,
       "an interior pointer parameter: the whole block, read-write");
    ok(access_of(t, 0, ib) != NULL && access_of(t, 0, ic) == NULL, "and only what it names");
    x = access_of(t, 1, ic);
    ok(x != NULL && x->faults == 2 && t->steps[1].naccesses == 1,
       "a driver launch's parameter, with the fault seen during it");
    ok(access_of(t, 2, ib) != NULL && access_of(t, 2, ic) != NULL && access_of(t, 2, ia) == NULL,
       "a marked step holds its kernels' parameters");
    x = access_of(t, 3, ia);
    ok(x != NULL && x->first == 3 && x->count == 1 && x->faults == 4,
       "the graph step: the faulted section of A");
    x = access_of(t, 3, ib);
    ok(x != NULL && x->first == 0 && x->count == 2 && t->steps[3].naccesses == 2,
       "and the range of B that faults migrated, not C's prefetch");
    is_u64(t->steps[0].duration_ns, 1000, "a kernel step lasts its kernel record");
    is_u64(t->steps[3].duration_ns, 1000, "the graph step spans its kernels");
    is_u64(t->steps[2].duration_ns, 123, "the marked step keeps its given time");
    ok(strstr(t->source, "cupti") != NULL, "the trace says how it was made");
    ok(t->steps[0].host_ns >= 2000000 && t->steps[1].host_ns >= 3000000 &&
       t->steps[1].host_ns < 2000000000,
       "host times of launched kernels: the application's own before each launch (%llu, "
       "%llu ns)", (unsigned long long)t->steps[0].host_ns,
       (unsigned long long)t->steps[1].host_ns);

    queue_fault(a, 9000, 5);                  /* replay: only counted */
    queue_fault(b, 9100, 2);
    queue_migration(b, 9200, SECTION, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE);
    queue_migration(c, 9300, SECTION, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER);
    runtime_launch("late", 50, args2, 0);
    is(ctx->trace.nsteps, 4, "a launch outside the recording is not a step");
    umadv_iteration_begin(ctx);
    is_u64(ctx->iteration_faults, 8,
           "replay: fault groups and fault-driven migrations counted, prefetches not");
    is_u64(ctx->stats.gpu_faults, 8, "and in the statistics");
out:
    umadv_context_destroy(ctx);
}

/* A step that declares part of a block (vgg_train's batch parts): a
 * kernel parameter pointing into the declared bytes leaves them as
 * declared; one pointing elsewhere in the block takes the whole block. */
static void test_declared_parts(void)
{
    const umadv_trace_access_t *x;
    void *a, *part, *args2[2];
    const umadv_trace_t *t;
    umadv_context_t ctx;

    mock_reset();
    ctx = test_host_context(SECTION, 0);
    umadv_malloc(ctx, 4 * SECTION, "A", &a);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    part = (char *)a + 2 * SECTION;
    args2[0] = &part;
    args2[1] = &part;
    umadv_step_begin(ctx, "layer.part1", NULL);         /* step 0 */
    umadv_step_access(ctx, part, 2 * SECTION, UMADV_ACCESS_RW);
    runtime_launch("kPart", 60, args2, 1);
    umadv_step_end(ctx, 10);
    umadv_step_begin(ctx, "layer.part0", NULL);         /* step 1 */
    umadv_step_access(ctx, part, 2 * SECTION, UMADV_ACCESS_RW);
    args2[0] = &a;                                      /* outside what it declared */
    runtime_launch("kWhole", 70, args2, 1);
    umadv_step_end(ctx, 10);
    umadv_iteration_begin(ctx);
    t = &ctx->trace;
    if (!ok(ctx->record == UMADV_CTX_REC_DONE && t->nsteps == 2, "two declared steps recorded"))
        goto out;
    x = access_of(t, 0, 0);
    ok(x != NULL && x->first == 2 && x->count == 2 && t->steps[0].naccesses == 1,
       "a parameter inside the declared part: the part only (sections %u+%u)",
       x ? x->first : 0, x ? x->count : 0);
    x = access_of(t, 1, 0);
    ok(x != NULL && x->first == 0 && x->count == 4,
       "a parameter outside it: the whole block (sections %u+%u)", x ? x->first : 0,
       x ? x->count : 0);
out:
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* A fresh mock and host context holding one block of a section, *@a_p;
 * both launch arguments point at it. */
static umadv_context_t one_block_context(void **a_p, void **args)
{
    umadv_context_t ctx;

    mock_reset();
    ctx = test_host_context(SECTION, 0);
    umadv_malloc(ctx, SECTION, "a", a_p);
    args[0] = a_p;
    args[1] = a_p;
    return ctx;
}

/* A fresh mock and host context holding blocks of a section, *@a_p and
 * *@b_p, under a budget of one section: @args point at a, @args_b at b.
 * A profile whose middle launch takes @args_b plans moves at its steps,
 * so the replay follows its launches (a plan that moves nothing does
 * not: test_follow_nothing_to_move). */
static umadv_context_t two_block_context(void **a_p, void **b_p, void **args, void **args_b)
{
    umadv_context_t ctx;

    mock_reset();
    ctx = test_host_context(SECTION, SECTION);
    umadv_malloc(ctx, SECTION, "a", a_p);
    umadv_malloc(ctx, SECTION, "b", b_p);
    args[0] = args[1] = a_p;
    args_b[0] = args_b[1] = b_p;
    return ctx;
}

/* The same, its profiled iteration begun, the host backend's counters
 * cleared. */
static umadv_context_t profiling_one_block(void **a_p)
{
    void *args[2];
    umadv_context_t ctx = one_block_context(a_p, args);

    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv__cuda_host_reset();
    return ctx;
}

/* CUPTI's tracing costs every launch host time: on only while needed. */
/* The iteration's two launches, the second on block b, with @corr and
 * @corr + 1, their kernels at @at. */
static void launch_a_b(void **args, void **args_b, uint32_t corr, uint64_t at)
{
    runtime_launch("k", corr, args, 0);
    runtime_launch("kb", corr + 1, args_b, 0);
    queue_kernel(corr, at, at + 100);
    queue_kernel(corr + 1, at + 200, at + 300);
}

static void test_only_when_needed(void)
{
    void *a = NULL, *b = NULL, *args[2], *args_b[2];
    int counted[40] = {0};
    umadv_context_t ctx;

    ctx = two_block_context(&a, &b, args, args_b);
    umadv_iteration_begin(ctx);
    runtime_launch("k", 10, args, 0);
    ok(mock.callbacks == 0 && !mock.kernels_on && !mock.um_on,
       "no recording: no launch callbacks, no kernel records, no unified-memory counters");
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    ok(mock.callbacks > 0 && mock.kernels_on && mock.um_on, "recording: all on");
    launch_a_b(args, args_b, 20, 1000);
    umadv_iteration_begin(ctx);
    ok(ctx->tpass.state == UMADV_CTX_TPASS_RUNNING && mock.callbacks > 0 && mock.kernels_on &&
       !mock.um_on, "the timing pass after it: launches and kernel records; no unified-memory "
       "counters (it measures kernels, and no replay counts faults)");
    launch_a_b(args, args_b, 30, 3000);
    umadv_iteration_begin(ctx);
    ok(mock.callbacks == 0 && !mock.kernels_on && !mock.um_on,
       "then all off: nothing replays, no fault needs counting");
    umadv_plan(ctx);
    umadv_iteration_begin(ctx);
    ok(ctx->replay.exec != NULL && mock.callbacks > 0 && !mock.kernels_on && mock.um_on,
       "replaying kernel steps: launch callbacks to follow them and the unified-memory "
       "counters for replay validation, no kernel records");
    for (int i = 1; i < 40; i++) {
        umadv_iteration_begin(ctx);
        counted[i] = mock.um_on;
    }
    ok(counted[1] && !counted[2] && !counted[31] && counted[32] && !counted[33],
       "counted in the replay's first two iterations, then one in 32");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

/* Under oracle the profile moves nothing: its kernel records are the
 * durations (no timing pass), and its replay counts no faults (nothing
 * it does rests on the profile); a profile that faulted is timed. */
/* A profile under @policy (oracle, or @policy with nothing evicted) of one
 * launch, with @fault_groups fault groups queued in it: whether the
 * counters were on while it ran. */
static int profile_faulting(umadv_context_t *ctx_p, const char *policy, uint64_t fault_groups)
{
    void *a = NULL, *args[2];
    umadv_context_t ctx;
    int um_on;

    mock_reset();
    setenv("UMADV_POLICY", policy, 1);
    setenv("UMADV_PROFILE_EVICT", "0", 1);
    ctx = test_host_context(SECTION, 0);
    unsetenv("UMADV_POLICY");
    unsetenv("UMADV_PROFILE_EVICT");
    umadv_malloc(ctx, SECTION, "a", &a);
    args[0] = args[1] = &a;
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    um_on = mock.um_on;
    runtime_launch("k", 20, args, 0);
    queue_kernel(20, 1000, 2000);
    for (uint64_t g = 0; g < fault_groups; g += 100)
        queue_fault((char *)a + g / 100 * 4096, 1500, 100);
    umadv_iteration_begin(ctx);
    *ctx_p = ctx;
    return um_on;
}

static void test_oracle_untimed(void)
{
    umadv_context_t ctx;
    int um_on, counted = 0;

    um_on = profile_faulting(&ctx, "oracle", 0);
    ok(!um_on && strstr(ctx->trace.source, "gpu faults") == NULL,
       "oracle: the profile runs without the unified-memory counters, and its trace says so");
    ok(ctx->tpass.state != UMADV_CTX_TPASS_RUNNING && !mock.kernels_on &&
           ctx->trace.steps[0].duration_ns == 1000,
       "oracle: nothing moved: the profiled durations stand, no timing pass");
    umadv_plan(ctx);
    for (int i = 0; i < 4; i++) {
        umadv_iteration_begin(ctx);
        counted += mock.um_on;
    }
    ok(ctx->replay.exec != NULL && counted == 0, "its replay counts no faults");
    umadv_context_destroy(ctx);

    um_on = profile_faulting(&ctx, "oracle", 300);
    ok(!um_on && ctx->tpass.state != UMADV_CTX_TPASS_RUNNING && ctx->profile_faults == 0,
       "oracle: faults in the profile are not its records: no timing pass");
    umadv_context_destroy(ctx);

    um_on = profile_faulting(&ctx, "plan", 0);
    ok(um_on && strstr(ctx->trace.source, "gpu faults") != NULL &&
           ctx->tpass.state != UMADV_CTX_TPASS_RUNNING,
       "plan, nothing evicted: the counters on, few faults: no timing pass");
    umadv_context_destroy(ctx);

    um_on = profile_faulting(&ctx, "plan", 300);
    ok(um_on && ctx->tpass.state == UMADV_CTX_TPASS_RUNNING,
       "plan, nothing evicted, but 300 fault groups in the profile: the next iteration is "
       "timed");
    umadv_context_destroy(ctx);
}

static size_t count_of(const char *haystack, const char *needle)
{
    size_t n = 0;

    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* One iteration of three steps: a kernel, a marked layer around a
 * kernel (given @layer_ns), a driver kernel named @last; launches
 * numbered from @corr. */
static void three_steps(umadv_context_t ctx, void **args, uint32_t corr, uint64_t layer_ns,
                        const char *last)
{
    runtime_launch("k1", corr, args, 1);
    umadv_step_begin(ctx, "layer", NULL);
    runtime_launch("k2", corr + 10, args, 0);
    umadv_step_end(ctx, layer_ns);
    driver_launch(last, corr + 20, args);
}

static void profile_three_steps(umadv_context_t ctx, void **args)
{
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    three_steps(ctx, args, 10, 5000, "k3");
    queue_kernel(11, 1000, 3000);   /* faulting: slow */
    queue_kernel(20, 4000, 4100);
    queue_kernel(30, 5000, 9000);
    queue_fault(*(void **)args[0], 1500, 7);
}

static void test_timing_pass(void)
{
    void *a = NULL, *b = NULL, *args[2];
    const umadv_trace_t *t;
    umadv_context_t ctx;
    size_t queries;
    char *log;

    mock_reset();
    ctx = test_host_context(SECTION, 0);
    umadv_malloc(ctx, 2 * SECTION, "a", &a);
    umadv_malloc(ctx, SECTION, "b", &b);
    args[0] = &a;
    args[1] = &b;
    profile_three_steps(ctx, args);
    is(umadv_plan(ctx), UMADV_OK, "planned on the profiled durations");
    t = &ctx->trace;
    ok(t->nsteps == 3 && t->steps[0].duration_ns == 2000 && t->steps[2].duration_ns == 4000,
       "profiled durations: the kernel records of the faulting iteration");
    log_take();
    umadv_iteration_begin(ctx);
    queries = mock.param_queries;
    three_steps(ctx, args, 110, 300, "k3");
    queue_kernel(111, 20000, 20200);
    queue_kernel(120, 20300, 20350);
    queue_kernel(130, 20400, 20800);
    queue_fault(a, 20100, 3);
    umadv_iteration_begin(ctx);
    is_u64(mock.param_queries, queries, "the timing pass scans no parameters");
    ok(t->steps[0].duration_ns == 200 && t->steps[1].duration_ns == 300 &&
       t->steps[2].duration_ns == 400,
       "the next iteration's durations replace them: kernel records, the layer's own time");
    ok(strstr(t->source, "step durations from a timing pass") != NULL, "the source says so");
    is_u64(ctx->iteration_faults, 3, "its faults are counted for replay, not attributed");
    log = log_take();
    ok(strstr(log, "timing pass: 3 step durations measured") != NULL &&
       strstr(strstr(log, "timing pass: 3 step"), "planned 3 steps") != NULL,
       "logged, then planned again");
    three_steps(ctx, args, 210, 300, "k3");
    umadv_iteration_begin(ctx);
    ok(count_of(log_take(), "planned") == 0 && ctx->tpass.state == UMADV_CTX_TPASS_IDLE,
       "once: later iterations are not timed");

    profile_three_steps(ctx, args);
    umadv_iteration_begin(ctx);
    three_steps(ctx, args, 310, 300, "k3-other");
    queue_kernel(311, 30000, 30100);
    queue_kernel(320, 30200, 30300);
    queue_kernel(330, 30400, 30500);
    log_take();
    umadv_iteration_begin(ctx);
    /* the profile did not repeat: put aside with its durations, the
     * iteration beginning now profiled again */
    t = &ctx->life.kept.trace;
    ok(ctx->life.state == UMADV_CYCLE_REPROFILING && t->nsteps == 3 &&
           t->steps[0].duration_ns == 2000 && t->steps[2].duration_ns == 4000,
       "another kernel sequence: the profiled durations stay, the next iteration is profiled");
    log = log_take();
    ok(strstr(log, "ran other steps (3 steps, 3 profiled; first difference at step 2)") != NULL &&
           strstr(log, "did not repeat: profiling the next one (1 of at most 3)") != NULL,
       "logged at info, naming where they differ");

    profile_three_steps(ctx, args);
    umadv_iteration_begin(ctx);
    runtime_launch("k1", 410, args, 0);
    queue_kernel(410, 40000, 40100);
    umadv_iteration_begin(ctx);
    ok(ctx->life.state == UMADV_CYCLE_REPROFILING && t->steps[0].duration_ns == 2000 &&
           strstr(log_take(), "ran other steps (1 steps") != NULL,
       "a shorter iteration: kept, logged, profiled again");
    t = &ctx->trace;

    profile_three_steps(ctx, args);
    umadv_iteration_begin(ctx);
    three_steps(ctx, args, 510, 300, "k3");
    queue_kernel(511, 50000, 50100);   /* k2 and k3's records lost */
    umadv_iteration_begin(ctx);
    ok(t->steps[2].duration_ns == 4000 && strstr(log_take(), "1 of 3 steps got no time") != NULL,
       "a step with no kernel record: kept, logged");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

/* ---- automatic steps in replay ------------------------------------------ */

/* The executor's step ends: events recorded, and on which stream. */
static const umadv_cuda_ops_t *spy_real;
static struct {
    unsigned       events;
    umadv_stream_t stream;
    int            mode; /* the launching thread's capture mode at the last record */
} spy;

static umadv_status_t spy_event_record(umadv_event_t event, umadv_stream_t stream)
{
    spy.events++;
    spy.stream = stream;
    spy.mode = mock.capture_mode;
    return spy_real->event_record(event, stream);
}

static umadv_cuda_ops_t spy_ops;

static void spy_install(umadv_context_t ctx)
{
    spy_real = ctx->ops;
    spy_ops = *ctx->ops;
    spy_ops.event_record = spy_event_record;
    ctx->ops = &spy_ops;
}

#define STREAM_A ((void *)(uintptr_t)0xa000)
#define STREAM_B ((void *)(uintptr_t)0xb000)

static void launch_site(const char *symbol, uint32_t corr, void **args, void *stream,
                        CUpti_ApiCallbackSite site)
{
    cudaLaunchKernel_v7000_params p = {.func = FUNC_RT, .args = args, .stream = stream};

    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, site,
              &p, symbol, corr);
}

/* Profiled and timed, then replayed under the plan policy; k2 takes
 * @args_b. */
static void follow_setup(umadv_context_t ctx, void **args, void **args_b, int marked)
{
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    for (int i = 0; i < 2; i++) { /* the profiled iteration, then the timing pass */
        if (i == 0)
            umadv_profile_next_iteration(ctx);
        umadv_iteration_begin(ctx);
        if (marked)
            three_steps(ctx, args, 10 + 100 * i, 300, "k3");
        else
            for (uint32_t k = 0; k < 3; k++)
                runtime_launch(k == 1 ? "k2" : k == 2 ? "k3" : "k1", 10 + 100 * i + k,
                               k == 1 ? args_b : args, 1);
        for (uint32_t k = 0; k < 3; k++)
            queue_kernel(10 + 100 * i + k, 1000 * i + 10 * k, 1000 * i + 10 * k + 5);
        if (i == 0)
            umadv_plan(ctx);
    }
    umadv_iteration_begin(ctx);
}

/* A plan whose budget holds every step's data moves nothing in steady
 * state: its launches are not followed (replay.c, follow_start), as
 * under oracle, and its replay counts faults (drift) in one iteration of
 * UMADV_FAULT_PERIOD only, not in its first ones. */
static void test_follow_nothing_to_move(void)
{
    void *a = NULL, *args[2];
    umadv_context_t ctx;
    int counted = 0, first = 0;

    ctx = one_block_context(&a, args);
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    runtime_launch("k", 20, args, 0);
    queue_kernel(20, 1000, 2000);
    log_take();
    umadv_plan(ctx);
    umadv_iteration_begin(ctx);
    umadv_iteration_begin(ctx); /* past the timing pass, if one runs */
    first = mock.um_on;
    ok(ctx->replay.exec != NULL && ctx->schedule.evict_ops == 0 &&
           ctx->schedule.fetch_bytes == 0 && mock.callbacks == 0 && !first,
       "a plan that moves nothing: no launch callbacks, its first iterations' faults uncounted");
    ok(count_of(log_take(), "the plan moves nothing in steady state") >= 1, "said at info level");
    for (int i = 0; i < 64; i++) {
        umadv_iteration_begin(ctx);
        counted += mock.um_on;
    }
    ok(counted == 2, "its faults counted in one iteration of 32 (%d of 64)", counted);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

static void test_follow(void)
{
    void *a = NULL, *b = NULL, *args[2], *args_b[2];
    umadv_stats_t st = {.size = sizeof(st)};
    umadv_context_t ctx;
    umadv_exec_t *e;
    size_t queries;
    unsigned ev;
    uint64_t ends;
    int begun_at_entry;

    ctx = two_block_context(&a, &b, args, args_b);
    spy_install(ctx);
    follow_setup(ctx, args, args_b, 0);
    e = ctx->replay.exec;
    queries = mock.param_queries;
    ev = spy.events;
    ends = e != NULL ? e->ends_seq : 0;
    launch_site("k1", 500, args, STREAM_A, CUPTI_API_ENTER);
    begun_at_entry = e != NULL && e->step == 1 && spy.events == ev;
    launch_site("k1", 500, args, STREAM_A, CUPTI_API_EXIT);
    ok(begun_at_entry && spy.events == ev + 1 && spy.stream == STREAM_A,
       "replay: step 0 begins at its launch's entry, ends at its exit on the launch's stream");
    runtime_launch("k2", 501, args, 1);
    driver_launch("k3", 503, args);
    /* an event only where an eviction waits (exec/queue.c, STEP ENDS) */
    ok(e != NULL && e->step == 3 && e->ends_seq == ends + 3 && spy.events <= ev + 3,
       "each matching launch is a step, runtime or driver, nested launches once");
    is_u64(mock.param_queries, queries, "no parameter scan while following");
    ok(!mock.kernels_on, "no kernel records while following");

    log_take();
    umadv_iteration_begin(ctx);
    ev = spy.events;
    runtime_launch("k1", 600, args, 0);
    runtime_launch("kX", 601, args, 0);
    runtime_launch("k3", 602, args, 0);
    ok(e->step == 1 && spy.events == ev + 1, "after a divergence: no step for the iteration");
    umadv_iteration_begin(ctx);
    runtime_launch("kY", 700, args, 0);
    runtime_launch("k2", 701, args, 0);
    umadv_get_stats(ctx, &st);
    ok(e->step == 0 && count_of(log_take(), "(drift)") == 1 && st.drift_ops >= 2,
       "counted as drift every time, logged once");
    umadv_iteration_begin(ctx);
    runtime_launch("k1", 800, args, 0);
    ok(e->step == 1, "the next iteration follows again");
    umadv_set_policy(ctx, UMADV_POLICY_ORACLE);
    ok(mock.callbacks == 0 && ctx->replay.exec != NULL,
       "oracle replays without following: no launch callback stays on");
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    ok(mock.callbacks > 0, "plan again: launches followed again");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);

    mock_reset();
    ctx = test_host_context(SECTION, 0);
    spy_install(ctx);
    umadv_malloc(ctx, SECTION, "a", &a);
    follow_setup(ctx, args, args, 1);
    e = ctx->replay.exec;
    runtime_launch("k1", 900, args, 0);
    ok(e != NULL && e->step == 0 && mock.callbacks == 0,
       "steps marked through the api: launches are not followed");
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* The iteration's three launches, with correlation ids from @corr;
 * @args for the first and @args_b for the others as each test says. */
typedef void (*three_launches_fn)(uint32_t corr, void **args, void **args_b);

/* The profiled iteration, then the timing pass, each of @launches and
 * their three kernels; planned after the first. */
static void profiled_and_timed(umadv_context_t ctx, three_launches_fn launches, void **args,
                               void **args_b)
{
    for (int i = 0; i < 2; i++) {
        if (i == 0)
            umadv_profile_next_iteration(ctx);
        umadv_iteration_begin(ctx);
        launches(10 + 100 * (uint32_t)i, args, args_b);
        for (uint32_t k = 0; k < 3; k++)
            queue_kernel(10 + 100 * i + k, 1000 * i + 10 * k, 1000 * i + 10 * k + 5);
        if (i == 0)
            umadv_plan(ctx);
    }
}

static const char nccl[] = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgs4K";

static void nccl_launches(uint32_t corr, void **args, void **args_b)
{
    runtime_launch("k1", corr, args, 0);
    runtime_launch(nccl, corr + 1, args_b, 0);
    runtime_launch("k3", corr + 2, args, 0);
}

/* Hidden readers (replay.c, HIDDEN READERS): an NCCL kernel, followed as
 * the step it was profiled as, pauses staging for the rest of the
 * iteration where no block is held (no guard), and not where one is. */
static void test_follow_hidden_reader(void)
{
    void *a = NULL, *b = NULL, *args[2], *args_b[2];
    umadv_context_t ctx;
    umadv_exec_t *e;
    int plain;

    ctx = two_block_context(&a, &b, args, args_b);
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    log_take();
    profiled_and_timed(ctx, nccl_launches, args, args_b);
    umadv_iteration_begin(ctx);
    e = ctx->replay.exec;
    runtime_launch("k1", 500, args, 0);
    plain = e != NULL && !e->core.stage_paused;
    runtime_launch(nccl, 501, args, 0);
    ok(plain && e->core.stage_paused && e->step == 2,
       "an NCCL kernel with no block held: staging paused, the launch still its step");
    runtime_launch("k3", 502, args, 0);
    umadv_iteration_begin(ctx);
    runtime_launch("k1", 600, args, 0);
    plain = !e->core.stage_paused;
    runtime_launch(nccl, 601, args, 0);
    ok(plain && e->core.stage_paused &&
           count_of(log_take(), "reads memory its launch does not name") == 1,
       "paused again in the next iteration at its NCCL kernel, not before; warned once (since "
       "the timing pass, whose launches are followed too)");
    runtime_launch("k3", 602, args, 0);
    umadv_iteration_begin(ctx);
    umadv_hold_resident(ctx, a, NULL); /* the guard's hold */
    runtime_launch("k1", 700, args, 0);
    runtime_launch(nccl, 701, args, 0);
    ok(!e->core.stage_paused && e->step == 2,
       "with a block held (the bucket guard): the NCCL kernel pauses nothing");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

/* A launch of @symbol on @stream, which captures into a graph: CUPTI
 * calls back as for any launch. */
static void captured_launch(const char *symbol, uint32_t corr, void **args, void *stream)
{
    mock.capturing = stream;
    launch_site(symbol, corr, args, stream, CUPTI_API_ENTER);
    launch_site(symbol, corr, args, stream, CUPTI_API_EXIT);
    mock.capturing = NULL;
}

/* k1, a launch captured on STREAM_B, a graph's launch, k3. */
static void graph_launches(uint32_t corr, void **args, void **args_b)
{
    runtime_launch("k1", corr, args, 0);
    captured_launch("kc", corr + 40, args_b, STREAM_B);
    graph_launch(corr + 1);
    runtime_launch("k3", corr + 2, args_b, 0);
}

/* STREAM CAPTURE (profiler.c): a launch on a capturing stream is no
 * launch now, neither a recorded step nor a followed one, and costs no
 * step of the replay; umadv's calls on the launching thread are made in
 * relaxed capture mode, its own mode back after. A graph's launch
 * (replay.c, A GRAPH LAUNCH), followed as its step, pauses staging
 * first. */
static void test_capture(void)
{
    void *a = NULL, *b = NULL, *args[2], *args_b[2];
    umadv_context_t ctx;
    umadv_exec_t *e;
    int plain;

    ctx = two_block_context(&a, &b, args, args_b);
    spy_install(ctx);
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    log_take();
    profiled_and_timed(ctx, graph_launches, args, args_b);
    ok(ctx->trace.nsteps == 3 && strcmp(ctx->trace.steps[1].name, "graph") == 0,
       "recorded: the captured launch is no step, the graph's launch is one");
    umadv_iteration_begin(ctx);
    e = ctx->replay.exec;
    launch_site("k1", 500, args, STREAM_A, CUPTI_API_ENTER);
    launch_site("k1", 500, args, STREAM_A, CUPTI_API_EXIT);
    ok(e != NULL && spy.stream == STREAM_A && spy.mode == UMADV_PROF_CAPTURE_RELAXED &&
           mock.capture_mode == 0,
       "umadv's calls on the launching thread in relaxed capture mode, its global mode back "
       "after");
    plain = e != NULL && e->step == 1 && !e->core.stage_paused;
    captured_launch("kc", 550, args_b, STREAM_B);
    ok(plain && e->step == 1 && !e->core.stage_paused,
       "replayed: a launch on a capturing stream is no step, and no drift");
    graph_launch(501);
    ok(e != NULL && e->step == 2 && e->core.stage_paused &&
           count_of(log_take(), "a graph launch reads memory no launch of it names") == 1,
       "the graph's launch: its step, staging paused first; said once (since the timing "
       "pass)");
    runtime_launch("k3", 502, args_b, 0);
    ok(e != NULL && e->step == 3 && count_of(log_take(), "(drift)") == 0,
       "the iteration followed to its end, its last launch its last step");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

/* The timing pass times the iteration the replay runs: its launches are
 * the replay's steps, which wait for their data (else its kernels fault
 * and their faults are timed as compute), and are timed too. */
/* Spin the calling thread's CPU for @ms. */
static void cpu_spin_ms(unsigned ms)
{
    uint64_t until = umadv__thread_cpu_ns() + (uint64_t)ms * 1000000u;

    while (umadv__thread_cpu_ns() < until)
        ;
}

/* The "between those launches ... ms of it its cpu time, N page faults"
 * of @log. */
static int gaps_parse(const char *log, double *wall_p, double *cpu_p, unsigned long *faults_p)
{
    const char *at = log != NULL ? strstr(log, "between those launches ") : NULL;

    return at != NULL &&
           sscanf(at, "between those launches %lf ms, %lf ms of it its cpu time, %lu page faults",
                  wall_p, cpu_p, faults_p) == 3;
}

/* Map @pages fresh pages, touch each (a page fault each), unmap them. */
static void touch_fresh_pages(size_t pages)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);

    if (p == MAP_FAILED)
        return;
    for (size_t i = 0; i < pages; i++)
        p[i * page] = 1;
    munmap(p, pages * page);
}

/* Under the debug log, the replay times the application's thread between
 * its followed launches, wall and CPU (replay.c, struct follow_gaps): a
 * sleep between them shows in the wall time only, a spin in both. */
static void test_follow_gaps(void)
{
    void *a = NULL, *b = NULL, *args[2], *args_b[2];
    double wall = 0, cpu = 0;
    unsigned long faults = 0;
    umadv_context_t ctx;
    int parsed;

    ctx = two_block_context(&a, &b, args, args_b);
    follow_setup(ctx, args, args_b, 0);
    umadv__log_level = UMADV_LOG_DEBUG;
    log_take();
    runtime_launch("k1", 900, args, 0);
    usleep(30000);
    runtime_launch("k2", 901, args_b, 0);
    cpu_spin_ms(20);
    touch_fresh_pages(64);
    runtime_launch("k3", 902, args, 0);
    umadv_iteration_begin(ctx);
    parsed = gaps_parse(log_take(), &wall, &cpu, &faults);
    ok(parsed && wall >= 50 && cpu >= 19 && cpu < 35 && faults >= 64,
       "a 30 ms sleep, a 20 ms spin and 64 fresh pages touched between three launches: %.1f "
       "ms between them, %.1f of it cpu, %lu page faults", wall, cpu, faults);
    umadv__log_level = UMADV_LOG_INFO;
    runtime_launch("k1", 910, args, 0);
    usleep(10000);
    runtime_launch("k2", 911, args_b, 0);
    umadv_iteration_begin(ctx);
    ok(!gaps_parse(log_take(), &wall, &cpu, &faults),
       "not timed, nor said, without the debug log");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

/* The profile's debug report gives the pass's time on the GPU from its
 * kernel records: first start to last end, and the time some kernel ran
 * (two of them overlap). */
/* Under plan, a profiled iteration of launches k1, k2 (on block b) and k3,
 * correlation ids @first_id on, their kernels at @kernels (ns). */
static void profiled_three_launches(umadv_context_t ctx, void **args, void **args_b,
                                    uint32_t first_id, const uint64_t kernels[3][2])
{
    static const char *const names[] = {"k1", "k2", "k3"};

    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    for (uint32_t k = 0; k < 3; k++) {
        runtime_launch(names[k], first_id + k, k == 1 ? args_b : args, 0);
        queue_kernel(first_id + k, kernels[k][0], kernels[k][1]);
    }
}

static void test_profile_gpu_time(void)
{
    static const uint64_t ns[3][2] = {{0, 2000000}, {1000000, 3000000}, {5000000, 6000000}};
    void *a = NULL, *b = NULL, *args[2], *args_b[2];
    double span = 0, busy = 0;
    const char *at;
    umadv_context_t ctx;
    int parsed;

    ctx = two_block_context(&a, &b, args, args_b);
    profiled_three_launches(ctx, args, args_b, 40, ns);
    umadv__log_level = UMADV_LOG_DEBUG;
    log_take();
    umadv_plan(ctx);
    umadv__log_level = UMADV_LOG_INFO;
    at = strstr(log_take(), "its stop; on the gpu ");
    parsed = at != NULL && sscanf(at, "its stop; on the gpu %lf ms from the first kernel's start "
                                      "to the last one's end, %lf ms of it running kernels",
                                  &span, &busy) == 2;
    ok(parsed && span == 6.0 && busy == 4.0,
       "the profile's report: 6 ms on the gpu from the first kernel to the last, 4 of them "
       "running kernels (%.1f, %.1f)", span, busy);
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

static void test_follow_timing(void)
{
    static const uint64_t ns[3][2] = {{0, 5}, {10, 15}, {20, 25}};
    void *a = NULL, *b = NULL, *args[2], *args_b[2];
    const umadv_trace_t *t;
    umadv_context_t ctx;
    umadv_exec_t *e;
    int first_followed;

    ctx = two_block_context(&a, &b, args, args_b);
    profiled_three_launches(ctx, args, args_b, 10, ns);
    umadv_plan(ctx);
    umadv_iteration_begin(ctx);
    e = ctx->replay.exec;
    ok(e != NULL && ctx->tpass.state == UMADV_CTX_TPASS_RUNNING,
       "the iteration after the profile: a timing pass under the replay");
    runtime_launch("k1", 110, args, 1);
    first_followed = e != NULL && e->step == 1;
    runtime_launch("k2", 112, args, 0);
    driver_launch("k3", 113, args);
    ok(first_followed && e->step == 3,
       "its launches are the replay's steps, runtime or driver, nested launches once");
    queue_kernel(111, 5000, 5007); /* the nested driver launch's id */
    queue_kernel(112, 5010, 5018);
    queue_kernel(113, 5020, 5029);
    umadv_iteration_begin(ctx);
    t = &ctx->trace;
    ok(t->steps[0].duration_ns == 7 && t->steps[1].duration_ns == 8 &&
       t->steps[2].duration_ns == 9, "and timed by their kernels (%llu, %llu, %llu ns)",
       (unsigned long long)t->steps[0].duration_ns, (unsigned long long)t->steps[1].duration_ns,
       (unsigned long long)t->steps[2].duration_ns);
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

/* Fetches to the GPU that take SLOW_FETCH_MS each: the replay's steps
 * wait for them on the host. */
#define SLOW_FETCH_MS 30

static void fetch_slowly(int location)
{
    struct timespec ts = {0, SLOW_FETCH_MS * 1000000L};

    if (location >= 0)
        nanosleep(&ts, NULL);
}

static umadv_status_t slow_prefetch(void *ptr, size_t size, int location, umadv_stream_t stream)
{
    fetch_slowly(location);
    return spy_real->prefetch(ptr, size, location, stream);
}

static umadv_status_t slow_prefetch_batch(void **ptrs, size_t *sizes, size_t count, int location,
                                          umadv_stream_t stream)
{
    fetch_slowly(location);
    return spy_real->prefetch_batch(ptrs, sizes, count, location, stream);
}

static void declared_step(umadv_context_t ctx, const char *name, void *p, size_t bytes)
{
    umadv_step_begin(ctx, name, NULL);
    umadv_step_access(ctx, p, bytes, UMADV_ACCESS_RW);
    umadv_step_end(ctx, 0);
}

/* The timing pass times steps marked through the api from the end of
 * their wait for data: the wait is the host's, not the step's compute. */
static void test_timed_after_wait(void)
{
    umadv_stats_t st = {.size = sizeof(st)};
    void *a = NULL, *b = NULL;
    const umadv_trace_t *t;
    umadv_context_t ctx;
    uint64_t waited;

    mock_reset();
    ctx = test_host_context(SECTION, 3 * SECTION);
    spy_install(ctx);
    spy_ops.prefetch = slow_prefetch;
    spy_ops.prefetch_batch = spy_real->prefetch_batch != NULL ? slow_prefetch_batch : NULL;
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    umadv_malloc(ctx, 2 * SECTION, "a", &a);
    umadv_malloc(ctx, 2 * SECTION, "b", &b);
    umadv_profile_next_iteration(ctx);
    for (int i = 0; i < 2; i++) { /* the profiled iteration, then the timing pass */
        umadv_iteration_begin(ctx);
        if (i == 1) {
            umadv_get_stats(ctx, &st);
            waited = st.wait_ns;
        }
        declared_step(ctx, "a", a, 2 * SECTION);
        declared_step(ctx, "b", b, 2 * SECTION);
        if (i == 0)
            umadv_plan(ctx);
    }
    umadv_iteration_begin(ctx);
    umadv_get_stats(ctx, &st);
    t = &ctx->trace;
    ok(st.wait_ns - waited >= SLOW_FETCH_MS * 1000000ull && t->source != NULL &&
       strstr(t->source, "step durations from a timing pass") != NULL,
       "the timing pass ran under the replay, its steps waited %.1f ms for their data",
       (double)(st.wait_ns - waited) / 1e6);
    ok(t->nsteps == 2 && t->steps[0].duration_ns + t->steps[1].duration_ns <
                             SLOW_FETCH_MS * 1000000ull,
       "and their durations leave the waits out (%.3f and %.3f ms)",
       (double)t->steps[0].duration_ns / 1e6, (double)t->steps[1].duration_ns / 1e6);
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
}

/* Whether @t has block @tag unseen at @step. */
static int unseen_at(const umadv_trace_t *t, const char *tag, uint32_t step)
{
    for (uint32_t i = 0; i < t->nunseen; i++) {
        if (t->unseen[i].step == step && t->allocs[t->unseen[i].alloc].tag != NULL &&
            strcmp(t->allocs[t->unseen[i].alloc].tag, tag) == 0)
            return 1;
    }
    return 0;
}

/* A parameter struct that names no block, larger than the bytes a guess
 * reads, so that a guess over it reads zeros only. */
static uint64_t opaque_struct[2 * UMADV_PROF_GUESS_BYTES / sizeof(uint64_t)];
static void *const opaque_args[1] = {opaque_struct};
static uint64_t lib_struct[2 * UMADV_PROF_GUESS_BYTES / sizeof(uint64_t)];

/* Launches whose parameter layout CUDA does not give are counted and the
 * first named; one whose first argument points at a struct naming a
 * block gets that block; the others have only faults to go by, so
 * everything on the GPU is evicted before each: what is on the host
 * since an earlier eviction is left out, and unseen at a later launch
 * where a fault had brought it back (EVICTING WHAT MAY BE ON THE GPU in
 * api/profile.c). */
static void test_no_layout(void)
{
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *args[1], *opaque[1] = {opaque_struct};
    struct lib_params { uint32_t n, pad; void *tensor; } lib_params;
    void *b = NULL;
    uint64_t evicted;
    umadv_context_t ctx;
    char *log;

    mock_reset();
    setenv("UMADV_POLICY", "oracle", 1); /* guesses are taken only under oracle */
    ctx = test_host_context(SECTION, 0);
    unsetenv("UMADV_POLICY");
    umadv_malloc(ctx, SECTION, "a", &a);
    args[0] = &a;
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv__cuda_host_reset();
    driver_launch("known", 10, args);
    umadv__cuda_host_counters(&counters);
    evicted = counters.prefetches_to_host;
    umadv__log_level = UMADV_LOG_DEBUG; /* the eviction's spans walked for the report */
    driver_launch_of((const void *)0xdead, "opaque_kernel", 20, opaque);
    umadv__log_level = UMADV_LOG_INFO;
    umadv__cuda_host_counters(&counters);
    ok(evicted == 0 && counters.prefetches_to_host == 1,
       "before the first of them every live block is evicted, so that what it touches faults");
    driver_launch_of((const void *)0xbeef, "opaque_too", 30, opaque);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 1 && ctx->nleft_out == 1,
       "before the second, nothing: the block is on the host since, left out and noted");
    lib_params = (struct lib_params){7, 0, (char *)a + 64};
    args[0] = &lib_params;
    driver_launch_of((const void *)0xf00d, "library_kernel", 40, args);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 1 && ctx->trace.nsteps == 4 &&
           ctx->trace.steps[3].naccesses == 1 &&
           ctx->trace.accesses[ctx->trace.steps[3].first_access].alloc == 0,
       "a struct its first argument points at names a block: that block is the step's, "
       "nothing evicted");
    log_take();
    umadv__cuda_host_reset();
    umadv__log_level = UMADV_LOG_DEBUG;
    umadv_iteration_begin(ctx);
    umadv__log_level = UMADV_LOG_INFO;
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_device == 1 && counters.prefetch_bytes_to_device >= UMADV_GIB,
       "after the recording its arena goes back to the gpu, free space too (new blocks of "
       "the timing pass land there)");
    log = log_take();
    ok(strstr(log, "parameter scan: 3 of 4 launches have arguments whose layout cuda "
                   "does not give (first: opaque_kernel): 1 named blocks through the "
                   "struct their first argument points at, 2 named none; 2 evictions "
                   "before them") != NULL,
       "launches without a parameter layout are counted, the first named, guesses told");
    ok(strstr(log, "profiling: 1 calls moved blocks (") != NULL &&
           strstr(log, " ms of host time in them; to the host 1 calls, ") != NULL &&
           strstr(log, "; to the gpu 0, ") != NULL &&
           strstr(log, "they left out 1 blocks on the host since an earlier one, 0 of them "
                       "unseen where faults had brought them back") != NULL,
       "the calls that moved blocks, their host time, each way, what they left out, at "
       "debug level");
    ok(strstr(log, " ms, 64.00 KiB of spans, 64.00 KiB of them live blocks, 0 B known on "
                   "the gpu; to the gpu 0, 0.0 ms, 0 B)") != NULL,
       "and their bytes: the eviction's span, the live block in it, none known on the gpu "
       "(nothing fetched yet)");
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);

    /* Under a policy that moves data a guess is not taken on its word:
     * every other block is evicted before the launch, so that what else
     * it touches faults; the named block stays, fetched back (evicted
     * when the profile began), and is the step's. */
    ctx = profiling_one_block(&a);
    umadv_malloc(ctx, 2 * SECTION, "b", &b);
    umadv__cuda_host_reset();
    lib_struct[0] = 7;                    /* a struct naming a, zeros after it: the */
    lib_struct[1] = (uintptr_t)a;         /* bytes after a stack struct may name b */
    args[0] = lib_struct;
    driver_launch_of((const void *)0xf00d, "library_kernel", 50, args);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 1 && counters.prefetch_bytes_to_host == 2 * SECTION &&
           ctx->trace.guessed_steps == 0,
       "under a policy that moves data: every block but the guessed one evicted before it, "
       "the step not counted as guessed (%llu bytes evicted in %llu calls, %u guessed)",
       (unsigned long long)counters.prefetch_bytes_to_host,
       (unsigned long long)counters.prefetches_to_host, ctx->trace.guessed_steps);
    ok(counters.prefetches_to_device == 1 && counters.prefetch_bytes_to_device == SECTION &&
           ctx->profile_fetched_there == 0 &&
           ctx->trace.nsteps == 1 && ctx->trace.steps[0].naccesses == 1 &&
           strcmp(ctx->trace.allocs[ctx->trace.accesses[ctx->trace.steps[0].first_access].alloc]
                      .tag, "a") == 0,
       "the guessed block fetched back by prefetch, not faulted back, and the step's access");
    driver_launch_of((const void *)0xdead, "opaque_kernel", 51, opaque);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 2 && counters.prefetch_bytes_to_host == 3 * SECTION,
       "a launch whose guess names nothing: everything on the gpu evicted before it, a too; b "
       "left out, on the host since (%llu calls, %llu bytes)",
       (unsigned long long)counters.prefetches_to_host,
       (unsigned long long)counters.prefetch_bytes_to_host);
    driver_launch_of((const void *)0xbeef, "opaque_too", 52, opaque);
    queue_kernel(50, 1000, 2000);
    queue_kernel(51, 3000, 4000);
    queue_kernel(52, 5000, 6000);
    queue_migration(b, 3500, SECTION, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE);
    umadv_iteration_begin(ctx);
    ok(ctx->trace.nunseen == 2 && unseen_at(&ctx->trace, "b", 1) &&
           unseen_at(&ctx->trace, "b", 2),
       "b, faulted back during opaque_kernel and left out before opaque_too: unseen there "
       "(and at opaque_kernel's own step, which its fault may follow; %u unseen)",
       ctx->trace.nunseen);
    umadv_free(ctx, b);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);

    /* Steps whose application declares what they touch. */
    ctx = profiling_one_block(&a);
    umadv_step_begin(ctx, "declared", NULL);
    umadv_step_access(ctx, a, SECTION, UMADV_ACCESS_RW);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 60, opaque);
    driver_launch_of((const void *)0xbeef, "opaque_too", 61, opaque);
    umadv_step_end(ctx, 1000);
    umadv_step_begin(ctx, "undeclared", NULL);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 62, opaque);
    umadv_step_end(ctx, 1000);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 1 && ctx->trace.guessed_steps == 1,
       "in a step that declared its accesses, its opaque launches evict nothing (the step "
       "counted once as taken on its word); in one that declared none, evicted");
    ok(counters.prefetches_to_device == 1 && ctx->profile_fetched == SECTION,
       "the declared range, evicted when the profile began, fetched back at its declaration");
    /* With a stageable block a missed access would read a discarded
     * range: declarations are not enough, what else the step touches must
     * fault; b's second section declared, its first evicted */
    umadv_set_stageable(ctx, a, 1);
    umadv_malloc(ctx, 2 * SECTION, "b", &b);
    umadv__cuda_host_reset();
    umadv_step_begin(ctx, "declared, stageable", NULL);
    umadv_step_access(ctx, a, SECTION, UMADV_ACCESS_RW);
    umadv_step_access(ctx, (char *)b + SECTION, SECTION, UMADV_ACCESS_READ);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 63, opaque);
    driver_launch_of((const void *)0xbeef, "opaque_too", 64, opaque);
    umadv_step_end(ctx, 1000);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 2 && counters.prefetch_bytes_to_host == 2 * SECTION &&
           ctx->trace.guessed_steps == 1,
       "with a stageable block: before each opaque launch every live byte but the declared "
       "ones evicted (%llu calls, %llu bytes)",
       (unsigned long long)counters.prefetches_to_host,
       (unsigned long long)counters.prefetch_bytes_to_host);
    umadv_step_begin(ctx, "declared again", NULL);
    umadv_step_access(ctx, b, SECTION, UMADV_ACCESS_RW);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 65, opaque);
    umadv_step_end(ctx, 1000);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 4 && counters.prefetch_bytes_to_host == 4 * SECTION,
       "the next such step evicts what it did not declare: a, and b's second section, in "
       "two calls (a run broken where b's first section stays: %llu calls, %llu bytes)",
       (unsigned long long)counters.prefetches_to_host,
       (unsigned long long)counters.prefetch_bytes_to_host);
    umadv_free(ctx, b);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* FETCHING SCANNED BLOCKS BACK: not a block whose sections a fetch
 * brought to the GPU whole and no eviction touched since (the pool's
 * marks): a new block in the room of one fetched and freed. A section
 * the fetch covered in part (the block's span past its size) is not
 * known there: its other pages may lie on the host (the span of
 * ResNet-50's blocks past their size, marked, faulted 13 MiB into its
 * second pass; H200, 2026-11-29). A block partly known there is
 * fetched in the sections that are not. */
static void test_fetch_spared(void)
{
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *n = NULL, *first, *args[1] = {&n}, *opaque[1] = {opaque_struct};
    umadv_context_t ctx = profiling_one_block(&a);

    umadv_malloc(ctx, 2 * SECTION + 100, "n1", &n);
    first = n;
    driver_launch("known", 80, args);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_device == 1, "a new block fetched ahead of its launch");
    umadv_free(ctx, n);
    umadv_malloc(ctx, 2 * SECTION, "n2", &n);
    driver_launch("known", 81, args);
    umadv__cuda_host_counters(&counters);
    ok(n == first && counters.prefetches_to_device == 1 &&
           ctx->profile_fetch_spared == 2 * SECTION,
       "another in its room, in the two sections fetched whole and not evicted since: no "
       "call");
    umadv_free(ctx, n);
    umadv_malloc(ctx, 3 * SECTION, "n2b", &n);
    driver_launch("known", 82, args);
    umadv__cuda_host_counters(&counters);
    ok(n == first && counters.prefetches_to_device == 2 &&
           counters.prefetch_bytes_to_device == 2 * SECTION + 100 + SECTION &&
           ctx->profile_fetch_spared == 4 * SECTION,
       "one reaching into the third, of which n1's fetch asked 100 bytes: that section "
       "fetched, not the two known there (%llu bytes asked in all)",
       (unsigned long long)counters.prefetch_bytes_to_device);
    umadv__log_level = UMADV_LOG_DEBUG; /* the eviction's spans walked for the report */
    driver_launch_of((const void *)0xdead, "opaque_kernel", 83, opaque); /* evicts n2b */
    umadv__log_level = UMADV_LOG_INFO;
    ok(ctx->profile_move_bytes[1] == 4 * SECTION && ctx->profile_evict_live == 4 * SECTION &&
           ctx->profile_evict_known == 3 * SECTION,
       "the eviction's span counted: a and n2b, side by side, four sections, the three of "
       "n2b known on the gpu (fetched), a's not");
    umadv_free(ctx, n);
    umadv_malloc(ctx, 3 * SECTION, "n3", &n);
    driver_launch("known", 84, args);
    umadv__cuda_host_counters(&counters);
    ok(n == first && counters.prefetches_to_device == 3 &&
           counters.prefetch_bytes_to_device == 2 * SECTION + 100 + 4 * SECTION,
       "a block there after an eviction moved that room: fetched whole");
    umadv_free(ctx, n);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* An eviction moves a run of blocks by one call over its span, the free
 * room between them with it: room marked by a fetch is no longer known
 * on the GPU (a PyTorch GPT-2's second pass faulted in 95 MiB, 4,049
 * records, in blocks new in such room, against 0.8 MiB without the
 * marks; H200, 2026-11-29). */
static void test_fetch_after_run_moved(void)
{
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *x = NULL, *n = NULL, *y = NULL, *room, *args[1] = {&n},
         *opaque[1] = {opaque_struct};
    umadv_context_t ctx = profiling_one_block(&a);

    umadv_malloc(ctx, SECTION, "x", &x);
    umadv_malloc(ctx, 3 * SECTION, "n4", &n);
    umadv_malloc(ctx, SECTION, "y", &y);
    room = n;
    driver_launch("known", 90, args);
    umadv_free(ctx, n);
    umadv__cuda_host_reset();
    driver_launch_of((const void *)0xdead, "opaque_kernel", 91, opaque);
    umadv__cuda_host_counters(&counters);
    ok((char *)room == (char *)x + SECTION && (char *)y == (char *)room + 3 * SECTION &&
           counters.prefetch_bytes_to_host >= 5 * SECTION,
       "x and y evicted by one call over their run, n4's freed room between them with it "
       "(%llu bytes)", (unsigned long long)counters.prefetch_bytes_to_host);
    umadv_malloc(ctx, 3 * SECTION, "n5", &n);
    driver_launch("known", 92, args);
    umadv__cuda_host_counters(&counters);
    ok(n == room && counters.prefetches_to_device == 1,
       "a block new in that room, marked by n4's fetch: fetched (%llu calls)",
       (unsigned long long)counters.prefetches_to_device);
    umadv_free(ctx, n);
    umadv_free(ctx, y);
    umadv_free(ctx, x);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* A block kept through an eviction is left out of it whole, rounding and
 * all: a block of a section and a half spans two, and an eviction that
 * cut the kept block out by its size moved its last half section (no
 * block's bytes) with the next block, or in a call of its own where a
 * kept block followed (a PyTorch GPT-2's second pass: 20,000 such calls,
 * asking 24 GiB that lay on the host; H200, 2026-11-29). */
static void test_kept_whole_span(void)
{
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *b = NULL, *c = NULL, *args[1] = {lib_struct};
    umadv_context_t ctx = profiling_one_block(&a);

    umadv_malloc(ctx, SECTION + SECTION / 2, "c", &c);
    umadv_malloc(ctx, 2 * SECTION, "b", &b);
    lib_struct[0] = 7;
    lib_struct[1] = (uintptr_t)c;
    ok((char *)c == (char *)a + SECTION && (char *)b == (char *)c + 2 * SECTION,
       "c spans two sections after a, b after it");
    umadv__cuda_host_reset();
    driver_launch_of((const void *)0xf00d, "library_kernel", 70, args);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 1 && counters.prefetch_bytes_to_host == 2 * SECTION,
       "the guessed c kept whole: b alone evicted, none of c's span (%llu calls, %llu bytes)",
       (unsigned long long)counters.prefetches_to_host,
       (unsigned long long)counters.prefetch_bytes_to_host);
    ok(ctx->profile_fetched == SECTION + SECTION / 2 &&
           ctx->profile_fetched_there == ctx->profile_fetched,
       "c, new since the profile's first eviction, fetched back as the launch's, counted as "
       "maybe on the gpu already (%llu of %llu bytes)",
       (unsigned long long)ctx->profile_fetched_there,
       (unsigned long long)ctx->profile_fetched);
    /* the next library launch naming c again: c lies on the gpu since
     * the last eviction, which kept it; a and b are on the host since it */
    driver_launch_of((const void *)0xf00d, "library_kernel", 71, args);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_device == 1 && counters.prefetches_to_host == 1 &&
           ctx->profile_fetched == SECTION + SECTION / 2,
       "the guessed c named again: not fetched back where it lies, nothing evicted (%llu "
       "calls to the gpu, %llu to the host)",
       (unsigned long long)counters.prefetches_to_device,
       (unsigned long long)counters.prefetches_to_host);
    lib_struct[0] = lib_struct[1] = 0;
    umadv_free(ctx, b);
    umadv_free(ctx, c);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* The iteration of test_guessed_then_plan: a library kernel whose
 * struct names a (a guess), k on b, the library kernel again. */
static void guessed_iteration(void **args_lib, void **args_b, uint32_t corr)
{
    driver_launch_of((const void *)0xf00d, "library_kernel", corr, args_lib);
    driver_launch("kb", corr + 1, args_b);
    driver_launch_of((const void *)0xf00d, "library_kernel", corr + 2, args_lib);
    for (uint32_t k = 0; k < 3; k++)
        queue_kernel(corr + k, 100 * (corr + k), 100 * (corr + k) + 50);
}

/* A trace guessed under oracle stages nothing (replay.c), so a change
 * to a policy whose plan evicts profiles again, under that policy
 * (schedule.c, guesses_bar_staging); the profile it takes guesses
 * nothing, and what is planned on it asks for no other. */
/* Two blocks under a budget of one, profiled under oracle over
 * guessed_iteration (and a step on its declarations, if @declared), with
 * UMADV_REPROFILE_FAULTS=0 if @no_reprofile, planned under oracle. */
typedef struct guessed_fixture {
    umadv_context_t ctx;
    void *a, *b, *args_lib[1], *args_b[1];
} guessed_fixture_t;

static void guessed_setup(guessed_fixture_t *f, int declared, int no_reprofile)
{
    *f = (guessed_fixture_t){.args_lib = {lib_struct}};
    mock_reset();
    setenv("UMADV_POLICY", "oracle", 1);
    if (no_reprofile)
        setenv("UMADV_REPROFILE_FAULTS", "0", 1);
    f->ctx = test_host_context(SECTION, SECTION);
    unsetenv("UMADV_REPROFILE_FAULTS");
    unsetenv("UMADV_POLICY");
    umadv_malloc(f->ctx, SECTION, "a", &f->a);
    umadv_malloc(f->ctx, SECTION, "b", &f->b);
    lib_struct[0] = 7;                        /* a struct naming a, zeros after it (a */
    lib_struct[1] = (uintptr_t)f->a + 64;     /* stack one may name b past its end) */
    f->args_b[0] = &f->b;
    umadv_profile_next_iteration(f->ctx);
    umadv_iteration_begin(f->ctx);
    guessed_iteration(f->args_lib, f->args_b, 10);
    if (declared) {
        umadv_step_begin(f->ctx, "declared", NULL);
        umadv_step_access(f->ctx, f->b, SECTION, UMADV_ACCESS_RW);
        driver_launch_of((const void *)0xdead, "opaque_kernel", 13, (void **)opaque_args);
        umadv_step_end(f->ctx, 0);
    }
    umadv_iteration_begin(f->ctx);
    umadv_plan(f->ctx);
}

static void guessed_teardown(guessed_fixture_t *f)
{
    umadv_free(f->ctx, f->a);
    umadv_free(f->ctx, f->b);
    umadv_context_destroy(f->ctx);
    lib_struct[0] = lib_struct[1] = 0;
}

static void test_guessed_then_plan(void)
{
    umadv_stats_t st = {.size = sizeof(st)};
    guessed_fixture_t f;
    umadv_context_t ctx;
    uint64_t profiles;

    guessed_setup(&f, 0, 0);
    ctx = f.ctx;
    umadv_get_stats(ctx, &st);
    profiles = st.profiles;
    ok(ctx->profile_guess_steps > 0 && ctx->trace.guessed_steps > 0 && !ctx->life.want_profile,
       "a profile under oracle guesses; oracle's plan asks for no profile");
    log_take();
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    ok(ctx->life.want_profile && ctx->schedule.evict_ops > 0 &&
           count_of(log_take(), "profiling the next iteration again under plan") == 1,
       "plan under a budget of one block of two: it evicts, so it asks for a profile, said");
    for (int i = 0; i < 3; i++) {
        umadv_iteration_begin(ctx);
        guessed_iteration(f.args_lib, f.args_b, 100 + 10 * i);
    }
    umadv_iteration_begin(ctx);
    umadv_get_stats(ctx, &st);
    ok(st.profiles == profiles + 1 && ctx->profile_guess_steps == 0 &&
           ctx->trace.guessed_steps == 0 && !ctx->life.want_profile &&
           ctx->replay.exec != NULL,
       "profiled once more, under plan: no guess, replayed, no other profile asked for "
       "(%llu profiles)", (unsigned long long)(st.profiles - profiles));
    guessed_teardown(&f);

    /* a step taken on the application's declarations as well: a profile
     * under plan would stage nothing either */
    guessed_setup(&f, 1, 0);
    ctx = f.ctx;
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    ok(ctx->profile_guess_steps > 0 && ctx->trace.guessed_steps > ctx->profile_guess_steps &&
           ctx->schedule.evict_ops > 0 && !ctx->life.want_profile,
       "with a declared step too (%u guessed steps, %u of them guesses): no profile asked for",
       ctx->trace.guessed_steps, ctx->profile_guess_steps);
    guessed_teardown(&f);

    /* UMADV_REPROFILE_FAULTS=0: never profiled again */
    guessed_setup(&f, 0, 1);
    ctx = f.ctx;
    umadv_set_policy(ctx, UMADV_POLICY_PLAN);
    ok(ctx->profile_guess_steps > 0 && ctx->schedule.evict_ops > 0 && !ctx->life.want_profile,
       "UMADV_REPROFILE_FAULTS=0: the guessed trace is kept");
    guessed_teardown(&f);
}

/* A step that says it declared all it touches (umadv_step_access_complete)
 * is taken on its word with stageable blocks: no eviction before its
 * opaque launches, staging allowed; a fault outside its declarations
 * withdraws that (warned), one inside them does not. */
static umadv_context_t complete_step(void **a_p, void **b_p, void **far_p, uint32_t corr)
{
    umadv_context_t ctx = profiling_one_block(a_p);

    umadv_set_stageable(ctx, *a_p, 1);
    umadv_malloc(ctx, 2 * SECTION, "b", b_p);
    umadv_set_stageable(ctx, *b_p, 1);
    umadv_malloc(ctx, 6 * UMADV_MIB, "far", far_p); /* a fault names a page: 2 MiB away */
    umadv__cuda_host_reset();
    umadv_step_begin(ctx, "complete", NULL);
    umadv_step_access(ctx, *a_p, SECTION, UMADV_ACCESS_RW);
    umadv_step_access(ctx, (char *)*b_p + SECTION, SECTION, UMADV_ACCESS_READ);
    umadv_step_access_complete(ctx);
    driver_launch_of((const void *)0xdead, "opaque_kernel", corr, (void **)opaque_args);
    driver_launch_of((const void *)0xbeef, "opaque_too", corr + 1, (void **)opaque_args);
    umadv_step_end(ctx, 1000);
    queue_kernel(corr, 1000, 2000);
    queue_kernel(corr + 1, 3000, 4000);
    return ctx;
}

static void test_complete_declarations(void)
{
    umadv_cuda_host_counters_t counters;
    umadv_context_t ctx;
    void *a = NULL, *b = NULL, *c = NULL;
    uintptr_t page;
    const char *log;

    ctx = complete_step(&a, &b, &c, 70);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 0 && ctx->trace.guessed_steps == 0,
       "a step that declared all it touches: nothing evicted before its opaque launches, "
       "nothing counted as guessed (%llu evictions)",
       (unsigned long long)counters.prefetches_to_host);
    is(umadv_step_access_complete(ctx), UMADV_ERR_STATE, "outside a step: an error");
    is(umadv_step_access_complete(NULL), UMADV_ERR_INVALID_PARAM, "a NULL context: an error");
    queue_fault((char *)b + SECTION + 64, 1500, 2); /* inside what it declared */
    log_take();
    umadv_iteration_begin(ctx);
    ok(ctx->record == UMADV_CTX_REC_DONE && ctx->trace.guessed_steps == 0 &&
           strstr(log_take(), "outside what it declared") == NULL,
       "a fault inside its declarations keeps it trusted");
    umadv_free(ctx, c);
    umadv_free(ctx, b);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);

    ctx = complete_step(&a, &b, &c, 80);
    queue_fault((char *)c + 4 * UMADV_MIB + 64, 3500, 2);
    log_take();
    umadv_iteration_begin(ctx);
    log = log_take();
    umadv_free(ctx, c);
    ok(ctx->record == UMADV_CTX_REC_DONE && ctx->trace.guessed_steps == 1 &&
           strstr(log, "step complete touched block far outside what it declared") != NULL,
       "a fault outside them: warned, naming the step and the block, and nothing is "
       "staged on the profile");
    umadv_free(ctx, b);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);

    /* Two small blocks in one page: a fault names the page, which begins
     * in the block before the one the step declared. */
    ctx = profiling_one_block(&a);
    umadv_malloc(ctx, 1000, "before", &b);
    umadv_malloc(ctx, 1000, "declared", &c);
    umadv_step_begin(ctx, "small", NULL);
    umadv_step_access(ctx, c, 1000, UMADV_ACCESS_READ);
    umadv_step_access_complete(ctx);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 90, (void **)opaque_args);
    umadv_step_end(ctx, 1000);
    queue_kernel(90, 1000, 2000);
    page = (uintptr_t)c & ~(uintptr_t)(2 * 1024 * 1024 - 1);
    queue_fault((void *)(page > (uintptr_t)b ? page : (uintptr_t)b), 1500, 1);
    log_take();
    umadv_iteration_begin(ctx);
    ok((uintptr_t)b < (uintptr_t)c && (uintptr_t)c - (uintptr_t)b < 2 * 1024 * 1024 &&
           ctx->trace.guessed_steps == 0 && strstr(log_take(), "outside what it") == NULL,
       "a fault at the start of the page its declared block begins in, inside the block "
       "before it, keeps the step trusted");
    umadv_free(ctx, c);
    umadv_free(ctx, b);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* A step that declares [@p, @p + @bytes) and says that is all it touches. */
static void complete_step_of(umadv_context_t ctx, void *p, size_t bytes)
{
    umadv_step_begin(ctx, "complete", NULL);
    umadv_step_access(ctx, p, bytes, UMADV_ACCESS_RW);
    umadv_step_access_complete(ctx);
    umadv_step_end(ctx, 1000);
}

/* A declared range is fetched back once after each eviction: steps that
 * declare it again, or declare its parts in turn, fetch nothing more. */
static void test_declared_fetched_once(void)
{
    umadv_cuda_host_counters_t counters;
    umadv_context_t ctx;
    void *a = NULL;

    ctx = profiling_one_block(&a);
    umadv_free(ctx, a);
    umadv_malloc(ctx, 4 * SECTION, "a", &a);
    umadv_set_stageable(ctx, a, 1);
    umadv__cuda_host_reset();
    for (int part = 0; part < 2; part++) /* a split's two parts, then the whole */
        complete_step_of(ctx, (char *)a + part * 2 * SECTION, 2 * SECTION);
    complete_step_of(ctx, a, 4 * SECTION);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_device == 2 && counters.prefetch_bytes_to_device == 4 * SECTION,
       "two parts fetched back in turn, the whole block declared after them fetches nothing "
       "(%llu calls, %llu bytes)", (unsigned long long)counters.prefetches_to_device,
       (unsigned long long)counters.prefetch_bytes_to_device);
    umadv_step_begin(ctx, "not said complete", NULL);
    umadv_step_access(ctx, a, SECTION, UMADV_ACCESS_READ);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 95, (void **)opaque_args);
    umadv_step_end(ctx, 1000);
    complete_step_of(ctx, a, 4 * SECTION); /* after an eviction */
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 1 && counters.prefetches_to_device == 3 &&
           counters.prefetch_bytes_to_device == 8 * SECTION,
       "after an eviction the next declaration fetches it back again (%llu calls, %llu bytes)",
       (unsigned long long)counters.prefetches_to_device,
       (unsigned long long)counters.prefetch_bytes_to_device);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* UMADV_PROFILE_EVICT=0: what a launch without a layout touches goes
 * unseen, so its step counts as guessed (nothing staged on the profile),
 * a marked step once. */
static void test_unseen_without_evictions(void)
{
    umadv_cuda_host_counters_t counters;
    umadv_context_t ctx;
    void *a = NULL;

    setenv("UMADV_PROFILE_EVICT", "0", 1);
    ctx = profiling_one_block(&a);
    unsetenv("UMADV_PROFILE_EVICT");
    umadv_set_stageable(ctx, a, 1);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 100, (void **)opaque_args);
    umadv_step_begin(ctx, "marked", NULL);
    driver_launch_of((const void *)0xdead, "opaque_kernel", 101, (void **)opaque_args);
    driver_launch_of((const void *)0xbeef, "opaque_too", 102, (void **)opaque_args);
    umadv_step_end(ctx, 1000);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 0 && ctx->trace.guessed_steps == 2,
       "without evictions, a launch without a layout leaves its step guessed (a kernel "
       "step, and a marked step of two such launches once: %u)", ctx->trace.guessed_steps);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
}

/* A fresh context on the mock, @budget as UMADV_BUDGET (or none). */
static umadv_context_t budget_context(const char *budget)
{
    umadv_context_t ctx;

    mock_reset();
    if (budget != NULL)
        setenv("UMADV_BUDGET", budget, 1);
    ctx = test_host_context(SECTION, 0);
    unsetenv("UMADV_BUDGET");
    return ctx;
}

/* One recording with an opaque kernel (everything evicted before it)
 * under @policy and a budget of three sections over two blocks of two:
 * the prefetches to the GPU after it, and to the host once the replay
 * planned from it has started (its first step waits for that). */
static void budget_recording(const char *policy, size_t *restored_p, size_t *evicted_p)
{
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *b = NULL, *args[1];
    umadv_context_t ctx;

    setenv("UMADV_POLICY", policy, 1);
    ctx = budget_context("192K");
    unsetenv("UMADV_POLICY");
    umadv_malloc(ctx, 2 * SECTION, "a", &a);
    umadv_malloc(ctx, 2 * SECTION, "b", &b);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    args[0] = &a;
    driver_launch("known_a", 40, args);
    args[0] = &b;
    driver_launch("known_b", 41, args);
    args[0] = opaque_struct;
    driver_launch_of((const void *)0xdead, "opaque_b", 42, args);
    umadv__cuda_host_reset();
    umadv_iteration_begin(ctx);
    umadv__cuda_host_counters(&counters);
    *restored_p = counters.prefetches_to_device;
    umadv__cuda_host_reset();
    umadv_plan(ctx);
    umadv_iteration_begin(ctx);
    args[0] = &a;
    driver_launch("known_a", 43, args); /* step 0 waits for the replay's start */
    umadv_context_destroy(ctx); /* the blocks go with it */
    umadv__cuda_host_counters(&counters);
    *evicted_p = counters.prefetches_to_host;
}

/* What the recording evicted comes back for the timing pass where the
 * budget (none under oracle) has room. Where it stays on the host, the
 * replay knows: no eviction of what is not on the GPU. */
static void test_restore_under_budget(void)
{
    size_t restored, evicted;

    budget_recording("demand", &restored, &evicted);
    ok(restored == 0 && evicted == 0,
       "demand, 2 blocks of 2 sections over a budget of 3: left on the host, and the replay "
       "evicts nothing at its start (%zu prefetches back, %zu out)", restored, evicted);
    budget_recording("oracle", &restored, &evicted);
    ok(restored > 0 && evicted == 0,
       "oracle ignores the budget: brought back (%zu prefetches), never evicted", restored);
}

/* ---- a profile in two passes ------------------------------------------ */

/* One iteration of four steps from @corr: a known kernel on a, an opaque
 * one (named @opaque_name), a known one on a again, a known one on b. The
 * first and third take 10 ms by their records, the others 1 us. */
/* four_steps with the kernels taking @took ns each. */
static void four_steps_took(uint32_t corr, void **a_p, void **b_p, const char *opaque_name,
                            uint64_t at, const uint64_t took[4])
{
    void *args[1] = {a_p};

    driver_launch("known_a", corr, args);
    args[0] = opaque_struct;
    driver_launch_of((const void *)0xdead, opaque_name, corr + 1, args);
    args[0] = a_p;
    driver_launch("known_a2", corr + 2, args);
    args[0] = b_p;
    driver_launch("known_b", corr + 3, args);
    for (uint32_t i = 0; i < 4; i++) {
        queue_kernel(corr + i, at, at + took[i]);
        at += took[i];
    }
}

static void four_steps(uint32_t corr, void **a_p, void **b_p, const char *opaque_name,
                       uint64_t at)
{
    static const uint64_t took[4] = {10000000, 1000, 10000000, 1000};

    four_steps_took(corr, a_p, b_p, opaque_name, at, took);
}

/* A fresh context on the mock with blocks a (a section) and b (two),
 * recording its first iteration; @budget as UMADV_BUDGET, or NULL. */
static umadv_context_t a_b_recording(const char *budget, void **a_p, void **b_p)
{
    umadv_context_t ctx = budget_context(budget);

    umadv_malloc(ctx, SECTION, "a", a_p);
    umadv_malloc(ctx, 2 * SECTION, "b", b_p);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    return ctx;
}

/* Guided, with a block made anew each iteration before its first launch
 * (a data loader's batch): the old one freed after, the new one lies
 * elsewhere in each pass. The second pass finds it by its birth, not its
 * address, and keeps it through the opaque launch as the first pass's
 * block a was kept (test_two_passes); found by address it was another
 * iteration's, and evicted with b. */
static void test_second_pass_by_birth(void)
{
    umadv_cuda_host_counters_t counters;
    void *old = NULL, *x = NULL, *b = NULL, *x1;
    umadv_context_t ctx;

    setenv("UMADV_PROFILE_PASSES", "2", 1);
    setenv("UMADV_PROFILE_GUIDED", "1", 1);
    ctx = budget_context("128K");
    umadv_malloc(ctx, 2 * SECTION, "b", &b);
    umadv_malloc(ctx, SECTION, "x", &old);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv_malloc(ctx, SECTION, "x", &x); /* the first pass's batch */
    umadv_free(ctx, old);
    four_steps(10, &x, &b, "opaque_kernel", 0);
    umadv_plan(ctx);
    umadv_iteration_begin(ctx);
    x1 = x;
    umadv_malloc(ctx, SECTION, "x", &x); /* the second pass's, elsewhere */
    umadv_free(ctx, x1);
    umadv__cuda_host_reset();
    four_steps(20, &x, &b, "opaque_kernel", 100000000);
    umadv__cuda_host_counters(&counters);
    ok(x != x1 && ctx->scout_ready && ctx->profile_kept == 1 &&
           counters.prefetch_bytes_to_host == 2 * SECTION,
       "a block made anew each iteration, elsewhere in each pass (%p, then %p): the second "
       "pass keeps it through the opaque launch, found by its birth; only b evicted (%llu "
       "bytes)", x1, x, (unsigned long long)counters.prefetch_bytes_to_host);
    umadv_iteration_begin(ctx);
    umadv_free(ctx, x);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
    unsetenv("UMADV_PROFILE_PASSES");
    unsetenv("UMADV_PROFILE_GUIDED");
}

/* UMADV_PROFILE_PASSES=2, guided (the default): the first pass evicts
 * nothing and takes the steps' durations; the second evicts before the
 * opaque launch only b, which the first saw unused for 20 ms around it,
 * keeps a (unused for 1 us) as the launch's, and needs no timing pass. */
static void test_two_passes(void)
{
    /* known_a and known_b faster than in the first pass, known_a2 slower */
    static const uint64_t second_took[4] = {4000000, 1000, 15000000, 500};
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *b = NULL;
    const umadv_trace_t *t;
    umadv_stats_t stats = {.size = sizeof(stats)};
    umadv_context_t ctx;
    char *log;

    setenv("UMADV_PROFILE_PASSES", "2", 1);
    setenv("UMADV_PROFILE_GUIDED", "1", 1);
    ctx = a_b_recording("128K", &a, &b); /* a and b together do not fit */
    umadv__cuda_host_reset();
    four_steps(10, &a, &b, "opaque_kernel", 0);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetches_to_host == 0, "the first pass evicts nothing, not even at its start");
    ok(mock.um_on, "the first pass runs with the unified-memory counters");
    mock.um_switches = 0;
    log_take();
    is(umadv_plan(ctx), UMADV_OK, "umadv_plan after the first pass: asked for later");
    log = log_take();
    ok(strstr(log, "profiling, first pass: 4 steps") != NULL &&
           strstr(log, "planned when the second, the next iteration, is recorded") != NULL,
       "the first pass kept aside, the plan deferred: logged");
    is(umadv_trace_save(ctx, "/nonexistent/never-written"), UMADV_ERR_STATE,
       "no trace to save between the passes");
    ok(strstr(log_take(), "umadv_trace_save: the profile takes two passes") != NULL,
       "...and the error says why");
    umadv__cuda_host_reset();
    umadv_iteration_begin(ctx);
    umadv__cuda_host_counters(&counters);
    ok(ctx->life.state == UMADV_CYCLE_RECORDING && ctx->scout_ready &&
           ctx->scout.nsteps == 4 && ctx->record == UMADV_CTX_REC_RECORDING,
       "the iteration after it is recorded (the boundary's stop after umadv_plan's: nothing)");
    ok(counters.prefetches_to_host == 0,
       "guided, the second pass begins with the blocks where the first left them (%llu "
       "evictions)", (unsigned long long)counters.prefetches_to_host);
    ok(ctx->replay.stage_cache.ahead != NULL && ctx->replay.stage_cache.n == 0,
       "the staging pool its plan will want is being pinned while the second pass runs");
    umadv__cuda_host_reset();
    four_steps_took(20, &a, &b, "opaque_kernel", 100000000, second_took);
    umadv__cuda_host_counters(&counters);
    t = &ctx->trace;
    ok(counters.prefetches_to_host == 1 && counters.prefetch_bytes_to_host == 2 * SECTION,
       "the second pass evicts before the opaque launch only the block unused for longer "
       "than a round trip (%llu calls, %llu bytes)",
       (unsigned long long)counters.prefetches_to_host,
       (unsigned long long)counters.prefetch_bytes_to_host);
    ok(t->nsteps >= 2 && t->steps[1].naccesses == 1 &&
           strcmp(t->allocs[t->accesses[t->steps[1].first_access].alloc].tag, "a") == 0 &&
           ctx->profile_kept == 1,
       "the block kept is the opaque launch's access");
    log_take();
    umadv_iteration_begin(ctx);
    log = log_take();
    t = &ctx->trace;
    ok(ctx->life.state == UMADV_CYCLE_REPLAYING && !ctx->scout_ready &&
           t->steps[0].duration_ns == 4000000 && t->steps[1].duration_ns == 1000 &&
           t->steps[2].duration_ns == 10000000 && t->steps[3].duration_ns == 500 &&
           ctx->tpass.state == UMADV_CTX_TPASS_IDLE &&
           strstr(t->source, "step durations from two passes") != NULL,
       "the second pass recorded with each step's lesser duration of the two passes "
       "(known_a and known_b shorter in the second, known_a2 in the first), planned as "
       "asked, replayed: no timing pass");
    ok(mock.um_on && mock.um_switches == 0,
       "the counters stayed on from the first pass through the second to the replay's first "
       "iteration, which counts its faults (%d switches)", mock.um_switches);
    ok(ctx->replay.stage_cache.ahead == NULL && ctx->replay.stage_cache.n == 1 &&
           ctx->replay.stage_cache.bytes[0] ==
               SECTION * umadv__core_stage_sections(t, ctx->schedule.first_step,
                                                    ctx->schedule.nsteps, ctx->planned_budget),
       "the executor took the pool pinned ahead: the plan's own, %llu bytes",
       (unsigned long long)ctx->replay.stage_cache.bytes[0]);
    ok(strstr(log, "second pass: 1 evictions before launches without a layout, 1 blocks kept "
                   "as theirs on the first pass's word, 0 left where its plan keeps them; "
                   "step durations each step's lesser of the two passes' (6.0 ms less than "
                   "the first's)") != NULL,
       "logged at info");
    umadv_get_stats(ctx, &stats);
    is_u64(stats.profiles, 1, "two passes, one profile");
    ok(t->guessed_steps == 0, "nothing in it rests on a guess");

    /* a second pass that runs other steps: guided no further, timed */
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    four_steps(30, &a, &b, "opaque_kernel", 200000000);
    umadv_iteration_begin(ctx);
    umadv__cuda_host_reset();
    log_take();
    four_steps(40, &a, &b, "another_opaque", 300000000);
    umadv__cuda_host_counters(&counters);
    ok(counters.prefetch_bytes_to_host == 3 * SECTION &&
           strstr(log_take(), "the second pass ran other steps than the first from step 1 "
                              "(another_opaque)") != NULL,
       "where the second pass runs other steps, every live block is evicted, logged "
       "(%llu bytes)", (unsigned long long)counters.prefetch_bytes_to_host);
    umadv_iteration_begin(ctx);
    ok(ctx->tpass.state == UMADV_CTX_TPASS_RUNNING &&
           strstr(log_take(), "step durations to be timed") != NULL,
       "its durations are timed in the next iteration");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);

    /* without a budget a plan evicts nothing on the first pass's trace:
     * that pass is the profile (every step counted guessed: it evicted
     * nothing, so nothing is staged on it), and no second follows */
    ctx = a_b_recording(NULL, &a, &b);
    log_take();
    umadv__cuda_host_reset();
    four_steps(50, &a, &b, "opaque_kernel", 400000000);
    umadv_iteration_begin(ctx);
    umadv__cuda_host_counters(&counters);
    t = &ctx->trace;
    log = log_take();
    ok(counters.prefetches_to_host == 0 && !umadv__ctx_profile_second_waits(ctx) &&
           t->nsteps == 4 && t->guessed_steps == 4 &&
           strstr(log, "a plan under the budget evicts nothing on its trace, which is the "
                       "profile: no second pass") != NULL,
       "no budget: the first pass is the profile, its steps guessed, no second pass "
       "(%llu evictions, %u of %u steps guessed)",
       (unsigned long long)counters.prefetches_to_host, t->guessed_steps, t->nsteps);
    umadv_get_stats(ctx, &stats);
    ok(umadv_plan(ctx) == UMADV_OK && stats.profiles == 1, "planned on it: one profile");
    /* a budget that makes the plan evict: profiled again, in two passes */
    log_take();
    umadv_set_budget(ctx, 128 * 1024);
    umadv_iteration_begin(ctx);
    four_steps(70, &a, &b, "opaque_kernel", 600000000);
    umadv_iteration_begin(ctx);
    log = log_take();
    ok(strstr(log, "profiling the next iteration again") != NULL &&
           strstr(log, "the next iteration is the second pass") != NULL,
       "the budget lowered: the plan on it evicts, a first pass then a second follow");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
    unsetenv("UMADV_PROFILE_GUIDED");
    setenv("UMADV_PROFILE_PASSES", "1", 1);
}

/* One iteration of five steps from @corr: known_a on a (10 ms), an
 * opaque launch (1 us), known_c on c (10 ms), known_a2 on a and known_b
 * on b (1 us each). */
static void five_steps(uint32_t corr, void **a_p, void **b_p, void **c_p, uint64_t at)
{
    void *const *blocks[5] = {a_p, NULL, c_p, a_p, b_p};
    static const char *const names[5] = {"known_a", "opaque_kernel", "known_c", "known_a2",
                                         "known_b"};
    static const uint64_t took[5] = {10000000, 1000, 10000000, 1000, 1000};

    for (uint32_t i = 0; i < 5; i++) {
        void *args[1] = {blocks[i] != NULL ? (void *)blocks[i] : (void *)opaque_struct};

        if (blocks[i] != NULL)
            driver_launch(names[i], corr + i, args);
        else
            driver_launch_of((const void *)0xdead, names[i], corr + i, args);
        queue_kernel(corr + i, at, at + took[i]);
        at += took[i];
    }
}

/* Guided, a block unused around the opaque launch for longer than a
 * round trip, that the first pass's plan keeps on the GPU across it,
 * stays where it lies there, unseen (no eviction of the replay stages it
 * across that step); the blocks the plan takes off across it are
 * evicted. Blocks a and b of a section, c of two, under a budget of
 * three: known_c holds two of them, so the plan takes c off after it,
 * for b, and keeps a, next used before b, through known_c. */
static void test_two_passes_plan_keeps(void)
{
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *b = NULL, *c = NULL;
    umadv_context_t ctx;
    char *log;

    setenv("UMADV_PROFILE_PASSES", "2", 1);
    ctx = budget_context("192K");
    umadv_malloc(ctx, SECTION, "a", &a);
    umadv_malloc(ctx, SECTION, "b", &b);
    umadv_malloc(ctx, 2 * SECTION, "c", &c);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    five_steps(10, &a, &b, &c, 0);
    mock.flushes = 0;
    umadv_iteration_begin(ctx);
    if (!ok(ctx->scout_ready && ctx->scout_off.from.off != NULL,
            "the first pass's plan evicts: a second pass, guided by where it takes blocks off"))
        goto out;
    ok(mock.flushes == 1,
       "one CUPTI flush at the boundary between the passes: the first's stop (%d)",
       mock.flushes);
    umadv__cuda_host_reset();
    five_steps(20, &a, &b, &c, 100000000);
    umadv__cuda_host_counters(&counters);
    ok(unseen_at(&ctx->trace, "a", 1) && !unseen_at(&ctx->trace, "c", 1) &&
           ctx->profile_stayed >= 1 && ctx->nkept == 0,
       "a, unused for 10 ms around the opaque launch, which the plan keeps on the GPU across "
       "it, stayed there unseen, not the launch's (%llu stayed)",
       (unsigned long long)ctx->profile_stayed);
    ok(counters.prefetch_bytes_to_host >= 2 * SECTION &&
           counters.prefetch_bytes_to_host <= 3 * SECTION,
       "c, which the plan takes off across it, was evicted, and a was not (%llu bytes)",
       (unsigned long long)counters.prefetch_bytes_to_host);
    ok(counters.prefetch_bytes_to_device == counters.prefetch_bytes_to_host,
       "what was evicted was fetched back for the scanned launches, and a, on the GPU where "
       "it stayed, was not prefetched again (%llu bytes back)",
       (unsigned long long)counters.prefetch_bytes_to_device);
    log_take();
    umadv_iteration_begin(ctx);
    log = log_take();
    ok(strstr(log, "0 blocks kept as theirs on the first pass's word, 1 left where its plan "
                   "keeps them") != NULL && umadv_plan(ctx) == UMADV_OK,
       "logged at info; planned on the second pass's trace");
    ok(unseen_at(&ctx->trace, "a", 1), "the trace planned on keeps a unseen at the opaque launch");
out:
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_free(ctx, c);
    umadv_context_destroy(ctx);
    setenv("UMADV_PROFILE_PASSES", "1", 1);
}

/* UMADV_PROFILE_PASSES=2 unguided (UMADV_PROFILE_GUIDED=0): where the plan evicts
 * on the first pass's trace, the second evicts every live block on the
 * GPU before the opaque launch, as one pass does, so that nothing is kept
 * unseen;
 * the first pass's durations are the trace's. */
static void test_two_passes_unguided(void)
{
    umadv_cuda_host_counters_t counters;
    umadv_stats_t stats = {.size = sizeof(stats)};
    void *a = NULL, *b = NULL;
    const umadv_trace_t *t;
    umadv_context_t ctx;

    setenv("UMADV_PROFILE_PASSES", "2", 1);
    setenv("UMADV_PROFILE_GUIDED", "0", 1);
    ctx = a_b_recording("128K", &a, &b); /* a and b together do not fit */
    four_steps(110, &a, &b, "opaque_kernel", 0);
    umadv_iteration_begin(ctx);
    umadv__cuda_host_reset();
    four_steps(120, &a, &b, "opaque_kernel", 100000000);
    umadv__cuda_host_counters(&counters);
    ok(ctx->scout_ready && counters.prefetch_bytes_to_host == SECTION &&
           ctx->profile_kept == 0 && ctx->nleft_out == 1,
       "unguided, the second pass evicts every live block on the gpu before the opaque "
       "launch (a, fetched back: %llu bytes), keeps none; b, on the host since the pass "
       "began, left out", (unsigned long long)counters.prefetch_bytes_to_host);
    umadv_iteration_begin(ctx);
    t = &ctx->trace;
    umadv_get_stats(ctx, &stats);
    ok(!ctx->scout_ready && t->nunseen == 0 && t->guessed_steps == 0 &&
           t->steps[0].duration_ns == 10000000 && ctx->tpass.state == UMADV_CTX_TPASS_IDLE &&
           stats.profiles == 1 && strstr(t->source, "step durations from two passes") != NULL,
       "nothing unseen, nothing guessed, the passes' durations: no timing pass");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
    unsetenv("UMADV_PROFILE_GUIDED");
    setenv("UMADV_PROFILE_PASSES", "1", 1);
}

/* record.c, THE TAIL, after two passes: no timing pass runs, so the
 * replay, which follows every launch, watches the frees between the
 * recording's end and the next iteration's first step; a block born in
 * the second pass and freed there dies with the window, and the plan is
 * rebuilt at the next boundary. */
/* Whether the context's schedule is the plan of its trace now, built
 * here: the same operations, in the same order. */
static int schedule_is_plan_of(const umadv_context_t ctx)
{
    umadv_plan_params_t params;
    umadv_schedule_t s;
    int same;

    umadv__ctx_plan_params(ctx, &params);
    if (umadv__plan_build(&ctx->trace, &params, &s) != UMADV_OK)
        return 0;
    same = s.nops == ctx->schedule.nops && s.nsetup == ctx->schedule.nsetup &&
           s.victims == ctx->schedule.victims &&
           (s.nops == 0 || memcmp(s.ops, ctx->schedule.ops, s.nops * sizeof(*s.ops)) == 0);
    umadv__schedule_cleanup(&s);
    return same;
}

static void test_two_passes_tail(void)
{
    umadv_cuda_host_counters_t counters;
    void *a = NULL, *b = NULL, *g = NULL;
    uint32_t g_free_step = UMADV_STEP_NONE;
    const umadv_trace_t *t;
    umadv_context_t ctx;
    char *log;

    setenv("UMADV_PROFILE_PASSES", "2", 1);
    ctx = a_b_recording("128K", &a, &b); /* a and b together do not fit */
    four_steps(150, &a, &b, "opaque_kernel", 0);
    umadv_plan(ctx); /* asked for after the first pass: planned on the second */
    umadv_iteration_begin(ctx);
    umadv_malloc(ctx, SECTION, "g", &g); /* born in the second pass */
    four_steps(160, &a, &b, "opaque_kernel", 100000000);
    umadv_iteration_begin(ctx);
    t = &ctx->trace;
    ok(ctx->life.state == UMADV_CYCLE_REPLAYING && ctx->tpass.state == UMADV_CTX_TPASS_IDLE &&
           umadv__replay_follows(ctx),
       "replayed after the second pass, no timing pass, the launches followed (state %d, "
       "timing %d, follows %d)", ctx->life.state, ctx->tpass.state, umadv__replay_follows(ctx));
    log_take();
    umadv__cuda_host_reset();
    umadv_free(ctx, g); /* before the replayed iteration's first launch */
    umadv__cuda_host_counters(&counters);
    ok(ctx->replay.start_held && counters.prefetches_to_device + counters.prefetches_to_host +
                                         counters.memcpys + counters.discards ==
                                     0,
       "the replay's start held in the tail: nothing moved before its first launch (replay.c, "
       "THE START)");
    four_steps(170, &a, &b, "opaque_kernel", 200000000);
    umadv__cuda_host_counters(&counters);
    ok(!ctx->replay.start_held && counters.prefetches_to_device > 0,
       "the first launch starts it (%llu fetches)",
       (unsigned long long)counters.prefetches_to_device);
    log = log_take();
    ok(ctx->record_tail_frees == 1 && ctx->life.want_plan &&
           strstr(log, "1 of its blocks freed before the next iteration's first step") != NULL,
       "the free before the replay's first launch ends g with the window, logged, and asks "
       "for a plan (%u frees)", ctx->record_tail_frees);
    for (uint32_t i = 0; i < t->nallocs; i++) {
        if (t->allocs[i].tag != NULL && strcmp(t->allocs[i].tag, "g") == 0)
            g_free_step = t->allocs[i].free_step;
    }
    ok(g_free_step == t->nsteps - 1, "g dies at the window's last step");
    ok(ctx->ahead.running || ctx->ahead.joined,
       "the plan the next boundary builds again is under way on its own thread (api/ahead.c)");
    log_take();
    umadv__log_level = UMADV_LOG_DEBUG;
    umadv_iteration_begin(ctx);
    umadv__log_level = UMADV_LOG_INFO;
    log = log_take();
    ok(strstr(log, "plan ahead: taken") != NULL && !ctx->ahead.running && !ctx->ahead.joined &&
           !ctx->life.want_plan && ctx->have_schedule,
       "the boundary takes it, the trace and the parameters the same");
    ok(schedule_is_plan_of(ctx), "it is the plan the boundary would have built");
    umadv_free(ctx, a);
    umadv_free(ctx, b);
    umadv_context_destroy(ctx);
    setenv("UMADV_PROFILE_PASSES", "1", 1);
}

/* api/ahead.c, PLANNING AHEAD: a plan made ahead for other inputs (the
 * budget changed after the tail closed) is dropped, and the boundary
 * plans; a context destroyed while one is made waits for it. */
static void test_plan_ahead_stale(void)
{
    void *a = NULL, *b = NULL, *g = NULL;
    umadv_context_t ctx;
    char *log;

    setenv("UMADV_PROFILE_PASSES", "2", 1);
    for (int destroy = 0; destroy < 2; destroy++) {
        ctx = a_b_recording("128K", &a, &b);
        four_steps(150, &a, &b, "opaque_kernel", 0);
        umadv_plan(ctx);
        umadv_iteration_begin(ctx);
        umadv_malloc(ctx, SECTION, "g", &g);
        four_steps(160, &a, &b, "opaque_kernel", 100000000);
        umadv_iteration_begin(ctx);
        umadv_free(ctx, g); /* in the tail */
        four_steps(170, &a, &b, "opaque_kernel", 200000000); /* ...closed: planned ahead */
        if (destroy) {
            umadv_free(ctx, a);
            umadv_free(ctx, b);
            umadv_context_destroy(ctx); /* waits for the thread (ASan: nothing leaks) */
            break;
        }
        umadv_set_budget(ctx, 160 * 1024);
        log_take();
        umadv__log_level = UMADV_LOG_DEBUG;
        umadv_iteration_begin(ctx);
        umadv__log_level = UMADV_LOG_INFO;
        log = log_take();
        ok(strstr(log, "plan ahead: the trace or the planner's parameters changed since") !=
                   NULL &&
               strstr(log, "plan ahead: taken") == NULL && !ctx->ahead.joined &&
               ctx->schedule.budget == 160 * 1024 && schedule_is_plan_of(ctx),
           "the budget changed after the tail: the plan made ahead dropped, the boundary "
           "plans under the new one");
        umadv_free(ctx, a);
        umadv_free(ctx, b);
        umadv_context_destroy(ctx);
    }
    setenv("UMADV_PROFILE_PASSES", "1", 1);
}

/* The access of step @step to the allocation tagged @tag in the trace
 * being recorded: its first section, or -1. */
static long step_access_first(const umadv_trace_t *t, uint32_t step, const char *tag)
{
    const umadv_trace_step_t *s = &t->steps[step];

    for (uint32_t i = s->first_access; i < s->first_access + s->naccesses; i++) {
        const umadv_trace_access_t *acc = &t->accesses[i];

        if (t->allocs[acc->alloc].tag != NULL && strcmp(t->allocs[acc->alloc].tag, tag) == 0)
            return (long)acc->first;
    }
    return -1;
}

/* pcopies.c, COPIES: a copy between two launches of a recording is an
 * access of the second's step, after its scan; none is noted outside a
 * recording. */
static void test_copies_recorded(void)
{
    void *a = NULL, *b = NULL, *args[1];
    unsigned char host[64];
    umadv_context_t ctx;
    cudaMemcpyAsync_v3020_params cp = {.count = SECTION / 2, .kind = cudaMemcpyDeviceToDevice};
    cudaMemcpyAsync_v3020_params h2d = {.src = host, .count = sizeof(host),
                                        .kind = cudaMemcpyHostToDevice};

    ctx = a_b_recording(NULL, &a, &b);
    args[0] = &a;
    driver_launch("known_a", 50, args);
    cp.dst = a;
    cp.src = (unsigned char *)b + SECTION; /* b's second section */
    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
              CUPTI_API_ENTER, &cp, NULL, 0);
    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
              CUPTI_API_EXIT, &cp, NULL, 0);
    driver_launch("known_a2", 51, args);
    ok(ctx->trace.nsteps == 2 && step_access_first(&ctx->trace, 0, "b") == -1 &&
           step_access_first(&ctx->trace, 1, "b") == 1 &&
           step_access_first(&ctx->trace, 1, "a") == 0,
       "a copy between two launches: the second's step reads and writes both its ranges "
       "(b from section 1), the first's does not");
    queue_kernel(50, 0, 1000);
    queue_kernel(51, 1000, 2000);
    umadv_iteration_begin(ctx); /* the recording ends */
    h2d.dst = a;
    mock_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
              CUPTI_API_ENTER, &h2d, NULL, 0);
    ok(ctx->ncopies == 0, "outside a recording, no copy is noted");
    umadv_context_destroy(ctx);
}

/* ---- narrowed evictions, at random ------------------------------------ */

/*
 * The safety the narrowed evictions must keep (api/profile.c, EVICTING
 * WHAT MAY BE ON THE GPU): at every launch without a layout, each block
 * it touches either is on the host then, so that the touch faults and
 * the fault is the step's access, or is the step's access already, or
 * is unseen at that step. A model of where each section of memory lies
 * follows the profile's prefetches (the spy) and the touches the test
 * makes: a touch of a block on the host queues a demand migration and
 * brings it over; a copy may bring one over unseen; memory never moved
 * is on the GPU, and a block made during the pass lies where its room
 * does. The same model says whether each launch whose parameters were
 * scanned finds its block on the GPU (fetched back, or there): one that
 * does not would fault it in (a fetch missed).
 */
#define NARROW_BLOCKS   6
#define NARROW_LAUNCHES 10
#define NARROW_CASES    400
#define NARROW_ROOMS    4096 /* pages the model follows */
#define NARROW_PAGE     4096

typedef struct narrow_model {
    void     *ptr[NARROW_BLOCKS + 1]; /* NULL: a slot freed, to be made again */
    uint64_t  size[NARROW_BLOCKS + 1];
    char      tag[NARROW_BLOCKS + 1][8];
    size_t    n;
    unsigned  made;                   /* blocks made: each its own tag */
    uintptr_t room[NARROW_ROOMS];     /* pages moved or touched */
    int       room_on_gpu[NARROW_ROOMS];
    size_t    nrooms;
    int       overflow;               /* more pages than the model holds */
    size_t    fetch_misses;           /* scanned launches whose block was not there */
} narrow_model_t;

static narrow_model_t narrow;

/* The model's entry for the page at @s, made if new. */
static int *narrow_room(uintptr_t s)
{
    for (size_t i = 0; i < narrow.nrooms; i++) {
        if (narrow.room[i] == s)
            return &narrow.room_on_gpu[i];
    }
    if (narrow.nrooms == NARROW_ROOMS) {
        narrow.overflow = 1;
        return NULL;
    }
    narrow.room[narrow.nrooms] = s;
    narrow.room_on_gpu[narrow.nrooms] = 1;
    return &narrow.room_on_gpu[narrow.nrooms++];
}

/* [@ptr, +@size) to the GPU (@on_gpu: the pages it covers whole; one
 * the model never saw is there already) or the host (every page it
 * touches). */
static void narrow_place_range(const void *ptr, uint64_t size, int on_gpu)
{
    uintptr_t lo = (uintptr_t)ptr, hi = lo + size;
    int *where;

    if (on_gpu) {
        for (size_t i = 0; i < narrow.nrooms; i++) {
            if (narrow.room[i] >= lo && narrow.room[i] + NARROW_PAGE <= hi)
                narrow.room_on_gpu[i] = 1;
        }
        return;
    }
    for (uintptr_t s = lo / NARROW_PAGE * NARROW_PAGE; s < hi; s += NARROW_PAGE) {
        if ((where = narrow_room(s)) != NULL)
            *where = 0;
    }
}

static int narrow_on_gpu(size_t b)
{
    uintptr_t lo = (uintptr_t)narrow.ptr[b], hi = lo + narrow.size[b];

    for (size_t i = 0; i < narrow.nrooms; i++) {
        if (narrow.room[i] < hi && narrow.room[i] + NARROW_PAGE > lo && !narrow.room_on_gpu[i])
            return 0;
    }
    return 1;
}

static void narrow_place(void *ptr, size_t size, int location)
{
    narrow_place_range(ptr, size, location >= 0);
}

static umadv_status_t narrow_prefetch(void *ptr, size_t size, int location, umadv_stream_t stream)
{
    narrow_place(ptr, size, location);
    return spy_real->prefetch(ptr, size, location, stream);
}

static umadv_status_t narrow_prefetch_batch(void **ptrs, size_t *sizes, size_t count,
                                            int location, umadv_stream_t stream)
{
    for (size_t i = 0; i < count; i++)
        narrow_place(ptrs[i], sizes[i], location);
    return spy_real->prefetch_batch(ptrs, sizes, count, location, stream);
}

/* A block of one or two sections made in slot @b (a few pages short of
 * them one time in three: its span then ends past its size), lying where
 * its room does. */
static void narrow_make(umadv_context_t ctx, size_t b)
{
    narrow.size[b] = (uint64_t)(1 + rand() % 2) * SECTION;
    if (rand() % 3 == 0)
        narrow.size[b] -= NARROW_PAGE * (uint64_t)(1 + rand() % 8);
    snprintf(narrow.tag[b], sizeof(narrow.tag[b]), "n%u", narrow.made++);
    umadv_malloc(ctx, narrow.size[b], narrow.tag[b], &narrow.ptr[b]);
}

static void narrow_block(umadv_context_t ctx)
{
    narrow_make(ctx, narrow.n++);
}

/* Slot @b's block freed: its room stays where it lies. */
static void narrow_drop(umadv_context_t ctx, size_t b)
{
    umadv_free(ctx, narrow.ptr[b]);
    narrow.ptr[b] = NULL;
}

/* Before a launch: the slot freed before the last one made again (in the
 * room it left, or elsewhere), then slot @freed (-1: none) freed until
 * the next. Returns the slot now free, or -1. */
static int narrow_churn(umadv_context_t ctx, int remake, int freed)
{
    if (remake >= 0)
        narrow_make(ctx, (size_t)remake);
    if (freed < 0 || narrow.ptr[freed] == NULL)
        return -1;
    narrow_drop(ctx, (size_t)freed);
    return freed;
}

static void narrow_free_all(umadv_context_t ctx)
{
    for (size_t b = 0; b < narrow.n; b++) {
        if (narrow.ptr[b] != NULL)
            narrow_drop(ctx, b);
    }
}

/* A fresh context on the mock (@budget as UMADV_BUDGET, or none) whose
 * prefetches the model follows, with @nblocks blocks on the GPU. */
static umadv_context_t narrow_context(const char *budget, size_t nblocks)
{
    umadv_context_t ctx = budget_context(budget);

    spy_install(ctx);
    spy_ops.prefetch = narrow_prefetch;
    spy_ops.prefetch_batch = spy_real->prefetch_batch != NULL ? narrow_prefetch_batch : NULL;
    memset(&narrow, 0, sizeof(narrow));
    while (narrow.n < nblocks)
        narrow_block(ctx);
    return ctx;
}

/* The trace's id of the block tagged @tag. */
static uint32_t narrow_id(const umadv_trace_t *t, const char *tag)
{
    for (uint32_t i = 0; i < t->nallocs; i++) {
        if (t->allocs[i].tag != NULL && strcmp(t->allocs[i].tag, tag) == 0)
            return i;
    }
    return UINT32_MAX;
}

typedef struct narrow_touch {
    uint32_t step;
    char     tag[8]; /* the block's */
} narrow_touch_t;

/* One time in five, a copy into a random block: it may bring the block
 * onto the GPU unseen. */
static void narrow_copy_at_random(umadv_context_t ctx)
{
    if (rand() % 5 == 0) {
        size_t b = (size_t)rand() % narrow.n;

        if (narrow.ptr[b] == NULL)
            return;
        umadv__ctx_copies_note(ctx, narrow.ptr[b], narrow.size[b]);
        narrow_place_range(narrow.ptr[b], narrow.size[b], 1);
    }
}

/* The launch without a layout at step @step touching random blocks: a
 * block on the host comes over by a demand migration at @when. Into
 * @touches; returns how many. */
static size_t narrow_touch_at_random(uint32_t step, uint64_t when, narrow_touch_t *touches)
{
    size_t n = 0;

    for (size_t b = 0; b < narrow.n; b++) {
        if (rand() % 3 != 0 || narrow.ptr[b] == NULL)
            continue;
        if (!narrow_on_gpu(b))
            queue_migration(narrow.ptr[b], when, narrow.size[b],
                            CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE);
        narrow_place_range(narrow.ptr[b], narrow.size[b], 1);
        touches[n] = (narrow_touch_t){.step = step};
        memcpy(touches[n++].tag, narrow.tag[b], sizeof(touches[0].tag));
    }
    return n;
}

/* A launch whose parameters name slot @b's block (the next slot's where
 * @b was freed): a fetch missed where the block is not on the GPU then;
 * its kernel brings it over. */
static void narrow_scanned_launch(size_t b, uint32_t corr)
{
    void *args[1];

    if (narrow.ptr[b] == NULL)
        b = (b + 1) % narrow.n;
    args[0] = &narrow.ptr[b];
    driver_launch("known", corr, args);
    narrow.fetch_misses += !narrow_on_gpu(b);
    narrow_place_range(narrow.ptr[b], narrow.size[b], 1);
}

/* One random pass: launches scanned or without a layout, the latter
 * touching blocks at random; copies and a new block now and then. Into
 * @touches (the unlaid launches' touches); returns how many. */
static size_t narrow_pass(umadv_context_t ctx, narrow_touch_t *touches)
{
    size_t ntouches = 0, nlaunches = 3 + (size_t)(rand() % (NARROW_LAUNCHES - 2));
    void *opaque[1] = {opaque_struct};
    int remake = -1;

    for (size_t i = 0; i < nlaunches; i++) {
        uint32_t corr = 100 + (uint32_t)i;
        uint64_t at = 1000 * (uint64_t)(i + 1);

        remake = narrow_churn(ctx, remake, rand() % 4 == 0 ? rand() % (int)narrow.n : -1);
        if (narrow.n < NARROW_BLOCKS + 1 && rand() % 8 == 0)
            narrow_block(ctx);
        narrow_copy_at_random(ctx);
        queue_kernel(corr, at, at + 500);
        if (rand() % 2 == 0) {
            narrow_scanned_launch((size_t)rand() % narrow.n, corr);
            continue;
        }
        driver_launch_of((const void *)0xdead, "opaque_kernel", corr, opaque);
        ntouches += narrow_touch_at_random((uint32_t)i, at + 250, touches + ntouches);
    }
    (void)narrow_churn(ctx, remake, -1);
    return ntouches;
}

/* Whether each touch is its step's access or unseen there. */
static size_t narrow_misses(const umadv_trace_t *t, const narrow_touch_t *touches, size_t n)
{
    size_t misses = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t id = narrow_id(t, touches[i].tag);

        if (id == UINT32_MAX || touches[i].step >= t->nsteps ||
            (access_of(t, touches[i].step, id) == NULL &&
             !unseen_at(t, touches[i].tag, touches[i].step)))
            misses++;
    }
    return misses;
}

static void test_narrowed_evictions_at_random(void)
{
    narrow_touch_t touches[NARROW_LAUNCHES * (NARROW_BLOCKS + 1)];
    size_t misses = 0, left_out = 0, unseen = 0, fetch_misses = 0, overflows = 0, nblocks;
    umadv_context_t ctx;

    srand(20261129);
    for (int c = 0; c < NARROW_CASES; c++) {
        size_t n;

        nblocks = 2 + (size_t)(rand() % (NARROW_BLOCKS - 1));
        ctx = narrow_context(NULL, nblocks);
        umadv_profile_next_iteration(ctx);
        umadv_iteration_begin(ctx); /* one pass: every block to the host first */
        n = narrow_pass(ctx, touches);
        left_out += ctx->nleft_out;
        umadv_iteration_begin(ctx);
        unseen += ctx->trace.nunseen;
        misses += narrow_misses(&ctx->trace, touches, n);
        fetch_misses += narrow.fetch_misses;
        overflows += narrow.overflow;
        narrow_free_all(ctx);
        umadv_context_destroy(ctx);
    }
    ok(misses == 0 && left_out > 0 && unseen > 0,
       "%d random passes: every touch of a launch without a layout is its step's access "
       "(faulted or kept) or unseen there (%zu misses; %zu blocks left out, %zu unseen marks)",
       NARROW_CASES, misses, left_out, unseen);
    ok(fetch_misses == 0 && overflows == 0,
       "and every launch whose parameters were scanned finds its block on the GPU (%zu "
       "fetches missed; %zu cases past the model)", fetch_misses, overflows);
}

/*
 * The same safety in a guided second pass (api/profile.c, TWO PASSES):
 * before each launch without a layout the pass keeps some blocks as the
 * launch's, leaves those the first pass's plan keeps on the GPU where
 * they lie, unseen there, and evicts the rest. Whatever such a launch
 * touches, each touch is then its step's access (kept, or faulted back
 * from the host) or unseen at its step. Random scripts of launches run
 * twice (the same steps), the launches without a layout touching random
 * blocks in each pass, under a budget that makes the first pass's plan
 * evict; now and then a block made before a launch (in each pass: the
 * second's is another allocation), a block freed before one and made
 * again before the next (in the room it left, or elsewhere), or a copy
 * into one (at random in each pass). And each launch whose parameters
 * were scanned finds its block on the GPU: the fetches the pass spares
 * (blocks whose sections it knows there) are none it needed: with an
 * eviction's marks cleared over its blocks only (not the free room its
 * calls move), 12 fetches missed in 1,000 scripts; with the sections of
 * a fetched block's span marked past its size, 1 (and 4 and 5 in the
 * one-pass test above).
 */
#define TWO_PASS_CASES 1000

typedef struct two_pass_script {
    size_t   n;
    int      unlaid[NARROW_LAUNCHES];
    int      born[NARROW_LAUNCHES];   /* a block made before it */
    int      freed[NARROW_LAUNCHES];  /* a slot freed before it, made again
                                       * before the next (-1: none) */
    size_t   block[NARROW_LAUNCHES];  /* a scanned launch's */
    uint64_t took[NARROW_LAUNCHES];   /* ns */
} two_pass_script_t;

static void two_pass_script(two_pass_script_t *sc)
{
    sc->n = 4 + (size_t)(rand() % (NARROW_LAUNCHES - 3));
    for (size_t i = 0; i < sc->n; i++) {
        sc->unlaid[i] = rand() % 2;
        sc->born[i] = rand() % 8 == 0;
        sc->freed[i] = rand() % 4 == 0 ? rand() % (int)narrow.n : -1;
        sc->block[i] = (size_t)rand() % narrow.n;
        sc->took[i] = 1000 * (1 + (uint64_t)(rand() % 10000)); /* 1 us to 10 ms */
    }
}

/* One pass of @sc from correlation id @corr at @at; the unlaid launches'
 * touches into @touches; returns how many. */
static size_t two_pass_run(umadv_context_t ctx, const two_pass_script_t *sc, uint32_t corr,
                           uint64_t at, narrow_touch_t *touches)
{
    void *opaque[1] = {opaque_struct};
    size_t ntouches = 0;
    int remake = -1;

    for (size_t i = 0; i < sc->n; i++, corr++) {
        remake = narrow_churn(ctx, remake, sc->freed[i]);
        if (sc->born[i] && narrow.n < NARROW_BLOCKS + 1)
            narrow_block(ctx);
        narrow_copy_at_random(ctx);
        queue_kernel(corr, at, at + sc->took[i]);
        if (!sc->unlaid[i]) {
            narrow_scanned_launch(sc->block[i], corr);
        } else {
            driver_launch_of((const void *)0xdead, "opaque_kernel", corr, opaque);
            ntouches += narrow_touch_at_random((uint32_t)i, at + 1, touches + ntouches);
        }
        at += sc->took[i];
    }
    (void)narrow_churn(ctx, remake, -1);
    return ntouches;
}

static void test_two_passes_at_random(void)
{
    narrow_touch_t touches[NARROW_LAUNCHES * (NARROW_BLOCKS + 1)];
    size_t misses = 0, guided = 0, fetch_misses = 0, overflows = 0, nblocks;
    uint64_t stayed = 0, evictions = 0;
    two_pass_script_t sc;
    umadv_context_t ctx;

    setenv("UMADV_PROFILE_PASSES", "2", 1);
    srand(20261130);
    for (int c = 0; c < TWO_PASS_CASES; c++) {
        size_t n;

        nblocks = 3 + (size_t)(rand() % (NARROW_BLOCKS - 2));
        ctx = narrow_context("192K", nblocks); /* three sections */
        two_pass_script(&sc);
        umadv_profile_next_iteration(ctx);
        umadv_iteration_begin(ctx);
        (void)two_pass_run(ctx, &sc, 100, 0, touches); /* the first pass moves nothing */
        umadv_iteration_begin(ctx);
        if (ctx->scout_ready && ctx->scout_off.from.off != NULL) {
            guided++;
            narrow.fetch_misses = 0;
            n = two_pass_run(ctx, &sc, 200, 100000000, touches);
            fetch_misses += narrow.fetch_misses;
            stayed += ctx->profile_stayed;
            evictions += ctx->profile_evictions;
            umadv_iteration_begin(ctx); /* the second pass ends */
            misses += narrow_misses(&ctx->trace, touches, n);
        }
        overflows += narrow.overflow;
        narrow_free_all(ctx);
        umadv_context_destroy(ctx);
    }
    setenv("UMADV_PROFILE_PASSES", "1", 1);
    ok(misses == 0 && guided > 0 && stayed > 0 && evictions > 0,
       "%zu of %d random scripts profiled in two passes: every touch of a launch without a "
       "layout in the second is its step's access or unseen there (%zu misses; %llu blocks "
       "left where the first pass's plan keeps them, %llu evictions)",
       guided, TWO_PASS_CASES, misses, (unsigned long long)stayed,
       (unsigned long long)evictions);
    ok(fetch_misses == 0 && overflows == 0,
       "and in the second every launch whose parameters were scanned finds its block on the "
       "GPU, blocks freed and made again in their room included (%zu fetches missed; %zu "
       "cases past the model)", fetch_misses, overflows);
}

int main(void)
{
    log_capture_start();
    env_clear();
    setenv("UMADV_LOG", "info", 1);
    /* one pass, the tests written for it; test_two_passes sets two */
    setenv("UMADV_PROFILE_PASSES", "1", 1);
    plan(101 + 3 + 12 + 15 + 3 + 2 + 5 + 3 + 1 + 1 + 4 + 6 + 1 + 3 + 2 + 2 + 1 + 1 + 5 + 2 + 1);
    umadv__cupti_ops_install(&mock_ops);
    test_unavailable();
    test_second_context();
    test_only_when_needed();
    test_follow_nothing_to_move();
    test_oracle_untimed();
    test_timing_pass();
    test_no_layout();
    test_kept_whole_span();
    test_fetch_spared();
    test_fetch_after_run_moved();
    test_narrowed_evictions_at_random();
    test_guessed_then_plan();
    test_complete_declarations();
    test_declared_fetched_once();
    test_unseen_without_evictions();
    test_restore_under_budget();
    test_recording();
    test_declared_parts();
    test_follow();
    test_follow_gaps();
    test_follow_hidden_reader();
    test_capture();
    test_follow_timing();
    test_profile_gpu_time();
    test_timed_after_wait();
    test_two_passes();
    test_second_pass_by_birth();
    test_two_passes_plan_keeps();
    test_two_passes_unguided();
    test_two_passes_tail();
    test_plan_ahead_stale();
    test_two_passes_at_random();
    test_copies_recorded();
    umadv__cupti_ops_install(NULL);
    log_capture_stop();
    return exit_status();
}
