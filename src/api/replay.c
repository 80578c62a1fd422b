/*
 * Replay: the glue between the context and the executor (exec/exec.h).
 *
 * umadv_plan() (and umadv_set_policy(), which plans again) starts an
 * executor for the context's policy; every later iteration is replayed.
 *
 * WHICH BLOCK PLAYS WHICH TRACE ALLOCATION. The schedule names the
 * allocations of the profiled iteration; later iterations allocate their
 * buffers again, maybe elsewhere. The map:
 *  - when the replay starts, every live block the recording saw plays its
 *    own trace allocation (identity: weights, optimizer state, data that
 *    one iteration hands to the next);
 *  - in every iteration, umadv_malloc() calls are numbered from 0 at
 *    umadv_iteration_begin(). The k-th block of a replayed iteration plays
 *    the trace allocation that was the k-th umadv_malloc() of the profiled
 *    iteration, if both have the same size; it takes the role from the
 *    block that had it. A block of another size, or a k the profiled
 *    iteration did not allocate (or whose block never lived through a
 *    step), plays nothing;
 *  - umadv_free() ends the role.
 * Ops on an allocation no block plays are skipped and counted as drift
 * (umadv_stats_t.drift_ops). An allocation freed in the profiled
 * iteration that existed before it is played by nobody after its block
 * is gone: which later block takes its role the trace does not say.
 *
 * VALIDATION. At each umadv_iteration_begin() the GPU faults the profiler
 * saw in the iteration that ended go to the executor; when a steady-state
 * iteration had more than UMADV_REPROFILE_FAULTS, the executor says so and
 * the life cycle (lifecycle.c) profiles the iteration beginning.
 *
 * AUTOMATIC STEPS. When the trace's steps are kernel launches (no step
 * marked through the API), the replay follows the launches (CUPTI launch
 * callbacks only; not under oracle nor under a plan that moves nothing,
 * which have nothing to order: follow_start): the j-th launch of an
 * iteration, when it is the trace's step j (same kernel, in order),
 * begins step j at the launch call's entry, so that its fetches complete
 * before the kernel is enqueued, and ends it at the call's exit, with
 * the event on the launch's stream. The first launch that differs stops
 * this for the rest of the iteration (drift). A launch into a capturing
 * stream is none (profiler.c, STREAM CAPTURE); a graph's launch pauses
 * staging first (A GRAPH LAUNCH, below).
 *
 * COPIES AND MEMSETS. With staging, a staged range holds no data until
 * restored, and the application may copy or set memory between kernels
 * (loss.item(), zero_()). While the replay runs, the profiler tells each
 * memcpy and memset call at its entry (umadv__prof_watch_copies) and the
 * executor restores, synchronously, the staged data it touches before the
 * call enqueues anything. A context with a GPU and no profiler to watch
 * them does not stage (said at info level); a host-only one has no CUDA
 * call to watch; oracle, which never evicts, watches nothing.
 *
 * PINNED AHEAD. The executor's eviction lane pins the staging pool at
 * its first staged eviction, and the steps wait for the room its
 * evictions make: pinning 4.2 GiB took 233-325 ms of a PyTorch
 * ResNet-50's first replayed iteration at half its footprint, 1.5 GiB
 * 87-93 ms of GPT-2's at save_on_cpu's peak (H200, 2026-11-29). A profile
 * whose first pass calls for a second knows the pool its plan will want
 * from the first pass's trace (umadv__core_stage_sections, the same rule
 * the replay core counts its slots by), and pins it on a thread of its
 * own while the second pass runs (umadv__replay_pin_ahead); the executor
 * takes it from the cache the replays share, waiting for what is not
 * done. Measured (H200, 2026-11-29, bench/RESULTS.md): ResNet-50's first
 * replay 243-265 ms against 475-554, GPT-2's 190-219 against 256-287;
 * but beside the second pass the pinning took two to three times as
 * long and the pass grew by about as much again (a registration holds
 * other threads' CUDA calls while it runs, bench/launch_cost; that this
 * is what the pass lost, the runs do not show), so the profiling phase
 * gained 50-120 ms on ResNet-50 and VGG-16, and none on GPT-2.
 *
 * Called with ctx->lock held, except where said.
 */
#include "api/context.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "exec/spans.h"
#include "profiler/profiler.h"

#define REPLAY_MONITOR_PERIOD_NS (UINT64_C(2) * 1000000u)

/* The launches followed in this iteration: one profiler per process, so
 * one followed context. */
static struct replay_follow {
    umadv_context_t ctx;      /* followed now, or NULL */
    uint32_t        next;     /* launches of the iteration so far */
    uint32_t        open;     /* the step begun at a launch's entry */
    int             diverged; /* in this iteration */
    int             logged;   /* a divergence, in this replay */
    int             hidden_logged; /* a hidden reader's pause, in this replay */
    int             graph_logged;  /* a graph launch's, in this replay */
    uint64_t        drift;    /* iterations that diverged */
    uint64_t        entry_ns; /* the open step's launch call began */
    uint64_t        launch_ns;/* in followed launch calls, this iteration */
    /* where launch_ns goes: the step's begin, its wait for data (its
     * fresh populations and its waits), its end; the rest is the launch
     * call itself, CUPTI's callbacks around it (under 1 us: bench/
     * launch_cost) and its waits for the driver while a lane populates
     * or migrates */
    uint64_t        begin_ns, wait_ns, end_ns;
    /* Under the debug log only (a thread's CPU clock and counts are
     * system calls): the application's time between one followed
     * launch's exit and the next one's entry on the same thread, wall
     * and the thread's CPU, its page faults and context switches there,
     * and the CPU inside the launch calls: whether a launch-bound
     * application's own work slows beside the lanes (CPU time up with
     * the wall: densenet121's doubled, bench/RESULTS.md, 2026-11-30) or
     * its thread waits (wall up, CPU not). */
    struct follow_gaps {
        pthread_t thread;             /* the last exit's */
        uint64_t  left_ns, left_cpu;  /* at the last exit; 0: none yet */
        umadv_thread_events_t left_ev;/* at the last exit */
        uint64_t  entry_cpu;          /* at the open step's entry */
        uint64_t  wall_ns, cpu_ns;    /* between launches, this iteration */
        umadv_thread_events_t ev;     /* between them: page faults, switches */
        uint64_t  inside_cpu_ns;      /* inside them */
    } gaps;
} follow = {.open = UMADV_STEP_NONE};

