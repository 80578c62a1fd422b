/*
 * The executor under a NUMA placement, on the host backend: evictions and
 * host-preferred advice name the chosen host node (the backend records
 * each call's location), plain host without a placement; the migration
 * and monitor threads run on the placement's cores, and an application
 * that keeps its threads off those cores is obeyed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "exec/exec.h"
#include "numa/numa.h"
#include "plan/plan.h"
#include "trace/trace.h"
#include "tap.h"
#include "testutil.h"

#define SEC       (64 * UMADV_KIB)
#define NSECTIONS 4
#define MAX_SEEN  8

/* ---- cores seen by the executor's threads --------------------------------- */

static struct {
    pthread_mutex_t  lock;
    hwloc_topology_t topology; /* this machine's, to read bindings; NULL: none */
    char             seen[MAX_SEEN][64];
    int              nseen;
} cores = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void thread_cores(char *buf, size_t len)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();

    if (hwloc_get_cpubind(cores.topology, set, HWLOC_CPUBIND_THREAD) != 0)
        snprintf(buf, len, "?");
    else
        umadv__numa_set_format(set, buf, len);
    hwloc_bitmap_free(set);
}

/* Every executor thread makes the device current once it has bound itself:
 * what it runs on then is what it will run on. */
static umadv_status_t seeing_thread_begin(int device)
{
    pthread_mutex_lock(&cores.lock);
    if (cores.topology != NULL && cores.nseen < MAX_SEEN)
        thread_cores(cores.seen[cores.nseen++], sizeof(cores.seen[0]));
    pthread_mutex_unlock(&cores.lock);
    return umadv__cuda_ops_host.thread_begin(device);
}

static umadv_cuda_ops_t ops;

/* 1 when every thread seen ran on @want. */
static int all_seen_on(const char *want, int expect)
{
    int same = cores.nseen == expect;

    for (int i = 0; i < cores.nseen; i++) {
        if (strcmp(cores.seen[i], want) != 0) {
            diag("a thread ran on %s, not %s", cores.seen[i], want);
            same = 0;
        }
    }
    if (cores.nseen != expect)
        diag("%d threads seen, %d expected", cores.nseen, expect);
    return same;
}

/* ---- one replay ------------------------------------------------------------ */

typedef struct result {
    int      evictions, evict_loc_ok;
    uint64_t evicted;
    int      advice_ok;
} result_t;

/* One allocation, one step, the plan policy with a setup advice of
 * preferred location host; the block may be on the GPU when bound, so
 * the start evicts it. Checks each host-side call against @want. */
static void tally(const umadv_cuda_host_record_t *log, size_t n, int want, result_t *r)
{
    memset(r, 0, sizeof(*r));
    r->evict_loc_ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (log[i].call == UMADV_CUDA_CALL_PREFETCH && UMADV_CUDA_LOCATION_IS_HOST(log[i].location)) {
            r->evictions++;
            r->evicted += log[i].size;
            r->evict_loc_ok &= log[i].location == want;
        }
        if (log[i].call == UMADV_CUDA_CALL_ADVISE &&
            log[i].advice == UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION)
            r->advice_ok = log[i].location == want;
    }
}

static int replay(const umadv_numa_place_t *place, int want, result_t *r)
{
    umadv_trace_t trace;
    umadv_op_t setup = {.kind = UMADV_OP_ADVISE, .advice = UMADV_ADVICE_PREFERRED_HOST,
                        .alloc = 0, .first = 0, .count = NSECTIONS, .bytes = NSECTIONS * SEC};
    uint32_t step_ops[2] = {0, 0};
    uint8_t resident_at_start[NSECTIONS] = {0};
    umadv_schedule_t schedule = {.nsteps = 1, .setup = &setup, .nsetup = 1,
                                 .step_ops = step_ops, .resident_at_start = resident_at_start};
    umadv_exec_params_t p = {.ops = &ops, .policy = UMADV_POLICY_PLAN, .trace = &trace,
                             .nsteps = 1, .schedule = &schedule, .monitor_period_ns = 1000000,
                             .numa = place};
    const umadv_cuda_host_record_t *log;
    umadv_exec_t *e = NULL;
    void *block = NULL;
    uint32_t id;
    char why[160];
    size_t n;

    umadv__trace_init(&trace, SEC);
    ops.malloc_managed(NSECTIONS * SEC, SEC, &block);
    umadv__trace_add_alloc(&trace, (uintptr_t)block, NSECTIONS * SEC, UMADV_ALLOC_OTHER, NULL, &id);
    umadv__trace_add_step(&trace, NULL, UMADV_STEP_LAYER, 0, 1000000, NULL);
    umadv__trace_add_access(&trace, 0, 0, NSECTIONS * SEC, UMADV_ACCESS_RW, 0);
    if (umadv__trace_finalize(&trace, why, sizeof(why)) != UMADV_OK ||
        umadv__exec_create(&p, &e) != UMADV_OK) {
        diag("no executor: %s", why);
        return 0;
    }
    umadv__cuda_host_log_enable(1);
    umadv__exec_bind(e, 0, block, NSECTIONS * SEC, block, 1);
    umadv__exec_start(e, NULL);
    umadv__exec_iteration_begin(e);
    umadv__exec_step_begin(e);
    umadv__exec_step_wait(e); /* the start's evictions block the first step */
    umadv__exec_step_end(e, NULL);
    umadv__exec_destroy(e);
    log = umadv__cuda_host_log(&n);
    tally(log, n, want, r);
    umadv__cuda_host_log_enable(0);
    ops.free(block, NSECTIONS * SEC);
    umadv__trace_cleanup(&trace);
    return 1;
}

