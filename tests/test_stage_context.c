/*
 * Staging through the public API on the host backend: umadv_set_stageable
 * (its errors; off restores), a profiled and planned application whose
 * CPU reads and writes its blocks inside the steps that declare them,
 * under every policy, with the budget and the policy changed mid-way and
 * blocks reallocated each iteration; the bytes, the counters in
 * umadv_get_stats, UMADV_STAGE=0, and the PyTorch entry points marking
 * their blocks stageable.
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "exec/exec_int.h"
#include "interpose/torch.h"
#include "order_check.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)
#define NBLOCKS 6
#define BLOCK   (4 * SECTION)
#define NSTEPS  NBLOCKS
#define ACT     (2 * SECTION)

typedef struct app {
    umadv_context_t ctx;
    unsigned char  *block[NBLOCKS], *shadow[NBLOCKS];
    unsigned char  *act; /* made every iteration, written then read */
    int             wrong;
    unsigned        seed;
} app_t;

/* The log's calls as a GPU would run them (order_check.h): no copy,
 * population, discard or memset of a thread unordered with an earlier
 * one of the same thread on the same bytes. */
static void order_ok(const umadv_cuda_host_record_t *log, size_t n, const char *what)
{
    char why[256];
    long hazards = order_hazards(log, n, why, sizeof(why));

    ok(hazards == 0, "%s: every call of a lane on the same bytes as an earlier one ordered "
       "after it by a stream, an event or a synchronisation (%zu calls%s%s)", what, n,
       hazards != 0 ? "; " : "", hazards > 0 ? why : hazards < 0 ? "too many streams" : "");
}

/* ---- the API's errors --------------------------------------------------- */

static void test_errors(void)
{
    umadv_context_t ctx = test_host_context(SECTION, 0);
    void *p = NULL;
    int word;

    umadv_malloc(ctx, BLOCK, "b", &p);
    log_take();
    is(umadv_set_stageable(NULL, p, 1), UMADV_ERR_INVALID_PARAM, "NULL context");
    is(umadv_set_stageable(ctx, NULL, 1), UMADV_ERR_INVALID_PARAM, "NULL pointer");
    is(umadv_set_stageable(ctx, &word, 1), UMADV_ERR_NOT_FOUND, "memory umadv did not make");
    is(umadv_set_stageable(ctx, (char *)p + 8, 1), UMADV_ERR_NOT_FOUND, "a block's interior");
    ok(strstr(log_take(), "umadv_set_stageable") != NULL, "logged with the call's name");
    is(umadv_set_stageable(ctx, p, 1), UMADV_OK, "a block from umadv_malloc");
    is(umadv_set_stageable(ctx, p, 0), UMADV_OK, "and back off, with no replay running");
    umadv_free(ctx, p);
    umadv_context_destroy(ctx);
}

/* ---- an application --------------------------------------------------------- */

static void check_range(app_t *a, int b, size_t off, size_t len)
{
    if (memcmp(a->block[b] + off, a->shadow[b] + off, len) != 0)
        a->wrong = 1;
}

static void write_range(app_t *a, int b, size_t off, size_t len)
{
    for (size_t i = off; i < off + len; i += 61)
        a->block[b][i] = a->shadow[b][i] = (unsigned char)(a->seed++ * 29 + i);
}

/* The step that reads the activation, and whether it may be staged. */
static int act_reader = NSTEPS - 1, act_stageable = 1;

/* Step j reads block j and the next one's first half, writes the next
 * one's second half; the activation is written by the first step and
 * read by act_reader's. */
static void step(app_t *a, int j)
{
    int r = j, w = (j + 1) % NBLOCKS;

    umadv_step_begin(a->ctx, NULL, NULL);
    umadv_step_access(a->ctx, a->block[r], BLOCK, UMADV_ACCESS_READ);
    umadv_step_access(a->ctx, a->block[w], BLOCK, UMADV_ACCESS_RW);
    if (j == 0 || j == act_reader)
        umadv_step_access(a->ctx, a->act, ACT, j == 0 ? UMADV_ACCESS_WRITE : UMADV_ACCESS_READ);
    check_range(a, r, 0, BLOCK);
    check_range(a, w, 0, BLOCK);
    write_range(a, w, BLOCK / 2, BLOCK / 2);
    if (j == 0) {
        memset(a->act, (int)(a->seed & 0xff), ACT);
    } else if (j == act_reader) {
        for (size_t i = 0; i < ACT; i++)
            a->wrong |= a->act[i] != a->act[0];
    }
    umadv_step_end(a->ctx, 1000000);
}

