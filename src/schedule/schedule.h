/*
 * The schedule contract: what the planner hands to whoever replays it
 * (the executor on live memory, the simulator on the link model), through
 * the replay core (schedule/core.h), which decides for both.
 *
 * A schedule covers one iteration of the trace and is replayed every
 * iteration (the access pattern of training is periodic). It is a list of
 * operations on runs of sections, each tied to a step: fetches are issued
 * when their issue step begins and must complete before their need step
 * starts; evictions and drops are issued when their issue step ends.
 * Operations on adjacent sections issued together are coalesced into one
 * run, since a call's fixed cost dominates small transfers.
 *
 * Replaying a schedule (what the simulator does, and what an executor must
 * do for the plan's budget to hold):
 *  - at the start of step s, queue the FETCH ops of issue step s; at its
 *    end, queue its EVICT ops and apply its DROP ops;
 *  - one fetch lane serves the queued fetches earliest need first (FIFO by
 *    need, counting a UMADV_OP_FLAG_NEXT_ITERATION fetch as needed in the
 *    next iteration); it starts a fetch only when the fetch fits the
 *    budget, counting data in flight either way and memory under eviction
 *    until the eviction completes;
 *  - one eviction lane serves evictions in order.
 * The planner guarantees that the room each fetch needs is freed by
 * evictions and drops issued before its issue step, so the fetch lane
 * never waits for anything but lanes already running: no deadlock.
 *
 * WHAT AN EXECUTOR DOES FOR EACH OPERATION (CUDA calls on the op's run;
 * "device" is the GPU the trace was planned for, "host" the CPU, or the
 * host NUMA node nearest the GPU):
 *  - FETCH (at the step's start, after its ADVISE sets):
 *    cudaMemPrefetchAsync(run, device). A prefetch migrates whatever the
 *    preferred location says; the plan never fetches a run whose
 *    PREFERRED_HOST advice is still set, so it does not rely on that.
 *    FRESH: the same call (it populates pages; nothing to copy).
 *    BATCHES: the fetch lane's call for the fetch it serves takes along
 *    the other queued fetches of the same need step whose copies are
 *    small (0 < copied bytes <= umadv__schedule_batch_bytes) and that fit the
 *    budget, as one cudaMemPrefetchBatchAsync. Such a call costs one
 *    latency, half a latency per further range, and the copied bytes at
 *    the link's bandwidth (the simulator models it so). FRESH runs are
 *    not batched: populating costs per range, batched or not (H200,
 *    driver 580, 2026-11, 256 ranges of 2 MiB: fresh 44 us per range one
 *    call each, 56 us in one batch; copied 194 us per range one call
 *    each, 108 us in one batch).
 *  - EVICT (at the step's end, once the step's work is complete):
 *    cudaMemPrefetchAsync(run, host).
 *  - DROP (at the step's end, once the step's work is complete): nothing
 *    to copy; the run is freed, or a clean read-mostly copy the driver
 *    may release (cudaMemDiscard only for freed memory, DESIGN.md).
 *  - ADVISE, by advice:
 *    READ_MOSTLY       cudaMemAdviseSetReadMostly. Only in setup; never
 *                      reverted.
 *    PREFERRED_HOST    cudaMemAdviseSetPreferredLocation(host).
 *    ACCESSED_BY       cudaMemAdviseSetAccessedBy(device).
 *                      These two come as a pair on the same run, at the
 *                      start of the step (before any of its work is
 *                      launched) that begins a stretch of steps reading
 *                      or writing the run over the link ("host
 *                      placement"): the run is not on the GPU then (it
 *                      was evicted, or it is fresh memory that the first
 *                      write populates on the host), the GPU maps it and
 *                      its kernels access it remotely: no fault, no
 *                      migration, no GPU memory.
 *    NONE              cudaMemAdviseUnsetPreferredLocation and
 *                      cudaMemAdviseUnsetAccessedBy(device): back to the
 *                      driver's default. At the end of the stretch's last
 *                      step, once its work is complete (as an eviction
 *                      waits), before any later FETCH of the run.
 *    PREFERRED_DEVICE  not emitted by this planner.
 *    In the ops of a step, the sets come first (PREFERRED_HOST, then
 *    ACCESSED_BY, then the fetches), and at its end the NONE ops come
 *    before the evictions and drops. Every set in ops is followed by its
 *    NONE within one replay, cyclically. A run in the middle of a stretch
 *    when the iteration begins (a stretch of persistent data crossing the
 *    wrap) also has its pair in setup, so that the first replay finds it
 *    advised; a persistent run accessed remotely by every step that
 *    touches it has its pair in setup only and is never reverted. Memory
 *    that is freed within the iteration is always reverted before its
 *    free, so advice never outlives the data it was meant for.
 */
