/*
 * The context behind the public API: configuration, the CUDA backend, the
 * pool, and the profiling recorder that turns marked steps, declared
 * accesses and allocations into a trace (trace/trace.h).
 *
 * Recording. umadv_profile_next_iteration() arms the recorder; the next
 * umadv_iteration_begin() starts it; the one after that (or umadv_plan(),
 * umadv_trace_save() once no step is open) completes it. Allocations enter
 * the trace when the first step of their life begins: blocks live when the
 * iteration began are "allocated before the first step" (UMADV_STEP_NONE),
 * blocks made between steps wait on the pending list, blocks made inside a
 * step enter at once. A block that never lives through a step is not in
 * the trace: nothing recorded could touch it.
 *
 * Where the context stands (recording, timing, replaying, ...) is the
 * state of one machine, api/lifecycle.h; the files below are its leaves.
 *
 * Every entry point takes ctx->lock, so umadv_malloc() and umadv_free()
 * may be called from any thread.
 */
#ifndef UMADV_API_CONTEXT_H
#define UMADV_API_CONTEXT_H

#include <pthread.h>
#include <sys/types.h>

#include <umadv.h>

#include "common/config.h"
#include "cuda_ops/cuda_ops.h"
#include "api/lifecycle.h"
#include "exec/exec.h"
#include "plan/plan.h"
#include "pool/pool.h"
#include "trace/gaps.h"
#include "trace/trace.h"

/* A range an application's copy or memset may touch (pcopies.c). */
typedef struct umadv_ctx_copy {
    uintptr_t ptr;
    uint64_t  bytes;
} umadv_ctx_copy_t;

/* What the context knows of each live block (the pool's user value). */
typedef struct umadv_ctx_alloc {
    void    *ptr;
    uint64_t size;
    char    *tag;          /* its copy, in the record's own allocation; or NULL */
    void    *arena;        /* the base of the pool arena it lies in */
    uint32_t trace_id;     /* UMADV_CTX_NO_TRACE_ID unless in the recording */
    uint32_t pending;      /* 1 + index in ctx->pending, 0 when not pending */
    int      preexisting;  /* live when the recorded iteration began */
    uint32_t ordinal;      /* umadv_malloc() calls before it in its iteration */
    uint32_t bound;        /* trace allocation it plays in replay, or NO_TRACE_ID */
    uint32_t kept_id;      /* its trace_id in the kept profile (re-profiling) */
    int      stageable;    /* umadv_set_stageable: evictions may stage it */
    uint32_t fetched_epoch;/* profiling: the profile_epoch it was fetched back in */
    uint32_t declared_epoch;/* ...and the one its declared bytes [declared_lo,
                            * declared_hi) were fetched back in (profile.c) */
    uint64_t declared_lo, declared_hi;
    uint32_t gpu_epoch;    /* profiling: the last profile_epoch it may have come onto
                            * the GPU in (fetched back, declared, kept, copied into;
                            * 0 and host_epoch 0: new, it may lie there) */
    uint32_t host_epoch;   /* ...and the one whose opening eviction sent it to the
                            * host: there since unless gpu_epoch >= host_epoch
                            * (profile.c, EVICTING WHAT MAY BE ON THE GPU) */
    int      kept_whole;   /* profiling: the eviction being collected keeps it,
                            * whole (evict_live) */
    uint32_t scout_id;     /* profiling: its allocation in the first pass's trace,
                            * as last looked up (keep_collect; checked before use) */
    const char *site;      /* profile mode: where it was allocated (profiler/callsite.h,
                            * kept for the process's life); NULL */
    umadv_event_t hold;    /* umadv_hold_resident: recorded on the holder's stream;
                            * evictions of the block wait for it. NULL: never held */
    uint32_t held;         /* 1 + index in ctx->held, 0 when not held */
} umadv_ctx_alloc_t;

/* A block a profile's second pass left where it lies through an eviction
 * (profile.c, TWO PASSES), and whether it may have been on the GPU then. */
