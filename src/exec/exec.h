/*
 * The executor: replays a policy on live managed memory, iteration after
 * iteration, under a GPU memory budget.
 *
 * It works in the names of the profiled trace: allocation ids and their
 * sections. The caller binds each trace allocation to the live block that
 * plays its role now (umadv__exec_bind); operations on an allocation with
 * no block bound are skipped and counted as drift. api/replay.c does the
 * binding for the context.
 *
 * The application's thread marks iterations and steps; migrations run on
 * the executor's own threads, because cudaMemPrefetchAsync blocks its
 * caller for the whole migration (DESIGN.md, measured envelope). exec.c's
 * opening comment gives the threading model.
 *
 * Policies (umadv.h), all under the same budget:
 *  - plan: the schedule's FETCH and ADVISE ops are queued when their issue
 *    step begins, EVICT and DROP ops when it ends;
 *  - oracle: no budget; everything bound is fetched at start, and what a
 *    step uses and is not on the GPU is fetched when it begins; nothing is
 *    ever evicted;
 *  - prefetch-all: when a step begins, least recently used sections it
 *    does not use are evicted until its missing sections fit, then those
 *    are fetched; the step waits for them;
 *  - demand: the same evictions, which the step waits for, and no fetch:
 *    the step's kernels fault their data in.
 * Every policy but oracle first evicts what the profiling pass left on the
 * GPU (plan keeps the schedule's resident_at_start sections, fetching
 * them), so that the accounted residency is the real one.
 *
 * With params.stage, evictions of stageable blocks (umadv__exec_set_stageable)
 * go through pinned staging (schedule/core.h, STAGING; stage.c): the range
 * holds no valid data until restored, which every step that touches it,
 * every copy or memset of the application that touches it
 * (umadv__exec_stage_restore_range), and every end, waits for.
 */
#ifndef UMADV_EXEC_EXEC_H
#define UMADV_EXEC_EXEC_H

#include <stdint.h>

#include <umadv.h>

#include "cuda_ops/cuda_ops.h"
#include "schedule/core.h"
#include "schedule/schedule.h"
#include "trace/trace.h"

typedef struct umadv_exec umadv_exec_t;

struct umadv_numa_place; /* numa/numa.h */

/* Pinned chunks a staging pool is made of, at most. */
#define UMADV_STAGE_CHUNKS 16

/* A pinned staging pool kept between executors (exec/stage.c, THE POOL):
 * an executor takes its chunks, pins one more when they are too few, and
 * leaves them all here when it ends; the owner frees them with
 * umadv__exec_stage_cache_free. */
typedef struct umadv_stage_cache {
    void    *base[UMADV_STAGE_CHUNKS];
    uint64_t bytes[UMADV_STAGE_CHUNKS];
    uint32_t n; /* 0: none */
    struct umadv_stage_ahead *ahead; /* a chunk being pinned ahead of the next
                                      * executor; NULL: none */
} umadv_stage_cache_t;

/* Pin on a thread of its own (on @device, whose context the pages are
 * pinned for) what @cache lacks of @bytes (whole slots of @slot_size),
 * ahead of the executor that will take the cache: it joins
 * the cache at umadv__exec_stage_cache_settle. Nothing is pinned where
 * the cache holds enough, has no room for a chunk or pins one already.
 * Pinning that fails leaves the cache as it was (the executor pins its
 * own pool then, and says why it cannot). UMADV_ERR_NO_MEMORY: no
 * memory or no thread to pin it on. */
umadv_status_t umadv__exec_stage_pin_ahead(const umadv_cuda_ops_t *ops, int device,
                                           const struct umadv_numa_place *numa,
                                           umadv_stage_cache_t *cache, uint64_t slot_size,
                                           uint64_t bytes);
/* Wait for the pinning ahead of @cache, if any; its chunk joins the
 * cache. umadv__exec_create settles its params.stage_cache. */
void umadv__exec_stage_cache_settle(umadv_stage_cache_t *cache);
/* Settles @cache, then unpins and frees its chunks. */
void umadv__exec_stage_cache_free(const umadv_cuda_ops_t *ops, umadv_stage_cache_t *cache);

