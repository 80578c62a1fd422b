/*
 * The link probe (see linkprobe.h).
 */
#include "profiler/linkprobe.h"

#include <pthread.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cudart_util.h"

#define PROBE_BIG_MAX    (UINT64_C(256) << 20)
#define PROBE_BIG_MIN    (UINT64_C(16) << 20)
#define PROBE_PIECE      (UINT64_C(2) << 20)
#define PROBE_PIECES     16u
#define PROBE_REPEATS    3
#define PROBE_PAGE       4096u
/* Calls of the duplex round: the executor's size, not one big call. On an
 * H100 (bench/evict_channels, 2026-11-23) one 1 GiB call each way
 * overlapped (fetch 47 GB/s beside an eviction), while 64 MiB calls each
 * way held the fetch to 10 of its 45 GB/s. */
#define PROBE_DUPLEX_CALL (UINT64_C(16) << 20)


/* Touch one word of every page: read, add one, write back. Hand-written
 * PTX for sm_70 and later, JIT-compiled by the driver, so the library
 * needs no nvcc-built object. */
static const char touch_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry umadv_touch(.param .u64 base, .param .u64 words, .param .u64 stride)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .b64 %d<10>;\n"
    "    ld.param.u64 %d1, [base];\n"
    "    ld.param.u64 %d2, [words];\n"
    "    ld.param.u64 %d3, [stride];\n"
    "    cvta.to.global.u64 %d1, %d1;\n"
    "    mov.u32 %r1, %ctaid.x;\n"
    "    mov.u32 %r2, %ntid.x;\n"
    "    mov.u32 %r3, %tid.x;\n"
    "    mov.u32 %r4, %nctaid.x;\n"
    "    cvt.u64.u32 %d4, %r3;\n"
    "    mad.wide.u32 %d4, %r1, %r2, %d4;\n"
    "    mul.wide.u32 %d5, %r4, %r2;\n"
    "next:\n"
    "    setp.ge.u64 %p, %d4, %d2;\n"
    "    @%p bra done;\n"
    "    mad.lo.u64 %d6, %d4, %d3, %d1;\n"
    "    ld.global.u32 %r5, [%d6];\n"
    "    add.u32 %r5, %r5, 1;\n"
    "    st.global.u32 [%d6], %r5;\n"
    "    add.u64 %d4, %d4, %d5;\n"
    "    bra.uni next;\n"
    "done:\n"
    "    ret;\n"
    "}\n";

/* ---- fitting (pure) --------------------------------------------------- */

/* The trace format's plausibility rule (trace.h): a measured figure
 * outside it is a broken timer, and the trace would not read back. */
static int bw_believable(double bw)
{
    return umadv__link_figure_plausible(1, bw);
}

/* One channel one way: T = latency + bytes / bw for one call of @big_bytes
 * (@big seconds) and for each of @pieces calls of @piece_bytes (@pieces_t
 * seconds in all), solved for both; if noise makes the small calls look
 * cheaper than the model allows, the big call alone gives the bandwidth. */
static int fit_calls(uint64_t big_bytes, double big, uint64_t piece_bytes, uint32_t pieces,
                     double pieces_t, double *bw_p, double *latency_p)
{
    double per_piece, bw, latency;

    if (big <= 0 || pieces_t <= 0 || pieces == 0 || big_bytes <= piece_bytes)
        return -1;
    per_piece = pieces_t / pieces;
    bw = big > per_piece ? (double)(big_bytes - piece_bytes) / (big - per_piece)
                         : (double)big_bytes / big;
    if (!bw_believable(bw))
        return -1;
    latency = big - (double)big_bytes / bw;
    if (!umadv__link_figure_plausible(0, latency > 0 ? latency : 0))
        return -1;
    *bw_p      = bw;
    *latency_p = latency > 0 ? latency : 0;
    return 0;
}

