#include "trace/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

static const char *const alloc_kind_names[UMADV_ALLOC_KIND_COUNT] = {
    [UMADV_ALLOC_OTHER]      = "other",
    [UMADV_ALLOC_WEIGHT]     = "weight",
    [UMADV_ALLOC_GRADIENT]   = "gradient",
    [UMADV_ALLOC_OPTIMIZER]  = "optimizer",
    [UMADV_ALLOC_ACTIVATION] = "activation",
    [UMADV_ALLOC_WORKSPACE]  = "workspace",
    [UMADV_ALLOC_INPUT]      = "input",
};

static const char *const step_kind_names[UMADV_STEP_KIND_COUNT] = {
    [UMADV_STEP_KERNEL] = "kernel",
    [UMADV_STEP_LAYER]  = "layer",
    [UMADV_STEP_COPY]   = "copy",
};

const char *umadv__alloc_kind_name(umadv_alloc_kind_t kind)
{
    return (unsigned)kind < UMADV_ALLOC_KIND_COUNT ? alloc_kind_names[kind] : "?";
}

int umadv__alloc_kind_parse(const char *name, umadv_alloc_kind_t *kind_p)
{
    int i = umadv__name_index(alloc_kind_names, UMADV_ALLOC_KIND_COUNT, name);

    if (i < 0)
        return -1;
    *kind_p = (umadv_alloc_kind_t)i;
    return 0;
}

const char *umadv__step_kind_name(umadv_step_kind_t kind)
{
    return (unsigned)kind < UMADV_STEP_KIND_COUNT ? step_kind_names[kind] : "?";
}

int umadv__step_kind_parse(const char *name, umadv_step_kind_t *kind_p)
{
    int i = umadv__name_index(step_kind_names, UMADV_STEP_KIND_COUNT, name);

    if (i < 0)
        return -1;
    *kind_p = (umadv_step_kind_t)i;
    return 0;
}

void umadv__link_model_default(umadv_link_model_t *link)
{
    /* Fitted to DESIGN.md's H200 measurements as latency + bytes/bw:
     * fetch 2 MiB ~20 GB/s, 64 MiB ~50 GB/s; eviction 2 MiB 3.3 GB/s,
     * 8 GiB ~10.3 GB/s; demand paging 3.8 GB/s; remote access ~42 GB/s
     * each way. The fault latency for first-touch pages is an estimate. */
    link->fetch_bw      = 52e9;
    link->fetch_latency = 62e-6;
    link->evict_bw      = 11e9;
    link->evict_latency = 445e-6;
    link->fault_bw      = 3.8e9;
    link->fault_latency = 20e-6;
    link->remote_bw     = 42e9;
    /* not measured there: taken as full overlap */
    link->duplex_fetch_bw = 0;
    link->duplex_evict_bw = 0;
    /* nor was the staged channel: absent, as in traces made before it */
    link->stage_evict_bw        = 0;
    link->stage_evict_latency   = 0;
    link->stage_restore_bw      = 0;
    link->stage_restore_latency = 0;
    link->stage_duplex_evict_bw   = 0;
    link->stage_duplex_restore_bw = 0;
}

/* Every figure once, in the order the format writes them: key, is a
 * bandwidth, optional. */
#define LINK_FIGURES(X)                                                        \
    X(fetch_bw, 1, 0) X(fetch_latency, 0, 0) X(evict_bw, 1, 0)                  \
    X(evict_latency, 0, 0) X(fault_bw, 1, 0) X(fault_latency, 0, 0)            \
    X(remote_bw, 1, 0) X(duplex_fetch_bw, 1, 1) X(duplex_evict_bw, 1, 1)       \
    X(stage_evict_bw, 1, 1) X(stage_evict_latency, 0, 1)                        \
    X(stage_restore_bw, 1, 1) X(stage_restore_latency, 0, 1)                    \
    X(stage_duplex_evict_bw, 1, 1) X(stage_duplex_restore_bw, 1, 1)

