// SPDX-License-Identifier: Apache-2.0
/*
 * xs_ns_run PID COMMAND...: COMMAND in the network, pid and mount namespaces of process PID
 * (a test's "host"), its exit status returned. nsenter(1) would do it, but when its child stops
 * (xsprofd stops a process at its exec until its probes are placed) nsenter stops itself too
 * and waits to be continued, which nobody does: here the wait ignores stops.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static const char *const kinds[] = {"net", "pid", "mnt"};
	int st;
	pid_t child;

	if (argc < 3) {
		fprintf(stderr, "usage: xs_ns_run PID COMMAND...\n");
		return 2;
	}
	for (int i = 0; i < 3; i++) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%s/ns/%s", argv[1], kinds[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, 0)) {
			perror(path);
			return 1;
		}
		close(fd);
	}
	child = fork();
	if (child < 0) {
		perror("xs_ns_run: fork");
		return 1;
	}
	if (!child) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	while (waitpid(child, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
