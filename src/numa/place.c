/*
 * What umadv does with a GPU's locality: the UMADV_HOST_NUMA policy (pure,
 * over any topology), this process's cached placements, thread binding.
 */
#include "numa/numa.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

/* ---- the policy --------------------------------------------------------- */

/* Lower is better. Memory first: a memoryless node cannot take the pages.
 * Then ordinary memory: HBM, NVM or CXL memory near the GPU is scarce or
 * slow, and evicted pages would squat it. */
static int node_rank(hwloc_obj_t node)
{
    int rank = 0;

    if (node->attr->numanode.local_memory == 0)
        rank += 2;
    if (node->subtype != NULL && strcasecmp(node->subtype, "DRAM") != 0)
        rank += 1;
    return rank;
}

/* The best-ranked node of @nodeset, the first (by number) of equals; -1
 * for an empty set. */
static int nearest_node(hwloc_topology_t topology, hwloc_const_bitmap_t nodeset)
{
    int best = -1, best_rank = 0;
    unsigned i;

    hwloc_bitmap_foreach_begin(i, nodeset) {
        hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topology, i);
        if (node != NULL && (best < 0 || node_rank(node) < best_rank)) {
            best = (int)i;
            best_rank = node_rank(node);
        }
    } hwloc_bitmap_foreach_end();
    return best;
}

/* A copy of @set for binding, or NULL when it spans the machine: binding
 * there does nothing but undo a narrower binding the application chose. */
static hwloc_bitmap_t bind_set(hwloc_topology_t topology, hwloc_const_bitmap_t set)
{
    if (set == NULL || hwloc_bitmap_iszero(set) ||
        hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(topology), set))
        return NULL;
    return hwloc_bitmap_dup(set); /* NULL when out of memory: unbound, a hint less */
}

static const char *no_locality_reason(umadv_numa_where_t where)
{
    switch (where) {
    case UMADV_NUMA_AT_ROOT:
        return "the gpu hangs off the machine root: no node is nearer";
    case UMADV_NUMA_NOT_FOUND:
        return "hwloc does not see the gpu's pci device";
    case UMADV_NUMA_NO_PCI:
        return "hwloc sees no pci devices";
    case UMADV_NUMA_AT_PCI:
        break;
    }
    return "no numa node near the gpu";
}

static void choose_auto(hwloc_topology_t topology, const umadv_numa_locality_t *locality,
                        umadv_numa_place_t *place)
{
    int nnodes = hwloc_bitmap_weight(locality->nodeset);

    place->cpuset = bind_set(topology, locality->cpuset);
    if (locality->where != UMADV_NUMA_AT_PCI && nnodes == 1) {
        place->node = hwloc_bitmap_first(locality->nodeset);
        place->reason = "the only numa node";
    } else if (locality->where != UMADV_NUMA_AT_PCI || nnodes == 0) {
        place->reason = no_locality_reason(locality->where);
    } else {
        place->node = nearest_node(topology, locality->nodeset);
        place->reason = nnodes == 1 ? "nearest the gpu"
                                    : "nearest the gpu, the first with memory of its nodes";
    }
}

static umadv_status_t choose_node(hwloc_topology_t topology, int mode, umadv_numa_place_t *place)
{
    hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topology, (unsigned)mode);
    char nodes[128];

    if (node == NULL) {
        umadv_error("UMADV_HOST_NUMA=%d: this machine has no numa node %d (nodes: %s)", mode,
                    mode, umadv__numa_set_format(hwloc_topology_get_topology_nodeset(topology),
                                                 nodes, sizeof(nodes)));
        return UMADV_ERR_INVALID_PARAM;
    }
    place->node = mode;
    place->cpuset = bind_set(topology, node->cpuset);
    place->reason = "set by UMADV_HOST_NUMA";
    return UMADV_OK;
}

umadv_status_t umadv__numa_choose(hwloc_topology_t topology,
                                  const umadv_numa_locality_t *locality, int mode,
                                  umadv_numa_place_t *place)
{
    umadv_numa_place_t p = {.topology = topology, .node = -1};

    if (mode == UMADV_CONFIG_NODE_NONE) {
        p.reason = "UMADV_HOST_NUMA=none";
    } else if (mode == UMADV_CONFIG_NODE_AUTO) {
        choose_auto(topology, locality, &p);
    } else if (mode < 0 || choose_node(topology, mode, &p) != UMADV_OK) {
        return UMADV_ERR_INVALID_PARAM;
    }
    *place = p;
    return UMADV_OK;
}

void umadv__numa_place_clear(umadv_numa_place_t *place)
{
    hwloc_bitmap_free(place->cpuset);
    memset(place, 0, sizeof(*place));
    place->node = -1;
}

/* ---- this process ------------------------------------------------------- */

typedef struct host_entry {
    struct host_entry *next;
    char               bus_id[32];
    int                mode;
    umadv_numa_place_t place;
} host_entry_t;

/* Entries are never freed nor moved: callers keep pointers to their place
 * for the life of the process. */
static struct {
    pthread_mutex_t  lock;
    int              tried;     /* the topology load was attempted */
    hwloc_topology_t topology;  /* NULL: it failed */
    host_entry_t    *entries;
    int              told;      /* the fall back to plain host was logged */
} host = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Called with the lock held. */
static hwloc_topology_t host_topology(void)
{
    if (!host.tried) {
        host.tried = 1;
        if (umadv__numa_load(NULL, &host.topology) != UMADV_OK)
            host.topology = NULL;
    }
    return host.topology;
}

