/*
 * The copies and memsets a watch of copies sees (profiler.h,
 * umadv__prof_watch_copies): which CUPTI callbacks they are, and the
 * device-address ranges each call may read or write, read from its
 * parameters.
 *
 * One table row per API function: its callback id and where, in its
 * CUPTI parameter struct, the pointers and sizes are (offsetof on the
 * struct itself, so a field that moves is followed at build time).
 * Copies to or from CUDA arrays and symbols are not managed memory: only
 * the linear side of a copy is reported. The legacy driver entry points
 * of 32-bit device pointers (cuMemcpyHtoD without _v2 and kin) and the
 * batched copies (cudaMemcpyBatchAsync, cuMemcpyBatchAsync) are not
 * watched.
 */
#include "profiler/profiler_int.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <string.h>

#include "common/util.h"

/* How a call's parameters give its ranges. */
typedef enum prof_copy_shape {
    PROF_LINEAR,       /* off: dst, src or NONE, count (in elements of elem bytes) */
    PROF_PITCHED,      /* off: dst, dst pitch, src or NONE, src pitch or NONE, width
                        * (elements), height: runtime 2D copies, 2D memsets */
    PROF_SET_3D,       /* off: cudaPitchedPtr, cudaExtent (cudaMemset3D) */
    PROF_RT_3D,        /* off: const struct cudaMemcpy3DParms * */
    PROF_RT_3D_PEER,   /* off: const struct cudaMemcpy3DPeerParms * */
    PROF_DRV_2D,       /* off: const CUDA_MEMCPY2D * */
    PROF_DRV_3D,       /* off: const CUDA_MEMCPY3D * */
    PROF_DRV_3D_PEER   /* off: const CUDA_MEMCPY3D_PEER * */
} prof_copy_shape_t;

#define PROF_OFF_NONE UINT16_MAX

typedef struct prof_copy_call {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId     cbid;
    prof_copy_shape_t    shape;
    uint8_t              elem;    /* bytes per element of counts and widths */
    uint16_t             off[6];  /* field offsets, by shape */
} prof_copy_call_t;

#define RT(_name)  CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##_name
#define DRV(_name) CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##_name
#define OFF(_name, _field) (uint16_t)offsetof(_name##_params, _field)

#define COPY(_dom, _name, _dst, _src, _count) \
    {_dom(_name), PROF_LINEAR, 1, {OFF(_name, _dst), OFF(_name, _src), OFF(_name, _count)}}
#define SET(_dom, _name, _dst, _count, _elem) \
    {_dom(_name), PROF_LINEAR, _elem, {OFF(_name, _dst), PROF_OFF_NONE, OFF(_name, _count)}}
#define COPY_2D(_name) \
    {RT(_name), PROF_PITCHED, 1, {OFF(_name, dst), OFF(_name, dpitch), OFF(_name, src), \
                                  OFF(_name, spitch), OFF(_name, width), OFF(_name, height)}}
#define SET_2D(_dom, _name, _dst, _pitch, _width, _height, _elem) \
    {_dom(_name), PROF_PITCHED, _elem, {OFF(_name, _dst), OFF(_name, _pitch), PROF_OFF_NONE, \
                                        PROF_OFF_NONE, OFF(_name, _width), OFF(_name, _height)}}
#define SET_3D(_name) \
    {RT(_name), PROF_SET_3D, 1, {OFF(_name, pitchedDevPtr), OFF(_name, extent)}}
#define BY_STRUCT(_dom, _name, _shape, _field) {_dom(_name), _shape, 1, {OFF(_name, _field)}}

