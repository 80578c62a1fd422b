/*
 * Every CUDA call the runtime makes, behind one table of function pointers.
 *
 * Two backends: "cudart" makes the real CUDA runtime calls; "host" backs
 * managed memory with host memory and records prefetches and advice in
 * counters and an optional call log, so the pool, the context and the
 * executor can be tested on machines without a GPU. Tests may install a
 * table of their own (umadv__cuda_ops_install) to inject failures: only
 * the test build of the runtime has that hook; the installed library
 * exports none of the rest (visibility hidden).
 *
 * Every function returns a umadv_status_t and writes its outputs only on
 * success. CUDA errors are logged once, where they occur, with the call and
 * the CUDA error string (UMADV_CUDART_FUNC).
 */
#ifndef UMADV_CUDA_OPS_CUDA_OPS_H
#define UMADV_CUDA_OPS_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <umadv.h>

/* Location "host" for prefetch and advice; device ordinals are >= 0. */
#define UMADV_CUDA_LOCATION_HOST (-1)

/* Host NUMA node @node (the kernel's number, >= 0), what
 * cudaMemLocationTypeHostNuma names: numbered down from -2, so device
 * ordinals and plain host keep their values. */
#define UMADV_CUDA_LOCATION_HOST_NUMA(_node)   (-2 - (int)(_node))
#define UMADV_CUDA_LOCATION_IS_HOST_NUMA(_loc) ((_loc) <= -2)
#define UMADV_CUDA_LOCATION_NUMA_NODE(_loc)    (-2 - (_loc))
/* Plain host or a host node: anywhere but a GPU. */
#define UMADV_CUDA_LOCATION_IS_HOST(_loc)      ((_loc) < 0)

typedef void *umadv_stream_t; /* cudaStream_t; NULL is the legacy default stream */
typedef void *umadv_event_t;  /* cudaEvent_t */

typedef struct umadv_device_props {
    char     name[96];
    char     pci_bus_id[32];           /* "0000:3b:00.0" */
    uint64_t total_memory;             /* bytes */
    int      cc_major, cc_minor;
    int      managed_memory;           /* cudaMallocManaged works */
    int      concurrent_managed_access;/* prefetch and advice are meaningful */
} umadv_device_props_t;

/* Mirrors cudaMemoryAdvise, value for value. */
typedef enum umadv_cuda_advice {
    UMADV_CUDA_ADVISE_SET_READ_MOSTLY          = 1,
    UMADV_CUDA_ADVISE_UNSET_READ_MOSTLY        = 2,
    UMADV_CUDA_ADVISE_SET_PREFERRED_LOCATION   = 3,
    UMADV_CUDA_ADVISE_UNSET_PREFERRED_LOCATION = 4,
    UMADV_CUDA_ADVISE_SET_ACCESSED_BY          = 5,
    UMADV_CUDA_ADVISE_UNSET_ACCESSED_BY        = 6
} umadv_cuda_advice_t;

/* How a pinning meets the work around it (host_alloc): where the work
 * waits for the pages, cudart populates them on many threads; where it
 * goes on beside them, on few, so that it loses less to them (cudart.c
 * says how many and why). */
typedef enum umadv_pin_pace {
    UMADV_PIN_WAITED,
    UMADV_PIN_BESIDE
} umadv_pin_pace_t;

