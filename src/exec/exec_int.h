/*
 * The executor's insides, shared by exec.c (life cycle, binding, the
 * application's calls), queue.c (op queues, events, waiting), worker.c
 * (the migration and monitor threads) and policy.c (what each policy
 * queues). Everything here is protected by umadv_exec.lock unless said.
 */
#ifndef UMADV_EXEC_EXEC_INT_H
#define UMADV_EXEC_EXEC_INT_H

#include <pthread.h>
#include <time.h>

#include "common/util.h"
#include "exec/exec.h"
#include "exec/spans.h"
#include "pool/tree.h"
#include "schedule/core.h"
#include "schedule/pages.h"

#define EXEC_MAX_CALL_DEFAULT (256 * UMADV_MIB)
#define EXEC_KEY_NONE         UMADV_CORE_KEY_NONE
#define EXEC_MAX_BATCH        256  /* ranges in one batch call */
#define EXEC_PIN_ASIDE_BYTES  (256 * UMADV_MIB) /* stage.c: a larger chunk pins on a thread
                                                 * of its own */
#define EXEC_CALL_RANGES      64               /* ranges in one call of pieces */
#define EXEC_PIECE_AHEAD_STEPS 1  /* stage.c: a lane's calls go in pieces only for
                                  * steps further ahead than this */

typedef struct exec_bind {
    umadv_tree_node_t node; /* keyed (base, alloc) in umadv_exec.bound while
                             * base != 0; the first member */
    uintptr_t base;     /* 0: no live block plays this allocation */
    uint64_t  size;
    uintptr_t arena;
    uint32_t  busy;     /* calls in flight on the block */
    uint32_t  advised;  /* 1 << umadv_advice_t of the advice set on it */
    umadv_event_t hold; /* its evictions wait for it (umadv__exec_hold); NULL */
} exec_bind_t;

/* An event recorded at a step's end; evictions behind it hold references. */
typedef struct exec_event {
    umadv_event_t event;
    uint32_t      refs;
    uint64_t      seq;      /* the step end it stands for (umadv_exec.ends_seq) */
} exec_event_t;

/* A queued op: one of the replay core's decisions, with what the lanes
 * need to order it. */
typedef struct exec_op {
    umadv_core_op_t d;
    uint64_t        seq;      /* order of queueing, to keep sorting stable */
    exec_event_t   *event;    /* d.after_step: the step end to wait for */
} exec_op_t;

/* Fetch lane: FETCH ops and advice sets, sorted by (need, seq).
 * Eviction lane, in FIFO order: EVICT ops and advice unsets (ADVISE with
 * advice NONE), each behind the step end it waits for. */
typedef struct exec_queue {
    exec_op_t *ops;
    size_t     head, n, cap;  /* live ops are ops[head .. n) */
} exec_queue_t;

/* A piece of a call: a run of sections of one bound allocation. */
typedef struct exec_piece {
    uint32_t  alloc, first, count;
    uintptr_t ptr;
    uint64_t  len;
    uint64_t  bytes;  /* accounted bytes of the sections */
    int       fresh;
    int       clean;  /* an eviction of a clean copy: counted as dropped */
    int       staged; /* its sections are staged (stage.c): a staged eviction
                       * or a restore */
    int       dead;   /* an eviction of dead data (schedule/core.h, DEAD DATA):
                       * discarded, nothing copied */
} exec_piece_t;

/* stage.c: the pinned staging pool, slots of one section each. */
typedef struct exec_stage {
    int       started;/* made at the first staged eviction: the chunks it
                       * holds, and one on its way while the pinner runs */
    uint32_t  want;   /* the slots the core counts: the pool grows to them */
    int       pinner_started; /* a chunk is pinned beside the replay: joined
                       * at cleanup */
    pthread_t pinner;
    uint64_t  pin_bytes;          /* what the pinner pins */
    umadv_stage_cache_t old;      /* chunks freed before pinning anew */
    void     *chunk[UMADV_STAGE_CHUNKS];      /* pinned chunks, in slot order */
    uint64_t  chunk_bytes[UMADV_STAGE_CHUNKS];/* each may hold more than its slots */
    uint32_t  chunk_first[UMADV_STAGE_CHUNKS + 1]; /* slot index each begins at;
                                               * [nchunks]: nslots */
    uint32_t  nchunks;
    uint64_t  slot_size;
    uint32_t  nslots;
    uint64_t *freemap;/* a bit per slot, set while it is free */
    uint32_t  nfree;
    uint32_t  cursor; /* where the next search for free slots begins */
    uint32_t *slot;   /* per section: its slot while its data is staged, or
                       * EXEC_NO_SLOT */
    uint64_t *copied; /* per section: 1 + the step ends (ends_seq) before an
                       * application's copy or memset last touched it; 0: never */
    int       failed; /* the pool could not be made, or the driver has no
                       * discards: evictions migrate */
    umadv_stream_t restore_stream; /* the synchronous restores', made at the
                                    * first; NULL: none yet */
} exec_stage_t;

#define EXEC_NO_SLOT UINT32_MAX

