/*
 * The injection library's process state: its knobs, its context and the
 * iteration driver that profiles, plans and marks the iterations it is
 * told about (an NVTX range, PyTorch's optimizer step, the repeating
 * launch sequence), each source admitted as UMADV_ITERATION_SOURCE says;
 * or, in profile mode with UMADV_PROFILE_SECONDS, the window of time it
 * profiles instead, which those boundaries do not end. See inject.h.
 */
#define _GNU_SOURCE /* dladdr */
#include "inject/inject.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static umadv_config_t config;
static int config_ok;

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static umadv_inject_counts_t counts; /* state_lock */
/* Read on every launch, without the lock: a launch may come while the
 * lock's holder plans. */
static atomic_int launches_off;      /* an explicit source won, or the program marks */
static _Atomic uint64_t launches_seen;
static _Atomic uint32_t launch_period;
static int context_failed;           /* state_lock: said once, not retried */
static _Atomic(umadv_context_t) made; /* the process's context, once made; read without the lock */

static void window_begin(umadv_context_t ctx);

static void config_load(void)
{
    umadv__config_defaults(&config);
    if (umadv__config_load(&config) != UMADV_OK)
        return; /* the bad variable is logged by the loader */
    if (umadv__config_apply_log(&config) != UMADV_OK)
        return;
    config_ok = 1;
}

const umadv_config_t *umadv__inject_config(void)
{
    pthread_once(&config_once, config_load);
    return config_ok ? &config : NULL;
}

/* The summary is written before CUDA's own exit handlers run: they were
 * registered when CUDA started, before the context existed. */
static void at_exit(void)
{
    umadv__inject_exit();
}

umadv_context_t umadv__inject_context(void)
{
    static int exit_registered;           /* state_lock */
    umadv_context_t ctx = atomic_load_explicit(&made, memory_order_acquire);
    umadv_status_t status;

    if (ctx != NULL || umadv__inject_config() == NULL)
        return ctx;
    pthread_mutex_lock(&state_lock);
    if (!context_failed) {
        status = umadv_torch_context(&ctx);
        if (status != UMADV_OK) {
            umadv_error("no umadv context (%s): the program runs on plain CUDA",
                        umadv_status_string(status));
            context_failed = 1;
            ctx = NULL;
        } else {
            atomic_store_explicit(&made, ctx, memory_order_release);
            if (!exit_registered)
                atexit(at_exit);
            exit_registered = 1;
            if (umadv__inject_window_mode())
                window_begin(ctx);
        }
    }
    pthread_mutex_unlock(&state_lock);
    return ctx;
}

/* Profile mode (UMADV_PROFILE_OUTPUT): the profiled iteration's trace
 * is saved where it ends, and nothing is planned: the program runs on as
 * it did (umadv profile gives oracle, no budget). */
static void save_profile(umadv_context_t ctx, uint64_t k)
{
    umadv_status_t status = umadv_trace_save(ctx, config.profile_output);

    counts.profile_saved = status == UMADV_OK ? 1 : -1;
    if (status != UMADV_OK)
        umadv_warn("iteration %llu: the profile was not saved to %s (%s)", (unsigned long long)k,
                   config.profile_output, umadv_status_string(status));
}

/* Profile iteration p, plan once it ends (at boundary p + 1): the same
 * sequence examples/torch_train.py makes by hand. @k counts every
 * boundary; @rel from the last restart. A failure costs time, never
 * data: the program goes on under what ran before. */
static void drive(umadv_context_t ctx, uint64_t k, uint64_t rel, uint32_t p)
{
    umadv_status_t status;

    if (rel == (uint64_t)p + 1 && config.profile_output[0] != '\0') {
        save_profile(ctx, k);
    } else if (rel == (uint64_t)p + 1) {
        status = umadv_plan(ctx);
        counts.planned = 1;
        counts.plan_status = status;
        if (status != UMADV_OK)
            umadv_warn("iteration %llu: no plan (%s): the program runs unplanned",
                       (unsigned long long)k, umadv_status_string(status));
        else
            counts.replay_first = k;
    }
    if (rel == p) {
        status = umadv_profile_next_iteration(ctx);
        if (status != UMADV_OK)
            umadv_warn("iteration %llu: cannot profile it (%s)", (unsigned long long)k,
                       umadv_status_string(status));
    }
    status = umadv_iteration_begin(ctx);
    if (status != UMADV_OK)
        umadv_warn("iteration %llu: umadv_iteration_begin: %s", (unsigned long long)k,
                   umadv_status_string(status));
}

static uint64_t context_iterations(umadv_context_t ctx)
{
    umadv_stats_t stats = {.size = sizeof(stats)};

    return umadv_get_stats(ctx, &stats) == UMADV_OK ? stats.iterations : 0;
}

/* A program that marks its iterations itself (through umadv's API, as
 * examples/torch_train.py does) is left to do so: two drivers would
 * profile and plan at each other's boundaries. Found when the context
 * counted iterations this driver did not begin. */
