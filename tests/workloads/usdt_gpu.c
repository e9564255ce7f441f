// SPDX-License-Identifier: Apache-2.0
/*
 * xs_usdt_gpu: launches through the fake injection library (xsprof:launch with correlation ids
 * 1..12), then plays CUPTI: sends the matching kernel records to the daemon's CUPTI socket
 * ($XSPROF_CUPTI_SOCKET or the default), as libxsprof_cupti.so would. Ids 1-7 come from
 * xs_gpu_alpha_site and ran "xs_kernel_alpha" for 1 ms each; ids 8-12 from xs_gpu_beta_site,
 * "xs_kernel_beta" for 2 ms each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tests/workloads/fake_cupti.h"
#include "tests/workloads/fake_gpu_send.h"

#define NOINLINE __attribute__((noinline))

static uint32_t corr;

NOINLINE void xs_gpu_alpha_site(void)
{
	for (int i = 0; i < 7; i++)
		xs_fake_cuda_launch(++corr, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel));
}

NOINLINE void xs_gpu_beta_site(void)
{
	for (int i = 0; i < 5; i++)
		xs_fake_cuda_launch(++corr, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int send_kernels(void)
{
	struct xs_fake_kernel k[12];
	uint64_t t = mono_ns();

	for (uint32_t id = 1; id <= 12; id++) {
		uint64_t dur = id <= 7 ? 1000000 : 2000000;

		k[id - 1] = (struct xs_fake_kernel){id <= 7 ? "xs_kernel_alpha" : "xs_kernel_beta",
						    t, t + dur, id};
		t += dur;
	}
	return xs_fake_send_kernels(k, 12);
}

/* argv[1]: milliseconds to stay alive after sending, so that a daemon that does not hold
 * the process at its first launch (the window's --cuda-lib probes) reads its mappings;
 * argv[2]: milliseconds to wait before launching (time to attach to it). */
int main(int argc, char **argv)
{
	int err;

	if (argc > 2)
		usleep((useconds_t)atoi(argv[2]) * 1000);
	xs_gpu_alpha_site();
	xs_gpu_beta_site();
	printf("fired %lu of %u\n", xs_fake_cupti_fired(), corr);
	err = send_kernels();
	if (argc > 1)
		usleep((useconds_t)atoi(argv[1]) * 1000);
	return err;
}
