/*
 * NUMA placement on machines we do not have: the hwloc XML fixtures in
 * tests/numa (a 2-socket and a 4-socket server with GPUs on different
 * sockets, a machine whose PCI tree is hidden, a GPU with no locality, a
 * one-node VM). For every GPU of every fixture: where it is, its local
 * nodes and cores, and what UMADV_HOST_NUMA=auto, N and none choose.
 * Expected values come from how each fixture is built (its <info> says),
 * and the choices are also checked against properties of the topology:
 * the chosen node is local to the GPU, has memory, its cores are the
 * GPU's. Then the knob's parsing, and the process-wide cache through
 * HWLOC_XMLFILE, as hwloc itself reads it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "numa/numa.h"
#include "tap.h"
#include "testutil.h"

static hwloc_topology_t fixture(const char *name)
{
    const char *srcdir = getenv("top_srcdir");
    char path[4096];
    hwloc_topology_t topology = NULL;

    snprintf(path, sizeof(path), "%s/tests/numa/%s", srcdir != NULL ? srcdir : ".", name);
    ok(umadv__numa_load(path, &topology) == UMADV_OK, "%s loads", name);
    return topology;
}

static void skip_n(int n, const char *reason)
{
    while (n-- > 0)
        skip(reason, "not run");
}

static const char *set_text(hwloc_const_bitmap_t set)
{
    static char buf[8][128];
    static int next;
    char *b = buf[next++ % 8];

    return set == NULL ? "(null)" : umadv__numa_set_format(set, b, sizeof(buf[0]));
}

/* The GPUs of @topology as "bus,bus". */
static const char *gpu_list(hwloc_topology_t topology)
{
    static char buf[256];
    size_t used = 0;

    buf[0] = '\0';
    for (hwloc_obj_t g = umadv__numa_next_gpu(topology, NULL); g != NULL;
         g = umadv__numa_next_gpu(topology, g)) {
        const struct hwloc_pcidev_attr_s *p = &g->attr->pcidev;
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%04x:%02x:%02x.%x",
                                 used ? "," : "", p->domain, p->bus, p->dev, p->func);
    }
    return buf;
}

typedef struct expect {
    const char        *bus_id;
    umadv_numa_where_t where;
    const char        *nodes;     /* local nodes */
    const char        *cores;     /* local cores */
    int                node;      /* auto's node, -1: plain host */
    const char        *bind;      /* auto's cores, "(null)": unbound */
} expect_t;

/* auto's node, when it picks one, is local, and no local node ranks
 * above it: has memory if any local node has. */
static int auto_is_sound(hwloc_topology_t t, const umadv_numa_locality_t *loc,
                         const umadv_numa_place_t *place)
{
    hwloc_obj_t chosen;
    unsigned i;
    int any_memory = 0;

    if (place->node < 0)
        return 1;
    chosen = hwloc_get_numanode_obj_by_os_index(t, (unsigned)place->node);
    if (chosen == NULL || !hwloc_bitmap_isset(loc->nodeset, (unsigned)place->node))
        return 0;
    hwloc_bitmap_foreach_begin(i, loc->nodeset) {
        any_memory |= hwloc_get_numanode_obj_by_os_index(t, i)->attr->numanode.local_memory > 0;
    } hwloc_bitmap_foreach_end();
    return !any_memory || chosen->attr->numanode.local_memory > 0;
}

