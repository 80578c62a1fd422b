/*
 * Where the pages under an address range are, as far as the replay
 * knows: the GPU after one of its fetches completed there, not the GPU
 * after one of its evictions, discards or releases did.
 *
 * WHY. Section states follow trace allocations, and a block that plays
 * one starts as HOST when it is bound. But the pool hands out the memory
 * of freed blocks again, and a block freed on the GPU (dropped: dead, no
 * copy) leaves its pages there. Without this record every new tensor of a
 * PyTorch iteration was fetched again: on ResNet-50, 19 GiB of calls per
 * iteration over pages already on the GPU, 40 ms of waiting under the
 * oracle policy alone. Bound over a range recorded on the GPU, a block
 * starts RESIDENT (exec.c, umadv__exec_bind), and a fresh fetch over one
 * is counted in without a call (worker.c, populate_on_stream).
 *
 * A call over pages already there is not free: a cudaMemPrefetchAsync to
 * the GPU of a resident range holds its stream 1.4-1.5 ms a GiB in 64 MiB
 * calls, 3.2 in 2 MiB ones (bench/populate_cost, H200), in front of the
 * step's kernels. So the record answers for any range, wherever a block
 * starts: it keeps the runs of addresses on the GPU, sorted, disjoint and
 * not touching (a fetch merges with its neighbours, an eviction cuts a
 * run). An earlier record kept an entry per section start, valid for no
 * longer a range than the one recorded: a block cut from the pool at
 * other offsets than the one before it missed it, and VGG-16 b64 under a
 * plan populated 9.6 GiB an iteration on its steps' streams.
 *
 * The simulator keeps the same record over the trace's addresses (the
 * profile's blocks), noted where its sections land and leave, so that it
 * charges the populations the executor makes and no others (sim/lanes.c).
 *
 * A hint, never a promise: faults, the CPU and the driver move pages
 * without telling us. A wrong GPU entry costs the faults a fetch would
 * have spared, never data (the sections it answers for are fresh or
 * resident by the core's account). An eviction moves whole pages, so its
 * cut is widened to PAGES_GRAIN: a neighbour sharing a page is not
 * claimed on the GPU. Out of memory, a fetch's note is lost (a call
 * more) and an eviction that would split a run removes it whole.
 */
#include "schedule/pages.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define PAGES_MIN_CAP 64
#define PAGES_GRAIN   (UINT64_C(64) << 10) /* the GPU's big page: what an eviction may take */

/* The first run that ends at or after @addr (runs touching it included). */
static size_t first_reaching(const umadv_pages_t *m, uintptr_t addr)
{
    size_t lo = 0, hi = m->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (m->runs[mid].end < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Room for @extra runs more; 0 when there is none to be had. */
static int reserve(umadv_pages_t *m, size_t extra)
{
    size_t cap = m->cap ? m->cap : PAGES_MIN_CAP;
    umadv_pages_run_t *runs;

    if (m->n + extra <= m->cap)
        return 1;
    while (cap < m->n + extra)
        cap *= 2;
    runs = realloc(m->runs, cap * sizeof(*runs));
    if (runs == NULL)
        return 0;
    m->runs = runs;
    m->cap = cap;
    return 1;
}

/* Runs [i, j) replaced by the @k runs of @with (k <= j - i + 1, room made).
 * A fetch that grows one run (the common note: a block's sections one by
 * one) moves nothing. */
static void runs_replace(umadv_pages_t *m, size_t i, size_t j, const umadv_pages_run_t *with, size_t k)
{
    if (i + k != j)
        memmove(&m->runs[i + k], &m->runs[j], (m->n - j) * sizeof(*m->runs));
    if (k > 0) /* none: runs may be NULL (an empty record), which memcpy may not take */
        memcpy(&m->runs[i], with, k * sizeof(*with));
    m->n = m->n - (j - i) + k;
}

/* [a, b) on the GPU: merged with every run it overlaps or touches. */
static void mark_on(umadv_pages_t *m, uintptr_t a, uintptr_t b)
{
    size_t i = first_reaching(m, a), j = i;
    umadv_pages_run_t run = {a, b};

    for (; j < m->n && m->runs[j].start <= b; j++) {
        run.start = UMADV_MIN(run.start, m->runs[j].start);
        run.end = UMADV_MAX(run.end, m->runs[j].end);
    }
    if (i == j && !reserve(m, 1))
        return;
    runs_replace(m, i, j, &run, 1);
}

/* [a, b) not on the GPU: the runs it overlaps keep what lies outside it. */
static void mark_off(umadv_pages_t *m, uintptr_t a, uintptr_t b)
{
    size_t i = first_reaching(m, a + 1), j = i, k = 0;
    umadv_pages_run_t keep[2];

    for (; j < m->n && m->runs[j].start < b; j++) {
        if (m->runs[j].start < a)
            keep[k++] = (umadv_pages_run_t){m->runs[j].start, a};
        if (m->runs[j].end > b)
            keep[k++] = (umadv_pages_run_t){b, m->runs[j].end};
    }
    if (k > j - i && !reserve(m, 1))
        k = 0; /* one run to split and no room: it goes whole */
    runs_replace(m, i, j, keep, k);
}

void umadv__pages_note(umadv_pages_t *m, uintptr_t addr, uint64_t len, int on_gpu)
{
    uintptr_t a = addr, b;

    if (len == 0 || len > UINTPTR_MAX - PAGES_GRAIN || addr > UINTPTR_MAX - PAGES_GRAIN - len)
        return;
    b = addr + len;
    if (on_gpu) {
        mark_on(m, a, b);
        return;
    }
    a -= a % PAGES_GRAIN;
    b += (PAGES_GRAIN - b % PAGES_GRAIN) % PAGES_GRAIN;
    mark_off(m, a, b);
}

int umadv__pages_on_gpu(const umadv_pages_t *m, uintptr_t addr, uint64_t len)
{
    size_t i;

    if (len == 0 || addr == UINTPTR_MAX)
        return 0;
    i = first_reaching(m, addr + 1); /* the run holding addr, if any */
    return i < m->n && m->runs[i].start <= addr && len <= m->runs[i].end - addr;
}

void umadv__pages_cleanup(umadv_pages_t *m)
{
    free(m->runs);
    *m = (umadv_pages_t){0};
}
