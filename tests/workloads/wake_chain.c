// SPDX-License-Identifier: Apache-2.0
/*
 * A chain of wakeups three hops long, and a thread only a timer wakes, for --wakers
 * (tests/daemon/probes/wakers.sh). The main thread waits on a pipe (wait_a); xs_relay1
 * writes the pipe once xs_relay2 signals it (pass_on_1); xs_relay2 signals once xs_worker
 * signals it (pass_on_2); xs_worker computes 4 ms (compute), then signals (hand_off). So each
 * of the main thread's waits was for xs_worker's work, passed on by two threads. xs_sleeper
 * sleeps 3 ms at a time (sleep_d): no thread wakes it. Frame pointers throughout.
 * Usage: xs_wake_chain SECONDS
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool open;
};

static struct gate g2 = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
static struct gate g1 = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
static int fds[2];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void gate_wait(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	g->open = false;
	pthread_mutex_unlock(&g->mu);
}

static __attribute__((noinline)) void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = true;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static __attribute__((noinline)) void compute(void)
{
	volatile uint64_t x = 0;
	struct timespec ts;
	uint64_t end;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 4000000;
	do {
		for (int i = 0; i < 1000; i++)
			x += i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec < end);
}

static __attribute__((noinline)) void hand_off(void)
{
	gate_open(&g2);
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "xs_worker");
	for (;;) {
		compute();
		hand_off();
	}
	return NULL;
}

static __attribute__((noinline)) void pass_on_2(void)
{
	gate_wait(&g2);
	gate_open(&g1);
}

static void *relay2(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "xs_relay2");
	for (;;)
		pass_on_2();
	return NULL;
}

static __attribute__((noinline)) void pass_on_1(void)
{
	char c = 'x';

	gate_wait(&g1);
	if (write(fds[1], &c, 1) != 1)
		abort();
}

static void *relay1(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "xs_relay1");
	for (;;)
		pass_on_1();
	return NULL;
}

static __attribute__((noinline)) void sleep_d(void)
{
	struct timespec ts = {0, 3000000};

	nanosleep(&ts, NULL);
}

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "xs_sleeper");
	for (;;)
		sleep_d();
	return NULL;
}

static __attribute__((noinline)) void wait_a(void)
{
	char c;

	if (read(fds[0], &c, 1) != 1)
		abort();
}

int main(int argc, char **argv)
{
	uint64_t end = now_ns() + (uint64_t)(atof(argc > 1 ? argv[1] : "3") * 1e9);
	void *(*fn[])(void *) = {worker, relay2, relay1, sleeper};
	pthread_t t;

	if (pipe(fds))
		return 1;
	for (size_t i = 0; i < sizeof(fn) / sizeof(fn[0]); i++)
		if (pthread_create(&t, NULL, fn[i], NULL))
			return 1;
	while (now_ns() < end)
		wait_a();
	return 0;
}