static int gaps_timed(void)
{
    return umadv__log_level >= UMADV_LOG_DEBUG;
}

/* A followed launch's entry (the open step's): the gap since the last
 * exit on this thread. */
static void gaps_enter(uint64_t now)
{
    struct follow_gaps *g = &follow.gaps;

    if (!gaps_timed())
        return;
    g->entry_cpu = umadv__thread_cpu_ns();
    if (g->left_ns != 0 && pthread_equal(g->thread, pthread_self())) {
        umadv_thread_events_t ev;

        g->wall_ns += now - g->left_ns;
        g->cpu_ns += g->entry_cpu - UMADV_MIN(g->entry_cpu, g->left_cpu);
        umadv__thread_events(&ev);
        umadv__thread_events_add(&g->ev, &ev, &g->left_ev);
    }
}

static void gaps_exit(uint64_t now)
{
    struct follow_gaps *g = &follow.gaps;

    if (!gaps_timed())
        return;
    umadv__thread_events(&g->left_ev);
    g->left_cpu = umadv__thread_cpu_ns();
    g->left_ns  = now;
    g->thread   = pthread_self();
    g->inside_cpu_ns += g->left_cpu - UMADV_MIN(g->left_cpu, g->entry_cpu);
}

void umadv__replay_init(umadv_context_t ctx)
{
    uint64_t free_b, total_b;

    if (ctx->ops->mem_get_info(&free_b, &total_b) == UMADV_OK)
        ctx->replay.gpu_used_base = total_b - free_b;
    if (ctx->config.timeline[0] != '\0') {
        ctx->replay.spans = malloc(sizeof(*ctx->replay.spans));
        if (ctx->replay.spans == NULL)
            umadv_error("UMADV_TIMELINE: out of memory: no timeline");
        else
            umadv__spans_init(ctx->replay.spans, UMADV_SPANS_MAX_DEFAULT);
    }
}

static void stats_add(umadv_exec_stats_t *sum, const umadv_exec_stats_t *x)
{
    sum->fetched_bytes += x->fetched_bytes;
    sum->fresh_bytes   += x->fresh_bytes;
    sum->fetch_calls   += x->fetch_calls;
    sum->batch_calls   += x->batch_calls;
    sum->evicted_bytes += x->evicted_bytes;
    sum->evict_calls   += x->evict_calls;
    sum->dropped_bytes += x->dropped_bytes;
    sum->advise_calls  += x->advise_calls;
    sum->waits         += x->waits;
    sum->wait_ns       += x->wait_ns;
    sum->wait_timeouts += x->wait_timeouts;
    sum->drift_ops     += x->drift_ops;
    sum->budget_skips  += x->budget_skips;
    sum->cuda_errors   += x->cuda_errors;
    sum->staged_bytes  += x->staged_bytes;
    sum->released_bytes += x->released_bytes;
    sum->restored_bytes += x->restored_bytes + x->sync_restored_bytes;
    sum->held_evictions += x->held_evictions;
    sum->hold_wait_ns  += x->hold_wait_ns;
}

/*
 * WAITS WITHOUT THE LOCK. A step waits for its data without ctx->lock
 * (umadv_step_begin, a followed launch: other threads allocate
 * meanwhile), on the executor it took with the lock held. A replay that
 * another thread stopped meanwhile (a policy change, the process's exit)
 * would destroy the executor under the wait. So each such wait counts
 * itself in with the lock held and out when it has ended, and a stop
 * lets the waits under way end first: the lanes still run then, and
 * nothing the waits need is held.
 */
umadv_exec_t *umadv__replay_wait_take(umadv_context_t ctx)
{
    umadv_exec_t *exec = ctx->replay.exec;

    if (exec != NULL)
        __atomic_add_fetch(&ctx->replay.waits, 1, __ATOMIC_ACQ_REL);
    return exec;
}

void umadv__replay_wait_done(umadv_context_t ctx)
{
    __atomic_sub_fetch(&ctx->replay.waits, 1, __ATOMIC_ACQ_REL);
}

static void waits_end(umadv_context_t ctx)
{
    while (__atomic_load_n(&ctx->replay.waits, __ATOMIC_ACQUIRE) != 0)
        sched_yield();
}

static void follow_stop(umadv_context_t ctx);
static void copies_unwatch(umadv_context_t ctx);

void umadv__replay_stop(umadv_context_t ctx)
{
    umadv_ctx_replay_t *r = &ctx->replay;

    r->start_held = 0;
    if (r->exec == NULL)
        return;
    waits_end(ctx);
    follow_stop(ctx);
    /* staged data back before anything else (destroy makes sure of it
     * again once its lanes have stopped); nothing is staged again (the
     * steps that would are marked under ctx->lock), so copies need no
     * watch from here on, and none is inside the executor after this */
    umadv__exec_restore_all(r->exec);
    copies_unwatch(ctx);
    umadv__exec_get_stats(r->exec, &r->last);
    stats_add(&r->done, &r->last);
    umadv__exec_destroy(r->exec);
    __atomic_store_n(&r->exec, NULL, __ATOMIC_RELEASE);
    for (size_t i = 0; i < r->bound_cap; i++) {
        if (r->bound[i] != NULL)
            r->bound[i]->bound = UMADV_CTX_NO_TRACE_ID;
        r->bound[i] = NULL;
    }
}

