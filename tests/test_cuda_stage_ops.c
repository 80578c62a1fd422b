/*
 * The staging entries of the CUDA table on the host backend: pinned
 * allocation, copies, and discards that lose the bytes (poison), with
 * what CUDA refuses refused, counters and the call log.
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>

#include "cuda_ops/cuda_ops.h"
#include "tap.h"

#define SIZE (256 * 1024)

static const umadv_cuda_ops_t *H = &umadv__cuda_ops_host;

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v)
            return 0;
    }
    return 1;
}

static void test_pinned(void)
{
    umadv_cuda_host_counters_t c;
    void *p = NULL, *q = NULL;

    ok(H->host_alloc(SIZE, UMADV_PIN_WAITED, &p) == UMADV_OK && p != NULL, "host_alloc gives pinned memory");
    memset(p, 7, SIZE); /* the CPU may use it */
    umadv__cuda_host_counters(&c);
    ok(c.pinned_allocs == 1 && c.pinned_bytes == SIZE, "counted: %llu allocs, %llu bytes",
       (unsigned long long)c.pinned_allocs, (unsigned long long)c.pinned_bytes);
    ok(H->host_alloc(0, UMADV_PIN_WAITED, &q) == UMADV_ERR_INVALID_PARAM && q == NULL,
       "size 0 refused, output untouched");
    ok(H->host_free((char *)p + 1, SIZE) == UMADV_ERR_CUDA, "host_free of another pointer refused");
    ok(H->host_free(p, SIZE + 4096) == UMADV_ERR_CUDA, "host_free of another size refused");
    ok(H->host_free(p, SIZE) == UMADV_OK, "host_free");
    umadv__cuda_host_counters(&c);
    ok(c.pinned_frees == 1 && c.pinned_bytes == 0, "counted free, no bytes left");
}

/* Plain device memory (the lanes' bounce buffers): the same rules, its
 * own counters, and copies to and from it pass. */
static void test_device(void)
{
    umadv_cuda_host_counters_t c;
    unsigned char *d = NULL, *m = NULL;
    void *q = NULL;

    ok(H->device_alloc(SIZE, (void **)&d) == UMADV_OK && d != NULL, "device_alloc");
    ok(H->device_alloc(0, &q) == UMADV_ERR_INVALID_PARAM && q == NULL,
       "device_alloc of 0 bytes refused, output untouched");
    H->malloc_managed(SIZE, 4096, (void **)&m);
    memset(m, 0x5a, SIZE);
    ok(H->memcpy_async(d, m, SIZE, NULL) == UMADV_OK && all_bytes(d, SIZE, 0x5a),
       "managed -> device memory copies every byte");
    ok(H->device_free(d + 1) == UMADV_ERR_CUDA && H->host_free(d, SIZE) == UMADV_ERR_CUDA,
       "device_free of another pointer and host_free of device memory refused");
    umadv__cuda_host_counters(&c);
    ok(c.device_allocs == 1 && c.device_bytes == SIZE && c.pinned_bytes == 0,
       "counted apart from pinned memory");
    ok(H->device_free(d) == UMADV_OK, "device_free");
    umadv__cuda_host_counters(&c);
    ok(c.device_frees == 1 && c.device_bytes == 0 &&
           H->memcpy_async(d, m, 16, NULL) == UMADV_ERR_CUDA,
       "counted free; a copy to the freed buffer is refused");
    H->free(m, SIZE);
}