typedef struct umadv_exec_params {
    const umadv_cuda_ops_t *ops;
    int                     device;
    umadv_policy_t          policy;
    uint64_t                budget;         /* bytes; 0 = none (oracle: always none) */
    const umadv_trace_t    *trace;          /* finalized; outlives the executor */
    uint32_t                first_step;     /* global index of the replayed iteration */
    uint32_t                nsteps;         /* steps of that iteration */
    const umadv_schedule_t *schedule;       /* plan policy; outlives the executor */
    uint64_t                wait_timeout_ns;/* a step waits this long for its data at most */
    uint64_t                monitor_period_ns; /* GPU memory sampling; 0 = no monitor */
    uint64_t                gpu_used_base;  /* GPU memory in use before umadv's data */
    uint64_t                reprofile_faults; /* ask for a re-profile above this; 0 = never */
    uint64_t                max_call_bytes; /* coalesced calls stop growing here; 0 = 256 MiB */
    const struct umadv_numa_place *numa;    /* host node of evictions and host advice,
                                             * cores of the threads; outlives the
                                             * executor. NULL: plain host, unbound */
    int                     stage;          /* staged evictions of stageable memory
                                             * (UMADV_STAGE; schedule/core.h, STAGING) */
    int                     stage_poison;   /* every discarded range filled with
                                             * UMADV_CUDA_HOST_POISON first
                                             * (UMADV_STAGE_POISON) */
    umadv_stage_cache_t    *stage_cache;    /* the staging pool between replays;
                                             * NULL: each executor pins its own */
    uint64_t                pin_aside_bytes;/* a chunk larger that a pool with slots
                                             * grows by is pinned on a thread of its
                                             * own (stage.c, THE POOL); 0 = 256 MiB */
    uint64_t                call_piece_bytes;/* a lane's discards and populations go
                                             * in calls of at most this while the
                                             * application runs (UMADV_LANE_PIECE;
                                             * stage.c); 0: one call each */
    struct umadv_spans     *spans;          /* the measured timeline (exec/spans.h);
                                             * NULL: not recorded */
    umadv_core_observer_t   decisions;      /* shown the replay core's decisions
                                             * (tests); NULL: none */
    void                   *decisions_arg;
} umadv_exec_params_t;

typedef struct umadv_exec_stats {
    uint64_t fetched_bytes;   /* copied to the GPU (fresh populations excluded) */
    uint64_t fresh_bytes;     /* populated on the GPU by FRESH fetches */
    uint64_t fetch_calls;     /* prefetch calls to the GPU, after coalescing; a
                               * batch call counts once */
    uint64_t batch_calls;     /* of those, batch calls (plan.h, BATCHES) */
    uint64_t evicted_bytes;
    uint64_t evict_calls;
    uint64_t dropped_bytes;   /* released without a call (dead memory) */
    uint64_t advise_calls;
    uint64_t waits;           /* steps that waited for migrations */
    uint64_t wait_ns;         /* time application threads waited */
    uint64_t wait_timeouts;
    uint64_t drift_ops;       /* ops on unbound allocations, skipped */
    uint64_t budget_skips;    /* fetches dropped: no room, nothing being evicted */
    uint64_t cuda_errors;
    uint64_t fetch_busy_ns;   /* the fetch lane inside CUDA calls */
    uint64_t evict_busy_ns;   /* the eviction lane inside CUDA calls (not waiting
                               * for step ends) */
    uint64_t faults;          /* unexpected GPU faults noted */
    uint64_t resident;        /* bytes accounted on the GPU now */
    uint64_t resident_peak;
    uint64_t gpu_peak_used;   /* sampled peak of GPU memory in use, less the base:
                               * a high-water mark (the driver keeps the memory
                               * of evicted managed pages while nothing presses
                               * for it); resident_peak is what the budget bounds */
    uint64_t gpu_samples;
    uint64_t staged_bytes;    /* evicted through the staging pool (not in evicted_bytes) */
    uint64_t released_bytes;  /* dead data discarded, nothing copied (schedule/core.h,
                               * DEAD DATA; not in evicted_bytes) */
    uint64_t stage_calls;     /* staged evictions issued (copies, one discard) */
    uint64_t restored_bytes;  /* restored from it by the fetch lane (not in fetched_bytes) */
    uint64_t restore_calls;
    uint64_t sync_restored_bytes; /* restored on a caller's thread: a restore the step
                               * did not get in time, a broken executor, drift, the end */
    uint64_t late_restored_bytes; /* of those, by a step's last check: data the core's
                               * decisions did not bring in time (a wait timed out, a
                               * decision lost) */
    uint64_t copy_restored_bytes; /* of those, for an application's copy or memset
                               * (umadv__exec_stage_restore_range) */
    uint64_t stage_fallback_bytes; /* staged evictions migrated: no room in the pool */
    uint64_t app_placed_bytes; /* prefetched before an application's copy or
                               * memset into them (umadv__exec_app_write) */
    uint64_t copy_held_bytes; /* staged evictions migrated: an application's copy or
                               * memset touched the data after the step end they
                               * waited for, and may not have run yet */
    uint64_t unseen_held_bytes; /* evictions of stageable data that migrate: a step
                               * before its next touch may reach it unseen (the
                               * replay core's, schedule/core.h, STAGING) */
    uint64_t held_evictions;  /* evictions that waited for a hold (umadv__exec_hold) */
    uint64_t hold_wait_ns;    /* the eviction lane in those waits */
    uint64_t lock_waits;      /* step calls that found the executor's lock held */
    uint64_t lock_wait_ns;    /* application threads waiting for it there */
} umadv_exec_stats_t;

