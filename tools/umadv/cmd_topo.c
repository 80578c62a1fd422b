/*
 * umadv topo: where each GPU sits and where umadv will put host memory and
 * its threads for it, under the current UMADV_HOST_NUMA. On this machine
 * the GPUs are the CUDA devices; with --xml, a topology saved elsewhere
 * (`lstopo --of xml`) is read and its GPUs are the NVIDIA display and 3D
 * controllers among its PCI devices, so a placement can be checked before
 * the job lands on the server. No GPU is a normal answer.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/util.h"
#include "cuda_ops/cuda_ops.h"
#include "json.h"
#include "numa/numa.h"

enum { OPT_XML, OPT_JSON };

const umadv_cli_option_t umadv__cli_topo_options[] = {
    [OPT_XML]  = {"xml", 'x', "FILE", "read the topology from an hwloc XML file"},
    [OPT_JSON] = {"json", 0, NULL, "write JSON instead of text"},
    {NULL, 0, NULL, NULL}
};

/* One GPU and what umadv makes of it. */
typedef struct topo_gpu {
    int                   device;     /* CUDA ordinal; -1 from the XML */
    char                  name[96];   /* "" from the XML */
    char                  bus_id[32];
    umadv_numa_locality_t locality;
    umadv_numa_place_t    place;
} topo_gpu_t;

typedef struct topo {
    const char      *xml;      /* NULL: this machine */
    int              json;
    int              mode;     /* UMADV_HOST_NUMA */
    hwloc_topology_t topology;
    topo_gpu_t      *gpus;
    size_t           ngpus, gpus_cap;
    const char      *no_gpu;   /* why there are none, when there are none */
} topo_t;

/* ---- collecting --------------------------------------------------------- */

static int gpu_add(topo_t *t, int device, const char *name, const char *bus_id)
{
    topo_gpu_t *g;

    if (umadv__array_reserve((void **)&t->gpus, &t->gpus_cap, t->ngpus + 1,
                             sizeof(*t->gpus)) != UMADV_OK)
        return umadv__cli_fail("out of memory");
    g = &t->gpus[t->ngpus];
    memset(g, 0, sizeof(*g));
    g->device = device;
    snprintf(g->name, sizeof(g->name), "%s", name);
    snprintf(g->bus_id, sizeof(g->bus_id), "%s", bus_id);
    if (umadv__numa_locate(t->topology, bus_id, &g->locality) != UMADV_OK)
        return umadv__cli_fail("cannot place gpu %s", bus_id);
    if (umadv__numa_choose(t->topology, &g->locality, t->mode, &g->place) != UMADV_OK) {
        umadv__numa_locality_clear(&g->locality);
        return umadv__cli_fail("cannot apply UMADV_HOST_NUMA to gpu %s", bus_id);
    }
    t->ngpus++;
    return UMADV_EXIT_OK;
}

static int gpus_from_xml(topo_t *t)
{
    char bus_id[32];

    for (hwloc_obj_t o = umadv__numa_next_gpu(t->topology, NULL); o != NULL;
         o = umadv__numa_next_gpu(t->topology, o)) {
        const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
        snprintf(bus_id, sizeof(bus_id), "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev,
                 p->func);
        if (gpu_add(t, -1, "", bus_id) != UMADV_EXIT_OK)
            return UMADV_EXIT_FAILURE;
    }
    if (t->ngpus == 0)
        t->no_gpu = hwloc_get_next_pcidev(t->topology, NULL) != NULL ?
                    "no nvidia gpu among the topology's pci devices" :
                    "the topology has no pci devices";
    return UMADV_EXIT_OK;
}

/* The driver is asked first, as umadv info does: without one it answers
 * 0 quietly, where a device count would log an error. */