/* One migration worker: its thread, stream, queue and the call in flight. */
typedef struct exec_lane {
    pthread_t      thread;
    int            started;
    umadv_stream_t stream;
    exec_queue_t   queue;
    exec_piece_t  *pieces;          /* the call being issued */
    size_t         npieces, pieces_cap;
    void         **batch_ptrs;      /* its ranges, for a batch call */
    size_t        *batch_sizes;
    size_t         batch_cap, batch_sizes_cap;
    uint64_t       busy_need;       /* key of the op in flight, EXEC_KEY_NONE */
    uint64_t       busy_after;      /* eviction lane: seq of the step end the call
                                     * waited for, 0 if none */
    int            busy_blocking;
    int            working;         /* serving an op (lane_run) */
    pthread_cond_t wake;            /* its thread waits here, woken by a push to its
                                     * queue, umadv__exec_changed while it has ops
                                     * queued, and the stop */
    void          *bounce;          /* stage.c: device memory its staged copies go
                                     * through, made at its first staged call; NULL:
                                     * none (yet, or device_alloc failed) */
    int            bounce_failed;
    umadv_stream_t pipe_stream;     /* stage.c: where a restore populates the run
                                     * after the one it copies (RESTORES IN RUNS) */
    umadv_event_t  pipe_event;
    int            pipe_failed;     /* not made: populate all, then copy */
    uint64_t       stalled_ns;      /* the lane found ops it could not serve; 0: not */
} exec_lane_t;

struct umadv_exec {
    umadv_exec_params_t     p;
    const umadv_trace_t    *trace;
    pthread_mutex_t         lock;
    pthread_cond_t          cond;      /* any change: queues, states, stop */
    pthread_cond_t          mon_cond;  /* wakes the monitor to stop */
    int                     stop;
    int                     broken;    /* a CUDA call failed: issue nothing more */
    int                     draining;  /* threads in umadv__exec_drain: a lane
                                        * going idle wakes them */
    int                     waiting;   /* other threads in a wait on cond that
                                        * any change may end (umadv__exec_wake) */

    exec_lane_t             fetch, evict;
    exec_lane_t             app;       /* the application's thread's own calls
                                        * (umadv__exec_fetch_on_step): its pieces */
    pthread_t               monitor;
    int                     monitor_started;
    uint64_t                seq;

    umadv_core_t            core;      /* the replay core (schedule/core.h):
                                        * section states, the budget's
                                        * accounting, what each policy decides */
    exec_bind_t            *binds;     /* per trace allocation */
    umadv_tree_t            bound;     /* the bound blocks by address (stage.c finds
                                        * what an application's copy touches) */
    umadv_pages_t           pages;     /* where freed blocks left their pages */
    exec_stage_t            stage;     /* staging pool (stage.c) */

    /* the application's position (its thread only) */
    int                     begun;     /* an iteration has begun */
    uint64_t                iteration;
    uint32_t                step;      /* steps begun in the iteration */
    uint64_t                key;       /* key of the open or last step */
    uint64_t                abandoned; /* ops needed at keys <= this no longer block */
    uint64_t                iter_faults;
    uint64_t                iter_start_ns;
    uint64_t                step_start_ns; /* the open step began (the timeline) */
    umadv_exec_stats_t      iter_start; /* counters when the iteration began */
    int                     warned_budget;

    /* STEP ENDS (queue.c): each step end, and the start, is numbered; its
     * event is recorded only once an op waits for it. */
    uint64_t                ends_seq;  /* step ends (and starts) so far */
    umadv_stream_t          end_stream;/* the latest one's stream, while its event is
                                        * not recorded (end_unrecorded) */
    int                     end_unrecorded;
    exec_event_t          **events;    /* every event object */
    size_t                  nevents, events_cap;
    exec_event_t          **spare;     /* unreferenced ones */
    size_t                  nspare, spare_cap;
    exec_event_t           *last_event;/* the latest step end recorded; holds a
                                        * reference */

    umadv_exec_stats_t      stats;
};

static inline uint64_t exec_section_size(const umadv_exec_t *e, uint32_t section)
{
    return e->trace->sections[section].size;
}

static inline uint32_t exec_section_id(const umadv_exec_t *e, uint32_t alloc, uint32_t index)
{
    return e->trace->allocs[alloc].first_section + index;
}

/* A deadline @ns from now on the monotonic clock (the executor's
 * condition variables use it). */
static inline struct timespec exec_deadline(uint64_t ns)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns += (uint64_t)ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    return ts;
}

/* exec.c */
void umadv__exec_fail(umadv_exec_t *e, const char *what);
void umadv__exec_set_state(umadv_exec_t *e, uint32_t section, umadv_sec_state_t to);

/* queue.c */
umadv_status_t umadv__exec_queue_push(umadv_exec_t *e, exec_lane_t *lane, const exec_op_t *op);
exec_op_t *umadv__exec_queue_peek(exec_lane_t *lane);

