#include "plan/victimq.h"

#include <stdlib.h>
#include <string.h>

#define WORD_BITS 64u

static uint32_t bucket_of(const umadv_victimq_t *q, uint64_t key)
{
    return key == UMADV_VICTIMQ_NEVER ? q->ring : (uint32_t)(key % q->ring);
}

umadv_status_t umadv__victimq_init(umadv_victimq_t *q, uint32_t nsections, uint32_t ring)
{
    size_t n = nsections ? nsections : 1;
    size_t words = ring / WORD_BITS + 1;

    memset(q, 0, sizeof(*q));
    q->ring = ring ? ring : 1;
    q->head = malloc(((size_t)q->ring + 1) * 2 * sizeof(*q->head));
    q->tail = malloc(((size_t)q->ring + 1) * 2 * sizeof(*q->tail));
    q->bits = calloc(words, sizeof(*q->bits));
    q->prev = malloc(n * sizeof(*q->prev));
    q->next = malloc(n * sizeof(*q->next));
    q->key  = malloc(n * sizeof(*q->key));
    q->cls  = malloc(n);
    if (q->head == NULL || q->tail == NULL || q->bits == NULL || q->prev == NULL || q->next == NULL ||
        q->key == NULL || q->cls == NULL) {
        umadv__victimq_cleanup(q);
        return UMADV_ERR_NO_MEMORY;
    }
    umadv__victimq_clear(q);
    return UMADV_OK;
}

void umadv__victimq_cleanup(umadv_victimq_t *q)
{
    free(q->head);
    free(q->tail);
    free(q->bits);
    free(q->prev);
    free(q->next);
    free(q->key);
    free(q->cls);
    memset(q, 0, sizeof(*q));
}

void umadv__victimq_clear(umadv_victimq_t *q)
{
    for (size_t i = 0; i < ((size_t)q->ring + 1) * 2; i++)
        q->head[i] = q->tail[i] = UMADV_VICTIMQ_NIL;
    memset(q->bits, 0, (q->ring / WORD_BITS + 1) * sizeof(*q->bits));
    q->count = 0;
}

void umadv__victimq_insert(umadv_victimq_t *q, uint32_t section, uint64_t key, int cls)
{
    uint32_t b = bucket_of(q, key);
    uint32_t list = b * 2 + (cls ? 1 : 0);

    q->key[section]  = key;
    q->cls[section]  = cls ? 1 : 0;
    q->prev[section] = q->tail[list];
    q->next[section] = UMADV_VICTIMQ_NIL;
    if (q->tail[list] != UMADV_VICTIMQ_NIL)
        q->next[q->tail[list]] = section;
    else
        q->head[list] = section;
    q->tail[list] = section;
    if (b < q->ring)
        q->bits[b / WORD_BITS] |= UINT64_C(1) << (b % WORD_BITS);
    q->count++;
}

void umadv__victimq_remove(umadv_victimq_t *q, uint32_t section)
{
    uint32_t b = bucket_of(q, q->key[section]);
    uint32_t list = b * 2 + q->cls[section];
    uint32_t p = q->prev[section], n = q->next[section];

    if (p != UMADV_VICTIMQ_NIL)
        q->next[p] = n;
    else
        q->head[list] = n;
    if (n != UMADV_VICTIMQ_NIL)
        q->prev[n] = p;
    else
        q->tail[list] = p;
    if (b < q->ring && q->head[b * 2] == UMADV_VICTIMQ_NIL &&
        q->head[b * 2 + 1] == UMADV_VICTIMQ_NIL)
        q->bits[b / WORD_BITS] &= ~(UINT64_C(1) << (b % WORD_BITS));
    q->count--;
}

/* Highest set bit in [lo, hi], or -1. */
static int64_t bits_find_last(const uint64_t *bits, int64_t lo, int64_t hi)
{
    while (hi >= lo) {
        uint64_t word = bits[hi / WORD_BITS];
        uint32_t bit = (uint32_t)(hi % WORD_BITS);
        /* keep bits 0..bit of this word */
        uint64_t mask = bit == WORD_BITS - 1 ? UINT64_MAX : (UINT64_C(2) << bit) - 1;

        word &= mask;
        if (word != 0) {
            int64_t found = hi - bit + (63 - __builtin_clzll(word));
            return found >= lo ? found : -1;
        }
        hi -= bit + 1;
    }
    return -1;
}

static uint32_t bucket_first(const umadv_victimq_t *q, uint32_t b)
{
    uint32_t section = q->head[b * 2 + 1];

    return section != UMADV_VICTIMQ_NIL ? section : q->head[b * 2];
}

uint32_t umadv__victimq_peek_max(const umadv_victimq_t *q, uint64_t now)
{
    int64_t lo = (int64_t)(now % q->ring), b;
    uint32_t section;

    if (q->count == 0)
        return UMADV_VICTIMQ_NIL;
    section = bucket_first(q, q->ring);
    if (section != UMADV_VICTIMQ_NIL)
        return section;
    /* Keys run from now (bucket lo) up to now + ring - 1 (bucket lo - 1,
     * wrapped): search [0, lo) downwards, then [lo, ring). */
    b = bits_find_last(q->bits, 0, lo - 1);
    if (b < 0)
        b = bits_find_last(q->bits, lo, (int64_t)q->ring - 1);
    return b < 0 ? UMADV_VICTIMQ_NIL : bucket_first(q, (uint32_t)b);
}

uint32_t umadv__victimq_pop_max(umadv_victimq_t *q, uint64_t now)
{
    uint32_t section = umadv__victimq_peek_max(q, now);

    if (section != UMADV_VICTIMQ_NIL)
        umadv__victimq_remove(q, section);
    return section;
}
