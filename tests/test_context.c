/*
 * The public context API on the host backend: parameters against the
 * environment, state errors, allocations, and a profiled iteration whose
 * trace must say exactly which buffers lived when and which steps touched
 * which sections.
 */
#include <umadv.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/context.h"
#include "common/log.h"
#include "common/util.h"
#include "trace/trace_io.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)

static umadv_context_params_t host_params(void)
{
    umadv_context_params_t p = {
        .field_mask   = UMADV_CONTEXT_FIELD_FLAGS | UMADV_CONTEXT_FIELD_SECTION_SIZE,
        .flags        = UMADV_CONTEXT_FLAG_HOST_ONLY,
        .section_size = SECTION,
    };
    return p;
}

static umadv_status_t no_device_count(int *count_p)
{
    return UMADV_ERR_NO_DEVICE;
}

static void test_create(void)
{
    static umadv_cuda_ops_t gpuless;
    umadv_context_params_t p = host_params();
    umadv_context_t ctx = NULL;

    gpuless = umadv__cuda_ops_host;
    gpuless.device_count = no_device_count;
    umadv__cuda_ops_install(&gpuless);
    log_take();
    is(umadv_context_create(NULL, &ctx), UMADV_ERR_NO_DEVICE, "no gpu, not host-only: NO_DEVICE");
    ok(strstr(log_take(), "no usable cuda device (set UMADV_CONTEXT_FLAG_HOST_ONLY") != NULL,
       "and the log says what to do");
    is(umadv_context_create(&p, &ctx), UMADV_OK, "host-only needs no gpu");
    umadv_context_destroy(ctx);
    umadv__cuda_ops_install(NULL);

    setenv("UMADV_BUDGET", "3G", 1);
    setenv("UMADV_POLICY", "demand", 1);
    umadv_context_create(&p, &ctx);
    ok(ctx->config.budget == 3 * UMADV_GIB && ctx->config.policy == UMADV_POLICY_DEMAND,
       "fields not in the mask come from the environment");
    ok(ctx->config.section_size == SECTION && ctx->ops == &umadv__cuda_ops_host,
       "fields in the mask are taken");
    umadv_context_destroy(ctx);
    p.field_mask |= UMADV_CONTEXT_FIELD_BUDGET | UMADV_CONTEXT_FIELD_POLICY;
    p.budget = UMADV_GIB;
    p.policy = UMADV_POLICY_PLAN;
    umadv_context_create(&p, &ctx);
    ok(ctx->config.budget == UMADV_GIB && ctx->config.policy == UMADV_POLICY_PLAN,
       "set fields override the environment");
    umadv_context_destroy(ctx);
    env_clear();

    setenv("UMADV_SECTION_SIZE", "3M", 1);
    log_take();
    ctx = NULL;
    is(umadv_context_create(&p, &ctx), UMADV_ERR_INVALID_PARAM, "a bad environment value fails");
    ok(ctx == NULL && strstr(log_take(), "UMADV_SECTION_SIZE=3M") != NULL,
       "naming the variable, leaving the output alone");
    env_clear();

    p = host_params();
    p.section_size = 3 * UMADV_MIB;
    is(umadv_context_create(&p, &ctx), UMADV_ERR_INVALID_PARAM, "bad params.section_size");
    ok(strstr(log_take(), "params.section_size") != NULL, "named in the log");
    p = host_params();
    p.field_mask |= UINT64_C(1) << 40;
    is(umadv_context_create(&p, &ctx), UMADV_ERR_INVALID_PARAM, "unknown field_mask bit refused");
    p = host_params();
    p.field_mask |= UMADV_CONTEXT_FIELD_POLICY;
    p.policy = UMADV_POLICY_COUNT;
    is(umadv_context_create(&p, &ctx), UMADV_ERR_INVALID_PARAM, "bad policy refused");
    p = host_params();
    p.field_mask |= UMADV_CONTEXT_FIELD_DEVICE;
    p.device = 1;
    is(umadv_context_create(&p, &ctx), UMADV_ERR_NO_DEVICE, "device 1 of 1 is not there");
    ok(strstr(log_take(), "only 1 cuda device(s)") != NULL, "the log counts the devices");
    is(umadv_context_create(&p, NULL), UMADV_ERR_INVALID_PARAM, "NULL output refused");
    umadv_context_destroy(NULL);
    ok(1, "destroy(NULL) is a no-op");
}

