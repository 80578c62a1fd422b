/*
 * The cuda_ops table: the host backend does what CUDA would (and refuses
 * what CUDA would refuse), records what it was asked; the error macro maps
 * CUDA errors to statuses and logs call and error string; cudart without a
 * driver says NO_DEVICE cleanly.
 */
#include "cuda_ops/cuda_ops.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "cuda_ops/cudart_util.h"
#include "tap.h"
#include "testutil.h"

static int table_complete(const umadv_cuda_ops_t *ops)
{
    /* Every member after the name is a function pointer. */
    const void *const *fns = (const void *const *)((const char *)ops + sizeof(ops->name));
    size_t n = (sizeof(*ops) - sizeof(ops->name)) / sizeof(void *);

    for (size_t i = 0; i < n; i++) {
        if (fns[i] == NULL)
            return 0;
    }
    return ops->name != NULL;
}

static void test_tables(void)
{
    static umadv_cuda_ops_t mock;

    ok(table_complete(&umadv__cuda_ops_host), "host table has every call");
    ok(table_complete(&umadv__cuda_ops_cudart), "cudart table has every call");
    is_str(umadv__cuda_ops_host.name, "host", "host backend named");
    is_str(umadv__cuda_ops_cudart.name, "cudart", "cudart backend named");
    ok(umadv__cuda_ops_select(1) == &umadv__cuda_ops_host, "host-only selects host");
    ok(umadv__cuda_ops_select(0) == &umadv__cuda_ops_cudart, "default is cudart");
    mock = umadv__cuda_ops_host;
    mock.name = "mock";
    umadv__cuda_ops_install(&mock);
    ok(umadv__cuda_ops_select(0) == &mock, "an installed table replaces cudart");
    ok(umadv__cuda_ops_select(1) == &umadv__cuda_ops_host, "but not the host-only choice");
    umadv__cuda_ops_install(NULL);
    ok(umadv__cuda_ops_select(0) == &umadv__cuda_ops_cudart, "uninstall restores cudart");
}

static void test_host_device(void)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_host;
    umadv_device_props_t props;
    uint64_t free_b = 0, total_b = 0;
    int count = -1;
    void *p;

    umadv__cuda_host_reset();
    is(ops->device_count(&count), UMADV_OK, "host backend has a device");
    is(count, 1, "one by default");
    umadv__cuda_host_configure(16 * UMADV_GIB, 2);
    ops->device_count(&count);
    is(count, 2, "device count configurable");
    is(ops->get_device_props(1, &props), UMADV_OK, "props of device 1");
    ok(props.total_memory == 16 * UMADV_GIB && props.managed_memory &&
       props.concurrent_managed_access, "props: configured memory, managed access");
    is(ops->get_device_props(2, &props), UMADV_ERR_CUDA, "no props for a missing device");
    is(ops->thread_begin(2), UMADV_ERR_CUDA, "cannot select a missing device");
    ops->mem_get_info(&free_b, &total_b);
    ok(free_b == total_b && total_b == 16 * UMADV_GIB, "mem_get_info: all free at first");
    ops->malloc_managed(3 * UMADV_MIB, 2 * UMADV_MIB, &p);
    ops->mem_get_info(&free_b, &total_b);
    is_u64(total_b - free_b, 3 * UMADV_MIB, "managed bytes count as used");
    ops->free(p, 3 * UMADV_MIB);
    umadv__cuda_host_configure(16 * UMADV_GIB, 0);
    log_take();
    is(ops->device_count(&count), UMADV_ERR_NO_DEVICE, "zero devices: NO_DEVICE");
    ok(strstr(log_take(), "no usable cuda device") != NULL, "and says so");
    umadv__cuda_host_reset();
}

