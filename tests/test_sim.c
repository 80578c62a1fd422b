/*
 * The simulator: timings that follow from the cost model on hand-built
 * traces, and properties over many random traces and budgets for every
 * policy, checked by an observer that recounts memory independently.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "tap.h"
#include "plan_util.h"

#define SEC TP_SECTION

/* ------------------------------------------------------------ observer */

typedef struct watch {
    const umadv_trace_t *t;
    uint64_t budget;
    uint64_t steps, over_budget, miscounted, missing, faults, remote, remote_bad;
    uint64_t wait_bad;     /* steps whose waits by cause do not add up to their delay */
    double   prev_end;     /* when the step before ended */
    uint32_t measured;     /* replay index measured (warmup) */
} watch_t;

/* The stall attribution covers the whole delay between the end of the
 * step before and this one's start, each piece charged once. */
static void check_waits(watch_t *w, const umadv_sim_step_view_t *v)
{
    double sum = 0;

    for (int c = 0; c < UMADV_SIM_WAIT_COUNT; c++) {
        w->wait_bad += v->wait_s[c] < 0;
        sum += v->wait_s[c];
    }
    w->wait_bad += fabs(v->start_s - w->prev_end - sum) > 1e-12 + 1e-9 * v->start_s;
    w->prev_end = v->end_s;
}

static void watch_step(void *arg, const umadv_sim_step_view_t *v)
{
    watch_t *w = arg;
    const umadv_trace_t *t = w->t;
    const umadv_trace_step_t *st = &t->steps[v->step];
    uint64_t used = 0;
    uint32_t nremote = 0;

    for (uint32_t x = 0; x < t->nsections; x++)
        used += v->state[x] != UMADV_SEC_HOST ? t->sections[x].size : 0;
    w->steps++;
    w->miscounted += used != v->used;
    w->over_budget += w->budget && used > w->budget;
    for (uint32_t i = 0; i < st->naccesses; i++) {
        const umadv_trace_access_t *acc = &t->accesses[st->first_access + i];
        for (uint32_t c = 0; c < acc->count; c++) {
            uint32_t x = umadv__trace_section_id(t, acc->alloc, acc->first + c);
            /* on the host with host advice: accessed over the link */
            int remote = v->placed[x] && v->state[x] == UMADV_SEC_HOST;
            w->missing += v->state[x] != UMADV_SEC_RESIDENT &&
                          v->state[x] != UMADV_SEC_OUT_QUEUED && !remote &&
                          !(v->placed[x] && v->state[x] == UMADV_SEC_EVICTING);
            w->remote += remote;
            nremote += (uint32_t)remote;
        }
    }
    w->remote_bad += nremote != v->remote;
    if (v->replay == w->measured)
        w->faults += v->faults;
    check_waits(w, v);
}

static int simulate(const umadv_trace_t *t, umadv_policy_t policy, uint64_t budget,
                    const umadv_schedule_t *s, watch_t *w, umadv_sim_result_t *r)
{
    umadv_sim_params_t p;

    umadv__sim_params_default(t, policy, budget, &p);
    if (s != NULL)
        p.iteration = t->steps[s->first_step].iteration;
    p.schedule = s;
    if (w != NULL) {
        memset(w, 0, sizeof(*w));
        w->t = t;
        w->budget = budget;
        w->measured = p.warmup;
        p.observer = watch_step;
        p.observer_arg = w;
    }
    return umadv__sim_run(t, &p, r);
}

/* ------------------------------------------------------------ hand-built */

/* A and B, one section each, used in turn; room for one. */
static void build_alternating(umadv_trace_t *t, uint64_t size, uint64_t dur_ns)
{
    uint32_t a, b;

    umadv__trace_init(t, SEC);
    umadv__trace_add_alloc(t, 0, size, UMADV_ALLOC_WEIGHT, NULL, &a);
    umadv__trace_add_alloc(t, 0, size, UMADV_ALLOC_WEIGHT, NULL, &b);
    umadv__trace_add_step(t, "a", UMADV_STEP_LAYER, 0, dur_ns, NULL);
    umadv__trace_add_access_sections(t, a, 0, 1, UMADV_ACCESS_RW, 0);
    umadv__trace_add_step(t, "b", UMADV_STEP_LAYER, 0, dur_ns, NULL);
    umadv__trace_add_access_sections(t, b, 0, 1, UMADV_ACCESS_RW, 0);
    umadv__trace_finalize(t, NULL, 0);
}

