/*
 * The simulator's engine: the compute lane, step by step, over the
 * memory and transfer lanes of lanes.c (sim.c's opening comment has the
 * model).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "sim/sim_int.h"

#define SIM_INF INFINITY


/* ------------------------------------------------------------ lifetimes */

/* The data of @x is gone (freed, or a new instance): release it without a
 * copy; a fetch in flight lands and is released then. */
static void forget(sim_engine_t *e, uint32_t x)
{
    uint8_t state = e->core.state[x];

    e->pending[x] = 0;
    if (state == UMADV_SEC_HOST)
        umadv__core_unstage(&e->core, x); /* its staging is dead too */
    if (state == UMADV_SEC_RESIDENT) {
        umadv__core_set_state(&e->core, x, UMADV_SEC_HOST);
        if (e->measuring)
            e->r.dropped_bytes += umadv__sim_section_size(e, x);
    } else if (state == UMADV_SEC_FETCHING) {
        e->dead[x] = 1;
    }
}

/* ---- the pages record: the trace's addresses ---------------------------- */

/* Noted where the executor notes its own (a lane's or a step's fetch or
 * population done, a lane's eviction done), never for faults or the
 * driver's evictions under them, which the executor does not see: the
 * record is what the executor would believe. */

/* Section @x's address, or 0 where its allocation has none (synthetic
 * traces give every allocation base 0: umadv-trace(5)). */
static uintptr_t section_addr(const sim_engine_t *e, uint32_t x)
{
    const umadv_trace_section_t *sec = &e->trace->sections[x];
    uint64_t base = e->trace->allocs[sec->alloc].base;

    return base != 0 ? (uintptr_t)(base + sec->offset) : 0;
}

void umadv__sim_pages_note(sim_engine_t *e, uint32_t x, int on_gpu)
{
    uintptr_t addr = section_addr(e, x);

    if (addr != 0)
        umadv__pages_note(&e->pages, addr, e->trace->sections[x].size, on_gpu);
}

int umadv__sim_pages_on_gpu(const sim_engine_t *e, uint32_t x)
{
    uintptr_t addr = section_addr(e, x);

    return addr != 0 && umadv__pages_on_gpu(&e->pages, addr, e->trace->sections[x].size);
}

/* Births and frees. A TRANSIENT or BORN allocation is fresh until
 * touched (its first fetch counts it in without a call where a freed one
 * left its pages on the GPU: lanes.c); a FREED one's role is next played
 * by data on the host. Not modelled: the executor's blocks bound over
 * such pages start resident under the policies but a budgeted plan
 * (exec.c, left_on_gpu); starting them so here made demand and
 * prefetch-all thrash (GPT-2 b8 at save_on_cpu's peak: prefetch-all 528
 * ms simulated, 81.5 measured on 2026-11-28), a difference from the
 * executor not understood yet. */
static void lifetime_events(sim_engine_t *e, const umadv_keyed_t *lives, uint32_t j, double now)
{
    const uint32_t *list = umadv__keyed_values(lives, j);

    for (uint32_t i = 0; i < umadv__keyed_count(lives, j); i++) {
        const umadv_trace_alloc_t *alloc = &e->trace->allocs[list[i]];
        int fresh = e->w->life[list[i]] != UMADV_LIFE_FREED;

        for (uint32_t x = alloc->first_section; x < alloc->first_section + alloc->nsections; x++) {
            forget(e, x);
            e->fresh[x] = (uint8_t)fresh;
        }
    }
    umadv__sim_try_start_fetch(e, now);
}

/* ------------------------------------------------------------ steps */

static umadv_status_t collect_touches(sim_engine_t *e, uint32_t j, size_t *count_p)
{
    uint32_t nacc;
    const umadv_trace_access_t *acc = umadv__window_accesses(e->w, j, &nacc);
    size_t count = 0;
    umadv_status_t status;

    for (uint32_t i = 0; i < nacc; i++)
        count += acc[i].count;
    status = umadv__array_reserve((void **)&e->touch, &e->touch_cap, count ? count : 1,
                                  sizeof(*e->touch));
    if (status != UMADV_OK)
        return status;
    count = 0;
    for (uint32_t i = 0; i < nacc; i++) {
        for (uint32_t c = 0; c < acc[i].count; c++)
            e->touch[count++] = umadv__core_section(&e->core, acc[i].alloc, acc[i].first + c);
    }
    *count_p = count;
    return UMADV_OK;
}

