/*
 * The planner: hand-built traces whose schedule follows from the rules
 * (coalescing, hoisting, transients, read-mostly, lookahead, errors), and
 * random traces checked by an independent replay of the schedule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "plan/plan.h"
#include "plan/victimq.h"
#include "sim/sim.h"
#include "tap.h"
#include "plan_util.h"

#define SEC TP_SECTION

/* A small trace, one iteration: allocations of @nsec sections each; each
 * step a string of "a<alloc><mode>" tokens, e.g. "0r 1w". */
static void build(umadv_trace_t *t, const uint32_t *nsec, uint32_t nallocs,
                  const char *const *steps, uint32_t nsteps)
{
    uint32_t id;

    umadv__trace_init(t, SEC);
    for (uint32_t a = 0; a < nallocs; a++)
        umadv__trace_add_alloc(t, 0, nsec[a] * SEC, UMADV_ALLOC_WEIGHT, NULL, &id);
    for (uint32_t j = 0; j < nsteps; j++) {
        char name[16];
        const char *p = steps[j];
        snprintf(name, sizeof(name), "s%u", j);
        umadv__trace_add_step(t, name, UMADV_STEP_LAYER, 0, 100000, NULL);
        while (*p) {
            char *end;
            unsigned long a = strtoul(p, &end, 10);
            uint32_t mode = *end == 'w' ? UMADV_ACCESS_RW : UMADV_ACCESS_READ;
            umadv__trace_add_access_sections(t, (uint32_t)a, 0, nsec[a], mode, 0);
            p = end + 1;
            while (*p == ' ')
                p++;
        }
    }
    umadv__trace_finalize(t, NULL, 0);
}

/* The rules of residency and timing, without host placement (which has
 * its own tests below: it changes what these traces should get). */
static int plan_with(const umadv_trace_t *t, uint64_t budget, uint32_t lookahead,
                     int read_mostly, umadv_schedule_t *s)
{
    umadv_plan_params_t p;

    umadv__plan_params_default(t, budget, &p);
    p.lookahead = lookahead;
    p.read_mostly = read_mostly;
    p.host_placement = 0;
    return umadv__plan_build(t, &p, s);
}

static const umadv_op_t *find_op(const umadv_schedule_t *s, umadv_op_kind_t kind, uint32_t alloc)
{
    for (size_t i = 0; i < s->nops; i++) {
        if (s->ops[i].kind == kind && s->ops[i].alloc == alloc)
            return &s->ops[i];
    }
    return NULL;
}

static size_t count_ops(const umadv_schedule_t *s, umadv_op_kind_t kind, uint32_t alloc)
{
    size_t n = 0;

    for (size_t i = 0; i < s->nops; i++)
        n += s->ops[i].kind == kind && s->ops[i].alloc == alloc;
    return n;
}

/* Two 10-section allocations, one per step, room for one: each is fetched
 * whole, in one call, and evicted whole after its use. */
