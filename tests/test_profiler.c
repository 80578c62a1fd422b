/*
 * The profiler's pure parts: fault records attributed to steps by time and
 * to allocations by address and lifetime, the merge into a trace, the scan
 * of kernel parameters for pool pointers, the link model fit, and the
 * knobs it adds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "pool/pool.h"
#include "profiler/attrib.h"
#include "profiler/linkprobe.h"
#include "profiler/profiler_int.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)

/* Intervals: step 0 [100,200], step 1 [150,400] overlapping it, step 2
 * [600,700], all on device 0; step 3 [120,180] on device 1. */
static const umadv_prof_interval_t intervals[] = {
    {100, 200, 0, 0}, {120, 180, 3, 1}, {150, 400, 1, 0}, {600, 700, 2, 0},
};

static void test_step_by_time(void)
{
    const umadv_prof_interval_t *iv = intervals;
    size_t n = UMADV_ARRAY_SIZE(intervals);
    uint64_t maxd = 250;

    is(umadv__prof_attrib_step(iv, n, maxd, 120, 0), 0, "inside one kernel: its step");
    is(umadv__prof_attrib_step(iv, n, maxd, 170, 0), 1,
       "inside two overlapping kernels: the latest started");
    is(umadv__prof_attrib_step(iv, n, maxd, 300, 0), 1, "after the first ended: the one running");
    is(umadv__prof_attrib_step(iv, n, maxd, 500, 0), 1,
       "in a gap: the kernel that ran last before it");
    is(umadv__prof_attrib_step(iv, n, maxd, 650, 0), 2, "inside the last kernel");
    is(umadv__prof_attrib_step(iv, n, maxd, 9000, 0), 2, "after everything: the last kernel");
    is(umadv__prof_attrib_step(iv, n, maxd, 170, 1), 3, "another device: its own kernel");
    is(umadv__prof_attrib_step(iv, n, maxd, 50, 0), 0,
       "slightly before the first kernel (clock skew): the first");
    is(umadv__prof_attrib_step(iv, n, maxd, 50, 2), UMADV_STEP_NONE, "a device with no kernel");
    is(umadv__prof_attrib_step(iv, 0, 0, 50, 0), UMADV_STEP_NONE, "no kernels at all");
}

/* The GPU's share of a profiled iteration: kernels out of order, two
 * overlapping (another stream), one nested in another, one inverted. */
static void test_kernel_busy(void)
{
    const umadv_prof_kernel_t kernels[] = {
        {.start = 600, .end = 700}, {.start = 100, .end = 200}, {.start = 150, .end = 400},
        {.start = 160, .end = 170}, {.start = 900, .end = 800},
    };
    uint64_t span = 1, busy = 1;

    is(umadv__prof_kernel_busy(kernels, UMADV_ARRAY_SIZE(kernels), &span, &busy), UMADV_OK,
       "kernel busy: ok");
    is(span, 600, "span: first start (100) to last end (700), the inverted record adding none");
    is(busy, 400, "busy: the union of [100,400] and [600,700], overlaps counted once");
    span = busy = 1;
    is(umadv__prof_kernel_busy(NULL, 0, &span, &busy), UMADV_OK, "no kernels: ok");
    ok(span == 0 && busy == 0, "no kernels: span and busy 0");
}

/* Three allocations: A [1M, 1M+256K) live all along, B [4M, 4M+128K)
 * freed after step 1, C at B's address from step 2 on. */
static void trace_fixture(umadv_trace_t *t)
{
    uint32_t id;

    umadv__trace_init(t, SECTION);
    umadv__trace_add_alloc(t, UMADV_MIB, 256 * UMADV_KIB, UMADV_ALLOC_OTHER, "A", &id);
    umadv__trace_add_alloc(t, 4 * UMADV_MIB, 128 * UMADV_KIB, UMADV_ALLOC_OTHER, "B", &id);
    umadv__trace_set_lifetime(t, id, UMADV_STEP_NONE, 1);
    umadv__trace_add_alloc(t, 4 * UMADV_MIB, 192 * UMADV_KIB, UMADV_ALLOC_OTHER, "C", &id);
    umadv__trace_set_lifetime(t, id, 2, UMADV_STEP_NONE);
    for (int s = 0; s < 4; s++) {
        char name[16];
        snprintf(name, sizeof(name), "k%d", s);
        umadv__trace_add_step(t, name, s == 3 ? UMADV_STEP_LAYER : UMADV_STEP_KERNEL, 0, 7, NULL);
        if (s == 0) /* a declared access: must survive the merge */
            umadv__trace_add_access(t, 0, 0, 64 * UMADV_KIB, UMADV_ACCESS_READ, 0);
    }
}