/* On the GPU (an eviction decided but not started has not moved it), or
 * will never arrive by itself (not queued, not moving). A host-placed
 * section being evicted is used where it is: a mapped page is accessed
 * wherever it lies. */
static int settled(const sim_engine_t *e, uint32_t x)
{
    uint8_t state = e->core.state[x];

    return state == UMADV_SEC_RESIDENT || state == UMADV_SEC_OUT_QUEUED ||
           (state == UMADV_SEC_HOST && e->pending[x] == 0) ||
           (e->placed[x] && state == UMADV_SEC_EVICTING);
}

/* Off the GPU, advised to the host: the step reads and writes it there. */
static int is_remote(const sim_engine_t *e, uint32_t x)
{
    return e->placed[x] && e->core.state[x] == UMADV_SEC_HOST;
}

/* The step's accesses over the link: bytes / remote_bw in its own time
 * (remote access stalls the kernel); what it writes lives on the host. */
static double remote_access(sim_engine_t *e, size_t count, uint32_t *remote_p)
{
    uint64_t bytes = 0;
    uint32_t n = 0;

    for (size_t i = 0; i < count; i++) {
        uint32_t x = e->touch[i];
        if (!is_remote(e, x))
            continue;
        e->pending[x] = 0;
        e->fresh[x] = 0;
        bytes += umadv__sim_section_size(e, x);
        n++;
    }
    *remote_p = n;
    if (bytes == 0)
        return 0;
    if (e->measuring) {
        e->r.remote_bytes += bytes;
        e->r.remote_s += (double)bytes / e->link.remote_bw;
    }
    return (double)bytes / e->link.remote_bw;
}

const char *umadv__sim_wait_name(umadv_sim_wait_t wait)
{
    static const char *const names[] = {"transfer", "lane", "memory", "eviction", "populate",
                                        "host"};

    return (unsigned)wait < UMADV_ARRAY_SIZE(names) ? names[wait] : "?";
}

/* Why the step waits for @x until the next lane event (sim.h). */
static umadv_sim_wait_t wait_cause(const sim_engine_t *e, uint32_t x)
{
    if (e->core.state[x] == UMADV_SEC_EVICTING || e->core.state[x] == UMADV_SEC_OUT_QUEUED)
        return UMADV_SIM_WAIT_EVICTION;
    if (e->core.state[x] == UMADV_SEC_FETCHING)
        return UMADV_SIM_WAIT_TRANSFER;
    if (e->f_running)
        return e->f_cur.d.need <= e->cur_need ? UMADV_SIM_WAIT_TRANSFER : UMADV_SIM_WAIT_LANE;
    return UMADV_SIM_WAIT_MEMORY;
}

/* UMADV_LOG=trace: what held the lanes during a piece of the wait, so
 * that a stall can be followed back to the step that issued the
 * transfer in its way. */
static void trace_wait(const sim_engine_t *e, umadv_sim_wait_t cause, double from, double to)
{
    const sim_lane_op_t *op = cause == UMADV_SIM_WAIT_LANE ? &e->f_cur
                              : e->eq_len ? &e->eq[e->eq_head] : NULL;

    if (!e->measuring || e->params->quiet || op == NULL || cause == UMADV_SIM_WAIT_TRANSFER)
        return;
    umadv_trace("sim:   %.3f ms %s: %s of allocation %u [%u+%u] issued at step %u, "
                "queued %.3f ms, running %.3f ms", (to - from) * 1e3,
                umadv__sim_wait_name(cause),
                cause == UMADV_SIM_WAIT_LANE ? "fetch" : "eviction", op->d.alloc, op->d.first,
                op->d.count, e->w->first + op->step, (op->start - op->queued) * 1e3,
                (to - op->start) * 1e3);
}

static void log_waits(const sim_engine_t *e, uint32_t j)
{
    const char *name = e->trace->steps[e->w->first + j].name;
    double total = 0;

    for (int c = 0; c < UMADV_SIM_WAIT_COUNT; c++)
        total += e->wait[c];
    if (!e->measuring || e->params->quiet || total <= 0)
        return;
    umadv_debug("sim: step %u (%s) waits %.3f ms: transfer %.3f, lane %.3f, memory %.3f, "
                "eviction %.3f, populate %.3f", e->w->first + j, name ? name : "?", total * 1e3,
                e->wait[UMADV_SIM_WAIT_TRANSFER] * 1e3, e->wait[UMADV_SIM_WAIT_LANE] * 1e3,
                e->wait[UMADV_SIM_WAIT_MEMORY] * 1e3, e->wait[UMADV_SIM_WAIT_EVICTION] * 1e3,
                e->wait[UMADV_SIM_WAIT_POPULATE] * 1e3);
}