/* Called with the lock held: one message per process, at info, when
 * auto cannot place a GPU (a VM or container commonly hides the PCI
 * tree; nothing is wrong, there is just nothing to gain). */
static void tell_fallback(const char *bus_id, const umadv_numa_place_t *place)
{
    if (host.told)
        return;
    host.told = 1;
    umadv_info("numa: gpu %s: %s: evictions go to plain host memory", bus_id,
               place->reason);
}

static void log_place(const char *bus_id, const umadv_numa_place_t *place)
{
    char cores[256], memory[32];

    if (place->node >= 0)
        snprintf(memory, sizeof(memory), "numa node %d", place->node);
    else
        snprintf(memory, sizeof(memory), "plain host");
    umadv_debug("numa: gpu %s: host memory on %s (%s), threads on cores %s", bus_id, memory,
                place->reason, place->cpuset != NULL ?
                umadv__numa_set_format(place->cpuset, cores, sizeof(cores)) : "(unbound)");
}

/* Called with the lock held. */
static umadv_status_t host_place_compute(const char *bus_id, int mode,
                                         umadv_numa_place_t *place)
{
    hwloc_topology_t topology = host_topology();
    umadv_numa_locality_t locality;
    umadv_status_t status;

    if (topology == NULL) {
        *place = (umadv_numa_place_t){.node = -1,
                                      .reason = "hwloc could not load the topology"};
        tell_fallback(bus_id, place);
        return UMADV_OK;
    }
    status = umadv__numa_locate(topology, bus_id, &locality);
    if (status != UMADV_OK)
        return status;
    status = umadv__numa_choose(topology, &locality, mode, place);
    if (status == UMADV_OK && mode == UMADV_CONFIG_NODE_AUTO &&
        locality.where != UMADV_NUMA_AT_PCI && hwloc_bitmap_weight(locality.nodeset) > 1)
        tell_fallback(bus_id, place);
    umadv__numa_locality_clear(&locality);
    return status;
}

/* Called with the lock held. */
static host_entry_t *host_find(const char *bus_id, int mode)
{
    for (host_entry_t *e = host.entries; e != NULL; e = e->next) {
        if (e->mode == mode && strcmp(e->bus_id, bus_id) == 0)
            return e;
    }
    return NULL;
}

static umadv_status_t host_add(const char *bus_id, int mode, host_entry_t **entry_p)
{
    host_entry_t *e = calloc(1, sizeof(*e));
    umadv_status_t status;

    if (e == NULL)
        return UMADV_ERR_NO_MEMORY;
    status = host_place_compute(bus_id, mode, &e->place);
    if (status != UMADV_OK) {
        free(e);
        return status;
    }
    snprintf(e->bus_id, sizeof(e->bus_id), "%s", bus_id);
    e->mode = mode;
    e->next = host.entries;
    host.entries = e;
    log_place(bus_id, &e->place);
    *entry_p = e;
    return UMADV_OK;
}

umadv_status_t umadv__numa_host_place(const char *bus_id, int mode,
                                      const umadv_numa_place_t **place_p)
{
    host_entry_t *e;
    umadv_status_t status = UMADV_OK;

    if (bus_id == NULL)
        return UMADV_ERR_INVALID_PARAM;
    pthread_mutex_lock(&host.lock);
    e = host_find(bus_id, mode);
    if (e == NULL)
        status = host_add(bus_id, mode, &e);
    pthread_mutex_unlock(&host.lock);
    if (status == UMADV_OK)
        *place_p = &e->place;
    return status;
}

/* ---- binding ------------------------------------------------------------ */

static void bind_warn_once(const char *cores)
{
    static int warned;

    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        umadv_warn("numa: cannot bind umadv's threads to cores %s: %m; they run unbound",
                   cores);
}

/* The cores to bind to in @set: the place's, within those the thread may
 * use now. Returns 0 when there is nothing to do. */
static int bind_target(const umadv_numa_place_t *place, hwloc_bitmap_t set)
{
    hwloc_bitmap_t now = hwloc_bitmap_alloc();
    int change = 0;

    if (now == NULL)
        return 0;
    if (hwloc_get_cpubind(place->topology, now, HWLOC_CPUBIND_THREAD) != 0)
        hwloc_bitmap_copy(now, hwloc_topology_get_allowed_cpuset(place->topology));
    hwloc_bitmap_and(set, place->cpuset, now);
    if (hwloc_bitmap_iszero(set))
        umadv_debug("numa: the thread's cores exclude the gpu's: left where it is");
    else
        change = !hwloc_bitmap_isequal(set, now);
    hwloc_bitmap_free(now);
    return change;
}

void umadv__numa_bind_thread(const umadv_numa_place_t *place)
{
    hwloc_bitmap_t set;
    char cores[256];

    if (place == NULL || place->cpuset == NULL || place->topology == NULL)
        return;
    set = hwloc_bitmap_alloc();
    if (set == NULL)
        return;
    if (bind_target(place, set) &&
        hwloc_set_cpubind(place->topology, set, HWLOC_CPUBIND_THREAD) != 0)
        bind_warn_once(umadv__numa_set_format(set, cores, sizeof(cores)));
    hwloc_bitmap_free(set);
}
