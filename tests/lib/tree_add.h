/* SPDX-License-Identifier: Apache-2.0 */
/* Call trees for the writers' tests, written as folded stacks. */
#ifndef XSPROF_TESTS_TREE_ADD_H
#define XSPROF_TESTS_TREE_ADD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "output/model/calltree.h"

/* Adds the stack "root;...;leaf" with weight; fails the test when calltree__add does. */
static inline void tree_add(struct calltree *t, const char *stack, uint64_t weight)
{
	char *copy = strdup(stack), *save = NULL, *tok;
	const char *frames[256];
	size_t n = 0;

	cr_assert(copy);
	for (tok = strtok_r(copy, ";", &save); tok && n < 256; tok = strtok_r(NULL, ";", &save))
		frames[n++] = tok;
	cr_assert_eq(calltree__add(t, frames, n, weight), 0, "adding %s", stack);
	free(copy);
}

#endif
