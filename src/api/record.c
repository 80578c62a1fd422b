/*
 * Iterations, steps, declared accesses, and the profiling recorder that
 * turns them into a trace (see api/context.h for the rules).
 */
#include "api/context.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "trace/trace_io.h"

/* ---- pending allocations --------------------------------------------- */

static umadv_status_t pending_push(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    umadv_status_t status;

    status = umadv__array_reserve((void **)&ctx->pending, &ctx->pending_cap,
                                  ctx->npending + 1, sizeof(*ctx->pending));
    if (status != UMADV_OK)
        return status;
    ctx->pending[ctx->npending++] = alloc;
    alloc->pending = (uint32_t)ctx->npending;
    return UMADV_OK;
}

static void pending_remove(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    size_t i = alloc->pending - 1;

    ctx->pending[i] = ctx->pending[--ctx->npending];
    ctx->pending[i]->pending = (uint32_t)(i + 1);
    alloc->pending = 0;
}

static void pending_clear(umadv_context_t ctx)
{
    for (size_t i = 0; i < ctx->npending; i++)
        ctx->pending[i]->pending = 0;
    ctx->npending = 0;
}

/* Put @alloc into the trace, alive from @alloc_step. */
static umadv_status_t trace_enter(umadv_context_t ctx, umadv_ctx_alloc_t *alloc,
                                  uint32_t alloc_step)
{
    uint32_t id;
    umadv_status_t status;

    status = umadv__trace_add_alloc(&ctx->trace, (uintptr_t)alloc->ptr, alloc->size,
                                    UMADV_ALLOC_OTHER, alloc->tag, &id);
    if (status != UMADV_OK)
        return status;
    umadv__trace_set_lifetime(&ctx->trace, id, alloc_step, UMADV_STEP_NONE);
    umadv__trace_set_site(&ctx->trace, id, alloc->site); /* out of memory: unknown */
    ctx->trace.allocs[id].stageable = alloc->stageable != 0;
    alloc->trace_id = id;
    return umadv__replay_note_trace_alloc(ctx, alloc, id);
}

/* The open step @step begins the life of every pending allocation. */
static umadv_status_t pending_enter(umadv_context_t ctx, uint32_t step)
{
    umadv_status_t status;

    while (ctx->npending > 0) {
        umadv_ctx_alloc_t *alloc = ctx->pending[ctx->npending - 1];
        status = trace_enter(ctx, alloc, alloc->preexisting ? UMADV_STEP_NONE : step);
        if (status != UMADV_OK)
            return status;
        pending_remove(ctx, alloc);
    }
    return UMADV_OK;
}

umadv_status_t umadv__ctx_record_alloc(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    if (ctx->record != UMADV_CTX_REC_RECORDING)
        return UMADV_OK;
    if (ctx->step_open)
        return trace_enter(ctx, alloc, ctx->step);
    return pending_push(ctx, alloc);
}

void umadv__ctx_record_stageable(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    if (ctx->record == UMADV_CTX_REC_RECORDING && alloc->trace_id != UMADV_CTX_NO_TRACE_ID)
        ctx->trace.allocs[alloc->trace_id].stageable = alloc->stageable != 0;
}

/*
 * THE TAIL. A block born in the recorded iteration and alive at its end
 * may be freed before the next iteration's first step: PyTorch's
 * gradients, made in the backward and freed by the next zero_grad before
 * any kernel runs. The recording ends at the boundary and never sees that
 * free, so the trace keeps the block alive, and the plan evicts it with a
 * copy (staged out, never restored: GPT-2 180 MiB an iteration) where it
 * could drop it. So from the recording's end (the boundary, or an
 * umadv_plan or umadv_trace_save before it) to the next step, whichever
 * iteration that step is in, the recorder still watches frees: a block
 * born in the window and freed there dies with the window (free_step =
 * its last step). The tail is watched only where the next step cannot
 * begin unseen: steps marked through the API (no profiler), a timing
 * pass, or a replay that follows the launches (replay.c), each of which
 * sees every launch: a profile whose durations came from a first pass
 * (profile.c, TWO PASSES) has no timing pass, and without the replay's
 * watch GPT-2 at save_on_cpu's peak migrated its gradients, 0.19 GiB an
 * iteration, where a profile of one pass dropped them (H200,
 * 2026-11-29). A schedule built before the amendment is rebuilt at the
 * next boundary (api/lifecycle.c, PLAN_REQUEST).
 * UMADV_PROFILE_TAIL=0 turns it off. On by default since the executor
 * stopped populating pages already on the GPU (schedule/pages.c): staged
 * bytes then equal restored ones, and GPT-2 at save_on_cpu's peak ran 20%
 * faster with it; VGG-16 8% slower (umadv(7) has the figures): the
 * gradients' room, free at the wrap, lets the optimizer's state stay, and
 * the fc layers' rooms are then made from weights used the step before,
 * all leaving in one queue. The planner's in-time victim rule
 * (plan/residency.c, WHEN THE EVICTION CAN START) took most of that loss
 * back, not all.
 */
