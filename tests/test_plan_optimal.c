/*
 * The planner's residency policy against exact searches over resident
 * sets, on tiny traces of persistent allocations (only fetched bytes
 * count: what a residency choice costs; timing does not change it).
 *
 * Linear: one pass over the steps from an empty GPU, next uses past the
 * end "never" (umadv__plan_residency_linear), against a DP over resident
 * sets. With uniform section sizes Belady's policy is optimal: equal.
 * With mixed sizes (partial last sections, no block under a section) it
 * is a heuristic: the worst ratio is bounded (see NONUNIFORM_BOUND).
 *
 * Cyclic: the planned iteration replayed forever (umadv__plan_build),
 * against the minimum mean cost per iteration over all resident-set
 * cycles (a DP per start state gives the cost of one iteration between
 * any two wrap states; Karp's algorithm finds the minimum mean cycle).
 * Belady on the infinite periodic sequence is optimal, so when its state
 * at the wrap repeats (converged) its cost per iteration is the minimum;
 * a closed (unconverged) plan can only cost more, never less.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "tap.h"
#include "plan_util.h"

#define MAXSEC 10
#define NSTATES (1u << MAXSEC)
#define INF_COST UINT64_MAX

/* Sections with a partial last one may be this much worse than optimal:
 * the worst ratio seen over the random cases here was about 1.35; the
 * bound leaves room, and a planner change that blows it is a regression
 * worth looking at. */
#define NONUNIFORM_BOUND 1.5

typedef struct tiny {
    umadv_trace_t t;
    uint32_t      nsec;
    uint32_t      nsteps;
    uint64_t      size[MAXSEC];
    uint32_t      work[32];     /* per step: mask of touched sections */
} tiny_t;

static void tiny_build(uint64_t seed, uint32_t nallocs, uint32_t nsteps, int uniform, tiny_t *y)
{
    uint64_t rng = seed * 7919 + 17;
    uint32_t id;

    memset(y, 0, sizeof(*y));
    umadv__trace_init(&y->t, TP_SECTION);
    for (uint32_t a = 0; a < nallocs && y->nsec < MAXSEC; a++) {
        uint32_t ns = y->nsec + 2 <= MAXSEC ? 1 + tp_below(&rng, 2) : 1;
        uint64_t size = ns * TP_SECTION;

        /* mixed: a partial last section; never under one section, a block
         * that shares its pages, which the policy moves last on purpose
         * (residency.c, choose_victim: its cost is faults, not bytes) */
        if (!uniform && ns > 1 && tp_below(&rng, 2))
            size -= tp_below(&rng, TP_SECTION * 3 / 4);
        umadv__trace_add_alloc(&y->t, 0, size, UMADV_ALLOC_WEIGHT, NULL, &id);
        y->nsec += ns;
    }
    for (uint32_t j = 0; j < nsteps; j++) {
        uint32_t k = 1 + tp_below(&rng, 3);
        umadv__trace_add_step(&y->t, NULL, UMADV_STEP_LAYER, 0, 1000, NULL);
        for (uint32_t i = 0; i < k; i++) {
            uint32_t a = tp_below(&rng, y->t.nallocs);
            uint32_t ns = (uint32_t)((y->t.allocs[a].size + TP_SECTION - 1) / TP_SECTION);
            uint32_t first = tp_below(&rng, ns);
            umadv__trace_add_access_sections(&y->t, a, first, 1 + tp_below(&rng, ns - first),
                                             1 + tp_below(&rng, 3), 0);
        }
    }
    umadv__trace_finalize(&y->t, NULL, 0);
    y->nsteps = y->t.nsteps;
    for (uint32_t x = 0; x < y->t.nsections; x++)
        y->size[x] = y->t.sections[x].size;
    for (uint32_t j = 0; j < y->nsteps; j++) {
        const umadv_trace_step_t *st = &y->t.steps[j];
        for (uint32_t i = 0; i < st->naccesses; i++) {
            const umadv_trace_access_t *acc = &y->t.accesses[st->first_access + i];
            for (uint32_t c = 0; c < acc->count; c++)
                y->work[j] |= 1u << umadv__trace_section_id(&y->t, acc->alloc, acc->first + c);
        }
    }
}

