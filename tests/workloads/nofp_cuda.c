// SPDX-License-Identifier: Apache-2.0
/*
 * xs_nofp_cuda CALLS: CUDA launches made from code built without frame pointers (-O2
 * -fomit-frame-pointer), as PyTorch's are: main -> nofp_cuda_outer -> nofp_cuda_mid ->
 * nofp_cuda_launch -> cudaLaunchKernel (the real libcudart: without a GPU the call fails after
 * the entry probe fired), and the same chain firing xsprof:launch through the fake injection
 * library. The launch stacks must hold the whole chain.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/workloads/fake_cupti.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE void nofp_cuda_launch(int i)
{
	dim3 g = {1, 1, 1}, b = {32, 1, 1};

	cudaLaunchKernel((const void *)nofp_cuda_launch, g, b, NULL, 0, NULL);
	xs_fake_cuda_launch((uint32_t)i, (2u << 16) | 211);
	sink += i; /* no tail call */
}

NOINLINE void nofp_cuda_mid(int i)
{
	nofp_cuda_launch(i);
	sink -= i;
}

NOINLINE void nofp_cuda_outer(int i)
{
	nofp_cuda_mid(i);
	sink ^= i;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;

	for (int i = 0; i < n; i++)
		nofp_cuda_outer(i);
	return 0;
}
