/*
 * The application's copies and memsets under staging, with CUPTI mocked.
 * The profiler's watch: its callbacks are on only while watched; each
 * runtime and driver family reports the ranges its parameters name
 * (pitched sides as spans, arrays left out); a runtime call is reported
 * once, not again for its own driver call; nothing after the watch stops.
 * Through a context on the host backend: a copy from a staged block,
 * made between steps, reads the bytes last written (the same read
 * without the watch reads the discard's poison), a memset of staged
 * data is not undone by a later restore, and an eviction behind the step
 * end before a copy migrates what the copy touched; a re-profile restores
 * everything staged and the watch goes to the recording; freeing a staged
 * block drops its staging.
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/util.h"
#include "exec/exec_int.h"
#include "profiler/cupti_ops.h"
#include "profiler/profiler_int.h"
#include "tap.h"
#include "testutil.h"
#include "cupti_mock.h"

/* A call as CUPTI reports it: entry or exit. */
static void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                 const void *params)
{
    mock_call(domain, cbid, site, params, NULL, 0);
}

#define RT  CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API

/* ---- the watcher -------------------------------------------------------- */

static struct {
    umadv_prof_range_t ranges[16];
    size_t             n, calls;
} seen;

static void watcher(void *arg, const umadv_prof_range_t *ranges, size_t n)
{
    seen.calls++;
    for (size_t i = 0; i < n && seen.n < UMADV_ARRAY_SIZE(seen.ranges); i++)
        seen.ranges[seen.n++] = ranges[i];
}

static uint32_t no_launch(void *arg, const char *name, unsigned flags,
                          const umadv_prof_region_t *regions, size_t nregions)
{
    return UMADV_STEP_NONE;
}

/* Entry and exit of one call: what the watcher was told. */
static size_t one_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *params)
{
    memset(&seen, 0, sizeof(seen));
    call(domain, cbid, CUPTI_API_ENTER, params);
    call(domain, cbid, CUPTI_API_EXIT, params);
    return seen.calls == 1 ? seen.n : 0;
}

static int range_is(size_t i, uintptr_t ptr, uint64_t bytes)
{
    return i < seen.n && (uintptr_t)seen.ranges[i].ptr == ptr && seen.ranges[i].bytes == bytes;
}

#define A(_x) ((void *)(uintptr_t)(_x))

static void test_runtime_families(void)
{
    cudaMemcpy_v3020_params c = {.dst = A(0x1000), .src = A(0x9000), .count = 300};
    cudaMemcpyPeerAsync_v4000_params peer = {.dst = A(0x2000), .src = A(0x3000), .count = 64};
    cudaMemcpy2DAsync_ptsz_v7000_params c2 = {.dst = A(0x10000), .dpitch = 512,
                                              .src = A(0x20000), .spitch = 256,
                                              .width = 100, .height = 4};
    struct cudaMemcpy3DParms p3 = {
        .srcPos = {8, 1, 2}, .srcPtr = {A(0x40000), 256, 64, 16},
        .dstPos = {0, 0, 0}, .dstPtr = {A(0x80000), 128, 32, 8}, .extent = {16, 2, 3}};
    cudaMemcpy3D_v3020_params c3 = {.p = &p3};
    cudaMemsetAsync_v3020_params m = {.devPtr = A(0x5000), .value = 0, .count = 77};
    cudaMemset2D_ptds_v7000_params m2 = {.devPtr = A(0x6000), .pitch = 64, .width = 10,
                                         .height = 3};
    cudaMemset3D_v3020_params m3 = {.pitchedDevPtr = {A(0x7000), 32, 32, 4},
                                    .extent = {20, 2, 2}};

    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &c) == 2 &&
           range_is(0, 0x1000, 300) && range_is(1, 0x9000, 300),
       "cudaMemcpy: destination and source");
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000, &peer) == 2 &&
           range_is(0, 0x2000, 64) && range_is(1, 0x3000, 64),
       "cudaMemcpyPeerAsync");
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000, &c2) == 2 &&
           range_is(0, 0x10000, 3 * 512 + 100) && range_is(1, 0x20000, 3 * 256 + 100),
       "cudaMemcpy2DAsync_ptsz: each side from its first byte to its last");
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, &c3) == 2 &&
           range_is(0, 0x80000, (2 * 8 + 1) * 128 + 16) &&
           range_is(1, 0x40000 + (2 * 16 + 1) * 256 + 8, (2 * 16 + 1) * 256 + 16),
       "cudaMemcpy3D: slices of ysize rows, from the side's position");
    p3.srcArray = (cudaArray_t)A(0xa11a7);
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, &c3) == 1 &&
           range_is(0, 0x80000, (2 * 8 + 1) * 128 + 128),
       "from an array: only the linear side, whole rows (the width counts elements)");
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, &m) == 1 &&
           range_is(0, 0x5000, 77),
       "cudaMemsetAsync");
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000, &m2) == 1 &&
           range_is(0, 0x6000, 2 * 64 + 10),
       "cudaMemset2D_ptds");
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020, &m3) == 1 &&
           range_is(0, 0x7000, (1 * 4 + 1) * 32 + 20),
       "cudaMemset3D");
    c.count = 0;
    ok(one_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &c) == 0 && seen.calls == 0,
       "a copy of no bytes touches nothing: not told");
}

