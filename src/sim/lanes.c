/*
 * The simulator's transfer lanes (sim.c's opening comment describes the
 * model). What may move, when and where is the replay core's (fetch
 * verdicts, batches, section states: schedule/core.h); the lanes add
 * only time: one call at a time on each, at the link model's cost.
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
    return umadv__core_section(&e->core, alloc, index);
}

static int counting(const sim_engine_t *e, double now)
{
    return e->measuring && now >= e->t0;
}

/* ------------------------------------------------------------ sharing */

/* A staged copy's bandwidth when the link model has no staged figure,
 * or the params override it (sim.h). */
static double stage_bw(const sim_engine_t *e)
{
    return e->params->stage_bw > 0 ? e->params->stage_bw : SIM_STAGE_BW_DEFAULT;
}

/* The link model's staged figures count unless the params override them
 * (sim.h, stage_bw: tests pin the rate). */
static int stage_measured(const sim_engine_t *e, int evict)
{
    return e->params->stage_bw <= 0 && (evict ? umadv__link_stage_evict_known(&e->link)
                                              : umadv__link_stage_restore_known(&e->link));
}

/* The share of its own rate a lane keeps while the other lane runs too
 * (trace.h: duplex figures); 1 when the model says they overlap fully. */
static double duplex_share(double duplex_bw, double bw)
{
    double share = duplex_bw / bw;

    return share > 0 && share < 1 ? share : 1;
}

/* A running transfer's end, as its rate goes from @from to @to of its own
 * at @now: the work left is kept. */
static double rescale_end(double end, double now, double from, double to)
{
    return end > now ? now + (end - now) * from / to : end;
}

/* Whether both lanes run changes when a transfer starts or ends: the
 * running ends are rescaled to the rates that hold from @now. Called
 * after every start (whose end was computed at the full rate) and every
 * completion. */
static void lanes_share(sim_engine_t *e, double now)
{
    /* a migration and a staged copy do not share a path: each channel
     * has its own duplex figures, for both lanes in it at once */
    int both = e->f_running && e->eq_len > 0, fs = both && e->f_cur.d.staged,
        es = both && e->eq[e->eq_head].d.staged;
    double fr = 1, er = 1;

    if (both && !fs && !es) {
        fr = duplex_share(e->link.duplex_fetch_bw, e->link.fetch_bw);
        er = duplex_share(e->link.duplex_evict_bw, e->link.evict_bw);
    } else if (fs && es && stage_measured(e, 1) && stage_measured(e, 0)) {
        fr = duplex_share(e->link.stage_duplex_restore_bw, e->link.stage_restore_bw);
        er = duplex_share(e->link.stage_duplex_evict_bw, e->link.stage_evict_bw);
    }

    if (e->f_running && e->f_rate != fr)
        e->f_end = rescale_end(e->f_end, now, e->f_rate, fr);
    if (e->eq_len > 0 && e->e_rate != er)
        e->eq[e->eq_head].end = rescale_end(e->eq[e->eq_head].end, now, e->e_rate, er);
    e->f_rate = fr;
    e->e_rate = er;
}

/* ------------------------------------------------------------ fetch lane */

