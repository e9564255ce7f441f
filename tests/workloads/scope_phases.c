// SPDX-License-Identifier: Apache-2.0
/*
 * xs_scope_phases ITERATIONS: the phases of xs_nvtx_phases marked with xsprof/scope.h's USDT
 * scopes instead of NVTX. Each iteration:
 *   data 100 ms | step { forward 200 ms | backward 400 ms | 100 ms of its own }
 * Prints the truth: each phase's CPU time on the thread ("phase NAME NS", innermost) and the
 * process's ("total NS"), and each scope's own times ("range NAME START END").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

#include "xsprof/scope.h"

#define NOINLINE __attribute__((noinline))
#define MS	 1000000ull

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

static NOINLINE void xs_spin(uint64_t ns)
{
	uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns, x = sink;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

enum { DATA, STEP, FORWARD, BACKWARD, NR_PHASES };
static const char *const phase_name[] = {"data", "step", "forward", "backward"};
static uint64_t phase_cpu[NR_PHASES];

/* A phase's own CPU time, and its scope's times as the program saw them (just inside). */
static void timed(int phase, uint64_t ns)
{
	uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	xs_spin(ns);
	phase_cpu[phase] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static NOINLINE void forward(void)
{
	XSPROF_FUNCTION(); /* named "forward" */
	timed(FORWARD, 200 * MS);
}

static NOINLINE void xs_step(void)
{
	uint64_t t0, t1;

	{
		XSPROF_SCOPE("step");
		t0 = clock_ns(CLOCK_MONOTONIC);
		forward();
		xsprof_scope_begin("backward");
		timed(BACKWARD, 400 * MS);
		xsprof_scope_end("backward");
		timed(STEP, 100 * MS);
		t1 = clock_ns(CLOCK_MONOTONIC);
	}
	printf("range step %llu %llu\n", (unsigned long long)t0, (unsigned long long)t1);
}

static NOINLINE void xs_data(void)
{
	XSPROF_SCOPE("data");
	timed(DATA, 100 * MS);
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 3;
	struct rusage ru;

	for (int i = 0; i < iterations; i++) {
		xs_data();
		xs_step();
	}
	xsprof_scope_end("never begun"); /* an end without its begin: counted, harmless */
	for (int i = 0; i < NR_PHASES; i++)
		printf("phase %s %llu\n", phase_name[i], (unsigned long long)phase_cpu[i]);
	getrusage(RUSAGE_SELF, &ru);
	printf("total %llu\n",
	       (unsigned long long)((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
				    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull));
	return 0;
}
