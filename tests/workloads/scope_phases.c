// SPDX-License-Identifier: Apache-2.0
/*
 * xs_scope_phases ITERATIONS: the phases of xs_nvtx_phases marked with xsprof/scope.h's USDT
 * scopes instead of NVTX. Each iteration:
 *   data 100 ms | step { forward 200 ms | backward 400 ms | 100 ms of its own }
 * and around it all a scope "tail", begun first (its name is read while the program surely
 * runs, however late the daemon reads the record) and still open when the program exits; its
 * own time is 150 ms at the end. Prints the truth: each phase's CPU time on the thread
 * ("phase NAME NS", innermost) and the process's ("total NS"), and each scope's own times
 * ("range NAME START END").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/workloads/phases.h"
#include "xsprof/scope.h"

enum { DATA, STEP, FORWARD, BACKWARD, TAIL, NR_PHASES };
static const char *const phase_name[] = {"data", "step", "forward", "backward", "tail"};
static uint64_t phase_cpu[NR_PHASES];

/* A phase's own CPU time, and its scope's times as the program saw them (just inside). */
static void timed(int phase, uint64_t ns)
{
	uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	xs_burn(ns);
	phase_cpu[phase] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static NOINLINE void forward(void)
{
	XSPROF_FUNCTION(); /* named "forward" */
	timed(FORWARD, 200 * MS);
}

static NOINLINE void xs_step(void)
{
	uint64_t t0, t1;

	{
		XSPROF_SCOPE("step");
		t0 = clock_ns(CLOCK_MONOTONIC);
		forward();
		xsprof_scope_begin("backward");
		timed(BACKWARD, 400 * MS);
		xsprof_scope_end("backward");
		timed(STEP, 100 * MS);
		t1 = clock_ns(CLOCK_MONOTONIC);
	}
	printf("range step %llu %llu\n", (unsigned long long)t0, (unsigned long long)t1);
}

static NOINLINE void xs_data(void)
{
	XSPROF_SCOPE("data");
	timed(DATA, 100 * MS);
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 3;

	xsprof_scope_begin("tail"); /* never ended: it ends with the process */
	for (int i = 0; i < iterations; i++) {
		xs_data();
		xs_step();
	}
	xsprof_scope_end("never begun"); /* an end without its begin: counted, harmless */
	timed(TAIL, 150 * MS);
	phases_print(phase_name, phase_cpu, NR_PHASES);
	return 0;
}
