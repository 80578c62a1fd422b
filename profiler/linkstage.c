/*
 * The link probe's staged channel (linkprobe.h): the calls the executor
 * makes for a staged eviction and a restore (exec/stage.c), timed through
 * the cuda_ops table, so that the host backend and test tables drive it
 * without a GPU.
 *
 * Out, per call: cudaMemcpyAsync of the range into page-locked host
 * memory, a synchronisation, cudaMemDiscardBatchAsync of the range and
 * another synchronisation (the executor discards only what it knows is
 * copied). In: cudaMemDiscardAndPrefetchBatchAsync of the range to the GPU
 * (plain prefetch where the driver has none, as the executor does), the
 * copy back, one synchronisation. Each is timed in one call of the whole
 * buffer and in calls of one section, for latency + bytes / bandwidth.
 *
 * Memory: a managed buffer and a pinned one of the same size, an eighth of
 * the free GPU memory at most and STAGE_PROBE_MAX at most; none is made
 * when that is under STAGE_PROBE_MIN. Anything that fails leaves the
 * figures unmeasured, with a debug line saying why: staging is an option
 * of the runtime, and its absence costs the plan only a sharper price.
 */
#include "profiler/linkprobe.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"

#define STAGE_PROBE_MAX    (UINT64_C(64) << 20)
#define STAGE_PROBE_MIN    (UINT64_C(16) << 20)
#define STAGE_PROBE_PIECE  (UINT64_C(2) << 20)  /* one section: the executor's unit */
#define STAGE_PROBE_PIECES 16u
#define STAGE_PROBE_ROUNDS 3                    /* after one that warms */

typedef struct stage_probe {
    const umadv_cuda_ops_t *ops;
    int            device;
    char          *managed;
    char          *pinned;
    uint64_t       size;
    umadv_stream_t stream;
} stage_probe_t;

/* One staged eviction of [off, off + len): copied out, then discarded. */
static umadv_status_t stage_out(const stage_probe_t *p, uint64_t off, uint64_t len)
{
    void *ptr = p->managed + off;
    size_t size = len;
    umadv_status_t status = p->ops->memcpy_async(p->pinned + off, ptr, size, p->stream);

    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(p->stream);
    if (status == UMADV_OK)
        status = p->ops->discard_batch(&ptr, &size, 1, p->stream);
    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(p->stream);
    return status;
}

/* One restore of [off, off + len): repopulated on the GPU, copied back. */
static umadv_status_t stage_in(const stage_probe_t *p, uint64_t off, uint64_t len)
{
    void *ptr = p->managed + off;
    size_t size = len;
    umadv_status_t status = p->ops->discard_and_prefetch_batch(&ptr, &size, 1, p->device,
                                                               p->stream);

    if (status == UMADV_ERR_UNSUPPORTED)
        status = p->ops->prefetch(ptr, size, p->device, p->stream);
    if (status == UMADV_OK)
        status = p->ops->memcpy_async(ptr, p->pinned + off, size, p->stream);
    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(p->stream);
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

static umadv_status_t stage_rounds(const stage_probe_t *p, umadv_link_sample_t *s)
{
    umadv_link_sample_t warm = *s;
    umadv_status_t status;

    status = p->ops->prefetch(p->managed, p->size, p->device, p->stream);
    if (status == UMADV_OK)
        status = p->ops->stream_synchronize(p->stream);
    if (status == UMADV_OK)
        status = stage_round(p, &warm); /* pins pages, maps the ranges: not timed */
    for (int r = 0; r < STAGE_PROBE_ROUNDS && status == UMADV_OK; r++)
        status = stage_round(p, s);
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
}

static umadv_status_t stage_buffers(stage_probe_t *p)
{
    umadv_status_t status = p->ops->malloc_managed(p->size, STAGE_PROBE_PIECE,
                                                   (void **)&p->managed);

    if (status != UMADV_OK)
        return status;
    status = p->ops->host_alloc(p->size, (void **)&p->pinned);
    if (status == UMADV_OK)
        status = p->ops->stream_create(&p->stream);
    if (status == UMADV_OK)
        return UMADV_OK;
    if (p->pinned != NULL)
        (void)p->ops->host_free(p->pinned, p->size);
    (void)p->ops->free(p->managed, p->size);
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
    status = stage_rounds(&p, s);
    if (status != UMADV_OK) {
        umadv_debug("link probe: staged channel not measured: %s%s",
                    umadv_status_string(status), status == UMADV_ERR_UNSUPPORTED
                        ? " (the driver has no cudaMemDiscardBatchAsync)" : "");
        stage_forget(s);
    }
    /* Failing to release costs memory, not the figures. */
    (void)ops->stream_destroy(p.stream);
    (void)ops->host_free(p.pinned, p.size);
    (void)ops->free(p.managed, p.size);
    return status;
}