typedef struct umadv_ctx_stay {
    umadv_ctx_alloc_t *alloc;
    int                on_gpu;
} umadv_ctx_stay_t;

#define UMADV_CTX_NO_TRACE_ID UINT32_MAX

/* A block of the recording that eviction @eviction (an index into
 * ctx->evict_steps) left out, on the host since an earlier one. */
typedef struct umadv_ctx_left_out {
    uint32_t alloc;     /* its trace id */
    uint32_t eviction;
} umadv_ctx_left_out_t;

/* A step timed by events, resolved when the recording completes. */
typedef struct umadv_ctx_timing {
    uint32_t      step;
    umadv_event_t start, end;
} umadv_ctx_timing_t;

/* Replay (api/replay.c): the executor and which block plays which
 * allocation of the recorded trace. */
typedef struct umadv_ctx_replay {
    umadv_exec_t       *exec;          /* NULL: not replaying */
    uint32_t            waits;         /* steps waiting on exec without ctx->lock
                                        * (replay.c, WAITS WITHOUT THE LOCK); atomic */
    uint32_t           *ordinal_alloc; /* profiled iteration: k-th malloc -> trace alloc */
    size_t              nordinals, ordinals_cap;
    umadv_ctx_alloc_t **bound;         /* trace alloc -> the block playing it, or NULL */
    size_t              bound_cap;
    uint32_t            mallocs;       /* umadv_malloc() calls in this iteration */
    uint64_t            faults;        /* GPU faults of the iteration that ended */
    uint64_t            gpu_used_base; /* GPU memory in use when the context started */
    umadv_exec_stats_t  done;          /* counters of the executors that ended */
    umadv_exec_stats_t  last;          /* the last one that ended (its peaks) */
    struct umadv_spans *spans;         /* UMADV_TIMELINE's recording; NULL: off */
    umadv_stage_cache_t stage_cache;   /* the pinned staging pool between replays */
    uint64_t            fault_floor;   /* faults of the iteration that last asked for a
                                        * re-profile: drift is measured above twice it */
    uint64_t            unbound_bytes; /* this iteration's blocks no allocation of the
                                        * profile took (replay.c, ALLOCATION DRIFT) */
    uint64_t            unbound_last;  /* ...the iteration that ended */
    uint64_t            unbound_floor; /* ...the iteration that last asked for a
                                        * re-profile: drift above twice it */
    int                 start_held;    /* the executor's start waits for the recording's
                                        * tail to close (replay.c, THE START); 2: an
                                        * iteration began since */
} umadv_ctx_replay_t;

/* A plan built on a thread of its own (api/ahead.c, PLANNING AHEAD). */
typedef struct umadv_ctx_ahead {
    pthread_t           thread;
    int                 running;  /* the thread is to be joined */
    int                 joined;   /* ...was: trace, params, schedule, status hold */
    umadv_trace_t       trace;    /* the copy it plans on */
    umadv_plan_params_t params;
    umadv_schedule_t    schedule; /* its plan (status UMADV_OK) */
    umadv_status_t      status;
    uint64_t            plan_ns;  /* on its thread */
} umadv_ctx_ahead_t;

/* The timing pass (api/tpass.c): the iteration after a profiled one,
 * timed with nothing evicted and no parameter scan, gives the trace its
 * step durations (the profiled ones include fault stalls). Its state says
 * whether the profiler times now; when it should is the life cycle's. */
typedef enum umadv_ctx_tpass_state {
    UMADV_CTX_TPASS_IDLE,
    UMADV_CTX_TPASS_RUNNING   /* the current iteration is being timed */
} umadv_ctx_tpass_state_t;

typedef struct umadv_ctx_tpass {
    umadv_ctx_tpass_state_t state;
    uint32_t                next;       /* steps of the timed iteration so far */
    uint32_t                diverged;   /* first step unlike the trace's, or UMADV_STEP_NONE */
    uint64_t               *durations;  /* measured, per trace step; 0: not yet */
} umadv_ctx_tpass_t;

