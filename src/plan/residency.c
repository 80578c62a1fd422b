/*
 * The planner's residency policy: which sections are on the GPU at each
 * step, decided at step granularity without timing (plan.c's opening
 * comment has the algorithm and why it is built this way).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "plan/plan_int.h"
#include "plan/victimq.h"

#define NEVER32 UINT32_MAX

/* Victim tiers (choose_victim). */
enum { TIER_EFFICIENT, TIER_SMALL, TIER_SHARED, TIERS };

typedef struct res_state {
    const umadv_window_t *w;
    const umadv_trace_t  *trace;
    uint64_t  budget;
    uint32_t  n;
    int       cyclic;
    umadv_touches_t touches;
    size_t   *touch_off;    /* n + 1 offsets into touch_sec / touch_next */
    uint32_t *touch_sec;    /* sections touched by each step */
    uint32_t *touch_next;   /* their next use, a step in (j, j + n], or NEVER32 */
    const uint8_t *remote;  /* per touch: served over the link (host
                             * placement), or NULL for none */
    uint64_t *remote_after; /* per section: absolute time of the step after
                             * its last remote touch; 0 = none yet */
    uint8_t  *res;          /* per section: resident */
    uint8_t  *fresh;        /* per section: allocated, never touched since */
    uint8_t  *cls;          /* per section: removal costs nothing (read-mostly) */
    uint8_t  *tier;         /* per section: TIER_SMALL, its allocation is too
                             * small to move efficiently; TIER_SHARED, it shares
                             * its pages (see choose_victim) */
    uint64_t *last_use;     /* per section: absolute time of the last touch */
    double    evict_bw;     /* bytes/s an eviction runs at; 0: time-blind (choose_victim) */
    uint32_t  slack;        /* the rule's (victim_in_time) */
    int       queued;       /* the rule's: issued_bytes counted, rooms recorded */
    double   *cum;          /* n + 1 prefix sums of the steps' durations, seconds */
    uint64_t *issued_at;    /* per step (t % n): the absolute time t of the bytes in
                             * issued_bytes, evictions issued then (leaves_late) */
    uint64_t *issued_bytes;
    uint64_t  room_for;     /* absolute step whose room make_room makes now;
                             * UINT64_MAX outside it (depart) */
    uint64_t  occ;          /* bytes resident */
    umadv_victimq_t q[TIERS]; /* resident sections not in use, per tier */
} res_state_t;

static uint64_t section_size(const res_state_t *st, uint32_t x)
{
    return st->trace->sections[x].size;
}

static umadv_status_t collect_touches(res_state_t *st)
{
    umadv_status_t status = umadv__touches_init(&st->touches, st->w);

    if (status != UMADV_OK)
        return status;
    st->touch_off = st->touches.off;
    st->touch_sec = st->touches.sec;
    st->touch_next = malloc((st->touches.count ? st->touches.count : 1) *
                            sizeof(*st->touch_next));
    return st->touch_next == NULL ? UMADV_ERR_NO_MEMORY : UMADV_OK;
}

static int is_remote(const res_state_t *st, size_t k)
{
    return st->remote != NULL && st->remote[k];
}

/* A use after the allocation's death inside the window is a use of other
 * data (a new instance, or data back on the host): the section is dead
 * for the policy until then. */
static uint32_t apply_death(const res_state_t *st, uint32_t x, uint32_t next)
{
    uint32_t death = st->w->death[st->trace->sections[x].alloc];

    if (next == NEVER32 || death == UMADV_STEP_NONE)
        return next;
    return next > death ? NEVER32 : next;
}

/* Next uses by a backward sweep, twice around the window when cyclic so
 * that the last uses see the first ones of the next replay. A section
 * whose next touch is remote must be off the GPU by then whatever the
 * policy does: keeping it costs room and saves nothing, as for dead data. */
