#include "trace/gaps.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* ---- building ------------------------------------------------------------ */

/* The steps that touch each allocation (or each section), ascending,
 * each once: a step's accesses of one key may be several runs. */
typedef struct uses_items {
    const umadv_trace_t *t;
    int       by_section;
    uint32_t *last;   /* per key: the last step emitted */
} uses_items_t;

static void use_emit(uses_items_t *u, umadv_keyed_pass_t *pass, uint32_t k, uint32_t s)
{
    if (u->last[k] == s)
        return;
    u->last[k] = s;
    umadv__keyed_emit(pass, k, s);
}

static void uses_of(void *arg, umadv_keyed_pass_t *pass)
{
    uses_items_t *u = arg;
    const umadv_trace_t *t = u->t;
    uint32_t nkeys = u->by_section ? t->nsections : t->nallocs;

    for (uint32_t k = 0; k < nkeys; k++)
        u->last[k] = UMADV_STEP_NONE;
    for (uint32_t s = 0; s < t->nsteps; s++) {
        const umadv_trace_step_t *st = &t->steps[s];

        for (uint32_t x = st->first_access; x < st->first_access + st->naccesses; x++) {
            const umadv_trace_access_t *acc = &t->accesses[x];
            uint32_t base = t->allocs[acc->alloc].first_section + acc->first;

            if (!u->by_section)
                use_emit(u, pass, acc->alloc, s);
            for (uint32_t i = 0; u->by_section && i < acc->count; i++)
                use_emit(u, pass, base + i, s);
        }
    }
}

static umadv_status_t uses_build(const umadv_trace_t *t, int by_section, umadv_keyed_t *k)
{
    uint32_t nkeys = by_section ? t->nsections : t->nallocs;
    uses_items_t u = {t, by_section, malloc(((size_t)nkeys + 1) * sizeof(uint32_t))};
    umadv_status_t status = UMADV_ERR_NO_MEMORY;

    if (u.last != NULL)
        status = umadv__keyed_build(k, nkeys, uses_of, &u);
    free(u.last);
    return status;
}

/* The allocations' uses and the sections' into @g. */
static umadv_status_t all_uses_build(umadv_trace_gaps_t *g)
{
    if (uses_build(g->trace, 0, &g->uses) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    return uses_build(g->trace, 1, &g->sec_uses);
}

static int step_compare(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

typedef struct unseen_items {
    const umadv_trace_t *t;
    int                  by_step;
} unseen_items_t;

static void unseen_of(void *arg, umadv_keyed_pass_t *pass)
{
    const unseen_items_t *it = arg;

    for (uint32_t i = 0; i < it->t->nunseen; i++) {
        const umadv_trace_unseen_t *u = &it->t->unseen[i];

        if (it->by_step)
            umadv__keyed_emit(pass, u->step, u->alloc);
        else
            umadv__keyed_emit(pass, u->alloc, u->step);
    }
}

/* trace->unseen as lists: by allocation (its steps, ascending), or by
 * step (its allocations). */
static umadv_status_t unseen_lists(const umadv_trace_t *t, int by_step, umadv_keyed_t *k)
{
    unseen_items_t it = {t, by_step};

    if (umadv__keyed_build(k, by_step ? t->nsteps : t->nallocs, unseen_of, &it) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t a = 0; !by_step && a < k->nkeys; a++)
        qsort(k->val + k->off[a], umadv__keyed_count(k, a), sizeof(*k->val), step_compare);
    return UMADV_OK;
}

static umadv_status_t unseen_build(umadv_trace_gaps_t *g)
{
    if (unseen_lists(g->trace, 0, &g->unseen) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    return unseen_lists(g->trace, 1, &g->unseen_at);
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
    umadv__keyed_cleanup(&g->uses);
    free(g->start_ns);
    free(g->by_base);
    umadv__keyed_cleanup(&g->unseen);
    umadv__keyed_cleanup(&g->unseen_at);
    umadv__keyed_cleanup(&g->sec_uses);
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

int umadv__trace_gaps_born(const umadv_trace_gaps_t *g, uint32_t id, uint64_t size,
                           uint32_t alloc_step, uint32_t step)
{
    const umadv_trace_alloc_t *al;

    if (id >= g->trace->nallocs || alloc_step == UMADV_STEP_NONE)
        return 0;
    al = &g->trace->allocs[id];
    return al->alloc_step == alloc_step && al->size == size && alive_at(al, step);
}

int umadv__trace_gaps_is(const umadv_trace_gaps_t *g, uint32_t id, uint64_t base,
                         uint64_t size, uint32_t step)
{
    const umadv_trace_alloc_t *al;

    if (id >= g->trace->nallocs)
        return 0;
    al = &g->trace->allocs[id];
    return al->base == base && al->size == size && alive_at(al, step);
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
    const uint32_t *uses = umadv__keyed_values(&g->uses, alloc);
    uint32_t n = umadv__keyed_count(&g->uses, alloc), i;
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
    const uint32_t *uses = umadv__keyed_values(&g->sec_uses, section);
    uint32_t n = umadv__keyed_count(&g->sec_uses, section);
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
    const uint32_t *uses = umadv__keyed_values(&g->sec_uses, section);
    const uint32_t *unseen = umadv__keyed_values(&g->unseen, alloc);
    uint32_t nuses = umadv__keyed_count(&g->sec_uses, section);
    uint32_t nunseen = umadv__keyed_count(&g->unseen, alloc);
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
