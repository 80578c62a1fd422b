/*
 * Host placement (src/plan/placement.c) with the simulator: a hand-built
 * trace whose gain follows from the cost model by hand, a link on which
 * remote access never pays, and the synthetic DNN traces, whose plans
 * with placement must be no slower than without and well-formed.
 */
#include <math.h>
#include <string.h>

#include "common/util.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "tap.h"
#include "trace/synth.h"
#include "plan_util.h"

#define SEC TP_SECTION
#define MS  1e-3

/* @placement: 0 none, 1 with refine (the default), 2 without */
static int plan_sim(const umadv_trace_t *t, uint64_t budget, int placement, umadv_schedule_t *s,
                    umadv_sim_result_t *r)
{
    umadv_plan_params_t pp;
    umadv_sim_params_t sp;

    umadv__plan_params_default(t, budget, &pp);
    pp.host_placement = placement != 0;
    pp.refine = placement == 1;
    if (umadv__plan_build(t, &pp, s) != UMADV_OK)
        return -1;
    umadv__sim_params_default(t, UMADV_POLICY_PLAN, budget, &sp);
    sp.schedule = s;
    return umadv__sim_run(t, &sp, r) == UMADV_OK ? 0 : -1;
}

static const umadv_op_t *find_advice(const umadv_schedule_t *s, uint32_t alloc,
                                     umadv_advice_t advice)
{
    for (size_t i = 0; i < s->nops; i++) {
        if (s->ops[i].kind == UMADV_OP_ADVISE && s->ops[i].alloc == alloc &&
            s->ops[i].advice == advice)
            return &s->ops[i];
    }
    return NULL;
}

static const umadv_op_t *find_op(const umadv_schedule_t *s, umadv_op_kind_t kind, uint32_t alloc)
{
    for (size_t i = 0; i < s->nops; i++) {
        if (s->ops[i].kind == kind && s->ops[i].alloc == alloc)
            return &s->ops[i];
    }
    return NULL;
}

/*
 * X, one section, is written at step 0 (fresh) and read at step 3; Y,
 * one persistent section, is used at steps 1 and 2; room for one section,
 * steps of 0.1 ms. A link without latency where a section takes 1 ms to
 * evict, 0.25 ms to fetch, 0.5 ms to access remotely.
 *
 * Without placement everything is one chain: X is evicted after step 0
 * for Y (1 ms), Y fetched (0.25), steps 1-2 (0.2), Y evicted for X
 * (1 ms), X fetched (0.25), steps 3 and 0 (0.2): 2.90 ms.
 *
 * The greedy, from max(compute 0.4, fetch 0.5, evict 2.0) = 2.0 ms: X's
 * write at step 0 over the link saves 1 ms of eviction for 0.5 ms of
 * remote time (gain 2): max(0.9, 0.5, 1.0) = 1.0, taken. Y's two touches
 * would save 1.25 ms for 1 ms (max(1.9, 0.25, 0) = 1.9) and X's read at
 * step 3 0.25 ms for 0.5 ms: not taken.
 *
 * With X on the host at step 0, Y's fetch can start at step 0 and hides
 * behind step 0's 0.6 ms: the chain is Y evicted (1), X fetched (0.25),
 * step 3 (0.1), step 0 with its remote write (0.6), steps 1-2 (0.2):
 * 2.15 ms, 0.75 ms less (the eviction and Y's fetch, less the write).
 */
static void build_write_once(umadv_trace_t *t, double remote_bw)
{
    uint32_t x, y;

    umadv__trace_init(t, SEC);
    t->link.fetch_latency = t->link.evict_latency = 0;
    t->link.evict_bw  = SEC / (1.0 * MS);
    t->link.fetch_bw  = SEC / (0.25 * MS);
    t->link.remote_bw = remote_bw;
    umadv__trace_add_alloc(t, 0, SEC, UMADV_ALLOC_ACTIVATION, "x", &x);
    umadv__trace_set_lifetime(t, x, 0, 3);
    umadv__trace_add_alloc(t, 0, SEC, UMADV_ALLOC_WEIGHT, "y", &y);
    for (uint32_t j = 0; j < 4; j++) {
        umadv__trace_add_step(t, NULL, UMADV_STEP_LAYER, 0, 100000, NULL);
        if (j == 0 || j == 3)
            umadv__trace_add_access_sections(t, x, 0, 1, j == 0 ? UMADV_ACCESS_WRITE
                                                                : UMADV_ACCESS_READ, 0);
        else
            umadv__trace_add_access_sections(t, y, 0, 1, UMADV_ACCESS_RW, 0);
    }
    umadv__trace_finalize(t, NULL, 0);
}

