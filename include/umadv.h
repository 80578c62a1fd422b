/**
 * @file umadv.h
 * @brief umadv: Unified Memory advisor runtime for CUDA.
 *
 * Tensors live in CUDA managed memory. One profiling iteration records which
 * memory sections every step touches; a planner turns that trace into a
 * schedule of prefetches, evictions and advice under a GPU memory budget; every
 * later iteration replays the schedule so kernels do not fault.
 *
 * All functions return a ::umadv_status_t; output arguments come last and are
 * written only on success. A context is not thread-safe unless said otherwise:
 * mark steps and iterations from the thread that launches the work.
 */
#ifndef UMADV_H
#define UMADV_H

#include <stddef.h>
#include <stdint.h>

#include <umadv_version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(UMADV_BUILDING)
#  define UMADV_API __attribute__((visibility("default")))
#else
#  define UMADV_API
#endif

/** Version this header describes: major in the high 16 bits. */
#define UMADV_API_VERSION \
    ((unsigned)(UMADV_API_VERSION_MAJOR << 16) | (unsigned)UMADV_API_VERSION_MINOR)

/**
 * @brief Status codes. ::UMADV_OK is zero, errors are negative.
 *
 * ::UMADV_ERR_UNSUPPORTED (the operation cannot be done on this system) is
 * distinct from ::UMADV_ERR_NOT_ENFORCED (the operation was accepted as a
 * hint, but the system will not honour it strictly).
 */
typedef enum umadv_status {
    UMADV_OK                   = 0,
    UMADV_ERR_INVALID_PARAM    = -1,  /**< an argument or a UMADV_* value is invalid */
    UMADV_ERR_NO_MEMORY        = -2,  /**< host memory exhausted */
    UMADV_ERR_IO               = -3,  /**< a file could not be read or written */
    UMADV_ERR_CORRUPT          = -4,  /**< a trace file is malformed */
    UMADV_ERR_BUDGET_TOO_SMALL = -5,  /**< one step needs more than the GPU budget */
    UMADV_ERR_LIMIT            = -6,  /**< UMADV_MAX_MANAGED would be exceeded */
    UMADV_ERR_NO_DEVICE        = -7,  /**< no usable CUDA device */
    UMADV_ERR_CUDA             = -8,  /**< a CUDA call failed (logged with its name) */
    UMADV_ERR_CUPTI            = -9,  /**< a CUPTI call failed, or CUPTI is taken */
    UMADV_ERR_UNSUPPORTED      = -10, /**< not possible on this system or build */
    UMADV_ERR_NOT_ENFORCED     = -11, /**< accepted as a hint, not enforced */
    UMADV_ERR_NOT_FOUND        = -12, /**< address or name not known to umadv */
    UMADV_ERR_STATE            = -13, /**< call out of order (e.g. step end without begin) */
    UMADV_ERR_LAST             = -14
} umadv_status_t;

/** Placement policies; all run under the same budget for honest comparison. */
typedef enum umadv_policy {
    UMADV_POLICY_ORACLE       = 0, /**< no budget: everything resident (reference) */
    UMADV_POLICY_DEMAND       = 1, /**< LRU eviction at step boundaries, faults bring data in */
    UMADV_POLICY_PREFETCH_ALL = 2, /**< prefetch all a step uses at the step, no lookahead */
    UMADV_POLICY_PLAN         = 3, /**< umadv's schedule from the profiled trace */
    UMADV_POLICY_COUNT
} umadv_policy_t;

/** How a step uses memory. */
typedef enum umadv_access_mode {
    UMADV_ACCESS_READ  = 1,
    UMADV_ACCESS_WRITE = 2,
    UMADV_ACCESS_RW    = 3
} umadv_access_mode_t;

/** What an allocation holds; the planner and reports use it. */
typedef enum umadv_alloc_kind {
    UMADV_ALLOC_OTHER      = 0,
    UMADV_ALLOC_WEIGHT     = 1,
    UMADV_ALLOC_GRADIENT   = 2,
    UMADV_ALLOC_OPTIMIZER  = 3,
    UMADV_ALLOC_ACTIVATION = 4,
    UMADV_ALLOC_WORKSPACE  = 5,
    UMADV_ALLOC_INPUT      = 6,
    UMADV_ALLOC_KIND_COUNT
} umadv_alloc_kind_t;

/** Opaque runtime context. */
typedef struct umadv_context *umadv_context_t;

