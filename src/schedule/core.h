/*
 * The replay core: what a policy does as an iteration is replayed,
 * decided in one place for the executor (exec/: threads, streams, CUDA
 * calls on live memory) and the simulator (sim/: the link's time model).
 * Each drives this core and keeps only its own mechanics, so that the
 * simulator predicts the executor rather than a twin of it.
 *
 * Pure: no threads, no CUDA, no clock. The core holds the state of every
 * section and the GPU memory they account for, and answers four
 * questions:
 *  - what to issue when the replay starts, when a step begins and when it
 *    ends (umadv__core_start, _step_begin, _step_end): a list of
 *    decisions, core->out[0 .. nout), valid until the next such call;
 *  - whether a queued fetch may start now, wait, or be given up
 *    (umadv__core_fetch_verdict), and whether another fetch may ride in
 *    its call (umadv__core_batch_joins), and which the thread of the step
 *    that needs it serves itself (umadv__core_step_serves);
 *  - which resident sections to evict to make room, least recently used
 *    first (umadv__core_lru_victims);
 *  - how the accounting changes as data moves: the driver reports every
 *    move through umadv__core_set_state, which keeps residency, data on
 *    its way out, the peak and the recency order.
 *
 * POLICIES (umadv.h), all under the same budget:
 *  - plan: the schedule's FETCH and ADVISE ops are issued when their issue
 *    step begins, EVICT, DROP and advice unsets when it ends
 *    (schedule/schedule.h);
 *  - oracle: no budget; everything bound is fetched at start, what a step
 *    uses and is not on the GPU is fetched when it begins; nothing is
 *    ever evicted;
 *  - prefetch-all: when a step begins, least recently used sections it
 *    does not use are evicted until its missing sections fit, then those
 *    are fetched; the step waits for them;
 *  - demand: the same evictions, which the step waits for, and no fetch:
 *    the step's kernels fault their data in (at its end its sections are
 *    accounted resident).
 * Every policy but oracle first evicts what was left on the GPU (plan
 * keeps the schedule's resident_at_start sections, fetching them), so
 * that the accounted residency is the real one.
 *
 * POSITION. Step j of iteration i has the key i * nsteps + j; a decision
 * serves the step of its key (@need), which waits for it when it is
 * blocking. Steps past the schedule's count replay nothing.
 *
 * BINDING. Decisions name trace allocations; one that nothing plays now
 * (umadv__core_bind) gets none, and counts as drift.
 *
 * STAGING (issue 11). With params.stage, an EVICT of live, non-clean data
 * of a stageable allocation (umadv__core_set_stageable: memory the
 * application never reads on the CPU, or lets umadv stage) is decided
 * staged: the driver copies its sections into pinned host staging and
 * discards the range, which holds no valid data until restored. From the
 * decision until its restore completes a section is marked staged
 * (core->staged); a FETCH of staged sections is a restore. The rules,
 * the same for every policy:
 *  - when a step begins, every section it touches that is marked staged
 *    gets back its data before the step runs: an eviction not started is
 *    called off (OUT_QUEUED -> RESIDENT), any other gets a blocking
 *    restore (a FETCH, staged) unless a fetch of it was decided in the
 *    same call; a restore the step needs is never given up for room
 *    (umadv__core_fetch_verdict): the budget yields to the data;
 *  - a section becoming RESIDENT is no longer staged (restored, or its
 *    eviction called off or undone); unbinding forgets the mark (dead
 *    data's staging is released; a driver restores live data first);
 *  - demand's kernels never fault a staged section in;
 *  - the staging pool holds stage_slots sections: what can be off the GPU
 *    at once, the most sections alive at one step of the replayed
 *    iteration less the budget, and the largest allocation's sections
 *    more (the GPU holds less than the budget by up to a run waiting for
 *    room), the peak at most. A section holds a slot while it is marked
 *    staged; of an eviction the pool has too little room for, the
 *    sections that fit are staged and the rest migrates (the driver's
 *    pool is this size and is never short: both drivers follow the same
 *    count);
 *  - only data the iteration's kernels touch is staged: a section no
 *    step of the iteration touches migrates. Data of an allocation freed
 *    in the iteration after its last touch is staged too (it migrated
 *    until 2026-11-24: a GPT-2 shape moved 232 MiB of such data an
 *    iteration at UVM's 10-14 GB/s, simulated 153.7 ms -> 134.2 ms
 *    staged). What else may read it (a copy the application makes
 *    between kernels: loss.item()) is not known here: the driver restores
 *    what a copy touches when it is called (exec/stage.c, THE
 *    APPLICATION'S COPIES);
 *  - a section the plan advises (host placement, accessed-by, read-mostly)
 *    is never staged: a kernel may read it where the advice leaves it,
 *    and a discarded range holds nothing there;
 *  - nor is a block smaller than a section (umadv__core_set_stageable):
 *    the pool packs such blocks, and a discard of one's range could take
 *    its neighbours' bytes on the pages they share;
 *  - nor a section whose block the profile left on the GPU unseen at a
 *    step that comes after the eviction and before the section's next
 *    touch (trace->unseen: a block a fault brought back that the
 *    profile's evictions then left out, api/profile.c, EVICTING WHAT MAY
 *    BE ON THE GPU; one the second pass left there on the first pass's
 *    plan's word, TWO PASSES): that step may touch it with no trace of
 *    it. It migrates there instead, which a read survives (counted in
 *    unseen_held_bytes); the same holds for dropping dead data. And when
 *    a step begins, the blocks left unseen at it are guarded as the
 *    sections it touches are (staged ones come back first): steps out
 *    of order (an iteration begun early, drift) break the first
 *    rule's view of what comes next.
 * What ends a replay restores every staged section first (the driver's:
 * exec/stage.c).
 *
 * DEAD DATA (issue 11). An EVICT the plan marks UMADV_OP_FLAG_DEAD
 * (schedule.h: its next op is a fresh fetch of the whole run, which
 * copies nothing in) is decided dead on staging's terms: the allocation
 * stageable now, staging on and not paused, no advice on the run. The
 * driver then discards the range instead of copying it anywhere (a copy
 * the application made of it meanwhile keeps it a migration, as it does a
 * staged eviction); the sections are HOST, not staged, and their fresh
 * fetch populates them. Otherwise it is an eviction like any other.
 * VGG-16 in C at batch 128 under a quarter of its footprint staged out
 * 4.9 GiB an iteration that it never read back.
 */