static int gpus_from_cuda(topo_t *t)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_cudart;
    umadv_device_props_t props;
    int driver = 0, count = 0;

    if (ops->driver_version(&driver) != UMADV_OK || driver == 0) {
        t->no_gpu = "no cuda driver is installed";
        return UMADV_EXIT_OK;
    }
    if (ops->device_count(&count) != UMADV_OK) {
        t->no_gpu = "no usable cuda device";
        return UMADV_EXIT_OK;
    }
    for (int d = 0; d < count; d++) {
        if (ops->get_device_props(d, &props) != UMADV_OK)
            return umadv__cli_fail("cannot read the properties of cuda device %d", d);
        if (gpu_add(t, d, props.name, props.pci_bus_id) != UMADV_EXIT_OK)
            return UMADV_EXIT_FAILURE;
    }
    return UMADV_EXIT_OK;
}

/* A node that does not exist is the user's error: said before anything
 * is printed, naming the knob. */
static int mode_check(const topo_t *t)
{
    char nodes[128];

    if (t->mode < 0 ||
        hwloc_get_numanode_obj_by_os_index(t->topology, (unsigned)t->mode) != NULL)
        return UMADV_EXIT_OK;
    return umadv__cli_fail("UMADV_HOST_NUMA=%d: %s has no numa node %d (nodes: %s)", t->mode,
                           t->xml != NULL ? t->xml : "this machine", t->mode,
                           umadv__numa_set_format(
                               hwloc_topology_get_topology_nodeset(t->topology), nodes,
                               sizeof(nodes)));
}

/* ---- words ---------------------------------------------------------------- */

static const char *where_word(umadv_numa_where_t where)
{
    static const char *const words[] = {
        [UMADV_NUMA_AT_PCI] = "pci", [UMADV_NUMA_AT_ROOT] = "root",
        [UMADV_NUMA_NOT_FOUND] = "not-found", [UMADV_NUMA_NO_PCI] = "no-pci",
    };
    return words[where];
}

/* What the GPU hangs from: "Package 1", "the machine root"... */
static char *attachment(const topo_t *t, const topo_gpu_t *g, char *buf, size_t len)
{
    hwloc_obj_t above;

    switch (g->locality.where) {
    case UMADV_NUMA_AT_PCI:
        above = hwloc_get_non_io_ancestor_obj(t->topology, g->locality.pci);
        snprintf(buf, len, "%s %u", hwloc_obj_type_string(above->type), above->os_index);
        break;
    case UMADV_NUMA_AT_ROOT:
        snprintf(buf, len, "the machine root (no locality)");
        break;
    case UMADV_NUMA_NOT_FOUND:
        snprintf(buf, len, "not in the topology's pci tree");
        break;
    case UMADV_NUMA_NO_PCI:
        snprintf(buf, len, "unknown: the topology has no pci devices");
        break;
    }
    return buf;
}

static char *memory_word(const umadv_numa_place_t *place, char *buf, size_t len)
{
    if (place->node >= 0)
        snprintf(buf, len, "numa node %d", place->node);
    else
        snprintf(buf, len, "plain host");
    return buf;
}

/* A node hung on the machine itself, beside others, has no cores of its
 * own (CXL memory, say): its cpuset is everyone's. */
static int machine_wide(const topo_t *t, hwloc_obj_t node)
{
    return node->parent == hwloc_get_root_obj(t->topology) &&
           hwloc_get_nbobjs_by_type(t->topology, HWLOC_OBJ_NUMANODE) > 1;
}

/* ---- text ------------------------------------------------------------------ */

static void text_node(const topo_t *t, hwloc_obj_t node)
{
    char size[32], cores[256];
    uint64_t memory = node->attr->numanode.local_memory;

    printf("  node %u: %s%s%s, cores %s%s\n", node->os_index,
           memory > 0 ? umadv__size_format(memory, size, sizeof(size)) : "no memory",
           node->subtype != NULL ? " " : "", node->subtype != NULL ? node->subtype : "",
           umadv__numa_set_format(node->cpuset, cores, sizeof(cores)),
           machine_wide(t, node) ? " (machine-wide: none of its own)" : "");
}