static void test_driver_families(void)
{
    cuMemcpyDtoHAsync_v2_ptsz_params dh = {.dstHost = A(0x1000), .srcDevice = 0x9000,
                                           .ByteCount = 40};
    cuMemcpyHtoD_v2_params hd = {.dstDevice = 0x2000, .srcHost = A(0x8000), .ByteCount = 8};
    cuMemcpy_ptds_params uva = {.dst = 0x3000, .src = 0x4000, .ByteCount = 12};
    CUDA_MEMCPY2D d2 = {.srcXInBytes = 4, .srcY = 2, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = 0x10000, .srcPitch = 256,
                        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = A(0x20000),
                        .dstPitch = 64, .WidthInBytes = 50, .Height = 3};
    cuMemcpy2DAsync_v2_params c2 = {.pCopy = &d2};
    CUDA_MEMCPY3D d3 = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                        .dstZ = 1, .dstMemoryType = CU_MEMORYTYPE_UNIFIED, .dstDevice = 0x40000,
                        .dstPitch = 128, .dstHeight = 4, .WidthInBytes = 100, .Height = 2,
                        .Depth = 2};
    cuMemcpy3D_v2_params c3 = {.pCopy = &d3};
    CUDA_MEMCPY3D_PEER dp = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = 0x50000,
                             .srcPitch = 64, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                             .dstDevice = 0x60000, .dstPitch = 64, .WidthInBytes = 64,
                             .Height = 1, .Depth = 1};
    cuMemcpy3DPeerAsync_params cp = {.pCopy = &dp};
    cuMemsetD32_v2_params s32 = {.dstDevice = 0x7000, .N = 10};
    cuMemsetD2D16Async_ptsz_params s2 = {.dstDevice = 0x8000, .dstPitch = 100, .Width = 5,
                                         .Height = 2};

    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz, &dh) == 2 &&
           range_is(0, 0x1000, 40) && range_is(1, 0x9000, 40),
       "cuMemcpyDtoHAsync_v2_ptsz");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &hd) == 2 &&
           range_is(0, 0x2000, 8) && range_is(1, 0x8000, 8),
       "cuMemcpyHtoD_v2: the host side too (it may be managed)");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds, &uva) == 2 &&
           range_is(0, 0x3000, 12) && range_is(1, 0x4000, 12),
       "cuMemcpy_ptds");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2, &c2) == 2 &&
           range_is(0, 0x20000, 2 * 64 + 50) && range_is(1, 0x10000 + 2 * 256 + 4, 2 * 256 + 50),
       "cuMemcpy2DAsync_v2: host and device sides by their memory types");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, &c3) == 1 &&
           range_is(0, 0x40000 + 4 * 128, (1 * 4 + 1) * 128 + 100),
       "cuMemcpy3D_v2 from an array: the unified destination only");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync, &cp) == 2 &&
           range_is(0, 0x60000, 64) && range_is(1, 0x50000, 64),
       "cuMemcpy3DPeerAsync: one row of one slice");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, &s32) == 1 &&
           range_is(0, 0x7000, 40),
       "cuMemsetD32_v2: N words of 4 bytes");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz, &s2) == 1 &&
           range_is(0, 0x8000, 100 + 10),
       "cuMemsetD2D16Async_ptsz: widths in elements of 2 bytes");
}

/* A runtime call and the driver call it makes: told once, at the
 * runtime call's entry. */