static void test_host_memory(void)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_host;
    umadv_cuda_host_counters_t c;
    const umadv_cuda_host_record_t *rec;
    size_t n;
    char *p, *q;
    int stack;

    umadv__cuda_host_reset();
    umadv__cuda_host_log_enable(1);
    is(ops->malloc_managed(5 * UMADV_MIB, 4 * UMADV_MIB, (void **)&p), UMADV_OK,
       "malloc_managed");
    ok((uintptr_t)p % (4 * UMADV_MIB) == 0, "aligned as asked");
    ok(p[0] == 0 && p[5 * UMADV_MIB - 1] == 0, "zeroed, whole range mapped");
    p[12345] = 7;
    is(ops->malloc_managed(0, 4096, (void **)&q), UMADV_ERR_INVALID_PARAM, "size 0 refused");

    is(ops->prefetch(p, UMADV_MIB, 0, (umadv_stream_t)0x10), UMADV_OK, "prefetch to gpu 0");
    is(ops->prefetch(p + UMADV_MIB, 2 * UMADV_MIB, UMADV_CUDA_LOCATION_HOST, NULL), UMADV_OK,
       "prefetch to host");
    is(ops->prefetch(p + 4 * UMADV_MIB, 2 * UMADV_MIB, 0, NULL), UMADV_ERR_CUDA,
       "prefetch past the allocation refused");
    is(ops->prefetch(&stack, sizeof(stack), 0, NULL), UMADV_ERR_CUDA,
       "prefetch of non-managed memory refused");
    is(ops->prefetch(p, UMADV_MIB, 3, NULL), UMADV_ERR_CUDA, "prefetch to a missing gpu refused");
    is(ops->advise(p, UMADV_MIB, UMADV_CUDA_ADVISE_SET_READ_MOSTLY, 99), UMADV_OK,
       "read-mostly ignores the location");
    is(ops->advise(p, UMADV_MIB, UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION,
                   UMADV_CUDA_LOCATION_HOST), UMADV_OK, "preferred location host");
    is(ops->advise(p, UMADV_MIB, UMADV_CUDA_ADVISE_SET_ACCESSED_BY, 7), UMADV_ERR_CUDA,
       "accessed-by a missing gpu refused");
    is(ops->advise(p, UMADV_MIB, (umadv_cuda_advice_t)9, 0), UMADV_ERR_CUDA,
       "unknown advice refused");

    umadv__cuda_host_counters(&c);
    ok(c.prefetches_to_device == 1 && c.prefetch_bytes_to_device == UMADV_MIB &&
       c.prefetches_to_host == 1 && c.prefetch_bytes_to_host == 2 * UMADV_MIB,
       "prefetch counters: only the accepted calls");
    ok(c.advises[UMADV_CUDA_ADVISE_SET_READ_MOSTLY] == 1 &&
       c.advises[UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION] == 1 &&
       c.advises[UMADV_CUDA_ADVISE_SET_ACCESSED_BY] == 0, "advice counters");
    rec = umadv__cuda_host_log(&n);
    is((int)n, 5, "log: malloc, 2 prefetches, 2 advises");
    ok(n == 5 && rec[0].call == UMADV_CUDA_CALL_MALLOC && rec[0].ptr == p &&
       rec[1].call == UMADV_CUDA_CALL_PREFETCH && rec[1].location == 0 &&
       rec[1].stream == (umadv_stream_t)0x10 && rec[1].size == UMADV_MIB &&
       rec[2].location == UMADV_CUDA_LOCATION_HOST && rec[2].ptr == p + UMADV_MIB &&
       rec[4].call == UMADV_CUDA_CALL_ADVISE &&
       rec[4].advice == UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION,
       "log records call, range, location, stream and advice in order");

    is(ops->free(p, UMADV_MIB), UMADV_ERR_CUDA, "free with the wrong size refused");
    ok(p[12345] == 7, "memory untouched by the refused free");
    is(ops->free(p, 5 * UMADV_MIB), UMADV_OK, "free");
    umadv__cuda_host_counters(&c);
    ok(c.mallocs == 1 && c.frees == 1 && c.managed_bytes == 0, "malloc/free counters balance");
    is(ops->prefetch(p, UMADV_MIB, 0, NULL), UMADV_ERR_CUDA, "prefetch after free refused");
    umadv__cuda_host_log_enable(0);
    log_take();
}

static void test_host_events(void)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_host;
    umadv_stream_t stream;
    umadv_event_t start, end, never;
    umadv_cuda_host_counters_t c;
    uint64_t ns = 0;

    umadv__cuda_host_reset();
    is(ops->stream_create(&stream), UMADV_OK, "stream");
    ops->event_create(&start);
    ops->event_create(&end);
    ops->event_create(&never);
    ops->event_record(start, stream);
    usleep(20000);
    ops->event_record(end, stream);
    is(ops->event_synchronize(end), UMADV_OK, "event sync");
    is(ops->event_elapsed_ns(start, end, &ns), UMADV_OK, "elapsed");
    ok(ns >= 20000000 && ns < 2000000000, "elapsed measures the 20 ms sleep (%llu ns)",
       (unsigned long long)ns);
    is(ops->event_elapsed_ns(start, never, &ns), UMADV_ERR_CUDA,
       "elapsed to an unrecorded event refused");
    umadv__cuda_host_counters(&c);
    ok(c.streams == 1 && c.events == 3, "live handles counted");
    ops->event_destroy(start);
    ops->event_destroy(end);
    ops->event_destroy(never);
    ops->stream_destroy(stream);
    umadv__cuda_host_counters(&c);
    ok(c.streams == 0 && c.events == 0, "destroyed handles uncounted");
    log_take();
}

