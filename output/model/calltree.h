/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The aggregated profile every writer reads: a call tree (trie) of frame names, root first,
 * each node weighted by the samples (or microseconds) that ended there.
 */
#ifndef XSPROF_OUTPUT_CALLTREE_H
#define XSPROF_OUTPUT_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

struct calltree;

struct calltree *calltree__new(void);
void calltree__free(struct calltree *t);

/*
 * Add one stack: frames[0] is the root (for CPU samples the process comm), frames[n - 1] the
 * leaf. Frames are copied (interned). Returns 0, -EINVAL (n == 0, NULL or empty frame name) or
 * -ENOMEM (the tree is untouched then).
 */
int calltree__add(struct calltree *t, const char *const *frames, size_t n, uint64_t weight);

/* Sum of all weights added. */
uint64_t calltree__total(const struct calltree *t);

/*
 * Traversal. The walk is depth first, pre-order, children in byte order of their names
 * (strcmp), so every writer produces the same output for the same tree. depth is 0 for a
 * frames[0] node; name stays valid until the tree is freed, and equal names are one pointer
 * (interned).
 */
struct calltree_frame {
	const char *name;
	uint64_t self;	/* weight of stacks that ended at this frame */
	uint64_t total; /* self plus the totals of all children */
	size_t depth;
};

/* A non-zero return stops the walk, and calltree__walk returns it. */
typedef int (*calltree_visit_fn)(const struct calltree_frame *frame, void *ctx);

/* Returns 0, what fn returned, or -ENOMEM. */
int calltree__walk(const struct calltree *t, calltree_visit_fn fn, void *ctx);

/* Add src's stacks to dst, each weight scaled by num / den and rounded (0s left out). 0 or
 * -errno (-E2BIG past 512 frames deep: such stacks are left out). */
int calltree__add_scaled(struct calltree *dst, const struct calltree *src, uint64_t num,
			 uint64_t den);

/* Length of the longest stack added (0 for an empty tree). */
size_t calltree__max_depth(const struct calltree *t);

/* Number of frames (nodes) in the tree, not counting the implicit root. */
size_t calltree__node_count(const struct calltree *t);

#endif
