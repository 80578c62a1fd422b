/* The in-memory trace model: builder checks, sections, access merging. */
#include "tap.h"

#include <string.h>

#include "trace/trace.h"

#define MIB (UINT64_C(1) << 20)

static void test_sections(void)
{
    umadv_trace_t t;
    uint32_t a, b;

    umadv__trace_init(&t, 2 * MIB);
    umadv__trace_add_alloc(&t, 0x1000000, 5 * MIB, UMADV_ALLOC_WEIGHT, "w", &a);
    umadv__trace_add_alloc(&t, 0x2000000, 2 * MIB, UMADV_ALLOC_ACTIVATION, NULL, &b);
    umadv__trace_add_step(&t, "s0", UMADV_STEP_KERNEL, 0, 1000, NULL);
    umadv__trace_add_access(&t, a, 3 * MIB, 2 * MIB, UMADV_ACCESS_READ, 0);
    is(umadv__trace_finalize(&t, NULL, 0), UMADV_OK, "finalize a small trace");
    is(t.nsections, 4, "5 MiB + 2 MiB in 2 MiB sections make 3 + 1 sections");
    is_u64(t.sections[2].size, 1 * MIB, "an allocation's last section is partial");
    is(t.allocs[b].first_section, 3, "sections are numbered across allocations");
    is(t.accesses[0].first, 1, "a byte range maps to the sections it covers (first)");
    is(t.accesses[0].count, 2, "a byte range maps to the sections it covers (count)");
    is_u64(umadv__trace_run_bytes(&t, a, 1, 2), 3 * MIB, "run bytes stop at the allocation's end");
    umadv__trace_cleanup(&t);
}

/* Finalizing must reach a fixed point: [0,2) rw, [2,3) r, [2,5) w merge
 * to one [0,5) rw run, or a write/read round trip would change bytes. */
static void test_merge_fixed_point(void)
{
    umadv_trace_t t;
    uint32_t a;

    umadv__trace_init(&t, 2 * MIB);
    umadv__trace_add_alloc(&t, 0, 10 * MIB, UMADV_ALLOC_OTHER, NULL, &a);
    umadv__trace_add_step(&t, NULL, UMADV_STEP_KERNEL, 0, 0, NULL);
    umadv__trace_add_access_sections(&t, a, 0, 2, UMADV_ACCESS_RW, 1);
    umadv__trace_add_access_sections(&t, a, 2, 1, UMADV_ACCESS_READ, 2);
    umadv__trace_add_access_sections(&t, a, 2, 3, UMADV_ACCESS_WRITE, UINT32_MAX);
    umadv__trace_finalize(&t, NULL, 0);
    is(t.naccesses, 1, "overlapping and touching runs fold into one");
    is(t.accesses[0].count, 5, "the folded run spans all sections");
    is(t.accesses[0].mode, UMADV_ACCESS_RW, "the folded run has the union of modes");
    is_u64(t.accesses[0].faults, UINT32_MAX, "fault counts saturate instead of wrapping");
    umadv__trace_cleanup(&t);

    umadv__trace_init(&t, 2 * MIB);
    umadv__trace_add_alloc(&t, 0, 10 * MIB, UMADV_ALLOC_OTHER, NULL, &a);
    umadv__trace_add_step(&t, NULL, UMADV_STEP_KERNEL, 0, 0, NULL);
    umadv__trace_add_access_sections(&t, a, 0, 2, UMADV_ACCESS_READ, 0);
    umadv__trace_add_access_sections(&t, a, 2, 2, UMADV_ACCESS_WRITE, 0);
    umadv__trace_finalize(&t, NULL, 0);
    is(t.naccesses, 2, "runs that only touch with different modes stay apart");
    umadv__trace_cleanup(&t);
}