static void test_alloc_at(void)
{
    umadv_prof_alloc_ref_t *refs;
    uint64_t max_size;
    umadv_trace_t t;

    trace_fixture(&t);
    umadv__prof_alloc_order(&t, &refs, &max_size);
    is_u64(max_size, 256 * UMADV_KIB, "largest size known");
    is(umadv__prof_alloc_at(&t, refs, max_size, UMADV_MIB + 100000, 0), 0, "interior address");
    is(umadv__prof_alloc_at(&t, refs, max_size, UMADV_MIB + 256 * UMADV_KIB, 0), UINT32_MAX,
       "one past the end: nobody's");
    is(umadv__prof_alloc_at(&t, refs, max_size, UMADV_MIB - 1, 0), UINT32_MAX, "just below");
    is(umadv__prof_alloc_at(&t, refs, max_size, 4 * UMADV_MIB + 10, 1), 1,
       "reused address at step 1: the first owner");
    is(umadv__prof_alloc_at(&t, refs, max_size, 4 * UMADV_MIB + 10, 2), 2,
       "reused address at step 2: the second owner");
    is(umadv__prof_alloc_at(&t, refs, max_size, 4 * UMADV_MIB + 160 * UMADV_KIB, 1), UINT32_MAX,
       "beyond the first owner's size while it lived");
    free(refs);
    umadv__trace_cleanup(&t);
}