static void test_state_errors(void)
{
    umadv_context_params_t p = host_params();
    umadv_context_t ctx;
    char buf[64];
    void *x;

    umadv_context_create(&p, &ctx);
    umadv_malloc(ctx, 1000, "x", &x);
    is(umadv_step_begin(ctx, "s", NULL), UMADV_ERR_STATE, "step before any iteration");
    is(umadv_step_end(ctx, 0), UMADV_ERR_STATE, "step end without begin");
    is(umadv_step_access(ctx, x, 10, UMADV_ACCESS_READ), UMADV_ERR_STATE, "access outside a step");
    is(umadv_plan(ctx), UMADV_ERR_STATE, "plan with nothing profiled");
    is(umadv_trace_save(ctx, "/nonexistent/t"), UMADV_ERR_STATE, "save with nothing profiled");
    umadv_iteration_begin(ctx);
    is(umadv_step_begin(ctx, "s", NULL), UMADV_OK, "step");
    is(umadv_step_begin(ctx, "t", NULL), UMADV_ERR_STATE, "a second open step");
    is(umadv_iteration_begin(ctx), UMADV_ERR_STATE, "iteration begin inside a step");
    is(umadv_step_access(ctx, x, 0, UMADV_ACCESS_READ), UMADV_ERR_INVALID_PARAM, "empty access");
    is(umadv_step_access(ctx, x, 10, (umadv_access_mode_t)4), UMADV_ERR_INVALID_PARAM,
       "bad access mode");
    is(umadv_step_access(ctx, x, 1001, UMADV_ACCESS_READ), UMADV_ERR_NOT_FOUND,
       "access past the allocation");
    is(umadv_step_access(ctx, buf, 10, UMADV_ACCESS_READ), UMADV_ERR_NOT_FOUND,
       "access to foreign memory");
    is(umadv_step_access(ctx, (char *)x + 990, 10, UMADV_ACCESS_RW), UMADV_OK,
       "access to the allocation's tail");
    is(umadv_step_end(ctx, 0), UMADV_OK, "step end");

    is(umadv_malloc(ctx, 0, NULL, &x), UMADV_ERR_INVALID_PARAM, "malloc of 0 refused");
    is(umadv_free(ctx, NULL), UMADV_OK, "free(NULL) is a no-op");
    is(umadv_free(ctx, buf), UMADV_ERR_NOT_FOUND, "free of foreign memory");
    is(umadv_free(ctx, (char *)x + 256), UMADV_ERR_NOT_FOUND, "free of an interior pointer");
    is(umadv_free(ctx, x), UMADV_OK, "free");
    is(umadv_free(ctx, x), UMADV_ERR_NOT_FOUND, "double free");
    umadv_context_destroy(ctx);
    log_take();
}

static void test_limit(void)
{
    umadv_context_params_t p = host_params();
    umadv_context_t ctx;
    void *a, *b;

    setenv("UMADV_ARENA_SIZE", "2M", 1);
    p.field_mask |= UMADV_CONTEXT_FIELD_MAX_MANAGED;
    p.max_managed = 4 * UMADV_MIB;
    umadv_context_create(&p, &ctx);
    is(umadv_malloc(ctx, 3 * UMADV_MIB, "a", &a), UMADV_OK, "3M under a 4M limit");
    is(umadv_malloc(ctx, 2 * UMADV_MIB, "b", &b), UMADV_ERR_LIMIT, "2M more is refused");
    ok(strstr(log_take(), "UMADV_MAX_MANAGED=4.00 MiB") != NULL, "and the limit is logged");
    umadv_context_destroy(ctx);
    env_clear();
}

static uint32_t alloc_by_tag(const umadv_trace_t *t, const char *tag)
{
    for (uint32_t i = 0; i < t->nallocs; i++) {
        if (t->allocs[i].tag != NULL && strcmp(t->allocs[i].tag, tag) == 0)
            return i;
    }
    return UINT32_MAX;
}

/* Does step @s touch sections [first, first+count) of @alloc with @mode? */
static int has_access(const umadv_trace_t *t, uint32_t s, uint32_t alloc, uint32_t first,
                      uint32_t count, uint32_t mode)
{
    const umadv_trace_step_t *step = &t->steps[s];

    for (uint32_t i = 0; i < step->naccesses; i++) {
        const umadv_trace_access_t *a = &t->accesses[step->first_access + i];
        if (a->alloc == alloc && a->first == first && a->count == count && a->mode == mode)
            return 1;
    }
    return 0;
}

static int lifetime_is(const umadv_trace_t *t, uint32_t alloc, uint32_t from, uint32_t to)
{
    return alloc < t->nallocs && t->allocs[alloc].alloc_step == from &&
           t->allocs[alloc].free_step == to;
}

