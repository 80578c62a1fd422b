/*
 * The replay core's staging rules (src/schedule/core.h, STAGING), one by
 * one, on a hand-built trace: which evictions are staged, the marks and
 * the pool's count, the guard a step begins with (call-off, blocking
 * restore), the fetch verdicts of restores, demand's faults, unbinding,
 * blocks the profile left unseen; and which cores keep the LRU order.
 *
 * Trace: section 64 KiB; allocations A (4 sections, persistent), B (2,
 * persistent), T (2, freed after step 1); three steps per iteration:
 *   step 0: A[0..2) rw, T[0..2) w
 *   step 1: B rw, T r
 *   step 2: A[0..4) r
 */
#include <stdlib.h>
#include <string.h>

#include "schedule/core.h"
#include "tap.h"

#define SEC  (64 * 1024)
#define A    0
#define B    1
#define T    2

static umadv_trace_t trace;

static void trace_build(void)
{
    uint32_t id;

    umadv__trace_init(&trace, SEC);
    umadv__trace_add_alloc(&trace, 0, 4 * SEC, UMADV_ALLOC_WEIGHT, NULL, &id);
    umadv__trace_add_alloc(&trace, 0, 2 * SEC, UMADV_ALLOC_WEIGHT, NULL, &id);
    umadv__trace_add_alloc(&trace, 0, 2 * SEC, UMADV_ALLOC_ACTIVATION, NULL, &id);
    umadv__trace_set_lifetime(&trace, T, 0, 1);
    umadv__trace_add_step(&trace, NULL, UMADV_STEP_LAYER, 0, 1000, NULL);
    umadv__trace_add_access_sections(&trace, A, 0, 2, UMADV_ACCESS_RW, 0);
    umadv__trace_add_access_sections(&trace, T, 0, 2, UMADV_ACCESS_WRITE, 0);
    umadv__trace_add_step(&trace, NULL, UMADV_STEP_LAYER, 0, 1000, NULL);
    umadv__trace_add_access_sections(&trace, B, 0, 2, UMADV_ACCESS_RW, 0);
    umadv__trace_add_access_sections(&trace, T, 0, 2, UMADV_ACCESS_READ, 0);
    umadv__trace_add_step(&trace, NULL, UMADV_STEP_LAYER, 0, 1000, NULL);
    umadv__trace_add_access_sections(&trace, A, 0, 4, UMADV_ACCESS_READ, 0);
    umadv__trace_finalize(&trace, NULL, 0);
}

static uint32_t sec(const umadv_core_t *c, uint32_t alloc, uint32_t i)
{
    return umadv__core_section(c, alloc, i);
}

/* A core of @policy, every allocation bound and stageable, every section
 * resident, staging on and not paused. */
static void core_make(umadv_core_t *c, umadv_policy_t policy, uint64_t budget)
{
    umadv_core_params_t p = {.trace = &trace, .first_step = 0, .nsteps = 3, .policy = policy,
                             .budget = budget, .stage = 1};

    umadv__core_init(c, &p);
    for (uint32_t a = 0; a < trace.nallocs; a++) {
        umadv__core_bind(c, a);
        umadv__core_set_stageable(c, a, 1);
    }
    for (uint32_t s = 0; s < trace.nsections; s++)
        umadv__core_set_state(c, s, UMADV_SEC_RESIDENT);
}

/* Whether each allocation's count of staged sections (alloc_staged, the
 * guard's shortcut) is the count of its sections marked staged. */
static int staged_counts_agree(const umadv_core_t *c)
{
    for (uint32_t a = 0; a < trace.nallocs; a++) {
        uint32_t n = 0;

        for (uint32_t i = 0; i < trace.allocs[a].nsections; i++)
            n += c->staged[sec(c, a, i)] != 0;
        if (c->alloc_staged[a] != n)
            return 0;
    }
    return 1;
}

/* The decision in core->out of @kind on @alloc, or NULL. */
static const umadv_core_op_t *find(const umadv_core_t *c, umadv_op_kind_t kind, uint32_t alloc)
{
    for (size_t i = 0; i < c->nout; i++) {
        if (c->out[i].kind == kind && c->out[i].alloc == alloc)
            return &c->out[i];
    }
    return NULL;
}

