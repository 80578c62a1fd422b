/*
 * The planner: one iteration of a trace + a GPU budget -> a periodic
 * schedule of prefetches, evictions and drops.
 *
 * PROBLEM AND COST MODEL
 * The planned iteration (the "window", n steps) is replayed forever. Step
 * j needs its working set W_j (the sections it touches) resident while it
 * runs. Residency, data in flight to the GPU included, never exceeds the
 * budget B; memory under eviction counts until the eviction completes.
 * Moving data costs latency + bytes / bandwidth per call, on a fetch lane
 * (host->device) and an eviction lane (device->host) that run concurrently
 * with compute and with each other; a section missing when its step runs
 * is faulted in by the step itself (bytes / fault_bw, serial with
 * compute). Allocations follow window.h's lifetime classes: the first
 * touch of fresh memory (TRANSIENT or BORN, after birth) copies nothing,
 * and a freed allocation is released without a copy (DROP). Under CUDA
 * unified memory an eviction migrates pages, so a section only read since
 * its fetch still costs a copy, except where read-mostly advice keeps a
 * host copy valid: with params->read_mostly, an allocation that no step of
 * the trace writes is advised READ_MOSTLY (schedule->setup) and dropped
 * instead of evicted. The planner minimises the bytes moved and hides the
 * moves behind compute; the simulator (src/sim) measures the result.
 *
 * 1. RESIDENCY (residency.c). Belady's farthest-next-use policy, made lazy
 * and size-aware, at step granularity. At step j the resident sections of
 * W_j are pinned; if the missing ones do not fit, resident sections are
 * removed farthest next use first until they do. Next uses are cyclic (the
 * last uses of the window see the first ones of the next replay) and a
 * section whose allocation dies before its next use has none: it goes
 * first. At equal next use a section that costs nothing to remove (a clean
 * read-mostly copy) goes before one that needs a copy, then the one used
 * least recently: the bytes moved are the same, but its eviction, issued
 * right after that use (TIMING), starts earliest, and the slow eviction
 * lane has the most time to free the room (VGG-16 at 16G: the optimizer
 * state, idle since the last update, instead of fc6's weights, used the
 * step before: 301 -> 262 ms simulated); with the steps' durations and
 * the eviction rate, "equal" widens to "within a tenth" where Belady's
 * pick was used so recently that its eviction would make the step wait
 * (residency.c, WHEN THE EVICTION CAN START). Sections leave
 * only when room is needed, so data used again soon stays while memory
 * is free. A freed allocation's sections are dropped at its free step;
 * BORN data (window.h) is evicted after its last use in the window.
 * Call cost: a section of an allocation so small that a call's latency
 * dwarfs its bytes (eviction latency * bandwidth / 8: 612 KB with the
 * default link) goes before a larger one with a nearer next use only if
 * it alone completes the room; otherwise the policy would spend a 445 us
 * call per parameter buffer of a few KB (a 1,517-layer ResNet at half
 * its footprint: 3,297 eviction calls per iteration instead of 895).
 * With uniform section sizes (one tier) this is Belady, optimal in bytes
 * fetched: the exchange argument carries over to steps that pin a whole
 * set, and tests/test_plan_optimal.c checks it against exact searches,
 * linear and cyclic. With mixed sizes it is a heuristic (worst seen there:
 * 1.19x the optimum). A structure keyed by next use (victimq.c: a ring of
 * buckets and a bitmap, O(1) per touch) and precomputed next-use arrays
 * make a pass O(touches + evictions * n / 64).
 * STEADY STATE: the pass is repeated over the cyclic step sequence,
 * starting with an empty GPU, until the resident set at the wrap repeats
 * (the policy is deterministic and everything it consults at the wrap is
 * a function of that set, so the pass that repeats its start state is
 * periodic). DNN traces take 2 passes. Ties can make the state oscillate
 * (a few percent of tiny random traces); after params->max_passes the
 * cheaper of the last two passes is closed by reloading, for the next
 * replay, what it started with and lost, and evicting what it gained
 * (schedule->converged = 0).
 *
 * 1b. HOST PLACEMENT (placement.c; params->host_placement). Eviction is
 * the slow direction (11 GB/s against 52 for fetches in DESIGN.md's
 * envelope), while a kernel reads and writes host memory mapped over the
 * link at about 42 GB/s each way (PREFERRED_HOST + ACCESSED_BY: no fault,
 * no migration, no GPU memory). So a residency of a section (arrival to
 * departure in the pass above) may instead be served from the host: its
 * touches cost bytes / remote_bw each in their steps' own time (remote
 * access stalls the kernel), and it saves its eviction and, if it copied,
 * its fetch. The typical case is an activation written in the forward
 * pass and read in the backward pass: written straight to the host, no
 * eviction, fetched for the read like any other data (the fetch comes
 * after the advice is undone). A residency of data read once ("remote
 * read") and data that never fits (every residency remote: advised once
 * in setup) are the same choice. Read-mostly data is not placed (its
 * drops are free, and its advice overrides a preferred location).
 * The iteration is estimated per phase as max(compute + remote, fetches /
 * fetch_bw, evictions / evict_bw), latency per group of adjacent sections
 * that would be one call, with one phase or two (placement.c, estimate_t:
 * the evictions of a forward pass cannot hide behind the backward pass's
 * compute; the cut is the most binding one). Candidates, such groups,
 * are taken greedily in
 * order of transfer time saved per second of remote time, each only if
 * it lowers the estimate: eviction time falls, compute time rises, and
 * the greedy stops short of the point where remote time dominates. The
 * residency pass is then rerun with the chosen touches off the GPU (a
 * section whose next touch is remote counts as dead to Belady: it must
 * leave by then anyway), which frees room for the rest; the new pass is
 * kept if its estimate is lower, and chosen again from, up to
 * PLACEMENT_ROUNDS times. Each stretch of consecutive remote touches of a
 * section gets its ADVISE ops (plan.h says what the executor does). On
 * the shipped traces this halves the simulated iteration under half the
 * footprint (ResNet-50 1264 -> 624 ms): DESIGN.md measured remote access
 * and eviction separately; the combination is a model until measured.
 *
 * 1c. CHANNELS (plan_int.h, umadv__plan_channel; params->stage). Data
 * leaves the GPU one of four ways, chosen per run: dropped (read-mostly
 * copies, freed data: no copy; RESIDENCY decides), served from the host
 * instead (HOST PLACEMENT), or evicted, by UVM migration (evict_bw,
 * 10-18 GB/s) or, for the allocations the trace marks stageable (the
 * PyTorch allocator's blocks), by a copy into pinned host staging and a
 * discard (schedule/core.h, STAGING: about 45 GB/s; restored the same
 * way). Which eviction a run gets is the replay core's rule, not the
 * plan's: staged wherever it may be (stageable, live, not advised), since
 * it is the faster channel both ways. What the plan chooses is whether to
 * move a run at all: the placement's estimate and the timing's lane
 * budget (split_evictions) price each run's eviction and fetch at its own
 * channel, so a stageable run, cheap to move, is placed on the host only
 * where even staging costs more than remote access. The staged channel
 * is priced with the link probe's figures (trace.h, stage_*); a trace
 * without them prices it as UVM (nothing measured, nothing assumed), and
 * REFINE's trials still simulate the staging (the simulator's built-in
 * rate), as the runtime will do it; with figures, REFINE also plans
 * priced as UVM and keeps what simulates faster (the estimate does not
 * know the staging pool's size). schedule->staged_bytes reports the
 * evictions that go through staging, schedule->stage_priced whether the
 * plan kept was priced at the staged figures.
 *
 * 2. TIMING (timing.c). An eviction decided at step k is issued at the end
 * of the section's last use before k, not at k: memory comes free as early
 * as possible and the slow eviction lane starts early. Then each fetch is
 * hoisted from its need step j back to the earliest step i such that its
 * bytes fit under the budget at every step in [i, j) given everything
 * placed so far (a segment tree of free memory per step, slack.c: one
 * O(log n) query and one range update per fetch). The sections that will
 * form one op (one call) are hoisted together: starting part of a run
 * earlier would cost a call's latency per part. A fetch is also never issued
 * before its own previous eviction, before its allocation exists (no
 * crossing the wrap except for PERSISTENT data), a whole replay early, or
 * more than params->lookahead steps early. Fetches are placed in need
 * order, so the earliest-needed data gets the free memory first; the order
 * starts after the step with the least free memory, where the wrap costs
 * least. The replayer serves issued fetches earliest need first (plan.h):
 * every fetch's room is freed by evictions issued before its issue step,
 * so the fetch lane waits only on lanes already running (no deadlock).
 * WHY AS EARLY AS POSSIBLE rather than just in time: residency is decided
 * first, so hoisting only uses memory that no residency decision needs;
 * fetches get that memory in need order; and the lane serves the earliest
 * need first, so a fetch started early delays one needed sooner only by
 * the rest of the call in progress (the lane is not preemptive; max_op_bytes
 * bounds a call). What early issue blocks is free memory that a
 * later-needed fetch could have used to start before this one, out of
 * need order, which the lane would not do anyway. Issuing just in time
 * would leave the lane idle while there is work it could do, and a late
 * estimate (durations vary, the cost model is a model) turns straight into
 * stalls. The costs of early issue lie outside the model (memory the trace
 * does not see); params->lookahead bounds it for users who want a margin.
 *
 * 3. COALESCING (here). Operations on adjacent sections of one allocation
 * with the same kind, flags, issue step and need step become one op (one
 * call). Fetch runs are split at params->max_op_bytes (default: the
 * smallest power-of-two multiple of the section size at which the call's
 * latency is under 2% of its transfer, at least 64 MiB, 256 MiB for the
 * default link), so that a fetch needed soon never waits long behind one
 * huge call on the non-preemptive lane. Ops are sorted by issue step,
 * fetches first (they start at the step's beginning, the rest at its end),
 * fetches in need order. A FRESH fetch copies nothing, so it is never
 * split (each piece would only add a call). Evictions are split at the
 * same size where the eviction lane has time to spare (split_evictions):
 * a fetch waiting for room waits for a whole eviction call.
 *
 * 4. REFINE (plan_best; params->refine). With host placement, the
 * schedule is built with each form of the placement's estimate and
 * without placement, each is simulated (src/sim), and the fastest kept:
 * the estimates are models of the simulator's model, and neither is
 * right on every shipped trace. Stalls are attributed by the simulator
 * (UMADV_LOG=debug per step, UMADV_LOG=trace per blocking transfer;
 * umadv_sim_result_t.wait_s), which is how the rules above were found.
 *
 * COMPLEXITY: with T section touches per window, E residency events, P
 * passes: O(P * (T + E * n / 64) + E log E + E log n) time, O(T + E + S)
 * memory (S sections); host placement runs the residency up to
 * PLACEMENT_ROUNDS + 1 times and adds O(E log E + E log T) per round. A
 * 1,517-layer ResNet (3,040 steps, 83,000 touches) plans in about 20 ms
 * (about 25 with placement, 70-100 with refine's three plans and
 * simulations); time per touch stays flat up to 20,000 steps
 * (bench/plan_scaling).
 */