/** Which fields of ::umadv_context_params_t are set. */
enum umadv_context_field {
    UMADV_CONTEXT_FIELD_BUDGET       = 1u << 0,
    UMADV_CONTEXT_FIELD_POLICY       = 1u << 1,
    UMADV_CONTEXT_FIELD_DEVICE       = 1u << 2,
    UMADV_CONTEXT_FIELD_SECTION_SIZE = 1u << 3,
    UMADV_CONTEXT_FIELD_MAX_MANAGED  = 1u << 4,
    UMADV_CONTEXT_FIELD_FLAGS        = 1u << 5
};

/** Context flags. */
enum umadv_context_flag {
    /** Back the pool with host memory and record CUDA calls instead of
     *  making them: for tests and planning on machines without a GPU. */
    UMADV_CONTEXT_FLAG_HOST_ONLY = 1u << 0
};

/**
 * @brief Context parameters. Fields not named in @a field_mask take their
 * value from the UMADV_* environment (see umadv(7)) or the built-in default,
 * so new fields never break callers built against an older header.
 */
typedef struct umadv_context_params {
    uint64_t       field_mask;   /**< OR of ::umadv_context_field */
    uint64_t       budget;       /**< bytes of managed memory kept on the GPU; 0 = none */
    umadv_policy_t policy;       /**< placement policy */
    int            device;       /**< CUDA device ordinal */
    uint64_t       section_size; /**< bytes per section, a power of two >= 64 KiB */
    uint64_t       max_managed;  /**< refuse managed allocations beyond this; 0 = no limit */
    unsigned       flags;        /**< OR of ::umadv_context_flag */
} umadv_context_params_t;

/** Counters of a context; @a size must be set by the caller (ABI growth). */
typedef struct umadv_stats {
    size_t   size;             /**< sizeof(umadv_stats_t) as the caller knows it */
    uint64_t iterations;       /**< iterations begun */
    uint64_t steps;            /**< steps begun in all iterations */
    uint64_t managed_bytes;    /**< managed bytes allocated through umadv now */
    uint64_t managed_peak;     /**< largest managed_bytes seen */
    uint64_t allocations;      /**< live allocations */
    uint64_t fetched_bytes;    /**< bytes prefetched to the GPU */
    uint64_t evicted_bytes;    /**< bytes prefetched to the host */
    uint64_t gpu_faults;       /**< GPU page-fault groups seen in replay */
    uint64_t gpu_peak_used;    /**< peak of cudaMemGetInfo's used memory, sampled every
                                *   2 ms while a policy runs, less what was in use when
                                *   the context started. The driver keeps the GPU memory
                                *   of evicted managed pages, so this is a high-water
                                *   mark, not the residency (see resident_peak) */
    uint64_t fetch_ops;        /**< prefetch calls to the GPU, after coalescing */
    uint64_t evict_ops;        /**< prefetch calls to the host, after coalescing */
    uint64_t waits;            /**< steps that waited for their data */
    uint64_t wait_ns;          /**< time steps waited for their data in umadv_step_begin */
    uint64_t drift_ops;        /**< replay ops skipped: no block plays their allocation */
    uint64_t resident_peak;    /**< most managed bytes umadv kept on the GPU (accounted)
                                *   in the current (or last) policy run */
    uint64_t staged_bytes;     /**< bytes evicted through pinned host staging (copied
                                *   out, the range discarded; not in evicted_bytes) */
    uint64_t restored_bytes;   /**< bytes copied back from staging (not in fetched_bytes) */
    uint64_t plans;            /**< schedules built: the first plan and every one after
                                *   it (the timing pass's durations, a new budget or
                                *   policy, a re-profile after drift) */
    uint64_t managed_held;     /**< managed memory the pool holds now: its arenas, the
                                *   live blocks and the free space kept for reuse */
    uint64_t managed_held_peak;/**< largest managed_held seen */
    uint64_t released_bytes;   /**< dead data's bytes released without a copy: evictions
                                *   the plan knows nothing reads again (its next use
                                *   writes it fresh), discarded; not in evicted_bytes
                                *   or staged_bytes */
    uint64_t held_evictions;   /**< evictions of blocks with a ::umadv_hold_resident
                                *   hold: each waited for its hold before it was
                                *   issued (most find it completed) */
    uint64_t hold_wait_ns;     /**< time umadv's eviction lane spent in those waits */
    uint64_t profiles;         /**< profiled iterations that recorded a trace: the first
                                *   and every one after it (asked for, or a re-profile
                                *   after drift) */
    uint64_t profile_end_ns;   /**< time umadv's calls spent ending profiled iterations
                                *   on the calling thread: the iteration's work waited
                                *   for, CUPTI's records flushed, the trace built */
    uint64_t plan_ns;          /**< time spent building the schedules of plans */
    uint64_t replay_start_ns;  /**< time spent starting replays: the executor made, the
                                *   live blocks bound, the first moves queued */
    uint64_t alloc_calls;      /**< calls of umadv_malloc, umadv_free and
                                *   umadv_set_stageable, and of PyTorch's allocator
                                *   entry points (two per tensor) */
    uint64_t alloc_ns;         /**< time the application's threads spent in those
                                *   calls, waits for the context's lock included */
    uint64_t fault_count_ns;   /**< time umadv_iteration_begin() spent on replay
                                *   validation's fault counts: the iteration's faults
                                *   taken (CUPTI's records flushed), the counters
                                *   turned on or off */
} umadv_stats_t;

