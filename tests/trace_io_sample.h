/*
 * Shared by the trace I/O tests: a hand-built trace that uses every field
 * of the format, and a deep comparison of two traces.
 */
#ifndef UMADV_TESTS_TRACE_IO_SAMPLE_H
#define UMADV_TESTS_TRACE_IO_SAMPLE_H

#include <stdio.h>
#include <string.h>

#include "trace/trace.h"

/* Strings that need every escape the format has: quotes, backslashes,
 * newlines, tabs, carriage returns, other control bytes, bytes that are
 * not UTF-8, and real UTF-8 that must pass through unescaped. */
static const char *const sample_tags[] = {
    NULL, "", "conv1.weight \"w\"", "back\\slash\\", "new\nline\ttab\rcr",
    "ctl\x01\x1f\x7f", "bad utf8 \xff\xfe\xc0\xaf", "gr\xc3\xb6\xc3\x9f" "e \xe2\x82\xac",
};

static int sample_add_allocs(umadv_trace_t *t)
{
    static const struct {
        uint64_t base, size;
        uint32_t alloc_step, free_step;
    } a[] = {
        {0x7f0000000000ull, 3 * 65536 + 1, UMADV_STEP_NONE, UMADV_STEP_NONE},
        {0x7f0000100000ull, 65536, 0, UMADV_STEP_NONE},
        {0x7f0000200000ull, 10 * 65536, UMADV_STEP_NONE, 2},
        {0x7f0000300000ull, 1, 1, 3},
        {0, 2 * 65536, 1, 1},
        {0xfffffffffffe0000ull, 65536, UMADV_STEP_NONE, UMADV_STEP_NONE},
        {0x1000, 5 * 65536 - 7, 0, 4},
        {0x2000, 65536 * 4, 2, 4},
    };
    uint32_t id;

    for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
        umadv_alloc_kind_t kind = (umadv_alloc_kind_t)(i % UMADV_ALLOC_KIND_COUNT);
        if (umadv__trace_add_alloc(t, a[i].base, a[i].size, kind, sample_tags[i], &id) != 0 ||
            umadv__trace_set_lifetime(t, id, a[i].alloc_step, a[i].free_step) != 0)
            return -1;
        t->allocs[id].stageable = i % 3 == 1; /* some stageable, most not */
    }
    return 0;
}

/* Five steps over two iterations, every step kind and access mode. */
static int sample_add_steps(umadv_trace_t *t)
{
    static const char *const names[] = {"gemm<float, \"tn\">", NULL, "memcpy\\HtoD\n", "",
                                        "relu_bwd"};
    static const umadv_step_kind_t kinds[] = {UMADV_STEP_KERNEL, UMADV_STEP_LAYER,
                                              UMADV_STEP_COPY, UMADV_STEP_KERNEL,
                                              UMADV_STEP_LAYER};
    static const uint32_t iters[] = {0, 0, 0, 1, 1};
    static const uint64_t durations[] = {1234567, 0, UMADV_TRACE_IO_MAX_STEP_NS, 42, 1000000000000ull};
    static const uint64_t host[] = {0, 17, UMADV_TRACE_IO_MAX_STEP_NS, 250000, 0}; /* 0: absent */
    static const uint32_t acc[][6] = { /* step, alloc, first, count, mode, faults */
        {0, 0, 0, 4, UMADV_ACCESS_READ, 3}, {0, 1, 0, 1, UMADV_ACCESS_WRITE, 0},
        {0, 2, 2, 3, UMADV_ACCESS_RW, 4000000000u}, {0, 6, 4, 1, UMADV_ACCESS_READ, 1},
        {1, 3, 0, 1, UMADV_ACCESS_RW, 1}, {1, 4, 0, 2, UMADV_ACCESS_WRITE, 2},
        {1, 5, 0, 1, UMADV_ACCESS_READ, 0},
        {3, 0, 3, 1, UMADV_ACCESS_WRITE, 7}, {3, 7, 0, 4, UMADV_ACCESS_RW, 0},
        {4, 6, 0, 2, UMADV_ACCESS_READ, 0}, {4, 6, 3, 2, UMADV_ACCESS_WRITE, 9},
    };
    size_t next = 0;

    for (uint32_t s = 0; s < 5; s++) {
        if (umadv__trace_add_step(t, names[s], kinds[s], iters[s], durations[s], NULL) != 0)
            return -1;
        t->steps[s].host_ns = host[s];
        for (; next < sizeof(acc) / sizeof(acc[0]) && acc[next][0] == s; next++)
            if (umadv__trace_add_access_sections(t, acc[next][1], acc[next][2], acc[next][3],
                                                 acc[next][4], acc[next][5]) != 0)
                return -1;
    }
    return 0;
}