typedef struct umadv_cuda_ops {
    const char *name;
    /* UMADV_ERR_NO_DEVICE (logged once, with the CUDA error) when no
     * device or no driver can be used. */
    umadv_status_t (*device_count)(int *count_p);
    umadv_status_t (*get_device_props)(int device, umadv_device_props_t *props);
    umadv_status_t (*driver_version)(int *version_p);
    /* A thread of umadv's own (a lane, a pinner, the link probe's)
     * begins its CUDA work: @device made current on it, its stream
     * capture mode relaxed, and the thread marked umadv's own (the call
     * census leaves its calls out: profiler/census.c). In the default
     * mode, global, an application that captures a graph in global mode
     * on any thread forbids every thread its unsafe calls (a pinning, a
     * synchronisation), and one made would invalidate the capture
     * (profiler.c, STREAM CAPTURE). */
    umadv_status_t (*thread_begin)(int device);
    umadv_status_t (*mem_get_info)(uint64_t *free_p, uint64_t *total_p);
    /* Managed memory; @align is a wish (cudart cannot honour it), so the
     * caller checks the address it gets. */
    umadv_status_t (*malloc_managed)(size_t size, size_t align, void **ptr_p);
    umadv_status_t (*free)(void *ptr, size_t size);
    /* Asynchronous migration of [ptr, ptr+size) to @location (a device
     * ordinal, UMADV_CUDA_LOCATION_HOST or _HOST_NUMA(node)), ordered on
     * @stream. A host node the driver refuses becomes plain host, with
     * one warning (cudart). */
    umadv_status_t (*prefetch)(void *ptr, size_t size, int location, umadv_stream_t stream);
    /* The @count ranges [ptrs[i], ptrs[i]+sizes[i]) to @location in one
     * call (cudaMemPrefetchBatchAsync: one call's latency for all), ordered
     * on @stream. cudart issues one prefetch per range instead where the
     * batch call cannot be used: the legacy default stream (which it
     * refuses), a host NUMA node, or a driver that does not support it
     * (one warning). NULL in a table: the caller loops over prefetch. */
    umadv_status_t (*prefetch_batch)(void **ptrs, size_t *sizes, size_t count, int location,
                                     umadv_stream_t stream);
    umadv_status_t (*advise)(void *ptr, size_t size, umadv_cuda_advice_t advice, int location);
    /* Page-locked host memory, of at least @size bytes (cudaHostRegister
     * of pages mapped and populated first: cudart.c says why): the
     * staging pool of staged evictions (exec/stage.c). UMADV_ERR_NO_MEMORY
     * when the host cannot spare it (common/hostmem.h). host_free takes
     * the size host_alloc was given. @pace: whether work waits for it
     * (umadv_pin_pace_t). */
    umadv_status_t (*host_alloc)(size_t size, umadv_pin_pace_t pace, void **ptr_p);
    umadv_status_t (*host_free)(void *ptr, size_t size);
    /* Plain device memory (cudaMalloc): never migrated, outside any
     * budget. NULL in a backend without it. */
    umadv_status_t (*device_alloc)(size_t size, void **ptr_p);
    umadv_status_t (*device_free)(void *ptr);
    /* cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, stream): managed
     * memory to pinned and back. */
    umadv_status_t (*memcpy_async)(void *dst, const void *src, size_t size,
                                   umadv_stream_t stream);
    /* cudaMemsetAsync(ptr, value, size, stream): UMADV_STAGE_POISON's
     * fill of a staged range before its discard. NULL in a table: no
     * poison (the discard alone). */
    umadv_status_t (*memset_async)(void *ptr, int value, size_t size, umadv_stream_t stream);
    /* cudaMemDiscardBatchAsync: the ranges' pages are released without a
     * copy; their bytes are LOST (the host backend fills them with
     * UMADV_CUDA_HOST_POISON). Never the legacy default stream. */
    umadv_status_t (*discard_batch)(void **ptrs, size_t *sizes, size_t count,
                                    umadv_stream_t stream);
    /* Both discards return UMADV_ERR_UNSUPPORTED, unlogged, where the
     * driver has none (nothing was done). */
    /* cudaMemDiscardAndPrefetchBatchAsync: discarded, then populated at
     * @location (a device ordinal) without copying the old bytes. */
    umadv_status_t (*discard_and_prefetch_batch)(void **ptrs, size_t *sizes, size_t count,
                                                 int location, umadv_stream_t stream);
    /* A stream of umadv's own: not ordered with the legacy default
     * stream, and of the greatest priority (cudart.c says why). */
    umadv_status_t (*stream_create)(umadv_stream_t *stream_p);
    umadv_status_t (*stream_destroy)(umadv_stream_t stream);
    umadv_status_t (*stream_synchronize)(umadv_stream_t stream);
    /* Events time work on a stream: record start and end, then read the
     * time between them once the end has completed. */
    umadv_status_t (*event_create)(umadv_event_t *event_p);
    umadv_status_t (*event_destroy)(umadv_event_t event);
    umadv_status_t (*event_record)(umadv_event_t event, umadv_stream_t stream);
    umadv_status_t (*stream_wait_event)(umadv_stream_t stream, umadv_event_t event);
    umadv_status_t (*event_synchronize)(umadv_event_t event);
    umadv_status_t (*event_elapsed_ns)(umadv_event_t start, umadv_event_t end,
                                       uint64_t *ns_p);
} umadv_cuda_ops_t;

