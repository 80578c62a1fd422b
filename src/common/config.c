#include "common/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "schedule/window.h"
#include "trace/trace.h"

/* A default written once, as a number in its module's header. */
#define CONFIG_STR_(_x) #_x
#define CONFIG_STR(_x)  CONFIG_STR_(_x)

static const char *policy_enum_name(unsigned value)
{
    return umadv_policy_name((umadv_policy_t)value);
}

static const char *log_enum_name(unsigned value)
{
    return umadv__log_level_name((umadv_log_level_t)value);
}

const char *umadv__config_iteration_source_name(unsigned source)
{
    static const char *const names[UMADV_ITERATION_SOURCE_COUNT] = {
        "auto", "nvtx", "optimizer", "launches"};

    return source < UMADV_ITERATION_SOURCE_COUNT ? names[source] : "?";
}

#define FIELD_AT(_member) offsetof(umadv_config_t, _member), \
                          sizeof(((umadv_config_t *)NULL)->_member)
#define FIELD(_member)        FIELD_AT(_member), 0
/* a SIZE that may be one per local rank ("8G,4G") */
#define RANKED_FIELD(_member) FIELD_AT(_member), 1

static const umadv_config_field_t config_fields[] = {
    {"UMADV_BUDGET", UMADV_CONFIG_SIZE, "0",
     "GPU memory budget: the most managed memory umadv keeps resident on the "
     "GPU, evicting to the host before it fetches beyond it. 0 means no budget "
     "(the whole GPU). A comma-separated list (8G,4G) gives each rank of a "
     "distributed job its own: the entry LOCAL_RANK indexes, from 0.",
     0, UINT64_MAX, 0, NULL, 0, RANKED_FIELD(budget)},
    {"UMADV_POLICY", UMADV_CONFIG_ENUM, "plan",
     "Placement policy. oracle: no budget, everything resident (the reference); "
     "demand: LRU eviction at step boundaries, kernels fault data in; "
     "prefetch-all: prefetch what a step uses when it starts; "
     "plan: replay the schedule planned from the profiled iteration.",
     0, 0, 0, policy_enum_name, UMADV_POLICY_COUNT, FIELD(policy)},
    {"UMADV_DEVICE", UMADV_CONFIG_UINT, "0",
     "CUDA device ordinal the context manages, as the CUDA runtime numbers "
     "devices (CUDA_VISIBLE_DEVICES applies first). Unset in a process with "
     "LOCAL_RANK set (torchrun's ranks): LOCAL_RANK, each rank its own GPU.",
     0, 1023, 0, NULL, 0, FIELD(device)},
    {"UMADV_SECTION_SIZE", UMADV_CONFIG_SIZE, "2M",
     "Section size: the unit of placement. Allocations are cut into sections "
     "and every prefetch, eviction and advice covers whole sections. A power "
     "of two.",
     UMADV_SECTION_SIZE_MIN, UMADV_SECTION_SIZE_MAX, 1, NULL, 0,
     FIELD(section_size)},
    {"UMADV_MAX_MANAGED", UMADV_CONFIG_SIZE, "0",
     "Refuse managed allocations (UMADV_ERR_LIMIT) that would take the "
     "managed memory umadv holds beyond this size. Keep it below the GPU's "
     "free memory on shared machines. 0 means no limit.",
     0, UINT64_MAX, 0, NULL, 0, FIELD(max_managed)},
    {"UMADV_ARENA_SIZE", UMADV_CONFIG_SIZE, "1G",
     "Size of each managed-memory arena the pool allocates with "
     "cudaMallocManaged and sub-allocates blocks from; larger requests get an "
     "arena of their own size. More arenas are added as needed.",
     UINT64_C(2) << 20, UINT64_C(1) << 40, 0, NULL, 0, FIELD(arena_size)},
    {"UMADV_LOOKAHEAD", UMADV_CONFIG_UINT, "0",
     "How many steps ahead of its use the plan may issue a prefetch. 0 means "
     "no limit (as early as the budget allows).",
     0, 1000000, 0, NULL, 0, FIELD(lookahead)},
    {"UMADV_READ_MOSTLY", UMADV_CONFIG_BOOL, "1",
     "Let the plan advise read-mostly on sections that the profiled "
     "iteration never wrote, so evicting them costs no copy.",
     0, 1, 0, NULL, 0, FIELD(read_mostly)},
    {"UMADV_HOST_PLACEMENT", UMADV_CONFIG_BOOL, "0",
     "Let the plan leave data on the host for the GPU to access over the "
     "link (preferred location host, accessed by the GPU) instead of "
     "migrating it. Off by default: it pays only for data a kernel streams "
     "once; a matrix product re-reads its operands, and on an H200 an MLP "
     "ran 6.5 times slower than planned with it.",
     0, 1, 0, NULL, 0, FIELD(host_placement)},
    {"UMADV_STAGE", UMADV_CONFIG_BOOL, "1",
     "Evict live data of stageable memory (the PyTorch allocator's blocks, "
     "and umadv_malloc blocks marked with umadv_set_stageable) by copying "
     "it into pinned host staging and discarding the managed range (about "
     "52 GB/s) instead of migrating it (10-18 GB/s); restored before any "
     "step that may touch it. 0: every eviction migrates.",
     0, 1, 0, NULL, 0, FIELD(stage)},
    {"UMADV_STAGE_POISON", UMADV_CONFIG_BOOL, "0",
     "Fill every range the executor discards (staged data once copied out, "
     "dead data) with 0xDB bytes first. A kernel reading a discarded range "
     "may still find its old bytes, so a read of staged data before its "
     "restore, or of data wrongly taken for dead, can go unseen; poisoned, "
     "it reads 0xDB (a CPU read may find an older host copy instead). For "
     "testing an application's declarations and umadv; costs a device "
     "memset per discard.",
     0, 1, 0, NULL, 0, FIELD(stage_poison)},
    {"UMADV_LANE_PIECE", UMADV_CONFIG_SIZE, "0",
     "Issue the lanes' discards and populations (after a staged copy out, "
     "before a copy back) in calls of at most this size while the "
     "application's thread runs, and in one call while it waits on umadv. "
     "Such a call holds up the application's CUDA calls while it runs "
     "(a kernel launch took 124 us beside a 64 MiB population, 4 alone): "
     "pieces let a launch-bound model's launches through, at the cost of "
     "the lanes' time. 0: one call each.",
     0, UINT64_MAX, 0, NULL, 0, FIELD(lane_piece)},
    {"UMADV_LOG", UMADV_CONFIG_ENUM, "warn",
     "Log level: error, warn, info, debug or trace. Each level includes "
     "the ones before it; debug and trace add file:line to every message.",
     0, 0, 0, log_enum_name, UMADV_LOG_TRACE + 1, FIELD(log_level)},
    {"UMADV_LOG_FILE", UMADV_CONFIG_STRING, "",
     "Append log messages to this file instead of standard error. Empty "
     "(the default) or \"stderr\" means standard error. A write error on "
     "the file is reported once on standard error, where the log goes on.",
     0, UMADV_CONFIG_STRING_MAX - 1, 0, NULL, 0, FIELD(log_file)},
    {"UMADV_PROFILER", UMADV_CONFIG_BOOL, "1",
     "Trace the profiling iteration with CUPTI: kernel launches become steps "
     "where the application marks none, kernel parameters and GPU page faults "
     "complete each step's access set, and replay counts faults. 0 records "
     "declared accesses only (also what happens, with a warning, when another "
     "tool holds CUPTI).",
     0, 1, 0, NULL, 0, FIELD(profiler)},
    {"UMADV_PROFILE_EVICT", UMADV_CONFIG_BOOL, "1",
     "Evict umadv allocations to the host when the profiling iteration "
     "begins, so that the first touch of every section faults and is seen "
     "(not under oracle, which moves nothing on the profile's word), and "
     "again before a launch whose parameters CUDA's layout does not explain "
     "(under oracle: nor its guessed parameter struct).",
     0, 1, 0, NULL, 0, FIELD(profile_evict)},
    {"UMADV_PROFILE_PASSES", UMADV_CONFIG_UINT, "2",
     "Iterations a profile that evicts takes (see UMADV_PROFILE_EVICT). 1: "
     "one pass that evicts every live block before each launch whose "
     "parameters cannot be scanned, then a timing pass. 2: a first pass "
     "moves nothing and takes guessed parameter structs and the steps' "
     "durations, and is the profile where a plan under the budget evicts "
     "nothing on its trace (its steps then count as guessed); else the "
     "second evicts what the first pass did not see in use (see "
     "UMADV_PROFILE_GUIDED), and no timing pass follows it.",
     1, 2, 0, NULL, 0, FIELD(profile_passes)},
    {"UMADV_PROFILE_GUIDED", UMADV_CONFIG_BOOL, "1",
     "With two passes: the second keeps on the GPU before each launch "
     "whose parameters cannot be scanned what the first saw in use there "
     "unused for less than a round trip over the link, as the launch's "
     "access, shortest gaps first, as much as the budget lets the step "
     "hold, and evicts the rest: a shorter profile (umadv(7) has the "
     "figures). 0: the second evicts every live block, as one pass does.",
     0, 1, 0, NULL, 0, FIELD(profile_guided)},
    {"UMADV_PROFILE_TAIL", UMADV_CONFIG_BOOL, "1",
     "After a profiled iteration, watch frees until the next step begins "
     "(in the timing pass, the replay that follows the launches, or with "
     "steps marked through the API): a block "
     "born in the profiled iteration and freed there, as PyTorch's "
     "gradients by the next zero_grad, is planned as dying with it, "
     "dropped where it was copied out for nothing (umadv(7) has the "
     "figures: GPT-2 20% faster, VGG-16 8% slower).",
     0, 1, 0, NULL, 0, FIELD(profile_tail)},
    {"UMADV_CALL_CENSUS", UMADV_CONFIG_BOOL, "0",
     "Count and time every CUDA runtime and driver call the application's "
     "threads make, by function, and log them at info level at each "
     "iteration's end: the calls, their time, and the eight functions that "
     "took the most (every function under the debug log). For finding where a host-bound iteration's time goes; "
     "turns every CUPTI callback on (about a microsecond a call: a "
     "launch-bound model runs up to twice as long).",
     0, 1, 0, NULL, 0, FIELD(call_census)},
    {"UMADV_LINK_PROBE", UMADV_CONFIG_BOOL, "1",
     "Measure the host-GPU link when the first context starts (prefetch "
     "bandwidth and latency each way, demand-paging bandwidth, and the staged "
     "channel's copies out to pinned memory and back where the driver has "
     "discards; a few hundred milliseconds, once per process) and plan with "
     "those numbers. 0 plans with the built-in H200 figures.",
     0, 1, 0, NULL, 0, FIELD(link_probe)},
    {"UMADV_REPROFILE_FAULTS", UMADV_CONFIG_UINT, "64",
     "Replay validation: when a replayed iteration after the first has more "
     "unexpected GPU page-fault groups than this, or than 1% of the groups "
     "the profiled iteration had if that is more, the access pattern has "
     "drifted from the profile: the next iteration is profiled again and "
     "replanned (logged at info). Demand never does. 0 never profiles again "
     "(nor after a switch from oracle's guessed profile to a policy that evicts).",
     0, 1000000000, 0, NULL, 0, FIELD(reprofile_faults)},
    {"UMADV_FAULT_PERIOD", UMADV_CONFIG_UINT, "32",
     "Replay validation counts the GPU faults of a replay's first two "
     "iterations, then of one iteration in this many: the unified-memory "
     "counters cost every kernel launch 20-40 us of host time. 1 counts "
     "every iteration, with or without a replayed schedule (benchmarks); "
     "an oracle replay counts none but then; "
     "an iteration not counted reports 0.",
     1, 1000000, 0, NULL, 0, FIELD(fault_period)},
    {"UMADV_PLAN_MAX_TOUCHES", UMADV_CONFIG_UINT, CONFIG_STR(UMADV_PLAN_MAX_TOUCHES_DEFAULT),
     "Most section touches (a step touching a run of n sections makes n) plus "
     "steps of the iteration that the planner and the simulator take; beyond "
     "it they refuse, naming this knob. Their time and memory are linear in "
     "it: about 1 us and 200 bytes each, so the default costs at most a few "
     "seconds and under 1 GB. 0 means no limit.",
     0, UINT32_MAX, 0, NULL, 0, FIELD(plan_max_touches)},
    {"UMADV_HOST_NUMA", UMADV_CONFIG_NODE, "auto",
     "Host NUMA node that evicted pages and host-preferred advice target, "
     "and whose cores umadv's migration threads run on. auto: the node "
     "nearest the GPU (hwloc: the GPU's PCI locality; of several, the first "
     "with memory), or plain host when no node is nearer than another; N: "
     "node N (an error if it does not exist); none: plain host, threads "
     "left where they are. umadv topo shows the choice.",
     0, 4095, 0, NULL, 0, FIELD(host_numa)},
    {"UMADV_ROUTE_MALLOC", UMADV_CONFIG_BOOL, "0",
     "Under the injection library (umadv run, umadv-run(1)): route the "
     "program's cudaMalloc, cudaFree, cudaMallocAsync and cudaFreeAsync "
     "into umadv's managed pool, so that device memory can be planned and "
     "evicted under the budget. Calls that cannot work on managed memory "
     "(cudaIpcGetMemHandle, cudaMemPoolExportPointer) then fail with an error "
     "naming the call. "
     "umadv run --managed-malloc sets it.",
     0, 1, 0, NULL, 0, FIELD(route_malloc)},
    {"UMADV_ITERATION_RANGE", UMADV_CONFIG_STRING, "iteration",
     "Under the injection library: the NVTX range of NVTX's default domain "
     "(pushed or started, with an ASCII or wide message of exactly this "
     "name) whose every start begins a training iteration of an unmodified "
     "program.",
     0, UMADV_CONFIG_STRING_MAX - 1, 0, NULL, 0, FIELD(iteration_range)},
    {"UMADV_ITERATION_SOURCE", UMADV_CONFIG_ENUM, "auto",
     "Under the injection library: what begins an iteration of an "
     "unmodified program. nvtx: the starts of UMADV_ITERATION_RANGE; "
     "optimizer: PyTorch's optimizer steps; launches: the repeating "
     "sequence of kernel launches (a CUDA program's launches; under "
     "PyTorch, its module calls); auto: the first of nvtx and optimizer "
     "that the program shows, the launch sequence until one does.",
     0, 0, 0, umadv__config_iteration_source_name, UMADV_ITERATION_SOURCE_COUNT,
     FIELD(iteration_source)},
    {"UMADV_PROFILE_ITERATION", UMADV_CONFIG_UINT, "1",
     "Under umadv run: which iteration found by itself (numbered from 0) "
     "is profiled; the plan is built when it ends and replayed from the "
     "next one. Iterations before it are warm-up (lazy initialisation, "
     "autotuning): they run as they would without umadv.",
     0, 1000000, 0, NULL, 0, FIELD(profile_iteration)},
    {"UMADV_INJECT_LIBRARY", UMADV_CONFIG_STRING, "",
     "The injection library (libumadv_inject.so) that umadv run's Python "
     "start-up hook loads to put umadv's allocator under PyTorch; umadv run "
     "sets it. Unset: the hook does nothing.",
     0, UMADV_CONFIG_STRING_MAX - 1, 0, NULL, 0, FIELD(inject_library)},
    {"UMADV_RUN_SUMMARY", UMADV_CONFIG_STRING, "",
     "Under the injection library: a file to which each process that used "
     "umadv appends its counters when it exits (the format is in "
     "umadv-run(1)); umadv run names one and prints it. Unset: none.",
     0, UMADV_CONFIG_STRING_MAX - 1, 0, NULL, 0, FIELD(run_summary)},
    {"UMADV_PROFILE_OUTPUT", UMADV_CONFIG_STRING, "",
     "Under the injection library: profile mode (umadv profile sets it). "
     "The iteration UMADV_PROFILE_ITERATION is profiled and its trace saved "
     "to this file when it ends, as umadv_trace_save(3) writes one; nothing "
     "is planned or replayed, and the program runs on as under oracle. "
     "Unset: umadv run's plan and replay.",
     0, UMADV_CONFIG_STRING_MAX - 1, 0, NULL, 0, FIELD(profile_output)},
    {"UMADV_PROFILE_SECONDS", UMADV_CONFIG_UINT, "",
     "Under the injection library, in profile mode (umadv profile --seconds "
     "sets it): profile a window of this many seconds of wall time instead "
     "of an iteration, for a program whose iterations umadv cannot find. "
     "The window is iteration 0: it begins when the process's context is "
     "made (the first CUDA allocation umadv sees) and ends at the first "
     "launch, allocation or iteration boundary umadv sees once the time is "
     "up, or at exit if the program ends first; its trace is saved to "
     "UMADV_PROFILE_OUTPUT. Iteration boundaries do not end it. Unset: the "
     "iteration UMADV_PROFILE_ITERATION is profiled.",
     1, 3600, 0, NULL, 0, FIELD(profile_seconds)},
    {"UMADV_TIMELINE", UMADV_CONFIG_STRING, "",
     "A file to which the context writes, when it is destroyed, the measured "
     "timeline of its replays as a Chrome trace (Perfetto, chrome://tracing): "
     "the application's steps and its waits for data by cause, each lane's "
     "migration, staging and restore calls with their bytes, the eviction "
     "lane's waits for step ends and the fetch lane's stalls for room "
     "(umadv(7), TIMELINE). Replaced only once written whole. Unset: none.",
     0, UMADV_CONFIG_STRING_MAX - 1, 0, NULL, 0, FIELD(timeline)},
};

