/*
 * evict_channels: every way umadv could move a managed range off the GPU
 * and back, measured side by side in one process on one buffer (issue 11).
 * Eviction by cudaMemPrefetchAsync to the host runs at 10-18 GB/s while a
 * cudaMemcpyAsync from GPU-resident managed memory to pinned memory runs at
 * ~52 GB/s (DESIGN.md, "Measured envelope"); a staged channel (copy out to
 * pinned staging, then discard the range) could evict 3-5x faster, if
 * restoring the discarded range is cheap too. This measures it.
 *
 * One managed buffer (--size, default 4 GiB, never more than a quarter of
 * the free GPU memory) and a pinned staging buffer of the same size. Every
 * channel moves the whole buffer in calls of --call bytes (a list: one row
 * per call size), best of --repeat, after a warm-up pass over every
 * channel (DESIGN.md: the first eviction into fresh host memory is slow).
 * Rows (GB/s of the bytes the channel moved, wall clock around the issuing
 * calls and a stream synchronise; cudaEvent times go to the JSON too):
 *
 *   uvm-evict          cudaMemPrefetchAsync to the host, one call a piece
 *   uvm-fetch          cudaMemPrefetchAsync back to the GPU (data of uvm-evict)
 *   uvm-evict-batch    one cudaMemPrefetchBatchAsync of every piece to the host
 *   uvm-fetch-batch    the same back to the GPU
 *   staged-evict       cudaMemcpyAsync managed->pinned, a piece a call, then one
 *                      cudaMemDiscardBatchAsync of the pieces (phases: copy, discard);
 *                      it runs before each restore: best of 3 x --repeat
 *   restore-dp         from the staged state: cudaMemDiscardAndPrefetchBatchAsync
 *                      to the GPU, then cudaMemcpyAsync pinned->managed
 *   restore-prefetch   cudaMemPrefetchAsync to the GPU, then the copy
 *   restore-copy       the copy alone into the discarded range
 *   duplex-staged-out  staged eviction of the first half while the second half
 *   duplex-staged-in   is restored (the faster of restore-dp and restore-prefetch),
 *   duplex-staged-both two host threads, two streams; -both: both halves / wall
 *   duplex-uvm-*       the same with prefetches both ways
 *
 * Integrity: every round fills the buffer on the GPU with a pattern unique
 * to the round and checks it on the GPU after the round (the check
 * kernel's time shows whether the data came back resident); staged-evict
 * also checks its staging buffer on the host. A row whose data came back
 * wrong reads FAILED, a row whose CUDA call failed ERROR; either makes the
 * exit status 1. Before the table, a probe reports what the driver says
 * is free around a UVM eviction and a discard, and whether a discarded
 * range still reads its old bytes.
 *
 *   bench/evict_channels [--size BYTES] [--call LIST] [--repeat N] [--json FILE]
 *
 * Exit status 77 without a GPU (or one without concurrent managed access),
 * 2 for a bad option.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "common/outfile.h"
#include "common/util.h"
#include "evict_channels_kernels.h"

#define EXIT_SKIP    77
#define EXIT_USAGE   2
#define MAX_CALLS    8
#define MAX_REPEAT   100
#define MAX_PHASES   2
#define CHECK_THREADS 8
#define ALIGN_2M     (UINT64_C(2) << 20)

typedef struct opts {
    uint64_t    size;
    uint64_t    calls[MAX_CALLS];
    int         ncalls;
    int         repeat;
    const char *json;
} opts_t;

/* One channel's calls: the pieces of a range, as the batch calls take them. */
typedef struct ranges {
    void  **ptrs;
    size_t *sizes;
    size_t  count;
} ranges_t;

typedef enum op {
    OP_PREFETCH_HOST,
    OP_PREFETCH_DEVICE,
    OP_BATCH_HOST,
    OP_BATCH_DEVICE,
    OP_COPY_OUT,
    OP_COPY_IN,
    OP_DISCARD,
    OP_DISCARD_PREFETCH_DEVICE,
} op_t;

static const char *const op_names[] = {"prefetch", "prefetch", "prefetch-batch", "prefetch-batch",
                                       "copy",     "copy",     "discard",        "discard-prefetch"};

typedef enum channel_id {
    CH_UVM_EVICT,
    CH_UVM_FETCH,
    CH_UVM_EVICT_BATCH,
    CH_UVM_FETCH_BATCH,
    CH_STAGED_EVICT,
    CH_RESTORE_DP,
    CH_RESTORE_PREFETCH,
    CH_RESTORE_COPY,
    CH_DUPLEX_STAGED_OUT,
    CH_DUPLEX_STAGED_IN,
    CH_DUPLEX_STAGED_BOTH,
    CH_DUPLEX_UVM_OUT,
    CH_DUPLEX_UVM_IN,
    CH_DUPLEX_UVM_BOTH,
    CH_COUNT
} channel_id_t;

typedef struct channel {
    const char *name;
    op_t        ops[MAX_PHASES];
    int         nops;      /* 0: a -both row, timed around the two lanes */
    int         own_check; /* checks its own result (the staging buffer) */
} channel_t;

static const channel_t channels[CH_COUNT] = {
    [CH_UVM_EVICT] = {"uvm-evict", {OP_PREFETCH_HOST}, 1, 0},
    [CH_UVM_FETCH] = {"uvm-fetch", {OP_PREFETCH_DEVICE}, 1, 0},
    [CH_UVM_EVICT_BATCH] = {"uvm-evict-batch", {OP_BATCH_HOST}, 1, 0},
    [CH_UVM_FETCH_BATCH] = {"uvm-fetch-batch", {OP_BATCH_DEVICE}, 1, 0},
    [CH_STAGED_EVICT] = {"staged-evict", {OP_COPY_OUT, OP_DISCARD}, 2, 1},
    [CH_RESTORE_DP] = {"restore-dp", {OP_DISCARD_PREFETCH_DEVICE, OP_COPY_IN}, 2, 0},
    [CH_RESTORE_PREFETCH] = {"restore-prefetch", {OP_PREFETCH_DEVICE, OP_COPY_IN}, 2, 0},
    [CH_RESTORE_COPY] = {"restore-copy", {OP_COPY_IN}, 1, 0},
    [CH_DUPLEX_STAGED_OUT] = {"duplex-staged-out", {OP_COPY_OUT, OP_DISCARD}, 2, 0},
    [CH_DUPLEX_STAGED_IN] = {"duplex-staged-in", {OP_COPY_IN}, 1, 0}, /* ops: the chosen restore */
    [CH_DUPLEX_STAGED_BOTH] = {"duplex-staged-both", {OP_COPY_IN}, 0, 0},
    [CH_DUPLEX_UVM_OUT] = {"duplex-uvm-out", {OP_PREFETCH_HOST}, 1, 0},
    [CH_DUPLEX_UVM_IN] = {"duplex-uvm-in", {OP_PREFETCH_DEVICE}, 1, 0},
    [CH_DUPLEX_UVM_BOTH] = {"duplex-uvm-both", {OP_PREFETCH_HOST}, 0, 0},
};

