/*
 * The simulator's memory accounting, recency list and transfer lanes
 * (sim.c's opening comment describes the model).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/sim_int.h"

#define SIM_INF INFINITY

uint64_t umadv__sim_section_size(const sim_engine_t *e, uint32_t x)
{
    return e->trace->sections[x].size;
}

static uint32_t section_id(const sim_engine_t *e, uint32_t alloc, uint32_t index)
{
    return umadv__trace_section_id(e->trace, alloc, index);
}

/* ------------------------------------------------------------ memory, LRU */

static void lru_unlink(sim_engine_t *e, uint32_t x)
{
    uint32_t p = e->lru_prev[x], n = e->lru_next[x];

    if (p != SIM_NIL)
        e->lru_next[p] = n;
    else
        e->lru_head = n;
    if (n != SIM_NIL)
        e->lru_prev[n] = p;
    else
        e->lru_tail = p;
}

static void lru_push_head(sim_engine_t *e, uint32_t x)
{
    e->lru_prev[x] = SIM_NIL;
    e->lru_next[x] = e->lru_head;
    if (e->lru_head != SIM_NIL)
        e->lru_prev[e->lru_head] = x;
    else
        e->lru_tail = x;
    e->lru_head = x;
}

void umadv__sim_take(sim_engine_t *e, uint32_t x)
{
    e->used += umadv__sim_section_size(e, x);
    e->peak = UMADV_MAX(e->peak, e->used);
}

/* RESIDENT -> HOST without a copy. */
uint64_t umadv__sim_release(sim_engine_t *e, uint32_t x)
{
    uint64_t size = umadv__sim_section_size(e, x);

    lru_unlink(e, x);
    e->state[x] = UMADV_SIM_HOST;
    e->used -= size;
    return size;
}

void umadv__sim_become_resident(sim_engine_t *e, uint32_t x)
{
    e->state[x] = UMADV_SIM_RESIDENT;
    e->fresh[x] = 0;
    lru_push_head(e, x);
}

static int counting(const sim_engine_t *e, double now)
{
    return e->measuring && now >= e->t0;
}

/* ------------------------------------------------------------ fetch lane */

static int fq_less(const sim_lane_op_t *a, const sim_lane_op_t *b)
{
    return a->need != b->need ? a->need < b->need : a->id < b->id;
}

static void fq_sift_down(sim_engine_t *e, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        sim_lane_op_t tmp;

        if (l < e->fq_len && fq_less(&e->fq[l], &e->fq[m]))
            m = l;
        if (r < e->fq_len && fq_less(&e->fq[r], &e->fq[m]))
            m = r;
        if (m == i)
            return;
        tmp = e->fq[i];
        e->fq[i] = e->fq[m];
        e->fq[m] = tmp;
        i = m;
    }
}

static umadv_status_t fq_push(sim_engine_t *e, const sim_lane_op_t *op)
{
    size_t i;
    umadv_status_t status = umadv__array_reserve((void **)&e->fq, &e->fq_cap, e->fq_len + 1,
                                                 sizeof(*e->fq));

    if (status != UMADV_OK)
        return status;
    i = e->fq_len++;
    e->fq[i] = *op;
    while (i > 0 && fq_less(&e->fq[i], &e->fq[(i - 1) / 2])) {
        sim_lane_op_t tmp = e->fq[i];
        e->fq[i] = e->fq[(i - 1) / 2];
        e->fq[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
    return UMADV_OK;
}

static void fq_pop(sim_engine_t *e)
{
    e->fq[0] = e->fq[--e->fq_len];
    fq_sift_down(e, 0);
}

/* What the head op still has to move. Returns 0 when it must wait for a
 * section of its own to finish an eviction. */
static int fetch_needs(const sim_engine_t *e, const sim_lane_op_t *op, uint64_t *room_p,
                       uint64_t *copy_p)
{
    *room_p = *copy_p = 0;
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t x = section_id(e, op->alloc, op->first + i);
        if (e->pending[x] != op->id)
            continue;
        if (e->state[x] == UMADV_SIM_EVICTING)
            return 0;
        if (e->state[x] == UMADV_SIM_HOST) {
            *room_p += umadv__sim_section_size(e, x);
            if (!e->fresh[x])
                *copy_p += umadv__sim_section_size(e, x);
        }
    }
    return 1;
}

/* The op's sections leave the queue; those on the host start moving in
 * the call of @owner (the op it serves, for a batch). */
static void fetch_claim(sim_engine_t *e, const sim_lane_op_t *op, uint32_t owner)
{
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t x = section_id(e, op->alloc, op->first + i);
        if (e->pending[x] != op->id)
            continue;
        e->pending[x] = 0;
        if (e->state[x] == UMADV_SIM_HOST) {
            e->state[x] = UMADV_SIM_FETCHING;
            e->owner[x] = owner;
            umadv__sim_take(e, x);
        }
    }
}

static int fb_add(sim_engine_t *e, const sim_lane_op_t *op)
{
    if (umadv__array_reserve((void **)&e->fb, &e->fb_cap, e->fb_len + 1, sizeof(*e->fb)) !=
        UMADV_OK)
        return 0;
    e->fb[e->fb_len++] = *op;
    return 1;
}

