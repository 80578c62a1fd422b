#include "schedule/window.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

static int in_window(uint32_t step, uint32_t first, uint32_t n)
{
    return step != UMADV_STEP_NONE && step >= first && step - first < n;
}

umadv_life_t umadv__window_life(const umadv_trace_alloc_t *alloc, uint32_t first, uint32_t n)
{
    int born_in = in_window(alloc->alloc_step, first, n);
    int freed_in = in_window(alloc->free_step, first, n);

    if (born_in && freed_in)
        return UMADV_LIFE_TRANSIENT;
    if (freed_in)
        return UMADV_LIFE_FREED;
    if (born_in && alloc->free_step != UMADV_STEP_NONE)
        return UMADV_LIFE_BORN;
    return UMADV_LIFE_PERSISTENT;
}

static void classify(umadv_window_t *w, uint32_t a)
{
    const umadv_trace_alloc_t *alloc = &w->trace->allocs[a];
    int born_in = in_window(alloc->alloc_step, w->first, w->n);
    int freed_in = in_window(alloc->free_step, w->first, w->n);

    w->life[a] = umadv__window_life(alloc, w->first, w->n);
    /* born inside the window, even PERSISTENT: window.h, REBORN */
    w->wrap_ok[a] = w->life[a] == UMADV_LIFE_PERSISTENT && !born_in;
    w->birth[a] = born_in ? alloc->alloc_step - w->first : 0;
    if (freed_in)
        w->death[a] = alloc->free_step - w->first;
    else
        w->death[a] = w->life[a] == UMADV_LIFE_BORN ? w->n - 1 : UMADV_STEP_NONE;
}

static void mark_written(umadv_window_t *w)
{
    const umadv_trace_t *trace = w->trace;

    for (uint32_t i = 0; i < trace->naccesses; i++) {
        if (trace->accesses[i].mode & UMADV_ACCESS_WRITE)
            w->written[trace->accesses[i].alloc] = 1;
    }
}

static int listed(const umadv_window_t *w, uint32_t a, int births)
{
    if (births)
        return w->life[a] == UMADV_LIFE_TRANSIENT || w->life[a] == UMADV_LIFE_BORN;
    return w->life[a] == UMADV_LIFE_TRANSIENT || w->life[a] == UMADV_LIFE_FREED;
}

static umadv_status_t list_carried(umadv_window_t *w)
{
    w->carried = malloc((w->trace->nallocs ? w->trace->nallocs : 1) * sizeof(*w->carried));
    if (w->carried == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t a = 0; a < w->trace->nallocs; a++) {
        if (w->life[a] == UMADV_LIFE_BORN)
            w->carried[w->ncarried++] = a;
    }
    return UMADV_OK;
}

typedef struct life_items {
    const umadv_window_t *w;
    int                   births;
} life_items_t;

/* Each allocation listed (born, or freed), at its window step. */
static void lives_of(void *arg, umadv_keyed_pass_t *pass)
{
    const life_items_t *it = arg;
    const umadv_trace_t *trace = it->w->trace;

    for (uint32_t a = 0; a < trace->nallocs; a++) {
        if (listed(it->w, a, it->births)) {
            uint32_t step = it->births ? trace->allocs[a].alloc_step : trace->allocs[a].free_step;

            umadv__keyed_emit(pass, step - it->w->first, a);
        }
    }
}

/* Allocations that die (or are born) at each step. */
static umadv_status_t build_lists(umadv_window_t *w, int births, umadv_keyed_t *k)
{
    life_items_t it = {w, births};

    return umadv__keyed_build(k, w->n, lives_of, &it);
}

static void measure_steps(umadv_window_t *w)
{
    for (uint32_t j = 0; j < w->n; j++) {
        uint32_t nacc;
        const umadv_trace_access_t *acc = umadv__window_accesses(w, j, &nacc);
        uint64_t bytes = 0;

        for (uint32_t i = 0; i < nacc; i++)
            bytes += umadv__trace_run_bytes(w->trace, acc[i].alloc, acc[i].first, acc[i].count);
        w->step_bytes[j] = bytes;
        if (bytes > w->max_step_bytes) {
            w->max_step_bytes = bytes;
            w->max_step = j;
        }
    }
    for (uint32_t a = 0; a < w->trace->nallocs; a++)
        w->total_bytes += w->trace->allocs[a].size;
}

uint64_t umadv__window_touches(const umadv_trace_t *trace, uint32_t first, uint32_t count)
{
    uint64_t touches = count;

    for (uint32_t s = first; s < first + count; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        for (uint32_t i = 0; i < step->naccesses; i++)
            touches += trace->accesses[step->first_access + i].count;
    }
    return touches;
}

umadv_status_t umadv__window_check_cost(const umadv_trace_t *trace, uint32_t first,
                                        uint32_t count, uint64_t max_touches)
{
    uint64_t touches;

    if (max_touches == 0)
        return UMADV_OK;
    touches = umadv__window_touches(trace, first, count);
    if (touches <= max_touches)
        return UMADV_OK;
    umadv_error("iteration %u has %llu section touches and steps (%u steps of %llu-byte "
                "sections), more than the planner takes: %llu (UMADV_PLAN_MAX_TOUCHES; each "
                "costs about 1 us and 200 bytes); raise UMADV_PLAN_MAX_TOUCHES, or record "
                "with a larger section size", trace->steps[first].iteration,
                (unsigned long long)touches, count, (unsigned long long)trace->section_size,
                (unsigned long long)max_touches);
    return UMADV_ERR_INVALID_PARAM;
}