static umadv_status_t compute_next_uses(res_state_t *st)
{
    uint32_t *seen = malloc((st->trace->nsections ? st->trace->nsections : 1) * sizeof(*seen));
    uint32_t laps = st->cyclic ? 2 : 1;

    if (seen == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t x = 0; x < st->trace->nsections; x++)
        seen[x] = NEVER32;
    for (uint32_t lap = laps; lap-- > 0;) {
        for (uint32_t j = st->n; j-- > 0;) {
            for (size_t k = st->touch_off[j]; k < st->touch_off[j + 1]; k++) {
                uint32_t x = st->touch_sec[k];
                if (lap == 0)
                    st->touch_next[k] = apply_death(st, x, seen[x]);
                seen[x] = is_remote(st, k) ? NEVER32 : lap * st->n + j;
            }
        }
    }
    free(seen);
    return UMADV_OK;
}

/* What the policy times victims with: the steps' durations as prefix
 * sums and @rule (WHEN THE EVICTION CAN START), with the per-step counts
 * of evictions issued; a trace without durations (all 0) or no rule
 * leaves the policy time-blind. */
static umadv_status_t timing_init(res_state_t *st, const umadv_victim_rule_t *rule)
{
    double evict_bw = rule != NULL ? rule->evict_bw : 0;

    st->cum = malloc(((size_t)st->n + 1) * sizeof(*st->cum));
    if (st->cum == NULL)
        return UMADV_ERR_NO_MEMORY;
    st->cum[0] = 0;
    for (uint32_t j = 0; j < st->n; j++)
        st->cum[j + 1] = st->cum[j] + umadv__window_step_seconds(st->w, j);
    st->evict_bw = st->cum[st->n] > 0 && evict_bw > 0 ? evict_bw : 0;
    st->slack    = rule != NULL && rule->slack > 0 ? rule->slack : 1;
    st->queued   = st->evict_bw > 0 && rule->queued;
    if (!st->queued)
        return UMADV_OK;
    st->issued_at = malloc(((size_t)st->n + 1) * sizeof(*st->issued_at));
    st->issued_bytes = calloc((size_t)st->n + 1, sizeof(*st->issued_bytes));
    if (st->issued_at == NULL || st->issued_bytes == NULL)
        return UMADV_ERR_NO_MEMORY;
    memset(st->issued_at, 0xff, ((size_t)st->n + 1) * sizeof(*st->issued_at));
    return UMADV_OK;
}

static umadv_status_t state_init(res_state_t *st, const umadv_window_t *w, uint64_t budget,
                                 int read_mostly, int cyclic, uint64_t small_bytes,
                                 const umadv_victim_rule_t *rule, const uint8_t *remote)
{
    const umadv_trace_t *trace = w->trace;
    size_t ns = trace->nsections ? trace->nsections : 1;
    umadv_status_t status;

    memset(st, 0, sizeof(*st));
    st->room_for = UINT64_MAX;
    st->w = w;
    st->trace = trace;
    st->budget = budget;
    st->n = w->n;
    st->cyclic = cyclic;
    st->remote = remote;
    st->remote_after = calloc(ns, sizeof(*st->remote_after));
    st->res = calloc(ns, 1);
    st->fresh = calloc(ns, 1);
    st->cls = calloc(ns, 1);
    st->tier = calloc(ns, 1);
    st->last_use = calloc(ns, sizeof(*st->last_use));
    if (st->res == NULL || st->fresh == NULL || st->cls == NULL || st->tier == NULL ||
        st->last_use == NULL || st->remote_after == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t x = 0; x < trace->nsections; x++) {
        uint32_t a = trace->sections[x].alloc;
        st->fresh[x] = w->life[a] == UMADV_LIFE_TRANSIENT || w->life[a] == UMADV_LIFE_BORN;
        st->cls[x] = read_mostly && !w->written[a];
        st->tier[x] = !umadv__trace_alloc_owns_pages(trace, a) ? TIER_SHARED
                      : trace->allocs[a].size < small_bytes ? TIER_SMALL
                                                            : TIER_EFFICIENT;
    }
    for (int i = 0; i < TIERS; i++) {
        status = umadv__victimq_init(&st->q[i], trace->nsections, w->n + 1);
        if (status != UMADV_OK)
            return status;
    }
    status = collect_touches(st);
    if (status == UMADV_OK)
        status = timing_init(st, rule);
    if (status != UMADV_OK)
        return status;
    return compute_next_uses(st);
}