/* The real CUDA runtime. */
extern const umadv_cuda_ops_t umadv__cuda_ops_cudart;

/* Host memory standing in for a GPU. */
extern const umadv_cuda_ops_t umadv__cuda_ops_host;

/* The table a context uses: the host backend when @host_only, else the
 * installed one (test builds) or cudart; cudart traced (below) when the
 * log level is trace. */
const umadv_cuda_ops_t *umadv__cuda_ops_select(int host_only);

/* traced.c: @ops, or where it is cudart and the log level trace, cudart
 * with each call that places or writes managed memory logged (its range,
 * location and stream) before it is made. */
const umadv_cuda_ops_t *umadv__cuda_ops_traced(const umadv_cuda_ops_t *ops);

/* Test mock point: make @ops what umadv__cuda_ops_select(0) returns; NULL
 * restores cudart. Defined only in the test build (UMADV_TEST_HOOKS,
 * libumadv_core_test): anything else that calls it does not link. */
void umadv__cuda_ops_install(const umadv_cuda_ops_t *ops);

/* A bounce buffer of the staged channel: each of the executor's lanes has
 * one, and the link probe times the channel through two. */
#define UMADV_BOUNCE_BYTES (UINT64_C(32) << 20)

/* The staged channel's copy (exec/stage.c, THE CALLS): @len bytes from
 * @src to @dst on @stream through @bounce, device memory of
 * @bounce_bytes, a device-to-device copy and a copy over the link per
 * piece, in stream order: managed memory to pinned host memory and back
 * runs one way at a time on an H100, through device memory both ways at
 * once. @bounce NULL: one direct copy. */
umadv_status_t umadv__cuda_copy_bounced(const umadv_cuda_ops_t *ops, void *dst, const void *src,
                                        uint64_t len, void *bounce, uint64_t bounce_bytes,
                                        umadv_stream_t stream);

/* Releasing many handles in a row (events, arenas): the first failure is
 * logged as usual, the others at debug level only, and the end counts
 * them in one warning. A device with a sticky error fails every release,
 * and a context holds two events per step. */
typedef struct umadv_cuda_release {
    const char *call;   /* what is released, for the warning: "event_destroy" */
    size_t      failed;
} umadv_cuda_release_t;

void umadv__cuda_release_note(umadv_cuda_release_t *release, umadv_status_t status);
void umadv__cuda_release_end(umadv_cuda_release_t *release);

/* Map a location to text: "host", "host numa 1", "gpu 0". */
const char *umadv__cuda_location_name(int location, char *buf, size_t len);

const char *umadv__cuda_advice_name(umadv_cuda_advice_t advice);

/* ---- host backend: what it was asked to do ---------------------------- */

typedef enum umadv_cuda_call {
    UMADV_CUDA_CALL_MALLOC,
    UMADV_CUDA_CALL_FREE,
    UMADV_CUDA_CALL_PREFETCH,
    UMADV_CUDA_CALL_PREFETCH_BATCH, /* one record per range of the call */
    UMADV_CUDA_CALL_ADVISE,
    UMADV_CUDA_CALL_EVENT_RECORD,
    UMADV_CUDA_CALL_HOST_ALLOC,
    UMADV_CUDA_CALL_HOST_FREE,
    UMADV_CUDA_CALL_DEVICE_ALLOC,
    UMADV_CUDA_CALL_DEVICE_FREE,
    UMADV_CUDA_CALL_MEMCPY,          /* ptr: the destination */
    UMADV_CUDA_CALL_MEMSET,          /* location: the byte value */
    UMADV_CUDA_CALL_DISCARD,         /* one record per range */
    UMADV_CUDA_CALL_DISCARD_PREFETCH,/* one record per range */
    UMADV_CUDA_CALL_STREAM_WAIT,     /* ptr: the event; stream: the one that waits */
    UMADV_CUDA_CALL_STREAM_SYNC,     /* the host waits for stream */
    UMADV_CUDA_CALL_EVENT_SYNC       /* the host waits for the event at ptr */
} umadv_cuda_call_t;