static void iteration(app_t *a)
{
    umadv_iteration_begin(a->ctx);
    umadv_malloc(a->ctx, ACT, "act", (void **)&a->act);
    umadv_set_stageable(a->ctx, a->act, act_stageable);
    for (int j = 0; j < NSTEPS; j++)
        step(a, j);
    umadv_free(a->ctx, a->act);
    a->act = NULL;
}

static int app_init(app_t *a, uint64_t budget)
{
    memset(a, 0, sizeof(*a));
    a->ctx = test_host_context(SECTION, budget);
    if (a->ctx == NULL)
        return -1;
    for (int b = 0; b < NBLOCKS; b++) {
        if (umadv_malloc(a->ctx, BLOCK, "block", (void **)&a->block[b]) != UMADV_OK ||
            (a->shadow[b] = calloc(1, BLOCK)) == NULL)
            return -1;
        memset(a->block[b], 0, BLOCK); /* the pool may hand out used memory */
        write_range(a, b, 0, BLOCK);
        /* every block but the last is stageable */
        if (b < NBLOCKS - 1)
            umadv_set_stageable(a->ctx, a->block[b], 1);
    }
    return 0;
}

/* The CPU reads every block: staging off first. */
static int app_all_intact(app_t *a)
{
    int intact = !a->wrong;

    for (int b = 0; b < NBLOCKS; b++) {
        umadv_set_stageable(a->ctx, a->block[b], 0);
        intact &= memcmp(a->block[b], a->shadow[b], BLOCK) == 0;
        umadv_set_stageable(a->ctx, a->block[b], b < NBLOCKS - 1);
    }
    return intact;
}

static void app_end(app_t *a)
{
    for (int b = 0; b < NBLOCKS; b++) {
        umadv_free(a->ctx, a->block[b]);
        free(a->shadow[b]);
    }
    umadv_context_destroy(a->ctx);
}

/* Profiled, timed, planned, and @iters iterations in all (two before the
 * plan). */
static void app_planned(app_t *a, int iters)
{
    umadv_profile_next_iteration(a->ctx);
    for (int it = 0; it < iters; it++) {
        iteration(a);
        if (it == 1)
            umadv_plan(a->ctx);
    }
}

static void stats(app_t *a, umadv_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    s->size = sizeof(*s);
    umadv_get_stats(a->ctx, s);
}

static void test_policies(void)
{
    static const umadv_policy_t policies[] = {UMADV_POLICY_PLAN, UMADV_POLICY_DEMAND,
                                              UMADV_POLICY_PREFETCH_ALL, UMADV_POLICY_PLAN};
    umadv_cuda_host_counters_t before, after;
    umadv_stats_t s;
    app_t a;

    umadv__cuda_host_counters(&before);
    if (!ok(app_init(&a, 3 * BLOCK) == 0, "six blocks of four sections, a three-block budget"))
        return;
    umadv_profile_next_iteration(a.ctx);
    iteration(&a);
    iteration(&a); /* the timing pass */
    is(umadv_plan(a.ctx), UMADV_OK, "planned");
    for (size_t p = 0; p < UMADV_ARRAY_SIZE(policies); p++) {
        umadv_set_policy(a.ctx, policies[p]);
        for (int it = 0; it < 3; it++)
            iteration(&a);
        ok(app_all_intact(&a), "%s: every byte the steps and the CPU read was the last written",
           umadv_policy_name(policies[p]));
    }
    /* a budget change in the middle of an iteration ends the replay there */
    umadv_iteration_begin(a.ctx);
    umadv_malloc(a.ctx, ACT, "act", (void **)&a.act);
    for (int j = 0; j < NSTEPS / 2; j++)
        step(&a, j);
    umadv_set_budget(a.ctx, 4 * BLOCK);
    for (int j = NSTEPS / 2; j < NSTEPS; j++)
        step(&a, j);
    umadv_free(a.ctx, a.act);
    a.act = NULL;
    log_take();
    umadv__log_level = UMADV_LOG_DEBUG;
    iteration(&a); /* the new budget: the replay stops at its begin */
    umadv__log_level = UMADV_LOG_WARN;
    ok(strstr(log_take(), "restored at once, in") != NULL,
       "the replay that stops restores the staged data in one batch");
    ok(app_all_intact(&a), "a budget change mid-iteration loses nothing");
    stats(&a, &s);
    ok(s.staged_bytes > 0 && s.restored_bytes > 0,
       "umadv_get_stats counts staged (%llu) and restored (%llu) bytes",
       (unsigned long long)s.staged_bytes, (unsigned long long)s.restored_bytes);
    app_end(&a);
    umadv__cuda_host_counters(&after);
    ok(after.pinned_allocs - before.pinned_allocs == 1 && after.pinned_bytes == before.pinned_bytes,
       "one staging pool pinned for every replay of the context (%llu pinned), freed with it",
       (unsigned long long)(after.pinned_allocs - before.pinned_allocs));
    ok(after.device_allocs > before.device_allocs &&
       after.device_frees - before.device_frees == after.device_allocs - before.device_allocs &&
       after.device_bytes == before.device_bytes,
       "the lanes' bounce buffers: %llu made, each freed with its executor",
       (unsigned long long)(after.device_allocs - before.device_allocs));
}

