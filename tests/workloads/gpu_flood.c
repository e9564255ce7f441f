// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_flood N NAME [SPACING_US [BURST PERIOD_MS [GRAPH]]]: N kernel records named NAME sent
 * to the daemon's CUPTI socket ($XSPROF_CUPTI_SOCKET) on one connection, as fast as it takes
 * them, each SPACING_US (default 1) after the one before and lasting half of that, ending now.
 * The store-sharing test plays a flooding user with it, and a victim sending a few.
 *
 * BURST PERIOD_MS: BURST records at once (a CUPTI buffer flush), the next burst PERIOD_MS after
 * the start of this one (bench/gpu_records.sh: 1 M records as 10 bursts a second apart).
 * GRAPH: kernels of CUDA graphs of GRAPH kernels each: one graph id and one launch's
 * correlation id per GRAPH records, node ids 1..GRAPH.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/base/clock.h"
#include "tests/workloads/fake_gpu_send.h"

/* The kernel record at rec (built by wb_kernel) as a graph's node. */
static void as_graph_node(uint8_t *rec, uint32_t graph_id, uint64_t node_id)
{
	memcpy(rec + offsetof(struct xsprof_wire_kernel, graph_id), &graph_id, sizeof(graph_id));
	memcpy(rec + offsetof(struct xsprof_wire_kernel, graph_node_id), &node_id, sizeof(node_id));
}

int main(int argc, char **argv)
{
	static uint8_t buf[256 * XSPROF_WIRE_RECORD_MAX];
	unsigned long n = argc > 2 ? strtoul(argv[1], NULL, 10) : 0;
	uint64_t spacing = (argc > 3 ? strtoull(argv[3], NULL, 10) : 1) * 1000, t;
	unsigned long burst = argc > 5 ? strtoul(argv[4], NULL, 10) : 0;
	uint64_t period_ns = argc > 5 ? strtoull(argv[5], NULL, 10) * 1000000 : 0;
	unsigned long graph = argc > 6 ? strtoul(argv[6], NULL, 10) : 0;
	uint64_t t0 = clock__mono_ns(), next = t0;
	int fd;

	if (!n) {
		fprintf(stderr, "usage: %s N NAME [SPACING_US [BURST PERIOD_MS [GRAPH]]]\n",
			argv[0]);
		return 2;
	}
	fd = xs_fake_connect();
	if (fd < 0)
		return 1;
	t = clock__mono_ns() - n * spacing;
	for (unsigned long i = 0; i < n;) {
		size_t len = i ? 0 : wb_hello(buf, (uint32_t)getpid());

		if (burst && i && i % burst == 0) {
			uint64_t now = clock__mono_ns();

			next += period_ns;
			if (next > now)
				nanosleep(&(struct timespec){(time_t)((next - now) / 1000000000),
							     (long)((next - now) % 1000000000)},
					  NULL);
		}
		for (int k = 0; k < 256 && i < n && (!burst || k == 0 || i % burst);
		     k++, i++, t += spacing) {
			uint8_t *rec = buf + len;
			uint32_t corr = graph ? (uint32_t)(i / graph) + 1 : (uint32_t)i + 1;

			len += wb_kernel(rec, argv[2], t, t + spacing / 2, corr);
			if (graph)
				as_graph_node(rec, corr, i % graph + 1);
		}
		if (xs_fake_write_all(fd, buf, len))
			return 1;
	}
	close(fd);
	printf("sent %lu kernels named %s in %.3f s\n", n, argv[2],
	       (double)(clock__mono_ns() - t0) / 1e9);
	return 0;
}
