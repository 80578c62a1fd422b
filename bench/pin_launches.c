/*
 * pin_launches: how long do CUDA calls on one thread wait while another
 * thread pins host memory? The staging pool (exec/stage.c) is pinned while
 * the application launches; with cudaHostAlloc, ResNet-50's first
 * iteration after a budget change took 2.5-3.7 s for 0.18 (bench/RESULTS.md).
 *
 * A launcher thread issues cudaMemsetAsync of 4 bytes (a kernel launch of
 * the runtime's own, through the same path as the application's) on a
 * stream of its own, synchronising every 64 calls, and records how long
 * each call and each synchronisation took. Meanwhile the main thread pins
 * --size bytes (default 2 GiB) one way:
 *
 *   cudaHostAlloc        one call, as umadv did before
 *   umadv host_alloc     cuda_ops' cudart host_alloc: pages mapped and
 *                        populated on umadv's threads, then one
 *                        cudaHostRegister
 *
 * Per way: seconds to pin, GB/s, calls the launcher made meanwhile, the
 * longest wait of one call and the sum of waits over 1 ms. Then the copy
 * rate of each kind of pinned memory, host to device and back, 1 GiB.
 *
 *   bench/pin_launches [--size BYTES] [--repeat N]
 *
 * Exit status 77 without a GPU.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "cuda_ops/cuda_ops.h"

#define EXIT_SKIP 77
#define SYNC_EVERY 64

typedef struct launcher {
    pthread_t   thread;
    atomic_int  stop, ended; /* ended: it stopped, or could not start */
    void       *dev;      /* 4 bytes of device memory the memsets write */
    _Atomic uint64_t calls;
    uint64_t    longest_ns, waits_ns; /* sum of calls and syncs over 1 ms */
} launcher_t;

static const umadv_cuda_ops_t *ops;

static void die(const char *what)
{
    fprintf(stderr, "pin_launches: %s\n", what);
    exit(EXIT_FAILURE);
}

static void waited(launcher_t *l, uint64_t t0)
{
    uint64_t ns = umadv__now_ns() - t0;

    l->longest_ns = UMADV_MAX(l->longest_ns, ns);
    if (ns > 1000000)
        l->waits_ns += ns;
}

static void *launcher_main(void *arg)
{
    launcher_t *l = arg;
    cudaStream_t s;

    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        atomic_store(&l->ended, 1);
        return NULL;
    }
    while (!atomic_load(&l->stop)) {
        uint64_t t0 = umadv__now_ns();

        (void)cudaMemsetAsync(l->dev, 0, 4, s);
        waited(l, t0);
        if (++l->calls % SYNC_EVERY == 0) {
            t0 = umadv__now_ns();
            (void)cudaStreamSynchronize(s);
            waited(l, t0);
        }
    }
    (void)cudaStreamSynchronize(s);
    (void)cudaStreamDestroy(s);
    atomic_store(&l->ended, 1);
    return NULL;
}

typedef enum pin_way { PIN_HOST_ALLOC, PIN_UMADV, PIN_WAYS } pin_way_t;

static const char *const way_name[PIN_WAYS] = {"cudaHostAlloc", "umadv host_alloc"};

static void *pin(pin_way_t way, uint64_t size)
{
    void *p = NULL;

    if (way == PIN_HOST_ALLOC ? cudaHostAlloc(&p, size, cudaHostAllocDefault) != cudaSuccess
                              : ops->host_alloc(size, UMADV_PIN_WAITED, &p) != UMADV_OK)
        die("pinning failed");
    return p;
}

static void unpin(pin_way_t way, void *p, uint64_t size)
{
    if (way == PIN_HOST_ALLOC)
        cudaFreeHost(p);
    else
        ops->host_free(p, size);
}