void umadv__ctx_record_tail_close(umadv_context_t ctx)
{
    if (!ctx->record_tail)
        return;
    ctx->record_tail = 0;
    umadv__replay_tail_closed(ctx);
    if (ctx->record_tail_frees == 0)
        return;
    umadv_info("profiled iteration: %u of its blocks freed before the next iteration's "
               "first step: planned as dying with it", ctx->record_tail_frees);
    /* the plan the next boundary builds again (PLANNING AHEAD); after a
     * timing pass, whose durations change the trace, it builds it */
    if (ctx->life.want_plan && ctx->tpass.state != UMADV_CTX_TPASS_RUNNING)
        umadv__ctx_ahead_start(ctx);
}

static void tail_free(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    uint32_t id = alloc->trace_id;

    if (!ctx->config.profile_tail || !ctx->record_tail || ctx->record != UMADV_CTX_REC_DONE ||
        id >= ctx->trace.nallocs ||
        (ctx->profiler != NULL && ctx->tpass.state != UMADV_CTX_TPASS_RUNNING &&
         !umadv__replay_follows(ctx)))
        return;
    alloc->trace_id = UMADV_CTX_NO_TRACE_ID;
    if (umadv__trace_end_with_window(&ctx->trace, id) != UMADV_OK)
        return; /* not born in the window, or already freed in it */
    ctx->record_tail_frees++;
    ctx->life.want_plan |= ctx->have_schedule;
}

void umadv__ctx_record_free(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    const umadv_trace_alloc_t *t;
    uint32_t free_step;

    if (alloc->pending != 0)
        pending_remove(ctx, alloc);
    if (ctx->record == UMADV_CTX_REC_DONE) {
        tail_free(ctx, alloc);
        return;
    }
    if (ctx->record != UMADV_CTX_REC_RECORDING || alloc->trace_id == UMADV_CTX_NO_TRACE_ID)
        return;
    /* In the trace means a step began in its life: nsteps >= 1. */
    free_step = ctx->step_open ? ctx->step : ctx->trace.nsteps - 1;
    t = &ctx->trace.allocs[alloc->trace_id];
    umadv__trace_set_lifetime(&ctx->trace, alloc->trace_id, t->alloc_step, free_step);
    alloc->trace_id = UMADV_CTX_NO_TRACE_ID;
}

/* ---- step timing ----------------------------------------------------- */

/* An event call failed (logged by the backend): time steps by the host
 * clock from now on, so that a broken device costs one message, not one
 * per step. */
static void events_fail(umadv_context_t ctx, const char *call)
{
    if (ctx->events_broken)
        return;
    ctx->events_broken = 1;
    umadv_warn("step timing: %s failed: steps are timed by the host clock from now on", call);
}

static umadv_event_t event_get(umadv_context_t ctx)
{
    umadv_event_t event;

    if (ctx->events_broken)
        return NULL;
    if (ctx->nspare_events > 0)
        return ctx->spare_events[--ctx->nspare_events];
    if (ctx->ops->event_create(&event) != UMADV_OK) {
        events_fail(ctx, "event_create");
        return NULL;
    }
    return event;
}

