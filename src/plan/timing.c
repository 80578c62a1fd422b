/*
 * When each operation of the steady-state residency pass is issued
 * (plan.c's opening comment explains the choices): evictions right after
 * the last use, fetches as early as the budget allows, in need order.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "plan/plan_int.h"
#include "plan/slack.h"

typedef struct timing_state {
    const umadv_window_t    *w;
    const umadv_residency_t *res;
    uint32_t  n;
    int64_t   budget;
    umadv_keyed_t ev;    /* per section: its events' indices */
    umadv_slack_t slack;
} timing_state_t;

/* One fetch to place. Times are relative to the need's replay. */
typedef struct arrival {
    uint32_t event;
    uint32_t section;
    uint32_t need;
    uint32_t order;      /* need, counted from the step after the tightest one */
    int32_t  lb;         /* earliest issue the data and allocation allow */
    int32_t  issue;
    int32_t  shift;      /* eff - need: n for a reload closing the pass */
    int32_t  depart;     /* eff of the departure that ends this residency */
} arrival_t;

static uint64_t sec_size(const timing_state_t *st, uint32_t x)
{
    return st->w->trace->sections[x].size;
}

static int64_t imod(int64_t a, int64_t n)
{
    int64_t r = a % n;
    return r < 0 ? r + n : r;
}

static const umadv_res_event_t *event_at(const timing_state_t *st, uint32_t x, uint32_t k)
{
    return &st->res->events[umadv__keyed_values(&st->ev, x)[k]];
}

/*
 * The departure after arrival k of section x, and the one before it, as
 * effs in the arrival's frame. The pass alternates arrive/depart per
 * section around the cycle; anything else is an internal error.
 */
static umadv_status_t neighbours(const timing_state_t *st, uint32_t x, uint32_t k,
                                 int32_t *next_p, int32_t *prev_p)
{
    uint32_t m = umadv__keyed_count(&st->ev, x);
    const umadv_res_event_t *arr = event_at(st, x, k);
    const umadv_res_event_t *next = event_at(st, x, (k + 1) % m);
    const umadv_res_event_t *prev = event_at(st, x, (k + m - 1) % m);
    int32_t n = (int32_t)st->n;
    int32_t d_next = next->eff + (k + 1 == m ? n : 0);
    int32_t d_prev = prev->eff - (k == 0 ? n : 0);

    if (m < 2 || next->kind == UMADV_RES_ARRIVE || prev->kind == UMADV_RES_ARRIVE ||
        d_next <= arr->eff || d_next - arr->eff > n || d_prev > arr->eff) {
        umadv_error("planner: inconsistent residency of section %u (internal error)", x);
        return UMADV_ERR_STATE;
    }
    *next_p = d_next;
    *prev_p = d_prev;
    return UMADV_OK;
}

/* diff[] over the cyclic steps: add @v to steps lo..hi (hi - lo < n). */
static void diff_add(int64_t *diff, int64_t n, int64_t lo, int64_t hi, int64_t v)
{
    int64_t len = hi - lo + 1;

    lo = imod(lo, n);
    hi = lo + len - 1;
    diff[lo] += v;
    if (hi < n) {
        diff[hi + 1] -= v;
    } else {
        diff[n] -= v;
        diff[0] += v;
        diff[hi - n + 1] -= v;
    }
}

