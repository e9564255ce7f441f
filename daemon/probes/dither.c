// SPDX-License-Identifier: Apache-2.0
#include "daemon/probes/dither.h"

/* splitmix64: a restart needs no better randomness than that its moments are unrelated. */
static uint64_t next_random(struct dither *d)
{
	uint64_t z = (d->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t between(struct dither *d, uint64_t lo, uint64_t hi)
{
	return lo + next_random(d) % (hi - lo + 1);
}

void dither__init(struct dither *d, uint64_t period_ns, uint64_t seed)
{
	d->period_ns = period_ns < DITHER_SHORTEST_NS ? DITHER_SHORTEST_NS : period_ns;
	d->min_ns = DITHER_MIN_PERIODS * d->period_ns;
	d->max_ns = DITHER_MAX_PERIODS * d->period_ns;
	if (d->min_ns < DITHER_MIN_NS) {
		d->max_ns = d->max_ns * DITHER_MIN_NS / d->min_ns;
		d->min_ns = DITHER_MIN_NS;
	}
	d->rng = seed;
}

void dither__next(struct dither *d, uint64_t *ret_interval_ns, uint64_t *ret_period_ns)
{
	uint64_t interval = between(d, d->min_ns, d->max_ns);
	/* Either way alike: the mean rate is the nominal one. */
	double rate = 1e6 + (double)between(d, 0, 2 * DITHER_SPREAD_PPM) - DITHER_SPREAD_PPM;
	double samples = (double)interval / (double)d->period_ns + 0.5;
	/* The interval holds interval / period - 1/2 samples on average: the nominal count. */
	double period = (double)interval / samples * 1e6 / rate;

	*ret_interval_ns = interval;
	*ret_period_ns = period < DITHER_SHORTEST_NS ? DITHER_SHORTEST_NS : (uint64_t)period;
}
