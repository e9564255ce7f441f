// SPDX-License-Identifier: Apache-2.0
/*
 * xs_scale_work: the work bench/scale.sh grows xsprofd's cost with.
 *
 *   xs_scale_work procs N SECS [SPIN_MS]
 *       N processes forked (no exec) from this one, each spinning SPIN_MS (default 0) once and
 *       then asleep until SECS have passed since the last was forked, or until this parent dies.
 *       Prints "ready N" when all N live, "done" when they have been reaped.
 *   xs_scale_work stacks BITS SECS
 *       One thread per CPU, each walking random paths down a BITS-deep recursion whose every
 *       level calls one of two functions (xs_left, xs_right): 2^BITS distinct stacks, each
 *       held ~20 us at its leaf, so a profile at F Hz on C CPUs sees about F x C x SECS distinct
 *       stacks while that is well under 2^BITS. Prints "ready" when the threads run.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spin_s(double secs)
{
	double end = now_s() + secs;

	while (now_s() < end)
		;
}

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int procs(long n, double secs, double spin_ms)
{
	pid_t parent = getpid();
	long made = 0;
	double end;

	/* A group of its own: the end signals its children, not whoever started it. */
	setpgid(0, 0);
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	for (; made < n && !stop; made++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "xs_scale_work: fork %ld: %s\n", made, strerror(errno));
			break;
		}
		if (pid == 0) {
			/* Gone with the parent, however it ends. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			if (spin_ms > 0)
				spin_s(spin_ms / 1e3);
			for (;;)
				pause();
		}
	}
	printf("ready %ld\n", made);
	fflush(stdout);
	end = now_s() + secs;
	while (!stop && now_s() < end)
		usleep(50000);
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	printf("done\n");
	return made == n ? 0 : 1;
}

static int bits;
static volatile uint64_t sink;

/* Two functions, so the path (not only the call site) names each stack differently. */
__attribute__((noinline)) static void xs_right(int depth, uint64_t path);

__attribute__((noinline)) static void xs_left(int depth, uint64_t path)
{
	if (depth == bits) {
		spin_s(20e-6);
		return;
	}
	if (path & 1)
		xs_right(depth + 1, path >> 1);
	else
		xs_left(depth + 1, path >> 1);
	sink++;
}

__attribute__((noinline)) static void xs_right(int depth, uint64_t path)
{
	if (depth == bits) {
		spin_s(20e-6);
		return;
	}
	if (path & 1)
		xs_right(depth + 1, path >> 1);
	else
		xs_left(depth + 1, path >> 1);
	sink++;
}

struct walker {
	double end;
	uint64_t seed;
};

static void *walk(void *arg)
{
	struct walker *w = arg;
	uint64_t x = w->seed;

	while (!stop && now_s() < w->end) {
		/* splitmix64: a fresh path each time */
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		xs_left(0, z ^ (z >> 31));
	}
	return NULL;
}

static int stacks(int nbits, double secs)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t th[256];
	struct walker w[256];

	if (cpus < 1 || cpus > 256)
		cpus = cpus < 1 ? 1 : 256;
	bits = nbits;
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	for (long i = 0; i < cpus; i++) {
		w[i] = (struct walker){now_s() + secs, (uint64_t)(i + 1) * 0x1234567ull};
		if (pthread_create(&th[i], NULL, walk, &w[i])) {
			fprintf(stderr, "xs_scale_work: cannot start a thread\n");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	for (long i = 0; i < cpus; i++)
		pthread_join(th[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "procs"))
		return procs(atol(argv[2]), atof(argv[3]), argc > 4 ? atof(argv[4]) : 0);
	if (argc == 4 && !strcmp(argv[1], "stacks") && atoi(argv[2]) >= 1 && atoi(argv[2]) <= 60)
		return stacks(atoi(argv[2]), atof(argv[3]));
	fprintf(stderr, "usage: xs_scale_work procs N SECS [SPIN_MS] | stacks BITS SECS\n");
	return 2;
}
