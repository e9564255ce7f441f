// SPDX-License-Identifier: Apache-2.0
/* Shared library whose function does the children's CPU work: frames in a library mapped by the
 * dynamic loader after exec, the case the mmap events exist for. */
#include <time.h>

#include "fixture.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins for about secs seconds of wall time (the caller is alone on its CPU, mostly). */
SYMFIX_FN unsigned long symfix_burn_spin(double secs)
{
	volatile unsigned long x = 0;
	double end = now_s() + secs;

	while (now_s() < end)
		for (int i = 0; i < 2000; i++)
			x += (unsigned long)i * 2654435761u;
	return x;
}