static void check_gpu(hwloc_topology_t t, const char *fixture_name, const expect_t *x)
{
    umadv_numa_locality_t loc;
    umadv_numa_place_t place;

    if (umadv__numa_locate(t, x->bus_id, &loc) != UMADV_OK) {
        ok(0, "%s %s: located", fixture_name, x->bus_id);
        skip_n(3, "not located");
        return;
    }
    ok(loc.where == x->where && (loc.pci != NULL) == (x->where <= UMADV_NUMA_AT_ROOT),
       "%s %s: where %d (want %d)", fixture_name, x->bus_id, loc.where, x->where);
    ok(strcmp(set_text(loc.nodeset), x->nodes) == 0 && strcmp(set_text(loc.cpuset), x->cores) == 0,
       "%s %s: local nodes %s (want %s), cores %s (want %s)", fixture_name, x->bus_id,
       set_text(loc.nodeset), x->nodes, set_text(loc.cpuset), x->cores);
    is(umadv__numa_choose(t, &loc, UMADV_CONFIG_NODE_AUTO, &place), UMADV_OK, "auto chooses");
    ok(place.node == x->node && strcmp(set_text(place.cpuset), x->bind) == 0 &&
       auto_is_sound(t, &loc, &place) && place.reason != NULL && place.topology == t,
       "%s %s: auto -> node %d (want %d), threads on %s (want %s): %s", fixture_name,
       x->bus_id, place.node, x->node, set_text(place.cpuset), x->bind, place.reason);
    umadv__numa_place_clear(&place);
    umadv__numa_locality_clear(&loc);
}

/* N picks node N and its cores, none picks nothing, a node that does
 * not exist is an error naming the knob. */
static void check_modes(hwloc_topology_t t, const char *name, const char *bus_id, int node,
                        const char *node_cores, int missing)
{
    umadv_numa_locality_t loc;
    umadv_numa_place_t place;
    char *log;

    if (umadv__numa_locate(t, bus_id, &loc) != UMADV_OK) {
        skip_n(6, "not located");
        return;
    }
    is(umadv__numa_choose(t, &loc, node, &place), UMADV_OK, "%s: UMADV_HOST_NUMA=%d", name, node);
    ok(place.node == node && strcmp(set_text(place.cpuset), node_cores) == 0,
       "%s: =%d -> node %d, threads on %s (want %s)", name, node, place.node,
       set_text(place.cpuset), node_cores);
    umadv__numa_place_clear(&place);
    is(umadv__numa_choose(t, &loc, UMADV_CONFIG_NODE_NONE, &place), UMADV_OK, "none chooses");
    ok(place.node == -1 && place.cpuset == NULL, "%s: none -> plain host, unbound", name);
    umadv__numa_place_clear(&place);
    log_take();
    memset(&place, 0x5a, sizeof(place));
    is(umadv__numa_choose(t, &loc, missing, &place), UMADV_ERR_INVALID_PARAM,
       "%s: a node that does not exist (%d) is refused", name, missing);
    log = log_take();
    if (!ok(strstr(log, "UMADV_HOST_NUMA=") != NULL && strstr(log, "no numa node") != NULL &&
            place.node == 0x5a5a5a5a, "the error names the knob, the output is untouched"))
        diag("log: %s", log);
    umadv__numa_locality_clear(&loc);
}

static void test_2socket(void)
{
    static const expect_t gpus[] = {
        {"0000:18:00.0", UMADV_NUMA_AT_PCI, "0", "0-3,8-11", 0, "0-3,8-11"},
        {"0000:ca:00.0", UMADV_NUMA_AT_PCI, "1", "4-7,12-15", 1, "4-7,12-15"},
    };
    hwloc_topology_t t = fixture("2socket.xml");

    if (t == NULL) {
        skip_n(4 * 2 + 2 + 6, "no fixture");
        return;
    }
    is_str(gpu_list(t), "0000:18:00.0,0000:ca:00.0",
           "2socket: the two H100s are the GPUs, not the NIC nor the Matrox display");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(gpus); i++)
        check_gpu(t, "2socket", &gpus[i]);
    /* The Matrox display is a PCI device: found, with its socket's locality. */
    umadv_numa_locality_t loc;
    ok(umadv__numa_locate(t, "0000:cb:00.0", &loc) == UMADV_OK && loc.where == UMADV_NUMA_AT_PCI &&
       hwloc_bitmap_isset(loc.nodeset, 1), "any pci device is located, GPU or not");
    umadv__numa_locality_clear(&loc);
    check_modes(t, "2socket gpu on socket 0, memory on 1", "0000:18:00.0", 1, "4-7,12-15", 2);
    hwloc_topology_destroy(t);
}

