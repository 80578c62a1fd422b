/*
 * Resident sections ordered by next use, for the planner's eviction
 * policy: insert, remove and pop-the-farthest in O(1) amortised plus a
 * bitmap scan, instead of a heap's O(log n) per touch.
 *
 * Keys are absolute step times. Finite keys of the members always lie in
 * [now, now + ring) for the caller's current time now (a next use is at
 * most one window ahead), so a ring of buckets indexed by key mod ring
 * holds them in order; "never" has its own bucket. Each bucket keeps two
 * lists, one per cost class: at equal next use the class that costs
 * nothing to remove (a clean read-mostly copy) goes first. Within a list
 * the first inserted goes first: at equal next use the section used
 * least recently, whose eviction can start earliest (the planner issues
 * it right after that use), so the slow eviction lane gets the most time
 * to free the room. A step inserts its sections in run order, so victims
 * of one allocation still come out adjacent and their evictions coalesce.
 */
#ifndef UMADV_PLAN_VICTIMQ_H
#define UMADV_PLAN_VICTIMQ_H

#include <stdint.h>

#include <umadv.h>

#define UMADV_VICTIMQ_NEVER UINT64_MAX
#define UMADV_VICTIMQ_NIL   UINT32_MAX
#define UMADV_VICTIMQ_LEVELS 3

typedef struct umadv_victimq {
    uint32_t  ring;   /* buckets for finite keys */
    uint32_t *head;   /* (ring + 1) * 2 list heads, NIL when empty */
    uint32_t *tail;   /* and their tails */
    uint64_t *bits[UMADV_VICTIMQ_LEVELS]; /* [0]: bucket holds a member;
                       * [l + 1]: word i of [l] is not 0. A search skips
                       * 4096 empty buckets a word at level 1, 262144 at
                       * level 2 (one level made planning quadratic in
                       * steps: 59 s for a million) */
    uint32_t *prev;   /* per section */
    uint32_t *next;
    uint64_t *key;
    uint8_t  *cls;    /* per section: 1 = free to remove, 0 = costs a copy */
    uint32_t  count;
} umadv_victimq_t;

umadv_status_t umadv__victimq_init(umadv_victimq_t *q, uint32_t nsections, uint32_t ring);
void umadv__victimq_cleanup(umadv_victimq_t *q);

/* Forget every member (keeps the memory). */
void umadv__victimq_clear(umadv_victimq_t *q);

void umadv__victimq_insert(umadv_victimq_t *q, uint32_t section, uint64_t key, int cls);
void umadv__victimq_remove(umadv_victimq_t *q, uint32_t section);

/* The member with the farthest next use (NIL if empty); every member's
 * finite key must lie in [now, now + ring). */
uint32_t umadv__victimq_peek_max(const umadv_victimq_t *q, uint64_t now);

/* The member after @section in peek_max's order (farthest next use
 * first; within a key, free to remove first, then first inserted), or
 * NIL. */
uint32_t umadv__victimq_below(const umadv_victimq_t *q, uint32_t section, uint64_t now);

/* The first member after @section's list (its key and cost class) in
 * peek_max's order, or NIL: the list's later members, inserted after it,
 * were used no earlier. */
uint32_t umadv__victimq_below_list(const umadv_victimq_t *q, uint32_t section, uint64_t now);

/* The same, removed from the queue. */
uint32_t umadv__victimq_pop_max(umadv_victimq_t *q, uint64_t now);

#endif
