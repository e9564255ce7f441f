// SPDX-License-Identifier: Apache-2.0
/*
 * The program whose history tests/output/history/history_e2e.sh makes: STEPS steps of two CPU
 * loops (hist_hot, hist_cold) and a kernel on the GPU double (hist_gemm, KERNEL_NS). The test
 * edits lines of it commit by commit (the loop of hist_hot, the kernel's time), so keep those
 * lines as they are.
 */
#include <stdint.h>
#include <stdio.h>

#include "tests/workloads/gpu_double.h"

#define HOT_ITERS  8000000ull
#define COLD_ITERS 6000000ull
#define KERNEL_NS  2000000ull
#define STEPS      40

static volatile uint64_t sink;

__attribute__((noinline)) void hist_hot(void)
{
	uint64_t x = 1;

	for (uint64_t i = 0; i < HOT_ITERS; i++)
		x = x * 6364136223846793005ull + i;
	sink = x;
}

__attribute__((noinline)) void hist_cold(void)
{
	uint64_t x = 3;

	for (uint64_t i = 0; i < COLD_ITERS; i++)
		x = x * 2862933555777941757ull + i;
	sink = x;
}

int main(void)
{
	for (int s = 0; s < STEPS; s++) {
		hist_hot();
		hist_cold();
		xs_double_kernel("hist_gemm", KERNEL_NS);
	}
	xs_double_wait();
	return xs_double_send();
}
