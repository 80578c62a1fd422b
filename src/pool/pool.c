#include "pool/pool.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "pool/tree.h"

typedef struct pool_arena pool_arena_t;

typedef struct pool_block {
    /* used: key (addr, 0) in pool->used; free: key (span, addr) in pool->free */
    umadv_tree_node_t  node;
    struct pool_block *prev, *next;   /* neighbours in the arena, by address */
    pool_arena_t      *arena;
    uintptr_t          addr;
    uint64_t           span;
    uint64_t           size;          /* asked for; 0 when free */
    uint64_t           user;
    int                is_free;
} pool_block_t;

struct pool_arena {
    uintptr_t     base;         /* section-aligned start of the usable range */
    uint64_t      size;         /* usable bytes, whole sections */
    void         *raw;          /* what malloc_managed returned */
    uint64_t      raw_size;
    pool_block_t *first;
    uint64_t      used_blocks;
    uint64_t     *marks;        /* a bit a section (SECTION MARKS); NULL: none set */
};

struct umadv_pool {
    umadv_pool_params_t params;
    umadv_tree_t        used, free;
    pool_arena_t      **arenas;       /* sorted by base */
    size_t              narenas, arenas_cap;
    pool_block_t       *block_cache;  /* unused block structs, linked by next */
    umadv_pool_stats_t  stats;
};

/* A free block this much larger than a request surely holds it aligned;
 * before resorting to one, try this many best-fit candidates. */
#define FIT_TRIES 8

static uint64_t round_up(uint64_t x, uint64_t align)
{
    return (x + align - 1) & ~(align - 1);
}

static pool_block_t *block_of(umadv_tree_node_t *node)
{
    return (pool_block_t *)node; /* node is the first member */
}

/* ---- block structs --------------------------------------------------- */

/* Make sure @n block structs are cached, so carving cannot fail half way. */
static umadv_status_t block_reserve(umadv_pool_t *pool, int n)
{
    int have = 0;

    for (pool_block_t *b = pool->block_cache; b != NULL && have < n; b = b->next)
        have++;
    for (; have < n; have++) {
        pool_block_t *b = malloc(sizeof(*b));
        if (b == NULL)
            return UMADV_ERR_NO_MEMORY;
        b->next = pool->block_cache;
        pool->block_cache = b;
    }
    return UMADV_OK;
}

static pool_block_t *block_take(umadv_pool_t *pool)
{
    pool_block_t *b = pool->block_cache;

    pool->block_cache = b->next;
    memset(b, 0, sizeof(*b));
    return b;
}

static void block_give(umadv_pool_t *pool, pool_block_t *b)
{
    b->next = pool->block_cache;
    pool->block_cache = b;
}

static void free_insert(umadv_pool_t *pool, pool_block_t *b)
{
    b->is_free = 1;
    b->size = 0;
    b->user = 0;
    b->node.key_hi = b->span;
    b->node.key_lo = b->addr;
    umadv__tree_insert(&pool->free, &b->node);
    pool->stats.free_blocks++;
}

static void free_remove(umadv_pool_t *pool, pool_block_t *b)
{
    umadv__tree_remove(&pool->free, &b->node);
    pool->stats.free_blocks--;
}

/* Cut @b after @first_len bytes; the new block (returned) takes the rest. */
static pool_block_t *block_split(umadv_pool_t *pool, pool_block_t *b, uint64_t first_len)
{
    pool_block_t *rest = block_take(pool);

    rest->arena = b->arena;
    rest->addr  = b->addr + first_len;
    rest->span  = b->span - first_len;
    rest->prev  = b;
    rest->next  = b->next;
    if (b->next != NULL)
        b->next->prev = rest;
    b->next = rest;
    b->span = first_len;
    return rest;
}

/* Fold @next, a free block out of the tree, into its predecessor @b. */
static void block_absorb(umadv_pool_t *pool, pool_block_t *b, pool_block_t *next)
{
    b->span += next->span;
    b->next = next->next;
    if (next->next != NULL)
        next->next->prev = b;
    block_give(pool, next);
}

/* ---- arenas ---------------------------------------------------------- */