/* One profiled iteration, by the rules of api/context.h. */
static void run_profiled_iteration(umadv_context_t ctx, void **w_p, void **x_p)
{
    void *w, *x, *a, *b, *c, *d, *e, *f;

    umadv_malloc(ctx, 200 * UMADV_KIB, "w", &w);
    umadv_malloc(ctx, 100 * UMADV_KIB, "x", &x);
    umadv_malloc(ctx, 5000, "a", &a);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv_free(ctx, a);                      /* dies before the first step */
    umadv_malloc(ctx, 70 * UMADV_KIB, "b", &b);

    umadv_step_begin(ctx, "fwd1", (void *)0x5a); /* step 0 */
    umadv_step_access(ctx, w, 200 * UMADV_KIB, UMADV_ACCESS_READ);
    umadv_step_access(ctx, b, 1000, UMADV_ACCESS_WRITE);
    usleep(3000);
    umadv_step_end(ctx, 0);

    umadv_malloc(ctx, 3 * SECTION, "c", &c);
    umadv_step_begin(ctx, "fwd2", (void *)0x5a); /* step 1 */
    umadv_step_access(ctx, c, 3 * SECTION, UMADV_ACCESS_RW);
    umadv_step_access(ctx, (char *)x + 70 * UMADV_KIB, 10 * UMADV_KIB, UMADV_ACCESS_READ);
    umadv_malloc(ctx, 4096, "d", &d);
    umadv_step_access(ctx, d, 4096, UMADV_ACCESS_WRITE);
    umadv_free(ctx, d);
    umadv_step_end(ctx, 5000);

    umadv_malloc(ctx, 4096, "e", &e);        /* lives between steps only */
    umadv_free(ctx, e);
    usleep(4000);                            /* the application's own work */
    umadv_step_begin(ctx, "bwd", (void *)0x5a);  /* step 2 */
    umadv_step_access(ctx, b, 70 * UMADV_KIB, UMADV_ACCESS_READ);
    umadv_step_end(ctx, 0);
    umadv_free(ctx, b);
    umadv_malloc(ctx, 4096, "f", &f);        /* after the last step */
    *w_p = w;
    *x_p = x;
}

/* Every event recorded went to @stream: two per measured step, the start
 * only for a step given its duration. */
static int events_on_stream(umadv_stream_t stream)
{
    size_t n, events = 0;
    const umadv_cuda_host_record_t *rec = umadv__cuda_host_log(&n);

    for (size_t i = 0; i < n; i++) {
        if (rec[i].call != UMADV_CUDA_CALL_EVENT_RECORD)
            continue;
        if (rec[i].stream != stream)
            return 0;
        events++;
    }
    return events == 5; /* start and end of fwd1 and bwd; fwd2 gave its duration */
}

static void check_trace(const umadv_trace_t *t, const void *w, const void *x)
{
    uint32_t iw = alloc_by_tag(t, "w"), ix = alloc_by_tag(t, "x"), ib = alloc_by_tag(t, "b");
    uint32_t ic = alloc_by_tag(t, "c"), id = alloc_by_tag(t, "d");

    is(t->nsteps, 3, "three steps recorded");
    ok(t->nsteps == 3 && strcmp(t->steps[0].name, "fwd1") == 0 &&
       strcmp(t->steps[2].name, "bwd") == 0, "with their names");
    ok(t->nsteps == 3 && t->steps[0].duration_ns >= 3000000 &&
       t->steps[0].duration_ns < 2000000000, "measured step duration covers its 3 ms (%llu ns)",
       t->nsteps ? (unsigned long long)t->steps[0].duration_ns : 0ull);
    ok(t->nsteps == 3 && t->steps[1].duration_ns == 5000, "a given duration is kept");
    ok(t->nsteps == 3 && t->steps[1].host_ns >= 3000000 && t->steps[2].host_ns >= 4000000 &&
       t->steps[2].host_ns < 2000000000 && t->steps[0].host_ns > 0 &&
       t->steps[0].host_ns < t->steps[2].host_ns,
       "host times: the application's own from step to step (%llu, %llu, %llu ns; step 0's "
       "3 ms and 4 ms before step 2 in them)",
       t->nsteps == 3 ? (unsigned long long)t->steps[0].host_ns : 0ull,
       t->nsteps == 3 ? (unsigned long long)t->steps[1].host_ns : 0ull,
       t->nsteps == 3 ? (unsigned long long)t->steps[2].host_ns : 0ull);
    is(t->nallocs, 5, "five allocations lived through a step (w, x, b, c, d)");
    ok(alloc_by_tag(t, "a") == UINT32_MAX && alloc_by_tag(t, "e") == UINT32_MAX &&
       alloc_by_tag(t, "f") == UINT32_MAX, "buffers that saw no step are absent");
    ok(lifetime_is(t, iw, UMADV_STEP_NONE, UMADV_STEP_NONE) &&
       lifetime_is(t, ix, UMADV_STEP_NONE, UMADV_STEP_NONE),
       "buffers older than the iteration live throughout");
    ok(lifetime_is(t, ib, 0, 2), "b: allocated before step 0, freed after step 2");
    ok(lifetime_is(t, ic, 1, UMADV_STEP_NONE), "c: allocated before step 1, still alive");
    ok(lifetime_is(t, id, 1, 1), "d: born and freed inside step 1");
    ok(iw < t->nallocs && t->allocs[iw].base == (uintptr_t)w &&
       t->allocs[iw].size == 200 * UMADV_KIB && t->allocs[iw].nsections == 4,
       "w: address, size, 4 sections of 64K");
    ok(has_access(t, 0, iw, 0, 4, UMADV_ACCESS_READ), "step 0 reads all of w");
    ok(has_access(t, 0, ib, 0, 1, UMADV_ACCESS_WRITE), "step 0 writes b's first section");
    ok(has_access(t, 1, ic, 0, 3, UMADV_ACCESS_RW), "step 1 reads and writes c");
    ok(has_access(t, 1, ix, 1, 1, UMADV_ACCESS_READ), "step 1 reads section 1 of x only");
    ok(has_access(t, 1, id, 0, 1, UMADV_ACCESS_WRITE), "step 1 writes d");
    ok(t->steps[2].naccesses == 1 && has_access(t, 2, ib, 0, 2, UMADV_ACCESS_READ),
       "step 2 reads both sections of b, nothing else");
    ok(t->section_size == SECTION && strstr(t->device.name, "host") != NULL,
       "section size and device recorded");
    (void)x;
}