static const prof_copy_call_t copy_calls[] = {
    /* the runtime */
    COPY(RT, cudaMemcpy_v3020, dst, src, count),
    COPY(RT, cudaMemcpy_ptds_v7000, dst, src, count),
    COPY(RT, cudaMemcpyAsync_v3020, dst, src, count),
    COPY(RT, cudaMemcpyAsync_ptsz_v7000, dst, src, count),
    COPY(RT, cudaMemcpyPeer_v4000, dst, src, count),
    COPY(RT, cudaMemcpyPeerAsync_v4000, dst, src, count),
    COPY_2D(cudaMemcpy2D_v3020),
    COPY_2D(cudaMemcpy2D_ptds_v7000),
    COPY_2D(cudaMemcpy2DAsync_v3020),
    COPY_2D(cudaMemcpy2DAsync_ptsz_v7000),
    BY_STRUCT(RT, cudaMemcpy3D_v3020, PROF_RT_3D, p),
    BY_STRUCT(RT, cudaMemcpy3D_ptds_v7000, PROF_RT_3D, p),
    BY_STRUCT(RT, cudaMemcpy3DAsync_v3020, PROF_RT_3D, p),
    BY_STRUCT(RT, cudaMemcpy3DAsync_ptsz_v7000, PROF_RT_3D, p),
    BY_STRUCT(RT, cudaMemcpy3DPeer_v4000, PROF_RT_3D_PEER, p),
    BY_STRUCT(RT, cudaMemcpy3DPeer_ptds_v7000, PROF_RT_3D_PEER, p),
    BY_STRUCT(RT, cudaMemcpy3DPeerAsync_v4000, PROF_RT_3D_PEER, p),
    BY_STRUCT(RT, cudaMemcpy3DPeerAsync_ptsz_v7000, PROF_RT_3D_PEER, p),
    SET(RT, cudaMemset_v3020, devPtr, count, 1),
    SET(RT, cudaMemset_ptds_v7000, devPtr, count, 1),
    SET(RT, cudaMemsetAsync_v3020, devPtr, count, 1),
    SET(RT, cudaMemsetAsync_ptsz_v7000, devPtr, count, 1),
    SET_2D(RT, cudaMemset2D_v3020, devPtr, pitch, width, height, 1),
    SET_2D(RT, cudaMemset2D_ptds_v7000, devPtr, pitch, width, height, 1),
    SET_2D(RT, cudaMemset2DAsync_v3020, devPtr, pitch, width, height, 1),
    SET_2D(RT, cudaMemset2DAsync_ptsz_v7000, devPtr, pitch, width, height, 1),
    SET_3D(cudaMemset3D_v3020),
    SET_3D(cudaMemset3D_ptds_v7000),
    SET_3D(cudaMemset3DAsync_v3020),
    SET_3D(cudaMemset3DAsync_ptsz_v7000),
    /* the driver */
    COPY(DRV, cuMemcpy, dst, src, ByteCount),
    COPY(DRV, cuMemcpy_ptds, dst, src, ByteCount),
    COPY(DRV, cuMemcpyAsync, dst, src, ByteCount),
    COPY(DRV, cuMemcpyAsync_ptsz, dst, src, ByteCount),
    COPY(DRV, cuMemcpyHtoD_v2, dstDevice, srcHost, ByteCount),
    COPY(DRV, cuMemcpyHtoD_v2_ptds, dstDevice, srcHost, ByteCount),
    COPY(DRV, cuMemcpyHtoDAsync_v2, dstDevice, srcHost, ByteCount),
    COPY(DRV, cuMemcpyHtoDAsync_v2_ptsz, dstDevice, srcHost, ByteCount),
    COPY(DRV, cuMemcpyDtoH_v2, dstHost, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyDtoH_v2_ptds, dstHost, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyDtoHAsync_v2, dstHost, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyDtoHAsync_v2_ptsz, dstHost, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyDtoD_v2, dstDevice, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyDtoD_v2_ptds, dstDevice, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyDtoDAsync_v2, dstDevice, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyDtoDAsync_v2_ptsz, dstDevice, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyPeer, dstDevice, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyPeer_ptds, dstDevice, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyPeerAsync, dstDevice, srcDevice, ByteCount),
    COPY(DRV, cuMemcpyPeerAsync_ptsz, dstDevice, srcDevice, ByteCount),
    BY_STRUCT(DRV, cuMemcpy2D_v2, PROF_DRV_2D, pCopy),
    BY_STRUCT(DRV, cuMemcpy2D_v2_ptds, PROF_DRV_2D, pCopy),
    BY_STRUCT(DRV, cuMemcpy2DUnaligned_v2, PROF_DRV_2D, pCopy),
    BY_STRUCT(DRV, cuMemcpy2DUnaligned_v2_ptds, PROF_DRV_2D, pCopy),
    BY_STRUCT(DRV, cuMemcpy2DAsync_v2, PROF_DRV_2D, pCopy),
    BY_STRUCT(DRV, cuMemcpy2DAsync_v2_ptsz, PROF_DRV_2D, pCopy),
    BY_STRUCT(DRV, cuMemcpy3D_v2, PROF_DRV_3D, pCopy),
    BY_STRUCT(DRV, cuMemcpy3D_v2_ptds, PROF_DRV_3D, pCopy),
    BY_STRUCT(DRV, cuMemcpy3DAsync_v2, PROF_DRV_3D, pCopy),
    BY_STRUCT(DRV, cuMemcpy3DAsync_v2_ptsz, PROF_DRV_3D, pCopy),
    BY_STRUCT(DRV, cuMemcpy3DPeer, PROF_DRV_3D_PEER, pCopy),
    BY_STRUCT(DRV, cuMemcpy3DPeer_ptds, PROF_DRV_3D_PEER, pCopy),
    BY_STRUCT(DRV, cuMemcpy3DPeerAsync, PROF_DRV_3D_PEER, pCopy),
    BY_STRUCT(DRV, cuMemcpy3DPeerAsync_ptsz, PROF_DRV_3D_PEER, pCopy),
    SET(DRV, cuMemsetD8_v2, dstDevice, N, 1),
    SET(DRV, cuMemsetD8_v2_ptds, dstDevice, N, 1),
    SET(DRV, cuMemsetD8Async, dstDevice, N, 1),
    SET(DRV, cuMemsetD8Async_ptsz, dstDevice, N, 1),
    SET(DRV, cuMemsetD16_v2, dstDevice, N, 2),
    SET(DRV, cuMemsetD16_v2_ptds, dstDevice, N, 2),
    SET(DRV, cuMemsetD16Async, dstDevice, N, 2),
    SET(DRV, cuMemsetD16Async_ptsz, dstDevice, N, 2),
    SET(DRV, cuMemsetD32_v2, dstDevice, N, 4),
    SET(DRV, cuMemsetD32_v2_ptds, dstDevice, N, 4),
    SET(DRV, cuMemsetD32Async, dstDevice, N, 4),
    SET(DRV, cuMemsetD32Async_ptsz, dstDevice, N, 4),
    SET_2D(DRV, cuMemsetD2D8_v2, dstDevice, dstPitch, Width, Height, 1),
    SET_2D(DRV, cuMemsetD2D8_v2_ptds, dstDevice, dstPitch, Width, Height, 1),
    SET_2D(DRV, cuMemsetD2D8Async, dstDevice, dstPitch, Width, Height, 1),
    SET_2D(DRV, cuMemsetD2D8Async_ptsz, dstDevice, dstPitch, Width, Height, 1),
    SET_2D(DRV, cuMemsetD2D16_v2, dstDevice, dstPitch, Width, Height, 2),
    SET_2D(DRV, cuMemsetD2D16_v2_ptds, dstDevice, dstPitch, Width, Height, 2),
    SET_2D(DRV, cuMemsetD2D16Async, dstDevice, dstPitch, Width, Height, 2),
    SET_2D(DRV, cuMemsetD2D16Async_ptsz, dstDevice, dstPitch, Width, Height, 2),
    SET_2D(DRV, cuMemsetD2D32_v2, dstDevice, dstPitch, Width, Height, 4),
    SET_2D(DRV, cuMemsetD2D32_v2_ptds, dstDevice, dstPitch, Width, Height, 4),
    SET_2D(DRV, cuMemsetD2D32Async, dstDevice, dstPitch, Width, Height, 4),
    SET_2D(DRV, cuMemsetD2D32Async_ptsz, dstDevice, dstPitch, Width, Height, 4),
};

