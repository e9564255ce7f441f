// SPDX-License-Identifier: Apache-2.0
/*
 * xs_scope_lib SECONDS: for SECONDS of wall time, 50 ms of CPU in libxs_scope_lib.so's scope
 * "lib_phase", then 50 ms outside any scope, again and again; a profiler attached meanwhile
 * sees about half its samples in the scope. Prints "ready" once running.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/workloads/phases.h"

void xs_lib_phase(uint64_t ns);

static NOINLINE void xs_outside(void)
{
	xs_burn(50 * MS);
}

int main(int argc, char **argv)
{
	uint64_t end =
		clock_ns(CLOCK_MONOTONIC) + (uint64_t)(argc > 1 ? atoi(argv[1]) : 5) * 1000 * MS;

	printf("ready\n");
	fflush(stdout);
	while (clock_ns(CLOCK_MONOTONIC) < end) {
		xs_lib_phase(50 * MS);
		xs_outside();
	}
	return 0;
}
