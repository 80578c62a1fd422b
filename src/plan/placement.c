/*
 * Host placement: which touches the GPU serves from host memory over the
 * link instead of moving the data there and back (plan.c's opening
 * comment, HOST PLACEMENT, has the model and the reasons).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "plan/plan_int.h"

/* Rounds of choose-then-replan: each replans residency with the touches
 * chosen so far, which frees room and changes what the others cost. */
#define PLACEMENT_ROUNDS 4

/* The estimate splits the iteration in up to two phases (pass_time). */
#define PHASES 2

/* One residency of one section in a pass: arrival to departure. */
typedef struct segment {
    uint32_t section;
    uint32_t alloc;
    int32_t  a, d;       /* arrival's eff, departure's eff (unrolled, d > a) */
    uint8_t  evict;      /* the departure copies data back */
    uint8_t  copy;       /* the arrival copies data in */
    uint8_t  eligible;   /* may be served from the host */
    uint32_t touches;    /* touches in [a, d) */
    uint32_t touches_b;  /* those of them in the second phase */
} segment_t;

/* Segments of adjacent sections of one allocation with the same bounds:
 * what one call moves, and what one choice places. Times in seconds. */
typedef struct candidate {
    size_t  first, count; /* into the segment array */
    double  evict_s;      /* eviction time the group costs (0: none) */
    double  fetch_s;      /* fetch time it costs (0: none) */
    double  remote_s;     /* time its touches take over the link */
    double  remote_b_s;   /* the part of it in the second phase */
    uint8_t evict_ph;     /* phase of the eviction's issue step */
    uint8_t fetch_ph;     /* phase of the fetch's need step */
} candidate_t;

typedef struct place_state {
    const umadv_window_t      *w;
    const umadv_plan_params_t *params;
    umadv_touches_t touches;
    size_t   *sec_off;    /* per section: its touches are sec_touch[sec_off[x] ..) */
    size_t   *sec_touch;  /* touch indices, in step order */
    uint8_t  *eligible;   /* per section */
    double    compute_s[PHASES]; /* the steps' durations, per phase */
    uint32_t  cut;        /* first step of the second phase (0: one phase) */
    uint32_t  phases;     /* 1: the estimate never cuts */
    double  (*load)[4];   /* per step, scratch for pass_time */
    segment_t   *segs;
    size_t       nsegs, segs_cap;
    candidate_t *cands;
    size_t       ncands, cands_cap;
} place_state_t;

/*
 * The iteration time the link model predicts: compute and remote access
 * serial on the compute lane; fetches and evictions each on their lane;
 * per phase, each phase as long as its busiest lane. One phase is
 * max(compute + remote, fetches, evictions), which assumes that any
 * transfer can overlap any compute. It cannot: the evictions of the
 * forward pass must free their room before the activations peak, and
 * the fetches that bring activations back happen in the backward pass,
 * when the eviction lane has nothing left to do. Two phases (pass_time)
 * see that: max(a1, b1) + max(a2, b2) is never below max(a1 + a2,
 * b1 + b2), and what it adds is the lane work that cannot hide behind
 * the other phase's compute.
 */
typedef struct estimate {
    double remote_s[PHASES], fetch_s[PHASES], evict_s[PHASES];
} estimate_t;

static double phase_time(double compute, double remote, double fetch, double evict)
{
    return UMADV_MAX(compute + remote, UMADV_MAX(fetch, evict));
}

static double estimate_time(const place_state_t *st, const estimate_t *e)
{
    double t = 0;

    for (int ph = 0; ph < PHASES; ph++)
        t += phase_time(st->compute_s[ph], e->remote_s[ph], e->fetch_s[ph], e->evict_s[ph]);
    return t;
}

static uint8_t phase_of(const place_state_t *st, int64_t step)
{
    int64_t n = st->w->n;

    return ((step % n) + n) % n >= (int64_t)st->cut;
}

/* ------------------------------------------------------------ setup */

/* Read-mostly data is dropped, not evicted, and its advice overrides a
 * preferred location: placing it would save nothing but fetches. */