/* What ctx->trace holds (record.c's data; the life cycle's position is
 * ctx->life.state). */
typedef enum umadv_ctx_record_state {
    UMADV_CTX_REC_IDLE,       /* nothing recorded */
    UMADV_CTX_REC_RECORDING,  /* the current iteration is being recorded */
    UMADV_CTX_REC_DONE        /* ctx->trace holds a finalized iteration */
} umadv_ctx_record_state_t;

struct umadv_context {
    pthread_mutex_t          lock;
    umadv_config_t           config;
    unsigned                 flags;
    const umadv_cuda_ops_t  *ops;
    umadv_device_props_t     props;
    int                      driver_version;
    const struct umadv_numa_place *numa;     /* host node for evictions; NULL: plain host */
    umadv_pool_t            *pool;

    /* marking */
    int                      in_iteration;
    int                      step_open;
    int                      step_timed;       /* the open step is timed, from the end of
                                                * its wait (umadv__ctx_step_timing_start) */
    int                      step_declared;    /* the open step declared an access while
                                                * recorded (umadv_step_access); 2 once
                                                * profile.c took it on its word */
    struct umadv_bulk_range *step_ranges;      /* ...the ranges it declared (profile.c,
                                                * evict_live) */
    size_t                   nstep_ranges, step_ranges_cap;
    int                      step_complete;    /* ...and named everything its work
                                                * touches (umadv_step_access_complete) */
    int                      step_unseen;      /* a launch of it went unseen (profile.c,
                                                * unlaid_unseen) */
    uint32_t                *complete_steps;   /* the profile's steps that did, in order
                                                * (profile.c checks their faults) */
    size_t                   ncomplete_steps, complete_steps_cap;
    uint32_t                 step;           /* trace index of the open step */
    void                    *step_stream;    /* the open step's cudaStream_t */
    uint64_t                 step_start_ns;
    umadv_event_t            step_start_event;  /* NULL: time by the wall clock */
    uint64_t                 host_back_ns;   /* when umadv last handed the application
                                              * back its thread at a mark (record.c,
                                              * HOST TIMES); 0: not yet */

    umadv_cycle_t             life;           /* api/lifecycle.c */

    /* recording */
    umadv_ctx_record_state_t record;
    umadv_trace_t            trace;          /* valid unless IDLE */
    umadv_ctx_alloc_t      **pending;
    size_t                   npending, pending_cap;
    umadv_ctx_timing_t      *timings;
    size_t                   ntimings, timings_cap;
    umadv_event_t           *spare_events;
    size_t                   nspare_events, spare_events_cap;
    int                      events_broken;  /* stop retrying failed events */
    int                      record_blind;   /* CUPTI failed the recording: its kernel
                                              * launches go unseen */
    umadv_status_t           record_lost;    /* why the last recording holds nothing, when
                                              * not the application's doing (UMADV_OK) */
    int                      record_empty;   /* the last recording ended with nothing:
                                              * plan and save say so, even while a
                                              * kept profile replays (lifecycle.c) */
    int                      record_tail;    /* from the recording's end to the next
                                              * step: frees amend the trace (record.c,
                                              * THE TAIL) */
    uint32_t                 record_tail_frees; /* ...blocks it found dying with the window */

    umadv_schedule_t         schedule;
    int                      have_schedule;  /* ctx->schedule holds one */
    uint64_t                 planned_budget; /* what the schedule was planned under
                                              * (umadv_cycle_plan_t.budget): the
                                              * executor's budget */
    umadv_stats_t            stats;

