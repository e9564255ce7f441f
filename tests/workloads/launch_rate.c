// SPDX-License-Identifier: Apache-2.0
/*
 * xs_launch_rate: CUDA launches at a set rate, for --max-cpu (tests/daemon/session/max_cpu.sh,
 * bench/max_cpu.sh). cuLaunchKernel of the fake driver (probed like libcuda's) from two call
 * sites, xs_launch_many three times for each xs_launch_few, paced a millisecond at a time.
 * Prints the launches each site made: the exact counts a profile is compared with.
 *
 * Usage: xs_launch_rate RATE SECS   (RATE launches a second, for SECS seconds)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tests/workloads/fake_cuda.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) void xs_launch_many(void)
{
	cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
}

__attribute__((noinline)) void xs_launch_few(void)
{
	cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	uint64_t start, end, many = 0, few = 0, due = 0;
	double rate, secs;

	if (argc != 3) {
		fprintf(stderr, "usage: %s RATE SECS\n", argv[0]);
		return 2;
	}
	rate = strtod(argv[1], NULL);
	secs = strtod(argv[2], NULL);
	if (rate <= 0 || secs <= 0)
		return 2;
	start = mono_ns();
	end = start + (uint64_t)(secs * 1e9);
	for (uint64_t now = start; now < end; now = mono_ns()) {
		/* The launches due by now, then sleep out the rest of the millisecond. */
		struct timespec ms = {0, 1000000};

		due = (uint64_t)((double)(now - start) * rate / 1e9);
		while (many + few < due) {
			if ((many + few) % 4 == 3) {
				xs_launch_few();
				few++;
			} else {
				xs_launch_many();
				many++;
			}
		}
		nanosleep(&ms, NULL);
	}
	printf("many %llu few %llu\n", (unsigned long long)many, (unsigned long long)few);
	return 0;
}
