/*
 * The injection library's process state: its knobs, its context and the
 * iteration driver that profiles, plans and marks the iterations it is
 * told about (an NVTX range, PyTorch's optimizer step, the repeating
 * launch sequence), each source admitted as UMADV_ITERATION_SOURCE says.
 * See inject.h.
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
    umadv__inject_summary_write();
}

umadv_context_t umadv__inject_context(void)
{
    static _Atomic(umadv_context_t) made; /* once made, read without the lock */
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
    pthread_mutex_lock(&state_lock);
    if (admitted(config.iteration_source, source) && ctx != NULL) {
        if (restart_now)
            restart("the launch sequence repeats another loop");
        boundary(ctx, source);
    }
    pthread_mutex_unlock(&state_lock);
}

int umadv__inject_launches_wanted(void)
{
    const umadv_config_t *config_p = umadv__inject_config();

    if (config_p == NULL || (config_p->iteration_source != UMADV_ITERATION_SOURCE_AUTO &&
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
    umadv__inject_summary_write();
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
