/*
 * Staged evictions (schedule/core.h, STAGING): the executor's pinned host
 * staging pool, the lanes' staged calls, and the synchronous restores
 * that stand behind every rule of the core.
 *
 * THE POOL. Page-locked host chunks, made at the eviction lane's first
 * staged eviction and handed to the next executor through
 * params.stage_cache (a policy change or a re-profile then pins nothing).
 * An executor that needs more slots than the chunks it takes hold pins
 * one chunk more, of what they lack only; at most UMADV_STAGE_CHUNKS
 * chunks, past that the pool is pinned anew, whole. Pinning runs at 4-5
 * GB/s (cuda_ops.h, host_alloc): a pool that grows by a chunk of more
 * than params.pin_aside_bytes pins it on a thread of its own, and it
 * joins the pool when done; until then an eviction that finds no free
 * slot migrates, as one does whenever the pool is full (pool_make). The
 * lane and the pinner run on the cores nearest the GPU (params.numa), so
 * the pages land on the GPU's NUMA node (first touch; no explicit
 * binding). The pool has the core's stage_slots slots of one section each
 * (schedule/core.h, STAGING: the replay core counts them, so that the
 * simulator knows when an eviction migrates for want of room), numbered
 * across the chunks; a run of consecutive slots never crosses from one
 * chunk to the next (one copy per run). A section takes slots when its
 * staged eviction is issued and gives them back once its data is in the
 * range again (restored, the copy out failed) or dead (its block freed).
 * Pinning that fails with no slot pinned makes every eviction migrate
 * (logged once). A cache may also get a chunk pinned ahead of the next
 * executor, on a thread of its own (umadv__exec_stage_pin_ahead: a
 * profile pins the pool its plan will want while its second pass runs,
 * api/replay.c, PINNED AHEAD); the executor waits for it when it is made
 * and takes it with the rest.
 *
 * THE CALLS. Each lane copies through a bounce buffer of device memory
 * of its own (UMADV_BOUNCE_BYTES, cudaMalloc at its first staged call,
 * outside the budget): a copy between managed memory and pinned host
 * memory goes one way at a time on an H100 (52.8 GB/s both ways together,
 * 26 each, against 91.5 through device memory: bench/RESULTS.md), so
 * that staging out while restoring halved both. Every copy below is then
 * a device-to-device copy and a copy over the link per chunk, in stream
 * order. Out: cudaMemcpyAsync of each piece into its slots, a
 * synchronisation, then one cudaMemDiscardBatchAsync of the pieces (or
 * several, under UMADV_LANE_PIECE: below) and another synchronisation:
 * the discard is issued only once the copies are known to be
 * complete (with one synchronisation, a copy that failed asynchronously
 * would be found after its range was discarded: the data lost); under
 * UMADV_STAGE_POISON a memset of each range comes before it (every
 * discard waits for its stream first: DISCARDS ON AN IDLE STREAM). In:
 * cudaMemDiscardAndPrefetchBatchAsync of the pieces to the GPU (populates
 * them there without moving stale host pages), then the copies back, one
 * synchronisation; in runs, populated on a stream of the lane's own while
 * the run before is copied (RESTORES IN RUNS, below). A copy out that
 * fails leaves the data in the range (the sections stay resident); once
 * copied out the staging is the data,
 * so a failed discard or restore leaves the sections staged, and the
 * synchronous restore below copies them back.
 *
 * SYNCHRONOUS RESTORES. On the calling thread, with the lock dropped for
 * the calls: the range populated on the GPU, then copied back, on the
 * executor's restore stream (copy_back: like every restore, never a copy
 * into a range not populated), or, when that fails or the executor is
 * broken, a CPU copy (managed memory is host-accessible). Used when a
 * step finds its data still staged after its wait, when the executor is
 * broken, when a live block loses its role, when an allocation stops
 * being stageable, when the application copies or sets memory
 * (umadv__exec_stage_restore_range), and before the executor is
 * destroyed. Restoring everything (a replay that stops,
 * staging paused) goes in one batch first (restore_all_locked).
 *
 * THE APPLICATION'S COPIES (umadv__exec_stage_restore_range, called at a
 * memcpy or memset call's entry, before it enqueues anything): what the
 * call touches is restored now, and marked with the count of events
 * recorded so far (stage.copied). The copy runs after the last step end
 * recorded, and an eviction that waits only for that step end (one that
 * a step decides when it begins: prefetch-all, demand) could discard the
 * range before it runs: the eviction lane migrates such sections instead
 * of staging them (umadv__exec_stage_slots). An eviction behind a later
 * step end is ordered after the copy on the step's stream.
 *
 * THE APPLICATION'S WRITES (umadv__exec_app_write, at the same entry,
 * after the restores): the part of the destination in bound blocks
 * without advice that has a section not held resident is prefetched to
 * the GPU on the restore stream, and waited for, before the call
 * enqueues its copy. The copy engine would otherwise fault on each page
 * of it still on the host or never populated, one fault group per run
 * of pages, and the plan's fetch for the next step, issued after the
 * copy or on another stream, is too late for it: VGG-16 at batch 64
 * with a batch copied into a new block each iteration, under its budget,
 * faulted 150-300 times an iteration where earlier evictions and
 * discards had left that block's pages, at the same offsets every run,
 * and profiled again and again (RESULTS.md, twenty-second session). A
 * prefetch, not a discard: work enqueued before the copy may still read
 * the range (a freed block's last reader, the caching allocator handing
 * its memory on in stream order). Advice places a block itself.
 *
 * THE EXECUTOR'S OWN COPIES are cudaMemcpyAsync calls too (and the
 * poison's cudaMemsetAsync), which a watch of the application's copies
 * sees: they are marked on their thread
 * (own_copy) and umadv__exec_stage_restore_range and
 * umadv__exec_app_write ignore them (a lane would otherwise wait for its
 * own call in flight).
 */
#include "exec/exec_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "numa/numa.h"

/* Copies the executor makes on this thread now (own_copy). */
static __thread int own_copies;

/* ---- the pool ------------------------------------------------------------ */

/* Free slots are a bitmap searched from a cursor, so that a piece's
 * sections get consecutive slots wherever a run is free: one copy per
 * piece instead of one per section (a copy of 2 MiB costs the copy
 * engine's setup each time: the staged channel ran at 36 GB/s of the
 * probe's 45 on ResNet-50, its slots scattered by earlier restores). */
static int slot_is_free(const exec_stage_t *st, uint32_t i)
{
    return (int)((st->freemap[i / 64] >> (i % 64)) & 1);
}