static uint64_t mask_bytes(const tiny_t *y, uint32_t mask)
{
    uint64_t bytes = 0;

    for (uint32_t x = 0; x < y->nsec; x++)
        bytes += (mask >> x & 1) ? y->size[x] : 0;
    return bytes;
}

static uint64_t max_work(const tiny_t *y)
{
    uint64_t m = 0;

    for (uint32_t j = 0; j < y->nsteps; j++) {
        uint64_t b = mask_bytes(y, y->work[j]);
        m = b > m ? b : m;
    }
    return m;
}

/* One DP step: from costs @in over resident sets to @out after step j
 * (the step's set loaded, any other resident section kept or dropped). */
static void dp_step(const tiny_t *y, uint32_t j, uint64_t budget, const uint64_t *in,
                    uint64_t *out)
{
    uint32_t states = 1u << y->nsec, w = y->work[j];

    for (uint32_t m = 0; m < states; m++)
        out[m] = INF_COST;
    for (uint32_t m = 0; m < states; m++) {
        uint32_t rest = m & ~w;
        uint64_t cost;

        if (in[m] == INF_COST)
            continue;
        cost = in[m] + mask_bytes(y, w & ~m);
        for (uint32_t sub = rest;; sub = (sub - 1) & rest) {
            uint32_t next = w | sub;
            if (mask_bytes(y, next) <= budget && cost < out[next])
                out[next] = cost;
            if (sub == 0)
                break;
        }
    }
}

/* Cheapest way through all steps from resident set @start, per end set. */
static void dp_window(const tiny_t *y, uint64_t budget, uint32_t start, uint64_t *end)
{
    static uint64_t a[NSTATES], b[NSTATES];
    uint64_t *in = a, *out = b;

    for (uint32_t m = 0; m < (1u << y->nsec); m++)
        in[m] = INF_COST;
    in[start] = 0;
    for (uint32_t j = 0; j < y->nsteps; j++) {
        uint64_t *tmp;
        dp_step(y, j, budget, in, out);
        tmp = in;
        in = out;
        out = tmp;
    }
    memcpy(end, in, (1u << y->nsec) * sizeof(*end));
}

static uint64_t linear_optimum(const tiny_t *y, uint64_t budget)
{
    static uint64_t end[NSTATES];
    uint64_t best = INF_COST;

    dp_window(y, budget, 0, end);
    for (uint32_t m = 0; m < (1u << y->nsec); m++)
        best = end[m] < best ? end[m] : best;
    return best;
}

/* Minimum mean cost per iteration over cycles of wrap states (Karp). */
static double cyclic_optimum(const tiny_t *y, uint64_t budget)
{
    uint32_t n = 1u << y->nsec;
    uint64_t *w = malloc((size_t)n * n * sizeof(*w));
    double *d = malloc((size_t)(n + 1) * n * sizeof(*d)), best = DBL_MAX;

    for (uint32_t s = 0; s < n; s++)
        dp_window(y, budget, s, &w[(size_t)s * n]);
    for (uint32_t v = 0; v < n; v++)
        d[v] = 0;
    for (uint32_t k = 1; k <= n; k++) {
        for (uint32_t v = 0; v < n; v++) {
            double m = DBL_MAX;
            for (uint32_t u = 0; u < n; u++) {
                uint64_t c = w[(size_t)u * n + v];
                if (c != INF_COST && d[(size_t)(k - 1) * n + u] != DBL_MAX &&
                    d[(size_t)(k - 1) * n + u] + (double)c < m)
                    m = d[(size_t)(k - 1) * n + u] + (double)c;
            }
            d[(size_t)k * n + v] = m;
        }
    }
    for (uint32_t v = 0; v < n; v++) {
        double worst = -DBL_MAX;
        if (d[(size_t)n * n + v] == DBL_MAX)
            continue;
        for (uint32_t k = 0; k < n; k++) {
            double dk = d[(size_t)k * n + v];
            if (dk != DBL_MAX && (d[(size_t)n * n + v] - dk) / (n - k) > worst)
                worst = (d[(size_t)n * n + v] - dk) / (n - k);
        }
        best = worst < best ? worst : best;
    }
    free(w);
    free(d);
    return best;
}

