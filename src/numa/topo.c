/*
 * Where a GPU sits: its PCI object in an hwloc topology, the first CPU-side
 * object above it (a package, a die, a group...), and the NUMA nodes and
 * cores local to that. Pure functions of the topology, so an XML file of
 * any machine tests them.
 */
#include "numa/numa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_CLASS_VGA     0x0300
#define PCI_CLASS_3D      0x0302

umadv_status_t umadv__numa_load(const char *xml_path, hwloc_topology_t *topology_p)
{
    hwloc_topology_t topology;

    if (hwloc_topology_init(&topology) != 0) {
        umadv_error("hwloc_topology_init failed: %m");
        return UMADV_ERR_NO_MEMORY;
    }
    if (xml_path != NULL && hwloc_topology_set_xml(topology, xml_path) != 0) {
        umadv_error("hwloc cannot read the topology in %s: %m", xml_path);
        goto err_destroy;
    }
    /* I/O objects are filtered out by default: the GPUs' PCI objects are
     * the whole point here. IMPORTANT keeps GPUs without every bridge. */
    hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topology) != 0) {
        umadv_error("hwloc cannot load the topology of %s: %m",
                    xml_path != NULL ? xml_path : "this machine");
        goto err_destroy;
    }
    *topology_p = topology;
    return UMADV_OK;

err_destroy:
    hwloc_topology_destroy(topology);
    return UMADV_ERR_IO;
}

umadv_status_t umadv__numa_pci_parse(const char *bus_id, unsigned *domain_p, unsigned *bus_p,
                                     unsigned *dev_p, unsigned *func_p)
{
    unsigned domain, bus, dev, func;
    int end = 0;

    if (bus_id == NULL ||
        sscanf(bus_id, "%x:%x:%x.%x%n", &domain, &bus, &dev, &func, &end) != 4 ||
        bus_id[end] != '\0' || strspn(bus_id, "0123456789abcdefABCDEF:.") != (size_t)end ||
        bus > 0xff || dev > 0x1f || func > 0x7)
        return UMADV_ERR_INVALID_PARAM;
    *domain_p = domain;
    *bus_p    = bus;
    *dev_p    = dev;
    *func_p   = func;
    return UMADV_OK;
}

hwloc_obj_t umadv__numa_next_gpu(hwloc_topology_t topology, hwloc_obj_t prev)
{
    hwloc_obj_t obj = prev;

    while ((obj = hwloc_get_next_pcidev(topology, obj)) != NULL) {
        const struct hwloc_pcidev_attr_s *pci = &obj->attr->pcidev;
        if (pci->vendor_id == PCI_VENDOR_NVIDIA &&
            (pci->class_id == PCI_CLASS_3D || pci->class_id == PCI_CLASS_VGA))
            return obj;
    }
    return NULL;
}

/* Nodes listed by hwloc for @cpuset under @flags, added to @nodeset;
 * returns how many. */
static unsigned local_nodes(hwloc_topology_t topology, hwloc_bitmap_t cpuset,
                            unsigned long flags, hwloc_bitmap_t nodeset)
{
    struct hwloc_location where = {.type = HWLOC_LOCATION_TYPE_CPUSET};
    int total = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
    hwloc_obj_t *nodes = calloc(total > 0 ? (size_t)total : 1, sizeof(*nodes));
    unsigned n = total > 0 ? (unsigned)total : 0;

    if (nodes == NULL)
        return 0;
    where.location.cpuset = cpuset;
    if (hwloc_get_local_numanode_objs(topology, &where, &n, nodes, flags) != 0)
        n = 0;
    for (unsigned i = 0; i < n; i++)
        hwloc_bitmap_set(nodeset, nodes[i]->os_index);
    free(nodes);
    return n;
}

/* The nodes of the smallest locality in @nodeset: of the nodes whose
 * locality contains the GPU's, the nearest are the tightest. */
static void keep_tightest(hwloc_topology_t topology, hwloc_bitmap_t nodeset)
{
    int best = -1;
    unsigned i;

    hwloc_bitmap_foreach_begin(i, nodeset) {
        hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topology, i);
        int weight = hwloc_bitmap_weight(node->cpuset);
        if (best < 0 || weight < best)
            best = weight;
    } hwloc_bitmap_foreach_end();
    hwloc_bitmap_foreach_begin(i, nodeset) {
        hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topology, i);
        if (hwloc_bitmap_weight(node->cpuset) != best)
            hwloc_bitmap_clr(nodeset, i);
    } hwloc_bitmap_foreach_end();
}