static void test_cost_model(void)
{
    umadv_trace_t t;
    umadv_plan_params_t pp;
    umadv_schedule_t s;
    umadv_sim_result_t r;
    const umadv_link_model_t *l;
    double d = 1e-3, evict, fetch, fault;

    build_alternating(&t, SEC, 1000000);
    l = &t.link;
    evict = l->evict_latency + SEC / l->evict_bw;
    fetch = l->fetch_latency + SEC / l->fetch_bw;
    fault = SEC / l->fault_bw;
    is(simulate(&t, UMADV_POLICY_ORACLE, SEC, NULL, NULL, &r), UMADV_OK, "oracle runs");
    is_near(r.iteration_s, 2 * d, 1e-9, "oracle: the sum of durations");
    is(simulate(&t, UMADV_POLICY_DEMAND, SEC, NULL, NULL, &r), UMADV_OK, "demand runs");
    is_near(r.iteration_s, 2 * (evict + fault + d), 1e-9,
            "demand: each step evicts the other in its fault path, then faults");
    ok(r.faults == 2 && r.fault_bytes == 2 * SEC && r.evicted_bytes == 2 * SEC,
       "demand: two faults, two evictions per iteration");
    is(simulate(&t, UMADV_POLICY_PREFETCH_ALL, SEC, NULL, NULL, &r), UMADV_OK, "prefetch-all runs");
    is_near(r.iteration_s, 2 * (evict + fetch + d), 1e-9,
            "prefetch-all: the fetch waits for the eviction, the step for the fetch");
    umadv__plan_params_default(&t, SEC, &pp);
    umadv__plan_build(&t, &pp, &s);
    is(simulate(&t, UMADV_POLICY_PLAN, SEC, &s, NULL, &r), UMADV_OK, "plan runs");
    is_near(r.iteration_s, 2 * (evict + fetch + d), 1e-9,
            "plan: no room to hide anything, the same chain as prefetch-all");
    is(r.faults, 0, "plan: no faults");
    is_near(r.lower_bound_s, 2 * d > 2 * SEC / l->evict_bw ? 2 * d : 2 * SEC / l->evict_bw, 1e-12,
            "plan: lower bound from the schedule's volumes");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* With room for everything, a step that needs nothing new does not wait:
 * demand and plan settle to the compute time after warmup. */
static void test_no_pressure(void)
{
    tp_params_t p = {.nallocs = 6, .nsteps = 10, .niters = 1, .max_sections = 4, .uniform = 1};
    umadv_trace_t t;
    umadv_plan_params_t pp;
    umadv_schedule_t s;
    umadv_sim_result_t r, o;

    tp_random_trace(3, &p, &t);
    simulate(&t, UMADV_POLICY_ORACLE, 0, NULL, NULL, &o);
    simulate(&t, UMADV_POLICY_DEMAND, 0, NULL, NULL, &r);
    ok(r.faults == 0 && fabs(r.iteration_s - o.iteration_s) < 1e-12,
       "no pressure: demand costs nothing once warm");
    umadv__plan_params_default(&t, 0, &pp);
    umadv__plan_build(&t, &pp, &s);
    simulate(&t, UMADV_POLICY_PLAN, 0, &s, NULL, &r);
    ok(r.faults == 0 && fabs(r.iteration_s - o.iteration_s) < 1e-12 && r.fetched_bytes == 0,
       "no pressure: nor does the plan");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* The footprint, counted the slow way. */
static uint64_t footprint(const umadv_trace_t *t, uint32_t first, uint32_t n)
{
    uint64_t peak = 0;

    for (uint32_t g = first; g < first + n; g++) {
        uint64_t live = 0;
        for (uint32_t a = 0; a < t->nallocs; a++) {
            const umadv_trace_alloc_t *al = &t->allocs[a];
            if ((al->alloc_step == UMADV_STEP_NONE || al->alloc_step <= g) &&
                (al->free_step == UMADV_STEP_NONE || g <= al->free_step))
                live += al->size;
        }
        peak = live > peak ? live : peak;
    }
    return peak;
}

static void test_oracle(void)
{
    int bad_time = 0, bad_peak = 0, n = 0;

    for (uint64_t seed = 1; seed <= 40; seed++) {
        tp_params_t p = {.nallocs = 2 + seed % 5, .ntransient = seed % 6, .nsteps = 3 + seed % 8,
                         .niters = 1 + seed % 3, .max_sections = 1 + seed % 4,
                         .carried = seed % 2};
        umadv_trace_t t;
        umadv_sim_result_t r;
        uint32_t first, count;
        uint64_t ns = 0;

        tp_random_trace(seed, &p, &t);
        umadv__trace_iteration_steps(&t, t.niterations - 1, &first, &count);
        for (uint32_t g = first; g < first + count; g++)
            ns += t.steps[g].duration_ns;
        if (simulate(&t, UMADV_POLICY_ORACLE, 1, NULL, NULL, &r) == UMADV_OK) {
            n++;
            bad_time += fabs(r.iteration_s - ns * 1e-9) > 1e-12 || r.compute_s != r.iteration_s;
            bad_peak += r.peak_resident != footprint(&t, first, count);
        }
        umadv__trace_cleanup(&t);
    }
    ok(n == 40, "oracle: ignores the budget");
    is(bad_time, 0, "oracle: iteration == compute == sum of durations");
    is(bad_peak, 0, "oracle: peak is the footprint");
}

/* ------------------------------------------------------------ random */

typedef struct tally {
    int runs, errors, over, miscount, missing, peak_over, plan_faults, bound, slower;
    int volumes, remote_view, remote_runs, waits;
} tally_t;

/* What the simulator says the stall is made of. */
static double stall_parts(const umadv_sim_result_t *r)
{
    double sum = r->fault_s + r->remote_s;

    for (int c = 0; c < UMADV_SIM_WAIT_COUNT; c++)
        sum += r->wait_s[c];
    return sum;
}

static void check_run(const umadv_trace_t *t, umadv_policy_t policy, uint64_t budget,
                      const umadv_schedule_t *s, tally_t *y)
{
    watch_t w;
    umadv_sim_result_t r;

    if (simulate(t, policy, budget, s, &w, &r) != UMADV_OK) {
        y->errors++;
        return;
    }
    y->runs++;
    y->over += w.over_budget != 0;
    y->miscount += w.miscounted != 0;
    y->missing += w.missing != 0;
    y->peak_over += r.peak_resident > budget;
    y->bound += r.lower_bound_s > r.iteration_s * (1 + 1e-9);
    y->slower += r.iteration_s < r.compute_s * (1 - 1e-9);
    y->remote_view += w.remote_bad != 0 || (policy != UMADV_POLICY_PLAN && w.remote != 0);
    y->waits += w.wait_bad != 0 || fabs(r.stall_s - stall_parts(&r)) > 1e-12 + 1e-9 * r.iteration_s;
    if (policy == UMADV_POLICY_PLAN) {
        y->plan_faults += r.faults != 0 || w.faults != 0;
        y->volumes += s->converged && (r.fetched_bytes != s->fetch_bytes ||
                                       r.evicted_bytes != s->evict_bytes ||
                                       r.remote_bytes != s->remote_bytes);
        y->remote_runs += r.remote_bytes > 0;
    }
}

static void test_random(void)
{
    static const double fractions[] = {1.0, 1.2, 1.6, 2.5};
    tally_t y;

    memset(&y, 0, sizeof(y));
    for (uint64_t seed = 1; seed <= 50; seed++) {
        tp_params_t p = {.nallocs = 3 + seed % 6, .ntransient = seed % 5, .nsteps = 4 + seed % 9,
                         .niters = 1 + seed % 3, .max_sections = 1 + seed % 5,
                         .uniform = seed % 2, .carried = seed % 3 == 0,
                         .late_free = seed % 4 == 1};
        umadv_trace_t t;

        tp_random_trace(seed, &p, &t);
        for (size_t b = 0; b < sizeof(fractions) / sizeof(fractions[0]); b++) {
            umadv_plan_params_t pp;
            umadv_schedule_t s;

            umadv__plan_params_default(&t, 0, &pp);
            /* refine keeps placement only where the simulator agrees:
             * test the placed schedules themselves too */
            pp.refine = seed % 3 == 0;
            if (p.carried && t.niterations >= 3)
                pp.iteration = 1;
            umadv__plan_build(&t, &pp, &s);
            pp.budget = (uint64_t)(s.max_step_bytes * fractions[b]) + 1;
            umadv__schedule_cleanup(&s);
            if (umadv__plan_build(&t, &pp, &s) != UMADV_OK) {
                y.errors++;
                continue;
            }
            for (int pol = UMADV_POLICY_DEMAND; pol < UMADV_POLICY_COUNT; pol++)
                check_run(&t, (umadv_policy_t)pol, pp.budget, &s, &y);
            umadv__schedule_cleanup(&s);
        }
        umadv__trace_cleanup(&t);
    }
    is(y.errors, 0, "random: %d simulations, none failed", y.runs);
    is(y.over, 0, "random: residency never over the budget at a step's start");
    is(y.miscount, 0, "random: the engine's byte count matches the section states");
    is(y.peak_over, 0, "random: peak residency (every event) within the budget");
    is(y.missing, 0, "random: every touched section resident or host-placed when its step runs");
    is(y.plan_faults, 0, "random: the plan never faults in steady state");
    is(y.bound, 0, "random: the lower bound is below every policy's time");
    is(y.slower, 0, "random: no policy beats the compute time");
    is(y.volumes, 0, "random: the plan moves (and accesses remotely) what the schedule says");
    is(y.remote_view, 0, "random: remote accesses only by the plan, as many as the view says");
    ok(y.remote_runs > 0, "random: %d plan runs access host-placed data", y.remote_runs);
    is(y.waits, 0, "random: waits by cause add up to each step's delay and, with faults and "
       "remote access, to the stall");
}

/* A schedule made for more memory than the simulation grants: its
 * fetches wait for room that never comes; the simulator must notice,
 * fault instead, keep the budget, and finish. */
static void test_starved_plan(void)
{
    int done = 0, over = 0, missing = 0, faulted = 0;

    for (uint64_t seed = 1; seed <= 20; seed++) {
        tp_params_t p = {.nallocs = 8, .ntransient = 3, .nsteps = 10, .niters = 1,
                         .max_sections = 4, .uniform = 1};
        umadv_trace_t t;
        umadv_plan_params_t pp;
        umadv_schedule_t s;
        umadv_sim_result_t r;
        watch_t w;

        tp_random_trace(seed, &p, &t);
        umadv__plan_params_default(&t, 0, &pp);
        umadv__plan_build(&t, &pp, &s);
        pp.budget = s.max_step_bytes * 3;
        umadv__schedule_cleanup(&s);
        umadv__plan_build(&t, &pp, &s);
        if (simulate(&t, UMADV_POLICY_PLAN, s.max_step_bytes, &s, &w, &r) == UMADV_OK) {
            done++;
            over += w.over_budget != 0 || r.peak_resident > s.max_step_bytes;
            missing += w.missing != 0;
            faulted += r.faults > 0;
        }
        umadv__schedule_cleanup(&s);
        umadv__trace_cleanup(&t);
    }
    is(done, 20, "starved plan: every simulation finishes");
    ok(over == 0 && missing == 0, "starved plan: budget kept, data resident when used");
    ok(faulted > 0, "starved plan: the fallback faults are counted (%d of %d)", faulted, done);
}

static void test_errors(void)
{
    umadv_trace_t t;
    umadv_sim_params_t p;
    umadv_plan_params_t pp;
    umadv_schedule_t s;
    umadv_sim_result_t r;
    tp_params_t tp = {.nallocs = 4, .nsteps = 5, .niters = 2, .max_sections = 3, .uniform = 1};

    tp_random_trace(5, &tp, &t);
    umadv__log_set_file("/dev/null");
    umadv__sim_params_default(&t, UMADV_POLICY_PLAN, 0, &p);
    is(umadv__sim_run(&t, &p, &r), UMADV_ERR_INVALID_PARAM, "plan without a schedule");
    umadv__plan_params_default(&t, 0, &pp);
    pp.iteration = 0;
    umadv__plan_build(&t, &pp, &s);
    p.schedule = &s; /* for iteration 0, p simulates 1 */
    is(umadv__sim_run(&t, &p, &r), UMADV_ERR_INVALID_PARAM, "a schedule of another iteration");
    umadv__sim_params_default(&t, UMADV_POLICY_DEMAND, 1, &p);
    is(umadv__sim_run(&t, &p, &r), UMADV_ERR_BUDGET_TOO_SMALL, "a budget below a step");
    p.iteration = 9;
    is(umadv__sim_run(&t, &p, &r), UMADV_ERR_NOT_FOUND, "an iteration the trace lacks");
    umadv__log_set_file(NULL);
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}


/* Link figures past any plausible range (the reader refuses them, a
 * caller of the library may not): every policy ends, each with a result
 * or a clean error, and never a crash. Issue 9: a subnormal eviction
 * bandwidth put an eviction at infinity and umadv__sim_advance(inf)
 * completed one from an empty queue. */
static void test_absurd_link(void)
{
    static const struct {
        size_t      offset;
        double      value;
        const char *what;
    } cases[] = {
        {offsetof(umadv_link_model_t, evict_bw), 4.9e-324, "evict_bw subnormal"},
        {offsetof(umadv_link_model_t, fetch_bw), 4.9e-324, "fetch_bw subnormal"},
        {offsetof(umadv_link_model_t, fault_bw), 4.9e-324, "fault_bw subnormal"},
        {offsetof(umadv_link_model_t, evict_latency), 1e308, "evict_latency 1e308"},
        {offsetof(umadv_link_model_t, fault_latency), 1e308, "fault_latency 1e308"},
        {offsetof(umadv_link_model_t, fetch_bw), 1e308, "fetch_bw 1e308"},
    };
    static const umadv_policy_t policies[] = {UMADV_POLICY_DEMAND, UMADV_POLICY_PREFETCH_ALL,
                                              UMADV_POLICY_PLAN};
    umadv__log_set_file("/dev/null");
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        umadv_trace_t t;
        umadv_plan_params_t pp;
        umadv_schedule_t s;
        umadv_sim_result_t r;
        umadv_status_t st;
        int good = 1;

        memset(&s, 0, sizeof(s));
        build_alternating(&t, SEC, 1000000);
        *(double *)((char *)&t.link + cases[c].offset) = cases[c].value;
        umadv__plan_params_default(&t, SEC, &pp);
        st = umadv__plan_build(&t, &pp, &s);
        if (st != UMADV_OK) {
            good = st == UMADV_ERR_INVALID_PARAM;
            diag("%s: the planner says %s", cases[c].what, umadv_status_string(st));
        }
        for (size_t p = 0; good && p < sizeof(policies) / sizeof(policies[0]); p++) {
            if (policies[p] == UMADV_POLICY_PLAN && st != UMADV_OK)
                continue;
            st = simulate(&t, policies[p], SEC, policies[p] == UMADV_POLICY_PLAN ? &s : NULL,
                          NULL, &r);
            if (st == UMADV_OK)
                good = isfinite(r.iteration_s) && isfinite(r.lower_bound_s);
            else
                good = st == UMADV_ERR_INVALID_PARAM;
            if (!good)
                diag("policy %s: %s, iteration %g s", umadv_policy_name(policies[p]),
                     umadv_status_string(st), r.iteration_s);
        }
        ok(good, "%s: planned and simulated, a finite result or a clean error",
           cases[c].what);
        umadv__schedule_cleanup(&s);
        umadv__trace_cleanup(&t);
    }
    umadv__log_set_file(NULL);
}

/* ------------------------------------------------------------ batches */

/* Four allocations used by step 1 alone, fetched at its start and
 * evicted at its end (step 0 leaves time for the evictions): runs 0, 2
 * and 3 copy one section, run 1 @big_sections (more than a call's latency
 * is worth when 64). */
static void batch_case(uint32_t big_sections, double *iter_s, uint64_t *fetched)
{
    umadv_op_t ops[8];
    uint32_t step_ops[3] = {0, 0, 8}, id;
    uint8_t resident[80] = {0};
    umadv_schedule_t s = {.nsteps = 2, .ops = ops, .nops = 8, .step_ops = step_ops,
                          .resident_at_start = resident};
    umadv_trace_t t;
    umadv_sim_result_t r;

    umadv__trace_init(&t, SEC);
    for (uint32_t a = 0; a < 4; a++)
        umadv__trace_add_alloc(&t, 0, (a == 1 ? big_sections : 1) * (uint64_t)SEC,
                               UMADV_ALLOC_WEIGHT, NULL, &id);
    umadv__trace_add_step(&t, "idle", UMADV_STEP_LAYER, 0, 10000000, NULL);
    umadv__trace_add_step(&t, "use", UMADV_STEP_LAYER, 0, 1000000, NULL);
    for (uint32_t a = 0; a < 4; a++)
        umadv__trace_add_access_sections(&t, a, 0, a == 1 ? big_sections : 1,
                                         UMADV_ACCESS_READ, 0);
    umadv__trace_finalize(&t, NULL, 0);
    for (uint32_t a = 0; a < 4; a++) {
        uint32_t n = a == 1 ? big_sections : 1;
        ops[a] = (umadv_op_t){.kind = UMADV_OP_FETCH, .alloc = a, .count = n,
                              .bytes = n * (uint64_t)SEC, .issue_step = 1, .need_step = 1};
        ops[4 + a] = ops[a];
        ops[4 + a].kind = UMADV_OP_EVICT;
    }
    simulate(&t, UMADV_POLICY_PLAN, 0, &s, NULL, &r);
    *iter_s = r.iteration_s;
    *fetched = r.fetched_bytes;
    umadv__trace_cleanup(&t);
}

static void test_batch(void)
{
    umadv_link_model_t l;
    double small, big, d = 11e-3;
    uint64_t fetched;

    umadv__link_model_default(&l);
    ok(umadv__schedule_batch_bytes(&l) >= SEC && umadv__schedule_batch_bytes(&l) < 64 * SEC,
       "batch: a section is small, 64 are not (limit %llu bytes)",
       (unsigned long long)umadv__schedule_batch_bytes(&l));
    batch_case(1, &small, &fetched);
    is_near(small, d + 2.5 * l.fetch_latency + 4.0 * SEC / l.fetch_bw, 1e-9,
            "batch: four small copies of one step: one call, half a latency per further range");
    ok(fetched == 4 * SEC, "batch: and every byte is counted");
    batch_case(64, &big, &fetched);
    is_near(big, d + 3 * l.fetch_latency + 67.0 * SEC / l.fetch_bw, 1e-9,
            "batch: the large copy goes in a call of its own, the small ones together");
}

static void set_stage_figures(umadv_link_model_t *l);

/* The two lanes sharing a channel (trace.h, duplex figures): UVM's
 * migration path, or with @staged every allocation stageable and the
 * staged channel's figures set, its copies. The same plan moves the same
 * bytes, and no iteration is faster than with full overlap; where both
 * lanes run, slower. The budget-bound plan of the alternating trace chains
 * the two (nothing to overlap), so it does not change. */
static void duplex_case(int staged, const char *what)
{
    int slower = 0, faster = 0, volumes = 0, runs = 0;

    for (uint64_t seed = 1; seed <= 30; seed++) {
        tp_params_t tp = {.nallocs = 10, .nsteps = 12, .niters = 2, .max_sections = 4,
                          .uniform = 1};
        umadv_trace_t t;
        umadv_plan_params_t pp;
        umadv_schedule_t sc;
        umadv_sim_result_t full, shared;
        uint64_t total = 0;

        tp_random_trace(seed, &tp, &t);
        for (uint32_t a = 0; a < t.nallocs; a++) {
            total += t.allocs[a].size;
            t.allocs[a].stageable = (uint8_t)staged;
        }
        if (staged)
            set_stage_figures(&t.link);
        umadv__plan_params_default(&t, total / 2, &pp);
        if (umadv__plan_build(&t, &pp, &sc) != UMADV_OK) {
            umadv__trace_cleanup(&t);
            continue;
        }
        simulate(&t, UMADV_POLICY_PLAN, total / 2, &sc, NULL, &full);
        if (staged) {
            t.link.stage_duplex_evict_bw = t.link.stage_evict_bw * 0.6;
            t.link.stage_duplex_restore_bw = t.link.stage_restore_bw * 0.5;
        } else {
            t.link.duplex_fetch_bw = t.link.fetch_bw * 0.2;
            t.link.duplex_evict_bw = t.link.evict_bw * 0.5;
        }
        /* with @staged, the plans that stage nothing are not this case's */
        if (simulate(&t, UMADV_POLICY_PLAN, total / 2, &sc, NULL, &shared) == UMADV_OK &&
            (!staged || full.staged_bytes > 0)) {
            runs++;
            slower += shared.iteration_s > full.iteration_s * (1 + 1e-9);
            faster += shared.iteration_s < full.iteration_s * (1 - 1e-9);
            volumes += shared.fetched_bytes != full.fetched_bytes ||
                       shared.evicted_bytes != full.evicted_bytes ||
                       shared.staged_bytes != full.staged_bytes ||
                       shared.restored_bytes != full.restored_bytes;
        }
        umadv__schedule_cleanup(&sc);
        umadv__trace_cleanup(&t);
    }
    ok(runs >= 25, "%s: %d plans simulated both ways%s", what, runs,
       staged ? ", each staging" : "");
    is(faster, 0, "%s: sharing the channel never makes an iteration faster", what);
    /* a fifth: plans whose evictions start early, idle since their last
     * use (residency.c, WHEN THE EVICTION CAN START), overlap the lanes
     * less (6 of 28 staged plans slower with it, 8 without) */
    ok(slower > runs / 5, "%s: it makes %d of them slower", what, slower);
    is(volumes, 0, "%s: the same bytes move (and staged, through the staged channel)", what);
}

static void test_duplex(void)
{
    duplex_case(0, "duplex");
    duplex_case(1, "staged duplex");
}

/* The staged channel's figures (trace.h), out and back. */
static void set_stage_figures(umadv_link_model_t *l)
{
    l->stage_evict_bw = 45e9;
    l->stage_evict_latency = 30e-6;
    l->stage_restore_bw = 60e9;
    l->stage_restore_latency = 40e-6;
}

/* A, B and C, one section each, used in turn, all stageable; room for
 * one, so each step's eviction, then its fetch, then its compute, one
 * after the other (as in test_cost_model). The staging pool holds what is
 * off the GPU at once and one allocation more (core.h, STAGING: three
 * sections), so every eviction is staged: the chain is 3 compute times
 * plus each move at its channel's cost. */
static void build_round_robin_of(umadv_trace_t *t, uint64_t size)
{
    uint32_t id;

    umadv__trace_init(t, SEC);
    for (uint32_t a = 0; a < 3; a++) {
        umadv__trace_add_alloc(t, 0, size, UMADV_ALLOC_ACTIVATION, NULL, &id);
        t->allocs[id].stageable = 1;
    }
    for (uint32_t a = 0; a < 3; a++) {
        umadv__trace_add_step(t, "s", UMADV_STEP_LAYER, 0, 1000000, NULL);
        umadv__trace_add_access_sections(t, a, 0, 1, UMADV_ACCESS_RW, 0);
    }
    umadv__trace_finalize(t, NULL, 0);
}

static void build_round_robin(umadv_trace_t *t)
{
    build_round_robin_of(t, SEC);
}

/* The chain's time from what moved: @out and @back per staged section,
 * UVM's figures for the rest. */
static double chain_time(const umadv_sim_result_t *r, const umadv_link_model_t *l, double out,
                         double back)
{
    double uvm_out = l->evict_latency + SEC / l->evict_bw;
    double uvm_in = l->fetch_latency + SEC / l->fetch_bw;

    return 3e-3 + (double)(r->staged_bytes / SEC) * out + (double)(r->evicted_bytes / SEC) *
           uvm_out + (double)(r->restored_bytes / SEC) * back +
           (double)(r->fetched_bytes / SEC) * uvm_in;
}

/* Staged calls timed with the figures where the link model has them,
 * without them as before (the built-in rate, UVM's call latencies). */
static void test_stage_figures(void)
{
    umadv_trace_t t;
    umadv_plan_params_t pp;
    umadv_schedule_t s;
    umadv_sim_result_t r;
    const umadv_link_model_t *l;

    build_round_robin(&t);
    l = &t.link;
    umadv__plan_params_default(&t, SEC, &pp);
    ok(pp.stage == 1, "stage: the plan stages a trace with stageable allocations by default");
    umadv__plan_build(&t, &pp, &s);
    is(simulate(&t, UMADV_POLICY_PLAN, SEC, &s, NULL, &r), UMADV_OK, "stage: plan runs");
    ok(r.staged_bytes == 3 * SEC && r.restored_bytes == 3 * SEC &&
       r.evicted_bytes == 0 && r.fetched_bytes == 0,
       "stage: the three evictions staged, and restored");
    is_near(r.iteration_s, chain_time(&r, l, l->evict_latency + SEC / 52.6e9,
                                      l->fetch_latency + SEC / 52.6e9), 1e-9,
            "stage: without figures, the built-in rate and the UVM calls' latencies");
    umadv__schedule_cleanup(&s);
    set_stage_figures(&t.link);
    umadv__plan_params_default(&t, SEC, &pp);
    umadv__plan_build(&t, &pp, &s);
    is(simulate(&t, UMADV_POLICY_PLAN, SEC, &s, NULL, &r), UMADV_OK, "stage: plan runs (figures)");
    is_near(r.iteration_s, chain_time(&r, l, l->stage_evict_latency + SEC / l->stage_evict_bw,
                                      l->stage_restore_latency + SEC / l->stage_restore_bw),
            1e-9, "stage: with figures, each staged call at its own latency and rate");
    ok(s.staged_bytes == s.evict_bytes && s.evict_bytes == 3 * SEC,
       "stage: the schedule reports its evictions as staged");
    t.link.stage_restore_latency = NAN;
    is(simulate(&t, UMADV_POLICY_PLAN, SEC, &s, NULL, &r), UMADV_ERR_INVALID_PARAM,
       "stage: a staged figure that is not finite is refused");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* Blocks smaller than a section share their pages (trace.h): marked
 * stageable, they are neither staged nor released; their evictions
 * migrate. */
static void test_stage_small_blocks(void)
{
    umadv_trace_t t;
    umadv_plan_params_t pp;
    umadv_schedule_t s;
    umadv_sim_result_t r;

    build_round_robin_of(&t, SEC / 2);
    set_stage_figures(&t.link);
    umadv__plan_params_default(&t, SEC / 2, &pp);
    ok(umadv__trace_stageable_bytes(&t) == 0 && pp.stage == 0 &&
           !umadv__trace_alloc_stageable(&t, 0) && !umadv__trace_alloc_owns_pages(&t, 0),
       "small blocks: marked stageable, none may be staged (they share pages)");
    umadv__plan_build(&t, &pp, &s);
    ok(simulate(&t, UMADV_POLICY_PLAN, SEC / 2, &s, NULL, &r) == UMADV_OK &&
           r.staged_bytes == 0 && r.evicted_bytes > 0,
       "small blocks: their evictions migrate (%llu bytes, none staged)",
       (unsigned long long)r.evicted_bytes);
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* Random traces, every allocation stageable, with the staged figures:
 * the plan that stages is never slower than the one that migrates, and
 * says how much it stages. */
static void test_stage_plans(void)
{
    int slower = 0, faster = 0, reported = 0, runs = 0;

    for (uint64_t seed = 1; seed <= 30; seed++) {
        tp_params_t tp = {.nallocs = 10, .nsteps = 12, .niters = 2, .max_sections = 4,
                          .uniform = 1};
        umadv_trace_t t;
        umadv_plan_params_t pp;
        umadv_sim_params_t sp;
        umadv_schedule_t uvm, staged;
        umadv_sim_result_t ru, rs;
        uint64_t total = 0;

        tp_random_trace(seed, &tp, &t);
        for (uint32_t a = 0; a < t.nallocs; a++) {
            total += t.allocs[a].size;
            t.allocs[a].stageable = 1;
        }
        set_stage_figures(&t.link);
        umadv__plan_params_default(&t, total / 2, &pp);
        pp.stage = 0;
        if (umadv__plan_build(&t, &pp, &uvm) != UMADV_OK) {
            umadv__trace_cleanup(&t);
            continue;
        }
        pp.stage = 1;
        umadv__plan_build(&t, &pp, &staged);
        umadv__sim_params_default(&t, UMADV_POLICY_PLAN, total / 2, &sp);
        sp.iteration = t.steps[uvm.first_step].iteration;
        sp.schedule = &uvm;
        sp.stage = 0;
        umadv__sim_run(&t, &sp, &ru);
        sp.schedule = &staged;
        sp.stage = 1;
        if (umadv__sim_run(&t, &sp, &rs) == UMADV_OK) {
            runs++;
            slower += rs.iteration_s > ru.iteration_s * (1 + 1e-9);
            faster += rs.iteration_s < ru.iteration_s * (1 - 1e-9);
            reported += uvm.staged_bytes == 0 && (staged.evict_bytes == 0) ==
                        (staged.staged_bytes == 0);
        }
        umadv__schedule_cleanup(&uvm);
        umadv__schedule_cleanup(&staged);
        umadv__trace_cleanup(&t);
    }
    ok(runs >= 25, "stage plans: %d traces planned and simulated both ways", runs);
    is(slower, 0, "stage plans: staging is never slower than migrating");
    ok(faster > runs / 4, "stage plans: %d of them faster", faster);
    is(reported, runs, "stage plans: the schedules say what they stage");
}

/* A (at address X) written at step 0 and freed after step 1, C written
 * at step 1, B born at X at step 2 and written there; every block fresh,
 * one section each. */
static void build_reborn(umadv_trace_t *t)
{
    const uint64_t x = UINT64_C(0x7f0000000000), y = x + 64 * SEC;
    uint32_t a, b, c;

    umadv__trace_init(t, SEC);
    umadv__trace_add_alloc(t, x, SEC, UMADV_ALLOC_ACTIVATION, NULL, &a);
    umadv__trace_add_alloc(t, y, SEC, UMADV_ALLOC_ACTIVATION, NULL, &c);
    umadv__trace_add_alloc(t, x, SEC, UMADV_ALLOC_ACTIVATION, NULL, &b);
    umadv__trace_set_lifetime(t, a, 0, 1);
    umadv__trace_set_lifetime(t, c, 1, 1);
    umadv__trace_set_lifetime(t, b, 2, 2);
    umadv__trace_add_step(t, "a", UMADV_STEP_LAYER, 0, 1000000, NULL);
    umadv__trace_add_access_sections(t, a, 0, 1, UMADV_ACCESS_WRITE, 0);
    umadv__trace_add_step(t, "c", UMADV_STEP_LAYER, 0, 1000000, NULL);
    umadv__trace_add_access_sections(t, c, 0, 1, UMADV_ACCESS_WRITE, 0);
    umadv__trace_add_step(t, "b", UMADV_STEP_LAYER, 0, 1000000, NULL);
    umadv__trace_add_access_sections(t, b, 0, 1, UMADV_ACCESS_WRITE, 0);
    umadv__trace_finalize(t, NULL, 0);
}

/* A fresh block born where a freed one left its pages on the GPU is
 * counted in without a population call, as the executor does
 * (schedule/pages.c); born where an eviction or a release took them, it
 * pays one. */
static void test_reborn_pages(void)
{
    umadv_trace_t t;
    umadv_plan_params_t pp;
    umadv_schedule_t s;
    umadv_sim_result_t kept, taken;

    build_reborn(&t);
    umadv__plan_params_default(&t, 2 * SEC, &pp);
    umadv__plan_build(&t, &pp, &s);
    simulate(&t, UMADV_POLICY_PLAN, 2 * SEC, &s, NULL, &kept);
    umadv__schedule_cleanup(&s);
    umadv__plan_params_default(&t, SEC, &pp);
    umadv__plan_build(&t, &pp, &s);
    simulate(&t, UMADV_POLICY_PLAN, SEC, &s, NULL, &taken);
    ok(kept.wait_s[UMADV_SIM_WAIT_POPULATE] == 0,
       "a block born over pages a dropped one left on the GPU: no population (%.3f ms)",
       kept.wait_s[UMADV_SIM_WAIT_POPULATE] * 1e3);
    ok(taken.wait_s[UMADV_SIM_WAIT_POPULATE] > 0,
       "one born where a release took them, for room: a population (%.3f ms)",
       taken.wait_s[UMADV_SIM_WAIT_POPULATE] * 1e3);
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* Three steps of 10 ms on one resident section, launched 1, 1 and 25 ms
 * after the launch before (the first after the iteration before ended):
 * the host runs ahead through the first two, then holds the third back. */
static void build_host_bound(umadv_trace_t *t, int host_known)
{
    static const uint64_t host_ms[] = {1, 1, 25};
    uint32_t a;

    umadv__trace_init(t, SEC);
    umadv__trace_add_alloc(t, 0, SEC, UMADV_ALLOC_WEIGHT, NULL, &a);
    for (uint32_t j = 0; j < 3; j++) {
        umadv__trace_add_step(t, "k", UMADV_STEP_KERNEL, 0, 10000000, NULL);
        umadv__trace_add_access_sections(t, a, 0, 1, UMADV_ACCESS_READ, 0);
        t->steps[j].host_ns = host_known ? host_ms[j] * 1000000 : 0;
    }
    umadv__trace_finalize(t, NULL, 0);
}

static void test_host_times(void)
{
    umadv_trace_t t, plain;
    umadv_plan_params_t pp;
    umadv_schedule_t s;
    umadv_sim_result_t r;

    build_host_bound(&t, 1);
    build_host_bound(&plain, 0);
    is(simulate(&t, UMADV_POLICY_ORACLE, SEC, NULL, NULL, &r), UMADV_OK, "oracle runs");
    is_near(r.iteration_s, 37e-3, 1e-9,
            "oracle: 1 ms to the first launch, the second launched ahead, the third 6 ms late "
            "(%.3f ms)", r.iteration_s * 1e3);
    ok(fabs(r.compute_s - 30e-3) < 1e-12 && r.resident_s == r.iteration_s &&
           r.lower_bound_s == r.iteration_s,
       "its compute is the durations', its resident time and bound the host's");
    umadv__plan_params_default(&t, SEC, &pp);
    umadv__plan_build(&t, &pp, &s);
    is(simulate(&t, UMADV_POLICY_PLAN, SEC, &s, NULL, &r), UMADV_OK, "plan runs");
    is_near(r.iteration_s, 37e-3, 1e-9, "plan with its data resident: the same (%.3f ms)",
            r.iteration_s * 1e3);
    is_near(r.wait_s[UMADV_SIM_WAIT_HOST], 7e-3, 1e-9,
            "the steps waited 7 ms for the host (%.3f)", r.wait_s[UMADV_SIM_WAIT_HOST] * 1e3);
    umadv__schedule_cleanup(&s);
    umadv__plan_params_default(&plain, SEC, &pp);
    umadv__plan_build(&plain, &pp, &s);
    is(simulate(&plain, UMADV_POLICY_PLAN, SEC, &s, NULL, &r), UMADV_OK, "without host times");
    ok(fabs(r.iteration_s - 30e-3) < 1e-9 && r.wait_s[UMADV_SIM_WAIT_HOST] == 0,
       "the GPU's time alone (%.3f ms)", r.iteration_s * 1e3);
    is_str(umadv__sim_wait_name(UMADV_SIM_WAIT_HOST), "host", "the wait is named host");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&plain);
    umadv__trace_cleanup(&t);
}

int main(void)
{
    plan(35 + 4 + 6 + 4 + 8 + 4 + 4 + 2 + 2 + 9);
    test_cost_model();
    test_no_pressure();
    test_oracle();
    test_random();
    test_starved_plan();
    test_errors();
    test_absurd_link();
    test_batch();
    test_duplex();
    test_stage_figures();
    test_stage_small_blocks();
    test_stage_plans();
    test_reborn_pages();
    test_host_times();
    return exit_status();
}
