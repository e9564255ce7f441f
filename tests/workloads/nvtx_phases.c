// SPDX-License-Identifier: Apache-2.0
/*
 * xs_nvtx_phases ITERATIONS [open]: nested NVTX phases of known CPU time, through the nvtx3
 * headers (the NVTX loader opens $NVTX_INJECTION64_PATH at the first call). Each iteration:
 *   data 100 ms | step { forward 200 ms (3 launches) | backward 400 ms | 100 ms of its own }
 * then, once: a range of domain "xs_domain" (50 ms), a start/end range ended on another thread,
 * a mark, a pop too many, and a range still open at exit. With "open", all of it runs inside a
 * range "run" that never ends (with 200 ms of its own, and no pop too many), and the program
 * prints "ready" and waits to be killed inside it. Prints the truth: each phase's CPU
 * time on the thread ("phase NAME NS"), the process's ("total NS"), and each range's own
 * times ("range NAME START END", CLOCK_MONOTONIC ns). The launches fire xsprof:launch (fake
 * injection library) and their kernels ("xs_kernel_fwd", 1 ms each) go to the CUPTI socket.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "tests/workloads/fake_cupti.h"
#include "tests/workloads/fake_gpu_send.h"
#include "tests/workloads/phases.h"

enum { DATA, STEP, FORWARD, BACKWARD, DOMAIN_IO, RUN, NR_PHASES };
static const char *const phase_name[] = {"data", "step", "forward", "backward", "io", "run"};
static uint64_t phase_cpu[NR_PHASES]; /* time innermost in each */

/* A phase's own CPU time, and the range's times as the program saw them. */
struct timed {
	uint64_t cpu0, t0;
};

static struct timed begin(const char *name)
{
	nvtxRangePushA(name);
	return (struct timed){clock_ns(CLOCK_THREAD_CPUTIME_ID), clock_ns(CLOCK_MONOTONIC)};
}

static void finish(struct timed t, const char *name)
{
	uint64_t t1 = clock_ns(CLOCK_MONOTONIC);

	nvtxRangePop();
	printf("range %s %llu %llu\n", name, (unsigned long long)t.t0, (unsigned long long)t1);
}

static uint32_t corr;
static struct xs_fake_kernel kernels[64];
static size_t nr_kernels;

static NOINLINE void xs_forward(void)
{
	uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	xs_burn(200 * MS);
	for (int i = 0; i < 3 && nr_kernels < 64; i++) {
		uint64_t t;

		xs_fake_cuda_launch(++corr, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel));
		/* It ran after its launch returned (a kernel before its launch joins nothing). */
		t = clock_ns(CLOCK_MONOTONIC);
		kernels[nr_kernels++] =
			(struct xs_fake_kernel){"xs_kernel_fwd", t + 10000, t + 10000 + MS, corr};
	}
	phase_cpu[FORWARD] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static NOINLINE void xs_backward(void)
{
	uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	xs_burn(400 * MS);
	phase_cpu[BACKWARD] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static NOINLINE void xs_step(void)
{
	struct timed s = begin("step"), f, b;
	uint64_t c0;

	f = begin("forward");
	xs_forward();
	finish(f, "forward");
	b = begin("backward");
	xs_backward();
	finish(b, "backward");
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	xs_burn(100 * MS);
	phase_cpu[STEP] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	finish(s, "step");
}

static NOINLINE void xs_data(void)
{
	struct timed d = begin("data");

	xs_burn(100 * MS);
	phase_cpu[DATA] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - d.cpu0;
	finish(d, "data");
}

static void *end_elsewhere(void *arg)
{
	nvtxRangeEnd(*(nvtxRangeId_t *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 3;
	nvtxDomainHandle_t dom = nvtxDomainCreateA("xs_domain");
	nvtxEventAttributes_t io = {
		.version = NVTX_VERSION,
		.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
		.messageType = NVTX_MESSAGE_TYPE_ASCII,
		.message.ascii = "io",
	};
	bool open = argc > 2 && !strcmp(argv[2], "open");
	nvtxRangeId_t cross;
	pthread_t th;
	uint64_t t0, t1, c0;

	if (open)
		nvtxRangePushA("run");
	for (int i = 0; i < iterations; i++) {
		xs_data();
		xs_step();
	}
	nvtxDomainRangePushEx(dom, &io);
	t0 = clock_ns(CLOCK_MONOTONIC);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	xs_burn(50 * MS);
	phase_cpu[DOMAIN_IO] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	t1 = clock_ns(CLOCK_MONOTONIC);
	nvtxDomainRangePop(dom);
	printf("range io %llu %llu\n", (unsigned long long)t0, (unsigned long long)t1);
	cross = nvtxRangeStartA("cross");
	if (pthread_create(&th, NULL, end_elsewhere, &cross) || pthread_join(th, NULL))
		return 1;
	nvtxMarkA("done");
	if (open) {
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		xs_burn(200 * MS);
		phase_cpu[RUN] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	} else {
		nvtxRangePop(); /* one too many: counted, harmless */
	}
	phases_print(phase_name, phase_cpu, NR_PHASES);
	printf("fired %lu of %u\n", xs_fake_cupti_fired(), corr);
	fflush(stdout);
	if (xs_fake_send_kernels(kernels, nr_kernels))
		return 1;
	if (open) {
		/* The library hands what it queued to the socket at a later call past 50 ms. */
		usleep(100 * 1000);
		nvtxMarkA("idle");
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause(); /* "run" ends with the process, killed */
	}
	nvtxRangePushA("open at exit");
	return 0;
}
