/*
 * The managed-memory pool over the host backend: alignment, best fit,
 * coalescing, arenas returned, the UMADV_MAX_MANAGED guard, address
 * lookups, randomized sequences checked against a reference model, and a
 * backend that returns misaligned or no memory.
 */
#include "pool/pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)
#define ARENA   UMADV_MIB

static umadv_pool_t *pool_new(uint64_t arena, uint64_t max_managed,
                              const umadv_cuda_ops_t *ops)
{
    umadv_pool_params_t params = {
        .ops = ops, .section_size = SECTION, .arena_size = arena, .max_managed = max_managed,
    };
    umadv_pool_t *pool = NULL;

    if (umadv__pool_create(&params, &pool) != UMADV_OK)
        abort();
    return pool;
}

static umadv_pool_stats_t stats_of(const umadv_pool_t *pool)
{
    umadv_pool_stats_t s;

    umadv__pool_get_stats(pool, &s);
    return s;
}

static uint64_t round_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

/* The span the pool must give a request: the rule pool.h states. */
static uint64_t expected_span(uint64_t size)
{
    return size >= SECTION ? round_up(size, SECTION) : round_up(size, UMADV_POOL_ALIGN);
}

static void test_basics(void)
{
    umadv_pool_t *pool = pool_new(ARENA, 0, &umadv__cuda_ops_host);
    void *small, *exact, *big, *other, *arena;
    umadv_pool_loc_t loc;
    int local;

    is(umadv__pool_malloc(pool, 0, &small), UMADV_ERR_INVALID_PARAM, "size 0 refused");
    is(umadv__pool_malloc(pool, 100, &small), UMADV_OK, "small block");
    ok((uintptr_t)small % UMADV_POOL_ALIGN == 0, "small block 256-byte aligned");
    is(umadv__pool_malloc_user(pool, SECTION, 42, &exact, &arena), UMADV_OK,
       "one-section block, with a user value");
    ok((uintptr_t)exact % SECTION == 0, "section-sized block section aligned");
    is(umadv__pool_malloc(pool, 100 * UMADV_KIB, &big), UMADV_OK, "1.6-section block");
    ok((uintptr_t)big % SECTION == 0, "larger block section aligned");

    is(umadv__pool_lookup(pool, (char *)big + 70 * UMADV_KIB, &loc), UMADV_OK,
       "interior address found");
    ok(loc.base == big && loc.size == 100 * UMADV_KIB && loc.span == 2 * SECTION &&
       loc.offset == 70 * UMADV_KIB && loc.section == 1 && loc.nsections == 2,
       "lookup gives block, size, span, offset, section 1 of 2");
    is(umadv__pool_lookup(pool, (char *)big + 2 * SECTION - 1, &loc), UMADV_OK,
       "the block owns its rounding");
    is(umadv__pool_lookup(pool, &local, &loc), UMADV_ERR_NOT_FOUND, "stack address not found");
    is(umadv__pool_lookup(pool, NULL, &loc), UMADV_ERR_NOT_FOUND, "NULL not found");
    is(umadv__pool_free(pool, (char *)big + 8), UMADV_ERR_NOT_FOUND,
       "free of an interior pointer refused");
    umadv__pool_lookup(pool, (char *)exact + 5, &loc);
    is_u64(loc.user, 42, "user value read back by lookup");
    ok(loc.arena_base == arena, "the arena its allocation reported is the one a lookup finds");
    is(umadv__pool_free(pool, exact), UMADV_OK, "free");
    is(umadv__pool_lookup(pool, exact, &loc), UMADV_ERR_NOT_FOUND, "freed block not found");
    is(umadv__pool_free(pool, exact), UMADV_ERR_NOT_FOUND, "double free refused");
    is(umadv__pool_malloc(pool, SECTION, &other), UMADV_OK, "same size again");
    ok(other == exact, "freed memory reused for the same size");
    umadv__pool_destroy(pool);
}