static void state_cleanup(res_state_t *st)
{
    for (int i = 0; i < TIERS; i++)
        umadv__victimq_cleanup(&st->q[i]);
    umadv__touches_cleanup(&st->touches);
    free(st->touch_next);
    free(st->remote_after);
    free(st->res);
    free(st->fresh);
    free(st->cls);
    free(st->tier);
    free(st->last_use);
    free(st->cum);
    free(st->issued_at);
    free(st->issued_bytes);
}

static umadv_status_t record(umadv_residency_t *res, uint32_t x, int64_t eff, uint32_t last_use,
                             umadv_res_kind_t kind, int fresh)
{
    umadv_res_event_t *ev;
    umadv_status_t status = umadv__array_reserve((void **)&res->events, &res->events_cap,
                                                 res->nevents + 1, sizeof(*res->events));

    if (status != UMADV_OK)
        return status;
    ev = &res->events[res->nevents++];
    ev->section  = x;
    ev->eff      = (int32_t)eff;
    ev->last_use = last_use;
    ev->kind     = (uint8_t)kind;
    ev->fresh    = (uint8_t)fresh;
    ev->host_end = INT32_MIN;
    ev->room     = UMADV_STEP_NONE;
    return UMADV_OK;
}

/* Bytes of the evictions issued at absolute time @t so far (the rule's
 * queue count; a slot holds one time, the latest: a victim's last use is
 * at most a window before the room it makes). */
static uint64_t issued_bytes(const res_state_t *st, uint64_t t)
{
    return st->issued_at[t % st->n] == t ? st->issued_bytes[t % st->n] : 0;
}

/* Section @x's eviction is issued right after its last use. */
static void issue(res_state_t *st, uint32_t x)
{
    uint64_t t = st->last_use[x] + 1;

    st->issued_bytes[t % st->n] = issued_bytes(st, t) + section_size(st, x);
    st->issued_at[t % st->n] = t;
}

static umadv_status_t depart(res_state_t *st, umadv_residency_t *res, uint32_t x,
                             umadv_res_kind_t kind, int64_t eff, uint64_t base)
{
    uint64_t size = section_size(st, x);
    int64_t last = (int64_t)st->last_use[x] - (int64_t)base;
    umadv_status_t status;

    st->res[x] = 0;
    st->occ -= size;
    if (kind == UMADV_RES_EVICT && st->queued)
        issue(st, x);
    if (kind == UMADV_RES_EVICT)
        res->stats.evict_bytes += size;
    else
        res->stats.drop_bytes += size;
    status = record(res, x, eff, (uint32_t)((last + st->n) % st->n), kind, 0);
    if (status == UMADV_OK && st->queued && st->room_for != UINT64_MAX)
        res->events[res->nevents - 1].room = (uint32_t)((st->room_for - base) % st->n);
    return status;
}

static umadv_status_t arrive(res_state_t *st, umadv_residency_t *res, uint32_t x, int64_t eff,
                             uint64_t base)
{
    uint64_t size = section_size(st, x);
    int fresh = st->fresh[x];
    int64_t host_end = (int64_t)st->remote_after[x] - (int64_t)base;
    umadv_status_t status;

    st->res[x] = 1;
    st->fresh[x] = 0;
    st->occ += size;
    res->stats.loads++;
    if (fresh)
        res->stats.fresh_bytes += size;
    else
        res->stats.fetch_bytes += size;
    status = record(res, x, eff, 0, UMADV_RES_ARRIVE, fresh);
    /* over a replay ago, it no longer bounds anything (timing.c) */
    if (status == UMADV_OK && st->remote_after[x] != 0 && host_end > -(int64_t)st->n)
        res->events[res->nevents - 1].host_end = (int32_t)host_end;
    return status;
}