static void test_4socket(void)
{
    static const expect_t gpus[] = {
        /* socket 1 is split in halves: node 1 (no memory), node 2 */
        {"0000:3b:00.0", UMADV_NUMA_AT_PCI, "1-2", "8-15", 2, "8-15"},
        /* socket 3: CPU-less HBM node 4 first, DRAM node 5 */
        {"0000:d8:00.0", UMADV_NUMA_AT_PCI, "4-5", "24-31", 5, "24-31"},
    };
    hwloc_topology_t t = fixture("4socket.xml");

    if (t == NULL) {
        skip_n(4 * 2 + 1 + 6 + 6, "no fixture");
        return;
    }
    is_str(gpu_list(t), "0000:3b:00.0,0000:d8:00.0", "4socket: GPUs on sockets 1 and 3");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(gpus); i++)
        check_gpu(t, "4socket", &gpus[i]);
    /* The CXL node hangs off the machine: its cores are everyone's, so
     * choosing it binds nothing; the HBM node's are its socket's. */
    check_modes(t, "4socket CXL node", "0000:3b:00.0", 6, "(null)", 7);
    check_modes(t, "4socket HBM node", "0000:d8:00.0", 4, "24-31", 4095);
    hwloc_topology_destroy(t);
}

static void test_nopci(void)
{
    static const expect_t gpu = {"0000:18:00.0", UMADV_NUMA_NO_PCI, "0-1", "0-7", -1, "(null)"};
    hwloc_topology_t t = fixture("nopci.xml");

    if (t == NULL) {
        skip_n(4 + 1 + 6, "no fixture");
        return;
    }
    is_str(gpu_list(t), "", "nopci: no GPU visible");
    check_gpu(t, "nopci", &gpu);
    check_modes(t, "nopci", "0000:18:00.0", 1, "4-7", 2);
    hwloc_topology_destroy(t);
}

static void test_rootgpu(void)
{
    static const expect_t gpus[] = {
        {"0000:01:00.0", UMADV_NUMA_AT_ROOT, "0-1", "0-7", -1, "(null)"},
        {"0000:02:00.0", UMADV_NUMA_NOT_FOUND, "0-1", "0-7", -1, "(null)"},
    };
    hwloc_topology_t t = fixture("rootgpu.xml");

    if (t == NULL) {
        skip_n(4 * 2 + 1 + 6, "no fixture");
        return;
    }
    is_str(gpu_list(t), "0000:01:00.0", "rootgpu: one GPU");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(gpus); i++)
        check_gpu(t, "rootgpu", &gpus[i]);
    check_modes(t, "rootgpu", "0000:01:00.0", 0, "0-3", 5);
    hwloc_topology_destroy(t);
}

/* One node: every GPU is near it, even without a locality (the GPU
 * machine, a VM, is built like this). Its cores are the machine's. */
static void test_vm(void)
{
    static const expect_t gpu = {"0000:00:05.0", UMADV_NUMA_AT_ROOT, "0", "0-3", 0, "(null)"};
    hwloc_topology_t t = fixture("vm.xml");

    if (t == NULL) {
        skip_n(4 + 1, "no fixture");
        return;
    }
    is_str(gpu_list(t), "0000:00:05.0", "vm: one GPU");
    check_gpu(t, "vm", &gpu);
    hwloc_topology_destroy(t);
}

static void test_pci_parse(void)
{
    static const char *const bad[] = {
        "", "3b:00.0", "0000:3b:00.0x", " 0000:3b:00.0", "0000:3b:20.0", "0000:3b:00.8",
        "0000:13b:00.0", "0000:-3:00.0", "0x00:3b:00.0", "0000:3b:00",
    };
    unsigned d = 9, b = 9, v = 9, f = 9;
    int all_bad = 1;

    ok(umadv__numa_pci_parse("0000:3b:1f.7", &d, &b, &v, &f) == UMADV_OK && d == 0 &&
       b == 0x3b && v == 0x1f && f == 7, "cuda's bus id parses");
    ok(umadv__numa_pci_parse("00000001:CA:00.0", &d, &b, &v, &f) == UMADV_OK && d == 1 &&
       b == 0xca, "nvidia-smi's eight-digit domain, upper case");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(bad); i++) {
        if (umadv__numa_pci_parse(bad[i], &d, &b, &v, &f) != UMADV_ERR_INVALID_PARAM) {
            diag("\"%s\" accepted", bad[i]);
            all_bad = 0;
        }
    }
    ok(all_bad, "malformed bus ids are refused");
}