/* A finalized trace with 64 KiB sections that uses every field. */
static int sample_build(umadv_trace_t *t)
{
    umadv_device_desc_t *d = &t->device;

    if (umadv__trace_init(t, 65536) != 0 ||
        umadv__trace_set_source(t, "hand-built \"sample\"\\ with\nnewline") != 0)
        return -1;
    snprintf(d->name, sizeof(d->name), "NVIDIA H200 \"NVL\" \\ \xc3\xa9");
    snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "00000000:9A:00.0");
    d->memory = 150754820096ull;
    d->cc_major = 9;
    d->cc_minor = 0;
    d->driver_version = 13000;
    /* Doubles that %.6g would not round-trip, a subnormal and a zero,
     * and both ends of the plausible bandwidths (trace.h). */
    t->link.fetch_bw = 52e9 / 3.0;
    t->link.fetch_latency = 0.1;
    t->link.evict_bw = 1000000.0000000001;
    t->link.evict_latency = 4.9406564584124654e-324;
    t->link.fault_bw = UMADV_LINK_BW_MIN;
    t->link.fault_latency = 0.0;
    t->link.remote_bw = UMADV_LINK_BW_MAX;
    t->link.duplex_fetch_bw = 9.5e9;
    t->link.duplex_evict_bw = UMADV_LINK_BW_MIN;
    t->link.stage_evict_bw = 45e9 / 7.0;
    t->link.stage_evict_latency = 3.3e-5;
    t->link.stage_restore_bw = UMADV_LINK_BW_MAX;
    t->link.stage_restore_latency = UMADV_LINK_LATENCY_MAX;
    t->link.stage_duplex_evict_bw = 31e9 / 3.0;
    t->link.stage_duplex_restore_bw = UMADV_LINK_BW_MIN;
    if (sample_add_allocs(t) != 0 || sample_add_steps(t) != 0)
        return -1;
    return umadv__trace_finalize(t, NULL, 0) == 0 ? 0 : -1;
}

static int str_same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int alloc_same(const umadv_trace_alloc_t *a, const umadv_trace_alloc_t *b)
{
    return a->base == b->base && a->size == b->size && a->kind == b->kind &&
           a->alloc_step == b->alloc_step && a->free_step == b->free_step &&
           a->first_section == b->first_section && a->nsections == b->nsections &&
           a->stageable == b->stageable && str_same(a->tag, b->tag);
}

static int step_same(const umadv_trace_step_t *a, const umadv_trace_step_t *b)
{
    return str_same(a->name, b->name) && a->kind == b->kind &&
           a->iteration == b->iteration && a->duration_ns == b->duration_ns &&
           a->host_ns == b->host_ns &&
           a->first_access == b->first_access && a->naccesses == b->naccesses;
}

/* NULL when @a and @b hold the same trace, else what differs first.
 * Doubles are compared bit for bit: the format promises exact round trips. */
static const char *trace_diff(const umadv_trace_t *a, const umadv_trace_t *b)
{
    if (memcmp(&a->device, &b->device, sizeof(a->device)) != 0)
        return "device";
    if (memcmp(&a->link, &b->link, sizeof(a->link)) != 0)
        return "link";
    if (a->section_size != b->section_size || !str_same(a->source, b->source))
        return "section size or source";
    if (a->nallocs != b->nallocs || a->nsections != b->nsections || a->nsteps != b->nsteps ||
        a->naccesses != b->naccesses || a->niterations != b->niterations ||
        a->finalized != b->finalized)
        return "counts";
    for (uint32_t i = 0; i < a->nallocs; i++)
        if (!alloc_same(&a->allocs[i], &b->allocs[i]))
            return "an allocation";
    if (a->nsections && memcmp(a->sections, b->sections, a->nsections * sizeof(*a->sections)))
        return "sections";
    for (uint32_t i = 0; i < a->nsteps; i++)
        if (!step_same(&a->steps[i], &b->steps[i]))
            return "a step";
    if (a->naccesses && memcmp(a->accesses, b->accesses, a->naccesses * sizeof(*a->accesses)))
        return "accesses";
    return NULL;
}

#endif