static const char *const type_names[] = {
    [UMADV_CONFIG_SIZE]   = "size",
    [UMADV_CONFIG_UINT]   = "uint",
    [UMADV_CONFIG_ENUM]   = "enum",
    [UMADV_CONFIG_BOOL]   = "bool",
    [UMADV_CONFIG_STRING] = "string",
    [UMADV_CONFIG_NODE]   = "node",
};

const umadv_config_field_t *umadv__config_fields(size_t *count_p)
{
    *count_p = UMADV_ARRAY_SIZE(config_fields);
    return config_fields;
}

/* Sizes in bounds are written as users write them: "64K", "1G". */
static const char *size_exact_format(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTPE";
    int unit = -1;

    while (bytes != 0 && (bytes & 1023) == 0 && unit < 5) {
        bytes >>= 10;
        unit++;
    }
    if (unit < 0)
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)bytes, units[unit]);
    return buf;
}

static void size_rule(const umadv_config_field_t *field, char *why, size_t why_len)
{
    char lo[32], hi[32];

    size_exact_format(field->min, lo, sizeof(lo));
    size_exact_format(field->max, hi, sizeof(hi));
    if (field->power_of_two)
        snprintf(why, why_len, "not a power of two between %s and %s", lo, hi);
    else if (field->max == UINT64_MAX)
        snprintf(why, why_len, "not a size of at least %s", lo);
    else
        snprintf(why, why_len, "not a size between %s and %s", lo, hi);
}