static void test_coalescing(void)
{
    umadv_pool_t *pool = pool_new(ARENA, 0, &umadv__cuda_ops_host);
    void *a, *b, *c, *ab, *blocks[5];
    umadv_pool_stats_t s;
    uint64_t free_before;

    umadv__pool_malloc(pool, 4 * SECTION, &a);
    umadv__pool_malloc(pool, 4 * SECTION, &b);
    umadv__pool_malloc(pool, 4 * SECTION, &c);
    ok((char *)b == (char *)a + 4 * SECTION && (char *)c == (char *)b + 4 * SECTION,
       "consecutive blocks of one arena are adjacent");
    free_before = stats_of(pool).free_blocks;
    umadv__pool_free(pool, b);
    umadv__pool_free(pool, a);
    is_u64(stats_of(pool).free_blocks, free_before + 1, "freed neighbours merged into one");
    is(umadv__pool_malloc(pool, 8 * SECTION, &ab), UMADV_OK, "malloc the merged size");
    ok(ab == a, "merged neighbours hold a block their joint size");
    umadv__pool_free(pool, ab);
    umadv__pool_free(pool, c);
    s = stats_of(pool);
    ok(s.arenas == 1 && s.free_blocks == 1 && s.blocks == 0 && s.bytes_in_use == 0,
       "all freed: one arena, one free block (arenas %u, free blocks %llu)", s.arenas,
       (unsigned long long)s.free_blocks);

    for (int i = 0; i < 5; i++)
        umadv__pool_malloc(pool, 900 * UMADV_KIB, &blocks[i]);
    is(stats_of(pool).arenas, 5, "five 900K blocks take five 1M arenas");
    for (int i = 0; i < 5; i++)
        umadv__pool_free(pool, blocks[i]);
    s = stats_of(pool);
    ok(s.arenas == 5 && s.arena_bytes == 5 * ARENA, "emptied arenas are kept (%u)", s.arenas);
    is_u64(s.arena_peak, 5 * ARENA, "arena peak remembered");
    for (int i = 0; i < 5; i++)
        umadv__pool_malloc(pool, 900 * UMADV_KIB, &blocks[i]);
    s = stats_of(pool);
    ok(s.arenas == 5 && s.arena_peak == 5 * ARENA,
       "an iteration that fills them again maps nothing new (arenas %u)", s.arenas);
    for (int i = 0; i < 5; i++)
        umadv__pool_free(pool, blocks[i]);
    umadv__pool_malloc(pool, 3 * ARENA, &a);
    umadv__pool_free(pool, a);
    s = stats_of(pool);
    ok(s.arenas == 6 && s.arena_bytes == 8 * ARENA, "an oversize arena is kept too");
    is(umadv__pool_malloc(pool, 2 * ARENA, &a), UMADV_OK, "2M from the kept oversize arena");
    ok(stats_of(pool).arenas == 6, "carved from a kept arena, none added");
    umadv__pool_free(pool, a);
    umadv__pool_destroy(pool);
}

static void test_limit(void)
{
    umadv_pool_t *pool = pool_new(ARENA, 2 * ARENA, &umadv__cuda_ops_host);
    umadv_pool_stats_t before, s;
    void *a, *b, *c, *four[4];
    const char *log;

    log_take();
    is(umadv__pool_malloc(pool, ARENA, &a), UMADV_OK, "1M under a 2M limit");
    umadv__pool_free(pool, a);
    is(stats_of(pool).arena_bytes, ARENA, "emptied arena kept");
    is(umadv__pool_malloc(pool, 3 * ARENA / 2, &a), UMADV_OK,
       "1.5M fits once the kept empty arena is returned");
    s = stats_of(pool);
    ok(s.arenas == 1 && s.arena_bytes == 3 * ARENA / 2, "only the new arena is held");
    before = stats_of(pool);
    is(umadv__pool_malloc(pool, 600 * UMADV_KIB, &b), UMADV_ERR_LIMIT,
       "600K beyond the limit refused");
    s = stats_of(pool);
    ok(memcmp(&before, &s, sizeof(s)) == 0, "a refused malloc changes nothing");
    log = log_take();
    ok(strstr(log, "UMADV_MAX_MANAGED=2.00 MiB") != NULL && strstr(log, "request of 600.00 KiB") != NULL &&
       strstr(log, "held now: 1.50 MiB") != NULL,
       "limit error names request, limit and what is held");
    is(umadv__pool_malloc(pool, 256 * UMADV_KIB, &c), UMADV_OK,
       "a request that fits the remaining room succeeds");
    s = stats_of(pool);
    ok(s.arena_bytes <= 2 * ARENA && s.arena_peak <= 2 * ARENA,
       "held memory never exceeded the limit (%llu)", (unsigned long long)s.arena_peak);
    umadv__pool_destroy(pool);

    /* Four kept empty arenas under a 4M limit: a 2.5M request returns as
     * many of them as its room needs, and keeps the rest. */
    pool = pool_new(ARENA, 4 * ARENA, &umadv__cuda_ops_host);
    for (int i = 0; i < 4; i++)
        umadv__pool_malloc(pool, 900 * UMADV_KIB, &four[i]);
    for (int i = 0; i < 4; i++)
        umadv__pool_free(pool, four[i]);
    is(umadv__pool_malloc(pool, 5 * ARENA / 2, &a), UMADV_OK, "2.5M under a 4M limit held by kept arenas");
    s = stats_of(pool);
    ok(s.arenas == 2 && s.arena_bytes == 7 * ARENA / 2,
       "three kept arenas returned for its room, one kept (%u arenas, %llu bytes)", s.arenas,
       (unsigned long long)s.arena_bytes);
    umadv__pool_destroy(pool);
}

