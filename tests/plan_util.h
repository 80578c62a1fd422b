/*
 * Helpers for the planner and simulator tests: a seeded PRNG, a random
 * trace generator, and a schedule checker written independently of the
 * planner (it does not use src/schedule/window.h) that replays a schedule at
 * step granularity and checks what plan.h promises.
 */
#ifndef UMADV_TESTS_PLAN_UTIL_H
#define UMADV_TESTS_PLAN_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "trace/trace.h"

#define TP_KIB 1024u

/* xorshift64*: small, seeded, the same on every machine. */
static inline uint64_t tp_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

static inline uint32_t tp_below(uint64_t *state, uint32_t n)
{
    return n ? (uint32_t)((tp_rand(state) >> 33) % n) : 0;
}

typedef struct tp_params {
    uint32_t nallocs;      /* persistent allocations */
    uint32_t ntransient;   /* transient allocations per iteration */
    uint32_t nsteps;       /* steps per iteration */
    uint32_t niters;
    uint32_t max_sections; /* per allocation */
    int      uniform;      /* sizes whole multiples of the section size */
    int      carried;      /* allocations born in one iteration, freed in the next */
    int      late_free;    /* transients may be freed after their last touch */
} tp_params_t;

#define TP_SECTION (64 * TP_KIB)

static inline uint64_t tp_alloc_size(uint64_t *rng, const tp_params_t *p)
{
    uint64_t size = (uint64_t)(1 + tp_below(rng, p->max_sections)) * TP_SECTION;

    if (!p->uniform && tp_below(rng, 2))
        size -= 1 + tp_below(rng, TP_SECTION - 1);
    return size;
}

static inline void tp_touch(umadv_trace_t *t, uint64_t *rng, uint32_t a, uint32_t mode)
{
    uint32_t ns = (uint32_t)((t->allocs[a].size + t->section_size - 1) / t->section_size);
    uint32_t first = tp_below(rng, ns);
    uint32_t count = 1 + tp_below(rng, ns - first);

    umadv__trace_add_access_sections(t, a, first, count, mode, 0);
}

/* Per-step plan of one iteration, replayed every iteration. */
typedef struct tp_step_plan {
    uint32_t alloc[3];
    uint32_t mode[3];
    uint32_t first[3], count[3];
    uint32_t n;
} tp_step_plan_t;

typedef struct tp_transient {
    uint32_t birth, death;
    uint64_t size;
    uint32_t touches[4];
    uint32_t ntouches;
} tp_transient_t;

/* The generator's choices, made once and replayed every iteration. */
typedef struct tp_gen {
    const tp_params_t *p;
    uint64_t        rng;
    tp_step_plan_t *plan;     /* per step */
    tp_transient_t *tr;       /* per transient */
    uint32_t       *dur;      /* per step, ns */
} tp_gen_t;

/* Persistent allocations (a quarter never written) and each step's use. */
static inline void tp_gen_steps(tp_gen_t *g, umadv_trace_t *t)
{
    const tp_params_t *p = g->p;
    uint32_t id, readonly = 0;

    for (uint32_t a = 0; a < p->nallocs; a++) {
        umadv__trace_add_alloc(t, 0, tp_alloc_size(&g->rng, p), UMADV_ALLOC_WEIGHT, NULL, &id);
        if (tp_below(&g->rng, 4) == 0 && a < 32)
            readonly |= 1u << a;
    }
    for (uint32_t j = 0; j < p->nsteps; j++) {
        tp_step_plan_t *sp = &g->plan[j];
        sp->n = p->nallocs ? 1 + tp_below(&g->rng, 3) : 0;
        for (uint32_t k = 0; k < sp->n; k++) {
            uint32_t a = tp_below(&g->rng, p->nallocs);
            uint32_t ns = (uint32_t)((t->allocs[a].size + TP_SECTION - 1) / TP_SECTION);
            sp->alloc[k] = a;
            sp->mode[k] = (a < 32 && (readonly >> a & 1)) ? UMADV_ACCESS_READ
                                                          : 1 + tp_below(&g->rng, 3);
            sp->first[k] = tp_below(&g->rng, ns);
            sp->count[k] = 1 + tp_below(&g->rng, ns - sp->first[k]);
        }
        g->dur[j] = 50000 + tp_below(&g->rng, 450000);
    }
}

