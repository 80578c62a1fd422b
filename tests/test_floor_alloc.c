/*
 * bench/floor_alloc.c on a real GPU (skipped without one): the allocator
 * under overhead.py's floor variant hands out device memory that holds
 * what is written to it, reuses a freed block for the next request of its
 * size class, last freed first, and never hands out a block twice.
 */
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <cuda_runtime_api.h>

#include "tap.h"

void *floor_malloc(ssize_t size, int device, cudaStream_t stream);
void floor_free(void *ptr, ssize_t size, int device, cudaStream_t stream);

static int holds(void *ptr, size_t size, int byte)
{
    unsigned char back[4096];

    if (size > sizeof(back) || cudaMemset(ptr, byte, size) != cudaSuccess ||
        cudaMemcpy(back, ptr, size, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 0;
    for (size_t i = 0; i < size; i++) {
        if (back[i] != (unsigned char)byte)
            return 0;
    }
    return 1;
}

int main(void)
{
    int count = 0;
    void *a, *b, *c, *d, *e, *f;

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        skip_all("no CUDA device");
    plan(6);
    a = floor_malloc(1000, 0, NULL);
    ok(a != NULL && holds(a, 1000, 0xab), "1000 bytes of device memory that hold their bytes");
    floor_free(a, 1000, 0, NULL);
    b = floor_malloc(900, 0, NULL);
    ok(b == a, "a freed block serves the next request of its class (1 KiB)");
    c = floor_malloc(900, 0, NULL);
    ok(c != NULL && c != b && holds(c, 900, 0x5c) && holds(b, 1000, 0xab),
       "with none free, a new block, apart from the one in use");
    d = floor_malloc(3000, 0, NULL);
    ok(d != NULL && d != b && d != c && holds(d, 3000, 0x11), "another class, another block");
    floor_free(b, 900, 0, NULL);
    floor_free(c, 900, 0, NULL);
    e = floor_malloc(1024, 0, NULL);
    f = floor_malloc(513, 0, NULL);
    ok(e == c && f == b, "freed blocks come back last freed first");
    ok(floor_malloc(4096, 0, NULL) != d, "a block in use is never handed out again");
    return exit_status();
}
