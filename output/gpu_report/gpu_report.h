/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why the GPU waits: a profile's GPU records, launches, joins, waits and CPU samples made into
 * facts per device (busy, idle gaps, utilisation, launch-to-start delay per stream, kernels,
 * copies, communication), every idle stretch of a device explained (the host was not
 * submitting, it was between back-to-back launches, it was blocked in a synchronising call,
 * or the work was queued behind a dependency), each with the CPU stack to blame, and findings
 * a person can act on. Written as text (80 columns) or as JSON (output/gpu_report/GPU_REPORT.md: the
 * schema, versioned, and every threshold).
 */
#ifndef XSPROF_OUTPUT_GPU_REPORT_H
#define XSPROF_OUTPUT_GPU_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct chrome_trace;
struct gpu_report;
struct profile_data;

#define GPU_REPORT_SCHEMA  "xsprof.gpu_report"
#define GPU_REPORT_VERSION 1

/* Why a device was idle; the order of the report's idle split. */
enum gpu_idle_cause {
	GPU_IDLE_HOST = 0, /* the launching thread was busy elsewhere (its sampled stacks) */
	GPU_IDLE_LAUNCH,   /* a short gap between launches, or the next work started within
				 GPU_REPORT_LAUNCH_GAP_NS of its launch: launch overhead */
	GPU_IDLE_SYNC,	   /* the host was blocked in a synchronising call until the GPU drained */
	GPU_IDLE_DEPENDENCY, /* the next work was launched before the gap and started more than
				 GPU_REPORT_LAUNCH_GAP_NS after: queued behind a dependency */
	GPU_IDLE_UNKNOWN,    /* the next work's launch is not known */
	GPU_IDLE_NR,
};

/* A host gap shorter than this, or work that started this soon after its launch, is launch
 * overhead (GPU_IDLE_LAUNCH), not the host elsewhere or a dependency. */
#define GPU_REPORT_LAUNCH_GAP_NS 100000ull
/* A synchronising call that returned this long before a gap began still caused it (clocks). */
#define GPU_REPORT_SYNC_SLACK_NS 50000ull
/* GPU times off the CPU's by more than this, as causality shows (output/gpu_report/gpu_clock.h): the
 * finding clock_skew. */
#define GPU_REPORT_CLOCK_SKEW_NS 10000ull

/*
 * The report of pd (its GPU work, launches, joins, waits and, for the host's stacks, its
 * sample timeline; stacks resolved through pd->stack). The report points at pd's strings: use
 * it while pd's names live. 0 or -ENOMEM.
 */
int gpu_report__build(const struct profile_data *pd, struct gpu_report **ret);
void gpu_report__free(struct gpu_report *r);

/*
 * Reports kept and merged (the service keeps one per window slice and user, and merges those a
 * query asks for): collect makes a report's facts without its findings, every string it names
 * copied into it (so it outlives pd), of the processes accept takes (NULL: all of pd's); merge
 * adds a collected report into another (an empty one from gpu_report__new, or a collected
 * one), from left as it was; finish makes the findings of a collected or merged report, which
 * the writers then take. build is collect (pointing at pd's strings) and finish in one.
 * A device idle between into's last work and from's first is an idle gap of cause unknown
 * (slices are merged oldest first). Reports merged must not hold one device's work of the same
 * time twice (two users' reports of one slice: their busy and idle time would add up). 0 or -ENOMEM; on failure *ret is NULL / into is unchanged
 * in its figures only as far as it got (free it).
 */
struct gpu_report *gpu_report__new(void);
int gpu_report__collect(const struct profile_data *pd, bool (*accept)(void *ctx, uint32_t pid),
			void *ctx, struct gpu_report **ret);
int gpu_report__merge(struct gpu_report *into, const struct gpu_report *from);
int gpu_report__finish(struct gpu_report *r);
/* The end of making r, whatever made it: unless err (what making it came to), finish it into
 * *ret; on any failure r is freed and *ret untouched. 0 or -errno. */
int gpu_report__finished(struct gpu_report *r, int err, struct gpu_report **ret);
/* No GPU work, no memory call: nothing worth keeping. */
bool gpu_report__empty(const struct gpu_report *r);
/* The memory it holds, about (the window's cap). */
size_t gpu_report__bytes(const struct gpu_report *r);

/* Devices with GPU work in the report. */
size_t gpu_report__nr_devices(const struct gpu_report *r);

/* The idle causes' names ("host", "launch", "sync", "dependency", "unknown"). */
const char *gpu_report__cause_name(enum gpu_idle_cause c);

/* One share of the GPU's idle time: a cause, and the CPU stack it is blamed on. */
struct gpu_blame_view {
	enum gpu_idle_cause cause;
	uint32_t device, pid, tid;
	const char *api;	   /* sync: the call that waited; else NULL */
	const char *const *frames; /* outermost first, without the process (NULL: none known) */
	size_t nr_frames;
	uint64_t ns;
};

/* fn for each share of r's idle time blamed on a stack, heaviest first. */
void gpu_report__for_each_blame(const struct gpu_report *r,
				void (*fn)(void *ctx, const struct gpu_blame_view *b), void *ctx);

/* One device's figures, as the service's GPU metrics count them. */
struct gpu_device_figures {
	uint32_t device;
	uint64_t busy_ns, idle_ns;
	uint64_t idle_by[GPU_IDLE_NR]; /* idle_ns by cause */
	uint64_t kernels, copies, memsets;
};

/*
 * The figures of each device the GPU work of pd's processes that accept takes (NULL: all) ran
 * on, as a report of them would give them, without the report: into out (at most max, by
 * device); *ret_n: how many devices there were. 0 or -ENOMEM.
 */
int gpu_report__figures(const struct profile_data *pd, bool (*accept)(void *ctx, uint32_t pid),
			void *ctx, struct gpu_device_figures *out, size_t max, size_t *ret_n);

/* The same figures from a report already collected (gpu_report__collect) of the same
 * processes: what gpu_report__figures would give, without a second pass over them. */
void gpu_report__device_figures(const struct gpu_report *r, struct gpu_device_figures *out,
				size_t max, size_t *ret_n);

/* Text for a person, at most 80 columns a line (a finished report). 0 or -EIO. */
int gpu_report__write_text(const struct gpu_report *r, FILE *f);
/* The JSON document (GPU_REPORT_SCHEMA, GPU_REPORT_VERSION). 0 or -EIO. */
int gpu_report__write_json(const struct gpu_report *r, FILE *f);

#endif