static umadv_status_t build_arrival(timing_state_t *st, uint32_t x, uint32_t k, arrival_t *a)
{
    const umadv_res_event_t *ev = event_at(st, x, k);
    uint32_t alloc = st->w->trace->sections[x].alloc;
    int32_t n = (int32_t)st->n, next, prev;
    umadv_status_t status = neighbours(st, x, k, &next, &prev);

    if (status != UMADV_OK)
        return status;
    a->event   = umadv__keyed_values(&st->ev, x)[k];
    a->section = x;
    a->need    = (uint32_t)(ev->eff % n);
    a->shift   = ev->eff - (int32_t)a->need;
    a->depart  = next;
    /* not before its own previous departure, nor while steps still use
     * its host copy, nor before the allocation exists, nor a whole replay
     * early */
    a->lb = UMADV_MAX(prev - a->shift, (int32_t)a->need - (n - 1));
    if (ev->host_end != INT32_MIN)
        a->lb = UMADV_MAX(a->lb, ev->host_end - a->shift);
    if (!st->w->wrap_ok[alloc])
        a->lb = UMADV_MAX(a->lb, (int32_t)st->w->birth[alloc]);
    a->lb = UMADV_MIN(a->lb, (int32_t)a->need);
    a->issue = (int32_t)a->need;
    return UMADV_OK;
}

/* Residency per step before any fetch is hoisted: each arrival holds its
 * section from the need step to its departure; sections with no event
 * keep their state all along. Also collects the arrivals. */
static umadv_status_t planned_occupancy(timing_state_t *st, int64_t *occ, arrival_t *arr,
                                        size_t *narr_p)
{
    int64_t n = st->n, base = 0;
    size_t narr = 0;

    memset(occ, 0, ((size_t)n + 1) * sizeof(*occ));
    for (uint32_t x = 0; x < st->w->trace->nsections; x++) {
        uint32_t m = umadv__keyed_count(&st->ev, x);

        if (m == 0 && st->res->start[x])
            base += (int64_t)sec_size(st, x);
        for (uint32_t k = 0; k < m; k++) {
            arrival_t *a = &arr[narr];
            umadv_status_t status;

            if (event_at(st, x, k)->kind != UMADV_RES_ARRIVE)
                continue;
            status = build_arrival(st, x, k, a);
            if (status != UMADV_OK)
                return status;
            diff_add(occ, n, a->need, a->depart - a->shift - 1, (int64_t)sec_size(st, x));
            narr++;
        }
    }
    occ[0] += base;
    for (int64_t s = 1; s < n; s++)
        occ[s] += occ[s - 1];
    *narr_p = narr;
    return UMADV_OK;
}

static int arrival_compare(const void *pa, const void *pb)
{
    const arrival_t *a = pa, *b = pb;

    if (a->order != b->order)
        return a->order < b->order ? -1 : 1;
    return a->section < b->section ? -1 : a->section > b->section;
}

static void slack_add_cyclic(timing_state_t *st, int64_t lo, int64_t hi, int64_t delta)
{
    int64_t n = st->n, len = hi - lo + 1;

    lo = imod(lo, n);
    hi = lo + len - 1;
    if (hi < n) {
        umadv__slack_add(&st->slack, (uint32_t)lo, (uint32_t)hi, delta);
    } else {
        umadv__slack_add(&st->slack, (uint32_t)lo, (uint32_t)(n - 1), delta);
        umadv__slack_add(&st->slack, 0, (uint32_t)(hi - n), delta);
    }
}

/* The latest step in [lo, hi] (unrolled, lo > -n, hi < n) that has less
 * than @size free, or lo - 1. */
static int64_t last_tight_step(timing_state_t *st, int64_t lo, int64_t hi, int64_t size)
{
    int64_t n = st->n, found;

    if (hi >= 0 && hi >= lo) {
        found = umadv__slack_find_last_below(&st->slack, (uint32_t)UMADV_MAX(lo, 0),
                                             (uint32_t)hi, size);
        if (found >= 0)
            return found;
    }
    if (lo < 0) {
        found = umadv__slack_find_last_below(&st->slack, (uint32_t)(lo + n),
                                             (uint32_t)(UMADV_MIN(hi, -1) + n), size);
        if (found >= 0)
            return found - n;
    }
    return lo - 1;
}

/* Hoist a group of fetches that will be one call, as a unit: splitting a
 * run to start part of it earlier costs a call's latency per part, more
 * than the head start is worth on a lane that is busy anyway. */
