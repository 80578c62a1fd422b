/*
 * The context's side of the profiling pass: the link probe at start-up,
 * CUPTI launches numbered into steps of the recording, kernel parameters
 * and fault records turned into accesses, a profile's two passes, and
 * replay fault counts (the timing pass after a profile: tpass.c). When
 * to do each is the life cycle's (lifecycle.c); moving the live blocks
 * off and back onto the GPU is the executor's bulk mover's (exec/bulk.h):
 * this file only says which ranges.
 */
#include "api/context.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/keyed.h"
#include "common/log.h"
#include "common/util.h"
#include "exec/bulk.h"
#include "profiler/attrib.h"
#include "profiler/linkprobe.h"
#include "profiler/profiler.h"

/* A replay's stray faults (kernels whose arguments cannot be scanned):
 * some 70 groups per PyTorch ResNet-50 iteration (replay.c). */
#define PROFILE_STALL_FAULTS 128

/* What a first pass (TWO PASSES) may move to the GPU and keep its kernel
 * records as durations. Its faults are no measure: a PyTorch ResNet-50's
 * first pass faulted 608 groups that moved nothing, first touches of new
 * pages (H100, 2026-11-27). */
#define PROFILE_STALL_BYTES (64u << 20)

/* Replay validation counts the faults of a replay's first iterations, then
 * of one in UMADV_FAULT_PERIOD (see count_faults_now). */
#define PROFILE_FAULT_FIRST  2

/* ---- launches -------------------------------------------------------- */

/*
 * FETCHING SCANNED BLOCKS BACK. Before each launch whose parameters
 * cannot be scanned, every live block goes to the host so that what it
 * touches faults (record_unlaid). The launches after it whose parameters
 * were scanned would then fault their blocks back at demand paging's few
 * GB/s: a PyTorch ResNet-50 under a budget moved 28 GiB to the GPU by
 * faults in its profiled iteration (H100, 11 s). Their accesses are
 * known from the scan, so their blocks are fetched back by prefetch
 * instead, ordered before the launch as the evictions are, once per
 * eviction (profile_epoch); so are the ranges a step declares. Not under
 * umadv profile, whose report shows the faults the profile takes.
 * Nor where the block lies in sections that a fetch brought to the GPU
 * and no eviction touched since (the pool's marks, pool.h, SECTION
 * MARKS): a new block in the room of blocks freed there. A prefetch of
 * pages already on the GPU is a call that walks them all: the new blocks
 * of a PyTorch ResNet-50's second pass, 20.5 GB in 676 calls, mostly in
 * such room; fetched not at all, their pages where earlier blocks had
 * been evicted faulted in (GPT-2, densenet121: slower; H200, 2026-11-29).
 */
typedef struct scan {
    umadv_context_t     ctx;
    umadv_bulk_range_t *fetch;   /* blocks to fetch back before the launch */
    size_t              nfetch, cap;
} scan_t;

/* Whether this profile fetches back: something was evicted, and not
 * under umadv profile, which reports the faults as they come. */
static int fetching_back(const umadv_context_t ctx)
{
    return ctx->config.profile_output[0] == '\0' && ctx->profile_evicted &&
           !ctx->profile_fetch_failed;
}

/* The bytes @n ranges cover. */
static uint64_t ranges_bytes(const umadv_bulk_range_t *ranges, size_t n)
{
    uint64_t bytes = 0;

    for (size_t i = 0; i < n; i++)
        bytes += ranges[i].end - ranges[i].start;
    return bytes;
}

/* The executor's bulk mover (exec/bulk.h) for the profile, which counts
 * the calls, their bytes (the spans it leaves first in @ranges) and the
 * host time in them each way (profile_report). Returns the calls. */
static size_t profile_move(umadv_context_t ctx, umadv_bulk_range_t *ranges, size_t n,
                           int location, unsigned flags, size_t *failed_p)
{
    int out = location == UMADV_CUDA_LOCATION_HOST;
    uint64_t start = umadv__now_ns();
    size_t calls = umadv__exec_bulk_move(ctx->ops, ranges, n, location, ctx->numa, flags,
                                         failed_p);

    ctx->profile_move_ns[out] += umadv__now_ns() - start;
    ctx->profile_move_calls[out] += calls;
    ctx->profile_move_bytes[out] += ranges_bytes(ranges, calls);
    return calls;
}

/* Fetch @n ranges back to the GPU, ordered on the legacy stream as the
 * evictions are (no wait). A call that fails (logged by the backend)
 * ends fetching back for this profile: the rest faults back, and a
 * device that fails every call is not asked once per launch. */
static void fetch_back(umadv_context_t ctx, umadv_bulk_range_t *ranges, size_t n)
{
    size_t failed = 0;

    profile_move(ctx, ranges, n, ctx->config.device, 0, &failed);
    ctx->profile_fetch_failed = failed > 0;
}

void umadv__ctx_profile_arrived(umadv_context_t ctx, umadv_ctx_alloc_t *alloc)
{
    alloc->gpu_epoch = ctx->profile_epoch;
}

static int may_be_on_gpu(const umadv_ctx_alloc_t *alloc);

/* The sections the block at @ptr of @size covers whole, marked on the
 * GPU: not the rest of its span, which its fetch does not move (marked,
 * the span past their size faulted 13 MiB into a PyTorch ResNet-50's
 * second pass: blocks new in that room found it on the host; H200,
 * 2026-11-29). */
static void gpu_mark(umadv_context_t ctx, const void *ptr, uint64_t size)
{
    uintptr_t start = (uintptr_t)ptr;

    umadv__pool_mark(ctx->pool, start, start + size, 1);
}

/* The runs of [@lo, @hi) not known on the GPU (the pool's marks), into
 * @out unless NULL, their bytes added to *@bytes_p unless NULL; returns
 * how many. */
static size_t unknown_runs(const umadv_context_t ctx, uintptr_t lo, uintptr_t hi,
                           umadv_bulk_range_t *out, uint64_t *bytes_p)
{
    size_t n = 0;
    uintptr_t end;

    for (; (lo = umadv__pool_unmarked(ctx->pool, lo, hi, &end)) < hi; lo = end, n++) {
        if (out != NULL)
            out[n] = (umadv_bulk_range_t){lo, end, lo}; /* each run a call of its own */
        if (bytes_p != NULL)
            *bytes_p += end - lo;
    }
    return n;
}

/* Where an evicting profile's time goes (debug): its @calls each way,
 * their bytes and host time, what the evictions' spans held. */
static void moves_report(const umadv_context_t ctx, uint64_t calls)
{
    const uint64_t *ns = ctx->profile_move_ns, *bytes = ctx->profile_move_bytes;
    char out[32], live[32], known[32], in[32];

    umadv_debug("profiling: %llu calls moved blocks (%.1f ms of host time in them; to the "
                "host %llu calls, %.1f ms, %s of spans, %s of them live blocks, %s known on "
                "the gpu; to the gpu %llu, %.1f ms, %s); the evictions before launches "
                "without a layout %.1f ms, choosing what to keep and fetching back included; "
                "they left out %zu blocks on the host since an earlier one, %llu of them "
                "unseen where faults had brought them back",
                (unsigned long long)calls, (ns[0] + ns[1]) / 1e6,
                (unsigned long long)ctx->profile_move_calls[1],
                ns[1] / 1e6, umadv__size_format(bytes[1], out, sizeof(out)),
                umadv__size_format(ctx->profile_evict_live, live, sizeof(live)),
                umadv__size_format(ctx->profile_evict_known, known, sizeof(known)),
                (unsigned long long)ctx->profile_move_calls[0], ns[0] / 1e6,
                umadv__size_format(bytes[0], in, sizeof(in)), ctx->profile_evict_ns / 1e6,
                ctx->nleft_out, (unsigned long long)ctx->profile_arrived_unseen);
}

/* What an eviction's spans (@n, made of blocks' spans covering
 * @live bytes) hold, for the debug report: the live blocks, and the
 * sections known on the GPU (a walk of the marks, only when said). */
static void evict_spans_count(umadv_context_t ctx, const umadv_bulk_range_t *spans, size_t n,
                              uint64_t live)
{
    uint64_t unknown = 0;

    ctx->profile_evict_live += live;
    if (UMADV_LOG_DEBUG > umadv__log_level)
        return;
    for (size_t i = 0; i < n; i++)
        unknown_runs(ctx, spans[i].start, spans[i].end, NULL, &unknown);
    ctx->profile_evict_known += ranges_bytes(spans, n) - unknown;
}

/* A scanned block fetched back ahead of its launch: only the runs of it
 * not known on the GPU. Fetched whole where the rest lay there, its
 * calls cost the second pass's host time more than the faults they
 * spared: ResNet-50 318 ms against 165, densenet121 161 against 59
 * (H200, 2026-11-29). */
static void fetch_note(scan_t *sc, umadv_ctx_alloc_t *alloc)
{
    uintptr_t start = (uintptr_t)alloc->ptr, end = start + alloc->size;
    uint64_t asked = 0;
    size_t n;

    if (!fetching_back(sc->ctx) || alloc->fetched_epoch == sc->ctx->profile_epoch)
        return; /* nothing evicted since it came back */
    n = unknown_runs(sc->ctx, start, end, NULL, NULL);
    if (umadv__array_reserve((void **)&sc->fetch, &sc->cap, sc->nfetch + n,
                             sizeof(*sc->fetch)) != UMADV_OK)
        return; /* it faults back */
    alloc->fetched_epoch = sc->ctx->profile_epoch;
    if (may_be_on_gpu(alloc))
        sc->ctx->profile_fetched_there += alloc->size;
    umadv__ctx_profile_arrived(sc->ctx, alloc);
    sc->ctx->profile_fetched += alloc->size;
    if (n > 0) { /* else the array may be none yet */
        unknown_runs(sc->ctx, start, end, &sc->fetch[sc->nfetch], NULL);
        for (size_t i = 0; i < n; i++, sc->nfetch++)
            asked += sc->fetch[sc->nfetch].end - sc->fetch[sc->nfetch].start;
    }
    sc->ctx->profile_fetch_spared += alloc->size - asked; /* known there: no call */
    gpu_mark(sc->ctx, alloc->ptr, alloc->size);
}

/* Whether [@lo, @hi) of @alloc is back on the GPU since the last
 * eviction: the block fetched whole, or those bytes declared (and
 * fetched) already. Then a declaration fetches nothing. A prefetch of
 * resident bytes is a call that blocks the thread while the driver
 * looks at every page, and no step said complete is evicted after the
 * profile's start: each of VGG-16's activations, declared by four or
 * more steps, was prefetched that many times (where VGG-16's 18.8 s
 * profiled iteration at batch 512 goes is suspected, not measured). */
static int declared_fetched(const umadv_context_t ctx, const umadv_ctx_alloc_t *alloc,
                            uint64_t lo, uint64_t hi)
{
    return alloc->fetched_epoch == ctx->profile_epoch ||
           (alloc->declared_epoch == ctx->profile_epoch && lo >= alloc->declared_lo &&
            hi <= alloc->declared_hi);
}

/* What of @alloc is fetched back in this epoch: [@lo, @hi) added to its
 * declared bytes where they meet (a split's parts, in order), else in
 * their place. */