/* One timed run of a channel: wall clock per phase, and the stream's events. */
typedef struct sample {
    double phase_s[MAX_PHASES];
    double total_s, event_s;
} sample_t;

typedef struct row {
    uint64_t     bytes;
    sample_t     best;
    double       samples_s[MAX_REPEAT];
    int          nsamples;
    double       check_ms; /* the check after the best sample */
    uint64_t     mismatches;
    channel_id_t restore; /* duplex-staged: the restore its in-lane ran */
    char         error[256];
} row_t;

typedef struct bench {
    char              *buf, *staging;
    uint64_t           size, half;
    cudaStream_t       stream[2]; /* [1]: the second lane of a duplex round */
    cudaEvent_t        ev[2][2];  /* per stream: start, end */
    unsigned long long *count_dev;
    uint64_t           seed;
    double             resident_check_ms;
} bench_t;

/* A duplex lane: one channel on its own host thread and stream, since a
 * prefetch blocks the thread that issues it (DESIGN.md). */
typedef struct lane {
    bench_t           *b;
    const channel_t   *ch;
    const ranges_t    *r;
    int                s;
    pthread_barrier_t *go;
    uint64_t           start_ns, end_ns;
    sample_t           sample;
    int                rc;
    char               error[256];
} lane_t;

typedef struct probe {
    uint64_t free_resident, free_uvm_evicted;
    uint64_t free_staged, free_discard_wait, free_discard_read;
    uint64_t words, words_kept;
    double   discarded_check_ms;
    int      rc;
    char     error[256]; /* the call that failed, when rc != 0 */
} probe_t;

static _Thread_local char last_error[256];
static umadv_outfile_t json_out;
static int json_open;

static void die(const char *what)
{
    fprintf(stderr, "evict_channels: %s\n", what);
    if (json_open)
        umadv__outfile_discard(&json_out);
    exit(EXIT_FAILURE);
}

/* Logs a failed call by name and keeps it for the row it spoils. */
static int cuda_ok(cudaError_t err, const char *call)
{
    if (err == cudaSuccess)
        return 1;
    snprintf(last_error, sizeof last_error, "%s: %s", call, cudaGetErrorString(err));
    fprintf(stderr, "evict_channels: %s\n", last_error);
    return 0;
}
#define CUDA_OK(fn, args) cuda_ok(fn args, #fn)

/* ------------------------------------------------------------ options */

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "evict_channels: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: evict_channels [--size BYTES] [--call LIST] [--repeat N] "
                    "[--json FILE]\n");
    exit(EXIT_USAGE);
}

static uint64_t parse_size(const char *text)
{
    uint64_t v;

    if (umadv_size_parse(text, &v) != UMADV_OK || v == 0)
        usage_error("invalid size '%s'", text);
    return v;
}

/* Calls must be whole CPU pages: the driver rounds a discard out to
 * pages, and a piece's rounding must not reach into a range kept. */
static void parse_calls(opts_t *o, const char *text)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    char item[64];

    o->ncalls = 0;
    for (const char *p = text; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof item || o->ncalls == MAX_CALLS)
            usage_error("invalid --call '%s': up to 8 sizes, comma-separated", text);
        memcpy(item, p, n);
        item[n] = '\0';
        o->calls[o->ncalls] = parse_size(item);
        if (o->calls[o->ncalls] % page != 0)
            usage_error("--call %s is not a whole number of CPU pages", item);
        o->ncalls++;
        p += n + (p[n] == ',');
    }
    if (o->ncalls == 0)
        usage_error("invalid --call '%s'", text);
}

static int parse_repeat(const char *text)
{
    char *end;
    long n = strtol(text, &end, 10);

    if (end == text || *end != '\0' || n < 1 || n > MAX_REPEAT)
        usage_error("invalid --repeat '%s': 1 to 100", text);
    return (int)n;
}

static void opts_parse(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.size = UINT64_C(4) << 30,
                  .calls = {ALIGN_2M, UINT64_C(64) << 20, UINT64_C(1) << 30},
                  .ncalls = 3, .repeat = 3};
    for (int i = 1; i < argc; i += 2) {
        const char *v = argv[i + 1];
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: evict_channels [--size BYTES] [--call LIST] [--repeat N] "
                   "[--json FILE]\n(see the comment at the top of bench/evict_channels.c)\n");
            exit(EXIT_SUCCESS);
        }
        if (i + 1 >= argc)
            usage_error("%s takes a value", argv[i]);
        if (strcmp(argv[i], "--size") == 0)
            o->size = parse_size(v);
        else if (strcmp(argv[i], "--call") == 0)
            parse_calls(o, v);
        else if (strcmp(argv[i], "--repeat") == 0)
            o->repeat = parse_repeat(v);
        else if (strcmp(argv[i], "--json") == 0)
            o->json = v;
        else
            usage_error("unknown option '%s'", argv[i]);
    }
}

/* ------------------------------------------------------------ issuing */

static struct cudaMemLocation location(int host)
{
    struct cudaMemLocation loc = {0};

    loc.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    loc.id = 0; /* device 0; ignored for the host */
    return loc;
}

