// SPDX-License-Identifier: Apache-2.0
/*
 * libxsprof_cupti_fake.so: the xsprof:launch USDT exactly as libxsprof_cupti.so defines it
 * (STAP_PROBE2(xsprof, launch, correlation id, domain << 16 | cbid) behind its semaphore),
 * fired from a callback called from inside an "API" function, as CUPTI calls the injection
 * library from inside the CUDA call: without CUDA, so the USDT path can be tested and measured
 * on a machine without a GPU.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <stdint.h>

#include "tests/workloads/fake_cupti.h"

/* Non-zero while a tracer is attached (the kernel counts uprobes with this ref_ctr). */
unsigned short xsprof_launch_semaphore __attribute__((unused)) __attribute__((section(".probes")));

static unsigned long fired;

/* libxsprof_cupti.so's API-enter callback: a leaf, so it keeps no frame. */
static void on_api(uint32_t corr_id, uint32_t api)
{
	if (__builtin_expect(*(volatile unsigned short *)&xsprof_launch_semaphore, 0)) {
		fired++;
		STAP_PROBE2(xsprof, launch, corr_id, api);
	}
}

/* CUPTI calls it through a pointer from inside the API call. */
static void (*volatile callback)(uint32_t, uint32_t) = on_api;

__attribute__((noinline)) void xs_fake_cuda_launch(uint32_t corr_id, uint32_t api)
{
	callback(corr_id, api);
}

unsigned long xs_fake_cupti_fired(void)
{
	return fired;
}
