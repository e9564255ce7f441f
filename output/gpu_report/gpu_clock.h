/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How far the GPU's times may be from the CPU's, bounded by causality alone. The GPU's times
 * come through CUPTI (its conversion of the device's clock to the host's), the CPU's from BPF
 * (CLOCK_MONOTONIC): if the GPU times read o nanoseconds late, then
 *   - work starts after the call that launched it:  o <= start - launch call  (the "lead"),
 *   - a device-wide synchronize returns after the work its thread launched before it on the
 *     device it waits for (that of its last launch) ended:
 *     o >= -(return - end)  (the "drain"),
 * so o lies in [-min drain, +min lead]. On an idle GPU both minima are a few microseconds (the
 * launch latency, the wake-up), which bounds the offset that tightly; a negative minimum
 * means one clock is off by at least that much. Pure data: no I/O.
 */
#ifndef XSPROF_OUTPUT_GPU_CLOCK_H
#define XSPROF_OUTPUT_GPU_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile_data;

struct gpu_clock {
	int64_t lead_min_ns;  /* min over joined work of its start - its launch call's time */
	uint64_t leads;	      /* joined pieces of work measured */
	int64_t drain_min_ns; /* min over device-wide syncs of this device (the syncing
				 thread's last launch was on it) of return - end of the latest
				 work the thread launched on it before the sync began */
	uint64_t drains;      /* syncs measured */
};

/* Nothing measured yet. */
void gpu_clock__init(struct gpu_clock *c);

/*
 * Device's bounds from pd's joined work and waits (device-wide synchronizes only: a stream's
 * may return while another stream's work runs on). launch_of maps a pd->gpu index to its
 * pd->launches index + 1 (0: not joined). 0 or -ENOMEM.
 */
int gpu_clock__measure(const struct profile_data *pd, const size_t *launch_of, uint32_t device,
		       struct gpu_clock *ret);

/* a takes b's measurements too (a merged report's device). */
void gpu_clock__merge(struct gpu_clock *a, const struct gpu_clock *b);

/* The GPU times' offset lies in [*lo, *hi] ns (lo > hi: the two bounds disagree, a clock is
 * off). false when either side was not measured. */
bool gpu_clock__bound(const struct gpu_clock *c, int64_t *ret_lo, int64_t *ret_hi);

#endif
