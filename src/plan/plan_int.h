/*
 * Internals of the planner shared by its files: the residency pass
 * (residency.c), the timing of fetches (timing.c) and the assembly of
 * the schedule (plan.c). See plan.c's opening comment for the algorithm.
 */
#ifndef UMADV_PLAN_PLAN_INT_H
#define UMADV_PLAN_PLAN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "plan/plan.h"
#include "schedule/window.h"

typedef enum umadv_res_kind {
    UMADV_RES_ARRIVE = 0, /* loaded for a use (fetch, or fresh pages) */
    UMADV_RES_EVICT  = 1, /* copied back to the host after its last use */
    UMADV_RES_DROP   = 2, /* clean read-mostly copy released after its last use */
    UMADV_RES_FREE   = 3  /* released because its allocation was freed */
} umadv_res_kind_t;

/*
 * One change of a section's residency in the steady-state pass. Times are
 * window steps relative to the pass, unrolled: an arrival's eff is the
 * step that needs it (n for a closing reload, meaning step 0 of the next
 * replay); a departure's eff is the first step without it (last use + 1),
 * which is <= 0 when the last use was in the previous replay. A section's
 * events are recorded in time order and alternate arrive / depart.
 */
typedef struct umadv_res_event {
    uint32_t section;
    int32_t  eff;
    uint32_t last_use;  /* departures: window step of the last use */
    uint32_t room;      /* evictions: window step whose room it makes, or
                         * UMADV_STEP_NONE (it leaves for another reason) */
    int32_t  host_end;  /* arrivals: the step after the section's last remote
                         * touch before it, in eff's frame (the fetch must not
                         * start while the host copy is in use); INT32_MIN
                         * if none */
    uint8_t  kind;      /* umadv_res_kind_t */
    uint8_t  fresh;     /* arrivals: fresh memory, nothing to copy */
} umadv_res_event_t;

typedef struct umadv_residency {
    umadv_res_event_t      *events;   /* the steady-state pass */
    size_t                  nevents, events_cap;
    uint8_t                *start;    /* per section: resident when the pass began */
    uint32_t                passes;
    int                     converged;
    umadv_residency_stats_t stats;    /* of the steady-state pass */
} umadv_residency_t;

/* How the residency policy weighs when a victim's eviction can start
 * (residency.c, WHEN THE EVICTION CAN START). */
typedef struct umadv_victim_rule {
    double   evict_bw; /* bytes/s an eviction runs at; 0: time-blind (Belady) */
    uint32_t slack;    /* a late victim gives way to one next used at most
                        * 1/slack of its distance sooner */
    int      queued;   /* count the evictions issued at the victim's step
                        * ahead of it, and queue a step's evictions in the
                        * order of the rooms they make */
} umadv_victim_rule_t;

/*
 * Run the eviction policy over the window. @cyclic: replay it until the
 * state at the wrap repeats (at most @max_passes times, then close a pass
 * with extra events); else one linear pass from an empty GPU. Allocations
 * under @small_bytes are evicted late (residency.c, choose_victim); with
 * a @rule (NULL or a rate of 0: Belady's) a victim that would leave too
 * late gives way to one nearly as far that left in time (residency.c,
 * WHEN THE EVICTION CAN START).
 * @remote (NULL: none) flags touches, in umadv_touches_t order, that are
 * served over the link: the section is off the GPU at that step and takes
 * no room. The caller checked the budget against every step.
 */
umadv_status_t umadv__residency_run(const umadv_window_t *window, uint64_t budget,
                                    int read_mostly, int cyclic, uint32_t max_passes,
                                    uint64_t small_bytes, const umadv_victim_rule_t *rule,
                                    const uint8_t *remote, umadv_residency_t *res);

/* Allocations smaller than this spend over 8x longer in an eviction
 * call's latency than in moving their bytes. */
static inline uint64_t umadv__plan_small_bytes(const umadv_link_model_t *link)
{
    double bytes = link->evict_latency * link->evict_bw / 8;

    return bytes > 0 && bytes < 1e18 ? (uint64_t)bytes : 0;
}
void umadv__residency_cleanup(umadv_residency_t *res);

/* @res's events by section, in the pass's order (their indices): what
 * timing pairs and placement measures. */
umadv_status_t umadv__residency_by_section(const umadv_residency_t *res, uint32_t nsections,
                                           umadv_keyed_t *by_section);

/* What moving an allocation's data off the GPU and back costs, per call:
 * latency + bytes / bandwidth each way (plan.c, CHANNELS). */
typedef struct umadv_plan_channel {
    double evict_bw, evict_latency;  /* its eviction */
    double fetch_bw, fetch_latency;  /* the fetch that brings it back */
    int    staged;                   /* the replay stages its evictions */
} umadv_plan_channel_t;

/* @alloc's channel under @params: the staged channel's figures where the
 * replay stages it (params->stage, stageable in the trace, not advised
 * read-mostly: core.h, STAGING) and the link model has them; UVM's
 * otherwise. */
