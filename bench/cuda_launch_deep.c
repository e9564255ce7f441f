// SPDX-License-Identifier: Apache-2.0
/*
 * A PyTorch-shaped stack for xs_cuda_bench's -deep modes: each launch call made under a chain
 * of DEPTH frames built without frame pointers (as NVIDIA's and PyTorch's libraries are), so
 * the probe's walk needs the unwind tables, and each chain a new one: frame k is one of two
 * functions, chosen by bit k % 16 of the call's number, so consecutive calls differ within the
 * few frames nearest the launch and the probe can never reuse the stack it walked before.
 * Built with -fomit-frame-pointer -fno-optimize-sibling-calls (tests/daemon/cuda/tests.cmake).
 */
#include <stdint.h>

typedef void (*deep_leaf)(long i, void *arg);

static void deep_a(int depth, long i, deep_leaf leaf, void *arg);
static void deep_b(int depth, long i, deep_leaf leaf, void *arg);

static volatile long deep_sink;

static void deep_next(int depth, long i, deep_leaf leaf, void *arg)
{
	if (depth <= 0)
		leaf(i, arg);
	else if ((i >> (depth % 16)) & 1)
		deep_a(depth - 1, i, leaf, arg);
	else
		deep_b(depth - 1, i, leaf, arg);
}

/* Two copies with their own call sites: a frame's return address says which ran. The work
 * after the call keeps it a call, not a jump. */
__attribute__((noinline)) static void deep_a(int depth, long i, deep_leaf leaf, void *arg)
{
	deep_next(depth, i, leaf, arg);
	deep_sink += depth;
}

__attribute__((noinline)) static void deep_b(int depth, long i, deep_leaf leaf, void *arg)
{
	deep_next(depth, i, leaf, arg);
	deep_sink -= depth;
}

/* leaf(i, arg) at the bottom of DEPTH frames (two per level: deep_a/b and deep_next). */
__attribute__((noinline)) void xs_deep_call(int depth, long i, deep_leaf leaf, void *arg)
{
	deep_next(depth, i, leaf, arg);
	deep_sink++;
}