/* The context's counters; every one UINT64_MAX when the call fails. */
static umadv_stats_t stats_of(umadv_context_t ctx)
{
    umadv_stats_t s = {.size = sizeof(s)};

    if (umadv_get_stats(ctx, &s) != UMADV_OK)
        memset(&s, 0xff, sizeof(s));
    return s;
}

static void test_profile(void)
{
    umadv_context_params_t p = host_params();
    uint64_t profiles_before;
    umadv_context_t ctx;
    umadv_trace_t back;
    char path[] = "/tmp/umadv-test-context-trace-XXXXXX", why[256];
    umadv_cuda_host_counters_t hc;
    void *w, *x;
    int fd = mkstemp(path);

    umadv_context_create(&p, &ctx);
    umadv__cuda_host_log_enable(1);
    run_profiled_iteration(ctx, &w, &x);
    ok(events_on_stream((umadv_stream_t)0x5a), "steps are timed by events on their stream");
    umadv__cuda_host_log_enable(0);
    is(umadv_trace_save(ctx, path), UMADV_OK, "trace saved");
    is(ctx->record, UMADV_CTX_REC_DONE, "saving completed the recording");
    check_trace(&ctx->trace, w, x);
    if (umadv__trace_read_file(path, &back, why, sizeof(why)) == UMADV_OK) {
        ok(back.nsteps == 3 && back.nallocs == 5 && back.naccesses == ctx->trace.naccesses,
           "the saved file reads back to the same trace");
        umadv__trace_cleanup(&back);
    } else {
        ok(0, "the saved file reads back: %s", why);
    }
    is(umadv_plan(ctx), UMADV_OK, "plan from the recorded iteration");
    ok(ctx->have_schedule && ctx->schedule.nsteps == 3, "schedule covers the three steps");
    ok(ctx->have_schedule && ctx->schedule.evict_bytes == 0 &&
       ctx->schedule.budget == ctx->props.total_memory,
       "no budget: planned for the whole device, nothing evicted");
    ctx->config.budget = SECTION; /* w alone needs four sections in step 0 */
    log_take();
    is(umadv_plan(ctx), UMADV_ERR_BUDGET_TOO_SMALL, "the context's budget reaches the planner");
    ok(ctx->have_schedule && ctx->schedule.budget == ctx->props.total_memory,
       "a failed plan keeps the previous schedule");
    ctx->config.budget = 0;

    is(umadv_iteration_begin(ctx), UMADV_OK, "next iteration");
    umadv_step_begin(ctx, "fwd1", NULL);
    umadv_step_access(ctx, w, 100, UMADV_ACCESS_READ);
    umadv_step_end(ctx, 0);
    ok(ctx->trace.nsteps == 3 && ctx->record == UMADV_CTX_REC_DONE,
       "later iterations leave the trace alone");

    profiles_before = stats_of(ctx).profiles;
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    log_take();
    is(umadv_trace_save(ctx, path), UMADV_ERR_STATE, "a profiled iteration without steps");
    ok(strstr(log_take(), "no steps") != NULL, "is reported as empty");
    ok(profiles_before == 1 && stats_of(ctx).profiles == 1,
       "stats: the profile that recorded counted, the empty one not");
    umadv_context_destroy(ctx);
    umadv__cuda_host_counters(&hc);
    ok(hc.events == 0 && hc.managed_bytes == 0,
       "destroy returned every event and every arena (events %llu, bytes %llu)",
       (unsigned long long)hc.events, (unsigned long long)hc.managed_bytes);
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
}