static void declared_note(const umadv_context_t ctx, umadv_ctx_alloc_t *alloc, uint64_t lo,
                          uint64_t hi)
{
    if (alloc->declared_epoch == ctx->profile_epoch && lo <= alloc->declared_hi &&
        hi >= alloc->declared_lo) {
        alloc->declared_lo = UMADV_MIN(lo, alloc->declared_lo);
        alloc->declared_hi = UMADV_MAX(hi, alloc->declared_hi);
        return;
    }
    alloc->declared_epoch = ctx->profile_epoch;
    umadv__ctx_profile_arrived(ctx, alloc);
    alloc->declared_lo    = lo;
    alloc->declared_hi    = hi;
}

/* A range the open step declared: kept on the GPU for the step (evict_live),
 * and fetched back as a scanned block is (declarations come before the
 * step's launches), unless it is back already. Each declaration, not
 * each block once: steps may declare parts of a block (vgg's split). */
void umadv__ctx_profile_declared(umadv_context_t ctx, umadv_ctx_alloc_t *alloc, const void *ptr,
                                 uint64_t size)
{
    umadv_bulk_range_t range = {(uintptr_t)ptr, (uintptr_t)ptr + size, (uintptr_t)ptr};

    if (umadv__array_reserve((void **)&ctx->step_ranges, &ctx->step_ranges_cap,
                             ctx->nstep_ranges + 1, sizeof(range)) == UMADV_OK)
        ctx->step_ranges[ctx->nstep_ranges++] = range; /* else evicted: it faults back */
    if (!fetching_back(ctx) || declared_fetched(ctx, alloc, range.start, range.end))
        return;
    ctx->profile_fetched += size;
    fetch_back(ctx, &range, 1);
    umadv__pool_mark(ctx->pool, range.start, range.end, 1);
    declared_note(ctx, alloc, range.start, range.end);
}

/* @alloc whole, read and written, an access of the step recorded now:
 * what a scanned parameter, a guess or a kept block says the kernel can
 * reach, not which bytes it touches. */
static void block_taken(umadv_context_t ctx, const umadv_ctx_alloc_t *alloc)
{
    umadv__trace_add_access(&ctx->trace, alloc->trace_id, 0, alloc->size, UMADV_ACCESS_RW, 0);
}

static void scan_found(void *arg, const umadv_pool_loc_t *loc)
{
    scan_t *sc = arg;
    umadv_context_t ctx = sc->ctx;
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)loc->user;

    if (alloc == NULL || alloc->trace_id == UMADV_CTX_NO_TRACE_ID)
        return;
    /* Bytes the step has already (another pointer into the block took it
     * whole; or the step declared them: a part of a block, vgg's batch
     * parts, whose declaration stands) take nothing more. */
    if (umadv__trace_last_step_covers(&ctx->trace, alloc->trace_id, loc->offset))
        return;
    block_taken(ctx, alloc); /* else the whole block */
    fetch_note(sc, alloc);
}

/* The scan's blocks back on the GPU before the launch. */
static void fetch_scanned(scan_t *sc)
{
    if (sc->nfetch > 0)
        fetch_back(sc->ctx, sc->fetch, sc->nfetch);
    free(sc->fetch);
}

static const char *launch_name(const char *name, int graph)
{
    return name != NULL ? name : graph ? "graph" : "kernel";
}

/* The step of a launch: the marked step open now, or a new kernel step. */
static uint32_t launch_step(umadv_context_t ctx, const char *name, int graph)
{
    uint32_t step;

    if (ctx->step_open)
        return ctx->step;
    if (umadv__ctx_record_kernel_step(ctx, launch_name(name, graph), &step) != UMADV_OK)
        return UMADV_STEP_NONE;
    return step;
}

/* A scan that found nothing, for UMADV_LOG=debug, with the kernel's
 * parameter sizes. */
static void scan_miss_report(const char *name, const umadv_prof_region_t *regions,
                             size_t nregions)
{
    char sizes[160];
    size_t len = 0;

    if (UMADV_LOG_DEBUG > umadv__log_level)
        return;
    sizes[0] = '\0';
    for (size_t i = 0; i < nregions && len + 12 < sizeof(sizes); i++)
        len += (size_t)snprintf(sizes + len, sizeof(sizes) - len, "%s%zu", i ? "," : "",
                                regions[i].size);
    umadv_debug("parameter scan found no umadv block: %s (%zu parameters, bytes %s)",
                name != NULL ? name : "?", nregions, sizes);
}

struct guess;
static void evict_live(umadv_context_t ctx, const struct guess *g, uint32_t step);

/* The blocks a guessed parameter struct names (record_unlaid). */
#define GUESS_MAX 64

typedef struct guess {
    umadv_context_t          ctx;
    const umadv_ctx_alloc_t *found[GUESS_MAX];
    size_t                   n;
    uint64_t                 bytes;
} guess_t;

static void guess_found(void *arg, const umadv_pool_loc_t *loc)
{
    guess_t *g = arg;
    const umadv_ctx_alloc_t *alloc = (const umadv_ctx_alloc_t *)(uintptr_t)loc->user;

    if (alloc == NULL || alloc->trace_id == UMADV_CTX_NO_TRACE_ID || g->n == GUESS_MAX)
        return;
    for (size_t i = 0; i < g->n; i++) {
        if (g->found[i] == alloc)
            return; /* another pointer into a block already named */
    }
    g->found[g->n++] = alloc;
    g->bytes += alloc->size;
}

/* Whether @step can take @bytes more and stay within the budget: bytes
 * past the struct may name blocks the kernel never reaches, and a guess
 * must not make a step too large to plan; the faults decide then. */
static int guess_fits(const umadv_context_t ctx, uint32_t step, uint64_t bytes)
{
    const umadv_trace_t *t = &ctx->trace;
    uint64_t budget = umadv__ctx_budget(ctx), held = 0;

    if (budget == 0)
        return 1;
    if (step < t->nsteps) {
        const umadv_trace_step_t *s = &t->steps[step];

        for (uint32_t i = s->first_access; i < s->first_access + s->naccesses; i++)
            held += (uint64_t)t->accesses[i].count * t->section_size;
    }
    return held + bytes <= budget;
}

/* ---- two passes ------------------------------------------------------ */

/*
 * TWO PASSES. Evicting every live block before each launch without a
 * layout (record_unlaid) moves off the GPU, and back, blocks that the
 * next launches use again, over and over: a PyTorch ResNet-50 at half its
 * footprint moved 20 GiB each way in its profiled iteration, 4.7 s for
 * 37 ms of compute (H100, 2026-11-27). So a profile that evicts takes two
 * iterations (UMADV_PROFILE_PASSES). The first moves nothing and takes
 * guesses, as under oracle: its trace tells roughly when each block is
 * used, and its kernel records time the steps. Guided, the second begins
 * with the blocks where the first left them (live_stay), and before each
 * such launch keeps on the GPU the blocks the first saw in use there
 * unused for less than a round trip over the link around that step
 * (which no plan moves off and back in that time), shortest gaps first,
 * as many as the budget lets the step hold, each counted the launch's
 * access, read and written, as a guessed block is. Of the rest, those
 * the plan on the first pass's trace (second_pass_needed's) keeps on the
 * GPU across the step stay where they lie, each unseen at the step
 * (trace->unseen: no eviction stages or drops it across the step); it
 * evicts the others (plan_takes_off). Unguided, it begins, as one pass
 * does, with every block on the host (evict_all), and evicts every live
 * block before each such launch. So nothing staged rests on a guess: a
 * block is on the host when the launch runs (what it touches faults), or
 * is the launch's by count, or is unseen there. Leaving every
 * longer-unused block unseen forbade nearly all staging (ResNet-50 b64
 * at half its footprint 454-478 ms an iteration against 131-135, a GPT-2
 * shape at save_on_cpu's peak 181 against 47, VGG-16 174 against 55:
 * H200); evicting them all moved ResNet-50's footprint back and forth
 * (10.5 GiB each way). Leaving only those the first plan keeps, the
 * second plan seldom wants them staged there: the profiling phase
 * ResNet-50 801-816 ms against 1726-1810, GPT-2 771 against 1187,
 * VGG-16 696 against 1742, the steady states the same (H200,
 * 2026-11-29, bench/RESULTS.md fifteenth).
 * Where the second pass
 * runs other steps than the first, it evicts every live block from there
 * on, as one pass does. The first pass's durations, where it moved
 * little to the GPU and ran the second's steps, are the trace's: no
 * timing pass. Guidance (UMADV_PROFILE_GUIDED, the default) shortened
 * the profile two to three times while it still kept blocks unseen
 * (H200, 2026-11-29, one machine: the profiling phase of a PyTorch
 * ResNet-50 at half its footprint 2.0 s against 4.5-5.0 unguided and 6.5
 * with one pass, a GPT-2 shape at save_on_cpu's peak 1.1 s against 2.5
 * and 1.7, VGG-16 at its peak 1.9 s against 5.0 and 4.3; keeping only
 * the launch's blocks, and with the evictions narrowed, 1.5-2.0 s, 1.0
 * and 1.4: EVICTING WHAT MAY BE ON THE GPU; leaving where they lie
 * the blocks the first plan keeps, 0.8, 0.8 and 0.7), the steady state the same
 * (the 0.18 GiB an iteration that GPT-2 once migrated after two passes
 * was the tail that no timing pass watched: record.c, THE TAIL). Unguided, the second pass
 * evicts as one pass does. Either way, where a plan under the budget
 * evicts nothing on the first pass's trace, it is the profile alone
 * (second_pass_needed).
 */

/* The pass a profile beginning now takes: two only where it evicts. */
static int pass_now(const umadv_context_t ctx)
{
    if (!ctx->config.profile_evict || ctx->config.policy == UMADV_POLICY_ORACLE ||
        ctx->config.profile_output[0] != '\0' || ctx->config.profile_passes < 2)
        return 0;
    return ctx->scout_ready ? 2 : 1;
}

static void scout_drop(umadv_context_t ctx)
{
    if (ctx->scout_ready) {
        umadv__schedule_off_cleanup(&ctx->scout_off);
        umadv__trace_gaps_cleanup(&ctx->scout_gaps);
        umadv__trace_cleanup(&ctx->scout);
    }
    ctx->scout_ready = 0;
}

/* Whether step @step of the second pass is the first pass's, as far as
 * its kind and name tell; the first that is not ends the guidance. */
static int scout_aligned(umadv_context_t ctx, uint32_t step)
{
    const umadv_trace_step_t *mine = &ctx->trace.steps[step];

    if (ctx->scout_lost)
        return 0;
    if (step < ctx->scout.nsteps && ctx->scout.steps[step].kind == mine->kind &&
        umadv__str_same(ctx->scout.steps[step].name, mine->name))
        return 1;
    ctx->scout_lost = 1;
    umadv_info("profiling: the second pass ran other steps than the first from step %u (%s): "
               "every live block goes to the host before a launch without a layout from there "
               "on", step, mine->name != NULL ? mine->name : "unnamed");
    return 0;
}

/* A block's round trip over the link, out and back, in ns: at the staged
 * channel's rates where the probe measured them (a replay's fastest way),
 * else at UVM's. A block unused for less cannot leave and come back in
 * time, so keeping it resident there costs a plan little. */