#define FAULT(_addr, _time, _dev, _groups, _mode) \
    {.address = (_addr), .start = (_time), .device = (_dev), .groups = (_groups), \
     .mode = UMADV_ACCESS_##_mode}

#define NO_NAME UMADV_EVENT_NO_NAME

static void test_attrib_and_merge(void)
{
    umadv_prof_launch_t launches[] = {{42, 2}, {7, 0}, {9, 1}, {11, 3}};
    umadv_prof_kernel_t kernels[] = {
        {7, 0, 1000, 2000, NO_NAME}, {9, 0, 3000, 5000, NO_NAME}, {42, 0, 6000, 6500, NO_NAME},
        {42, 0, 6600, 7000, NO_NAME}, {11, 0, 8000, 9000, NO_NAME}, {99, 0, 10, 20, NO_NAME},
    };
    umadv_prof_fault_t faults[] = {
        FAULT(UMADV_MIB + 70 * UMADV_KIB, 1500, 0, 3, READ), /* A sec 1, step 0 */
        FAULT(4 * UMADV_MIB + 100, 4000, 0, 2, RW), /* B sec 0, step 1 */
        FAULT(4 * UMADV_MIB + 130 * UMADV_KIB, 6700, 0, 1, RW), /* C sec 2, step 2 */
        FAULT(4 * UMADV_MIB + 130 * UMADV_KIB, 4500, 0, 1, RW), /* B has no sec 2 */
        FAULT(77 * UMADV_MIB, 1500, 0, 1, RW), /* no umadv memory */
        FAULT(UMADV_MIB, 100, 5, 1, RW), /* device 5: no kernel */
    };
    umadv_prof_attrib_stats_t st;
    umadv_prof_interval_t *iv;
    umadv_prof_access_t *acc = NULL;
    size_t niv, nacc = 0, cap = 0;
    umadv_trace_t t;
    char why[200];

    memset(&st, 0, sizeof(st));
    trace_fixture(&t);
    is(umadv__prof_attrib_kernels(&t, launches, 4, kernels, 6, &iv, &niv, &st), UMADV_OK,
       "kernels attributed");
    is(niv, 5, "every kernel of a known launch has an interval");
    is_u64(st.kernels_unknown, 1, "a kernel of no launch is counted, not used");
    is_u64(t.steps[2].duration_ns, 1000, "a step of two kernels (a graph) lasts their span");
    is_u64(t.steps[1].duration_ns, 2000, "a kernel step lasts its kernel");
    is_u64(t.steps[3].duration_ns, 7, "a marked layer keeps its measured time");
    is(umadv__prof_attrib_faults(&t, iv, niv, faults, 6, &acc, &nacc, &cap, &st), UMADV_OK,
       "faults attributed");
    is(nacc, 3, "three faults land in umadv memory at a step");
    is_u64(st.faults_no_alloc, 2, "outside memory and past the owner's size: counted");
    is_u64(st.faults_no_kernel, 1, "no kernel on the device: counted");
    is_u64(st.fault_groups, 9, "fault groups summed");
    t.guessed_steps = 2;
    umadv__trace_add_unseen(&t, 1, 1);
    is(umadv__prof_trace_merge(&t, acc, nacc), UMADV_OK, "merged");
    is(t.guessed_steps, 2, "the guessed steps survive the merge (nothing is staged on them)");
    ok(t.nunseen == 1 && t.unseen[0].alloc == 1 && t.unseen[0].step == 1,
       "so does a block left unseen at a step (nothing staged across it)");
    is(umadv__trace_finalize(&t, why, sizeof(why)), UMADV_OK, "the merged trace is valid");
    is(t.steps[0].naccesses, 1, "step 0: declared section 0 and faulted section 1 of A, "
       "both read, join");
    ok(t.accesses[t.steps[0].first_access].first == 0 &&
       t.accesses[t.steps[0].first_access].count == 2 &&
       t.accesses[t.steps[0].first_access].faults == 3 &&
       t.accesses[t.steps[0].first_access].mode == UMADV_ACCESS_READ,
       "the run covers both, with the fault's groups and mode");
    ok(t.steps[1].naccesses == 1 && t.accesses[t.steps[1].first_access].alloc == 1,
       "step 1 touched B");
    ok(t.steps[2].naccesses == 1 && t.accesses[t.steps[2].first_access].alloc == 2 &&
       t.accesses[t.steps[2].first_access].first == 2, "step 2 touched C's third section");
    is_str(t.steps[2].name, "k2", "names survive the merge");
    free(iv);
    free(acc);
    umadv__trace_cleanup(&t);
}

typedef struct arrivals {
    uint32_t alloc[16], step[16];
    size_t   n;
} arrivals_t;

static void arrival_add(void *arg, uint32_t alloc, uint32_t step)
{
    arrivals_t *a = arg;

    if (a->n < 16) {
        a->alloc[a->n] = alloc;
        a->step[a->n++] = step;
    }
}

static int arrived(const arrivals_t *a, uint32_t alloc, uint32_t step)
{
    for (size_t i = 0; i < a->n; i++) {
        if (a->alloc[i] == alloc && a->step[i] == step)
            return 1;
    }
    return 0;
}

/* Where faults put data on the GPU: every allocation a fault's 2 MiB, or
 * a migration's bytes, meet, alive at its step; at no kernel's time, at
 * no step. */
static void test_arrivals(void)
{
    umadv_prof_launch_t launches[] = {{7, 0}, {9, 1}, {42, 2}};
    umadv_prof_kernel_t kernels[] = {
        {7, 0, 1000, 2000, NO_NAME}, {9, 0, 3000, 5000, NO_NAME}, {42, 0, 6000, 7000, NO_NAME}};
    umadv_prof_fault_t faults[] = {
        FAULT(UMADV_MIB + 70 * UMADV_KIB, 1500, 0, 3, READ),    /* A's 2 MiB, step 0 */
        FAULT(4 * UMADV_MIB + 130 * UMADV_KIB, 4500, 0, 1, RW), /* B's, step 1: not C yet */
        FAULT(4 * UMADV_MIB + 130 * UMADV_KIB, 6700, 0, 1, RW), /* C's, step 2: B is gone */
        FAULT(UMADV_MIB, 100, 5, 1, RW),                       /* no kernel: A, no step */
    };
    umadv_prof_fault_t migration = {.address = UMADV_MIB + 200 * UMADV_KIB, .start = 1500,
                                    .bytes = 3 * UMADV_MIB - 200 * UMADV_KIB + 10, .groups = 1};
    umadv_prof_attrib_stats_t st;
    umadv_prof_interval_t *iv;
    arrivals_t a = {{0}, {0}, 0};
    umadv_trace_t t;
    size_t niv;

    memset(&st, 0, sizeof(st));
    trace_fixture(&t);
    umadv__prof_attrib_kernels(&t, launches, 3, kernels, 3, &iv, &niv, &st);
    is(umadv__prof_attrib_arrivals(&t, iv, niv, faults, 4, arrival_add, &a), UMADV_OK,
       "arrivals found");
    ok(a.n == 4 && arrived(&a, 0, 0) && arrived(&a, 1, 1) && arrived(&a, 2, 2) &&
           arrived(&a, 0, UMADV_STEP_NONE),
       "a fault's page: the allocation alive at its step there; at no kernel's time, with no "
       "step (%zu)", a.n);
    a.n = 0;
    umadv__prof_attrib_arrivals(&t, iv, niv, &migration, 1, arrival_add, &a);
    ok(a.n == 2 && arrived(&a, 0, 0) && arrived(&a, 1, 0),
       "a migration: every allocation alive at its step that its bytes meet (%zu)", a.n);
    free(iv);
    umadv__trace_cleanup(&t);
}

/* ---- parameter scan --------------------------------------------------- */

typedef struct found {
    void  *base[16];
    size_t n;
} found_t;

static void found_add(void *arg, const umadv_pool_loc_t *loc)
{
    found_t *f = arg;

    if (f->n < 16)
        f->base[f->n++] = loc->base;
}

static int found_has(const found_t *f, void *base)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->base[i] == base)
            return 1;
    }
    return 0;
}