static void test_rejections(void)
{
    umadv_trace_t t;
    uint32_t a, step;
    char why[256];

    is(umadv__trace_init(&t, 3 * MIB), UMADV_ERR_INVALID_PARAM, "section size must be a power of two");
    is(umadv__trace_init(&t, 4096), UMADV_ERR_INVALID_PARAM, "section size below 64 KiB is refused");
    umadv__trace_init(&t, 64 * 1024);
    is(umadv__trace_add_alloc(&t, 0, 0, UMADV_ALLOC_OTHER, NULL, &a), UMADV_ERR_INVALID_PARAM,
       "a zero-size allocation is refused");
    is(umadv__trace_add_alloc(&t, UINT64_MAX - 10, 100, UMADV_ALLOC_OTHER, NULL, &a),
       UMADV_ERR_INVALID_PARAM, "an allocation wrapping the address space is refused");
    umadv__trace_add_alloc(&t, 0, UINT64_MAX - 5, UMADV_ALLOC_OTHER, NULL, &a);
    is(umadv__trace_finalize(&t, why, sizeof(why)), UMADV_ERR_INVALID_PARAM,
       "an allocation of 2^64 bytes cannot be sectioned");
    ok(strstr(why, "sections") != NULL, "the reason names the section count");
    umadv__trace_cleanup(&t);

    umadv__trace_init(&t, 2 * MIB);
    is(umadv__trace_add_access_sections(&t, 0, 0, 1, UMADV_ACCESS_READ, 0), UMADV_ERR_INVALID_PARAM,
       "an access before any step is refused");
    umadv__trace_add_alloc(&t, 0, 4 * MIB, UMADV_ALLOC_ACTIVATION, "x", &a);
    umadv__trace_add_step(&t, "s0", UMADV_STEP_KERNEL, 1, 0, &step);
    is(umadv__trace_add_step(&t, "s1", UMADV_STEP_KERNEL, 0, 0, NULL), UMADV_ERR_INVALID_PARAM,
       "iterations must not decrease");
    is(umadv__trace_add_access_sections(&t, a, 1, 2, UMADV_ACCESS_READ, 0), UMADV_ERR_INVALID_PARAM,
       "an access past the allocation's sections is refused");
    is(umadv__trace_add_access(&t, a, 0, 4 * MIB, 8, 0), UMADV_ERR_INVALID_PARAM,
       "an unknown access mode is refused");
    umadv__trace_add_step(&t, "s1", UMADV_STEP_KERNEL, 1, 0, NULL);
    umadv__trace_add_access(&t, a, 0, 1, UMADV_ACCESS_READ, 0);
    umadv__trace_set_lifetime(&t, a, 0, 0);
    is(umadv__trace_finalize(&t, why, sizeof(why)), UMADV_ERR_CORRUPT,
       "touching an allocation after its free is caught");
    ok(strstr(why, "step 1") != NULL && strstr(why, "lifetime") != NULL,
       "the reason names the step and the lifetime (%s)", why);
    umadv__trace_cleanup(&t);
}

static void test_iterations(void)
{
    umadv_trace_t t;
    uint32_t first, count;

    umadv__trace_init(&t, 2 * MIB);
    for (uint32_t it = 0; it < 3; it++)
        for (uint32_t s = 0; s < 4 + it; s++)
            umadv__trace_add_step(&t, NULL, UMADV_STEP_LAYER, it * 2, 10, NULL);
    umadv__trace_finalize(&t, NULL, 0);
    is(t.niterations, 5, "iterations are counted up to the last index");
    is(umadv__trace_iteration_steps(&t, 2, &first, &count), UMADV_OK, "find iteration 2");
    is(first, 4, "iteration 2 starts after iteration 0's four steps");
    is(count, 5, "iteration 2 has five steps");
    is(umadv__trace_iteration_steps(&t, 1, &first, &count), UMADV_ERR_NOT_FOUND,
       "a missing iteration is not found");
    umadv__trace_cleanup(&t);
}

typedef struct runs_seen {
    uint32_t alloc[8], first[8], count[8];
    size_t   n;
} runs_seen_t;

static void see_run(void *arg, uint32_t alloc, uint32_t first, uint32_t count)
{
    runs_seen_t *r = arg;

    if (r->n < 8) {
        r->alloc[r->n] = alloc;
        r->first[r->n] = first;
        r->count[r->n] = count;
    }
    r->n++;
}

/* Runs are what the executor issues as one call and the simulator costs
 * as one: adjacent sections, never across an allocation's end. */
