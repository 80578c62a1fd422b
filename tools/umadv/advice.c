/*
 * The report's advice (report.h): what to do about a trace, each item
 * with its evidence, every number from the trace or the simulator.
 *
 * - the budget: plan and demand simulated at 25, 50, 75 and 100% of the
 *   footprint (and at --budget); the advice's budget is the smallest that
 *   keeps plan within UMADV_ADVICE_SLOWDOWN of oracle, or --budget;
 * - prefetches: demand simulated at that budget, its faults attributed to
 *   the allocations whose sections were on the host when a step that
 *   touches them started (the simulator's section states);
 * - read-mostly: the allocations the iteration never writes, and what the
 *   planner's read-mostly advice saves at the budget (plan without it);
 * - the umadv run command that applies it (advice_print.c prints it all).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "plan/plan.h"
#include "report.h"
#include "schedule/core.h"
#include "sim/sim.h"

static const unsigned fractions[UMADV_ADVICE_FRACTIONS] = {25, 50, 75, 100};

/* The simulator failed on the trace (figures it refuses, a trace it cannot
 * play): the report goes on without advice, as it goes on without a
 * footprint. */
#define ADVICE_UNAVAILABLE (-2)

static int unavailable(const char *what, umadv_status_t status)
{
    umadv_warn("no advice: %s: %s", what, umadv_status_string(status));
    return ADVICE_UNAVAILABLE;
}

/* The advice is for `umadv run --policy plan` with the knobs' defaults
 * (umadv(7)): the planner and the simulator are set as the runtime is. */
typedef struct advice_run {
    const umadv_trace_t *trace;
    uint32_t             iteration, first_step, nsteps;
    umadv_config_t       config;
} advice_run_t;

/* ---- simulations ---- */

static umadv_status_t simulate(const advice_run_t *run, umadv_policy_t policy, uint64_t budget,
                               const umadv_schedule_t *schedule, umadv_sim_params_t *params,
                               umadv_sim_result_t *result)
{
    umadv__sim_params_default(run->trace, policy, budget, params);
    params->iteration = run->iteration;
    params->schedule = schedule;
    params->quiet = 1;
    params->stage = params->stage && run->config.stage;
    return umadv__sim_run(run->trace, params, result);
}

/* The plan at @budget simulated: its iteration time and faults. */
static umadv_status_t simulate_plan(const advice_run_t *run, uint64_t budget, int read_mostly,
                                    umadv_sim_result_t *result)
{
    umadv_plan_params_t params;
    umadv_sim_params_t sim;
    umadv_schedule_t schedule;
    umadv_status_t status;

    umadv__plan_params_default(run->trace, budget, &params);
    params.iteration = run->iteration;
    params.read_mostly = read_mostly && run->config.read_mostly;
    params.host_placement = run->config.host_placement;
    params.lookahead = run->config.lookahead;
    params.stage = params.stage && run->config.stage;
    status = umadv__plan_build(run->trace, &params, &schedule);
    if (status != UMADV_OK)
        return status;
    status = simulate(run, UMADV_POLICY_PLAN, budget, &schedule, &sim, result);
    umadv__schedule_cleanup(&schedule);
    return status;
}

static uint64_t largest_step(const advice_run_t *run)
{
    const umadv_trace_t *trace = run->trace;
    uint64_t largest = 0;

    for (uint32_t s = run->first_step; s < run->first_step + run->nsteps; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        uint64_t bytes = 0;
        for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
            const umadv_trace_access_t *ac = &trace->accesses[a];
            bytes += umadv__trace_run_bytes(trace, ac->alloc, ac->first, ac->count);
        }
        largest = UMADV_MAX(largest, bytes);
    }
    return largest;
}

/* Plan and demand at @tried->bytes; a budget a step does not fit is no
 * error (fits = 0). */
static int try_budget(const advice_run_t *run, umadv_report_advice_t *advice,
                      umadv_advice_budget_t *tried)
{
    umadv_sim_params_t params;
    umadv_sim_result_t plan, demand;
    umadv_status_t status;

    tried->fits = tried->bytes >= advice->largest_step;
    if (!tried->fits)
        return 0;
    status = simulate_plan(run, tried->bytes, 1, &plan);
    if (status == UMADV_OK)
        status = simulate(run, UMADV_POLICY_DEMAND, tried->bytes, NULL, &params, &demand);
    if (status == UMADV_ERR_BUDGET_TOO_SMALL) {
        tried->fits = 0;
        return 0;
    }
    if (status != UMADV_OK)
        return unavailable("simulating a budget", status);
    tried->plan_s = plan.iteration_s;
    tried->demand_s = demand.iteration_s;
    tried->plan_faults = plan.faults;
    tried->demand_faults = demand.faults;
    tried->demand_fault_bytes = demand.fault_bytes;
    return 0;
}

