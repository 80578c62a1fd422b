/*
 * floor_alloc: the least a PyTorch allocator can do, for bench/overhead.py's
 * "floor" variant. PyTorch's CUDAPluggableAllocator calls floor_malloc and
 * floor_free for every tensor, as it calls umadv_torch_malloc and
 * umadv_torch_free; here each call only pops or pushes a free list of
 * device memory, so what a model loses against native PyTorch is the
 * pluggable route's own cost (its bookkeeping of every block, the calls
 * through function pointers), the floor under umadv's per-tensor route.
 *
 * Sizes are rounded up to a power of two from 512 bytes; a list per size
 * class keeps freed blocks for the next request of the class (one stream,
 * as PyTorch's training loop uses: reuse is ordered after the last use).
 * Memory is never given back: the process ends first.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cuda_runtime_api.h>

/* PyTorch finds these by name (CUDAPluggableAllocator). */
__attribute__((visibility("default"))) void *floor_malloc(ssize_t size, int device,
                                                          cudaStream_t stream);
__attribute__((visibility("default"))) void floor_free(void *ptr, ssize_t size, int device,
                                                       cudaStream_t stream);

#define FLOOR_MIN_SHIFT 9  /* 512 bytes */
#define FLOOR_CLASSES   48 /* up to 2^56 bytes */

typedef struct floor_block {
    struct floor_block *next;
    void               *ptr;
} floor_block_t;

static pthread_mutex_t floor_lock = PTHREAD_MUTEX_INITIALIZER;
static floor_block_t  *floor_free_list[FLOOR_CLASSES]; /* blocks ready for reuse */
static floor_block_t  *floor_spare;                    /* list nodes not in use */

static unsigned size_class(size_t size)
{
    unsigned c = 0;

    while (((size_t)1 << (c + FLOOR_MIN_SHIFT)) < size && c + 1 < FLOOR_CLASSES)
        c++;
    return c;
}

static floor_block_t *node_get(void)
{
    floor_block_t *node = floor_spare;

    if (node != NULL)
        floor_spare = node->next;
    else
        node = malloc(sizeof(*node));
    return node;
}

void *floor_malloc(ssize_t size, int device, cudaStream_t stream)
{
    unsigned c = size_class(size > 0 ? (size_t)size : 1);
    floor_block_t *block;
    void *ptr = NULL;

    (void)device;
    (void)stream;
    pthread_mutex_lock(&floor_lock);
    block = floor_free_list[c];
    if (block != NULL) {
        floor_free_list[c] = block->next;
        ptr = block->ptr;
        block->next = floor_spare;
        floor_spare = block;
    }
    pthread_mutex_unlock(&floor_lock);
    if (ptr == NULL && cudaMalloc(&ptr, (size_t)1 << (c + FLOOR_MIN_SHIFT)) != cudaSuccess)
        return NULL; /* PyTorch reports the out-of-memory */
    return ptr;
}

void floor_free(void *ptr, ssize_t size, int device, cudaStream_t stream)
{
    unsigned c = size_class(size > 0 ? (size_t)size : 1);
    floor_block_t *node;

    (void)device;
    (void)stream;
    pthread_mutex_lock(&floor_lock);
    node = node_get();
    if (node != NULL) { /* without a node the block is lost, not misused */
        node->ptr = ptr;
        node->next = floor_free_list[c];
        floor_free_list[c] = node;
    }
    pthread_mutex_unlock(&floor_lock);
}