/* May @op ride along in the call of the same need? Small copies that fit
 * and wait for no eviction of their own (not fresh memory: populating
 * costs per range, batched or not); @copy_p: what it adds. */
static int batch_joins(const sim_engine_t *e, const sim_lane_op_t *op, uint64_t *copy_p)
{
    uint64_t room;

    return fetch_needs(e, op, &room, copy_p) && *copy_p > 0 && *copy_p == room &&
           *copy_p <= e->batch_bytes && e->used + room <= e->budget;
}

/* The queued fetches of the head's need step join its call where
 * batch_joins says so (plan.h, BATCHES); the rest go back to the queue.
 * Returns the time they add to the call. */
static double fetch_batch(sim_engine_t *e, const sim_lane_op_t *head)
{
    size_t nset = 0;
    uint64_t copy;
    double total = 0;

    while (e->fq_len > 0 && e->fq[0].need == head->need &&
           umadv__array_reserve((void **)&e->fset, &e->fset_cap, nset + 1,
                                sizeof(*e->fset)) == UMADV_OK) {
        e->fset[nset++] = e->fq[0];
        fq_pop(e);
    }
    for (size_t i = 0; i < nset; i++) {
        const sim_lane_op_t *op = &e->fset[i];

        if (batch_joins(e, op, &copy) && fb_add(e, op)) {
            fetch_claim(e, op, head->id);
            total += umadv__link_time(e->link.fetch_latency / 2, e->link.fetch_bw, copy);
            if (counting(e, e->f_cur.start))
                e->r.fetched_bytes += copy;
        } else if (fq_push(e, op) != UMADV_OK) {
            fetch_claim(e, op, head->id); /* out of memory: it rides along */
        }
    }
    return total;
}

/* Start the earliest-needed queued fetch if it fits, with its batch; the
 * lane serves one call at a time and never skips its head (which would
 * take memory the head is waiting for). */
void umadv__sim_try_start_fetch(sim_engine_t *e, double now)
{
    while (!e->f_running && !e->f_hold && !e->f_defer && e->fq_len > 0) {
        sim_lane_op_t op = e->fq[0];
        uint64_t room, copy;

        if (!fetch_needs(e, &op, &room, &copy))
            return;
        if (room == 0) {
            fq_pop(e);
            fetch_claim(e, &op, op.id);
            continue;
        }
        if (e->used + room > e->budget)
            return;
        fq_pop(e);
        fetch_claim(e, &op, op.id);
        op.start = now;
        e->f_cur = op;
        e->f_running = 1;
        e->fb_len = 0;
        fb_add(e, &op);
        if (counting(e, now))
            e->r.fetched_bytes += copy;
        e->f_end = now + umadv__link_time(e->link.fetch_latency, e->link.fetch_bw, copy) +
                   fetch_batch(e, &op);
    }
}

static void complete_run(sim_engine_t *e, const sim_lane_op_t *op, uint32_t owner)
{
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t x = section_id(e, op->alloc, op->first + i);
        if (e->state[x] != UMADV_SIM_FETCHING || e->owner[x] != owner)
            continue;
        if (e->dead[x]) {
            e->dead[x] = 0;
            e->state[x] = UMADV_SIM_HOST;
            e->used -= umadv__sim_section_size(e, x);
        } else {
            umadv__sim_become_resident(e, x);
        }
    }
}

/* The call's runs land (fb; the head alone if fb could not grow). */
static void complete_fetch(sim_engine_t *e)
{
    e->f_running = 0;
    if (e->fb_len == 0)
        complete_run(e, &e->f_cur, e->f_cur.id);
    for (size_t i = 0; i < e->fb_len; i++)
        complete_run(e, &e->fb[i], e->f_cur.id);
    e->fb_len = 0;
}

void umadv__sim_enqueue_fetch(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t count,
                              uint64_t need, double now)
{
    sim_lane_op_t op = {.alloc = alloc, .first = first, .count = count, .need = need};
    int any = 0;

    op.id = e->next_id++;
    op.step = e->cur_step;
    op.queued = now;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t x = section_id(e, alloc, first + i);
        if (e->state[x] == UMADV_SIM_HOST || e->state[x] == UMADV_SIM_EVICTING) {
            e->pending[x] = op.id;
            any = 1;
        }
    }
    if (any && fq_push(e, &op) != UMADV_OK) {
        /* out of memory: forget the prefetch, the step will fault */
        for (uint32_t i = 0; i < count; i++) {
            uint32_t x = section_id(e, alloc, first + i);
            if (e->pending[x] == op.id)
                e->pending[x] = 0;
        }
    }
    umadv__sim_try_start_fetch(e, now);
}

/* ------------------------------------------------------------ eviction lane */