/* @len bytes from @base in pieces of @call: the calls umadv would issue. */
static void ranges_build(ranges_t *r, char *base, uint64_t len, uint64_t call)
{
    r->count = (size_t)((len + call - 1) / call);
    r->ptrs = calloc(r->count, sizeof *r->ptrs);
    r->sizes = calloc(r->count, sizeof *r->sizes);
    if (r->ptrs == NULL || r->sizes == NULL)
        die("out of memory");
    for (size_t i = 0; i < r->count; i++) {
        uint64_t off = (uint64_t)i * call;
        r->ptrs[i] = base + off;
        r->sizes[i] = (size_t)UMADV_MIN(call, len - off);
    }
}

static void ranges_free(ranges_t *r)
{
    free(r->ptrs);
    free(r->sizes);
}

static void *staging_of(const bench_t *b, const void *p)
{
    return b->staging + ((const char *)p - b->buf);
}

/* One piece a call: the path the executor takes today. */
static int enqueue_prefetch(const ranges_t *r, int host, cudaStream_t s)
{
    for (size_t i = 0; i < r->count; i++) {
        if (!CUDA_OK(cudaMemPrefetchAsync, (r->ptrs[i], r->sizes[i], location(host), 0, s)))
            return -1;
    }
    return 0;
}

static int enqueue_copy(const bench_t *b, const ranges_t *r, int out, cudaStream_t s)
{
    for (size_t i = 0; i < r->count; i++) {
        void *managed = r->ptrs[i], *pinned = staging_of(b, managed);
        if (!CUDA_OK(cudaMemcpyAsync, (out ? pinned : managed, out ? managed : pinned,
                                       r->sizes[i], cudaMemcpyDefault, s)))
            return -1;
    }
    return 0;
}

static int op_enqueue(const bench_t *b, op_t op, const ranges_t *r, cudaStream_t s)
{
    struct cudaMemLocation host = location(1), dev = location(0);
    size_t first = 0; /* one location for every piece */

    switch (op) {
    case OP_PREFETCH_HOST:
        return enqueue_prefetch(r, 1, s);
    case OP_PREFETCH_DEVICE:
        return enqueue_prefetch(r, 0, s);
    case OP_BATCH_HOST:
        return CUDA_OK(cudaMemPrefetchBatchAsync,
                       (r->ptrs, r->sizes, r->count, &host, &first, 1, 0, s)) ? 0 : -1;
    case OP_BATCH_DEVICE:
        return CUDA_OK(cudaMemPrefetchBatchAsync,
                       (r->ptrs, r->sizes, r->count, &dev, &first, 1, 0, s)) ? 0 : -1;
    case OP_COPY_OUT:
        return enqueue_copy(b, r, 1, s);
    case OP_COPY_IN:
        return enqueue_copy(b, r, 0, s);
    case OP_DISCARD:
        return CUDA_OK(cudaMemDiscardBatchAsync, (r->ptrs, r->sizes, r->count, 0, s)) ? 0 : -1;
    case OP_DISCARD_PREFETCH_DEVICE:
        return CUDA_OK(cudaMemDiscardAndPrefetchBatchAsync,
                       (r->ptrs, r->sizes, r->count, &dev, &first, 1, 0, s)) ? 0 : -1;
    }
    return -1;
}

/* Each phase issued and drained before the next starts, so the wall clock
 * splits the channel into its phases; the events bracket the whole. */
static int channel_run(bench_t *b, const channel_t *ch, const ranges_t *r, int si,
                       sample_t *out)
{
    cudaStream_t s = b->stream[si];
    float ms = 0;

    *out = (sample_t){{0}, 0, 0};
    if (!CUDA_OK(cudaEventRecord, (b->ev[si][0], s)))
        return -1;
    for (int i = 0; i < ch->nops; i++) {
        uint64_t t0 = umadv__now_ns();
        if (op_enqueue(b, ch->ops[i], r, s) != 0 || !CUDA_OK(cudaStreamSynchronize, (s)))
            return -1;
        out->phase_s[i] = (double)(umadv__now_ns() - t0) / 1e9;
        out->total_s += out->phase_s[i];
    }
    if (!CUDA_OK(cudaEventRecord, (b->ev[si][1], s)) || !CUDA_OK(cudaStreamSynchronize, (s)) ||
        !CUDA_OK(cudaEventElapsedTime, (&ms, b->ev[si][0], b->ev[si][1])))
        return -1;
    out->event_s = ms / 1e3;
    return 0;
}

/* ------------------------------------------------------------ checking */

/* Fresh pattern, resident on the GPU: every round starts from here, so a
 * round that failed half-way (work maybe left on either stream) spoils no
 * other. */
static int round_prepare(bench_t *b)
{
    cudaStream_t s = b->stream[0];

    b->seed++;
    if (!CUDA_OK(cudaDeviceSynchronize, ()) ||
        !CUDA_OK(cudaMemPrefetchAsync, (b->buf, b->size, location(0), 0, s)))
        return -1;
    if (!cuda_ok((cudaError_t)channels_fill((uint64_t *)b->buf, b->size / 8, b->seed, s),
                 "channels_fill"))
        return -1;
    return CUDA_OK(cudaStreamSynchronize, (s)) ? 0 : -1;
}

/* Words of the whole buffer that differ from this round's pattern,
 * counted on the GPU; @ms: the kernel's time, slow when the data is not
 * resident (it faults it in). */
static int gpu_check(bench_t *b, uint64_t *mismatches, double *ms)
{
    cudaStream_t s = b->stream[0];
    unsigned long long count = 0;
    float t = 0;

    if (!CUDA_OK(cudaMemsetAsync, (b->count_dev, 0, sizeof count, s)) ||
        !CUDA_OK(cudaEventRecord, (b->ev[0][0], s)))
        return -1;
    if (!cuda_ok((cudaError_t)channels_count_mismatches((const uint64_t *)b->buf, b->size / 8,
                                                        b->seed, b->count_dev, s),
                 "channels_count_mismatches") ||
        !CUDA_OK(cudaEventRecord, (b->ev[0][1], s)) ||
        !CUDA_OK(cudaMemcpyAsync, (&count, b->count_dev, sizeof count, cudaMemcpyDeviceToHost, s)) ||
        !CUDA_OK(cudaStreamSynchronize, (s)) ||
        !CUDA_OK(cudaEventElapsedTime, (&t, b->ev[0][0], b->ev[0][1])))
        return -1;
    *mismatches = count;
    *ms = t;
    return 0;
}