/* Index of the first arena whose base is above @addr. */
static size_t arena_upper(const umadv_pool_t *pool, uintptr_t addr)
{
    size_t lo = 0, hi = pool->narenas;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pool->arenas[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static pool_arena_t *arena_find(const umadv_pool_t *pool, uintptr_t addr)
{
    size_t i = arena_upper(pool, addr);
    pool_arena_t *a;

    if (i == 0)
        return NULL;
    a = pool->arenas[i - 1];
    return addr - a->base < a->size ? a : NULL;
}

/* Words of an arena's section marks (SECTION MARKS). */
static uint64_t marks_words(const umadv_pool_t *pool, const pool_arena_t *arena)
{
    return UMADV_DIV_ROUND_UP(arena->size / pool->params.section_size, 64);
}

/* The arena's memory and all it owns back. */
static void arena_free(umadv_pool_t *pool, pool_arena_t *arena)
{
    pool->params.ops->free(arena->raw, arena->raw_size);
    free(arena->marks);
    free(arena);
}

static void arena_release(umadv_pool_t *pool, pool_arena_t *arena)
{
    size_t i = arena_upper(pool, arena->base) - 1;

    /* An empty arena is a single free block. */
    free_remove(pool, arena->first);
    block_give(pool, arena->first);
    memmove(&pool->arenas[i], &pool->arenas[i + 1],
            (pool->narenas - i - 1) * sizeof(*pool->arenas));
    pool->narenas--;
    pool->stats.arena_bytes -= arena->raw_size;
    pool->stats.arenas--;
    arena_free(pool, arena);
}

uint64_t umadv__pool_release_empty(umadv_pool_t *pool, uint64_t want)
{
    uint64_t returned = 0;

    while (returned < want) {
        pool_arena_t *largest = NULL;

        for (size_t i = 0; i < pool->narenas; i++) {
            pool_arena_t *a = pool->arenas[i];
            if (a->used_blocks == 0 && (largest == NULL || a->raw_size > largest->raw_size))
                largest = a;
        }
        if (largest == NULL)
            break;
        returned += largest->raw_size;
        arena_release(pool, largest);
    }
    return returned;
}

static void log_limit(const umadv_pool_t *pool, uint64_t request, uint64_t need)
{
    char want[32], grow[32], held[32], max[32];

    umadv_error("managed memory limit: a request of %s needs %s more managed memory, "
                "beyond UMADV_MAX_MANAGED=%s (held now: %s)",
                umadv__size_format(request, want, sizeof(want)),
                umadv__size_format(need, grow, sizeof(grow)),
                umadv__size_format(pool->params.max_managed, max, sizeof(max)),
                umadv__size_format(pool->stats.arena_bytes, held, sizeof(held)));
}

/* Bytes for a new arena that must hold @need (whole sections), within
 * the limit. */
static umadv_status_t arena_size_for(umadv_pool_t *pool, uint64_t request, uint64_t need,
                                     uint64_t *size_p)
{
    uint64_t size = UMADV_MAX(pool->params.arena_size, need);
    uint64_t max = pool->params.max_managed, room;

    if (max == 0) {
        *size_p = size;
        return UMADV_OK;
    }
    if (pool->stats.arena_bytes + need > max)
        umadv__pool_release_empty(pool, pool->stats.arena_bytes + need - max);
    if (pool->stats.arena_bytes > max || need > max - pool->stats.arena_bytes) {
        log_limit(pool, request, need);
        return UMADV_ERR_LIMIT;
    }
    room = (max - pool->stats.arena_bytes) & ~(pool->params.section_size - 1);
    *size_p = UMADV_MAX(need, UMADV_MIN(size, room));
    return UMADV_OK;
}

/* malloc_managed, with the usable section-aligned range inside it. cudart
 * cannot be asked for an alignment; when the address is off, the range
 * loses a section, and if that leaves too little we retry one larger. */
static umadv_status_t arena_map(umadv_pool_t *pool, uint64_t request, uint64_t need,
                                uint64_t size, pool_arena_t *arena)
{
    uint64_t section = pool->params.section_size;
    umadv_status_t status;
    uintptr_t start;
    void *raw;

    status = pool->params.ops->malloc_managed(size, section, &raw);
    if (status != UMADV_OK)
        return status;
    start = round_up((uintptr_t)raw, section);
    if (start != (uintptr_t)raw && size - section < need) {
        pool->params.ops->free(raw, size);
        if (pool->params.max_managed != 0 &&
            pool->stats.arena_bytes + size + section > pool->params.max_managed) {
            log_limit(pool, request, size + section);
            return UMADV_ERR_LIMIT;
        }
        return arena_map(pool, request, need, size + section, arena);
    }
    arena->raw      = raw;
    arena->raw_size = size;
    arena->base     = start;
    arena->size     = ((uintptr_t)raw + size - start) & ~(section - 1);
    return UMADV_OK;
}

static umadv_status_t arena_add(umadv_pool_t *pool, uint64_t request, uint64_t need,
                                pool_block_t **block_p)
{
    pool_arena_t *arena;
    uint64_t size;
    umadv_status_t status;
    size_t i;

    status = arena_size_for(pool, request, need, &size);
    if (status != UMADV_OK)
        return status;
    status = umadv__array_reserve((void **)&pool->arenas, &pool->arenas_cap,
                                  pool->narenas + 1, sizeof(*pool->arenas));
    if (status != UMADV_OK)
        return status;
    arena = calloc(1, sizeof(*arena));
    if (arena == NULL)
        return UMADV_ERR_NO_MEMORY;
    status = arena_map(pool, request, need, size, arena);
    if (status != UMADV_OK)
        goto err_free_arena;
    arena->marks = calloc(marks_words(pool, arena), sizeof(*arena->marks)); /* NULL: none */
    i = arena_upper(pool, arena->base);
    memmove(&pool->arenas[i + 1], &pool->arenas[i],
            (pool->narenas - i) * sizeof(*pool->arenas));
    pool->arenas[i] = arena;
    pool->narenas++;
    pool->stats.arenas++;
    pool->stats.arena_bytes += arena->raw_size;
    pool->stats.arena_peak = UMADV_MAX(pool->stats.arena_peak, pool->stats.arena_bytes);

    arena->first = block_take(pool); /* reserved by the caller */
    arena->first->arena = arena;
    arena->first->addr  = arena->base;
    arena->first->span  = arena->size;
    free_insert(pool, arena->first);
    *block_p = arena->first;
    return UMADV_OK;

err_free_arena:
    free(arena);
    return status;
}

/* ---- blocks ---------------------------------------------------------- */

static int block_fits(const pool_block_t *b, uint64_t span, uint64_t align)
{
    uint64_t pad = round_up(b->addr, align) - b->addr;

    return b->span >= pad && b->span - pad >= span;
}

/* Best fit: the smallest free block that holds @span at @align. */
static pool_block_t *fit_search(const umadv_pool_t *pool, uint64_t span, uint64_t align)
{
    umadv_tree_node_t *node = umadv__tree_ceil(&pool->free, span, 0);

    for (int tries = 0; node != NULL && tries < FIT_TRIES; tries++) {
        if (block_fits(block_of(node), span, align))
            return block_of(node);
        node = umadv__tree_next(&pool->free, node);
    }
    if (node == NULL || align <= UMADV_POOL_ALIGN)
        return NULL;
    node = umadv__tree_ceil(&pool->free, span + align - UMADV_POOL_ALIGN, 0);
    return node != NULL ? block_of(node) : NULL;
}

/* Take [aligned start, +span) out of free block @b; the rest stays free. */
static pool_block_t *carve(umadv_pool_t *pool, pool_block_t *b, uint64_t span,
                           uint64_t align)
{
    uint64_t pad = round_up(b->addr, align) - b->addr;

    free_remove(pool, b);
    if (pad != 0) {
        pool_block_t *front = b;
        b = block_split(pool, front, pad);
        free_insert(pool, front);
    }
    if (b->span > span)
        free_insert(pool, block_split(pool, b, span));
    b->is_free = 0;
    b->node.key_hi = b->addr;
    b->node.key_lo = 0;
    umadv__tree_insert(&pool->used, &b->node);
    b->arena->used_blocks++;
    return b;
}

umadv_status_t umadv__pool_malloc(umadv_pool_t *pool, uint64_t size, void **ptr_p)
{
    void *arena_base;

    return umadv__pool_malloc_user(pool, size, 0, ptr_p, &arena_base);
}

/* A block's alignment: a section where it spans one or more (pool.h). */
static uint64_t block_align(const umadv_pool_t *pool, uint64_t size)
{
    return size >= pool->params.section_size ? pool->params.section_size : UMADV_POOL_ALIGN;
}

/* The bytes a block of @size occupies (its span, pool_loc_t). */
static uint64_t block_span(const umadv_pool_t *pool, uint64_t size)
{
    return round_up(size, block_align(pool, size));
}

umadv_status_t umadv__pool_malloc_user(umadv_pool_t *pool, uint64_t size, uint64_t user,
                                       void **ptr_p, void **arena_base_p)
{
    uint64_t section = pool->params.section_size;
    uint64_t align = block_align(pool, size);
    uint64_t span;
    pool_block_t *b;
    umadv_status_t status;

    if (size == 0 || size > (UINT64_C(1) << 62))
        return UMADV_ERR_INVALID_PARAM;
    span = block_span(pool, size);
    status = block_reserve(pool, 3); /* arena block, front pad, tail */
    if (status != UMADV_OK)
        return status;
    b = fit_search(pool, span, align);
    if (b == NULL) {
        status = arena_add(pool, size, round_up(span, section), &b);
        if (status != UMADV_OK)
            return status;
    }
    b = carve(pool, b, span, align);
    b->size = size;
    pool->stats.bytes_in_use += size;
    pool->stats.bytes_peak = UMADV_MAX(pool->stats.bytes_peak, pool->stats.bytes_in_use);
    pool->stats.span_in_use += span;
    pool->stats.blocks++;
    b->user = user;
    *ptr_p = (void *)b->addr;
    *arena_base_p = (void *)b->arena->base;
    return UMADV_OK;
}

static pool_block_t *used_find(const umadv_pool_t *pool, const void *ptr)
{
    umadv_tree_node_t *node = umadv__tree_floor(&pool->used, (uintptr_t)ptr, 0);

    return node != NULL && node->key_hi == (uintptr_t)ptr ? block_of(node) : NULL;
}

umadv_status_t umadv__pool_free(umadv_pool_t *pool, void *ptr)
{
    pool_block_t *b = used_find(pool, ptr);

    if (b == NULL)
        return UMADV_ERR_NOT_FOUND;
    umadv__tree_remove(&pool->used, &b->node);
    pool->stats.bytes_in_use -= b->size;
    pool->stats.span_in_use -= b->span;
    pool->stats.blocks--;
    b->arena->used_blocks--;
    if (b->prev != NULL && b->prev->is_free) {
        pool_block_t *prev = b->prev;
        free_remove(pool, prev);
        block_absorb(pool, prev, b);
        b = prev;
    }
    if (b->next != NULL && b->next->is_free) {
        free_remove(pool, b->next);
        block_absorb(pool, b, b->next);
    }
    free_insert(pool, b); /* an arena left empty is kept (pool.h, Arenas) */
    return UMADV_OK;
}

umadv_status_t umadv__pool_lookup(const umadv_pool_t *pool, const void *addr,
                                  umadv_pool_loc_t *loc)
{
    uintptr_t a = (uintptr_t)addr;
    umadv_tree_node_t *node;
    const pool_block_t *b;
    uint64_t section = pool->params.section_size;

    if (arena_find(pool, a) == NULL)
        return UMADV_ERR_NOT_FOUND; /* cheap answer for foreign addresses */
    node = umadv__tree_floor(&pool->used, a, 0);
    if (node == NULL || a - block_of(node)->addr >= block_of(node)->span)
        return UMADV_ERR_NOT_FOUND;
    b = block_of(node);
    loc->base       = (void *)b->addr;
    loc->size       = b->size;
    loc->span       = b->span;
    loc->offset     = a - b->addr;
    loc->section    = (uint32_t)(loc->offset / section);
    loc->nsections  = (uint32_t)UMADV_DIV_ROUND_UP(b->size, section);
    loc->arena_base = (void *)b->arena->base;
    loc->arena_size = b->arena->size;
    loc->user       = b->user;
    return UMADV_OK;
}

void umadv__pool_foreach(const umadv_pool_t *pool,
                         void (*fn)(void *arg, void *base, uint64_t size, uint64_t user),
                         void *arg)
{
    for (size_t i = 0; i < pool->narenas; i++) {
        for (pool_block_t *b = pool->arenas[i]->first; b != NULL; b = b->next) {
            if (!b->is_free)
                fn(arg, (void *)b->addr, b->size, b->user);
        }
    }
}

void umadv__pool_get_stats(const umadv_pool_t *pool, umadv_pool_stats_t *stats)
{
    *stats = pool->stats;
}

uint64_t umadv__pool_section_size(const umadv_pool_t *pool)
{
    return pool->params.section_size;
}

/* ---- section marks ----------------------------------------------------- */

/* Nothing where an address of [@lo, @hi) lies in no arena or in one
 * without marks. */
void umadv__pool_mark(umadv_pool_t *pool, uintptr_t lo, uintptr_t hi, int on)
{
    uint64_t section = pool->params.section_size;

    while (lo < hi) {
        const pool_arena_t *arena = arena_find(pool, lo);
        uint64_t from, to;
        uintptr_t end;

        if (arena == NULL || arena->marks == NULL)
            return;
        end = UMADV_MIN(hi, arena->base + arena->size);
        from = lo - arena->base;
        to = end - arena->base;
        from = (on ? round_up(from, section) : from) / section;
        to = (on ? to : round_up(to, section)) / section;
        for (uint64_t s = from; s < to; s++) {
            if (on)
                arena->marks[s / 64] |= UINT64_C(1) << (s % 64);
            else
                arena->marks[s / 64] &= ~(UINT64_C(1) << (s % 64));
        }
        lo = end;
    }
}

static int mark_is_set(const uint64_t *marks, uint64_t s)
{
    return (marks[s / 64] >> (s % 64)) & 1;
}

uintptr_t umadv__pool_unmarked(const umadv_pool_t *pool, uintptr_t lo, uintptr_t hi,
                               uintptr_t *end_p)
{
    const pool_arena_t *arena = lo < hi ? arena_find(pool, lo) : NULL;
    uint64_t section = pool->params.section_size, s, end, last;

    *end_p = hi;
    if (lo >= hi)
        return hi;
    if (arena == NULL || arena->marks == NULL || hi > arena->base + arena->size)
        return lo; /* nothing known there */
    s = (lo - arena->base) / section;
    last = round_up(hi - arena->base, section) / section;
    while (s < last && mark_is_set(arena->marks, s))
        s++;
    if (s == last)
        return hi;
    for (end = s; end < last && !mark_is_set(arena->marks, end); end++)
        ;
    *end_p = UMADV_MIN(hi, arena->base + end * section);
    return UMADV_MAX(lo, arena->base + s * section);
}

void umadv__pool_marks_clear(umadv_pool_t *pool)
{
    for (size_t i = 0; i < pool->narenas; i++) {
        if (pool->arenas[i]->marks != NULL)
            memset(pool->arenas[i]->marks, 0,
                   marks_words(pool, pool->arenas[i]) * sizeof(uint64_t));
    }
}

/* ---- life cycle ------------------------------------------------------ */

umadv_status_t umadv__pool_create(const umadv_pool_params_t *params, umadv_pool_t **pool_p)
{
    uint64_t section = params->section_size;
    umadv_pool_t *pool;

    if (params->ops == NULL || section < UMADV_POOL_ALIGN || (section & (section - 1)) != 0 ||
        params->arena_size == 0 || params->arena_size > (UINT64_C(1) << 62))
        return UMADV_ERR_INVALID_PARAM;
    pool = calloc(1, sizeof(*pool));
    if (pool == NULL)
        return UMADV_ERR_NO_MEMORY;
    pool->params = *params;
    pool->params.arena_size = round_up(params->arena_size, section);
    umadv__tree_init(&pool->used, (uintptr_t)pool ^ 0x5bd1e995u);
    umadv__tree_init(&pool->free, ((uintptr_t)pool << 7) ^ 0x27d4eb2fu);
    *pool_p = pool;
    return UMADV_OK;
}

void umadv__pool_destroy(umadv_pool_t *pool)
{
    if (pool == NULL)
        return;
    for (size_t i = 0; i < pool->narenas; i++) {
        pool_arena_t *arena = pool->arenas[i];
        pool_block_t *b = arena->first;
        while (b != NULL) {
            pool_block_t *next = b->next;
            free(b);
            b = next;
        }
        arena_free(pool, arena);
    }
    while (pool->block_cache != NULL) {
        pool_block_t *next = pool->block_cache->next;
        free(pool->block_cache);
        pool->block_cache = next;
    }
    free(pool->arenas);
    free(pool);
}
