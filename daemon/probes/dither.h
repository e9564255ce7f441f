/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Samples off a fixed grid. The kernel fires a cpu-clock event every period to the nanosecond,
 * so a program whose cycle is a whole number of periods (10 ms at 100 or 1000 Hz, 10.01 ms at
 * 999 Hz) meets the samples at the same points of its cycle for a whole run: each of its NVTX
 * ranges, or functions, gets a whole number of samples a cycle, one more or one fewer than its
 * share as the run's phase falls (issue 35: 40/40 where the program's clock said 35/45). So the
 * sampler restarts each CPU's event at a random moment every 2 to 6 periods, and not more
 * often than every 20 to 60 ms: each restart puts the samples at a new phase against any
 * cycle, and a period up to 2% off the nominal one walks them between restarts. The rate stays
 * within 2%, so that a phase of a few hundred milliseconds is sampled at the rate of the others:
 * a wider spread would trade the grid's error for one of its own. A restart drops what was left
 * of the period it cuts, half a period on average: the periods are shortened by that, so that
 * the samples keep the nominal rate on average and each still stands for the nominal period.
 */
#ifndef XSPROF_DAEMON_PROBES_DITHER_H
#define XSPROF_DAEMON_PROBES_DITHER_H

#include <stdint.h>

/* How far the rate may be off the nominal one between two restarts, either way (ppm). */
#define DITHER_SPREAD_PPM 20000
/* Between restarts: 2 to 6 periods, and not more often than every 20 to 60 ms. */
#define DITHER_MIN_PERIODS 2
#define DITHER_MAX_PERIODS 6
#define DITHER_MIN_NS	   (20 * 1000000ull)
/* The kernel's shortest cpu-clock period. */
#define DITHER_SHORTEST_NS 10000

struct dither {
	uint64_t period_ns;	 /* nominal */
	uint64_t min_ns, max_ns; /* the time between restarts */
	uint64_t rng;
};

/* For a nominal period (ns, at least DITHER_SHORTEST_NS); seed: any value. */
void dither__init(struct dither *d, uint64_t period_ns, uint64_t seed);

/* A CPU's next restart: how long until it (ret_interval_ns) and its period until then. */
void dither__next(struct dither *d, uint64_t *ret_interval_ns, uint64_t *ret_period_ns);

#endif
