/*
 * The simulator: replays a policy on a trace with the link cost model and
 * reports what one steady-state iteration costs. Pure C over plain data.
 *
 * Model: one compute lane runs the steps in order; one fetch lane and one
 * eviction lane move data concurrently with it (the link is full duplex and
 * the executor issues migrations from its own threads). A step starts when
 * the previous one ended and every section it touches is resident; a
 * section that is not resident is faulted in by the step itself at the
 * demand-paging rate. Residency (including fetches in flight) never
 * exceeds the budget: a fetch waits for evictions to complete. A section
 * the plan placed on the host (plan.h, ADVISE) is read and written there
 * over the link, in the step's own time, taking no GPU memory.
 * src/sim/sim.c's opening comment describes the model and each policy.
 */
#ifndef UMADV_SIM_SIM_H
#define UMADV_SIM_SIM_H

#include <stdint.h>

#include "schedule/core.h"
#include "schedule/schedule.h"
#include "trace/trace.h"

/*
 * Why a step waited before it could start (stall attribution). The wait
 * is cut at each lane event and each piece is charged to the state of the
 * first section the step still waits for.
 */
typedef enum umadv_sim_wait {
    UMADV_SIM_WAIT_TRANSFER = 0, /* its data, or data needed no later, is on
                                  * the fetch lane or queued behind such */
    UMADV_SIM_WAIT_LANE     = 1, /* the fetch lane moves data needed later
                                  * (a call is not preempted) */
    UMADV_SIM_WAIT_MEMORY   = 2, /* the fetch lane's head waits for room
                                  * that an eviction in flight will free */
    UMADV_SIM_WAIT_EVICTION = 3, /* its data is still being evicted, and a
                                  * queued fetch will bring it back */
    UMADV_SIM_WAIT_POPULATE = 4, /* its thread populates its fresh memory on
                                  * its stream (umadv__core_step_serves) */
    UMADV_SIM_WAIT_HOST     = 5, /* the application had not launched it yet:
                                  * its own host time (umadv__window_host_arrival) */
    UMADV_SIM_WAIT_COUNT
} umadv_sim_wait_t;

const char *umadv__sim_wait_name(umadv_sim_wait_t wait);

/* What an observer is shown when a step starts, after its faults. */
typedef struct umadv_sim_step_view {
    uint32_t       replay;    /* 0-based; the measured one is params->warmup */
    uint32_t       step;      /* global step index */
    double         start_s;   /* when it starts computing */
    double         end_s;     /* when it ends */
    uint64_t       used;      /* bytes on the GPU or in flight either way */
    uint32_t       faults;    /* sections it faulted in */
    uint32_t       remote;    /* sections it accesses over the link */
    double         wait_s[UMADV_SIM_WAIT_COUNT]; /* why it started late */
    const uint8_t *state;     /* per global section, umadv_sec_state_t
                               * (schedule/core.h) */
    const uint8_t *placed;    /* per global section: advised to the host
                               * (PREFERRED_HOST + ACCESSED_BY in force) */
} umadv_sim_step_view_t;

/* Called for every simulated step (warmup included; oracle simulates
 * none), for tests and timelines; the view is valid during the call only. */
typedef void (*umadv_sim_observer_t)(void *arg, const umadv_sim_step_view_t *view);

typedef struct umadv_sim_params {
    umadv_policy_t          policy;
    uint64_t                budget;      /* ignored by oracle; 0 = no limit */
    uint32_t                iteration;   /* iteration of the trace to replay */
    umadv_link_model_t      link;
    uint32_t                warmup;      /* iterations run before the measured one */
    const umadv_schedule_t *schedule;    /* required for UMADV_POLICY_PLAN; for the
                                          * others, optional: its volumes then set
                                          * lower_bound_s */
    umadv_sim_observer_t    observer;    /* optional */
    void                   *observer_arg;
    int                     quiet;       /* no per-step stall log (sim.c, STALL
                                          * ATTRIBUTION): the planner's trials */
    uint64_t                max_touches; /* as the planner's (window.h, COST); 0 =
                                          * no limit; the oracle, which only sums,
                                          * is not bounded */
    umadv_core_observer_t   decisions;   /* shown the replay core's decisions
                                          * (tests); NULL: none */
    void                   *decisions_arg;
    int                     stage;       /* staged evictions (schedule/core.h,
                                          * STAGING) of the allocations marked in: */
    const uint8_t          *stageable;   /* per trace allocation; NULL: the trace's
                                          * own flags (umadv_trace_alloc_t) */
    double                  stage_bw;    /* bytes/s of a staged copy either way
                                          * (pinned cudaMemcpyAsync), with the
                                          * eviction's call latency; 0: the link
                                          * model's staged figures (trace.h) where
                                          * measured, else 52.6e9, measured on an
                                          * H200 (DESIGN.md) */
} umadv_sim_params_t;

