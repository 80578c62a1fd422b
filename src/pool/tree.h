/*
 * An intrusive treap: a binary search tree kept balanced in expectation by
 * random heap priorities. Search, insert and remove take expected
 * O(log n) time, whatever the order of the keys (pool addresses arrive
 * sorted, which would degrade a plain tree to a list).
 *
 * Keys are pairs (hi, lo) compared lexicographically and must be unique:
 * the pool orders used blocks by (address, 0) and free blocks by
 * (size, address). The node is embedded in the caller's struct.
 */
#ifndef UMADV_POOL_TREE_H
#define UMADV_POOL_TREE_H

#include <stddef.h>
#include <stdint.h>

typedef struct umadv_tree_node {
    struct umadv_tree_node *left, *right;
    uint64_t                key_hi, key_lo;
    uint32_t                prio;
} umadv_tree_node_t;

typedef struct umadv_tree {
    umadv_tree_node_t *root;
    uint64_t           rng;    /* xorshift state for priorities */
    size_t             count;
} umadv_tree_t;

void umadv__tree_init(umadv_tree_t *tree, uint64_t seed);

/* Insert @node, whose key fields are set and not already in the tree. */
void umadv__tree_insert(umadv_tree_t *tree, umadv_tree_node_t *node);

/* Remove @node, which must be in the tree. */
void umadv__tree_remove(umadv_tree_t *tree, umadv_tree_node_t *node);

/* The node with the smallest key >= (hi, lo), or NULL. */
umadv_tree_node_t *umadv__tree_ceil(const umadv_tree_t *tree, uint64_t hi, uint64_t lo);

/* The node with the largest key <= (hi, lo), or NULL. */
umadv_tree_node_t *umadv__tree_floor(const umadv_tree_t *tree, uint64_t hi, uint64_t lo);

/* The node after @node in key order, or NULL. */
umadv_tree_node_t *umadv__tree_next(const umadv_tree_t *tree, const umadv_tree_node_t *node);

#endif
