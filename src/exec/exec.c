/*
 * The executor's life cycle, binding, and the application's calls.
 *
 * THREADING MODEL
 * Four kinds of threads touch an executor:
 *  - the application's thread (the one that marks iterations and steps;
 *    api/replay.c calls in with the context's lock held, which is always
 *    taken before the executor's, never after): it queues ops and waits
 *    in umadv__exec_step_wait for the migrations its step needs, and for
 *    nothing else. Given the step's stream (umadv__exec_step_wait_on), it
 *    first serves the step's fetches that need no lane itself: fresh
 *    populations go on that stream, ordered before the step's work
 *    (worker.c, umadv__exec_fetch_on_step). It records the step-end
 *    events. Binding and unbinding
 *    come from whichever thread allocates or frees, serialised by the
 *    context's lock;
 *  - the fetch lane (worker.c), with its own stream: prefetches to the GPU
 *    and advice sets, earliest need first, only when they fit the budget;
 *    the small copies of one need step go as one batch call (plan.h,
 *    BATCHES);
 *  - the eviction lane, with its own stream: prefetches to the host and
 *    advice unsets (plan.h, NONE) in FIFO order, each after the event of
 *    the step that last used the data (cudaEventSynchronize on the
 *    lane's thread). A fetch or a set over a section whose unset is
 *    still queued waits for it, so advice is never undone after it was
 *    set again, nor data fetched while the host is still preferred;
 *  - the monitor: samples cudaMemGetInfo every monitor_period_ns.
 * Two lanes because cudaMemPrefetchAsync blocks its caller for the whole
 * migration: one thread could not evict while it fetches.
 * STAGING (stage.c; schedule/core.h, STAGING): the eviction lane evicts
 * stageable live data by copying it into a pinned pool and discarding the
 * range, the fetch lane restores it; a step's wait ends with a last check
 * that nothing it touches is still staged (restored on the application's
 * thread if so), and whatever ends the executor, or a live block's role,
 * restores first.
 * PLACEMENT: with params.numa (numa/numa.h), the lanes and the monitor
 * bind themselves to the cores nearest the GPU when they start, and
 * evictions and host-preferred advice name the host NUMA node nearest it,
 * so that evicted pages do not cross the inter-socket link on every
 * migration. A binding that fails is a warning: the thread runs unbound.
 *
 * LOCKING: umadv_exec.lock protects everything in struct umadv_exec except
 * the immutable parameters and the lanes' streams (each lane's own). Every
 * CUDA call that can take long (prefetch, stream or event synchronize,
 * advise, mem_get_info) is made with the lock dropped; the blocks under a
 * call are marked busy first, and unbinding a block waits until it is not
 * busy, so no call ever runs on memory that has been freed. One condition
 * variable (cond, on the monotonic clock) is broadcast on every change of
 * section states or lanes (umadv__exec_changed); the waiting step, drains
 * and unbinding wait on it. Each lane sleeps on a condition variable of
 * its own (wake), signalled by a push to its queue, by a change while it
 * has ops queued, and by the stop: a step's decisions no longer wake a
 * lane with nothing queued (on the host backend, bench/api_cost, plan
 * with two steps a block: 1235-1251 us an iteration against 1527-1624
 * with every push broadcast to both lanes). mon_cond only wakes the
 * monitor to stop.
 *
 * FAILURE: a CUDA call that fails (logged by cuda_ops with its name and
 * the CUDA error) breaks the executor: queues are dropped, nothing more
 * is issued, steps stop waiting. The application runs on as plain managed
 * memory.
 */
#include "exec/exec_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define EXEC_WAIT_TIMEOUT_DEFAULT (UINT64_C(10) * 1000000000u)

void umadv__exec_fail(umadv_exec_t *e, const char *what)
{
    if (e->broken)
        return;
    e->broken = 1;
    e->stats.cuda_errors++;
    umadv_warn("executor: %s failed: umadv stops migrating, plain managed memory until the "
               "next umadv_set_policy() or plan", what);
    umadv__exec_queue_clear(e, &e->fetch);
    umadv__exec_queue_clear(e, &e->evict);
    umadv__exec_changed(e);
}

/* ---- life cycle ------------------------------------------------------- */

/* The replay core checks the trace, the steps, the policy and the
 * schedule (UMADV_ERR_INVALID_PARAM). */
