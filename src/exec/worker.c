/*
 * The executor's threads: the fetch lane, the eviction lane and the GPU
 * memory monitor (exec.c's opening comment has the threading model).
 *
 * A lane takes the op at the head of its queue, turns it into pieces
 * (runs of sections that need the move), adds later ops that continue it
 * in memory, and issues the pieces as few calls as their addresses allow.
 * The fetch lane also takes along the small copies of the same need step
 * wherever they lie, and issues all its pieces as one batch call (plan.h,
 * BATCHES).
 * The lock is dropped for every CUDA call; the blocks under a call are
 * marked busy so that nobody frees them meanwhile.
 */
#include "exec/exec_int.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "numa/numa.h"

static int bound(const umadv_exec_t *e, uint32_t alloc)
{
    return e->binds[alloc].base != 0;
}

/* Address and length of sections [first, first + count) of @alloc. */
static void run_range(const umadv_exec_t *e, uint32_t alloc, uint32_t first, uint32_t count,
                      uintptr_t *ptr_p, uint64_t *len_p)
{
    const umadv_trace_section_t *a = &e->trace->sections[exec_section_id(e, alloc, first)];
    const umadv_trace_section_t *b = a + count - 1;

    *ptr_p = e->binds[alloc].base + a->offset;
    *len_p = b->offset + b->size - a->offset;
}