static umadv_status_t parse_size(const umadv_config_field_t *field, const char *value,
                                 uint64_t *bytes_p, char *why, size_t why_len)
{
    uint64_t bytes;

    if (umadv_size_parse(value, &bytes) != UMADV_OK) {
        snprintf(why, why_len, "not a size (examples: 4096, 64K, 512M, 8G, 1.5GiB)");
        return UMADV_ERR_INVALID_PARAM;
    }
    if (bytes < field->min || bytes > field->max ||
        (field->power_of_two && (bytes & (bytes - 1)) != 0)) {
        size_rule(field, why, why_len);
        return UMADV_ERR_INVALID_PARAM;
    }
    *bytes_p = bytes;
    return UMADV_OK;
}

static umadv_status_t parse_uint(const umadv_config_field_t *field, const char *value,
                                 uint64_t *value_p, char *why, size_t why_len)
{
    unsigned long long v;
    char *end;

    /* strtoull alone would take " 5", "+5" and "-1" (as a huge number). */
    if (strspn(value, "0123456789") != strlen(value))
        goto bad;
    errno = 0;
    v = strtoull(value, &end, 10);
    if (errno != 0 || *end != '\0' || v < field->min || v > field->max)
        goto bad;
    *value_p = v;
    return UMADV_OK;
bad:
    snprintf(why, why_len, "not an integer between %llu and %llu",
             (unsigned long long)field->min, (unsigned long long)field->max);
    return UMADV_ERR_INVALID_PARAM;
}

