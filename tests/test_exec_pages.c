/*
 * Where the executor last left pages (exec/pages.c): an entry per
 * section start, valid for ranges no longer than recorded; a later note
 * replaces an earlier one; the table grows without losing entries.
 */
#include <stdlib.h>

#include "common/util.h"
#include "exec/exec_int.h"
#include "tap.h"

#define SECTION (UINT64_C(2) << 20)
#define MANY    5000 /* several doublings past the first 1024 slots */

static uintptr_t section(size_t i)
{
    return (uintptr_t)0x7f0000000000ull + (uintptr_t)(i * SECTION);
}

static void test_lookup(void)
{
    exec_pages_t m = {0};

    ok(!umadv__exec_pages_on_gpu(&m, section(0), SECTION), "empty: nothing is on the gpu");
    umadv__exec_pages_note(&m, section(0), SECTION, 1);
    umadv__exec_pages_note(&m, section(1), SECTION / 2, 1);
    ok(umadv__exec_pages_on_gpu(&m, section(0), SECTION) &&
       umadv__exec_pages_on_gpu(&m, section(0), SECTION / 4),
       "a fetched section, and a shorter range from its start, are on the gpu");
    ok(!umadv__exec_pages_on_gpu(&m, section(1), SECTION),
       "a range longer than the one recorded is not");
    ok(!umadv__exec_pages_on_gpu(&m, section(0) + 4096, 4096),
       "an address inside a section is not a key: not known");
    umadv__exec_pages_note(&m, section(0), SECTION, 0);
    ok(!umadv__exec_pages_on_gpu(&m, section(0), SECTION) && m.count == 2,
       "evicted since: not on the gpu, the entry replaced (%zu entries)", m.count);
    umadv__exec_pages_note(&m, 0, SECTION, 1);
    ok(m.count == 2, "address 0 (an empty slot's mark) is never recorded");
    umadv__exec_pages_cleanup(&m);
}

static void test_growth(void)
{
    exec_pages_t m = {0};
    size_t found = 0;

    for (size_t i = 0; i < MANY; i++)
        umadv__exec_pages_note(&m, section(i), SECTION, i % 3 != 0);
    for (size_t i = 0; i < MANY; i++)
        found += umadv__exec_pages_on_gpu(&m, section(i), SECTION) == (i % 3 != 0);
    is_u64(found, MANY, "%d sections noted: every one answers as noted", MANY);
    ok(m.count == MANY && 2 * m.count <= m.cap,
       "at most half full after growing (%zu of %zu slots)", m.count, m.cap);
    umadv__exec_pages_cleanup(&m);
    ok(m.slots == NULL && m.cap == 0 && m.count == 0, "cleanup empties it");
}

int main(void)
{
    plan(9);
    test_lookup();
    test_growth();
    return exit_status();
}
