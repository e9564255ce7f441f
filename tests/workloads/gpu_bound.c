// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_bound MODE N: a training loop whose GPU is held back in a known way, for the GPU
 * report (tests/output/gpu_report/gpu_report.sh), on the GPU double (gpu_double.h): the kernels
 * and copies "the GPU ran" are sent at times chosen from the program's own launch times, so
 * the truth is exact. Modes, N steps each:
 *   input    xs_train_step launches 4 kernels of 2 ms, then xs_make_batch computes the next
 *            batch for 25 ms of CPU: the GPU idles while the host is busy elsewhere (each in
 *            an xsprof scope, "step" and "data": the idle time is in "data", the GPU's in
 *            "step")
 *   launch   xs_launch_many launches N kernels of 5 us, preparing each one's arguments for
 *            20 us of CPU (xs_prepare_args): kernels shorter than their launch interval
 *   sync     xs_sync_step launches a 3 ms kernel and waits for it (cuStreamSynchronize),
 *            then xs_read_result spends 2 ms of CPU: the GPU idles after every sync
 *   pageable xs_copy_inputs copies 64 MiB from pageable memory (async, 10 ms), then a 5 ms
 *            kernel runs while the host sleeps 20 ms
 *   memory   GPU memory on two devices, held N - 1 s before the exit: xs_load_weights keeps
 *            4 x 32 MiB (cuMemAlloc_v2, device 0: no cudaSetDevice yet); cudaSetDevice(1), then
 *            xs_grow_cache allocates 8 x 16 MiB (cudaMalloc), xs_temp_buffer 64 MiB
 *            (cuMemAlloc_v2: the thread's device is 1) and frees it, xs_trim_cache frees 6 of
 *            the cache's blocks (cudaFree); cudaSetDevice(0), xs_too_big asks for 8 GiB and
 *            fails. Device 0: peak and exit 128 MiB (weights), one failure; device 1: peak
 *            192 MiB (cache 128, temp 64), 32 MiB of cache left at exit. It prints
 *            "mem_peak_dev0 B", "mem_end_dev0 B", "mem_failed_dev0 N" and the same for dev1.
 *   compute  xs_compute_step launches 4 kernels of 10 ms and waits for them
 *            (cuStreamSynchronize): the GPU is busy but for the launch gaps
 *   slowstep each step (an xsprof scope "step") launches 4 kernels of 2 ms, waits 160 ms for
 *            its input (xs_wait_input sleeps) and prepares it for 10 ms of CPU
 *            (xs_prep_batch); every 200th step xs_slow_augment adds 700 ms of CPU: that
 *            step takes about 5 times the others (it prints "slow_step_end_ns T" when it ends)
 *   hang     N input steps, then cuStreamSynchronize on work that never ends: it waits until
 *            killed (it prints "hang_entry_ns T" first)
 * It prints the truth over its GPU work: "busy_ns B", "idle_ns I", "active_ns A",
 * "kernels K", "copies C", "copy_bytes Y".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xsprof/scope.h>

#include "tests/workloads/fake_cuda.h"
#include "tests/workloads/gpu_double.h"
#include "tests/workloads/phases.h"

#define US    1000ull
#define MAX_N 5000
#define MIB   (1ull << 20)

void xs_bound_gpu_until(uint64_t mono_ns);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
/* The fake driver's runtime calls (fake_cuda_bound.c), as cuda_runtime_api.h declares them. */
int cudaSetDevice(int device);
int cudaMalloc(void **devPtr, size_t size);
int cudaFree(void *devPtr);

NOINLINE void xs_make_batch(void)
{
	XSPROF_SCOPE("data");

	xs_burn(25 * MS);
}

NOINLINE void xs_train_step(void)
{
	XSPROF_SCOPE("step");

	for (int k = 0; k < 4; k++)
		xs_double_kernel("xs_k_forward", 2 * MS);
}

NOINLINE void xs_prepare_args(void)
{
	xs_burn(20 * US);
}

NOINLINE void xs_launch_many(int n)
{
	for (int i = 0; i < n; i++) {
		xs_prepare_args();
		xs_double_kernel("xs_k_tiny", 5 * US);
	}
}

NOINLINE void xs_read_result(void)
{
	xs_burn(2 * MS);
}

NOINLINE void xs_sync_step(void)
{
	xs_bound_gpu_until(xs_double_kernel("xs_k_step", 3 * MS));
	cuStreamSynchronize((CUstream)0x5000);
}

NOINLINE void xs_copy_inputs(void)
{
	xs_double_copy(64ull << 20, 10 * MS);
}

NOINLINE void xs_compute_step(void)
{
	uint64_t end = 0;

	XSPROF_SCOPE("step");
	for (int k = 0; k < 4; k++)
		end = xs_double_kernel("xs_k_gemm", 10 * MS);
	xs_bound_gpu_until(end);
	cuStreamSynchronize((CUstream)0x5000);
}

NOINLINE void xs_wait_input(void)
{
	usleep(160000);
}

NOINLINE void xs_prep_batch(void)
{
	xs_burn(10 * MS);
}

NOINLINE void xs_slow_augment(void)
{
	xs_burn(700 * MS);
}

NOINLINE void xs_slow_step(int i)
{
	XSPROF_SCOPE("step");

	for (int k = 0; k < 4; k++)
		xs_double_kernel("xs_k_forward", 2 * MS);
	xs_wait_input();
	xs_prep_batch();
	if (i % 200 == 199)
		xs_slow_augment();
}

NOINLINE void xs_hang(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("hang_entry_ns %llu\n",
	       (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	fflush(stdout);
	xs_bound_gpu_until(UINT64_MAX / 2);
	cuStreamSynchronize((CUstream)0x5000);
}

static void *cache[8];

NOINLINE void xs_load_weights(void)
{
	CUdeviceptr p;

	for (int i = 0; i < 4; i++)
		cuMemAlloc_v2(&p, 32 * MIB);
}

NOINLINE void xs_grow_cache(void)
{
	for (int i = 0; i < 8; i++)
		cudaMalloc(&cache[i], 16 * MIB);
}

NOINLINE void xs_temp_buffer(void)
{
	CUdeviceptr p = 0;

	if (!cuMemAlloc_v2(&p, 64 * MIB))
		cuMemFree_v2(p);
}

NOINLINE void xs_trim_cache(void)
{
	for (int i = 0; i < 6; i++)
		cudaFree(cache[i]);
}

NOINLINE int xs_too_big(void)
{
	CUdeviceptr p;

	return cuMemAlloc_v2(&p, 8192 * MIB);
}

static void memory(void)
{
	int failed;

	xs_load_weights();
	cudaSetDevice(1);
	xs_grow_cache();
	xs_temp_buffer();
	xs_trim_cache();
	cudaSetDevice(0);
	failed = xs_too_big() != 0;
	printf("mem_peak_dev0 %llu\nmem_end_dev0 %llu\nmem_failed_dev0 %d\n", 128 * MIB, 128 * MIB,
	       failed);
	printf("mem_peak_dev1 %llu\nmem_end_dev1 %llu\nmem_failed_dev1 %d\n", 192 * MIB, 32 * MIB,
	       0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;

	if (n <= 0 || n > MAX_N) {
		fprintf(stderr,
			"usage: xs_gpu_bound input|launch|sync|pageable|memory|compute|slowstep|hang N "
			"(1..%d)\n",
			MAX_N);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		if (!strcmp(mode, "input")) {
			xs_train_step();
			xs_make_batch();
		} else if (!strcmp(mode, "launch")) {
			xs_launch_many(n);
			break;
		} else if (!strcmp(mode, "sync")) {
			xs_sync_step();
			xs_read_result();
		} else if (!strcmp(mode, "memory")) {
			memory();
			sleep((unsigned int)(n - 1));
			return 0;
		} else if (!strcmp(mode, "compute")) {
			xs_compute_step();
		} else if (!strcmp(mode, "slowstep")) {
			xs_slow_step(i);
			if (i % 200 == 199) {
				struct timespec ts;

				clock_gettime(CLOCK_MONOTONIC, &ts);
				printf("slow_step_end_ns %llu\n",
				       (unsigned long long)ts.tv_sec * 1000000000ull +
					       (unsigned long long)ts.tv_nsec);
				fflush(stdout);
			}
		} else if (!strcmp(mode, "hang")) {
			xs_train_step();
			xs_make_batch();
			if (i == n - 1)
				xs_hang();
		} else if (!strcmp(mode, "pageable")) {
			xs_copy_inputs();
			xs_double_kernel("xs_k_train", 5 * MS);
			usleep(20000);
		} else {
			fprintf(stderr, "xs_gpu_bound: unknown mode %s\n", mode);
			return 2;
		}
	}
	xs_double_wait();
	xs_double_truth();
	return xs_double_send();
}