/* A UVM migration one way. */
static int fit_direction(const umadv_link_sample_t *s, double big, double pieces,
                         double *bw_p, double *latency_p)
{
    return fit_calls(s->big_bytes, big, s->piece_bytes, s->pieces, pieces, bw_p, latency_p);
}

/* The staged channel one way (@out: evictions), into @bw_p and
 * @latency_p, or both 0: not measured (optional figures, trace.h). */
static void fit_stage(const umadv_link_sample_t *s, int out, double *bw_p, double *latency_p)
{
    double big = out ? s->stage_out_big : s->stage_in_big;
    double pieces = out ? s->stage_out_pieces : s->stage_in_pieces;

    *bw_p = *latency_p = 0;
    if (big <= 0)
        return; /* not measured: linkstage.c said why */
    if (fit_calls(s->stage_big_bytes, big, s->stage_piece_bytes, s->stage_pieces, pieces, bw_p,
                  latency_p) != 0) {
        *bw_p = *latency_p = 0;
        umadv_debug("link probe: staged %s timing not believable: not measured",
                    out ? "eviction" : "restore");
    }
}

/* Shares of their own rates that two transfers of @a and @b seconds
 * alone kept while both ran, from when each ended: @ta, @tb. The first to
 * end ran shared all along; the other did @x of its work shared, the rest
 * (a - x) alone after: tb = ta + (b - x). */
static void duplex_shares(double a, double b, double ta, double tb, double *sa_p, double *sb_p)
{
    double x;

    if (ta > tb) {
        duplex_shares(b, a, tb, ta, sb_p, sa_p);
        return;
    }
    *sa_p = a / ta;
    x = b - (tb - ta);
    *sb_p = x > 0 ? x / ta : 0;
}

static void fit_duplex(const umadv_link_sample_t *s, umadv_link_model_t *link)
{
    double fetch_alone, evict_alone, fs, es, calls;

    if (s->duplex_fetch <= 0 || s->duplex_evict <= 0 || s->duplex_bytes == 0)
        return; /* not measured: kept */
    link->duplex_fetch_bw = link->fetch_bw;
    link->duplex_evict_bw = link->evict_bw;
    calls = s->duplex_calls ? s->duplex_calls : 1;
    fetch_alone = calls * link->fetch_latency + (double)s->duplex_bytes / link->fetch_bw;
    evict_alone = calls * link->evict_latency + (double)s->duplex_bytes / link->evict_bw;
    duplex_shares(fetch_alone, evict_alone, s->duplex_fetch, s->duplex_evict, &fs, &es);
    /* a share above 1 is noise (both overlapped fully); a believable
     * bandwidth or none */
    if (fs < 1 && bw_believable(fs * link->fetch_bw))
        link->duplex_fetch_bw = fs * link->fetch_bw;
    if (es < 1 && bw_believable(es * link->evict_bw))
        link->duplex_evict_bw = es * link->evict_bw;
}

/* The staged channel both ways at once, as the UVM duplex figures from
 * the staged figures just fitted; unmeasured (0) without them. */
static void fit_stage_duplex(const umadv_link_sample_t *s, umadv_link_model_t *link)
{
    double out_alone, in_alone, os, is, calls;

    link->stage_duplex_evict_bw = link->stage_duplex_restore_bw = 0;
    if (s->stage_duplex_out <= 0 || s->stage_duplex_in <= 0 || s->stage_duplex_bytes == 0 ||
        link->stage_evict_bw <= 0 || link->stage_restore_bw <= 0)
        return;
    calls = s->stage_duplex_calls ? s->stage_duplex_calls : 1;
    out_alone = umadv__link_time(calls * link->stage_evict_latency, link->stage_evict_bw,
                                 s->stage_duplex_bytes);
    in_alone = umadv__link_time(calls * link->stage_restore_latency, link->stage_restore_bw,
                                s->stage_duplex_bytes);
    duplex_shares(out_alone, in_alone, s->stage_duplex_out, s->stage_duplex_in, &os, &is);
    link->stage_duplex_evict_bw = link->stage_evict_bw * (os < 1 ? os : 1);
    link->stage_duplex_restore_bw = link->stage_restore_bw * (is < 1 ? is : 1);
    if (!bw_believable(link->stage_duplex_evict_bw) ||
        !bw_believable(link->stage_duplex_restore_bw)) {
        link->stage_duplex_evict_bw = link->stage_duplex_restore_bw = 0;
        umadv_debug("link probe: staged duplex timing not believable: not measured");
    }
}

