/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Builders for CUPTI pipe bytes, valid or deliberately not, shared by the CUPTI tests. Each
 * writes into a caller buffer of at least XSPROF_WIRE_RECORD_MAX bytes and returns the length.
 */
#ifndef XSPROF_TESTS_CUPTI_WIRE_BUILD_H
#define XSPROF_TESTS_CUPTI_WIRE_BUILD_H

#include <string.h>
#include <time.h>

#include "cupti_inject/xsprof_wire.h"

static inline size_t wb_hello(void *out, uint32_t pid)
{
	struct xsprof_wire_hello h = {
		.magic = XSPROF_WIRE_MAGIC,
		.version = XSPROF_WIRE_VERSION,
		.length = sizeof(h),
		.pid = pid,
		.clock_id = CLOCK_MONOTONIC,
	};

	memcpy(out, &h, sizeof(h));
	return sizeof(h);
}

static inline size_t wb_kernel(void *out, const char *name, uint64_t start, uint64_t end,
			       uint32_t corr)
{
	uint32_t name_len = name ? (uint32_t)strlen(name) + 1 : 0;
	uint32_t len = xsprof_wire_align((uint32_t)sizeof(struct xsprof_wire_kernel) + name_len);
	struct xsprof_wire_kernel k = {
		.hdr = {.type = XSPROF_WIRE_KERNEL, .version = 1, .length = len},
		.start = start,
		.end = end,
		.device = 0,
		.context = 1,
		.stream = 7,
		.correlation_id = corr,
		.grid = {4, 2, 1},
		.block = {256, 1, 1},
		.name_len = (uint16_t)name_len,
	};

	memset(out, 0, len);
	memcpy(out, &k, sizeof(k));
	if (name_len)
		memcpy((uint8_t *)out + sizeof(k), name, name_len);
	return len;
}

static inline size_t wb_memcpy(void *out, uint8_t copy_kind, uint64_t bytes, uint64_t start,
			       uint64_t end, uint32_t corr)
{
	struct xsprof_wire_memcpy m = {
		.hdr = {.type = XSPROF_WIRE_MEMCPY, .version = 1, .length = sizeof(m)},
		.start = start,
		.end = end,
		.bytes = bytes,
		.stream = 7,
		.correlation_id = corr,
		.src_device = XSPROF_WIRE_NO_DEVICE,
		.dst_device = XSPROF_WIRE_NO_DEVICE,
		.copy_kind = copy_kind,
		.src_kind = XSPROF_MEM_PINNED,
		.dst_kind = XSPROF_MEM_DEVICE,
		.flags = XSPROF_WIRE_F_ASYNC,
	};

	memcpy(out, &m, sizeof(m));
	return sizeof(m);
}

static inline size_t wb_memset(void *out, uint64_t bytes, uint64_t start, uint64_t end)
{
	struct xsprof_wire_memset m = {
		.hdr = {.type = XSPROF_WIRE_MEMSET, .version = 1, .length = sizeof(m)},
		.start = start,
		.end = end,
		.bytes = bytes,
		.mem_kind = XSPROF_MEM_DEVICE,
	};

	memcpy(out, &m, sizeof(m));
	return sizeof(m);
}

static inline size_t wb_api(void *out, uint8_t domain, uint32_t cbid, uint32_t tid, uint64_t start,
			    uint64_t end, uint32_t corr)
{
	struct xsprof_wire_api a = {
		.hdr = {.type = XSPROF_WIRE_API, .version = 1, .length = sizeof(a)},
		.start = start,
		.end = end,
		.tid = tid,
		.correlation_id = corr,
		.cbid = cbid,
		.domain = domain,
	};

	memcpy(out, &a, sizeof(a));
	return sizeof(a);
}

static inline size_t wb_sync(void *out, uint8_t type, uint64_t start, uint64_t end)
{
	struct xsprof_wire_sync s = {
		.hdr = {.type = XSPROF_WIRE_SYNC, .version = 1, .length = sizeof(s)},
		.start = start,
		.end = end,
		.stream = 7,
		.sync_type = type,
	};

	memcpy(out, &s, sizeof(s));
	return sizeof(s);
}

static inline size_t wb_nvtx(void *out, const char *name, const char *domain, uint64_t start,
			     uint64_t end, uint16_t flags)
{
	uint32_t nl = name ? (uint32_t)strlen(name) + 1 : 0;
	uint32_t dl = domain ? (uint32_t)strlen(domain) + 1 : 0;
	uint32_t len = xsprof_wire_align((uint32_t)sizeof(struct xsprof_wire_nvtx) + nl + dl);
	struct xsprof_wire_nvtx n = {
		.hdr = {.type = XSPROF_WIRE_NVTX, .version = 1, .length = len},
		.start = start,
		.end = end,
		.id = 5,
		.tid = 99,
		.name_len = (uint16_t)nl,
		.domain_len = (uint16_t)dl,
		.flags = flags,
	};

	memset(out, 0, len);
	memcpy(out, &n, sizeof(n));
	if (nl)
		memcpy((uint8_t *)out + sizeof(n), name, nl);
	if (dl)
		memcpy((uint8_t *)out + sizeof(n) + nl, domain, dl);
	return len;
}

static inline size_t wb_graph(void *out, uint32_t graph_id, uint64_t start, uint64_t end)
{
	struct xsprof_wire_graph g = {
		.hdr = {.type = XSPROF_WIRE_GRAPH, .version = 1, .length = sizeof(g)},
		.start = start,
		.end = end,
		.stream = 7,
		.correlation_id = 77,
		.graph_id = graph_id,
	};

	memcpy(out, &g, sizeof(g));
	return sizeof(g);
}

static inline size_t wb_stats(void *out, uint64_t dropped_full, uint64_t dropped_cupti)
{
	struct xsprof_wire_stats s = {
		.hdr = {.type = XSPROF_WIRE_STATS, .version = 1, .length = sizeof(s)},
		.dropped_full = dropped_full,
		.dropped_cupti = dropped_cupti,
		.connects = 1,
	};

	memcpy(out, &s, sizeof(s));
	return sizeof(s);
}

#endif