/* Start the worker and monitor threads. UMADV_ERR_INVALID_PARAM for a
 * plan policy without a schedule or a schedule of another step count. */
umadv_status_t umadv__exec_create(const umadv_exec_params_t *params, umadv_exec_t **exec_p);

/* Stop the threads (an op in flight completes first; queued ops are
 * dropped), undo the advice the executor set, free everything. */
void umadv__exec_destroy(umadv_exec_t *exec);

/*
 * Trace allocation @alloc is now played by [@base, @base + @size), part of
 * the managed allocation that starts at @arena (adjacent blocks of one
 * arena are moved by one call). A block that existed before the executor
 * (@maybe_resident) may have pages on the GPU: they are counted until
 * evicted; a new one is fresh. A block bound elsewhere is unbound first.
 * The size must be the trace's: UMADV_ERR_INVALID_PARAM otherwise.
 */
umadv_status_t umadv__exec_bind(umadv_exec_t *exec, uint32_t alloc, void *base,
                                uint64_t size, void *arena, int maybe_resident);

/* The block bound to @alloc is going away (freed: its data is dead, its
 * staging is dropped): no op touches it after this returns (it waits for
 * a call in flight on it), its advice is undone and its sections leave
 * the accounting. A block that loses its role to another (bind) is live:
 * its staged sections are restored first. */
void umadv__exec_unbind(umadv_exec_t *exec, uint32_t alloc);

/* Whether the block bound to @alloc may be staged (schedule/core.h,
 * STAGING; binding clears it). Turning it off restores its staged
 * sections first, synchronously. */
void umadv__exec_set_stageable(umadv_exec_t *exec, uint32_t alloc, int on);
/* Evictions of the block bound to @alloc wait for @event first (the
 * eviction lane, before its call; api/context.c, HOLDS). The event is the
 * caller's, recorded again at each hold; it must outlive the binding.
 * NULL: no hold. */
void umadv__exec_hold(umadv_exec_t *exec, uint32_t alloc, umadv_event_t event);

/* The plan policy's next schedule, in place: @install (under the
 * executor's lock) writes it where params.schedule points. Only for the
 * same steps and budget, with advice in neither schedule (what the old
 * one advised would stay set): then what the GPU and the staging hold
 * stays where it is, and the decisions already queued run as decided.
 * Otherwise UMADV_ERR_STATE, nothing installed: stop and start again. */
umadv_status_t umadv__exec_schedule_replace(umadv_exec_t *exec, const umadv_schedule_t *next,
                                            uint64_t budget, void (*install)(void *arg),
                                            void *arg);

