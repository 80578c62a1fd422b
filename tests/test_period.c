/*
 * The launch-sequence period detector (src/inject/period.c) on synthetic
 * id streams, no GPU: an exact period, a warm-up prefix, one launch per
 * iteration, a short last batch, evaluation passes (short ones skipped,
 * a long one taken, training found again), no period at all, units
 * longer than the detector looks, ResNet- and transformer-like units of
 * thousands of launches with inner loops, bounded memory and O(1)
 * amortised work; then a property test over random units, prefixes and
 * noise (ids changed, dropped, added; short iterations): never a mark
 * inside an iteration once the unit has repeated, and every iteration
 * after that marked but those the noise broke.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inject/period.h"
#include "tap.h"

/* ---- streams: ids, and what each position is ---- */

#define INSIDE 0 /* inside an iteration: a mark there is wrong */
#define START  1 /* an iteration of the main loop starts here */
#define OTHER  2 /* another loop's iteration starts here (a mark may go either way) */

typedef struct stream {
    uint64_t *ids;
    uint8_t  *what;
    size_t    n, cap;
} stream_t;

static void put(stream_t *s, uint64_t id, uint8_t what)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->ids = realloc(s->ids, s->cap * sizeof(*s->ids));
        s->what = realloc(s->what, s->cap);
        if (s->ids == NULL || s->what == NULL)
            abort();
    }
    s->ids[s->n] = id;
    s->what[s->n++] = what;
}

/* One iteration of @unit, its first launch marked @what. */
static void put_unit(stream_t *s, const uint64_t *unit, size_t len, uint8_t what)
{
    for (size_t q = 0; q < len; q++)
        put(s, unit[q], q == 0 ? what : INSIDE);
}

static void put_units(stream_t *s, const uint64_t *unit, size_t len, unsigned times, uint8_t what)
{
    for (unsigned t = 0; t < times; t++)
        put_unit(s, unit, len, what);
}

static void stream_free(stream_t *s)
{
    free(s->ids);
    free(s->what);
    memset(s, 0, sizeof(*s));
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t fresh_id(void)
{
    return (rnd() | 1ull << 63); /* never one of the small ids units use */
}

/* ---- running the detector over a stream ---- */

typedef struct result {
    uint8_t *marked;    /* 1 where BEGIN was said */
    size_t   marks;
    size_t   wrong;     /* marks INSIDE an iteration */
    size_t   wrong_after; /* ...at or after the cut-off */
    size_t   first_wrong;
    size_t   new_units; /* NEW_UNIT flags */
    umadv_period_info_t info;
} result_t;

static int run(const stream_t *s, const umadv_period_params_t *params, size_t cutoff,
               result_t *r)
{
    umadv_period_t *p = NULL;

    memset(r, 0, sizeof(*r));
    r->first_wrong = SIZE_MAX;
    r->marked = calloc(s->n + 1, 1);
    if (r->marked == NULL || umadv__period_create(params, &p) != UMADV_OK)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        unsigned flags = umadv__period_next(p, s->ids[i]);

        if (!(flags & UMADV_PERIOD_BEGIN))
            continue;
        r->marked[i] = 1;
        r->marks++;
        r->new_units += (flags & UMADV_PERIOD_NEW_UNIT) != 0;
        if (s->what[i] == INSIDE) {
            r->wrong++;
            r->wrong_after += i >= cutoff;
            if (r->first_wrong == SIZE_MAX)
                r->first_wrong = i;
        }
    }
    umadv__period_info(p, &r->info);
    umadv__period_destroy(p);
    return 0;
}

/* Iteration starts (START) at or after @from that were not marked. */
static size_t missed(const stream_t *s, const result_t *r, size_t from)
{
    size_t n = 0;

    for (size_t i = from; i < s->n; i++)
        n += s->what[i] == START && !r->marked[i];
    return n;
}

static void params_default(umadv_period_params_t *params)
{
    umadv__period_params_default(params);
}

/* A unit of @len distinct ids from @base. */
static void unit_make(uint64_t *unit, size_t len, uint64_t base)
{
    for (size_t q = 0; q < len; q++)
        unit[q] = base + q;
}