/* The profiling phase's leaves, timed where the life cycle calls them:
 * each counted once it has run, not again by plain iterations. */
static void test_phase_times(void)
{
    umadv_context_params_t p = host_params();
    umadv_stats_t before = {.size = sizeof(before)}, after = {.size = sizeof(after)},
                  later = {.size = sizeof(later)};
    umadv_context_t ctx;
    void *w, *x;

    umadv_context_create(&p, &ctx);
    umadv_get_stats(ctx, &before);
    run_profiled_iteration(ctx, &w, &x);
    is(umadv_plan(ctx), UMADV_OK, "phase times: planned");
    umadv_get_stats(ctx, &after);
    ok(before.profile_end_ns == 0 && before.plan_ns == 0 && before.replay_start_ns == 0,
       "phase times: none before a profile");
    ok(after.profile_end_ns > 0 && after.plan_ns > 0 && after.replay_start_ns > 0,
       "phase times: the profile's end, the plan and the replay's start each timed "
       "(%llu, %llu, %llu ns)", (unsigned long long)after.profile_end_ns,
       (unsigned long long)after.plan_ns, (unsigned long long)after.replay_start_ns);
    umadv_iteration_begin(ctx);
    umadv_step_begin(ctx, "fwd1", NULL);
    umadv_step_access(ctx, w, 100, UMADV_ACCESS_READ);
    umadv_step_end(ctx, 0);
    umadv_iteration_begin(ctx);
    umadv_get_stats(ctx, &later);
    ok(later.profile_end_ns == after.profile_end_ns && later.plan_ns == after.plan_ns &&
       later.replay_start_ns == after.replay_start_ns,
       "phase times: plain iterations add nothing");
    ok(before.fault_count_ns == 0 && later.fault_count_ns > after.fault_count_ns,
       "fault counts: timed at each iteration's begin (%llu ns in two)",
       (unsigned long long)(later.fault_count_ns - after.fault_count_ns));
    umadv_context_destroy(ctx);
}

/* umadv_malloc, umadv_set_stageable and umadv_free are counted and timed
 * (the PyTorch allocator's per-tensor calls), a refused one too. */
static void test_alloc_calls(void)
{
    umadv_context_params_t p = host_params();
    umadv_stats_t before = {.size = sizeof(before)}, after = {.size = sizeof(after)};
    umadv_context_t ctx;
    void *blocks[4];
    int made = 0;

    umadv_context_create(&p, &ctx);
    umadv_get_stats(ctx, &before);
    for (int i = 0; i < 4; i++) {
        made += umadv_malloc(ctx, 4096 << i, "t", &blocks[i]) == UMADV_OK &&
                umadv_set_stageable(ctx, blocks[i], 1) == UMADV_OK &&
                umadv_free(ctx, blocks[i]) == UMADV_OK;
    }
    umadv_free(ctx, blocks[0]); /* freed already: refused, still a call */
    umadv_get_stats(ctx, &after);
    ok(made == 4 && before.alloc_calls == 0 && before.alloc_ns == 0,
       "allocation calls: none counted before the first");
    ok(after.alloc_calls == 13 && after.alloc_ns > 0,
       "allocation calls: 4 mallocs, 4 stageable marks, 5 frees, timed (%llu calls, %llu ns)",
       (unsigned long long)after.alloc_calls, (unsigned long long)after.alloc_ns);
    umadv_context_destroy(ctx);
}