static void q_remove(res_state_t *st, uint32_t x)
{
    umadv__victimq_remove(&st->q[st->tier[x]], x);
}

/* Seconds of compute from the start of absolute time @t (base + step). */
static double time_at(const res_state_t *st, uint64_t t)
{
    return (double)(t / st->n) * st->cum[st->n] + st->cum[t % st->n];
}

/* Whether section @x's eviction, issued right after its last use (TIMING)
 * behind those issued there before it (when the rule counts them),
 * cannot have freed @room_s seconds' worth of bytes by step @now: the
 * step would wait for it. */
static int leaves_late(const res_state_t *st, uint32_t x, uint64_t now, double room_s)
{
    uint64_t queued = st->queued ? issued_bytes(st, st->last_use[x] + 1) : 0;
    double queued_s = (double)queued / st->evict_bw;

    return time_at(st, now) - time_at(st, st->last_use[x] + 1) < room_s + queued_s;
}

/*
 * WHEN THE EVICTION CAN START. Belady picks the farthest next use, blind
 * to time: a victim used by the step before must leave while the step
 * that needs its room waits; one idle since long ago has left by then
 * (TIMING issues an eviction right after the last use). At equal next
 * use the queue already prefers the one used least recently; the rule
 * (umadv_victim_rule_t) widens "equal" to "within 1/slack": where
 * Belady's pick would leave too late for the room and a candidate next
 * in its order, next used at most 1/slack of the distance sooner, would
 * not, that one goes. The rest of a late candidate's list (same next
 * use, used no earlier) is late too and skipped: a 392 MiB weight's 196
 * sections used to fill the scan. Two rules, and the planner simulates
 * both and keeps the faster (plan.c, REFINE):
 *  - near Belady: a tenth. VGG-16 at save_on_cpu's peak with its
 *    gradients dying at the wrap (UMADV_PROFILE_TAIL): fc6's weight, used
 *    at step 111, went for step 112's room (11 ms waited) before fc6's
 *    momentum, idle since the last optimizer step and next used at 270
 *    against 284: 72.4 to 66.5 ms simulated. Half the distance also moved
 *    plans that Belady had right (ResNet-50 at batch 256 and 75%, +1.9%).
 *  - in time: a half, and a victim is late also by the bytes already
 *    issued at its step ahead of it (issued_bytes: all evictions issued
 *    there leave in one queue, which each small room passed alone), and
 *    a step's evictions queue in the order of the rooms they make
 *    (umadv_res_event_t.room). On the same VGG-16 trace at save_on_cpu's
 *    peak (H200, 2026-11-28): 56.97 ms near Belady, 52.59 in time (51.78
 *    with the gradients thought live).
 * Without durations or a rate (umadv__plan_residency_linear, the exact
 * tests) the policy is Belady's.
 */
#define TIMED_VICTIM_SCAN  256

static uint32_t victim_in_time(res_state_t *st, uint32_t v, uint64_t room, uint64_t now)
{
    const umadv_victimq_t *q = &st->q[st->tier[v]];
    double room_s = st->evict_bw > 0 ? (double)room / st->evict_bw : 0;
    uint64_t far = q->key[v] == UMADV_VICTIMQ_NEVER ? UMADV_VICTIMQ_NEVER : q->key[v] - now;
    uint32_t c = v;

    if (room_s <= 0 || far == UMADV_VICTIMQ_NEVER || !leaves_late(st, v, now, room_s))
        return v;
    for (int i = 0; i < TIMED_VICTIM_SCAN; i++) {
        /* c leaves late: so do the rest of its list, used no earlier */
        c = umadv__victimq_below_list(q, c, now);
        if (c == UMADV_VICTIMQ_NIL || q->key[c] - now < far - far / st->slack)
            return v;
        if (!leaves_late(st, c, now, room_s))
            return c;
    }
    return v;
}