static umadv_status_t core_init(umadv_exec_t *e)
{
    umadv_core_params_t cp = {.trace = e->p.trace, .first_step = e->p.first_step,
                              .nsteps = e->p.nsteps, .policy = e->p.policy,
                              .budget = e->p.budget, .schedule = e->p.schedule,
                              .stage = e->p.stage, .observe = e->p.decisions, .observe_arg = e->p.decisions_arg};

    if (e->p.ops == NULL)
        return UMADV_ERR_INVALID_PARAM;
    return umadv__core_init(&e->core, &cp);
}

static umadv_status_t arrays_alloc(umadv_exec_t *e)
{
    e->binds = calloc(e->trace->nallocs + 1, sizeof(*e->binds));
    if (e->binds == NULL)
        return UMADV_ERR_NO_MEMORY;
    umadv__tree_init(&e->bound, (uintptr_t)e);
    return umadv__exec_stage_init(e);
}

static void sync_init(umadv_exec_t *e)
{
    pthread_condattr_t attr;

    pthread_mutex_init(&e->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cond, &attr);
    pthread_cond_init(&e->mon_cond, &attr);
    pthread_cond_init(&e->fetch.wake, NULL);
    pthread_cond_init(&e->evict.wake, NULL);
    pthread_condattr_destroy(&attr);
}

/* The wakes are made with the lock held. A woken lane may run into the
 * lock and sleep again, but holding the step calls' wakes until they
 * unlock did not pay on a GPU: on the host backend it shortened plan's
 * iteration by a tenth, on an H200 no model ran faster (densenet121,
 * GPT-2, ResNet-50, VGG-16, two rounds; the lock found held three times
 * as often; bench/RESULTS.md, twenty-ninth session). */
void umadv__exec_changed(umadv_exec_t *e)
{
    pthread_cond_broadcast(&e->cond);
    if (umadv__exec_queue_peek(&e->fetch) != NULL)
        pthread_cond_signal(&e->fetch.wake);
    if (umadv__exec_queue_peek(&e->evict) != NULL)
        pthread_cond_signal(&e->evict.wake);
}

static void threads_stop(umadv_exec_t *e)
{
    pthread_mutex_lock(&e->lock);
    e->stop = 1;
    pthread_cond_broadcast(&e->cond);
    pthread_cond_signal(&e->fetch.wake);
    pthread_cond_signal(&e->evict.wake);
    pthread_cond_broadcast(&e->mon_cond);
    pthread_mutex_unlock(&e->lock);
    if (e->fetch.started)
        pthread_join(e->fetch.thread, NULL);
    if (e->evict.started)
        pthread_join(e->evict.thread, NULL);
    if (e->monitor_started)
        pthread_join(e->monitor, NULL);
    e->fetch.started = e->evict.started = e->monitor_started = 0;
}

static umadv_status_t threads_start(umadv_exec_t *e)
{
    if (pthread_create(&e->fetch.thread, NULL, umadv__exec_fetch_main, e) != 0)
        goto err;
    e->fetch.started = 1;
    if (pthread_create(&e->evict.thread, NULL, umadv__exec_evict_main, e) != 0)
        goto err_stop;
    e->evict.started = 1;
    if (e->p.monitor_period_ns == 0)
        return UMADV_OK;
    if (pthread_create(&e->monitor, NULL, umadv__exec_monitor_main, e) != 0)
        goto err_stop;
    e->monitor_started = 1;
    return UMADV_OK;

err_stop:
    threads_stop(e);
err:
    umadv_error("executor: cannot start a thread: %m");
    return UMADV_ERR_NO_MEMORY;
}

static void lane_free(exec_lane_t *lane)
{
    free(lane->queue.ops);
    free(lane->pieces);
    free(lane->batch_ptrs);
    free(lane->batch_sizes);
}

static void exec_free(umadv_exec_t *e)
{
    lane_free(&e->fetch);
    lane_free(&e->evict);
    lane_free(&e->app);
    umadv__exec_stage_cleanup(e);
    umadv__core_cleanup(&e->core);
    umadv__pages_cleanup(&e->pages);
    free(e->binds);
    free(e);
}