static void test_stats(void)
{
    umadv_context_params_t p = host_params();
    umadv_context_t ctx;
    umadv_stats_t s;
    uint64_t held, released = 0;
    void *a, *b;

    umadv_context_create(&p, &ctx);
    umadv_malloc(ctx, 1000, "a", &a);
    umadv_malloc(ctx, 3000, "b", &b);
    umadv_free(ctx, a);
    umadv_iteration_begin(ctx);
    umadv_step_begin(ctx, "s", NULL);
    umadv_step_end(ctx, 0);
    umadv_iteration_begin(ctx);

    memset(&s, 0, sizeof(s));
    s.size = sizeof(s);
    is(umadv_get_stats(ctx, &s), UMADV_OK, "stats");
    ok(s.iterations == 2 && s.steps == 1, "iterations and steps counted");
    ok(s.managed_bytes == 3000 && s.managed_peak == 4000 && s.allocations == 1,
       "managed bytes, peak and live allocations");
    is_u64(s.size, sizeof(s), "size left as the caller set it");

    memset(&s, 0xff, sizeof(s));
    s.size = offsetof(umadv_stats_t, managed_bytes);
    umadv_get_stats(ctx, &s);
    ok(s.iterations == 2 && s.steps == 1 && s.managed_bytes == UINT64_MAX &&
       s.gpu_peak_used == UINT64_MAX, "an older, smaller struct gets only its fields");
    s.size = 0;
    is(umadv_get_stats(ctx, &s), UMADV_ERR_INVALID_PARAM, "size 0 refused");
    is(umadv_get_stats(ctx, NULL), UMADV_ERR_INVALID_PARAM, "NULL refused");

    umadv_free(ctx, b);
    s.size = sizeof(s);
    umadv_get_stats(ctx, &s);
    held = s.managed_held;
    ok(s.managed_bytes == 0 && held > 0 && s.managed_held_peak == held,
       "the emptied arena is held (%llu bytes)", (unsigned long long)held);
    is(umadv_release_cached(ctx, &released), UMADV_OK, "umadv_release_cached");
    umadv_get_stats(ctx, &s);
    ok(released == held && s.managed_held == 0 && s.managed_held_peak == held,
       "returns it, and says how much; the peak stays");
    is(umadv_release_cached(ctx, NULL), UMADV_OK, "again, nothing left, no count asked");
    is(umadv_release_cached(NULL, &released), UMADV_ERR_INVALID_PARAM, "NULL context refused");
    umadv_context_destroy(ctx);
}

static void test_policy_names(void)
{
    umadv_policy_t policy;
    int round_trip = 1;

    for (int i = 0; i < UMADV_POLICY_COUNT; i++) {
        round_trip &= umadv_policy_parse(umadv_policy_name((umadv_policy_t)i), &policy) ==
                      UMADV_OK && policy == (umadv_policy_t)i;
    }
    ok(round_trip, "every policy name parses back to its policy");
    is_str(umadv_policy_name(UMADV_POLICY_PREFETCH_ALL), "prefetch-all", "prefetch-all named");
    is_str(umadv_policy_name((umadv_policy_t)99), "?", "unknown policy is ?");
    policy = UMADV_POLICY_DEMAND;
    is(umadv_policy_parse("lru", &policy), UMADV_ERR_INVALID_PARAM, "unknown name refused");
    is(policy, UMADV_POLICY_DEMAND, "output untouched on error");
    is(umadv_policy_parse(NULL, &policy), UMADV_ERR_INVALID_PARAM, "NULL refused");
}

/* One iteration of NW steps, step i reading and writing all of w[i];
 * w[2] is the largest. */
#define NW 4
#define W_BYTES(i) ((i) == 2 ? 5 * SECTION : 4 * SECTION)
#define W_TOTAL (17 * SECTION)

static void budget_iteration(umadv_context_t ctx, void *const *w)
{
    umadv_iteration_begin(ctx);
    for (int i = 0; i < NW; i++) {
        umadv_step_begin(ctx, i == 2 ? "layer2" : "layer", NULL);
        umadv_step_access(ctx, w[i], W_BYTES(i), UMADV_ACCESS_RW);
        umadv_step_end(ctx, 1000);
    }
}

/* The resident peak (accounted by the executor) of @iters iterations
 * replayed after the one that starts the replay. */
static uint64_t budget_peak(umadv_context_t ctx, void *const *w, int iters)
{
    umadv_stats_t s = {.size = sizeof(s)};

    for (int it = 0; it < iters; it++)
        budget_iteration(ctx, w);
    umadv_get_stats(ctx, &s);
    return s.resident_peak;
}

