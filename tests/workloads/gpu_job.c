// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_job MODE STEPS: a 4-rank training job on one host, for the job report
 * (tests/output/job/job_report.sh), on the GPU double (gpu_double.h). The launcher starts 4 ranks
 * (itself again, with RANK, LOCAL_RANK, WORLD_SIZE and TORCHELASTIC_RUN_ID in their environment, as
 * torchrun does) sharing a barrier (PTHREAD_PROCESS_SHARED, in a memfd they inherit). Each
 * step (an xsprof scope "step") a rank waits until its GPU has 10 ms of work left, launches 4
 * compute kernels of 5 ms (xs_forward) and an NCCL all-reduce (xs_all_reduce) whose kernel
 * starts at the rank's arrival and ends 1 ms after the last rank's, the ranks meeting at the
 * barrier to say their arrivals. Modes:
 *   compute  rank 2's kernels run 30% longer: it arrives 6 ms late each step
 *   host     each rank spends 2 ms of CPU in xs_load_data before launching, rank 1 22 ms:
 *            its GPU waits
 *   blocked  as host, but rank 1's launching thread hands the batch to a loader thread of its
 *            own (xs_loader), which spends the 22 ms in xs_decode_batch, and waits for it on
 *            a condition variable (xs_wait_batch), as a training loop waits on its data
 *            loader: its GPU waits for a thread that is off the CPU
 *   none     every rank alike
 * The launcher prints the truth: "straggler R", "lateness_ns N" (compute: exact), and exits
 * with the first failing rank's status. With XS_GPU_JOB_EXEC=PROGRAM, rank k is started as
 * PROGRAM k COMMAND... (a test puts ranks on other "hosts": namespaces with a daemon each).
 */
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xsprof/scope.h>

#include "tests/workloads/gpu_double.h"
#include "tests/workloads/phases.h"

#define RANKS	    4
#define KERNEL_NS   (5 * MS)
#define AHEAD_NS    (10 * MS)
#define NCCL_NS	    (1 * MS)
#define SLOW	    1.3
#define NCCL_KERNEL "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

extern char **environ;

struct shared {
	pthread_barrier_t said, read;
	uint64_t arrive[RANKS];
};

struct rank {
	struct shared *sh;
	int rank;
};

/* The ranks' arrivals said, the last one's read: the all-reduce's end. */
static uint64_t meet(void *ctx, uint64_t arrive)
{
	struct rank *r = ctx;
	uint64_t last = 0;

	r->sh->arrive[r->rank] = arrive;
	pthread_barrier_wait(&r->sh->said);
	for (int k = 0; k < RANKS; k++)
		last = r->sh->arrive[k] > last ? r->sh->arrive[k] : last;
	pthread_barrier_wait(&r->sh->read);
	return last + NCCL_NS;
}

NOINLINE void xs_load_data(uint64_t ns)
{
	xs_burn(ns);
}