typedef struct host_check {
    const uint64_t *words;
    uint64_t        first, n, seed, bad;
} host_check_t;

static void *host_check_main(void *arg)
{
    host_check_t *c = arg;

    for (uint64_t i = c->first; i < c->first + c->n; i++)
        c->bad += c->words[i] != channels_pattern(i, c->seed);
    return NULL;
}

/* Words of the staging buffer over [@off, @off + @len) that differ from
 * the pattern: what a staged eviction copied out, checked apart from its
 * restore. A few threads, or 4 GiB would take seconds a round. */
static uint64_t staging_mismatches(const bench_t *b, uint64_t off, uint64_t len)
{
    pthread_t tid[CHECK_THREADS];
    host_check_t job[CHECK_THREADS];
    uint64_t first = off / 8, n = len / 8, share = (n + CHECK_THREADS - 1) / CHECK_THREADS;
    uint64_t bad = 0;

    for (int t = 0; t < CHECK_THREADS; t++) {
        uint64_t lo = UMADV_MIN((uint64_t)t * share, n);
        job[t] = (host_check_t){(const uint64_t *)b->staging, first + lo,
                                UMADV_MIN(share, n - lo), b->seed, 0};
        if (pthread_create(&tid[t], NULL, host_check_main, &job[t]) != 0)
            die("pthread_create failed");
    }
    for (int t = 0; t < CHECK_THREADS; t++) {
        pthread_join(tid[t], NULL);
        bad += job[t].bad;
    }
    return bad;
}

/* ------------------------------------------------------------ rounds */

static void row_error(row_t *row)
{
    if (row->error[0] == '\0')
        snprintf(row->error, sizeof row->error, "%s", last_error);
}

/* 1 when @s is the row's best sample so far. */
static int row_add(row_t *row, const sample_t *s)
{
    int best = row->nsamples == 0 || s->total_s < row->best.total_s;

    if (row->nsamples < MAX_REPEAT)
        row->samples_s[row->nsamples] = s->total_s;
    row->nsamples++;
    if (best)
        row->best = *s;
    return best;
}

/* The round's check, charged to every row given: the check cannot tell an
 * eviction from the fetch after it. A row whose best sample came from this
 * round keeps the check's time (a slow check: the data came back elsewhere). */
static void round_check(bench_t *b, row_t *const *rows, const int *new_best, int n)
{
    uint64_t bad = 0;
    double ms = 0;

    if (gpu_check(b, &bad, &ms) != 0) {
        for (int i = 0; i < n; i++)
            row_error(rows[i]);
        return;
    }
    for (int i = 0; i < n; i++) {
        rows[i]->mismatches += bad;
        if (new_best[i])
            rows[i]->check_ms = ms;
    }
}

/* One round of channels run one after the other over the whole buffer:
 * an eviction, then what brings the data back. A channel that checks its
 * own result (staged-evict, its staging buffer) is not charged the
 * round's check. */
static void round_serial(bench_t *b, const ranges_t *whole, row_t *rows, const channel_id_t *ids,
                         int n)
{
    row_t *charged[2];
    int new_best[2], ncharged = 0;
    sample_t s;

    if (round_prepare(b) != 0) {
        for (int i = 0; i < n; i++)
            row_error(&rows[ids[i]]);
        return;
    }
    for (int i = 0; i < n; i++) {
        const channel_t *ch = &channels[ids[i]];
        row_t *row = &rows[ids[i]];
        if (channel_run(b, ch, whole, 0, &s) != 0) {
            row_error(row);
            for (int j = i + 1; j < n; j++) {
                if (rows[ids[j]].error[0] == '\0')
                    snprintf(rows[ids[j]].error, sizeof rows[ids[j]].error,
                             "not run: %s failed", ch->name);
            }
            return; /* the data's state is unknown: no check; the next round refills */
        }
        int best = row_add(row, &s);
        if (ch->own_check) {
            row->mismatches += staging_mismatches(b, 0, b->size);
            continue;
        }
        charged[ncharged] = row;
        new_best[ncharged++] = best;
    }
    round_check(b, charged, new_best, ncharged);
}

static void *lane_main(void *arg)
{
    lane_t *l = arg;

    l->rc = CUDA_OK(cudaSetDevice, (0)) ? 0 : -1;
    pthread_barrier_wait(l->go);
    l->start_ns = umadv__now_ns();
    if (l->rc == 0)
        l->rc = channel_run(l->b, l->ch, l->r, l->s, &l->sample);
    l->end_ns = umadv__now_ns();
    if (l->rc != 0)
        snprintf(l->error, sizeof l->error, "%s", last_error);
    return NULL;
}

/* Starts the two lanes together and waits for both. */
static void lanes_start(lane_t *lane)
{
    pthread_barrier_t go;
    pthread_t tid[2];

    if (pthread_barrier_init(&go, NULL, 2) != 0)
        die("pthread_barrier_init failed");
    for (int i = 0; i < 2; i++) {
        lane[i].go = &go;
        if (pthread_create(&tid[i], NULL, lane_main, &lane[i]) != 0)
            die("pthread_create failed");
    }
    for (int i = 0; i < 2; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&go);
}

/* The lanes' samples into rows[0] (out) and rows[1] (in), both halves
 * over the wall time from the first start to the last end into rows[2]
 * (no event brackets two streams: its event time is the longer lane's);
 * -1 when a lane failed (every row gets its error). */
static int lanes_record(const lane_t *lane, row_t *const *rows, int *new_best)
{
    sample_t both = {{0}, 0, 0};

    if (lane[0].rc != 0 || lane[1].rc != 0) {
        for (int i = 0; i < 3; i++) {
            if (rows[i]->error[0] == '\0')
                snprintf(rows[i]->error, sizeof rows[i]->error, "%s",
                         lane[lane[0].rc != 0 ? 0 : 1].error);
        }
        return -1;
    }
    both.total_s = (double)(UMADV_MAX(lane[0].end_ns, lane[1].end_ns) -
                            UMADV_MIN(lane[0].start_ns, lane[1].start_ns)) / 1e9;
    both.event_s = UMADV_MAX(lane[0].sample.event_s, lane[1].sample.event_s);
    new_best[0] = row_add(rows[0], &lane[0].sample);
    new_best[1] = row_add(rows[1], &lane[1].sample);
    new_best[2] = row_add(rows[2], &both);
    return 0;
}