static void test_copies(void)
{
    umadv_cuda_host_counters_t c;
    unsigned char *m = NULL, *pin = NULL, stack[16];
    umadv_stream_t st;

    H->stream_create(&st);
    H->malloc_managed(SIZE, 4096, (void **)&m);
    H->host_alloc(SIZE, UMADV_PIN_WAITED, (void **)&pin);
    for (size_t i = 0; i < SIZE; i++)
        m[i] = (unsigned char)(i * 13 + 1);
    ok(H->memcpy_async(pin, m, SIZE, st) == UMADV_OK && memcmp(pin, m, SIZE) == 0,
       "managed -> pinned copies every byte");
    memset(m, 0, SIZE);
    ok(H->memcpy_async(m + 4096, pin + 4096, 8192, st) == UMADV_OK &&
           memcmp(m + 4096, pin + 4096, 8192) == 0 && all_bytes(m, 4096, 0) &&
           all_bytes(m + 12288, SIZE - 12288, 0),
       "pinned -> managed copies exactly the range");
    ok(H->memcpy_async(stack, m, sizeof(stack), st) == UMADV_ERR_CUDA,
       "a copy to memory the backend did not make is refused");
    ok(H->memcpy_async(pin, m, SIZE + 1, st) == UMADV_ERR_CUDA, "a copy past the end is refused");
    umadv__cuda_host_counters(&c);
    ok(c.memcpys == 2 && c.memcpy_bytes == SIZE + 8192, "copies counted (%llu, %llu bytes)",
       (unsigned long long)c.memcpys, (unsigned long long)c.memcpy_bytes);
    /* UMADV_STAGE_POISON's fill: managed (or device) memory only */
    ok(H->memset_async(m + 4096, UMADV_CUDA_HOST_POISON, 8192, st) == UMADV_OK &&
           all_bytes(m + 4096, 8192, UMADV_CUDA_HOST_POISON) && all_bytes(m, 4096, 0) &&
           all_bytes(m + 12288, SIZE - 12288, 0),
       "memset_async fills exactly the range of managed memory");
    ok(H->memset_async(pin, 0, 16, st) == UMADV_ERR_CUDA &&
           H->memset_async(stack, 0, sizeof(stack), st) == UMADV_ERR_CUDA &&
           H->memset_async(m, 0, SIZE + 1, st) == UMADV_ERR_CUDA,
       "memset_async of pinned memory, of memory the backend did not make, past the end: "
       "refused");
    umadv__cuda_host_counters(&c);
    ok(c.memsets == 1 && c.memset_bytes == 8192, "memsets counted (%llu, %llu bytes)",
       (unsigned long long)c.memsets, (unsigned long long)c.memset_bytes);
    H->host_free(pin, SIZE);
    H->free(m, SIZE);
    H->stream_destroy(st);
}

static void test_discards(void)
{
    umadv_cuda_host_counters_t c;
    const umadv_cuda_host_record_t *log;
    unsigned char *m = NULL;
    void *ptrs[2];
    size_t sizes[2] = {4096, 8192}, n;
    umadv_stream_t st;

    H->stream_create(&st);
    H->malloc_managed(SIZE, 4096, (void **)&m);
    memset(m, 0x11, SIZE);
    ptrs[0] = m;
    ptrs[1] = m + 65536;
    umadv__cuda_host_log_enable(1);
    ok(H->discard_batch(ptrs, sizes, 2, st) == UMADV_OK, "discard_batch of two ranges");
    ok(all_bytes(m, 4096, UMADV_CUDA_HOST_POISON) &&
           all_bytes(m + 65536, 8192, UMADV_CUDA_HOST_POISON),
       "their bytes are lost: they read as the poison");
    ok(all_bytes(m + 4096, 65536 - 4096, 0x11) && all_bytes(m + 73728, SIZE - 73728, 0x11),
       "the bytes around them are kept");
    ok(H->discard_batch(ptrs, sizes, 2, NULL) == UMADV_ERR_CUDA,
       "the legacy default stream is refused, as CUDA does");
    memset(m, 0x22, SIZE);
    ok(H->discard_and_prefetch_batch(ptrs, sizes, 2, 0, st) == UMADV_OK &&
           all_bytes(m, 4096, UMADV_CUDA_HOST_POISON) && all_bytes(m + 4096, 4096, 0x22),
       "discard_and_prefetch_batch loses the bytes too");
    ok(H->discard_and_prefetch_batch(ptrs, sizes, 2, 5, st) == UMADV_ERR_CUDA,
       "to a device that does not exist: refused");
    sizes[1] = SIZE; /* past the end of the allocation */
    memset(m, 0x33, SIZE);
    ok(H->discard_batch(ptrs, sizes, 2, st) == UMADV_ERR_CUDA && all_bytes(m, SIZE, 0x33),
       "a range outside managed memory: refused, nothing discarded");
    log = umadv__cuda_host_log(&n);
    ok(n == 4 && log[0].call == UMADV_CUDA_CALL_DISCARD && log[0].batch == 2 &&
           log[2].call == UMADV_CUDA_CALL_DISCARD_PREFETCH && log[3].ptr == ptrs[1],
       "logged: one record per range (%zu)", n);
    umadv__cuda_host_log_enable(0);
    umadv__cuda_host_counters(&c);
    ok(c.discards == 2 && c.discard_bytes == 12288 && c.discard_prefetches == 2 &&
           c.discard_prefetch_bytes == 12288,
       "counted per range and byte");
    H->free(m, SIZE);
    H->stream_destroy(st);
}

