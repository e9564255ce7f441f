// SPDX-License-Identifier: Apache-2.0
/*
 * xs_fpdeep SECONDS: one thread 64 frames deep in a recursion, spinning in the leaf, built with
 * frame pointers (tests/daemon/unwind/tests.cmake) so that a frame-pointer walk and a table walk
 * find the same whole stack: bench/unwind.sh compares what each costs per sample.
 */
#include <stdlib.h>
#include <time.h>

#define DEPTH 64

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long xs_fpdeep_leaf(unsigned long x)
{
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

/* Not a tail call, and not turned into a loop: each level keeps its own frame. */
__attribute__((noinline)) unsigned long xs_fpdeep(int n, unsigned long x)
{
	unsigned long r;

	if (!n)
		return xs_fpdeep_leaf(x);
	r = xs_fpdeep(n - 1, x + 1);
	sink += r;
	return r ^ (unsigned long)n;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 10);

	while (now() < end)
		sink += xs_fpdeep(DEPTH - 1, sink);
	return 0;
}
