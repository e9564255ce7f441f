/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libxs_gpu_double.so: a GPU that runs what a program launches at times it chooses, for the
 * GPU report's workloads (C, and Python through ctypes). A launch fires the fake injection
 * library's xsprof:launch (a correlation id) and the work "runs" on one stream from 30 us after
 * its launch or when the stream is free; xs_double_send then plays CUPTI and sends every kernel
 * and copy to the daemon's CUPTI socket ($XSPROF_CUPTI_SOCKET or the default; with
 * $XS_GPU_DOUBLE_STREAM set, what has ended is sent at each launch already), and
 * xs_double_truth prints the figures the report must find.
 */
#ifndef XSPROF_TESTS_WORKLOADS_GPU_DOUBLE_H
#define XSPROF_TESTS_WORKLOADS_GPU_DOUBLE_H

#include <stdint.h>

/* A kernel of dur_ns; returns when it will end (CLOCK_MONOTONIC ns). name must outlive it. */
uint64_t xs_double_kernel(const char *name, uint64_t dur_ns);
/*
 * A collective (an NCCL kernel: name): launched like a kernel, it starts when the stream is
 * free, the rank's arrival, and ends when meet(ctx, arrival) says (the last rank's arrival and
 * its own time, as NCCL's kernels wait for their peers). Returns its end.
 */
uint64_t xs_double_collective(const char *name, uint64_t (*meet)(void *ctx, uint64_t arrive),
			      void *ctx);
/* When the stream will be free of what was launched (CLOCK_MONOTONIC ns). */
uint64_t xs_double_free_at(void);
/* An async HtoD copy of bytes from pageable memory, taking dur_ns. */
uint64_t xs_double_copy(uint64_t bytes, uint64_t dur_ns);
/* Wait until the last work is over (a real GPU reports work after it ran). */
void xs_double_wait(void);
/* "busy_ns B", "idle_ns I", "active_ns A", "kernels K", "copies C", "copy_bytes Y" on stdout. */
void xs_double_truth(void);
/* Send it all (what is left) to the daemon: 0, or 1 after saying why on stderr. */
int xs_double_send(void);

#endif