static umadv_status_t piece_add(umadv_exec_t *e, exec_lane_t *lane, const exec_op_t *op,
                                uint32_t first, uint32_t count, uint64_t bytes)
{
    exec_piece_t *p;

    if (umadv__array_reserve((void **)&lane->pieces, &lane->pieces_cap, lane->npieces + 1,
                             sizeof(*lane->pieces)) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    p = &lane->pieces[lane->npieces++];
    *p = (exec_piece_t){.alloc = op->d.alloc, .first = first, .count = count, .bytes = bytes,
                        .fresh = op->d.fresh, .clean = op->d.clean, .dead = op->d.dead,
                        .staged = e->core.staged[exec_section_id(e, op->d.alloc, first)]};
    run_range(e, op->d.alloc, first, count, &p->ptr, &p->len);
    return UMADV_OK;
}

/* Whether section @index of @op's run continues the piece that begins at
 * @start: in state @from, and staged or not as that one (a piece takes
 * one channel). */
static int piece_continues(const umadv_exec_t *e, const exec_op_t *op, uint32_t start,
                           uint32_t index, umadv_sec_state_t from)
{
    uint32_t s = exec_section_id(e, op->d.alloc, op->d.first + index);

    return e->core.state[s] == from &&
           e->core.staged[s] == e->core.staged[exec_section_id(e, op->d.alloc,
                                                               op->d.first + start)];
}

/* Pieces of @op's run: its sections in state @from, moved to @to. */
static void op_pieces(umadv_exec_t *e, exec_lane_t *lane, const exec_op_t *op,
                      umadv_sec_state_t from, umadv_sec_state_t to)
{
    uint32_t i = 0;

    while (i < op->d.count) {
        uint32_t start = i;
        uint64_t bytes = 0;

        while (i < op->d.count && piece_continues(e, op, start, i, from))
            bytes += exec_section_size(e, exec_section_id(e, op->d.alloc, op->d.first + i++));
        if (i == start) {
            i++;
            continue;
        }
        if (piece_add(e, lane, op, op->d.first + start, i - start, bytes) != UMADV_OK)
            return; /* the rest stays where it is: a hint less */
        for (uint32_t k = start; k < i; k++)
            umadv__core_set_state(&e->core, exec_section_id(e, op->d.alloc, op->d.first + k), to);
    }
}

/* ---- issuing calls ----------------------------------------------------- */

static void pieces_busy(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to, int delta)
{
    for (size_t i = from; i < to; i++)
        e->binds[lane->pieces[i].alloc].busy += (uint32_t)delta;
    if (delta < 0)
        umadv__exec_changed(e);
}

/* Pieces [from, to) have been moved (@ok) or not. Staged pieces are
 * counted by stage.c. */
void umadv__exec_pieces_settle(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                               int to_gpu, int ok)
{
    umadv_sec_state_t done = to_gpu ? UMADV_SEC_RESIDENT : UMADV_SEC_HOST;
    umadv_sec_state_t undone = to_gpu ? UMADV_SEC_HOST : UMADV_SEC_RESIDENT;

    for (size_t i = from; i < to; i++) {
        const exec_piece_t *p = &lane->pieces[i];
        for (uint32_t k = 0; k < p->count; k++) {
            uint32_t s = exec_section_id(e, p->alloc, p->first + k);
            umadv__core_set_state(&e->core, s, ok ? done : undone);
            if (ok)
                umadv__pages_note(&e->pages, e->binds[p->alloc].base +
                                       e->trace->sections[s].offset, exec_section_size(e, s),
                                       to_gpu);
        }
        if (!ok || p->staged)
            continue;
        if (!to_gpu)
            *(p->dead    ? &e->stats.released_bytes
              : p->clean ? &e->stats.dropped_bytes : &e->stats.evicted_bytes) += p->bytes;
        else if (p->fresh)
            e->stats.fresh_bytes += p->bytes;
        else
            e->stats.fetched_bytes += p->bytes;
    }
}

/* How many pieces from @from one call covers: contiguous in one arena. */
static size_t call_extent(const umadv_exec_t *e, const exec_lane_t *lane, size_t from,
                          uint64_t *len_p)
{
    const exec_piece_t *p = lane->pieces;
    uint64_t len = p[from].len;
    size_t to = from + 1;

    while (to < lane->npieces && p[to].ptr == p[from].ptr + len &&
           e->binds[p[to].alloc].arena == e->binds[p[from].alloc].arena &&
           len + p[to].len <= e->p.max_call_bytes) {
        len += p[to].len;
        to++;
    }
    *len_p = len;
    return to;
}

/* The time since @start, in a lane's CUDA calls: where the lanes spend
 * an iteration (exec.c logs it). */
/* The timeline's stall of @lane, if one is open, ends at @at (the lane
 * went on: its call began then). */
static void lane_stall_end(umadv_exec_t *e, exec_lane_t *lane, uint64_t at)
{
    if (lane->stalled_ns == 0)
        return;
    umadv__spans_add(e->p.spans, lane == &e->fetch ? UMADV_SPAN_FETCH : UMADV_SPAN_EVICT,
                     "stalled: no room yet", lane->stalled_ns, UMADV_MAX(at, lane->stalled_ns),
                     0, e->iteration, e->step);
    lane->stalled_ns = 0;
}

void umadv__exec_lane_busy(umadv_exec_t *e, exec_lane_t *lane, uint64_t start,
                           const char *what, uint64_t bytes)
{
    uint64_t now = umadv__now_ns();

    lane_stall_end(e, lane, start);

    if (lane == &e->fetch)
        e->stats.fetch_busy_ns += now - start;
    else
        e->stats.evict_busy_ns += now - start;
    umadv__spans_add(e->p.spans, lane == &e->fetch ? UMADV_SPAN_FETCH : UMADV_SPAN_EVICT, what,
                     start, now, bytes, e->iteration, e->step);
}

/* One prefetch call over pieces [from, to), synchronised on the lane's
 * stream, with the lock dropped. */
static umadv_status_t issue_range(umadv_exec_t *e, exec_lane_t *lane, size_t from,
                                  uint64_t len, int location)
{
    umadv_status_t status;
    uint64_t start;

    pthread_mutex_unlock(&e->lock);
    start = umadv__now_ns();
    status = e->p.ops->prefetch((void *)lane->pieces[from].ptr, len, location, lane->stream);
    if (status == UMADV_OK)
        status = e->p.ops->stream_synchronize(lane->stream);
    pthread_mutex_lock(&e->lock);
    umadv__exec_lane_busy(e, lane, start,
                          location == e->p.device ? "prefetch to the GPU" : "prefetch to the host",
                          len);
    return status;
}

static void lane_call_done(umadv_exec_t *e, exec_lane_t *lane, size_t from, size_t to,
                           int to_gpu, umadv_status_t status)
{
    if (status != UMADV_OK)
        umadv__exec_fail(e, to_gpu ? "prefetch to the gpu" : "prefetch to the host");
    umadv__exec_pieces_settle(e, lane, from, to, to_gpu, status == UMADV_OK && !e->broken);
    if (status == UMADV_OK && !e->broken)
        (to_gpu ? e->stats.fetch_calls++ : e->stats.evict_calls++);
}

/* The lane's pieces as ranges, adjacent ones merged (call_extent): how
 * many, into batch_ptrs/batch_sizes. 0: no room for the arrays. */
static size_t batch_ranges(umadv_exec_t *e, exec_lane_t *lane)
{
    size_t n = 0;

    if (umadv__array_reserve((void **)&lane->batch_ptrs, &lane->batch_cap, lane->npieces,
                             sizeof(*lane->batch_ptrs)) != UMADV_OK)
        return 0;
    if (umadv__array_reserve((void **)&lane->batch_sizes, &lane->batch_sizes_cap, lane->npieces,
                             sizeof(*lane->batch_sizes)) != UMADV_OK)
        return 0;
    for (size_t from = 0, to; from < lane->npieces; from = to, n++) {
        uint64_t len;

        to = call_extent(e, lane, from, &len);
        lane->batch_ptrs[n] = (void *)lane->pieces[from].ptr;
        lane->batch_sizes[n] = len;
    }
    return n;
}

static uint64_t batch_bytes(const exec_lane_t *lane, size_t n)
{
    uint64_t bytes = 0;

    for (size_t i = 0; i < n; i++)
        bytes += lane->batch_sizes[i];
    return bytes;
}

/* Every piece of the fetch lane in one batch call. 0: not possible here
 * (one range, no batch entry, no memory): the caller goes call by call. */
static int issue_batch(umadv_exec_t *e, exec_lane_t *lane)
{
    size_t n = e->p.ops->prefetch_batch != NULL ? batch_ranges(e, lane) : 0;
    umadv_status_t status = UMADV_OK;

    if (n < 2)
        return 0;
    if (!e->broken) {
        uint64_t start;

        pthread_mutex_unlock(&e->lock);
        start = umadv__now_ns();
        status = e->p.ops->prefetch_batch(lane->batch_ptrs, lane->batch_sizes, n,
                                          e->p.device, lane->stream);
        if (status == UMADV_OK)
            status = e->p.ops->stream_synchronize(lane->stream);
        pthread_mutex_lock(&e->lock);
        umadv__exec_lane_busy(e, lane, start, "prefetch batch to the GPU", batch_bytes(lane, n));
    }
    lane_call_done(e, lane, 0, lane->npieces, 1, status);
    if (status == UMADV_OK && !e->broken)
        e->stats.batch_calls++;
    return 1;
}

/* Staged pieces to the end, each side in its order: how many are not. */
/* The pieces that satisfy @which move to the front from @from on, in
 * order (a stable partition); returns where the rest begins. */
static size_t pieces_partition(exec_lane_t *lane, size_t from, int (*which)(const exec_piece_t *))
{
    size_t n = from;

    for (size_t i = from; i < lane->npieces; i++) {
        exec_piece_t p = lane->pieces[i];

        if (!which(&p))
            continue;
        memmove(&lane->pieces[n + 1], &lane->pieces[n], (i - n) * sizeof(*lane->pieces));
        lane->pieces[n++] = p;
    }
    return n;
}

static int piece_migrates(const exec_piece_t *p)
{
    return !p->staged && !p->dead;
}

static int piece_dead(const exec_piece_t *p)
{
    return p->dead;
}

/* The pieces that migrate (prefetch calls), lane->pieces[0 .. npieces). */
static void migrate_issue(umadv_exec_t *e, exec_lane_t *lane, int to_gpu)
{
    int location = to_gpu ? e->p.device : umadv__numa_host_location(e->p.numa);
    size_t from = 0;

    if (to_gpu && issue_batch(e, lane))
        from = lane->npieces;
    while (from < lane->npieces) {
        uint64_t len;
        size_t to = call_extent(e, lane, from, &len);
        umadv_status_t status = e->broken ? UMADV_OK : issue_range(e, lane, from, len, location);

        lane_call_done(e, lane, from, to, to_gpu, status);
        from = to;
    }
}

/* The eviction lane waits for @event with the lock dropped, the wait a
 * span named @what in the timeline; a failure breaks the executor.
 * Returns the time waited. */
static uint64_t evict_lane_wait(umadv_exec_t *e, umadv_event_t event, const char *what)
{
    umadv_status_t status;
    uint64_t start, end;

    pthread_mutex_unlock(&e->lock);
    start = umadv__now_ns();
    status = e->p.ops->event_synchronize(event);
    end = umadv__now_ns();
    pthread_mutex_lock(&e->lock);
    umadv__spans_add(e->p.spans, UMADV_SPAN_EVICT, what, start, end, 0, e->iteration, e->step);
    if (status != UMADV_OK)
        umadv__exec_fail(e, "event_synchronize");
    return end - start;
}

/* Before an eviction's call: the holds on its blocks (umadv__exec_hold),
 * each waited for as a step end is. The pieces are busy, so no block is
 * unbound, nor its hold's event destroyed, meanwhile. */
static void evict_wait_holds(umadv_exec_t *e, exec_lane_t *lane)
{
    for (size_t i = 0; i < lane->npieces && !e->broken; i++) {
        uint32_t alloc = lane->pieces[i].alloc;
        umadv_event_t hold = e->binds[alloc].hold;

        if (hold == NULL || (i > 0 && lane->pieces[i - 1].alloc == alloc))
            continue;
        e->stats.hold_wait_ns += evict_lane_wait(e, hold, "waits for a hold");
        e->stats.held_evictions++;
    }
}

/* Whether the pages record (schedule/pages.c) holds every section of pieces
 * [from, to) on the GPU: a block bound over pages a freed one left there. */
static int pieces_on_gpu(const umadv_exec_t *e, const exec_lane_t *lane, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const exec_piece_t *p = &lane->pieces[i];

        for (uint32_t k = 0; k < p->count; k++) {
            uint32_t s = exec_section_id(e, p->alloc, p->first + k);

            if (!umadv__pages_on_gpu(&e->pages, e->binds[p->alloc].base +
                                          e->trace->sections[s].offset, exec_section_size(e, s)))
                return 0;
        }
    }
    return 1;
}

