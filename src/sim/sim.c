/*
 * The simulator: replays one policy on one iteration of a trace with the
 * link cost model and reports a steady-state iteration.
 *
 * MODEL (engine.c: steps; lanes.c: transfers). Event-driven, exact to the
 * model (no time steps). What each policy does, what a fetch may do and
 * which sections are evicted is not the simulator's: it drives the replay
 * core (schedule/core.h), as the executor does, and adds only time.
 * - Compute lane: the window's steps in order, replayed warmup + 1 times;
 *   the last replay is measured. A step starts when the previous one ended,
 *   the application has launched it (the trace's host times, where known:
 *   umadv__window_host_arrival; a later launch is a wait for the host)
 *   and none of its sections is still on its way (being fetched, queued
 *   for a fetch, or finishing an eviction before a queued fetch brings it
 *   back), and no eviction it waits for is still on its lane (demand).
 *   It then faults in whatever is missing: copied bytes / fault_bw,
 *   plus fault_latency per fresh section (memory allocated in this replay
 *   and never touched: nothing to copy), and if the faults need room, it
 *   first evicts least recently used sections that it does not use (the
 *   core's order: last use, then section id), in
 *   its own time (latency + bytes / evict_bw per run of adjacent
 *   sections), as the driver does in its fault path. Then it computes for
 *   its duration.
 *   Before it waits, it serves the fetches it needs that need no lane
 *   (umadv__core_step_serves): a fresh population that fits costs it
 *   fetch_latency per run of sections, as the executor's application
 *   thread issues it on the step's stream (lanes.c); one with nothing
 *   to move is dropped.
 * - Fetch lane: one transfer at a time, latency + copied bytes / fetch_bw
 *   per call (fresh sections cost no bytes), half a latency and the bytes
 *   for each fetch that rides in a batch (schedule.h, BATCHES). It serves
 *   queued fetches earliest need first and starts, waits for or gives up
 *   the head as the core's verdict says (it starts when the op fits the
 *   budget: the memory of a fetch counts from its start).
 * - Eviction lane: one transfer at a time, FIFO, latency + bytes /
 *   evict_bw per op, timed from when it starts: its sections still
 *   decided out then leave (a step that used one again called it off); a
 *   clean read-mostly copy copies nothing (latency only). An evicted
 *   section's memory counts until its eviction completes.
 * - Staging (params->stage; core.h, STAGING): a staged eviction on the
 *   eviction lane takes stage_evict_latency + bytes / stage_evict_bw of
 *   the link model (trace.h), a restore in a fetch call its own
 *   stage_restore_latency + bytes / stage_restore_bw (a call that only
 *   restores makes no migration call); without those figures, bytes /
 *   52.6 GB/s with the UVM call's latency (params->stage_bw overrides
 *   both). Staged copies do not share UVM's path: a staged eviction and
 *   a restore running at once keep the staged duplex figures' shares of
 *   their rates, two migrations UVM's, a migration beside a staged copy
 *   its full rate.
 * - Fresh memory a step's fetches find never touched is populated by the
 *   step (umadv__core_step_serves): one call per run of sections, each
 *   the probe's restore latency (a repopulating call), else the fetch's.
 * - Memory: a section is HOST, RESIDENT, FETCHING, OUT_QUEUED or
 *   EVICTING (core.h); all but HOST count against the budget, which no
 *   event ever exceeds (fetches wait; faults evict first). Every
 *   allocation is bound from the start; it is born and freed as window.h
 *   describes: a free (or a BORN allocation's rebirth) releases its
 *   resident sections without a copy, and a decided eviction still runs.
 * - Host placement (plan only): a section under PREFERRED_HOST advice
 *   (plan.h's ADVISE ops; ACCESSED_BY goes with it and is not modelled
 *   apart) that is on the host when its step starts is read and written
 *   there: bytes / remote_bw added to the step (remote access stalls the
 *   kernel), no fault, no GPU memory; what the step writes stays on the
 *   host, so a later fetch copies it. One still queued for eviction is
 *   accessed where it is, on the GPU, at no cost. Advice moves no data; a
 *   FETCH migrates the section whatever its advice.
 * - No infinite wait: a step waits only while a lane is running; when
 *   nothing in flight can bring its data (a fetch blocked for memory that
 *   no running eviction will free), it faults the data in, evicting
 *   synchronously if needed; a fault that cannot make room waits for the
 *   lanes in flight. Such faults are counted like any other.
 *
 * POLICIES (policy.c), all under the same budget:
 * - oracle: no budget, everything resident: the iteration takes the sum
 *   of the step durations, or longer where the host's launches hold steps
 *   back (umadv__window_resident_seconds); peak_resident is the largest total of live
 *   allocations at any step (transients only while alive), the footprint.
 * - demand: no prefetch; when a step begins, least recently used sections
 *   are evicted on the eviction lane until its missing data fits, and the
 *   step waits for them; then every missing section faults.
 * - prefetch-all: at each step, evict least recently used sections not
 *   used by the step (eviction lane) until its missing sections fit, then
 *   fetch them all, coalesced per run; the step waits (no lookahead).
 * - plan: replay the schedule: at a step's start queue its FETCH ops
 *   (issue step), at its end queue its EVICT ops and apply its DROPs. The
 *   start fetches the schedule's resident_at_start, as the executor does;
 *   the warmup replays reach the steady state.
 *
 * STALL ATTRIBUTION: a step's wait for its data is cut at each lane event
 * and each piece is charged to why the first section it still waits for
 * is not there (sim.h, umadv_sim_wait_t): on the fetch lane or queued
 * behind data needed no later (transfer), behind a call for a later step
 * (lane), behind a fetch waiting for room (memory), or still being
 * evicted (eviction). result.wait_s sums them over the measured replay;
 * with fault_s and remote_s they make up stall_s. UMADV_LOG=debug logs
 * each waiting step's split; UMADV_LOG=trace the transfer in the way of
 * each piece (the eviction freeing the room, or the fetch holding the
 * lane), with the step that issued it and how long it sat queued.
 *
 * RESULTS cover the measured replay: iteration_s from the end of the
 * replay before it to its own end; fetched bytes are counted when a fetch
 * starts within that time, evictions and drops by the replay that issues
 * them (in steady state both equal one period's worth); faults by its
 * steps. peak_resident covers the whole run. lower_bound_s, DESIGN.md's
 * bound, is max(compute, evicted / evict_bw, fetched / fetch_bw) with the
 * schedule's per-iteration volumes when params->schedule is given (for
 * any policy: the least traffic this budget allows, as far as the planner
 * knows), else with this run's volumes (faulted bytes count as fetched);
 * the schedule's (or this run's) remote time is added to compute; for
 * oracle it is compute_s. Staged evictions (schedule->staged_bytes, this
 * run's staged_bytes) leave through another channel, bounded apart at
 * its own rate (not UVM's evict_bw, which would overstate the bound):
 * left out, a GPT-2 plan at half its footprint evicting 1.9 GiB, all of
 * it staged, had an eviction term of 0 ms where its copies take 45.
 */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "schedule/window.h"
