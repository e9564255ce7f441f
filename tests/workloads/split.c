// SPDX-License-Identifier: Apache-2.0
/*
 * Known CPU split: each thread alternates xs_work_alpha for A us and xs_work_beta for B us of
 * its own CPU time, for SECS seconds. Prints the CPU time each function really got, which is the
 * truth a profile is compared with.
 * Usage: xs_split A_US B_US SECS NTHREADS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t a_us, b_us;
static double secs;
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The hot loop, inlined into burn(): with --debug-info it must still show as its own frame. */
static inline __attribute__((always_inline)) uint64_t xs_spin(uint64_t x)
{
	/* Two multiplies on two lines: the samples' pcs fall on both (a one-line body put every
	 * sample on one line on some CPUs, and callgrind.sh wants the self cost by line). */
	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
	}
	return x;
}

/* Burn CPU until this thread has used budget_ns more; returns the CPU time really used. */
static __attribute__((noinline)) uint64_t burn(uint64_t budget_ns)
{
	uint64_t start = thread_cpu_ns(), now, x = sink;

	do {
		x = xs_spin(x);
		now = thread_cpu_ns();
	} while (now - start < budget_ns);
	sink = x;
	return now - start;
}

__attribute__((noinline)) uint64_t xs_work_alpha(uint64_t ns)
{
	uint64_t used = burn(ns);

	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
	return used;
}

__attribute__((noinline)) uint64_t xs_work_beta(uint64_t ns)
{
	uint64_t used = burn(ns);

	__asm__ volatile("" ::: "memory");
	return used;
}

struct result {
	uint64_t alpha_ns, beta_ns;
};

static __attribute__((noinline)) void *xs_worker(void *arg)
{
	struct result *r = arg;
	uint64_t end = mono_ns() + (uint64_t)(secs * 1e9);

	while (mono_ns() < end) {
		r->alpha_ns += xs_work_alpha(a_us * 1000);
		r->beta_ns += xs_work_beta(b_us * 1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n;
	pthread_t th[64];
	struct result res[64] = {};
	uint64_t ta = 0, tb = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: %s A_US B_US SECS NTHREADS\n", argv[0]);
		return 2;
	}
	a_us = strtoull(argv[1], NULL, 10);
	b_us = strtoull(argv[2], NULL, 10);
	secs = strtod(argv[3], NULL);
	n = atoi(argv[4]);
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, xs_worker, &res[i]);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		ta += res[i].alpha_ns;
		tb += res[i].beta_ns;
	}
	printf("alpha_ns %llu beta_ns %llu\n", (unsigned long long)ta, (unsigned long long)tb);
	return 0;
}
