/* SPDX-License-Identifier: Apache-2.0 */
/* The fake injection library's entry points (fake_cupti.c). */
#ifndef XSPROF_TESTS_WORKLOADS_FAKE_CUPTI_H
#define XSPROF_TESTS_WORKLOADS_FAKE_CUPTI_H

#include <stdint.h>

/* The api argument as libxsprof_cupti packs it: CUPTI domain << 16 | callback id. */
#define XS_CUPTI_RUNTIME(cbid)	 ((2u << 16) | (cbid))
#define XS_CUPTI_DRIVER(cbid)	 ((1u << 16) | (cbid))
#define XS_CBID_cudaLaunchKernel 211
#define XS_CBID_cuLaunchKernel	 307

/* A launch API: fires xsprof:launch(corr_id, api) inside, if a tracer is attached. */
void xs_fake_cuda_launch(uint32_t corr_id, uint32_t api);
/* How many times it fired (the semaphore was set). */
unsigned long xs_fake_cupti_fired(void);

#endif