static void check_replay(const char *what, const umadv_numa_place_t *place, int want)
{
    char loc[32];
    result_t r;

    umadv__cuda_location_name(want, loc, sizeof(loc));
    if (!replay(place, want, &r)) {
        ok(0, "%s: replay ran", what);
        skip("no replay", "not run");
        return;
    }
    ok(r.evictions > 0 && r.evict_loc_ok && r.evicted == NSECTIONS * SEC,
       "%s: %d evictions of %llu bytes, all to %s", what, r.evictions,
       (unsigned long long)r.evicted, loc);
    ok(r.advice_ok, "%s: preferred location advice names %s", what, loc);
}

/* ---- the tests ------------------------------------------------------------- */

static void test_locations(void)
{
    const char *srcdir = getenv("top_srcdir");
    char path[4096];
    hwloc_topology_t t;
    umadv_numa_locality_t loc;
    umadv_numa_place_t place;

    check_replay("no placement", NULL, UMADV_CUDA_LOCATION_HOST);
    snprintf(path, sizeof(path), "%s/tests/numa/2socket.xml", srcdir != NULL ? srcdir : ".");
    if (umadv__numa_load(path, &t) != UMADV_OK ||
        umadv__numa_locate(t, "0000:ca:00.0", &loc) != UMADV_OK) {
        ok(0, "2socket fixture loads");
        for (int i = 0; i < 3; i++)
            skip("no fixture", "not run");
        return;
    }
    umadv__numa_choose(t, &loc, UMADV_CONFIG_NODE_AUTO, &place);
    check_replay("socket-1 gpu of the 2-socket fixture", &place,
                 UMADV_CUDA_LOCATION_HOST_NUMA(1));
    umadv__numa_place_clear(&place);
    umadv__numa_choose(t, &loc, UMADV_CONFIG_NODE_NONE, &place);
    check_replay("the same under UMADV_HOST_NUMA=none", &place, UMADV_CUDA_LOCATION_HOST);
    umadv__numa_place_clear(&place);
    umadv__numa_locality_clear(&loc);
    hwloc_topology_destroy(t);
}

/* A place on this machine's last core, built by hand: a real machine
 * rarely has a GPU on a core of its own, but binding must not care. */
static int last_core_place(umadv_numa_place_t *place, char *want, size_t len)
{
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(cores.topology);

    if (hwloc_bitmap_weight(allowed) < 2)
        return 0;
    memset(place, 0, sizeof(*place));
    place->topology = cores.topology;
    place->node = hwloc_bitmap_first(hwloc_topology_get_topology_nodeset(cores.topology));
    place->cpuset = hwloc_bitmap_alloc();
    hwloc_bitmap_only(place->cpuset, (unsigned)hwloc_bitmap_last(allowed));
    umadv__numa_set_format(place->cpuset, want, len);
    return 1;
}

static void test_binding(void)
{
    umadv_numa_place_t place;
    hwloc_bitmap_t mine = hwloc_bitmap_alloc(), first = hwloc_bitmap_alloc();
    char want[64], before[64], after[64], first_text[64];
    result_t r;

    unsetenv("HWLOC_XMLFILE");
    if (umadv__numa_load(NULL, &cores.topology) != UMADV_OK ||
        hwloc_get_cpubind(cores.topology, mine, HWLOC_CPUBIND_THREAD) != 0 ||
        !last_core_place(&place, want, sizeof(want))) {
        for (int i = 0; i < 4; i++)
            skip("fewer than 2 cores to bind to, or hwloc cannot read bindings", "binding");
        return;
    }
    thread_cores(before, sizeof(before));
    cores.nseen = 0;
    replay(&place, UMADV_CUDA_LOCATION_HOST_NUMA(place.node), &r);
    thread_cores(after, sizeof(after));
    ok(all_seen_on(want, 3), "fetch, eviction and monitor threads ran on core %s", want);
    is_str(after, before, "the application's thread kept its cores (%s)", before);
    ok(r.evict_loc_ok && r.evictions > 0, "evictions named this machine's node %d", place.node);

    /* The application keeps its threads on the first core: umadv's
     * threads, born there, stay there rather than leave it. */
    hwloc_bitmap_only(first, (unsigned)hwloc_bitmap_first(mine));
    hwloc_set_cpubind(cores.topology, first, HWLOC_CPUBIND_THREAD);
    umadv__numa_set_format(first, first_text, sizeof(first_text));
    cores.nseen = 0;
    replay(&place, UMADV_CUDA_LOCATION_HOST_NUMA(place.node), &r);
    ok(all_seen_on(first_text, 3), "an application's narrower binding (%s) is kept",
       first_text);
    hwloc_set_cpubind(cores.topology, mine, HWLOC_CPUBIND_THREAD);
    umadv__numa_place_clear(&place);
    hwloc_bitmap_free(mine);
    hwloc_bitmap_free(first);
}

int main(void)
{
    log_capture_start();
    plan(10);
    ops = umadv__cuda_ops_host;
    ops.name = "host, seeing cores";
    ops.thread_begin = seeing_thread_begin;
    test_locations();
    test_binding();
    log_capture_stop();
    return exit_status();
}