static void hoist(timing_state_t *st, arrival_t *a, size_t count, uint32_t lookahead)
{
    int64_t size = 0, lo = a->lb;
    int32_t issue = (int32_t)a->need;

    for (size_t i = 0; i < count; i++)
        size += (int64_t)sec_size(st, a[i].section);
    if (lookahead != 0)
        lo = UMADV_MAX(lo, (int64_t)a->need - (int64_t)lookahead);
    if (lo < (int64_t)a->need) {
        issue = (int32_t)(last_tight_step(st, lo, (int64_t)a->need - 1, size) + 1);
        if (issue < (int32_t)a->need)
            slack_add_cyclic(st, issue, (int64_t)a->need - 1, -size);
    }
    for (size_t i = 0; i < count; i++)
        a[i].issue = issue;
}

/* Arrivals that will make one op: adjacent sections of one allocation,
 * same need, bounds and freshness, within the op size limit. */
static size_t group_length(const timing_state_t *st, const arrival_t *arr, size_t narr,
                           uint64_t max_bytes)
{
    const umadv_trace_section_t *secs = st->w->trace->sections;
    const umadv_res_event_t *ev = st->res->events;
    uint64_t bytes = secs[arr[0].section].size;
    size_t k = 1;

    while (k < narr && arr[k].section == arr[k - 1].section + 1 &&
           secs[arr[k].section].alloc == secs[arr[0].section].alloc &&
           arr[k].need == arr[0].need && arr[k].lb == arr[0].lb &&
           ev[arr[k].event].fresh == ev[arr[0].event].fresh &&
           bytes + secs[arr[k].section].size <= max_bytes) {
        bytes += secs[arr[k].section].size;
        k++;
    }
    return k;
}

/* In steady state, on the GPU (or arriving) when the replay begins: one
 * of its residencies, hoisting included, covers step 0 and did not begin
 * there (fetches issued at step 0 come after the start). */
static void mark_start(const timing_state_t *st, const arrival_t *arr, size_t narr,
                       uint8_t *at_start)
{
    int64_t n = st->n;

    for (uint32_t x = 0; x < st->w->trace->nsections; x++)
        at_start[x] = umadv__keyed_count(&st->ev, x) == 0 && st->res->start[x];
    for (size_t i = 0; i < narr; i++) {
        int64_t from = (int64_t)arr[i].issue + arr[i].shift;
        int64_t len = (int64_t)arr[i].depart - from;
        if (imod(-from, n) < len && imod(from, n) != 0)
            at_start[arr[i].section] = 1;
    }
}

static void emit_ops(const timing_state_t *st, const arrival_t *arr, size_t narr,
                     umadv_op1_t *ops)
{
    const umadv_res_event_t *events = st->res->events;
    int32_t n = (int32_t)st->n;

    for (size_t e = 0; e < st->res->nevents; e++) {
        umadv_op1_t *op = &ops[e];
        op->section = events[e].section;
        op->need    = events[e].last_use;
        op->issue   = (int32_t)imod(events[e].eff - 1, n);
        op->kind    = events[e].kind == UMADV_RES_EVICT ? UMADV_OP_EVICT : UMADV_OP_DROP;
        op->room_after = events[e].room == UMADV_STEP_NONE
                             ? (uint32_t)n
                             : (uint32_t)imod((int64_t)events[e].room - op->issue, n);
        op->flags   = 0;
        op->advice  = UMADV_ADVICE_NONE;
    }
    for (size_t i = 0; i < narr; i++) {
        umadv_op1_t *op = &ops[arr[i].event];
        op->need  = arr[i].need;
        op->issue = arr[i].issue;
        op->kind  = UMADV_OP_FETCH;
        op->flags = (events[arr[i].event].fresh ? UMADV_OP_FLAG_FRESH : 0) |
                    (arr[i].issue < 0 ? UMADV_OP_FLAG_NEXT_ITERATION : 0);
    }
}