size_t umadv__prof_copy_ncallbacks(void)
{
    return UMADV_ARRAY_SIZE(copy_calls);
}

void umadv__prof_copy_callback(size_t i, CUpti_CallbackDomain *domain_p, CUpti_CallbackId *cbid_p)
{
    *domain_p = copy_calls[i].domain;
    *cbid_p   = copy_calls[i].cbid;
}

/* ---- reading the parameters ------------------------------------------- */

/* Pointers and CUdeviceptrs are both 64 bits on every platform CUDA
 * supports: read either as an address. */
static uintptr_t addr_at(const void *params, uint16_t off)
{
    uintptr_t v = 0;

    if (off != PROF_OFF_NONE)
        memcpy(&v, (const char *)params + off, sizeof(v));
    return v;
}

static size_t size_at(const void *params, uint16_t off)
{
    size_t v = 0;

    if (off != PROF_OFF_NONE)
        memcpy(&v, (const char *)params + off, sizeof(v));
    return v;
}

static const void *struct_at(const void *params, uint16_t off)
{
    const void *p;

    memcpy(&p, (const char *)params + off, sizeof(p));
    return p;
}

/* One side of a pitched copy: rows @pitch bytes apart, slices of @rows
 * rows, starting at (@x bytes, @y, @z). */