static void enum_list(const umadv_config_field_t *field, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < field->enum_count && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? "|" : "",
                         field->enum_name(i));
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

static umadv_status_t parse_enum(const umadv_config_field_t *field, const char *value,
                                 uint64_t *value_p, char *why, size_t why_len)
{
    char names[128];

    for (unsigned i = 0; i < field->enum_count; i++) {
        if (strcasecmp(value, field->enum_name(i)) == 0) {
            *value_p = i;
            return UMADV_OK;
        }
    }
    enum_list(field, names, sizeof(names));
    snprintf(why, why_len, "not one of %s", names);
    return UMADV_ERR_INVALID_PARAM;
}

static umadv_status_t parse_bool(const char *value, uint64_t *value_p, char *why,
                                 size_t why_len)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[]  = {"0", "no", "false", "off"};

    for (size_t i = 0; i < UMADV_ARRAY_SIZE(yes); i++) {
        if (strcasecmp(value, yes[i]) == 0) {
            *value_p = 1;
            return UMADV_OK;
        }
        if (strcasecmp(value, no[i]) == 0) {
            *value_p = 0;
            return UMADV_OK;
        }
    }
    snprintf(why, why_len, "not a boolean (1/0, yes/no, true/false, on/off)");
    return UMADV_ERR_INVALID_PARAM;
}