#ifndef UMADV_SCHEDULE_CORE_H
#define UMADV_SCHEDULE_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "schedule/schedule.h"
#include "trace/gaps.h"
#include "trace/trace.h"

/* Where a section is. Every state but HOST counts against the budget:
 * data on its way out still occupies the GPU. */
typedef enum umadv_sec_state {
    UMADV_SEC_HOST       = 0, /* not on the GPU (or fresh: never touched) */
    UMADV_SEC_RESIDENT   = 1,
    UMADV_SEC_FETCHING   = 2, /* a move to the GPU is in flight */
    UMADV_SEC_OUT_QUEUED = 3, /* an eviction is decided, not started: a step that
                               * uses the section again calls it off */
    UMADV_SEC_EVICTING   = 4  /* a move to the host is in flight */
} umadv_sec_state_t;

#define UMADV_CORE_KEY_NONE UINT64_MAX

/* One decision, on a run of sections of one allocation. */
typedef struct umadv_core_op {
    umadv_op_kind_t kind;       /* FETCH, EVICT or ADVISE (DROPs of live data
                                 * become EVICTs; of dead data, no op) */
    umadv_advice_t  advice;     /* ADVISE: a set, or NONE for an unset */
    uint32_t        alloc, first, count;
    uint64_t        need;       /* key of the step it serves, or KEY_NONE */
    uint8_t         blocking;   /* the step of @need waits for it */
    uint8_t         fresh;      /* FETCH of memory never touched: no copy */
    uint8_t         after_step; /* EVICT, unset: once the work of the step that
                                 * issued it (or before the start) completes */
    uint8_t         clean;      /* EVICT of a clean read-mostly copy (a DROP of
                                 * live data): the host's copy is current, the
                                 * call copies nothing back */
    uint8_t         staged;     /* EVICT: through pinned staging, the range then
                                 * discarded; FETCH: a restore (its sections
                                 * were staged when it was decided) */
    uint8_t         dead;       /* EVICT of dead data (DEAD DATA above): the
                                 * range is discarded, nothing copied */
} umadv_core_op_t;

