/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The clocks, once: CLOCK_MONOTONIC (what bpf_ktime_get_ns reads, so BPF records and the
 * daemon's own times compare) and this process's CPU time. Header-only, so the injection
 * library uses it without linking the daemon's base.
 */
#ifndef XSPROF_DAEMON_BASE_CLOCK_H
#define XSPROF_DAEMON_BASE_CLOCK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t clock__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC_COARSE in nanoseconds: a few ms coarse, cheaper (deadlines only). */
static inline uint64_t clock__coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC now, in nanoseconds: a monotonic time plus this is wall time. */
static inline int64_t clock__realtime_offset_ns(void)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return ((int64_t)real.tv_sec - mono.tv_sec) * 1000000000ll + (real.tv_nsec - mono.tv_nsec);
}

/*
 * How much later than this machine's CLOCK_MONOTONIC the times this process gives other hosts
 * read (the job parts, GET /v1/clock): XSPROF_TEST_CLOCK_SHIFT_NS, a test's stand-in for a
 * host booted at another moment; 0 outside tests.
 */
static inline int64_t clock__export_shift_ns(void)
{
	const char *s = getenv("XSPROF_TEST_CLOCK_SHIFT_NS");

	return s ? strtoll(s, NULL, 10) : 0;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double clock__mono_s(void)
{
	return (double)clock__mono_ns() / 1e9;
}

/* The CPU this process used so far, every thread, user and system, in nanoseconds. */
static inline uint64_t clock__cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same in seconds. */
static inline double clock__cpu_s(void)
{
	return (double)clock__cpu_ns() / 1e9;
}

#endif