void umadv__sim_enqueue_evict(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t count,
                              double now)
{
    sim_lane_op_t op = {.alloc = alloc, .first = first, .count = count,
                        .step = e->cur_step, .queued = now};
    int queued;

    if (e->eq_head > 0 && e->eq_head >= e->eq_len) {
        /* keep the FIFO from creeping through memory */
        memmove(e->eq, e->eq + e->eq_head, e->eq_len * sizeof(*e->eq));
        e->eq_head = 0;
    }
    queued = umadv__array_reserve((void **)&e->eq, &e->eq_cap, e->eq_head + e->eq_len + 1,
                                      sizeof(*e->eq)) == UMADV_OK;
    uint64_t bytes = 0;

    op.id = e->next_id++;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t x = section_id(e, alloc, first + i);
        if (e->state[x] != UMADV_SIM_RESIDENT)
            continue;
        bytes += umadv__sim_section_size(e, x);
        if (!queued) {
            /* no memory to queue it: done at once, budget still kept */
            umadv__sim_release(e, x);
            continue;
        }
        lru_unlink(e, x);
        e->state[x] = UMADV_SIM_EVICTING;
        e->owner[x] = op.id;
    }
    if (e->measuring)
        e->r.evicted_bytes += bytes;
    if (bytes == 0 || !queued) {
        umadv__sim_try_start_fetch(e, now);
        return;
    }
    op.start = UMADV_MAX(now, e->e_free);
    op.end = op.start + umadv__link_time(e->link.evict_latency, e->link.evict_bw, bytes);
    e->e_free = op.end;
    e->evicting_bytes += bytes;
    e->eq[e->eq_head + e->eq_len++] = op;
}

static void complete_evict(sim_engine_t *e)
{
    const sim_lane_op_t *op = &e->eq[e->eq_head];

    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t x = section_id(e, op->alloc, op->first + i);
        if (e->state[x] != UMADV_SIM_EVICTING || e->owner[x] != op->id)
            continue;
        e->state[x] = UMADV_SIM_HOST;
        e->used -= umadv__sim_section_size(e, x);
        e->evicting_bytes -= umadv__sim_section_size(e, x);
    }
    e->eq_head++;
    e->eq_len--;
    if (e->eq_len == 0)
        e->eq_head = 0;
}

void umadv__sim_drop(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t count, double now)
{
    for (uint32_t i = 0; i < count; i++) {
        uint32_t x = section_id(e, alloc, first + i);
        if (e->state[x] == UMADV_SIM_RESIDENT) {
            uint64_t size = umadv__sim_release(e, x);
            if (e->measuring)
                e->r.dropped_bytes += size;
        }
    }
    umadv__sim_try_start_fetch(e, now);
}

/* PREFERRED_HOST (with its ACCESSED_BY, which the model does not tell
 * apart) places the run on the host; NONE takes it back. Advice moves no
 * data: a run on the GPU stays there until evicted. */
void umadv__sim_advise(sim_engine_t *e, const umadv_op_t *op)
{
    uint8_t placed;

    if (op->advice == UMADV_ADVICE_PREFERRED_HOST)
        placed = 1;
    else if (op->advice == UMADV_ADVICE_NONE)
        placed = 0;
    else
        return;
    for (uint32_t i = 0; i < op->count; i++)
        e->placed[section_id(e, op->alloc, op->first + i)] = placed;
}

/* ------------------------------------------------------------ time */

int umadv__sim_lanes_busy(const sim_engine_t *e)
{
    return e->eq_len > 0 || e->f_running;
}

double umadv__sim_next_event(const sim_engine_t *e)
{
    double te = e->eq_len ? e->eq[e->eq_head].end : SIM_INF;
    double tf = e->f_running ? e->f_end : SIM_INF;

    return UMADV_MIN(te, tf);
}

/* Process lane events up to @until, in time order; at a tie the eviction
 * first, so that its memory is free for the fetch that follows. Which
 * lane goes is decided by what is there, never by times alone: with
 * absurd link figures an event can fall at infinity (or NaN), and
 * @until may be infinity too; every pass completes one event, so the
 * loop ends whatever the times, and a caller waiting for an event (one
 * is pending) always gets it, even at a NaN time. */
void umadv__sim_advance(sim_engine_t *e, double until)
{
    while (umadv__sim_lanes_busy(e)) {
        double te = e->eq_len ? e->eq[e->eq_head].end : SIM_INF;
        double tf = e->f_running ? e->f_end : SIM_INF;
        int evict_first = e->eq_len > 0 && (!e->f_running || !(te > tf));

        if (UMADV_MIN(te, tf) > until) /* NaN compares false: processed, no stall */
            return;
        if (evict_first) {
            complete_evict(e);
            umadv__sim_try_start_fetch(e, te);
        } else {
            complete_fetch(e);
            umadv__sim_try_start_fetch(e, tf);
        }
    }
}


void umadv__sim_lru_touch(sim_engine_t *e, uint32_t x)
{
    lru_unlink(e, x);
    lru_push_head(e, x);
}

uint32_t umadv__sim_lru_victim(const sim_engine_t *e, uint32_t after)
{
    uint32_t v = after == SIM_NIL ? e->lru_tail : e->lru_prev[after];

    while (v != SIM_NIL && e->stamp[v] == e->cur_stamp)
        v = e->lru_prev[v];
    return v;
}