umadv_status_t umadv__link_fit(const umadv_link_sample_t *sample, umadv_link_model_t *link)
{
    umadv_status_t status = UMADV_OK;
    double bw;

    if (fit_direction(sample, sample->fetch_big, sample->fetch_pieces, &link->fetch_bw,
                      &link->fetch_latency) != 0) {
        umadv_warn("link probe: host-to-device prefetch timing not believable: keeping %.1f GB/s",
                   link->fetch_bw / 1e9);
        status = UMADV_ERR_NOT_ENFORCED;
    }
    if (fit_direction(sample, sample->evict_big, sample->evict_pieces, &link->evict_bw,
                      &link->evict_latency) != 0) {
        umadv_warn("link probe: device-to-host prefetch timing not believable: keeping %.1f GB/s",
                   link->evict_bw / 1e9);
        status = UMADV_ERR_NOT_ENFORCED;
    }
    if (sample->fault > 0) {
        bw = (double)sample->fault_bytes / sample->fault;
        if (bw_believable(bw)) {
            link->fault_bw = bw;
        } else {
            umadv_warn("link probe: demand-paging timing not believable: keeping %.1f GB/s",
                       link->fault_bw / 1e9);
            status = UMADV_ERR_NOT_ENFORCED;
        }
    }
    fit_duplex(sample, link);
    fit_stage(sample, 1, &link->stage_evict_bw, &link->stage_evict_latency);
    fit_stage(sample, 0, &link->stage_restore_bw, &link->stage_restore_latency);
    fit_stage_duplex(sample, link);
    return status;
}

/* ---- measuring ------------------------------------------------------- */

typedef struct probe {
    int             device;
    char           *buf;
    uint64_t        size;
    cudaLibrary_t   lib;
    cudaKernel_t    touch;
} probe_t;

static double seconds_since(uint64_t t0)
{
    return (double)(umadv__now_ns() - t0) / 1e9;
}

static struct cudaMemLocation probe_location(int device)
{
    struct cudaMemLocation loc;

    memset(&loc, 0, sizeof(loc));
    loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    loc.id   = device < 0 ? 0 : device;
    return loc;
}

/* Seconds to move @count pieces of @piece bytes from the start of the
 * buffer to @device (-1: the host), each its own call, as the executor's
 * worker would: the call blocks, and the stream is waited for. */
static umadv_status_t time_moves(const probe_t *p, int device, uint64_t piece, uint32_t count,
                                 double *seconds_p)
{
    uint64_t t0 = umadv__now_ns();
    umadv_status_t status = UMADV_OK;

    for (uint32_t i = 0; i < count && status == UMADV_OK; i++)
        status = UMADV_CUDART_FUNC(cudaMemPrefetchAsync(p->buf + (uint64_t)i * piece, piece,
                                                        probe_location(device), 0, 0));
    if (status == UMADV_OK)
        status = UMADV_CUDART_FUNC(cudaStreamSynchronize(0));
    if (status == UMADV_OK)
        *seconds_p = seconds_since(t0);
    return status;
}

static umadv_status_t time_touch(const probe_t *p, uint64_t bytes, double *seconds_p)
{
    unsigned long long words = bytes / PROBE_PAGE, stride = PROBE_PAGE;
    void *base = p->buf;
    void *args[] = {&base, &words, &stride};
    dim3 grid = {256, 1, 1}, block = {256, 1, 1};
    uint64_t t0 = umadv__now_ns();
    umadv_status_t status;

    status = UMADV_CUDART_FUNC(cudaLaunchKernel((const void *)p->touch, grid, block, args, 0, 0));
    if (status == UMADV_OK)
        status = UMADV_CUDART_FUNC(cudaStreamSynchronize(0));
    if (status == UMADV_OK)
        *seconds_p = seconds_since(t0);
    return status;
}