/* Nodes attached at the GPU's object or inside it (a package split into
 * sub-NUMA clusters); failing that, the nearest of those around it (a
 * GPU attached below its node, to a cache or group). */
static void locality_nodes(hwloc_topology_t topology, umadv_numa_locality_t *locality)
{
    if (local_nodes(topology, locality->cpuset, HWLOC_LOCAL_NUMANODE_FLAG_SMALLER_LOCALITY,
                    locality->nodeset) > 0)
        return;
    if (local_nodes(topology, locality->cpuset, HWLOC_LOCAL_NUMANODE_FLAG_LARGER_LOCALITY,
                    locality->nodeset) > 0)
        keep_tightest(topology, locality->nodeset);
}

/* Where @pci hangs; the whole machine when it hangs off the root. */
static umadv_numa_where_t pci_where(hwloc_topology_t topology, hwloc_obj_t pci,
                                    hwloc_obj_t *ancestor_p)
{
    hwloc_obj_t root = hwloc_get_root_obj(topology);
    hwloc_obj_t ancestor = pci != NULL ? hwloc_get_non_io_ancestor_obj(topology, pci) : NULL;

    *ancestor_p = root;
    if (pci == NULL)
        return hwloc_get_next_pcidev(topology, NULL) != NULL ? UMADV_NUMA_NOT_FOUND
                                                              : UMADV_NUMA_NO_PCI;
    if (ancestor == NULL || ancestor == root ||
        hwloc_bitmap_isequal(ancestor->cpuset, root->cpuset))
        return UMADV_NUMA_AT_ROOT;
    *ancestor_p = ancestor;
    return UMADV_NUMA_AT_PCI;
}

umadv_status_t umadv__numa_locate(hwloc_topology_t topology, const char *bus_id,
                                  umadv_numa_locality_t *locality)
{
    unsigned domain, bus, dev, func;
    umadv_numa_locality_t loc = {0};
    hwloc_obj_t ancestor;

    if (umadv__numa_pci_parse(bus_id, &domain, &bus, &dev, &func) != UMADV_OK) {
        umadv_error("'%s' is not a pci bus id (domain:bus:device.function)",
                    bus_id != NULL ? bus_id : "(null)");
        return UMADV_ERR_INVALID_PARAM;
    }
    loc.pci = hwloc_get_pcidev_by_busid(topology, domain, bus, dev, func);
    loc.where = pci_where(topology, loc.pci, &ancestor);
    loc.cpuset = hwloc_bitmap_dup(ancestor->cpuset);
    loc.nodeset = hwloc_bitmap_alloc();
    if (loc.cpuset == NULL || loc.nodeset == NULL) {
        umadv__numa_locality_clear(&loc);
        return UMADV_ERR_NO_MEMORY;
    }
    if (loc.where == UMADV_NUMA_AT_PCI)
        locality_nodes(topology, &loc);
    else
        hwloc_bitmap_copy(loc.nodeset, hwloc_topology_get_topology_nodeset(topology));
    *locality = loc;
    return UMADV_OK;
}

void umadv__numa_locality_clear(umadv_numa_locality_t *locality)
{
    hwloc_bitmap_free(locality->cpuset);
    hwloc_bitmap_free(locality->nodeset);
    memset(locality, 0, sizeof(*locality));
}

char *umadv__numa_set_format(hwloc_const_bitmap_t set, char *buf, size_t len)
{
    if (set == NULL || hwloc_bitmap_iszero(set))
        snprintf(buf, len, "none");
    else
        hwloc_bitmap_list_snprintf(buf, len, set);
    return buf;
}

char *umadv__numa_mode_format(int mode, char *buf, size_t len)
{
    if (mode == UMADV_CONFIG_NODE_AUTO)
        snprintf(buf, len, "auto");
    else if (mode == UMADV_CONFIG_NODE_NONE)
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "%d", mode);
    return buf;
}
