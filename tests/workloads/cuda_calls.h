/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A CUDA program's known call tree: every entry point xsprof probes is called a known number
 * of times from known functions (counts in tests/daemon/cuda/test_cuda_probes.c), through the real
 * libcudart.so.13 and a fake driver library (libcuda_xsfake.so; there is no libcuda here).
 * Every call passes the stream handle XS_STREAM(api), so a test can check that the probes read
 * each API's stream argument from the right place. Without a GPU every call fails at once:
 * the uprobes fire at entry all the same.
 */
#ifndef XSPROF_TESTS_WORKLOADS_CUDA_CALLS_H
#define XSPROF_TESTS_WORKLOADS_CUDA_CALLS_H

#include <stdint.h>

/* The stream handle passed to the API with that enum xsprof_cuda_api number. */
#define XS_STREAM(api) ((void *)(uintptr_t)(0x5000 + (api)))

/* What main does itself: setup, three training steps, copies, the rest, sync, the driver. */
void xs_cuda_main_calls(void);
/* A worker thread's share (call it from the thread). */
void xs_cuda_worker_calls(void);
/* A forked child's share (no exec). */
void xs_cuda_forked_calls(void);
/* An exec'd child's share. */
void xs_cuda_exec_calls(void);

#endif
