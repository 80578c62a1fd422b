/*
 * The link probe's staged channel (linkprobe.h): the calls the executor
 * makes for a staged eviction and a restore (exec/stage.c), timed through
 * the cuda_ops table, so that the host backend and test tables drive it
 * without a GPU.
 *
 * Out, per call: the copy of the range into page-locked host memory, a
 * synchronisation, cudaMemDiscardBatchAsync of the range and another
 * synchronisation (the executor discards only what it knows is copied).
 * In: cudaMemDiscardAndPrefetchBatchAsync of the range to the GPU (plain
 * prefetch where the driver has none, as the executor does), the copy
 * back, one synchronisation. The executor restores in runs of 8 sections,
 * each populated while the run before is copied (exec/stage.c, RESTORES
 * IN RUNS); timed here whole, a restore is priced as it ran before the
 * runs, a little slower than it runs now (ResNet-50's restores on an
 * H200: 44.5 GB/s before, 47.0 in runs). The copies go through a bounce buffer of
 * device memory, one per direction, as each of the executor's lanes has
 * one (umadv__cuda_copy_bounced). Each direction is timed in one call of
 * the whole buffer and in calls of one section, for latency + bytes /
 * bandwidth; then both at once, from two threads (the executor's two
 * lanes): half the buffer staged out while the other half is restored,
 * in calls of STAGE_PROBE_DUPLEX_CALL.
 *
 * Memory: a managed buffer and a pinned one of the same size, an eighth of
 * the free GPU memory at most and STAGE_PROBE_MAX at most; none is made
 * when that is under STAGE_PROBE_MIN. Anything that fails leaves the
 * figures unmeasured, with a debug line saying why: staging is an option
 * of the runtime, and its absence costs the plan only a sharper price.
 * Without device memory for the bounce buffers the copies go direct.
 */
#include "profiler/linkprobe.h"

#include <pthread.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"

#define STAGE_PROBE_MAX    (UINT64_C(64) << 20)
#define STAGE_PROBE_MIN    (UINT64_C(16) << 20)
#define STAGE_PROBE_PIECE  (UINT64_C(2) << 20)  /* one section: the executor's unit */
#define STAGE_PROBE_PIECES 16u
#define STAGE_PROBE_ROUNDS 3                    /* after one that warms */
#define STAGE_PROBE_DUPLEX_CALL (UINT64_C(4) << 20)

/* One direction's stream and bounce buffer, as an executor lane's. */
typedef struct stage_lane {
    umadv_stream_t stream;
    void          *bounce; /* NULL: direct copies */
} stage_lane_t;

enum { LANE_OUT, LANE_IN };

typedef struct stage_probe {
    const umadv_cuda_ops_t *ops;
    int            device;
    char          *managed;
    char          *pinned;
    uint64_t       size;
    stage_lane_t   lane[2]; /* LANE_OUT, LANE_IN */
} stage_probe_t;

static umadv_status_t lane_copy(const stage_probe_t *p, int lane, void *dst, const void *src,
                                uint64_t len)
{
    return umadv__cuda_copy_bounced(p->ops, dst, src, len, p->lane[lane].bounce,
                                    UMADV_BOUNCE_BYTES, p->lane[lane].stream);
}

/* One staged eviction of [off, off + len): copied out, then discarded. */
static umadv_status_t stage_out(const stage_probe_t *p, uint64_t off, uint64_t len)
{
    void *ptr = p->managed + off;
    size_t size = len;
    umadv_stream_t stream = p->lane[LANE_OUT].stream;
    umadv_status_t status = lane_copy(p, LANE_OUT, p->pinned + off, ptr, size);

    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(stream);
    if (status == UMADV_OK)
        status = p->ops->discard_batch(&ptr, &size, 1, stream);
    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(stream);
    return status;
}

/* One restore of [off, off + len): repopulated on the GPU, copied back. */
static umadv_status_t stage_in(const stage_probe_t *p, uint64_t off, uint64_t len)
{
    void *ptr = p->managed + off;
    size_t size = len;
    umadv_stream_t stream = p->lane[LANE_IN].stream;
    umadv_status_t status = p->ops->discard_and_prefetch_batch(&ptr, &size, 1, p->device, stream);

    if (status == UMADV_ERR_UNSUPPORTED)
        status = p->ops->prefetch(ptr, size, p->device, stream);
    if (status == UMADV_OK)
        status = lane_copy(p, LANE_IN, ptr, p->pinned + off, size);
    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(stream);
    return status;
}

typedef umadv_status_t (*stage_call_fn)(const stage_probe_t *p, uint64_t off, uint64_t len);

/* @count calls of @piece bytes from the buffer's start, one after the
 * other as the executor's lane issues them: the seconds they took, kept
 * in *best_p if fewer. */
