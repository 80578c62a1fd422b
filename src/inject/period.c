/*
 * The launch-sequence period detector (period.h).
 *
 * Candidates: a run of GRAM ids seen again d launches later proposes the
 * period d; each candidate keeps how many launches in a row, up to now,
 * equal the launch d before (its run), one comparison per launch. A new
 * candidate's run is counted back over the ring, paid from the credit.
 * A candidate whose run spans K periods and min_span launches may become
 * the unit (adopt): the repeating run is followed back to its start,
 * which aligns the unit, and the unit is cut to its primitive root.
 */
#include "inject/period.h"

#include <stdlib.h>
#include <string.h>

#define GRAM         4u   /* ids per short key of the recurrence table */
#define LONG_GRAM    32u  /* ...per long key: few kernels in a long unit
                           * repeat every short run within it */
#define LONG_BASE    0x100000001b3ull /* of the long key's rolling hash */
#define TABLE_SLOTS  (1u << 15)
#define CANDIDATES   8u
#define SCAN_CREDIT  4u   /* ring comparisons each launch earns */
#define STALE_FACTOR 8u   /* out of step this many units: another may replace it */
#define COVERED_PERCENT 90u /* of a longer loop: the unit is the iteration, that loop
                             * an outer one (epochs); less: the unit is a layer of it */

typedef struct candidate {
    uint32_t period; /* 0: a free slot */
    uint64_t run;    /* launches j <= now, in a row, with id[j] == id[j - period] */
} candidate_t;

typedef struct recurrence {
    uint64_t key;
    uint64_t end; /* 1 + the launch that ended the key's last run; 0: empty */
} recurrence_t;

struct umadv_period {
    umadv_period_params_t params;
    uint64_t     *ring;      /* the last ring_mask + 1 ids */
    uint32_t     *followed_at; /* for each of them, followed after it (mod 2^32) */
    uint32_t      followed;  /* launches that followed the unit (in step, or resyncing) */
    uint64_t      ring_mask;
    recurrence_t *table;
    candidate_t   cand[CANDIDATES];
    uint64_t      long_key;  /* rolling hash of the last LONG_GRAM ids */
    uint64_t      long_out;  /* LONG_BASE^LONG_GRAM, to roll the oldest out */
    uint64_t      n;         /* ids seen */
    uint64_t      credit;
    uint64_t      work;
    size_t        bytes;

    /* the unit */
    uint64_t     *unit;      /* max_period ids */
    uint32_t     *fail;      /* its prefix function (KMP) */
    uint32_t      period;    /* 0: none yet */
    uint32_t      pos;       /* in step: the unit index the next launch must have */
    uint32_t      match;     /* out of step: ids of the unit matched (KMP) */
    int           in_step;
    int           broke;     /* the unit broke once */
    uint64_t      last_break;
    int           fresh;     /* adopted, not marked yet */
    uint64_t      marks;
    uint32_t      units;
};

/* ---- parameters, life ---- */

void umadv__period_params_default(umadv_period_params_t *params)
{
    params->max_period = UMADV_PERIOD_MAX_DEFAULT;
    params->min_repeats = UMADV_PERIOD_REPEATS_DEFAULT;
    params->min_span = UMADV_PERIOD_SPAN_DEFAULT;
}

static uint64_t ring_size_for(const umadv_period_params_t *params)
{
    uint64_t want = ((uint64_t)params->min_repeats + 1) * params->max_period + GRAM;
    uint64_t size = 64;

    while (size < want)
        size <<= 1;
    return size;
}

