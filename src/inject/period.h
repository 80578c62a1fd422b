/*
 * Iterations from a repeating sequence of launches: a pure detector (no
 * CUDA), fed one id per kernel launch (its function and launch shape,
 * hashed by the caller), that says at which launch an iteration begins.
 *
 * It finds the smallest period P such that the last K*P ids (K =
 * min_repeats, and at least min_span launches) repeat with period P; a
 * prefix that does not repeat (initialisation, warm-up) is left out. The
 * repeating unit starts where the repeating run began (the first launch
 * of the loop), and from then on every launch that starts a unit begins
 * an iteration. A launch that breaks the unit (a short last batch, an
 * evaluation pass) stops the marks until the whole unit is seen again
 * (Knuth-Morris-Pratt over the unit), so a mark is never put inside a
 * unit. The unit is replaced by a longer one that repeats over its breaks
 * (an inner loop taken first for the iteration), or by any other once it
 * has been out of step for a long time (the program changed phase).
 *
 * Memory is fixed at creation (a ring of the last (K+1)*max_period ids, a
 * table of recent id runs, the unit); the work per launch is O(1)
 * amortised: looking back over older launches is paid from a credit that
 * every launch earns, and a unit's search happens once per unit adopted.
 * Not thread-safe: one caller at a time.
 */
#ifndef UMADV_INJECT_PERIOD_H
#define UMADV_INJECT_PERIOD_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

typedef struct umadv_period umadv_period_t;

typedef struct umadv_period_params {
    uint32_t max_period;  /* longest unit found, in launches (>= 1) */
    uint32_t min_repeats; /* K: a unit repeats this many times in a row (>= 2) */
    uint32_t min_span;    /* ... over at least this many launches, so that
                           * a few equal initialisation launches are no loop */
} umadv_period_params_t;

#define UMADV_PERIOD_MAX_DEFAULT      16384u
#define UMADV_PERIOD_REPEATS_DEFAULT  2u
#define UMADV_PERIOD_SPAN_DEFAULT     32u

/* What umadv__period_next() says of a launch. */
#define UMADV_PERIOD_BEGIN    1u /* an iteration begins at this launch */
#define UMADV_PERIOD_NEW_UNIT 2u /* with BEGIN: the first of a unit adopted now
                                  * (another loop than the one marked before) */

typedef struct umadv_period_info {
    uint64_t launches; /* ids seen */
    uint64_t marks;    /* iteration begins said */
    uint64_t work;     /* ids compared, for the O(1) amortised bound */
    size_t   bytes;    /* memory held, fixed at creation */
    uint32_t period;   /* the unit's length; 0 until one is found */
    uint32_t units;    /* units adopted */
    int      in_step;  /* the launches follow the unit now */
} umadv_period_info_t;

void umadv__period_params_default(umadv_period_params_t *params);

/* UMADV_ERR_INVALID_PARAM for a zero max_period or min_repeats below 2,
 * UMADV_ERR_NO_MEMORY; *@period_p set only on success. */
umadv_status_t umadv__period_create(const umadv_period_params_t *params,
                                    umadv_period_t **period_p);

/* NULL is a no-op. */
void umadv__period_destroy(umadv_period_t *period);

/* The next launch's @id, before the launch is made: UMADV_PERIOD_* flags. */
unsigned umadv__period_next(umadv_period_t *period, uint64_t id);

void umadv__period_info(const umadv_period_t *period, umadv_period_info_t *info);

/* Fold @word into the id @h (start from 0): the caller's hash of a
 * launch's function and shape. */
uint64_t umadv__period_hash(uint64_t h, uint64_t word);

#endif
