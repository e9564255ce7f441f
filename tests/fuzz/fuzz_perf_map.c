// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: /tmp/perf-PID.map files, written by the (JIT-running) profiled process. */
#include <stddef.h>
#include <stdint.h>

#include "daemon/symbolize/perf_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perf_map *m = perf_map__new();
	size_t half = size / 2, used;

	if (!m)
		return 0;
	/* In two reads, as a growing file is read. */
	used = perf_map__parse(m, (const char *)data, half);
	perf_map__parse(m, (const char *)data + used, size - used);
	for (size_t i = 0; i + 8 <= size; i += 8) {
		uint64_t a;

		__builtin_memcpy(&a, data + i, 8);
		perf_map__lookup(m, a);
	}
	perf_map__free(m);
	return 0;
}