#ifndef UMADV_SCHEDULE_SCHEDULE_H
#define UMADV_SCHEDULE_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "common/keyed.h"
#include "trace/trace.h"

typedef enum umadv_op_kind {
    UMADV_OP_FETCH  = 0, /* prefetch the run to the GPU */
    UMADV_OP_EVICT  = 1, /* prefetch the run to the host (copies data) */
    UMADV_OP_DROP   = 2, /* release without copying: freed, or a clean read-mostly copy */
    UMADV_OP_ADVISE = 3  /* set advice on the run */
} umadv_op_kind_t;

typedef enum umadv_advice {
    UMADV_ADVICE_NONE              = 0,
    UMADV_ADVICE_READ_MOSTLY       = 1, /* data never written in the trace */
    UMADV_ADVICE_PREFERRED_HOST    = 2,
    UMADV_ADVICE_PREFERRED_DEVICE  = 3,
    UMADV_ADVICE_ACCESSED_BY       = 4  /* GPU maps host-resident pages */
} umadv_advice_t;

/* umadv_op_t.flags */
enum umadv_op_flag {
    /* FETCH of memory allocated in this iteration and not yet touched:
     * nothing to copy, the call only populates pages on the GPU (costs a
     * call's latency, no bytes), so the step does not fault on them. */
    UMADV_OP_FLAG_FRESH          = 1u << 0,
    /* FETCH issued near the end of an iteration for a step of the next
     * one (need_step < issue_step). */
    UMADV_OP_FLAG_NEXT_ITERATION = 1u << 1,
    /* EVICT of dead data (umadv__schedule_mark_dead): the next op on each
     * section of its run is a FRESH fetch, which populates it without a
     * copy. The replay releases its pages without a copy (a discard) where
     * the allocation may be staged (core.h, DEAD DATA). */
    UMADV_OP_FLAG_DEAD           = 1u << 2
};

typedef struct umadv_op {
    umadv_op_kind_t kind;
    umadv_advice_t  advice;      /* UMADV_OP_ADVISE only */
    uint32_t        alloc;       /* allocation */
    uint32_t        first;       /* first section inside the allocation */
    uint32_t        count;       /* sections in the run */
    uint64_t        bytes;
    uint32_t        issue_step;  /* step index relative to the iteration's first */
    uint32_t        need_step;   /* FETCH: step that needs it; EVICT/DROP: last use;
                                  * ADVISE: the first (sets) or last (NONE) step
                                  * of its remote stretch, = issue_step */
    uint32_t        flags;       /* OR of umadv_op_flag */
} umadv_op_t;

typedef struct umadv_schedule {
    uint64_t    budget;
    uint32_t    first_step;     /* global index of the planned iteration's first step */
    uint32_t    nsteps;
    umadv_op_t *setup;          /* advice applied once before the first replay */
    size_t      nsetup;
    umadv_op_t *ops;            /* ordered by issue step; fetches in need order */
    size_t      nops;
    uint32_t   *step_ops;       /* nsteps+1 offsets: ops of issue step s are
                                 * ops[step_ops[s] .. step_ops[s+1]) */
    uint8_t    *resident_at_start; /* per global section: on the GPU, or being
                                    * fetched to it, when the iteration begins,
                                    * in steady state */
    /* totals per iteration; fetch_bytes counts copied bytes only, fresh_bytes
     * the bytes FRESH fetches populate without a copy; drop_bytes counts
     * read-mostly drops and releases of freed allocations */
    uint64_t    fetch_bytes, evict_bytes, drop_bytes, fresh_bytes;
    uint32_t    fetch_ops, evict_ops;
    uint64_t    dead_bytes;     /* of evict_bytes, FLAG_DEAD's: nothing copied */
    /* of evict_bytes, those of allocations the replay stages (pinned
     * staging instead of migration: core.h, STAGING; plan.c, CHANNELS);
     * one decided while the staging pool is full still migrates */
    uint64_t    staged_bytes;
    int         stage_priced;   /* the planner priced them at the link model's
                                 * staged figures (plan.c, CHANNELS), not as
                                 * UVM evictions */
    /* host placement, per iteration: bytes of the runs advised to the host
     * (each stretch counted once, setup included), bytes the steps access
     * over the link, and the time that adds to the steps (remote_bytes /
     * remote_bw: remote access stalls the kernel) */
    uint64_t    host_bytes, remote_bytes;
    double      remote_s;
    uint32_t    advise_ops;     /* ADVISE ops in ops (setup not counted) */
    uint64_t    peak_planned;   /* largest planned residency at any step */
    uint64_t    max_step_bytes; /* largest single-step working set */
    double      plan_seconds;   /* time the planner took */
    uint32_t    passes;         /* residency passes run to find the steady state */
    int         victims;        /* the victim rule that made it (plan/plan.h,
                                 * UMADV_PLAN_VICTIMS_*) */
    int         converged;      /* 0: the state did not repeat within max_passes
                                 * and the last pass was closed by extra ops */
} umadv_schedule_t;