umadv_status_t umadv__period_create(const umadv_period_params_t *params,
                                    umadv_period_t **period_p)
{
    umadv_period_t *p;
    uint64_t ring_size;

    if (params == NULL || params->max_period == 0 || params->min_repeats < 2 ||
        params->max_period > (1u << 24) || params->min_repeats > 64)
        return UMADV_ERR_INVALID_PARAM;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return UMADV_ERR_NO_MEMORY;
    p->params = *params;
    p->long_out = 1;
    for (unsigned k = 0; k < LONG_GRAM; k++)
        p->long_out *= LONG_BASE;
    ring_size = ring_size_for(params);
    p->ring_mask = ring_size - 1;
    p->ring = calloc(ring_size, sizeof(*p->ring));
    p->followed_at = calloc(ring_size, sizeof(*p->followed_at));
    p->table = calloc(TABLE_SLOTS, sizeof(*p->table));
    p->unit = calloc(params->max_period, sizeof(*p->unit));
    p->fail = calloc(params->max_period, sizeof(*p->fail));
    if (p->ring == NULL || p->followed_at == NULL || p->table == NULL || p->unit == NULL || p->fail == NULL) {
        umadv__period_destroy(p);
        return UMADV_ERR_NO_MEMORY;
    }
    p->bytes = sizeof(*p) + ring_size * (sizeof(*p->ring) + sizeof(*p->followed_at)) + TABLE_SLOTS * sizeof(*p->table) +
               params->max_period * (sizeof(*p->unit) + sizeof(*p->fail));
    *period_p = p;
    return UMADV_OK;
}

void umadv__period_destroy(umadv_period_t *p)
{
    if (p == NULL)
        return;
    free(p->ring);
    free(p->followed_at);
    free(p->table);
    free(p->unit);
    free(p->fail);
    free(p);
}

/* ---- the ring ---- */

static uint64_t at(const umadv_period_t *p, uint64_t j)
{
    return p->ring[j & p->ring_mask];
}

/* The oldest launch the ring still holds. */
static uint64_t oldest(const umadv_period_t *p)
{
    return p->n > p->ring_mask + 1 ? p->n - (p->ring_mask + 1) : 0;
}

