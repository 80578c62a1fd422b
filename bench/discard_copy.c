/*
 * discard_copy: what a copy into a discarded managed range leaves for the
 * GPU and for the CPU, made alone or after the range is populated
 * (issue 11); with --behind, what a discard queued behind unfinished work
 * on its stream leaves after a right restore.
 *
 * umadv restores a staged section by copying its bytes back from pinned
 * memory into the range it discarded. test_stage_gpu's poisoned plan
 * (H200, driver 580.159.04, 2026-11-29; 10 of 168 runs, twelve copies at
 * once) ended with a section that a synchronous restore had copied back
 * alone: a copy from it on the GPU right after read the restored bytes,
 * and the CPU's read at the end found an older version in every page.
 * Every restore now populates the range on the GPU first
 * (cudaMemDiscardAndPrefetchBatchAsync). This counts what each way leaves.
 *
 * --ranges ranges of --size bytes, in one managed allocation. For each
 * round and each way in turn: the CPU writes version 1 of a pattern into
 * the allocation (the host's copy of its pages), it goes to the GPU and a
 * kernel writes version 2, a memset fills it with 0xDB (--poison, as
 * UMADV_STAGE_POISON does), one cudaMemDiscardBatchAsync discards every
 * range, and each range gets version 3 from pinned memory by one
 * cudaMemcpyAsync: alone ("copy"), or after one
 * cudaMemDiscardAndPrefetchBatchAsync of the ranges to the GPU
 * ("populate+copy"); then a synchronisation. A kernel counts the words
 * that differ from version 3 on the GPU; then the CPU reads every page:
 * version 3 (right), or, by its first word, version 1 (the host's older
 * copy), version 2 (the GPU's older one), the poison, zeros, or other
 * bytes. With --trip the allocation first goes to the host and back by
 * cudaMemPrefetchAsync (a UVM eviction and fetch) and the GPU counts
 * again: whether a migration keeps what the copy wrote.
 *
 * With --behind US the ways compared are what the discard, or the
 * restore's population, is enqueued behind, every restore made the right
 * way. Once version 2 is written and its stream synchronised, a kernel
 * spinning about US microseconds (clock64, at the GPU's peak clock) is
 * enqueued on the discard's stream, then the --poison memset; the
 * discard follows right behind them ("behind": its stream still busy),
 * once the stream is synchronised ("idle"), or once it is synchronised
 * and a discard of half the ranges is enqueued before it
 * ("after-discard": umadv's discards in pieces). The discard's stream is
 * synchronised after it, and the ranges are restored on a stream of
 * their own (populated, copied into, synchronised), as umadv's lanes and
 * synchronous restores do; in "populate-behind" the discard's stream is
 * idle and the spin is enqueued before the population instead; in
 * "beside" the spin runs on the restore's stream while the discard is
 * made on its idle one (a lane's discard while the application's kernels
 * run). Measured
 * (H200, driver 580.159.04, 2026-11-29, six copies at once, --size 2M
 * --ranges 8 --rounds 250 --trip --behind 500): behind, the discard call
 * returns at once (11 us against 136 idle: the driver applies it later),
 * 454,692 of 6.1 million pages read the host's older copy on the CPU
 * and, after the trip, 7.4% of the words are wrong on the GPU; idle,
 * after-discard and populate-behind, none; beside (--rounds 150, the
 * next session), none either. So umadv's executor
 * synchronises a stream before every discard (src/exec/stage.c,
 * DISCARDS ON AN IDLE STREAM). Each row then also gives the mean time
 * of the discard call.
 *
 *   bench/discard_copy [--size BYTES] [--ranges N] [--rounds N] [--poison] [--trip]
 *                      [--behind US]
 *
 * Both failures above needed load: run several copies at once (as make
 * -j16 check runs the GPU tests). Exit status 0 once measured (what the
 * CPU found is reported, not judged), 77 without a GPU (or one without
 * concurrent managed access), 2 for a bad option.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "bench_gpu.h"
#include "evict_channels_kernels.h"
#include "common/util.h"

#define EXIT_USAGE 2
#define PAGE       4096
#define POISON     0xDB
#define MAX_RANGES 4096
#define MAX_BEHIND 1000000 /* microseconds: a second */

/* A run compares the restore ways (how the range is restored), or with
 * --behind the stream ways (what the discard, or the restore's
 * population, is enqueued behind). */
typedef enum way {
    COPY_ALONE, POPULATE_FIRST, RESTORE_WAYS_END,
    DISCARD_IDLE = RESTORE_WAYS_END, DISCARD_BEHIND, DISCARD_AFTER_DISCARD, POPULATE_BEHIND,
    DISCARD_BESIDE, WAYS
} way_t;