#include "sim/sim_int.h"

#define SIM_WARMUP_DEFAULT 2

void umadv__sim_params_default(const umadv_trace_t *trace, umadv_policy_t policy,
                               uint64_t budget, umadv_sim_params_t *params)
{
    memset(params, 0, sizeof(*params));
    params->policy    = policy;
    params->budget    = budget;
    params->iteration = trace->niterations ? trace->niterations - 1 : 0;
    params->link      = trace->link;
    params->warmup    = SIM_WARMUP_DEFAULT;
    params->max_touches = UMADV_PLAN_MAX_TOUCHES_DEFAULT;
    params->stage     = umadv__trace_stageable_bytes(trace) > 0;
}

double umadv__sim_staged_evict_s(uint64_t staged, const umadv_link_model_t *link)
{
    return (double)staged / (umadv__link_stage_evict_known(link) ? link->stage_evict_bw
                                                                 : SIM_STAGE_BW_DEFAULT);
}

double umadv__sim_lower_bound(double compute_s, uint64_t fetched, uint64_t evicted,
                              uint64_t staged, const umadv_link_model_t *link)
{
    double bound = UMADV_MAX(compute_s, umadv__sim_staged_evict_s(staged, link));

    if (link->evict_bw > 0)
        bound = UMADV_MAX(bound, (double)evicted / link->evict_bw);
    if (link->fetch_bw > 0)
        bound = UMADV_MAX(bound, (double)fetched / link->fetch_bw);
    return bound;
}