/* The decision after @op in core->out of its kind on its allocation, or NULL. */
static const umadv_core_op_t *find_next(const umadv_core_t *c, const umadv_core_op_t *op)
{
    for (size_t i = op != NULL ? (size_t)(op - c->out) + 1 : c->nout; i < c->nout; i++) {
        if (c->out[i].kind == op->kind && c->out[i].alloc == op->alloc)
            return &c->out[i];
    }
    return NULL;
}

/* The pool counts the most sections alive at one step, not every block
 * of the iteration, and one allocation's worth more (a run waiting for
 * room leaves the GPU short of the budget): P (2, persistent), X (4, step
 * 0 only), Y (4, step 1 only) peak at 6; at a budget of 5, 6 - 5 + 4 = 5
 * slots (not 10 - 5 + 4); at a budget of 2, all 6 (never more). */
static void test_pool_peak(void)
{
    umadv_core_params_t p = {.first_step = 0, .nsteps = 2, .policy = UMADV_POLICY_PREFETCH_ALL,
                             .budget = 5 * SEC, .stage = 1};
    umadv_trace_t t;
    umadv_core_t c;
    uint32_t id;

    umadv__trace_init(&t, SEC);
    umadv__trace_add_alloc(&t, 0, 2 * SEC, UMADV_ALLOC_WEIGHT, NULL, &id);
    umadv__trace_add_alloc(&t, 0, 4 * SEC, UMADV_ALLOC_ACTIVATION, NULL, &id);
    umadv__trace_add_alloc(&t, 0, 4 * SEC, UMADV_ALLOC_ACTIVATION, NULL, &id);
    umadv__trace_set_lifetime(&t, 1, 0, 0);
    umadv__trace_set_lifetime(&t, 2, 1, 1);
    umadv__trace_add_step(&t, NULL, UMADV_STEP_LAYER, 0, 1000, NULL);
    umadv__trace_add_access_sections(&t, 0, 0, 2, UMADV_ACCESS_READ, 0);
    umadv__trace_add_access_sections(&t, 1, 0, 4, UMADV_ACCESS_WRITE, 0);
    umadv__trace_add_step(&t, NULL, UMADV_STEP_LAYER, 0, 1000, NULL);
    umadv__trace_add_access_sections(&t, 0, 0, 2, UMADV_ACCESS_READ, 0);
    umadv__trace_add_access_sections(&t, 2, 0, 4, UMADV_ACCESS_WRITE, 0);
    if (!ok(umadv__trace_finalize(&t, NULL, 0) == UMADV_OK, "a trace of two transients"))
        return;
    p.trace = &t;
    if (umadv__core_init(&c, &p) != UMADV_OK) {
        ok(0, "a core on it");
        umadv__trace_cleanup(&t);
        return;
    }
    is(c.stage_slots, 5u, "the pool: the peak of 6 sections alive less the budget's 5, and the "
       "largest allocation's 4");
    umadv__core_cleanup(&c);
    p.budget = 2 * SEC;
    if (umadv__core_init(&c, &p) == UMADV_OK) {
        is(c.stage_slots, 6u, "at a budget of 2: the peak's 6, never more");
        umadv__core_cleanup(&c);
    }
    umadv__trace_cleanup(&t);
}

/* prefetch-all at a budget of 4 sections: step 1 needs B (2) with A and
 * T resident (6 + 2 = 8): LRU victims, A's (not T's: T is in the step). */
