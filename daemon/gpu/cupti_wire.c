// SPDX-License-Identifier: Apache-2.0
#include "daemon/gpu/cupti_wire.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "cupti_inject/xsprof_wire.h"

#define FAIL(err, why)                    \
	do {                              \
		if (ret_why)              \
			*ret_why = (why); \
		return -(err);            \
	} while (0)

long cupti_wire__parse_hello(const void *buf, size_t len, struct cupti_wire_hello *ret,
			     const char **ret_why)
{
	struct xsprof_wire_hello h;

	/* Judge each field as soon as it has arrived: a stranger is turned away at once. */
	if (len >= 4) {
		uint32_t magic;

		memcpy(&magic, buf, sizeof(magic));
		if (magic != XSPROF_WIRE_MAGIC)
			FAIL(EPROTO, "hello: bad magic (not an xsprof CUPTI client)");
	}
	if (len >= 6) {
		uint16_t version;

		memcpy(&version, (const uint8_t *)buf + 4, sizeof(version));
		if (version != XSPROF_WIRE_VERSION)
			FAIL(EPROTO, "hello: unsupported protocol version");
	}
	if (len < sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	if (h.length != sizeof(h))
		FAIL(EPROTO, "hello: bad length");
	if (h.clock_id != CLOCK_MONOTONIC && h.clock_id != CLOCK_REALTIME)
		FAIL(EPROTO, "hello: unsupported clock");
	if (h.policy >= XSPROF_WIRE_POLICY_END)
		FAIL(EPROTO, "hello: unknown policy");
	ret->version = h.version;
	ret->pid = h.pid;
	ret->clock_id = h.clock_id;
	ret->cupti_version = h.cupti_version;
	ret->policy = h.policy;
	return sizeof(h);
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		if (b[i])
			return false;
	}
	return true;
}

/* A string field: 0 = absent, else NUL-terminated with no NUL inside. */
static bool string_ok(const uint8_t *s, uint32_t len)
{
	if (!len)
		return true;
	if (len > XSPROF_WIRE_NAME_MAX || s[len - 1] != '\0')
		return false;
	return !memchr(s, '\0', len - 1);
}

static const char *string_at(const uint8_t *s, uint32_t len)
{
	return len ? (const char *)s : NULL;
}

/* Exact framing: the fixed part, the strings, then zero padding to the next 8 bytes. */
static bool framed(const uint8_t *rec, uint32_t length, size_t fixed, uint32_t strings)
{
	size_t used = fixed + strings;

	if (xsprof_wire_align((uint32_t)used) != length)
		return false;
	return all_zero(rec + used, length - used);
}

#define CHECK(cond, why)                    \
	do {                                \
		if (!(cond))                \
			FAIL(EBADMSG, why); \
	} while (0)

/* The work fields (XSPROF_WIRE_WORK_FIELDS) of the wire record w into the activity a. */
#define ACT_FROM_WIRE(a, w, wire, cupti, act) (a)->act = (w).wire;
#define GET_WORK(a, w)			      XSPROF_WIRE_WORK_FIELDS(ACT_FROM_WIRE, a, w)

static long parse_kernel(const uint8_t *p, uint32_t length, struct gpu_activity *a,
			 const char **ret_why)
{
	struct xsprof_wire_kernel k;

	CHECK(length >= sizeof(k), "kernel: short");
	memcpy(&k, p, sizeof(k));
	CHECK(k.name_len <= XSPROF_WIRE_NAME_MAX, "kernel: name too long");
	CHECK(framed(p, length, sizeof(k), k.name_len), "kernel: length disagrees with name");
	CHECK(string_ok(p + sizeof(k), k.name_len), "kernel: name not terminated");
	CHECK(k.start <= k.end, "kernel: end before start");
	CHECK(!(k.flags & ~(XSPROF_WIRE_F_NAME_TRUNC | XSPROF_WIRE_F_DEVICE_LAUNCH)),
	      "kernel: unknown flags");
	CHECK(!k.reserved, "kernel: reserved field set");
	for (int i = 0; i < 3; i++) {
		CHECK(k.grid[i] >= 0, "kernel: negative grid");
		CHECK(k.block[i] >= 0 && k.block[i] <= 1024, "kernel: block out of range");
	}
	a->kind = GPU_ACT_KERNEL;
	a->flags = k.flags;
	GET_WORK(a, k);
	a->graph_node_id = k.graph_node_id;
	memcpy(a->grid, k.grid, sizeof(a->grid));
	memcpy(a->block, k.block, sizeof(a->block));
	a->name = string_at(p + sizeof(k), k.name_len);
	return length;
}

