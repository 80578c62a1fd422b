/*
 * Where the replay last left pages (schedule/pages.c): runs of addresses on
 * the GPU, answering for any range inside one, whatever the offsets the
 * notes came at; fetches merge with their neighbours, evictions cut runs
 * (widened to whole 64 KiB pages); many runs keep their answers.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "schedule/pages.h"
#include "plan_util.h" /* tp_below: the tests' seeded generator */
#include "tap.h"

#define SECTION (UINT64_C(2) << 20)
#define GRAIN   (UINT64_C(64) << 10)
#define MANY    5000 /* several doublings past the first 64 runs */

static uintptr_t section(size_t i)
{
    return (uintptr_t)0x7f0000000000ull + (uintptr_t)(i * SECTION);
}

static void test_lookup(void)
{
    umadv_pages_t m = {0};

    ok(!umadv__pages_on_gpu(&m, section(0), SECTION), "empty: nothing is on the gpu");
    umadv__pages_note(&m, section(0), SECTION, 1);
    umadv__pages_note(&m, section(1), SECTION / 2, 1);
    ok(umadv__pages_on_gpu(&m, section(0), SECTION) &&
       umadv__pages_on_gpu(&m, section(0) + 4096, 4096),
       "a fetched section, and any range inside it, are on the gpu");
    ok(umadv__pages_on_gpu(&m, section(0) + SECTION / 2, SECTION) && m.n == 1,
       "adjacent fetches make one run: a range across their seam is on the gpu");
    ok(!umadv__pages_on_gpu(&m, section(1), SECTION),
       "a range past the run's end is not");
    ok(!umadv__pages_on_gpu(&m, section(0), 0), "an empty range is not asked for");
    umadv__pages_note(&m, section(3), SECTION, 1);
    umadv__pages_note(&m, section(1) + 4096, section(3) - section(1) - 4096, 1);
    ok(m.n == 1 && umadv__pages_on_gpu(&m, section(0), 4 * SECTION),
       "a fetch that fills the gap joins the runs on both sides (%zu run)", m.n);
    umadv__pages_cleanup(&m);
}

static void test_evictions(void)
{
    umadv_pages_t m = {0};

    umadv__pages_note(&m, section(0), 4 * SECTION, 1);
    umadv__pages_note(&m, section(1), SECTION, 0);
    ok(m.n == 2 && umadv__pages_on_gpu(&m, section(0), SECTION) &&
       umadv__pages_on_gpu(&m, section(2), 2 * SECTION) &&
       !umadv__pages_on_gpu(&m, section(1), 4096),
       "an eviction inside a run cuts it in two around the evicted range");
    umadv__pages_note(&m, section(2) + 1000, 256, 0);
    ok(!umadv__pages_on_gpu(&m, section(2), 4096) &&
       !umadv__pages_on_gpu(&m, section(2) + GRAIN - 256, 256) &&
       umadv__pages_on_gpu(&m, section(2) + GRAIN, 4096),
       "an eviction of a few bytes takes their whole 64 KiB page off, no more");
    umadv__pages_note(&m, section(0) - SECTION, 6 * SECTION, 0);
    ok(m.n == 0 && !umadv__pages_on_gpu(&m, section(3), 4096),
       "an eviction over every run leaves none");
    umadv__pages_note(&m, 0, SECTION, 1);
    umadv__pages_note(&m, UINTPTR_MAX - 4096, 8192, 1);
    ok(umadv__pages_on_gpu(&m, 0, SECTION) && m.n == 1 &&
       !umadv__pages_on_gpu(&m, UINTPTR_MAX, 1),
       "a range that would wrap the address space is never recorded");
    umadv__pages_cleanup(&m);
}