/* The fresh pieces whose pages the record holds on the GPU are counted
 * in without a call and leave the lane's list, the rest in their order:
 * a prefetch over resident pages holds the lane's stream 1.4 ms a GiB
 * (schedule/pages.c). */
static void fresh_present_settle(umadv_exec_t *e, exec_lane_t *lane)
{
    size_t n = 0;

    for (size_t i = 0; i < lane->npieces; i++) {
        if (lane->pieces[i].fresh && pieces_on_gpu(e, lane, i, i + 1)) {
            umadv__exec_pieces_settle(e, lane, i, i + 1, 1, !e->broken);
            continue;
        }
        lane->pieces[n++] = lane->pieces[i];
    }
    lane->npieces = n;
}

/* Migrations first, then the staged pieces (stage.c) as one call. */
static void lane_issue(umadv_exec_t *e, exec_lane_t *lane, int to_gpu)
{
    size_t total, nmigrate, ndone;

    if (to_gpu)
        fresh_present_settle(e, lane);
    total = lane->npieces;
    pieces_busy(e, lane, 0, total, 1);
    if (!to_gpu) {
        evict_wait_holds(e, lane);
        umadv__exec_stage_slots(e, lane);
    }
    /* [migrate | dead | staged] */
    nmigrate = pieces_partition(lane, 0, piece_migrates);
    ndone = pieces_partition(lane, nmigrate, piece_dead);
    lane->npieces = nmigrate;
    migrate_issue(e, lane, to_gpu);
    lane->npieces = total;
    umadv__exec_dead_issue(e, lane, nmigrate, ndone);
    umadv__exec_stage_issue(e, lane, ndone, total, to_gpu);
    pieces_busy(e, lane, 0, total, -1);
    lane->npieces = 0;
    lane->busy_need = EXEC_KEY_NONE;
    umadv__exec_changed(e);
}

