// SPDX-License-Identifier: Apache-2.0
/*
 * xs_itt_phases ITERATIONS: xs_nvtx_phases' phases as ITT tasks, through the ITT static part's
 * protocol (itt_stub.h: the collector is $INTEL_LIBITTNOTIFY64). Each iteration, in domain
 * "xs_itt":
 *   data 100 ms | step { forward 200 ms (3 launches) | backward 400 ms | 100 ms of its own }
 * then, once: a task "io" of domain "xs_domain" (50 ms), a frame (ended at once), an overlapped
 * task "cross" ended on another thread, which names itself "xs-itt-worker" (and prints the
 * name the kernel gives it) and burns 50 ms, and a marker "done". Prints the truth as xs_nvtx_phases does ("phase NAME NS", "total NS",
 * "range NAME START END") and "collector yes|no". The launches fire xsprof:launch (fake
 * injection library) and their kernels ("xs_kernel_fwd", 1 ms each) go to the CUPTI socket.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/workloads/fake_cupti.h"
#include "tests/workloads/fake_gpu_send.h"
#include "tests/workloads/itt_stub.h"
#include "tests/workloads/phases.h"

enum { DATA, STEP, FORWARD, BACKWARD, DOMAIN_IO, WORKER, NR_PHASES };
static const char *const phase_name[] = {"data", "step", "forward", "backward", "io", "worker"};
static uint64_t phase_cpu[NR_PHASES];

static struct xs_itt_domain *dom;
static struct xs_itt_string_handle *names[NR_PHASES];

struct timed {
	uint64_t cpu0, t0;
};

static struct timed begin(int phase)
{
	xs_itt_task_begin(dom, names[phase]);
	return (struct timed){clock_ns(CLOCK_THREAD_CPUTIME_ID), clock_ns(CLOCK_MONOTONIC)};
}

static void finish(struct timed t, int phase)
{
	uint64_t t1 = clock_ns(CLOCK_MONOTONIC);

	xs_itt_task_end(dom);
	printf("range %s %llu %llu\n", phase_name[phase], (unsigned long long)t.t0,
	       (unsigned long long)t1);
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
	struct timed s = begin(STEP), f, b;
	uint64_t c0;

	f = begin(FORWARD);
	xs_forward();
	finish(f, FORWARD);
	b = begin(BACKWARD);
	xs_backward();
	finish(b, BACKWARD);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	xs_burn(100 * MS);
	phase_cpu[STEP] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	finish(s, STEP);
}

static NOINLINE void xs_data(void)
{
	struct timed d = begin(DATA);

	xs_burn(100 * MS);
	phase_cpu[DATA] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - d.cpu0;
	finish(d, DATA);
}

static const struct xs_itt_id cross_id = {7, 0, 0};

/* Names itself (and prints the name the kernel has for it: "worker comm NAME"), burns 50 ms,
 * and ends the overlapped task "cross" the main thread began. */
static void *worker(void *arg)
{
	char comm[32] = "";
	uint64_t c0;

	(void)arg;
	if (xs_itt.thread_set_name)
		xs_itt.thread_set_name("xs-itt-worker");
	pthread_getname_np(pthread_self(), comm, sizeof(comm));
	printf("worker comm %s\n", comm);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	xs_burn(50 * MS);
	phase_cpu[WORKER] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	if (dom && dom->flags && xs_itt.task_end_overlapped)
		xs_itt.task_end_overlapped(dom, cross_id);
	return NULL;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 3, collector = xs_itt_load();
	struct xs_itt_domain *io_dom;
	struct xs_itt_id frame = {1, 0, 0};
	uint64_t t0, t1, c0;
	pthread_t th;

	dom = xs_itt.domain_create ? xs_itt.domain_create("xs_itt") : NULL;
	io_dom = xs_itt.domain_create ? xs_itt.domain_create("xs_domain") : NULL;
	for (int i = 0; i < NR_PHASES && xs_itt.string_handle_create; i++)
		names[i] = xs_itt.string_handle_create(phase_name[i]);
	for (int i = 0; i < iterations; i++) {
		xs_data();
		xs_step();
	}
	xs_itt_task_begin(io_dom, names[DOMAIN_IO]);
	t0 = clock_ns(CLOCK_MONOTONIC);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	xs_burn(50 * MS);
	phase_cpu[DOMAIN_IO] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	t1 = clock_ns(CLOCK_MONOTONIC);
	xs_itt_task_end(io_dom);
	printf("range io %llu %llu\n", (unsigned long long)t0, (unsigned long long)t1);
	if (dom && dom->flags && xs_itt.frame_begin_v3 && xs_itt.frame_end_v3) {
		xs_itt.frame_begin_v3(dom, &frame);
		xs_itt.frame_end_v3(dom, &frame);
	}
	if (dom && dom->flags && xs_itt.task_begin_overlapped)
		xs_itt.task_begin_overlapped(dom, cross_id, xs_itt_null,
					     xs_itt.string_handle_create("cross"));
	if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, NULL))
		return 1;
	if (dom && dom->flags && xs_itt.marker)
		xs_itt.marker(dom, xs_itt_null, xs_itt.string_handle_create("done"), 0);
	phases_print(phase_name, phase_cpu, NR_PHASES);
	printf("fired %lu of %u\ncollector %s\n", xs_fake_cupti_fired(), corr,
	       collector ? "yes" : "no");
	fflush(stdout);
	return xs_fake_send_kernels(kernels, nr_kernels) ? 1 : 0;
}