static void test_runs(void)
{
    umadv_trace_t t;
    uint32_t a, b, ids[] = {4, 0, 2, 1, 3};
    runs_seen_t r = {.n = 0};

    umadv__trace_init(&t, 2 * MIB);
    umadv__trace_add_alloc(&t, 0, 6 * MIB, UMADV_ALLOC_WEIGHT, NULL, &a);
    umadv__trace_add_alloc(&t, 0, 4 * MIB, UMADV_ALLOC_ACTIVATION, NULL, &b);
    umadv__trace_add_step(&t, "s0", UMADV_STEP_KERNEL, 0, 1000, NULL);
    umadv__trace_add_access(&t, a, 0, 6 * MIB, UMADV_ACCESS_READ, 0);
    umadv__trace_finalize(&t, NULL, 0);
    is(umadv__trace_for_runs(&t, ids, 5, see_run, &r), 2, "five sections in two runs");
    ok(r.n == 2 && r.alloc[0] == a && r.first[0] == 0 && r.count[0] == 3,
       "sorted, then a run ends at its allocation's last section");
    ok(r.n == 2 && r.alloc[1] == b && r.first[1] == 0 && r.count[1] == 2,
       "the next allocation's sections start a run of their own");
    r.n = 0;
    ids[0] = 0, ids[1] = 2;
    is(umadv__trace_for_runs(&t, ids, 2, see_run, &r), 2, "a gap splits a run");
    is(umadv__trace_for_runs(&t, ids, 0, see_run, &r), 0, "no sections, no runs");
    umadv__trace_cleanup(&t);
}

/* A copy owns its memory, holds the same figures, and stops holding
 * them once either changes (api/ahead.c plans on copies). */
static void test_copy(void)
{
    umadv_trace_t t, c;
    uint32_t a, b;

    umadv__trace_init(&t, 2 * MIB);
    umadv__trace_set_source(&t, "test");
    umadv__trace_add_alloc(&t, 0x1000000, 5 * MIB, UMADV_ALLOC_WEIGHT, "w", &a);
    umadv__trace_add_alloc(&t, 0x2000000, 2 * MIB, UMADV_ALLOC_ACTIVATION, NULL, &b);
    umadv__trace_set_site(&t, a, "site");
    umadv__trace_add_step(&t, "s0", UMADV_STEP_KERNEL, 0, 1000, NULL);
    umadv__trace_add_access(&t, a, 3 * MIB, 2 * MIB, UMADV_ACCESS_READ, 0);
    umadv__trace_add_step(&t, NULL, UMADV_STEP_KERNEL, 0, 2000, NULL);
    umadv__trace_add_access(&t, b, 0, 2 * MIB, UMADV_ACCESS_WRITE, 0);
    umadv__trace_set_lifetime(&t, b, 1, UMADV_STEP_NONE);
    umadv__trace_finalize(&t, NULL, 0);
    umadv__trace_add_unseen(&t, a, 1);
    is(umadv__trace_copy(&t, &c), UMADV_OK, "a finalized trace copied");
    ok(umadv__trace_same_figures(&t, &c) && c.nunseen == 1 && c.finalized &&
           c.allocs[a].tag != t.allocs[a].tag && strcmp(c.allocs[a].tag, "w") == 0 &&
           c.allocs[b].tag == NULL && c.allocs[a].site == NULL &&
           c.steps[0].name != t.steps[0].name && strcmp(c.steps[0].name, "s0") == 0 &&
           strcmp(c.source, "test") == 0,
       "the copy holds the same figures, its own names and tags, no sites");
    c.steps[1].duration_ns++;
    ok(!umadv__trace_same_figures(&t, &c), "a duration changed: not the same");
    c.steps[1].duration_ns--;
    umadv__trace_end_with_window(&t, b);
    ok(!umadv__trace_same_figures(&t, &c), "a lifetime ended with the window: not the same");
    umadv__trace_cleanup(&c);
    is(umadv__trace_copy(&t, &c), UMADV_OK, "copied again");
    umadv__trace_add_unseen(&c, b, 0);
    ok(!umadv__trace_same_figures(&t, &c) && strcmp(t.allocs[a].tag, "w") == 0,
       "an unseen mark more: not the same; the original untouched");
    umadv__trace_cleanup(&c);
    umadv__trace_cleanup(&t);
}

int main(void)
{
    plan(34 + 6);
    test_copy();
    test_runs();
    test_sections();
    test_merge_fixed_point();
    test_rejections();
    test_iterations();
    return exit_status();
}