/* Duplex round: the second half is moved away by @out beforehand
 * (untimed); then the first half leaves by @out while the second comes
 * back by @in, each on its own thread and stream; then the first half is
 * brought back by @in (untimed) and the whole buffer checked. @rows: the
 * out, in and both rows. */
static void round_duplex(bench_t *b, const ranges_t *lo, const ranges_t *hi,
                         const channel_t *out, const channel_t *in, row_t *const *rows)
{
    lane_t lane[2] = {{.b = b, .ch = out, .r = lo, .s = 0}, {.b = b, .ch = in, .r = hi, .s = 1}};
    int new_best[3];
    sample_t s;

    if (round_prepare(b) != 0 || channel_run(b, out, hi, 0, &s) != 0) {
        for (int i = 0; i < 3; i++)
            row_error(rows[i]);
        return;
    }
    lanes_start(lane);
    if (lanes_record(lane, rows, new_best) != 0)
        return;
    if (channel_run(b, in, lo, 0, &s) != 0) {
        for (int i = 0; i < 3; i++)
            row_error(rows[i]);
        return;
    }
    round_check(b, rows, new_best, 3);
}

/* ------------------------------------------------------------ per call size */

static int row_ok(const row_t *row)
{
    return row->nsamples > 0 && row->error[0] == '\0' && row->mismatches == 0;
}

/* The restore a staged eviction would pair with: the faster of the two
 * that re-populate before copying, among those that kept the data. */
static channel_id_t restore_choose(const row_t *rows)
{
    channel_id_t best = CH_COUNT;
    const channel_id_t cand[2] = {CH_RESTORE_DP, CH_RESTORE_PREFETCH};

    for (int i = 0; i < 2; i++) {
        if (row_ok(&rows[cand[i]]) &&
            (best == CH_COUNT || rows[cand[i]].best.total_s < rows[best].best.total_s))
            best = cand[i];
    }
    return best;
}

static void duplex_staged(bench_t *b, const ranges_t *lo, const ranges_t *hi, row_t *rows)
{
    row_t *r3[3] = {&rows[CH_DUPLEX_STAGED_OUT], &rows[CH_DUPLEX_STAGED_IN],
                    &rows[CH_DUPLEX_STAGED_BOTH]};
    channel_id_t choice = restore_choose(rows);

    for (int i = 0; i < 3; i++)
        r3[i]->restore = choice;
    if (choice == CH_COUNT) {
        for (int i = 0; i < 3; i++)
            snprintf(r3[i]->error, sizeof r3[i]->error,
                     "not run: neither restore-dp nor restore-prefetch passed");
        return;
    }
    round_duplex(b, lo, hi, &channels[CH_DUPLEX_STAGED_OUT], &channels[choice], r3);
}

static void duplex_uvm(bench_t *b, const ranges_t *lo, const ranges_t *hi, row_t *rows)
{
    row_t *r3[3] = {&rows[CH_DUPLEX_UVM_OUT], &rows[CH_DUPLEX_UVM_IN], &rows[CH_DUPLEX_UVM_BOTH]};

    round_duplex(b, lo, hi, &channels[CH_DUPLEX_UVM_OUT], &channels[CH_DUPLEX_UVM_IN], r3);
}

/* Every channel in calls of @call, best of @repeat, rounds interleaved so
 * that drift spreads over all rows alike. */
static void measure_call(bench_t *b, uint64_t call, int repeat, row_t *rows)
{
    static const channel_id_t uvm[2] = {CH_UVM_EVICT, CH_UVM_FETCH};
    static const channel_id_t batch[2] = {CH_UVM_EVICT_BATCH, CH_UVM_FETCH_BATCH};
    static const channel_id_t restores[3] = {CH_RESTORE_DP, CH_RESTORE_PREFETCH, CH_RESTORE_COPY};
    ranges_t whole, lo, hi;

    ranges_build(&whole, b->buf, b->size, call);
    ranges_build(&lo, b->buf, b->half, call);
    ranges_build(&hi, b->buf + b->half, b->size - b->half, call);
    for (int c = 0; c < CH_COUNT; c++)
        rows[c] = (row_t){.bytes = b->size, .restore = CH_COUNT};
    rows[CH_DUPLEX_STAGED_OUT].bytes = rows[CH_DUPLEX_UVM_OUT].bytes = b->half;
    rows[CH_DUPLEX_STAGED_IN].bytes = rows[CH_DUPLEX_UVM_IN].bytes = b->size - b->half;
    for (int r = 0; r < repeat; r++) {
        round_serial(b, &whole, rows, uvm, 2);
        round_serial(b, &whole, rows, batch, 2);
        for (int i = 0; i < 3; i++)
            round_serial(b, &whole, rows, (channel_id_t[]){CH_STAGED_EVICT, restores[i]}, 2);
    }
    for (int r = 0; r < repeat; r++) {
        duplex_staged(b, &lo, &hi, rows);
        duplex_uvm(b, &lo, &hi, rows);
    }
    ranges_free(&whole);
    ranges_free(&lo);
    ranges_free(&hi);
}

/* ------------------------------------------------------------ the probe */

static uint64_t free_now(void)
{
    size_t free_b = 0, total_b = 0;

    return CUDA_OK(cudaMemGetInfo, (&free_b, &total_b)) ? free_b : 0;
}

/* What the driver reports free around a UVM eviction and a staged one,
 * and whether a discarded range still reads its bytes (DESIGN.md: the
 * driver reclaims discarded pages only when it needs room). Reading the
 * discarded range is allowed (indeterminate values) and re-populates it. */