static uint64_t pick_budget(uint64_t *rng, const tiny_t *y)
{
    uint64_t lo = max_work(y), hi = mask_bytes(y, (1u << y->nsec) - 1);

    return lo + tp_below(rng, (uint32_t)(hi - lo + 1));
}

static void test_linear(int uniform, int cases)
{
    uint64_t rng = uniform ? 11 : 12;
    int done = 0, equal = 0, below = 0;
    double worst = 1.0;

    for (uint64_t seed = 1; done < cases; seed++) {
        tiny_t y;
        umadv_residency_stats_t st;
        uint64_t budget, opt;

        tiny_build(seed, 4 + seed % 5, 6 + seed % 7, uniform, &y);
        budget = pick_budget(&rng, &y);
        if (umadv__plan_residency_linear(&y.t, 0, y.nsteps, budget, 0, &st) == UMADV_OK) {
            opt = linear_optimum(&y, budget);
            done++;
            equal += st.fetch_bytes == opt;
            below += st.fetch_bytes < opt;
            if (opt > 0 && (double)st.fetch_bytes / (double)opt > worst)
                worst = (double)st.fetch_bytes / (double)opt;
        }
        umadv__trace_cleanup(&y.t);
    }
    is(below, 0, "linear %s: never below the exact optimum (%d cases)",
       uniform ? "uniform" : "mixed sizes", done);
    if (uniform) {
        is(equal, done, "linear uniform: equal to the exact optimum");
    } else {
        ok(worst <= NONUNIFORM_BOUND, "linear mixed sizes: within %.2fx of the optimum",
           NONUNIFORM_BOUND);
        diag("linear mixed sizes: worst ratio %.3f, optimal in %d of %d", worst, equal, done);
    }
}

static void test_cyclic(int cases)
{
    uint64_t rng = 13;
    int done = 0, converged = 0, equal = 0, below = 0;
    double worst = 1.0;

    for (uint64_t seed = 1; done < cases; seed++) {
        tiny_t y;
        umadv_plan_params_t p;
        umadv_schedule_t s;
        double opt;

        tiny_build(seed + 1000, 3 + seed % 4, 3 + seed % 6, 1, &y);
        if (y.nsec > 7) {
            umadv__trace_cleanup(&y.t);
            continue;
        }
        umadv__plan_params_default(&y.t, pick_budget(&rng, &y), &p);
        p.read_mostly = 0;
        p.host_placement = 0; /* the exact search knows only residency */
        p.refine = 0;         /* nor time: refine keeps the faster victim rule,
                               * which may move more bytes (plan.c, REFINE) */
        if (umadv__plan_build(&y.t, &p, &s) == UMADV_OK) {
            opt = cyclic_optimum(&y, p.budget);
            done++;
            below += (double)s.fetch_bytes < opt - 0.5;
            if (s.converged) {
                converged++;
                equal += (double)s.fetch_bytes <= opt + 0.5;
            } else if (opt > 0 && (double)s.fetch_bytes / opt > worst) {
                worst = (double)s.fetch_bytes / opt;
            }
            umadv__schedule_cleanup(&s);
        }
        umadv__trace_cleanup(&y.t);
    }
    is(below, 0, "cyclic: never below the minimum mean cycle (%d cases)", done);
    is(equal, converged, "cyclic: converged plans cost the minimum per iteration (%d)", converged);
    diag("cyclic: %d of %d not converged, closed at worst %.3fx the minimum", done - converged,
         done, worst);
}

int main(void)
{
    plan(6);
    test_linear(1, 2000);
    test_linear(0, 2000);
    test_cyclic(400);
    return exit_status();
}
