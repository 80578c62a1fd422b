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
 * exceeds the budget: a fetch waits for evictions to complete.
 */
#ifndef UMADV_SIM_SIM_H
#define UMADV_SIM_SIM_H

#include <stdint.h>

#include "plan/plan.h"
#include "trace/trace.h"

typedef struct umadv_sim_params {
    umadv_policy_t          policy;
    uint64_t                budget;      /* ignored by oracle */
    uint32_t                iteration;   /* iteration of the trace to replay */
    umadv_link_model_t      link;
    uint32_t                warmup;      /* iterations run before the measured one */
    const umadv_schedule_t *schedule;    /* required for UMADV_POLICY_PLAN */
} umadv_sim_params_t;

typedef struct umadv_sim_result {
    umadv_policy_t policy;
    double   iteration_s;   /* steady-state iteration time */
    double   compute_s;     /* sum of step durations */
    double   stall_s;       /* iteration_s - compute_s */
    double   lower_bound_s; /* max(compute, evicted/evict_bw, fetched/fetch_bw) */
    uint64_t faults;        /* sections faulted in by steps */
    uint64_t fault_bytes;   /* bytes those faults moved */
    uint64_t fetched_bytes; /* bytes prefetched host->device */
    uint64_t evicted_bytes; /* bytes moved device->host */
    uint64_t dropped_bytes; /* bytes released without a copy */
    uint64_t peak_resident; /* largest residency, fetches in flight included */
    uint64_t budget;
} umadv_sim_result_t;

void umadv__sim_params_default(const umadv_trace_t *trace, umadv_policy_t policy,
                               uint64_t budget, umadv_sim_params_t *params);

/* Run one policy. UMADV_ERR_INVALID_PARAM without a schedule for PLAN;
 * UMADV_ERR_BUDGET_TOO_SMALL when a step does not fit the budget. */
umadv_status_t umadv__sim_run(const umadv_trace_t *trace, const umadv_sim_params_t *params,
                              umadv_sim_result_t *result);

/* The lower bound of an iteration under @budget for the given transfer
 * volumes (DESIGN.md): max(compute, evicted/evict_bw, fetched/fetch_bw). */
double umadv__sim_lower_bound(double compute_s, uint64_t fetched, uint64_t evicted,
                              const umadv_link_model_t *link);

#endif