static inline umadv_plan_channel_t umadv__plan_channel(const umadv_window_t *w,
                                                       const umadv_plan_params_t *params,
                                                       uint32_t alloc)
{
    const umadv_link_model_t *l = &params->link;
    umadv_plan_channel_t c = {l->evict_bw, l->evict_latency, l->fetch_bw, l->fetch_latency, 0};

    c.staged = params->stage && w->trace->allocs[alloc].stageable &&
               !(params->read_mostly && !w->written[alloc]);
    if (c.staged && umadv__link_stage_evict_known(l)) {
        c.evict_bw      = l->stage_evict_bw;
        c.evict_latency = l->stage_evict_latency;
    }
    if (c.staged && umadv__link_stage_restore_known(l)) {
        c.fetch_bw      = l->stage_restore_bw;
        c.fetch_latency = l->stage_restore_latency;
    }
    return c;
}

/* The rate the residency policy times evictions at: the staged
 * channel's where the replay stages the trace's allocations and the link
 * model has its figures, UVM's otherwise (umadv__plan_channel per
 * allocation; one rate is enough to tell an eviction late). */
static inline double umadv__plan_evict_rate(const umadv_window_t *w,
                                            const umadv_plan_params_t *params)
{
    const umadv_link_model_t *l = &params->link;

    if (params->stage && umadv__trace_stageable_bytes(w->trace) > 0 &&
        umadv__link_stage_evict_known(l))
        return l->stage_evict_bw;
    return l->evict_bw;
}

/* params->victims as the residency policy takes it. */
static inline umadv_victim_rule_t umadv__plan_victim_rule(const umadv_window_t *w,
                                                          const umadv_plan_params_t *params)
{
    int in_time = params->victims == UMADV_PLAN_VICTIMS_IN_TIME;
    umadv_victim_rule_t rule = {umadv__plan_evict_rate(w, params), in_time ? 2 : 10, in_time};

    return rule; /* slack: a half, a tenth (residency.c, WHEN THE EVICTION CAN START) */
}

/* An operation on one section, before coalescing. issue is relative to the
 * need's replay: negative means issued in the previous one. */
typedef struct umadv_op1 {
    uint32_t section;
    int32_t  issue;
    uint32_t need;      /* window step */
    uint32_t issue_step; /* set when sorting: issue as a window step */
    uint32_t need_order; /* set when sorting: need counted across the wrap */
    uint32_t room_after; /* evictions: steps from issue to the room it makes
                          * (n: none), the lane's order at one issue */
    uint8_t  kind;      /* umadv_op_kind_t */
    uint8_t  flags;     /* umadv_op_flag */
    uint8_t  advice;    /* umadv_advice_t, ADVISE only */
} umadv_op1_t;

typedef struct umadv_timing {
    umadv_op1_t *ops;           /* one per event of the residency pass */
    size_t       nops;
    uint8_t     *resident_at_start;
    uint64_t     peak;          /* largest planned residency, hoisting included */
} umadv_timing_t;

/* Place every fetch as early as the budget (and @lookahead, 0 = none)
 * allows, runs that will be one op of at most @max_op_bytes together, and
 * every eviction right after its last use. */
umadv_status_t umadv__timing_run(const umadv_window_t *window, const umadv_residency_t *res,
                                 uint64_t budget, uint32_t lookahead, uint64_t max_op_bytes,
                                 umadv_timing_t *timing);
void umadv__timing_cleanup(umadv_timing_t *timing);

/*
 * Host placement (placement.c). @remote: per touch in umadv_touches_t
 * order, served over the link. @setup: advice applied once before the
 * first replay (runs in the middle of a remote stretch at the wrap).
 */
typedef struct umadv_placement {
    uint8_t     *remote;
    size_t       ntouches;
    uint64_t     remote_bytes;  /* per iteration */
    uint64_t     host_bytes;    /* runs advised to the host, each stretch once */
    umadv_op1_t *ops;           /* ADVISE ops, one per section */
    size_t       nops, ops_cap;
    umadv_op1_t *setup;         /* ADVISE ops for schedule->setup */
    size_t       nsetup, setup_cap;
} umadv_placement_t;

/*
 * Choose which touches to serve over the link (plan.c, HOST PLACEMENT).
 * @res holds the residency pass without placement; if placement pays
 * off, it is replaced by the pass with it. @phases (1 or 2): how the
 * iteration time is estimated (placement.c, estimate_t). @pl is always
 * initialised (no remote touch when nothing pays off) and must be
 * cleaned up.
 */
umadv_status_t umadv__placement_run(const umadv_window_t *window,
                                    const umadv_plan_params_t *params, uint32_t phases,
                                    uint64_t budget, uint32_t max_passes,
                                    umadv_residency_t *res, umadv_placement_t *pl);

/* The ADVISE ops that bracket each remote stretch, into pl->ops and
 * pl->setup (one per section; plan.c coalesces them). */
umadv_status_t umadv__placement_ops(const umadv_window_t *window, umadv_placement_t *pl);
void umadv__placement_cleanup(umadv_placement_t *pl);

/* The budget as the planner uses it: 0 means no limit, and a limit above
 * every byte of the trace changes nothing. */
static inline uint64_t umadv__plan_effective_budget(const umadv_window_t *window, uint64_t budget)
{
    if (budget == 0 || budget > window->total_bytes)
        return window->total_bytes;
    return budget;
}

#endif