/* The executor's threads, and the thread that pins the pool ahead of a
 * replay (its calls run for hundreds of milliseconds), are those that
 * call CUDA for the replay. */
void umadv__replay_exit(umadv_context_t ctx)
{
    umadv__replay_stop(ctx);
    umadv__exec_stage_cache_settle(&ctx->replay.stage_cache);
    /* a context the application never destroys still leaves its
     * timeline, unless it was saved already (umadv_timeline_save, or
     * the injection library's own exit, which runs first): a stream
     * such as standard output gets one timeline, not two */
    if (ctx->replay.spans != NULL && !ctx->replay.spans->saved)
        umadv__spans_save(ctx->replay.spans, ctx->config.timeline);
}

void umadv__replay_pin_ahead(umadv_context_t ctx, const umadv_schedule_t *schedule)
{
    uint64_t section = ctx->trace.section_size, bytes;
    umadv_status_t status;

    /* as exec_params and umadv__replay_start decide whether to stage */
    if (!umadv__ctx_stage_possible(ctx) || ctx->config.policy == UMADV_POLICY_ORACLE ||
        ctx->profiler == NULL || section == 0)
        return;
    bytes = section * umadv__core_stage_sections(&ctx->trace, schedule->first_step,
                                                 schedule->nsteps, schedule->budget);
    status = umadv__exec_stage_pin_ahead(ctx->ops, ctx->config.device, ctx->numa,
                                         &ctx->replay.stage_cache, section, bytes);
    if (status != UMADV_OK)
        umadv_debug("staging pool: not pinned ahead of the replay (%s)",
                    umadv_status_string(status));
}

void umadv__replay_cleanup(umadv_context_t ctx)
{
    umadv__replay_stop(ctx);
    umadv__exec_stage_cache_free(ctx->ops, &ctx->replay.stage_cache);
    if (ctx->replay.spans != NULL) {
        umadv__spans_save(ctx->replay.spans, ctx->config.timeline);
        umadv__spans_cleanup(ctx->replay.spans);
        free(ctx->replay.spans);
    }
    free(ctx->replay.ordinal_alloc);
    free(ctx->replay.bound);
    memset(&ctx->replay, 0, sizeof(ctx->replay));
}

UMADV_API umadv_status_t umadv_timeline_save(umadv_context_t ctx, const char *path)
{
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->replay.spans == NULL) {
        umadv_error("umadv_timeline_save: no timeline is recorded: set UMADV_TIMELINE before "
                    "the context is created");
        status = UMADV_ERR_INVALID_PARAM;
    } else {
        status = umadv__spans_save(ctx->replay.spans, path != NULL ? path : ctx->config.timeline);
    }
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

/* ---- binding ------------------------------------------------------------ */

static void bind(umadv_context_t ctx, umadv_ctx_alloc_t *alloc, uint32_t id, int identity)
{
    umadv_ctx_replay_t *r = &ctx->replay;

    if (umadv__exec_bind(r->exec, id, alloc->ptr, alloc->size, alloc->arena, identity) !=
        UMADV_OK)
        return;
    if (r->bound[id] != NULL)
        r->bound[id]->bound = UMADV_CTX_NO_TRACE_ID;
    r->bound[id] = alloc;
    alloc->bound = id;
    if (alloc->stageable)
        umadv__exec_set_stageable(r->exec, id, 1);
    if (alloc->hold != NULL)
        umadv__exec_hold(r->exec, id, alloc->hold);
}

/* umadv_set_stageable on @alloc: the executor follows (turning it off
 * restores its staged data first). */
void umadv__replay_stageable(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    if (ctx->replay.exec != NULL && alloc->bound != UMADV_CTX_NO_TRACE_ID)
        umadv__exec_set_stageable(ctx->replay.exec, alloc->bound, alloc->stageable);
}

void umadv__replay_hold(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    if (ctx->replay.exec != NULL && alloc->bound != UMADV_CTX_NO_TRACE_ID)
        umadv__exec_hold(ctx->replay.exec, alloc->bound, alloc->hold);
}

static void bind_identity(void *arg, void *base, uint64_t size, uint64_t user)
{
    umadv_context_t ctx = arg;
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;

    if (alloc->trace_id < ctx->trace.nallocs &&
        ctx->trace.allocs[alloc->trace_id].size == alloc->size)
        bind(ctx, alloc, alloc->trace_id, !ctx->live_on_host);
}

/* Under oracle nothing is moved, staged or advised: a block bound to its
 * profiled allocation would only cost the application's thread the
 * binding (40% of oracle's allocator time on densenet121, a tree insert
 * and the replay core's bookkeeping each way). Its faults, still counted,
 * are then reported by address alone. */
void umadv__replay_malloc(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    umadv_ctx_replay_t *r = &ctx->replay;
    uint32_t id;

    alloc->ordinal = r->mallocs++;
    alloc->bound = UMADV_CTX_NO_TRACE_ID;
    if (r->exec == NULL || ctx->config.policy == UMADV_POLICY_ORACLE)
        return;
    if (alloc->ordinal >= r->nordinals) {
        r->unbound_bytes += alloc->size; /* more allocations than profiled */
        return;
    }
    id = r->ordinal_alloc[alloc->ordinal];
    if (id == UMADV_CTX_NO_TRACE_ID)
        return;
    if (ctx->trace.allocs[id].size != alloc->size) {
        umadv_debug("replay: allocation %u of the iteration is %llu bytes, %llu when "
                    "profiled: it plays no part", alloc->ordinal,
                    (unsigned long long)alloc->size,
                    (unsigned long long)ctx->trace.allocs[id].size);
        r->unbound_bytes += alloc->size;
        return;
    }
    bind(ctx, alloc, id, 0);
}

