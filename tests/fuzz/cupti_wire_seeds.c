// SPDX-License-Identifier: Apache-2.0
/*
 * Writes the seed corpus for fuzz_cupti_wire into DIR: one valid connection per record type,
 * a mixed stream, and near-misses, so the fuzzer starts from inputs that reach every parser.
 * Generated rather than committed, so the seeds follow the format in xsprof_wire.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/lib/cupti_wire_build.h"

static uint8_t buf[8 * XSPROF_WIRE_RECORD_MAX];

static void put(const char *dir, const char *name, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* Byte 0 selects the harness mode: 0 = hello first. */
static size_t start(int with_hello)
{
	buf[0] = with_hello ? 0 : 1;
	return 1 + (with_hello ? wb_hello(buf + 1, 1234) : 0);
}

int main(int argc, char **argv)
{
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	n = start(1);
	n += wb_kernel(buf + n, "_Z6vecAddPfS_S_i", 100, 200, 1);
	put(argv[1], "kernel", n);
	n = start(1);
	n += wb_memcpy(buf + n, XSPROF_COPY_HTOD, 4096, 1, 2, 2);
	put(argv[1], "memcpy", n);
	n = start(0);
	n += wb_memset(buf + n, 64, 1, 2);
	put(argv[1], "memset", n);
	n = start(0);
	n += wb_api(buf + n, XSPROF_API_RUNTIME, 211, 77, 1, 5, 3);
	put(argv[1], "api", n);
	n = start(0);
	n += wb_sync(buf + n, XSPROF_SYNC_STREAM, 1, 9);
	put(argv[1], "sync", n);
	n = start(0);
	n += wb_nvtx(buf + n, "epoch", "train", 1, 9, 0);
	put(argv[1], "nvtx", n);
	/* A range's opening, then the range itself (what the open ranges pair). */
	n = start(0);
	n += wb_nvtx(buf + n, "epoch", "train", 1, 1, XSPROF_WIRE_F_OPEN);
	n += wb_nvtx(buf + n, "step", NULL, 2, 2, XSPROF_WIRE_F_OPEN);
	n += wb_nvtx(buf + n, "epoch", "train", 1, 9, 0);
	put(argv[1], "nvtx_open", n);
	n = start(0);
	n += wb_graph(buf + n, 3, 1, 9);
	put(argv[1], "graph", n);
	n = start(0);
	n += wb_stats(buf + n, 1, 2);
	put(argv[1], "stats", n);

	n = start(1);
	n += wb_kernel(buf + n, "a", 1, 2, 1);
	n += wb_api(buf + n, XSPROF_API_DRIVER, 307, 9, 1, 2, 1);
	n += wb_nvtx(buf + n, "mark", NULL, 5, 5, XSPROF_WIRE_F_INSTANT);
	n += wb_memcpy(buf + n, XSPROF_COPY_DTOH, 8, 3, 4, 2);
	n += wb_kernel(buf + n, NULL, 0, 0, 2);
	put(argv[1], "mixed", n);

	n = start(1);
	n += wb_kernel(buf + n, "cut", 1, 2, 1);
	put(argv[1], "truncated", n - 5);
	n = start(0);
	n += wb_kernel(buf + n, "backwards", 9, 1, 1);
	put(argv[1], "backwards", n);
	return 0;
}
