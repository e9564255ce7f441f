// SPDX-License-Identifier: Apache-2.0
/*
 * xs_nvtx_cycles CPU_SECONDS WORKERS [CYCLE_NS]: short NVTX ranges of known CPU time, as a
 * training loop's are, on several threads at once, until the process has had CPU_SECONDS of
 * CPU (so a loaded machine gives as many samples, only later; 60 s at most). Each worker
 * repeats a cycle of about 10 ms of its CPU time:
 *   load 3 ms | step { 1 ms own | kernel 2 ms | 10 x (tiny 50 us | 50 us own) | 1 ms own }
 *   | io { 200 us own | 4 x small 200 us } | 500 us in no range
 * and worker 0 also a "handoff" range of 1 ms that it starts (nvtxRangeStartA) and a helper
 * thread ends (nvtxRangeEnd) while the worker waits in it. With CYCLE_NS, a fixed-rate loop
 * instead, as a program paced by the clock is: each cycle starts CYCLE_NS after the last
 * (CLOCK_MONOTONIC), spends 35% of it in load and 45% in step holding kernel (20%, in the
 * middle), and sleeps the rest; a cycle of a whole number of sampling periods meets a sampler
 * on a fixed grid at the same points every cycle. Each range burns CPU in a function of its own
 * (xs_in_NAME), so a sample's stack says which range it truly was in. The truth, printed at
 * the end: each range's CPU time innermost over all workers ("phase NAME NS", read on the
 * thread right after each push returns and right before each pop), the process's ("total NS")
 * and the cycles done ("cycles N").
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <nvtx3/nvToolsExt.h>

#include "tests/workloads/phases.h"

#define US 1000ull

enum { LOAD, STEP, KERNEL, TINY, IO, SMALL, HANDOFF, NR_PHASES, NO_RANGE = -1 };
static const char *const phase_name[] = {"load", "step",  "kernel", "tiny",
					 "io",	 "small", "handoff"};
static _Atomic uint64_t phase_cpu[NR_PHASES];
static uint64_t cpu_target, deadline, fixed_cycle_ns;
static _Atomic uint64_t cycles;

/* The handoff: worker 0 posts the range's id, the helper ends it and says so. */
static int handoff_fd;
static _Atomic uint64_t handoff_id;
static atomic_bool handoff_ended;

/* This thread's innermost range and the CPU time when it entered it. */
static __thread int cur_phase = NO_RANGE;
static __thread uint64_t cur_since;

static void switch_to(int phase)
{
	uint64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	if (cur_phase != NO_RANGE)
		phase_cpu[cur_phase] += now - cur_since;
	cur_since = now;
	cur_phase = phase;
}

static void push(int phase)
{
	nvtxRangePushA(phase_name[phase]);
	switch_to(phase);
}

static void pop(int parent)
{
	switch_to(parent);
	nvtxRangePop();
}

