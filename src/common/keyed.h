/*
 * Keyed lists: values grouped by a key in [0, nkeys), each key's in the
 * order they came (a counting sort into offsets). The planner, the
 * schedule, the trace's gaps and the profile index steps, events, ops
 * and notes this way.
 *
 * The caller gives the items as a function that emits (key, value) for
 * each, in the same order each time it is called: umadv__keyed_build
 * calls it twice, to count and to fill. Cost: O(nkeys + items) time,
 * (nkeys + 1 + items) * 4 bytes.
 */
#ifndef UMADV_COMMON_KEYED_H
#define UMADV_COMMON_KEYED_H

#include <stdint.h>

#include <umadv.h>

typedef struct umadv_keyed {
    uint32_t  nkeys;
    uint32_t *off;   /* nkeys + 1: key k's values are val[off[k] .. off[k + 1]) */
    uint32_t *val;   /* off[nkeys] of them (at least one element allocated) */
} umadv_keyed_t;

/* One call of the items: counting (each key's count at off[key + 1]) or
 * filling (off[key] the key's next free slot, moved one key on by the
 * fill and shifted back after it). */
typedef struct umadv_keyed_pass {
    umadv_keyed_t *k;
    int            filling;
} umadv_keyed_pass_t;

/* Emits every item through umadv__keyed_emit(@pass, key, value), the same
 * items in the same order on each call. A key must be below nkeys. */
typedef void (*umadv_keyed_items_fn)(void *arg, umadv_keyed_pass_t *pass);

/* Inline: the planner emits each residency event this way, several
 * times a plan. */
static inline void umadv__keyed_emit(umadv_keyed_pass_t *pass, uint32_t key, uint32_t value)
{
    umadv_keyed_t *k = pass->k;

    if (pass->filling)
        k->val[k->off[key]++] = value;
    else
        k->off[key + 1]++;
}

/* Build @k over @nkeys keys from @items. UMADV_ERR_NO_MEMORY leaves @k
 * empty (every pointer NULL). */
umadv_status_t umadv__keyed_build(umadv_keyed_t *k, uint32_t nkeys, umadv_keyed_items_fn items,
                                  void *arg);

/* How many values key @key has. */
static inline uint32_t umadv__keyed_count(const umadv_keyed_t *k, uint32_t key)
{
    return k->off[key + 1] - k->off[key];
}

/* Key @key's values. */
static inline const uint32_t *umadv__keyed_values(const umadv_keyed_t *k, uint32_t key)
{
    return k->val + k->off[key];
}

void umadv__keyed_cleanup(umadv_keyed_t *k);

#endif /* UMADV_COMMON_KEYED_H */
