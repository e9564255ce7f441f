// SPDX-License-Identifier: Apache-2.0
/*
 * libxsprof_cupti_fake.so: the xsprof:launch USDT exactly as libxsprof_cupti.so defines it
 * (cupti_inject/usdt.h: correlation id, domain << 16 | cbid, behind its semaphore, on a 5-byte
 * nop; built again with XSPROF_USDT_INT3 on sdt.h's 1-byte nop for the benchmark),
 * fired from a callback called from inside an "API" function, as CUPTI calls the injection
 * library from inside the CUDA call: without CUDA, so the USDT path can be tested and measured
 * on a machine without a GPU.
 */
#include <stdint.h>

#define XSPROF_USDT_DEFINE_SEMAPHORE
#include "cupti_inject/usdt.h"
#include "tests/workloads/fake_cupti.h"

static unsigned long fired;

/* libxsprof_cupti.so's API-enter callback: a leaf, so it keeps no frame. */
static void on_api(uint32_t corr_id, uint32_t api)
{
	if (XSPROF_USDT_LAUNCH_ENABLED()) {
		fired++;
		XSPROF_USDT_LAUNCH(corr_id, api);
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