static void event_put(umadv_context_t ctx, umadv_event_t event)
{
    if (event == NULL)
        return;
    if (umadv__array_reserve((void **)&ctx->spare_events, &ctx->spare_events_cap,
                             ctx->nspare_events + 1, sizeof(*ctx->spare_events)) != UMADV_OK) {
        ctx->ops->event_destroy(event);
        return;
    }
    ctx->spare_events[ctx->nspare_events++] = event;
}

/* A step's measured time goes to the trace while recording, to the
 * timing pass's table while it runs. */
static void step_duration_set(umadv_context_t ctx, uint32_t step, uint64_t ns)
{
    ns = ns ? ns : 1;
    if (ctx->tpass.state == UMADV_CTX_TPASS_RUNNING) {
        if (step < ctx->trace.nsteps)
            ctx->tpass.durations[step] = ns;
        return;
    }
    if (step < ctx->trace.nsteps)
        ctx->trace.steps[step].duration_ns = ns;
}

/* Time the step on its stream, so the duration is the GPU's, not the
 * launch overhead the host sees. Falls back to the wall clock. */
static void timing_start(umadv_context_t ctx, void *stream)
{
    umadv_event_t event = event_get(ctx);

    if (event != NULL && ctx->ops->event_record(event, stream) != UMADV_OK) {
        events_fail(ctx, "event_record");
        event_put(ctx, event);
        event = NULL;
    }
    ctx->step_start_event = event;
    ctx->step_start_ns = umadv__now_ns();
}

static void timing_end(umadv_context_t ctx)
{
    umadv_ctx_timing_t timing = {ctx->step, ctx->step_start_event, NULL};
    uint64_t wall = umadv__now_ns() - ctx->step_start_ns;

    ctx->step_start_event = NULL;
    step_duration_set(ctx, ctx->step, wall);
    if (timing.start == NULL)
        return;
    timing.end = event_get(ctx);
    if (timing.end != NULL && ctx->ops->event_record(timing.end, ctx->step_stream) != UMADV_OK)
        events_fail(ctx, "event_record");
    if (timing.end == NULL || ctx->events_broken ||
        umadv__array_reserve((void **)&ctx->timings, &ctx->timings_cap, ctx->ntimings + 1,
                             sizeof(*ctx->timings)) != UMADV_OK) {
        event_put(ctx, timing.start);
        event_put(ctx, timing.end);
        return;
    }
    ctx->timings[ctx->ntimings++] = timing;
}

/* The GPU time of a timed step, or 0 (events broken now). */
static uint64_t timing_read(umadv_context_t ctx, const umadv_ctx_timing_t *t)
{
    uint64_t ns;

    if (ctx->events_broken)
        return 0;
    if (ctx->ops->event_synchronize(t->end) != UMADV_OK) {
        events_fail(ctx, "event_synchronize");
        return 0;
    }
    if (ctx->ops->event_elapsed_ns(t->start, t->end, &ns) != UMADV_OK) {
        events_fail(ctx, "event_elapsed_ns");
        return 0;
    }
    return ns ? ns : 1;
}

/* Read the event times once the steps are done; where an event failed the
 * wall-clock time recorded at step end stays. */
void umadv__ctx_timings_resolve(umadv_context_t ctx)
{
    for (size_t i = 0; i < ctx->ntimings; i++) {
        umadv_ctx_timing_t *t = &ctx->timings[i];
        uint64_t ns = timing_read(ctx, t);

        if (ns != 0)
            step_duration_set(ctx, t->step, ns);
        event_put(ctx, t->start);
        event_put(ctx, t->end);
    }
    ctx->ntimings = 0;
}

/* ---- recording ------------------------------------------------------- */

typedef struct preexisting_arg {
    umadv_context_t ctx;
    umadv_status_t  status;
} preexisting_arg_t;

static void mark_preexisting(void *arg, void *base, uint64_t size, uint64_t user)
{
    preexisting_arg_t *pa = arg;
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;
    umadv_status_t status;

    alloc->trace_id = UMADV_CTX_NO_TRACE_ID;
    alloc->preexisting = 1;
    status = pending_push(pa->ctx, alloc);
    if (status != UMADV_OK)
        pa->status = status;
}