static void test_set_budget(void)
{
    umadv_context_params_t p = host_params();
    umadv_context_t ctx;
    const uint64_t small = 6 * SECTION; /* the largest step and one section */
    uint64_t peak;
    void *w[NW];
    char *log;

    p.field_mask |= UMADV_CONTEXT_FIELD_POLICY;
    p.policy = UMADV_POLICY_PLAN;
    umadv_context_create(&p, &ctx);
    for (int i = 0; i < NW; i++)
        umadv_malloc(ctx, W_BYTES(i), "w", &w[i]);
    is(umadv_set_budget(NULL, small), UMADV_ERR_INVALID_PARAM, "set_budget: NULL context");
    is(umadv_set_budget(ctx, SECTION), UMADV_OK,
       "set_budget: before any recording the budget is kept, not checked");
    is_u64(ctx->config.budget, SECTION, "set_budget: kept");
    is(umadv_set_budget(ctx, 0), UMADV_OK, "set_budget: 0 means no budget");
    umadv_profile_next_iteration(ctx);
    budget_iteration(ctx, w);
    is(umadv_plan(ctx), UMADV_OK, "set_budget: planned without a budget");
    peak = budget_peak(ctx, w, 3);
    ok(peak == W_TOTAL, "set_budget: no budget keeps all of w resident (peak %llu KiB)",
       (unsigned long long)(peak >> 10));

    is(umadv_set_budget(ctx, small), UMADV_OK, "set_budget: a smaller budget");
    ok(ctx->have_schedule && ctx->schedule.budget == ctx->props.total_memory,
       "set_budget: the iteration under way keeps its schedule");
    peak = budget_peak(ctx, w, 3);
    ok(ctx->have_schedule && ctx->schedule.budget == small,
       "set_budget: the next iteration plans again for the new budget");
    ok(peak > 0 && peak <= small, "set_budget: the executor keeps the new budget (peak %llu "
       "KiB of %llu)", (unsigned long long)(peak >> 10), (unsigned long long)(small >> 10));

    log_take();
    is(umadv_set_budget(ctx, 4 * SECTION), UMADV_ERR_BUDGET_TOO_SMALL,
       "set_budget: a budget under one step's working set is refused");
    log = log_take();
    ok(strstr(log, "step 2 (layer2)") != NULL && strstr(log, "320.00 KiB") != NULL &&
       strstr(log, "stays 384.00 KiB") != NULL,
       "set_budget: the error names the step, the bytes it needs and the budget kept: %s", log);
    is_u64(ctx->config.budget, small, "set_budget: the old budget stays");
    peak = budget_peak(ctx, w, 3);
    ok(ctx->schedule.budget == small && peak > 0 && peak <= small,
       "set_budget: the replay goes on under the old budget (peak %llu KiB)",
       (unsigned long long)(peak >> 10));

    is(umadv_set_budget(ctx, W_TOTAL), UMADV_OK, "set_budget: back to room for all");
    umadv_set_policy(ctx, UMADV_POLICY_DEMAND);
    ok(ctx->schedule.budget == W_TOTAL && !ctx->life.want_plan,
       "set_budget: a plan made before the boundary (set_policy) takes the new budget");
    umadv_context_destroy(ctx);
}

/* demand under a budget, with a block allocated inside a step (as an
 * activation gradient is): the executor's accounted residency must stay
 * within the budget. */
static void demand_iteration(umadv_context_t ctx, void *const *w)
{
    void *g;

    umadv_iteration_begin(ctx);
    for (int i = 0; i < NW; i++) {
        umadv_step_begin(ctx, "layer", NULL);
        umadv_step_access(ctx, w[i], W_BYTES(i), UMADV_ACCESS_RW);
        if (i == 1) {
            umadv_malloc(ctx, 2 * SECTION, "grad", &g);
            umadv_step_access(ctx, g, 2 * SECTION, UMADV_ACCESS_WRITE);
        }
        umadv_step_end(ctx, 1000);
        if (i == 2)
            umadv_free(ctx, g);
    }
}

static void test_demand_in_step_alloc(void)
{
    umadv_context_params_t p = host_params();
    umadv_stats_t s = {.size = sizeof(s)};
    umadv_context_t ctx;
    const uint64_t budget = 7 * SECTION;
    void *w[NW];

    p.field_mask |= UMADV_CONTEXT_FIELD_POLICY | UMADV_CONTEXT_FIELD_BUDGET;
    p.policy = UMADV_POLICY_DEMAND;
    p.budget = budget;
    umadv_context_create(&p, &ctx);
    for (int i = 0; i < NW; i++)
        umadv_malloc(ctx, W_BYTES(i), "w", &w[i]);
    umadv_profile_next_iteration(ctx);
    demand_iteration(ctx, w);
    umadv_plan(ctx);
    for (int it = 0; it < 4; it++)
        demand_iteration(ctx, w);
    umadv_get_stats(ctx, &s);
    ok(s.resident_peak > 0 && s.resident_peak <= budget,
       "demand keeps the budget with a block allocated inside a step (peak %llu KiB of "
       "%llu)",
         (unsigned long long)(s.resident_peak >> 10), (unsigned long long)(budget >> 10));
    umadv_context_destroy(ctx);
}

/* One training-shaped iteration on declared steps: the gradient g is
 * made in the backward and freed by the next iteration's zero_grad,
 * before its first step (record.c, THE TAIL). */
