/*
 * The LRU order of the executor's demand and prefetch-all policies
 * (src/schedule/lru.c) against the scan-and-sort it replaced: random inserts,
 * removals and key changes, with many ties (keys are step numbers), and
 * after each batch of changes a walk in order, whole and cut short, that
 * must list the members exactly as sorting them by (key, section) does.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule/core.h"
#include "tap.h"

#define NSEC   600
#define ROUNDS 400

static uint64_t key[NSEC];
static uint8_t  member[NSEC];

typedef struct collect {
    uint32_t out[NSEC];
    size_t   n, limit;
} collect_t;

static int collect_visit(void *arg, uint32_t s)
{
    collect_t *c = arg;

    c->out[c->n++] = s;
    return c->n >= c->limit;
}

static int ref_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    if (key[x] != key[y])
        return key[x] < key[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* The members sorted as the old lru_victims sorted its candidates. */
static size_t reference(uint32_t *out)
{
    size_t n = 0;

    for (uint32_t s = 0; s < NSEC; s++) {
        if (member[s])
            out[n++] = s;
    }
    qsort(out, n, sizeof(*out), ref_cmp);
    return n;
}

/* One random change: a section becomes resident, leaves, or is used at
 * step @now (its key grows, as the executor's last_use does). */
static void change(umadv_core_lru_t *lru, uint64_t now)
{
    uint32_t s = (uint32_t)(rand() % NSEC);
    int what = rand() % 3;

    if (what == 0 && !member[s]) {
        key[s] = rand() % 4 == 0 ? 0 : now - (uint64_t)(rand() % 5);
        umadv__core_lru_insert(lru, s);
        member[s] = 1;
    } else if (what == 1) {
        umadv__core_lru_remove(lru, s);
        member[s] = 0;
    } else {
        key[s] = now;
        umadv__core_lru_update(lru, s);
    }
}

static int walk_matches(umadv_core_lru_t *lru, size_t limit)
{
    static uint32_t ref[NSEC];
    static collect_t c;
    size_t n = reference(ref);

    c.n = 0;
    c.limit = limit ? limit : NSEC + 1;
    if (umadv__core_lru_walk(lru, collect_visit, &c) != UMADV_OK)
        return 0;
    if (limit && n > limit)
        n = limit;
    return c.n == n && memcmp(c.out, ref, n * sizeof(*ref)) == 0 &&
           (limit || lru->n == n);
}

int main(void)
{
    umadv_core_lru_t lru;
    int whole = 1, cut = 1, nonempty = 0;
    uint64_t now = 10;

    plan(4);
    srand(7);
    is(umadv__core_lru_init(&lru, key, NSEC), UMADV_OK, "an LRU set over 600 sections");
    for (int r = 0; r < ROUNDS; r++, now++) {
        for (int k = 0; k < 40; k++)
            change(&lru, now);
        nonempty += lru.n > 0;
        whole &= walk_matches(&lru, 0);
        cut &= walk_matches(&lru, (size_t)(rand() % 50) + 1);
    }
    ok(whole && nonempty > ROUNDS / 2,
       "a whole walk lists the members in (last use, section) order, every round");
    ok(cut, "a walk stopped early lists the same first ones");
    for (uint32_t s = 0; s < NSEC; s++) {
        umadv__core_lru_remove(&lru, s);
        member[s] = 0;
    }
    ok(lru.n == 0 && walk_matches(&lru, 0), "removing everything leaves it empty");
    umadv__core_lru_cleanup(&lru);
    return exit_status();
}