static long parse_memcpy(const uint8_t *p, uint32_t length, struct gpu_activity *a,
			 const char **ret_why)
{
	struct xsprof_wire_memcpy m;

	CHECK(length == sizeof(m), "memcpy: bad length");
	memcpy(&m, p, sizeof(m));
	CHECK(m.start <= m.end, "memcpy: end before start");
	CHECK(m.bytes <= XSPROF_WIRE_MAX_BYTES, "memcpy: size beyond cap");
	CHECK(m.copy_kind < XSPROF_COPY_KIND_END, "memcpy: bad copy kind");
	CHECK(m.src_kind < XSPROF_MEM_KIND_END && m.dst_kind < XSPROF_MEM_KIND_END,
	      "memcpy: bad memory kind");
	CHECK(!(m.flags & ~(XSPROF_WIRE_F_ASYNC | XSPROF_WIRE_F_DEVICE_LAUNCH)),
	      "memcpy: unknown flags");
	CHECK(!m.reserved, "memcpy: reserved field set");
	a->kind = GPU_ACT_MEMCPY;
	a->flags = m.flags;
	a->copy_kind = m.copy_kind;
	a->src_kind = m.src_kind;
	a->dst_kind = m.dst_kind;
	GET_WORK(a, m);
	a->runtime_correlation_id = m.runtime_correlation_id;
	a->graph_node_id = m.graph_node_id;
	a->bytes = m.bytes;
	return length;
}

static long parse_memset(const uint8_t *p, uint32_t length, struct gpu_activity *a,
			 const char **ret_why)
{
	struct xsprof_wire_memset m;

	CHECK(length == sizeof(m), "memset: bad length");
	memcpy(&m, p, sizeof(m));
	CHECK(m.start <= m.end, "memset: end before start");
	CHECK(m.bytes <= XSPROF_WIRE_MAX_BYTES, "memset: size beyond cap");
	CHECK(m.mem_kind < XSPROF_MEM_KIND_END, "memset: bad memory kind");
	CHECK(!(m.flags & ~(XSPROF_WIRE_F_ASYNC | XSPROF_WIRE_F_DEVICE_LAUNCH)),
	      "memset: unknown flags");
	CHECK(!m.reserved0 && !m.reserved1, "memset: reserved field set");
	a->kind = GPU_ACT_MEMSET;
	a->flags = m.flags;
	a->src_kind = m.mem_kind;
	GET_WORK(a, m);
	a->graph_node_id = m.graph_node_id;
	a->bytes = m.bytes;
	return length;
}

static long parse_api(const uint8_t *p, uint32_t length, struct gpu_activity *a,
		      const char **ret_why)
{
	struct xsprof_wire_api m;

	CHECK(length == sizeof(m), "api: bad length");
	memcpy(&m, p, sizeof(m));
	CHECK(m.start <= m.end, "api: end before start");
	CHECK(m.domain == XSPROF_API_DRIVER || m.domain == XSPROF_API_RUNTIME, "api: bad domain");
	CHECK(m.cbid <= 0xffff, "api: cbid out of range");
	CHECK(all_zero(m.reserved, sizeof(m.reserved)), "api: reserved field set");
	a->kind = GPU_ACT_API;
	a->api_domain = m.domain;
	a->api_cbid = m.cbid;
	a->tid = m.tid;
	a->correlation_id = m.correlation_id;
	a->start_ns = m.start;
	a->end_ns = m.end;
	return length;
}

static long parse_sync(const uint8_t *p, uint32_t length, struct gpu_activity *a,
		       const char **ret_why)
{
	struct xsprof_wire_sync m;

	CHECK(length == sizeof(m), "sync: bad length");
	memcpy(&m, p, sizeof(m));
	CHECK(m.start <= m.end, "sync: end before start");
	CHECK(m.sync_type < XSPROF_SYNC_TYPE_END, "sync: bad type");
	CHECK(all_zero(m.reserved, sizeof(m.reserved)), "sync: reserved field set");
	a->kind = GPU_ACT_SYNC;
	a->sync_type = m.sync_type;
	a->context = m.context;
	a->stream = m.stream;
	a->correlation_id = m.correlation_id;
	a->start_ns = m.start;
	a->end_ns = m.end;
	return length;
}