#define LINK_FIGURE(_key, _is_bw, _optional) \
    {#_key, offsetof(umadv_link_model_t, _key), _is_bw, _optional},
#define LINK_KEY(_key, _is_bw, _optional) #_key,

static const umadv_link_figure_t link_figures[] = {LINK_FIGURES(LINK_FIGURE)};

const char *const umadv__link_keys[] = {LINK_FIGURES(LINK_KEY) NULL};

const umadv_link_figure_t *umadv__link_figures(size_t *count_p)
{
    *count_p = UMADV_ARRAY_SIZE(link_figures);
    return link_figures;
}

/* Written so that NaN fails every comparison and is refused. */
int umadv__link_figure_plausible(int is_bw, double value)
{
    if (is_bw)
        return value >= UMADV_LINK_BW_MIN && value <= UMADV_LINK_BW_MAX;
    return value >= 0 && value <= UMADV_LINK_LATENCY_MAX;
}

const char *umadv__link_model_implausible(const umadv_link_model_t *link)
{
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(link_figures); i++) {
        const umadv_link_figure_t *f = &link_figures[i];
        double value = *(const double *)((const char *)link + f->offset);

        if (!umadv__link_figure_unset(f, value) && !umadv__link_figure_plausible(f->is_bw, value))
            return f->key;
    }
    return NULL;
}

int umadv__trace_alloc_owns_pages(const umadv_trace_t *trace, uint32_t a)
{
    return trace->allocs[a].size >= trace->section_size;
}

int umadv__trace_alloc_stageable(const umadv_trace_t *trace, uint32_t a)
{
    return trace->allocs[a].stageable && umadv__trace_alloc_owns_pages(trace, a);
}

uint64_t umadv__trace_stageable_bytes(const umadv_trace_t *trace)
{
    uint64_t bytes = 0;

    for (uint32_t a = 0; a < trace->nallocs; a++)
        bytes += umadv__trace_alloc_stageable(trace, a) ? trace->allocs[a].size : 0;
    return bytes;
}

/* Sections covering @size bytes, without the wrap of (size + ss - 1) / ss
 * near 2^64. */
static uint64_t sections_for(uint64_t size, uint64_t section_size)
{
    return size / section_size + (size % section_size != 0);
}

static int section_size_valid(uint64_t size)
{
    return size >= UMADV_SECTION_SIZE_MIN && size <= UMADV_SECTION_SIZE_MAX &&
           (size & (size - 1)) == 0;
}

umadv_status_t umadv__trace_init(umadv_trace_t *trace, uint64_t section_size)
{
    if (!section_size_valid(section_size))
        return UMADV_ERR_INVALID_PARAM;
    memset(trace, 0, sizeof(*trace));
    trace->section_size = section_size;
    umadv__link_model_default(&trace->link);
    return UMADV_OK;
}

void umadv__trace_cleanup(umadv_trace_t *trace)
{
    for (uint32_t i = 0; i < trace->nallocs; i++) {
        free(trace->allocs[i].tag);
        free(trace->allocs[i].site);
    }
    for (uint32_t i = 0; i < trace->nsteps; i++)
        free(trace->steps[i].name);
    free(trace->allocs);
    free(trace->sections);
    free(trace->steps);
    free(trace->accesses);
    free(trace->source);
    free(trace->unseen);
    umadv__activity_cleanup(&trace->activity);
    memset(trace, 0, sizeof(*trace));
}

/* @n items of @size from @from into a new array (NULL for none). */
static umadv_status_t array_dup(const void *from, size_t n, size_t size, void **to_p)
{
    *to_p = NULL;
    if (n == 0)
        return UMADV_OK;
    *to_p = malloc(n * size);
    if (*to_p == NULL)
        return UMADV_ERR_NO_MEMORY;
    memcpy(*to_p, from, n * size);
    return UMADV_OK;
}

/* The copy's strings its own: the arrays came over with @from's pointers,
 * cleared first so that a cleanup midway frees none of @from's. */
static umadv_status_t strings_dup(const umadv_trace_t *from, umadv_trace_t *to)
{
    umadv_status_t status = UMADV_OK;

    for (uint32_t i = 0; i < to->nallocs; i++)
        to->allocs[i].tag = to->allocs[i].site = NULL;
    for (uint32_t i = 0; i < to->nsteps; i++)
        to->steps[i].name = NULL;
    for (uint32_t i = 0; i < to->nallocs && status == UMADV_OK; i++)
        status = umadv__strdup(from->allocs[i].tag, &to->allocs[i].tag);
    for (uint32_t i = 0; i < to->nsteps && status == UMADV_OK; i++)
        status = umadv__strdup(from->steps[i].name, &to->steps[i].name);
    if (status == UMADV_OK)
        status = umadv__strdup(from->source, &to->source);
    return status;
}

