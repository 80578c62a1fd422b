/*
 * The managed-memory pool. Arenas come from cuda_ops->malloc_managed;
 * blocks are carved from them best-fit and coalesced with free neighbours
 * when freed. A block is cut into sections of section_size bytes (the unit
 * of placement); blocks of a section or more start on a section boundary
 * and span whole sections, so their transfers never move a neighbour's
 * data. Smaller blocks are 256-byte aligned (what cudaMalloc guarantees)
 * and may share a section.
 *
 * Cost, with n live blocks (free or used) and A arenas:
 *   malloc  O(log n) expected (a treap of free blocks keyed by size),
 *           plus O(A) when it must add an arena;
 *   free    O(log n) expected, plus O(A) when it returns an arena;
 *   lookup  O(log A + log n): binary search of the sorted arenas, then
 *           the treap of used blocks keyed by address.
 *
 * Arenas: max(UMADV_ARENA_SIZE, the request) rounded to sections. An
 * arena left empty is kept, as PyTorch's caching allocator keeps its
 * segments: a training iteration empties arenas in its backward pass and
 * fills them again in the next forward, and returning them cost a
 * cudaFree (which waits for the whole device) and a cudaMallocManaged
 * whose every page the GPU then populated by faults, every iteration
 * (ResNet-50 under umadv run: 180-320 ms an iteration against 40 with
 * the arenas kept). Empty arenas are returned, the largest first, when
 * UMADV_MAX_MANAGED needs their room, when asked
 * (umadv__pool_release_empty: umadv_release_cached) and by
 * umadv__pool_destroy.
 * UMADV_MAX_MANAGED caps the sum of arena sizes.
 *
 * Not thread-safe: the context serialises calls.
 */
#ifndef UMADV_POOL_POOL_H
#define UMADV_POOL_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "cuda_ops/cuda_ops.h"

/* Alignment of every block. */
#define UMADV_POOL_ALIGN 256

typedef struct umadv_pool umadv_pool_t;

typedef struct umadv_pool_params {
    const umadv_cuda_ops_t *ops;
    uint64_t                section_size; /* power of two, see trace.h */
    uint64_t                arena_size;   /* rounded up to sections */
    uint64_t                max_managed;  /* 0 = no limit */
} umadv_pool_params_t;

/* Where an address falls. */
typedef struct umadv_pool_loc {
    void     *base;       /* the block's first byte (what malloc returned) */
    uint64_t  size;       /* bytes asked for */
    uint64_t  span;       /* bytes the block occupies, rounded; >= size */
    uint64_t  offset;     /* address - base, < span */
    uint32_t  section;    /* offset / section_size */
    uint32_t  nsections;  /* sections the block's size covers */
    void     *arena_base;
    uint64_t  arena_size;
    uint64_t  user;       /* the caller's value, see umadv__pool_malloc_user */
} umadv_pool_loc_t;

typedef struct umadv_pool_stats {
    uint64_t bytes_in_use;  /* bytes asked for by live blocks */
    uint64_t bytes_peak;
    uint64_t span_in_use;   /* bytes live blocks occupy, with rounding */
    uint64_t arena_bytes;   /* managed memory held */
    uint64_t arena_peak;
    uint32_t arenas;
    uint64_t blocks;        /* live blocks */
    uint64_t free_blocks;   /* free pieces of arenas */
} umadv_pool_stats_t;

umadv_status_t umadv__pool_create(const umadv_pool_params_t *params, umadv_pool_t **pool_p);

/* Return every arena, live blocks included. */
void umadv__pool_destroy(umadv_pool_t *pool);

/* UMADV_ERR_INVALID_PARAM for size 0 or absurd sizes; UMADV_ERR_LIMIT
 * (logged with the request, what the pool holds and the limit);
 * UMADV_ERR_CUDA or UMADV_ERR_NO_MEMORY. The new block's user value is 0. */
umadv_status_t umadv__pool_malloc(umadv_pool_t *pool, uint64_t size, void **ptr_p);

/* umadv__pool_malloc, the new block's user value @user, and its arena's
 * base in *@arena_base_p: what a lookup would say, without one (the
 * context allocates for PyTorch thousands of times an iteration). */
umadv_status_t umadv__pool_malloc_user(umadv_pool_t *pool, uint64_t size, uint64_t user,
                                       void **ptr_p, void **arena_base_p);

/* UMADV_ERR_NOT_FOUND unless @ptr is the start of a live block. */
umadv_status_t umadv__pool_free(umadv_pool_t *pool, void *ptr);

/*
 * SECTION MARKS. A bit a section of each arena, for the caller's use
 * (the profile's: the sections known to be on the GPU, api/profile.c),
 * clear when the arena is made (and where its bits found no memory,
 * never set: nothing there is marked).
 */
/* Set (@on) the marks of the sections [@lo, @hi) covers whole, or clear
 * those of every section it touches. */
void umadv__pool_mark(umadv_pool_t *pool, uintptr_t lo, uintptr_t hi, int on);
/* The first run of [@lo, @hi) whose sections are unmarked: its start
 * (returned) and end (*@end_p), clipped to [@lo, @hi); @hi (and *@end_p
 * @hi) where every section it touches is marked. A range outside one
 * arena with marks is unmarked whole. */
uintptr_t umadv__pool_unmarked(const umadv_pool_t *pool, uintptr_t lo, uintptr_t hi,
                               uintptr_t *end_p);
/* Clear every mark. */
void umadv__pool_marks_clear(umadv_pool_t *pool);

/* UMADV_ERR_NOT_FOUND unless @addr is inside a live block's span. */
umadv_status_t umadv__pool_lookup(const umadv_pool_t *pool, const void *addr,
                                  umadv_pool_loc_t *loc);

/* Call @fn for every live block, in address order within each arena. */
void umadv__pool_foreach(const umadv_pool_t *pool,
                         void (*fn)(void *arg, void *base, uint64_t size, uint64_t user),
                         void *arg);

void umadv__pool_get_stats(const umadv_pool_t *pool, umadv_pool_stats_t *stats);

/* Return empty arenas, the largest first, until @want bytes are returned
 * or none is left (UINT64_MAX: all). Returns the bytes returned. */
uint64_t umadv__pool_release_empty(umadv_pool_t *pool, uint64_t want);

uint64_t umadv__pool_section_size(const umadv_pool_t *pool);

#endif