void umadv__replay_free(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    umadv_ctx_replay_t *r = &ctx->replay;

    if (alloc->bound == UMADV_CTX_NO_TRACE_ID || r->exec == NULL)
        return;
    umadv__exec_unbind(r->exec, alloc->bound);
    r->bound[alloc->bound] = NULL;
    alloc->bound = UMADV_CTX_NO_TRACE_ID;
}

/* The recorder put @alloc into the trace as allocation @id. */
umadv_status_t umadv__replay_note_trace_alloc(umadv_context_t ctx, umadv_ctx_alloc_t *alloc,
                                              uint32_t id)
{
    umadv_ctx_replay_t *r = &ctx->replay;
    umadv_status_t status;

    if (alloc->preexisting)
        return UMADV_OK;
    status = umadv__array_reserve((void **)&r->ordinal_alloc, &r->ordinals_cap,
                                  (size_t)alloc->ordinal + 1, sizeof(*r->ordinal_alloc));
    if (status != UMADV_OK)
        return status;
    while (r->nordinals <= alloc->ordinal)
        r->ordinal_alloc[r->nordinals++] = UMADV_CTX_NO_TRACE_ID;
    r->ordinal_alloc[alloc->ordinal] = id;
    return UMADV_OK;
}

/* ---- the start ----------------------------------------------------------- */

/*
 * THE START. A replay that begins in the recording's tail (record.c, THE
 * TAIL: from the recording's end to the next iteration's first step)
 * holds its executor's start (fetching what the plan keeps on the GPU at
 * step 0, evicting the rest) until the tail closes. The blocks freed
 * there, PyTorch's gradients that zero_grad frees before any kernel, are
 * then unbound before any lane call moves them: started at the boundary,
 * the executor fetched them as live, and each free waited for the call
 * moving its block (unbinding waits while a block is busy): one free
 * 116 ms in a PyTorch GPT-2's first replayed iteration at save_on_cpu's
 * peak, 65-120 ms of allocation calls in all against 3 (H200,
 * 2026-11-29). The first step, a launch that is none, or an iteration
 * gone by without either, starts it.
 */
static void start_release(umadv_context_t ctx)
{
    umadv_ctx_replay_t *r = &ctx->replay;

    if (!r->start_held)
        return;
    r->start_held = 0;
    if (r->exec != NULL)
        umadv__exec_start(r->exec, ctx->step_stream);
}

void umadv__replay_tail_closed(umadv_context_t ctx)
{
    start_release(ctx);
}

/* ---- automatic steps ---------------------------------------------------- */

static int steps_from_launches(const umadv_trace_t *t)
{
    for (uint32_t s = 0; s < t->nsteps; s++) {
        if (t->steps[s].kind != UMADV_STEP_KERNEL)
            return 0;
    }
    return t->nsteps > 0;
}

static int launch_is_step(const umadv_trace_t *t, uint32_t j, const char *name, unsigned flags)
{
    const char *want = j < t->nsteps ? t->steps[j].name : NULL;

    /* Unnamed launches were recorded under these names (profile.c). */
    if (name == NULL)
        name = (flags & UMADV_PROF_LAUNCH_GRAPH) ? "graph" : "kernel";
    return want != NULL && strcmp(want, name) == 0;
}

/* HIDDEN READERS. An NCCL kernel reduces buffers that its launch does not
 * name (its parameters point at NCCL's work descriptors), so neither the
 * profile's parameter scan nor the plan knows them: a DDP gradient bucket
 * staged under such a kernel would be reduced as garbage. The bucket
 * guard (umadv_ddp.py, umadv(7) DISTRIBUTED TRAINING) keeps what the
 * collective reads out of staging and holds it; a context in which no
 * block is held has no such guard, and there the first such launch of an
 * iteration pauses staging (everything staged restored first) until the
 * next: evictions migrate, which UVM keeps coherent with any reader. */
static const char *const hidden_reader_kernels[] = {"ncclDevKernel", "ncclKernel"};

static int launch_reads_hidden(const char *name)
{
    for (size_t i = 0; name != NULL && i < UMADV_ARRAY_SIZE(hidden_reader_kernels); i++) {
        if (strstr(name, hidden_reader_kernels[i]) != NULL)
            return 1;
    }
    return 0;
}

/* A GRAPH LAUNCH reads whatever its nodes name, and nothing shows them:
 * no launch callback fires for a node, and a kernel, copy or memset
 * captured into it was nothing to umadv when it was captured
 * (profiler.c, STREAM CAPTURE). It pauses staging like a hidden reader,
 * held blocks or not: nothing guards what a graph reads. */
static void graph_guard(umadv_context_t ctx)
{
    umadv__exec_stage_pause(ctx->replay.exec);
    if (!follow.graph_logged++)
        umadv_info("replay: a graph launch reads memory no launch of it names: staging paused "
                   "for the rest of each iteration that launches a graph (what is evicted "
                   "there migrates)");
}

static void hidden_reader_guard(umadv_context_t ctx, const char *name, unsigned flags)
{
    if (flags & UMADV_PROF_LAUNCH_GRAPH) {
        graph_guard(ctx);
        return;
    }
    if (ctx->nheld > 0 || !launch_reads_hidden(name))
        return;
    umadv__exec_stage_pause(ctx->replay.exec);
    if (!follow.hidden_logged++)
        umadv_warn("replay: %s reads memory its launch does not name (a collective's "
                   "buffers), and no block is guarded: staging paused for the rest of each "
                   "such iteration; guard DDP's buckets (umadv run does, umadv(7) DISTRIBUTED "
                   "TRAINING) or set UMADV_STAGE=0", name);
}

/* A launch call's entry: the step it is, begun; else the iteration's
 * following ends. Returns the executor to wait on, or NULL. */