/*
 * The next victim when @need more bytes must go: the farthest next use
 * (Belady), except that a section of a small allocation (TIER_SMALL:
 * moving it costs a call's latency for a few bytes, eviction and refetch
 * alike) goes before an efficient one only if it alone completes the
 * room. Otherwise the policy would spend a call per kilobyte on parameter
 * buffers whose next use happens to be far. A section of a block that
 * shares its pages (TIER_SHARED: trace.h) goes last of all: moving it
 * moves its neighbours' bytes on those pages, and they fault when next
 * used (VGG-16 at a quarter of its footprint faulted 100-180 fault groups
 * an iteration in the one section of its biases and momenta, H100). With
 * one tier it is Belady.
 */
static uint32_t choose_victim(res_state_t *st, uint64_t need, uint64_t now)
{
    const umadv_victimq_t *q0 = &st->q[TIER_EFFICIENT], *q1 = &st->q[TIER_SMALL];
    uint32_t v0 = umadv__victimq_peek_max(q0, now), v1 = umadv__victimq_peek_max(q1, now);

    if (v0 == UMADV_VICTIMQ_NIL && v1 == UMADV_VICTIMQ_NIL)
        return umadv__victimq_peek_max(&st->q[TIER_SHARED], now);
    if (v1 == UMADV_VICTIMQ_NIL)
        return v0;
    if (v0 == UMADV_VICTIMQ_NIL)
        return v1;
    if (q1->key[v1] > q0->key[v0] && section_size(st, v1) >= need)
        return v1;
    if (q1->key[v1] == q0->key[v0] && st->cls[v1] > st->cls[v0])
        return v1;
    return v0;
}

/* Make room for @missing bytes; each victim is evicted right after its
 * last use (the eff recorded), not now. */
static umadv_status_t make_room(res_state_t *st, umadv_residency_t *res, uint64_t missing,
                                uint64_t now, uint64_t base)
{
    while (st->occ + missing > st->budget) {
        uint64_t room = st->occ + missing - st->budget;
        uint32_t v = choose_victim(st, room, now);
        umadv_status_t status;

        if (v != UMADV_VICTIMQ_NIL)
            v = victim_in_time(st, v, room, now);

        if (v == UMADV_VICTIMQ_NIL) {
            umadv_error("planner: no section left to evict at step %u (internal error)",
                        st->w->first + (uint32_t)(now - base));
            return UMADV_ERR_STATE;
        }
        q_remove(st, v);
        st->room_for = now;
        status = depart(st, res, v, st->cls[v] ? UMADV_RES_DROP : UMADV_RES_EVICT,
                        (int64_t)st->last_use[v] + 1 - (int64_t)base, base);
        st->room_for = UINT64_MAX;
        if (status != UMADV_OK)
            return status;
    }
    return UMADV_OK;
}

static umadv_status_t free_allocs(res_state_t *st, umadv_residency_t *res, uint32_t j,
                                  uint64_t base)
{
    const umadv_window_t *w = st->w;
    const uint32_t *freed = umadv__keyed_values(&w->freed, j);

    for (uint32_t i = 0; i < umadv__keyed_count(&w->freed, j); i++) {
        const umadv_trace_alloc_t *alloc = &st->trace->allocs[freed[i]];
        int transient = w->life[freed[i]] == UMADV_LIFE_TRANSIENT;

        for (uint32_t x = alloc->first_section; x < alloc->first_section + alloc->nsections; x++) {
            if (st->res[x]) {
                umadv_status_t status;
                q_remove(st, x);
                status = depart(st, res, x, UMADV_RES_FREE, (int64_t)j + 1, base);
                if (status != UMADV_OK)
                    return status;
            }
            st->fresh[x] = (uint8_t)transient;
        }
    }
    return UMADV_OK;
}

/* Section @x leaves the GPU right after its last use: dropped if it is
 * read-mostly (the host copy is current), evicted otherwise. */
static umadv_status_t leave_after_last_use(res_state_t *st, umadv_residency_t *res,
                                           uint32_t x, uint64_t base)
{
    q_remove(st, x);
    return depart(st, res, x, st->cls[x] ? UMADV_RES_DROP : UMADV_RES_EVICT,
                  (int64_t)st->last_use[x] + 1 - (int64_t)base, base);
}
/* BORN allocations leave at the end of the window, data copied to the
 * host (where the next replay's FREED role finds it). The eviction is
 * issued after the last use, as any other. */