/* BUSY STREAMS (host.c): a discard enqueued on a stream with work since
 * its last synchronisation is counted, whatever the work (a memset, a
 * copy, a prefetch, a population, a wait); one behind a discard, or
 * after a synchronisation, is not. */
static void test_discards_behind_work(void)
{
    static const char *const work[] = {"a memset", "a copy", "a prefetch", "a population",
                                       "a wait on an event"};
    umadv_cuda_host_counters_t c0, c1;
    unsigned char *m = NULL;
    void *ptrs[1];
    size_t sizes[1] = {4096};
    umadv_stream_t st, other;
    umadv_event_t ev;
    int counted = 1;

    H->stream_create(&st);
    H->stream_create(&other);
    H->event_create(&ev);
    H->malloc_managed(SIZE, 4096, (void **)&m);
    ptrs[0] = m;
    for (size_t w = 0; w < sizeof(work) / sizeof(work[0]); w++) {
        umadv__cuda_host_counters(&c0);
        if (w == 0)
            H->memset_async(m, 0, 4096, st);
        else if (w == 1)
            H->memcpy_async(m, m + 4096, 4096, st);
        else if (w == 2)
            H->prefetch(m, 4096, 0, st);
        else if (w == 3)
            H->discard_and_prefetch_batch(ptrs, sizes, 1, 0, st);
        else
            H->stream_wait_event(st, ev);
        H->discard_batch(ptrs, sizes, 1, other); /* another stream's work is not its */
        H->discard_batch(ptrs, sizes, 1, st);
        H->discard_batch(ptrs, sizes, 1, st); /* behind a discard: one more, not two */
        H->stream_synchronize(st);
        H->discard_batch(ptrs, sizes, 1, st);
        umadv__cuda_host_counters(&c1);
        if (c1.discards_behind_work - c0.discards_behind_work != 2) {
            counted = 0;
            diag("behind %s: %llu", work[w],
                 (unsigned long long)(c1.discards_behind_work - c0.discards_behind_work));
        }
    }
    ok(counted, "a discard behind a memset, a copy, a prefetch, a population or a wait is "
       "counted, the one after it too; after a synchronisation and on another stream, not");
    H->free(m, SIZE);
    H->event_destroy(ev);
    H->stream_destroy(other);
    H->stream_destroy(st);
}

/* Both backends fill the new entries: a table without them would crash
 * the executor's staged calls. */
static void test_tables(void)
{
    const umadv_cuda_ops_t *t[] = {&umadv__cuda_ops_host, &umadv__cuda_ops_cudart};

    for (size_t i = 0; i < 2; i++)
        ok(t[i]->host_alloc && t[i]->host_free && t[i]->memcpy_async && t[i]->memset_async &&
               t[i]->discard_batch &&
               t[i]->discard_and_prefetch_batch && t[i]->device_alloc && t[i]->device_free,
           "%s has every staging entry", t[i]->name);
}

int main(void)
{
    plan(34);
    umadv__cuda_host_reset();
    test_pinned();
    test_copies();
    test_discards();
    test_discards_behind_work();
    test_device();
    test_tables();
    return exit_status();
}