static void slot_mark(exec_stage_t *st, uint32_t i, int free)
{
    if (free)
        st->freemap[i / 64] |= UINT64_C(1) << (i % 64);
    else
        st->freemap[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

/* The chunk slot @i lies in. */
static uint32_t slot_chunk(const exec_stage_t *st, uint32_t i)
{
    uint32_t c = 0;

    while (c + 1 < st->nchunks && st->chunk_first[c + 1] <= i)
        c++;
    return c;
}

/* Whether slot @i begins a chunk: a run of slots never crosses one. */
static int chunk_start(const exec_stage_t *st, uint32_t i)
{
    return st->chunk_first[slot_chunk(st, i)] == i;
}

/* Whether slot @b follows slot @a in memory: one copy may take both. */
static int slots_follow(const exec_stage_t *st, uint32_t a, uint32_t b)
{
    return b == a + 1 && !chunk_start(st, b);
}

/* The first of @need consecutive free slots from the cursor on (wrapping
 * once, a run never wraps), or EXEC_NO_SLOT. */
static uint32_t slots_find(const exec_stage_t *st, uint32_t need)
{
    uint32_t run = 0, c = slot_chunk(st, st->cursor), next = st->chunk_first[c + 1];

    for (uint32_t i = 0; i < st->nslots; i++) {
        uint32_t j = (st->cursor + i) % st->nslots;

        if (j == 0 || j == next) { /* a chunk begins: a run starts again */
            c = j == 0 ? 0 : c + 1;
            next = st->chunk_first[c + 1];
            run = 0;
        }
        run = slot_is_free(st, j) ? run + 1 : 0;
        if (run == need)
            return j + 1 - need;
    }
    return EXEC_NO_SLOT;
}

/* Take slot @i for section @s. */
static void slot_take(exec_stage_t *st, uint32_t s, uint32_t i)
{
    slot_mark(st, i, 0);
    st->nfree--;
    st->slot[s] = i;
    st->cursor = (i + 1) % st->nslots;
}

umadv_status_t umadv__exec_stage_init(umadv_exec_t *e)
{
    size_t n = e->trace->nsections + 1;

    e->stage.slot_size = e->trace->section_size;
    e->stage.slot = malloc(n * sizeof(*e->stage.slot));
    e->stage.copied = calloc(n, sizeof(*e->stage.copied));
    if (e->stage.slot == NULL || e->stage.copied == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (size_t s = 0; s < n; s++)
        e->stage.slot[s] = EXEC_NO_SLOT;
    return UMADV_OK;
}

void umadv__exec_stage_cache_free(const umadv_cuda_ops_t *ops, umadv_stage_cache_t *cache)
{
    umadv__exec_stage_cache_settle(cache);
    for (uint32_t c = 0; c < cache->n; c++)
        ops->host_free(cache->base[c], cache->bytes[c]);
    memset(cache, 0, sizeof(*cache));
}

void umadv__exec_stage_cleanup(umadv_exec_t *e)
{
    umadv_stage_cache_t *cache = e->p.stage_cache;

    if (e->stage.pinner_started)
        pthread_join(e->stage.pinner, NULL);
    umadv__exec_stage_cache_free(e->p.ops, &e->stage.old);
    for (uint32_t c = 0; c < e->stage.nchunks; c++) {
        if (cache != NULL && cache->n < UMADV_STAGE_CHUNKS) { /* kept for the next replay */
            cache->base[cache->n] = e->stage.chunk[c];
            cache->bytes[cache->n++] = e->stage.chunk_bytes[c];
        } else {
            e->p.ops->host_free(e->stage.chunk[c], e->stage.chunk_bytes[c]);
        }
    }
    if (e->stage.restore_stream != NULL)
        (void)e->p.ops->stream_destroy(e->stage.restore_stream); /* a failure is logged */
    free(e->stage.slot);
    free(e->stage.copied);
    free(e->stage.freemap);
    memset(&e->stage, 0, sizeof(e->stage));
}

/* Chunk @base of @bytes joins the pool, free: the slots it holds, up to
 * the pool's want. */
static void pool_add(exec_stage_t *st, void *base, uint64_t bytes)
{
    uint64_t fits = bytes / st->slot_size;
    uint32_t n = (uint32_t)UMADV_MIN(fits, (uint64_t)(st->want - st->nslots));

    st->chunk[st->nchunks] = base;
    st->chunk_bytes[st->nchunks] = bytes;
    st->chunk_first[st->nchunks++] = st->nslots;
    for (uint32_t i = st->nslots; i < st->nslots + n; i++)
        slot_mark(st, i, 1);
    st->nslots += n;
    st->nfree += n;
    st->chunk_first[st->nchunks] = st->nslots;
}

/* Pinned memory for a pool of @slot-byte slots, at most @bytes and at
 * least a slot, registered for @device's context (selected first: a
 * pinner's thread of its own would have the default device current and
 * make its context): what the host cannot spare is refused
 * (UMADV_ERR_NO_MEMORY, cuda_ops.h), and three quarters as many slots
 * asked for instead (a refusal costs a read of /proc/meminfo; the pool
 * gets at least three quarters of what the host can spare), at @pace
 * (cuda_ops.h). *bytes_p: what was pinned. */
static umadv_status_t pin_spare(const umadv_cuda_ops_t *ops, int device, uint64_t slot,
                                umadv_pin_pace_t pace, uint64_t *bytes_p, void **base_p)
{
    uint64_t slots = *bytes_p / slot;
    umadv_status_t status = ops->thread_begin(device);

    if (status != UMADV_OK)
        return status;
    while ((status = ops->host_alloc(slots * slot, pace, base_p)) == UMADV_ERR_NO_MEMORY &&
           slots * 3 / 4 >= 1)
        slots = slots * 3 / 4;
    *bytes_p = slots * slot;
    return status;
}

/* Called with the lock held, dropped to pin: the old chunks go, a chunk
 * of st->pin_bytes joins the pool, or less where the host cannot spare
 * it. When it cannot, the pool stays as it is; with no slot at all,
 * every eviction migrates (logged once). */
static void pool_pin_chunk(umadv_exec_t *e, umadv_pin_pace_t pace)
{
    exec_stage_t *st = &e->stage;
    uint64_t bytes = st->pin_bytes, t0 = umadv__now_ns();
    umadv_stage_cache_t old = st->old;
    umadv_status_t status;
    void *base = NULL;

    memset(&st->old, 0, sizeof(st->old));
    pthread_mutex_unlock(&e->lock);
    umadv__exec_stage_cache_free(e->p.ops, &old);
    status = pin_spare(e->p.ops, e->p.device, st->slot_size, pace, &bytes, &base);
    pthread_mutex_lock(&e->lock);
    if (status == UMADV_OK) {
        pool_add(st, base, bytes);
        umadv_debug("executor: staging pool of %u slots, %.1f MiB, in %u chunks: %.1f MiB "
                    "pinned in %.1f ms", st->nslots,
                    (double)st->nslots * (double)st->slot_size / 1048576.0, st->nchunks,
                    (double)bytes / 1048576.0, (double)(umadv__now_ns() - t0) / 1e6);
        if (st->nslots < st->want)
            umadv_warn("executor: the staging pool holds %u slots of %u (%.1f GiB): the host "
                       "cannot spare more pinned memory; evictions past them migrate",
                       st->nslots, st->want,
                       (double)st->nslots * (double)st->slot_size / 1073741824.0);
    } else if (st->nslots == 0) {
        umadv_warn("executor: no pinned staging pool of %llu bytes (%s%s): evictions migrate",
                   (unsigned long long)st->pin_bytes, umadv_status_string(status),
                   status == UMADV_ERR_NO_MEMORY ? ": the host cannot spare it" : "");
        st->failed = 1;
    } else {
        umadv_warn("executor: the staging pool stays at %u slots of %u (%s): evictions past "
                   "them migrate", st->nslots, st->want, umadv_status_string(status));
    }
}

static void *pool_pinner_main(void *arg)
{
    umadv_exec_t *e = arg;

    umadv__numa_bind_thread(e->p.numa); /* the pages land on the GPU's node */
    pthread_mutex_lock(&e->lock);
    pool_pin_chunk(e, UMADV_PIN_BESIDE); /* the replay goes on */
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* The slots of @slot_size bytes @cache's chunks hold. */
static uint64_t cache_slots(const umadv_stage_cache_t *cache, uint64_t slot_size)
{
    uint64_t slots = 0;

    for (uint32_t c = 0; c < cache->n; c++)
        slots += cache->bytes[c] / slot_size;
    return slots;
}

/* The pool the core counts (core.h, STAGING): core.stage_slots slots,
 * from the cache's chunks (the previous replays'), and one chunk more
 * pinned for what they lack; with no room for another chunk, the cache
 * is freed and the whole pool pinned anew. Populating and registering
 * gigabytes runs at 4-5 GB/s (cuda_ops.h, host_alloc): when the pool
 * already has slots, a chunk past params.pin_aside_bytes is pinned on a
 * thread of its own, and until it joins, the evictions that find no free
 * slot migrate (a ResNet-50 whose budget fell). A first pool is pinned on
 * the lane, its evictions waiting: with none staged, they would all
 * migrate, and UVM's evictions slow the kernels beside them (VGG-16's
 * timing pass measured 842-866 ms of compute so, for 336: the plan is
 * made from those times; H100). */
static int pool_make(umadv_exec_t *e)
{
    umadv_stage_cache_t *cache = e->p.stage_cache, none = {0};
    exec_stage_t *st = &e->stage;
    uint64_t cached;

    st->want = e->core.stage_slots;
    st->freemap = calloc(st->want / 64 + 1, sizeof(*st->freemap));
    if (st->freemap == NULL)
        return 0;
    if (cache == NULL)
        cache = &none;
    cached = cache_slots(cache, st->slot_size);
    if (cached < st->want && cache->n == UMADV_STAGE_CHUNKS)
        st->old = *cache;
    else
        for (uint32_t c = 0; c < cache->n; c++)
            pool_add(st, cache->base[c], cache->bytes[c]);
    memset(cache, 0, sizeof(*cache));
    umadv_debug("executor: staging pool of %u slots, %u kept from the last replay or pinned "
                "ahead of it", st->want, st->nslots);
    if (st->nslots == st->want)
        return 1;
    st->pin_bytes = (uint64_t)(st->want - st->nslots) * st->slot_size;
    if (st->nslots > 0 &&
        st->pin_bytes > (e->p.pin_aside_bytes ? e->p.pin_aside_bytes : EXEC_PIN_ASIDE_BYTES))
        st->pinner_started = pthread_create(&st->pinner, NULL, pool_pinner_main, e) == 0;
    if (!st->pinner_started)
        pool_pin_chunk(e, UMADV_PIN_WAITED); /* the lane's evictions wait */
    return !st->failed;
}

/* Called by the eviction lane with the lock held (dropped to pin). 0: no
 * pool, ever (logged once). */
static int pool_ready(umadv_exec_t *e)
{
    if (!e->stage.started && !e->stage.failed) {
        e->stage.started = 1;
        if (e->core.stage_slots == 0 || !pool_make(e))
            e->stage.failed = 1;
    }
    return !e->stage.failed;
}

/* ---- pinned ahead -------------------------------------------------------- */

/* A chunk pinned before the executor that takes it exists
 * (umadv__exec_stage_pin_ahead): its thread writes only here, and the
 * settling joins it. */
struct umadv_stage_ahead {
    pthread_t                      thread;
    const umadv_cuda_ops_t        *ops;
    int                            device;
    const struct umadv_numa_place *numa;
    uint64_t                       slot_size;
    uint64_t                       bytes; /* asked for, then pinned */
    void                          *base;
    umadv_status_t                 status;
    uint64_t                       took_ns;
};

static void *ahead_main(void *arg)
{
    struct umadv_stage_ahead *a = arg;
    uint64_t t0 = umadv__now_ns();

    umadv__numa_bind_thread(a->numa); /* the pages land on the GPU's node */
    /* the profile's second pass goes on */
    a->status = pin_spare(a->ops, a->device, a->slot_size, UMADV_PIN_BESIDE, &a->bytes,
                          &a->base);
    a->took_ns = umadv__now_ns() - t0;
    return NULL;
}

umadv_status_t umadv__exec_stage_pin_ahead(const umadv_cuda_ops_t *ops, int device,
                                           const struct umadv_numa_place *numa,
                                           umadv_stage_cache_t *cache, uint64_t slot_size,
                                           uint64_t bytes)
{
    uint64_t want = bytes / slot_size, cached = cache_slots(cache, slot_size);
    struct umadv_stage_ahead *a;

    if (cache->ahead != NULL || cache->n == UMADV_STAGE_CHUNKS || cached >= want)
        return UMADV_OK;
    a = calloc(1, sizeof(*a));
    if (a == NULL)
        return UMADV_ERR_NO_MEMORY;
    *a = (struct umadv_stage_ahead){.ops = ops, .device = device, .numa = numa,
                                    .slot_size = slot_size,
                                    .bytes = (want - cached) * slot_size};
    if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
        free(a);
        return UMADV_ERR_NO_MEMORY;
    }
    cache->ahead = a;
    return UMADV_OK;
}

void umadv__exec_stage_cache_settle(umadv_stage_cache_t *cache)
{
    struct umadv_stage_ahead *a = cache->ahead;
    uint64_t t0 = umadv__now_ns();

    if (a == NULL)
        return;
    pthread_join(a->thread, NULL);
    cache->ahead = NULL;
    if (a->status == UMADV_OK) {
        cache->base[cache->n] = a->base;
        cache->bytes[cache->n++] = a->bytes;
        umadv_debug("staging pool: %.1f MiB pinned ahead of the replay in %.1f ms, %.1f ms of "
                    "it waited for", (double)a->bytes / 1048576.0, (double)a->took_ns / 1e6,
                    (double)(umadv__now_ns() - t0) / 1e6);
    } else {
        umadv_debug("staging pool: nothing pinned ahead of the replay (%s): its executor pins "
                    "the pool", umadv_status_string(a->status));
    }
    free(a);
}

static void *slot_addr(const umadv_exec_t *e, uint32_t s)
{
    const exec_stage_t *st = &e->stage;
    uint32_t i = st->slot[s], c = slot_chunk(st, i);

    return (char *)st->chunk[c] + (uint64_t)(i - st->chunk_first[c]) * st->slot_size;
}

/* Section @s gives its slot back: its data is in the range again, or
 * dead. */
static void slot_put(umadv_exec_t *e, uint32_t s)
{
    if (e->stage.slot[s] == EXEC_NO_SLOT)
        return;
    slot_mark(&e->stage, e->stage.slot[s], 1);
    e->stage.nfree++;
    e->stage.slot[s] = EXEC_NO_SLOT;
}

/* Piece @p's sections get slots, all or none: consecutive ones when a
 * run is free. */
static int piece_slots(umadv_exec_t *e, const exec_piece_t *p)
{
    uint32_t s0 = exec_section_id(e, p->alloc, p->first), need = 0, run;

    for (uint32_t k = 0; k < p->count; k++)
        need += e->stage.slot[s0 + k] == EXEC_NO_SLOT;
    if (need > e->stage.nfree)
        return 0;
    if (need == p->count && (run = slots_find(&e->stage, need)) != EXEC_NO_SLOT) {
        for (uint32_t k = 0; k < p->count; k++)
            slot_take(&e->stage, s0 + k, run + k);
        return 1;
    }
    for (uint32_t k = 0; k < p->count; k++) {
        if (e->stage.slot[s0 + k] == EXEC_NO_SLOT)
            slot_take(&e->stage, s0 + k, slots_find(&e->stage, 1));
    }
    return 1;
}

static void piece_slots_put(umadv_exec_t *e, const exec_piece_t *p)
{
    for (uint32_t k = 0; k < p->count; k++)
        slot_put(e, exec_section_id(e, p->alloc, p->first + k));
}

/* Whether an application's copy or memset that touched piece @p came
 * after the step end the eviction waited for (@after): the copy may not
 * have run yet, and a discard would take its data from under it. */
static int piece_copied_after(const umadv_exec_t *e, const exec_piece_t *p, uint64_t after)
{
    for (uint32_t k = 0; k < p->count; k++) {
        if (e->stage.copied[exec_section_id(e, p->alloc, p->first + k)] > after)
            return 1;
    }
    return 0;
}

/* The eviction lane's staged pieces get their slots; a piece that cannot
 * (no pool: pinning failed), or that a copy may still read, is migrated
 * instead (a migration keeps the data wherever it goes). */
void umadv__exec_stage_slots(umadv_exec_t *e, exec_lane_t *lane)
{
    for (size_t i = 0; i < lane->npieces; i++) {
        exec_piece_t *p = &lane->pieces[i];
        int copied;

        if (p->dead) {
            /* a copy may still read it, or no discards: it keeps its data, migrated */
            copied = piece_copied_after(e, p, lane->busy_after);
            if (copied || e->stage.failed) {
                p->dead = 0;
                *(copied ? &e->stats.copy_held_bytes : &e->stats.stage_fallback_bytes) +=
                    p->bytes;
            }
            continue;
        }
        if (!p->staged)
            continue;
        copied = piece_copied_after(e, p, lane->busy_after);
        if (!copied && pool_ready(e) && piece_slots(e, p))
            continue;
        p->staged = 0;
        *(copied ? &e->stats.copy_held_bytes : &e->stats.stage_fallback_bytes) += p->bytes;
        for (uint32_t k = 0; k < p->count; k++)
            umadv__core_unstage(&e->core, exec_section_id(e, p->alloc, p->first + k));
    }
}

/* @alloc's block is gone (freed: its staged data is dead). */
void umadv__exec_stage_release(umadv_exec_t *e, uint32_t alloc)
{
    const umadv_trace_alloc_t *a = &e->trace->allocs[alloc];

    for (uint32_t i = 0; i < a->nsections; i++)
        slot_put(e, a->first_section + i);
}

/* ---- copies between a piece and its slots ----------------------------- */

/* One of the executor's copies, marked as such on its thread while the
 * call runs (THE EXECUTOR'S OWN COPIES, above). */
static umadv_status_t own_copy(umadv_exec_t *e, void *dst, const void *src, size_t len,
                               umadv_stream_t stream)
{
    umadv_status_t status;

    own_copies++;
    status = e->p.ops->memcpy_async(dst, src, len, stream);
    own_copies--;
    return status;
}

/* Sections of @p from its @k-th whose slots follow each other (sections
 * but an allocation's last fill their slot): how many, *len_p bytes. */
static uint32_t slot_run(const umadv_exec_t *e, const exec_piece_t *p, uint32_t k,
                         uint64_t *len_p)
{
    uint32_t s0 = exec_section_id(e, p->alloc, p->first + k), n = 1;
    uint64_t len = exec_section_size(e, s0);

    while (k + n < p->count &&
           slots_follow(&e->stage, e->stage.slot[s0 + n - 1], e->stage.slot[s0 + n]))
        len += exec_section_size(e, s0 + n++);
    *len_p = len;
    return n;
}

/* @len bytes from @src to @dst on @lane's stream, through its bounce
 * buffer where it has one (THE CALLS), marked as the executor's own. */
static umadv_status_t lane_copy(umadv_exec_t *e, exec_lane_t *lane, char *dst, const char *src,
                                uint64_t len)
{
    umadv_status_t status;

    own_copies++;
    status = umadv__cuda_copy_bounced(e->p.ops, dst, src, len, lane->bounce,
                                      UMADV_BOUNCE_BYTES, lane->stream);
    own_copies--;
    return status;
}

/* The lane's bounce buffer, made at its first staged call with the lock
 * dropped; without one (no device_alloc, or it failed: logged once) the
 * copies go direct. */
static void lane_bounce(umadv_exec_t *e, exec_lane_t *lane)
{
    void *bounce = NULL;

    if (lane->bounce != NULL || lane->bounce_failed || e->p.ops->device_alloc == NULL)
        return;
    pthread_mutex_unlock(&e->lock);
    if (e->p.ops->device_alloc(UMADV_BOUNCE_BYTES, &bounce) != UMADV_OK)
        bounce = NULL;
    pthread_mutex_lock(&e->lock);
    lane->bounce = bounce;
    lane->bounce_failed = bounce == NULL;
    if (bounce == NULL)
        umadv_warn("executor: no %d MiB device buffer for the %s lane's staged copies: they "
                   "go direct, one way at a time", (int)(UMADV_BOUNCE_BYTES / UMADV_MIB),
                   lane == &e->fetch ? "fetch" : "eviction");
}

/*
 * RESTORES IN RUNS. Populating a discarded range holds its stream 5.9 ms
 * a GiB (the driver's page work; bench/populate_cost, H200), and a
 * restore populated all its pieces before it copied any: ResNet-50 at
 * save_on_cpu's peak restores 4.1 GiB an iteration, about a quarter of
 * its fetch lane's time populating. So a restore goes in runs of at most
 * STAGE_RUN_SECTIONS sections (16 MiB of 2 MiB ones: its restores are of
 * 64 MiB or so, and a population of 16 MiB takes less than the copy of
 * the run before): each run is populated on the lane's pipe stream, an
 * event recorded after it, and the lane's stream waits for that event
 * before the run's copy, so the next run's population overlaps this
 * run's copy. A copy never starts before its range is populated: its
 * stream waits for it (a copy into pages the driver has not made faults
 * them in at 0.7 GB/s: bench/RESULTS.md). A population that fails is
 * found at the pipe stream's synchronisation, and the restore fails as
 * a whole (the sections stay staged: the synchronous restore copies them
 * again). The pipe stream and its event are made at the lane's first
 * restore; without them (a backend or driver that refuses: logged once)
 * a restore populates everything, then copies.
 */
#define STAGE_RUN_SECTIONS 8

static void lane_pipe(umadv_exec_t *e, exec_lane_t *lane)
{
    umadv_stream_t stream = NULL;
    umadv_event_t event = NULL;
    int made;

    if (lane->pipe_stream != NULL || lane->pipe_failed)
        return;
    pthread_mutex_unlock(&e->lock);
    made = e->p.ops->stream_create(&stream) == UMADV_OK;
    if (made && e->p.ops->event_create(&event) != UMADV_OK) {
        (void)e->p.ops->stream_destroy(stream);
        made = 0;
    }
    pthread_mutex_lock(&e->lock);
    lane->pipe_stream = made ? stream : NULL;
    lane->pipe_event = made ? event : NULL;
    lane->pipe_failed = !made;
    if (!made)
        umadv_warn("executor: no second stream for the %s lane: its restores populate, then "
                   "copy", lane == &e->fetch ? "fetch" : "eviction");
}

void umadv__exec_stage_lane_end(umadv_exec_t *e, exec_lane_t *lane)
{
    if (lane->bounce != NULL)
        (void)e->p.ops->device_free(lane->bounce); /* a failure is logged by cuda_ops */
    lane->bounce = NULL;
    if (lane->pipe_stream != NULL) {
        (void)e->p.ops->event_destroy(lane->pipe_event);
        (void)e->p.ops->stream_destroy(lane->pipe_stream);
    }
    lane->pipe_stream = NULL;
    lane->pipe_event = NULL;
}

/* A call on @stream failed: the stream's earlier calls may still run (a
 * synchronisation that fails has not waited). They end before the ranges
 * are touched again, by the CPU's copy or on another stream: a discard
 * still queued would wipe what a restore copied in, and a copy a slot
 * since reused. Where this fails too, the device is lost with the data. */
static void stream_drain(umadv_exec_t *e, umadv_stream_t stream, umadv_status_t status)
{
    if (status != UMADV_OK)
        (void)e->p.ops->stream_synchronize(stream);
}

/* The calls just issued on @stream (@status: how issuing them went),
 * waited for; drained if anything failed. Returns the first failure. */
static umadv_status_t stream_finish(umadv_exec_t *e, umadv_stream_t stream,
                                    umadv_status_t status)
{
    if (status == UMADV_OK)
        status = e->p.ops->stream_synchronize(stream);
    stream_drain(e, stream, status);
    return status;
}

/* What is done to a run: [@range, +@len) of the managed range and the
 * slots at @slot that hold its data; @piece: the lane's call piece
 * (umadv__exec_call_piece, decided under the lock) for its driver calls. */
typedef umadv_status_t (*run_fn_t)(umadv_exec_t *e, exec_lane_t *lane, char *range, char *slot,
                                   uint64_t len, uint64_t piece);

/* @fn over piece @p's runs of consecutive slots (slot_run), each cut at
 * @cut bytes; the first failure stops it. */
static umadv_status_t piece_runs(umadv_exec_t *e, exec_lane_t *lane, const exec_piece_t *p,
                                 uint64_t cut, run_fn_t fn, uint64_t piece)
{
    uint64_t base_offset = e->trace->sections[exec_section_id(e, p->alloc, p->first)].offset;
    umadv_status_t status = UMADV_OK;

    for (uint32_t k = 0, n; k < p->count && status == UMADV_OK; k += n) {
        uint32_t s0 = exec_section_id(e, p->alloc, p->first + k);
        char *range = (char *)(p->ptr + (e->trace->sections[s0].offset - base_offset));
        char *slot;
        uint64_t len;

        if (e->stage.slot[s0] == EXEC_NO_SLOT)
            return UMADV_ERR_STATE; /* never: a staged section has its slot */
        slot = slot_addr(e, s0);
        n = slot_run(e, p, k, &len);
        for (uint64_t o = 0; o < len && status == UMADV_OK; o += cut)
            status = fn(e, lane, range + o, slot + o, UMADV_MIN(cut, len - o), piece);
    }
    return status;
}

static umadv_status_t run_copy_out(umadv_exec_t *e, exec_lane_t *lane, char *range, char *slot,
                                   uint64_t len, uint64_t piece)
{
    (void)piece; /* copies go whole */
    return lane_copy(e, lane, slot, range, len);
}

static umadv_status_t run_copy_back(umadv_exec_t *e, exec_lane_t *lane, char *range, char *slot,
                                    uint64_t len, uint64_t piece)
{
    (void)piece;
    return lane_copy(e, lane, range, slot, len);
}

/* Copy piece @p out (@out) or back, run by run of slots. */
static umadv_status_t piece_copy(umadv_exec_t *e, exec_lane_t *lane, const exec_piece_t *p,
                                 int out)
{
    return piece_runs(e, lane, p, UINT64_MAX, out ? run_copy_out : run_copy_back, 0);
}

static umadv_status_t copies(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                             int out)
{
    umadv_status_t status = UMADV_OK;

    for (size_t i = from; i < to && status == UMADV_OK; i++)
        status = piece_copy(e, lane, &lane->pieces[i], out);
    if (status == UMADV_OK)
        status = e->p.ops->stream_synchronize(lane->stream);
    return status;
}

static int ranges(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to)
{
    size_t n = to - from;

    if (umadv__array_reserve((void **)&lane->batch_ptrs, &lane->batch_cap, n,
                             sizeof(*lane->batch_ptrs)) != UMADV_OK ||
        umadv__array_reserve((void **)&lane->batch_sizes, &lane->batch_sizes_cap, n,
                             sizeof(*lane->batch_sizes)) != UMADV_OK)
        return 0;
    for (size_t i = from; i < to; i++) {
        lane->batch_ptrs[i - from] = (void *)lane->pieces[i].ptr;
        lane->batch_sizes[i - from] = lane->pieces[i].len;
    }
    return 1;
}

/* ---- the lanes' staged calls ------------------------------------------- */

/*
 * The bytes of each of a lane's discard and population calls, decided
 * with the lock held as the lane issues them (0: one call).
 *
 * A lane's discard or population holds up the application's CUDA calls
 * for as long as it runs: beside another thread's discard and population
 * of 64 MiB, one call each way, a kernel launch took 124 us where it
 * takes 4.2 (bench/launch_cost, H200); in calls of 8 MiB, 42. Pieces cost
 * the lane a call each: those 64 MiB then took 669 us of its time against
 * 357. Always in pieces of 8 MiB, a launch-bound GPT-2 at save_on_cpu's
 * peak ran 58.4 ms an iteration for 76.1, and a lane-bound ResNet-50 at
 * the same budget 244.3 for 212.9: there the lanes, not the launches,
 * set the pace. So with params.call_piece_bytes (UMADV_LANE_PIECE) a
 * lane's ranges go in pieces of that size only while the lane is ahead:
 * the application's thread runs (it does not wait on the executor,
 * e->waiting) and the call serves a step later than the next one
 * (EXEC_PIECE_AHEAD_STEPS). A call the next step needs, or one it
 * already waits for, goes whole: there the lane's time is the
 * application's. Measured on one H200, that rule made no difference
 * beyond the run-to-run noise (GPT-2: 51.3 and 72.8 ms whole, 56.4 and
 * 64.1 in pieces), so it stays off by default.
 */
uint64_t umadv__exec_call_piece(const umadv_exec_t *e, const exec_lane_t *lane)
{
    int behind = e->waiting > 0 ||
                 (lane->busy_need != EXEC_KEY_NONE &&
                  lane->busy_need <= e->key + EXEC_PIECE_AHEAD_STEPS);

    return behind ? 0 : e->p.call_piece_bytes;
}

umadv_status_t umadv__exec_in_calls(uint64_t piece, void **ptrs, size_t *sizes, size_t n,
                                    exec_ranges_call_t call, void *arg, umadv_stream_t stream)
{
    void *piece_ptrs[EXEC_CALL_RANGES];
    size_t piece_sizes[EXEC_CALL_RANGES], k = 0;
    uint64_t bytes = 0;
    umadv_status_t status = UMADV_OK;

    if (piece == 0)
        return call(arg, ptrs, sizes, n, stream);
    for (size_t i = 0; i < n && status == UMADV_OK; i++) {
        for (uint64_t done = 0; done < sizes[i] && status == UMADV_OK;) {
            uint64_t len = UMADV_MIN(sizes[i] - done, piece - bytes);

            piece_ptrs[k] = (char *)ptrs[i] + done;
            piece_sizes[k++] = (size_t)len;
            bytes += len;
            done += len;
            if (bytes == piece || k == EXEC_CALL_RANGES) {
                status = call(arg, piece_ptrs, piece_sizes, k, stream);
                k = 0;
                bytes = 0;
            }
        }
    }
    if (status == UMADV_OK && k > 0)
        status = call(arg, piece_ptrs, piece_sizes, k, stream);
    return status;
}

/*
 * DISCARDS ON AN IDLE STREAM. A cudaMemDiscardBatchAsync enqueued behind
 * a kernel or a memset still running on its stream returns at once (11
 * us against 136 on an idle stream: the driver applies it later), and
 * then, now and then, a range restored after the stream's
 * synchronisation (populated by cudaMemDiscardAndPrefetchBatchAsync,
 * copied into, synchronised) is right on the GPU but reads the host's
 * older copy of its pages on the CPU, and a migration to the host and
 * back loses what the restore wrote: bench/discard_copy --behind 500
 * --trip, six at once, 1500 rounds of 16 MiB each way (H200, driver
 * 580.159.04, 2026-11-29): behind the kernel, 454,692 of 6.1 million
 * pages stale on the CPU and 7.4% of the words wrong after the trip;
 * on an idle stream, behind another discard, or with the population
 * (not the discard) behind a kernel, none; on an idle stream while
 * kernels run on another (the lanes' case), none in 7200 ranges.
 * test_stage_gpu's poisoned variants failed so under load (1 of 81 runs
 * without any CPU read of staged data), their discards behind the
 * poison's memsets. So every
 * discard waits for its stream first: the lanes' are idle there (each
 * call ends synchronised, step ends are waited for on the host) but for
 * the poison's memsets and a call that failed.
 */
static umadv_status_t discard_call(void *arg, void **ptrs, size_t *sizes, size_t n,
                                   umadv_stream_t stream)
{
    const umadv_exec_t *e = arg;
    umadv_status_t status = e->p.ops->stream_synchronize(stream);

    if (status == UMADV_OK)
        status = e->p.ops->discard_batch(ptrs, sizes, n, stream);
    return status;
}

static umadv_status_t populate_call(void *arg, void **ptrs, size_t *sizes, size_t n,
                                    umadv_stream_t stream)
{
    const umadv_exec_t *e = arg;

    return e->p.ops->discard_and_prefetch_batch(ptrs, sizes, n, e->p.device, stream);
}

/* The lane's @n ranges (ranges()) discarded on its stream. Under
 * UMADV_STAGE_POISON each is filled with the poison first, in stream
 * order: a discarded range may go on reading its old bytes, and a read
 * that should have waited for a restore would then go unseen. */
static int poisons(const umadv_exec_t *e)
{
    return e->p.stage_poison && e->p.ops->memset_async != NULL;
}

static umadv_status_t discard_ranges(umadv_exec_t *e, exec_lane_t *lane, size_t n,
                                     uint64_t piece)
{
    umadv_status_t status = UMADV_OK;

    own_copies++; /* the application's memsets are watched, not ours */
    for (size_t i = 0; i < n && poisons(e) && status == UMADV_OK; i++)
        status = e->p.ops->memset_async(lane->batch_ptrs[i], UMADV_CUDA_HOST_POISON,
                                        lane->batch_sizes[i], lane->stream);
    own_copies--;
    if (status == UMADV_OK)
        status = umadv__exec_in_calls(piece, lane->batch_ptrs, lane->batch_sizes, n,
                                      discard_call, e, lane->stream);
    return status;
}

/* Out: copied, then discarded. Returns whether the data left the range
 * for the staging (copied: what a failed discard does not undo; a
 * refused one neither, once the range is poisoned), and *status_p the
 * first failure. All the copies come before any discard: in runs of 16
 * MiB, each discarded on a second stream while the next copied (and its
 * room settled at once), ResNet-50 ran no faster, twice (2026-11-29 and
 * -30), and VGG-16 and GPT-2 10-15% slower (H200, bench/RESULTS.md). */
static int stage_out(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                     uint64_t piece, umadv_status_t *status_p)
{
    umadv_status_t status = copies(e, lane, from, to, 1);

    if (status != UMADV_OK) {
        *status_p = status;
        return 0;
    }
    if (!ranges(e, lane, from, to))
        status = UMADV_ERR_NO_MEMORY;
    else if ((status = discard_ranges(e, lane, to - from, piece)) == UMADV_OK)
        status = e->p.ops->stream_synchronize(lane->stream);
    *status_p = status;
    /* refused: nothing was discarded, and unpoisoned the range has the data */
    return status != UMADV_ERR_UNSUPPORTED || poisons(e);
}

/* Ranges whose data waits in the staging, populated on the GPU without a
 * copy: discard-and-prefetch batches (umadv__exec_in_calls), or, refused,
 * a migration each. */
static umadv_status_t populate_ranges(umadv_exec_t *e, void **ptrs, size_t *sizes, size_t n,
                                      uint64_t piece, umadv_stream_t stream)
{
    umadv_status_t status = umadv__exec_in_calls(piece, ptrs, sizes, n, populate_call, e,
                                                 stream);

    if (status != UMADV_ERR_UNSUPPORTED)
        return status;
    status = UMADV_OK;
    for (size_t i = 0; i < n && status == UMADV_OK; i++)
        status = e->p.ops->prefetch(ptrs[i], sizes[i], e->p.device, stream);
    return status;
}

/* [@range, +@len) populated on the pipe stream, then copied back from
 * @slot on the lane's stream once the population is done there
 * (RESTORES IN RUNS). */
static umadv_status_t run_restore(umadv_exec_t *e, exec_lane_t *lane, char *range, char *slot,
                                  uint64_t len, uint64_t piece)
{
    void *ptr = range;
    size_t size = (size_t)len;
    umadv_status_t status = populate_ranges(e, &ptr, &size, 1, piece, lane->pipe_stream);

    if (status == UMADV_OK)
        status = e->p.ops->event_record(lane->pipe_event, lane->pipe_stream);
    if (status == UMADV_OK)
        status = e->p.ops->stream_wait_event(lane->stream, lane->pipe_event);
    if (status == UMADV_OK)
        status = lane_copy(e, lane, range, slot, len);
    return status;
}

/* Every piece restored in runs; both streams waited for, the pipe
 * stream even after a failure and drained if its own fails (a population
 * still running would wipe what the synchronous restore copies back; the
 * caller drains the lane's stream). */
static umadv_status_t stage_in_runs(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                                    uint64_t piece)
{
    uint64_t cut = STAGE_RUN_SECTIONS * e->trace->section_size;
    umadv_status_t status = UMADV_OK, pipe_status;

    for (size_t i = from; i < to && status == UMADV_OK; i++)
        status = piece_runs(e, lane, &lane->pieces[i], cut, run_restore, piece);
    pipe_status = e->p.ops->stream_synchronize(lane->pipe_stream);
    stream_drain(e, lane->pipe_stream, pipe_status);
    if (status == UMADV_OK)
        status = pipe_status;
    if (status == UMADV_OK)
        status = e->p.ops->stream_synchronize(lane->stream);
    return status;
}

static umadv_status_t stage_in(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                               uint64_t piece)
{
    umadv_status_t status;

    if (lane->pipe_stream != NULL)
        return stage_in_runs(e, lane, from, to, piece);
    if (!ranges(e, lane, from, to))
        return UMADV_ERR_NO_MEMORY;
    status = populate_ranges(e, lane->batch_ptrs, lane->batch_sizes, to - from, piece,
                             lane->stream);
    if (status == UMADV_OK)
        status = copies(e, lane, from, to, 0);
    return status;
}

static void stage_count(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to, int to_gpu)
{
    for (size_t i = from; i < to; i++)
        *(to_gpu ? &e->stats.restored_bytes : &e->stats.staged_bytes) += lane->pieces[i].bytes;
    (to_gpu ? e->stats.restore_calls++ : e->stats.stage_calls++);
}

/* The driver has no discards: the pieces stay resident, and every later
 * staged eviction migrates. */
static void stage_refused(umadv_exec_t *e)
{
    if (!e->stage.failed)
        umadv_warn("executor: the driver refuses cudaMemDiscardBatchAsync (CUDA 13 drivers "
                   "have it): evictions migrate");
    e->stage.failed = 1;
}

static uint64_t pieces_len(const exec_lane_t *lane, size_t from, size_t to)
{
    uint64_t len = 0;

    for (size_t i = from; i < to; i++)
        len += lane->pieces[i].len;
    return len;
}

/* Issue pieces [from, to) of @lane, all staged, as one staged call; the
 * lock is held and dropped for the calls. */
void umadv__exec_stage_issue(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                             int to_gpu)
{
    umadv_status_t status = UMADV_OK;
    int moved = 0;
    uint64_t start, piece = umadv__exec_call_piece(e, lane);

    if (from == to || e->broken) {
        umadv__exec_pieces_settle(e, lane, from, to, to_gpu, 0);
        for (size_t i = from; i < to && !to_gpu; i++)
            piece_slots_put(e, &lane->pieces[i]); /* not evicted: resident */
        return;
    }
    lane_bounce(e, lane);
    if (to_gpu)
        lane_pipe(e, lane);
    pthread_mutex_unlock(&e->lock);
    start = umadv__now_ns();
    if (to_gpu)
        moved = (status = stage_in(e, lane, from, to, piece)) == UMADV_OK;
    else
        moved = stage_out(e, lane, from, to, piece, &status);
    stream_drain(e, lane->stream, status);
    pthread_mutex_lock(&e->lock);
    umadv__exec_lane_busy(e, lane, start, to_gpu ? "restore from staging" : "stage out",
                          pieces_len(lane, from, to));
    if (status == UMADV_ERR_UNSUPPORTED && !to_gpu)
        stage_refused(e);
    else if (status != UMADV_OK)
        umadv__exec_fail(e, to_gpu ? "staged restore" : "staged eviction");
    /* out: once copied, the sections are the staging's (HOST, staged) */
    umadv__exec_pieces_settle(e, lane, from, to, to_gpu, to_gpu ? status == UMADV_OK : moved);
    for (size_t i = from; i < to; i++) {
        if (to_gpu ? status == UMADV_OK : !moved)
            piece_slots_put(e, &lane->pieces[i]); /* the range holds the data */
    }
    if (status == UMADV_OK)
        stage_count(e, lane, from, to, to_gpu);
}

/* Dead pieces: one discard of their ranges, nothing copied; the
 * sections are HOST, counted as released. A driver that refuses discards
 * leaves them resident, as a refused staged eviction does, and every later
 * one migrates (umadv__exec_stage_slots). */
void umadv__exec_dead_issue(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to)
{
    umadv_status_t status = UMADV_ERR_STATE;
    uint64_t start, piece = umadv__exec_call_piece(e, lane);

    if (from == to)
        return;
    /* broken, or no memory for the arrays: not carried out, still resident */
    if (!e->broken && ranges(e, lane, from, to)) {
        pthread_mutex_unlock(&e->lock);
        start = umadv__now_ns();
        status = stream_finish(e, lane->stream, discard_ranges(e, lane, to - from, piece));
        pthread_mutex_lock(&e->lock);
        umadv__exec_lane_busy(e, lane, start, "release dead data", pieces_len(lane, from, to));
        if (status == UMADV_ERR_UNSUPPORTED)
            stage_refused(e);
        else if (status != UMADV_OK)
            umadv__exec_fail(e, "discard (dead data)");
    }
    umadv__exec_pieces_settle(e, lane, from, to, 0, status == UMADV_OK && !e->broken);
}

/* ---- synchronous restores ----------------------------------------------- */

/* @n ranges populated on the GPU, then copied back from their slots, on
 * @stream, waited for. A restore never copies into a range
 * it has not populated: a discarded range written by a copy alone can
 * read an older version of its bytes on the CPU later (the host's copy
 * from before it went to the GPU, in every page), though a copy from it
 * on the GPU right after read the right ones (test_stage_gpu's poisoned
 * plan, H200, driver 580.159.04, 2026-11-29, ten runs of 168 under load,
 * each a section restored synchronously and read next on the CPU); the
 * lanes' restores, populated first, never did. */
static umadv_status_t copy_back(umadv_exec_t *e, umadv_stream_t stream, void **ptrs,
                                void *const *slots, size_t *sizes, size_t n)
{
    umadv_status_t status = populate_ranges(e, ptrs, sizes, n, 0, stream);

    for (size_t i = 0; i < n && status == UMADV_OK; i++)
        status = own_copy(e, ptrs[i], slots[i], sizes[i], stream);
    return stream_finish(e, stream, status);
}

/* Called with the lock held: the synchronous restores' stream, made at
 * the first (shared by the threads that restore: each waits for the
 * stream, its own calls among the others'), or NULL where it cannot be
 * made (logged by cuda_ops). */
static umadv_stream_t restore_stream(umadv_exec_t *e)
{
    if (e->stage.restore_stream == NULL &&
        e->p.ops->stream_create(&e->stage.restore_stream) != UMADV_OK)
        e->stage.restore_stream = NULL;
    return e->stage.restore_stream;
}

/* Copy section @s back from its slot, the lock dropped: CUDA if it still
 * works, else the CPU. */
static void section_copy_back(umadv_exec_t *e, uint32_t s)
{
    const umadv_trace_section_t *sec = &e->trace->sections[s];
    void *range = (void *)(e->binds[sec->alloc].base + sec->offset), *slot = slot_addr(e, s);
    size_t size = sec->size;
    umadv_stream_t stream = e->broken ? NULL : restore_stream(e);
    int broken = e->broken;
    umadv_status_t status = UMADV_ERR_STATE;

    e->binds[sec->alloc].busy++;
    pthread_mutex_unlock(&e->lock);
    if (stream != NULL)
        status = copy_back(e, stream, &range, &slot, &size, 1);
    if (status != UMADV_OK)
        memcpy(range, slot, sec->size);
    pthread_mutex_lock(&e->lock);
    e->binds[sec->alloc].busy--;
    if (status != UMADV_OK && !broken)
        umadv__exec_fail(e, "synchronous restore");
}

static int in_flight(umadv_sec_state_t state)
{
    return state == UMADV_SEC_FETCHING || state == UMADV_SEC_EVICTING;
}

/* Called with the lock held. Section @s, if staged, holds its data again
 * when this returns. Returns the bytes copied back. */
static uint64_t restore_one(umadv_exec_t *e, uint32_t s)
{
    /* a lane's call on it settles it (stopped lanes have none) */
    e->waiting++;
    while (e->core.staged[s] && in_flight((umadv_sec_state_t)e->core.state[s]) &&
           (e->fetch.started || e->evict.started))
        pthread_cond_wait(&e->cond, &e->lock);
    e->waiting--;
    if (!e->core.staged[s])
        return 0;
    if (e->core.state[s] == UMADV_SEC_OUT_QUEUED || e->stage.slot[s] == EXEC_NO_SLOT) {
        /* not copied out yet: the range holds the data; the queued
         * eviction finds the section resident and leaves it */
        umadv__core_set_state(&e->core, s, UMADV_SEC_RESIDENT);
        return 0;
    }
    /* in flight while the lock is dropped: no lane restores it meanwhile
     * (a fetch waits for a restore in flight, core.h) */
    umadv__core_set_state(&e->core, s, UMADV_SEC_FETCHING);
    section_copy_back(e, s);
    slot_put(e, s);
    umadv__core_set_state(&e->core, s, UMADV_SEC_RESIDENT);
    e->stats.sync_restored_bytes += exec_section_size(e, s);
    umadv__exec_changed(e);
    return exec_section_size(e, s);
}

static void restore_all_locked(umadv_exec_t *e);

void umadv__exec_restore_sections(umadv_exec_t *e, const uint32_t *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        e->stats.late_restored_bytes += restore_one(e, list[i]);
}

/* Called with the lock held: every staged section of @alloc. */
void umadv__exec_restore_alloc(umadv_exec_t *e, uint32_t alloc)
{
    const umadv_trace_alloc_t *a = &e->trace->allocs[alloc];

    for (uint32_t i = 0; e->binds[alloc].base != 0 && i < a->nsections; i++)
        restore_one(e, a->first_section + i);
}

/* The sections of @alloc's block within its bytes [@from, @to): the
 * first and one past the last. */
static void block_sections(const umadv_exec_t *e, uint32_t alloc, uint64_t from, uint64_t to,
                           uint32_t *first_p, uint32_t *end_p)
{
    const umadv_trace_alloc_t *a = &e->trace->allocs[alloc];
    uint64_t first = from / e->trace->section_size, end = (to - 1) / e->trace->section_size + 1;

    *first_p = a->first_section + (uint32_t)UMADV_MIN(first, a->nsections);
    *end_p   = a->first_section + (uint32_t)UMADV_MIN(end, a->nsections);
}

/* Called with the lock held: the first bound block that may overlap
 * bytes from @lo on (the one below @lo, else the first above); the tree
 * walks on in address order. NULL: no block. */
static const umadv_tree_node_t *bound_from(const umadv_exec_t *e, uintptr_t lo)
{
    const umadv_tree_node_t *n = umadv__tree_floor(&e->bound, lo, UINT64_MAX);

    return n != NULL ? n : umadv__tree_ceil(&e->bound, lo, 0);
}

/* Called with the lock held: the sections of bound blocks overlapping
 * [@lo, @hi) are marked copied now (@mark), and the first of them marked
 * staged is returned, or UINT32_MAX. */
static uint32_t copy_sections(umadv_exec_t *e, uintptr_t lo, uintptr_t hi, int mark)
{
    const umadv_tree_node_t *n = bound_from(e, lo);
    uint32_t staged = UINT32_MAX;

    for (; n != NULL && n->key_hi < hi && (mark || staged == UINT32_MAX);
         n = umadv__tree_next(&e->bound, n)) {
        const exec_bind_t *b = (const exec_bind_t *)n; /* node is the first member */
        uintptr_t from = UMADV_MAX(lo, b->base), to = UMADV_MIN(hi, b->base + b->size);
        uint32_t s, end;

        if (from >= to)
            continue;
        block_sections(e, (uint32_t)n->key_lo, from - b->base, to - b->base, &s, &end);
        for (; s < end && (mark || staged == UINT32_MAX); s++) {
            if (mark)
                e->stage.copied[s] = e->ends_seq + 1;
            if (e->core.staged[s] && staged == UINT32_MAX)
                staged = s;
        }
    }
    return staged;
}

void umadv__exec_stage_restore_range(umadv_exec_t *e, const void *ptr, uint64_t bytes)
{
    uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
    uint32_t s;

    if (bytes == 0 || hi < lo || own_copies > 0 || !e->p.stage)
        return;
    umadv_trace("executor: the application copies or sets [%p, +%llu)", ptr,
                (unsigned long long)bytes);
    pthread_mutex_lock(&e->lock);
    /* restore_one drops the lock: the search starts again after each */
    for (s = copy_sections(e, lo, hi, 1); s != UINT32_MAX; s = copy_sections(e, lo, hi, 0))
        e->stats.copy_restored_bytes += restore_one(e, s);
    pthread_mutex_unlock(&e->lock);
}

/* Called with the lock held: from @lo, the first part of [@lo, @hi) in
 * one bound block without advice (advice places a block itself) that
 * has a section not held resident, as [*@from_p, *@to_p), the block's
 * allocation in *@alloc_p; 0: none. */
static int unplaced_part(const umadv_exec_t *e, uintptr_t lo, uintptr_t hi, uintptr_t *from_p,
                         uintptr_t *to_p, uint32_t *alloc_p)
{
    const umadv_tree_node_t *n;

    for (n = bound_from(e, lo); n != NULL && n->key_hi < hi; n = umadv__tree_next(&e->bound, n)) {
        const exec_bind_t *b = (const exec_bind_t *)n; /* node is the first member */
        uintptr_t from = UMADV_MAX(lo, b->base), to = UMADV_MIN(hi, b->base + b->size);
        uint32_t s, end;

        if (from >= to || b->advised != 0)
            continue;
        block_sections(e, (uint32_t)n->key_lo, from - b->base, to - b->base, &s, &end);
        for (; s < end; s++) {
            if (e->core.state[s] != UMADV_SEC_RESIDENT) {
                *from_p = from;
                *to_p = to;
                *alloc_p = (uint32_t)n->key_lo;
                return 1;
            }
        }
    }
    return 0;
}

void umadv__exec_app_write(umadv_exec_t *e, const void *ptr, uint64_t bytes)
{
    uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes, from, to;
    uint32_t alloc;

    if (bytes == 0 || hi < lo || own_copies > 0)
        return;
    pthread_mutex_lock(&e->lock);
    while (!e->broken && unplaced_part(e, lo, hi, &from, &to, &alloc)) {
        exec_bind_t *b = &e->binds[alloc];
        umadv_stream_t stream = restore_stream(e);
        umadv_status_t status = UMADV_ERR_STATE;

        b->busy++; /* stays bound while the lock is dropped */
        pthread_mutex_unlock(&e->lock);
        if (stream != NULL)
            status = e->p.ops->prefetch((void *)from, (size_t)(to - from), e->p.device, stream);
        if (status == UMADV_OK)
            status = e->p.ops->stream_synchronize(stream);
        pthread_mutex_lock(&e->lock);
        b->busy--;
        umadv__exec_wake(e);
        if (status != UMADV_OK) {
            umadv__exec_fail(e, "placing an application's copy");
            break;
        }
        e->stats.app_placed_bytes += to - from;
        lo = to;
    }
    pthread_mutex_unlock(&e->lock);
}

void umadv__exec_restore_all(umadv_exec_t *e)
{
    pthread_mutex_lock(&e->lock);
    restore_all_locked(e);
    pthread_mutex_unlock(&e->lock);
}

void umadv__exec_set_stageable(umadv_exec_t *e, uint32_t alloc, int on)
{
    if (alloc >= e->trace->nallocs)
        return;
    pthread_mutex_lock(&e->lock);
    if (!on)
        umadv__exec_restore_alloc(e, alloc);
    if (e->binds[alloc].base != 0)
        umadv__core_set_stageable(&e->core, alloc, on);
    pthread_mutex_unlock(&e->lock);
}

/* ---- restoring everything at once ------------------------------------- */

/* The staged sections whose data waits in a slot, as runs: consecutive
 * sections of one block in consecutive slots (a range and a slot run). */
typedef struct restore_batch {
    uint32_t *sections;
    size_t    nsections;
    void    **ptrs;      /* per run: the range */
    size_t   *sizes;
    void    **slots;     /* per run: its first slot */
    size_t    nruns;
} restore_batch_t;

static int staged_in_flight(const umadv_exec_t *e)
{
    for (uint32_t s = 0; s < e->trace->nsections; s++) {
        if (e->core.staged[s] && in_flight((umadv_sec_state_t)e->core.state[s]))
            return 1;
    }
    return 0;
}

static int batch_alloc(restore_batch_t *b, size_t n)
{
    b->sections = malloc(n * sizeof(*b->sections));
    b->ptrs = malloc(n * sizeof(*b->ptrs));
    b->sizes = malloc(n * sizeof(*b->sizes));
    b->slots = malloc(n * sizeof(*b->slots));
    return b->sections != NULL && b->ptrs != NULL && b->sizes != NULL && b->slots != NULL;
}

static void batch_free(restore_batch_t *b)
{
    free(b->sections);
    free(b->ptrs);
    free(b->sizes);
    free(b->slots);
}

/* Section @s joins the last run or begins one. */
static void batch_add(umadv_exec_t *e, restore_batch_t *b, uint32_t s)
{
    const umadv_trace_section_t *sec = &e->trace->sections[s];
    char *range = (char *)(e->binds[sec->alloc].base + sec->offset);
    uint32_t prev = b->nsections > 0 ? b->sections[b->nsections - 1] : UINT32_MAX;

    b->sections[b->nsections++] = s;
    if (prev != UINT32_MAX && prev + 1 == s && e->trace->sections[prev].alloc == sec->alloc &&
        slots_follow(&e->stage, e->stage.slot[prev], e->stage.slot[s])) {
        b->sizes[b->nruns - 1] += sec->size;
        return;
    }
    b->ptrs[b->nruns] = range;
    b->sizes[b->nruns] = sec->size;
    b->slots[b->nruns++] = slot_addr(e, s);
}

/* Once no lane's call is on a staged section: those in a slot, marked
 * FETCHING and their blocks busy (no lane touches them, no free takes
 * them). 0: none, or no memory for the lists. */
static int batch_collect(umadv_exec_t *e, restore_batch_t *b)
{
    e->waiting++;
    while ((e->fetch.started || e->evict.started) && staged_in_flight(e))
        pthread_cond_wait(&e->cond, &e->lock);
    e->waiting--;
    if (e->core.stage_used == 0 || !batch_alloc(b, e->core.stage_used))
        return 0;
    for (uint32_t s = 0; s < e->trace->nsections && b->nsections < e->core.stage_used; s++) {
        uint32_t a = e->trace->sections[s].alloc;

        if (!e->core.staged[s] || e->core.state[s] != UMADV_SEC_HOST ||
            e->stage.slot[s] == EXEC_NO_SLOT || e->binds[a].base == 0)
            continue;
        batch_add(e, b, s);
        umadv__core_set_state(&e->core, s, UMADV_SEC_FETCHING);
        e->binds[a].busy++;
    }
    return b->nsections > 0;
}

/*
 * Called with the lock held: every staged section holds its data again.
 * In one batch where CUDA works (one population call, a copy per run,
 * one synchronisation: section by section, each copy faulting its pages
 * in and synchronised alone, 10 GiB of VGG-16's took 5-7 s); whatever
 * the batch leaves (a queued eviction to call off, a failed batch, a
 * broken executor) section by section, falling back to the CPU's copy.
 */
static void restore_all_locked(umadv_exec_t *e)
{
    restore_batch_t b = {0};

    if (!e->broken && batch_collect(e, &b)) {
        umadv_stream_t stream = restore_stream(e);
        umadv_status_t status = UMADV_ERR_STATE;

        pthread_mutex_unlock(&e->lock);
        if (stream != NULL)
            status = copy_back(e, stream, b.ptrs, b.slots, b.sizes, b.nruns);
        pthread_mutex_lock(&e->lock);
        umadv_debug("executor: %zu staged sections restored at once, in %zu runs: %s",
                    b.nsections, b.nruns, status == UMADV_OK ? "done" : "failed, one by one");
        for (size_t i = 0; i < b.nsections; i++) {
            uint32_t s = b.sections[i];

            e->binds[e->trace->sections[s].alloc].busy--;
            if (status != UMADV_OK) {
                umadv__core_set_state(&e->core, s, UMADV_SEC_HOST); /* still staged */
                continue;
            }
            slot_put(e, s);
            umadv__core_set_state(&e->core, s, UMADV_SEC_RESIDENT);
            e->stats.sync_restored_bytes += exec_section_size(e, s);
        }
        umadv__exec_changed(e);
    }
    batch_free(&b);
    for (uint32_t a = 0; a < e->trace->nallocs; a++)
        umadv__exec_restore_alloc(e, a);
}

/* Called with the lock held. What runs until the next iteration is not
 * known: nothing is staged until then, and everything staged comes back
 * (queued staged evictions are called off). */
static void stage_pause_locked(umadv_exec_t *e)
{
    if (e->core.stage_paused)
        return; /* nothing has been staged since (restore_one waits for a staged
                 * eviction in flight, calls off those queued) */
    umadv_debug("executor: staging paused until the next iteration");
    umadv__core_stage_pause(&e->core, 1);
    restore_all_locked(e);
}

void umadv__exec_stage_pause(umadv_exec_t *e)
{
    pthread_mutex_lock(&e->lock);
    stage_pause_locked(e);
    pthread_mutex_unlock(&e->lock);
}

/* Called with the lock held, after the open step's wait: what it touches
 * holds its data before its work is launched. A broken executor restores
 * everything (its queues are gone, its core no longer follows steps); so
 * does a step past the profiled ones, whose accesses are not known. */
void umadv__exec_step_guard(umadv_exec_t *e)
{
    uint64_t start;
    size_t n;

    if (e->broken) {
        restore_all_locked(e);
        return;
    }
    if (e->core.past_end) {
        stage_pause_locked(e);
        return;
    }
    n = umadv__core_step_unrestored(&e->core);
    if (n == 0)
        return;
    start = umadv__now_ns();
    umadv_debug("executor: %zu staged sections of step key %llu restored synchronously", n,
                (unsigned long long)e->key);
    umadv__exec_restore_sections(e, e->core.unrestored, n);
    umadv__spans_add(e->p.spans, UMADV_SPAN_WAITS, "restore on the application's thread",
                     start, umadv__now_ns(), 0, e->iteration, e->step - 1);
}