/* Transients: born at a step, touched there and at up to 3 later steps,
 * freed at the last touch (or later, with late_free). */
static inline void tp_gen_transients(tp_gen_t *g)
{
    const tp_params_t *p = g->p;

    for (uint32_t i = 0; i < p->ntransient; i++) {
        tp_transient_t *x = &g->tr[i];
        uint32_t span = 1 + tp_below(&g->rng, p->nsteps);
        x->birth = tp_below(&g->rng, p->nsteps);
        x->death = x->birth + tp_below(&g->rng, span);
        if (x->death >= p->nsteps)
            x->death = p->nsteps - 1;
        x->size = tp_alloc_size(&g->rng, p);
        x->touches[x->ntouches++] = x->birth;
        for (uint32_t k = 0; k < 3; k++) {
            uint32_t s = x->birth + tp_below(&g->rng, x->death - x->birth + 1);
            if (s > x->touches[x->ntouches - 1])
                x->touches[x->ntouches++] = s;
        }
        if (!p->late_free)
            x->death = x->touches[x->ntouches - 1];
    }
}

/* One iteration: new transients, and with carried, an allocation written
 * at its last step and read (then freed) at the next iteration's second. */
static inline uint32_t tp_gen_iteration(tp_gen_t *g, umadv_trace_t *t, uint32_t it,
                                        uint32_t carried_prev)
{
    const tp_params_t *p = g->p;
    uint32_t base = it * p->nsteps, t0 = t->nallocs, carried = UINT32_MAX, id;

    for (uint32_t i = 0; i < p->ntransient; i++) {
        umadv__trace_add_alloc(t, 0, g->tr[i].size, UMADV_ALLOC_ACTIVATION, NULL, &id);
        umadv__trace_set_lifetime(t, id, base + g->tr[i].birth, base + g->tr[i].death);
    }
    if (p->carried && p->nsteps >= 2) {
        umadv__trace_add_alloc(t, 0, 2 * TP_SECTION, UMADV_ALLOC_OTHER, NULL, &carried);
        umadv__trace_set_lifetime(t, carried, base + p->nsteps - 1,
                                  it + 1 < p->niters ? base + p->nsteps + 1 : UMADV_STEP_NONE);
    }
    for (uint32_t j = 0; j < p->nsteps; j++) {
        const tp_step_plan_t *sp = &g->plan[j];
        umadv__trace_add_step(t, NULL, UMADV_STEP_LAYER, it, g->dur[j], NULL);
        for (uint32_t k = 0; k < sp->n; k++)
            umadv__trace_add_access_sections(t, sp->alloc[k], sp->first[k], sp->count[k],
                                             sp->mode[k], 0);
        for (uint32_t i = 0; i < p->ntransient; i++) {
            for (uint32_t k = 0; k < g->tr[i].ntouches; k++) {
                if (g->tr[i].touches[k] == j)
                    tp_touch(t, &g->rng, t0 + i, k == 0 ? UMADV_ACCESS_WRITE : UMADV_ACCESS_RW);
            }
        }
        if (carried != UINT32_MAX && j == p->nsteps - 1)
            umadv__trace_add_access_sections(t, carried, 0, 2, UMADV_ACCESS_WRITE, 0);
        if (carried_prev != UINT32_MAX && j <= 1)
            umadv__trace_add_access_sections(t, carried_prev, 0, 2, UMADV_ACCESS_READ, 0);
    }
    return carried;
}

/*
 * A random periodic trace: the same access pattern every iteration over
 * persistent allocations (some never written), fresh transients per
 * iteration, and optionally data carried from one iteration to the next.
 */