static umadv_exec_t *follow_enter(umadv_context_t ctx, const char *name, unsigned flags)
{
    uint32_t j = follow.next++;

    if (follow.diverged)
        return NULL;
    if (follow.open != UMADV_STEP_NONE || !launch_is_step(&ctx->trace, j, name, flags)) {
        start_release(ctx); /* THE START */
        follow.diverged = 1;
        follow.drift++;
        /* the launches that follow are no step: none may find its data
         * staged (schedule/core.h, STAGING) */
        umadv__exec_stage_pause(ctx->replay.exec);
        if (!follow.logged++)
            umadv_info("replay: launch %u of the iteration is %s, the profiled step was %s: "
                       "no automatic steps for the rest of the iteration (drift)", j,
                       name != NULL ? name : "unnamed",
                       j < ctx->trace.nsteps && ctx->trace.steps[j].name != NULL
                           ? ctx->trace.steps[j].name : "none");
        return NULL;
    }
    hidden_reader_guard(ctx, name, flags);
    umadv__ctx_record_tail_close(ctx); /* the next iteration's first step (record.c) */
    follow.open = j;
    follow.entry_ns = umadv__now_ns();
    gaps_enter(follow.entry_ns);
    umadv__replay_step_begin(ctx);
    follow.begin_ns += umadv__now_ns() - follow.entry_ns;
    return umadv__replay_wait_take(ctx);
}