#include "plan/plan.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/keyed.h"
#include "common/log.h"
#include "common/util.h"
#include "plan/plan_int.h"
#include "sim/sim.h"

#define PLAN_MAX_PASSES_DEFAULT 16
#define PLAN_MIN_OP_SPLIT       (64 * UMADV_MIB)
#define PLAN_LATENCY_SHARE      0.02

void umadv__plan_params_default(const umadv_trace_t *trace, uint64_t budget,
                                umadv_plan_params_t *params)
{
    memset(params, 0, sizeof(*params));
    params->budget      = budget;
    params->iteration   = trace->niterations ? trace->niterations - 1 : 0;
    params->link        = trace->link;
    params->lookahead   = 0;
    params->read_mostly = 1;
    params->host_placement = 1;
    params->refine      = 1;
    params->max_touches = UMADV_PLAN_MAX_TOUCHES_DEFAULT;
    params->stage       = umadv__trace_stageable_bytes(trace) > 0;
}

static uint64_t default_max_op_bytes(const umadv_link_model_t *link, uint64_t section_size)
{
    double want = link->fetch_latency * link->fetch_bw / PLAN_LATENCY_SHARE;
    uint64_t bytes = section_size;

    if (!isfinite(want) || want <= 0)
        want = 0;
    while ((double)bytes < want && bytes < (UINT64_C(1) << 40))
        bytes *= 2;
    return UMADV_MAX(bytes, PLAN_MIN_OP_SPLIT);
}