static const char *const way_names[WAYS] = {"copy", "populate+copy", "idle", "behind",
                                            "after-discard", "populate-behind", "beside"};

/* What a page the CPU read holds. */
typedef enum found { RIGHT, HOST_OLDER, GPU_OLDER, FOUND_POISON, ZEROS, OTHER, FOUNDS } found_t;

typedef struct bench {
    uint64_t            size, total; /* a range's bytes, the allocation's */
    size_t              nranges;
    int                 poison, trip;
    long                behind_us;   /* 0: the restore ways are compared */
    long long           behind_cycles;
    uint64_t           *alloc;       /* managed */
    uint64_t           *pinned;      /* version 3 of the whole allocation */
    unsigned long long *wrong_dev;   /* the GPU's count of words not version 3 */
    void              **ptrs;        /* the ranges */
    size_t             *sizes;
    cudaStream_t        stream;      /* the discard's */
    cudaStream_t        restore;     /* --behind's restores */
} bench_t;

typedef struct tally {
    uint64_t gpu_wrong_words, trip_wrong_words; /* before the trip, after it */
    uint64_t pages[FOUNDS];
    uint64_t discard_ns;                        /* the discard calls' host time */
} tally_t;

#define CHECK(fn, args) bench_cuda_check("discard_copy", fn args, #fn)

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "discard_copy: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: discard_copy [--size BYTES] [--ranges N] [--rounds N] "
                    "[--poison] [--trip] [--behind US]\n");
    exit(EXIT_USAGE);
}

static void pattern_write(uint64_t *p, uint64_t words, uint64_t seed)
{
    for (uint64_t i = 0; i < words; i++)
        p[i] = channels_pattern(i, seed);
}

static int uniform(const unsigned char *p, size_t n, unsigned char value)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != value)
            return 0;
    }
    return 1;
}

/* Page @pg of the allocation, as the CPU reads it; @seed is version 1's. */
static found_t page_found(const bench_t *b, uint64_t pg, uint64_t seed)
{
    const uint64_t words = PAGE / 8, first = pg * words;
    const uint64_t *p = b->alloc + first;

    if (memcmp(p, b->pinned + first, PAGE) == 0)
        return RIGHT;
    if (p[0] == channels_pattern(first, seed))
        return HOST_OLDER;
    if (p[0] == channels_pattern(first, seed + 1))
        return GPU_OLDER;
    if (uniform((const unsigned char *)p, PAGE, POISON))
        return FOUND_POISON;
    return uniform((const unsigned char *)p, PAGE, 0) ? ZEROS : OTHER;
}

/* The words of the allocation that differ from version @seed, counted on
 * the GPU. */
static uint64_t gpu_wrong_words(const bench_t *b, uint64_t seed)
{
    unsigned long long wrong = 0;

    CHECK(cudaMemsetAsync, (b->wrong_dev, 0, sizeof(*b->wrong_dev), b->stream));
    CHECK(channels_count_mismatches, (b->alloc, b->total / 8, seed, b->wrong_dev, b->stream));
    CHECK(cudaMemcpyAsync, (&wrong, b->wrong_dev, sizeof(wrong), cudaMemcpyDefault, b->stream));
    CHECK(cudaStreamSynchronize, (b->stream));
    return wrong;
}

/* Version @seed on the host's copy of the allocation's pages, @seed + 1
 * on the GPU's (written there by a kernel, on the discard's stream), and
 * @seed + 2 in pinned memory. */
static void versions_write(bench_t *b, uint64_t seed)
{
    struct cudaMemLocation gpu = {.type = cudaMemLocationTypeDevice, .id = 0};
    const uint64_t words = b->total / 8;

    pattern_write(b->alloc, words, seed);
    pattern_write(b->pinned, words, seed + 2);
    CHECK(cudaMemPrefetchAsync, (b->alloc, b->total, gpu, 0, b->stream));
    CHECK(channels_fill, (b->alloc, words, seed + 1, b->stream));
}

static void poison_if_asked(bench_t *b)
{
    if (b->poison)
        CHECK(cudaMemsetAsync, (b->alloc, POISON, b->total, b->stream));
}

/* Every range discarded on the discard's stream, the call timed: behind
 * work it returns before the driver has applied it. */
static void discard_timed(bench_t *b, tally_t *t)
{
    uint64_t start = umadv__now_ns();

    CHECK(cudaMemDiscardBatchAsync, (b->ptrs, b->sizes, b->nranges, 0, b->stream));
    t->discard_ns += umadv__now_ns() - start;
}

/* The ranges populated on the GPU, as every umadv restore does first. */
static void populate(bench_t *b, cudaStream_t stream)
{
    struct cudaMemLocation gpu = {.type = cudaMemLocationTypeDevice, .id = 0};
    size_t first = 0;

    CHECK(cudaMemDiscardAndPrefetchBatchAsync,
          (b->ptrs, b->sizes, b->nranges, &gpu, &first, 1, 0, stream));
}