static void test_coalescing(void)
{
    static const uint32_t nsec[] = {10, 10};
    static const char *const steps[] = {"0w", "1w"};
    umadv_trace_t t;
    umadv_schedule_t s;
    const umadv_op_t *op;

    build(&t, nsec, 2, steps, 2);
    is(plan_with(&t, 10 * SEC, 0, 1, &s), UMADV_OK, "coalescing: plans");
    op = find_op(&s, UMADV_OP_FETCH, 0);
    ok(op != NULL && op->count == 10 && op->first == 0 && op->bytes == 10 * SEC,
       "coalescing: a 10-section allocation is fetched as one op");
    is(count_ops(&s, UMADV_OP_FETCH, 0), 1, "coalescing: and only one");
    is(s.fetch_ops, 2, "coalescing: two fetch calls per iteration");
    is(s.evict_ops, 2, "coalescing: two eviction calls per iteration");
    is_u64(s.fetch_bytes, 20 * SEC, "coalescing: 20 sections fetched per iteration");
    op = find_op(&s, UMADV_OP_EVICT, 1);
    ok(op != NULL && op->count == 10 && op->issue_step == 1 && op->need_step == 1,
       "coalescing: evicted whole, right after its last use");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/*
 * X at every step, Y at step 0, Z at step 3, room for two sections.
 * Belady evicts Y for Z (Y's next use is a replay away), right after
 * step 0; Z can be fetched from step 1, where one section is free. Z goes
 * out after step 3 for Y, which can come back from step 4: a fetch for
 * the next iteration, so Y is resident when the iteration begins.
 */
static void test_hoisting(void)
{
    static const uint32_t nsec[] = {1, 1, 1};
    static const char *const steps[] = {"0w 1w", "0w", "0w", "0w 2w", "0w", "0w"};
    umadv_trace_t t;
    umadv_schedule_t s;
    const umadv_op_t *fz, *fy;

    build(&t, nsec, 3, steps, 6);
    is(plan_with(&t, 2 * SEC, 0, 1, &s), UMADV_OK, "hoisting: plans");
    fz = find_op(&s, UMADV_OP_FETCH, 2);
    fy = find_op(&s, UMADV_OP_FETCH, 1);
    ok(fz && fz->issue_step == 1 && fz->need_step == 3, "hoisting: Z issued at step 1 for step 3");
    ok(fy && fy->issue_step == 4 && fy->need_step == 0 &&
       (fy->flags & UMADV_OP_FLAG_NEXT_ITERATION), "hoisting: Y issued at step 4 for the next step 0");
    ok(find_op(&s, UMADV_OP_EVICT, 1) && find_op(&s, UMADV_OP_EVICT, 1)->issue_step == 0,
       "hoisting: Y evicted after its last use");
    is(count_ops(&s, UMADV_OP_EVICT, 0) + count_ops(&s, UMADV_OP_FETCH, 0), 0,
       "hoisting: X, used by every step, never moves");
    ok(s.resident_at_start[0] && s.resident_at_start[1] && !s.resident_at_start[2],
       "hoisting: X and Y resident when the iteration begins, Z not");
    is_u64(s.peak_planned, 2 * SEC, "hoisting: peak is the budget");
    umadv__schedule_cleanup(&s);
    is(plan_with(&t, 2 * SEC, 1, 1, &s), UMADV_OK, "lookahead: plans");
    fz = find_op(&s, UMADV_OP_FETCH, 2);
    fy = find_op(&s, UMADV_OP_FETCH, 1);
    ok(fz && fz->issue_step == 2 && fy && fy->issue_step == 5,
       "lookahead 1: fetches issued one step before their need");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* A transient allocated before step 1, written there, read at step 2 and
 * freed after it: pre-populated without a copy, dropped at its free. */
static void test_transient(void)
{
    umadv_trace_t t;
    umadv_schedule_t s;
    uint32_t x, tr;
    const umadv_op_t *op;

    umadv__trace_init(&t, SEC);
    umadv__trace_add_alloc(&t, 0, 2 * SEC, UMADV_ALLOC_WEIGHT, NULL, &x);
    umadv__trace_add_alloc(&t, 0, 3 * SEC, UMADV_ALLOC_ACTIVATION, NULL, &tr);
    umadv__trace_set_lifetime(&t, tr, 1, 2);
    for (uint32_t j = 0; j < 4; j++) {
        umadv__trace_add_step(&t, "s", UMADV_STEP_LAYER, 0, 100000, NULL);
        umadv__trace_add_access_sections(&t, x, 0, 2, UMADV_ACCESS_READ, 0);
        if (j == 1 || j == 2)
            umadv__trace_add_access_sections(&t, tr, 0, 3, j == 1 ? UMADV_ACCESS_WRITE
                                                                  : UMADV_ACCESS_READ, 0);
    }
    umadv__trace_finalize(&t, NULL, 0);
    is(plan_with(&t, 0, 0, 1, &s), UMADV_OK, "transient: plans without a budget");
    op = find_op(&s, UMADV_OP_FETCH, tr);
    ok(op && (op->flags & UMADV_OP_FLAG_FRESH) && op->issue_step == 1 && op->count == 3,
       "transient: populated at its birth step, flagged fresh");
    op = find_op(&s, UMADV_OP_DROP, tr);
    ok(op && op->issue_step == 2 && op->count == 3, "transient: dropped at its free");
    is_u64(s.fetch_bytes, 0, "transient: nothing copied in steady state");
    is_u64(s.fresh_bytes, 3 * SEC, "transient: 3 sections populated");
    is_u64(s.evict_bytes, 0, "transient: nothing evicted");
    ok(s.resident_at_start[0] && !s.resident_at_start[t.allocs[tr].first_section],
       "transient: persistent data stays, the transient is not there at the start");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* G is born at step 3, written there, read at step 5 and never freed in
 * the window, as a PyTorch gradient (freed by the next zero_grad), beside
 * X at every step and Y at steps 0, 1 and 4, room for three sections. G
 * leaves after step 5 (its next use is a replay away) and comes back for
 * step 3, with a slot free from step 2 on: the fetch waits for G's birth
 * (window.h, REBORN), copies (G's data may be state made once) and G is
 * never released as dead. */
static void test_reborn(void)
{
    umadv_trace_t t;
    umadv_schedule_t s;
    uint32_t x, y, g;
    const umadv_op_t *op = NULL;
    int dead = 0;

    umadv__trace_init(&t, SEC);
    umadv__trace_add_alloc(&t, 0, 2 * SEC, UMADV_ALLOC_WEIGHT, NULL, &x);
    umadv__trace_add_alloc(&t, 0, SEC, UMADV_ALLOC_WEIGHT, NULL, &y);
    umadv__trace_add_alloc(&t, 0, SEC, UMADV_ALLOC_ACTIVATION, NULL, &g);
    umadv__trace_set_lifetime(&t, g, 3, UMADV_STEP_NONE);
    for (uint32_t j = 0; j < 6; j++) {
        umadv__trace_add_step(&t, "s", UMADV_STEP_LAYER, 0, 100000, NULL);
        umadv__trace_add_access_sections(&t, x, 0, 2, UMADV_ACCESS_RW, 0);
        if (j == 0 || j == 1 || j == 4)
            umadv__trace_add_access_sections(&t, y, 0, 1, UMADV_ACCESS_RW, 0);
        if (j == 3 || j == 5)
            umadv__trace_add_access_sections(&t, g, 0, 1, j == 3 ? UMADV_ACCESS_WRITE
                                                                 : UMADV_ACCESS_READ, 0);
    }
    umadv__trace_finalize(&t, NULL, 0);
    is(plan_with(&t, 3 * SEC, 0, 0, &s), UMADV_OK, "reborn: plans");
    for (size_t i = 0; i < s.nops; i++) {
        if (s.ops[i].alloc == g && s.ops[i].kind == UMADV_OP_FETCH && s.ops[i].need_step == 3)
            op = &s.ops[i];
        dead |= s.ops[i].alloc == g && (s.ops[i].flags & UMADV_OP_FLAG_DEAD);
    }
    ok(op != NULL && op->issue_step == 3 && !(op->flags & UMADV_OP_FLAG_FRESH) && !dead,
       "reborn: fetched for step 3 no earlier than its birth there (issued at %d), with a "
       "copy, never released as dead", op != NULL ? (int)op->issue_step : -1);
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* The reborn trace with G freed after the last step, before the next
 * replay's first (api/record.c, THE TAIL): G dies with the window. */
static void build_dying(umadv_trace_t *t, uint32_t g_free, uint32_t *g_p)
{
    uint32_t x, y;

    umadv__trace_init(t, SEC);
    umadv__trace_add_alloc(t, 0, 2 * SEC, UMADV_ALLOC_WEIGHT, NULL, &x);
    umadv__trace_add_alloc(t, 0, SEC, UMADV_ALLOC_WEIGHT, NULL, &y);
    umadv__trace_add_alloc(t, 0, SEC, UMADV_ALLOC_ACTIVATION, NULL, g_p);
    umadv__trace_set_lifetime(t, *g_p, 3, g_free);
    for (uint32_t j = 0; j < 6; j++) {
        umadv__trace_add_step(t, "s", UMADV_STEP_LAYER, 0, 100000, NULL);
        umadv__trace_add_access_sections(t, x, 0, 2, UMADV_ACCESS_RW, 0);
        if (j == 0 || j == 1 || j == 4)
            umadv__trace_add_access_sections(t, y, 0, 1, UMADV_ACCESS_RW, 0);
        if (j == 3 || j == 5)
            umadv__trace_add_access_sections(t, *g_p, 0, 1, j == 3 ? UMADV_ACCESS_WRITE
                                                                   : UMADV_ACCESS_READ, 0);
    }
    umadv__trace_finalize(t, NULL, 0);
}

/* G dies with the window: its data after step 5 is nobody's, so the plan
 * moves none of it (G leaves by its free, comes back fresh at its birth),
 * where the same trace with G kept copies it out for the next replay. */
static void test_dies_with_window(void)
{
    umadv_trace_t t, kept;
    umadv_schedule_t s, sk;
    uint32_t g;

    build_dying(&t, 5, &g);
    build_dying(&kept, UMADV_STEP_NONE, &g);
    is(plan_with(&t, 3 * SEC, 0, 0, &s), UMADV_OK, "dies with the window: plans");
    is(plan_with(&kept, 3 * SEC, 0, 0, &sk), UMADV_OK, "and kept: plans");
    ok(count_ops(&s, UMADV_OP_EVICT, g) == 1 && find_op(&s, UMADV_OP_DROP, g) != NULL &&
       count_ops(&sk, UMADV_OP_EVICT, g) == 2,
       "dies with the window: evicted for Y at step 4 only, then dropped at its free (kept: "
       "evicted %zu times, also for the next replay)", count_ops(&sk, UMADV_OP_EVICT, g));
    ok(find_op(&s, UMADV_OP_FETCH, g) != NULL &&
       (find_op(&s, UMADV_OP_FETCH, g)->flags & UMADV_OP_FLAG_FRESH) &&
       s.evict_bytes + SEC == sk.evict_bytes,
       "dies with the window: populated fresh at its birth, a section less copied out");
    umadv__schedule_cleanup(&s);
    umadv__schedule_cleanup(&sk);
    umadv__trace_cleanup(&t);
    umadv__trace_cleanup(&kept);
}

/* Room for two sections: W (read at steps 4 and 23), M (written at 22)
 * and X (made at step 5, written there, freed after it). X's room goes
 * to W by Belady (next use 23 against M's 22), but W was read at step 4:
 * its eviction would start as step 5 waits. M, idle since step 22 of the
 * previous replay and next used only a step sooner, left in time: it
 * goes instead (residency.c, WHEN THE EVICTION CAN START). */
static void test_victim_in_time(void)
{
    umadv_trace_t t;
    umadv_schedule_t s;
    uint32_t w, m, x;
    const umadv_op_t *op;

    umadv__trace_init(&t, SEC);
    umadv__trace_add_alloc(&t, 0, SEC, UMADV_ALLOC_WEIGHT, NULL, &w);
    umadv__trace_add_alloc(&t, 0, SEC, UMADV_ALLOC_OPTIMIZER, NULL, &m);
    umadv__trace_add_alloc(&t, 0, SEC, UMADV_ALLOC_ACTIVATION, NULL, &x);
    umadv__trace_set_lifetime(&t, x, 5, 5);
    for (uint32_t j = 0; j < 24; j++) {
        umadv__trace_add_step(&t, "s", UMADV_STEP_LAYER, 0, 100000, NULL);
        if (j == 4 || j == 23)
            umadv__trace_add_access_sections(&t, w, 0, 1, UMADV_ACCESS_READ, 0);
        if (j == 5)
            umadv__trace_add_access_sections(&t, x, 0, 1, UMADV_ACCESS_WRITE, 0);
        if (j == 22)
            umadv__trace_add_access_sections(&t, m, 0, 1, UMADV_ACCESS_RW, 0);
    }
    umadv__trace_finalize(&t, NULL, 0);
    is(plan_with(&t, 2 * SEC, 0, 0, &s), UMADV_OK, "in time: plans");
    op = find_op(&s, UMADV_OP_EVICT, m);
    ok(op != NULL && op->issue_step == 22 && find_op(&s, UMADV_OP_EVICT, w) == NULL,
       "in time: M leaves after its use at step 22 for step 5's room, W stays (M evicted at "
       "%d, W %s)", op != NULL ? (int)op->issue_step : -1,
       find_op(&s, UMADV_OP_EVICT, w) != NULL ? "evicted" : "stays");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* Two iterations of four steps; B is born at step 2 of the first, written
 * there, and read at steps 4 and 5 of the second, then freed: planned on
 * the first, B is BORN, and its eviction after step 2 (room for three
 * sections beside X and Y) hands its data to the next iteration. Its next
 * op in the window is its fresh birth, yet it must copy: a discard would
 * lose what steps 4 and 5 read. */
static void test_born_handover(void)
{
    umadv_trace_t t;
    umadv_schedule_t s;
    umadv_plan_params_t p;
    uint32_t x, y, b;
    const umadv_op_t *op;

    umadv__trace_init(&t, SEC);
    umadv__trace_add_alloc(&t, 0, 2 * SEC, UMADV_ALLOC_WEIGHT, NULL, &x);
    umadv__trace_add_alloc(&t, 0, SEC, UMADV_ALLOC_WEIGHT, NULL, &y);
    umadv__trace_add_alloc(&t, 0, SEC, UMADV_ALLOC_ACTIVATION, NULL, &b);
    umadv__trace_set_lifetime(&t, b, 2, 5);
    t.allocs[x].stageable = t.allocs[y].stageable = t.allocs[b].stageable = 1;
    for (uint32_t j = 0; j < 8; j++) {
        umadv__trace_add_step(&t, "s", UMADV_STEP_LAYER, j / 4, 100000, NULL);
        umadv__trace_add_access_sections(&t, x, 0, 2, UMADV_ACCESS_RW, 0);
        if (j % 4 == 0 || j % 4 == 3)
            umadv__trace_add_access_sections(&t, y, 0, 1, UMADV_ACCESS_RW, 0);
        if (j == 2 || j == 4 || j == 5)
            umadv__trace_add_access_sections(&t, b, 0, 1, j == 2 ? UMADV_ACCESS_WRITE
                                                                 : UMADV_ACCESS_READ, 0);
    }
    umadv__trace_finalize(&t, NULL, 0);
    umadv__plan_params_default(&t, 3 * SEC, &p);
    p.iteration = 0;
    p.host_placement = 0;
    is(umadv__plan_build(&t, &p, &s), UMADV_OK, "born: plans the first iteration");
    op = find_op(&s, UMADV_OP_EVICT, b);
    ok(op != NULL && !(op->flags & UMADV_OP_FLAG_DEAD) && s.dead_bytes == 0,
       "born: its eviction before its fresh birth in the next replay copies, not released "
       "as dead (flags %#x)", op != NULL ? op->flags : 0);
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* R is never written, W is: alternating with room for one, R's copy is
 * dropped (read-mostly advice), W is evicted. */
static void test_read_mostly(void)
{
    static const uint32_t nsec[] = {4, 4};
    static const char *const steps[] = {"0r", "1w"};
    umadv_trace_t t;
    umadv_schedule_t s;

    build(&t, nsec, 2, steps, 2);
    is(plan_with(&t, 4 * SEC, 0, 1, &s), UMADV_OK, "read-mostly: plans");
    ok(find_op(&s, UMADV_OP_DROP, 0) && !find_op(&s, UMADV_OP_EVICT, 0),
       "read-mostly: the never-written allocation is dropped, not evicted");
    ok(find_op(&s, UMADV_OP_EVICT, 1) && !find_op(&s, UMADV_OP_DROP, 1),
       "read-mostly: the written one is evicted");
    ok(s.nsetup == 1 && s.setup[0].kind == UMADV_OP_ADVISE &&
       s.setup[0].advice == UMADV_ADVICE_READ_MOSTLY && s.setup[0].alloc == 0 &&
       s.setup[0].count == 4, "read-mostly: advised once in setup");
    is_u64(s.evict_bytes, 4 * SEC, "read-mostly: only W's bytes copied back");
    umadv__schedule_cleanup(&s);
    is(plan_with(&t, 4 * SEC, 0, 0, &s), UMADV_OK, "read-mostly off: plans");
    ok(find_op(&s, UMADV_OP_EVICT, 0) && s.nsetup == 0 && s.drop_bytes == 0,
       "read-mostly off: everything evicted, no advice");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* A link where a fetch is instant and one section takes 1 ms to evict,
 * with no call latency: times follow from counting evictions. */
static void slow_evict_link(umadv_link_model_t *l)
{
    memset(l, 0, sizeof(*l));
    l->fetch_bw = 1e15;
    l->evict_bw = SEC / 1e-3;
    l->fault_bw = 1e15;
    l->remote_bw = 1e15;
}

/*
 * A, B, C one section each, steps of 1 ms: A, B, C, then A and B
 * together; room for two. At step 2, C needs the room of A or B, both
 * next used at step 3 (a tie for Belady). A, last used at step 0, can be
 * evicted during step 1; B only after it. By hand, with A: A's eviction
 * runs in [1, 2] ms, C arrives at 2 and step 2 runs in [2, 3]; C is
 * evicted in [3, 4] for A's return, so step 3 runs in [4, 5]: 5 ms, one
 * of them waiting for memory. With B, step 2 would wait for B's eviction
 * too: 6 ms.
 */
static void test_eviction_order(void)
{
    static const uint32_t nsec[] = {1, 1, 1};
    static const char *const steps[] = {"0w", "1w", "2w", "0w 1w"};
    umadv_plan_params_t p;
    umadv_sim_params_t sp;
    umadv_sim_result_t r;
    umadv_schedule_t s;
    umadv_trace_t t;
    const umadv_op_t *ev;

    build(&t, nsec, 3, steps, 4);
    for (uint32_t j = 0; j < 4; j++)
        t.steps[j].duration_ns = 1000000;
    umadv__plan_params_default(&t, 2 * SEC, &p);
    slow_evict_link(&p.link);
    p.host_placement = 0;
    is(umadv__plan_build(&t, &p, &s), UMADV_OK, "eviction order: plans");
    ev = find_op(&s, UMADV_OP_EVICT, 0);
    ok(ev != NULL && ev->issue_step == 0 && find_op(&s, UMADV_OP_EVICT, 1) == NULL,
       "eviction order: of two victims tied on next use, the one used longer ago goes");
    umadv__sim_params_default(&t, UMADV_POLICY_PLAN, 2 * SEC, &sp);
    sp.link = p.link;
    sp.schedule = &s;
    is(umadv__sim_run(&t, &sp, &r), UMADV_OK, "eviction order: simulates");
    is_near(r.iteration_s, 5e-3, 1e-6, "eviction order: 5 ms per iteration, as counted by hand");
    is_near(r.wait_s[UMADV_SIM_WAIT_MEMORY], 1e-3, 1e-6,
            "eviction order: the 1 ms stall is a fetch waiting for memory");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* Evictions are split like fetches only where the eviction lane has time
 * to spare; a FRESH fetch (no copy) is never split. */
static void test_splitting(void)
{
    static const uint32_t nsec[] = {10, 10};
    static const char *const steps[] = {"0w", "1w"};
    umadv_plan_params_t p;
    umadv_schedule_t s;
    umadv_trace_t t;
    uint32_t tr;

    build(&t, nsec, 2, steps, 2);
    umadv__plan_params_default(&t, 10 * SEC, &p);
    p.host_placement = 0;
    p.max_op_bytes = 4 * SEC;
    is(umadv__plan_build(&t, &p, &s), UMADV_OK, "splitting: plans");
    is(count_ops(&s, UMADV_OP_FETCH, 0), 3, "splitting: fetches split at max_op_bytes");
    is(count_ops(&s, UMADV_OP_EVICT, 0), 1,
       "splitting: 100 us steps, 0.5 ms evictions: the lane is full, evictions stay whole");
    umadv__schedule_cleanup(&s);
    t.steps[0].duration_ns = t.steps[1].duration_ns = 100000000;
    is(umadv__plan_build(&t, &p, &s), UMADV_OK, "splitting: plans with 100 ms steps");
    is(count_ops(&s, UMADV_OP_EVICT, 0), 3, "splitting: with time to spare, evictions split too");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);

    umadv__trace_init(&t, SEC);
    umadv__trace_add_alloc(&t, 0, 10 * SEC, UMADV_ALLOC_ACTIVATION, NULL, &tr);
    umadv__trace_set_lifetime(&t, tr, 0, 1);
    umadv__trace_add_step(&t, "w", UMADV_STEP_LAYER, 0, 100000, NULL);
    umadv__trace_add_access_sections(&t, tr, 0, 10, UMADV_ACCESS_WRITE, 0);
    umadv__trace_add_step(&t, "r", UMADV_STEP_LAYER, 0, 100000, NULL);
    umadv__trace_add_access_sections(&t, tr, 0, 10, UMADV_ACCESS_READ, 0);
    umadv__trace_finalize(&t, NULL, 0);
    umadv__plan_params_default(&t, 0, &p);
    p.max_op_bytes = 4 * SEC;
    is(umadv__plan_build(&t, &p, &s), UMADV_OK, "splitting: plans a transient");
    ok(count_ops(&s, UMADV_OP_FETCH, tr) == 1 && (s.ops[0].flags & UMADV_OP_FLAG_FRESH) &&
       s.ops[0].count == 10, "splitting: its 10 fresh sections are populated in one call");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

static void test_errors(void)
{
    static const uint32_t nsec[] = {16, 16};
    static const char *const steps[] = {"0r", "0r 1w"};
    char path[] = "/tmp/umadv-test-plan-XXXXXX", text[512] = "";
    umadv_plan_params_t p;
    umadv_trace_t t;
    umadv_schedule_t s;
    FILE *f;
    int fd = mkstemp(path);

    build(&t, nsec, 2, steps, 2);
    umadv__log_set_file(path);
    is(plan_with(&t, 20 * SEC, 0, 1, &s), UMADV_ERR_BUDGET_TOO_SMALL,
       "budget too small: a step needs 2 MiB, the budget is 1.25 MiB");
    umadv__log_set_file(NULL);
    f = fdopen(fd, "r");
    if (f != NULL) {
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    unlink(path);
    ok(strstr(text, "step 1") && strstr(text, "s1") && strstr(text, "2.00 MiB") &&
       strstr(text, "1.25 MiB"), "budget too small: the message names step, name, sizes");
    if (!strstr(text, "step 1"))
        diag("message: %s", text);
    umadv__plan_params_default(&t, 0, &p);
    p.iteration = 3;
    umadv__log_set_file("/dev/null");
    is(umadv__plan_build(&t, &p, &s), UMADV_ERR_NOT_FOUND, "an iteration the trace lacks");
    umadv__log_set_file(NULL);
    umadv__trace_cleanup(&t);
}

static int plans_equal(const umadv_schedule_t *a, const umadv_schedule_t *b, size_t nsections)
{
    return a->nops == b->nops && memcmp(a->ops, b->ops, a->nops * sizeof(*a->ops)) == 0 &&
           memcmp(a->resident_at_start, b->resident_at_start, nsections) == 0;
}

/* Many random traces and budgets: every schedule passes the independent
 * replay; the planner's peak is the replay's; plans are deterministic. */
static void test_random(void)
{
    static const double fractions[] = {0.0, 1.0, 1.3, 2.0, 4.0};
    int checked = 0, failed = 0, peak_bad = 0, unconverged = 0, differ = 0, placed = 0;
    int remote_bad = 0;
    uint64_t max_passes = 0;

    for (uint64_t seed = 1; seed <= 60; seed++) {
        tp_params_t p = {.nallocs = 3 + seed % 6, .ntransient = seed % 5, .nsteps = 4 + seed % 9,
                         .niters = 1 + seed % 3, .max_sections = 1 + seed % 5,
                         .uniform = seed % 2, .carried = seed % 3 == 0,
                         .late_free = seed % 4 == 1};
        umadv_trace_t t;
        umadv_plan_params_t pp;

        if (tp_random_trace(seed, &p, &t) != UMADV_OK)
            continue;
        for (size_t b = 0; b < sizeof(fractions) / sizeof(fractions[0]); b++) {
            umadv_schedule_t s, s2;
            tp_check_t c;

            umadv__plan_params_default(&t, 0, &pp);
            /* refine keeps placement only where the simulator agrees:
             * check the placed schedules themselves too */
            pp.refine = seed % 3 == 0;
            if (p.carried && t.niterations >= 3)
                pp.iteration = 1; /* the middle one: data comes in and goes out */
            if (umadv__plan_build(&t, &pp, &s) != UMADV_OK)
                continue;
            pp.budget = fractions[b] == 0.0 ? 0
                                            : (uint64_t)(s.max_step_bytes * fractions[b]) + 1;
            umadv__schedule_cleanup(&s);
            if (umadv__plan_build(&t, &pp, &s) != UMADV_OK) {
                failed++;
                continue;
            }
            checked++;
            if (!tp_check_schedule(&t, &s, pp.budget, 1, &c)) {
                if (failed++ < 5)
                    diag("seed %llu budget x%.1f: %s", (unsigned long long)seed, fractions[b],
                         c.why);
            } else {
                peak_bad += c.peak != s.peak_planned;
                remote_bad += c.remote != s.remote_bytes;
            }
            placed += s.remote_bytes > 0;
            unconverged += !s.converged;
            max_passes = s.passes > max_passes ? s.passes : max_passes;
            if (umadv__plan_build(&t, &pp, &s2) == UMADV_OK) {
                differ += !plans_equal(&s, &s2, t.nsections);
                umadv__schedule_cleanup(&s2);
            }
            umadv__schedule_cleanup(&s);
        }
        umadv__trace_cleanup(&t);
    }
    ok(checked >= 250, "random: %d schedules built", checked);
    is(failed, 0, "random: every schedule passes the independent replay");
    is(peak_bad, 0, "random: peak_planned is the replay's peak");
    is(differ, 0, "random: the same input gives the same plan");
    ok(placed > 0, "random: %d schedules place data on the host", placed);
    is(remote_bad, 0, "random: remote_bytes is what the replay accesses over the link");
    diag("random: %d not converged, at most %llu passes", unconverged,
         (unsigned long long)max_passes);
}

/* With one pass allowed, the state rarely repeats: the closing ops must
 * still make a periodic, budget-safe schedule. */
static void test_closing(void)
{
    int failed = 0, closed = 0;

    for (uint64_t seed = 100; seed < 140; seed++) {
        tp_params_t p = {.nallocs = 6, .ntransient = 2, .nsteps = 8, .niters = 1,
                         .max_sections = 3, .uniform = 1};
        umadv_trace_t t;
        umadv_plan_params_t pp;
        umadv_schedule_t s;
        tp_check_t c;

        if (tp_random_trace(seed, &p, &t) != UMADV_OK)
            continue;
        umadv__plan_params_default(&t, 0, &pp);
        pp.max_passes = 1;
        if (umadv__plan_build(&t, &pp, &s) == UMADV_OK) {
            pp.budget = s.max_step_bytes + SEC;
            umadv__schedule_cleanup(&s);
        }
        if (umadv__plan_build(&t, &pp, &s) != UMADV_OK) {
            failed++;
        } else {
            closed += !s.converged;
            if (!tp_check_schedule(&t, &s, pp.budget, 1, &c) && failed++ < 3)
                diag("seed %llu: %s", (unsigned long long)seed, c.why);
            umadv__schedule_cleanup(&s);
        }
        umadv__trace_cleanup(&t);
    }
    ok(closed > 0, "closing: %d plans closed after one pass", closed);
    is(failed, 0, "closing: they pass the independent replay");
}

/* No budget: in steady state nothing is copied either way. */
static void test_no_budget(void)
{
    tp_params_t p = {.nallocs = 8, .ntransient = 4, .nsteps = 12, .niters = 2,
                     .max_sections = 4, .uniform = 0};
    umadv_trace_t t;
    umadv_plan_params_t pp;
    umadv_schedule_t s;

    tp_random_trace(7, &p, &t);
    umadv__plan_params_default(&t, 0, &pp);
    is(umadv__plan_build(&t, &pp, &s), UMADV_OK, "no budget: plans");
    ok(s.fetch_bytes == 0 && s.evict_bytes == 0 && s.evict_ops == 0,
       "no budget: no copies in steady state");
    umadv__schedule_cleanup(&s);
    umadv__trace_cleanup(&t);
}

/* The victim queue against a brute-force maximum over a ring large
 * enough to use every level of its bitmap (keys up to 2^20 apart), with
 * the time moving on as the planner's does. */
static void test_victimq_levels(void)
{
    const uint32_t nsec = 4096, ring = 1u << 20;
    umadv_victimq_t q;
    uint64_t rng = 7, now = 0, *keys = calloc(nsec, sizeof(*keys));
    uint8_t *in = calloc(nsec, 1);
    int bad = 0;

    if (keys == NULL || in == NULL || umadv__victimq_init(&q, nsec, ring) != UMADV_OK) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    for (uint32_t round = 0; round < 200000 && !bad; round++) {
        uint32_t x = tp_below(&rng, nsec), got;
        uint64_t best = 0;
        int any = 0;

        if (in[x]) {
            umadv__victimq_remove(&q, x);
            in[x] = 0;
        } else {
            keys[x] = now + tp_below(&rng, tp_below(&rng, 2) ? 64 : ring);
            umadv__victimq_insert(&q, x, keys[x], 0);
            in[x] = 1;
        }
        if (round % 64 == 0) { /* time moves on: drop the members it passed */
            now += tp_below(&rng, 4096);
            for (uint32_t y = 0; y < nsec; y++)
                if (in[y] && keys[y] < now) {
                    umadv__victimq_remove(&q, y);
                    in[y] = 0;
                }
        }
        for (uint32_t y = 0; y < nsec; y++)
            if (in[y] && (!any || keys[y] > best)) {
                best = keys[y];
                any = 1;
            }
        got = umadv__victimq_peek_max(&q, now);
        bad = any ? got == UMADV_VICTIMQ_NIL || keys[got] != best : got != UMADV_VICTIMQ_NIL;
        if (bad)
            diag("round %u: got %u, wanted key %llu", round, got, (unsigned long long)best);
    }
    ok(!bad, "victim queue: the farthest next use over a 2^20 ring, 200000 operations");
    umadv__victimq_cleanup(&q);
    free(keys);
    free(in);
}

/* umadv__victimq_below walks peak_max's order: every member once, keys
 * never rising, across the ring's wrap, both cost classes and "never". */
static void test_victimq_below(void)
{
    const uint32_t nsec = 512, ring = 97;
    umadv_victimq_t q;
    uint64_t rng = 11, now = 1000, keys[512];
    int bad = 0, seen = 0, members = 0;

    if (umadv__victimq_init(&q, nsec, ring) != UMADV_OK) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    for (uint32_t x = 0; x < nsec; x++) {
        if (tp_below(&rng, 3) == 0)
            continue;
        keys[x] = tp_below(&rng, 16) == 0 ? UMADV_VICTIMQ_NEVER : now + tp_below(&rng, ring);
        umadv__victimq_insert(&q, x, keys[x], (int)tp_below(&rng, 2));
        members++;
    }
    for (uint32_t x = umadv__victimq_peek_max(&q, now), prev = UMADV_VICTIMQ_NIL;
         x != UMADV_VICTIMQ_NIL && seen <= members; x = umadv__victimq_below(&q, x, now)) {
        bad |= prev != UMADV_VICTIMQ_NIL && keys[x] > keys[prev];
        prev = x;
        seen++;
    }
    ok(!bad && seen == members, "victim queue: below walks all %d members in peak order (%d)",
       members, seen);
    umadv__victimq_cleanup(&q);
}

/* Evictions never read back: the next op on their sections (wrapping
 * into the next iteration) is a fresh fetch, a drop, or none; read back
 * when it is a copying fetch, even one issued before them. */
static void test_evicted_unread(void)
{
    umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 4, .first = 0, .count = 1, .bytes = 16},
        {.kind = UMADV_OP_EVICT, .alloc = 0, .first = 0, .count = 2, .bytes = 1},
        {.kind = UMADV_OP_EVICT, .alloc = 1, .first = 0, .count = 1, .bytes = 2},
        {.kind = UMADV_OP_EVICT, .alloc = 2, .first = 1, .count = 1, .bytes = 4},
        {.kind = UMADV_OP_EVICT, .alloc = 3, .first = 0, .count = 1, .bytes = 8},
        {.kind = UMADV_OP_FETCH, .alloc = 0, .first = 1, .count = 1, .bytes = 1},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .first = 0, .count = 1, .bytes = 2,
         .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 2, .first = 0, .count = 1, .bytes = 4},
        {.kind = UMADV_OP_DROP, .alloc = 2, .first = 1, .count = 1, .bytes = 4},
        {.kind = UMADV_OP_EVICT, .alloc = 4, .first = 0, .count = 1, .bytes = 16},
    };
    umadv_schedule_t sch = {.ops = ops, .nops = sizeof(ops) / sizeof(ops[0])};
    uint64_t bytes = 0;
    umadv_status_t status = umadv__schedule_evicted_unread(&sch, &bytes);

    ok(status == UMADV_OK && bytes == 2 + 4 + 8,
       "unread evictions: refilled fresh, dropped past a fetch of other sections, never "
       "touched again; read back: fetched later, or fetched at the next iteration's start "
       "(%llu bytes)", (unsigned long long)bytes);
}

/* Dead evictions: of a stageable allocation, the next op on each section
 * of the run (advice included) a fresh fetch, one or several. */
static void test_mark_dead(void)
{
    umadv_op_t ops[] = {
        {.kind = UMADV_OP_EVICT, .alloc = 0, .first = 0, .count = 2},  /* dead */
        {.kind = UMADV_OP_EVICT, .alloc = 1, .first = 0, .count = 2},  /* only half refilled */
        {.kind = UMADV_OP_EVICT, .alloc = 2, .first = 0, .count = 1},  /* not stageable */
        {.kind = UMADV_OP_EVICT, .alloc = 3, .first = 0, .count = 1},  /* advice first */
        {.kind = UMADV_OP_EVICT, .alloc = 4, .first = 0, .count = 1},  /* copied back */
        {.kind = UMADV_OP_EVICT, .alloc = 5, .first = 1, .count = 4},  /* dead, two refills */
        {.kind = UMADV_OP_EVICT, .alloc = 6, .first = 0, .count = 4},  /* half read back */
        {.kind = UMADV_OP_ADVISE, .alloc = 3, .first = 0, .count = 1,
         .advice = UMADV_ADVICE_ACCESSED_BY},
        {.kind = UMADV_OP_FETCH, .alloc = 0, .first = 0, .count = 3, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 1, .first = 1, .count = 1, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 2, .first = 0, .count = 1, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 3, .first = 0, .count = 1, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 4, .first = 0, .count = 1},
        {.kind = UMADV_OP_FETCH, .alloc = 5, .first = 0, .count = 3, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 5, .first = 3, .count = 3, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 6, .first = 0, .count = 2, .flags = UMADV_OP_FLAG_FRESH},
        {.kind = UMADV_OP_FETCH, .alloc = 6, .first = 1, .count = 3},
    };
    umadv_trace_alloc_t allocs[7] = {{.stageable = 1}, {.stageable = 1}, {.stageable = 0},
                                     {.stageable = 1}, {.stageable = 1}, {.stageable = 1},
                                     {.stageable = 1}};
    umadv_trace_t trace = {.allocs = allocs, .nallocs = 7};
    umadv_schedule_t sch = {.ops = ops, .nops = sizeof(ops) / sizeof(ops[0])};
    umadv_status_t status = umadv__schedule_mark_dead(&sch, &trace);
    char got[8] = "";

    for (int i = 0; i < 7; i++)
        got[i] = (ops[i].flags & UMADV_OP_FLAG_DEAD) ? 'D' : '-';
    ok(status == UMADV_OK && strcmp(got, "D----D-") == 0,
       "dead: refilled fresh whole, by one fetch or two, of a stageable block; not when "
       "half refilled, half read back, not stageable, advised first or copied back (%s)", got);
}

/* The moves off the GPU by section (umadv__schedule_off_across): an
 * eviction or drop issued after the section's last use and before the
 * step's start, the replay wrapping; an allocation placed on the host
 * always; what the index does not know, always. */
static void test_schedule_off(void)
{
    umadv_op_t setup[] = {{.kind = UMADV_OP_ADVISE, .alloc = 2, .first = 0, .count = 1,
                           .advice = UMADV_ADVICE_PREFERRED_HOST}};
    umadv_op_t ops[] = {
        {.kind = UMADV_OP_FETCH, .alloc = 1, .first = 0, .count = 2, .issue_step = 0},
        {.kind = UMADV_OP_EVICT, .alloc = 0, .first = 0, .count = 1, .issue_step = 2,
         .need_step = 1},
        {.kind = UMADV_OP_DROP, .alloc = 1, .first = 1, .count = 1, .issue_step = 4,
         .need_step = 4},
    };
    umadv_trace_alloc_t allocs[3] = {{.first_section = 0, .nsections = 2},
                                     {.first_section = 2, .nsections = 2},
                                     {.first_section = 4, .nsections = 1}};
    umadv_trace_t trace = {.allocs = allocs, .nallocs = 3, .nsections = 5};
    umadv_schedule_t sch = {.setup = setup, .nsetup = 1, .ops = ops, .nops = 3,
                            .first_step = 10, .nsteps = 5};
    umadv_schedule_off_t off;

    if (!ok(umadv__schedule_off_init(&off, &sch, &trace) == UMADV_OK, "moves off indexed"))
        return;
    ok(umadv__schedule_off_across(&off, 0, 0, 11, 13) &&
           !umadv__schedule_off_across(&off, 0, 0, 11, 12),
       "evicted at the end of step 12 (global): off when step 13 begins, not when 12 does");
    ok(!umadv__schedule_off_across(&off, 1, 0, 11, 13),
       "the allocation's other section, never evicted: on");
    ok(umadv__schedule_off_across(&off, 3, 1, 14, 11) &&
           !umadv__schedule_off_across(&off, 2, 1, 14, 11),
       "dropped at the iteration's last step: off at the next one's start, across the wrap; "
       "the section fetched only: on");
    ok(umadv__schedule_off_across(&off, 4, 2, 12, 13) &&
           umadv__schedule_off_across(&off, 9, 0, 11, 12),
       "placed on the host: off; a section the index does not know: off");
    umadv__schedule_off_cleanup(&off);
    ok(off.from.off == NULL && off.from.val == NULL && off.placed == NULL, "cleaned up");
}

int main(void)
{
    plan(55 + 3 + 2 + 2 + 4 + 2 + 1 + 6);
    test_schedule_off();
    test_victimq_levels();
    test_victimq_below();
    test_evicted_unread();
    test_mark_dead();
    test_coalescing();
    test_hoisting();
    test_eviction_order();
    test_splitting();
    test_transient();
    test_reborn();
    test_dies_with_window();
    test_victim_in_time();
    test_born_handover();
    test_read_mostly();
    test_errors();
    test_random();
    test_closing();
    test_no_budget();
    return exit_status();
}