/** @return the API version of the library loaded at run time. */
UMADV_API unsigned umadv_get_api_version(void);

/** @return the library's release version, e.g. "0.1.0". */
UMADV_API const char *umadv_get_version_string(void);

/** @return a static, lowercase description of @a status; never NULL. */
UMADV_API const char *umadv_status_string(umadv_status_t status);

/** @return the policy's name ("oracle", "demand", "prefetch-all", "plan"). */
UMADV_API const char *umadv_policy_name(umadv_policy_t policy);

/**
 * @brief Parse a policy name.
 * @return ::UMADV_OK, or ::UMADV_ERR_INVALID_PARAM for an unknown name.
 */
UMADV_API umadv_status_t umadv_policy_parse(const char *name, umadv_policy_t *policy_p);

/**
 * @brief Parse a byte size: "8G", "512M", "1.5GiB", "4096", "64k".
 * Suffixes are binary (K = 1024); "GB" is read as GiB too, as users mean it.
 * @return ::UMADV_OK, or ::UMADV_ERR_INVALID_PARAM for a malformed or
 *         overflowing size.
 */
UMADV_API umadv_status_t umadv_size_parse(const char *text, uint64_t *bytes_p);

/**
 * @brief Create a context.
 * @param params  may be NULL: everything from the environment and defaults.
 * @return ::UMADV_OK;
 *         ::UMADV_ERR_INVALID_PARAM for a bad field or UMADV_* value (logged
 *         with the variable's name);
 *         ::UMADV_ERR_NO_DEVICE when no CUDA device is usable and
 *         ::UMADV_CONTEXT_FLAG_HOST_ONLY is not set;
 *         ::UMADV_ERR_CUDA when CUDA fails to initialise;
 *         ::UMADV_ERR_NO_MEMORY.
 */
UMADV_API umadv_status_t umadv_context_create(const umadv_context_params_t *params,
                                              umadv_context_t *ctx_p);

/** @brief Destroy a context and free everything it allocated. NULL is a no-op. */
UMADV_API void umadv_context_destroy(umadv_context_t ctx);

/**
 * @brief Allocate managed memory from the context's pool.
 * @param tag  a name for reports (may be NULL); copied.
 * @return ::UMADV_OK; ::UMADV_ERR_INVALID_PARAM for size 0;
 *         ::UMADV_ERR_LIMIT when UMADV_MAX_MANAGED would be exceeded;
 *         ::UMADV_ERR_CUDA when cudaMallocManaged fails; ::UMADV_ERR_NO_MEMORY.
 */
UMADV_API umadv_status_t umadv_malloc(umadv_context_t ctx, size_t size, const char *tag,
                                      void **ptr_p);

/**
 * @brief Free memory from umadv_malloc(). NULL is a no-op.
 * @return ::UMADV_OK; ::UMADV_ERR_NOT_FOUND if @a ptr is not a live block.
 */
UMADV_API umadv_status_t umadv_free(umadv_context_t ctx, void *ptr);

