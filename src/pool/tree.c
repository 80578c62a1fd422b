#include "pool/tree.h"

static int key_cmp(uint64_t hi, uint64_t lo, const umadv_tree_node_t *node)
{
    if (hi != node->key_hi)
        return hi < node->key_hi ? -1 : 1;
    if (lo != node->key_lo)
        return lo < node->key_lo ? -1 : 1;
    return 0;
}

void umadv__tree_init(umadv_tree_t *tree, uint64_t seed)
{
    tree->root  = NULL;
    tree->rng   = seed ? seed : 0x9e3779b97f4a7c15ull;
    tree->count = 0;
}

static uint32_t next_prio(umadv_tree_t *tree)
{
    tree->rng ^= tree->rng << 13;
    tree->rng ^= tree->rng >> 7;
    tree->rng ^= tree->rng << 17;
    return (uint32_t)(tree->rng >> 32);
}

/* Split @t into keys < (hi, lo) and the rest. Recursion depth is the
 * tree's height: O(log n) expected. */
static void split(umadv_tree_node_t *t, uint64_t hi, uint64_t lo, umadv_tree_node_t **l,
                  umadv_tree_node_t **r)
{
    if (t == NULL) {
        *l = *r = NULL;
    } else if (key_cmp(hi, lo, t) > 0) {
        split(t->right, hi, lo, &t->right, r);
        *l = t;
    } else {
        split(t->left, hi, lo, l, &t->left);
        *r = t;
    }
}

/* Join @a and @b, every key of @a below every key of @b. */
static umadv_tree_node_t *merge(umadv_tree_node_t *a, umadv_tree_node_t *b)
{
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    if (a->prio > b->prio) {
        a->right = merge(a->right, b);
        return a;
    }
    b->left = merge(a, b->left);
    return b;
}

void umadv__tree_insert(umadv_tree_t *tree, umadv_tree_node_t *node)
{
    umadv_tree_node_t **link = &tree->root;

    node->prio = next_prio(tree);
    while (*link != NULL && (*link)->prio >= node->prio)
        link = key_cmp(node->key_hi, node->key_lo, *link) < 0 ? &(*link)->left
                                                               : &(*link)->right;
    split(*link, node->key_hi, node->key_lo, &node->left, &node->right);
    *link = node;
    tree->count++;
}

void umadv__tree_remove(umadv_tree_t *tree, umadv_tree_node_t *node)
{
    umadv_tree_node_t **link = &tree->root;

    while (*link != node)
        link = key_cmp(node->key_hi, node->key_lo, *link) < 0 ? &(*link)->left
                                                               : &(*link)->right;
    *link = merge(node->left, node->right);
    node->left = node->right = NULL;
    tree->count--;
}

umadv_tree_node_t *umadv__tree_ceil(const umadv_tree_t *tree, uint64_t hi, uint64_t lo)
{
    umadv_tree_node_t *t = tree->root, *best = NULL;

    while (t != NULL) {
        int c = key_cmp(hi, lo, t);
        if (c == 0)
            return t;
        if (c < 0) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

umadv_tree_node_t *umadv__tree_floor(const umadv_tree_t *tree, uint64_t hi, uint64_t lo)
{
    umadv_tree_node_t *t = tree->root, *best = NULL;

    while (t != NULL) {
        int c = key_cmp(hi, lo, t);
        if (c == 0)
            return t;
        if (c > 0) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best;
}

umadv_tree_node_t *umadv__tree_next(const umadv_tree_t *tree, const umadv_tree_node_t *node)
{
    if (node->key_lo != UINT64_MAX)
        return umadv__tree_ceil(tree, node->key_hi, node->key_lo + 1);
    if (node->key_hi != UINT64_MAX)
        return umadv__tree_ceil(tree, node->key_hi + 1, 0);
    return NULL;
}