static int program_marks(umadv_context_t ctx)
{
    if (!counts.program_marks && context_iterations(ctx) != counts.ctx_iterations) {
        umadv_info("the program marks its own iterations: umadv run leaves them to it");
        counts.program_marks = 1;
        atomic_store(&launches_off, 1);
    }
    return counts.program_marks;
}

/* A boundary (state_lock held): driven, counted. */
static void boundary(umadv_context_t ctx, int source)
{
    uint64_t now = umadv__now_ns();

    if (program_marks(ctx))
        return;
    drive(ctx, counts.iterations, counts.iterations - counts.base, config.profile_iteration);
    counts.ctx_iterations = context_iterations(ctx);
    if (counts.iterations == 0)
        counts.first_ns = now;
    if (counts.replay_first != 0 && counts.replay_first == counts.iterations)
        counts.replay_ns = now;
    counts.last_ns = now;
    counts.source = source;
    counts.iterations++;
}

void umadv__inject_iteration(void)
{
    umadv_context_t ctx = umadv__inject_context();

    if (umadv__inject_window_mode()) { /* the window's clock only */
        (void)umadv__inject_window_seen();
        return;
    }
    if (ctx == NULL)
        return;
    pthread_mutex_lock(&state_lock);
    boundary(ctx, UMADV_ITERATION_SOURCE_COUNT);
    pthread_mutex_unlock(&state_lock);
}

/* Number the boundaries from 0 again at the next one (state_lock held),
 * when some were numbered since the last restart. */
static void restart(const char *why)
{
    if (counts.iterations == counts.base)
        return;
    umadv_info("%s: iterations are numbered from 0 again, and the profile and the plan made anew",
               why);
    counts.base = counts.iterations;
}

/* Whether a boundary from @source counts (state_lock held). */
static int admitted(int knob, umadv_iteration_source_t source)
{
    char why[96];

    if (knob != UMADV_ITERATION_SOURCE_AUTO)
        return knob == (int)source;
    if (source == UMADV_ITERATION_SOURCE_LAUNCHES)
        return counts.explicit_source == UMADV_ITERATION_SOURCE_AUTO;
    if (counts.explicit_source == UMADV_ITERATION_SOURCE_AUTO) {
        counts.explicit_source = source;
        atomic_store(&launches_off, 1);
        snprintf(why, sizeof(why), "iterations come from %s",
                 source == UMADV_ITERATION_SOURCE_NVTX ? "the NVTX range" : "the optimizer steps");
        restart(why);
    }
    return counts.explicit_source == (int)source;
}

void umadv__inject_mark(umadv_iteration_source_t source, int restart_now)
{
    /* made first: making it takes the lock. Without one, which source
     * the program shows is still recorded. */
    umadv_context_t ctx = umadv__inject_context();

    if (umadv__inject_config() == NULL)
        return;
    if (umadv__inject_window_mode()) { /* boundaries do not end the window */
        (void)umadv__inject_window_seen();
        return;
    }
    pthread_mutex_lock(&state_lock);
    if (admitted(config.iteration_source, source) && ctx != NULL) {
        if (restart_now)
            restart("the launch sequence repeats another loop");
        boundary(ctx, source);
    }
    pthread_mutex_unlock(&state_lock);
}

/* ---- profile mode over a window of wall time (UMADV_PROFILE_SECONDS) ---- */

static uint64_t (*window_clock)(void) = umadv__now_ns;
/* When the open window's time is up, read on every launch without the
 * lock; 0: no window open. */
static _Atomic uint64_t window_deadline;

#ifdef UMADV_TEST_HOOKS
void umadv__inject_set_clock(uint64_t (*now_ns)(void))
{
    window_clock = now_ns != NULL ? now_ns : umadv__now_ns;
}
#endif

int umadv__inject_window_mode(void)
{
    const umadv_config_t *config_p = umadv__inject_config();

    return config_p != NULL && config_p->profile_seconds != 0 &&
           config_p->profile_output[0] != '\0';
}

/* The window begins with the context @ctx, just made (state_lock held):
 * iteration 0 is profiled from now. */
static void window_begin(umadv_context_t ctx)
{
    uint64_t now = window_clock();
    umadv_status_t status = umadv_profile_next_iteration(ctx);

    if (status == UMADV_OK)
        status = umadv_iteration_begin(ctx);
    if (status != UMADV_OK) {
        umadv_warn("the profile window cannot begin (%s): nothing is profiled",
                   umadv_status_string(status));
        counts.window = UMADV_INJECT_WINDOW_ENDED;
        counts.profile_saved = -1;
        return;
    }
    counts.window = UMADV_INJECT_WINDOW_OPEN;
    counts.window_begin_ns = counts.first_ns = counts.last_ns = now;
    counts.iterations = 1;
    counts.ctx_iterations = context_iterations(ctx);
    umadv_info("profile window of %u s begun", config.profile_seconds);
    atomic_store_explicit(&window_deadline,
                          now + (uint64_t)config.profile_seconds * UINT64_C(1000000000),
                          memory_order_release);
}