umadv_status_t umadv__exec_create(const umadv_exec_params_t *params, umadv_exec_t **exec_p)
{
    umadv_exec_t *e;
    umadv_status_t status;

    if (params->stage_cache != NULL) /* a pool pinned ahead joins it (stage.c) */
        umadv__exec_stage_cache_settle(params->stage_cache);
    e = calloc(1, sizeof(*e));
    if (e == NULL)
        return UMADV_ERR_NO_MEMORY;
    e->p = *params;
    e->trace = params->trace;
    status = core_init(e);
    if (status != UMADV_OK) {
        free(e);
        return status;
    }
    e->p.budget = e->core.p.budget; /* resolved: none under oracle */
    /* Until an iteration begins no step is followed, so no step could
     * wait for staged data: the start's evictions migrate. */
    umadv__core_stage_pause(&e->core, 1);
    if (e->p.max_call_bytes == 0)
        e->p.max_call_bytes = EXEC_MAX_CALL_DEFAULT;
    if (e->p.wait_timeout_ns == 0)
        e->p.wait_timeout_ns = EXEC_WAIT_TIMEOUT_DEFAULT;
    e->fetch.busy_need = e->evict.busy_need = EXEC_KEY_NONE;
    status = arrays_alloc(e);
    if (status != UMADV_OK)
        goto err_free;
    sync_init(e);
    status = threads_start(e);
    if (status != UMADV_OK)
        goto err_sync;
    *exec_p = e;
    return UMADV_OK;

err_sync:
    pthread_cond_destroy(&e->cond);
    pthread_cond_destroy(&e->mon_cond);
    pthread_cond_destroy(&e->fetch.wake);
    pthread_cond_destroy(&e->evict.wake);
    pthread_mutex_destroy(&e->lock);
err_free:
    exec_free(e);
    return status;
}

static void advice_undo(umadv_exec_t *e, uintptr_t base, uint64_t size, uint32_t advised);

void umadv__exec_destroy(umadv_exec_t *e)
{
    if (e == NULL)
        return;
    threads_stop(e);
    /* The threads are gone: no lock needed from here on; the ranges hold
     * their data again before anything else happens to them. */
    umadv__exec_restore_all(e);
    for (uint32_t a = 0; a < e->trace->nallocs; a++) {
        if (e->binds[a].base != 0)
            advice_undo(e, e->binds[a].base, e->binds[a].size, e->binds[a].advised);
    }
    umadv__exec_queue_clear(e, &e->fetch);
    umadv__exec_queue_clear(e, &e->evict);
    umadv__exec_event_put(e, e->last_event);
    umadv__exec_events_destroy(e);
    pthread_cond_destroy(&e->cond);
    pthread_cond_destroy(&e->mon_cond);
    pthread_cond_destroy(&e->fetch.wake);
    pthread_cond_destroy(&e->evict.wake);
    pthread_mutex_destroy(&e->lock);
    exec_free(e);
}

/* ---- binding ------------------------------------------------------------ */

/* Advice stays on memory after we are gone; the pool hands the pages to
 * the next block, which must not inherit read-mostly. Undone on the
 * calling thread: cheap, and the block must be clean before it is reused. */
static void advice_undo(umadv_exec_t *e, uintptr_t base, uint64_t size, uint32_t advised)
{
    void *ptr = (void *)base;

    if (advised & (1u << UMADV_ADVICE_READ_MOSTLY))
        e->p.ops->advise(ptr, size, UMADV_CUDA_ADVISE_UNSET_READ_MOSTLY, e->p.device);
    if (advised & ((1u << UMADV_ADVICE_PREFERRED_HOST) | (1u << UMADV_ADVICE_PREFERRED_DEVICE)))
        e->p.ops->advise(ptr, size, UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION, e->p.device);
    if (advised & (1u << UMADV_ADVICE_ACCESSED_BY))
        e->p.ops->advise(ptr, size, UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY, e->p.device);
}

/* Called with the lock held; returns with it held. A @live block's
 * staged sections are restored first; a dead one's staging is dropped. */