umadv_status_t umadv__trace_copy(const umadv_trace_t *from, umadv_trace_t *to)
{
    umadv_status_t status;

    memset(to, 0, sizeof(*to));
    to->device       = from->device;
    to->link         = from->link;
    to->section_size = from->section_size;
    to->niterations  = from->niterations;
    to->guessed_steps = from->guessed_steps;
    to->finalized    = from->finalized;
    status = array_dup(from->allocs, from->nallocs, sizeof(*from->allocs), (void **)&to->allocs);
    if (status == UMADV_OK)
        status = array_dup(from->steps, from->nsteps, sizeof(*from->steps), (void **)&to->steps);
    /* counted as they came, so that a cleanup midway frees what came */
    to->nallocs = to->allocs != NULL ? from->nallocs : 0;
    to->nsteps  = to->steps != NULL ? from->nsteps : 0;
    to->allocs_cap = to->nallocs;
    to->steps_cap  = to->nsteps;
    if (status == UMADV_OK)
        status = strings_dup(from, to);
    if (status == UMADV_OK)
        status = array_dup(from->sections, from->nsections, sizeof(*from->sections),
                           (void **)&to->sections);
    if (status == UMADV_OK)
        status = array_dup(from->accesses, from->naccesses, sizeof(*from->accesses),
                           (void **)&to->accesses);
    if (status == UMADV_OK)
        status = array_dup(from->unseen, from->nunseen, sizeof(*from->unseen),
                           (void **)&to->unseen);
    if (status != UMADV_OK) {
        umadv__trace_cleanup(to);
        return status;
    }
    to->nsections    = from->nsections;
    to->naccesses    = from->naccesses;
    to->accesses_cap = from->naccesses;
    to->nunseen      = from->nunseen;
    to->unseen_cap   = from->nunseen;
    return UMADV_OK;
}

static int allocs_same(const umadv_trace_alloc_t *a, const umadv_trace_alloc_t *b)
{
    return a->base == b->base && a->size == b->size && a->kind == b->kind &&
           a->alloc_step == b->alloc_step && a->free_step == b->free_step &&
           a->first_section == b->first_section && a->nsections == b->nsections &&
           a->stageable == b->stageable;
}

static int steps_same(const umadv_trace_step_t *a, const umadv_trace_step_t *b)
{
    return a->kind == b->kind && a->iteration == b->iteration &&
           a->duration_ns == b->duration_ns && a->host_ns == b->host_ns &&
           a->first_access == b->first_access &&
           a->naccesses == b->naccesses;
}

/* @n items of @size alike; plain records without padding */
static int array_same(const void *a, const void *b, size_t n, size_t size)
{
    return n == 0 || memcmp(a, b, n * size) == 0;
}

int umadv__trace_same_figures(const umadv_trace_t *a, const umadv_trace_t *b)
{
    if (a->section_size != b->section_size || a->niterations != b->niterations ||
        a->guessed_steps != b->guessed_steps || a->finalized != b->finalized ||
        a->nallocs != b->nallocs || a->nsteps != b->nsteps || a->nsections != b->nsections ||
        a->naccesses != b->naccesses || a->nunseen != b->nunseen ||
        memcmp(&a->link, &b->link, sizeof(a->link)) != 0 ||
        memcmp(&a->device, &b->device, sizeof(a->device)) != 0)
        return 0;
    for (uint32_t i = 0; i < a->nallocs; i++) {
        if (!allocs_same(&a->allocs[i], &b->allocs[i]))
            return 0;
    }
    for (uint32_t i = 0; i < a->nsteps; i++) {
        if (!steps_same(&a->steps[i], &b->steps[i]))
            return 0;
    }
    return array_same(a->sections, b->sections, a->nsections, sizeof(*a->sections)) &&
           array_same(a->accesses, b->accesses, a->naccesses, sizeof(*a->accesses)) &&
           array_same(a->unseen, b->unseen, a->nunseen, sizeof(*a->unseen));
}