/* The largest total of live allocations over the window's steps. */
static umadv_status_t footprint(const umadv_window_t *w, uint64_t *peak_p)
{
    const umadv_trace_t *trace = w->trace;
    int64_t *diff = calloc((size_t)w->n + 1, sizeof(*diff));
    uint64_t peak = 0;
    int64_t cur = 0;

    if (diff == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t a = 0; a < trace->nallocs; a++) {
        const umadv_trace_alloc_t *alloc = &trace->allocs[a];
        uint64_t lo = alloc->alloc_step == UMADV_STEP_NONE ? 0 : alloc->alloc_step;
        uint64_t hi = alloc->free_step == UMADV_STEP_NONE ? UINT64_MAX : alloc->free_step;
        uint64_t first = w->first, last = (uint64_t)w->first + w->n - 1;

        if (hi < first || lo > last)
            continue;
        diff[UMADV_MAX(lo, first) - first] += (int64_t)alloc->size;
        diff[UMADV_MIN(hi, last) - first + 1] -= (int64_t)alloc->size;
    }
    for (uint32_t j = 0; j < w->n; j++) {
        cur += diff[j];
        peak = UMADV_MAX(peak, (uint64_t)cur);
    }
    free(diff);
    *peak_p = peak;
    return UMADV_OK;
}

/* The engine copes with any figures that pass (a subnormal bandwidth
 * makes times infinite, never a crash); these keep NaN out of its clock:
 * sums of non-negative terms are never NaN. Plausibility is the trace
 * reader's business (trace.h), not the simulator's. */
static int link_usable(const umadv_link_model_t *l, int remote)
{
    const double bw[] = {l->fetch_bw, l->evict_bw, l->fault_bw};
    const double lat[] = {l->fetch_latency, l->evict_latency, l->fault_latency};

    for (size_t i = 0; i < UMADV_ARRAY_SIZE(bw); i++)
        if (!(bw[i] > 0 && isfinite(bw[i])) || !(lat[i] >= 0 && isfinite(lat[i])))
            return 0;
    /* a staged figure counts where its bandwidth is above 0 (lanes.c) */
    if ((umadv__link_stage_evict_known(l) &&
         !(l->stage_evict_latency >= 0 && isfinite(l->stage_evict_latency))) ||
        (umadv__link_stage_restore_known(l) &&
         !(l->stage_restore_latency >= 0 && isfinite(l->stage_restore_latency))))
        return 0;
    return !remote || (l->remote_bw > 0 && isfinite(l->remote_bw));
}