static void test_scan(void)
{
    umadv_pool_params_t pp = {&umadv__cuda_ops_host, SECTION, 4 * UMADV_MIB, 0};
    struct { void *p; int i; char pad[4]; void *q; } st;
    void *a, *b, *c, *d, *interior, *stack_ptr;
    uint64_t number = 12345;
    umadv_prof_region_t regions[5];
    umadv_pool_t *pool;
    found_t f = {{0}, 0};

    umadv__pool_create(&pp, &pool);
    umadv__pool_malloc(pool, 100000, &a);
    umadv__pool_malloc(pool, 300, &b);
    umadv__pool_malloc(pool, 2 * SECTION, &c);
    umadv__pool_malloc(pool, 1000, &d);
    umadv__pool_free(pool, d);  /* freed: no longer umadv memory */
    interior  = (char *)c + SECTION + 17;
    stack_ptr = &number;
    st.p = b;
    st.i = 3;
    st.q = a;  /* the same block twice: reported once */
    regions[0] = (umadv_prof_region_t){&interior, sizeof(interior)};
    regions[1] = (umadv_prof_region_t){&number, sizeof(number)};
    regions[2] = (umadv_prof_region_t){&st, sizeof(st)};
    regions[3] = (umadv_prof_region_t){&stack_ptr, sizeof(stack_ptr)};
    regions[4] = (umadv_prof_region_t){&d, sizeof(d)};
    is(umadv__prof_scan(pool, regions, 5, found_add, &f), 3, "three blocks found");
    ok(found_has(&f, c), "an interior pointer finds its block");
    ok(found_has(&f, a) && found_has(&f, b), "pointers inside a struct parameter");
    ok(!found_has(&f, d), "a freed block's pointer is ignored");
    umadv__pool_destroy(pool);
}

static const size_t fake_sizes[] = {8, 4, 24};

static umadv_status_t fake_param_info(const void *func, int driver, size_t index,
                                      size_t *offset_p, size_t *size_p)
{
    static const size_t offsets[] = {0, 8, 16};

    if (func != (const void *)0x1234 || index >= 3)
        return UMADV_ERR_NOT_FOUND;
    *offset_p = offsets[index];
    *size_p   = fake_sizes[index];
    return UMADV_OK;
}

static void test_launch_regions(void)
{
    umadv_cupti_ops_t ops = {.kernel_param_info = fake_param_info};
    uint64_t p0 = 1, p2[3] = {2, 3, 4};
    int p1 = 5;
    void *args[] = {&p0, &p1, p2};
    char buffer[40];
    size_t buffer_size = sizeof(buffer);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &buffer_size, CU_LAUNCH_PARAM_END};
    umadv_prof_region_t r[8];

    is(umadv__prof_launch_regions(&ops, (const void *)0x1234, 0, args, NULL, r, 8), 3,
       "one region per parameter the layout query knows");
    ok(r[0].data == &p0 && r[1].size == 4 && r[2].data == p2 && r[2].size == 24,
       "each region is the argument with its size");
    is(umadv__prof_launch_regions(&ops, (const void *)0x1234, 0, args, NULL, r, 2), 2,
       "no more than the room given");
    is(umadv__prof_launch_regions(&ops, (const void *)0x99, 1, args, NULL, r, 8), 0,
       "an unknown layout: nothing scanned");
    is(umadv__prof_launch_regions(&ops, (const void *)0x99, 1, NULL, extra, r, 8), 1,
       "the packed buffer of cuLaunchKernel's extra");
    ok(r[0].data == buffer && r[0].size == sizeof(buffer), "with its size");
}

/* The guessed parameter struct of a launch without a layout: the bytes
 * its first argument points at, as far as they are mapped; never a fault. */
static void test_guess_region(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char buf[UMADV_PROF_GUESS_BYTES];
    uint64_t words[4] = {1, 2, 3, 4};
    void *args[1] = {words}, *none[1] = {NULL};
    umadv_prof_region_t r = {NULL, 0};
    unsigned char *two;

    ok(umadv__prof_guess_region(args, buf, sizeof(buf), &r) == 1 && r.data == buf &&
           r.size == sizeof(buf) && memcmp(buf, words, sizeof(words)) == 0,
       "a struct on the stack: read into the buffer, as much as it holds");
    is(umadv__prof_guess_region(none, buf, sizeof(buf), &r), 0, "no first argument: no guess");
    is(umadv__prof_guess_region(NULL, buf, sizeof(buf), &r), 0, "no arguments: no guess");
    two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED || mprotect(two + page, page, PROT_NONE) != 0) {
        skip("cannot map a guard page", "a struct that ends where mapped memory does");
        skip("cannot map a guard page", "a first argument pointing at unmapped memory");
        return;
    }
    memcpy(two + page - 16, words, 16);
    args[0] = two + page - 16;
    ok(umadv__prof_guess_region(args, buf, sizeof(buf), &r) == 1 && r.size == 16 &&
           memcmp(buf, words, 16) == 0,
       "a struct that ends where mapped memory does: read up to the unmapped page, no fault");
    args[0] = two + page;
    is(umadv__prof_guess_region(args, buf, sizeof(buf), &r), 0,
       "a first argument pointing at unmapped memory: no guess, no fault");
    munmap(two, 2 * page);
}