uint64_t umadv__period_hash(uint64_t h, uint64_t word)
{
    h ^= word + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

/* ---- candidates ---- */

/* The run a candidate of @period needs: its span (run + period) covers K
 * periods and min_span launches. */
static uint64_t run_needed(const umadv_period_t *p, uint32_t period)
{
    uint64_t repeats = (uint64_t)(p->params.min_repeats - 1) * period;
    uint64_t span = p->params.min_span > period ? p->params.min_span - period : 0;

    return repeats > span ? repeats : span;
}

/* Launches in a row, back from @i, equal to the launch @period before:
 * at most @cap, each comparison paid from the credit. */
static uint64_t run_back(umadv_period_t *p, uint32_t period, uint64_t i, uint64_t cap)
{
    uint64_t run = 0, low = oldest(p) + period;

    while (run < cap && p->credit > 0 && i >= low + run &&
           at(p, i - run) == at(p, i - run - period)) {
        run++;
        p->credit--;
        p->work++;
    }
    return run;
}

static void candidates_step(umadv_period_t *p, uint64_t i)
{
    for (unsigned c = 0; c < CANDIDATES; c++) {
        candidate_t *cand = &p->cand[c];

        if (cand->period == 0)
            continue;
        p->work++;
        if (i >= oldest(p) + cand->period && at(p, i) == at(p, i - cand->period))
            cand->run++;
        else
            cand->period = 0;
    }
}

/* Keep the period @d found at @i, in a free slot or over the candidate
 * with the shortest run, if its own run is longer. */
static void candidate_add(umadv_period_t *p, uint32_t d, uint64_t i)
{
    candidate_t *weakest = NULL;
    uint64_t run;

    for (unsigned c = 0; c < CANDIDATES; c++) {
        if (p->cand[c].period == d)
            return;
        if (weakest == NULL || p->cand[c].period == 0 ||
            (weakest->period != 0 && p->cand[c].run < weakest->run))
            weakest = &p->cand[c];
    }
    run = run_back(p, d, i, run_needed(p, d));
    if (weakest->period == 0 || run > weakest->run) {
        weakest->period = d;
        weakest->run = run;
    }
}

/* The run of ids with @key ends at @i: if it ended before, propose the
 * distance as a period. */
static void recur(umadv_period_t *p, uint64_t key, uint64_t i)
{
    recurrence_t *slot = &p->table[key & (TABLE_SLOTS - 1)];

    if (slot->end != 0 && slot->key == key && i + 1 - slot->end <= p->params.max_period)
        candidate_add(p, (uint32_t)(i + 1 - slot->end), i);
    slot->key = key;
    slot->end = i + 1;
}

/* The short and the long run of ids ending at @i. */
static void propose(umadv_period_t *p, uint64_t i)
{
    uint64_t key = 0;

    p->long_key = p->long_key * LONG_BASE + umadv__period_hash(0, at(p, i));
    if (i >= LONG_GRAM)
        p->long_key -= p->long_out * umadv__period_hash(0, at(p, i - LONG_GRAM));
    if (i + 1 >= LONG_GRAM)
        recur(p, p->long_key ^ 0x5bd1e995ull, i); /* apart from the short keys */
    if (i + 1 < GRAM)
        return;
    for (unsigned k = 0; k < GRAM; k++)
        key = umadv__period_hash(key, at(p, i - k));
    p->work += GRAM + 2;
    recur(p, key, i);
}

/* ---- the unit ---- */

static void unit_prefix_function(umadv_period_t *p)
{
    p->fail[0] = 0;
    for (uint32_t q = 1; q < p->period; q++) {
        uint32_t k = p->fail[q - 1];

        while (k > 0 && p->unit[q] != p->unit[k]) {
            k = p->fail[k - 1];
            p->work++;
        }
        if (p->unit[q] == p->unit[k])
            k++;
        p->fail[q] = k;
        p->work++;
    }
}

/* Where the repeating run of @cand, which ends at @i, began: followed
 * back over the ring past what its run counted. */
static uint64_t run_start(umadv_period_t *p, const candidate_t *cand, uint64_t i)
{
    uint64_t low = oldest(p) + cand->period;
    uint64_t k = cand->run + low > i ? low - 1 : i - cand->run; /* a run longer than the ring */

    while (k >= low && at(p, k) == at(p, k - cand->period)) {
        k--;
        p->work++;
    }
    return k + 1 - cand->period;
}

/* Copy the @period ids from @start into the unit; the first index where
 * they differ from the unit in place before (@old_period long), or
 * @period when they do not. */
static uint32_t unit_copy(umadv_period_t *p, uint64_t start, uint32_t period,
                          uint32_t old_period)
{
    uint32_t differs = period;

    for (uint32_t q = 0; q < period; q++) {
        uint64_t id = at(p, start + q);

        if (differs == period && (q >= old_period || p->unit[q] != id))
            differs = q;
        p->unit[q] = id;
    }
    p->work += period;
    return differs;
}

/* Make @cand, whose run ends at @i, the unit; the position of launch @i
 * in it. */
static uint32_t adopt(umadv_period_t *p, const candidate_t *cand, uint64_t i)
{
    uint64_t start = run_start(p, cand, i);
    uint32_t old_period = p->period;
    uint32_t differs = unit_copy(p, start, cand->period, old_period), root;

    p->period = cand->period;
    unit_prefix_function(p);
    root = p->period - p->fail[p->period - 1];
    if (root < p->period && p->period % root == 0)
        p->period = root; /* a power of a shorter unit: its prefix function holds */
    /* the same loop found again (after a long break) is no new unit */
    p->fresh = old_period != p->period || differs < p->period;
    p->units++;
    p->in_step = 1;
    p->broke = 0; /* the old unit's breaks say nothing of this one */
    p->match = 0;
    return (uint32_t)((i - start) % p->period);
}

/* Whether @cand, ready at @i, should replace the unit in place. */
static int should_adopt(const umadv_period_t *p, const candidate_t *cand, uint64_t i)
{
    uint64_t stale = (uint64_t)STALE_FACTOR * p->period;

    if (p->period == 0)
        return 1;
    if (stale < p->params.min_span)
        stale = p->params.min_span;
    /* a longer loop that repeats over the unit's breaks, and that the
     * unit covers less than COVERED of: the unit was an inner loop of the
     * iteration (a layer). One that the unit covers is an outer loop (an
     * epoch and its last batch). One repeat more than a first
     * unit needs: a launch dropped from (added to) one iteration makes
     * the stream repeat with period 2P - 1 (2P + 1) for that long. */
    if (cand->period > p->period && p->broke && p->last_break + cand->run + cand->period > i &&
        cand->run >= run_needed(p, cand->period) + cand->period &&
        100 * (uint64_t)(uint32_t)(p->followed - p->followed_at[(i - cand->period) & p->ring_mask]) <
            COVERED_PERCENT * (uint64_t)cand->period)
        return 1;
    /* the unit has not been seen for long: the program moved on */
    return !p->in_step && p->broke && i - p->last_break >= stale;
}

/* A candidate ready to be the unit, and the unit replaced by it: the
 * position of launch @i in the new unit; UINT32_MAX when none. */
static uint32_t maybe_adopt(umadv_period_t *p, uint64_t i)
{
    const candidate_t *best = NULL;

    for (unsigned c = 0; c < CANDIDATES; c++) {
        const candidate_t *cand = &p->cand[c];

        if (cand->period != 0 && cand->run >= run_needed(p, cand->period) &&
            (best == NULL || cand->period < best->period) && should_adopt(p, cand, i))
            best = cand;
    }
    return best != NULL ? adopt(p, best, i) : UINT32_MAX;
}

/* Out of step: Knuth-Morris-Pratt over the unit; in step again once the
 * whole unit has been seen. */
static void resync(umadv_period_t *p, uint64_t id)
{
    while (p->match > 0 && p->unit[p->match] != id) {
        p->match = p->fail[p->match - 1];
        p->work++;
    }
    if (p->unit[p->match] == id) {
        p->match++;
        p->followed++; /* the unit, seen again: as good as followed */
    }
    p->work++;
    if (p->match == p->period) {
        p->in_step = 1;
        p->pos = 0;
        p->match = 0;
    }
}

/* Launch @i with @id at unit index @pos while in step: whether it begins
 * an iteration. */
static int in_step_launch(umadv_period_t *p, uint32_t pos)
{
    p->followed++;
    p->pos = (pos + 1) % p->period;
    return pos == 0;
}

static int track(umadv_period_t *p, uint64_t id, uint64_t i)
{
    if (p->in_step && p->unit[p->pos] == id)
        return in_step_launch(p, p->pos);
    if (p->in_step) {
        p->in_step = 0;
        p->broke = 1;
        p->last_break = i;
        p->match = 0;
    }
    resync(p, id);
    return 0;
}

unsigned umadv__period_next(umadv_period_t *p, uint64_t id)
{
    uint64_t i = p->n;
    uint64_t credit_cap = p->ring_mask + 1;
    uint32_t pos;
    int begin;

    p->ring[i & p->ring_mask] = id;
    p->n++;
    p->credit = p->credit + SCAN_CREDIT < credit_cap ? p->credit + SCAN_CREDIT : credit_cap;
    candidates_step(p, i);
    propose(p, i);
    pos = maybe_adopt(p, i);
    if (pos != UINT32_MAX)
        begin = in_step_launch(p, pos);
    else if (p->period != 0)
        begin = track(p, id, i);
    else
        begin = 0;
    p->followed_at[i & p->ring_mask] = p->followed;
    if (!begin)
        return 0;
    p->marks++;
    if (!p->fresh)
        return UMADV_PERIOD_BEGIN;
    p->fresh = 0;
    return UMADV_PERIOD_BEGIN | UMADV_PERIOD_NEW_UNIT;
}

void umadv__period_info(const umadv_period_t *p, umadv_period_info_t *info)
{
    info->launches = p->n;
    info->marks = p->marks;
    info->work = p->work;
    info->bytes = p->bytes;
    info->period = p->period;
    info->units = p->units;
    info->in_step = p->in_step;
}
