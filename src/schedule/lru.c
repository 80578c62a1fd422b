/*
 * The order in which the LRU policies (demand, prefetch-all) evict:
 * resident sections by (last use, section id). A binary min-heap that
 * knows where each member sits, so a section that becomes resident,
 * leaves or is used again costs O(log n), and a step's victims are read
 * in order by walking the heap from its root (a second, small heap of
 * the frontier), visiting only what it takes and what it skips: no scan
 * of every section, no sort, at each step.
 */
#include "schedule/core.h"

#include <stdlib.h>

#include "common/util.h"

static int lru_less(const umadv_core_lru_t *lru, uint32_t a, uint32_t b)
{
    if (lru->key[a] != lru->key[b])
        return lru->key[a] < lru->key[b];
    return a < b;
}

static void lru_place(umadv_core_lru_t *lru, size_t i, uint32_t s)
{
    lru->heap[i] = s;
    lru->pos[s] = (uint32_t)i;
}

static void sift_up(umadv_core_lru_t *lru, size_t i)
{
    uint32_t s = lru->heap[i];

    while (i > 0 && lru_less(lru, s, lru->heap[(i - 1) / 2])) {
        lru_place(lru, i, lru->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    lru_place(lru, i, s);
}

static void sift_down(umadv_core_lru_t *lru, size_t i)
{
    uint32_t s = lru->heap[i];

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= lru->n)
            break;
        if (c + 1 < lru->n && lru_less(lru, lru->heap[c + 1], lru->heap[c]))
            c++;
        if (!lru_less(lru, lru->heap[c], s))
            break;
        lru_place(lru, i, lru->heap[c]);
        i = c;
    }
    lru_place(lru, i, s);
}

umadv_status_t umadv__core_lru_init(umadv_core_lru_t *lru, const uint64_t *key, size_t nsections)
{
    size_t n = nsections ? nsections : 1;

    *lru = (umadv_core_lru_t){.key = key};
    lru->heap = malloc(n * sizeof(*lru->heap));
    lru->pos = malloc(n * sizeof(*lru->pos));
    if (lru->heap == NULL || lru->pos == NULL) {
        umadv__core_lru_cleanup(lru);
        return UMADV_ERR_NO_MEMORY;
    }
    for (size_t s = 0; s < n; s++)
        lru->pos[s] = UMADV_CORE_LRU_OUT;
    return UMADV_OK;
}

void umadv__core_lru_cleanup(umadv_core_lru_t *lru)
{
    free(lru->heap);
    free(lru->pos);
    free(lru->walk);
    *lru = (umadv_core_lru_t){0};
}

void umadv__core_lru_insert(umadv_core_lru_t *lru, uint32_t s)
{
    if (lru->pos[s] != UMADV_CORE_LRU_OUT)
        return;
    lru_place(lru, lru->n++, s);
    sift_up(lru, lru->n - 1);
}

void umadv__core_lru_remove(umadv_core_lru_t *lru, uint32_t s)
{
    size_t i = lru->pos[s];

    if (i == UMADV_CORE_LRU_OUT)
        return;
    lru->pos[s] = UMADV_CORE_LRU_OUT;
    if (i == --lru->n)
        return;
    lru_place(lru, i, lru->heap[lru->n]);
    umadv__core_lru_update(lru, lru->heap[i]);
}

void umadv__core_lru_update(umadv_core_lru_t *lru, uint32_t s)
{
    size_t i = lru->pos[s];

    if (i == UMADV_CORE_LRU_OUT)
        return;
    sift_up(lru, i);
    sift_down(lru, lru->pos[s]);
}

/* ---- walking in order ------------------------------------------------------ */

/* The frontier: heap indices whose parents were visited, a min-heap by
 * their sections' order. */
static int walk_less(const umadv_core_lru_t *lru, uint32_t i, uint32_t j)
{
    return lru_less(lru, lru->heap[i], lru->heap[j]);
}

static umadv_status_t walk_push(umadv_core_lru_t *lru, size_t *n, uint32_t index)
{
    size_t i = *n;

    if (umadv__array_reserve((void **)&lru->walk, &lru->walk_cap, i + 1, sizeof(*lru->walk)) !=
        UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    (*n)++;
    while (i > 0 && walk_less(lru, index, lru->walk[(i - 1) / 2])) {
        lru->walk[i] = lru->walk[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    lru->walk[i] = index;
    return UMADV_OK;
}

static uint32_t walk_pop(umadv_core_lru_t *lru, size_t *n)
{
    uint32_t top = lru->walk[0], last = lru->walk[--*n];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= *n)
            break;
        if (c + 1 < *n && walk_less(lru, lru->walk[c + 1], lru->walk[c]))
            c++;
        if (!walk_less(lru, lru->walk[c], last))
            break;
        lru->walk[i] = lru->walk[c];
        i = c;
    }
    if (*n > 0)
        lru->walk[i] = last;
    return top;
}

umadv_status_t umadv__core_lru_walk(umadv_core_lru_t *lru, int (*visit)(void *arg, uint32_t s),
                                    void *arg)
{
    size_t nfront = 0;

    if (lru->n == 0)
        return UMADV_OK;
    if (walk_push(lru, &nfront, 0) != UMADV_OK)
        return UMADV_ERR_NO_MEMORY;
    while (nfront > 0) {
        uint32_t i = walk_pop(lru, &nfront);

        if (visit(arg, lru->heap[i]))
            return UMADV_OK;
        for (uint32_t c = 2 * i + 1; c <= 2 * i + 2 && c < lru->n; c++) {
            if (walk_push(lru, &nfront, c) != UMADV_OK)
                return UMADV_ERR_NO_MEMORY;
        }
    }
    return UMADV_OK;
}