/* The open window ends at @now (state_lock held): its trace is saved. */
static void window_end(umadv_context_t ctx, uint64_t now)
{
    atomic_store_explicit(&window_deadline, 0, memory_order_release);
    counts.window = UMADV_INJECT_WINDOW_ENDED;
    counts.window_end_ns = now;
    umadv_info("profile window ended after %.3f s", (double)(now - counts.window_begin_ns) / 1e9);
    save_profile(ctx, 0);
}

/* End the window if it is open and @force or its time is up; whether it
 * is still open. */
static int window_update(umadv_context_t ctx, int force)
{
    uint64_t now;
    int open;

    pthread_mutex_lock(&state_lock);
    now = window_clock();
    if (counts.window == UMADV_INJECT_WINDOW_OPEN &&
        (force || now >= atomic_load_explicit(&window_deadline, memory_order_acquire)))
        window_end(ctx, now);
    open = counts.window != UMADV_INJECT_WINDOW_ENDED;
    pthread_mutex_unlock(&state_lock);
    return open;
}

int umadv__inject_window_seen(void)
{
    umadv_context_t ctx;
    uint64_t deadline;

    if (!umadv__inject_window_mode())
        return 0;
    ctx = umadv__inject_context(); /* made now: the window begins */
    if (ctx == NULL)
        return 0;
    deadline = atomic_load_explicit(&window_deadline, memory_order_acquire);
    if (deadline != 0 && window_clock() < deadline)
        return 1;
    return window_update(ctx, 0);
}

void umadv__inject_window_close(void)
{
    umadv_context_t ctx = atomic_load_explicit(&made, memory_order_acquire);

    if (ctx != NULL && umadv__inject_window_mode())
        (void)window_update(ctx, 1);
}

int umadv__inject_launches_wanted(void)
{
    const umadv_config_t *config_p = umadv__inject_config();

    if (config_p == NULL || umadv__inject_window_mode() ||
        (config_p->iteration_source != UMADV_ITERATION_SOURCE_AUTO &&
         config_p->iteration_source != UMADV_ITERATION_SOURCE_LAUNCHES))
        return 0;
    return !atomic_load_explicit(&launches_off, memory_order_relaxed);
}

void umadv__inject_count_launches(uint64_t launches, uint32_t period)
{
    atomic_store_explicit(&launches_seen, launches, memory_order_relaxed);
    atomic_store_explicit(&launch_period, period, memory_order_relaxed);
}

void umadv__inject_counts(umadv_inject_counts_t *counts_p)
{
    const umadv_config_t *config_p = umadv__inject_config();

    pthread_mutex_lock(&state_lock);
    *counts_p = counts;
    counts_p->launches = atomic_load(&launches_seen);
    counts_p->period = atomic_load(&launch_period);
    counts_p->profile_mode = config_p != NULL && config_p->profile_output[0] != '\0';
    pthread_mutex_unlock(&state_lock);
}

void umadv__inject_count_route(int managed, int routed)
{
    pthread_mutex_lock(&state_lock);
    if (!routed)
        counts.unrouted++;
    else if (managed)
        counts.routed_managed++;
    else
        counts.routed_mallocs++;
    pthread_mutex_unlock(&state_lock);
}

/* ---- entry points (umadv-run(1), INJECTION LIBRARY) ---- */

/* Python's start-up hook: the optimizer stepped, an iteration begins. */
UMADV_INJECT_API void umadv_inject_iteration(void)
{
    umadv__inject_mark(UMADV_ITERATION_SOURCE_OPTIMIZER, 0);
}

/* Python's exit: the record is written while the interpreter lives. */
UMADV_INJECT_API void umadv_inject_exit(void)
{
    umadv__inject_exit();
}

/* PyTorch's allocator in window mode: the allocation is made first, so
 * that the context is the one PyTorch's device asks for. */
UMADV_INJECT_API void *umadv_inject_torch_malloc(size_t size, int device, void *stream)
{
    void *ptr = umadv_torch_malloc(size, device, stream);

    (void)umadv__inject_window_seen();
    return ptr;
}

UMADV_INJECT_API void umadv_inject_torch_free(void *ptr, size_t size, int device, void *stream)
{
    umadv_torch_free(ptr, size, device, stream);
}

/* The libumadv this library runs on, for CUDAPluggableAllocator. */
UMADV_INJECT_API const char *umadv_inject_libumadv_path(void)
{
    Dl_info info;

    if (dladdr((void *)umadv_torch_malloc, &info) == 0 || info.dli_fname == NULL)
        return NULL;
    return info.dli_fname;
}

/* CUDA_INJECTION64_PATH: the driver calls this from cuInit. The knobs are
 * read (a bad value said) now; the context waits for the first
 * allocation or iteration. `umadv profile` hooks its tracer here. */
UMADV_INJECT_API int InitializeInjection(void)
{
    return umadv__inject_config() != NULL;
}
