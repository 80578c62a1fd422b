/*
 * The bulk mover (exec/bulk.h): coalesce, prefetch, synchronize.
 */
#include "exec/bulk.h"

#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"
#include "numa/numa.h"

int umadv__exec_bulk_range_compare(const void *a, const void *b)
{
    const umadv_bulk_range_t *x = a, *y = b;

    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->end > y->end) - (x->end < y->end);
}

size_t umadv__exec_bulk_spans(umadv_bulk_range_t *ranges, size_t n)
{
    size_t spans = 0;

    if (n > 1)
        qsort(ranges, n, sizeof(*ranges), umadv__exec_bulk_range_compare);
    for (size_t i = 0; i < n;) {
        umadv_bulk_range_t span = ranges[i];

        for (i++; i < n && ranges[i].group == span.group; i++)
            span.end = UMADV_MAX(span.end, ranges[i].end);
        ranges[spans++] = span;
    }
    return spans;
}

/* Where "the host" is for this machine's GPU: the node the executor
 * evicts to, so that the profiling pass leaves data where replay would. */
static int bulk_location(int location, const struct umadv_numa_place *numa)
{
    return location == UMADV_CUDA_LOCATION_HOST ? umadv__numa_host_location(numa) : location;
}

size_t umadv__exec_bulk_move(const umadv_cuda_ops_t *ops, umadv_bulk_range_t *ranges, size_t n,
                             int location, const struct umadv_numa_place *numa, unsigned flags,
                             size_t *failed_p)
{
    size_t calls = 0, failed = 0;

    n = umadv__exec_bulk_spans(ranges, n);
    location = bulk_location(location, numa);
    for (size_t i = 0; i < n; i++) {
        if (ops->prefetch((void *)ranges[i].start, ranges[i].end - ranges[i].start, location,
                          NULL) != UMADV_OK)
            failed++;
        calls++;
    }
    if (calls > 0 && (flags & UMADV_BULK_SYNC) && ops->stream_synchronize(NULL) != UMADV_OK)
        failed++;
    if (failed > 0)
        umadv_debug("bulk move: %zu of %zu calls failed (each logged): the data stays where "
                    "it was, a hint not taken", failed, calls);
    if (failed_p != NULL)
        *failed_p = failed;
    return calls;
}
