// SPDX-License-Identifier: Apache-2.0
/*
 * xs_dlleaf LIB COPIES SECONDS: code mapped after the profiler read the process's mappings.
 * Sleeps 0.5 s (the mappings are read at exec), then COPIES times: copies LIB to a file of its
 * own, dlopen()s it and runs its dlleaf_caller for SECONDS. Each copy is a file the mapping list
 * does not have yet when the first sample lands in it; they come faster than a profiler would
 * read a process's mappings again on its own (once a second).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int copy(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			n = -1;
			break;
		}
	close(in);
	return close(out) || n < 0 ? -1 : 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/xs_dlleaf.XXXXXX", path[64][64];
	int copies = argc > 2 ? atoi(argv[2]) : 8, rc = 0;
	double secs = argc > 3 ? atof(argv[3]) : 0.1;

	if (argc < 2 || copies < 1 || copies > 64 || !mkdtemp(dir)) {
		fprintf(stderr, "usage: xs_dlleaf LIB [COPIES (1-64)] [SECONDS]\n");
		return 2;
	}
	usleep(500000);
	for (int i = 0; i < copies; i++) {
		void (*caller)(void);
		void *h;
		double t0;

		snprintf(path[i], sizeof(path[i]), "%s/libxs_dlleaf.%d.so", dir, i);
		if (copy(argv[1], path[i]) || !(h = dlopen(path[i], RTLD_NOW | RTLD_LOCAL)) ||
		    !(*(void **)&caller = dlsym(h, "dlleaf_caller"))) {
			const char *e = dlerror();

			fprintf(stderr, "xs_dlleaf: %s: %s\n", path[i], e ? e : "cannot copy");
			rc = 1;
			copies = i + 1;
			break;
		}
		t0 = now();
		do
			caller();
		while (now() - t0 < secs);
	}
	for (int i = 0; i < copies; i++)
		unlink(path[i]);
	rmdir(dir);
	return rc;
}