static int fq_less(const sim_lane_op_t *a, const sim_lane_op_t *b)
{
    return a->d.need != b->d.need ? a->d.need < b->d.need : a->id < b->id;
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

/* The op leaves the queue: its sections stop waiting for it. */
static void fetch_unpend(sim_engine_t *e, const sim_lane_op_t *op)
{
    for (uint32_t i = 0; i < op->d.count; i++) {
        uint32_t x = section_id(e, op->d.alloc, op->d.first + i);
        if (e->pending[x] == op->id)
            e->pending[x] = 0;
    }
}

/* A staged eviction of @bytes (copies out, then a discard that copies
 * nothing): the probe's figures, else the built-in rate with the UVM
 * eviction's call latency. */
static double stage_out_time(const sim_engine_t *e, uint64_t bytes)
{
    if (stage_measured(e, 1))
        return umadv__link_time(e->link.stage_evict_latency, e->link.stage_evict_bw, bytes);
    return e->link.evict_latency + (double)bytes / stage_bw(e);
}

/* @op's HOST sections start moving to the GPU: the bytes it copies by
 * migration; *restore_p, those it restores from staging (stage_bw);
 * *call_p, whether anything needs a call. A fresh section whose pages a
 * freed block left on the GPU is counted in without one (the executor's
 * fresh_present_settle). */
static uint64_t fetch_claim(sim_engine_t *e, const sim_lane_op_t *op, uint32_t owner,
                            uint64_t *restore_p, int *call_p)
{
    uint64_t copy = 0;

    *restore_p = 0;
    *call_p = 0;
    fetch_unpend(e, op);
    for (uint32_t i = 0; i < op->d.count; i++) {
        uint32_t x = section_id(e, op->d.alloc, op->d.first + i);
        if (e->core.state[x] != UMADV_SEC_HOST)
            continue;
        if (e->fresh[x] && !e->core.staged[x] && umadv__sim_pages_on_gpu(e, x)) {
            e->fresh[x] = 0;
            umadv__core_set_state(&e->core, x, UMADV_SEC_RESIDENT);
            continue;
        }
        umadv__core_set_state(&e->core, x, UMADV_SEC_FETCHING);
        e->owner[x] = owner;
        *call_p = 1;
        if (e->core.staged[x])
            *restore_p += umadv__sim_section_size(e, x);
        else if (!e->fresh[x])
            copy += umadv__sim_section_size(e, x);
    }
    return copy;
}

/* The time @copy migrated bytes and @restore restored ones add to a
 * call, @share of a call's latency (a batch's ranges: half); counted in
 * the measured replay. With the probe's restore figures a restore is a
 * call of its own (exec/stage.c: discard-and-prefetch, then the copies
 * back), and a call that only restores makes no migration call. */
static double fetch_time(sim_engine_t *e, double share, uint64_t copy, uint64_t restore,
                         int count)
{
    double migrate = umadv__link_time(share * e->link.fetch_latency, e->link.fetch_bw, copy);

    if (count) {
        e->r.fetched_bytes += copy;
        e->r.restored_bytes += restore;
    }
    if (restore == 0 || !stage_measured(e, 0))
        return migrate + (double)restore / stage_bw(e);
    return (copy > 0 ? migrate : 0) + umadv__link_time(share * e->link.stage_restore_latency,
                                                       e->link.stage_restore_bw, restore);
}

static int fb_add(sim_engine_t *e, const sim_lane_op_t *op)
{
    if (umadv__array_reserve((void **)&e->fb, &e->fb_cap, e->fb_len + 1, sizeof(*e->fb)) !=
        UMADV_OK)
        return 0;
    e->fb[e->fb_len++] = *op;
    return 1;
}

/* Whether @op rides in the running call: the core's rule, and a copy
 * (the executor only batches what copies). */
static int batch_joins(const sim_engine_t *e, const sim_lane_op_t *op)
{
    uint64_t add;

    return umadv__core_fetch_verdict(&e->core, &op->d, &add) == UMADV_FETCH_GO &&
           umadv__core_batch_joins(&e->core, &op->d, e->f_cur.d.need, add);
}

/* The queued fetches of the head's need step join its call where the core
 * says so; the rest go back to the queue. Returns the time they add:
 * half a latency per range and their bytes (schedule.h, BATCHES). */
static double fetch_batch(sim_engine_t *e)
{
    size_t nset = 0;
    double total = 0;

    while (e->fq_len > 0 && e->fq[0].d.need == e->f_cur.d.need &&
           umadv__array_reserve((void **)&e->fset, &e->fset_cap, nset + 1,
                                sizeof(*e->fset)) == UMADV_OK) {
        e->fset[nset++] = e->fq[0];
        fq_pop(e);
    }
    for (size_t i = 0; i < nset; i++) {
        const sim_lane_op_t *op = &e->fset[i];
        uint64_t copy, restore;
        int call;

        if (!batch_joins(e, op) || !fb_add(e, op)) {
            if (fq_push(e, op) != UMADV_OK)
                fetch_unpend(e, op); /* out of memory: forgotten, the step faults */
            continue;
        }
        copy = fetch_claim(e, op, e->f_cur.id, &restore, &call);
        if (call)
            total += fetch_time(e, 0.5, copy, restore, counting(e, e->f_cur.start));
    }
    return total;
}

/* Start the head's call at @now, with its batch. */
static void fetch_start(sim_engine_t *e, const sim_lane_op_t *head, double now)
{
    uint64_t copy, restore;
    int call;

    e->f_cur = *head;
    e->f_cur.start = now;
    e->f_running = 1;
    e->fb_len = 0;
    fb_add(e, head);
    copy = fetch_claim(e, head, head->id, &restore, &call);
    e->f_end = now + (call ? fetch_time(e, 1, copy, restore, counting(e, now)) : 0) +
               fetch_batch(e);
    e->f_rate = 1;
    lanes_share(e, now);
}

/* Serve the earliest-needed queued fetch as the core's verdict says; the
 * lane serves one call at a time and never skips a head that waits
 * (which would take memory the head is waiting for). */
void umadv__sim_try_start_fetch(sim_engine_t *e, double now)
{
    while (!e->f_running && !e->f_hold && !e->f_defer && e->fq_len > 0) {
        sim_lane_op_t op = e->fq[0];
        uint64_t add;

        switch (umadv__core_fetch_verdict(&e->core, &op.d, &add)) {
        case UMADV_FETCH_WAIT:
            return;
        case UMADV_FETCH_SKIP:
            fq_pop(e);
            fetch_unpend(e, &op);
            continue;
        case UMADV_FETCH_GO:
            fq_pop(e);
            fetch_start(e, &op, now);
            return;
        }
    }
}

/* ------------------------------------------------------------ the step's own fetches */

static int fq_cmp(const void *a, const void *b)
{
    return fq_less(a, b) ? -1 : fq_less(b, a) ? 1 : 0;
}

/* @op's HOST sections land now, populated on the step's stream: the
 * calls it takes (runs of adjacent HOST sections, as the executor's
 * pieces; none for a run whose pages a freed block left on the GPU, as
 * the executor's populate_on_stream). */
static uint32_t populate(sim_engine_t *e, const sim_lane_op_t *op)
{
    uint32_t calls = 0;
    int in_run = 0, run_calls = 0;

    for (uint32_t i = 0; i <= op->d.count; i++) {
        uint32_t x = i < op->d.count ? section_id(e, op->d.alloc, op->d.first + i) : 0;
        int moves = i < op->d.count && e->core.state[x] == UMADV_SEC_HOST;

        if (in_run && !moves)
            calls += (uint32_t)run_calls; /* a run ends: one call, if any page lacked */
        if (!in_run && moves)
            run_calls = 0;
        in_run = moves;
        if (!moves)
            continue;
        run_calls |= !umadv__sim_pages_on_gpu(e, x);
        umadv__core_set_state(&e->core, x, UMADV_SEC_RESIDENT);
        umadv__sim_pages_note(e, x, 1);
        e->fresh[x] = 0;
    }
    return calls;
}

/* One population call: a prefetch of memory never touched, which copies
 * nothing. The probe's restore call (a discard-and-prefetch that
 * repopulates the range, then the copy back) is the nearest measured
 * figure and an upper bound on it: 15-20 us on an H100, where the
 * executor's timeline shows populations at 15 us a call. The UVM fetch's
 * latency, the fallback without the staged figures, is a migration's
 * (68-102 us): it made the simulator overcharge a GPT-2 iteration's 619
 * populations 58 ms. */
static double populate_latency(const sim_engine_t *e)
{
    return umadv__link_stage_restore_known(&e->link) ? e->link.stage_restore_latency
                                                      : e->link.fetch_latency;
}

double umadv__sim_step_serves(sim_engine_t *e)
{
    size_t nset = 0, i = 0;
    uint32_t calls = 0;

    /* the queued fetches the step needs, in the executor's order */
    while (i < e->fq_len) {
        if (e->fq[i].d.need > e->cur_need ||
            umadv__array_reserve((void **)&e->fset, &e->fset_cap, nset + 1,
                                 sizeof(*e->fset)) != UMADV_OK) {
            i++;
            continue;
        }
        e->fset[nset++] = e->fq[i];
        e->fq[i] = e->fq[--e->fq_len];
    }
    for (size_t k = e->fq_len / 2 + 1; k-- > 0;)
        fq_sift_down(e, k);
    if (nset > 1) /* none may mean no array: qsort(NULL) is UB */
        qsort(e->fset, nset, sizeof(*e->fset), fq_cmp);
    for (size_t k = 0; k < nset; k++) {
        const sim_lane_op_t *op = &e->fset[k];
        umadv_step_serve_t serve = umadv__core_step_serves(&e->core, &op->d);

        if (serve == UMADV_STEP_SERVE_NO) {
            if (fq_push(e, op) != UMADV_OK)
                fetch_unpend(e, op); /* out of memory: forgotten, the step faults */
            continue;
        }
        fetch_unpend(e, op);
        if (serve == UMADV_STEP_SERVE_POPULATE)
            calls += populate(e, op);
    }
    return calls * populate_latency(e);
}

static void complete_run(sim_engine_t *e, const sim_lane_op_t *op, uint32_t owner)
{
    for (uint32_t i = 0; i < op->d.count; i++) {
        uint32_t x = section_id(e, op->d.alloc, op->d.first + i);
        if (e->core.state[x] != UMADV_SEC_FETCHING || e->owner[x] != owner)
            continue;
        e->fresh[x] = 0;
        umadv__core_set_state(&e->core, x, e->dead[x] ? UMADV_SEC_HOST : UMADV_SEC_RESIDENT);
        umadv__sim_pages_note(e, x, 1); /* dead or not, the call left them there */
        if (e->dead[x])
            umadv__core_unstage(&e->core, x); /* a restore of dead data */
        e->dead[x] = 0;
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

void umadv__sim_enqueue_fetch(sim_engine_t *e, const umadv_core_op_t *d, double now)
{
    sim_lane_op_t op = {.d = *d, .step = e->cur_step, .queued = now};

    op.id = e->next_id++;
    for (uint32_t i = 0; i < d->count; i++) {
        uint32_t x = section_id(e, d->alloc, d->first + i);
        if (e->core.state[x] == UMADV_SEC_HOST || e->core.state[x] == UMADV_SEC_EVICTING ||
            e->core.state[x] == UMADV_SEC_OUT_QUEUED)
            e->pending[x] = op.id;
    }
    if (fq_push(e, &op) != UMADV_OK)
        fetch_unpend(e, &op); /* out of memory: forgotten, the step faults */
    umadv__sim_try_start_fetch(e, now);
}

/* ------------------------------------------------------------ eviction lane */

static sim_lane_op_t *eq_head(sim_engine_t *e)
{
    return e->eq_len ? &e->eq[e->eq_head] : NULL;
}

/* The head starts at @now: its sections still decided out leave (a step
 * that used one again has called it off); it takes latency + bytes /
 * bandwidth, or nothing when nothing is left to move. */
static void evict_start(sim_engine_t *e, sim_lane_op_t *op, double now)
{
    uint64_t bytes = 0;

    for (uint32_t i = 0; i < op->d.count; i++) {
        uint32_t x = section_id(e, op->d.alloc, op->d.first + i);
        if (e->core.state[x] != UMADV_SEC_OUT_QUEUED)
            continue;
        umadv__core_set_state(&e->core, x, UMADV_SEC_EVICTING);
        e->owner[x] = op->id;
        bytes += umadv__sim_section_size(e, x);
    }
    if (op->measured)
        *(op->d.clean || op->d.dead ? &e->r.dropped_bytes
                      : op->d.staged ? &e->r.staged_bytes : &e->r.evicted_bytes) += bytes;
    op->start = now;
    if (op->d.staged)
        op->end = !bytes ? now : now + stage_out_time(e, bytes);
    else if (op->d.dead) /* a discard: the staged channel's call, nothing copied */
        op->end = !bytes ? now : now + stage_out_time(e, 0);
    else
        op->end = !bytes ? now : now + umadv__link_time(e->link.evict_latency,
                                                        e->link.evict_bw,
                                                        op->d.clean ? 0 : bytes);
    e->e_rate = 1; /* computed alone: lanes_share rescales it */
    lanes_share(e, now);
}

static void eq_pop(sim_engine_t *e)
{
    e->eq_head++;
    e->eq_len--;
    if (e->eq_len == 0)
        e->eq_head = 0;
}

void umadv__sim_enqueue_evict(sim_engine_t *e, const umadv_core_op_t *d, double now)
{
    sim_lane_op_t op = {.d = *d, .step = e->cur_step, .queued = now, .measured = e->measuring};

    if (e->eq_head > 0 && e->eq_head + e->eq_len == e->eq_cap) {
        /* keep the FIFO from creeping through memory */
        memmove(e->eq, e->eq + e->eq_head, e->eq_len * sizeof(*e->eq));
        e->eq_head = 0;
    }
    op.id = e->next_id++;
    if (umadv__array_reserve((void **)&e->eq, &e->eq_cap, e->eq_head + e->eq_len + 1,
                             sizeof(*e->eq)) != UMADV_OK) {
        /* no memory to queue it: the data stays, as the executor's does */
        for (uint32_t i = 0; i < d->count; i++) {
            uint32_t x = section_id(e, d->alloc, d->first + i);
            if (e->core.state[x] == UMADV_SEC_OUT_QUEUED)
                umadv__core_set_state(&e->core, x, UMADV_SEC_RESIDENT);
        }
        return;
    }
    e->eq[e->eq_head + e->eq_len++] = op;
    if (e->eq_len == 1)
        evict_start(e, eq_head(e), now);
}

static void complete_evict(sim_engine_t *e, double now)
{
    const sim_lane_op_t *op = eq_head(e);

    for (uint32_t i = 0; i < op->d.count; i++) {
        uint32_t x = section_id(e, op->d.alloc, op->d.first + i);
        if (e->core.state[x] == UMADV_SEC_EVICTING && e->owner[x] == op->id) {
            umadv__core_set_state(&e->core, x, UMADV_SEC_HOST);
            umadv__sim_pages_note(e, x, 0);
        }
    }
    eq_pop(e);
    if (e->eq_len > 0)
        evict_start(e, eq_head(e), now);
}

int umadv__sim_evictions_block(const sim_engine_t *e, uint64_t need)
{
    for (size_t i = e->eq_head; i < e->eq_head + e->eq_len; i++) {
        if (e->eq[i].d.blocking && e->eq[i].d.need <= need)
            return 1;
    }
    return 0;
}

/* PREFERRED_HOST (with its ACCESSED_BY, which the model does not tell
 * apart) places the run on the host; NONE takes it back. Advice moves no
 * data: a run on the GPU stays there until evicted. */
void umadv__sim_advise(sim_engine_t *e, umadv_advice_t advice, uint32_t alloc, uint32_t first,
                       uint32_t count)
{
    uint8_t placed;

    if (advice == UMADV_ADVICE_PREFERRED_HOST)
        placed = 1;
    else if (advice == UMADV_ADVICE_NONE)
        placed = 0;
    else
        return;
    for (uint32_t i = 0; i < count; i++)
        e->placed[section_id(e, alloc, first + i)] = placed;
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
            complete_evict(e, te);
            lanes_share(e, te);
            umadv__sim_try_start_fetch(e, te);
        } else {
            complete_fetch(e);
            lanes_share(e, tf);
            umadv__sim_try_start_fetch(e, tf);
        }
    }
}