static void trace_describe_device(umadv_context_t ctx)
{
    umadv_device_desc_t *d = &ctx->trace.device;

    snprintf(d->name, sizeof(d->name), "%s", ctx->props.name);
    snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%s", ctx->props.pci_bus_id);
    d->memory         = ctx->props.total_memory;
    d->cc_major       = ctx->props.cc_major;
    d->cc_minor       = ctx->props.cc_minor;
    d->driver_version = ctx->driver_version;
}

static void record_discard(umadv_context_t ctx)
{
    if (ctx->record != UMADV_CTX_REC_IDLE)
        umadv__trace_cleanup(&ctx->trace);
    pending_clear(ctx);
    ctx->record = UMADV_CTX_REC_IDLE;
    ctx->record_tail = 0;
}

umadv_status_t umadv__ctx_record_start(umadv_context_t ctx)
{
    preexisting_arg_t pa = {ctx, UMADV_OK};
    umadv_status_t status;
    char source[160];

    record_discard(ctx);
    status = umadv__trace_init(&ctx->trace, ctx->config.section_size);
    if (status != UMADV_OK)
        return status;
    ctx->record = UMADV_CTX_REC_RECORDING;
    trace_describe_device(ctx);
    snprintf(source, sizeof(source), "umadv api, declared accesses, %s backend",
             ctx->ops->name);
    status = umadv__trace_set_source(&ctx->trace, source);
    umadv__pool_foreach(ctx->pool, mark_preexisting, &pa);
    if (status == UMADV_OK)
        status = pa.status;
    if (status != UMADV_OK) {
        record_discard(ctx);
        return status;
    }
    ctx->record_lost  = UMADV_OK;
    ctx->record_empty = 0;
    ctx->record_blind = 0; /* until the profiler says otherwise */
    return UMADV_OK;
}

/* The recorded steps' host times, summed (HOST TIMES, below). */
static uint64_t host_total_ns(const umadv_trace_t *t)
{
    uint64_t ns = 0;

    for (uint32_t s = 0; s < t->nsteps; s++)
        ns += t->steps[s].host_ns;
    return ns;
}

umadv_cycle_outcome_t umadv__ctx_record_finish(umadv_context_t ctx, umadv_status_t *status_p)
{
    char why[256];

    *status_p = UMADV_OK;
    pending_clear(ctx); /* made after the last step: not part of it */
    if (ctx->trace.nsteps == 0) {
        /* Without CUPTI an application that marks no steps records
         * nothing: the plan's failure must say so. */
        ctx->record_lost = ctx->record_blind ? UMADV_ERR_CUPTI : UMADV_OK;
        umadv_warn("the profiled iteration had no steps: nothing recorded%s",
                   ctx->record_blind ? " (no step was marked, and cupti could not trace "
                                       "kernel launches)" : "");
        record_discard(ctx);
        ctx->record_empty = 1;
        return UMADV_CYCLE_RECORD_EMPTY;
    }
    *status_p = umadv__trace_finalize(&ctx->trace, why, sizeof(why));
    if (*status_p != UMADV_OK) {
        umadv_error("profiled iteration unusable: %s", why);
        record_discard(ctx);
        ctx->record_empty = 1;
        return UMADV_CYCLE_RECORD_EMPTY;
    }
    ctx->record = UMADV_CTX_REC_DONE;
    ctx->record_tail = 1; /* THE TAIL */
    ctx->record_tail_frees = 0;
    umadv_info("profiled iteration recorded: %u steps, %u allocations, %u accesses; the "
               "application's own host time between them %.1f ms (HOST TIMES)",
               ctx->trace.nsteps, ctx->trace.nallocs, ctx->trace.naccesses,
               (double)host_total_ns(&ctx->trace) / 1e6);
    if (umadv__ctx_profile_recorded(ctx))
        return UMADV_CYCLE_RECORD_SCOUTED; /* a first pass (profile.c, TWO PASSES) */
    /* Profiled durations that may hold fault stalls: the next iteration
     * is timed. */
    return ctx->profiler != NULL && umadv__ctx_profile_stalled(ctx) ? UMADV_CYCLE_RECORD_UNTIMED
                                                                     : UMADV_CYCLE_RECORD_FINAL;
}