static void text_gpu(const topo_t *t, const topo_gpu_t *g)
{
    char buf[256], memory[32];

    if (g->device >= 0)
        printf("  gpu %d: %s, pci %s\n", g->device, g->name, g->bus_id);
    else
        printf("  gpu %s [%04x:%04x]\n", g->bus_id, g->locality.pci->attr->pcidev.vendor_id,
               g->locality.pci->attr->pcidev.device_id);
    printf("    attached to:        %s\n", attachment(t, g, buf, sizeof(buf)));
    printf("    nearest numa nodes: %s\n",
           umadv__numa_set_format(g->locality.nodeset, buf, sizeof(buf)));
    printf("    nearest cores:      %s\n",
           umadv__numa_set_format(g->locality.cpuset, buf, sizeof(buf)));
    printf("    host memory:        %s (%s)\n", memory_word(&g->place, memory, sizeof(memory)),
           g->place.reason);
    if (g->place.cpuset != NULL)
        printf("    umadv threads:      cores %s\n",
               umadv__numa_set_format(g->place.cpuset, buf, sizeof(buf)));
    else
        printf("    umadv threads:      unbound\n");
}

static void text_print(const topo_t *t)
{
    char mode[16];
    const char *env = getenv("HWLOC_XMLFILE");
    int nnodes = hwloc_get_nbobjs_by_type(t->topology, HWLOC_OBJ_NUMANODE);

    if (t->xml != NULL)
        printf("topology: %s (hwloc xml)\n", t->xml);
    else if (env != NULL && env[0] != '\0')
        printf("topology: this machine, as HWLOC_XMLFILE=%s describes it\n", env);
    else
        printf("topology: this machine\n");
    printf("host memory policy: UMADV_HOST_NUMA=%s\n",
           umadv__numa_mode_format(t->mode, mode, sizeof(mode)));
    printf("numa nodes: %d\n", nnodes);
    for (int i = 0; i < nnodes; i++)
        text_node(t, hwloc_get_obj_by_type(t->topology, HWLOC_OBJ_NUMANODE, (unsigned)i));
    if (t->ngpus == 0) {
        printf("gpus: none (%s)\n", t->no_gpu);
        return;
    }
    printf("gpus: %zu\n", t->ngpus);
    for (size_t i = 0; i < t->ngpus; i++)
        text_gpu(t, &t->gpus[i]);
}

/* ---- json ------------------------------------------------------------------ */

static void json_set(umadv_json_t *js, const char *key, hwloc_const_bitmap_t set)
{
    char buf[256];

    umadv__json_string(js, key, set != NULL ? umadv__numa_set_format(set, buf, sizeof(buf))
                                            : NULL);
}

static void json_node(umadv_json_t *js, hwloc_obj_t node)
{
    umadv__json_begin_object_inline(js, NULL);
    umadv__json_u64(js, "node", node->os_index);
    umadv__json_u64(js, "memory", node->attr->numanode.local_memory);
    umadv__json_string(js, "subtype", node->subtype);
    json_set(js, "cores", node->cpuset);
    umadv__json_end_object(js);
}

static void json_gpu(umadv_json_t *js, const topo_gpu_t *g)
{
    unsigned i;

    umadv__json_begin_object(js, NULL);
    if (g->device >= 0)
        umadv__json_u64(js, "device", (uint64_t)g->device);
    else
        umadv__json_string(js, "device", NULL);
    umadv__json_string(js, "name", g->device >= 0 ? g->name : NULL);
    umadv__json_string(js, "pci_bus_id", g->bus_id);
    umadv__json_string(js, "located", where_word(g->locality.where));
    umadv__json_begin_array(js, "nearest_nodes");
    hwloc_bitmap_foreach_begin(i, g->locality.nodeset) {
        umadv__json_u64(js, NULL, i);
    } hwloc_bitmap_foreach_end();
    umadv__json_end_array(js);
    json_set(js, "nearest_cores", g->locality.cpuset);
    if (g->place.node >= 0)
        umadv__json_u64(js, "host_node", (uint64_t)g->place.node);
    else
        umadv__json_string(js, "host_node", NULL);
    umadv__json_string(js, "reason", g->place.reason);
    json_set(js, "thread_cores", g->place.cpuset);
    umadv__json_end_object(js);
}