/* ------------------------------------------------------------ coalescing */

static uint32_t op1_issue_step(const umadv_op1_t *op, uint32_t n)
{
    return op->issue < 0 ? (uint32_t)(op->issue + (int32_t)n) : (uint32_t)op->issue;
}

static int cmp_u32(uint32_t a, uint32_t b)
{
    return a < b ? -1 : a > b;
}

/* Order inside an issue step (plan.h): at its start the advice sets,
 * then the fetches; at its end the reverts, the evictions, the drops. */
static uint32_t op1_rank(const umadv_op1_t *op)
{
    switch (op->kind) {
    case UMADV_OP_ADVISE:
        if (op->advice == UMADV_ADVICE_NONE)
            return 3;
        return op->advice == UMADV_ADVICE_PREFERRED_HOST ? 0 : 1;
    case UMADV_OP_FETCH:
        return 2;
    case UMADV_OP_EVICT:
        return 4;
    default:
        return 5;
    }
}

static int op1_compare(const void *pa, const void *pb)
{
    const umadv_op1_t *a = pa, *b = pb;
    int c = cmp_u32(a->issue_step, b->issue_step);

    if (c == 0)
        c = cmp_u32(op1_rank(a), op1_rank(b));
    if (c == 0 && a->kind == UMADV_OP_EVICT)
        c = cmp_u32(a->room_after, b->room_after);
    if (c == 0)
        c = cmp_u32(a->need_order, b->need_order);
    if (c == 0)
        c = cmp_u32(a->flags, b->flags);
    if (c == 0)
        c = cmp_u32(a->section, b->section);
    return c;
}

/* Largest op of each kind (coalesce_into); UINT64_MAX: no limit. */
typedef struct op_limits {
    uint64_t fetch, evict;
} op_limits_t;

/* A FRESH fetch copies nothing: its call costs the same at any size, so
 * it is never split. */
static uint64_t op_limit(const op_limits_t *lim, const umadv_op1_t *o)
{
    if (o->kind == UMADV_OP_FETCH)
        return (o->flags & UMADV_OP_FLAG_FRESH) ? UINT64_MAX : lim->fetch;
    return o->kind == UMADV_OP_EVICT ? lim->evict : UINT64_MAX;
}

static int extends(const umadv_trace_t *trace, const umadv_op_t *op, const umadv_op1_t *o,
                   uint32_t n, const op_limits_t *lim)
{
    const umadv_trace_section_t *sec = &trace->sections[o->section];

    return op->kind == (umadv_op_kind_t)o->kind && op->flags == o->flags &&
           op->advice == (umadv_advice_t)o->advice &&
           op->issue_step == op1_issue_step(o, n) && op->need_step == o->need &&
           op->alloc == sec->alloc && op->first + op->count == sec->index &&
           op->bytes + sec->size <= op_limit(lim, o);
}

static void op_start(const umadv_trace_t *trace, umadv_op_t *op, const umadv_op1_t *o, uint32_t n)
{
    const umadv_trace_section_t *sec = &trace->sections[o->section];

    memset(op, 0, sizeof(*op));
    op->kind       = (umadv_op_kind_t)o->kind;
    op->advice     = (umadv_advice_t)o->advice;
    op->alloc      = sec->alloc;
    op->first      = sec->index;
    op->count      = 1;
    op->bytes      = sec->size;
    op->issue_step = op1_issue_step(o, n);
    op->need_step  = o->need;
    op->flags      = o->flags;
}