typedef enum umadv_fetch_verdict {
    UMADV_FETCH_GO,
    UMADV_FETCH_WAIT, /* its data is still on its way out, an unset over it is
                       * queued, or room is being freed */
    UMADV_FETCH_SKIP  /* nothing to bring, or no room and nothing frees any */
} umadv_fetch_verdict_t;

/* Resident sections ordered by (last use, id): the LRU order (lru.c). A
 * binary heap with each member's position, so that changes cost
 * O(log n) and victims are read in order without a scan. */
typedef struct umadv_core_lru {
    const uint64_t *key;
    uint32_t       *heap;
    uint32_t       *pos;    /* per section: index in heap, or CORE_LRU_OUT */
    size_t          n;
    uint32_t       *walk;   /* scratch of the ordered walk */
    size_t          walk_cap;
} umadv_core_lru_t;

struct umadv_core;

/* Shown every list of decisions as it is made (core->out, with the
 * position: core->key, core->step), for tests and logs. */
typedef void (*umadv_core_observer_t)(void *arg, const struct umadv_core *core);

typedef struct umadv_core_params {
    const umadv_trace_t    *trace;        /* finalized; outlives the core */
    uint32_t                first_step;   /* global index of the replayed iteration */
    uint32_t                nsteps;
    umadv_policy_t          policy;
    uint64_t                budget;       /* resolved: bytes, 0 = none (oracle: none) */
    const umadv_schedule_t *schedule;     /* plan; outlives the core */
    const umadv_link_model_t *link;       /* sizes batches; NULL: the trace's */
    int                     stage;        /* evict stageable live data staged */
    int                     fault_evictions; /* the driver's own evictions on faults
                                           * are modelled (the simulator): they
                                           * choose by the LRU order too */
    umadv_core_observer_t   observe;      /* NULL: none */
    void                   *observe_arg;
} umadv_core_params_t;

