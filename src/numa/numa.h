/*
 * NUMA-aware host placement: where a GPU sits in the machine (hwloc), which
 * host NUMA node its evicted pages should go to, and which cores umadv's
 * migration threads should run on.
 *
 * On a multi-socket server a GPU hangs off one socket's PCIe root; pages
 * evicted to the other socket's memory cross the inter-socket link on every
 * migration, both ways. So the executor evicts to the node nearest the GPU
 * (cudaMemLocationTypeHostNuma) and runs its threads on that node's cores.
 *
 * Two layers. The pure one works on any hwloc topology (the machine's, or
 * an XML file: that is how the tests run 2- and 4-socket machines on a
 * laptop): umadv__numa_locate finds the GPU's locality from its PCI bus
 * id, umadv__numa_choose applies UMADV_HOST_NUMA to it. The process layer
 * loads this machine's topology once and caches one placement per GPU
 * (umadv__numa_host_place), and binds the calling thread
 * (umadv__numa_bind_thread).
 *
 * Node numbers are hwloc's os indices: the kernel's node numbers, which
 * are also what CUDA's host NUMA ids and numactl use.
 */
#ifndef UMADV_NUMA_NUMA_H
#define UMADV_NUMA_NUMA_H

#include <stddef.h>

#include <hwloc.h>
#include <umadv.h>

#include "common/config.h"
#include "cuda_ops/cuda_ops.h"

/* How much hwloc knows about where a GPU is. */
typedef enum umadv_numa_where {
    UMADV_NUMA_AT_PCI,    /* found under a package (or smaller): it has a locality */
    UMADV_NUMA_AT_ROOT,   /* found, attached to the machine root: near every node */
    UMADV_NUMA_NOT_FOUND, /* hwloc sees PCI devices, not this one (a container, a VM) */
    UMADV_NUMA_NO_PCI     /* hwloc sees no PCI device at all */
} umadv_numa_where_t;

/* The part of the machine nearest a GPU. Without a locality (every case
 * but AT_PCI) it is the whole machine: every node, every core. */
typedef struct umadv_numa_locality {
    umadv_numa_where_t where;
    hwloc_obj_t        pci;      /* the GPU's PCI object; NULL unless found */
    hwloc_bitmap_t     cpuset;   /* cores near the GPU (owned) */
    hwloc_bitmap_t     nodeset;  /* NUMA nodes near the GPU, by os index (owned) */
} umadv_numa_locality_t;

/* What umadv does about it. */
typedef struct umadv_numa_place {
    hwloc_topology_t topology; /* borrowed: binding goes through it */
    int              node;     /* host node for evictions and host advice; -1: plain host */
    hwloc_bitmap_t   cpuset;   /* cores for umadv's threads (owned); NULL: unbound */
    const char      *reason;   /* why, in words, for logs and `umadv topo` (static) */
} umadv_numa_place_t;

/* Load a topology with the PCI devices that matter (GPUs among them):
 * from the XML file @xml_path, or this machine when NULL (where hwloc
 * itself honours HWLOC_XMLFILE). UMADV_ERR_IO (logged) when hwloc fails. */
umadv_status_t umadv__numa_load(const char *xml_path, hwloc_topology_t *topology_p);

/* Parse a PCI bus id as CUDA writes it, "0000:3b:00.0" (nvidia-smi's
 * eight-digit domain too). UMADV_ERR_INVALID_PARAM when it is not one. */
umadv_status_t umadv__numa_pci_parse(const char *bus_id, unsigned *domain_p, unsigned *bus_p,
                                     unsigned *dev_p, unsigned *func_p);

/* Where the GPU at @bus_id sits. A bus id hwloc does not know is not an
 * error: the locality is then the whole machine (where says why).
 * UMADV_ERR_INVALID_PARAM for a malformed bus id, UMADV_ERR_NO_MEMORY. */
umadv_status_t umadv__numa_locate(hwloc_topology_t topology, const char *bus_id,
                                  umadv_numa_locality_t *locality);

void umadv__numa_locality_clear(umadv_numa_locality_t *locality);

/* Apply @mode (UMADV_HOST_NUMA: a node number, UMADV_CONFIG_NODE_AUTO or
 * _NONE) to @locality:
 *  - auto: the nearest node; of several, the first with memory, ordinary
 *    memory (no subtype such as HBM or NVM: evictions would waste it)
 *    before special. With no locality, the only node of a one-node
 *    machine, else plain host: no node is nearer than another. Threads go
 *    on the GPU's cores;
 *  - N: node N, threads on its cores; UMADV_ERR_INVALID_PARAM (logged,
 *    naming UMADV_HOST_NUMA) when the topology has no node N;
 *  - none: plain host, threads left alone.
 * A cpuset that spans the whole machine binds nothing (NULL): binding to
 * it would only undo a narrower binding the application chose. */
umadv_status_t umadv__numa_choose(hwloc_topology_t topology,
                                  const umadv_numa_locality_t *locality, int mode,
                                  umadv_numa_place_t *place);

void umadv__numa_place_clear(umadv_numa_place_t *place);

/* The GPUs hwloc sees: NVIDIA (vendor 0x10de) 3D or VGA controllers
 * (class 0x0302, 0x0300). Start with NULL. */
hwloc_obj_t umadv__numa_next_gpu(hwloc_topology_t topology, hwloc_obj_t prev);

/* @set as a list, "0-15,32-47"; "none" when empty. Returns @buf. */
char *umadv__numa_set_format(hwloc_const_bitmap_t set, char *buf, size_t len);

/* "auto", "none" or the node number, as UMADV_HOST_NUMA is written. */
char *umadv__numa_mode_format(int mode, char *buf, size_t len);

/* ---- this process ------------------------------------------------------- */

/* This machine's placement of the GPU at @bus_id under @mode, computed
 * once per (GPU, mode) and kept for the life of the process, so every
 * context and executor of a GPU shares it. The first call loads the
 * topology (milliseconds to a few tens of them, with PCI discovery); a
 * topology that cannot be loaded, or a GPU hwloc cannot place, falls back
 * to plain host with a message at info (once). UMADV_ERR_INVALID_PARAM
 * (logged) for a node number that does not exist. Thread-safe. */
umadv_status_t umadv__numa_host_place(const char *bus_id, int mode,
                                      const umadv_numa_place_t **place_p);

/* Bind the calling thread to @place's cores, within the cores it may run
 * on now (an application's taskset is kept). No place, no cpuset, or no
 * overlap: nothing to do. A failure is a warning (once), never an error:
 * threads off their node are slower, not wrong. */
void umadv__numa_bind_thread(const umadv_numa_place_t *place);

/* The cuda_ops location of host memory under @place (NULL: plain host). */
static inline int umadv__numa_host_location(const umadv_numa_place_t *place)
{
    if (place == NULL || place->node < 0)
        return UMADV_CUDA_LOCATION_HOST;
    return UMADV_CUDA_LOCATION_HOST_NUMA(place->node);
}

#endif
