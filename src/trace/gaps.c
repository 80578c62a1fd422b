#include "trace/gaps.h"

#include <stdlib.h>
#include <string.h>

/* ---- building ------------------------------------------------------------ */

/* Each allocation's steps, ascending, each once: a counting pass, then a
 * filling pass over the steps in order (a step's accesses of one
 * allocation may be several runs). */
static umadv_status_t uses_build(umadv_trace_gaps_t *g)
{
    const umadv_trace_t *t = g->trace;
    uint32_t *fill, *last = malloc(((size_t)t->nallocs + 1) * sizeof(*last));

    g->use_off = calloc((size_t)t->nallocs + 1, sizeof(*g->use_off));
    if (last == NULL || g->use_off == NULL) {
        free(last);
        return UMADV_ERR_NO_MEMORY;
    }
    for (int pass = 0; pass < 2; pass++) {
        fill = pass == 0 ? NULL : g->use_step;
        for (uint32_t a = 0; a < t->nallocs; a++)
            last[a] = UMADV_STEP_NONE;
        for (uint32_t s = 0; s < t->nsteps; s++) {
            const umadv_trace_step_t *st = &t->steps[s];

            for (uint32_t i = st->first_access; i < st->first_access + st->naccesses; i++) {
                uint32_t a = t->accesses[i].alloc;

                if (last[a] == s)
                    continue;
                last[a] = s;
                if (fill == NULL)
                    g->use_off[a + 1]++;
                else
                    fill[g->use_off[a]++] = s; /* a cursor in this pass */
            }
        }
        if (pass == 0) {
            for (uint32_t a = 0; a < t->nallocs; a++)
                g->use_off[a + 1] += g->use_off[a];
            g->use_step = malloc(((size_t)g->use_off[t->nallocs] + 1) * sizeof(*g->use_step));
            if (g->use_step == NULL) {
                free(last);
                return UMADV_ERR_NO_MEMORY;
            }
        }
    }
    /* the filling pass moved each offset to its allocation's end */
    memmove(g->use_off + 1, g->use_off, (size_t)t->nallocs * sizeof(*g->use_off));
    g->use_off[0] = 0;
    free(last);
    return UMADV_OK;
}