/* ---- advice ------------------------------------------------------------ */

static void advice_to_cuda(const umadv_exec_t *e, umadv_advice_t advice,
                           umadv_cuda_advice_t *cuda_p, int *location_p)
{
    switch (advice) {
    case UMADV_ADVICE_READ_MOSTLY:
        *cuda_p = UMADV_CUDA_ADVISE_SET_READ_MOSTLY;
        *location_p = e->p.device;
        break;
    case UMADV_ADVICE_PREFERRED_HOST:
        *cuda_p = UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION;
        *location_p = umadv__numa_host_location(e->p.numa);
        break;
    case UMADV_ADVICE_PREFERRED_DEVICE:
        *cuda_p = UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION;
        *location_p = e->p.device;
        break;
    default: /* ACCESSED_BY; NONE never reaches a queue */
        *cuda_p = UMADV_CUDA_ADVISE_SET_ACCESSED_BY;
        *location_p = e->p.device;
        break;
    }
}

static void advise_issue(umadv_exec_t *e, const exec_op_t *op)
{
    umadv_cuda_advice_t advice;
    umadv_status_t status;
    uintptr_t ptr;
    uint64_t len, start;
    int location;

    advice_to_cuda(e, op->d.advice, &advice, &location);
    run_range(e, op->d.alloc, op->d.first, op->d.count, &ptr, &len);
    e->binds[op->d.alloc].busy++;
    e->fetch.busy_need = op->d.need;
    e->fetch.busy_blocking = op->d.blocking;
    pthread_mutex_unlock(&e->lock);
    start = umadv__now_ns();
    status = e->p.ops->advise((void *)ptr, len, advice, location);
    pthread_mutex_lock(&e->lock);
    umadv__exec_lane_busy(e, &e->fetch, start, "advise", 0);
    e->binds[op->d.alloc].busy--;
    e->fetch.busy_need = EXEC_KEY_NONE;
    if (status != UMADV_OK) {
        umadv__exec_fail(e, "advise");
    } else {
        e->binds[op->d.alloc].advised |= 1u << op->d.advice;
        e->stats.advise_calls++;
    }
    umadv__exec_changed(e);
}