/* ---- link model -------------------------------------------------------- */

/* 50 GB/s and 40 us per call; 10 GB/s and 400 us per call. */
static umadv_link_sample_t fit_sample(void)
{
    umadv_link_sample_t s = {
        .big_bytes = 256 * UMADV_MIB, .piece_bytes = 2 * UMADV_MIB, .pieces = 16,
        .fetch_big = 40e-6 + 256.0 * UMADV_MIB / 50e9,
        .fetch_pieces = 16 * (40e-6 + 2.0 * UMADV_MIB / 50e9),
        .evict_big = 400e-6 + 256.0 * UMADV_MIB / 10e9,
        .evict_pieces = 16 * (400e-6 + 2.0 * UMADV_MIB / 10e9),
    };

    return s;
}

static void test_link_fit(void)
{
    umadv_link_sample_t s = fit_sample();

    s.fault_bytes = 256 * UMADV_MIB; /* faults at 4 GB/s */
    s.fault = 256.0 * UMADV_MIB / 4e9;
    umadv_link_model_t link, before;

    umadv__link_model_default(&link);
    is(umadv__link_fit(&s, &link), UMADV_OK, "a plausible sample fits");
    is_near(link.fetch_bw, 50e9, 0.01, "fetch bandwidth");
    is_near(link.fetch_latency, 40e-6, 0.05, "fetch latency");
    is_near(link.evict_bw, 10e9, 0.01, "evict bandwidth");
    is_near(link.evict_latency, 400e-6, 0.05, "evict latency");
    is_near(link.fault_bw, 4e9, 1e-9, "demand paging bandwidth");
    umadv__link_model_default(&before);
    ok(link.remote_bw == before.remote_bw && link.fault_latency == before.fault_latency,
       "what was not measured keeps its value");
    s.evict_big = 1e-9; /* 268 TB/s: a broken timer */
    link = before;
    log_take();
    is(umadv__link_fit(&s, &link), UMADV_ERR_NOT_ENFORCED, "an absurd timing is refused");
    ok(link.evict_bw == before.evict_bw && link.fetch_bw != before.fetch_bw,
       "only the absurd direction keeps the default");
    ok(strstr(log_take(), "device-to-host prefetch timing not believable") != NULL,
       "and says so");
}

/* Both directions at once: the fetch keeps 20% of its rate until it
 * ends, the eviction 80% until then and all of it after. */
static void test_link_fit_duplex(void)
{
    umadv_link_sample_t s = fit_sample();
    double fetch_alone = 40e-6 + 128.0 * UMADV_MIB / 50e9;
    double evict_alone = 400e-6 + 128.0 * UMADV_MIB / 10e9;
    umadv_link_model_t link;

    umadv__link_model_default(&link);
    umadv__link_fit(&s, &link);
    ok(link.duplex_fetch_bw == 0 && link.duplex_evict_bw == 0,
       "no duplex sample: not measured (full overlap)");
    s.duplex_bytes = 128 * UMADV_MIB;
    s.duplex_fetch = fetch_alone / 0.2;
    s.duplex_evict = s.duplex_fetch + (evict_alone - 0.8 * s.duplex_fetch);
    umadv__link_fit(&s, &link);
    is_near(link.duplex_fetch_bw, 0.2 * link.fetch_bw, 1e-6, "the fetch's share while both run");
    is_near(link.duplex_evict_bw, 0.8 * link.evict_bw, 1e-6, "the eviction's, from its work left");
    s.duplex_evict = 0.5 * evict_alone; /* ended first, at twice its rate alone: noise */
    s.duplex_fetch = s.duplex_evict + 0.5 * fetch_alone;
    umadv__link_fit(&s, &link);
    ok(link.duplex_evict_bw == link.evict_bw, "a share above 1 is full overlap");
    is_near(link.duplex_fetch_bw, link.fetch_bw * 0.5 * fetch_alone / s.duplex_evict, 1e-6,
            "the other from its work left");
}