typedef struct ops1_items {
    const umadv_op1_t *ops1;
    size_t             n1;
} ops1_items_t;

static void ops1_by_step(void *arg, umadv_keyed_pass_t *pass)
{
    const ops1_items_t *it = arg;

    for (size_t i = 0; i < it->n1; i++)
        umadv__keyed_emit(pass, it->ops1[i].issue_step, (uint32_t)i);
}

/* Sort @ops1 as op1_compare orders them: by issue step in one counting
 * pass (keyed lists), then each step's few by the rest of the order.
 * Sorting the whole array by op1_compare had been a quarter of planning
 * (bench/plan_scaling, perf). Where that cannot be done (no memory; an
 * issue step past the window), the whole array is sorted. */
static void ops1_sort(umadv_op1_t *ops1, size_t n1, uint32_t n)
{
    ops1_items_t items = {ops1, n1};
    umadv_op1_t *sorted = NULL;
    umadv_keyed_t by_step = {0, NULL, NULL};
    int in_window = n1 <= UINT32_MAX;

    for (size_t i = 0; i < n1; i++) {
        ops1[i].issue_step = op1_issue_step(&ops1[i], n);
        /* a fetch for the next replay is needed after this one's steps */
        ops1[i].need_order = ops1[i].need + (ops1[i].issue < 0 ? n : 0);
        in_window &= ops1[i].issue_step < n;
    }
    if (n1 < 2)
        return;
    if (!in_window || (sorted = malloc(n1 * sizeof(*sorted))) == NULL ||
        umadv__keyed_build(&by_step, n, ops1_by_step, &items) != UMADV_OK) {
        free(sorted);
        qsort(ops1, n1, sizeof(*ops1), op1_compare);
        return;
    }
    for (uint32_t step = 0, at = 0; step < n; step++) {
        const uint32_t *index = umadv__keyed_values(&by_step, step);
        uint32_t count = umadv__keyed_count(&by_step, step);

        for (uint32_t k = 0; k < count; k++)
            sorted[at + k] = ops1[index[k]];
        if (count > 1)
            qsort(sorted + at, count, sizeof(*sorted), op1_compare);
        at += count;
    }
    memcpy(ops1, sorted, n1 * sizeof(*ops1));
    free(sorted);
    umadv__keyed_cleanup(&by_step);
}

/* Merge runs of @ops1, sorted (ops1_sort), into @out (n1 entries
 * allocated by the caller); returns how many ops there are. */
static size_t coalesce_into(const umadv_trace_t *trace, const umadv_op1_t *ops1, size_t n1,
                            uint32_t n, const op_limits_t *lim, umadv_op_t *out)
{
    size_t nops = 0;

    for (size_t i = 0; i < n1; i++) {
        if (nops > 0 && extends(trace, &out[nops - 1], &ops1[i], n, lim)) {
            out[nops - 1].count++;
            out[nops - 1].bytes += trace->sections[ops1[i].section].size;
        } else {
            op_start(trace, &out[nops++], &ops1[i], n);
        }
    }
    return nops;
}

/* Seconds the eviction lane spends on @ops per replay, each at its
 * channel (CHANNELS). */
static double evict_lane_seconds(const umadv_window_t *w, const umadv_plan_params_t *params,
                                 const umadv_op_t *ops, size_t nops)
{
    double t = 0;

    for (size_t i = 0; i < nops; i++) {
        umadv_plan_channel_t ch;

        if (ops[i].kind != UMADV_OP_EVICT)
            continue;
        ch = umadv__plan_channel(w, params, ops[i].alloc);
        t += umadv__link_time(ch.evict_latency, ch.evict_bw, ops[i].bytes);
    }
    return t;
}

/*
 * Evictions are split at the fetch limit too, but only where the
 * eviction lane has time to spare: a fetch that waits for room waits for
 * a whole eviction call, and a 400 MB call holds its room for 36 ms, all
 * of which may not be needed. Each extra call costs the lane its latency,
 * so a plan whose evictions fill the iteration keeps them whole (evict
 * big, DESIGN.md). "To spare": the split lane still fits in 3/4 of the
 * compute and remote time it overlaps with.
 */
static int split_evictions(const umadv_window_t *w, const umadv_plan_params_t *params,
                           const umadv_op_t *split, size_t nsplit, double remote_s)
{
    double lane = evict_lane_seconds(w, params, split, nsplit);

    return lane <= 0.75 * (umadv__window_compute_seconds(w) + remote_s);
}

