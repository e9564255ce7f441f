/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Playing libxsprof_cupti.so's part in the workloads: kernel records sent to the daemon's CUPTI
 * socket ($XSPROF_CUPTI_SOCKET or the default) on a connection of their own, as the injection
 * library sends them after the GPU ran them.
 */
#ifndef XSPROF_TESTS_WORKLOADS_FAKE_GPU_SEND_H
#define XSPROF_TESTS_WORKLOADS_FAKE_GPU_SEND_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/lib/cupti_wire_build.h"

struct xs_fake_kernel {
	const char *name;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	uint32_t corr_id;
};

/* A connection to the daemon's CUPTI socket, or -1 after saying why on stderr. */
static inline int xs_fake_connect(void)
{
	const char *path = getenv(XSPROF_WIRE_SOCKET_ENV);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path ? path : XSPROF_WIRE_DEFAULT_SOCKET);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror(a.sun_path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* All n bytes to fd: 0, or 1 after saying why on stderr. */
static inline int xs_fake_write_all(int fd, const uint8_t *buf, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w <= 0) {
			perror("write");
			return 1;
		}
		off += (size_t)w;
	}
	return 0;
}

/* 0, or 1 after saying why on stderr. At most 64 kernels. */
static inline int xs_fake_send_kernels(const struct xs_fake_kernel *k, size_t nk)
{
	static uint8_t buf[65 * XSPROF_WIRE_RECORD_MAX];
	size_t n = 0;
	int fd = xs_fake_connect(), err;

	if (fd < 0)
		return 1;
	n += wb_hello(buf + n, (uint32_t)getpid());
	for (size_t i = 0; i < nk && i < 64; i++)
		n += wb_kernel(buf + n, k[i].name, k[i].start_ns, k[i].end_ns, k[i].corr_id);
	err = xs_fake_write_all(fd, buf, n);
	close(fd);
	return err;
}

#endif