/**
 * @brief Let umadv stage @a ptr's evictions, or stop it. A staged eviction
 * copies the evicted sections into pinned host memory and discards them
 * in the managed range, which then holds NO VALID DATA until umadv
 * restores it: before a step that declares or was profiled to touch
 * it begins, before ::umadv_set_stageable(ctx, ptr, 0) returns, and before
 * ::umadv_set_policy, ::umadv_set_budget, a re-profile or
 * ::umadv_context_destroy end the replay. Opt in only for a block the CPU
 * touches inside steps that access it (the GPU's own accesses always
 * are); to read it on the CPU elsewhere, turn staging off first. The
 * PyTorch allocator entry points turn it on for every block (device
 * memory to PyTorch). UMADV_STAGE=0 (umadv(7)) disables staging.
 * @param ptr        a block from ::umadv_malloc.
 * @param stageable  nonzero: may be staged; 0: never (restored now).
 * @return ::UMADV_OK; ::UMADV_ERR_NOT_FOUND if @a ptr is not a live block;
 *         ::UMADV_ERR_INVALID_PARAM for a NULL context or pointer.
 */
UMADV_API umadv_status_t umadv_set_stageable(umadv_context_t ctx, void *ptr, int stageable);

/**
 * @brief Keep @a ptr's block on the GPU until the work queued on @a stream
 * so far has completed: an eviction of it that umadv issues after this
 * call (the replay's, or the profiling pass's) waits for that work first.
 * For a reader umadv cannot see, such as an NCCL collective on NCCL's own
 * stream, whose launch names a work descriptor rather than the buffer it
 * reduces: hold the buffer on a stream that waits for the collective
 * (umadv(7), DISTRIBUTED TRAINING). A later call replaces the hold. An
 * eviction already under way when the call is made is not recalled: hold
 * the block before the reader can start, or on a stream the reader's
 * work follows. Staging is a separate matter: a block a hidden reader
 * reads must also be made not stageable (::umadv_set_stageable).
 * @param ptr     a block from ::umadv_malloc.
 * @param stream  a cudaStream_t of the context's device; NULL: the legacy
 *                default stream.
 * @return ::UMADV_OK; ::UMADV_ERR_NOT_FOUND if @a ptr is not a live block;
 *         ::UMADV_ERR_INVALID_PARAM for a NULL context or pointer;
 *         ::UMADV_ERR_CUDA when the event cannot be created or recorded
 *         (the block keeps its earlier hold, if it had one).
 */
UMADV_API umadv_status_t umadv_hold_resident(umadv_context_t ctx, void *ptr, void *stream);

/**
 * @brief Name the call site of this thread's next allocations, for a
 * profile's report (umadv-profile(1), CALL SITES): until it is changed or
 * cleared, every allocation the calling thread makes through umadv, in
 * any context, has @a site as its site in profile mode instead of the
 * first native frame outside umadv and CUDA. For an interpreter whose
 * native stack says nothing of the program's line: umadv's Python
 * start-up hook declares the user's "file.py:42" around each module call.
 * Thread-local; cheap (a copy); outside profile mode it is kept unused.
 * @param site  the text ("train.py:42"), at most 255 bytes, copied;
 *              NULL or "" clears it.
 * @return ::UMADV_OK; ::UMADV_ERR_INVALID_PARAM for a site longer than
 *         255 bytes (the thread's site is then unchanged).
 */
UMADV_API umadv_status_t umadv_set_alloc_site(const char *site);

/**
 * @brief Mark the start of a training iteration. The first iteration after
 * ::umadv_profile_next_iteration() is recorded; replay starts after it.
 * @return ::UMADV_OK; ::UMADV_ERR_STATE if a step is still open.
 */
UMADV_API umadv_status_t umadv_iteration_begin(umadv_context_t ctx);

/**
 * @brief Mark the start of a step (a layer or kernel) on @a stream.
 * @param name    a name for reports (may be NULL); copied.
 * @param stream  the cudaStream_t the step's work runs on (NULL: legacy default).
 * @return ::UMADV_OK; ::UMADV_ERR_STATE if a step is already open or no
 *         iteration has begun.
 */
UMADV_API umadv_status_t umadv_step_begin(umadv_context_t ctx, const char *name, void *stream);

/**
 * @brief Declare that the open step touches [@a ptr, @a ptr + @a size).
 * Applications that know their access sets declare them; the profiler finds
 * them otherwise. Declared and profiled accesses are merged.
 * @return ::UMADV_OK; ::UMADV_ERR_NOT_FOUND if the range is not umadv
 *         memory; ::UMADV_ERR_STATE outside a step.
 */
