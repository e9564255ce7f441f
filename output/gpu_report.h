/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why the GPU waits: a profile's GPU records, launches, joins, waits and CPU samples made into
 * facts per device (busy, idle gaps, utilisation, launch-to-start delay per stream, kernels,
 * copies, communication), every idle stretch of a device explained (the host was not
 * submitting, it was between back-to-back launches, it was blocked in a synchronising call,
 * or the work was queued behind a dependency), each with the CPU stack to blame, and findings
 * a person can act on. Written as text (80 columns) or as JSON (output/GPU_REPORT.md: the
 * schema, versioned, and every threshold).
 */
#ifndef XSPROF_OUTPUT_GPU_REPORT_H
#define XSPROF_OUTPUT_GPU_REPORT_H

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

/*
 * The report of pd (its GPU work, launches, joins, waits and, for the host's stacks, its
 * sample timeline; stacks resolved through pd->stack). The report points at pd's strings: use
 * it while pd's names live. 0 or -ENOMEM.
 */
int gpu_report__build(const struct profile_data *pd, struct gpu_report **ret);
void gpu_report__free(struct gpu_report *r);

/* Devices with GPU work in the report. */
size_t gpu_report__nr_devices(const struct gpu_report *r);

/* Text for a person, at most 80 columns a line. 0 or -EIO. */
int gpu_report__write_text(const struct gpu_report *r, FILE *f);
/* The JSON document (GPU_REPORT_SCHEMA, GPU_REPORT_VERSION). 0 or -EIO. */
int gpu_report__write_json(const struct gpu_report *r, FILE *f);

/*
 * Counter tracks on each GPU's process of a Chrome trace: "busy %" per 10 ms and "queue depth"
 * (work launched and not yet finished, from the joins). 0 or -errno.
 */
int gpu_report__counters(const struct profile_data *pd, struct chrome_trace *t);

#endif