/* The words come first, so "auto" is never read as a number; a number
 * is stored as itself, the words as their negative codes. */
static umadv_status_t parse_node(const umadv_config_field_t *field, const char *value,
                                 uint64_t *value_p, char *why, size_t why_len)
{
    if (strcasecmp(value, "auto") == 0) {
        *value_p = (uint64_t)(int64_t)UMADV_CONFIG_NODE_AUTO;
        return UMADV_OK;
    }
    if (strcasecmp(value, "none") == 0) {
        *value_p = (uint64_t)(int64_t)UMADV_CONFIG_NODE_NONE;
        return UMADV_OK;
    }
    if (parse_uint(field, value, value_p, why, why_len) == UMADV_OK)
        return UMADV_OK;
    snprintf(why, why_len, "not auto, none or a NUMA node number between %llu and %llu",
             (unsigned long long)field->min, (unsigned long long)field->max);
    return UMADV_ERR_INVALID_PARAM;
}

#define LOCAL_RANK_MAX 65535

umadv_status_t umadv__config_local_rank(int *rank_p, char *why, size_t why_len)
{
    const char *value = getenv("LOCAL_RANK");
    size_t digits;

    if (value == NULL) {
        *rank_p = -1;
        return UMADV_OK;
    }
    digits = strspn(value, "0123456789");
    if (digits == 0 || digits > 5 || value[digits] != '\0' || atoi(value) > LOCAL_RANK_MAX) {
        snprintf(why, why_len, "LOCAL_RANK=%s is not a rank (0 to %d)", value, LOCAL_RANK_MAX);
        return UMADV_ERR_INVALID_PARAM;
    }
    *rank_p = atoi(value);
    return UMADV_OK;
}