static umadv_status_t time_calls(const stage_probe_t *p, stage_call_fn call, uint64_t piece,
                                 uint32_t count, double *best_p)
{
    uint64_t t0 = umadv__now_ns();
    umadv_status_t status = UMADV_OK;
    double t;

    for (uint32_t i = 0; i < count && status == UMADV_OK; i++)
        status = call(p, (uint64_t)i * piece, piece);
    t = (double)(umadv__now_ns() - t0) / 1e9;
    if (status == UMADV_OK && t > 0 && (*best_p <= 0 || t < *best_p))
        *best_p = t;
    return status;
}

/* Out and in, whole and in pieces; the data ends on the GPU each time. */
static umadv_status_t stage_round(const stage_probe_t *p, umadv_link_sample_t *s)
{
    umadv_status_t status = time_calls(p, stage_out, s->stage_big_bytes, 1, &s->stage_out_big);

    if (status == UMADV_OK)
        status = time_calls(p, stage_in, s->stage_big_bytes, 1, &s->stage_in_big);
    if (status == UMADV_OK)
        status = time_calls(p, stage_out, s->stage_piece_bytes, s->stage_pieces,
                            &s->stage_out_pieces);
    if (status == UMADV_OK)
        status = time_calls(p, stage_in, s->stage_piece_bytes, s->stage_pieces,
                            &s->stage_in_pieces);
    return status;
}

/* ---- both ways at once ------------------------------------------------- */

/* @call over [@off, @off + @len) in calls of STAGE_PROBE_DUPLEX_CALL. */
static umadv_status_t duplex_calls(const stage_probe_t *p, stage_call_fn call, uint64_t off,
                                   uint64_t len)
{
    umadv_status_t status = UMADV_OK;

    for (uint64_t o = 0; o < len && status == UMADV_OK; o += STAGE_PROBE_DUPLEX_CALL)
        status = call(p, off + o, UMADV_MIN(STAGE_PROBE_DUPLEX_CALL, len - o));
    return status;
}

/* The stage-out half of a duplex round, on its own thread (as the
 * executor's eviction lane), released with the restore by the barrier. */
typedef struct duplex_out {
    const stage_probe_t *p;
    pthread_barrier_t   *go;
    uint64_t             half;
    uint64_t             end_ns;
    umadv_status_t       status;
} duplex_out_t;

static void *duplex_out_main(void *arg)
{
    duplex_out_t *d = arg;

    d->status = d->p->ops->thread_begin(d->p->device);
    pthread_barrier_wait(d->go);
    if (d->status == UMADV_OK)
        d->status = duplex_calls(d->p, stage_out, 0, d->half);
    d->end_ns = umadv__now_ns();
    return NULL;
}

/* The first half staged out while the second half, staged before, is
 * restored: the seconds until each ended. Starts and ends with the buffer
 * on the GPU. */
static umadv_status_t duplex_round(const stage_probe_t *p, uint64_t half, double *out_p,
                                   double *in_p)
{
    duplex_out_t d = {.p = p, .half = half};
    pthread_barrier_t go;
    pthread_t thread;
    umadv_status_t status = duplex_calls(p, stage_out, half, half);
    uint64_t t0;

    if (status != UMADV_OK)
        return status;
    if (pthread_barrier_init(&go, NULL, 2) != 0)
        return UMADV_ERR_NO_MEMORY;
    d.go = &go;
    if (pthread_create(&thread, NULL, duplex_out_main, &d) != 0) {
        pthread_barrier_destroy(&go);
        return UMADV_ERR_NO_MEMORY;
    }
    pthread_barrier_wait(&go);
    t0 = umadv__now_ns();
    status = duplex_calls(p, stage_in, half, half);
    *in_p = (double)(umadv__now_ns() - t0) / 1e9;
    pthread_join(thread, NULL);
    pthread_barrier_destroy(&go);
    *out_p = (double)(d.end_ns - t0) / 1e9;
    if (status == UMADV_OK)
        status = d.status;
    return status == UMADV_OK ? duplex_calls(p, stage_in, 0, half) : status;
}

/* The round whose later end is soonest. */
static void duplex_keep(umadv_link_sample_t *s, double out, double in)
{
    if (s->stage_duplex_out <= 0 ||
        UMADV_MAX(out, in) < UMADV_MAX(s->stage_duplex_out, s->stage_duplex_in)) {
        s->stage_duplex_out = out;
        s->stage_duplex_in = in;
    }
}

/* ---- the rounds ----------------------------------------------------------- */

/* One way at a time, then both at once; the first round warms (pins
 * pages, maps the ranges) and is not kept. */
