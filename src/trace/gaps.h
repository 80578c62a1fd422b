/*
 * The gaps between one recorded iteration's uses of each allocation, in
 * time: how long an allocation lies untouched around a given step. The
 * two-pass profile (api/profile.c, TWO PASSES) reads them from its first
 * pass to choose, before each launch of the second, which blocks to move
 * off the GPU so that what the launch touches faults.
 */
#ifndef UMADV_TRACE_GAPS_H
#define UMADV_TRACE_GAPS_H

#include <stdint.h>

#include "common/keyed.h"
#include "trace/trace.h"

typedef struct umadv_gaps_key {
    uint64_t base;
    uint32_t birth;  /* the step before which it is allocated (0: before the first) */
    uint32_t alloc;
} umadv_gaps_key_t;

typedef struct umadv_trace_gaps {
    const umadv_trace_t *trace;    /* finalized, one iteration; not owned */
    umadv_keyed_t        uses;     /* by allocation: the steps that touch it,
                                    * ascending, each once */
    uint64_t            *start_ns; /* nsteps + 1: a step's start in the iteration,
                                    * from the steps' durations */
    umadv_gaps_key_t    *by_base;  /* allocations by base address, then birth */
    umadv_keyed_t        sec_uses;  /* by section: the steps that touch it, ascending */
    umadv_keyed_t        unseen;    /* by allocation: the steps it was left unseen
                                     * at (trace->unseen), ascending */
    umadv_keyed_t        unseen_at; /* by step: the allocations left unseen there */
} umadv_trace_gaps_t;

/* Index @trace (finalized, kept alive by the caller until cleanup). */
umadv_status_t umadv__trace_gaps_init(umadv_trace_gaps_t *gaps, const umadv_trace_t *trace);
void umadv__trace_gaps_cleanup(umadv_trace_gaps_t *gaps);

/* The allocation of the trace at @base, of @size bytes, that exists at
 * @step; UMADV_STEP_NONE when none (another iteration's block). */
uint32_t umadv__trace_gaps_find(const umadv_trace_gaps_t *gaps, uint64_t base, uint64_t size,
                                uint32_t step);

/* Whether allocation @id of the trace was born at @alloc_step (not
 * UMADV_STEP_NONE: a block that existed before the iteration is found by
 * its base), is @size bytes and exists at @step: the block born @id-th
 * in another recording of the iteration, wherever the allocator put it
 * this time (a batch made each iteration moves every block made after
 * it from one iteration to the next). */
int umadv__trace_gaps_born(const umadv_trace_gaps_t *gaps, uint32_t id, uint64_t size,
                           uint32_t alloc_step, uint32_t step);

/* Whether allocation @id of the trace is the one umadv__trace_gaps_find
 * gives for @base and @size at @step: it lies there with that size and
 * exists then (two live blocks never share an address: at most one
 * does). A caller that looks one block up step after step asks this of
 * the answer it had, in O(1), before it searches again. */
int umadv__trace_gaps_is(const umadv_trace_gaps_t *gaps, uint32_t id, uint64_t base,
                         uint64_t size, uint32_t step);

/* Nanoseconds that @alloc lies untouched around @step: from the end of
 * its last use before @step to the start of its first use after; 0 when
 * @step touches it. An allocation that outlives the iteration at both
 * ends wraps around (its last use precedes its first use of the next
 * iteration); one born or freed in it counts from its birth, or to its
 * free. UINT64_MAX when nothing in the iteration touches it. */
uint64_t umadv__trace_gaps_around(const umadv_trace_gaps_t *gaps, uint32_t alloc, uint32_t step);

/* The last step before @step that touches @section: for an allocation
 * that outlives the iteration at both ends and has no use before @step,
 * its last use in the iteration (the one before, as the next replays
 * it); UMADV_STEP_NONE where nothing touches it before @step. */
uint32_t umadv__trace_gaps_section_last(const umadv_trace_gaps_t *gaps, uint32_t section,
                                        uint32_t step);

/* Whether the allocation of @section (a trace section) was left unseen
 * (trace->unseen) at a step from @from on that comes before the
 * section's next touch, in a window of steps [@first, @first + @n)
 * replayed over and over (@from at most @first + @n): its first touch at
 * or after @from, or, for an allocation that outlives the window, its
 * first in the next replay. The section's data staged or dropped from
 * @from on could be read discarded there. */
int umadv__trace_gaps_unseen_ahead(const umadv_trace_gaps_t *gaps, uint32_t section,
                                   uint32_t from, uint32_t first, uint32_t n);

#endif
