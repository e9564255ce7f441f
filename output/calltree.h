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

#endif