    /* profiling pass (api/profile.c) */
    struct umadv_profiler   *profiler;         /* NULL: declared accesses only */
    int                      profiler_lost;    /* asked for, but CUPTI could not give it */
    umadv_link_model_t       link;             /* this machine's, or the defaults */
    uint64_t                 iteration_faults; /* GPU faults of the last replayed iteration
                                                * (umadv__prof_take_faults; lags while
                                                * work runs) */
    uint64_t                 profile_guessed;  /* this profile's launches without a layout
                                                * whose guessed struct named blocks */
    uint32_t                 profile_guess_steps; /* of them, its steps that rest on the
                                                * guess alone (profile_may_guess): a
                                                * profile under an evicting policy sees
                                                * what they touch */
    uint64_t                 profile_evictions;/* and those evicted before, to fault */
    uint64_t                 profile_moved;    /* calls that moved blocks to the host
                                                * when this profile began */
    uint32_t                 profile_epoch;    /* evictions of every live block in this
                                                * profile (profile.c, FETCHING SCANNED
                                                * BLOCKS BACK) */
    uint64_t                 profile_fetched;  /* bytes fetched back ahead of launches */
    uint64_t                 profile_fetched_there; /* ...of blocks no eviction had sent to
                                                * the host since they may have come onto
                                                * the GPU (new, fetched, kept, copied into) */
    uint64_t                 profile_fetch_spared; /* ...of blocks whose sections were on
                                                * the GPU, fetched since, none evicted
                                                * since: no call (profile.c) */
    uint64_t                 profile_move_calls[2]; /* calls that moved blocks: [0] to
                                                * the GPU, [1] to the host (profile_move) */
    uint64_t                 profile_move_ns[2]; /* host time inside them */
    uint64_t                 profile_move_bytes[2]; /* the bytes their ranges cover */
    uint64_t                 profile_evict_live; /* of those to the host: live blocks'
                                                * spans (the rest is free room) */
    uint64_t                 profile_evict_known; /* ...and sections known on the GPU
                                                * (debug log only: a walk of the marks) */
    uint32_t                *evict_steps;      /* this pass's evictions before launches
                                                * without a layout: their steps */
    size_t                   nevict_steps, evict_steps_cap;
    umadv_ctx_left_out_t    *left_out;         /* the recording's blocks they left out
                                                * (profile.c, EVICTING WHAT MAY BE ON
                                                * THE GPU) */
    size_t                   nleft_out, left_out_cap;
    uint64_t                 profile_arrived_unseen; /* unseen where faults brought a
                                                * left-out block onto the GPU */
    uint64_t                 profile_evict_ns; /* host time of the evictions before
                                                * launches, choosing what to keep
                                                * included (evict_live) */
    int                      profile_fetch_failed; /* a fetch back failed: no more */
    int                      profile_evict_failed; /* an eviction failed: evictions
                                                * leave nothing out */
    int                      profile_evicted;  /* this profile has evicted: fetch back */
    uint64_t                 profile_faults;   /* its fault groups; UINT64_MAX until
                                                * known */
    uint64_t                 profile_fault_groups; /* the last profile's (replay.c
                                                * scales the re-profile threshold) */
    /* a profile in two passes (profile.c, TWO PASSES) */
    int                      profile_pass;     /* 0: one pass; 1: the first of two;
                                                * 2: the second, guided by the first */
    umadv_trace_t            scout;            /* the first pass's trace, in the second */
    umadv_trace_gaps_t       scout_gaps;       /* ...its allocations' gaps */
    int                      scout_ready;      /* scout and scout_gaps hold it */
    int                      scout_lost;       /* the second pass is guided no more: it ran
                                                * other steps, or is unguided */
    uint64_t                 scout_moved;      /* bytes the first pass moved to the gpu */
    int                      scout_timed;      /* the trace has the first pass's durations */
    umadv_schedule_off_t     scout_off;        /* where the plan on the first pass's trace
                                                * takes each block off the GPU; its off
                                                * NULL when not known (every long gap
                                                * evicts: plan_takes_off) */
    /* The application's copies and memsets since the recording's last
     * launch (COPIES in pcopies.c), under copies_lock alone: they are told
     * on the copying thread, without ctx->lock. */
    pthread_mutex_t          copies_lock;
    umadv_ctx_copy_t        *copies;
    size_t                   ncopies, copies_cap;
    uint64_t                 profile_kept;     /* blocks kept at launches without a layout,
                                                * as theirs, on the first pass's word */
    umadv_ctx_alloc_t      **kept;             /* scratch: those of one launch, its
                                                * accesses */
    size_t                   nkept, kept_cap;
    uint64_t                 profile_stayed;   /* blocks left where they lie at launches
                                                * without a layout, unseen there, on the
                                                * word of the first pass's plan */
    umadv_ctx_stay_t        *stay;             /* scratch: those of one launch */
    size_t                   nstay, stay_cap;
    int                      live_on_host;     /* the profile left live blocks on the
                                                * host: the next replay starts so */
    umadv_ctx_tpass_t        tpass;            /* the timing pass */
    const void              *faults_exec;      /* the executor whose iterations... */
    uint64_t                 faults_replayed;  /* ...were counted from here (sampling) */

