/*
 * The cheap, conservative way to complete a step's access set: a kernel
 * can only reach memory it is given, so every 8-byte word of its
 * parameters that points into a umadv block (interior pointers too) means
 * the kernel may touch that whole block. Faults miss re-reads of resident
 * data; this does not, at allocation granularity. It misses pointers the
 * kernel loads from memory (pointer tables), which the fault records of
 * the profiling iteration, with everything evicted first, still catch.
 */
#ifndef UMADV_PROFILER_SCAN_H
#define UMADV_PROFILER_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

#include "pool/pool.h"

/* Bytes holding kernel arguments on the host. */
typedef struct umadv_prof_region {
    const void *data;
    size_t      size;
} umadv_prof_region_t;

/* The most parameters read from one launch; more are not scanned. */
#define UMADV_PROF_MAX_PARAMS 256

/* Call @fn once for each distinct 8-byte aligned word of @regions that
 * points into a live block of @pool (@loc->offset: where in the block);
 * two pointers into one block are two calls. Returns how many were found. */
size_t umadv__prof_scan(const umadv_pool_t *pool, const umadv_prof_region_t *regions,
                        size_t nregions,
                        void (*fn)(void *arg, const umadv_pool_loc_t *loc), void *arg);

#endif