static inline umadv_status_t tp_random_trace(uint64_t seed, const tp_params_t *p,
                                             umadv_trace_t *t)
{
    tp_gen_t g = {.p = p, .rng = seed * 0x9e3779b97f4a7c15u + 1};
    uint32_t carried = UINT32_MAX;
    umadv_status_t status = UMADV_ERR_NO_MEMORY;

    g.plan = calloc(p->nsteps, sizeof(*g.plan));
    g.tr = calloc(p->ntransient ? p->ntransient : 1, sizeof(*g.tr));
    g.dur = calloc(p->nsteps, sizeof(*g.dur));
    if (g.plan != NULL && g.tr != NULL && g.dur != NULL) {
        umadv__trace_init(t, TP_SECTION);
        tp_gen_steps(&g, t);
        tp_gen_transients(&g);
        for (uint32_t it = 0; it < p->niters; it++)
            carried = tp_gen_iteration(&g, t, it, carried);
        status = umadv__trace_finalize(t, NULL, 0);
    }
    free(g.plan);
    free(g.tr);
    free(g.dur);
    return status;
}

/* ------------------------------------------------------------ checker */

typedef struct tp_check {
    char     why[256];
    uint64_t peak;        /* largest occupancy seen */
    uint64_t remote;      /* bytes touched over the link in one replay */
} tp_check_t;