typedef struct prof_side {
    uintptr_t base;   /* 0: no linear memory (an array): nothing to report */
    size_t    x, y, z, pitch, rows;
} prof_side_t;

/* The span from the first byte to the last that @width x @height x
 * @depth bytes of @side touch. Returns whether there is one. */
static int side_range(const prof_side_t *side, size_t width, size_t height, size_t depth,
                      umadv_prof_range_t *r)
{
    size_t rows = depth > 1 ? side->rows : 0; /* may be unset for one slice */

    if (side->base == 0 || width == 0 || height == 0 || depth == 0)
        return 0;
    r->ptr   = (const void *)(side->base + (side->z * rows + side->y) * side->pitch + side->x);
    r->bytes = ((depth - 1) * rows + (height - 1)) * side->pitch + width;
    return 1;
}

static size_t linear_ranges(const prof_copy_call_t *c, const void *params,
                            umadv_prof_range_t *r)
{
    uint64_t bytes = (uint64_t)size_at(params, c->off[2]) * c->elem;
    uintptr_t dst = addr_at(params, c->off[0]), src = addr_at(params, c->off[1]);
    size_t n = 0;

    if (bytes == 0)
        return 0;
    if (dst != 0)
        r[n++] = (umadv_prof_range_t){(const void *)dst, bytes};
    if (src != 0)
        r[n++] = (umadv_prof_range_t){(const void *)src, bytes};
    return n;
}

static size_t pitched_ranges(const prof_copy_call_t *c, const void *params,
                             umadv_prof_range_t *r)
{
    prof_side_t dst = {.base = addr_at(params, c->off[0]), .pitch = size_at(params, c->off[1])};
    prof_side_t src = {.base = addr_at(params, c->off[2]), .pitch = size_at(params, c->off[3])};
    size_t width = size_at(params, c->off[4]) * c->elem, height = size_at(params, c->off[5]);
    size_t n = side_range(&dst, width, height, 1, &r[0]);

    return n + side_range(&src, width, height, 1, &r[n]);
}

static size_t set_3d_ranges(const prof_copy_call_t *c, const void *params,
                            umadv_prof_range_t *r)
{
    struct cudaPitchedPtr p;
    struct cudaExtent e;
    prof_side_t side;

    memcpy(&p, (const char *)params + c->off[0], sizeof(p));
    memcpy(&e, (const char *)params + c->off[1], sizeof(e));
    side = (prof_side_t){.base = (uintptr_t)p.ptr, .pitch = p.pitch, .rows = p.ysize};
    return side_range(&side, e.width, e.height, e.depth, r);
}

/* A runtime 3D side: linear unless it is an array. With an array on
 * either side the extent's width is in the array's elements: a whole
 * pitch is reported, which holds any row. */
static size_t rt_3d_side(const void *array, const void *other_array, struct cudaPos pos,
                         struct cudaPitchedPtr ptr, struct cudaExtent e, umadv_prof_range_t *r)
{
    prof_side_t side = {.base = (uintptr_t)ptr.ptr, .x = pos.x, .y = pos.y, .z = pos.z,
                        .pitch = ptr.pitch, .rows = ptr.ysize};

