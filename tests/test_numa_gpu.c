/*
 * Host NUMA placement on a real GPU: hwloc's choice for device 0 agrees
 * with the driver's own idea of the nearest host node, an eviction to it
 * lands there (the range's last prefetch location says so) with the data
 * intact, and the preferred-location advice takes it. Skips the whole
 * file without a device. Managed memory: 256 MiB, far below any GPU's
 * free memory (checked first).
 *
 * With UMADV_NUMA_BENCH=1 it also times evict+fetch of 256 MiB, ten
 * rounds, placement auto against none, interleaved (ABBA) so that drift
 * and warm-up hit both alike, and prints the two side by side.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "cuda_ops/cudart_util.h"
#include "numa/numa.h"
#include "tap.h"

#define BYTES  (256 * UMADV_MIB)
#define ROUNDS 10

static const umadv_cuda_ops_t *ops = &umadv__cuda_ops_cudart;

/* The driver's nearest host node (-1: it sees no NUMA). */
static int driver_numa_id(int device)
{
    int id = -1;

    if (UMADV_CUDART_FUNC(cudaDeviceGetAttribute(&id, cudaDevAttrHostNumaId, device)) !=
        UMADV_OK)
        return -1;
    return id;
}

static void test_choice(const umadv_device_props_t *props, const umadv_numa_place_t *place,
                        int nnodes)
{
    char cores[256];
    int driver = driver_numa_id(0);

    diag("gpu 0: %s, pci %s; %d numa node(s); hwloc: node %d (%s), threads %s; "
         "driver's nearest host node: %d", props->name, props->pci_bus_id, nnodes, place->node,
         place->reason, place->cpuset != NULL ?
         umadv__numa_set_format(place->cpuset, cores, sizeof(cores)) : "unbound", driver);
    if (nnodes == 1)
        is(place->node, 0, "one numa node: placement resolves to node 0");
    else
        ok(place->node >= -1, "several numa nodes: placement made (node %d)", place->node);
    ok(driver < 0 || place->node < 0 || driver == place->node,
       "hwloc and the driver agree on the nearest node (%d, %d)", place->node, driver);
}

static int last_prefetch(void *p, int *type_p, int *id_p)
{
    return UMADV_CUDART_FUNC(cudaMemRangeGetAttribute(
               type_p, sizeof(*type_p), cudaMemRangeAttributeLastPrefetchLocationType, p,
               BYTES)) == UMADV_OK &&
           UMADV_CUDART_FUNC(cudaMemRangeGetAttribute(
               id_p, sizeof(*id_p), cudaMemRangeAttributeLastPrefetchLocationId, p,
               BYTES)) == UMADV_OK;
}

/* To the GPU and back to the node: the data survives, the range says
 * where it went, the advice is taken. */
static void test_evict(unsigned char *p, int node, umadv_stream_t stream)
{
    int loc = UMADV_CUDA_LOCATION_HOST_NUMA(node), type = -1, id = -1, same = 1, read;

    memset(p, 0x5c, BYTES);
    ok(ops->prefetch(p, BYTES, 0, stream) == UMADV_OK &&
       ops->stream_synchronize(stream) == UMADV_OK, "256 MiB to the gpu");
    ok(ops->prefetch(p, BYTES, loc, stream) == UMADV_OK &&
       ops->stream_synchronize(stream) == UMADV_OK, "evicted to host numa node %d", node);
    read = last_prefetch(p, &type, &id); /* before ok(): its arguments have no order */
    ok(read && type == cudaMemLocationTypeHostNuma && id == node,
       "the range's last prefetch went to host numa node %d (type %d, id %d), no fallback",
       node, type, id);
    for (size_t i = 0; i < BYTES; i += 4096)
        same &= p[i] == 0x5c;
    ok(same, "data intact after the round trip");
    ok(ops->advise(p, BYTES, UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION, loc) == UMADV_OK &&
       ops->advise(p, BYTES, UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION, 0) == UMADV_OK,
       "preferred location host numa node %d set and unset", node);
}

/* ---- timing ------------------------------------------------------------- */

typedef struct samples {
    double evict_ms[ROUNDS], fetch_ms[ROUNDS];
} samples_t;

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, ROUNDS, sizeof(*v), by_value);
    return (v[ROUNDS / 2 - 1] + v[ROUNDS / 2]) / 2;
}