static void json_print(const topo_t *t)
{
    umadv_json_t js;
    char mode[16];
    int nnodes = hwloc_get_nbobjs_by_type(t->topology, HWLOC_OBJ_NUMANODE);

    umadv__json_init(&js, stdout);
    umadv__json_begin_object(&js, NULL);
    umadv__json_string(&js, "topology", t->xml);
    umadv__json_string(&js, "host_numa", umadv__numa_mode_format(t->mode, mode, sizeof(mode)));
    umadv__json_begin_array(&js, "numa_nodes");
    for (int i = 0; i < nnodes; i++)
        json_node(&js, hwloc_get_obj_by_type(t->topology, HWLOC_OBJ_NUMANODE, (unsigned)i));
    umadv__json_end_array(&js);
    umadv__json_begin_array(&js, "gpus");
    for (size_t i = 0; i < t->ngpus; i++)
        json_gpu(&js, &t->gpus[i]);
    umadv__json_end_array(&js);
    umadv__json_string(&js, "no_gpu", t->ngpus == 0 ? t->no_gpu : NULL);
    umadv__json_end_object(&js);
}

/* ---- the command ------------------------------------------------------------ */

static int parse_args(const umadv_cli_command_t *cmd, int argc, char **argv, topo_t *t)
{
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;

    umadv__cli_parser_init(&parser, cmd, argc, argv);
    for (;;) {
        switch (umadv__cli_next(&parser, &opt, &value)) {
        case UMADV_CLI_END:
            return -1;
        case UMADV_CLI_HELP:
            umadv__cli_print_help(cmd, stdout);
            return UMADV_EXIT_OK;
        case UMADV_CLI_OPTION:
            if (opt == &umadv__cli_topo_options[OPT_XML])
                t->xml = value;
            else
                t->json = 1;
            break;
        case UMADV_CLI_ARG:
            return umadv__cli_usage_error(cmd, "'topo' takes no arguments, got '%s'", value);
        case UMADV_CLI_ERROR:
            return UMADV_EXIT_USAGE;
        }
    }
}

static void topo_cleanup(topo_t *t)
{
    for (size_t i = 0; i < t->ngpus; i++) {
        umadv__numa_place_clear(&t->gpus[i].place);
        umadv__numa_locality_clear(&t->gpus[i].locality);
    }
    free(t->gpus);
    if (t->topology != NULL)
        hwloc_topology_destroy(t->topology);
}

/* main.c has checked every knob already; this reads them for the mode. */
int umadv__cmd_topo(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    topo_t t = {0};
    umadv_config_t config;
    int rc = parse_args(cmd, argc, argv, &t);

    if (rc >= 0)
        return rc;
    if (umadv__config_load(&config) != UMADV_OK)
        return UMADV_EXIT_FAILURE;
    t.mode = config.host_numa;
    if (t.xml != NULL && umadv__cli_input(t.xml) != 0)
        return UMADV_EXIT_FAILURE;
    if (umadv__numa_load(t.xml, &t.topology) != UMADV_OK)
        return UMADV_EXIT_FAILURE; /* logged, with hwloc's reason */
    rc = mode_check(&t);
    if (rc == UMADV_EXIT_OK)
        rc = t.xml != NULL ? gpus_from_xml(&t) : gpus_from_cuda(&t);
    if (rc == UMADV_EXIT_OK)
        (t.json ? json_print : text_print)(&t);
    topo_cleanup(&t);
    return rc;
}