/* What the host backend fills discarded bytes with: a byte lost to a
 * discard reads as this, never as the data. */
#define UMADV_CUDA_HOST_POISON 0xDB

typedef struct umadv_cuda_host_record {
    umadv_cuda_call_t   call;
    void               *ptr;       /* EVENT_RECORD, STREAM_WAIT, EVENT_SYNC: the event */
    size_t              size;
    int                 location;  /* PREFETCH, ADVISE; MEMSET: the value */
    umadv_cuda_advice_t advice;    /* ADVISE */
    umadv_stream_t      stream;    /* every call on a stream (STREAM_WAIT: the one
                                    * that waits; STREAM_SYNC: the one waited for) */
    size_t              batch;     /* PREFETCH_BATCH: ranges in the call */
    int                 begun;     /* made on a thread that called thread_begin */
    const void         *src;       /* MEMCPY: the source */
    unsigned            thread;    /* the calling thread, numbered from 1 in order of
                                    * its first logged call */
} umadv_cuda_host_record_t;

typedef struct umadv_cuda_host_counters {
    uint64_t mallocs, frees;
    uint64_t managed_bytes;           /* live bytes from malloc_managed */
    uint64_t prefetches_to_device, prefetch_bytes_to_device;
    uint64_t prefetches_to_host, prefetch_bytes_to_host;
                                      /* ranges: each range of a batch counts */
    uint64_t prefetch_batches;        /* prefetch_batch calls */
    uint64_t advises[7];              /* by umadv_cuda_advice_t */
    uint64_t streams, events;         /* live handles */
    uint64_t pinned_allocs, pinned_frees;
    uint64_t pinned_bytes;            /* live bytes from host_alloc */
    uint64_t pinned_beside;           /* host_alloc calls at UMADV_PIN_BESIDE */
    uint64_t device_allocs, device_frees;
    uint64_t device_bytes;            /* live bytes from device_alloc */
    uint64_t memcpys, memcpy_bytes;
    uint64_t memsets, memset_bytes;
    uint64_t discards, discard_bytes; /* ranges: each range of a batch counts */
    uint64_t discard_prefetches, discard_prefetch_bytes; /* likewise */
    uint64_t unpopulated_copies;      /* memcpy_async into a range discarded and
                                       * not populated since (host.c) */
    uint64_t unpopulated_copy_bytes;  /* the bytes of it in such ranges */
    uint64_t discards_behind_work;    /* discard_batch calls on a stream with work
                                       * enqueued since its last synchronisation
                                       * (host.c, BUSY STREAMS) */
} umadv_cuda_host_counters_t;

/* The fake device: its memory size (what mem_get_info and the device
 * properties report; default 80 GiB) and how many devices exist (default
 * 1; 0 makes device_count return UMADV_ERR_NO_DEVICE). */
void umadv__cuda_host_configure(uint64_t device_memory, int device_count);

/* The host memory the fake host can spare for pinned memory: host_alloc
 * refuses (UMADV_ERR_NO_MEMORY) what would take the live pinned bytes
 * past it, as cudart's refuses what the host cannot spare (default:
 * unlimited; reset restores it). */
void umadv__cuda_host_configure_host(uint64_t host_spare);

void umadv__cuda_host_counters(umadv_cuda_host_counters_t *counters);

/* Start recording calls (dropping any earlier record), or stop with 0. */
void umadv__cuda_host_log_enable(int enable);

/* The calls recorded since logging was enabled; the array stays valid
 * until the next host backend call. */
const umadv_cuda_host_record_t *umadv__cuda_host_log(size_t *count_p);

/* Zero the counters and the log, restore the default device (tests). */
void umadv__cuda_host_reset(void);

#endif