/* In a steady plan replay, a staged range moves in one copy each way
 * (two calls: through the lane's bounce buffer and over the link): its
 * sections got consecutive slots although restores in another order
 * freed them. Most ranges: the plan the planner keeps here (its in-time
 * victim rule, 7.6 ms simulated against 9.1) fills the pool, and as the
 * host backend's lanes happen to run, a range may find no free run and
 * take two (60 to 66 ranges, up to 10 of them split, in ten runs). */
static void test_consecutive_slots(void)
{
    umadv_cuda_host_counters_t before, after;
    uint64_t copies, ranges;
    app_t a;

    if (!ok(app_init(&a, 3 * BLOCK) == 0, "a context for the staging pool's slots"))
        return;
    app_planned(&a, 4);
    umadv__cuda_host_counters(&before);
    for (int it = 0; it < 6; it++)
        iteration(&a);
    umadv__cuda_host_counters(&after);
    copies = after.memcpys - before.memcpys;
    ranges = after.discards - before.discards + after.discard_prefetches -
             before.discard_prefetches;
    ok(ranges > 0 && copies >= 2 * ranges && copies <= 2 * ranges + ranges / 2,
       "six steady iterations: %llu copy calls for %llu staged ranges out and in (two each, "
       "a run split for at most one in four)",
       (unsigned long long)copies, (unsigned long long)ranges);
    app_end(&a);
}

/* The activation read by the second step, then dead until the next
 * iteration writes it afresh: its eviction copies nothing (umadv(7),
 * DEAD DATA), and every byte read is still the last written. */
/* Released bytes and discards over four steady plan iterations; 0 when
 * something read differs from what was written last. */
static uint64_t dead_run(uint64_t *discards_p)
{
    umadv_cuda_host_counters_t before, after;
    umadv_stats_t s;
    app_t a;

    if (app_init(&a, 3 * BLOCK) != 0)
        return 0;
    app_planned(&a, 3);
    umadv__cuda_host_counters(&before);
    for (int it = 0; it < 4; it++)
        iteration(&a);
    umadv__cuda_host_counters(&after);
    stats(&a, &s);
    *discards_p = after.discards - before.discards;
    if (!app_all_intact(&a))
        s.released_bytes = UINT64_MAX;
    app_end(&a);
    return s.released_bytes;
}

static void test_dead(void)
{
    uint64_t released, discards;

    act_reader = 1;
    released = dead_run(&discards);
    ok(released > 0 && released != UINT64_MAX && discards > 0,
       "released without a copy (%llu bytes, %llu discards), every byte read the last written",
       (unsigned long long)released, (unsigned long long)discards);
    act_stageable = 0; /* as DDP's guard leaves a gradient bucket */
    released = dead_run(&discards);
    ok(released == 0, "an activation that may not be staged is never released (%llu bytes)",
       (unsigned long long)released);
    act_stageable = 1;
    act_reader = NSTEPS - 1;
}

/* A smaller budget needs a larger pool: only what it lacks is pinned, as
 * a chunk of its own, and the slots of the old chunk and the new serve
 * together (a run of slots never crosses from one to the other). */
static void test_pool_grows(void)
{
    umadv_cuda_host_counters_t c0, c1;
    app_t a;

    if (!ok(app_init(&a, 4 * BLOCK) == 0, "a pool that grows: a context"))
        return;
    app_planned(&a, 4);
    umadv__cuda_host_counters(&c0);
    umadv_set_budget(a.ctx, 3 * BLOCK);
    for (int it = 0; it < 4; it++)
        iteration(&a);
    umadv__cuda_host_counters(&c1);
    ok(c1.pinned_allocs - c0.pinned_allocs == 1 && c1.pinned_frees == c0.pinned_frees &&
       c1.pinned_bytes - c0.pinned_bytes == BLOCK && c1.pinned_beside == c0.pinned_beside,
       "a block's less budget: one more chunk of a block's bytes pinned on the lane, "
       "at the pace it waits for, none freed (%llu pinned, %llu freed, %llu bytes)",
       (unsigned long long)(c1.pinned_allocs - c0.pinned_allocs),
       (unsigned long long)(c1.pinned_frees - c0.pinned_frees),
       (unsigned long long)(c1.pinned_bytes - c0.pinned_bytes));
    ok(app_all_intact(&a), "every byte read across both chunks was the last written");
    app_end(&a);
}