typedef struct live {
    char    *ptr;
    uint64_t size;
    uint8_t  tag;
} live_t;

static void fill(const live_t *l)
{
    l->ptr[0] = (char)l->tag;
    l->ptr[l->size / 2] = (char)l->tag;
    l->ptr[l->size - 1] = (char)l->tag;
}

static int intact(const live_t *l)
{
    return l->ptr[0] == (char)l->tag && l->ptr[l->size / 2] == (char)l->tag &&
           l->ptr[l->size - 1] == (char)l->tag;
}

static int overlaps_any(const live_t *live, size_t n, const live_t *x)
{
    for (size_t i = 0; i < n; i++) {
        if (x->ptr < live[i].ptr + expected_span(live[i].size) &&
            live[i].ptr < x->ptr + expected_span(x->size))
            return 1;
    }
    return 0;
}

static uint64_t random_size(void)
{
    /* log-uniform from 1 byte to 4 sections */
    double e = (double)random() / RAND_MAX * 18.0;
    return 1 + (uint64_t)(1u << (int)e) + (uint64_t)random() % (1u << (int)e);
}

/* A random address in @l's arena; returns what lookup must answer. */
static const live_t *expected_owner(const live_t *live, size_t n, const char *addr)
{
    for (size_t i = 0; i < n; i++) {
        if (addr >= live[i].ptr && addr < live[i].ptr + expected_span(live[i].size))
            return &live[i];
    }
    return NULL;
}

static int check_lookups(umadv_pool_t *pool, const live_t *live, size_t n)
{
    umadv_pool_loc_t loc;

    for (int k = 0; k < 200 && n > 0; k++) {
        const live_t *l = &live[(size_t)random() % n];
        uint64_t off = (uint64_t)random() % l->size;
        const live_t *want;
        const char *addr;

        if (umadv__pool_lookup(pool, l->ptr + off, &loc) != UMADV_OK ||
            loc.base != l->ptr || loc.size != l->size || loc.section != off / SECTION ||
            loc.span != expected_span(l->size))
            return 0;
        addr = (char *)loc.arena_base + (uint64_t)random() % loc.arena_size;
        want = expected_owner(live, n, addr);
        if (want == NULL ? umadv__pool_lookup(pool, addr, &loc) != UMADV_ERR_NOT_FOUND
                         : umadv__pool_lookup(pool, addr, &loc) != UMADV_OK ||
                               loc.base != want->ptr)
            return 0;
    }
    return 1;
}

static void test_random(void)
{
    umadv_pool_t *pool = pool_new(ARENA, 0, &umadv__cuda_ops_host);
    live_t *live = calloc(4096, sizeof(*live));
    size_t n = 0;
    int aligned = 1, disjoint = 1, kept = 1, lookups = 1, accounted = 1;
    uint64_t in_use = 0;
    umadv_pool_stats_t s;

    srandom(12345);
    for (int op = 0; op < 30000; op++) {
        if (n < 4096 && (n == 0 || random() % 100 < (op < 20000 ? 55 : 30))) {
            live_t l = {.size = random_size(), .tag = (uint8_t)op};
            if (umadv__pool_malloc(pool, l.size, (void **)&l.ptr) != UMADV_OK)
                break;
            uint64_t align = l.size >= SECTION ? SECTION : UMADV_POOL_ALIGN;
            aligned &= (uintptr_t)l.ptr % align == 0;
            disjoint &= !overlaps_any(live, n, &l);
            fill(&l);
            live[n++] = l;
            in_use += l.size;
        } else {
            size_t i = (size_t)random() % n;
            kept &= intact(&live[i]);
            in_use -= live[i].size;
            umadv__pool_free(pool, live[i].ptr);
            live[i] = live[--n];
        }
        if (op % 1000 == 0) {
            lookups &= check_lookups(pool, live, n);
            s = stats_of(pool);
            accounted &= s.bytes_in_use == in_use && s.blocks == n;
        }
    }
    ok(aligned, "30000 random ops: every block aligned");
    ok(disjoint, "no block overlaps a live one");
    ok(kept, "every block kept its contents until freed");
    ok(lookups, "interior and random arena addresses resolve as the model says");
    ok(accounted, "bytes in use and block count match the model");
    while (n > 0)
        umadv__pool_free(pool, live[--n].ptr);
    s = stats_of(pool);
    ok(s.free_blocks == s.arenas && s.bytes_in_use == 0 && s.span_in_use == 0,
       "everything freed: each kept arena one whole free block (%u arenas, %llu free blocks)",
       s.arenas, (unsigned long long)s.free_blocks);
    umadv__pool_destroy(pool);
    free(live);
}