static void unbind_locked(umadv_exec_t *e, uint32_t alloc, int live)
{
    exec_bind_t *b = &e->binds[alloc];
    exec_bind_t old;

    if (live)
        umadv__exec_restore_alloc(e, alloc);
    e->waiting++;
    while (b->base != 0 && b->busy > 0)
        pthread_cond_wait(&e->cond, &e->lock);
    e->waiting--;
    if (b->base == 0)
        return;
    old = *b;
    umadv_trace("executor: alloc %u unbound from [%p, +%llu), %s", alloc, (void *)old.base,
                (unsigned long long)old.size, live ? "live" : "dead");
    umadv__tree_remove(&e->bound, &b->node);
    b->base = 0;
    b->advised = 0;
    b->hold = NULL;
    umadv__exec_stage_release(e, alloc); /* live: restored above; dead: dropped */
    umadv__core_unbind(&e->core, alloc);
    umadv__exec_wake(e);
    if (old.advised != 0) {
        pthread_mutex_unlock(&e->lock);
        advice_undo(e, old.base, old.size, old.advised);
        pthread_mutex_lock(&e->lock);
    }
}

void umadv__exec_hold(umadv_exec_t *e, uint32_t alloc, umadv_event_t event)
{
    if (alloc >= e->trace->nallocs)
        return;
    pthread_mutex_lock(&e->lock);
    if (e->binds[alloc].base != 0)
        e->binds[alloc].hold = event;
    pthread_mutex_unlock(&e->lock);
}

void umadv__exec_unbind(umadv_exec_t *e, uint32_t alloc)
{
    if (alloc >= e->trace->nallocs)
        return;
    pthread_mutex_lock(&e->lock);
    unbind_locked(e, alloc, 0);
    pthread_mutex_unlock(&e->lock);
}

/* Section @s of a block just bound lies where a fetch left pages on the
 * GPU and nothing evicted them since (schedule/pages.c): it is there, if the
 * budget has room for it. Not under a budgeted plan: the schedule counted
 * the block's sections in when its fresh fetch populates them, as the
 * simulator does, and sections taken in earlier filled the budget the
 * plan had given to other fetches, which were then given up (VGG-16 in C
 * at batch 128, 25%: blocks bound up to the budget, seven fetches of up
 * to 392 MiB given up per iteration, their steps faulting for 2.7 s each,
 * 8.2 s per iteration for 1.3). The fresh fetch then counts them in
 * without a call (worker.c, populate_on_stream). */
static int left_on_gpu(const umadv_exec_t *e, uint32_t s)
{
    const umadv_trace_section_t *sec = &e->trace->sections[s];
    uintptr_t addr = e->binds[sec->alloc].base + sec->offset;

    if (e->p.policy == UMADV_POLICY_PLAN && e->core.p.budget != 0)
        return 0;
    return umadv__core_fits(&e->core, sec->size) &&
           umadv__pages_on_gpu(&e->pages, addr, sec->size);
}

umadv_status_t umadv__exec_bind(umadv_exec_t *e, uint32_t alloc, void *base, uint64_t size,
                                void *arena, int maybe_resident)
{
    const umadv_trace_alloc_t *t;

    if (alloc >= e->trace->nallocs || base == NULL)
        return UMADV_ERR_INVALID_PARAM;
    t = &e->trace->allocs[alloc];
    if (t->size != size)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&e->lock);
    unbind_locked(e, alloc, 1);
    e->binds[alloc] = (exec_bind_t){.base = (uintptr_t)base, .size = size,
                                    .arena = (uintptr_t)arena};
    e->binds[alloc].node.key_hi = (uintptr_t)base;
    e->binds[alloc].node.key_lo = alloc; /* unique, whatever the blocks */
    umadv__tree_insert(&e->bound, &e->binds[alloc].node);
    umadv_trace("executor: alloc %u bound to [%p, +%llu) at iteration %llu step %u", alloc, base,
                (unsigned long long)size, (unsigned long long)e->iteration, e->step);
    umadv__core_bind(&e->core, alloc); /* decides the plan's setup advice */
    umadv__exec_queue_decisions(e);
    for (uint32_t i = 0; i < t->nsections; i++) {
        if (maybe_resident || left_on_gpu(e, t->first_section + i))
            umadv__core_set_state(&e->core, t->first_section + i, UMADV_SEC_RESIDENT);
    }
    pthread_mutex_unlock(&e->lock);
    return UMADV_OK;
}