/* Wait for the step's data in flight, charging each piece of the wait to
 * its cause. With nothing left in flight that could bring the data (a
 * fetch blocked for memory that no running eviction frees), stop
 * waiting: the step faults it. */
/* Advance to the next lane event, charging the wait to @cause. */
static double wait_event(sim_engine_t *e, umadv_sim_wait_t cause, double now)
{
    double tn = umadv__sim_next_event(e); /* may be INF: an absurd link, still an event */

    if (tn > now) {
        e->wait[cause] += tn - now;
        trace_wait(e, cause, now, tn);
    }
    umadv__sim_advance(e, tn);
    return UMADV_MAX(now, tn);
}

static double wait_ready(sim_engine_t *e, size_t count, double now)
{
    size_t i = 0;

    /* demand: the room its faults need is being made */
    while (umadv__sim_evictions_block(e, e->cur_need) && umadv__sim_lanes_busy(e))
        now = wait_event(e, UMADV_SIM_WAIT_MEMORY, now);
    while (i < count) {
        if (settled(e, e->touch[i])) {
            i++;
            continue;
        }
        if (!umadv__sim_lanes_busy(e))
            break;
        now = wait_event(e, wait_cause(e, e->touch[i]), now);
    }
    return now;
}

static void add_evict_cost(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t n, void *arg)
{
    double *cost = arg;

    *cost += umadv__link_time(e->link.evict_latency, e->link.evict_bw,
                              umadv__trace_run_bytes(e->trace, alloc, first, n));
}

/* Room for @need more bytes, evicting least recently used sections (the
 * core's order) in the step's own time (what the driver does in its fault
 * path). Returns the eviction time, or a negative value if no room can be
 * made. */
static double make_room_sync(sim_engine_t *e, uint64_t need, double *now_p)
{
    double cost = 0;

    e->f_hold = 1;
    while (!umadv__core_fits(&e->core, need)) {
        size_t nv = 0;

        if (umadv__core_lru_victims(&e->core, e->core.resident + need - e->core.p.budget,
                                    &nv) != UMADV_OK)
            return -1;
        if (nv == 0) {
            if (!umadv__sim_lanes_busy(e))
                return -1;
            *now_p = UMADV_MAX(*now_p, umadv__sim_next_event(e));
            umadv__sim_advance(e, umadv__sim_next_event(e));
            continue;
        }
        for (size_t i = 0; i < nv; i++) {
            if (e->measuring)
                e->r.evicted_bytes += umadv__sim_section_size(e, e->core.victims[i]);
            umadv__core_set_state(&e->core, e->core.victims[i], UMADV_SEC_HOST);
        }
        umadv__sim_for_runs(e, e->core.victims, nv, add_evict_cost, &cost);
    }
    return cost;
}

/* Fault in what the step still misses. Returns the time the faults (and
 * the evictions they force) add to the step, or a negative value. */
static double fault_in(sim_engine_t *e, size_t count, double *now_p, uint32_t *faults_p)
{
    uint64_t need = 0, copy = 0;
    uint32_t faults = 0, fresh = 0;
    double evict_cost;

    for (size_t i = 0; i < count; i++) {
        uint32_t x = e->touch[i];
        uint8_t state = e->core.state[x];
        if (state == UMADV_SEC_RESIDENT || state == UMADV_SEC_OUT_QUEUED || is_remote(e, x) ||
            (e->placed[x] && state == UMADV_SEC_EVICTING))
            continue;
        e->pending[x] = 0;
        need += umadv__sim_section_size(e, x);
    }
    evict_cost = need ? make_room_sync(e, need, now_p) : 0;
    if (evict_cost < 0)
        return -1;
    for (size_t i = 0; i < count && need; i++) {
        uint32_t x = e->touch[i];
        if (e->core.state[x] != UMADV_SEC_HOST || e->placed[x])
            continue;
        faults++;
        if (e->fresh[x])
            fresh++;
        else
            copy += umadv__sim_section_size(e, x);
        e->fresh[x] = 0;
        umadv__core_set_state(&e->core, x, UMADV_SEC_RESIDENT);
    }
    e->f_hold = 0;
    umadv__sim_try_start_fetch(e, *now_p);
    if (e->measuring) {
        e->r.faults += faults;
        e->r.fault_bytes += copy;
    }
    *faults_p = faults;
    return evict_cost + (double)copy / e->link.fault_bw + fresh * e->link.fault_latency;
}

