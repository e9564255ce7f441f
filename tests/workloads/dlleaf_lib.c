// SPDX-License-Identifier: Apache-2.0
/*
 * The library xs_dlleaf opens after it has started: frame pointers but none in the leaf, as
 * xs_fpleaf. dlleaf_caller -> dlleaf_leaf, which spins; a frame-pointer step from the leaf
 * skips dlleaf_caller.
 */
#include <stdint.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE uint64_t dlleaf_leaf(uint64_t n)
{
	uint64_t x = 0;

	for (uint64_t i = 0; i < n; i++)
		x += i * i ^ (x >> 3);
	return x;
}

NOINLINE void dlleaf_caller(void)
{
	sink += dlleaf_leaf(1000000);
	sink ^= 7; /* no tail call */
}