UMADV_API umadv_status_t umadv_step_access(umadv_context_t ctx, const void *ptr, size_t size,
                                           umadv_access_mode_t mode);

/**
 * @brief Say that the open step's work touches nothing in umadv memory
 * but the ranges it declares (::umadv_step_access, before or after this
 * call). The profiling pass then takes the step on its word where it
 * otherwise could not in a trace with stageable blocks: its kernels
 * whose parameters CUDA does not describe (cuDNN's, cuBLAS's) are not
 * preceded by an eviction of every other block to find by faults what
 * else they touch, and staging may rest on its declarations. A fault in
 * the step outside what it declared (a block it touched first while off
 * the GPU) withdraws that for the whole profile: warned, nothing staged
 * on it. A touch of data already on the GPU makes no fault: a step that
 * says this and misses a stageable block may read discarded bytes in a
 * replay (umadv(7), STAGING). Does nothing outside a profiled iteration.
 * @return ::UMADV_OK; ::UMADV_ERR_STATE without an open step;
 *         ::UMADV_ERR_INVALID_PARAM for a NULL context;
 *         ::UMADV_ERR_NO_MEMORY (the step is then profiled as one that
 *         did not say so).
 */
UMADV_API umadv_status_t umadv_step_access_complete(umadv_context_t ctx);

/**
 * @brief Mark the end of the open step.
 * @param duration_ns  the step's measured time, or 0 to let umadv measure it.
 * @return ::UMADV_OK; ::UMADV_ERR_STATE without an open step.
 */
UMADV_API umadv_status_t umadv_step_end(umadv_context_t ctx, uint64_t duration_ns);

/** @brief Record the next iteration as the profile the plan is built from. */
UMADV_API umadv_status_t umadv_profile_next_iteration(umadv_context_t ctx);

/**
 * @brief Build the schedule from the recorded iteration for the context's
 * budget and policy.
 * @return ::UMADV_OK; ::UMADV_ERR_STATE when no complete iteration is
 *         recorded; ::UMADV_ERR_CUPTI when nothing was recorded because
 *         the iteration marked no steps and CUPTI could not trace its
 *         launches; ::UMADV_ERR_BUDGET_TOO_SMALL when a step alone needs
 *         more than the budget (logged with the step's name and size).
 */
UMADV_API umadv_status_t umadv_plan(umadv_context_t ctx);

/**
 * @brief Write the recorded trace to @a path in the umadv-trace(5) format.
 *
 * A regular file is replaced atomically once the whole trace is written
 * (a temporary file beside it, synced, renamed); on failure it stays as
 * it was. "-", devices and FIFOs are written as streams, never unlinked.
 * See umadv(1), OUTPUT FILES.
 * @return ::UMADV_OK; ::UMADV_ERR_STATE with nothing recorded;
 *         ::UMADV_ERR_CUPTI when the profile could not be recorded (as
 *         umadv_plan()); ::UMADV_ERR_INVALID_PARAM when @a path is the log
 *         file (UMADV_LOG_FILE) or a symbolic link to nothing;
 *         ::UMADV_ERR_IO when it cannot be written (logged with the path
 *         and the reason).
 */
UMADV_API umadv_status_t umadv_trace_save(umadv_context_t ctx, const char *path);

/**
 * @brief Switch the placement policy and, once an iteration has been
 * profiled, plan and replay again under it (the same budget), from the next
 * iteration on: baselines run one after another in one process. Before a
 * profile, the policy applies when umadv_plan() is called.
 * @return ::UMADV_OK; ::UMADV_ERR_INVALID_PARAM for an unknown policy;
 *         ::UMADV_ERR_STATE with a step open; ::UMADV_ERR_BUDGET_TOO_SMALL
 *         as umadv_plan() (the previous policy then stays).
 */
UMADV_API umadv_status_t umadv_set_policy(umadv_context_t ctx, umadv_policy_t policy);

/**
 * @brief Change the GPU memory budget at run time (what UMADV_BUDGET and
 * params.budget set at creation; the same rules: bytes, 0 = no budget).
 *
 * With an iteration already recorded, the budget is checked against its
 * steps now, and the schedule is planned again from that trace (no new
 * profile) at the next umadv_iteration_begin(), where the replay restarts
 * under the new budget: the iteration under way keeps the old one. Without
 * a recording yet, the budget is kept for umadv_plan(), which checks it.
 * The oracle policy ignores the budget, but it is checked and kept all the
 * same, for the policies that follow. May be called with a step open.
 * @return ::UMADV_OK;
 *         ::UMADV_ERR_BUDGET_TOO_SMALL when one recorded step alone needs
 *         more than @a bytes (logged with the step's index, name and the
 *         bytes it needs); the previous budget then stays;
 *         ::UMADV_ERR_INVALID_PARAM for a NULL context.
 */