static uint64_t round_trip_ns(const umadv_link_model_t *l, uint64_t bytes)
{
    double b = (double)bytes;
    double out = l->stage_evict_bw > 0 ? l->stage_evict_latency + b / l->stage_evict_bw
                                       : l->evict_latency + b / l->evict_bw;
    double in = l->stage_restore_bw > 0 ? l->stage_restore_latency + b / l->stage_restore_bw
                                        : l->fetch_latency + b / l->fetch_bw;

    return (uint64_t)((out + in) * 1e9);
}

typedef struct keep_candidate {
    umadv_ctx_alloc_t *alloc;
    uint32_t           id;     /* in the first pass's trace */
    uint64_t           gap_ns;
} keep_candidate_t;

typedef struct keep_arg {
    umadv_context_t   ctx;
    const guess_t    *g;
    uint32_t          step;
    keep_candidate_t *c;
    size_t            n, cap;
} keep_arg_t;

static int guessed_by(const guess_t *g, const umadv_ctx_alloc_t *alloc)
{
    for (size_t i = 0; i < g->n; i++) {
        if (g->found[i] == alloc)
            return 1;
    }
    return 0;
}

/* @alloc (at @at) in the first pass's trace, or UMADV_STEP_NONE. A block
 * born in the iteration is the one born in the same order at the same
 * step, with its size: with a batch made each iteration (a data loader's
 * copy), the allocator puts each block made after it elsewhere than the
 * iteration before, and found by its base, VGG-16's were taken for
 * another iteration's and evicted: its second pass moved 15.7 GiB each
 * way in 3.0 s, by birth 1.0 GiB in 0.48 s (as without the batch), and
 * ResNet-50's took 2.2 s, now 0.69 (H200, 2026-11-29, twenty-second
 * session of bench/RESULTS.md). One that existed before is
 * found by its base (those enter the trace in the pool's order, which a
 * batch moved shifts). */
static uint32_t scout_id_of(const keep_arg_t *ka, umadv_ctx_alloc_t *alloc, uint64_t at)
{
    const umadv_trace_gaps_t *g = &ka->ctx->scout_gaps;
    uint32_t born = ka->ctx->trace.allocs[alloc->trace_id].alloc_step;

    if (umadv__trace_gaps_born(g, alloc->trace_id, alloc->size, born, ka->step))
        return alloc->trace_id;
    /* the same blocks, eviction after eviction: the answer before, if it holds */
    if (!umadv__trace_gaps_is(g, alloc->scout_id, at, alloc->size, ka->step))
        alloc->scout_id = umadv__trace_gaps_find(g, at, alloc->size, ka->step);
    return alloc->scout_id;
}

/* A live block the first pass saw in use, with its gap around the step:
 * a candidate to keep. Blocks the first pass did not have (made since,
 * another iteration's) or saw in no step are evicted. */
static void keep_collect(void *arg, void *base, uint64_t size, uint64_t user)
{
    keep_arg_t *ka = arg;
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;
    uint64_t gap;
    uint32_t id;

    (void)size;
    if (alloc == NULL || alloc->trace_id == UMADV_CTX_NO_TRACE_ID || guessed_by(ka->g, alloc))
        return;
    id = scout_id_of(ka, alloc, (uint64_t)(uintptr_t)base);
    if (id == UMADV_STEP_NONE)
        return;
    gap = umadv__trace_gaps_around(&ka->ctx->scout_gaps, id, ka->step);
    if (gap == UINT64_MAX ||
        umadv__array_reserve((void **)&ka->c, &ka->cap, ka->n + 1, sizeof(*ka->c)) != UMADV_OK)
        return;
    ka->c[ka->n++] = (keep_candidate_t){alloc, id, gap};
}

static int keep_compare(const void *a, const void *b)
{
    const keep_candidate_t *x = a, *y = b;

    return (x->gap_ns > y->gap_ns) - (x->gap_ns < y->gap_ns);
}

/* Candidate @k into ctx->kept, as the step's access (fetched back if
 * evicted since: evict_live). */
static int keep_one(umadv_context_t ctx, const keep_candidate_t *k)
{
    if (umadv__array_reserve((void **)&ctx->kept, &ctx->kept_cap, ctx->nkept + 1,
                             sizeof(*ctx->kept)) != UMADV_OK)
        return 0;
    block_taken(ctx, k->alloc);
    ctx->kept[ctx->nkept++] = k->alloc;
    ctx->profile_kept++;
    return 1;
}

/* Whether the plan on the first pass's trace takes block @id (the first
 * pass's) off the GPU across @step, any section of it: staged or dropped
 * there, its data could be read discarded by an access the step makes
 * unseen. Not known (no plan): it does. */
static int plan_takes_off(const umadv_context_t ctx, uint32_t id, uint32_t step)
{
    const umadv_trace_alloc_t *al = &ctx->scout.allocs[id];

    if (ctx->scout_off.from.off == NULL)
        return 1;
    for (uint32_t k = 0; k < al->nsections; k++) {
        uint32_t section = al->first_section + k;
        uint32_t last = umadv__trace_gaps_section_last(&ctx->scout_gaps, section, step);

        if (last != UMADV_STEP_NONE &&
            umadv__schedule_off_across(&ctx->scout_off, section, id, last, step))
            return 1;
    }
    return 0;
}

/* Candidate @k into ctx->stay: left where it lies through the eviction
 * before the launch at @step, unseen there (no eviction stages or drops
 * it across the step). 0 where that cannot be noted: evicted. */
static int stay_one(umadv_context_t ctx, const keep_candidate_t *k, uint32_t step)
{
    if (umadv__array_reserve((void **)&ctx->stay, &ctx->stay_cap, ctx->nstay + 1,
                             sizeof(*ctx->stay)) != UMADV_OK ||
        umadv__trace_add_unseen(&ctx->trace, k->alloc->trace_id, step) != UMADV_OK)
        return 0;
    ctx->stay[ctx->nstay++] = (umadv_ctx_stay_t){k->alloc, may_be_on_gpu(k->alloc)};
    ctx->profile_stayed++;
    return 1;
}

/* The live blocks to keep on the GPU before the launch at @step of the
 * second pass, besides guess @g's: those the first pass saw in use
 * unused for less than a round trip over the link around it, shortest
 * gaps first, as many as the budget lets the step hold (guess_fits), as
 * the launch's accesses, into ctx->kept (keep_one); of the rest, those
 * the first pass's plan keeps on the GPU across the step stay where they
 * lie, unseen there, into ctx->stay (stay_one); the others are evicted,
 * so that what the launch touches of them faults. */
static void scout_keep(umadv_context_t ctx, const guess_t *g, uint32_t step)
{
    keep_arg_t ka = {ctx, g, step, NULL, 0, 0};
    uint64_t bytes = g->bytes;

    ctx->nkept = ctx->nstay = 0;
    if (ctx->profile_pass != 2 || !scout_aligned(ctx, step))
        return;
    umadv__pool_foreach(ctx->pool, keep_collect, &ka);
    if (ka.n > 1)
        qsort(ka.c, ka.n, sizeof(*ka.c), keep_compare);
    for (size_t i = 0; i < ka.n; i++) {
        const umadv_ctx_alloc_t *alloc = ka.c[i].alloc;

        if (ka.c[i].gap_ns < round_trip_ns(&ctx->link, alloc->size) &&
            guess_fits(ctx, step, bytes + alloc->size)) {
            if (!keep_one(ctx, &ka.c[i]))
                break;
            bytes += alloc->size;
        } else if (!plan_takes_off(ctx, ka.c[i].id, step)) {
            (void)stay_one(ctx, &ka.c[i], step); /* else evicted: it faults */
        }
    }
    free(ka.c);
}

/* Whether a first pass's kernel records may hold fault stalls: it moved
 * more than PROFILE_STALL_BYTES to the GPU (its fault groups are no
 * measure: first touches of new pages fault and move nothing). */
static int first_pass_stalled(const umadv_context_t ctx)
{
    return ctx->scout_moved > PROFILE_STALL_BYTES;
}

/* Each step's duration and host time, the lesser of the two passes' where
 * the second measured it: a kernel's time is only ever lengthened by what stalls
 * it, and each pass stalls other kernels. The first pass's kernels fault
 * on the first touches of new pages (PyTorch's GPT-2 shape recorded 68.6
 * ms of kernel time for a 27.4 ms iteration, 949 fault groups; ResNet-50
 * 42.9 for 32.6; H200, 2026-11-29), the second's where its evictions
 * made them. Returns the ns the second pass's took off. */
static uint64_t durations_least(umadv_trace_t *t, const umadv_trace_t *first)
{
    uint64_t shorter = 0;

    for (uint32_t s = 0; s < t->nsteps; s++) {
        uint64_t second = t->steps[s].duration_ns, was = first->steps[s].duration_ns;
        uint64_t least = was == 0 || (second > 0 && second < was) ? second : was;
        uint64_t host = t->steps[s].host_ns, host_was = first->steps[s].host_ns;

        t->steps[s].duration_ns = least;
        shorter += was > least ? was - least : 0;
        /* host times likewise: each pass's work at its launches lengthens them */
        t->steps[s].host_ns = host_was == 0 || (host > 0 && host < host_was) ? host : host_was;
    }
    return shorter;
}

/* The end of the second pass: where the first faulted no more than a
 * replay's noise and ran the same steps, the durations are the two
 * passes' (durations_least); the first pass is dropped either way. */
static void scout_durations(umadv_context_t ctx)
{
    const umadv_trace_t *first = &ctx->scout;
    umadv_trace_t *t = &ctx->trace;
    int same = first->nsteps == t->nsteps && !first_pass_stalled(ctx);
    char how[96] = "to be timed (the passes differ, or the first moved data to the gpu)";

    for (uint32_t s = 0; same && s < t->nsteps; s++)
        same = first->steps[s].kind == t->steps[s].kind &&
               umadv__str_same(first->steps[s].name, t->steps[s].name);
    if (same) {
        snprintf(how, sizeof(how), "each step's lesser of the two passes' (%.1f ms less than "
                 "the first's)", (double)durations_least(t, first) / 1e6);
        ctx->scout_timed = 1;
        umadv__trace_source_note(t, "step durations from two passes");
    }
    umadv_info("profiling, second pass: %llu evictions before launches without a layout, "
               "%llu blocks kept as theirs on the first pass's word, %llu left where its "
               "plan keeps them; step durations %s",
               (unsigned long long)ctx->profile_evictions,
               (unsigned long long)ctx->profile_kept, (unsigned long long)ctx->profile_stayed,
               how);
    scout_drop(ctx);
}

int umadv__ctx_profile_second_waits(const umadv_context_t ctx)
{
    return ctx->scout_ready && ctx->record == UMADV_CTX_REC_IDLE;
}

/* Whether the first pass's trace needs a second: where a plan under the
 * budget evicts nothing on it (the model fits), nothing will be staged,
 * dropped or migrated on its guesses, and it is the profile (a plan that
 * evicts later, the budget lowered, profiles again where it would stage:
 * schedule.c, guesses_bar_staging). A step larger than the budget fails
 * the plan on any pass's trace: the first is kept and umadv_plan says so;
 * another failure is left to the second pass. */