/* Drivers read the fields; they change them only through the functions. */
typedef struct umadv_core {
    umadv_core_params_t p;
    uint64_t          batch_bytes;  /* umadv__schedule_batch_bytes of the link */
    uint8_t          *bound;        /* per allocation: something plays it */
    uint8_t          *state;        /* per section, umadv_sec_state_t */
    uint64_t         *last_use;     /* per section: key of its last use */
    uint16_t         *unadvising;   /* per section: unsets decided, not done */
    uint64_t         *stamp;        /* per section: scratch marks */
    uint64_t          stamp_now;
    umadv_core_lru_t  lru;          /* RESIDENT bound sections (LRU policies) */
    int               lru_on;       /* the order is kept (umadv__core_init says when) */
    uint64_t          resident;     /* bytes in every state but HOST */
    uint64_t          outgoing;     /* bytes OUT_QUEUED or EVICTING */
    uint64_t          peak;         /* largest resident */
    int               begun;        /* a step has begun */
    int               ending;       /* umadv__core_step_end is deciding */
    uint64_t          iteration;    /* of the open or last step */
    uint32_t          step;         /* its index in the iteration */
    int               past_end;     /* it lies past the schedule's steps */
    uint64_t          key;          /* its key */
    uint64_t          drift_ops;    /* decisions on unbound allocations, not made */
    uint64_t          dropped_bytes;/* released without a move (dead data) */
    uint64_t          unseen_held_bytes; /* evictions of stageable data that migrate:
                                     * a step before its next touch may reach it
                                     * unseen (STAGING) */
    uint8_t          *stageable;    /* per allocation: may be staged */
    uint8_t          *staged;       /* per section: its data is (or, its eviction
                                     * done, will be) in staging, not in the range */
    int               stage_paused; /* no staged decisions for now (umadv__core_stage_pause) */
    uint32_t          stage_slots;  /* the staging pool, in sections (STAGING) */
    uint32_t          stage_used;   /* sections marked staged */
    uint32_t         *alloc_staged; /* per allocation: its sections marked staged (the
                                     * step guard passes over the others whole) */
    uint8_t          *advised;      /* per section: the plan advises it (never staged:
                                     * its data must stay where the advice reads it) */
    uint32_t         *last_touch;   /* per section: the last step of the iteration whose
                                     * kernels touch it, or UMADV_STEP_NONE */
    uint64_t         *guard;        /* per section: scratch marks of the step guard */
    uint64_t          guard_now;
    uint32_t         *touched;      /* the open step's sections, each once (bound
                                     * or not): listed when it begins */
    size_t            ntouched;
    uint32_t         *unrestored;   /* umadv__core_step_unrestored's list */
    size_t            unrestored_cap;
    umadv_core_op_t  *out;          /* the last call's decisions */
    size_t            nout, out_cap;
    int               out_lost;     /* no memory for a decision: one lost */
    uint32_t         *scratch;      /* section lists */
    size_t            scratch_cap;
    uint32_t         *victims;
    size_t            victims_cap;
    umadv_trace_gaps_t unseen;      /* the trace's uses and unseen steps (STAGING) */
    int               has_unseen;   /* ...indexed: the trace has unseen blocks */
} umadv_core_t;

/* The staging pool a replay of steps [first_step, first_step + nsteps)
 * of @t under @budget bytes holds, in sections (STAGING; a core that
 * stages has this many stage_slots): known before a replay begins, so
 * that the pool can be pinned ahead of it (api/replay.c, PINNED AHEAD).
 * 0 for steps outside the trace. */
uint32_t umadv__core_stage_sections(const umadv_trace_t *t, uint32_t first_step,
                                    uint32_t nsteps, uint64_t budget);

/* UMADV_ERR_INVALID_PARAM for a plan policy without a schedule of
 * @nsteps steps; UMADV_ERR_NO_MEMORY. */
umadv_status_t umadv__core_init(umadv_core_t *core, const umadv_core_params_t *params);
void umadv__core_cleanup(umadv_core_t *core);
/* params.schedule now holds another schedule of the same trace, steps and
 * budget (the plan after a timing pass): what the core derives from it is
 * derived again. Decisions already queued stand. */
void umadv__core_schedule_changed(umadv_core_t *core);

/* Trace allocation @alloc is played (its sections HOST, never used) or
 * no longer (its sections leave the accounting). The driver then sets
 * the state of sections it knows to be on the GPU. Binding decides the
 * plan's one-time advice (schedule->setup) on the allocation, for the
 * next step (core->out). */
void umadv__core_bind(umadv_core_t *core, uint32_t alloc);
void umadv__core_unbind(umadv_core_t *core, uint32_t alloc);

/* Whether @alloc's data may be staged or released (STAGING, DEAD DATA):
 * never a block smaller than a section, which shares its pages; bind
 * clears it. */
void umadv__core_set_stageable(umadv_core_t *core, uint32_t alloc, int on);

/* No staged evictions are decided while @paused: the driver does not
 * know what runs (steps past the profile, launches that diverged). */
void umadv__core_stage_pause(umadv_core_t *core, int paused);

/* @section is marked staged (its slot taken), or no longer: its data is
 * in the range again (the driver migrated it instead, or restored it), or
 * dead. */