/* The timing's ops and the placement's advice, as one list. */
static umadv_status_t coalesce(const umadv_window_t *w, const umadv_plan_params_t *params,
                               const umadv_timing_t *timing, const umadv_placement_t *pl,
                               uint64_t max_bytes, umadv_schedule_t *s)
{
    const umadv_trace_t *trace = w->trace;
    uint32_t n = w->n;
    op_limits_t lim = {max_bytes, max_bytes};
    size_t n1 = timing->nops + pl->nops;
    umadv_op1_t *ops1 = malloc((n1 ? n1 : 1) * sizeof(*ops1));

    s->ops = malloc((n1 ? n1 : 1) * sizeof(*s->ops));
    if (ops1 == NULL || s->ops == NULL) {
        free(ops1);
        return UMADV_ERR_NO_MEMORY;
    }
    memcpy(ops1, timing->ops, timing->nops * sizeof(*ops1));
    if (pl->nops > 0)
        memcpy(ops1 + timing->nops, pl->ops, pl->nops * sizeof(*ops1));
    ops1_sort(ops1, n1, n);
    s->nops = coalesce_into(trace, ops1, n1, n, &lim, s->ops);
    if (!split_evictions(w, params, s->ops, s->nops,
                         pl->remote_bytes ? (double)pl->remote_bytes / params->link.remote_bw
                                          : 0)) {
        lim.evict = UINT64_MAX;
        s->nops = coalesce_into(trace, ops1, n1, n, &lim, s->ops);
    }
    free(ops1);
    return UMADV_OK;
}

/* ------------------------------------------------------------ schedule */

