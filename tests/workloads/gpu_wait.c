// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_wait N: waits for the "GPU" through a fake driver whose calls take a known time
 * (workloads/fake_cuda_wait.c), from known functions, N times each: xs_wait_stream calls
 * cuStreamSynchronize (30 ms), xs_wait_device cuCtxSynchronize (20 ms), xs_wait_copy
 * cuMemcpyDtoH_v2 (10 ms). Then it plays CUPTI and sends what the GPU ran meanwhile to the
 * daemon's CUPTI socket: during each stream wait, "xs_k_stream" on stream 7 (the one waited
 * for, 10 ms, named by a stream synchronization record) and "xs_k_other" on stream 9 (20 ms,
 * not waited for); during each device wait "xs_k_dev_a" on stream 7 (8 ms) and "xs_k_dev_b"
 * on stream 9 (8 ms); during each copy a DtoH copy of 8 ms. It prints each function's
 * measured time in microseconds ("xs_wait_stream 912345"). xs_gpu_wait N nested: only
 * xs_wait_nested, N calls of the fake runtime's cudaStreamSynchronize (30 ms each, through the
 * driver's cuStreamSynchronize inside), and no GPU work sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/cupti_wire_build.h"
#include "tests/workloads/fake_cuda.h"

#define NOINLINE __attribute__((noinline))
#define MS	 1000000ull
#define MAX_N	 64

static uint64_t t_stream[MAX_N][2], t_dev[MAX_N][2], t_copy[MAX_N][2], t_nested[MAX_N][2];

int cudaStreamSynchronize(void *stream); /* the fake runtime's, in libcuda_xswait.so */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

NOINLINE void xs_wait_stream(int n)
{
	for (int i = 0; i < n; i++) {
		t_stream[i][0] = mono_ns();
		cuStreamSynchronize((CUstream)0x5000);
		t_stream[i][1] = mono_ns();
	}
}

NOINLINE void xs_wait_device(int n)
{
	for (int i = 0; i < n; i++) {
		t_dev[i][0] = mono_ns();
		cuCtxSynchronize();
		t_dev[i][1] = mono_ns();
	}
}

NOINLINE void xs_wait_nested(int n)
{
	for (int i = 0; i < n; i++) {
		t_nested[i][0] = mono_ns();
		cudaStreamSynchronize((void *)0x5000);
		t_nested[i][1] = mono_ns();
	}
}

NOINLINE void xs_wait_copy(int n)
{
	static char buf[64];

	for (int i = 0; i < n; i++) {
		t_copy[i][0] = mono_ns();
		cuMemcpyDtoH_v2(buf, 0x1000, sizeof(buf));
		t_copy[i][1] = mono_ns();
	}
}

static size_t kernel(uint8_t *out, const char *name, uint64_t start, uint64_t end, uint32_t stream)
{
	size_t n = wb_kernel(out, name, start, end, 0);

	((struct xsprof_wire_kernel *)out)->stream = stream;
	return n;
}

static int send_all(const uint8_t *buf, size_t n)
{
	const char *path = getenv(XSPROF_WIRE_SOCKET_ENV);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path ? path : XSPROF_WIRE_DEFAULT_SOCKET);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror(a.sun_path);
		return 1;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w <= 0) {
			perror("write");
			return 1;
		}
		off += (size_t)w;
	}
	close(fd);
	return 0;
}

static int send_gpu_work(int n)
{
	static uint8_t buf[8 * MAX_N * XSPROF_WIRE_RECORD_MAX];
	size_t len = wb_hello(buf, (uint32_t)getpid());

	for (int i = 0; i < n; i++) {
		uint64_t s = t_stream[i][0], d = t_dev[i][0], c = t_copy[i][0];

		len += kernel(buf + len, "xs_k_stream", s + 5 * MS, s + 15 * MS, 7);
		len += kernel(buf + len, "xs_k_other", s + 5 * MS, s + 25 * MS, 9);
		len += wb_sync(buf + len, XSPROF_SYNC_STREAM, s + 1 * MS, t_stream[i][1] - MS);
		len += kernel(buf + len, "xs_k_dev_a", d + 2 * MS, d + 10 * MS, 7);
		len += kernel(buf + len, "xs_k_dev_b", d + 4 * MS, d + 12 * MS, 9);
		len += wb_memcpy(buf + len, XSPROF_COPY_DTOH, 64, c + 1 * MS, c + 9 * MS, 0);
	}
	return send_all(buf, len);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	uint64_t sum[3] = {0};

	if (n <= 0 || n > MAX_N)
		return 2;
	if (argc > 2 && !strcmp(argv[2], "nested")) {
		xs_wait_nested(n);
		for (int i = 0; i < n; i++)
			sum[0] += t_nested[i][1] - t_nested[i][0];
		printf("xs_wait_nested %llu\n", (unsigned long long)sum[0] / 1000);
		return 0;
	}
	xs_wait_stream(n);
	xs_wait_device(n);
	xs_wait_copy(n);
	for (int i = 0; i < n; i++) {
		sum[0] += t_stream[i][1] - t_stream[i][0];
		sum[1] += t_dev[i][1] - t_dev[i][0];
		sum[2] += t_copy[i][1] - t_copy[i][0];
	}
	printf("xs_wait_stream %llu\nxs_wait_device %llu\nxs_wait_copy %llu\n",
	       (unsigned long long)sum[0] / 1000, (unsigned long long)sum[1] / 1000,
	       (unsigned long long)sum[2] / 1000);
	fflush(stdout);
	return send_gpu_work(n);
}