static void follow_launch(void *arg, const char *name, unsigned flags, int exit, void *stream)
{
    umadv_context_t ctx = arg;
    umadv_exec_t *exec = NULL;

    pthread_mutex_lock(&ctx->lock);
    /* A step marked through the API, or a recording, owns the launch. */
    if (ctx->replay.exec != NULL && ctx->in_iteration && !ctx->step_open &&
        ctx->record != UMADV_CTX_REC_RECORDING) {
        if (!exit) {
            exec = follow_enter(ctx, name, flags);
        } else if (follow.open != UMADV_STEP_NONE) {
            uint64_t end = umadv__now_ns(), left;

            follow.open = UMADV_STEP_NONE;
            umadv__exec_step_end(ctx->replay.exec, stream);
            left = umadv__now_ns(); /* one reading for the three: every launch pays it */
            follow.end_ns += left - end;
            follow.launch_ns += left - follow.entry_ns;
            gaps_exit(left);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    /* The step's data before its kernel, without the lock (as
     * umadv_step_begin). */
    if (exec != NULL) {
        uint64_t start = umadv__now_ns();

        umadv__exec_step_wait_on(exec, stream);
        umadv__replay_wait_done(ctx);
        follow.wait_ns += umadv__now_ns() - start; /* the application's thread alone */
    }
}

/* Whether the replay moves nothing in steady state, so that its launches
 * have nothing to order (nor its faults much to judge: profile.c).
 * Oracle moves nothing once everything is on the GPU (the profile puts
 * back what it evicted, pages.c keeps reused blocks resident): following
 * its launches would only cost CUPTI's callbacks, 1.4-1.55x a PyTorch
 * ResNet-50 iteration (737 launches) in bench/RESULTS.md. Nor does a plan
 * whose budget holds every step's data (as the default budget, the free
 * GPU memory, does for most models): in steady state it evicts nothing,
 * fetches nothing (it populates fresh blocks, whose pages the pool mostly
 * hands out on the GPU already) and advises nothing, so it replays as
 * oracle does.
 * Followed, such a plan cost a PyTorch ResNet-18 at batch 32 29.5 ms an
 * iteration against oracle's 13.0 (H100, 2026-11-28). */
int umadv__replay_moves_nothing(const umadv_context_t ctx)
{
    const umadv_schedule_t *s = &ctx->schedule;

    if (ctx->config.policy == UMADV_POLICY_ORACLE)
        return 1;
    return ctx->config.policy == UMADV_POLICY_PLAN && ctx->have_schedule &&
           s->evict_ops == 0 && s->fetch_bytes == 0 && s->advise_ops == 0 &&
           s->host_bytes == 0;
}

static void follow_start(umadv_context_t ctx)
{
    if (ctx->profiler == NULL || !steps_from_launches(&ctx->trace) ||
        (follow.ctx != NULL && follow.ctx != ctx))
        return;
    if (umadv__replay_moves_nothing(ctx)) {
        if (ctx->config.policy != UMADV_POLICY_ORACLE)
            umadv_info("replay: the plan moves nothing in steady state (the budget holds "
                       "every step's data): its launches are not followed, as under oracle");
        return;
    }
    follow = (struct replay_follow){.open = UMADV_STEP_NONE, .drift = follow.drift};
    if (umadv__prof_follow(ctx->profiler, follow_launch, ctx) == UMADV_OK)
        follow.ctx = ctx;
    else
        umadv_warn("replay: cannot follow kernel launches: the schedule's steps are not "
                   "replayed");
}

/* So that the next step cannot begin unseen (record.c, THE TAIL). */
int umadv__replay_follows(const umadv_context_t ctx)
{
    return follow.ctx == ctx && !follow.diverged;
}

static void follow_stop(umadv_context_t ctx)
{
    if (follow.ctx != ctx)
        return;
    if (ctx->profiler != NULL)
        umadv__prof_follow(ctx->profiler, NULL, NULL);
    follow.ctx = NULL;
}

/* ---- copies and memsets -------------------------------------------------- */

/* The context whose executor, or recording (copies_noting), the
 * application's copies reach: one profiler per process. */
static umadv_context_t copies_ctx;
static int copies_noting;

/* A copy or memset at its call's entry: what it touches is restored
 * first, what it writes is placed on the GPU. Without ctx->lock: the
 * executor's own synchronous restores, made with it held, are copies
 * that come here too (and are ignored). */
static void copies_enter(void *arg, const umadv_prof_range_t *ranges, size_t n)
{
    umadv_context_t ctx = arg;
    umadv_exec_t *exec = __atomic_load_n(&ctx->replay.exec, __ATOMIC_ACQUIRE);

    for (size_t i = 0; exec != NULL && i < n; i++)
        umadv__exec_stage_restore_range(exec, ranges[i].ptr, ranges[i].bytes);
    if (exec != NULL && n > 0)
        umadv__exec_app_write(exec, ranges[0].ptr, ranges[0].bytes); /* the destination */
}

/* Whether the application's copies are watched from now on, or it
 * cannot make any (host only): the replay may stage. */
static int copies_watch(umadv_context_t ctx)
{
    if (ctx->profiler == NULL && (ctx->flags & UMADV_CONTEXT_FLAG_HOST_ONLY))
        return 1;
    if (ctx->profiler != NULL && (copies_ctx == NULL || copies_ctx == ctx) &&
        umadv__prof_watch_copies(ctx->profiler, copies_enter, ctx) == UMADV_OK) {
        copies_ctx = ctx;
        copies_noting = 0;
        return 1;
    }
    /* info: the missing profiler was warned when the context was made */
    umadv_info("replay: the application's memcpy and memset calls cannot be watched "
               "(no profiler): nothing is staged, evictions migrate, and what a copy "
               "writes is not placed first");
    return 0;
}

/* Stop watching: no call is inside copies_enter once this returns. */
static void copies_unwatch(umadv_context_t ctx)
{
    if (copies_ctx != ctx)
        return;
    umadv__prof_watch_copies(ctx->profiler, NULL, NULL);
    copies_ctx = NULL;
    copies_noting = 0;
}

/* A copy or memset in a recording (pcopies.c, COPIES). */
static void copies_note(void *arg, const umadv_prof_range_t *ranges, size_t n)
{
    for (size_t i = 0; i < n; i++)
        umadv__ctx_copies_note(arg, ranges[i].ptr, ranges[i].bytes);
}

void umadv__replay_copies_noted(umadv_context_t ctx, int on)
{
    if (ctx->profiler == NULL)
        return;
    if (on && copies_ctx == NULL &&
        umadv__prof_watch_copies(ctx->profiler, copies_note, ctx) == UMADV_OK) {
        copies_ctx = ctx;
        copies_noting = 1;
    } else if (!on && copies_ctx == ctx && copies_noting) {
        copies_unwatch(ctx); /* no call is inside copies_note after this */
    }
    umadv__ctx_copies_forget(ctx);
}

/* ---- starting ----------------------------------------------------------- */

/* UMADV_REPROFILE_FAULTS, or 1% of the fault groups the profile saw if
 * more: the profiling pass makes every section fault, so that is 1% of
 * the iteration's data faulting again. A PyTorch ResNet-50 replay sees
 * some 70 groups of stray faults per iteration (kernels whose arguments
 * cannot be scanned) out of 130,000 profiled: not drift. 0 stays 0. */
/* Drift: more faults than UMADV_REPROFILE_FAULTS, than 1% of what the
 * profile saw, and than twice the level that asked for the last re-profile
 * (faults a re-profile did not remove are the program's own: a library's
 * first touches, nothing a new profile changes). */
static uint64_t reprofile_threshold(const umadv_context_t ctx)
{
    uint64_t floor = UMADV_MAX(ctx->profile_fault_groups / 100, 2 * ctx->replay.fault_floor);

    if (ctx->config.reprofile_faults == 0)
        return 0;
    return UMADV_MAX(ctx->config.reprofile_faults, floor);
}

static void exec_params(umadv_context_t ctx, umadv_exec_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->ops               = ctx->ops;
    p->device            = ctx->config.device;
    p->policy            = ctx->config.policy;
    p->budget            = ctx->planned_budget; /* the schedule's, resolved once */
    p->trace             = &ctx->trace;
    p->first_step        = ctx->schedule.first_step;
    p->nsteps            = ctx->schedule.nsteps;
    p->schedule          = &ctx->schedule;
    p->monitor_period_ns = REPLAY_MONITOR_PERIOD_NS;
    p->gpu_used_base     = ctx->replay.gpu_used_base;
    p->reprofile_faults  = reprofile_threshold(ctx);
    p->numa              = ctx->numa;
    p->spans             = ctx->replay.spans;
    p->stage_cache       = &ctx->replay.stage_cache;
    /* a step whose accesses were guessed may miss a staged block
     * (profile.c) */
    p->stage             = umadv__ctx_stage_possible(ctx) && ctx->trace.guessed_steps == 0;
    p->stage_poison      = ctx->config.stage_poison;
    p->call_piece_bytes  = ctx->config.lane_piece;
    if (ctx->config.stage && ctx->trace.guessed_steps > 0)
        umadv_info("replay: no staged evictions: %u steps of the profile were guessed (a "
                   "profile under oracle) or taken on the application's declarations",
                   ctx->trace.guessed_steps);
}

typedef struct adopt {
    umadv_context_t     ctx;
    umadv_cycle_plan_t *plan;
} adopt_t;

static void adopt_install(void *arg)
{
    adopt_t *a = arg;

    umadv__ctx_plan_install(a->ctx, a->plan);
}

/* The plan a timing pass asked for differs from the one replayed in its
 * step durations only: the executor takes it in place. Stopping it would
 * restore every staged section, one synchronous copy each, and start the
 * next from every block counted resident (VGG-16 in C at batch 128, 25%:
 * 10 GiB copied back, 170,000-200,000 fault groups, 5-7 s). */
int umadv__replay_adopt(umadv_context_t ctx, umadv_cycle_plan_t *plan)
{
    adopt_t a = {ctx, plan};

    if (ctx->replay.exec == NULL || !ctx->have_schedule ||
        ctx->config.policy != UMADV_POLICY_PLAN ||
        umadv__exec_schedule_replace(ctx->replay.exec, &plan->schedule, plan->budget,
                                     adopt_install, &a) != UMADV_OK)
        return 0;
    umadv_debug("replay: the running executor took the new schedule in place");
    return 1;
}

/* Replay the schedule just built, under the context's policy. A failure
 * is logged and leaves the application on plain managed memory. */
umadv_status_t umadv__replay_start(umadv_context_t ctx)
{
    umadv_ctx_replay_t *r = &ctx->replay;
    umadv_exec_params_t params;
    umadv_status_t status;
    umadv_exec_t *exec;
    int watched;

    umadv__replay_stop(ctx);
    status = umadv__array_reserve((void **)&r->bound, &r->bound_cap, ctx->trace.nallocs,
                                  sizeof(*r->bound));
    if (status != UMADV_OK)
        return status;
    memset(r->bound, 0, r->bound_cap * sizeof(*r->bound));
    exec_params(ctx, &params);
    /* watched before anything can be staged (oracle never evicts), and
     * for every policy: a copy into a block is placed first (stage.c,
     * THE APPLICATION'S WRITES) */
    watched = copies_watch(ctx);
    params.stage = params.stage && params.policy != UMADV_POLICY_ORACLE && watched;
    status = umadv__exec_create(&params, &exec);
    if (status != UMADV_OK) {
        copies_unwatch(ctx);
        umadv_error("replay: cannot start the executor (%s): no replay",
                    umadv_status_string(status));
        return status;
    }
    __atomic_store_n(&r->exec, exec, __ATOMIC_RELEASE); /* copies_enter reads it */
    umadv__pool_foreach(ctx->pool, bind_identity, ctx);
    ctx->live_on_host = 0; /* the executor places them from now on */
    r->start_held = ctx->record_tail; /* THE START */
    if (!r->start_held)
        umadv__exec_start(r->exec, ctx->step_stream);
    follow_start(ctx);
    umadv_debug("replay: %s policy started", umadv_policy_name(ctx->config.policy));
    return UMADV_OK;
}

/* ---- iterations and steps ---------------------------------------------- */

/* One address range of the faults report: records within a section of
 * each other. */
typedef struct fault_run {
    uint64_t lo, hi;
    uint64_t groups;
    uint32_t records;
} fault_run_t;

static int fault_by_address(const void *a, const void *b)
{
    uint64_t x = ((const umadv_prof_fault_t *)a)->address;
    uint64_t y = ((const umadv_prof_fault_t *)b)->address;

    return (x > y) - (x < y);
}

static void fault_run_log(umadv_context_t ctx, const fault_run_t *run)
{
    uint32_t alloc, sec;

    if (umadv__exec_locate(ctx->replay.exec, run->lo, &alloc, &sec))
        umadv_debug("  %#llx-%#llx: %u records, %llu groups; allocation %u (%s), section %u "
                    "of %u", (unsigned long long)run->lo, (unsigned long long)run->hi,
                    run->records, (unsigned long long)run->groups, alloc,
                    ctx->trace.allocs[alloc].tag ? ctx->trace.allocs[alloc].tag : "untagged",
                    sec, ctx->trace.allocs[alloc].nsections);
    else
        umadv_debug("  %#llx-%#llx: %u records, %llu groups; unbound",
                    (unsigned long long)run->lo, (unsigned long long)run->hi, run->records,
                    (unsigned long long)run->groups);
}

/* Debug: where the last iteration's faults fell, as address runs, each
 * with the allocation of the plan's trace whose bound block holds it now
 * (blocks freed since are no longer bound: "unbound"). A healthy replay
 * faults nowhere; this says where to look when it does. The records are
 * taken at every iteration, so that each report has its own. */
static void faults_report(umadv_context_t ctx, uint64_t faults)
{
    umadv_prof_fault_t rec[UMADV_PROF_FAULTS_KEPT];
    size_t n = umadv__prof_take_fault_records(ctx->profiler, rec, UMADV_ARRAY_SIZE(rec));
    fault_run_t run = {0};

    if (faults == 0 || ctx->replay.exec == NULL || UMADV_LOG_DEBUG > umadv__log_level)
        return;
    umadv_debug("replay: %llu fault groups in the last iteration; its first %zu fault records "
                "by address:", (unsigned long long)faults, n);
    qsort(rec, n, sizeof(*rec), fault_by_address);
    for (size_t i = 0; i < n; i++) {
        if (run.records > 0 && rec[i].address < run.hi + ctx->trace.section_size) {
            run.hi = rec[i].address;
            run.groups += rec[i].groups;
            run.records++;
            continue;
        }
        if (run.records > 0)
            fault_run_log(ctx, &run);
        run = (fault_run_t){rec[i].address, rec[i].address, rec[i].groups, 1};
    }
    if (run.records > 0)
        fault_run_log(ctx, &run);
}

void umadv__replay_iteration_reset(umadv_context_t ctx, uint64_t faults)
{
    if (ctx->profiler != NULL)
        faults_report(ctx, faults);
    ctx->replay.faults  = faults;
    ctx->replay.mallocs = 0;
    ctx->replay.unbound_last  = ctx->replay.unbound_bytes;
    ctx->replay.unbound_bytes = 0;
    if (follow.ctx == ctx && follow.next > 0)
        umadv_debug("replay: %u launches followed, %.3f ms inside them: step begins %.3f, "
                    "waits for data %.3f (fresh populations and waits), step ends %.3f, the "
                    "launch calls themselves %.3f (with CUPTI's callbacks, and their waits for "
                    "the driver behind the lanes' populations and migrations)", follow.next,
                    (double)follow.launch_ns / 1e6, (double)follow.begin_ns / 1e6,
                    (double)follow.wait_ns / 1e6, (double)follow.end_ns / 1e6,
                    (double)(follow.launch_ns - UMADV_MIN(follow.launch_ns, follow.begin_ns +
                             follow.wait_ns + follow.end_ns)) / 1e6);
    if (follow.ctx == ctx && follow.next > 0 && gaps_timed())
        umadv_debug("replay: the application's thread between those launches %.3f ms, %.3f ms "
                    "of it its cpu time, %llu page faults (%llu major), %llu times it gave the "
                    "cpu up and %llu it was preempted; inside them %.3f ms of cpu time",
                    follow.gaps.wall_ns / 1e6, follow.gaps.cpu_ns / 1e6,
                    (unsigned long long)(follow.gaps.ev.minor_faults +
                                         follow.gaps.ev.major_faults),
                    (unsigned long long)follow.gaps.ev.major_faults,
                    (unsigned long long)follow.gaps.ev.voluntary_switches,
                    (unsigned long long)follow.gaps.ev.involuntary_switches,
                    follow.gaps.inside_cpu_ns / 1e6);
    follow.next      = 0;
    follow.open      = UMADV_STEP_NONE;
    follow.diverged  = 0;
    follow.launch_ns = follow.begin_ns = follow.wait_ns = follow.end_ns = 0;
    memset(&follow.gaps, 0, sizeof(follow.gaps));
}

/*
 * ALLOCATION DRIFT. The k-th allocation of a replayed iteration plays the
 * k-th of the profiled one when their sizes agree. One that cannot (more
 * allocations than profiled, or another size in that place) is outside
 * the plan: nothing fetches, evicts or counts it, and what of it the GPU
 * holds (its kernels fault it in) stays there, beside a budget that the
 * executor believes held. No fault count shows it past the first
 * iteration: the data, once in, stops faulting. Measured: a DDP
 * ResNet-50 whose profiled iteration rebuilt its gradient buckets
 * replayed with a resident peak of 0.36 GiB under a 1.47 GiB budget,
 * 5,460 decisions on allocations nothing played (2x H200, 2026-11-24).
 * So when an iteration's blocks that played no part exceed a sixteenth of
 * the budget (and twice those of the iteration that last asked: what a
 * re-profile does not remove is the program's own), it is profiled
 * again. Under a schedule that moves data only (plan, prefetch-all).
 */
#define UNBOUND_BUDGET_SHARE 16

static int allocations_drifted(umadv_context_t ctx)
{
    umadv_ctx_replay_t *r = &ctx->replay;
    uint64_t limit = UMADV_MAX(ctx->planned_budget / UNBOUND_BUDGET_SHARE, 2 * r->unbound_floor);
    char unbound[32], budget[32];

    if (ctx->planned_budget == 0 || ctx->config.policy == UMADV_POLICY_ORACLE ||
        ctx->config.policy == UMADV_POLICY_DEMAND || r->unbound_last <= limit)
        return 0;
    umadv_info("replay: %s of the iteration's allocations played no allocation of the "
               "profiled one (more allocations, or other sizes in their place) under a "
               "budget of %s: the plan neither moves nor counts them, profiling again",
               umadv__size_format(r->unbound_last, unbound, sizeof(unbound)),
               umadv__size_format(ctx->planned_budget, budget, sizeof(budget)));
    r->unbound_floor = r->unbound_last;
    return 1;
}

int umadv__replay_iteration(umadv_context_t ctx)
{
    umadv_exec_t *exec = ctx->replay.exec;
    uint64_t faults;

    if (exec == NULL)
        return 0;
    if (ctx->replay.start_held == 2) /* an iteration went by without a step (THE START) */
        start_release(ctx);
    else if (ctx->replay.start_held)
        ctx->replay.start_held = 2;
    umadv__exec_note_faults(exec, ctx->replay.faults);
    faults = umadv__exec_iteration_faults(exec);
    if (umadv__exec_iteration_begin(exec)) {
        ctx->replay.fault_floor = faults;
        return 1;
    }
    return allocations_drifted(ctx);
}

void umadv__replay_forget_ordinals(umadv_context_t ctx)
{
    ctx->replay.nordinals = 0;
}

void umadv__replay_step_begin(umadv_context_t ctx)
{
    if (ctx->replay.exec != NULL)
        umadv__exec_step_begin(ctx->replay.exec);
}

void umadv__replay_step_end(umadv_context_t ctx)
{
    if (ctx->replay.exec != NULL)
        umadv__exec_step_end(ctx->replay.exec, ctx->step_stream);
}

/* ---- counters and the public calls --------------------------------------- */

void umadv__replay_stats(umadv_context_t ctx, umadv_stats_t *s)
{
    umadv_ctx_replay_t *r = &ctx->replay;
    umadv_exec_stats_t sum = r->done, now = r->last;

    if (r->exec != NULL) {
        umadv__exec_get_stats(r->exec, &now);
        stats_add(&sum, &now);
    }
    s->fetched_bytes = sum.fetched_bytes;
    s->evicted_bytes = sum.evicted_bytes;
    s->fetch_ops     = sum.fetch_calls;
    s->evict_ops     = sum.evict_calls;
    s->waits         = sum.waits;
    s->wait_ns       = sum.wait_ns;
    s->drift_ops     = sum.drift_ops + (follow.ctx == ctx ? follow.drift : 0);
    s->resident_peak = now.resident_peak;
    s->gpu_peak_used = now.gpu_peak_used;
    s->staged_bytes  = sum.staged_bytes;
    s->restored_bytes = sum.restored_bytes;
    s->released_bytes = sum.released_bytes;
    s->held_evictions = sum.held_evictions;
    s->hold_wait_ns   = sum.hold_wait_ns;
}

void umadv__replay_note_faults(umadv_context_t ctx, uint64_t n)
{
    if (ctx->replay.exec != NULL)
        umadv__exec_note_faults(ctx->replay.exec, n);
}