static void spare_events_destroy(umadv_context_t ctx)
{
    umadv_cuda_release_t release = {"event_destroy", 0};

    for (size_t i = 0; i < ctx->nspare_events; i++)
        umadv__cuda_release_note(&release, ctx->ops->event_destroy(ctx->spare_events[i]));
    umadv__cuda_release_end(&release);
    free(ctx->spare_events);
}

void umadv__ctx_record_cleanup(umadv_context_t ctx)
{
    umadv__ctx_timings_resolve(ctx);
    event_put(ctx, ctx->step_start_event);
    ctx->step_start_event = NULL;
    spare_events_destroy(ctx);
    free(ctx->timings);
    record_discard(ctx);
    free(ctx->pending);
}

/* ---- host times --------------------------------------------------------- */

/*
 * HOST TIMES (umadv-trace(5), host_ns). A recorded step's host time is
 * the application's own from when umadv last handed it back its thread
 * at a mark (the iteration's begin, the step before's begin or launch)
 * to when this step's begin or launch reached umadv: the framework's
 * work between launches, the launch call before and its other CUDA and
 * umadv calls; not umadv's work at the marks themselves (a launch's
 * scan, the second pass's evictions). The simulator starts a step no
 * earlier than its launch (schedule/window.h), so that a program bound
 * by its host is simulated as such.
 */
void umadv__ctx_host_note(umadv_context_t ctx, uint32_t step, uint64_t entered_ns)
{
    if (step < ctx->trace.nsteps && ctx->host_back_ns != 0 && entered_ns > ctx->host_back_ns)
        ctx->trace.steps[step].host_ns = entered_ns - ctx->host_back_ns;
}

void umadv__ctx_host_back(umadv_context_t ctx)
{
    ctx->host_back_ns = umadv__now_ns();
}

/* ---- steps (the public calls are lifecycle.c's) ----------------------- */

umadv_status_t umadv__ctx_step_begin(umadv_context_t ctx, const char *name, void *stream)
{
    uint64_t entered = umadv__now_ns();
    umadv_status_t status;
    uint32_t step;

    if (!ctx->in_iteration || ctx->step_open) {
        umadv_error("umadv_step_begin(%s): %s", name ? name : "",
                    ctx->step_open ? "a step is already open" : "no iteration has begun");
        return UMADV_ERR_STATE;
    }
    ctx->step_timed = 0;
    umadv__ctx_record_tail_close(ctx);
    if (ctx->record == UMADV_CTX_REC_RECORDING) {
        status = umadv__trace_add_step(&ctx->trace, name, UMADV_STEP_LAYER, 0, 0, &step);
        if (status == UMADV_OK)
            status = pending_enter(ctx, step);
        if (status != UMADV_OK)
            return status;
        ctx->step = step;
        ctx->step_timed = 1;
        umadv__ctx_host_note(ctx, step, entered);
    } else if (ctx->tpass.state == UMADV_CTX_TPASS_RUNNING) {
        ctx->step = umadv__ctx_tpass_step(ctx, name, UMADV_STEP_LAYER);
        ctx->step_timed = ctx->step != UMADV_STEP_NONE;
    }
    ctx->step_stream = stream;
    ctx->step_open = 1;
    ctx->step_declared = 0;
    ctx->step_complete = 0;
    ctx->step_unseen = 0;
    ctx->nstep_ranges = 0;
    ctx->stats.steps++;
    umadv__ctx_host_back(ctx);
    return UMADV_OK;
}

/* The open step's time starts once it has its data: a timing pass runs
 * under a replay, whose wait for the step's data is the host's, and an
 * event recorded before it timed the wait as the step's compute (VGG-16
 * in C at batch 512: 6.6 s of "compute" for 1.3). */
void umadv__ctx_step_timing_start(umadv_context_t ctx)
{
    if (!ctx->step_open || !ctx->step_timed)
        return;
    ctx->step_timed = 0;
    timing_start(ctx, ctx->step_stream);
}

