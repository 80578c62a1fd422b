/*
 * Keyed lists (common/keyed.h): random items grouped by key against a
 * reference that scans every item per key, in order; no items; keys
 * with none.
 */
#include "common/keyed.h"

#include <stdlib.h>

#include "tap.h"

#define MAX_ITEMS 2000

typedef struct items {
    uint32_t n;
    uint32_t key[MAX_ITEMS], value[MAX_ITEMS];
    int      calls;
} items_t;

static void emit_all(void *arg, umadv_keyed_pass_t *pass)
{
    items_t *it = arg;

    it->calls++;
    for (uint32_t i = 0; i < it->n; i++)
        umadv__keyed_emit(pass, it->key[i], it->value[i]);
}

/* Whether @k holds, for each key, exactly the items of that key in the
 * order given. */
static int matches(const umadv_keyed_t *k, const items_t *it, uint32_t nkeys)
{
    if (k->off[0] != 0 || k->off[nkeys] != it->n)
        return 0;
    for (uint32_t key = 0; key < nkeys; key++) {
        uint32_t at = 0;

        for (uint32_t i = 0; i < it->n; i++) {
            if (it->key[i] != key)
                continue;
            if (at >= umadv__keyed_count(k, key) ||
                umadv__keyed_values(k, key)[at] != it->value[i])
                return 0;
            at++;
        }
        if (at != umadv__keyed_count(k, key))
            return 0;
    }
    return 1;
}

static void test_random(void)
{
    static items_t it;
    int good = 1, twice = 1;

    srandom(7);
    for (int round = 0; round < 300; round++) {
        uint32_t nkeys = 1 + (uint32_t)random() % 50;
        umadv_keyed_t k;

        it.n = (uint32_t)random() % MAX_ITEMS;
        it.calls = 0;
        for (uint32_t i = 0; i < it.n; i++) {
            it.key[i] = (uint32_t)random() % nkeys;
            it.value[i] = (uint32_t)random();
        }
        if (umadv__keyed_build(&k, nkeys, emit_all, &it) != UMADV_OK)
            abort();
        good &= matches(&k, &it, nkeys) && k.nkeys == nkeys;
        twice &= it.calls == 2;
        umadv__keyed_cleanup(&k);
    }
    ok(good, "300 random sets of items: each key's values, in the order they came");
    ok(twice, "the items asked for twice, to count and to fill");
}

static void test_edges(void)
{
    static items_t it;
    umadv_keyed_t k;

    it.n = 0;
    is(umadv__keyed_build(&k, 4, emit_all, &it), UMADV_OK, "no items");
    ok(k.off[4] == 0 && umadv__keyed_count(&k, 0) == 0 && umadv__keyed_count(&k, 3) == 0 &&
           k.val != NULL,
       "no items: every key empty, a value array all the same");
    umadv__keyed_cleanup(&k);
    ok(k.off == NULL && k.val == NULL && k.nkeys == 0, "cleaned up: empty");
    it.n = 3;
    it.key[0] = 2, it.value[0] = 10;
    it.key[1] = 0, it.value[1] = 11;
    it.key[2] = 2, it.value[2] = 12;
    is(umadv__keyed_build(&k, 4, emit_all, &it), UMADV_OK, "three items over four keys");
    ok(umadv__keyed_count(&k, 0) == 1 && umadv__keyed_count(&k, 1) == 0 &&
           umadv__keyed_count(&k, 2) == 2 && umadv__keyed_count(&k, 3) == 0 &&
           umadv__keyed_values(&k, 0)[0] == 11 && umadv__keyed_values(&k, 2)[0] == 10 &&
           umadv__keyed_values(&k, 2)[1] == 12,
       "keys 1 and 3 empty, key 2's two in order");
    umadv__keyed_cleanup(&k);
}

int main(void)
{
    plan(7);
    test_random();
    test_edges();
    return exit_status();
}