static int second_pass_needed(umadv_context_t ctx, umadv_schedule_t *schedule, int *planned)
{
    uint32_t evictions;

    memset(schedule, 0, sizeof(*schedule));
    *planned = 0;
    if (!umadv__ctx_step_fits(ctx, umadv__ctx_budget(ctx)))
        return 0; /* no pass makes it fit: umadv_plan says so */
    if (umadv__ctx_plan_schedule(ctx, schedule) != UMADV_OK)
        return 1;
    *planned = 1;
    evictions = schedule->evict_ops;
    if (evictions > 0) /* its replay's pool, pinned while the second pass runs */
        umadv__replay_pin_ahead(ctx, schedule);
    if (evictions == 0)
        umadv_info("profiling, first pass: %u steps, %llu bytes moved to the gpu; a plan "
                   "under the budget evicts nothing on its trace, which is the profile: no "
                   "second pass", ctx->trace.nsteps, (unsigned long long)ctx->scout_moved);
    return evictions > 0;
}

/* A first pass kept as the profile evicted nothing, so what a kernel
 * reaches through a pointer held in GPU memory faulted at no step: every
 * step counts as guessed. A replay stages nothing on it (replay.c), and
 * a plan that evicts profiles again (schedule.c, guesses_bar_staging). */
static int first_pass_kept(umadv_context_t ctx)
{
    ctx->trace.guessed_steps = ctx->trace.nsteps;
    ctx->profile_guess_steps = ctx->trace.nsteps;
    if (!first_pass_stalled(ctx))
        umadv__trace_source_note(&ctx->trace, "step durations from a first pass");
    return 0;
}

int umadv__ctx_profile_recorded(umadv_context_t ctx)
{
    umadv_schedule_t schedule;
    int planned;

    if (ctx->profile_pass != 1)
        return 0;
    if (!second_pass_needed(ctx, &schedule, &planned)) {
        umadv__schedule_cleanup(&schedule);
        return first_pass_kept(ctx);
    }
    ctx->scout = ctx->trace;
    if (umadv__trace_gaps_init(&ctx->scout_gaps, &ctx->scout) != UMADV_OK) {
        umadv__schedule_cleanup(&schedule);
        memset(&ctx->scout, 0, sizeof(ctx->scout)); /* the trace stays ctx->trace's */
        return first_pass_kept(ctx);
    }
    /* not indexed: every long gap evicts (plan_takes_off) */
    if (!planned || umadv__schedule_off_init(&ctx->scout_off, &schedule, &ctx->scout) != UMADV_OK)
        memset(&ctx->scout_off, 0, sizeof(ctx->scout_off));
    umadv__schedule_cleanup(&schedule);
    memset(&ctx->trace, 0, sizeof(ctx->trace));
    ctx->record = UMADV_CTX_REC_IDLE;
    ctx->scout_ready = 1;
    umadv_info("profiling, first pass: %u steps, %llu bytes moved to the gpu; a plan under "
               "the budget evicts on its trace: the next iteration is the second pass",
               ctx->scout.nsteps,
               (unsigned long long)ctx->scout_moved);
    return 1;
}

/* Whether this profile may go by guesses (a guessed parameter struct,
 * nothing evicted when it begins): only under oracle, which moves
 * nothing on its word. Elsewhere a missed access costs a fault each
 * iteration (and replay validation profiles again), and a step that
 * misses a staged block reads a discarded range: with guesses, a PyTorch
 * ResNet-50 trained to other losses under prefetch-all and demand
 * (H100). A replay of a trace with guessed steps, after a change of
 * policy, stages nothing (replay.c). */
static int profile_may_guess(const umadv_context_t ctx)
{
    return ctx->config.policy == UMADV_POLICY_ORACLE || ctx->profile_pass == 1;
}

/* Whether the launch runs inside a step whose application declared what
 * it touches (umadv_step_access), where nothing is staged, or that said
 * its declarations are complete (umadv_step_access_complete): its faults
 * would only repeat the declarations, at the price of every live block
 * evicted and faulted back (VGG-16 in C at batch 512: a profiled
 * iteration of 53-64 s for 1.7 s of compute, H100). An access the
 * declarations miss faults in the replay, which UVM eviction survives;
 * staging would not, so in a trace with stageable blocks what else a
 * step that did not say so touches is found by faults (evict_live keeps
 * what it declared). */
static int declared_step(const umadv_context_t ctx)
{
    return ctx->step_open && ctx->step_declared &&
           (ctx->step_complete || umadv__trace_stageable_bytes(&ctx->trace) == 0);
}

/* The step's accesses taken on the application's word: counted with
 * the guessed ones (nothing may be staged on them, replay.c), once;
 * unless the application said they are all (complete_steps_check holds
 * it to that as far as the faults can). */
static void declared_step_trusted(umadv_context_t ctx)
{
    if (ctx->step_declared == 1 && !ctx->step_complete)
        ctx->trace.guessed_steps++;
    ctx->step_declared = 2;
}

umadv_status_t umadv__ctx_profile_complete_step(umadv_context_t ctx, uint32_t step)
{
    umadv_status_t status;

    status = umadv__array_reserve((void **)&ctx->complete_steps, &ctx->complete_steps_cap,
                                  ctx->ncomplete_steps + 1, sizeof(*ctx->complete_steps));
    if (status == UMADV_OK)
        ctx->complete_steps[ctx->ncomplete_steps++] = step;
    else
        ctx->step_complete = 0; /* not checkable: profiled as a step that said nothing */
    return status;
}

/* A launch without a layout whose accesses nothing will show
 * (UMADV_PROFILE_EVICT=0: what it touches on the GPU does not fault):
 * its step may miss any block, so nothing is staged on this profile,
 * as on a guessed one; a marked step counted once. */
static void unlaid_unseen(umadv_context_t ctx)
{
    if (ctx->step_open && ctx->step_unseen)
        return;
    ctx->trace.guessed_steps++;
    ctx->step_unseen = ctx->step_open;
}

/* The blocks guess @g names, read and written, whole: the step's. */
static void guess_take(umadv_context_t ctx, const guess_t *g)
{
    for (size_t i = 0; i < g->n; i++)
        block_taken(ctx, g->found[i]);
    ctx->profile_guessed++;
}

/* A launch whose parameter layout CUDA does not give (cuDNN's and
 * cuBLASLt's library kernels: measured, a sixth of the launches of a
 * PyTorch ResNet-50). Where guesses may be taken, the blocks its guessed
 * parameter struct names (profiler_int.h, umadv__prof_guess_region) are
 * its accesses. Otherwise every live block is evicted first, so that
 * everything the kernel touches faults and is attributed to it
 * (UMADV_PROFILE_EVICT), except in a declared step taken on its word
 * (above); in one that is not, what it declared stays (evict_live), and
 * so do the blocks a guess names, fetched back by prefetch and counted
 * the step's: a guess only adds blocks, and what it misses still faults,
 * so the step rests on no guess. Evicting before each of them made a
 * PyTorch ResNet-50's profiled iteration 5.4 s instead of 69 ms (H100,
 * 123 such launches of 725), where the blocks the guesses name came
 * back by faults, at demand paging's few GB/s. */
static void record_unlaid(umadv_context_t ctx, uint32_t step, unsigned flags,
                          const umadv_prof_region_t *regions, size_t nregions)
{
    guess_t g = {ctx, {NULL}, 0, 0};

    if (flags & UMADV_PROF_LAUNCH_GUESSED)
        umadv__prof_scan(ctx->pool, regions, nregions, guess_found, &g);
    if (g.n > 0 && !guess_fits(ctx, step, g.bytes))
        g.n = 0;
    if (g.n > 0 && profile_may_guess(ctx)) {
        guess_take(ctx, &g);
        ctx->trace.guessed_steps++;
        ctx->profile_guess_steps++;
        return;
    }
    if (declared_step(ctx)) {
        declared_step_trusted(ctx);
    } else if (ctx->config.profile_evict && ctx->profile_pass != 1) {
        ctx->profile_evictions++;
        evict_live(ctx, &g, step);
        if (g.n > 0)
            guess_take(ctx, &g);
    } else {
        unlaid_unseen(ctx);
    }
}

/* A launch of the full recording: its step; its parameters scanned. */
static uint32_t record_launch(umadv_context_t ctx, const char *name, unsigned flags,
                              const umadv_prof_region_t *regions, size_t nregions)
{
    uint32_t step = launch_step(ctx, name, (flags & UMADV_PROF_LAUNCH_GRAPH) != 0);
    scan_t sc = {ctx, NULL, 0, 0};

    if (step == UMADV_STEP_NONE || (flags & UMADV_PROF_LAUNCH_GRAPH))
        return step;
    if (flags & UMADV_PROF_LAUNCH_NO_LAYOUT) {
        record_unlaid(ctx, step, flags, regions, nregions);
    } else {
        if (umadv__prof_scan(ctx->pool, regions, nregions, scan_found, &sc) == 0)
            scan_miss_report(name, regions, nregions);
        fetch_scanned(&sc);
    }
    umadv__ctx_copies_take(ctx); /* after the scan (pcopies.c, COPIES) */
    return step;
}

static uint32_t profile_launch(void *arg, const char *name, unsigned flags,
                               const umadv_prof_region_t *regions, size_t nregions)
{
    umadv_context_t ctx = arg;
    uint32_t step = UMADV_STEP_NONE;

    pthread_mutex_lock(&ctx->lock);
    if (ctx->record == UMADV_CTX_REC_RECORDING && ctx->in_iteration) {
        int marked = ctx->step_open; /* its host time is the marked step's */

        step = record_launch(ctx, name, flags, regions, nregions);
        if (!marked)
            umadv__ctx_host_note(ctx, step, umadv__prof_launch_entered_ns());
    } else if (ctx->tpass.state == UMADV_CTX_TPASS_RUNNING && ctx->in_iteration) {
        step = ctx->step_open
                   ? ctx->step
                   : umadv__ctx_tpass_step(ctx,
                                           launch_name(name, flags & UMADV_PROF_LAUNCH_GRAPH),
                                           UMADV_STEP_KERNEL);
    }
    if (!ctx->step_open) /* a marked step's launches are its own host time */
        umadv__ctx_host_back(ctx);
    pthread_mutex_unlock(&ctx->lock);
    return step;
}

/* ---- open and close --------------------------------------------------- */

void umadv__ctx_profile_open(umadv_context_t ctx)
{
    int host_only = (ctx->flags & UMADV_CONTEXT_FLAG_HOST_ONLY) != 0;

    umadv__link_model_default(&ctx->link);
    if (!host_only && ctx->config.link_probe &&
        umadv__link_probe(ctx->config.device, &ctx->link) != UMADV_OK)
        umadv_warn("link probe failed: planning with the built-in link figures");
    if (!ctx->config.profiler)
        return;
    if (umadv__prof_open(host_only, profile_launch, ctx, &ctx->profiler) != UMADV_OK) {
        ctx->profiler = NULL; /* warned: declared accesses only */
        ctx->profiler_lost = 1;
    } else if (ctx->profiler != NULL && ctx->config.call_census) {
        (void)umadv__prof_census_start(ctx->profiler); /* warned */
    }
}