static void test_staged_evictions(void)
{
    umadv_core_t c;
    const umadv_core_op_t *op;

    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    is(c.stage_slots, 8u, "the pool: the iteration's 8 sections less the budget's 4, and A's "
       "4 more: the peak's 8");
    c.stage_slots = 8 - 4; /* a pool of the least: what the peak leaves off */
    umadv__core_set_state(&c, sec(&c, B, 0), UMADV_SEC_HOST);
    umadv__core_set_state(&c, sec(&c, B, 1), UMADV_SEC_HOST);
    umadv__core_step_begin(&c, 0, 1);
    op = find(&c, UMADV_OP_EVICT, A);
    ok(op != NULL && op->staged, "an eviction of live, stageable data a later step reads: staged");
    ok(c.staged[sec(&c, A, 2)] && c.state[sec(&c, A, 2)] == UMADV_SEC_OUT_QUEUED,
       "its sections are marked staged as it is decided");
    is(c.stage_used, 4u, "each takes a slot of the pool (%u)", c.stage_used);
    op = find(&c, UMADV_OP_FETCH, B);
    ok(op != NULL && !op->staged, "a fetch of data never staged is no restore");
    umadv__core_step_end(&c);
    umadv__core_set_state(&c, sec(&c, B, 0), UMADV_SEC_RESIDENT);
    umadv__core_set_state(&c, sec(&c, B, 1), UMADV_SEC_RESIDENT);
    for (uint32_t i = 0; i < 4; i++) /* A's eviction done */
        umadv__core_set_state(&c, sec(&c, A, i), UMADV_SEC_HOST);
    ok(c.staged[sec(&c, A, 0)] && c.stage_used == 4, "evicted: still staged, slots held");
    umadv__core_step_begin(&c, 0, 2); /* A back: B and T must go, the pool is full */
    op = find(&c, UMADV_OP_EVICT, B);
    ok(op != NULL && !op->staged, "with the pool full, the next eviction migrates");
    op = find(&c, UMADV_OP_FETCH, A);
    ok(op != NULL && op->staged, "a fetch of staged data is a restore");
    umadv__core_cleanup(&c);
}

/* What is not staged. */
static void test_not_staged(void)
{
    umadv_core_t c;
    const umadv_core_op_t *op, *op2;

    /* T is freed after step 1, its last touch: evicting it after that
     * stages it all the same (a copy may still read it, and the driver
     * restores what a copy touches: exec/stage.c); staging moves it at
     * the pinned rate, migration at UVM's */
    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 2 * SEC);
    umadv__core_step_begin(&c, 0, 0);
    umadv__core_step_end(&c);
    umadv__core_step_begin(&c, 0, 1);
    umadv__core_step_end(&c);
    umadv__core_step_begin(&c, 0, 2); /* needs A: 4 sections, T and B go */
    op = find(&c, UMADV_OP_EVICT, T);
    ok(op != NULL && op->staged, "an allocation the iteration frees, past its last touch: "
       "staged too");
    op = find(&c, UMADV_OP_EVICT, B);
    ok(op != NULL && op->staged, "a persistent one: staged (the next iteration reads it)");
    umadv__core_cleanup(&c);

    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    umadv__core_set_stageable(&c, A, 0);
    umadv__core_step_begin(&c, 0, 1);
    op = find(&c, UMADV_OP_EVICT, A);
    ok(op != NULL && !op->staged && !c.staged[sec(&c, A, 0)], "not stageable: migrated");
    umadv__core_cleanup(&c);

    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    umadv__core_stage_pause(&c, 1);
    umadv__core_step_begin(&c, 0, 1);
    op = find(&c, UMADV_OP_EVICT, A);
    ok(op != NULL && !op->staged, "paused: migrated");
    umadv__core_cleanup(&c);

    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    c.stage_used = c.stage_slots - 1; /* room for one section, not A's run */
    umadv__core_step_begin(&c, 0, 1);
    op = find(&c, UMADV_OP_EVICT, A);
    op2 = find_next(&c, op);
    ok(op != NULL && op->staged && op->first == 0 && op->count == 1 && op2 != NULL &&
           !op2->staged && op2->first == 1 && op2->count == 3 && c.staged[sec(&c, A, 0)] &&
           !c.staged[sec(&c, A, 1)],
       "room in the pool for one section of the run: it is staged, the rest migrates");
    c.stage_used = 0;
    umadv__core_cleanup(&c);

    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    c.stage_used = c.stage_slots; /* no room */
    umadv__core_step_begin(&c, 0, 1);
    op = find(&c, UMADV_OP_EVICT, A);
    ok(op != NULL && !op->staged && op->count == 4 && find_next(&c, op) == NULL,
       "no room in the pool: the run migrates, one decision");
    c.stage_used = 0;
    umadv__core_cleanup(&c);
}