static umadv_status_t hand_over(res_state_t *st, umadv_residency_t *res, uint64_t base)
{
    const umadv_window_t *w = st->w;

    for (uint32_t i = 0; i < w->ncarried; i++) {
        const umadv_trace_alloc_t *alloc = &st->trace->allocs[w->carried[i]];

        for (uint32_t x = alloc->first_section; x < alloc->first_section + alloc->nsections; x++) {
            if (st->res[x]) {
                umadv_status_t status = leave_after_last_use(st, res, x, base);
                if (status != UMADV_OK)
                    return status;
            }
            st->fresh[x] = 1;
        }
    }
    return UMADV_OK;
}

/*
 * The step's remote touches: the section must be on the host when the
 * step runs, so one still resident leaves after its last use on the GPU
 * (its next use said NEVER, so it normally went already). What the step
 * writes there lives on the host: a later load copies it.
 */
static umadv_status_t remote_touches(res_state_t *st, umadv_residency_t *res, uint64_t base,
                                     uint32_t j)
{
    for (size_t k = st->touch_off[j]; k < st->touch_off[j + 1]; k++) {
        uint32_t x = st->touch_sec[k];

        if (!is_remote(st, k))
            continue;
        if (st->res[x]) {
            umadv_status_t status = leave_after_last_use(st, res, x, base);
            if (status != UMADV_OK)
                return status;
        }
        st->fresh[x] = 0;
        st->remote_after[x] = base + j + 1;
        res->stats.remote_bytes += section_size(st, x);
    }
    return UMADV_OK;
}

static umadv_status_t run_step(res_state_t *st, umadv_residency_t *res, uint64_t base, uint32_t j)
{
    size_t k0 = st->touch_off[j], k1 = st->touch_off[j + 1];
    uint64_t now = base + j, missing = 0;
    umadv_status_t status = remote_touches(st, res, base, j);

    if (status != UMADV_OK)
        return status;
    /* The step's own sections leave the victim queue while it runs. */
    for (size_t k = k0; k < k1; k++) {
        uint32_t x = st->touch_sec[k];
        if (is_remote(st, k))
            continue;
        if (st->res[x])
            q_remove(st, x);
        else
            missing += section_size(st, x);
    }
    status = make_room(st, res, missing, now, base);
    for (size_t k = k0; k < k1 && status == UMADV_OK; k++) {
        if (!is_remote(st, k) && !st->res[st->touch_sec[k]])
            status = arrive(st, res, st->touch_sec[k], j, base);
    }
    if (status != UMADV_OK)
        return status;
    res->stats.peak = UMADV_MAX(res->stats.peak, st->occ);
    for (size_t k = k0; k < k1; k++) {
        uint32_t x = st->touch_sec[k], next = st->touch_next[k];
        if (is_remote(st, k))
            continue;
        st->last_use[x] = now;
        umadv__victimq_insert(&st->q[st->tier[x]], x,
                              next == NEVER32 ? UMADV_VICTIMQ_NEVER : base + next, st->cls[x]);
    }
    status = free_allocs(st, res, j, base);
    if (status == UMADV_OK && st->cyclic && j == st->n - 1)
        status = hand_over(st, res, base);
    return status;
}

/* The last window step touching each section on the GPU (NEVER32 if none). */
static uint32_t *last_touches(const res_state_t *st)
{
    uint32_t *last = malloc((st->trace->nsections ? st->trace->nsections : 1) * sizeof(*last));

    if (last == NULL)
        return NULL;
    for (uint32_t x = 0; x < st->trace->nsections; x++)
        last[x] = NEVER32;
    for (uint32_t j = 0; j < st->n; j++) {
        for (size_t k = st->touch_off[j]; k < st->touch_off[j + 1]; k++) {
            if (!is_remote(st, k))
                last[st->touch_sec[k]] = j;
        }
    }
    return last;
}