    umadv_ctx_replay_t       replay;           /* api/replay.c */
    umadv_ctx_ahead_t        ahead;            /* api/ahead.c */

    umadv_ctx_alloc_t      **held;             /* blocks with a hold (context.c, HOLDS) */
    size_t                   nheld, held_cap;

    struct umadv_context    *live_next;        /* the live contexts (context.c,
                                                * PROCESS EXIT)... */
    pid_t                    live_pid;         /* ...and the process that made it */
};

/* ---- context.c ---------------------------------------------------------- */

/* umadv_malloc and umadv_set_stageable(ptr, 1) in one call, under one
 * hold of the lock (PyTorch's allocator entry point, one per tensor);
 * @ctx is not NULL, @size not 0. */
umadv_status_t umadv__malloc_stageable(umadv_context_t ctx, size_t size, const char *tag,
                                       void **ptr_p);

/* What the exit handler does (context.c, PROCESS EXIT): every live
 * context told that the process exits. Tests call it directly. */
void umadv__contexts_exit(void);

/* ---- record.c: the recorder (a leaf of the life cycle) ---------------- */

/* The recorder's side of malloc and free. */
umadv_status_t umadv__ctx_record_alloc(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);
void umadv__ctx_record_free(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);
/* A step begins: frees no longer end the recorded iteration's blocks
 * (record.c, THE TAIL). */
void umadv__ctx_record_tail_close(umadv_context_t ctx);
/* umadv_set_stageable on @alloc: the recording's trace says it (a block
 * enters the trace with its flag; this follows a change once it is in). */
void umadv__ctx_record_stageable(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);

/* Start recording into ctx->trace (the one there is dropped); live blocks
 * are "allocated before the first step". Nothing recorded on failure. */
umadv_status_t umadv__ctx_record_start(umadv_context_t ctx);

/* Complete the recording (no step open; profiler records merged first):
 * how it ended; *@status_p an error when the trace could not be finalized
 * (logged; discarded too). */
umadv_cycle_outcome_t umadv__ctx_record_finish(umadv_context_t ctx, umadv_status_t *status_p);

/* Log why there is no trace for @caller (umadv_plan, umadv_trace_save)
 * and return the status that says so. */
umadv_status_t umadv__ctx_no_trace(umadv_context_t ctx, const char *caller);

/* umadv_trace_save() of the finalized trace. */
umadv_status_t umadv__ctx_trace_write(umadv_context_t ctx, const char *path);

/* Release the recorder's state (events, lists, trace). */
void umadv__ctx_record_cleanup(umadv_context_t ctx);

/* Begin a step of kind KERNEL named @name (may be NULL) for a launch seen
 * by the profiler outside any marked step. */
umadv_status_t umadv__ctx_record_kernel_step(umadv_context_t ctx, const char *name,
                                             uint32_t *step_p);