static void test_write_once(void)
{
    umadv_trace_t t;
    umadv_schedule_t s0, s1;
    umadv_sim_result_t r0, r1;
    const umadv_op_t *ph, *ab, *none, *fx;
    tp_check_t c;

    build_write_once(&t, SEC / (0.5 * MS));
    ok(plan_sim(&t, SEC, 0, &s0, &r0) == 0 && plan_sim(&t, SEC, 1, &s1, &r1) == 0,
       "write once: planned and simulated, with and without placement");
    is_near(r0.iteration_s, 2.90 * MS, 1e-9, "write once: 2.90 ms without placement");
    is_near(r1.iteration_s, 2.15 * MS, 1e-9, "write once: 2.15 ms with it, 0.75 ms less");
    ph = find_advice(&s1, 0, UMADV_ADVICE_PREFERRED_HOST);
    ab = find_advice(&s1, 0, UMADV_ADVICE_ACCESSED_BY);
    none = find_advice(&s1, 0, UMADV_ADVICE_NONE);
    ok(ph && ab && none && ph->issue_step == 0 && ab->issue_step == 0 && none->issue_step == 0 &&
       ph < ab && s1.advise_ops == 3, "write once: X advised to the host for step 0, then back");
    fx = find_op(&s1, UMADV_OP_FETCH, 0);
    ok(fx && fx->issue_step == 3 && !(fx->flags & UMADV_OP_FLAG_FRESH) &&
       !find_op(&s1, UMADV_OP_EVICT, 0), "write once: X never evicted, fetched with a copy");
    ok(!find_advice(&s1, 1, UMADV_ADVICE_PREFERRED_HOST), "write once: Y stays on the GPU");
    ok(s1.remote_bytes == SEC && s1.host_bytes == SEC && r1.remote_bytes == SEC &&
       s1.evict_bytes == SEC && s0.evict_bytes == 2 * SEC,
       "write once: one section remote per iteration, one eviction less");
    is_near(s1.remote_s, 0.5 * MS, 1e-12, "write once: remote stall 0.5 ms");
    ok(r1.faults == 0 && r1.peak_resident <= SEC, "write once: no faults, budget kept");
    ok(tp_check_schedule(&t, &s1, SEC, 1, &c), "write once: the independent replay agrees");
    umadv__schedule_cleanup(&s0);
    umadv__schedule_cleanup(&s1);
    umadv__trace_cleanup(&t);
}

/* Remote access 1000x slower than eviction: nothing is worth placing,
 * and the plan is the plan without placement. */
static void test_slow_link(void)
{
    umadv_trace_t t;
    umadv_schedule_t s0, s1;
    umadv_sim_result_t r0, r1;

    build_write_once(&t, SEC / (1000.0 * MS));
    ok(plan_sim(&t, SEC, 0, &s0, &r0) == 0 && plan_sim(&t, SEC, 1, &s1, &r1) == 0,
       "slow link: planned");
    ok(s1.advise_ops == 0 && s1.remote_bytes == 0 && s1.host_bytes == 0 && s1.nsetup == s0.nsetup,
       "slow link: no advice, nothing remote");
    ok(s1.nops == s0.nops && memcmp(s1.ops, s0.ops, s0.nops * sizeof(*s0.ops)) == 0 &&
       r1.iteration_s == r0.iteration_s, "slow link: the same schedule and time as without");
    umadv__schedule_cleanup(&s0);
    umadv__schedule_cleanup(&s1);
    umadv__trace_cleanup(&t);
}

/*
 * The write-once trace with X and Y stageable (plan.c, CHANNELS). Priced
 * as UVM evictions (no staged figures), X's write is placed on the host as
 * above; with figures where a staged eviction takes 0.1 ms, moving X costs
 * less than its remote write (estimate max(0.4, 0.5, 0.2) = 0.5 ms
 * against 0.9 with the write remote), and nothing is placed. The staging
 * pool holds both sections (two alive, room for one, and one allocation
 * more: core.h, STAGING), so both evictions are staged; REFINE, which
 * also plans priced as UVM with the figures, finds that plan no faster
 * and keeps the one priced with them. (Until 245872c the pool held one
 * section, Y's eviction migrated, and REFINE kept the plan priced as UVM:
 * a pool that short no longer arises in a trace this small;
 * test_refine_uvm_pricing has one that does.)
 */