umadv_status_t umadv__trace_add_unseen(umadv_trace_t *trace, uint32_t alloc, uint32_t step)
{
    if (alloc >= trace->nallocs || step >= trace->nsteps)
        return UMADV_ERR_INVALID_PARAM;
    if (umadv__array_reserve((void **)&trace->unseen, &trace->unseen_cap, trace->nunseen + 1,
                             sizeof(*trace->unseen)) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    trace->unseen[trace->nunseen++] = (umadv_trace_unseen_t){alloc, step};
    return UMADV_OK;
}

umadv_status_t umadv__trace_set_site(umadv_trace_t *trace, uint32_t alloc, const char *site)
{
    char *copy = NULL;

    if (alloc >= trace->nallocs)
        return UMADV_ERR_INVALID_PARAM;
    if (site != NULL && umadv__strdup(site, &copy) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    free(trace->allocs[alloc].site);
    trace->allocs[alloc].site = copy;
    return UMADV_OK;
}

umadv_status_t umadv__trace_set_source(umadv_trace_t *trace, const char *source)
{
    char *copy;
    umadv_status_t status = umadv__strdup(source, &copy);

    if (status != UMADV_OK)
        return status;
    free(trace->source);
    trace->source = copy;
    return UMADV_OK;
}

umadv_status_t umadv__trace_source_note(umadv_trace_t *trace, const char *note)
{
    char source[512];

    snprintf(source, sizeof(source), "%s; %s", trace->source != NULL ? trace->source : "umadv",
             note);
    return umadv__trace_set_source(trace, source);
}

umadv_status_t umadv__trace_add_alloc(umadv_trace_t *trace, uint64_t base, uint64_t size,
                                      umadv_alloc_kind_t kind, const char *tag,
                                      uint32_t *id_p)
{
    umadv_trace_alloc_t *alloc;
    umadv_status_t status;
    char *tag_copy;

    if (trace->finalized || size == 0 || (unsigned)kind >= UMADV_ALLOC_KIND_COUNT ||
        trace->nallocs == UINT32_MAX - 1 || base + size < base)
        return UMADV_ERR_INVALID_PARAM;
    status = umadv__array_reserve((void **)&trace->allocs, &trace->allocs_cap,
                                  trace->nallocs + 1, sizeof(*trace->allocs));
    if (status != UMADV_OK)
        return status;
    status = umadv__strdup(tag, &tag_copy);
    if (status != UMADV_OK)
        return status;
    alloc = &trace->allocs[trace->nallocs];
    memset(alloc, 0, sizeof(*alloc));
    alloc->base       = base;
    alloc->size       = size;
    alloc->kind       = kind;
    alloc->alloc_step = UMADV_STEP_NONE;
    alloc->free_step  = UMADV_STEP_NONE;
    alloc->tag        = tag_copy;
    *id_p = trace->nallocs++;
    return UMADV_OK;
}

umadv_status_t umadv__trace_set_lifetime(umadv_trace_t *trace, uint32_t alloc,
                                         uint32_t alloc_step, uint32_t free_step)
{
    if (trace->finalized || alloc >= trace->nallocs)
        return UMADV_ERR_INVALID_PARAM;
    if (alloc_step != UMADV_STEP_NONE && free_step != UMADV_STEP_NONE &&
        free_step < alloc_step)
        return UMADV_ERR_INVALID_PARAM;
    trace->allocs[alloc].alloc_step = alloc_step;
    trace->allocs[alloc].free_step  = free_step;
    return UMADV_OK;
}

umadv_status_t umadv__trace_end_with_window(umadv_trace_t *trace, uint32_t alloc)
{
    umadv_trace_alloc_t *a = alloc < trace->nallocs ? &trace->allocs[alloc] : NULL;

    /* Its accesses all lie at or before the last step: the invariants hold. */
    if (a == NULL || trace->nsteps == 0 || a->alloc_step == UMADV_STEP_NONE ||
        a->free_step != UMADV_STEP_NONE)
        return UMADV_ERR_INVALID_PARAM;
    a->free_step = trace->nsteps - 1;
    return UMADV_OK;
}

umadv_status_t umadv__trace_add_step(umadv_trace_t *trace, const char *name,
                                     umadv_step_kind_t kind, uint32_t iteration,
                                     uint64_t duration_ns, uint32_t *step_p)
{
    umadv_trace_step_t *step;
    umadv_status_t status;
    char *name_copy;

    if (trace->finalized || (unsigned)kind >= UMADV_STEP_KIND_COUNT ||
        trace->nsteps == UINT32_MAX - 1)
        return UMADV_ERR_INVALID_PARAM;
    if (trace->nsteps > 0 && iteration < trace->steps[trace->nsteps - 1].iteration)
        return UMADV_ERR_INVALID_PARAM;
    status = umadv__array_reserve((void **)&trace->steps, &trace->steps_cap,
                                  trace->nsteps + 1, sizeof(*trace->steps));
    if (status != UMADV_OK)
        return status;
    status = umadv__strdup(name, &name_copy);
    if (status != UMADV_OK)
        return status;
    step = &trace->steps[trace->nsteps];
    step->name         = name_copy;
    step->kind         = kind;
    step->iteration    = iteration;
    step->duration_ns  = duration_ns;
    step->host_ns      = 0;
    step->first_access = trace->naccesses;
    step->naccesses    = 0;
    if (step_p != NULL)
        *step_p = trace->nsteps;
    trace->nsteps++;
    return UMADV_OK;
}

umadv_status_t umadv__trace_add_access_sections(umadv_trace_t *trace, uint32_t alloc,
                                                uint32_t first, uint32_t count,
                                                uint32_t mode, uint32_t faults)
{
    umadv_trace_access_t *access;
    uint64_t nsections;
    umadv_status_t status;

    if (trace->finalized || trace->nsteps == 0 || alloc >= trace->nallocs ||
        count == 0 || mode == 0 || (mode & ~(uint32_t)UMADV_ACCESS_RW) != 0)
        return UMADV_ERR_INVALID_PARAM;
    nsections = sections_for(trace->allocs[alloc].size, trace->section_size);
    if ((uint64_t)first + count > nsections)
        return UMADV_ERR_INVALID_PARAM;
    if (trace->naccesses == UINT32_MAX - 1)
        return UMADV_ERR_NO_MEMORY;
    status = umadv__array_reserve((void **)&trace->accesses, &trace->accesses_cap,
                                  trace->naccesses + 1, sizeof(*trace->accesses));
    if (status != UMADV_OK)
        return status;
    access = &trace->accesses[trace->naccesses++];
    access->alloc  = alloc;
    access->first  = first;
    access->count  = count;
    access->mode   = mode;
    access->faults = faults;
    trace->steps[trace->nsteps - 1].naccesses++;
    return UMADV_OK;
}

int umadv__trace_last_step_covers(const umadv_trace_t *trace, uint32_t alloc, uint64_t offset)
{
    const umadv_trace_step_t *step;
    uint64_t section;

    if (trace->finalized || trace->nsteps == 0 || alloc >= trace->nallocs ||
        offset >= trace->allocs[alloc].size)
        return 0;
    step = &trace->steps[trace->nsteps - 1];
    section = offset / trace->section_size;
    for (uint32_t i = step->first_access; i < step->first_access + step->naccesses; i++) {
        const umadv_trace_access_t *a = &trace->accesses[i];

        if (a->alloc == alloc && section >= a->first && section < (uint64_t)a->first + a->count)
            return 1;
    }
    return 0;
}

umadv_status_t umadv__trace_add_access(umadv_trace_t *trace, uint32_t alloc,
                                       uint64_t offset, uint64_t size, uint32_t mode,
                                       uint32_t faults)
{
    uint64_t first, last;

    if (alloc >= trace->nallocs || size == 0 || offset >= trace->allocs[alloc].size ||
        size > trace->allocs[alloc].size - offset)
        return UMADV_ERR_INVALID_PARAM;
    first = offset / trace->section_size;
    last  = (offset + size - 1) / trace->section_size;
    return umadv__trace_add_access_sections(trace, alloc, (uint32_t)first,
                                            (uint32_t)(last - first + 1), mode, faults);
}

static int access_compare(const void *a, const void *b)
{
    const umadv_trace_access_t *x = a, *y = b;

    if (x->alloc != y->alloc)
        return x->alloc < y->alloc ? -1 : 1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return 0;
}

static uint32_t saturating_add32(uint32_t a, uint32_t b)
{
    return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

/* Whether @next (sorted after @prev) belongs in the same run: it overlaps,
 * or it touches with the same mode. */
static int access_joins(const umadv_trace_access_t *prev, const umadv_trace_access_t *next)
{
    uint64_t prev_end = (uint64_t)prev->first + prev->count;

    if (next->alloc != prev->alloc)
        return 0;
    return next->first < prev_end || (next->first == prev_end && next->mode == prev->mode);
}

static void access_absorb(umadv_trace_access_t *into, const umadv_trace_access_t *from)
{
    uint64_t end = UMADV_MAX((uint64_t)into->first + into->count,
                             (uint64_t)from->first + from->count);

    into->count  = (uint32_t)(end - into->first);
    into->mode  |= from->mode;
    into->faults = saturating_add32(into->faults, from->faults);
}

/* Sort one step's accesses and merge runs of one allocation that overlap
 * or touch, so every section appears at most once per step. Returns the
 * new count. Runs that touch with different modes stay apart; a merge that
 * widens a run's mode may let it join its left neighbour, so fold back
 * until stable: finalizing a finalized trace must change nothing. */
static uint32_t step_merge_accesses(umadv_trace_access_t *acc, uint32_t n)
{
    uint32_t out = 0;

    if (n == 0)
        return 0;
    qsort(acc, n, sizeof(*acc), access_compare);
    for (uint32_t i = 1; i < n; i++) {
        if (!access_joins(&acc[out], &acc[i])) {
            acc[++out] = acc[i];
            continue;
        }
        access_absorb(&acc[out], &acc[i]);
        while (out > 0 && access_joins(&acc[out - 1], &acc[out])) {
            access_absorb(&acc[out - 1], &acc[out]);
            out--;
        }
    }
    return out + 1;
}

static void compact_accesses(umadv_trace_t *trace)
{
    uint32_t out = 0;

    for (uint32_t s = 0; s < trace->nsteps; s++) {
        umadv_trace_step_t *step = &trace->steps[s];
        umadv_trace_access_t *acc;
        uint32_t n;

        if (step->naccesses == 0) { /* accesses may be NULL: no pointer math */
            step->first_access = out;
            continue;
        }
        acc = &trace->accesses[step->first_access];
        n = step_merge_accesses(acc, step->naccesses);
        memmove(&trace->accesses[out], acc, n * sizeof(*acc));
        step->first_access = out;
        step->naccesses    = n;
        out += n;
    }
    trace->naccesses = out;
}

static umadv_status_t build_sections(umadv_trace_t *trace, char *why, size_t why_len)
{
    uint64_t total = 0;
    umadv_trace_section_t *sections;
    uint32_t next = 0;

    for (uint32_t a = 0; a < trace->nallocs && total < UINT32_MAX; a++)
        total += sections_for(trace->allocs[a].size, trace->section_size);
    if (total >= UINT32_MAX) {
        snprintf(why, why_len, "%llu sections: more than the format allows; use a larger section size",
                 (unsigned long long)total);
        return UMADV_ERR_INVALID_PARAM;
    }
    sections = calloc(total ? total : 1, sizeof(*sections));
    if (sections == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (uint32_t a = 0; a < trace->nallocs; a++) {
        umadv_trace_alloc_t *alloc = &trace->allocs[a];
        alloc->first_section = next;
        alloc->nsections = (uint32_t)sections_for(alloc->size, trace->section_size);
        for (uint32_t i = 0; i < alloc->nsections; i++, next++) {
            uint64_t offset = (uint64_t)i * trace->section_size;
            sections[next].alloc  = a;
            sections[next].index  = i;
            sections[next].offset = offset;
            sections[next].size   = UMADV_MIN(trace->section_size, alloc->size - offset);
        }
    }
    free(trace->sections);
    trace->sections  = sections;
    trace->nsections = next;
    return UMADV_OK;
}

static int alloc_alive_at(const umadv_trace_alloc_t *alloc, uint32_t step)
{
    return (alloc->alloc_step == UMADV_STEP_NONE || alloc->alloc_step <= step) &&
           (alloc->free_step == UMADV_STEP_NONE || step <= alloc->free_step);
}

static umadv_status_t check_invariants(const umadv_trace_t *trace, char *why, size_t why_len)
{
    for (uint32_t a = 0; a < trace->nallocs; a++) {
        const umadv_trace_alloc_t *alloc = &trace->allocs[a];
        if ((alloc->alloc_step != UMADV_STEP_NONE && alloc->alloc_step >= trace->nsteps) ||
            (alloc->free_step != UMADV_STEP_NONE && alloc->free_step >= trace->nsteps)) {
            snprintf(why, why_len, "allocation %u: lifetime names a step past the last (%u steps)",
                     a, trace->nsteps);
            return UMADV_ERR_CORRUPT;
        }
    }
    for (uint32_t s = 0; s < trace->nsteps; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        for (uint32_t i = 0; i < step->naccesses; i++) {
            const umadv_trace_access_t *acc = &trace->accesses[step->first_access + i];
            if (!alloc_alive_at(&trace->allocs[acc->alloc], s)) {
                snprintf(why, why_len, "step %u touches allocation %u outside its lifetime",
                         s, acc->alloc);
                return UMADV_ERR_CORRUPT;
            }
        }
    }
    return UMADV_OK;
}

umadv_status_t umadv__trace_finalize(umadv_trace_t *trace, char *why, size_t why_len)
{
    char scratch[8];
    umadv_status_t status;

    if (why == NULL) {
        why = scratch;
        why_len = sizeof(scratch);
    }
    why[0] = '\0';
    if (trace->finalized)
        return UMADV_OK;
    status = build_sections(trace, why, why_len);
    if (status != UMADV_OK)
        return status;
    compact_accesses(trace);
    status = check_invariants(trace, why, why_len);
    if (status == UMADV_OK)
        status = umadv__activity_finalize(&trace->activity, trace->nsteps, why, why_len);
    if (status != UMADV_OK)
        return status;
    trace->niterations = trace->nsteps ? trace->steps[trace->nsteps - 1].iteration + 1 : 0;
    trace->finalized = 1;
    return UMADV_OK;
}

umadv_status_t umadv__trace_iteration_steps(const umadv_trace_t *trace, uint32_t iteration,
                                            uint32_t *first_p, uint32_t *count_p)
{
    uint32_t lo = 0, hi = trace->nsteps, first;

    /* Steps are sorted by iteration: binary search the first one. */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (trace->steps[mid].iteration < iteration)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == trace->nsteps || trace->steps[lo].iteration != iteration)
        return UMADV_ERR_NOT_FOUND;
    first = lo;
    while (lo < trace->nsteps && trace->steps[lo].iteration == iteration)
        lo++;
    *first_p = first;
    *count_p = lo - first;
    return UMADV_OK;
}

umadv_status_t umadv__trace_iteration_require(const umadv_trace_t *trace, uint32_t iteration,
                                              uint32_t *first_p, uint32_t *count_p)
{
    umadv_status_t status = umadv__trace_iteration_steps(trace, iteration, first_p, count_p);

    if (status == UMADV_ERR_NOT_FOUND)
        umadv_error("the trace has no iteration %u (it has %u)", iteration, trace->niterations);
    return status;
}

uint64_t umadv__trace_run_bytes(const umadv_trace_t *trace, uint32_t alloc,
                                uint32_t first, uint32_t count)
{
    const umadv_trace_alloc_t *a = &trace->allocs[alloc];
    uint64_t start = (uint64_t)first * trace->section_size;
    uint64_t end = UMADV_MIN(a->size, (uint64_t)(first + count) * trace->section_size);

    return end > start ? end - start : 0;
}

static int section_id_compare(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

size_t umadv__trace_for_runs(const umadv_trace_t *trace, uint32_t *sections, size_t count,
                             umadv_trace_run_fn fn, void *arg)
{
    size_t runs = 0;

    if (count == 0)
        return 0;
    qsort(sections, count, sizeof(*sections), section_id_compare);
    for (size_t i = 0; i < count;) {
        const umadv_trace_section_t *sec = &trace->sections[sections[i]];
        size_t k = i + 1;

        while (k < count && sections[k] == sections[k - 1] + 1 &&
               trace->sections[sections[k]].alloc == sec->alloc)
            k++;
        fn(arg, sec->alloc, sec->index, (uint32_t)(k - i));
        runs++;
        i = k;
    }
    return runs;
}