void umadv__ctx_census_report(umadv_context_t ctx)
{
    umadv__prof_census_report(ctx->profiler, ctx->stats.iterations > 0
                                                 ? ctx->stats.iterations - 1 /* the one ended */
                                                 : UMADV_PROF_CENSUS_SETUP);
}

/* What a profile's evictions left out (EVICTING WHAT MAY BE ON THE GPU). */
static void left_out_drop(umadv_context_t ctx)
{
    free(ctx->evict_steps);
    free(ctx->left_out);
    ctx->evict_steps = NULL;
    ctx->left_out = NULL;
    ctx->nevict_steps = ctx->evict_steps_cap = ctx->nleft_out = ctx->left_out_cap = 0;
}

void umadv__ctx_profile_close(umadv_context_t ctx)
{
    if (ctx->profiler != NULL)
        umadv__replay_copies_noted(ctx, 0);
    umadv__prof_close(ctx->profiler);
    ctx->profiler = NULL;
    scout_drop(ctx);
    free(ctx->kept);
    free(ctx->stay);
    ctx->kept = NULL;
    ctx->stay = NULL;
    ctx->nkept = ctx->kept_cap = ctx->nstay = ctx->stay_cap = 0;
    left_out_drop(ctx);
}

/* ---- a recording ------------------------------------------------------ */

/* Live blocks as ranges for the bulk mover (exec/bulk.h): the blocks
 * themselves, grouped by arena or each alone, or their whole arenas. */
typedef enum ranges_of {
    RANGES_ARENA_RUNS,  /* blocks; an arena's run of them is one call */
    RANGES_BLOCKS,      /* blocks, one call each */
    RANGES_ARENAS       /* each arena with a live block, whole */
} ranges_of_t;

/*
 * EVICTING WHAT MAY BE ON THE GPU. An eviction before a launch without a
 * layout sends to the host every live block that may be on the GPU, and
 * leaves out the blocks on the host since an earlier one: re-evicting
 * them asked the driver to look at every page of the footprint before
 * each such launch (a PyTorch ResNet-50 at batch 64 under half its
 * footprint, 154 of them: 2.1 s of host time in the pass's moves, the
 * pass 2.9 s; left out, 0.9-1.3 s and 1.2-1.8 s; H200, 2026-11-29). The
 * profile knows what it brings
 * onto the GPU: the blocks it fetches back, those a step declares, those
 * it keeps through an eviction, those the application's copies may have
 * moved, and blocks new since the last eviction (gpu_epoch, host_epoch).
 * What a kernel faults back it learns only from the fault records, after
 * the pass: so each eviction notes the recording's blocks it left out,
 * and where a fault or a demand migration brought one of them onto the
 * GPU, the block is unseen (trace->unseen) at each later eviction that
 * left it out, up to one that did not: the launch after it may have
 * touched it without a fault, so no eviction stages or drops it across
 * that step (schedule/core.h, STAGING). Under umadv
 * profile, or once a fetch back failed, the scanned launches fault their
 * blocks back too; once an eviction failed, the host's blocks are not
 * known: from there on every eviction moves every live block.
 */

/* An eviction before a launch without a layout (evict_live): the ranges
 * it keeps, and whether it leaves out the blocks on the host since an
 * earlier one. */
typedef struct live_eviction {
    const umadv_bulk_range_t *kept;
    size_t                    nkept;
    int                       narrow;
} live_eviction_t;

typedef struct ranges_arg {
    umadv_context_t        ctx;
    ranges_of_t            of;
    uint32_t               evicting;  /* the epoch an eviction opens; 0: none */
    const live_eviction_t *ev;        /* NULL: every live block */
    uintptr_t              run;       /* the current run's group (RANGES_ARENA_RUNS) */
    void                  *run_arena;
    umadv_bulk_range_t    *ranges;
    size_t                 n, cap;
} ranges_arg_t;

/* Whether @alloc may be on the GPU: it has not gone to the host since
 * it may last have come onto it. A block new since the last eviction
 * (both epochs 0) may. */
static int may_be_on_gpu(const umadv_ctx_alloc_t *alloc)
{
    return alloc == NULL || alloc->gpu_epoch >= alloc->host_epoch;
}

/* Whether the narrowed eviction opening now leaves @alloc out: on the
 * host since an earlier one, and noted, so that faults that brought it
 * back since, unknown here, leave it unseen where it stayed (repair on
 * the profile's faults: left_out_repair). A block the note finds no
 * memory for is evicted. */
static int eviction_leaves_out(umadv_context_t ctx, const umadv_ctx_alloc_t *alloc)
{
    if (may_be_on_gpu(alloc))
        return 0;
    if (alloc->trace_id == UMADV_CTX_NO_TRACE_ID)
        return 1; /* not the recording's: no step can have it */
    if (umadv__array_reserve((void **)&ctx->left_out, &ctx->left_out_cap, ctx->nleft_out + 1,
                             sizeof(*ctx->left_out)) != UMADV_OK)
        return 0;
    ctx->left_out[ctx->nleft_out++] =
        (umadv_ctx_left_out_t){alloc->trace_id, (uint32_t)(ctx->nevict_steps - 1)};
    return 1;
}

/* The group of a block of an arena's run: the run's first block, so that
 * a block left out ends the run (one call's span never covers it). */
static uintptr_t run_group(ranges_arg_t *ra, const umadv_pool_loc_t *loc, uintptr_t start)
{
    if (ra->run == 0 || ra->run_arena != loc->arena_base) {
        ra->run = start;
        ra->run_arena = loc->arena_base;
    }
    return ra->run;
}

static void ranges_collect(void *arg, void *base, uint64_t size, uint64_t user)
{
    ranges_arg_t *ra = arg;
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;
    umadv_pool_loc_t loc;
    uintptr_t start = (uintptr_t)base, arena;

    /* left out (noted, so that a fault that brought it back marks it
     * unseen here and on), or kept whole: no call's span covers it */
    if (ra->ev != NULL && ((ra->ev->narrow && eviction_leaves_out(ra->ctx, alloc)) ||
                           (alloc != NULL && alloc->kept_whole))) {
        ra->run = 0;
        return;
    }
    if (umadv__pool_lookup(ra->ctx->pool, base, &loc) != UMADV_OK ||
        umadv__array_reserve((void **)&ra->ranges, &ra->cap, ra->n + 1, sizeof(*ra->ranges)) !=
            UMADV_OK) {
        if (ra->evicting != 0) /* where it lies is not known: nothing left out now on */
            ra->ctx->profile_evict_failed = 1;
        return; /* a block left where it is: its first touch goes unseen */
    }
    arena = (uintptr_t)loc.arena_base;
    if (ra->of == RANGES_ARENAS)
        ra->ranges[ra->n++] = (umadv_bulk_range_t){arena, arena + loc.arena_size, arena};
    else if (ra->of == RANGES_BLOCKS)
        ra->ranges[ra->n++] = (umadv_bulk_range_t){start, start + size, start};
    else
        ra->ranges[ra->n++] =
            (umadv_bulk_range_t){start, start + loc.span, run_group(ra, &loc, start)};
    if (ra->evicting != 0 && alloc != NULL)
        alloc->host_epoch = ra->evicting;
}

/* @ra's ranges less [lo, hi): trimmed, emptied or split in two (a split
 * that finds no memory keeps the range whole: those bytes fault back). */
static void ranges_cut(ranges_arg_t *ra, uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0, n = ra->n; i < n; i++) {
        umadv_bulk_range_t *r = &ra->ranges[i];

        if (hi <= r->start || lo >= r->end)
            continue;
        if (lo > r->start && hi < r->end) {
            if (umadv__array_reserve((void **)&ra->ranges, &ra->cap, ra->n + 1,
                                     sizeof(*ra->ranges)) != UMADV_OK)
                continue;
            r = &ra->ranges[i];
            ra->ranges[ra->n++] = (umadv_bulk_range_t){hi, r->end, r->group};
            r->end = lo;
        } else if (lo <= r->start) {
            r->start = UMADV_MIN(hi, r->end);
        } else {
            r->end = lo;
        }
    }
}

/* Whether a kept range lies in the gap (@lo, @hi) between two ranges. */
static int kept_between(const umadv_bulk_range_t *kept, size_t nkept, uintptr_t lo, uintptr_t hi)
{
    for (size_t k = 0; k < nkept; k++) {
        if (kept[k].start < hi && kept[k].end > lo)
            return 1;
    }
    return 0;
}

/* Empty ranges out; a group (an arena's run, moved by one call over its
 * span) broken wherever a kept range lies between two of its ranges, so
 * that no call's span covers what the step declared. */
static void ranges_regroup(ranges_arg_t *ra, const umadv_bulk_range_t *kept, size_t nkept)
{
    uintptr_t run = 0, group_before = 0, end_before = 0;
    size_t n = 0;

    for (size_t i = 0; i < ra->n; i++) {
        if (ra->ranges[i].start < ra->ranges[i].end)
            ra->ranges[n++] = ra->ranges[i];
    }
    ra->n = n;
    if (n > 1)
        qsort(ra->ranges, n, sizeof(*ra->ranges), umadv__exec_bulk_range_compare);
    for (size_t i = 0; i < n; i++) {
        umadv_bulk_range_t *r = &ra->ranges[i];

        if (i == 0 || r->group != group_before ||
            kept_between(kept, nkept, end_before, r->start))
            run = r->start;
        group_before = r->group;
        end_before = r->end;
        r->group = run;
    }
}

/* Move the live blocks (as @of says) to @location, less what eviction
 * @ev keeps or leaves out (NULL: all): the executor's bulk mover issues
 * the calls; the profiling pass only says what. An eviction opens the
 * epoch ctx->profile_epoch. Evictions follow the holds' readers
 * (context.c, HOLDS). Returns the calls made. */
static size_t live_move(umadv_context_t ctx, ranges_of_t of, int location, unsigned flags,
                        const live_eviction_t *ev)
{
    ranges_arg_t ra = {ctx, of, 0, ev, 0, NULL, NULL, 0, 0};
    size_t calls, failed = 0;

    if (location == UMADV_CUDA_LOCATION_HOST)
        ra.evicting = ctx->profile_epoch;
    umadv__pool_foreach(ctx->pool, ranges_collect, &ra);
    if (ev != NULL && ev->nkept > 0) {
        for (size_t k = 0; k < ev->nkept; k++)
            ranges_cut(&ra, ev->kept[k].start, ev->kept[k].end);
        ranges_regroup(&ra, ev->kept, ev->nkept);
    }
    if (location == UMADV_CUDA_LOCATION_HOST) {
        umadv__ctx_holds_order(ctx, NULL); /* the bulk mover's legacy stream */
        /* failed or not, where they lie is not known: each call's span,
         * the free room between a run's blocks too (a block new there,
         * in the room of one fetched, faults in where it is taken for
         * the GPU's: GPT-2's second pass 4,049 fault records, 95 MiB,
         * against 16; H200, 2026-11-29) */
        uint64_t live = ranges_bytes(ra.ranges, ra.n);

        ra.n = umadv__exec_bulk_spans(ra.ranges, ra.n);
        evict_spans_count(ctx, ra.ranges, ra.n, live);
        for (size_t i = 0; i < ra.n; i++)
            umadv__pool_mark(ctx->pool, ra.ranges[i].start, ra.ranges[i].end, 0);
    }
    calls = profile_move(ctx, ra.ranges, ra.n, location, flags, &failed);
    if (failed > 0 && ra.evicting != 0)
        ctx->profile_evict_failed = 1; /* what it kept may be taken for the host's */
    free(ra.ranges);
    return calls;
}

