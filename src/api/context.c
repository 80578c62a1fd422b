/*
 * Context creation and destruction, managed allocations and counters
 * (where the context stands in its life is api/lifecycle.c's).
 */
#include "api/context.h"
#include "numa/numa.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "profiler/callsite.h"

#define KNOWN_FIELDS \
    (UMADV_CONTEXT_FIELD_BUDGET | UMADV_CONTEXT_FIELD_POLICY | UMADV_CONTEXT_FIELD_DEVICE | \
     UMADV_CONTEXT_FIELD_SECTION_SIZE | UMADV_CONTEXT_FIELD_MAX_MANAGED | \
     UMADV_CONTEXT_FIELD_FLAGS)

static int section_size_valid(uint64_t size)
{
    return size >= UMADV_SECTION_SIZE_MIN && size <= UMADV_SECTION_SIZE_MAX &&
           (size & (size - 1)) == 0;
}

/* Which set field of @params is invalid, or NULL. */
static const char *params_invalid(const umadv_context_params_t *params)
{
    uint64_t mask = params->field_mask;

    if ((mask & ~(uint64_t)KNOWN_FIELDS) != 0)
        return "field_mask (bits this library does not know)";
    if ((mask & UMADV_CONTEXT_FIELD_POLICY) && (unsigned)params->policy >= UMADV_POLICY_COUNT)
        return "policy";
    if ((mask & UMADV_CONTEXT_FIELD_DEVICE) && (params->device < 0 || params->device > 1023))
        return "device (0 to 1023)";
    if ((mask & UMADV_CONTEXT_FIELD_SECTION_SIZE) && !section_size_valid(params->section_size))
        return "section_size (a power of two between 64K and 1G)";
    if ((mask & UMADV_CONTEXT_FIELD_FLAGS) && (params->flags & ~UMADV_CONTEXT_FLAG_HOST_ONLY))
        return "flags (unknown bits)";
    return NULL;
}

/* Fields the caller set override the environment. */
static umadv_status_t params_apply(umadv_context_t ctx, const umadv_context_params_t *params)
{
    const char *bad;
    uint64_t mask;

    if (params == NULL)
        return UMADV_OK;
    bad = params_invalid(params);
    if (bad != NULL) {
        umadv_error("umadv_context_create: invalid params.%s", bad);
        return UMADV_ERR_INVALID_PARAM;
    }
    mask = params->field_mask;
    if (mask & UMADV_CONTEXT_FIELD_BUDGET)
        ctx->config.budget = params->budget;
    if (mask & UMADV_CONTEXT_FIELD_POLICY)
        ctx->config.policy = params->policy;
    if (mask & UMADV_CONTEXT_FIELD_DEVICE)
        ctx->config.device = params->device;
    if (mask & UMADV_CONTEXT_FIELD_SECTION_SIZE)
        ctx->config.section_size = params->section_size;
    if (mask & UMADV_CONTEXT_FIELD_MAX_MANAGED)
        ctx->config.max_managed = params->max_managed;
    if (mask & UMADV_CONTEXT_FIELD_FLAGS)
        ctx->flags = params->flags;
    return UMADV_OK;
}

/* Find the device and check it can do managed memory. The current device
 * of the calling thread is the application's: it is left alone. */
static umadv_status_t device_open(umadv_context_t ctx)
{
    int count = 0, device = ctx->config.device;
    umadv_status_t status;

    status = ctx->ops->device_count(&count);
    if (status != UMADV_OK) {
        if (status == UMADV_ERR_NO_DEVICE)
            umadv_error("umadv_context_create: no usable cuda device (set "
                        "UMADV_CONTEXT_FLAG_HOST_ONLY to work on host memory)");
        return status;
    }
    if (device >= count) {
        umadv_error("umadv_context_create: device %d requested (UMADV_DEVICE, LOCAL_RANK or "
                    "params), but only %d cuda device(s) are visible", device, count);
        return UMADV_ERR_NO_DEVICE;
    }
    status = ctx->ops->get_device_props(device, &ctx->props);
    if (status != UMADV_OK)
        return status;
    if (!ctx->props.managed_memory) {
        umadv_error("device %d (%s) does not support managed memory", device, ctx->props.name);
        return UMADV_ERR_UNSUPPORTED;
    }
    if (!ctx->props.concurrent_managed_access)
        umadv_warn("device %d (%s) lacks concurrent managed access: prefetches and advice "
                   "will not be honoured", device, ctx->props.name);
    /* Evicted pages and host-preferred data go to the node nearest the GPU
     * (UMADV_HOST_NUMA); a bad node number fails here, naming the knob. */
    status = umadv__numa_host_place(ctx->props.pci_bus_id, ctx->config.host_numa, &ctx->numa);
    if (status != UMADV_OK)
        return status;
    return ctx->ops->driver_version(&ctx->driver_version);
}