/* A host that cannot spare the pool: a smaller pool, as much as it can
 * spare, or none, and the evictions past it migrate; every byte intact
 * (cuda_ops.h, host_alloc; exec/stage.c, pin_spare). */
static void test_pool_host_spare(void)
{
    static const uint64_t spare[] = {SECTION, SECTION - 1, 3 * SECTION};

    for (size_t v = 0; v < UMADV_ARRAY_SIZE(spare); v++) {
        umadv_cuda_host_counters_t c0, c1;
        const char *said;
        app_t a;

        if (!ok(app_init(&a, 3 * BLOCK) == 0, "a host that spares %llu bytes: a context",
                (unsigned long long)spare[v]))
            return;
        umadv__cuda_host_counters(&c0);
        umadv__cuda_host_configure_host(c0.pinned_bytes + spare[v]);
        log_take();
        app_planned(&a, 3);
        for (int it = 0; it < 4; it++)
            iteration(&a);
        said = log_take();
        umadv__cuda_host_counters(&c1);
        umadv__cuda_host_configure_host(UINT64_MAX);
        if (v == 0)
            ok(c1.pinned_bytes - c0.pinned_bytes == SECTION &&
                   strstr(said, "the host cannot spare more pinned memory") != NULL,
               "a slot's worth spare: a pool of one slot (%llu bytes), said so",
               (unsigned long long)(c1.pinned_bytes - c0.pinned_bytes));
        else if (v == 1)
            ok(c1.pinned_bytes == c0.pinned_bytes &&
                   strstr(said, "the host cannot spare it") != NULL,
               "less than a slot spare: no pool, said so");
        else
            ok(c1.pinned_bytes - c0.pinned_bytes >= 2 * SECTION &&
                   c1.pinned_bytes - c0.pinned_bytes <= 3 * SECTION,
               "three slots' worth spare: at least three quarters of it pinned (%llu bytes)",
               (unsigned long long)(c1.pinned_bytes - c0.pinned_bytes));
        ok(app_all_intact(&a), "every byte read was the last written, the evictions past the "
           "pool migrated");
        app_end(&a);
    }
}

/* A pool pinned ahead of the executor that takes it
 * (umadv__exec_stage_pin_ahead): only what the cache lacks, on a thread of
 * its own, joined by the settling; nothing where the cache holds enough,
 * pins already or has no room for a chunk; a refusal leaves the cache as
 * it was; freeing the cache waits for a pinning under way. */