/* Whether @alloc, not moved by the eviction that opens epoch @epoch, is
 * on the GPU still: it was in the epoch before (fetched back, kept or
 * left there). Then it counts as fetched back in @epoch, so that the
 * scanned launches after the eviction do not prefetch it again where it
 * lies. */
static int fetched_still(umadv_ctx_alloc_t *alloc, uint32_t epoch)
{
    if (alloc->fetched_epoch != epoch - 1)
        return 0;
    alloc->fetched_epoch = epoch;
    return 1;
}

/* A block kept through the eviction that opens epoch @epoch (guessed or
 * kept as the launch's): on the GPU still (fetched_still), else on the
 * host since an earlier one, and fetched back. */
static void kept_back(scan_t *sc, umadv_ctx_alloc_t *alloc, uint32_t epoch)
{
    if (!fetched_still(alloc, epoch))
        fetch_note(sc, alloc);
}

/* The blocks left where they lie through the eviction that opens epoch
 * @epoch (ctx->stay), which did not collect them (kept_whole): those on
 * the GPU in the epoch before count as fetched back (fetched_still). The
 * others stay on the host, to be fetched back when a scanned launch
 * names them. Collected and then cut out, they had been counted sent to
 * the host, and an eviction after this one left them out as on the host
 * since, touches and all (a random test's misses, test_profiler_cupti). */
static void stays_settle(umadv_context_t ctx, uint32_t epoch)
{
    for (size_t i = 0; i < ctx->nstay; i++) {
        if (ctx->stay[i].on_gpu)
            (void)fetched_still(ctx->stay[i].alloc, epoch);
    }
}

/* Whether an eviction may leave out blocks on the host since an earlier
 * one: the profile knows what it brought back (EVICTING WHAT MAY BE ON
 * THE GPU). */
static int evict_may_narrow(const umadv_context_t ctx)
{
    return fetching_back(ctx) && !ctx->profile_evict_failed;
}

/* Step @step's eviction in ctx->evict_steps; 0 where it finds no
 * memory (then it leaves nothing out). */
static int evict_step_note(umadv_context_t ctx, uint32_t step)
{
    if (umadv__array_reserve((void **)&ctx->evict_steps, &ctx->evict_steps_cap,
                             ctx->nevict_steps + 1, sizeof(*ctx->evict_steps)) != UMADV_OK)
        return 0;
    ctx->evict_steps[ctx->nevict_steps++] = step;
    return 1;
}

/* The blocks an eviction kept, whole or in part, may be on the GPU:
 * those of the @ndeclared ranges the open step declared, guess @g's and
 * those kept as the launch's, ctx->kept (those left where they lie:
 * stays_settle). */
static void kept_arrived(umadv_context_t ctx, const guess_t *g, size_t ndeclared)
{
    umadv_pool_loc_t loc;

    for (size_t i = 0; i < ndeclared; i++) {
        if (umadv__pool_lookup(ctx->pool, (const void *)ctx->step_ranges[i].start, &loc) ==
                UMADV_OK &&
            loc.user != 0)
            umadv__ctx_profile_arrived(ctx, (umadv_ctx_alloc_t *)(uintptr_t)loc.user);
    }
    for (size_t i = 0; i < g->n; i++)
        umadv__ctx_profile_arrived(ctx, (umadv_ctx_alloc_t *)(uintptr_t)g->found[i]);
    for (size_t i = 0; i < ctx->nkept; i++)
        umadv__ctx_profile_arrived(ctx, ctx->kept[i]);
}

/* Mark (@on) or unmark the blocks the eviction being collected keeps
 * whole: guess @g's, those kept as the launch's (ctx->kept), those left
 * where they lie (ctx->stay). */
static void kept_whole_mark(umadv_context_t ctx, const guess_t *g, int on)
{
    for (size_t i = 0; i < g->n; i++)
        ((umadv_ctx_alloc_t *)(uintptr_t)g->found[i])->kept_whole = on;
    for (size_t i = 0; i < ctx->nkept; i++)
        ctx->kept[i]->kept_whole = on;
    for (size_t i = 0; i < ctx->nstay; i++)
        ctx->stay[i].alloc->kept_whole = on;
}

/* Before a kernel whose parameters cannot be scanned: every live block
 * to the host, ordered before the launch on the legacy stream (no wait:
 * the launch call must not block on it), so that what it touches faults.
 * In a step that declared its accesses (a trace with stageable blocks,
 * where declared_step does not take them on their word), the bytes it
 * declared stay: evicting them too, before each such launch, fetched
 * them back each time (VGG-16 in C at batch 128 under 25% of its
 * footprint: 140.9 GiB fetched back, a profiled iteration of 45 s on an
 * H200; 46 GiB and 12-13 s on an H100 after). Once a step, before its
 * first such launch, was tried: as fast, but its traces missed an
 * access, and the replay faulted 16,000-19,000 groups and profiled again
 * (two runs of two). On an idle stream each call holds the thread for
 * its migration (bench/evict_call_host); issued behind a gate (a wait on
 * mapped host memory, opened after the calls) they returned at once, but
 * ran later and slower on the stream, which orders them all the same:
 * densenet121's profiling phase 182 ms shorter, ResNet-50's 95-147 ms
 * longer on another machine (H200, 2026-11-29, bench/RESULTS.md): not
 * kept. */
static void evict_live(umadv_context_t ctx, const guess_t *g, uint32_t step)
{
    uint64_t start = umadv__now_ns();
    size_t ndeclared = ctx->step_open && ctx->step_declared ? ctx->nstep_ranges : 0;
    scan_t sc = {ctx, NULL, 0, 0};
    live_eviction_t ev = {ctx->step_ranges, ndeclared, 0};

    scout_keep(ctx, g, step); /* into ctx->kept and ctx->stay */
    ctx->profile_epoch++;
    ctx->profile_evicted = 1;
    ev.narrow = evict_step_note(ctx, step) && evict_may_narrow(ctx);
    /* the declared ranges are cut out of the blocks collected; the blocks
     * kept whole are not collected (collected and each cut out, they cost
     * the kept blocks times the live ones: densenet121's 251 evictions,
     * keeping some 1,400 blocks each, 750 ms of host time, H200; and
     * cut to their size, the rest of their spans went in calls of their
     * own: GPT-2's second pass 20,000 calls, 1,700 without; 2026-11-29) */
    kept_whole_mark(ctx, g, 1);
    live_move(ctx, RANGES_ARENA_RUNS, UMADV_CUDA_LOCATION_HOST, 0, &ev);
    kept_whole_mark(ctx, g, 0);
    /* guessed blocks are kept as the launch's are: fetched back only
     * where they are not on the GPU since the epoch before (each of a
     * PyTorch ResNet-50's 154 library launches asked its guessed blocks
     * back: 10.5 GiB of 32.6 asked, lying where they were; GPT-2's 5 of
     * 10.2; H200, 2026-11-29) */
    for (size_t i = 0; i < g->n; i++)
        kept_back(&sc, (umadv_ctx_alloc_t *)(uintptr_t)g->found[i], ctx->profile_epoch);
    for (size_t i = 0; i < ctx->nkept; i++)
        kept_back(&sc, ctx->kept[i], ctx->profile_epoch);
    kept_arrived(ctx, g, ndeclared); /* after fetch_note has told where they were */
    stays_settle(ctx, ctx->profile_epoch);
    fetch_scanned(&sc);
    ctx->profile_evict_ns += umadv__now_ns() - start;
}

/* The profiled iteration's evictions are its own: when the arenas (else
 * the live blocks) fit the budget (none under oracle) and the free GPU
 * memory, put them back on the GPU, so that the next iteration (the
 * timing pass) does not fault them in. Whole arenas, because the next
 * iteration's new blocks land in space freed (and evicted) in the
 * profiled one, which would fault in again (measured: restoring the live
 * blocks alone left a PyTorch VGG-16 timing pass at 1.3 s instead of
 * 49 ms). Under a smaller budget the schedule decides, and must know they
 * are on the host (live_on_host: replay.c binds them as such), or the
 * timing pass measures their faults as compute (measured: a PyTorch
 * ResNet-50 at half its footprint, 722 ms of "compute" for 31). */
static void restore_live(umadv_context_t ctx)
{
    uint64_t free_b = 0, total_b = 0, room, budget = umadv__ctx_budget(ctx);
    umadv_pool_stats_t stats;

    umadv__pool_get_stats(ctx->pool, &stats);
    ctx->live_on_host = 1;
    if (ctx->ops->mem_get_info(&free_b, &total_b) != UMADV_OK)
        return;
    room = budget != 0 ? UMADV_MIN(budget, free_b) : free_b;
    if (stats.arena_bytes <= room)
        live_move(ctx, RANGES_ARENAS, ctx->config.device, UMADV_BULK_SYNC, NULL);
    else if (stats.span_in_use <= room)
        live_move(ctx, RANGES_BLOCKS, ctx->config.device, UMADV_BULK_SYNC, NULL);
    else
        return;
    ctx->live_on_host = 0;
}

/* Everything to the host, so the iteration's first touches fault. */
static void evict_all(umadv_context_t ctx)
{
    umadv_pool_stats_t stats;
    size_t calls;
    char size[32];

    umadv__pool_get_stats(ctx->pool, &stats);
    ctx->profile_epoch++;
    calls = live_move(ctx, RANGES_ARENA_RUNS, UMADV_CUDA_LOCATION_HOST, UMADV_BULK_SYNC, NULL);
    ctx->profile_evicted = 1;
    ctx->profile_moved = calls;
    umadv_debug("profiling: evicted %s in %llu blocks to the host (%zu calls)",
                umadv__size_format(stats.bytes_in_use, size, sizeof(size)),
                (unsigned long long)stats.blocks, calls);
}

static void resident_note(void *arg, void *base, uint64_t size, uint64_t user)
{
    umadv_context_t ctx = arg;
    umadv_ctx_alloc_t *alloc = (umadv_ctx_alloc_t *)(uintptr_t)user;

    if (alloc != NULL)
        alloc->fetched_epoch = ctx->profile_epoch;
    gpu_mark(ctx, base, size);
}

static void arrived_note(void *arg, void *base, uint64_t size, uint64_t user)
{
    (void)base;
    (void)size;
    if (user != 0)
        umadv__ctx_profile_arrived(arg, (umadv_ctx_alloc_t *)(uintptr_t)user);
}

/* A profile begins knowing nothing of where the blocks lie: each may be
 * on the GPU, until an eviction moves it (EVICTING WHAT MAY BE ON THE
 * GPU). */
static void all_may_be_on_gpu(umadv_context_t ctx)
{
    umadv__pool_foreach(ctx->pool, arrived_note, ctx);
}

