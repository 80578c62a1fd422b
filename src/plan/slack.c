#include "plan/slack.h"

#include <stdlib.h>
#include <string.h>

/* Leaves past n hold INT64_MAX so they never answer a "below" query. The
 * pending additions are kept at the node and never pushed down: a node's
 * min already includes its own add, queries accumulate adds on the way. */

umadv_status_t umadv__slack_init(umadv_slack_t *t, uint32_t n, const int64_t *values)
{
    uint32_t size = 1;

    memset(t, 0, sizeof(*t));
    while (size < n)
        size *= 2;
    t->n = n;
    t->size = size;
    t->min = malloc(2 * (size_t)size * sizeof(*t->min));
    t->add = calloc(2 * (size_t)size, sizeof(*t->add));
    if (t->min == NULL || t->add == NULL) {
        umadv__slack_cleanup(t);
        return UMADV_ERR_NO_MEMORY;
    }
    for (uint32_t i = 0; i < size; i++)
        t->min[size + i] = i < n ? values[i] : INT64_MAX;
    for (uint32_t i = size - 1; i >= 1; i--)
        t->min[i] = t->min[2 * i] < t->min[2 * i + 1] ? t->min[2 * i] : t->min[2 * i + 1];
    return UMADV_OK;
}

void umadv__slack_cleanup(umadv_slack_t *t)
{
    free(t->min);
    free(t->add);
    memset(t, 0, sizeof(*t));
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (a == INT64_MAX)
        return a;
    return a + b;
}

static void add_rec(umadv_slack_t *t, uint32_t node, uint32_t nlo, uint32_t nhi,
                    uint32_t lo, uint32_t hi, int64_t delta)
{
    uint32_t mid = nlo + (nhi - nlo) / 2;
    int64_t left, right;

    if (hi < nlo || nhi < lo)
        return;
    if (lo <= nlo && nhi <= hi) {
        t->add[node] += delta;
        t->min[node] = sat_add(t->min[node], delta);
        return;
    }
    add_rec(t, 2 * node, nlo, mid, lo, hi, delta);
    add_rec(t, 2 * node + 1, mid + 1, nhi, lo, hi, delta);
    left = t->min[2 * node];
    right = t->min[2 * node + 1];
    t->min[node] = sat_add(left < right ? left : right, t->add[node]);
}

void umadv__slack_add(umadv_slack_t *t, uint32_t lo, uint32_t hi, int64_t delta)
{
    add_rec(t, 1, 0, t->size - 1, lo, hi, delta);
}

/* @above: sum of the adds of the node's strict ancestors. */
static int64_t find_rec(const umadv_slack_t *t, uint32_t node, uint32_t nlo, uint32_t nhi,
                        uint32_t lo, uint32_t hi, int64_t limit, int64_t above)
{
    uint32_t mid = nlo + (nhi - nlo) / 2;
    int64_t found;

    if (hi < nlo || nhi < lo || sat_add(t->min[node], above) >= limit)
        return -1;
    if (nlo == nhi)
        return nlo;
    above += t->add[node];
    found = find_rec(t, 2 * node + 1, mid + 1, nhi, lo, hi, limit, above);
    if (found >= 0)
        return found;
    return find_rec(t, 2 * node, nlo, mid, lo, hi, limit, above);
}

int64_t umadv__slack_find_last_below(const umadv_slack_t *t, uint32_t lo, uint32_t hi,
                                     int64_t limit)
{
    if (lo > hi || hi >= t->n)
        return -1;
    return find_rec(t, 1, 0, t->size - 1, lo, hi, limit, 0);
}

int64_t umadv__slack_get(const umadv_slack_t *t, uint32_t i)
{
    uint32_t node = t->size + i;
    int64_t value = t->min[node];

    for (node /= 2; node >= 1; node /= 2)
        value = sat_add(value, t->add[node]);
    return value;
}

int64_t umadv__slack_min(const umadv_slack_t *t, uint32_t *step_p)
{
    uint32_t node = 1;

    /* Walk down towards the child that holds the minimum. */
    while (node < t->size) {
        int64_t left = t->min[2 * node], right = t->min[2 * node + 1];
        node = right < left ? 2 * node + 1 : 2 * node;
    }
    if (step_p != NULL)
        *step_p = node - t->size;
    return t->min[1];
}