typedef struct umadv_sim_result {
    umadv_policy_t policy;
    double   iteration_s;   /* steady-state iteration time */
    double   compute_s;     /* sum of step durations */
    double   resident_s;    /* an iteration with everything resident: compute_s,
                             * or more where the application's host time between
                             * launches holds steps back (trace host_ns) */
    double   stall_s;       /* iteration_s - compute_s */
    double   lower_bound_s; /* max(resident + remote, evicted/evict_bw,
                             * fetched/fetch_bw) with the schedule's
                             * per-iteration volumes and remote time when one
                             * is given (the least traffic the budget allows,
                             * as the planner estimates it), else this run's
                             * own (faulted bytes count as fetched); resident_s
                             * for oracle, which has no budget */
    uint64_t faults;        /* sections faulted in by steps */
    uint64_t fault_bytes;   /* bytes those faults moved */
    double   wait_s[UMADV_SIM_WAIT_COUNT]; /* the steps' waits for data, by
                             * cause (stall_s = their sum + fault and remote
                             * time) */
    double   fault_s;       /* time steps spent faulting (and evicting for it) */
    uint64_t remote_bytes;  /* bytes steps accessed in host memory */
    double   remote_s;      /* the time that added to the steps */
    uint64_t fetched_bytes; /* bytes prefetched host->device (restores excluded) */
    uint64_t evicted_bytes; /* bytes moved device->host (staged evictions excluded) */
    uint64_t staged_bytes;  /* bytes evicted through pinned staging */
    uint64_t restored_bytes;/* bytes restored from it */
    uint64_t dropped_bytes; /* bytes released without a copy (drops, frees) */
    uint64_t peak_resident; /* largest residency, fetches in flight included, over
                             * the whole run (warmup too); oracle: the largest
                             * total of live allocations, the footprint */
    uint64_t budget;
} umadv_sim_result_t;

/* Whether the host's launches hold @r's resident iteration back beyond
 * its compute (the trace's host times: umadv__window_resident_seconds). */
static inline int umadv__sim_host_bound(const umadv_sim_result_t *r)
{
    return r->resident_s > r->compute_s;
}

/* Defaults: the trace's last iteration and link model, 2 warmup
 * iterations, no schedule, no observer; staging of the allocations the
 * trace marks stageable, as the runtime does by default (UMADV_STAGE),
 * where it marks any. A budget of 0 means no limit. */
void umadv__sim_params_default(const umadv_trace_t *trace, umadv_policy_t policy,
                               uint64_t budget, umadv_sim_params_t *params);

/* Run one policy. UMADV_ERR_INVALID_PARAM without a schedule for PLAN, or
 * with one for another iteration, or (logged) for link figures that are
 * not finite and positive or that make the iteration time infinite (any
 * such figures run to the end without a crash); UMADV_ERR_NOT_FOUND when the iteration
 * does not exist; UMADV_ERR_BUDGET_TOO_SMALL (logged) when a step does not
 * fit the budget. Counters cover the measured iteration. */
umadv_status_t umadv__sim_run(const umadv_trace_t *trace, const umadv_sim_params_t *params,
                              umadv_sim_result_t *result);

/* The lower bound of an iteration under @budget for the given transfer
 * volumes (DESIGN.md): max(compute, evicted/evict_bw, staged/the staged
 * channel's rate, fetched/fetch_bw); @evicted migrates, @staged leaves
 * through pinned staging (the link probe's stage_evict_bw, else the
 * simulator's built-in rate). */
double umadv__sim_lower_bound(double compute_s, uint64_t fetched, uint64_t evicted,
                              uint64_t staged, const umadv_link_model_t *link);

/* The bound's staged term: @staged bytes over the staged channel's rate. */
double umadv__sim_staged_evict_s(uint64_t staged, const umadv_link_model_t *link);

#endif
