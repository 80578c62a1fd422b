/*
 * Where the pages under an address range are, as far as the executor
 * knows: the GPU after one of its fetches completed there, the host after
 * one of its evictions did.
 *
 * WHY. Section states follow trace allocations, and a block that plays
 * one starts as HOST when it is bound. But the pool hands out the memory
 * of freed blocks again, and a block freed on the GPU (dropped: dead, no
 * copy) leaves its pages there. Without this record every new tensor of a
 * PyTorch iteration was fetched again: on ResNet-50, 19 GiB of calls per
 * iteration over pages already on the GPU, 40 ms of waiting under the
 * oracle policy alone. Bound over a range recorded on the GPU, a block
 * starts RESIDENT (exec.c, umadv__exec_bind), within the budget.
 *
 * A hint, never a promise: faults, the CPU and the driver move pages
 * without telling us. A wrong GPU entry costs the faults a fetch would
 * have spared, never data. Entries are exact: keyed by a section's start,
 * valid for ranges no longer than the one recorded.
 */
#include "exec/exec_int.h"

#include <stdlib.h>

#define PAGES_MIN_CAP 1024

static size_t slot_of(uintptr_t addr, size_t cap)
{
    /* Sections start at least 4 KiB apart: the page number, mixed. */
    return (size_t)(((uint64_t)addr >> 12) * UINT64_C(0x9e3779b97f4a7c15) >> 32) & (cap - 1);
}

static exec_page_t *find(const exec_pages_t *m, uintptr_t addr)
{
    if (m->cap == 0)
        return NULL;
    for (size_t i = slot_of(addr, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].addr == addr)
            return &m->slots[i];
        if (m->slots[i].addr == 0)
            return NULL;
    }
}

static void put(exec_pages_t *m, const exec_page_t *entry)
{
    size_t i = slot_of(entry->addr, m->cap);

    while (m->slots[i].addr != 0 && m->slots[i].addr != entry->addr)
        i = (i + 1) & (m->cap - 1);
    m->count += m->slots[i].addr == 0;
    m->slots[i] = *entry;
}

/* Twice the slots (at least PAGES_MIN_CAP), every entry moved. */
static umadv_status_t grow(exec_pages_t *m)
{
    exec_pages_t bigger = {.cap = m->cap ? 2 * m->cap : PAGES_MIN_CAP};

    bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
    if (bigger.slots == NULL)
        return UMADV_ERR_NO_MEMORY;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].addr != 0)
            put(&bigger, &m->slots[i]);
    }
    free(m->slots);
    *m = bigger;
    return UMADV_OK;
}

void umadv__exec_pages_note(exec_pages_t *m, uintptr_t addr, uint64_t len, int on_gpu)
{
    exec_page_t entry = {.addr = addr, .len = len, .on_gpu = (uint8_t)(on_gpu != 0)};
    exec_page_t *known = find(m, addr);

    if (addr == 0)
        return;
    if (known != NULL) {
        *known = entry;
        return;
    }
    /* Out of memory: the entry is missing, which only costs a fetch (and
     * the table never fills, so a probe always ends). */
    if (2 * (m->count + 1) > m->cap && grow(m) != UMADV_OK)
        return;
    put(m, &entry);
}

int umadv__exec_pages_on_gpu(const exec_pages_t *m, uintptr_t addr, uint64_t len)
{
    const exec_page_t *entry = find(m, addr);

    return entry != NULL && entry->on_gpu && entry->len >= len;
}

void umadv__exec_pages_cleanup(exec_pages_t *m)
{
    free(m->slots);
    *m = (exec_pages_t){0};
}