/* Give the hoisting its order: need order, starting after the step with
 * the least free memory, where a fetch can least cross the wrap of the
 * order; ties by section so that runs stay together. */
static umadv_status_t order_and_hoist(timing_state_t *st, const int64_t *occ, arrival_t *arr,
                                      size_t narr, uint32_t lookahead, uint64_t max_op_bytes)
{
    int64_t *slack_init = malloc(st->n * sizeof(*slack_init));
    uint32_t tight = 0;
    umadv_status_t status;

    if (slack_init == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t s = 0; s < st->n; s++) {
        slack_init[s] = st->budget - occ[s];
        if (slack_init[s] < slack_init[tight])
            tight = s;
    }
    if (slack_init[tight] < 0) {
        umadv_error("planner: step %u over budget before hoisting (internal error)",
                    st->w->first + tight);
        free(slack_init);
        return UMADV_ERR_STATE;
    }
    status = umadv__slack_init(&st->slack, st->n, slack_init);
    free(slack_init);
    if (status != UMADV_OK)
        return status;
    for (size_t i = 0; i < narr; i++)
        arr[i].order = (arr[i].need + st->n - tight - 1) % st->n;
    if (narr > 1) /* none may mean no array: qsort(NULL) is UB */
        qsort(arr, narr, sizeof(*arr), arrival_compare);
    for (size_t i = 0, k; i < narr; i += k) {
        k = group_length(st, &arr[i], narr - i, max_op_bytes);
        hoist(st, &arr[i], k, lookahead);
    }
    return UMADV_OK;
}

static umadv_status_t timing_place(timing_state_t *st, uint32_t lookahead, uint64_t max_op_bytes,
                                   umadv_timing_t *t)
{
    size_t narr = 0, nev = st->res->nevents;
    int64_t *occ = malloc(((size_t)st->n + 1) * sizeof(*occ));
    arrival_t *arr = malloc((nev ? nev : 1) * sizeof(*arr));
    umadv_status_t status = UMADV_ERR_NO_MEMORY;

    t->ops = malloc((nev ? nev : 1) * sizeof(*t->ops));
    t->resident_at_start = malloc(st->w->trace->nsections ? st->w->trace->nsections : 1);
    if (occ == NULL || arr == NULL || t->ops == NULL || t->resident_at_start == NULL)
        goto out;
    status = planned_occupancy(st, occ, arr, &narr);
    if (status == UMADV_OK)
        status = order_and_hoist(st, occ, arr, narr, lookahead, max_op_bytes);
    if (status == UMADV_OK) {
        t->peak = (uint64_t)(st->budget - umadv__slack_min(&st->slack, NULL));
        mark_start(st, arr, narr, t->resident_at_start);
        emit_ops(st, arr, narr, t->ops);
        t->nops = nev;
    }
out:
    free(occ);
    free(arr);
    return status;
}

umadv_status_t umadv__timing_run(const umadv_window_t *window, const umadv_residency_t *res,
                                 uint64_t budget, uint32_t lookahead, uint64_t max_op_bytes,
                                 umadv_timing_t *timing)
{
    timing_state_t st;
    umadv_timing_t t;
    umadv_status_t status;

    memset(&st, 0, sizeof(st));
    memset(&t, 0, sizeof(t));
    st.w = window;
    st.res = res;
    st.n = window->n;
    st.budget = (int64_t)budget;
    status = umadv__residency_by_section(res, window->trace->nsections, &st.ev);
    if (status == UMADV_OK)
        status = timing_place(&st, lookahead, max_op_bytes, &t);
    umadv__slack_cleanup(&st.slack);
    umadv__keyed_cleanup(&st.ev);
    if (status != UMADV_OK) {
        umadv__timing_cleanup(&t);
        return status;
    }
    *timing = t;
    return UMADV_OK;
}

void umadv__timing_cleanup(umadv_timing_t *timing)
{
    free(timing->ops);
    free(timing->resident_at_start);
    memset(timing, 0, sizeof(*timing));
}