/* One fetch and one eviction to @loc, timed on the host: the calls block
 * their caller for the whole migration, the stream sync closes it. */
static int round_trip(unsigned char *p, int loc, umadv_stream_t stream, double *fetch_ms,
                      double *evict_ms)
{
    uint64_t t0 = umadv__now_ns(), t1, t2;

    if (ops->prefetch(p, BYTES, 0, stream) != UMADV_OK ||
        ops->stream_synchronize(stream) != UMADV_OK)
        return 0;
    t1 = umadv__now_ns();
    if (ops->prefetch(p, BYTES, loc, stream) != UMADV_OK ||
        ops->stream_synchronize(stream) != UMADV_OK)
        return 0;
    t2 = umadv__now_ns();
    *fetch_ms = (double)(t1 - t0) * 1e-6;
    *evict_ms = (double)(t2 - t1) * 1e-6;
    return 1;
}

static void report(const char *name, samples_t *s)
{
    double gb = (double)BYTES * 1e-9;
    double e = median(s->evict_ms), f = median(s->fetch_ms); /* sorts: [0] min, [-1] max */

    diag("%-18s evict median %7.2f ms (%5.1f GB/s, min %.2f max %.2f) | fetch median %7.2f ms "
         "(%5.1f GB/s)", name, e, gb / (e * 1e-3), s->evict_ms[0], s->evict_ms[ROUNDS - 1],
         f, gb / (f * 1e-3));
}

static void bench(unsigned char *p, int node, umadv_stream_t stream)
{
    int locs[2] = {UMADV_CUDA_LOCATION_HOST_NUMA(node), UMADV_CUDA_LOCATION_HOST};
    samples_t s[2];
    double scratch;
    int good = 1;
    char name[32];

    for (int w = 0; w < 2; w++) /* warm both ways first */
        good &= round_trip(p, locs[w], stream, &scratch, &scratch);
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < 2; k++) {
            int m = (r % 2) ? 1 - k : k;
            good &= round_trip(p, locs[m], stream, &s[m].fetch_ms[r], &s[m].evict_ms[r]);
        }
    }
    ok(good, "%d rounds of 256 MiB evict+fetch each way", ROUNDS);
    if (!good)
        return;
    snprintf(name, sizeof(name), "auto (numa %d):", node);
    report(name, &s[0]);
    report("none (host):", &s[1]);
    diag("auto/none evict median ratio %.3f", median(s[0].evict_ms) / median(s[1].evict_ms));
}

int main(void)
{
    umadv_device_props_t props;
    const umadv_numa_place_t *place = NULL;
    hwloc_topology_t topology;
    umadv_stream_t stream;
    uint64_t free_b = 0, total_b = 0;
    unsigned char *p = NULL;
    int count = 0, nnodes, node;

    if (ops->device_count(&count) != UMADV_OK)
        skip_all("no CUDA device");
    plan(10);
    if (!ok(ops->get_device_props(0, &props) == UMADV_OK && ops->thread_begin(0) == UMADV_OK &&
       umadv__numa_host_place(props.pci_bus_id, UMADV_CONFIG_NODE_AUTO, &place) == UMADV_OK &&
       umadv__numa_load(NULL, &topology) == UMADV_OK, "device 0 placed"))
        return exit_status();
    nnodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
    test_choice(&props, place, nnodes);
    /* A machine where auto picks no node still has node 0 to try. */
    node = place->node >= 0 ? place->node : 0;
    if (ops->mem_get_info(&free_b, &total_b) != UMADV_OK)
        free_b = 0;
    ok(free_b > 4 * BYTES, "free %.1f GiB: room for 256 MiB", (double)free_b / (double)UMADV_GIB);
    if (ops->stream_create(&stream) != UMADV_OK ||
        ops->malloc_managed(BYTES, 0, (void **)&p) != UMADV_OK)
        return exit_status();
    test_evict(p, node, stream);
    if (getenv("UMADV_NUMA_BENCH") != NULL && strcmp(getenv("UMADV_NUMA_BENCH"), "1") == 0)
        bench(p, node, stream);
    else
        skip("set UMADV_NUMA_BENCH=1 to time auto against none", "timing");
    ops->free(p, BYTES);
    ops->stream_destroy(stream);
    hwloc_topology_destroy(topology);
    return exit_status();
}