/* The guard: a step that touches staged sections. */
static void test_guard(void)
{
    umadv_core_t c;
    const umadv_core_op_t *op;
    uint32_t a0 = 0, a2 = 0;

    core_make(&c, UMADV_POLICY_DEMAND, 4 * SEC);
    umadv__core_step_begin(&c, 0, 0);
    umadv__core_step_end(&c);
    umadv__core_step_begin(&c, 0, 1); /* stages A out */
    a0 = sec(&c, A, 0);
    a2 = sec(&c, A, 2);
    umadv__core_set_state(&c, a2, UMADV_SEC_EVICTING);
    umadv__core_set_state(&c, a2, UMADV_SEC_HOST); /* its eviction done */
    umadv__core_step_end(&c);
    ok(c.state[a2] == UMADV_SEC_HOST && c.staged[a2],
       "demand: a staged section is not faulted in at the step's end");
    umadv__core_step_begin(&c, 0, 2); /* reads A[0..4) */
    ok(c.state[a0] == UMADV_SEC_RESIDENT && !c.staged[a0] && staged_counts_agree(&c),
       "an eviction not started is called off (resident, mark gone, counted so)");
    op = find(&c, UMADV_OP_FETCH, A);
    ok(op != NULL && op->staged && op->blocking && op->need == c.key &&
           op->first <= 2 && op->first + op->count > 2,
       "demand fetches nothing, yet the staged section gets a blocking restore for the step");
    umadv__core_cleanup(&c);
}

/* Fetch verdicts of restores. */
static void test_verdicts(void)
{
    umadv_core_t c;
    umadv_core_op_t op = {.kind = UMADV_OP_FETCH, .alloc = A, .first = 0, .count = 1,
                          .blocking = 1, .staged = 1};
    uint64_t add;
    uint32_t s;

    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    umadv__core_step_begin(&c, 0, 1);
    s = sec(&c, A, 0);
    umadv__core_unstage(&c, s);
    umadv__core_set_state(&c, s, UMADV_SEC_HOST);
    umadv__core_stage_mark(&c, s);
    /* 7 sections accounted (A's other three still OUT_QUEUED), budget 4 */
    for (uint32_t i = 1; i < 4; i++)
        umadv__core_set_state(&c, sec(&c, A, i), UMADV_SEC_RESIDENT);
    op.need = c.key;
    is(umadv__core_fetch_verdict(&c, &op, &add), UMADV_FETCH_GO,
       "a restore the open step needs goes over the budget, nothing leaving");
    op.need = c.key + 1;
    is(umadv__core_fetch_verdict(&c, &op, &add), UMADV_FETCH_SKIP,
       "one a later step needs is given up (that step's guard restores it)");
    umadv__core_unstage(&c, s);
    is(umadv__core_fetch_verdict(&c, &op, &add), UMADV_FETCH_SKIP,
       "a plain fetch over the budget: given up, as ever");
    umadv__core_stage_mark(&c, s);
    umadv__core_set_state(&c, s, UMADV_SEC_FETCHING);
    op.need = c.key;
    is(umadv__core_fetch_verdict(&c, &op, &add), UMADV_FETCH_WAIT,
       "a restore in flight: wait for it");
    umadv__core_set_state(&c, s, UMADV_SEC_RESIDENT);
    ok(!c.staged[s], "landing resident clears the mark");
    umadv__core_cleanup(&c);
}

static void test_unbind(void)
{
    umadv_core_t c;

    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
    umadv__core_step_begin(&c, 0, 1);
    ok(c.stage_used > 0 && c.alloc_staged[A] > 0 && staged_counts_agree(&c),
       "staged sections hold slots, counted by allocation");
    umadv__core_unbind(&c, A);
    ok(c.stage_used == 0 && !c.staged[sec(&c, A, 0)] && c.alloc_staged[A] == 0,
       "unbinding (dead data) drops the marks and gives the slots back");
    umadv__core_bind(&c, A);
    ok(!c.stageable[A], "binding a new block: not stageable until said");
    umadv__core_cleanup(&c);
}

/* A block the profile left unseen at a step (trace->unseen) is not
 * staged across it: A, evicted to make room for step 1, which may read it
 * unseen, migrates; unseen at step 2, where it is touched anyway, or at
 * step 0, before the eviction, it is staged. The marks go before the
 * next test. */