static void test_pool_pinned_ahead(void)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_host;
    umadv_stage_cache_t cache = {0}, full = {0};
    umadv_cuda_host_counters_t c0, c1;

    umadv__cuda_host_counters(&c0);
    ok(umadv__exec_stage_pin_ahead(ops, 0, NULL, &cache, SECTION, 3 * SECTION + 5) == UMADV_OK &&
           cache.ahead != NULL && cache.n == 0,
       "three slots and a part asked for: a pinning under way, the cache untouched");
    ok(umadv__exec_stage_pin_ahead(ops, 0, NULL, &cache, SECTION, 8 * SECTION) == UMADV_OK &&
           cache.n == 0, "asked again while it pins: nothing more");
    umadv__exec_stage_cache_settle(&cache);
    umadv__cuda_host_counters(&c1);
    ok(cache.ahead == NULL && cache.n == 1 && cache.bytes[0] == 3 * SECTION &&
           c1.pinned_beside - c0.pinned_beside == 1,
       "settled: one chunk of three whole slots (%llu bytes), pinned at UMADV_PIN_BESIDE",
       (unsigned long long)cache.bytes[0]);
    umadv__exec_stage_pin_ahead(ops, 0, NULL, &cache, SECTION, 2 * SECTION);
    ok(cache.ahead == NULL, "two slots asked for, three held: nothing pinned");
    umadv__exec_stage_pin_ahead(ops, 0, NULL, &cache, SECTION, 5 * SECTION);
    umadv__exec_stage_cache_settle(&cache);
    ok(cache.n == 2 && cache.bytes[1] == 2 * SECTION,
       "five asked for, three held: a chunk of the two lacking (%llu bytes)",
       (unsigned long long)cache.bytes[1]);
    umadv__cuda_host_counters(&c1);
    umadv__cuda_host_configure_host(c1.pinned_bytes + SECTION - 1);
    umadv__exec_stage_pin_ahead(ops, 0, NULL, &cache, SECTION, 9 * SECTION);
    umadv__exec_stage_cache_settle(&cache);
    umadv__cuda_host_configure_host(UINT64_MAX);
    ok(cache.n == 2 && cache.ahead == NULL,
       "a host that cannot spare a slot: the cache as it was");
    log_take();
    umadv__exec_stage_pin_ahead(ops, 7, NULL, &cache, SECTION, 9 * SECTION);
    umadv__exec_stage_cache_settle(&cache);
    ok(cache.n == 2 && strstr(log_take(), "no device 7") != NULL,
       "a device that cannot be selected: nothing pinned for another's context");
    umadv__exec_stage_pin_ahead(ops, 0, NULL, &cache, SECTION, 9 * SECTION);
    umadv__exec_stage_cache_free(ops, &cache);
    umadv__cuda_host_counters(&c1);
    ok(cache.n == 0 && cache.ahead == NULL && c1.pinned_bytes == c0.pinned_bytes,
       "freed while a pinning was under way: it is waited for and unpinned with the rest");
    full.n = UMADV_STAGE_CHUNKS;
    umadv__exec_stage_pin_ahead(ops, 0, NULL, &full, SECTION, SECTION);
    ok(full.ahead == NULL, "a cache of %d chunks: no room for one more, nothing pinned",
       UMADV_STAGE_CHUNKS);
}

/* UMADV_STAGE=0: the same application stages nothing. */
static void test_off(void)
{
    umadv_stats_t s;
    app_t a;

    setenv("UMADV_STAGE", "0", 1);
    if (!ok(app_init(&a, 3 * BLOCK) == 0, "UMADV_STAGE=0: a context"))
        return;
    unsetenv("UMADV_STAGE");
    umadv_profile_next_iteration(a.ctx);
    iteration(&a);
    iteration(&a);
    umadv_plan(a.ctx);
    for (int it = 0; it < 3; it++)
        iteration(&a);
    stats(&a, &s);
    ok(s.staged_bytes == 0 && s.evicted_bytes > 0 && app_all_intact(&a),
       "evictions migrate (%llu bytes), nothing is staged",
       (unsigned long long)s.evicted_bytes);
    app_end(&a);
}

/* The recording says which allocations are stageable (umadv-trace(5)):
 * a block marked before it entered the trace, one marked after (block
 * NBLOCKS - 1, live when the recording began), and one made in the
 * iteration (act). */
static void test_recorded(void)
{
    app_t a;
    uint32_t blocks = 0, staged_blocks = 0, acts = 0, staged_acts = 0;

    if (!ok(app_init(&a, 0) == 0, "recorded: a context"))
        return;
    umadv_profile_next_iteration(a.ctx);
    umadv_iteration_begin(a.ctx);
    umadv_malloc(a.ctx, ACT, "act", (void **)&a.act);
    umadv_set_stageable(a.ctx, a.act, 1);
    for (int j = 0; j < NSTEPS; j++) {
        if (j == 1)
            umadv_set_stageable(a.ctx, a.block[NBLOCKS - 1], 1);
        step(&a, j);
    }
    umadv_free(a.ctx, a.act);
    a.act = NULL;
    iteration(&a); /* the timing pass */
    for (uint32_t i = 0; i < a.ctx->trace.nallocs; i++) {
        const umadv_trace_alloc_t *t = &a.ctx->trace.allocs[i];
        int act = t->tag != NULL && strcmp(t->tag, "act") == 0;

        blocks += !act;
        staged_blocks += !act && t->stageable;
        acts += act;
        staged_acts += act && t->stageable;
    }
    ok(blocks == NBLOCKS && staged_blocks == NBLOCKS && acts >= 1 && staged_acts == acts,
       "recorded: every stageable block in the trace marked (%u of %u blocks, %u of %u acts)",
       staged_blocks, blocks, staged_acts, acts);
    app_end(&a);
}

/* umadv_hold_resident: its errors; a held block (the one that is never
 * staged, as DDP's buckets) replayed under a plan that evicts it: every
 * eviction of it waited for its hold, and nothing was lost. */
