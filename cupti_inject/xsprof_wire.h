/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUPTI pipe: what libxsprof_cupti.so sends to xsprofd over a Unix stream socket.
 * This header is the only definition of the format; both sides include it.
 *
 * A connection carries one struct xsprof_wire_hello, then records. Every record starts with
 * struct xsprof_wire_hdr; hdr.length counts the whole record (header, fixed part, trailing
 * strings and zero padding) and is a multiple of XSPROF_WIRE_ALIGN, so a reader can frame the
 * stream without knowing the type. Integers are little-endian, records never carry pointers,
 * strings are NUL-terminated, their stated length includes the NUL, and reserved fields and
 * padding are zero. A receiver drops a connection that breaks any of these rules.
 *
 * Compatibility: a change to any struct bumps its record version; a change a v1 reader cannot
 * skip (new framing, new mandatory type) bumps XSPROF_WIRE_VERSION in the hello. A new flag
 * value (XSPROF_WIRE_F_OPEN) is an addition: xsprofd reads senders with or without it; an
 * xsprofd older than the flag closes the connection at its first open record (the library and
 * xsprofd ship together).
 */
#ifndef XSPROF_CUPTI_INJECT_XSPROF_WIRE_H
#define XSPROF_CUPTI_INJECT_XSPROF_WIRE_H

#include <stdint.h>

/* The structs are the byte layout; big-endian hosts would need byte swaps on both sides. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xsprof_wire.h: the CUPTI pipe is little-endian; add byte swaps before porting"
#endif

#define XSPROF_WIRE_MAGIC	   0x31505358u /* the bytes "XSP1" */
#define XSPROF_WIRE_VERSION	   1
#define XSPROF_WIRE_ALIGN	   8
#define XSPROF_WIRE_DEFAULT_SOCKET "/run/xsprof/cupti.sock"
#define XSPROF_WIRE_SOCKET_ENV	   "XSPROF_CUPTI_SOCKET"

/* Longest string the sender emits (NUL included); longer kernel names are cut and flagged. */
#define XSPROF_WIRE_NAME_MAX 4096
/* A memcpy or memset size beyond this (16 TiB) is not a real transfer. */
#define XSPROF_WIRE_MAX_BYTES (1ull << 44)

struct xsprof_wire_hello {
	uint32_t magic;	   /* XSPROF_WIRE_MAGIC */
	uint16_t version;  /* XSPROF_WIRE_VERSION */
	uint16_t length;   /* sizeof(struct xsprof_wire_hello) */
	uint32_t pid;	   /* sender's own view; the daemon trusts SO_PEERCRED instead */
	uint32_t clock_id; /* CLOCK_MONOTONIC (1), or CLOCK_REALTIME (0) if CUPTI kept its clock */
	uint32_t cupti_version; /* cuptiGetVersion(), 0 when unknown */
	uint32_t policy;	/* enum xsprof_wire_policy: what the sender records */
};
_Static_assert(sizeof(struct xsprof_wire_hello) == 24, "hello layout");

/*
 * The sender's GPU timing policy (XSPROF_CUPTI_POLICY, cupti_inject/README.md): which CUPTI
 * activity it records, so the daemon knows what it will not get. 0 is a sender from before the
 * field (it was reserved, always 0), which recorded what FULL records.
 */
enum xsprof_wire_policy {
	XSPROF_WIRE_POLICY_UNSAID = 0,
	XSPROF_WIRE_POLICY_LAUNCH = 1,	/* launch callbacks (xsprof:launch) only, no activity */
	XSPROF_WIRE_POLICY_KERNELS = 2, /* kernels, copies and memsets */
	XSPROF_WIRE_POLICY_FULL = 3,	/* + the launch calls' API records, synchronization */
	XSPROF_WIRE_POLICY_ALL = 4,	/* + an API record of every runtime and driver call */
	XSPROF_WIRE_POLICY_RANGES = 5,	/* ranges only, no CUDA: the ITT collector */
	XSPROF_WIRE_POLICY_END,
};

/* The policy's name, as XSPROF_CUPTI_POLICY spells it ("unsaid" for 0). */
static inline const char *xsprof_wire_policy_name(unsigned p)
{
	static const char *const names[] = {"unsaid", "launch", "kernels", "full", "all", "ranges"};

	return p < XSPROF_WIRE_POLICY_END ? names[p] : "?";
}

enum xsprof_wire_type {
	XSPROF_WIRE_KERNEL = 1,
	XSPROF_WIRE_MEMCPY = 2,
	XSPROF_WIRE_MEMSET = 3,
	XSPROF_WIRE_API = 4,
	XSPROF_WIRE_SYNC = 5,
	XSPROF_WIRE_NVTX = 6,
	XSPROF_WIRE_GRAPH = 7,
	XSPROF_WIRE_STATS = 8,
	XSPROF_WIRE_TYPE_END,
};

