// SPDX-License-Identifier: Apache-2.0
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/lib/cupti_wire_build.h"
#include "tests/workloads/fake_cupti.h"
#include "tests/workloads/fake_gpu_send.h"
#include "tests/workloads/gpu_double.h"
#include <time.h>

#define US 1000ull

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#define LATENCY			(30 * US) /* launch to start, when the GPU is free */
#define MAX_WORK		20000
#define XS_CBID_cudaMemcpyAsync 41

struct work {
	bool copy;
	const char *name;
	uint64_t start, end, bytes;
	uint32_t corr;
};

static struct work work[MAX_WORK];
static size_t nr_work;
static uint32_t corr;
static uint64_t gpu_free; /* when the one stream is done with what it was given */
static int conn = -1;	  /* to the daemon, once anything was sent */
static size_t nr_sent;

/* Work up to upto (exclusive, in the order it ran) on the connection, the hello first. */
static int send_work(size_t upto)
{
	static uint8_t buf[1 << 20];
	bool first = conn < 0;
	int err = 0;

	if (conn < 0 && (conn = xs_fake_connect()) < 0)
		return 1;
	/* The hello, then the work in bufferfuls (one write of a few records with no work). */
	while (!err && (nr_sent < upto || first)) {
		size_t n = first ? wb_hello(buf, (uint32_t)getpid()) : 0;

		first = false;
		for (; nr_sent < upto && n + XSPROF_WIRE_RECORD_MAX <= sizeof(buf); nr_sent++) {
			const struct work *w = &work[nr_sent];

			if (w->copy) {
				n += wb_memcpy(buf + n, XSPROF_COPY_HTOD, w->bytes, w->start,
					       w->end, w->corr);
				((struct xsprof_wire_memcpy *)(buf + n -
							       sizeof(struct xsprof_wire_memcpy)))
					->src_kind = XSPROF_MEM_PAGEABLE;
			} else {
				n += wb_kernel(buf + n, w->name, w->start, w->end, w->corr);
			}
		}
		err = xs_fake_write_all(conn, buf, n);
	}
	return err;
}

/* With $XS_GPU_DOUBLE_STREAM set, the work that has ended goes to the daemon at each launch,
 * as CUPTI flushes its buffers while a program runs (the service's window joins each slice's
 * launches to the GPU records in by its end); else all of it at xs_double_send. */
static void stream_ended(uint64_t now)
{
	static int on = -1;
	size_t upto = nr_sent;

	if (on < 0)
		on = getenv("XS_GPU_DOUBLE_STREAM") != NULL;
	while (on && upto < nr_work && work[upto].end <= now)
		upto++;
	if (upto > nr_sent && send_work(upto))
		on = 0;
}

/* The time a launch called at t returned. A real GPU starts no work before its launch call
 * is made; the first call in a process can be held for a while (its probe's first hit, the
 * profiler pausing it for its unwind tables), so the work starts LATENCY after the return,
 * not after the call, or the GPU record could start before the launch the profiler saw. */
static uint64_t launched(uint64_t t)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	return now > t ? now : t;
}

/* Work of dur ns: it starts when launched and the stream is free. */
static uint64_t launch(const char *name, uint64_t dur, bool copy, uint64_t bytes)
{
	uint64_t t = clock_ns(CLOCK_MONOTONIC), start;

	stream_ended(t);
	xs_fake_cuda_launch(++corr, XS_CUPTI_RUNTIME(copy ? XS_CBID_cudaMemcpyAsync
							  : XS_CBID_cudaLaunchKernel));
	t = launched(t);
	start = t + LATENCY > gpu_free ? t + LATENCY : gpu_free;
	if (nr_work < MAX_WORK)
		work[nr_work++] = (struct work){copy, name, start, start + dur, bytes, corr};
	gpu_free = start + dur;
	return gpu_free;
}

uint64_t xs_double_kernel(const char *name, uint64_t dur_ns)
{
	return launch(name, dur_ns, false, 0);
}

uint64_t xs_double_collective(const char *name, uint64_t (*meet)(void *ctx, uint64_t arrive),
			      void *ctx)
{
	uint64_t t = clock_ns(CLOCK_MONOTONIC), start, end;

	stream_ended(t);
	xs_fake_cuda_launch(++corr, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel));
	t = launched(t);
	start = t + LATENCY > gpu_free ? t + LATENCY : gpu_free;
	end = meet(ctx, start);
	if (end < start)
		end = start;
	if (nr_work < MAX_WORK)
		work[nr_work++] = (struct work){false, name, start, end, 0, corr};
	gpu_free = end;
	return end;
}

uint64_t xs_double_free_at(void)
{
	return gpu_free;
}

uint64_t xs_double_copy(uint64_t bytes, uint64_t dur_ns)
{
	return launch("copy", dur_ns, true, bytes);
}

void xs_double_wait(void)
{
	while (clock_ns(CLOCK_MONOTONIC) < gpu_free)
		usleep(1000);
}

int xs_double_send(void)
{
	int err = send_work(nr_work);

	if (conn >= 0)
		close(conn);
	conn = -1;
	return err;
}

void xs_double_truth(void)
{
	uint64_t busy = 0, copies = 0, bytes = 0, kernels = 0;

	if (!nr_work) {
		printf("busy_ns 0\nidle_ns 0\nactive_ns 0\nkernels 0\ncopies 0\ncopy_bytes 0\n");
		return;
	}
	for (size_t i = 0; i < nr_work; i++) {
		busy += work[i].end - work[i].start; /* one stream: nothing overlaps */
		copies += work[i].copy;
		kernels += !work[i].copy;
		bytes += work[i].bytes;
	}
	printf("busy_ns %llu\nidle_ns %llu\nactive_ns %llu\nkernels %llu\ncopies %llu\n"
	       "copy_bytes %llu\n",
	       (unsigned long long)busy,
	       (unsigned long long)(work[nr_work - 1].end - work[0].start - busy),
	       (unsigned long long)(work[nr_work - 1].end - work[0].start),
	       (unsigned long long)kernels, (unsigned long long)copies, (unsigned long long)bytes);
	fflush(stdout);
}
