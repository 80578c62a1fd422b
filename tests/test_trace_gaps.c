/* The gaps between an iteration's uses of each allocation (trace/gaps.h):
 * which allocation a block is at a step, and how long it lies untouched
 * around a step, wrapping around for data that outlives the iteration. */
#include "tap.h"

#include "trace/gaps.h"

#define MIB (UINT64_C(1) << 20)

/* Five steps of 10, 20, 30, 40, 50 ns. Allocation w (persistent) is used
 * at steps 1 and 3; t (born before step 1, freed after step 3) at step 2;
 * u (persistent) nowhere; r at the same base as t, born before step 4. */
static void five_steps(umadv_trace_t *t, uint32_t *w, uint32_t *x, uint32_t *u, uint32_t *r)
{
    umadv__trace_init(t, 2 * MIB);
    umadv__trace_add_alloc(t, 0x1000000, 4 * MIB, UMADV_ALLOC_WEIGHT, "w", w);
    umadv__trace_add_alloc(t, 0x2000000, 2 * MIB, UMADV_ALLOC_ACTIVATION, "t", x);
    umadv__trace_set_lifetime(t, *x, 1, 3);
    umadv__trace_add_alloc(t, 0x3000000, 2 * MIB, UMADV_ALLOC_OTHER, "u", u);
    umadv__trace_add_alloc(t, 0x2000000, 2 * MIB, UMADV_ALLOC_ACTIVATION, "r", r);
    umadv__trace_set_lifetime(t, *r, 4, UMADV_STEP_NONE);
    for (uint32_t s = 0; s < 5; s++) {
        umadv__trace_add_step(t, "k", UMADV_STEP_KERNEL, 0, 10 * (s + 1), NULL);
        if (s == 1 || s == 3) { /* two runs of w in one step: one use */
            umadv__trace_add_access(t, *w, 0, MIB, UMADV_ACCESS_READ, 0);
            umadv__trace_add_access(t, *w, 3 * MIB, MIB, UMADV_ACCESS_WRITE, 0);
        }
        if (s == 2)
            umadv__trace_add_access(t, *x, 0, MIB, UMADV_ACCESS_RW, 0);
        if (s == 4)
            umadv__trace_add_access(t, *r, 0, MIB, UMADV_ACCESS_RW, 0);
    }
}

static void test_around(void)
{
    umadv_trace_gaps_t g;
    umadv_trace_t t;
    uint32_t w, x, u, r;

    five_steps(&t, &w, &x, &u, &r);
    is(umadv__trace_finalize(&t, NULL, 0), UMADV_OK, "the trace finalizes");
    is(umadv__trace_gaps_init(&g, &t), UMADV_OK, "its gaps index");
    is_u64(umadv__trace_gaps_around(&g, w, 1), 0, "a step that uses it: no gap");
    is_u64(umadv__trace_gaps_around(&g, w, 2), 30,
           "between two uses: from the end of one (30 ns) to the start of the next (60 ns)");
    is_u64(umadv__trace_gaps_around(&g, w, 4), 50 + 10,
           "after its last use: to its first use of the next iteration (step 4, then step 0)");
    is_u64(umadv__trace_gaps_around(&g, w, 0), 60,
           "before its first use: from its last use of the iteration before");
    is_u64(umadv__trace_gaps_around(&g, x, 1), 20,
           "born in the iteration: counted from its birth (step 1) to its use (step 2)");
    is_u64(umadv__trace_gaps_around(&g, x, 3), 40,
           "freed in the iteration: counted from its use to its free (after step 3)");
    ok(umadv__trace_gaps_around(&g, u, 2) == UINT64_MAX, "used nowhere: no end to its gap");
    umadv__trace_gaps_cleanup(&g);
    umadv__trace_cleanup(&t);
}