umadv_status_t umadv__window_init(umadv_window_t *window, const umadv_trace_t *trace,
                                  uint32_t first, uint32_t n)
{
    umadv_window_t w;
    size_t na = trace->nallocs ? trace->nallocs : 1;
    umadv_status_t status;

    if (!trace->finalized || n == 0 || first > trace->nsteps || n > trace->nsteps - first)
        return UMADV_ERR_INVALID_PARAM;
    memset(&w, 0, sizeof(w));
    w.trace = trace;
    w.first = first;
    w.n = n;
    w.life = calloc(na, 1);
    w.wrap_ok = calloc(na, 1);
    w.written = calloc(na, 1);
    w.birth = calloc(na, sizeof(*w.birth));
    w.death = calloc(na, sizeof(*w.death));
    w.step_bytes = calloc(n, sizeof(*w.step_bytes));
    status = UMADV_ERR_NO_MEMORY;
    if (w.life == NULL || w.wrap_ok == NULL || w.written == NULL || w.birth == NULL ||
        w.death == NULL || w.step_bytes == NULL)
        goto err_cleanup;
    for (uint32_t a = 0; a < trace->nallocs; a++)
        classify(&w, a);
    mark_written(&w);
    measure_steps(&w);
    status = build_lists(&w, 1, &w.born);
    if (status != UMADV_OK)
        goto err_cleanup;
    status = build_lists(&w, 0, &w.freed);
    if (status != UMADV_OK)
        goto err_cleanup;
    status = list_carried(&w);
    if (status != UMADV_OK)
        goto err_cleanup;
    *window = w;
    return UMADV_OK;

err_cleanup:
    umadv__window_cleanup(&w);
    return status;
}

void umadv__window_cleanup(umadv_window_t *window)
{
    free(window->life);
    free(window->wrap_ok);
    free(window->birth);
    free(window->death);
    free(window->carried);
    free(window->written);
    umadv__keyed_cleanup(&window->born);
    umadv__keyed_cleanup(&window->freed);
    free(window->step_bytes);
    memset(window, 0, sizeof(*window));
}

umadv_status_t umadv__window_check_budget(const umadv_window_t *window, uint64_t budget)
{
    const umadv_trace_step_t *step;
    char need[32], have[32];

    if (window->max_step_bytes <= budget)
        return UMADV_OK;
    step = &window->trace->steps[window->first + window->max_step];
    umadv_error("step %u (%s) touches %s at once, more than the budget of %s: "
                "raise the budget to at least that",
                window->first + window->max_step, step->name ? step->name : "unnamed",
                umadv__size_format(window->max_step_bytes, need, sizeof(need)),
                umadv__size_format(budget, have, sizeof(have)));
    return UMADV_ERR_BUDGET_TOO_SMALL;
}

umadv_status_t umadv__touches_init(umadv_touches_t *touches, const umadv_window_t *window)
{
    umadv_touches_t t;
    size_t total = 0;

    memset(&t, 0, sizeof(t));
    t.off = malloc(((size_t)window->n + 1) * sizeof(*t.off));
    if (t.off == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t j = 0; j < window->n; j++) {
        uint32_t nacc;
        const umadv_trace_access_t *acc = umadv__window_accesses(window, j, &nacc);

        t.off[j] = total;
        for (uint32_t i = 0; i < nacc; i++)
            total += acc[i].count;
    }
    t.off[window->n] = t.count = total;
    t.sec = malloc((total ? total : 1) * sizeof(*t.sec));
    t.step = malloc((total ? total : 1) * sizeof(*t.step));
    if (t.sec == NULL || t.step == NULL) {
        umadv__touches_cleanup(&t);
        return UMADV_ERR_NO_MEMORY;
    }
    for (uint32_t j = 0; j < window->n; j++) {
        uint32_t nacc;
        const umadv_trace_access_t *acc = umadv__window_accesses(window, j, &nacc);
        size_t k = t.off[j];

        for (uint32_t i = 0; i < nacc; i++) {
            uint32_t x0 = umadv__trace_section_id(window->trace, acc[i].alloc, acc[i].first);
            for (uint32_t c = 0; c < acc[i].count; c++, k++) {
                t.sec[k] = x0 + c;
                t.step[k] = j;
            }
        }
    }
    *touches = t;
    return UMADV_OK;
}

void umadv__touches_cleanup(umadv_touches_t *touches)
{
    free(touches->off);
    free(touches->sec);
    free(touches->step);
    memset(touches, 0, sizeof(*touches));
}

double umadv__window_compute_seconds(const umadv_window_t *window)
{
    uint64_t ns = 0;

    for (uint32_t j = 0; j < window->n; j++)
        ns += window->trace->steps[window->first + j].duration_ns;
    return (double)ns * 1e-9;
}

double umadv__window_resident_seconds(const umadv_window_t *window)
{
    double gpu_s = 0, launched_s = 0;
    int host_known = 0;

    for (uint32_t j = 0; j < window->n && !host_known; j++)
        host_known = window->trace->steps[window->first + j].host_ns > 0;
    if (!host_known) /* the exact sum, as before host times */
        return umadv__window_compute_seconds(window);
    for (uint32_t j = 0; j < window->n; j++) {
        launched_s = umadv__window_host_arrival(window, j, launched_s, gpu_s);
        gpu_s = (launched_s > gpu_s ? launched_s : gpu_s) + umadv__window_step_seconds(window, j);
    }
    return gpu_s;
}