/* HOST TIMES (record.c): recorded step @step began at @entered_ns, the
 * application's own time since umadv handed back its thread (host_ns);
 * and umadv hands it back now (the end of an iteration mark, a marked
 * step's begin or a launch's callback). */
void umadv__ctx_host_note(umadv_context_t ctx, uint32_t step, uint64_t entered_ns);
void umadv__ctx_host_back(umadv_context_t ctx);

/* Marked steps: begin (recorded or timed, as the leaves' data says) and
 * end (step_open already cleared by the caller: its duration). */
umadv_status_t umadv__ctx_step_begin(umadv_context_t ctx, const char *name, void *stream);
/* After the step's wait for its data: its timing starts (record.c). */
void umadv__ctx_step_timing_start(umadv_context_t ctx);
void umadv__ctx_step_ended(umadv_context_t ctx, uint64_t duration_ns);

/* The step events of the timing pass, read into ctx->tpass.durations. */
void umadv__ctx_timings_resolve(umadv_context_t ctx);

/* ---- context.c: holds (umadv_hold_resident) ------------------------------ */

/* Order the work queued next on @stream after every hold (context.c,
 * HOLDS): the profiling pass's evictions wait for the holds' readers. */
void umadv__ctx_holds_order(umadv_context_t ctx, void *stream);

/* ---- profile.c: the profiling pass (a leaf) ----------------------------- */

/* Open measures the link (UMADV_LINK_PROBE) and subscribes to CUPTI
 * (UMADV_PROFILER); it never fails: without CUPTI the context records
 * declared accesses only (warned). Start and finish bracket a recording:
 * start evicts every block (UMADV_PROFILE_EVICT) so first touches fault;
 * finish merges kernel-parameter and fault accesses into ctx->trace before
 * it is finalized. */
void umadv__ctx_profile_open(umadv_context_t ctx);
void umadv__ctx_profile_close(umadv_context_t ctx);
/* Returns 1 when a profiler was asked for but CUPTI fails the recording
 * (its kernel launches go unseen), else 0. */
int umadv__ctx_profile_start(umadv_context_t ctx);
void umadv__ctx_profile_finish(umadv_context_t ctx);

/* At an iteration's beginning: the call census's line for the calls since
 * the last (UMADV_CALL_CENSUS; profiler/census.c). */
void umadv__ctx_census_report(umadv_context_t ctx);

/* The recording just finalized, when it was the first of a profile's two
 * passes, taken aside to guide the second (profile.c, TWO PASSES): 1 (the
 * context records again), else 0. */
int umadv__ctx_profile_recorded(umadv_context_t ctx);
/* Whether a profile's first pass is done and its second not begun. */
int umadv__ctx_profile_second_waits(const umadv_context_t ctx);
/* Whether the profiled step durations may hold fault stalls, so that the
 * next iteration must be timed: the profile moved blocks off the GPU, or
 * faulted more than a replay's noise, or its faults are not known. */
int umadv__ctx_profile_stalled(const umadv_context_t ctx);

/* @alloc may have come onto the GPU now (fetched back, declared, copied
 * into, kept through an eviction): the profile's next eviction moves it. */
void umadv__ctx_profile_arrived(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);
/* A range the open step declared while recorded: back on the GPU ahead
 * of its launches if the profile evicted it (profile.c). */
void umadv__ctx_profile_declared(umadv_context_t ctx, umadv_ctx_alloc_t *alloc, const void *ptr,
                                 uint64_t size);
/* Trace step @step, recorded now, declared all it touches
 * (umadv_step_access_complete): taken on its word, its faults checked
 * against its declarations when the profile ends (profile.c). */
umadv_status_t umadv__ctx_profile_complete_step(umadv_context_t ctx, uint32_t step);

/* ---- tpass.c: the timing pass (a leaf) ---------------------------------- */