static void test_find(void)
{
    umadv_trace_gaps_t g;
    umadv_trace_t t;
    uint32_t w, x, u, r;

    five_steps(&t, &w, &x, &u, &r);
    umadv__trace_finalize(&t, NULL, 0);
    umadv__trace_gaps_init(&g, &t);
    is(umadv__trace_gaps_find(&g, 0x1000000, 4 * MIB, 3), w, "a block by base and size");
    is(umadv__trace_gaps_find(&g, 0x2000000, 2 * MIB, 2), x,
       "two allocations at one base: the one alive at the step (the first)");
    is(umadv__trace_gaps_find(&g, 0x2000000, 2 * MIB, 4), r, "...and the later one");
    is(umadv__trace_gaps_find(&g, 0x2000000, 2 * MIB, 0), UMADV_STEP_NONE,
       "before either is born: none");
    is(umadv__trace_gaps_find(&g, 0x1000000, 2 * MIB, 3), UMADV_STEP_NONE,
       "the same base at another size: another block, none");
    is(umadv__trace_gaps_find(&g, 0x5000000, 2 * MIB, 3), UMADV_STEP_NONE,
       "a base the trace never had: none");
    ok(umadv__trace_gaps_is(&g, x, 0x2000000, 2 * MIB, 2) &&
           umadv__trace_gaps_is(&g, r, 0x2000000, 2 * MIB, 4) &&
           umadv__trace_gaps_is(&g, w, 0x1000000, 4 * MIB, 3),
       "an answer held: the allocation lies there, with that size, alive at the step");
    ok(!umadv__trace_gaps_is(&g, x, 0x2000000, 2 * MIB, 4) &&
           !umadv__trace_gaps_is(&g, r, 0x2000000, 2 * MIB, 2) &&
           !umadv__trace_gaps_is(&g, w, 0x1000000, 2 * MIB, 3) &&
           !umadv__trace_gaps_is(&g, w, 0x2000000, 4 * MIB, 3) &&
           !umadv__trace_gaps_is(&g, UMADV_STEP_NONE, 0x1000000, 4 * MIB, 3) &&
           !umadv__trace_gaps_is(&g, t.nallocs, 0x1000000, 4 * MIB, 3),
       "an answer that no longer holds: the base's other allocation at another step, "
       "another size or base, no allocation, one past the last");
    ok(umadv__trace_gaps_born(&g, x, 2 * MIB, 1, 2) && umadv__trace_gaps_born(&g, r, 2 * MIB, 4, 4),
       "born at a step, with its size, alive at the step: the same block wherever it lies");
    ok(!umadv__trace_gaps_born(&g, x, 2 * MIB, 2, 2) &&
           !umadv__trace_gaps_born(&g, x, 4 * MIB, 1, 2) &&
           !umadv__trace_gaps_born(&g, x, 2 * MIB, 1, 4) &&
           !umadv__trace_gaps_born(&g, w, 4 * MIB, UMADV_STEP_NONE, 3) &&
           !umadv__trace_gaps_born(&g, t.nallocs, 2 * MIB, 1, 2),
       "not: born at another step, another size, dead at the step, one from before the "
       "iteration (found by its base), one past the last");
    umadv__trace_gaps_cleanup(&g);
    umadv__trace_cleanup(&t);
}

/* Unseen marks: w (used at 1 and 3, outlives the iteration) unseen at
 * step 2; t (born before 1, freed after 3, used at 2) unseen at step 3. */
static void test_unseen_ahead(void)
{
    umadv_trace_gaps_t g;
    umadv_trace_t t;
    uint32_t w, x, u, r, ws;

    five_steps(&t, &w, &x, &u, &r);
    umadv__trace_finalize(&t, NULL, 0);
    umadv__trace_add_unseen(&t, w, 2);
    umadv__trace_add_unseen(&t, x, 3);
    umadv__trace_gaps_init(&g, &t);
    ws = t.allocs[w].first_section;
    ok(umadv__trace_gaps_unseen_ahead(&g, ws, 2, 0, 5),
       "unseen at the first step after the eviction");
    ok(!umadv__trace_gaps_unseen_ahead(&g, ws, 3, 0, 5), "from its next use on: no");
    ok(!umadv__trace_gaps_unseen_ahead(&g, ws, 4, 0, 5),
       "after its last use, up to its first of the next iteration (step 1): no");
    ok(umadv__trace_gaps_unseen_ahead(&g, t.allocs[x].first_section, 3, 0, 5),
       "after its last use, before its free: yes");
    ok(!umadv__trace_gaps_unseen_ahead(&g, t.allocs[u].first_section, 0, 0, 5),
       "no marks: no");
    ok(umadv__trace_gaps_unseen_ahead(&g, ws, 5, 2, 3),
       "replaying steps 2-4 only: past its last use there (3), across the wrap to it, unseen "
       "at 2");
    umadv__trace_gaps_cleanup(&g);
    umadv__trace_cleanup(&t);

    five_steps(&t, &w, &x, &u, &r);
    umadv__trace_finalize(&t, NULL, 0);
    umadv__trace_add_unseen(&t, w, 0);
    umadv__trace_gaps_init(&g, &t);
    ok(umadv__trace_gaps_unseen_ahead(&g, t.allocs[w].first_section, 4, 0, 5),
       "outliving the iteration, unseen before its first use: ahead across the wrap");
    umadv__trace_gaps_cleanup(&g);
    umadv__trace_cleanup(&t);
}

/* The last use of a section before a step, wrapping for data that
 * outlives the iteration. */
static void test_section_last(void)
{
    umadv_trace_gaps_t g;
    umadv_trace_t t;
    uint32_t w, x, u, r, ws, xs;

    five_steps(&t, &w, &x, &u, &r);
    umadv__trace_finalize(&t, NULL, 0);
    umadv__trace_gaps_init(&g, &t);
    ws = t.allocs[w].first_section;
    xs = t.allocs[x].first_section;
    is(umadv__trace_gaps_section_last(&g, ws, 2), 1, "between two uses: the one before");
    is(umadv__trace_gaps_section_last(&g, ws + 1, 4), 3, "after the last: the last");
    is(umadv__trace_gaps_section_last(&g, ws, 1), 3,
       "at its first use, outliving the iteration: its last use, the replay before's");
    is(umadv__trace_gaps_section_last(&g, xs, 3), 2, "born in the iteration, after its use");
    is(umadv__trace_gaps_section_last(&g, xs, 2), UMADV_STEP_NONE,
       "born in the iteration, up to its first use: none");
    is(umadv__trace_gaps_section_last(&g, t.allocs[u].first_section, 4), UMADV_STEP_NONE,
       "used nowhere: none");
    umadv__trace_gaps_cleanup(&g);
    umadv__trace_cleanup(&t);
}

int main(void)
{
    plan(17 + 7 + 6 + 2);
    test_around();
    test_find();
    test_unseen_ahead();
    test_section_last();
    return exit_status();
}
