// SPDX-License-Identifier: Apache-2.0
/*
 * A workload built -O2 -fomit-frame-pointer (tests/daemon/unwind/tests.cmake), for the table
 * unwinder: a worker thread (start_thread -> xs_nofp_worker_main -> xs_nofp_burn_a, which keeps a
 * variable-length array and so an rbp-based frame, -> xs_nofp_lib_spin in a shared library
 * built without frame pointers too) and the main thread 64 frames deep in xs_nofp_deep, spinning
 * in xs_nofp_leaf. Usage: xs_nofp SECONDS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nofp_lib.h"

#define DEPTH 64

static double secs;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline, noclone)) unsigned long xs_nofp_leaf(unsigned long x)
{
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

/* Not a tail call, and not turned into a loop: each level keeps its own frame. */
__attribute__((noinline, noclone)) unsigned long xs_nofp_deep(int n, unsigned long x)
{
	unsigned long r;

	if (n <= 1)
		r = xs_nofp_leaf(x); /* not a tail call: deep(1) keeps its frame too */
	else
		r = xs_nofp_deep(n - 1, x + n);
	__asm__ volatile("" : "+r"(r));
	return r ^ (unsigned long)n;
}

__attribute__((noinline, noclone)) unsigned long xs_nofp_burn_a(int n)
{
	volatile char buf[n]; /* a VLA: the frame is rbp-based even without frame pointers */

	buf[0] = (char)n;
	buf[n - 1] = (char)n;
	return xs_nofp_lib_spin((unsigned long)buf[0] + buf[n - 1]) + buf[0];
}

__attribute__((noinline, noclone)) void *xs_nofp_worker_main(void *arg)
{
	double end = now() + secs;
	unsigned long x = 0;

	while (now() < end)
		x += xs_nofp_burn_a(64 + (int)(x & 63));
	sink = x;
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t th;
	double end;
	unsigned long x = 0;

	secs = argc > 1 ? atof(argv[1]) : 3;
	if (pthread_create(&th, NULL, xs_nofp_worker_main, NULL))
		return 1;
	end = now() + secs;
	while (now() < end)
		x += xs_nofp_deep(DEPTH, x);
	pthread_join(th, NULL);
	sink = x;
	printf("done\n");
	return 0;
}