static inline int tp_fail(tp_check_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tp_fail(tp_check_t *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
    return 0;
}

static inline int tp_in(uint32_t step, uint32_t first, uint32_t n)
{
    return step != UMADV_STEP_NONE && step >= first && step - first < n;
}

static inline int tp_written(const umadv_trace_t *t, uint32_t a)
{
    for (uint32_t i = 0; i < t->naccesses; i++) {
        if (t->accesses[i].alloc == a && (t->accesses[i].mode & UMADV_ACCESS_WRITE))
            return 1;
    }
    return 0;
}

static inline int tp_advice_ok(const umadv_op_t *op)
{
    return op->advice == UMADV_ADVICE_PREFERRED_HOST || op->advice == UMADV_ADVICE_ACCESSED_BY ||
           op->advice == UMADV_ADVICE_NONE;
}

/* Setup advice: read-mostly per whole allocation, or a host pair. */
static inline int tp_check_setup(const umadv_trace_t *t, const umadv_schedule_t *s, tp_check_t *c)
{
    for (size_t i = 0; i < s->nsetup; i++) {
        const umadv_op_t *op = &s->setup[i];
        if (op->kind != UMADV_OP_ADVISE || op->alloc >= t->nallocs || op->count == 0 ||
            op->first + op->count > t->allocs[op->alloc].nsections ||
            op->bytes != umadv__trace_run_bytes(t, op->alloc, op->first, op->count))
            return tp_fail(c, "setup op %zu malformed", i);
        if (op->advice == UMADV_ADVICE_READ_MOSTLY ? tp_written(t, op->alloc)
                                                   : op->advice != UMADV_ADVICE_PREFERRED_HOST &&
                                                     op->advice != UMADV_ADVICE_ACCESSED_BY)
            return tp_fail(c, "setup op %zu: advice %d", i, (int)op->advice);
    }
    return 1;
}

static inline int tp_check_ops(const umadv_trace_t *t, const umadv_schedule_t *s,
                               int read_mostly, tp_check_t *c)
{
    if (!tp_check_setup(t, s, c))
        return 0;
    for (size_t i = 0; i < s->nops; i++) {
        const umadv_op_t *op = &s->ops[i];
        const umadv_trace_alloc_t *a;

        if (op->alloc >= t->nallocs || op->count == 0 ||
            op->first + op->count > t->allocs[op->alloc].nsections ||
            op->issue_step >= s->nsteps || op->need_step >= s->nsteps)
            return tp_fail(c, "op %zu out of bounds", i);
        a = &t->allocs[op->alloc];
        if (op->bytes != umadv__trace_run_bytes(t, op->alloc, op->first, op->count))
            return tp_fail(c, "op %zu: bytes do not match its run", i);
        if (i > 0 && op->issue_step < s->ops[i - 1].issue_step)
            return tp_fail(c, "ops not sorted by issue step at %zu", i);
        if (i < s->step_ops[op->issue_step] || i >= s->step_ops[op->issue_step + 1])
            return tp_fail(c, "op %zu outside step_ops[%u]", i, op->issue_step);
        if (op->kind == UMADV_OP_FETCH &&
            !!(op->flags & UMADV_OP_FLAG_NEXT_ITERATION) != (op->need_step < op->issue_step))
            return tp_fail(c, "fetch op %zu: need %u issue %u and flags %u disagree", i,
                           op->need_step, op->issue_step, op->flags);
        if (op->kind == UMADV_OP_DROP &&
            a->free_step != s->first_step + op->issue_step &&
            !(read_mostly && !tp_written(t, op->alloc)))
            return tp_fail(c, "op %zu drops live, written data of allocation %u", i, op->alloc);
        if (op->kind == UMADV_OP_ADVISE && (!tp_advice_ok(op) || op->need_step != op->issue_step))
            return tp_fail(c, "advise op %zu: advice %d, issue %u, need %u", i, (int)op->advice,
                           op->issue_step, op->need_step);
        if (op->kind != UMADV_OP_FETCH && op->kind != UMADV_OP_EVICT &&
            op->kind != UMADV_OP_DROP && op->kind != UMADV_OP_ADVISE)
            return tp_fail(c, "op %zu has kind %d", i, (int)op->kind);
    }
    if (s->step_ops[0] != 0 || s->step_ops[s->nsteps] != s->nops)
        return tp_fail(c, "step_ops does not cover the ops");
    return 1;
}

/* Advice bits of a section in the replay. */
#define TP_HOST 1u  /* PREFERRED_HOST */
#define TP_MAP  2u  /* ACCESSED_BY */

typedef struct tp_replay {
    const umadv_trace_t    *t;
    const umadv_schedule_t *s;
    uint8_t *res, *populated;
    uint8_t *advice, *advice0;  /* now, and as setup leaves it */
    uint64_t budget;
} tp_replay_t;

/* Set or clear advice on each section of an ADVISE op; a set finds the
 * bit clear and the section off the GPU, a NONE finds both bits set:
 * sets and reverts come in pairs. */
static inline int tp_advise(tp_replay_t *r, const umadv_op_t *op, uint32_t j, tp_check_t *c)
{
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t x = umadv__trace_section_id(r->t, op->alloc, op->first + i);
        uint8_t bit = op->advice == UMADV_ADVICE_PREFERRED_HOST ? TP_HOST
                      : op->advice == UMADV_ADVICE_ACCESSED_BY  ? TP_MAP : 0;

        if (bit != 0 && ((r->advice[x] & bit) || r->res[x]))
            return tp_fail(c, "step %u advises section %u twice, or while resident", j, x);
        if (bit == 0 && r->advice[x] != (TP_HOST | TP_MAP))
            return tp_fail(c, "step %u reverts section %u, not advised to the host", j, x);
        r->advice[x] = bit ? (uint8_t)(r->advice[x] | bit) : 0;
    }
    return 1;
}

static inline int tp_advise_step(tp_replay_t *r, uint32_t j, int sets, tp_check_t *c)
{
    for (uint32_t i = r->s->step_ops[j]; i < r->s->step_ops[j + 1]; i++) {
        const umadv_op_t *op = &r->s->ops[i];
        if (op->kind == UMADV_OP_ADVISE && (op->advice != UMADV_ADVICE_NONE) == sets &&
            !tp_advise(r, op, j, c))
            return 0;
    }
    return 1;
}

static inline int tp_alive_for_fetch(const tp_replay_t *r, uint32_t a, uint32_t j, int next_iter)
{
    const umadv_trace_alloc_t *al = &r->t->allocs[a];
    uint32_t g = r->s->first_step + j;
    int born_in = tp_in(al->alloc_step, r->s->first_step, r->s->nsteps);
    int freed_in = tp_in(al->free_step, r->s->first_step, r->s->nsteps);

    /* allocated inside the window and never freed: in steady state it
     * exists at all times (lazily created state) */
    if (born_in && al->free_step == UMADV_STEP_NONE)
        born_in = 0;
    if (next_iter)
        return !born_in && !freed_in;
    return (!born_in || al->alloc_step <= g) && (!freed_in || g <= al->free_step);
}

