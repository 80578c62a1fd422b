#include "trace/gaps.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* ---- building ------------------------------------------------------------ */

/* Steps by key (an allocation, or a section), ascending, each once. */
typedef struct uses {
    const umadv_trace_t *t;
    int       by_section;
    uint32_t  nkeys;
    uint32_t *off;    /* nkeys + 1 */
    uint32_t *step;
    uint32_t *last;   /* per key: the last step noted (building) */
} uses_t;

/* Key @k noted at step @s: counted (pass 0) or filled in, off[k] a
 * cursor (pass 1). */
static void use_note(uses_t *u, int pass, uint32_t k, uint32_t s)
{
    if (u->last[k] == s)
        return; /* a step's accesses of one key may be several runs */
    u->last[k] = s;
    if (pass == 0)
        u->off[k + 1]++;
    else
        u->step[u->off[k]++] = s;
}

static void uses_pass(uses_t *u, int pass)
{
    const umadv_trace_t *t = u->t;

    for (uint32_t k = 0; k < u->nkeys; k++)
        u->last[k] = UMADV_STEP_NONE;
    for (uint32_t s = 0; s < t->nsteps; s++) {
        const umadv_trace_step_t *st = &t->steps[s];

        for (uint32_t x = st->first_access; x < st->first_access + st->naccesses; x++) {
            const umadv_trace_access_t *acc = &t->accesses[x];
            uint32_t base = t->allocs[acc->alloc].first_section + acc->first;

            if (!u->by_section)
                use_note(u, pass, acc->alloc, s);
            for (uint32_t i = 0; u->by_section && i < acc->count; i++)
                use_note(u, pass, base + i, s);
        }
    }
}

/* A counting pass, then a filling pass over the steps in order. */
static umadv_status_t uses_build(uses_t *u)
{
    u->off = calloc((size_t)u->nkeys + 1, sizeof(*u->off));
    u->last = malloc(((size_t)u->nkeys + 1) * sizeof(*u->last));
    if (u->off == NULL || u->last == NULL)
        goto fail;
    uses_pass(u, 0);
    for (uint32_t k = 0; k < u->nkeys; k++)
        u->off[k + 1] += u->off[k];
    u->step = malloc(((size_t)u->off[u->nkeys] + 1) * sizeof(*u->step));
    if (u->step == NULL)
        goto fail;
    uses_pass(u, 1);
    /* the filling pass moved each offset to its key's end */
    memmove(u->off + 1, u->off, (size_t)u->nkeys * sizeof(*u->off));
    u->off[0] = 0;
    free(u->last);
    return UMADV_OK;
fail:
    free(u->off);
    free(u->last);
    return UMADV_ERR_NO_MEMORY;
}

/* The allocations' uses and the sections' into @g. */
static umadv_status_t all_uses_build(umadv_trace_gaps_t *g)
{
    uses_t by_alloc = {g->trace, 0, g->trace->nallocs, NULL, NULL, NULL};
    uses_t by_section = {g->trace, 1, g->trace->nsections, NULL, NULL, NULL};

    if (uses_build(&by_alloc) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    g->use_off = by_alloc.off;
    g->use_step = by_alloc.step;
    if (uses_build(&by_section) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    g->sec_off = by_section.off;
    g->sec_step = by_section.step;
    return UMADV_OK;
}

static int step_compare(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* trace->unseen as lists: by allocation (its steps, ascending), or by
 * step (its allocations). Counting sort; off[k] is a cursor while
 * filling, then shifted back. */
static umadv_status_t unseen_lists(const umadv_trace_t *t, int by_step, uint32_t **off_p,
                                   uint32_t **val_p)
{
    uint32_t nkeys = by_step ? t->nsteps : t->nallocs;
    uint32_t *off = calloc((size_t)nkeys + 1, sizeof(*off));
    uint32_t *val = malloc(((size_t)t->nunseen + 1) * sizeof(*val));

    *off_p = off;
    *val_p = val;
    if (off == NULL || val == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < t->nunseen; i++)
        off[(by_step ? t->unseen[i].step : t->unseen[i].alloc) + 1]++;
    for (uint32_t k = 0; k < nkeys; k++)
        off[k + 1] += off[k];
    for (uint32_t i = 0; i < t->nunseen; i++) {
        const umadv_trace_unseen_t *u = &t->unseen[i];

        val[off[by_step ? u->step : u->alloc]++] = by_step ? u->alloc : u->step;
    }
    memmove(off + 1, off, (size_t)nkeys * sizeof(*off));
    off[0] = 0;
    for (uint32_t k = 0; !by_step && k < nkeys; k++)
        qsort(val + off[k], off[k + 1] - off[k], sizeof(*val), step_compare);
    return UMADV_OK;
}

static umadv_status_t unseen_build(umadv_trace_gaps_t *g)
{
    if (unseen_lists(g->trace, 0, &g->unseen_off, &g->unseen_step) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    return unseen_lists(g->trace, 1, &g->unseen_at_off, &g->unseen_at);
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
    if (g->start_ns == NULL || g->by_base == NULL || all_uses_build(g) != UMADV_OK ||
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
    free(g->unseen_at_off);
    free(g->unseen_at);
    free(g->sec_off);
    free(g->sec_step);
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

uint32_t umadv__trace_gaps_section_last(const umadv_trace_gaps_t *g, uint32_t section,
                                        uint32_t step)
{
    const umadv_trace_alloc_t *al = &g->trace->allocs[g->trace->sections[section].alloc];
    const uint32_t *uses = g->sec_step + g->sec_off[section];
    uint32_t n = g->sec_off[section + 1] - g->sec_off[section];
    uint32_t i = first_at_or_after(uses, n, step);

    if (i > 0)
        return uses[i - 1];
    if (n > 0 && al->alloc_step == UMADV_STEP_NONE && al->free_step == UMADV_STEP_NONE)
        return uses[n - 1];
    return UMADV_STEP_NONE;
}

int umadv__trace_gaps_unseen_ahead(const umadv_trace_gaps_t *g, uint32_t section, uint32_t from,
                                   uint32_t first, uint32_t n)
{
    uint32_t alloc = g->trace->sections[section].alloc;
    const umadv_trace_alloc_t *al = &g->trace->allocs[alloc];
    const uint32_t *uses = g->sec_step + g->sec_off[section];
    const uint32_t *unseen = g->unseen_step + g->unseen_off[alloc];
    uint32_t nuses = g->sec_off[section + 1] - g->sec_off[section];
    uint32_t nunseen = g->unseen_off[alloc + 1] - g->unseen_off[alloc];
    uint32_t i0, i1, u0, u1, i, u;

    if (nunseen == 0)
        return 0;
    /* only the window's steps: it is what repeats */
    i0 = first_at_or_after(uses, nuses, first);
    i1 = first_at_or_after(uses, nuses, first + n);
    u0 = first_at_or_after(unseen, nunseen, first);
    u1 = first_at_or_after(unseen, nunseen, first + n);
    i = UMADV_MAX(first_at_or_after(uses, nuses, from), i0);
    u = UMADV_MAX(first_at_or_after(unseen, nunseen, from), u0);
    if (i < i1)
        return u < u1 && unseen[u] < uses[i];
    if (u < u1)
        return 1; /* unseen after its last use */
    /* past its last use: into the next replay of the window, up to its
     * first use there */
    return al->alloc_step == UMADV_STEP_NONE && al->free_step == UMADV_STEP_NONE && u0 < u1 &&
           (i0 == i1 || unseen[u0] < uses[i0]);
}