/* Entry @index of the comma-separated @list, checked as a size. */
static umadv_status_t parse_rank_entry(const umadv_config_field_t *field, const char *list,
                                       unsigned index, uint64_t *bytes_p, char *why,
                                       size_t why_len)
{
    char entry[64], reason[128];
    const char *start = list;
    size_t len;

    for (unsigned i = 0; i < index; i++)
        start = strchr(start, ',') + 1;
    len = strcspn(start, ",");
    if (len == 0 || len >= sizeof(entry)) {
        snprintf(why, why_len, "entry %u of the per-rank list is %s", index,
                 len == 0 ? "empty" : "too long");
        return UMADV_ERR_INVALID_PARAM;
    }
    snprintf(entry, sizeof(entry), "%.*s", (int)len, start);
    if (parse_size(field, entry, bytes_p, reason, sizeof(reason)) != UMADV_OK) {
        snprintf(why, why_len, "entry %u (\"%s\") of the per-rank list: %s", index, entry,
                 reason);
        return UMADV_ERR_INVALID_PARAM;
    }
    return UMADV_OK;
}

/* A per-rank list ("8G,4G"): every entry must be a size; @select takes
 * LOCAL_RANK's entry, which must exist. Without @select, the first. */
static umadv_status_t parse_rank_sizes(const umadv_config_field_t *field, const char *value,
                                       int select, uint64_t *bytes_p, char *why,
                                       size_t why_len)
{
    unsigned count = 1;
    uint64_t bytes;
    int rank = 0;

    for (const char *c = value; (c = strchr(c, ',')) != NULL; c++)
        count++;
    for (unsigned i = 0; i < count; i++) {
        if (parse_rank_entry(field, value, i, &bytes, why, why_len) != UMADV_OK)
            return UMADV_ERR_INVALID_PARAM;
    }
    if (select && umadv__config_local_rank(&rank, why, why_len) != UMADV_OK)
        return UMADV_ERR_INVALID_PARAM;
    if (select && rank < 0) {
        snprintf(why, why_len, "a per-rank list needs LOCAL_RANK (torchrun sets it); "
                 "give a single size to a process of its own");
        return UMADV_ERR_INVALID_PARAM;
    }
    if ((unsigned)rank >= count) {
        snprintf(why, why_len, "no entry for LOCAL_RANK %d (the list has %u, for local "
                 "ranks 0 to %u)", rank, count, count - 1);
        return UMADV_ERR_INVALID_PARAM;
    }
    return parse_rank_entry(field, value, (unsigned)rank, bytes_p, why, why_len);
}

/* Parse @value into *@number (SIZE, UINT, ENUM, BOOL, NODE) or check it
 * (STRING). */
static umadv_status_t field_parse(const umadv_config_field_t *field, const char *value,
                                  int select, uint64_t *number, char *why, size_t why_len)
{
    if (value[0] == '\0') {
        snprintf(why, why_len, "empty value: unset the variable for the default (%s)",
                 field->dflt[0] != '\0' ? field->dflt : "empty");
        return UMADV_ERR_INVALID_PARAM;
    }
    switch (field->type) {
    case UMADV_CONFIG_SIZE:
        if (field->per_rank && strchr(value, ',') != NULL)
            return parse_rank_sizes(field, value, select, number, why, why_len);
        return parse_size(field, value, number, why, why_len);
    case UMADV_CONFIG_UINT:
        return parse_uint(field, value, number, why, why_len);
    case UMADV_CONFIG_ENUM:
        return parse_enum(field, value, number, why, why_len);
    case UMADV_CONFIG_BOOL:
        return parse_bool(value, number, why, why_len);
    case UMADV_CONFIG_NODE:
        return parse_node(field, value, number, why, why_len);
    case UMADV_CONFIG_STRING:
        if (strlen(value) > field->max) {
            snprintf(why, why_len, "longer than %llu bytes",
                     (unsigned long long)field->max);
            return UMADV_ERR_INVALID_PARAM;
        }
        return UMADV_OK;
    }
    snprintf(why, why_len, "unknown knob type");
    return UMADV_ERR_INVALID_PARAM;
}

