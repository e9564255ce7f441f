// SPDX-License-Identifier: Apache-2.0
/* DWARF fixture: a function inlined into another, built -O2 -g, for file:line and inline frames. */
#include "fixture.h"

static inline __attribute__((always_inline)) int symfix_inl_inner(int x)
{
	int acc = 0;

	for (int i = 0; i < x; i++)
		acc += i * i ^ x;
	return acc;
}

SYMFIX_FN int symfix_inl_outer(int x)
{
	return symfix_inl_inner(x) + 3;
}
