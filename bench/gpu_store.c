// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_store_bench [N]: the GPU record store's cost per record (gpu_store__add) with the store
 * at its cap (every add evicts), kernels of 8 processes of one uid with 64 names; best of 5
 * rounds of N (default 2,000,000). Before/after a change: build both, run them in turn with
 * farm-bench --vs (the figure in bench/README.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/base/clock.h"
#include "daemon/gpu/gpu_records.h"

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
	struct gpu_store *st = gpu_store__new(&(struct gpu_store_opts){0});
	double best = 1e9;
	char names[64][32];

	if (!st || !n)
		return 1;
	for (int i = 0; i < 64; i++)
		snprintf(names[i], sizeof(names[i]), "kernel_%d", i);
	for (int rep = 0; rep < 5; rep++) {
		double t0 = clock__mono_s(), dt;

		for (size_t i = 0; i < n; i++) {
			struct gpu_activity a = {.kind = GPU_ACT_KERNEL,
						 .pid = 100 + (uint32_t)(i % 8),
						 .uid = 1000,
						 .start_ns = i,
						 .end_ns = i + 1,
						 .name = names[i % 64]};

			gpu_store__add(st, &a);
		}
		dt = (clock__mono_s() - t0) / (double)n * 1e9;
		best = dt < best ? dt : best;
	}
	printf("gpu_store__add: %.1f ns per record (best of 5 rounds of %zu, at the cap)\n", best,
	       n);
	gpu_store__free(st);
	return 0;
}
