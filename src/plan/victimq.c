#include "plan/victimq.h"

#include <stdlib.h>
#include <string.h>

#define WORD_BITS 64u

static uint32_t bucket_of(const umadv_victimq_t *q, uint64_t key)
{
    return key == UMADV_VICTIMQ_NEVER ? q->ring : (uint32_t)(key % q->ring);
}

/* Words of bitmap level @l (level 0 has a bit per bucket). */
static size_t level_words(const umadv_victimq_t *q, int l)
{
    size_t bits = q->ring;

    for (int i = 0; i <= l; i++)
        bits = bits / WORD_BITS + 1;
    return bits;
}

umadv_status_t umadv__victimq_init(umadv_victimq_t *q, uint32_t nsections, uint32_t ring)
{
    size_t n = nsections ? nsections : 1;
    int levels_ok = 1;

    memset(q, 0, sizeof(*q));
    q->ring = ring ? ring : 1;
    q->head = malloc(((size_t)q->ring + 1) * 2 * sizeof(*q->head));
    q->tail = malloc(((size_t)q->ring + 1) * 2 * sizeof(*q->tail));
    for (int l = 0; l < UMADV_VICTIMQ_LEVELS; l++) {
        q->bits[l] = calloc(level_words(q, l), sizeof(*q->bits[l]));
        levels_ok = levels_ok && q->bits[l] != NULL;
    }
    q->prev = malloc(n * sizeof(*q->prev));
    q->next = malloc(n * sizeof(*q->next));
    q->key  = malloc(n * sizeof(*q->key));
    q->cls  = malloc(n);
    if (q->head == NULL || q->tail == NULL || !levels_ok || q->prev == NULL || q->next == NULL ||
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
    for (int l = 0; l < UMADV_VICTIMQ_LEVELS; l++)
        free(q->bits[l]);
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
    for (int l = 0; l < UMADV_VICTIMQ_LEVELS; l++)
        memset(q->bits[l], 0, level_words(q, l) * sizeof(*q->bits[l]));
    q->count = 0;
}

static void bucket_mark(umadv_victimq_t *q, uint64_t b)
{
    for (int l = 0; l < UMADV_VICTIMQ_LEVELS; l++, b /= WORD_BITS)
        q->bits[l][b / WORD_BITS] |= UINT64_C(1) << (b % WORD_BITS);
}

/* Clear bucket @b's bit, and a word's bit one level up when the word is
 * left empty. */
static void bucket_unmark(umadv_victimq_t *q, uint64_t b)
{
    for (int l = 0; l < UMADV_VICTIMQ_LEVELS; l++, b /= WORD_BITS) {
        q->bits[l][b / WORD_BITS] &= ~(UINT64_C(1) << (b % WORD_BITS));
        if (q->bits[l][b / WORD_BITS] != 0)
            return;
    }
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
        bucket_mark(q, b);
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
        bucket_unmark(q, b);
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

/* Highest set bit in [lo, hi] of level @l, or -1: the word of hi
 * itself, then the level above names the highest non-empty word below
 * it; the top level is scanned. */
static int64_t level_find_last(const umadv_victimq_t *q, int l, int64_t lo, int64_t hi)
{
    int64_t b, w, w_lo = lo / WORD_BITS, w_hi = hi / WORD_BITS - 1;

    if (hi < lo || l == UMADV_VICTIMQ_LEVELS - 1)
        return bits_find_last(q->bits[l], lo, hi);
    b = bits_find_last(q->bits[l], hi - hi % WORD_BITS > lo ? hi - hi % WORD_BITS : lo, hi);
    if (b >= 0 || w_hi < w_lo)
        return b;
    w = level_find_last(q, l + 1, w_lo, w_hi);
    if (w < 0)
        return -1;
    /* word w is not empty and every word above it, up to hi's, is */
    b = bits_find_last(q->bits[l], w * WORD_BITS, w * WORD_BITS + WORD_BITS - 1);
    return b >= lo ? b : -1;
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
    b = level_find_last(q, 0, 0, lo - 1);
    if (b < 0)
        b = level_find_last(q, 0, lo, (int64_t)q->ring - 1);
    return b < 0 ? UMADV_VICTIMQ_NIL : bucket_first(q, (uint32_t)b);
}

/* The highest non-empty finite bucket below @b in key order (keys run
 * from now, bucket lo, up to now + ring - 1, bucket lo - 1 wrapped), or
 * -1; @b == ring: the highest of all. */
static int64_t bucket_below(const umadv_victimq_t *q, int64_t b, int64_t lo)
{
    int64_t found;

    if (b == q->ring) {
        found = level_find_last(q, 0, 0, lo - 1);
        return found >= 0 ? found : level_find_last(q, 0, lo, (int64_t)q->ring - 1);
    }
    if (b >= lo)
        return level_find_last(q, 0, lo, b - 1);
    found = level_find_last(q, 0, 0, b - 1);
    return found >= 0 ? found : level_find_last(q, 0, lo, (int64_t)q->ring - 1);
}

uint32_t umadv__victimq_below(const umadv_victimq_t *q, uint32_t section, uint64_t now)
{
    if (q->next[section] != UMADV_VICTIMQ_NIL)
        return q->next[section];
    return umadv__victimq_below_list(q, section, now);
}

uint32_t umadv__victimq_below_list(const umadv_victimq_t *q, uint32_t section, uint64_t now)
{
    uint32_t b = bucket_of(q, q->key[section]);
    int64_t below;

    if (q->cls[section] && q->head[b * 2] != UMADV_VICTIMQ_NIL)
        return q->head[b * 2]; /* the bucket's list that costs a copy */
    below = bucket_below(q, b, (int64_t)(now % q->ring));
    return below < 0 ? UMADV_VICTIMQ_NIL : bucket_first(q, (uint32_t)below);
}

uint32_t umadv__victimq_pop_max(umadv_victimq_t *q, uint64_t now)
{
    uint32_t section = umadv__victimq_peek_max(q, now);

    if (section != UMADV_VICTIMQ_NIL)
        umadv__victimq_remove(q, section);
    return section;
}