/* ---- cases ---- */

static void test_params(void)
{
    umadv_period_params_t params;
    umadv_period_t *p = (umadv_period_t *)&params;

    params_default(&params);
    params.min_repeats = 1;
    ok(umadv__period_create(&params, &p) == UMADV_ERR_INVALID_PARAM &&
       p == (umadv_period_t *)&params, "K below 2 is refused, nothing made");
    params_default(&params);
    params.max_period = 0;
    ok(umadv__period_create(&params, &p) == UMADV_ERR_INVALID_PARAM, "a zero max_period too");
    ok(umadv__period_hash(0, 1) != umadv__period_hash(0, 2) &&
       umadv__period_hash(umadv__period_hash(0, 1), 2) !=
           umadv__period_hash(umadv__period_hash(0, 2), 1),
       "the id hash depends on every word and their order");
}

static void test_exact(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    uint64_t unit[5];
    int rc;
    result_t r;

    params_default(&params);
    unit_make(unit, 5, 100);
    put_units(&s, unit, 5, 30, START);
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.wrong == 0 && r.info.period == 5 &&
       missed(&s, &r, 45) == 0 && r.marks >= 22 && r.new_units == 1,
       "an exact period of 5: every iteration after the 9th marked at its first launch, none "
       "inside (%zu marks, %zu wrong)", r.marks, r.wrong);
    free(r.marked);
    stream_free(&s);
}

static void test_prefix(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    uint64_t unit[6];
    int rc;
    result_t r;

    params_default(&params);
    for (int k = 0; k < 7; k++)
        put(&s, 900 + k, INSIDE); /* initialisation: not an iteration */
    unit_make(unit, 6, 100);
    put_units(&s, unit, 6, 30, START);
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.wrong == 0 && r.info.period == 6 &&
       missed(&s, &r, 7 + 6 * 8) == 0,
       "a warm-up prefix: the unit starts at the loop's first launch (%zu marks, first wrong %zu)",
       r.marks, r.first_wrong);
    free(r.marked);
    stream_free(&s);
}

static void test_one_launch(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    int rc;
    result_t r;

    params_default(&params);
    for (int k = 0; k < 4; k++)
        put(&s, 7, INSIDE); /* four equal initialisation launches: no loop */
    put(&s, 8, INSIDE);
    for (int k = 0; k < 100; k++)
        put(&s, 42, START);
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.wrong == 0 && r.info.period == 1 &&
       missed(&s, &r, 5 + 40) == 0 && !r.marked[2],
       "one launch per iteration (a stencil): each marked once min_span launches repeat; four "
       "equal launches are no loop (%zu marks)", r.marks);
    free(r.marked);
    stream_free(&s);
}

static void test_last_batch(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    uint64_t unit[10], last[10];
    int rc;
    result_t r;

    params_default(&params);
    unit_make(unit, 10, 100);
    unit_make(last, 10, 300); /* the last batch's grids are smaller */
    last[0] = unit[0];        /* ...but its first kernel's are not */
    for (int epoch = 0; epoch < 8; epoch++) {
        put_units(&s, unit, 10, 12, START);
        put_unit(&s, last, 7, START); /* and it is shorter */
    }
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.wrong == 0 && r.info.units == 1 && missed(&s, &r, 130) <= 7,
       "a short last batch each epoch: its start marked or not, nothing inside it, the next "
       "epoch found again, the epoch no iteration (%zu marks, %zu missed after the first epoch)", r.marks,
       missed(&s, &r, 130));
    free(r.marked);
    stream_free(&s);
}

