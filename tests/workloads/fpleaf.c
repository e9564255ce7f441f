// SPDX-License-Identifier: Apache-2.0
/*
 * xs_fpleaf SECONDS: frame pointers everywhere but in leaf functions (-fno-omit-frame-pointer
 * -momit-leaf-frame-pointer, as GCC builds leaves when asked to): the leaf pushes no frame, so a
 * frame-pointer walk from inside it goes straight from the leaf to its caller's caller, in every
 * frame-pointer profiler. main -> fpleaf_caller -> fpleaf_leaf, which spins.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE uint64_t fpleaf_leaf(uint64_t n)
{
	uint64_t x = 0;

	for (uint64_t i = 0; i < n; i++)
		x += i * i ^ (x >> 3);
	return x;
}

NOINLINE void fpleaf_caller(void)
{
	sink += fpleaf_leaf(1000000);
	sink ^= 7; /* no tail call */
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		fpleaf_caller();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	return 0;
}