void umadv__core_stage_mark(umadv_core_t *core, uint32_t section);
void umadv__core_unstage(umadv_core_t *core, uint32_t section);

/* Sections the open step touches that are still staged: into
 * core->unrestored[0 .. return). The driver's last line of defence
 * after a step's wait (a restore given up, lost, or a broken driver). */
size_t umadv__core_step_unrestored(umadv_core_t *core);

/* A section moves; the accounting follows. */
void umadv__core_set_state(umadv_core_t *core, uint32_t section, umadv_sec_state_t to);

/* Whether @bytes more fit the budget now. */
int umadv__core_fits(const umadv_core_t *core, uint64_t bytes);

/* Decisions (into core->out): before the first iteration; when step @j
 * of @iteration begins (j past the schedule: nothing, the key of its last
 * step); when the open step ends. */
void umadv__core_start(umadv_core_t *core);
void umadv__core_step_begin(umadv_core_t *core, uint64_t iteration, uint32_t j);
void umadv__core_step_end(umadv_core_t *core);

/* May the FETCH @op start now? *add_p: the bytes it would bring (its
 * HOST sections). Counts nothing. */
umadv_fetch_verdict_t umadv__core_fetch_verdict(const umadv_core_t *core,
                                                const umadv_core_op_t *op, uint64_t *add_p);

/* Whether the queued FETCH @op, bringing @add bytes, may ride in the call
 * of a fetch of the same need (schedule.h, BATCHES): a small copy that
 * fits now. */
int umadv__core_batch_joins(const umadv_core_t *core, const umadv_core_op_t *op,
                            uint64_t need, uint64_t add);

typedef enum umadv_step_serve {
    UMADV_STEP_SERVE_NO,       /* the fetch lane serves it */
    UMADV_STEP_SERVE_DROP,     /* nothing to move: its sections are on the GPU,
                                * or on their way by migration */
    UMADV_STEP_SERVE_POPULATE  /* a fresh population that fits: issued on the
                                * step's own stream before its work */
} umadv_step_serve_t;

/* How the queued FETCH @op, needed by the open step (its need <= key),
 * is served once the step is about to wait for it. A fresh population
 * copies nothing; on the step's stream it is ordered before the step's
 * work with no wait on the host and no lane to wake, and its sections
 * count as resident from its start, as a fetch's do. Counts nothing. */
umadv_step_serve_t umadv__core_step_serves(const umadv_core_t *core, const umadv_core_op_t *op);

/* The unset @op (an ADVISE NONE the core decided) is done, or dropped:
 * fetches and sets over its run stop waiting for it. */
void umadv__core_unadvise_done(umadv_core_t *core, const umadv_core_op_t *op);

/* Resident bound sections the open step does not use, least recently used
 * first (ties: lower id), enough to free @need bytes: into
 * core->victims[0 .. *n_p). */
umadv_status_t umadv__core_lru_victims(umadv_core_t *core, uint64_t need, size_t *n_p);

/* Sections [first, first + count) of @alloc: global ids. */
static inline uint32_t umadv__core_section(const umadv_core_t *core, uint32_t alloc,
                                           uint32_t index)
{
    return core->p.trace->allocs[alloc].first_section + index;
}

/* lru.c */
#define UMADV_CORE_LRU_OUT UINT32_MAX
umadv_status_t umadv__core_lru_init(umadv_core_lru_t *lru, const uint64_t *key,
                                    size_t nsections);
void umadv__core_lru_cleanup(umadv_core_lru_t *lru);
void umadv__core_lru_insert(umadv_core_lru_t *lru, uint32_t s);
void umadv__core_lru_remove(umadv_core_lru_t *lru, uint32_t s);
void umadv__core_lru_update(umadv_core_lru_t *lru, uint32_t s);
/* Call @visit on members in order until it returns nonzero;
 * O(visited log visited). */
umadv_status_t umadv__core_lru_walk(umadv_core_lru_t *lru, int (*visit)(void *arg, uint32_t s),
                                    void *arg);

#endif