/* The timing pass. Start times the iteration beginning now (1), unless
 * there is no profiler or no memory (0). Step numbers the next step of
 * the timed iteration (kind and name as in the trace, else the sequence
 * has diverged): its trace index, or UMADV_STEP_NONE. Finish (once the
 * steps' events are resolved) stops it and returns 1 when every step
 * matched and was timed: the measured durations are in the trace; 0 when
 * some step went untimed, -1 when the timed iteration ran other steps
 * (the trace keeps its profiled durations either way). Reset drops any
 * pass. */
int umadv__ctx_tpass_start(umadv_context_t ctx);
uint32_t umadv__ctx_tpass_step(umadv_context_t ctx, const char *name, umadv_step_kind_t kind);
int umadv__ctx_tpass_finish(umadv_context_t ctx);
void umadv__ctx_tpass_reset(umadv_context_t ctx);

/* ---- profile.c, again: replay fault counts ------------------------------- */

/* At each iteration's start, count GPU faults in it or not (only while a
 * schedule is replayed: replay validation). */
void umadv__ctx_profile_iteration(umadv_context_t ctx);

/* GPU faults (fault groups and fault-caused migrations) seen since the last
 * call outside recordings (replay validation); added to ctx->stats.gpu_faults.
 * @flushed: a recording's stop has just flushed CUPTI's records. */
uint64_t umadv__ctx_profile_faults(umadv_context_t ctx, int flushed);

/* ---- schedule.c: plans and budgets (a leaf) ----------------------------- */

/* The budget the context enforces now: 0 when there is none, or under the
 * oracle policy, which ignores it by definition. The one rule the planner,
 * the executor (through the plan, umadv_cycle_plan_t) and the profiling pass
 * follow. */
uint64_t umadv__ctx_budget(const umadv_context_t ctx);
/* Whether evictions may be staged here: UMADV_STAGE, and a device whose
 * discards work (they need concurrent managed access, as prefetches do).
 * The planner prices them so; a replay stages on a trace without guessed
 * steps only (replay.c). */
int umadv__ctx_stage_possible(const umadv_context_t ctx);

/* The planner's parameters for the context's trace, budget and knobs now. */
void umadv__ctx_plan_params(const umadv_context_t ctx, umadv_plan_params_t *params);
/* The planner's schedule of the finalized trace under the context's
 * budget and knobs (made ahead where it is the same: ahead.c); the
 * planner logs a failure. */
umadv_status_t umadv__ctx_plan_schedule(const umadv_context_t ctx, umadv_schedule_t *schedule);
/* Plan the finalized trace under the context's budget (resolved here,
 * once) and knobs; the planner logs a failure. Install makes it the
 * context's schedule (the replay of the old one must be stopped). */
umadv_status_t umadv__ctx_plan_build(umadv_context_t ctx, umadv_cycle_plan_t *plan_p);
void umadv__ctx_plan_install(umadv_context_t ctx, umadv_cycle_plan_t *plan);

/* UMADV_ERR_BUDGET_TOO_SMALL, logged, when a step of the recorded
 * iteration alone needs more than @budget. */
umadv_status_t umadv__ctx_budget_check(const umadv_context_t ctx, uint64_t budget);
/* The same question, quietly: 1 when the recorded iteration's largest
 * step fits @budget (0: none), or when the trace cannot tell (the plan
 * then says what is wrong). */
int umadv__ctx_step_fits(const umadv_context_t ctx, uint64_t budget);

/* Drop the schedule umadv_plan() built, if any. */
void umadv__ctx_schedule_cleanup(umadv_context_t ctx);

/* ---- ahead.c: a plan built on a thread of its own (PLANNING AHEAD) ---- */

/* Plan the context's trace as it is now, on a thread of its own. */
void umadv__ctx_ahead_start(umadv_context_t ctx);
/* 1: the plan made ahead for @params and the trace as it is now, moved
 * into @schedule with its status in *@status_p; 0: none (one made for
 * other inputs is dropped). Waits for the thread. */
int umadv__ctx_ahead_take(umadv_context_t ctx, const umadv_plan_params_t *params,
                          umadv_schedule_t *schedule, umadv_status_t *status_p);