static void test_once(void)
{
    cudaMemcpyAsync_v3020_params rt = {.dst = A(0x1000), .src = A(0x2000), .count = 16};
    cuMemcpyAsync_params drv = {.dst = 0x1000, .src = 0x2000, .ByteCount = 16};
    size_t at_entry;

    memset(&seen, 0, sizeof(seen));
    call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_API_ENTER, &rt);
    at_entry = seen.calls;
    call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_API_ENTER, &drv);
    call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_API_EXIT, &drv);
    call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_API_EXIT, &rt);
    ok(at_entry == 1 && seen.calls == 1, "a runtime copy is told at its entry, once");
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &drv) == 2,
       "the driver's own call, made by the application, is told");
}

static void test_watch(void)
{
    cudaMemcpy_v3020_params c = {.dst = A(0x1000), .src = A(0x9000), .count = 300};
    cuMemcpyDtoD_v2_params d = {.dstDevice = 0x1000, .srcDevice = 0x2000, .ByteCount = 4};
    umadv_profiler_t *prof = NULL;

    mock_reset();
    if (!ok(umadv__prof_open(1, no_launch, NULL, &prof) == UMADV_OK && prof != NULL,
            "a profiler on the mock"))
        return;
    ok(mock.copy_callbacks == 0, "not watched: no copy callback is on");
    is(umadv__prof_watch_copies(prof, watcher, NULL), UMADV_OK, "watched");
    is(mock.copy_callbacks, (int)umadv__prof_copy_ncallbacks(),
       "every copy and memset callback on (%zu)", umadv__prof_copy_ncallbacks());
    test_runtime_families();
    test_driver_families();
    test_once();

    /* a runtime call whose exit the watch does not see */
    call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_ENTER, &c);
    umadv__prof_watch_copies(prof, NULL, NULL);
    ok(mock.copy_callbacks == 0, "stopped: every copy callback off");
    memset(&seen, 0, sizeof(seen));
    call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_ENTER, &c);
    ok(seen.calls == 0, "a callback CUPTI delivers late tells nobody");
    umadv__prof_watch_copies(prof, watcher, NULL);
    ok(one_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, &d) == 2,
       "watched again: runtime calls left open under the last watch hide no driver call");
    umadv__prof_close(prof);
    ok(mock.copy_callbacks == 0 && !mock.subscribed, "closing stops the watch");
}

/* ---- through a context ------------------------------------------------ */

#define SECTION (64 * UMADV_KIB)
#define NBLOCKS 4
#define BLOCK   (4 * SECTION)

typedef struct app {
    umadv_context_t ctx;
    unsigned char  *block[NBLOCKS], *shadow[NBLOCKS];
    unsigned char   out[BLOCK];
    unsigned        seed;
    int             wrong, poisoned, copies;
} app_t;

/* Step j reads block j and writes block j + 1 on the CPU. */
static void step(app_t *a, int j)
{
    int r = j, w = (j + 1) % NBLOCKS;

    umadv_step_begin(a->ctx, NULL, NULL);
    umadv_step_access(a->ctx, a->block[r], BLOCK, UMADV_ACCESS_READ);
    umadv_step_access(a->ctx, a->block[w], BLOCK, UMADV_ACCESS_RW);
    a->wrong |= memcmp(a->block[r], a->shadow[r], BLOCK) != 0;
    for (size_t i = 0; i < BLOCK; i += 97)
        a->block[w][i] = a->shadow[w][i] = (unsigned char)(a->seed++ * 31 + i);
    umadv_step_end(a->ctx, 1000000);
}

/* Block @b's first staged section, once the lanes are idle (its range
 * then holds the discard's poison), or -1. */
static long staged_section(app_t *a, int b)
{
    umadv_exec_t *e = a->ctx->replay.exec;
    umadv_pool_loc_t loc;
    uint32_t id;

    if (e == NULL || umadv__pool_lookup(a->ctx->pool, a->block[b], &loc) != UMADV_OK)
        return -1;
    id = ((umadv_ctx_alloc_t *)(uintptr_t)loc.user)->bound;
    if (id == UMADV_CTX_NO_TRACE_ID)
        return -1;
    umadv__exec_drain(e);
    for (uint32_t i = 0; i < e->trace->allocs[id].nsections; i++) {
        if (e->core.staged[e->trace->allocs[id].first_section + i])
            return (long)i;
    }
    return -1;
}

/* The application copies section @s of block @b to the host, as
 * cudaMemcpy does: the call's entry, the copy, its exit. */
