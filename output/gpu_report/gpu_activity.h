/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Each GPU's activity over time, from the GPU report's facts of its work: how busy it was in
 * each 10 ms and how much work was launched on it and not yet finished (from the joins). Data
 * for a writer to draw (the Chrome trace's counter tracks); nothing here writes.
 */
#ifndef XSPROF_OUTPUT_GPU_ACTIVITY_H
#define XSPROF_OUTPUT_GPU_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>

struct profile_data;

/* The busy share of [start_ns, next point's start_ns); the last point, at the end, is 0. */
struct gpu_busy_bin {
	uint64_t start_ns;
	double busy_pct;
};

/* The work launched and not yet finished from time_ns on (at most 200000 a device). */
struct gpu_queue_depth {
	uint64_t time_ns;
	int64_t depth;
};

struct gpu_device_activity {
	uint32_t device;
	struct gpu_busy_bin *busy; /* by time; none when the device ran no work */
	size_t nr_busy;
	struct gpu_queue_depth *queue; /* by time */
	size_t nr_queue;
};

struct gpu_activity {
	struct gpu_device_activity *devices; /* in the order their first work came */
	size_t nr_devices;
};

/* 0 or -ENOMEM. *ret is never NULL on success (no devices: none). */
int gpu_activity__build(const struct profile_data *pd, struct gpu_activity **ret);
void gpu_activity__free(struct gpu_activity *a);

#endif
