/*
 * Scanning kernel parameters for pointers into the pool.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include "profiler/profiler_int.h"

#include <cuda.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/util.h"

/* Pointers already reported for this launch; a launch passes few. */
#define SCAN_SEEN_MAX 512

typedef struct scan_seen {
    const void *base[SCAN_SEEN_MAX];
    size_t      n;
} scan_seen_t;

/* Returns 1 if @base is new (and remembers it, while there is room). */
static int seen_add(scan_seen_t *seen, const void *base)
{
    for (size_t i = 0; i < seen->n; i++) {
        if (seen->base[i] == base)
            return 0;
    }
    if (seen->n < SCAN_SEEN_MAX)
        seen->base[seen->n++] = base;
    return 1;
}

static size_t scan_region(const umadv_pool_t *pool, const umadv_prof_region_t *r,
                          scan_seen_t *seen,
                          void (*fn)(void *arg, const umadv_pool_loc_t *loc), void *arg)
{
    const unsigned char *bytes = r->data;
    size_t found = 0;

    if (bytes == NULL)
        return 0;
    for (size_t off = 0; off + sizeof(uint64_t) <= r->size; off += sizeof(uint64_t)) {
        umadv_pool_loc_t loc;
        uint64_t word;

        memcpy(&word, bytes + off, sizeof(word));
        if (word == 0 || umadv__pool_lookup(pool, (const void *)(uintptr_t)word, &loc) != UMADV_OK)
            continue;
        if (!seen_add(seen, (const void *)(uintptr_t)word))
            continue; /* each pointer once: where in its block it points matters */
        fn(arg, &loc);
        found++;
    }
    return found;
}

size_t umadv__prof_scan(const umadv_pool_t *pool, const umadv_prof_region_t *regions,
                        size_t nregions,
                        void (*fn)(void *arg, const umadv_pool_loc_t *loc), void *arg)
{
    scan_seen_t seen;
    size_t found = 0;

    seen.n = 0;
    for (size_t i = 0; i < nregions; i++)
        found += scan_region(pool, &regions[i], &seen, fn, arg);
    return found;
}

/* The packed argument buffer of cuLaunchKernel's @extra, if any. */
static size_t extra_regions(void *const *extra, umadv_prof_region_t *regions, size_t cap)
{
    const void *buffer = NULL;
    const size_t *size = NULL;

    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
    }
    if (buffer == NULL || size == NULL || cap == 0)
        return 0;
    regions[0].data = buffer;
    regions[0].size = *size;
    return 1;
}

size_t umadv__prof_launch_regions(const umadv_cupti_ops_t *ops, const void *func, int driver,
                                  void *const *args, void *const *extra,
                                  umadv_prof_region_t *regions, size_t cap)
{
    size_t n = 0, offset, size;

    if (args == NULL)
        return extra != NULL ? extra_regions(extra, regions, cap) : 0;
    while (n < cap && n < UMADV_PROF_MAX_PARAMS &&
           ops->kernel_param_info(func, driver, n, &offset, &size) == UMADV_OK) {
        regions[n].data = args[n];
        regions[n].size = size;
        n++;
    }
    return n;
}

/* ---- guessing where a launch keeps its arguments ---------------------- */

/* Copy up to @size bytes at @from into @to without faulting on memory
 * that is not mapped: process_vm_readv on this process, one remote piece
 * per page, so that a read running into an unmapped page stops there
 * (transfers are partial at piece granularity). Returns the bytes copied,
 * 0 when the kernel refuses the call (seccomp, an old kernel). */
static size_t safe_copy(void *to, const void *from, size_t size)
{
    struct iovec local = {to, size}, remote[UMADV_PROF_GUESS_BYTES / 4096 + 2];
    uintptr_t at = (uintptr_t)from, end = at + size;
    unsigned long n = 0;
    ssize_t got;

    while (at < end && n < UMADV_ARRAY_SIZE(remote)) {
        uintptr_t next = (at | 4095u) + 1;

        if (next > end || next < at)
            next = end;
        remote[n++] = (struct iovec){(void *)at, next - at};
        at = next;
    }
    local.iov_len = at - (uintptr_t)from;
    got = process_vm_readv(getpid(), &local, 1, remote, n, 0);
    return got > 0 ? (size_t)got : 0;
}

size_t umadv__prof_guess_region(void *const *args, unsigned char *buf, size_t cap,
                                umadv_prof_region_t *region)
{
    const void *first = NULL;
    size_t got;

    if (args == NULL || cap == 0 ||
        safe_copy(&first, args, sizeof(first)) != sizeof(first) || first == NULL)
        return 0;
    got = safe_copy(buf, first, UMADV_MIN(cap, (size_t)UMADV_PROF_GUESS_BYTES));
    if (got < sizeof(uint64_t))
        return 0;
    region->data = buf;
    region->size = got;
    return 1;
}