static void test_staged_channel(void)
{
    umadv_trace_t t;
    umadv_schedule_t s0, s1, r0s, r1s;
    umadv_sim_result_t r0, r1, q0, q1;
    umadv_sim_params_t sp;
    umadv_status_t status;

    build_write_once(&t, SEC / (0.5 * MS));
    t.allocs[0].stageable = t.allocs[1].stageable = 1;
    ok(plan_sim(&t, SEC, 2, &s0, &r0) == 0 && plan_sim(&t, SEC, 1, &r0s, &q0) == 0,
       "staged channel: planned without staged figures");
    ok(s0.remote_bytes == SEC && s0.staged_bytes == s0.evict_bytes && s0.evict_bytes > 0,
       "staged channel: priced as UVM, X's write is placed; the evictions are staged");
    t.link.stage_evict_bw = SEC / (0.1 * MS);
    t.link.stage_evict_latency = 0;
    t.link.stage_restore_bw = t.link.fetch_bw;
    t.link.stage_restore_latency = 0;
    ok(plan_sim(&t, SEC, 2, &s1, &r1) == 0 && plan_sim(&t, SEC, 1, &r1s, &q1) == 0,
       "staged channel: planned with them");
    ok(s1.remote_bytes == 0 && s1.advise_ops == 0 && s1.evict_bytes == 2 * SEC &&
       s1.staged_bytes == 2 * SEC, "staged channel: cheap to stage, X is moved, not placed");
    /* what was planned without the figures, replayed with them */
    umadv__sim_params_default(&t, UMADV_POLICY_PLAN, SEC, &sp);
    sp.schedule = &r0s;
    status = umadv__sim_run(&t, &sp, &q0);
    ok(status == UMADV_OK && q1.iteration_s <= q0.iteration_s * (1 + 1e-9),
       "staged channel: the refined plan is no slower than the one priced as UVM (%.3f ms, "
       "%.3f)", q1.iteration_s / MS, q0.iteration_s / MS);
    ok(r1s.stage_priced && r1s.remote_bytes == 0 && r1s.staged_bytes == 2 * SEC &&
           s1.stage_priced,
       "staged channel: REFINE keeps the plan priced with the figures (X moved, staged) and "
       "says so");
    umadv__schedule_cleanup(&s0);
    umadv__schedule_cleanup(&s1);
    umadv__schedule_cleanup(&r0s);
    umadv__schedule_cleanup(&r1s);
    umadv__trace_cleanup(&t);
}

/* @t's footprint: oracle's peak residency in simulation. */
static uint64_t footprint(const umadv_trace_t *t)
{
    umadv_sim_params_t p;
    umadv_sim_result_t o;

    umadv__sim_params_default(t, UMADV_POLICY_ORACLE, 0, &p);
    return umadv__sim_run(t, &p, &o) == UMADV_OK ? o.peak_resident : 0;
}

/*
 * Where the estimate priced with the staged figures misleads, REFINE
 * keeps the plan priced as UVM (plan.c, REFINE). The synthetic GPT-2 at
 * batch 32 with every allocation stageable and an H200's staged figures,
 * at 60% of its footprint: the estimate places gigabytes on the host,
 * and every other eviction of a section it advises migrates (core.h,
 * STAGING: an advised section is never staged), which the estimate
 * prices as staged; the schedule's staged bytes leave them out, as the
 * simulation does. The plans priced as UVM place nothing and move every
 * run staged, faster. (Found by planning the synthetic models at
 * 15-90%: gpt2 at batch 32 and 64 at 60% and 75% and resnet-deep at
 * batch 32 at 15% keep UVM pricing. Should the estimate learn that cost
 * and this case no longer keep it, the branch needs another case.)
 */
static void test_refine_uvm_pricing(void)
{
    umadv_synth_params_t sp;
    umadv_trace_t t;
    umadv_schedule_t s0, s1;
    umadv_sim_result_t r0, r1;
    uint64_t budget;

    umadv__synth_params_default("gpt2", &sp);
    sp.batch = 32;
    if (umadv__synth_build(&sp, &t) != UMADV_OK) {
        for (int i = 0; i < 3; i++)
            ok(0, "uvm pricing: synthetic trace");
        return;
    }
    for (uint32_t a = 0; a < t.nallocs; a++)
        t.allocs[a].stageable = 1;
    t.link.stage_evict_bw = 45.7e9;
    t.link.stage_evict_latency = 26e-6;
    t.link.stage_restore_bw = 48.1e9;
    t.link.stage_restore_latency = 17e-6;
    budget = footprint(&t) / 100 * 60;
    ok(plan_sim(&t, budget, 2, &s0, &r0) == 0 && plan_sim(&t, budget, 1, &s1, &r1) == 0,
       "uvm pricing: gpt2 b32 planned at 60%% of its footprint, with and without REFINE");
    ok(s0.stage_priced && r0.evicted_bytes > 0 && s0.staged_bytes == r0.staged_bytes &&
           s0.staged_bytes + r0.evicted_bytes == s0.evict_bytes,
       "uvm pricing: priced with the staged figures, evictions of advised sections migrate "
       "(%.2f GiB), and the schedule's staged bytes say so", r0.evicted_bytes / 1073741824.0);
    ok(!s1.stage_priced && r1.evicted_bytes == 0 && r1.iteration_s < r0.iteration_s,
       "uvm pricing: REFINE keeps a plan priced as UVM, all staged, faster (%.1f ms against "
       "%.1f)", r1.iteration_s / MS, r0.iteration_s / MS);
    umadv__schedule_cleanup(&s0);
    umadv__schedule_cleanup(&s1);
    umadv__trace_cleanup(&t);
}