static void test_unseen(void)
{
    static const struct { uint32_t step; int staged; const char *what; } cases[] = {
        {1, 0, "unseen at the step the eviction makes room for: migrated"},
        {2, 1, "unseen at its next touch only: staged"},
        {0, 1, "unseen at a step before the eviction: staged"},
    };
    const umadv_core_op_t *op;
    umadv_core_t c;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        trace.nunseen = 0;
        umadv__trace_add_unseen(&trace, A, cases[i].step);
        core_make(&c, UMADV_POLICY_PREFETCH_ALL, 4 * SEC);
        umadv__core_step_begin(&c, 0, 1);
        op = find(&c, UMADV_OP_EVICT, A);
        ok(op != NULL && op->staged == cases[i].staged && c.has_unseen, "%s", cases[i].what);
        umadv__core_cleanup(&c);
    }
    /* out of order (an iteration begun early): B, staged, is unseen at
     * step 0, which does not name it: it comes back before step 0 runs */
    trace.nunseen = 0;
    umadv__trace_add_unseen(&trace, B, 0);
    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 8 * SEC);
    for (uint32_t i = 0; i < 2; i++) {
        umadv__core_stage_mark(&c, sec(&c, B, i));
        umadv__core_set_state(&c, sec(&c, B, i), UMADV_SEC_HOST);
    }
    umadv__core_step_begin(&c, 0, 0);
    op = find(&c, UMADV_OP_FETCH, B);
    ok(op != NULL && op->staged && op->blocking,
       "a staged block unseen at the step that begins: restored before it, blocking");
    umadv__core_cleanup(&c);
    /* B unseen at step 0 with nothing staged, A's untouched half staged:
     * the guard restores neither (B is passed over whole) */
    core_make(&c, UMADV_POLICY_PREFETCH_ALL, 8 * SEC);
    for (uint32_t i = 2; i < 4; i++) {
        umadv__core_stage_mark(&c, sec(&c, A, i));
        umadv__core_set_state(&c, sec(&c, A, i), UMADV_SEC_HOST);
    }
    umadv__core_step_begin(&c, 0, 0);
    ok(find(&c, UMADV_OP_FETCH, B) == NULL && find(&c, UMADV_OP_FETCH, A) == NULL &&
           c.alloc_staged[A] == 2 && c.alloc_staged[B] == 0 && staged_counts_agree(&c),
       "an unseen block with nothing staged: nothing restored for it, nor for another's "
       "staged sections the step does not touch");
    umadv__core_cleanup(&c);
    trace.nunseen = 0;
}

/* The LRU order is kept where something reads it: the LRU policies, and
 * a modelled fault path (the simulator's) under every policy that evicts;
 * not a replay under plan, nor oracle. */
static void test_lru_order(void)
{
    static const struct { umadv_policy_t policy; int faults, kept; } cases[] = {
        {UMADV_POLICY_PLAN, 0, 0},         {UMADV_POLICY_PLAN, 1, 1},
        {UMADV_POLICY_PREFETCH_ALL, 0, 1}, {UMADV_POLICY_DEMAND, 0, 1},
        {UMADV_POLICY_ORACLE, 1, 0},
    };
    int right = 1;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        umadv_core_params_t p = {.trace = &trace, .nsteps = 3, .policy = cases[i].policy,
                                 .budget = 4 * SEC, .fault_evictions = cases[i].faults};
        umadv_schedule_t none = {.nsteps = 3};
        umadv_core_t c;
        umadv_status_t status;

        p.schedule = &none;
        status = umadv__core_init(&c, &p); /* every case made, so every one cleaned up */
        right = right && status == UMADV_OK && c.lru_on == cases[i].kept;
        umadv__core_cleanup(&c);
    }
    ok(right, "the LRU order kept by prefetch-all, demand and a modelled fault path only");
}

int main(void)
{
    plan(26 + 8);
    trace_build();
    test_pool_peak();
    test_staged_evictions();
    test_not_staged();
    test_guard();
    test_verdicts();
    test_unbind();
    test_unseen();
    test_lru_order();
    umadv__trace_cleanup(&trace);
    return exit_status();
}