void umadv__exec_unadvise_done(umadv_exec_t *e, const exec_op_t *op)
{
    umadv__core_unadvise_done(&e->core, &op->d);
    umadv__exec_changed(e);
}

/* NONE (plan.h): back to the driver's default on the run, its step
 * complete (the caller waited for its event). Both unsets, whatever is
 * set: unsetting what is not set is harmless, and cheaper than tracking
 * advice per section. */
static void unadvise_issue(umadv_exec_t *e, const exec_op_t *op)
{
    umadv_status_t status = UMADV_OK;
    uintptr_t ptr;
    uint64_t len, start;

    if (!e->broken && bound(e, op->d.alloc)) {
        run_range(e, op->d.alloc, op->d.first, op->d.count, &ptr, &len);
        e->binds[op->d.alloc].busy++;
        pthread_mutex_unlock(&e->lock);
        start = umadv__now_ns();
        status = e->p.ops->advise((void *)ptr, len, UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION,
                                  e->p.device);
        if (status == UMADV_OK)
            status = e->p.ops->advise((void *)ptr, len, UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY,
                                      e->p.device);
        pthread_mutex_lock(&e->lock);
        umadv__exec_lane_busy(e, &e->evict, start, "advice unset", 0);
        e->binds[op->d.alloc].busy--;
        if (status == UMADV_OK)
            e->stats.advise_calls += 2;
        else
            umadv__exec_fail(e, "advise (unset)");
    }
    umadv__exec_unadvise_done(e, op);
    e->evict.busy_need = EXEC_KEY_NONE;
}

/* ---- the fetch lane ---------------------------------------------------- */

/* The core's verdict on @op; a fetch given up for room is counted. */
static umadv_fetch_verdict_t fetch_check(umadv_exec_t *e, const exec_op_t *op, uint64_t *add_p)
{
    umadv_fetch_verdict_t verdict = umadv__core_fetch_verdict(&e->core, &op->d, add_p);

    if (verdict != UMADV_FETCH_SKIP || *add_p == 0)
        return verdict;
    e->stats.budget_skips++;
    umadv_debug("executor: fetch of %llu bytes for step key %llu skipped: over the budget "
                "and nothing is being evicted", (unsigned long long)*add_p,
                (unsigned long long)op->d.need);
    return UMADV_FETCH_SKIP;
}

/* May @op join the call being built for step key @need? It continues
 * the last piece in memory within max_call_bytes (one range: no cost of
 * its own), or the core lets it ride in the batch (schedule.h, BATCHES)
 * and the batch has room for a range. Either way it must be able to go
 * now. */
static int fetch_joins(umadv_exec_t *e, const exec_op_t *op, uint64_t need, uint64_t total)
{
    const exec_piece_t *last = &e->fetch.pieces[e->fetch.npieces - 1];
    uintptr_t ptr;
    uint64_t len, add;
    int adjacent;

    if (op->d.kind != UMADV_OP_FETCH || op->d.need != need || !bound(e, op->d.alloc) ||
        umadv__core_fetch_verdict(&e->core, &op->d, &add) != UMADV_FETCH_GO)
        return 0;
    run_range(e, op->d.alloc, op->d.first, op->d.count, &ptr, &len);
    adjacent = ptr == last->ptr + last->len &&
               e->binds[op->d.alloc].arena == e->binds[last->alloc].arena;
    if (adjacent && total + len <= e->p.max_call_bytes)
        return 1;
    return umadv__core_batch_joins(&e->core, &op->d, need, add) &&
           e->fetch.npieces < EXEC_MAX_BATCH && e->p.ops->prefetch_batch != NULL;
}