static void test_growth(void)
{
    umadv_pages_t m = {0};
    size_t found = 0;

    for (size_t i = 0; i < MANY; i++) /* every third section apart: runs of two */
        umadv__pages_note(&m, section(i), SECTION, i % 3 != 0);
    for (size_t i = 0; i < MANY; i++)
        found += umadv__pages_on_gpu(&m, section(i), SECTION) == (i % 3 != 0);
    is_u64(found, MANY, "%d sections noted: every one answers as noted", MANY);
    ok(m.n == (MANY + 2) / 3 && m.n <= m.cap, "neighbours merged: a run after each gap, "
       "%zu of them", m.n);
    for (size_t i = 0; i < MANY; i += 3) /* the gaps fetched: one run */
        umadv__pages_note(&m, section(i), SECTION, 1);
    ok(m.n == 1 && umadv__pages_on_gpu(&m, section(0), MANY * SECTION),
       "the gaps fetched: one run over all of them");
    umadv__pages_cleanup(&m);
    ok(m.runs == NULL && m.cap == 0 && m.n == 0, "cleanup empties it");
}

/* Random notes over a small space against a model of every 256-byte unit
 * (the pool's alignment): a fetch marks its bytes, an eviction clears its
 * bytes widened to 64 KiB pages; a range is on the GPU when each of its
 * units is. The runs stay sorted, disjoint and apart. */
#define UNIT   256u
#define SPACE  (UINT64_C(4) << 20)
#define UNITS  (SPACE / UNIT)
#define CASES  300
#define NOTES  60
#define ASKS   40

/* A range of whole units inside the space: [*a, *a + *len). */
static void random_range(uint64_t *rng, uint64_t *a, uint64_t *len)
{
    uint64_t first = tp_below(rng, UNITS), n = 1 + tp_below(rng, UNITS / 8);

    *a = first * UNIT;
    *len = UMADV_MIN(n, UNITS - first) * UNIT;
}

static int runs_well_formed(const umadv_pages_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->runs[i].start >= m->runs[i].end || (i > 0 && m->runs[i - 1].end >= m->runs[i].start))
            return 0;
    }
    return m->n <= m->cap;
}

static void model_note(unsigned char *on, uint64_t a, uint64_t len, int on_gpu)
{
    uint64_t b = a + len;

    if (!on_gpu) {
        a -= a % GRAIN;
        b = UMADV_MIN(SPACE, (b + GRAIN - 1) / GRAIN * GRAIN);
    }
    memset(on + a / UNIT, on_gpu, (size_t)((b - a) / UNIT));
}

static int model_on(const unsigned char *on, uint64_t a, uint64_t len)
{
    for (uint64_t u = a / UNIT; u < (a + len) / UNIT; u++) {
        if (!on[u])
            return 0;
    }
    return 1;
}

static void test_random(void)
{
    static unsigned char on[UNITS];
    const uintptr_t base = (uintptr_t)0x7f0000000000ull;
    uint64_t rng = 0x9e3779b97f4a7c15ull, asked = 0, wrong = 0, malformed = 0;

    for (int c = 0; c < CASES; c++) {
        umadv_pages_t m = {0};

        memset(on, 0, sizeof(on));
        for (int k = 0; k < NOTES; k++) {
            uint64_t a, len;
            int on_gpu = tp_below(&rng, 3) != 0;

            random_range(&rng, &a, &len);
            umadv__pages_note(&m, base + a, len, on_gpu);
            model_note(on, a, len, on_gpu);
            malformed += !runs_well_formed(&m);
            for (int q = 0; q < ASKS / NOTES + 1; q++) {
                random_range(&rng, &a, &len);
                asked++;
                wrong += umadv__pages_on_gpu(&m, base + a, len) != model_on(on, a, len);
            }
        }
        umadv__pages_cleanup(&m);
    }
    ok(wrong == 0 && asked > 0, "%d random cases of %d notes: every one of %llu ranges answers "
       "as a model of every 256-byte unit does (%llu differ)", CASES, NOTES,
       (unsigned long long)asked, (unsigned long long)wrong);
    ok(malformed == 0, "the runs stay sorted, disjoint and apart after every note");
}

int main(void)
{
    plan(16);
    test_lookup();
    test_evictions();
    test_growth();
    test_random();
    return exit_status();
}