static int try_budgets(const advice_run_t *run, const umadv_report_opts_t *opts,
                       umadv_report_advice_t *advice)
{
    int rc;

    for (unsigned i = 0; i < UMADV_ADVICE_FRACTIONS; i++) {
        umadv_advice_budget_t *tried = &advice->tried[advice->ntried++];
        tried->percent = fractions[i];
        tried->bytes = (uint64_t)floor((double)advice->footprint * fractions[i] / 100.0);
        if ((rc = try_budget(run, advice, tried)) != 0)
            return rc;
    }
    if (advice->given) {
        umadv_advice_budget_t *tried = &advice->tried[advice->ntried++];
        tried->bytes = opts->budget != 0 ? opts->budget
                                         : (uint64_t)floor((double)advice->footprint *
                                                           opts->budget_percent / 100.0);
        return try_budget(run, advice, tried);
    }
    return 0;
}

/* The given budget, else the smallest tried that keeps plan within
 * UMADV_ADVICE_SLOWDOWN of oracle; the least where demand faults nothing. */
static void choose(umadv_report_advice_t *advice)
{
    advice->chosen = -1;
    for (unsigned i = 0; i < advice->ntried; i++) {
        const umadv_advice_budget_t *t = &advice->tried[i];
        if (!t->fits)
            continue;
        if (advice->no_fault_budget == 0 && t->percent != 0 && t->demand_faults == 0)
            advice->no_fault_budget = t->bytes;
        if (advice->no_copy_budget == 0 && t->percent != 0 && t->demand_fault_bytes == 0)
            advice->no_copy_budget = t->bytes;
        if (advice->chosen < 0 && t->percent != 0 &&
            t->plan_s <= advice->oracle_s * UMADV_ADVICE_SLOWDOWN)
            advice->chosen = (int)i;
    }
    advice->keeps_up = advice->chosen >= 0;
    for (unsigned i = 0; advice->chosen < 0 && i < advice->ntried; i++) {
        if (advice->tried[i].fits && advice->tried[i].percent == 100)
            advice->chosen = (int)i; /* none keeps up: the whole footprint */
    }
    if (advice->given)
        advice->chosen = advice->tried[advice->ntried - 1].fits ? (int)advice->ntried - 1 : -1;
}

/* ---- demand's faults, by step and by allocation ---- */

typedef struct fault_watch {
    const advice_run_t *run;
    uint32_t            measured;  /* the replay that counts */
    uint8_t            *before;    /* section states at the previous step's start */
    double              last_end;  /* the previous step's end: a step's stall
                                    * is what its end comes later than its
                                    * compute time after that */
    uint64_t           *step_faults;
    double             *step_stall;
    uint64_t           *alloc_faults;
    uint32_t           *alloc_first; /* first step faulting on it; UMADV_STEP_NONE */
} fault_watch_t;

/* A section on the host when the step before started, that this step
 * touches, is one demand faults in here: demand prefetches nothing, and
 * what it evicts between steps is never the next step's. */
static void attribute(fault_watch_t *w, const umadv_sim_step_view_t *view)
{
    const umadv_trace_t *trace = w->run->trace;
    const umadv_trace_step_t *step = &trace->steps[view->step];

    for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
        const umadv_trace_access_t *ac = &trace->accesses[a];
        uint32_t base = trace->allocs[ac->alloc].first_section + ac->first;
        for (uint32_t s = base; s < base + ac->count; s++) {
            if (w->before[s] != UMADV_SEC_HOST)
                continue;
            w->alloc_faults[ac->alloc]++;
            if (w->alloc_first[ac->alloc] == UMADV_STEP_NONE)
                w->alloc_first[ac->alloc] = view->step;
        }
    }
}

static void observe(void *arg, const umadv_sim_step_view_t *view)
{
    fault_watch_t *w = arg;
    uint32_t local = view->step - w->run->first_step;

    if (view->replay == w->measured && local < w->run->nsteps) {
        w->step_faults[local] = view->faults;
        w->step_stall[local] = UMADV_MAX(view->end_s - w->last_end, 0.0) -
                               (double)w->run->trace->steps[view->step].duration_ns * 1e-9;
        w->step_stall[local] = UMADV_MAX(w->step_stall[local], 0.0);
        if (view->faults > 0)
            attribute(w, view);
    }
    w->last_end = view->end_s;
    memcpy(w->before, view->state, w->run->trace->nsections);
}

