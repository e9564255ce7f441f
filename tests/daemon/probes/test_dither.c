// SPDX-License-Identifier: Apache-2.0
/* The sampler's restarts off its grid (daemon/probes/dither.c): where, how often, at what rate. */
#include <criterion/criterion.h>
#include <math.h>

#include "daemon/probes/dither.h"

/* The samples a restarted event fires before its next restart: one each period after it. */
static uint64_t samples_in(uint64_t interval, uint64_t period)
{
	return (interval - 1) / period;
}

Test(dither, periods_spread_and_restarts_bounded)
{
	const uint64_t p = 10101010; /* 99 Hz */
	struct dither d;
	uint64_t lo = UINT64_MAX, hi = 0, ilo = UINT64_MAX, ihi = 0;

	dither__init(&d, p, 42);
	for (int i = 0; i < 100000; i++) {
		uint64_t interval, period;

		dither__next(&d, &interval, &period);
		lo = period < lo ? period : lo;
		hi = period > hi ? period : hi;
		ilo = interval < ilo ? interval : ilo;
		ihi = interval > ihi ? interval : ihi;
	}
	/* The rate within 2% either way, the period shortened by half a period in 2 to 6 (a
	 * restart's loss): from 2 / 2.5 / 1.02 to 6 / 6.5 / 0.98 of the nominal one. */
	cr_expect_geq(lo, 0.7843 * p, "shortest period %llu", (unsigned long long)lo);
	cr_expect_leq(hi, 0.9420 * p, "longest period %llu", (unsigned long long)hi);
	cr_expect_lt(lo, 0.79 * p, "shortest period %llu", (unsigned long long)lo);
	cr_expect_gt(hi, 0.935 * p, "longest period %llu", (unsigned long long)hi);
	cr_expect_geq(ilo, 2 * p);
	cr_expect_leq(ihi, 6 * p);
	cr_expect_lt(ilo, 2.1 * p);
	cr_expect_gt(ihi, 5.9 * p);
}

/* What restarts drop is made up: the samples of a long run are its time over the period. */
Test(dither, the_rate_is_kept)
{
	static const uint64_t periods[] = {1001001, 10101010, 52631578, 100000};

	for (size_t k = 0; k < sizeof(periods) / sizeof(periods[0]); k++) {
		struct dither d;
		uint64_t total = 0, samples = 0;

		dither__init(&d, periods[k], 7 + k);
		/* Each restart's count is off by up to half a sample either way: 200000 of them. */
		for (int i = 0; i < 200000; i++) {
			uint64_t interval, period;

			dither__next(&d, &interval, &period);
			total += interval;
			samples += samples_in(interval, period);
		}
		cr_expect_lt(fabs((double)samples / ((double)total / periods[k]) - 1), 0.002,
			     "period %llu: %llu samples in %.0f periods",
			     (unsigned long long)periods[k], (unsigned long long)samples,
			     (double)total / periods[k]);
	}
}

/* Fast sampling restarts every 20 to 60 ms, not every few periods; the kernel's shortest
 * period holds. */
Test(dither, fast_sampling_restarts_no_more_than_50_a_second)
{
	struct dither d;
	uint64_t interval, period;

	dither__init(&d, 100000, 1); /* 10 kHz */
	for (int i = 0; i < 10000; i++) {
		dither__next(&d, &interval, &period);
		cr_assert_geq(interval, DITHER_MIN_NS);
		cr_assert_leq(interval, 3 * DITHER_MIN_NS);
	}
	dither__init(&d, 1, 1);
	dither__next(&d, &interval, &period);
	cr_expect_geq(period, DITHER_SHORTEST_NS);
}

/*
 * A program with a cycle of 10 periods exactly, in two ranges of 3.5 and 6.5 periods: on the
 * grid, a run gives the first range 3 or 4 samples a cycle (30% or 40%: issue 35); restarted
 * off it, 35% within half a point, whatever the phase the run starts at.
 */
Test(dither, a_cycle_of_whole_periods_gets_its_shares)
{
	const uint64_t p = 1000000, cycle = 10 * p, a_len = 3500000;

	for (uint64_t phase = 0; phase < cycle; phase += cycle / 7) {
		struct dither d;
		uint64_t t = phase, end = phase + 20000 * cycle, in_a = 0, n = 0;
		uint64_t grid_a = 0, grid_n = 0;

		for (uint64_t g = phase + p; g < end; g += p, grid_n++)
			grid_a += g % cycle < a_len;
		dither__init(&d, p, 3 + phase);
		while (t < end) {
			uint64_t interval, period;

			dither__next(&d, &interval, &period);
			for (uint64_t s = t + period; s < t + interval && s < end; s += period, n++)
				in_a += s % cycle < a_len;
			t += interval;
		}
		cr_expect_lt(fabs(100.0 * in_a / n - 35), 0.5, "phase %llu: %.2f%% off the grid",
			     (unsigned long long)phase, 100.0 * in_a / n);
		cr_expect_gt(fabs(100.0 * grid_a / grid_n - 35), 4,
			     "phase %llu: %.2f%% on the grid", (unsigned long long)phase,
			     100.0 * grid_a / grid_n);
	}
}