/* A queued fetch that may join the call: its index + 1, or 0. The queue
 * is sorted by need: the search stops past @need. */
static size_t fetch_follower(umadv_exec_t *e, uint64_t need, uint64_t total)
{
    const exec_queue_t *q = &e->fetch.queue;

    for (size_t i = q->head; i < q->n && q->ops[i].d.need <= need; i++) {
        if (fetch_joins(e, &q->ops[i], need, total))
            return i + 1;
    }
    return 0;
}

static void fetch_coalesce(umadv_exec_t *e, uint64_t need)
{
    uint64_t total = 0;
    size_t index;

    for (size_t i = 0; i < e->fetch.npieces; i++)
        total += e->fetch.pieces[i].len;
    while (e->fetch.npieces > 0 && (index = fetch_follower(e, need, total)) != 0) {
        exec_op_t op = e->fetch.queue.ops[index - 1];
        size_t before = e->fetch.npieces;

        umadv__exec_queue_remove(&e->fetch, index - 1);
        op_pieces(e, &e->fetch, &op, UMADV_SEC_HOST, UMADV_SEC_FETCHING);
        for (size_t i = before; i < e->fetch.npieces; i++)
            total += e->fetch.pieces[i].len;
    }
}

/* An advice set waits for unsets still queued over its run. */
static int advice_waits(const umadv_exec_t *e, const exec_op_t *op)
{
    for (uint32_t i = 0; i < op->d.count; i++) {
        if (e->core.unadvising[exec_section_id(e, op->d.alloc, op->d.first + i)] > 0)
            return 1;
    }
    return 0;
}

/* Serve the head of the fetch queue. 0: nothing can be done now. */
static int fetch_one(umadv_exec_t *e)
{
    exec_op_t *head = umadv__exec_queue_peek(&e->fetch);
    exec_op_t op;
    uint64_t add;

    if (head == NULL || e->broken)
        return 0;
    op = *head;
    if (bound(e, op.d.alloc) && op.d.kind == UMADV_OP_ADVISE && advice_waits(e, &op))
        return 0;
    if (!bound(e, op.d.alloc) || op.d.kind == UMADV_OP_ADVISE) {
        umadv__exec_queue_remove(&e->fetch, e->fetch.queue.head);
        if (!bound(e, op.d.alloc))
            e->stats.drift_ops++;
        else
            advise_issue(e, &op);
        umadv__exec_changed(e);
        return 1;
    }
    switch (fetch_check(e, &op, &add)) {
    case UMADV_FETCH_WAIT:
        return 0;
    case UMADV_FETCH_SKIP:
        umadv__exec_queue_remove(&e->fetch, e->fetch.queue.head);
        umadv__exec_changed(e);
        return 1;
    case UMADV_FETCH_GO:
        break;
    }
    umadv__exec_queue_remove(&e->fetch, e->fetch.queue.head);
    e->fetch.busy_need = op.d.need;
    e->fetch.busy_blocking = op.d.blocking;
    op_pieces(e, &e->fetch, &op, UMADV_SEC_HOST, UMADV_SEC_FETCHING);
    fetch_coalesce(e, op.d.need);
    lane_issue(e, &e->fetch, 1);
    return 1;
}

/* ---- fetches the step's own thread makes ------------------------------- */

/* A fresh population copies nothing: it makes the pages on the GPU. The
 * application's thread issues it on the stream of the step that needs it,
 * ordered before the step's kernels, with no wait on the host and no lane
 * to wake; the sections count as resident from then on, as a fetch's do
 * from its start. (A PyTorch GPT-2 iteration under plan waited 535 times
 * for the fetch lane to wake and populate, 28 us each; ResNet-50's 275
 * such waits took 142 us each, behind the lane's restores of later
 * steps.) */
/* A fresh fetch the step serves: populated on its stream, where its
 * kernels run next; a run whose pages are already there (pieces_on_gpu)
 * is only counted in. A wrong record costs faults, never data: the
 * sections are fresh, nothing in them is read. */