static umadv_status_t index_steps(umadv_schedule_t *s)
{
    s->step_ops = calloc((size_t)s->nsteps + 1, sizeof(*s->step_ops));
    if (s->step_ops == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (size_t i = 0; i < s->nops; i++)
        s->step_ops[s->ops[i].issue_step + 1]++;
    for (uint32_t j = 0; j < s->nsteps; j++)
        s->step_ops[j + 1] += s->step_ops[j];
    return UMADV_OK;
}

static void count_totals(umadv_schedule_t *s)
{
    for (size_t i = 0; i < s->nops; i++) {
        const umadv_op_t *op = &s->ops[i];

        switch (op->kind) {
        case UMADV_OP_FETCH:
            s->fetch_ops++;
            if (op->flags & UMADV_OP_FLAG_FRESH)
                s->fresh_bytes += op->bytes;
            else
                s->fetch_bytes += op->bytes;
            break;
        case UMADV_OP_EVICT:
            s->evict_ops++;
            s->evict_bytes += op->bytes;
            if (op->flags & UMADV_OP_FLAG_DEAD)
                s->dead_bytes += op->bytes;
            break;
        case UMADV_OP_DROP:
            s->drop_bytes += op->bytes;
            break;
        case UMADV_OP_ADVISE:
            s->advise_ops++;
            break;
        default:
            break;
        }
    }
}

/* READ_MOSTLY advice on every allocation the plan drops after a use,
 * then the placement's host advice in force when a replay begins. */
static umadv_status_t build_setup(const umadv_trace_t *trace, const umadv_residency_t *res,
                                  umadv_placement_t *pl, uint32_t n, umadv_schedule_t *s)
{
    uint8_t *dropped = calloc(trace->nallocs ? trace->nallocs : 1, 1);
    size_t count = pl->nsetup;

    if (dropped == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (size_t e = 0; e < res->nevents; e++) {
        if (res->events[e].kind == UMADV_RES_DROP)
            dropped[trace->sections[res->events[e].section].alloc] = 1;
    }
    for (uint32_t a = 0; a < trace->nallocs; a++)
        count += dropped[a];
    s->setup = calloc(count ? count : 1, sizeof(*s->setup));
    if (s->setup == NULL) {
        free(dropped);
        return UMADV_ERR_NO_MEMORY;
    }
    for (uint32_t a = 0; a < trace->nallocs; a++) {
        umadv_op_t *op;
        if (!dropped[a])
            continue;
        op = &s->setup[s->nsetup++];
        op->kind   = UMADV_OP_ADVISE;
        op->advice = UMADV_ADVICE_READ_MOSTLY;
        op->alloc  = a;
        op->count  = trace->allocs[a].nsections;
        op->bytes  = trace->allocs[a].size;
    }
    free(dropped);
    op_limits_t lim = {UINT64_MAX, UINT64_MAX};

    ops1_sort(pl->setup, pl->nsetup, n);
    s->nsetup += coalesce_into(trace, pl->setup, pl->nsetup, n, &lim, s->setup + s->nsetup);
    return UMADV_OK;
}

/* Bytes of the schedule's evictions that the replay stages (CHANNELS):
 * of a stageable allocation, live, and on no section the schedule
 * advises (host placement: the replay migrates those, every time). */
static umadv_status_t staged_bytes(const umadv_window_t *w, const umadv_plan_params_t *params,
                                   umadv_schedule_t *s)
{
    const umadv_trace_t *t = w->trace;
    uint8_t *advised = calloc((size_t)t->nsections + 1, 1);

    if (advised == NULL)
        return UMADV_ERR_NO_MEMORY;
    umadv__schedule_mark_advised(s, t, advised);
    s->staged_bytes = 0;
    for (size_t i = 0; i < s->nops; i++) {
        const umadv_op_t *op = &s->ops[i];

        if (op->kind != UMADV_OP_EVICT || (op->flags & UMADV_OP_FLAG_DEAD) ||
            !umadv__plan_channel(w, params, op->alloc).staged)
            continue;
        for (uint32_t k = 0; k < op->count; k++) {
            uint32_t x = t->allocs[op->alloc].first_section + op->first + k;
            s->staged_bytes += advised[x] ? 0 : t->sections[x].size;
        }
    }
    free(advised);
    return UMADV_OK;
}

static uint64_t max_op_bytes(const umadv_window_t *w, const umadv_plan_params_t *params)
{
    if (params->max_op_bytes)
        return params->max_op_bytes;
    return default_max_op_bytes(&params->link, w->trace->section_size);
}

static umadv_status_t assemble(const umadv_window_t *w, const umadv_plan_params_t *params,
                               const umadv_residency_t *res, umadv_timing_t *timing,
                               umadv_placement_t *pl, umadv_schedule_t *s)
{
    uint64_t max_bytes = max_op_bytes(w, params);
    umadv_status_t status = coalesce(w, params, timing, pl, max_bytes, s);

    if (status == UMADV_OK)
        status = index_steps(s);
    if (status == UMADV_OK && params->stage)
        status = umadv__schedule_mark_dead(s, w->trace);
    if (status == UMADV_OK)
        status = build_setup(w->trace, res, pl, w->n, s);
    if (status != UMADV_OK)
        return status;
    count_totals(s);
    status = staged_bytes(w, params, s);
    if (status != UMADV_OK)
        return status;
    s->stage_priced = s->staged_bytes > 0 &&
                      (umadv__link_stage_evict_known(&params->link) ||
                       umadv__link_stage_restore_known(&params->link));
    s->host_bytes   = pl->host_bytes;
    s->remote_bytes = pl->remote_bytes;
    s->remote_s     = pl->remote_bytes ? (double)pl->remote_bytes / params->link.remote_bw : 0;
    s->resident_at_start = timing->resident_at_start;
    timing->resident_at_start = NULL;
    s->peak_planned   = timing->peak;
    s->max_step_bytes = w->max_step_bytes;
    s->passes         = res->passes;
    s->converged      = res->converged;
    return UMADV_OK;
}

/* One schedule; @phases 0: no host placement, else the placement's
 * estimate (umadv__placement_run). */
static umadv_status_t plan_window(const umadv_window_t *w, const umadv_plan_params_t *params,
                                  uint32_t phases, umadv_schedule_t *s)
{
    uint64_t budget = umadv__plan_effective_budget(w, params->budget);
    uint32_t passes = params->max_passes ? params->max_passes : PLAN_MAX_PASSES_DEFAULT;
    umadv_victim_rule_t rule = umadv__plan_victim_rule(w, params);
    umadv_residency_t res;
    umadv_placement_t pl;
    umadv_timing_t timing;
    umadv_status_t status;

    status = umadv__residency_run(w, budget, params->read_mostly, 1, passes,
                                  umadv__plan_small_bytes(&params->link), &rule, NULL, &res);
    if (status != UMADV_OK)
        return status;
    if (phases == 0) {
        memset(&pl, 0, sizeof(pl));
    } else {
        status = umadv__placement_run(w, params, phases, budget, passes, &res, &pl);
    }
    if (status == UMADV_OK)
        status = umadv__placement_ops(w, &pl);
    if (status == UMADV_OK)
        status = umadv__timing_run(w, &res, budget, params->lookahead,
                                   max_op_bytes(w, params), &timing);
    if (status == UMADV_OK) {
        status = assemble(w, params, &res, &timing, &pl, s);
        umadv__timing_cleanup(&timing);
    }
    umadv__placement_cleanup(&pl);
    umadv__residency_cleanup(&res);
    return status;
}

static umadv_status_t plan_variant(const umadv_window_t *w, const umadv_plan_params_t *params,
                                   uint32_t phases, umadv_schedule_t *s)
{
    memset(s, 0, sizeof(*s));
    s->budget     = params->budget;
    s->first_step = w->first;
    s->nsteps     = w->n;
    s->victims    = params->victims;
    return plan_window(w, params, phases, s);
}

const char *umadv__plan_victims_name(int victims)
{
    return victims == UMADV_PLAN_VICTIMS_IN_TIME ? "in time" : "near Belady";
}

static int link_simulable(const umadv_link_model_t *link)
{
    return link->fetch_bw > 0 && link->evict_bw > 0 && link->fault_bw > 0 && link->remote_bw > 0 &&
           isfinite(link->fetch_bw + link->evict_bw + link->fault_bw + link->remote_bw);
}

/* Whether the plan prices staged evictions with the link model's staged
 * figures (CHANNELS): staging, something stageable, and figures. */
static int stage_priced(const umadv_trace_t *trace, const umadv_plan_params_t *params)
{
    return params->stage && umadv__trace_stageable_bytes(trace) > 0 &&
           (umadv__link_stage_evict_known(&params->link) ||
            umadv__link_stage_restore_known(&params->link));
}

/* @params as the plan priced as UVM sees them: no staged figures. */
static void uvm_pricing(const umadv_plan_params_t *params, umadv_plan_params_t *p)
{
    *p = *params;
    p->link.stage_evict_bw = p->link.stage_evict_latency = 0;
    p->link.stage_restore_bw = p->link.stage_restore_latency = 0;
    p->link.stage_duplex_evict_bw = p->link.stage_duplex_restore_bw = 0;
}

/* The most trials plan_best runs: each victim rule, priced two ways,
 * with three placements (REFINE). */
#define PLAN_TRIALS_MAX (2 * UMADV_PLAN_VICTIM_RULES * 3)

/* One variant of plan_best (REFINE): planned with its pricing, then
 * simulated with the link as it is, unless the same plan was (a second
 * unplaced one of a pricing). */
typedef struct trial {
    const umadv_trace_t       *trace;
    const umadv_window_t      *w;
    const umadv_plan_params_t *params, *pricing;
    uint32_t                   phases;
    int                        planned;   /* s holds its plan */
    int                        simulate;
    umadv_status_t             status;    /* its plan's, then its simulation's */
    umadv_schedule_t           s;
    double                     iteration_s;
} trial_t;

static void *trial_plan(void *arg)
{
    trial_t *t = arg;

    t->status = plan_variant(t->w, t->pricing, t->phases, &t->s);
    t->planned = t->status == UMADV_OK;
    return NULL;
}

static void *trial_simulate(void *arg)
{
    trial_t *t = arg;
    umadv_sim_params_t sp;
    umadv_sim_result_t r;

    umadv__sim_params_default(t->trace, UMADV_POLICY_PLAN, t->params->budget, &sp);
    sp.iteration = t->params->iteration;
    sp.link      = t->params->link;
    sp.warmup    = 1; /* the replay starts in the plan's steady state */
    sp.quiet     = 1;
    sp.schedule  = &t->s;
    sp.max_touches = t->params->max_touches;
    sp.stage     = t->params->stage; /* the trace's stageable allocations */
    t->status = umadv__sim_run(t->trace, &sp, &r);
    t->iteration_s = r.iteration_s;
    return NULL;
}

/*
 * The trials are independent, each a function of the trace, the window
 * and its parameters that writes only its own: each runs on a thread of
 * its own (on this one where none can be had), and what plan_best keeps
 * is what it kept running them in turn (the same schedules to the byte
 * on every shipped trace, three budgets, with and without host
 * placement). bench/plan_scaling's 1,001-layer ResNet, two trials: 53-55
 * ms against 88-89 in turn on a machine of two cores (2026-11-29).
 */
static void trials_run(trial_t *t, size_t n, void *(*fn)(void *))
{
    pthread_t threads[PLAN_TRIALS_MAX];
    int threaded[PLAN_TRIALS_MAX] = {0};

    for (size_t i = 0; i < n; i++) {
        if (fn == trial_simulate && !t[i].simulate)
            continue;
        threaded[i] = n > 1 && pthread_create(&threads[i], NULL, fn, &t[i]) == 0;
        if (!threaded[i])
            fn(&t[i]);
    }
    for (size_t i = 0; i < n; i++) {
        if (threaded[i])
            pthread_join(threads[i], NULL);
    }
}

/* Which planned trials before @end are simulated: all but a second
 * unplaced one of a pricing (the same plan), each pricing's @nvariants
 * in a row. */
static void trials_choose(trial_t *t, size_t end, size_t nvariants)
{
    int unplaced = 0;

    for (size_t i = 0; i < end; i++) {
        if (i % nvariants == 0)
            unplaced = 0;
        t[i].simulate = !(t[i].s.remote_bytes == 0 && unplaced++);
    }
}

/* The fastest simulated trial of the first @upto, ties to the earlier,
 * into @best (none faster than no time at all: an empty schedule); the
 * first failure among them in order instead, as trials run in turn would
 * have stopped at it. Every other plan of the @n cleaned up. */
static umadv_status_t trials_best(trial_t *t, size_t n, size_t upto, umadv_schedule_t *best)
{
    umadv_status_t status = UMADV_OK;
    double best_s = INFINITY;
    size_t k = n;

    for (size_t i = 0; i < upto && status == UMADV_OK; i++) {
        status = t[i].status;
        if (status == UMADV_OK && t[i].simulate && t[i].iteration_s < best_s) {
            best_s = t[i].iteration_s;
            k = i;
        }
    }
    if (status != UMADV_OK)
        k = n;
    for (size_t i = 0; i < n; i++) {
        if (t[i].planned && i != k)
            umadv__schedule_cleanup(&t[i].s);
    }
    memset(best, 0, sizeof(*best));
    if (k < n)
        *best = t[k].s;
    return status;
}

/*
 * REFINE: the placement's estimate is a model of a model (placement.c,
 * estimate_t), and on the shipped traces neither of its forms is right
 * everywhere: one phase misses the eviction backlog of GPT-2's forward
 * pass, two phases overplace ResNet-50's activations. Nor is either
 * victim rule (residency.c, WHEN THE EVICTION CAN START): near Belady
 * loses 8% to the in-time rule on VGG-16 at save_on_cpu's peak with its
 * gradients freed at the wrap, the in-time rule 2.5% to it on ResNet-50
 * at 75% (H200 traces, 2026-11-28). So with params->refine each variant
 * (each victim rule; with host placement, each with two phases, one
 * phase, no placement) is planned and replayed by the simulator, and the
 * fastest kept; ties go to the earlier one. Without host placement, two
 * plans and simulations (the 1,001-layer ResNet trace: 10 to 47 ms);
 * with it, six (bench/plan_scaling: a 1,517-layer ResNet in 0.18 s).
 * Where staged evictions are priced with the staged figures (CHANNELS),
 * each placed variant is also planned priced as UVM: the estimate does
 * not know the staging pool (core.h, STAGING:
 * what an eviction decided while it is short of room cannot stage
 * migrates), nor that every eviction of a section it places on the host
 * migrates (an advised section is never staged: the synthetic GPT-2 at
 * batch 32 and 60%, test_placement), the simulator does;
 * twelve plans and simulations then.
 */
static umadv_status_t plan_best(const umadv_trace_t *trace, const umadv_window_t *w,
                                const umadv_plan_params_t *params, umadv_schedule_t *best)
{
    static const uint32_t placed[] = {2, 1, 0}, unplaced[] = {0};
    const uint32_t *variants = params->host_placement ? placed : unplaced;
    size_t nvariants = params->host_placement ? UMADV_ARRAY_SIZE(placed) : 1;
    umadv_plan_params_t pricings[2 * UMADV_PLAN_VICTIM_RULES]; /* rule, pricing */
    trial_t t[PLAN_TRIALS_MAX];
    size_t npricings = 0, n = 0, planned;

    if (!params->refine || !link_simulable(&params->link))
        return plan_variant(w, params, variants[0], best);
    for (int rule = 0; rule < UMADV_PLAN_VICTIM_RULES; rule++) {
        pricings[npricings] = *params;
        pricings[npricings++].victims = rule;
        if (params->host_placement && stage_priced(trace, params)) {
            uvm_pricing(&pricings[npricings - 1], &pricings[npricings]);
            npricings++;
        }
    }
    for (size_t p = 0; p < npricings; p++) {
        for (size_t v = 0; v < nvariants; v++)
            t[n++] = (trial_t){.trace = trace, .w = w, .params = params,
                               .pricing = &pricings[p], .phases = variants[v]};
    }
    trials_run(t, n, trial_plan);
    for (planned = 0; planned < n && t[planned].status == UMADV_OK; planned++)
        ;
    trials_choose(t, planned, nvariants);
    trials_run(t, planned, trial_simulate);
    return trials_best(t, n, planned < n ? planned + 1 : n, best);
}

/* Figures the planner's arithmetic stays finite with: at most 2^64 bytes
 * over at most 2^40 calls. Wider than the trace format's plausibility
 * rule (trace.h) on purpose: tests model a free link with 1e15 B/s. The
 * planner does not run on what it cannot compute (a subnormal bandwidth
 * made every time infinite and tripped its internal checks). */
static umadv_status_t check_link(const umadv_link_model_t *link)
{
    size_t count;
    const umadv_link_figure_t *figures = umadv__link_figures(&count);

    for (size_t i = 0; i < count; i++) {
        double v = *(const double *)((const char *)link + figures[i].offset);
        int good = figures[i].is_bw ? v >= 1 && isfinite(v) : v >= 0 && v <= 1e6;

        /* a zero remote bandwidth is "no remote access", as before; an
         * optional figure at 0 is "not measured" */
        if (!good && !umadv__link_figure_unset(&figures[i], v) &&
            !(figures[i].offset == offsetof(umadv_link_model_t, remote_bw) && v == 0)) {
            umadv_error("planner: link figure %s=%g cannot be planned with (bandwidths from 1 "
                        "byte/s, latencies up to 1e6 s)", figures[i].key, v);
            return UMADV_ERR_INVALID_PARAM;
        }
    }
    return UMADV_OK;
}

umadv_status_t umadv__plan_build(const umadv_trace_t *trace, const umadv_plan_params_t *params,
                                 umadv_schedule_t *schedule)
{
    uint64_t t0 = umadv__now_ns();
    umadv_schedule_t s;
    umadv_window_t w;
    uint32_t first, count;
    umadv_status_t status;

    if (trace == NULL || params == NULL || schedule == NULL || !trace->finalized)
        return UMADV_ERR_INVALID_PARAM;
    status = check_link(&params->link);
    if (status != UMADV_OK)
        return status;
    status = umadv__trace_iteration_require(trace, params->iteration, &first, &count);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_check_cost(trace, first, count, params->max_touches);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_init(&w, trace, first, count);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_check_budget(&w, params->budget ? params->budget : UINT64_MAX);
    memset(&s, 0, sizeof(s));
    if (status == UMADV_OK)
        status = plan_best(trace, &w, params, &s);
    umadv__window_cleanup(&w);
    if (status != UMADV_OK) {
        umadv__schedule_cleanup(&s);
        return status;
    }
    s.plan_seconds = (double)(umadv__now_ns() - t0) * 1e-9;
    *schedule = s;
    return UMADV_OK;
}

umadv_status_t umadv__plan_residency_linear(const umadv_trace_t *trace, uint32_t first,
                                            uint32_t count, uint64_t budget, int read_mostly,
                                            umadv_residency_stats_t *stats)
{
    umadv_window_t w;
    umadv_residency_t res;
    umadv_status_t status;

    if (trace == NULL || stats == NULL)
        return UMADV_ERR_INVALID_PARAM;
    status = umadv__window_init(&w, trace, first, count);
    if (status != UMADV_OK)
        return status;
    status = umadv__window_check_budget(&w, budget ? budget : UINT64_MAX);
    if (status == UMADV_OK)
        status = umadv__residency_run(&w, umadv__plan_effective_budget(&w, budget), read_mostly,
                                      0, 1, umadv__plan_small_bytes(&trace->link), NULL, NULL,
                                      &res);
    umadv__window_cleanup(&w);
    if (status != UMADV_OK)
        return status;
    *stats = res.stats;
    umadv__residency_cleanup(&res);
    return UMADV_OK;
}
