// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_flood N NAME [SPACING_US]: N kernel records named NAME sent to the daemon's CUPTI
 * socket ($XSPROF_CUPTI_SOCKET) on one connection, as fast as it takes them, each SPACING_US
 * (default 1) after the one before and lasting half of that, ending now. The store-sharing
 * test plays a flooding user with it, and a victim sending a few.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "daemon/base/clock.h"
#include "tests/workloads/fake_gpu_send.h"

int main(int argc, char **argv)
{
	static uint8_t buf[256 * XSPROF_WIRE_RECORD_MAX];
	unsigned long n = argc > 2 ? strtoul(argv[1], NULL, 10) : 0;
	uint64_t spacing = (argc > 3 ? strtoull(argv[3], NULL, 10) : 1) * 1000, t;
	int fd;

	if (!n) {
		fprintf(stderr, "usage: %s N NAME [SPACING_US]\n", argv[0]);
		return 2;
	}
	fd = xs_fake_connect();
	if (fd < 0)
		return 1;
	t = clock__mono_ns() - n * spacing;
	for (unsigned long i = 0; i < n;) {
		size_t len = i ? 0 : wb_hello(buf, (uint32_t)getpid());

		for (int k = 0; k < 256 && i < n; k++, i++, t += spacing)
			len += wb_kernel(buf + len, argv[2], t, t + spacing / 2, (uint32_t)i + 1);
		if (xs_fake_write_all(fd, buf, len))
			return 1;
	}
	close(fd);
	printf("sent %lu kernels named %s\n", n, argv[2]);
	return 0;
}
