// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_bound MODE N: a training loop whose GPU is held back in a known way, for the GPU
 * report (tests/gpu_report.sh). Launches go through the fake injection library's
 * xsprof:launch (correlation ids), and the process then plays CUPTI: it sends the daemon the
 * kernels and copies "the GPU ran", at times it chose from its own launch times, so the truth
 * is exact. Modes, N steps each:
 *   input    xs_train_step launches 4 kernels of 2 ms, then xs_make_batch computes the next
 *            batch for 25 ms of CPU: the GPU idles while the host is busy elsewhere
 *   launch   xs_launch_many launches N kernels of 5 us, preparing each one's arguments for
 *            20 us of CPU (xs_prepare_args): kernels shorter than their launch interval
 *   sync     xs_sync_step launches a 3 ms kernel and waits for it (cuStreamSynchronize),
 *            then xs_read_result spends 2 ms of CPU: the GPU idles after every sync
 *   pageable xs_copy_inputs copies 64 MiB from pageable memory (async, 10 ms), then a 5 ms
 *            kernel runs while the host sleeps 20 ms
 *   memory   (N ignored) GPU memory through cuMemAlloc_v2/cuMemFree_v2: xs_load_weights
 *            keeps 4 x 32 MiB, xs_grow_cache allocates 8 x 16 MiB, xs_temp_buffer 64 MiB
 *            and frees it (the peak: 320 MiB), xs_trim_cache frees 6 of the cache's blocks,
 *            xs_too_big asks for 8 GiB and fails; 160 MiB is left at exit (128 weights, 32
 *            cache). It prints "mem_peak B", "mem_end B", "mem_failed N".
 * It prints the truth over its GPU work: "busy_ns B", "idle_ns I", "active_ns A",
 * "kernels K", "copies C", "copy_bytes Y".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cupti_wire_build.h"
#include "tests/workloads/fake_cuda.h"
#include "tests/workloads/fake_cupti.h"
#include "tests/workloads/fake_gpu_send.h"
#include "tests/workloads/phases.h"

#define US			1000ull
#define LATENCY			(30 * US) /* launch to start, when the GPU is free */
#define MAX_WORK		20000
#define XS_CBID_cudaMemcpyAsync 41

void xs_bound_gpu_until(uint64_t mono_ns);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);

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

/* Launch a kernel (or an HtoD copy) of dur ns: it starts when launched and the stream is free. */
static uint64_t launch(const char *name, uint64_t dur, bool copy, uint64_t bytes)
{
	uint64_t t = clock_ns(CLOCK_MONOTONIC), start;

	xs_fake_cuda_launch(++corr, XS_CUPTI_RUNTIME(copy ? XS_CBID_cudaMemcpyAsync
							  : XS_CBID_cudaLaunchKernel));
	start = t + LATENCY > gpu_free ? t + LATENCY : gpu_free;
	if (nr_work < MAX_WORK)
		work[nr_work++] = (struct work){copy, name, start, start + dur, bytes, corr};
	gpu_free = start + dur;
	return gpu_free;
}

NOINLINE void xs_make_batch(void)
{
	xs_burn(25 * MS);
}

NOINLINE void xs_train_step(void)
{
	for (int k = 0; k < 4; k++)
		launch("xs_k_forward", 2 * MS, false, 0);
}

NOINLINE void xs_prepare_args(void)
{
	xs_burn(20 * US);
}

NOINLINE void xs_launch_many(int n)
{
	for (int i = 0; i < n; i++) {
		xs_prepare_args();
		launch("xs_k_tiny", 5 * US, false, 0);
	}
}

NOINLINE void xs_read_result(void)
{
	xs_burn(2 * MS);
}

NOINLINE void xs_sync_step(void)
{
	xs_bound_gpu_until(launch("xs_k_step", 3 * MS, false, 0));
	cuStreamSynchronize((CUstream)0x5000);
}

NOINLINE void xs_copy_inputs(void)
{
	launch("copy", 10 * MS, true, 64ull << 20);
}

#define MIB (1ull << 20)

static CUdeviceptr cache[8];

NOINLINE void xs_load_weights(void)
{
	CUdeviceptr p;

	for (int i = 0; i < 4; i++)
		cuMemAlloc_v2(&p, 32 * MIB);
}

NOINLINE void xs_grow_cache(void)
{
	for (int i = 0; i < 8; i++)
		cuMemAlloc_v2(&cache[i], 16 * MIB);
}

NOINLINE void xs_temp_buffer(void)
{
	CUdeviceptr p = 0;

	if (!cuMemAlloc_v2(&p, 64 * MIB))
		cuMemFree_v2(p);
}

NOINLINE void xs_trim_cache(void)
{
	for (int i = 0; i < 6; i++)
		cuMemFree_v2(cache[i]);
}

NOINLINE int xs_too_big(void)
{
	CUdeviceptr p;

	return cuMemAlloc_v2(&p, 8192 * MIB);
}

static void memory(void)
{
	xs_load_weights();
	xs_grow_cache();
	xs_temp_buffer();
	xs_trim_cache();
	printf("mem_peak %llu\nmem_end %llu\nmem_failed %d\n", 320 * MIB, 160 * MIB,
	       xs_too_big() != 0);
	fflush(stdout);
}

static int send_work(void)
{
	static uint8_t buf[1 << 20];
	const char *path = getenv(XSPROF_WIRE_SOCKET_ENV);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t i = 0;
	int fd;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path ? path : XSPROF_WIRE_DEFAULT_SOCKET);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror(a.sun_path);
		return 1;
	}
	while (i < nr_work || i == 0) {
		size_t n = i == 0 ? wb_hello(buf, (uint32_t)getpid()) : 0;

		for (; i < nr_work && n + XSPROF_WIRE_RECORD_MAX <= sizeof(buf); i++) {
			const struct work *w = &work[i];

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
		for (size_t off = 0; off < n;) {
			ssize_t k = write(fd, buf + off, n - off);

			if (k <= 0) {
				perror("write");
				close(fd);
				return 1;
			}
			off += (size_t)k;
		}
		if (!nr_work)
			break;
	}
	close(fd);
	return 0;
}

static void truth(void)
{
	uint64_t busy = 0, copies = 0, bytes = 0, kernels = 0;

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

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;

	if (n <= 0 || n > MAX_WORK / 4) {
		fprintf(stderr, "usage: xs_gpu_bound input|launch|sync|pageable|memory N (1..%d)\n",
			MAX_WORK / 4);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		if (!strcmp(mode, "input")) {
			xs_train_step();
			xs_make_batch();
		} else if (!strcmp(mode, "launch")) {
			xs_launch_many(n);
			break;
		} else if (!strcmp(mode, "sync")) {
			xs_sync_step();
			xs_read_result();
		} else if (!strcmp(mode, "memory")) {
			memory();
			return 0;
		} else if (!strcmp(mode, "pageable")) {
			xs_copy_inputs();
			launch("xs_k_train", 5 * MS, false, 0);
			usleep(20000);
		} else {
			fprintf(stderr, "xs_gpu_bound: unknown mode %s\n", mode);
			return 2;
		}
	}
	/* The last work must be over before it is "reported": a real GPU reports after it ran. */
	while (clock_ns(CLOCK_MONOTONIC) < gpu_free)
		usleep(1000);
	truth();
	return send_work();
}