static inline int tp_fetch(tp_replay_t *r, const umadv_op_t *op, uint32_t j, tp_check_t *c)
{
    int next = !!(op->flags & UMADV_OP_FLAG_NEXT_ITERATION);

    if (!tp_alive_for_fetch(r, op->alloc, j, next))
        return tp_fail(c, "fetch of allocation %u at step %u outside its life", op->alloc, j);
    for (uint32_t i = 0; i < op->count; i++) {
        uint32_t x = umadv__trace_section_id(r->t, op->alloc, op->first + i);
        if (r->res[x])
            return tp_fail(c, "step %u fetches section %u, already resident", j, x);
        if (r->advice[x])
            return tp_fail(c, "step %u fetches section %u, still advised to the host", j, x);
        if (!!(op->flags & UMADV_OP_FLAG_FRESH) == !!r->populated[x])
            return tp_fail(c, "step %u: fetch of section %u has the wrong FRESH flag", j, x);
        r->res[x] = 1;
        r->populated[x] = 1;
    }
    return 1;
}

static inline void tp_lifetime_starts(tp_replay_t *r, uint32_t j, int *bad, uint32_t *bad_x)
{
    const umadv_trace_t *t = r->t;

    for (uint32_t a = 0; a < t->nallocs; a++) {
        if (t->allocs[a].alloc_step != r->s->first_step + j ||
            !tp_in(t->allocs[a].free_step, 0, UINT32_MAX))
            continue;
        for (uint32_t x = t->allocs[a].first_section;
             x < t->allocs[a].first_section + t->allocs[a].nsections; x++) {
            if (r->res[x]) {
                *bad = 1;
                *bad_x = x;
            }
            r->populated[x] = 0;
        }
    }
}

/* A step's evictions and drops, then its frees. */
static inline int tp_end_step(tp_replay_t *r, uint32_t j, tp_check_t *c)
{
    const umadv_trace_t *t = r->t;
    const umadv_schedule_t *s = r->s;

    if (!tp_advise_step(r, j, 0, c))
        return 0;
    for (uint32_t i = s->step_ops[j]; i < s->step_ops[j + 1]; i++) {
        const umadv_op_t *op = &s->ops[i];
        if (op->kind == UMADV_OP_FETCH || op->kind == UMADV_OP_ADVISE)
            continue;
        for (uint32_t k = 0; k < op->count; k++) {
            uint32_t x = umadv__trace_section_id(t, op->alloc, op->first + k);
            if (!r->res[x])
                return tp_fail(c, "step %u removes section %u, not resident", j, x);
            r->res[x] = 0;
        }
    }
    for (uint32_t a = 0; a < t->nallocs; a++) {
        if (t->allocs[a].free_step != s->first_step + j)
            continue;
        for (uint32_t x = t->allocs[a].first_section;
             x < t->allocs[a].first_section + t->allocs[a].nsections; x++) {
            if (r->res[x])
                return tp_fail(c, "section %u resident after its allocation's free", x);
            if (r->advice[x])
                return tp_fail(c, "section %u still advised after its allocation's free", x);
        }
    }
    return 1;
}

