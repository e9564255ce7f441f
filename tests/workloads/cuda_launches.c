// SPDX-License-Identifier: Apache-2.0
/*
 * xs_cuda: a CUDA program with a known call tree (cuda_calls.c) in a main thread, a worker
 * thread named xs_cuda_worker, a forked child and a child that execs this program again.
 *
 * Usage: xs_cuda [--wait] [--exit N] [--child]
 *   --wait    block until SIGUSR1 before any CUDA call (for tests that attach with --pid)
 *   --exit N  exit with status N
 *   --child   be the exec'd child: its calls only
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/workloads/cuda_calls.h"

static void *worker(void *arg)
{
	/* Named before its first call: the thread name is the root of its stacks. */
	pthread_setname_np(pthread_self(), "xs_cuda_worker");
	xs_cuda_worker_calls();
	return NULL;
}

static int wait_child(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	int status = 0, sig;
	bool wait_go = false;
	char self[4096];
	ssize_t n;
	pthread_t t;
	sigset_t set;
	pid_t pid;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait")) {
			wait_go = true;
		} else if (!strcmp(argv[i], "--exit") && i + 1 < argc) {
			status = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--child")) {
			xs_cuda_exec_calls();
			return 0;
		} else {
			fprintf(stderr, "usage: xs_cuda [--wait] [--exit N] [--child]\n");
			return 2;
		}
	}
	if (wait_go) {
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}

	xs_cuda_main_calls();

	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);

	pid = fork();
	if (pid == 0) {
		xs_cuda_forked_calls();
		_exit(0);
	}
	if (wait_child(pid))
		return 100;

	/* By its real path: the thread name comes from the file exec'd. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 102;
	self[n] = '\0';
	pid = fork();
	if (pid == 0) {
		execl(self, "xs_cuda", "--child", (char *)NULL);
		_exit(127);
	}
	if (wait_child(pid))
		return 101;
	return status;
}