static void test_knob(void)
{
    static const struct { const char *value; int want; } good[] = {
        {"auto", UMADV_CONFIG_NODE_AUTO}, {"AUTO", UMADV_CONFIG_NODE_AUTO},
        {"none", UMADV_CONFIG_NODE_NONE}, {"0", 0}, {"3", 3}, {"4095", 4095},
    };
    static const char *const bad[] = {"", "-1", "x", "1.5", "4096", " 1", "autox", "0x1"};
    umadv_config_t c;
    int all_good = 1, all_bad = 1;

    env_clear();
    umadv__config_defaults(&c);
    is(c.host_numa, UMADV_CONFIG_NODE_AUTO, "UMADV_HOST_NUMA defaults to auto");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(good); i++) {
        setenv("UMADV_HOST_NUMA", good[i].value, 1);
        if (umadv__config_load(&c) != UMADV_OK || c.host_numa != good[i].want) {
            diag("UMADV_HOST_NUMA=%s: got %d", good[i].value, c.host_numa);
            all_good = 0;
        }
    }
    ok(all_good, "auto, none and node numbers parse");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(bad); i++) {
        char *log;

        setenv("UMADV_HOST_NUMA", bad[i], 1);
        log_take();
        if (umadv__config_load(&c) != UMADV_ERR_INVALID_PARAM ||
            strstr(log = log_take(), "UMADV_HOST_NUMA=") == NULL) {
            diag("UMADV_HOST_NUMA=\"%s\" not refused by name", bad[i]);
            all_bad = 0;
        }
    }
    ok(all_bad, "bad values are errors naming UMADV_HOST_NUMA");
    env_clear();
}

/* The process layer reads the machine through hwloc, which honours
 * HWLOC_XMLFILE: the 2-socket fixture stands in for this machine. */
static void test_host_place(void)
{
    const char *srcdir = getenv("top_srcdir");
    const umadv_numa_place_t *a = NULL, *b = NULL, *c = NULL;
    char path[4096];

    snprintf(path, sizeof(path), "%s/tests/numa/2socket.xml", srcdir != NULL ? srcdir : ".");
    setenv("HWLOC_XMLFILE", path, 1);
    is(umadv__numa_host_place("0000:ca:00.0", UMADV_CONFIG_NODE_AUTO, &a), UMADV_OK,
       "host place of the socket-1 GPU");
    ok(a != NULL && a->node == 1 && strcmp(set_text(a->cpuset), "4-7,12-15") == 0,
       "HWLOC_XMLFILE is this machine: node 1, cores 4-7,12-15");
    umadv__numa_host_place("0000:ca:00.0", UMADV_CONFIG_NODE_AUTO, &b);
    umadv__numa_host_place("0000:ca:00.0", UMADV_CONFIG_NODE_NONE, &c);
    ok(a == b && c != a && c->node == -1, "one place per gpu and mode, kept");
    is(umadv__numa_host_place("0000:ca:00.0", 9, &c), UMADV_ERR_INVALID_PARAM,
       "a node this machine lacks is an error here too");
    is(umadv__numa_host_location(a), UMADV_CUDA_LOCATION_HOST_NUMA(1),
       "evictions name host numa node 1");
    is(umadv__numa_host_location(NULL), UMADV_CUDA_LOCATION_HOST, "no place: plain host");
    is_str(umadv__cuda_location_name(umadv__numa_host_location(a), path, sizeof(path)),
           "host numa 1", "the location has a name for logs");
    umadv__numa_bind_thread(a); /* not this system: hwloc binds nothing, and says so fine */
    unsetenv("HWLOC_XMLFILE");
}

int main(void)
{
    log_capture_start();
    plan(86);
    test_pci_parse();
    test_2socket();
    test_4socket();
    test_nopci();
    test_rootgpu();
    test_vm();
    test_knob();
    test_host_place();
    log_capture_stop();
    return exit_status();
}