/* Spin until clock c reads end; it is read often (ranges of 50 us). */
static inline void spin_until(clockid_t c, uint64_t end)
{
	uint64_t x = phases_sink;

	while (clock_ns(c) < end)
		for (int i = 0; i < 100; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	phases_sink = x;
}

/* Spin until this thread has had ns more CPU. */
static inline void spin(uint64_t ns)
{
	spin_until(CLOCK_THREAD_CPUTIME_ID, clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns);
}

static NOINLINE void xs_in_load(uint64_t ns)
{
	spin(ns);
}

static NOINLINE void xs_in_load_until(uint64_t t)
{
	spin_until(CLOCK_MONOTONIC, t);
}

static NOINLINE void xs_in_step(uint64_t ns)
{
	spin(ns);
}

static NOINLINE void xs_in_step_until(uint64_t t)
{
	spin_until(CLOCK_MONOTONIC, t);
}

static NOINLINE void xs_in_kernel(uint64_t ns)
{
	spin(ns);
}

static NOINLINE void xs_in_kernel_until(uint64_t t)
{
	spin_until(CLOCK_MONOTONIC, t);
}

static NOINLINE void xs_in_tiny(uint64_t ns)
{
	spin(ns);
}

static NOINLINE void xs_in_io(uint64_t ns)
{
	spin(ns);
}

static NOINLINE void xs_in_small(uint64_t ns)
{
	spin(ns);
}

/* 1 ms in the handoff range, then the helper is asked to end it, and the worker waits in it
 * (burning CPU) until it has. */
static NOINLINE void xs_in_handoff(uint64_t ns)
{
	uint64_t one = 1;

	spin(ns);
	if (write(handoff_fd, &one, sizeof(one)) != sizeof(one))
		atomic_store(&handoff_ended, true); /* never ended: the shares say so */
	while (!atomic_load(&handoff_ended))
		spin(2 * US);
}

static void *helper(void *arg)
{
	uint64_t v;

	(void)arg;
	while (read(handoff_fd, &v, sizeof(v)) == sizeof(v)) {
		nvtxRangeEnd(atomic_load(&handoff_id));
		atomic_store(&handoff_ended, true);
	}
	return NULL;
}

static NOINLINE void xs_handoff(void)
{
	atomic_store(&handoff_ended, false);
	atomic_store(&handoff_id, nvtxRangeStartA("handoff"));
	switch_to(HANDOFF);
	xs_in_handoff(1000 * US);
	switch_to(NO_RANGE);
}

static NOINLINE void xs_cycle(bool handoff)
{
	push(LOAD);
	xs_in_load(3000 * US);
	pop(NO_RANGE);

	push(STEP);
	xs_in_step(1000 * US);
	push(KERNEL);
	xs_in_kernel(2000 * US);
	pop(STEP);
	for (int i = 0; i < 10; i++) {
		push(TINY);
		xs_in_tiny(50 * US);
		pop(STEP);
		xs_in_step(50 * US);
	}
	xs_in_step(1000 * US);
	pop(NO_RANGE);

	push(IO);
	xs_in_io(200 * US);
	for (int i = 0; i < 4; i++) {
		push(SMALL);
		xs_in_small(200 * US);
		pop(IO);
	}
	pop(NO_RANGE);

	if (handoff)
		xs_handoff();
	spin(500 * US);
}

/* One cycle of the fixed-rate loop, begun at t (CLOCK_MONOTONIC). */
static NOINLINE void xs_fixed_cycle(uint64_t t, uint64_t c)
{
	struct timespec next = {(time_t)((t + c) / 1000000000ull), (long)((t + c) % 1000000000ull)};

	push(LOAD);
	xs_in_load_until(t + c * 35 / 100);
	pop(NO_RANGE);
	push(STEP);
	xs_in_step_until(t + c * 47 / 100);
	push(KERNEL);
	xs_in_kernel_until(t + c * 67 / 100);
	pop(STEP);
	xs_in_step_until(t + c * 80 / 100);
	pop(NO_RANGE);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
}

static void *worker(void *arg)
{
	bool handoff = arg != NULL;
	uint64_t t = clock_ns(CLOCK_MONOTONIC);

	while (clock_ns(CLOCK_PROCESS_CPUTIME_ID) < cpu_target &&
	       clock_ns(CLOCK_MONOTONIC) < deadline) {
		if (fixed_cycle_ns) {
			xs_fixed_cycle(t, fixed_cycle_ns);
			t += fixed_cycle_ns;
		} else {
			xs_cycle(handoff);
		}
		cycles++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int workers = argc > 2 ? atoi(argv[2]) : 3;
	uint64_t cpu[NR_PHASES];
	pthread_t th[16], help;

	fixed_cycle_ns = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
	if (workers < 1 || workers > 16 || seconds <= 0 || (argc > 3 && fixed_cycle_ns < 1000000)) {
		fprintf(stderr,
			"usage: xs_nvtx_cycles CPU_SECONDS WORKERS (1 to 16) [CYCLE_NS (from "
			"1000000)]\n");
		return 2;
	}
	handoff_fd = eventfd(0, EFD_CLOEXEC);
	if (handoff_fd < 0 || pthread_create(&help, NULL, helper, NULL))
		return 1;
	cpu_target = (uint64_t)(seconds * 1e9);
	deadline = clock_ns(CLOCK_MONOTONIC) + 60 * 1000 * MS;
	for (int i = 1; i < workers; i++)
		if (pthread_create(&th[i], NULL, worker, NULL))
			return 1;
	worker(fixed_cycle_ns ? NULL : (void *)1);
	for (int i = 1; i < workers; i++)
		pthread_join(th[i], NULL);
	/* Worker 0 waited for its last handoff to end: the helper waits in read, cancelled. */
	pthread_cancel(help);
	pthread_join(help, NULL);
	for (int i = 0; i < NR_PHASES; i++)
		cpu[i] = phase_cpu[i];
	phases_print(phase_name, cpu, NR_PHASES);
	printf("cycles %llu\n", (unsigned long long)cycles);
	return 0;
}