static void test_many(void)
{
    enum { N = 100000 };
    umadv_pool_t *pool = pool_new(64 * ARENA, 0, &umadv__cuda_ops_host);
    void **ptrs = malloc(N * sizeof(*ptrs));
    uint64_t t0 = umadv__now_ns(), t_malloc, t_lookup;
    int all_ok = 1;
    umadv_pool_loc_t loc;

    for (int i = 0; i < N; i++)
        all_ok &= umadv__pool_malloc(pool, 64 + (uint64_t)(i % 4000), &ptrs[i]) == UMADV_OK;
    t_malloc = umadv__now_ns();
    for (int i = 0; i < N; i++)
        all_ok &= umadv__pool_lookup(pool, (char *)ptrs[i] + 63, &loc) == UMADV_OK &&
                  loc.base == ptrs[i];
    t_lookup = umadv__now_ns();
    for (int i = 0; i < N; i++) {
        int j = (int)(random() % N);
        void *tmp = ptrs[i];
        ptrs[i] = ptrs[j];
        ptrs[j] = tmp;
    }
    for (int i = 0; i < N; i++)
        all_ok &= umadv__pool_free(pool, ptrs[i]) == UMADV_OK;
    diag("100k blocks: malloc %.0f ns, lookup %.0f ns, free %.0f ns each",
         (double)(t_malloc - t0) / N, (double)(t_lookup - t_malloc) / N,
         (double)(umadv__now_ns() - t_lookup) / N);
    ok(all_ok, "100k blocks allocated, looked up and freed in random order");
    ok(umadv__now_ns() - t0 < 5000000000ull, "in under 5 s");
    is(stats_of(pool).free_blocks, stats_of(pool).arenas,
       "all coalesced back into one free block per arena");
    umadv__pool_destroy(pool);
    free(ptrs);
}

/* ---- a backend that misaligns, or fails ------------------------------ */

static umadv_cuda_ops_t odd_ops;
static int odd_fail;
static void *odd_raw[16];
static char *odd_given[16];
static size_t odd_n;

static umadv_status_t odd_malloc(size_t size, size_t align, void **ptr_p)
{
    void *raw;
    umadv_status_t status;

    if (odd_fail)
        return UMADV_ERR_CUDA;
    status = umadv__cuda_ops_host.malloc_managed(size + 4096, align, &raw);
    if (status != UMADV_OK)
        return status;
    odd_raw[odd_n] = raw;
    odd_given[odd_n] = (char *)raw + 4096; /* page aligned, not section aligned */
    *ptr_p = odd_given[odd_n++];
    return UMADV_OK;
}

static umadv_status_t odd_free(void *ptr, size_t size)
{
    for (size_t i = 0; i < odd_n; i++) {
        if (odd_given[i] == ptr) {
            odd_given[i] = NULL;
            return umadv__cuda_ops_host.free(odd_raw[i], size + 4096);
        }
    }
    return UMADV_ERR_CUDA;
}

static void test_odd_backend(void)
{
    umadv_pool_t *pool;
    umadv_cuda_host_counters_t before, after;
    umadv_pool_stats_t s0, s1;
    void *a, *b;

    odd_ops = umadv__cuda_ops_host;
    odd_ops.name = "odd";
    odd_ops.malloc_managed = odd_malloc;
    odd_ops.free = odd_free;
    umadv__cuda_host_counters(&before);
    pool = pool_new(ARENA, 0, &odd_ops);
    is(umadv__pool_malloc(pool, ARENA, &a), UMADV_OK, "arena-sized block from a misaligning backend");
    ok((uintptr_t)a % SECTION == 0, "still section aligned");
    memset(a, 1, ARENA);
    ok(odd_n == 2, "the short first arena was retried one section larger (%zu calls)", odd_n);
    is(umadv__pool_malloc(pool, 100, &b), UMADV_OK, "small block");
    s0 = stats_of(pool);
    odd_fail = 1;
    is(umadv__pool_malloc(pool, 2 * ARENA, &b), UMADV_ERR_CUDA, "backend failure returned");
    s1 = stats_of(pool);
    ok(memcmp(&s0, &s1, sizeof(s0)) == 0, "a failed arena leaves the pool as it was");
    odd_fail = 0;
    umadv__pool_destroy(pool);
    umadv__cuda_host_counters(&after);
    ok(after.managed_bytes == before.managed_bytes && after.mallocs - before.mallocs ==
       after.frees - before.frees, "destroy returned every arena to the backend");
}