static void test_eval(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    uint64_t unit[12], eval[4];
    int rc;
    result_t r;

    params_default(&params);
    unit_make(unit, 12, 100);
    unit_make(eval, 4, 100); /* the eval forward shares the train forward's first kernels */
    eval[3] = 500;
    for (int epoch = 0; epoch < 4; epoch++) {
        put_units(&s, unit, 12, 8, START);
        /* an eval pass is part of the iteration before; a mark at its
         * start (the train forward's first kernel) is no mark inside */
        put_unit(&s, eval, 4, OTHER);
        put_units(&s, eval, 4, 4, INSIDE);
    }
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.wrong == 0 && r.info.units == 1 &&
       missed(&s, &r, 12 * 3) <= 3,
       "short eval passes between epochs: never marked, each epoch's iterations from its second "
       "(%zu marks, %zu missed)", r.marks, missed(&s, &r, 12 * 3));
    free(r.marked);
    stream_free(&s);
}

static void test_long_eval(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    uint64_t unit[12], eval[4];
    size_t resumed;
    int rc;
    result_t r;

    params_default(&params);
    unit_make(unit, 12, 100);
    unit_make(eval, 4, 400);
    put_units(&s, unit, 12, 8, START);
    put_units(&s, eval, 4, 200, OTHER); /* long enough to be a loop of its own */
    resumed = s.n;
    put_units(&s, unit, 12, 10, START);
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.wrong == 0 && r.info.period == 12 &&
       r.info.units == 3 && r.new_units == 3 && missed(&s, &r, resumed + 12 * 4) == 0,
       "a long eval pass becomes the unit; training taken back within 4 iterations, nothing "
       "marked inside either (%u units, %zu missed)", r.info.units, missed(&s, &r, resumed + 48));
    free(r.marked);
    stream_free(&s);
}

static void test_no_period(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    int rc;
    result_t r, r3;

    params_default(&params);
    for (int k = 0; k < 200000; k++)
        put(&s, fresh_id(), INSIDE);
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.marks == 0 && r.info.period == 0,
       "200000 launches that never repeat: no unit, no mark");
    free(r.marked);
    stream_free(&s);
    for (int k = 0; k < 100000; k++)
        put(&s, rnd() % 3, INSIDE);
    rc = run(&s, &params, 0, &r3);
    ok(rc == 0 && r3.marks == 0,
       "100000 random launches of three kernels: no mark (%zu)", r3.marks);
    free(r3.marked);
    stream_free(&s);
}

static void test_too_long(void)
{
    umadv_period_params_t params;
    stream_t s = {0};
    uint64_t unit[100];
    int rc;
    result_t r;

    params_default(&params);
    params.max_period = 64;
    unit_make(unit, 100, 100);
    put_units(&s, unit, 100, 10, START);
    rc = run(&s, &params, 0, &r);
    ok(rc == 0 && r.marks == 0,
       "a unit longer than max_period is not found (and nothing else marked)");
    free(r.marked);
    stream_free(&s);
}

/* ResNet-50-like: a stem, four stages of bottleneck blocks whose later
 * blocks are equal (3, 4, 6, 3), the backward in reverse with its own
 * kernels, the optimizer; about 1800 launches. */
static size_t resnet_unit(uint64_t *unit)
{
    static const int blocks[4] = {3, 4, 6, 3};
    size_t n = 0;

    for (int k = 0; k < 8; k++)
        unit[n++] = 1000 + k;
    for (int pass = 0; pass < 2; pass++) {
        for (int st = 0; st < 4; st++) {
            int stage = pass ? 3 - st : st;

            for (int b = 0; b < blocks[stage]; b++) {
                int len = pass ? 60 : 30;

                for (int k = 0; k < len; k++)
                    unit[n++] = 10000 * (pass + 1) + 1000 * stage + (b == 0 ? 500 : 0) + k;
            }
        }
    }
    for (int k = 0; k < 161; k++)
        unit[n++] = 50000 + k % 7; /* the optimizer: a short loop of its own */
    return n;
}

