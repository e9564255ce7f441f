// SPDX-License-Identifier: Apache-2.0
/*
 * xs_pingpong ROUNDS: two threads hand a byte back and forth through two pipes ROUNDS times,
 * each blocking in read() until the other writes: two context switches per round, the
 * switch-heavy load of bench/offcpu.sh. Prints "rounds R seconds S switches_per_s X".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int a[2], b[2];
static long rounds;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *pong(void *arg)
{
	char c;

	for (long i = 0; i < rounds; i++)
		if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
			exit(1);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	double t0, t1;
	char c = 'x';

	rounds = argc > 1 ? atol(argv[1]) : 100000;
	if (rounds <= 0 || pipe(a) || pipe(b) || pthread_create(&th, NULL, pong, NULL))
		return 2;
	t0 = now_s();
	for (long i = 0; i < rounds; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			return 1;
	t1 = now_s();
	pthread_join(th, NULL);
	printf("rounds %ld seconds %.3f switches_per_s %.0f\n", rounds, t1 - t0,
	       2.0 * rounds / (t1 - t0));
	return 0;
}
