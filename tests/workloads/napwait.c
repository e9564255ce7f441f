// SPDX-License-Identifier: Apache-2.0
/*
 * xs_napwait ITERATIONS: a thread that computes, naps and waits, each straight into libc (no
 * function of ours in between), built with frame pointers like a distribution that keeps them
 * (tests/bpf/tests.cmake): compute() spins 20 ms, nap() calls nanosleep for 30 ms, wait_pipe()
 * calls read until a helper thread (helper(), itself blocked in read) answers ~25 ms later. libc's
 * wrappers keep no frame of their own, so a frame-pointer walk from the blocked thread's
 * registers skips nap and wait_pipe, the very functions that blocked. At the end it prints each
 * part's measured wall time in microseconds ("nap 812345") and "total".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int go[2], reply[2];
static volatile uint64_t sink;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

NOINLINE void compute(void)
{
	uint64_t end = now_us() + 20000;

	while (now_us() < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * i;
}

NOINLINE void nap(void)
{
	struct timespec ts = {0, 30 * 1000 * 1000};

	nanosleep(&ts, NULL);
}

NOINLINE void wait_pipe(void)
{
	char c;

	if (write(go[1], "w", 1) != 1 || read(reply[0], &c, 1) != 1)
		exit(1);
}

NOINLINE void *helper(void *arg)
{
	struct timespec ts = {0, 25 * 1000 * 1000};
	char c;

	(void)arg;
	while (read(go[0], &c, 1) == 1) {
		nanosleep(&ts, NULL);
		if (write(reply[1], "r", 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	uint64_t spent[3] = {0}, t0, t1, start;
	pthread_t th;

	if (pipe(go) || pipe(reply) || pthread_create(&th, NULL, helper, NULL))
		return 1;
	start = now_us();
	for (int i = 0; i < n; i++) {
		t0 = now_us();
		compute();
		t1 = now_us();
		spent[0] += t1 - t0;
		nap();
		t0 = now_us();
		spent[1] += t0 - t1;
		wait_pipe();
		spent[2] += now_us() - t0;
	}
	printf("compute %llu\nnap %llu\nwait_pipe %llu\ntotal %llu\n", (unsigned long long)spent[0],
	       (unsigned long long)spent[1], (unsigned long long)spent[2],
	       (unsigned long long)(now_us() - start));
	close(go[1]);
	pthread_join(th, NULL);
	return 0;
}