/* Whether every section [@lo, @hi) touches is marked (an empty range: no). */
static int marked(const umadv_pool_t *pool, const char *lo, const char *hi)
{
    uintptr_t end;

    return lo < hi && umadv__pool_unmarked(pool, (uintptr_t)lo, (uintptr_t)hi, &end) ==
                          (uintptr_t)hi;
}

/* SECTION MARKS: set on the sections a range covers whole, cleared on
 * those it touches; the runs of a range whose sections are unmarked;
 * across two arenas; none outside them. */
static void test_marks(void)
{
    umadv_pool_t *pool = pool_new(4 * SECTION, 0, &umadv__cuda_ops_host);
    uintptr_t run, end;
    char *a, *b;

    umadv__pool_malloc(pool, 4 * SECTION, (void **)&a); /* fills its arena */
    umadv__pool_malloc(pool, 4 * SECTION, (void **)&b); /* another */
    ok(!marked(pool, a, a + SECTION), "a new arena's sections unmarked");
    umadv__pool_mark(pool, (uintptr_t)a + SECTION / 2, (uintptr_t)a + 3 * SECTION, 1);
    ok(marked(pool, a + SECTION, a + 3 * SECTION) && !marked(pool, a, a + SECTION) &&
           !marked(pool, a + 2 * SECTION, a + 3 * SECTION + 1),
       "set: sections 1 and 2, covered whole; not 0, half covered; asked: every section "
       "touched");
    run = umadv__pool_unmarked(pool, (uintptr_t)a + 100, (uintptr_t)a + 4 * SECTION - 100, &end);
    ok(run == (uintptr_t)a + 100 && end == (uintptr_t)a + SECTION,
       "the first unmarked run: section 0, clipped to the range");
    run = umadv__pool_unmarked(pool, end, (uintptr_t)a + 4 * SECTION - 100, &end);
    ok(run == (uintptr_t)a + 3 * SECTION && end == (uintptr_t)a + 4 * SECTION - 100,
       "the next: past the marked 1 and 2, section 3 to the range's end");
    ok(umadv__pool_unmarked(pool, (uintptr_t)a + SECTION + 5, (uintptr_t)a + 3 * SECTION,
                            &end) == (uintptr_t)a + 3 * SECTION &&
           end == (uintptr_t)a + 3 * SECTION,
       "none in a range within marked sections: its end");
    umadv__pool_mark(pool, (uintptr_t)a + 2 * SECTION + 100, (uintptr_t)a + 2 * SECTION + 200, 0);
    ok(marked(pool, a + SECTION, a + 2 * SECTION) &&
           !marked(pool, a + 2 * SECTION, a + 2 * SECTION + 1),
       "cleared: section 2, touched by 100 bytes; 1 stays");
    umadv__pool_mark(pool, (uintptr_t)a, (uintptr_t)a + 4 * SECTION, 1);
    umadv__pool_mark(pool, (uintptr_t)b, (uintptr_t)b + 4 * SECTION, 1);
    ok(marked(pool, b + SECTION, b + 2 * SECTION + 1) && !marked(pool, b, b) &&
           !marked(pool, (char *)&pool, (char *)&pool + 8),
       "a second arena's own marks; an empty range, an address in no arena: unmarked");
    umadv__pool_marks_clear(pool);
    ok(!marked(pool, a + SECTION, a + 2 * SECTION) && !marked(pool, b + SECTION, b + 2 * SECTION),
       "all cleared");
    umadv__pool_destroy(pool);
}

int main(void)
{
    log_capture_start();
    plan(58 + 1 + 8);
    test_marks();
    test_basics();
    test_coalescing();
    test_limit();
    test_random();
    test_many();
    test_odd_backend();
    log_capture_stop();
    return exit_status();
}