static umadv_status_t pool_open(umadv_context_t ctx)
{
    umadv_pool_params_t params = {
        .ops          = ctx->ops,
        .section_size = ctx->config.section_size,
        .arena_size   = ctx->config.arena_size,
        .max_managed  = ctx->config.max_managed,
    };

    return umadv__pool_create(&params, &ctx->pool);
}

/*
 * PROCESS EXIT. A thread that calls CUDA while the process exits can
 * crash it: CUDA's exit handlers tear the runtime and the driver down
 * beneath it. A thread calling cudaMemGetInfo every 2 ms, as the
 * executor's monitor does, crashed 2 of 120 exits of a program that did
 * nothing else (18 of 120 in a tight loop; H200, driver 580.159.04,
 * 2026-11-29), and `umadv run` on examples/jacobi crashed after writing
 * its summary in 3 of 48 runs. So each context is on a list, and once
 * CUDA has started (its own exit handlers registered, to run after) the
 * first registers an exit handler that tells every live context the
 * process exits (UMADV_CYCLE_EV_EXIT): its replay stops, staged data
 * restored, the executor's threads and the pool's pinning ahead joined
 * (umadv__replay_exit), and nothing starts one again. Its blocks stay
 * usable, for the exit handlers that run after. A child forked from the
 * process stops only the contexts it made itself: its copies of the
 * others have no threads.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static umadv_context_t live_first;  /* live_lock */
static pid_t           handler_pid; /* the process whose handler is registered */

void umadv__contexts_exit(void)
{
    pid_t self = getpid();
    unsigned n = 0;

    pthread_mutex_lock(&live_lock);
    for (umadv_context_t ctx = live_first; ctx != NULL; ctx = ctx->live_next) {
        if (ctx->live_pid != self)
            continue; /* a forked child's copy of its parent's */
        pthread_mutex_lock(&ctx->lock);
        umadv__cycle_fire(ctx, UMADV_CYCLE_EV_EXIT, NULL);
        pthread_mutex_unlock(&ctx->lock);
        n++;
    }
    pthread_mutex_unlock(&live_lock);
    umadv_debug("process exit: %u live contexts stopped replaying", n);
}

static void live_add(umadv_context_t ctx)
{
    pthread_mutex_lock(&live_lock);
    ctx->live_pid = getpid();
    if (handler_pid != ctx->live_pid) {
        if (atexit(umadv__contexts_exit) == 0)
            handler_pid = ctx->live_pid;
        else
            umadv_warn("no exit handler: a replay running when the process exits may "
                       "crash it (umadv(7), PROCESS EXIT)");
    }
    ctx->live_next = live_first;
    live_first = ctx;
    pthread_mutex_unlock(&live_lock);
}