static void discard_probe(bench_t *b, uint64_t call, probe_t *p)
{
    const channel_t *evict = &channels[CH_UVM_EVICT], *staged = &channels[CH_STAGED_EVICT];
    ranges_t whole;
    uint64_t bad = 0;
    sample_t s;

    ranges_build(&whole, b->buf, b->size, call);
    p->words = b->size / 8;
    p->rc = round_prepare(b);
    p->free_resident = free_now();
    if (p->rc == 0)
        p->rc = channel_run(b, evict, &whole, 0, &s);
    p->free_uvm_evicted = free_now();
    if (p->rc == 0)
        p->rc = round_prepare(b);
    if (p->rc == 0)
        p->rc = channel_run(b, staged, &whole, 0, &s);
    p->free_staged = free_now();
    sleep(1); /* a lazy reclaim gets a second to show */
    p->free_discard_wait = free_now();
    if (p->rc == 0)
        p->rc = gpu_check(b, &bad, &p->discarded_check_ms);
    p->words_kept = p->words - bad;
    p->free_discard_read = free_now();
    if (p->rc != 0)
        snprintf(p->error, sizeof p->error, "%s", last_error);
    ranges_free(&whole);
}

static void probe_print(const probe_t *p)
{
    const double gib = (double)(UINT64_C(1) << 30);

    if (p->rc != 0) {
        printf("probe: failed (%s)\n", p->error);
        return;
    }
    printf("probe: free GPU memory %.2f GiB resident, %.2f GiB after uvm-evict\n",
           (double)p->free_resident / gib, (double)p->free_uvm_evicted / gib);
    printf("probe: free GPU memory %.2f GiB after staged-evict (discard), %.2f GiB 1 s later, "
           "%.2f GiB after reading the discarded range\n",
           (double)p->free_staged / gib, (double)p->free_discard_wait / gib,
           (double)p->free_discard_read / gib);
    printf("probe: the discarded range still read its old bytes in %llu of %llu words "
           "(check kernel %.2f ms)\n",
           (unsigned long long)p->words_kept, (unsigned long long)p->words,
           p->discarded_check_ms);
}

/* ------------------------------------------------------------ reporting */

typedef struct report {
    const opts_t *o;
    const bench_t *b;
    row_t (*rows)[CH_COUNT];
    row_t warm[CH_COUNT]; /* the untimed warm-up pass, in calls of warm_call */
    uint64_t warm_call;
    const probe_t *probe;
    char device[256];
    int driver, runtime;
    uint64_t free_start, total;
} report_t;

static const char *row_status(const row_t *row)
{
    if (row->error[0] != '\0')
        return "ERROR";
    if (row->mismatches != 0)
        return "FAILED";
    return row->nsamples > 0 ? "ok" : "-";
}

static double row_gbps(const row_t *row)
{
    return row->nsamples > 0 && row->best.total_s > 0 ? (double)row->bytes / row->best.total_s / 1e9
                                                         : 0;
}

/* The channel whose phases a row ran: duplex-staged-in runs a restore. */
static const channel_t *row_channel(const row_t *row, channel_id_t id)
{
    return id == CH_DUPLEX_STAGED_IN && row->restore != CH_COUNT ? &channels[row->restore]
                                                                   : &channels[id];
}

static const char *call_text(uint64_t call, char *buf, size_t len)
{
    if (call % (UINT64_C(1) << 30) == 0)
        snprintf(buf, len, "%llu GiB", (unsigned long long)(call >> 30));
    else if (call % (UINT64_C(1) << 20) == 0)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(call >> 20));
    else
        snprintf(buf, len, "%llu KiB", (unsigned long long)(call >> 10));
    return buf;
}

/* Copies in GB/s, the rest (prefetches and discards of discarded ranges
 * move nothing, or nothing we know the size of) in ms. */
static void row_detail(const row_t *row, channel_id_t id, char *buf, size_t len)
{
    const channel_t *ch = row_channel(row, id);
    size_t used = 0;

    buf[0] = '\0';
    if (row->error[0] != '\0') {
        snprintf(buf, len, "%s", row->error);
        return;
    }
    if (id == CH_DUPLEX_STAGED_IN && row->restore != CH_COUNT)
        used += (size_t)snprintf(buf + used, len - used, "via %s: ", ch->name);
    for (int i = 0; i < ch->nops && row->nsamples > 0 && used < len; i++) {
        double s = row->best.phase_s[i];
        int copy = ch->ops[i] == OP_COPY_OUT || ch->ops[i] == OP_COPY_IN;
        used += (size_t)(copy ? snprintf(buf + used, len - used, "%s %.2f GB/s, ", op_names[ch->ops[i]],
                                         s > 0 ? (double)row->bytes / s / 1e9 : 0)
                              : snprintf(buf + used, len - used, "%s %.3f ms, ", op_names[ch->ops[i]],
                                         s * 1e3));
    }
    if (row->mismatches != 0 && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%llu words wrong, ",
                                 (unsigned long long)row->mismatches);
    if (row->check_ms > 0 && used < len)
        snprintf(buf + used, len - used, "check %.2f ms", row->check_ms);
    else if (used >= 2 && used < len)
        buf[used - 2] = '\0';
}