static void populate_on_stream(umadv_exec_t *e, const exec_op_t *op, umadv_stream_t stream)
{
    exec_lane_t *lane = &e->app;
    size_t from = 0;

    op_pieces(e, lane, op, UMADV_SEC_HOST, UMADV_SEC_FETCHING);
    pieces_busy(e, lane, 0, lane->npieces, 1);
    while (from < lane->npieces) {
        umadv_status_t status = UMADV_OK;
        uint64_t len, start;
        size_t to = call_extent(e, lane, from, &len);

        if (pieces_on_gpu(e, lane, from, to)) {
            umadv__exec_pieces_settle(e, lane, from, to, 1, !e->broken);
            from = to;
            continue;
        }
        if (!e->broken) {
            pthread_mutex_unlock(&e->lock);
            start = umadv__now_ns();
            status = e->p.ops->prefetch((void *)lane->pieces[from].ptr, len, e->p.device,
                                        stream);
            pthread_mutex_lock(&e->lock);
            umadv__spans_add(e->p.spans, UMADV_SPAN_WAITS, "fresh population on the step's stream",
                             start, umadv__now_ns(), len, e->iteration, e->step - 1);
        }
        lane_call_done(e, lane, from, to, 1, status);
        from = to;
    }
    pieces_busy(e, lane, 0, lane->npieces, -1);
    lane->npieces = 0;
}

void umadv__exec_fetch_on_step(umadv_exec_t *e, umadv_stream_t stream)
{
    exec_queue_t *q = &e->fetch.queue;
    size_t i = q->head;

    while (i < q->n && q->ops[i].d.need <= e->key && !e->broken) {
        exec_op_t op = q->ops[i];
        umadv_step_serve_t serve = op.d.need < e->abandoned ? UMADV_STEP_SERVE_NO
                                   : umadv__core_step_serves(&e->core, &op.d);

        if (serve == UMADV_STEP_SERVE_NO) {
            i++;
            continue;
        }
        umadv__exec_queue_remove(&e->fetch, i);
        if (serve == UMADV_STEP_SERVE_POPULATE)
            populate_on_stream(e, &op, stream); /* drops the lock: the queue may change */
        i = q->head;
    }
}

/* ---- the eviction lane ------------------------------------------------- */

/* Wait for the step end behind @op, with the lock dropped. */
static void evict_wait_event(umadv_exec_t *e, exec_event_t *ev)
{
    if (ev == NULL)
        return;
    evict_lane_wait(e, ev->event, "waits for the step end");
    umadv__exec_event_put(e, ev);
}

/* Later evictions behind the same step end join the call. */
static void evict_coalesce(umadv_exec_t *e, const exec_event_t *ev)
{
    exec_op_t *next;

    while ((next = umadv__exec_queue_peek(&e->evict)) != NULL &&
           next->d.kind == UMADV_OP_EVICT && next->event == ev &&
           next->d.blocking == e->evict.busy_blocking && next->d.need == e->evict.busy_need) {
        exec_op_t op = *next;

        umadv__exec_queue_remove(&e->evict, e->evict.queue.head);
        if (bound(e, op.d.alloc))
            op_pieces(e, &e->evict, &op, UMADV_SEC_OUT_QUEUED, UMADV_SEC_EVICTING);
        umadv__exec_event_put(e, op.event);
    }
}

static int evict_one(umadv_exec_t *e)
{
    exec_op_t *head = umadv__exec_queue_peek(&e->evict);
    exec_op_t op;

    if (head == NULL || e->broken)
        return 0;
    op = *head;
    umadv__exec_queue_remove(&e->evict, e->evict.queue.head);
    e->evict.busy_need = op.d.need;
    e->evict.busy_blocking = op.d.blocking;
    e->evict.busy_after = op.event != NULL ? op.event->seq : 0;
    evict_wait_event(e, op.event);
    if (op.d.kind == UMADV_OP_ADVISE) {
        unadvise_issue(e, &op);
        return 1;
    }
    if (!e->broken && bound(e, op.d.alloc)) {
        op_pieces(e, &e->evict, &op, UMADV_SEC_OUT_QUEUED, UMADV_SEC_EVICTING);
        evict_coalesce(e, op.event);
    }
    lane_issue(e, &e->evict, 0);
    return 1;
}

/* ---- thread bodies ----------------------------------------------------- */

