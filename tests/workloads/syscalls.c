// SPDX-License-Identifier: Apache-2.0
/*
 * Syscall-heavy: xs_sys_reader reads /dev/zero in 64 KiB blocks for SECS seconds. The syscall is
 * made by our own frame-pointer function: libc's read() keeps no frame pointer, and a frame-pointer
 * walk from inside it skips its caller.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char buf[64 << 10];

__attribute__((noinline)) long xs_sys_read_block(int fd, void *p, unsigned long len)
{
	/* A stack slot makes GCC build the frame even in this leaf (it drops it otherwise,
	 * whatever -mno-omit-leaf-frame-pointer says). */
	volatile long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(SYS_read), "D"(fd), "S"(p), "d"(len)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) long xs_sys_reader(int fd, double secs)
{
	struct timespec t0, t;
	long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 64; i++)
			if (xs_sys_read_block(fd, buf, sizeof(buf)) > 0)
				n++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	__asm__ volatile("" ::: "memory");
	return n;
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	if (argc != 2 || fd < 0)
		return 2;
	printf("reads %ld\n", xs_sys_reader(fd, strtod(argv[1], NULL)));
	return 0;
}