static void table_print(const report_t *rp)
{
    char call[32], detail[320];

    printf("\nevict_channels: %s, %.2f GiB managed, best of %d; x uvm-evict: against "
           "uvm-evict at the same call size; check: the GPU check after the best sample "
           "(%.2f ms when resident)\n",
           rp->device, (double)rp->b->size / (1 << 30), rp->o->repeat, rp->b->resident_check_ms);
    printf("%-19s %8s %9s %11s %-7s %s\n", "channel", "call", "GB/s", "x uvm-evict", "status",
           "detail");
    for (int c = 0; c < rp->o->ncalls; c++) {
        double base = row_gbps(&rp->rows[c][CH_UVM_EVICT]);
        for (int id = 0; id < CH_COUNT; id++) {
            const row_t *row = &rp->rows[c][id];
            double gbps = row_gbps(row);
            row_detail(row, (channel_id_t)id, detail, sizeof detail);
            printf("%-19s %8s %9.2f %11.2f %-7s %s\n", channels[id].name,
                   call_text(rp->o->calls[c], call, sizeof call), gbps, base > 0 ? gbps / base : 0,
                   row_status(row), detail);
        }
    }
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* @base: uvm-evict's GB/s at the same call size. */
static void json_row(FILE *f, const row_t *row, channel_id_t id, uint64_t call, double base)
{
    const channel_t *ch = row_channel(row, id);

    fprintf(f, "    {\"channel\": \"%s\", \"call\": %llu, \"bytes\": %llu, \"status\": \"%s\", ",
            channels[id].name, (unsigned long long)call, (unsigned long long)row->bytes,
            row_status(row));
    fprintf(f, "\"gbps\": %.6g, \"x_uvm_evict\": %.6g, \"best_s\": %.9g, \"best_event_s\": %.9g, ",
            row_gbps(row), base > 0 ? row_gbps(row) / base : 0, row->best.total_s,
            row->best.event_s);
    fprintf(f, "\"phases\": [");
    for (int i = 0; i < ch->nops && row->nsamples > 0; i++)
        fprintf(f, "%s{\"op\": \"%s\", \"s\": %.9g}", i ? ", " : "", op_names[ch->ops[i]],
                row->best.phase_s[i]);
    fprintf(f, "], \"samples_s\": [");
    for (int i = 0; i < UMADV_MIN(row->nsamples, MAX_REPEAT); i++)
        fprintf(f, "%s%.9g", i ? ", " : "", row->samples_s[i]);
    fprintf(f, "], \"check_ms\": %.6g, \"mismatches\": %llu, \"restore\": ", row->check_ms,
            (unsigned long long)row->mismatches);
    if (row->restore != CH_COUNT)
        json_string(f, channels[row->restore].name);
    else
        fputs("null", f);
    fputs(", \"error\": ", f);
    if (row->error[0] != '\0')
        json_string(f, row->error);
    else
        fputs("null", f);
    fputs("}", f);
}

/* One call size's rows (the warm-up's too), as a JSON array's items. */
static void json_rows(FILE *f, const row_t *rows, uint64_t call, int last)
{
    double base = row_gbps(&rows[CH_UVM_EVICT]);

    for (int id = 0; id < CH_COUNT; id++) {
        json_row(f, &rows[id], (channel_id_t)id, call, base);
        fputs(last && id == CH_COUNT - 1 ? "\n" : ",\n", f);
    }
}

static void json_probe(FILE *f, const probe_t *p)
{
    fprintf(f, "  \"probe\": {\"ok\": %s, \"free_resident\": %llu, \"free_uvm_evicted\": %llu, "
               "\"free_staged\": %llu, \"free_discard_wait_1s\": %llu, "
               "\"free_discard_read\": %llu, \"words\": %llu, \"words_kept\": %llu, "
               "\"discarded_check_ms\": %.6g, \"error\": ",
            p->rc == 0 ? "true" : "false", (unsigned long long)p->free_resident,
            (unsigned long long)p->free_uvm_evicted, (unsigned long long)p->free_staged,
            (unsigned long long)p->free_discard_wait, (unsigned long long)p->free_discard_read,
            (unsigned long long)p->words, (unsigned long long)p->words_kept,
            p->discarded_check_ms);
    if (p->rc != 0)
        json_string(f, p->error);
    else
        fputs("null", f);
    fputs("},\n", f);
}

static void json_write(FILE *f, const report_t *rp, int failed)
{
    fprintf(f, "{\n  \"program\": \"evict_channels\",\n  \"device\": ");
    json_string(f, rp->device);
    fprintf(f, ",\n  \"driver_version\": %d,\n  \"runtime_version\": %d,\n", rp->driver,
            rp->runtime);
    fprintf(f, "  \"size\": %llu,\n  \"half\": %llu,\n  \"repeat\": %d,\n",
            (unsigned long long)rp->b->size, (unsigned long long)rp->b->half, rp->o->repeat);
    fprintf(f, "  \"free_at_start\": %llu,\n  \"total_memory\": %llu,\n",
            (unsigned long long)rp->free_start, (unsigned long long)rp->total);
    fprintf(f, "  \"resident_check_ms\": %.6g,\n", rp->b->resident_check_ms);
    json_probe(f, rp->probe);
    fprintf(f, "  \"warm_up\": [\n");
    json_rows(f, rp->warm, rp->warm_call, 1);
    fprintf(f, "  ],\n  \"rows\": [\n");
    for (int c = 0; c < rp->o->ncalls; c++)
        json_rows(f, rp->rows[c], rp->o->calls[c], c == rp->o->ncalls - 1);
    fprintf(f, "  ],\n  \"failed\": %s\n}\n", failed ? "true" : "false");
}

/* ------------------------------------------------------------ setup */

/* Opened before anything is measured, so that a path that cannot be
 * written fails in a second, not after the run. */
static void json_begin(const char *path)
{
    char why[512];

    if (path == NULL)
        return;
    if (umadv__outfile_open(&json_out, path, "the JSON results", why, sizeof why) != UMADV_OK) {
        fprintf(stderr, "evict_channels: %s\n", why);
        exit(EXIT_USAGE);
    }
    json_open = 1;
    umadv__outfile_guard_signals();
}

static void skip(const char *why)
{
    fprintf(stderr, "evict_channels: %s: skipped\n", why);
    if (json_open)
        umadv__outfile_discard(&json_out);
    exit(EXIT_SKIP);
}

/* Device 0, and the buffer size it allows: never oversubscribe a GPU that
 * others may share. */
static void device_setup(const opts_t *o, bench_t *b, report_t *rp)
{
    struct cudaDeviceProp prop;
    size_t free_b = 0, total_b = 0;
    int count = 0, cma = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    char why[256];

    if (err != cudaSuccess || count == 0) {
        snprintf(why, sizeof why, "no CUDA device (cudaGetDeviceCount: %s)",
                 err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        skip(why);
    }
    if (!CUDA_OK(cudaSetDevice, (0)) ||
        !CUDA_OK(cudaDeviceGetAttribute, (&cma, cudaDevAttrConcurrentManagedAccess, 0)))
        die("cannot use device 0");
    if (cma == 0)
        skip("device 0 has no concurrent managed access (prefetch and discard need it)");
    if (!CUDA_OK(cudaGetDeviceProperties, (&prop, 0)) ||
        !CUDA_OK(cudaMemGetInfo, (&free_b, &total_b)) ||
        !CUDA_OK(cudaDriverGetVersion, (&rp->driver)) ||
        !CUDA_OK(cudaRuntimeGetVersion, (&rp->runtime)))
        die("cannot query device 0");
    snprintf(rp->device, sizeof rp->device, "%s", prop.name);
    rp->free_start = free_b;
    rp->total = total_b;
    b->size = UMADV_MIN(o->size, (uint64_t)free_b / 4) & ~(ALIGN_2M - 1);
    if (b->size < 2 * ALIGN_2M)
        die("less than 4 MiB to measure with (--size, or a quarter of the free GPU memory)");
    b->half = (b->size / 2) & ~(ALIGN_2M - 1);
    if (b->size != o->size)
        printf("evict_channels: measuring %.2f GiB (--size %llu, a quarter of %.2f GiB free, "
               "in whole 2 MiB)\n",
               (double)b->size / (1 << 30), (unsigned long long)o->size,
               (double)free_b / (1 << 30));
}

static void buffers_setup(bench_t *b)
{
    if (!CUDA_OK(cudaMallocManaged, ((void **)&b->buf, b->size, cudaMemAttachGlobal)) ||
        !CUDA_OK(cudaHostAlloc, ((void **)&b->staging, b->size, cudaHostAllocDefault)) ||
        !CUDA_OK(cudaMalloc, ((void **)&b->count_dev, sizeof *b->count_dev)))
        die("cannot allocate the buffers");
    for (int i = 0; i < 2; i++) {
        if (!CUDA_OK(cudaStreamCreateWithFlags, (&b->stream[i], cudaStreamNonBlocking)) ||
            !CUDA_OK(cudaEventCreate, (&b->ev[i][0])) || !CUDA_OK(cudaEventCreate, (&b->ev[i][1])))
            die("cannot create streams and events");
    }
    /* Host pages of both buffers exist before anything is timed (warm). */
    memset(b->buf, 1, b->size);
    memset(b->staging, 0, b->size);
}

static void buffers_free(bench_t *b)
{
    for (int i = 0; i < 2; i++) {
        cudaEventDestroy(b->ev[i][0]);
        cudaEventDestroy(b->ev[i][1]);
        cudaStreamDestroy(b->stream[i]);
    }
    cudaFree(b->count_dev);
    cudaFreeHost(b->staging);
    cudaFree(b->buf);
}

/* The checks must be able to fail: the wrong round's pattern, and a
 * staging buffer nothing was copied to, must both show as mismatches.
 * Also the check's time with the data resident, the yardstick of every
 * row's check time. */
static void checks_validate(bench_t *b)
{
    uint64_t words = b->size / 8, bad = 0;
    double ms = 0;

    if (staging_mismatches(b, 0, b->size) != words)
        die("the host check passes a staging buffer of zeros: it cannot be trusted");
    if (round_prepare(b) != 0 || gpu_check(b, &bad, &ms) != 0)
        die("the GPU check cannot run");
    if (bad != 0)
        die("the GPU check disagrees with the fill kernel");
    b->seed++;
    if (gpu_check(b, &bad, &ms) != 0 || bad < words / 2)
        die("the GPU check passes another round's pattern: it cannot be trusted");
    b->seed--;
    if (gpu_check(b, &bad, &b->resident_check_ms) != 0 || bad != 0)
        die("the GPU check failed on resident data");
}

static int rows_failed(const opts_t *o, row_t (*rows)[CH_COUNT])
{
    for (int c = 0; c < o->ncalls; c++) {
        for (int id = 0; id < CH_COUNT; id++) {
            if (!row_ok(&rows[c][id]))
                return 1;
        }
    }
    return 0;
}

/* The largest call size: the warm-up's and the probe's. */
static uint64_t call_max(const opts_t *o)
{
    uint64_t call = 0;

    for (int c = 0; c < o->ncalls; c++)
        call = UMADV_MAX(call, o->calls[c]);
    return call;
}

/* Every channel once, untimed: host memory, the driver's paths and the
 * staging buffer's pages all warm before the first timed round. */
static void warm_up(bench_t *b, const opts_t *o, report_t *rp)
{
    rp->warm_call = call_max(o);
    measure_call(b, rp->warm_call, 1, rp->warm);
}

/* Its times are thrown away, not its failures: data lost while warming
 * up is lost all the same. 1 when a channel failed there. */
static int warm_up_print(const report_t *rp)
{
    char call[32], detail[320];
    int failed = 0;

    for (int id = 0; id < CH_COUNT; id++) {
        const row_t *row = &rp->warm[id];
        if (row_ok(row))
            continue;
        row_detail(row, (channel_id_t)id, detail, sizeof detail);
        printf("warm-up: %s in calls of %s: %s (%s)\n", channels[id].name,
               call_text(rp->warm_call, call, sizeof call), row_status(row), detail);
        failed = 1;
    }
    return failed;
}

static void json_finish(const report_t *rp, int failed)
{
    char why[512];

    if (!json_open)
        return;
    json_write(json_out.stream, rp, failed);
    json_open = 0;
    if (umadv__outfile_commit(&json_out, why, sizeof why) != UMADV_OK) {
        fprintf(stderr, "evict_channels: %s\n", why);
        exit(EXIT_FAILURE);
    }
}

int main(int argc, char **argv)
{
    opts_t o;
    bench_t b = {0};
    probe_t probe = {0};
    report_t rp = {0};
    uint64_t t0;
    int warm_failed, failed;

    opts_parse(argc, argv, &o);
    json_begin(o.json);
    device_setup(&o, &b, &rp);
    buffers_setup(&b);
    checks_validate(&b);
    warm_up(&b, &o, &rp);
    discard_probe(&b, call_max(&o), &probe);
    rp.o = &o;
    rp.b = &b;
    rp.probe = &probe;
    rp.rows = calloc((size_t)o.ncalls, sizeof *rp.rows);
    if (rp.rows == NULL)
        die("out of memory");
    for (int c = 0; c < o.ncalls; c++) {
        char call[32];
        t0 = umadv__now_ns();
        measure_call(&b, o.calls[c], o.repeat, rp.rows[c]);
        printf("evict_channels: calls of %s measured in %.1f s\n",
               call_text(o.calls[c], call, sizeof call), (double)(umadv__now_ns() - t0) / 1e9);
        fflush(stdout);
    }
    probe_print(&probe);
    warm_failed = warm_up_print(&rp);
    failed = warm_failed || rows_failed(&o, rp.rows) || probe.rc != 0;
    table_print(&rp);
    json_finish(&rp, failed);
    buffers_free(&b);
    free(rp.rows);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