/* Every staged section holds its data again when this returns
 * (synchronous; destroy does it first). */
void umadv__exec_restore_all(umadv_exec_t *exec);

/* The application is about to copy or set [@ptr, @ptr + @bytes) (a
 * memcpy or memset between kernels: loss.item(), zero_()), on the step's
 * stream or ordered before the next step's end: every staged section of
 * a bound block overlapping it holds its data again when this returns
 * (synchronous, on the calling thread), and an eviction that waits only
 * for an earlier step end (the copy may not have run yet) migrates those
 * sections instead of staging them. Any thread. Without staging a check;
 * with it, the lock and an address lookup. The executor's own copies,
 * which a watch of copies also sees, are ignored. */
void umadv__exec_stage_restore_range(umadv_exec_t *exec, const void *ptr, uint64_t bytes);

/* The application is about to copy into or set [@ptr, @ptr + @bytes), at
 * its call's entry: the part in bound blocks without advice that has a
 * section the executor does not hold resident is prefetched to the GPU
 * first, on the calling thread, waited for. Otherwise the copy engine
 * faults on every page of it still on the host or never populated (a
 * block just bound where evictions or discards left its pages: a batch
 * copied in each iteration, stage.c, THE APPLICATION'S WRITES), and a
 * fetch the plan issues for the next step runs only after the copy.
 * Any thread; the executor's own copies are ignored. */
void umadv__exec_app_write(umadv_exec_t *exec, const void *ptr, uint64_t bytes);

/* What runs until the next iteration is not known to the replay (kernel
 * launches that diverged from the profiled steps): everything staged is
 * restored now, and nothing is staged until umadv__exec_iteration_begin.
 * A step past the profiled count does the same by itself. */
void umadv__exec_stage_pause(umadv_exec_t *exec);

/* Queue what the policy does before the first iteration. @stream is where
 * the application last worked: initial evictions wait for it. */
umadv_status_t umadv__exec_start(umadv_exec_t *exec, umadv_stream_t stream);

/* An iteration begins. Returns 1 when the iteration that ended had more
 * unexpected faults than reprofile_faults in steady state (logged): the
 * caller should profile again. */
int umadv__exec_iteration_begin(umadv_exec_t *exec);

/* Step begins: queue its ops; never blocks on a migration. */
void umadv__exec_step_begin(umadv_exec_t *exec);

/* Wait until every migration the open step needs has completed, or the
 * timeout (logged; the step goes on: a prefetch is only a hint). */
void umadv__exec_step_wait(umadv_exec_t *exec);

/* The same, the step's work going to @stream: fresh populations it needs
 * are issued there by the calling thread, ordered before the work, rather
 * than waited for (umadv__exec_fetch_on_step). */
void umadv__exec_step_wait_on(umadv_exec_t *exec, umadv_stream_t stream);

/* Step ends: record an event on @stream and queue the step's evictions
 * behind it. */
void umadv__exec_step_end(umadv_exec_t *exec, umadv_stream_t stream);

/* @n unexpected GPU faults seen in the current iteration (the profiler
 * feeds this); any thread. */
void umadv__exec_note_faults(umadv_exec_t *exec, uint64_t n);

/* The trace allocation a bound block at @addr plays, and the section of
 * it @addr lies in: 0 when no bound block holds @addr. Any thread. */
int umadv__exec_locate(umadv_exec_t *exec, uintptr_t addr, uint32_t *alloc_p,
                       uint32_t *section_p);

/* Faults counted in the iteration under way so far. */
uint64_t umadv__exec_iteration_faults(umadv_exec_t *e);

void umadv__exec_get_stats(umadv_exec_t *exec, umadv_exec_stats_t *stats);

/* Wait until both lanes are idle with nothing queued (or the executor is
 * broken): every decision made so far has been carried out. */
void umadv__exec_drain(umadv_exec_t *exec);

/* 1 once a CUDA call failed: the executor stopped issuing (plain managed
 * memory from then on). */
int umadv__exec_broken(umadv_exec_t *exec);

#endif