struct xsprof_wire_hdr {
	uint16_t type;	  /* enum xsprof_wire_type */
	uint16_t version; /* 1 for every type today */
	uint32_t length;  /* whole record, a multiple of XSPROF_WIRE_ALIGN */
};
_Static_assert(sizeof(struct xsprof_wire_hdr) == 8, "hdr layout");

/* hdr-level flags shared by several record types. */
#define XSPROF_WIRE_F_ASYNC	    0x1 /* memcpy/memset: the async variant of the API */
#define XSPROF_WIRE_F_NAME_TRUNC    0x2 /* kernel/nvtx: the name was cut at XSPROF_WIRE_NAME_MAX */
#define XSPROF_WIRE_F_INSTANT	    0x4 /* nvtx: a mark, not a range (start == end) */
#define XSPROF_WIRE_F_DEVICE_LAUNCH 0x8 /* kernel/memcpy/memset: launched from the device */
/* nvtx: a range opened (push or start) and not ended yet, sent while a daemon listens:
 * end == start. When it ends, the range itself follows with the same tid, id and start. */
#define XSPROF_WIRE_F_OPEN 0x10

/*
 * Where and when a piece of GPU work ran: the fields every work record (kernel, memcpy, memset,
 * graph) has, described once: X(dst, src, wire field, CUPTI activity field, the daemon's
 * gpu_activity field) for each. The encoder (cupti_inject/encode.c) copies CUPTI's into the
 * wire's and the parser (daemon/gpu/cupti_wire.c) the wire's into the daemon's by this list.
 */
#define XSPROF_WIRE_WORK_FIELDS(X, dst, src)                       \
	X(dst, src, start, start, start_ns)                        \
	X(dst, src, end, end, end_ns)                              \
	X(dst, src, device, deviceId, device)                      \
	X(dst, src, context, contextId, context)                   \
	X(dst, src, stream, streamId, stream)                      \
	X(dst, src, correlation_id, correlationId, correlation_id) \
	X(dst, src, graph_id, graphId, graph_id)

/* GPU timestamps of 0 mean CUPTI could not collect them; otherwise start <= end. */
struct xsprof_wire_kernel {
	struct xsprof_wire_hdr hdr;
	uint64_t start;
	uint64_t end;
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t correlation_id;
	int32_t grid[3];
	int32_t block[3];
	uint32_t graph_id; /* 0 unless launched as a graph node */
	uint32_t registers_per_thread;
	uint64_t graph_node_id;
	uint32_t static_smem;
	uint32_t dynamic_smem;
	uint16_t name_len; /* bytes of the name after this struct, NUL included; 0 = no name */
	uint16_t flags;	   /* XSPROF_WIRE_F_* */
	uint32_t reserved;
	/* char name[name_len]; zero padding to XSPROF_WIRE_ALIGN */
};
_Static_assert(sizeof(struct xsprof_wire_kernel) == 96, "kernel layout");

/* CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind values, kept stable here. */
enum xsprof_wire_copy_kind {
	XSPROF_COPY_UNKNOWN = 0,
	XSPROF_COPY_HTOD = 1,
	XSPROF_COPY_DTOH = 2,
	XSPROF_COPY_HTOA = 3,
	XSPROF_COPY_ATOH = 4,
	XSPROF_COPY_ATOA = 5,
	XSPROF_COPY_ATOD = 6,
	XSPROF_COPY_DTOA = 7,
	XSPROF_COPY_DTOD = 8,
	XSPROF_COPY_HTOH = 9,
	XSPROF_COPY_PTOP = 10,
	XSPROF_COPY_KIND_END,
};

enum xsprof_wire_mem_kind {
	XSPROF_MEM_UNKNOWN = 0,
	XSPROF_MEM_PAGEABLE = 1,
	XSPROF_MEM_PINNED = 2,
	XSPROF_MEM_DEVICE = 3,
	XSPROF_MEM_ARRAY = 4,
	XSPROF_MEM_MANAGED = 5,
	XSPROF_MEM_DEVICE_STATIC = 6,
	XSPROF_MEM_MANAGED_STATIC = 7,
	XSPROF_MEM_KIND_END,
};

#define XSPROF_WIRE_NO_DEVICE 0xffffffffu

struct xsprof_wire_memcpy {
	struct xsprof_wire_hdr hdr;
	uint64_t start;
	uint64_t end;
	uint64_t bytes;
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t correlation_id; /* the driver call's; see runtime_correlation_id */
	uint32_t runtime_correlation_id;
	uint32_t graph_id;
	uint64_t graph_node_id;
	uint32_t src_device; /* peer copies; XSPROF_WIRE_NO_DEVICE otherwise */
	uint32_t dst_device;
	uint8_t copy_kind; /* enum xsprof_wire_copy_kind */
	uint8_t src_kind;  /* enum xsprof_wire_mem_kind */
	uint8_t dst_kind;
	uint8_t flags;
	uint32_t reserved;
};
_Static_assert(sizeof(struct xsprof_wire_memcpy) == 80, "memcpy layout");