umadv_status_t umadv__config_check(const umadv_config_field_t *field, const char *value,
                                   char *why, size_t why_len)
{
    uint64_t number;

    return field_parse(field, value, 0, &number, why, why_len);
}

static void field_store(const umadv_config_field_t *field, umadv_config_t *config,
                        const char *value, uint64_t number)
{
    char *dst = (char *)config + field->offset;

    if (field->type == UMADV_CONFIG_STRING) {
        snprintf(dst, field->width, "%s", value);
    } else if (field->width == sizeof(uint64_t)) {
        uint64_t v = number;
        memcpy(dst, &v, sizeof(v));
    } else {
        /* int, uint32_t and the int-sized enums: bounds kept it in range
         * (NODE's negative codes keep their two's complement bits). */
        uint32_t v = (uint32_t)number;
        memcpy(dst, &v, sizeof(v));
    }
}

static umadv_status_t field_set(const umadv_config_field_t *field, umadv_config_t *config,
                                const char *value)
{
    char why[256];
    uint64_t number = 0;
    umadv_status_t status = field_parse(field, value, 1, &number, why, sizeof(why));

    if (status != UMADV_OK) {
        umadv_error("%s=%s: %s", field->name, value, why);
        return status;
    }
    field_store(field, config, value, number);
    return UMADV_OK;
}

void umadv__config_defaults(umadv_config_t *config)
{
    memset(config, 0, sizeof(*config));
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(config_fields); i++) {
        umadv_status_t status = UMADV_OK;

        if (config_fields[i].dflt[0] != '\0')
            status = field_set(&config_fields[i], config, config_fields[i].dflt);
        /* The table's defaults are ours: a bad one is a bug caught by the tests. */
        (void)status;
    }
}

#define UMADV_KNOB_PREFIX "UMADV_"

static int config_field_known(const char *name, size_t len)
{
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(config_fields); i++) {
        if (strlen(config_fields[i].name) == len && strncmp(config_fields[i].name, name, len) == 0)
            return 1;
    }
    return 0;
}

static void warn_unknown_knob(const char *name, size_t len)
{
    const char *names[UMADV_ARRAY_SIZE(config_fields) + 1];
    char word[UMADV_CONFIG_STRING_MAX];
    const char *hint;

    /* Compared without the common prefix, so that only the part that
     * differs counts towards "close enough". */
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(config_fields); i++)
        names[i] = config_fields[i].name + strlen(UMADV_KNOB_PREFIX);
    names[UMADV_ARRAY_SIZE(config_fields)] = NULL;
    snprintf(word, sizeof(word), "%.*s", (int)len, name);
    hint = umadv__suggest(word + strlen(UMADV_KNOB_PREFIX), names, sizeof(names[0]));
    if (hint != NULL)
        umadv_warn("%s is not a umadv setting and is ignored; did you mean %s%s?", word,
                   UMADV_KNOB_PREFIX, hint);
    else
        umadv_warn("%s is not a umadv setting and is ignored ('umadv info -c' lists them)",
                   word);
}

/* A misspelled knob (UMADV_BUDGT=8G) would otherwise be ignored silently
 * and the job run with the default. Warned once per process: contexts and
 * commands may load the configuration more than once. */
static void warn_unknown_knobs(void)
{
    extern char **environ;
    static int warned;

    if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        return;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        size_t len = strcspn(*e, "=");

        if (strncmp(*e, UMADV_KNOB_PREFIX, strlen(UMADV_KNOB_PREFIX)) == 0 &&
            !config_field_known(*e, len))
            warn_unknown_knob(*e, len);
    }
}

/* UMADV_DEVICE unset, LOCAL_RANK set: the rank's GPU, as launchers
 * that start one process per GPU number them. */
static umadv_status_t device_from_local_rank(umadv_config_t *config)
{
    char why[160];
    int rank;

    if (getenv("UMADV_DEVICE") != NULL)
        return UMADV_OK;
    if (umadv__config_local_rank(&rank, why, sizeof(why)) != UMADV_OK) {
        umadv_error("%s (UMADV_DEVICE, unset, follows it; set UMADV_DEVICE)", why);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (rank > 1023) {
        umadv_error("LOCAL_RANK=%d: beyond device 1023 (UMADV_DEVICE, unset, follows it; "
                    "set UMADV_DEVICE)", rank);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (rank >= 0)
        config->device = rank;
    return UMADV_OK;
}

umadv_status_t umadv__config_load(umadv_config_t *config)
{
    umadv_config_t loaded;

    warn_unknown_knobs();

    umadv__config_defaults(&loaded);
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(config_fields); i++) {
        const char *value = getenv(config_fields[i].name);
        umadv_status_t status;

        if (value == NULL)
            continue;
        status = field_set(&config_fields[i], &loaded, value);
        if (status != UMADV_OK)
            return status;
    }
    if (device_from_local_rank(&loaded) != UMADV_OK)
        return UMADV_ERR_INVALID_PARAM;
    *config = loaded;
    return UMADV_OK;
}

umadv_status_t umadv__config_set(umadv_config_t *config, const char *name,
                                 const char *value)
{
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(config_fields); i++) {
        if (strcmp(config_fields[i].name, name) == 0)
            return field_set(&config_fields[i], config, value);
    }
    return UMADV_ERR_NOT_FOUND;
}