static void keep_min(double *best, double t)
{
    if (*best <= 0 || t < *best)
        *best = t;
}

/* One round: fetch and evict whole, then in pieces, then fault in. The
 * buffer starts and ends on the host. */
static umadv_status_t probe_round(const probe_t *p, umadv_link_sample_t *s)
{
    double t = 0;
    umadv_status_t status;

    status = time_moves(p, p->device, s->big_bytes, 1, &t);
    keep_min(&s->fetch_big, t);
    if (status == UMADV_OK)
        status = time_moves(p, -1, s->big_bytes, 1, &t);
    keep_min(&s->evict_big, t);
    if (status == UMADV_OK)
        status = time_moves(p, p->device, s->piece_bytes, s->pieces, &t);
    keep_min(&s->fetch_pieces, t);
    if (status == UMADV_OK)
        status = time_moves(p, -1, s->piece_bytes, s->pieces, &t);
    keep_min(&s->evict_pieces, t);
    if (status == UMADV_OK && p->touch != NULL) {
        status = time_touch(p, s->fault_bytes, &t);
        keep_min(&s->fault, t);
        if (status == UMADV_OK)
            status = time_moves(p, -1, s->fault_bytes, 1, &t);
    }
    return status;
}

/* ---- both directions at once ---------------------------------------- */

/* @bytes from @base to @device (-1: the host) in the executor's call
 * size, each call waited for, as its lanes do. */
static umadv_status_t duplex_calls(char *base, uint64_t bytes, int device, cudaStream_t stream)
{
    umadv_status_t status = UMADV_OK;

    for (uint64_t off = 0; off < bytes && status == UMADV_OK; off += PROBE_DUPLEX_CALL) {
        status = UMADV_CUDART_FUNC(cudaMemPrefetchAsync(base + off,
                                                        UMADV_MIN(PROBE_DUPLEX_CALL, bytes - off),
                                                        probe_location(device), 0, stream));
        if (status == UMADV_OK)
            status = UMADV_CUDART_FUNC(cudaStreamSynchronize(stream));
    }
    return status;
}

/* The eviction half of a duplex round, on its own thread (a prefetch
 * blocks its caller), released with the fetch by the barrier. */
typedef struct duplex_evict {
    const probe_t     *p;
    pthread_barrier_t *go;
    uint64_t           bytes;
    uint64_t           end_ns;  /* when its eviction completed */
    umadv_status_t     status;
} duplex_evict_t;

static void *duplex_evict_main(void *arg)
{
    duplex_evict_t *d = arg;
    cudaStream_t stream = NULL;

    d->status = UMADV_CUDART_FUNC(cudaSetDevice(d->p->device));
    if (d->status == UMADV_OK)
        d->status = UMADV_CUDART_FUNC(cudaStreamCreateWithFlags(&stream,
                                                                cudaStreamNonBlocking));
    pthread_barrier_wait(d->go);
    if (d->status == UMADV_OK)
        d->status = duplex_calls(d->p->buf, d->bytes, -1, stream);
    d->end_ns = umadv__now_ns();
    if (stream != NULL)
        (void)UMADV_CUDART_FUNC_LOG(cudaStreamDestroy(stream), UMADV_LOG_WARN);
    return NULL;
}

/* The fetch half, on this thread once both are released: seconds from
 * @t0_p (set at the release) to its end. */
static umadv_status_t duplex_fetch(const probe_t *p, uint64_t half, pthread_barrier_t *go,
                                   uint64_t *t0_p, double *seconds_p)
{
    umadv_status_t status;

    pthread_barrier_wait(go);
    *t0_p = umadv__now_ns();
    status = duplex_calls(p->buf + half, half, p->device, 0);
    *seconds_p = seconds_since(*t0_p);
    return status;
}