static umadv_status_t check_params(const umadv_trace_t *trace, const umadv_sim_params_t *params,
                                   uint32_t first, uint32_t count)
{
    const umadv_schedule_t *s = params->schedule;

    if ((unsigned)params->policy >= UMADV_POLICY_COUNT)
        return UMADV_ERR_INVALID_PARAM;
    if (params->policy == UMADV_POLICY_PLAN && s == NULL) {
        umadv_error("simulating the plan needs a schedule");
        return UMADV_ERR_INVALID_PARAM;
    }
    if (s != NULL && (s->first_step != first || s->nsteps != count)) {
        umadv_error("the schedule covers steps %u..%u, iteration %u is steps %u..%u",
                    s->first_step, s->first_step + s->nsteps - 1, params->iteration, first,
                    first + count - 1);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (!link_usable(&params->link, s != NULL && s->remote_bytes > 0)) {
        umadv_error("the link model needs finite positive bandwidths and finite latencies");
        return UMADV_ERR_INVALID_PARAM;
    }
    return UMADV_OK;
}

static umadv_status_t run_engine(const umadv_window_t *w, const umadv_sim_params_t *params,
                                 umadv_sim_result_t *r)
{
    uint64_t budget = params->budget ? params->budget : UINT64_MAX;
    sim_engine_t e;
    umadv_status_t status = umadv__window_check_budget(w, budget);

    if (status != UMADV_OK)
        return status;
    status = umadv__sim_engine_init(&e, w, params);
    if (status != UMADV_OK)
        return status;
    status = umadv__sim_engine_run(&e);
    if (status == UMADV_OK)
        *r = e.r;
    umadv__sim_engine_cleanup(&e);
    return status;
}

static void finish(const umadv_sim_params_t *params, umadv_sim_result_t *r)
{
    const umadv_schedule_t *s = params->schedule;

    r->policy = params->policy;
    r->budget = params->budget;
    r->stall_s = r->iteration_s - r->compute_s;
    if (params->policy == UMADV_POLICY_ORACLE)
        r->lower_bound_s = r->resident_s;
    else if (s != NULL)
        r->lower_bound_s = umadv__sim_lower_bound(r->resident_s + s->remote_s, s->fetch_bytes,
                                                  umadv__schedule_migrated_bytes(s),
                                                  s->staged_bytes, &params->link);
    else
        r->lower_bound_s = umadv__sim_lower_bound(r->resident_s + r->remote_s,
                                                  r->fetched_bytes + r->fault_bytes,
                                                  r->evicted_bytes, r->staged_bytes,
                                                  &params->link);
}

umadv_status_t umadv__sim_run(const umadv_trace_t *trace, const umadv_sim_params_t *params,
                              umadv_sim_result_t *result)
{
    umadv_sim_result_t r;
    umadv_window_t w;
    uint32_t first, count;
    umadv_status_t status;

    if (trace == NULL || params == NULL || result == NULL || !trace->finalized)
        return UMADV_ERR_INVALID_PARAM;
    status = umadv__trace_iteration_require(trace, params->iteration, &first, &count);
    if (status != UMADV_OK)
        return status;
    status = check_params(trace, params, first, count);
    if (status == UMADV_OK && params->policy != UMADV_POLICY_ORACLE)
        status = umadv__window_check_cost(trace, first, count, params->max_touches);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_init(&w, trace, first, count);
    if (status != UMADV_OK)
        return status;
    memset(&r, 0, sizeof(r));
    if (params->policy == UMADV_POLICY_ORACLE) {
        status = footprint(&w, &r.peak_resident);
    } else {
        status = run_engine(&w, params, &r);
    }
    r.compute_s = umadv__window_compute_seconds(&w);
    r.resident_s = umadv__window_resident_seconds(&w);
    if (params->policy == UMADV_POLICY_ORACLE)
        r.iteration_s = r.resident_s;
    umadv__window_cleanup(&w);
    if (status != UMADV_OK)
        return status;
    finish(params, &r);
    if (!isfinite(r.iteration_s) || !isfinite(r.lower_bound_s)) {
        umadv_error("the link model gives an infinite iteration time (fetch %g B/s, evict %g "
                    "B/s, fault %g B/s)", params->link.fetch_bw, params->link.evict_bw,
                    params->link.fault_bw);
        return UMADV_ERR_INVALID_PARAM;
    }
    *result = r;
    return UMADV_OK;
}
