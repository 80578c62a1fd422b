/*
 * The bulk mover: a list of address ranges moved to one place, now, by
 * synchronous prefetches. The executor's lanes move data step by step
 * under a budget; the profiling pass (api/profile.c) must instead move
 * everything at once (evict all live blocks so that first touches fault,
 * put them back afterwards). Both are the executor's business: only the
 * executor module issues prefetches, so that where evicted data goes
 * (the host NUMA node, numa/numa.h) is decided in one place.
 */
#ifndef UMADV_EXEC_BULK_H
#define UMADV_EXEC_BULK_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_ops/cuda_ops.h"

struct umadv_numa_place; /* numa/numa.h */

typedef struct umadv_bulk_range {
    uintptr_t start, end; /* [start, end) */
    uintptr_t group;      /* ranges of one group (a managed allocation, an arena)
                           * that follow each other by address are moved by one
                           * call over their span: the free space between them
                           * moves nothing that matters */
} umadv_bulk_range_t;

enum {
    UMADV_BULK_SYNC = 1u << 0  /* wait for the moves (and the work before them) */
};

/* qsort's order of ranges: by start, then end. */
int umadv__exec_bulk_range_compare(const void *a, const void *b);

/* @ranges as the calls that move them span: sorted by address, each
 * group's run of ranges made one range over its span (the free space
 * between them included). Returns how many, the first ones of @ranges. */
size_t umadv__exec_bulk_spans(umadv_bulk_range_t *ranges, size_t n);

/* Move the @n ranges (made the calls' spans here: umadv__exec_bulk_spans)
 * to @location: a device ordinal, or UMADV_CUDA_LOCATION_HOST for the
 * host memory the executor evicts to (@numa's node; NULL: plain host).
 * Each call is a hint: a failure is logged by the backend and counted
 * in one debug message, and in *@failed_p unless NULL. Returns the
 * calls made, one a span: the first ones of @ranges, as they moved. */
size_t umadv__exec_bulk_move(const umadv_cuda_ops_t *ops, umadv_bulk_range_t *ranges, size_t n,
                             int location, const struct umadv_numa_place *numa, unsigned flags,
                             size_t *failed_p);

#endif