static long parse_nvtx(const uint8_t *p, uint32_t length, struct gpu_activity *a,
		       const char **ret_why)
{
	struct xsprof_wire_nvtx m;

	CHECK(length >= sizeof(m), "nvtx: short");
	memcpy(&m, p, sizeof(m));
	CHECK(m.name_len <= XSPROF_WIRE_NAME_MAX && m.domain_len <= XSPROF_WIRE_NAME_MAX,
	      "nvtx: string too long");
	CHECK(framed(p, length, sizeof(m), (uint32_t)m.name_len + m.domain_len),
	      "nvtx: length disagrees with strings");
	CHECK(string_ok(p + sizeof(m), m.name_len), "nvtx: name not terminated");
	CHECK(string_ok(p + sizeof(m) + m.name_len, m.domain_len), "nvtx: domain not terminated");
	CHECK(m.start <= m.end, "nvtx: end before start");
	CHECK(!(m.flags & ~(XSPROF_WIRE_F_INSTANT | XSPROF_WIRE_F_NAME_TRUNC | XSPROF_WIRE_F_OPEN)),
	      "nvtx: unknown flags");
	CHECK(!(m.flags & XSPROF_WIRE_F_INSTANT) || m.start == m.end, "nvtx: mark with a length");
	CHECK(!(m.flags & XSPROF_WIRE_F_OPEN) || m.start == m.end, "nvtx: opening with a length");
	CHECK(!(m.flags & XSPROF_WIRE_F_OPEN) || !(m.flags & XSPROF_WIRE_F_INSTANT),
	      "nvtx: a mark cannot be open");
	CHECK(!m.reserved, "nvtx: reserved field set");
	a->kind = GPU_ACT_NVTX;
	a->flags = m.flags;
	a->nvtx_id = m.id;
	a->tid = m.tid;
	a->start_ns = m.start;
	a->end_ns = m.end;
	a->name = string_at(p + sizeof(m), m.name_len);
	a->domain = string_at(p + sizeof(m) + m.name_len, m.domain_len);
	return length;
}

static long parse_graph(const uint8_t *p, uint32_t length, struct gpu_activity *a,
			const char **ret_why)
{
	struct xsprof_wire_graph m;

	CHECK(length == sizeof(m), "graph: bad length");
	memcpy(&m, p, sizeof(m));
	CHECK(m.start <= m.end, "graph: end before start");
	a->kind = GPU_ACT_GRAPH;
	GET_WORK(a, m);
	return length;
}

long cupti_wire__parse_record(const void *buf, size_t len, struct cupti_wire_item *ret,
			      const char **ret_why)
{
	const uint8_t *p = buf;
	struct xsprof_wire_hdr h;
	struct cupti_wire_item item;
	long n;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, p, sizeof(h));
	/* Framing first: a lying length must never make us wait for, or read, what is not there. */
	if (h.length > XSPROF_WIRE_RECORD_MAX)
		FAIL(EMSGSIZE, "record: length beyond the largest record");
	CHECK(h.length >= sizeof(h) && h.length % XSPROF_WIRE_ALIGN == 0, "record: bad length");
	CHECK(h.type >= XSPROF_WIRE_KERNEL && h.type < XSPROF_WIRE_TYPE_END, "record: bad type");
	CHECK(h.version == 1, "record: unsupported version");
	if (len < h.length)
		return 0;

	/* Cleared in parts: a clear of 64 bytes the compiler unrolls into a few stores, where
	 * one of the whole item became a string instruction that cost a fifth of parsing. */
	_Static_assert(sizeof(item.act) > 128 && sizeof(item.act) <= 192, "cleared in 3 parts");
	memset(&item.act, 0, 64);
	memset((char *)&item.act + 64, 0, 64);
	memset((char *)&item.act + 128, 0, sizeof(item.act) - 128);
	item.type = h.type;
	item.dropped_full = item.dropped_cupti = item.dropped_other = item.connects = 0;
	switch (h.type) {
	case XSPROF_WIRE_KERNEL:
		n = parse_kernel(p, h.length, &item.act, ret_why);
		break;
	case XSPROF_WIRE_MEMCPY:
		n = parse_memcpy(p, h.length, &item.act, ret_why);
		break;
	case XSPROF_WIRE_MEMSET:
		n = parse_memset(p, h.length, &item.act, ret_why);
		break;
	case XSPROF_WIRE_API:
		n = parse_api(p, h.length, &item.act, ret_why);
		break;
	case XSPROF_WIRE_SYNC:
		n = parse_sync(p, h.length, &item.act, ret_why);
		break;
	case XSPROF_WIRE_NVTX:
		n = parse_nvtx(p, h.length, &item.act, ret_why);
		break;
	case XSPROF_WIRE_GRAPH:
		n = parse_graph(p, h.length, &item.act, ret_why);
		break;
	default: { /* XSPROF_WIRE_STATS */
		struct xsprof_wire_stats s;

		CHECK(h.length == sizeof(s), "stats: bad length");
		memcpy(&s, p, sizeof(s));
		item.dropped_full = s.dropped_full;
		item.dropped_cupti = s.dropped_cupti;
		item.dropped_other = s.dropped_other;
		item.connects = s.connects;
		n = h.length;
		break;
	}
	}
	if (n > 0)
		*ret = item;
	return n;
}