int umadv__exec_locate(umadv_exec_t *e, uintptr_t addr, uint32_t *alloc_p, uint32_t *section_p)
{
    const umadv_tree_node_t *n;
    int found = 0;

    pthread_mutex_lock(&e->lock);
    n = umadv__tree_floor(&e->bound, addr, UINT64_MAX);
    if (n != NULL) {
        const exec_bind_t *b = (const exec_bind_t *)n; /* node is the first member */

        found = addr >= b->base && addr - b->base < b->size;
        *alloc_p = (uint32_t)n->key_lo;
        *section_p = (uint32_t)((addr - b->base) / e->trace->section_size);
    }
    pthread_mutex_unlock(&e->lock);
    return found;
}

static int schedule_advises(const umadv_schedule_t *s)
{
    return s->advise_ops > 0 || s->nsetup > 0;
}

umadv_status_t umadv__exec_schedule_replace(umadv_exec_t *e, const umadv_schedule_t *next,
                                            uint64_t budget, void (*install)(void *arg),
                                            void *arg)
{
    umadv_status_t status = UMADV_ERR_STATE;

    pthread_mutex_lock(&e->lock);
    if (!e->broken && e->p.policy == UMADV_POLICY_PLAN && e->p.schedule != NULL &&
        budget == e->p.budget && next->nsteps == e->p.nsteps &&
        next->first_step == e->p.first_step && !schedule_advises(e->p.schedule) &&
        !schedule_advises(next)) {
        install(arg);
        umadv__core_schedule_changed(&e->core);
        status = UMADV_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return status;
}

/* ---- the application's calls ---------------------------------------------- */

umadv_status_t umadv__exec_start(umadv_exec_t *e, umadv_stream_t stream)
{
    pthread_mutex_lock(&e->lock);
    umadv__exec_step_ended(e, stream);
    if (!e->broken) {
        umadv__core_start(&e->core);
        umadv__exec_queue_decisions(e);
    }
    umadv__exec_end_settle(e);
    pthread_mutex_unlock(&e->lock);
    return UMADV_OK;
}

/* Steady state is every replayed iteration after the first. Demand
 * faults by design: its faults say nothing of the profile. */
static int reprofile_due(umadv_exec_t *e)
{
    if (!e->begun || e->iteration == 0 || e->p.reprofile_faults == 0 ||
        e->p.policy == UMADV_POLICY_DEMAND || e->iter_faults <= e->p.reprofile_faults)
        return 0;
    umadv_info("executor: %llu unexpected gpu faults in replayed iteration %llu (threshold "
               "%llu, UMADV_REPROFILE_FAULTS): the pattern drifted, profiling again",
               (unsigned long long)e->iter_faults, (unsigned long long)e->iteration,
               (unsigned long long)e->p.reprofile_faults);
    return 1;
}

/* The counters: the lanes' own and the replay core's. */
static void stats_now(const umadv_exec_t *e, umadv_exec_stats_t *stats)
{
    *stats = e->stats;
    stats->resident = e->core.resident;
    stats->resident_peak = e->core.peak;
    stats->drift_ops += e->core.drift_ops;
    stats->dropped_bytes += e->core.dropped_bytes;
    stats->unseen_held_bytes = e->core.unseen_held_bytes;
}

/* What the iteration that ended cost (UMADV_LOG=debug): where a replay
 * loses time shows here first. */
static void log_iteration(umadv_exec_t *e)
{
    const umadv_exec_stats_t *a = &e->iter_start;
    umadv_exec_stats_t now_stats;
    const umadv_exec_stats_t *b = &now_stats;
    uint64_t now = umadv__now_ns();

    stats_now(e, &now_stats);
    if (e->begun)
        umadv_debug("executor: iteration %llu: %.3f ms, %u steps; %llu waits %.3f ms; "
                    "fetched %.1f MiB in %llu calls (%llu batches), fresh %.1f MiB; "
                    "evicted %.1f MiB in %llu calls; staged %.1f MiB, restored %.1f MiB "
                    "(%.1f MiB late), stageable but migrated %.1f MiB (no slot), %.1f MiB "
                    "(a copy's) and %.1f MiB (a step may reach it unseen); dropped %.1f MiB, "
                    "released dead %.1f MiB; placed before the application's copies %.1f MiB; "
                    "%llu advice calls; "
                    "%llu budget skips; %llu drift ops; %llu faults; lanes busy: fetch %.3f ms, "
                    "evict %.3f ms; %llu step calls found the lock held, %.3f ms",
                    (unsigned long long)e->iteration, (double)(now - e->iter_start_ns) / 1e6,
                    e->step, (unsigned long long)(b->waits - a->waits),
                    (double)(b->wait_ns - a->wait_ns) / 1e6,
                    (double)(b->fetched_bytes - a->fetched_bytes) / 1048576.0,
                    (unsigned long long)(b->fetch_calls - a->fetch_calls),
                    (unsigned long long)(b->batch_calls - a->batch_calls),
                    (double)(b->fresh_bytes - a->fresh_bytes) / 1048576.0,
                    (double)(b->evicted_bytes - a->evicted_bytes) / 1048576.0,
                    (unsigned long long)(b->evict_calls - a->evict_calls),
                    (double)(b->staged_bytes - a->staged_bytes) / 1048576.0,
                    (double)(b->restored_bytes - a->restored_bytes) / 1048576.0,
                    (double)(b->late_restored_bytes - a->late_restored_bytes) / 1048576.0,
                    (double)(b->stage_fallback_bytes - a->stage_fallback_bytes) / 1048576.0,
                    (double)(b->copy_held_bytes - a->copy_held_bytes) / 1048576.0,
                    (double)(b->unseen_held_bytes - a->unseen_held_bytes) / 1048576.0,
                    (double)(b->dropped_bytes - a->dropped_bytes) / 1048576.0,
                    (double)(b->released_bytes - a->released_bytes) / 1048576.0,
                    (double)(b->app_placed_bytes - a->app_placed_bytes) / 1048576.0,
                    (unsigned long long)(b->advise_calls - a->advise_calls),
                    (unsigned long long)(b->budget_skips - a->budget_skips),
                    (unsigned long long)(b->drift_ops - a->drift_ops),
                    (unsigned long long)e->iter_faults,
                    (double)(b->fetch_busy_ns - a->fetch_busy_ns) / 1e6,
                    (double)(b->evict_busy_ns - a->evict_busy_ns) / 1e6,
                    (unsigned long long)(b->lock_waits - a->lock_waits),
                    (double)(b->lock_wait_ns - a->lock_wait_ns) / 1e6);
    e->iter_start = now_stats;
    e->iter_start_ns = now;
}

int umadv__exec_iteration_begin(umadv_exec_t *e)
{
    int due;

    pthread_mutex_lock(&e->lock);
    log_iteration(e);
    due = reprofile_due(e);
    e->iteration = e->begun ? e->iteration + 1 : 0;
    e->begun = 1;
    umadv__core_stage_pause(&e->core, 0); /* the steps are followed again */
    e->step = 0;
    e->iter_faults = 0;
    pthread_mutex_unlock(&e->lock);
    return due;
}

/* The lock, taken by an application thread in a step call: how much of
 * the step calls' time (replay.c's debug line splits it) is the lanes
 * holding the lock (UMADV_LOG=debug, the iteration's line). */
static void step_lock(umadv_exec_t *e)
{
    uint64_t asked;

    if (pthread_mutex_trylock(&e->lock) == 0)
        return;
    asked = umadv__now_ns();
    pthread_mutex_lock(&e->lock);
    e->stats.lock_waits++;
    e->stats.lock_wait_ns += umadv__now_ns() - asked;
}

void umadv__exec_step_begin(umadv_exec_t *e)
{
    step_lock(e);
    if (e->begun) {
        /* Steps past the profiled count replay nothing (the last key). */
        if (!e->broken) {
            umadv__core_step_begin(&e->core, e->iteration, e->step);
            umadv__exec_queue_decisions(e);
        }
        e->key = e->iteration * e->p.nsteps + UMADV_MIN(e->step, e->p.nsteps - 1);
        e->step++;
        e->step_start_ns = e->p.spans != NULL ? umadv__now_ns() : 0;
    }
    pthread_mutex_unlock(&e->lock);
}

static void wait_timed_out(umadv_exec_t *e)
{
    e->stats.wait_timeouts++;
    umadv_warn("executor: step %u of iteration %llu still waits for its data after %.1f s: "
               "going on without it", e->step - 1, (unsigned long long)e->iteration,
               (double)e->p.wait_timeout_ns * 1e-9);
    umadv__exec_abandon(e, e->key);
}

static void wait_pending(umadv_exec_t *e)
{
    struct timespec until = exec_deadline(e->p.wait_timeout_ns);
    uint64_t start = umadv__now_ns();
    const char *cause = e->p.spans != NULL ? umadv__exec_pending_cause(e, e->key) : NULL;

    e->stats.waits++;
    e->waiting++;
    while (!e->broken && umadv__exec_pending(e, e->key)) {
        if (pthread_cond_timedwait(&e->cond, &e->lock, &until) != 0 &&
            umadv__exec_pending(e, e->key)) {
            wait_timed_out(e);
            break;
        }
    }
    e->waiting--;
    e->stats.wait_ns += umadv__now_ns() - start;
    umadv__spans_add(e->p.spans, UMADV_SPAN_WAITS, cause, start, umadv__now_ns(), 0,
                     e->iteration, e->step - 1);
}

static void step_wait(umadv_exec_t *e, const umadv_stream_t *stream)
{
    step_lock(e);
    if (stream != NULL && e->begun && !e->broken)
        umadv__exec_fetch_on_step(e, *stream);
    if (e->begun && !e->broken && umadv__exec_pending(e, e->key))
        wait_pending(e);
    if (e->begun)
        umadv__exec_step_guard(e); /* no step runs on staged data */
    /* The run's peaks start once the first step has its data: what the
     * previous policy (or the profiling pass) left on the GPU is gone by
     * then, and is not this policy's. */
    if (e->begun && e->iteration == 0 && e->step == 1) {
        e->stats.gpu_peak_used = 0;
        e->core.peak = e->core.resident;
    }
    pthread_mutex_unlock(&e->lock);
}

void umadv__exec_step_wait(umadv_exec_t *e)
{
    step_wait(e, NULL);
}

void umadv__exec_step_wait_on(umadv_exec_t *e, umadv_stream_t stream)
{
    step_wait(e, &stream);
}

void umadv__exec_step_end(umadv_exec_t *e, umadv_stream_t stream)
{
    step_lock(e);
    if (e->begun && e->step_start_ns != 0)
        umadv__spans_add(e->p.spans, UMADV_SPAN_STEPS, "step", e->step_start_ns,
                         umadv__now_ns(), 0, e->iteration, e->step - 1);
    if (e->begun && !e->broken && e->step <= e->p.nsteps) {
        umadv__exec_step_ended(e, stream);
        if (!e->broken) {
            umadv__core_step_end(&e->core);
            umadv__exec_queue_decisions(e);
        }
        umadv__exec_end_settle(e);
    }
    pthread_mutex_unlock(&e->lock);
}

void umadv__exec_note_faults(umadv_exec_t *e, uint64_t n)
{
    pthread_mutex_lock(&e->lock);
    e->iter_faults += n;
    e->stats.faults += n;
    pthread_mutex_unlock(&e->lock);
}

uint64_t umadv__exec_iteration_faults(umadv_exec_t *e)
{
    uint64_t n;

    pthread_mutex_lock(&e->lock);
    n = e->iter_faults;
    pthread_mutex_unlock(&e->lock);
    return n;
}

void umadv__exec_get_stats(umadv_exec_t *e, umadv_exec_stats_t *stats)
{
    pthread_mutex_lock(&e->lock);
    stats_now(e, stats);
    pthread_mutex_unlock(&e->lock);
}

static int lanes_idle(const umadv_exec_t *e)
{
    return umadv__exec_queue_peek((exec_lane_t *)&e->fetch) == NULL &&
           umadv__exec_queue_peek((exec_lane_t *)&e->evict) == NULL &&
           !e->fetch.working && !e->evict.working;
}

void umadv__exec_drain(umadv_exec_t *e)
{
    pthread_mutex_lock(&e->lock);
    e->draining++;
    while (!e->broken && !lanes_idle(e))
        pthread_cond_wait(&e->cond, &e->lock);
    e->draining--;
    pthread_mutex_unlock(&e->lock);
}

int umadv__exec_broken(umadv_exec_t *e)
{
    int broken;

    pthread_mutex_lock(&e->lock);
    broken = e->broken;
    pthread_mutex_unlock(&e->lock);
    return broken;
}
