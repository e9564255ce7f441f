/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the phase workloads (nvtx_phases.c, scope_phases.c) share: a clock, a CPU spin of a
 * known length, and the truth they print, each phase's CPU time and the process's.
 */
#ifndef XSPROF_TESTS_WORKLOADS_PHASES_H
#define XSPROF_TESTS_WORKLOADS_PHASES_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <sys/resource.h>

#define NOINLINE __attribute__((noinline))
#define MS	 1000000ull

static inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t phases_sink;

/* Spin until this thread has had ns of CPU. */
static NOINLINE __attribute__((unused)) void xs_burn(uint64_t ns)
{
	uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns, x = phases_sink;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	phases_sink = x;
}

/* "phase NAME NS" for each phase, then "total NS": the process's CPU time. */
static inline void phases_print(const char *const *names, const uint64_t *cpu, int n)
{
	struct rusage ru;

	for (int i = 0; i < n; i++)
		printf("phase %s %llu\n", names[i], (unsigned long long)cpu[i]);
	getrusage(RUSAGE_SELF, &ru);
	printf("total %llu\n",
	       (unsigned long long)((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
				    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull));
}

#endif