/* A guided second pass begins with the blocks where the first pass left
 * them, on the GPU, instead of with every block on the host (evict_all):
 * the launches whose parameters were scanned touch what the scan names
 * (the safety argument of umadv(7) rests on that, not on their faults),
 * and the first launch without a layout evicts, as each does, what the
 * first pass did not see in use there. Evicting all first sent a PyTorch
 * ResNet-50's whole footprint at batch 64 (5.4 GiB) to the host before
 * its first launch, and its guided pass then fetched 8.7 GiB back (H200,
 * 2026-11-29). The blocks count as fetched back, so that none is
 * prefetched again where it lies. */
static void live_stay(umadv_context_t ctx)
{
    ctx->profile_epoch++;
    umadv__pool_foreach(ctx->pool, resident_note, ctx);
}

/* What the profile records. Under oracle, which moves nothing on the
 * profile's word and evicts nothing before it, the faults are first
 * touches that no replay reads (it counts none): the counters stay off,
 * which spares turning them on and off (some 20 ms each, H200) and 20-40
 * us a launch. A profile for umadv profile keeps them: faults are what
 * its report is about. */
static umadv_prof_mode_t profile_mode(const umadv_context_t ctx)
{
    return ctx->config.policy == UMADV_POLICY_ORACLE && ctx->config.profile_output[0] == '\0'
               ? UMADV_PROF_RECORD_SCAN
               : UMADV_PROF_RECORD_FULL;
}

int umadv__ctx_profile_start(umadv_context_t ctx)
{
    umadv_prof_mode_t mode = profile_mode(ctx);
    char source[160];

    ctx->trace.link = ctx->link;
    ctx->ncomplete_steps = 0;
    ctx->profile_pass = 0;
    if (ctx->profiler == NULL)
        return ctx->profiler_lost;
    ctx->profile_guessed = ctx->profile_evictions = ctx->profile_moved = 0;
    ctx->profile_guess_steps = 0;
    ctx->profile_fetched = ctx->profile_fetched_there = ctx->profile_fetch_spared = 0;
    umadv__pool_marks_clear(ctx->pool); /* nothing known on the GPU */
    ctx->profile_kept = ctx->profile_stayed = 0;
    memset(ctx->profile_move_calls, 0, sizeof(ctx->profile_move_calls));
    memset(ctx->profile_move_ns, 0, sizeof(ctx->profile_move_ns));
    memset(ctx->profile_move_bytes, 0, sizeof(ctx->profile_move_bytes));
    ctx->profile_evict_live = ctx->profile_evict_known = 0;
    ctx->profile_evict_ns = 0;
    ctx->nevict_steps = ctx->nleft_out = 0;
    ctx->profile_arrived_unseen = 0;
    ctx->profile_fetch_failed = ctx->profile_evicted = ctx->profile_evict_failed = 0;
    ctx->profile_faults = UINT64_MAX;
    ctx->profile_pass = pass_now(ctx);
    ctx->scout_lost = ctx->scout_timed = 0;
    /* unguided (UMADV_PROFILE_GUIDED=0), a second pass evicts as one pass
     * does (TWO PASSES) */
    if (ctx->profile_pass == 2 && !ctx->config.profile_guided)
        ctx->scout_lost = 1;
    if (ctx->profile_pass != 2)
        scout_drop(ctx);
    all_may_be_on_gpu(ctx);
    /* under oracle nothing moves on the profile's word: its first
     * touches would fault for nothing (profile_may_guess); nor in a first
     * pass (TWO PASSES) */
    if (ctx->config.profile_evict && !profile_may_guess(ctx)) {
        if (ctx->profile_pass == 2 && !ctx->scout_lost)
            live_stay(ctx);
        else
            evict_all(ctx);
    }
    /* a guided second pass that begins where the first's recording
     * stopped, at this boundary (its flush delivered every record; not
     * umadv_plan's mid-iteration stop, after which launches ran), with no
     * replay moving data since, moves nothing first: no flush again (10
     * ms; H200, 2026-11-29) */
    if (umadv__prof_record_start(ctx->profiler, mode,
                                 ctx->life.record_stopped && ctx->replay.exec == NULL &&
                                     ctx->profile_pass == 2 && !ctx->scout_lost) != UMADV_OK)
        return 1; /* warned: declared accesses only */
    umadv__replay_copies_noted(ctx, 1);
    snprintf(source, sizeof(source), "umadv cupti profile: %s%sdeclared accesses, %s backend",
             "kernel parameters, ",
             mode == UMADV_PROF_RECORD_FULL && umadv__prof_has_um_counters(ctx->profiler)
                 ? "gpu faults, "
                 : "",
             ctx->ops->name);
    umadv__trace_set_source(&ctx->trace, source);
    return 0;
}

/* Where the profiled iteration's time went on the GPU, beside its host
 * time: a second pass lasts many first passes (GPT-2 630 ms against
 * 111, ResNet-50 950 against 75; H200, 2026-11-30), and its host calls
 * that move blocks explain a fraction of it. CUPTI's records, each kind's
 * durations summed (migrations may overlap kernels and each other). */
static void gpu_time_report(const umadv_prof_result_t *r)
{
    uint64_t span = 0, busy = 0;

    /* the kernels sorted to merge them: only where the line is logged */
    if (umadv__log_level < UMADV_LOG_DEBUG ||
        umadv__prof_kernel_busy(r->kernels, r->nkernels, &span, &busy) != UMADV_OK)
        return;
    umadv_debug("profiled iteration's time: %.1f ms on the host from the recording's start to "
                "its stop; on the gpu %.1f ms from the first kernel's start to the last one's "
                "end, %.1f ms of it running kernels; unified memory records' durations "
                "summed: to the gpu %.1f ms, to the host %.1f ms, fault groups %.1f ms",
                r->wall_ns / 1e6, span / 1e6, busy / 1e6,
                r->um_ns[UMADV_PROF_UM_HTOD] / 1e6, r->um_ns[UMADV_PROF_UM_DTOH] / 1e6,
                r->um_ns[UMADV_PROF_UM_GPU_FAULT] / 1e6);
}

static void profile_report(const umadv_context_t ctx, const umadv_prof_result_t *r,
                           const umadv_prof_attrib_stats_t *st)
{
    uint64_t calls = ctx->profile_move_calls[0] + ctx->profile_move_calls[1];
    char in[32], faulted[32], out[32];

    umadv_info("profiled iteration: %llu kernels (%llu not launched in it), %llu fault "
               "records (%llu groups): %llu attributed, %llu with no kernel, %llu outside "
               "umadv memory; %s to the gpu (%s on faults), %s to the host, %llu thrashing",
               (unsigned long long)st->kernels, (unsigned long long)st->kernels_unknown,
               (unsigned long long)st->faults, (unsigned long long)st->fault_groups,
               (unsigned long long)st->faults_attributed,
               (unsigned long long)st->faults_no_kernel,
               (unsigned long long)st->faults_no_alloc,
               umadv__size_format(r->htod_bytes, in, sizeof(in)),
               umadv__size_format(r->htod_fault_bytes, faulted, sizeof(faulted)),
               umadv__size_format(r->dtoh_bytes, out, sizeof(out)),
               (unsigned long long)r->um_records[UMADV_PROF_UM_THRASHING]);
    if (r->no_layout > 0)
        umadv_info("parameter scan: %llu of %llu launches have arguments whose layout cuda "
                   "does not give (first: %s): %llu named blocks through the struct their "
                   "first argument points at, %llu named none; %llu evictions before them, "
                   "so that what else they touch faults",
                   (unsigned long long)r->no_layout, (unsigned long long)r->scanned,
                   r->no_layout_name, (unsigned long long)ctx->profile_guessed,
                   (unsigned long long)(r->no_layout - ctx->profile_guessed),
                   (unsigned long long)ctx->profile_evictions);
    if (ctx->profile_fetched > 0)
        umadv_debug("profiling: %s of scanned and guessed blocks and declared ranges "
                    "fetched back ahead of their launches, %s of them blocks that no "
                    "eviction had sent to the host since they may have come onto the gpu; "
                    "%s not asked for, known on the gpu (fetched, or there when the pass "
                    "began, and no eviction since)",
                    umadv__size_format(ctx->profile_fetched, in, sizeof(in)),
                    umadv__size_format(ctx->profile_fetched_there, out, sizeof(out)),
                    umadv__size_format(ctx->profile_fetch_spared, faulted, sizeof(faulted)));
    if (calls > 0) /* where an evicting profile's time goes */
        moves_report(ctx, calls);
    gpu_time_report(r);
    umadv_debug("unified memory records by kind: htod %llu, dtoh %llu, gpu faults %llu, "
                "thrashing %llu, other %llu",
                (unsigned long long)r->um_records[UMADV_PROF_UM_HTOD],
                (unsigned long long)r->um_records[UMADV_PROF_UM_DTOH],
                (unsigned long long)r->um_records[UMADV_PROF_UM_GPU_FAULT],
                (unsigned long long)r->um_records[UMADV_PROF_UM_THRASHING],
                (unsigned long long)r->um_records[UMADV_PROF_UM_OTHER]);
}

/* ---- steps that declared all they touch --------------------------------- */