static inline int tp_run_step(tp_replay_t *r, uint32_t j, tp_check_t *c)
{
    const umadv_trace_t *t = r->t;
    const umadv_schedule_t *s = r->s;
    const umadv_trace_step_t *st = &t->steps[s->first_step + j];
    uint64_t occ = 0;
    int bad = 0;
    uint32_t bad_x = 0;

    tp_lifetime_starts(r, j, &bad, &bad_x);
    if (bad)
        return tp_fail(c, "section %u of a new instance resident at its birth", bad_x);
    if (!tp_advise_step(r, j, 1, c))
        return 0;
    for (uint32_t i = s->step_ops[j]; i < s->step_ops[j + 1]; i++) {
        if (s->ops[i].kind == UMADV_OP_FETCH && !tp_fetch(r, &s->ops[i], j, c))
            return 0;
    }
    for (uint32_t x = 0; x < t->nsections; x++)
        occ += r->res[x] ? t->sections[x].size : 0;
    if (occ > r->budget)
        return tp_fail(c, "step %u plans %llu bytes, budget %llu", j, (unsigned long long)occ,
                       (unsigned long long)r->budget);
    c->peak = occ > c->peak ? occ : c->peak;
    for (uint32_t i = 0; i < st->naccesses; i++) {
        const umadv_trace_access_t *acc = &t->accesses[st->first_access + i];
        for (uint32_t k = 0; k < acc->count; k++) {
            uint32_t x = umadv__trace_section_id(t, acc->alloc, acc->first + k);
            if (!r->res[x] && r->advice[x] != (TP_HOST | TP_MAP))
                return tp_fail(c, "step %u touches section %u, neither resident nor "
                               "advised to the host", j, x);
            if (r->res[x] && r->advice[x])
                return tp_fail(c, "step %u: section %u resident and advised to the host", j, x);
            if (!r->res[x])
                c->remote += t->sections[x].size;
            r->populated[x] = 1;
        }
    }
    return tp_end_step(r, j, c);
}

/*
 * Replay @s three times from its resident_at_start and setup advice, at
 * step granularity (a fetch occupies memory from its issue step, an
 * eviction frees it from the next step), and check: the budget at every
 * step; every touched section resident, or off the GPU with both host
 * advices set (a remote access, counted in c->remote per replay);
 * fetches only of absent sections with no host advice, inside their
 * allocation's life, FRESH exactly for never-populated memory; removals
 * only of resident sections; drops only of freed or never-written data;
 * advice set only when clear and off the GPU, reverted only when set
 * (paired); nothing left of a freed allocation, advice included; the
 * same resident set and advice at every wrap (periodic). On failure
 * returns 0 with c->why set.
 */
static inline int tp_check_schedule(const umadv_trace_t *t, const umadv_schedule_t *s,
                                    uint64_t budget, int read_mostly, tp_check_t *c)
{
    tp_replay_t r = {.t = t, .s = s, .budget = budget ? budget : UINT64_MAX};
    int ok = 1;

    memset(c, 0, sizeof(*c));
    if (!tp_check_ops(t, s, read_mostly, c))
        return 0;
    r.res = malloc(t->nsections + 1);
    r.populated = malloc(t->nsections + 1);
    r.advice = calloc(t->nsections + 1, 1);
    r.advice0 = malloc(t->nsections + 1);
    if (r.res == NULL || r.populated == NULL || r.advice == NULL || r.advice0 == NULL) {
        ok = tp_fail(c, "out of memory");
        goto out;
    }
    memcpy(r.res, s->resident_at_start, t->nsections);
    memset(r.populated, 1, t->nsections);
    for (size_t i = 0; i < s->nsetup && ok; i++) {
        if (s->setup[i].advice != UMADV_ADVICE_READ_MOSTLY)
            ok = tp_advise(&r, &s->setup[i], 0, c);
    }
    memcpy(r.advice0, r.advice, t->nsections);
    for (uint32_t rep = 0; rep < 3 && ok; rep++) {
        c->remote = 0;
        for (uint32_t j = 0; j < s->nsteps && ok; j++)
            ok = tp_run_step(&r, j, c);
        if (ok && memcmp(r.res, s->resident_at_start, t->nsections) != 0)
            ok = tp_fail(c, "replay %u ends with another resident set than it began", rep);
        if (ok && memcmp(r.advice, r.advice0, t->nsections) != 0)
            ok = tp_fail(c, "replay %u ends with other advice than it began", rep);
    }
out:
    free(r.res);
    free(r.populated);
    free(r.advice);
    free(r.advice0);
    return ok;
}

#endif
