/*
 * Where the pages under an address range are, as far as the replay knows:
 * runs of addresses on the GPU (pages.c says why and how). The executor
 * keeps one over the blocks' live addresses, the simulator one over the
 * trace's, so that both count in without a call what a freed block left
 * on the GPU (one rule, two address spaces).
 */
#ifndef UMADV_SCHEDULE_PAGES_H
#define UMADV_SCHEDULE_PAGES_H

#include <stddef.h>
#include <stdint.h>

typedef struct umadv_pages_run {
    uintptr_t start, end; /* [start, end) */
} umadv_pages_run_t;

typedef struct umadv_pages {
    umadv_pages_run_t *runs; /* sorted, disjoint, not touching */
    size_t             n, cap;
} umadv_pages_t;

/* Note where [@addr, +@len) went: to the GPU (a fetch or population
 * done), or off it (@on_gpu 0: an eviction, discard or release done,
 * widened to whole 64 KiB pages). */
void umadv__pages_note(umadv_pages_t *m, uintptr_t addr, uint64_t len, int on_gpu);

/* Whether all of [@addr, +@len) is on the GPU by the notes. */
int umadv__pages_on_gpu(const umadv_pages_t *m, uintptr_t addr, uint64_t len);

void umadv__pages_cleanup(umadv_pages_t *m);

#endif
