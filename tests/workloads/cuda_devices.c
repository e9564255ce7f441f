// SPDX-License-Identifier: Apache-2.0
/*
 * xs_cuda_devices: GPU allocations through the real libcudart.so.13 from threads on known
 * devices (no GPU needed: every call fails, the uprobes fire and the failures are counted).
 * The main thread allocates once before any cudaSetDevice (device 0, CUDA's default), sets
 * device 1 and allocates twice; a thread sets device 2 and allocates three times; another
 * thread, which sets none, allocates once (device 0: the device is the thread's own). The GPU
 * report's memory section must read 2 failed on device 0, 2 on device 1, 3 on device 2
 * (tests/daemon/session/test_gpu_waits.c).
 */
#include <cuda_runtime_api.h>
#include <pthread.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void xs_alloc_n(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = NULL;

		cudaMalloc(&p, 1 << 20);
	}
}

static void *on_device_2(void *arg)
{
	(void)arg;
	cudaSetDevice(2);
	xs_alloc_n(3);
	return NULL;
}

static void *on_default_device(void *arg)
{
	(void)arg;
	xs_alloc_n(1);
	return NULL;
}

int main(void)
{
	pthread_t t;

	xs_alloc_n(1);
	cudaSetDevice(1);
	xs_alloc_n(2);
	if (pthread_create(&t, NULL, on_device_2, NULL) || pthread_join(t, NULL))
		return 1;
	if (pthread_create(&t, NULL, on_default_device, NULL) || pthread_join(t, NULL))
		return 1;
	return 0;
}