static void mark_eligible(place_state_t *st)
{
    const umadv_trace_t *trace = st->w->trace;

    for (uint32_t x = 0; x < trace->nsections; x++) {
        uint32_t a = trace->sections[x].alloc;
        st->eligible[x] = !(st->params->read_mostly && !st->w->written[a]);
    }
}

/* The window's touches, and each section's in step order. */
static umadv_status_t index_sections(place_state_t *st)
{
    uint32_t ns = st->w->trace->nsections;
    const umadv_touches_t *t = &st->touches;
    umadv_status_t status = umadv__touches_init(&st->touches, st->w);

    if (status != UMADV_OK)
        return status;
    st->sec_off = calloc((size_t)ns + 1, sizeof(*st->sec_off));
    st->sec_touch = malloc((t->count ? t->count : 1) * sizeof(*st->sec_touch));
    if (st->sec_off == NULL || st->sec_touch == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (size_t k = 0; k < t->count; k++)
        st->sec_off[t->sec[k] + 1]++;
    for (uint32_t x = 0; x < ns; x++)
        st->sec_off[x + 1] += st->sec_off[x];
    for (size_t k = 0; k < t->count; k++)
        st->sec_touch[st->sec_off[t->sec[k]]++] = k;
    memmove(st->sec_off + 1, st->sec_off, (size_t)ns * sizeof(*st->sec_off));
    st->sec_off[0] = 0;
    return UMADV_OK;
}

/* Per-step work of a residency pass with @remote touches: compute,
 * remote access, and the fetches (at their need step) and evictions (at
 * their issue step, right after the last use) it moves, in bytes over
 * each lane's bandwidth. */
enum { LOAD_COMPUTE, LOAD_REMOTE, LOAD_FETCH, LOAD_EVICT, LOADS };

static void step_loads(const place_state_t *st, const umadv_residency_t *res,
                       const uint8_t *remote, double (*load)[LOADS])
{
    const umadv_trace_t *trace = st->w->trace;
    const umadv_link_model_t *link = &st->params->link;
    int64_t n = st->w->n;

    for (uint32_t j = 0; j < st->w->n; j++) {
        memset(load[j], 0, sizeof(load[j]));
        load[j][LOAD_COMPUTE] = umadv__window_step_seconds(st->w, j);
    }
    for (size_t k = 0; k < st->touches.count; k++) {
        if (remote[k])
            load[st->touches.step[k]][LOAD_REMOTE] +=
                (double)trace->sections[st->touches.sec[k]].size / link->remote_bw;
    }
    for (size_t e = 0; e < res->nevents; e++) {
        const umadv_res_event_t *ev = &res->events[e];
        double bytes = (double)trace->sections[ev->section].size;
        umadv_plan_channel_t ch = umadv__plan_channel(st->w, st->params,
                                                      trace->sections[ev->section].alloc);

        if (ev->kind == UMADV_RES_ARRIVE && !ev->fresh)
            load[((ev->eff % n) + n) % n][LOAD_FETCH] += bytes / ch.fetch_bw;
        else if (ev->kind == UMADV_RES_EVICT)
            load[(((ev->eff - 1) % n) + n) % n][LOAD_EVICT] += bytes / ch.evict_bw;
    }
}

static double loads_time(const double *a)
{
    return phase_time(a[LOAD_COMPUTE], a[LOAD_REMOTE], a[LOAD_FETCH], a[LOAD_EVICT]);
}

/*
 * The two-phase estimate of a pass (per-byte, without call latency) at
 * its most binding cut, the one that gives the largest time (for a DNN,
 * near the turn from forward to backward); prefix sums make each cut
 * O(1). Returns the time, the cut into *cut_p.
 */
static double pass_time(const place_state_t *st, const umadv_residency_t *res,
                        const uint8_t *remote, double (*load)[LOADS], uint32_t *cut_p)
{
    double total[LOADS] = {0}, pre[LOADS] = {0}, post[LOADS], best = -1;

    step_loads(st, res, remote, load);
    for (uint32_t j = 0; j < st->w->n; j++)
        for (int k = 0; k < LOADS; k++)
            total[k] += load[j][k];
    for (uint32_t c = 0; c < (st->phases > 1 ? st->w->n : 1); c++) {
        double t;
        for (int k = 0; k < LOADS; k++)
            post[k] = total[k] - pre[k];
        t = loads_time(pre) + loads_time(post);
        if (t > best) {
            best = t;
            *cut_p = c;
        }
        for (int k = 0; k < LOADS; k++)
            pre[k] += load[c][k];
    }
    return best;
}

static void set_cut(place_state_t *st, uint32_t cut)
{
    st->cut = cut;
    st->compute_s[0] = st->compute_s[1] = 0;
    for (uint32_t j = 0; j < st->w->n; j++)
        st->compute_s[j >= cut] += umadv__window_step_seconds(st->w, j);
}

static umadv_status_t state_init(place_state_t *st, const umadv_window_t *w,
                                 const umadv_plan_params_t *params)
{
    umadv_status_t status;

    memset(st, 0, sizeof(*st));
    st->w = w;
    st->params = params;
    st->eligible = malloc(w->trace->nsections ? w->trace->nsections : 1);
    st->load = malloc((size_t)w->n * sizeof(*st->load));
    if (st->eligible == NULL || st->load == NULL)
        return UMADV_ERR_NO_MEMORY;
    mark_eligible(st);
    status = index_sections(st);
    return status;
}

static void state_cleanup(place_state_t *st)
{
    umadv__touches_cleanup(&st->touches);
    free(st->sec_off);
    free(st->sec_touch);
    free(st->eligible);
    free(st->load);
    free(st->segs);
    free(st->cands);
}

/* ------------------------------------------------------------ segments */

/* Position in x's touch list of its first touch at step >= @step. */
static size_t first_touch_from(const place_state_t *st, uint32_t x, uint32_t step)
{
    size_t lo = st->sec_off[x], hi = st->sec_off[x + 1];

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->touches.step[st->sec_touch[mid]] < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Call @fn on x's touches in the cyclic step range [a, d), a in [0, n),
 * d - a <= n; returns how many there are. */
static uint32_t for_touches(const place_state_t *st, uint32_t x, int32_t a, int32_t d,
                            uint8_t *mark, uint32_t *in_b)
{
    int64_t n = st->w->n;
    uint32_t count = 0;

    for (int lap = 0; lap < 2; lap++) {
        int64_t lo = lap ? 0 : a, hi = lap ? (int64_t)d - n : UMADV_MIN((int64_t)d, n);
        for (size_t i = first_touch_from(st, x, (uint32_t)lo); i < st->sec_off[x + 1]; i++) {
            size_t k = st->sec_touch[i];
            if ((int64_t)st->touches.step[k] >= hi)
                break;
            count++;
            if (mark != NULL)
                mark[k] = 1;
            if (in_b != NULL)
                *in_b += st->touches.step[k] >= st->cut;
        }
        if ((int64_t)d <= n)
            break;
    }
    return count;
}

static umadv_status_t add_segment(place_state_t *st, const umadv_res_event_t *arr,
                                  const umadv_res_event_t *dep, int32_t d)
{
    const umadv_trace_t *trace = st->w->trace;
    segment_t *sg;
    umadv_status_t status = umadv__array_reserve((void **)&st->segs, &st->segs_cap,
                                                 st->nsegs + 1, sizeof(*st->segs));

    if (status != UMADV_OK)
        return status;
    sg = &st->segs[st->nsegs++];
    sg->section  = arr->section;
    sg->alloc    = trace->sections[arr->section].alloc;
    sg->a        = arr->eff;
    sg->d        = d;
    sg->evict    = dep->kind == UMADV_RES_EVICT;
    sg->copy     = !arr->fresh;
    sg->eligible = st->eligible[arr->section];
    sg->touches_b = 0;
    sg->touches  = for_touches(st, arr->section, arr->eff, d, NULL, &sg->touches_b);
    return UMADV_OK;
}

/* Pair each arrival with the departure that ends it (the next event of
 * its section, cyclically), as timing.c does. A converged pass only. */
static umadv_status_t pair_segments(place_state_t *st, const umadv_residency_t *res,
                                    const umadv_keyed_t *ev)
{
    int32_t n = (int32_t)st->w->n;

    st->nsegs = 0;
    for (uint32_t x = 0; x < ev->nkeys; x++) {
        const uint32_t *idx = umadv__keyed_values(ev, x);
        uint32_t m = umadv__keyed_count(ev, x);

        for (uint32_t k = 0; k < m; k++) {
            const umadv_res_event_t *arr = &res->events[idx[k]];
            const umadv_res_event_t *dep = &res->events[idx[(k + 1) % m]];
            int32_t d = dep->eff + (k + 1 == m ? n : 0);
            umadv_status_t status;

            if (arr->kind != UMADV_RES_ARRIVE)
                continue;
            if (m < 2 || dep->kind == UMADV_RES_ARRIVE || arr->eff < 0 || arr->eff >= n ||
                d <= arr->eff || d - arr->eff > n)
                return UMADV_ERR_STATE;
            status = add_segment(st, arr, dep, d);
            if (status != UMADV_OK)
                return status;
        }
    }
    return UMADV_OK;
}

static umadv_status_t build_segments(place_state_t *st, const umadv_residency_t *res)
{
    umadv_keyed_t ev;
    umadv_status_t status = umadv__residency_by_section(res, st->w->trace->nsections, &ev);

    if (status == UMADV_OK)
        status = pair_segments(st, res, &ev);
    umadv__keyed_cleanup(&ev);
    return status;
}

static int segment_compare(const void *pa, const void *pb)
{
    const segment_t *a = pa, *b = pb;

    if (a->alloc != b->alloc)
        return a->alloc < b->alloc ? -1 : 1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    if (a->evict != b->evict || a->copy != b->copy)
        return (a->evict * 2 + a->copy) < (b->evict * 2 + b->copy) ? -1 : 1;
    return a->section < b->section ? -1 : a->section > b->section;
}

static int same_group(const segment_t *g, const segment_t *s, uint32_t count)
{
    return s->alloc == g->alloc && s->section == g->section + count && s->a == g->a &&
           s->d == g->d && s->evict == g->evict && s->copy == g->copy &&
           s->eligible == g->eligible;
}

static void cost_group(const place_state_t *st, candidate_t *c)
{
    const umadv_link_model_t *link = &st->params->link;
    const segment_t *g = &st->segs[c->first];
    umadv_plan_channel_t ch = umadv__plan_channel(st->w, st->params, g->alloc);
    uint64_t bytes = 0, touched = 0, touched_b = 0;

    for (size_t i = c->first; i < c->first + c->count; i++) {
        uint64_t size = st->w->trace->sections[st->segs[i].section].size;
        bytes += size;
        touched += size * st->segs[i].touches;
        touched_b += size * st->segs[i].touches_b;
    }
    c->evict_s = g->evict ? umadv__link_time(ch.evict_latency, ch.evict_bw, bytes) : 0;
    c->fetch_s = g->copy ? umadv__link_time(ch.fetch_latency, ch.fetch_bw, bytes) : 0;
    c->remote_s = (double)touched / link->remote_bw;
    c->remote_b_s = (double)touched_b / link->remote_bw;
    c->evict_ph = phase_of(st, (int64_t)g->d - 1);
    c->fetch_ph = phase_of(st, g->a);
}

/* Group the segments into calls; add up what the pass moves into @est
 * (remote_s untouched). */
static umadv_status_t build_candidates(place_state_t *st, estimate_t *est)
{
    if (st->nsegs > 1) /* no segments may mean no array: qsort(NULL) is UB */
        qsort(st->segs, st->nsegs, sizeof(*st->segs), segment_compare);
    st->ncands = 0;
    memset(est->fetch_s, 0, sizeof(est->fetch_s));
    memset(est->evict_s, 0, sizeof(est->evict_s));
    for (size_t i = 0, k; i < st->nsegs; i += k) {
        candidate_t *c;
        umadv_status_t status = umadv__array_reserve((void **)&st->cands, &st->cands_cap,
                                                     st->ncands + 1, sizeof(*st->cands));
        if (status != UMADV_OK)
            return status;
        for (k = 1; i + k < st->nsegs && same_group(&st->segs[i], &st->segs[i + k], k); k++)
            ;
        c = &st->cands[st->ncands++];
        c->first = i;
        c->count = k;
        cost_group(st, c);
        est->fetch_s[c->fetch_ph] += c->fetch_s;
        est->evict_s[c->evict_ph] += c->evict_s;
    }
    return UMADV_OK;
}

/* ------------------------------------------------------------ choice */

static double candidate_gain(const candidate_t *c)
{
    return (c->evict_s + c->fetch_s) / c->remote_s;
}

/* Most transfer time saved per second of remote access first; ties by
 * position, so that the choice is deterministic. */
static int candidate_compare(const void *pa, const void *pb)
{
    const candidate_t *a = pa, *b = pb;
    double ga = candidate_gain(a), gb = candidate_gain(b);

    if (ga != gb)
        return ga > gb ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Greedy: take each candidate, best gain first, that lowers the estimated
 * iteration time; mark its touches remote. Returns how many it took. */
static size_t choose(place_state_t *st, estimate_t *est, uint8_t *remote)
{
    size_t taken = 0, nc = 0;

    for (size_t i = 0; i < st->ncands; i++) {
        const candidate_t *c = &st->cands[i];
        if (st->segs[c->first].eligible && (c->evict_s > 0 || c->fetch_s > 0) &&
            c->remote_s > 0)
            st->cands[nc++] = *c;
    }
    if (nc > 1)
        qsort(st->cands, nc, sizeof(*st->cands), candidate_compare);
    for (size_t i = 0; i < nc; i++) {
        const candidate_t *c = &st->cands[i];
        estimate_t next = *est;

        next.remote_s[0] += c->remote_s - c->remote_b_s;
        next.remote_s[1] += c->remote_b_s;
        next.fetch_s[c->fetch_ph] -= c->fetch_s;
        next.evict_s[c->evict_ph] -= c->evict_s;
        if (!(estimate_time(st, &next) < estimate_time(st, est)))
            continue;
        *est = next;
        for (size_t s = c->first; s < c->first + c->count; s++)
            for_touches(st, st->segs[s].section, st->segs[s].a, st->segs[s].d, remote, NULL);
        taken++;
    }
    return taken;
}

/* Bytes of the remote touches; per phase into @phase_bytes if not NULL. */
static uint64_t remote_bytes(const place_state_t *st, const uint8_t *remote,
                             uint64_t *phase_bytes)
{
    uint64_t bytes[PHASES] = {0, 0};

    for (size_t k = 0; k < st->touches.count; k++) {
        if (remote[k])
            bytes[st->touches.step[k] >= st->cut] += st->w->trace->sections[st->touches.sec[k]].size;
    }
    if (phase_bytes != NULL)
        memcpy(phase_bytes, bytes, sizeof(bytes));
    return bytes[0] + bytes[1];
}

typedef struct rounds {
    uint8_t  *remote;   /* the touches chosen so far (kept rounds) */
    uint8_t  *trial;    /* the round being tried */
} rounds_t;

/* What @res moves, and the remote time of @remote, as an estimate; the
 * candidates of @res into st->cands. */
static umadv_status_t measure(place_state_t *st, rounds_t *r, const umadv_residency_t *res,
                              const uint8_t *remote, estimate_t *est)
{
    umadv_status_t status = build_segments(st, res);
    uint64_t phase_bytes[PHASES];

    if (status == UMADV_OK)
        status = build_candidates(st, est);
    remote_bytes(st, remote, phase_bytes);
    for (int ph = 0; ph < PHASES; ph++)
        est->remote_s[ph] = (double)phase_bytes[ph] / st->params->link.remote_bw;
    return status;
}

/* Replan residency with the trial marks; keep it if the estimate falls. */
static umadv_status_t try_round(place_state_t *st, uint64_t budget, uint32_t max_passes,
                                rounds_t *r, umadv_residency_t *res, double *best,
                                int *kept_p)
{
    const umadv_plan_params_t *p = st->params;
    umadv_victim_rule_t rule = umadv__plan_victim_rule(st->w, p);
    umadv_residency_t next;
    umadv_status_t status;

    *kept_p = 0;
    status = umadv__residency_run(st->w, budget, p->read_mostly, 1, max_passes,
                                  umadv__plan_small_bytes(&p->link), &rule, r->trial, &next);
    if (status != UMADV_OK)
        return status;
    if (next.converged) {
        estimate_t est;
        double t;
        status = measure(st, r, &next, r->trial, &est);
        t = estimate_time(st, &est);
        if (status == UMADV_OK && t < *best) {
            umadv_residency_t old = *res;
            *res = next;
            next = old;
            *best = t;
            memcpy(r->remote, r->trial, st->touches.count);
            *kept_p = 1;
        }
    }
    umadv__residency_cleanup(&next);
    return status == UMADV_ERR_STATE ? UMADV_OK : status;
}

/* Each round chooses on the candidates of the pass kept last (measure
 * left them in st->cands), replans, and keeps the new pass only if its
 * estimate is lower: placement never makes the estimate worse. */
static umadv_status_t run_rounds(place_state_t *st, uint64_t budget, uint32_t max_passes,
                                 rounds_t *r, umadv_residency_t *res)
{
    umadv_status_t status = UMADV_OK;
    uint32_t cut;

    pass_time(st, res, r->remote, st->load, &cut);
    for (int round = 0; round < PLACEMENT_ROUNDS && status == UMADV_OK; round++) {
        estimate_t trial;
        double best;
        int kept;

        set_cut(st, cut);
        status = measure(st, r, res, r->remote, &trial);
        if (status == UMADV_ERR_STATE)
            return UMADV_OK; /* timing reports it */
        best = estimate_time(st, &trial);
        memcpy(r->trial, r->remote, st->touches.count);
        if (status != UMADV_OK || choose(st, &trial, r->trial) == 0)
            break;
        status = try_round(st, budget, max_passes, r, res, &best, &kept);
        if (!kept)
            break;
        pass_time(st, res, r->remote, st->load, &cut);
    }
    return status;
}

static umadv_status_t rounds_init(rounds_t *r, const place_state_t *st)
{
    memset(r, 0, sizeof(*r));
    r->remote = calloc(st->touches.count ? st->touches.count : 1, 1);
    r->trial = calloc(st->touches.count ? st->touches.count : 1, 1);
    if (r->remote == NULL || r->trial == NULL)
        return UMADV_ERR_NO_MEMORY;
    return UMADV_OK;
}

static void rounds_cleanup(rounds_t *r)
{
    free(r->trial);
    free(r->remote);
}

static int worth_trying(const umadv_plan_params_t *params, const umadv_residency_t *res)
{
    double bw = params->link.remote_bw;

    return params->host_placement && res->converged && isfinite(bw) && bw > 0 &&
           (res->stats.evict_bytes > 0 || res->stats.fetch_bytes > 0);
}

umadv_status_t umadv__placement_run(const umadv_window_t *window,
                                    const umadv_plan_params_t *params, uint32_t phases,
                                    uint64_t budget, uint32_t max_passes,
                                    umadv_residency_t *res, umadv_placement_t *pl)
{
    place_state_t st;
    rounds_t r;
    umadv_status_t status;

    memset(pl, 0, sizeof(*pl));
    if (!worth_trying(params, res))
        return UMADV_OK;
    memset(&r, 0, sizeof(r));
    status = state_init(&st, window, params);
    st.phases = phases;
    if (status == UMADV_OK)
        status = rounds_init(&r, &st);
    if (status == UMADV_OK)
        status = run_rounds(&st, budget, max_passes, &r, res);
    if (status == UMADV_OK && (pl->remote_bytes = remote_bytes(&st, r.remote, NULL)) > 0) {
        pl->remote = r.remote;
        pl->ntouches = st.touches.count;
        r.remote = NULL;
    }
    rounds_cleanup(&r);
    state_cleanup(&st);
    return status;
}

/* ------------------------------------------------------------ advice */

static umadv_status_t push_op(umadv_op1_t **ops, size_t *n, size_t *cap, uint32_t x,
                              uint32_t step, umadv_advice_t advice)
{
    umadv_op1_t *op;
    umadv_status_t status = umadv__array_reserve((void **)ops, cap, *n + 1, sizeof(**ops));

    if (status != UMADV_OK)
        return status;
    op = &(*ops)[(*n)++];
    memset(op, 0, sizeof(*op));
    op->section = x;
    op->issue   = (int32_t)step;
    op->need    = step;
    op->kind    = UMADV_OP_ADVISE;
    op->advice  = (uint8_t)advice;
    return UMADV_OK;
}

static umadv_status_t push_set(umadv_placement_t *pl, int setup, uint32_t x, uint32_t step)
{
    umadv_op1_t **ops = setup ? &pl->setup : &pl->ops;
    size_t *n = setup ? &pl->nsetup : &pl->nops, *cap = setup ? &pl->setup_cap : &pl->ops_cap;
    umadv_status_t status = push_op(ops, n, cap, x, step, UMADV_ADVICE_PREFERRED_HOST);

    return status == UMADV_OK ? push_op(ops, n, cap, x, step, UMADV_ADVICE_ACCESSED_BY) : status;
}

/*
 * One section's stretches: maximal runs of consecutive remote touches.
 * Each is bracketed by a set at its first step and a NONE at its last.
 * Persistent data is cyclic: a stretch across the wrap is set at its
 * start (and in setup, for the first replay) and reverted at its end in
 * the next replay; one that is all its touches is set in setup only.
 * Other data is linear: its memory is freed or handed over in between.
 */
static umadv_status_t section_advice(const place_state_t *st, umadv_placement_t *pl, uint32_t x)
{
    const size_t *t = st->sec_touch + st->sec_off[x];
    size_t m = st->sec_off[x + 1] - st->sec_off[x], nremote = 0;
    const uint8_t *remote = pl->remote;
    int cyclic = st->w->life[st->w->trace->sections[x].alloc] == UMADV_LIFE_PERSISTENT;
    uint64_t size = st->w->trace->sections[x].size;
    int wraps;
    umadv_status_t status = UMADV_OK;

    for (size_t i = 0; i < m; i++)
        nremote += remote[t[i]];
    if (nremote == 0)
        return UMADV_OK;
    if (cyclic && nremote == m) {
        pl->host_bytes += size;
        return push_set(pl, 1, x, 0);
    }
    wraps = cyclic && remote[t[0]] && remote[t[m - 1]];
    for (size_t i = 0; i < m && status == UMADV_OK; i++) {
        size_t end = i;
        if (!remote[t[i]] || (i > 0 && remote[t[i - 1]]))
            continue;
        while (end + 1 < m && remote[t[end + 1]])
            end++;
        if (!(wraps && i == 0)) {
            pl->host_bytes += size;
            status = push_set(pl, 0, x, st->touches.step[t[i]]);
        }
        if (status == UMADV_OK && wraps && end == m - 1)
            status = push_set(pl, 1, x, 0);
        else if (status == UMADV_OK)
            status = push_op(&pl->ops, &pl->nops, &pl->ops_cap, x, st->touches.step[t[end]],
                             UMADV_ADVICE_NONE);
    }
    return status;
}

umadv_status_t umadv__placement_ops(const umadv_window_t *window, umadv_placement_t *pl)
{
    place_state_t st;
    umadv_status_t status;

    if (pl->remote == NULL)
        return UMADV_OK;
    memset(&st, 0, sizeof(st));
    st.w = window;
    status = index_sections(&st);
    for (uint32_t x = 0; x < window->trace->nsections && status == UMADV_OK; x++)
        status = section_advice(&st, pl, x);
    state_cleanup(&st);
    return status;
}

void umadv__placement_cleanup(umadv_placement_t *pl)
{
    free(pl->remote);
    free(pl->ops);
    free(pl->setup);
    memset(pl, 0, sizeof(*pl));
}