/* The lane's stream is made on its own thread, on the executor's device,
 * once the thread runs on the GPU's cores (its first pages land there),
 * in the application's context: a context of umadv's own freed the
 * launches its page calls hold, but slowed every model measured
 * (umadv(7), ONE CONTEXT). The thread stays on the NUMA node's cores
 * with the application's: on cores of their own (a dev knob, the
 * application on others) the lanes made no launch-bound model faster
 * beyond the spread between runs (GPT-2, densenet121; H200, bench/
 * RESULTS.md, thirtieth session). */
static void lane_open(umadv_exec_t *e, exec_lane_t *lane)
{
    const char *failed = NULL;

    umadv__numa_bind_thread(e->p.numa);
    if (e->p.ops->thread_begin(e->p.device) != UMADV_OK)
        failed = "thread_begin";
    else if (e->p.ops->stream_create(&lane->stream) != UMADV_OK)
        failed = "stream_create";
    if (failed != NULL) {
        pthread_mutex_lock(&e->lock);
        lane->stream = NULL;
        umadv__exec_fail(e, failed);
        pthread_mutex_unlock(&e->lock);
    }
}

/* The timeline's stalls: from when the lane first found an op it could
 * not serve (a fetch with no room yet, an advice set behind its unset) to
 * when it began the next call, or served an op that needs none. */
static void lane_stalled(umadv_exec_t *e, exec_lane_t *lane, int served)
{
    if (e->p.spans == NULL)
        return;
    if (!served && lane->stalled_ns == 0 && umadv__exec_queue_peek(lane) != NULL)
        lane->stalled_ns = umadv__now_ns();
    if (served) /* an op that made no call (its call, if any, ended the stall) */
        lane_stall_end(e, lane, umadv__now_ns());
}

static void lane_run(umadv_exec_t *e, exec_lane_t *lane, int (*one)(umadv_exec_t *))
{
    lane_open(e, lane);
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        int served;

        lane->working = 1;
        served = one(e);
        lane->working = 0;
        lane_stalled(e, lane, served);
        if (served)
            continue;
        if (e->draining > 0 && umadv__exec_queue_peek(lane) == NULL)
            pthread_cond_broadcast(&e->cond); /* idle: a drain may be over */
        pthread_cond_wait(&lane->wake, &e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    umadv__exec_stage_lane_end(e, lane);
    if (lane->stream != NULL)
        e->p.ops->stream_destroy(lane->stream);
}

void *umadv__exec_fetch_main(void *arg)
{
    umadv_exec_t *e = arg;

    lane_run(e, &e->fetch, fetch_one);
    return NULL;
}

void *umadv__exec_evict_main(void *arg)
{
    umadv_exec_t *e = arg;

    lane_run(e, &e->evict, evict_one);
    return NULL;
}

/* The monitor cannot sample (@call failed, logged by the backend): say
 * so once and stop, rather than fail again every period. */
static void monitor_fail(const char *call)
{
    umadv_warn("gpu memory monitor: %s failed: gpu_peak_used is not measured in this "
               "policy run", call);
}

/* One sample of GPU memory in use; 0 when it cannot be read. */
static int monitor_sample(umadv_exec_t *e)
{
    uint64_t free_b, total_b, used;
    umadv_status_t status = e->p.ops->mem_get_info(&free_b, &total_b);

    if (status == UMADV_ERR_NO_DEVICE)
        return 0; /* the runtime is unloading: the process is exiting */
    if (status != UMADV_OK) {
        monitor_fail("mem_get_info");
        return 0;
    }
    used = total_b - free_b;
    pthread_mutex_lock(&e->lock);
    if (used > e->p.gpu_used_base)
        e->stats.gpu_peak_used = UMADV_MAX(e->stats.gpu_peak_used, used - e->p.gpu_used_base);
    e->stats.gpu_samples++;
    pthread_mutex_unlock(&e->lock);
    return 1;
}

/* Samples GPU memory in use every monitor_period_ns; mon_cond (on the
 * monotonic clock) wakes it to stop. */
void *umadv__exec_monitor_main(void *arg)
{
    umadv_exec_t *e = arg;

    umadv__numa_bind_thread(e->p.numa);
    if (e->p.ops->thread_begin(e->p.device) != UMADV_OK) {
        monitor_fail("thread_begin");
        return NULL;
    }
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        struct timespec until = exec_deadline(e->p.monitor_period_ns);
        int sampled;

        pthread_mutex_unlock(&e->lock);
        sampled = monitor_sample(e);
        pthread_mutex_lock(&e->lock);
        if (!sampled)
            break;
        while (!e->stop &&
               pthread_cond_timedwait(&e->mon_cond, &e->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}