static umadv_status_t stage_rounds(const stage_probe_t *p, umadv_link_sample_t *s)
{
    umadv_link_sample_t warm = *s;
    umadv_stream_t stream = p->lane[LANE_IN].stream;
    umadv_status_t status;
    double out = 0, in = 0;

    status = p->ops->prefetch(p->managed, p->size, p->device, stream);
    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(stream);
    for (int r = 0; r <= STAGE_PROBE_ROUNDS && status == UMADV_OK; r++) {
        status = stage_round(p, r == 0 ? &warm : s);
        if (status == UMADV_OK)
            status = duplex_round(p, s->stage_duplex_bytes, &out, &in);
        if (status == UMADV_OK && r > 0)
            duplex_keep(s, out, in);
    }
    return status;
}

/* The buffers' size: 0 (logged) when the GPU has too little free. */
static uint64_t stage_size(const umadv_cuda_ops_t *ops)
{
    uint64_t free_bytes = 0, total = 0, size;

    if (ops->mem_get_info(&free_bytes, &total) != UMADV_OK) {
        umadv_debug("link probe: staged channel not measured: no free memory figure");
        return 0;
    }
    size = UMADV_MIN(STAGE_PROBE_MAX, free_bytes / 8) & ~(STAGE_PROBE_PIECE - 1);
    if (size < STAGE_PROBE_MIN) {
        umadv_debug("link probe: staged channel not measured: %llu bytes of gpu memory free",
                    (unsigned long long)free_bytes);
        return 0;
    }
    return size;
}

/* Nothing measured: the sample's staged timings all 0. */
static void stage_forget(umadv_link_sample_t *s)
{
    s->stage_out_big = s->stage_in_big = 0;
    s->stage_out_pieces = s->stage_in_pieces = 0;
    s->stage_duplex_out = s->stage_duplex_in = 0;
}

/* Failing to release costs memory, not the figures. */
static void stage_release(stage_probe_t *p)
{
    for (int l = LANE_OUT; l <= LANE_IN; l++) {
        if (p->lane[l].stream != NULL)
            (void)p->ops->stream_destroy(p->lane[l].stream);
        if (p->lane[l].bounce != NULL)
            (void)p->ops->device_free(p->lane[l].bounce);
    }
    if (p->pinned != NULL)
        (void)p->ops->host_free(p->pinned, p->size);
    if (p->managed != NULL)
        (void)p->ops->free(p->managed, p->size);
}

/* The buffers and the lanes' streams; a bounce buffer that cannot be
 * made leaves that lane's copies direct, as the executor's. */
static umadv_status_t stage_buffers(stage_probe_t *p)
{
    umadv_status_t status = p->ops->malloc_managed(p->size, STAGE_PROBE_PIECE,
                                                   (void **)&p->managed);

    if (status == UMADV_OK)
        status = p->ops->host_alloc(p->size, UMADV_PIN_WAITED, (void **)&p->pinned);
    for (int l = LANE_OUT; l <= LANE_IN && status == UMADV_OK; l++) {
        status = p->ops->stream_create(&p->lane[l].stream);
        if (status == UMADV_OK && p->ops->device_alloc != NULL &&
            p->ops->device_alloc(UMADV_BOUNCE_BYTES, &p->lane[l].bounce) != UMADV_OK)
            p->lane[l].bounce = NULL;
    }
    if (status != UMADV_OK)
        stage_release(p);
    return status;
}

umadv_status_t umadv__link_probe_stage(const umadv_cuda_ops_t *ops, int device,
                                       umadv_link_sample_t *s)
{
    stage_probe_t p = {.ops = ops, .device = device};
    umadv_status_t status;

    stage_forget(s);
    if ((p.size = stage_size(ops)) == 0)
        return UMADV_ERR_UNSUPPORTED;
    status = stage_buffers(&p);
    if (status != UMADV_OK) {
        umadv_debug("link probe: staged channel not measured: no buffers of %llu bytes (%s)",
                    (unsigned long long)p.size, umadv_status_string(status));
        return status;
    }
    memset(p.managed, 1, p.size); /* pages exist before anything is timed */
    s->stage_big_bytes   = p.size;
    s->stage_piece_bytes = STAGE_PROBE_PIECE;
    s->stage_pieces      = (uint32_t)UMADV_MIN(STAGE_PROBE_PIECES, p.size / STAGE_PROBE_PIECE);
    s->stage_duplex_bytes = (p.size / 2) & ~(STAGE_PROBE_PIECE - 1);
    s->stage_duplex_calls =
        (uint32_t)UMADV_DIV_ROUND_UP(s->stage_duplex_bytes, STAGE_PROBE_DUPLEX_CALL);
    status = stage_rounds(&p, s);
    if (status != UMADV_OK) {
        umadv_debug("link probe: staged channel not measured: %s%s",
                    umadv_status_string(status), status == UMADV_ERR_UNSUPPORTED
                        ? " (the driver has no cudaMemDiscardBatchAsync)" : "");
        stage_forget(s);
    }
    stage_release(&p);
    return status;
}
