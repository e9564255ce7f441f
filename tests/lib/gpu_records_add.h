/* SPDX-License-Identifier: Apache-2.0 */
/* Tests: GPU records made by hand into a GPU record store. */
#ifndef XSPROF_TESTS_GPU_RECORDS_ADD_H
#define XSPROF_TESTS_GPU_RECORDS_ADD_H

#include <stdint.h>

#include "daemon/gpu/gpu_records.h"

/* An NVTX range of pid's thread tid (with XSPROF_WIRE_F_OPEN: its opening) into st: 0 or
 * gpu_store__add's error. */
static inline int test_add_nvtx(struct gpu_store *st, uint32_t pid, uint32_t tid, uint64_t start,
				uint64_t end, const char *name, uint16_t flags)
{
	struct gpu_activity a = {.kind = GPU_ACT_NVTX,
				 .pid = pid,
				 .tid = tid,
				 .start_ns = start,
				 .end_ns = end,
				 .name = name,
				 .flags = flags};

	return gpu_store__add(st, &a);
}

#endif