static void account_step(sim_engine_t *e, uint32_t j, double fault_s)
{
    if (!e->measuring)
        return;
    for (int c = 0; c < UMADV_SIM_WAIT_COUNT; c++)
        e->r.wait_s[c] += e->wait[c];
    e->r.fault_s += fault_s;
    log_waits(e, j);
}

static void observe(sim_engine_t *e, uint32_t j, double start, double end, uint32_t faults,
                    uint32_t remote)
{
    umadv_sim_step_view_t view;

    if (e->params->observer == NULL)
        return;
    view.replay  = e->replay;
    view.step    = e->w->first + j;
    view.start_s = start;
    view.end_s   = end;
    view.used    = e->core.resident;
    view.faults  = faults;
    view.remote  = remote;
    memcpy(view.wait_s, e->wait, sizeof(view.wait_s));
    view.state   = e->core.state;
    view.placed  = e->placed;
    e->params->observer(e->params->observer_arg, &view);
}

/* The step begins when the GPU has ended the one before and the
 * application has launched it (umadv__window_host_arrival): a later
 * launch is a wait for the host. The host is held up only by a wait for
 * the step's data; else it launched at its arrival, ahead of the GPU or
 * not. Returns when the step begins; *@arrive_p: the launch, unheld. */
static double host_begin(sim_engine_t *e, uint32_t j, double *arrive_p)
{
    *arrive_p = umadv__window_host_arrival(e->w, j, e->launched, e->t);
    e->wait[UMADV_SIM_WAIT_HOST] = *arrive_p > e->t ? *arrive_p - e->t : 0;
    return *arrive_p > e->t ? *arrive_p : e->t;
}

static umadv_status_t run_step(sim_engine_t *e, uint32_t j)
{
    const umadv_trace_step_t *step = &e->trace->steps[e->w->first + j];
    double now, begun, arrive, extra, remote_s;
    uint32_t faults = 0, remote = 0;
    size_t count;
    umadv_status_t status;

    e->cur_step = j;
    e->cur_need = (uint64_t)e->replay * e->w->n + j;
    memset(e->wait, 0, sizeof(e->wait));
    now = host_begin(e, j, &arrive);
    umadv__sim_advance(e, now);
    lifetime_events(e, &e->w->born, j, now);
    status = collect_touches(e, j, &count);
    if (status != UMADV_OK)
        return status;
    umadv__core_step_begin(&e->core, e->replay, j);
    /* the step's thread serves its own fetches before the lane wakes */
    e->f_hold = 1;
    umadv__sim_take_decisions(e, now);
    e->wait[UMADV_SIM_WAIT_POPULATE] = umadv__sim_step_serves(e);
    now += e->wait[UMADV_SIM_WAIT_POPULATE];
    e->f_hold = 0;
    umadv__sim_try_start_fetch(e, now);
    begun = now;
    now = wait_ready(e, count, now);
    e->launched = now > begun ? now : arrive; /* held up by its data, or not */
    remote_s = remote_access(e, count, &remote);
    extra = fault_in(e, count, &now, &faults);
    if (extra < 0) {
        umadv_error("simulator: no room for step %u's data (internal error)", e->w->first + j);
        return UMADV_ERR_STATE;
    }
    e->t = now + extra + remote_s + (double)step->duration_ns * 1e-9;
    account_step(e, j, extra);
    observe(e, j, now, e->t, faults, remote);
    umadv__sim_advance(e, e->t);
    umadv__core_step_end(&e->core);
    umadv__sim_take_decisions(e, e->t);
    lifetime_events(e, &e->w->freed, j, e->t);
    return UMADV_OK;
}

/* Whether @alloc may be staged: the params' list, else the trace's. */
static int alloc_stageable(const sim_engine_t *e, uint32_t alloc)
{
    if (e->params->stageable != NULL)
        return e->params->stageable[alloc] != 0;
    return umadv__trace_alloc_stageable(e->trace, alloc);
}

/* Every allocation is played (the model's lifetimes are its births and
 * frees), with the plan's setup advice; then the core decides the start,
 * as for the executor: the plan's resident set is fetched. */