/* Rank 1's loader in blocked mode: a batch asked for, made, handed back. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool asked, ready;
} loader = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};

NOINLINE void xs_decode_batch(uint64_t ns)
{
	xs_burn(ns);
}

static void *xs_loader(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&loader.lock);
		while (!loader.asked)
			pthread_cond_wait(&loader.cond, &loader.lock);
		loader.asked = false;
		pthread_mutex_unlock(&loader.lock);
		xs_decode_batch(22 * MS);
		pthread_mutex_lock(&loader.lock);
		loader.ready = true;
		pthread_cond_broadcast(&loader.cond);
		pthread_mutex_unlock(&loader.lock);
	}
	return NULL;
}

NOINLINE void xs_wait_batch(void)
{
	pthread_mutex_lock(&loader.lock);
	loader.asked = true;
	pthread_cond_broadcast(&loader.cond);
	while (!loader.ready)
		pthread_cond_wait(&loader.cond, &loader.lock);
	loader.ready = false;
	pthread_mutex_unlock(&loader.lock);
}

NOINLINE void xs_forward(double slow)
{
	for (int i = 0; i < 4; i++)
		xs_double_kernel("xs_k_forward", (uint64_t)(KERNEL_NS * slow));
}

NOINLINE void xs_all_reduce(struct rank *r)
{
	xs_double_collective(NCCL_KERNEL, meet, r);
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
			      .tv_nsec = (long)(t % 1000000000ull)};

	if (t > clock_ns(CLOCK_MONOTONIC))
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
			;
}

NOINLINE void xs_train_step(struct rank *r, const char *mode)
{
	XSPROF_SCOPE("step");

	if (xs_double_free_at() > AHEAD_NS)
		sleep_until(xs_double_free_at() - AHEAD_NS);
	if (!strcmp(mode, "host"))
		xs_load_data(r->rank == 1 ? 22 * MS : 2 * MS);
	else if (!strcmp(mode, "blocked") && r->rank == 1)
		xs_wait_batch();
	else if (!strcmp(mode, "blocked"))
		xs_load_data(2 * MS);
	xs_forward(!strcmp(mode, "compute") && r->rank == 2 ? SLOW : 1.0);
	xs_all_reduce(r);
}

static int rank_main(int fd, int rank, const char *mode, int steps)
{
	struct rank r = {.rank = rank};
	pthread_t th;

	r.sh = mmap(NULL, sizeof(*r.sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r.sh == MAP_FAILED) {
		perror("xs_gpu_job: mmap");
		return 1;
	}
	if (!strcmp(mode, "blocked") && rank == 1) {
		if (pthread_create(&th, NULL, xs_loader, NULL)) {
			fprintf(stderr, "xs_gpu_job: pthread_create failed\n");
			return 1;
		}
		pthread_setname_np(th, "xs_loader");
		pthread_detach(th);
	}
	for (int i = 0; i < steps; i++)
		xs_train_step(&r, mode);
	xs_double_wait();
	return xs_double_send();
}

/* Rank k: this program again (through $XS_GPU_JOB_EXEC), its place in its environment. */
static pid_t spawn_rank(const char *self, int fd, int k, const char *mode, const char *steps)
{
	const char *via = getenv("XS_GPU_JOB_EXEC");
	char fds[16], ks[16], env[5][64], **envp;
	char *argv[] = {(char *)via, ks,	   (char *)self,  "--rank", fds,
			ks,	     (char *)mode, (char *)steps, NULL};
	size_t n = 0;
	pid_t pid;

	while (environ[n])
		n++;
	envp = calloc(n + 6, sizeof(*envp));
	if (!envp)
		return -1;
	memcpy(envp, environ, n * sizeof(*envp));
	snprintf(fds, sizeof(fds), "%d", fd);
	snprintf(ks, sizeof(ks), "%d", k);
	snprintf(env[0], sizeof(env[0]), "RANK=%d", k);
	snprintf(env[1], sizeof(env[1]), "LOCAL_RANK=%d", k);
	snprintf(env[2], sizeof(env[2]), "WORLD_SIZE=%d", RANKS);
	snprintf(env[3], sizeof(env[3]), "TORCHELASTIC_RUN_ID=xsjob-%s", mode);
	/* The GPU double sends while the rank runs: xsprofd takes GPU records only from the
	 * processes it profiles, which it checks at the connection (a rank that sent all at its
	 * exit would be gone by then). */
	snprintf(env[4], sizeof(env[4]), "XS_GPU_DOUBLE_STREAM=1");
	for (int i = 0; i < 5; i++)
		envp[n + (size_t)i] = env[i];
	if (via && *via ? posix_spawn(&pid, via, NULL, NULL, argv, envp)
			: posix_spawn(&pid, self, NULL, NULL, argv + 2, envp))
		pid = -1;
	free(envp);
	return pid;
}

int main(int argc, char **argv)
{
	pthread_barrierattr_t ba;
	struct shared *sh;
	pid_t pids[RANKS];
	char self[PATH_MAX];
	int fd, status = 0, steps;

	if (argc == 6 && !strcmp(argv[1], "--rank"))
		return rank_main(atoi(argv[2]), atoi(argv[3]), argv[4], atoi(argv[5]));
	steps = argc == 3 ? atoi(argv[2]) : 0;
	if (steps <= 0 || steps > 1000 ||
	    (strcmp(argv[1], "compute") && strcmp(argv[1], "host") && strcmp(argv[1], "blocked") &&
	     strcmp(argv[1], "none"))) {
		fprintf(stderr, "usage: xs_gpu_job compute|host|blocked|none STEPS (1..1000)\n");
		return 2;
	}
	fd = memfd_create("xs_gpu_job", 0);
	if (fd < 0 || ftruncate(fd, sizeof(*sh)) ||
	    (sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
		    MAP_FAILED) {
		perror("xs_gpu_job: shared memory");
		return 1;
	}
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->said, &ba, RANKS);
	pthread_barrier_init(&sh->read, &ba, RANKS);
	if (!realpath("/proc/self/exe", self)) {
		perror("xs_gpu_job: /proc/self/exe");
		return 1;
	}
	for (int k = 0; k < RANKS; k++)
		if ((pids[k] = spawn_rank(self, fd, k, argv[1], argv[2])) < 0) {
			perror("xs_gpu_job: posix_spawn");
			return 1;
		}
	for (int k = 0; k < RANKS; k++) {
		int st;

		if (waitpid(pids[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			status = status ? status : 1;
	}
	if (!strcmp(argv[1], "compute"))
		printf("straggler 2\nlateness_ns %llu\n",
		       (unsigned long long)(4 * KERNEL_NS * (SLOW - 1) + 0.5));
	else if (!strcmp(argv[1], "host"))
		printf("straggler 1\n");
	else if (!strcmp(argv[1], "blocked"))
		printf("straggler 1\ncause blocked\nwork xs_decode_batch\n");
	else
		printf("straggler none\n");
	return status;
}