/* The staged channel: 45 GB/s + 30 us out, 40 GB/s + 60 us back. */
static void test_link_fit_stage(void)
{
    umadv_link_sample_t s = fit_sample();
    umadv_link_model_t link;

    umadv__link_model_default(&link);
    umadv__link_fit(&s, &link);
    ok(link.stage_evict_bw == 0 && link.stage_restore_bw == 0 && link.stage_evict_latency == 0,
       "no staged sample: not measured");
    s.stage_big_bytes = 64 * UMADV_MIB;
    s.stage_piece_bytes = 2 * UMADV_MIB;
    s.stage_pieces = 16;
    s.stage_out_big = 30e-6 + 64.0 * UMADV_MIB / 45e9;
    s.stage_out_pieces = 16 * (30e-6 + 2.0 * UMADV_MIB / 45e9);
    s.stage_in_big = 60e-6 + 64.0 * UMADV_MIB / 40e9;
    s.stage_in_pieces = 16 * (60e-6 + 2.0 * UMADV_MIB / 40e9);
    is(umadv__link_fit(&s, &link), UMADV_OK, "a staged sample fits");
    is_near(link.stage_evict_bw, 45e9, 1e-6, "staged eviction bandwidth");
    is_near(link.stage_evict_latency, 30e-6, 1e-6, "staged eviction latency");
    is_near(link.stage_restore_bw, 40e9, 1e-6, "restore bandwidth");
    is_near(link.stage_restore_latency, 60e-6, 1e-6, "restore latency");
    ok(link.stage_duplex_evict_bw == 0 && link.stage_duplex_restore_bw == 0,
       "no staged duplex sample: not measured (full overlap)");
    /* both at once, 32 MiB each way in 8 calls: the stage-out ends first
     * at 70% of its rate, the restore keeps 75% until then */
    s.stage_duplex_bytes = 32 * UMADV_MIB;
    s.stage_duplex_calls = 8;
    s.stage_duplex_out = (8 * 30e-6 + 32.0 * UMADV_MIB / 45e9) / 0.7;
    s.stage_duplex_in = s.stage_duplex_out +
                        (8 * 60e-6 + 32.0 * UMADV_MIB / 40e9 - 0.75 * s.stage_duplex_out);
    umadv__link_fit(&s, &link);
    is_near(link.stage_duplex_evict_bw, 0.7 * 45e9, 1e-6, "staged duplex: the stage-out's share");
    is_near(link.stage_duplex_restore_bw, 0.75 * 40e9, 1e-6,
            "staged duplex: the restore's, from its work left");
    ok(umadv__link_model_implausible(&link) == NULL, "the trace format takes them");
    s.stage_in_big = 1e-12; /* a broken timer */
    log_take();
    is(umadv__link_fit(&s, &link), UMADV_OK, "an absurd staged timing costs no status");
    ok(link.stage_restore_bw == 0 && link.stage_restore_latency == 0 &&
       link.stage_evict_bw > 0 && link.stage_duplex_restore_bw == 0 &&
       link.stage_duplex_evict_bw == 0,
       "only its figures are not measured, and the duplex ones that need them");
}

/* ---- the staged channel's probe on the host backend ------------------- */

static size_t count_calls(const umadv_cuda_host_record_t *log, size_t n, umadv_cuda_call_t call)
{
    size_t count = 0;

    for (size_t i = 0; i < n; i++)
        count += log[i].call == call;
    return count;
}

static int host_released(void)
{
    umadv_cuda_host_counters_t c;

    umadv__cuda_host_counters(&c);
    return c.managed_bytes == 0 && c.pinned_bytes == 0 && c.streams == 0;
}

/* Whether @ptr is device memory the log shows allocated. */
static int device_buffer(const umadv_cuda_host_record_t *log, size_t n, const void *ptr)
{
    for (size_t i = 0; i < n; i++) {
        if (log[i].call == UMADV_CUDA_CALL_DEVICE_ALLOC && log[i].ptr == ptr)
            return 1;
    }
    return 0;
}

/* Copies from @i on, in pairs: the first of each into the bounce buffer
 * (device memory) the first copy writes, the second out of it; where the
 * pairs through that buffer end. */
static size_t bounced_pairs(const umadv_cuda_host_record_t *log, size_t n, size_t i,
                            const void **bounce_p, int *ok_p)
{
    *bounce_p = i < n ? log[i].ptr : NULL;
    *ok_p &= *bounce_p != NULL && device_buffer(log, n, *bounce_p);
    while (i + 1 < n && log[i].call == UMADV_CUDA_CALL_MEMCPY && log[i].ptr == *bounce_p) {
        *ok_p &= log[i + 1].call == UMADV_CUDA_CALL_MEMCPY &&
                 !device_buffer(log, n, log[i + 1].ptr);
        i += 2;
    }
    return i;
}