umadv_status_t umadv__config_apply_log(const umadv_config_t *config)
{
    umadv__log_level = config->log_level;
    if (config->log_file[0] == '\0')
        return UMADV_OK;
    if (umadv__log_set_file(config->log_file) != 0) {
        umadv_error("UMADV_LOG_FILE=%s: cannot open for appending: %m", config->log_file);
        return UMADV_ERR_INVALID_PARAM; /* a value we cannot use, like any bad knob */
    }
    return UMADV_OK;
}

/* Write @text indented, wrapped at @width columns. */
static void print_wrapped(FILE *stream, const char *indent, const char *text, int width)
{
    int column = 0;

    while (*text != '\0') {
        int word = (int)strcspn(text, " ");

        if (column == 0) {
            column = fprintf(stream, "%s", indent);
        } else if (column + 1 + word > width) {
            fputc('\n', stream);
            column = fprintf(stream, "%s", indent);
        } else {
            column += fprintf(stream, " ");
        }
        column += fprintf(stream, "%.*s", word, text);
        text += word;
        while (*text == ' ')
            text++;
    }
    if (column != 0)
        fputc('\n', stream);
}

static void print_rule(FILE *stream, const umadv_config_field_t *field)
{
    char rule[160];

    switch (field->type) {
    case UMADV_CONFIG_SIZE:
        if (field->min == 0 && field->max == UINT64_MAX)
            snprintf(rule, sizeof(rule), "a size: 4096, 64K, 512M, 8G, 1.5GiB");
        else
            size_rule(field, rule, sizeof(rule));
        if (strncmp(rule, "not ", 4) == 0)
            memmove(rule, rule + 4, strlen(rule + 4) + 1);
        if (field->per_rank)
            snprintf(rule + strlen(rule), sizeof(rule) - strlen(rule),
                     "; or one per LOCAL_RANK, separated by commas: 8G,4G");
        break;
    case UMADV_CONFIG_UINT:
        snprintf(rule, sizeof(rule), "an integer between %llu and %llu",
                 (unsigned long long)field->min, (unsigned long long)field->max);
        break;
    case UMADV_CONFIG_ENUM:
        enum_list(field, rule, sizeof(rule));
        break;
    case UMADV_CONFIG_BOOL:
        snprintf(rule, sizeof(rule), "1/0, yes/no, true/false, on/off");
        break;
    case UMADV_CONFIG_STRING:
        snprintf(rule, sizeof(rule), "a string of at most %llu bytes",
                 (unsigned long long)field->max);
        break;
    case UMADV_CONFIG_NODE:
        snprintf(rule, sizeof(rule), "auto, none or a NUMA node number between %llu and %llu",
                 (unsigned long long)field->min, (unsigned long long)field->max);
        break;
    }
    fprintf(stream, "    accepts: %s\n", rule);
}

static void print_field(FILE *stream, const umadv_config_field_t *field)
{
    const char *value = getenv(field->name);
    char why[160], current[UMADV_CONFIG_STRING_MAX + 200];

    if (value == NULL)
        snprintf(current, sizeof(current), "(unset)");
    else if (umadv__config_check(field, value, why, sizeof(why)) != UMADV_OK)
        snprintf(current, sizeof(current), "\"%s\" (bad value: %s)", value, why);
    else
        snprintf(current, sizeof(current), "%s", value);
    fprintf(stream, "%-20s %-7s %-10s %s\n", field->name, type_names[field->type],
            field->dflt[0] != '\0' ? field->dflt : "\"\"", current);
    print_wrapped(stream, "    ", field->doc, 78);
    print_rule(stream, field);
}

void umadv__config_print(FILE *stream)
{
    fprintf(stream, "%-20s %-7s %-10s %s\n", "VARIABLE", "TYPE", "DEFAULT", "VALUE");
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(config_fields); i++) {
        if (i != 0)
            fputc('\n', stream);
        print_field(stream, &config_fields[i]);
    }
}
