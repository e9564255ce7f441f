// SPDX-License-Identifier: Apache-2.0
/*
 * xs_wallsplit ITERATIONS: a thread whose wall time is split between computing, sleeping,
 * waiting on a pipe and waiting on a mutex, in known (measured) parts, for the off-CPU and wall
 * tests. Each iteration: compute_fn spins 20 ms, sleep_fn sleeps 30 ms, pipe_fn waits ~25 ms
 * for a helper thread's byte, mutex_fn waits ~25 ms for a mutex the helper holds. Each part
 * calls libc through a function of its own (*_wait), so a frame-pointer walk that skips the
 * caller of a libc function still shows the part. At the end it prints each part's measured
 * wall time in microseconds ("compute_fn 812345"), "total", and "compute_fn_cpu": compute_fn's
 * time on a CPU (its wall time less what a busy machine preempted it).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int go[2], reply[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;

/* This thread's CPU time. */
static uint64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* How long this thread has waited on a run queue (runnable, not running): what a profiler of
 * switches sees as preemption. Time the hypervisor took from the whole VM (steal) is neither
 * this nor the thread's CPU time. 0 without schedstats. */
static uint64_t waited_us(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			wait = 0;
		fclose(f);
	}
	return wait / 1000;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts))
		;
}

NOINLINE static void compute_fn(void)
{
	uint64_t end = now_us() + 20000;

	while (now_us() < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * i;
}

NOINLINE static void sleep_wait(void)
{
	sleep_us(30000);
}

NOINLINE static void sleep_fn(void)
{
	sleep_wait();
}

NOINLINE static void pipe_wait(void)
{
	char c;

	while (read(reply[0], &c, 1) != 1)
		;
}

NOINLINE static void pipe_fn(void)
{
	if (write(go[1], "p", 1) != 1)
		exit(1);
	pipe_wait();
}

NOINLINE static void mutex_wait(void)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}

NOINLINE static void mutex_fn(void)
{
	char c;

	/* The helper takes the lock, says so, and keeps it 25 ms. */
	if (write(go[1], "m", 1) != 1 || read(reply[0], &c, 1) != 1)
		exit(1);
	mutex_wait();
}

NOINLINE static void *helper_main(void *arg)
{
	char c;

	while (read(go[0], &c, 1) == 1) {
		if (c == 'q')
			break;
		if (c == 'p') {
			sleep_us(25000);
			if (write(reply[1], "r", 1) != 1)
				exit(1);
		} else {
			pthread_mutex_lock(&lock);
			if (write(reply[1], "l", 1) != 1)
				exit(1);
			sleep_us(25000);
			pthread_mutex_unlock(&lock);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40;
	uint64_t t[4] = {0}, t0, a, b, compute_cpu = 0, compute_waited = 0;
	void (*fns[4])(void) = {compute_fn, sleep_fn, pipe_fn, mutex_fn};
	static const char *const names[4] = {"compute_fn", "sleep_fn", "pipe_fn", "mutex_fn"};
	pthread_t th;

	if (n <= 0 || pipe(go) || pipe(reply) || pthread_create(&th, NULL, helper_main, NULL))
		return 2;
	t0 = now_us();
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 4; k++) {
			uint64_t ca = k ? 0 : cpu_us(), wa = k ? 0 : waited_us();

			a = now_us();
			fns[k]();
			b = now_us();
			t[k] += b - a;
			if (!k) {
				compute_cpu += cpu_us() - ca;
				compute_waited += waited_us() - wa;
			}
		}
	}
	b = now_us();
	if (write(go[1], "q", 1) != 1 || pthread_join(th, NULL))
		return 1;
	for (int k = 0; k < 4; k++)
		printf("%s %llu\n", names[k], (unsigned long long)t[k]);
	/* What of compute_fn's wall time it was on a CPU: the rest it was preempted (off the
	 * CPU, runnable), which a busy machine does. */
	printf("compute_fn_cpu %llu\n", (unsigned long long)compute_cpu);
	/* ... of that rest, how long it waited on a run queue (the rest: the VM's steal). */
	printf("compute_fn_waited %llu\n", (unsigned long long)compute_waited);
	printf("total %llu\n", (unsigned long long)(b - t0));
	return 0;
}