/* Every host set in ops comes as PREFERRED_HOST then ACCESSED_BY on the
 * same run at the same step; the replay checks that each set is reverted. */
static int advice_pairs(const umadv_schedule_t *s)
{
    for (size_t i = 0; i < s->nops; i++) {
        const umadv_op_t *a = &s->ops[i];
        int found = 0;
        if (a->kind != UMADV_OP_ADVISE || a->advice != UMADV_ADVICE_PREFERRED_HOST)
            continue;
        for (size_t k = s->step_ops[a->issue_step]; k < s->step_ops[a->issue_step + 1]; k++) {
            const umadv_op_t *b = &s->ops[k];
            found |= b->kind == UMADV_OP_ADVISE && b->advice == UMADV_ADVICE_ACCESSED_BY &&
                     b->alloc == a->alloc && b->first == a->first && b->count == a->count && k > i;
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* Refine keeps the fastest variant: never slower than the placement's
 * own estimate alone. */
static void check_refine(const umadv_trace_t *t, uint64_t budget, const char *model,
                         double refined_s)
{
    umadv_schedule_t s;
    umadv_sim_result_t r;
    int built = plan_sim(t, budget, 2, &s, &r) == 0;

    ok(built && refined_s <= r.iteration_s, "%s: refine no slower than the estimate alone "
       "(%.1f vs %.1f ms)", model, refined_s * 1e3, built ? r.iteration_s * 1e3 : 0);
    if (built)
        umadv__schedule_cleanup(&s);
}

static void test_model(const char *model)
{
    umadv_synth_params_t sp;
    umadv_trace_t t;
    umadv_schedule_t s0, s1;
    umadv_sim_result_t r0, r1;
    uint64_t budget, fp;
    tp_check_t c;
    int ok_c;

    umadv__synth_params_default(model, &sp);
    if (umadv__synth_build(&sp, &t) != UMADV_OK) {
        for (int i = 0; i < 4; i++)
            ok(0, "%s: synthetic trace", model);
        return;
    }
    fp = footprint(&t);
    plan_sim(&t, 0, 0, &s0, &r0);
    budget = UMADV_MAX(fp / 2, s0.max_step_bytes);
    umadv__schedule_cleanup(&s0);
    ok(plan_sim(&t, budget, 0, &s0, &r0) == 0 && plan_sim(&t, budget, 1, &s1, &r1) == 0,
       "%s: planned under %.1f%% of the footprint", model, 100.0 * budget / fp);
    diag("%s: plan %.1f ms without placement, %.1f with (%.2f GiB host-placed, remote %.1f ms, "
         "%.1f ms to plan)", model, r0.iteration_s * 1e3, r1.iteration_s * 1e3,
         s1.host_bytes / 1073741824.0, s1.remote_s * 1e3, s1.plan_seconds * 1e3);
    ok(r1.iteration_s <= r0.iteration_s, "%s: placement no slower", model);
    check_refine(&t, budget, model, r1.iteration_s);
    ok(r1.faults == 0 && r1.peak_resident <= budget && r1.remote_bytes == s1.remote_bytes,
       "%s: no faults, budget kept, remote bytes as planned", model);
    ok_c = tp_check_schedule(&t, &s1, budget, 1, &c);
    ok(ok_c && c.remote == s1.remote_bytes && advice_pairs(&s1),
       "%s: replay agrees; advice well-formed and paired", model);
    if (!ok_c)
        diag("%s", c.why);
    umadv__schedule_cleanup(&s0);
    umadv__schedule_cleanup(&s1);
    umadv__trace_cleanup(&t);
}

int main(void)
{
    static const char *const models[] = {"resnet50", "vgg16", "gpt2"};

    plan(10 + 3 + 6 + 3 + 5 * (int)UMADV_ARRAY_SIZE(models));
    test_write_once();
    test_slow_link();
    test_staged_channel();
    test_refine_uvm_pricing();
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(models); i++)
        test_model(models[i]);
    return exit_status();
}