/* Wait for the thread, if any, and drop what it made. */
void umadv__ctx_ahead_drop(umadv_context_t ctx);

/* ---- replay.c: the executor's side (a leaf; see its opening comment) ---- */

void umadv__replay_init(umadv_context_t ctx);
/* Whether the replay moves nothing in steady state: oracle, or a plan whose
 * budget holds every step's data (its launches are not followed). */
int umadv__replay_moves_nothing(const umadv_context_t ctx);
/* Whether the replay follows the context's launches now (every launch of
 * the iteration seen, none diverged). */
int umadv__replay_follows(const umadv_context_t ctx);
void umadv__replay_cleanup(umadv_context_t ctx);
umadv_status_t umadv__replay_start(umadv_context_t ctx);
/* The recording's tail closed: a start held for it goes (replay.c, THE START). */
void umadv__replay_tail_closed(umadv_context_t ctx);
void umadv__replay_stop(umadv_context_t ctx);
/* A step's wait for its data without ctx->lock (replay.c, WAITS WITHOUT
 * THE LOCK): the executor to wait on, taken with ctx->lock held, or
 * NULL; then, once the wait has ended, done. */
umadv_exec_t *umadv__replay_wait_take(umadv_context_t ctx);
void umadv__replay_wait_done(umadv_context_t ctx);
/* The process exits (context.c, PROCESS EXIT): the replay stopped and
 * the staging pool's pinning ahead, if under way, waited for. */
void umadv__replay_exit(umadv_context_t ctx);
/* 1: the running replay took @plan in place (umadv__exec_schedule_replace:
 * the plan after a timing pass); 0: stop it and start again. */
int umadv__replay_adopt(umadv_context_t ctx, umadv_cycle_plan_t *plan);
/* A new recording numbers the iteration's allocations afresh. */
void umadv__replay_forget_ordinals(umadv_context_t ctx);
void umadv__replay_malloc(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);
void umadv__replay_free(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);
void umadv__replay_stageable(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);
/* umadv_hold_resident on @alloc: the executor waits for alloc->hold before
 * it evicts the block it plays (context.c, HOLDS). */
void umadv__replay_hold(umadv_context_t ctx, umadv_ctx_alloc_t *alloc);
/* While a recording runs (@on), the application's copies and memsets are
 * told to umadv__ctx_copies_note, where no replay watches them. */
void umadv__replay_copies_noted(umadv_context_t ctx, int on);
/* Pin on a thread of its own the staging pool a replay of @schedule (a
 * plan on the trace recorded so far) would want (PINNED AHEAD there). */
void umadv__replay_pin_ahead(umadv_context_t ctx, const umadv_schedule_t *schedule);

/* pcopies.c: the application's copies in a recording (COPIES there). */
void umadv__ctx_copies_note(umadv_context_t ctx, const void *ptr, uint64_t bytes);
void umadv__ctx_copies_take(umadv_context_t ctx);
void umadv__ctx_copies_forget(umadv_context_t ctx);
umadv_status_t umadv__replay_note_trace_alloc(umadv_context_t ctx, umadv_ctx_alloc_t *alloc,
                                              uint32_t id);
/* Every iteration boundary: allocations numbered from 0 again, launches
 * followed from the first; @faults, the ended iteration's, kept for
 * umadv__replay_iteration. */
void umadv__replay_iteration_reset(umadv_context_t ctx, uint64_t faults);
/* While replaying: those faults to the executor; 1 when it asks for a
 * re-profile (drift). */
int umadv__replay_iteration(umadv_context_t ctx);
void umadv__replay_step_begin(umadv_context_t ctx);
void umadv__replay_step_end(umadv_context_t ctx);
void umadv__replay_stats(umadv_context_t ctx, umadv_stats_t *stats);
/* Unexpected GPU faults of the current iteration, for replay validation. */
void umadv__replay_note_faults(umadv_context_t ctx, uint64_t n);

#endif
