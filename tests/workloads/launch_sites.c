// SPDX-License-Identifier: Apache-2.0
/*
 * xs_launch_sites ROUNDS: CUDA launches whose stacks change in the ways a stack reuse must see
 * (bpf/launch_reuse.bpf.h), from code built without frame pointers. Each launch calls the real
 * cudaLaunchKernel (its entry uprobe) and fires xsprof:launch through the fake injection library.
 *
 *   runs:  ROUNDS launches from run_sites -> site_a or site_b -> launch_here, in runs of three
 *          (a a a b b b a ...): the two sites have the same frame size, so the stack pointer at
 *          the probe is the same; only the second return address differs.
 *   deep:  6 blocks of ROUNDS / 4 launches from run_deep -> deep_x or deep_y (alternate blocks,
 *          through one call site) -> chain x 12 -> launch_here: the two differ only in a caller
 *          further out than the reuse reads, so blocks are 25 ms apart (more than its 10 ms).
 *   inner: ROUNDS launches from run_inner -> site_c or site_d -> launch_deep, in runs of three
 *          as above, where xsprof:launch fires under 12 more frames (inner_chain), as a real
 *          CUDA runtime fires it inside CUPTI's callback, a dozen frames of libcupti, libcuda and
 *          libcudart below the application: the frames a reuse reads first are the same for
 *          every launch, and no pause separates the two sites.
 * Expected: ROUNDS / 2 launches under each site (ROUNDS a multiple of 6), 3 * (ROUNDS / 4)
 * under each deep_*, ROUNDS / 2 under each of site_c and site_d.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "tests/workloads/fake_cupti.h"

#define NOINLINE __attribute__((noinline))
#define DEPTH	 12

static volatile int sink;

NOINLINE void launch_here(int i)
{
	dim3 g = {1, 1, 1}, b = {32, 1, 1};

	cudaLaunchKernel((const void *)launch_here, g, b, NULL, 0, NULL);
	xs_fake_cuda_launch((uint32_t)i, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel));
	sink += i; /* no tail call */
}

NOINLINE void site_a(int i)
{
	launch_here(i);
	sink -= i;
}

NOINLINE void site_b(int i)
{
	launch_here(i);
	sink -= i;
}

NOINLINE void chain(int depth, int i)
{
	if (depth > 1)
		chain(depth - 1, i);
	else
		launch_here(i);
	sink ^= depth;
}

NOINLINE void deep_x(int i)
{
	chain(DEPTH, i);
	sink += 1;
}

NOINLINE void deep_y(int i)
{
	chain(DEPTH, i);
	sink += 2;
}

NOINLINE void inner_chain(int depth, int i)
{
	if (depth > 1)
		inner_chain(depth - 1, i);
	else
		xs_fake_cuda_launch((uint32_t)i, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel));
	sink ^= depth;
}

NOINLINE void launch_deep(int i)
{
	dim3 g = {1, 1, 1}, b = {32, 1, 1};

	cudaLaunchKernel((const void *)launch_deep, g, b, NULL, 0, NULL);
	inner_chain(DEPTH, i);
	sink += i;
}

NOINLINE void site_c(int i)
{
	launch_deep(i);
	sink -= i;
}

NOINLINE void site_d(int i)
{
	launch_deep(i);
	sink -= i;
}

NOINLINE void run_inner(int rounds)
{
	for (int i = 0; i < rounds; i++)
		((i / 3) & 1 ? site_d : site_c)(i);
}

NOINLINE void run_sites(int rounds)
{
	for (int i = 0; i < rounds; i++)
		((i / 3) & 1 ? site_b : site_a)(i);
}

NOINLINE void run_deep(int per_block)
{
	const struct timespec pause = {0, 25 * 1000 * 1000};

	for (int block = 0; block < 6; block++) {
		void (*volatile fn)(int) = block & 1 ? deep_y : deep_x;

		for (int j = 0; j < per_block; j++)
			fn(j);
		nanosleep(&pause, NULL);
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 600;

	run_sites(rounds);
	run_deep(rounds / 4);
	run_inner(rounds);
	return 0;
}