/* Wake the threads a change that queues nothing may concern: those
 * counted in waiting or draining, and lanes with queued work (an op
 * waiting for room); idle lanes sleep on. Every unbind broadcast to both
 * lanes: a PyTorch iteration frees a thousand blocks, and the wake-ups,
 * futex calls and lock hand-overs cost the oracle replay of a host
 * benchmark 1.1 ms of its 1.3 per iteration (perf). With the lock held. */
void umadv__exec_wake(umadv_exec_t *e);
void umadv__exec_queue_remove(exec_lane_t *lane, size_t index);
void umadv__exec_queue_clear(umadv_exec_t *e, exec_lane_t *lane);
int umadv__exec_pending(const umadv_exec_t *e, uint64_t key);
/* What the step of @key waits for first (a span's name in the timeline):
 * an eviction that makes room, a fetch in flight, one queued behind
 * another, one queued with no room yet, one that may go while the lane
 * has yet to take it, or advice. */
const char *umadv__exec_pending_cause(const umadv_exec_t *e, uint64_t key);
void umadv__exec_abandon(umadv_exec_t *e, uint64_t key);
/* A step end (or the start) on @stream: numbered, its event not yet
 * recorded (queue.c, STEP ENDS). */
void umadv__exec_step_ended(umadv_exec_t *e, umadv_stream_t stream);
/* Once the step end's decisions are queued: its event recorded now where
 * the policy decides later ops that wait for it. */
void umadv__exec_end_settle(umadv_exec_t *e);
/* The latest step end's event, recorded now if it was not yet; NULL when
 * events fail (the executor is then broken). No reference is taken. */
exec_event_t *umadv__exec_last_end(umadv_exec_t *e);
void umadv__exec_event_ref(exec_event_t *ev);
void umadv__exec_event_put(umadv_exec_t *e, exec_event_t *ev);
void umadv__exec_events_destroy(umadv_exec_t *e);

/* exec.c: called with the lock held after a change someone may wait
 * for: wakes the application's thread, drains and unbinding (cond), and
 * each lane with ops queued (an idle lane with none has nothing to
 * serve until a push wakes it). */
void umadv__exec_changed(umadv_exec_t *e);

/* policy.c: queue the replay core's decisions (e->core.out) on the
 * lanes; evictions and unsets behind the latest step end. */
void umadv__exec_queue_decisions(umadv_exec_t *e);

/* worker.c */
void umadv__exec_unadvise_done(umadv_exec_t *e, const exec_op_t *op);
void umadv__exec_pieces_settle(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                               int to_gpu, int ok);
void umadv__exec_lane_busy(umadv_exec_t *e, exec_lane_t *lane, uint64_t start,
                           const char *what, uint64_t bytes);
/* The application's thread, before it waits for the open step: the
 * step's queued fetches that need no lane leave the queue. Those with
 * nothing to move are dropped (as the lane would), fresh populations that
 * fit are issued on @stream, the step's. */
void umadv__exec_fetch_on_step(umadv_exec_t *e, umadv_stream_t stream);

/* stage.c (its opening comment); all but init and cleanup with the lock
 * held */
umadv_status_t umadv__exec_stage_init(umadv_exec_t *e);
void umadv__exec_stage_cleanup(umadv_exec_t *e);
void umadv__exec_stage_slots(umadv_exec_t *e, exec_lane_t *lane);
void umadv__exec_stage_release(umadv_exec_t *e, uint32_t alloc);
void umadv__exec_stage_issue(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                             int to_gpu);
/* The eviction lane's dead pieces [from, to): discarded (in pieces while
 * the application runs, as umadv__exec_stage_issue's calls). */
void umadv__exec_dead_issue(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to);
/* One of a lane's range calls (a discard, a population): @arg, its
 * @n ranges, its stream. */
typedef umadv_status_t (*exec_ranges_call_t)(void *arg, void **ptrs, size_t *sizes, size_t n,
                                             umadv_stream_t stream);
/* The bytes of each of @lane's discard and population calls now, with the
 * lock held: UMADV_LANE_PIECE's size while the lane is ahead, else 0
 * (one call; stage.c says why). */
uint64_t umadv__exec_call_piece(const umadv_exec_t *e, const exec_lane_t *lane);
/* @n ranges through @call, in order: in one call when @piece is 0, else
 * in calls of at most @piece bytes and EXEC_CALL_RANGES ranges, a longer
 * range split, each call full but the last. Stops at the first failure
 * and returns it. Needs no lock. */
umadv_status_t umadv__exec_in_calls(uint64_t piece, void **ptrs, size_t *sizes, size_t n,
                                    exec_ranges_call_t call, void *arg, umadv_stream_t stream);
/* The lane's bounce buffer goes back (its thread, at its end). */
void umadv__exec_stage_lane_end(umadv_exec_t *e, exec_lane_t *lane);
/* A step's last check: counted as late_restored_bytes. */
void umadv__exec_restore_sections(umadv_exec_t *e, const uint32_t *list, size_t n);
void umadv__exec_restore_alloc(umadv_exec_t *e, uint32_t alloc);
void umadv__exec_step_guard(umadv_exec_t *e);
void *umadv__exec_fetch_main(void *arg);
void *umadv__exec_evict_main(void *arg);
void *umadv__exec_monitor_main(void *arg);

#endif
