// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_launch_cost: what one real kernel launch costs the calling thread, for the GPU
 * suite's cost figures (tests/gpu/run.sh runs it unprofiled and under xsprofd, interleaved).
 * Launches an empty kernel CALLS times on one stream, in batches of 256 with a stream
 * synchronize between batches (so the launch queue never fills and blocks a launch); only the
 * launch calls are timed: the thread's CPU time and the wall time over them, per call.
 *
 * Usage: xs_gpu_launch_cost CALLS      prints "ns_per_call cpu C wall W"
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void xs_k_empty(void)
{
}

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 100000, done = 0;
	double cpu = 0, wall = 0;
	cudaStream_t s;

	if (calls <= 0) {
		fprintf(stderr, "usage: xs_gpu_launch_cost CALLS\n");
		return 2;
	}
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
		fprintf(stderr, "xs_gpu_launch_cost: no CUDA device\n");
		return 1;
	}
	/* Warm up: module load, first launches. */
	for (int i = 0; i < 1000; i++)
		xs_k_empty<<<1, 32, 0, s>>>();
	cudaStreamSynchronize(s);
	while (done < calls) {
		long n = calls - done < 256 ? calls - done : 256;
		double c0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);

		for (long i = 0; i < n; i++)
			xs_k_empty<<<1, 32, 0, s>>>();
		cpu += now(CLOCK_THREAD_CPUTIME_ID) - c0;
		wall += now(CLOCK_MONOTONIC) - w0;
		done += n;
		cudaStreamSynchronize(s);
	}
	if (cudaGetLastError() != cudaSuccess) {
		fprintf(stderr, "xs_gpu_launch_cost: a launch failed\n");
		return 1;
	}
	printf("ns_per_call cpu %.0f wall %.0f\n", cpu / calls, wall / calls);
	return 0;
}