/* Bytes a pass from @start to @end costs once closed (see close_pass). */
static uint64_t closed_cost(const res_state_t *st, const umadv_residency_t *pass,
                            const uint8_t *end)
{
    uint64_t cost = pass->stats.fetch_bytes + pass->stats.evict_bytes;

    for (uint32_t x = 0; x < st->trace->nsections; x++) {
        if (pass->start[x] != end[x] && !(end[x] && st->cls[x]))
            cost += section_size(st, x);
    }
    return cost;
}

/* Per section, the index of its first event in @res, or SIZE_MAX. */
static size_t *first_events(const res_state_t *st, const umadv_residency_t *res)
{
    size_t *first = malloc((st->trace->nsections ? st->trace->nsections : 1) * sizeof(*first));

    if (first == NULL)
        return NULL;
    for (uint32_t x = 0; x < st->trace->nsections; x++)
        first[x] = SIZE_MAX;
    for (size_t e = res->nevents; e-- > 0;)
        first[res->events[e].section] = e;
    return first;
}

/* Whether section @x, resident when the pass began and gone at its end,
 * left at or before the wrap: its first event (@first) is a departure
 * effective at step 0 or earlier, right after a last use in the replay
 * before. The pass never used it resident from its start, and a reload
 * for the next replay would put that departure after the reload in time
 * but before it in the cycle (a random trace of 11 steps: arrivals at 0
 * (the reload) and 9, departures at 10 and 10: an internal error in
 * timing). It leaves the start set instead (drop_start). */
static int left_at_wrap(const umadv_residency_t *res, const size_t *first, uint32_t x)
{
    const umadv_res_event_t *ev = first[x] != SIZE_MAX ? &res->events[first[x]] : NULL;

    return ev != NULL && ev->kind != UMADV_RES_ARRIVE && ev->eff <= 0;
}

/* Take section @x's departure at the wrap out of @res (marked in @gone,
 * compacted by close_pass) and @x out of the start set. */
static void drop_start(const res_state_t *st, umadv_residency_t *res, const size_t *first,
                       uint8_t *gone, uint32_t x)
{
    const umadv_res_event_t *ev = &res->events[first[x]];
    uint64_t size = section_size(st, x);

    if (ev->kind == UMADV_RES_EVICT)
        res->stats.evict_bytes -= size;
    else
        res->stats.drop_bytes -= size;
    gone[first[x]] = 1;
    res->start[x] = 0;
}

/* Remove the events marked in @gone[0 .. @marked); those after stay. */
static void compact_events(umadv_residency_t *res, const uint8_t *gone, size_t marked)
{
    size_t kept = 0;

    for (size_t e = 0; e < res->nevents; e++) {
        if (e >= marked || !gone[e])
            res->events[kept++] = res->events[e];
    }
    res->nevents = kept;
}

/*
 * The state did not repeat: make a pass periodic by reloading, for the
 * next replay, what it started with and lost, and evicting, after its
 * last use, what it gained. Correct, if not always the best. Sections
 * resident at a wrap were touched in the pass before it, so their last
 * use is their last touch in the window. A section that left at the wrap
 * is no reload: it leaves the start set (left_at_wrap).
 */
static umadv_status_t close_pass(res_state_t *st, umadv_residency_t *res, const uint8_t *end)
{
    uint32_t *last = last_touches(st);
    size_t *first = first_events(st, res);
    size_t marked = res->nevents;
    uint8_t *gone = calloc(marked ? marked : 1, 1);
    umadv_status_t status =
        last == NULL || first == NULL || gone == NULL ? UMADV_ERR_NO_MEMORY : UMADV_OK;

    for (uint32_t x = 0; x < st->trace->nsections && status == UMADV_OK; x++) {
        uint64_t size = section_size(st, x);
        if (res->start[x] && !end[x] && left_at_wrap(res, first, x)) {
            drop_start(st, res, first, gone, x);
        } else if (res->start[x] && !end[x]) {
            res->stats.fetch_bytes += size;
            res->stats.loads++;
            status = record(res, x, st->n, 0, UMADV_RES_ARRIVE, 0);
        } else if (!res->start[x] && end[x] && last[x] != NEVER32) {
            if (st->cls[x])
                res->stats.drop_bytes += size;
            else
                res->stats.evict_bytes += size;
            status = record(res, x, (int64_t)last[x] + 1, last[x],
                            st->cls[x] ? UMADV_RES_DROP : UMADV_RES_EVICT, 0);
        }
    }
    if (status == UMADV_OK)
        compact_events(res, gone, marked);
    free(gone);
    free(first);
    free(last);
    return status;
}

