// SPDX-License-Identifier: Apache-2.0
/*
 * xs_usdt: fires xsprof:launch through the fake injection library from a known call tree,
 * with correlation ids 1, 2, 3, ... in call order, and prints how many firings saw the
 * semaphore set ("fired N of M").
 *
 * Usage: xs_usdt [--wait]   (--wait: block until SIGUSR1 first)
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/workloads/fake_cupti.h"

#define NOINLINE __attribute__((noinline))

static uint32_t corr;

NOINLINE void xs_usdt_runtime_site(void)
{
	for (int i = 0; i < 7; i++)
		xs_fake_cuda_launch(++corr, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel));
}

NOINLINE void xs_usdt_driver_site(void)
{
	for (int i = 0; i < 5; i++)
		xs_fake_cuda_launch(++corr, XS_CUPTI_DRIVER(XS_CBID_cuLaunchKernel));
}

NOINLINE void xs_usdt_outer(void)
{
	xs_usdt_runtime_site();
	xs_usdt_driver_site();
}

int main(int argc, char **argv)
{
	sigset_t set;
	int sig;

	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	xs_usdt_outer();
	printf("fired %lu of %u\n", xs_fake_cupti_fired(), corr);
	return 0;
}
