/*
 * common/util: UTF-8 validation against an independent decoder over every
 * sequence of up to three bytes (and every 4-byte lead with its second and
 * third bytes), size parsing and formatting, CRC-32 against published
 * check values, growing arrays (geometric growth, contents kept,
 * overflow refused with nothing changed), and common/hostmem's aligned
 * mappings, populated on threads (every page resident after, mincore),
 * and the host memory it can spare, from /proc/meminfo's text.
 */
#include "common/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/hostmem.h"

#include "tap.h"

/* ---- UTF-8 ----------------------------------------------------------- */

/* RFC 3629 by decoding: the lead byte's bit pattern gives the length,
 * continuation bytes are 10xxxxxx, and the decoded value must need that
 * many bytes and be a Unicode scalar value. Deliberately not written like
 * the range tables of umadv__utf8_valid_len. */
static size_t ref_utf8_len(const unsigned char *p, size_t avail)
{
    uint32_t cp, min;
    size_t n;

    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xe0) == 0xc0) {
        n = 2, cp = p[0] & 0x1f, min = 0x80;
    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3, cp = p[0] & 0x0f, min = 0x800;
    } else if ((p[0] & 0xf8) == 0xf0) {
        n = 4, cp = p[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* Compares both on @p with every @avail from 1 to @len; counts mismatches
 * and shows the first. */
static unsigned utf8_compare(const unsigned char *p, size_t len, unsigned *shown)
{
    unsigned bad = 0;

    for (size_t avail = 1; avail <= len; avail++) {
        size_t got = umadv__utf8_valid_len(p, avail), want = ref_utf8_len(p, avail);
        if (got == want)
            continue;
        if ((*shown)++ == 0)
            diag("%02x %02x %02x %02x (avail %zu): got %zu, expected %zu", p[0],
                 len > 1 ? p[1] : 0, len > 2 ? p[2] : 0, len > 3 ? p[3] : 0, avail, got, want);
        bad++;
    }
    return bad;
}

static void test_utf8_exhaustive(void)
{
    static const unsigned char fourth[] = {0x00, 0x7f, 0x80, 0x8f, 0x90, 0xbf, 0xc0, 0xff};
    unsigned char s[4];
    unsigned bad = 0, shown = 0, valid3 = 0;

    for (uint32_t v = 0; v < (UINT32_C(1) << 24); v++) {
        s[0] = (unsigned char)(v >> 16), s[1] = (unsigned char)(v >> 8), s[2] = (unsigned char)v;
        bad += utf8_compare(s, 3, &shown);
        valid3 += s[0] >= 0xe0 && umadv__utf8_valid_len(s, 3) == 3;
    }
    is(bad, 0, "every 1- to 3-byte sequence judged as a decoder would");
    /* 0x800..0xffff less the 2048 surrogates. */
    is(valid3, 0x10000 - 0x800 - 0x800, "exactly the 3-byte scalar values accepted");

    bad = shown = 0;
    for (uint32_t v = 0; v < (UINT32_C(8) << 16); v++) {
        s[0] = (unsigned char)(0xf0 + (v >> 16)), s[1] = (unsigned char)(v >> 8);
        s[2] = (unsigned char)v;
        for (size_t i = 0; i < UMADV_ARRAY_SIZE(fourth); i++) {
            s[3] = fourth[i];
            bad += utf8_compare(s, 4, &shown);
        }
    }
    is(bad, 0, "4-byte leads judged as a decoder would");
}

static void test_utf8_cases(void)
{
    is(umadv__utf8_valid_len((const unsigned char *)"\xe2\x82\xac", 3), 3, "euro sign: 3");
    is(umadv__utf8_valid_len((const unsigned char *)"\xe2\x82\xac", 2), 0,
       "a sequence cut by @avail is refused");
    is(umadv__utf8_valid_len((const unsigned char *)"\xf4\x8f\xbf\xbf", 4), 4, "U+10FFFF: 4");
    is(umadv__utf8_valid_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0,
       "U+110000 refused");
    is(umadv__utf8_valid_len((const unsigned char *)"\xed\xa0\x80", 3), 0,
       "surrogate U+D800 refused");
    is(umadv__utf8_valid_len((const unsigned char *)"\xc0\xaf", 2), 0, "overlong '/' refused");
    is(umadv__utf8_valid_len((const unsigned char *)"\xe0\x80\xaf", 3), 0,
       "3-byte overlong refused");
}

/* ---- sizes ----------------------------------------------------------- */

static void expect_size(const char *text, uint64_t want)
{
    uint64_t got = 0;
    umadv_status_t status = umadv_size_parse(text, &got);

    ok(status == UMADV_OK && got == want, "\"%s\" is %llu (status %d, got %llu)", text,
       (unsigned long long)want, status, (unsigned long long)got);
}

static void expect_size_bad(const char *text)
{
    uint64_t got = 12345;
    umadv_status_t status = umadv_size_parse(text, &got);

    ok(status == UMADV_ERR_INVALID_PARAM && got == 12345,
       "\"%s\" refused, output untouched (status %d)", text ? text : "(null)", status);
}

static void test_size_parse(void)
{
    expect_size("0", 0);
    expect_size("4096", 4096);
    expect_size("64k", 64 * UMADV_KIB);
    expect_size("64 KiB", 64 * UMADV_KIB);
    expect_size("1.5GiB", 3 * UMADV_GIB / 2);
    expect_size("8gb", 8 * UMADV_GIB);
    expect_size("16777215T", (uint64_t)16777215 << 40);
    expect_size("0.5k", 512);
    expect_size_bad(NULL);
    expect_size_bad("");
    expect_size_bad("-1");
    expect_size_bad("+1");
    expect_size_bad("1.5");
    expect_size_bad("16777216T"); /* 2^64 */
    expect_size_bad("8X");
    expect_size_bad("inf");
    expect_size_bad("nan");
    expect_size_bad(" 8");
}

static void test_size_format(void)
{
    char buf[32], tiny[4];

    is_str(umadv__size_format(0, buf, sizeof(buf)), "0 B", "0 bytes");
    is_str(umadv__size_format(1023, buf, sizeof(buf)), "1023 B", "under 1 KiB in bytes");
    is_str(umadv__size_format(1024, buf, sizeof(buf)), "1.00 KiB", "1 KiB");
    is_str(umadv__size_format(3 * UMADV_GIB / 2, buf, sizeof(buf)), "1.50 GiB", "1.5 GiB");
    is_str(umadv__size_format(UMADV_MIB - 1, buf, sizeof(buf)), "1024.00 KiB",
           "rounding stays in the unit chosen");
    is_str(umadv__size_format(UMADV_GIB << 21, buf, sizeof(buf)), "2048.00 TiB",
           "TiB is the largest unit");
    ok(umadv__size_format(UMADV_MIB, tiny, sizeof(tiny)) == tiny && strlen(tiny) == 3,
       "a short buffer is filled and terminated, and returned");
    /* Parsing what was formatted gives the value back when it is exact. */
    expect_size(umadv__size_format(5 * UMADV_MIB / 4, buf, sizeof(buf)), 5 * UMADV_MIB / 4);
}

/* ---- CRC-32 ---------------------------------------------------------- */

static void test_crc32(void)
{
    static const char fox[] = "The quick brown fox jumps over the lazy dog";

    is_u64(umadv__crc32(0, "123456789", 9), 0xcbf43926u, "check value of \"123456789\"");
    is_u64(umadv__crc32(0, fox, strlen(fox)), 0x414fa339u, "check value of the fox sentence");
    is_u64(umadv__crc32(0, "", 0), 0, "empty input: 0");
    is_u64(umadv__crc32(umadv__crc32(0, "1234", 4), "56789", 5), 0xcbf43926u,
           "continued over two pieces, the same");
    ok(umadv__crc32(0, "123456788", 9) != 0xcbf43926u, "one changed byte changes it");
}

/* ---- growing arrays -------------------------------------------------- */

static void test_array_reserve(void)
{
    uint32_t *a = NULL, *before;
    size_t cap = 0, keep_cap;
    int intact = 1;

    is(umadv__array_reserve((void **)&a, &cap, 1, sizeof(*a)), UMADV_OK, "first reserve");
    ok(a != NULL && cap >= 1, "memory given (capacity %zu)", cap);
    before = a;
    keep_cap = cap;
    is(umadv__array_reserve((void **)&a, &cap, cap, sizeof(*a)), UMADV_OK,
       "reserve within capacity");
    ok(a == before && cap == keep_cap, "within capacity nothing moves");
    for (size_t i = 0; i < cap; i++)
        a[i] = (uint32_t)(i * 2654435761u);
    keep_cap = cap;
    is(umadv__array_reserve((void **)&a, &cap, 1000 * keep_cap + 1, sizeof(*a)), UMADV_OK,
       "large reserve");
    ok(cap >= 1000 * keep_cap + 1 && cap <= 2 * (1000 * keep_cap + 1),
       "grown to at least the need, at most twice it (capacity %zu)", cap);
    for (size_t i = 0; i < keep_cap; i++)
        intact &= a[i] == (uint32_t)(i * 2654435761u);
    ok(intact, "contents kept across growth");

    before = a;
    keep_cap = cap;
    is(umadv__array_reserve((void **)&a, &cap, SIZE_MAX / 2 + 2, 1), UMADV_ERR_NO_MEMORY,
       "a capacity past SIZE_MAX refused");
    is(umadv__array_reserve((void **)&a, &cap, SIZE_MAX / sizeof(*a) + 1, sizeof(*a)),
       UMADV_ERR_NO_MEMORY, "a byte count past SIZE_MAX refused");
    ok(a == before && cap == keep_cap, "refusals change nothing");
    free(a);
}

static void test_strdup(void)
{
    char *copy = (char *)1;
    const char *s = "tag";

    is(umadv__strdup(NULL, &copy), UMADV_OK, "NULL copies");
    ok(copy == NULL, "to NULL");
    is(umadv__strdup(s, &copy), UMADV_OK, "a string copies");
    ok(copy != s && copy != NULL && strcmp(copy, s) == 0, "to an equal, separate string");
    free(copy);
}

/* ---- host memory --------------------------------------------------- */

/* Pages of [@p, @p + @size) resident now. */
static size_t resident_pages(void *p, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = size / page, resident = 0;
    unsigned char *v = malloc(n);

    if (v == NULL || mincore(p, size, v) != 0) {
        free(v);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        resident += v[i] & 1;
    free(v);
    return resident;
}

static void test_hostmem(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 160 * UMADV_MIB, align = 2 * UMADV_MIB;
    unsigned threads;
    char *p;

    ok(umadv__page_round(1) == page && umadv__page_round(page) == page &&
           umadv__page_round(page + 1) == 2 * page && umadv__page_round(0) == 0,
       "sizes round up to whole pages");
    p = umadv__map_aligned(size, align);
    ok(p != NULL && ((uintptr_t)p & (align - 1)) == 0, "a mapping aligned to 2 MiB");
    if (p == NULL) {
        skip("no mapping", "populate");
        skip("no mapping", "populate");
        return;
    }
    ok(resident_pages(p, size) < size / page, "not populated before (%zu of %zu pages)",
       resident_pages(p, size), size / page);
    threads = umadv__populate(p, size, 8);
    ok(threads >= 1 && threads <= 2 && resident_pages(p, size) == size / page && p[0] == 0 &&
           p[size - 1] == 0,
       "populated: every page resident, zero, by %u threads (a thread per 64 MiB at most)",
       threads);
    munmap(p, size);
    p = umadv__map_aligned(page, page);
    ok(p != NULL && umadv__populate(p, page, 8) == 1 && resident_pages(p, page) == 1,
       "one page: populated by the caller alone");
    if (p != NULL)
        munmap(p, page);
}

/* MemAvailable less the larger of 1 GiB and a sixteenth of MemTotal. */
static void test_host_spare(void)
{
    uint64_t spare = 7;
    int known;

    known = umadv__host_spare_parse("MemTotal:       131072000 kB\nMemFree:        1000 kB\n"
                                    "MemAvailable:   65536000 kB\n", &spare);
    ok(known && spare == (65536000ull - 131072000ull / 16) * 1024,
       "spare: available less a sixteenth of the total (%llu)", (unsigned long long)spare);
    known = umadv__host_spare_parse("MemTotal: 4194304 kB\nMemAvailable: 3145728 kB\n", &spare);
    ok(known && spare == 2ull << 30, "a small host keeps 1 GiB back (%llu)",
       (unsigned long long)spare);
    known = umadv__host_spare_parse("MemTotal: 4194304 kB\nMemAvailable: 524288 kB\n", &spare);
    ok(known && spare == 0, "less available than the reserve: nothing to spare");
    spare = 7;
    ok(!umadv__host_spare_parse("MemTotal: 4194304 kB\nXMemAvailable: 524288 kB\n", &spare) &&
           !umadv__host_spare_parse("", &spare) &&
           !umadv__host_spare_parse("MemTotal: 4194304 kB\nMemAvailable: lots\n", &spare) &&
           spare == 7,
       "no MemAvailable line, or no number: not known, nothing written");
    known = umadv__host_spare(&spare);
    ok(known || access("/proc/meminfo", R_OK) != 0,
       "this host's spare memory is known where /proc/meminfo is (%llu)",
       (unsigned long long)spare);
}

/* The thread's own clock and counts: a spin shows in its CPU time, fresh
 * pages in its faults; a count that went back adds nothing. */
static void test_thread_events(void)
{
    umadv_thread_events_t then, now, sum = {1, 2, 3, 4};
    uint64_t start = umadv__now_ns(), cpu = umadv__thread_cpu_ns(), spun, wall;
    volatile char *p;

    /* spin until the thread has run 5 ms (5 s at most: a clock that does
     * not advance fails, not hangs); a thread runs no faster than the
     * wall clock, however the machine shares its cores (to half a
     * millisecond: the two clocks are kept apart) */
    do {
        spun = umadv__thread_cpu_ns() - cpu;
        wall = umadv__now_ns() - start;
    } while (spun < 5000000u && wall < UINT64_C(5000000000));
    ok(spun >= 5000000u && wall + 500000u >= spun, "a spin: the thread's cpu clock advances, no faster "
       "than the wall (%.2f ms of cpu in %.2f ms)", spun / 1e6, wall / 1e6);
    umadv__thread_events(&then);
    p = malloc(64 << 20); /* above malloc's mmap threshold: fresh pages */
    for (size_t i = 0; p != NULL && i < (64u << 20); i += 4096)
        p[i] = 1;
    free((void *)p);
    umadv__thread_events(&now);
    umadv__thread_events_add(&sum, &now, &then);
    ok(p != NULL && sum.minor_faults + sum.major_faults >= 1 + 2 + 16384,
       "64 MiB touched: a fault a page added (%llu)",
       (unsigned long long)(sum.minor_faults + sum.major_faults));
    sum = (umadv_thread_events_t){1, 2, 3, 4};
    umadv__thread_events_add(&sum, &then, &now);
    ok(sum.minor_faults == 1 && sum.major_faults == 2 && sum.voluntary_switches == 3 &&
           sum.involuntary_switches == 4,
       "counts that went back add nothing");
}

int main(void)
{
    plan(3 + 7 + 18 + 8 + 5 + 10 + 4 + 5 + 5 + 3);
    test_utf8_exhaustive();
    test_utf8_cases();
    test_size_parse();
    test_size_format();
    test_crc32();
    test_array_reserve();
    test_strdup();
    test_hostmem();
    test_host_spare();
    test_thread_events();
    return exit_status();
}