static void swap_passes(umadv_residency_t *a, umadv_residency_t *b)
{
    umadv_residency_t tmp = *a;

    *a = *b;
    *b = tmp;
}

/*
 * Replay the window until the state at the wrap repeats. Two passes are
 * kept, the last one and the one before it: when the state oscillates,
 * the cheaper of the two once closed is the schedule.
 */
static umadv_status_t run_passes(res_state_t *st, umadv_residency_t *res,
                                 umadv_residency_t *prev, uint32_t max_passes)
{
    size_t ns = st->trace->nsections;

    for (uint32_t p = 0;; p++) {
        uint64_t base = (uint64_t)p * st->n;
        umadv_status_t status;

        swap_passes(res, prev);
        memcpy(res->start, st->res, ns);
        res->nevents = 0;
        memset(&res->stats, 0, sizeof(res->stats));
        for (uint32_t j = 0; j < st->n; j++) {
            status = run_step(st, res, base, j);
            if (status != UMADV_OK)
                return status;
        }
        res->passes = p + 1;
        if (!st->cyclic || memcmp(res->start, st->res, ns) == 0) {
            res->converged = 1;
            return UMADV_OK;
        }
        if (res->passes >= max_passes)
            break;
    }
    res->converged = 0;
    if (res->passes >= 2 && closed_cost(st, prev, res->start) < closed_cost(st, res, st->res)) {
        umadv_status_t status = close_pass(st, prev, res->start);
        prev->passes = res->passes;
        prev->converged = 0;
        swap_passes(res, prev);
        return status;
    }
    return close_pass(st, res, st->res);
}

umadv_status_t umadv__residency_run(const umadv_window_t *window, uint64_t budget,
                                    int read_mostly, int cyclic, uint32_t max_passes,
                                    uint64_t small_bytes, const umadv_victim_rule_t *rule,
                                    const uint8_t *remote, umadv_residency_t *res)
{
    size_t ns = window->trace->nsections ? window->trace->nsections : 1;
    umadv_residency_t prev;
    res_state_t st;
    umadv_status_t status;

    memset(res, 0, sizeof(*res));
    memset(&prev, 0, sizeof(prev));
    memset(&st, 0, sizeof(st));
    res->start = calloc(ns, 1);
    prev.start = calloc(ns, 1);
    status = res->start == NULL || prev.start == NULL
                 ? UMADV_ERR_NO_MEMORY
                 : state_init(&st, window, budget, read_mostly, cyclic, small_bytes, rule,
                              remote);
    if (status == UMADV_OK)
        status = run_passes(&st, res, &prev, max_passes ? max_passes : 1);
    state_cleanup(&st);
    umadv__residency_cleanup(&prev);
    if (status != UMADV_OK)
        umadv__residency_cleanup(res);
    return status;
}

static void events_of(void *arg, umadv_keyed_pass_t *pass)
{
    const umadv_residency_t *res = arg;

    for (size_t e = 0; e < res->nevents; e++)
        umadv__keyed_emit(pass, res->events[e].section, (uint32_t)e);
}

umadv_status_t umadv__residency_by_section(const umadv_residency_t *res, uint32_t nsections,
                                           umadv_keyed_t *by_section)
{
    return umadv__keyed_build(by_section, nsections, events_of, (void *)res);
}

void umadv__residency_cleanup(umadv_residency_t *res)
{
    free(res->events);
    free(res->start);
    memset(res, 0, sizeof(*res));
}