/* The first half of the buffer leaves the GPU while the second half
 * comes to it: when each ended. Starts and ends with the buffer on the
 * host. */
static umadv_status_t duplex_round(const probe_t *p, uint64_t half, double *fetch_p,
                                   double *evict_p)
{
    pthread_barrier_t go;
    duplex_evict_t d = {.p = p, .go = &go, .bytes = half};
    pthread_t thread;
    uint64_t t0 = 0;
    double back;
    umadv_status_t status = time_moves(p, p->device, half, 1, &back);

    if (status != UMADV_OK)
        return status;
    if (pthread_barrier_init(&go, NULL, 2) != 0)
        return UMADV_ERR_NO_MEMORY;
    if (pthread_create(&thread, NULL, duplex_evict_main, &d) != 0) {
        pthread_barrier_destroy(&go);
        return UMADV_ERR_NO_MEMORY;
    }
    status = duplex_fetch(p, half, &go, &t0, fetch_p);
    pthread_join(thread, NULL);
    pthread_barrier_destroy(&go);
    *evict_p = (double)(d.end_ns - t0) / 1e9;
    if (status == UMADV_OK)
        status = d.status;
    return status == UMADV_OK ? time_moves(p, -1, 2 * half, 1, &back) : status;
}

/* The best of the duplex rounds: the one whose later end is soonest. */
static umadv_status_t probe_duplex(const probe_t *p, umadv_link_sample_t *s)
{
    uint64_t half = (p->size / 2) & ~(PROBE_PIECE - 1);
    umadv_status_t status = UMADV_OK;

    s->duplex_bytes = half;
    s->duplex_calls = (uint32_t)((half + PROBE_DUPLEX_CALL - 1) / PROBE_DUPLEX_CALL);
    for (int r = 0; r <= PROBE_REPEATS && status == UMADV_OK; r++) {
        double tf = 0, te = 0;

        status = duplex_round(p, half, &tf, &te);
        if (status == UMADV_OK && r > 0 && /* the first round warms */
            (s->duplex_fetch <= 0 || UMADV_MAX(tf, te) < UMADV_MAX(s->duplex_fetch,
                                                                   s->duplex_evict))) {
            s->duplex_fetch = tf;
            s->duplex_evict = te;
        }
    }
    return status;
}

static umadv_status_t probe_size(uint64_t *size_p)
{
    size_t free_bytes = 0, total = 0;
    umadv_status_t status = UMADV_CUDART_FUNC(cudaMemGetInfo(&free_bytes, &total));
    uint64_t size;

    if (status != UMADV_OK)
        return status;
    /* Far below free memory: never oversubscribe a shared GPU. */
    size = UMADV_MIN(PROBE_BIG_MAX, (uint64_t)free_bytes / 8) & ~(PROBE_PIECE - 1);
    if (size < PROBE_BIG_MIN) {
        umadv_warn("link probe: only %zu bytes of gpu memory free: not probing", free_bytes);
        return UMADV_ERR_UNSUPPORTED;
    }
    *size_p = size;
    return UMADV_OK;
}

static void touch_load(probe_t *p)
{
    if (UMADV_CUDART_FUNC_LOG(cudaLibraryLoadData(&p->lib, touch_ptx, NULL, NULL, 0, NULL,
                                                  NULL, 0), UMADV_LOG_WARN) != UMADV_OK)
        return;
    if (UMADV_CUDART_FUNC_LOG(cudaLibraryGetKernel(&p->touch, p->lib, "umadv_touch"),
                              UMADV_LOG_WARN) != UMADV_OK) {
        cudaLibraryUnload(p->lib);
        p->lib   = NULL;
        p->touch = NULL;
    }
}