static int step_compare(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* trace->unseen by allocation, each one's steps ascending. */
static umadv_status_t unseen_build(umadv_trace_gaps_t *g)
{
    const umadv_trace_t *t = g->trace;

    g->unseen_off = calloc((size_t)t->nallocs + 1, sizeof(*g->unseen_off));
    g->unseen_step = malloc(((size_t)t->nunseen + 1) * sizeof(*g->unseen_step));
    if (g->unseen_off == NULL || g->unseen_step == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < t->nunseen; i++)
        g->unseen_off[t->unseen[i].alloc + 1]++;
    for (uint32_t a = 0; a < t->nallocs; a++)
        g->unseen_off[a + 1] += g->unseen_off[a];
    for (uint32_t i = 0; i < t->nunseen; i++) /* unseen_off[a] a cursor, as in uses_build */
        g->unseen_step[g->unseen_off[t->unseen[i].alloc]++] = t->unseen[i].step;
    memmove(g->unseen_off + 1, g->unseen_off, (size_t)t->nallocs * sizeof(*g->unseen_off));
    g->unseen_off[0] = 0;
    for (uint32_t a = 0; a < t->nallocs; a++)
        qsort(g->unseen_step + g->unseen_off[a], g->unseen_off[a + 1] - g->unseen_off[a],
              sizeof(*g->unseen_step), step_compare);
    return UMADV_OK;
}

static uint32_t birth_of(const umadv_trace_alloc_t *al)
{
    return al->alloc_step == UMADV_STEP_NONE ? 0 : al->alloc_step;
}

static int by_base_compare(const void *a, const void *b)
{
    const umadv_gaps_key_t *x = a, *y = b;

    if (x->base != y->base)
        return x->base < y->base ? -1 : 1;
    return (x->birth > y->birth) - (x->birth < y->birth);
}

umadv_status_t umadv__trace_gaps_init(umadv_trace_gaps_t *g, const umadv_trace_t *t)
{
    memset(g, 0, sizeof(*g));
    g->trace = t;
    g->start_ns = malloc(((size_t)t->nsteps + 1) * sizeof(*g->start_ns));
    g->by_base = malloc(((size_t)t->nallocs + 1) * sizeof(*g->by_base));
    if (g->start_ns == NULL || g->by_base == NULL || uses_build(g) != UMADV_OK ||
        unseen_build(g) != UMADV_OK) {
        umadv__trace_gaps_cleanup(g);
        return UMADV_ERR_NO_MEMORY;
    }
    g->start_ns[0] = 0;
    for (uint32_t s = 0; s < t->nsteps; s++)
        g->start_ns[s + 1] = g->start_ns[s] + t->steps[s].duration_ns;
    for (uint32_t a = 0; a < t->nallocs; a++)
        g->by_base[a] = (umadv_gaps_key_t){t->allocs[a].base, birth_of(&t->allocs[a]), a};
    qsort(g->by_base, t->nallocs, sizeof(*g->by_base), by_base_compare);
    return UMADV_OK;
}

void umadv__trace_gaps_cleanup(umadv_trace_gaps_t *g)
{
    free(g->use_off);
    free(g->use_step);
    free(g->start_ns);
    free(g->by_base);
    free(g->unseen_off);
    free(g->unseen_step);
    memset(g, 0, sizeof(*g));
}

/* ---- queries --------------------------------------------------------------- */

static int alive_at(const umadv_trace_alloc_t *al, uint32_t step)
{
    return (al->alloc_step == UMADV_STEP_NONE || al->alloc_step <= step) &&
           (al->free_step == UMADV_STEP_NONE || step <= al->free_step);
}

uint32_t umadv__trace_gaps_find(const umadv_trace_gaps_t *g, uint64_t base, uint64_t size,
                                uint32_t step)
{
    const umadv_trace_t *t = g->trace;
    size_t lo = 0, hi = t->nallocs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (g->by_base[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < t->nallocs && g->by_base[lo].base == base; lo++) {
        const umadv_trace_alloc_t *al = &t->allocs[g->by_base[lo].alloc];

        if (al->size == size && alive_at(al, step))
            return g->by_base[lo].alloc;
    }
    return UMADV_STEP_NONE;
}

/* The first of @n ascending @steps at or after @step (n if none). */
static uint32_t first_at_or_after(const uint32_t *steps, uint32_t n, uint32_t step)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (steps[mid] < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t umadv__trace_gaps_around(const umadv_trace_gaps_t *g, uint32_t alloc, uint32_t step)
{
    const umadv_trace_t *t = g->trace;
    const umadv_trace_alloc_t *al = &t->allocs[alloc];
    const uint32_t *uses = g->use_step + g->use_off[alloc];
    uint32_t n = g->use_off[alloc + 1] - g->use_off[alloc], i;
    int64_t total = (int64_t)g->start_ns[t->nsteps], before, after;
    int wraps = al->alloc_step == UMADV_STEP_NONE && al->free_step == UMADV_STEP_NONE;

    if (n == 0)
        return UINT64_MAX;
    i = first_at_or_after(uses, n, step);
    if (i < n && uses[i] == step)
        return 0;
    if (i < n)
        after = (int64_t)g->start_ns[uses[i]];
    else if (wraps)
        after = total + (int64_t)g->start_ns[uses[0]];
    else
        after = al->free_step == UMADV_STEP_NONE ? total
                                                 : (int64_t)g->start_ns[al->free_step + 1];
    if (i > 0)
        before = (int64_t)g->start_ns[uses[i - 1] + 1];
    else if (wraps)
        before = (int64_t)g->start_ns[uses[n - 1] + 1] - total;
    else
        before = (int64_t)g->start_ns[birth_of(al)];
    return after > before ? (uint64_t)(after - before) : 0;
}

int umadv__trace_gaps_unseen_ahead(const umadv_trace_gaps_t *g, uint32_t alloc, uint32_t from)
{
    const umadv_trace_alloc_t *al = &g->trace->allocs[alloc];
    const uint32_t *uses = g->use_step + g->use_off[alloc];
    const uint32_t *unseen = g->unseen_step + g->unseen_off[alloc];
    uint32_t nuses = g->use_off[alloc + 1] - g->use_off[alloc];
    uint32_t nunseen = g->unseen_off[alloc + 1] - g->unseen_off[alloc];
    uint32_t i, u;

    if (nunseen == 0)
        return 0;
    i = first_at_or_after(uses, nuses, from);
    u = first_at_or_after(unseen, nunseen, from);
    if (i < nuses)
        return u < nunseen && unseen[u] < uses[i];
    if (u < nunseen)
        return 1; /* unseen after its last use */
    /* past its last use: into the next iteration, up to its first use */
    return al->alloc_step == UMADV_STEP_NONE && al->free_step == UMADV_STEP_NONE &&
           (nuses == 0 || unseen[0] < uses[0]);
}