umadv_status_t umadv__ctx_record_kernel_step(umadv_context_t ctx, const char *name,
                                             uint32_t *step_p)
{
    umadv_status_t status;
    uint32_t step;

    /* Its time comes from the kernel's activity record; 1 ns until then. */
    status = umadv__trace_add_step(&ctx->trace, name, UMADV_STEP_KERNEL, 0, 1, &step);
    if (status == UMADV_OK)
        status = pending_enter(ctx, step);
    if (status != UMADV_OK)
        return status;
    ctx->stats.steps++;
    *step_p = step;
    return UMADV_OK;
}

static umadv_status_t step_access(umadv_context_t ctx, const void *ptr, size_t size,
                                  umadv_access_mode_t mode)
{
    umadv_pool_loc_t loc;
    umadv_ctx_alloc_t *alloc;

    if (!ctx->step_open) {
        umadv_error("umadv_step_access(%p): no step is open", ptr);
        return UMADV_ERR_STATE;
    }
    if (size == 0 || mode < UMADV_ACCESS_READ || mode > UMADV_ACCESS_RW)
        return UMADV_ERR_INVALID_PARAM;
    if (umadv__pool_lookup(ctx->pool, ptr, &loc) != UMADV_OK || loc.offset >= loc.size ||
        size > loc.size - loc.offset) {
        umadv_error("umadv_step_access(%p, %zu): not inside one umadv allocation", ptr, size);
        return UMADV_ERR_NOT_FOUND;
    }
    alloc = (umadv_ctx_alloc_t *)(uintptr_t)loc.user;
    if (ctx->record != UMADV_CTX_REC_RECORDING)
        return UMADV_OK;
    ctx->step_declared = 1;
    umadv__ctx_profile_declared(ctx, alloc, ptr, size);
    return umadv__trace_add_access(&ctx->trace, alloc->trace_id, loc.offset, size, mode, 0);
}

UMADV_API umadv_status_t umadv_step_access(umadv_context_t ctx, const void *ptr, size_t size,
                                           umadv_access_mode_t mode)
{
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = step_access(ctx, ptr, size, mode);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

static umadv_status_t step_access_complete(umadv_context_t ctx)
{
    if (!ctx->step_open) {
        umadv_error("umadv_step_access_complete: no step is open");
        return UMADV_ERR_STATE;
    }
    if (ctx->step_complete || ctx->record != UMADV_CTX_REC_RECORDING)
        return UMADV_OK;
    ctx->step_complete = 1;
    return umadv__ctx_profile_complete_step(ctx, ctx->step);
}

UMADV_API umadv_status_t umadv_step_access_complete(umadv_context_t ctx)
{
    umadv_status_t status;

    if (ctx == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&ctx->lock);
    status = step_access_complete(ctx);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

void umadv__ctx_step_ended(umadv_context_t ctx, uint64_t duration_ns)
{
    if (ctx->record != UMADV_CTX_REC_RECORDING &&
        (ctx->tpass.state != UMADV_CTX_TPASS_RUNNING || ctx->step == UMADV_STEP_NONE))
        return;
    if (duration_ns == 0) {
        timing_end(ctx);
        return;
    }
    event_put(ctx, ctx->step_start_event);
    ctx->step_start_event = NULL;
    step_duration_set(ctx, ctx->step, duration_ns);
}

umadv_status_t umadv__ctx_no_trace(umadv_context_t ctx, const char *caller)
{
    if (umadv__ctx_profile_second_waits(ctx)) {
        umadv_error("%s: the profile takes two passes (UMADV_PROFILE_PASSES): its trace is "
                    "the second's, recorded in the next iteration", caller);
        return UMADV_ERR_STATE;
    }
    if (ctx->record_lost != UMADV_OK) {
        umadv_error("%s: no profiled iteration: it marked no steps, and cupti could not "
                    "trace its kernel launches (see the warning above)", caller);
        return ctx->record_lost;
    }
    umadv_error("%s: no profiled iteration: call umadv_profile_next_iteration(), then "
                "run one iteration of steps", caller);
    return UMADV_ERR_STATE;
}

umadv_status_t umadv__ctx_trace_write(umadv_context_t ctx, const char *path)
{
    umadv_status_t status;
    char why[512];

    status = umadv__trace_write_file(&ctx->trace, path, why, sizeof(why));
    if (status != UMADV_OK)
        umadv_error("umadv_trace_save: %s", why);
    return status;
}