static umadv_status_t probe_run(int device, umadv_link_sample_t *s)
{
    probe_t p = {.device = device};
    umadv_link_sample_t warm;
    umadv_status_t status;

    status = probe_size(&p.size);
    if (status != UMADV_OK)
        return status;
    status = UMADV_CUDART_FUNC(cudaMallocManaged((void **)&p.buf, p.size, cudaMemAttachGlobal));
    if (status != UMADV_OK)
        return status;
    touch_load(&p);
    memset(p.buf, 1, p.size); /* host pages exist before anything is timed */
    s->big_bytes   = p.size;
    s->fault_bytes = p.size;
    s->piece_bytes = PROBE_PIECE;
    s->pieces      = PROBE_PIECES;
    /* The first round only warms both sides; the best of the others counts. */
    warm = *s;
    status = probe_round(&p, &warm);
    for (int r = 0; r < PROBE_REPEATS && status == UMADV_OK; r++)
        status = probe_round(&p, s);
    if (status == UMADV_OK)
        status = probe_duplex(&p, s);
    /* Failing to release costs memory, not the probe's figures. */
    if (p.lib != NULL)
        (void)UMADV_CUDART_FUNC_LOG(cudaLibraryUnload(p.lib), UMADV_LOG_WARN);
    (void)UMADV_CUDART_FUNC_LOG(cudaFree(p.buf), UMADV_LOG_WARN);
    /* on buffers of its own, once the UVM one is released; a channel the
     * driver lacks costs only its figures (linkstage.c) */
    if (status == UMADV_OK)
        (void)umadv__link_probe_stage(umadv__cuda_ops_select(0), device, s);
    return status;
}

static void probe_log(int device, const umadv_link_model_t *link)
{
    umadv_info("link probe on gpu %d: fetch %.1f GB/s + %.0f us/call, evict %.1f GB/s + "
               "%.0f us/call, demand paging %.2f GB/s; both at once: fetch %.1f GB/s, evict "
               "%.1f GB/s; staged: out %.1f GB/s + %.0f us/call, back %.1f GB/s + %.0f us/call, "
               "both at once: out %.1f GB/s, back %.1f GB/s (0: not measured)", device,
               link->fetch_bw / 1e9, link->fetch_latency * 1e6, link->evict_bw / 1e9,
               link->evict_latency * 1e6, link->fault_bw / 1e9, link->duplex_fetch_bw / 1e9,
               link->duplex_evict_bw / 1e9, link->stage_evict_bw / 1e9,
               link->stage_evict_latency * 1e6, link->stage_restore_bw / 1e9,
               link->stage_restore_latency * 1e6, link->stage_duplex_evict_bw / 1e9,
               link->stage_duplex_restore_bw / 1e9);
}

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static int probe_cached_device = -1;
static umadv_link_model_t probe_cached;

umadv_status_t umadv__link_probe(int device, umadv_link_model_t *link)
{
    umadv_link_sample_t sample;
    umadv_link_model_t fitted = *link;
    umadv_status_t status;
    int current = 0;

    pthread_mutex_lock(&probe_lock);
    if (probe_cached_device == device) {
        *link = probe_cached;
        pthread_mutex_unlock(&probe_lock);
        return UMADV_OK;
    }
    memset(&sample, 0, sizeof(sample));
    status = UMADV_CUDART_FUNC(cudaGetDevice(&current));
    if (status == UMADV_OK && current != device)
        status = UMADV_CUDART_FUNC(cudaSetDevice(device));
    if (status == UMADV_OK) {
        status = probe_run(device, &sample);
        /* The application's thread must get its device back; if it cannot,
         * the probe has failed whatever it measured. */
        if (current != device) {
            umadv_status_t restored = UMADV_CUDART_FUNC(cudaSetDevice(current));
            status = status == UMADV_OK ? restored : status;
        }
    }
    if (status == UMADV_OK) {
        umadv__link_fit(&sample, &fitted); /* unbelievable parts keep defaults */
        probe_log(device, &fitted);
        probe_cached        = fitted;
        probe_cached_device = device;
        *link = fitted;
    }
    pthread_mutex_unlock(&probe_lock);
    return status;
}