/* Whether @r is a host's or a stream's wait, which the order below
 * passes over. */
static int is_wait(const umadv_cuda_host_record_t *r)
{
    return r->call == UMADV_CUDA_CALL_STREAM_SYNC || r->call == UMADV_CUDA_CALL_EVENT_SYNC ||
           r->call == UMADV_CUDA_CALL_STREAM_WAIT;
}

/* The first staged eviction: copies into pinned memory through a bounce
 * buffer, then the discard of the range; the first restore:
 * discard-and-prefetch to the GPU, then the copies back through the
 * other direction's bounce buffer, the first into the range's start.
 * @log: the calls without the waits (executor_order). */
static int executor_order_calls(const umadv_cuda_host_record_t *log, size_t n)
{
    const void *out_bounce, *in_bounce;
    size_t i = 0, back;
    int ok = 1;

    while (i < n && log[i].call != UMADV_CUDA_CALL_MEMCPY)
        i++;
    i = bounced_pairs(log, n, i, &out_bounce, &ok);
    if (i + 2 >= n || log[i].call != UMADV_CUDA_CALL_DISCARD ||
        log[i + 1].call != UMADV_CUDA_CALL_DISCARD_PREFETCH || log[i + 1].location != 0)
        return 0;
    back = i + 2;
    bounced_pairs(log, n, back, &in_bounce, &ok);
    return ok && in_bounce != out_bounce && back + 1 < n && log[back + 1].ptr == log[i].ptr;
}

/* executor_order_calls over @all less its waits (the host's and the
 * streams': their order is order_check.h's to judge). */
static int executor_order(const umadv_cuda_host_record_t *all, size_t nall)
{
    umadv_cuda_host_record_t *log = calloc(nall ? nall : 1, sizeof(*log));
    size_t n = 0;
    int ok;

    for (size_t k = 0; log != NULL && k < nall; k++)
        if (!is_wait(&all[k]))
            log[n++] = all[k];
    ok = log != NULL && executor_order_calls(log, n);
    free(log);
    return ok;
}

static void test_stage_probe_host(void)
{
    umadv_link_sample_t s;
    umadv_link_model_t link;
    const umadv_cuda_host_record_t *log;
    size_t n;

    memset(&s, 0, sizeof(s));
    umadv__cuda_host_reset();
    umadv__cuda_host_log_enable(1);
    is(umadv__link_probe_stage(&umadv__cuda_ops_host, 0, &s), UMADV_OK,
       "stage probe: runs on the host backend");
    log = umadv__cuda_host_log(&n);
    ok(s.stage_big_bytes == 64 * UMADV_MIB && s.stage_pieces == 16 && s.stage_out_big > 0 &&
       s.stage_in_big > 0 && s.stage_out_pieces > 0 && s.stage_in_pieces > 0,
       "stage probe: one 64 MiB call and 16 of 2 MiB, each way");
    ok(executor_order(log, n), "stage probe: the executor's calls, in its order, through a "
       "bounce buffer per direction");
    /* a warm round and 3 timed ones, each way per round: 17 calls one way
     * at a time, then 16 of 4 MiB (2 x 8: the half staged before, the half
     * staged during) */
    ok(count_calls(log, n, UMADV_CUDA_CALL_DISCARD) == 4 * (17 + 16) &&
       count_calls(log, n, UMADV_CUDA_CALL_DISCARD_PREFETCH) == 4 * (17 + 16) &&
       count_calls(log, n, UMADV_CUDA_CALL_HOST_ALLOC) == 1 &&
       count_calls(log, n, UMADV_CUDA_CALL_DEVICE_ALLOC) == 2,
       "stage probe: 4 rounds of 33 calls each way, one pinned buffer, two bounce buffers");
    ok(s.stage_duplex_bytes == 32 * UMADV_MIB && s.stage_duplex_calls == 8 &&
       s.stage_duplex_out > 0 && s.stage_duplex_in > 0,
       "stage probe: half the buffer each way at once, in 8 calls each");
    ok(host_released(), "stage probe: managed, pinned, device memory and streams released");
    umadv__link_model_default(&link);
    umadv__link_fit(&s, &link);
    ok(umadv__link_stage_evict_known(&link) && umadv__link_stage_restore_known(&link) &&
       umadv__link_model_implausible(&link) == NULL,
       "stage probe: host copies give plausible figures");
    umadv__cuda_host_log_enable(0);
}

/* A GPU with little free memory: never more than an eighth of it, and
 * nothing under 16 MiB. */