    if (array != NULL)
        return 0;
    return side_range(&side, other_array != NULL ? ptr.pitch : e.width, e.height, e.depth, r);
}

static size_t rt_3d_ranges(const prof_copy_call_t *c, const void *params,
                           umadv_prof_range_t *r)
{
    const void *p = struct_at(params, c->off[0]);
    size_t n;

    if (p == NULL)
        return 0;
    if (c->shape == PROF_RT_3D) {
        const struct cudaMemcpy3DParms *m = p;

        n = rt_3d_side(m->dstArray, m->srcArray, m->dstPos, m->dstPtr, m->extent, r);
        return n + rt_3d_side(m->srcArray, m->dstArray, m->srcPos, m->srcPtr, m->extent, &r[n]);
    } else {
        const struct cudaMemcpy3DPeerParms *m = p;

        n = rt_3d_side(m->dstArray, m->srcArray, m->dstPos, m->dstPtr, m->extent, r);
        return n + rt_3d_side(m->srcArray, m->dstArray, m->srcPos, m->srcPtr, m->extent, &r[n]);
    }
}

/* A driver side's linear address by its memory type; arrays have none. */
static uintptr_t drv_base(CUmemorytype type, const void *host, CUdeviceptr device)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        return (uintptr_t)host;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        return (uintptr_t)device;
    default:
        return 0;
    }
}

/* The driver's 2D, 3D and 3D peer descriptors name their fields alike. */
#define DRV_SIDE(_m, _s, _z, _rows) \
    ((prof_side_t){.base = drv_base((_m)->_s##MemoryType, (_m)->_s##Host, (_m)->_s##Device), \
                   .x = (_m)->_s##XInBytes, .y = (_m)->_s##Y, .z = (_z), \
                   .pitch = (_m)->_s##Pitch, .rows = (_rows)})

static size_t drv_ranges(const prof_copy_call_t *c, const void *params, umadv_prof_range_t *r)
{
    const void *p = struct_at(params, c->off[0]);
    prof_side_t dst, src;
    size_t width, height, depth = 1, n;

    if (p == NULL)
        return 0;
    if (c->shape == PROF_DRV_2D) {
        const CUDA_MEMCPY2D *m = p;

        dst = DRV_SIDE(m, dst, 0, 0);
        src = DRV_SIDE(m, src, 0, 0);
        width = m->WidthInBytes, height = m->Height;
    } else if (c->shape == PROF_DRV_3D) {
        const CUDA_MEMCPY3D *m = p;

        dst = DRV_SIDE(m, dst, m->dstZ, m->dstHeight);
        src = DRV_SIDE(m, src, m->srcZ, m->srcHeight);
        width = m->WidthInBytes, height = m->Height, depth = m->Depth;
    } else {
        const CUDA_MEMCPY3D_PEER *m = p;

        dst = DRV_SIDE(m, dst, m->dstZ, m->dstHeight);
        src = DRV_SIDE(m, src, m->srcZ, m->srcHeight);
        width = m->WidthInBytes, height = m->Height, depth = m->Depth;
    }
    n = side_range(&dst, width, height, depth, r);
    return n + side_range(&src, width, height, depth, &r[n]);
}

static const prof_copy_call_t *copy_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(copy_calls); i++) {
        if (copy_calls[i].cbid == cbid && copy_calls[i].domain == domain)
            return &copy_calls[i];
    }
    return NULL;
}

int umadv__prof_copy_ranges(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void *params, umadv_prof_range_t ranges[2])
{
    const prof_copy_call_t *c = copy_call(domain, cbid);

    if (c == NULL)
        return -1;
    if (params == NULL)
        return 0;
    switch (c->shape) {
    case PROF_LINEAR:
        return (int)linear_ranges(c, params, ranges);
    case PROF_PITCHED:
        return (int)pitched_ranges(c, params, ranges);
    case PROF_SET_3D:
        return (int)set_3d_ranges(c, params, ranges);
    case PROF_RT_3D:
    case PROF_RT_3D_PEER:
        return (int)rt_3d_ranges(c, params, ranges);
    default:
        return (int)drv_ranges(c, params, ranges);
    }
}