static void test_cudart_errors(void)
{
    const char *log;
    int count = 0;
    umadv_status_t status;

    log_take();
    is(umadv__cudart_status(cudaSuccess, UMADV_LOG_ERROR, "f()", __FILE__, __LINE__), UMADV_OK,
       "cudaSuccess is OK");
    ok(log_take()[0] == '\0', "and logs nothing");
    is(UMADV_CUDART_FUNC(cudaErrorInsufficientDriver), UMADV_ERR_NO_DEVICE,
       "no driver maps to NO_DEVICE");
    log = log_take();
    ok(strstr(log, "cudaErrorInsufficientDriver failed: ") != NULL &&
       strstr(log, "(cudaErrorInsufficientDriver)") != NULL,
       "the macro logs the call and the error name");
    ok(strstr(log, cudaGetErrorString(cudaErrorInsufficientDriver)) != NULL,
       "and the error string");
    is(UMADV_CUDART_FUNC(cudaErrorNoDevice), UMADV_ERR_NO_DEVICE, "no device: NO_DEVICE");
    is(UMADV_CUDART_FUNC(cudaErrorMemoryAllocation), UMADV_ERR_CUDA, "other errors: CUDA");
    is(UMADV_CUDART_FUNC(cudaErrorNotSupported), UMADV_ERR_UNSUPPORTED,
       "not supported: UNSUPPORTED");
    is(UMADV_CUDART_FUNC_LOG(cudaErrorInvalidValue, UMADV_LOG_DEBUG), UMADV_ERR_CUDA,
       "a quieter level");
    ok(umadv__log_level >= UMADV_LOG_DEBUG || strstr(log_take(), "InvalidValue") == NULL,
       "is not logged at the default level");

    status = umadv__cuda_ops_cudart.device_count(&count);
    log = log_take();
    if (status == UMADV_OK) {
        ok(count > 0, "cudart: this machine has %d cuda device(s)", count);
        skip("a gpu is present", "cudart without a driver says why");
    } else {
        is(status, UMADV_ERR_NO_DEVICE, "cudart without a usable gpu: NO_DEVICE");
        ok(strstr(log, "cudaGetDeviceCount(&count) failed") != NULL,
           "cudart says which call failed and why");
    }
}

static void test_names(void)
{
    char buf[32];

    is_str(umadv__cuda_location_name(UMADV_CUDA_LOCATION_HOST, buf, sizeof(buf)), "host",
           "host location named");
    is_str(umadv__cuda_location_name(3, buf, sizeof(buf)), "gpu 3", "gpu location named");
    is_str(umadv__cuda_advice_name(UMADV_CUDA_ADVISE_SET_ACCESSED_BY), "set-accessed-by",
           "advice named");
    is_str(umadv__cuda_advice_name((umadv_cuda_advice_t)0), "?", "bad advice is ?");
    is(UMADV_CUDA_ADVISE_SET_READ_MOSTLY, cudaMemAdviseSetReadMostly, "advice mirrors cuda 1");
    is(UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY, cudaMemAdviseUnsetAccessedBy,
       "advice mirrors cuda 6");
}

/* At trace level cudart is traced: each call that places or writes managed
 * memory logs its range before cudart makes it (without a GPU the call
 * then fails, as cudart's would); the rest of the table is cudart's. */
static void test_traced(void)
{
    umadv_log_level_t level = umadv__log_level;
    const umadv_cuda_ops_t *traced;
    char *buf = (char *)(uintptr_t)0x7f0000200000;
    void *ptrs[2] = {buf, buf + 4096};
    size_t sizes[2] = {4096, 8192};
    const char *log;

    umadv__log_level = UMADV_LOG_DEBUG;
    ok(umadv__cuda_ops_select(0) == &umadv__cuda_ops_cudart, "below trace, cudart itself");
    umadv__log_level = UMADV_LOG_TRACE;
    traced = umadv__cuda_ops_select(0);
    ok(traced != &umadv__cuda_ops_cudart && table_complete(traced) &&
           strcmp(traced->name, "cudart (traced)") == 0,
       "at trace, a complete table named cudart (traced)");
    ok(umadv__cuda_ops_select(1) == &umadv__cuda_ops_host, "the host backend is not traced");
    ok(traced->stream_create == umadv__cuda_ops_cudart.stream_create,
       "calls that move no memory are cudart's own");
    log_take();
    (void)traced->prefetch(buf, 1 << 20, UMADV_CUDA_LOCATION_HOST, NULL);
    (void)traced->discard_batch(ptrs, sizes, 2, NULL);
    umadv__log_level = level;
    log = log_take();
    ok(strstr(log, "cuda: prefetch [0x7f0000200000, +1048576) to host on stream (nil)") != NULL,
       "a prefetch logs its range, location and stream");
    ok(strstr(log, "cuda: discard [0x7f0000200000, +4096) on stream (nil) (1 of 2)") != NULL &&
           strstr(log, "cuda: discard [0x7f0000201000, +8192) on stream (nil) (2 of 2)") != NULL,
       "a batch logs each range");
}

int main(void)
{
    log_capture_start();
    plan(73);
    test_tables();
    test_host_device();
    test_host_memory();
    test_host_events();
    test_cudart_errors();
    test_names();
    test_traced();
    log_capture_stop();
    return exit_status();
}
