/*
 * Anonymous host memory, mapped and populated by umadv itself: the host
 * backend's managed memory, and the pages the cudart backend pins for the
 * staging pool (cuda_ops/cudart.c, host_alloc).
 */
#ifndef UMADV_COMMON_HOSTMEM_H
#define UMADV_COMMON_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

/* @size rounded up to whole pages of the system. */
size_t umadv__page_round(size_t size);

/* mmap of @size bytes (whole pages) aligned to @align (a power of two, at
 * least a page), read-write, private; NULL with errno set on failure.
 * munmap(ptr, size) frees it. */
void *umadv__map_aligned(size_t size, size_t align);

/* Fault in every page of [@ptr, @ptr + @size) by writing to it, on up to
 * @max_threads threads of the caller's CPU binding (they inherit it, and
 * the kernel places each page on the node of the thread that touches it
 * first). Zeroing pages is the kernel's work, about 3 GB/s a thread: a
 * pool of gigabytes takes a second on one. Returns the threads used. */
unsigned umadv__populate(void *ptr, size_t size, unsigned max_threads);

/* Host memory this process may still take without the kernel reclaiming
 * what others use or killing a process for it: MemAvailable of
 * /proc/meminfo less a reserve of a sixteenth of MemTotal (at least
 * UMADV_HOST_RESERVE_MIN). Returns 0 when it cannot be known (no
 * /proc/meminfo), with *spare_p untouched. */
#define UMADV_HOST_RESERVE_MIN ((uint64_t)1 << 30)
int umadv__host_spare(uint64_t *spare_p);

/* The same from a meminfo file's text (tests). */
int umadv__host_spare_parse(const char *meminfo, uint64_t *spare_p);

#endif