static void start(sim_engine_t *e)
{
    /* as the executor: nothing is staged before an iteration begins */
    umadv__core_stage_pause(&e->core, 1);
    for (uint32_t a = 0; a < e->trace->nallocs; a++) {
        umadv__core_bind(&e->core, a);
        umadv__core_set_stageable(&e->core, a, alloc_stageable(e, a));
        umadv__sim_take_decisions(e, 0);
    }
    umadv__core_start(&e->core);
    umadv__sim_take_decisions(e, 0);
}

umadv_status_t umadv__sim_engine_run(sim_engine_t *e)
{
    start(e);
    for (uint32_t r = 0; r <= e->params->warmup; r++) {
        e->replay = r;
        umadv__core_stage_pause(&e->core, 0);
        if (r == e->params->warmup) {
            e->measuring = 1;
            e->t0 = e->t;
            e->dropped0 = e->core.dropped_bytes;
        }
        for (uint32_t j = 0; j < e->w->n; j++) {
            umadv_status_t status = run_step(e, j);
            if (status != UMADV_OK)
                return status;
        }
    }
    e->r.iteration_s = e->t - e->t0;
    /* the measured replay's evictions count when they start: let those
     * still queued start (what happens after its end is not timed) */
    e->measuring = 0;
    umadv__sim_advance(e, INFINITY);
    e->r.peak_resident = e->core.peak;
    e->r.dropped_bytes += e->core.dropped_bytes - e->dropped0;
    return UMADV_OK;
}

/* ------------------------------------------------------------ setup */

static umadv_status_t core_init(sim_engine_t *e)
{
    umadv_core_params_t cp = {.trace = e->trace, .first_step = e->w->first, .nsteps = e->w->n,
                              .policy = e->params->policy, .budget = e->params->budget,
                              .schedule = e->params->schedule, .link = &e->params->link,
                              .stage = e->params->stage, .fault_evictions = 1,
                              .observe = e->params->decisions,
                              .observe_arg = e->params->decisions_arg};

    return umadv__core_init(&e->core, &cp);
}

umadv_status_t umadv__sim_engine_init(sim_engine_t *e, const umadv_window_t *w,
                                      const umadv_sim_params_t *params)
{
    const umadv_trace_t *trace = w->trace;
    size_t ns = trace->nsections ? trace->nsections : 1;
    umadv_status_t status;

    memset(e, 0, sizeof(*e));
    e->trace = trace;
    e->w = w;
    e->params = params;
    e->link = params->link;
    e->next_id = 1;
    status = core_init(e);
    if (status != UMADV_OK)
        return status;
    e->fresh = calloc(ns, 1);
    e->dead = calloc(ns, 1);
    e->placed = calloc(ns, 1);
    e->owner = calloc(ns, sizeof(*e->owner));
    e->pending = calloc(ns, sizeof(*e->pending));
    if (e->fresh == NULL || e->dead == NULL || e->placed == NULL || e->owner == NULL ||
        e->pending == NULL) {
        umadv__sim_engine_cleanup(e);
        return UMADV_ERR_NO_MEMORY;
    }
    for (uint32_t x = 0; x < trace->nsections; x++) {
        uint8_t life = w->life[trace->sections[x].alloc];
        e->fresh[x] = life == UMADV_LIFE_TRANSIENT || life == UMADV_LIFE_BORN;
    }
    return UMADV_OK;
}

void umadv__sim_engine_cleanup(sim_engine_t *e)
{
    umadv__core_cleanup(&e->core);
    free(e->fresh);
    free(e->dead);
    free(e->placed);
    free(e->owner);
    free(e->pending);
    free(e->fq);
    free(e->fb);
    free(e->fset);
    free(e->eq);
    free(e->touch);
    umadv__pages_cleanup(&e->pages);
    memset(e, 0, sizeof(*e));
}

typedef struct sim_run_call {
    sim_engine_t *e;
    void (*fn)(sim_engine_t *e, uint32_t alloc, uint32_t first, uint32_t n, void *arg);
    void         *arg;
} sim_run_call_t;

static void sim_run(void *arg, uint32_t alloc, uint32_t first, uint32_t count)
{
    sim_run_call_t *c = arg;

    c->fn(c->e, alloc, first, count, c->arg);
}

size_t umadv__sim_for_runs(sim_engine_t *e, uint32_t *sections, size_t count,
                           void (*fn)(sim_engine_t *e, uint32_t alloc, uint32_t first,
                                      uint32_t n, void *arg),
                           void *arg)
{
    sim_run_call_t call = {e, fn, arg};

    return umadv__trace_for_runs(e->trace, sections, count, sim_run, &call);
}