static void tail_iteration(umadv_context_t ctx, void *w, void **g_p)
{
    void *a;

    if (*g_p != NULL)
        umadv_free(ctx, *g_p); /* zero_grad */
    umadv_malloc(ctx, SECTION, "a", &a);
    umadv_step_begin(ctx, "fwd", NULL);
    umadv_step_access(ctx, w, SECTION, UMADV_ACCESS_READ);
    umadv_step_access(ctx, a, SECTION, UMADV_ACCESS_WRITE);
    umadv_step_end(ctx, 1000);
    umadv_malloc(ctx, SECTION, "g", g_p);
    umadv_step_begin(ctx, "bwd", NULL);
    umadv_step_access(ctx, a, SECTION, UMADV_ACCESS_READ);
    umadv_step_access(ctx, *g_p, SECTION, UMADV_ACCESS_WRITE);
    umadv_step_end(ctx, 1000);
    umadv_free(ctx, a);
    umadv_step_begin(ctx, "opt", NULL);
    umadv_step_access(ctx, *g_p, SECTION, UMADV_ACCESS_READ);
    umadv_step_access(ctx, w, SECTION, UMADV_ACCESS_RW);
    umadv_step_end(ctx, 1000);
}

/* With UMADV_PROFILE_TAIL=0 the tail amends nothing. */
static void test_tail_off(void)
{
    umadv_context_params_t p = host_params();
    umadv_context_t ctx;
    void *w, *g = NULL;

    setenv("UMADV_PROFILE_TAIL", "0", 1);
    umadv_context_create(&p, &ctx);
    unsetenv("UMADV_PROFILE_TAIL");
    umadv_malloc(ctx, SECTION, "w", &w);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    tail_iteration(ctx, w, &g);
    umadv_iteration_begin(ctx);
    tail_iteration(ctx, w, &g);
    ok(lifetime_is(&ctx->trace, alloc_by_tag(&ctx->trace, "g"), 1, UMADV_STEP_NONE),
       "UMADV_PROFILE_TAIL=0: g stays alive past the window");
    umadv_free(ctx, g);
    umadv_free(ctx, w);
    umadv_context_destroy(ctx);
}

static void test_tail(void)
{
    umadv_context_params_t p = host_params();
    umadv_context_t ctx;
    void *w, *g = NULL, *late;
    uint32_t ig;
    uint64_t plans;

    setenv("UMADV_PROFILE_TAIL", "1", 1);
    umadv_context_create(&p, &ctx);
    unsetenv("UMADV_PROFILE_TAIL");
    umadv_malloc(ctx, SECTION, "w", &w);
    umadv_iteration_begin(ctx);
    tail_iteration(ctx, w, &g);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    tail_iteration(ctx, w, &g); /* recorded */
    umadv_malloc(ctx, SECTION, "late", &late);
    umadv_plan(ctx);
    umadv_iteration_begin(ctx);
    ig = alloc_by_tag(&ctx->trace, "g");
    ok(ctx->profiler == NULL && ctx->have_schedule &&
       lifetime_is(&ctx->trace, ig, 1, UMADV_STEP_NONE),
       "recorded: g born at the backward, alive at the end");
    plans = stats_of(ctx).plans;
    log_take();
    umadv__log_level = UMADV_LOG_INFO;
    tail_iteration(ctx, w, &g); /* frees the recorded g before its first step */
    umadv__log_level = UMADV_LOG_WARN;
    ok(lifetime_is(&ctx->trace, ig, 1, 2), "freed before the next first step: g dies with the "
       "window (free_step %u)", ig < ctx->trace.nallocs ? ctx->trace.allocs[ig].free_step : 0);
    ok(strstr(log_take(), "1 of its blocks freed before the next iteration's first step") != NULL,
       "and the log says so");
    umadv_free(ctx, late);
    ok(lifetime_is(&ctx->trace, alloc_by_tag(&ctx->trace, "a"), 0, 1) &&
       alloc_by_tag(&ctx->trace, "late") == UINT32_MAX,
       "a block freed after the first step, or never in the trace, changes nothing");
    umadv_iteration_begin(ctx);
    is(stats_of(ctx).plans, plans + 1,
       "the schedule built before it is planned again at the boundary");
    tail_iteration(ctx, w, &g);
    umadv_free(ctx, w); /* in no tail: after the steps, and never born in the window */
    umadv_iteration_begin(ctx);
    ok(lifetime_is(&ctx->trace, alloc_by_tag(&ctx->trace, "w"), UMADV_STEP_NONE,
                   UMADV_STEP_NONE) && stats_of(ctx).plans == plans + 1,
       "later iterations leave the trace alone");
    umadv_free(ctx, g);
    umadv_context_destroy(ctx);
}

int main(void)
{
    log_capture_start();
    env_clear();
    plan(122);
    test_create();
    test_state_errors();
    test_limit();
    test_profile();
    test_tail();
    test_tail_off();
    test_phase_times();
    test_alloc_calls();
    test_stats();
    test_set_budget();
    test_demand_in_step_alloc();
    test_policy_names();
    log_capture_stop();
    return exit_status();
}