/* @step's index in ctx->complete_steps (in step order), or -1. */
static ptrdiff_t complete_index(const umadv_context_t ctx, uint32_t step)
{
    size_t lo = 0, hi = ctx->ncomplete_steps;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (ctx->complete_steps[mid] < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ctx->ncomplete_steps && ctx->complete_steps[lo] == step ? (ptrdiff_t)lo : -1;
}

/* Whether section @section of allocation @alloc is among @s's accesses. */
static int step_has_section(const umadv_trace_t *t, const umadv_trace_step_t *s, uint32_t alloc,
                            uint64_t section)
{
    for (uint32_t i = s->first_access; i < s->first_access + s->naccesses; i++) {
        const umadv_trace_access_t *x = &t->accesses[i];

        if (x->alloc == alloc && section >= x->first && section < (uint64_t)x->first + x->count)
            return 1;
    }
    return 0;
}

/* A fault names a page, not the byte: a kernel's first touch of a block
 * that begins inside it can show in a block before it, within UVM's 2
 * MiB unit of migration (VGG-16 in C on an H100: conv4_3's forward
 * "touched" conv4_2's weight momentum, conv2_1's conv1_2's weight
 * gradient; a 64 KiB page was not enough): UMADV_PROF_FAULT_PAGE. */

/* Whether @s's accesses (declared, scanned) reach into [@lo, @hi). */
static int step_reaches(const umadv_trace_t *t, const umadv_trace_step_t *s, uint64_t lo,
                        uint64_t hi)
{
    for (uint32_t i = s->first_access; i < s->first_access + s->naccesses; i++) {
        const umadv_trace_access_t *x = &t->accesses[i];
        const umadv_trace_alloc_t *al = &t->allocs[x->alloc];
        uint64_t start = al->base + (uint64_t)x->first * t->section_size;
        uint64_t end = al->base + UMADV_MIN((uint64_t)(x->first + x->count) * t->section_size,
                                            al->size);

        if (start < hi && end > lo)
            return 1;
    }
    return 0;
}

/* Whether the accesses its step already holds cover fault access @a:
 * each of its sections, or the page it names reaches into them. */
static int step_covers(const umadv_trace_t *t, const umadv_prof_access_t *a)
{
    const umadv_trace_alloc_t *al = &t->allocs[a->alloc];
    uint64_t offset = UMADV_MIN(a->offset, al->size - 1);
    uint64_t last = offset + UMADV_MIN(a->size, al->size - offset) - 1;
    uint64_t page = (al->base + offset) & ~(UMADV_PROF_FAULT_PAGE - 1);

    if (step_reaches(t, &t->steps[a->step], page, page + UMADV_PROF_FAULT_PAGE))
        return 1;
    for (uint64_t sec = offset / t->section_size; sec <= last / t->section_size; sec++) {
        if (!step_has_section(t, &t->steps[a->step], a->alloc, sec))
            return 0;
    }
    return 1;
}

/* A step that said it declared all it touches, and faulted outside what
 * it declared, is not taken on its word: it counts as guessed, so
 * nothing is staged on this profile (replay.c), warned once. Faults show
 * only first touches of data off the GPU; what they cannot show is the
 * application's promise (umadv_step_access_complete). */
static void complete_steps_check(umadv_context_t ctx, const umadv_prof_access_t *acc,
                                 size_t nacc)
{
    umadv_trace_t *t = &ctx->trace;
    uint8_t *broken;

    if (ctx->ncomplete_steps == 0 || nacc == 0)
        return;
    broken = calloc(ctx->ncomplete_steps, 1);
    for (size_t i = 0; i < nacc; i++) {
        const umadv_prof_access_t *a = &acc[i];
        ptrdiff_t k = complete_index(ctx, a->step);

        if (k < 0 || step_covers(t, a))
            continue;
        if (broken == NULL || !broken[k]) {
            if (t->guessed_steps == 0)
                umadv_warn("step %s touched block %s outside what it declared, though it said "
                           "it declared all it touches (umadv_step_access_complete): nothing "
                           "is staged on this profile",
                           t->steps[a->step].name != NULL ? t->steps[a->step].name : "?",
                           t->allocs[a->alloc].tag != NULL ? t->allocs[a->alloc].tag : "?");
            t->guessed_steps++;
        }
        if (broken != NULL)
            broken[k] = 1;
    }
    free(broken);
}

/* ---- what the evictions left out ------------------------------------- */

typedef struct repair {
    umadv_context_t ctx;
    umadv_keyed_t   by_alloc; /* per allocation: the evictions that left it out,
                               * ascending (noted in their order) */
    uint8_t        *done;     /* per entry of by_alloc: made unseen already */
} repair_t;

static void left_out_items(void *arg, umadv_keyed_pass_t *pass)
{
    const umadv_context_t ctx = arg;

    for (size_t i = 0; i < ctx->nleft_out; i++) {
        if (ctx->left_out[i].alloc < ctx->trace.nallocs)
            umadv__keyed_emit(pass, ctx->left_out[i].alloc, ctx->left_out[i].eviction);
    }
}

/* Allocation @alloc came onto the GPU at @step (UMADV_STEP_NONE: at a
 * time no kernel ran, so from its first step): at each eviction from
 * there on that left it out, until one that did not (it moved it, kept
 * it, or it was no longer live), it stayed on the GPU unknown to the
 * profile, and the launch after it could touch it without a fault: it
 * is unseen there (trace->unseen). */
static void left_out_repair(void *arg, uint32_t alloc, uint32_t step)
{
    repair_t *rp = arg;
    umadv_context_t ctx = rp->ctx;
    const uint32_t *left;
    uint32_t from = step, n, k = 0;
    size_t e = 0;

    if (alloc >= rp->by_alloc.nkeys)
        return; /* no eviction left it out */
    left = umadv__keyed_values(&rp->by_alloc, alloc);
    n = umadv__keyed_count(&rp->by_alloc, alloc);
    if (from == UMADV_STEP_NONE)
        from = ctx->trace.allocs[alloc].alloc_step == UMADV_STEP_NONE
                   ? 0 : ctx->trace.allocs[alloc].alloc_step;
    while (e < ctx->nevict_steps && ctx->evict_steps[e] < from)
        e++;
    while (k < n && left[k] < e)
        k++;
    for (; e < ctx->nevict_steps; e++) {
        size_t entry = rp->by_alloc.off[alloc] + k;

        if (k == n || left[k] != e) {
            if (ctx->evict_steps[e] == from)
                continue; /* a step of several launches: the fault may come after this one */
            return;
        }
        k++;
        if (rp->done[entry])
            continue;
        rp->done[entry] = 1;
        if (umadv__trace_add_unseen(&ctx->trace, alloc, ctx->evict_steps[e]) != UMADV_OK)
            ctx->trace.guessed_steps++; /* no memory: nothing staged on this profile */
        ctx->profile_arrived_unseen++;
    }
}

/* The faults of a profile whose evictions left blocks out, applied to
 * what they left out (EVICTING WHAT MAY BE ON THE GPU). Without the
 * memory to do so, nothing is staged on this profile. */
static void left_out_faults(umadv_context_t ctx, const umadv_prof_interval_t *iv, size_t niv,
                            const umadv_prof_result_t *r)
{
    repair_t rp = {ctx, {0, NULL, NULL}, NULL};

    if (ctx->nleft_out == 0)
        return;
    if (umadv__keyed_build(&rp.by_alloc, ctx->trace.nallocs, left_out_items, ctx) != UMADV_OK ||
        (rp.done = calloc((size_t)rp.by_alloc.off[rp.by_alloc.nkeys] + 1, 1)) == NULL ||
        umadv__prof_attrib_arrivals(&ctx->trace, iv, niv, r->faults, r->nfaults,
                                    left_out_repair, &rp) != UMADV_OK)
        ctx->trace.guessed_steps++;
    free(rp.done);
    umadv__keyed_cleanup(&rp.by_alloc);
}

/* Kernel durations and fault accesses into the trace. */
static umadv_status_t profile_merge(umadv_context_t ctx, umadv_prof_result_t *r)
{
    umadv_prof_attrib_stats_t st;
    umadv_prof_interval_t *iv = NULL;
    umadv_prof_access_t *acc = NULL;
    size_t niv = 0, nacc = 0, cap = 0;
    umadv_status_t status;

    memset(&st, 0, sizeof(st));
    status = umadv__prof_attrib_kernels(&ctx->trace, r->launches, r->nlaunches, r->kernels,
                                        r->nkernels, &iv, &niv, &st);
    if (status == UMADV_OK)
        status = umadv__prof_attrib_faults(&ctx->trace, iv, niv, r->faults, r->nfaults, &acc,
                                           &nacc, &cap, &st);
    if (status == UMADV_OK && ctx->profile_pass != 1) /* the first pass only guides */
        complete_steps_check(ctx, acc, nacc);
    if (status == UMADV_OK)
        left_out_faults(ctx, iv, niv, r);
    if (status == UMADV_OK && nacc > 0)
        status = umadv__prof_trace_merge(&ctx->trace, acc, nacc);
    if (status == UMADV_OK) /* what the timeline and the kernels' stalls read */
        status = umadv__prof_attrib_activity(&ctx->trace, r->launches, r->nlaunches,
                                             r->kernels, r->nkernels, &r->activity);
    if (status == UMADV_OK) {
        profile_report(ctx, r, &st);
        ctx->profile_fault_groups = st.fault_groups;
        ctx->profile_faults = st.fault_groups;
    }
    free(iv);
    free(acc);
    return status;
}

void umadv__ctx_profile_finish(umadv_context_t ctx)
{
    umadv_prof_result_t result;

    if (ctx->profiler == NULL)
        return;
    umadv__replay_copies_noted(ctx, 0);
    if (umadv__prof_record_stop(ctx->profiler, &result) != UMADV_OK)
        return;
    if (ctx->record == UMADV_CTX_REC_RECORDING && profile_merge(ctx, &result) != UMADV_OK) {
        ctx->trace.guessed_steps++; /* what only the faults showed is missing */
        umadv_warn("profiled fault records could not be merged (out of memory): the trace "
                   "keeps declared and kernel-parameter accesses, and nothing is staged on it");
    }
    if (ctx->profile_pass == 1)
        ctx->scout_moved = result.htod_bytes;
    if (ctx->profile_pass == 2)
        scout_durations(ctx);
    left_out_drop(ctx);
    if (ctx->profile_evictions > 0)
        restore_live(ctx);
    umadv__prof_result_cleanup(&result);
}

/* A profile under oracle moves nothing (guesses, no evictions): its
 * kernel records time the kernels as they run, and a timing pass would
 * cost a PyTorch ResNet-18 iteration 78 ms of 10 for nothing. */
int umadv__ctx_profile_stalled(const umadv_context_t ctx)
{
    if (ctx->scout_timed)
        return 0; /* timed by its first pass (TWO PASSES) */
    if (ctx->profile_pass == 1)
        return first_pass_stalled(ctx); /* a first pass kept as the profile */
    return ctx->profile_moved > 0 || ctx->profile_evictions > 0 ||
           ctx->profile_faults > PROFILE_STALL_FAULTS;
}

/* ---- replay fault counts ------------------------------------------------- */

/* Whether the iteration beginning now has its GPU faults counted: the
 * unified-memory counters cost every kernel launch host time (measured
 * on an H200: 12 ms of a 49 ms PyTorch VGG-16 iteration, 15 ms of a
 * 32 ms ResNet-50 one), so a replay counts its first two iterations (the
 * executor judges drift from the second on), then one in
 * UMADV_FAULT_PERIOD. */
static int count_faults_now(umadv_context_t ctx)
{
    uint64_t n;

    /* Without a replayed schedule nobody judges drift, and oracle, which
     * moves nothing on the schedule's word, loses nothing to drift: count
     * only when asked to count every iteration (benchmarks, plain managed
     * memory). The counters cost every kernel launch 20-40 us. */
    if (ctx->replay.exec == NULL || ctx->config.policy == UMADV_POLICY_ORACLE)
        return ctx->config.fault_period == 1;
    if (ctx->faults_exec != (const void *)ctx->replay.exec) {
        ctx->faults_exec = ctx->replay.exec;
        ctx->faults_replayed = 0;
    }
    n = ctx->faults_replayed++;
    /* A plan that moves nothing in steady state (its budget holds every
     * step's data) has no prefetch to validate early, only drift to
     * catch: it skips the first iterations' counts, which cost a PyTorch
     * ResNet-18's first two replayed iterations 56 and 52 ms against 10
     * (turning the counters on and off, some 20 ms each; H200, 2026-11-29). */
    if (umadv__replay_moves_nothing(ctx))
        return (n + 1) % ctx->config.fault_period == 0;
    return n < PROFILE_FAULT_FIRST || n % ctx->config.fault_period == 0;
}

void umadv__ctx_profile_iteration(umadv_context_t ctx)
{
    if (ctx->profiler != NULL)
        umadv__prof_count_faults(ctx->profiler, count_faults_now(ctx));
}

uint64_t umadv__ctx_profile_faults(umadv_context_t ctx, int flushed)
{
    uint64_t n;

    if (ctx->profiler == NULL)
        return 0;
    n = umadv__prof_take_faults(ctx->profiler, flushed);
    ctx->stats.gpu_faults += n;
    ctx->iteration_faults  = n;
    return n;
}
