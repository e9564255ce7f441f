// SPDX-License-Identifier: Apache-2.0
/*
 * A fixed amount of CPU work, not a fixed time: each thread runs ITERATIONS rounds of a compute
 * loop spread over a few noinline functions (stacks about 5 frames deep), so a profiler's cost
 * shows up as extra wall time. Prints its own wall and CPU seconds at exit.
 * Usage: xs_fixedwork ITERATIONS NTHREADS
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rounds of the innermost loop per iteration: one iteration is a few microseconds. */
#define XS_INNER_ROUNDS 1000

static uint64_t iterations;
static volatile uint64_t sink;

static double clock_secs(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The hot loop. The volatile spill makes GCC give this leaf a frame (it leaves frameless leaves
 * without one even with -fno-omit-frame-pointer), so frame-pointer unwinding from here does not
 * skip the caller.
 */
static __attribute__((noinline)) uint64_t xs_fw_leaf(uint64_t x)
{
	volatile uint64_t spill;

	for (int i = 0; i < XS_INNER_ROUNDS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	spill = x;
	return spill;
}

static __attribute__((noinline)) uint64_t xs_fw_mix(uint64_t x)
{
	x = xs_fw_leaf(x);
	x ^= x >> 29;
	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
	return x;
}

static __attribute__((noinline)) uint64_t xs_fw_round(uint64_t x)
{
	x = xs_fw_mix(x);
	x = xs_fw_mix(x + 1);
	__asm__ volatile("" ::: "memory");
	return x;
}

static __attribute__((noinline)) void *xs_fw_worker(void *arg)
{
	uint64_t x = (uintptr_t)arg;

	for (uint64_t n = 0; n < iterations; n++)
		x = xs_fw_round(x);
	sink = x;
	return NULL;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t nthreads;
	pthread_t *threads;
	double wall0, wall, cpu;
	int err;

	if (argc != 3 || parse_u64(argv[1], &iterations) || parse_u64(argv[2], &nthreads) ||
	    nthreads > 1024) {
		fprintf(stderr, "usage: %s ITERATIONS NTHREADS (both positive, NTHREADS <= 1024)\n",
			argv[0]);
		return 2;
	}
	threads = calloc(nthreads, sizeof(*threads));
	if (!threads) {
		fprintf(stderr, "xs_fixedwork: out of memory\n");
		return 1;
	}

	wall0 = clock_secs(CLOCK_MONOTONIC);
	for (uint64_t i = 0; i < nthreads; i++) {
		err = pthread_create(&threads[i], NULL, xs_fw_worker, (void *)(uintptr_t)(i + 1));
		if (err) {
			fprintf(stderr, "xs_fixedwork: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (uint64_t i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	wall = clock_secs(CLOCK_MONOTONIC) - wall0;
	cpu = clock_secs(CLOCK_PROCESS_CPUTIME_ID);

	printf("xs_fixedwork: %llu iterations x %llu threads: wall %.3f s, cpu %.3f s\n",
	       (unsigned long long)iterations, (unsigned long long)nthreads, wall, cpu);
	free(threads);
	return 0;
}
