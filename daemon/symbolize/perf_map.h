/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JIT symbol maps in the format perf reads: /tmp/perf-PID.map, one "START SIZE NAME" line per
 * function (hex START and SIZE, 0x optional), appended to as code is compiled (CPython 3.12+ with
 * -X perf, the JVM and Node with their perf flags). The file is written by the profiled process:
 * every line is checked against the buffer's end, and sizes and counts are capped.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_PERF_MAP_H
#define XSPROF_DAEMON_SYMBOLIZE_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Most bytes read from one map file, and most entries kept: past them the rest is ignored (and
 * counted: symbolizer stats perf_maps_capped). Small enough that a hostile 100 MB map keeps a
 * one-shot run's peak memory near its usual ~20 MiB; a JIT's real map is far smaller.
 */
#define PERF_MAP_MAX_BYTES   (8u << 20)
#define PERF_MAP_MAX_ENTRIES (1u << 17)
/* Longer names are cut (a JIT's generated names can be arbitrarily long). */
#define PERF_MAP_MAX_NAME 1024

struct perf_map_sym {
	uint64_t start;
	uint64_t size; /* never 0 */
	const char *name;
};

struct perf_map;

/* NULL with errno set. */
struct perf_map *perf_map__new(void);
void perf_map__free(struct perf_map *m);

/*
 * Parses the complete lines of buf (a partial last line is left for the next call) and adds
 * them. Returns how many bytes were consumed; malformed lines are skipped and counted. A later
 * entry for the same start replaces the earlier one (the JIT reused the memory).
 */
size_t perf_map__parse(struct perf_map *m, const char *buf, size_t len);
/*
 * Reads what fd (the map file) gained since the last call, from where the last complete line
 * ended. 0, or a negative errno; -EFBIG once PERF_MAP_MAX_BYTES were read.
 */
int perf_map__update_fd(struct perf_map *m, int fd);

/* The entry holding addr, or NULL. Sorts pending entries first, hence not const. */
const struct perf_map_sym *perf_map__lookup(struct perf_map *m, uint64_t addr);
size_t perf_map__count(const struct perf_map *m);
size_t perf_map__skipped(const struct perf_map *m);
size_t perf_map__bytes(const struct perf_map *m);

#endif