static void test_hold(void)
{
    unsigned char *held;
    umadv_stats_t s;
    int word;
    app_t a;

    if (!ok(app_init(&a, 3 * BLOCK) == 0, "hold: a context"))
        return;
    held = a.block[NBLOCKS - 1];
    log_take();
    is(umadv_hold_resident(NULL, held, NULL), UMADV_ERR_INVALID_PARAM, "hold: NULL context");
    is(umadv_hold_resident(a.ctx, NULL, NULL), UMADV_ERR_INVALID_PARAM, "hold: NULL pointer");
    is(umadv_hold_resident(a.ctx, &word, NULL), UMADV_ERR_NOT_FOUND,
       "hold: memory umadv did not make");
    ok(strstr(log_take(), "umadv_hold_resident") != NULL, "hold: logged with the call's name");
    is(umadv_hold_resident(a.ctx, held, NULL), UMADV_OK, "hold: before any replay");
    app_planned(&a, 2);
    for (int it = 0; it < 4; it++) {
        umadv_hold_resident(a.ctx, held, NULL);
        iteration(&a);
    }
    stats(&a, &s);
    ok(s.held_evictions > 0 && s.evicted_bytes > 0 && app_all_intact(&a),
       "hold: %llu evictions of the held block waited for its hold, every byte intact",
       (unsigned long long)s.held_evictions);
    is(umadv_free(a.ctx, held), UMADV_OK, "hold: a held block frees");
    a.block[NBLOCKS - 1] = NULL;
    app_end(&a);
}

/* Whether each discard record of @log has, since the discard before it,
 * a memset of its range to the poison; *discards_p counts the ranges. */
static int each_discard_poisoned(const umadv_cuda_host_record_t *log, size_t n,
                                 size_t *discards_p)
{
    size_t since = 0;

    *discards_p = 0;
    for (size_t i = 0; i < n; i++) {
        int found = 0;

        if (log[i].call != UMADV_CUDA_CALL_DISCARD)
            continue;
        for (size_t k = since; k < i && !found; k++)
            found = log[k].call == UMADV_CUDA_CALL_MEMSET && log[k].ptr == log[i].ptr &&
                    log[k].size == log[i].size && log[k].location == UMADV_CUDA_HOST_POISON;
        if (!found)
            return 0;
        ++*discards_p;
        if (i + 1 < n && log[i + 1].call != UMADV_CUDA_CALL_DISCARD)
            since = i + 1; /* the next batch's memsets come after this one */
    }
    return 1;
}

/* UMADV_STAGE_POISON=1: every range discarded (staged or dead) is
 * first filled with the poison on the lane's stream; off (the
 * default), nothing is filled. */
static void test_poison(void)
{
    umadv_cuda_host_counters_t before, after;
    const umadv_cuda_host_record_t *log;
    size_t n, discards = 0;
    int filled;
    app_t a;

    for (int poison = 1; poison >= 0; poison--) {
        act_reader = 1; /* the activation dies in the iteration: released too */
        if (poison)
            setenv("UMADV_STAGE_POISON", "1", 1);
        if (!ok(app_init(&a, 3 * BLOCK) == 0, "UMADV_STAGE_POISON=%d: a context", poison)) {
            unsetenv("UMADV_STAGE_POISON");
            act_reader = NSTEPS - 1;
            return;
        }
        unsetenv("UMADV_STAGE_POISON");
        app_planned(&a, 3);
        umadv__cuda_host_counters(&before);
        umadv__cuda_host_log_enable(1);
        for (int it = 0; it < 3; it++)
            iteration(&a);
        log = umadv__cuda_host_log(&n);
        filled = each_discard_poisoned(log, n, &discards);
        order_ok(log, n, poison ? "staged calls with the poison" : "staged calls");
        if (poison)
            ok(filled && discards > 0,
               "every discarded range (%zu) filled with 0x%X first", discards,
               UMADV_CUDA_HOST_POISON);
        umadv__cuda_host_log_enable(0);
        umadv__cuda_host_counters(&after);
        if (poison)
            ok(after.memsets - before.memsets == after.discards - before.discards,
               "one memset a discarded range (%llu)",
               (unsigned long long)(after.memsets - before.memsets));
        else
            ok(after.memsets == before.memsets && after.discards > before.discards,
               "UMADV_STAGE_POISON=0: %llu ranges discarded, none filled",
               (unsigned long long)(after.discards - before.discards));
        ok(app_all_intact(&a), "UMADV_STAGE_POISON=%d: every byte read the last written",
           poison);
        app_end(&a);
        act_reader = NSTEPS - 1;
    }
}