static void app_copy(app_t *a, int b, long s)
{
    unsigned char *src = a->block[b] + s * SECTION;
    cudaMemcpy_v3020_params p = {.dst = a->out, .src = src, .count = SECTION,
                                 .kind = cudaMemcpyDeviceToHost};

    a->poisoned |= memcmp(src, a->shadow[b] + s * SECTION, SECTION) != 0;
    call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_ENTER, &p);
    memcpy(a->out, src, SECTION);
    call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_API_EXIT, &p);
    a->wrong |= memcmp(a->out, a->shadow[b] + s * SECTION, SECTION) != 0;
    a->copies++;
}

/* And sets its first half, as cuMemsetD8Async does. */
static void app_memset(app_t *a, int b, long s)
{
    unsigned char *dst = a->block[b] + s * SECTION;
    cuMemsetD8Async_params p = {.dstDevice = (CUdeviceptr)(uintptr_t)dst, .uc = 0x5a,
                                .N = SECTION / 2};

    call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_API_ENTER, &p);
    memset(dst, 0x5a, SECTION / 2);
    memset(a->shadow[b] + s * SECTION, 0x5a, SECTION / 2);
    call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_API_EXIT, &p);
    a->copies++;
}

/* Between steps, the application copies from (odd iterations: sets)
 * every block that has a staged section. */
static void iteration(app_t *a, int it)
{
    umadv_iteration_begin(a->ctx);
    for (int j = 0; j < NBLOCKS; j++) {
        step(a, j);
        for (int b = 0; b < NBLOCKS; b++) {
            long s = staged_section(a, b);

            if (s >= 0 && it % 2 == 0)
                app_copy(a, b, s);
            else if (s >= 0)
                app_memset(a, b, s);
        }
    }
}

static int app_init(app_t *a)
{
    memset(a, 0, sizeof(*a));
    a->ctx = test_host_context(SECTION, 2 * BLOCK);
    if (a->ctx == NULL || a->ctx->profiler == NULL)
        return -1;
    for (int b = 0; b < NBLOCKS; b++) {
        if (umadv_malloc(a->ctx, BLOCK, "block", (void **)&a->block[b]) != UMADV_OK ||
            (a->shadow[b] = calloc(1, BLOCK)) == NULL)
            return -1;
        memset(a->block[b], 0, BLOCK);
        umadv_set_stageable(a->ctx, a->block[b], 1);
    }
    return 0;
}

static int app_intact(app_t *a)
{
    int intact = !a->wrong;

    for (int b = 0; b < NBLOCKS; b++) {
        umadv_set_stageable(a->ctx, a->block[b], 0); /* restores it */
        intact &= memcmp(a->block[b], a->shadow[b], BLOCK) == 0;
        umadv_set_stageable(a->ctx, a->block[b], 1);
    }
    return intact;
}

/* One call whose range spans every block (and what lies between them):
 * every staged section of each comes back. */
static void test_span(app_t *a)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    cuMemsetD8_v2_params p = {.uc = 0};
    int staged = 0, intact = 1;

    for (int b = 0; b < NBLOCKS; b++) {
        lo = UMADV_MIN(lo, (uintptr_t)a->block[b]);
        hi = UMADV_MAX(hi, (uintptr_t)a->block[b] + BLOCK);
        staged |= staged_section(a, b) >= 0;
    }
    p.dstDevice = lo;
    p.N = hi - lo;
    call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_API_ENTER, &p);
    for (int b = 0; b < NBLOCKS; b++)
        intact &= memcmp(a->block[b], a->shadow[b], BLOCK) == 0;
    call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_API_EXIT, &p);
    ok(staged && intact, "a call over every block restores the staged sections of each");
}

/* A re-profile stops the replay: everything staged is back first, and
 * copies are no longer watched. */
static void test_reprofile(app_t *a)
{
    int intact = 1, staged = 0;

    for (int b = 0; b < NBLOCKS; b++)
        staged |= staged_section(a, b) >= 0;
    umadv_profile_next_iteration(a->ctx);
    umadv_iteration_begin(a->ctx);
    for (int b = 0; b < NBLOCKS; b++)
        intact &= memcmp(a->block[b], a->shadow[b], BLOCK) == 0;
    ok(staged && a->ctx->replay.exec == NULL && intact && mock.copy_callbacks > 0,
       "a re-profile stops the replay: the staged blocks hold their bytes again; copies are "
       "watched for the recording now (api/pcopies.c), not to restore anything");
    for (int j = 0; j < NBLOCKS; j++) /* the rest of the recorded iteration */
        step(a, j);
}