static void live_remove(umadv_context_t ctx)
{
    pthread_mutex_lock(&live_lock);
    for (umadv_context_t *p = &live_first; *p != NULL; p = &(*p)->live_next) {
        if (*p == ctx) {
            *p = ctx->live_next;
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
}

UMADV_API umadv_status_t umadv_context_create(const umadv_context_params_t *params,
                                              umadv_context_t *ctx_p)
{
    umadv_context_t ctx;
    umadv_status_t status;

    if (ctx_p == NULL)
        return UMADV_ERR_INVALID_PARAM;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return UMADV_ERR_NO_MEMORY;
    status = umadv__config_load(&ctx->config);
    if (status != UMADV_OK)
        goto err_free_ctx;
    status = params_apply(ctx, params);
    if (status != UMADV_OK)
        goto err_free_ctx;
    status = umadv__config_apply_log(&ctx->config);
    if (status != UMADV_OK)
        goto err_free_ctx;
    ctx->ops = umadv__cuda_ops_select(ctx->flags & UMADV_CONTEXT_FLAG_HOST_ONLY);
    status = device_open(ctx);
    if (status != UMADV_OK)
        goto err_free_ctx;
    status = pool_open(ctx);
    if (status != UMADV_OK)
        goto err_free_ctx;
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_mutex_init(&ctx->copies_lock, NULL);
    ctx->stats.size = sizeof(ctx->stats);
    umadv__cycle_init(ctx);
    umadv__ctx_profile_open(ctx);
    umadv__replay_init(ctx);
    live_add(ctx); /* device_open started CUDA */
    umadv_debug("context on device %d (%s, %s backend), policy %s, section %llu bytes",
                ctx->config.device, ctx->props.name, ctx->ops->name,
                umadv_policy_name(ctx->config.policy),
                (unsigned long long)ctx->config.section_size);
    *ctx_p = ctx;
    return UMADV_OK;

err_free_ctx:
    free(ctx);
    return status;
}

/* The block that begins at @ptr, or NULL (logged in @caller's name). */
static umadv_ctx_alloc_t *live_block(umadv_context_t ctx, void *ptr, const char *caller)
{
    umadv_pool_loc_t loc;

    if (umadv__pool_lookup(ctx->pool, ptr, &loc) != UMADV_OK || loc.base != ptr) {
        umadv_error("%s(%p): not a live umadv allocation", caller, ptr);
        return NULL;
    }
    return (umadv_ctx_alloc_t *)(uintptr_t)loc.user;
}

/* ---- HOLDS --------------------------------------------------------------
 * umadv_hold_resident records an event of the block's own on the holder's
 * stream. Whatever evicts the block afterwards waits for it first: the
 * replay's eviction lane (exec/worker.c, before its call), and the
 * profiling pass, whose evictions are queued on the legacy stream behind
 * a wait for every hold (umadv__ctx_holds_order). Held blocks are listed
 * in ctx->held for the latter; a block leaves the list when it is freed.
 * An event that has completed costs a wait nothing, so a hold needs no
 * release. */

static void hold_drop(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    if (alloc->held != 0) {
        umadv_ctx_alloc_t *last = ctx->held[--ctx->nheld];

        ctx->held[alloc->held - 1] = last;
        last->held = alloc->held;
        alloc->held = 0;
    }
    if (alloc->hold != NULL)
        ctx->ops->event_destroy(alloc->hold);
    alloc->hold = NULL;
}

static umadv_status_t hold_record(umadv_context_t ctx, umadv_ctx_alloc_t *alloc, void *stream)
{
    umadv_status_t status;

    if (alloc->held == 0) {
        status = umadv__array_reserve((void **)&ctx->held, &ctx->held_cap, ctx->nheld + 1,
                                      sizeof(*ctx->held));
        if (status != UMADV_OK)
            return status;
    }
    if (alloc->hold == NULL && (status = ctx->ops->event_create(&alloc->hold)) != UMADV_OK) {
        alloc->hold = NULL;
        return status;
    }
    if (alloc->held == 0) {
        ctx->held[ctx->nheld++] = alloc;
        alloc->held = (uint32_t)ctx->nheld;
    }
    /* On failure the event keeps its last record (none: a wait on it
     * returns at once); the executor may be waiting on it, so it stays. */
    return ctx->ops->event_record(alloc->hold, (umadv_stream_t)stream);
}

UMADV_API umadv_status_t umadv_hold_resident(umadv_context_t ctx, void *ptr, void *stream)
{
    umadv_ctx_alloc_t *alloc;
    umadv_status_t status;

    if (ctx == NULL || ptr == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    if ((alloc = live_block(ctx, ptr, "umadv_hold_resident")) == NULL) {
        pthread_mutex_unlock(&ctx->lock);
        return UMADV_ERR_NOT_FOUND;
    }
    status = hold_record(ctx, alloc, stream);
    umadv__replay_hold(ctx, alloc);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

void umadv__ctx_holds_order(umadv_context_t ctx, void *stream)
{
    for (size_t i = 0; i < ctx->nheld; i++) {
        if (ctx->ops->stream_wait_event((umadv_stream_t)stream, ctx->held[i]->hold) !=
            UMADV_OK)
            return; /* logged; the eviction is coherent, only no longer ordered */
    }
}

static void alloc_record_free(void *arg, void *base, uint64_t size, uint64_t user)
{
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;

    hold_drop(arg, alloc);
    free(alloc); /* its tag with it */
}

UMADV_API void umadv_context_destroy(umadv_context_t ctx)
{
    if (ctx == NULL)
        return;
    live_remove(ctx);
    umadv__cycle_fire(ctx, UMADV_CYCLE_EV_DESTROY, NULL);
    umadv__ctx_ahead_drop(ctx);
    umadv__pool_foreach(ctx->pool, alloc_record_free, ctx);
    umadv__pool_destroy(ctx->pool);
    pthread_mutex_destroy(&ctx->lock);
    pthread_mutex_destroy(&ctx->copies_lock);
    free(ctx->copies);
    free(ctx->step_ranges);
    free(ctx->complete_steps);
    free(ctx->held);
    free(ctx);
}

/* The record and a copy of its tag in one allocation: one malloc and
 * one free per block, PyTorch's thousands an iteration. Its block comes
 * after (ctx_malloc). */
static umadv_status_t alloc_record_new(uint64_t size, const char *tag,
                                       umadv_ctx_alloc_t **alloc_p)
{
    size_t tag_bytes = tag != NULL ? strlen(tag) + 1 : 0;
    umadv_ctx_alloc_t *alloc = calloc(1, sizeof(*alloc) + tag_bytes);

    if (alloc == NULL)
        return UMADV_ERR_NO_MEMORY;
    if (tag != NULL)
        alloc->tag = memcpy(alloc + 1, tag, tag_bytes);
    alloc->size     = size;
    alloc->trace_id = UMADV_CTX_NO_TRACE_ID;
    alloc->kept_id  = UMADV_CTX_NO_TRACE_ID;
    *alloc_p = alloc;
    return UMADV_OK;
}

static umadv_status_t ctx_malloc(umadv_context_t ctx, size_t size, const char *tag,
                                 const char *site, umadv_ctx_alloc_t **alloc_p)
{
    umadv_ctx_alloc_t *alloc;
    umadv_status_t status;

    status = alloc_record_new(size, tag, &alloc);
    if (status != UMADV_OK)
        return status;
    status = umadv__pool_malloc_user(ctx->pool, size, (uintptr_t)alloc, &alloc->ptr,
                                     &alloc->arena);
    if (status != UMADV_OK)
        goto err_free_record;
    alloc->site = site;
    status = umadv__cycle_fire(ctx, UMADV_CYCLE_EV_ALLOC, alloc);
    if (status != UMADV_OK)
        goto err_pool_free;
    *alloc_p = alloc;
    return UMADV_OK;

err_pool_free: /* the life cycle let go of it */
    umadv__pool_free(ctx->pool, alloc->ptr);
err_free_record:
    free(alloc);
    return status;
}

/* The block's stageable mark, told to the recording and the replay. */
static void alloc_stageable(umadv_context_t ctx, umadv_ctx_alloc_t *alloc, int stageable)
{
    alloc->stageable = stageable != 0;
    umadv__ctx_record_stageable(ctx, alloc);
    umadv__replay_stageable(ctx, alloc); /* off: its data is back when this returns */
}

/* ---- ALLOCATION CALLS ---------------------------------------------------
 * PyTorch's allocator entry points make an allocation and a free per
 * tensor, thousands an iteration on some models, on the application's
 * thread: their time, lock waits included, is umadv's host cost there
 * (umadv_stats_t.alloc_ns). Taken with the lock held, before it goes. */

static void alloc_call_end(umadv_context_t ctx, uint64_t start_ns)
{
    ctx->stats.alloc_calls++;
    ctx->stats.alloc_ns += umadv__now_ns() - start_ns;
    pthread_mutex_unlock(&ctx->lock);
}

/* In profile mode, for the report: where the application allocated, a
 * backtrace each. A macro, so that the frame it starts from is the API
 * entry's own (umadv's, skipped by its name) whatever is inlined. */
#define ALLOC_SITE(ctx) \
    ((ctx)->config.profile_output[0] != '\0' ? umadv__callsite_capture(0) : NULL)

/* An allocation, marked stageable with it when @stageable. */
static umadv_status_t malloc_call(umadv_context_t ctx, size_t size, const char *tag,
                                  const char *site, int stageable, void **ptr_p)
{
    uint64_t start = umadv__now_ns();
    umadv_ctx_alloc_t *alloc;
    umadv_status_t status;

    pthread_mutex_lock(&ctx->lock);
    status = ctx_malloc(ctx, size, tag, site, &alloc);
    if (status == UMADV_OK) {
        if (stageable)
            alloc_stageable(ctx, alloc, 1);
        *ptr_p = alloc->ptr;
    }
    alloc_call_end(ctx, start);
    return status;
}

UMADV_API umadv_status_t umadv_malloc(umadv_context_t ctx, size_t size, const char *tag,
                                      void **ptr_p)
{
    if (ctx == NULL || ptr_p == NULL || size == 0)
        return UMADV_ERR_INVALID_PARAM;
    return malloc_call(ctx, size, tag, ALLOC_SITE(ctx), 0, ptr_p);
}

umadv_status_t umadv__malloc_stageable(umadv_context_t ctx, size_t size, const char *tag,
                                       void **ptr_p)
{
    return malloc_call(ctx, size, tag, ALLOC_SITE(ctx), 1, ptr_p);
}

static umadv_status_t ctx_free(umadv_context_t ctx, void *ptr)
{
    umadv_ctx_alloc_t *alloc = live_block(ctx, ptr, "umadv_free");

    if (alloc == NULL)
        return UMADV_ERR_NOT_FOUND;
    umadv__cycle_fire(ctx, UMADV_CYCLE_EV_FREE, alloc); /* no migration touches it after */
    umadv__pool_free(ctx->pool, ptr);
    alloc_record_free(ctx, NULL, 0, (uint64_t)(uintptr_t)alloc);
    return UMADV_OK;
}

UMADV_API umadv_status_t umadv_free(umadv_context_t ctx, void *ptr)
{
    uint64_t start = umadv__now_ns();
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    if (ptr == NULL)
        return UMADV_OK;
    pthread_mutex_lock(&ctx->lock);
    status = ctx_free(ctx, ptr);
    alloc_call_end(ctx, start);
    return status;
}

UMADV_API umadv_status_t umadv_set_stageable(umadv_context_t ctx, void *ptr, int stageable)
{
    uint64_t start = umadv__now_ns();
    umadv_ctx_alloc_t *alloc;

    if (ctx == NULL || ptr == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    if ((alloc = live_block(ctx, ptr, "umadv_set_stageable")) == NULL) {
        alloc_call_end(ctx, start);
        return UMADV_ERR_NOT_FOUND;
    }
    alloc_stageable(ctx, alloc, stageable);
    alloc_call_end(ctx, start);
    return UMADV_OK;
}

/* The site is the thread's, not a context's: PyTorch's allocator reaches
 * a context the caller does not know. */
UMADV_API umadv_status_t umadv_set_alloc_site(const char *site)
{
    if (site != NULL && strlen(site) >= UMADV_CALLSITE_TEXT)
        return UMADV_ERR_INVALID_PARAM;
    umadv__callsite_set_python(site);
    return UMADV_OK;
}

UMADV_API umadv_status_t umadv_release_cached(umadv_context_t ctx, uint64_t *released_p)
{
    uint64_t released;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    released = umadv__pool_release_empty(ctx->pool, UINT64_MAX);
    pthread_mutex_unlock(&ctx->lock);
    if (released_p != NULL)
        *released_p = released;
    return UMADV_OK;
}

UMADV_API umadv_status_t umadv_get_stats(umadv_context_t ctx, umadv_stats_t *stats)
{
    umadv_pool_stats_t pool;
    umadv_stats_t now;
    size_t known;

    if (ctx == NULL || stats == NULL || stats->size < sizeof(stats->size))
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    umadv__pool_get_stats(ctx->pool, &pool);
    now = ctx->stats;
    umadv__replay_stats(ctx, &now);
    pthread_mutex_unlock(&ctx->lock);
    now.managed_bytes = pool.bytes_in_use;
    now.managed_peak  = pool.bytes_peak;
    now.allocations   = pool.blocks;
    now.managed_held  = pool.arena_bytes;
    now.managed_held_peak = pool.arena_peak;
    /* Copy what the caller's struct has room for; its size stays its own. */
    known = UMADV_MIN(stats->size, sizeof(now));
    now.size = stats->size;
    memcpy(stats, &now, known);
    return UMADV_OK;
}
