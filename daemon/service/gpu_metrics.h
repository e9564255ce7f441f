/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU as Prometheus metrics: what each window slice's GPU figures say (busy time, idle
 * time by cause, kernels, copies), summed into counters by device, process name and systemd
 * unit; and each process's GPU memory in use and its peak, from the slices' memory calls
 * (allocations followed by address until they are freed or their process exits).
 *
 * Caps, each counted when hit: GPU_METRICS_MAX_SERIES label sets (past it a slice's figures go
 * to process="[other]", unit="[other]" of their device); GPU_METRICS_MAX_ALLOCS allocations
 * followed at once, a user's at most half of them (past it an allocation is not followed: its
 * bytes are not in use, its free is unknown); GPU_METRICS_MAX_PROCS processes with memory.
 */
#ifndef XSPROF_DAEMON_SERVICE_GPU_METRICS_H
#define XSPROF_DAEMON_SERVICE_GPU_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GPU_METRICS_MAX_SERIES 256
#define GPU_METRICS_MAX_ALLOCS 262144
#define GPU_METRICS_MAX_PROCS  1024

struct gpu_metrics;
struct slice_out;
struct json_object;

/* NULL with errno set. */
struct gpu_metrics *gpu_metrics__new(void);
void gpu_metrics__free(struct gpu_metrics *m);

/* A slice's figures and memory calls counted (lasting.on_gpu_figures; ctx: the metrics). */
void gpu_metrics__add_slice(void *ctx, struct slice_out *out);

/*
 * Processes gone (alive(pid) false) give back their memory: in use drops to 0 for them, and
 * their allocations are no longer followed. Called at each slice close.
 */
void gpu_metrics__reap(struct gpu_metrics *m, int (*alive)(uint32_t pid));

/* The metric families, in Prometheus' text format. */
void gpu_metrics__write(const struct gpu_metrics *m, FILE *f);

/* What it holds and what its caps left out, for the status document. */
struct json_object *gpu_metrics__status(const struct gpu_metrics *m);

#endif