/* Version 3 copied into every range, one cudaMemcpyAsync each. */
static void copies_back(bench_t *b, cudaStream_t stream)
{
    for (size_t r = 0; r < b->nranges; r++)
        CHECK(cudaMemcpyAsync, (b->ptrs[r], (char *)b->pinned + r * b->size, b->size,
                                cudaMemcpyDefault, stream));
}

/* The restore ways: everything on one stream, in order. */
static void restore_way(bench_t *b, way_t way, tally_t *t)
{
    poison_if_asked(b);
    discard_timed(b, t);
    if (way == POPULATE_FIRST)
        populate(b, b->stream);
    copies_back(b, b->stream);
    CHECK(cudaStreamSynchronize, (b->stream));
}

/* The --behind ways: the discard queued behind the spin (and the poison),
 * or on its stream synchronised; then restored right, on a stream of its
 * own once the discard's stream is synchronised. */
static void stream_way(bench_t *b, way_t way, tally_t *t)
{
    CHECK(cudaStreamSynchronize, (b->stream)); /* behind the spin alone, not the fill */
    /* beside: the spin runs on the other stream while the discard's is idle */
    CHECK(channels_spin, (b->behind_cycles, way == DISCARD_BESIDE ? b->restore : b->stream));
    poison_if_asked(b);
    if (way != DISCARD_BEHIND)
        CHECK(cudaStreamSynchronize, (b->stream));
    if (way == DISCARD_AFTER_DISCARD) /* umadv's discards in pieces: one behind another */
        CHECK(cudaMemDiscardBatchAsync, (b->ptrs, b->sizes, b->nranges / 2, 0, b->stream));
    discard_timed(b, t);
    CHECK(cudaStreamSynchronize, (b->stream));
    if (way == POPULATE_BEHIND) /* a restore queued behind its stream's work */
        CHECK(channels_spin, (b->behind_cycles, b->restore));
    populate(b, b->restore);
    copies_back(b, b->restore);
    CHECK(cudaStreamSynchronize, (b->restore));
}

/* What the GPU and then the CPU find where version @seed + 2 should be. */
static void round_check(bench_t *b, uint64_t seed, tally_t *t)
{
    struct cudaMemLocation gpu = {.type = cudaMemLocationTypeDevice, .id = 0};
    struct cudaMemLocation host = {.type = cudaMemLocationTypeHost};

    t->gpu_wrong_words += gpu_wrong_words(b, seed + 2);
    if (b->trip) {
        CHECK(cudaMemPrefetchAsync, (b->alloc, b->total, host, 0, b->stream));
        CHECK(cudaMemPrefetchAsync, (b->alloc, b->total, gpu, 0, b->stream));
        t->trip_wrong_words += gpu_wrong_words(b, seed + 2);
    }
    for (uint64_t pg = 0; pg < b->total / PAGE; pg++)
        t->pages[page_found(b, pg, seed)]++;
}

/* One round of @way, with versions @seed, @seed + 1 and @seed + 2. */
static void round_run(bench_t *b, way_t way, uint64_t seed, tally_t *t)
{
    versions_write(b, seed);
    if (way >= RESTORE_WAYS_END)
        stream_way(b, way, t);
    else
        restore_way(b, way, t);
    round_check(b, seed, t);
}

/* The spin's clocks for --behind's microseconds, at the GPU's peak clock
 * (kHz): under it the spin lasts longer, never shorter. */
static void behind_cycles_set(bench_t *b)
{
    int khz = 0;

    CHECK(cudaDeviceGetAttribute, (&khz, cudaDevAttrClockRate, 0));
    b->behind_cycles = (long long)b->behind_us * khz / 1000;
}

static void setup(bench_t *b)
{
    size_t free_b = 0, total_b = 0;

    bench_require_managed_gpu("discard_copy");
    CHECK(cudaMemGetInfo, (&free_b, &total_b));
    if (b->total > free_b / 4) {
        fprintf(stderr, "discard_copy: --size times --ranges is more than a quarter of the "
                        "free GPU memory\n");
        exit(EXIT_FAILURE);
    }
    b->ptrs = calloc(b->nranges, sizeof(*b->ptrs));
    b->sizes = calloc(b->nranges, sizeof(*b->sizes));
    if (b->ptrs == NULL || b->sizes == NULL) {
        fprintf(stderr, "discard_copy: out of memory\n");
        exit(EXIT_FAILURE);
    }
    CHECK(cudaMallocManaged, ((void **)&b->alloc, b->total, cudaMemAttachGlobal));
    CHECK(cudaMallocHost, ((void **)&b->pinned, b->total));
    CHECK(cudaMalloc, ((void **)&b->wrong_dev, sizeof(*b->wrong_dev)));
    CHECK(cudaStreamCreateWithFlags, (&b->stream, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags, (&b->restore, cudaStreamNonBlocking));
    for (size_t r = 0; r < b->nranges; r++) {
        b->ptrs[r] = (char *)b->alloc + r * b->size;
        b->sizes[r] = (size_t)b->size;
    }
    if (b->behind_us > 0)
        behind_cycles_set(b);
}

/* --behind's microseconds, all of @v a decimal number from 1 to MAX_BEHIND. */
static long behind_parse(const char *v)
{
    char *end = NULL;
    long us;

    errno = 0;
    us = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || us < 1 || us > MAX_BEHIND)
        usage_error("invalid --behind '%s' (microseconds, 1 to 1000000)", v);
    return us;
}