struct xsprof_wire_memset {
	struct xsprof_wire_hdr hdr;
	uint64_t start;
	uint64_t end;
	uint64_t bytes;
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t correlation_id;
	uint32_t value;
	uint32_t graph_id;
	uint64_t graph_node_id;
	uint8_t mem_kind; /* enum xsprof_wire_mem_kind */
	uint8_t flags;
	uint16_t reserved0;
	uint32_t reserved1;
};
_Static_assert(sizeof(struct xsprof_wire_memset) == 72, "memset layout");

/* CUpti_CallbackDomain values: cbids are only unique within their domain. */
enum xsprof_wire_api_domain {
	XSPROF_API_DRIVER = 1,
	XSPROF_API_RUNTIME = 2,
};

struct xsprof_wire_api {
	struct xsprof_wire_hdr hdr;
	uint64_t start; /* CPU timestamps: entry and exit of the call */
	uint64_t end;
	uint32_t tid; /* OS thread id (gettid), as BPF sees it */
	uint32_t correlation_id;
	uint32_t cbid; /* CUPTI_RUNTIME_TRACE_CBID_* or CUPTI_DRIVER_TRACE_CBID_* */
	uint32_t return_value;
	uint8_t domain; /* enum xsprof_wire_api_domain */
	uint8_t reserved[7];
};
_Static_assert(sizeof(struct xsprof_wire_api) == 48, "api layout");

/* CUpti_ActivitySynchronizationType values. */
enum xsprof_wire_sync_type {
	XSPROF_SYNC_UNKNOWN = 0,
	XSPROF_SYNC_EVENT = 1,
	XSPROF_SYNC_STREAM_WAIT_EVENT = 2,
	XSPROF_SYNC_STREAM = 3,
	XSPROF_SYNC_CONTEXT = 4,
	XSPROF_SYNC_TYPE_END,
};

struct xsprof_wire_sync {
	struct xsprof_wire_hdr hdr;
	uint64_t start;
	uint64_t end;
	uint32_t context;
	uint32_t stream; /* XSPROF_WIRE_NO_DEVICE when not a stream sync */
	uint32_t correlation_id;
	uint32_t cuda_event_id;
	uint8_t sync_type; /* enum xsprof_wire_sync_type */
	uint8_t reserved[7];
};
_Static_assert(sizeof(struct xsprof_wire_sync) == 48, "sync layout");

/* An NVTX range (push/pop or start/end) paired by the sender, a mark (F_INSTANT), or a range's
 * opening (F_OPEN), so that a range still open when a recording ends is known. */
struct xsprof_wire_nvtx {
	struct xsprof_wire_hdr hdr;
	uint64_t start;
	uint64_t end;
	uint32_t id;	     /* CUPTI's marker id */
	uint32_t tid;	     /* thread that opened the range, 0 when unknown */
	uint16_t name_len;   /* NUL included, 0 = none */
	uint16_t domain_len; /* NUL included, 0 = default domain */
	uint16_t flags;
	uint16_t reserved;
	/* char name[name_len]; char domain[domain_len]; zero padding */
};
_Static_assert(sizeof(struct xsprof_wire_nvtx) == 40, "nvtx layout");

/* One whole graph launch (graph-level tracing; node-level tracing sends kernels instead). */
struct xsprof_wire_graph {
	struct xsprof_wire_hdr hdr;
	uint64_t start;
	uint64_t end;
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t correlation_id;
	uint32_t graph_id;
	uint32_t end_device;
};
_Static_assert(sizeof(struct xsprof_wire_graph) == 48, "graph layout");

/* The sender's own counters since the process started (cumulative, not deltas). */
struct xsprof_wire_stats {
	struct xsprof_wire_hdr hdr;
	uint64_t dropped_full;	/* records lost because the daemon was absent or slow */
	uint64_t dropped_cupti; /* records CUPTI lost (no buffer) */
	uint64_t dropped_other; /* NVTX ranges that could not be paired, unknown record shapes */
	uint64_t connects;	/* successful connections, the first one included */
};
_Static_assert(sizeof(struct xsprof_wire_stats) == 40, "stats layout");

/* Largest record a sender may emit: an NVTX range with two maximal strings. */
#define XSPROF_WIRE_RECORD_MAX (sizeof(struct xsprof_wire_nvtx) + 2 * XSPROF_WIRE_NAME_MAX)

/*
 * USDT xsprof:launch(corr_id, api): fired at entry of the outermost launch API call on a thread.
 * api packs the CUPTI domain with the cbid, because the runtime and driver number their
 * callbacks independently.
 */
#define XSPROF_USDT_API(domain, cbid) (((uint32_t)(domain) << 16) | ((uint32_t)(cbid)&0xffffu))
#define XSPROF_USDT_API_DOMAIN(api)   ((uint32_t)(api) >> 16)
#define XSPROF_USDT_API_CBID(api)     ((uint32_t)(api)&0xffffu)

static inline uint32_t xsprof_wire_align(uint32_t n)
{
	return (n + (XSPROF_WIRE_ALIGN - 1)) & ~(uint32_t)(XSPROF_WIRE_ALIGN - 1);
}

#endif