static void test_long_units(void)
{
    umadv_period_params_t params;
    static uint64_t unit[4096];
    stream_t s = {0};
    size_t len = resnet_unit(unit), tail;
    int rc;
    result_t r;

    params_default(&params);
    for (int k = 0; k < 300; k++)
        put(&s, 90000 + k % 50, INSIDE); /* cuDNN autotuning in warm-up */
    put_units(&s, unit, len, 6, START);
    tail = s.n;
    put_units(&s, unit, len, 6, START);
    rc = run(&s, &params, tail, &r);
    ok(rc == 0 && r.info.period == len && r.wrong_after == 0 &&
       missed(&s, &r, tail) == 0 && r.new_units >= 1,
       "a ResNet-50-like unit of %zu launches with inner loops: inner loops may be taken "
       "first (%zu marks inside, until launch %zu), then every iteration marked at its start "
       "and nothing inside", len, r.wrong, r.first_wrong);
    ok(r.info.work <= 64 * r.info.launches,
       "...with %.1f comparisons per launch (O(1) amortised)",
       (double)r.info.work / (double)r.info.launches);
    free(r.marked);
    stream_free(&s);
}

/* 48 equal transformer layers forward and backward: 5000 launches. */
static void test_transformer(void)
{
    umadv_period_params_t params;
    static uint64_t unit[8192];
    stream_t s = {0};
    size_t len = 0, tail;
    int rc;
    result_t r;

    params_default(&params);
    for (int k = 0; k < 20; k++)
        unit[len++] = 100 + k; /* embedding */
    for (int l = 0; l < 48; l++)
        for (int k = 0; k < 30; k++)
            unit[len++] = 200 + k;
    for (int k = 0; k < 40; k++)
        unit[len++] = 300 + k; /* head, loss, their backward */
    for (int l = 0; l < 48; l++)
        for (int k = 0; k < 70; k++)
            unit[len++] = 400 + k;
    for (int k = 0; k < 40; k++)
        unit[len++] = 600 + k; /* clip, optimizer */
    put_units(&s, unit, len, 4, START);
    tail = s.n;
    put_units(&s, unit, len, 4, START);
    rc = run(&s, &params, tail, &r);
    ok(rc == 0 && r.info.period == len && r.wrong_after == 0 &&
       missed(&s, &r, tail) == 0 && r.info.work <= 64 * r.info.launches,
       "48 equal transformer layers (a unit of %zu): the layer is taken first, then the "
       "iteration, marked exactly; %.1f comparisons per launch", len,
       (double)r.info.work / (double)r.info.launches);
    free(r.marked);
    stream_free(&s);
}

static void test_memory(void)
{
    umadv_period_params_t params;
    umadv_period_t *p = NULL;
    umadv_period_info_t before, after;
    uint64_t unit[700];

    params_default(&params);
    unit_make(unit, 700, 100);
    if (umadv__period_create(&params, &p) != UMADV_OK) {
        ok(0, "a detector");
        return;
    }
    umadv__period_info(p, &before);
    for (int k = 0; k < 1000000; k++)
        umadv__period_next(p, k % 3 == 0 ? fresh_id() : unit[k % 700]);
    for (int k = 0; k < 1000000; k++)
        umadv__period_next(p, unit[k % 700]);
    umadv__period_info(p, &after);
    ok(after.bytes == before.bytes && before.bytes < 4u << 20 &&
       after.work <= 64 * after.launches && after.period == 700,
       "two million launches, noisy then periodic: memory fixed at %zu bytes, %.1f comparisons "
       "per launch", after.bytes, (double)after.work / (double)after.launches);
    umadv__period_destroy(p);
}

/* ---- the property test ---- */

/* The smallest period of @unit[0..len) that divides len. */
static size_t primitive_len(const uint64_t *unit, size_t len)
{
    for (size_t d = 1; d < len; d++) {
        size_t q = d;

        if (len % d != 0)
            continue;
        while (q < len && unit[q] == unit[q - d])
            q++;
        if (q == len)
            return d;
    }
    return len;
}

/* One iteration with one kind of noise at a random place. */
static void put_noisy(stream_t *s, const uint64_t *unit, size_t len)
{
    size_t at = rnd() % len;

    switch (rnd() % 4) {
    case 0: /* one launch of another shape */
        for (size_t q = 0; q < len; q++)
            put(s, q == at ? fresh_id() : unit[q], q == 0 ? START : INSIDE);
        break;
    case 1: /* one launch fewer (the iteration still starts at its first) */
        for (size_t q = 0; q < len; q++)
            if (q != at || len == 1)
                put(s, unit[q], q == (at == 0 && len > 1 ? 1u : 0u) ? START : INSIDE);
        break;
    case 2: /* one launch more */
        for (size_t q = 0; q < len; q++) {
            put(s, unit[q], q == 0 ? START : INSIDE);
            if (q == at)
                put(s, fresh_id(), INSIDE);
        }
        break;
    default: /* a short last iteration */
        put_unit(s, unit, at + 1, START);
    }
}