/* UMADV_LANE_PIECE reaches the executor, whose lanes then split their
 * discards and populations while the application runs (exec/stage.c;
 * tests/test_exec_calls splits, test_stage_property loses nothing so);
 * the data is intact either way. */
static void test_lane_piece(void)
{
    static const char *const values[] = {"0", "16K"};
    static const uint64_t bytes[] = {0, 16 * UMADV_KIB};

    for (size_t v = 0; v < UMADV_ARRAY_SIZE(values); v++) {
        const umadv_cuda_host_record_t *log;
        size_t n, pieces = 0;
        app_t a;

        setenv("UMADV_LANE_PIECE", values[v], 1);
        if (!ok(app_init(&a, 3 * BLOCK) == 0, "UMADV_LANE_PIECE=%s: a context", values[v])) {
            unsetenv("UMADV_LANE_PIECE");
            return;
        }
        unsetenv("UMADV_LANE_PIECE");
        app_planned(&a, 3);
        ok(a.ctx->replay.exec != NULL && a.ctx->replay.exec->p.call_piece_bytes == bytes[v],
           "UMADV_LANE_PIECE=%s: the executor's piece is %llu bytes", values[v],
           (unsigned long long)bytes[v]);
        umadv__cuda_host_log_enable(1);
        for (int it = 0; it < 3; it++)
            iteration(&a);
        log = umadv__cuda_host_log(&n);
        for (size_t i = 0; i < n; i++)
            pieces += (log[i].call == UMADV_CUDA_CALL_DISCARD ||
                       log[i].call == UMADV_CUDA_CALL_DISCARD_PREFETCH) && log[i].size < SECTION;
        umadv__cuda_host_log_enable(0);
        if (bytes[v] == 0)
            ok(pieces == 0, "UMADV_LANE_PIECE=0: no discard or population split");
        else
            diag("UMADV_LANE_PIECE=%s: %zu ranges of a discard or population split", values[v],
                 pieces);
        ok(app_all_intact(&a), "UMADV_LANE_PIECE=%s: every byte read the last written",
           values[v]);
        app_end(&a);
    }
}

/* Whether each population of a restored range (@log[i], a
 * discard-and-prefetch: only restores make them) is followed on its
 * stream by an event recorded there, and its range's copy back comes
 * after it on another stream (exec/stage.c, RESTORES IN RUNS). The log
 * is the process's: the other lane's calls may come in between. */
static int restore_runs_ordered(const umadv_cuda_host_record_t *log, size_t n, size_t *runs_p)
{
    *runs_p = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = i + 1;

        if (log[i].call != UMADV_CUDA_CALL_DISCARD_PREFETCH)
            continue;
        ++*runs_p;
        while (k < n && log[k].stream != log[i].stream)
            k++;
        if (k >= n || log[k].call != UMADV_CUDA_CALL_EVENT_RECORD)
            return 0;
        while (k < n && !(log[k].call == UMADV_CUDA_CALL_MEMCPY && log[k].ptr == log[i].ptr))
            k++;
        if (k >= n || log[k].stream == log[i].stream)
            return 0;
    }
    return 1;
}

/* A restore goes in runs, each populated on a stream of the lane's own
 * while the run before is copied back; every byte intact. */
static void test_restore_runs(void)
{
    const umadv_cuda_host_record_t *log;
    size_t n, runs;
    int ordered;
    app_t a;

    if (!ok(app_init(&a, 3 * BLOCK) == 0, "restores in runs: a context"))
        return;
    app_planned(&a, 3);
    umadv__cuda_host_log_enable(1);
    for (int it = 0; it < 3; it++)
        iteration(&a);
    log = umadv__cuda_host_log(&n);
    ordered = restore_runs_ordered(log, n, &runs);
    order_ok(log, n, "restores in runs");
    umadv__cuda_host_log_enable(0);
    ok(runs > 0 && ordered, "%zu restored runs: each populated on a stream of its own, an "
       "event recorded there after it, its copy back on the lane's stream", runs);
    ok(app_all_intact(&a), "restores in runs: every byte read the last written");
    app_end(&a);
}

/* Two blocks of 20 sections of @section bytes, a budget of 30: each
 * iteration restores 10 sections of one and stages 10 of the other. Six
 * iterations, the last three logged into @log_p (umadv__cuda_host_log;
 * logging left on); whether every byte read the last written. */
