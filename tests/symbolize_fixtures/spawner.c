// SPDX-License-Identifier: Apache-2.0
/*
 * Forks and execs CHILD N times, one after the other, each with MS as its argument, and prints
 * the children's pids (one line) so a test can tell their samples from a reused pid's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n, failed = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: %s CHILD N MS\n", argv[0]);
		return 2;
	}
	n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			execl(argv[1], argv[1], argv[3], (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	printf("%d children, %d failed\n", n, failed);
	return failed != 0;
}