void umadv__schedule_cleanup(umadv_schedule_t *schedule);

/* Bytes of the schedule's evictions that it never reads back: an EVICT
 * whose next op on its sections (in issue order, wrapping into the next
 * iteration) is a fresh FETCH or a DROP, or that no other op touches.
 * Data alive when room was needed, that the next iteration repopulates
 * without a copy or releases (on a PyTorch GPT-2, gradients that the
 * next zero_grad frees unread): why evictions can exceed fetches.
 * UMADV_ERR_NO_MEMORY when the op index cannot be made. */
umadv_status_t umadv__schedule_evicted_unread(const umadv_schedule_t *schedule,
                                              uint64_t *bytes_p);

/* Bytes the schedule's evictions migrate (UVM): neither staged nor dead. */
static inline uint64_t umadv__schedule_migrated_bytes(const umadv_schedule_t *s)
{
    return s->evict_bytes - s->staged_bytes - s->dead_bytes;
}

/* Sets UMADV_OP_FLAG_DEAD on the EVICTs of allocations @trace marks
 * stageable (memory the CPU never reads) each section of whose run is next
 * touched (in issue order, wrapping into the next iteration; advice
 * included) by a FRESH fetch, one or several: a fresh fetch copies nothing
 * in, so nothing the eviction would copy out is ever read. Freed data
 * needs no such flag (a free drops it). Not on a BORN allocation's
 * (window.h): the next replay reads its data as another allocation. UMADV_ERR_NO_MEMORY when the op
 * index cannot be made (no flag set). */
umadv_status_t umadv__schedule_mark_dead(umadv_schedule_t *schedule,
                                         const umadv_trace_t *trace);

/* Sets advised[s] (one byte per global section of @trace) for every
 * section an ADVISE op of @schedule covers, in its setup or its ops: the
 * sections the replay never stages, whose evictions migrate (core.h,
 * STAGING). The caller zeroes the array. */
void umadv__schedule_mark_advised(const umadv_schedule_t *schedule, const umadv_trace_t *trace,
                                  uint8_t *advised);

/* A fetch whose copy takes no longer than a call's latency joins the
 * batch call of its need step (see BATCHES above): latency * bandwidth
 * bytes; 0 (no batches) without a link model. */
static inline uint64_t umadv__schedule_batch_bytes(const umadv_link_model_t *link)
{
    double bytes = link->fetch_latency * link->fetch_bw;

    /* NaN fails the test; past 2^62 a batch is anything (no cast overflow) */
    if (!(bytes >= 1))
        return 0;
    return bytes < 0x1p62 ? (uint64_t)bytes : UINT64_C(1) << 62;
}

/* Where a schedule takes each section of its trace off the GPU: the
 * steps its EVICTs and DROPs of the section are issued at, global steps;
 * and the allocations an ADVISE op places on the host, off whenever
 * their steps do not hold them. The two-pass profile asks it which blocks
 * the plan of its first pass may stage or drop across a launch
 * (api/profile.c, TWO PASSES). */
typedef struct umadv_schedule_off {
    umadv_keyed_t from;     /* by section: the issue steps of its moves off */
    uint8_t      *placed;   /* per allocation: advised to the host */
    uint32_t      nallocs;
} umadv_schedule_off_t;

/* Index @schedule's moves off the GPU over @trace, the trace it was
 * planned on. UMADV_ERR_NO_MEMORY: nothing indexed. */
umadv_status_t umadv__schedule_off_init(umadv_schedule_off_t *off,
                                        const umadv_schedule_t *schedule,
                                        const umadv_trace_t *trace);
void umadv__schedule_off_cleanup(umadv_schedule_off_t *off);

/* Whether @off has @section (of allocation @alloc) off the GPU when step
 * @step begins, in the gap after its use at step @last (after @step: a
 * use of the replay before): a move off issued from @last up to the step
 * before @step, the replay wrapping. A section @off does not know, or of
 * an allocation placed on the host, is. */
int umadv__schedule_off_across(const umadv_schedule_off_t *off, uint32_t section,
                               uint32_t alloc, uint32_t last, uint32_t step);

const char *umadv__op_kind_name(umadv_op_kind_t kind);
const char *umadv__advice_name(umadv_advice_t advice);

#endif