static int two_blocks(uint64_t section, const umadv_cuda_host_record_t **log_p, size_t *n_p)
{
    uint64_t big_bytes = 20 * section;
    umadv_context_t ctx = test_host_context(section, 3 * big_bytes / 2);
    unsigned char *big[2] = {NULL, NULL}, want[2] = {0, 0};
    int wrong = ctx == NULL;

    for (int b = 0; b < 2 && !wrong; b++) {
        wrong |= umadv_malloc(ctx, big_bytes, "big", (void **)&big[b]) != UMADV_OK;
        wrong |= !wrong && umadv_set_stageable(ctx, big[b], 1) != UMADV_OK;
        if (!wrong)
            memset(big[b], 0, big_bytes); /* the pool may hand out used memory */
    }
    if (!wrong)
        umadv_profile_next_iteration(ctx);
    for (int it = 0; it < 6 && !wrong; it++) {
        if (it == 3)
            umadv__cuda_host_log_enable(1);
        umadv_iteration_begin(ctx);
        for (int b = 0; b < 2; b++) {
            umadv_step_begin(ctx, NULL, NULL);
            umadv_step_access(ctx, big[b], big_bytes, UMADV_ACCESS_RW);
            for (size_t i = 0; i < big_bytes; i += 4093)
                wrong |= big[b][i] != want[b];
            want[b] = (unsigned char)(it * 2 + b + 1);
            memset(big[b], want[b], big_bytes);
            umadv_step_end(ctx, 1000000);
        }
        if (it == 1)
            umadv_plan(ctx);
    }
    *log_p = umadv__cuda_host_log(n_p);
    for (int b = 0; b < 2; b++)
        if (big[b] != NULL)
            umadv_free(ctx, big[b]);
    umadv_context_destroy(ctx);
    return !wrong;
}

/* two_blocks with sections of @section bytes, named @what: each restore
 * run copied after its population, every lane call ordered, every byte
 * intact. */
static void two_blocks_ok(uint64_t section, const char *what)
{
    const umadv_cuda_host_record_t *log;
    size_t n, runs;
    int intact = two_blocks(section, &log, &n);
    int ordered = restore_runs_ordered(log, n, &runs);

    order_ok(log, n, what);
    umadv__cuda_host_log_enable(0);
    ok(ordered && runs > 0 && intact, "%s: %zu restore runs, each copied after its population, "
       "every byte read the last written", what, runs);
}

/* 2 MiB sections, 10 each way an iteration; then 4 MiB: 40 MiB each way,
 * copies longer than the bounce buffer and runs that fill it, so that its
 * chunks follow one another within a call. */
static void test_two_blocks(void)
{
    two_blocks_ok(SECTION, "two blocks in turn");
    two_blocks_ok(4 * UMADV_MIB, "copies of many bounce chunks");
}

/* The PyTorch entry points hand out device memory: stageable. */
static void test_torch(void)
{
    umadv_context_t ctx = test_host_context(SECTION, 0), old = umadv__torch_reset(ctx);
    umadv_pool_loc_t loc;
    void *p = umadv_torch_malloc(BLOCK, 0, NULL);

    ok(p != NULL && umadv__pool_lookup(ctx->pool, p, &loc) == UMADV_OK &&
           ((umadv_ctx_alloc_t *)(uintptr_t)loc.user)->stageable,
       "umadv_torch_malloc's blocks are stageable");
    umadv_torch_free(p, BLOCK, 0, NULL);
    umadv__torch_reset(old);
    umadv_context_destroy(ctx);
}

/* Every discard the tests above made (staged evictions, dead data, the
 * poison's, in pieces) went on an idle stream: none behind work still
 * enqueued there (exec/stage.c, DISCARDS ON AN IDLE STREAM). */
static void test_discards_on_idle_streams(void)
{
    umadv_cuda_host_counters_t c;

    umadv__cuda_host_counters(&c);
    ok(c.discards > 0 && c.discards_behind_work == 0,
       "every discard above on an idle stream (%llu discard calls behind work, of %llu ranges)",
       (unsigned long long)c.discards_behind_work, (unsigned long long)c.discards);
}

int main(void)
{
    env_clear();
    log_capture_start();
    plan(30 + 8 + 7 + 7 + 9 + 3 + 9 + 1 + 1 + 4 + 2);
    test_errors();
    test_policies();
    test_consecutive_slots();
    test_dead();
    test_pool_grows();
    test_pool_host_spare();
    test_pool_pinned_ahead();
    test_off();
    test_poison();
    test_lane_piece();
    test_restore_runs();
    test_two_blocks();
    test_recorded();
    test_hold();
    test_torch();
    test_discards_on_idle_streams();
    log_capture_stop();
    return exit_status();
}