UMADV_API umadv_status_t umadv_set_budget(umadv_context_t ctx, uint64_t bytes);

/** @brief Read counters into @a stats (set stats->size first). */
UMADV_API umadv_status_t umadv_get_stats(umadv_context_t ctx, umadv_stats_t *stats);

/**
 * @brief Write the measured timeline recorded so far (UMADV_TIMELINE,
 * umadv(7)) to @a path, or to UMADV_TIMELINE's file when @a path is NULL,
 * as a Chrome trace. The context writes it when destroyed; this is for a
 * process that ends without destroying it (os._exit in Python).
 * @return ::UMADV_OK; ::UMADV_ERR_INVALID_PARAM for a NULL context or when
 *         nothing is recorded (UMADV_TIMELINE was unset when the context
 *         was created); ::UMADV_ERR_IO when the file cannot be written
 *         (logged, naming it; an existing file is then left as it was).
 */
UMADV_API umadv_status_t umadv_timeline_save(umadv_context_t ctx, const char *path);

/**
 * @brief Return to CUDA the managed memory the pool holds but no live
 * allocation uses: its arenas left empty, which it keeps for reuse as
 * PyTorch's caching allocator keeps its segments
 * (torch.cuda.empty_cache() calls this under umadv run).
 * @param released_p  if not NULL, the bytes returned.
 * @return ::UMADV_OK; ::UMADV_ERR_INVALID_PARAM for a NULL context.
 */
UMADV_API umadv_status_t umadv_release_cached(umadv_context_t ctx, uint64_t *released_p);

/**
 * @name PyTorch allocator entry points
 * For torch.cuda.memory.CUDAPluggableAllocator(path, "umadv_torch_malloc",
 * "umadv_torch_free"). Two ways to use them:
 *  - as the process's allocator (torch.cuda.memory.change_current_allocator,
 *    before any CUDA allocation): every tensor is one umadv allocation, so
 *    traces and plans are per tensor, and umadv's pool does the caching
 *    (cudnn.benchmark must stay off: PyTorch 2.11 cannot query it);
 *  - as the allocator of a torch.cuda.MemPool, entered with
 *    torch.cuda.use_mem_pool() under torch.autograd.set_multithreading_enabled(False)
 *    (the pool routes one thread's allocations only): PyTorch's caching
 *    allocator asks for whole segments, and segments are what umadv sees.
 * They allocate from one process-wide context, created from the UMADV_*
 * environment on first use (thread-safe). Python
 * gets the same context from umadv_torch_context() (ctypes) to mark
 * iterations, profile, plan and save the trace with the calls above.
 * @{
 */

/**
 * @brief PyTorch's alloc function (PyTorch passes a size_t; its docs say
 * ssize_t, the same register). The context is made for @a device unless
 * UMADV_DEVICE is set; @a stream is ignored (managed memory is not
 * stream-ordered).
 * @return the block, or NULL (PyTorch then raises its out-of-memory error)
 *         with the reason logged: no context (its creation failed: the
 *         first error names the bad UMADV_* variable or the missing
 *         device), another device than the context's, UMADV_MAX_MANAGED
 *         reached, or cudaMallocManaged failing.
 */
UMADV_API void *umadv_torch_malloc(size_t size, int device, void *stream);

/**
 * @brief PyTorch's free function. NULL is a no-op; a pointer umadv did not
 * allocate is logged as an error and otherwise ignored (there is no status
 * to return). The caching allocator frees a segment only once the work
 * using it is done; so does this.
 */
UMADV_API void umadv_torch_free(void *ptr, size_t size, int device, void *stream);

/**
 * @brief The process's context behind umadv_torch_malloc(), created now
 * (on UMADV_DEVICE) if no allocation created it yet. It lives until the
 * process ends: do not destroy it.
 * @return ::UMADV_OK; the error of umadv_context_create(), the same on
 *         every later call, when the context could not be created.
 */
UMADV_API umadv_status_t umadv_torch_context(umadv_context_t *ctx_p);

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* UMADV_H */