static int watch_init(fault_watch_t *w, const advice_run_t *run)
{
    const umadv_trace_t *trace = run->trace;

    memset(w, 0, sizeof(*w));
    w->run = run;
    w->before = calloc(trace->nsections ? trace->nsections : 1, 1);
    w->step_faults = calloc(run->nsteps ? run->nsteps : 1, sizeof(*w->step_faults));
    w->step_stall = calloc(run->nsteps ? run->nsteps : 1, sizeof(*w->step_stall));
    w->alloc_faults = calloc(trace->nallocs ? trace->nallocs : 1, sizeof(*w->alloc_faults));
    w->alloc_first = malloc(sizeof(*w->alloc_first) * (trace->nallocs ? trace->nallocs : 1));
    if (w->before == NULL || w->step_faults == NULL || w->step_stall == NULL ||
        w->alloc_faults == NULL || w->alloc_first == NULL)
        return umadv__cli_fail("out of memory");
    for (uint32_t a = 0; a < trace->nallocs; a++)
        w->alloc_first[a] = UMADV_STEP_NONE;
    return 0;
}

static void watch_cleanup(fault_watch_t *w)
{
    free(w->before);
    free(w->step_faults);
    free(w->step_stall);
    free(w->alloc_faults);
    free(w->alloc_first);
}

typedef struct keyed {
    double   key;
    uint32_t index;
} keyed_t;

static int keyed_compare(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;

    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Indices of the (at most) @max largest keys above 0, into @out. */
static uint32_t top_indices(const double *keys, uint32_t n, uint32_t max, uint32_t *out)
{
    keyed_t *all = malloc(sizeof(*all) * (n ? n : 1));
    uint32_t count = 0;

    if (all == NULL)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (keys[i] > 0)
            all[count++] = (keyed_t){keys[i], i};
    }
    qsort(all, count, sizeof(*all), keyed_compare);
    count = UMADV_MIN(count, max);
    for (uint32_t i = 0; i < count; i++)
        out[i] = all[i].index;
    free(all);
    return count;
}

static void trace_faults(const advice_run_t *run, uint64_t *per_alloc)
{
    const umadv_trace_t *trace = run->trace;

    for (uint32_t s = run->first_step; s < run->first_step + run->nsteps; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++)
            per_alloc[trace->accesses[a].alloc] += trace->accesses[a].faults;
    }
}

static int rank_faults(const advice_run_t *run, const fault_watch_t *w, uint32_t top,
                       umadv_report_advice_t *advice)
{
    const umadv_trace_t *trace = run->trace;
    uint32_t n = UMADV_MAX(trace->nallocs, run->nsteps);
    double *keys = calloc(n ? n : 1, sizeof(*keys));
    uint64_t *recorded = calloc(trace->nallocs ? trace->nallocs : 1, sizeof(*recorded));
    uint32_t *order = malloc(sizeof(*order) * (n ? n : 1));

    advice->allocs = calloc(top, sizeof(*advice->allocs));
    advice->steps = calloc(top, sizeof(*advice->steps));
    if (keys == NULL || recorded == NULL || order == NULL || advice->allocs == NULL ||
        advice->steps == NULL) {
        free(keys), free(recorded), free(order);
        return umadv__cli_fail("out of memory");
    }
    trace_faults(run, recorded);
    for (uint32_t a = 0; a < trace->nallocs; a++)
        keys[a] = (double)w->alloc_faults[a];
    advice->nallocs = top_indices(keys, trace->nallocs, top, order);
    for (uint32_t i = 0; i < advice->nallocs; i++)
        advice->allocs[i] = (umadv_advice_alloc_t){order[i], w->alloc_faults[order[i]],
                                                   recorded[order[i]], w->alloc_first[order[i]]};
    for (uint32_t s = 0; s < run->nsteps; s++)
        keys[s] = w->step_faults[s] > 0 ? w->step_stall[s] + 1e-12 : 0.0;
    advice->nsteps = top_indices(keys, run->nsteps, top, order);
    for (uint32_t i = 0; i < advice->nsteps; i++)
        advice->steps[i] = (umadv_advice_step_t){run->first_step + order[i],
                                                 w->step_faults[order[i]], w->step_stall[order[i]]};
    free(keys), free(recorded), free(order);
    return 0;
}

/* Demand at the advice's budget, watched step by step. */
static int watch_demand(const advice_run_t *run, const umadv_report_opts_t *opts,
                        umadv_report_advice_t *advice)
{
    umadv_sim_params_t params;
    umadv_sim_result_t result;
    umadv_status_t status;
    fault_watch_t w;
    int rc;

    if ((rc = watch_init(&w, run)) != 0)
        goto out;
    umadv__sim_params_default(run->trace, UMADV_POLICY_DEMAND, advice->tried[advice->chosen].bytes,
                              &params);
    params.iteration = run->iteration;
    params.quiet = 1;
    params.stage = params.stage && run->config.stage;
    params.observer = observe;
    params.observer_arg = &w;
    w.measured = params.warmup;
    status = umadv__sim_run(run->trace, &params, &result);
    if (status != UMADV_OK) { /* tried already */
        rc = unavailable("simulating demand", status);
        goto out;
    }
    rc = rank_faults(run, &w, opts->top, advice);
out:
    watch_cleanup(&w);
    return rc;
}

