/*
 * Free memory per step (budget minus planned residency), as a segment
 * tree with range add and range minimum: hoisting a fetch earlier asks
 * "the latest step in [lo, hi] where this many bytes do not fit" and then
 * takes the bytes over the steps it crosses, both in O(log n).
 */
#ifndef UMADV_PLAN_SLACK_H
#define UMADV_PLAN_SLACK_H

#include <stdint.h>

#include <umadv.h>

typedef struct umadv_slack {
    uint32_t n;
    uint32_t size;   /* leaves, a power of two >= n */
    int64_t *min;    /* 2 * size nodes: minimum of the subtree */
    int64_t *add;    /* 2 * size nodes: pending addition to the subtree */
} umadv_slack_t;

/* n >= 1 steps with the given initial values. */
umadv_status_t umadv__slack_init(umadv_slack_t *t, uint32_t n, const int64_t *values);
void umadv__slack_cleanup(umadv_slack_t *t);

/* values[lo..hi] += delta, 0 <= lo <= hi < n. */
void umadv__slack_add(umadv_slack_t *t, uint32_t lo, uint32_t hi, int64_t delta);

/* The largest i in [lo, hi] with values[i] < limit, or -1. */
int64_t umadv__slack_find_last_below(const umadv_slack_t *t, uint32_t lo, uint32_t hi,
                                     int64_t limit);

/* The minimum over all steps, and one step that has it. */
int64_t umadv__slack_min(const umadv_slack_t *t, uint32_t *step_p);

/* Current value of one step. */
int64_t umadv__slack_get(const umadv_slack_t *t, uint32_t i);

#endif