typedef struct trial {
    size_t len, noisy, reps, cutoff;
    result_t r;
    size_t missed;
} trial_t;

/* One random trial: 0 when a mark fell inside an iteration after the
 * cut-off, 1 when more iterations were missed than twice the noisy
 * ones, 2 when all is well. */
static int one_trial(const umadv_period_params_t *params, trial_t *t)
{
    static uint64_t unit[400];
    size_t alphabet = 2 + rnd() % 2000, prefix = rnd() % 300, clean;
    stream_t s = {0};
    int verdict;

    t->len = 1 + rnd() % 400;
    for (size_t q = 0; q < t->len; q++)
        unit[q] = 1 + rnd() % alphabet;
    t->len = primitive_len(unit, t->len);
    t->reps = 8 + rnd() % 8;
    clean = params->min_repeats + 3 + params->min_span / t->len;
    for (size_t k = 0; k < prefix; k++)
        put(&s, fresh_id(), INSIDE);
    put_units(&s, unit, t->len, (unsigned)clean, START);
    t->cutoff = s.n;
    t->noisy = 0;
    for (size_t k = 0; k < t->reps; k++) {
        if (rnd() % 4 == 0) {
            put_noisy(&s, unit, t->len);
            t->noisy++;
        } else {
            put_unit(&s, unit, t->len, START);
        }
    }
    put_unit(&s, unit, t->len, START);
    if (run(&s, params, t->cutoff, &t->r) != 0)
        return 0;
    t->missed = missed(&s, &t->r, t->cutoff);
    verdict = t->r.wrong_after != 0 ? 0 : t->missed > 2 * t->noisy ? 1 : 2;
    free(t->r.marked);
    stream_free(&s);
    return verdict;
}

/* Trials under @params: how many put a mark inside an iteration, and
 * how many were slow to find the unit again after noise (two noisy
 * iterations in a row can make a longer period that is taken for a
 * while: marks stop, none goes wrong). */
static void trials_run(const umadv_period_params_t *params, int trials, int *wrong, int *slow)
{
    trial_t t;

    *wrong = *slow = 0;
    for (int k = 0; k < trials; k++) {
        int verdict = one_trial(params, &t);

        *wrong += verdict == 0;
        *slow += verdict == 1;
        if (verdict < 2 && *wrong + *slow <= 3)
            diag("trial %d: unit %zu, %zu reps (%zu noisy): %zu marks inside after the cut-off, "
                 "%zu missed", k, t.len, t.reps, t.noisy, t.r.wrong_after, t.missed);
    }
}

static void test_property(void)
{
    umadv_period_params_t params;
    int wrong, slow, trials = 600;

    params_default(&params);
    trials_run(&params, trials, &wrong, &slow);
    ok(wrong == 0 && slow <= trials / 100,
       "%d random units (1-400 launches, 2-2000 kernels), prefixes and noise (ids changed, "
       "dropped, added; short iterations): once the unit repeated, no mark inside an iteration "
       "(%d), at most two iterations missed per noisy one but in %d", trials, wrong, slow);
    params.min_repeats = 3;
    params.min_span = 8;
    trials_run(&params, trials / 3, &wrong, &slow);
    ok(wrong == 0 && slow <= trials / 300, "the same with K = 3 and min_span 8 (%d, %d)", wrong,
       slow);
}

int main(void)
{
    plan(18);
    test_params();
    test_exact();
    test_prefix();
    test_one_launch();
    test_last_batch();
    test_eval();
    test_long_eval();
    test_no_period();
    test_too_long();
    test_long_units();
    test_transformer();
    test_memory();
    test_property();
    return exit_status();
}