/* ---- read-mostly ---- */

static int find_read_only(const advice_run_t *run, uint32_t top, umadv_report_advice_t *advice)
{
    const umadv_trace_t *trace = run->trace;
    uint32_t *modes = calloc(trace->nallocs ? trace->nallocs : 1, sizeof(*modes));
    double *keys = calloc(trace->nallocs ? trace->nallocs : 1, sizeof(*keys));

    advice->read_only = malloc(sizeof(*advice->read_only) * top);
    if (modes == NULL || keys == NULL || advice->read_only == NULL) {
        free(modes), free(keys);
        return umadv__cli_fail("out of memory");
    }
    for (uint32_t s = run->first_step; s < run->first_step + run->nsteps; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++)
            modes[trace->accesses[a].alloc] |= trace->accesses[a].mode;
    }
    for (uint32_t a = 0; a < trace->nallocs; a++) {
        if (modes[a] == UMADV_ACCESS_READ) {
            keys[a] = (double)trace->allocs[a].size;
            advice->read_only_bytes += trace->allocs[a].size;
            advice->nread_only_all++;
        }
    }
    advice->nread_only = top_indices(keys, trace->nallocs, top, advice->read_only);
    free(modes), free(keys);
    return 0;
}

static int read_mostly_saving(const advice_run_t *run, umadv_report_advice_t *advice)
{
    umadv_sim_result_t without;
    const umadv_advice_budget_t *at = &advice->tried[advice->chosen];
    umadv_status_t status;

    if (advice->nread_only == 0)
        return 0;
    status = simulate_plan(run, at->bytes, 0, &without);
    if (status != UMADV_OK)
        return unavailable("planning without read-mostly advice", status);
    advice->read_mostly_saving_s = without.iteration_s - at->plan_s;
    return 0;
}

/* ---- the advice ---- */

static int select_iteration(const umadv_trace_t *trace, advice_run_t *run)
{
    umadv_plan_params_t params;

    umadv__plan_params_default(trace, 0, &params);
    umadv__config_defaults(&run->config);
    run->trace = trace;
    run->iteration = params.iteration;
    return umadv__trace_iteration_steps(trace, run->iteration, &run->first_step, &run->nsteps) ==
           UMADV_OK ? 0 : -1;
}

static int compute(const umadv_trace_t *trace, const umadv_report_opts_t *opts,
                   umadv_report_advice_t *advice)
{
    umadv_sim_params_t params;
    umadv_sim_result_t oracle;
    umadv_status_t status;
    advice_run_t run;
    int rc;

    if (select_iteration(trace, &run) != 0)
        return unavailable("finding the iteration to plan", UMADV_ERR_NOT_FOUND);
    status = simulate(&run, UMADV_POLICY_ORACLE, 0, NULL, &params, &oracle);
    if (status != UMADV_OK)
        return unavailable("simulating oracle", status);
    advice->iteration = run.iteration;
    advice->footprint = oracle.peak_resident;
    advice->oracle_s = oracle.iteration_s;
    advice->largest_step = largest_step(&run);
    advice->given = opts->budget != 0 || opts->budget_percent > 0;
    if ((rc = try_budgets(&run, opts, advice)) != 0)
        return rc;
    choose(advice);
    if ((rc = find_read_only(&run, opts->top, advice)) != 0 || advice->chosen < 0)
        return rc;
    if ((rc = watch_demand(&run, opts, advice)) != 0)
        return rc;
    return read_mostly_saving(&run, advice);
}

int umadv__advice_compute(const umadv_trace_t *trace, const umadv_report_opts_t *opts,
                          umadv_report_advice_t *advice)
{
    int rc;

    memset(advice, 0, sizeof(*advice));
    advice->chosen = -1;
    rc = compute(trace, opts, advice);
    if (rc != ADVICE_UNAVAILABLE)
        return rc;
    /* what was found stays out of the report: it would be half of it */
    umadv__advice_cleanup(advice);
    advice->chosen = -1;
    advice->unavailable = 1;
    return 0;
}

void umadv__advice_cleanup(umadv_report_advice_t *advice)
{
    free(advice->allocs);
    free(advice->steps);
    free(advice->read_only);
    memset(advice, 0, sizeof(*advice));
}