static void test_stage_probe_small(void)
{
    umadv_link_sample_t s;
    const umadv_cuda_host_record_t *log;
    umadv_cuda_host_counters_t c;
    umadv_log_level_t level;
    size_t n;

    memset(&s, 0, sizeof(s));
    umadv__cuda_host_reset();
    umadv__cuda_host_configure(100 * UMADV_MIB, 1);
    log_take();
    level = umadv__log_level;
    umadv__log_level = UMADV_LOG_DEBUG; /* "why" is a debug line */
    is(umadv__link_probe_stage(&umadv__cuda_ops_host, 0, &s), UMADV_ERR_UNSUPPORTED,
       "stage probe: 100 MiB free is too little");
    umadv__log_level = level;
    umadv__cuda_host_counters(&c);
    ok(c.mallocs == 0 && c.pinned_allocs == 0 && s.stage_out_big == 0,
       "stage probe: nothing allocated, nothing measured");
    ok(strstr(log_take(), "staged channel not measured") != NULL, "stage probe: logged why");
    umadv__cuda_host_reset();
    umadv__cuda_host_configure(200 * UMADV_MIB, 1);
    umadv__cuda_host_log_enable(1);
    is(umadv__link_probe_stage(&umadv__cuda_ops_host, 0, &s), UMADV_OK,
       "stage probe: 200 MiB free is enough");
    log = umadv__cuda_host_log(&n);
    ok(n > 0 && log[0].call == UMADV_CUDA_CALL_MALLOC && log[0].size <= 25 * UMADV_MIB &&
       s.stage_big_bytes == 24 * UMADV_MIB && s.stage_pieces == 12,
       "stage probe: an eighth of the free memory, in whole sections");
    umadv__cuda_host_log_enable(0);
    umadv__cuda_host_reset();
}

static umadv_status_t no_discard(void **ptrs, size_t *sizes, size_t count,
                                 umadv_stream_t stream)
{
    (void)ptrs, (void)sizes, (void)count, (void)stream;
    return UMADV_ERR_UNSUPPORTED;
}

/* A driver without discards: the figures stay unmeasured, the memory is
 * released. */
static void test_stage_probe_no_discard(void)
{
    umadv_cuda_ops_t ops = umadv__cuda_ops_host;
    umadv_log_level_t level;
    umadv_link_sample_t s;

    memset(&s, 0, sizeof(s));
    ops.discard_batch = no_discard;
    umadv__cuda_host_reset();
    log_take();
    level = umadv__log_level;
    umadv__log_level = UMADV_LOG_DEBUG;
    is(umadv__link_probe_stage(&ops, 0, &s), UMADV_ERR_UNSUPPORTED,
       "stage probe: no discard, no staged channel");
    umadv__log_level = level;
    ok(s.stage_out_big == 0 && s.stage_in_big == 0 && s.stage_out_pieces == 0 &&
       s.stage_in_pieces == 0, "stage probe: nothing measured");
    ok(host_released(), "stage probe: its memory released");
    ok(strstr(log_take(), "cudaMemDiscardBatchAsync") != NULL, "stage probe: the log says why");
}

/* ---- knobs ------------------------------------------------------------- */

static void test_knobs(void)
{
    umadv_config_t c;

    env_clear();
    is(umadv__config_load(&c), UMADV_OK, "defaults load");
    ok(c.profiler == 1 && c.profile_evict == 1 && c.link_probe == 1,
       "profiler, eviction at profiling and link probe default on");
    setenv("UMADV_PROFILE_EVICT", "off", 1);
    setenv("UMADV_LINK_PROBE", "0", 1);
    setenv("UMADV_PROFILER", "no", 1);
    is(umadv__config_load(&c), UMADV_OK, "switched off");
    ok(c.profiler == 0 && c.profile_evict == 0 && c.link_probe == 0, "all three read");
    setenv("UMADV_LINK_PROBE", "sometimes", 1);
    log_take();
    is(umadv__config_load(&c), UMADV_ERR_INVALID_PARAM, "a bad value is an error");
    ok(strstr(log_take(), "UMADV_LINK_PROBE=sometimes") != NULL, "naming the variable");
    env_clear();
}

int main(void)
{
    log_capture_start();
    plan(72 + 3 + 9 + 6 + 5 + 4 + 4 + 1 + 5);
    test_step_by_time();
    test_kernel_busy();
    test_alloc_at();
    test_attrib_and_merge();
    test_arrivals();
    test_scan();
    test_launch_regions();
    test_guess_region();
    test_link_fit();
    test_link_fit_duplex();
    test_link_fit_stage();
    test_stage_probe_host();
    test_stage_probe_small();
    test_stage_probe_no_discard();
    test_knobs();
    log_capture_stop();
    return exit_status();
}