/* A staged block freed: its staging dropped (dead data), nothing
 * restored. */
static void test_free(app_t *a)
{
    umadv_exec_t *e = a->ctx->replay.exec;
    umadv_exec_stats_t before, after;
    uint32_t used = 0;
    int freed = -1;

    for (int b = 0; e != NULL && b < NBLOCKS && freed < 0; b++) {
        if (staged_section(a, b) >= 0)
            freed = b;
    }
    if (freed >= 0) {
        umadv__exec_get_stats(e, &before);
        used = e->core.stage_used;
        umadv_free(a->ctx, a->block[freed]);
        a->block[freed] = NULL;
        umadv__exec_get_stats(e, &after);
    }
    ok(freed >= 0 && e->core.stage_used < used &&
           after.sync_restored_bytes == before.sync_restored_bytes,
       "umadv_free of a staged block drops its staging (%u of %u sections marked staged "
       "left), restores nothing", freed >= 0 ? e->core.stage_used : 0, used);
}

static void test_context(void)
{
    umadv_exec_stats_t st;
    app_t a;

    mock_reset();
    if (!ok(app_init(&a) == 0, "a host context profiled on the mock, four stageable blocks "
                               "under a two-block budget")) {
        skip("no context", "watched while replaying");
        skip("no context", "copies");
        skip("no context", "intact");
        skip("no context", "held");
        skip("no context", "intact");
        skip("no context", "oracle");
        skip("no context", "span");
        skip("no context", "re-profiled");
        skip("no context", "freed");
        skip("no context", "unwatched");
        return;
    }
    umadv_profile_next_iteration(a.ctx);
    iteration(&a, 0);
    iteration(&a, 0); /* the timing pass */
    umadv_set_policy(a.ctx, UMADV_POLICY_PLAN);
    ok(a.ctx->replay.exec != NULL && mock.copy_callbacks > 0,
       "replaying with staging: copies are watched");
    for (int it = 0; it < 4; it++)
        iteration(&a, it);
    umadv__exec_get_stats(a.ctx->replay.exec, &st);
    ok(a.copies > 0 && a.poisoned && st.copy_restored_bytes > 0,
       "copies and memsets of staged sections between steps (%d; their ranges held the "
       "discard's poison before the call, %llu bytes restored for them)", a.copies,
       (unsigned long long)st.copy_restored_bytes);
    ok(app_intact(&a), "each copy read the bytes last written, no memset was undone");
    umadv_set_policy(a.ctx, UMADV_POLICY_PREFETCH_ALL);
    for (int it = 0; it < 4; it++)
        iteration(&a, it);
    umadv__exec_get_stats(a.ctx->replay.exec, &st);
    ok(st.copy_held_bytes > 0 && st.staged_bytes > 0,
       "prefetch-all evicts when a step begins, behind the step end before the copies: "
       "what they touched migrates (%llu bytes), other data stages (%llu bytes)",
       (unsigned long long)st.copy_held_bytes, (unsigned long long)st.staged_bytes);
    ok(app_intact(&a), "prefetch-all: every byte read was the last written");
    umadv_set_policy(a.ctx, UMADV_POLICY_ORACLE);
    ok(a.ctx->replay.exec != NULL && !a.ctx->replay.exec->p.stage && mock.copy_callbacks > 0,
       "oracle never evicts: nothing is staged, but copies are watched (what they write "
       "is placed first)");
    umadv_set_policy(a.ctx, UMADV_POLICY_PREFETCH_ALL);
    iteration(&a, 0); /* stages again */
    test_span(&a);
    iteration(&a, 0);
    test_reprofile(&a);
    iteration(&a, 0); /* the timing pass */
    umadv_plan(a.ctx);
    for (int it = 0; it < 2; it++)
        iteration(&a, it);
    test_free(&a);
    for (int b = 0; b < NBLOCKS; b++) {
        umadv_free(a.ctx, a.block[b]);
        free(a.shadow[b]);
    }
    umadv_context_destroy(a.ctx);
    ok(mock.copy_callbacks == 0, "the context gone: copies are not watched");
}

int main(void)
{
    log_capture_start();
    env_clear();
    setenv("UMADV_PROFILE_PASSES", "1", 1); /* the iterations below follow one pass */
    plan(38);
    umadv__cupti_ops_install(&mock_ops);
    test_watch();
    test_context();
    umadv__cupti_ops_install(NULL);
    log_capture_stop();
    return exit_status();
}