/* One pinning of @size bytes the @way way, the launcher running. */
static void measure(pin_way_t way, uint64_t size, void *dev)
{
    launcher_t l = {.dev = dev};
    uint64_t t0, pin_ns, before;
    void *p;

    atomic_init(&l.stop, 0);
    atomic_init(&l.ended, 0);
    atomic_init(&l.calls, 0);
    if (pthread_create(&l.thread, NULL, launcher_main, &l) != 0)
        die("no thread");
    while (atomic_load(&l.calls) < 4 * SYNC_EVERY && !atomic_load(&l.ended))
        ; /* the launcher runs */
    if (atomic_load(&l.ended))
        die("the launcher thread could not make its stream");
    l.longest_ns = l.waits_ns = 0;
    before = atomic_load(&l.calls);
    t0 = umadv__now_ns();
    p = pin(way, size);
    pin_ns = umadv__now_ns() - t0;
    atomic_store(&l.stop, 1);
    pthread_join(l.thread, NULL);
    printf("%-18s %8.2f %8.3f %8.2f %10llu %10.1f %10.1f\n", way_name[way],
           (double)size / UMADV_GIB, (double)pin_ns / 1e9, (double)size / (double)pin_ns,
           (unsigned long long)(atomic_load(&l.calls) - before), (double)l.longest_ns / 1e6,
           (double)l.waits_ns / 1e6);
    fflush(stdout);
    unpin(way, p, size);
}

/* GB/s of @repeat copies of @size bytes between @host and device memory. */
static double copy_rate(void *host, void *dev, uint64_t size, int to_device, int repeat)
{
    uint64_t t0 = umadv__now_ns();
    cudaStream_t s;

    if (cudaStreamCreate(&s) != cudaSuccess)
        die("no stream");
    for (int i = 0; i <= repeat; i++) {
        if (i == 1) { /* the first copy warms the path */
            cudaStreamSynchronize(s);
            t0 = umadv__now_ns();
        }
        cudaMemcpyAsync(to_device ? dev : host, to_device ? host : dev, size,
                        cudaMemcpyDefault, s);
    }
    cudaStreamSynchronize(s);
    t0 = umadv__now_ns() - t0;
    cudaStreamDestroy(s);
    return (double)size * repeat / (double)t0;
}

static void copies(uint64_t size, int repeat)
{
    void *dev = NULL;

    if (cudaMalloc(&dev, size) != cudaSuccess)
        die("cudaMalloc failed");
    for (int w = 0; w < PIN_WAYS; w++) {
        void *host = pin((pin_way_t)w, size);

        memset(host, 1, size);
        printf("%-18s %8.2f %12.1f %12.1f\n", way_name[w], (double)size / UMADV_GIB,
               copy_rate(host, dev, size, 1, repeat), copy_rate(host, dev, size, 0, repeat));
        unpin((pin_way_t)w, host, size);
    }
    cudaFree(dev);
}

static void opts_parse(int argc, char **argv, uint64_t *size_p, int *repeat_p)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            if (umadv_size_parse(argv[++i], size_p) != UMADV_OK || *size_p == 0)
                die("--size: a size in bytes (2G)");
        } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            *repeat_p = atoi(argv[++i]);
            if (*repeat_p < 1)
                die("--repeat: at least 1");
        } else {
            fprintf(stderr, "usage: pin_launches [--size BYTES] [--repeat N]\n");
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    uint64_t size = 2 * UMADV_GIB;
    int repeat = 2, count = 0;
    void *dev = NULL;

    opts_parse(argc, argv, &size, &repeat);
    ops = &umadv__cuda_ops_cudart;
    if (ops->device_count(&count) != UMADV_OK || count == 0) {
        fprintf(stderr, "pin_launches: no CUDA device\n");
        return EXIT_SKIP;
    }
    if (ops->thread_begin(0) != UMADV_OK || cudaMalloc(&dev, 4) != cudaSuccess)
        die("cannot use device 0");
    printf("pin_launches: %.2f GiB pinned while a thread launches memsets, %d rounds\n",
           (double)size / UMADV_GIB, repeat);
    printf("%-18s %8s %8s %8s %10s %10s %10s\n", "way", "GiB", "pin s", "GB/s", "launches",
           "longest ms", "waits ms");
    for (int r = 0; r < repeat; r++)
        for (int w = 0; w < PIN_WAYS; w++)
            measure((pin_way_t)w, size, dev);
    printf("%-18s %8s %12s %12s\n", "copies", "GiB", "H2D GB/s", "D2H GB/s");
    copies(UMADV_MIN(size, UMADV_GIB), 4);
    cudaFree(dev);
    return EXIT_SUCCESS;
}