static void options_parse(int argc, char **argv, bench_t *b, int *rounds)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--poison") == 0 || strcmp(argv[i], "--trip") == 0) {
            *(argv[i][2] == 'p' ? &b->poison : &b->trip) = 1;
            continue;
        }
        if (strcmp(argv[i], "--size") == 0 && v != NULL) {
            if (umadv_size_parse(v, &b->size) != UMADV_OK || b->size == 0 || b->size % PAGE != 0)
                usage_error("invalid --size '%s' (bytes, a multiple of 4 KiB)", v);
        } else if (strcmp(argv[i], "--ranges") == 0 && v != NULL) {
            b->nranges = (size_t)atoi(v);
            if (b->nranges < 1 || b->nranges > MAX_RANGES)
                usage_error("invalid --ranges '%s' (1 to 4096)", v);
        } else if (strcmp(argv[i], "--rounds") == 0 && v != NULL) {
            *rounds = atoi(v);
            if (*rounds < 1 || *rounds > 10000)
                usage_error("invalid --rounds '%s' (1 to 10000)", v);
        } else if (strcmp(argv[i], "--behind") == 0 && v != NULL) {
            b->behind_us = behind_parse(v);
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
        i++;
    }
}

static void header_print(const bench_t *b, int rounds)
{
    struct cudaDeviceProp prop;
    int driver = 0;

    CHECK(cudaGetDeviceProperties, (&prop, 0));
    CHECK(cudaDriverGetVersion, (&driver));
    printf("discard_copy: %s, driver %d; %zu ranges of %.2f MiB, %d rounds, poison %s, "
           "trip %s", prop.name, driver, b->nranges, (double)b->size / 1048576.0, rounds,
           b->poison ? "on" : "off", b->trip ? "on" : "off");
    if (b->behind_us > 0)
        printf(", behind %ld us (%lld clocks)", b->behind_us, b->behind_cycles);
    printf("\n%-14s %7s %12s %12s %9s %9s %9s %9s %9s %9s", "way", "ranges", "GPU wrong",
           "after trip", "CPU right", "host old", "GPU old", "poison", "zeros", "other");
    if (b->behind_us > 0)
        printf(" %10s", "discard us");
    printf("\n");
}

static void row_print(way_t way, const bench_t *b, int rounds, const tally_t *t)
{
    printf("%-14s %7zu %12llu %12llu %9llu %9llu %9llu %9llu %9llu %9llu", way_names[way],
           b->nranges * (size_t)rounds, (unsigned long long)t->gpu_wrong_words,
           (unsigned long long)t->trip_wrong_words,
           (unsigned long long)t->pages[RIGHT], (unsigned long long)t->pages[HOST_OLDER],
           (unsigned long long)t->pages[GPU_OLDER], (unsigned long long)t->pages[FOUND_POISON],
           (unsigned long long)t->pages[ZEROS], (unsigned long long)t->pages[OTHER]);
    if (b->behind_us > 0)
        printf(" %10.1f", (double)t->discard_ns / 1e3 / rounds);
    printf("\n");
}

int main(int argc, char **argv)
{
    bench_t b = {.size = UINT64_C(2) << 20, .nranges = 64};
    tally_t tallies[WAYS] = {{0}};
    int rounds = 20;
    way_t first, end;

    options_parse(argc, argv, &b, &rounds);
    b.total = b.size * b.nranges;
    first = b.behind_us > 0 ? RESTORE_WAYS_END : COPY_ALONE;
    end = b.behind_us > 0 ? WAYS : RESTORE_WAYS_END;
    setup(&b);
    for (int r = 0; r < rounds; r++) {
        for (way_t w = first; w < end; w++)
            round_run(&b, w, (uint64_t)(r * WAYS + w) * 3 + 1, &tallies[w]);
    }
    header_print(&b, rounds);
    for (way_t w = first; w < end; w++)
        row_print(w, &b, rounds, &tallies[w]);
    return 0;
}
